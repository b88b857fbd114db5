// SPDX-License-Identifier: MIT
/*
 * Pin include/gnic/gnic_mlx5.h to rdma-core's <infiniband/mlx5dv.h>: every
 * segment and CQE field offset and size, every constant, the byte swaps and
 * the CQE ownership rule. Device code uses gnic_mlx5.h instead of mlx5dv.h,
 * so a drift here would corrupt WQEs silently.
 */
#include <endian.h>
#include <stddef.h>

#include <infiniband/mlx5dv.h>

#include "common.h"
#include "av.h" /* gnic-emu's datagram layouts */
#include "gnic/gnic_mlx5.h"

#define FIELD_SIZE(type, field) sizeof(((type *)0)->field)

/* Same offset and size for a gnic field and its mlx5dv counterpart. */
#define PIN(gtype, gfield, mtype, mfield)                                                          \
	do {                                                                                       \
		CHECK_EQ(offsetof(gtype, gfield), offsetof(mtype, mfield));                        \
		CHECK_EQ(FIELD_SIZE(gtype, gfield), FIELD_SIZE(mtype, mfield));                    \
	} while (0)

static void test_ctrl_seg(void)
{
	t_case("ctrl segment");
	CHECK_EQ(sizeof(struct gnic_mlx5_ctrl_seg), sizeof(struct mlx5_wqe_ctrl_seg));
	CHECK_EQ(sizeof(struct gnic_mlx5_ctrl_seg), 16);
	PIN(struct gnic_mlx5_ctrl_seg, opmod_idx_opcode, struct mlx5_wqe_ctrl_seg,
	    opmod_idx_opcode);
	PIN(struct gnic_mlx5_ctrl_seg, qpn_ds, struct mlx5_wqe_ctrl_seg, qpn_ds);
	PIN(struct gnic_mlx5_ctrl_seg, signature, struct mlx5_wqe_ctrl_seg, signature);
	PIN(struct gnic_mlx5_ctrl_seg, rsvd, struct mlx5_wqe_ctrl_seg, dci_stream_channel_id);
	PIN(struct gnic_mlx5_ctrl_seg, fm_ce_se, struct mlx5_wqe_ctrl_seg, fm_ce_se);
	PIN(struct gnic_mlx5_ctrl_seg, imm, struct mlx5_wqe_ctrl_seg, imm);
}

static void test_data_segs(void)
{
	t_case("raddr/data/inline/atomic segments");
	CHECK_EQ(sizeof(struct gnic_mlx5_raddr_seg), sizeof(struct mlx5_wqe_raddr_seg));
	PIN(struct gnic_mlx5_raddr_seg, raddr, struct mlx5_wqe_raddr_seg, raddr);
	PIN(struct gnic_mlx5_raddr_seg, rkey, struct mlx5_wqe_raddr_seg, rkey);
	PIN(struct gnic_mlx5_raddr_seg, reserved, struct mlx5_wqe_raddr_seg, reserved);

	CHECK_EQ(sizeof(struct gnic_mlx5_data_seg), sizeof(struct mlx5_wqe_data_seg));
	PIN(struct gnic_mlx5_data_seg, byte_count, struct mlx5_wqe_data_seg, byte_count);
	PIN(struct gnic_mlx5_data_seg, lkey, struct mlx5_wqe_data_seg, lkey);
	PIN(struct gnic_mlx5_data_seg, addr, struct mlx5_wqe_data_seg, addr);

	CHECK_EQ(sizeof(struct gnic_mlx5_inl_seg), sizeof(struct mlx5_wqe_inl_data_seg));
	PIN(struct gnic_mlx5_inl_seg, byte_count, struct mlx5_wqe_inl_data_seg, byte_count);

	CHECK_EQ(sizeof(struct gnic_mlx5_atomic_seg), sizeof(struct mlx5_wqe_atomic_seg));
	PIN(struct gnic_mlx5_atomic_seg, swap_add, struct mlx5_wqe_atomic_seg, swap_add);
	PIN(struct gnic_mlx5_atomic_seg, compare, struct mlx5_wqe_atomic_seg, compare);
	CHECK_EQ(GNIC_MLX5_SEG_SIZE, sizeof(struct mlx5_wqe_data_seg));

	t_case("eth segment");
	CHECK_EQ(sizeof(struct gnic_mlx5_eth_seg), sizeof(struct mlx5_wqe_eth_seg));
	PIN(struct gnic_mlx5_eth_seg, cs_flags, struct mlx5_wqe_eth_seg, cs_flags);
	PIN(struct gnic_mlx5_eth_seg, mss, struct mlx5_wqe_eth_seg, mss);
	PIN(struct gnic_mlx5_eth_seg, inline_hdr_sz, struct mlx5_wqe_eth_seg, inline_hdr_sz);
	PIN(struct gnic_mlx5_eth_seg, inline_hdr_start, struct mlx5_wqe_eth_seg, inline_hdr_start);
	PIN(struct gnic_mlx5_eth_seg, inline_hdr, struct mlx5_wqe_eth_seg, inline_hdr);
	CHECK_EQ(GNIC_MLX5_ETH_INLINE_HDR_OFF, offsetof(struct mlx5_wqe_eth_seg, inline_hdr_start));
	CHECK_EQ(GNIC_MLX5_ETH_WQE_L3_CSUM, MLX5_ETH_WQE_L3_CSUM);
	CHECK_EQ(GNIC_MLX5_ETH_WQE_L4_CSUM, MLX5_ETH_WQE_L4_CSUM);
}

static void test_cqe(void)
{
	t_case("cqe64");
	CHECK_EQ(sizeof(struct gnic_mlx5_cqe64), sizeof(struct mlx5_cqe64));
	CHECK_EQ(sizeof(struct gnic_mlx5_cqe64), 64);
	CHECK_EQ(FIELD_SIZE(struct gnic_mlx5_cqe64, rsvd0), offsetof(struct mlx5_cqe64, srqn_uidx));
	PIN(struct gnic_mlx5_cqe64, srqn_uidx, struct mlx5_cqe64, srqn_uidx);
	PIN(struct gnic_mlx5_cqe64, imm_inval_pkey, struct mlx5_cqe64, imm_inval_pkey);
	PIN(struct gnic_mlx5_cqe64, app, struct mlx5_cqe64, app);
	PIN(struct gnic_mlx5_cqe64, app_op, struct mlx5_cqe64, app_op);
	PIN(struct gnic_mlx5_cqe64, app_info, struct mlx5_cqe64, app_info);
	PIN(struct gnic_mlx5_cqe64, byte_cnt, struct mlx5_cqe64, byte_cnt);
	PIN(struct gnic_mlx5_cqe64, timestamp, struct mlx5_cqe64, timestamp);
	PIN(struct gnic_mlx5_cqe64, sop_drop_qpn, struct mlx5_cqe64, sop_drop_qpn);
	PIN(struct gnic_mlx5_cqe64, wqe_counter, struct mlx5_cqe64, wqe_counter);
	PIN(struct gnic_mlx5_cqe64, signature, struct mlx5_cqe64, signature);
	PIN(struct gnic_mlx5_cqe64, op_own, struct mlx5_cqe64, op_own);
	CHECK_EQ(GNIC_MLX5_CQE_HDS_IP_EXT, offsetof(struct mlx5_cqe64, hds_ip_ext));
	CHECK_EQ(GNIC_MLX5_CQE_L4_HDR_TYPE_ETC, offsetof(struct mlx5_cqe64, l4_hdr_type_etc));
	CHECK_EQ(GNIC_MLX5_CQE_L2_OK, MLX5_CQE_L2_OK);
	CHECK_EQ(GNIC_MLX5_CQE_L3_OK, MLX5_CQE_L3_OK);
	CHECK_EQ(GNIC_MLX5_CQE_L4_OK, MLX5_CQE_L4_OK);
	CHECK_EQ(GNIC_MLX5_CQE_L3_HDR_TYPE_IPV4, MLX5_CQE_L3_HDR_TYPE_IPV4);
	CHECK_EQ(GNIC_MLX5_CQE_L3_HDR_TYPE_IPV6, MLX5_CQE_L3_HDR_TYPE_IPV6);

	t_case("err_cqe");
	CHECK_EQ(sizeof(struct gnic_mlx5_err_cqe), sizeof(struct mlx5_err_cqe));
	PIN(struct gnic_mlx5_err_cqe, rsvd0, struct mlx5_err_cqe, rsvd0);
	PIN(struct gnic_mlx5_err_cqe, srqn, struct mlx5_err_cqe, srqn);
	PIN(struct gnic_mlx5_err_cqe, rsvd1, struct mlx5_err_cqe, rsvd1);
	PIN(struct gnic_mlx5_err_cqe, vendor_err_synd, struct mlx5_err_cqe, vendor_err_synd);
	PIN(struct gnic_mlx5_err_cqe, syndrome, struct mlx5_err_cqe, syndrome);
	PIN(struct gnic_mlx5_err_cqe, s_wqe_opcode_qpn, struct mlx5_err_cqe, s_wqe_opcode_qpn);
	PIN(struct gnic_mlx5_err_cqe, wqe_counter, struct mlx5_err_cqe, wqe_counter);
	PIN(struct gnic_mlx5_err_cqe, signature, struct mlx5_err_cqe, signature);
	PIN(struct gnic_mlx5_err_cqe, op_own, struct mlx5_err_cqe, op_own);
}

static void test_opcodes(void)
{
	t_case("send opcodes");
	CHECK_EQ(GNIC_MLX5_OPCODE_NOP, MLX5_OPCODE_NOP);
	CHECK_EQ(GNIC_MLX5_OPCODE_SEND_INVAL, MLX5_OPCODE_SEND_INVAL);
	CHECK_EQ(GNIC_MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(GNIC_MLX5_OPCODE_RDMA_WRITE_IMM, MLX5_OPCODE_RDMA_WRITE_IMM);
	CHECK_EQ(GNIC_MLX5_OPCODE_SEND, MLX5_OPCODE_SEND);
	CHECK_EQ(GNIC_MLX5_OPCODE_SEND_IMM, MLX5_OPCODE_SEND_IMM);
	CHECK_EQ(GNIC_MLX5_OPCODE_RDMA_READ, MLX5_OPCODE_RDMA_READ);
	CHECK_EQ(GNIC_MLX5_OPCODE_ATOMIC_CS, MLX5_OPCODE_ATOMIC_CS);
	CHECK_EQ(GNIC_MLX5_OPCODE_ATOMIC_FA, MLX5_OPCODE_ATOMIC_FA);
	CHECK_EQ(GNIC_MLX5_OPCODE_ATOMIC_MASKED_CS, MLX5_OPCODE_ATOMIC_MASKED_CS);
	CHECK_EQ(GNIC_MLX5_OPCODE_ATOMIC_MASKED_FA, MLX5_OPCODE_ATOMIC_MASKED_FA);

	t_case("cqe opcodes");
	CHECK_EQ(GNIC_MLX5_CQE_REQ, MLX5_CQE_REQ);
	CHECK_EQ(GNIC_MLX5_CQE_RESP_WR_IMM, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(GNIC_MLX5_CQE_RESP_SEND, MLX5_CQE_RESP_SEND);
	CHECK_EQ(GNIC_MLX5_CQE_RESP_SEND_IMM, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(GNIC_MLX5_CQE_RESP_SEND_INV, MLX5_CQE_RESP_SEND_INV);
	CHECK_EQ(GNIC_MLX5_CQE_REQ_ERR, MLX5_CQE_REQ_ERR);
	CHECK_EQ(GNIC_MLX5_CQE_RESP_ERR, MLX5_CQE_RESP_ERR);
	CHECK_EQ(GNIC_MLX5_CQE_INVALID, MLX5_CQE_INVALID);
}

static void test_syndromes(void)
{
	t_case("error syndromes");
	CHECK_EQ(GNIC_MLX5_SYND_LOCAL_LENGTH, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_LOCAL_QP_OP, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_LOCAL_PROT, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_WR_FLUSH, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_MW_BIND, MLX5_CQE_SYNDROME_MW_BIND_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_BAD_RESP, MLX5_CQE_SYNDROME_BAD_RESP_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_LOCAL_ACCESS, MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_REMOTE_INVAL_REQ, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_REMOTE_ACCESS, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_REMOTE_OP, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_TRANSPORT_RETRY_EXC, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_RNR_RETRY_EXC, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
	CHECK_EQ(GNIC_MLX5_SYND_REMOTE_ABORTED, MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR);
	/* "no error" must not collide with any hardware syndrome */
	CHECK_EQ(GNIC_MLX5_SYND_OK, 0);
}

static void test_flags(void)
{
	t_case("ctrl flags and fence modes");
	CHECK_EQ(GNIC_MLX5_CTRL_SOLICITED, MLX5_WQE_CTRL_SOLICITED);
	CHECK_EQ(GNIC_MLX5_CTRL_CQ_UPDATE, MLX5_WQE_CTRL_CQ_UPDATE);
	CHECK_EQ(GNIC_MLX5_FM_SMALL, MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
	CHECK_EQ(GNIC_MLX5_FM_SMALL_AND_FENCE, MLX5_WQE_CTRL_FENCE);
	/* mlx5dv.h names only two fence modes; the others are fm[7:5] = 0, 2, 3 */
	CHECK_EQ(GNIC_MLX5_FM_NONE, 0x00);
	CHECK_EQ(GNIC_MLX5_FM_FENCE, 0x40);
	CHECK_EQ(GNIC_MLX5_FM_STRONG, 0x60);
	CHECK_EQ(GNIC_MLX5_CTRL_FM_MASK, 0xe0);
	CHECK_EQ(GNIC_MLX5_CTRL_FM_MASK & (GNIC_MLX5_CTRL_SOLICITED | GNIC_MLX5_CTRL_CQ_UPDATE), 0);

	t_case("queue and doorbell constants");
	CHECK_EQ(GNIC_MLX5_SEND_WQE_BB, MLX5_SEND_WQE_BB);
	CHECK_EQ(GNIC_MLX5_SEND_WQE_SHIFT, MLX5_SEND_WQE_SHIFT);
	CHECK_EQ(1u << GNIC_MLX5_SEND_WQE_SHIFT, GNIC_MLX5_SEND_WQE_BB);
	CHECK_EQ(GNIC_MLX5_INVALID_LKEY, MLX5_INVALID_LKEY);
	CHECK_EQ(GNIC_MLX5_INLINE_SEG, MLX5_INLINE_SEG);
	CHECK_EQ(GNIC_MLX5_INLINE_SCATTER_32, MLX5_INLINE_SCATTER_32);
	CHECK_EQ(GNIC_MLX5_INLINE_SCATTER_64, MLX5_INLINE_SCATTER_64);
	CHECK_EQ(GNIC_MLX5_CQE_FORMAT_MASK, 0xc); /* cqe_format, op_own[3:2] in mlx5_ifc.h */
	CHECK_EQ(GNIC_MLX5_RCV_DBR, MLX5_RCV_DBR);
	CHECK_EQ(GNIC_MLX5_SND_DBR, MLX5_SND_DBR);
	CHECK_EQ(GNIC_MLX5_CQ_DB_REQ_NOT_SOL, MLX5_CQ_DB_REQ_NOT_SOL);
	CHECK_EQ(GNIC_MLX5_CQ_DB_REQ_NOT, MLX5_CQ_DB_REQ_NOT);
	/* Not in mlx5dv.h; values from the mlx5 data-path facts. */
	CHECK_EQ(GNIC_MLX5_MAX_WQE_BB, 16);
	CHECK_EQ(GNIC_MLX5_MAX_DS, 63);
	CHECK_EQ(GNIC_MLX5_BF_OFFSET, 0x800);
	CHECK_EQ(GNIC_MLX5_BF_SIZE, 256);
}

static void check_swaps(uint64_t v)
{
	CHECK_EQ(gnic_be16((uint16_t)v), htobe16((uint16_t)v));
	CHECK_EQ(gnic_be32((uint32_t)v), htobe32((uint32_t)v));
	CHECK_EQ(gnic_be64(v), htobe64(v));
	CHECK_EQ(gnic_be16(gnic_be16((uint16_t)v)), (uint16_t)v);
	CHECK_EQ(gnic_be32(gnic_be32((uint32_t)v)), (uint32_t)v);
	CHECK_EQ(gnic_be64(gnic_be64(v)), v);
}

static void test_byte_swaps(void)
{
	static const uint64_t fixed[] = {0,
	                                 1,
	                                 0xff,
	                                 0x0100,
	                                 0x1234,
	                                 0x12345678,
	                                 0x80000000,
	                                 0xffffffff,
	                                 0x0102030405060708ull,
	                                 0x8000000000000000ull,
	                                 0xffffffffffffffffull};
	uint64_t x = 0x243f6a8885a308d3ull;

	t_case("gnic_be16/32/64 against htobe*");
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		check_swaps(fixed[i]);
	for (int i = 0; i < 100000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		check_swaps(x);
	}
	/* The wire bytes themselves: most significant byte first. */
	uint32_t w = gnic_be32(0x11223344);
	const uint8_t *b = (const uint8_t *)&w;

	CHECK_EQ(b[0], 0x11);
	CHECK_EQ(b[3], 0x44);
}

/* Build a ctrl segment with the gnic helpers and with mlx5dv's: same bytes. */
static void check_ctrl(uint16_t idx, uint8_t opcode, uint8_t opmod, uint32_t qpn, uint8_t ds,
                       uint8_t fm_ce_se, uint32_t imm)
{
	struct gnic_mlx5_ctrl_seg g;
	struct mlx5_wqe_ctrl_seg m;

	memset(&g, 0, sizeof(g));
	memset(&m, 0, sizeof(m));
	g.opmod_idx_opcode = gnic_be32(gnic_mlx5_ctrl_word0(opmod, idx, opcode));
	g.qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(qpn, ds));
	g.signature = 0;
	g.fm_ce_se = fm_ce_se;
	g.imm = imm;
	mlx5dv_set_ctrl_seg(&m, idx, opcode, opmod, qpn, fm_ce_se, ds, 0, imm);
	CHECK_MEM(&g, &m, sizeof(g));
}

static void test_ctrl_helpers(void)
{
	t_case("ctrl word helpers against mlx5dv_set_ctrl_seg");
	check_ctrl(0, GNIC_MLX5_OPCODE_RDMA_WRITE, 0, 0x123, 3, GNIC_MLX5_CTRL_CQ_UPDATE, 0);
	check_ctrl(0xffff, GNIC_MLX5_OPCODE_SEND_IMM, 0, 0xabcdef, 63,
	           GNIC_MLX5_CTRL_CQ_UPDATE | GNIC_MLX5_CTRL_SOLICITED, htobe32(0xdeadbeef));
	check_ctrl(0x1234, GNIC_MLX5_OPCODE_ATOMIC_MASKED_FA, 0x09, 0x100, 4,
	           GNIC_MLX5_FM_SMALL_AND_FENCE, 0);
	/* ds is a 6-bit field: higher bits must not leak into the QPN */
	CHECK_EQ(gnic_mlx5_ctrl_word1(0x10, 0x41), (0x10u << 8) | 1);
	CHECK_EQ(gnic_mlx5_ctrl_word0(0xff, 0xffff, 0xff), 0xffffffffu);
	CHECK_EQ(gnic_mlx5_ctrl_word0(0, 1, 0), 0x100u);

	t_case("data segment bytes against mlx5dv_set_data_seg");
	struct gnic_mlx5_data_seg g = {.byte_count = gnic_be32(4097),
	                               .lkey = gnic_be32(0x12345),
	                               .addr = gnic_be64(0x00007f0012345678ull)};
	struct mlx5_wqe_data_seg m;

	mlx5dv_set_data_seg(&m, 4097, 0x12345, 0x00007f0012345678ull);
	CHECK_MEM(&g, &m, sizeof(g));
}

struct own_row {
	uint8_t op_own;
	uint32_t n, cnt;
	int sw_owned;
};

static void test_cqe_ownership(void)
{
	static const struct own_row rows[] = {
	    {0xf0, 0, 8, 0}, /* fresh CQE: INVALID */
	    {0xf1, 8, 8, 0}, /* INVALID even with a matching owner bit */
	    {0xf0, 8, 8, 0},
	    {0x00, 0, 8, 1}, /* REQ, pass 0, owner 0 */
	    {0x01, 0, 8, 0}, /* owner 1 in pass 0: left from before */
	    {0x00, 8, 8, 0}, /* pass 1 wants owner 1 */
	    {0x01, 8, 8, 1},
	    {0x01, 15, 8, 1},
	    {0x00, 16, 8, 1}, /* pass 2 */
	    {0xd0, 7, 8, 1},  /* REQ_ERR is a valid CQE */
	    {0xd1, 7, 8, 0},
	    {0xe1, 9, 8, 1}, /* RESP_ERR, pass 1 */
	    {0x22, 0, 8, 1}, /* SE bit is not the owner bit */
	    {0x23, 0, 8, 0},
	    {0x01, 1, 1, 1}, /* one-entry CQ */
	    {0x00, 1, 1, 0},
	    {0x10, 0x1000000, 0x1000000, 0},
	    {0x11, 0x1000000, 0x1000000, 1},
	};
	static const uint32_t cnts[] = {1, 2, 8, 32};

	t_case("gnic_mlx5_cqe_sw_owned truth table");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct own_row *r = &rows[i];
		int got = gnic_mlx5_cqe_sw_owned(r->op_own, r->n, r->cnt);

		if (!!got != r->sw_owned)
			T_FAIL("cqe_sw_owned(op_own 0x%02x, n %u, cnt %u) = %d, want %d", r->op_own,
			       r->n, r->cnt, got, r->sw_owned);
	}

	t_case("gnic_mlx5_cqe_sw_owned against the mlx5 rule, exhaustive");
	for (size_t c = 0; c < sizeof(cnts) / sizeof(cnts[0]); c++) {
		for (uint32_t n = 0; n < 4 * cnts[c]; n++) {
			for (int op = 0; op < 256; op++) {
				struct mlx5_cqe64 cqe = {.op_own = (uint8_t)op};
				int want = mlx5dv_get_cqe_opcode(&cqe) != MLX5_CQE_INVALID &&
				           !((op & MLX5_CQE_OWNER_MASK) ^ !!(n & cnts[c]));

				if (!!gnic_mlx5_cqe_sw_owned((uint8_t)op, n, cnts[c]) != want)
					T_FAIL("cqe_sw_owned(0x%02x, %u, %u) != %d", op, n, cnts[c],
					       want);
				CHECK_EQ(gnic_mlx5_cqe_opcode((uint8_t)op),
				         mlx5dv_get_cqe_opcode(&cqe));
			}
		}
	}
}

/* emu/av.h: the address vector of a UD WQE and an AH, and the responder
 * fields of a CQE's first 32 bytes. */
static void test_ud_layout(void)
{
	t_case("datagram segment (address vector) and UD CQE fields");
	CHECK_EQ(sizeof(struct emu_mlx5_av), sizeof(struct mlx5_wqe_av));
	CHECK_EQ(sizeof(struct emu_mlx5_av), sizeof(struct mlx5_wqe_datagram_seg));
	PIN(struct emu_mlx5_av, qkey, struct mlx5_wqe_av, key.qkey.qkey);
	PIN(struct emu_mlx5_av, dqp_dct, struct mlx5_wqe_av, dqp_dct);
	PIN(struct emu_mlx5_av, stat_rate_sl, struct mlx5_wqe_av, stat_rate_sl);
	PIN(struct emu_mlx5_av, fl_mlid, struct mlx5_wqe_av, fl_mlid);
	PIN(struct emu_mlx5_av, rlid, struct mlx5_wqe_av, rlid);
	PIN(struct emu_mlx5_av, rmac, struct mlx5_wqe_av, rmac);
	PIN(struct emu_mlx5_av, tclass, struct mlx5_wqe_av, tclass);
	PIN(struct emu_mlx5_av, hop_limit, struct mlx5_wqe_av, hop_limit);
	PIN(struct emu_mlx5_av, grh_gid_fl, struct mlx5_wqe_av, grh_gid_fl);
	PIN(struct emu_mlx5_av, rgid, struct mlx5_wqe_av, rgid);
	CHECK_EQ(EMU_AV_EXTENDED, (uint32_t)MLX5_EXTENDED_UD_AV);
	PIN(struct emu_cqe_resp, ml_path, struct mlx5_cqe64, ml_path);
	PIN(struct emu_cqe_resp, slid, struct mlx5_cqe64, slid);
	PIN(struct emu_cqe_resp, flags_rqpn, struct mlx5_cqe64, flags_rqpn);
	PIN(struct emu_cqe_resp, l4_hdr_type_etc, struct mlx5_cqe64, l4_hdr_type_etc);
	CHECK_EQ(sizeof(struct emu_cqe_resp), offsetof(struct mlx5_cqe64, srqn_uidx));
}

int main(void)
{
	test_ctrl_seg();
	test_data_segs();
	test_cqe();
	test_opcodes();
	test_syndromes();
	test_flags();
	test_byte_swaps();
	test_ctrl_helpers();
	test_cqe_ownership();
	test_ud_layout();
	printf("PASS\n");
	return T_EXIT_PASS;
}
