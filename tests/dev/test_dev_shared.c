/* SPDX-License-Identifier: MIT */
/*
 * Many CPU threads share one QP (GNIC_SHARE_GPU), as GPU threads of a whole
 * grid would: each posts puts to its own slots and signal adds to one
 * counter, then quiets. A third of the threads post in blocks of BLOCK WQEs
 * with one reservation and one commit, as a warp or CTA does on a GPU (more
 * than 31 BBs in one publish mark, among single posts); a third post inline
 * puts of 1 to SLOT bytes (WQEs of 1 and 2 BBs). Block and inline posters
 * now and then sleep between reserving and publishing, as a descheduled
 * thread would, while the others post past them: their WQEs must still all
 * be rung, in SQ order, by whoever published last, with no thread waiting
 * or flushing afterwards. Every byte and the exact counter are
 * checked, for each doorbell mode, batched and unbatched, with and without
 * CQE moderation.
 */
#include <pthread.h>
#include <time.h>

#include "dev_common.h"

#define THREADS 6
#define OPS     1000
#define SLOT    64
#define BLOCK   40 /* divides OPS */
#define ROLES   3  /* single puts and signals, blocks, inline puts */
#define NAP_US  2000

static void nap(void)
{
	struct timespec ts = {0, NAP_US * 1000};

	nanosleep(&ts, NULL);
}

/* The bytes of put i of thread id: inline puts carry 1..SLOT of them. */
static size_t put_len(int id, int i)
{
	return id % ROLES == 2 ? 1 + (size_t)(i * 7 + id) % SLOT : SLOT;
}

struct worker {
	struct pair *p;
	uint64_t sig; /* remote address of the signal counter */
	int id;
	int rc;
};

/* BLOCK puts with one reservation and one commit (gnic_dev_put_cta's steps). */
static int put_block(struct worker *w, int first)
{
	struct pair *p = w->p;
	uint64_t base;
	int rc = gnic_dev_sq_reserve(p->a, BLOCK, &base);

	if (rc)
		return rc;
	for (int k = 0; k < BLOCK; k++) {
		size_t off = ((size_t)w->id * OPS + first + k) * SLOT;

		memset(p->abuf + off, (uint8_t)(w->id * 31 + first + k), SLOT);
		gnic_dev_wqe_rdma(p->a, base + k, GNIC_MLX5_OPCODE_RDMA_WRITE,
		                  (uintptr_t)(p->abuf + off), gnic_mr_lkey(p->amr),
		                  p->brm.addr + off, p->brm.rkey, SLOT, 0, 0, NULL);
	}
	if (first % (5 * BLOCK) == 2 * BLOCK)
		nap(); /* reserved, written, not published: others post past us */
	return gnic_dev_sq_commit(p->a, base, BLOCK, NULL);
}

/* An inline put of put_len() bytes, through its steps, napping now and then
 * between the reservation and the publication. */
static int put_inline(struct worker *w, int i)
{
	struct pair *p = w->p;
	size_t off = ((size_t)w->id * OPS + i) * SLOT, len = put_len(w->id, i);
	uint32_t nbb = gnic_dev_inline_nbb((uint32_t)len);
	uint64_t idx;
	int rc;

	memset(p->abuf + off, (uint8_t)(w->id * 31 + i), len);
	rc = gnic_dev_sq_reserve(p->a, nbb, &idx);
	if (rc)
		return rc;
	gnic_dev_wqe_put_inline(p->a, idx, p->abuf + off, (uint32_t)len, p->brm.addr + off,
	                        p->brm.rkey, 0);
	if (i % 97 == 13)
		nap();
	return gnic_dev_sq_commit(p->a, idx, nbb, NULL);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct pair *p = w->p;
	uint32_t lkey = gnic_mr_lkey(p->amr);

	if (w->id % ROLES == 1) {
		for (int i = 0; i < OPS && !w->rc; i += BLOCK)
			w->rc = put_block(w, i);
		return NULL;
	}
	if (w->id % ROLES == 2) {
		for (int i = 0; i < OPS && !w->rc; i++)
			w->rc = put_inline(w, i);
		return NULL;
	}
	for (int i = 0; i < OPS && !w->rc; i++) {
		size_t off = ((size_t)w->id * OPS + i) * SLOT;

		memset(p->abuf + off, (uint8_t)(w->id * 31 + i), SLOT);
		if (i % 8 == 7)
			w->rc = gnic_dev_put_signal(p->a, p->abuf + off, lkey, p->brm.addr + off,
			                            p->brm.rkey, SLOT, w->sig, p->brm.rkey, 1, 0);
		else
			w->rc = gnic_dev_put(p->a, p->abuf + off, lkey, p->brm.addr + off,
			                     p->brm.rkey, SLOT, 0, NULL);
	}
	return NULL;
}

static void one(enum gnic_share share, enum gnic_db_mode mode, uint32_t batch, uint32_t cqe_every)
{
	struct gnic_qp_attr attr;
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct pair p;
	size_t n = (size_t)THREADS * OPS * SLOT;

	t_case("share %d db_mode %d db_batch %u cqe_every %u", share, mode, batch, cqe_every);
	gnic_qp_attr_init(&attr);
	attr.share = share;
	attr.db_mode = mode;
	attr.db_batch = batch;
	attr.cqe_every = cqe_every;
	attr.sq_depth = 256;
	pair_open(&p, &attr, n + SLOT);
	CHECK_EQ(p.a->db_mode, mode);
	/* slot 0 holds the signal counter: shift the data past it */
	p.abuf += SLOT;
	p.brm.addr += SLOT;
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.p = &p, .sig = p.brm.addr - SLOT, .id = i};
		CHECK_EQ(pthread_create(&th[i], NULL, run, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(w[i].rc, GNIC_DEV_OK);
	}
	/* Nobody has flushed or waited since the last post: whoever published
	 * last must have left every WQE rung. (Batched doorbells may leave up
	 * to a batch of posts for the quiet to ring.) */
	if (batch == 1 && mode != GNIC_DB_PROXY)
		CHECK_EQ(p.a->sq_rung, p.a->sq_reserved);
	CHECK_EQ(gnic_dev_quiet(p.a), GNIC_DEV_OK);
	for (int id = 0; id < THREADS; id++)
		for (int i = 0; i < OPS; i++) {
			size_t off = ((size_t)id * OPS + i) * SLOT, len = put_len(id, i);

			if (memcmp(p.abuf + off, p.bbuf + SLOT + off, len) != 0)
				T_FAIL("thread %d put %d (%zu bytes) did not land", id, i, len);
		}
	CHECK_EQ(*(uint64_t *)p.bbuf, (uint64_t)(THREADS / ROLES) * (OPS / 8));
	CHECK_EQ(dev_sq_done(p.a), p.a->sq_reserved);
	p.abuf -= SLOT;
	pair_close(&p);
}

int main(void)
{
	one(GNIC_SHARE_GPU, GNIC_DB_SM, 1, 16);
	one(GNIC_SHARE_GPU, GNIC_DB_SM, 8, 1);
	one(GNIC_SHARE_GPU, GNIC_DB_BF, 1, 16);
	one(GNIC_SHARE_GPU, GNIC_DB_CPU, 1, 16);
	one(GNIC_SHARE_GPU, GNIC_DB_CPU, 4, 64);
	one(GNIC_SHARE_GPU, GNIC_DB_PROXY, 1, 16);
	one(GNIC_SHARE_GPU, GNIC_DB_PROXY, 8, 64);
	/* the threads of one CTA: the same protocol (CPU threads are one "CTA") */
	one(GNIC_SHARE_CTA, GNIC_DB_SM, 1, 16);
	one(GNIC_SHARE_CTA, GNIC_DB_BF, 4, 16);
	one(GNIC_SHARE_CTA, GNIC_DB_PROXY, 1, 16);
	return T_EXIT_PASS;
}
