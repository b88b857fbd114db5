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

/* How rdma-core's mlx5 provider (providers/mlx5/verbs.c) sizes the QP qp.c
 * creates: RC through plain ibv_create_qp, one SGE each way, no
 * send_ops_flags. mlx5_calc_send_wqe() sizes every send WQE slot for the
 * largest WQE: the 192 bytes sq_overhead() reserves (without send_ops_flags
 * a memory-window bind may be posted: ctrl, UMR ctrl, mkey context, 64 bytes
 * of KLMs), then one data segment or 4 + max_inline bytes of inline data in
 * 16-byte units, rounded up to basic blocks. mlx5_calc_sq_size() makes the
 * SQ sq_depth slots rounded up to a power of two of basic blocks, at most
 * max_qp_wr of them; mlx5_calc_rq_size() makes the RQ a power of two of
 * 16-byte WQEs, at least one basic block. */
#define SQ_OVERHEAD 192u
#define SQ_MAX_WQE  (GNIC_MLX5_MAX_WQE_BB * GNIC_MLX5_SEND_WQE_BB) /* max_wqe_sz_sq */
#define INL_HDR     4u /* the inline segment's byte count */
#define MAX_INLINE  (SQ_MAX_WQE - SQ_OVERHEAD - INL_HDR)

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

static uint32_t align_to(uint32_t v, uint32_t a)
{
	return (v + a - 1) / a * a;
}

/* Bytes of one send WQE slot (max_inline <= MAX_INLINE). */
static uint32_t wqe_size(uint32_t max_inline)
{
	uint32_t sge = SQ_OVERHEAD + GNIC_MLX5_SEG_SIZE;
	uint32_t inl =
	    max_inline ? SQ_OVERHEAD + align_to(INL_HDR + max_inline, GNIC_MLX5_SEG_SIZE) : 0;

	return align_to(inl > sge ? inl : sge, GNIC_MLX5_SEND_WQE_BB);
}

/* Basic blocks of the SQ the provider makes; 64-bit: it may exceed any limit. */
static uint64_t sq_bbs(const struct gnic_qp_attr *a)
{
	uint64_t bytes = (uint64_t)a->sq_depth * wqe_size(a->max_inline), p = 1;

	while (p < bytes)
		p <<= 1;
	return p / GNIC_MLX5_SEND_WQE_BB;
}

static uint32_t queue_limit(uint32_t max_qp_wr)
{
	return max_qp_wr < GNIC_MAX_QP_WR ? max_qp_wr : GNIC_MAX_QP_WR;
}

/* The largest sq_depth whose SQ fits in limit basic blocks. */
static uint32_t sq_depth_max(uint32_t max_inline, uint32_t limit)
{
	uint64_t bbs = 1;

	while (bbs * 2 <= limit) /* the SQ is a power of two of them */
		bbs *= 2;
	return (uint32_t)(bbs * GNIC_MLX5_SEND_WQE_BB / wqe_size(max_inline));
}

static gnic_status_t check_queues(const struct gnic_qp_attr *a, uint32_t max_qp_wr)
{
	uint32_t limit = queue_limit(max_qp_wr);
	const char *who = limit < max_qp_wr ? "libgnic" : "the device";
	uint64_t bbs;

	if (a->max_inline > MAX_INLINE)
		return gnic_error(
		    GNIC_ERR_INVALID,
		    "qp: max_inline %u above %u (a send WQE is at most %u bytes, %u of "
		    "them reserved by rdma-core's mlx5 provider)",
		    a->max_inline, MAX_INLINE, SQ_MAX_WQE, SQ_OVERHEAD);
	if (a->sq_depth < 1)
		return gnic_error(GNIC_ERR_INVALID, "qp: sq_depth 0 (at least 1)");
	bbs = sq_bbs(a);
	if (bbs > limit)
		return gnic_error(
		    GNIC_ERR_INVALID,
		    "qp: sq_depth %u with max_inline %u needs %llu WQE basic blocks; %s "
		    "allows %u (sq_depth <= %u at this max_inline)",
		    a->sq_depth, a->max_inline, (unsigned long long)bbs, who, limit,
		    sq_depth_max(a->max_inline, limit));
	if (a->rq_depth > limit)
		return gnic_error(GNIC_ERR_INVALID, "qp: rq_depth %u above %u (%s's limit)",
		                  a->rq_depth, limit, who);
	return GNIC_OK;
}

static gnic_status_t check_device(const struct gnic_qp_attr *a)
{
	if ((unsigned)a->db_mode > GNIC_DB_PROXY)
		return gnic_error(GNIC_ERR_INVALID, "qp: unknown db_mode %d", a->db_mode);
	if ((unsigned)a->share > GNIC_SHARE_GPU)
		return gnic_error(GNIC_ERR_INVALID, "qp: unknown share %d", a->share);
	if (a->queue > GNIC_QUEUE_HOST_DEVX)
		return gnic_error(GNIC_ERR_INVALID, "qp: unknown queue placement %u", a->queue);
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

gnic_status_t gnic_qp_attr_check(const struct gnic_qp_attr *attr, uint32_t max_qp_wr)
{
	gnic_status_t st = check_queues(attr, max_qp_wr);

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

/* The provider's SQ size in basic blocks, as checked above (qp.c grows the
 * CQ should a provider size it otherwise). */
uint32_t gnic_qp_scq_depth(const struct gnic_qp_attr *attr)
{
	return (uint32_t)sq_bbs(attr);
}

/* The RQ holds at least one basic block of 16-byte WQEs: 4. No RQ: 2 CQEs. */
uint32_t gnic_qp_rcq_depth(const struct gnic_qp_attr *attr)
{
	uint32_t n = gnic_pow2_ceil(attr->rq_depth);

	if (!attr->rq_depth)
		return 2;
	return n > GNIC_MLX5_SEND_WQE_BB / GNIC_MLX5_SEG_SIZE
	           ? n
	           : GNIC_MLX5_SEND_WQE_BB / GNIC_MLX5_SEG_SIZE;
}
