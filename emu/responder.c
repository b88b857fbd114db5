/* SPDX-License-Identifier: MIT */
/*
 * The responder: executes requests against local memory and the RQ, in psn
 * order, and answers them.
 *
 * Checks happen before anything is written: a request that fails its key,
 * bounds or access check leaves target memory untouched. As on InfiniBand, an
 * access or length violation NAKs the requester and moves this QP to ERR (with
 * an affiliated async event); a missing receive only NAKs with RNR.
 *
 * GPU memory is moved by the worker's copy queue (dma.h): a request whose
 * data goes to or comes from GPU memory gets a job, and its receive CQE and
 * answer (ACK, READ response) are the job's, sent when its copies are done.
 * While a QP has such jobs, every later answer and CQE of it waits in the
 * queue too (a job of its own if need be), and so do its writes to host
 * memory and its atomics and READs on host memory: the requester never sees
 * an ACK before the data it covers landed, and the QP's requests still take
 * effect in order. A copy that fails ends the request as a failed access
 * would have, when the job retires; what the QP executed after it is flushed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "fabric.h"
#include "rc.h"
#include "dma.h"
#include "wqe.h"
#include "worker.h"

#define RQ_FLUSH_BURST 64
#define NEED_DATA      0x100 /* not a syndrome: the request's data is not here */

/* Atomics on memory the CPU cannot address (GPU memory, copied through
 * CUDA): a read-modify-write under this lock, so they are exact against
 * each other, whatever worker runs them (not against the GPU's own). */
static pthread_mutex_t staged_atomic_lock = PTHREAD_MUTEX_INITIALIZER;

/* What a request's job does when it retires, in this order: the receive
 * CQE, the atomic (host memory, deferred behind earlier writes), the
 * answer. On a failed copy: the violation (err_*) instead. */
struct resp_job {
	bool to_saved;
	struct emu_reply_saved to;
	struct emu_msg req; /* the request (a NAK answers it) */
	uint8_t err_nak;    /* a failed copy NAKs with this ... */
	uint8_t err_cqe;    /* ... and ends the receive with this syndrome (0: no CQE) */
	enum ibv_event_type err_ev;
	bool cqe;
	struct emu_cqe_info ci;
	uint8_t inl[GNIC_MLX5_SCATTER_32_MAX];
	const void *inl_src; /* scatter-to-CQE data still being copied, or NULL */
	struct emu_mr *atomic_mr;
	bool answer;
	struct emu_msg ans;
	const void *ans_data;
};

static void resp_job_done(struct emu_qp *qp, void *data, int err);

/* The job of the request being executed, made on first need. */
static struct resp_job *rjob_of(struct emu_qp *qp, struct emu_reply_path *to,
                                const struct emu_msg *req, struct emu_dma_job **jp)
{
	struct resp_job *r;

	if (!qp->resp.job) {
		qp->resp.job = emu_dma_job_new(qp, &qp->resp.dma_jobs, resp_job_done, sizeof(*r));
		if (!qp->resp.job)
			return NULL;
		r = emu_dma_job_data(qp->resp.job);
		r->err_nak = GNIC_MLX5_SYND_REMOTE_ACCESS;
		r->err_ev = IBV_EVENT_QP_ACCESS_ERR;
	}
	r = emu_dma_job_data(qp->resp.job);
	if (to && !r->to_saved) {
		emu_fabric_path_save(to, &r->to);
		r->to_saved = true;
	}
	if (req)
		r->req = *req;
	if (jp)
		*jp = qp->resp.job;
	return r;
}

/* The request's execution is over: its job (if any) joins the queue. */
static void rjob_end(struct emu_qp *qp)
{
	if (qp->resp.job)
		emu_dma_job_commit(qp->resp.job);
	qp->resp.job = NULL;
}

static bool payload_on_gpu(const struct emu_reply_path *from)
{
	return from && from->payload_mr && from->payload_mr->mem_type == EMU_MEM_CUDA;
}

/* Write n bytes of the request's payload (from off) to addr of mr: at once
 * between host memories of a QP without copies in flight, else through
 * the copy queue. 0 or -EIO (nothing written yet, or the job fails). */
static int land(struct emu_reply_path *from, struct emu_qp *qp, const struct emu_msg *m,
                struct emu_mr *mr, uint64_t addr, const void *payload, uint64_t off, uint64_t n)
{
	struct emu_dma_src src;
	struct emu_dma_job *j;

	if (mr->mem_type == EMU_MEM_HOST && !payload_on_gpu(from) && !emu_dma_qp_busy(qp))
		return emu_mem_write(mr, addr, (const uint8_t *)payload + off, n) ? -EIO : 0;
	src.mr = from ? from->payload_mr : NULL;
	src.p = (const uint8_t *)payload + off;
	if (!rjob_of(qp, from, m, &j))
		return -EIO;
	return emu_dma_put(j, mr, addr, &src, n) ? -EIO : 0;
}

/* ---- receive queue (the QP's RQ or its SRQ: recv.c) ------------------------- */

static bool rq_available(struct emu_qp *qp)
{
	struct emu_recv_wqe w;

	return emu_recv_peek(qp, &w);
}

/* Scatter a SEND's payload into the next receive WQE. A syndrome, or
 * NEED_DATA when the data is not there (nothing done). */
static int scatter_recv(struct emu_reply_path *from, struct emu_qp *qp, const struct emu_msg *m,
                        const uint8_t *data, uint64_t len)
{
	struct emu_recv_wqe w = {0};
	const struct gnic_mlx5_data_seg *seg = emu_recv_peek(qp, &w) ? w.seg : NULL;
	unsigned nseg = w.nseg;
	uint64_t room = 0, off = 0;

	for (unsigned i = 0; i < nseg && gnic_be32(seg[i].lkey) != GNIC_MLX5_INVALID_LKEY; i++)
		room += emu_seg_len(&seg[i]);
	if (len > room)
		return GNIC_MLX5_SYND_LOCAL_LENGTH;
	if (len && !data)
		return NEED_DATA;
	for (unsigned i = 0; i < nseg && off < len; i++) {
		uint64_t n = emu_seg_len(&seg[i]);
		struct emu_mr *mr;

		if (n > len - off)
			n = len - off;
		if (emu_mr_check(qp->pd, gnic_be32(seg[i].lkey), gnic_be64(seg[i].addr), n,
		                 IBV_ACCESS_LOCAL_WRITE, &mr) ||
		    land(from, qp, m, mr, gnic_be64(seg[i].addr), data, off, n))
			return GNIC_MLX5_SYND_LOCAL_PROT;
		off += n;
	}
	return GNIC_MLX5_SYND_OK;
}

static void cqe_write(struct emu_qp *qp, const struct emu_cqe_info *ci)
{
	emu_qp_cqe_write(qp, qp->rcq, ci, "receive CQ overrun");
}

/* The receive CQE; inl: a SEND's data scattered into it (inl_len bytes).
 * The receive WQE is taken now; the CQE waits behind the QP's copies. */
static void resp_cqe_inl(struct emu_qp *qp, uint8_t opcode, uint8_t synd, const struct emu_msg *m,
                         const void *inl, uint32_t inl_len)
{
	struct emu_cqe_info ci = {
	    .opcode = synd ? GNIC_MLX5_CQE_RESP_ERR : opcode,
	    .syndrome = synd,
	    .wqe_counter = emu_recv_take(qp),
	    .qpn = qp->ibqp.qp_num,
	    .byte_cnt = m ? m->len : 0,
	    .imm = m ? m->imm : 0,
	    .solicited = m && (m->flags & EMU_MSG_F_SOLICITED),
	    .inl = inl,
	    .inl_len = inl_len,
	};
	struct resp_job *r;

	if (emu_dma_qp_busy(qp) && (r = rjob_of(qp, NULL, NULL, NULL))) {
		r->cqe = true;
		r->ci = ci;
		r->ci.inl = NULL;
		if (inl_len)
			memcpy(r->inl, inl, inl_len);
		return;
	}
	cqe_write(qp, &ci);
}

static void resp_cqe(struct emu_qp *qp, uint8_t opcode, uint8_t synd, const struct emu_msg *m)
{
	resp_cqe_inl(qp, opcode, synd, m, NULL, 0);
}

/* ---- answers ------------------------------------------------------------- */

/* src: the host MR payload lies in, or NULL (emu_fabric_reply) */
static void answer_from(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *req,
                        uint8_t type, uint8_t synd, uint64_t operand, const void *payload,
                        uint32_t len, struct emu_mr *src)
{
	struct emu_msg m = {
	    .type = type,
	    .syndrome = synd,
	    .rnr_timer = qp->attr.min_rnr_timer,
	    .len = len,
	    .dst_qpn = req->src_qpn,
	    .src_qpn = qp->ibqp.qp_num,
	    .psn = req->psn,
	    .gid_type = qp->gid_type,
	    .operand = {operand, 0},
	};
	struct emu_dma_job *j;
	struct resp_job *r;

	if (emu_dma_qp_busy(qp) && (r = rjob_of(qp, to, req, &j))) {
		/* host data is read when the job retires, after the writes
		 * before it (src is held); other data is kept now */
		if (len && src && !emu_dma_hold(j, src))
			r->ans_data = payload;
		else if (len && payload != r->ans_data)
			r->ans_data = emu_dma_keep(j, payload, len);
		r->ans = m;
		r->answer = true;
		return;
	}
	emu_fabric_reply(to, &m, payload, src);
}

static void answer(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *req,
                   uint8_t type, uint8_t synd, uint64_t operand, const void *payload, uint32_t len)
{
	answer_from(to, qp, req, type, synd, operand, payload, len, NULL);
}

static void ack(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *req,
                uint32_t psn)
{
	struct emu_msg m = *req;

	m.psn = psn;
	answer(to, qp, &m, EMU_MSG_ACK, 0, 0, NULL, 0);
}

/* A violation: NAK the requester, then this QP goes to ERR as IB requires. */
static void fail(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *m,
                 uint8_t nak_synd, enum ibv_event_type ev_type)
{
	struct ibv_async_event ev = {.element.qp = &qp->ibqp, .event_type = ev_type};

	answer(to, qp, m, EMU_MSG_NAK, nak_synd, 0, NULL, 0);
	qp->last_err.syndrome = nak_synd;
	emu_qp_enter_error(qp, emu_syndrome_str(nak_synd));
	emu_async_event(qp->ctx, &ev);
}

/* ---- execution ------------------------------------------------------------ */

static int need_access(int type)
{
	switch (type) {
	case EMU_MSG_READ:
		return IBV_ACCESS_REMOTE_READ;
	case EMU_MSG_ATOMIC_CS:
	case EMU_MSG_ATOMIC_FA:
		return IBV_ACCESS_REMOTE_ATOMIC;
	default:
		return IBV_ACCESS_REMOTE_WRITE;
	}
}

/* The key, bounds, PD and access checks of a remote access. */
static struct emu_mr *target(struct emu_qp *qp, const struct emu_msg *m, uint64_t len)
{
	int access = need_access(m->type);
	struct emu_mr *mr;

	if (!(qp->attr.qp_access_flags & access))
		return NULL;
	if (emu_mr_check(qp->pd, m->rkey, m->raddr, len, access, &mr))
		return NULL;
	return mr;
}

/* A syndrome, or NEED_DATA when the checks pass but the data is not there
 * (nothing done). */
static int do_write(struct emu_reply_path *from, struct emu_qp *qp, const struct emu_msg *m,
                    const void *payload)
{
	struct emu_mr *mr;

	if (m->len == 0)
		return GNIC_MLX5_SYND_OK; /* zero-length writes check no key */
	mr = target(qp, m, m->len);
	if (!mr)
		return GNIC_MLX5_SYND_REMOTE_ACCESS;
	if (!payload)
		return NEED_DATA;
	if (land(from, qp, m, mr, m->raddr, payload, 0, m->len))
		return GNIC_MLX5_SYND_REMOTE_ACCESS;
	return GNIC_MLX5_SYND_OK;
}

static void do_read(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *m)
{
	uint64_t len = m->operand[0];
	const void *data = NULL;
	struct emu_mr *mr = NULL, *src = NULL;

	if (len > EMU_MAX_MSG_SIZE) {
		fail(to, qp, m, GNIC_MLX5_SYND_REMOTE_INVAL_REQ, IBV_EVENT_QP_REQ_ERR);
		return;
	}
	if (len) {
		mr = target(qp, m, len);
		if (!mr) {
			fail(to, qp, m, GNIC_MLX5_SYND_REMOTE_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
		data = emu_mem_host_ptr(mr, m->raddr);
		src = data ? mr : NULL;
	}
	if (len && !data) { /* device memory: the copy queue reads it */
		struct emu_dma_job *j;
		struct resp_job *r = rjob_of(qp, to, m, &j);

		if (!r) {
			fail(to, qp, m, GNIC_MLX5_SYND_REMOTE_OP, IBV_EVENT_QP_FATAL);
			return;
		}
		r->err_nak = GNIC_MLX5_SYND_REMOTE_OP;
		r->err_ev = IBV_EVENT_QP_FATAL;
		data = emu_dma_get(j, mr, m->raddr, len);
		r->ans_data = data; /* NULL: the job fails */
		if (!data)
			data = r; /* any non-NULL: never sent */
	}
	answer_from(to, qp, m, EMU_MSG_READ_RESP, 0, 0, data, (uint32_t)len, src);
}

/* Atomics are atomic against other atomics of this NIC, whichever worker
 * runs them, like hardware's, and use host byte order in memory: on host
 * memory real atomic instructions (so also against the CPU), elsewhere a
 * read-modify-write under staged_atomic_lock. */
static bool atomic_op(struct emu_mr *mr, const struct emu_msg *m, uint64_t *old)
{
	uint64_t *p = emu_mem_host_ptr(mr, m->raddr);
	uint64_t v;
	bool ok;

	if (p) {
		if (m->type == EMU_MSG_ATOMIC_FA) {
			*old = __atomic_fetch_add(p, m->operand[0], __ATOMIC_SEQ_CST);
		} else {
			*old = m->operand[1];
			__atomic_compare_exchange_n(p, old, m->operand[0], false, __ATOMIC_SEQ_CST,
			                            __ATOMIC_SEQ_CST);
		}
		return true;
	}
	pthread_mutex_lock(&staged_atomic_lock);
	ok = emu_mem_read(mr, m->raddr, &v, 8) == 0;
	if (ok) {
		*old = v;
		if (m->type == EMU_MSG_ATOMIC_FA)
			v += m->operand[0];
		else if (v == m->operand[1])
			v = m->operand[0];
		ok = emu_mem_write(mr, m->raddr, &v, 8) == 0;
	}
	pthread_mutex_unlock(&staged_atomic_lock);
	return ok;
}

static void do_atomic(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *m)
{
	struct emu_atomic_result *slot = &qp->resp.atomic_cache[m->psn % EMU_MAX_RD_ATOMIC];
	struct emu_mr *mr;
	uint64_t old;

	if (m->raddr % 8) {
		fail(to, qp, m, GNIC_MLX5_SYND_REMOTE_INVAL_REQ, IBV_EVENT_QP_REQ_ERR);
		return;
	}
	mr = target(qp, m, 8);
	if (mr && mr->mem_type == EMU_MEM_HOST && emu_dma_qp_busy(qp)) {
		struct emu_dma_job *j;
		struct resp_job *r = rjob_of(qp, to, m, &j);

		/* after the QP's writes before it have landed: when the job retires */
		if (r && !emu_dma_hold(j, mr)) {
			r->atomic_mr = mr;
			answer(to, qp, m, EMU_MSG_ATOMIC_RESP, 0, 0, NULL, 0);
			return;
		}
	}
	if (mr && mr->mem_type == EMU_MEM_CUDA)
		emu_dma_quiesce(qp->worker); /* copies queued before it land first */
	if (!mr || !atomic_op(mr, m, &old)) {
		fail(to, qp, m, GNIC_MLX5_SYND_REMOTE_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
		return;
	}
	slot->psn = m->psn;
	slot->old = old;
	answer(to, qp, m, EMU_MSG_ATOMIC_RESP, 0, old, NULL, 0);
}

/* SEND, SEND_IMM, WRITE_IMM: consume a receive. GNIC_MLX5_SYND_OK,
 * NEED_DATA (nothing done), or another syndrome: failed (answered). */
static int do_recv(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *m,
                   const void *payload)
{
	uint8_t opcode;
	int synd;

	if (m->type == EMU_MSG_WRITE_IMM) {
		synd = do_write(to, qp, m, payload);
		if (synd == NEED_DATA)
			return synd;
		if (synd) {
			fail(to, qp, m, (uint8_t)synd, IBV_EVENT_QP_ACCESS_ERR);
			return synd;
		}
		resp_cqe(qp, GNIC_MLX5_CQE_RESP_WR_IMM, 0, m);
		return GNIC_MLX5_SYND_OK;
	}
	opcode =
	    m->type == EMU_MSG_SEND_IMM ? GNIC_MLX5_CQE_RESP_SEND_IMM : GNIC_MLX5_CQE_RESP_SEND;
	/* scatter-to-CQE: the NIC leaves the receive buffer alone (no length or
	 * key check either: the provider's poll copies, and checks the length) */
	if (qp->scat_recv && m->len && m->len <= GNIC_MLX5_SCATTER_32_MAX) {
		if (!payload)
			return NEED_DATA;
		if (payload_on_gpu(to)) { /* the copy queue fetches it for the CQE */
			struct emu_dma_job *j;
			struct resp_job *r = rjob_of(qp, to, m, &j);

			if (!r)
				return GNIC_MLX5_SYND_LOCAL_PROT;
			r->err_nak = GNIC_MLX5_SYND_REMOTE_OP;
			r->err_cqe = GNIC_MLX5_SYND_LOCAL_PROT;
			r->err_ev = IBV_EVENT_QP_REQ_ERR;
			r->inl_src = emu_dma_get(
			    j, to->payload_mr,
			    to->payload_mr->iova + ((uintptr_t)payload - to->payload_mr->dev_base),
			    m->len);
			resp_cqe_inl(qp, opcode, 0, m, NULL, 0);
			r->ci.inl_len = m->len;
			return GNIC_MLX5_SYND_OK;
		}
		resp_cqe_inl(qp, opcode, 0, m, payload, m->len);
		return GNIC_MLX5_SYND_OK;
	}
	if (emu_dma_qp_busy(qp) || payload_on_gpu(to)) {
		struct resp_job *r = rjob_of(qp, to, m, NULL);

		if (r) { /* a failed copy: as a failed write into the receive */
			r->err_nak = GNIC_MLX5_SYND_REMOTE_OP;
			r->err_cqe = GNIC_MLX5_SYND_LOCAL_PROT;
			r->err_ev = IBV_EVENT_QP_REQ_ERR;
		}
	}
	synd = scatter_recv(to, qp, m, payload, m->len);
	if (synd == NEED_DATA)
		return synd;
	if (synd) {
		/* in ERR before the error CQE can be seen (fail() then NAKs) */
		emu_qp_enter_error(qp, emu_syndrome_str((uint8_t)synd));
		resp_cqe(qp, 0, (uint8_t)synd, m);
		fail(to, qp, m,
		     synd == GNIC_MLX5_SYND_LOCAL_LENGTH ? GNIC_MLX5_SYND_REMOTE_INVAL_REQ
		                                         : GNIC_MLX5_SYND_REMOTE_OP,
		     IBV_EVENT_QP_REQ_ERR);
		return synd;
	}
	resp_cqe(qp, opcode, 0, m);
	return GNIC_MLX5_SYND_OK;
}

/* false: the request needs its data, which is not here (nothing done). */
static bool execute(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *m,
                    const void *payload)
{
	int synd;

	switch (m->type) {
	case EMU_MSG_WRITE:
		synd = do_write(to, qp, m, payload);
		if (synd == NEED_DATA)
			return false;
		if (synd) {
			fail(to, qp, m, (uint8_t)synd, IBV_EVENT_QP_ACCESS_ERR);
			return true;
		}
		break;
	case EMU_MSG_WRITE_IMM:
	case EMU_MSG_SEND:
	case EMU_MSG_SEND_IMM:
		if (!rq_available(qp)) {
			answer(to, qp, m, EMU_MSG_RNR_NAK, 0, 0, NULL, 0);
			return true; /* psn_expected stays: later requests are dropped */
		}
		synd = do_recv(to, qp, m, payload);
		if (synd == NEED_DATA)
			return false;
		if (synd)
			return true;
		break;
	case EMU_MSG_READ:
		do_read(to, qp, m);
		break;
	case EMU_MSG_ATOMIC_CS:
	case EMU_MSG_ATOMIC_FA:
		do_atomic(to, qp, m);
		break;
	default: {
		static struct emu_log_limit limit;

		emu_warn_limited(&limit, "QP 0x%x: unknown request type %u dropped",
		                 qp->ibqp.qp_num, m->type);
		return true;
	}
	}
	if (atomic_load(&qp->state) == IBV_QPS_ERR)
		return true;
	qp->resp.psn_expected++;
	if ((m->flags & EMU_MSG_F_ACKREQ) && m->type != EMU_MSG_READ &&
	    m->type != EMU_MSG_ATOMIC_CS && m->type != EMU_MSG_ATOMIC_FA)
		ack(to, qp, m, m->psn);
	return true;
}

/* A request we already executed (its answer was lost or is late). */
static void duplicate(struct emu_reply_path *to, struct emu_qp *qp, const struct emu_msg *m)
{
	const struct emu_atomic_result *slot = &qp->resp.atomic_cache[m->psn % EMU_MAX_RD_ATOMIC];

	switch (m->type) {
	case EMU_MSG_READ:
		do_read(to, qp, m); /* reads are safe to repeat */
		break;
	case EMU_MSG_ATOMIC_CS:
	case EMU_MSG_ATOMIC_FA:
		if (slot->psn == m->psn) /* never execute an atomic twice */
			answer(to, qp, m, EMU_MSG_ATOMIC_RESP, 0, slot->old, NULL, 0);
		break;
	default:
		ack(to, qp, m, qp->resp.psn_expected - 1);
		break;
	}
}

/* Did the request come from the device the QP's destination GID names? */
static bool from_peer(const struct emu_reply_path *from, const struct emu_qp *qp)
{
	return qp->peer_id_ok && !memcmp(from->peer_gid, &qp->peer_id, sizeof(qp->peer_id));
}

bool emu_responder_on_request(struct emu_qp *qp, struct emu_reply_path *from,
                              const struct emu_msg *m, const void *payload)
{
	int state = atomic_load(&qp->state);
	int32_t d;
	bool ret;

	emu_dbg("QP 0x%x: request type %u psn %u len %u from QP 0x%x", m->dst_qpn, m->type, m->psn,
	        m->len, m->src_qpn);
	/* Like a wire: requests for a QP that is not ready are dropped. */
	if (state != IBV_QPS_RTR && state != IBV_QPS_RTS) {
		emu_dbg("request for QP 0x%x (state %d) dropped", m->dst_qpn, state);
		return true;
	}
	if (m->src_qpn != qp->dest_qpn || !from_peer(from, qp)) {
		static struct emu_log_limit limit;

		emu_warn_limited(&limit,
		                 "QP 0x%x: request from QP 0x%x of another peer dropped (connected "
		                 "to QP 0x%x)",
		                 qp->ibqp.qp_num, m->src_qpn, qp->dest_qpn);
		return true;
	}
	if (m->gid_type != qp->gid_type) { /* a RoCE v1 frame at a v2 QP, or back */
		static struct emu_log_limit limit;

		emu_warn_limited(&limit,
		                 "QP 0x%x: request of GID type %u dropped: this QP's source GID is "
		                 "of type %u (RoCE v1 and v2 do not meet)",
		                 qp->ibqp.qp_num, m->gid_type, qp->gid_type);
		return true;
	}
	d = (int32_t)(m->psn - qp->resp.psn_expected);
	if (d > 0) { /* out of sequence (after an RNR NAK): the requester resends */
		emu_dbg("QP 0x%x: request psn %u dropped: expected psn %u", qp->ibqp.qp_num, m->psn,
		        qp->resp.psn_expected);
		return true;
	}
	if (d < 0) {
		duplicate(from, qp, m); /* never needs the data */
		rjob_end(qp);
		return true;
	}
	ret = execute(from, qp, m, payload);
	rjob_end(qp);
	return ret;
}

/* The host address a large request's data may be received straight into
 * (qp_ops.h's land_dest): a WRITE's target, or a SEND's receive buffer when
 * its first scatter entry holds all of it (no SRQ: another QP could take
 * that WQE meanwhile). Only for the request expected next, from the peer
 * (checked with its header), on host memory with no copies in flight at
 * the start; the checks are those execute() makes, so where this gives
 * NULL the request takes the buffered path with its error semantics. */
void *emu_responder_land_dest(struct emu_qp *qp, const struct emu_msg *m, bool start)
{
	int state = atomic_load(&qp->state);
	struct emu_recv_wqe w = {0};
	struct emu_mr *mr;
	uint64_t addr;

	if ((state != IBV_QPS_RTR && state != IBV_QPS_RTS) || m->psn != qp->resp.psn_expected ||
	    m->src_qpn != qp->dest_qpn || !m->len)
		return NULL;
	if (start && emu_dma_qp_busy(qp))
		return NULL;
	switch (m->type) {
	case EMU_MSG_WRITE:
	case EMU_MSG_WRITE_IMM:
		mr = target(qp, m, m->len);
		addr = m->raddr;
		break;
	case EMU_MSG_SEND:
	case EMU_MSG_SEND_IMM:
		if (qp->srq || !emu_recv_peek(qp, &w) || !w.nseg ||
		    gnic_be32(w.seg[0].lkey) == GNIC_MLX5_INVALID_LKEY ||
		    emu_seg_len(&w.seg[0]) < m->len)
			return NULL;
		addr = gnic_be64(w.seg[0].addr);
		if (emu_mr_check(qp->pd, gnic_be32(w.seg[0].lkey), addr, m->len,
		                 IBV_ACCESS_LOCAL_WRITE, &mr))
			mr = NULL;
		break;
	default:
		return NULL;
	}
	if (m->type != EMU_MSG_WRITE && !rq_available(qp))
		return NULL;
	return mr ? emu_mem_host_ptr(mr, addr) : NULL;
}

/* A QP of an SRQ in ERR consumes no more of the SRQ's WQEs (their WQEs are
 * not flushed: they belong to the SRQ): the NIC says so once, with
 * IBV_EVENT_QP_LAST_WQE_REACHED (mlx5's SRQ_LAST_WQE event), after the CQE
 * of the last WQE it took. This runs in the first pass that sees the QP in
 * ERR, so after whatever CQE the pass that moved it there wrote. */
static int srq_last_wqe(struct emu_qp *qp)
{
	struct ibv_async_event ev = {.element.qp = &qp->ibqp,
	                             .event_type = IBV_EVENT_QP_LAST_WQE_REACHED};

	if (qp->resp.last_wqe_reached)
		return 0;
	qp->resp.last_wqe_reached = true;
	emu_async_event(qp->ctx, &ev);
	return 1;
}

int emu_responder_progress(struct emu_qp *qp)
{
	int work = 0;

	if (qp->resp.dma_jobs)
		return 0; /* the CQEs of copies in flight come first */
	if (qp->srq)
		return srq_last_wqe(qp);
	if (!qp->rq.wqe_cnt)
		return 0;
	while (work < RQ_FLUSH_BURST && rq_available(qp)) {
		resp_cqe(qp, 0, GNIC_MLX5_SYND_WR_FLUSH, NULL);
		work++;
	}
	return work;
}

/* ---- jobs (dma.h) ------------------------------------------------------------ */

static void job_atomic(struct emu_qp *qp, struct resp_job *r)
{
	struct emu_atomic_result *slot = &qp->resp.atomic_cache[r->req.psn % EMU_MAX_RD_ATOMIC];
	uint64_t old = 0;

	if (!atomic_op(r->atomic_mr, &r->req, &old)) {
		r->answer = false;
		r->err_nak = GNIC_MLX5_SYND_REMOTE_ACCESS;
		r->err_ev = IBV_EVENT_QP_ACCESS_ERR;
		return;
	}
	slot->psn = r->req.psn;
	slot->old = old;
	r->ans.operand[0] = old;
}

/* A failed copy, or a job after one: the QP ends as a failed access would
 * have ended it at this request, and what it executed later is flushed. */
static void job_failed(struct emu_qp *qp, struct resp_job *r)
{
	struct ibv_async_event ev = {.element.qp = &qp->ibqp, .event_type = r->err_ev};
	struct emu_msg nak = {
	    .type = EMU_MSG_NAK,
	    .syndrome = r->err_nak,
	    .dst_qpn = r->req.src_qpn,
	    .src_qpn = qp->ibqp.qp_num,
	    .psn = r->req.psn,
	    .gid_type = qp->gid_type,
	};

	if (qp->resp.dma_failed) {
		if (r->cqe) {
			r->ci.opcode = GNIC_MLX5_CQE_RESP_ERR;
			r->ci.syndrome = GNIC_MLX5_SYND_WR_FLUSH;
			r->ci.inl_len = 0;
			cqe_write(qp, &r->ci);
		}
		return;
	}
	qp->resp.dma_failed = true;
	qp->last_err.syndrome = r->err_nak;
	emu_qp_enter_error(qp, emu_syndrome_str(r->err_nak));
	if (r->cqe && r->err_cqe) {
		r->ci.opcode = GNIC_MLX5_CQE_RESP_ERR;
		r->ci.syndrome = r->err_cqe;
		r->ci.inl_len = 0;
		cqe_write(qp, &r->ci);
	}
	if (r->to_saved)
		emu_fabric_reply_saved(&r->to, &nak, NULL);
	emu_async_event(qp->ctx, &ev);
}

static void resp_job_done(struct emu_qp *qp, void *data, int err)
{
	struct resp_job *r = data;

	if (!qp)
		return; /* destroyed or reset meanwhile */
	if (!err && !qp->resp.dma_failed && r->atomic_mr)
		job_atomic(qp, r);
	if (err || qp->resp.dma_failed || (r->atomic_mr && !r->answer)) {
		job_failed(qp, r);
		return;
	}
	if (r->cqe) {
		if (r->ci.inl_len)
			r->ci.inl = r->inl_src ? r->inl_src : r->inl;
		cqe_write(qp, &r->ci);
	}
	if (r->answer && r->to_saved)
		emu_fabric_reply_saved(&r->to, &r->ans, r->ans_data);
}

void emu_responder_reset(struct emu_qp *qp)
{
	qp->resp.rq_ci = 0;
	qp->resp.psn_expected = 0;
	qp->resp.last_wqe_reached = false;
	memset(qp->resp.atomic_cache, 0xff, sizeof(qp->resp.atomic_cache));
}
