/* SPDX-License-Identifier: MIT */
/*
 * The cpu-proxy mode's CPU thread, one per process (the shape of NVSHMEM's
 * IBRC proxy): device threads put small descriptors into a ring per QP in
 * pinned host memory (perf_dev_ops.h); this thread polls every ring in
 * order, builds and posts a WQE per descriptor, polls the completions and
 * reports back through the same host memory: how many descriptors it has
 * taken (their slots are free), how many have completed (what the device's
 * quiet waits for), fetched values and receive completions.
 *
 * It drives its QPs with the C build of gnic_dev.cuh, on QPs of a context
 * created with gpu = GNIC_GPU_NONE (perf_gep.c), rather than with verbs:
 * the WQEs it posts are then byte for byte the ones the GPU modes build
 * (same builder, same CQE moderation, same completion accounting), so the
 * modes differ only in who posts; and libgnic keeps choosing the provider
 * (rdma-core or gnic-emu) for it as for every other mode. Its QPs are
 * GNIC_SHARE_EXCLUSIVE: this thread is their only user.
 *
 * Completions: the last WQE of every batch taken from a ring asks for a
 * CQE, so everything posted completes without waiting for cqe_every more.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnic/gnic_dev.cuh>

#include "perf_gnic.h"

#define PROXY_MAX_RINGS (2 * PERF_MAX_QPS)
#define PROXY_BATCH     32

/* A posted descriptor whose completion has not been reported yet. */
struct pend {
	uint64_t desc_end; /* descriptors done once this one is */
	uint64_t ticket;   /* its WQEs end below this SQ index */
	int32_t res;       /* FADD: result slot, else -1 */
	uint32_t scratch;  /* FADD: where the NIC put the fetched value */
};

struct proxy_ring {
	struct gnic_qp *gqp;
	struct gnic_dev_qp *qp; /* host memory: a context without GPU */
	struct pp_host *h;
	uint8_t *lbase;
	uint64_t rbase;
	uint32_t lkey, rkey;
	bool post_only, failed;
	uint64_t head, done, recv_done;
	struct pend *pend;
	uint64_t pcap, phead, ptail; /* FIFO: phead - ptail entries */
};

static struct {
	pthread_t thread;
	bool running;
	int stop, active, nrings;
	struct proxy_ring rings[PROXY_MAX_RINGS];
} px;

static void fail(struct proxy_ring *r, int rc)
{
	struct gnic_qp_error e;

	r->failed = true;
	gnic_store_sys32(&r->h->status, (uint32_t)rc);
	if (gnic_qp_error(r->gqp, &e) == GNIC_OK && e.dev_status)
		fprintf(stderr, "gnic-perf: cpu-proxy: QP error: %s\n", e.text);
}

static void pend_push(struct proxy_ring *r, uint64_t desc_end, int32_t res, uint64_t idx)
{
	struct pend *p = &r->pend[r->phead++ % r->pcap];

	p->desc_end = desc_end;
	p->ticket = r->qp->sq_reserved;
	p->res = res;
	p->scratch = (uint32_t)(idx & (2 * (uint64_t)r->qp->sq_wqe_cnt - 1));
}

/* A fetching add: its value lands in the QP's scratch slot of its WQE. */
static int post_fadd(struct proxy_ring *r, const struct pp_desc *d, uint64_t *idx)
{
	union gnic_bb bb;
	int rc = gnic_dev_sq_reserve(r->qp, 1, idx);

	if (rc)
		return rc;
	gnic_dev_wqe_atomic(r->qp, *idx, GNIC_MLX5_OPCODE_ATOMIC_FA, r->rbase + d->roff, r->rkey,
	                    d->arg0, 0, GNIC_DEV_F_SIGNAL, &bb);
	return gnic_dev_sq_commit(r->qp, *idx, 1, &bb);
}

static int post_one(struct proxy_ring *r, const struct pp_desc *d, bool signal, uint64_t desc_end)
{
	struct gnic_dev_qp *qp = r->qp;
	uint32_t f = signal ? GNIC_DEV_F_SIGNAL : 0;
	void *l = r->lbase + d->loff;
	uint64_t ra = r->rbase + d->roff, idx = 0;
	int32_t res = -1;
	int rc;

	switch (d->op) {
	case PP_PUT:
		rc = gnic_dev_post_rdma(qp, GNIC_MLX5_OPCODE_RDMA_WRITE, l, r->lkey, ra, r->rkey,
		                        d->len, f, 0, NULL);
		break;
	case PP_GET:
		rc = gnic_dev_post_rdma(qp, GNIC_MLX5_OPCODE_RDMA_READ, l, r->lkey, ra, r->rkey,
		                        d->len, f, 0, NULL);
		break;
	case PP_SEND:
		rc = gnic_dev_post_rdma(qp, GNIC_MLX5_OPCODE_SEND, l, r->lkey, 0, 0, d->len, f, 0,
		                        NULL);
		break;
	case PP_PUT_SIGNAL:
		rc = gnic_dev_put_signal(qp, l, r->lkey, ra, r->rkey, d->len, r->rbase + d->arg0,
		                         r->rkey, d->arg1, f);
		break;
	case PP_ADD:
		rc = gnic_dev_signal(qp, ra, r->rkey, d->arg0, f);
		break;
	case PP_FADD:
		rc = post_fadd(r, d, &idx);
		res = (int32_t)(d->arg1 % PP_NRES);
		break;
	case PP_RECV:
		rc = gnic_dev_recv_post(qp, l, r->lkey, d->len);
		break;
	default:
		rc = GNIC_DEV_ERR_INVAL;
		break;
	}
	if (rc)
		return rc;
	/* post_rate: nothing will ever complete; free the space at once */
	if (r->post_only)
		gnic_store_rel64(&qp->sq_retired, qp->sq_ready);
	pend_push(r, desc_end, res, idx);
	return GNIC_DEV_OK;
}

/* Copy out what device threads have published, up to a batch. */
static int take(struct proxy_ring *r, struct pp_desc *batch)
{
	int n = 0;

	while (n < PROXY_BATCH && r->phead - r->ptail + (uint64_t)n < r->pcap) {
		struct pp_desc *d = &r->h->desc[r->head & (PP_SLOTS - 1)];

		if (__atomic_load_n(&d->seq, __ATOMIC_ACQUIRE) != r->head + 1)
			break;
		batch[n++] = *d;
		r->head++;
	}
	if (n) /* the slots are ours no longer */
		__atomic_store_n(&r->h->consumed, r->head, __ATOMIC_RELEASE);
	return n;
}

/* Report completed descriptors (in order). */
static int reap(struct proxy_ring *r)
{
	uint64_t retired;
	int rc = 0;

	if (!r->post_only && r->phead != r->ptail)
		rc = gnic_dev_scq_poll(r->qp);
	if (rc < 0)
		return rc;
	retired = gnic_load_acq64(&r->qp->sq_retired);
	while (r->ptail != r->phead && r->pend[r->ptail % r->pcap].ticket <= retired) {
		struct pend *p = &r->pend[r->ptail++ % r->pcap];

		if (p->res >= 0)
			r->h->result[p->res] = gnic_load_sys64(&r->qp->scratch[p->scratch]);
		r->done = p->desc_end;
	}
	if (r->done != gnic_load_acq64(&r->h->done))
		gnic_store_sys64(&r->h->done, r->done);
	return rc;
}

/* A receive completion, if one is there (gnic_dev_recv_wait would wait). */
static int receive(struct proxy_ring *r)
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

static int ring_step(struct proxy_ring *r)
{
	struct pp_desc batch[PROXY_BATCH];
	int n, last_sq = -1, rc = 0;
	uint64_t first = r->head;

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
	if (rc >= 0) {
		int got = receive(r);

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
		if (work) {
			idle = 0;
		} else if (!__atomic_load_n(&px.active, __ATOMIC_ACQUIRE)) {
			nanosleep(&nap, NULL);
		} else if (++idle > 16) {
			sched_yield(); /* CI has two cores: the device threads need one */
		}
	}
	return NULL;
}

void perf_proxy_start(int timeout_s)
{
	int ret;

	(void)timeout_s; /* every wait of the proxy is bounded by its QPs' timeout */
	if (px.running)
		return;
	px.stop = 0;
	px.nrings = 0;
	ret = pthread_create(&px.thread, NULL, proxy_main, NULL);
	if (ret)
		perf_fatal("cannot start the cpu-proxy thread: %s", strerror(ret));
	px.running = true;
}

void perf_proxy_add(struct gnic_qp *qp, struct pp_host *h, uint8_t *lbase, uint32_t lkey,
                    uint64_t rbase, uint32_t rkey, bool post_only)
{
	int n = __atomic_load_n(&px.nrings, __ATOMIC_ACQUIRE);
	struct proxy_ring *r = &px.rings[n];
	struct gnic_dev_qp *dqp = gnic_qp_dev(qp);

	if (n == PROXY_MAX_RINGS)
		perf_fatal("internal: more than %d proxy rings", PROXY_MAX_RINGS);
	memset(r, 0, sizeof(*r));
	r->gqp = qp;
	r->qp = dqp;
	r->h = h;
	r->lbase = lbase;
	r->lkey = lkey;
	r->rbase = rbase;
	r->rkey = rkey;
	r->post_only = post_only;
	r->pcap = (uint64_t)dqp->sq_wqe_cnt + PP_SLOTS;
	r->pend = calloc(r->pcap, sizeof(*r->pend));
	if (!r->pend)
		perf_fatal("out of memory for the proxy");
	__atomic_store_n(&px.nrings, n + 1, __ATOMIC_RELEASE); /* the thread may use it now */
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
	for (int i = 0; i < px.nrings; i++)
		free(px.rings[i].pend);
	px.nrings = 0;
}
