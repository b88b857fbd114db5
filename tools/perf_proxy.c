/* SPDX-License-Identifier: MIT */
/*
 * The cpu-proxy mode, all of it (the shape of NVSHMEM's IBRC proxy), behind
 * the interface in perf.h (perf_proxy_*) and the pp_* calls of the device
 * operations (perf_dev_worker.h). A libgnic doorbell mode that does the
 * same is to replace this file.
 *
 * Device threads reserve slots of a ring per QP (an atomic add on
 * pp_ring.reserved, in device memory), write 64-byte descriptors into
 * pinned host memory and publish each by storing seq = index + 1 last. One
 * CPU thread per process polls every ring in order, builds and posts a WQE
 * per descriptor with the C build of gnic_dev.cuh, on QPs of a context
 * without GPU (the WQEs are then byte for byte those of the GPU modes, and
 * libgnic keeps choosing the provider), and reports back in the same host
 * memory: descriptors taken (their slots are free), completed (what a
 * quiet waits for), fetched values and receive completions. The last WQE
 * of every batch asks for a CQE, so nothing waits for cqe_every more.
 *
 * Built twice: as a host file (the thread), and with PERF_DEV_PASS inside
 * the device workers (the device side).
 */
#ifndef PERF_DEV_PASS
#include "perf.h"
#endif
#ifndef PERF_PROXY_RING
#define PERF_PROXY_RING

#define PP_SLOTS 4096 /* descriptors per ring (a power of two) */
#define PP_NRES  64   /* fetched values per ring */
#define PP_RLEN  64   /* receive lengths a ring remembers */

enum pp_op { PP_PUT = 1, PP_GET, PP_PUT_SIGNAL, PP_ADD, PP_FADD, PP_SEND, PP_RECV };

struct pp_desc {      /* a cache line: writers of neighbours do not share one */
	uint64_t seq; /* index + 1 once the rest is written */
	uint32_t op, len;
	uint64_t loff, roff;
	uint64_t arg0; /* PUT_SIGNAL: signal offset; ADD, FADD: addend */
	uint64_t arg1; /* PUT_SIGNAL: addend; FADD: result slot */
	uint64_t rsvd[2];
};

struct pp_host { /* pinned host memory mapped into the GPU; the proxy writes it */
	GNIC_DEV_ALIGNED uint64_t consumed;
	GNIC_DEV_ALIGNED uint64_t done;
	GNIC_DEV_ALIGNED uint64_t recv_done;
	uint32_t status; /* a gnic_dev status of the proxy's QP; 0 = fine */
	uint32_t recv_len[PP_RLEN];
	uint64_t result[PP_NRES];
	GNIC_DEV_ALIGNED struct pp_desc desc[PP_SLOTS];
};

struct pp_ring { /* device memory: the device threads' side */
	GNIC_DEV_ALIGNED uint64_t reserved;
	struct pp_host *h;   /* as the device addresses it */
	uint64_t recv_taken; /* receive completions the (one) receiving thread consumed */
};
#endif

#ifdef PERF_DEV_PASS
/* ---- device side ------------------------------------------------------------------------- */

GNIC_DEVFN int pp_wait_ge(const struct pp_ring *r, const uint64_t *p, uint64_t want, uint64_t tmo)
{
	struct gnic_wait w;

	gnic_wait_init(&w, tmo);
	while (gnic_load_sys64(p) < want) {
		if (gnic_load_sys32(&r->h->status))
			return GNIC_DEV_ERR_QP;
		if (gnic_wait_expired(&w))
			return GNIC_DEV_ERR_TIMEOUT;
	}
	return GNIC_DEV_OK;
}

/* n slots from *first on, once the proxy has copied out those n back. */
GNIC_DEVFN int pp_reserve(struct pp_ring *r, uint32_t n, uint64_t tmo, uint64_t *first)
{
	if (gnic_load_sys32(&r->h->status))
		return GNIC_DEV_ERR_QP;
	*first = gnic_add64(&r->reserved, n);
	return pp_wait_ge(r, &r->h->consumed, *first + n > PP_SLOTS ? *first + n - PP_SLOTS : 0,
	                  tmo);
}

/* One descriptor per calling thread. At warp or CTA scope on a GPU one
 * thread reserves for all (one atomic instead of 32 or blockDim); the proxy
 * sees the same descriptors either way. *ticket (may be NULL): for
 * pp_wait_done(). */
GNIC_DEVFN int pp_post(struct pp_ring *r, uint32_t scope, uint64_t tmo, uint32_t op, uint32_t len,
                       uint64_t loff, uint64_t roff, uint64_t arg0, uint64_t arg1, uint64_t *ticket)
{
	uint64_t idx = 0;
	struct pp_desc *d;
	int rc;

#if GNIC_ON_GPU
	if (scope == PERF_SCOPE_WARP) {
		unsigned mask = __activemask();
		int lane = threadIdx.x & 31, leader = __ffs(mask) - 1;
		unsigned long long base = 0;

		rc = lane == leader ? pp_reserve(r, __popc(mask), tmo, (uint64_t *)&base) : 0;
		rc = __shfl_sync(mask, rc, leader);
		idx = __shfl_sync(mask, base, leader) + __popc(mask & ((1u << lane) - 1));
	} else if (scope == PERF_SCOPE_CTA) {
		__shared__ unsigned long long cta_base;
		__shared__ int cta_rc;

		__syncthreads(); /* an earlier call's readers are done with them */
		if (threadIdx.x == 0)
			cta_rc = pp_reserve(r, blockDim.x, tmo, (uint64_t *)&cta_base);
		__syncthreads();
		rc = cta_rc;
		idx = cta_base + threadIdx.x;
	} else
#endif
		rc = pp_reserve(r, 1, tmo, &idx);
	(void)scope;
	if (rc)
		return rc;
	d = &r->h->desc[idx & (PP_SLOTS - 1)];
	d->op = op;
	d->len = len;
	d->loff = loff;
	d->roff = roff;
	d->arg0 = arg0;
	d->arg1 = arg1;
	gnic_store_sys64(&d->seq, idx + 1);
	if (ticket)
		*ticket = idx + 1;
	return GNIC_DEV_OK;
}

/* Every descriptor below ticket has completed. */
GNIC_DEVFN int pp_wait_done(struct pp_ring *r, uint64_t ticket, uint64_t tmo)
{
	return pp_wait_ge(r, &r->h->done, ticket, tmo);
}

GNIC_DEVFN int pp_quiet(struct pp_ring *r, uint64_t tmo)
{
	return pp_wait_done(r, gnic_load_acq64(&r->reserved), tmo);
}

GNIC_DEVFN uint64_t pp_result(const struct pp_ring *r, uint32_t res)
{
	return gnic_load_sys64(&r->h->result[res % PP_NRES]);
}

GNIC_DEVFN int pp_recv_ready(const struct pp_ring *r)
{
	return gnic_load_sys64(&r->h->recv_done) > r->recv_taken;
}

/* The next receive completion (in order, as from a CQ): its bytes. */
GNIC_DEVFN int pp_recv_wait(struct pp_ring *r, uint64_t tmo, uint32_t *len)
{
	int rc = pp_wait_ge(r, &r->h->recv_done, r->recv_taken + 1, tmo);

	if (rc == GNIC_DEV_OK)
		*len = gnic_load_sys32(&r->h->recv_len[r->recv_taken++ % PP_RLEN]);
	return rc;
}

#else
/* ---- host side: the proxy thread --------------------------------------------------------- */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnic/gnic_dev.cuh>

#define MAX_RINGS (2 * PERF_MAX_QPS)
#define BATCH     32

struct pend {              /* a posted descriptor whose completion is not reported yet */
	uint64_t desc_end; /* descriptors done once it is */
	uint64_t ticket;   /* its WQEs end below this SQ index */
	int32_t res;       /* FADD: result slot, else -1 */
	uint32_t scratch;  /* FADD: where the NIC put the fetched value */
};

struct ring {
	struct gnic_qp *gqp;
	struct gnic_dev_qp *qp; /* host memory: a context without GPU */
	struct pp_host *h;
	struct pp_ring *dring; /* what the device threads were given */
	bool on_gpu, post_only, failed;
	uint8_t *lbase;
	uint64_t rbase;
	uint32_t lkey, rkey;
	uint64_t head, done, recv_done;
	struct pend *pend;
	uint64_t pcap, phead, ptail;
};

static struct {
	pthread_t thread;
	bool running;
	int stop, active, nrings;
	struct ring rings[MAX_RINGS];
} px;

static void fail(struct ring *r, int rc)
{
	struct gnic_qp_error e;

	r->failed = true;
	gnic_store_sys32(&r->h->status, (uint32_t)rc);
	if (gnic_qp_error(r->gqp, &e) == GNIC_OK && e.dev_status)
		perf_note("cpu-proxy: QP error: %s", e.text);
}

static int post_one(struct ring *r, const struct pp_desc *d, bool signal, uint64_t desc_end)
{
	struct gnic_dev_qp *qp = r->qp;
	uint32_t f = signal ? GNIC_DEV_F_SIGNAL : 0;
	void *l = r->lbase + d->loff;
	uint64_t ra = r->rbase + d->roff, idx = 0;
	union gnic_bb bb;
	struct pend *p;
	int rc;

	switch (d->op) {
	case PP_PUT:
	case PP_GET:
	case PP_SEND:
		rc = gnic_dev_post_rdma(qp,
		                        d->op == PP_PUT   ? GNIC_MLX5_OPCODE_RDMA_WRITE
		                        : d->op == PP_GET ? GNIC_MLX5_OPCODE_RDMA_READ
		                                          : GNIC_MLX5_OPCODE_SEND,
		                        l, r->lkey, d->op == PP_SEND ? 0 : ra, r->rkey, d->len, f,
		                        0, NULL);
		break;
	case PP_PUT_SIGNAL:
		rc = gnic_dev_put_signal(qp, l, r->lkey, ra, r->rkey, d->len, r->rbase + d->arg0,
		                         r->rkey, d->arg1, f);
		break;
	case PP_ADD:
		rc = gnic_dev_signal(qp, ra, r->rkey, d->arg0, f);
		break;
	case PP_FADD: /* the fetched value lands in the QP's scratch slot of its WQE */
		rc = gnic_dev_sq_reserve(qp, 1, &idx);
		if (!rc) {
			gnic_dev_wqe_atomic(qp, idx, GNIC_MLX5_OPCODE_ATOMIC_FA, ra, r->rkey,
			                    d->arg0, 0, GNIC_DEV_F_SIGNAL, &bb);
			rc = gnic_dev_sq_commit(qp, idx, 1, &bb);
		}
		break;
	case PP_RECV:
		rc = gnic_dev_recv_post(qp, l, r->lkey, d->len);
		break;
	default:
		rc = GNIC_DEV_ERR_INVAL;
	}
	if (rc)
		return rc;
	if (r->post_only) /* nothing will ever complete: free the space at once */
		gnic_store_rel64(&qp->sq_retired, qp->sq_ready);
	p = &r->pend[r->phead++ % r->pcap];
	p->desc_end = desc_end;
	p->ticket = qp->sq_reserved;
	p->res = d->op == PP_FADD ? (int32_t)(d->arg1 % PP_NRES) : -1;
	p->scratch = (uint32_t)(idx & (2 * (uint64_t)qp->sq_wqe_cnt - 1));
	return GNIC_DEV_OK;
}

/* Copy out what device threads have published, up to a batch. */
static int take(struct ring *r, struct pp_desc *batch)
{
	int n = 0;

	while (n < BATCH && r->phead - r->ptail + (uint64_t)n < r->pcap) {
		struct pp_desc *d = &r->h->desc[r->head & (PP_SLOTS - 1)];

		if (__atomic_load_n(&d->seq, __ATOMIC_ACQUIRE) != r->head + 1)
			break;
		batch[n++] = *d;
		r->head++;
	}
	if (n) /* the slots are theirs again */
		__atomic_store_n(&r->h->consumed, r->head, __ATOMIC_RELEASE);
	return n;
}

/* Completed descriptors, in order, and their fetched values. */
static int reap(struct ring *r)
{
	uint64_t retired;
	int rc = !r->post_only && r->phead != r->ptail ? gnic_dev_scq_poll(r->qp) : 0;

	if (rc < 0)
		return rc;
	retired = gnic_load_acq64(&r->qp->sq_retired);
	while (r->ptail != r->phead && r->pend[r->ptail % r->pcap].ticket <= retired) {
		struct pend *p = &r->pend[r->ptail++ % r->pcap];

		if (p->res >= 0)
			r->h->result[p->res] = gnic_dev_result_value(
			    r->qp, gnic_load_sys64(&r->qp->scratch[p->scratch]));
		r->done = p->desc_end;
	}
	if (r->done != gnic_load_acq64(&r->h->done))
		gnic_store_sys64(&r->h->done, r->done);
	return rc;
}

/* A receive completion, if one is there (gnic_dev_recv_wait would wait). */
static int receive(struct ring *r)
{
	struct gnic_dev_qp *qp = r->qp;
	const struct gnic_mlx5_cqe64 *cqe;
	uint32_t len = 0;
	int rc;

	if (!qp->rq_wqe_cnt)
		return 0;
	cqe = &qp->rcq.buf[qp->rcq_ci & (qp->rcq.cqe_cnt - 1)];
	if (!gnic_mlx5_cqe_sw_owned(__atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE),
	                            (uint32_t)qp->rcq_ci, qp->rcq.cqe_cnt))
		return 0;
	rc = gnic_dev_recv_wait(qp, &len, NULL);
	if (rc)
		return rc;
	r->h->recv_len[r->recv_done % PP_RLEN] = len;
	gnic_store_sys64(&r->h->recv_done, ++r->recv_done);
	return 1;
}

static int ring_step(struct ring *r)
{
	struct pp_desc batch[BATCH];
	uint64_t first = r->head;
	int n, last_sq = -1, rc = 0, got;

	if (r->failed)
		return 0;
	n = take(r, batch);
	for (int k = 0; k < n; k++)
		if (batch[k].op != PP_RECV)
			last_sq = k;
	for (int k = 0; k < n && !rc; k++)
		rc = post_one(r, &batch[k], k == last_sq, first + (uint64_t)k + 1);
	if (!rc)
		rc = reap(r);
	if (rc >= 0 && (got = receive(r)) != 0) {
		rc = got < 0 ? got : rc;
		n += got > 0;
	}
	if (rc < 0)
		fail(r, rc);
	return n;
}

static void *proxy_main(void *arg)
{
	struct timespec nap = {0, 200000};
	uint32_t idle = 0;

	(void)arg;
	while (!__atomic_load_n(&px.stop, __ATOMIC_ACQUIRE)) {
		int n = __atomic_load_n(&px.nrings, __ATOMIC_ACQUIRE), work = 0;

		for (int i = 0; i < n; i++)
			work += ring_step(&px.rings[i]);
		if (work)
			idle = 0;
		else if (!__atomic_load_n(&px.active, __ATOMIC_ACQUIRE))
			nanosleep(&nap, NULL); /* between launches: look every 200 us */
		else if (++idle > 16)
			sched_yield(); /* on two cores the device threads need one */
	}
	return NULL;
}

void perf_proxy_start(void)
{
	int ret;

	if (px.running)
		return;
	px.stop = 0;
	ret = pthread_create(&px.thread, NULL, proxy_main, NULL);
	if (ret)
		perf_fatal("cannot start the cpu-proxy thread: %s", strerror(ret));
	px.running = true;
}

struct pp_ring *perf_proxy_attach(struct gnic_qp *qp, bool on_gpu, uint8_t *lbase, uint32_t lkey,
                                  uint64_t rbase, uint32_t rkey, bool post_only)
{
	int n = __atomic_load_n(&px.nrings, __ATOMIC_ACQUIRE);
	struct ring *r = &px.rings[n];
	struct pp_ring init = {0};

	if (n == MAX_RINGS)
		perf_fatal("internal: more than %d proxy rings", MAX_RINGS);
	memset(r, 0, sizeof(*r));
	r->gqp = qp;
	r->qp = gnic_qp_dev(qp);
	r->on_gpu = on_gpu;
	r->lbase = lbase;
	r->lkey = lkey;
	r->rbase = rbase;
	r->rkey = rkey;
	r->post_only = post_only;
	r->h = on_gpu ? perf_gpu_alloc(sizeof(*r->h), 1) : perf_alloc(sizeof(*r->h));
	r->pcap = (uint64_t)r->qp->sq_wqe_cnt + PP_SLOTS;
	r->pend = calloc(r->pcap, sizeof(*r->pend));
	if (!r->pend)
		perf_fatal("out of memory for the proxy");
	init.h = r->h; /* pinned and mapped: the same address on the GPU (UVA) */
	r->dring = perf_devmem_alloc(on_gpu, sizeof(init));
	perf_devmem_put(on_gpu, r->dring, &init, sizeof(init));
	__atomic_store_n(&px.nrings, n + 1, __ATOMIC_RELEASE); /* the thread may use it now */
	return r->dring;
}

void perf_proxy_active(bool on)
{
	__atomic_store_n(&px.active, on, __ATOMIC_RELEASE);
}

void perf_proxy_stop(void)
{
	if (!px.running)
		return;
	__atomic_store_n(&px.stop, 1, __ATOMIC_RELEASE);
	pthread_join(px.thread, NULL);
	px.running = false;
	for (int i = 0; i < px.nrings; i++) {
		struct ring *r = &px.rings[i];

		free(r->pend);
		perf_devmem_free(r->on_gpu, r->dring, sizeof(*r->dring));
		if (r->on_gpu)
			perf_gpu_free(r->h, 1);
		else
			perf_free(r->h, sizeof(*r->h));
	}
	px.nrings = 0;
}
#endif
