/* SPDX-License-Identifier: MIT */
/*
 * get_bw: RDMA READ bandwidth and message rate. Side A (both with -b)
 * reads the peer's source region for iteration i into its own slot for i;
 * afterwards it checks every slot against the last message read into it.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN int get_bw_iter(const struct pd_side *s, struct gnic_dev_qp *q, int64_t i, int *op)
{
	*op = PD_OP_GET;
	return gnic_dev_get(q, s->lbase + perf_ring_dst(&s->r, perf_ring_slot(&s->r, i)), s->lkey,
	                    s->rbase + perf_ring_src(&s->r, perf_ring_region(&s->r, i)), s->rkey,
	                    (uint32_t)s->r.size, 0);
}

PD_STREAM_DEV(get_bw, 1)
#else
#include "perf.h"

static void host_wr(struct perf_run *r, struct perf_ep *ep, long i, struct ibv_send_wr *wr,
                    struct ibv_sge *sge)
{
	perf_wr(wr, sge, ep, IBV_WR_RDMA_READ, perf_ring_dst(&r->ring, perf_ring_slot(&r->ring, i)),
	        (uint32_t)r->size, perf_ring_src(&r->ring, perf_ring_region(&r->ring, i)));
}

PERF_TEST_DEF(get_bw, PERF_BW, PERF_MODES_ALL, PERF_F_BIDIR, "1-1M", 5000, 1000,
              "RDMA READ bandwidth and message rate", .wr = host_wr, .src = PERF_B);
#endif
