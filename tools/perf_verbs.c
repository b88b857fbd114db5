/* SPDX-License-Identifier: MIT */
/*
 * Host mode: a CPU thread drives the NIC with plain libibverbs calls (the
 * baseline the libgnic modes are compared with), so the same code runs on
 * gnic-emu or any other provider the loader picks. One side's objects:
 * context, PD, a send and a receive CQ, RC QPs and one registered buffer.
 *
 * Send work requests are numbered per QP (wr_id = seq << 16 | qp) and every
 * Nth is signaled; a completion with sequence k retires k and all before
 * it, as RC ordering guarantees. Any error completion ends the run.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define RQ_DEPTH      64
#define PORT_NUM      1
#define CHAIN         32  /* work requests per ibv_post_send */
#define POLL_BATCH    16  /* completions per ibv_poll_cq */
#define INLINE_ASK    128 /* inline data we ask the QP for */
#define MIN_RNR_TIMER 12  /* 0.64 ms */
#define QP_TIMEOUT    14  /* 4.096 us * 2^14 = 67 ms */
#define QP_RETRY      7
#define ACCESS                                                                                     \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list, *dev = NULL;
	struct ibv_context *ctx;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		perf_fatal("ibv_get_device_list: %s (no verbs provider answered)", strerror(errno));
	for (int i = 0; i < n && !dev; i++)
		if (!name[0] || !strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	if (!dev)
		perf_fatal(name[0] ? "no verbs device named %s" : "no verbs devices found%s", name);
	ctx = ibv_open_device(dev);
	if (!ctx)
		perf_fatal("ibv_open_device(%s): %s", ibv_get_device_name(dev), strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

static void query_limits(struct perf_ep *ep, const struct perf_args *a, struct ibv_device_attr *d)
{
	struct ibv_port_attr port;
	int ret = ibv_query_device(ep->ctx, d);

	if (ret || (ret = ibv_query_port(ep->ctx, PORT_NUM, &port)))
		perf_fatal("ibv_query_device/port: %s", strerror(ret));
	if (port.state != IBV_PORT_ACTIVE)
		perf_fatal("port %d of %s is not active", PORT_NUM,
		           ibv_get_device_name(ep->ctx->device));
	ep->mtu = port.active_mtu;
	ep->max_msg = port.max_msg_sz;
	ep->sq_depth = min_u32((uint32_t)a->tx_depth, (uint32_t)d->max_qp_wr);
	ep->rd_atomic =
	    min_u32(16, min_u32((uint32_t)d->max_qp_rd_atom, (uint32_t)d->max_qp_init_rd_atom));
	ep->rd_atomic = ep->rd_atomic ? ep->rd_atomic : 1;
	/* signal often enough that the SQ never fills with unretired requests */
	ep->sq_signal = ep->sq_depth / 4 ? min_u32(ep->sq_depth / 4, 64) : 1;
	for (int i = 0; i < a->nsizes; i++)
		if (a->sizes[i] > ep->max_msg)
			perf_fatal("%zu-byte messages: %s takes at most %u bytes", a->sizes[i],
			           ibv_get_device_name(ep->ctx->device), ep->max_msg);
}

static struct ibv_qp *make_qp(struct perf_ep *ep, uint32_t inline_len)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = ep->scq,
	    .recv_cq = ep->rcq,
	    .cap = {.max_send_wr = ep->sq_depth,
	            .max_recv_wr = RQ_DEPTH,
	            .max_send_sge = 1,
	            .max_recv_sge = 1,
	            .max_inline_data = inline_len},
	    .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(ep->pd, &init);

	if (qp)
		ep->max_inline = init.cap.max_inline_data;
	return qp;
}

static struct perf_ep *perf_verbs_open(const struct perf_args *a, enum perf_side side, size_t len)
{
	struct perf_ep *ep = calloc(1, sizeof(*ep));
	struct ibv_device_attr d;

	if (!ep)
		perf_fatal("out of memory");
	ep->side = side;
	ep->ctx = open_device(a->device);
	query_limits(ep, a, &d);
	ep->pd = ibv_alloc_pd(ep->ctx);
	ep->nqps = a->qps;
	ep->scq = ibv_create_cq(ep->ctx, (int)min_u32(ep->nqps * ep->sq_depth + 16, d.max_cqe),
	                        NULL, NULL, 0);
	ep->rcq = ibv_create_cq(ep->ctx, (int)min_u32(ep->nqps * RQ_DEPTH + 16, d.max_cqe), NULL,
	                        NULL, 0);
	if (!ep->pd || !ep->scq || !ep->rcq)
		perf_fatal("ibv_alloc_pd / ibv_create_cq: %s", strerror(errno));
	for (int q = 0; q < ep->nqps; q++) {
		ep->qp[q] = make_qp(ep, INLINE_ASK);
		if (!ep->qp[q]) /* a provider without inline data still works */
			ep->qp[q] = make_qp(ep, 0);
		if (!ep->qp[q])
			perf_fatal("ibv_create_qp (RC, depth %u): %s", ep->sq_depth,
			           strerror(errno));
		ep->psn[q] = (uint32_t)lrand48() & 0xffffff;
	}
	ep->len = len;
	ep->buf = ep->dev = perf_alloc(len);
	ep->mr = ibv_reg_mr(ep->pd, ep->buf, len, ACCESS);
	if (!ep->mr)
		perf_fatal("ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
	return ep;
}

static void perf_verbs_info(const struct perf_ep *ep, struct perf_ep_info *info)
{
	struct ibv_port_attr port;
	union ibv_gid gid;
	int ret = ibv_query_gid(ep->ctx, PORT_NUM, 0, &gid);

	if (ret || (ret = ibv_query_port(ep->ctx, PORT_NUM, &port)))
		perf_fatal("ibv_query_gid/port: %s", strerror(ret));
	memcpy(info->gid, gid.raw, 16);
	info->lid = port.lid;
	info->addr = (uintptr_t)ep->buf;
	info->rkey = ep->mr->rkey;
	info->len = ep->len;
	info->nqps = (uint32_t)ep->nqps;
	for (int q = 0; q < ep->nqps; q++) {
		info->qpn[q] = ep->qp[q]->qp_num;
		info->psn[q] = ep->psn[q];
	}
}

/* INIT, RTR, RTS. RoCE ports (and gnic-emu) address peers by GID, IB by LID. */
static void connect_qp(struct perf_ep *ep, int q, const struct perf_ep_info *peer)
{
	static const uint8_t zero_gid[16];
	struct ibv_qp_attr init = {
	    .qp_state = IBV_QPS_INIT, .port_num = PORT_NUM, .qp_access_flags = ACCESS};
	struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR,
	                          .path_mtu = ep->mtu,
	                          .dest_qp_num = peer->qpn[q],
	                          .rq_psn = peer->psn[q],
	                          .max_dest_rd_atomic = (uint8_t)ep->rd_atomic,
	                          .min_rnr_timer = MIN_RNR_TIMER,
	                          .ah_attr = {.dlid = (uint16_t)peer->lid, .port_num = PORT_NUM}};
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS,
	                          .sq_psn = ep->psn[q],
	                          .timeout = QP_TIMEOUT,
	                          .retry_cnt = QP_RETRY,
	                          .rnr_retry = QP_RETRY,
	                          .max_rd_atomic = (uint8_t)ep->rd_atomic};
	int ret;

	if (memcmp(peer->gid, zero_gid, 16)) {
		rtr.ah_attr.is_global = 1;
		memcpy(rtr.ah_attr.grh.dgid.raw, peer->gid, 16);
		rtr.ah_attr.grh.hop_limit = 64;
	}
	if ((ret = ibv_modify_qp(ep->qp[q], &init,
	                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	                             IBV_QP_ACCESS_FLAGS)) ||
	    (ret = ibv_modify_qp(ep->qp[q], &rtr,
	                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	                             IBV_QP_MIN_RNR_TIMER)) ||
	    (ret = ibv_modify_qp(ep->qp[q], &rts,
	                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	                             IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)))
		perf_fatal("ibv_modify_qp(QP 0x%x to INIT, RTR, RTS): %s", ep->qp[q]->qp_num,
		           strerror(ret));
}

static void perf_verbs_connect(struct perf_ep *ep, const struct perf_args *a,
                               const struct perf_ep_info *peer)
{
	(void)a;
	if (peer->nqps != (uint32_t)ep->nqps)
		perf_fatal("the peer has %u QPs, this side %d", peer->nqps, ep->nqps);
	for (int q = 0; q < ep->nqps; q++)
		connect_qp(ep, q, peer);
	ep->raddr = peer->addr;
	ep->rkey = peer->rkey;
}

static void perf_verbs_close(struct perf_ep *ep)
{
	int ret = 0;

	for (int q = 0; q < ep->nqps; q++)
		ret |= ibv_destroy_qp(ep->qp[q]);
	ret |= ibv_dereg_mr(ep->mr) | ibv_destroy_cq(ep->scq) | ibv_destroy_cq(ep->rcq);
	ret |= ibv_dealloc_pd(ep->pd) | ibv_close_device(ep->ctx);
	if (ret)
		perf_fatal("tearing down the verbs objects failed");
	perf_free(ep->buf, ep->len);
	free(ep);
}

/* The device and library in use; gnic-emu is known by its library (it
 * names devices like rdma-core does). */
static void perf_verbs_env(struct perf_session *s)
{
	void *sym = dlsym(RTLD_DEFAULT, "ibv_get_device_list");
	struct perf_ep *ep = s->ep[PERF_A] ? s->ep[PERF_A] : s->ep[PERF_B];
	Dl_info info;

	snprintf(s->lib, sizeof(s->lib), "%s",
	         sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "unknown");
	snprintf(s->nic, sizeof(s->nic), "%s", ibv_get_device_name(ep->ctx->device));
	s->emu = dlsym(RTLD_DEFAULT, "gemu_get_device_list") != NULL;
}

const struct perf_backend perf_verbs_ops = {perf_verbs_open, perf_verbs_info, perf_verbs_connect,
                                            perf_verbs_close, perf_verbs_env};

/* ---- posting and polling ----------------------------------------------------------------- */

static void check_wc(const struct ibv_wc *wc, const char *where)
{
	if (wc->status != IBV_WC_SUCCESS)
		perf_fatal("error completion on the %s: %s (status %d, vendor error 0x%x), wr_id "
		           "0x%llx, opcode %d, QP 0x%x",
		           where, ibv_wc_status_str(wc->status), wc->status, wc->vendor_err,
		           (unsigned long long)wc->wr_id, wc->opcode, wc->qp_num);
}

void perf_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, struct perf_ep *ep, enum ibv_wr_opcode op,
             uint64_t loff, uint32_t len, uint64_t roff)
{
	*sge = (struct ibv_sge){
	    .addr = (uintptr_t)(ep->buf + loff), .length = len, .lkey = ep->mr->lkey};
	*wr = (struct ibv_send_wr){.sg_list = sge, .num_sge = 1, .opcode = op};
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr->wr.atomic.remote_addr = ep->raddr + roff;
		wr->wr.atomic.rkey = ep->rkey;
	} else {
		wr->wr.rdma.remote_addr = ep->raddr + roff;
		wr->wr.rdma.rkey = ep->rkey;
	}
	/* small messages go inline, as perftest does: no local DMA read */
	if (op != IBV_WR_RDMA_READ && op != IBV_WR_ATOMIC_FETCH_AND_ADD && len <= ep->max_inline)
		wr->send_flags |= IBV_SEND_INLINE;
}

static uint32_t sq_room(const struct perf_ep *ep, int q)
{
	uint64_t used = ep->sq_posted[q] - ep->sq_done[q];

	return used >= ep->sq_depth ? 0 : (uint32_t)(ep->sq_depth - used);
}

static void sq_prepare(struct perf_ep *ep, int q, struct ibv_send_wr *wr, bool last)
{
	uint64_t seq = ++ep->sq_posted[q];

	wr->wr_id = seq << 16 | (uint64_t)q;
	if (last || seq % ep->sq_signal == 0)
		wr->send_flags |= IBV_SEND_SIGNALED;
}

static void sq_post_chain(struct perf_ep *ep, int q, struct ibv_send_wr *first)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(ep->qp[q], first, &bad);

	if (ret)
		perf_fatal("ibv_post_send on QP 0x%x: %s (at wr_id 0x%llx)", ep->qp[q]->qp_num,
		           strerror(ret), bad ? (unsigned long long)bad->wr_id : 0ull);
}

static int sq_reap(struct perf_ep *ep)
{
	struct ibv_wc wc[POLL_BATCH];
	int n = ibv_poll_cq(ep->scq, POLL_BATCH, wc);

	if (n < 0)
		perf_fatal("ibv_poll_cq (send CQ) failed: %d", n);
	for (int i = 0; i < n; i++) {
		int q = (int)(wc[i].wr_id & 0xffff);
		uint64_t seq = wc[i].wr_id >> 16;

		check_wc(&wc[i], "send CQ");
		if (q >= ep->nqps || seq <= ep->sq_done[q] || seq > ep->sq_posted[q])
			perf_fatal("send completion out of order: wr_id 0x%llx",
			           (unsigned long long)wc[i].wr_id);
		ep->sq_done[q] = seq;
	}
	return n;
}

/* Reaps until QP q (every QP: q < 0) has at most busy requests outstanding. */
static void sq_wait(struct perf_ep *ep, int q, uint32_t busy, const char *what)
{
	struct perf_wait w;
	int k = q < 0 ? 0 : q;

	perf_wait_start(&w, what);
	while (k < (q < 0 ? ep->nqps : q + 1))
		if (ep->sq_posted[k] - ep->sq_done[k] <= busy)
			k++;
		else if (sq_reap(ep))
			perf_wait_progress(&w);
		else
			perf_wait_tick(&w);
}

void perf_sq_post(struct perf_ep *ep, int q, struct ibv_send_wr *wr, bool last)
{
	sq_wait(ep, q, ep->sq_depth - 1, "send queue room");
	sq_prepare(ep, q, wr, last);
	sq_post_chain(ep, q, wr);
}

void perf_sq_post_wait(struct perf_ep *ep, int q, struct ibv_send_wr *wr)
{
	perf_sq_post(ep, q, wr, true);
	sq_wait(ep, q, 0, "a send completion");
}

static void sq_drain(struct perf_ep *ep)
{
	sq_wait(ep, -1, 0, "the last send completions");
}

void perf_rq_post(struct perf_ep *ep, uint64_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)(ep->buf + off), .length = len, .lkey = ep->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0};
	struct ibv_recv_wr *bad = NULL;
	int ret = ibv_post_recv(ep->qp[0], &wr, &bad);

	if (ret)
		perf_fatal("ibv_post_recv on QP 0x%x: %s", ep->qp[0]->qp_num, strerror(ret));
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
	check_wc(wc, "receive CQ");
	if (wc->wr_id != wr_id)
		perf_fatal("receive completion out of order: wr_id %llu, expected %llu",
		           (unsigned long long)wc->wr_id, (unsigned long long)wr_id);
}

void perf_wait_byte(const uint8_t *p, uint8_t value, const char *what)
{
	struct perf_wait w;

	if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == value)
		return;
	perf_wait_start(&w, what);
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != value)
		perf_wait_tick(&w);
}

/* ---- streams ------------------------------------------------------------------------------ */

struct stream {
	struct perf_ep *ep;
	long next[PERF_MAX_QPS]; /* each QP's next iteration */
};

/* What fits of QP q's remaining iterations, as one chain. */
static int post_chain(struct perf_run *r, struct stream *st, int q, long end, perf_wr_fn *fn)
{
	struct ibv_send_wr wr[CHAIN];
	struct ibv_sge sge[CHAIN];
	uint32_t room = sq_room(st->ep, q);
	int n = 0;

	while ((uint32_t)n < room && n < CHAIN && st->next[q] < end) {
		long i = st->next[q];

		st->next[q] += st->ep->nqps;
		fn(r, st->ep, i, &wr[n], &sge[n]);
		sq_prepare(st->ep, q, &wr[n], st->next[q] >= end);
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
	}
	if (n)
		sq_post_chain(st->ep, q, wr);
	return n;
}

void perf_host_stream(struct perf_run *r, perf_wr_fn *fn)
{
	struct stream st[2];
	long end = r->first + r->count;
	int n = 0, more = 1;
	struct perf_wait w;
	uint64_t t0;

	for (int side = PERF_A; side <= PERF_B; side++)
		if (r->ep[side] && (side == PERF_A || r->a->bidir))
			st[n++].ep = r->ep[side];
	for (int k = 0; k < n; k++)
		for (int q = 0, nq = st[k].ep->nqps; q < nq; q++)
			st[k].next[q] = r->first + ((q - r->first % nq) + nq) % nq;
	perf_wait_start(&w, "send completions");
	t0 = perf_now_ns();
	while (more) {
		int work = 0;

		more = 0;
		for (int k = 0; k < n; k++) {
			for (int q = 0; q < st[k].ep->nqps; q++) {
				work += post_chain(r, &st[k], q, end, fn);
				more |= st[k].next[q] < end;
			}
			work += sq_reap(st[k].ep);
		}
		if (work)
			perf_wait_progress(&w);
		else
			perf_wait_tick(&w);
	}
	for (int k = 0; k < n; k++)
		sq_drain(st[k].ep);
	r->ns = (double)(perf_now_ns() - t0);
}

/* ---- ping-pongs --------------------------------------------------------------------------
 * Message i goes from the sender's region i % nsrc into the peer's slot
 * i % 2. A sends, B waits for it, answers, then checks it; A waits for the
 * answer and checks it. A process does only the steps of the sides it
 * holds. The latency is half the round trip, as perftest reports it. */

/* Sources, both receive slots poisoned, the signal word zero; in host mode
 * the receives of the first two messages (done() of messages -2 and -1). */
void perf_pingpong_setup(struct perf_run *r)
{
	const struct perf_pp_host *h = perf_gnic(r) ? NULL : r->t->pp;

	for (int side = PERF_A; side <= PERF_B; side++) {
		struct perf_ep *ep = r->ep[side];

		if (!ep)
			continue;
		perf_ring_fill(ep->buf, &r->ring, (enum perf_side)side);
		perf_ring_poison(ep->buf, &r->ring, perf_peer((enum perf_side)side));
		memset(ep->buf + r->ring.sig_off, 0, 8);
		perf_ep_push(ep, 0, r->ring.sig_off + 8);
		for (long i = -2; h && h->done && i < 0; i++)
			h->done(r, ep, i);
	}
}

static void pp_send(struct perf_run *r, struct perf_ep *ep, long i, enum ibv_wr_opcode op)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	perf_wr(&wr, &sge, ep, op, perf_pp_src(&r->ring, i), (uint32_t)r->size,
	        perf_pp_slot(&r->ring, i));
	wr.imm_data = htonl((uint32_t)i);
	perf_sq_post(ep, 0, &wr, i == r->first + r->count - 1);
}

/* Check message i; zero its marker so that the next message in the slot is
 * seen arriving whatever it carries; give the slot back. */
static void consume(struct perf_run *r, struct perf_ep *ep, long i, const struct perf_pp_host *h)
{
	uint8_t *slot = ep->buf + perf_pp_slot(&r->ring, i);
	char what[40];

	snprintf(what, sizeof(what), "the receive slot of side %c", ep->side == PERF_A ? 'A' : 'B');
	if (r->a->validate && !perf_pattern_check(slot, r->size, perf_peer(ep->side),
	                                          perf_pp_region(&r->ring, i), 0, what, i))
		perf_fatal("%s: message %ld arrived wrong (see above)", r->t->name, i);
	slot[r->size - 1] = 0;
	if (h->done)
		h->done(r, ep, i);
}

void perf_host_pingpong(struct perf_run *r, const struct perf_pp_host *h)
{
	struct perf_ep *a = r->ep[PERF_A], *b = r->ep[PERF_B];
	uint64_t start = perf_now_ns(), t0 = 0;

	for (long i = r->first; i < r->first + r->count; i++) {
		if (a) {
			t0 = perf_now_ns();
			pp_send(r, a, i, h->op);
		}
		if (b) {
			h->await(r, b, i);
			pp_send(r, b, i, h->op);
			consume(r, b, i, h);
		}
		if (a) {
			h->await(r, a, i);
			r->lat[i - r->first] = (double)(perf_now_ns() - t0) / 2;
			consume(r, a, i, h);
		}
	}
	r->ns = (double)(perf_now_ns() - start);
	for (int side = PERF_A; side <= PERF_B; side++)
		if (r->ep[side])
			sq_drain(r->ep[side]);
}
