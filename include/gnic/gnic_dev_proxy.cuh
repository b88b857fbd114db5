/* SPDX-License-Identifier: MIT */
/*
 * INTERNAL, included by gnic_dev.cuh only: the device side of GNIC_DB_PROXY.
 * gnic_dev.cuh's calls branch here when qp->db_mode is GNIC_DB_PROXY, so
 * applications call the same functions in every mode (layout and protocol:
 * gnic_dev_proxy.h).
 *
 * Reservation takes ring slots instead of SQ basic blocks (one per BB the
 * WQE would take) and waits, bounded, while the ring is full: a full ring
 * holds posters back, nothing is dropped. The wqe_* builders write
 * descriptors, each published by its own seq store; commit then has
 * nothing left to do. Waits wait for the proxy's done count. The proxy's
 * failure (an error CQE) reaches the first device thread that waits as the
 * proxy's status, as the poller that meets the error CQE gets it in the
 * other modes, and every later call as GNIC_DEV_ERR_QP.
 */
#ifndef GNIC_DEV_PROXY_CUH
#define GNIC_DEV_PROXY_CUH

GNIC_DEVFN int gnic_px_on(const struct gnic_dev_qp *qp)
{
	return qp->db_mode == GNIC_DB_PROXY;
}

/* What a waiting device thread returns once the QP has failed. */
GNIC_DEVFN int gnic_px_failure(struct gnic_dev_qp *qp)
{
	int st = (int)gnic_load_sys32(&qp->px->status);

	if (st && gnic_xchg32(&qp->failed, 1) == 0)
		return st;
	return GNIC_DEV_ERR_QP;
}

/* Wait until the proxy's counter reaches want. */
GNIC_DEVFN int gnic_px_wait(struct gnic_dev_qp *qp, const uint64_t *counter, uint64_t want)
{
	struct gnic_wait w;

	gnic_wait_init(&w, qp->timeout_ns);
	while (gnic_load_sys64(counter) < want) {
		if (gnic_load_acq32(&qp->failed) || gnic_load_sys32(&qp->px->status))
			return gnic_px_failure(qp);
		if (gnic_wait_expired(&w))
			return gnic_dev_fail(qp, GNIC_DEV_ERR_TIMEOUT, NULL);
	}
	return GNIC_DEV_OK;
}

/* n slots from *idx on, once the proxy has copied out the lap before. */
GNIC_DEVFN int gnic_px_reserve(struct gnic_dev_qp *qp, uint32_t n, uint64_t *idx)
{
	uint64_t first;

	if (qp->share == GNIC_SHARE_EXCLUSIVE) {
		first = qp->sq_reserved;
		qp->sq_reserved = first + n;
	} else {
		first = gnic_add64(&qp->sq_reserved, n);
	}
	*idx = first;
	if (first + n <= qp->sq_wqe_cnt)
		return GNIC_DEV_OK;
	return gnic_px_wait(qp, &qp->px->consumed, first + n - qp->sq_wqe_cnt);
}

GNIC_DEVFN struct gnic_px_desc *gnic_px_slot(const struct gnic_dev_qp *qp, uint64_t idx)
{
	return &qp->px_ring[idx & (qp->sq_wqe_cnt - 1)];
}

/* A descriptor built in registers, then stored in wide words. */
union gnic_px_bb {
	struct gnic_px_desc d;
	uint64_t q[8];
	uint8_t b[64];
};

/* Words 1..7 of slot idx, then seq: the proxy sees the descriptor whole. */
GNIC_DEVFN void gnic_px_store(struct gnic_dev_qp *qp, uint64_t idx, const union gnic_px_bb *bb)
{
	struct gnic_px_desc *d = gnic_px_slot(qp, idx);

	gnic_copy_words((uint64_t *)d + 1, bb->q + 1, sizeof(*d) - 8);
	gnic_store_sys64(&d->seq, idx + 1);
}

GNIC_DEVFN void gnic_px_head(union gnic_px_bb *bb, uint8_t kind, uint8_t opcode, uint32_t flags,
                             uint32_t len, uint64_t raddr, uint32_t rkey)
{
	for (int i = 0; i < 8; i++)
		bb->q[i] = 0;
	bb->d.kind = kind;
	bb->d.opcode = opcode;
	bb->d.flags = (uint8_t)flags;
	bb->d.nslots = 1;
	bb->d.len = len;
	bb->d.raddr = raddr;
	bb->d.rkey = rkey;
}

GNIC_DEVFN void gnic_px_rdma(struct gnic_dev_qp *qp, uint64_t idx, uint8_t opcode, uint64_t laddr,
                             uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t len,
                             uint32_t flags, uint32_t imm_be)
{
	union gnic_px_bb bb;

	if (len > GNIC_DEV_MAX_MSG) { /* a lane of a warp/CTA call: its slot becomes a NOP */
		gnic_px_head(&bb, GNIC_PX_NOP, GNIC_MLX5_OPCODE_NOP, flags, 0, 0, 0);
	} else {
		gnic_px_head(&bb, GNIC_PX_RDMA, opcode, flags, len, raddr, rkey);
		bb.d.lkey = lkey;
		bb.d.laddr = laddr;
		bb.d.imm_be = imm_be;
	}
	gnic_px_store(qp, idx, &bb);
}

GNIC_DEVFN void gnic_px_atomic(struct gnic_dev_qp *qp, uint64_t idx, uint8_t opcode, uint64_t raddr,
                               uint32_t rkey, uint64_t swap_add, uint64_t compare, uint32_t flags)
{
	union gnic_px_bb bb;

	gnic_px_head(&bb, GNIC_PX_ATOMIC, opcode, flags, 8, raddr, rkey);
	bb.d.swap_add = swap_add;
	bb.d.compare = compare;
	gnic_px_store(qp, idx, &bb);
}

GNIC_DEVFN void gnic_px_nop(struct gnic_dev_qp *qp, uint64_t idx, uint32_t flags)
{
	union gnic_px_bb bb;

	gnic_px_head(&bb, GNIC_PX_NOP, GNIC_MLX5_OPCODE_NOP, flags, 0, 0, 0);
	gnic_px_store(qp, idx, &bb);
}

/* An inline WRITE over nslots slots (as many as its WQE's BBs, which always
 * hold the data: the first slot carries 36 bytes of it, a WQE's first BB
 * 28), the first slot stored last. */
GNIC_DEVFN void gnic_px_inline(struct gnic_dev_qp *qp, uint64_t idx, uint32_t nslots,
                               const void *src, uint32_t len, uint64_t raddr, uint32_t rkey,
                               uint32_t flags)
{
	const uint8_t *s = (const uint8_t *)src;
	uint32_t off = 64 - GNIC_PX_INLINE_OFF; /* the data after the first slot's */
	union gnic_px_bb bb;

	for (uint32_t k = 1; k < nslots; k++) {
		for (int i = 0; i < 8; i++)
			bb.q[i] = 0;
		for (uint32_t at = 0; at < 64 && off < len; at++)
			bb.b[at] = s[off++];
		gnic_copy_words(gnic_px_slot(qp, idx + k), bb.q, 64);
	}
	gnic_px_head(&bb, GNIC_PX_INLINE, GNIC_MLX5_OPCODE_RDMA_WRITE, flags, len, raddr, rkey);
	bb.d.nslots = (uint8_t)nslots;
	for (uint32_t i = 0; i < 64 - GNIC_PX_INLINE_OFF && i < len; i++)
		bb.b[GNIC_PX_INLINE_OFF + i] = s[i];
	gnic_px_store(qp, idx, &bb);
}

/* Every descriptor below ticket has completed. */
GNIC_DEVFN int gnic_px_wait_done(struct gnic_dev_qp *qp, uint64_t ticket)
{
	return gnic_px_wait(qp, &qp->px->done, ticket);
}

/* Every descriptor reserved before the call has completed: the proxy asks
 * for a CQE at the end of every batch it posts, so no NOP is needed. */
GNIC_DEVFN int gnic_px_quiet(struct gnic_dev_qp *qp)
{
	if (gnic_load_acq32(&qp->failed))
		return GNIC_DEV_ERR_QP;
	return gnic_px_wait_done(qp, gnic_load_acq64(&qp->sq_reserved));
}

#endif /* GNIC_DEV_PROXY_CUH */
