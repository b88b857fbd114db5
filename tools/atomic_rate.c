/* SPDX-License-Identifier: MIT */
/*
 * atomic_rate: 8-byte atomic adds on one counter of side B, pipelined over
 * every QP. Host mode posts fetch-adds (their values land in side A's
 * slots, unread); device threads post non-fetching adds (gnic_dev_signal).
 * Afterwards side B checks that the counter holds every addend.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN int atomic_rate_iter(const struct pd_side *s, struct gnic_dev_qp *q, int64_t i, int *op)
{
	*op = PD_OP_ADD;
	return gnic_dev_signal(q, s->rbase + s->r.sig_off, s->rkey, perf_pat_add(i), 0);
}

PD_STREAM_DEV(atomic_rate, 1)
#else
#include "perf.h"

static void host_wr(struct perf_run *r, struct perf_ep *ep, long i, struct ibv_send_wr *wr,
                    struct ibv_sge *sge)
{
	perf_wr(wr, sge, ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
	        perf_ring_dst(&r->ring, perf_ring_slot(&r->ring, i)), 8, r->ring.sig_off);
	wr->wr.atomic.compare_add = perf_pat_add(i);
}

PERF_TEST_DEF(atomic_rate, PERF_RATE, PERF_MODES_ALL, PERF_F_OPERAND8, "8", 10000, 2000,
              "8-byte atomic adds on one counter, pipelined: operations per second", .wr = host_wr,
              .setup = perf_counter_setup, .validate = perf_counter_check);
#endif
