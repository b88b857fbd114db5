/* SPDX-License-Identifier: MIT */
/*
 * UD, the unreliable datagram QP type: its table of engine operations
 * (qp_ops.h) over the unreliable send queue of unrel.c.
 *
 * A send WQE is ctrl + datagram segment (mlx5's address vector, av.h) +
 * data or inline segments, as rdma-core's mlx5 writes it; only SEND and
 * SEND_IMM exist (anything else completes with LOC_QP_OP_ERR, as the NIC
 * answers what rdma-core posts for it). The message goes to QP dqp_dct of
 * the device the AV names (its GID on RoCE, its DLID on InfiniBand), at most
 * one port MTU (4096 bytes) long, else LOC_LEN_ERR; it completes once sent.
 * A Q_Key with the high bit set means the QP's own Q_Key.
 *
 * The datagram carries the network header the wire would: the GRH of RoCE
 * v1 and InfiniBand, the IPv6 header of RoCE v2 over an IPv6 GID, or 20
 * zero bytes and the IPv4 header of RoCE v2 over an IPv4 GID. The receiver
 * writes those 40 bytes at the start of the receive buffer (on RoCE always,
 * on InfiniBand when the sender sent a GRH), counts them in the CQE's byte
 * count and sets its GRH flag, the sender's QPN, SL and LID. A datagram
 * with the wrong Q_Key, for a QP not ready to receive, or that finds no
 * receive posted is dropped without a trace; one that does not fit the
 * receive buffer completes that receive with LOC_LEN_ERR.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "av.h"
#include "fabric.h"
#include "rc.h"
#include "unrel.h"
#include "worker.h"

#define UD_MTU       4096u /* the port's active MTU (device.c) */
#define DGRAM_OFF    (sizeof(struct gnic_mlx5_ctrl_seg))
#define DATA_OFF     (DGRAM_OFF + sizeof(struct emu_mlx5_av))
#define BTH_DETH     20u /* transport headers after the GRH, */
#define ICRC         4u  /* and the trailer: for the headers' lengths */
#define IPPROTO_UDP_ 17
#define NEXT_HDR_BTH 0x1b
#define IP_DONT_FRAG 0x4000

/* ---- the network header ---------------------------------------------------- */

static bool gid_is_v4(const uint8_t *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g, prefix, sizeof(prefix));
}

static uint16_t ipv4_csum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

struct ud_route {
	uint8_t sgid[16], dgid[16];
	uint8_t tclass, hop_limit, sl;
	uint32_t flow;
	enum ibv_gid_type type;
};

/* The bytes after the network header: BTH + DETH [+ ImmDt] + data, padded
 * to 4, + ICRC. */
static uint32_t transport_len(uint32_t len, bool imm)
{
	return BTH_DETH + (imm ? 4u : 0u) + ((len + 3u) & ~3u) + ICRC;
}

/* The 40 header bytes; the EMU_CQE_L3_* type of what they hold. */
static uint8_t build_header(const struct ud_route *r, uint32_t len, bool imm, uint8_t *h)
{
	uint32_t tl = transport_len(len, imm), vtf = 6u << 28 | (uint32_t)r->tclass << 20 | r->flow;
	uint16_t v;

	memset(h, 0, EMU_GRH_BYTES);
	if (r->type == IBV_GID_TYPE_ROCE_V2 && gid_is_v4(r->sgid)) {
		uint8_t *ip = h + 20;

		ip[0] = 0x45;
		ip[1] = r->tclass;
		v = htons((uint16_t)(20 + 8 + tl));
		memcpy(ip + 2, &v, 2);
		v = htons(IP_DONT_FRAG);
		memcpy(ip + 6, &v, 2);
		ip[8] = r->hop_limit;
		ip[9] = IPPROTO_UDP_;
		memcpy(ip + 12, r->sgid + 12, 4);
		memcpy(ip + 16, r->dgid + 12, 4);
		v = htons(ipv4_csum(ip));
		memcpy(ip + 10, &v, 2);
		return EMU_CQE_L3_IPV4;
	}
	vtf = htonl(vtf);
	memcpy(h, &vtf, 4);
	if (r->type == IBV_GID_TYPE_ROCE_V2) { /* IPv6 + UDP */
		v = htons((uint16_t)(8 + tl));
		h[6] = IPPROTO_UDP_;
	} else {
		v = htons((uint16_t)tl);
		h[6] = NEXT_HDR_BTH;
	}
	memcpy(h + 4, &v, 2);
	h[7] = r->hop_limit;
	memcpy(h + 8, r->sgid, 16);
	memcpy(h + 24, r->dgid, 16);
	return r->type == IBV_GID_TYPE_ROCE_V2 ? EMU_CQE_L3_IPV6 : 0;
}

/* ---- send -------------------------------------------------------------------- */

/* The AV's path: where it routes (dest), whether a GRH goes out, and the
 * header's fields. A syndrome for an AV the port cannot send on. */
static uint8_t decode_av(struct emu_qp *qp, const struct emu_mlx5_av *av, union ibv_gid *dest,
                         bool *grh, struct ud_route *r)
{
	uint32_t gf = gnic_be32(av->grh_gid_fl);
	union ibv_gid sgid;

	memset(r, 0, sizeof(*r));
	*grh = emu_cfg.link_ib ? (gf & EMU_AV_GRH) != 0 : true;
	if (emu_cfg.link_ib) {
		emu_lid_identity(qp->ctx->dev, gnic_be16(av->rlid), dest);
		r->sl = av->stat_rate_sl & 0xf;
	} else {
		memcpy(dest->raw, av->rgid, 16);
		r->sl = (av->stat_rate_sl >> 1) & 0x7;
	}
	if (!*grh)
		return GNIC_MLX5_SYND_OK;
	r->type = IBV_GID_TYPE_IB;
	if (emu_gid_entry(qp->ctx->dev, (gf >> 20) & 0xff, &sgid, &r->type))
		return GNIC_MLX5_SYND_LOCAL_QP_OP; /* no such source GID */
	memcpy(r->sgid, sgid.raw, 16);
	memcpy(r->dgid, av->rgid, 16);
	r->tclass = av->tclass;
	r->hop_limit = av->hop_limit;
	r->flow = gf & EMU_AV_FLOW_MASK;
	return GNIC_MLX5_SYND_OK;
}

/* Header room + the data, gathered into the worker's stage scratch. */
static uint8_t *gather(struct emu_qp *qp, const struct emu_sgl *s)
{
	uint8_t *buf = emu_scratch_get(&qp->worker->stage, EMU_GRH_BYTES + s->len);
	uint64_t off = EMU_GRH_BYTES;

	if (!buf)
		return NULL;
	if (s->inl) {
		memcpy(buf + off, s->inl, s->len);
		return buf;
	}
	for (int i = 0; i < s->n; i++) {
		struct emu_mr *mr = emu_mr_lookup(gnic_be32(s->seg[i]->lkey));
		uint32_t len = emu_seg_len(s->seg[i]);

		if (!mr || emu_mem_read(mr, gnic_be64(s->seg[i]->addr), buf + off, len))
			return NULL;
		off += len;
	}
	return buf;
}

static int ud_send(struct emu_qp *qp, struct emu_wqe *w)
{
	const struct emu_mlx5_av *av = (const struct emu_mlx5_av *)(w->bytes + DGRAM_OFF);
	bool imm = w->opcode == GNIC_MLX5_OPCODE_SEND_IMM, grh;
	struct emu_msg m = {.type = imm ? EMU_MSG_UD_SEND_IMM : EMU_MSG_UD_SEND,
	                    .src_qpn = qp->ibqp.qp_num,
	                    .imm = imm ? w->imm : 0};
	uint32_t dqp = gnic_be32(av->dqp_dct), qkey = gnic_be32(av->qkey);
	union ibv_gid dest;
	struct ud_route r;
	struct emu_sgl s;
	uint8_t synd, l3 = 0, *buf;
	int ret;

	if ((w->opcode != GNIC_MLX5_OPCODE_SEND && !imm) || w->opmod || w->ds * 16u < DATA_OFF ||
	    !(dqp & EMU_AV_EXTENDED) || !emu_wqe_parse_sgl(w, DATA_OFF, &s))
		return GNIC_MLX5_SYND_LOCAL_QP_OP;
	synd = emu_requester_check_sgl(qp, &s, 0);
	if (synd)
		return synd;
	if (s.len > UD_MTU)
		return GNIC_MLX5_SYND_LOCAL_LENGTH;
	synd = decode_av(qp, av, &dest, &grh, &r);
	if (synd)
		return synd;
	buf = gather(qp, &s);
	if (!buf)
		return GNIC_MLX5_SYND_LOCAL_PROT;
	if (grh)
		l3 = build_header(&r, (uint32_t)s.len, imm, buf);
	m.dst_qpn = dqp & 0xffffff;
	m.rkey = qkey & EMU_QKEY_PRIVILEGED ? qp->attr.qkey : qkey;
	m.len = (uint32_t)s.len + (grh ? EMU_GRH_BYTES : 0);
	m.gid_type = (uint8_t)r.type;
	m.raddr = (grh ? EMU_UD_F_GRH : 0) | (uint64_t)r.sl << EMU_UD_SL_SHIFT |
	          (uint64_t)(uint16_t)(emu_device_lid(qp->ctx->dev) | (av->fl_mlid & 0x7f))
	              << EMU_UD_SLID_SHIFT |
	          (uint64_t)l3 << EMU_UD_L3_SHIFT;
	if (w->fm_ce_se & GNIC_MLX5_CTRL_SOLICITED)
		m.flags |= EMU_MSG_F_SOLICITED;
	ret = emu_fabric_send_dgram(qp, &dest, &m, grh ? buf : buf + EMU_GRH_BYTES, NULL);
	emu_dbg("QP 0x%x: WQE %u: datagram of %u bytes to QP 0x%x (%d)", qp->ibqp.qp_num, w->idx,
	        m.len, m.dst_qpn, ret);
	if (ret == -EAGAIN)
		return -EAGAIN;
	return GNIC_MLX5_SYND_OK; /* delivered, or lost on the way */
}

/* ---- receive ---------------------------------------------------------------- */

static bool ud_on_request(struct emu_qp *qp, struct emu_reply_path *from, const struct emu_msg *m,
                          const void *payload)
{
	int state = atomic_load(&qp->state);
	bool grh = (m->raddr & EMU_UD_F_GRH) != 0, write_hdr = grh || !emu_cfg.link_ib;
	static const uint8_t zero_hdr[EMU_GRH_BYTES];
	uint32_t hdr_len = grh ? EMU_GRH_BYTES : 0, data_len;
	struct emu_cqe_info ci = {0};
	struct emu_recv_wqe w;
	const uint8_t *p = payload;

	(void)from;
	if (m->type != EMU_MSG_UD_SEND && m->type != EMU_MSG_UD_SEND_IMM)
		return true; /* a connected type's request: not for a UD QP */
	if ((state != IBV_QPS_RTR && state != IBV_QPS_RTS) || m->rkey != qp->attr.qkey ||
	    m->len < hdr_len || m->len - hdr_len > UD_MTU) {
		emu_dbg("QP 0x%x: datagram from QP 0x%x dropped (state %d, Q_Key 0x%x, ours 0x%x)",
		        qp->ibqp.qp_num, m->src_qpn, state, m->rkey, qp->attr.qkey);
		return true;
	}
	if (m->len && !payload)
		return false; /* a datagram is small: the fabric brings it whole */
	if (!emu_recv_peek(qp, &w)) {
		emu_dbg("QP 0x%x: datagram from QP 0x%x dropped: no receive posted",
		        qp->ibqp.qp_num, m->src_qpn);
		return true;
	}
	data_len = m->len - hdr_len;
	ci.opcode =
	    m->type == EMU_MSG_UD_SEND_IMM ? GNIC_MLX5_CQE_RESP_SEND_IMM : GNIC_MLX5_CQE_RESP_SEND;
	ci.imm = m->imm;
	ci.solicited = (m->flags & EMU_MSG_F_SOLICITED) != 0;
	ci.byte_cnt = data_len + (write_hdr ? EMU_GRH_BYTES : 0);
	ci.syndrome = emu_unrel_scatter(qp, &w, grh ? p : zero_hdr, write_hdr ? EMU_GRH_BYTES : 0,
	                                p + hdr_len, data_len);
	ci.flags_rqpn = (write_hdr ? EMU_CQE_RQPN_GRH : 0) |
	                (uint32_t)((m->raddr >> EMU_UD_SL_SHIFT) & 0xf) << 24 |
	                (m->src_qpn & 0xffffff);
	ci.slid = emu_cfg.link_ib ? (uint16_t)(m->raddr >> EMU_UD_SLID_SHIFT) : 0;
	ci.l3_hdr_type = (uint8_t)((m->raddr >> EMU_UD_L3_SHIFT) & 3);
	emu_unrel_recv_cqe(qp, &ci);
	return true;
}

static bool ud_on_response(struct emu_qp *qp, const struct emu_msg *m, const void *payload)
{
	(void)qp, (void)m, (void)payload;
	return true; /* nothing answers a datagram: a stray response */
}

/* ---- life cycle ---------------------------------------------------------------- */

static int ud_add(struct emu_qp *qp)
{
	emu_unrel_reset(qp);
	return 0;
}

static void ud_remove(struct emu_qp *qp)
{
	emu_fabric_dgram_release(qp);
}

static void ud_state_change(struct emu_qp *qp, enum ibv_qp_state old_state)
{
	(void)old_state;
	if (atomic_load(&qp->state) == IBV_QPS_RESET) {
		emu_fabric_dgram_release(qp);
		emu_unrel_reset(qp);
	}
}

static int ud_progress(struct emu_qp *qp, uint64_t now)
{
	(void)now;
	return emu_unrel_progress(qp, ud_send);
}

const struct emu_qp_ops emu_ud_qp_ops = {
    .add = ud_add,
    .remove = ud_remove,
    .state_change = ud_state_change,
    .progress = ud_progress,
    .on_request = ud_on_request,
    .on_response = ud_on_response,
};
