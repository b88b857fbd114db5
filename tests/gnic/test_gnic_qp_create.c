// SPDX-License-Identifier: MIT
/*
 * QP creation: invalid attributes are refused (and create nothing), the
 * queue limits are those docs/api.md documents (what rdma-core's mlx5
 * provider accepts: the largest sq_depth for a max_inline works, one more is
 * refused up front with the reason), and the
 * exported struct gnic_dev_qp describes the QP: magic, QPN, power-of-two
 * queues, non-NULL buffers, CQs sized to their queues, a resolved doorbell
 * mode, zero counters and error record. A WRITE posted through the struct
 * proves the fields are the QP's own.
 */
#include <endian.h>
#include <stddef.h>

#include "gt.h"

#if __BYTE_ORDER != __LITTLE_ENDIAN
#error "spoil() writes fields as little-endian"
#endif

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Case i spoils one attribute of a; returns what it did, NULL past the end. */
static const char *spoil(int i, struct gnic_qp_attr *a)
{
	static const struct {
		const char *what;
		size_t off, size;
		uint64_t value;
	} cases[] = {
#define SPOIL(field, v)                                                                            \
	{#field " " #v, offsetof(struct gnic_qp_attr, field),                                      \
	 sizeof(((struct gnic_qp_attr *)0)->field), (uint64_t)(v)}
	    SPOIL(sq_depth, 0),      SPOIL(sq_depth, 65536), SPOIL(rq_depth, 65536),
	    SPOIL(max_inline, 4096), SPOIL(db_mode, 9),      SPOIL(share, 7),
	    SPOIL(cqe_every, 0),     SPOIL(cqe_every, 3),    SPOIL(cqe_every, 65536),
	    SPOIL(db_batch, 0),      SPOIL(db_batch, 1025),  SPOIL(timeout_ns, 0),
	    SPOIL(retry_cnt, 8),     SPOIL(rnr_retry, 8),    SPOIL(timeout, 32),
#undef SPOIL
	};

	if (i >= (int)(sizeof(cases) / sizeof(cases[0])))
		return NULL;
	/* little-endian: the low bytes of value are the field's value */
	memcpy((char *)a + cases[i].off, &cases[i].value, cases[i].size);
	return cases[i].what;
}

static void invalid_attrs(struct gnic_ctx *ctx)
{
	struct gnic_qp_attr a;
	struct gnic_qp *qp = NULL;
	const char *what;

	for (int i = 0; gnic_qp_attr_init(&a), (what = spoil(i, &a)); i++) {
		t_case("invalid attribute: %s", what);
		CHECK_GNIC_ERR(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
		CHECK(qp == NULL);
	}
}

static void check_cq(const struct gnic_dev_cq *cq, uint32_t need)
{
	CHECK(cq->buf != NULL);
	CHECK(cq->dbrec != NULL);
	CHECK(is_pow2(cq->cqe_cnt));
	CHECK_GE(cq->cqe_cnt, need);
	CHECK_NE(cq->cqn, 0);
	/* a fresh CQ: every CQE invalid, owned by hardware */
	for (uint32_t i = 0; i < cq->cqe_cnt; i++)
		CHECK_EQ(gnic_mlx5_cqe_opcode(cq->buf[i].op_own), GNIC_MLX5_CQE_INVALID);
}

static void check_counters_zero(const struct gnic_dev_qp *d)
{
	CHECK_EQ(d->sq_reserved, 0);
	CHECK_EQ(d->sq_ready, 0);
	CHECK_EQ(d->sq_rung, 0);
	CHECK_EQ(d->sq_retired, 0);
	CHECK_EQ(d->scq_ci, 0);
	CHECK_EQ(d->rq_posted, 0);
	CHECK_EQ(d->rcq_ci, 0);
	CHECK_EQ(d->failed, 0);
	CHECK_EQ(d->err->status, 0);
	CHECK_EQ(*d->cpu_db, 0);
}

static void check_dev(const struct gnic_dev_qp *d, const struct gnic_qp_attr *a)
{
	CHECK_EQ(d->magic, GNIC_DEV_QP_MAGIC);
	CHECK_NE(d->qpn, 0);
	CHECK(d->sq_buf != NULL);
	CHECK(is_pow2(d->sq_wqe_cnt));
	CHECK_GE(d->sq_wqe_cnt, a->sq_depth);
	CHECK(d->sq_wqe_cnt <= 32768);
	CHECK(d->db_mode != GNIC_DB_AUTO);
	CHECK(d->dbrec != NULL);
	CHECK(d->db_reg != NULL);
	CHECK_EQ(d->share, a->share);
	if (a->rq_depth) {
		CHECK(d->rq_buf != NULL);
		CHECK(is_pow2(d->rq_wqe_cnt));
		CHECK_GE(d->rq_wqe_cnt, a->rq_depth);
		CHECK_GE(d->rq_stride, 16);
	} else {
		CHECK_EQ(d->rq_wqe_cnt, 0);
	}
	check_cq(&d->scq, d->sq_wqe_cnt);
	check_cq(&d->rcq, d->rq_wqe_cnt > 2 ? d->rq_wqe_cnt : 2);
	CHECK_NE(d->scq.cqn, d->rcq.cqn);
	CHECK_EQ(d->cqe_every, a->cqe_every);
	CHECK(d->cqe_every <= d->sq_wqe_cnt / 2);
	CHECK_EQ(d->db_batch, a->db_batch);
	CHECK_EQ(d->max_inline, a->max_inline);
	CHECK_EQ(d->timeout_ns, a->timeout_ns);
	CHECK(d->wqe_nbb != NULL && d->scratch != NULL && d->err != NULL && d->cpu_db != NULL);
	CHECK(d->sq_pub != NULL && d->res_owned != NULL);
	CHECK_NE(d->scratch_lkey, 0);
	for (uint32_t i = 0; i < d->sq_wqe_cnt; i++)
		CHECK_EQ(d->wqe_nbb[i] | d->sq_pub[i], 0);
	/* result slots and their owners, then the discard word */
	for (uint32_t i = 0; i <= 2 * d->sq_wqe_cnt; i++)
		CHECK_EQ(d->scratch[i] | (i < 2 * d->sq_wqe_cnt ? d->res_owned[i] : 0), 0);
	CHECK_EQ(d->dbrec[0] | d->dbrec[1], 0);
	CHECK_EQ((uintptr_t)&d->sq_reserved % 64, 0);
	check_counters_zero(d);
}

static struct gnic_qp *create(struct gnic_ctx *ctx, struct gnic_qp_attr *a)
{
	struct gnic_qp *qp = NULL;
	struct gnic_dev_qp *d;

	CHECK_GNIC(gnic_qp_create(ctx, a, &qp));
	d = gnic_qp_dev(qp);
	CHECK(d != NULL);
	printf("  qpn %#x sq %u rq %u x %u scq %u rcq %u db_mode %u bf %u\n", d->qpn, d->sq_wqe_cnt,
	       d->rq_wqe_cnt, d->rq_stride, d->scq.cqe_cnt, d->rcq.cqe_cnt, d->db_mode, d->bf_size);
	check_dev(d, a);
	return qp;
}

/* Loopback: the QP connected to itself writes within one buffer. */
static void loopback_write(struct gnic_qp *qp, struct gnic_mr *mr, uint8_t *buf)
{
	struct gnic_blob blob;

	CHECK_GNIC(gnic_qp_export(qp, &blob));
	CHECK_GNIC(gnic_qp_connect(qp, &blob));
	t_fill(buf, 256, 7);
	memset(buf + 4096, 0, 256);
	gt_write(gnic_qp_dev(qp), buf, gnic_mr_lkey(mr), (uintptr_t)(buf + 4096), gnic_mr_rkey(mr),
	         256);
	CHECK_MEM(buf + 4096, buf, 256);
}

/* The SQ rdma-core's mlx5 provider makes for libgnic's QP (RC by plain
 * ibv_create_qp, one SGE; providers/mlx5/verbs.c). */
enum {
	SQ_OVERHEAD = 192,      /* sq_overhead(): the MW bind it reserves without send_ops_flags */
	INL_SEG = 4,            /* sizeof(struct mlx5_wqe_inl_data_seg), mlx5_calc_send_wqe() */
	DATA_SEG = 16,          /* sizeof(struct mlx5_wqe_data_seg) */
	MAX_SQ_DESC = 1024,     /* ctx->max_sq_desc_sz: max_wqe_sz_sq of a ConnectX-7 */
	MAX_SEND_WQEBB = 32768, /* ctx->max_send_wqebb = 1 << log_max_qp_sz (15) */
};

/* mlx5_calc_send_wqe() with max_send_sge 1 */
static uint32_t slot_bytes(uint32_t max_inline)
{
	uint32_t size = SQ_OVERHEAD + DATA_SEG;
	uint32_t inl = max_inline ? SQ_OVERHEAD + (INL_SEG + max_inline + 15) / 16 * 16 : 0;

	return ((size > inl ? size : inl) + 63) / 64 * 64;
}

/* mlx5_calc_sq_size(): sq.wqe_cnt (may exceed the limit: 64-bit) */
static uint64_t sq_wqe_cnt(uint32_t depth, uint32_t max_inline)
{
	uint64_t bytes = (uint64_t)depth * slot_bytes(max_inline), p = 1;

	while (p < bytes)
		p <<= 1;
	return p / 64;
}

/* docs/api.md's table: the largest sq_depth at each max_inline. The
 * largest works; one more fails up front, saying why. */
static void depth_limits(struct gnic_ctx *ctx)
{
	static const struct {
		uint32_t max_inline, depth;
	} documented[] = {{0, 8192},   {60, 8192},  {61, 6553},  {64, 6553},  {124, 6553},
	                  {125, 5461}, {220, 4681}, {316, 4096}, {508, 2978}, {828, 2048}};
	struct gnic_qp_attr a;
	struct gnic_qp *qp = NULL;
	char want[256];

	for (size_t i = 0; i < sizeof(documented) / sizeof(documented[0]); i++) {
		uint32_t inl = documented[i].max_inline, depth = documented[i].depth;

		t_case("max_inline %u: sq_depth %u is the largest", inl, depth);
		gnic_qp_attr_init(&a);
		a.max_inline = inl;
		a.sq_depth = depth;
		a.rq_depth = 0;
		CHECK(sq_wqe_cnt(depth, inl) <= MAX_SEND_WQEBB);
		CHECK(sq_wqe_cnt(depth + 1, inl) > MAX_SEND_WQEBB);
		qp = create(ctx, &a);
		CHECK_EQ(gnic_qp_dev(qp)->sq_wqe_cnt, sq_wqe_cnt(depth, inl));
		gnic_qp_destroy(qp);
		qp = NULL;

		t_case("max_inline %u: sq_depth %u is one too many", inl, depth + 1);
		a.sq_depth = depth + 1;
		CHECK_GNIC_ERR(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
		CHECK(qp == NULL);
		snprintf(
		    want, sizeof(want),
		    "qp: sq_depth %u with max_inline %u needs %llu WQE basic blocks; the device "
		    "allows %u (sq_depth <= %u at this max_inline)",
		    depth + 1, inl, (unsigned long long)sq_wqe_cnt(depth + 1, inl), MAX_SEND_WQEBB,
		    depth);
		if (strcmp(gnic_last_error(), want))
			T_FAIL("text \"%s\", expected \"%s\"", gnic_last_error(), want);
	}

	t_case("max_inline: 828 fills a 1 KiB WQE, 829 is refused");
	gnic_qp_attr_init(&a);
	a.max_inline = MAX_SQ_DESC - SQ_OVERHEAD - INL_SEG + 1;
	CHECK_GNIC_ERR(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "max_inline 829 above 828") != NULL);

	t_case("rq_depth: 32768 works, 32769 is refused");
	gnic_qp_attr_init(&a);
	a.sq_depth = 16;
	a.cqe_every = 4;
	a.db_batch = 1;
	a.rq_depth = MAX_SEND_WQEBB;
	qp = create(ctx, &a);
	CHECK_EQ(gnic_qp_dev(qp)->rq_wqe_cnt, MAX_SEND_WQEBB);
	gnic_qp_destroy(qp);
	qp = NULL;
	a.rq_depth = MAX_SEND_WQEBB + 1;
	CHECK_GNIC_ERR(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "rq_depth 32769 above 32768") != NULL);
}

/* docs/api.md's other limits, at the edge: the largest value works, the next
 * is refused with its reason. */
static void edge_limits(struct gnic_ctx *ctx)
{
	struct gnic_qp_attr a;
	struct gnic_qp *qp = NULL;

	t_case("db_batch: sq_depth works, sq_depth + 1 is refused");
	gnic_qp_attr_init(&a);
	a.db_batch = a.sq_depth;
	qp = create(ctx, &a);
	CHECK_EQ(gnic_qp_dev(qp)->db_batch, a.sq_depth);
	gnic_qp_destroy(qp);
	qp = NULL;
	a.db_batch = a.sq_depth + 1;
	CHECK_GNIC_ERR(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "db_batch 1025 not in [1, sq_depth 1024]") != NULL);

	t_case("cqe_every: half the SQ works, the whole SQ is refused");
	gnic_qp_attr_init(&a); /* sq_wqe_cnt 8192 */
	a.cqe_every = (uint32_t)sq_wqe_cnt(a.sq_depth, a.max_inline) / 2;
	qp = create(ctx, &a);
	CHECK_EQ(gnic_qp_dev(qp)->cqe_every, 4096);
	gnic_qp_destroy(qp);
	qp = NULL;
	a.cqe_every *= 2;
	CHECK_GNIC_ERR(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "cqe_every 8192 above half the SQ") != NULL);

	t_case("timeout 31, retry_cnt and rnr_retry 7 work; 32 and 8 are refused");
	gnic_qp_attr_init(&a);
	a.timeout = 31;
	a.retry_cnt = a.rnr_retry = 7;
	gnic_qp_destroy(create(ctx, &a));
	a.timeout = 32;
	CHECK_GNIC_ERR(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "timeout exponent 32 above 31") != NULL);
	a.timeout = 31;
	a.rnr_retry = 8;
	CHECK_GNIC_ERR(gnic_qp_create(ctx, &a, &qp), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "rnr_retry 8 above 7") != NULL);
	CHECK(qp == NULL);
}

static void modes(struct gnic_ctx *ctx, struct gnic_mr *mr, uint8_t *buf)
{
	static const enum gnic_db_mode want[] = {GNIC_DB_AUTO, GNIC_DB_SM, GNIC_DB_BF, GNIC_DB_CPU};
	static const enum gnic_db_mode got[] = {GNIC_DB_SM, GNIC_DB_SM, GNIC_DB_BF, GNIC_DB_CPU};
	struct gnic_qp_attr a;

	for (int i = 0; i < 4; i++) {
		struct gnic_qp *qp;

		t_case("db_mode %d, rq_depth %d, share %d", want[i], i % 2 ? 0 : 16, i % 3);
		gnic_qp_attr_init(&a);
		a.sq_depth = 64 + (uint32_t)i * 40;
		a.rq_depth = i % 2 ? 0 : 16;
		a.db_mode = want[i];
		a.share = (enum gnic_share)(i % 3);
		a.cqe_every = 4;
		a.db_batch = 4;
		a.max_inline = (uint32_t)i * 100;
		qp = create(ctx, &a);
		CHECK_EQ(gnic_qp_dev(qp)->db_mode, got[i]);
		if (got[i] == GNIC_DB_BF)
			CHECK_NE(gnic_qp_dev(qp)->bf_size, 0);
		loopback_write(qp, mr, buf);
		gnic_qp_destroy(qp);
	}
}

int main(void)
{
	struct gnic_ctx *ctx = gt_ctx();
	uint8_t *buf = t_alloc(8192, 0);
	struct gnic_qp_attr a;
	struct gnic_qp *qp = NULL, *qp2;
	struct gnic_mr *mr;

	t_case("defaults");
	memset(&a, 0xff, sizeof(a));
	gnic_qp_attr_init(&a);
	CHECK_EQ(a.sq_depth, 1024);
	CHECK_EQ(a.rq_depth, 256);
	CHECK_EQ(a.max_inline, 64);
	CHECK_EQ(a.db_mode, GNIC_DB_AUTO);
	CHECK_EQ(a.share, GNIC_SHARE_GPU);
	CHECK_EQ(a.cqe_every, 16);
	CHECK_EQ(a.db_batch, 1);
	CHECK_EQ(a.timeout_ns, 10000000000ull);
	CHECK_EQ(a.retry_cnt, 7);
	CHECK_EQ(a.rnr_retry, 7);
	CHECK_EQ(a.timeout, 14);
	CHECK_EQ(a.queue, GNIC_QUEUE_AUTO);

	invalid_attrs(ctx);

	t_case("NULL arguments");
	CHECK_GNIC_ERR(gnic_qp_create(NULL, NULL, &qp), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_create(ctx, NULL, NULL), GNIC_ERR_INVALID);
	CHECK(gnic_qp_dev(NULL) == NULL);
	gnic_qp_destroy(NULL);

	t_case("default attributes (attr NULL)");
	gnic_qp_attr_init(&a);
	CHECK_GNIC(gnic_qp_create(ctx, NULL, &qp));
	check_dev(gnic_qp_dev(qp), &a);
	CHECK_EQ(gnic_qp_dev(qp)->db_mode, GNIC_DB_SM); /* AUTO without a GPU */
	CHECK_EQ(gnic_qp_dev(qp)->sq_wqe_cnt, sq_wqe_cnt(a.sq_depth, a.max_inline)); /* 8192 */

	t_case("two QPs share nothing");
	qp2 = create(ctx, &a);
	CHECK_NE(gnic_qp_dev(qp)->qpn, gnic_qp_dev(qp2)->qpn);
	CHECK(gnic_qp_dev(qp)->sq_buf != gnic_qp_dev(qp2)->sq_buf);
	CHECK(gnic_qp_dev(qp)->err != gnic_qp_dev(qp2)->err);
	gnic_qp_destroy(qp2);
	gnic_qp_destroy(qp);

	t_case("smallest queues (cqe_every 1 needs two slots)");
	gnic_qp_attr_init(&a);
	a.sq_depth = 2;
	a.rq_depth = 1;
	a.cqe_every = 1;
	a.max_inline = 0;
	gnic_qp_destroy(create(ctx, &a));

	depth_limits(ctx);
	edge_limits(ctx);

	CHECK_GNIC(gnic_mr_reg(ctx, buf, 8192, GNIC_ACCESS_ALL, &mr));
	modes(ctx, mr, buf);
	gnic_mr_dereg(mr);
	gnic_ctx_destroy(ctx);
	free(buf);
	return T_EXIT_PASS;
}
