/* SPDX-License-Identifier: MIT */
/*
 * A work queue as the verbs side sees it: a ring of fixed-size entries in
 * hardware layout, the producer and consumer indexes of software, and the
 * wr_id of every posted entry. An SQ's entries are 64-byte basic blocks (a
 * WQE takes one or more), an RQ's are receive WQEs of one stride each; a
 * shared receive queue will be one more of these.
 *
 * Who touches what:
 *   buf, wqe_cnt, stride: set at creation, read by everyone (the engine too);
 *   head, wrid[]: the posting side, under lock (poll_cq reads an entry's
 *       wrid once the entry's CQE came, which orders it after the post);
 *   tail: the polling side (poll_cq), outside lock: the posting side reads it
 *       with acquire (emu_wq_used) to find free entries, poll_cq publishes it
 *       with release (emu_wq_retire) once the entries' CQE was read.
 * The engine never reads head or tail: it has its own consumer index (in its
 * per-QP state) and learns the producer index from the doorbells, like
 * hardware.
 */
#ifndef GNIC_EMU_WQ_H
#define GNIC_EMU_WQ_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct emu_wq {
	uint8_t *buf;     /* entry 0 (page-aligned, inside the QP's buffer) */
	uint32_t wqe_cnt; /* entries, a power of two; 0: no such queue */
	uint32_t stride;  /* bytes of one entry, a power of two (1 without a queue) */
	uint32_t head;    /* producer: next free entry (under lock) */
	uint32_t tail;    /* consumer: oldest entry not yet retired */
	uint64_t *wrid;   /* by entry (an SQ: by a WQE's first basic block) */
	pthread_spinlock_t lock;
};

/* The wrid array (at least one entry, so an empty queue has one too):
 * 0 or ENOMEM. emu_wq_free_arrays() undoes it, also after a failure. */
int emu_wq_alloc_arrays(struct emu_wq *wq);
void emu_wq_free_arrays(struct emu_wq *wq);
void emu_wq_init_lock(struct emu_wq *wq);
void emu_wq_destroy_lock(struct emu_wq *wq);
/* Back to index 0 on both sides (caller holds lock). */
void emu_wq_reset(struct emu_wq *wq);

/* Copy n entries from idx on into the ring; they are consecutive modulo the
 * ring, so entries past its end continue at its start. n <= wqe_cnt. */
void emu_wq_copy_in(struct emu_wq *wq, uint32_t idx, const void *src, uint32_t n);
/* Copy n entries from idx on out of the ring, wrapping as often as it takes
 * (a corrupt WQE may claim more basic blocks than the SQ has). */
void emu_wq_copy_out(const struct emu_wq *wq, uint32_t idx, void *dst, uint32_t n);

static inline uint32_t emu_wq_slot(const struct emu_wq *wq, uint32_t idx)
{
	return idx & (wq->wqe_cnt - 1);
}

static inline uint8_t *emu_wq_at(const struct emu_wq *wq, uint32_t idx)
{
	return wq->buf + (size_t)emu_wq_slot(wq, idx) * wq->stride;
}

/* Entries posted and not retired, as the posting side sees it. */
static inline uint32_t emu_wq_used(const struct emu_wq *wq)
{
	return wq->head - __atomic_load_n(&wq->tail, __ATOMIC_ACQUIRE);
}

/* Entries before tail are free again (poll_cq). */
static inline void emu_wq_retire(struct emu_wq *wq, uint32_t tail)
{
	__atomic_store_n(&wq->tail, tail, __ATOMIC_RELEASE);
}

#endif /* GNIC_EMU_WQ_H */
