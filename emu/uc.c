/* SPDX-License-Identifier: MIT */
/*
 * UC, the unreliable connected QP type: its table of engine operations
 * (qp_ops.h) over the unreliable send queue of unrel.c.
 *
 * Connected like RC (the path and destination QP are set at RTR and the
 * fabric attaches there), but without acknowledgements: SEND, SEND_IMM,
 * RDMA_WRITE and RDMA_WRITE_IMM complete once sent, and nothing is ever
 * retransmitted. READ and atomics, which rdma-core's mlx5 posts for a UC QP
 * as it would for RC, complete with LOC_QP_OP_ERR, as the NIC answers them.
 *
 * The responder takes messages in sequence number order; each message is
 * whole (a first and last packet at once), so after a gap (a message lost)
 * the next one is taken and the lost one is gone. A duplicate or stale
 * message, one for a QP not ready, a WRITE that fails its key, bounds or
 * access check, a SEND or WRITE_IMM that finds no receive posted: each is
 * dropped silently, and the sender never learns of it. A SEND that does not
 * fit its receive buffer completes that receive with LOC_LEN_ERR.
 */
#include <errno.h>
#include <string.h>

#include "fabric.h"
#include "rc.h"
#include "unrel.h"

static uint8_t msg_type(uint8_t opcode)
{
	switch (opcode) {
	case GNIC_MLX5_OPCODE_RDMA_WRITE:
		return EMU_MSG_WRITE;
	case GNIC_MLX5_OPCODE_RDMA_WRITE_IMM:
		return EMU_MSG_WRITE_IMM;
	case GNIC_MLX5_OPCODE_SEND:
		return EMU_MSG_SEND;
	case GNIC_MLX5_OPCODE_SEND_IMM:
		return EMU_MSG_SEND_IMM;
	default:
		return 0; /* READ, atomics, and what UC has not */
	}
}

static bool is_write(uint8_t type)
{
	return type == EMU_MSG_WRITE || type == EMU_MSG_WRITE_IMM;
}

/* ---- send -------------------------------------------------------------------- */

static int uc_send(struct emu_qp *qp, struct emu_wqe *w)
{
	uint8_t type = msg_type(w->opcode), synd;
	unsigned off = sizeof(struct gnic_mlx5_ctrl_seg);
	struct emu_msg m = {.type = type,
	                    .dst_qpn = qp->dest_qpn,
	                    .src_qpn = qp->ibqp.qp_num,
	                    .imm = w->imm,
	                    .gid_type = qp->gid_type};
	const void *payload;
	struct emu_mr *src;
	struct emu_sgl s;
	int ret;

	if (!type || w->opmod)
		return GNIC_MLX5_SYND_LOCAL_QP_OP;
	if (is_write(type)) {
		const struct gnic_mlx5_raddr_seg *r = (const void *)(w->bytes + off);

		m.raddr = gnic_be64(r->raddr);
		m.rkey = gnic_be32(r->rkey);
		off += sizeof(*r);
	}
	if (off > w->ds * 16u || !emu_wqe_parse_sgl(w, off, &s))
		return GNIC_MLX5_SYND_LOCAL_QP_OP;
	synd = emu_requester_check_sgl(qp, &s, 0);
	if (synd)
		return synd;
	payload = emu_requester_gather(qp, &s, &src);
	if (!payload)
		return GNIC_MLX5_SYND_LOCAL_PROT;
	m.len = (uint32_t)s.len;
	m.psn = qp->req.psn_next & 0xffffff;
	if (w->fm_ce_se & GNIC_MLX5_CTRL_SOLICITED)
		m.flags |= EMU_MSG_F_SOLICITED;
	ret = emu_fabric_send(qp, &m, payload, src);
	emu_dbg("QP 0x%x: WQE %u psn %u type %u sent (%d)", qp->ibqp.qp_num, w->idx, m.psn, type,
	        ret);
	if (ret == -EAGAIN)
		return -EAGAIN;
	qp->req.psn_next++; /* sent or lost: either way the next one follows */
	return GNIC_MLX5_SYND_OK;
}

/* ---- receive ------------------------------------------------------------------ */

/* Did the message come from the device the QP's destination GID names? */
static bool from_peer(const struct emu_reply_path *from, const struct emu_qp *qp)
{
	union ibv_gid id;

	return !emu_gid_identity(&qp->dgid, &id) && !memcmp(from->peer_gid, &id, sizeof(id));
}

/* The WRITE's target memory, or NULL when its checks fail. */
static struct emu_mr *write_target(struct emu_qp *qp, const struct emu_msg *m)
{
	struct emu_mr *mr;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE) ||
	    emu_mr_check(qp->pd, m->rkey, m->raddr, m->len, IBV_ACCESS_REMOTE_WRITE, &mr))
		return NULL;
	return mr;
}

/* The receive a SEND or WRITE_IMM consumes (it was peeked). */
static void recv_done(struct emu_qp *qp, const struct emu_msg *m, const struct emu_recv_wqe *w,
                      const void *payload)
{
	struct emu_cqe_info ci = {
	    .opcode = m->type == EMU_MSG_WRITE_IMM  ? GNIC_MLX5_CQE_RESP_WR_IMM
	              : m->type == EMU_MSG_SEND_IMM ? GNIC_MLX5_CQE_RESP_SEND_IMM
	                                            : GNIC_MLX5_CQE_RESP_SEND,
	    .byte_cnt = m->len,
	    .imm = m->imm,
	    .solicited = (m->flags & EMU_MSG_F_SOLICITED) != 0,
	};

	if (m->type != EMU_MSG_WRITE_IMM) {
		/* scatter-to-CQE, as for RC: small data in the CQE, not memory */
		if (qp->scat_recv && m->len && m->len <= GNIC_MLX5_SCATTER_32_MAX) {
			ci.inl = payload;
			ci.inl_len = m->len;
		} else {
			ci.syndrome = emu_unrel_scatter(qp, w, NULL, 0, payload, m->len);
		}
	}
	emu_unrel_recv_cqe(qp, &ci);
}

/* false: it needs its data, which is not here (nothing done). */
static bool execute(struct emu_qp *qp, const struct emu_msg *m, const void *payload)
{
	struct emu_recv_wqe w;
	struct emu_mr *mr = NULL;

	if (is_write(m->type) && m->len && !(mr = write_target(qp, m))) {
		emu_dbg("QP 0x%x: WRITE psn %u dropped: remote access check", qp->ibqp.qp_num,
		        m->psn);
		return true;
	}
	if (m->type != EMU_MSG_WRITE && !emu_recv_peek(qp, &w)) {
		emu_dbg("QP 0x%x: message psn %u dropped: no receive posted", qp->ibqp.qp_num,
		        m->psn);
		return true;
	}
	if (m->len && !payload)
		return false;
	if (mr && emu_mem_write(mr, m->raddr, payload, m->len))
		return true;
	if (m->type != EMU_MSG_WRITE)
		recv_done(qp, m, &w, payload);
	return true;
}

static bool uc_on_request(struct emu_qp *qp, struct emu_reply_path *from, const struct emu_msg *m,
                          const void *payload)
{
	int state = atomic_load(&qp->state);
	int32_t d;

	if ((state != IBV_QPS_RTR && state != IBV_QPS_RTS) ||
	    !(is_write(m->type) || m->type == EMU_MSG_SEND || m->type == EMU_MSG_SEND_IMM) ||
	    m->src_qpn != qp->dest_qpn || !from_peer(from, qp) || m->gid_type != qp->gid_type) {
		emu_dbg("QP 0x%x: message type %u psn %u from QP 0x%x dropped", qp->ibqp.qp_num,
		        m->type, m->psn, m->src_qpn);
		return true;
	}
	/* 24-bit sequence numbers: behind (a stale copy) is dropped */
	d = (int32_t)((m->psn - qp->resp.psn_expected) << 8) >> 8;
	if (d < 0)
		return true;
	if (!execute(qp, m, payload))
		return false;
	if (d > 0)
		emu_dbg("QP 0x%x: psn %u after a gap (expected %u): the messages between are lost",
		        qp->ibqp.qp_num, m->psn, qp->resp.psn_expected);
	qp->resp.psn_expected = (m->psn + 1) & 0xffffff;
	return true;
}

static bool uc_on_response(struct emu_qp *qp, const struct emu_msg *m, const void *payload)
{
	(void)qp, (void)m, (void)payload;
	return true; /* UC has no responses: a stray one */
}

/* ---- life cycle ---------------------------------------------------------------- */

static int uc_add(struct emu_qp *qp)
{
	emu_unrel_reset(qp);
	return 0;
}

static void uc_remove(struct emu_qp *qp)
{
	emu_fabric_detach(qp);
}

static void uc_state_change(struct emu_qp *qp, enum ibv_qp_state old_state)
{
	switch (atomic_load(&qp->state)) {
	case IBV_QPS_RESET:
		emu_fabric_detach(qp);
		emu_unrel_reset(qp);
		break;
	case IBV_QPS_RTR:
		if (old_state != IBV_QPS_INIT)
			break;
		emu_qp_connected_rtr(qp, "messages", "will be lost");
		break;
	case IBV_QPS_RTS:
		if (old_state == IBV_QPS_RTR)
			qp->req.psn_next = qp->attr.sq_psn & 0xffffff;
		break;
	default:
		break;
	}
}

static int uc_progress(struct emu_qp *qp, uint64_t now)
{
	(void)now;
	return emu_unrel_progress(qp, uc_send);
}

const struct emu_qp_ops emu_uc_qp_ops = {
    .add = uc_add,
    .remove = uc_remove,
    .state_change = uc_state_change,
    .progress = uc_progress,
    .on_request = uc_on_request,
    .on_response = uc_on_response,
};
