/* SPDX-License-Identifier: MIT */
/*
 * mlx5 wire formats: send/receive WQE segments, CQE64, doorbells.
 *
 * Plain C, shared by gnic-emu (the NIC side) and the device data path (CUDA
 * or CPU threads). Every multi-byte field is big-endian and typed gnic_be*_t;
 * the only conversions are gnic_be16/32/64() below. tests/unit/test_layout.c
 * pins every offset and constant against rdma-core's <infiniband/mlx5dv.h>.
 */
#ifndef GNIC_MLX5_H
#define GNIC_MLX5_H

#include <stdint.h>

#if defined(__CUDACC__)
#define GNIC_HD __host__ __device__ __forceinline__
#else
#define GNIC_HD static inline
#endif

/* Big-endian storage types: never read them without gnic_be*(). */
typedef uint16_t gnic_be16_t;
typedef uint32_t gnic_be32_t;
typedef uint64_t gnic_be64_t;

/* Byte swaps written so that gcc, clang and nvcc all emit one bswap/prmt. */
GNIC_HD uint16_t gnic_be16(uint16_t v)
{
	return (uint16_t)((v >> 8) | (v << 8));
}

GNIC_HD uint32_t gnic_be32(uint32_t v)
{
	return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

GNIC_HD uint64_t gnic_be64(uint64_t v)
{
	return ((uint64_t)gnic_be32((uint32_t)v) << 32) | gnic_be32((uint32_t)(v >> 32));
}

enum {
	GNIC_MLX5_SEND_WQE_BB = 64,
	GNIC_MLX5_SEND_WQE_SHIFT = 6,
	GNIC_MLX5_SEG_SIZE = 16,        /* ds counts 16-byte units */
	GNIC_MLX5_MAX_WQE_BB = 16,      /* 1 KiB */
	GNIC_MLX5_MAX_DS = 63,          /* ds is a 6-bit field */
	GNIC_MLX5_INVALID_LKEY = 0x100, /* ends a short receive SGE list */
	GNIC_MLX5_RCV_DBR = 0,
	GNIC_MLX5_SND_DBR = 1,
	GNIC_MLX5_BF_OFFSET = 0x800, /* doorbell register inside the UAR page */
	GNIC_MLX5_BF_SIZE = 256,     /* one half of the BlueFlame register */
};
/* byte_count's inline bit: above INT_MAX, so no enumerator in ISO C */
#define GNIC_MLX5_INLINE_SEG 0x80000000u

/* Send opcodes (ctrl.opmod_idx_opcode[7:0]). */
enum gnic_mlx5_opcode {
	GNIC_MLX5_OPCODE_NOP = 0x00,
	GNIC_MLX5_OPCODE_SEND_INVAL = 0x01,
	GNIC_MLX5_OPCODE_RDMA_WRITE = 0x08,
	GNIC_MLX5_OPCODE_RDMA_WRITE_IMM = 0x09,
	GNIC_MLX5_OPCODE_SEND = 0x0a,
	GNIC_MLX5_OPCODE_SEND_IMM = 0x0b,
	GNIC_MLX5_OPCODE_RDMA_READ = 0x10,
	GNIC_MLX5_OPCODE_ATOMIC_CS = 0x11,
	GNIC_MLX5_OPCODE_ATOMIC_FA = 0x12,
	GNIC_MLX5_OPCODE_ATOMIC_MASKED_CS = 0x14,
	GNIC_MLX5_OPCODE_ATOMIC_MASKED_FA = 0x15,
};

/* ctrl.fm_ce_se */
enum {
	GNIC_MLX5_CTRL_SOLICITED = 1 << 1,
	GNIC_MLX5_CTRL_CQ_UPDATE = 2 << 2,
	GNIC_MLX5_CTRL_FM_MASK = 7 << 5,
	GNIC_MLX5_FM_NONE = 0 << 5,
	GNIC_MLX5_FM_SMALL = 1 << 5,           /* initiator small fence */
	GNIC_MLX5_FM_FENCE = 2 << 5,           /* wait for prior READ/ATOMIC */
	GNIC_MLX5_FM_STRONG = 3 << 5,          /* wait for all prior WQEs */
	GNIC_MLX5_FM_SMALL_AND_FENCE = 4 << 5, /* what IBV_SEND_FENCE emits */
};

/* CQE format (op_own[3:2]): data scattered into the CQE instead of memory
 * (scatter-to-CQE, on by default for QPs rdma-core creates). SCATTER_32: the
 * first 32 bytes of this 64-byte CQE hold the data; SCATTER_64: the 64 bytes
 * before it (128-byte CQEs). */
enum {
	GNIC_MLX5_INLINE_SCATTER_32 = 0x4,
	GNIC_MLX5_INLINE_SCATTER_64 = 0x8,
	GNIC_MLX5_CQE_FORMAT_MASK = 0xc,
	GNIC_MLX5_SCATTER_32_MAX = 32, /* bytes that fit */
};

/* CQE opcodes (op_own[7:4]). */
enum gnic_mlx5_cqe_opcode {
	GNIC_MLX5_CQE_REQ = 0,
	GNIC_MLX5_CQE_RESP_WR_IMM = 1,
	GNIC_MLX5_CQE_RESP_SEND = 2,
	GNIC_MLX5_CQE_RESP_SEND_IMM = 3,
	GNIC_MLX5_CQE_RESP_SEND_INV = 4,
	GNIC_MLX5_CQE_REQ_ERR = 13,
	GNIC_MLX5_CQE_RESP_ERR = 14,
	GNIC_MLX5_CQE_INVALID = 15,
};

/* Error CQE syndromes. */
enum gnic_mlx5_syndrome {
	GNIC_MLX5_SYND_OK = 0x00, /* not a hardware value: "no error" */
	GNIC_MLX5_SYND_LOCAL_LENGTH = 0x01,
	GNIC_MLX5_SYND_LOCAL_QP_OP = 0x02,
	GNIC_MLX5_SYND_LOCAL_PROT = 0x04,
	GNIC_MLX5_SYND_WR_FLUSH = 0x05,
	GNIC_MLX5_SYND_MW_BIND = 0x06,
	GNIC_MLX5_SYND_BAD_RESP = 0x10,
	GNIC_MLX5_SYND_LOCAL_ACCESS = 0x11,
	GNIC_MLX5_SYND_REMOTE_INVAL_REQ = 0x12,
	GNIC_MLX5_SYND_REMOTE_ACCESS = 0x13,
	GNIC_MLX5_SYND_REMOTE_OP = 0x14,
	GNIC_MLX5_SYND_TRANSPORT_RETRY_EXC = 0x15,
	GNIC_MLX5_SYND_RNR_RETRY_EXC = 0x16,
	GNIC_MLX5_SYND_REMOTE_ABORTED = 0x22,
};

/* CQ doorbell record arm commands (dbrec[1]). */
enum {
	GNIC_MLX5_CQ_DB_REQ_NOT_SOL = 1 << 24,
	GNIC_MLX5_CQ_DB_REQ_NOT = 0 << 24,
};

struct gnic_mlx5_ctrl_seg {
	gnic_be32_t opmod_idx_opcode; /* opmod[31:24] idx[23:8] opcode[7:0] */
	gnic_be32_t qpn_ds;           /* qpn[31:8] ds[5:0] */
	uint8_t signature;
	uint8_t rsvd[2];
	uint8_t fm_ce_se;
	gnic_be32_t imm;
};

struct gnic_mlx5_raddr_seg {
	gnic_be64_t raddr;
	gnic_be32_t rkey;
	gnic_be32_t reserved;
};

struct gnic_mlx5_data_seg {
	gnic_be32_t byte_count;
	gnic_be32_t lkey;
	gnic_be64_t addr;
};

struct gnic_mlx5_inl_seg {
	gnic_be32_t byte_count; /* len | GNIC_MLX5_INLINE_SEG; bytes follow */
};

struct gnic_mlx5_atomic_seg {
	gnic_be64_t swap_add;
	gnic_be64_t compare;
};

/* A raw Ethernet (RAW_PACKET QP) send WQE: ctrl, this segment, then data or
 * inline segments. inline_hdr_sz bytes of the frame's start lie inline from
 * inline_hdr_start on (running into the following 16-byte units); the next
 * segment starts at the 16-byte boundary after them, byte 16 at the least. */
struct gnic_mlx5_eth_seg {
	gnic_be32_t rsvd0;
	uint8_t cs_flags; /* GNIC_MLX5_ETH_WQE_L3_CSUM | _L4_CSUM */
	uint8_t rsvd1;
	gnic_be16_t mss; /* TSO only */
	gnic_be32_t rsvd2;
	gnic_be16_t inline_hdr_sz;
	uint8_t inline_hdr_start[2];
	uint8_t inline_hdr[16];
};

enum {
	GNIC_MLX5_ETH_WQE_L3_CSUM = 1 << 6,
	GNIC_MLX5_ETH_WQE_L4_CSUM = 1 << 7,
	GNIC_MLX5_ETH_INLINE_HDR_OFF = 14, /* offsetof(inline_hdr_start) */
	GNIC_MLX5_ETH_L2_INLINE_HEADER_SIZE = 18,
};

/* A receive CQE of an Ethernet receive queue (RAW_PACKET QP): bytes of the
 * CQE64's first half that gnic_mlx5_cqe64 keeps in rsvd0, and its fields'
 * bits. sop_drop_qpn[23:0] carries the flow tag of the steering rule that
 * matched, srqn_uidx[23:0] the QP's user index (gnic-emu: its QPN). */
enum {
	GNIC_MLX5_CQE_HDS_IP_EXT = 28,      /* byte: L2/L3/L4_OK bits */
	GNIC_MLX5_CQE_L4_HDR_TYPE_ETC = 29, /* byte: l4_hdr_type[6:4] l3_hdr_type[3:2] */
	GNIC_MLX5_CQE_L2_OK = 1 << 0,
	GNIC_MLX5_CQE_L3_OK = 1 << 1,
	GNIC_MLX5_CQE_L4_OK = 1 << 2,
	GNIC_MLX5_CQE_L3_HDR_TYPE_NONE = 0x0,
	GNIC_MLX5_CQE_L3_HDR_TYPE_IPV6 = 0x1,
	GNIC_MLX5_CQE_L3_HDR_TYPE_IPV4 = 0x2,
	GNIC_MLX5_CQE_L4_HDR_TYPE_NONE = 0x0,
	GNIC_MLX5_CQE_L4_HDR_TYPE_TCP_NO_ACK = 0x1,
	GNIC_MLX5_CQE_L4_HDR_TYPE_UDP = 0x2,
	GNIC_MLX5_CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA = 0x3,
	GNIC_MLX5_CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA = 0x4,
	GNIC_MLX5_FLOW_TAG_MASK = 0x00ffffff,
};

struct gnic_mlx5_cqe64 {
	uint8_t rsvd0[32];
	gnic_be32_t srqn_uidx;
	gnic_be32_t imm_inval_pkey;
	uint8_t app;
	uint8_t app_op;
	gnic_be16_t app_info;
	gnic_be32_t byte_cnt;
	gnic_be64_t timestamp;
	gnic_be32_t sop_drop_qpn; /* requester: WQE opcode[31:24]; qpn[23:0] */
	gnic_be16_t wqe_counter;
	uint8_t signature;
	uint8_t op_own; /* opcode[7:4] format[3:2] se[1] owner[0] */
};

struct gnic_mlx5_err_cqe {
	uint8_t rsvd0[32];
	gnic_be32_t srqn;
	uint8_t rsvd1[18];
	uint8_t vendor_err_synd;
	uint8_t syndrome;
	gnic_be32_t s_wqe_opcode_qpn;
	gnic_be16_t wqe_counter;
	uint8_t signature;
	uint8_t op_own;
};

/* ctrl.opmod_idx_opcode / qpn_ds, in host order before gnic_be32(). */
GNIC_HD uint32_t gnic_mlx5_ctrl_word0(uint8_t opmod, uint16_t idx, uint8_t opcode)
{
	return ((uint32_t)opmod << 24) | ((uint32_t)idx << 8) | opcode;
}

GNIC_HD uint32_t gnic_mlx5_ctrl_word1(uint32_t qpn, uint32_t ds)
{
	return (qpn << 8) | (ds & 0x3f);
}

GNIC_HD uint8_t gnic_mlx5_cqe_opcode(uint8_t op_own)
{
	return op_own >> 4;
}

/* Software owns CQE n when it is valid and its owner bit is !!(n & cqe_cnt). */
GNIC_HD int gnic_mlx5_cqe_sw_owned(uint8_t op_own, uint32_t n, uint32_t cqe_cnt)
{
	return gnic_mlx5_cqe_opcode(op_own) != GNIC_MLX5_CQE_INVALID &&
	       (op_own & 1) == !!(n & cqe_cnt);
}

#endif /* GNIC_MLX5_H */
