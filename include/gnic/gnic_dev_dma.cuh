/* SPDX-License-Identifier: MIT */
/*
 * Local DMA from device code: the NIC copies len bytes from one registered
 * region of this context to another (host or GPU memory either side), on
 * a DMA queue made with gnic_dma_create() and exported by gnic_dma_dev().
 *
 * A copy is an RDMA WRITE on the queue's requester QP, from src (its MR's
 * lkey) to dst (its MR's rkey) through the NIC's loopback, so the QP
 * calls' contracts hold: every wait bounded by the queue's timeout_ns, the
 * same enum gnic_dev_status, the first error CQE fails the queue (later
 * calls GNIC_DEV_ERR_QP until gnic_dma_reset()) and is recorded for
 * gnic_dma_error(). Lengths: 0 <= len < 2^31 (a zero-length copy carries
 * no data segment and touches no byte; 2^31 and more: GNIC_DEV_ERR_INVAL,
 * nothing posted). Copies of one queue are executed in order; a copy has
 * landed once gnic_dev_dma_wait() on its ticket (or gnic_dev_dma_quiet())
 * returned GNIC_DEV_OK. Overlapping source and target: undefined, as for
 * memcpy.
 *
 * Scope: thread scope (any thread, shared queues as the QP's share says),
 * batch (one thread posts n copies under one reservation and one
 * doorbell), and warp and CTA scope on a GPU (every lane its own copy, one
 * doorbell). On CPU threads the warp and CTA calls are the thread call.
 */
#ifndef GNIC_DEV_DMA_CUH
#define GNIC_DEV_DMA_CUH

#include "gnic_dev.cuh"

/* The device view of a DMA queue: its requester QP. */
struct gnic_dev_dma {
	struct gnic_dev_qp qp;
};

/* One copy of a batch. */
struct gnic_dma_desc {
	uint64_t dst; /* target address, as registered */
	uint64_t src; /* source address, as registered */
	uint32_t dst_rkey;
	uint32_t src_lkey;
	uint32_t len; /* < 2^31 */
	uint32_t rsvd;
};

/* Copy len bytes from src to dst. flags: GNIC_DEV_F_SIGNAL; a non-NULL
 * ticket implies it and receives the value for gnic_dev_dma_wait(). */
GNIC_DEVFN int gnic_dev_dma_copy(struct gnic_dev_dma *dma, void *dst, uint32_t dst_rkey,
                                 const void *src, uint32_t src_lkey, uint32_t len, uint32_t flags,
                                 uint64_t *ticket)
{
	if (flags & ~(uint32_t)GNIC_DEV_F_SIGNAL)
		return GNIC_DEV_ERR_INVAL;
	if (ticket)
		flags |= GNIC_DEV_F_SIGNAL;
	return gnic_dev_put(&dma->qp, src, src_lkey, (uint64_t)(uintptr_t)dst, dst_rkey, len, flags,
	                    ticket);
}

/* The most copies one reservation of a batch takes: half the SQ, so a
 * batch never waits for room that only its own completion would free. */
GNIC_DEVFN uint32_t gnic_dev_dma_chunk(const struct gnic_dev_dma *dma)
{
	uint32_t half = dma->qp.sq_wqe_cnt / 2;

	return half ? half : 1;
}

/* Copy every d[i], posted in order in chunks of gnic_dev_dma_chunk() WQEs,
 * one reservation and one doorbell each. Every length is checked first: one
 * of 2^31 or more gives GNIC_DEV_ERR_INVAL with nothing posted. flags and
 * ticket as for gnic_dev_dma_copy (the ticket covers the whole batch). An
 * empty batch (n 0) posts nothing and gives a ticket that is already
 * reached. A failure in the middle returns its status with the earlier
 * chunks posted (the queue has failed then, or the wait timed out). */
GNIC_DEVFN int gnic_dev_dma_copy_batch(struct gnic_dev_dma *dma, const struct gnic_dma_desc *d,
                                       uint32_t n, uint32_t flags, uint64_t *ticket)
{
	struct gnic_dev_qp *qp = &dma->qp;
	uint32_t chunk = gnic_dev_dma_chunk(dma), done = 0, m = 0;
	uint64_t idx = 0;
	int rc;

	if (flags & ~(uint32_t)GNIC_DEV_F_SIGNAL)
		return GNIC_DEV_ERR_INVAL;
	if (ticket)
		flags |= GNIC_DEV_F_SIGNAL;
	for (uint32_t i = 0; i < n; i++)
		if (d[i].len > GNIC_DEV_MAX_MSG)
			return GNIC_DEV_ERR_INVAL;
	if (gnic_dev_failed(qp))
		return GNIC_DEV_ERR_QP;
	if (n == 0) {
		if (ticket)
			*ticket = 0;
		return GNIC_DEV_OK;
	}
	while (done < n) {
		m = n - done < chunk ? n - done : chunk;
		rc = gnic_dev_sq_reserve(qp, m, &idx);
		if (rc)
			return rc;
		for (uint32_t k = 0; k < m; k++) {
			const struct gnic_dma_desc *c = &d[done + k];
			/* only the batch's last WQE asks for a CQE (cqe_every adds
			 * the ones that keep SQ space coming back) */
			uint32_t f = done + k == n - 1 ? flags : 0;

			gnic_dev_wqe_rdma(qp, idx + k, GNIC_MLX5_OPCODE_RDMA_WRITE, c->src,
			                  c->src_lkey, c->dst, c->dst_rkey, c->len, f, 0, NULL);
		}
		rc = gnic_dev_sq_commit(qp, idx, m, NULL);
		if (rc)
			return rc;
		done += m;
	}
	if (ticket)
		*ticket = idx + m;
	return GNIC_DEV_OK;
}

/* Every lane of the warp calls together (as gnic_dev_put_warp), each with
 * its own copy; one reservation and one doorbell serve them all. A lane's
 * length of 2^31 or more posts a NOP in its place and gives that lane
 * GNIC_DEV_ERR_INVAL. Completes at the next gnic_dev_dma_quiet(). */
GNIC_DEVFN int gnic_dev_dma_copy_warp(struct gnic_dev_dma *dma, void *dst, uint32_t dst_rkey,
                                      const void *src, uint32_t src_lkey, uint32_t len)
{
	return gnic_dev_put_warp(&dma->qp, src, src_lkey, (uint64_t)(uintptr_t)dst, dst_rkey, len,
	                         0);
}

/* The same for every thread of the CTA (as gnic_dev_put_cta): one
 * reservation and one doorbell for the CTA's copies. */
GNIC_DEVFN int gnic_dev_dma_copy_cta(struct gnic_dev_dma *dma, void *dst, uint32_t dst_rkey,
                                     const void *src, uint32_t src_lkey, uint32_t len)
{
	return gnic_dev_put_cta(&dma->qp, src, src_lkey, (uint64_t)(uintptr_t)dst, dst_rkey, len,
	                        0);
}

/* Wait until every copy below ticket has landed. */
GNIC_DEVFN int gnic_dev_dma_wait(struct gnic_dev_dma *dma, uint64_t ticket)
{
	return gnic_dev_wait(&dma->qp, ticket);
}

/* Wait until every copy posted on the queue before this call has landed. */
GNIC_DEVFN int gnic_dev_dma_quiet(struct gnic_dev_dma *dma)
{
	return gnic_dev_quiet(&dma->qp);
}

#endif /* GNIC_DEV_DMA_CUH */
