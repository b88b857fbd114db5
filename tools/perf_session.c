/* SPDX-License-Identifier: MIT */
/*
 * The two sides of a run. In one process both endpoints live here and are
 * connected directly; across two processes the client (side A) sends its
 * settings, both exchange endpoint information over the out-of-band socket
 * and meet at barriers around each size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define NAME_LEN    32
#define PARAMS_WIRE (2 * NAME_LEN + 4 + PERF_MAX_SIZES * 8 + 8 + 8 + 4 * 4)

static void put_name(uint8_t **pos, const char *name)
{
	memset(*pos, 0, NAME_LEN);
	strncpy((char *)*pos, name, NAME_LEN - 1);
	*pos += NAME_LEN;
}

static void get_name(const uint8_t **pos, char *name)
{
	memcpy(name, *pos, NAME_LEN);
	name[NAME_LEN - 1] = 0;
	*pos += NAME_LEN;
}

static void params_encode(const struct perf_args *a, uint8_t *wire)
{
	uint8_t *pos = wire;

	put_name(&pos, a->test->name);
	put_name(&pos, a->mode->name);
	perf_put32(&pos, (uint32_t)a->nsizes);
	for (int i = 0; i < PERF_MAX_SIZES; i++)
		perf_put64(&pos, i < a->nsizes ? a->sizes[i] : 0);
	perf_put64(&pos, (uint64_t)a->iters);
	perf_put64(&pos, (uint64_t)a->warmup);
	perf_put32(&pos, (uint32_t)a->qps);
	perf_put32(&pos, (uint32_t)a->tx_depth);
	perf_put32(&pos, a->validate);
	perf_put32(&pos, a->depth_set);
}

static void warn_overridden(const struct perf_args *a)
{
	if (a->sizes_set || a->iters_set || a->warmup_set || a->qps_set || a->depth_set)
		fprintf(stderr, "gnic-perf: note: the client's sizes, iterations, QPs and depth "
		                "are used; those given to the server are ignored\n");
}

/* The server adopts the client's settings; the test must be the same. */
static void params_adopt(struct perf_args *a, const uint8_t *wire)
{
	const uint8_t *pos = wire;
	char test[NAME_LEN], mode[NAME_LEN];

	get_name(&pos, test);
	get_name(&pos, mode);
	if (strcmp(test, a->test->name))
		perf_fatal("the client runs %s, this server was started for %s", test,
		           a->test->name);
	a->mode = perf_mode_find(mode);
	if (!a->mode || !a->mode->run)
		perf_fatal("the client asked for mode '%s', which this server cannot run", mode);
	warn_overridden(a);
	a->nsizes = (int)perf_get32(&pos);
	if (a->nsizes < 1 || a->nsizes > PERF_MAX_SIZES)
		perf_fatal("the client sent %d sizes", a->nsizes);
	for (int i = 0; i < PERF_MAX_SIZES; i++)
		a->sizes[i] = (size_t)perf_get64(&pos);
	a->iters = (long)perf_get64(&pos);
	a->warmup = (long)perf_get64(&pos);
	a->qps = (int)perf_get32(&pos);
	a->tx_depth = (int)perf_get32(&pos);
	a->validate = perf_get32(&pos);
	a->depth_set = perf_get32(&pos);
	a->sizes_set = a->iters_set = a->warmup_set = a->qps_set = false;
	perf_args_check(a); /* the same limits as on the command line */
}

static void exchange_info(struct perf_session *s, struct perf_ep *ep)
{
	struct perf_ep_info mine, peer;
	uint8_t wire[PERF_EP_INFO_WIRE];

	perf_ep_info(ep, &mine);
	perf_ep_info_encode(&mine, wire);
	perf_oob_send(s->oob, PERF_OOB_EP_INFO, wire, sizeof(wire));
	perf_oob_recv(s->oob, PERF_OOB_EP_INFO, wire, sizeof(wire));
	perf_ep_info_decode(wire, &peer);
	perf_ep_connect(ep, &peer);
}

static void open_in_process(struct perf_session *s)
{
	size_t len = perf_buffer_len(s->args);
	struct perf_ep_info ia, ib;

	s->ep[PERF_A] = perf_ep_open(s->args, PERF_A, len);
	s->ep[PERF_B] = perf_ep_open(s->args, PERF_B, len);
	perf_ep_info(s->ep[PERF_A], &ia);
	perf_ep_info(s->ep[PERF_B], &ib);
	perf_ep_connect(s->ep[PERF_A], &ib);
	perf_ep_connect(s->ep[PERF_B], &ia);
}

static void open_server(struct perf_session *s)
{
	uint8_t wire[PARAMS_WIRE];

	s->listen_fd = perf_oob_listen(s->args->port);
	fprintf(stderr, "gnic-perf: %s server waiting on TCP port %d\n", s->args->test->name,
	        s->args->port);
	s->oob = perf_oob_accept(s->listen_fd);
	perf_wait_setup(s->args->timeout_s, s->oob);
	perf_oob_recv(s->oob, PERF_OOB_PARAMS, wire, sizeof(wire));
	params_adopt(s->args, wire);
	s->ep[PERF_B] = perf_ep_open(s->args, PERF_B, perf_buffer_len(s->args));
	exchange_info(s, s->ep[PERF_B]);
}

static void open_client(struct perf_session *s)
{
	uint8_t wire[PARAMS_WIRE];

	s->oob = perf_oob_connect(s->args->connect_host, s->args->port);
	perf_wait_setup(s->args->timeout_s, s->oob);
	params_encode(s->args, wire);
	perf_oob_send(s->oob, PERF_OOB_PARAMS, wire, sizeof(wire));
	s->ep[PERF_A] = perf_ep_open(s->args, PERF_A, perf_buffer_len(s->args));
	exchange_info(s, s->ep[PERF_A]);
}

void perf_session_open(struct perf_session *s, struct perf_args *a)
{
	memset(s, 0, sizeof(*s));
	s->args = a;
	s->oob = -1;
	s->listen_fd = -1;
	srand48((long)getpid() ^ (long)time(NULL));
	perf_wait_setup(a->timeout_s, -1);
	if (a->server)
		open_server(s);
	else if (a->connect_host[0])
		open_client(s);
	else
		open_in_process(s);
}

void perf_session_close(struct perf_session *s)
{
	perf_ep_close(s->ep[PERF_A]);
	perf_ep_close(s->ep[PERF_B]);
	if (s->oob >= 0)
		close(s->oob);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	perf_wait_setup(s->args->timeout_s, -1);
}

void perf_session_barrier(struct perf_session *s, uint32_t step)
{
	uint8_t out[4], in[4], *pos = out;
	const uint8_t *rpos = in;
	uint32_t got;

	if (s->oob < 0)
		return;
	perf_put32(&pos, step);
	perf_oob_send(s->oob, PERF_OOB_BARRIER, out, sizeof(out));
	perf_oob_recv(s->oob, PERF_OOB_BARRIER, in, sizeof(in));
	got = perf_get32(&rpos);
	if (got != step)
		perf_fatal("out-of-band protocol error: the peer is at step %u, this side at %u",
		           got, step);
}

bool perf_session_verdict(struct perf_session *s, bool b_ok)
{
	uint8_t wire[4], *pos = wire;
	const uint8_t *rpos = wire;

	if (s->oob < 0)
		return b_ok;
	if (s->ep[PERF_B]) {
		perf_put32(&pos, b_ok);
		perf_oob_send(s->oob, PERF_OOB_VERDICT, wire, sizeof(wire));
		return b_ok;
	}
	perf_oob_recv(s->oob, PERF_OOB_VERDICT, wire, sizeof(wire));
	return perf_get32(&rpos) != 0;
}
