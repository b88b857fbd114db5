/* SPDX-License-Identifier: MIT */
/*
 * Queue placement without a GPU (gnic-emu):
 *   - HOST_DEVX: QPs made through DEVX with their queues in host memory carry
 *     put, get, atomics, signals and send/recv, byte-checked, and reset and
 *     reconnect after an error; their geometry is a verbs QP's;
 *   - AUTO is HOST; GPU without a GPU context and unknown placements are
 *     refused with nothing made;
 *   - (argument "nodevx", with GNIC_EMU_DEVX=0) HOST_DEVX names why DEVX is
 *     missing, AUTO and HOST still work;
 *   - (argument "env", with GNIC_QUEUE=host_devx) AUTO QPs are DEVX, HOST ones
 *     are not;
 *   - (argument "badenv", with GNIC_QUEUE=bogus) the context is refused.
 */
#include "dev_common.h"

#define TMO 5000000000ull

static struct gnic_ctx *open_ctx(gnic_status_t want)
{
	struct gnic_ctx_attr ca;
	struct gnic_ctx *ctx = NULL;

	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = GNIC_GPU_NONE;
	CHECK_EQ(gnic_ctx_create(&ca, &ctx), want);
	return ctx;
}

static void qp_attr(struct gnic_qp_attr *a, enum gnic_queue q)
{
	gnic_qp_attr_init(a);
	a->queue = (uint8_t)q;
}

static void traffic(struct pair *p)
{
	uint64_t *word = (uint64_t *)(p->bbuf + 64), *sig = (uint64_t *)(p->bbuf + 128), old = 0;
	uint32_t len = 0, imm = 0;

	for (int i = 0; i < 8192; i++)
		p->abuf[i] = (uint8_t)(i * 13 + 5);
	CHECK_DEV(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr + 4096, p->brm.rkey,
	                       8192, 0, NULL));
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK_MEM(p->bbuf + 4096, p->abuf, 8192);
	CHECK_EQ(p->bbuf[4096 + 8192], 0);
	memset(p->abuf + 20000, 0, 3000);
	CHECK_DEV(gnic_dev_get_wait(p->a, p->abuf + 20000, gnic_mr_lkey(p->amr), p->brm.addr + 4096,
	                            p->brm.rkey, 3000));
	CHECK_MEM(p->abuf + 20000, p->bbuf + 4096, 3000);
	*word = 1000;
	CHECK_DEV(gnic_dev_atomic_fetch_add(p->a, p->brm.addr + 64, p->brm.rkey, 5, &old));
	CHECK_EQ(old, 1000);
	CHECK_DEV(gnic_dev_atomic_cas(p->a, p->brm.addr + 64, p->brm.rkey, 1005, 77, &old));
	CHECK_EQ(old, 1005);
	CHECK_EQ(*word, 77);
	*sig = 0;
	CHECK_DEV(gnic_dev_put_signal(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr + 30000,
	                              p->brm.rkey, 100, p->brm.addr + 128, p->brm.rkey, 1, 0));
	CHECK_DEV(gnic_dev_wait_signal(sig, GNIC_CMP_EQ, 1, TMO));
	CHECK_MEM(p->bbuf + 30000, p->abuf, 100);
	memset(p->bbuf + 40000, 0, 512);
	CHECK_DEV(gnic_dev_recv_post(p->b, p->bbuf + 40000, gnic_mr_lkey(p->bmr), 512));
	CHECK_DEV(gnic_dev_send(p->a, p->abuf + 100, gnic_mr_lkey(p->amr), 300, 0));
	CHECK_DEV(gnic_dev_recv_wait(p->b, &len, &imm));
	CHECK_EQ(len, 300);
	CHECK_MEM(p->bbuf + 40000, p->abuf + 100, 300);
	CHECK_DEV(gnic_dev_quiet(p->a));
}

static void test_host_devx(void)
{
	struct gnic_qp_attr a, h;
	struct gnic_qp_error err;
	struct gnic_ctx *ctx;
	struct gnic_qp *vqp;
	struct pair p;

	t_case("HOST_DEVX: DEVX QPs with a verbs QP's geometry");
	qp_attr(&a, GNIC_QUEUE_HOST_DEVX);
	pair_open(&p, &a, 65536);
	CHECK_EQ(gnic_qp_queue(p.qa), GNIC_QUEUE_HOST_DEVX);
	CHECK_EQ(gnic_qp_queue(p.qb), GNIC_QUEUE_HOST_DEVX);
	qp_attr(&h, GNIC_QUEUE_HOST);
	CHECK_GNIC(gnic_qp_create(p.ctx, &h, &vqp));
	CHECK_EQ(gnic_qp_queue(vqp), GNIC_QUEUE_HOST);
	CHECK_EQ(p.a->sq_wqe_cnt, gnic_qp_dev(vqp)->sq_wqe_cnt);
	CHECK_EQ(p.a->scq.cqe_cnt, p.a->sq_wqe_cnt); /* a CQE per slot (qp_attr.c) */
	CHECK_EQ(p.a->rq_wqe_cnt, 256);
	CHECK_EQ(p.a->rcq.cqe_cnt, 256);
	CHECK_EQ(p.a->rq_stride, 16);
	CHECK_NE(p.a->scq.cqn, p.a->rcq.cqn);
	CHECK_NE(p.a->qpn, p.b->qpn);
	gnic_qp_destroy(vqp);

	t_case("HOST_DEVX: put, get, atomics, signal, send/recv");
	traffic(&p);

	t_case("HOST_DEVX: a bad rkey, reset, reconnect, everything again");
	CHECK_DEV(gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr, p.brm.rkey ^ 0x100, 8,
	                       0, NULL));
	CHECK_EQ(gnic_dev_quiet(p.a), GNIC_DEV_ERR_CQE);
	CHECK_GNIC(gnic_qp_error(p.qa, &err));
	CHECK_EQ(err.syndrome, GNIC_MLX5_SYND_REMOTE_ACCESS);
	CHECK_GNIC(gnic_qp_reset(p.qa));
	CHECK_GNIC(gnic_qp_reset(p.qb));
	pair_connect(&p);
	traffic(&p);
	pair_close(&p);

	t_case("HOST_DEVX with a DEVX peer and a verbs peer: a DEVX QP talks to a verbs QP");
	ctx = open_ctx(GNIC_OK);
	{
		struct gnic_blob bd, bv;
		struct gnic_qp *dqp;

		CHECK_GNIC(gnic_qp_create(ctx, &a, &dqp));
		CHECK_GNIC(gnic_qp_create(ctx, &h, &vqp));
		CHECK_GNIC(gnic_qp_export(dqp, &bd));
		CHECK_GNIC(gnic_qp_export(vqp, &bv));
		CHECK_GNIC(gnic_qp_connect(dqp, &bv));
		CHECK_GNIC(gnic_qp_connect(vqp, &bd));
		{
			struct pair q = p;
			uint8_t *ab = t_alloc(65536, 0), *bb = t_alloc(65536, 0);

			q.ctx = ctx;
			q.qa = dqp;
			q.qb = vqp;
			q.a = gnic_qp_dev(dqp);
			q.b = gnic_qp_dev(vqp);
			q.abuf = ab;
			q.bbuf = bb;
			CHECK_GNIC(gnic_mr_reg(ctx, ab, 65536, GNIC_ACCESS_ALL, &q.amr));
			CHECK_GNIC(gnic_mr_reg(ctx, bb, 65536, GNIC_ACCESS_ALL, &q.bmr));
			gnic_mr_rmem(q.bmr, &q.brm);
			gnic_mr_rmem(q.amr, &q.arm);
			traffic(&q);
			gnic_mr_dereg(q.amr);
			gnic_mr_dereg(q.bmr);
			free(ab);
			free(bb);
		}
		gnic_qp_destroy(dqp);
		gnic_qp_destroy(vqp);
	}
	gnic_ctx_destroy(ctx);
}

static void test_refused(void)
{
	struct gnic_ctx *ctx = open_ctx(GNIC_OK);
	struct gnic_qp_attr a;
	struct gnic_qp *qp = NULL;

	t_case("AUTO without a GPU: HOST");
	qp_attr(&a, GNIC_QUEUE_AUTO);
	CHECK_GNIC(gnic_qp_create(ctx, &a, &qp));
	CHECK_EQ(gnic_qp_queue(qp), GNIC_QUEUE_HOST);
	gnic_qp_destroy(qp);
	CHECK_EQ(gnic_qp_queue(NULL), -1);

	t_case("GPU without a GPU context: NOT_SUPPORTED; placement 4: INVALID; nothing made");
	qp = NULL;
	qp_attr(&a, GNIC_QUEUE_GPU);
	CHECK_EQ(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_NOT_SUPPORTED);
	CHECK(strstr(gnic_last_error(), "GPU context") != NULL);
	a.queue = 4;
	CHECK_EQ(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "placement 4") != NULL);
	CHECK(qp == NULL);
	gnic_ctx_destroy(ctx); /* refuses while a QP exists: none does */
	ctx = open_ctx(GNIC_OK);
	gnic_ctx_destroy(ctx);
}

static void test_nodevx(void)
{
	struct gnic_ctx *ctx = open_ctx(GNIC_OK);
	struct gnic_qp_attr a;
	struct gnic_qp *qp = NULL;

	t_case("a device without DEVX: HOST_DEVX NOT_SUPPORTED with the reason; HOST works");
	qp_attr(&a, GNIC_QUEUE_HOST_DEVX);
	CHECK_EQ(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_NOT_SUPPORTED);
	printf("refused: %s\n", gnic_last_error());
	CHECK(strstr(gnic_last_error(), "needs DEVX") != NULL);
	CHECK(strstr(gnic_last_error(), "mlx5dv_open_device") != NULL);
	CHECK(strstr(gnic_last_error(), "not supported") != NULL);
	qp_attr(&a, GNIC_QUEUE_AUTO);
	CHECK_GNIC(gnic_qp_create(ctx, &a, &qp));
	CHECK_EQ(gnic_qp_queue(qp), GNIC_QUEUE_HOST);
	gnic_qp_destroy(qp);
	gnic_ctx_destroy(ctx);
	{
		struct pair p;

		t_case("a device without DEVX: HOST QPs carry everything");
		pair_open(&p, NULL, 65536);
		CHECK_EQ(gnic_qp_queue(p.qa), GNIC_QUEUE_HOST);
		traffic(&p);
		pair_close(&p);
	}
}

static void test_env(void)
{
	struct gnic_qp_attr a;
	struct gnic_qp *qp;
	struct pair p;

	t_case("GNIC_QUEUE=host_devx: AUTO QPs are DEVX and carry everything");
	pair_open(&p, NULL, 65536);
	CHECK_EQ(gnic_qp_queue(p.qa), GNIC_QUEUE_HOST_DEVX);
	traffic(&p);
	t_case("GNIC_QUEUE=host_devx: a QP asking HOST is a verbs QP");
	qp_attr(&a, GNIC_QUEUE_HOST);
	CHECK_GNIC(gnic_qp_create(p.ctx, &a, &qp));
	CHECK_EQ(gnic_qp_queue(qp), GNIC_QUEUE_HOST);
	gnic_qp_destroy(qp);
	pair_close(&p);
}

static void test_badenv(void)
{
	t_case("GNIC_QUEUE=bogus: the context is refused, naming the knob");
	open_ctx(GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "GNIC_QUEUE") != NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "nodevx"))
		test_nodevx();
	else if (argc > 1 && !strcmp(argv[1], "env"))
		test_env();
	else if (argc > 1 && !strcmp(argv[1], "badenv"))
		test_badenv();
	else {
		test_host_devx();
		test_refused();
	}
	return T_EXIT_PASS;
}
