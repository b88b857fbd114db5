/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs (RC, UC, UD): creation with mlx5 queue sizing, the IB state
 * machine, and teardown. What a QP does in the engine is its type's table
 * (qp_ops.h: rc.c, uc.c, ud.c).
 *
 * A QP's hardware view is what mlx5dv_init_obj hands out: one page-aligned
 * buffer with the RQ at offset 0 and the SQ on the next page boundary, a
 * doorbell record page and a UAR page whose doorbell register is at +0x800.
 * A QP is placed on an engine worker at creation and again at RTR (worker.h); the worker sees
 * it once it is in the worker's active list, and every change of what it
 * sees happens under nic.lock and that worker's lock (emu_qp_ctl_lock).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "eth.h"
#include "rwq.h"
#include "worker.h"

#define QP_ACCESS_OK                                                                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define QP_INIT_ATTR_KNOWN                                                                         \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS |             \
	 IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH | \
	 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
#define PSN_MASK 0xffffffu

/* Sizing follows rdma-core's mlx5 provider (providers/mlx5/verbs.c). Its
 * sq_overhead() is the largest fixed part of a WQE of the opcodes the QP may
 * post: for a QP made without send_ops_flags every opcode, the memory-window
 * bind included, whose 192 bytes (ctrl, UMR ctrl, mkey context, 64 bytes of
 * KLMs) every send WQE then reserves, whatever the device's MW support; with
 * send_ops_flags only the opcodes named: ctrl (16), + raddr for RDMA (32),
 * + atomic segment for atomics (48), the 192 only for BIND_MW / LOCAL_INV. */
#define SQ_OVERHEAD_ALL    192u
#define SQ_OVERHEAD_CTRL   16u
#define SQ_OVERHEAD_RDMA   32u
#define SQ_OVERHEAD_ATOMIC 48u
#define SQ_OVERHEAD_RAW    48u /* ctrl + the 32-byte Ethernet segment */
#define SEND_OPS_RDMA                                                                              \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ)
#define SEND_OPS_ATOMIC (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
/* The send_ops_flags of an RC QP that gnic-emu executes ... */
#define SEND_OPS_EMULATED                                                                          \
	(SEND_OPS_RDMA | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | SEND_OPS_ATOMIC)
/* ... and those rdma-core's mlx5 accepts for RC, which gnic-emu does not. */
#define SEND_OPS_MLX5_RC_ONLY                                                                      \
	(IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
#define INL_HDR     4u                              /* struct mlx5_wqe_inl_data_seg */
#define MAX_SEND_WR (0x7fffffffu / EMU_MAX_SQ_DESC) /* rdma-core's overflow guard */

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* ---- create ---------------------------------------------------------------- */

static bool cq_of(struct ibv_cq *cq, struct ibv_context *context)
{
	return cq && cq->context == context;
}

/* send_ops_flags as mlx5_qp_fill_wr_pfns judges them per QP type:
 * EOPNOTSUPP for what mlx5 does not know for the type (UC: sends and
 * writes, UD: sends; RC: all but TSO and ATOMIC_WRITE) and for what
 * gnic-emu does not emulate. */
static int check_send_ops(enum ibv_qp_type type, uint64_t ops)
{
	uint64_t known = SEND_OPS_EMULATED | SEND_OPS_MLX5_RC_ONLY;

	if (type == IBV_QPT_UC)
		known = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		        IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		        IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	else if (type == IBV_QPT_UD)
		known = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	if (ops & ~known) {
		emu_info(
		    "create_qp: send_ops_flags 0x%llx: this QP type of mlx5 has no 0x%llx (TSO, "
		    "ATOMIC_WRITE, an opcode of another type, or unknown)",
		    (unsigned long long)ops, (unsigned long long)(ops & ~known));
		return EOPNOTSUPP;
	}
	if (ops & SEND_OPS_MLX5_RC_ONLY) {
		emu_info(
		    "create_qp: send_ops_flags 0x%llx: gnic-emu does not emulate SEND_WITH_INV, "
		    "LOCAL_INV or BIND_MW (no memory windows, no invalidation)",
		    (unsigned long long)ops);
		return EOPNOTSUPP;
	}
	return 0;
}

/* A RAW_PACKET QP of mlx5 sends SEND and TSO; gnic-emu has no TSO. */
static int check_send_ops_raw(uint64_t ops)
{
	if (ops & ~(uint64_t)IBV_QP_EX_WITH_SEND) {
		emu_info("create_qp: send_ops_flags 0x%llx: a RAW_PACKET QP of gnic-emu sends "
		         "SEND only (no TSO)",
		         (unsigned long long)ops);
		return EOPNOTSUPP;
	}
	return 0;
}

static bool is_raw(const struct ibv_qp_init_attr_ex *a)
{
	return a->qp_type == IBV_QPT_RAW_PACKET;
}

static int check_init_attr(struct ibv_context *context, const struct ibv_qp_init_attr_ex *a)
{
	if (!context || !a || (a->comp_mask & ~QP_INIT_ATTR_KNOWN) ||
	    !(a->comp_mask & IBV_QP_INIT_ATTR_PD))
		return EINVAL;
	if (a->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
	                     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP; /* XRC, RSS, TSO */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (is_raw(a) ? check_send_ops_raw(a->send_ops_flags)
	               : check_send_ops(a->qp_type, a->send_ops_flags)))
		return EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return EOPNOTSUPP;
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD &&
	    !is_raw(a))
		return EOPNOTSUPP; /* XRC, driver QPs */
	if (is_raw(a) && a->srq) {
		emu_info(
		    "create_qp: a RAW_PACKET QP of gnic-emu has its own receive queue (no SRQ)");
		return EOPNOTSUPP;
	}
	if (!gemu_is_emu_context(context) || !a->pd || a->pd->context != context ||
	    !cq_of(a->send_cq, context) || !cq_of(a->recv_cq, context) ||
	    (a->srq && a->srq->context != context))
		return EINVAL;
	return 0;
}

#define SQ_OVERHEAD_UD 64u /* ctrl + datagram segment: UD's opcodes have nothing else */

/* sq_overhead(): the fixed part of the largest WQE the QP may post (UC's is
 * RC's: mlx5 gives it the same opcodes); the mkey builders of
 * mlx5dv_create_qp's send_ops_flags post UMR WQEs, as big as a memory-window
 * bind. */
static uint32_t sq_overhead(const struct ibv_qp_init_attr_ex *a, uint64_t dv_ops)
{
	const uint64_t dv_umr = MLX5DV_QP_EX_WITH_MR_INTERLEAVED | MLX5DV_QP_EX_WITH_MR_LIST |
	                        MLX5DV_QP_EX_WITH_MKEY_CONFIGURE;
	uint64_t ops = a->send_ops_flags;

	if (a->qp_type == IBV_QPT_UD)
		return SQ_OVERHEAD_UD;
	if (is_raw(a))
		return SQ_OVERHEAD_RAW;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ||
	    (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)) || (dv_ops & dv_umr))
		return SQ_OVERHEAD_ALL;
	if (ops & SEND_OPS_ATOMIC)
		return SQ_OVERHEAD_ATOMIC;
	if (ops & SEND_OPS_RDMA)
		return SQ_OVERHEAD_RDMA;
	return SQ_OVERHEAD_CTRL;
}

/* Bytes of the largest send WQE (mlx5_calc_send_wqe): the overhead, then the
 * SGE list or the inline data, whichever is longer, in basic blocks; 0 when
 * the device cannot hold it. */
static uint32_t send_wqe_size(const struct ibv_qp_cap *cap, uint32_t overhead)
{
	uint64_t size = overhead + (uint64_t)cap->max_send_sge * GNIC_MLX5_SEG_SIZE;
	uint64_t inl = 0;

	if (cap->max_send_sge > (EMU_MAX_SQ_DESC - overhead) / GNIC_MLX5_SEG_SIZE)
		return 0;
	if (cap->max_inline_data)
		inl = overhead +
		      align_up(INL_HDR + (uint64_t)cap->max_inline_data, GNIC_MLX5_SEG_SIZE);
	if (inl > size)
		size = inl;
	if (size > EMU_MAX_SQ_DESC)
		return 0;
	return (uint32_t)align_up(size, GNIC_MLX5_SEND_WQE_BB);
}

/* mlx5_calc_sq_size: max_send_wr WQEs of the largest size, rounded up to a
 * power of two of basic blocks. *out gets what ibv_create_qp reports: the
 * WQEs that fit, max_send_sge as asked (the kernel echoes it) and the inline
 * room the WQE size leaves. No SQ (max_send_wr 0) checks nothing. */
static int size_sq(struct emu_qp *qp, const struct ibv_qp_init_attr_ex *a, uint64_t dv_ops,
                   struct ibv_qp_cap *out)
{
	const struct ibv_qp_cap *cap = &a->cap;
	uint32_t overhead = sq_overhead(a, dv_ops), wqe = send_wqe_size(cap, overhead), wq;

	qp->sq.stride = 1; /* what mlx5dv reports without an SQ: 1 << 0 */
	out->max_send_sge = cap->max_send_sge;
	out->max_inline_data = cap->max_inline_data;
	if (!cap->max_send_wr)
		return 0;
	if (!wqe || cap->max_send_wr > MAX_SEND_WR)
		return EINVAL;
	wq = roundup_pow2(cap->max_send_wr * wqe);
	if (wq / GNIC_MLX5_SEND_WQE_BB > EMU_MAX_QP_WR)
		return EINVAL;
	qp->sq.wqe_cnt = wq / GNIC_MLX5_SEND_WQE_BB;
	qp->sq.stride = GNIC_MLX5_SEND_WQE_BB;
	qp->max_send_sge = (int)cap->max_send_sge;
	/* signed like rdma-core's: max_send_sge 0 without inline leaves a slot
	 * of just the overhead, -4 (reported as 4294967292), no inline at all */
	qp->max_inline = (int)wqe - (int)(overhead + INL_HDR);
	out->max_send_wr = wq / wqe;
	out->max_inline_data = (uint32_t)qp->max_inline;
	return 0;
}

/* mlx5_calc_rq_size (no SRQ, no WQE signature): a power-of-two stride of
 * max_recv_sge data segments (at least one), a power of two of WQEs, at
 * least one basic block in all. Reported: every WQE and the stride's SGEs. */
static int size_rq(struct emu_qp *qp, const struct ibv_qp_init_attr_ex *a, struct ibv_qp_cap *out)
{
	const struct ibv_qp_cap *cap = &a->cap;
	uint32_t sge = cap->max_recv_sge ? cap->max_recv_sge : 1, wq;

	qp->rq.stride = 1; /* what mlx5dv reports without an RQ: 1 << 0 */
	out->max_recv_wr = out->max_recv_sge = 0;
	if (!cap->max_recv_wr || a->srq) /* receives come from the SRQ */
		return 0;
	if (cap->max_recv_wr > EMU_MAX_QP_WR || sge > EMU_MAX_RQ_DESC / GNIC_MLX5_SEG_SIZE)
		return EINVAL;
	qp->rq.stride = roundup_pow2(sge * GNIC_MLX5_SEG_SIZE);
	wq = roundup_pow2(cap->max_recv_wr) * qp->rq.stride;
	if (wq < GNIC_MLX5_SEND_WQE_BB)
		wq = GNIC_MLX5_SEND_WQE_BB;
	qp->rq.wqe_cnt = wq / qp->rq.stride;
	qp->max_recv_sge = (int)(qp->rq.stride / GNIC_MLX5_SEG_SIZE);
	out->max_recv_wr = qp->rq.wqe_cnt;
	out->max_recv_sge = (uint32_t)qp->max_recv_sge;
	return 0;
}

/* What ibv_query_qp reports: rdma-core's view of the queues, which without
 * an SQ has no SGEs and no inline room either. */
static struct ibv_qp_cap queried_caps(const struct emu_qp *qp, const struct ibv_qp_cap *created)
{
	struct ibv_qp_cap c = *created;

	c.max_send_sge = (uint32_t)qp->max_send_sge;
	c.max_inline_data = (uint32_t)qp->max_inline;
	return c;
}

/* A QP may lack either queue, or both: every array gets at least one entry
 * and the buffer at least a page, so an empty queue still has an address. */
static int alloc_queues(struct emu_qp *qp)
{
	size_t rq_size = (size_t)qp->rq.wqe_cnt * qp->rq.stride;
	size_t sq_off = align_up(rq_size, EMU_PAGE);
	size_t sq_n = qp->sq.wqe_cnt ? qp->sq.wqe_cnt : 1;

	qp->buf_size =
	    sq_off + align_up((uint64_t)qp->sq.wqe_cnt * GNIC_MLX5_SEND_WQE_BB, EMU_PAGE);
	if (!qp->buf_size)
		qp->buf_size = EMU_PAGE;
	qp->buf = emu_alloc_pages(qp->buf_size);
	qp->dbrec = emu_alloc_pages(EMU_PAGE);
	qp->sq_wqe_end = calloc(sq_n, sizeof(*qp->sq_wqe_end));
	qp->sq_opcode = calloc(sq_n, sizeof(*qp->sq_opcode));
	if (!qp->buf || !qp->dbrec || emu_wq_alloc_arrays(&qp->sq) || !qp->sq_wqe_end ||
	    !qp->sq_opcode || emu_wq_alloc_arrays(&qp->rq))
		return ENOMEM;
	qp->rq.buf = qp->rq.wqe_cnt ? qp->buf : NULL;
	qp->sq.buf = (uint8_t *)qp->buf + sq_off;
	return 0;
}

static void free_queues(struct emu_qp *qp)
{
	if (!qp->devx) { /* a DEVX QP's queues are the user's */
		free(qp->buf);
		free(qp->dbrec);
	}
	emu_uar_put(qp->bf);
	emu_wq_free_arrays(&qp->sq);
	free(qp->sq_wqe_end);
	free(qp->sq_opcode);
	emu_wq_free_arrays(&qp->rq);
}

static void init_ibqp(struct emu_qp *qp, const struct ibv_qp_init_attr_ex *a)
{
	qp->ibqp.context = a->pd->context;
	qp->ibqp.qp_context = a->qp_context;
	qp->ibqp.pd = a->pd;
	qp->ibqp.send_cq = a->send_cq;
	qp->ibqp.recv_cq = a->recv_cq;
	qp->ibqp.srq = a->srq;
	qp->ibqp.state = IBV_QPS_RESET;
	qp->ibqp.qp_type = a->qp_type;
	qp->ops = a->qp_type == IBV_QPT_UD           ? &emu_ud_qp_ops
	          : a->qp_type == IBV_QPT_UC         ? &emu_uc_qp_ops
	          : a->qp_type == IBV_QPT_RAW_PACKET ? &emu_raw_qp_ops
	                                             : &emu_rc_qp_ops;
	pthread_mutex_init(&qp->ibqp.mutex, NULL);
	pthread_cond_init(&qp->ibqp.cond, NULL);
	emu_wq_init_lock(&qp->sq);
	emu_wq_init_lock(&qp->rq);
	qp->ctx = to_ectx(a->pd->context);
	qp->pd = to_epd(a->pd);
	qp->parent = emu_parent_domain(a->pd);
	qp->scq = to_ecq(a->send_cq);
	qp->rcq = to_ecq(a->recv_cq);
	qp->srq = a->srq ? to_esrq(a->srq) : NULL;
	qp->sq_sig_all = a->sq_sig_all != 0;
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		emu_qp_ex_init(qp);
	atomic_init(&qp->state, IBV_QPS_RESET);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
}

static void destroy_ibqp(struct emu_qp *qp)
{
	emu_wq_destroy_lock(&qp->sq);
	emu_wq_destroy_lock(&qp->rq);
	pthread_cond_destroy(&qp->ibqp.cond);
	pthread_mutex_destroy(&qp->ibqp.mutex);
}

static void hold_refs(struct emu_qp *qp, int delta)
{
	qp->pd->refcnt += delta;
	if (qp->parent)
		qp->parent->refcnt += delta;
	qp->scq->refcnt += delta;
	qp->rcq->refcnt += delta;
	if (qp->srq)
		qp->srq->refcnt += delta;
}

/* qpn = EMU_QPN_BASE + index; the index rotates so a destroyed QP's number
 * is not handed out again at once (its peer may still be sending to it). */
static int qpn_alloc(struct emu_qp *qp)
{
	static uint32_t next; /* under nic.lock */

	for (uint32_t n = 0; n < EMU_MAX_QP; n++) {
		uint32_t i = next;

		next = (next + 1) % EMU_MAX_QP;
		if (!emu_nic.qps[i]) {
			emu_nic.qps[i] = qp;
			qp->ibqp.qp_num = EMU_QPN_BASE + i;
			qp->ibqp.handle = qp->ibqp.qp_num;
			return 0;
		}
	}
	return ENOMEM;
}

void emu_qp_ctl_lock(struct emu_qp *qp)
{
	emu_nic_lock();
	emu_worker_lock(qp->worker);
}

void emu_qp_ctl_unlock(struct emu_qp *qp)
{
	emu_worker_unlock(qp->worker);
	emu_nic_unlock();
}

/* Make the QP visible to its worker. Called with nic.lock held. */
static int publish(struct emu_qp *qp)
{
	int err = qpn_alloc(qp);

	if (err)
		return err;
	emu_worker_lock(qp->worker);
	err = -emu_engine_qp_add(qp);
	if (!err) {
		err = emu_worker_qp_add(qp);
		if (err)
			emu_engine_qp_remove(qp);
	}
	emu_worker_unlock(qp->worker);
	if (err) {
		emu_nic.qps[qp->ibqp.qp_num - EMU_QPN_BASE] = NULL;
		return err;
	}
	hold_refs(qp, 1);
	return 0;
}

/* mlx5_create_qp: a parent domain's thread domain gives the QP its
 * register; any other QP takes one of the context's (uar.c). */
static struct emu_bfreg *qp_bfreg(const struct ibv_qp_init_attr_ex *a)
{
	struct emu_pd *parent = emu_parent_domain(a->pd);

	if (parent && parent->td)
		return parent->td->bf;
	return emu_uar_get(to_ectx(a->pd->context));
}

/* *cap: what ibv_create_qp reports back (the caller's caps change only when
 * the QP is made). */
static struct emu_qp *qp_new(const struct ibv_qp_init_attr_ex *a, uint64_t dv_ops,
                             struct ibv_qp_cap *cap, int *err)
{
	struct emu_qp *qp = calloc(1, sizeof(*qp));

	if (!qp) {
		*err = ENOMEM;
		return NULL;
	}
	*err = size_sq(qp, a, dv_ops, cap);
	if (!*err)
		*err = size_rq(qp, a, cap);
	if (!*err)
		*err = alloc_queues(qp);
	if (!*err && !(qp->bf = qp_bfreg(a)))
		*err = ENOMEM;
	if (!*err)
		qp->bf_reg = qp->bf->reg;
	if (*err) {
		free_queues(qp);
		free(qp);
		return NULL;
	}
	init_ibqp(qp, a);
	emu_qp_ex_init_dv(qp, dv_ops);
	qp->attr.cap = queried_caps(qp, cap);
	return qp;
}

/* Scatter-to-CQE as rdma-core and mlx5_ib set it up for an RC QP with
 * 64-byte CQEs: rdma-core asks for it unless MLX5_SCATTER_TO_CQE=0 or the
 * DISABLE flag; the kernel then sets the responder's (cs_res = 32-byte data
 * in the receive CQE) and, only with sq_sig_all or the ALLOW flag, the
 * requester's (cs_req). */
static void set_scatter(struct emu_qp *qp, enum emu_scatter scatter)
{
	bool on = scatter == EMU_SCATTER_ALLOW ||
	          (scatter == EMU_SCATTER_DEFAULT && emu_env_scatter_to_cqe());

	if (qp->ibqp.qp_type == IBV_QPT_RAW_PACKET)
		on = false; /* an Ethernet RQ writes frames to memory */
	/* a UD receive starts with its 40-byte GRH: never 32 bytes or less */
	qp->scat_recv = on && (qp->rq.wqe_cnt || qp->srq) && qp->ibqp.qp_type != IBV_QPT_UD;
	qp->scat_req = on && (qp->sq_sig_all || scatter == EMU_SCATTER_ALLOW);
}

static const char *type_name(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_UD:
		return "UD";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_RAW_PACKET:
		return "RAW_PACKET";
	default:
		return "RC";
	}
}

/* An RSS QP (ibv_create_qp_ex with an indirection table and a hash): a
 * RAW_PACKET QP without queues of its own, made as one whose CQs are its
 * first WQ's (it completes nothing on them); *rss holds its TIR. */
static int rss_attr(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr,
                    struct ibv_qp_init_attr_ex *out, struct emu_rss **rss)
{
	struct ibv_cq *cq;
	int err;

	*rss = calloc(1, sizeof(**rss));
	if (!*rss)
		return ENOMEM;
	err = emu_rss_check(context, attr, *rss, &cq);
	if (err) {
		free(*rss);
		*rss = NULL;
		return err;
	}
	*out = *attr;
	out->comp_mask &= ~(uint32_t)(IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH);
	out->send_cq = out->recv_cq = cq;
	out->srq = NULL;
	out->cap = (struct ibv_qp_cap){0};
	return 0;
}

struct ibv_qp *emu_create_qp_dv(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr,
                                enum emu_scatter scatter, uint64_t dv_ops)
{
	struct emu_qp *qp = NULL;
	struct ibv_qp_cap cap = {0};
	struct ibv_qp_init_attr_ex rss_a;
	struct emu_rss *rss = NULL;
	int err = 0;

	if (attr && (attr->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH))) {
		err = context && attr->pd && gemu_is_emu_context(context)
		          ? rss_attr(context, attr, &rss_a, &rss)
		          : EINVAL;
		if (!err)
			attr = &rss_a;
	}
	if (!err)
		err = check_init_attr(context, attr);
	if (!err)
		err = emu_qp_ex_check_dv(dv_ops);
	if (!err && (qp = qp_new(attr, dv_ops, &cap, &err))) {
		set_scatter(qp, scatter);
		emu_nic_lock();
		emu_worker_assign(qp);
		err = is_raw(attr) ? -emu_eth_port_get(qp->ctx->dev) : 0;
		if (!err) {
			err = publish(qp);
			if (err && is_raw(attr))
				emu_eth_port_put(qp->ctx->dev);
		}
		if (!err && rss) {
			qp->rss = rss;
			emu_rss_hold(rss, 1);
			qp->ibqp.send_cq = qp->ibqp.recv_cq = NULL; /* as mlx5 leaves an RSS QP's */
		}
		emu_nic_unlock();
		if (err) {
			emu_worker_unassign(qp);
			destroy_ibqp(qp);
			free_queues(qp);
			free(qp);
		}
	}
	if (!err)
		emu_dbg("QP 0x%x: %s, SQ %u basic blocks, RQ %u WQEs, posts through %s",
		        qp->ibqp.qp_num, type_name(attr->qp_type), qp->sq.wqe_cnt, qp->rq.wqe_cnt,
		        qp->wr_api ? "ibv_post_send and ibv_wr_* (send_ops_flags)"
		                   : "ibv_post_send");
	if (err) {
		free(rss);
		errno = err;
		return NULL;
	}
	attr->cap = cap;
	return &qp->ibqp;
}

struct ibv_qp *emu_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr,
                             enum emu_scatter scatter)
{
	return emu_create_qp_dv(context, attr, scatter, 0);
}

/* The verbs side's arrays (wr_ids, retire points) exist for a DEVX QP too,
 * so that nothing downstream needs to tell the two apart; its queues are
 * the caller's. */
static int ext_queues(struct emu_qp *qp, const struct emu_qp_bufs *b)
{
	size_t sq_n = b->sq_cnt ? b->sq_cnt : 1;

	qp->devx = true;
	qp->rq.buf = b->rq_cnt ? b->rq_buf : NULL;
	qp->rq.wqe_cnt = b->rq_cnt;
	qp->rq.stride = b->rq_cnt ? b->rq_stride : 1;
	qp->sq.buf = b->sq_buf;
	qp->sq.wqe_cnt = b->sq_cnt;
	qp->sq.stride = b->sq_cnt ? GNIC_MLX5_SEND_WQE_BB : 1;
	qp->dbrec = b->dbrec;
	qp->bf_reg = (volatile uint64_t *)((uint8_t *)b->uar + GNIC_MLX5_BF_OFFSET);
	qp->sq_wqe_end = calloc(sq_n, sizeof(*qp->sq_wqe_end));
	qp->sq_opcode = calloc(sq_n, sizeof(*qp->sq_opcode));
	if (emu_wq_alloc_arrays(&qp->sq) || emu_wq_alloc_arrays(&qp->rq) || !qp->sq_wqe_end ||
	    !qp->sq_opcode)
		return ENOMEM;
	qp->max_recv_sge = b->rq_cnt ? (int)(b->rq_stride / GNIC_MLX5_SEG_SIZE) : 0;
	qp->attr.cap.max_send_wr = b->sq_cnt;
	qp->attr.cap.max_recv_wr = b->rq_cnt;
	qp->attr.cap.max_recv_sge = (uint32_t)qp->max_recv_sge;
	return 0;
}

struct emu_qp *emu_create_qp_ext(struct emu_context *ctx, struct emu_pd *pd, struct emu_cq *scq,
                                 struct emu_cq *rcq, const struct emu_qp_bufs *b, int *err)
{
	struct ibv_qp_init_attr_ex a = {.send_cq = &scq->ibcq,
	                                .recv_cq = &rcq->ibcq,
	                                .qp_type = IBV_QPT_RC,
	                                .comp_mask = IBV_QP_INIT_ATTR_PD,
	                                .pd = &pd->ibpd};
	struct emu_qp *qp = calloc(1, sizeof(*qp));

	if (!qp) {
		*err = ENOMEM;
		return NULL;
	}
	*err = ext_queues(qp, b);
	if (*err) {
		free_queues(qp);
		free(qp);
		return NULL;
	}
	(void)ctx; /* the PD names it: a.pd->context */
	init_ibqp(qp, &a);
	qp->scat_recv = b->scat_recv && b->rq_cnt;
	qp->scat_req = b->scat_req;
	emu_nic_lock();
	emu_worker_assign(qp);
	*err = publish(qp);
	emu_nic_unlock();
	if (*err) {
		emu_worker_unassign(qp);
		destroy_ibqp(qp);
		free_queues(qp);
		free(qp);
		return NULL;
	}
	emu_dbg("QP 0x%x: RC (DEVX), SQ %u basic blocks, RQ %u WQEs of %u bytes", qp->ibqp.qp_num,
	        qp->sq.wqe_cnt, qp->rq.wqe_cnt, qp->rq.stride);
	return qp;
}

EMU_EXPORT struct ibv_qp *gemu_create_qp_ex(struct ibv_context *context,
                                            struct ibv_qp_init_attr_ex *attr)
{
	return emu_create_qp(context, attr, EMU_SCATTER_DEFAULT);
}

EMU_EXPORT struct ibv_qp *gemu_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {0};
	struct ibv_qp *qp;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = gemu_create_qp_ex(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

/* ---- modify ---------------------------------------------------------------- */

struct transition {
	int req, opt; /* IBV_QP_* masks besides IBV_QP_STATE */
};

/* The RAW_PACKET rows of the kernel's state table: the port at RESET ->
 * INIT, no attribute on any other step (the kernel's RATE_LIMIT, which
 * gnic-emu does not pace, is refused with the rest). */
static int transition_raw(int cur, int next, struct transition *t)
{
	*t = (struct transition){0, 0};
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		t->opt = IBV_QP_CUR_STATE;
	else if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT)
		t->req = IBV_QP_PORT;
	else if ((cur == IBV_QPS_INIT && next == IBV_QPS_INIT) ||
	         (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) ||
	         (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) ||
	         (cur == IBV_QPS_RTS && next == IBV_QPS_RTS))
		return 0;
	else
		return EINVAL;
	return 0;
}

/* The rows of the IB state table (the kernel's ib_modify_qp_is_ok) that
 * gnic-emu implements, for RC, UC and UD: which attributes each transition
 * requires and which it allows besides. UD has no path, destination,
 * sequence, RNR, retry or RDMA attributes, only its Q_Key; UC has no
 * timeout, retries, RNR timer or RDMA-read depth. */
static int transition(int type, int cur, int next, struct transition *t)
{
	const bool ud = type == IBV_QPT_UD, uc = type == IBV_QPT_UC;
	const int rts_opt = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
	                    IBV_QP_PATH_MIG_STATE | (uc ? 0 : IBV_QP_MIN_RNR_TIMER);
	const int init_attr = ud ? IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY
	                         : IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

	*t = (struct transition){0, 0};
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		t->opt = IBV_QP_CUR_STATE;
	else if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT)
		t->req = init_attr;
	else if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT)
		t->opt = init_attr;
	else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR && ud) {
		t->opt = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
	} else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
		t->req = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		         (uc ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		t->opt = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
	} else if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) {
		t->req = IBV_QP_SQ_PSN;
		if (!ud && !uc)
			t->req |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			          IBV_QP_MAX_QP_RD_ATOMIC;
		t->opt = ud ? IBV_QP_CUR_STATE | IBV_QP_QKEY : rts_opt;
	} else if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS)
		t->opt = ud ? IBV_QP_CUR_STATE | IBV_QP_QKEY : rts_opt;
	else
		return EINVAL;
	return 0;
}

static int check_mask(int type, int cur, const struct ibv_qp_attr *a, int mask, int *next)
{
	struct transition t;
	int rest = mask & ~IBV_QP_STATE;

	*next = (mask & IBV_QP_STATE) ? (int)a->qp_state : cur;
	if ((mask & IBV_QP_CUR_STATE) && (int)a->cur_qp_state != cur)
		return EINVAL;
	/* a legal IB transition that gnic-emu does not model (SQ drain) */
	if (cur == IBV_QPS_RTS && *next == IBV_QPS_SQD)
		return EOPNOTSUPP;
	if (*next < IBV_QPS_RESET || *next > IBV_QPS_ERR || *next == IBV_QPS_SQD ||
	    *next == IBV_QPS_SQE)
		return EINVAL;
	if (type == IBV_QPT_RAW_PACKET ? transition_raw(cur, *next, &t)
	                               : transition(type, cur, *next, &t))
		return EINVAL;
	if ((rest & t.req) != t.req || (rest & ~(t.req | t.opt)))
		return EINVAL;
	return 0;
}

/* A RoCE port has no LIDs: the peer is named by its GID alone, and the
 * source GID must be an entry of the port's table (the kernel resolves it
 * at RTR: ENODATA for an empty one). */
/* InfiniBand: the DLID routes, a unicast one; a GRH is optional, and its
 * source GID must then be a valid entry. */
static int check_av_ib(struct emu_qp *qp, const struct ibv_ah_attr *ah)
{
	enum ibv_gid_type type;
	union ibv_gid sgid;
	int ret;

	if (ah->port_num != 1)
		return EINVAL;
	if (!ah->dlid || ah->dlid > EMU_LID_UNICAST_MAX) {
		emu_info("modify_qp: DLID 0x%04x is not a unicast LID", ah->dlid);
		return EINVAL;
	}
	if (!ah->is_global)
		return 0;
	ret = emu_gid_entry(qp->ctx->dev, ah->grh.sgid_index, &sgid, &type);
	return ret ? -ret : 0;
}

static int check_av(struct emu_qp *qp, const struct ibv_ah_attr *ah)
{
	enum ibv_gid_type type;
	struct sockaddr_in addr;
	union ibv_gid sgid;
	int ret;

	if (emu_cfg.link_ib)
		return check_av_ib(qp, ah);
	if (!ah->is_global) {
		emu_info("modify_qp: the address vector needs a GRH (is_global=1, the peer's "
		         "GID): gnic-emu ports are RoCE and have no LIDs");
		return EINVAL;
	}
	if (ah->port_num != 1)
		return EINVAL;
	ret = emu_gid_entry(qp->ctx->dev, ah->grh.sgid_index, &sgid, &type);
	if (ret) {
		emu_info("modify_qp: source GID index %u is %s", ah->grh.sgid_index,
		         ret == -ENODATA ? "an empty entry" : "past the GID table");
		return -ret;
	}
	if (emu_gid_to_addr(&ah->grh.dgid, &addr)) {
		emu_info("modify_qp: destination GID is not a gnic-emu GID");
		return EINVAL;
	}
	return 0;
}

static int check_values(struct emu_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	int ret;

	if (((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~QP_ACCESS_OK)) ||
	    ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0) ||
	    ((mask & IBV_QP_PORT) && a->port_num != 1) ||
	    ((mask & IBV_QP_PATH_MTU) &&
	     (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096)) ||
	    ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff) ||
	    ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > emu_cfg.max_rd_atom) ||
	    ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > emu_cfg.max_rd_atom) ||
	    ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7) ||
	    ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7) ||
	    ((mask & IBV_QP_TIMEOUT) && a->timeout >= 32) ||
	    ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer >= 32))
		return EINVAL;
	if ((mask & IBV_QP_AV) && (ret = check_av(qp, &a->ah_attr)))
		return ret;
	/* automatic path migration needs an alternate path we do not model */
	if ((mask & IBV_QP_ALT_PATH) ||
	    ((mask & IBV_QP_PATH_MIG_STATE) && a->path_mig_state != IBV_MIG_MIGRATED))
		return EOPNOTSUPP;
	return 0;
}

static void commit_path(struct emu_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	if (mask & IBV_QP_AV) {
		union ibv_gid sgid;
		enum ibv_gid_type type = IBV_GID_TYPE_ROCE_V2;

		qp->attr.ah_attr = a->ah_attr;
		qp->dgid = a->ah_attr.grh.dgid;
		if (emu_cfg.link_ib) {
			emu_lid_identity(qp->ctx->dev, a->ah_attr.dlid, &qp->dgid);
			type = IBV_GID_TYPE_IB;
		} else {
			emu_gid_entry(qp->ctx->dev, a->ah_attr.grh.sgid_index, &sgid, &type);
		}
		qp->gid_type = (uint8_t)type;
		qp->peer_id_ok = !emu_gid_identity(&qp->dgid, &qp->peer_id);
		qp->peer_dev = emu_device_by_gid(&qp->dgid);
	}
	if (mask & IBV_QP_PATH_MTU)
		qp->attr.path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN) {
		qp->attr.dest_qp_num = a->dest_qp_num;
		qp->dest_qpn = a->dest_qp_num;
	}
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->attr.path_mig_state = a->path_mig_state;
}

static void commit_attr(struct emu_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	commit_path(qp, a, mask);
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = a->pkey_index;
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = a->qkey;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = a->port_num;
	/* PSNs are 24 bits: hardware ignores the rest, so do we */
	if (mask & IBV_QP_RQ_PSN)
		qp->attr.rq_psn = a->rq_psn & PSN_MASK;
	if (mask & IBV_QP_SQ_PSN)
		qp->attr.sq_psn = a->sq_psn & PSN_MASK;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->attr.retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->attr.rnr_retry = a->rnr_retry;
}

/* The engine reads the register as memory and takes a changed value for a
 * doorbell: a value left there from before a RESET would hide a doorbell of
 * the new life that writes the same bytes (index 0 again), which hardware,
 * seeing every write, takes. A DEVX QP's UAR page is the user's, but what a
 * register "holds" is the emulator's own, so it is cleared for those too. */
static void clear_register(volatile uint64_t *reg)
{
	for (uint32_t i = 0; i < 2 * GNIC_MLX5_BF_SIZE / sizeof(uint64_t); i++)
		__atomic_store_n(&reg[i], 0, __ATOMIC_RELAXED);
}

/* RESET empties the work queues: software starts again at index 0, as the
 * engine does (emu_engine_qp_state), and the doorbell records are zeroed,
 * as rdma-core does. The queue buffers keep their bytes: rdma-core does not
 * clear them, and software that reuses WQEs across a reset relies on it. */
static void reset_queues(struct emu_qp *qp)
{
	if (qp->devx) { /* its memory is the user's; the kernel cleans no CQ for DEVX */
		clear_register(qp->bf_reg);
		return;
	}
	pthread_spin_lock(&qp->sq.lock);
	pthread_spin_lock(&qp->rq.lock);
	emu_wq_reset(&qp->sq);
	emu_wq_reset(&qp->rq);
	memset(qp->dbrec, 0, 2 * sizeof(*qp->dbrec));
	/* the engine reads the register as memory: an old index left there
	 * would look like a doorbell for WQEs of the new life. Another QP's
	 * doorbell this may wipe still has its record. The half toggle is the
	 * register's and stays. */
	emu_bfreg_lock(qp->bf);
	clear_register(qp->bf_reg);
	emu_bfreg_unlock(qp->bf);
	pthread_spin_unlock(&qp->rq.lock);
	pthread_spin_unlock(&qp->sq.lock);
	emu_cq_clean(qp->scq, qp->ibqp.qp_num, qp->srq);
	if (qp->rcq != qp->scq)
		emu_cq_clean(qp->rcq, qp->ibqp.qp_num, qp->srq);
}

/* After RESET a QP has no path: query shows defaults, caps stay. */
static void reset_attr(struct emu_qp *qp)
{
	struct ibv_qp_cap cap = qp->attr.cap;

	memset(&qp->attr, 0, sizeof(qp->attr));
	qp->attr.cap = cap;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	memset(&qp->dgid, 0, sizeof(qp->dgid));
	qp->peer_id_ok = false;
	qp->peer_dev = NULL;
	qp->dest_qpn = 0;
}

static void commit_state(struct emu_qp *qp, int old, int next)
{
	qp->attr.qp_state = next;
	qp->attr.cur_qp_state = next;
	qp->ibqp.state = next;
	if (next == IBV_QPS_RESET)
		reset_queues(qp);
	atomic_store(&qp->state, next);
	emu_engine_qp_state(qp, old);
	if (next == IBV_QPS_RESET)
		reset_attr(qp);
}

void emu_qp_enter_error(struct emu_qp *qp, const char *why)
{
	int old = atomic_exchange(&qp->state, IBV_QPS_ERR);

	if (old != IBV_QPS_ERR)
		emu_info("QP 0x%x enters ERR: %s", qp->ibqp.qp_num, why);
}

EMU_EXPORT int gemu_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct emu_qp *qp;
	int cur, next, err;

	if (!ibqp || !attr || !gemu_is_emu_context(ibqp->context))
		return EINVAL;
	qp = to_eqp(ibqp);
	if (qp->rss)
		return ENOSYS; /* mlx5_ib: an RSS QP is not modified */
	emu_qp_ctl_lock(qp);
	cur = atomic_load(&qp->state); /* the engine may have moved it to ERR */
	err = check_mask(ibqp->qp_type, cur, attr, attr_mask, &next);
	if (!err)
		err = check_values(qp, attr, attr_mask);
	if (!err) {
		commit_attr(qp, attr, attr_mask);
		/* the peer is known now: the QP may move to its worker */
		if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR)
			emu_worker_rtr(qp);
		else if (next == IBV_QPS_RESET)
			emu_worker_unplace(qp);
		commit_state(qp, cur, next);
	}
	emu_qp_ctl_unlock(qp);
	return err;
}

/* ---- query ----------------------------------------------------------------- */

EMU_EXPORT int gemu_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
                             struct ibv_qp_init_attr *init_attr)
{
	struct emu_qp *qp;
	int state;

	(void)attr_mask; /* like mlx5, every attribute is returned */
	if (!ibqp || !attr || !init_attr || !gemu_is_emu_context(ibqp->context))
		return EINVAL;
	qp = to_eqp(ibqp);
	if (qp->rss)
		return ENOSYS; /* mlx5_ib: nor queried */
	emu_nic_lock();
	state = atomic_load(&qp->state);
	*attr = qp->attr;
	emu_nic_unlock();
	attr->qp_state = state;
	attr->cur_qp_state = state;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = attr->cap;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

/* ---- destroy --------------------------------------------------------------- */

EMU_EXPORT int gemu_destroy_qp(struct ibv_qp *ibqp)
{
	struct emu_qp *qp;

	if (!ibqp || !gemu_is_emu_context(ibqp->context))
		return EINVAL;
	qp = to_eqp(ibqp);
	emu_nic_lock();
	if (emu_qp_lookup(ibqp->qp_num) != qp) {
		emu_nic_unlock();
		return EINVAL;
	}
	emu_worker_lock(qp->worker);
	if (ibqp->qp_type == IBV_QPT_RAW_PACKET && emu_flow_qp_busy(qp)) {
		/* each flow holds a reference on its QP, as in the kernel */
		emu_worker_unlock(qp->worker);
		emu_nic_unlock();
		return EBUSY;
	}
	emu_engine_qp_remove(qp);
	emu_worker_unplace(qp);
	emu_worker_qp_del(qp);
	emu_nic.qps[ibqp->qp_num - EMU_QPN_BASE] = NULL;
	/* its unpolled CQEs would name a QPN that a new QP may get (the
	 * provider's job, which DEVX has none of) */
	if (!qp->devx) {
		emu_cq_clean(qp->scq, ibqp->qp_num, qp->srq);
		if (qp->rcq != qp->scq)
			emu_cq_clean(qp->rcq, ibqp->qp_num, qp->srq);
	}
	emu_worker_unlock(qp->worker);
	hold_refs(qp, -1);
	if (qp->rss)
		emu_rss_hold(qp->rss, -1);
	if (ibqp->qp_type == IBV_QPT_RAW_PACKET)
		emu_eth_port_put(qp->ctx->dev);
	emu_nic_unlock();
	emu_events_wait(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed,
	                emu_async_drop(qp->ctx, qp, &qp->events_reported));
	free(qp->rss);
	destroy_ibqp(qp);
	free_queues(qp);
	free(qp);
	return 0;
}
