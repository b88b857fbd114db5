/* SPDX-License-Identifier: MIT */
/*
 * gnic device data path: GPU threads (or CPU threads) drive an mlx5 QP.
 *
 * Include from CUDA (.cu) or plain C (.c): the same source runs on GPU
 * threads and on CPU threads (see gnic_port.h). Every call takes the struct
 * gnic_dev_qp that gnic_qp_dev() exported.
 *
 * The hot path is five steps, each a function below:
 *   reserve  gnic_dev_sq_reserve()  take basic blocks (BBs) of the SQ
 *   write    gnic_dev_wqe_*()       build the WQE in its slot
 *   publish  gnic_dev_sq_commit()   mark it ready, in SQ order
 *   ring     (inside commit)        doorbell record + register, BlueFlame, or CPU
 *   poll     gnic_dev_scq_poll()    consume CQEs, free SQ space
 *
 * Completions: a WQE asks for a CQE when the caller needs one (waits,
 * quiet, fetching atomics) and otherwise at least every qp->cqe_every BBs,
 * which is what keeps SQ space coming back. A CQE retires every WQE up to it.
 *
 * Errors: every call returns enum gnic_dev_status. Every wait is bounded by
 * qp->timeout_ns. The first error CQE or timeout marks the QP failed and is
 * recorded in qp->err for the host (gnic_qp_error()); later calls return
 * GNIC_DEV_ERR_QP at once, without posting, until the host resets the QP.
 *
 * GNIC_DB_PROXY: the same calls hand descriptors to libgnic's CPU proxy
 * thread instead of writing WQEs (gnic_dev_proxy.cuh); reserve takes ring
 * slots, waits wait for the proxy's completion count, and the contracts
 * above hold unchanged.
 *
 * Ordering: RC executes one QP's WQEs in order at the target, so a put
 * followed by a signal on the same QP lands data before the signal.
 * gnic_dev_fence() additionally makes later WQEs wait for earlier READs and
 * atomics; gnic_dev_quiet() waits for every earlier WQE to complete.
 */
#ifndef GNIC_DEV_CUH
#define GNIC_DEV_CUH

#include <stddef.h>
#include <stdint.h>

#include "gnic_dev.h"
#include "gnic_dev_proxy.h"
#include "gnic_port.h"

/* Flags of the posting calls. */
enum {
	GNIC_DEV_F_SIGNAL = 1 << 0,    /* ask for a CQE (the call returns a ticket to wait on) */
	GNIC_DEV_F_FENCE = 1 << 1,     /* wait for earlier READ/ATOMIC before starting */
	GNIC_DEV_F_NO_RESULT = 1 << 2, /* atomics: nobody reads the old value (no result slot) */
};

/* wait_signal comparisons */
enum gnic_cmp { GNIC_CMP_EQ, GNIC_CMP_NE, GNIC_CMP_GE, GNIC_CMP_GT, GNIC_CMP_LT, GNIC_CMP_LE };

#define GNIC_DEV_MAX_WQE_BB 16 /* the largest WQE these calls build (inline puts) */
/* The longest message: an mlx5 data segment's byte_count has 31 bits (bit
 * 31 is the inline flag) and reads 0 as 2 GiB, so 0 < len < 2^31 goes into
 * a data segment; a zero-length message carries none. */
#define GNIC_DEV_MAX_MSG 0x7fffffffu

/* ---- bounded waiting -------------------------------------------------------- */

struct gnic_wait {
	uint64_t deadline;
	uint32_t round;
	uint32_t max_round; /* backoff stops growing here */
};

GNIC_DEVFN void gnic_wait_init(struct gnic_wait *w, uint64_t timeout_ns)
{
	w->deadline = gnic_now_ns() + timeout_ns;
	w->round = 0;
	w->max_round = ~0u;
}

/* For hand-offs that take a few hundred ns (in-order publish, doorbell
 * lock): on a GPU a long sleep there serialises every post behind it. CPU
 * threads keep the growing backoff: they must yield to a descheduled peer. */
GNIC_DEVFN void gnic_wait_init_short(struct gnic_wait *w, uint64_t timeout_ns)
{
	gnic_wait_init(w, timeout_ns);
	if (GNIC_ON_GPU)
		w->max_round = 1;
}

/* Back off a little; non-zero once the deadline has passed. */
GNIC_DEVFN int gnic_wait_expired(struct gnic_wait *w)
{
	gnic_backoff(w->round < w->max_round ? w->round : w->max_round);
	w->round++;
	return (w->round & 15) == 0 && gnic_now_ns() > w->deadline;
}

/* ---- failure ------------------------------------------------------------------ */

GNIC_DEVFN int gnic_dev_failed(struct gnic_dev_qp *qp)
{
	return gnic_load_acq32(&qp->failed) != 0 ||
	       (qp->db_mode == GNIC_DB_PROXY && gnic_load_sys32(&qp->px->status) != 0);
}

/* Record the QP's first failure for the host; returns status. */
GNIC_DEVFN int gnic_dev_fail(struct gnic_dev_qp *qp, int status,
                             const struct gnic_mlx5_err_cqe *cqe)
{
	struct gnic_dev_err *e = qp->err;

	if (gnic_xchg32(&qp->failed, 1) != 0)
		return status;
	e->qpn = qp->qpn;
	if (cqe) {
		uint32_t sop = gnic_be32(cqe->s_wqe_opcode_qpn);

		e->syndrome = cqe->syndrome;
		e->vendor_syndrome = cqe->vendor_err_synd;
		e->opcode = (uint8_t)(sop >> 24);
		e->cqe_opcode = gnic_mlx5_cqe_opcode(cqe->op_own);
		e->wqe_counter = gnic_be16(cqe->wqe_counter);
	}
	gnic_store_sys32(&e->status, (uint32_t)status);
	return status;
}

/* ---- completions ---------------------------------------------------------------- */

GNIC_DEVFN int gnic_dev_lock(struct gnic_dev_qp *qp, uint32_t *lock)
{
	return qp->share == GNIC_SHARE_EXCLUSIVE || gnic_cas32(lock, 0, 1) == 0;
}

GNIC_DEVFN void gnic_dev_unlock(struct gnic_dev_qp *qp, uint32_t *lock)
{
	if (qp->share != GNIC_SHARE_EXCLUSIVE)
		gnic_store_rel32(lock, 0);
}

/* The last 4 bytes of a CQE (wqe_counter, signature, op_own), op_own read
 * with acquire: once it says "ours", the rest of the CQE is valid. The NIC
 * writes op_own last. CPU threads acquire just that byte (what mlx5
 * software polls, and what TSan pairs with the engine's release) and read
 * the rest only once the CQE is theirs: gnic_cqe_counter(). */
GNIC_DEVFN uint32_t gnic_cqe_tail(const struct gnic_mlx5_cqe64 *cqe)
{
#if GNIC_ON_GPU
	return gnic_load_sys32(&cqe->wqe_counter);
#else
	return (uint32_t)__atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE) << 24;
#endif
}

/* wqe_counter of an owned CQE, in host order. */
GNIC_DEVFN uint16_t gnic_cqe_counter(const struct gnic_mlx5_cqe64 *cqe, uint32_t tail)
{
#if GNIC_ON_GPU
	(void)cqe;
	return gnic_be16((uint16_t)tail);
#else
	(void)tail;
	return gnic_be16(cqe->wqe_counter);
#endif
}

/* Consume the send CQ's new CQEs and advance sq_retired. Returns the number
 * consumed (0 also when another thread holds the poller lock), or
 * GNIC_DEV_ERR_CQE on an error CQE. */
GNIC_DEVFN int gnic_dev_scq_poll(struct gnic_dev_qp *qp)
{
	const struct gnic_dev_cq *cq = &qp->scq;
	uint64_t ci, retired;
	int n = 0, rc = 0;

	if (qp->db_mode == GNIC_DB_PROXY) /* the proxy thread owns the send CQ */
		return 0;
	if (!gnic_dev_lock(qp, &qp->scq_lock))
		return 0;
	ci = qp->scq_ci;
	retired = qp->sq_retired;
	for (;;) {
		const struct gnic_mlx5_cqe64 *cqe = &cq->buf[ci & (cq->cqe_cnt - 1)];
		uint32_t tail = gnic_cqe_tail(cqe);
		uint8_t op_own = (uint8_t)(tail >> 24);
		uint16_t wc, opcode = gnic_mlx5_cqe_opcode(op_own);
		uint64_t idx;

		if (!gnic_mlx5_cqe_sw_owned(op_own, (uint32_t)ci, cq->cqe_cnt))
			break;
		ci++;
		if (opcode != GNIC_MLX5_CQE_REQ) {
			rc = gnic_dev_fail(qp, GNIC_DEV_ERR_CQE,
			                   (const struct gnic_mlx5_err_cqe *)cqe);
			break;
		}
		/* the CQE names the WQE's first BB in 16 bits; it is >= retired */
		wc = gnic_cqe_counter(cqe, tail);
		idx = retired + (uint16_t)(wc - (uint16_t)retired);
		retired = idx + qp->wqe_nbb[idx & (qp->sq_wqe_cnt - 1)];
		n++;
	}
	if (ci != qp->scq_ci) {
		qp->scq_ci = ci;
		gnic_store_sys32(cq->dbrec, gnic_be32((uint32_t)ci & 0xffffff));
		gnic_store_rel64(&qp->sq_retired, retired);
	}
	gnic_dev_unlock(qp, &qp->scq_lock);
	return rc ? rc : n;
}

/* ---- doorbells ------------------------------------------------------------------- */

/* The 8 bytes written to the doorbell register: {be32(pi << 8), be32(qpn << 8)}. */
GNIC_DEVFN uint64_t gnic_db_value(const struct gnic_dev_qp *qp, uint64_t pi)
{
	return ((uint64_t)gnic_be32(qp->qpn << 8) << 32) | gnic_be32((uint32_t)pi << 8);
}

/* WQEs are built through segment structs and copied out as words: the word
 * types may alias anything, or strict aliasing lets the compiler copy
 * before the segments are written (seen with gcc -O2). */
typedef uint64_t __attribute__((may_alias)) gnic_u64a_t;
typedef volatile gnic_u64a_t gnic_word_t;

GNIC_DEVFN void gnic_copy_words(void *dst, const void *src, uint32_t bytes)
{
	for (uint32_t i = 0; i < bytes / sizeof(gnic_word_t); i++)
		((gnic_word_t *)dst)[i] = ((const gnic_word_t *)src)[i];
}

/* The body of a BlueFlame copy (after its first word). On a GPU: word
 * stores to the mapped register. On CPU threads gnic-emu reads the register
 * as memory while they are written: word-sized atomic stores (relaxed: the
 * first word's release store orders the WQE; the NIC checks the copy). */
GNIC_DEVFN void gnic_bf_copy_words(void *reg, const void *src, uint32_t bytes)
{
#if defined(__CUDACC__)
	gnic_copy_words(reg, src, bytes);
#else
	for (uint32_t i = 0; i < bytes / 8; i++)
		__atomic_store_n((uint64_t *)reg + i, ((const gnic_u64a_t *)src)[i],
		                 __ATOMIC_RELAXED);
#endif
}

/* Tell the NIC that every WQE below pi is ready. bf_wqe: the last WQE (nbb
 * BBs, starting at pi - nbb), copied whole in BlueFlame mode. Caller holds
 * the doorbell lock (or owns the QP). A BF QP's register is its own (a thread
 * domain's, qp_bf.c), so bf_half is the register's toggle and needs no other
 * lock. */
GNIC_DEVFN void gnic_ring_locked(struct gnic_dev_qp *qp, uint64_t pi, const void *bf_wqe,
                                 uint32_t nbb)
{
	uint64_t *half;

	if (qp->db_mode == GNIC_DB_CPU) {
		gnic_store_sys64(qp->cpu_db, pi);
		gnic_store_rel64(&qp->sq_rung, pi);
		return;
	}
	gnic_store_sys32(&qp->dbrec[GNIC_MLX5_SND_DBR], gnic_be32((uint32_t)pi & 0xffff));
	half = qp->db_reg;
	if (qp->db_mode == GNIC_DB_BF && qp->bf_size) {
		half = qp->db_reg + qp->bf_half * (qp->bf_size / 8);
		qp->bf_half ^= 1;
		/* BlueFlame carries one WQE, and only when the NIC has been told
		 * of everything before it (the record above says the same); the
		 * WQE goes out in order, ctrl word first, as rdma-core's
		 * mlx5_bf_copy writes it. Otherwise: a plain doorbell. */
		if (bf_wqe && nbb * GNIC_MLX5_SEND_WQE_BB <= qp->bf_size &&
		    qp->sq_rung == pi - nbb) {
			gnic_mmio_store64(half, ((const gnic_u64a_t *)bf_wqe)[0]);
			gnic_bf_copy_words(half + 1, (const gnic_u64a_t *)bf_wqe + 1,
			                   nbb * GNIC_MLX5_SEND_WQE_BB - 8);
			gnic_store_rel64(&qp->sq_rung, pi);
			return;
		}
	}
	gnic_mmio_store64(half, gnic_db_value(qp, pi));
	gnic_store_rel64(&qp->sq_rung, pi);
}

/* Tell the NIC of every WQE published so far. Nobody waits for a doorbell:
 * in shared modes one thread at a time holds the doorbell token and rings
 * for everyone's WQEs up to sq_ready; a thread that finds the token taken
 * leaves its WQEs to the holder, which looks at sq_ready again after it let
 * the token go. Store-fence-load on both sides (sq_ready then the token
 * here, the token then sq_ready in the holder), so of a poster and the
 * holder at least one sees the other: no published WQE is left unrung.
 * end/bf_wqe/nbb: the caller's own WQE, BlueFlamed when it is the only one
 * to ring. */
GNIC_DEVFN int gnic_dev_ring(struct gnic_dev_qp *qp, uint64_t end, const void *bf_wqe, uint32_t nbb)
{
	uint64_t pi;

	if (qp->share == GNIC_SHARE_EXCLUSIVE) {
		if (end > qp->sq_rung)
			gnic_ring_locked(qp, end, bf_wqe, nbb);
		return GNIC_DEV_OK;
	}
	/* a caller that moved sq_ready fenced after it (gnic_dev_sq_advance) */
	while (gnic_trylock_sc32(&qp->db_lock)) {
		pi = gnic_load_acq64(&qp->sq_ready);
		if (pi > qp->sq_rung)
			gnic_ring_locked(qp, pi, pi == end ? bf_wqe : NULL, nbb);
		gnic_unlock_sc32(&qp->db_lock);
		gnic_fence_sc();
		if (gnic_load_sc64(&qp->sq_ready) == pi)
			break;
	}
	return GNIC_DEV_OK;
}

/* Ring for everything published (what batching held back). */
GNIC_DEVFN int gnic_dev_flush(struct gnic_dev_qp *qp)
{
	if (qp->db_mode == GNIC_DB_PROXY) /* the proxy takes descriptors as they come */
		return GNIC_DEV_OK;
	return gnic_dev_ring(qp, gnic_load_acq64(&qp->sq_ready), NULL, 0);
}

#include "gnic_dev_proxy.cuh"

/* ---- low level: reserve, write, commit ------------------------------------------ */

/* Wait until every WQE below ticket has completed. */
GNIC_DEVFN int gnic_dev_wait(struct gnic_dev_qp *qp, uint64_t ticket)
{
	struct gnic_wait w;
	int rc;

	if (gnic_px_on(qp))
		return gnic_px_wait_done(qp, ticket);
	gnic_wait_init(&w, qp->timeout_ns);
	while (gnic_load_acq64(&qp->sq_retired) < ticket) {
		rc = gnic_dev_flush(qp);
		if (rc == GNIC_DEV_OK)
			rc = gnic_dev_scq_poll(qp);
		if (rc < 0)
			return rc;
		if (gnic_load_acq64(&qp->sq_retired) >= ticket)
			break;
		if (gnic_dev_failed(qp))
			return GNIC_DEV_ERR_QP;
		if (gnic_wait_expired(&w))
			return gnic_dev_fail(qp, GNIC_DEV_ERR_TIMEOUT, NULL);
	}
	return GNIC_DEV_OK;
}

/* Wait until the SQ has room for every BB below end: until the BBs before
 * end - sq_wqe_cnt have completed. */
GNIC_DEVFN int gnic_dev_sq_wait_space(struct gnic_dev_qp *qp, uint64_t end)
{
	if (end - gnic_load_acq64(&qp->sq_retired) <= qp->sq_wqe_cnt)
		return GNIC_DEV_OK;
	return gnic_dev_wait(qp, end - qp->sq_wqe_cnt);
}

/* Take nbb consecutive BBs; *idx = the first. The caller must then write and
 * commit exactly those BBs (or the QP stalls until the timeout fails it).
 * More than the SQ holds could never be had: GNIC_DEV_ERR_INVAL, nothing taken. */
GNIC_DEVFN int gnic_dev_sq_reserve(struct gnic_dev_qp *qp, uint32_t nbb, uint64_t *idx)
{
	uint64_t first;

	if (nbb > qp->sq_wqe_cnt)
		return GNIC_DEV_ERR_INVAL;
	if (gnic_dev_failed(qp))
		return GNIC_DEV_ERR_QP;
	if (gnic_px_on(qp)) /* ring slots, one per BB */
		return gnic_px_reserve(qp, nbb, idx);
	if (qp->share == GNIC_SHARE_EXCLUSIVE) {
		first = qp->sq_reserved;
		qp->sq_reserved = first + nbb;
	} else {
		first = gnic_add64(&qp->sq_reserved, nbb);
	}
	*idx = first;
	return gnic_dev_sq_wait_space(qp, first + nbb);
}

/* The 64-byte slot of BB idx. */
GNIC_DEVFN uint8_t *gnic_dev_sq_slot(const struct gnic_dev_qp *qp, uint64_t idx)
{
	return qp->sq_buf + (size_t)(idx & (qp->sq_wqe_cnt - 1)) * GNIC_MLX5_SEND_WQE_BB;
}

/* fm_ce_se for a WQE of nbb BBs at idx: a CQE when asked, or when the WQE
 * crosses a cqe_every boundary (so space is always coming back). */
GNIC_DEVFN uint8_t gnic_dev_ctrl_flags(const struct gnic_dev_qp *qp, uint64_t idx, uint32_t nbb,
                                       uint32_t flags)
{
	uint8_t f = 0;

	if ((flags & GNIC_DEV_F_SIGNAL) || ((idx + nbb) & ~(uint64_t)(qp->cqe_every - 1)) !=
	                                       (idx & ~(uint64_t)(qp->cqe_every - 1)))
		f |= GNIC_MLX5_CTRL_CQ_UPDATE;
	if (flags & GNIC_DEV_F_FENCE)
		f |= GNIC_MLX5_FM_SMALL_AND_FENCE;
	return f;
}

GNIC_DEVFN void gnic_set_ctrl(struct gnic_mlx5_ctrl_seg *c, const struct gnic_dev_qp *qp,
                              uint64_t idx, uint8_t opcode, uint32_t ds, uint8_t fm_ce_se,
                              uint32_t imm_be)
{
	c->opmod_idx_opcode = gnic_be32(gnic_mlx5_ctrl_word0(0, (uint16_t)idx, opcode));
	c->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(qp->qpn, ds));
	c->signature = 0;
	c->rsvd[0] = 0;
	c->rsvd[1] = 0;
	c->fm_ce_se = fm_ce_se;
	c->imm = imm_be;
}

GNIC_DEVFN void gnic_set_raddr(struct gnic_mlx5_raddr_seg *r, uint64_t raddr, uint32_t rkey)
{
	r->raddr = gnic_be64(raddr);
	r->rkey = gnic_be32(rkey);
	r->reserved = 0;
}

GNIC_DEVFN void gnic_set_data(struct gnic_mlx5_data_seg *d, uint64_t addr, uint32_t lkey,
                              uint32_t len)
{
	d->byte_count = gnic_be32(len);
	d->lkey = gnic_be32(lkey);
	d->addr = gnic_be64(addr);
}

/* One BB built in registers, then stored to the SQ in wide stores. */
union gnic_bb {
	uint64_t q[8];
	uint8_t b[GNIC_MLX5_SEND_WQE_BB];
	struct {
		struct gnic_mlx5_ctrl_seg ctrl;
		struct gnic_mlx5_raddr_seg raddr;
		union {
			struct gnic_mlx5_data_seg data;
			struct gnic_mlx5_atomic_seg atomic;
		} s2;
		struct gnic_mlx5_data_seg s3;
	} seg;
};

/* Copy nbb BBs from wqe into the SQ at idx (wrapping at the end). */
GNIC_DEVFN void gnic_dev_sq_store(struct gnic_dev_qp *qp, uint64_t idx, const union gnic_bb *wqe,
                                  uint32_t nbb)
{
	for (uint32_t i = 0; i < nbb; i++)
		gnic_copy_words(gnic_dev_sq_slot(qp, idx + i), wqe[i].q, GNIC_MLX5_SEND_WQE_BB);
	qp->wqe_nbb[idx & (qp->sq_wqe_cnt - 1)] = (uint8_t)nbb;
}

/* RDMA WRITE / READ / SEND: ctrl + [raddr] + one data segment, one BB. The
 * WQE is built in *out (the caller keeps it for BlueFlame) and stored. */
GNIC_DEVFN void gnic_dev_wqe_rdma(struct gnic_dev_qp *qp, uint64_t idx, uint8_t opcode,
                                  uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                                  uint32_t len, uint32_t flags, uint32_t imm_be, union gnic_bb *out)
{
	union gnic_bb bb;
	uint8_t f = gnic_dev_ctrl_flags(qp, idx, 1, flags);
	uint32_t has_data = len != 0;

	if (gnic_px_on(qp)) {
		gnic_px_rdma(qp, idx, opcode, laddr, lkey, raddr, rkey, len, flags, imm_be);
		return;
	}
	for (int i = 2; i < 8; i++)
		bb.q[i] = 0;
	if (len > GNIC_DEV_MAX_MSG) { /* a lane of a warp/CTA call: its slot becomes a NOP */
		gnic_set_ctrl(&bb.seg.ctrl, qp, idx, GNIC_MLX5_OPCODE_NOP, 1, f, 0);
	} else if (opcode == GNIC_MLX5_OPCODE_SEND || opcode == GNIC_MLX5_OPCODE_SEND_IMM) {
		gnic_set_ctrl(&bb.seg.ctrl, qp, idx, opcode, 1 + has_data, f, imm_be);
		if (has_data)
			gnic_set_data((struct gnic_mlx5_data_seg *)&bb.seg.raddr, laddr, lkey, len);
	} else {
		gnic_set_ctrl(&bb.seg.ctrl, qp, idx, opcode, 2 + has_data, f, imm_be);
		gnic_set_raddr(&bb.seg.raddr, raddr, rkey);
		if (has_data)
			gnic_set_data(&bb.seg.s2.data, laddr, lkey, len);
	}
	gnic_dev_sq_store(qp, idx, &bb, 1);
	if (out)
		*out = bb;
}

/* ---- result slots ------------------------------------------------------------------
 * A fetching atomic's old value lands in scratch[] at the result slot of its
 * WQE index. Once its WQE has completed, SQ space lets posters lap the SQ,
 * and an atomic one lap or two later has the same slot: so a slot has an
 * owner, from before its WQE is written until the value is read, and an
 * atomic whose slot is owned waits for the read before writing its WQE.
 * Reserving idx has already waited until WQE idx - 2 * sq_wqe_cnt (the last
 * one with this slot) completed, so its owner only has its load left.
 * Atomics that want no value write the discard word instead, and puts touch
 * no slot: neither pays anything. */

GNIC_DEVFN uint32_t gnic_dev_result_slot(const struct gnic_dev_qp *qp, uint64_t idx)
{
	return (uint32_t)(idx & (2 * (uint64_t)qp->sq_wqe_cnt - 1));
}

/* Own the result slot of the reserved WQE idx, waiting while an earlier
 * atomic's value there is unread. Call before writing the WQE. Nobody else
 * claims this slot meanwhile: the next index with it gets through its
 * reservation only once WQE idx, not even written yet, has completed. */
GNIC_DEVFN int gnic_dev_result_claim(struct gnic_dev_qp *qp, uint64_t idx)
{
	uint32_t *owned = &qp->res_owned[gnic_dev_result_slot(qp, idx)];
	struct gnic_wait w;

	gnic_wait_init_short(&w, qp->timeout_ns);
	/* acquire: the owner's read of the slot is done before our WQE,
	 * hence the NIC's write of our value, can exist */
	while (gnic_load_acq32(owned)) {
		if (gnic_dev_failed(qp))
			return GNIC_DEV_ERR_QP;
		if (gnic_wait_expired(&w))
			return gnic_dev_fail(qp, GNIC_DEV_ERR_TIMEOUT, NULL);
	}
	/* the next claimant of this slot sees this store: it reserves only
	 * after our WQE completed, which the commit and the CQE order after it */
	gnic_store_rel32(owned, 1);
	return GNIC_DEV_OK;
}

/* The old value of the completed atomic at idx into *old (NULL: none, e.g.
 * after a failure), then give its slot back. The value was written by the
 * NIC before the CQE that retired idx, and the poller published sq_retired
 * with release after acquiring that CQE; the caller has acquired
 * sq_retired (gnic_dev_wait). The release orders the load before the next
 * owner's WQE. */
/* A fetched value as the NIC wrote it, in host order: the one place the
 * atomic response byte order (qp->atomic_be) is dealt with. */
GNIC_DEVFN uint64_t gnic_dev_result_value(const struct gnic_dev_qp *qp, uint64_t raw)
{
	return qp->atomic_be ? gnic_be64(raw) : raw;
}

GNIC_DEVFN void gnic_dev_result_release(struct gnic_dev_qp *qp, uint64_t idx, uint64_t *old)
{
	uint32_t slot = gnic_dev_result_slot(qp, idx);

	if (old)
		*old = gnic_dev_result_value(qp, gnic_load_sys64(&qp->scratch[slot]));
	gnic_store_rel32(&qp->res_owned[slot], 0);
}

/* ATOMIC FA / CS: ctrl + raddr + atomic + data (8-byte result), one BB. The
 * old value lands in the result slot of idx, readable after the WQE
 * completes; claim the slot before (gnic_dev_result_claim) and release it
 * after reading. With GNIC_DEV_F_NO_RESULT it goes to the discard word. */
GNIC_DEVFN void gnic_dev_wqe_atomic(struct gnic_dev_qp *qp, uint64_t idx, uint8_t opcode,
                                    uint64_t raddr, uint32_t rkey, uint64_t swap_add,
                                    uint64_t compare, uint32_t flags, union gnic_bb *out)
{
	uint64_t slot = flags & GNIC_DEV_F_NO_RESULT ? 2 * (uint64_t)qp->sq_wqe_cnt
	                                             : gnic_dev_result_slot(qp, idx);
	union gnic_bb bb;

	if (gnic_px_on(qp)) {
		gnic_px_atomic(qp, idx, opcode, raddr, rkey, swap_add, compare, flags);
		return;
	}
	gnic_set_ctrl(&bb.seg.ctrl, qp, idx, opcode, 4, gnic_dev_ctrl_flags(qp, idx, 1, flags), 0);
	gnic_set_raddr(&bb.seg.raddr, raddr, rkey);
	bb.seg.s2.atomic.swap_add = gnic_be64(swap_add);
	bb.seg.s2.atomic.compare = gnic_be64(compare);
	gnic_set_data(&bb.seg.s3, qp->scratch_iova + slot * 8, qp->scratch_lkey, 8);
	gnic_dev_sq_store(qp, idx, &bb, 1);
	if (out)
		*out = bb;
}

GNIC_DEVFN void gnic_dev_wqe_nop(struct gnic_dev_qp *qp, uint64_t idx, uint32_t flags)
{
	union gnic_bb bb;

	if (gnic_px_on(qp)) {
		gnic_px_nop(qp, idx, flags);
		return;
	}
	gnic_set_ctrl(&bb.seg.ctrl, qp, idx, GNIC_MLX5_OPCODE_NOP, 1,
	              gnic_dev_ctrl_flags(qp, idx, 1, flags), 0);
	for (int i = 2; i < 8; i++)
		bb.q[i] = 0;
	gnic_dev_sq_store(qp, idx, &bb, 1);
}

/* BBs an inline WRITE of len bytes takes. */
GNIC_DEVFN uint32_t gnic_dev_inline_nbb(uint32_t len)
{
	uint32_t ds = 2 + (4 + len + 15) / 16;

	return (ds * 16 + GNIC_MLX5_SEND_WQE_BB - 1) / GNIC_MLX5_SEND_WQE_BB;
}

/* RDMA WRITE with the data inside the WQE (len <= qp->max_inline), built
 * and stored one BB at a time (a 16-BB WQE would not fit in registers). */
GNIC_DEVFN void gnic_dev_wqe_put_inline(struct gnic_dev_qp *qp, uint64_t idx, const void *src,
                                        uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t flags)
{
	uint32_t nbb = gnic_dev_inline_nbb(len), ds = 2 + (4 + len + 15) / 16;
	const uint8_t *s = (const uint8_t *)src;
	union gnic_bb bb;
	uint32_t off = 0; /* of the data copied so far */

	if (gnic_px_on(qp)) {
		gnic_px_inline(qp, idx, nbb, src, len, raddr, rkey, flags);
		return;
	}
	for (uint32_t b = 0; b < nbb; b++) {
		uint32_t at = 0; /* where the data starts in this BB */

		for (int i = 0; i < 8; i++)
			bb.q[i] = 0;
		if (b == 0) {
			gnic_set_ctrl(&bb.seg.ctrl, qp, idx, GNIC_MLX5_OPCODE_RDMA_WRITE, ds,
			              gnic_dev_ctrl_flags(qp, idx, nbb, flags), 0);
			gnic_set_raddr(&bb.seg.raddr, raddr, rkey);
			*(gnic_be32_t *)(bb.b + 32) = gnic_be32(len | GNIC_MLX5_INLINE_SEG);
			at = 36;
		}
		for (; at < GNIC_MLX5_SEND_WQE_BB && off < len; at++)
			bb.b[at] = s[off++];
		gnic_copy_words(gnic_dev_sq_slot(qp, idx + b), bb.q, GNIC_MLX5_SEND_WQE_BB);
	}
	qp->wqe_nbb[idx & (qp->sq_wqe_cnt - 1)] = (uint8_t)nbb;
}

/* Whether m is the publish mark of a WQE at n within a scan from h. */
GNIC_DEVFN int gnic_dev_mark_ok(const struct gnic_dev_qp *qp, uint64_t m, uint64_t n, uint64_t h)
{
	return (m >> 16) == n && (m & 0xffff) && n - h < qp->sq_wqe_cnt;
}

/* Where the run of publish marks from h ends (h: none in place). After a
 * one-BB WQE (thread-scope posts) the marks of the next GNIC_SCAN_AHEAD BBs
 * are loaded at once, so their latencies overlap instead of adding up;
 * after a longer one (warp and CTA blocks) one mark at a time, as loads
 * ahead would only compete with the posters writing those lines. */
#define GNIC_SCAN_AHEAD 8
GNIC_DEVFN uint64_t gnic_dev_sq_scan(const struct gnic_dev_qp *qp, uint64_t h)
{
	uint32_t mask = qp->sq_wqe_cnt - 1;
	uint64_t n = h, m[GNIC_SCAN_AHEAD];

	for (;;) {
		uint64_t one = gnic_load_mark64(&qp->sq_pub[n & mask]);

		if (!gnic_dev_mark_ok(qp, one, n, h))
			return n;
		n += one & 0xffff;
		if ((one & 0xffff) != 1)
			continue;
		uint64_t base = n;

		for (int k = 0; k < GNIC_SCAN_AHEAD; k++)
			m[k] = gnic_load_mark64(&qp->sq_pub[(base + (uint64_t)k) & mask]);
		for (int k = 0; k < GNIC_SCAN_AHEAD; k++) {
			if (n != base + (uint64_t)k)
				continue; /* inside the WQE before */
			if (!gnic_dev_mark_ok(qp, m[k], n, h))
				return n;
			n += m[k] & 0xffff;
		}
	}
}

/* After publishing the WQE at idx: if sq_ready has reached it, move sq_ready
 * over every WQE whose publish mark is in place; 1 if this thread moved it.
 * Only the poster that sq_ready has reached carries, and it carries every
 * later WQE published meanwhile, so posters neither wait for their turn nor
 * all scan the same marks (they did: a profile of thread-scope posting had
 * 90% of its stalls in that scan). A mark is (first BB << 16) | nbb, valid
 * only for the lap it names (nbb <= sq_wqe_cnt <= 32768: a CTA publishes
 * its whole block with one mark); the marks in place are read first and
 * sq_ready moved over all of them with one compare-and-swap. The handshake
 * with gnic_dev_sq_commit() is store-fence-load on both sides (mark then
 * sq_ready there, sq_ready then mark here), so of a publisher and the
 * carrier at least one sees the other: no WQE is left behind. */
GNIC_DEVFN int gnic_dev_sq_advance(struct gnic_dev_qp *qp, uint64_t idx)
{
	uint64_t h = gnic_load_sc64(&qp->sq_ready);
	int moved = 0;

	if (h != idx) /* carried already, or an earlier WQE's poster will */
		return 0;
	for (;;) {
		uint64_t n = gnic_dev_sq_scan(qp, h);

		if (n == h)
			return moved;
		gnic_fence_acq(); /* the marks read acquire their posters' WQEs */
		if (gnic_cas_sc64(&qp->sq_ready, h, n) != h)
			return moved; /* a poster it reached carries on */
		moved = 1;
		gnic_fence_sc();
		h = n;
	}
}

/* Publish BBs [idx, idx + nbb), then ring (or leave it to batching).
 * bf_wqe: the WQE's bytes for BlueFlame, or NULL. The NIC sees WQEs in SQ
 * order: sq_ready only moves over a gap-free prefix of published WQEs. */
GNIC_DEVFN int gnic_dev_sq_commit(struct gnic_dev_qp *qp, uint64_t idx, uint32_t nbb,
                                  const void *bf_wqe)
{
	if (gnic_px_on(qp)) /* each descriptor was published as it was written */
		return GNIC_DEV_OK;
	if (qp->share == GNIC_SHARE_EXCLUSIVE) {
		gnic_store_rel64(&qp->sq_ready, idx + nbb);
	} else {
		/* another thread may ring for these WQEs: they must reach the
		 * NIC's side of the bus before the mark is seen (host-memory
		 * queues), so the poster releases at system scope itself */
		gnic_fence_rel_sys();
		/* release: whoever moves sq_ready over this mark (and so
		 * whoever rings) acquires this thread's WQE stores */
		gnic_store_sc64(&qp->sq_pub[idx & (qp->sq_wqe_cnt - 1)], (idx << 16) | nbb);
		gnic_fence_sc();
		/* a WQE that someone else carried forward is rung by them */
		if (!gnic_dev_sq_advance(qp, idx) && qp->db_batch <= 1)
			return GNIC_DEV_OK;
	}
	if (qp->db_batch > 1 && gnic_add32(&qp->unrung, 1) + 1 < qp->db_batch)
		return GNIC_DEV_OK;
	if (qp->db_batch > 1)
		gnic_store_rel32(&qp->unrung, 0);
	return gnic_dev_ring(qp, idx + nbb, bf_wqe, nbb);
}

/* ---- high level: thread scope ------------------------------------------------------
 * laddr: local buffer, as registered (gnic_mr_reg); raddr/rkey: the peer's
 * (gnic_rmem). ticket (may be NULL): with GNIC_DEV_F_SIGNAL, the value to
 * give gnic_dev_wait() for this operation. */

#if GNIC_ON_GPU
/* The calling thread's index in its CTA, as warps are formed from it. */
GNIC_DEVFN uint32_t gnic_cta_tid(void)
{
	return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/* Lanes of the calling warp that are in this call on the same shared QP
 * right now (the calling lane alone on an exclusive QP, or when the group
 * would not fit the SQ twice over). Lanes that arrive together were active
 * together: every sync below names exactly them, as coalesced groups do. */
GNIC_DEVFN unsigned gnic_dev_coalesced(const struct gnic_dev_qp *qp)
{
	unsigned group = __match_any_sync(__activemask(), (unsigned long long)(uintptr_t)qp);

	if (qp->share == GNIC_SHARE_EXCLUSIVE || 2 * (uint32_t)__popc(group) > qp->sq_wqe_cnt)
		return 1u << (gnic_cta_tid() & 31);
	return group;
}

/* Thread-scope posts of the lanes in group, coalesced as a warp call is: the
 * lowest lane reserves one block for all and publishes it, each lane writes
 * its own one-BB WQE at its rank in the group. Every lane gets the status. */
GNIC_DEVFN int gnic_dev_post_group(struct gnic_dev_qp *qp, unsigned group, uint8_t opcode,
                                   uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                                   uint32_t len, uint32_t flags, uint32_t imm_be, uint64_t *ticket)
{
	uint32_t lane = gnic_cta_tid() & 31;
	int leader = __ffs(group) - 1;
	uint32_t rank = __popc(group & ((1u << lane) - 1)), n = __popc(group);
	unsigned long long base = 0;
	int rc = 0;

	if ((int)lane == leader)
		rc = gnic_dev_sq_reserve(qp, n, (uint64_t *)&base);
	rc = __shfl_sync(group, rc, leader);
	if (rc)
		return rc;
	base = __shfl_sync(group, base, leader);
	gnic_dev_wqe_rdma(qp, base + rank, opcode, laddr, lkey, raddr, rkey, len, flags, imm_be,
	                  NULL);
	if (ticket)
		*ticket = base + rank + 1;
	__syncwarp(group);
	if ((int)lane == leader)
		rc = gnic_dev_sq_commit(qp, base, n, NULL);
	return __shfl_sync(group, rc, leader);
}
#endif

/* One WQE of one BB. On a GPU, lanes of a warp that post to the same shared
 * QP at the same time share one reservation, one publish and one doorbell
 * (as NVSHMEM's thread-scope calls coalesce); a lane alone posts alone and
 * its WQE may go by BlueFlame. */
GNIC_DEVFN int gnic_dev_post_rdma(struct gnic_dev_qp *qp, uint8_t opcode, const void *laddr,
                                  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t len,
                                  uint32_t flags, uint32_t imm_be, uint64_t *ticket)
{
	union gnic_bb bb;
	uint64_t idx;
	int rc;

	if (len > GNIC_DEV_MAX_MSG)
		return GNIC_DEV_ERR_INVAL;
#if GNIC_ON_GPU
	unsigned group = gnic_dev_coalesced(qp);

	if (group & (group - 1))
		return gnic_dev_post_group(qp, group, opcode, (uint64_t)(uintptr_t)laddr, lkey,
		                           raddr, rkey, len, flags, imm_be, ticket);
#endif
	rc = gnic_dev_sq_reserve(qp, 1, &idx);
	if (rc)
		return rc;
	gnic_dev_wqe_rdma(qp, idx, opcode, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, len,
	                  flags, imm_be, &bb);
	if (ticket)
		*ticket = idx + 1;
	return gnic_dev_sq_commit(qp, idx, 1, &bb);
}

/* RDMA WRITE of len bytes. Completes at the next quiet (or its ticket). */
GNIC_DEVFN int gnic_dev_put(struct gnic_dev_qp *qp, const void *laddr, uint32_t lkey,
                            uint64_t raddr, uint32_t rkey, uint32_t len, uint32_t flags,
                            uint64_t *ticket)
{
	return gnic_dev_post_rdma(qp, GNIC_MLX5_OPCODE_RDMA_WRITE, laddr, lkey, raddr, rkey, len,
	                          flags, 0, ticket);
}

/* RDMA WRITE with the bytes copied into the WQE: src needs no registration
 * and may be reused at once. len <= qp->max_inline. */
GNIC_DEVFN int gnic_dev_put_inline(struct gnic_dev_qp *qp, const void *src, uint32_t len,
                                   uint64_t raddr, uint32_t rkey, uint32_t flags)
{
	uint32_t nbb = gnic_dev_inline_nbb(len);
	uint64_t idx;
	int rc;

	if (len > qp->max_inline || nbb > GNIC_DEV_MAX_WQE_BB)
		return GNIC_DEV_ERR_INVAL;
	rc = gnic_dev_sq_reserve(qp, nbb, &idx);
	if (rc)
		return rc;
	gnic_dev_wqe_put_inline(qp, idx, src, len, raddr, rkey, flags);
	return gnic_dev_sq_commit(qp, idx, nbb, NULL);
}

/* RDMA READ of len bytes into laddr; wait with the ticket (or quiet). */
GNIC_DEVFN int gnic_dev_get(struct gnic_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr,
                            uint32_t rkey, uint32_t len, uint64_t *ticket)
{
	return gnic_dev_post_rdma(qp, GNIC_MLX5_OPCODE_RDMA_READ, laddr, lkey, raddr, rkey, len,
	                          ticket ? GNIC_DEV_F_SIGNAL : 0, 0, ticket);
}

/* RDMA READ, returning when the data is in laddr. */
GNIC_DEVFN int gnic_dev_get_wait(struct gnic_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr,
                                 uint32_t rkey, uint32_t len)
{
	uint64_t ticket;
	int rc = gnic_dev_get(qp, laddr, lkey, raddr, rkey, len, &ticket);

	return rc ? rc : gnic_dev_wait(qp, ticket);
}

/* Remote 64-bit atomics, returning the value before the operation (old may
 * be NULL: then no result slot is used). */
GNIC_DEVFN int gnic_dev_atomic(struct gnic_dev_qp *qp, uint8_t opcode, uint64_t raddr,
                               uint32_t rkey, uint64_t swap_add, uint64_t compare, uint64_t *old)
{
	uint32_t flags = GNIC_DEV_F_SIGNAL | (old ? 0 : GNIC_DEV_F_NO_RESULT);
	union gnic_bb bb;
	uint64_t idx;
	int rc = gnic_dev_sq_reserve(qp, 1, &idx);

	if (rc == GNIC_DEV_OK && old)
		rc = gnic_dev_result_claim(qp, idx);
	if (rc)
		return rc;
	gnic_dev_wqe_atomic(qp, idx, opcode, raddr, rkey, swap_add, compare, flags, &bb);
	rc = gnic_dev_sq_commit(qp, idx, 1, &bb);
	if (rc == GNIC_DEV_OK)
		rc = gnic_dev_wait(qp, idx + 1);
	if (old) /* given back also after a failure, so no poster waits for it */
		gnic_dev_result_release(qp, idx, rc == GNIC_DEV_OK ? old : NULL);
	return rc;
}

GNIC_DEVFN int gnic_dev_atomic_fetch_add(struct gnic_dev_qp *qp, uint64_t raddr, uint32_t rkey,
                                         uint64_t add, uint64_t *old)
{
	return gnic_dev_atomic(qp, GNIC_MLX5_OPCODE_ATOMIC_FA, raddr, rkey, add, 0, old);
}

GNIC_DEVFN int gnic_dev_atomic_cas(struct gnic_dev_qp *qp, uint64_t raddr, uint32_t rkey,
                                   uint64_t compare, uint64_t swap, uint64_t *old)
{
	return gnic_dev_atomic(qp, GNIC_MLX5_OPCODE_ATOMIC_CS, raddr, rkey, swap, compare, old);
}

/* Add to a remote 64-bit signal word without waiting. */
GNIC_DEVFN int gnic_dev_signal(struct gnic_dev_qp *qp, uint64_t sig_raddr, uint32_t sig_rkey,
                               uint64_t add, uint32_t flags)
{
	union gnic_bb bb;
	uint64_t idx;
	int rc = gnic_dev_sq_reserve(qp, 1, &idx);

	if (rc)
		return rc;
	gnic_dev_wqe_atomic(qp, idx, GNIC_MLX5_OPCODE_ATOMIC_FA, sig_raddr, sig_rkey, add, 0,
	                    flags | GNIC_DEV_F_NO_RESULT, &bb);
	return gnic_dev_sq_commit(qp, idx, 1, &bb);
}

/* put, then add to the peer's signal word: one reservation, one doorbell;
 * the target sees the data before the signal changes. */
GNIC_DEVFN int gnic_dev_put_signal(struct gnic_dev_qp *qp, const void *laddr, uint32_t lkey,
                                   uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t sig_raddr,
                                   uint32_t sig_rkey, uint64_t add, uint32_t flags)
{
	uint64_t idx;
	int rc;

	if (len > GNIC_DEV_MAX_MSG)
		return GNIC_DEV_ERR_INVAL;
	rc = gnic_dev_sq_reserve(qp, 2, &idx);
	if (rc)
		return rc;
	gnic_dev_wqe_rdma(qp, idx, GNIC_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)laddr, lkey,
	                  raddr, rkey, len, flags & GNIC_DEV_F_FENCE, 0, NULL);
	gnic_dev_wqe_atomic(qp, idx + 1, GNIC_MLX5_OPCODE_ATOMIC_FA, sig_raddr, sig_rkey, add, 0,
	                    (flags & GNIC_DEV_F_SIGNAL) | GNIC_DEV_F_NO_RESULT, NULL);
	return gnic_dev_sq_commit(qp, idx, 2, NULL);
}

/* SEND of len bytes to the peer's next posted receive. */
GNIC_DEVFN int gnic_dev_send(struct gnic_dev_qp *qp, const void *laddr, uint32_t lkey, uint32_t len,
                             uint32_t flags)
{
	return gnic_dev_post_rdma(qp, GNIC_MLX5_OPCODE_SEND, laddr, lkey, 0, 0, len, flags, 0,
	                          NULL);
}

/* Later WQEs start only after every earlier READ and atomic has completed. */
GNIC_DEVFN int gnic_dev_fence(struct gnic_dev_qp *qp)
{
	uint64_t idx;
	int rc = gnic_dev_sq_reserve(qp, 1, &idx);

	if (rc)
		return rc;
	gnic_dev_wqe_nop(qp, idx, GNIC_DEV_F_FENCE);
	return gnic_dev_sq_commit(qp, idx, 1, NULL);
}

/* Wait until every WQE posted before this call has completed. */
GNIC_DEVFN int gnic_dev_quiet(struct gnic_dev_qp *qp)
{
	uint64_t idx;
	int rc;

	if (gnic_px_on(qp))
		return gnic_px_quiet(qp);
	if (gnic_dev_failed(qp))
		return GNIC_DEV_ERR_QP;
	if (gnic_load_acq64(&qp->sq_retired) >= gnic_load_acq64(&qp->sq_reserved))
		return GNIC_DEV_OK;
	/* a signaled NOP behind everything: its CQE retires all before it */
	rc = gnic_dev_sq_reserve(qp, 1, &idx);
	if (rc)
		return rc;
	gnic_dev_wqe_nop(qp, idx, GNIC_DEV_F_SIGNAL);
	rc = gnic_dev_sq_commit(qp, idx, 1, NULL);
	return rc ? rc : gnic_dev_wait(qp, idx + 1);
}

/* Wait until the local 64-bit word at addr (written by the NIC) compares
 * true against value. GNIC_DEV_ERR_TIMEOUT after timeout_ns. */
GNIC_DEVFN int gnic_dev_wait_signal(const uint64_t *addr, int cmp, uint64_t value,
                                    uint64_t timeout_ns)
{
	struct gnic_wait w;

	gnic_wait_init(&w, timeout_ns);
	for (;;) {
		uint64_t v = gnic_load_sys64(addr);
		int ok = cmp == GNIC_CMP_EQ   ? v == value
		         : cmp == GNIC_CMP_NE ? v != value
		         : cmp == GNIC_CMP_GE ? v >= value
		         : cmp == GNIC_CMP_GT ? v > value
		         : cmp == GNIC_CMP_LT ? v < value
		                              : v <= value;

		if (ok)
			return GNIC_DEV_OK;
		if (gnic_wait_expired(&w))
			return GNIC_DEV_ERR_TIMEOUT;
	}
}

/* ---- receives ------------------------------------------------------------------------ */

/* Post one receive buffer (len bytes at laddr). */
GNIC_DEVFN int gnic_dev_recv_post(struct gnic_dev_qp *qp, void *laddr, uint32_t lkey, uint32_t len)
{
	struct gnic_dev_qp *q = qp;
	struct gnic_mlx5_data_seg *seg;
	struct gnic_wait w;
	uint64_t idx;

	if (!q->rq_wqe_cnt || len > GNIC_DEV_MAX_MSG)
		return GNIC_DEV_ERR_INVAL;
	if (gnic_dev_failed(q))
		return GNIC_DEV_ERR_QP;
	gnic_wait_init(&w, q->timeout_ns);
	while (!gnic_dev_lock(q, &q->rq_lock))
		if (gnic_wait_expired(&w))
			return GNIC_DEV_ERR_TIMEOUT;
	idx = q->rq_posted;
	if (idx - gnic_load_acq64(&q->rq_done) >= q->rq_wqe_cnt) {
		gnic_dev_unlock(q, &q->rq_lock);
		return GNIC_DEV_ERR_INVAL; /* RQ full: consume completions first */
	}
	seg = (struct gnic_mlx5_data_seg *)(q->rq_buf +
	                                    (size_t)(idx & (q->rq_wqe_cnt - 1)) * q->rq_stride);
	/* no segment for a zero-length buffer (byte_count 0 reads as 2 GiB),
	 * as rdma-core's post_recv skips zero-length SGEs */
	if (len) {
		gnic_set_data(seg, (uint64_t)(uintptr_t)laddr, lkey, len);
		seg++;
	}
	if ((uint8_t *)seg <
	    (uint8_t *)q->rq_buf + (size_t)((idx & (q->rq_wqe_cnt - 1)) + 1) * q->rq_stride)
		gnic_set_data(seg, 0, GNIC_MLX5_INVALID_LKEY, 0);
	q->rq_posted = idx + 1;
	gnic_store_sys32(&q->dbrec[GNIC_MLX5_RCV_DBR], gnic_be32((uint32_t)(idx + 1) & 0xffff));
	gnic_dev_unlock(q, &q->rq_lock);
	return GNIC_DEV_OK;
}

/* A receive CQE with the SEND's data in it (scatter-to-CQE, which libgnic
 * turns off; a provider without mlx5dv_create_qp leaves it on): the data
 * goes to the posted buffer, as rdma-core's poll_cq would copy it.
 * GNIC_DEV_ERR_INVAL: it does not fit (the NIC did not check: the data is
 * dropped). */
GNIC_DEVFN int gnic_dev_recv_unscatter(struct gnic_dev_qp *qp, const struct gnic_mlx5_cqe64 *cqe,
                                       uint8_t op_own)
{
	const struct gnic_mlx5_data_seg *seg;
	const volatile uint8_t *src = (const volatile uint8_t *)cqe;
	uint8_t *dst;
	uint32_t n;

	if ((op_own & GNIC_MLX5_CQE_FORMAT_MASK) != GNIC_MLX5_INLINE_SCATTER_32)
		return GNIC_DEV_OK;
	seg =
	    (const struct gnic_mlx5_data_seg *)(qp->rq_buf + (size_t)(gnic_be16(cqe->wqe_counter) &
	                                                              (qp->rq_wqe_cnt - 1)) *
	                                                         qp->rq_stride);
	n = gnic_be32(cqe->byte_cnt);
	if (n > GNIC_MLX5_SCATTER_32_MAX || n > gnic_be32(seg->byte_count))
		return GNIC_DEV_ERR_INVAL;
	dst = (uint8_t *)(uintptr_t)gnic_be64(seg->addr);
	for (uint32_t i = 0; i < n; i++)
		dst[i] = src[i];
	return GNIC_DEV_OK;
}

/* Wait for the next receive completion: its byte count and (for SEND_IMM /
 * WRITE_IMM) immediate, big-endian as sent. */
GNIC_DEVFN int gnic_dev_recv_wait(struct gnic_dev_qp *qp, uint32_t *len, uint32_t *imm_be)
{
	const struct gnic_dev_cq *cq = &qp->rcq;
	struct gnic_wait w;

	gnic_wait_init(&w, qp->timeout_ns);
	for (;;) {
		if (gnic_dev_lock(qp, &qp->rcq_lock)) {
			uint64_t ci = qp->rcq_ci;
			const struct gnic_mlx5_cqe64 *cqe = &cq->buf[ci & (cq->cqe_cnt - 1)];
			uint8_t op_own = (uint8_t)(gnic_cqe_tail(cqe) >> 24);

			if (gnic_mlx5_cqe_sw_owned(op_own, (uint32_t)ci, cq->cqe_cnt)) {
				int err = gnic_mlx5_cqe_opcode(op_own) == GNIC_MLX5_CQE_RESP_ERR;
				int rc =
				    err ? GNIC_DEV_OK : gnic_dev_recv_unscatter(qp, cqe, op_own);

				if (len)
					*len = gnic_be32(cqe->byte_cnt);
				if (imm_be)
					*imm_be = cqe->imm_inval_pkey;
				qp->rcq_ci = ci + 1;
				gnic_store_sys32(cq->dbrec,
				                 gnic_be32((uint32_t)(ci + 1) & 0xffffff));
				gnic_add64(&qp->rq_done, 1);
				gnic_dev_unlock(qp, &qp->rcq_lock);
				return err ? gnic_dev_fail(qp, GNIC_DEV_ERR_CQE,
				                           (const struct gnic_mlx5_err_cqe *)cqe)
				           : rc;
			}
			gnic_dev_unlock(qp, &qp->rcq_lock);
		}
		if (gnic_wait_expired(&w))
			return GNIC_DEV_ERR_TIMEOUT;
	}
}

/* ---- warp and CTA scope (CUDA) --------------------------------------------------------
 * Every lane of the warp (every thread of the CTA) calls together, each with
 * its own operands, as with NVSHMEM's _warp/_block calls; one reservation and
 * one doorbell serve them all, lanes write their WQEs in parallel. A warp
 * that a CTA's size cuts short counts only the lanes it has. As with
 * __syncwarp() / __syncthreads(), a call from only some of them hangs. The lanes are
 * named by the CTA's shape, not by __activemask(): under independent thread
 * scheduling lanes that all call may arrive apart, and an active-mask group
 * then met lanes of another group at the next warp barrier (an H200 hung in
 * a shuffle that its leader had left). On CPU threads a "warp" is the
 * calling thread. */
#if GNIC_ON_GPU

/* The lanes of the calling thread's warp that exist in its CTA. */
GNIC_DEVFN unsigned gnic_warp_lanes(void)
{
	uint32_t tid = gnic_cta_tid();
	uint32_t left = blockDim.x * blockDim.y * blockDim.z - (tid & ~31u);

	return left >= 32 ? 0xffffffffu : (1u << left) - 1;
}

/* The warp's lanes as one coalesced group (gnic_dev_post_group), every lane
 * there by the barrier first. */
GNIC_DEVFN int gnic_dev_put_warp(struct gnic_dev_qp *qp, const void *laddr, uint32_t lkey,
                                 uint64_t raddr, uint32_t rkey, uint32_t len, uint32_t flags)
{
	unsigned mask = gnic_warp_lanes();
	int rc;

	__syncwarp(mask);
	rc = gnic_dev_post_group(qp, mask, GNIC_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)laddr,
	                         lkey, raddr, rkey, len, flags, 0, NULL);
	return rc == GNIC_DEV_OK && len > GNIC_DEV_MAX_MSG ? GNIC_DEV_ERR_INVAL : rc;
}

GNIC_DEVFN int gnic_dev_put_cta(struct gnic_dev_qp *qp, const void *laddr, uint32_t lkey,
                                uint64_t raddr, uint32_t rkey, uint32_t len, uint32_t flags)
{
	/* Reserve status and commit status live in separate words: the compiler
	 * may load a shared word in every thread even where only thread 0 uses
	 * it (it did: racecheck caught `tid == 0 && rc == 0` read by all while
	 * thread 0 wrote the commit result), so no word is written in a phase
	 * where others may read it. Three barriers order the phases; the next
	 * call's reserve is behind the third. */
	__shared__ unsigned long long base;
	__shared__ int reserved, committed;
	uint32_t n = blockDim.x * blockDim.y * blockDim.z;
	uint32_t tid = gnic_cta_tid();

	if (tid == 0)
		reserved = gnic_dev_sq_reserve(qp, n, (uint64_t *)&base);
	__syncthreads();
	if (reserved == 0)
		gnic_dev_wqe_rdma(qp, base + tid, GNIC_MLX5_OPCODE_RDMA_WRITE,
		                  (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, len, flags, 0,
		                  NULL);
	__syncthreads();
	if (tid == 0)
		committed = reserved ? reserved : gnic_dev_sq_commit(qp, base, n, NULL);
	__syncthreads();
	return committed == GNIC_DEV_OK && len > GNIC_DEV_MAX_MSG ? GNIC_DEV_ERR_INVAL : committed;
}

#else

GNIC_DEVFN int gnic_dev_put_warp(struct gnic_dev_qp *qp, const void *laddr, uint32_t lkey,
                                 uint64_t raddr, uint32_t rkey, uint32_t len, uint32_t flags)
{
	return gnic_dev_put(qp, laddr, lkey, raddr, rkey, len, flags, NULL);
}

GNIC_DEVFN int gnic_dev_put_cta(struct gnic_dev_qp *qp, const void *laddr, uint32_t lkey,
                                uint64_t raddr, uint32_t rkey, uint32_t len, uint32_t flags)
{
	return gnic_dev_put(qp, laddr, lkey, raddr, rkey, len, flags, NULL);
}

#endif /* GNIC_ON_GPU */

/* ---- raw Ethernet queues and the hand-off ring: gnic_dev_eth.cuh ---------------------- */
#include "gnic_dev_eth.cuh"

#endif /* GNIC_DEV_CUH */
