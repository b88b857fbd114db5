/* SPDX-License-Identifier: MIT */
/*
 * A queue pair as the device uses it: an RC QP with its own send and receive
 * CQs, handed to the device through mlx5dv, plus a small host block (atomic
 * results, the error record, the CPU doorbell word). qp_dev.c builds the
 * struct gnic_dev_qp that describes all of it to device code.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

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
static struct ibv_qp *create_rc(struct gnic_qp *qp, struct ibv_qp_init_attr *ia)
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
	    .pd = qp->ctx->pd,
	};
	struct ibv_qp *ibqp;

	if (!qp->ctx->v->mlx5dv_create_qp) {
		gnic_info("qp: %s has no mlx5dv_create_qp: scatter-to-CQE stays on",
		          qp->ctx->v->lib_path);
		return qp->ctx->v->create_qp(qp->ctx->pd, ia);
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

	/* scatter-to-CQE is an RC/UC/UD matter: a RAW_PACKET QP is made plainly */
	qp->ibqp = qp->raw_eth ? qp->ctx->v->create_qp(qp->ctx->pd, &ia) : create_rc(qp, &ia);
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

static void destroy_verbs(struct gnic_qp *qp)
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

static gnic_status_t create_verbs(struct gnic_qp *qp)
{
	uint32_t scq_n = gnic_qp_scq_depth(&qp->attr), rcq_n = gnic_qp_rcq_depth(&qp->attr);
	gnic_status_t st;

	for (int attempt = 0; attempt < 2; attempt++) {
		st = create_cqs(qp, scq_n, rcq_n);
		if (!st)
			st = create_ibqp(qp);
		if (!st)
			st = init_dv(qp);
		if (st || cqs_fit(qp))
			return st;
		scq_n = qp->dv.sq.wqe_cnt;
		rcq_n = qp->dv.rq.wqe_cnt > 2 ? qp->dv.rq.wqe_cnt : 2;
		destroy_verbs(qp);
	}
	return gnic_error(GNIC_ERR_SYSTEM, "qp: %s gave CQs smaller than their queues",
	                  qp->ctx->device);
}

/* The host block, on pages of its own so a GPU context can map it alone:
 * scratch[2 * sq_wqe_cnt + 1] (result slots, then the discard word), then the
 * error record and the CPU doorbell word, each on its own cache line. */
static gnic_status_t alloc_hblk(struct gnic_qp *qp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t scratch_len =
	    ((2 * (size_t)qp->dv.sq.wqe_cnt + 1) * sizeof(uint64_t) + 63) & ~(size_t)63;
	uint8_t *p;

	qp->hblk_len = (scratch_len + 2 * 64 + page - 1) & ~(page - 1);
	if (posix_memalign(&qp->hblk, page, qp->hblk_len))
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	memset(qp->hblk, 0, qp->hblk_len);
	p = qp->hblk;
	qp->scratch = (uint64_t *)p;
	qp->err = (struct gnic_dev_err *)(p + scratch_len);
	qp->cpu_db = (uint64_t *)(p + scratch_len + 64);
	/* atomic results are written by the NIC: local write */
	qp->scratch_mr = gnic_verbs_reg_mr(qp->ctx->v, qp->ctx->pd, qp->scratch, scratch_len,
	                                   IBV_ACCESS_LOCAL_WRITE);
	if (!qp->scratch_mr)
		return gnic_error(GNIC_ERR_SYSTEM, "qp: reg_mr of the scratch area: %s",
		                  strerror(errno));
	return GNIC_OK;
}

static void free_hblk(struct gnic_qp *qp)
{
	if (qp->scratch_mr)
		qp->ctx->v->dereg_mr(qp->scratch_mr);
	free(qp->hblk);
}

static uint32_t random_psn(void)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)gnic_time_ns() * 2654435761u; /* no entropy: still varies */
	return r & 0xffffff;
}

static gnic_status_t qp_build(struct gnic_qp *qp)
{
	gnic_status_t st = create_verbs(qp);

	if (!st)
		st = gnic_qp_attr_check_geometry(&qp->attr, qp->dv.sq.wqe_cnt);
	if (!st)
		st = alloc_hblk(qp);
	if (!st)
		st = gnic_qp_dev_create(qp);
	return st;
}

static void qp_free(struct gnic_qp *qp)
{
	gnic_qp_dev_destroy(qp);
	free_hblk(qp);
	destroy_verbs(qp);
	free(qp);
}

static gnic_status_t create_any(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr, bool raw,
                                struct gnic_qp **qp_p)
{
	struct gnic_qp_attr defaults;
	struct gnic_qp *qp;
	gnic_status_t st;

	if (!ctx || !qp_p)
		return gnic_error(GNIC_ERR_INVALID, "qp_create: NULL argument");
	if (!attr) {
		gnic_qp_attr_init(&defaults);
		attr = &defaults;
	}
	st = gnic_qp_attr_check(attr, ctx->max_qp_wr);
	if (st)
		return st;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return gnic_error(GNIC_ERR_NOMEM, "qp_create: out of memory");
	qp->ctx = ctx;
	qp->attr = *attr;
	qp->raw_eth = raw;
	st = qp_build(qp);
	if (!st && raw && qp->attr.db_mode == GNIC_DB_PROXY) /* placement fell back to it */
		st = gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                "eth: the doorbell register cannot be mapped for device code "
		                "(%s), and Ethernet queues have no CPU proxy",
		                gnic_last_error());
	if (st) {
		qp_free(qp);
		return st;
	}
	qp->psn = random_psn();
	if (qp->attr.db_mode == GNIC_DB_CPU)
		st = gnic_progress_add(qp);
	else if (qp->attr.db_mode == GNIC_DB_PROXY)
		st = gnic_proxy_add(qp);
	if (st) {
		qp_free(qp);
		return st;
	}
	ctx->nqp++;
	*qp_p = qp;
	return GNIC_OK;
}

GNIC_API gnic_status_t gnic_qp_create(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                      struct gnic_qp **qp_p)
{
	return create_any(ctx, attr, false, qp_p);
}

gnic_status_t gnic_qp_create_raw(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                 struct gnic_qp **qp_p)
{
	if (attr && attr->db_mode == GNIC_DB_PROXY)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "eth: db_mode PROXY: Ethernet queues "
		                  "have no CPU proxy (AUTO, SM, BF or CPU)");
	return create_any(ctx, attr, true, qp_p);
}

GNIC_API void gnic_qp_destroy(struct gnic_qp *qp)
{
	if (!qp)
		return;
	gnic_progress_remove(qp);
	gnic_proxy_remove(qp); /* the thread lets go of it first */
	qp->ctx->nqp--;
	qp_free(qp);
}

GNIC_API struct gnic_dev_qp *gnic_qp_dev(struct gnic_qp *qp)
{
	if (!qp)
		return NULL;
	if (qp->dev_gpu)
		return (struct gnic_dev_qp *)(uintptr_t)qp->dev_gpu;
	return qp->img;
}
