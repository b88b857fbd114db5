/* SPDX-License-Identifier: MIT */
/*
 * CPU-assisted doorbells (GNIC_DB_CPU): one host thread per context rings
 * the doorbells that device threads cannot ring themselves (the register
 * does not map into the GPU).
 *
 * Device code publishes its ready index in *cpu_db with release semantics;
 * the thread sees it change and writes exactly what device code writes in SM
 * mode: the doorbell record, then the 8-byte register. It busy-polls briefly
 * after activity, then sleeps with a doubling timeout up to 100 us, so an
 * idle context costs almost no CPU.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "gnic_int.h"

#define SPIN_NS 50000u /* keep polling this long after the last doorbell */

/* Drains write-combining buffers, so a store to a (WC-mapped) doorbell
 * register is ordered after earlier stores and leaves the CPU now. Inline
 * asm rather than a C11 fence: ThreadSanitizer does not model fences. */
static inline void wc_flush(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("sfence" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dsb st" ::: "memory");
#else
	__sync_synchronize();
#endif
}

/* What device code writes in SM mode: the record, then the register. The
 * release store orders the WQE bytes (acquired with pi) before the record. */
static void ring(struct gnic_qp *qp, uint64_t pi)
{
	uint32_t words[2] = {gnic_be32((uint32_t)(pi & 0xffff) << 8), gnic_be32(qp->qpn << 8)};
	uint64_t reg;

	memcpy(&reg, words, sizeof(reg));
	__atomic_store_n(&qp->dv.dbrec[GNIC_MLX5_SND_DBR], gnic_be32((uint32_t)(pi & 0xffff)),
	                 __ATOMIC_RELEASE);
	wc_flush();
	/* release too: the NIC may see the register before the record */
	__atomic_store_n((uint64_t *)qp->dv.bf.reg, reg, __ATOMIC_RELEASE);
	wc_flush();
}

/* Rings every QP whose ready index moved; returns how many. */
static int scan(struct gnic_ctx *ctx)
{
	int n = 0;

	pthread_mutex_lock(&ctx->prog_lock);
	for (struct gnic_qp *qp = ctx->prog_qps; qp; qp = qp->prog_next) {
		uint64_t pi = __atomic_load_n(qp->cpu_db, __ATOMIC_ACQUIRE);

		if (pi == qp->rung)
			continue;
		ring(qp, pi);
		qp->rung = pi;
		n++;
	}
	pthread_mutex_unlock(&ctx->prog_lock);
	return n;
}

static void *progress_main(void *arg)
{
	struct gnic_ctx *ctx = arg;
	uint64_t last_work = gnic_time_ns(), sleep_ns = 0;

	while (!atomic_load_explicit(&ctx->prog_stop, memory_order_acquire)) {
		if (scan(ctx)) {
			last_work = gnic_time_ns();
			sleep_ns = 0;
			continue;
		}
		if (gnic_time_ns() - last_work < SPIN_NS)
			continue;
		gnic_poll_backoff(&sleep_ns);
	}
	return NULL;
}

GNIC_API gnic_status_t gnic_progress_start(struct gnic_ctx *ctx)
{
	gnic_status_t st = GNIC_OK;
	int r;

	if (!ctx)
		return gnic_error(GNIC_ERR_INVALID, "progress_start: ctx is NULL");
	pthread_mutex_lock(&ctx->prog_lock);
	if (!ctx->prog_running) {
		atomic_store(&ctx->prog_stop, false);
		r = pthread_create(&ctx->prog_thread, NULL, progress_main, ctx);
		if (r)
			st = gnic_error(GNIC_ERR_SYSTEM, "progress_start: pthread_create: %s",
			                strerror(r));
		else
			ctx->prog_running = true;
	}
	pthread_mutex_unlock(&ctx->prog_lock);
	return st;
}

GNIC_API void gnic_progress_stop(struct gnic_ctx *ctx)
{
	bool running;

	if (!ctx)
		return;
	pthread_mutex_lock(&ctx->prog_lock);
	running = ctx->prog_running;
	atomic_store_explicit(&ctx->prog_stop, true, memory_order_release);
	pthread_mutex_unlock(&ctx->prog_lock);
	if (!running)
		return;
	/* the thread takes prog_lock in every pass: join outside it */
	pthread_join(ctx->prog_thread, NULL);
	pthread_mutex_lock(&ctx->prog_lock);
	ctx->prog_running = false;
	pthread_mutex_unlock(&ctx->prog_lock);
}

gnic_status_t gnic_progress_add(struct gnic_qp *qp)
{
	struct gnic_ctx *ctx = qp->ctx;
	gnic_status_t st;

	pthread_mutex_lock(&ctx->prog_lock);
	qp->rung = __atomic_load_n(qp->cpu_db, __ATOMIC_ACQUIRE);
	qp->prog_next = ctx->prog_qps;
	ctx->prog_qps = qp;
	qp->on_progress = true;
	pthread_mutex_unlock(&ctx->prog_lock);
	st = gnic_progress_start(ctx);
	if (st)
		gnic_progress_remove(qp);
	return st;
}

void gnic_progress_remove(struct gnic_qp *qp)
{
	struct gnic_ctx *ctx = qp->ctx;

	if (!qp->on_progress)
		return;
	pthread_mutex_lock(&ctx->prog_lock);
	for (struct gnic_qp **p = &ctx->prog_qps; *p; p = &(*p)->prog_next) {
		if (*p == qp) {
			*p = qp->prog_next;
			break;
		}
	}
	qp->on_progress = false;
	pthread_mutex_unlock(&ctx->prog_lock);
}

/* After a reset the device starts again at index 0: so does the thread. The
 * word and our copy change together, so no doorbell for index 0 is rung. */
void gnic_progress_rewind(struct gnic_qp *qp)
{
	pthread_mutex_lock(&qp->ctx->prog_lock);
	__atomic_store_n(qp->cpu_db, 0, __ATOMIC_RELEASE);
	qp->rung = 0;
	pthread_mutex_unlock(&qp->ctx->prog_lock);
}
