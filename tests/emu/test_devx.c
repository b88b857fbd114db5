// SPDX-License-Identifier: MIT
/*
 * DEVX: queues made the way production GPU networking stacks make them (CQ
 * and RC QP in host-memory umem, PRM commands, a DEVX UAR), connected with
 * DEVX modify commands, driven with raw mlx5 WQEs and CQEs: WRITE, SEND/RECV
 * and READ both ways between two DEVX QPs and between a DEVX QP and a verbs
 * QP; QUERY_QP after each transition; QUERY_HCA_CAP against what the verbs
 * report; the PRM error statuses (BAD_OP, BAD_PARAM, BAD_QP_STATE,
 * BAD_INPUT_LEN, BAD_OUTPUT_LEN) and the kernel's EINVAL refusals.
 */
#include <poll.h>
#include <sched.h>

#include "devx_q.h"
#include "prm.h"

#define WAIT_MS 5000

#define CHECK_NULL_ERRNO_(expr, err)                                                               \
	do {                                                                                       \
		errno = 0;                                                                         \
		if ((expr) != NULL)                                                                \
			T_FAIL("%s did not fail", #expr);                                          \
		CHECK_EQ(errno, err);                                                              \
	} while (0)

static struct ibv_context *ctx;

static void query_cap(uint32_t type, uint8_t *out)
{
	uint8_t in[PRM_HDR_BYTES] = {0};

	prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_HCA_CAP);
	prm_set(in, PRM_IN_OP_MOD, type << 1 | 1);
	memset(out, 0xab, PRM_QUERY_HCA_CAP_OUT_BYTES);
	CHECK_OK(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, PRM_QUERY_HCA_CAP_OUT_BYTES));
	CHECK_EQ(dq_status(out), 0);
	CHECK_EQ(dq_syndrome(out), 0);
}

static void test_caps(void)
{
	static uint8_t out[PRM_QUERY_HCA_CAP_OUT_BYTES];
	const uint8_t *cap = prm_cat(out, PRM_QUERY_HCA_CAP_OUT_CAP_OFF);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;

	CHECK_OK(ibv_query_device(ctx, &da));
	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	t_case("QUERY_HCA_CAP general: the limits ibv_query_device reports");
	query_cap(PRM_CAPTYPE_GENERAL, out);
	CHECK_EQ(prm_get(cap, PRM_CAP_CQE_VERSION), 1);
	CHECK_EQ(prm_get(cap, PRM_CAP_LOG_BF_REG_SIZE), 9); /* two 256-byte halves */
	CHECK_EQ(1u << prm_get(cap, PRM_CAP_LOG_MAX_QP_SZ), (uint32_t)da.max_qp_wr);
	CHECK_EQ((1u << prm_get(cap, PRM_CAP_LOG_MAX_CQ_SZ)) - 1, (uint32_t)da.max_cqe);
	CHECK_EQ(1u << prm_get(cap, PRM_CAP_LOG_MAX_RA_REQ), (uint32_t)da.max_qp_init_rd_atom);
	CHECK_EQ(1u << prm_get(cap, PRM_CAP_LOG_MAX_RA_RES), (uint32_t)da.max_qp_rd_atom);
	CHECK_EQ(1ull << prm_get(cap, PRM_CAP_LOG_MAX_MSG), pa.max_msg_sz);
	CHECK_EQ(prm_get(cap, PRM_CAP_PORT_TYPE), pa.link_layer == IBV_LINK_LAYER_ETHERNET ? 1 : 0);
	CHECK_EQ(prm_get(cap, PRM_CAP_NUM_PORTS), da.phys_port_cnt);
	CHECK_EQ(prm_get(cap, PRM_CAP_ATOMIC), 1);
	CHECK_EQ(prm_get(cap, PRM_CAP_CQ_OI), 1);
	CHECK_EQ(prm_get(cap, PRM_CAP_MAX_WQE_SZ_SQ), 1024);

	t_case(
	    "QUERY_HCA_CAP atomic: 8-byte CAS/FA; the endianness mode says what atomic_cap says");
	query_cap(PRM_CAPTYPE_ATOMIC, out);
	CHECK_EQ(prm_get(cap, PRM_ATOMIC_OPERATIONS),
	         PRM_ATOMIC_OPS_CMP_SWAP | PRM_ATOMIC_OPS_FETCH_ADD);
	CHECK_EQ(prm_get(cap, PRM_ATOMIC_SIZE_QP), PRM_ATOMIC_SIZE_8B);
	/* mlx5_ib: IBV_ATOMIC_HCA exactly when 8-byte responses are host order */
	CHECK_EQ(prm_get(cap, PRM_ATOMIC_REQ_8B_ENDIAN), da.atomic_cap == IBV_ATOMIC_HCA ? 1 : 0);
	CHECK_EQ(prm_get(cap, PRM_ATOMIC_SUPP_8B_MODE_1), da.atomic_cap == IBV_ATOMIC_HCA ? 1 : 0);
	if (getenv("GNIC_EMU_ATOMIC_ENDIAN"))
		CHECK_EQ(prm_get(cap, PRM_ATOMIC_REQ_8B_ENDIAN),
		         strcmp(getenv("GNIC_EMU_ATOMIC_ENDIAN"), "big") ? 1 : 0);

	if (pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
		uint8_t in[PRM_HDR_BYTES] = {0};

		t_case("QUERY_HCA_CAP RoCE on an InfiniBand port: BAD_PARAM");
		prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_HCA_CAP);
		prm_set(in, PRM_IN_OP_MOD, PRM_CAPTYPE_ROCE << 1 | 1);
		CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)),
		          EREMOTEIO);
		CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);
		return;
	}
	t_case("QUERY_HCA_CAP RoCE: v1 and v2, UDP port 4791, the GID table's size");
	query_cap(PRM_CAPTYPE_ROCE, out);
	CHECK_EQ(prm_get(cap, PRM_ROCE_VERSION), 0x5);
	CHECK_EQ(prm_get(cap, PRM_ROCE_DEST_UDP_PORT), 4791);
	CHECK_EQ(prm_get(cap, PRM_ROCE_ADDR_TABLE_SIZE), (uint32_t)pa.gid_tbl_len);
}

static void test_vport(void)
{
	uint8_t in[PRM_HDR_BYTES] = {0}, out[PRM_NIC_VPORT_OUT_BYTES] = {0};
	uint8_t rin[PRM_HDR_BYTES] = {0}, rout[PRM_ROCE_ADDR_OUT_BYTES] = {0};
	const uint8_t *v = prm_cat(out, PRM_NIC_VPORT_OUT_CTX_OFF);
	const uint8_t *a = prm_cat(rout, PRM_ROCE_ADDR_OUT_OFF);
	union ibv_gid gid, ll;
	uint32_t lo;

	t_case("QUERY_NIC_VPORT_CONTEXT: the MAC the GID table's link-local entry is made of");
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_NIC_VPORT_CONTEXT);
	CHECK_OK(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)));
	CHECK_OK(ibv_query_gid(ctx, 1, 0, &ll)); /* fe80:: + EUI-64 of the MAC */
	CHECK_EQ(prm_get(v, PRM_VPORT_MAC_47_32), (uint32_t)(ll.raw[8] ^ 0x02) << 8 | ll.raw[9]);
	lo = (uint32_t)ll.raw[10] << 24 | (uint32_t)ll.raw[13] << 16 | (uint32_t)ll.raw[14] << 8 |
	     ll.raw[15];
	CHECK_EQ(prm_get(v, PRM_VPORT_MAC_31_0), lo);
	CHECK_EQ(prm_get(v, PRM_VPORT_ROCE_EN), 1);
	CHECK_EQ(prm_get64(v, PRM_VPORT_NODE_GUID_OFF), be64toh(ibv_get_device_guid(ctx->device)));

	t_case("QUERY_ROCE_ADDRESS %d: the GID ibv_query_gid gives, RoCE v2, IPv4", T_GID_INDEX);
	prm_set(rin, PRM_IN_OPCODE, PRM_CMD_QUERY_ROCE_ADDRESS);
	prm_set(rin, PRM_ROCE_ADDR_IN_INDEX, T_GID_INDEX);
	CHECK_OK(mlx5dv_devx_general_cmd(ctx, rin, sizeof(rin), rout, sizeof(rout)));
	dq_gid(ctx, &gid);
	CHECK_MEM(prm_cat(a, PRM_ROCE_ADDR_L3_OFF), gid.raw, 16);
	CHECK_EQ(prm_get(a, PRM_ROCE_ADDR_VERSION), 2);
	CHECK_EQ(prm_get(a, PRM_ROCE_ADDR_L3_TYPE), 0);
	CHECK_EQ(prm_get(a, PRM_ROCE_ADDR_MAC_31_0), lo);
	t_case("QUERY_ROCE_ADDRESS past the table: BAD_PARAM");
	prm_set(rin, PRM_ROCE_ADDR_IN_INDEX, 300);
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, rin, sizeof(rin), rout, sizeof(rout)), EREMOTEIO);
	CHECK_EQ(dq_status(rout), PRM_STAT_BAD_PARAM);
}

static void check_cqe(const struct gnic_mlx5_cqe64 *c, uint8_t opcode, uint32_t qpn,
                      uint16_t wqe_counter, uint32_t byte_cnt)
{
	CHECK_EQ(gnic_mlx5_cqe_opcode(c->op_own), opcode);
	CHECK_EQ(gnic_be32(c->sop_drop_qpn) & 0xffffff, qpn);
	CHECK_EQ(gnic_be16(c->wqe_counter), wqe_counter);
	if (opcode != GNIC_MLX5_CQE_REQ || byte_cnt)
		CHECK_EQ(gnic_be32(c->byte_cnt), byte_cnt);
}

/* WRITE, SEND/RECV and READ from a to b (b a DEVX QP: receives by hand). */
static void traffic(struct dq *a, struct dq *b, uint32_t seed)
{
	struct gnic_mlx5_cqe64 c;
	uint32_t len = 3000;

	t_fill(a->data, len, seed);
	dq_post(a, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)a->data, len, (uintptr_t)b->data,
	        b->mr->rkey);
	c = dq_poll(a, WAIT_MS, "WRITE");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, a->qpn, (uint16_t)(a->pi - 1), 0);
	CHECK_EQ(gnic_be32(c.sop_drop_qpn) >> 24, GNIC_MLX5_OPCODE_RDMA_WRITE);
	CHECK_MEM(b->data, a->data, len);

	dq_post_recv(b, (uintptr_t)b->data + 8192, 4096);
	t_fill(a->data + 4096, 1000, seed + 1);
	dq_post(a, GNIC_MLX5_OPCODE_SEND, (uintptr_t)a->data + 4096, 1000, 0, 0);
	c = dq_poll(a, WAIT_MS, "SEND");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, a->qpn, (uint16_t)(a->pi - 1), 0);
	c = dq_poll(b, WAIT_MS, "RECV");
	check_cqe(&c, GNIC_MLX5_CQE_RESP_SEND, b->qpn, (uint16_t)(b->rq_head - 1), 1000);
	CHECK_MEM(b->data + 8192, a->data + 4096, 1000);

	t_fill(b->data + 16384, 2048, seed + 2);
	dq_post(a, GNIC_MLX5_OPCODE_RDMA_READ, (uintptr_t)a->data + 16384, 2048,
	        (uintptr_t)b->data + 16384, b->mr->rkey);
	c = dq_poll(a, WAIT_MS, "READ");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, a->qpn, (uint16_t)(a->pi - 1), 2048);
	CHECK_MEM(a->data + 16384, b->data + 16384, 2048);
}

static void test_pair(void)
{
	struct dq a, b;
	union ibv_gid gid;
	uint8_t qpc[PRM_QPC_BYTES];

	t_case("two DEVX QPs: RST after CREATE_QP, INIT, RTR, RTS by QUERY_QP after each command");
	dq_gid(ctx, &gid);
	dq_create(&a, ctx);
	dq_create(&b, ctx);
	CHECK_EQ(dq_query_state(&a, qpc), PRM_QPS_RST);
	CHECK_EQ(prm_get(qpc, PRM_QPC_LOG_SQ_SIZE), DQ_SQ_LOG);
	CHECK_EQ(prm_get(qpc, PRM_QPC_CQN_SND), a.cqn);
	CHECK_EQ(prm_get(qpc, PRM_QPC_PD), a.pdn);
	dq_connect(&a, &gid, b.qpn);
	dq_connect(&b, &gid, a.qpn);
	dq_query_state(&a, qpc);
	CHECK_EQ(prm_get(qpc, PRM_QPC_REMOTE_QPN), b.qpn);
	CHECK_EQ(prm_get(qpc, PRM_QPC_RETRY_COUNT), 7);
	CHECK_EQ(prm_get(prm_cat(qpc, PRM_QPC_PATH_OFF), PRM_ADS_ACK_TIMEOUT), 14);
	CHECK_MEM(prm_cat(prm_cat(qpc, PRM_QPC_PATH_OFF), PRM_ADS_RGID_OFF), gid.raw, 16);

	t_case("DEVX to DEVX: WRITE, SEND/RECV, READ, raw CQEs, a -> b");
	traffic(&a, &b, 1);
	t_case("DEVX to DEVX: the same b -> a");
	traffic(&b, &a, 2);

	t_case("a QP with a zero-size RQ (its SQ at the WQ's start): WRITE and READ to b, b WRITEs "
	       "to it");
	{
		struct gnic_mlx5_cqe64 c;
		uint8_t zqpc[PRM_QPC_BYTES];
		struct dq z;

		dq_create_zero_rq(&z, ctx);
		dq_query_state(&z, zqpc);
		CHECK_EQ(prm_get(zqpc, PRM_QPC_RQ_TYPE), PRM_RQ_ZERO);
		/* b's QP is connected to a: give b a second peer by reconnecting it */
		CHECK_OK(dq_to_state(&b, PRM_CMD_2RST_QP, NULL));
		b.pi = 0; /* a reset QP starts again at index 0 */
		dq_connect(&b, &gid, z.qpn);
		dq_connect(&z, &gid, b.qpn);
		t_fill(z.data, 777, 40);
		dq_post(&z, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)z.data, 777,
		        (uintptr_t)b.data + 50000, b.mr->rkey);
		c = dq_poll(&z, WAIT_MS, "zero-RQ WRITE");
		check_cqe(&c, GNIC_MLX5_CQE_REQ, z.qpn, 0, 0);
		CHECK_MEM(b.data + 50000, z.data, 777);
		dq_post(&z, GNIC_MLX5_OPCODE_RDMA_READ, (uintptr_t)z.data + 2048, 777,
		        (uintptr_t)b.data + 50000, b.mr->rkey);
		c = dq_poll(&z, WAIT_MS, "zero-RQ READ");
		check_cqe(&c, GNIC_MLX5_CQE_REQ, z.qpn, 1, 777);
		CHECK_MEM(z.data + 2048, z.data, 777);
		t_fill(b.data + 60000, 100, 41);
		dq_post(&b, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)b.data + 60000, 100,
		        (uintptr_t)z.data + 8192, z.mr->rkey);
		c = dq_poll(&b, WAIT_MS, "WRITE to the zero-RQ QP");
		check_cqe(&c, GNIC_MLX5_CQE_REQ, b.qpn, 0, 0);
		CHECK_MEM(z.data + 8192, b.data + 60000, 100);
		dq_destroy(&z);
	}

	t_case("2ERR_QP: ERR; a SEND then completes with a flush error");
	CHECK_OK(dq_to_state(&a, PRM_CMD_2ERR_QP, NULL));
	CHECK_EQ(dq_query_state(&a, NULL), PRM_QPS_ERR);
	dq_post(&a, GNIC_MLX5_OPCODE_SEND, (uintptr_t)a.data, 8, 0, 0);
	{
		struct gnic_mlx5_cqe64 c = dq_poll(&a, WAIT_MS, "flushed SEND");
		const struct gnic_mlx5_err_cqe *e = (const void *)&c;

		CHECK_EQ(gnic_mlx5_cqe_opcode(c.op_own), GNIC_MLX5_CQE_REQ_ERR);
		CHECK_EQ(e->syndrome, GNIC_MLX5_SYND_WR_FLUSH);
	}
	t_case("2RST_QP: RST, and RST2INIT works again");
	CHECK_OK(dq_to_state(&a, PRM_CMD_2RST_QP, NULL));
	CHECK_EQ(dq_query_state(&a, NULL), PRM_QPS_RST);
	CHECK_OK(dq_rst2init(&a, NULL));
	CHECK_EQ(dq_query_state(&a, NULL), PRM_QPS_INIT);
	t_case("back to RTS: the doorbell record still says %u, which is old news (no CQE)", a.pi);
	CHECK_OK(dq_init2rtr(&a, &gid, b.qpn, NULL));
	CHECK_OK(dq_rtr2rts(&a, NULL));
	t_sleep_ms(100);
	CHECK(!gnic_mlx5_cqe_sw_owned(a.cqes[a.ci % (1u << DQ_CQE_LOG)].op_own, a.ci,
	                              1u << DQ_CQE_LOG));
	CHECK_EQ(dq_query_state(&a, NULL), PRM_QPS_RTS);

	t_case("destroy: a CQ its QP uses is EBUSY; then everything goes");
	CHECK_RET(mlx5dv_devx_obj_destroy(a.cq), EBUSY);
	CHECK_RET(mlx5dv_devx_umem_dereg(a.umem), EBUSY);
	dq_destroy(&a);
	dq_destroy(&b);
}

/* Hardware sees every register write; the engine sees changed memory. */
static void test_reset_same_doorbell(void)
{
	struct gnic_mlx5_cqe64 c;
	union ibv_gid gid;
	struct dq a, b;

	t_case("after 2RST_QP, index 0 rung again with the bytes of the last doorbell before it: "
	       "a CQE");
	dq_gid(ctx, &gid);
	dq_create(&a, ctx);
	dq_create(&b, ctx);
	dq_connect(&a, &gid, b.qpn);
	dq_connect(&b, &gid, a.qpn);
	t_fill(a.data, 64, 7);
	dq_post(&a, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)a.data, 64, (uintptr_t)b.data,
	        b.mr->rkey);
	c = dq_poll(&a, WAIT_MS, "WRITE before the reset");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, a.qpn, 0, 0);
	CHECK_OK(dq_to_state(&a, PRM_CMD_2RST_QP, NULL));
	CHECK_OK(dq_to_state(&b, PRM_CMD_2RST_QP, NULL));
	/* as rdma-core does for a verbs QP: indices and the record start over */
	a.pi = 0;
	a.bf_off = 0;
	a.qp_dbr[GNIC_MLX5_SND_DBR] = 0;
	a.qp_dbr[GNIC_MLX5_RCV_DBR] = 0;
	dq_connect(&a, &gid, b.qpn);
	dq_connect(&b, &gid, a.qpn);
	memset(b.data, 0, 64);
	dq_post(&a, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)a.data, 64, (uintptr_t)b.data,
	        b.mr->rkey);
	c = dq_poll(&a, WAIT_MS, "the same WRITE after the reset");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, a.qpn, 0, 0);
	CHECK_MEM(b.data, a.data, 64);
	dq_destroy(&a);
	dq_destroy(&b);
}

/* GNIC_EMU_LINK=ib: the path names the peer by its LID (rlid), no GRH. */
static void test_ib_pair(void)
{
	struct ibv_port_attr pa;
	struct dq a, b;
	uint8_t qpc[PRM_QPC_BYTES];

	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND) {
		t_case("InfiniBand pair: not an InfiniBand port (GNIC_EMU_LINK=ib runs it)");
		return;
	}
	t_case("InfiniBand: INIT2RTR with rlid 0x%x and no GRH; WRITE, SEND, READ", pa.lid);
	dq_create(&a, ctx);
	dq_create(&b, ctx);
	CHECK_OK(dq_rst2init(&a, NULL));
	CHECK_OK(dq_rst2init(&b, NULL));
	CHECK_OK(dq_init2rtr_ib(&a, pa.lid, b.qpn, NULL));
	CHECK_OK(dq_init2rtr_ib(&b, pa.lid, a.qpn, NULL));
	CHECK_OK(dq_rtr2rts(&a, NULL));
	CHECK_OK(dq_rtr2rts(&b, NULL));
	CHECK_EQ(dq_query_state(&a, qpc), PRM_QPS_RTS);
	CHECK_EQ(prm_get(prm_cat(qpc, PRM_QPC_PATH_OFF), PRM_ADS_RLID), pa.lid);
	traffic(&a, &b, 3);
	dq_destroy(&a);
	dq_destroy(&b);
}

/* Two QPs ringing through one UAR page: each takes only the register
 * writes that name it. */
static void test_shared_uar(void)
{
	struct mlx5dv_devx_uar *uar =
	    CHECK_PTR(mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_BF));
	struct gnic_mlx5_cqe64 c;
	union ibv_gid gid;
	struct dq a, b;

	t_case("a UAR shared by two QPs: b's doorbell (index 3) is not a's (index 1)");
	dq_gid(ctx, &gid);
	dq_create_on(&a, ctx, uar);
	dq_create_on(&b, ctx, uar);
	dq_connect(&a, &gid, b.qpn);
	dq_connect(&b, &gid, a.qpn);
	dq_post(&a, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)a.data, 64, (uintptr_t)b.data,
	        b.mr->rkey);
	c = dq_poll(&a, WAIT_MS, "a's WRITE");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, a.qpn, 0, 0);
	for (int i = 0; i < 3; i++) {
		dq_post(&b, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)b.data, 64,
		        (uintptr_t)a.data + 4096, a.mr->rkey);
		c = dq_poll(&b, WAIT_MS, "b's WRITE");
		check_cqe(&c, GNIC_MLX5_CQE_REQ, b.qpn, (uint16_t)i, 0);
	}
	t_sleep_ms(50); /* time for a to act on b's doorbells, if it took them */
	CHECK_EQ(dq_query_state(&a, NULL), PRM_QPS_RTS);
	CHECK(!gnic_mlx5_cqe_sw_owned(a.cqes[a.ci % (1u << DQ_CQE_LOG)].op_own, a.ci,
	                              1u << DQ_CQE_LOG));
	t_case("a rings again: its own index 2 in the same register");
	dq_post(&a, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)a.data, 64, (uintptr_t)b.data,
	        b.mr->rkey);
	c = dq_poll(&a, WAIT_MS, "a's second WRITE");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, a.qpn, 1, 0);
	dq_destroy(&a);
	dq_destroy(&b);
	mlx5dv_devx_free_uar(uar);
}

/* A DEVX QP and a verbs QP on one device, each way. */
static void test_verbs_peer(void)
{
	struct ibv_cq *cq = t_cq(ctx, 64);
	struct dq d;
	struct t_qp_caps caps;
	struct t_conn_opts o;
	struct ibv_qp *vq;
	struct t_ep ep = {0};
	struct ibv_wc wc;
	struct gnic_mlx5_cqe64 c;

	t_case("DEVX QP <-> verbs QP: connect, WRITE and SEND from DEVX, SEND from verbs");
	dq_create(&d, ctx);
	t_qp_caps_default(&caps);
	vq = t_qp(d.pd, cq, cq, &caps, NULL);
	t_conn_opts_default(&o);
	o.sq_psn = o.rq_psn = 0; /* what dq_connect sets on the DEVX side */
	dq_gid(ctx, &ep.gid);
	ep.qpn = d.qpn;
	t_connect(vq, &ep, &o);
	dq_connect(&d, &ep.gid, vq->qp_num);

	t_fill(d.data, 512, 7);
	dq_post(&d, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)d.data, 512, (uintptr_t)d.data + 32768,
	        d.mr->rkey); /* the verbs QP's PD is d's: its MR */
	c = dq_poll(&d, WAIT_MS, "WRITE to the verbs side");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, d.qpn, 0, 0);
	CHECK_MEM(d.data + 32768, d.data, 512);

	t_post_recv_buf(vq, 77, d.data + 40960, 256, d.mr->lkey);
	dq_post(&d, GNIC_MLX5_OPCODE_SEND, (uintptr_t)d.data, 200, 0, 0);
	c = dq_poll(&d, WAIT_MS, "SEND to the verbs side");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, d.qpn, 1, 0);
	wc = t_poll1(cq, "verbs RECV");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 77);
	CHECK_EQ(wc.byte_len, 200);
	CHECK_MEM(d.data + 40960, d.data, 200);

	dq_post_recv(&d, (uintptr_t)d.data + 49152, 1024);
	{
		struct ibv_sge sge = {(uintptr_t)d.data + 1024, 300, d.mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 5,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED};

		t_fill(d.data + 1024, 300, 9);
		t_post_send(vq, &wr);
	}
	wc = t_poll1(cq, "verbs SEND");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	c = dq_poll(&d, WAIT_MS, "DEVX RECV");
	check_cqe(&c, GNIC_MLX5_CQE_RESP_SEND, d.qpn, 0, 300);
	CHECK_MEM(d.data + 49152, d.data + 1024, 300);

	CHECK_OK(ibv_destroy_qp(vq));
	CHECK_OK(ibv_destroy_cq(cq));
	dq_destroy(&d);
}

/* ---- errors -------------------------------------------------------------- */

static void check_untouched(const uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (out[i] != 0xab)
			T_FAIL("the outbox changed at byte %zu", i);
}

static void test_errors(void)
{
	uint8_t in[PRM_QP_IN_BYTES], out[PRM_QUERY_HCA_CAP_OUT_BYTES];
	struct ibv_device **list;
	struct ibv_context *plain;
	struct dq q;

	t_case("unknown opcode: the kernel refuses it (EINVAL), the outbox untouched");
	memset(in, 0, sizeof(in));
	memset(out, 0xab, sizeof(out));
	prm_set(in, PRM_IN_OPCODE, 0x7ff);
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, 16, out, 16), EINVAL);
	check_untouched(out, 16);
	t_case("a create opcode through general_cmd: EINVAL");
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_CREATE_CQ);
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, 16), EINVAL);
	t_case("mailboxes shorter than a header: EINVAL");
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_HCA_CAP);
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, 8, out, sizeof(out)), EINVAL);
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, 16, out, 8), EINVAL);
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, NULL, 16, out, 16), EINVAL);

	t_case("a command the firmware does not have here: BAD_OP, EREMOTEIO, a syndrome");
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_CREATE_SRQ);
	errno = 0;
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, 16) == NULL);
	CHECK_EQ(errno, EREMOTEIO);
	CHECK_EQ(dq_status(out), PRM_STAT_BAD_OP);
	CHECK_NE(dq_syndrome(out), 0);
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_ISSI);
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, 16, out, 16), EREMOTEIO);
	CHECK_EQ(dq_status(out), PRM_STAT_BAD_OP);

	t_case("short inbox: BAD_INPUT_LEN; short outbox: BAD_OUTPUT_LEN");
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_CREATE_QP);
	CHECK(mlx5dv_devx_obj_create(ctx, in, 100, out, 16) == NULL);
	CHECK_EQ(errno, EREMOTEIO);
	CHECK_EQ(dq_status(out), PRM_STAT_BAD_INP_LEN);
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_HCA_CAP);
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, 16, out, 256), EREMOTEIO);
	CHECK_EQ(dq_status(out), PRM_STAT_BAD_OUTP_LEN);

	t_case("QUERY_HCA_CAP of a capability type gnic-emu has no answer for: BAD_PARAM");
	prm_set(in, PRM_IN_OP_MOD, 0x2 << 1 | 1); /* ODP */
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, 16, out, sizeof(out)), EREMOTEIO);
	CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);

	dq_create(&q, ctx);
	t_case("CREATE_CQ with 128-byte CQEs, a UAR page nobody has, a ring past the umem: "
	       "BAD_PARAM");
	{
		uint8_t cin[PRM_CREATE_CQ_IN_BYTES] = {0};
		uint8_t *cqc = prm_at(cin, PRM_CREATE_CQ_IN_CQC_OFF);

		prm_set(cin, PRM_IN_OPCODE, PRM_CMD_CREATE_CQ);
		prm_set(cqc, PRM_CQC_LOG_CQ_SIZE, 4);
		prm_set(cqc, PRM_CQC_UAR_PAGE, q.uar->page_id);
		prm_set(cqc, PRM_CQC_C_EQN, q.eqn);
		prm_set(cqc, PRM_CQC_DBR_UMEM_ID, q.umem->umem_id);
		prm_set(cin, PRM_CREATE_CQ_IN_UMEM_ID, q.umem->umem_id);
		prm_set(cqc, PRM_CQC_CQE_SZ, 1);
		CHECK(mlx5dv_devx_obj_create(ctx, cin, sizeof(cin), out, 16) == NULL);
		CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);
		prm_set(cqc, PRM_CQC_CQE_SZ, 0);
		prm_set(cqc, PRM_CQC_UAR_PAGE, 0xfffff);
		CHECK(mlx5dv_devx_obj_create(ctx, cin, sizeof(cin), out, 16) == NULL);
		CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);
		prm_set(cqc, PRM_CQC_UAR_PAGE, q.uar->page_id);
		prm_set64(cin, PRM_CREATE_CQ_IN_UMEM_OFF,
		          63 * 1024 + 512); /* 1 KiB ring, 1 KiB left */
		CHECK(mlx5dv_devx_obj_create(ctx, cin, sizeof(cin), out, 16) == NULL);
		CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);
		prm_set64(cin, PRM_CREATE_CQ_IN_UMEM_OFF, 0);
		prm_set(cqc, PRM_CQC_C_EQN, 0xff);
		CHECK(mlx5dv_devx_obj_create(ctx, cin, sizeof(cin), out, 16) == NULL);
		CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);
	}
	t_case("CREATE_QP UD, an SRQ, a PD nobody has: BAD_PARAM");
	{
		uint8_t qin[PRM_QP_IN_BYTES] = {0};
		uint8_t *qpc = prm_at(qin, PRM_QP_IN_QPC_OFF);

		prm_set(qin, PRM_IN_OPCODE, PRM_CMD_CREATE_QP);
		prm_set(qpc, PRM_QPC_ST, 0x2);
		CHECK(mlx5dv_devx_obj_create(ctx, qin, sizeof(qin), out, 16) == NULL);
		CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);
		prm_set(qpc, PRM_QPC_ST, PRM_QP_ST_RC);
		prm_set(qpc, PRM_QPC_RQ_TYPE, PRM_RQ_SRQ);
		CHECK(mlx5dv_devx_obj_create(ctx, qin, sizeof(qin), out, 16) == NULL);
		CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);
		prm_set(qpc, PRM_QPC_RQ_TYPE, PRM_RQ_ZERO);
		prm_set(qpc, PRM_QPC_NO_SQ, 1);
		prm_set(qpc, PRM_QPC_UAR_PAGE, q.uar->page_id);
		prm_set(qpc, PRM_QPC_DBR_UMEM_ID, q.umem->umem_id);
		prm_set(qpc, PRM_QPC_CQN_RCV, q.cqn);
		prm_set(qpc, PRM_QPC_PD, 0xabcdef);
		CHECK(mlx5dv_devx_obj_create(ctx, qin, sizeof(qin), out, 16) == NULL);
		CHECK_EQ(dq_status(out), PRM_STAT_BAD_PARAM);
	}

	t_case("INIT2RTR on a QP in RST: BAD_QP_STATE; RTR with MTU 7 or a bad GID index: "
	       "BAD_PARAM");
	{
		union ibv_gid gid;
		uint8_t mo[PRM_HDR_BYTES];

		dq_gid(ctx, &gid);
		CHECK_RET(dq_init2rtr(&q, &gid, q.qpn, mo), EREMOTEIO);
		CHECK_EQ(dq_status(mo), PRM_STAT_BAD_QP_STATE);
		CHECK_EQ(dq_query_state(&q, NULL), PRM_QPS_RST);
		CHECK_OK(dq_rst2init(&q, mo));
		memset(in, 0, sizeof(in));
		prm_set(prm_at(in, PRM_QP_IN_QPC_OFF), PRM_QPC_MTU, 7);
		prm_set(in, PRM_IN_OPCODE, PRM_CMD_INIT2RTR_QP);
		prm_set(in, PRM_QP_IN_QPN, q.qpn);
		CHECK_RET(mlx5dv_devx_obj_modify(q.qp, in, sizeof(in), mo, sizeof(mo)), EREMOTEIO);
		CHECK_EQ(dq_status(mo), PRM_STAT_BAD_PARAM);
		CHECK_EQ(dq_query_state(&q, NULL), PRM_QPS_INIT);
		prm_set(prm_at(in, PRM_QP_IN_QPC_OFF), PRM_QPC_MTU, IBV_MTU_1024);
		prm_set(prm_at(prm_at(in, PRM_QP_IN_QPC_OFF), PRM_QPC_PATH_OFF),
		        PRM_ADS_SRC_ADDR_IDX, 200); /* an empty entry */
		memcpy(prm_at(prm_at(prm_at(in, PRM_QP_IN_QPC_OFF), PRM_QPC_PATH_OFF),
		              PRM_ADS_RGID_OFF),
		       gid.raw, 16);
		CHECK_RET(mlx5dv_devx_obj_modify(q.qp, in, sizeof(in), mo, sizeof(mo)), EREMOTEIO);
		CHECK_EQ(dq_status(mo), PRM_STAT_BAD_PARAM);
		CHECK_EQ(dq_query_state(&q, NULL), PRM_QPS_INIT);
		t_case("a modify naming another QP, a CQ command on a QP: EINVAL");
		prm_set(in, PRM_QP_IN_QPN, q.qpn + 1);
		CHECK_RET(mlx5dv_devx_obj_modify(q.qp, in, sizeof(in), mo, sizeof(mo)), EINVAL);
		prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_CQ);
		prm_set(in, PRM_QP_IN_QPN, q.qpn);
		CHECK_RET(mlx5dv_devx_obj_query(q.qp, in, 16, out, sizeof(out)), EINVAL);
		t_case("RTS2RTS: BAD_OP (not supported)");
		prm_set(in, PRM_IN_OPCODE, PRM_CMD_RTS2RTS_QP);
		CHECK_RET(mlx5dv_devx_obj_modify(q.qp, in, sizeof(in), mo, sizeof(mo)), EREMOTEIO);
		CHECK_EQ(dq_status(mo), PRM_STAT_BAD_OP);
	}
	dq_destroy(&q);

	t_case("umem: dma-buf EOPNOTSUPP; no page size, NULL, zero length EINVAL");
	{
		struct mlx5dv_devx_umem_in ui = {
		    .addr = out, .size = 4096, .pgsz_bitmap = 1u << 12};

		ui.comp_mask = MLX5DV_UMEM_MASK_DMABUF;
		ui.dmabuf_fd = 0;
		CHECK_NULL_ERRNO_(mlx5dv_devx_umem_reg_ex(ctx, &ui), EOPNOTSUPP);
		ui.comp_mask = 0;
		ui.pgsz_bitmap = 0x800;
		CHECK_NULL_ERRNO_(mlx5dv_devx_umem_reg_ex(ctx, &ui), EINVAL);
		CHECK_NULL_ERRNO_(mlx5dv_devx_umem_reg(ctx, NULL, 4096, 0), EINVAL);
		CHECK_NULL_ERRNO_(mlx5dv_devx_umem_reg(ctx, out, 0, 0), EINVAL);
		CHECK_NULL_ERRNO_(mlx5dv_devx_alloc_uar(ctx, 5), EINVAL);
	}

	t_case("a context opened without DEVX: every DEVX command is EINVAL");
	list = ibv_get_device_list(NULL);
	plain = CHECK_PTR(ibv_open_device(list[0]));
	ibv_free_device_list(list);
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_IN_OPCODE, PRM_CMD_QUERY_HCA_CAP);
	CHECK_RET(mlx5dv_devx_general_cmd(plain, in, 16, out, sizeof(out)), EINVAL);
	CHECK_NULL_ERRNO_(mlx5dv_devx_umem_reg(plain, out, 4096, 0), EINVAL);
	CHECK_OK(ibv_close_device(plain));
}

/* The kernel destroys a context's DevX objects when it closes: after the
 * close the engine must not touch the umem (ASan would see it freed). */
static void test_close(void)
{
	struct ibv_context *c2 = dq_open();
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	union ibv_gid gid;
	uint8_t *mem, *data;
	struct dq q;

	t_case("closing a DevX context with its CQ, QP, umem and UAR alive");
	dq_gid(c2, &gid);
	dq_create(&q, c2);
	dq_connect(&q, &gid, q.qpn); /* a loop to itself */
	dq_post(&q, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)q.data, 64, (uintptr_t)q.data + 64,
	        q.mr->rkey);
	(void)dq_poll(&q, WAIT_MS, "WRITE to itself");
	mem = q.mem;
	data = q.data;
	mr = q.mr;
	pd = q.pd;
	CHECK_RET(ibv_dealloc_pd(pd), EBUSY); /* the QP holds it */
	CHECK_OK(ibv_close_device(c2));
	/* garbage, and a doorbell record one WQE ahead: a QP still there
	 * would take it, fail on the WQE and write an error CQE into the ring */
	memset(mem, 0x5a, 64 * 1024);
	__atomic_store_n(&q.cq_dbr[0], gnic_be32(q.ci), __ATOMIC_RELEASE);
	__atomic_store_n(&q.qp_dbr[GNIC_MLX5_RCV_DBR], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&q.qp_dbr[GNIC_MLX5_SND_DBR], gnic_be32((uint16_t)(q.pi + 1)),
	                 __ATOMIC_RELEASE);
	t_sleep_ms(100);
	CHECK_BYTES(mem, 0x5a, 4096); /* the CQ ring: no CQE came */
	free(mem);
	t_sleep_ms(50);
	(void)mr;
	(void)data; /* the MR stays registered: verbs objects outlive a close here */
}

/* A DEVX QP's errors are not verbs async events: the kernel gives DEVX
 * objects' events only to DEVX event channels subscribed to them. */
static void test_no_async_events(void)
{
	struct pollfd pfd;
	struct dq a, b;
	union ibv_gid gid;
	struct gnic_mlx5_cqe64 c;

	t_case("a DEVX responder that fails an access check goes to ERR and raises no async event");
	dq_gid(ctx, &gid);
	dq_create(&a, ctx);
	dq_create(&b, ctx);
	dq_connect(&a, &gid, b.qpn);
	dq_connect(&b, &gid, a.qpn);
	dq_post(&a, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)a.data, 64, (uintptr_t)b.data,
	        b.mr->rkey ^ 0x5a5a00);
	c = dq_poll(&a, WAIT_MS, "the WRITE with a bad rkey");
	CHECK_EQ(gnic_mlx5_cqe_opcode(c.op_own), GNIC_MLX5_CQE_REQ_ERR);
	CHECK_EQ(dq_query_state(&b, NULL), PRM_QPS_ERR);
	pfd = (struct pollfd){.fd = ctx->async_fd, .events = POLLIN};
	CHECK_EQ(poll(&pfd, 1, 300), 0);
	dq_destroy(&a);
	dq_destroy(&b);
}

static const struct t_named_case cases[] = {
    {"caps", test_caps},
    {"vport", test_vport},
    {"pair", test_pair},
    {"ib_pair", test_ib_pair},
    {"shared_uar", test_shared_uar},
    {"verbs_peer", test_verbs_peer},
    {"errors", test_errors},
    {"close", test_close},
    {"reset_same_doorbell", test_reset_same_doorbell},
    {"no_async_events", test_no_async_events},
};

int main(int argc, char **argv)
{
	ctx = dq_open();
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
