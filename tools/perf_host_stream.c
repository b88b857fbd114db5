/* SPDX-License-Identifier: MIT */
/*
 * Host mode, streams: put_bw and get_bw (and the rate phase of
 * atomic_rate). Side A keeps up to tx-depth requests outstanding per QP,
 * posts them in chains of up to PERF_CHAIN with one ibv_post_send, signals
 * every Nth and polls completions in batches. Side B does no work during the
 * run; afterwards the side that holds the destination checks every slot
 * against the last pattern written to it.
 */
#include <stdio.h>

#include "perf.h"
#include "perf_pattern.h"

enum { STEP_READY = 1, STEP_DONE };

struct stream {
	struct perf_ep *ep;
	const struct perf_layout *l;
	enum ibv_wr_opcode op;
	long next[PERF_MAX_QPS]; /* next iteration of each QP */
	long end;
};

uint64_t perf_atomic_add(long i)
{
	return perf_pat_add(i);
}

/* Iteration i of QP q as a work request. */
static void stream_wr(struct stream *st, struct ibv_send_wr *wr, struct ibv_sge *sge, int q, long i)
{
	const struct perf_layout *l = st->l;
	size_t slot = perf_dst(l, (uint32_t)q, perf_stream_slot(l, i));
	uint32_t len = (uint32_t)l->size;

	switch (st->op) {
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* every QP adds to the one counter: slot (0, 0) of side B */
		perf_wr_init(wr, sge, st->ep, st->op, slot, 8, perf_dst(l, 0, 0));
		wr->wr.atomic.compare_add = perf_atomic_add(i);
		break;
	case IBV_WR_RDMA_READ:
		perf_wr_init(wr, sge, st->ep, st->op, slot, len,
		             perf_src(l, perf_stream_region(l, i)));
		break;
	default:
		perf_wr_init(wr, sge, st->ep, st->op, perf_src(l, perf_stream_region(l, i)), len,
		             slot);
		break;
	}
}

/* Posts what fits of QP q's remaining iterations as one chain. */
static int post_chain(struct stream *st, int q)
{
	struct ibv_send_wr wr[PERF_CHAIN];
	struct ibv_sge sge[PERF_CHAIN];
	uint32_t room = perf_sq_room(st->ep, q, st->ep->sq_depth);
	int n = 0;

	while ((uint32_t)n < room && n < PERF_CHAIN && st->next[q] < st->end) {
		long i = st->next[q];

		st->next[q] += st->ep->nqps;
		stream_wr(st, &wr[n], &sge[n], q, i);
		perf_sq_prepare(st->ep, q, &wr[n], st->next[q] >= st->end);
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
	}
	if (n)
		perf_sq_post(st->ep, q, wr);
	return n;
}

void perf_stream_post(struct perf_ep *ep, const struct perf_layout *l, enum ibv_wr_opcode op,
                      long first, long count)
{
	struct stream st = {.ep = ep, .l = l, .op = op, .end = first + count};
	int nq = ep->nqps;
	struct perf_wait w;
	bool more = true;

	for (int q = 0; q < nq; q++)
		st.next[q] = first + ((q - first % nq) + nq) % nq;
	perf_wait_start(&w, "send completions");
	while (more) {
		int work = 0;

		more = false;
		for (int q = 0; q < nq; q++) {
			work += post_chain(&st, q);
			more |= st.next[q] < st.end;
		}
		work += perf_sq_reap(ep);
		if (work)
			perf_wait_progress(&w);
		else
			perf_wait_tick(&w);
	}
	perf_sq_drain(ep);
}

static void timed_run(struct perf_session *s, enum ibv_wr_opcode op, const struct perf_layout *l,
                      struct perf_result *r)
{
	struct perf_ep *a = perf_a(s);
	uint64_t t0;

	if (s->args->warmup)
		perf_stream_post(a, l, op, 0, s->args->warmup);
	t0 = perf_now_ns();
	perf_stream_post(a, l, op, s->args->warmup, s->args->iters);
	r->elapsed_ns = (double)(perf_now_ns() - t0);
}

void perf_host_stream(struct perf_session *s, const struct perf_test *t, size_t size,
                      struct perf_result *r)
{
	bool put = t->id == PERF_PUT_BW, validate = s->args->validate, ok = true;
	enum perf_side src = put ? PERF_A : PERF_B, dst = put ? PERF_B : PERF_A;
	long total = s->args->iters + s->args->warmup;
	struct perf_layout l;

	perf_layout_for(&l, s->args, size);
	if (s->ep[src])
		perf_fill_sources(s->ep[src]->buf, &l, src);
	if (s->ep[dst] && validate)
		perf_stream_poison(s->ep[dst]->buf, &l, src, total);
	perf_session_barrier(s, STEP_READY);
	if (perf_a(s))
		timed_run(s, put ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ, &l, r);
	perf_session_barrier(s, STEP_DONE);
	if (s->ep[dst] && validate)
		ok = perf_stream_check(s->ep[dst]->buf, &l, src, total, "QP", dst);
	if (!put && !ok)
		perf_fatal("%s: data read back does not match", t->name);
	if (!perf_session_verdict(s, put ? ok : true))
		perf_fatal(perf_b(s) ? "%s: validation failed"
		                     : "%s: the server found a data mismatch (see its output)",
		           t->name);
}
