/* SPDX-License-Identifier: MIT */
/*
 * Local DMA queues: the NIC copies between two registered regions of this
 * context. A queue is a pair of RC QPs connected to each other on port 1
 * of the same device: device code posts RDMA WRITEs on the requester, with
 * the source's lkey and the target's rkey, and the responder (which posts
 * nothing) writes the target. On a ConnectX this is the NIC's own loopback:
 * the address vector names the port's own GID (RoCE) or LID (InfiniBand),
 * as any connection does, so nothing else is needed; gnic-emu routes a
 * packet to its own device the same way it routes one to a peer.
 */
#include <stdlib.h>
#include <string.h>

#include "gnic_int.h"

struct gnic_dma {
	struct gnic_qp *req;  /* device code posts here */
	struct gnic_qp *resp; /* the target side: never posts */
};

/* Both directions: req -> resp, resp -> req. */
static gnic_status_t dma_connect(struct gnic_dma *dma)
{
	struct gnic_blob breq, bresp;
	gnic_status_t s;

	s = gnic_qp_export(dma->req, &breq);
	if (s == GNIC_OK)
		s = gnic_qp_export(dma->resp, &bresp);
	if (s == GNIC_OK)
		s = gnic_qp_connect(dma->req, &bresp);
	if (s == GNIC_OK)
		s = gnic_qp_connect(dma->resp, &breq);
	return s;
}

GNIC_API gnic_status_t gnic_dma_create(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                       struct gnic_dma **dma_p)
{
	struct gnic_qp_attr a, r;
	struct gnic_dma *dma;
	gnic_status_t s;

	if (!ctx || !dma_p)
		return gnic_error(GNIC_ERR_INVALID, "gnic_dma_create: NULL argument");
	if (attr)
		a = *attr;
	else
		gnic_qp_attr_init(&a);
	a.rq_depth = 0; /* copies are WRITEs: no receives on either side */
	/* the responder's SQ carries only the NIC's responses */
	r = a;
	r.sq_depth = 64;
	r.max_inline = 0;
	r.cqe_every = 16;
	r.db_batch = 1;
	dma = calloc(1, sizeof(*dma));
	if (!dma)
		return gnic_error(GNIC_ERR_NOMEM, "gnic_dma_create: out of memory");
	s = gnic_qp_create(ctx, &a, &dma->req);
	if (s != GNIC_OK)
		goto fail;
	s = gnic_qp_create(ctx, &r, &dma->resp);
	if (s != GNIC_OK)
		goto fail;
	s = dma_connect(dma);
	if (s != GNIC_OK)
		goto fail;
	*dma_p = dma;
	return GNIC_OK;
fail:
	if (dma->resp)
		gnic_qp_destroy(dma->resp);
	if (dma->req)
		gnic_qp_destroy(dma->req);
	free(dma);
	return s; /* the text names what failed */
}

GNIC_API void gnic_dma_destroy(struct gnic_dma *dma)
{
	if (!dma)
		return;
	gnic_qp_destroy(dma->resp);
	gnic_qp_destroy(dma->req);
	free(dma);
}

GNIC_API struct gnic_dev_dma *gnic_dma_dev(struct gnic_dma *dma)
{
	/* struct gnic_dev_dma is the requester's struct gnic_dev_qp */
	return dma ? (struct gnic_dev_dma *)gnic_qp_dev(dma->req) : NULL;
}

GNIC_API gnic_status_t gnic_dma_error(struct gnic_dma *dma, struct gnic_qp_error *err)
{
	if (!dma)
		return gnic_error(GNIC_ERR_INVALID, "gnic_dma_error: NULL queue");
	return gnic_qp_error(dma->req, err);
}

GNIC_API gnic_status_t gnic_dma_reset(struct gnic_dma *dma)
{
	gnic_status_t s;

	if (!dma)
		return gnic_error(GNIC_ERR_INVALID, "gnic_dma_reset: NULL queue");
	s = gnic_qp_reset(dma->req);
	if (s == GNIC_OK)
		s = gnic_qp_reset(dma->resp);
	if (s == GNIC_OK)
		s = dma_connect(dma);
	return s;
}

GNIC_API struct gnic_qp *gnic_dma_qp(struct gnic_dma *dma)
{
	return dma ? dma->req : NULL;
}
