/* SPDX-License-Identifier: MIT */
/*
 * The operations gnic-perf's device workers use, for CUDA kernels and CPU
 * threads alike (gnic_dev.cuh compiles for both). This is the hand-off
 * point between the modes: a QP with a gnic_dev_qp is driven by the device
 * thread itself (gpu, gpu-bf, cpu-assisted: the doorbell mode is a property
 * of the QP); a QP with a pp_ring goes through the cpu-proxy thread, which
 * gets a descriptor and does the posting. Everything above these calls is
 * the same code in every mode.
 */
#ifndef GNIC_PERF_DEV_OPS_H
#define GNIC_PERF_DEV_OPS_H

#include <gnic/gnic_dev.cuh>

#include "perf_dev.h"

/* ---- CTA-wide helpers ---------------------------------------------------------- */

GNIC_DEVFN void pd_sync_cta(void)
{
#if GNIC_ON_GPU
	__syncthreads();
#endif
}

/* The thread that speaks for its warp / CTA (every thread at thread scope). */
GNIC_DEVFN int pd_is_leader(uint32_t scope)
{
#if GNIC_ON_GPU
	if (scope == PD_SCOPE_WARP)
		return (threadIdx.x & 31) == (uint32_t)(__ffs(__activemask()) - 1);
	if (scope == PD_SCOPE_CTA)
		return threadIdx.x == 0;
#else
	(void)scope;
#endif
	return 1;
}

/* A byte the NIC writes (the marker of a put_lat message). */
GNIC_DEVFN uint8_t pd_load_acq8(const uint8_t *p)
{
#if GNIC_ON_GPU
	uint32_t v;

	asm volatile("ld.acquire.sys.global.u8 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return (uint8_t)v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/* ---- cpu-proxy: the device side ------------------------------------------------- */

GNIC_DEVFN int pp_failed(const struct pp_ring *r)
{
	return gnic_load_sys32(&r->h->status) != 0;
}

/* Wait until host word *p reaches want (the proxy's progress counters). */
GNIC_DEVFN int pp_wait_ge(const struct pp_ring *r, const uint64_t *p, uint64_t want,
                          uint64_t timeout_ns)
{
	struct gnic_wait w;

	if (gnic_load_sys64(p) >= want)
		return GNIC_DEV_OK;
	gnic_wait_init(&w, timeout_ns);
	while (gnic_load_sys64(p) < want) {
		if (pp_failed(r))
			return GNIC_DEV_ERR_QP;
		if (gnic_wait_expired(&w))
			return GNIC_DEV_ERR_TIMEOUT;
	}
	return GNIC_DEV_OK;
}

/* Take n consecutive slots; *first = the first. Waits while the proxy has not
 * yet copied out the descriptors n slots back. */
GNIC_DEVFN int pp_reserve(struct pp_ring *r, uint32_t n, uint64_t timeout_ns, uint64_t *first)
{
	uint64_t f;

	if (pp_failed(r))
		return GNIC_DEV_ERR_QP;
	f = gnic_add64(&r->reserved, n);
	*first = f;
	return pp_wait_ge(r, &r->h->consumed, f + n > r->nslots ? f + n - r->nslots : 0,
	                  timeout_ns);
}

/* Fill slot idx; the seq store (release, system scope) publishes it. */
GNIC_DEVFN void pp_write(struct pp_ring *r, uint64_t idx, uint32_t op, uint32_t len, uint64_t loff,
                         uint64_t roff, uint64_t arg0, uint64_t arg1)
{
	struct pp_desc *d = &r->h->desc[idx & (r->nslots - 1)];

	d->op = op;
	d->len = len;
	d->loff = loff;
	d->roff = roff;
	d->arg0 = arg0;
	d->arg1 = arg1;
	gnic_store_sys64(&d->seq, idx + 1);
}

/* One descriptor per calling thread. At warp or CTA scope on a GPU one
 * thread reserves for all (one atomic instead of 32 or blockDim), then
 * every thread writes its own: the proxy sees the same descriptors either
 * way. *ticket (may be NULL): give pp_wait_done() to wait for this one. */
GNIC_DEVFN int pp_post(struct pp_ring *r, uint32_t scope, uint64_t tmo, uint32_t op, uint32_t len,
                       uint64_t loff, uint64_t roff, uint64_t arg0, uint64_t arg1, uint64_t *ticket)
{
	uint64_t idx;
	int rc;

#if GNIC_ON_GPU
	if (scope == PD_SCOPE_WARP) {
		unsigned mask = __activemask();
		int lane = threadIdx.x & 31, leader = __ffs(mask) - 1;
		uint32_t n = __popc(mask), rank = __popc(mask & ((1u << lane) - 1));
		unsigned long long base = 0;

		rc = 0;
		if (lane == leader)
			rc = pp_reserve(r, n, tmo, (uint64_t *)&base);
		rc = __shfl_sync(mask, rc, leader);
		if (rc)
			return rc;
		idx = __shfl_sync(mask, base, leader) + rank;
		pp_write(r, idx, op, len, loff, roff, arg0, arg1);
		if (ticket)
			*ticket = idx + 1;
		return GNIC_DEV_OK;
	}
	if (scope == PD_SCOPE_CTA) {
		__shared__ unsigned long long cta_base;
		__shared__ int cta_rc;

		__syncthreads(); /* an earlier call's readers are done with cta_rc */
		if (threadIdx.x == 0)
			cta_rc = pp_reserve(r, blockDim.x, tmo, (uint64_t *)&cta_base);
		__syncthreads();
		rc = cta_rc;
		if (rc)
			return rc;
		idx = cta_base + threadIdx.x;
		pp_write(r, idx, op, len, loff, roff, arg0, arg1);
		if (ticket)
			*ticket = idx + 1;
		return GNIC_DEV_OK;
	}
#else
	(void)scope;
#endif
	rc = pp_reserve(r, 1, tmo, &idx);
	if (rc)
		return rc;
	pp_write(r, idx, op, len, loff, roff, arg0, arg1);
	if (ticket)
		*ticket = idx + 1;
	return GNIC_DEV_OK;
}

/* Every descriptor below ticket has completed. */
GNIC_DEVFN int pp_wait_done(struct pp_ring *r, uint64_t ticket, uint64_t tmo)
{
	return pp_wait_ge(r, &r->h->done, ticket, tmo);
}

/* ---- the operations, either way ------------------------------------------------- */

GNIC_DEVFN const void *pd_l(const struct pd_side *s, uint64_t off)
{
	return s->mem.lbase + off;
}

/* Put len bytes at the side's scope (warp / CTA: every thread calls). */
GNIC_DEVFN int pd_put(const struct pd_side *s, const struct pd_qp *q, uint64_t loff, uint64_t roff,
                      uint32_t len)
{
	const struct pd_mem *m = &s->mem;

	if (q->ring)
		return pp_post(q->ring, s->scope, s->timeout_ns, PP_PUT, len, loff, roff, 0, 0,
		               NULL);
	if (s->scope == PD_SCOPE_WARP)
		return gnic_dev_put_warp(q->qp, pd_l(s, loff), m->lkey, m->rbase + roff, m->rkey,
		                         len, 0);
	if (s->scope == PD_SCOPE_CTA)
		return gnic_dev_put_cta(q->qp, pd_l(s, loff), m->lkey, m->rbase + roff, m->rkey,
		                        len, 0);
	return gnic_dev_put(q->qp, pd_l(s, loff), m->lkey, m->rbase + roff, m->rkey, len, 0, NULL);
}

/* Get len bytes from the peer's roff into loff; completes at quiet. */
GNIC_DEVFN int pd_get(const struct pd_side *s, const struct pd_qp *q, uint64_t loff, uint64_t roff,
                      uint32_t len)
{
	const struct pd_mem *m = &s->mem;

	if (q->ring)
		return pp_post(q->ring, PD_SCOPE_THREAD, s->timeout_ns, PP_GET, len, loff, roff, 0,
		               0, NULL);
	return gnic_dev_get(q->qp, (void *)pd_l(s, loff), m->lkey, m->rbase + roff, m->rkey, len,
	                    NULL);
}

/* Get, returning once the data is in place. */
GNIC_DEVFN int pd_get_wait(const struct pd_side *s, const struct pd_qp *q, uint64_t loff,
                           uint64_t roff, uint32_t len)
{
	const struct pd_mem *m = &s->mem;
	uint64_t ticket;
	int rc;

	if (!q->ring)
		return gnic_dev_get_wait(q->qp, (void *)pd_l(s, loff), m->lkey, m->rbase + roff,
		                         m->rkey, len);
	rc = pp_post(q->ring, PD_SCOPE_THREAD, s->timeout_ns, PP_GET, len, loff, roff, 0, 0,
	             &ticket);
	return rc ? rc : pp_wait_done(q->ring, ticket, s->timeout_ns);
}

/* Put, then add to the peer's 64-bit word at sig_roff (one reservation). */
GNIC_DEVFN int pd_put_signal(const struct pd_side *s, const struct pd_qp *q, uint64_t loff,
                             uint64_t roff, uint32_t len, uint64_t sig_roff, uint64_t add)
{
	const struct pd_mem *m = &s->mem;

	if (q->ring)
		return pp_post(q->ring, PD_SCOPE_THREAD, s->timeout_ns, PP_PUT_SIGNAL, len, loff,
		               roff, sig_roff, add, NULL);
	return gnic_dev_put_signal(q->qp, pd_l(s, loff), m->lkey, m->rbase + roff, m->rkey, len,
	                           m->rbase + sig_roff, m->rkey, add, 0);
}

/* Non-fetching add to the peer's word at roff (completes at quiet). */
GNIC_DEVFN int pd_add(const struct pd_side *s, const struct pd_qp *q, uint64_t roff, uint64_t add)
{
	if (q->ring)
		return pp_post(q->ring, PD_SCOPE_THREAD, s->timeout_ns, PP_ADD, 8, 0, roff, add, 0,
		               NULL);
	return gnic_dev_signal(q->qp, s->mem.rbase + roff, s->mem.rkey, add, 0);
}

/* Fetch-add, returning the previous value. res: this thread's result slot
 * in the proxy's ring (unused otherwise). */
GNIC_DEVFN int pd_fetch_add(const struct pd_side *s, const struct pd_qp *q, uint64_t roff,
                            uint64_t add, uint32_t res, uint64_t *old)
{
	uint64_t ticket;
	int rc;

	if (!q->ring)
		return gnic_dev_atomic_fetch_add(q->qp, s->mem.rbase + roff, s->mem.rkey, add, old);
	res %= PP_NRES;
	rc = pp_post(q->ring, PD_SCOPE_THREAD, s->timeout_ns, PP_FADD, 8, 0, roff, add, res,
	             &ticket);
	if (rc == GNIC_DEV_OK)
		rc = pp_wait_done(q->ring, ticket, s->timeout_ns);
	if (rc == GNIC_DEV_OK)
		*old = gnic_load_sys64(&q->ring->h->result[res]);
	return rc;
}

GNIC_DEVFN int pd_send(const struct pd_side *s, const struct pd_qp *q, uint64_t loff, uint32_t len)
{
	if (q->ring)
		return pp_post(q->ring, PD_SCOPE_THREAD, s->timeout_ns, PP_SEND, len, loff, 0, 0, 0,
		               NULL);
	return gnic_dev_send(q->qp, pd_l(s, loff), s->mem.lkey, len, 0);
}

GNIC_DEVFN int pd_recv_post(const struct pd_side *s, const struct pd_qp *q, uint64_t loff,
                            uint32_t len)
{
	if (q->ring)
		return pp_post(q->ring, PD_SCOPE_THREAD, s->timeout_ns, PP_RECV, len, loff, 0, 0, 0,
		               NULL);
	return gnic_dev_recv_post(q->qp, (void *)pd_l(s, loff), s->mem.lkey, len);
}

/* Whether pd_recv_wait(n) would return at once. */
GNIC_DEVFN int pd_recv_ready(const struct pd_qp *q, uint64_t n)
{
	const struct gnic_dev_qp *qp = q->qp;
	const struct gnic_mlx5_cqe64 *cqe;

	if (q->ring)
		return gnic_load_sys64(&q->ring->h->recv_done) >= n;
	/* the next receive CQE is ours (an EXCLUSIVE QP: no other consumer) */
	cqe = &qp->rcq.buf[qp->rcq_ci & (qp->rcq.cqe_cnt - 1)];
	return gnic_mlx5_cqe_sw_owned((uint8_t)(gnic_cqe_tail(cqe) >> 24), (uint32_t)qp->rcq_ci,
	                              qp->rcq.cqe_cnt);
}

/* Wait for the ring's receive completion number n (1, 2, ... since the QP
 * was created); *len gets its bytes. */
GNIC_DEVFN int pd_recv_wait(const struct pd_side *s, const struct pd_qp *q, uint64_t n,
                            uint32_t *len)
{
	int rc;

	if (!q->ring)
		return gnic_dev_recv_wait(q->qp, len, NULL);
	rc = pp_wait_ge(q->ring, &q->ring->h->recv_done, n, s->timeout_ns);
	if (rc == GNIC_DEV_OK)
		*len = gnic_load_sys32(&q->ring->h->recv_len[(n - 1) % PP_RLEN]);
	return rc;
}

/* Everything posted on q before the call has completed. */
GNIC_DEVFN int pd_quiet(const struct pd_side *s, const struct pd_qp *q)
{
	if (q->ring)
		return pp_wait_done(q->ring, gnic_load_acq64(&q->ring->reserved), s->timeout_ns);
	return gnic_dev_quiet(q->qp);
}

/* post_rate: retire every published WQE as if its CQE had come (the QP is
 * not connected, the NIC ignores its doorbells). sq_retired is what
 * gnic_dev_scq_poll() advances, under the same lock; only published BBs
 * are retired, so no slot a writer still fills is handed out again. */
GNIC_DEVFN int pd_retire(const struct pd_side *s, struct gnic_dev_qp *qp)
{
	struct gnic_wait w;
	uint64_t ready;

	gnic_wait_init_short(&w, s->timeout_ns);
	while (!gnic_dev_lock(qp, &qp->scq_lock))
		if (gnic_wait_expired(&w))
			return GNIC_DEV_ERR_TIMEOUT;
	ready = gnic_load_acq64(&qp->sq_ready);
	if (ready > qp->sq_retired)
		gnic_store_rel64(&qp->sq_retired, ready);
	gnic_dev_unlock(qp, &qp->scq_lock);
	return GNIC_DEV_OK;
}

#endif /* GNIC_PERF_DEV_OPS_H */
