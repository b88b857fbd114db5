/* SPDX-License-Identifier: MIT */
/*
 * The responder's receive queue: where the next receive WQE of a QP comes
 * from, its own RQ or the SRQ it was created with. The responder reaches
 * receive WQEs only through these two calls (the QP's worker; an SRQ's QPs
 * share one, worker.c).
 *
 * An RQ is a ring: the next WQE is at the engine's consumer index, the
 * doorbell record says how many were posted. An SRQ is mlx5's linked list
 * (srq.c): the next WQE is the one the last taken WQE's next_wqe_index
 * names (WQE 0 first), and the doorbell record counts the WQEs posted.
 */
#include "emu.h"

static uint16_t dbrec16(const __be32 *rec)
{
	return (uint16_t)gnic_be32(
	    atomic_load_explicit((_Atomic uint32_t *)rec, memory_order_acquire));
}

/* Posted and not yet taken; more than the queue holds is garbage in the
 * doorbell record (logged, and nothing is taken). */
static bool posted(const char *what, uint32_t id, uint16_t count, uint16_t taken, uint32_t size)
{
	uint16_t n = (uint16_t)(count - taken);

	if (n > size) {
		static struct emu_log_limit limit;

		emu_warn_limited(&limit,
		                 "%s 0x%x: doorbell record %u is %u ahead of the %u-entry queue",
		                 what, id, count, n, size);
		return false;
	}
	return n > 0;
}

bool emu_recv_peek(struct emu_qp *qp, struct emu_recv_wqe *w)
{
	struct emu_srq *srq = qp->srq;

	if (srq) {
		if (!posted("SRQ", srq->srqn, dbrec16(&srq->dbrec[0]), srq->eng_taken,
		            srq->wq.wqe_cnt))
			return false;
		w->idx = srq->eng_next;
		w->seg = emu_srq_wqe(srq, w->idx, &w->nseg);
		return true;
	}
	if (qp->rq.wqe_cnt && qp->gpu_dbr &&
	    emu_devx_umem_pull(qp->gpu_dbr, &qp->dbrec[GNIC_MLX5_RCV_DBR], sizeof(qp->dbrec[0])))
		return false;
	if (!qp->rq.wqe_cnt ||
	    !posted("QP", qp->ibqp.qp_num, dbrec16(&qp->dbrec[GNIC_MLX5_RCV_DBR]), qp->resp.rq_ci,
	            qp->rq.wqe_cnt))
		return false;
	w->idx = qp->resp.rq_ci;
	/* a WQE in GPU memory: the one taken, pulled now */
	if (qp->gpu_wq && emu_devx_umem_pull(qp->gpu_wq, emu_wq_at(&qp->rq, w->idx), qp->rq.stride))
		return false;
	w->seg = (const struct gnic_mlx5_data_seg *)emu_wq_at(&qp->rq, w->idx);
	w->nseg = qp->rq.stride / sizeof(*w->seg);
	return true;
}

/* IBV_EVENT_SRQ_LIMIT_REACHED once fewer WQEs than the armed limit are
 * left; the limit is then disarmed (ibv_modify_srq arms it again). */
static void srq_check_limit(struct emu_srq *srq)
{
	struct ibv_async_event ev = {.element.srq = &srq->ibsrq,
	                             .event_type = IBV_EVENT_SRQ_LIMIT_REACHED};
	uint16_t left = (uint16_t)(dbrec16(&srq->dbrec[0]) - srq->eng_taken);

	if (!srq->limit || left >= srq->limit)
		return;
	srq->limit = 0;
	emu_async_event(srq->ctx, &ev);
}

uint16_t emu_recv_take(struct emu_qp *qp)
{
	struct emu_srq *srq = qp->srq;
	uint16_t idx;

	if (!srq)
		return qp->resp.rq_ci++;
	idx = srq->eng_next;
	srq->eng_next = emu_srq_next_index(srq, idx);
	srq->eng_taken++;
	srq_check_limit(srq);
	return idx;
}
