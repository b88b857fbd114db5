/* SPDX-License-Identifier: MIT */
/*
 * The engine's copy queue for GPU memory (dma.c): what a NIC's DMA engine
 * does for payloads in GPU memory, without holding the engine on any copy.
 *
 * A piece of work that moves GPU memory (a WRITE landing in it, a READ
 * answered from it, READ data scattered into it) is a job: its copies are
 * queued on the worker, and what must wait for them (an ACK, a CQE, a READ
 * response) is the job's done() callback. Copies are issued at the end of
 * the engine pass, all of them together: small ones as one launch of the
 * copy kernel (copy_kernel.c), the rest as one cuMemcpyBatchAsync per stream
 * and ordering level where the driver has it, else one asynchronous copy
 * call each, on a non-blocking stream per worker and CUDA context, followed
 * by an event. Each pass begins by asking the oldest events whether they are
 * done and retiring the jobs they cover, oldest first: a job's callback runs
 * only after every job queued before it on the worker retired, so a QP's
 * answers and completions keep their order whatever order the copies end
 * in. Copies that must be ordered (the last byte of a message after the
 * rest, copies whose ranges overlap) go to later batches, in stream order.
 *
 * GPU to GPU copies in this process are device-to-device; host memory CUDA
 * knows as pinned is copied directly; other host memory, and data only
 * valid during the call, goes through the worker's pinned bounce ring. A
 * copy that cannot be queued (no room in the ring, a driver without
 * asynchronous copies) waits for the queue's copies and is done
 * synchronously: slower, in order, never wrong. Every wait is bounded by
 * GNIC_EMU_CUDA_TIMEOUT_MS.
 *
 * Everything runs on the worker that owns the job's QP, with its lock held.
 */
#ifndef GNIC_EMU_DMA_H
#define GNIC_EMU_DMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"

struct emu_worker;

/* err: 0, or why a copy of the job failed (a CUDA error, or -ETIMEDOUT),
 * logged already. qp: the job's QP, NULL when it was destroyed or reset
 * meanwhile (then only clean up). data: the job's own bytes. */
typedef void (*emu_dma_done_fn)(struct emu_qp *qp, void *data, int err);

/* Where a copy's bytes come from: p in mr's memory (mr held while copies
 * use it), or p alone, valid only during the call (copied at once). For GPU
 * memory (mr of EMU_MEM_CUDA) p is the device address, never dereferenced. */
struct emu_dma_src {
	struct emu_mr *mr;
	const void *p;
};

/* A new job of qp on qp's worker, with data_size bytes of its own (zeroed);
 * counter (may be NULL) counts it until it retires. NULL without memory. */
struct emu_dma_job *emu_dma_job_new(struct emu_qp *qp, int *counter, emu_dma_done_fn done,
                                    size_t data_size);
void *emu_dma_job_data(struct emu_dma_job *j);
/* Queue the job: its callback runs once its copies are done and every
 * earlier job retired. */
void emu_dma_job_commit(struct emu_dma_job *j);

/* Copy len bytes from src to [addr, addr + len) of dst (checked by the
 * caller): any mix of host and GPU memory. Host targets are written when
 * the job retires, the last byte last. 0, or -EIO (logged; the job fails). */
int emu_dma_put(struct emu_dma_job *j, struct emu_mr *dst, uint64_t addr,
                const struct emu_dma_src *src, uint64_t len);
/* Read len bytes of GPU memory at addr of mr: the host buffer they will be
 * in when the job retires (valid during its callback), or NULL (logged). */
const void *emu_dma_get(struct emu_dma_job *j, struct emu_mr *mr, uint64_t addr, uint64_t len);

/* A copy of n bytes at p that lives until the job is freed (NULL: no
 * memory). Holds mr (may be NULL) instead when p lies in it and only the
 * pointer is kept: keep_ref. */
const void *emu_dma_keep(struct emu_dma_job *j, const void *p, uint64_t n);
int emu_dma_hold(struct emu_dma_job *j, struct emu_mr *mr); /* 0 or -ENOMEM */

/* Does the QP's worker have GPU copies of qp in flight? */
static inline bool emu_dma_qp_busy(const struct emu_qp *qp)
{
	return qp->resp.dma_jobs > 0 || qp->resp.job;
}

/* The engine pass: retire what is done (returns jobs retired), issue what
 * the pass queued, and whether anything is still in flight. */
int emu_dma_poll(struct emu_worker *w);
void emu_dma_submit(struct emu_worker *w);
bool emu_dma_busy(const struct emu_worker *w);
/* Wait (bounded) until every copy queued on w is done, without retiring
 * any job: a synchronous access to GPU memory that follows stays in order. */
void emu_dma_quiesce(struct emu_worker *w);
/* qp is going away or back to RESET: its jobs forget it (control path, the
 * worker's lock held). */
void emu_dma_forget_qp(struct emu_qp *qp);
/* The engine stopped: wait (bounded) for what is in flight, drop every job. */
void emu_dma_discard(struct emu_worker *w);

#endif /* GNIC_EMU_DMA_H */
