/* SPDX-License-Identifier: MIT */
/*
 * GNIC_QUEUE_GPU and GNIC_QUEUE_HOST_DEVX: the QP and its two CQs made with
 * PRM commands through DEVX (mlx5dv_devx_*), the way GPU networking stacks
 * make theirs, so that the queues can live in memory the provider did not
 * allocate: GPU memory (cuMemAlloc) or host memory of ours. The device view
 * (qp_dev.c) is filled from the same struct mlx5dv_qp / mlx5dv_cq fields as
 * for a verbs QP; only where they point differs.
 *
 * One allocation, registered as one umem, holds everything the NIC reads
 * and writes, each part on pages of its own:
 *   WQ       the RQ (rq_cnt WQEs of 16 B: one data segment) then the SQ
 *            (sq_cnt basic blocks, sized as rdma-core sizes a verbs SQ)
 *   send CQ  64-B CQEs, initialised INVALID with owner 0
 *   recv CQ  the same (2 CQEs for a QP without RQ)
 *   records  the QP's doorbell record, then each CQ's, 64 B apart
 * GPU memory is registered through dma-buf first, nvidia-peermem (the GPU
 * address as umem) as the fallback; gnic-emu takes the GPU address itself.
 * The doorbell register is a UAR of the QP's own (BlueFlame, else
 * non-cached), mapped for device code by qp_dev.c like a verbs QP's.
 *
 * Transitions are the verbs ones qp_conn.c asks for, as RST2INIT_QP,
 * INIT2RTR_QP, RTR2RTS_QP, 2RST_QP and 2ERR_QP commands (prm.h's fields).
 * On RoCE the peer's MAC and the UDP source port come from an address
 * handle the provider resolves (the kernel does this for a verbs QP).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gnic_int.h"
#include "prm.h"

#define RQ_STRIDE      16u        /* one data segment (max_recv_sge 1) */
#define GPU_ALIGN      (1u << 16) /* the GPU's page: dma-buf ranges are whole pages */
#define LOG_MSG_MAX    30
#define ATOMIC_UP_TO_8 3 /* qpc.atomic_mode: 8-byte atomics, as the kernel sets for RC */
#define PM_MIGRATED    3

struct gnic_devx_qp {
	void *host;    /* HOST_DEVX: the memory */
	uint64_t dptr; /* GPU: the allocation; base is dptr rounded up to GPU_ALIGN */
	uint64_t base; /* where the layout starts (host or device address) */
	size_t len;
	size_t scq_off, rcq_off, dbr_off;
	uint32_t sq_cnt, rq_cnt, scq_cnt, rcq_cnt;
	struct mlx5dv_devx_umem *umem;
	struct mlx5dv_devx_uar *uar;
	bool bf_uar;
	struct mlx5dv_devx_obj *scq, *rcq, *qp;
	uint32_t scqn, rcqn, eqn;
};

static size_t page_up(size_t v, size_t page)
{
	return (v + page - 1) & ~(page - 1);
}

static uint32_t log2_of(uint32_t v) /* v a power of two */
{
	uint32_t l = 0;

	while ((1u << l) < v)
		l++;
	return l;
}

static uint32_t log2_floor(uint32_t v)
{
	uint32_t l = 0;

	while (v > 1) {
		v >>= 1;
		l++;
	}
	return l;
}

/* The command's PRM status and syndrome, or the errno of a refused call. */
static gnic_status_t cmd_error(const char *what, int err, const uint8_t *out)
{
	uint8_t status = (uint8_t)prm_get(out, PRM_OUT_STATUS);

	if (status)
		return gnic_error(GNIC_ERR_SYSTEM, "%s: status %#x, syndrome %#x", what, status,
		                  prm_get(out, PRM_OUT_SYND));
	return gnic_error(GNIC_ERR_SYSTEM, "%s: %s", what, strerror(err ? err : EINVAL));
}

/* ---- geometry and memory ------------------------------------------------- */

static void layout(struct gnic_qp *qp, struct gnic_devx_qp *x)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t rq = qp->attr.rq_depth ? gnic_pow2_ceil(qp->attr.rq_depth) : 0;

	x->sq_cnt = gnic_qp_scq_depth(&qp->attr);
	/* like a verbs RQ: at least one basic block of WQEs */
	x->rq_cnt =
	    rq && rq < GNIC_MLX5_SEND_WQE_BB / RQ_STRIDE ? GNIC_MLX5_SEND_WQE_BB / RQ_STRIDE : rq;
	x->scq_cnt = x->sq_cnt;
	x->rcq_cnt = x->rq_cnt ? x->rq_cnt : 2;
	x->scq_off = page_up(
	    (size_t)x->rq_cnt * RQ_STRIDE + (size_t)x->sq_cnt * GNIC_MLX5_SEND_WQE_BB, page);
	x->rcq_off =
	    x->scq_off + page_up((size_t)x->scq_cnt * sizeof(struct gnic_mlx5_cqe64), page);
	x->dbr_off =
	    x->rcq_off + page_up((size_t)x->rcq_cnt * sizeof(struct gnic_mlx5_cqe64), page);
	x->len = x->dbr_off + page;
}

/* What the memory holds before the NIC sees it: zeroes, and every CQE
 * INVALID with owner 0 (as rdma-core initialises a CQ). */
static void init_image(const struct gnic_devx_qp *x, uint8_t *img)
{
	struct gnic_mlx5_cqe64 *cqe;

	memset(img, 0, x->len);
	cqe = (struct gnic_mlx5_cqe64 *)(img + x->scq_off);
	for (uint32_t i = 0; i < x->scq_cnt; i++)
		cqe[i].op_own = GNIC_MLX5_CQE_INVALID << 4;
	cqe = (struct gnic_mlx5_cqe64 *)(img + x->rcq_off);
	for (uint32_t i = 0; i < x->rcq_cnt; i++)
		cqe[i].op_own = GNIC_MLX5_CQE_INVALID << 4;
}

static gnic_status_t alloc_host(struct gnic_devx_qp *x)
{
	if (posix_memalign(&x->host, (size_t)sysconf(_SC_PAGESIZE), x->len))
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	init_image(x, x->host);
	x->base = (uintptr_t)x->host;
	return GNIC_OK;
}

static gnic_status_t alloc_gpu_locked(struct gnic_devx_qp *x)
{
	uint8_t *img;
	gnic_status_t st;

	x->len = page_up(x->len, GPU_ALIGN);
	st = gnic_cuda_alloc(x->len + GPU_ALIGN, &x->dptr);
	if (st)
		return st;
	x->base = (x->dptr + GPU_ALIGN - 1) & ~(uint64_t)(GPU_ALIGN - 1);
	img = malloc(x->len);
	if (!img)
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	init_image(x, img);
	st = gnic_cuda_htod(x->base, img, x->len);
	free(img);
	return st;
}

/* dma-buf first (rdma-core with umem_reg_ex), then the GPU address itself
 * (nvidia-peermem on hardware; gnic-emu recognises it). */
static struct mlx5dv_devx_umem *reg_gpu_locked(struct gnic_qp *qp, struct gnic_devx_qp *x)
{
	const struct gnic_verbs *v = qp->ctx->v;
	struct mlx5dv_devx_umem_in in = {
	    .addr = NULL, /* with a dma-buf: the offset in it */
	    .size = x->len,
	    .access = IBV_ACCESS_LOCAL_WRITE,
	    .pgsz_bitmap = ~(uint64_t)(GNIC_PAGE - 1),
	    .comp_mask = MLX5DV_UMEM_MASK_DMABUF,
	};
	struct mlx5dv_devx_umem *u = NULL;
	char dmabuf_err[256] = "";

	if (v->provider == GNIC_PROVIDER_VERBS && !v->devx_umem_reg_ex)
		snprintf(dmabuf_err, sizeof(dmabuf_err),
		         "no dma-buf umem (umem_reg_ex) in %.200s; ", v->lib_path);
	if (v->provider == GNIC_PROVIDER_VERBS && v->devx_umem_reg_ex) {
		in.dmabuf_fd = gnic_cuda_dmabuf_fd(x->base, x->len);
		if (in.dmabuf_fd >= 0) {
			errno = 0;
			u = v->devx_umem_reg_ex(qp->ctx->ibctx, &in);
			snprintf(dmabuf_err, sizeof(dmabuf_err), "devx_umem_reg_ex(dma-buf): %s; ",
			         strerror(errno ? errno : EINVAL));
			close(in.dmabuf_fd); /* the umem holds its own reference */
		} else {
			snprintf(dmabuf_err, sizeof(dmabuf_err), "%.200s; ", gnic_last_error());
		}
		if (u)
			return u;
		gnic_info("qp: GPU queues through dma-buf: %s; trying nvidia-peermem", dmabuf_err);
	}
	errno = 0;
	u = v->devx_umem_reg(qp->ctx->ibctx, (void *)(uintptr_t)x->base, x->len,
	                     IBV_ACCESS_LOCAL_WRITE);
	if (!u)
		gnic_error(GNIC_ERR_NOT_SUPPORTED,
		           "qp: %s takes no GPU memory as DEVX umem (%sdevx_umem_reg of GPU "
		           "address %#llx: %s)",
		           qp->ctx->device, dmabuf_err, (unsigned long long)x->base,
		           strerror(errno ? errno : EINVAL));
	return u;
}

static gnic_status_t alloc_gpu(struct gnic_qp *qp, struct gnic_devx_qp *x)
{
	gnic_status_t st;
	void *prev;

	st = gnic_cuda_enter(&qp->ctx->gpu, &prev);
	if (st)
		return st;
	st = alloc_gpu_locked(x);
	if (!st) {
		x->umem = reg_gpu_locked(qp, x);
		if (!x->umem)
			st = GNIC_ERR_NOT_SUPPORTED; /* the text is set */
	}
	gnic_cuda_leave(prev);
	return st;
}

static gnic_status_t alloc_mem(struct gnic_qp *qp, struct gnic_devx_qp *x)
{
	gnic_status_t st;

	if (qp->queue == GNIC_QUEUE_GPU)
		return alloc_gpu(qp, x);
	st = alloc_host(x);
	if (st)
		return st;
	errno = 0;
	x->umem =
	    qp->ctx->v->devx_umem_reg(qp->ctx->ibctx, x->host, x->len, IBV_ACCESS_LOCAL_WRITE);
	if (!x->umem)
		return gnic_error(GNIC_ERR_SYSTEM,
		                  "qp: devx_umem_reg(%zu bytes of host memory): %s", x->len,
		                  strerror(errno ? errno : EINVAL));
	return GNIC_OK;
}

/* ---- objects --------------------------------------------------------------- */

static gnic_status_t alloc_uar(struct gnic_qp *qp, struct gnic_devx_qp *x)
{
	const struct gnic_verbs *v = qp->ctx->v;

	x->bf_uar = true;
	x->uar = v->devx_alloc_uar(qp->ctx->ibctx, MLX5DV_UAR_ALLOC_TYPE_BF);
	if (!x->uar) {
		x->bf_uar = false;
		errno = 0;
		x->uar = v->devx_alloc_uar(qp->ctx->ibctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	}
	if (!x->uar)
		return gnic_error(GNIC_ERR_SYSTEM, "qp: devx_alloc_uar: %s",
		                  strerror(errno ? errno : EINVAL));
	if (v->devx_query_eqn(qp->ctx->ibctx, 0, &x->eqn))
		return gnic_error(GNIC_ERR_SYSTEM, "qp: devx_query_eqn(0) failed");
	return GNIC_OK;
}

static gnic_status_t create_cq(struct gnic_qp *qp, struct gnic_devx_qp *x, size_t off, uint32_t cnt,
                               size_t dbr, struct mlx5dv_devx_obj **obj, uint32_t *cqn)
{
	uint8_t in[PRM_CREATE_CQ_IN_BYTES] = {0}, out[PRM_HDR_BYTES] = {0};
	uint8_t *cqc = prm_at(in, PRM_CREATE_CQ_IN_CQC_OFF);

	prm_set(in, PRM_IN_OPCODE, PRM_CMD_CREATE_CQ);
	prm_set(cqc, PRM_CQC_LOG_CQ_SIZE, log2_of(cnt));
	prm_set(cqc, PRM_CQC_UAR_PAGE, x->uar->page_id);
	prm_set(cqc, PRM_CQC_C_EQN, x->eqn);
	prm_set(cqc, PRM_CQC_DBR_UMEM_ID, x->umem->umem_id);
	prm_set64(cqc, PRM_CQC_DBR_ADDR_OFF, dbr);
	prm_set(in, PRM_CREATE_CQ_IN_UMEM_ID, x->umem->umem_id);
	prm_set64(in, PRM_CREATE_CQ_IN_UMEM_OFF, off);
	errno = 0;
	*obj = qp->ctx->v->devx_obj_create(qp->ctx->ibctx, in, sizeof(in), out, sizeof(out));
	if (!*obj)
		return cmd_error("qp: CREATE_CQ", errno, out);
	*cqn = prm_get(out, PRM_CREATE_CQ_OUT_CQN);
	return GNIC_OK;
}

static gnic_status_t create_qp(struct gnic_qp *qp, struct gnic_devx_qp *x)
{
	uint8_t in[PRM_QP_IN_BYTES] = {0}, out[PRM_HDR_BYTES] = {0};
	uint8_t *qpc = prm_at(in, PRM_QP_IN_QPC_OFF);

	prm_set(in, PRM_IN_OPCODE, PRM_CMD_CREATE_QP);
	prm_set(qpc, PRM_QPC_ST, PRM_QP_ST_RC);
	prm_set(qpc, PRM_QPC_PM_STATE, PM_MIGRATED);
	prm_set(qpc, PRM_QPC_PD, qp->ctx->pdn);
	prm_set(qpc, PRM_QPC_UAR_PAGE, x->uar->page_id);
	prm_set(qpc, PRM_QPC_LOG_SQ_SIZE, log2_of(x->sq_cnt));
	if (x->rq_cnt) {
		prm_set(qpc, PRM_QPC_RQ_TYPE, PRM_RQ_REGULAR);
		prm_set(qpc, PRM_QPC_LOG_RQ_SIZE, log2_of(x->rq_cnt));
		prm_set(qpc, PRM_QPC_LOG_RQ_STRIDE, log2_of(RQ_STRIDE / 16));
	} else {
		prm_set(qpc, PRM_QPC_RQ_TYPE, PRM_RQ_ZERO);
	}
	/* no scatter-to-CQE (cs_req/cs_res 0), as qp_verbs.c asks rdma-core */
	prm_set(qpc, PRM_QPC_CQN_SND, x->scqn);
	prm_set(qpc, PRM_QPC_CQN_RCV, x->rcqn);
	prm_set(qpc, PRM_QPC_DBR_UMEM_ID, x->umem->umem_id);
	prm_set64(qpc, PRM_QPC_DBR_ADDR_OFF, x->dbr_off);
	prm_set(in, PRM_CREATE_QP_IN_UMEM_ID, x->umem->umem_id);
	prm_set64(in, PRM_CREATE_QP_IN_UMEM_OFF, 0);
	errno = 0;
	x->qp = qp->ctx->v->devx_obj_create(qp->ctx->ibctx, in, sizeof(in), out, sizeof(out));
	if (!x->qp)
		return cmd_error("qp: CREATE_QP", errno, out);
	qp->qpn = prm_get(out, PRM_CREATE_QP_OUT_QPN);
	return GNIC_OK;
}

static void *at(const struct gnic_devx_qp *x, size_t off)
{
	return (void *)(uintptr_t)(x->base + off);
}

/* The same view mlx5dv_init_obj gives of a verbs QP and its CQs. */
static void fill_dv(struct gnic_qp *qp, const struct gnic_devx_qp *x)
{
	memset(&qp->dv, 0, sizeof(qp->dv));
	qp->dv.dbrec = at(x, x->dbr_off);
	qp->dv.rq.buf = at(x, 0);
	qp->dv.rq.wqe_cnt = x->rq_cnt;
	qp->dv.rq.stride = RQ_STRIDE;
	qp->dv.sq.buf = at(x, (size_t)x->rq_cnt * RQ_STRIDE);
	qp->dv.sq.wqe_cnt = x->sq_cnt;
	qp->dv.sq.stride = GNIC_MLX5_SEND_WQE_BB;
	qp->dv.bf.reg = x->uar->reg_addr;
	qp->dv.bf.size = x->bf_uar ? GNIC_MLX5_BF_SIZE : 0;
	memset(&qp->dv_scq, 0, sizeof(qp->dv_scq));
	qp->dv_scq.buf = at(x, x->scq_off);
	qp->dv_scq.dbrec = at(x, x->dbr_off + 64);
	qp->dv_scq.cqe_cnt = x->scq_cnt;
	qp->dv_scq.cqe_size = sizeof(struct gnic_mlx5_cqe64);
	qp->dv_scq.cqn = x->scqn;
	memset(&qp->dv_rcq, 0, sizeof(qp->dv_rcq));
	qp->dv_rcq.buf = at(x, x->rcq_off);
	qp->dv_rcq.dbrec = at(x, x->dbr_off + 128);
	qp->dv_rcq.cqe_cnt = x->rcq_cnt;
	qp->dv_rcq.cqe_size = sizeof(struct gnic_mlx5_cqe64);
	qp->dv_rcq.cqn = x->rcqn;
}

static gnic_status_t devx_create(struct gnic_qp *qp)
{
	struct gnic_devx_qp *x = calloc(1, sizeof(*x));
	gnic_status_t st;

	if (!x)
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	qp->dx = x;
	layout(qp, x);
	st = alloc_mem(qp, x);
	if (!st)
		st = alloc_uar(qp, x);
	if (!st)
		st = create_cq(qp, x, x->scq_off, x->scq_cnt, x->dbr_off + 64, &x->scq, &x->scqn);
	if (!st)
		st = create_cq(qp, x, x->rcq_off, x->rcq_cnt, x->dbr_off + 128, &x->rcq, &x->rcqn);
	if (!st)
		st = create_qp(qp, x);
	if (st)
		return st;
	fill_dv(qp, x);
	gnic_dbg("qp %#x: DEVX, queues in %s memory (%zu bytes), CQs %#x/%#x, UAR %u (%s)", qp->qpn,
	         qp->queue == GNIC_QUEUE_GPU ? "GPU" : "host", x->len, x->scqn, x->rcqn,
	         x->uar->page_id, x->bf_uar ? "BlueFlame" : "non-cached");
	return GNIC_OK;
}

static void destroy_obj(struct gnic_qp *qp, struct mlx5dv_devx_obj *obj, const char *what)
{
	int r;

	if (!obj)
		return;
	r = qp->ctx->v->devx_obj_destroy(obj);
	if (r)
		gnic_warn("qp %#x: destroying its DEVX %s: %s", qp->qpn, what, strerror(r));
}

static void free_gpu(struct gnic_qp *qp, struct gnic_devx_qp *x)
{
	void *prev;

	if (!x->dptr || gnic_cuda_enter(&qp->ctx->gpu, &prev))
		return;
	gnic_cuda_free(x->dptr);
	gnic_cuda_leave(prev);
}

static void devx_destroy(struct gnic_qp *qp)
{
	struct gnic_devx_qp *x = qp->dx;

	if (!x)
		return;
	destroy_obj(qp, x->qp, "QP"); /* before the CQs it uses */
	destroy_obj(qp, x->rcq, "receive CQ");
	destroy_obj(qp, x->scq, "send CQ");
	if (x->uar)
		qp->ctx->v->devx_free_uar(x->uar);
	if (x->umem && qp->ctx->v->devx_umem_dereg(x->umem))
		gnic_warn("qp %#x: devx_umem_dereg failed", qp->qpn);
	free_gpu(qp, x);
	free(x->host);
	free(x);
	qp->dx = NULL;
}

/* ---- transitions ------------------------------------------------------------ */

/* On RoCE the NIC needs the peer's MAC in the address path, and RoCE v2 a
 * UDP source port: the provider resolves both for an address handle. */
static gnic_status_t roce_route(struct gnic_qp *qp, struct ibv_ah_attr *ah, uint8_t *ads)
{
	const struct gnic_verbs *v = qp->ctx->v;
	struct mlx5dv_ah dvah = {0};
	struct mlx5dv_obj obj = {0};
	struct ibv_ah *ibah;
	int r;

	errno = 0;
	ibah = v->create_ah(qp->ctx->pd, ah);
	if (!ibah)
		return gnic_error(GNIC_ERR_SYSTEM, "create_ah (to resolve the peer's MAC): %s",
		                  strerror(errno ? errno : EINVAL));
	obj.ah.in = ibah;
	obj.ah.out = &dvah;
	r = v->mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH);
	if (!r) {
		const uint8_t *mac = dvah.av->rmac;

		prm_set(ads, PRM_ADS_RMAC_47_32, (uint32_t)mac[0] << 8 | mac[1]);
		prm_set(ads, PRM_ADS_RMAC_31_0,
		        (uint32_t)mac[2] << 24 | (uint32_t)mac[3] << 16 | (uint32_t)mac[4] << 8 |
		            mac[5]);
		/* rdma-core keeps a RoCE v2 AV's UDP source port in rlid */
		prm_set(ads, PRM_ADS_UDP_SPORT, gnic_be16(dvah.av->rlid));
	}
	v->destroy_ah(ibah);
	return r ? gnic_error(GNIC_ERR_SYSTEM, "mlx5dv_init_obj(AH): %s", strerror(r)) : GNIC_OK;
}

static void set_access(uint8_t *qpc, unsigned flags)
{
	prm_set(qpc, PRM_QPC_RRE, !!(flags & IBV_ACCESS_REMOTE_READ));
	prm_set(qpc, PRM_QPC_RWE, !!(flags & IBV_ACCESS_REMOTE_WRITE));
	prm_set(qpc, PRM_QPC_RAE, !!(flags & IBV_ACCESS_REMOTE_ATOMIC));
	if (flags & IBV_ACCESS_REMOTE_ATOMIC)
		prm_set(qpc, PRM_QPC_ATOMIC_MODE, ATOMIC_UP_TO_8);
}

static void set_init(uint8_t *qpc, const struct ibv_qp_attr *a)
{
	uint8_t *ads = prm_at(qpc, PRM_QPC_PATH_OFF);

	set_access(qpc, a->qp_access_flags);
	prm_set(qpc, PRM_QPC_PM_STATE, PM_MIGRATED);
	prm_set(ads, PRM_ADS_PKEY_INDEX, a->pkey_index);
	prm_set(ads, PRM_ADS_VHCA_PORT, a->port_num);
}

static gnic_status_t set_rtr(struct gnic_qp *qp, uint8_t *qpc, struct ibv_qp_attr *a)
{
	uint8_t *ads = prm_at(qpc, PRM_QPC_PATH_OFF);
	struct ibv_ah_attr *ah = &a->ah_attr;

	prm_set(qpc, PRM_QPC_MTU, a->path_mtu); /* the verbs encoding is the PRM's */
	prm_set(qpc, PRM_QPC_LOG_MSG_MAX, LOG_MSG_MAX);
	prm_set(qpc, PRM_QPC_REMOTE_QPN, a->dest_qp_num);
	prm_set(qpc, PRM_QPC_NEXT_RCV_PSN, a->rq_psn);
	prm_set(qpc, PRM_QPC_LOG_RRA_MAX, log2_floor(a->max_dest_rd_atomic));
	prm_set(qpc, PRM_QPC_MIN_RNR_NAK, a->min_rnr_timer);
	prm_set(ads, PRM_ADS_VHCA_PORT, ah->port_num);
	prm_set(ads, PRM_ADS_SL, ah->sl);
	prm_set(ads, PRM_ADS_RLID, ah->dlid);
	if (ah->is_global) {
		prm_set(ads, PRM_ADS_GRH, 1);
		memcpy(prm_at(ads, PRM_ADS_RGID_OFF), ah->grh.dgid.raw, 16);
		prm_set(ads, PRM_ADS_SRC_ADDR_IDX, ah->grh.sgid_index);
		prm_set(ads, PRM_ADS_HOP_LIMIT, ah->grh.hop_limit);
		prm_set(ads, PRM_ADS_TCLASS, ah->grh.traffic_class);
		prm_set(ads, PRM_ADS_FLOW_LABEL, ah->grh.flow_label);
	}
	if (qp->ctx->link_layer == IBV_LINK_LAYER_ETHERNET)
		return roce_route(qp, ah, ads);
	return GNIC_OK;
}

static void set_rts(uint8_t *qpc, const struct ibv_qp_attr *a)
{
	uint8_t *ads = prm_at(qpc, PRM_QPC_PATH_OFF);

	prm_set(qpc, PRM_QPC_NEXT_SEND_PSN, a->sq_psn);
	prm_set(qpc, PRM_QPC_LOG_SRA_MAX, log2_floor(a->max_rd_atomic));
	prm_set(qpc, PRM_QPC_RETRY_COUNT, a->retry_cnt);
	prm_set(qpc, PRM_QPC_RNR_RETRY, a->rnr_retry);
	prm_set(ads, PRM_ADS_ACK_TIMEOUT, a->timeout);
}

/* The command of a verbs transition (qp_conn.c asks for these only). */
static uint16_t opcode_of(enum ibv_qp_state to)
{
	switch (to) {
	case IBV_QPS_INIT:
		return PRM_CMD_RST2INIT_QP;
	case IBV_QPS_RTR:
		return PRM_CMD_INIT2RTR_QP;
	case IBV_QPS_RTS:
		return PRM_CMD_RTR2RTS_QP;
	case IBV_QPS_RESET:
		return PRM_CMD_2RST_QP;
	case IBV_QPS_ERR:
		return PRM_CMD_2ERR_QP;
	default:
		return 0;
	}
}

/* RESET starts the queues at index 0 again: the doorbell record too, which
 * is ours to clear (rdma-core clears a verbs QP's). */
static gnic_status_t clear_dbrec(struct gnic_qp *qp)
{
	uint32_t zero[2] = {0};
	gnic_status_t st;
	void *prev;

	if (qp->queue != GNIC_QUEUE_GPU) {
		__atomic_store_n(&qp->dv.dbrec[GNIC_MLX5_RCV_DBR], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&qp->dv.dbrec[GNIC_MLX5_SND_DBR], 0, __ATOMIC_RELEASE);
		return GNIC_OK;
	}
	st = gnic_cuda_enter(&qp->ctx->gpu, &prev);
	if (st)
		return st;
	st = gnic_cuda_htod((uintptr_t)qp->dv.dbrec, zero, sizeof(zero));
	gnic_cuda_leave(prev);
	return st;
}

static gnic_status_t devx_modify(struct gnic_qp *qp, struct ibv_qp_attr *a, int mask)
{
	uint8_t in[PRM_QP_IN_BYTES] = {0}, out[PRM_HDR_BYTES] = {0};
	uint8_t *qpc = prm_at(in, PRM_QP_IN_QPC_OFF);
	uint16_t op = opcode_of(a->qp_state);
	size_t inlen = sizeof(in);
	gnic_status_t st = GNIC_OK;
	char what[48];
	int r;

	if (!(mask & IBV_QP_STATE) || !op)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "DEVX QPs take RESET, INIT, RTR, RTS, ERR");
	prm_set(in, PRM_IN_OPCODE, op);
	prm_set(in, PRM_QP_IN_QPN, qp->qpn);
	if (op == PRM_CMD_RST2INIT_QP)
		set_init(qpc, a);
	else if (op == PRM_CMD_INIT2RTR_QP)
		st = set_rtr(qp, qpc, a);
	else if (op == PRM_CMD_RTR2RTS_QP)
		set_rts(qpc, a);
	else
		inlen = PRM_QP_STATE_IN_BYTES;
	if (st)
		return st;
	r = qp->ctx->v->devx_obj_modify(qp->dx->qp, in, inlen, out, sizeof(out));
	if (!r)
		return op == PRM_CMD_2RST_QP ? clear_dbrec(qp) : GNIC_OK;
	snprintf(what, sizeof(what), "modify command %#x", op);
	return cmd_error(what, r, out);
}

const struct gnic_qp_ops gnic_qp_devx_ops = {
    .name = "DEVX",
    .create = devx_create,
    .destroy = devx_destroy,
    .modify = devx_modify,
};
