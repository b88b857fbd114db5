/* SPDX-License-Identifier: MIT */
/*
 * Host mode, atomic_rate: 8-byte fetch-add on one counter of side B.
 *
 * Rate phase: a stream of fetch-adds over every QP, tx-depth outstanding
 * (the NIC itself bounds READ/ATOMIC in flight by max_rd_atomic). Latency
 * phase: one fetch-add at a time on QP 0; each value fetched must equal the
 * counter's exact value at that point. Afterwards side B checks that the
 * counter equals its start plus every addend.
 */
#include <stdio.h>
#include <string.h>

#include "perf.h"

enum { STEP_READY = 1, STEP_DONE };

#define COUNTER_BASE 0x0123456700000000ull

static uint64_t sum_adds(long first, long count)
{
	uint64_t sum = 0;

	for (long i = first; i < first + count; i++)
		sum += perf_atomic_add(i);
	return sum;
}

static uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void rate_phase(struct perf_session *s, const struct perf_layout *l, struct perf_result *r)
{
	struct perf_ep *a = perf_a(s);
	uint64_t t0;

	if (s->args->warmup)
		perf_stream_post(a, l, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, s->args->warmup);
	t0 = perf_now_ns();
	perf_stream_post(a, l, IBV_WR_ATOMIC_FETCH_AND_ADD, s->args->warmup, s->args->iters);
	r->elapsed_ns = (double)(perf_now_ns() - t0);
}

/* Iterations [first, first + iters) one at a time; the counter held
 * COUNTER_BASE plus every earlier addend before iteration first. */
static void latency_phase(struct perf_session *s, const struct perf_layout *l, long first,
                          struct perf_result *r)
{
	struct perf_ep *a = perf_a(s);
	uint64_t expect = COUNTER_BASE + sum_adds(0, first);
	uint8_t *result = a->buf + perf_dst(l, 0, 0);

	for (long k = 0; k < s->args->iters; k++) {
		struct ibv_send_wr wr;
		struct ibv_sge sge;
		uint64_t t0;

		perf_wr_init(&wr, &sge, a, IBV_WR_ATOMIC_FETCH_AND_ADD, perf_dst(l, 0, 0), 8,
		             perf_dst(l, 0, 0));
		wr.wr.atomic.compare_add = perf_atomic_add(first + k);
		t0 = perf_now_ns();
		perf_sq_post_wait(a, 0, &wr);
		r->lat_ns[k] = (double)(perf_now_ns() - t0);
		if (s->args->validate && load_u64(result) != expect)
			perf_fatal("fetch-add %ld fetched 0x%llx, the counter held 0x%llx",
			           first + k, (unsigned long long)load_u64(result),
			           (unsigned long long)expect);
		expect += perf_atomic_add(first + k);
	}
	r->nlat = s->args->iters;
}

static bool check_counter(struct perf_ep *b, const struct perf_layout *l, long total)
{
	uint64_t want = COUNTER_BASE + sum_adds(0, total);
	uint64_t got = load_u64(b->buf + perf_dst(l, 0, 0));

	if (got == want)
		return true;
	fflush(stdout);
	fprintf(stderr,
	        "gnic-perf: atomic counter is 0x%llx after %ld fetch-adds, expected 0x%llx "
	        "(difference %lld)\n",
	        (unsigned long long)got, total, (unsigned long long)want, (long long)(got - want));
	return false;
}

void perf_host_atomic(struct perf_session *s, struct perf_result *r)
{
	struct perf_ep *a = perf_a(s), *b = perf_b(s);
	long timed = s->args->warmup + s->args->iters;
	struct perf_layout l;
	uint64_t base = COUNTER_BASE;
	bool ok = true;

	perf_layout_atomic(&l, s->args->qps, s->args->tx_depth);
	if (b)
		memcpy(b->buf + perf_dst(&l, 0, 0), &base, 8);
	perf_session_barrier(s, STEP_READY);
	if (a) {
		rate_phase(s, &l, r);
		latency_phase(s, &l, timed, r);
	}
	perf_session_barrier(s, STEP_DONE);
	if (b && s->args->validate)
		ok = check_counter(b, &l, timed + s->args->iters);
	if (!perf_session_verdict(s, ok))
		perf_fatal(b ? "atomic_rate: validation failed"
		             : "atomic_rate: the server found a wrong counter (see its output)");
}
