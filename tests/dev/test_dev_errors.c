/* SPDX-License-Identifier: MIT */
/*
 * Device-side errors end in an error code within the bound, never a hang:
 * a bad rkey gives GNIC_DEV_ERR_CQE with the syndrome recorded for the host,
 * later calls fail fast with GNIC_DEV_ERR_QP, target memory stays untouched,
 * and reset + reconnect makes the QP usable again. A peer that never answers
 * ends in TRANSPORT_RETRY_EXC, or in GNIC_DEV_ERR_TIMEOUT when the device
 * bound is the shorter. A reservation the SQ can never hold is refused.
 */
#include "dev_common.h"

static void test_bad_rkey(struct pair *p)
{
	struct gnic_qp_error err;

	t_case("bad rkey");
	memset(p->abuf, 0xab, 256);
	CHECK_DEV(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr,
	                       p->brm.rkey ^ 0x5a5a00, 256, 0, NULL));
	CHECK_EQ(gnic_dev_quiet(p->a), GNIC_DEV_ERR_CQE);
	CHECK_EQ(p->bbuf[0], 0); /* untouched */
	CHECK_GNIC(gnic_qp_error(p->qa, &err));
	CHECK_EQ(err.dev_status, GNIC_DEV_ERR_CQE);
	CHECK_EQ(err.syndrome, GNIC_MLX5_SYND_REMOTE_ACCESS);
	CHECK_EQ(err.opcode, GNIC_MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(err.wqe_counter, 0);
	CHECK(strstr(err.text, "REMOTE_ACCESS") != NULL);
	CHECK_EQ(
	    gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr, p->brm.rkey, 8, 0, NULL),
	    GNIC_DEV_ERR_QP);

	t_case("reset and reconnect after the error");
	CHECK_GNIC(gnic_qp_reset(p->qa));
	CHECK_GNIC(gnic_qp_reset(p->qb)); /* the target QP went to ERR too (IB rule) */
	pair_connect(p);
	CHECK_GNIC(gnic_qp_error(p->qa, &err));
	CHECK_EQ(err.dev_status, GNIC_DEV_OK);
	CHECK_DEV(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr, p->brm.rkey, 256,
	                       0, NULL));
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK(memcmp(p->abuf, p->bbuf, 256) == 0);
}

static void test_bad_lkey(struct pair *p)
{
	struct gnic_qp_error err;

	t_case("bad lkey");
	CHECK_DEV(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr) ^ 0x300, p->brm.addr + 4096,
	                       p->brm.rkey, 64, 0, NULL));
	CHECK_EQ(gnic_dev_quiet(p->a), GNIC_DEV_ERR_CQE);
	CHECK_GNIC(gnic_qp_error(p->qa, &err));
	CHECK_EQ(err.syndrome, GNIC_MLX5_SYND_LOCAL_PROT);
	CHECK_EQ(p->bbuf[4096], 0);
	CHECK_GNIC(gnic_qp_reset(p->qa));
	CHECK_GNIC(gnic_qp_reset(p->qb));
	pair_connect(p);
}

static void test_no_answer(void)
{
	struct gnic_qp_attr attr;
	struct gnic_qp_error err;
	struct pair p;
	uint64_t t0;

	t_case("peer never answers: transport retries run out");
	gnic_qp_attr_init(&attr);
	attr.timeout = 8; /* ~1 ms per try */
	attr.retry_cnt = 2;
	pair_open(&p, &attr, 4096);
	CHECK_GNIC(gnic_qp_reset(p.qb)); /* requests to a QP in RESET are dropped */
	t0 = gnic_now_ns();
	CHECK_DEV(
	    gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr, p.brm.rkey, 8, 0, NULL));
	CHECK_EQ(gnic_dev_quiet(p.a), GNIC_DEV_ERR_CQE);
	CHECK_GNIC(gnic_qp_error(p.qa, &err));
	CHECK_EQ(err.syndrome, GNIC_MLX5_SYND_TRANSPORT_RETRY_EXC);
	CHECK(gnic_now_ns() - t0 < 3000000000ull);
	pair_close(&p);

	t_case("peer never answers: the device bound is shorter");
	gnic_qp_attr_init(&attr);
	attr.timeout = 20; /* 4 s per try */
	attr.timeout_ns = 100000000;
	pair_open(&p, &attr, 4096);
	CHECK_GNIC(gnic_qp_reset(p.qb));
	t0 = gnic_now_ns();
	CHECK_DEV(
	    gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr, p.brm.rkey, 8, 0, NULL));
	CHECK_EQ(gnic_dev_quiet(p.a), GNIC_DEV_ERR_TIMEOUT);
	CHECK(gnic_now_ns() - t0 < 2000000000ull);
	CHECK_GNIC(gnic_qp_error(p.qa, &err));
	CHECK_EQ(err.dev_status, GNIC_DEV_ERR_TIMEOUT);
	CHECK_EQ(gnic_dev_quiet(p.a), GNIC_DEV_ERR_QP);
	pair_close(&p);
}

static void test_recv_full(struct pair *p)
{
	uint32_t n = p->b->rq_wqe_cnt;

	t_case("receive queue full");
	for (uint32_t i = 0; i < n; i++)
		CHECK_DEV(gnic_dev_recv_post(p->b, p->bbuf, gnic_mr_lkey(p->bmr), 16));
	CHECK_EQ(gnic_dev_recv_post(p->b, p->bbuf, gnic_mr_lkey(p->bmr), 16), GNIC_DEV_ERR_INVAL);
}

/* More BBs than the SQ has could never be had: refused at once, nothing
 * taken, the QP still works (it used to wait out timeout_ns and fail). */
static void test_reserve_too_big(struct pair *p)
{
	uint64_t reserved = p->a->sq_reserved, idx = ~0ull, t0 = gnic_now_ns();

	t_case("a reservation larger than the SQ (%u BBs)", p->a->sq_wqe_cnt + 1);
	CHECK_EQ(gnic_dev_sq_reserve(p->a, p->a->sq_wqe_cnt + 1, &idx), GNIC_DEV_ERR_INVAL);
	CHECK(gnic_now_ns() - t0 < 1000000000ull);
	CHECK_EQ(p->a->sq_reserved, reserved);
	CHECK_EQ(idx, ~0ull);
	CHECK_DEV(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr, p->brm.rkey, 64, 0,
	                       NULL));
	CHECK_DEV(gnic_dev_quiet(p->a));
}

int main(void)
{
	struct pair p;

	pair_open(&p, NULL, 1 << 16);
	test_bad_rkey(&p);
	test_bad_lkey(&p);
	test_recv_full(&p);
	test_reserve_too_big(&p);
	pair_close(&p);
	test_no_answer();
	return T_EXIT_PASS;
}
