/* SPDX-License-Identifier: MIT */
/*
 * The GPU-to-CPU hand-off ring (gnic_eth.h): cnt entries and the tail word
 * in host memory (mapped into the GPU for a GPU context), the producers'
 * head in the device struct (GPU memory for a GPU context). Device threads
 * take an index below tail + cnt, fill its entry and mark it with seq =
 * index + 1 (gnic_dev_ring_push); the consumer copies ready entries out in
 * index order and then releases tail past them, which frees them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gnic_int.h"

#define RING_MAX (1u << 20)

struct gnic_ring {
	struct gnic_ctx *ctx;
	uint32_t cnt;
	void *blk; /* ent[cnt], then tail on a line of its own */
	size_t blk_len;
	struct gnic_ring_entry *ent;
	uint64_t *tail;
	pthread_mutex_t lock; /* one consumer at a time */
	uint64_t next;        /* the next index to consume (written under lock) */
	void *dev_host;
	uint64_t dev_gpu;
};

GNIC_API gnic_status_t gnic_ring_create(struct gnic_ctx *ctx, uint32_t entries, uint64_t timeout_ns,
                                        struct gnic_ring **ring_p)
{
	struct gnic_dev_ring d = {0};
	struct gnic_ring *r;
	size_t ent_len;
	uint64_t dev;
	gnic_status_t st;

	if (!ctx || !ring_p)
		return gnic_error(GNIC_ERR_INVALID, "ring_create: NULL argument");
	if (entries < 2 || entries > RING_MAX || (entries & (entries - 1)))
		return gnic_error(GNIC_ERR_INVALID,
		                  "ring_create: %u entries (a power of two in [2, %u])", entries,
		                  RING_MAX);
	r = calloc(1, sizeof(*r));
	if (!r)
		return gnic_error(GNIC_ERR_NOMEM, "ring_create: out of memory");
	r->ctx = ctx;
	r->cnt = entries;
	ent_len = (size_t)entries * sizeof(struct gnic_ring_entry);
	r->blk_len = (ent_len + 64 + GNIC_PAGE - 1) & ~(size_t)(GNIC_PAGE - 1);
	st = gnic_eth_host_block(ctx, r->blk_len, &r->blk, &dev);
	if (st) {
		free(r);
		return st;
	}
	r->ent = r->blk;
	r->tail = (uint64_t *)((uint8_t *)r->blk + ent_len);
	pthread_mutex_init(&r->lock, NULL);
	d.magic = GNIC_DEV_RING_MAGIC;
	d.cnt = entries;
	d.ent = (struct gnic_ring_entry *)(uintptr_t)dev;
	d.tail = (uint64_t *)(uintptr_t)(dev + ent_len);
	d.timeout_ns = timeout_ns ? timeout_ns : 10ull * 1000 * 1000 * 1000;
	st = gnic_eth_dev_copy(ctx, &d, sizeof(d), &r->dev_host, &r->dev_gpu);
	if (st) {
		gnic_ring_destroy(r);
		return st;
	}
	*ring_p = r;
	return GNIC_OK;
}

GNIC_API void gnic_ring_destroy(struct gnic_ring *ring)
{
	if (!ring)
		return;
	gnic_eth_dev_free(ring->ctx, ring->dev_host, ring->dev_gpu);
	gnic_eth_host_block_free(ring->ctx, ring->blk, ring->blk_len);
	pthread_mutex_destroy(&ring->lock);
	free(ring);
}

GNIC_API struct gnic_dev_ring *gnic_ring_dev(struct gnic_ring *ring)
{
	if (!ring)
		return NULL;
	return (struct gnic_dev_ring *)(uintptr_t)(ring->dev_host ? (uintptr_t)ring->dev_host
	                                                          : ring->dev_gpu);
}

/* Copy out the ready entries from ring->next on, at most max. */
static uint32_t take(struct gnic_ring *ring, struct gnic_ring_entry *out, uint32_t max)
{
	uint32_t n = 0;

	while (n < max) {
		const struct gnic_ring_entry *e = &ring->ent[ring->next & (ring->cnt - 1)];

		/* acquire: the producer wrote the rest before its mark */
		if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != ring->next + 1)
			break;
		out[n].addr = e->addr;
		out[n].len = e->len;
		out[n].tag = e->tag;
		out[n].user = e->user;
		out[n].seq = ring->next + 1;
		n++;
		__atomic_store_n(&ring->next, ring->next + 1, __ATOMIC_RELAXED);
	}
	if (n) /* release: our reads of them are done before a producer reuses them */
		__atomic_store_n(ring->tail, ring->next, __ATOMIC_RELEASE);
	return n;
}

GNIC_API gnic_status_t gnic_ring_consume(struct gnic_ring *ring, struct gnic_ring_entry *out,
                                         uint32_t max, uint64_t timeout_ns, uint32_t *n)
{
	uint64_t deadline, sleep_ns = 0;
	uint32_t spins = 0, got;

	if (!ring || !out || !n || !max)
		return gnic_error(GNIC_ERR_INVALID, "ring_consume: %s",
		                  max ? "NULL argument" : "max is 0");
	deadline = gnic_time_ns() + timeout_ns;
	pthread_mutex_lock(&ring->lock);
	for (;;) {
		got = take(ring, out, max);
		if (got || gnic_time_ns() >= deadline)
			break;
		if (++spins > 64) /* past a short spin: sleep, 1 us doubling to 100 us */
			gnic_poll_backoff(&sleep_ns);
	}
	pthread_mutex_unlock(&ring->lock);
	if (!got) {
		*n = 0;
		return gnic_error(
		    GNIC_ERR_TIMEOUT,
		    "ring_consume: no entry ready within %llu ns (%llu consumed so far)",
		    (unsigned long long)timeout_ns, (unsigned long long)gnic_ring_consumed(ring));
	}
	*n = got;
	return GNIC_OK;
}

GNIC_API uint64_t gnic_ring_consumed(const struct gnic_ring *ring)
{
	return ring ? __atomic_load_n(&ring->next, __ATOMIC_RELAXED) : 0;
}
