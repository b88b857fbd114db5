/* SPDX-License-Identifier: MIT */
/*
 * gnic-perf's device workers, written once for CUDA kernels (perf_dev_gpu.cu)
 * and CPU threads (perf_dev_cpu.c; gnic_dev.cuh compiles as C): the
 * operations the tests' device bodies use, the loops they share, the bodies
 * themselves (the PERF_DEV_PASS part of each test's file) and pd_worker(),
 * the whole of a device thread.
 *
 * The operations are gnic_dev.cuh's calls in every mode: the QP's doorbell
 * mode decides how work gets out (gpu, gpu-bf: the device thread rings;
 * cpu-assisted: libgnic's progress thread rings; cpu-proxy: libgnic's
 * proxy thread builds and posts the WQEs, GNIC_DB_PROXY). Everything above
 * them is the same code in every mode.
 */
#ifndef GNIC_PERF_DEV_WORKER_H
#define GNIC_PERF_DEV_WORKER_H
#define PERF_DEV_PASS

#include <gnic/gnic_dev.cuh>

#include "perf_dev.h"

struct pd_thread {
	uint32_t cta, tid, ntid, nctas;
};

/* Samples: SM cycles on a GPU (the host converts them with the run's
 * ns/cycle ratio), ns on CPU threads. */
GNIC_DEVFN uint64_t pd_clock(void)
{
#if GNIC_ON_GPU
	return (uint64_t)clock64();
#else
	return gnic_now_ns();
#endif
}

GNIC_DEVFN void pd_sync_cta(void)
{
#if GNIC_ON_GPU
	__syncthreads();
#endif
}

/* The thread that speaks for its warp / CTA (every thread at thread scope).
 * The warp's lanes are brought together first, with the mask the warp calls
 * use (gnic_warp_lanes). */
GNIC_DEVFN int pd_is_leader(uint32_t scope)
{
#if GNIC_ON_GPU
	if (scope == PERF_SCOPE_WARP) {
		__syncwarp(gnic_warp_lanes());
		return (threadIdx.x & 31) == 0;
	}
	if (scope == PERF_SCOPE_CTA)
		return threadIdx.x == 0;
#endif
	(void)scope;
	return 1;
}

/* A byte the NIC writes (a put_lat marker). */
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

/* Record the launch's first failure (later ones are dropped). */
GNIC_DEVFN int pd_fail(const struct pd_side *s, int rc, int op, uint32_t q, int64_t iter,
                       int64_t off, uint64_t got, uint64_t want)
{
	struct pd_status *st = s->st;

	if (rc == PD_PEER_FAILED || gnic_cas32(&st->claimed, 0, 1) != 0)
		return rc;
	st->op = op;
	st->q = q;
	st->iter = iter;
	st->off = off;
	st->got = got;
	st->want = want;
	gnic_store_rel32((uint32_t *)&st->rc, (uint32_t)rc);
	return rc;
}

/* Message iter at local offset off against the peer's region: 0, or the
 * failure recorded. */
GNIC_DEVFN int pd_check(const struct pd_side *s, uint64_t off, uint32_t region, int64_t iter)
{
	uint8_t seen = 0, want = 0;
	int64_t bad = s->validate ? perf_pat_find(s->lbase + off, s->r.size, s->side ^ 1, region, 0,
	                                          &seen, &want)
	                          : -1;

	return bad < 0 ? 0 : pd_fail(s, PD_BAD_DATA, PD_OP_CHECK, 0, iter, bad, seen, want);
}

/* ---- the operations: gnic_dev.cuh's calls -----------------------------------------------------
 */

/* len bytes from loff to the peer's roff at the side's scope (warp / CTA: every thread calls). */
GNIC_DEVFN int pd_put(const struct pd_side *s, struct gnic_dev_qp *q, uint64_t loff, uint64_t roff,
                      uint32_t len)
{
	uint8_t *l = s->lbase + loff;
	uint64_t ra = s->rbase + roff;

	if (s->scope == PERF_SCOPE_WARP)
		return gnic_dev_put_warp(q, l, s->lkey, ra, s->rkey, len, 0);
	if (s->scope == PERF_SCOPE_CTA)
		return gnic_dev_put_cta(q, l, s->lkey, ra, s->rkey, len, 0);
	return gnic_dev_put(q, l, s->lkey, ra, s->rkey, len, 0, 0);
}

/* Whether the next receive completion is there (an EXCLUSIVE QP: ours). */
GNIC_DEVFN int pd_recv_ready(const struct gnic_dev_qp *qp)
{
	const struct gnic_mlx5_cqe64 *cqe = &qp->rcq.buf[qp->rcq_ci & (qp->rcq.cqe_cnt - 1)];

	return gnic_mlx5_cqe_sw_owned((uint8_t)(gnic_cqe_tail(cqe) >> 24), (uint32_t)qp->rcq_ci,
	                              qp->rcq.cqe_cnt);
}

/* ---- shared loops ---------------------------------------------------------------------------- */

GNIC_DEVFN void pd_span(const struct pd_side *s, int end)
{
	if (end) {
		s->st->c_end = pd_clock();
		s->st->t_end = gnic_now_ns();
	} else {
		s->st->t_start = gnic_now_ns();
		s->st->c_start = pd_clock();
	}
}

/* Streams: device thread g of n does iterations first + g, first + g + n,
 * ... (first is a multiple of n: g is the ring's writer), then one thread a
 * CTA quiets its QP (quiet covers everything reserved on it before, so
 * every thread's work). count is a multiple of n, so warp and CTA calls see
 * every thread; their status is the same for the whole warp / CTA. */
typedef int pd_iter_fn(const struct pd_side *s, struct gnic_dev_qp *q, int64_t i, int *op);

GNIC_DEVFN void pd_stream(const struct pd_side *s, const struct pd_thread *t, pd_iter_fn *iter,
                          int quiet_qps)
{
	uint32_t qi = t->cta % s->nqps;
	struct gnic_dev_qp *q = s->qp[qi];
	uint64_t g = (uint64_t)t->cta * t->ntid + t->tid, n = (uint64_t)t->nctas * t->ntid;
	int64_t i, end = s->first + s->count;
	int rc = 0, op = 0;

	for (i = s->first + (int64_t)g; i < end && !rc; i += (int64_t)n)
		rc = iter(s, q, i, &op);
	if (rc)
		pd_fail(s, rc, op, qi, i - (int64_t)n, -1, 0, 0);
	pd_sync_cta();
	if (t->tid == 0 && quiet_qps && (rc = gnic_dev_quiet(q)) != 0)
		pd_fail(s, rc, PD_OP_QUIET, qi, end, -1, 0, 0);
}

/* A stream test's device body: name##_iter over the stream, QPs quieted or not. */
#define PD_STREAM_DEV(name, quiet)                                                                 \
	GNIC_DEVFN void name##_dev(const struct pd_side *s, const struct pd_thread *t)             \
	{                                                                                          \
		pd_stream(s, t, name##_iter, quiet);                                               \
	}

/* Ping-pongs, one device thread a side: message i goes from region i % nsrc
 * into the peer's slot i % 2. Side A times its send to the answer's
 * arrival (arrived(): non-blocking; take(): after it, e.g. consume the
 * receive), side B answers; each checks what it received, zeroes its
 * marker (the next message in the slot is then seen whatever it carries)
 * and hands the slot back (done(), may be NULL). */
typedef int pd_pp_fn(const struct pd_side *s, int64_t i);

/* Bounded, and over once the side in this process failed. */
GNIC_DEVFN int pd_pp_await(const struct pd_side *s, int64_t i, pd_pp_fn *arrived, pd_pp_fn *take)
{
	struct gnic_wait w;

	gnic_wait_init(&w, s->timeout_ns);
	while (!arrived(s, i)) {
		if (s->peer_st && gnic_load_acq32(&s->peer_st->claimed))
			return PD_PEER_FAILED;
		if (gnic_wait_expired(&w))
			return pd_fail(s, GNIC_DEV_ERR_TIMEOUT, PD_OP_WAIT, 0, i, -1, 0, 0);
	}
	return take ? take(s, i) : 0;
}

GNIC_DEVFN void pd_pingpong(const struct pd_side *s, pd_pp_fn *send, pd_pp_fn *arrived,
                            pd_pp_fn *take, pd_pp_fn *done)
{
	int64_t i, end = s->first + s->count;
	int rc = 0;

	pd_span(s, 0);
	for (i = s->first; i < end && !rc; i++) {
		uint64_t t0 = pd_clock();

		if (s->side == PERF_B && (rc = pd_pp_await(s, i, arrived, take)) != 0)
			break;
		if ((rc = send(s, i)) != 0)
			break;
		if (s->side == PERF_A) {
			if ((rc = pd_pp_await(s, i, arrived, take)) != 0)
				break;
			s->lat[i - s->first] = pd_clock() - t0;
		}
		rc = pd_check(s, perf_pp_slot(&s->r, i), perf_pp_region(&s->r, i), i);
		((volatile uint8_t *)s->lbase)[perf_pp_slot(&s->r, i) + s->r.size - 1] = 0;
		if (!rc && done)
			rc = done(s, i);
	}
	pd_span(s, 1);
	/* the last answer's source may be reused once the launch is over */
	if (rc == 0 && (rc = gnic_dev_quiet(s->qp[0])) != 0)
		pd_fail(s, rc, PD_OP_QUIET, 0, end, -1, 0, 0);
}

/* ---- the tests' device bodies, and the dispatch ---------------------------------------------- */
#include "atomic_lat.c"
#include "atomic_rate.c"
#include "dma_bw.c"
#include "eth_echo.c"
#include "get_bw.c"
#include "flag_lat.c"
#include "get_lat.c"
#include "memcpy.c"
#include "post_rate.c"
#include "put_bw.c"
#include "put_lat.c"
#include "send_lat.c"
#include "signal_lat.c"
#include "store_rate.c"

#define PD_CASE(name)                                                                              \
	case PERF_TEST_##name:                                                                     \
		name##_dev(s, t);                                                                  \
		break;

GNIC_DEVFN void pd_worker(const struct pd_side *s, const struct pd_thread *t)
{
	switch (s->test) {
		PERF_TESTS(PD_CASE)
	}
}

#endif /* GNIC_PERF_DEV_WORKER_H */
