/* SPDX-License-Identifier: MIT */
/*
 * GNIC_QUEUE_HOST: the QP and its CQs made by the provider (ibv_create_cq,
 * mlx5dv_create_qp) in host memory it allocates, and read back through
 * mlx5dv_init_obj; transitions through ibv_modify_qp.
 */
#include <errno.h>
#include <string.h>

#include "gnic_int.h"

static gnic_status_t create_cqs(struct gnic_qp *qp, uint32_t scq_n, uint32_t rcq_n)
{
	struct gnic_ctx *ctx = qp->ctx;

	qp->scq = ctx->v->create_cq(ctx->ibctx, (int)scq_n, NULL, NULL, 0);
	if (!qp->scq)
		return gnic_error(GNIC_ERR_SYSTEM, "create_cq(%u) for sends: %s", scq_n,
		                  strerror(errno));
	qp->rcq = ctx->v->create_cq(ctx->ibctx, (int)rcq_n, NULL, NULL, 0);
	if (!qp->rcq)
		return gnic_error(GNIC_ERR_SYSTEM, "create_cq(%u) for receives: %s", rcq_n,
		                  strerror(errno));
	return GNIC_OK;
}

/* Through mlx5dv_create_qp without scatter-to-CQE, which rdma-core turns
 * on by default: with it, a SEND of <= 32 bytes lands in the receive CQE
 * and never in the buffer, and only rdma-core's own poll_cq copies it out
 * (device code polls CQEs itself; a GPU buffer cannot even be copied into
 * by the CPU). gnic_dev_recv_wait still copies such data, should a
 * provider without mlx5dv_create_qp leave it on. */
static struct ibv_qp *create_rc(struct gnic_qp *qp, struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	struct mlx5dv_qp_init_attr dv = {
	    .comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
	    .create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE,
	};
	struct ibv_qp_init_attr_ex ex = {
	    .send_cq = ia->send_cq,
	    .recv_cq = ia->recv_cq,
	    .cap = ia->cap,
	    .qp_type = ia->qp_type,
	    .sq_sig_all = ia->sq_sig_all,
	    .comp_mask = IBV_QP_INIT_ATTR_PD,
	    .pd = pd,
	};
	struct ibv_qp *ibqp;

	if (!qp->ctx->v->mlx5dv_create_qp) {
		gnic_info("qp: %s has no mlx5dv_create_qp: scatter-to-CQE stays on",
		          qp->ctx->v->lib_path);
		return qp->ctx->v->create_qp(pd, ia);
	}
	ibqp = qp->ctx->v->mlx5dv_create_qp(qp->ctx->ibctx, &ex, &dv);
	if (ibqp)
		ia->cap = ex.cap;
	return ibqp;
}

static gnic_status_t create_ibqp(struct gnic_qp *qp)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = qp->scq,
	    .recv_cq = qp->rcq,
	    .cap = {.max_send_wr = qp->attr.sq_depth,
	            .max_recv_wr = qp->attr.rq_depth,
	            .max_send_sge = 1,
	            .max_recv_sge = 1,
	            .max_inline_data = qp->attr.max_inline},
	    .qp_type = qp->raw_eth ? IBV_QPT_RAW_PACKET : IBV_QPT_RC,
	    .sq_sig_all = 0,
	};
	struct ibv_pd *pd;
	gnic_status_t st = gnic_qp_bf_pd(qp, &pd); /* BF: a register of its own */

	if (st)
		return st;
	/* scatter-to-CQE is an RC/UC/UD matter: a RAW_PACKET QP is made plainly */
	qp->ibqp = qp->raw_eth ? qp->ctx->v->create_qp(pd, &ia) : create_rc(qp, pd, &ia);
	if (!qp->ibqp)
		return gnic_error(
		    GNIC_ERR_SYSTEM, "create_qp(%s, send %u, recv %u, inline %u) on %s: %s",
		    qp->raw_eth ? "RAW_PACKET" : "RC", qp->attr.sq_depth, qp->attr.rq_depth,
		    qp->attr.max_inline, qp->ctx->device, strerror(errno));
	return GNIC_OK;
}

static gnic_status_t init_dv(struct gnic_qp *qp)
{
	struct mlx5dv_obj obj = {0};
	int r;

	obj.qp.in = qp->ibqp;
	obj.qp.out = &qp->dv;
	obj.cq.in = qp->scq;
	obj.cq.out = &qp->dv_scq;
	r = qp->ctx->v->mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ);
	if (!r) {
		memset(&obj, 0, sizeof(obj));
		obj.cq.in = qp->rcq;
		obj.cq.out = &qp->dv_rcq;
		r = qp->ctx->v->mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ);
	}
	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "mlx5dv_init_obj on %s: %s", qp->ctx->device,
		                  strerror(r));
	if (qp->dv_scq.cqe_size != sizeof(struct gnic_mlx5_cqe64) ||
	    qp->dv_rcq.cqe_size != sizeof(struct gnic_mlx5_cqe64) ||
	    qp->dv.sq.stride != GNIC_MLX5_SEND_WQE_BB)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "qp: CQE size %u / SQ stride %u; only 64 is supported "
		                  "(is MLX5_CQE_SIZE set?)",
		                  qp->dv_scq.cqe_size, qp->dv.sq.stride);
	/* every doorbell mode, CPU-assisted too, ends at the register */
	if (!qp->dv.bf.reg || !qp->dv.dbrec)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED, "qp: %s gave no doorbell %s",
		                  qp->ctx->device, qp->dv.dbrec ? "register" : "record");
	return GNIC_OK;
}

static void verbs_destroy(struct gnic_qp *qp)
{
	const struct gnic_verbs *v = qp->ctx->v;

	if (qp->ibqp)
		v->destroy_qp(qp->ibqp);
	if (qp->rcq)
		v->destroy_cq(qp->rcq);
	if (qp->scq)
		v->destroy_cq(qp->scq);
	qp->ibqp = NULL;
	qp->rcq = qp->scq = NULL;
}

/* Each CQ must hold as many CQEs as its queue has slots (see qp_attr.c);
 * the provider may size the SQ above our guess, then we size again. */
static bool cqs_fit(const struct gnic_qp *qp)
{
	return qp->dv_scq.cqe_cnt >= qp->dv.sq.wqe_cnt && qp->dv_rcq.cqe_cnt >= qp->dv.rq.wqe_cnt;
}

static gnic_status_t verbs_create(struct gnic_qp *qp)
{
	uint32_t scq_n = gnic_qp_scq_depth(&qp->attr), rcq_n = gnic_qp_rcq_depth(&qp->attr);
	gnic_status_t st;

	for (int attempt = 0; attempt < 2; attempt++) {
		st = create_cqs(qp, scq_n, rcq_n);
		if (!st)
			st = create_ibqp(qp);
		if (!st)
			st = init_dv(qp);
		if (!st)
			qp->qpn = qp->ibqp->qp_num;
		if (st || cqs_fit(qp))
			return st;
		scq_n = qp->dv.sq.wqe_cnt;
		rcq_n = qp->dv.rq.wqe_cnt > 2 ? qp->dv.rq.wqe_cnt : 2;
		verbs_destroy(qp);
	}
	return gnic_error(GNIC_ERR_SYSTEM, "qp: %s gave CQs smaller than their queues",
	                  qp->ctx->device);
}

static gnic_status_t verbs_modify(struct gnic_qp *qp, struct ibv_qp_attr *a, int mask)
{
	int r = qp->ctx->v->modify_qp(qp->ibqp, a, mask);

	return r ? gnic_error(GNIC_ERR_SYSTEM, "modify_qp: %s", strerror(r)) : GNIC_OK;
}

const struct gnic_qp_ops gnic_qp_verbs_ops = {
    .name = "verbs",
    .create = verbs_create,
    .destroy = verbs_destroy,
    .modify = verbs_modify,
};
