// SPDX-License-Identifier: MIT
/*
 * The hand-off ring (gnic_ring_*, gnic_dev_ring_push) between CPU threads:
 *
 *   wrap      one producer, 8 entries, 20 000 descriptors: all arrive in
 *             order with their contents (the ring laps 2 500 times)
 *   producers 4 producer threads on 16 entries: every descriptor arrives
 *             once, each producer's in its order
 *   payload   4 producer threads each write a payload, then push its
 *             address: the consumer, on another thread, finds every payload
 *             whole when its entry is ready (the ready mark comes after
 *             the producer's writes, and the consumer reads after it)
 *   full      a full ring: the next push waits its bound (at most 1 s
 *             more) and fails with GNIC_DEV_ERR_TIMEOUT, taking nothing
 *             and leaving every unconsumed entry as it was; a consumer
 *             freeing an entry lets a waiting push through
 *   timeout   an empty ring: consume waits its bound (0: not at all; at
 *             most 1 s more) and fails with GNIC_ERR_TIMEOUT; bad arguments
 */
#include <string.h>

#include "dev_common.h"

/* How late a bounded wait may return on a loaded 2-CPU machine. */
#define SLACK_NS 1000000000ull

struct producer {
	struct gnic_dev_ring *ring;
	uint32_t id;
	uint64_t n;
	int rc;
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	for (uint64_t k = 0; k < p->n && !p->rc; k++)
		p->rc = gnic_dev_ring_push(p->ring, k * 3 + 1, (uint32_t)(k & 0xffff), p->id,
		                           ((uint64_t)p->id << 32) | k);
	return NULL;
}

/* Consume total entries from np producers (bounded), checking order per
 * producer and contents. */
static void consume_all(struct gnic_ring *r, uint32_t np, uint64_t total)
{
	struct gnic_ring_entry e[7]; /* not a divisor of the ring: batches cross the end */
	uint64_t next[8] = {0}, got = 0, end = gnic_now_ns() + 60000000000ull;

	while (got < total) {
		uint32_t n = 0;

		CHECK_GNIC(gnic_ring_consume(r, e, 7, 5000000000ull, &n));
		CHECK(n >= 1 && n <= 7);
		for (uint32_t i = 0; i < n; i++, got++) {
			uint32_t id = e[i].tag;
			uint64_t k;

			CHECK(id < np);
			k = next[id]++;
			CHECK_EQ(e[i].user, ((uint64_t)id << 32) | k);
			CHECK_EQ(e[i].addr, k * 3 + 1);
			CHECK_EQ(e[i].len, (uint32_t)(k & 0xffff));
			CHECK_EQ(e[i].seq, got + 1);
		}
		if (gnic_now_ns() > end)
			T_FAIL("%llu of %llu entries in 60 s", (unsigned long long)got,
			       (unsigned long long)total);
	}
	CHECK_EQ(gnic_ring_consumed(r), total);
}

static void run_producers(uint32_t entries, uint32_t np, uint64_t per)
{
	struct gnic_ctx *ctx = dev_ctx_open();
	struct gnic_ring *r;
	struct producer p[8];
	pthread_t th[8];

	CHECK_GNIC(gnic_ring_create(ctx, entries, 0, &r));
	CHECK_EQ(gnic_ring_dev(r)->magic, GNIC_DEV_RING_MAGIC);
	CHECK_EQ(gnic_ring_dev(r)->cnt, entries);
	for (uint32_t i = 0; i < np; i++) {
		p[i] = (struct producer){gnic_ring_dev(r), i, per, 0};
		CHECK_EQ(pthread_create(&th[i], NULL, produce, &p[i]), 0);
	}
	consume_all(r, np, np * per);
	dev_join_all(th, (int)np, 30);
	for (uint32_t i = 0; i < np; i++)
		CHECK_EQ(p[i].rc, GNIC_DEV_OK);
	/* nothing more came */
	{
		struct gnic_ring_entry e;
		uint32_t n = 5;

		CHECK_RET(gnic_ring_consume(r, &e, 1, 0, &n), GNIC_ERR_TIMEOUT);
		CHECK_EQ(n, 0u);
	}
	gnic_ring_destroy(r);
	gnic_ctx_destroy(ctx);
}

static void case_wrap(void)
{
	run_producers(8, 1, 20000);
}

static void case_producers(void)
{
	run_producers(16, 4, 5000);
}

#define PAY_WORDS 16 /* a 128-byte payload */

struct payload_producer {
	struct gnic_dev_ring *ring;
	uint64_t (*pay)[PAY_WORDS]; /* this producer's payloads, one per push */
	uint32_t id, n;
	int rc;
};

static uint64_t pay_word(uint32_t id, uint32_t k, uint32_t w)
{
	return ((uint64_t)id << 48) ^ ((uint64_t)k << 16) ^ (w * 0x9e3779b97f4a7c15ull);
}

static void *produce_payloads(void *arg)
{
	struct payload_producer *p = arg;

	for (uint32_t k = 0; k < p->n && !p->rc; k++) {
		/* plain stores, as device code writes a payload; the push orders them */
		for (uint32_t w = 0; w < PAY_WORDS; w++)
			p->pay[k][w] = pay_word(p->id, k, w);
		p->rc = gnic_dev_ring_push(p->ring, (uint64_t)(uintptr_t)p->pay[k], PAY_WORDS * 8,
		                           p->id, k);
	}
	return NULL;
}

static void case_payload(void)
{
	enum { NP = 4, PER = 20000 };
	struct gnic_ctx *ctx = dev_ctx_open();
	struct payload_producer p[NP];
	pthread_t th[NP];
	struct gnic_ring *r;
	struct gnic_ring_entry e[16];
	uint32_t next[NP] = {0};
	uint64_t got = 0;

	CHECK_GNIC(gnic_ring_create(ctx, 32, 0, &r));
	for (uint32_t i = 0; i < NP; i++) {
		p[i] = (struct payload_producer){gnic_ring_dev(r), NULL, i, PER, 0};
		p[i].pay = calloc(PER, sizeof(*p[i].pay));
		CHECK(p[i].pay != NULL);
		CHECK_EQ(pthread_create(&th[i], NULL, produce_payloads, &p[i]), 0);
	}
	while (got < (uint64_t)NP * PER) {
		uint32_t n = 0;

		CHECK_GNIC(gnic_ring_consume(r, e, 16, 5000000000ull, &n));
		for (uint32_t i = 0; i < n; i++, got++) {
			const uint64_t *pay = (const uint64_t *)(uintptr_t)e[i].addr;
			uint32_t id = e[i].tag, k = (uint32_t)e[i].user;

			CHECK(id < NP);
			CHECK_EQ(k, next[id]);
			next[id]++;
			CHECK_EQ(e[i].len, PAY_WORDS * 8u);
			CHECK(pay == p[id].pay[k]);
			for (uint32_t w = 0; w < PAY_WORDS; w++)
				if (pay[w] != pay_word(id, k, w))
					T_FAIL(
					    "producer %u entry %u: payload word %u not yet written "
					    "when its entry was ready",
					    id, k, w);
		}
	}
	dev_join_all(th, NP, 30);
	for (uint32_t i = 0; i < NP; i++) {
		CHECK_EQ(p[i].rc, GNIC_DEV_OK);
		CHECK_EQ(next[i], (uint32_t)PER);
		free(p[i].pay);
	}
	gnic_ring_destroy(r);
	gnic_ctx_destroy(ctx);
}

static void *push_one(void *arg)
{
	struct producer *p = arg;

	p->rc = gnic_dev_ring_push(p->ring, 99, 1, 0, 99);
	return NULL;
}

static void case_full(void)
{
	struct gnic_ctx *ctx = dev_ctx_open();
	struct gnic_ring *r;
	struct gnic_dev_ring *d;
	struct gnic_ring_entry e[8];
	struct producer p;
	pthread_t th;
	uint64_t t0, waited;
	uint32_t n = 0;

	CHECK_GNIC(gnic_ring_create(ctx, 4, 50000000ull, &r)); /* producers wait 50 ms */
	d = gnic_ring_dev(r);
	for (uint64_t k = 0; k < 4; k++)
		CHECK_DEV(gnic_dev_ring_push(d, k, 0, 0, k));
	t0 = gnic_now_ns();
	CHECK_EQ(gnic_dev_ring_push(d, 4, 0, 0, 4), GNIC_DEV_ERR_TIMEOUT);
	waited = gnic_now_ns() - t0;
	CHECK(waited >= 50000000ull && waited < 50000000ull + SLACK_NS); /* within its bound */
	CHECK_EQ(d->head, 4u);                                           /* nothing taken */
	for (uint32_t i = 0; i < 4; i++) { /* and nothing overwritten */
		CHECK_EQ(d->ent[i].addr, (uint64_t)i);
		CHECK_EQ(d->ent[i].user, (uint64_t)i);
		CHECK_EQ(d->ent[i].seq, (uint64_t)i + 1);
	}
	CHECK_GNIC(gnic_ring_consume(r, e, 8, 0, &n));
	CHECK_EQ(n, 4u);
	for (uint32_t i = 0; i < 4; i++)
		CHECK_EQ(e[i].user, (uint64_t)i);

	/* full again; a push waiting (5 s bound) goes through once one is freed */
	for (uint64_t k = 0; k < 4; k++)
		CHECK_DEV(gnic_dev_ring_push(d, k, 0, 0, 10 + k));
	d->timeout_ns = 5000000000ull;
	p = (struct producer){d, 0, 1, -100};
	CHECK_EQ(pthread_create(&th, NULL, push_one, &p), 0);
	t_sleep_ms(50);
	CHECK_EQ(__atomic_load_n(&d->head, __ATOMIC_ACQUIRE), 8u); /* still waiting */
	CHECK_GNIC(gnic_ring_consume(r, e, 1, 0, &n));
	CHECK_EQ(n, 1u);
	CHECK_EQ(e[0].user, 10u);
	dev_join_all(&th, 1, 10);
	CHECK_EQ(p.rc, GNIC_DEV_OK);
	CHECK_GNIC(gnic_ring_consume(r, e, 8, 0, &n));
	CHECK_EQ(n, 4u);
	CHECK_EQ(e[0].user, 11u);
	CHECK_EQ(e[3].user, 99u);
	gnic_ring_destroy(r);
	gnic_ctx_destroy(ctx);
}

static void case_timeout(void)
{
	struct gnic_ctx *ctx = dev_ctx_open();
	struct gnic_ring *r = (struct gnic_ring *)0x1, *keep = r;
	struct gnic_ring_entry e;
	uint64_t t0, waited;
	uint32_t n = 7;

	CHECK_RET(gnic_ring_create(ctx, 3, 0, &r), GNIC_ERR_INVALID);
	CHECK_RET(gnic_ring_create(ctx, 1, 0, &r), GNIC_ERR_INVALID);
	CHECK_RET(gnic_ring_create(ctx, 1u << 21, 0, &r), GNIC_ERR_INVALID);
	CHECK_RET(gnic_ring_create(NULL, 8, 0, &r), GNIC_ERR_INVALID);
	CHECK(r == keep);
	CHECK_GNIC(gnic_ring_create(ctx, 8, 0, &r));
	CHECK_RET(gnic_ring_consume(r, &e, 0, 0, &n), GNIC_ERR_INVALID);
	CHECK_RET(gnic_ring_consume(r, NULL, 1, 0, &n), GNIC_ERR_INVALID);
	CHECK_EQ(n, 7u);
	t0 = gnic_now_ns();
	CHECK_RET(gnic_ring_consume(r, &e, 1, 0, &n), GNIC_ERR_TIMEOUT);
	CHECK_EQ(n, 0u);
	CHECK_RET(gnic_ring_consume(r, &e, 1, 30000000ull, &n), GNIC_ERR_TIMEOUT);
	waited = gnic_now_ns() - t0;
	CHECK(waited >= 30000000ull && waited < 30000000ull + SLACK_NS); /* within its bound */
	CHECK(strstr(gnic_last_error(), "no entry ready") != NULL);
	gnic_ring_destroy(r);
	gnic_ctx_destroy(ctx);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"wrap", case_wrap}, {"producers", case_producers}, {"payload", case_payload},
	    {"full", case_full}, {"timeout", case_timeout},
	};

	T_RUN_CASES(cases, argc, argv);
	return T_EXIT_PASS;
}
