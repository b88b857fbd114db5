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
#include "perf_gnic.h"

#define NAME_LEN    32
#define LIST_WIRE   (4 + PERF_MAX_LIST * 4)
#define PARAMS_WIRE (2 * NAME_LEN + 4 + PERF_MAX_SIZES * 8 + 8 + 8 + 4 * 4 + 3 * LIST_WIRE + 2 * 4)

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

static void put_list(uint8_t **pos, const int *v, int n)
{
	perf_put32(pos, (uint32_t)n);
	for (int i = 0; i < PERF_MAX_LIST; i++)
		perf_put32(pos, i < n ? (uint32_t)v[i] : 0);
}

static int get_list(const uint8_t **pos, int *v, const char *what)
{
	int n = (int)perf_get32(pos);

	if (n < 1 || n > PERF_MAX_LIST)
		perf_fatal("the client sent %d values of %s", n, what);
	for (int i = 0; i < PERF_MAX_LIST; i++)
		v[i] = (int)perf_get32(pos);
	return n;
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
	put_list(&pos, a->scopes, a->nscopes);
	put_list(&pos, a->ctas_list, a->nctas);
	put_list(&pos, a->qps_list, a->nqps);
	perf_put32(&pos, (uint32_t)a->threads);
	perf_put32(&pos, a->host_mem);
}

static void warn_overridden(const struct perf_args *a)
{
	if (a->sizes_set || a->iters_set || a->warmup_set || a->qps_set || a->depth_set ||
	    a->scope_set || a->ctas_set || a->threads_set || a->host_mem)
		fprintf(stderr, "gnic-perf: note: the client's sizes, iterations, QPs, depth, "
		                "scopes, CTAs, threads and memory are used; those given to the "
		                "server are ignored\n");
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
	if (!a->mode)
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
	a->nscopes = get_list(&pos, a->scopes, "--scope");
	a->nctas = get_list(&pos, a->ctas_list, "--ctas");
	a->nqps = get_list(&pos, a->qps_list, "--qps");
	a->threads = (int)perf_get32(&pos);
	a->host_mem = perf_get32(&pos);
	a->scope = a->scopes[0];
	a->ctas = a->ctas_list[0];
	a->sizes_set = a->iters_set = a->warmup_set = a->qps_set = false;
	a->scope_set = a->ctas_set = a->threads_set = false;
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

static void exchange_gep_info(struct perf_session *s, struct perf_gep *ep)
{
	struct perf_gep_info mine, peer;
	static uint8_t wire[PERF_GEP_INFO_WIRE];

	perf_gep_info(ep, &mine);
	perf_gep_info_encode(&mine, wire);
	perf_oob_send(s->oob, PERF_OOB_GEP_INFO, wire, sizeof(wire));
	perf_oob_recv(s->oob, PERF_OOB_GEP_INFO, wire, sizeof(wire));
	perf_gep_info_decode(wire, &peer);
	perf_gep_connect(ep, &peer);
}

/* libgnic modes: one context per side, as two processes would have. */
static void open_gnic_in_process(struct perf_session *s)
{
	size_t len = perf_gnic_buffer_len(s->args);
	struct perf_gep_info ia, ib;

	s->gep[PERF_A] = perf_gep_open(s->args, PERF_A, len);
	if (s->args->test->kind == PERF_KIND_POST) {
		perf_gep_unconnected(s->gep[PERF_A]);
		return;
	}
	s->gep[PERF_B] = perf_gep_open(s->args, PERF_B, len);
	perf_gep_info(s->gep[PERF_A], &ia);
	perf_gep_info(s->gep[PERF_B], &ib);
	perf_gep_connect(s->gep[PERF_A], &ib);
	perf_gep_connect(s->gep[PERF_B], &ia);
}

/* This process's side: verbs objects (host mode) or libgnic ones. */
static void open_side(struct perf_session *s, enum perf_side side)
{
	if (s->args->mode->gnic) {
		s->gep[side] = perf_gep_open(s->args, side, perf_gnic_buffer_len(s->args));
		exchange_gep_info(s, s->gep[side]);
		return;
	}
	s->ep[side] = perf_ep_open(s->args, side, perf_buffer_len(s->args));
	exchange_info(s, s->ep[side]);
}

static void open_in_process(struct perf_session *s)
{
	size_t len = perf_buffer_len(s->args);
	struct perf_ep_info ia, ib;

	if (s->args->mode->gnic) {
		open_gnic_in_process(s);
		return;
	}
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
	if (s->args->mode->gnic)
		perf_gnic_resolve(s->args);
	if (s->args->mode->proxy)
		perf_proxy_start(s->args->timeout_s);
	open_side(s, PERF_B);
}

static void open_client(struct perf_session *s)
{
	uint8_t wire[PARAMS_WIRE];

	s->oob = perf_oob_connect(s->args->connect_host, s->args->port);
	perf_wait_setup(s->args->timeout_s, s->oob);
	params_encode(s->args, wire);
	perf_oob_send(s->oob, PERF_OOB_PARAMS, wire, sizeof(wire));
	open_side(s, PERF_A);
}

void perf_session_open(struct perf_session *s, struct perf_args *a)
{
	memset(s, 0, sizeof(*s));
	s->args = a;
	s->oob = -1;
	s->listen_fd = -1;
	srand48((long)getpid() ^ (long)time(NULL));
	perf_wait_setup(a->timeout_s, -1);
	if (a->mode->proxy && !a->server)
		perf_proxy_start(a->timeout_s);
	if (a->server)
		open_server(s);
	else if (a->connect_host[0])
		open_client(s);
	else
		open_in_process(s);
}

void perf_session_close(struct perf_session *s)
{
	if (s->args->mode->proxy)
		perf_proxy_stop(); /* it posts on the QPs closed below */
	perf_gep_close(s->gep[PERF_A]);
	perf_gep_close(s->gep[PERF_B]);
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
	if (s->ep[PERF_B] || s->gep[PERF_B]) {
		perf_put32(&pos, b_ok);
		perf_oob_send(s->oob, PERF_OOB_VERDICT, wire, sizeof(wire));
		return b_ok;
	}
	perf_oob_recv(s->oob, PERF_OOB_VERDICT, wire, sizeof(wire));
	return perf_get32(&rpos) != 0;
}
