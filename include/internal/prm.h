/* SPDX-License-Identifier: MIT */
/*
 * The PRM command layouts of DEVX, shared by gnic-emu's decoder (which reads
 * and answers them) and libgnic's DEVX queues (which build them): one
 * table of the fields either uses, each a (bit offset, width) pair in the PRM's
 * numbering (bit 0 is the most significant bit of byte 0; a field never
 * crosses a 32-bit word, 64-bit fields are word-aligned), and one pair of
 * big-endian get/set helpers. The offsets are facts of the ConnectX PRM as
 * the kernel's and rdma-core's mlx5_ifc.h mirror them; tests/unit/
 * test_prm.c pins each against the byte and bit it must land on.
 *
 * Offsets are relative to the structure named in the prefix; a nested
 * structure's base is given as its own PRM_*_OFF (bits, always a multiple
 * of 32). Only what the two implement is here. Header-only: neither links
 * the other. Not installed.
 */
#ifndef GNIC_PRM_H
#define GNIC_PRM_H

#include <stdint.h>
#include <string.h>

struct prm_fld {
	uint16_t off;  /* bit offset from the structure's start */
	uint16_t bits; /* 1 .. 32 */
};
#define PRM_F(o, b) ((struct prm_fld){(o), (b)})

static inline uint32_t prm_word(const void *base, unsigned int dword)
{
	const uint8_t *p = (const uint8_t *)base + dword * 4;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void prm_put_word(void *base, unsigned int dword, uint32_t v)
{
	uint8_t *p = (uint8_t *)base + dword * 4;

	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t prm_mask(struct prm_fld f)
{
	return f.bits >= 32 ? 0xffffffffu : (1u << f.bits) - 1;
}

/* The shift of a field inside its 32-bit word: PRM bit 0 is the MSB. */
static inline unsigned int prm_shift(struct prm_fld f)
{
	return 32u - (f.off % 32u) - f.bits;
}

static inline uint32_t prm_get(const void *base, struct prm_fld f)
{
	return (prm_word(base, f.off / 32u) >> prm_shift(f)) & prm_mask(f);
}

static inline void prm_set(void *base, struct prm_fld f, uint32_t v)
{
	uint32_t m = prm_mask(f) << prm_shift(f);
	uint32_t w = prm_word(base, f.off / 32u);

	prm_put_word(base, f.off / 32u, (w & ~m) | ((v << prm_shift(f)) & m));
}

/* 64-bit fields (two words, high first) at a word-aligned bit offset. */
static inline uint64_t prm_get64(const void *base, unsigned int off)
{
	return (uint64_t)prm_word(base, off / 32u) << 32 | prm_word(base, off / 32u + 1);
}

static inline void prm_set64(void *base, unsigned int off, uint64_t v)
{
	prm_put_word(base, off / 32u, (uint32_t)(v >> 32));
	prm_put_word(base, off / 32u + 1, (uint32_t)v);
}

/* The address of a nested structure or byte array at a bit offset. */
static inline void *prm_at(void *base, unsigned int off)
{
	return (uint8_t *)base + off / 8u;
}
static inline const void *prm_cat(const void *base, unsigned int off)
{
	return (const uint8_t *)base + off / 8u;
}

/* ---- command header (every inbox / outbox) ---------------------------- */
#define PRM_IN_OPCODE  PRM_F(0x00, 16)
#define PRM_IN_UID     PRM_F(0x10, 16)
#define PRM_IN_OP_MOD  PRM_F(0x30, 16)
#define PRM_OUT_STATUS PRM_F(0x00, 8)
#define PRM_OUT_SYND   PRM_F(0x20, 32)
#define PRM_HDR_BYTES  16 /* general_obj_in/out_cmd_hdr: the shortest mailbox */

/* command status values (the outbox's status byte) */
enum {
	PRM_STAT_OK = 0x00,
	PRM_STAT_INT_ERR = 0x01,
	PRM_STAT_BAD_OP = 0x02,
	PRM_STAT_BAD_PARAM = 0x03,
	PRM_STAT_BAD_SYS_STATE = 0x04,
	PRM_STAT_BAD_RES = 0x05,
	PRM_STAT_RES_BUSY = 0x06,
	PRM_STAT_LIM = 0x08,
	PRM_STAT_BAD_RES_STATE = 0x09,
	PRM_STAT_IX = 0x0a,
	PRM_STAT_NO_RES = 0x0f,
	PRM_STAT_BAD_QP_STATE = 0x10,
	PRM_STAT_BAD_INP_LEN = 0x50,
	PRM_STAT_BAD_OUTP_LEN = 0x51,
};

/* opcodes */
enum {
	PRM_CMD_QUERY_HCA_CAP = 0x100,
	PRM_CMD_QUERY_ADAPTER = 0x101,
	PRM_CMD_QUERY_ISSI = 0x10a,
	PRM_CMD_CREATE_MKEY = 0x200,
	PRM_CMD_CREATE_EQ = 0x301,
	PRM_CMD_CREATE_CQ = 0x400,
	PRM_CMD_DESTROY_CQ = 0x401,
	PRM_CMD_QUERY_CQ = 0x402,
	PRM_CMD_MODIFY_CQ = 0x403,
	PRM_CMD_CREATE_QP = 0x500,
	PRM_CMD_DESTROY_QP = 0x501,
	PRM_CMD_RST2INIT_QP = 0x502,
	PRM_CMD_INIT2RTR_QP = 0x503,
	PRM_CMD_RTR2RTS_QP = 0x504,
	PRM_CMD_RTS2RTS_QP = 0x505,
	PRM_CMD_SQERR2RTS_QP = 0x506,
	PRM_CMD_2ERR_QP = 0x507,
	PRM_CMD_2RST_QP = 0x50a,
	PRM_CMD_QUERY_QP = 0x50b,
	PRM_CMD_SQD_RTS_QP = 0x50c,
	PRM_CMD_INIT2INIT_QP = 0x50e,
	PRM_CMD_CREATE_SRQ = 0x700,
	PRM_CMD_CREATE_DCT = 0x710,
	PRM_CMD_QUERY_VPORT_STATE = 0x750,
	PRM_CMD_QUERY_NIC_VPORT_CONTEXT = 0x754,
	PRM_CMD_QUERY_ROCE_ADDRESS = 0x760,
	PRM_CMD_QUERY_HCA_VPORT_CONTEXT = 0x762,
	PRM_CMD_QUERY_HCA_VPORT_GID = 0x764,
	PRM_CMD_QUERY_HCA_VPORT_PKEY = 0x765,
	PRM_CMD_ALLOC_PD = 0x800,
	PRM_CMD_ALLOC_UAR = 0x802,
	PRM_CMD_ALLOC_TRANSPORT_DOMAIN = 0x816,
	PRM_CMD_CREATE_GENERAL_OBJECT = 0xa00,
};

/* ---- QUERY_HCA_CAP ------------------------------------------------------ */
#define PRM_QUERY_HCA_CAP_OUT_CAP_OFF 0x80 /* the capability block */
#define PRM_QUERY_HCA_CAP_OUT_BYTES   (16 + 4096)
#define PRM_HCA_CAP_BYTES             256 /* the blocks gnic-emu fills */
enum { PRM_CAPTYPE_GENERAL = 0x0, PRM_CAPTYPE_ATOMIC = 0x3, PRM_CAPTYPE_ROCE = 0x4 };

/* cmd_hca_cap (general device capabilities) */
#define PRM_CAP_LOG_MAX_SRQ_SZ    PRM_F(0x80, 8)
#define PRM_CAP_LOG_MAX_QP_SZ     PRM_F(0x88, 8)
#define PRM_CAP_LOG_MAX_QP        PRM_F(0x9b, 5)
#define PRM_CAP_LOG_MAX_SRQ       PRM_F(0xab, 5)
#define PRM_CAP_LOG_MAX_CQ_SZ     PRM_F(0xc8, 8)
#define PRM_CAP_LOG_MAX_CQ        PRM_F(0xdb, 5)
#define PRM_CAP_LOG_MAX_EQ_SZ     PRM_F(0xe0, 8)
#define PRM_CAP_LOG_MAX_MKEY      PRM_F(0xea, 6)
#define PRM_CAP_LOG_MAX_EQ        PRM_F(0xfc, 4)
#define PRM_CAP_LOG_MAX_MRW_SZ    PRM_F(0x109, 7)
#define PRM_CAP_LOG_MAX_RA_REQ    PRM_F(0x14a, 6) /* log_max_ra_req_qp */
#define PRM_CAP_LOG_MAX_RA_RES    PRM_F(0x15a, 6) /* log_max_ra_res_qp */
#define PRM_CAP_PORT_TYPE         PRM_F(0x1b6, 2) /* 0 InfiniBand, 1 Ethernet */
#define PRM_CAP_NUM_PORTS         PRM_F(0x1b8, 8)
#define PRM_CAP_LOG_MAX_MSG       PRM_F(0x1c3, 5)
#define PRM_CAP_CQE_VERSION       PRM_F(0x1fc, 4)
#define PRM_CAP_SCTR_DATA_CQE     PRM_F(0x215, 1)
#define PRM_CAP_ROCE              PRM_F(0x21d, 1)
#define PRM_CAP_ATOMIC            PRM_F(0x21e, 1)
#define PRM_CAP_CQ_OI             PRM_F(0x220, 1)
#define PRM_CAP_UAR_4K            PRM_F(0x240, 1)
#define PRM_CAP_UAR_SZ            PRM_F(0x24a, 6)
#define PRM_CAP_LOG_PG_SZ         PRM_F(0x258, 8)
#define PRM_CAP_BF                PRM_F(0x260, 1)
#define PRM_CAP_LOG_BF_REG_SIZE   PRM_F(0x26b, 5)
#define PRM_CAP_MAX_WQE_SZ_SQ     PRM_F(0x290, 16)
#define PRM_CAP_MAX_WQE_SZ_RQ     PRM_F(0x2b0, 16)
#define PRM_CAP_LOG_MAX_PD        PRM_F(0x32b, 5)
#define PRM_CAP_LOG_UAR_PAGE_SZ   PRM_F(0x490, 16)
#define PRM_CAP_LOG_MAX_ATOMIC_QP PRM_F(0x580, 8) /* log_max_atomic_size_qp */

/* atomic_caps */
#define PRM_ATOMIC_REQ_8B_ENDIAN  PRM_F(0x40, 2) /* 0 big-endian, 1 host */
#define PRM_ATOMIC_SUPP_8B_MODE_1 PRM_F(0x46, 1)
#define PRM_ATOMIC_OPERATIONS     PRM_F(0x90, 16)
#define PRM_ATOMIC_SIZE_QP        PRM_F(0xb0, 16)
enum {
	PRM_ATOMIC_OPS_CMP_SWAP = 1 << 0,
	PRM_ATOMIC_OPS_FETCH_ADD = 1 << 1,
	PRM_ATOMIC_OPS_MASKED_CMP_SWAP = 1 << 2,
	PRM_ATOMIC_OPS_MASKED_FETCH_ADD = 1 << 3,
	PRM_ATOMIC_SIZE_4B = 1 << 2, /* bit n: 2^n-byte operands */
	PRM_ATOMIC_SIZE_8B = 1 << 3,
};

/* roce_cap */
#define PRM_ROCE_L3_TYPE         PRM_F(0x8c, 4)
#define PRM_ROCE_VERSION         PRM_F(0x98, 8) /* bit 0 v1, bit 1 v1.5, bit 2 v2 */
#define PRM_ROCE_DEST_UDP_PORT   PRM_F(0xb0, 16)
#define PRM_ROCE_MAX_SRC_UDP     PRM_F(0xc0, 16)
#define PRM_ROCE_MIN_SRC_UDP     PRM_F(0xd0, 16)
#define PRM_ROCE_ADDR_TABLE_SIZE PRM_F(0xf0, 16)

/* ---- QUERY_NIC_VPORT_CONTEXT -------------------------------------------- */
#define PRM_NIC_VPORT_OUT_CTX_OFF 0x80
#define PRM_NIC_VPORT_OUT_BYTES   (16 + 256)
#define PRM_VPORT_ROCE_EN         PRM_F(0x1f, 1)
#define PRM_VPORT_MTU             PRM_F(0x130, 16)
#define PRM_VPORT_SYS_GUID_OFF    0x140 /* 64 bits */
#define PRM_VPORT_PORT_GUID_OFF   0x180
#define PRM_VPORT_NODE_GUID_OFF   0x1c0
#define PRM_VPORT_MAC_47_32       PRM_F(0x7b0, 16) /* permanent_address */
#define PRM_VPORT_MAC_31_0        PRM_F(0x7c0, 32)

/* ---- QUERY_ROCE_ADDRESS / QUERY_HCA_VPORT_GID ---------------------------- */
#define PRM_ROCE_ADDR_IN_INDEX    PRM_F(0x40, 16)
#define PRM_ROCE_ADDR_IN_PORT     PRM_F(0x5c, 4)
#define PRM_ROCE_ADDR_OUT_OFF     0x80
#define PRM_ROCE_ADDR_OUT_BYTES   (16 + 32)
#define PRM_ROCE_ADDR_L3_OFF      0x00 /* source_l3_address, 16 bytes */
#define PRM_ROCE_ADDR_MAC_47_32   PRM_F(0x90, 16)
#define PRM_ROCE_ADDR_MAC_31_0    PRM_F(0xa0, 32)
#define PRM_ROCE_ADDR_L3_TYPE     PRM_F(0xd4, 4)  /* 0 IPv4, 1 IPv6 */
#define PRM_ROCE_ADDR_VERSION     PRM_F(0xd8, 8)  /* 0 v1, 2 v2 */
#define PRM_VPORT_GID_IN_PORT     PRM_F(0x48, 8)  /* query_hca_vport_gid_in */
#define PRM_VPORT_GID_IN_ALL      PRM_F(0x60, 16) /* gid_index 0xffff: the whole table */
#define PRM_VPORT_GID_IN_INDEX    PRM_F(0x70, 16)
#define PRM_VPORT_GID_OUT_NUM     PRM_F(0x40, 16)
#define PRM_VPORT_GID_OUT_GID_OFF 0x80

/* ---- CQ ------------------------------------------------------------------ */
#define PRM_CREATE_CQ_IN_CQC_OFF  0x80
#define PRM_CREATE_CQ_IN_UMEM_OFF 0x280 /* cq_umem_offset, 64 bits */
#define PRM_CREATE_CQ_IN_UMEM_ID  PRM_F(0x2c0, 32)
#define PRM_CREATE_CQ_IN_UMEM_VAL PRM_F(0x2e0, 1)
#define PRM_CREATE_CQ_IN_BYTES    (0x880 / 8)
#define PRM_CREATE_CQ_OUT_CQN     PRM_F(0x48, 24)
#define PRM_CQ_IN_CQN             PRM_F(0x48, 24) /* destroy_cq_in, query_cq_in */
#define PRM_QUERY_CQ_OUT_CQC_OFF  0x80
#define PRM_QUERY_CQ_OUT_BYTES    (0x880 / 8)
#define PRM_CQC_BYTES             64

/* cqc */
#define PRM_CQC_STATUS         PRM_F(0x00, 4)
#define PRM_CQC_DBR_UMEM_VALID PRM_F(0x06, 1)
#define PRM_CQC_CQE_SZ         PRM_F(0x08, 3) /* 0: 64 bytes */
#define PRM_CQC_CC             PRM_F(0x0b, 1) /* collapsed */
#define PRM_CQC_OI             PRM_F(0x0f, 1) /* overrun ignore */
#define PRM_CQC_CQE_COMP_EN    PRM_F(0x12, 1)
#define PRM_CQC_ST             PRM_F(0x14, 4)
#define PRM_CQC_DBR_UMEM_ID    PRM_F(0x20, 32)
#define PRM_CQC_PAGE_OFFSET    PRM_F(0x54, 6)
#define PRM_CQC_LOG_CQ_SIZE    PRM_F(0x63, 5)
#define PRM_CQC_UAR_PAGE       PRM_F(0x68, 24)
#define PRM_CQC_CQ_PERIOD      PRM_F(0x84, 12)
#define PRM_CQC_CQ_MAX_COUNT   PRM_F(0x90, 16)
#define PRM_CQC_C_EQN          PRM_F(0xb8, 8)
#define PRM_CQC_LOG_PAGE_SIZE  PRM_F(0xc3, 5)
#define PRM_CQC_CONSUMER_CNT   PRM_F(0x148, 24)
#define PRM_CQC_PRODUCER_CNT   PRM_F(0x168, 24)
#define PRM_CQC_DBR_ADDR_OFF   0x1c0 /* 64 bits: offset in the doorbell umem */

/* ---- QP ------------------------------------------------------------------ */
#define PRM_QP_IN_QPN             PRM_F(0x48, 24) /* modify, query, destroy */
#define PRM_QP_IN_OPT_MASK        PRM_F(0x80, 32)
#define PRM_QP_IN_QPC_OFF         0xc0  /* create_qp_in and the modify commands */
#define PRM_CREATE_QP_IN_UMEM_OFF 0x800 /* wq_umem_offset, 64 bits */
#define PRM_CREATE_QP_IN_UMEM_ID  PRM_F(0x840, 32)
#define PRM_CREATE_QP_IN_UMEM_VAL PRM_F(0x860, 1)
#define PRM_QP_IN_BYTES           (0x880 / 8) /* create_qp_in, rst2init ... rtr2rts */
#define PRM_QP_STATE_IN_BYTES     16          /* 2err_qp_in, 2rst_qp_in, destroy, query */
#define PRM_CREATE_QP_OUT_QPN     PRM_F(0x48, 24)
#define PRM_QUERY_QP_OUT_QPC_OFF  0xc0
#define PRM_QUERY_QP_OUT_BYTES    (0x880 / 8)
#define PRM_QPC_BYTES             (0x740 / 8)

/* qpc */
#define PRM_QPC_STATE          PRM_F(0x00, 4)
#define PRM_QPC_ST             PRM_F(0x08, 8)
#define PRM_QPC_PM_STATE       PRM_F(0x13, 2)
#define PRM_QPC_PD             PRM_F(0x28, 24)
#define PRM_QPC_MTU            PRM_F(0x40, 3)
#define PRM_QPC_LOG_MSG_MAX    PRM_F(0x43, 5)
#define PRM_QPC_LOG_RQ_SIZE    PRM_F(0x49, 4)
#define PRM_QPC_LOG_RQ_STRIDE  PRM_F(0x4d, 3)
#define PRM_QPC_NO_SQ          PRM_F(0x50, 1)
#define PRM_QPC_LOG_SQ_SIZE    PRM_F(0x51, 4)
#define PRM_QPC_UAR_PAGE       PRM_F(0x68, 24)
#define PRM_QPC_USER_INDEX     PRM_F(0x88, 24)
#define PRM_QPC_LOG_PAGE_SIZE  PRM_F(0xa3, 5)
#define PRM_QPC_REMOTE_QPN     PRM_F(0xa8, 24)
#define PRM_QPC_PATH_OFF       0xc0 /* primary_address_path (ads) */
#define PRM_QPC_LOG_ACK_FREQ   PRM_F(0x380, 4)
#define PRM_QPC_LOG_SRA_MAX    PRM_F(0x388, 3)
#define PRM_QPC_RETRY_COUNT    PRM_F(0x38d, 3)
#define PRM_QPC_RNR_RETRY      PRM_F(0x390, 3)
#define PRM_QPC_NEXT_SEND_PSN  PRM_F(0x3c8, 24)
#define PRM_QPC_CQN_SND        PRM_F(0x3e8, 24)
#define PRM_QPC_LOG_RRA_MAX    PRM_F(0x488, 3)
#define PRM_QPC_ATOMIC_MODE    PRM_F(0x48c, 4)
#define PRM_QPC_RRE            PRM_F(0x490, 1)
#define PRM_QPC_RWE            PRM_F(0x491, 1)
#define PRM_QPC_RAE            PRM_F(0x492, 1)
#define PRM_QPC_PAGE_OFFSET    PRM_F(0x494, 6)
#define PRM_QPC_MIN_RNR_NAK    PRM_F(0x4a3, 5)
#define PRM_QPC_NEXT_RCV_PSN   PRM_F(0x4a8, 24)
#define PRM_QPC_CQN_RCV        PRM_F(0x4e8, 24)
#define PRM_QPC_DBR_ADDR_OFF   0x500 /* 64 bits: offset in the doorbell umem */
#define PRM_QPC_RQ_TYPE        PRM_F(0x565, 3)
#define PRM_QPC_SRQN           PRM_F(0x568, 24)
#define PRM_QPC_HW_SQ_WQEBB    PRM_F(0x5a0, 16)
#define PRM_QPC_HW_RQ_COUNTER  PRM_F(0x5c0, 32)
#define PRM_QPC_CS_REQ         PRM_F(0x630, 8)
#define PRM_QPC_CS_RES         PRM_F(0x638, 8)
#define PRM_QPC_DBR_UMEM_VALID PRM_F(0x683, 1)
#define PRM_QPC_DBR_UMEM_ID    PRM_F(0x720, 32)

enum { PRM_QP_ST_RC = 0x0 };
enum { PRM_RQ_REGULAR = 0x0, PRM_RQ_SRQ = 0x1, PRM_RQ_ZERO = 0x3 };
enum {
	PRM_QPS_RST = 0x0,
	PRM_QPS_INIT = 0x1,
	PRM_QPS_RTR = 0x2,
	PRM_QPS_RTS = 0x3,
	PRM_QPS_SQER = 0x4,
	PRM_QPS_SQD = 0x5,
	PRM_QPS_ERR = 0x6,
};
enum { PRM_CS_RES_DATA32 = 0x1, PRM_CS_REQ_DATA32 = 0x11 };

/* ads (address path), relative to PRM_QPC_PATH_OFF */
#define PRM_ADS_PKEY_INDEX   PRM_F(0x10, 16)
#define PRM_ADS_GRH          PRM_F(0x28, 1)
#define PRM_ADS_RLID         PRM_F(0x30, 16)
#define PRM_ADS_ACK_TIMEOUT  PRM_F(0x40, 5)
#define PRM_ADS_SRC_ADDR_IDX PRM_F(0x48, 8)
#define PRM_ADS_HOP_LIMIT    PRM_F(0x58, 8)
#define PRM_ADS_TCLASS       PRM_F(0x64, 8)
#define PRM_ADS_FLOW_LABEL   PRM_F(0x6c, 20)
#define PRM_ADS_RGID_OFF     0x80 /* rgid_rip, 16 bytes */
#define PRM_ADS_UDP_SPORT    PRM_F(0x110, 16)
#define PRM_ADS_SL           PRM_F(0x124, 4)
#define PRM_ADS_VHCA_PORT    PRM_F(0x128, 8)
#define PRM_ADS_RMAC_47_32   PRM_F(0x130, 16)
#define PRM_ADS_RMAC_31_0    PRM_F(0x140, 32)

#endif /* GNIC_PRM_H */
