/* SPDX-License-Identifier: MIT */
/*
 * atomic_lat: 8-byte fetch-add latency, one at a time, the whole operation
 * (as perftest's ib_atomic_lat). Every fetched value must be the counter's
 * exact value at that point; afterwards side B checks the counter.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN void atomic_lat_dev(const struct pd_side *s, const struct pd_thread *t)
{
	(void)t;
	pd_span(s, 0);
	for (int64_t i = s->first; i < s->first + s->count; i++) {
		uint64_t old = 0, want = PERF_COUNTER_BASE + perf_add_sum(i), t0 = pd_clock();
		int rc = gnic_dev_atomic_fetch_add(s->qp[0], s->rbase + s->r.sig_off, s->rkey,
		                                   perf_pat_add(i), &old);

		s->lat[i - s->first] = pd_clock() - t0;
		if (rc) {
			pd_fail(s, rc, PD_OP_FETCH_ADD, 0, i, -1, 0, 0);
			break;
		}
		if (s->validate && old != want) {
			pd_fail(s, PD_BAD_FETCH, PD_OP_FETCH_ADD, 0, i, -1, old, want);
			break;
		}
	}
	pd_span(s, 1);
}
#else
#include <string.h>

#include "perf.h"

static void host_run(struct perf_run *r, struct perf_ep *a)
{
	uint64_t res = perf_ring_dst(&r->ring, 0), start = perf_now_ns();

	for (long i = r->first; i < r->first + r->count; i++) {
		uint64_t old, want = PERF_COUNTER_BASE + perf_add_sum(i), t0;
		struct ibv_send_wr wr;
		struct ibv_sge sge;

		perf_wr(&wr, &sge, a, IBV_WR_ATOMIC_FETCH_AND_ADD, res, 8, r->ring.sig_off);
		wr.wr.atomic.compare_add = perf_pat_add(i);
		t0 = perf_now_ns();
		perf_sq_post_wait(a, 0, &wr);
		r->lat[i - r->first] = (double)(perf_now_ns() - t0);
		memcpy(&old, a->buf + res, 8);
		if (r->a->validate && old != want)
			perf_fatal("fetch-add %ld fetched 0x%llx, the counter held 0x%llx", i,
			           (unsigned long long)old, (unsigned long long)want);
	}
	r->ns = (double)(perf_now_ns() - start);
}

PERF_TEST_DEF(atomic_lat, PERF_LAT, PERF_MODES_ALL, PERF_F_PINGPONG | PERF_F_OPERAND8, "8", 1000,
              200, "8-byte fetch-add latency, one at a time, every fetched value checked",
              .host = host_run, .setup = perf_counter_setup, .validate = perf_counter_check);
#endif
