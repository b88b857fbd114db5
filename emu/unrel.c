/* SPDX-License-Identifier: MIT */
/*
 * The send queue and receive completions of the unreliable types (unrel.h).
 *
 * A WQE is done once it is sent: its CQE (if signaled) follows at once, in
 * SQ order, and nothing waits for an answer. A WQE that fails locally (an
 * opcode the type lacks, a bad key, a message too long) completes with its
 * error, after the QP went to ERR; then the rest of the SQ and the receives
 * are flushed, as for RC.
 */
#include <errno.h>
#include <string.h>

#include "rc.h"
#include "unrel.h"

#define BURST 64 /* WQEs per QP per pass, as for RC */

static void send_cqe(struct emu_qp *qp, const struct emu_wqe *w, uint8_t synd)
{
	struct emu_cqe_info ci = {
	    .opcode = synd ? GNIC_MLX5_CQE_REQ_ERR : GNIC_MLX5_CQE_REQ,
	    .wqe_opcode = w->opcode,
	    .syndrome = synd,
	    .wqe_counter = w->idx,
	    .qpn = qp->ibqp.qp_num,
	};

	emu_qp_cqe_write(qp, qp->scq, &ci, "send CQ overrun");
}

static void fail(struct emu_qp *qp, const struct emu_wqe *w, uint8_t synd)
{
	qp->last_err.syndrome = synd;
	qp->last_err.vendor_syndrome = 0;
	qp->last_err.opcode = w->opcode;
	qp->last_err.wqe_counter = w->idx;
	qp->req.sq_ci = (uint16_t)(w->idx + w->nbb);
	/* in ERR before its error CQE can be seen, as requester.c does */
	emu_qp_enter_error(qp, emu_syndrome_str(synd));
	send_cqe(qp, w, synd);
}

/* Every WQE rung and not executed gets a WR_FLUSH error CQE. */
static int flush_sq(struct emu_qp *qp)
{
	uint16_t pi = emu_sq_doorbell(qp);
	int work = 0;

	while (qp->req.sq_ci != pi && work < BURST) {
		struct emu_wqe w;

		emu_wqe_fetch(&qp->sq, qp->ibqp.qp_num, qp->req.sq_ci, &w);
		if ((uint16_t)(pi - qp->req.sq_ci) < w.nbb)
			w.nbb = 1;
		w.idx = qp->req.sq_ci;
		send_cqe(qp, &w, GNIC_MLX5_SYND_WR_FLUSH);
		qp->req.sq_ci = (uint16_t)(qp->req.sq_ci + w.nbb);
		work++;
	}
	return work;
}

int emu_unrel_progress(struct emu_qp *qp, emu_unrel_send_fn send)
{
	int state = atomic_load_explicit(&qp->state, memory_order_relaxed);
	int work = 0;
	uint16_t pi;

	if (state == IBV_QPS_ERR)
		return flush_sq(qp) + emu_responder_progress(qp);
	if (state != IBV_QPS_RTS)
		return 0;
	pi = emu_sq_doorbell(qp);
	for (int n = 0; n < BURST && qp->req.sq_ci != pi; n++) {
		struct emu_wqe w;
		int ret = GNIC_MLX5_SYND_OK;

		if (!emu_wqe_fetch(&qp->sq, qp->ibqp.qp_num, qp->req.sq_ci, &w)) {
			fail(qp, &w, GNIC_MLX5_SYND_LOCAL_QP_OP);
			return work + 1;
		}
		if (w.opcode != GNIC_MLX5_OPCODE_NOP)
			ret = send(qp, &w);
		if (ret == -EAGAIN)
			break;
		if (ret) {
			fail(qp, &w, (uint8_t)ret);
			return work + 1;
		}
		qp->req.sq_ci = (uint16_t)(w.idx + w.nbb);
		if (w.fm_ce_se & GNIC_MLX5_CTRL_CQ_UPDATE)
			send_cqe(qp, &w, GNIC_MLX5_SYND_OK);
		work++;
	}
	return work;
}

void emu_unrel_reset(struct emu_qp *qp)
{
	emu_requester_reset(qp);
	emu_responder_reset(qp);
}

/* ---- receive ------------------------------------------------------------------ */

uint64_t emu_unrel_recv_room(const struct emu_recv_wqe *w)
{
	uint64_t room = 0;

	for (unsigned i = 0; i < w->nseg && gnic_be32(w->seg[i].lkey) != GNIC_MLX5_INVALID_LKEY;
	     i++)
		room += emu_seg_len(&w->seg[i]);
	return room;
}

/* Check every buffer the bytes land in before writing any. */
static uint8_t check_room(struct emu_qp *qp, const struct emu_recv_wqe *w, uint64_t len)
{
	uint64_t off = 0;

	if (len > emu_unrel_recv_room(w))
		return GNIC_MLX5_SYND_LOCAL_LENGTH;
	for (unsigned i = 0; i < w->nseg && off < len; i++) {
		uint64_t n = emu_seg_len(&w->seg[i]);
		struct emu_mr *mr;

		if (n > len - off)
			n = len - off;
		if (emu_mr_check(qp->pd, gnic_be32(w->seg[i].lkey), gnic_be64(w->seg[i].addr), n,
		                 IBV_ACCESS_LOCAL_WRITE, &mr))
			return GNIC_MLX5_SYND_LOCAL_PROT;
		off += n;
	}
	return GNIC_MLX5_SYND_OK;
}

uint8_t emu_unrel_scatter(struct emu_qp *qp, const struct emu_recv_wqe *w, const void *a,
                          uint32_t alen, const void *b, uint32_t blen)
{
	uint64_t len = (uint64_t)alen + blen, off = 0;
	uint8_t synd = check_room(qp, w, len);

	if (synd)
		return synd;
	for (unsigned i = 0; i < w->nseg && off < len; i++) {
		uint64_t n = emu_seg_len(&w->seg[i]), done = 0;
		uint64_t addr = gnic_be64(w->seg[i].addr);
		struct emu_mr *mr = emu_mr_lookup(gnic_be32(w->seg[i].lkey));

		if (n > len - off)
			n = len - off;
		while (done < n) { /* the part of a, then of b, this buffer holds */
			uint64_t at = off + done, k;
			const uint8_t *src;

			if (at < alen) {
				src = (const uint8_t *)a + at;
				k = alen - at;
			} else {
				src = (const uint8_t *)b + (at - alen);
				k = len - at;
			}
			if (k > n - done)
				k = n - done;
			if (!mr || emu_mem_write(mr, addr + done, src, k))
				return GNIC_MLX5_SYND_LOCAL_PROT;
			done += k;
		}
		off += n;
	}
	return GNIC_MLX5_SYND_OK;
}

void emu_unrel_recv_cqe(struct emu_qp *qp, struct emu_cqe_info *ci)
{
	ci->qpn = qp->ibqp.qp_num;
	if (ci->syndrome) {
		ci->opcode = GNIC_MLX5_CQE_RESP_ERR;
		qp->last_err.syndrome = ci->syndrome;
		emu_qp_enter_error(qp, emu_syndrome_str(ci->syndrome));
	}
	ci->wqe_counter = emu_recv_take(qp);
	emu_qp_cqe_write(qp, qp->rcq, ci, "receive CQ overrun");
}
