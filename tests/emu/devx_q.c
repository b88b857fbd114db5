// SPDX-License-Identifier: MIT
/* DEVX queues for the tests: see devx_q.h. */
#include "devx_q.h"

#include <sched.h>

#include "prm.h"

/* The umem's layout: CQ ring, the two doorbell records, then the WQ. */
#define OFF_CQ     0u
#define OFF_CQ_DBR 4096u
#define OFF_QP_DBR (4096u + 64u)
#define OFF_WQ     8192u
#define MEM_LEN    DQ_MEM_LEN

uint8_t dq_status(const void *out)
{
	return (uint8_t)prm_get(out, PRM_OUT_STATUS);
}

uint32_t dq_syndrome(const void *out)
{
	return prm_get(out, PRM_OUT_SYND);
}

struct ibv_context *dq_open(void)
{
	struct mlx5dv_context_attr attr = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	if (!list || !list[0])
		T_FAIL("no device");
	ctx = CHECK_PTR(mlx5dv_open_device(list[0], &attr));
	ibv_free_device_list(list);
	return ctx;
}

void dq_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	CHECK_OK(ibv_query_gid(ctx, 1, T_GID_INDEX, gid));
}

static void create_cq(struct dq *q)
{
	uint8_t in[PRM_CREATE_CQ_IN_BYTES] = {0}, out[PRM_HDR_BYTES] = {0};
	uint8_t *cqc = prm_at(in, PRM_CREATE_CQ_IN_CQC_OFF);
	uint32_t n = 1u << DQ_CQE_LOG;

	q->cqes = (struct gnic_mlx5_cqe64 *)(q->mem + OFF_CQ);
	for (uint32_t i = 0; i < n; i++)
		q->cqes[i].op_own = 0xf0; /* INVALID, owner 0: as the user initialises it */
	q->cq_dbr = (__be32 *)(q->mem + OFF_CQ_DBR);
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_CREATE_CQ);
	prm_set(cqc, PRM_CQC_LOG_CQ_SIZE, DQ_CQE_LOG);
	prm_set(cqc, PRM_CQC_UAR_PAGE, q->uar->page_id);
	prm_set(cqc, PRM_CQC_C_EQN, q->eqn);
	prm_set(cqc, PRM_CQC_DBR_UMEM_ID, q->umem->umem_id);
	prm_set64(cqc, PRM_CQC_DBR_ADDR_OFF, OFF_CQ_DBR);
	prm_set(in, PRM_CREATE_CQ_IN_UMEM_ID, q->umem->umem_id);
	prm_set64(in, PRM_CREATE_CQ_IN_UMEM_OFF, OFF_CQ);
	q->cq = mlx5dv_devx_obj_create(q->ctx, in, sizeof(in), out, sizeof(out));
	if (!q->cq)
		T_FAIL("CREATE_CQ: errno %d, status 0x%x, syndrome 0x%x", errno, dq_status(out),
		       dq_syndrome(out));
	q->cqn = prm_get(out, PRM_CREATE_CQ_OUT_CQN);
}

static void create_qp(struct dq *q)
{
	uint8_t in[PRM_QP_IN_BYTES] = {0}, out[PRM_HDR_BYTES] = {0};
	uint8_t *qpc = prm_at(in, PRM_QP_IN_QPC_OFF);

	q->qp_dbr = (__be32 *)(q->mem + OFF_QP_DBR);
	q->rq = q->mem + OFF_WQ;
	q->sq = q->zero_rq ? q->rq : q->rq + (DQ_RQ_STRIDE << DQ_RQ_LOG);
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_CREATE_QP);
	prm_set(qpc, PRM_QPC_ST, PRM_QP_ST_RC);
	prm_set(qpc, PRM_QPC_PD, q->pdn);
	prm_set(qpc, PRM_QPC_LOG_RQ_SIZE, DQ_RQ_LOG);
	prm_set(qpc, PRM_QPC_LOG_RQ_STRIDE, 1); /* 16 << 1 = 32 bytes */
	prm_set(qpc, PRM_QPC_LOG_SQ_SIZE, DQ_SQ_LOG);
	prm_set(qpc, PRM_QPC_RQ_TYPE, q->zero_rq ? PRM_RQ_ZERO : PRM_RQ_REGULAR);
	prm_set(qpc, PRM_QPC_UAR_PAGE, q->uar->page_id);
	prm_set(qpc, PRM_QPC_CQN_SND, q->cqn);
	prm_set(qpc, PRM_QPC_CQN_RCV, q->cqn);
	prm_set(qpc, PRM_QPC_DBR_UMEM_ID, q->umem->umem_id);
	prm_set64(qpc, PRM_QPC_DBR_ADDR_OFF, OFF_QP_DBR);
	prm_set(in, PRM_CREATE_QP_IN_UMEM_ID, q->umem->umem_id);
	prm_set64(in, PRM_CREATE_QP_IN_UMEM_OFF, OFF_WQ);
	q->qp = mlx5dv_devx_obj_create(q->ctx, in, sizeof(in), out, sizeof(out));
	if (!q->qp)
		T_FAIL("CREATE_QP: errno %d, status 0x%x, syndrome 0x%x", errno, dq_status(out),
		       dq_syndrome(out));
	q->qpn = prm_get(out, PRM_CREATE_QP_OUT_QPN);
}

void dq_create(struct dq *q, struct ibv_context *ctx)
{
	dq_create_on(q, ctx, NULL);
}

static void create(struct dq *q, struct ibv_context *ctx, struct mlx5dv_devx_uar *uar, bool zero_rq,
                   uint8_t *mem)
{
	struct mlx5dv_pd dvpd = {0};
	struct mlx5dv_obj obj = {0};

	memset(q, 0, sizeof(*q));
	q->zero_rq = zero_rq;
	q->ctx = ctx;
	q->pd = CHECK_PTR(ibv_alloc_pd(ctx));
	obj.pd.in = q->pd;
	obj.pd.out = &dvpd;
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD));
	q->pdn = dvpd.pdn;
	CHECK_OK(mlx5dv_devx_query_eqn(ctx, 0, &q->eqn));
	q->own_mem = !mem;
	q->mem = mem ? mem : t_alloc(MEM_LEN, 0);
	q->umem = CHECK_PTR(mlx5dv_devx_umem_reg(ctx, q->mem, MEM_LEN, IBV_ACCESS_LOCAL_WRITE));
	q->own_uar = !uar;
	q->uar = uar ? uar : CHECK_PTR(mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC));
	create_cq(q);
	create_qp(q);
	q->data = t_alloc(DQ_DATA_LEN, 0);
	q->mr = t_reg(q->pd, q->data, DQ_DATA_LEN, T_ACCESS_ALL);
}

void dq_create_on(struct dq *q, struct ibv_context *ctx, struct mlx5dv_devx_uar *uar)
{
	create(q, ctx, uar, false, NULL);
}

void dq_create_zero_rq(struct dq *q, struct ibv_context *ctx)
{
	create(q, ctx, NULL, true, NULL);
}

void dq_create_in(struct dq *q, struct ibv_context *ctx, uint8_t *mem)
{
	create(q, ctx, NULL, false, mem);
}

void dq_destroy(struct dq *q)
{
	CHECK_OK(mlx5dv_devx_obj_destroy(q->qp));
	CHECK_OK(mlx5dv_devx_obj_destroy(q->cq));
	if (q->own_uar)
		mlx5dv_devx_free_uar(q->uar);
	CHECK_OK(mlx5dv_devx_umem_dereg(q->umem));
	CHECK_OK(ibv_dereg_mr(q->mr));
	CHECK_OK(ibv_dealloc_pd(q->pd));
	if (q->own_mem)
		free(q->mem);
	free(q->data);
}

static int modify(struct dq *q, uint8_t *in, size_t inlen, uint16_t opcode, uint8_t *out)
{
	uint8_t mine[PRM_HDR_BYTES];

	prm_set(in, PRM_IN_OPCODE, opcode);
	prm_set(in, PRM_QP_IN_QPN, q->qpn);
	return mlx5dv_devx_obj_modify(q->qp, in, inlen, out ? out : mine, PRM_HDR_BYTES);
}

int dq_rst2init(struct dq *q, uint8_t *out)
{
	uint8_t in[PRM_QP_IN_BYTES] = {0};
	uint8_t *qpc = prm_at(in, PRM_QP_IN_QPC_OFF), *ads = prm_at(qpc, PRM_QPC_PATH_OFF);

	prm_set(qpc, PRM_QPC_RRE, 1);
	prm_set(qpc, PRM_QPC_RWE, 1);
	prm_set(qpc, PRM_QPC_RAE, 1);
	prm_set(ads, PRM_ADS_VHCA_PORT, 1);
	return modify(q, in, sizeof(in), PRM_CMD_RST2INIT_QP, out);
}

int dq_init2rtr(struct dq *q, const union ibv_gid *rgid, uint32_t remote_qpn, uint8_t *out)
{
	uint8_t in[PRM_QP_IN_BYTES] = {0};
	uint8_t *qpc = prm_at(in, PRM_QP_IN_QPC_OFF), *ads = prm_at(qpc, PRM_QPC_PATH_OFF);

	prm_set(qpc, PRM_QPC_MTU, IBV_MTU_4096);
	prm_set(qpc, PRM_QPC_REMOTE_QPN, remote_qpn);
	prm_set(qpc, PRM_QPC_NEXT_RCV_PSN, 0);
	prm_set(qpc, PRM_QPC_LOG_RRA_MAX, 2);
	prm_set(qpc, PRM_QPC_MIN_RNR_NAK, 12);
	prm_set(ads, PRM_ADS_GRH, 1);
	memcpy(prm_at(ads, PRM_ADS_RGID_OFF), rgid->raw, 16);
	prm_set(ads, PRM_ADS_SRC_ADDR_IDX, T_GID_INDEX);
	prm_set(ads, PRM_ADS_HOP_LIMIT, 64);
	prm_set(ads, PRM_ADS_VHCA_PORT, 1);
	prm_set(ads, PRM_ADS_RMAC_47_32, 0x0247);
	return modify(q, in, sizeof(in), PRM_CMD_INIT2RTR_QP, out);
}

int dq_init2rtr_ib(struct dq *q, uint16_t dlid, uint32_t remote_qpn, uint8_t *out)
{
	uint8_t in[PRM_QP_IN_BYTES] = {0};
	uint8_t *qpc = prm_at(in, PRM_QP_IN_QPC_OFF), *ads = prm_at(qpc, PRM_QPC_PATH_OFF);

	prm_set(qpc, PRM_QPC_MTU, IBV_MTU_4096);
	prm_set(qpc, PRM_QPC_REMOTE_QPN, remote_qpn);
	prm_set(qpc, PRM_QPC_LOG_RRA_MAX, 2);
	prm_set(qpc, PRM_QPC_MIN_RNR_NAK, 12);
	prm_set(ads, PRM_ADS_RLID, dlid);
	prm_set(ads, PRM_ADS_VHCA_PORT, 1);
	return modify(q, in, sizeof(in), PRM_CMD_INIT2RTR_QP, out);
}

int dq_rtr2rts(struct dq *q, uint8_t *out)
{
	uint8_t in[PRM_QP_IN_BYTES] = {0};
	uint8_t *qpc = prm_at(in, PRM_QP_IN_QPC_OFF), *ads = prm_at(qpc, PRM_QPC_PATH_OFF);

	prm_set(qpc, PRM_QPC_NEXT_SEND_PSN, 0);
	prm_set(qpc, PRM_QPC_LOG_SRA_MAX, 2);
	prm_set(qpc, PRM_QPC_RETRY_COUNT, 7);
	prm_set(qpc, PRM_QPC_RNR_RETRY, 7);
	prm_set(ads, PRM_ADS_ACK_TIMEOUT, 14);
	return modify(q, in, sizeof(in), PRM_CMD_RTR2RTS_QP, out);
}

int dq_to_state(struct dq *q, uint16_t opcode, uint8_t *out)
{
	uint8_t in[PRM_QP_STATE_IN_BYTES] = {0};

	return modify(q, in, sizeof(in), opcode, out);
}

uint32_t dq_query_state(struct dq *q, uint8_t *qpc_out)
{
	uint8_t in[PRM_HDR_BYTES] = {0}, out[PRM_QUERY_QP_OUT_BYTES];

	prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_QP);
	prm_set(in, PRM_QP_IN_QPN, q->qpn);
	CHECK_OK(mlx5dv_devx_obj_query(q->qp, in, sizeof(in), out, sizeof(out)));
	CHECK_EQ(dq_status(out), 0);
	if (qpc_out)
		memcpy(qpc_out, prm_at(out, PRM_QUERY_QP_OUT_QPC_OFF), PRM_QPC_BYTES);
	return prm_get(prm_at(out, PRM_QUERY_QP_OUT_QPC_OFF), PRM_QPC_STATE);
}

void dq_connect(struct dq *q, const union ibv_gid *rgid, uint32_t remote_qpn)
{
	CHECK_OK(dq_rst2init(q, NULL));
	CHECK_EQ(dq_query_state(q, NULL), PRM_QPS_INIT);
	CHECK_OK(dq_init2rtr(q, rgid, remote_qpn, NULL));
	CHECK_EQ(dq_query_state(q, NULL), PRM_QPS_RTR);
	CHECK_OK(dq_rtr2rts(q, NULL));
	CHECK_EQ(dq_query_state(q, NULL), PRM_QPS_RTS);
}

/* The GPU-library doorbell: record first, then the register with the
 * WQE's first 8 bytes, alternating halves; release stores, so the WQE is
 * written before the engine can see either. */
static void ring(struct dq *q, const struct gnic_mlx5_ctrl_seg *ctrl)
{
	uint64_t v;

	__atomic_store_n(&q->qp_dbr[GNIC_MLX5_SND_DBR], gnic_be32(q->pi), __ATOMIC_RELEASE);
	memcpy(&v, ctrl, sizeof(v));
	__atomic_store_n((uint64_t *)((uint8_t *)q->uar->reg_addr + q->bf_off), v,
	                 __ATOMIC_RELEASE);
	q->bf_off ^= GNIC_MLX5_BF_SIZE;
}

void dq_post(struct dq *q, uint8_t opcode, uint64_t laddr, uint32_t len, uint64_t raddr,
             uint32_t rkey)
{
	uint8_t *w = q->sq + (size_t)(q->pi & ((1u << DQ_SQ_LOG) - 1)) * GNIC_MLX5_SEND_WQE_BB;
	struct gnic_mlx5_ctrl_seg *ctrl = (void *)w;
	struct gnic_mlx5_data_seg *d;
	bool rdma = opcode == GNIC_MLX5_OPCODE_RDMA_WRITE || opcode == GNIC_MLX5_OPCODE_RDMA_READ;
	uint32_t ds = rdma ? 3 : 2;

	memset(w, 0, GNIC_MLX5_SEND_WQE_BB);
	ctrl->opmod_idx_opcode = gnic_be32(gnic_mlx5_ctrl_word0(0, q->pi, opcode));
	ctrl->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(q->qpn, ds));
	ctrl->fm_ce_se = GNIC_MLX5_CTRL_CQ_UPDATE;
	if (rdma) {
		struct gnic_mlx5_raddr_seg *r = (void *)(w + 16);

		r->raddr = gnic_be64(raddr);
		r->rkey = gnic_be32(rkey);
	}
	d = (void *)(w + (rdma ? 32 : 16));
	d->byte_count = gnic_be32(len);
	d->lkey = gnic_be32(q->mr->lkey);
	d->addr = gnic_be64(laddr);
	q->pi++;
	ring(q, ctrl);
}

void dq_post_recv(struct dq *q, uint64_t addr, uint32_t len)
{
	struct gnic_mlx5_data_seg *d =
	    (void *)(q->rq + (size_t)(q->rq_head & ((1u << DQ_RQ_LOG) - 1)) * DQ_RQ_STRIDE);

	d[0].byte_count = gnic_be32(len);
	d[0].lkey = gnic_be32(q->mr->lkey);
	d[0].addr = gnic_be64(addr);
	d[1].byte_count = 0;
	d[1].lkey = gnic_be32(GNIC_MLX5_INVALID_LKEY);
	d[1].addr = 0;
	q->rq_head++;
	__atomic_store_n(&q->qp_dbr[GNIC_MLX5_RCV_DBR], gnic_be32(q->rq_head & 0xffff),
	                 __ATOMIC_RELEASE);
}

struct gnic_mlx5_cqe64 dq_poll(struct dq *q, unsigned ms, const char *what)
{
	uint32_t n = 1u << DQ_CQE_LOG;
	struct gnic_mlx5_cqe64 *cqe = &q->cqes[q->ci & (n - 1)], got;
	uint64_t end = t_now_ms() + ms;

	while (!gnic_mlx5_cqe_sw_owned(__atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE), q->ci, n)) {
		if (t_now_ms() > end)
			T_FAIL("%s: no CQE %u on CQ 0x%x within %u ms", what, q->ci, q->cqn, ms);
		sched_yield();
	}
	got = *cqe;
	q->ci++;
	__atomic_store_n(&q->cq_dbr[0], gnic_be32(q->ci & 0xffffff), __ATOMIC_RELEASE);
	return got;
}
