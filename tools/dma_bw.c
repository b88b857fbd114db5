/* SPDX-License-Identifier: MIT */
/*
 * dma_bw: local DMA copy bandwidth and rate (gnic_dev_dma.cuh). One side in
 * one process; each of its QPs is connected to itself (the NIC's loopback on
 * port 1, as gnic_dma_create's queues are), and device threads copy
 * iteration i from the side's source region for i into its own slot for i
 * with gnic_dev_dma_copy (or its warp and CTA calls). Afterwards
 * every slot is checked against the last copy into it.
 */
#ifdef PERF_DEV_PASS
#include <gnic/gnic_dev_dma.cuh>

GNIC_DEVFN int dma_bw_iter(const struct pd_side *s, struct gnic_dev_qp *q, int64_t i, int *op)
{
	struct gnic_dev_dma *dma = (struct gnic_dev_dma *)q; /* a DMA queue is its QP */
	uint8_t *src = s->lbase + perf_ring_src(&s->r, perf_ring_region(&s->r, i));
	uint64_t dst = s->rbase + perf_ring_dst(&s->r, perf_ring_slot(&s->r, i));

	*op = PD_OP_PUT;
	if (s->scope == PERF_SCOPE_WARP)
		return gnic_dev_dma_copy_warp(dma, (void *)(uintptr_t)dst, s->rkey, src, s->lkey,
		                              (uint32_t)s->r.size);
	if (s->scope == PERF_SCOPE_CTA)
		return gnic_dev_dma_copy_cta(dma, (void *)(uintptr_t)dst, s->rkey, src, s->lkey,
		                             (uint32_t)s->r.size);
	return gnic_dev_dma_copy(dma, (void *)(uintptr_t)dst, s->rkey, src, s->lkey,
	                         (uint32_t)s->r.size, 0, NULL);
}

PD_STREAM_DEV(dma_bw, 1)
#else
#include "perf.h"

static void setup(struct perf_run *r)
{
	struct perf_ep *ep = r->ep[PERF_A];

	perf_ring_fill(ep->buf, &r->ring, PERF_A);
	perf_ring_poison(ep->buf, &r->ring, PERF_A);
	perf_ep_push(ep, r->ring.src_off, r->ring.sig_off - r->ring.src_off);
}

static bool validate(struct perf_run *r)
{
	struct perf_ep *ep = r->ep[PERF_A];

	perf_ep_pull(ep, r->ring.dst_off, r->ring.sig_off - r->ring.dst_off);
	return perf_ring_check(ep->buf, &r->ring, PERF_A, r->done, PERF_A);
}

PERF_TEST_DEF(dma_bw, PERF_BW, PERF_MODES_GNIC, PERF_F_SCOPES | PERF_F_LOOPBACK, "1-1M", 5000, 1000,
              "local DMA copy bandwidth and rate (gnic_dev_dma_copy over the NIC's loopback)",
              .setup = setup, .validate = validate);
#endif
