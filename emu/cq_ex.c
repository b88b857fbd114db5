/* SPDX-License-Identifier: MIT */
/*
 * The extended CQ: ibv_create_cq_ex and its poll API (ibv_start_poll,
 * ibv_next_poll, ibv_end_poll, ibv_wc_read_*), with the semantics of
 * rdma-core's mlx5 provider (providers/mlx5/cq.c, verbs.c create_cq):
 *
 *   start_poll  takes the CQ's poll lock and makes the oldest completion
 *               current (ENOENT, and the lock released, when there is none:
 *               then end_poll must not be called); EINVAL for a comp_mask;
 *   next_poll   makes the next one current (ENOENT when there is none);
 *   end_poll    publishes the consumer index and releases the lock.
 *
 * The CQ is the same ring of CQE64s the engine writes for ibv_create_cq's
 * CQs, decoded by the same code as ibv_poll_cq (cq.c): a completion read
 * here equals the ibv_wc ibv_poll_cq would return, and the two may be mixed
 * on one CQ (outside a start..end window). ibv_cq_ex_to_cq gives the
 * ibv_cq (destroy, arm, channels, mlx5dv_init_obj as for any CQ).
 *
 * wc_flags: the standard set (byte_len, imm, qp_num, src_qp, slid, sl,
 * dlid_path_bits), whose read_* calls are set only when asked for, as mlx5
 * sets them. mlx5's others need what the emulated device has not: a clock
 * (COMPLETION_TIMESTAMP, _WALLCLOCK), VLANs (CVLAN), tag matching
 * (TM_INFO): EOPNOTSUPP, as for flags mlx5 does not know. FLOW_TAG reads
 * the flow tag of a RAW_PACKET QP's receive (0 for other completions).
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdlib.h>

#include "emu.h"

#define CQ_WC_FLAGS_OK    (IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG)
#define CQ_COMP_MASK_MLX5 (IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)
#define CQ_CREATE_FLAGS_MLX5                                                                       \
	(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

static struct emu_cq *to_ecq_ex(struct ibv_cq_ex *cqx)
{
	return to_ecq(ibv_cq_ex_to_cq(cqx));
}

/* ---- poll ------------------------------------------------------------------ */

/* Make the next completion current: 0, or ENOENT when none is waiting.
 * CQEs that carry no completion (their QP is gone) are consumed on the way. */
static int advance(struct emu_cq *cq)
{
	struct gnic_mlx5_cqe64 *cqe;

	while ((cqe = emu_cq_next(cq, cq->ci))) {
		int got = emu_cq_parse(cq, cqe, &cq->cur);

		cq->ci++;
		if (got) {
			cq->ibcqx.status = cq->cur.status;
			cq->ibcqx.wr_id = cq->cur.wr_id;
			return 0;
		}
	}
	return ENOENT;
}

static int start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct emu_cq *cq = to_ecq_ex(cqx);
	uint32_t start;
	int err;

	if (!attr || attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->poll_lock);
	start = cq->ci;
	err = advance(cq);
	if (err) {
		/* no end_poll follows: what was consumed is published here */
		if (cq->ci != start)
			emu_cq_publish_ci(cq);
		pthread_spin_unlock(&cq->poll_lock);
	}
	return err;
}

static int next_poll(struct ibv_cq_ex *cqx)
{
	return advance(to_ecq_ex(cqx));
}

static void end_poll(struct ibv_cq_ex *cqx)
{
	struct emu_cq *cq = to_ecq_ex(cqx);

	emu_cq_publish_ci(cq);
	pthread_spin_unlock(&cq->poll_lock);
}

/* ---- read: the current completion ------------------------------------------ */

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.vendor_err;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.wc_flags;
}

static uint32_t read_byte_len(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.byte_len;
}

static __be32 read_imm_data(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.imm_data;
}

static uint32_t read_qp_num(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.src_qp;
}

static uint32_t read_slid(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.slid;
}

static uint8_t read_sl(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.sl;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur.dlid_path_bits;
}

static uint32_t read_flow_tag(struct ibv_cq_ex *cqx)
{
	return to_ecq_ex(cqx)->cur_flow_tag;
}

static void fill_ops(struct ibv_cq_ex *x, uint64_t wc_flags)
{
	x->start_poll = start_poll;
	x->next_poll = next_poll;
	x->end_poll = end_poll;
	x->read_opcode = read_opcode;
	x->read_vendor_err = read_vendor_err;
	x->read_wc_flags = read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_FLOW_TAG)
		x->read_flow_tag = read_flow_tag;
}

/* ---- create ---------------------------------------------------------------- */

/* mlx5's create_cq checks, in its order. */
static int check_attr(struct ibv_context *context, const struct ibv_cq_init_attr_ex *a)
{
	if (!a->cqe || (a->comp_mask & ~(uint32_t)CQ_COMP_MASK_MLX5) ||
	    ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (a->flags & ~(uint32_t)CQ_CREATE_FLAGS_MLX5)))
		return EINVAL;
	if (a->wc_flags & ~(uint64_t)CQ_WC_FLAGS_OK) {
		emu_info("create_cq_ex: wc_flags 0x%llx: gnic-emu completes with the standard "
		         "fields and flow tags only (no timestamps, VLANs or tag matching)",
		         (unsigned long long)a->wc_flags);
		return EOPNOTSUPP;
	}
	/* IBV_CQ_INIT_ATTR_MASK_PD: a parent domain (a plain PD: EINVAL, as in
	 * mlx5), of this context (gnic-emu's check) */
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!emu_parent_domain(a->parent_domain) || a->parent_domain->context != context))
		return EINVAL;
	return 0;
}

EMU_EXPORT struct ibv_cq_ex *gemu_create_cq_ex(struct ibv_context *context,
                                               struct ibv_cq_init_attr_ex *attr)
{
	struct emu_cq *cq;
	int err;

	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	err = check_attr(context, attr);
	if (!err && attr->cqe > EMU_MAX_CQE)
		err = EINVAL;
	cq = err ? NULL : calloc(1, sizeof(*cq));
	if (!err && !cq)
		err = ENOMEM;
	if (!err) {
		fill_ops(&cq->ibcqx, attr->wc_flags);
		cq->ignore_overrun = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
		                     (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
		err = emu_cq_init(cq, context, (int)attr->cqe, attr->cq_context, attr->channel,
		                  (int)attr->comp_vector);
	}
	if (!err && (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)) {
		cq->parent = emu_parent_domain(attr->parent_domain); /* held until destroy */
		emu_nic_lock();
		cq->parent->refcnt++;
		emu_nic_unlock();
	}
	if (err) {
		errno = err;
		return NULL;
	}
	return &cq->ibcqx;
}

/* mlx5dv_create_cq: ibv_create_cq_ex with mlx5's vendor attributes, judged
 * as mlx5 judges them on a device without CQE compression or 128-byte CQE
 * padding (what mlx5dv_query_device reports here): an unknown comp_mask
 * bit, compression, unknown flags, padding, a CQE size other than 64 or 128:
 * EINVAL. 128-byte CQEs, which a ConnectX-7 has, are not emulated: EOPNOTSUPP. */
EMU_EXPORT struct ibv_cq_ex *gemu_mlx5dv_create_cq(struct ibv_context *context,
                                                   struct ibv_cq_init_attr_ex *attr,
                                                   struct mlx5dv_cq_init_attr *mattr)
{
	const uint64_t known = MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE |
	                       MLX5DV_CQ_INIT_ATTR_MASK_FLAGS | MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
	uint64_t m = mattr ? mattr->comp_mask : 0;
	int err = 0;

	if ((m & ~known) || (m & MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE) ||
	    ((m & MLX5DV_CQ_INIT_ATTR_MASK_FLAGS) && mattr->flags) ||
	    ((m & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) && mattr->cqe_size != 64 &&
	     mattr->cqe_size != 128))
		err = EINVAL;
	else if ((m & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) && mattr->cqe_size == 128) {
		emu_info("mlx5dv_create_cq: 128-byte CQEs are not emulated (64 only)");
		err = EOPNOTSUPP;
	}
	if (err) {
		errno = err;
		return NULL;
	}
	return gemu_create_cq_ex(context, attr);
}
