/* SPDX-License-Identifier: MIT */
/*
 * The receive engine of WQs (rwq.h): one frame into a plain or a striding
 * RQ, as a ConnectX writes it and as mlx5e and DPDK's mlx5 PMD read it.
 *
 * Plain RQ: the WQE at the consumer index takes the frame across its data
 * segments (up to an INVALID_LKEY one); the CQE's wqe_counter names it.
 *
 * Striding RQ: WQE i is the 16-byte next segment, then one data segment
 * whose buffer holds 2^log_nstrides strides of 2^log_stride bytes. A frame
 * takes ceil((len + shift) / stride) whole strides of the current WQE,
 * starting at its first free stride (shift: 2 with two_byte_shift_en, the
 * frame then starts 2 bytes into its first stride). Its CQE has:
 *   wqe_id (bytes 2-3)        the WQE's index,
 *   wqe_counter               the index of the frame's first stride,
 *   byte_cnt                  bit 31 filler, bits 30-16 strides consumed,
 *                             bits 15-0 the frame's bytes.
 * A frame that does not fit in the strides the WQE has left first gets a
 * filler CQE: the filler bit, the strides left as consumed, byte count 0;
 * the WQE is then done and the frame goes to the next one. A WQE whose
 * last stride is taken is done too. A frame longer than a whole WQE is
 * dropped and counted (rx_too_long), like one with no WQE posted.
 *
 * Every CQE of a WQ carries the WQ's number in srqn_uidx (mlx5's user
 * index of the RWQ), the flow tag, header types and checksum bits as an
 * RQ's Ethernet CQE does, and with RSS the Toeplitz hash (bytes 12-15) and
 * its type (byte 16). A buffer the WQE's lkey may not write gives an error
 * CQE (LOCAL_PROT) and the WQ enters ERR; a WQ not in RDY drops frames.
 */
#include <string.h>

#include "rwq.h"
#include "wqe.h"

static uint16_t posted(const struct emu_rwq *wq)
{
	return (uint16_t)gnic_be32(
	    atomic_load_explicit((_Atomic uint32_t *)wq->dbrec, memory_order_acquire));
}

void emu_rwq_engine_reset(struct emu_rwq *wq)
{
	wq->ci = 0;
	wq->used = 0;
}

static uint8_t *wqe_at(const struct emu_rwq *wq, uint16_t idx)
{
	return wq->buf + (size_t)(idx & (wq->wqe_cnt - 1)) * wq->stride;
}

static void cqe_base(struct emu_cqe_info *ci, const struct emu_rwq *wq, const struct emu_pkt *p,
                     uint32_t tag)
{
	*ci = (struct emu_cqe_info){
	    .opcode = GNIC_MLX5_CQE_RESP_SEND,
	    .qpn = wq->wqn,
	    .eth = true,
	    .flow_tag = tag,
	};
	if (p) {
		ci->hds_ip_ext = emu_raw_csum_bits(p);
		ci->l4_hdr_type_etc = emu_raw_hdr_types(p);
	}
}

static void fail(struct emu_rwq *wq, uint16_t idx, uint32_t stride_idx)
{
	struct emu_cqe_info ci = {
	    .opcode = GNIC_MLX5_CQE_RESP_ERR,
	    .syndrome = GNIC_MLX5_SYND_LOCAL_PROT,
	    .wqe_counter = (uint16_t)(wq->striding ? stride_idx : idx),
	    .qpn = wq->wqn,
	};

	atomic_fetch_add_explicit(&emu_eth_counters(wq->ctx->dev)->rx_bad_wqe, 1,
	                          memory_order_relaxed);
	emu_info("WQ 0x%x: receive WQE %u names memory the WQ may not write: WQ in ERR", wq->wqn,
	         idx);
	atomic_store(&wq->state, IBV_WQS_ERR);
	emu_cqe_write(wq->cq, &ci);
}

static bool write_mem(struct emu_rwq *wq, uint32_t lkey, uint64_t addr, const void *src, uint32_t n)
{
	struct emu_mr *mr;

	return !emu_mr_check(wq->pd, lkey, addr, n, IBV_ACCESS_LOCAL_WRITE, &mr) &&
	       !emu_mem_write(mr, addr, src, n);
}

static void receive_plain(struct emu_rwq *wq, const struct emu_pkt *p, struct emu_cqe_info *ci)
{
	const struct gnic_mlx5_data_seg *seg = (const void *)wqe_at(wq, wq->ci);
	unsigned nseg = wq->stride / sizeof(*seg);
	uint64_t room = 0;
	uint32_t off = 0;

	for (unsigned i = 0; i < nseg && gnic_be32(seg[i].lkey) != GNIC_MLX5_INVALID_LKEY; i++)
		room += emu_seg_len(&seg[i]);
	if (room < p->len) {
		atomic_fetch_add_explicit(&emu_eth_counters(wq->ctx->dev)->rx_too_long, 1,
		                          memory_order_relaxed);
		return; /* the WQE stays posted, as an RQ's does */
	}
	for (unsigned i = 0; i < nseg && off < p->len; i++) {
		uint32_t n = emu_seg_len(&seg[i]);

		n = n > p->len - off ? p->len - off : n;
		if (!write_mem(wq, gnic_be32(seg[i].lkey), gnic_be64(seg[i].addr), p->data + off,
		               n)) {
			fail(wq, wq->ci++, 0);
			return;
		}
		off += n;
	}
	ci->wqe_counter = wq->ci++;
	ci->byte_cnt = p->len;
	/* counted before the CQE: whoever sees the frame sees it counted */
	atomic_fetch_add_explicit(&emu_eth_counters(wq->ctx->dev)->rx_delivered, 1,
	                          memory_order_relaxed);
	emu_cqe_write(wq->cq, ci);
}

/* The strides of the current WQE that are left, given back in a filler CQE. */
static void filler(struct emu_rwq *wq, uint32_t nstrides)
{
	struct emu_cqe_info ci;

	cqe_base(&ci, wq, NULL, 0);
	ci.mprq = true;
	ci.wqe_id = wq->ci;
	ci.wqe_counter = (uint16_t)wq->used;
	ci.byte_cnt = EMU_MPRQ_FILLER | (nstrides - wq->used) << 16;
	emu_cqe_write(wq->cq, &ci);
	wq->ci++;
	wq->used = 0;
}

static void receive_striding(struct emu_rwq *wq, const struct emu_pkt *p, struct emu_cqe_info *ci)
{
	struct emu_eth_counters *c = emu_eth_counters(wq->ctx->dev);
	uint32_t stride = 1u << wq->log_stride, nstrides = 1u << wq->log_nstrides;
	uint32_t shift = wq->shift2 ? 2 : 0, need = (p->len + shift + stride - 1) / stride;
	const struct gnic_mlx5_data_seg *seg;
	uint64_t addr;

	if (need > nstrides) {
		atomic_fetch_add_explicit(&c->rx_too_long, 1, memory_order_relaxed);
		return;
	}
	if (wq->used + need > nstrides) {
		filler(wq, nstrides);
		if (posted(wq) == wq->ci) {
			atomic_fetch_add_explicit(&c->rx_no_wqe, 1, memory_order_relaxed);
			return;
		}
	}
	seg = (const void *)(wqe_at(wq, wq->ci) + 16); /* after the next segment */
	addr = gnic_be64(seg->addr) + (uint64_t)wq->used * stride;
	if ((uint64_t)(wq->used + need) * stride > emu_seg_len(seg) ||
	    !write_mem(wq, gnic_be32(seg->lkey), addr + shift, p->data, p->len)) {
		fail(wq, wq->ci, wq->used);
		return;
	}
	ci->mprq = true;
	ci->wqe_id = wq->ci;
	ci->wqe_counter = (uint16_t)wq->used;
	ci->byte_cnt = need << 16 | p->len;
	atomic_fetch_add_explicit(&c->rx_delivered, 1, memory_order_relaxed);
	emu_cqe_write(wq->cq, ci);
	wq->used += need;
	if (wq->used == nstrides) {
		wq->ci++;
		wq->used = 0;
	}
}

void emu_rwq_receive(struct emu_rwq *wq, const struct emu_pkt *p, uint32_t tag, uint32_t hash,
                     uint8_t htype)
{
	struct emu_cqe_info ci;

	pthread_mutex_lock(&wq->eng_lock);
	if (atomic_load(&wq->state) != IBV_WQS_RDY || posted(wq) == wq->ci) {
		atomic_fetch_add_explicit(&emu_eth_counters(wq->ctx->dev)->rx_no_wqe, 1,
		                          memory_order_relaxed);
		pthread_mutex_unlock(&wq->eng_lock);
		return;
	}
	cqe_base(&ci, wq, p, tag);
	ci.rss_hash = hash;
	ci.rss_htype = htype;
	if (wq->striding)
		receive_striding(wq, p, &ci);
	else
		receive_plain(wq, p, &ci);
	pthread_mutex_unlock(&wq->eng_lock);
}
