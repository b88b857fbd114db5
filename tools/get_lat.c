/* SPDX-License-Identifier: MIT */
/*
 * get_lat: RDMA READ latency, one at a time, the whole operation (as
 * perftest's ib_read_lat). Side A reads side B's region i % nsrc into a
 * slot poisoned before each read and checks it afterwards, outside the
 * timed interval.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN void get_lat_dev(const struct pd_side *s, const struct pd_thread *t)
{
	uint64_t dst = perf_ring_dst(&s->r, 0);

	(void)t;
	pd_span(s, 0);
	for (int64_t i = s->first; i < s->first + s->count; i++) {
		uint32_t region = perf_pp_region(&s->r, i);
		uint64_t t0;
		int rc;

		if (s->validate)
			perf_pat_fill(s->lbase + dst, s->r.size, PERF_B, 0, ~0ull); /* the poison */
		t0 = pd_clock();
		rc = gnic_dev_get_wait(s->qp[0], s->lbase + dst, s->lkey,
		                       s->rbase + perf_pp_src(&s->r, i), s->rkey,
		                       (uint32_t)s->r.size);
		s->lat[i - s->first] = pd_clock() - t0;
		if (rc) {
			pd_fail(s, rc, PD_OP_GET, 0, i, -1, 0, 0);
			break;
		}
		if (pd_check(s, dst, region, i))
			break;
	}
	pd_span(s, 1);
}
#else
#include "perf.h"

static void host_run(struct perf_run *r, struct perf_ep *a)
{
	uint64_t dst = perf_ring_dst(&r->ring, 0), start = perf_now_ns();

	for (long i = r->first; i < r->first + r->count; i++) {
		uint32_t region = perf_pp_region(&r->ring, i);
		struct ibv_send_wr wr;
		struct ibv_sge sge;
		uint64_t t0;

		if (r->a->validate)
			perf_pattern_poison(a->buf + dst, r->size, PERF_B);
		perf_wr(&wr, &sge, a, IBV_WR_RDMA_READ, dst, (uint32_t)r->size,
		        perf_pp_src(&r->ring, i));
		t0 = perf_now_ns();
		perf_sq_post_wait(a, 0, &wr);
		r->lat[i - r->first] = (double)(perf_now_ns() - t0);
		if (r->a->validate && !perf_pattern_check(a->buf + dst, r->size, PERF_B, region, 0,
		                                          "the READ destination", i))
			perf_fatal("get_lat: READ %ld brought the wrong data (see above)", i);
	}
	r->ns = (double)(perf_now_ns() - start);
}

PERF_TEST_DEF(get_lat, PERF_LAT, PERF_MODES_ALL, PERF_F_PINGPONG, "8,64,4096", 1000, 200,
              "RDMA READ latency, one at a time", .host = host_run);
#endif
