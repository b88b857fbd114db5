/* SPDX-License-Identifier: MIT */
/*
 * BlueFlame QPs (GNIC_DB_BF) with rdma-core's register sharing: a context
 * hands QPs 4 dedicated registers, then 12 shared ones, and from QP 17 on
 * puts QPs on the shared ones two and more to a register (gnic-emu does as
 * rdma-core does, see docs/emu.md). BlueFlame copies from two QPs to one
 * register without the register's lock interleave and pick the same half,
 * and the NIC drops a copy that is not its QP's WQE. So a BF QP must have a
 * register no other QP writes:
 *
 *   own      NQP BF QPs and NQP SM targets in one context: every BF QP's
 *            register is its own (not another QP's, and not in a page any
 *            other QP's register is in);
 *   traffic  one CPU thread per BF QP posts single-BB puts (each one
 *            BlueFlamed) at the same time: every byte lands, every WQE
 *            completes, the NIC drops no register write, and each QP's last
 *            BlueFlame copy is its last WQE;
 *   nodomain (GNIC_EMU_UAR_PAGES=2) once no thread domain can be had, an
 *            explicit BF QP fails with NOT_SUPPORTED, and nothing is left
 *            behind (the next QPs still get their registers);
 *   envbf    (GNIC_DB_MODE=bf GNIC_EMU_UAR_PAGES=2) AUTO QPs become BF while
 *            thread domains last, then fall back to SM.
 */
#include <pthread.h>
#include <stdlib.h>

#include "dev_common.h"

#define NQP  24
#define OPS  300
#define SLOT 64

uint64_t gemu_engine_bf_dropped(void); /* libgnic_emu */

struct bfset {
	struct gnic_ctx *ctx;
	struct gnic_qp *qa[NQP], *qb[NQP];
	struct gnic_dev_qp *a[NQP], *b[NQP];
	uint8_t *abuf, *bbuf;
	struct gnic_mr *amr, *bmr;
	struct gnic_rmem brm;
};

/* The BF QPs first, as a program making its latency-critical QPs first
 * would: with one register per QP the 17th to 24th share on a plain
 * context. */
static void bfset_open(struct bfset *s)
{
	struct gnic_qp_attr ba, sa;
	size_t len = (size_t)NQP * OPS * SLOT;

	memset(s, 0, sizeof(*s));
	s->ctx = dev_ctx_open();
	gnic_qp_attr_init(&ba);
	ba.db_mode = GNIC_DB_BF;
	ba.share = GNIC_SHARE_EXCLUSIVE;
	ba.sq_depth = 256;
	gnic_qp_attr_init(&sa);
	sa.db_mode = GNIC_DB_SM;
	for (int i = 0; i < NQP; i++)
		CHECK_GNIC(gnic_qp_create(s->ctx, &ba, &s->qa[i]));
	for (int i = 0; i < NQP; i++) {
		CHECK_GNIC(gnic_qp_create(s->ctx, &sa, &s->qb[i]));
		dev_qp_connect(s->qa[i], s->qb[i]);
		s->a[i] = gnic_qp_dev(s->qa[i]);
		s->b[i] = gnic_qp_dev(s->qb[i]);
		CHECK_EQ(s->a[i]->db_mode, GNIC_DB_BF);
		CHECK_EQ(s->a[i]->bf_size, GNIC_MLX5_BF_SIZE);
	}
	s->abuf = dev_buf_new(len);
	s->bbuf = dev_buf_new(len);
	CHECK_GNIC(gnic_mr_reg(s->ctx, s->abuf, len, GNIC_ACCESS_ALL, &s->amr));
	CHECK_GNIC(gnic_mr_reg(s->ctx, s->bbuf, len, GNIC_ACCESS_ALL, &s->bmr));
	gnic_mr_rmem(s->bmr, &s->brm);
}

static void bfset_close(struct bfset *s)
{
	gnic_mr_dereg(s->amr);
	gnic_mr_dereg(s->bmr);
	for (int i = 0; i < NQP; i++) {
		gnic_qp_destroy(s->qa[i]);
		gnic_qp_destroy(s->qb[i]);
	}
	gnic_ctx_destroy(s->ctx);
	free(s->abuf);
	free(s->bbuf);
}

static uintptr_t page_of(const struct gnic_dev_qp *d)
{
	return (uintptr_t)d->db_reg & ~(uintptr_t)4095;
}

/* ---- own -------------------------------------------------------------------- */

static void test_own(void)
{
	struct bfset s;

	bfset_open(&s);
	t_case("own: %d BF QPs and %d SM QPs in one context: every BF QP's register is its own, "
	       "in no page of the SM QPs'",
	       NQP, NQP);
	for (int i = 0; i < NQP; i++)
		for (int j = 0; j < NQP; j++) {
			if (j != i && s.a[j]->db_reg == s.a[i]->db_reg)
				T_FAIL("BF QPs %d and %d (QPN %#x, %#x) share the register at %p",
				       i, j, s.a[i]->qpn, s.a[j]->qpn, (void *)s.a[i]->db_reg);
			if (page_of(s.b[j]) == page_of(s.a[i]))
				T_FAIL(
				    "BF QP %d (QPN %#x) has its register in the page of QP %#x's",
				    i, s.a[i]->qpn, s.b[j]->qpn);
		}
	bfset_close(&s);
}

/* ---- traffic ---------------------------------------------------------------- */

struct worker {
	struct bfset *s;
	int id, rc;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	struct bfset *s = w->s;
	struct gnic_dev_qp *q = s->a[w->id];

	uint64_t ticket = 0;

	for (int i = 0; i < OPS && !w->rc; i++) {
		size_t off = ((size_t)w->id * OPS + i) * SLOT;

		memset(s->abuf + off, (uint8_t)(w->id * 37 + i + 1), SLOT);
		/* the last one signaled: its CQE retires them all, and it is the
		 * last register write (a quiet would add a NOP's 8-byte doorbell) */
		w->rc =
		    gnic_dev_put(q, s->abuf + off, gnic_mr_lkey(s->amr), s->brm.addr + off,
		                 s->brm.rkey, SLOT, i == OPS - 1 ? GNIC_DEV_F_SIGNAL : 0, &ticket);
	}
	if (!w->rc)
		w->rc = gnic_dev_wait(q, ticket);
	return NULL;
}

static void test_traffic(void)
{
	struct worker w[NQP];
	pthread_t th[NQP];
	struct bfset s;
	uint64_t dropped;

	bfset_open(&s);
	dropped = gemu_engine_bf_dropped();
	t_case("traffic: %d threads, one per BF QP, %d BlueFlamed puts each, at once", NQP, OPS);
	for (int i = 0; i < NQP; i++) {
		w[i] = (struct worker){.s = &s, .id = i};
		CHECK_EQ(pthread_create(&th[i], NULL, run, &w[i]), 0);
	}
	dev_join_all(th, NQP, 60);
	for (int i = 0; i < NQP; i++)
		if (w[i].rc)
			T_FAIL("BF QP %d (QPN %#x): status %d", i, s.a[i]->qpn, w[i].rc);
	t_case("traffic: every put landed and completed, no register write was dropped");
	for (int i = 0; i < NQP; i++) {
		for (int k = 0; k < OPS; k++) {
			size_t off = ((size_t)i * OPS + k) * SLOT;

			if (memcmp(s.abuf + off, s.bbuf + off, SLOT))
				T_FAIL("BF QP %d put %d did not land", i, k);
		}
		CHECK_EQ(dev_sq_done(s.a[i]), s.a[i]->sq_reserved);
	}
	CHECK_EQ(gemu_engine_bf_dropped() - dropped, 0);
	t_case("traffic: each QP's last BlueFlame copy (the half before bf_half) is its last WQE");
	for (int i = 0; i < NQP; i++) {
		const struct gnic_dev_qp *q = s.a[i];
		const uint8_t *half =
		    (const uint8_t *)q->db_reg + (q->bf_half ^ 1) * (size_t)q->bf_size;
		const uint8_t *wqe = (const uint8_t *)q->sq_buf +
		                     (size_t)((q->sq_rung - 1) & (q->sq_wqe_cnt - 1)) * 64;

		CHECK_MEM(half, wqe, 64);
	}
	bfset_close(&s);
}

/* ---- nodomain / envbf ---------------------------------------------------------- */

static bool pages_set(void)
{
	const char *p = getenv("GNIC_EMU_UAR_PAGES");

	if (p && !strcmp(p, "2"))
		return true;
	printf("runs with GNIC_EMU_UAR_PAGES=2 only (its own CTest)\n");
	return false;
}

/* With 2 UAR pages: two thread domains share one page; the third cannot be
 * had. */
static void test_nodomain(void)
{
	struct gnic_qp_attr ba, sa;
	struct gnic_qp *bf[3], *sm[2];
	struct gnic_ctx *ctx;

	if (!pages_set())
		return;
	ctx = dev_ctx_open();
	gnic_qp_attr_init(&ba);
	ba.db_mode = GNIC_DB_BF;
	gnic_qp_attr_init(&sa);
	sa.db_mode = GNIC_DB_SM;
	t_case("nodomain: two BF QPs get the two registers of one page");
	CHECK_GNIC(gnic_qp_create(ctx, &ba, &bf[0]));
	CHECK_GNIC(gnic_qp_create(ctx, &ba, &bf[1]));
	CHECK_EQ(page_of(gnic_qp_dev(bf[0])), page_of(gnic_qp_dev(bf[1])));
	t_case("nodomain: an SM QP takes the other page");
	CHECK_GNIC(gnic_qp_create(ctx, &sa, &sm[0]));
	t_case("nodomain: a third BF QP: no thread domain to be had: NOT_SUPPORTED");
	bf[2] = (struct gnic_qp *)1;
	CHECK_EQ(gnic_qp_create(ctx, &ba, &bf[2]), GNIC_ERR_NOT_SUPPORTED);
	CHECK(bf[2] == (struct gnic_qp *)1);
	CHECK(strstr(gnic_last_error(), "thread domain") != NULL);
	printf("  error: %s\n", gnic_last_error());
	t_case("nodomain: it left nothing behind: an SM QP still gets its page's second register");
	CHECK_GNIC(gnic_qp_create(ctx, &sa, &sm[1]));
	CHECK_EQ((uintptr_t)gnic_qp_dev(sm[1])->db_reg,
	         (uintptr_t)gnic_qp_dev(sm[0])->db_reg + 0x200);
	t_case("nodomain: a BF QP destroyed frees its domain's register for the next BF QP");
	gnic_qp_destroy(bf[0]);
	CHECK_GNIC(gnic_qp_create(ctx, &ba, &bf[2]));
	CHECK_EQ(gnic_qp_dev(bf[2])->db_mode, GNIC_DB_BF);
	gnic_qp_destroy(bf[1]);
	gnic_qp_destroy(bf[2]);
	gnic_qp_destroy(sm[0]);
	gnic_qp_destroy(sm[1]);
	gnic_ctx_destroy(ctx);
}

static void test_envbf(void)
{
	struct gnic_qp_attr sa;
	struct gnic_qp *q[3], *sm;
	struct gnic_ctx *ctx;
	const char *m = getenv("GNIC_DB_MODE");

	if (!pages_set())
		return;
	if (!m || strcmp(m, "bf")) {
		printf("envbf: runs with GNIC_DB_MODE=bf only (its own CTest)\n");
		return;
	}
	ctx = dev_ctx_open();
	gnic_qp_attr_init(&sa);
	sa.db_mode = GNIC_DB_SM;
	CHECK_GNIC(gnic_qp_create(ctx, &sa, &sm)); /* takes one of the 2 pages */
	t_case("envbf: GNIC_DB_MODE=bf: two AUTO QPs are BF, on thread domains' registers");
	for (int i = 0; i < 3; i++)
		CHECK_GNIC(gnic_qp_create(ctx, NULL, &q[i]));
	CHECK_EQ(gnic_qp_dev(q[0])->db_mode, GNIC_DB_BF);
	CHECK_EQ(gnic_qp_dev(q[1])->db_mode, GNIC_DB_BF);
	CHECK(page_of(gnic_qp_dev(q[0])) != page_of(gnic_qp_dev(sm)));
	t_case("envbf: then no thread domain can be had: the next AUTO QP is SM, on the "
	       "context's next register");
	CHECK_EQ(gnic_qp_dev(q[2])->db_mode, GNIC_DB_SM);
	CHECK_EQ((uintptr_t)gnic_qp_dev(q[2])->db_reg, (uintptr_t)gnic_qp_dev(sm)->db_reg + 0x200);
	for (int i = 0; i < 3; i++)
		gnic_qp_destroy(q[i]);
	gnic_qp_destroy(sm);
	gnic_ctx_destroy(ctx);
}

static const struct t_named_case cases[] = {
    {"own", test_own},
    {"traffic", test_traffic},
    {"nodomain", test_nodomain},
    {"envbf", test_envbf},
};

int main(int argc, char **argv)
{
	T_RUN_CASES(cases, argc, argv);
	printf("PASS\n");
	return T_EXIT_PASS;
}
