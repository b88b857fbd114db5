/* SPDX-License-Identifier: MIT */
/*
 * Host mode, latency: put_lat, send_lat and signal_lat are ping-pongs;
 * get_lat times one READ at a time.
 *
 * Ping-pong iteration i: A sends message i into B's slot i % 2; B waits for
 * it, answers into A's slot i % 2, then checks what it received; A waits
 * for the answer and checks it. A process runs only the steps of the sides
 * it holds, so one loop serves the in-process and the two-process run. Two
 * slots let a side check message i while message i + 1 lands. The reported
 * latency is half the round trip, as perftest's *_lat tests report it.
 */
#include <arpa/inet.h>
#include <stdio.h>

#include "perf.h"

enum { STEP_READY = 1, STEP_DONE };

struct pingpong {
	struct perf_session *s;
	const struct perf_test *t;
	struct perf_layout l;
	long total;
};

static enum perf_side peer_of(const struct perf_ep *ep)
{
	return ep->side == PERF_A ? PERF_B : PERF_A;
}

static bool uses_recv(const struct pingpong *pp)
{
	return pp->t->id != PERF_PUT_LAT;
}

static enum ibv_wr_opcode pp_opcode(const struct pingpong *pp)
{
	switch (pp->t->id) {
	case PERF_SEND_LAT:
		return IBV_WR_SEND;
	case PERF_SIGNAL_LAT:
		return IBV_WR_RDMA_WRITE_WITH_IMM;
	default:
		return IBV_WR_RDMA_WRITE;
	}
}

static size_t slot_of(const struct pingpong *pp, long i)
{
	return perf_dst(&pp->l, 0, (uint32_t)(i % 2));
}

static uint32_t region_of(const struct pingpong *pp, long i)
{
	return (uint32_t)(i % pp->l.nsrc);
}

/* A receive for message i: send_lat lands data, signal_lat only its CQE. */
static void post_recv(struct pingpong *pp, struct perf_ep *ep, long i)
{
	uint32_t len = pp->t->id == PERF_SEND_LAT ? (uint32_t)pp->l.size : 0;

	if (i < pp->total)
		perf_rq_post(ep, 0, slot_of(pp, i), len, (uint64_t)i);
}

static void prepare(struct pingpong *pp, struct perf_ep *ep)
{
	perf_fill_sources(ep->buf, &pp->l, ep->side);
	for (long i = 0; i < 2; i++)
		perf_pattern_poison(ep->buf + slot_of(pp, i), pp->l.size, peer_of(ep),
		                    region_of(pp, i));
	if (uses_recv(pp)) {
		post_recv(pp, ep, 0);
		post_recv(pp, ep, 1);
	}
}

static void send_msg(struct pingpong *pp, struct perf_ep *ep, long i)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	perf_sq_wait_room(ep, 0, ep->sq_depth);
	perf_wr_init(&wr, &sge, ep, pp_opcode(pp), perf_src(&pp->l, region_of(pp, i)),
	             (uint32_t)pp->l.size, slot_of(pp, i));
	wr.imm_data = htonl((uint32_t)i);
	perf_sq_prepare(ep, 0, &wr, i == pp->total - 1);
	perf_sq_post(ep, 0, &wr);
}

static void check_recv_wc(struct pingpong *pp, const struct ibv_wc *wc, long i)
{
	bool imm = pp->t->id == PERF_SIGNAL_LAT;

	if (wc->opcode != (imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV))
		perf_fatal("receive completion %ld has opcode %d", i, wc->opcode);
	if (imm && (!(wc->wc_flags & IBV_WC_WITH_IMM) || ntohl(wc->imm_data) != (uint32_t)i))
		perf_fatal("receive completion %ld carries immediate %u (flags 0x%x)", i,
		           ntohl(wc->imm_data), wc->wc_flags);
	if (!imm && wc->byte_len != pp->l.size)
		perf_fatal("receive completion %ld reports %u bytes, sent %zu", i, wc->byte_len,
		           pp->l.size);
}

/* Message i has arrived in ep's slot: its marker byte, or its receive CQE. */
static void await_msg(struct pingpong *pp, struct perf_ep *ep, long i)
{
	struct ibv_wc wc;

	if (!uses_recv(pp)) {
		const uint8_t *last = ep->buf + slot_of(pp, i) + pp->l.size - 1;

		perf_wait_byte(last, perf_pattern_marker(peer_of(ep), region_of(pp, i)),
		               "the peer's write");
		return;
	}
	perf_rq_wait(ep, (uint64_t)i, &wc);
	check_recv_wc(pp, &wc, i);
}

static void consume_msg(struct pingpong *pp, struct perf_ep *ep, long i)
{
	char what[48];

	if (pp->s->args->validate) {
		snprintf(what, sizeof(what), "the receive slot of side %c",
		         ep->side == PERF_A ? 'A' : 'B');
		perf_pattern_expect(ep->buf + slot_of(pp, i), pp->l.size, peer_of(ep),
		                    region_of(pp, i), what, i);
	}
	if (uses_recv(pp))
		post_recv(pp, ep, i + 2); /* the slot is free again */
}

static void run_loop(struct pingpong *pp, struct perf_result *r)
{
	struct perf_ep *a = perf_a(pp->s), *b = perf_b(pp->s);
	long warmup = pp->s->args->warmup;
	uint64_t t0 = 0, start = 0;

	for (long i = 0; i < pp->total; i++) {
		if (a) {
			t0 = perf_now_ns();
			if (i == warmup)
				start = t0;
			send_msg(pp, a, i);
		}
		if (b) {
			await_msg(pp, b, i);
			send_msg(pp, b, i);
			consume_msg(pp, b, i);
		}
		if (a) {
			await_msg(pp, a, i);
			if (i >= warmup)
				r->lat_ns[i - warmup] = (double)(perf_now_ns() - t0) / 2;
			consume_msg(pp, a, i);
		}
	}
	if (a)
		r->elapsed_ns = (double)(perf_now_ns() - start);
}

void perf_host_pingpong(struct perf_session *s, const struct perf_test *t, size_t size,
                        struct perf_result *r)
{
	struct pingpong pp = {.s = s, .t = t, .total = s->args->iters + s->args->warmup};

	perf_layout_pingpong(&pp.l, size);
	for (int side = PERF_A; side <= PERF_B; side++)
		if (s->ep[side])
			prepare(&pp, s->ep[side]);
	perf_session_barrier(s, STEP_READY);
	run_loop(&pp, r);
	r->nlat = perf_a(s) ? s->args->iters : 0;
	for (int side = PERF_A; side <= PERF_B; side++)
		if (s->ep[side])
			perf_sq_drain(s->ep[side]);
	perf_session_barrier(s, STEP_DONE);
	perf_session_verdict(s, true); /* each side checked what it received */
}

/* get_lat: each READ lands in a poisoned slot and is checked after its
 * completion, outside the timed interval. */
void perf_host_get_lat(struct perf_session *s, size_t size, struct perf_result *r)
{
	struct perf_ep *a = perf_a(s), *b = perf_b(s);
	long warmup = s->args->warmup, total = s->args->iters + warmup;
	struct perf_layout l;
	uint64_t start = 0;

	perf_layout_pingpong(&l, size);
	if (b)
		perf_fill_sources(b->buf, &l, PERF_B);
	perf_session_barrier(s, STEP_READY);
	for (long i = 0; a && i < total; i++) {
		uint32_t region = (uint32_t)(i % l.nsrc);
		uint8_t *dst = a->buf + perf_dst(&l, 0, 0);
		struct ibv_send_wr wr;
		struct ibv_sge sge;
		uint64_t t0;

		if (s->args->validate)
			perf_pattern_poison(dst, size, PERF_B, region);
		perf_wr_init(&wr, &sge, a, IBV_WR_RDMA_READ, perf_dst(&l, 0, 0), (uint32_t)size,
		             perf_src(&l, region));
		t0 = perf_now_ns();
		if (i == warmup)
			start = t0;
		perf_sq_post_wait(a, 0, &wr);
		if (i >= warmup)
			r->lat_ns[i - warmup] = (double)(perf_now_ns() - t0);
		if (s->args->validate)
			perf_pattern_expect(dst, size, PERF_B, region, "the READ destination", i);
	}
	if (a) {
		r->elapsed_ns = (double)(perf_now_ns() - start);
		r->nlat = s->args->iters;
	}
	perf_session_barrier(s, STEP_DONE);
	perf_session_verdict(s, true);
}
