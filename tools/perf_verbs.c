/* SPDX-License-Identifier: MIT */
/*
 * Posting and polling for the host mode, with the bookkeeping every test
 * shares: each QP numbers its send work requests (wr_id = seq << 8 | qp),
 * signals every Nth one, and a completion with sequence k retires k and
 * everything before it, as RC ordering guarantees. Any error completion
 * ends the run with its status and wr_id.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"

#define WRID_QP_BITS 8

void perf_check_wc(const struct ibv_wc *wc, const char *where)
{
	if (wc->status == IBV_WC_SUCCESS)
		return;
	perf_fatal("error completion on the %s: %s (status %d, vendor error 0x%x), wr_id 0x%llx, "
	           "opcode %d, QP 0x%x",
	           where, ibv_wc_status_str(wc->status), wc->status, wc->vendor_err,
	           (unsigned long long)wc->wr_id, wc->opcode, wc->qp_num);
}

static bool is_inline_op(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND;
}

void perf_wr_init(struct ibv_send_wr *wr, struct ibv_sge *sge, struct perf_ep *ep,
                  enum ibv_wr_opcode op, size_t local_off, uint32_t len, size_t remote_off)
{
	*sge = (struct ibv_sge){
	    .addr = (uintptr_t)(ep->buf + local_off), .length = len, .lkey = ep->mr->lkey};
	*wr = (struct ibv_send_wr){.sg_list = sge, .num_sge = 1, .opcode = op};
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr->wr.atomic.remote_addr = ep->remote.addr + remote_off;
		wr->wr.atomic.rkey = ep->remote.rkey;
	} else {
		wr->wr.rdma.remote_addr = ep->remote.addr + remote_off;
		wr->wr.rdma.rkey = ep->remote.rkey;
	}
	/* Small messages go inline, as perftest does: no local DMA read. */
	if (is_inline_op(op) && len <= ep->max_inline)
		wr->send_flags |= IBV_SEND_INLINE;
}

void perf_sq_prepare(struct perf_ep *ep, int q, struct ibv_send_wr *wr, bool last)
{
	uint64_t seq = ++ep->sq_posted[q];

	wr->wr_id = seq << WRID_QP_BITS | (uint64_t)q;
	if (last || seq % ep->sq_signal == 0)
		wr->send_flags |= IBV_SEND_SIGNALED;
}

void perf_sq_post(struct perf_ep *ep, int q, struct ibv_send_wr *first)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(ep->qp[q], first, &bad);

	if (ret)
		perf_fatal("ibv_post_send on QP 0x%x: %s (at wr_id 0x%llx)", ep->qp[q]->qp_num,
		           strerror(ret), bad ? (unsigned long long)bad->wr_id : 0ull);
}

uint32_t perf_sq_room(const struct perf_ep *ep, int q, uint32_t depth)
{
	uint64_t used = ep->sq_posted[q] - ep->sq_done[q];

	return used >= depth ? 0 : (uint32_t)(depth - used);
}

static void retire(struct perf_ep *ep, const struct ibv_wc *wc)
{
	int q = (int)(wc->wr_id & ((1u << WRID_QP_BITS) - 1));
	uint64_t seq = wc->wr_id >> WRID_QP_BITS;

	perf_check_wc(wc, "send CQ");
	if (q >= ep->nqps || seq <= ep->sq_done[q] || seq > ep->sq_posted[q])
		perf_fatal("send completion out of order: wr_id 0x%llx (QP %d has %llu posted, "
		           "%llu completed)",
		           (unsigned long long)wc->wr_id, q,
		           q < ep->nqps ? (unsigned long long)ep->sq_posted[q] : 0ull,
		           q < ep->nqps ? (unsigned long long)ep->sq_done[q] : 0ull);
	ep->sq_done[q] = seq;
}

int perf_sq_reap(struct perf_ep *ep)
{
	struct ibv_wc wc[PERF_POLL_BATCH];
	int n = ibv_poll_cq(ep->scq, PERF_POLL_BATCH, wc);

	if (n < 0)
		perf_fatal("ibv_poll_cq (send CQ) failed: %d", n);
	for (int i = 0; i < n; i++)
		retire(ep, &wc[i]);
	return n;
}

void perf_sq_wait_room(struct perf_ep *ep, int q, uint32_t depth)
{
	struct perf_wait w;

	if (perf_sq_room(ep, q, depth))
		return;
	perf_wait_start(&w, "send completions");
	while (!perf_sq_room(ep, q, depth))
		if (perf_sq_reap(ep))
			perf_wait_progress(&w);
		else
			perf_wait_tick(&w);
}

static bool sq_idle(const struct perf_ep *ep)
{
	for (int q = 0; q < ep->nqps; q++)
		if (ep->sq_done[q] != ep->sq_posted[q])
			return false;
	return true;
}

void perf_sq_drain(struct perf_ep *ep)
{
	struct perf_wait w;

	perf_wait_start(&w, "the last send completions");
	while (!sq_idle(ep))
		if (perf_sq_reap(ep))
			perf_wait_progress(&w);
		else
			perf_wait_tick(&w);
}

void perf_sq_post_wait(struct perf_ep *ep, int q, struct ibv_send_wr *wr)
{
	struct perf_wait w;

	perf_sq_prepare(ep, q, wr, true);
	perf_sq_post(ep, q, wr);
	perf_wait_start(&w, "a send completion");
	while (ep->sq_done[q] != ep->sq_posted[q])
		if (perf_sq_reap(ep))
			perf_wait_progress(&w);
		else
			perf_wait_tick(&w);
}

void perf_rq_post(struct perf_ep *ep, int q, size_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)(ep->buf + off), .length = len, .lkey = ep->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0};
	struct ibv_recv_wr *bad = NULL;
	int ret = ibv_post_recv(ep->qp[q], &wr, &bad);

	if (ret)
		perf_fatal("ibv_post_recv on QP 0x%x: %s", ep->qp[q]->qp_num, strerror(ret));
}

void perf_rq_wait(struct perf_ep *ep, uint64_t wr_id, struct ibv_wc *wc)
{
	struct perf_wait w;
	int n;

	perf_wait_start(&w, "a receive completion");
	while ((n = ibv_poll_cq(ep->rcq, 1, wc)) == 0)
		perf_wait_tick(&w);
	if (n < 0)
		perf_fatal("ibv_poll_cq (receive CQ) failed: %d", n);
	perf_check_wc(wc, "receive CQ");
	if (wc->wr_id != wr_id)
		perf_fatal("receive completion out of order: wr_id %llu, expected %llu",
		           (unsigned long long)wc->wr_id, (unsigned long long)wr_id);
}

void perf_wait_byte(const volatile uint8_t *p, uint8_t value, const char *what)
{
	struct perf_wait w;

	if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == value)
		return;
	perf_wait_start(&w, what);
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != value)
		perf_wait_tick(&w);
}
