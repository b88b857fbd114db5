/* SPDX-License-Identifier: MIT */
/*
 * The requester: turns rung send WQEs into fabric requests and responses into
 * requester CQEs.
 *
 * Every WQE taken from the SQ gets an entry in qp->req.ost (in SQ order). An entry
 * is "done" when its answer arrived (or, for NOP and local errors, at once);
 * retire() walks the done prefix and writes CQEs, so CQEs stay in posting
 * order whatever order answers come in. Requests carry a sequence number
 * (psn); the responder executes them strictly in psn order. After an RNR NAK
 * or a timeout the requester goes back to the oldest unanswered WQE and sends
 * everything again from there (go-back-N); the responder answers duplicates
 * without executing them twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "fabric.h"
#include "rc.h"
#include "dma.h"
#include "wqe.h"
#include "worker.h"

#define BURST     64 /* WQEs per QP per engine pass: passes stay short */
#define ACK_EVERY 32 /* ask for an ACK at least this often (requests or MTU packets) */

static uint32_t mask(const struct emu_qp *qp)
{
	return qp->sq.wqe_cnt - 1;
}

static struct emu_outstanding *ost_at(struct emu_qp *qp, uint32_t n)
{
	return &qp->req.ost[n & mask(qp)];
}

static bool ost_empty(const struct emu_qp *qp)
{
	return qp->req.ost_tail == qp->req.ost_head;
}

static uint64_t timeout_ns(const struct emu_qp *qp)
{
	if (qp->attr.timeout == 0)
		return (uint64_t)emu_cfg.default_timeout_ms * 1000000;
	return 4096ull << qp->attr.timeout; /* 4.096 us * 2^timeout */
}

/* IB's RNR timer encoding (min_rnr_timer), in microseconds. */
static uint64_t rnr_delay_ns(uint8_t code)
{
	static const uint32_t us[32] = {
	    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
	    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
	    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
	return (uint64_t)us[code & 31] * 1000;
}

/* ---- doorbells ------------------------------------------------------------ */

/* Take candidate producer index x if it is ahead of ci by at most a full SQ
 * and newer than what we had. */
static void consider(const struct emu_qp *qp, uint16_t x, uint16_t *best)
{
	uint16_t ci = qp->req.sq_ci, dist = (uint16_t)(x - ci);

	if (dist && dist <= qp->sq.wqe_cnt && dist > (uint16_t)(*best - ci)) {
		*best = x;
	} else if (dist > qp->sq.wqe_cnt && dist < 0x8000) {
		/* ahead by more than the SQ holds: software rang for WQEs it must
		 * have written over unexecuted ones; a value behind (a stale
		 * register half) is just old news */
		static struct emu_log_limit limit;

		emu_warn_limited(&limit,
		                 "QP 0x%x: doorbell for index %u is %u basic blocks ahead of the "
		                 "engine, more than the %u-block SQ; ignored",
		                 qp->ibqp.qp_num, x, dist, qp->sq.wqe_cnt);
	}
}

/* Producer index a register value rings: a value whose ds field is set is a
 * copy of the last WQE's ctrl (rdma-core); ds = 0 means it holds the next
 * producer index (GPU libraries' convention). */
static uint16_t reg_pi(uint64_t v)
{
	struct gnic_mlx5_ctrl_seg c;
	uint32_t w0, ds;

	memcpy(&c, &v, sizeof(v));
	w0 = gnic_be32(c.opmod_idx_opcode);
	ds = gnic_be32(c.qpn_ds) & 0x3f;
	return (uint16_t)((w0 >> 8) + (ds ? (ds * 16 + 63) / 64 : 0));
}

/* Do n words of a register copy equal the SQ's at sq? All n are compared
 * (no early exit): a mismatch is rare, and a full block unrolls. */
static bool words_match_sq(const uint64_t *cur, const uint64_t *sq, uint32_t n)
{
	uint64_t diff = 0;

	if (n == 8) {
#pragma GCC unroll 8
		for (uint32_t k = 0; k < 8; k++)
			diff |= cur[k] ^ __atomic_load_n(sq + k, __ATOMIC_RELAXED);
		return !diff;
	}
	for (uint32_t k = 0; k < n; k++)
		diff |= cur[k] ^ __atomic_load_n(sq + k, __ATOMIC_RELAXED);
	return !diff;
}

/* Nonzero if any of words 1 to words - 1 differs between cur and snap.
 * Whole 64-byte blocks (words is one of those unless the half is smaller)
 * unroll; no early exit. */
static uint64_t words_changed(const uint64_t *cur, const uint64_t *snap, uint32_t words)
{
	uint64_t diff = 0;
	uint32_t w = 1;

	if (words % 8 == 0) {
#pragma GCC unroll 7
		for (uint32_t k = 1; k < 8; k++)
			diff |= cur[k] ^ snap[k];
		for (w = 8; w < words; w += 8) {
#pragma GCC unroll 8
			for (uint32_t k = 0; k < 8; k++)
				diff |= cur[w + k] ^ snap[w + k];
		}
		return diff;
	}
	for (; w < words; w++)
		diff |= cur[w] ^ snap[w];
	return diff;
}

/* Does a register value that copies a WQE's ctrl segment (ds != 0) agree
 * with the SQ? Hardware executes a BlueFlame write only if it is the WQE
 * the SQ holds at that index; one that is not is dropped (the doorbell
 * record still rings). cur: the half now, snap: as last seen. Bytes past
 * the first 8 that changed are a BlueFlame copy (up to the WQE's size in
 * 64-byte blocks, at most the half), which must equal the SQ's bytes; else
 * it was an 8-byte doorbell, whose 8 bytes must equal the WQE's. */
static bool reg_matches_sq(const struct emu_qp *qp, const uint64_t *cur, const uint64_t *snap,
                           uint32_t ds)
{
	uint32_t words = (ds * 16 + 63) / 64 * 8,
	         max = (qp->bf ? qp->bf->buf_size : GNIC_MLX5_BF_SIZE) / 8, idx;
	uint64_t changed = 0;

	memcpy(&idx, cur, sizeof(idx));
	idx = (gnic_be32(idx) >> 8) & 0xffff;
	if (words > max)
		words = max ? max : 1;
	changed = words_changed(cur, snap, words);
	if (!changed)
		words = 1;
	/* a basic block (8 words) at a time: the next one may wrap to the SQ's start */
	for (uint32_t w = 0; w < words; w += 8) {
		const uint64_t *sq = (const uint64_t *)emu_wq_at(&qp->sq, idx + w / 8);

		if (!words_match_sq(cur + w, sq, words - w < 8 ? words - w : 8))
			return false;
	}
	return true;
}

static _Atomic uint64_t bf_dropped; /* every QP's, since the process began */

EMU_EXPORT int64_t gemu_qp_bf_dropped(struct ibv_qp *ibqp)
{
	if (!ibqp || !gemu_is_emu_context(ibqp->context))
		return -1;
	return (int64_t)atomic_load_explicit(&to_eqp(ibqp)->bf_dropped, memory_order_relaxed);
}

EMU_EXPORT uint64_t gemu_engine_bf_dropped(void)
{
	return atomic_load_explicit(&bf_dropped, memory_order_relaxed);
}

/* One register half whose first 8 bytes changed to v: 1 and *pi if it is a
 * doorbell of this QP, 0 if not, -1 to look again in the next pass. The
 * register may be shared (uar.c): a doorbell names its QP in its second
 * word, as hardware routes it, so another QP's is not ours. The engine reads
 * the register as memory and may catch a BlueFlame copy half written, so a
 * copy that does not match the SQ is dropped only when the next look finds
 * the same bytes. */
static int reg_doorbell(struct emu_qp *qp, int half, uint64_t v, uint16_t *pi)
{
	uint8_t at = qp->req.db_snap_at[half];
	const uint64_t *snap = (const uint64_t *)qp->req.db_snap[half][at];
	uint64_t *cur = (uint64_t *)qp->req.db_snap[half][!at]; /* becomes the snapshot */
	const _Atomic uint64_t *reg =
	    (const _Atomic uint64_t *)((const uint8_t *)qp->bf_reg + half * GNIC_MLX5_BF_SIZE);
	struct gnic_mlx5_ctrl_seg c;
	uint32_t ds, qpn;
	bool ok, fresh;

	cur[0] = v;
#pragma GCC unroll 32 /* a fixed 31 loads; the loop's own count was as many again */
	for (uint32_t w = 1; w < GNIC_MLX5_BF_SIZE / 8; w++)
		cur[w] = atomic_load_explicit(&reg[w], memory_order_relaxed);
	memcpy(&c, &v, sizeof(v));
	ds = gnic_be32(c.qpn_ds) & 0x3f;
	qpn = gnic_be32(c.qpn_ds) >> 8;
	/* only a WQE not executed yet can be compared: software may be writing
	 * a new one over an executed WQE's slot (consider() judges the rest) */
	fresh = (uint16_t)(((gnic_be32(c.opmod_idx_opcode) >> 8) & 0xffff) - qp->req.sq_ci) <
	        qp->sq.wqe_cnt;
	ok = qpn == qp->ibqp.qp_num && (!ds || !fresh || reg_matches_sq(qp, cur, snap, ds));
	if (!ok && qpn == qp->ibqp.qp_num) {
		static struct emu_log_limit limit;

		if (!qp->req.db_pend_set[half] ||
		    memcmp(qp->req.db_pend[half], cur, GNIC_MLX5_BF_SIZE)) {
			memcpy(qp->req.db_pend[half], cur, GNIC_MLX5_BF_SIZE);
			qp->req.db_pend_set[half] = true;
			return -1; /* maybe still being written */
		}
		atomic_fetch_add_explicit(&qp->bf_dropped, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&bf_dropped, 1, memory_order_relaxed);
		emu_warn_limited(&limit,
		                 "QP 0x%x: a doorbell register write for index %u does not match "
		                 "the WQE in the SQ there; dropped, as hardware drops it (the "
		                 "doorbell record still counts)",
		                 qp->ibqp.qp_num, (gnic_be32(c.opmod_idx_opcode) >> 8) & 0xffff);
	}
	qp->req.db_pend_set[half] = false;
	qp->req.db_snap_at[half] = !at; /* cur is the register as last seen now */
	if (ok)
		*pi = reg_pi(v);
	return ok;
}

/* Is end further from the consumer index than best, and inside the SQ? */
static bool further(const struct emu_qp *qp, uint16_t end, uint16_t best)
{
	uint16_t n = (uint16_t)(end - qp->req.sq_ci);

	return n <= qp->sq.wqe_cnt && n > (uint16_t)(best - qp->req.sq_ci);
}

/* A DEVX QP whose SQ and records are in GPU memory (devx_umem.c): when a
 * register half changed (the UAR doorbell), pull the WQEs from the consumer
 * index up to the newest index the register names. The send record is not
 * read: software may be writing it while a copy reads it, and the register
 * always names the newest index (its shadow stays as registered). false: no
 * doorbell, nothing read. */
static bool pull_rung(struct emu_qp *qp, uint64_t seen[2])
{
	uint16_t end = qp->req.sq_ci, ci = qp->req.sq_ci, n, first;
	bool rung = false;

	for (int half = 0; half < 2; half++) {
		const _Atomic uint64_t *reg =
		    (const _Atomic uint64_t *)((uint8_t *)qp->bf_reg + half * GNIC_MLX5_BF_SIZE);
		uint64_t v = atomic_load_explicit(reg, memory_order_acquire);

		seen[half] = v; /* what the caller judges: a later write was not pulled for */
		if (v == qp->req.db_last_reg[half])
			continue;
		rung = true;
		if (further(qp, reg_pi(v), end))
			end = reg_pi(v);
	}
	if (!rung)
		return false;
	n = (uint16_t)(end - ci);
	first = (uint16_t)(qp->sq.wqe_cnt - (ci & (qp->sq.wqe_cnt - 1)));
	first = n < first ? n : first;
	if (emu_devx_umem_pull(qp->gpu_wq, emu_wq_at(&qp->sq, ci),
	                       (uint64_t)first * GNIC_MLX5_SEND_WQE_BB) ||
	    emu_devx_umem_pull(qp->gpu_wq, emu_wq_at(&qp->sq, (uint16_t)(ci + first)),
	                       (uint64_t)(n - first) * GNIC_MLX5_SEND_WQE_BB))
		return false;
	return true;
}

/* Has either register half changed since the last look? */
static bool reg_changed(const struct emu_qp *qp)
{
	const _Atomic uint64_t *reg = (const _Atomic uint64_t *)qp->bf_reg;

	return atomic_load_explicit(&reg[0], memory_order_acquire) != qp->req.db_last_reg[0] ||
	       atomic_load_explicit(&reg[GNIC_MLX5_BF_SIZE / 8], memory_order_acquire) !=
	           qp->req.db_last_reg[1];
}

/* Newest producer index rung through the doorbell record or either half of
 * the register. Only a source whose raw value changed since the last look is
 * a new doorbell: a stale or never-written half (0) would otherwise read as
 * "ahead" whenever ci comes within one SQ of the 16-bit wrap. */
static __attribute__((noinline)) uint16_t sq_doorbell_look(struct emu_qp *qp, uint32_t rec,
                                                           uint16_t best);

uint16_t emu_sq_doorbell(struct emu_qp *qp)
{
	uint32_t rec = atomic_load_explicit((_Atomic uint32_t *)&qp->dbrec[GNIC_MLX5_SND_DBR],
	                                    memory_order_acquire);
	uint16_t best = qp->req.db_pi;

	if ((uint16_t)(best - qp->req.sq_ci) > qp->sq.wqe_cnt)
		best = qp->req.sq_ci; /* after a rewind: nothing known ahead */
	if (!qp->gpu_wq && !qp->gpu_dbr && rec == qp->req.db_last_rec && !reg_changed(qp))
		return qp->req.db_pi = best; /* most passes: no doorbell since the last */
	return qp->req.db_pi = sq_doorbell_look(qp, rec, best);
}

/* emu_sq_doorbell's look at the sources when one may have rung, out of
 * line: most passes do not get here and need not pay for its registers. */
static uint16_t sq_doorbell_look(struct emu_qp *qp, uint32_t rec, uint16_t best)
{
	bool mirrored = qp->gpu_wq || qp->gpu_dbr;
	uint64_t seen[2] = {0, 0};

	if (mirrored && !pull_rung(qp, seen))
		return best;
	if (rec != qp->req.db_last_rec) {
		qp->req.db_last_rec = rec;
		consider(qp, (uint16_t)gnic_be32(rec), &best);
	}
	for (int half = 0; half < 2; half++) {
		const _Atomic uint64_t *reg =
		    (const _Atomic uint64_t *)((uint8_t *)qp->bf_reg + half * GNIC_MLX5_BF_SIZE);
		uint64_t v =
		    mirrored ? seen[half] : atomic_load_explicit(reg, memory_order_acquire);
		uint16_t pi;

		if (v != qp->req.db_last_reg[half]) {
			int r = reg_doorbell(qp, half, v, &pi);

			if (r >= 0)
				qp->req.db_last_reg[half] = v;
			if (r > 0)
				consider(qp, pi, &best);
		}
	}
	return best;
}

/* ---- local buffers --------------------------------------------------------- */

/* The WQE this QP posted at basic block idx (false: it did not, see wqe.h). */
static bool fetch_wqe(struct emu_qp *qp, uint16_t idx, struct emu_wqe *w)
{
	return emu_wqe_fetch(&qp->sq, qp->ibqp.qp_num, idx, w);
}

/* Check every local buffer; need = IBV_ACCESS_LOCAL_WRITE when we write it.
 * Sets s->mr0 for emu_requester_gather. */
uint8_t emu_requester_check_sgl(struct emu_qp *qp, struct emu_sgl *s, int need)
{
	for (int i = 0; i < s->n; i++) {
		struct emu_mr *mr;

		if (emu_mr_check(qp->pd, gnic_be32(s->seg[i]->lkey), gnic_be64(s->seg[i]->addr),
		                 emu_seg_len(s->seg[i]), need, &mr))
			return GNIC_MLX5_SYND_LOCAL_PROT;
		if (i == 0)
			s->mr0 = mr; /* the gather's, not looked up again */
	}
	return s->len > EMU_MAX_MSG_SIZE ? GNIC_MLX5_SYND_LOCAL_LENGTH : GNIC_MLX5_SYND_OK;
}

/* The payload of a WRITE/SEND as one contiguous buffer: inline data, a single
 * host buffer as is, a single GPU buffer as its device address when the
 * peer is in this process (its responder's copy queue reads it, see
 * emu_reply_path), or everything gathered into the worker's scratch (valid
 * until its next gather: emu_fabric_send copies what it keeps of it; a
 * host buffer it may send from in place, *src naming its MR). */
const void *emu_requester_gather(struct emu_qp *qp, const struct emu_sgl *s, struct emu_mr **src)
{
	static const uint8_t empty[1];
	uint64_t off = 0;
	uint8_t *buf;

	*src = NULL;
	if (s->inl)
		return s->inl;
	if (s->n == 0)
		return empty; /* zero-length message */
	if (s->n == 1) {
		struct emu_mr *mr = s->mr0 ? s->mr0 : emu_mr_lookup(gnic_be32(s->seg[0]->lkey));
		void *p = mr ? emu_mem_host_ptr(mr, gnic_be64(s->seg[0]->addr)) : NULL;

		if (p) {
			*src = mr;
			return p;
		}
		if (mr && mr->mem_type == EMU_MEM_CUDA && !qp->conn) {
			*src = mr;
			return (const void *)(uintptr_t)(mr->dev_base +
			                                 (gnic_be64(s->seg[0]->addr) - mr->iova));
		}
	}
	buf = emu_scratch_get(&qp->worker->gather, s->len);
	if (!buf)
		return NULL;
	for (int i = 0; i < s->n; i++) {
		struct emu_mr *mr = emu_mr_lookup(gnic_be32(s->seg[i]->lkey));
		uint32_t len = emu_seg_len(s->seg[i]);

		if (!mr || emu_mem_read(mr, gnic_be64(s->seg[i]->addr), buf + off, len))
			return NULL;
		off += len;
	}
	return buf;
}

/* The data of an answer being copied into GPU memory: which entry it
 * completes once the copies are done. */
struct req_job {
	uint32_t n; /* ost index */
	uint32_t psn;
};

static void retire(struct emu_qp *qp);

static void req_job_done(struct emu_qp *qp, void *data, int err)
{
	const struct req_job *r = data;
	struct emu_outstanding *e;

	/* gone, flushed (ERR) or rewound meanwhile: nothing to complete */
	if (!qp || r->n - qp->req.ost_tail >= qp->req.ost_head - qp->req.ost_tail)
		return;
	e = &qp->req.ost[r->n & (qp->sq.wqe_cnt - 1)];
	if (!e->copying || e->psn != r->psn)
		return;
	e->copying = false;
	e->done = true;
	if (err)
		e->syndrome = GNIC_MLX5_SYND_LOCAL_PROT;
	retire(qp);
}

/* Write an answer (READ data, atomic old value) into the WQE's local
 * buffers. GPU buffers are written by the copy queue: then *job is the job
 * that completes the entry, committed by the caller. */
static uint8_t scatter(struct emu_qp *qp, const struct emu_sgl *s, const uint8_t *data,
                       uint64_t len, struct emu_dma_job **job, const struct req_job *rj)
{
	uint64_t off = 0;

	for (int i = 0; i < s->n && off < len; i++) {
		struct emu_mr *mr;
		uint64_t n = emu_seg_len(s->seg[i]);

		if (n > len - off)
			n = len - off;
		if (emu_mr_check(qp->pd, gnic_be32(s->seg[i]->lkey), gnic_be64(s->seg[i]->addr), n,
		                 IBV_ACCESS_LOCAL_WRITE, &mr))
			return GNIC_MLX5_SYND_LOCAL_PROT;
		if (mr->mem_type == EMU_MEM_CUDA) {
			struct emu_dma_src from = {NULL, data + off};

			if (!*job) {
				*job = emu_dma_job_new(qp, NULL, req_job_done, sizeof(*rj));
				if (!*job)
					return GNIC_MLX5_SYND_LOCAL_PROT;
				memcpy(emu_dma_job_data(*job), rj, sizeof(*rj));
			}
			emu_dma_put(*job, mr, gnic_be64(s->seg[i]->addr), &from, n);
		} else if (emu_mem_write(mr, gnic_be64(s->seg[i]->addr), data + off, n)) {
			return GNIC_MLX5_SYND_LOCAL_PROT;
		}
		off += n;
	}
	return GNIC_MLX5_SYND_OK;
}

/* ---- completions ---------------------------------------------------------- */

static void record_error(struct emu_qp *qp, uint8_t synd, uint8_t opcode, uint16_t idx)
{
	qp->last_err.syndrome = synd;
	qp->last_err.vendor_syndrome = 0;
	qp->last_err.opcode = opcode;
	qp->last_err.wqe_counter = idx;
}

static void req_cqe(struct emu_qp *qp, const struct emu_outstanding *e, uint8_t synd)
{
	struct emu_cqe_info ci = {
	    .opcode = synd ? GNIC_MLX5_CQE_REQ_ERR : GNIC_MLX5_CQE_REQ,
	    .wqe_opcode = e->opcode,
	    .syndrome = synd,
	    .wqe_counter = e->wqe_idx,
	    .qpn = qp->ibqp.qp_num,
	    .byte_cnt = e->byte_cnt,
	    .inl = e->inl,
	    .inl_len = synd ? 0 : e->inl_len,
	};

	emu_qp_cqe_write(qp, qp->scq, &ci, "send CQ overrun");
}

/* The transport timer runs for the oldest unanswered request from its
 * transmission on, as a ConnectX's does: one that still waits for the
 * connection's handshake or behind a full socket is not late yet, and its
 * timer starts when it leaves (check_timer). That grace lasts one timeout
 * from the arming and is given once per run of tries (none after a timeout
 * since the last progress): a peer whose engine neither finishes the
 * handshake nor reads is a hung host, and it ends the QP in RETRY_EXC within
 * (retry_cnt + 2) timeouts. */
static void arm_timer(struct emu_qp *qp, uint64_t now)
{
	struct emu_outstanding *e;

	qp->req.timer_tx_wait = false;
	if (ost_empty(qp)) {
		qp->req.timer_deadline_ns = 0;
		return;
	}
	e = ost_at(qp, qp->req.ost_tail);
	if (!e->done && qp->req.retries_left == qp->attr.retry_cnt &&
	    !emu_fabric_tx_done(qp, e->tx_mark)) {
		qp->req.timer_tx_wait = true;
		qp->req.tx_wait_ns = now;
	}
	qp->req.timer_deadline_ns = now + timeout_ns(qp);
}

/* While the oldest request waits to be transmitted: its leaving starts the
 * timer; else it runs from the end of the grace. true: the timer is not due. */
static bool tx_wait(struct emu_qp *qp, uint64_t now)
{
	if (emu_fabric_tx_done(qp, ost_at(qp, qp->req.ost_tail)->tx_mark)) {
		arm_timer(qp, now); /* it left: the timer starts now */
		return true;
	}
	qp->req.timer_deadline_ns = qp->req.tx_wait_ns + 2 * timeout_ns(qp);
	if (now < qp->req.timer_deadline_ns)
		return true;
	qp->req.timer_tx_wait = false;
	return false;
}

/* Write CQEs for the done prefix of the outstanding ring, in SQ order. */
static void retire(struct emu_qp *qp)
{
	bool progressed = false;

	while (!ost_empty(qp)) {
		struct emu_outstanding *e = ost_at(qp, qp->req.ost_tail);

		if (!e->done)
			break;
		if (e->rd_atomic)
			qp->req.rd_atomic_out--;
		qp->req.ost_tail++;
		progressed = true;
		if (e->syndrome) {
			/* the QP is in ERR before its error CQE can be seen: a
			 * poller that queries the QP then finds it so */
			record_error(qp, e->syndrome, e->opcode, e->wqe_idx);
			emu_qp_enter_error(qp, emu_syndrome_str(e->syndrome));
			req_cqe(qp, e, e->syndrome);
			return;
		}
		if (e->fm_ce_se & GNIC_MLX5_CTRL_CQ_UPDATE)
			req_cqe(qp, e, GNIC_MLX5_SYND_OK);
	}
	/* progress resets both retry counters, as the IB spec and rxe do: a
	 * responder that answers is alive, whatever came before */
	if (progressed) {
		qp->req.retries_left = qp->attr.retry_cnt;
		qp->req.rnr_retries_left = qp->attr.rnr_retry;
		arm_timer(qp, emu_now_ns());
	}
}

/* ---- issuing ---------------------------------------------------------------- */

static struct emu_outstanding *ost_push(struct emu_qp *qp, const struct emu_wqe *w, bool rd_atomic)
{
	struct emu_outstanding *e = ost_at(qp, qp->req.ost_head++);

	memset(e, 0, sizeof(*e));
	e->wqe_idx = w->idx;
	e->wqe_bb = w->nbb;
	e->opcode = w->opcode;
	e->fm_ce_se = w->fm_ce_se;
	e->rd_atomic = rd_atomic;
	e->psn = qp->req.psn_next;
	if (rd_atomic)
		qp->req.rd_atomic_out++;
	return e;
}

/* A WQE that fails before anything is sent: its error CQE waits its turn. */
static int fail_local(struct emu_qp *qp, const struct emu_wqe *w, uint8_t synd)
{
	struct emu_outstanding *e = ost_push(qp, w, false);

	e->done = true;
	e->syndrome = synd;
	qp->req.sq_ci = (uint16_t)(w->idx + w->nbb);
	qp->req.sq_stalled = true;
	retire(qp);
	return -1;
}

static int msg_type(uint8_t opcode)
{
	switch (opcode) {
	case GNIC_MLX5_OPCODE_RDMA_WRITE:
		return EMU_MSG_WRITE;
	case GNIC_MLX5_OPCODE_RDMA_WRITE_IMM:
		return EMU_MSG_WRITE_IMM;
	case GNIC_MLX5_OPCODE_SEND:
		return EMU_MSG_SEND;
	case GNIC_MLX5_OPCODE_SEND_IMM:
		return EMU_MSG_SEND_IMM;
	case GNIC_MLX5_OPCODE_RDMA_READ:
		return EMU_MSG_READ;
	case GNIC_MLX5_OPCODE_ATOMIC_CS:
		return EMU_MSG_ATOMIC_CS;
	case GNIC_MLX5_OPCODE_ATOMIC_FA:
		return EMU_MSG_ATOMIC_FA;
	default:
		return 0;
	}
}

static bool has_raddr(int type)
{
	return type == EMU_MSG_WRITE || type == EMU_MSG_WRITE_IMM || type == EMU_MSG_READ ||
	       type == EMU_MSG_ATOMIC_CS || type == EMU_MSG_ATOMIC_FA;
}

static bool is_atomic(int type)
{
	return type == EMU_MSG_ATOMIC_CS || type == EMU_MSG_ATOMIC_FA;
}

/* Fence modes: may the WQE start now? */
static bool fence_allows(const struct emu_qp *qp, uint8_t fm_ce_se)
{
	switch (fm_ce_se & GNIC_MLX5_CTRL_FM_MASK) {
	case GNIC_MLX5_FM_NONE:
		return true;
	case GNIC_MLX5_FM_STRONG:
		return ost_empty(qp);
	default: /* small fence, fence, small+fence: wait for READ/ATOMIC */
		return qp->req.rd_atomic_out == 0;
	}
}

static uint32_t max_rd_atomic(const struct emu_qp *qp)
{
	return qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;
}

/* A ConnectX asks for an ACK every so many packets, not only every so many
 * messages: a message here is one request whatever its size, so its MTU
 * packets are counted, and one of ACK_EVERY packets or more (128 KiB at a
 * 4096-byte MTU) always asks. Without that, unsignaled 8 MiB WRITEs were
 * acknowledged once per 32 of them, 256 MiB, longer than the timeout. */
static bool ack_due(struct emu_qp *qp, uint32_t len)
{
	uint64_t mtu = 128u << (qp->attr.path_mtu ? qp->attr.path_mtu : IBV_MTU_4096);

	qp->req.noack_bytes += len;
	return qp->req.noack_bytes >= ACK_EVERY * mtu;
}

/* Build and send the request for WQE w. 1 sent, 0 stalled, -1 QP failed. */
static int issue(struct emu_qp *qp, struct emu_wqe *w, bool last_in_burst)
{
	int type = msg_type(w->opcode);
	unsigned off = sizeof(struct gnic_mlx5_ctrl_seg);
	struct emu_msg m = {.type = (uint8_t)type,
	                    .dst_qpn = qp->dest_qpn,
	                    .src_qpn = qp->ibqp.qp_num,
	                    .imm = w->imm,
	                    .gid_type = qp->gid_type};
	struct emu_outstanding *e;
	const void *payload = NULL;
	struct emu_mr *src = NULL;
	struct emu_sgl s;
	uint8_t synd;
	int ret;

	if (!type || w->opmod)
		return fail_local(qp, w, GNIC_MLX5_SYND_LOCAL_QP_OP);
	if (has_raddr(type)) {
		const struct gnic_mlx5_raddr_seg *r = (const void *)(w->bytes + off);

		m.raddr = gnic_be64(r->raddr);
		m.rkey = gnic_be32(r->rkey);
		off += sizeof(*r);
	}
	if (is_atomic(type)) {
		const struct gnic_mlx5_atomic_seg *a = (const void *)(w->bytes + off);

		m.operand[0] = gnic_be64(a->swap_add);
		m.operand[1] = gnic_be64(a->compare);
		off += sizeof(*a);
	}
	if (off > w->ds * 16u || !emu_wqe_parse_sgl(w, off, &s))
		return fail_local(qp, w, GNIC_MLX5_SYND_LOCAL_QP_OP);
	if (type == EMU_MSG_READ || is_atomic(type)) {
		if (s.inl)
			return fail_local(qp, w, GNIC_MLX5_SYND_LOCAL_QP_OP);
		if (is_atomic(type) && s.len != 8)
			return fail_local(qp, w, GNIC_MLX5_SYND_LOCAL_LENGTH);
		synd = emu_requester_check_sgl(qp, &s, IBV_ACCESS_LOCAL_WRITE);
		if (synd)
			return fail_local(qp, w, synd);
		if (qp->req.rd_atomic_out >= max_rd_atomic(qp))
			return 0;
		m.operand[0] = type == EMU_MSG_READ ? s.len : m.operand[0];
	} else {
		synd = emu_requester_check_sgl(qp, &s, 0);
		if (synd)
			return fail_local(qp, w, synd);
		payload = emu_requester_gather(qp, &s, &src);
		if (!payload)
			return fail_local(qp, w, GNIC_MLX5_SYND_LOCAL_PROT);
		m.len = (uint32_t)s.len;
	}
	if (w->fm_ce_se & GNIC_MLX5_CTRL_SOLICITED)
		m.flags |= EMU_MSG_F_SOLICITED;
	if ((w->fm_ce_se & GNIC_MLX5_CTRL_CQ_UPDATE) || last_in_burst ||
	    qp->req.psn_next % ACK_EVERY == 0 || ack_due(qp, m.len)) {
		m.flags |= EMU_MSG_F_ACKREQ;
		qp->req.noack_bytes = 0;
	}
	m.psn = qp->req.psn_next;

	/* Commit before sending: an in-process peer answers inside the call. */
	e = ost_push(qp, w, type == EMU_MSG_READ || is_atomic(type));
	e->byte_cnt = (uint32_t)s.len;
	qp->req.psn_next++;
	if (((qp->req.psn_next - qp->req.psn_end) & 0xffffff) < (1u << 23))
		qp->req.psn_end = qp->req.psn_next & 0xffffff;
	qp->req.sq_ci = (uint16_t)(w->idx + w->nbb);
	ret = emu_fabric_send(qp, &m, payload, src);
	e->tx_mark = emu_fabric_tx_mark(qp);
	if (!qp->req.timer_deadline_ns)
		arm_timer(qp, emu_now_ns());
	emu_dbg("QP 0x%x: WQE %u psn %u type %u sent (%d)", qp->ibqp.qp_num, w->idx, m.psn, type,
	        ret);
	if (ret == -EAGAIN) { /* output full: take it back, retry later */
		qp->req.ost_head--;
		qp->req.psn_next--;
		qp->req.sq_ci = w->idx;
		if (e->rd_atomic)
			qp->req.rd_atomic_out--;
		if (ost_empty(qp))
			qp->req.timer_deadline_ns = 0;
		return 0;
	}
	/* -ENOTCONN: the request is lost on the wire; the timer resends it */
	return 1;
}

static int issue_nop(struct emu_qp *qp, const struct emu_wqe *w)
{
	struct emu_outstanding *e = ost_push(qp, w, false);

	e->done = true;
	qp->req.sq_ci = (uint16_t)(w->idx + w->nbb);
	retire(qp);
	return 1;
}

/* Do the WQEs in [from, pi) send nothing (all NOPs)? Then the request before
 * them is the last on the wire and must ask for an ACK: a signaled NOP (what
 * a quiet posts) completes only after everything before it is acknowledged,
 * and without the ACK request it would wait for the retransmission timer. */
static bool only_nops(struct emu_qp *qp, uint16_t from, uint16_t pi)
{
	for (int n = 0; n < BURST && from != pi; n++) {
		struct emu_wqe w;

		emu_wqe_decode_ctrl(&w,
		                    (const struct gnic_mlx5_ctrl_seg *)emu_wq_at(&qp->sq, from));
		if (w.opcode != GNIC_MLX5_OPCODE_NOP || w.idx != from)
			return false;
		from = (uint16_t)(from + w.nbb);
	}
	return from == pi;
}

/* Go back to the oldest unanswered WQE and send everything from there again. */
static void rewind_to_tail(struct emu_qp *qp)
{
	struct emu_outstanding *e = ost_at(qp, qp->req.ost_tail);

	qp->req.sq_ci = e->wqe_idx;
	qp->req.psn_next = e->psn;
	qp->req.ost_head = qp->req.ost_tail;
	qp->req.rd_atomic_out = 0;
	qp->req.sq_stalled = false;
	qp->req.timer_deadline_ns = 0;
}

/* Judged against what the fabric has heard, not the bare clock: an answer
 * that came before the deadline but is not read yet must win (fabric.h). */
static __attribute__((noinline)) int timer_armed(struct emu_qp *qp, uint64_t now);

static int check_timer(struct emu_qp *qp, uint64_t now)
{
	if (ost_empty(qp) || !qp->req.timer_deadline_ns)
		return 0;
	return timer_armed(qp, now);
}

/* check_timer with a timer running, out of line: the engine checks every
 * pass, and most find none. */
static int timer_armed(struct emu_qp *qp, uint64_t now)
{
	struct emu_outstanding *e;

	if (qp->req.timer_tx_wait && tx_wait(qp, now))
		return 0;
	if (emu_fabric_heard_ns(qp, now) < qp->req.timer_deadline_ns)
		return 0;
	e = ost_at(qp, qp->req.ost_tail);
	if (e->done || e->copying)
		return 0; /* answered: its data is being copied */
	if (qp->req.retries_left == 0) {
		emu_info("QP 0x%x: no answer from QP 0x%x after %d retries (timeout %llu us)",
		         qp->ibqp.qp_num, qp->dest_qpn, qp->attr.retry_cnt,
		         (unsigned long long)(timeout_ns(qp) / 1000));
		e->done = true;
		e->syndrome = GNIC_MLX5_SYND_TRANSPORT_RETRY_EXC;
		retire(qp);
		return 1;
	}
	qp->req.retries_left--;
	emu_dbg("QP 0x%x: timeout, resending from psn %u", qp->ibqp.qp_num, e->psn);
	rewind_to_tail(qp);
	return 1;
}

/* ---- flushing (QP in ERR) -------------------------------------------------- */

static bool flush_one(struct emu_qp *qp, uint16_t idx, uint8_t opcode)
{
	struct emu_cqe_info ci = {
	    .opcode = GNIC_MLX5_CQE_REQ_ERR,
	    .wqe_opcode = opcode,
	    .syndrome = GNIC_MLX5_SYND_WR_FLUSH,
	    .wqe_counter = idx,
	    .qpn = qp->ibqp.qp_num,
	};

	return emu_cqe_write(qp->scq, &ci);
}

/* Every WQE not completed yet gets a WR_FLUSH error CQE, signaled or not. */
static int flush_sq(struct emu_qp *qp)
{
	int work = 0;
	uint16_t pi;

	while (!ost_empty(qp) && work < BURST) {
		struct emu_outstanding *e = ost_at(qp, qp->req.ost_tail);

		if (!flush_one(qp, e->wqe_idx, e->opcode))
			return work;
		qp->req.ost_tail++;
		work++;
	}
	qp->req.rd_atomic_out = 0;
	pi = emu_sq_doorbell(qp);
	while (qp->req.sq_ci != pi && work < BURST) {
		struct emu_wqe w;

		fetch_wqe(qp, qp->req.sq_ci, &w);
		if ((uint16_t)(pi - qp->req.sq_ci) < w.nbb)
			w.nbb = 1;
		if (!flush_one(qp, qp->req.sq_ci, w.opcode))
			return work;
		qp->req.sq_ci = (uint16_t)(qp->req.sq_ci + w.nbb);
		work++;
	}
	return work;
}

/* ---- entry points ------------------------------------------------------------ */

static __attribute__((noinline)) int issue_burst(struct emu_qp *qp, uint64_t now, uint16_t pi);

int emu_requester_progress(struct emu_qp *qp, uint64_t now)
{
	int work = 0;
	uint16_t pi;

	if (atomic_load(&qp->state) == IBV_QPS_ERR)
		return flush_sq(qp);
	work += check_timer(qp, now);
	if (now < qp->req.rnr_resume_ns || qp->req.sq_stalled)
		return work;
	pi = emu_sq_doorbell(qp);
	if (qp->req.sq_ci == pi)
		return work;
	return work + issue_burst(qp, now, pi);
}

/* Issue the WQEs from the consumer index up to pi, at most BURST. Out of
 * line: most engine passes find no WQE, and the fast path above stays
 * light. */
static int issue_burst(struct emu_qp *qp, uint64_t now, uint16_t pi)
{
	int work = 0;

	for (int n = 0; n < BURST && qp->req.sq_ci != pi; n++) {
		struct emu_wqe w;
		int ret;

		if (atomic_load(&qp->state) != IBV_QPS_RTS || now < qp->req.rnr_resume_ns)
			break;
		if (!fetch_wqe(qp, qp->req.sq_ci, &w)) {
			fail_local(qp, &w, GNIC_MLX5_SYND_LOCAL_QP_OP);
			return work + 1;
		}
		if (!fence_allows(qp, w.fm_ce_se))
			break;
		if (w.opcode == GNIC_MLX5_OPCODE_NOP)
			ret = issue_nop(qp, &w);
		else
			ret = issue(qp, &w,
			            n == BURST - 1 || only_nops(qp, (uint16_t)(w.idx + w.nbb), pi));
		if (ret <= 0)
			return work + (ret < 0);
		work++;
	}
	return work;
}

void emu_requester_reset(struct emu_qp *qp)
{
	qp->req.sq_ci = 0;
	qp->req.db_pi = 0;
	/* RESET zeroes the record, but not a DEVX QP's: it is the user's, and
	 * what is there now is old */
	qp->req.db_last_rec =
	    qp->devx ? atomic_load_explicit((_Atomic uint32_t *)&qp->dbrec[GNIC_MLX5_SND_DBR],
	                                    memory_order_acquire)
	             : 0;
	/* the register as it is now (RESET zeroed it; a new QP's may hold an
	 * earlier QP's doorbells, or another's if shared): nothing new yet */
	for (int half = 0; half < 2; half++) {
		const _Atomic uint64_t *reg =
		    (const _Atomic uint64_t *)((const uint8_t *)qp->bf_reg +
		                               half * GNIC_MLX5_BF_SIZE);
		uint64_t *snap = (uint64_t *)qp->req.db_snap[half][qp->req.db_snap_at[half]];

		for (uint32_t w = 0; w < GNIC_MLX5_BF_SIZE / 8; w++)
			snap[w] = atomic_load_explicit(&reg[w], memory_order_relaxed);
		qp->req.db_last_reg[half] = snap[0];
		qp->req.db_pend_set[half] = false;
	}
	qp->req.ost_head = qp->req.ost_tail = 0;
	qp->req.rd_atomic_out = 0;
	qp->req.timer_deadline_ns = 0;
	qp->req.timer_tx_wait = false;
	qp->req.rnr_resume_ns = 0;
	qp->req.sq_stalled = false;
	qp->req.psn_next = 0;
	qp->req.psn_end = 0;
	qp->req.noack_bytes = 0;
	memset(&qp->last_err, 0, sizeof(qp->last_err));
}

/* The oldest entry still without its answer, or NULL. Entries before it are
 * done, or answered with their data still being copied into GPU memory
 * (copying): an answer for the entry after a copying one is in order. */
static struct emu_outstanding *first_unanswered(struct emu_qp *qp)
{
	for (uint32_t n = qp->req.ost_tail; n != qp->req.ost_head; n++) {
		struct emu_outstanding *e = ost_at(qp, n);

		if (!e->done && !e->copying)
			return e;
	}
	return NULL;
}

/* Find the unanswered entry with this psn, or NULL for a stale answer. */
static struct emu_outstanding *find_psn(struct emu_qp *qp, uint32_t psn)
{
	for (uint32_t n = qp->req.ost_tail; n != qp->req.ost_head; n++) {
		struct emu_outstanding *e = ost_at(qp, n);

		if (e->psn == psn && !e->done && !e->copying && (e->opcode != GNIC_MLX5_OPCODE_NOP))
			return e;
		if ((int32_t)(e->psn - psn) > 0)
			break;
	}
	return NULL;
}

/* An answer for psn implies every earlier request succeeded (in-order). */
/* Whether psn is one the QP has sent: no later than the newest PSN ever
 * sent (a rewind to resend keeps that mark: an ACK for what went out before
 * it is still good) and at most 2^23 before it (PSNs are 24 bits). An ACK
 * beyond it acknowledges nothing: an IB requester drops an ACK outside the
 * PSNs it has outstanding, as a ConnectX does, rather than completing WQEs
 * whose data never landed. */
static bool psn_sent(const struct emu_qp *qp, uint32_t psn)
{
	return ((qp->req.psn_end - 1 - psn) & 0xffffff) < (1u << 23);
}

static void ack_through(struct emu_qp *qp, uint32_t psn, bool inclusive)
{
	for (uint32_t n = qp->req.ost_tail; n != qp->req.ost_head; n++) {
		struct emu_outstanding *e = ost_at(qp, n);
		int32_t d = (int32_t)(e->psn - psn);

		if (e->done)
			continue;
		if (d > 0 || (d == 0 && !inclusive))
			break;
		if (e->opcode == GNIC_MLX5_OPCODE_RDMA_READ || e->rd_atomic)
			break; /* a READ/ATOMIC is only done by its own answer */
		e->done = true;
	}
}

static void reparse_sgl(struct emu_qp *qp, const struct emu_outstanding *e, struct emu_wqe *w,
                        struct emu_sgl *s)
{
	fetch_wqe(qp, e->wqe_idx, w);
	if (!emu_wqe_parse_sgl(w, emu_wqe_rd_atomic_sgl(e->opcode), s))
		s->n = 0;
}

/* Requester scatter-to-CQE: a signaled READ's or atomic's data of up to 32
 * bytes goes into its CQE, not into memory. */
static bool to_cqe(const struct emu_qp *qp, const struct emu_outstanding *e, uint32_t len)
{
	return qp->scat_req && (e->fm_ce_se & GNIC_MLX5_CTRL_CQ_UPDATE) && len &&
	       len <= GNIC_MLX5_SCATTER_32_MAX;
}

/* The response that carries a WQE's data back (0: none does). */
static uint8_t data_answer(uint8_t opcode)
{
	switch (opcode) {
	case GNIC_MLX5_OPCODE_RDMA_READ:
		return EMU_MSG_READ_RESP;
	case GNIC_MLX5_OPCODE_ATOMIC_CS:
	case GNIC_MLX5_OPCODE_ATOMIC_FA:
		return EMU_MSG_ATOMIC_RESP;
	default:
		return 0;
	}
}

/* An atomic's old value (host order on the fabric) as this requester
 * writes it to memory or the CQE: in host order, or as the IB wire carries
 * it (big-endian) on a NIC without host-endian atomic responses. */
static uint64_t atomic_result(uint64_t old)
{
	return emu_cfg.atomic_be ? gnic_be64(old) : old;
}

/* false: READ data that is not here yet (nothing done). Data of the wrong
 * type for the WQE (an ATOMIC_RESP for a WRITE or SEND, say) is a bad
 * response: it must not be scattered into the WQE's buffers. */
static bool on_data(struct emu_qp *qp, struct emu_outstanding *e, const struct emu_msg *m,
                    const void *payload)
{
	uint64_t want = e->rd_atomic && e->opcode == GNIC_MLX5_OPCODE_RDMA_READ ? e->byte_cnt : 8;
	struct emu_wqe w;
	struct emu_sgl s;

	if (m->type != data_answer(e->opcode)) {
		e->syndrome = GNIC_MLX5_SYND_BAD_RESP;
	} else if (m->type == EMU_MSG_READ_RESP && m->len != want) {
		e->syndrome = GNIC_MLX5_SYND_BAD_RESP;
	} else if (m->type == EMU_MSG_READ_RESP && m->len && !payload) {
		return false;
	} else {
		uint64_t old = atomic_result(m->operand[0]);
		const uint8_t *data =
		    m->type == EMU_MSG_READ_RESP ? payload : (const uint8_t *)&old;
		uint32_t len = m->type == EMU_MSG_READ_RESP ? m->len : 8;

		if (to_cqe(qp, e, len)) {
			memcpy(e->inl, data, len);
			e->inl_len = (uint8_t)len;
		} else {
			struct req_job rj = {(uint32_t)(e - qp->req.ost), e->psn};
			struct emu_dma_job *job = NULL;

			/* the ring index of e: tail + its distance from the tail's slot */
			rj.n = qp->req.ost_tail + ((rj.n - qp->req.ost_tail) & mask(qp));
			reparse_sgl(qp, e, &w, &s);
			e->syndrome = scatter(qp, &s, data, len, &job, &rj);
			if (job) { /* done when its GPU copies are */
				emu_dma_job_commit(job);
				if (!e->syndrome) {
					e->copying = true;
					return true;
				}
			}
		}
	}
	e->done = true;
	return true;
}

static void on_rnr(struct emu_qp *qp, struct emu_outstanding *e, const struct emu_msg *m)
{
	if (qp->req.rnr_retries_left == 0) {
		e->done = true;
		e->syndrome = GNIC_MLX5_SYND_RNR_RETRY_EXC;
		return;
	}
	if (qp->req.rnr_retries_left != 7) /* 7 means retry forever */
		qp->req.rnr_retries_left--;
	qp->req.rnr_resume_ns = emu_now_ns() + rnr_delay_ns(m->rnr_timer);
	rewind_to_tail(qp);
}

/* Request psn is arriving at the responder, or a READ response for it here
 * (EMU_MSG_F_PROGRESS; also a second answer to a READ already done, which
 * holds the wanted ones behind it): the peer is alive and working through
 * what we sent, in order, so the timer of the oldest unanswered request
 * restarts and the retry counters reset, as a ConnectX's do on the ACK of a
 * packet. Nothing completes: the data may not have landed yet. */
static void on_progress(struct emu_qp *qp, uint32_t psn)
{
	if (ost_empty(qp) || !psn_sent(qp, psn))
		return;
	qp->req.retries_left = qp->attr.retry_cnt;
	qp->req.rnr_retries_left = qp->attr.rnr_retry;
	arm_timer(qp, emu_now_ns());
}

/* The host address a large READ response's data may be received straight
 * into (qp_ops.h's land_dest): the first scatter entry of the READ it
 * answers, the oldest unanswered WQE, when that entry holds all of it. A
 * second answer to a READ sent again finds no such WQE once the first
 * completed it, so it never lands over memory the application has back. */
void *emu_requester_land_dest(struct emu_qp *qp, const struct emu_msg *m)
{
	struct emu_outstanding *e;
	struct emu_wqe w;
	struct emu_sgl s;
	struct emu_mr *mr;

	if (m->type != EMU_MSG_READ_RESP || !m->len || atomic_load(&qp->state) != IBV_QPS_RTS)
		return NULL;
	e = find_psn(qp, m->psn);
	if (!e || e != first_unanswered(qp) || e->done || e->copying ||
	    e->opcode != GNIC_MLX5_OPCODE_RDMA_READ || !e->rd_atomic || m->len != e->byte_cnt ||
	    to_cqe(qp, e, m->len))
		return NULL;
	reparse_sgl(qp, e, &w, &s);
	if (s.n < 1 || emu_seg_len(s.seg[0]) < m->len ||
	    emu_mr_check(qp->pd, gnic_be32(s.seg[0]->lkey), gnic_be64(s.seg[0]->addr), m->len,
	                 IBV_ACCESS_LOCAL_WRITE, &mr))
		return NULL;
	return emu_mem_host_ptr(mr, gnic_be64(s.seg[0]->addr));
}

/* Without its data (payload NULL) a READ response does what its header
 * alone implies (every earlier request succeeded) and returns false when it
 * matches this READ: then it comes again with the data, and doing that part
 * twice changes nothing. */
bool emu_requester_on_response(struct emu_qp *qp, const struct emu_msg *m, const void *payload)
{
	struct emu_outstanding *e;

	if (atomic_load(&qp->state) != IBV_QPS_RTS)
		return true; /* in ERR everything left is flushed; answers are moot */
	emu_dbg("QP 0x%x: answer type %u psn %u", qp->ibqp.qp_num, m->type, m->psn);
	if (m->type == EMU_MSG_ACK && (m->flags & EMU_MSG_F_PROGRESS)) {
		on_progress(qp, m->psn);
		return true;
	}
	if (m->type == EMU_MSG_ACK) {
		if (!psn_sent(qp, m->psn)) {
			emu_dbg("QP 0x%x: ACK for psn %u, beyond every request sent: dropped",
			        qp->ibqp.qp_num, m->psn);
			return true;
		}
		ack_through(qp, m->psn, true);
		retire(qp);
		return true;
	}
	e = find_psn(qp, m->psn);
	if (!e) {
		emu_dbg("QP 0x%x: stale answer type %u psn %u", qp->ibqp.qp_num, m->type, m->psn);
		return true;
	}
	ack_through(qp, m->psn, false);
	retire(qp); /* earlier WQEs complete before this one's outcome */
	if (atomic_load(&qp->state) != IBV_QPS_RTS || first_unanswered(qp) != e)
		return true;
	switch (m->type) {
	case EMU_MSG_NAK:
		e->done = true;
		e->syndrome = m->syndrome ? m->syndrome : GNIC_MLX5_SYND_BAD_RESP;
		break;
	case EMU_MSG_RNR_NAK:
		on_rnr(qp, e, m);
		break;
	case EMU_MSG_READ_RESP:
	case EMU_MSG_ATOMIC_RESP:
		if (!on_data(qp, e, m, payload))
			return false;
		break;
	default:
		return true;
	}
	retire(qp);
	return true;
}
