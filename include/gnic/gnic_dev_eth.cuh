/* SPDX-License-Identifier: MIT */
/*
 * Device data path of raw Ethernet queues and of the GPU-to-CPU hand-off
 * ring. Included by gnic_dev.cuh (include that); C and CUDA from the same
 * source, like the rest of it.
 *
 * Receive:  gnic_dev_eth_rx_burst()    take up to N completed frames
 *           gnic_dev_eth_rx_return()   give buffers back to the receive queue
 * Send:     gnic_dev_eth_send_buf()    a frame in a pool buffer (it returns to
 *                                      the receive queue once sent)
 *           gnic_dev_eth_send_burst()  N pool buffers, one doorbell
 *           gnic_dev_eth_send()        a frame in other registered memory
 *           gnic_dev_eth_send_hdr()    inline headers + a payload pointer
 *           gnic_dev_eth_tx_poll()     consume send completions
 *           gnic_dev_eth_flush()       wait until every send so far is out
 * Hand-off: gnic_dev_ring_push()       give the host one descriptor
 *
 * Every send is one WQE: ctrl, Ethernet segment (the frame's first bytes
 * inline, checksum-offload flags), one data segment. The hot path is that
 * of gnic_dev.cuh: reserve, write, publish (fence), ring, poll. Calls on an
 * Ethernet queue's QP go through these functions only (gnic_dev_quiet and
 * the RDMA calls do not know its buffers). Every wait is bounded by the
 * QP's timeout_ns; errors are those of gnic_dev.cuh (GNIC_DEV_ERR_*), the
 * first recorded for the host (gnic_eth_error()).
 *
 * Sharing: rx_burst and rx_return are safe from any threads (locks when the
 * queue is shared); with GNIC_SHARE_EXCLUSIVE one thread at a time calls
 * everything. Warp scope (CUDA): the _warp calls, every lane of the warp
 * together, one packet per lane; on CPU threads they act for the caller.
 */
#ifndef GNIC_DEV_ETH_CUH
#define GNIC_DEV_ETH_CUH

#include "gnic_dev_eth.h"

/* ---- receive ---------------------------------------------------------------- */

/* GNIC_ETH_RX_* of a receive CQE (bytes 28 and 29 of its first half). */
GNIC_DEVFN uint32_t gnic_dev_eth_cqe_flags(const struct gnic_mlx5_cqe64 *cqe)
{
	const volatile uint8_t *b = (const volatile uint8_t *)cqe;
	uint8_t ok = b[GNIC_MLX5_CQE_HDS_IP_EXT], types = b[GNIC_MLX5_CQE_L4_HDR_TYPE_ETC];
	uint32_t l3 = (types >> 2) & 3, l4 = (types >> 4) & 7, f = 0;

	if (l3 == GNIC_MLX5_CQE_L3_HDR_TYPE_IPV4)
		f |= GNIC_ETH_RX_IPV4;
	else if (l3 == GNIC_MLX5_CQE_L3_HDR_TYPE_IPV6)
		f |= GNIC_ETH_RX_IPV6;
	if (l4 == GNIC_MLX5_CQE_L4_HDR_TYPE_UDP)
		f |= GNIC_ETH_RX_UDP;
	else if (l4 != GNIC_MLX5_CQE_L4_HDR_TYPE_NONE)
		f |= GNIC_ETH_RX_TCP;
	if (ok & GNIC_MLX5_CQE_L3_OK)
		f |= GNIC_ETH_RX_L3_OK;
	if (ok & GNIC_MLX5_CQE_L4_OK)
		f |= GNIC_ETH_RX_L4_OK;
	return f;
}

/* Take up to max received frames into pkts[]: their number (0: none now,
 * or another thread is polling), or GNIC_DEV_ERR_CQE (an error completion:
 * the queue failed) / GNIC_DEV_ERR_QP. Does not wait. Each frame's buffer
 * is the caller's until it goes back (rx_return, or a send_buf). */
GNIC_DEVFN int gnic_dev_eth_rx_burst(struct gnic_dev_eth *eth, struct gnic_eth_pkt *pkts,
                                     uint32_t max)
{
	struct gnic_dev_qp *qp = eth->qp;
	const struct gnic_dev_cq *cq = &qp->rcq;
	uint64_t ci, ci0;
	uint32_t n = 0;
	int rc = 0;

	if (gnic_dev_failed(qp))
		return GNIC_DEV_ERR_QP;
	if (!gnic_dev_lock(qp, &qp->rcq_lock))
		return 0;
	ci = ci0 = qp->rcq_ci;
	while (n < max) {
		const struct gnic_mlx5_cqe64 *cqe = &cq->buf[ci & (cq->cqe_cnt - 1)];
		uint32_t tail = gnic_cqe_tail(cqe), slot, buf;
		uint8_t op_own = (uint8_t)(tail >> 24);

		if (!gnic_mlx5_cqe_sw_owned(op_own, (uint32_t)ci, cq->cqe_cnt))
			break;
		ci++;
		if (gnic_mlx5_cqe_opcode(op_own) != GNIC_MLX5_CQE_RESP_SEND) {
			rc = gnic_dev_fail(qp, GNIC_DEV_ERR_CQE,
			                   (const struct gnic_mlx5_err_cqe *)cqe);
			break;
		}
		slot = gnic_cqe_counter(cqe, tail) & (eth->nbuf - 1);
		buf = eth->rq_buf_of[slot];
		pkts[n].buf = buf;
		pkts[n].data = eth->pool + (size_t)buf * eth->buf_stride;
		pkts[n].len = gnic_be32(((const volatile struct gnic_mlx5_cqe64 *)cqe)->byte_cnt);
		pkts[n].tag =
		    gnic_be32(((const volatile struct gnic_mlx5_cqe64 *)cqe)->sop_drop_qpn) &
		    GNIC_MLX5_FLOW_TAG_MASK;
		pkts[n].flags = gnic_dev_eth_cqe_flags(cqe);
		n++;
	}
	if (ci != ci0) {
		qp->rcq_ci = ci;
		gnic_store_sys32(cq->dbrec, gnic_be32((uint32_t)ci & 0xffffff));
		gnic_add64(&qp->rq_done, ci - ci0);
	}
	gnic_dev_unlock(qp, &qp->rcq_lock);
	return rc ? rc : (int)n;
}

/* Post pool buffers bufs[0..n) to the receive queue, one doorbell record
 * write for all. GNIC_DEV_ERR_INVAL: a buffer index >= nbuf, or more
 * buffers than free slots (a buffer given back twice); nothing posted. */
GNIC_DEVFN int gnic_dev_eth_rx_return_burst(struct gnic_dev_eth *eth, const uint32_t *bufs,
                                            uint32_t n)
{
	struct gnic_dev_qp *qp = eth->qp;
	struct gnic_wait w;
	uint64_t idx;

	for (uint32_t i = 0; i < n; i++)
		if (bufs[i] >= eth->nbuf)
			return GNIC_DEV_ERR_INVAL;
	if (gnic_dev_failed(qp))
		return GNIC_DEV_ERR_QP;
	gnic_wait_init_short(&w, qp->timeout_ns);
	while (!gnic_dev_lock(qp, &qp->rq_lock))
		if (gnic_wait_expired(&w))
			return GNIC_DEV_ERR_TIMEOUT;
	idx = qp->rq_posted;
	if (idx + n - gnic_load_acq64(&qp->rq_done) > qp->rq_wqe_cnt) {
		gnic_dev_unlock(qp, &qp->rq_lock);
		return GNIC_DEV_ERR_INVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = (uint32_t)((idx + i) & (qp->rq_wqe_cnt - 1));
		struct gnic_mlx5_data_seg *seg =
		    (struct gnic_mlx5_data_seg *)(qp->rq_buf + (size_t)slot * qp->rq_stride);

		gnic_set_data(seg, eth->pool_iova + (uint64_t)bufs[i] * eth->buf_stride,
		              eth->pool_lkey, eth->buf_stride);
		if (qp->rq_stride > sizeof(*seg)) /* the rest of a wider slot: unused */
			gnic_set_data(seg + 1, 0, GNIC_MLX5_INVALID_LKEY, 0);
		eth->rq_buf_of[slot] = bufs[i];
	}
	qp->rq_posted = idx + n;
	gnic_store_sys32(&qp->dbrec[GNIC_MLX5_RCV_DBR], gnic_be32((uint32_t)(idx + n) & 0xffff));
	gnic_dev_unlock(qp, &qp->rq_lock);
	return GNIC_DEV_OK;
}

GNIC_DEVFN int gnic_dev_eth_rx_return(struct gnic_dev_eth *eth, uint32_t buf)
{
	return gnic_dev_eth_rx_return_burst(eth, &buf, 1);
}

/* ---- send completions ---------------------------------------------------------- */

/* tx_mark of a pool send: valid bit, the WQE's first BB (39 bits: a mark
 * left from an earlier lap never matches), the buffer (24 bits). */
GNIC_DEVFN uint64_t gnic_dev_eth_mark(uint64_t idx, uint32_t buf)
{
	return (1ull << 63) | ((idx & 0x7fffffffffull) << 24) | buf;
}

/* Consume send completions; the pool buffers of completed send_buf WQEs go
 * back to the receive queue. Returns the buffers given back (0 also when
 * another thread is at it), or an error of gnic_dev_scq_poll. */
GNIC_DEVFN int gnic_dev_eth_tx_poll(struct gnic_dev_eth *eth)
{
	struct gnic_dev_qp *qp = eth->qp;
	uint32_t bufs[32], nb = 0;
	uint64_t from, to;
	int rc = gnic_dev_scq_poll(qp), given = 0;

	if (rc < 0)
		return rc;
	if (!gnic_dev_lock(qp, &eth->tx_lock))
		return 0;
	from = eth->tx_recycled;
	to = gnic_load_acq64(&qp->sq_retired);
	while (from < to && rc >= 0) {
		uint32_t slot = (uint32_t)(from & (qp->sq_wqe_cnt - 1));
		uint32_t nbb = qp->wqe_nbb[slot];
		uint64_t mark = eth->tx_mark[slot];

		if ((mark & ~0xffffffull) == (gnic_dev_eth_mark(from, 0)))
			bufs[nb++] = (uint32_t)(mark & 0xffffff);
		from += nbb ? nbb : 1;
		if (nb == 32 || (from >= to && nb)) {
			rc = gnic_dev_eth_rx_return_burst(eth, bufs, nb);
			given += (int)nb;
			nb = 0;
		}
	}
	gnic_store_rel64(&eth->tx_recycled, from);
	gnic_dev_unlock(qp, &eth->tx_lock);
	return rc < 0 ? rc : given;
}

/* ---- send ------------------------------------------------------------------------ */

/* Take nbb BBs of the SQ whose previous lap has also given its buffers back. */
GNIC_DEVFN int gnic_dev_eth_reserve(struct gnic_dev_eth *eth, uint32_t nbb, uint64_t *idx)
{
	struct gnic_dev_qp *qp = eth->qp;
	struct gnic_wait w;
	int rc = gnic_dev_sq_reserve(qp, nbb, idx);

	if (rc)
		return rc;
	gnic_wait_init(&w, qp->timeout_ns);
	while (*idx + nbb - gnic_load_acq64(&eth->tx_recycled) > qp->sq_wqe_cnt) {
		rc = gnic_dev_eth_tx_poll(eth);
		if (rc < 0)
			return rc;
		if (*idx + nbb - gnic_load_acq64(&eth->tx_recycled) <= qp->sq_wqe_cnt)
			break;
		if (gnic_wait_expired(&w))
			return gnic_dev_fail(qp, GNIC_DEV_ERR_TIMEOUT, NULL);
	}
	return GNIC_DEV_OK;
}

/* A WQE written byte by byte into BBs, each stored to the SQ when full. */
struct gnic_eth_wqe {
	union gnic_bb bb;
	struct gnic_dev_qp *qp;
	uint64_t idx;
	uint32_t pos, b;
};

GNIC_DEVFN void gnic_eth_wqe_put(struct gnic_eth_wqe *w, const void *src, uint32_t n)
{
	const uint8_t *s = (const uint8_t *)src;

	for (uint32_t i = 0; i < n; i++) {
		w->bb.b[w->pos++] = s[i];
		if (w->pos == GNIC_MLX5_SEND_WQE_BB) {
			gnic_copy_words(gnic_dev_sq_slot(w->qp, w->idx + w->b), w->bb.q,
			                GNIC_MLX5_SEND_WQE_BB);
			for (int k = 0; k < 8; k++)
				w->bb.q[k] = 0;
			w->b++;
			w->pos = 0;
		}
	}
}

/* BBs of a send WQE with hdr_len inline bytes and (with data) a data segment. */
GNIC_DEVFN uint32_t gnic_dev_eth_nbb(uint32_t hdr_len, int data)
{
	uint32_t eseg = (GNIC_MLX5_ETH_INLINE_HDR_OFF + hdr_len + 15) & ~15u;
	uint32_t bytes = 16 + eseg + (data ? 16 : 0);

	return (bytes + GNIC_MLX5_SEND_WQE_BB - 1) / GNIC_MLX5_SEND_WQE_BB;
}

/* The send WQE at idx: hdr (hdr_len bytes, inline), then data_len bytes at
 * NIC address data (none for 0). out: its only BB, for BlueFlame. */
GNIC_DEVFN void gnic_dev_eth_wqe(struct gnic_dev_qp *qp, uint64_t idx, const void *hdr,
                                 uint32_t hdr_len, uint64_t data, uint32_t lkey, uint32_t data_len,
                                 uint32_t flags, union gnic_bb *out)
{
	uint32_t eseg = (GNIC_MLX5_ETH_INLINE_HDR_OFF + hdr_len + 15) & ~15u;
	uint32_t ds = 1 + eseg / 16 + (data_len ? 1 : 0);
	uint32_t nbb = gnic_dev_eth_nbb(hdr_len, data_len != 0);
	struct gnic_eth_wqe w;
	struct gnic_mlx5_ctrl_seg c;
	struct gnic_mlx5_data_seg d;
	uint8_t e[GNIC_MLX5_ETH_INLINE_HDR_OFF] = {0}, zero[16] = {0};

	for (int k = 0; k < 8; k++)
		w.bb.q[k] = 0;
	w.qp = qp;
	w.idx = idx;
	w.pos = w.b = 0;
	gnic_set_ctrl(&c, qp, idx, GNIC_MLX5_OPCODE_SEND, ds,
	              gnic_dev_ctrl_flags(qp, idx, nbb, flags & GNIC_DEV_F_SIGNAL), 0);
	gnic_eth_wqe_put(&w, &c, sizeof(c));
	e[4] = (uint8_t)((flags & GNIC_ETH_TX_L3_CSUM ? GNIC_MLX5_ETH_WQE_L3_CSUM : 0) |
	                 (flags & GNIC_ETH_TX_L4_CSUM ? GNIC_MLX5_ETH_WQE_L4_CSUM : 0));
	e[12] = (uint8_t)(hdr_len >> 8); /* inline_hdr_sz, big-endian */
	e[13] = (uint8_t)hdr_len;
	gnic_eth_wqe_put(&w, e, sizeof(e));
	gnic_eth_wqe_put(&w, hdr, hdr_len);
	gnic_eth_wqe_put(&w, zero, (16 - (GNIC_MLX5_ETH_INLINE_HDR_OFF + hdr_len) % 16) % 16);
	if (data_len) {
		gnic_set_data(&d, data, lkey, data_len);
		gnic_eth_wqe_put(&w, &d, sizeof(d));
	}
	if (w.pos) /* the last BB, its tail zero */
		gnic_copy_words(gnic_dev_sq_slot(qp, idx + w.b), w.bb.q, GNIC_MLX5_SEND_WQE_BB);
	if (out && nbb == 1)
		*out = w.bb;
	qp->wqe_nbb[idx & (qp->sq_wqe_cnt - 1)] = (uint8_t)nbb;
}

/* A frame whose whole bytes lie in registered memory at frame (readable by
 * the calling thread at that address, and the NIC's address of them too:
 * GPU memory, or host memory of a CPU context), lkey its MR's. flags:
 * GNIC_ETH_TX_* | GNIC_DEV_F_SIGNAL. */
GNIC_DEVFN int gnic_dev_eth_send(struct gnic_dev_eth *eth, const void *frame, uint32_t lkey,
                                 uint32_t len, uint32_t flags)
{
	struct gnic_dev_qp *qp = eth->qp;
	union gnic_bb bb;
	uint64_t idx;
	int rc;

	if (len < GNIC_ETH_MIN_INLINE || len > GNIC_DEV_MAX_MSG)
		return GNIC_DEV_ERR_INVAL;
	rc = gnic_dev_eth_reserve(eth, 1, &idx);
	if (rc)
		return rc;
	gnic_dev_eth_wqe(qp, idx, frame, GNIC_ETH_MIN_INLINE,
	                 (uint64_t)(uintptr_t)frame + GNIC_ETH_MIN_INLINE, lkey,
	                 len - GNIC_ETH_MIN_INLINE, flags, &bb);
	eth->tx_mark[idx & (qp->sq_wqe_cnt - 1)] = 0; /* no buffer of the pool */
	return gnic_dev_sq_commit(qp, idx, 1, &bb);
}

/* hdr_len bytes of headers (GNIC_ETH_MIN_INLINE..GNIC_ETH_MAX_HDR, from any
 * memory the thread reads: copied into the WQE) followed on the wire by
 * payload_len bytes at NIC address payload of MR lkey (0: none). */
GNIC_DEVFN int gnic_dev_eth_send_hdr(struct gnic_dev_eth *eth, const void *hdr, uint32_t hdr_len,
                                     uint64_t payload, uint32_t lkey, uint32_t payload_len,
                                     uint32_t flags)
{
	struct gnic_dev_qp *qp = eth->qp;
	uint32_t nbb = gnic_dev_eth_nbb(hdr_len, payload_len != 0);
	union gnic_bb bb;
	uint64_t idx;
	int rc;

	if (hdr_len < GNIC_ETH_MIN_INLINE || hdr_len > GNIC_ETH_MAX_HDR ||
	    payload_len > GNIC_DEV_MAX_MSG)
		return GNIC_DEV_ERR_INVAL;
	rc = gnic_dev_eth_reserve(eth, nbb, &idx);
	if (rc)
		return rc;
	gnic_dev_eth_wqe(qp, idx, hdr, hdr_len, payload, lkey, payload_len, flags, &bb);
	eth->tx_mark[idx & (qp->sq_wqe_cnt - 1)] = 0;
	return gnic_dev_sq_commit(qp, idx, nbb, nbb == 1 ? &bb : NULL);
}

/* The send WQE of pool buffer buf (len bytes) at idx, and its mark. */
GNIC_DEVFN void gnic_dev_eth_wqe_buf(struct gnic_dev_eth *eth, uint64_t idx, uint32_t buf,
                                     uint32_t len, uint32_t flags, union gnic_bb *out)
{
	struct gnic_dev_qp *qp = eth->qp;
	const uint8_t *p = eth->pool + (size_t)buf * eth->buf_stride;

	gnic_dev_eth_wqe(qp, idx, p, GNIC_ETH_MIN_INLINE,
	                 eth->pool_iova + (uint64_t)buf * eth->buf_stride + GNIC_ETH_MIN_INLINE,
	                 eth->pool_lkey, len - GNIC_ETH_MIN_INLINE, flags, out);
	eth->tx_mark[idx & (qp->sq_wqe_cnt - 1)] = gnic_dev_eth_mark(idx, buf);
}

GNIC_DEVFN int gnic_dev_eth_buf_ok(const struct gnic_dev_eth *eth, uint32_t buf, uint32_t len)
{
	return buf < eth->nbuf && len >= GNIC_ETH_MIN_INLINE && len <= eth->buf_stride;
}

/* Send len bytes of pool buffer buf, one that rx_burst handed out (a
 * received frame, rewritten in place, or another frame built there); the
 * buffer goes back to the receive queue when the send has completed
 * (gnic_dev_eth_tx_poll after its CQE). The caller gives the buffer up. */
GNIC_DEVFN int gnic_dev_eth_send_buf(struct gnic_dev_eth *eth, uint32_t buf, uint32_t len,
                                     uint32_t flags)
{
	union gnic_bb bb;
	uint64_t idx;
	int rc;

	if (!gnic_dev_eth_buf_ok(eth, buf, len))
		return GNIC_DEV_ERR_INVAL;
	rc = gnic_dev_eth_reserve(eth, 1, &idx);
	if (rc)
		return rc;
	gnic_dev_eth_wqe_buf(eth, idx, buf, len, flags, &bb);
	return gnic_dev_sq_commit(eth->qp, idx, 1, &bb);
}

/* Send pkts[i].len bytes of pool buffer pkts[i].buf for i < n: one
 * reservation, one doorbell (flags apply to each; GNIC_DEV_F_SIGNAL to the
 * last). All checked first: GNIC_DEV_ERR_INVAL sends nothing. */
GNIC_DEVFN int gnic_dev_eth_send_burst(struct gnic_dev_eth *eth, const struct gnic_eth_pkt *pkts,
                                       uint32_t n, uint32_t flags)
{
	uint64_t idx;
	int rc;

	if (n == 0)
		return GNIC_DEV_OK;
	if (n > eth->qp->sq_wqe_cnt)
		return GNIC_DEV_ERR_INVAL;
	for (uint32_t i = 0; i < n; i++)
		if (!gnic_dev_eth_buf_ok(eth, pkts[i].buf, pkts[i].len))
			return GNIC_DEV_ERR_INVAL;
	rc = gnic_dev_eth_reserve(eth, n, &idx);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < n; i++)
		gnic_dev_eth_wqe_buf(eth, idx + i, pkts[i].buf, pkts[i].len,
		                     i + 1 == n ? flags : flags & ~(uint32_t)GNIC_DEV_F_SIGNAL,
		                     NULL);
	return gnic_dev_sq_commit(eth->qp, idx, n, NULL);
}

/* Wait until every send posted before has completed and its buffer is back
 * in the receive queue (a signaled NOP behind them; nothing when every send
 * has been recycled already). */
GNIC_DEVFN int gnic_dev_eth_flush(struct gnic_dev_eth *eth)
{
	struct gnic_dev_qp *qp = eth->qp;
	struct gnic_wait w;
	uint64_t idx;
	int rc;

	if (gnic_dev_failed(qp))
		return GNIC_DEV_ERR_QP;
	if (gnic_load_acq64(&eth->tx_recycled) >= gnic_load_acq64(&qp->sq_reserved))
		return GNIC_DEV_OK; /* nothing outstanding */
	rc = gnic_dev_eth_reserve(eth, 1, &idx);
	if (rc)
		return rc;
	gnic_dev_wqe_nop(qp, idx, GNIC_DEV_F_SIGNAL);
	eth->tx_mark[idx & (qp->sq_wqe_cnt - 1)] = 0;
	rc = gnic_dev_sq_commit(qp, idx, 1, NULL);
	if (rc == GNIC_DEV_OK)
		rc = gnic_dev_wait(qp, idx + 1);
	gnic_wait_init(&w, qp->timeout_ns);
	while (rc >= 0 && gnic_load_acq64(&eth->tx_recycled) < idx + 1) {
		rc = gnic_dev_eth_tx_poll(eth);
		if (rc >= 0 && gnic_wait_expired(&w))
			rc = gnic_dev_fail(qp, GNIC_DEV_ERR_TIMEOUT, NULL);
	}
	return rc < 0 ? rc : GNIC_DEV_OK;
}

/* ---- warp scope (CUDA) ---------------------------------------------------------
 * Every lane of the warp calls together (see gnic_dev.cuh's warp calls). */
#if GNIC_ON_GPU

/* Lane 0 takes up to one frame per lane; *pkt is this lane's. Returns 1
 * (this lane has a frame), 0, or an error (the same in every lane). */
GNIC_DEVFN int gnic_dev_eth_rx_burst_warp(struct gnic_dev_eth *eth, struct gnic_eth_pkt *pkt)
{
	unsigned mask = gnic_warp_lanes();
	uint32_t lane = gnic_cta_tid() & 31;
	struct gnic_eth_pkt got[32];
	int n = 0;

	__syncwarp(mask);
	if (lane == 0)
		n = gnic_dev_eth_rx_burst(eth, got, (uint32_t)__popc(mask));
	n = __shfl_sync(mask, n, 0);
	if (n <= 0)
		return n;
	/* frame i from lane 0 to lane i, field by field */
	for (int i = 0; i < n; i++) {
		unsigned long long data =
		    __shfl_sync(mask, (unsigned long long)(uintptr_t)got[i].data, 0);
		uint32_t len = __shfl_sync(mask, got[i].len, 0),
		         buf = __shfl_sync(mask, got[i].buf, 0);
		uint32_t tag = __shfl_sync(mask, got[i].tag, 0),
		         fl = __shfl_sync(mask, got[i].flags, 0);

		if ((int)lane == i) {
			pkt->data = (uint8_t *)(uintptr_t)data;
			pkt->len = len;
			pkt->buf = buf;
			pkt->tag = tag;
			pkt->flags = fl;
		}
	}
	return (int)lane < n;
}

/* Each lane with len != 0 sends pool buffer buf; one reservation and one
 * doorbell for the warp. Lanes with len == 0 post a NOP (no buffer). */
GNIC_DEVFN int gnic_dev_eth_send_buf_warp(struct gnic_dev_eth *eth, uint32_t buf, uint32_t len,
                                          uint32_t flags)
{
	unsigned mask = gnic_warp_lanes();
	uint32_t lane = gnic_cta_tid() & 31, n = __popc(mask);
	int bad = len && !gnic_dev_eth_buf_ok(eth, buf, len);
	unsigned long long base = 0;
	int rc = 0;

	__syncwarp(mask);
	if (__any_sync(mask, bad))
		return GNIC_DEV_ERR_INVAL;
	if (lane == 0)
		rc = gnic_dev_eth_reserve(eth, n, (uint64_t *)&base);
	rc = __shfl_sync(mask, rc, 0);
	if (rc)
		return rc;
	base = __shfl_sync(mask, base, 0);
	if (len) {
		gnic_dev_eth_wqe_buf(eth, base + lane, buf, len,
		                     flags & ~(uint32_t)GNIC_DEV_F_SIGNAL, NULL);
	} else {
		gnic_dev_wqe_nop(eth->qp, base + lane, 0);
		eth->tx_mark[(base + lane) & (eth->qp->sq_wqe_cnt - 1)] = 0;
	}
	__syncwarp(mask);
	if (lane == 0)
		rc = gnic_dev_sq_commit(eth->qp, base, n, NULL);
	return __shfl_sync(mask, rc, 0);
}

#else

GNIC_DEVFN int gnic_dev_eth_rx_burst_warp(struct gnic_dev_eth *eth, struct gnic_eth_pkt *pkt)
{
	return gnic_dev_eth_rx_burst(eth, pkt, 1);
}

GNIC_DEVFN int gnic_dev_eth_send_buf_warp(struct gnic_dev_eth *eth, uint32_t buf, uint32_t len,
                                          uint32_t flags)
{
	return len ? gnic_dev_eth_send_buf(eth, buf, len, flags) : GNIC_DEV_OK;
}

#endif /* GNIC_ON_GPU */

/* ---- the hand-off ring ------------------------------------------------------------ */

/* Hand the host one entry: wait (bounded by ring->timeout_ns) for a free
 * one, fill it, mark it ready. GNIC_DEV_ERR_TIMEOUT: the host freed none in
 * time; nothing was taken, the ring is as before. Any threads may push. */
GNIC_DEVFN int gnic_dev_ring_push(struct gnic_dev_ring *ring, uint64_t addr, uint32_t len,
                                  uint32_t tag, uint64_t user)
{
	volatile struct gnic_ring_entry *e;
	struct gnic_wait w;
	uint64_t h;

	gnic_wait_init(&w, ring->timeout_ns);
	for (;;) {
		h = gnic_load_acq64(&ring->head);
		if (h - gnic_load_sys64(ring->tail) < ring->cnt &&
		    gnic_cas_sc64(&ring->head, h, h + 1) == h)
			break;
		if (gnic_wait_expired(&w))
			return GNIC_DEV_ERR_TIMEOUT;
	}
	e = &ring->ent[h & (ring->cnt - 1)];
	e->addr = addr;
	e->len = len;
	e->tag = tag;
	e->user = user;
	gnic_store_sys64((void *)&e->seq, h + 1); /* after the rest, for the host */
	return GNIC_DEV_OK;
}

#endif /* GNIC_DEV_ETH_CUH */
