/* SPDX-License-Identifier: MIT */
/*
 * The hardware layout of datagram addressing: mlx5's address vector (struct
 * mlx5_wqe_av of rdma-core's mlx5dv.h, 48 bytes), which an address handle
 * holds and a UD send WQE carries as its datagram segment right after the
 * ctrl segment, and the responder fields of the first 32 bytes of a CQE
 * (struct mlx5_cqe64: ml_path, slid, flags_rqpn, l4_hdr_type_etc).
 * tests/unit/test_layout.c pins both against rdma-core's headers. All
 * multi-byte fields are big-endian.
 */
#ifndef GNIC_EMU_AV_H
#define GNIC_EMU_AV_H

#include <stdint.h>

#include "gnic/gnic_mlx5.h"

#define EMU_AV_EXTENDED     0x80000000u /* dqp_dct: MLX5_EXTENDED_UD_AV */
#define EMU_AV_GRH          (1u << 30)  /* grh_gid_fl: InfiniBand, a GRH is sent */
#define EMU_AV_FLOW_MASK    0xfffffu
#define EMU_QKEY_PRIVILEGED 0x80000000u /* a WR Q_Key with it: use the QP's */
#define EMU_GRH_BYTES       40          /* struct ibv_grh */

struct emu_mlx5_av {
	gnic_be32_t qkey;
	gnic_be32_t rsvd;
	gnic_be32_t dqp_dct;  /* remote QPN | EMU_AV_EXTENDED */
	uint8_t stat_rate_sl; /* rate[7:4]; sl[3:0] on InfiniBand, sl[3:1] on RoCE */
	uint8_t fl_mlid;      /* InfiniBand: source path bits [6:0] */
	gnic_be16_t rlid;     /* InfiniBand: DLID; RoCE v2: UDP source port */
	uint8_t rsvd0[4];
	uint8_t rmac[6]; /* RoCE: the destination MAC */
	uint8_t tclass;
	uint8_t hop_limit;
	gnic_be32_t grh_gid_fl; /* grh[30] (InfiniBand), sgid_index[27:20], flow_label[19:0] */
	uint8_t rgid[16];
};
_Static_assert(sizeof(struct emu_mlx5_av) == 48, "mlx5_wqe_av is a hardware format");

/* The responder's part of a CQE's first 32 bytes (cqe64.rsvd0). */
struct emu_cqe_resp {
	uint8_t rsvd0[17];
	uint8_t ml_path; /* DLID path bits */
	uint8_t rsvd18[4];
	gnic_be16_t slid;
	gnic_be32_t flags_rqpn; /* grh[29:28] sl[27:24] source QPN[23:0] */
	uint8_t hds_ip_ext;
	uint8_t l4_hdr_type_etc; /* l3_hdr_type[3:2] */
	gnic_be16_t vlan_info;
};
_Static_assert(sizeof(struct emu_cqe_resp) == 32, "the first 32 bytes of a CQE");

#define EMU_CQE_RQPN_GRH    (1u << 28)
#define EMU_CQE_L3_IPV6     1u /* MLX5_CQE_L3_HDR_TYPE_IPV6 */
#define EMU_CQE_L3_IPV4     2u /* MLX5_CQE_L3_HDR_TYPE_IPV4 */
#define EMU_CQE_L3_HDR_SHFT 2

#endif /* GNIC_EMU_AV_H */
