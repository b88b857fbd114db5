// SPDX-License-Identifier: MIT
/*
 * Scatter-to-CQE, as a ConnectX does it for QPs rdma-core creates: on by
 * default (rdma-core asks for it unless MLX5_SCATTER_TO_CQE=0 or
 * MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE), for an RC QP with 64-byte CQEs:
 *
 *   responder  a SEND of 1..32 bytes lands in the receive CQE (op_own format
 *              SCATTER_32, data in bytes 0..31), never in the receive buffer;
 *   requester  only with sq_sig_all or ..._ALLOW_SCATTER_TO_CQE: a READ of
 *              up to 32 bytes or an atomic's result lands in the send CQE;
 *   provider   ibv_poll_cq copies the data into the WQE's buffers, and says
 *              IBV_WC_LOC_LEN_ERR when they do not hold it.
 *
 * Raw CQEs are read through mlx5dv (the way device code sees them); the
 * provider's copy through ibv_poll_cq on other QPs.
 */
#include <infiniband/mlx5dv.h>
#include <stdlib.h>

#include "common.h"
#include "gnic/gnic_mlx5.h"

#define LEN   4096
#define GUARD 0xee

enum make { MAKE_VERBS, MAKE_DV_DEFAULT, MAKE_DV_DISABLE, MAKE_DV_ALLOW };

static struct ibv_context *ctx;

struct fx {
	struct ibv_pd *pd;
	struct ibv_cq *scq[2], *rcq[2];
	struct ibv_qp *qp[2];
	uint8_t *a, *b;
	struct ibv_mr *amr, *bmr;
};

static struct ibv_qp *make_qp(struct fx *f, int i, enum make how, int sq_sig_all)
{
	struct ibv_qp_init_attr_ex ex = {
	    .send_cq = f->scq[i],
	    .recv_cq = f->rcq[i],
	    .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2},
	    .qp_type = IBV_QPT_RC,
	    .sq_sig_all = sq_sig_all,
	    .comp_mask = IBV_QP_INIT_ATTR_PD,
	    .pd = f->pd,
	};
	struct mlx5dv_qp_init_attr dv = {.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS};

	if (how == MAKE_VERBS) {
		struct ibv_qp_init_attr ia = {.send_cq = ex.send_cq,
		                              .recv_cq = ex.recv_cq,
		                              .cap = ex.cap,
		                              .qp_type = IBV_QPT_RC,
		                              .sq_sig_all = sq_sig_all};

		return CHECK_PTR(ibv_create_qp(f->pd, &ia));
	}
	dv.create_flags = how == MAKE_DV_DISABLE ? MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE
	                  : how == MAKE_DV_ALLOW ? MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE
	                                         : 0;
	return CHECK_PTR(mlx5dv_create_qp(ctx, &ex, &dv));
}

static void fx_open(struct fx *f, enum make how, int sq_sig_all)
{
	struct t_conn_opts o;
	struct t_ep ep[2];

	memset(f, 0, sizeof(*f));
	t_conn_opts_default(&o);
	f->pd = CHECK_PTR(ibv_alloc_pd(ctx));
	for (int i = 0; i < 2; i++) {
		f->scq[i] = t_cq(ctx, 64);
		f->rcq[i] = t_cq(ctx, 64);
		f->qp[i] = make_qp(f, i, how, sq_sig_all);
		t_local_ep(f->qp[i], &ep[i]);
	}
	t_connect(f->qp[0], &ep[1], &o);
	t_connect(f->qp[1], &ep[0], &o);
	f->a = t_alloc(LEN, 0);
	f->b = t_alloc(LEN, GUARD);
	for (int i = 0; i < LEN; i++)
		f->a[i] = (uint8_t)(i * 7 + 3);
	f->amr = t_reg(f->pd, f->a, LEN, T_ACCESS_ALL);
	f->bmr = t_reg(f->pd, f->b, LEN, T_ACCESS_ALL);
}

static void fx_close(struct fx *f)
{
	CHECK_OK(ibv_dereg_mr(f->amr));
	CHECK_OK(ibv_dereg_mr(f->bmr));
	for (int i = 0; i < 2; i++) {
		CHECK_OK(ibv_destroy_qp(f->qp[i]));
		CHECK_OK(ibv_destroy_cq(f->scq[i]));
		CHECK_OK(ibv_destroy_cq(f->rcq[i]));
	}
	CHECK_OK(ibv_dealloc_pd(f->pd));
	free(f->a);
	free(f->b);
}

/* The next CQE of cq read raw, as device code reads it; bounded wait. */
static struct gnic_mlx5_cqe64 raw_cqe(struct ibv_cq *cq, uint32_t *ci, const char *what)
{
	struct mlx5dv_cq dcq;
	struct mlx5dv_obj obj = {.cq = {.in = cq, .out = &dcq}};
	struct gnic_mlx5_cqe64 *ring, got;
	uint64_t end = t_now_ms() + T_WAIT_MS;

	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ));
	ring = dcq.buf;
	for (;;) {
		struct gnic_mlx5_cqe64 *c = &ring[*ci & (dcq.cqe_cnt - 1)];
		uint8_t own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);

		if (gnic_mlx5_cqe_sw_owned(own, *ci, dcq.cqe_cnt)) {
			got = *c;
			break;
		}
		if (t_now_ms() > end)
			T_FAIL("no CQE for %s", what);
	}
	++*ci;
	__atomic_store_n(&dcq.dbrec[0], gnic_be32(*ci & 0xffffff), __ATOMIC_RELEASE);
	return got;
}

static void send_to_b(struct fx *f, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)f->a, .length = len, .lkey = f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};

	t_post_send(f->qp[0], &wr);
}

static uint8_t format_of(const struct gnic_mlx5_cqe64 *c)
{
	return c->op_own & GNIC_MLX5_CQE_FORMAT_MASK;
}

/* Raw receive CQE of a len-byte SEND; want_inline: its data is in the CQE. */
static void raw_recv_case(enum make how, uint32_t len, bool want_inline, const char *what)
{
	struct gnic_mlx5_cqe64 c;
	uint32_t ci = 0;
	struct fx f;

	t_case("%s: %u-byte SEND, raw receive CQE", what, len);
	fx_open(&f, how, 0);
	t_post_recv_buf(f.qp[1], 7, f.b, 64, f.bmr->lkey);
	send_to_b(&f, len);
	c = raw_cqe(f.rcq[1], &ci, "the receive");
	CHECK_EQ(gnic_mlx5_cqe_opcode(c.op_own), GNIC_MLX5_CQE_RESP_SEND);
	CHECK_EQ(gnic_be32(c.byte_cnt), len);
	if (want_inline) {
		CHECK_EQ(format_of(&c), GNIC_MLX5_INLINE_SCATTER_32);
		CHECK_MEM((const uint8_t *)&c, f.a, len);
		CHECK_BYTES(f.b, GUARD, LEN); /* the NIC left the buffer alone */
	} else {
		CHECK_EQ(format_of(&c), 0);
		CHECK_MEM(f.b, f.a, len);
		CHECK_BYTES(f.b + len, GUARD, LEN - len);
	}
	CHECK_EQ(t_poll1(f.scq[0], "the SEND").status, IBV_WC_SUCCESS);
	fx_close(&f);
}

/* ibv_poll_cq copies CQE data into a two-SGE receive (10 + 54 bytes). */
static void provider_recv_case(void)
{
	struct ibv_sge sg[2];
	struct ibv_recv_wr rwr = {.wr_id = 9, .sg_list = sg, .num_sge = 2};
	struct ibv_wc wc;
	struct fx f;

	t_case("ibv_poll_cq: the provider copies a 30-byte SEND out of the CQE");
	fx_open(&f, MAKE_VERBS, 0);
	sg[0] = (struct ibv_sge){.addr = (uintptr_t)f.b, .length = 10, .lkey = f.bmr->lkey};
	sg[1] = (struct ibv_sge){.addr = (uintptr_t)f.b + 1000, .length = 54, .lkey = f.bmr->lkey};
	t_post_recv(f.qp[1], &rwr);
	send_to_b(&f, 30);
	wc = t_poll1(f.rcq[1], "the receive");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 9);
	CHECK_EQ(wc.byte_len, 30);
	CHECK_MEM(f.b, f.a, 10);
	CHECK_MEM(f.b + 1000, f.a + 10, 20);
	CHECK_BYTES(f.b + 10, GUARD, 990);
	CHECK_BYTES(f.b + 1020, GUARD, LEN - 1020);

	t_case(
	    "ibv_poll_cq: a 20-byte SEND into an 8-byte receive is LOC_LEN_ERR, by the provider");
	memset(f.b, GUARD, LEN);
	t_post_recv_buf(f.qp[1], 10, f.b, 8, f.bmr->lkey);
	send_to_b(&f, 20);
	wc = t_poll1(f.rcq[1], "the short receive");
	CHECK_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(wc.wr_id, 10);
	CHECK_EQ(t_poll1(f.scq[0], "the SEND").status, IBV_WC_SUCCESS);
	CHECK_EQ(t_poll1(f.scq[0], "the second SEND").status, IBV_WC_SUCCESS);
	fx_close(&f);
}

/* Requester side: a 16-byte READ and a FETCH_ADD by QP 0 (source and
 * counter in a, destinations in b). raw: their send CQEs read through mlx5dv
 * (want_inline: the data is in them and b is untouched); else through
 * ibv_poll_cq, after which the data must be in b either way. */
static void req_case(enum make how, int sq_sig_all, bool want_inline, bool raw, const char *what)
{
	const uint64_t before = 0x1122334455667788ull;
	uint64_t *counter;
	struct ibv_sge rs, as;
	struct gnic_mlx5_cqe64 c;
	struct ibv_wc wc;
	uint32_t ci = 0;
	struct fx f;

	t_case("%s: 16-byte READ and FETCH_ADD, %s", what, raw ? "raw send CQEs" : "ibv_poll_cq");
	fx_open(&f, how, sq_sig_all);
	counter = (uint64_t *)(f.a + 2048);
	*counter = before;
	rs = (struct ibv_sge){.addr = (uintptr_t)f.b, .length = 16, .lkey = f.bmr->lkey};
	as = (struct ibv_sge){.addr = (uintptr_t)f.b + 512, .length = 8, .lkey = f.bmr->lkey};
	struct ibv_send_wr rd = {.wr_id = 1,
	                         .sg_list = &rs,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_READ,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.rdma = {.remote_addr = (uintptr_t)f.a, .rkey = f.amr->rkey}};
	struct ibv_send_wr fa = {.wr_id = 2,
	                         .sg_list = &as,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.atomic = {.remote_addr = (uintptr_t)counter,
	                                       .compare_add = 5,
	                                       .rkey = f.amr->rkey}};

	t_post_send(f.qp[0], &rd);
	if (raw) {
		c = raw_cqe(f.scq[0], &ci, "the READ");
		CHECK_EQ(gnic_mlx5_cqe_opcode(c.op_own), GNIC_MLX5_CQE_REQ);
		CHECK_EQ(format_of(&c), want_inline ? GNIC_MLX5_INLINE_SCATTER_32 : 0);
		if (want_inline) {
			CHECK_MEM((const uint8_t *)&c, f.a, 16);
			CHECK_BYTES(f.b, GUARD, 16);
		} else {
			CHECK_MEM(f.b, f.a, 16);
		}
	} else {
		wc = t_poll1(f.scq[0], "the READ");
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, 16);
		CHECK_MEM(f.b, f.a, 16);
	}
	t_post_send(f.qp[0], &fa);
	if (raw) {
		c = raw_cqe(f.scq[0], &ci, "the FETCH_ADD");
		CHECK_EQ(format_of(&c), want_inline ? GNIC_MLX5_INLINE_SCATTER_32 : 0);
		if (want_inline) {
			CHECK_MEM((const uint8_t *)&c, &before, 8);
			CHECK_BYTES(f.b + 512, GUARD, 8);
		} else {
			CHECK_MEM(f.b + 512, &before, 8);
		}
	} else {
		wc = t_poll1(f.scq[0], "the FETCH_ADD");
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_MEM(f.b + 512, &before, 8);
	}
	CHECK_EQ(*counter, before + 5);
	fx_close(&f);
}

static void bad_flags_case(void)
{
	struct fx f;

	t_case("mlx5dv_create_qp: DISABLE with ALLOW is EINVAL, other create flags EOPNOTSUPP");
	memset(&f, 0, sizeof(f));
	f.pd = CHECK_PTR(ibv_alloc_pd(ctx));
	f.scq[0] = t_cq(ctx, 64);
	f.rcq[0] = t_cq(ctx, 64);
	struct ibv_qp_init_attr_ex ex = {
	    .send_cq = f.scq[0],
	    .recv_cq = f.rcq[0],
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC,
	    .comp_mask = IBV_QP_INIT_ATTR_PD,
	    .pd = f.pd};
	struct mlx5dv_qp_init_attr dv = {.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
	                                 .create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
	                                                 MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE};

	errno = 0;
	CHECK(mlx5dv_create_qp(ctx, &ex, &dv) == NULL);
	CHECK_EQ(errno, EINVAL);
	dv.create_flags = MLX5DV_QP_CREATE_TUNNEL_OFFLOADS;
	errno = 0;
	CHECK(mlx5dv_create_qp(ctx, &ex, &dv) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_OK(ibv_destroy_cq(f.scq[0]));
	CHECK_OK(ibv_destroy_cq(f.rcq[0]));
	CHECK_OK(ibv_dealloc_pd(f.pd));
}

int main(void)
{
	ctx = t_open(T_DEVICE);
	raw_recv_case(MAKE_VERBS, 20, true, "ibv_create_qp");
	raw_recv_case(MAKE_VERBS, 32, true, "ibv_create_qp");
	raw_recv_case(MAKE_VERBS, 33, false, "ibv_create_qp");
	raw_recv_case(MAKE_DV_DEFAULT, 20, true, "mlx5dv_create_qp without flags");
	raw_recv_case(MAKE_DV_DISABLE, 20, false, "mlx5dv_create_qp DISABLE_SCATTER_TO_CQE");
	setenv("MLX5_SCATTER_TO_CQE", "0", 1);
	raw_recv_case(MAKE_VERBS, 20, false, "MLX5_SCATTER_TO_CQE=0");
	raw_recv_case(MAKE_DV_ALLOW, 20, true, "MLX5_SCATTER_TO_CQE=0 but ALLOW_SCATTER_TO_CQE");
	unsetenv("MLX5_SCATTER_TO_CQE");
	provider_recv_case();
	req_case(MAKE_VERBS, 0, false, true, "ibv_create_qp, sq_sig_all 0");
	req_case(MAKE_VERBS, 1, true, true, "ibv_create_qp, sq_sig_all 1");
	req_case(MAKE_DV_ALLOW, 0, true, true, "mlx5dv_create_qp ALLOW_SCATTER_TO_CQE");
	req_case(MAKE_DV_DISABLE, 1, false, true, "mlx5dv_create_qp DISABLE, sq_sig_all 1");
	req_case(MAKE_VERBS, 1, true, false, "ibv_create_qp, sq_sig_all 1");
	bad_flags_case();
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
