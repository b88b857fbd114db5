/* SPDX-License-Identifier: MIT */
/*
 * RAW_PACKET QPs (qp_ops.h): a send queue of Ethernet frames and a receive
 * queue that flow steering (flow.c) fills, as on a ConnectX Ethernet port.
 *
 * Send: in RTS, each rung WQE is ctrl + Ethernet segment + data (or inline)
 * segments, as rdma-core's mlx5 builds it (post.c): the frame is the
 * Ethernet segment's inline header bytes followed by the gathered data; the
 * IPv4 header and TCP/UDP checksums are filled in where cs_flags ask; the
 * frame goes to the device's port (eth_port.c). A send CQE follows for a
 * signaled WQE. A WQE that is not a SEND, names memory it may not read, or
 * makes a frame longer than EMU_ETH_MAX_FRAME completes with an error and
 * the QP enters ERR, as a requester's local errors do.
 *
 * Receive: a plain RQ (receive WQEs of data segments). In RTR and RTS a
 * frame steered here fills the next WQE; its CQE carries the byte count,
 * the L3/L4 header types and checksum-OK bits, and the rule's flow tag. A
 * frame finding no WQE, or not fitting the WQE's buffers, is dropped and
 * counted (the WQE stays posted).
 *
 * In ERR the SQ and RQ are flushed as an RC QP's are (the requester's and
 * responder's flush).
 */
#include <errno.h>
#include <string.h>

#include "eth.h"
#include "rc.h"
#include "rwq.h"
#include "wqe.h"
#include "worker.h"

#define RAW_BURST 64

/* ---- send ---------------------------------------------------------------------- */

static void send_cqe(struct emu_qp *qp, const struct emu_wqe *w, uint8_t synd)
{
	struct emu_cqe_info ci = {
	    .opcode = synd ? GNIC_MLX5_CQE_REQ_ERR : GNIC_MLX5_CQE_REQ,
	    .wqe_opcode = w->opcode,
	    .syndrome = synd,
	    .wqe_counter = w->idx,
	    .qpn = qp->ibqp.qp_num,
	};

	if (synd || (w->fm_ce_se & GNIC_MLX5_CTRL_CQ_UPDATE))
		emu_cqe_write(qp->scq, &ci);
}

static void send_fail(struct emu_qp *qp, const struct emu_wqe *w, uint8_t synd, const char *why)
{
	qp->last_err.syndrome = synd;
	qp->last_err.opcode = w->opcode;
	qp->last_err.wqe_counter = w->idx;
	emu_qp_enter_error(qp, why);
	send_cqe(qp, w, synd);
}

/* Where the data segments start: after the inline header, on a 16-byte
 * boundary, and at least after the segment's first 16 bytes. */
static unsigned eth_seg_len(uint16_t inline_hdr_sz)
{
	unsigned end = (GNIC_MLX5_ETH_INLINE_HDR_OFF + inline_hdr_sz + 15u) & ~15u;

	return end < 16 ? 16 : end;
}

/* The frame of WQE w into buf (its length, or 0 with *synd set). */
static uint32_t gather_frame(struct emu_qp *qp, struct emu_wqe *w, uint8_t *buf, uint8_t *synd)
{
	const struct gnic_mlx5_eth_seg *e =
	    (const void *)(w->bytes + sizeof(struct gnic_mlx5_ctrl_seg));
	uint16_t ihs = gnic_be16(e->inline_hdr_sz);
	unsigned off = sizeof(struct gnic_mlx5_ctrl_seg) + eth_seg_len(ihs);
	struct emu_sgl s;
	uint32_t len = ihs;

	*synd = GNIC_MLX5_SYND_LOCAL_LENGTH;
	if (off > w->ds * 16u || ihs > EMU_ETH_MAX_FRAME || !emu_wqe_parse_sgl(w, off, &s) ||
	    s.len > EMU_ETH_MAX_FRAME - ihs)
		return 0;
	memcpy(buf, e->inline_hdr_start, ihs);
	if (s.inl) {
		memcpy(buf + len, s.inl, s.len);
		return len + (uint32_t)s.len;
	}
	*synd = GNIC_MLX5_SYND_LOCAL_PROT;
	for (int i = 0; i < s.n; i++) {
		uint32_t n = emu_seg_len(s.seg[i]);
		uint64_t addr = gnic_be64(s.seg[i]->addr);
		struct emu_mr *mr;

		if (emu_mr_check(qp->pd, gnic_be32(s.seg[i]->lkey), addr, n, 0, &mr) ||
		    emu_mem_read(mr, addr, buf + len, n))
			return 0;
		len += n;
	}
	return len;
}

/* Execute one SEND WQE: false when the QP entered ERR. */
static bool send_one(struct emu_qp *qp, struct emu_wqe *w)
{
	const struct gnic_mlx5_eth_seg *e =
	    (const void *)(w->bytes + sizeof(struct gnic_mlx5_ctrl_seg));
	uint8_t *buf = emu_scratch_get(&qp->worker->gather, EMU_ETH_MAX_FRAME);
	struct emu_device *dev = qp->ctx->dev;
	uint8_t synd;
	uint32_t len;

	if (w->opcode == GNIC_MLX5_OPCODE_NOP) {
		send_cqe(qp, w, 0);
		return true;
	}
	if (w->opcode != GNIC_MLX5_OPCODE_SEND) {
		send_fail(qp, w, GNIC_MLX5_SYND_LOCAL_QP_OP,
		          "a send WQE of a RAW_PACKET QP is not a SEND");
		return false;
	}
	if (!buf) {
		send_fail(qp, w, GNIC_MLX5_SYND_LOCAL_LENGTH, "no memory for a frame");
		return false;
	}
	len = gather_frame(qp, w, buf, &synd);
	if (!len) {
		send_fail(qp, w, synd,
		          synd == GNIC_MLX5_SYND_LOCAL_PROT
		              ? "a send WQE names memory the QP may not read"
		              : "a send WQE's Ethernet segment or frame length is bad");
		return false;
	}
	if (e->cs_flags & (GNIC_MLX5_ETH_WQE_L3_CSUM | GNIC_MLX5_ETH_WQE_L4_CSUM))
		emu_pkt_fill_csum(buf, len, e->cs_flags & GNIC_MLX5_ETH_WQE_L3_CSUM,
		                  e->cs_flags & GNIC_MLX5_ETH_WQE_L4_CSUM);
	/* the frame is out (on a loopback port: steered, maybe received)
	 * before its CQE, as a NIC completes a send once on the wire */
	atomic_fetch_add_explicit(&emu_eth_counters(dev)->tx_frames, 1, memory_order_relaxed);
	emu_flow_sniff_tx(dev, buf, len);
	emu_eth_port_tx(dev, buf, len);
	send_cqe(qp, w, 0);
	return true;
}

static int send_progress(struct emu_qp *qp)
{
	uint16_t pi = emu_sq_doorbell(qp);
	int work = 0;

	while (work < RAW_BURST && qp->req.sq_ci != pi) {
		struct emu_wqe w;

		if (atomic_load(&qp->state) != IBV_QPS_RTS)
			break;
		work++;
		if (!emu_wqe_fetch(&qp->sq, qp->ibqp.qp_num, qp->req.sq_ci, &w)) {
			send_fail(qp, &w, GNIC_MLX5_SYND_LOCAL_QP_OP, "a bad send WQE");
			break;
		}
		if (!send_one(qp, &w))
			break;
		qp->req.sq_ci = (uint16_t)(qp->req.sq_ci + w.nbb);
	}
	return work;
}

/* ---- receive ------------------------------------------------------------------- */

uint8_t emu_raw_hdr_types(const struct emu_pkt *p)
{
	uint8_t l3 = p->l3 == EMU_L3_IPV4   ? GNIC_MLX5_CQE_L3_HDR_TYPE_IPV4
	             : p->l3 == EMU_L3_IPV6 ? GNIC_MLX5_CQE_L3_HDR_TYPE_IPV6
	                                    : GNIC_MLX5_CQE_L3_HDR_TYPE_NONE;
	uint8_t l4 = GNIC_MLX5_CQE_L4_HDR_TYPE_NONE;

	if (p->l4 == EMU_L4_UDP)
		l4 = GNIC_MLX5_CQE_L4_HDR_TYPE_UDP;
	else if (p->l4 == EMU_L4_TCP && !(p->tcp_flags & 0x10)) /* no ACK */
		l4 = GNIC_MLX5_CQE_L4_HDR_TYPE_TCP_NO_ACK;
	else if (p->l4 == EMU_L4_TCP)
		l4 = p->l4_payload ? GNIC_MLX5_CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA
		                   : GNIC_MLX5_CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA;
	return (uint8_t)(l4 << 4 | l3 << 2);
}

uint8_t emu_raw_csum_bits(const struct emu_pkt *p)
{
	uint8_t b = 0;

	if (p->l3 != EMU_L3_NONE && p->l3_ok)
		b |= GNIC_MLX5_CQE_L3_OK;
	if (p->l4 != EMU_L4_NONE && p->l4_ok)
		b |= GNIC_MLX5_CQE_L4_OK;
	return b;
}

/* Bytes the WQE's buffers hold (up to an INVALID_LKEY segment). */
static uint64_t wqe_room(const struct emu_recv_wqe *w)
{
	uint64_t room = 0;

	for (unsigned i = 0; i < w->nseg; i++) {
		if (gnic_be32(w->seg[i].lkey) == GNIC_MLX5_INVALID_LKEY)
			break;
		room += emu_seg_len(&w->seg[i]);
	}
	return room;
}

static bool scatter_frame(struct emu_qp *qp, const struct emu_recv_wqe *w, const struct emu_pkt *p)
{
	uint32_t off = 0;

	for (unsigned i = 0; i < w->nseg && off < p->len; i++) {
		uint64_t addr = gnic_be64(w->seg[i].addr);
		uint32_t n = emu_seg_len(&w->seg[i]);
		struct emu_mr *mr;

		if (n > p->len - off)
			n = p->len - off;
		if (emu_mr_check(qp->pd, gnic_be32(w->seg[i].lkey), addr, n, IBV_ACCESS_LOCAL_WRITE,
		                 &mr) ||
		    emu_mem_write(mr, addr, p->data + off, n))
			return false;
		off += n;
	}
	return true;
}

static void recv_fail(struct emu_qp *qp, uint16_t idx)
{
	struct emu_cqe_info ci = {
	    .opcode = GNIC_MLX5_CQE_RESP_ERR,
	    .syndrome = GNIC_MLX5_SYND_LOCAL_PROT,
	    .wqe_counter = idx,
	    .qpn = qp->ibqp.qp_num,
	};

	qp->last_err.syndrome = ci.syndrome;
	qp->last_err.wqe_counter = idx;
	emu_qp_enter_error(qp, "a receive WQE names memory the QP may not write");
	emu_cqe_write(qp->rcq, &ci);
}

void emu_raw_deliver(struct emu_qp *qp, const struct emu_pkt *p, uint32_t tag)
{
	struct emu_eth_counters *c = emu_eth_counters(qp->ctx->dev);
	int state = atomic_load(&qp->state);
	struct emu_cqe_info ci = {
	    .opcode = GNIC_MLX5_CQE_RESP_SEND,
	    .qpn = qp->ibqp.qp_num,
	    .byte_cnt = p->len,
	    .eth = true,
	    .flow_tag = tag,
	};
	struct emu_recv_wqe w;

	if (qp->rss) { /* an RSS QP: a WQ of its table receives it */
		emu_rss_deliver(qp, p, tag);
		return;
	}
	if ((state != IBV_QPS_RTR && state != IBV_QPS_RTS) || !emu_recv_peek(qp, &w)) {
		atomic_fetch_add_explicit(&c->rx_no_wqe, 1, memory_order_relaxed);
		return;
	}
	if (wqe_room(&w) < p->len) {
		atomic_fetch_add_explicit(&c->rx_too_long, 1, memory_order_relaxed);
		return;
	}
	if (!scatter_frame(qp, &w, p)) {
		atomic_fetch_add_explicit(&c->rx_bad_wqe, 1, memory_order_relaxed);
		recv_fail(qp, emu_recv_take(qp));
		return;
	}
	ci.wqe_counter = emu_recv_take(qp);
	ci.hds_ip_ext = emu_raw_csum_bits(p);
	ci.l4_hdr_type_etc = emu_raw_hdr_types(p);
	/* counted before the CQE: whoever sees the frame sees it counted */
	atomic_fetch_add_explicit(&c->rx_delivered, 1, memory_order_relaxed);
	emu_cqe_write(qp->rcq, &ci);
}

/* ---- the ops table ------------------------------------------------------------- */

static void raw_reset(struct emu_qp *qp)
{
	emu_requester_reset(qp);
	emu_responder_reset(qp);
}

static int raw_add(struct emu_qp *qp)
{
	raw_reset(qp);
	return 0;
}

static void raw_remove(struct emu_qp *qp)
{
	(void)qp; /* no fabric state: rules hold the QP until destroyed (EBUSY) */
}

static void raw_state_change(struct emu_qp *qp, enum ibv_qp_state old_state)
{
	(void)old_state;
	if (atomic_load(&qp->state) == IBV_QPS_RESET)
		raw_reset(qp);
}

static int raw_progress(struct emu_qp *qp, uint64_t now)
{
	int state = atomic_load_explicit(&qp->state, memory_order_relaxed);

	if (state == IBV_QPS_RTS)
		return send_progress(qp);
	if (state == IBV_QPS_ERR) /* both flushes, as for RC */
		return emu_requester_progress(qp, now) + emu_responder_progress(qp);
	return 0;
}

/* Nothing reaches a RAW_PACKET QP through the fabric. */
static bool raw_on_request(struct emu_qp *qp, struct emu_reply_path *from, const struct emu_msg *m,
                           const void *payload)
{
	(void)qp, (void)from, (void)m, (void)payload;
	return true;
}

static bool raw_on_response(struct emu_qp *qp, const struct emu_msg *m, const void *payload)
{
	(void)qp, (void)m, (void)payload;
	return true;
}

const struct emu_qp_ops emu_raw_qp_ops = {
    .add = raw_add,
    .remove = raw_remove,
    .state_change = raw_state_change,
    .progress = raw_progress,
    .on_request = raw_on_request,
    .on_response = raw_on_response,
};
