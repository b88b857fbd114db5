/* SPDX-License-Identifier: MIT */
/*
 * Connecting a QP: export our blob, and walk RESET -> INIT -> RTR -> RTS
 * towards the peer a blob describes; reset back to RESET after an error.
 *
 * The QPN and the starting PSN are fixed for the life of the QP, so after
 * both sides reset they may reconnect with the blobs they already have.
 */
#include <stdio.h>
#include <string.h>

#include "gnic_int.h"

#define MIN_RNR_TIMER 12 /* 0.64 ms before a sender retries after RNR NAK */
#define HOP_LIMIT     64

GNIC_API gnic_status_t gnic_qp_export(struct gnic_qp *qp, struct gnic_blob *blob)
{
	struct gnic_blob_info info = {0};

	if (!qp || !blob)
		return gnic_error(GNIC_ERR_INVALID, "qp_export: NULL argument");
	memcpy(info.gid, qp->ctx->gid.raw, sizeof(info.gid));
	info.qpn = qp->qpn;
	info.psn = qp->psn;
	info.mtu = (uint8_t)qp->ctx->mtu;
	info.lid = qp->ctx->lid;
	info.link_layer = qp->ctx->link_layer;
	gnic_blob_encode(&info, blob);
	return GNIC_OK;
}

static gnic_status_t modify(struct gnic_qp *qp, struct ibv_qp_attr *a, int mask, const char *to)
{
	gnic_status_t st = qp->ops->modify(qp, a, mask);

	if (st)
		return gnic_error(st, "QP %#x (%s) to %s: %s", qp->qpn, qp->ops->name, to,
		                  gnic_last_error());
	return GNIC_OK;
}

static gnic_status_t to_init(struct gnic_qp *qp)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT,
	    .pkey_index = 0,
	    .port_num = GNIC_PORT,
	    .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	                       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};

	return modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	              "INIT");
}

static gnic_status_t to_rtr(struct gnic_qp *qp, const struct gnic_blob_info *peer)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = peer->mtu < qp->ctx->mtu ? (enum ibv_mtu)peer->mtu : qp->ctx->mtu,
	    .dest_qp_num = peer->qpn,
	    .rq_psn = peer->psn,
	    .max_dest_rd_atomic = qp->ctx->max_dest_rd_atomic,
	    .min_rnr_timer = MIN_RNR_TIMER,
	    .ah_attr = {.is_global = 1,
	                .port_num = GNIC_PORT,
	                .sl = qp->ctx->sl,
	                .grh = {.sgid_index = (uint8_t)qp->ctx->gid_index,
	                        .hop_limit = HOP_LIMIT,
	                        .traffic_class = qp->ctx->traffic_class}},
	};

	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, sizeof(peer->gid));
	if (qp->ctx->link_layer == IBV_LINK_LAYER_INFINIBAND) {
		/* the LID routes inside a subnet; a GRH only to another one */
		a.ah_attr.dlid = peer->lid;
		a.ah_attr.is_global = memcmp(peer->gid, qp->ctx->gid.raw, 8) != 0;
	}
	return modify(qp, &a,
	              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	              "RTR");
}

static gnic_status_t to_rts(struct gnic_qp *qp)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTS,
	    .timeout = qp->attr.timeout,
	    .retry_cnt = qp->attr.retry_cnt,
	    .rnr_retry = qp->attr.rnr_retry,
	    .sq_psn = qp->psn,
	    .max_rd_atomic = qp->ctx->max_rd_atomic,
	};

	return modify(qp, &a,
	              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	                  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
	              "RTS");
}

gnic_status_t gnic_qp_to_reset(struct gnic_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	return modify(qp, &a, IBV_QP_STATE, "RESET");
}

/* A failed transition: back to RESET, keeping the first failure's text. */
static gnic_status_t undo_connect(struct gnic_qp *qp, gnic_status_t st)
{
	char why[512];

	snprintf(why, sizeof(why), "%s", gnic_last_error());
	if (gnic_qp_to_reset(qp))
		gnic_warn("qp %#x: after a failed connect: %s", qp->qpn, gnic_last_error());
	return gnic_error(st, "%s", why);
}

/* Both ends on one link layer, and on InfiniBand a LID to address. */
static gnic_status_t check_peer(const struct gnic_qp *qp, const struct gnic_blob_info *peer)
{
	bool ib = qp->ctx->link_layer == IBV_LINK_LAYER_INFINIBAND;

	if (peer->version == 1 && ib)
		return gnic_error(
		    GNIC_ERR_PROTOCOL,
		    "blob: version 1 carries no LID, which InfiniBand needs: the peer's "
		    "libgnic is too old");
	if (peer->version >= 2 && peer->link_layer != qp->ctx->link_layer)
		return gnic_error(GNIC_ERR_PROTOCOL, "blob: the peer is on %s, this QP on %s",
		                  peer->link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
		                                                                : "Ethernet (RoCE)",
		                  ib ? "InfiniBand" : "Ethernet (RoCE)");
	return GNIC_OK;
}

GNIC_API gnic_status_t gnic_qp_connect(struct gnic_qp *qp, const struct gnic_blob *remote)
{
	struct gnic_blob_info peer;
	gnic_status_t st;

	if (!qp || !remote)
		return gnic_error(GNIC_ERR_INVALID, "qp_connect: NULL argument");
	if (qp->connected)
		return gnic_error(GNIC_ERR_STATE,
		                  "qp_connect: QP %#x is connected already; gnic_qp_reset() first",
		                  qp->qpn);
	st = gnic_blob_decode(remote, &peer);
	if (!st)
		st = check_peer(qp, &peer);
	if (st)
		return st;
	st = to_init(qp);
	if (!st)
		st = to_rtr(qp, &peer);
	if (!st)
		st = to_rts(qp);
	if (st)
		return undo_connect(qp, st);
	qp->connected = true;
	gnic_dbg("qp %#x connected to qpn %#x (psn %#x/%#x)", qp->qpn, peer.qpn, qp->psn, peer.psn);
	return GNIC_OK;
}

GNIC_API gnic_status_t gnic_qp_reset(struct gnic_qp *qp)
{
	gnic_status_t st;

	if (!qp)
		return gnic_error(GNIC_ERR_INVALID, "qp_reset: qp is NULL");
	st = gnic_qp_to_reset(qp);
	if (!st)
		st = gnic_qp_dev_reset(qp);
	if (!st)
		qp->connected = false;
	return st;
}
