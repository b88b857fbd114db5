// SPDX-License-Identifier: MIT
/*
 * Pin include/internal/prm.h, the table of PRM fields gnic-emu and libgnic share, to the ConnectX PRM layout
 * (as include/linux/mlx5/mlx5_ifc.h mirrors it): every field's bit offset
 * and width, written here a second time from the mlx5_ifc structures, must
 * be where prm_set puts its bits; byte images of known commands; the
 * mailbox sizes; and the accessors' round trips, in every width and at
 * every position in a word.
 */
#include "common.h"
#include "prm.h"

struct pin {
	const char *name;
	struct prm_fld f;
	unsigned int off, bits; /* from mlx5_ifc: bit offset in the structure, width */
};

#define P(field, off, bits)                                                                        \
	{                                                                                          \
#field, field, off, bits                                                           \
	}
static const struct pin pins[] = {
    /* command headers */
    P(PRM_IN_OPCODE, 0x00, 16),
    P(PRM_IN_UID, 0x10, 16),
    P(PRM_IN_OP_MOD, 0x30, 16),
    P(PRM_OUT_STATUS, 0x00, 8),
    P(PRM_OUT_SYND, 0x20, 32),
    /* cmd_hca_cap */
    P(PRM_CAP_LOG_MAX_SRQ_SZ, 0x80, 8),
    P(PRM_CAP_LOG_MAX_QP_SZ, 0x88, 8),
    P(PRM_CAP_LOG_MAX_QP, 0x9b, 5),
    P(PRM_CAP_LOG_MAX_SRQ, 0xab, 5),
    P(PRM_CAP_LOG_MAX_CQ_SZ, 0xc8, 8),
    P(PRM_CAP_LOG_MAX_CQ, 0xdb, 5),
    P(PRM_CAP_LOG_MAX_EQ_SZ, 0xe0, 8),
    P(PRM_CAP_LOG_MAX_MKEY, 0xea, 6),
    P(PRM_CAP_LOG_MAX_EQ, 0xfc, 4),
    P(PRM_CAP_LOG_MAX_MRW_SZ, 0x109, 7),
    P(PRM_CAP_LOG_MAX_RA_REQ, 0x14a, 6),
    P(PRM_CAP_LOG_MAX_RA_RES, 0x15a, 6),
    P(PRM_CAP_PORT_TYPE, 0x1b6, 2),
    P(PRM_CAP_NUM_PORTS, 0x1b8, 8),
    P(PRM_CAP_LOG_MAX_MSG, 0x1c3, 5),
    P(PRM_CAP_CQE_VERSION, 0x1fc, 4),
    P(PRM_CAP_SCTR_DATA_CQE, 0x215, 1),
    P(PRM_CAP_ROCE, 0x21d, 1),
    P(PRM_CAP_ATOMIC, 0x21e, 1),
    P(PRM_CAP_CQ_OI, 0x220, 1),
    P(PRM_CAP_UAR_4K, 0x240, 1),
    P(PRM_CAP_UAR_SZ, 0x24a, 6),
    P(PRM_CAP_LOG_PG_SZ, 0x258, 8),
    P(PRM_CAP_BF, 0x260, 1),
    P(PRM_CAP_LOG_BF_REG_SIZE, 0x26b, 5),
    P(PRM_CAP_MAX_WQE_SZ_SQ, 0x290, 16),
    P(PRM_CAP_MAX_WQE_SZ_RQ, 0x2b0, 16),
    P(PRM_CAP_LOG_MAX_PD, 0x32b, 5),
    P(PRM_CAP_LOG_UAR_PAGE_SZ, 0x490, 16),
    P(PRM_CAP_LOG_MAX_ATOMIC_QP, 0x580, 8),
    /* atomic_caps, roce_cap */
    P(PRM_ATOMIC_REQ_8B_ENDIAN, 0x40, 2),
    P(PRM_ATOMIC_SUPP_8B_MODE_1, 0x46, 1),
    P(PRM_ATOMIC_OPERATIONS, 0x90, 16),
    P(PRM_ATOMIC_SIZE_QP, 0xb0, 16),
    P(PRM_ROCE_L3_TYPE, 0x8c, 4),
    P(PRM_ROCE_VERSION, 0x98, 8),
    P(PRM_ROCE_DEST_UDP_PORT, 0xb0, 16),
    P(PRM_ROCE_MAX_SRC_UDP, 0xc0, 16),
    P(PRM_ROCE_MIN_SRC_UDP, 0xd0, 16),
    P(PRM_ROCE_ADDR_TABLE_SIZE, 0xf0, 16),
    /* nic_vport_context, roce_addr_layout, query_roce_address_in */
    P(PRM_VPORT_ROCE_EN, 0x1f, 1),
    P(PRM_VPORT_MTU, 0x130, 16),
    P(PRM_VPORT_MAC_47_32, 0x7b0, 16),
    P(PRM_VPORT_MAC_31_0, 0x7c0, 32),
    P(PRM_ROCE_ADDR_IN_INDEX, 0x40, 16),
    P(PRM_ROCE_ADDR_IN_PORT, 0x5c, 4),
    P(PRM_ROCE_ADDR_MAC_47_32, 0x90, 16),
    P(PRM_ROCE_ADDR_MAC_31_0, 0xa0, 32),
    P(PRM_ROCE_ADDR_L3_TYPE, 0xd4, 4),
    P(PRM_ROCE_ADDR_VERSION, 0xd8, 8),
    /* create_cq_in, cqc */
    P(PRM_CREATE_CQ_IN_UMEM_ID, 0x2c0, 32),
    P(PRM_CREATE_CQ_IN_UMEM_VAL, 0x2e0, 1),
    P(PRM_CREATE_CQ_OUT_CQN, 0x48, 24),
    P(PRM_CQC_STATUS, 0x00, 4),
    P(PRM_CQC_DBR_UMEM_VALID, 0x06, 1),
    P(PRM_CQC_CQE_SZ, 0x08, 3),
    P(PRM_CQC_CC, 0x0b, 1),
    P(PRM_CQC_OI, 0x0f, 1),
    P(PRM_CQC_CQE_COMP_EN, 0x12, 1),
    P(PRM_CQC_ST, 0x14, 4),
    P(PRM_CQC_DBR_UMEM_ID, 0x20, 32),
    P(PRM_CQC_PAGE_OFFSET, 0x54, 6),
    P(PRM_CQC_LOG_CQ_SIZE, 0x63, 5),
    P(PRM_CQC_UAR_PAGE, 0x68, 24),
    P(PRM_CQC_CQ_PERIOD, 0x84, 12),
    P(PRM_CQC_CQ_MAX_COUNT, 0x90, 16),
    P(PRM_CQC_C_EQN, 0xb8, 8),
    P(PRM_CQC_LOG_PAGE_SIZE, 0xc3, 5),
    P(PRM_CQC_CONSUMER_CNT, 0x148, 24),
    P(PRM_CQC_PRODUCER_CNT, 0x168, 24),
    /* QP commands, qpc */
    P(PRM_QP_IN_QPN, 0x48, 24),
    P(PRM_QP_IN_OPT_MASK, 0x80, 32),
    P(PRM_CREATE_QP_IN_UMEM_ID, 0x840, 32),
    P(PRM_CREATE_QP_IN_UMEM_VAL, 0x860, 1),
    P(PRM_CREATE_QP_OUT_QPN, 0x48, 24),
    P(PRM_QPC_STATE, 0x00, 4),
    P(PRM_QPC_ST, 0x08, 8),
    P(PRM_QPC_PM_STATE, 0x13, 2),
    P(PRM_QPC_PD, 0x28, 24),
    P(PRM_QPC_MTU, 0x40, 3),
    P(PRM_QPC_LOG_MSG_MAX, 0x43, 5),
    P(PRM_QPC_LOG_RQ_SIZE, 0x49, 4),
    P(PRM_QPC_LOG_RQ_STRIDE, 0x4d, 3),
    P(PRM_QPC_NO_SQ, 0x50, 1),
    P(PRM_QPC_LOG_SQ_SIZE, 0x51, 4),
    P(PRM_QPC_UAR_PAGE, 0x68, 24),
    P(PRM_QPC_USER_INDEX, 0x88, 24),
    P(PRM_QPC_LOG_PAGE_SIZE, 0xa3, 5),
    P(PRM_QPC_REMOTE_QPN, 0xa8, 24),
    P(PRM_QPC_LOG_ACK_FREQ, 0x380, 4),
    P(PRM_QPC_LOG_SRA_MAX, 0x388, 3),
    P(PRM_QPC_RETRY_COUNT, 0x38d, 3),
    P(PRM_QPC_RNR_RETRY, 0x390, 3),
    P(PRM_QPC_NEXT_SEND_PSN, 0x3c8, 24),
    P(PRM_QPC_CQN_SND, 0x3e8, 24),
    P(PRM_QPC_LOG_RRA_MAX, 0x488, 3),
    P(PRM_QPC_ATOMIC_MODE, 0x48c, 4),
    P(PRM_QPC_RRE, 0x490, 1),
    P(PRM_QPC_RWE, 0x491, 1),
    P(PRM_QPC_RAE, 0x492, 1),
    P(PRM_QPC_PAGE_OFFSET, 0x494, 6),
    P(PRM_QPC_MIN_RNR_NAK, 0x4a3, 5),
    P(PRM_QPC_NEXT_RCV_PSN, 0x4a8, 24),
    P(PRM_QPC_CQN_RCV, 0x4e8, 24),
    P(PRM_QPC_RQ_TYPE, 0x565, 3),
    P(PRM_QPC_SRQN, 0x568, 24),
    P(PRM_QPC_HW_SQ_WQEBB, 0x5a0, 16),
    P(PRM_QPC_HW_RQ_COUNTER, 0x5c0, 32),
    P(PRM_QPC_CS_REQ, 0x630, 8),
    P(PRM_QPC_CS_RES, 0x638, 8),
    P(PRM_QPC_DBR_UMEM_VALID, 0x683, 1),
    P(PRM_QPC_DBR_UMEM_ID, 0x720, 32),
    /* ads */
    P(PRM_ADS_PKEY_INDEX, 0x10, 16),
    P(PRM_ADS_GRH, 0x28, 1),
    P(PRM_ADS_RLID, 0x30, 16),
    P(PRM_ADS_ACK_TIMEOUT, 0x40, 5),
    P(PRM_ADS_SRC_ADDR_IDX, 0x48, 8),
    P(PRM_ADS_HOP_LIMIT, 0x58, 8),
    P(PRM_ADS_TCLASS, 0x64, 8),
    P(PRM_ADS_FLOW_LABEL, 0x6c, 20),
    P(PRM_ADS_UDP_SPORT, 0x110, 16),
    P(PRM_ADS_SL, 0x124, 4),
    P(PRM_ADS_VHCA_PORT, 0x128, 8),
    P(PRM_ADS_RMAC_47_32, 0x130, 16),
    P(PRM_ADS_RMAC_31_0, 0x140, 32),
};
#undef P

/* Is PRM bit b (bit 0 = MSB of byte 0) set? */
static bool bit_set(const uint8_t *buf, unsigned int b)
{
	return buf[b / 8] & (0x80u >> (b % 8));
}

static void test_pins(void)
{
	t_case("every field of prm.h at its mlx5_ifc bit offset and width (%zu fields)",
	       sizeof(pins) / sizeof(pins[0]));
	for (size_t i = 0; i < sizeof(pins) / sizeof(pins[0]); i++) {
		const struct pin *p = &pins[i];
		uint8_t buf[0x900 / 8] = {0};

		if (p->f.off != p->off || p->f.bits != p->bits)
			T_FAIL("%s: (0x%x, %u), mlx5_ifc has (0x%x, %u)", p->name, p->f.off,
			       p->f.bits, p->off, p->bits);
		if (p->off / 32 != (p->off + p->bits - 1) / 32)
			T_FAIL("%s crosses a 32-bit word", p->name);
		prm_set(buf, p->f, 0xffffffffu);
		for (unsigned int b = 0; b < sizeof(buf) * 8; b++)
			if (bit_set(buf, b) != (b >= p->off && b < p->off + p->bits))
				T_FAIL("%s: prm_set %s bit 0x%x", p->name,
				       bit_set(buf, b) ? "set" : "left", b);
		CHECK_EQ(prm_get(buf, p->f), p->bits == 32 ? 0xffffffffu : (1u << p->bits) - 1);
	}
	t_case("64-bit fields and nested structures at word-aligned offsets");
	CHECK_EQ(PRM_CQC_DBR_ADDR_OFF, 0x1c0);
	CHECK_EQ(PRM_QPC_DBR_ADDR_OFF, 0x500);
	CHECK_EQ(PRM_CREATE_CQ_IN_UMEM_OFF, 0x280);
	CHECK_EQ(PRM_CREATE_QP_IN_UMEM_OFF, 0x800);
	CHECK_EQ(PRM_CREATE_CQ_IN_CQC_OFF, 0x80);
	CHECK_EQ(PRM_QUERY_CQ_OUT_CQC_OFF, 0x80);
	CHECK_EQ(PRM_QP_IN_QPC_OFF, 0xc0);
	CHECK_EQ(PRM_QUERY_QP_OUT_QPC_OFF, 0xc0);
	CHECK_EQ(PRM_QPC_PATH_OFF, 0xc0);
	CHECK_EQ(PRM_ADS_RGID_OFF, 0x80);
	CHECK_EQ(PRM_QUERY_HCA_CAP_OUT_CAP_OFF, 0x80);
	CHECK_EQ(PRM_VPORT_NODE_GUID_OFF, 0x1c0);
}

static void test_sizes(void)
{
	t_case(
	    "mailbox sizes: create_qp_in 272, create_cq_in 272, query_hca_cap_out 4112, qpc 232");
	CHECK_EQ(PRM_QP_IN_BYTES, 272);
	CHECK_EQ(PRM_CREATE_CQ_IN_BYTES, 272);
	CHECK_EQ(PRM_QUERY_QP_OUT_BYTES, 272);
	CHECK_EQ(PRM_QUERY_CQ_OUT_BYTES, 272);
	CHECK_EQ(PRM_QUERY_HCA_CAP_OUT_BYTES, 4112);
	CHECK_EQ(PRM_NIC_VPORT_OUT_BYTES, 272);
	CHECK_EQ(PRM_ROCE_ADDR_OUT_BYTES, 48);
	CHECK_EQ(PRM_QPC_BYTES, 232);
	CHECK_EQ(PRM_HDR_BYTES, 16);
	t_case("status values");
	CHECK_EQ(PRM_STAT_BAD_OP, 0x02);
	CHECK_EQ(PRM_STAT_BAD_PARAM, 0x03);
	CHECK_EQ(PRM_STAT_BAD_QP_STATE, 0x10);
	CHECK_EQ(PRM_STAT_BAD_INP_LEN, 0x50);
	CHECK_EQ(PRM_STAT_BAD_OUTP_LEN, 0x51);
}

/* Byte images as a driver builds them (big-endian words, MSB-first bits). */
static void test_images(void)
{
	uint8_t in[PRM_QP_IN_BYTES] = {0};
	uint8_t *qpc = prm_at(in, PRM_QP_IN_QPC_OFF);

	t_case("QUERY_HCA_CAP, atomic caps, current: 01 00 00 00 00 00 00 07");
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_HCA_CAP);
	prm_set(in, PRM_IN_OP_MOD, PRM_CAPTYPE_ATOMIC << 1 | 1);
	CHECK_MEM(in, "\x01\x00\x00\x00\x00\x00\x00\x07", 8);

	t_case(
	    "qpc: pd 0x123456 in bytes 5-7 of the qpc, no_sq + log_sq_size 0xf as byte 10's 0xf8");
	prm_set(qpc, PRM_QPC_PD, 0x123456);
	prm_set(qpc, PRM_QPC_LOG_SQ_SIZE, 0xf);
	prm_set(qpc, PRM_QPC_NO_SQ, 1);
	CHECK_MEM(in + 24 + 5, "\x12\x34\x56", 3);
	CHECK_EQ(in[24 + 10], 0xf8);
	CHECK_EQ(prm_get(qpc, PRM_QPC_LOG_SQ_SIZE), 0xf);
	prm_set(qpc, PRM_QPC_LOG_SQ_SIZE, 0x3); /* neighbours untouched */
	CHECK_EQ(in[24 + 10], 0x98);
	CHECK_EQ(prm_get(qpc, PRM_QPC_NO_SQ), 1);

	t_case("dbr_addr, a 64-bit field: high word first");
	prm_set64(qpc, PRM_QPC_DBR_ADDR_OFF, 0x0102030405060708ull);
	CHECK_MEM(in + 24 + 160, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	CHECK_EQ(prm_get64(qpc, PRM_QPC_DBR_ADDR_OFF), 0x0102030405060708ull);
}

static void test_round_trip(void)
{
	t_case("prm_set / prm_get: every width at every position in a word, neighbours kept");
	for (unsigned int bits = 1; bits <= 32; bits++)
		for (unsigned int pos = 0; pos + bits <= 32; pos++) {
			struct prm_fld f = PRM_F((uint16_t)(32 + pos), (uint16_t)bits);
			uint8_t buf[12];
			uint32_t v = 0xa5c3e1f7u & (bits == 32 ? 0xffffffffu : (1u << bits) - 1);

			memset(buf, 0x5a, sizeof(buf));
			prm_set(buf, f, v);
			CHECK_EQ(prm_get(buf, f), v);
			CHECK_EQ(prm_word(buf, 0), 0x5a5a5a5au);
			CHECK_EQ(prm_word(buf, 2), 0x5a5a5a5au);
			for (unsigned int b = 32; b < 64; b++)
				if (b < 32 + pos || b >= 32 + pos + bits)
					CHECK_EQ(bit_set(buf, b), !!(0x5a & (0x80 >> (b % 8))));
		}
}

static const struct t_named_case cases[] = {
    {"pins", test_pins},
    {"sizes", test_sizes},
    {"images", test_images},
    {"round_trip", test_round_trip},
};

int main(int argc, char **argv)
{
	T_RUN_CASES(cases, argc, argv);
	return 0;
}
