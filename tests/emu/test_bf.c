// SPDX-License-Identifier: MIT
/*
 * Doorbell (BlueFlame) registers as rdma-core's mlx5 provider hands them to
 * QPs, and how the NIC takes what is written there:
 *
 *   assign   16 registers per context, 4 dedicated, 2 per UAR page (0x800,
 *            0xa00), 256-byte halves; QPs 5..16 get the 12 shared ones, QP
 *            17 shares QP 5's; a destroyed QP's dedicated one goes to the
 *            next QP;
 *   env      MLX5_TOTAL_UUARS / MLX5_NUM_LOW_LAT_UUARS at ibv_open_device
 *            (and what rdma-core refuses: EINVAL, ENOMEM); MLX5_SHUT_UP_BF:
 *            one register for all, bf.size 0;
 *   shared   two QPs on one register both work, through ibv_post_send and
 *            through doorbells written to the register alone;
 *   copy     ibv_post_send of one WR copies its WQE into the register (what
 *            rdma-core's post_send_db does), of two only 8 bytes;
 *   mismatch a BlueFlame write that is not the WQE in the SQ at its index
 *            executes nothing; the doorbell record still rings the SQ's WQE;
 *            a matching BlueFlame write and an 8-byte doorbell alone do.
 */
#include <infiniband/mlx5dv.h>
#include <stdlib.h>

#include "common.h"
#include "gnic/gnic_mlx5.h"

#define BUF_LEN 8192
#define GUARD   0xee
#define NQP     17

static struct ibv_context *ctx;

/* ---- assign ---------------------------------------------------------------- */

static void test_assign(void)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = t_cq(ctx, 64);
	struct ibv_qp *qp[NQP + 1];
	uintptr_t reg[NQP + 1];

	t_case("assign: %d QPs: 4 dedicated registers, 12 shared, QP 17 shares QP 5's", NQP);
	for (int i = 0; i < NQP; i++) {
		qp[i] = t_small_qp(pd, cq);
		reg[i] = t_bf_reg(qp[i]);
		CHECK_EQ(t_dv_qp(qp[i]).bf.size, GNIC_MLX5_BF_SIZE);
	}
	for (int i = 0; i < NQP; i += 2) { /* two registers per page, made in pairs */
		CHECK_EQ(reg[i] % 4096, 0x800);
		if (i + 1 < NQP - 1)
			CHECK_EQ(reg[i + 1], reg[i] + 0x200);
	}
	for (int i = 0; i < NQP - 1; i++)
		for (int j = i + 1; j < NQP - 1; j++)
			CHECK(reg[i] != reg[j]);
	CHECK_EQ(reg[NQP - 1], reg[4]);

	t_case("assign: a destroyed QP's dedicated register goes to the next QP");
	CHECK_OK(ibv_destroy_qp(qp[1]));
	qp[NQP] = t_small_qp(pd, cq);
	CHECK_EQ(t_bf_reg(qp[NQP]), reg[1]);
	qp[1] = qp[NQP];
	for (int i = 0; i < NQP; i++)
		CHECK_OK(ibv_destroy_qp(qp[i]));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
}

/* ---- env ------------------------------------------------------------------- */

static struct ibv_context *open_with(const char *total, const char *low_lat, const char *shut_up)
{
	struct ibv_context *c;

	if (total)
		setenv("MLX5_TOTAL_UUARS", total, 1);
	if (low_lat)
		setenv("MLX5_NUM_LOW_LAT_UUARS", low_lat, 1);
	if (shut_up)
		setenv("MLX5_SHUT_UP_BF", shut_up, 1);
	errno = 0;
	c = t_open(T_DEVICE);
	unsetenv("MLX5_TOTAL_UUARS");
	unsetenv("MLX5_NUM_LOW_LAT_UUARS");
	unsetenv("MLX5_SHUT_UP_BF");
	return c;
}

static void expect_open_fails(const char *total, const char *low_lat, int want)
{
	struct ibv_device **list = CHECK_PTR(ibv_get_device_list(NULL));

	t_case("env: MLX5_TOTAL_UUARS=%s MLX5_NUM_LOW_LAT_UUARS=%s: ibv_open_device %s", total,
	       low_lat ? low_lat : "(unset)", strerror(want));
	setenv("MLX5_TOTAL_UUARS", total, 1);
	if (low_lat)
		setenv("MLX5_NUM_LOW_LAT_UUARS", low_lat, 1);
	errno = 0;
	CHECK(ibv_open_device(list[0]) == NULL);
	CHECK_EQ(errno, want);
	unsetenv("MLX5_TOTAL_UUARS");
	unsetenv("MLX5_NUM_LOW_LAT_UUARS");
	ibv_free_device_list(list);
}

static void test_env(void)
{
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[5];
	uintptr_t reg[5];

	t_case("env: MLX5_TOTAL_UUARS=4, MLX5_NUM_LOW_LAT_UUARS=2: QP 5 shares QP 3's");
	c = open_with("4", "2", NULL);
	pd = CHECK_PTR(ibv_alloc_pd(c));
	cq = t_cq(c, 16);
	for (int i = 0; i < 5; i++) {
		qp[i] = t_small_qp(pd, cq);
		reg[i] = t_bf_reg(qp[i]);
	}
	CHECK(reg[0] != reg[1] && reg[2] != reg[3] && reg[1] != reg[2] && reg[0] != reg[3]);
	CHECK_EQ(reg[4], reg[2]);
	for (int i = 0; i < 5; i++)
		CHECK_OK(ibv_destroy_qp(qp[i]));

	t_case("env: MLX5_SHUT_UP_BF=1: one register for every QP, bf.size 0");
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(c));
	c = open_with(NULL, NULL, "1");
	pd = CHECK_PTR(ibv_alloc_pd(c));
	cq = t_cq(c, 16);
	for (int i = 0; i < 3; i++) {
		qp[i] = t_small_qp(pd, cq);
		CHECK_EQ(t_dv_qp(qp[i]).bf.size, 0);
		CHECK_EQ(t_bf_reg(qp[i]), t_bf_reg(qp[0]));
	}
	for (int i = 0; i < 3; i++)
		CHECK_OK(ibv_destroy_qp(qp[i]));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(c));

	expect_open_fails("0", NULL, EINVAL);
	expect_open_fails("4", "4", ENOMEM); /* no shared register left */
	expect_open_fails("4", "-1", EINVAL);
	expect_open_fails("2048", NULL, ENOMEM);
}

/* ---- a connected pair with direct access to qp[0]'s SQ ------------------------ */

struct bpair {
	struct t_pair p;
	struct mlx5dv_qp dv;
	uint8_t *a, *b;
	struct ibv_mr *amr, *bmr;
	uint32_t qpn;
	uint32_t bf_off;     /* the half the next direct doorbell goes to */
	struct mlx5dv_cq cq; /* qp[0]'s send CQ, polled directly for direct WQEs */
};

static void bpair_create_on(struct bpair *x, struct ibv_context *c)
{
	struct mlx5dv_obj o = {.cq = {.in = NULL, .out = &x->cq}};

	memset(x, 0, sizeof(*x));
	o.cq.out = &x->cq;
	t_pair_create(&x->p, c, NULL, NULL, 64);
	x->dv = t_dv_qp(x->p.qp[0]);
	x->qpn = x->p.qp[0]->qp_num;
	o.cq.in = x->p.scq[0];
	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ));
	x->a = t_alloc(BUF_LEN, 0);
	x->b = t_alloc(BUF_LEN, GUARD);
	x->amr = t_reg(x->p.pd, x->a, BUF_LEN, T_ACCESS_ALL);
	x->bmr = t_reg(x->p.pd, x->b, BUF_LEN, T_ACCESS_ALL);
}

static void bpair_destroy(struct bpair *x)
{
	CHECK_OK(ibv_dereg_mr(x->amr));
	CHECK_OK(ibv_dereg_mr(x->bmr));
	t_pair_destroy(&x->p);
	free(x->a);
	free(x->b);
}

static uint8_t *sq_bb(struct bpair *x, uint16_t idx)
{
	return (uint8_t *)x->dv.sq.buf + (size_t)(idx & (x->dv.sq.wqe_cnt - 1)) * 64;
}

/* A signaled RDMA WRITE WQE of len bytes from a + off to b + off. */
static void build_write(struct bpair *x, uint8_t *wqe, uint16_t idx, uint32_t off, uint32_t len)
{
	struct mlx5_wqe_ctrl_seg *c = (void *)wqe;
	struct mlx5_wqe_raddr_seg *r = (void *)(wqe + 16);

	memset(wqe, 0, 64);
	c->opmod_idx_opcode = htobe32((uint32_t)idx << 8 | MLX5_OPCODE_RDMA_WRITE);
	c->qpn_ds = htobe32(x->qpn << 8 | 3);
	c->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
	r->raddr = htobe64((uintptr_t)x->b + off);
	r->rkey = htobe32(x->bmr->rkey);
	mlx5dv_set_data_seg((void *)(wqe + 32), len, x->amr->lkey, (uintptr_t)x->a + off);
}

/* A BlueFlame write of one 64-byte WQE: the body, then the 8 bytes of the
 * ctrl that make it a doorbell. */
static void bf_write(struct bpair *x, const uint8_t *wqe, bool whole)
{
	volatile uint64_t *reg = (volatile uint64_t *)((uint8_t *)x->dv.bf.reg + x->bf_off);
	uint64_t w[8];

	memcpy(w, wqe, 64);
	for (int i = 1; whole && i < 8; i++)
		__atomic_store_n(&reg[i], w[i], __ATOMIC_RELAXED);
	__atomic_store_n(&reg[0], w[0], __ATOMIC_RELEASE);
	x->bf_off ^= x->dv.bf.size;
}

static void set_dbrec(struct bpair *x, uint16_t pi)
{
	__atomic_store_n(&x->dv.dbrec[MLX5_SND_DBR], htobe32(pi), __ATOMIC_RELEASE);
}

/* The next send CQE of qp[0] within ms, polled as device code polls (the
 * consumer index from the doorbell record, which ibv_poll_cq keeps too);
 * false if none came. Its WQE's data has landed when it is seen. */
static bool next_cqe(struct bpair *x, unsigned ms, uint16_t *wqe_counter)
{
	uint32_t ci = be32toh(x->cq.dbrec[0]) & 0xffffff;
	struct mlx5_cqe64 *cqe = (void *)((char *)x->cq.buf + 64 * (ci & (x->cq.cqe_cnt - 1)));
	uint64_t end = t_now_ms() + ms;

	for (;;) {
		uint8_t op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);

		if ((op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == !!(ci & x->cq.cqe_cnt)) {
			CHECK_EQ(op_own >> 4, MLX5_CQE_REQ);
			*wqe_counter = be16toh(cqe->wqe_counter);
			__atomic_store_n(&x->cq.dbrec[0], htobe32((ci + 1) & 0xffffff),
			                 __ATOMIC_RELEASE);
			return true;
		}
		if (t_now_ms() > end)
			return false;
		t_sleep_ms(1);
	}
}

static void expect_cqe(struct bpair *x, uint16_t idx)
{
	uint16_t got;

	CHECK(next_cqe(x, T_WAIT_MS, &got));
	CHECK_EQ(got, idx);
}

/* ---- mismatch -------------------------------------------------------------- */

static void test_mismatch(void)
{
	uint8_t x_wqe[64], y_wqe[64];
	struct bpair x;
	uint16_t idx;

	bpair_create_on(&x, ctx);
	t_fill(x.a, BUF_LEN, 3);
	t_case("mismatch: WQE X in the SQ, a BlueFlame write of another WQE Y at its index, "
	       "no doorbell record: nothing executes");
	build_write(&x, x_wqe, 0, 0, 256);
	build_write(&x, y_wqe, 0, 4096, 512);
	memcpy(sq_bb(&x, 0), x_wqe, 64);
	bf_write(&x, y_wqe, true);
	CHECK(!next_cqe(&x, 300, &idx));
	CHECK_BYTES(x.b, GUARD, BUF_LEN);
	t_case("mismatch: the doorbell record still rings: X executes, not Y");
	set_dbrec(&x, 1);
	expect_cqe(&x, 0);
	CHECK_MEM(x.b, x.a, 256);
	CHECK_BYTES(x.b + 256, GUARD, BUF_LEN - 256);

	t_case("mismatch: a BlueFlame write equal to the SQ's WQE, no record: executes");
	build_write(&x, x_wqe, 1, 1024, 128);
	memcpy(sq_bb(&x, 1), x_wqe, 64);
	bf_write(&x, x_wqe, true);
	expect_cqe(&x, 1);
	CHECK_MEM(x.b + 1024, x.a + 1024, 128);
	t_case("mismatch: an 8-byte doorbell (the ctrl's first 8 bytes) alone: executes");
	build_write(&x, x_wqe, 2, 2048, 64);
	memcpy(sq_bb(&x, 2), x_wqe, 64);
	bf_write(&x, x_wqe, false);
	expect_cqe(&x, 2);
	CHECK_MEM(x.b + 2048, x.a + 2048, 64);
	CHECK_BYTES(x.b + 4096, GUARD, BUF_LEN - 4096); /* Y never ran */
	bpair_destroy(&x);
}

/* ---- copy ------------------------------------------------------------------ */

static void test_copy(void)
{
	struct ibv_sge s[2];
	struct ibv_send_wr wr[2];
	struct ibv_wc wc[2];
	struct bpair x;
	uint16_t pi;
	uint8_t *half;

	bpair_create_on(&x, ctx);
	for (int i = 0; i < 2; i++) {
		s[i] = (struct ibv_sge){(uintptr_t)x.a + 64 * i, 64, x.amr->lkey};
		wr[i] = (struct ibv_send_wr){.wr_id = (uint64_t)i,
		                             .sg_list = &s[i],
		                             .num_sge = 1,
		                             .opcode = IBV_WR_RDMA_WRITE,
		                             .send_flags = IBV_SEND_SIGNALED};
		wr[i].wr.rdma.remote_addr = (uintptr_t)x.b + 64 * i;
		wr[i].wr.rdma.rkey = x.bmr->rkey;
	}
	t_case("copy: ibv_post_send of one WR: its whole WQE lands in the register half");
	pi = (uint16_t)be32toh(x.dv.dbrec[MLX5_SND_DBR]);
	memset((uint8_t *)x.dv.bf.reg, 0x5a, 2 * GNIC_MLX5_BF_SIZE); /* what was there */
	t_post_send(x.p.qp[0], &wr[0]);
	/* the half the register's toggle pointed at */
	half = (uint8_t *)x.dv.bf.reg;
	if (half[8] == 0x5a)
		half += GNIC_MLX5_BF_SIZE;
	CHECK_MEM(half, sq_bb(&x, pi), 64);
	t_poll(x.p.scq[0], 1, wc, "the WRITE");
	t_case("copy: of two WRs: the 8 bytes of the last ctrl only, in the other half");
	half = (uint8_t *)x.dv.bf.reg + ((half - (uint8_t *)x.dv.bf.reg) ^ GNIC_MLX5_BF_SIZE);
	wr[0].next = &wr[1];
	pi = (uint16_t)be32toh(x.dv.dbrec[MLX5_SND_DBR]);
	t_post_send(x.p.qp[0], &wr[0]);
	/* two WQEs of one size: the second begins half-way */
	CHECK_MEM(
	    half,
	    sq_bb(&x, (uint16_t)(pi + (uint16_t)(be32toh(x.dv.dbrec[MLX5_SND_DBR]) - pi) / 2)), 8);
	CHECK_BYTES(half + 8, 0x5a, 56);
	t_poll(x.p.scq[0], 2, wc, "the two WRITEs");
	CHECK_WC(&wc[1], 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	bpair_destroy(&x);
}

/* ---- shared ---------------------------------------------------------------- */

static void test_shared(void)
{
	struct ibv_context *c = open_with("4", "2", NULL);
	struct bpair x[3];
	struct ibv_wc wc;

	t_case("shared: pairs 1 and 3 of a 4-register context share a register");
	for (int i = 0; i < 3; i++)
		bpair_create_on(&x[i], c);
	/* each pair makes 2 QPs: qp[0] of pair 0, 1, 2 are the context's QPs 1, 3, 5 */
	CHECK_EQ((uintptr_t)x[2].dv.bf.reg, (uintptr_t)x[1].dv.bf.reg);
	for (int round = 0; round < 20; round++) {
		for (int k = 1; k < 3; k++) {
			uint32_t off = (uint32_t)(round * 128 + k * 64) % BUF_LEN;
			struct ibv_sge s = {(uintptr_t)x[k].a + off, 64, x[k].amr->lkey};
			struct ibv_send_wr wr = {.wr_id = (uint64_t)round,
			                         .sg_list = &s,
			                         .num_sge = 1,
			                         .opcode = IBV_WR_RDMA_WRITE,
			                         .send_flags = IBV_SEND_SIGNALED};

			t_fill(x[k].a + off, 64, (uint32_t)(round * 3 + k));
			wr.wr.rdma.remote_addr = (uintptr_t)x[k].b + off;
			wr.wr.rdma.rkey = x[k].bmr->rkey;
			t_post_send(x[k].p.qp[0], &wr);
		}
		for (int k = 1; k < 3; k++) {
			uint32_t off = (uint32_t)(round * 128 + k * 64) % BUF_LEN;

			wc = t_poll1(x[k].p.scq[0], "a WRITE on the shared register");
			CHECK_WC(&wc, (uint64_t)round, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
			CHECK_MEM(x[k].b + off, x[k].a + off, 64);
		}
	}
	t_case("shared: direct WQEs rung through the shared register alone, in turn");
	for (int k = 1; k < 3; k++) {
		uint8_t wqe[64];
		uint32_t w[2];
		uint64_t v;
		uint16_t pi = (uint16_t)be32toh(x[k].dv.dbrec[MLX5_SND_DBR]);

		t_fill(x[k].a + 6144, 256, 40 + (uint32_t)k);
		build_write(&x[k], wqe, pi, 6144, 256);
		memcpy(sq_bb(&x[k], pi), wqe, 64);
		/* the GPU convention, 8 bytes: the next index and the QPN */
		w[0] = htobe32((uint32_t)(uint16_t)(pi + 1) << 8);
		w[1] = htobe32(x[k].qpn << 8);
		memcpy(&v, w, sizeof(v));
		__atomic_store_n((uint64_t *)((uint8_t *)x[k].dv.bf.reg + GNIC_MLX5_BF_SIZE), v,
		                 __ATOMIC_RELEASE);
		expect_cqe(&x[k], pi);
		CHECK_MEM(x[k].b + 6144, x[k].a + 6144, 256);
	}
	for (int i = 0; i < 3; i++)
		bpair_destroy(&x[i]);
	CHECK_OK(ibv_close_device(c));
}

static const struct t_named_case cases[] = {
    {"assign", test_assign}, {"env", test_env},       {"mismatch", test_mismatch},
    {"copy", test_copy},     {"shared", test_shared},
};

int main(int argc, char **argv)
{
	ctx = t_open(T_DEVICE);
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
