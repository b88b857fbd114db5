/* SPDX-License-Identifier: MIT */
/*
 * DEVX QPs: CREATE_QP (RC), the modify commands of the RC state machine,
 * QUERY_QP and the destroy, over the engine's QP object with the user's
 * queues (emu_create_qp_ext): the RQ (2^log_rq_size WQEs of
 * 16 << log_rq_stride bytes, none for a zero-size RQ) then the SQ
 * (2^log_sq_size basic blocks, none with no_sq) at wq_umem_offset of
 * wq_umem_id, the doorbell record at dbr_addr of dbr_umem_id, the doorbell
 * register in UAR page uar_page. A DEVX QP talks to verbs QPs and to other
 * DEVX QPs, in process and across processes, as any QP does.
 *
 * A modify command is the verbs transition of the same name with the
 * attributes taken from its qpc (the same checks: a bad value is BAD_PARAM,
 * the wrong current state BAD_QP_STATE). The address path (ads): rgid_rip
 * names the peer (on RoCE a GRH is implied: grh = 0 is taken as 1), and
 * src_addr_index, hop_limit, tclass, flow_label, sl, rlid (InfiniBand) and
 * vhca_port_num as the verbs' address vector; rmac and udp_sport are kept
 * and queried back but do not route.
 *
 * Not supported (BAD_PARAM): service types other than RC, SRQ-fed receive
 * queues, scatter-to-CQE other than 32 bytes; (BAD_OP) RTS2RTS, INIT2INIT,
 * SQERR2RTS, SQD2RTS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devx.h"

#define QP_LOG_MAX    15 /* EMU_MAX_QP_WR */
#define ADS_BYTES     44
#define RQ_STRIDE_MAX EMU_MAX_RQ_DESC

/* Reasons (the syndrome's low half) of the QP commands' failures. */
enum {
	R_ST = 200,
	R_PD,
	R_CQ,
	R_SRQ,
	R_SIZE,
	R_UMEM,
	R_DBR,
	R_UAR,
	R_SCATTER,
	R_NO_RES,
	R_STATE,
	R_ATTR,
};

struct qp_parts {
	struct emu_pd *pd;
	struct emu_cq *scq, *rcq;
	struct emu_devx_umem *umem, *dbr_umem;
	struct emu_devx_uar *uar;
	struct emu_qp_bufs b;
};

static uint8_t fail(struct devx_call *c, uint16_t reason, uint8_t status)
{
	c->reason = reason;
	return status;
}

/* ---- create ------------------------------------------------------------ */

static struct emu_cq *cq_of(struct emu_context *ctx, uint32_t cqn)
{
	struct emu_cq *cq = cqn < EMU_MAX_CQ ? emu_nic.cqs[cqn] : NULL;

	return cq && cq->ibcq.context == &ctx->vctx.context ? cq : NULL;
}

/* The PD and CQs, each held (refcnt) until the QP holds its own. */
static uint8_t take_refs(struct devx_call *c, const uint8_t *qpc, struct qp_parts *p, bool sq,
                         bool rq)
{
	uint8_t st = PRM_STAT_OK;

	emu_nic_lock();
	p->pd = emu_pd_lookup(prm_get(qpc, PRM_QPC_PD));
	if (!p->pd || p->pd->ibpd.context != &c->ctx->vctx.context)
		st = fail(c, R_PD, PRM_STAT_BAD_PARAM);
	p->scq = cq_of(c->ctx, prm_get(qpc, PRM_QPC_CQN_SND));
	p->rcq = cq_of(c->ctx, prm_get(qpc, PRM_QPC_CQN_RCV));
	if (!sq && !p->scq)
		p->scq = p->rcq;
	if (!rq && !p->rcq)
		p->rcq = p->scq;
	if (!st && (!p->scq || !p->rcq))
		st = fail(c, R_CQ, PRM_STAT_BAD_PARAM);
	if (!st) {
		p->pd->refcnt++;
		p->scq->refcnt++;
		p->rcq->refcnt++;
	}
	emu_nic_unlock();
	return st;
}

static void drop_refs(struct qp_parts *p)
{
	emu_nic_lock();
	p->pd->refcnt--;
	p->scq->refcnt--;
	p->rcq->refcnt--;
	emu_nic_unlock();
}

static uint8_t queue_sizes(struct devx_call *c, const uint8_t *qpc, struct emu_qp_bufs *b)
{
	uint32_t rq_type = prm_get(qpc, PRM_QPC_RQ_TYPE);

	if (rq_type == PRM_RQ_SRQ)
		return fail(c, R_SRQ, PRM_STAT_BAD_PARAM);
	if (rq_type != PRM_RQ_REGULAR && rq_type != PRM_RQ_ZERO)
		return fail(c, R_SIZE, PRM_STAT_BAD_PARAM);
	if (rq_type == PRM_RQ_REGULAR) {
		if (prm_get(qpc, PRM_QPC_LOG_RQ_SIZE) > QP_LOG_MAX)
			return fail(c, R_SIZE, PRM_STAT_BAD_PARAM);
		b->rq_cnt = 1u << prm_get(qpc, PRM_QPC_LOG_RQ_SIZE);
		b->rq_stride = 16u << prm_get(qpc, PRM_QPC_LOG_RQ_STRIDE);
		if (b->rq_stride > RQ_STRIDE_MAX)
			return fail(c, R_SIZE, PRM_STAT_BAD_PARAM);
	}
	if (!prm_get(qpc, PRM_QPC_NO_SQ)) {
		if (prm_get(qpc, PRM_QPC_LOG_SQ_SIZE) > QP_LOG_MAX)
			return fail(c, R_SIZE, PRM_STAT_BAD_PARAM);
		b->sq_cnt = 1u << prm_get(qpc, PRM_QPC_LOG_SQ_SIZE);
	}
	return PRM_STAT_OK;
}

/* The RQ, then the SQ right after it, in the WQ umem. */
static uint8_t place_queues(struct devx_call *c, const uint8_t *qpc, struct qp_parts *p)
{
	uint64_t rq_bytes = (uint64_t)p->b.rq_cnt * p->b.rq_stride;
	uint64_t len = rq_bytes + (uint64_t)p->b.sq_cnt * GNIC_MLX5_SEND_WQE_BB;
	uint8_t *wq;

	if (len) {
		p->umem = emu_devx_umem_get(c->ctx, prm_get(c->in, PRM_CREATE_QP_IN_UMEM_ID));
		wq = emu_devx_umem_ptr(p->umem, prm_get64(c->in, PRM_CREATE_QP_IN_UMEM_OFF), len,
		                       GNIC_MLX5_SEND_WQE_BB);
		if (!wq)
			return fail(c, R_UMEM, PRM_STAT_BAD_PARAM);
		p->b.rq_buf = wq;
		p->b.sq_buf = wq + rq_bytes;
	}
	p->dbr_umem = emu_devx_umem_get(c->ctx, prm_get(qpc, PRM_QPC_DBR_UMEM_ID));
	p->b.dbrec = emu_devx_umem_ptr(p->dbr_umem, prm_get64(qpc, PRM_QPC_DBR_ADDR_OFF), 8, 8);
	if (!p->b.dbrec)
		return fail(c, R_DBR, PRM_STAT_BAD_PARAM);
	return PRM_STAT_OK;
}

static uint8_t scatter(struct devx_call *c, const uint8_t *qpc, struct emu_qp_bufs *b)
{
	uint32_t req = prm_get(qpc, PRM_QPC_CS_REQ), res = prm_get(qpc, PRM_QPC_CS_RES);

	if ((req && req != PRM_CS_REQ_DATA32) || (res && res != PRM_CS_RES_DATA32))
		return fail(c, R_SCATTER, PRM_STAT_BAD_PARAM);
	b->scat_req = req == PRM_CS_REQ_DATA32;
	b->scat_recv = res == PRM_CS_RES_DATA32;
	return PRM_STAT_OK;
}

static uint8_t qp_check(struct devx_call *c, const uint8_t *qpc, struct qp_parts *p)
{
	uint8_t st;

	if (prm_get(qpc, PRM_QPC_ST) != PRM_QP_ST_RC)
		return fail(c, R_ST, PRM_STAT_BAD_PARAM);
	st = queue_sizes(c, qpc, &p->b);
	if (!st)
		st = scatter(c, qpc, &p->b);
	if (!st)
		st = place_queues(c, qpc, p);
	if (st)
		return st;
	p->uar = emu_devx_uar_get(c->ctx, prm_get(qpc, PRM_QPC_UAR_PAGE));
	if (!p->uar)
		return fail(c, R_UAR, PRM_STAT_BAD_PARAM);
	p->b.uar = p->uar->page;
	return take_refs(c, qpc, p, p->b.sq_cnt, p->b.rq_cnt);
}

uint8_t emu_devx_create_qp(struct devx_call *c)
{
	const uint8_t *qpc = prm_cat(c->in, PRM_QP_IN_QPC_OFF);
	struct mlx5dv_devx_obj *obj = NULL;
	struct qp_parts p = {0};
	struct emu_qp *qp = NULL;
	int err = ENOMEM;
	uint8_t st = qp_check(c, qpc, &p);

	if (st) {
		if (p.uar)
			emu_devx_uar_put(p.uar);
		return st;
	}
	obj = calloc(1, sizeof(*obj));
	if (obj)
		qp = emu_create_qp_ext(c->ctx, p.pd, p.scq, p.rcq, &p.b, &err);
	drop_refs(&p); /* the QP holds its own now */
	if (!qp) {
		free(obj);
		emu_devx_uar_put(p.uar);
		return fail(c, R_NO_RES, err == ENOMEM ? PRM_STAT_NO_RES : PRM_STAT_BAD_PARAM);
	}
	qp->gpu_wq = p.umem && p.umem->gpu ? p.umem : NULL;
	qp->gpu_dbr = p.dbr_umem->gpu ? p.dbr_umem : NULL;
	obj->ctx = c->ctx;
	obj->type = EMU_DEVX_QP;
	obj->id = qp->ibqp.qp_num;
	obj->qp = qp;
	obj->umem = p.umem;
	obj->dbr_umem = p.dbr_umem;
	obj->uar = p.uar;
	if (p.umem)
		p.umem->refcnt++;
	p.dbr_umem->refcnt++;
	memcpy(obj->img, qpc, PRM_QPC_BYTES);
	prm_set(obj->img, PRM_QPC_DBR_UMEM_VALID, 1);
	emu_devx_obj_add(obj);
	c->created = obj;
	prm_set(c->out, PRM_CREATE_QP_OUT_QPN, obj->id);
	return PRM_STAT_OK;
}

int emu_devx_destroy_qp(struct mlx5dv_devx_obj *obj)
{
	int err = gemu_destroy_qp(&obj->qp->ibqp);

	if (err)
		return err;
	if (obj->umem)
		obj->umem->refcnt--;
	obj->dbr_umem->refcnt--;
	emu_devx_uar_put(obj->uar);
	return 0;
}

/* ---- modify ---------------------------------------------------------------- */

static int port_of(const uint8_t *ads)
{
	uint32_t port = prm_get(ads, PRM_ADS_VHCA_PORT);

	return port ? (int)port : 1; /* 0: the function's own port */
}

static void attr_init(const uint8_t *qpc, struct ibv_qp_attr *a)
{
	const uint8_t *ads = prm_cat(qpc, PRM_QPC_PATH_OFF);

	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = (uint16_t)prm_get(ads, PRM_ADS_PKEY_INDEX);
	a->port_num = (uint8_t)port_of(ads);
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
	                     (prm_get(qpc, PRM_QPC_RRE) ? IBV_ACCESS_REMOTE_READ : 0) |
	                     (prm_get(qpc, PRM_QPC_RWE) ? IBV_ACCESS_REMOTE_WRITE : 0) |
	                     (prm_get(qpc, PRM_QPC_RAE) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
}

static void attr_rtr(const uint8_t *qpc, struct ibv_qp_attr *a)
{
	const uint8_t *ads = prm_cat(qpc, PRM_QPC_PATH_OFF);
	struct ibv_ah_attr *ah = &a->ah_attr;

	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = (enum ibv_mtu)prm_get(qpc, PRM_QPC_MTU); /* the same encoding */
	a->dest_qp_num = prm_get(qpc, PRM_QPC_REMOTE_QPN);
	a->rq_psn = prm_get(qpc, PRM_QPC_NEXT_RCV_PSN);
	a->max_dest_rd_atomic = (uint8_t)(1u << prm_get(qpc, PRM_QPC_LOG_RRA_MAX));
	a->min_rnr_timer = (uint8_t)prm_get(qpc, PRM_QPC_MIN_RNR_NAK);
	ah->is_global = prm_get(ads, PRM_ADS_GRH) || !emu_cfg.link_ib;
	memcpy(ah->grh.dgid.raw, prm_cat(ads, PRM_ADS_RGID_OFF), sizeof(ah->grh.dgid.raw));
	ah->grh.sgid_index = (uint8_t)prm_get(ads, PRM_ADS_SRC_ADDR_IDX);
	ah->grh.hop_limit = (uint8_t)prm_get(ads, PRM_ADS_HOP_LIMIT);
	ah->grh.traffic_class = (uint8_t)prm_get(ads, PRM_ADS_TCLASS);
	ah->grh.flow_label = prm_get(ads, PRM_ADS_FLOW_LABEL);
	ah->dlid = (uint16_t)prm_get(ads, PRM_ADS_RLID);
	ah->sl = (uint8_t)prm_get(ads, PRM_ADS_SL);
	ah->port_num = (uint8_t)port_of(ads);
}

static void attr_rts(const uint8_t *qpc, struct ibv_qp_attr *a)
{
	const uint8_t *ads = prm_cat(qpc, PRM_QPC_PATH_OFF);

	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = prm_get(qpc, PRM_QPC_NEXT_SEND_PSN);
	a->timeout = (uint8_t)prm_get(ads, PRM_ADS_ACK_TIMEOUT);
	a->retry_cnt = (uint8_t)prm_get(qpc, PRM_QPC_RETRY_COUNT);
	a->rnr_retry = (uint8_t)prm_get(qpc, PRM_QPC_RNR_RETRY);
	a->max_rd_atomic = (uint8_t)(1u << prm_get(qpc, PRM_QPC_LOG_SRA_MAX));
}

/* The fields a transition takes from its qpc, kept for QUERY_QP. */
static const struct prm_fld init_flds[] = {PRM_QPC_RRE, PRM_QPC_RWE, PRM_QPC_RAE,
                                           PRM_QPC_ATOMIC_MODE, PRM_QPC_PM_STATE};
static const struct prm_fld rtr_flds[] = {
    PRM_QPC_MTU,         PRM_QPC_LOG_MSG_MAX, PRM_QPC_REMOTE_QPN,  PRM_QPC_NEXT_RCV_PSN,
    PRM_QPC_LOG_RRA_MAX, PRM_QPC_MIN_RNR_NAK, PRM_QPC_LOG_ACK_FREQ};
static const struct prm_fld rts_flds[] = {PRM_QPC_NEXT_SEND_PSN, PRM_QPC_LOG_SRA_MAX,
                                          PRM_QPC_RETRY_COUNT, PRM_QPC_RNR_RETRY};

static void keep(uint8_t *img, const uint8_t *qpc, const struct prm_fld *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		prm_set(img, f[i], prm_get(qpc, f[i]));
}

static void keep_fields(uint16_t opcode, uint8_t *img, const uint8_t *qpc)
{
	uint8_t *ads = prm_at(img, PRM_QPC_PATH_OFF);
	const uint8_t *in_ads = prm_cat(qpc, PRM_QPC_PATH_OFF);

	if (opcode == PRM_CMD_RST2INIT_QP) {
		keep(img, qpc, init_flds, sizeof(init_flds) / sizeof(init_flds[0]));
		prm_set(ads, PRM_ADS_PKEY_INDEX, prm_get(in_ads, PRM_ADS_PKEY_INDEX));
		prm_set(ads, PRM_ADS_VHCA_PORT, prm_get(in_ads, PRM_ADS_VHCA_PORT));
	} else if (opcode == PRM_CMD_INIT2RTR_QP) {
		uint32_t timeout = prm_get(ads, PRM_ADS_ACK_TIMEOUT);

		keep(img, qpc, rtr_flds, sizeof(rtr_flds) / sizeof(rtr_flds[0]));
		memcpy(ads, in_ads, ADS_BYTES);
		prm_set(ads, PRM_ADS_ACK_TIMEOUT, timeout); /* RTR2RTS's */
	} else if (opcode == PRM_CMD_RTR2RTS_QP) {
		keep(img, qpc, rts_flds, sizeof(rts_flds) / sizeof(rts_flds[0]));
		prm_set(ads, PRM_ADS_ACK_TIMEOUT, prm_get(in_ads, PRM_ADS_ACK_TIMEOUT));
	}
}

/* The verbs transition a command is: its target state, the state it must
 * find, its attribute mask (besides IBV_QP_STATE). */
static bool transition(uint16_t opcode, int *from, int *mask)
{
	*from = -1; /* any */
	switch (opcode) {
	case PRM_CMD_RST2INIT_QP:
		*from = IBV_QPS_RESET;
		*mask = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return true;
	case PRM_CMD_INIT2RTR_QP:
		*from = IBV_QPS_INIT;
		*mask = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return true;
	case PRM_CMD_RTR2RTS_QP:
		*from = IBV_QPS_RTR;
		*mask = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		        IBV_QP_MAX_QP_RD_ATOMIC;
		return true;
	case PRM_CMD_2ERR_QP:
	case PRM_CMD_2RST_QP:
		*mask = 0;
		return true;
	}
	return false;
}

uint8_t emu_devx_modify_qp(struct devx_call *c)
{
	const uint8_t *qpc = prm_cat(c->in, PRM_QP_IN_QPC_OFF);
	struct emu_qp *qp = c->obj->qp;
	struct ibv_qp_attr a = {0};
	int from, mask, err;

	if (!transition(c->opcode, &from, &mask))
		return fail(c, R_STATE, PRM_STAT_BAD_OP);
	if (from >= 0 && atomic_load(&qp->state) != from)
		return fail(c, R_STATE, PRM_STAT_BAD_QP_STATE);
	if (c->opcode == PRM_CMD_RST2INIT_QP)
		attr_init(qpc, &a);
	else if (c->opcode == PRM_CMD_INIT2RTR_QP)
		attr_rtr(qpc, &a);
	else if (c->opcode == PRM_CMD_RTR2RTS_QP)
		attr_rts(qpc, &a);
	else
		a.qp_state = c->opcode == PRM_CMD_2ERR_QP ? IBV_QPS_ERR : IBV_QPS_RESET;
	err = gemu_modify_qp(&qp->ibqp, &a, mask | IBV_QP_STATE);
	if (err)
		return fail(c, R_ATTR, PRM_STAT_BAD_PARAM);
	keep_fields(c->opcode, c->obj->img, qpc);
	return PRM_STAT_OK;
}

/* ---- query ------------------------------------------------------------------ */

static uint32_t prm_state(int state)
{
	switch (state) {
	case IBV_QPS_RESET:
		return PRM_QPS_RST;
	case IBV_QPS_INIT:
		return PRM_QPS_INIT;
	case IBV_QPS_RTR:
		return PRM_QPS_RTR;
	case IBV_QPS_RTS:
		return PRM_QPS_RTS;
	case IBV_QPS_SQD:
		return PRM_QPS_SQD;
	case IBV_QPS_SQE:
		return PRM_QPS_SQER;
	default:
		return PRM_QPS_ERR;
	}
}

/* The context as created and modified, in the state the QP is in now (the
 * engine may have moved it to ERR). */
uint8_t emu_devx_query_qp(struct devx_call *c)
{
	uint8_t *qpc = prm_at(c->out, PRM_QUERY_QP_OUT_QPC_OFF);

	memcpy(qpc, c->obj->img, PRM_QPC_BYTES);
	prm_set(qpc, PRM_QPC_STATE, prm_state(atomic_load(&c->obj->qp->state)));
	return PRM_STAT_OK;
}
