/* SPDX-License-Identifier: MIT */
/*
 * libgnic modes, latency: put_lat, send_lat and signal_lat are ping-pongs
 * between one device thread per side (both in one launch when both sides
 * are in this process); get_lat is one get at a time. The device threads
 * check every message themselves (perf_dev_worker.h); the host prepares
 * the buffers exactly as host mode does (perf_host_pingpong.c).
 *
 * signal_lat here is the device API's signal: put_signal (a WRITE and a
 * fetch-add on the peer's signal word, one doorbell), and the peer waits
 * for the word with gnic_dev_wait_signal; host mode uses WRITE with
 * immediate and a receive completion instead.
 */
#include <string.h>

#include "perf_gnic.h"

enum { STEP_READY = 1, STEP_DONE };

static enum pd_test pd_test_of(const struct perf_test *t)
{
	switch (t->id) {
	case PERF_SEND_LAT:
		return PD_SEND_LAT;
	case PERF_SIGNAL_LAT:
		return PD_SIGNAL_LAT;
	default:
		return PD_PUT_LAT;
	}
}

/* Sources, both receive slots poisoned against the peer's first two
 * messages, the signal word zero. */
static void prepare(struct perf_gep *ep, const struct perf_layout *l)
{
	enum perf_side peer = ep->side == PERF_A ? PERF_B : PERF_A;
	uint64_t zero = 0;

	perf_fill_sources(ep->host, l, ep->side);
	for (uint32_t i = 0; i < 2; i++)
		perf_pattern_poison(ep->host + perf_dst(l, 0, i), l->size, peer, i % l->nsrc);
	memcpy(ep->host + l->total, &zero, 8);
	perf_gep_push(ep, 0, l->total + 8);
}

void perf_gnic_pingpong(struct perf_session *s, const struct perf_test *t, size_t size,
                        struct perf_result *r)
{
	struct perf_args *a = s->args;
	struct perf_gep *eps[2];
	struct perf_layout l;
	struct pd_launch L = {.ctas = 1, .threads = 1};

	perf_layout_pingpong(&l, size);
	for (int side = PERF_A; side <= PERF_B; side++) {
		struct perf_gep *ep = s->gep[side];
		struct pd_side *ps = &L.side[L.nsides];

		if (!ep)
			continue;
		prepare(ep, &l);
		perf_gnic_side(a, ep, ps, PD_RECV_PREP, &l);
		ps->count = a->iters + a->warmup;
		ps->warmup = a->warmup;
		if (ep->ring_host[0]) /* the proxy counts receives since the start */
			ps->recv_base =
			    __atomic_load_n(&ep->ring_host[0]->recv_done, __ATOMIC_ACQUIRE);
		if (side == PERF_A)
			perf_gnic_want_samples(a, ep, ps);
		eps[L.nsides++] = ep;
	}
	if (L.nsides == 2) { /* a side that fails stops the other's waits */
		L.side[0].peer_st = L.side[1].st;
		L.side[1].peer_st = L.side[0].st;
	}
	if (t->id == PERF_SEND_LAT) /* the first receives, before any send */
		perf_gnic_launch(a, eps, &L);
	for (uint32_t i = 0; i < L.nsides; i++)
		L.side[i].test = pd_test_of(t);
	perf_session_barrier(s, STEP_READY);
	perf_gnic_launch(a, eps, &L);
	if (perf_ga(s))
		perf_gnic_samples(a, perf_ga(s), &L.side[0], t->half_rtt, r);
	perf_session_barrier(s, STEP_DONE);
	perf_session_verdict(s, true); /* each side checked what it received */
}

void perf_gnic_get_lat(struct perf_session *s, size_t size, struct perf_result *r)
{
	struct perf_args *a = s->args;
	struct perf_gep *ga = perf_ga(s), *gb = perf_gb(s);
	struct perf_layout l;
	struct pd_launch L = {.nsides = 1, .ctas = 1, .threads = 1};

	perf_layout_pingpong(&l, size);
	if (gb) {
		perf_fill_sources(gb->host, &l, PERF_B);
		perf_gep_push(gb, 0, l.dst_off);
	}
	perf_session_barrier(s, STEP_READY);
	if (ga) {
		struct perf_gep *eps[1] = {ga};

		perf_gnic_side(a, ga, &L.side[0], PD_GET_LAT, &l);
		L.side[0].count = a->iters + a->warmup;
		L.side[0].warmup = a->warmup;
		perf_gnic_want_samples(a, ga, &L.side[0]);
		perf_gnic_launch(a, eps, &L);
		perf_gnic_samples(a, ga, &L.side[0], false, r);
	}
	perf_session_barrier(s, STEP_DONE);
	perf_session_verdict(s, true);
}
