/* SPDX-License-Identifier: MIT */
/*
 * gnic-perf's per-thread workers, written once for CUDA kernels
 * (perf_dev_gpu.cu) and CPU threads (perf_dev_cpu.c). pd_worker() is the
 * whole body of a device thread; which test and which side come from
 * struct pd_side (perf_dev.h), the posting goes through perf_dev_ops.h.
 *
 * Streams (put_bw, get_bw, atomic_rate, post_rate): device thread g of N
 * does iterations first + g, first + g + N, ... in order; iteration i goes
 * into thread g's slot (i / N) % nslots from source region i % nsrc, which
 * is struct perf_layout's stream with one "QP" per device thread, so the
 * host checks the slots exactly as in host mode. A thread's own writes go
 * through one QP in program order, so the last one to each slot is known.
 *
 * Latency tests run on one thread per side and check every message on the
 * device, against the same patterns (perf_pattern.h).
 */
#ifndef GNIC_PERF_DEV_WORKER_H
#define GNIC_PERF_DEV_WORKER_H

#include "perf_dev_ops.h"
#include "perf_pattern.h"

/* Samples are taken with pd_clock(): SM cycles on a GPU (fine-grained; the
 * host converts them with the ns/cycle ratio of the whole run), ns on CPU
 * threads. */
GNIC_DEVFN uint64_t pd_clock(void)
{
#if GNIC_ON_GPU
	return (uint64_t)clock64();
#else
	return gnic_now_ns();
#endif
}

/* Record the launch's first failure (later ones are dropped). */
GNIC_DEVFN void pd_fail(const struct pd_side *s, int rc, int op, uint32_t q, int64_t iter,
                        int64_t off, uint64_t got, uint64_t want)
{
	struct pd_status *st = s->st;

	if (gnic_cas32(&st->claimed, 0, 1) != 0)
		return;
	st->op = op;
	st->q = q;
	st->iter = iter;
	st->off = off;
	st->got = got;
	st->want = want;
	gnic_store_rel32((uint32_t *)&st->rc, (uint32_t)rc);
}

GNIC_DEVFN uint64_t pd_src(const struct pd_layout *l, uint64_t region)
{
	return l->src_off + region * l->stride;
}

GNIC_DEVFN uint64_t pd_dst(const struct pd_layout *l, uint64_t q, uint64_t slot)
{
	return l->dst_off + (q * l->nslots + slot) * l->stride;
}

/* A pattern word as it sits in memory (little-endian; GPUs are). */
GNIC_DEVFN uint64_t pd_le64(uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ && !GNIC_ON_GPU
	return __builtin_bswap64(v);
#else
	return v;
#endif
}

/* First offset where p differs from pattern (side, region), or -1. The
 * loads are volatile: the NIC wrote this memory behind the compiler. */
GNIC_DEVFN int64_t pd_find(const uint8_t *p, uint64_t len, uint32_t side, uint32_t region,
                           uint8_t *seen)
{
	uint64_t key = perf_pat_key(side, region, len);
	uint8_t marker = perf_pat_marker(side, region);
	const volatile uint64_t *pw = (const volatile uint64_t *)p;
	uint64_t w, off;

	for (w = 0; w + 1 < (len + 7) / 8; w++)
		if (pw[w] != pd_le64(perf_pat_word(key, w)))
			break;
	for (off = w * 8; off < len; off++) {
		uint8_t b = ((const volatile uint8_t *)p)[off];

		if (b != perf_pat_byte(key, len, off, marker)) {
			*seen = b;
			return (int64_t)off;
		}
	}
	return -1;
}

/* The pattern, or with flip = ~0 its complement (poison). */
GNIC_DEVFN void pd_fill(uint8_t *p, uint64_t len, uint32_t side, uint32_t region, uint64_t flip)
{
	uint64_t key = perf_pat_key(side, region, len);
	uint8_t marker = perf_pat_marker(side, region);
	volatile uint64_t *pw = (volatile uint64_t *)p;
	uint64_t w, off;

	for (w = 0; w < len / 8; w++)
		pw[w] = pd_le64(perf_pat_word(key, w) ^ flip);
	for (off = w * 8; off < len; off++)
		((volatile uint8_t *)p)[off] = perf_pat_byte(key, len, off, marker) ^ (uint8_t)flip;
	((volatile uint8_t *)p)[len - 1] = marker ^ (uint8_t)flip;
}

/* Check message iter in local slot off against the peer's region. */
GNIC_DEVFN int pd_check_msg(const struct pd_side *s, uint64_t off, uint32_t region, int64_t iter)
{
	uint8_t seen = 0;
	int64_t bad;

	if (!s->validate)
		return 0;
	bad = pd_find(s->mem.lbase + off, s->l.size, s->side ^ 1, region, &seen);
	if (bad < 0)
		return 0;
	pd_fail(s, PD_BAD_DATA, PD_OP_CHECK, 0, iter, bad, seen,
	        perf_pat_byte(perf_pat_key(s->side ^ 1, region, s->l.size), s->l.size,
	                      (uint64_t)bad, perf_pat_marker(s->side ^ 1, region)));
	return PD_BAD_DATA;
}

/* ---- streams ------------------------------------------------------------------- */

/* Iteration i of thread g: returns the status, *op the call made. */
GNIC_DEVFN int pd_stream_op(const struct pd_side *s, const struct pd_qp *q, uint64_t g, uint64_t n,
                            int64_t i, int *op)
{
	const struct pd_layout *l = &s->l;
	uint64_t slot, src;
	int rc;

	if (s->test == PD_ATOMIC_RATE) {
		*op = PD_OP_ADD;
		return pd_add(s, q, s->sig_off, perf_pat_add(i));
	}
	slot = pd_dst(l, g, ((uint64_t)i / n) % l->nslots);
	src = pd_src(l, (uint64_t)i % l->nsrc);
	if (s->test == PD_GET_BW) {
		*op = PD_OP_GET;
		return pd_get(s, q, slot, src, (uint32_t)l->size);
	}
	*op = PD_OP_PUT;
	rc = pd_put(s, q, src, slot, (uint32_t)l->size);
	if (rc == 0 && s->test == PD_POST_RATE && !q->ring && pd_is_leader(s->scope)) {
		*op = PD_OP_RETIRE;
		rc = pd_retire(s, q->qp);
	}
	return rc;
}

GNIC_DEVFN void pd_stream(const struct pd_side *s, uint32_t cta, uint32_t tid, uint32_t ntid,
                          uint32_t nctas)
{
	uint32_t qi = cta % s->nqps;
	const struct pd_qp *q = &s->qp[qi];
	uint64_t g = (uint64_t)cta * ntid + tid, n = (uint64_t)nctas * ntid;
	int64_t i, end = s->first + s->count;
	int rc = 0, op = 0;

	/* count is a multiple of n: every thread makes the same number of
	 * calls, as warp- and CTA-scope calls need; their status is the same
	 * for the whole warp / CTA, so they leave the loop together. */
	for (i = s->first + (int64_t)g; i < end; i += (int64_t)n) {
		rc = pd_stream_op(s, q, g, n, i, &op);
		if (rc)
			break;
	}
	if (rc)
		pd_fail(s, rc, op, qi, i, -1, 0, 0);
	pd_sync_cta();
	/* One quiet per CTA covers every thread's puts (quiet waits for all
	 * that was reserved on the QP before it). post_rate's QPs never
	 * complete anything: the workers retired their WQEs. */
	if (tid == 0 && !(s->test == PD_POST_RATE && !q->ring)) {
		rc = pd_quiet(s, q);
		if (rc)
			pd_fail(s, rc, PD_OP_QUIET, qi, end, -1, 0, 0);
	}
}

/* ---- ping-pongs: put_lat, send_lat, signal_lat -------------------------------------
 * Message i goes from source region i % nsrc into the peer's slot i % 2; side
 * A times send -> the answer's arrival (half of it is reported), side B
 * answers each message; each side checks what it received. */

GNIC_DEVFN uint32_t pd_region(const struct pd_side *s, int64_t i)
{
	return (uint32_t)((uint64_t)i % s->l.nsrc);
}

GNIC_DEVFN uint64_t pd_slot(const struct pd_side *s, int64_t i)
{
	return pd_dst(&s->l, 0, (uint64_t)i % 2);
}

GNIC_DEVFN int pd_pp_send(const struct pd_side *s, int64_t i, int *op)
{
	const struct pd_qp *q = &s->qp[0];
	uint64_t src = pd_src(&s->l, pd_region(s, i));
	uint32_t len = (uint32_t)s->l.size;

	if (s->test == PD_SEND_LAT) {
		*op = PD_OP_SEND;
		return pd_send(s, q, src, len);
	}
	if (s->test == PD_SIGNAL_LAT) {
		*op = PD_OP_PUT_SIGNAL;
		return pd_put_signal(s, q, src, pd_slot(s, i), len, s->sig_off, 1);
	}
	*op = PD_OP_PUT;
	return pd_put(s, q, src, pd_slot(s, i), len);
}

/* Whether message i is there: its last byte (written last) turned into its
 * marker (put_lat), its receive completed (send_lat) or the signal word
 * counts it (signal_lat). */
GNIC_DEVFN int pd_pp_arrived(const struct pd_side *s, int64_t i)
{
	if (s->test == PD_PUT_LAT)
		return pd_load_acq8(s->mem.lbase + pd_slot(s, i) + s->l.size - 1) ==
		       perf_pat_marker(s->side ^ 1, pd_region(s, i));
	if (s->test == PD_SEND_LAT)
		return pd_recv_ready(&s->qp[0], s->recv_base + (uint64_t)i + 1);
	return gnic_load_sys64(s->mem.lbase + s->sig_off) >= (uint64_t)i + 1;
}

/* Bounded, and over as soon as the peer side (in this process) failed:
 * its status then tells what went wrong. */
GNIC_DEVFN int pd_pp_wait(const struct pd_side *s, int64_t i)
{
	struct gnic_wait w;

	gnic_wait_init(&w, s->timeout_ns);
	while (!pd_pp_arrived(s, i)) {
		if (s->peer_st && gnic_load_acq32(&s->peer_st->claimed))
			return PD_PEER_FAILED;
		if (gnic_wait_expired(&w)) {
			pd_fail(s, GNIC_DEV_ERR_TIMEOUT,
			        s->test == PD_PUT_LAT    ? PD_OP_WAIT_DATA
			        : s->test == PD_SEND_LAT ? PD_OP_RECV_WAIT
			                                 : PD_OP_WAIT_SIGNAL,
			        0, i, -1, 0, 0);
			return GNIC_DEV_ERR_TIMEOUT;
		}
	}
	return GNIC_DEV_OK;
}

/* Message i has arrived (and, send_lat, its completion is consumed). */
GNIC_DEVFN int pd_pp_await(const struct pd_side *s, int64_t i)
{
	uint32_t len = 0;
	uint64_t v;
	int rc = pd_pp_wait(s, i);

	if (rc || s->test == PD_PUT_LAT)
		return rc;
	if (s->test == PD_SEND_LAT) {
		rc = pd_recv_wait(s, &s->qp[0], s->recv_base + (uint64_t)i + 1, &len);
		if (rc)
			pd_fail(s, rc, PD_OP_RECV_WAIT, 0, i, -1, 0, 0);
		else if (len != s->l.size)
			pd_fail(s, rc = PD_BAD_LEN, PD_OP_RECV_WAIT, 0, i, -1, len, s->l.size);
		return rc;
	}
	/* one signal per message, and the next only after our answer */
	v = gnic_load_sys64(s->mem.lbase + s->sig_off);
	if (v != (uint64_t)i + 1) {
		pd_fail(s, PD_BAD_SIGNAL, PD_OP_WAIT_SIGNAL, 0, i, -1, v, (uint64_t)i + 1);
		return PD_BAD_SIGNAL;
	}
	return GNIC_DEV_OK;
}

/* Check message i, then give its slot back (send_lat: a new receive). */
GNIC_DEVFN int pd_pp_consume(const struct pd_side *s, int64_t i)
{
	int rc = pd_check_msg(s, pd_slot(s, i), pd_region(s, i), i);

	if (rc == 0 && s->test == PD_SEND_LAT && i + 2 < s->count) {
		rc = pd_recv_post(s, &s->qp[0], pd_slot(s, i), (uint32_t)s->l.size);
		if (rc)
			pd_fail(s, rc, PD_OP_RECV_POST, 0, i + 2, -1, 0, 0);
	}
	return rc;
}

GNIC_DEVFN void pd_span_begin(const struct pd_side *s)
{
	s->st->t_start = gnic_now_ns();
	s->st->c_start = pd_clock();
}

GNIC_DEVFN void pd_span_end(const struct pd_side *s)
{
	s->st->c_end = pd_clock();
	s->st->t_end = gnic_now_ns();
}

GNIC_DEVFN void pd_pingpong(const struct pd_side *s)
{
	int op = 0, rc = 0;

	for (int64_t i = 0; i < s->count && rc == 0; i++) {
		uint64_t t0 = 0;

		if (s->side == 0) {
			if (i == s->warmup)
				pd_span_begin(s);
			t0 = pd_clock();
		} else if ((rc = pd_pp_await(s, i)) != 0) {
			break;
		}
		rc = pd_pp_send(s, i, &op);
		if (rc) {
			pd_fail(s, rc, op, 0, i, -1, 0, 0);
			break;
		}
		if (s->side == 0) {
			rc = pd_pp_await(s, i);
			if (rc)
				break;
			if (i >= s->warmup)
				s->lat[i - s->warmup] = pd_clock() - t0;
		}
		rc = pd_pp_consume(s, i);
	}
	if (s->side == 0)
		pd_span_end(s);
	/* the last answer's source may be reused once the launch is over */
	if (rc == 0 && (rc = pd_quiet(s, &s->qp[0])) != 0)
		pd_fail(s, rc, PD_OP_QUIET, 0, s->count, -1, 0, 0);
}

/* send_lat: the first two receives, before the peer starts sending. */
GNIC_DEVFN void pd_recv_prep(const struct pd_side *s)
{
	for (int64_t i = 0; i < 2 && i < s->count; i++) {
		int rc = pd_recv_post(s, &s->qp[0], pd_slot(s, i), (uint32_t)s->l.size);

		if (rc) {
			pd_fail(s, rc, PD_OP_RECV_POST, 0, i, -1, 0, 0);
			return;
		}
	}
}

/* ---- one operation at a time: get_lat, the latency phase of atomic_rate ---------- */

GNIC_DEVFN void pd_get_lat(const struct pd_side *s)
{
	uint64_t dst = pd_dst(&s->l, 0, 0);

	for (int64_t i = 0; i < s->count; i++) {
		uint32_t region = pd_region(s, i);
		uint64_t t0;
		int rc;

		if (s->validate)
			pd_fill(s->mem.lbase + dst, s->l.size, 1, region, ~0ull);
		if (i == s->warmup)
			pd_span_begin(s);
		t0 = pd_clock();
		rc = pd_get_wait(s, &s->qp[0], dst, pd_src(&s->l, region), (uint32_t)s->l.size);
		if (i >= s->warmup)
			s->lat[i - s->warmup] = pd_clock() - t0;
		if (rc) {
			pd_fail(s, rc, PD_OP_GET, 0, i, -1, 0, 0);
			break;
		}
		if (pd_check_msg(s, dst, region, i))
			break;
	}
	pd_span_end(s);
}

/* Each fetched value must be the counter's exact value at that point. */
GNIC_DEVFN void pd_atomic_lat(const struct pd_side *s)
{
	uint64_t expect = s->expect;

	pd_span_begin(s);
	for (int64_t k = 0; k < s->count; k++) {
		int64_t i = s->first + k;
		uint64_t old = 0, t0 = pd_clock();
		int rc = pd_fetch_add(s, &s->qp[0], s->sig_off, perf_pat_add(i), 0, &old);

		s->lat[k] = pd_clock() - t0;
		if (rc) {
			pd_fail(s, rc, PD_OP_FETCH_ADD, 0, i, -1, 0, 0);
			break;
		}
		if (s->validate && old != expect) {
			pd_fail(s, PD_BAD_FETCH, PD_OP_FETCH_ADD, 0, i, -1, old, expect);
			break;
		}
		expect += perf_pat_add(i);
	}
	pd_span_end(s);
}

/* ---- post_rate's check --------------------------------------------------------------
 * After the run every WQE must have been reserved, published, rung and
 * retired, the doorbell must show the last one, and the last sq_wqe_cnt BBs
 * must hold the RDMA WRITEs the workers built. Runs where the QP's struct
 * lives: a kernel for a GPU context, the host otherwise (also for the
 * proxy's QPs). Returns 0 or records the first difference. */
GNIC_DEVFN int pd_check_counter(const struct pd_side *s, uint32_t q, int which, uint64_t got,
                                uint64_t want)
{
	if (got == want)
		return 0;
	pd_fail(s, PD_BAD_COUNTER, PD_OP_CHECK, q, -1, which, got, want);
	return PD_BAD_COUNTER;
}

GNIC_DEVFN int pd_check_wqe(const struct pd_side *s, struct gnic_dev_qp *qp, uint32_t q, uint64_t k)
{
	const union gnic_bb *bb = (const union gnic_bb *)gnic_dev_sq_slot(qp, k);
	const struct pd_layout *l = &s->l;
	uint64_t w0 = gnic_be32(bb->seg.ctrl.opmod_idx_opcode);
	uint64_t w1 = gnic_be32(bb->seg.ctrl.qpn_ds);
	uint64_t raddr = gnic_be64(bb->seg.raddr.raddr) - s->mem.rbase;
	uint64_t laddr = gnic_be64(bb->seg.s2.data.addr) - (uint64_t)(uintptr_t)s->mem.lbase;
	uint64_t want0 = gnic_mlx5_ctrl_word0(0, (uint16_t)k, GNIC_MLX5_OPCODE_RDMA_WRITE);
	uint64_t dst_end = l->dst_off + (uint64_t)l->nq * l->nslots * l->stride;
	int bad = -1;
	uint64_t got = 0, want = 0;

	if (w0 != want0)
		bad = 0, got = w0, want = want0;
	else if (w1 != gnic_mlx5_ctrl_word1(qp->qpn, 3))
		bad = 1, got = w1, want = gnic_mlx5_ctrl_word1(qp->qpn, 3);
	else if (gnic_be32(bb->seg.s2.data.byte_count) != l->size)
		bad = 2, got = gnic_be32(bb->seg.s2.data.byte_count), want = l->size;
	else if (gnic_be32(bb->seg.s2.data.lkey) != s->mem.lkey)
		bad = 3, got = gnic_be32(bb->seg.s2.data.lkey), want = s->mem.lkey;
	else if (gnic_be32(bb->seg.raddr.rkey) != s->mem.rkey)
		bad = 4, got = gnic_be32(bb->seg.raddr.rkey), want = s->mem.rkey;
	else if (raddr < l->dst_off || raddr >= dst_end || (raddr - l->dst_off) % l->stride)
		bad = 5, got = raddr, want = l->dst_off;
	else if (laddr >= l->dst_off || (laddr - l->src_off) % l->stride)
		bad = 6, got = laddr, want = l->src_off;
	if (bad < 0)
		return 0;
	/* off: the BB index; iter: which field (0 ctrl word 0, 1 ctrl word 1,
	 * 2 length, 3 lkey, 4 rkey, 5 remote offset, 6 local offset) */
	pd_fail(s, PD_BAD_WQE, PD_OP_CHECK, q, bad, (int64_t)k, got, want);
	return PD_BAD_WQE;
}

/* QP q: want BBs since its creation, the row's from from on. */
GNIC_DEVFN int pd_post_check_qp(const struct pd_side *s, struct gnic_dev_qp *qp, uint32_t q,
                                uint64_t from, uint64_t want)
{
	int rc = pd_check_counter(s, q, 0, gnic_load_acq64(&qp->sq_reserved), want);

	if (want - from > qp->sq_wqe_cnt) /* older ones were overwritten */
		from = want - qp->sq_wqe_cnt;
	if (!rc)
		rc = pd_check_counter(s, q, 1, gnic_load_acq64(&qp->sq_ready), want);
	if (!rc)
		rc = pd_check_counter(s, q, 2, gnic_load_acq64(&qp->sq_rung), want);
	if (!rc)
		rc = pd_check_counter(s, q, 3, gnic_load_acq64(&qp->sq_retired), want);
	if (!rc && qp->db_mode == GNIC_DB_CPU)
		rc = pd_check_counter(s, q, 4, gnic_load_sys64(qp->cpu_db), want);
	else if (!rc)
		rc = pd_check_counter(s, q, 5,
		                      gnic_be32(gnic_load_sys32(&qp->dbrec[GNIC_MLX5_SND_DBR])),
		                      want & 0xffff);
	for (uint64_t k = from; k < want && !rc; k++)
		rc = pd_check_wqe(s, qp, q, k);
	return rc;
}

GNIC_DEVFN void pd_post_check(const struct pd_side *s)
{
	for (uint32_t q = 0; q < s->nqps; q++)
		if (pd_post_check_qp(s, s->qp[q].qp, q, s->from_bb[q], s->want_bb[q]))
			return;
}

/* ---- the whole body of a device thread ---------------------------------------------- */
GNIC_DEVFN void pd_worker(const struct pd_side *s, uint32_t cta, uint32_t tid, uint32_t ntid,
                          uint32_t nctas)
{
	int first = cta == 0 && tid == 0;

	switch (s->test) {
	case PD_PUT_BW:
	case PD_GET_BW:
	case PD_POST_RATE:
	case PD_ATOMIC_RATE:
		pd_stream(s, cta, tid, ntid, nctas);
		break;
	case PD_PUT_LAT:
	case PD_SEND_LAT:
	case PD_SIGNAL_LAT:
		if (first)
			pd_pingpong(s);
		break;
	case PD_GET_LAT:
		if (first)
			pd_get_lat(s);
		break;
	case PD_ATOMIC_LAT:
		if (first)
			pd_atomic_lat(s);
		break;
	case PD_RECV_PREP:
		if (first)
			pd_recv_prep(s);
		break;
	case PD_POST_CHECK:
		if (first)
			pd_post_check(s);
		break;
	}
}

#endif /* GNIC_PERF_DEV_WORKER_H */
