/* SPDX-License-Identifier: MIT */
/*
 * DEVX CQs: CREATE_CQ, QUERY_CQ and the destroy, over the engine's CQ object
 * with the user's ring (emu_cq_init_ext). The ring is 2^log_cq_size 64-byte
 * CQEs at cq_umem_offset of cq_umem_id, the doorbell record 8 bytes at
 * dbr_addr of the cqc's dbr_umem_id (the kernel sets both umem_valid bits
 * for a DEVX command, so both are always umem). The engine writes CQEs there
 * as for any CQ: owner bit by pass, overrun judged against the consumer
 * index the user keeps in dbrec[0], unless oi (overrun ignore) is set.
 *
 * Not supported (BAD_PARAM): 128-byte CQEs, CQE compression, collapsed CQs.
 * Arming (the UAR's CQ doorbell, EQ events) has no effect: there is no
 * event channel to deliver to.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devx.h"

#define CQ_LOG_MAX     22  /* EMU_MAX_CQE + 1 */
#define CQC_ST_OVERRUN 0x9 /* cqc.status: CQ overflow */

/* Reasons (the syndrome's low half) of CREATE_CQ's failures. */
enum {
	R_CQE_SIZE = 100,
	R_COMPRESSION,
	R_COLLAPSED,
	R_LOG_SIZE,
	R_EQN,
	R_UAR,
	R_UMEM,
	R_DBR,
	R_NO_RES,
};

struct cq_parts {
	struct emu_devx_umem *umem, *dbr_umem;
	struct emu_devx_uar *uar;
	void *buf;
	__be32 *dbrec;
	uint32_t cnt;
};

static uint8_t fail(struct devx_call *c, uint16_t reason, uint8_t status)
{
	c->reason = reason;
	return status;
}

static uint8_t cq_check(struct devx_call *c, const uint8_t *cqc, struct cq_parts *p)
{
	uint32_t log = prm_get(cqc, PRM_CQC_LOG_CQ_SIZE);

	if (prm_get(cqc, PRM_CQC_CQE_SZ) != 0)
		return fail(c, R_CQE_SIZE, PRM_STAT_BAD_PARAM);
	if (prm_get(cqc, PRM_CQC_CQE_COMP_EN))
		return fail(c, R_COMPRESSION, PRM_STAT_BAD_PARAM);
	if (prm_get(cqc, PRM_CQC_CC))
		return fail(c, R_COLLAPSED, PRM_STAT_BAD_PARAM);
	if (log > CQ_LOG_MAX)
		return fail(c, R_LOG_SIZE, PRM_STAT_BAD_PARAM);
	if (!emu_devx_eqn_valid(c->ctx, prm_get(cqc, PRM_CQC_C_EQN)))
		return fail(c, R_EQN, PRM_STAT_BAD_PARAM);
	p->cnt = 1u << log;
	p->umem = emu_devx_umem_get(c->ctx, prm_get(c->in, PRM_CREATE_CQ_IN_UMEM_ID));
	p->buf = emu_devx_umem_ptr(p->umem, prm_get64(c->in, PRM_CREATE_CQ_IN_UMEM_OFF),
	                           (uint64_t)p->cnt * sizeof(struct gnic_mlx5_cqe64), 64);
	if (!p->buf)
		return fail(c, R_UMEM, PRM_STAT_BAD_PARAM);
	p->dbr_umem = emu_devx_umem_get(c->ctx, prm_get(cqc, PRM_CQC_DBR_UMEM_ID));
	p->dbrec = emu_devx_umem_ptr(p->dbr_umem, prm_get64(cqc, PRM_CQC_DBR_ADDR_OFF), 8, 8);
	if (!p->dbrec)
		return fail(c, R_DBR, PRM_STAT_BAD_PARAM);
	p->uar = emu_devx_uar_get(c->ctx, prm_get(cqc, PRM_CQC_UAR_PAGE));
	if (!p->uar)
		return fail(c, R_UAR, PRM_STAT_BAD_PARAM);
	return PRM_STAT_OK;
}

uint8_t emu_devx_create_cq(struct devx_call *c)
{
	const uint8_t *cqc = prm_cat(c->in, PRM_CREATE_CQ_IN_CQC_OFF);
	struct mlx5dv_devx_obj *obj;
	struct cq_parts p = {0};
	struct emu_cq *cq;
	uint8_t st = cq_check(c, cqc, &p);

	if (st)
		return st;
	obj = calloc(1, sizeof(*obj));
	cq = calloc(1, sizeof(*cq));
	if (!obj || !cq ||
	    emu_cq_init_ext(cq, &c->ctx->vctx.context, p.buf, p.cnt, p.dbrec,
	                    prm_get(cqc, PRM_CQC_OI))) {
		if (!obj || !cq)
			free(cq); /* emu_cq_init_ext frees it on failure */
		free(obj);
		emu_devx_uar_put(p.uar);
		return fail(c, R_NO_RES, PRM_STAT_NO_RES);
	}
	cq->devx = true;
	cq->gpu_buf = p.umem->gpu ? p.umem : NULL;
	cq->gpu_dbr = p.dbr_umem->gpu ? p.dbr_umem : NULL;
	obj->ctx = c->ctx;
	obj->type = EMU_DEVX_CQ;
	obj->id = cq->cqn;
	obj->cq = cq;
	obj->umem = p.umem;
	obj->dbr_umem = p.dbr_umem;
	obj->uar = p.uar;
	p.umem->refcnt++;
	p.dbr_umem->refcnt++;
	memcpy(obj->img, cqc, PRM_CQC_BYTES);
	prm_set(obj->img, PRM_CQC_DBR_UMEM_VALID, 1);
	emu_devx_obj_add(obj);
	c->created = obj;
	prm_set(c->out, PRM_CREATE_CQ_OUT_CQN, cq->cqn);
	emu_dbg("devx CQ 0x%x: %u CQEs at %p, doorbell record %p%s", cq->cqn, p.cnt, p.buf,
	        (void *)p.dbrec, cq->ignore_overrun ? ", overrun ignored" : "");
	return PRM_STAT_OK;
}

/* The context as created, with the counters and status of now. */
uint8_t emu_devx_query_cq(struct devx_call *c)
{
	uint8_t *cqc = prm_at(c->out, PRM_QUERY_CQ_OUT_CQC_OFF);
	struct emu_cq *cq = c->obj->cq;
	uint32_t ci;

	memcpy(cqc, c->obj->img, PRM_CQC_BYTES);
	emu_cqe_lock(cq);
	prm_set(cqc, PRM_CQC_PRODUCER_CNT, cq->pi & 0xffffff);
	prm_set(cqc, PRM_CQC_STATUS, cq->overrun ? CQC_ST_OVERRUN : 0);
	if (cq->gpu_dbr) /* the shadow's, which the engine pulls under this lock too */
		emu_devx_umem_pull(cq->gpu_dbr, cq->dbrec, sizeof(cq->dbrec[0]));
	ci = gnic_be32(__atomic_load_n(&cq->dbrec[0], __ATOMIC_ACQUIRE));
	emu_cqe_unlock(cq);
	prm_set(cqc, PRM_CQC_CONSUMER_CNT, ci & 0xffffff);
	return PRM_STAT_OK;
}

int emu_devx_destroy_cq(struct mlx5dv_devx_obj *obj)
{
	int err = gemu_destroy_cq(&obj->cq->ibcq);

	if (err)
		return err;
	obj->umem->refcnt--;
	obj->dbr_umem->refcnt--;
	emu_devx_uar_put(obj->uar);
	return 0;
}
