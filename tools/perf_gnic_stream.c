/* SPDX-License-Identifier: MIT */
/*
 * libgnic modes, streams: put_bw, get_bw, atomic_rate and post_rate. Side
 * A's device threads stream; the side holding the destination checks every
 * slot afterwards against the last message written to it, as in host mode
 * (perf_host_stream.c), with one layout "QP" per device thread.
 *
 * Iterations are rounded up to a multiple of the device threads (each does
 * the same number: warp and CTA calls need every thread). Warm-up and timed
 * iterations are two launches; the timed one's duration is the row's.
 */
#include <stdio.h>
#include <string.h>

#include "perf_gnic.h"
#include "perf_pattern.h"

enum { STEP_READY = 1, STEP_DONE };

#define COUNTER_BASE 0x0123456700000000ull

/* Warm-up, then the timed launch of side A; returns the timed ns. */
static double warm_and_time(struct perf_session *s, struct pd_launch *L, long warm, long iters)
{
	struct perf_gep *eps[1] = {perf_ga(s)};

	if (warm) {
		L->side[0].first = 0;
		L->side[0].count = warm;
		perf_gnic_launch(s->args, eps, L);
	}
	L->side[0].first = warm;
	L->side[0].count = iters;
	return perf_gnic_launch(s->args, eps, L);
}

static void stream_launch(struct perf_session *s, struct pd_launch *L, enum pd_test test,
                          const struct perf_layout *l)
{
	const struct perf_args *a = s->args;

	memset(L, 0, sizeof(*L));
	L->nsides = 1;
	L->ctas = (uint32_t)a->ctas;
	L->threads = (uint32_t)a->threads;
	perf_gnic_side(a, perf_ga(s), &L->side[0], test, l);
}

void perf_gnic_stream(struct perf_session *s, const struct perf_test *t, size_t size,
                      struct perf_result *r)
{
	struct perf_args *a = s->args;
	bool put = t->id == PERF_PUT_BW, validate = a->validate, ok = true;
	enum perf_side src = put ? PERF_A : PERF_B, dst = put ? PERF_B : PERF_A;
	long warm = perf_gnic_round(a, a->warmup), iters = perf_gnic_round(a, a->iters);
	struct perf_gep *sep = s->gep[src], *dep = s->gep[dst];
	struct perf_layout l;
	struct pd_launch L;

	perf_layout_stream(&l, size, (int)perf_gnic_nthreads(a), warm + iters);
	if (sep) {
		perf_fill_sources(sep->host, &l, src);
		perf_gep_push(sep, l.src_off, l.dst_off - l.src_off);
	}
	if (dep && validate) {
		perf_stream_poison(dep->host, &l, src, warm + iters);
		perf_gep_push(dep, l.dst_off, l.total - l.dst_off);
	}
	perf_session_barrier(s, STEP_READY);
	if (perf_ga(s)) {
		stream_launch(s, &L, put ? PD_PUT_BW : PD_GET_BW, &l);
		r->elapsed_ns = warm_and_time(s, &L, warm, iters);
		r->iters = iters;
	}
	perf_session_barrier(s, STEP_DONE);
	if (dep && validate) {
		perf_gep_pull(dep, l.dst_off, l.total - l.dst_off);
		ok = perf_stream_check(dep->host, &l, src, warm + iters, "device thread", dst);
	}
	if (!put && !ok)
		perf_fatal("%s: data read back does not match", t->name);
	if (!perf_session_verdict(s, put ? ok : true))
		perf_fatal(perf_gb(s) ? "%s: validation failed"
		                      : "%s: the server found a data mismatch (see its output)",
		           t->name);
}

static uint64_t sum_adds(long first, long count)
{
	uint64_t sum = 0;

	for (long i = first; i < first + count; i++)
		sum += perf_pat_add(i);
	return sum;
}

/* Rate phase: every device thread adds (gnic_dev_signal: fetch-adds whose
 * values nobody reads), pipelined; latency phase: one fetch-add at a time
 * from one thread, each value fetched checked on the device. Side B then
 * checks the counter holds every addend. */
void perf_gnic_atomic(struct perf_session *s, struct perf_result *r)
{
	struct perf_args *a = s->args;
	long warm = perf_gnic_round(a, a->warmup), iters = perf_gnic_round(a, a->iters);
	long timed = warm + iters;
	struct perf_gep *b = perf_gb(s);
	uint64_t base = COUNTER_BASE, got;
	struct perf_layout l;
	struct pd_launch L;
	bool ok = true;

	perf_layout_atomic(&l, 1, 1);
	if (b) {
		memcpy(b->host + perf_dst(&l, 0, 0), &base, 8);
		perf_gep_push(b, perf_dst(&l, 0, 0), 8);
	}
	perf_session_barrier(s, STEP_READY);
	if (perf_ga(s)) {
		struct perf_gep *eps[1] = {perf_ga(s)};
		double rate_ns;

		stream_launch(s, &L, PD_ATOMIC_RATE, &l);
		L.side[0].sig_off = perf_dst(&l, 0, 0);
		rate_ns = warm_and_time(s, &L, warm, iters);
		L.ctas = L.threads = 1;
		L.side[0].test = PD_ATOMIC_LAT;
		L.side[0].first = timed;
		L.side[0].count = a->iters;
		L.side[0].warmup = 0;
		L.side[0].expect = base + sum_adds(0, timed);
		perf_gnic_want_samples(a, eps[0], &L.side[0]);
		perf_gnic_launch(a, eps, &L);
		perf_gnic_samples(a, eps[0], &L.side[0], false, r);
		r->elapsed_ns = rate_ns;
		r->iters = iters;
	}
	perf_session_barrier(s, STEP_DONE);
	if (b && a->validate) {
		uint64_t want = base + sum_adds(0, timed + a->iters);

		perf_gep_pull(b, perf_dst(&l, 0, 0), 8);
		memcpy(&got, b->host + perf_dst(&l, 0, 0), 8);
		ok = got == want;
		if (!ok)
			fprintf(
			    stderr,
			    "gnic-perf: atomic counter is 0x%llx after %ld fetch-adds, expected "
			    "0x%llx (difference %lld)\n",
			    (unsigned long long)got, timed + a->iters, (unsigned long long)want,
			    (long long)(got - want));
	}
	if (!perf_session_verdict(s, ok))
		perf_fatal(b ? "atomic_rate: validation failed"
		             : "atomic_rate: the server found a wrong counter (see its output)");
}

/* BBs each QP takes in a post_rate launch of count iterations: one WRITE per
 * iteration, CTA c on QP c % qps. */
static void count_bbs(const struct perf_args *a, long count, uint64_t *bb)
{
	uint64_t per_thread = (uint64_t)count / perf_gnic_nthreads(a);

	for (int c = 0; c < a->ctas; c++)
		bb[c % a->qps] += per_thread * (uint64_t)a->threads;
}

/* The proxy's QPs live in host memory (a context without GPU): checked
 * here, while the proxy is idle; the status goes where the launches' does. */
static void post_check_proxy(const struct perf_args *a, struct perf_gep *ep, struct pd_side *ps)
{
	struct pd_status st;

	memset(&st, 0, sizeof(st));
	for (int q = 0; q < a->qps; q++)
		ps->qp[q] = (struct pd_qp){.qp = gnic_qp_dev(ep->qp[q])};
	ps->st = &st;
	perf_cpu_post_check(ps);
	perf_devmem_to_dev(a, ep->st, &st, sizeof(st));
	ps->st = ep->st;
	perf_gnic_check(a, ep);
}

/* After the row: counters, doorbell and WQE bytes of every QP (pd_post_check
 * in perf_dev_worker.h), where the QPs' structs live: a one-thread launch
 * (a kernel for a GPU context), or here for the proxy's QPs. */
static void post_check(struct perf_session *s, struct pd_launch *L, const uint64_t *from,
                       const uint64_t *want)
{
	struct perf_args *a = s->args;
	struct perf_gep *ep = perf_ga(s), *eps[1] = {ep};
	struct pd_side *ps = &L->side[0];

	ps->test = PD_POST_CHECK;
	L->ctas = L->threads = 1;
	memcpy(ps->from_bb, from, sizeof(ps->from_bb));
	memcpy(ps->want_bb, want, sizeof(ps->want_bb));
	if (a->mode->proxy)
		post_check_proxy(a, ep, ps);
	else
		perf_gnic_launch(a, eps, L);
}

void perf_gnic_post_rate(struct perf_session *s, size_t size, struct perf_result *r)
{
	struct perf_args *a = s->args;
	long warm = perf_gnic_round(a, a->warmup), iters = perf_gnic_round(a, a->iters);
	struct perf_gep *ep = perf_ga(s);
	uint64_t from[PD_MAX_QPS], add[PD_MAX_QPS] = {0};
	struct perf_layout l;
	struct pd_launch L;

	perf_layout_stream(&l, size, (int)perf_gnic_nthreads(a), warm + iters);
	memcpy(from, ep->posted, sizeof(from));
	stream_launch(s, &L, PD_POST_RATE, &l);
	r->elapsed_ns = warm_and_time(s, &L, warm, iters);
	r->iters = iters;
	count_bbs(a, warm + iters, add);
	for (int q = 0; q < a->qps; q++)
		ep->posted[q] += add[q];
	if (a->validate)
		post_check(s, &L, from, ep->posted);
}
