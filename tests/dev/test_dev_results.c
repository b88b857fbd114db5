/* SPDX-License-Identifier: MIT */
/*
 * Fetched values on a shared QP. The NIC writes an atomic's old value into a
 * result slot of the QP and the poster reads it after the completion; the
 * slot must stay the poster's until then, however far the other posters get
 * meanwhile. Many CPU threads on one GNIC_SHARE_GPU (and CTA) QP with a tiny
 * SQ, so the SQ laps many times while a poster is between its completion and
 * its read: each thread fetch-adds (or compare-and-swaps) its own remote
 * word, so every returned value is known in advance (0, 1, 2, ...), also
 * while other threads post signals and puts in between. Wrong values are
 * counted over the whole run and reported with the first one seen.
 */
#include "dev_common.h"

#define THREADS 8
#define OPS     4000
#define SLOT    64 /* each thread's remote word on a line of its own */

enum mode { M_FETCH_ADD, M_CAS, M_MIXED };

struct worker {
	struct pair *p;
	pthread_barrier_t *start;
	enum mode mode;
	int id;
	int rc;         /* first failed device call */
	uint32_t wrong; /* returned values that were not the expected one */
	uint32_t first_op;
	uint64_t first_got, first_want;
};

static uint64_t word_addr(const struct worker *w)
{
	return w->p->brm.addr + (uint64_t)w->id * SLOT;
}

static void check_old(struct worker *w, uint32_t op, uint64_t got, uint64_t want)
{
	if (got == want)
		return;
	if (!w->wrong++) {
		w->first_op = op;
		w->first_got = got;
		w->first_want = want;
	}
}

/* 0, 1, 2, ...: each fetch-add of 1 returns how many came before it. */
static void fetch_adds(struct worker *w)
{
	for (uint32_t i = 0; i < OPS && !w->rc; i++) {
		uint64_t old = ~0ull;

		w->rc = gnic_dev_atomic_fetch_add(w->p->a, word_addr(w), w->p->brm.rkey, 1, &old);
		if (!w->rc)
			check_old(w, i, old, i);
	}
}

/* A chain of swaps v -> v + 1; every fourth compares against a wrong value,
 * swaps nothing and still returns v. */
static void cas_chain(struct worker *w)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < OPS && !w->rc; i++) {
		int miss = i % 4 == 3;
		uint64_t old = ~0ull;

		w->rc = gnic_dev_atomic_cas(w->p->a, word_addr(w), w->p->brm.rkey,
		                            miss ? v + 1000 : v, v + 1, &old);
		if (w->rc)
			break;
		check_old(w, i, old, v);
		v += !miss;
	}
}

/* Signals and puts, which want no fetched value, between others' fetches. */
static void signals_puts(struct worker *w)
{
	struct pair *p = w->p;
	uint64_t off = (uint64_t)(THREADS + w->id) * SLOT;

	memset(p->abuf + off, 0x5a, SLOT);
	for (uint32_t i = 0; i < OPS && !w->rc; i++) {
		if (i & 1)
			w->rc = gnic_dev_put(p->a, p->abuf + off, gnic_mr_lkey(p->amr),
			                     p->brm.addr + off, p->brm.rkey, SLOT, 0, NULL);
		else
			w->rc = gnic_dev_signal(p->a, word_addr(w), p->brm.rkey, 1, 0);
	}
	if (!w->rc)
		w->rc = gnic_dev_quiet(p->a);
}

static void *run(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->start);
	if (w->mode == M_CAS)
		cas_chain(w);
	else if (w->mode == M_FETCH_ADD || !(w->id & 1))
		fetch_adds(w);
	else
		signals_puts(w);
	return NULL;
}

/* What thread id's word holds after its operations. */
static uint64_t final_word(enum mode mode, int id)
{
	if (mode == M_CAS)
		return OPS - OPS / 4;
	return mode == M_MIXED && (id & 1) ? OPS / 2 : OPS;
}

static void one(enum mode mode, enum gnic_share share)
{
	static const char *const names[] = {"fetch_add", "cas", "fetch_add among signals/puts"};
	struct gnic_qp_attr attr;
	struct worker w[THREADS];
	pthread_t th[THREADS];
	pthread_barrier_t start;
	uint32_t wrong = 0, fetched = 0;
	int bad = -1;
	struct pair p;

	gnic_qp_attr_init(&attr);
	attr.share = share;
	attr.sq_depth = 8;
	attr.cqe_every = 4;
	attr.timeout_ns = 5000000000ull;
	pair_open(&p, &attr, 2 * THREADS * SLOT);
	t_case("%s, share %d, %d threads x %d, %u-BB SQ", names[mode], share, THREADS, OPS,
	       p.a->sq_wqe_cnt);
	CHECK_EQ(pthread_barrier_init(&start, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.p = &p, .start = &start, .mode = mode, .id = i};
		CHECK_EQ(pthread_create(&th[i], NULL, run, &w[i]), 0);
	}
	dev_join_all(th, THREADS, 60);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < THREADS; i++) {
		CHECK_EQ(w[i].rc, GNIC_DEV_OK);
		if (w[i].wrong && bad < 0)
			bad = i;
		wrong += w[i].wrong;
		fetched += mode == M_MIXED && (i & 1) ? 0 : OPS;
	}
	if (bad >= 0)
		T_FAIL("%u of %u fetched values wrong; first: thread %d op %u got %llu, expected "
		       "%llu (a result slot was reused before its owner read it)",
		       wrong, fetched, bad, w[bad].first_op, (unsigned long long)w[bad].first_got,
		       (unsigned long long)w[bad].first_want);
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(*(uint64_t *)(p.bbuf + (size_t)i * SLOT), final_word(mode, i));
	CHECK_EQ(dev_sq_done(p.a), p.a->sq_reserved);
	pair_close(&p);
}

int main(void)
{
	one(M_FETCH_ADD, GNIC_SHARE_GPU);
	one(M_CAS, GNIC_SHARE_GPU);
	one(M_MIXED, GNIC_SHARE_GPU);
	one(M_FETCH_ADD, GNIC_SHARE_CTA);
	return T_EXIT_PASS;
}
