/* SPDX-License-Identifier: MIT */
/*
 * The engine's copy queue for GPU memory: dma.h says what it does. Per
 * worker: the jobs in the order they were made, the copies this pass queued
 * (each with its ordering level), the submitted batches with their events,
 * the streams (one per CUDA context) and the pinned bounce ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dma.h"
#include "worker.h"

#define DMA_MAX_STREAMS 8
#define DMA_PEND_MAX    1024 /* copies queued in one pass before they are issued early */
#define DMA_FLUSH_WAIT  UINT64_MAX
#define DMA_RING_ALIGN  64u

enum { KERN_NO, KERN_PLAIN, KERN_LAST }; /* by the copy kernel: as is, last byte last */

struct dma_pend {
	struct emu_cuda_copy c;
	uint8_t kern;            /* KERN_*: by the copy kernel (dma_kern) */
	int si;                  /* stream */
	unsigned level;          /* issued after every lower level of its stream */
	struct emu_dma_job *job; /* a failure is the job's */
};

/* One stream's copies of one submission, and the event after them. */
struct dma_batch {
	struct dma_batch *next;
	int si;
	void *ev; /* NULL: no event could be had; the stream is asked */
	uint64_t flush;
	size_t ncopies;
	uint64_t t0;
};

struct dma_place { /* a host target, written when the job retires */
	uint8_t *dst;
	const uint8_t *src;
	size_t n;
};

struct emu_dma_job {
	struct emu_dma_job *next;
	struct emu_dma *d;
	struct emu_qp *qp;
	int *counter;
	emu_dma_done_fn done;
	bool committed;
	uint64_t flush; /* 0: no copies; DMA_FLUSH_WAIT: some not issued yet */
	int err;
	size_t ring_end, ring_used;
	struct dma_place *places;
	unsigned nplaces, cap_places;
	struct emu_mr **refs; /* refs_inl until more are needed: no malloc per message */
	unsigned nrefs, cap_refs;
	struct emu_mr *refs_inl[4];
	void **bufs; /* malloc'd, freed with the job */
	unsigned nbufs, cap_bufs;
	max_align_t data[];
};

struct emu_dma {
	struct emu_worker *w;
	struct {
		void *ctx, *stream;
		void **evs; /* spare events of this context */
		unsigned nevs, cap_evs;
	} st[DMA_MAX_STREAMS];
	int nst;
	struct dma_pend *pend;
	size_t npend, cap_pend;
	struct dma_batch *b_head, *b_tail;
	size_t inflight;                /* copies issued, not known done */
	uint64_t flush_seq, done_flush; /* submissions made; all up to done_flush done */
	struct emu_dma_job *j_head, *j_tail;
	uint8_t *ring;
	size_t ring_size, r_head, r_tail, r_used;
	bool ring_failed, batch_off, kern_off;
	void *ring_ctx;       /* the context the ring was made in */
	bool ring_mapped;     /* ... and it is at the same address on that device */
	unsigned gen;         /* emu_cuda_ctx_gen() its streams, events and ring were made at */
	struct dma_pend **lv; /* a level's copies, for issuing */
	unsigned cap_lv;
	size_t places_live;    /* host targets of unretired jobs: direct copies to host wait */
	uint64_t *dsts, *srcs; /* a batch's arrays */
	size_t *sizes, cap_batch;
	struct { /* what the queue did, for the log (GNIC_EMU_LOG=2) */
		uint64_t submits, calls, copies, jobs, reaped, wait_ns, submit_ns;
	} stat;
};

static struct emu_log_limit fail_limit;

static uint64_t timeout_ns(void)
{
	return (uint64_t)emu_cfg.cuda_timeout_ms * 1000000u;
}

static void pause_briefly(void)
{
	struct timespec ts = {0, 2000};

	nanosleep(&ts, NULL);
}

static struct emu_dma *dma_of(struct emu_worker *w)
{
	if (!w->dma) {
		w->dma = calloc(1, sizeof(*w->dma));
		if (w->dma) {
			w->dma->w = w;
			w->dma->gen = emu_cuda_ctx_gen();
		}
	}
	return w->dma;
}

static bool grow(void **p, unsigned *cap, unsigned need, size_t elem)
{
	unsigned c = *cap ? *cap * 2 : 4;
	void *np;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	np = realloc(*p, c * elem);
	if (!np)
		return false;
	*p = np;
	*cap = c;
	return true;
}

/* n: the copy's bytes, 0 for copies that failed in flight (the event says
 * only that one of them did). */
static void job_fail(struct emu_dma_job *j, int err, uint64_t n)
{
	if (!j->err)
		j->err = err;
	if (n)
		emu_warn_limited(&fail_limit, "QP 0x%x: GPU copy of %llu bytes refused: %s (%d)",
		                 j->qp ? j->qp->ibqp.qp_num : 0, (unsigned long long)n,
		                 emu_cuda_error_str(err), err);
	else
		emu_warn_limited(&fail_limit, "QP 0x%x: GPU copies in flight failed: %s (%d)",
		                 j->qp ? j->qp->ibqp.qp_num : 0, emu_cuda_error_str(err), err);
}

/* ---- jobs ------------------------------------------------------------------ */

/* Drop the streams, events and ring (not destroyed: their context may be
 * gone, and took them along); made anew when needed. */
static void forget_driver(struct emu_dma *d)
{
	for (int i = 0; i < d->nst; i++)
		free(d->st[i].evs);
	memset(d->st, 0, sizeof(d->st));
	d->nst = 0;
	d->ring = NULL;
	d->ring_failed = false;
	d->r_head = d->r_tail = d->r_used = 0;
	d->gen = emu_cuda_ctx_gen();
}

struct emu_dma_job *emu_dma_job_new(struct emu_qp *qp, int *counter, emu_dma_done_fn done,
                                    size_t data_size)
{
	struct emu_dma *d = dma_of(qp->worker);
	struct emu_dma_job *j;

	if (!d)
		return NULL;
	if (d->gen != emu_cuda_ctx_gen() && !d->j_head && !d->b_head && !d->npend)
		forget_driver(d); /* a context is gone: what was made in it may be */
	j = calloc(1, sizeof(*j) + data_size);
	if (!j)
		return NULL;
	j->d = d;
	j->qp = qp;
	j->counter = counter;
	j->done = done;
	if (counter)
		(*counter)++;
	if (d->j_tail)
		d->j_tail->next = j;
	else
		d->j_head = j;
	d->j_tail = j;
	return j;
}

void *emu_dma_job_data(struct emu_dma_job *j)
{
	return j->data;
}

void emu_dma_job_commit(struct emu_dma_job *j)
{
	j->committed = true;
}

static int hold(struct emu_dma_job *j, struct emu_mr *mr)
{
	if (!mr)
		return 0;
	for (unsigned i = 0; i < j->nrefs; i++)
		if (j->refs[i] == mr)
			return 0;
	if (!j->refs) {
		j->refs = j->refs_inl;
		j->cap_refs = sizeof(j->refs_inl) / sizeof(j->refs_inl[0]);
	}
	if (j->nrefs == j->cap_refs && j->refs == j->refs_inl) {
		struct emu_mr **r = malloc(2 * j->cap_refs * sizeof(*r));

		if (!r)
			return -ENOMEM;
		memcpy(r, j->refs_inl, sizeof(j->refs_inl));
		j->refs = r;
		j->cap_refs *= 2;
	}
	if (!grow((void **)&j->refs, &j->cap_refs, j->nrefs + 1, sizeof(*j->refs)))
		return -ENOMEM;
	atomic_fetch_add(&mr->dma_refs, 1);
	j->refs[j->nrefs++] = mr;
	return 0;
}

static int add_place(struct emu_dma_job *j, uint8_t *dst, const uint8_t *src, size_t n)
{
	if (!grow((void **)&j->places, &j->cap_places, j->nplaces + 1, sizeof(*j->places)))
		return -ENOMEM;
	j->places[j->nplaces++] = (struct dma_place){dst, src, n};
	j->d->places_live++;
	return 0;
}

static void *job_buf(struct emu_dma_job *j, size_t n)
{
	void *b;

	if (!grow((void **)&j->bufs, &j->cap_bufs, j->nbufs + 1, sizeof(*j->bufs)))
		return NULL;
	b = malloc(n ? n : 1);
	if (b)
		j->bufs[j->nbufs++] = b;
	return b;
}

static void ring_release(struct emu_dma *d, struct emu_dma_job *j)
{
	if (!j->ring_used)
		return;
	d->r_tail = j->ring_end;
	d->r_used -= j->ring_used;
}

static void job_free(struct emu_dma *d, struct emu_dma_job *j)
{
	ring_release(d, j);
	d->places_live -= j->nplaces;
	for (unsigned i = 0; i < j->nrefs; i++)
		atomic_fetch_sub(&j->refs[i]->dma_refs, 1);
	for (unsigned i = 0; i < j->nbufs; i++)
		free(j->bufs[i]);
	if (j->refs != j->refs_inl)
		free(j->refs);
	free(j->places);
	free(j->bufs);
	free(j);
}

void emu_dma_forget_qp(struct emu_qp *qp)
{
	struct emu_dma *d = qp->worker ? qp->worker->dma : NULL;

	for (struct emu_dma_job *j = d ? d->j_head : NULL; j; j = j->next) {
		if (j->qp != qp)
			continue;
		j->qp = NULL;
		j->counter = NULL;
	}
	qp->resp.dma_jobs = 0;
	qp->resp.job = NULL;
	qp->resp.dma_failed = false;
}

/* ---- streams, the ring ---------------------------------------------------- */

static int stream_of(struct emu_dma *d, void *ctx)
{
	int i;

	for (i = 0; i < d->nst; i++)
		if (d->st[i].ctx == ctx)
			return i;
	if (d->nst == DMA_MAX_STREAMS)
		return -1;
	if (emu_cuda_stream_new(ctx, &d->st[i].stream)) {
		emu_warn_limited(&fail_limit, "cannot create a CUDA stream for copies (context %p)",
		                 ctx);
		return -1;
	}
	d->st[i].ctx = ctx;
	d->nst++;
	return i;
}

static void *ring_alloc(struct emu_dma *d, struct emu_dma_job *j, void *ctx, size_t n)
{
	size_t off, waste = 0;

	n = (n + DMA_RING_ALIGN - 1) / DMA_RING_ALIGN * DMA_RING_ALIGN;
	if (!d->ring && !d->ring_failed) {
		d->ring_size = (size_t)emu_cfg.cuda_stage_kb * 1024;
		d->ring = emu_cuda_pinned_alloc(ctx, d->ring_size);
		d->ring_ctx = ctx;
		d->ring_mapped = d->ring && emu_cuda_pinned_mapped(ctx, d->ring);
		if (!d->ring) {
			d->ring_failed = true;
			emu_warn("cannot allocate %zu KiB of pinned memory for GPU copies; they "
			         "are done synchronously",
			         d->ring_size / 1024);
		}
	}
	if (!d->ring || !n || n > d->ring_size)
		return NULL;
	if (!d->r_used)
		d->r_head = d->r_tail = 0;
	else if (d->r_head == d->r_tail)
		return NULL; /* full */
	if (d->r_head >= d->r_tail) {
		if (d->ring_size - d->r_head >= n) {
			off = d->r_head;
		} else if (d->r_tail >= n) {
			waste = d->ring_size - d->r_head;
			off = 0;
		} else {
			return NULL;
		}
	} else if (d->r_tail - d->r_head >= n) {
		off = d->r_head;
	} else {
		return NULL;
	}
	d->r_head = off + n;
	d->r_used += waste + n;
	j->ring_used += waste + n;
	j->ring_end = d->r_head;
	return d->ring + off;
}

/* ---- completion ------------------------------------------------------------ */

static void batch_fail(struct emu_dma *d, const struct dma_batch *b, int err)
{
	for (struct emu_dma_job *j = d->j_head; j; j = j->next)
		if (j->flush == b->flush)
			job_fail(j, err, 0);
}

/* Pop the oldest batch if it is done (or failed, or took too long): true
 * when it was popped. */
static bool batch_reap(struct emu_dma *d, uint64_t now)
{
	struct dma_batch *b = d->b_head;
	int r;

	if (!b)
		return false;
	r = emu_cuda_query(d->st[b->si].ctx, b->ev, d->st[b->si].stream);
	if (r == 1) {
		if (now - b->t0 < timeout_ns())
			return false;
		emu_err(
		    "GPU copies issued %d ms ago are not done; their work requests fail%s",
		    emu_cfg.cuda_timeout_ms,
		    emu_cfg.cuda_kernel_max
		        ? " (small copies run in gnic-emu's copy kernel, which a kernel that "
		          "fills every SM leaves no room: GNIC_EMU_CUDA_KERNEL_MAX=0 keeps them "
		          "on the copy engines)"
		        : "");
		r = -ETIMEDOUT;
		b->ev = NULL; /* its event may still fire: not reused */
	}
	if (r)
		batch_fail(d, b, r);
	d->stat.reaped++;
	d->stat.wait_ns += now - b->t0;
	d->b_head = b->next;
	if (!d->b_head)
		d->b_tail = NULL;
	d->inflight -= b->ncopies;
	d->done_flush = d->b_head ? d->b_head->flush - 1 : d->flush_seq;
	if (b->ev) {
		typeof(d->st[0]) *s = &d->st[b->si];

		if (grow((void **)&s->evs, &s->cap_evs, s->nevs + 1, sizeof(*s->evs)))
			s->evs[s->nevs++] = b->ev;
	}
	free(b);
	return true;
}

static bool job_ready(const struct emu_dma *d, const struct emu_dma_job *j)
{
	return j->committed && (j->flush != DMA_FLUSH_WAIT && j->flush <= d->done_flush);
}

int emu_dma_poll(struct emu_worker *w)
{
	struct emu_dma *d = w->dma;
	uint64_t now;
	int n = 0;

	if (!d) /* no GPU copy made yet: no clock read, every pass */
		return 0;
	now = emu_now_ns();
	while (batch_reap(d, now))
		;
	while (d->j_head && job_ready(d, d->j_head)) {
		struct emu_dma_job *j = d->j_head;

		d->j_head = j->next;
		if (!d->j_head)
			d->j_tail = NULL;
		if (j->counter)
			(*j->counter)--;
		if (!j->err)
			for (unsigned i = 0; i < j->nplaces; i++)
				emu_mem_place(j->places[i].dst, j->places[i].src, j->places[i].n);
		j->done(j->qp, j->data, j->err);
		job_free(d, j);
		d->stat.jobs++;
		n++;
	}
	return n;
}

bool emu_dma_busy(const struct emu_worker *w)
{
	const struct emu_dma *d = w->dma;

	return d && (d->j_head || d->npend || d->b_head);
}

/* ---- issuing --------------------------------------------------------------- */

static void issue_one(struct emu_dma *d, struct dma_pend *p)
{
	int r = emu_cuda_copy_async(d->st[p->si].ctx, d->st[p->si].stream, &p->c);

	d->stat.calls++;
	if (r)
		job_fail(p->job, r, p->c.n);
	else
		d->inflight++;
}

static bool batch_arrays(struct emu_dma *d, size_t n)
{
	unsigned cap = (unsigned)d->cap_batch;

	if (n <= d->cap_batch)
		return true;
	if (!grow((void **)&d->dsts, &cap, (unsigned)n, sizeof(*d->dsts)))
		return false;
	cap = (unsigned)d->cap_batch;
	if (!grow((void **)&d->srcs, &cap, (unsigned)n, sizeof(*d->srcs)))
		return false;
	cap = (unsigned)d->cap_batch;
	if (!grow((void **)&d->sizes, &cap, (unsigned)n, sizeof(*d->sizes)))
		return false;
	d->cap_batch = cap;
	return true;
}

/* A copy of the kernel's, one driver call at a time: the body, then (in
 * stream order) the last byte. */
static void issue_split(struct emu_dma *d, struct dma_pend *p)
{
	struct dma_pend tail = *p;

	if (p->kern != KERN_LAST || p->c.n < 2) {
		issue_one(d, p);
		return;
	}
	tail.c.dst += p->c.n - 1;
	tail.c.src += p->c.n - 1;
	tail.c.n = 1;
	p->c.n--;
	issue_one(d, p);
	p->c.n++;
	issue_one(d, &tail);
}

/* The copy kernel's copies among p[0..n) (KERN_PLAIN, KERN_LAST), as few
 * launches as the parameter block allows; what a launch refuses goes one
 * driver call at a time, and so does everything after it (kern_off).
 * Returns how many of p it left for the driver, moved to p's front. */
static size_t issue_kern(struct emu_dma *d, struct dma_pend **p, size_t n)
{
	struct emu_cuda_kcopy k[EMU_CUDA_KCOPY_MAX];
	struct dma_pend *chunk[EMU_CUDA_KCOPY_MAX];
	size_t rest = 0, nk = 0;

	for (size_t i = 0; i <= n; i++) {
		int r;

		if (i < n && p[i]->kern == KERN_NO) {
			p[rest++] = p[i];
			continue;
		}
		if (i < n) {
			chunk[nk] = p[i];
			k[nk] = (struct emu_cuda_kcopy){p[i]->c.dst, p[i]->c.src, p[i]->c.n};
			if (p[i]->kern == KERN_LAST)
				k[nk].n |= EMU_CUDA_KCOPY_LAST;
			nk++;
		}
		if (!nk || (nk < EMU_CUDA_KCOPY_MAX && i < n))
			continue;
		r = d->kern_off ? -ENOSYS
		                : emu_cuda_copy_kernel(d->st[chunk[0]->si].ctx,
		                                       d->st[chunk[0]->si].stream, k, nk);
		d->stat.calls++;
		if (!r) {
			d->inflight += nk;
		} else {
			if (r != -ENOSYS)
				emu_warn("the GPU copy kernel's launch failed (%s, %d); one driver "
				         "call per copy from now on",
				         emu_cuda_error_str(r), r);
			d->kern_off = true;
			for (size_t c = 0; c < nk; c++)
				issue_split(d, chunk[c]);
		}
		nk = 0;
	}
	return rest;
}

/* Copies p[0..n) (one stream, one level): the copy kernel's in its
 * launches, the others as one batch where possible. */
static void issue_level(struct emu_dma *d, struct dma_pend **p, size_t n)
{
	size_t from = 0;

	n = issue_kern(d, p, n);

	if (n > 1 && emu_cfg.cuda_batch && !d->batch_off && emu_cuda_batch_ok() &&
	    batch_arrays(d, n)) {
		while (from < n) {
			size_t k = n - from, fail = SIZE_MAX;
			int r;

			for (size_t i = 0; i < k; i++) {
				d->dsts[i] = p[from + i]->c.dst;
				d->srcs[i] = p[from + i]->c.src;
				d->sizes[i] = p[from + i]->c.n;
			}
			r = emu_cuda_copy_batch(d->st[p[0]->si].ctx, d->st[p[0]->si].stream,
			                        d->dsts, d->srcs, d->sizes, k, &fail);
			d->stat.calls++;
			if (!r) {
				d->inflight += k;
				return;
			}
			if (fail >= k) {
				/* refused as a whole: the copies go one by one, now and on */
				emu_warn("cuMemcpyBatchAsync refused %zu copies (%s, %d); one call "
				         "per copy from now on",
				         k, emu_cuda_error_str(r), r);
				d->batch_off = true;
				break;
			}
			/* whether the copies before it were queued is not said:
			 * again, one by one (a copy done twice lands the same) */
			job_fail(p[from + fail]->job, r, p[from + fail]->c.n);
			for (size_t i = 0; i < fail; i++)
				issue_one(d, p[from + i]);
			from += fail + 1;
		}
	}
	for (; from < n; from++)
		issue_one(d, p[from]);
}

static void record(struct emu_dma *d, int si, uint64_t flush, size_t ncopies)
{
	struct dma_batch *b = calloc(1, sizeof(*b));
	typeof(d->st[0]) *s = &d->st[si];

	if (!b) { /* cannot track them: wait for them now */
		uint64_t end = emu_now_ns() + timeout_ns();

		while (emu_cuda_query(s->ctx, NULL, s->stream) == 1 && emu_now_ns() < end)
			pause_briefly();
		return;
	}
	b->si = si;
	b->flush = flush;
	b->ncopies = ncopies;
	b->t0 = emu_now_ns();
	if (s->nevs)
		b->ev = s->evs[--s->nevs];
	else if (emu_cuda_event_new(s->ctx, &b->ev))
		b->ev = NULL;
	if (b->ev && emu_cuda_event_record(s->ctx, b->ev, s->stream)) {
		b->ev = NULL; /* leaked rather than reused half-recorded */
	}
	if (d->b_tail)
		d->b_tail->next = b;
	else
		d->b_head = b;
	d->b_tail = b;
}

void emu_dma_submit(struct emu_worker *w)
{
	struct emu_dma *d = w->dma;
	struct dma_pend **lv;
	uint64_t flush, t0;

	if (!d || !d->npend)
		return;
	t0 = emu_now_ns();
	d->stat.submits++;
	d->stat.copies += d->npend;
	flush = ++d->flush_seq;
	lv = grow((void **)&d->lv, &d->cap_lv, (unsigned)d->npend, sizeof(*lv)) ? d->lv : NULL;
	for (int si = 0; si < d->nst; si++) {
		size_t before = d->inflight, count = 0;
		unsigned top = 0;

		for (size_t i = 0; i < d->npend; i++)
			if (d->pend[i].si == si && d->pend[i].level > top)
				top = d->pend[i].level;
		for (unsigned l = 0; l <= top; l++) {
			size_t n = 0;

			for (size_t i = 0; i < d->npend; i++) {
				struct dma_pend *p = &d->pend[i];

				if (p->si != si || p->level != l)
					continue;
				if (lv)
					lv[n++] = p;
				else
					issue_one(d, p); /* no memory for the list: in order */
				count++;
			}
			if (n)
				issue_level(d, lv, n);
		}
		if (count)
			record(d, si, flush, d->inflight - before);
	}
	for (size_t i = 0; i < d->npend; i++)
		d->pend[i].job->flush = flush;
	d->npend = 0;
	d->done_flush = d->b_head ? d->b_head->flush - 1 : d->flush_seq;
	d->stat.submit_ns += emu_now_ns() - t0;
}

/* Wait (bounded) until at most keep copies are in flight. */
static void wait_inflight(struct emu_dma *d, size_t keep)
{
	while (d->b_head && d->inflight > keep) {
		if (!batch_reap(d, emu_now_ns()))
			pause_briefly();
	}
}

void emu_dma_quiesce(struct emu_worker *w)
{
	struct emu_dma *d = w->dma;

	if (!d)
		return;
	emu_dma_submit(w);
	while (d->b_head)
		if (!batch_reap(d, emu_now_ns()))
			pause_briefly();
}

/* What the copy queue did: how many copies each submission and each driver
 * call carried, and how long a submission's event took to be seen done. */
static void log_stats(const struct emu_dma *d)
{
	const typeof(d->stat) *s = &d->stat;

	if (!s->submits)
		return;
	emu_info("GPU copy queue: %llu copies in %llu submissions (%.1f each), %llu driver "
	         "calls, %llu jobs; %.1f us per submission to issue, %.1f us until its event "
	         "was seen done",
	         (unsigned long long)s->copies, (unsigned long long)s->submits,
	         (double)s->copies / (double)s->submits, (unsigned long long)s->calls,
	         (unsigned long long)s->jobs, (double)s->submit_ns / 1e3 / (double)s->submits,
	         s->reaped ? (double)s->wait_ns / 1e3 / (double)s->reaped : 0.0);
}

void emu_dma_discard(struct emu_worker *w)
{
	struct emu_dma *d = w->dma;

	if (!d)
		return;
	log_stats(d);
	memset(&d->stat, 0, sizeof(d->stat));
	d->npend = 0; /* never issued */
	emu_dma_quiesce(w);
	while (d->j_head) {
		struct emu_dma_job *j = d->j_head;

		d->j_head = j->next;
		if (j->counter)
			(*j->counter)--;
		job_free(d, j);
	}
	d->j_tail = NULL;
	if (d->gen != emu_cuda_ctx_gen())
		forget_driver(d); /* the engine may start again when contexts are gone */
}

static bool overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return a < b + bn && b < a + an;
}

/* The level a copy must go at: above every queued copy of its stream whose
 * ranges it depends on (write after write, read after write, write after
 * read), and at least min. */
static unsigned level_for(const struct emu_dma *d, int si, const struct emu_cuda_copy *c,
                          unsigned min)
{
	unsigned l = min;

	for (size_t i = 0; i < d->npend; i++) {
		const struct dma_pend *p = &d->pend[i];

		if (p->si != si || p->level + 1 <= l)
			continue;
		if (overlap(c->dst, c->n, p->c.dst, p->c.n) ||
		    overlap(c->src, c->n, p->c.dst, p->c.n) ||
		    overlap(c->dst, c->n, p->c.src, p->c.n))
			l = p->level + 1;
	}
	return l;
}

static int queue(struct emu_dma_job *j, int si, const struct emu_cuda_copy *c, uint8_t kern,
                 unsigned min, unsigned *level)
{
	struct emu_dma *d = j->d;
	unsigned cap = (unsigned)d->cap_pend;

	if (d->npend >= DMA_PEND_MAX || d->inflight + d->npend >= (size_t)emu_cfg.cuda_inflight) {
		emu_dma_submit(d->w);
		wait_inflight(d, (size_t)emu_cfg.cuda_inflight / 2);
	}
	if (!grow((void **)&d->pend, &cap, (unsigned)d->npend + 1, sizeof(*d->pend)))
		return -ENOMEM;
	d->cap_pend = cap;
	*level = level_for(d, si, c, min);
	d->pend[d->npend++] = (struct dma_pend){*c, kern, si, *level, j};
	j->flush = DMA_FLUSH_WAIT;
	return 0;
}

/* ---- what the engine asks for ---------------------------------------------- */

static uint64_t dev_va(const struct emu_mr *mr, uint64_t addr)
{
	return mr->dev_base + (addr - mr->iova);
}

static uint8_t *host_va(const struct emu_mr *mr, uint64_t addr)
{
	return (uint8_t *)mr->host_base + (addr - mr->iova);
}

static bool in_ring(const struct emu_dma *d, void *ctx, uint64_t p, uint64_t n)
{
	uint64_t r = (uintptr_t)d->ring;

	return d->ring && d->ring_mapped && d->ring_ctx == ctx && p >= r && n <= d->ring_size &&
	       p - r <= d->ring_size - n;
}

/* May the copy kernel do c on ctx's stream? A small copy whose addresses the
 * device reaches: its own memory, or the queue's mapped ring. */
static bool kern_ok(const struct emu_dma *d, void *ctx, const struct emu_cuda_copy *c)
{
	if (d->kern_off || c->n > (uint64_t)emu_cfg.cuda_kernel_max)
		return false;
	switch (c->kind) {
	case EMU_CUDA_DTOD:
		return !c->src_ctx || c->src_ctx == ctx;
	case EMU_CUDA_HTOD:
		return in_ring(d, ctx, c->src, c->n);
	default:
		return in_ring(d, ctx, c->dst, c->n);
	}
}

/* Queue a copy into target memory on ctx's stream, its last byte after the
 * rest: in the copy kernel, or a later level (a batch has no order). 0 or
 * -EIO (nothing queued). */
static int queue_split(struct emu_dma_job *j, void *ctx, const struct emu_cuda_copy *c)
{
	struct emu_cuda_copy body = *c, tail = *c;
	int si = stream_of(j->d, ctx);
	unsigned l = 0, l2;

	if (si < 0)
		return -EIO;
	if (kern_ok(j->d, ctx, c))
		return queue(j, si, c, KERN_LAST, 0, &l) ? -EIO : 0;
	if (c->n < 2)
		return queue(j, si, c, KERN_NO, 0, &l) ? -EIO : 0;
	body.n = c->n - 1;
	tail.dst += body.n;
	tail.src += body.n;
	tail.n = 1;
	if (queue(j, si, &body, KERN_NO, 0, &l) || queue(j, si, &tail, KERN_NO, l + 1, &l2))
		return -EIO;
	return 0;
}

/* The synchronous way, in order behind everything queued: for copies the
 * queue cannot take. */
static int put_sync(struct emu_dma_job *j, struct emu_mr *dst, uint64_t addr,
                    const struct emu_dma_src *src, uint64_t len)
{
	bool src_dev = src->mr && src->mr->mem_type == EMU_MEM_CUDA;
	const void *from = src->p;
	uint8_t *buf = NULL;
	int r = 0;

	emu_dma_quiesce(j->d->w);
	if (src_dev) {
		buf = job_buf(j, len);
		r = !buf || emu_cuda_read(src->mr->cu.ctx, (uintptr_t)src->p, buf, len);
		from = buf;
	}
	if (!r && dst->mem_type == EMU_MEM_CUDA)
		r = emu_cuda_write(dst->cu.ctx, dev_va(dst, addr), from, len);
	else if (!r)
		r = add_place(j, host_va(dst, addr), from, len);
	if (r) {
		if (!j->err)
			j->err = -EIO;
		return -EIO;
	}
	return 0;
}

int emu_dma_put(struct emu_dma_job *j, struct emu_mr *dst, uint64_t addr,
                const struct emu_dma_src *src, uint64_t len)
{
	bool dst_dev = dst->mem_type == EMU_MEM_CUDA;
	bool src_dev = src->mr && src->mr->mem_type == EMU_MEM_CUDA;
	struct emu_cuda_copy c = {.n = len};
	void *ctx;
	uint8_t *r;

	if (!len)
		return 0;
	if (!dst_dev && !src_dev) { /* host to host: when the job retires */
		uint8_t *buf = job_buf(j, len);

		if (!buf || add_place(j, host_va(dst, addr), buf, len)) {
			if (!j->err)
				j->err = -ENOMEM;
			return -EIO;
		}
		memcpy(buf, src->p, len);
		return 0;
	}
	if (!emu_cuda_async_ok())
		return put_sync(j, dst, addr, src, len);
	if (dst_dev && src_dev && !emu_cfg.cuda_d2d && dst->cu.ctx == src->mr->cu.ctx) {
		/* through the ring: device to host, then (a later level: it reads
		 * what the first writes) host to device */
		struct emu_cuda_copy in = {0, (uintptr_t)src->p, len, EMU_CUDA_DTOH, NULL};
		int si = stream_of(j->d, dst->cu.ctx);
		unsigned l;

		ctx = dst->cu.ctx;
		r = si < 0 ? NULL : ring_alloc(j->d, j, ctx, len);
		in.dst = (uintptr_t)r;
		if (!r || hold(j, src->mr) || queue(j, si, &in, KERN_NO, 0, &l))
			return put_sync(j, dst, addr, src, len);
		c = (struct emu_cuda_copy){dev_va(dst, addr), (uintptr_t)r, len, EMU_CUDA_HTOD,
		                           NULL};
	} else if (dst_dev && src_dev) {
		c = (struct emu_cuda_copy){dev_va(dst, addr), (uintptr_t)src->p, len, EMU_CUDA_DTOD,
		                           src->mr->cu.ctx};
		ctx = dst->cu.ctx;
	} else if (dst_dev) {
		c = (struct emu_cuda_copy){dev_va(dst, addr), (uintptr_t)src->p, len, EMU_CUDA_HTOD,
		                           NULL};
		ctx = dst->cu.ctx;
		if (!src->mr || !src->mr->pinned) { /* through the ring */
			r = ring_alloc(j->d, j, ctx, len);
			if (!r)
				return put_sync(j, dst, addr, src, len);
			memcpy(r, src->p, len);
			c.src = (uintptr_t)r;
		}
	} else {
		c = (struct emu_cuda_copy){(uintptr_t)host_va(dst, addr), (uintptr_t)src->p, len,
		                           EMU_CUDA_DTOH, NULL};
		ctx = src->mr->cu.ctx;
		if (!dst->pinned || j->d->places_live) { /* through the ring, placed in order */
			int si = stream_of(j->d, ctx);
			unsigned l;

			r = ring_alloc(j->d, j, ctx, len);
			if (!r || si < 0)
				return put_sync(j, dst, addr, src, len);
			c.dst = (uintptr_t)r;
			if (hold(j, src->mr) ||
			    queue(j, si, &c, kern_ok(j->d, ctx, &c) ? KERN_PLAIN : KERN_NO, 0,
			          &l) ||
			    add_place(j, host_va(dst, addr), r, len))
				return put_sync(j, dst, addr, src, len);
			return 0;
		}
	}
	if (hold(j, dst) || hold(j, src->mr) || queue_split(j, ctx, &c))
		return put_sync(j, dst, addr, src, len);
	return 0;
}

const void *emu_dma_get(struct emu_dma_job *j, struct emu_mr *mr, uint64_t addr, uint64_t len)
{
	static const uint8_t empty[1];
	struct emu_cuda_copy c = {0, dev_va(mr, addr), len, EMU_CUDA_DTOH, NULL};
	uint8_t *buf;

	if (!len)
		return empty;
	if (emu_cuda_async_ok()) {
		int si = stream_of(j->d, mr->cu.ctx);
		unsigned l;

		buf = si < 0 ? NULL : ring_alloc(j->d, j, mr->cu.ctx, len);
		c.dst = (uintptr_t)buf;
		if (buf && !hold(j, mr) &&
		    !queue(j, si, &c, kern_ok(j->d, mr->cu.ctx, &c) ? KERN_PLAIN : KERN_NO, 0, &l))
			return buf;
	}
	emu_dma_quiesce(j->d->w);
	buf = job_buf(j, len);
	if (!buf || emu_cuda_read(mr->cu.ctx, dev_va(mr, addr), buf, len)) {
		if (!j->err)
			j->err = -EIO;
		return NULL;
	}
	return buf;
}

const void *emu_dma_keep(struct emu_dma_job *j, const void *p, uint64_t n)
{
	void *b = job_buf(j, n);

	if (b && n)
		memcpy(b, p, n);
	return b;
}

int emu_dma_hold(struct emu_dma_job *j, struct emu_mr *mr)
{
	return hold(j, mr);
}
