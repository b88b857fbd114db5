/* SPDX-License-Identifier: MIT */
/*
 * mlx5 direct verbs: hand the hardware view of QPs and CQs to the user.
 *
 * After mlx5dv_init_obj the caller (typically a GPU thread) writes WQEs,
 * rings doorbells and polls CQEs itself; the engine cannot tell those bytes
 * from ours. The CQ's consumer index then belongs to the caller.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>

#include "emu.h"
#include "rwq.h"

#define DV_OBJ_SUPPORTED                                                                           \
	(MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ | MLX5DV_OBJ_AH | MLX5DV_OBJ_PD |          \
	 MLX5DV_OBJ_RWQ)

static bool emu_obj(struct ibv_context *context)
{
	return context && gemu_is_emu_context(context);
}

static void fill_qp(struct emu_qp *qp, struct mlx5dv_qp *out)
{
	out->dbrec = qp->dbrec;
	out->sq.buf = qp->sq.buf;
	out->sq.wqe_cnt = qp->sq.wqe_cnt;
	out->sq.stride = qp->sq.stride; /* mlx5: 1 << 0 without an SQ */
	out->rq.buf = qp->rq.buf;
	out->rq.wqe_cnt = qp->rq.wqe_cnt;
	out->rq.stride = qp->rq.stride;
	out->bf.reg = (void *)qp->bf->reg; /* maybe shared with other QPs (uar.c) */
	out->bf.size = qp->bf->buf_size;
	/* no UAR mmap offset, raw-packet handles or TIR address to offer */
	out->comp_mask = 0;
	out->sqn = qp->ibqp.qp_num;
	out->rqn = qp->ibqp.qp_num;
	qp->dv_owned = true;
}

/* cq_uar stays NULL: arming goes through ibv_req_notify_cq (it reads the
 * caller's consumer index from dbrec[0]), there is no CQ doorbell register. */
static void fill_cq(struct emu_cq *cq, struct mlx5dv_cq *out)
{
	out->buf = cq->buf;
	out->dbrec = cq->dbrec;
	out->cqe_cnt = cq->cqe_cnt;
	out->cqe_size = sizeof(struct gnic_mlx5_cqe64);
	out->cq_uar = NULL;
	out->cqn = cq->cqn;
	out->comp_mask = 0;
	cq->dv_owned = true;
}

/* The SRQ's buffer and doorbell record, and its free list's ends as they
 * are now (mlx5's head and tail); srqn when comp_mask asks for it. */
static void fill_srq(struct emu_srq *srq, struct mlx5dv_srq *out)
{
	uint64_t want = out->comp_mask;

	out->buf = srq->wq.buf;
	out->dbrec = srq->dbrec;
	out->stride = srq->wq.stride;
	pthread_spin_lock(&srq->wq.lock);
	out->head = srq->next_free;
	out->tail = srq->last_free;
	pthread_spin_unlock(&srq->wq.lock);
	out->comp_mask = 0;
	if (want & MLX5DV_SRQ_MASK_SRQN) {
		out->srqn = srq->srqn;
		out->comp_mask |= MLX5DV_SRQ_MASK_SRQN;
	}
}

/* Checks every requested object before filling any, so an error changes
 * nothing. */
EMU_EXPORT int gemu_mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	bool want_qp = obj_type & MLX5DV_OBJ_QP, want_cq = obj_type & MLX5DV_OBJ_CQ;
	bool want_srq = obj_type & MLX5DV_OBJ_SRQ, want_ah = obj_type & MLX5DV_OBJ_AH;
	bool want_pd = obj_type & MLX5DV_OBJ_PD;

	if (!obj || !obj_type)
		return EINVAL;
	if (obj_type & ~(uint64_t)DV_OBJ_SUPPORTED)
		return EOPNOTSUPP; /* DM */
	if (want_qp && (!obj->qp.in || !obj->qp.out || !emu_obj(obj->qp.in->context)))
		return EINVAL;
	if (want_cq && (!obj->cq.in || !obj->cq.out || !emu_obj(obj->cq.in->context)))
		return EINVAL;
	if (want_srq && (!obj->srq.in || !obj->srq.out || !emu_obj(obj->srq.in->context)))
		return EINVAL;
	if ((obj_type & MLX5DV_OBJ_RWQ) &&
	    (!obj->rwq.in || !obj->rwq.out || !emu_obj(obj->rwq.in->context)))
		return EINVAL;
	if (obj_type & MLX5DV_OBJ_RWQ) { /* the WQ's ring and doorbell record */
		struct emu_rwq *wq = to_erwq(obj->rwq.in);

		obj->rwq.out->buf = wq->buf;
		obj->rwq.out->dbrec = wq->dbrec;
		obj->rwq.out->wqe_cnt = wq->wqe_cnt;
		obj->rwq.out->stride = wq->stride;
		obj->rwq.out->comp_mask = 0;
	}
	if (want_ah && (!obj->ah.in || !obj->ah.out || !emu_obj(obj->ah.in->context)))
		return EINVAL;
	if (want_ah) { /* the address vector a UD WQE's datagram segment copies */
		obj->ah.out->av = (struct mlx5_wqe_av *)to_eah(obj->ah.in)->av;
		obj->ah.out->comp_mask = 0;
	}
	if (want_pd && (!obj->pd.in || !obj->pd.out || !emu_obj(obj->pd.in->context)))
		return EINVAL;
	if (want_pd) { /* the pdn a DEVX QP context names (qpc.pd) */
		obj->pd.out->pdn = to_epd(obj->pd.in)->pdn;
		obj->pd.out->comp_mask = 0;
	}
	if (want_srq)
		fill_srq(to_esrq(obj->srq.in), obj->srq.out);
	if (want_qp)
		fill_qp(to_eqp(obj->qp.in), obj->qp.out);
	if (want_cq)
		fill_cq(to_ecq(obj->cq.in), obj->cq.out);
	return 0;
}

/* Only the fields this build of mlx5dv.h guarantees are written: a caller
 * built against older headers has a shorter struct, and says through
 * comp_mask which optional fields it has room for. */
EMU_EXPORT int gemu_mlx5dv_query_device(struct ibv_context *context, struct mlx5dv_context *attr)
{
	uint64_t want;

	if (!emu_obj(context))
		return EOPNOTSUPP;
	if (!attr)
		return EINVAL;
	want = attr->comp_mask;
	attr->version = 1;
	attr->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
	attr->comp_mask = 0;
	if (want & MLX5DV_CONTEXT_MASK_DYN_BFREGS) {
		attr->max_dynamic_bfregs = 0;
		attr->comp_mask |= MLX5DV_CONTEXT_MASK_DYN_BFREGS;
	}
	return 0;
}

EMU_EXPORT bool gemu_mlx5dv_is_supported(struct ibv_device *device)
{
	for (int i = 0; i < emu_nic.num_devices; i++)
		if (device == &emu_nic.devices[i].ibdev)
			return true;
	return false;
}

/* mlx5dv_create_qp: an RC QP as ibv_create_qp_ex makes it, with the mlx5
 * create flags that concern scatter-to-CQE (what GPU networking code sets:
 * DISABLE, since its receive buffers may be GPU memory the provider cannot
 * copy into) and mlx5's send_ops_flags (the mlx5dv_wr_* builders, qp_ex.c).
 * Other mlx5 attributes (DC, tunnel offloads, ...) are not emulated:
 * EOPNOTSUPP. DISABLE with ALLOW is EINVAL, as in rdma-core. */
EMU_EXPORT struct ibv_qp *gemu_mlx5dv_create_qp(struct ibv_context *context,
                                                struct ibv_qp_init_attr_ex *attr,
                                                struct mlx5dv_qp_init_attr *mlx5_attr)
{
	const uint32_t scatter_flags =
	    MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE | MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE;
	const uint64_t known =
	    MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS | MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
	enum emu_scatter scatter = EMU_SCATTER_DEFAULT;
	uint64_t dv_ops = 0;
	uint32_t flags = 0;

	if (!emu_obj(context) || !attr) {
		errno = EINVAL;
		return NULL;
	}
	if (mlx5_attr) {
		if (mlx5_attr->comp_mask & ~known) {
			errno = EOPNOTSUPP;
			return NULL;
		}
		if (mlx5_attr->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS)
			flags = mlx5_attr->create_flags;
		if (mlx5_attr->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS)
			dv_ops = mlx5_attr->send_ops_flags;
	}
	if (flags & ~scatter_flags) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((flags & scatter_flags) == scatter_flags) {
		errno = EINVAL;
		return NULL;
	}
	if (flags & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE)
		scatter = EMU_SCATTER_DISABLE;
	else if (flags & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE)
		scatter = EMU_SCATTER_ALLOW;
	return emu_create_qp_dv(context, attr, scatter, dv_ops);
}
