/* SPDX-License-Identifier: MIT */
/*
 * A BlueFlame QP's doorbell register, which must be its own.
 *
 * rdma-core's mlx5 gives a context's QPs 4 dedicated registers, then 12
 * shared ones (MLX5_TOTAL_UUARS / MLX5_NUM_LOW_LAT_UUARS), and from the
 * 17th QP on puts two and more QPs on a shared register, whose half toggle
 * and lock are the register's, kept in rdma-core's memory. Device code
 * cannot take that lock nor see that toggle: two QPs' BlueFlame copies to
 * one register would interleave and pick the same half, and the NIC drops
 * a copy that is not its QP's WQE. Even a register dedicated today is
 * handed to the next QP once its own is destroyed.
 *
 * A thread domain is rdma-core's way to give QPs a register of their own:
 * mlx5_alloc_td takes a BlueFlame register that no QP outside the domain
 * gets, and a QP made on a parent domain with that thread domain writes it,
 * without a lock (the domain promises one thread at a time, which the
 * device code's doorbell lock or GNIC_SHARE_EXCLUSIVE keeps). So each BF
 * QP gets a thread domain and a parent domain of its own, and its half
 * toggle (gnic_dev_qp.bf_half) is its register's.
 *
 * Without one (a provider without thread domains, or the device out of UAR
 * pages): an explicit GNIC_DB_BF fails, as a user who asked for BlueFlame
 * expects to hear; BF that came from GNIC_DB_MODE for an AUTO QP becomes SM
 * (8-byte doorbells, safe on any register), said at the default level once
 * per context, at info after.
 */
#include <errno.h>
#include <string.h>

#include "gnic_int.h"

/* Both domains or neither: 0, or the errno of the call *what names. */
static int domains_open(struct gnic_qp *qp, const char **what)
{
	struct gnic_ctx *ctx = qp->ctx;

	*what = "ibv_alloc_td";
	qp->td = gnic_verbs_alloc_td(ctx->ibctx);
	if (!qp->td)
		return errno ? errno : EOPNOTSUPP;
	*what = "ibv_alloc_parent_domain";
	qp->pdom = gnic_verbs_alloc_parent_domain(ctx->ibctx, ctx->pd, qp->td);
	if (!qp->pdom) {
		int err = errno ? errno : EOPNOTSUPP;

		gnic_verbs_dealloc_td(qp->td);
		qp->td = NULL;
		return err;
	}
	return 0;
}

gnic_status_t gnic_qp_bf_pd(struct gnic_qp *qp, struct ibv_pd **pd)
{
	const char *what;
	int err, level;

	*pd = qp->ctx->pd;
	if (qp->attr.db_mode != GNIC_DB_BF)
		return GNIC_OK;
	if (qp->pdom) { /* a second try at the verbs objects keeps the domains */
		*pd = qp->pdom;
		return GNIC_OK;
	}
	errno = 0;
	err = domains_open(qp, &what);
	if (!err) {
		*pd = qp->pdom;
		return GNIC_OK;
	}
	if (!qp->db_from_env)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "qp: db_mode BF needs a doorbell register no other QP shares (a "
		                  "thread domain), and %s on %s failed: %s",
		                  what, qp->ctx->device, strerror(err));
	level = qp->ctx->bf_noted ? GNIC_LOG_INFO : GNIC_LOG_NOTE;
	qp->ctx->bf_noted = true;
	gnic_log(level,
	         "qp: GNIC_DB_MODE=bf needs a doorbell register no other QP shares (a thread "
	         "domain), and %s on %s failed (%s): SM (GNIC_DB_SM) instead",
	         what, qp->ctx->device, strerror(err));
	qp->attr.db_mode = GNIC_DB_SM;
	return GNIC_OK;
}

void gnic_qp_bf_close(struct gnic_qp *qp)
{
	const struct gnic_verbs *v = qp->ctx->v;
	int err;

	if (qp->pdom && (err = v->dealloc_pd(qp->pdom)))
		gnic_warn("qp: ibv_dealloc_pd of a BF QP's parent domain: %s", strerror(err));
	if (qp->td && (err = gnic_verbs_dealloc_td(qp->td)))
		gnic_warn("qp: ibv_dealloc_td of a BF QP's thread domain: %s", strerror(err));
	qp->pdom = NULL;
	qp->td = NULL;
}
