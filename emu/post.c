/* SPDX-License-Identifier: MIT */
/*
 * post_send / post_recv: the WQE encoder.
 *
 * One encoder for both ways of posting a send: ibv_post_send's ibv_send_wr
 * and the ibv_wr_* builder calls (qp_ex.c) each become an emu_send_req,
 * which emu_post_one() checks and writes into the SQ.
 *
 * Exactly what mlx5 software writes for an RC QP: send WQEs of 16-byte
 * segments in 64-byte basic blocks (BBs), a doorbell record update, then the
 * 8-byte doorbell register write; receive WQEs of data segments, published
 * through the doorbell record only. The engine reads nothing else, so a GPU
 * thread writing the same bytes through mlx5dv drives the NIC identically.
 *
 * Ordering contract with the engine (the "device"): WQE bytes, then the
 * doorbell record (release store), then the doorbell register (release
 * store). Whichever of the two the engine reads with acquire, the WQE bytes
 * before it are visible.
 */
#include <errno.h>
#include <string.h>

#include "av.h"
#include "emu.h"

#define SEND_FLAGS_OK (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)
/* A RAW_PACKET QP's WQE has an Ethernet segment after the ctrl: 16 bytes
 * with no inline header, as rdma-core builds it for a device whose minimal
 * inline mode is "none" (ConnectX-5 and later); IP_CSUM sets its cs_flags. */
#define SEND_FLAGS_RAW (SEND_FLAGS_OK | IBV_SEND_IP_CSUM)
#define ETH_SEG_DS     1
#define WQE_MAX_BYTES  (GNIC_MLX5_MAX_WQE_BB * GNIC_MLX5_SEND_WQE_BB)

/* What one verbs opcode becomes on the wire. */
struct wqe_kind {
	uint8_t opcode; /* GNIC_MLX5_OPCODE_* */
	uint8_t wc_op;  /* enum ibv_wc_opcode reported at completion */
	bool raddr;     /* has a remote address segment */
	bool atomic;    /* has an atomic segment */
	bool imm;       /* carries immediate data */
	bool inline_ok; /* may carry its payload inline */
	bool dgram;     /* has a datagram segment (UD) */
};

static int wqe_kind(enum ibv_wr_opcode op, struct wqe_kind *k)
{
	static const struct wqe_kind kinds[] = {
	    [IBV_WR_SEND] = {GNIC_MLX5_OPCODE_SEND, IBV_WC_SEND, false, false, false, true, false},
	    [IBV_WR_SEND_WITH_IMM] = {GNIC_MLX5_OPCODE_SEND_IMM, IBV_WC_SEND, false, false, true,
	                              true, false},
	    [IBV_WR_RDMA_WRITE] = {GNIC_MLX5_OPCODE_RDMA_WRITE, IBV_WC_RDMA_WRITE, true, false,
	                           false, true, false},
	    [IBV_WR_RDMA_WRITE_WITH_IMM] = {GNIC_MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WC_RDMA_WRITE,
	                                    true, false, true, true, false},
	    [IBV_WR_RDMA_READ] = {GNIC_MLX5_OPCODE_RDMA_READ, IBV_WC_RDMA_READ, true, false, false,
	                          false, false},
	    [IBV_WR_ATOMIC_CMP_AND_SWP] = {GNIC_MLX5_OPCODE_ATOMIC_CS, IBV_WC_COMP_SWAP, true, true,
	                                   false, false, false},
	    [IBV_WR_ATOMIC_FETCH_AND_ADD] = {GNIC_MLX5_OPCODE_ATOMIC_FA, IBV_WC_FETCH_ADD, true,
	                                     true, false, false, false},
	};

	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*k = kinds[op];
		return 0;
	default:
		return EINVAL; /* SEND_WITH_INV, LOCAL_INV, BIND_MW, TSO, ... */
	}
}

/* The segments the QP type puts after the ctrl segment, as mlx5's
 * post_send does: RC those of the opcode; UC only a WRITE's remote address
 * (a READ or atomic gets none, and fails in the NIC); UD the datagram
 * segment, whatever the opcode. */
static void type_segments(const struct emu_qp *qp, enum ibv_wr_opcode op, struct wqe_kind *k)
{
	switch (qp->ibqp.qp_type) {
	case IBV_QPT_UC:
		k->raddr = op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
		k->atomic = false;
		break;
	case IBV_QPT_UD:
		k->raddr = k->atomic = false;
		k->dgram = true;
		break;
	default:
		break;
	}
}

/* ---- send validation ----------------------------------------------------- */

/* Inline piece i of a request: from its inline buffers (ibv_wr_set_inline_*)
 * or, for ibv_post_send, from the addresses of its SGEs. */
static size_t inl_piece(const struct emu_send_req *r, size_t i, const void **p)
{
	if (r->inl) {
		*p = r->inl[i].addr;
		return r->inl[i].length;
	}
	*p = (const void *)(uintptr_t)r->sge[i].addr;
	return r->sge[i].length;
}

static size_t inl_count(const struct emu_send_req *r)
{
	return r->inl ? r->num_inl : r->num_sge;
}

uint64_t emu_send_inline_len(const struct emu_send_req *r)
{
	uint64_t total = 0;
	const void *p;

	for (size_t i = 0; i < inl_count(r); i++)
		total += inl_piece(r, i, &p);
	return total;
}

static bool raw(const struct emu_qp *qp)
{
	return qp->ibqp.qp_type == IBV_QPT_RAW_PACKET;
}

static int check_send_req(const struct emu_qp *qp, const struct emu_send_req *r,
                          const struct wqe_kind *k, uint32_t *inline_len)
{
	uint64_t total;

	/* a frame: SEND only, and at least one SGE (rdma-core's
	 * copy_eth_inline_headers refuses none) */
	if (raw(qp) && (r->opcode != IBV_WR_SEND || (r->inl ? !r->num_inl : !r->num_sge)))
		return EINVAL;
	if ((r->send_flags & ~(raw(qp) ? SEND_FLAGS_RAW : SEND_FLAGS_OK)) ||
	    r->num_sge > (size_t)qp->max_send_sge || (r->num_sge && !r->sge) ||
	    (r->num_inl && !r->inl) || (k->dgram && (!r->ah || r->ah->context != qp->ibqp.context)))
		return EINVAL;
	*inline_len = 0;
	if (!(r->send_flags & IBV_SEND_INLINE)) {
		/* the responder returns the old 8-byte value into exactly one SGE */
		if (k->atomic && (r->num_sge != 1 || r->sge[0].length != 8))
			return EINVAL;
		return 0;
	}
	if (!k->inline_ok)
		return EINVAL;
	total = emu_send_inline_len(r);
	/* signed, as rdma-core compares: without SGEs or inline room a QP's
	 * max_inline is -4 (qp.c) and takes no inline data at all */
	if ((int64_t)total > qp->max_inline)
		return EINVAL;
	*inline_len = (uint32_t)total;
	return 0;
}

static uint32_t inline_ds(uint32_t len)
{
	/* a zero-length inline payload gets no segment at all */
	return len ? (len + 4 + GNIC_MLX5_SEG_SIZE - 1) / GNIC_MLX5_SEG_SIZE : 0;
}

/* mlx5 skips zero-length SGEs: byte_count 0 would mean 2 GiB to hardware. */
static uint32_t data_ds(const struct emu_send_req *r)
{
	uint32_t n = 0;

	for (size_t i = 0; i < r->num_sge; i++)
		n += r->sge[i].length != 0;
	return n;
}

static uint32_t send_ds(const struct emu_qp *qp, const struct emu_send_req *r,
                        const struct wqe_kind *k, uint32_t inline_len)
{
	uint32_t ds = 1 + k->raddr + k->atomic + (k->dgram ? 3 : 0) + (raw(qp) ? ETH_SEG_DS : 0);

	if (r->send_flags & IBV_SEND_INLINE)
		return ds + inline_ds(inline_len);
	return ds + data_ds(r);
}

/* ---- send segments -------------------------------------------------------- */

static uint8_t ctrl_flags(const struct emu_qp *qp, const struct emu_send_req *r)
{
	uint8_t f = 0;

	if ((r->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		f |= GNIC_MLX5_CTRL_CQ_UPDATE;
	if (r->send_flags & IBV_SEND_SOLICITED)
		f |= GNIC_MLX5_CTRL_SOLICITED;
	if (r->send_flags & IBV_SEND_FENCE)
		f |= GNIC_MLX5_FM_SMALL_AND_FENCE;
	return f;
}

static void set_ctrl_seg(struct gnic_mlx5_ctrl_seg *c, const struct emu_qp *qp,
                         const struct emu_send_req *r, const struct wqe_kind *k, uint32_t ds)
{
	c->opmod_idx_opcode =
	    gnic_be32(gnic_mlx5_ctrl_word0(0, (uint16_t)(qp->sq.head & 0xffff), k->opcode));
	c->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(qp->ibqp.qp_num, ds));
	c->fm_ce_se = ctrl_flags(qp, r);
	c->imm = k->imm ? r->imm : 0; /* already big-endian, as verbs defines it */
}

static void set_raddr_seg(struct gnic_mlx5_raddr_seg *s, uint64_t raddr, uint32_t rkey)
{
	s->raddr = gnic_be64(raddr);
	s->rkey = gnic_be32(rkey);
	s->reserved = 0;
}

static void set_atomic_seg(struct gnic_mlx5_atomic_seg *a, const struct emu_send_req *r)
{
	if (r->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		a->swap_add = gnic_be64(r->swap);
		a->compare = gnic_be64(r->compare_add);
	} else {
		a->swap_add = gnic_be64(r->compare_add);
		a->compare = 0;
	}
}

/* The AH's address vector with the WR's QPN (extended-AV bit set) and Q_Key. */
static void set_datagram_seg(uint8_t *p, const struct emu_send_req *r)
{
	struct emu_mlx5_av *av = (struct emu_mlx5_av *)p;

	memcpy(av, to_eah(r->ah)->av, sizeof(*av));
	av->dqp_dct = gnic_be32((r->remote_qpn & 0xffffff) | EMU_AV_EXTENDED);
	av->qkey = gnic_be32(r->remote_qkey);
}

static void set_data_seg(struct gnic_mlx5_data_seg *d, const struct ibv_sge *sge)
{
	d->byte_count = gnic_be32(sge->length);
	d->lkey = gnic_be32(sge->lkey);
	d->addr = gnic_be64(sge->addr);
}

static uint8_t *set_data_segs(uint8_t *p, const struct emu_send_req *r)
{
	for (size_t i = 0; i < r->num_sge; i++) {
		if (!r->sge[i].length)
			continue;
		set_data_seg((struct gnic_mlx5_data_seg *)p, &r->sge[i]);
		p += GNIC_MLX5_SEG_SIZE;
	}
	return p;
}

static void set_inline_seg(uint8_t *p, const struct emu_send_req *r, uint32_t len)
{
	struct gnic_mlx5_inl_seg *h = (struct gnic_mlx5_inl_seg *)p;

	if (!len)
		return;
	h->byte_count = gnic_be32(len | GNIC_MLX5_INLINE_SEG);
	p += sizeof(*h);
	for (size_t i = 0; i < inl_count(r); i++) {
		const void *src;
		size_t n = inl_piece(r, i, &src);

		memcpy(p, src, n);
		p += n;
	}
}

/* Build the whole WQE in wqe[] (zero padded to its last basic block). */
static void build_send_wqe(uint8_t *wqe, const struct emu_qp *qp, const struct emu_send_req *r,
                           const struct wqe_kind *k, uint32_t ds, uint32_t inline_len)
{
	uint8_t *p = wqe + GNIC_MLX5_SEG_SIZE;

	set_ctrl_seg((struct gnic_mlx5_ctrl_seg *)wqe, qp, r, k, ds);
	if (k->dgram) {
		set_datagram_seg(p, r);
		p += sizeof(struct emu_mlx5_av);
	}
	if (raw(qp)) {
		struct gnic_mlx5_eth_seg *e = (struct gnic_mlx5_eth_seg *)p;

		if (r->send_flags & IBV_SEND_IP_CSUM)
			e->cs_flags = GNIC_MLX5_ETH_WQE_L3_CSUM | GNIC_MLX5_ETH_WQE_L4_CSUM;
		p += ETH_SEG_DS * GNIC_MLX5_SEG_SIZE; /* inline_hdr_sz 0 */
	}
	if (k->raddr)
		set_raddr_seg((struct gnic_mlx5_raddr_seg *)p, r->raddr, r->rkey);
	p += k->raddr * GNIC_MLX5_SEG_SIZE;
	if (k->atomic) {
		set_atomic_seg((struct gnic_mlx5_atomic_seg *)p, r);
		p += GNIC_MLX5_SEG_SIZE;
	}
	if (r->send_flags & IBV_SEND_INLINE)
		set_inline_seg(p, r, inline_len);
	else
		set_data_segs(p, r);
}

static void record_wqe(struct emu_qp *qp, const struct emu_send_req *r, const struct wqe_kind *k,
                       uint32_t bb)
{
	uint32_t slot = emu_wq_slot(&qp->sq, qp->sq.head);

	qp->sq.wrid[slot] = r->wr_id;
	qp->sq_wqe_end[slot] = qp->sq.head + bb;
	qp->sq_opcode[slot] = k->wc_op;
	qp->sq.head += bb;
}

/* Encode one work request (caller holds sq.lock). On error nothing is
 * written. */
int emu_post_one(struct emu_qp *qp, const struct emu_send_req *r, uint64_t *ctrl8)
{
	_Alignas(64) uint8_t wqe[WQE_MAX_BYTES];
	struct wqe_kind k;
	uint32_t inline_len, ds, bb, used;
	int err = wqe_kind(r->opcode, &k);

	if (!err)
		type_segments(qp, r->opcode, &k);

	/* mlx5's order: the opcode, then a full SQ (always so without an SQ,
	 * max_send_wr 0), then the request itself */
	if (!err && emu_wq_used(&qp->sq) >= qp->sq.wqe_cnt)
		err = ENOMEM;
	if (!err)
		err = check_send_req(qp, r, &k, &inline_len);
	if (err)
		return err;
	ds = send_ds(qp, r, &k, inline_len);
	bb = (ds + 3) / 4;
	if (ds > GNIC_MLX5_MAX_DS || bb > GNIC_MLX5_MAX_WQE_BB)
		return EINVAL;
	/* the tail moves when poll_cq retires WQEs, outside sq.lock */
	used = emu_wq_used(&qp->sq);
	if (used + bb > qp->sq.wqe_cnt)
		return ENOMEM;
	memset(wqe, 0, (size_t)bb * GNIC_MLX5_SEND_WQE_BB);
	build_send_wqe(wqe, qp, r, &k, ds, inline_len);
	emu_wq_copy_in(&qp->sq, qp->sq.head, wqe, bb);
	memcpy(ctrl8, wqe, sizeof(*ctrl8));
	record_wqe(qp, r, &k, bb);
	return 0;
}

/* An ibv_send_wr as the encoder's request. */
static int send_req_of_wr(const struct ibv_send_wr *wr, struct emu_send_req *r)
{
	if (wr->num_sge < 0)
		return EINVAL;
	*r = (struct emu_send_req){
	    .wr_id = wr->wr_id,
	    .opcode = wr->opcode,
	    .send_flags = wr->send_flags,
	    .imm = wr->imm_data,
	    .sge = wr->sg_list,
	    .num_sge = (size_t)wr->num_sge,
	    .ah = wr->wr.ud.ah,
	    .remote_qpn = wr->wr.ud.remote_qpn,
	    .remote_qkey = wr->wr.ud.remote_qkey,
	};
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		r->raddr = wr->wr.atomic.remote_addr;
		r->rkey = wr->wr.atomic.rkey;
		r->compare_add = wr->wr.atomic.compare_add;
		r->swap = wr->wr.atomic.swap;
	} else {
		r->raddr = wr->wr.rdma.remote_addr;
		r->rkey = wr->wr.rdma.rkey;
	}
	return 0;
}

static int post_one(struct emu_qp *qp, const struct ibv_send_wr *wr, uint64_t *ctrl8)
{
	struct emu_send_req r;
	int err = send_req_of_wr(wr, &r);

	return err ? err : emu_post_one(qp, &r, ctrl8);
}

/* Record, then register: the 8-byte register write carries the first 8
 * bytes of the newest WQE's ctrl segment, into the BlueFlame half in turn. */
/* The WQE whose ctrl segment begins with ctrl8, copied from the SQ into a
 * register half in whole 64-byte blocks, ctrl first (mlx5_bf_copy). The
 * 8 bytes that would make it a doorbell go last, so the engine, which reads
 * the register as memory, never takes half a copy for a new one. */
static void bf_copy(struct emu_qp *qp, volatile uint64_t *reg, uint64_t ctrl8, uint32_t ds)
{
	struct gnic_mlx5_ctrl_seg c;
	uint32_t idx, words;

	memcpy(&c, &ctrl8, sizeof(ctrl8));
	idx = (gnic_be32(c.opmod_idx_opcode) >> 8) & 0xffff;
	words = (ds * GNIC_MLX5_SEG_SIZE + 63) / 64 * 8;
	/* a basic block (8 words) at a time: the next one may wrap to the SQ's start */
	for (uint32_t w = 0; w < words; w += 8) {
		const uint64_t *src = (const uint64_t *)emu_wq_at(&qp->sq, idx + w / 8);

		for (uint32_t k = w ? 0 : 1; k < 8; k++)
			__atomic_store_n(reg + w + k, src[k], __ATOMIC_RELAXED);
	}
	__atomic_store_n(reg, ctrl8, __ATOMIC_RELEASE);
}

void emu_ring_send_doorbell_nreq(struct emu_qp *qp, uint64_t ctrl8, unsigned int nreq)
{
	struct emu_bfreg *bf = qp->bf;
	struct gnic_mlx5_ctrl_seg c;
	volatile uint64_t *reg;
	uint32_t ds;

	memcpy(&c, &ctrl8, sizeof(ctrl8));
	ds = gnic_be32(c.qpn_ds) & 0x3f;
	/* WQEs before the record, the record before the register */
	__atomic_store_n(&qp->dbrec[GNIC_MLX5_SND_DBR], gnic_be32(qp->sq.head & 0xffff),
	                 __ATOMIC_RELEASE);
	emu_bfreg_lock(bf); /* a shared register: one poster at a time, toggle included */
	reg = bf->reg + bf->offset / sizeof(uint64_t);
	if (nreq == 1 && !bf->no_copy && bf->buf_size && ds > 1 &&
	    ds <= bf->buf_size / GNIC_MLX5_SEG_SIZE)
		bf_copy(qp, reg, ctrl8, ds);
	else
		__atomic_store_n(reg, ctrl8, __ATOMIC_RELEASE);
	bf->offset ^= bf->buf_size;
	emu_bfreg_unlock(bf);
}

void emu_ring_send_doorbell(struct emu_qp *qp, uint64_t ctrl8)
{
	emu_ring_send_doorbell_nreq(qp, ctrl8, 2);
}

bool emu_send_allowed(int state)
{
	/* in ERR the engine completes new WQEs with WR_FLUSH_ERR */
	return state == IBV_QPS_RTS || state == IBV_QPS_ERR;
}

/* WRs before a failing one stay posted and are rung; *bad names the failing
 * one and nothing of it is written. */
EMU_EXPORT int gemu_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct emu_qp *qp = to_eqp(ibqp);
	uint64_t ctrl8 = 0;
	int posted = 0, err = 0;

	pthread_spin_lock(&qp->sq.lock);
	if (!emu_send_allowed(atomic_load_explicit(&qp->state, memory_order_acquire)))
		err = EINVAL;
	while (wr && !err) {
		err = post_one(qp, wr, &ctrl8);
		if (err)
			break;
		posted++;
		wr = wr->next;
	}
	if (posted)
		emu_ring_send_doorbell_nreq(qp, ctrl8, (unsigned int)posted);
	pthread_spin_unlock(&qp->sq.lock);
	if (posted)
		emu_engine_kick(qp);
	if (err && bad)
		*bad = wr;
	return err;
}

/* ---- receive ---------------------------------------------------------------- */

/* In mlx5's order: a full RQ first (so a QP on an SRQ, which has no RQ,
 * answers ENOMEM), then the SGEs. */
static int check_recv_wr(const struct emu_qp *qp, const struct ibv_recv_wr *wr)
{
	if (emu_wq_used(&qp->rq) >= qp->rq.wqe_cnt)
		return ENOMEM;
	if (wr->num_sge < 0 || wr->num_sge > qp->max_recv_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	return 0;
}

/* A list shorter than the stride ends with an INVALID_LKEY segment. */
static void write_recv_wqe(struct emu_qp *qp, const struct ibv_recv_wr *wr)
{
	uint32_t slot = emu_wq_slot(&qp->rq, qp->rq.head);
	struct gnic_mlx5_data_seg *seg = (struct gnic_mlx5_data_seg *)emu_wq_at(&qp->rq, slot);
	uint32_t nseg = qp->rq.stride / GNIC_MLX5_SEG_SIZE, j = 0;

	for (int i = 0; i < wr->num_sge; i++)
		if (wr->sg_list[i].length)
			set_data_seg(&seg[j++], &wr->sg_list[i]);
	if (j < nseg) {
		seg[j].byte_count = 0;
		seg[j].lkey = gnic_be32(GNIC_MLX5_INVALID_LKEY);
		seg[j].addr = 0;
	}
	qp->rq.wrid[slot] = wr->wr_id;
	qp->rq.head++;
}

EMU_EXPORT int gemu_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct emu_qp *qp = to_eqp(ibqp);
	uint32_t start;
	bool rung;
	int err = 0;

	pthread_spin_lock(&qp->rq.lock);
	start = qp->rq.head;
	if (atomic_load_explicit(&qp->state, memory_order_acquire) == IBV_QPS_RESET)
		err = EINVAL;
	while (wr && !err) {
		err = check_recv_wr(qp, wr);
		if (err)
			break;
		write_recv_wqe(qp, wr);
		wr = wr->next;
	}
	rung = qp->rq.head != start;
	if (rung) {
		/* release: the WQEs before the record */
		__atomic_store_n(&qp->dbrec[GNIC_MLX5_RCV_DBR], gnic_be32(qp->rq.head & 0xffff),
		                 __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&qp->rq.lock);
	if (rung)
		emu_engine_kick(qp);
	if (err && bad)
		*bad = wr;
	return err;
}
