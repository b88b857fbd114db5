/* SPDX-License-Identifier: MIT */
/*
 * QP attributes: defaults, validation, and the CQ sizes they imply.
 *
 * Invariants the device data path relies on (gnic_dev.cuh):
 *  - cqe_every is a power of two and at most half the SQ, so while the SQ is
 *    full at least one signaled WQE is in flight and its CQE frees space;
 *  - db_batch is at most sq_depth, so a batch can always be rung;
 *  - each CQ holds at least as many CQEs as its queue holds WQEs, so even a
 *    flush of a full queue (every WQE completes in error) cannot overrun it.
 */
#include <string.h>

#include "gnic_int.h"

#define MAX_INLINE (GNIC_MLX5_MAX_WQE_BB * GNIC_MLX5_SEND_WQE_BB - 2 * GNIC_MLX5_SEG_SIZE - 4)

GNIC_API void gnic_qp_attr_init(struct gnic_qp_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->sq_depth = 1024;
	attr->rq_depth = 256;
	attr->max_inline = 64;
	attr->db_mode = GNIC_DB_AUTO;
	attr->share = GNIC_SHARE_GPU;
	attr->cqe_every = 16;
	attr->db_batch = 1;
	attr->timeout_ns = 10ull * 1000 * 1000 * 1000;
	attr->retry_cnt = 7;
	attr->rnr_retry = 7;
	attr->timeout = 14;
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static gnic_status_t check_queues(const struct gnic_qp_attr *a)
{
	if (a->sq_depth < 1 || a->sq_depth > GNIC_MAX_QP_WR)
		return gnic_error(GNIC_ERR_INVALID, "qp: sq_depth %u not in [1, %u]", a->sq_depth,
		                  GNIC_MAX_QP_WR);
	if (a->rq_depth > GNIC_MAX_QP_WR)
		return gnic_error(GNIC_ERR_INVALID, "qp: rq_depth %u above %u", a->rq_depth,
		                  GNIC_MAX_QP_WR);
	if (a->max_inline > MAX_INLINE)
		return gnic_error(GNIC_ERR_INVALID, "qp: max_inline %u above %u (16 basic blocks)",
		                  a->max_inline, MAX_INLINE);
	return GNIC_OK;
}

static gnic_status_t check_device(const struct gnic_qp_attr *a)
{
	if ((unsigned)a->db_mode > GNIC_DB_CPU)
		return gnic_error(GNIC_ERR_INVALID, "qp: unknown db_mode %d", a->db_mode);
	if ((unsigned)a->share > GNIC_SHARE_GPU)
		return gnic_error(GNIC_ERR_INVALID, "qp: unknown share %d", a->share);
	if (!is_pow2(a->cqe_every))
		return gnic_error(GNIC_ERR_INVALID, "qp: cqe_every %u is not a power of two",
		                  a->cqe_every);
	if (a->db_batch < 1 || a->db_batch > a->sq_depth)
		return gnic_error(GNIC_ERR_INVALID, "qp: db_batch %u not in [1, sq_depth %u]",
		                  a->db_batch, a->sq_depth);
	if (!a->timeout_ns)
		return gnic_error(GNIC_ERR_INVALID, "qp: timeout_ns is 0 (every wait is bounded)");
	return GNIC_OK;
}

static gnic_status_t check_transport(const struct gnic_qp_attr *a)
{
	if (a->retry_cnt > 7 || a->rnr_retry > 7)
		return gnic_error(GNIC_ERR_INVALID, "qp: retry_cnt %u / rnr_retry %u above 7",
		                  a->retry_cnt, a->rnr_retry);
	if (a->timeout > 31)
		return gnic_error(GNIC_ERR_INVALID, "qp: timeout exponent %u above 31", a->timeout);
	return GNIC_OK;
}

gnic_status_t gnic_qp_attr_check(const struct gnic_qp_attr *attr)
{
	gnic_status_t st = check_queues(attr);

	if (!st)
		st = check_device(attr);
	if (!st)
		st = check_transport(attr);
	return st;
}

/* Once the provider has sized the SQ. */
gnic_status_t gnic_qp_attr_check_geometry(const struct gnic_qp_attr *attr, uint32_t sq_wqe_cnt)
{
	if (attr->cqe_every > sq_wqe_cnt / 2)
		return gnic_error(GNIC_ERR_INVALID,
		                  "qp: cqe_every %u above half the SQ (%u basic blocks)",
		                  attr->cqe_every, sq_wqe_cnt);
	return GNIC_OK;
}

/* Basic blocks of the largest WQE the device posts: ctrl + raddr + inline
 * data, an atomic (atomic + data segment) or one data segment. */
static uint32_t wqe_bb(const struct gnic_qp_attr *a)
{
	uint32_t inl = (4 + a->max_inline + GNIC_MLX5_SEG_SIZE - 1) & ~(GNIC_MLX5_SEG_SIZE - 1u);
	uint32_t body = inl > 2 * GNIC_MLX5_SEG_SIZE ? inl : 2 * GNIC_MLX5_SEG_SIZE;
	uint32_t size = 2 * GNIC_MLX5_SEG_SIZE + body;

	return (size + GNIC_MLX5_SEND_WQE_BB - 1) / GNIC_MLX5_SEND_WQE_BB;
}

/* A first guess; qp.c grows the CQ if the provider made the SQ larger. */
uint32_t gnic_qp_scq_depth(const struct gnic_qp_attr *attr)
{
	uint32_t bb = wqe_bb(attr);

	return gnic_pow2_ceil(attr->sq_depth * (bb > 2 ? bb : 2));
}

uint32_t gnic_qp_rcq_depth(const struct gnic_qp_attr *attr)
{
	return gnic_pow2_ceil(attr->rq_depth > 2 ? attr->rq_depth : 2);
}
