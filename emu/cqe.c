/* SPDX-License-Identifier: MIT */
/*
 * The engine's CQE writer: the only place that produces CQE bytes.
 *
 * A CQE becomes visible to software when its op_own byte carries a valid
 * opcode and the owner bit of the current pass over the ring, so the body is
 * written first and op_own last, with release ordering.
 */
#include <sched.h>
#include <string.h>

#include "av.h"
#include "emu.h"

/* QPs of different workers may share a CQ; hardware has one CQE writer per
 * CQ, so CQE writes (and emu_cq_clean's compaction) take turns here. Held
 * for one CQE: a spin, yielding if the holder was descheduled. */
void emu_cqe_lock(struct emu_cq *cq)
{
	for (unsigned int spins = 0;; spins++) {
		int expected = 0;

		if (atomic_compare_exchange_weak_explicit(
		        &cq->write_lock, &expected, 1, memory_order_acquire, memory_order_relaxed))
			return;
		if (spins >= 64)
			sched_yield();
	}
}

void emu_cqe_unlock(struct emu_cq *cq)
{
	atomic_store_explicit(&cq->write_lock, 0, memory_order_release);
}

/* Is there a free CQE? The consumer index in the doorbell record is the only
 * thing that says so. A CQ made with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN has
 * the CQ context's oi bit: the NIC never checks and writes on over CQEs
 * software has not read (no error, no event). The NIC never reads or
 * re-marks CQEs: their initial op_own (0xF0, invalid) is the creator's. */
static bool cq_has_room(struct emu_cq *cq)
{
	uint32_t ci;

	if (cq->ignore_overrun)
		return true;
	ci = gnic_be32(
	         atomic_load_explicit((_Atomic uint32_t *)&cq->dbrec[0], memory_order_acquire)) &
	     0xffffff;
	if (((cq->pi - ci) & 0xffffff) < cq->cqe_cnt)
		return true;
	/* a record in GPU memory: the shadow's may be old; look at the real one */
	if (!cq->gpu_dbr || emu_devx_umem_pull(cq->gpu_dbr, cq->dbrec, sizeof(cq->dbrec[0])))
		return false;
	ci = gnic_be32(
	         atomic_load_explicit((_Atomic uint32_t *)&cq->dbrec[0], memory_order_acquire)) &
	     0xffffff;
	return ((cq->pi - ci) & 0xffffff) < cq->cqe_cnt;
}

/* A CQE in GPU memory: everything but op_own, then op_own, so that software
 * polling op_own never sees it before the rest. */
static void push_cqe(struct emu_cq *cq, const struct gnic_mlx5_cqe64 *cqe)
{
	size_t own = offsetof(struct gnic_mlx5_cqe64, op_own);

	if (emu_devx_umem_push(cq->gpu_buf, cqe, own) ||
	    emu_devx_umem_push(cq->gpu_buf, &cqe->op_own, 1))
		emu_err("CQ 0x%x: a CQE could not be written to GPU memory", cq->cqn);
}

static bool is_error(uint8_t opcode)
{
	return opcode == GNIC_MLX5_CQE_REQ_ERR || opcode == GNIC_MLX5_CQE_RESP_ERR;
}

static void fill_ok(struct gnic_mlx5_cqe64 *cqe, const struct emu_cqe_info *in)
{
	uint32_t sop = in->qpn & 0xffffff;

	if (in->opcode == GNIC_MLX5_CQE_REQ)
		sop |= (uint32_t)in->wqe_opcode << 24;
	if (in->eth) { /* the QP by its user index; the word holds the flow tag */
		cqe->srqn_uidx = gnic_be32(in->qpn & 0xffffff);
		sop = in->flow_tag & GNIC_MLX5_FLOW_TAG_MASK;
		((uint8_t *)cqe)[GNIC_MLX5_CQE_HDS_IP_EXT] = in->hds_ip_ext;
		((uint8_t *)cqe)[GNIC_MLX5_CQE_L4_HDR_TYPE_ETC] = in->l4_hdr_type_etc;
		if (in->mprq) { /* wqe_id, bytes 2-3 */
			((uint8_t *)cqe)[2] = (uint8_t)(in->wqe_id >> 8);
			((uint8_t *)cqe)[3] = (uint8_t)in->wqe_id;
		}
		if (in->rss_htype) { /* rss_hash_result, bytes 12-15; rss_hash_type, 16 */
			uint32_t h = gnic_be32(in->rss_hash);

			memcpy((uint8_t *)cqe + 12, &h, 4);
			((uint8_t *)cqe)[16] = in->rss_htype;
		}
	}
	if (in->inl_len) { /* scatter-to-CQE: the data in bytes 0..31 */
		memcpy(cqe, in->inl, in->inl_len);
	} else if (in->flags_rqpn || in->slid || in->l3_hdr_type) {
		struct emu_cqe_resp *r = (struct emu_cqe_resp *)cqe;

		r->flags_rqpn = gnic_be32(in->flags_rqpn);
		r->slid = gnic_be16(in->slid);
		r->l4_hdr_type_etc = (uint8_t)(in->l3_hdr_type << EMU_CQE_L3_HDR_SHFT);
	}
	cqe->imm_inval_pkey = in->imm;
	cqe->byte_cnt = gnic_be32(in->byte_cnt);
	cqe->sop_drop_qpn = gnic_be32(sop);
	cqe->wqe_counter = gnic_be16(in->wqe_counter);
}

static void fill_err(struct gnic_mlx5_err_cqe *cqe, const struct emu_cqe_info *in)
{
	uint32_t sop = in->qpn & 0xffffff;

	if (in->opcode == GNIC_MLX5_CQE_REQ_ERR)
		sop |= (uint32_t)in->wqe_opcode << 24;
	cqe->syndrome = in->syndrome;
	cqe->vendor_err_synd = in->vendor_syndrome;
	cqe->s_wqe_opcode_qpn = gnic_be32(sop);
	cqe->wqe_counter = gnic_be16(in->wqe_counter);
}

static void maybe_notify(struct emu_cq *cq, const struct emu_cqe_info *in)
{
	int armed = atomic_load(&cq->armed);

	if (!armed)
		return;
	if (armed == 2 && !in->solicited && !is_error(in->opcode))
		return;
	/* exactly one event per arm, even if req_notify races with us */
	if (atomic_compare_exchange_strong(&cq->armed, &armed, 0))
		emu_channel_notify(cq);
}

/* *overran: this CQE found the CQ full (the first time: the CQ goes to
 * error, which its creator hears of as IBV_EVENT_CQ_ERR). */
static bool cqe_write(struct emu_cq *cq, const struct emu_cqe_info *in, bool *overran)
{
	struct gnic_mlx5_cqe64 *cqe;
	uint8_t op_own;

	if (cq->overrun)
		return false;
	if (!cq_has_room(cq)) {
		cq->overrun = true;
		*overran = true;
		emu_err("CQ 0x%x overrun: %u CQEs not consumed (CQ holds %u); no more CQEs "
		        "will be written to it",
		        cq->cqn, cq->cqe_cnt, cq->cqe_cnt);
		return false;
	}
	cqe = &cq->buf[cq->pi & (cq->cqe_cnt - 1)];
	memset(cqe, 0, sizeof(*cqe) - 1);
	if (is_error(in->opcode))
		fill_err((struct gnic_mlx5_err_cqe *)cqe, in);
	else
		fill_ok(cqe, in);
	op_own = (uint8_t)(in->opcode << 4) | (in->solicited ? 2 : 0) | !!(cq->pi & cq->cqe_cnt);
	if (in->inl_len && !is_error(in->opcode))
		op_own |= GNIC_MLX5_INLINE_SCATTER_32;
	/* seq_cst, not release: the load of cq->armed that follows must not pass
	 * it, or an arm racing this CQE could miss its event */
	atomic_store((_Atomic uint8_t *)&cqe->op_own, op_own);
	if (cq->gpu_buf)
		push_cqe(cq, cqe);
	cq->pi++;
	maybe_notify(cq, in);
	return true;
}

/* As mlx5 reports a CQ error (MLX5_EVENT_TYPE_CQ_ERROR, mlx5_ib_cq_event):
 * IBV_EVENT_CQ_ERR naming the CQ. */
static void cq_error_event(struct emu_cq *cq)
{
	struct ibv_async_event ev = {.element.cq = &cq->ibcq, .event_type = IBV_EVENT_CQ_ERR};

	emu_async_event(to_ectx(cq->ibcq.context), &ev);
}

bool emu_qp_cqe_write(struct emu_qp *qp, struct emu_cq *cq, const struct emu_cqe_info *in,
                      const char *why)
{
	bool overran = false, ok;

	emu_cqe_lock(cq);
	ok = cqe_write(cq, in, &overran);
	emu_cqe_unlock(cq);
	/* the QP is in ERR before anyone hears of the CQ error: a consumer that
	 * reacts to IBV_EVENT_CQ_ERR by querying the QP sees it failed */
	if (!ok && qp)
		emu_qp_enter_error(qp, why);
	if (overran)
		cq_error_event(cq);
	return ok;
}

bool emu_cqe_write(struct emu_cq *cq, const struct emu_cqe_info *in)
{
	return emu_qp_cqe_write(NULL, cq, in, NULL);
}
