/* SPDX-License-Identifier: MIT */
/*
 * RC's table of engine operations (qp_ops.h): what the engine does with an
 * RC QP at creation, destruction and state changes, and in each pass. The
 * work itself is the requester's (requester.c) and the responder's
 * (responder.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "dma.h"
#include "fabric.h"
#include "rc.h"

static void rc_reset(struct emu_qp *qp)
{
	emu_requester_reset(qp);
	emu_responder_reset(qp);
}

static int rc_add(struct emu_qp *qp)
{
	qp->req.ost =
	    calloc(qp->sq.wqe_cnt ? qp->sq.wqe_cnt : 1, sizeof(*qp->req.ost)); /* no SQ: unused */
	if (!qp->req.ost)
		return -ENOMEM;
	rc_reset(qp);
	return 0;
}

static void rc_remove(struct emu_qp *qp)
{
	emu_dma_forget_qp(qp); /* its copies in flight finish without it */
	emu_fabric_detach(qp);
	free(qp->req.ost);
	qp->req.ost = NULL;
}

static void rc_state_change(struct emu_qp *qp, enum ibv_qp_state old_state)
{
	int state = atomic_load(&qp->state);

	switch (state) {
	case IBV_QPS_RESET:
		emu_dma_forget_qp(qp);
		emu_fabric_detach(qp);
		rc_reset(qp);
		break;
	case IBV_QPS_RTR:
		if (old_state != IBV_QPS_INIT)
			break;
		emu_qp_connected_rtr(qp, "requests", "will time out");
		break;
	case IBV_QPS_RTS:
		if (old_state != IBV_QPS_RTR)
			break;
		qp->req.psn_next = qp->attr.sq_psn & 0xffffff;
		qp->req.psn_end = qp->req.psn_next;
		qp->req.retries_left = qp->attr.retry_cnt;
		qp->req.rnr_retries_left = qp->attr.rnr_retry;
		break;
	default:
		break;
	}
}

/* The requester works in RTS and flushes the SQ in ERR; the responder runs
 * on requests, here only to flush the receives in ERR. The state is read
 * once: a QP that enters ERR during this pass flushes its receives in the
 * next. */
static int rc_progress(struct emu_qp *qp, uint64_t now)
{
	int state = atomic_load_explicit(&qp->state, memory_order_relaxed);
	int work = 0;

	if (state == IBV_QPS_RTS || state == IBV_QPS_ERR)
		work += emu_requester_progress(qp, now);
	if (state == IBV_QPS_ERR)
		work += emu_responder_progress(qp);
	return work;
}

const struct emu_qp_ops emu_rc_qp_ops = {
    .add = rc_add,
    .remove = rc_remove,
    .state_change = rc_state_change,
    .progress = rc_progress,
    .on_request = emu_responder_on_request,
    .on_response = emu_requester_on_response,
    .land_dest = emu_rc_land_dest,
};

void *emu_rc_land_dest(struct emu_qp *qp, const struct emu_msg *m, bool start)
{
	if (emu_wire_is_request(m->type))
		return emu_responder_land_dest(qp, m, start);
	return emu_requester_land_dest(qp, m);
}
