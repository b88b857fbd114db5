/* SPDX-License-Identifier: MIT */
/*
 * The CPU proxy (GNIC_DB_PROXY): one host thread per context builds, posts
 * and completes the WQEs that device threads describe (the classic design
 * GPU-initiated networking is compared with, and AUTO's fallback when
 * device code cannot store to the doorbell register).
 *
 * Device threads write descriptors into the QP's ring (gnic_dev_proxy.h).
 * The thread takes them in ring order, as many as the SQ has room for, and
 * posts each with the C build of gnic_dev.cuh on a host view of the same QP
 * (gnic_qp_dev_host_view: SM doorbells, EXCLUSIVE): the WQEs are byte for
 * byte those device threads write in SM mode, an error CQE is recorded in
 * the QP's error record exactly as there, and the QP's one send CQ has one
 * consumer whose index a reset can drain from. (ibv_post_send would be a
 * second producer on an SQ libgnic drives itself, and rdma-core's own
 * indexes would disagree with ours after a reset.) The last WQE of every
 * batch asks for a CQE, so completions are reported without waiting for
 * cqe_every more, and one doorbell rings for the batch. Completions are
 * reported back in order: slots done, fetched values into the result
 * slots device threads read.
 *
 * The thread holds px_lock while it serves; adding, removing and resetting
 * a QP take it, so the thread never sees a QP half made or half gone. It
 * busy-polls while there is work, yields, then sleeps with a doubling
 * timeout up to 100 us; it stops when the context's last proxied QP goes.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gnic_int.h"
#include "gnic/gnic_dev.cuh"

#define BATCH_SLOTS 64     /* ring slots taken per QP and pass */
#define SPIN_NS     200000 /* keep polling this long after the last work */

/* A posted descriptor whose completion is not reported yet. */
struct pend {
	uint64_t sq_end;   /* its WQE ends below this SQ index */
	uint64_t desc_end; /* ring slots done once it completed */
	uint32_t scratch;  /* fetching atomic: where the NIC put the old value */
	int32_t res;       /* its result slot, or -1 */
};

struct gnic_proxy {
	struct gnic_qp *qp;
	struct gnic_proxy *next;
	struct gnic_px_block *blk;
	size_t blk_len;
	struct gnic_px_desc *ring;
	uint64_t *result;
	struct gnic_dev_qp *hq; /* the thread's own view of the QP */
	uint8_t *track;
	uint32_t cnt;  /* ring slots = SQ basic blocks */
	uint64_t head; /* next slot to take */
	uint64_t done; /* slots reported done */
	struct pend *pend;
	uint64_t phead, ptail; /* pend[] is a FIFO of cnt */
	struct gnic_px_desc batch[BATCH_SLOTS];
	bool stopped; /* failed: the QP is left alone until a reset */
	bool listed;
};

/* ---- one QP ---------------------------------------------------------------- */

/* Stop serving after a failure: the error record first, then the status
 * device threads watch. */
static void fail(struct gnic_proxy *pq, int rc)
{
	if (!pq->hq->failed) /* not from an error CQE: record it ourselves */
		gnic_dev_fail(pq->hq, rc, NULL);
	pq->stopped = true;
	__atomic_store_n(&pq->blk->status, (uint32_t)rc, __ATOMIC_RELEASE);
	gnic_info("proxy: QP %#x failed (device status %d)", pq->hq->qpn, rc);
}

/* Completions: report every descriptor up to the first not retired. */
static int reap(struct gnic_proxy *pq)
{
	uint64_t retired;
	int rc, n = 0;

	if (pq->phead == pq->ptail)
		return 0;
	rc = gnic_dev_scq_poll(pq->hq); /* what completed before an error still counts */
	retired = pq->hq->sq_retired;
	while (pq->ptail != pq->phead && pq->pend[pq->ptail % pq->cnt].sq_end <= retired) {
		const struct pend *p = &pq->pend[pq->ptail++ % pq->cnt];

		if (p->res >= 0)
			__atomic_store_n(
			    &pq->result[p->res],
			    __atomic_load_n(&pq->qp->scratch[p->scratch], __ATOMIC_RELAXED),
			    __ATOMIC_RELAXED);
		pq->done = p->desc_end;
		n++;
	}
	if (n) /* release: the values above before the count */
		__atomic_store_n(&pq->blk->done, pq->done, __ATOMIC_RELEASE);
	return rc < 0 ? rc : n;
}

/* Slots a well-formed descriptor takes, or 0. */
static uint32_t desc_slots(const struct gnic_proxy *pq, const struct gnic_px_desc *d)
{
	switch (d->kind) {
	case GNIC_PX_RDMA:
	case GNIC_PX_ATOMIC:
	case GNIC_PX_NOP:
		return d->nslots == 1 ? 1 : 0;
	case GNIC_PX_INLINE:
		if (d->len > pq->hq->max_inline || d->nslots != gnic_dev_inline_nbb(d->len))
			return 0;
		return d->nslots;
	default:
		return 0;
	}
}

/* Copy out published descriptors, as many as the SQ and the batch hold;
 * returns the slots taken, or a negative status for a malformed one. */
static int take(struct gnic_proxy *pq)
{
	struct gnic_dev_qp *hq = pq->hq;
	uint32_t room = pq->cnt - (uint32_t)(hq->sq_reserved - hq->sq_retired), n = 0;

	while (n < BATCH_SLOTS) {
		struct gnic_px_desc *d = &pq->ring[pq->head & (pq->cnt - 1)];
		uint32_t k;

		if (__atomic_load_n(&d->seq, __ATOMIC_ACQUIRE) != pq->head + 1)
			break;
		k = desc_slots(pq, d);
		if (!k)
			return GNIC_DEV_ERR_INVAL;
		if (k > room || n + k > BATCH_SLOTS)
			break;
		for (uint32_t i = 0; i < k; i++) {
			struct gnic_px_desc *s = &pq->ring[(pq->head + i) & (pq->cnt - 1)];

			pq->batch[n + i] = *s;
			if (i) /* inline data: must not read as a seq in a later lap */
				s->seq = 0;
		}
		pq->head += k;
		room -= k;
		n += k;
	}
	if (n) /* the slots are the posters' again */
		__atomic_store_n(&pq->blk->consumed, pq->head, __ATOMIC_RELEASE);
	return (int)n;
}

/* Build and commit one WQE (the SQ has room: take() checked). */
static void post_one(struct gnic_proxy *pq, const struct gnic_px_desc *d, uint64_t desc_idx,
                     bool last)
{
	struct gnic_dev_qp *hq = pq->hq;
	uint32_t flags =
	    (d->flags & (GNIC_DEV_F_SIGNAL | GNIC_DEV_F_FENCE | GNIC_DEV_F_NO_RESULT)) |
	    (last ? GNIC_DEV_F_SIGNAL : 0);
	uint64_t idx = hq->sq_reserved;
	struct pend *p;

	hq->sq_reserved = idx + d->nslots;
	switch (d->kind) {
	case GNIC_PX_RDMA:
		gnic_dev_wqe_rdma(hq, idx, d->opcode, d->laddr, d->lkey, d->raddr, d->rkey, d->len,
		                  flags, d->imm_be, NULL);
		break;
	case GNIC_PX_INLINE:
		gnic_dev_wqe_put_inline(hq, idx, (const uint8_t *)d + GNIC_PX_INLINE_OFF, d->len,
		                        d->raddr, d->rkey, flags);
		break;
	case GNIC_PX_ATOMIC:
		gnic_dev_wqe_atomic(hq, idx, d->opcode, d->raddr, d->rkey, d->swap_add, d->compare,
		                    flags, NULL);
		break;
	default:
		gnic_dev_wqe_nop(hq, idx, flags);
		break;
	}
	gnic_dev_sq_commit(hq, idx, d->nslots, NULL); /* no doorbell yet: db_batch */
	p = &pq->pend[pq->phead++ % pq->cnt];
	p->sq_end = idx + d->nslots;
	p->desc_end = desc_idx + d->nslots;
	p->scratch = gnic_dev_result_slot(hq, idx);
	p->res = d->kind == GNIC_PX_ATOMIC && !(d->flags & GNIC_DEV_F_NO_RESULT)
	             ? (int32_t)(desc_idx & (2 * (uint64_t)pq->cnt - 1))
	             : -1;
}

static int post_batch(struct gnic_proxy *pq, uint32_t n)
{
	uint64_t desc_idx = pq->head - n;

	for (uint32_t i = 0; i < n;) {
		const struct gnic_px_desc *d = &pq->batch[i];

		post_one(pq, d, desc_idx + i, i + d->nslots == n);
		i += d->nslots;
	}
	return gnic_dev_flush(pq->hq); /* one doorbell for the batch */
}

/* One pass over a QP; returns whether anything happened. */
static int serve(struct gnic_proxy *pq)
{
	int got, rc;

	if (pq->stopped)
		return 0;
	if (__atomic_load_n(&pq->blk->dev_err.status, __ATOMIC_ACQUIRE)) {
		pq->stopped = true; /* a device thread failed it (a wait ran out) */
		return 0;
	}
	rc = reap(pq);
	got = rc < 0 ? rc : take(pq);
	if (got > 0)
		rc = post_batch(pq, (uint32_t)got);
	else if (got < 0)
		rc = got;
	if (rc < 0) {
		fail(pq, rc);
		return 1;
	}
	return got > 0 || rc > 0;
}

/* ---- the thread ------------------------------------------------------------ */

static void *proxy_main(void *arg)
{
	struct gnic_ctx *ctx = arg;
	uint64_t last_work = gnic_time_ns(), sleep_ns = 0;
	uint32_t idle = 0;

	while (!atomic_load_explicit(&ctx->px_stop, memory_order_acquire)) {
		int work = 0;

		pthread_mutex_lock(&ctx->px_lock);
		for (struct gnic_proxy *pq = ctx->px_list; pq; pq = pq->next)
			work |= serve(pq);
		pthread_mutex_unlock(&ctx->px_lock);
		while (atomic_load_explicit(&ctx->px_waiters, memory_order_acquire))
			sched_yield(); /* a glibc mutex is not fair: let them have it */
		if (work) {
			last_work = gnic_time_ns();
			sleep_ns = 0;
			idle = 0;
			continue;
		}
		if (gnic_time_ns() - last_work < SPIN_NS) {
			if (++idle > 16) /* device threads may need this core (CPU builds) */
				sched_yield();
			continue;
		}
		gnic_poll_backoff(&sleep_ns);
	}
	return NULL;
}

/* Under px_lock. */
static gnic_status_t start_locked(struct gnic_ctx *ctx)
{
	int r;

	if (ctx->px_running)
		return GNIC_OK;
	atomic_store(&ctx->px_stop, false);
	r = pthread_create(&ctx->px_thread, NULL, proxy_main, ctx);
	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "proxy: pthread_create: %s", strerror(r));
	ctx->px_running = true;
	return GNIC_OK;
}

/* px_lock for anyone but the thread. */
static void lock_ctx(struct gnic_ctx *ctx)
{
	atomic_fetch_add(&ctx->px_waiters, 1);
	pthread_mutex_lock(&ctx->px_lock);
	atomic_fetch_sub(&ctx->px_waiters, 1);
}

void gnic_proxy_stop(struct gnic_ctx *ctx)
{
	bool running;

	lock_ctx(ctx);
	running = ctx->px_running;
	atomic_store_explicit(&ctx->px_stop, true, memory_order_release);
	pthread_mutex_unlock(&ctx->px_lock);
	if (!running)
		return;
	/* the thread takes px_lock in every pass: join outside it */
	pthread_join(ctx->px_thread, NULL);
	lock_ctx(ctx);
	ctx->px_running = false;
	pthread_mutex_unlock(&ctx->px_lock);
}

gnic_status_t gnic_proxy_add(struct gnic_qp *qp)
{
	struct gnic_ctx *ctx = qp->ctx;
	gnic_status_t st;

	lock_ctx(ctx);
	st = start_locked(ctx);
	if (!st) {
		qp->px->next = ctx->px_list;
		ctx->px_list = qp->px;
		qp->px->listed = true;
	}
	pthread_mutex_unlock(&ctx->px_lock);
	return st;
}

void gnic_proxy_remove(struct gnic_qp *qp)
{
	struct gnic_ctx *ctx = qp->ctx;
	bool last;

	if (!qp->px || !qp->px->listed)
		return;
	lock_ctx(ctx);
	for (struct gnic_proxy **p = &ctx->px_list; *p; p = &(*p)->next) {
		if (*p == qp->px) {
			*p = qp->px->next;
			break;
		}
	}
	qp->px->listed = false;
	last = !ctx->px_list;
	pthread_mutex_unlock(&ctx->px_lock);
	if (last) /* descriptors still in the ring are dropped with the QP */
		gnic_proxy_stop(ctx);
}

/* ---- state ----------------------------------------------------------------- */

gnic_status_t gnic_proxy_create(struct gnic_qp *qp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t cnt = qp->dv.sq.wqe_cnt;
	struct gnic_proxy *pq;

	if (qp->px)
		return GNIC_OK;
	if (posix_memalign((void **)&pq, 64, sizeof(*pq)))
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory for the proxy");
	memset(pq, 0, sizeof(*pq));
	qp->px = pq;
	pq->qp = qp;
	pq->cnt = cnt;
	pq->blk_len =
	    (gnic_proxy_ring_off(cnt) + (size_t)cnt * sizeof(struct gnic_px_desc) + page - 1) &
	    ~(page - 1);
	if (posix_memalign((void **)&pq->blk, page, pq->blk_len) ||
	    posix_memalign((void **)&pq->hq, 64, sizeof(*pq->hq)) ||
	    posix_memalign((void **)&pq->track, 64, gnic_qp_track_len(qp)) ||
	    !(pq->pend = calloc(cnt, sizeof(*pq->pend))))
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory for the proxy");
	memset(pq->blk, 0, pq->blk_len);
	memset(pq->track, 0, gnic_qp_track_len(qp));
	pq->result = (uint64_t *)((uint8_t *)pq->blk + gnic_proxy_res_off());
	pq->ring = (struct gnic_px_desc *)((uint8_t *)pq->blk + gnic_proxy_ring_off(cnt));
	gnic_qp_dev_host_view(qp, pq->hq, pq->track);
	return GNIC_OK;
}

void gnic_proxy_destroy(struct gnic_qp *qp)
{
	struct gnic_proxy *pq = qp->px;

	if (!pq)
		return;
	free(pq->pend);
	free(pq->track);
	free(pq->hq);
	free(pq->blk);
	free(pq);
	qp->px = NULL;
}

void *gnic_proxy_block(const struct gnic_qp *qp, size_t *len)
{
	if (len)
		*len = qp->px->blk_len;
	return qp->px->blk;
}

void gnic_proxy_lock(struct gnic_qp *qp)
{
	lock_ctx(qp->ctx);
}

void gnic_proxy_unlock(struct gnic_qp *qp)
{
	pthread_mutex_unlock(&qp->ctx->px_lock);
}

uint64_t gnic_proxy_scq_ci(const struct gnic_qp *qp)
{
	return qp->px->hq->scq_ci;
}

/* Under gnic_proxy_lock(), the QP in RESET: index 0 everywhere, the ring
 * empty (no seq of the old laps left to match a new index). */
void gnic_proxy_rewind(struct gnic_qp *qp, uint64_t scq_ci)
{
	struct gnic_proxy *pq = qp->px;

	gnic_qp_dev_host_view(qp, pq->hq, pq->track);
	memset(pq->track, 0, gnic_qp_track_len(qp));
	pq->hq->scq_ci = scq_ci;
	memset(pq->blk, 0, pq->blk_len);
	pq->head = pq->done = 0;
	pq->phead = pq->ptail = 0;
	pq->stopped = false;
}

const struct gnic_dev_err *gnic_proxy_err(const struct gnic_qp *qp)
{
	const struct gnic_dev_err *dev = &qp->px->blk->dev_err;

	if (__atomic_load_n(&qp->err->status, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&dev->status, __ATOMIC_ACQUIRE))
		return qp->err;
	return dev;
}
