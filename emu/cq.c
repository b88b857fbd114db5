/* SPDX-License-Identifier: MIT */
/*
 * Completion queues: the verbs side of the CQ ring.
 *
 * The engine (cqe.c) writes 64-byte mlx5 CQEs into cq->buf and hands a CQE to
 * software by flipping its op_own byte last. poll_cq parses them exactly as
 * software parses a ConnectX CQ: ownership by the owner bit of the current
 * pass (an acquire load of op_own), then the body, and publishes the consumer
 * index in the doorbell record, which is the engine's only overrun check.
 *
 * After mlx5dv_init_obj() the user may poll the ring directly; then the user
 * owns the consumer index in dbrec[0]. ibv_poll_cq keeps working on such a CQ
 * but must not be mixed with direct polling; req_notify_cq reads the
 * consumer index back from dbrec[0] so arming stays correct either way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "av.h"
#include "emu.h"
#include "rwq.h"
#include "wqe.h"

#define CQE_INVALID_OWN 0xF0 /* opcode INVALID, owner 0: nobody wrote it yet */
#define CQ_CI_MASK      0xffffffu

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* cqn 0 is left unused so that a zeroed field never names a live CQ. */
static int cqn_alloc(struct emu_cq *cq)
{
	static uint32_t next = 1; /* under nic.lock; rotates to delay reuse */

	for (uint32_t n = 0; n < EMU_MAX_CQ - 1; n++) {
		uint32_t cqn = next;

		next = next + 1 < EMU_MAX_CQ ? next + 1 : 1;
		if (!emu_nic.cqs[cqn]) {
			cq->cqn = cqn;
			cq->ibcq.handle = cqn;
			emu_nic.cqs[cqn] = cq;
			return 0;
		}
	}
	return ENOMEM;
}

static void cq_free_mem(struct emu_cq *cq)
{
	if (!cq->ext_bufs) {
		free(cq->buf);
		free(cq->dbrec);
	}
	free(cq);
}

static void cq_free(struct emu_cq *cq)
{
	pthread_spin_destroy(&cq->poll_lock);
	pthread_cond_destroy(&cq->ibcq.cond);
	pthread_mutex_destroy(&cq->ibcq.mutex);
	cq_free_mem(cq);
}

static int cq_init_ring(struct emu_cq *cq, int cqe)
{
	cq->cqe_cnt = roundup_pow2((uint32_t)cqe + 1);
	if (cq->cqe_cnt < 2)
		cq->cqe_cnt = 2;
	cq->buf = emu_alloc_pages((size_t)cq->cqe_cnt * sizeof(*cq->buf));
	cq->dbrec = emu_alloc_pages(EMU_PAGE);
	if (!cq->buf || !cq->dbrec)
		return ENOMEM;
	for (uint32_t i = 0; i < cq->cqe_cnt; i++)
		cq->buf[i].op_own = CQE_INVALID_OWN;
	return 0;
}

static void cq_init_ibcq(struct emu_cq *cq, struct ibv_context *context, void *cq_context,
                         struct ibv_comp_channel *channel)
{
	cq->ibcq.context = context;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.cqe = (int)cq->cqe_cnt - 1;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	pthread_spin_init(&cq->poll_lock, PTHREAD_PROCESS_PRIVATE);
}

/* libibverbs counts a channel's CQs in channel->refcnt under context->mutex;
 * destroy_comp_channel refuses (EBUSY) while it is non-zero. */
static void channel_ref(struct ibv_comp_channel *channel, int delta)
{
	if (!channel)
		return;
	pthread_mutex_lock(&channel->context->mutex);
	channel->refcnt += delta;
	pthread_mutex_unlock(&channel->context->mutex);
}

/* Set up a zeroed emu_cq (ibv_create_cq and ibv_create_cq_ex): 0, or an
 * errno value and the CQ freed. */
int emu_cq_init(struct emu_cq *cq, struct ibv_context *context, int cqe, void *cq_context,
                struct ibv_comp_channel *channel, int comp_vector)
{
	int err;

	if (!context || !gemu_is_emu_context(context) || cqe < 1 || cqe > EMU_MAX_CQE ||
	    comp_vector != 0 || (channel && channel->context != context)) {
		free(cq);
		return EINVAL;
	}
	err = cq_init_ring(cq, cqe);
	if (err) {
		cq_free_mem(cq);
		return err;
	}
	cq_init_ibcq(cq, context, cq_context, channel);
	emu_nic_lock();
	err = cqn_alloc(cq);
	emu_nic_unlock();
	if (err) {
		cq_free(cq);
		return err;
	}
	channel_ref(channel, 1);
	return 0;
}

/* The ring is the user's: its CQEs are initialised by the user (hardware
 * never writes a CQE it did not produce), and the user owns the consumer
 * index from the start. */
int emu_cq_init_ext(struct emu_cq *cq, struct ibv_context *context, void *buf, uint32_t cqe_cnt,
                    __be32 *dbrec, bool ignore_overrun)
{
	int err;

	cq->ext_bufs = true;
	cq->buf = buf;
	cq->cqe_cnt = cqe_cnt;
	cq->dbrec = dbrec;
	cq->ignore_overrun = ignore_overrun;
	cq->dv_owned = true;
	cq_init_ibcq(cq, context, NULL, NULL);
	emu_nic_lock();
	err = cqn_alloc(cq);
	emu_nic_unlock();
	if (err)
		cq_free(cq);
	return err;
}

EMU_EXPORT struct ibv_cq *gemu_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                         struct ibv_comp_channel *channel, int comp_vector)
{
	struct emu_cq *cq = calloc(1, sizeof(*cq));
	int err;

	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	err = emu_cq_init(cq, context, cqe, cq_context, channel, comp_vector);
	if (err) {
		errno = err;
		return NULL;
	}
	return &cq->ibcq;
}

/* As libibverbs does with the kernel's counts: the CQ's unread events are
 * dropped, and every one handed out (completion and async) must be acked
 * before the CQ can go. Unbounded on purpose: the documented contract of
 * ibv_destroy_cq. */
static void wait_events_acked(struct emu_cq *cq)
{
	struct ibv_cq *c = &cq->ibcq;
	uint32_t comp = emu_channel_drop(cq);
	uint32_t async = emu_async_drop(to_ectx(c->context), cq, &cq->async_events_reported);

	emu_events_wait(&c->mutex, &c->cond, &c->comp_events_completed, comp);
	emu_events_wait(&c->mutex, &c->cond, &c->async_events_completed, async);
}

EMU_EXPORT int gemu_destroy_cq(struct ibv_cq *ibcq)
{
	struct emu_cq *cq;
	int err = 0;

	if (!ibcq || !gemu_is_emu_context(ibcq->context))
		return EINVAL;
	cq = to_ecq(ibcq);
	emu_nic_lock();
	if (emu_nic.cqs[cq->cqn] != cq)
		err = EINVAL;
	else if (cq->refcnt)
		err = EBUSY;
	else
		emu_nic.cqs[cq->cqn] = NULL; /* no QP uses it: the engine cannot reach it */
	if (!err && cq->parent)
		cq->parent->refcnt--;
	emu_nic_unlock();
	if (err)
		return err;
	wait_events_acked(cq);
	channel_ref(ibcq->channel, -1);
	cq_free(cq);
	return 0;
}

/* ---- poll ---------------------------------------------------------------- */

/* CQE n if software owns it. The engine writes the body first and op_own
 * last (release): reading op_own with acquire makes the body safe to read.
 * req_notify_cq asks for seq_cst (see there). */
static struct gnic_mlx5_cqe64 *cqe_ready(struct emu_cq *cq, uint32_t n, memory_order order)
{
	struct gnic_mlx5_cqe64 *cqe = &cq->buf[n & (cq->cqe_cnt - 1)];
	uint8_t op_own = atomic_load_explicit((_Atomic uint8_t *)&cqe->op_own, order);

	return gnic_mlx5_cqe_sw_owned(op_own, n, cq->cqe_cnt) ? cqe : NULL;
}

struct gnic_mlx5_cqe64 *emu_cq_next(struct emu_cq *cq, uint32_t n)
{
	return cqe_ready(cq, n, memory_order_acquire);
}

/* The CQE's QP: by its user index where the CQE has one (an Ethernet RQ's
 * receive CQE, whose sop_drop_qpn holds the flow tag), else by QPN. */
static uint32_t cqe_qpn(const struct gnic_mlx5_cqe64 *cqe)
{
	uint32_t uidx = gnic_be32(cqe->srqn_uidx) & 0xffffff;

	if (uidx && gnic_mlx5_cqe_opcode(cqe->op_own) == GNIC_MLX5_CQE_RESP_SEND)
		return uidx;
	return gnic_be32(cqe->sop_drop_qpn) & 0xffffff;
}

static void wc_clear(struct ibv_wc *wc, struct emu_qp *qp)
{
	memset(wc, 0, sizeof(*wc));
	wc->status = IBV_WC_SUCCESS;
	wc->qp_num = qp->ibqp.qp_num;
	wc->src_qp = qp->dest_qpn;
}

/* A requester CQE completes the WQE at wqe_counter and, since send CQEs come
 * in posting order, retires every unsignaled WQE before it as well. */
static void retire_send(struct emu_qp *qp, uint16_t wqe_counter, struct ibv_wc *wc)
{
	uint32_t slot = emu_wq_slot(&qp->sq, wqe_counter);

	wc->wr_id = qp->sq.wrid[slot];
	wc->opcode = qp->sq_opcode[slot];
	/* post_send reads sq.tail to find free space */
	emu_wq_retire(&qp->sq, qp->sq_wqe_end[slot]);
}

/* The receive WQE a responder CQE completes: the RQ's oldest, or the SRQ
 * WQE its wqe_counter names, which goes back to the SRQ's free list. */
static int consume_recv(struct emu_qp *qp, uint16_t wqe_counter, struct ibv_wc *wc)
{
	uint32_t tail = qp->rq.tail;

	if (qp->srq) {
		if (wqe_counter >= qp->srq->wq.wqe_cnt)
			return -1;
		wc->wr_id = qp->srq->wq.wrid[wqe_counter];
		emu_srq_free_wqe(qp->srq, wqe_counter);
		return 0;
	}
	if (!qp->rq.wqe_cnt)
		return -1;
	wc->wr_id = qp->rq.wrid[emu_wq_slot(&qp->rq, tail)];
	emu_wq_retire(&qp->rq, tail + 1);
	return 0;
}

/* ---- scatter-to-CQE: the provider's copy out of the CQE ---------------------
 * With scatter-to-CQE the NIC puts small data into the CQE and never touches
 * the buffer; rdma-core's poll_cq copies it into the WQE's buffers
 * (mlx5_copy_to_recv_wqe / mlx5_copy_to_send_wqe), checking only that they
 * hold it. Code that polls CQEs itself must do the same (or create its QPs
 * with MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE). */

/* One buffer: through its MR where the key names one (GPU memory too), else
 * a plain copy to the address, which is all rdma-core does. */
static void copy_out(const struct gnic_mlx5_data_seg *seg, const uint8_t *data, uint32_t n)
{
	uint64_t addr = gnic_be64(seg->addr);
	struct emu_mr *mr = emu_mr_lookup(gnic_be32(seg->lkey));

	if (!mr || emu_mem_write(mr, addr, data, n))
		memcpy((void *)(uintptr_t)addr, data, n);
}

static enum ibv_wc_status copy_to_segs(const struct gnic_mlx5_data_seg *seg, unsigned nseg,
                                       const uint8_t *data, uint32_t len)
{
	for (unsigned i = 0; i < nseg && len; i++) {
		uint32_t n = gnic_be32(seg[i].byte_count);

		if (gnic_be32(seg[i].lkey) == GNIC_MLX5_INVALID_LKEY)
			break;
		n = n < len ? n : len;
		copy_out(&seg[i], data, n);
		data += n;
		len -= n;
	}
	return len ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

static bool scattered(const struct gnic_mlx5_cqe64 *cqe)
{
	return (cqe->op_own & GNIC_MLX5_CQE_FORMAT_MASK) == GNIC_MLX5_INLINE_SCATTER_32;
}

/* A READ's or atomic's data from its send CQE into the WQE's local buffers
 * (the WQE still lies in the SQ: it is retired after this). */
static enum ibv_wc_status copy_to_send_wqe(struct emu_qp *qp, const struct gnic_mlx5_cqe64 *cqe)
{
	struct emu_wqe w;
	unsigned off;

	emu_wqe_copy(&qp->sq, gnic_be16(cqe->wqe_counter), &w);
	if (w.opcode != GNIC_MLX5_OPCODE_RDMA_READ && w.opcode != GNIC_MLX5_OPCODE_ATOMIC_CS &&
	    w.opcode != GNIC_MLX5_OPCODE_ATOMIC_FA)
		return IBV_WC_SUCCESS; /* nothing comes back for other opcodes */
	off = emu_wqe_rd_atomic_sgl(w.opcode);
	if (w.ds * 16u <= off)
		return IBV_WC_LOC_LEN_ERR;
	return copy_to_segs((const void *)(w.bytes + off), (w.ds * 16u - off) / 16,
	                    (const uint8_t *)cqe, gnic_be32(cqe->byte_cnt));
}

static enum ibv_wc_status copy_to_recv_wqe(struct emu_qp *qp, uint32_t slot,
                                           const struct gnic_mlx5_cqe64 *cqe)
{
	unsigned nseg = qp->rq.stride / sizeof(struct gnic_mlx5_data_seg);
	const void *seg = qp->srq ? emu_srq_wqe(qp->srq, (uint16_t)slot, &nseg)
	                          : (const void *)emu_wq_at(&qp->rq, slot);

	return copy_to_segs(seg, nseg, (const uint8_t *)cqe, gnic_be32(cqe->byte_cnt));
}

static void parse_req(struct emu_qp *qp, const struct gnic_mlx5_cqe64 *cqe, struct ibv_wc *wc)
{
	if (scattered(cqe))
		wc->status = copy_to_send_wqe(qp, cqe);
	retire_send(qp, gnic_be16(cqe->wqe_counter), wc);
	if (wc->opcode == IBV_WC_RDMA_READ)
		wc->byte_len = gnic_be32(cqe->byte_cnt);
	else if (wc->opcode == IBV_WC_COMP_SWAP || wc->opcode == IBV_WC_FETCH_ADD)
		wc->byte_len = 8;
}

/* A UD receive names its sender in the CQE, as rdma-core's mlx5 reads it. */
static void parse_resp_ud(const struct gnic_mlx5_cqe64 *cqe, struct ibv_wc *wc)
{
	const struct emu_cqe_resp *r = (const struct emu_cqe_resp *)cqe;
	uint32_t f = gnic_be32(r->flags_rqpn);

	wc->src_qp = f & 0xffffff;
	wc->sl = (f >> 24) & 0xf;
	wc->slid = gnic_be16(r->slid);
	wc->dlid_path_bits = r->ml_path & 0x7f;
	wc->pkey_index = (uint16_t)(gnic_be32(cqe->imm_inval_pkey) & 0xffff);
	if ((f >> 28) & 3)
		wc->wc_flags |= IBV_WC_GRH;
}

/* rdma-core's get_csum_ok: IPv4 with both the L3 and the L4 checksum right. */
static unsigned raw_csum_ok(const struct gnic_mlx5_cqe64 *cqe)
{
	const uint8_t *b = (const uint8_t *)cqe;
	uint8_t ok = GNIC_MLX5_CQE_L3_OK | GNIC_MLX5_CQE_L4_OK;

	return ((b[GNIC_MLX5_CQE_HDS_IP_EXT] & ok) == ok &&
	        ((b[GNIC_MLX5_CQE_L4_HDR_TYPE_ETC] >> 2) & 3) == GNIC_MLX5_CQE_L3_HDR_TYPE_IPV4)
	           ? IBV_WC_IP_CSUM_OK
	           : 0;
}

static int parse_resp(struct emu_qp *qp, const struct gnic_mlx5_cqe64 *cqe, uint8_t opcode,
                      struct ibv_wc *wc)
{
	uint16_t wqe_counter = gnic_be16(cqe->wqe_counter);
	uint32_t slot =
	    qp->srq ? wqe_counter : (qp->rq.wqe_cnt ? emu_wq_slot(&qp->rq, qp->rq.tail) : 0);

	/* the copy first: the WQE may be posted again once consumed */
	if (scattered(cqe) && (qp->srq ? wqe_counter < qp->srq->wq.wqe_cnt : qp->rq.wqe_cnt != 0))
		wc->status = copy_to_recv_wqe(qp, slot, cqe);
	if (consume_recv(qp, wqe_counter, wc))
		return -1;
	wc->byte_len = gnic_be32(cqe->byte_cnt);
	wc->opcode = opcode == GNIC_MLX5_CQE_RESP_WR_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	if (qp->ibqp.qp_type == IBV_QPT_RAW_PACKET)
		wc->wc_flags = raw_csum_ok(cqe);
	switch (opcode) {
	case GNIC_MLX5_CQE_RESP_WR_IMM:
	case GNIC_MLX5_CQE_RESP_SEND_IMM:
		wc->wc_flags = IBV_WC_WITH_IMM;
		wc->imm_data = cqe->imm_inval_pkey; /* verbs keeps it big-endian */
		break;
	case GNIC_MLX5_CQE_RESP_SEND_INV:
		wc->wc_flags = IBV_WC_WITH_INV;
		wc->invalidated_rkey = gnic_be32(cqe->imm_inval_pkey);
		break;
	}
	if (qp->ibqp.qp_type == IBV_QPT_UD)
		parse_resp_ud(cqe, wc);
	return 0;
}

static int parse_err(struct emu_qp *qp, const struct gnic_mlx5_cqe64 *cqe, uint8_t opcode,
                     struct ibv_wc *wc)
{
	const struct gnic_mlx5_err_cqe *ecqe = (const struct gnic_mlx5_err_cqe *)cqe;

	if (opcode == GNIC_MLX5_CQE_REQ_ERR) {
		retire_send(qp, gnic_be16(ecqe->wqe_counter), wc);
	} else {
		/* every responder error (flush included) used up one receive */
		if (consume_recv(qp, gnic_be16(ecqe->wqe_counter), wc))
			return -1;
		wc->opcode = IBV_WC_RECV;
	}
	wc->status = emu_syndrome_to_status(ecqe->syndrome);
	wc->vendor_err = ecqe->vendor_err_synd;
	return 0;
}

/* Decode one CQE into wc. Returns 1 if wc was filled, 0 if the CQE was
 * consumed without a completion (its QP is gone, or it makes no sense). */
int emu_cq_parse(struct emu_cq *cq, const struct gnic_mlx5_cqe64 *cqe, struct ibv_wc *wc)
{
	uint8_t opcode = gnic_mlx5_cqe_opcode(cqe->op_own);
	uint32_t qpn = cqe_qpn(cqe);
	struct emu_qp *qp = emu_qp_lookup(qpn);
	int ret = 0;

	if (!qp && qpn >= EMU_RWQN_BASE) { /* a receive WQ's (rwq.c) */
		static struct emu_log_limit limit;

		emu_warn_limited(&limit,
		                 "CQ 0x%x: ibv_poll_cq does not complete receives of WQ 0x%x on "
		                 "gnic-emu: read the WQ's CQEs directly (mlx5dv_init_obj)",
		                 cq->cqn, qpn);
		return 0;
	}
	if (!qp) {
		emu_dbg("CQ 0x%x: dropping a CQE of QP 0x%x, which no longer exists", cq->cqn, qpn);
		return 0;
	}
	wc_clear(wc, qp);
	cq->cur_flow_tag =
	    qp->ibqp.qp_type == IBV_QPT_RAW_PACKET && opcode == GNIC_MLX5_CQE_RESP_SEND
	        ? gnic_be32(cqe->sop_drop_qpn) & GNIC_MLX5_FLOW_TAG_MASK
	        : 0;
	switch (opcode) {
	case GNIC_MLX5_CQE_REQ:
		parse_req(qp, cqe, wc);
		break;
	case GNIC_MLX5_CQE_RESP_WR_IMM:
	case GNIC_MLX5_CQE_RESP_SEND:
	case GNIC_MLX5_CQE_RESP_SEND_IMM:
	case GNIC_MLX5_CQE_RESP_SEND_INV:
		ret = parse_resp(qp, cqe, opcode, wc);
		break;
	case GNIC_MLX5_CQE_REQ_ERR:
	case GNIC_MLX5_CQE_RESP_ERR:
		ret = parse_err(qp, cqe, opcode, wc);
		break;
	default:
		ret = -1;
	}
	if (ret) {
		emu_warn("CQ 0x%x: dropping a CQE with opcode %u for QP 0x%x (no receive queue "
		         "entry or unknown opcode)",
		         cq->cqn, opcode, qpn);
		return 0;
	}
	return 1;
}

void emu_cq_publish_ci(struct emu_cq *cq)
{
	/* the engine's overrun check reads this; the CQEs are free after it */
	__atomic_store_n(&cq->dbrec[0], gnic_be32(cq->ci & CQ_CI_MASK), __ATOMIC_RELEASE);
}

EMU_EXPORT int gemu_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct emu_cq *cq = to_ecq(ibcq);
	struct gnic_mlx5_cqe64 *cqe;
	uint32_t start;
	int n = 0;

	if (num_entries < 0 || (num_entries && !wc))
		return -1;
	pthread_spin_lock(&cq->poll_lock);
	start = cq->ci;
	while (n < num_entries && (cqe = emu_cq_next(cq, cq->ci))) {
		n += emu_cq_parse(cq, cqe, &wc[n]);
		cq->ci++;
	}
	if (cq->ci != start)
		emu_cq_publish_ci(cq);
	pthread_spin_unlock(&cq->poll_lock);
	return n;
}

/* ---- arm ------------------------------------------------------------------ */

/* The consumer index the user really has: ours, or dbrec[0] once the user
 * polls the ring directly (mlx5dv). */
static uint32_t current_ci(struct emu_cq *cq)
{
	if (cq->dv_owned)
		return gnic_be32(__atomic_load_n(&cq->dbrec[0], __ATOMIC_ACQUIRE)) & CQ_CI_MASK;
	return cq->ci;
}

static bool cqe_wakes(const struct gnic_mlx5_cqe64 *cqe, int armed)
{
	uint8_t opcode = gnic_mlx5_cqe_opcode(cqe->op_own);

	if (armed == 1)
		return true;
	return (cqe->op_own & 2) || opcode == GNIC_MLX5_CQE_REQ_ERR ||
	       opcode == GNIC_MLX5_CQE_RESP_ERR;
}

/* Is a CQE that would trigger this arm already waiting? seq_cst loads: see
 * gemu_req_notify_cq. */
static bool event_pending(struct emu_cq *cq, uint32_t ci, int armed)
{
	struct gnic_mlx5_cqe64 *cqe;

	for (uint32_t i = 0; i < cq->cqe_cnt && (cqe = cqe_ready(cq, ci + i, memory_order_seq_cst));
	     i++)
		if (cqe_wakes(cqe, armed))
			return true;
	return false;
}

/* Arm, then look for a CQE that already arrived: the engine writes a CQE,
 * then checks armed. With both sides' store-then-load seq_cst, at least one
 * of them sees the other's store, and the compare-exchange on armed makes
 * exactly one of them deliver the event. */
EMU_EXPORT int gemu_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct emu_cq *cq = to_ecq(ibcq);
	int armed = solicited_only ? 2 : 1;
	uint32_t cmd = solicited_only ? GNIC_MLX5_CQ_DB_REQ_NOT_SOL : GNIC_MLX5_CQ_DB_REQ_NOT;
	int expect = armed;
	bool notify;
	uint32_t ci;

	pthread_spin_lock(&cq->poll_lock);
	ci = current_ci(cq);
	__atomic_store_n(&cq->dbrec[1], gnic_be32(cmd | (ci & CQ_CI_MASK)), __ATOMIC_RELEASE);
	atomic_store(&cq->armed, armed);
	notify =
	    event_pending(cq, ci, armed) && atomic_compare_exchange_strong(&cq->armed, &expect, 0);
	pthread_spin_unlock(&cq->poll_lock);
	if (notify)
		emu_channel_notify(cq);
	return 0;
}

/* ---- clean ---------------------------------------------------------------- */

static bool is_responder(const struct gnic_mlx5_cqe64 *cqe)
{
	uint8_t opcode = gnic_mlx5_cqe_opcode(cqe->op_own);

	return opcode != GNIC_MLX5_CQE_REQ && opcode != GNIC_MLX5_CQE_REQ_ERR;
}

/* Remove QP qpn's unpolled CQEs by sliding the later CQEs of other QPs over
 * them (each keeps the owner bit of the slot it lands in), then advancing the
 * consumer index past the freed slots; the SRQ WQEs of the receive CQEs
 * removed go back to the SRQ, as mlx5's cq clean does. No worker writes
 * meanwhile (the CQ's write lock, emu_cq_clean). */
static uint32_t compact(struct emu_cq *cq, uint32_t qpn, struct emu_srq *srq, uint32_t pi)
{
	uint32_t mask = cq->cqe_cnt - 1, freed = 0;

	while (pi-- != cq->ci) {
		struct gnic_mlx5_cqe64 *src = &cq->buf[pi & mask], *dst;
		uint8_t owner;

		if (cqe_qpn(src) == qpn) {
			uint16_t idx = gnic_be16(src->wqe_counter);

			if (srq && is_responder(src) && idx < srq->wq.wqe_cnt)
				emu_srq_free_wqe(srq, idx);
			freed++;
			continue;
		}
		if (!freed)
			continue;
		dst = &cq->buf[(pi + freed) & mask];
		owner = !!((pi + freed) & cq->cqe_cnt);
		memcpy(dst, src, sizeof(*dst));
		dst->op_own = (uint8_t)((src->op_own & ~1) | owner);
	}
	return freed;
}

void emu_cq_clean(struct emu_cq *cq, uint32_t qpn, struct emu_srq *srq)
{
	uint32_t pi, freed;

	/* with mlx5dv the user owns ci: the ring is not ours to rewrite */
	if (!cq || cq->dv_owned)
		return;
	emu_cqe_lock(cq); /* QPs of other workers may write to it meanwhile */
	pthread_spin_lock(&cq->poll_lock);
	for (pi = cq->ci; pi - cq->ci < cq->cqe_cnt && emu_cq_next(cq, pi); pi++)
		;
	freed = compact(cq, qpn, srq, pi);
	if (freed) {
		cq->ci += freed;
		emu_cq_publish_ci(cq);
	}
	pthread_spin_unlock(&cq->poll_lock);
	emu_cqe_unlock(cq);
}
