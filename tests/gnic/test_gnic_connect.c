// SPDX-License-Identifier: MIT
/*
 * Two QPs of one process connected through their blobs; WRITEs posted
 * through the exported structs in both directions; connect twice refused;
 * an error, its record and text; reset (queues emptied, counters zeroed, the
 * same struct pointer) and reconnect; CPU-assisted doorbells through the
 * progress thread, paused and resumed.
 */
#include "gt.h"

#define LEN 4096

struct side {
	struct gnic_qp *qp;
	struct gnic_dev_qp *d;
	uint8_t *buf; /* [0, LEN) source, [LEN, 2 LEN) target */
	struct gnic_mr *mr;
	struct gnic_blob blob;
};

static void side_init(struct side *s, struct gnic_ctx *ctx, enum gnic_db_mode mode)
{
	struct gnic_qp_attr a;

	gnic_qp_attr_init(&a);
	a.sq_depth = 64;
	a.rq_depth = 16;
	a.db_mode = mode;
	CHECK_GNIC(gnic_qp_create(ctx, &a, &s->qp));
	s->d = gnic_qp_dev(s->qp);
	s->buf = t_alloc(2 * LEN, 0);
	CHECK_GNIC(gnic_mr_reg(ctx, s->buf, 2 * LEN, GNIC_ACCESS_ALL, &s->mr));
	CHECK_GNIC(gnic_qp_export(s->qp, &s->blob));
}

static void side_fini(struct side *s)
{
	gnic_qp_destroy(s->qp);
	gnic_mr_dereg(s->mr);
	free(s->buf);
}

static void connect_pair(struct side *a, struct side *b)
{
	CHECK_GNIC(gnic_qp_connect(a->qp, &b->blob));
	CHECK_GNIC(gnic_qp_connect(b->qp, &a->blob));
}

/* from WRITEs len bytes of pattern seed into to's target. */
static void write_check(struct side *from, struct side *to, uint32_t len, uint32_t seed)
{
	t_fill(from->buf, len, seed);
	memset(to->buf + LEN, 0, LEN);
	gt_write(from->d, from->buf, gnic_mr_lkey(from->mr), (uintptr_t)(to->buf + LEN),
	         gnic_mr_rkey(to->mr), len);
	CHECK_MEM(to->buf + LEN, from->buf, len);
}

static void check_error_text(struct gnic_qp *qp, struct gnic_dev_qp *d)
{
	struct gnic_qp_error e;

	t_case("error record and its text");
	CHECK_GNIC(gnic_qp_error(qp, &e));
	CHECK_EQ(e.dev_status, 0);
	CHECK(!strcmp(e.text, "no error"));
	*d->err = (struct gnic_dev_err){.status = (uint32_t)GNIC_DEV_ERR_CQE,
	                                .syndrome = GNIC_MLX5_SYND_REMOTE_ACCESS,
	                                .opcode = GNIC_MLX5_OPCODE_RDMA_WRITE,
	                                .cqe_opcode = GNIC_MLX5_CQE_REQ_ERR,
	                                .wqe_counter = 17,
	                                .qpn = d->qpn};
	CHECK_GNIC(gnic_qp_error(qp, &e));
	printf("  %s\n", e.text);
	CHECK_EQ(e.dev_status, GNIC_DEV_ERR_CQE);
	CHECK_EQ(e.syndrome, GNIC_MLX5_SYND_REMOTE_ACCESS);
	CHECK_EQ(e.opcode, GNIC_MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(e.wqe_counter, 17);
	CHECK(!strcmp(e.text, "RDMA_WRITE at WQE 17: REMOTE_ACCESS_ERR (syndrome 0x13)"));
	d->err->cqe_opcode = GNIC_MLX5_CQE_RESP_ERR;
	d->err->syndrome = GNIC_MLX5_SYND_LOCAL_LENGTH;
	d->err->vendor_syndrome = 0x39;
	CHECK_GNIC(gnic_qp_error(qp, &e));
	printf("  %s\n", e.text);
	CHECK(strstr(e.text, "receive") && strstr(e.text, "LOCAL_LENGTH_ERR") &&
	      strstr(e.text, "vendor syndrome 0x39"));
	d->err->status = (uint32_t)GNIC_DEV_ERR_TIMEOUT;
	CHECK_GNIC(gnic_qp_error(qp, &e));
	printf("  %s\n", e.text);
	CHECK(strstr(e.text, "ran out after 10000000000 ns"));
	d->err->status = (uint32_t)GNIC_DEV_ERR_QP;
	CHECK_GNIC(gnic_qp_error(qp, &e));
	CHECK(strstr(e.text, "failed before"));
	d->err->status = 12345;
	CHECK_GNIC(gnic_qp_error(qp, &e));
	CHECK(strstr(e.text, "unknown device status 12345"));
	CHECK_GNIC_ERR(gnic_qp_error(qp, NULL), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_error(NULL, &e), GNIC_ERR_INVALID);
}

/* Three WRITEs to a bad rkey, left unpolled but the first: an error CQE and
 * flushes wait in the CQ when we reset. */
static void fail_qp(struct side *a, struct side *b)
{
	uint8_t synd = 0;
	int op;

	t_case("WRITE with a bad rkey: error CQE");
	for (int i = 0; i < 3; i++)
		gt_post_write(a->d, a->buf, gnic_mr_lkey(a->mr), (uintptr_t)(b->buf + LEN),
		              gnic_mr_rkey(b->mr) ^ 0x5a5a00, 64);
	op = gt_poll_send(a->d, &synd);
	CHECK_EQ(op, GNIC_MLX5_CQE_REQ_ERR);
	CHECK_EQ(synd, GNIC_MLX5_SYND_REMOTE_ACCESS);
	t_sleep_ms(50); /* let the flush CQEs land */
}

/* base: the send CQ's consumer index before fail_qp. */
static void reset_and_reconnect(struct side *a, struct side *b, uint64_t base)
{
	struct gnic_dev_qp *before = a->d;
	uint64_t ci;

	t_case("reset: same struct, counters zero, CQ drained");
	a->d->res_owned[3] = 1; /* as a kernel that died before reading its result leaves it */
	CHECK_GNIC(gnic_qp_reset(a->qp));
	CHECK_GNIC(gnic_qp_reset(b->qp));
	CHECK(gnic_qp_dev(a->qp) == before);
	CHECK_EQ(a->d->sq_reserved | a->d->sq_ready | a->d->sq_rung | a->d->sq_retired, 0);
	CHECK_EQ(a->d->err->status, 0);
	CHECK_EQ(a->d->dbrec[0] | a->d->dbrec[1], 0);
	ci = a->d->scq_ci;
	printf("  send CQ consumer index after reset: %llu\n", (unsigned long long)ci);
	CHECK_EQ(ci, base + 3); /* the error CQE and two flushes */
	CHECK_EQ(gnic_be32(a->d->scq.dbrec[0]), ci);
	for (uint32_t i = 0; i < a->d->sq_wqe_cnt; i++) {
		CHECK_EQ(a->d->wqe_nbb[i], 0);
		CHECK_EQ(a->d->sq_pub[i], 0);
		CHECK_EQ(a->d->res_owned[i] | a->d->res_owned[i + a->d->sq_wqe_cnt], 0);
	}

	t_case("reconnect with the blobs we had, WRITE again");
	connect_pair(a, b);
	write_check(a, b, 512, 11);
	write_check(b, a, 100, 12);
	CHECK_EQ(a->d->scq_ci, ci + 1);
}

static void cpu_doorbells(struct gnic_ctx *ctx)
{
	struct side a = {0}, b = {0};
	uint8_t synd;

	t_case("CPU-assisted doorbells through the progress thread");
	side_init(&a, ctx, GNIC_DB_CPU);
	side_init(&b, ctx, GNIC_DB_CPU);
	CHECK_EQ(a.d->db_mode, GNIC_DB_CPU);
	connect_pair(&a, &b);
	for (uint32_t i = 0; i < 200; i++)
		write_check(&a, &b, 1 + i * 17, i);
	write_check(&b, &a, LEN, 99);

	t_case("progress stopped: nothing rings; started again: it does");
	gnic_progress_stop(ctx);
	gnic_progress_stop(ctx); /* idempotent */
	t_fill(a.buf, 64, 5);
	gt_post_write(a.d, a.buf, gnic_mr_lkey(a.mr), (uintptr_t)(b.buf + LEN), gnic_mr_rkey(b.mr),
	              64);
	t_sleep_ms(200);
	CHECK(!gnic_mlx5_cqe_sw_owned(a.d->scq.buf[a.d->scq_ci & (a.d->scq.cqe_cnt - 1)].op_own,
	                              (uint32_t)a.d->scq_ci, a.d->scq.cqe_cnt));
	CHECK_GNIC(gnic_progress_start(ctx));
	CHECK_GNIC(gnic_progress_start(ctx)); /* idempotent */
	CHECK_EQ(gt_poll_send(a.d, &synd), GNIC_MLX5_CQE_REQ);
	CHECK_MEM(b.buf + LEN, a.buf, 64);

	t_case("CPU mode survives reset and reconnect");
	CHECK_GNIC(gnic_qp_reset(a.qp));
	CHECK_GNIC(gnic_qp_reset(b.qp));
	CHECK_EQ(*a.d->cpu_db, 0);
	connect_pair(&a, &b);
	write_check(&a, &b, 333, 3);
	CHECK_GNIC_ERR(gnic_progress_start(NULL), GNIC_ERR_INVALID);
	gnic_progress_stop(NULL);
	side_fini(&a);
	side_fini(&b);
}

int main(void)
{
	struct gnic_ctx *ctx = gt_ctx();
	struct side a = {0}, b = {0};
	uint64_t base;

	side_init(&a, ctx, GNIC_DB_AUTO);
	side_init(&b, ctx, GNIC_DB_AUTO);

	t_case("reset and connect of a fresh QP");
	CHECK_GNIC(gnic_qp_reset(a.qp));
	CHECK_GNIC_ERR(gnic_qp_reset(NULL), GNIC_ERR_INVALID);

	t_case("connect, WRITE both ways");
	connect_pair(&a, &b);
	write_check(&a, &b, LEN, 1);
	write_check(&b, &a, 1, 2);
	for (uint32_t i = 0; i < 300; i++) /* wraps the 128-slot SQ twice */
		write_check(&a, &b, 64, 100 + i);

	t_case("connect twice");
	CHECK_GNIC_ERR(gnic_qp_connect(a.qp, &b.blob), GNIC_ERR_STATE);

	check_error_text(a.qp, a.d);
	CHECK_GNIC(gnic_qp_reset(a.qp)); /* clears the record written by hand */
	CHECK_GNIC(gnic_qp_reset(b.qp));
	connect_pair(&a, &b);
	base = a.d->scq_ci; /* a CQ does not restart with its QP */
	CHECK_EQ(base, 301);
	fail_qp(&a, &b);
	reset_and_reconnect(&a, &b, base);

	side_fini(&a);
	side_fini(&b);
	cpu_doorbells(ctx);
	gnic_ctx_destroy(ctx);
	return T_EXIT_PASS;
}
