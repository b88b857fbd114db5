/* SPDX-License-Identifier: MIT */
/*
 * The PRM command decoder: the kernel's checks of a DEVX call (which method
 * may carry which opcode, mailbox minimums, the object a command names),
 * then the firmware's (mailbox lengths per command), then the command.
 * Handlers read a zero-padded copy of the inbox of the command's length, so
 * no input can make them read outside it, and write into the outbox, which
 * is zeroed first and is at least the command's length.
 *
 * The general queries (QUERY_HCA_CAP, QUERY_NIC_VPORT_CONTEXT,
 * QUERY_ROCE_ADDRESS) are answered here, from what gnic-emu's verbs report.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "devx.h"

struct devx_cmd {
	uint16_t opcode;
	uint8_t method; /* enum devx_method the kernel takes it through */
	uint16_t in_bytes, out_bytes;
	uint8_t (*run)(struct devx_call *c); /* NULL: the firmware answers BAD_OP */
	const char *name;
};

static uint8_t query_hca_cap(struct devx_call *c);
static uint8_t query_nic_vport(struct devx_call *c);
static uint8_t query_roce_address(struct devx_call *c);

#define HDR PRM_HDR_BYTES
/* The commands the kernel lets each method carry (mlx5_ib's devx.c lists),
 * as far as gnic-emu knows them; those without a handler are a firmware's
 * BAD_OP. An opcode not listed is one the kernel refuses: EINVAL. */
static const struct devx_cmd cmds[] = {
    {PRM_CMD_QUERY_HCA_CAP, DEVX_GENERAL, HDR, PRM_QUERY_HCA_CAP_OUT_BYTES, query_hca_cap,
     "QUERY_HCA_CAP"},
    {PRM_CMD_QUERY_ADAPTER, DEVX_GENERAL, HDR, HDR, NULL, "QUERY_ADAPTER"},
    {PRM_CMD_QUERY_ISSI, DEVX_GENERAL, HDR, HDR, NULL, "QUERY_ISSI"},
    {PRM_CMD_QUERY_VPORT_STATE, DEVX_GENERAL, HDR, HDR, NULL, "QUERY_VPORT_STATE"},
    {PRM_CMD_QUERY_NIC_VPORT_CONTEXT, DEVX_GENERAL, HDR, PRM_NIC_VPORT_OUT_BYTES, query_nic_vport,
     "QUERY_NIC_VPORT_CONTEXT"},
    {PRM_CMD_QUERY_ROCE_ADDRESS, DEVX_GENERAL, HDR, PRM_ROCE_ADDR_OUT_BYTES, query_roce_address,
     "QUERY_ROCE_ADDRESS"},
    {PRM_CMD_QUERY_HCA_VPORT_CONTEXT, DEVX_GENERAL, HDR, HDR, NULL, "QUERY_HCA_VPORT_CONTEXT"},
    {PRM_CMD_QUERY_HCA_VPORT_GID, DEVX_GENERAL, HDR, HDR, NULL, "QUERY_HCA_VPORT_GID"},
    {PRM_CMD_QUERY_HCA_VPORT_PKEY, DEVX_GENERAL, HDR, HDR, NULL, "QUERY_HCA_VPORT_PKEY"},
    {PRM_CMD_CREATE_CQ, DEVX_CREATE, PRM_CREATE_CQ_IN_BYTES, HDR, emu_devx_create_cq, "CREATE_CQ"},
    {PRM_CMD_CREATE_QP, DEVX_CREATE, PRM_QP_IN_BYTES, HDR, emu_devx_create_qp, "CREATE_QP"},
    {PRM_CMD_CREATE_MKEY, DEVX_CREATE, HDR, HDR, NULL, "CREATE_MKEY"},
    {PRM_CMD_CREATE_EQ, DEVX_CREATE, HDR, HDR, NULL, "CREATE_EQ"},
    {PRM_CMD_CREATE_SRQ, DEVX_CREATE, HDR, HDR, NULL, "CREATE_SRQ"},
    {PRM_CMD_CREATE_DCT, DEVX_CREATE, HDR, HDR, NULL, "CREATE_DCT"},
    {PRM_CMD_ALLOC_PD, DEVX_CREATE, HDR, HDR, NULL, "ALLOC_PD"},
    {PRM_CMD_ALLOC_TRANSPORT_DOMAIN, DEVX_CREATE, HDR, HDR, NULL, "ALLOC_TRANSPORT_DOMAIN"},
    {PRM_CMD_CREATE_GENERAL_OBJECT, DEVX_CREATE, HDR, HDR, NULL, "CREATE_GENERAL_OBJECT"},
    {PRM_CMD_QUERY_CQ, DEVX_QUERY, HDR, PRM_QUERY_CQ_OUT_BYTES, emu_devx_query_cq, "QUERY_CQ"},
    {PRM_CMD_QUERY_QP, DEVX_QUERY, HDR, PRM_QUERY_QP_OUT_BYTES, emu_devx_query_qp, "QUERY_QP"},
    {PRM_CMD_MODIFY_CQ, DEVX_MODIFY, HDR, HDR, NULL, "MODIFY_CQ"},
    {PRM_CMD_RST2INIT_QP, DEVX_MODIFY, PRM_QP_IN_BYTES, HDR, emu_devx_modify_qp, "RST2INIT_QP"},
    {PRM_CMD_INIT2RTR_QP, DEVX_MODIFY, PRM_QP_IN_BYTES, HDR, emu_devx_modify_qp, "INIT2RTR_QP"},
    {PRM_CMD_RTR2RTS_QP, DEVX_MODIFY, PRM_QP_IN_BYTES, HDR, emu_devx_modify_qp, "RTR2RTS_QP"},
    {PRM_CMD_RTS2RTS_QP, DEVX_MODIFY, PRM_QP_IN_BYTES, HDR, NULL, "RTS2RTS_QP"},
    {PRM_CMD_SQERR2RTS_QP, DEVX_MODIFY, PRM_QP_IN_BYTES, HDR, NULL, "SQERR2RTS_QP"},
    {PRM_CMD_SQD_RTS_QP, DEVX_MODIFY, PRM_QP_IN_BYTES, HDR, NULL, "SQD_RTS_QP"},
    {PRM_CMD_INIT2INIT_QP, DEVX_MODIFY, PRM_QP_IN_BYTES, HDR, NULL, "INIT2INIT_QP"},
    {PRM_CMD_2ERR_QP, DEVX_MODIFY, PRM_QP_STATE_IN_BYTES, HDR, emu_devx_modify_qp, "2ERR_QP"},
    {PRM_CMD_2RST_QP, DEVX_MODIFY, PRM_QP_STATE_IN_BYTES, HDR, emu_devx_modify_qp, "2RST_QP"},
};
#undef HDR

/* The largest inbox a handler reads. */
#define IN_MAX PRM_QP_IN_BYTES

static const struct devx_cmd *cmd_find(uint16_t opcode)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (cmds[i].opcode == opcode)
			return &cmds[i];
	return NULL;
}

/* The object id a modify or query names (the kernel's
 * devx_is_valid_obj_id); CQ and QP commands carry it at the same place. */
uint32_t emu_devx_cmd_obj_id(const uint8_t *in, uint16_t opcode)
{
	(void)opcode;
	return prm_get(in, PRM_QP_IN_QPN);
}

static bool obj_is_target(const struct mlx5dv_devx_obj *obj, const uint8_t *in, uint16_t opcode)
{
	enum emu_devx_type type =
	    opcode == PRM_CMD_QUERY_CQ || opcode == PRM_CMD_MODIFY_CQ ? EMU_DEVX_CQ : EMU_DEVX_QP;

	return obj->type == type && emu_devx_cmd_obj_id(in, opcode) == obj->id;
}

/* The firmware's answer: status, and a syndrome of gnic-emu's own (the
 * opcode in bits 31:16, a reason number in 15:0) for a failure. */
static int finish(uint8_t *out, uint8_t status, uint16_t opcode, uint16_t reason)
{
	prm_set(out, PRM_OUT_STATUS, status);
	prm_set(out, PRM_OUT_SYND, status ? (uint32_t)opcode << 16 | reason : 0);
	return status ? EREMOTEIO : 0;
}

int emu_devx_exec(struct emu_context *ctx, enum devx_method m, struct mlx5dv_devx_obj *obj,
                  const void *in, size_t inlen, void *out, size_t outlen,
                  struct mlx5dv_devx_obj **created)
{
	uint8_t copy[IN_MAX] = {0};
	struct devx_call c = {.ctx = ctx, .obj = obj, .in = copy, .out = out};
	const struct devx_cmd *cmd;
	uint8_t status;

	/* the kernel: mailboxes of at least a header, a known opcode of this
	 * method, and for an object's command that object's id */
	if (!in || !out || inlen < PRM_HDR_BYTES || outlen < PRM_HDR_BYTES)
		return EINVAL;
	c.opcode = (uint16_t)prm_get(in, PRM_IN_OPCODE);
	cmd = cmd_find(c.opcode);
	if (!cmd || cmd->method != m) {
		emu_info("devx: opcode 0x%x is not a command of this call", c.opcode);
		return EINVAL;
	}
	memcpy(copy, in, inlen < sizeof(copy) ? inlen : sizeof(copy));
	if (obj && !obj_is_target(obj, copy, c.opcode))
		return EINVAL;
	/* the firmware */
	memset(out, 0, outlen);
	if (inlen < cmd->in_bytes)
		return finish(out, PRM_STAT_BAD_INP_LEN, c.opcode, 1);
	if (outlen < cmd->out_bytes)
		return finish(out, PRM_STAT_BAD_OUTP_LEN, c.opcode, 2);
	if (!cmd->run) {
		emu_info("devx: %s (0x%x) is not supported by gnic-emu", cmd->name, c.opcode);
		return finish(out, PRM_STAT_BAD_OP, c.opcode, 3);
	}
	status = cmd->run(&c);
	if (status)
		emu_info("devx: %s failed: status 0x%x, reason %u", cmd->name, status, c.reason);
	if (created)
		*created = status ? NULL : c.created;
	return finish(out, status, c.opcode, c.reason);
}

/* ---- QUERY_HCA_CAP ------------------------------------------------------- */

static uint32_t log2_floor(uint64_t v)
{
	uint32_t l = 0;

	while (v >>= 1)
		l++;
	return l;
}

/* The general capabilities, from the limits the verbs report (emu.h). */
static void cap_general(uint8_t *cap)
{
	prm_set(cap, PRM_CAP_LOG_MAX_SRQ_SZ, log2_floor(EMU_MAX_SRQ_WR + 1u));
	prm_set(cap, PRM_CAP_LOG_MAX_QP_SZ, log2_floor(EMU_MAX_QP_WR));
	prm_set(cap, PRM_CAP_LOG_MAX_QP, log2_floor(EMU_MAX_QP));
	prm_set(cap, PRM_CAP_LOG_MAX_SRQ, log2_floor(EMU_MAX_SRQ));
	prm_set(cap, PRM_CAP_LOG_MAX_CQ_SZ, log2_floor(EMU_MAX_CQE + 1u));
	prm_set(cap, PRM_CAP_LOG_MAX_CQ, log2_floor(EMU_MAX_CQ));
	prm_set(cap, PRM_CAP_LOG_MAX_EQ, 0); /* one EQ: one completion vector */
	prm_set(cap, PRM_CAP_LOG_MAX_MKEY, log2_floor(EMU_MAX_MR));
	prm_set(cap, PRM_CAP_LOG_MAX_RA_REQ, log2_floor((uint64_t)emu_cfg.max_rd_atom));
	prm_set(cap, PRM_CAP_LOG_MAX_RA_RES, log2_floor((uint64_t)emu_cfg.max_rd_atom));
	prm_set(cap, PRM_CAP_PORT_TYPE, emu_cfg.link_ib ? 0 : 1);
	prm_set(cap, PRM_CAP_NUM_PORTS, 1);
	prm_set(cap, PRM_CAP_LOG_MAX_MSG, log2_floor(EMU_MAX_MSG_SIZE));
	prm_set(cap, PRM_CAP_CQE_VERSION, 1);
	prm_set(cap, PRM_CAP_SCTR_DATA_CQE, 1);
	prm_set(cap, PRM_CAP_ROCE, emu_cfg.link_ib ? 0 : 1);
	prm_set(cap, PRM_CAP_ATOMIC, 1);
	prm_set(cap, PRM_CAP_CQ_OI, 1);
	prm_set(cap, PRM_CAP_UAR_4K, 1);
	prm_set(cap, PRM_CAP_LOG_PG_SZ, 12);
	prm_set(cap, PRM_CAP_BF, 1);
	/* two halves of GNIC_MLX5_BF_SIZE */
	prm_set(cap, PRM_CAP_LOG_BF_REG_SIZE, log2_floor(2u * GNIC_MLX5_BF_SIZE));
	prm_set(cap, PRM_CAP_MAX_WQE_SZ_SQ, EMU_MAX_SQ_DESC);
	prm_set(cap, PRM_CAP_MAX_WQE_SZ_RQ, EMU_MAX_RQ_DESC);
	prm_set(cap, PRM_CAP_LOG_MAX_PD, 16);
	prm_set(cap, PRM_CAP_LOG_MAX_ATOMIC_QP, 3);
}

/* What the engine executes: compare-swap and fetch-add on 8 bytes (no
 * masked forms); fetched values in host order unless GNIC_EMU_ATOMIC_ENDIAN
 * says big, a NIC without the host-endianness mode (as the verbs' atomic_cap
 * says: HCA or NONE). */
static void cap_atomic(uint8_t *cap)
{
	prm_set(cap, PRM_ATOMIC_REQ_8B_ENDIAN, emu_cfg.atomic_be ? 0 : 1);
	prm_set(cap, PRM_ATOMIC_SUPP_8B_MODE_1, emu_cfg.atomic_be ? 0 : 1);
	prm_set(cap, PRM_ATOMIC_OPERATIONS, PRM_ATOMIC_OPS_CMP_SWAP | PRM_ATOMIC_OPS_FETCH_ADD);
	prm_set(cap, PRM_ATOMIC_SIZE_QP, PRM_ATOMIC_SIZE_8B);
}

static void cap_roce(uint8_t *cap)
{
	prm_set(cap, PRM_ROCE_L3_TYPE, 0x3); /* IPv4 and IPv6 */
	prm_set(cap, PRM_ROCE_VERSION, 0x5); /* v1 and v2 */
	prm_set(cap, PRM_ROCE_DEST_UDP_PORT, 4791);
	prm_set(cap, PRM_ROCE_MIN_SRC_UDP, 0xc000);
	prm_set(cap, PRM_ROCE_MAX_SRC_UDP, 0xffff);
	prm_set(cap, PRM_ROCE_ADDR_TABLE_SIZE, EMU_GID_TBL_LEN);
}

/* op_mod = type << 1 | current; maximum and current are the same here. */
static uint8_t query_hca_cap(struct devx_call *c)
{
	uint32_t type = prm_get(c->in, PRM_IN_OP_MOD) >> 1;
	uint8_t *cap = prm_at(c->out, PRM_QUERY_HCA_CAP_OUT_CAP_OFF);

	if (type == PRM_CAPTYPE_GENERAL)
		cap_general(cap);
	else if (type == PRM_CAPTYPE_ATOMIC)
		cap_atomic(cap);
	else if (type == PRM_CAPTYPE_ROCE && !emu_cfg.link_ib)
		cap_roce(cap);
	else {
		c->reason = 10; /* a capability type gnic-emu has no answer for */
		return PRM_STAT_BAD_PARAM;
	}
	return PRM_STAT_OK;
}

/* ---- vport and RoCE addresses --------------------------------------------- */

/* The port's MAC, 02:47:<IPv4> (device.c's GID table is made of it). */
static void dev_mac(const struct emu_device *dev, uint16_t *hi, uint32_t *lo)
{
	const uint8_t *ip = (const uint8_t *)&dev->addr.sin_addr.s_addr;

	*hi = 0x0247;
	*lo = (uint32_t)ip[0] << 24 | (uint32_t)ip[1] << 16 | (uint32_t)ip[2] << 8 | ip[3];
}

static uint8_t query_nic_vport(struct devx_call *c)
{
	uint8_t *v = prm_at(c->out, PRM_NIC_VPORT_OUT_CTX_OFF);
	const struct emu_device *dev = c->ctx->dev;
	uint64_t guid = be64toh(dev->guid);
	uint16_t hi;
	uint32_t lo;

	dev_mac(dev, &hi, &lo);
	prm_set(v, PRM_VPORT_ROCE_EN, emu_cfg.link_ib ? 0 : 1);
	prm_set(v, PRM_VPORT_MTU, 9000 + 22); /* the netdev's MTU + Ethernet header, VLAN, FCS */
	prm_set64(v, PRM_VPORT_SYS_GUID_OFF, guid);
	prm_set64(v, PRM_VPORT_PORT_GUID_OFF, guid);
	prm_set64(v, PRM_VPORT_NODE_GUID_OFF, guid);
	prm_set(v, PRM_VPORT_MAC_47_32, hi);
	prm_set(v, PRM_VPORT_MAC_31_0, lo);
	return PRM_STAT_OK;
}

/* An entry of the port's GID table as the firmware holds it; an empty one
 * reads as zeros. */
static uint8_t query_roce_address(struct devx_call *c)
{
	uint8_t *a = prm_at(c->out, PRM_ROCE_ADDR_OUT_OFF);
	uint32_t index = prm_get(c->in, PRM_ROCE_ADDR_IN_INDEX);
	enum ibv_gid_type type;
	union ibv_gid gid;
	uint16_t hi;
	uint32_t lo;
	int ret;

	if (emu_cfg.link_ib || prm_get(c->in, PRM_ROCE_ADDR_IN_PORT) > 1) {
		c->reason = 20; /* no RoCE port */
		return PRM_STAT_BAD_PARAM;
	}
	ret = emu_gid_entry(c->ctx->dev, index, &gid, &type);
	if (ret == -EINVAL) {
		c->reason = 21; /* past the table */
		return PRM_STAT_BAD_PARAM;
	}
	if (ret)
		return PRM_STAT_OK;
	dev_mac(c->ctx->dev, &hi, &lo);
	memcpy(prm_at(a, PRM_ROCE_ADDR_L3_OFF), gid.raw, sizeof(gid.raw));
	prm_set(a, PRM_ROCE_ADDR_MAC_47_32, hi);
	prm_set(a, PRM_ROCE_ADDR_MAC_31_0, lo);
	prm_set(a, PRM_ROCE_ADDR_L3_TYPE, gid.raw[10] == 0xff && gid.raw[11] == 0xff ? 0 : 1);
	prm_set(a, PRM_ROCE_ADDR_VERSION, type == IBV_GID_TYPE_ROCE_V2 ? 2 : 0);
	return PRM_STAT_OK;
}
