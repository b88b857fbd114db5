// SPDX-License-Identifier: MIT
/*
 * mlx5's own work-request builders (mlx5dv_qp_ex_from_ibv_qp_ex and the
 * mlx5dv_wr_* calls) on an RC QP, against rdma-core's mlx5 provider
 * (mlx5_qp_fill_wr_pfns, mlx5_wr_raw_wqe, mlx5_wr_memcpy):
 *
 *   create  mlx5dv_create_qp's send_ops_flags: unknown bits and MEMCPY (the
 *           device has no DMA engine) EOPNOTSUPP; the mkey builders size the
 *           SQ for a UMR WQE (192 bytes of overhead, as a memory-window
 *           bind); without mlx5 send_ops_flags every builder is NULL, with
 *           them all but the DC ones are set;
 *   raw     mlx5dv_wr_raw_wqe: the caller's WQE lands in the SQ byte for
 *           byte but for its index, executes (an RDMA WRITE) and completes
 *           as IBV_WC_DRIVER2 with the QP's wr_id; mixed with ibv_wr_* in
 *           one batch;
 *   errors  an mkey builder fails the batch with EOPNOTSUPP, memcpy with
 *           EINVAL, and a failed batch posts nothing.
 */
#include <infiniband/mlx5dv.h>

#include "common.h"
#include "gnic/gnic_mlx5.h"

#define BUF_LEN 8192
#define GUARD   0xee

static struct ibv_context *ctx;

/* An RC QP with IBV send_ops_flags ops and mlx5 send_ops_flags dv_ops; NULL
 * and *err on failure. */
static struct ibv_qp *dv_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint64_t ops, uint64_t dv_ops,
                            struct ibv_qp_cap *cap, int *err)
{
	struct ibv_qp_init_attr_ex a = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC,
	    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	    .pd = pd,
	    .send_ops_flags = ops};
	struct mlx5dv_qp_init_attr m = {.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS,
	                                .send_ops_flags = dv_ops};
	struct ibv_qp *qp;

	errno = 0;
	qp = mlx5dv_create_qp(ctx, &a, dv_ops ? &m : NULL);
	*err = qp ? 0 : errno;
	if (qp && cap)
		*cap = a.cap;
	return qp;
}

/* qp[0] made by mlx5dv_create_qp with dv_ops, qp[1] a plain RC QP. */
static void dpair_create(struct t_xpair *d, uint64_t dv_ops)
{
	struct t_pair *p = &d->p;
	struct t_qp_caps caps;
	int err;

	memset(d, 0, sizeof(*d));
	t_qp_caps_default(&caps);
	t_conn_opts_default(&p->opts);
	p->ctx = ctx;
	p->pd = CHECK_PTR(ibv_alloc_pd(ctx));
	for (int i = 0; i < 2; i++) {
		p->scq[i] = t_cq(ctx, 64);
		p->rcq[i] = t_cq(ctx, 64);
	}
	p->qp[0] = dv_qp(p->pd, p->scq[0], IBV_QP_EX_WITH_RDMA_WRITE, dv_ops, &p->cap[0], &err);
	CHECK_PTR(p->qp[0]);
	p->qp[1] = t_qp(p->pd, p->scq[1], p->rcq[1], &caps, &p->cap[1]);
	for (int i = 0; i < 2; i++)
		t_local_ep(p->qp[i], &p->ep[i]);
	t_xpair_finish(d, BUF_LEN, GUARD);
	d->dx = CHECK_PTR(mlx5dv_qp_ex_from_ibv_qp_ex(d->x));
}

static uint16_t sq_pi(const struct t_xpair *d)
{
	return (uint16_t)be32toh(d->dv.dbrec[MLX5_SND_DBR]);
}

/* ---- create ---------------------------------------------------------------- */

static void test_create(void)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct mlx5dv_qp dv;
	struct mlx5dv_obj o = {.qp = {.out = &dv}};
	struct mlx5dv_qp_ex *dx;
	struct ibv_qp *qp;
	int err;

	t_case("create: unknown mlx5 send_ops_flags: EOPNOTSUPP");
	CHECK(dv_qp(pd, cq, IBV_QP_EX_WITH_RDMA_WRITE, 1u << 10, NULL, &err) == NULL);
	CHECK_EQ(err, EOPNOTSUPP);
	t_case("create: MLX5DV_QP_EX_WITH_MEMCPY without a DMA engine: EOPNOTSUPP");
	CHECK(dv_qp(pd, cq, IBV_QP_EX_WITH_RDMA_WRITE,
	            MLX5DV_QP_EX_WITH_RAW_WQE | MLX5DV_QP_EX_WITH_MEMCPY, NULL, &err) == NULL);
	CHECK_EQ(err, EOPNOTSUPP);

	t_case("create: no mlx5 send_ops_flags: mlx5dv_qp_ex_from_ibv_qp_ex gives builders "
	       "all NULL");
	qp = CHECK_PTR(dv_qp(pd, cq, IBV_QP_EX_WITH_RDMA_WRITE, 0, NULL, &err));
	dx = CHECK_PTR(mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_to_qp_ex(qp)));
	CHECK(!dx->wr_raw_wqe && !dx->wr_mr_list && !dx->wr_mkey_configure && !dx->wr_memcpy &&
	      !dx->wr_set_dc_addr);
	o.qp.in = qp;
	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_QP));
	CHECK_EQ(dv.sq.wqe_cnt, 16); /* 16 WQEs of ctrl + raddr + 1 SGE: one block each */
	CHECK_OK(ibv_destroy_qp(qp));

	t_case("create: RAW_WQE: every RC builder set, the DC ones NULL; the SQ as without");
	qp = CHECK_PTR(
	    dv_qp(pd, cq, IBV_QP_EX_WITH_RDMA_WRITE, MLX5DV_QP_EX_WITH_RAW_WQE, NULL, &err));
	dx = CHECK_PTR(mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_to_qp_ex(qp)));
	CHECK(dx->wr_raw_wqe && dx->wr_mr_interleaved && dx->wr_mr_list && dx->wr_mkey_configure &&
	      dx->wr_set_mkey_access_flags && dx->wr_set_mkey_layout_list &&
	      dx->wr_set_mkey_layout_interleaved && dx->wr_set_mkey_sig_block &&
	      dx->wr_set_mkey_crypto && dx->wr_memcpy);
	CHECK(!dx->wr_set_dc_addr && !dx->wr_set_dc_addr_stream);
	o.qp.in = qp;
	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_QP));
	CHECK_EQ(dv.sq.wqe_cnt, 16);
	CHECK_OK(ibv_destroy_qp(qp));

	t_case("create: MR_LIST: each WQE has room for a UMR (192 + 16 bytes: 4 blocks)");
	qp = CHECK_PTR(
	    dv_qp(pd, cq, IBV_QP_EX_WITH_RDMA_WRITE, MLX5DV_QP_EX_WITH_MR_LIST, NULL, &err));
	o.qp.in = qp;
	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_QP));
	CHECK_EQ(dv.sq.wqe_cnt, 64);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
}

/* ---- raw WQEs ---------------------------------------------------------------- */

/* An RDMA WRITE WQE as a caller builds it for mlx5dv_wr_raw_wqe: ctrl (with
 * a wrong index, which the provider replaces), raddr, one data segment. */
static void raw_write(struct t_xpair *d, uint8_t *wqe, uint32_t off, uint32_t len)
{
	struct mlx5_wqe_ctrl_seg *c = (void *)wqe;
	struct mlx5_wqe_raddr_seg *r = (void *)(wqe + 16);
	struct mlx5_wqe_data_seg *s = (void *)(wqe + 32);

	memset(wqe, 0, 64);
	c->opmod_idx_opcode = htobe32(0xabcdu << 8 | MLX5_OPCODE_RDMA_WRITE);
	c->qpn_ds = htobe32(d->p.qp[0]->qp_num << 8 | 3);
	c->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
	r->raddr = htobe64((uintptr_t)d->b + off);
	r->rkey = htobe32(d->bmr->rkey);
	mlx5dv_set_data_seg(s, len, d->amr->lkey, (uintptr_t)d->a + off);
}

static void test_raw(void)
{
	uint8_t wqe[64], got[64];
	struct ibv_wc wc[2];
	struct t_xpair d;
	uint16_t pi;

	dpair_create(&d, MLX5DV_QP_EX_WITH_RAW_WQE);
	t_fill(d.a, BUF_LEN, 7);
	t_case("raw: an RDMA WRITE WQE through mlx5dv_wr_raw_wqe: in the SQ as given but for "
	       "its index; the data lands; IBV_WC_DRIVER2 with the wr_id");
	raw_write(&d, wqe, 0, 1000);
	pi = sq_pi(&d);
	ibv_wr_start(d.x);
	d.x->wr_id = 41;
	mlx5dv_wr_raw_wqe(d.dx, wqe);
	CHECK_OK(ibv_wr_complete(d.x));
	CHECK_EQ(sq_pi(&d), (uint16_t)(pi + 1));
	memcpy(got, (uint8_t *)d.dv.sq.buf + (size_t)(pi & (d.dv.sq.wqe_cnt - 1)) * 64, 64);
	CHECK_EQ(be32toh(((struct mlx5_wqe_ctrl_seg *)got)->opmod_idx_opcode),
	         (uint32_t)pi << 8 | MLX5_OPCODE_RDMA_WRITE);
	CHECK_MEM(got + 4, wqe + 4, 44); /* ds 3: 48 bytes copied */
	t_poll(d.p.scq[0], 1, wc, "the raw WRITE");
	CHECK_WC(&wc[0], 41, IBV_WC_SUCCESS, IBV_WC_DRIVER2);
	CHECK_MEM(d.b, d.a, 1000);
	CHECK_BYTES(d.b + 1000, GUARD, BUF_LEN - 1000);

	t_case("raw: one batch of ibv_wr_rdma_write and a raw WQE, one doorbell");
	raw_write(&d, wqe, 4096, 64);
	ibv_wr_start(d.x);
	d.x->wr_id = 42;
	d.x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(d.x, d.bmr->rkey, (uintptr_t)d.b + 2048);
	ibv_wr_set_sge(d.x, d.amr->lkey, (uintptr_t)d.a + 2048, 100);
	d.x->wr_id = 43;
	mlx5dv_wr_raw_wqe(d.dx, wqe);
	CHECK_OK(ibv_wr_complete(d.x));
	t_poll(d.p.scq[0], 2, wc, "the WRITE and the raw WRITE");
	CHECK_WC(&wc[0], 42, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_WC(&wc[1], 43, IBV_WC_SUCCESS, IBV_WC_DRIVER2);
	CHECK_MEM(d.b + 2048, d.a + 2048, 100);
	CHECK_MEM(d.b + 4096, d.a + 4096, 64);
	CHECK_EQ(t_qp_state(d.p.qp[0]), IBV_QPS_RTS);
	t_xpair_destroy(&d);
}

/* ---- errors ------------------------------------------------------------------ */

static void test_errors(void)
{
	struct mlx5dv_mkey *no_mkey = NULL;
	struct ibv_sge sge;
	struct t_xpair d;
	uint16_t pi;

	dpair_create(&d, MLX5DV_QP_EX_WITH_RAW_WQE | MLX5DV_QP_EX_WITH_MR_LIST);
	sge = (struct ibv_sge){(uintptr_t)d.a, 64, d.amr->lkey};
	pi = sq_pi(&d);
	t_case("errors: mlx5dv_wr_mr_list (no mkeys can exist): the batch fails with "
	       "EOPNOTSUPP and posts nothing, not even its good WQE");
	ibv_wr_start(d.x);
	d.x->wr_id = 1;
	d.x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(d.x, d.bmr->rkey, (uintptr_t)d.b);
	ibv_wr_set_sge(d.x, d.amr->lkey, (uintptr_t)d.a, 64);
	mlx5dv_wr_mr_list(d.dx, no_mkey, IBV_ACCESS_LOCAL_WRITE, 1, &sge);
	CHECK_RET(ibv_wr_complete(d.x), EOPNOTSUPP);
	CHECK_EQ(sq_pi(&d), pi);
	t_case("errors: mlx5dv_wr_mkey_configure: EOPNOTSUPP");
	ibv_wr_start(d.x);
	mlx5dv_wr_mkey_configure(d.dx, no_mkey, 0, NULL);
	CHECK_RET(ibv_wr_complete(d.x), EOPNOTSUPP);
	t_case("errors: mlx5dv_wr_memcpy with max_wr_memcpy_length 0: EINVAL");
	ibv_wr_start(d.x);
	mlx5dv_wr_memcpy(d.dx, d.bmr->lkey, (uintptr_t)d.b, d.amr->lkey, (uintptr_t)d.a, 64);
	CHECK_RET(ibv_wr_complete(d.x), EINVAL);
	CHECK_EQ(sq_pi(&d), pi);
	t_expect_empty(d.p.scq[0], "failed batches");
	CHECK_BYTES(d.b, GUARD, BUF_LEN);
	CHECK_EQ(t_qp_state(d.p.qp[0]), IBV_QPS_RTS);
	t_xpair_destroy(&d);
}

static const struct t_named_case cases[] = {
    {"create", test_create},
    {"raw", test_raw},
    {"errors", test_errors},
};

int main(int argc, char **argv)
{
	ctx = t_open(T_DEVICE);
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
