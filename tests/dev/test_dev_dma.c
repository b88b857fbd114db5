// SPDX-License-Identifier: MIT
/*
 * Local DMA (gnic_dma_create + gnic_dev_dma.cuh) from CPU threads on
 * gnic-emu: the NIC copies between registered host buffers of one context.
 *   - single copies of many lengths (0 and around every boundary) at
 *     unaligned source and target offsets: the target holds exactly the
 *     source's bytes, nothing around it changed;
 *   - batches (longer than the SQ, so several chunks and SQ laps), with
 *     zero-length entries; a batch with one length of 2^31 posts nothing;
 *   - many threads copying at once on one shared queue, each its own region;
 *   - errors: a length of 2^31 or more is refused before posting; a source
 *     that is not registered (bad lkey), a target outside its MR and a
 *     target MR without remote write give GNIC_DEV_ERR_CQE, the queue's
 *     error names the syndrome, later copies get GNIC_DEV_ERR_QP, and
 *     gnic_dma_reset() makes the queue work again.
 */
#include <gnic/gnic_dev_dma.cuh>

#include "dev_common.h"

#define BUF     (4u << 20)
#define GUARD   0xee
#define THREADS 8

struct env {
	struct gnic_ctx *ctx;
	struct gnic_dma *dma;
	struct gnic_dev_dma *d;
	uint8_t *src, *dst;
	struct gnic_mr *smr, *dmr;
	uint32_t lkey, rkey;
};

static void env_open(struct env *e, uint32_t sq_depth)
{
	struct gnic_qp_attr qa;

	memset(e, 0, sizeof(*e));
	e->ctx = dev_ctx_open();
	gnic_qp_attr_init(&qa);
	qa.sq_depth = sq_depth;
	qa.timeout_ns = 20ull * 1000 * 1000 * 1000;
	CHECK_GNIC(gnic_dma_create(e->ctx, &qa, &e->dma));
	e->d = gnic_dma_dev(e->dma);
	CHECK(e->d != NULL);
	e->src = t_alloc(BUF, 0);
	e->dst = t_alloc(BUF, GUARD);
	t_fill(e->src, BUF, 7);
	CHECK_GNIC(gnic_mr_reg(e->ctx, e->src, BUF, GNIC_ACCESS_LOCAL, &e->smr));
	CHECK_GNIC(gnic_mr_reg(e->ctx, e->dst, BUF, GNIC_ACCESS_LOCAL | GNIC_ACCESS_REMOTE_WRITE,
	                       &e->dmr));
	e->lkey = gnic_mr_lkey(e->smr);
	e->rkey = gnic_mr_rkey(e->dmr);
}

static void env_close(struct env *e)
{
	gnic_mr_dereg(e->smr);
	gnic_mr_dereg(e->dmr);
	gnic_dma_destroy(e->dma);
	gnic_ctx_destroy(e->ctx);
	free(e->src);
	free(e->dst);
}

/* dst[doff, doff + len) == src[soff, ...) and every other byte is GUARD. */
static void check_copy(const struct env *e, size_t soff, size_t doff, size_t len)
{
	CHECK_BYTES(e->dst, GUARD, doff);
	CHECK_MEM(e->dst + doff, e->src + soff, len);
	CHECK_BYTES(e->dst + doff + len, GUARD, BUF - doff - len);
}

static void case_sizes(void)
{
	static const uint32_t lens[] = {0,
	                                1,
	                                2,
	                                3,
	                                7,
	                                8,
	                                15,
	                                16,
	                                63,
	                                64,
	                                65,
	                                127,
	                                255,
	                                256,
	                                1023,
	                                4095,
	                                4096,
	                                4097,
	                                8191,
	                                65535,
	                                65536,
	                                65537,
	                                1u << 20,
	                                (1u << 20) + 3,
	                                (3u << 20) + 1};
	static const uint32_t offs[][2] = {{0, 0}, {1, 0}, {0, 3}, {5, 9}, {4093, 4095}};
	struct env e;
	uint64_t ticket;

	t_case("single copies: %zu lengths x %zu offset pairs, bytes and guards checked",
	       sizeof(lens) / sizeof(lens[0]), sizeof(offs) / sizeof(offs[0]));
	env_open(&e, 1024);
	for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			size_t so = offs[o][0], dof = offs[o][1];

			memset(e.dst, GUARD, BUF);
			CHECK_DEV(gnic_dev_dma_copy(e.d, e.dst + dof, e.rkey, e.src + so, e.lkey,
			                            lens[i], 0, &ticket));
			CHECK_DEV(gnic_dev_dma_wait(e.d, ticket));
			check_copy(&e, so, dof, lens[i]);
		}
	}
	t_case("unsignaled copies complete at quiet");
	memset(e.dst, GUARD, BUF);
	for (uint32_t i = 0; i < 64; i++)
		CHECK_DEV(gnic_dev_dma_copy(e.d, e.dst + i * 1001, e.rkey, e.src + i * 1001, e.lkey,
		                            1001, 0, NULL));
	CHECK_DEV(gnic_dev_dma_quiet(e.d));
	check_copy(&e, 0, 0, 64 * 1001);
	env_close(&e);
}

static void case_batch(void)
{
	enum { N = 700 };
	static struct gnic_dma_desc d[N];
	struct env e;
	uint64_t ticket, reserved;
	size_t at = 0;

	/* a 64-deep SQ: the batch goes in chunks of half of it and laps the SQ */
	env_open(&e, 64);
	t_case("a batch of %d copies (lengths 0..3000, odd offsets) through a 64-deep SQ", N);
	memset(e.dst, GUARD, BUF);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t len = i % 10 == 0 ? 0 : (i * 2654435761u) % 3001;

		/* copy src[at + 3 ..] to dst[at ..]: contiguous target, shifted source */
		d[i] = (struct gnic_dma_desc){.dst = (uint64_t)(uintptr_t)(e.dst + at),
		                              .src = (uint64_t)(uintptr_t)(e.src + at + 3),
		                              .dst_rkey = e.rkey,
		                              .src_lkey = e.lkey,
		                              .len = len};
		at += len;
	}
	CHECK_DEV(gnic_dev_dma_copy_batch(e.d, d, N, 0, &ticket));
	CHECK_DEV(gnic_dev_dma_wait(e.d, ticket));
	check_copy(&e, 3, 0, at);

	t_case("a batch with one length of 2^31 is refused whole, nothing posted");
	reserved = e.d->qp.sq_reserved;
	d[N / 2].len = 0x80000000u;
	CHECK_EQ(gnic_dev_dma_copy_batch(e.d, d, N, 0, &ticket), GNIC_DEV_ERR_INVAL);
	CHECK_EQ(e.d->qp.sq_reserved, reserved);
	CHECK_EQ(dev_sq_ready(&e.d->qp), dev_sq_done(&e.d->qp));

	t_case("an empty batch posts nothing; bad flags are refused");
	CHECK_DEV(gnic_dev_dma_copy_batch(e.d, d, 0, 0, &ticket));
	CHECK_DEV(gnic_dev_dma_wait(e.d, ticket));
	CHECK_EQ(e.d->qp.sq_reserved, reserved);
	CHECK_EQ(gnic_dev_dma_copy_batch(e.d, d, 1, GNIC_DEV_F_FENCE, NULL), GNIC_DEV_ERR_INVAL);
	CHECK_EQ(gnic_dev_dma_copy(e.d, e.dst, e.rkey, e.src, e.lkey, 8, 1u << 7, NULL),
	         GNIC_DEV_ERR_INVAL);
	CHECK_EQ(e.d->qp.sq_reserved, reserved);

	t_case("batch of one, unsignaled, then quiet");
	memset(e.dst, GUARD, BUF);
	d[0].len = 12345;
	d[0].src = (uint64_t)(uintptr_t)e.src;
	CHECK_DEV(gnic_dev_dma_copy_batch(e.d, d, 1, 0, NULL));
	CHECK_DEV(gnic_dev_dma_quiet(e.d));
	check_copy(&e, 0, 0, 12345);
	env_close(&e);
}

struct worker {
	struct env *e;
	int id;
	int rc;
};

/* Thread id copies 200 pieces of its own 1/THREADS of the buffer, every
 * fourth batched, waiting on every tenth ticket. */
static void *copier(void *arg)
{
	struct worker *w = arg;
	struct env *e = w->e;
	size_t slice = BUF / THREADS, base = slice * (size_t)w->id, piece = slice / 200;
	uint64_t ticket;
	int rc = 0;

	for (uint32_t i = 0; i < 200 && rc == 0; i++) {
		size_t off = base + i * piece;

		if (i % 4 == 3) {
			struct gnic_dma_desc d[2] = {
			    {.dst = (uint64_t)(uintptr_t)(e->dst + off),
			     .src = (uint64_t)(uintptr_t)(e->src + off),
			     .dst_rkey = e->rkey,
			     .src_lkey = e->lkey,
			     .len = (uint32_t)(piece / 2)},
			    {.dst = (uint64_t)(uintptr_t)(e->dst + off + piece / 2),
			     .src = (uint64_t)(uintptr_t)(e->src + off + piece / 2),
			     .dst_rkey = e->rkey,
			     .src_lkey = e->lkey,
			     .len = (uint32_t)(piece - piece / 2)}};

			rc = gnic_dev_dma_copy_batch(e->d, d, 2, 0, &ticket);
		} else {
			rc = gnic_dev_dma_copy(e->d, e->dst + off, e->rkey, e->src + off, e->lkey,
			                       (uint32_t)piece, 0, &ticket);
		}
		if (rc == 0 && i % 10 == 9)
			rc = gnic_dev_dma_wait(e->d, ticket);
	}
	if (rc == 0)
		rc = gnic_dev_dma_quiet(e->d);
	w->rc = rc;
	return NULL;
}

static void case_threads(void)
{
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct env e;
	size_t piece = BUF / THREADS / 200;

	t_case("%d threads copy at once on one shared queue", THREADS);
	env_open(&e, 256);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.e = &e, .id = i};
		CHECK_EQ(pthread_create(&th[i], NULL, copier, &w[i]), 0);
	}
	dev_join_all(th, THREADS, 120);
	for (int i = 0; i < THREADS; i++) {
		size_t base = BUF / THREADS * (size_t)i;

		CHECK_EQ(w[i].rc, GNIC_DEV_OK);
		CHECK_MEM(e.dst + base, e.src + base, 200 * piece);
		CHECK_BYTES(e.dst + base + 200 * piece, GUARD, BUF / THREADS - 200 * piece);
	}
	env_close(&e);
}

/* The copy fails with an error CQE whose syndrome the queue's error names;
 * the queue is then failed; reset brings it back. */
static void expect_cqe_error(struct env *e, int rc, const char *synd)
{
	struct gnic_qp_error err;

	CHECK_EQ(rc, GNIC_DEV_ERR_CQE);
	CHECK_GNIC(gnic_dma_error(e->dma, &err));
	CHECK_EQ(err.dev_status, GNIC_DEV_ERR_CQE);
	CHECK_EQ(err.opcode, GNIC_MLX5_OPCODE_RDMA_WRITE);
	if (!strstr(err.text, synd))
		T_FAIL("error text \"%s\" does not name %s", err.text, synd);
	printf("  queue error: %s\n", err.text);
	CHECK_EQ(gnic_dev_dma_copy(e->d, e->dst, e->rkey, e->src, e->lkey, 8, 0, NULL),
	         GNIC_DEV_ERR_QP);
	CHECK_GNIC(gnic_dma_reset(e->dma));
	memset(e->dst, GUARD, BUF);
	CHECK_DEV(gnic_dev_dma_copy(e->d, e->dst, e->rkey, e->src, e->lkey, 4096, 0, NULL));
	CHECK_DEV(gnic_dev_dma_quiet(e->d));
	check_copy(e, 0, 0, 4096);
}

static void case_errors(void)
{
	const uint32_t lens[] = {0x80000000u, 0x80000001u, 0xffffffffu};
	uint8_t *plain = t_alloc(8192, 0x5a);
	struct gnic_mr *ro;
	struct env e;
	uint64_t ticket, reserved;
	int rc;

	env_open(&e, 256);
	t_case("lengths of 2^31 and more are refused, nothing posted");
	reserved = e.d->qp.sq_reserved;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		CHECK_EQ(gnic_dev_dma_copy(e.d, e.dst, e.rkey, e.src, e.lkey, lens[i], 0, &ticket),
		         GNIC_DEV_ERR_INVAL);
	CHECK_EQ(e.d->qp.sq_reserved, reserved);
	CHECK_EQ(gnic_dev_failed(&e.d->qp), 0);

	t_case("an unregistered source (bad lkey): LOCAL_PROT_ERR, target untouched");
	memset(e.dst, GUARD, BUF);
	CHECK_DEV(gnic_dev_dma_copy(e.d, e.dst, e.rkey, plain, e.lkey + 0x100, 4096, 0, &ticket));
	rc = gnic_dev_dma_wait(e.d, ticket);
	CHECK_BYTES(e.dst, GUARD, BUF);
	expect_cqe_error(&e, rc, "LOCAL_PROT_ERR");

	t_case("a target outside its MR: REMOTE_ACCESS_ERR");
	CHECK_DEV(gnic_dev_dma_copy(e.d, plain, e.rkey, e.src, e.lkey, 4096, 0, &ticket));
	expect_cqe_error(&e, gnic_dev_dma_wait(e.d, ticket), "REMOTE_ACCESS_ERR");
	CHECK_BYTES(plain, 0x5a, 8192);

	t_case("a target MR without remote write: REMOTE_ACCESS_ERR");
	CHECK_GNIC(gnic_mr_reg(e.ctx, plain, 8192, GNIC_ACCESS_LOCAL, &ro));
	CHECK_DEV(gnic_dev_dma_copy(e.d, plain, gnic_mr_rkey(ro), e.src, e.lkey, 64, 0, NULL));
	expect_cqe_error(&e, gnic_dev_dma_quiet(e.d), "REMOTE_ACCESS_ERR");
	CHECK_BYTES(plain, 0x5a, 8192);
	gnic_mr_dereg(ro);

	t_case("a failing copy inside a batch fails the batch's wait");
	{
		struct gnic_dma_desc d[3] = {{(uint64_t)(uintptr_t)e.dst,
		                              (uint64_t)(uintptr_t)e.src, e.rkey, e.lkey, 100, 0},
		                             {(uint64_t)(uintptr_t)(e.dst + 100),
		                              (uint64_t)(uintptr_t)plain, e.rkey, e.lkey + 0x100,
		                              100, 0},
		                             {(uint64_t)(uintptr_t)(e.dst + 200),
		                              (uint64_t)(uintptr_t)e.src, e.rkey, e.lkey, 100, 0}};

		CHECK_DEV(gnic_dev_dma_copy_batch(e.d, d, 3, 0, &ticket));
		expect_cqe_error(&e, gnic_dev_dma_wait(e.d, ticket), "LOCAL_PROT_ERR");
	}
	env_close(&e);
	free(plain);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"sizes", case_sizes},
	    {"batch", case_batch},
	    {"threads", case_threads},
	    {"errors", case_errors},
	};

	T_RUN_CASES(cases, argc, argv);
	return 0;
}
