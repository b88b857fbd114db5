/* SPDX-License-Identifier: MIT */
/*
 * put_bw: RDMA WRITE bandwidth and message rate, many in flight. Side A
 * (both sides with -b) streams iteration i from its source region for i
 * into the peer's slot for i (perf_dev.h's ring); afterwards the target
 * checks every slot against the last message written to it. Device
 * threads post at thread, warp or CTA scope.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN int put_bw_iter(const struct pd_side *s, struct gnic_dev_qp *q, int64_t i, int *op)
{
	*op = PD_OP_PUT;
	return pd_put(s, q, perf_ring_src(&s->r, perf_ring_region(&s->r, i)),
	              perf_ring_dst(&s->r, perf_ring_slot(&s->r, i)), (uint32_t)s->r.size);
}

PD_STREAM_DEV(put_bw, 1)
#else
#include "perf.h"

static void host_wr(struct perf_run *r, struct perf_ep *ep, long i, struct ibv_send_wr *wr,
                    struct ibv_sge *sge)
{
	perf_wr(wr, sge, ep, IBV_WR_RDMA_WRITE,
	        perf_ring_src(&r->ring, perf_ring_region(&r->ring, i)), (uint32_t)r->size,
	        perf_ring_dst(&r->ring, perf_ring_slot(&r->ring, i)));
}

PERF_TEST_DEF(put_bw, PERF_BW, PERF_MODES_ALL, PERF_F_SCOPES | PERF_F_BIDIR, "1-1M", 5000, 1000,
              "RDMA WRITE bandwidth and message rate, many outstanding, every Nth signaled",
              .wr = host_wr, .src = PERF_A);
#endif
