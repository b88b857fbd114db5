// SPDX-License-Identifier: MIT
/*
 * QP groups in one process: bad arguments refused; two groups of 8 connected
 * QP by QP, a WRITE through every pair checked byte for byte; the device
 * array matches the QPs; connecting twice refused; a bad blob in the middle
 * of a connect leaves the whole group in RESET (it connects afterwards);
 * gnic_boot_connect_all on one rank (loopback) and with a group of the wrong
 * size; attributes the device refuses give an error and leave no QP behind.
 */
#include "gt.h"

#define N     8
#define SLOT  1024
#define DEPTH 64

struct grp {
	struct gnic_qp_group *g;
	struct gnic_blob blobs[N];
};

static void grp_make(struct gnic_ctx *ctx, struct grp *s, uint32_t n)
{
	struct gnic_qp_attr a;

	gnic_qp_attr_init(&a);
	a.sq_depth = DEPTH;
	a.rq_depth = 0;
	CHECK_GNIC(gnic_qp_group_create(ctx, &a, n, &s->g));
	CHECK_EQ(gnic_qp_group_size(s->g), n);
	CHECK_GNIC(gnic_qp_group_export(s->g, s->blobs));
}

static void bad_arguments(struct gnic_ctx *ctx)
{
	struct gnic_qp_group *g = NULL;
	struct gnic_blob b[1];

	t_case("bad arguments");
	CHECK_GNIC_ERR(gnic_qp_group_create(NULL, NULL, 1, &g), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_group_create(ctx, NULL, 1, NULL), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_group_create(ctx, NULL, 0, &g), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_group_create(ctx, NULL, GNIC_QP_GROUP_MAX + 1, &g),
	               GNIC_ERR_INVALID);
	CHECK(g == NULL);
	CHECK_GNIC_ERR(gnic_qp_group_export(NULL, b), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_group_connect(NULL, b), GNIC_ERR_INVALID);
	CHECK_EQ(gnic_qp_group_size(NULL), 0u);
	CHECK(gnic_qp_group_qp(NULL, 0) == NULL);
	CHECK(gnic_qp_group_dev(NULL) == NULL);
	gnic_qp_group_destroy(NULL);
}

/* The documented largest group is made (small QPs: the count is the limit). */
static void largest(struct gnic_ctx *ctx)
{
	struct gnic_qp_group *g = NULL;
	struct gnic_qp_attr a;

	t_case("a group of GNIC_QP_GROUP_MAX (%d) QPs", GNIC_QP_GROUP_MAX);
	gnic_qp_attr_init(&a);
	a.sq_depth = 2;
	a.rq_depth = 0;
	a.max_inline = 0;
	a.cqe_every = 1;
	CHECK_GNIC(gnic_qp_group_create(ctx, &a, GNIC_QP_GROUP_MAX, &g));
	CHECK_EQ(gnic_qp_group_size(g), (uint32_t)GNIC_QP_GROUP_MAX);
	CHECK(gnic_qp_group_qp(g, GNIC_QP_GROUP_MAX - 1) != NULL);
	CHECK(gnic_qp_group_qp(g, GNIC_QP_GROUP_MAX) == NULL);
	gnic_qp_group_destroy(g);
}

static void pairs_move_data(struct gnic_ctx *ctx)
{
	uint8_t *src = t_alloc((size_t)N * SLOT, 0), *dst = t_alloc((size_t)N * SLOT, 0);
	struct gnic_dev_qp *const *dqp;
	struct gnic_mr *smr, *dmr;
	struct grp a, b;

	t_case("two groups of %d, connected pairwise; a WRITE through every pair", N);
	grp_make(ctx, &a, N);
	grp_make(ctx, &b, N);
	CHECK_GNIC(gnic_qp_group_connect(a.g, b.blobs));
	CHECK_GNIC(gnic_qp_group_connect(b.g, a.blobs));
	CHECK_GNIC(gnic_mr_reg(ctx, src, (size_t)N * SLOT, GNIC_ACCESS_LOCAL, &smr));
	CHECK_GNIC(gnic_mr_reg(ctx, dst, (size_t)N * SLOT, GNIC_ACCESS_ALL, &dmr));
	dqp = gnic_qp_group_dev(a.g);
	CHECK(gnic_qp_group_qp(a.g, N) == NULL);
	for (uint32_t i = 0; i < N; i++) {
		CHECK(dqp[i] == gnic_qp_dev(gnic_qp_group_qp(a.g, i)));
		t_fill(src + i * SLOT, SLOT, 300 + i);
	}
	for (uint32_t i = 0; i < N; i++)
		gt_write(dqp[i], src + i * SLOT, gnic_mr_lkey(smr), (uintptr_t)(dst + i * SLOT),
		         gnic_mr_rkey(dmr), SLOT);
	CHECK_MEM(dst, src, (size_t)N * SLOT);

	t_case("connecting a connected group is refused");
	CHECK_GNIC_ERR(gnic_qp_group_connect(a.g, b.blobs), GNIC_ERR_STATE);
	gt_write(dqp[3], src, gnic_mr_lkey(smr), (uintptr_t)dst, gnic_mr_rkey(dmr), 64);

	gnic_qp_group_destroy(a.g);
	gnic_qp_group_destroy(b.g);
	gnic_mr_dereg(smr);
	gnic_mr_dereg(dmr);
	free(src);
	free(dst);
}

static void all_or_nothing(struct gnic_ctx *ctx)
{
	struct gnic_blob bad[4];
	struct grp c, d;

	t_case("a bad blob at index 2: the whole group stays in RESET");
	grp_make(ctx, &c, 4);
	grp_make(ctx, &d, 4);
	memcpy(bad, d.blobs, sizeof(bad));
	bad[2].bytes[20] ^= 0x40; /* checksum no longer matches */
	CHECK_GNIC_ERR(gnic_qp_group_connect(c.g, bad), GNIC_ERR_PROTOCOL);
	CHECK(strstr(gnic_last_error(), "QP 2 of 4") != NULL);
	/* would be GNIC_ERR_STATE if QP 0 or 1 had stayed connected */
	CHECK_GNIC(gnic_qp_group_connect(c.g, d.blobs));
	CHECK_GNIC(gnic_qp_group_connect(d.g, c.blobs));
	gnic_qp_group_destroy(c.g);
	gnic_qp_group_destroy(d.g);
}

/* One rank needs no socket: connect_all then loops QP 0 back to itself. */
static void connect_all_one_rank(struct gnic_ctx *ctx)
{
	uint8_t *buf = t_alloc(2 * SLOT, 0);
	struct gnic_qp_group *g, *two;
	struct gnic_boot *boot;
	struct gnic_mr *mr;
	int rank = -5, n = -5;

	t_case("gnic_boot_connect_all with one rank: a group of 2 refused, 1 loops back");
	CHECK_GNIC(gnic_boot_init("127.0.0.1:1", 0, 1, 1000, &boot));
	gnic_boot_info(boot, &rank, &n);
	CHECK_EQ(rank, 0);
	CHECK_EQ(n, 1);
	CHECK_GNIC(gnic_qp_group_create(ctx, NULL, 2, &two));
	CHECK_GNIC_ERR(gnic_boot_connect_all(boot, two), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_boot_connect_all(NULL, two), GNIC_ERR_INVALID);
	gnic_qp_group_destroy(two);
	CHECK_GNIC(gnic_qp_group_create(ctx, NULL, 1, &g));
	CHECK_GNIC(gnic_boot_connect_all(boot, g));
	CHECK_GNIC(gnic_mr_reg(ctx, buf, 2 * SLOT, GNIC_ACCESS_ALL, &mr));
	t_fill(buf, SLOT, 77);
	gt_write(gnic_qp_group_dev(g)[0], buf, gnic_mr_lkey(mr), (uintptr_t)(buf + SLOT),
	         gnic_mr_rkey(mr), SLOT);
	CHECK_MEM(buf + SLOT, buf, SLOT);
	gnic_boot_info(NULL, &rank, &n);
	CHECK_EQ(rank, -1);
	CHECK_EQ(n, 0);
	gnic_qp_group_destroy(g);
	gnic_mr_dereg(mr);
	gnic_boot_fini(boot);
	free(buf);
}

static void create_fails_cleanly(struct gnic_ctx *ctx)
{
	struct gnic_qp_group *g = NULL;
	struct gnic_qp_attr a;

	t_case("attributes the device refuses: an error, no group, no QP left");
	gnic_qp_attr_init(&a);
	a.sq_depth = 1u << 20; /* more than the device takes */
	CHECK(gnic_qp_group_create(ctx, &a, 3, &g) != GNIC_OK);
	printf("  expected: %s\n", gnic_last_error());
	CHECK(g == NULL);
}

int main(void)
{
	struct gnic_ctx *ctx = gt_ctx();

	bad_arguments(ctx);
	largest(ctx);
	pairs_move_data(ctx);
	all_or_nothing(ctx);
	connect_all_one_rank(ctx);
	create_fails_cleanly(ctx);
	/* refused (with a "still exist" text) if a failed create leaked a QP */
	gnic_ctx_destroy(ctx);
	CHECK(strstr(gnic_last_error(), "still exist") == NULL);
	return T_EXIT_PASS;
}
