// SPDX-License-Identifier: MIT
/*
 * QP sizing: ibv_create_qp accepts and refuses exactly what rdma-core's mlx5
 * provider does for an RC QP made without send_ops_flags, on a device with
 * ConnectX-7's limits; it reports the same caps back, and ibv_query_qp and
 * mlx5dv_init_obj agree with them. The expectation is computed here from
 * rdma-core's rules (providers/mlx5/verbs.c), written the way rdma-core
 * writes them, not taken from gnic-emu.
 */
#include <infiniband/mlx5dv.h>

#include "common.h"

/* rdma-core's constants (struct sizes from providers/mlx5/mlx5dv.h and wqe.h)
 * and the device limits the kernel hands it (mlx5_ib_alloc_ucontext). */
enum {
	/* sq_overhead(): without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS an RC QP
	 * may post every opcode, IBV_QP_EX_WITH_BIND_MW and _LOCAL_INV too, so
	 * the largest of ctrl + raddr + atomic (48) and the MW bind's
	 * mlx5_wqe_ctrl_seg (16) + mlx5_wqe_umr_ctrl_seg (48) +
	 * mlx5_wqe_mkey_context_seg (64) + max(mlx5_wqe_umr_klm_seg, 64);
	 * RC adds no transport segment. Device caps play no part. */
	SQ_OVERHEAD = 16 + 48 + 64 + 64,
	INL_SEG = 4,      /* sizeof(struct mlx5_wqe_inl_data_seg), mlx5_calc_send_wqe() */
	DATA_SEG = 16,    /* sizeof(struct mlx5_wqe_data_seg) */
	SEND_WQE_BB = 64, /* MLX5_SEND_WQE_BB */
	/* ConnectX-7: max_wqe_sz_sq, max_wqe_sz_rq, 1 << log_max_qp_sz (15) */
	MAX_SQ_DESC = 1024,     /* ctx->max_sq_desc_sz */
	MAX_RQ_DESC = 512,      /* ctx->max_rq_desc_sz */
	MAX_SEND_WQEBB = 32768, /* ctx->max_send_wqebb */
	MAX_RECV_WR = 32768,    /* ctx->max_recv_wr; also query_device's max_qp_wr */
};

#define ALIGN_UP(v, a) (((v) + (a)-1) / (a) * (a))

struct expect {
	bool ok;
	struct ibv_qp_cap created; /* written back by ibv_create_qp */
	struct ibv_qp_cap queried; /* ibv_query_qp (mlx5_query_qp) */
	uint32_t sq_wqe_cnt, sq_stride, rq_wqe_cnt, rq_stride;
};

static uint64_t roundup_pow_of_two(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* ccan's ilog32 as rdma-core uses it: the bits needed for v (ilog32(0) = 0). */
static int ilog32(uint32_t v)
{
	return v ? 32 - __builtin_clz(v) : 0;
}

/* mlx5_calc_send_wqe() */
static int calc_send_wqe(const struct ibv_qp_cap *cap)
{
	int size = SQ_OVERHEAD, inl_size = 0, max_gather, tot_size;

	if (cap->max_inline_data)
		inl_size = size + ALIGN_UP(INL_SEG + (int)cap->max_inline_data, 16);
	max_gather = (MAX_SQ_DESC - size) / DATA_SEG;
	if ((int)cap->max_send_sge > max_gather)
		return -EINVAL;
	size += (int)cap->max_send_sge * DATA_SEG;
	tot_size = size > inl_size ? size : inl_size;
	if (tot_size > MAX_SQ_DESC)
		return -EINVAL;
	return ALIGN_UP(tot_size, SEND_WQE_BB);
}

/* mlx5_calc_sq_size(), then what create_qp() and the kernel report: the
 * kernel echoes max_send_sge and the max_inline_data rdma-core wrote into
 * the command; create_qp() sets max_send_wr = sq.max_post. */
static bool calc_sq_size(const struct ibv_qp_cap *cap, struct expect *e)
{
	int wqe_size;
	uint64_t wq_size;

	e->created.max_send_sge = cap->max_send_sge;
	e->created.max_inline_data = cap->max_inline_data;
	e->sq_stride = 1; /* 1 << sq.wqe_shift, which stays 0 without an SQ */
	if (!cap->max_send_wr)
		return true;
	wqe_size = calc_send_wqe(cap);
	if (wqe_size < 0 || wqe_size > MAX_SQ_DESC)
		return false;
	/* int arithmetic: no SGE and no inline leave -4, read back as 4294967292 */
	e->created.max_inline_data = (uint32_t)(wqe_size - SQ_OVERHEAD - INL_SEG);
	if (cap->max_send_wr > 0x7fffffff / MAX_SQ_DESC)
		return false;
	wq_size = roundup_pow_of_two((uint64_t)cap->max_send_wr * (uint64_t)wqe_size);
	e->sq_wqe_cnt = (uint32_t)(wq_size / SEND_WQE_BB);
	if (e->sq_wqe_cnt > MAX_SEND_WQEBB)
		return false;
	e->sq_stride = SEND_WQE_BB;
	e->created.max_send_wr = (uint32_t)(wq_size / (uint64_t)wqe_size);
	/* mlx5_query_qp(): sq.max_post, sq.max_gs, qp->max_inline_data */
	e->queried.max_send_wr = e->created.max_send_wr;
	e->queried.max_send_sge = cap->max_send_sge;
	e->queried.max_inline_data = e->created.max_inline_data;
	return true;
}

/* mlx5_get_max_recv_wr(), mlx5_calc_rcv_wqe(), mlx5_calc_rq_size() (no SRQ,
 * no WQE signature); create_qp() reports rq.max_post and rq.max_gs, the
 * kernel's query rq.wqe_cnt and its max_gs (the same values). */
static bool calc_rq_size(const struct ibv_qp_cap *cap, struct expect *e)
{
	uint32_t num_scatter = cap->max_recv_sge > 1 ? cap->max_recv_sge : 1;
	uint32_t wqe_size, wq_size, max_post;

	e->rq_stride = 1; /* 1 << rq.wqe_shift, 0 without an RQ */
	if (!cap->max_recv_wr)
		return true;
	if (cap->max_recv_wr > MAX_RECV_WR)
		return false;
	wqe_size = DATA_SEG * num_scatter;
	if (wqe_size > MAX_RQ_DESC)
		return false;
	wqe_size = (uint32_t)roundup_pow_of_two(wqe_size);
	wq_size = (uint32_t)roundup_pow_of_two(cap->max_recv_wr) * wqe_size;
	if (wq_size < SEND_WQE_BB)
		wq_size = SEND_WQE_BB;
	e->rq_wqe_cnt = wq_size / wqe_size;
	e->rq_stride = 1u << ilog32(wqe_size - 1);
	max_post = 1u << ilog32(e->rq_wqe_cnt - 1);
	e->created.max_recv_wr = e->queried.max_recv_wr = max_post;
	e->created.max_recv_sge = e->queried.max_recv_sge = wqe_size / DATA_SEG;
	return true;
}

static struct expect expect_for(const struct ibv_qp_cap *cap)
{
	struct expect e;

	memset(&e, 0, sizeof(e));
	e.ok = calc_sq_size(cap, &e) && calc_rq_size(cap, &e);
	return e;
}

/* ---- checks -------------------------------------------------------------- */

static struct ibv_pd *pd;
static struct ibv_cq *cq;
static int n_created, n_refused;

static void check_caps(const char *what, const struct ibv_qp_cap *got,
                       const struct ibv_qp_cap *want)
{
	if (got->max_send_wr == want->max_send_wr && got->max_send_sge == want->max_send_sge &&
	    got->max_inline_data == want->max_inline_data &&
	    got->max_recv_wr == want->max_recv_wr && got->max_recv_sge == want->max_recv_sge)
		return;
	T_FAIL("%s: send_wr %u sge %u inline %u recv_wr %u sge %u; rdma-core: send_wr %u sge %u "
	       "inline %u recv_wr %u sge %u",
	       what, got->max_send_wr, got->max_send_sge, got->max_inline_data, got->max_recv_wr,
	       got->max_recv_sge, want->max_send_wr, want->max_send_sge, want->max_inline_data,
	       want->max_recv_wr, want->max_recv_sge);
}

static void check_geometry(struct ibv_qp *qp, const struct expect *e)
{
	struct mlx5dv_qp dv;
	struct mlx5dv_obj obj = {.qp = {.in = qp, .out = &dv}};

	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP));
	CHECK_EQ(dv.sq.wqe_cnt, e->sq_wqe_cnt);
	CHECK_EQ(dv.sq.stride, e->sq_stride);
	CHECK_EQ(dv.rq.wqe_cnt, e->rq_wqe_cnt);
	CHECK_EQ(dv.rq.stride, e->rq_stride);
}

static void check_query(struct ibv_qp *qp, const struct expect *e)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	memset(&ia, 0, sizeof(ia));
	CHECK_OK(ibv_query_qp(qp, &a, IBV_QP_CAP, &ia));
	check_caps("ibv_query_qp init_attr", &ia.cap, &e->queried);
	check_caps("ibv_query_qp attr", &a.cap, &e->queried);
}

/* One ibv_create_qp against the expectation; ex: through ibv_create_qp_ex
 * (without send_ops_flags: the same sizing). */
static void try_caps(const struct ibv_qp_cap *cap, bool ex)
{
	struct expect e = expect_for(cap);
	struct ibv_qp_init_attr_ex ia = {.send_cq = cq,
	                                 .recv_cq = cq,
	                                 .cap = *cap,
	                                 .qp_type = IBV_QPT_RC,
	                                 .comp_mask = IBV_QP_INIT_ATTR_PD,
	                                 .pd = pd};
	struct ibv_qp *qp;

	t_case("%s send_wr %u sge %u inline %u, recv_wr %u sge %u: rdma-core %s",
	       ex ? "ibv_create_qp_ex" : "ibv_create_qp", cap->max_send_wr, cap->max_send_sge,
	       cap->max_inline_data, cap->max_recv_wr, cap->max_recv_sge,
	       e.ok ? "creates it" : "refuses it (EINVAL)");
	errno = 0;
	if (ex) {
		qp = ibv_create_qp_ex(pd->context, &ia);
	} else {
		struct ibv_qp_init_attr pa = {
		    .send_cq = cq, .recv_cq = cq, .cap = *cap, .qp_type = IBV_QPT_RC};

		qp = ibv_create_qp(pd, &pa);
		ia.cap = pa.cap;
	}
	if (!e.ok) {
		if (qp)
			T_FAIL("created (send_wr %u inline %u), rdma-core refuses it",
			       ia.cap.max_send_wr, ia.cap.max_inline_data);
		CHECK_EQ(errno, EINVAL);
		n_refused++;
		return;
	}
	if (!qp)
		T_FAIL("refused: errno %d (%s)", errno, strerror(errno));
	check_caps("ibv_create_qp", &ia.cap, &e.created);
	check_query(qp, &e);
	check_geometry(qp, &e);
	CHECK_OK(ibv_destroy_qp(qp));
	n_created++;
}

/* The largest max_send_wr rdma-core takes with these SGEs and inline
 * bytes, 0 if it takes none: max_send_wqebb blocks of whole WQEs. */
static uint32_t send_wr_max(const struct ibv_qp_cap *cap)
{
	int wqe_size = calc_send_wqe(cap);

	return wqe_size < 0 ? 0 : (uint32_t)(MAX_SEND_WQEBB * SEND_WQE_BB / wqe_size);
}

/* Send side: every SGE count and inline size at the edges of a basic block
 * and of the device's WQE, each with a few depths and the largest one and
 * one above it. */
static void send_side(void)
{
	static const uint32_t sges[] = {0, 1, 2, 4, 30, 51, 52, 53};
	static const uint32_t inls[] = {0,   1,   60,  61,  64,  124, 125,
	                                220, 256, 512, 764, 828, 829, 1024};
	struct ibv_qp_cap cap = {.max_recv_wr = 4, .max_recv_sge = 1};

	for (size_t i = 0; i < sizeof(sges) / sizeof(sges[0]); i++) {
		for (size_t j = 0; j < sizeof(inls) / sizeof(inls[0]); j++) {
			uint32_t top, wrs[6] = {0, 1, 5, 100, 0, 0};

			cap.max_send_sge = sges[i];
			cap.max_inline_data = inls[j];
			top = send_wr_max(&cap);
			wrs[4] = top ? top : 1;
			wrs[5] = top + 1;
			for (size_t k = 0; k < 6; k++) {
				cap.max_send_wr = wrs[k];
				try_caps(&cap, false);
			}
		}
	}
}

/* Receive side: every SGE count around a power of two and the device's
 * WQE, depths around the one-basic-block minimum and the device's limit. */
static void recv_side(void)
{
	static const uint32_t sges[] = {0, 1, 2, 3, 16, 17, 31, 32, 33};
	static const uint32_t wrs[] = {0, 1, 2, 3, 4, 5, 100, 32767, 32768, 32769};
	struct ibv_qp_cap cap = {.max_send_wr = 16, .max_send_sge = 1};

	for (size_t i = 0; i < sizeof(sges) / sizeof(sges[0]); i++) {
		for (size_t j = 0; j < sizeof(wrs) / sizeof(wrs[0]); j++) {
			cap.max_recv_sge = sges[i];
			cap.max_recv_wr = wrs[j];
			try_caps(&cap, false);
		}
	}
}

/* The overflow guard and the extremes, and ibv_create_qp_ex sizing alike. */
static void edges(void)
{
	static const struct ibv_qp_cap caps[] = {
	    {.max_send_wr = 0x7fffffff / MAX_SQ_DESC, .max_send_sge = 1},
	    {.max_send_wr = 0x7fffffff / MAX_SQ_DESC + 1, .max_send_sge = 1},
	    {.max_send_wr = 0xffffffffu, .max_send_sge = 1},
	    {.max_send_wr = 0, .max_send_sge = 500, .max_inline_data = 5000, .max_recv_wr = 1},
	    {.max_send_wr = 0, .max_recv_wr = 0},
	    {.max_send_wr = 1, .max_recv_wr = 0, .max_recv_sge = 100},
	    {.max_send_wr = 1024,
	     .max_send_sge = 1,
	     .max_inline_data = 64,
	     .max_recv_wr = 256,
	     .max_recv_sge = 1},
	    {.max_send_wr = 6553, .max_send_sge = 1, .max_inline_data = 64, .max_recv_wr = 1},
	    {.max_send_wr = 6554, .max_send_sge = 1, .max_inline_data = 64, .max_recv_wr = 1},
	};

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		try_caps(&caps[i], false);
		try_caps(&caps[i], true);
	}
}

/* The device attributes say what the sizing rules assume (mlx5_ib's
 * query_device: max_sge = min(max_wqe_sz_rq / 16, (min(max_wqe_sz_sq, 512) -
 * ctrl - raddr) / 16)). */
static void device_limits(struct ibv_context *ctx)
{
	struct ibv_device_attr a;
	int sq_sge = ((MAX_SQ_DESC < 512 ? MAX_SQ_DESC : 512) - 16 - 16) / DATA_SEG;
	int rq_sge = MAX_RQ_DESC / DATA_SEG;

	t_case("query_device agrees with the limits the sizing uses");
	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_device(ctx, &a));
	CHECK_EQ(a.max_qp_wr, MAX_RECV_WR);
	CHECK_EQ(a.max_sge, sq_sge < rq_sge ? sq_sge : rq_sge);
}

int main(void)
{
	struct ibv_context *ctx = t_open(T_DEVICE);

	pd = CHECK_PTR(ibv_alloc_pd(ctx));
	cq = t_cq(ctx, 16);
	device_limits(ctx);
	send_side();
	recv_side();
	edges();
	printf("%d QPs created and %d refused, as rdma-core would\n", n_created, n_refused);
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return T_EXIT_PASS;
}
