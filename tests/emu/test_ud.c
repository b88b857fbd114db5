// SPDX-License-Identifier: MIT
/*
 * UD queue pairs as a ConnectX with rdma-core's mlx5 has them:
 *
 *   grh          the 40-byte network header at the start of the receive
 *                buffer, counted in byte_len, IBV_WC_GRH set: for RoCE v2
 *                over an IPv4 GID an IPv4 header in its last 20 bytes
 *                (addresses, TTL = hop limit, UDP, a valid checksum), for
 *                RoCE v1 a GRH (version 6, next header BTH, source and
 *                destination GID); the CQE's source QPN; ibv_init_ah_from_wc
 *                and ibv_create_ah_from_wc answer the sender
 *   qkey         a datagram with another Q_Key is dropped without a trace;
 *                a WR Q_Key with the high bit set means the sender QP's own
 *   oversize     more than the 4096-byte MTU: LOC_LEN_ERR at the sender (its
 *                QP then in ERR), nothing at the receiver; a receive buffer
 *                too small for GRH + data: LOC_LEN_ERR at the receiver
 *   unknown_qpn  a datagram to a QPN nobody has completes at the sender and
 *                vanishes; the QP keeps working
 *   many         four senders to one QP: every datagram arrives once, its
 *                CQE naming its sender
 *   attrs        the state machine's UD rows: Q_Key required at INIT, no
 *                path, RNR or retry attributes (EINVAL), query_qp
 *   opcodes      RDMA WRITE on a UD QP: posted, then LOC_QP_OP_ERR
 *   layout       mlx5dv_init_obj: the WQE rdma-core writes (ctrl, the AH's
 *                address vector with the remote QPN | extended-AV bit and
 *                the Q_Key, a data segment) and MLX5DV_OBJ_AH's av
 *   wr_api       ibv_create_qp_ex with send_ops_flags SEND | SEND_WITH_IMM
 *                (others: EOPNOTSUPP, as mlx5 has no other UD opcodes), and
 *                ibv_wr_send_imm + ibv_wr_set_ud_addr + ibv_wr_set_sge
 *   devices      two devices of one process (GNIC_EMU_DEVICES=2, ctest
 *                test_ud_devices; a note and nothing else with one): a
 *                datagram reaches the QP on the device its AV names, with
 *                both addresses in the IPv4 header; one whose AV names the
 *                other device is lost there, though a QP has that QPN here
 *   ib           InfiniBand link (GNIC_EMU_LINK=ib; a note and nothing else
 *                on RoCE): an AH of a DLID alone, no GRH in the buffer or the
 *                CQE, the sender's LID and SL in the CQE; with a GRH, one
 *                written; ibv_create_ah_from_wc answers by LID
 *
 * Run one case: test_ud <case>.
 */
#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>

#include "common.h"

#define NQP   5
#define SLOT  8192 /* per QP: a receive buffer and a send buffer */
#define QKEY  0x11111111u
#define DEPTH 32
#define GRH   40

struct ud {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[NQP];
	struct ibv_qp *qp[NQP];
	struct ibv_mr *mr;
	uint8_t *buf;
};

static uint8_t *rbuf(struct ud *u, int i)
{
	return u->buf + (size_t)i * 2 * SLOT;
}

static uint8_t *sbuf(struct ud *u, int i)
{
	return rbuf(u, i) + SLOT;
}

static struct ibv_qp *ud_qp(struct ud *u, int i, uint32_t qkey)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = qkey};
	struct ibv_qp *qp = t_qp_on(u->pd, u->cq[i], IBV_QPT_UD, DEPTH);

	CHECK_OK(
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
	a.qp_state = IBV_QPS_RTR;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	return qp;
}

static void ud_open(struct ud *u)
{
	memset(u, 0, sizeof(*u));
	u->ctx = t_open(T_DEVICE);
	u->pd = CHECK_PTR(ibv_alloc_pd(u->ctx));
	u->buf = t_alloc((size_t)NQP * 2 * SLOT, 0);
	u->mr = t_reg(u->pd, u->buf, (size_t)NQP * 2 * SLOT, IBV_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < NQP; i++) {
		u->cq[i] = t_cq(u->ctx, 4 * DEPTH);
		u->qp[i] = ud_qp(u, i, QKEY);
	}
}

static void ud_close(struct ud *u)
{
	for (int i = 0; i < NQP; i++) {
		CHECK_OK(ibv_destroy_qp(u->qp[i]));
		CHECK_OK(ibv_destroy_cq(u->cq[i]));
	}
	CHECK_OK(ibv_dereg_mr(u->mr));
	CHECK_OK(ibv_dealloc_pd(u->pd));
	CHECK_OK(ibv_close_device(u->ctx));
	free(u->buf);
}

/* An AH for this device's GID entry gidx (its own address: in-process). */
static struct ibv_ah *ud_ah(struct ud *u, int gidx, union ibv_gid *gid)
{
	struct ibv_ah_attr a = {.is_global = 1, .port_num = 1, .sl = 0};

	CHECK_OK(ibv_query_gid(u->ctx, 1, gidx, &a.grh.dgid));
	a.grh.sgid_index = (uint8_t)gidx;
	a.grh.hop_limit = 64;
	a.grh.traffic_class = 0x20;
	a.grh.flow_label = 0x12345;
	if (gid)
		*gid = a.grh.dgid;
	return CHECK_PTR(ibv_create_ah(u->pd, &a));
}

static void post_recv(struct ud *u, int i, uint64_t wr_id, uint32_t len)
{
	t_post_recv_buf(u->qp[i], wr_id, rbuf(u, i), len, u->mr->lkey);
}

static void send_dgram(struct ud *u, int from, struct ibv_ah *ah, uint32_t rqpn, uint32_t qkey,
                       uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {(uintptr_t)sbuf(u, from), len, u->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rqpn;
	wr.wr.ud.remote_qkey = qkey;
	t_post_send(u->qp[from], &wr);
}

static void expect_sent(struct ud *u, int from, uint64_t wr_id)
{
	struct ibv_wc wc = t_poll1(u->cq[from], "the send");

	CHECK_WC(&wc, wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);
}

static uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void case_grh(void)
{
	struct ud u;
	union ibv_gid gid;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	const uint32_t len = 100;

	ud_open(&u);
	t_case("RoCE v2 (GID 3): an IPv4 header in the GRH's last 20 bytes");
	ah = ud_ah(&u, 3, &gid);
	t_fill(sbuf(&u, 0), len, 7);
	post_recv(&u, 1, 11, GRH + len);
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, QKEY, len, 1);
	expect_sent(&u, 0, 1);
	wc = t_poll1(u.cq[1], "the datagram");
	CHECK_WC(&wc, 11, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, GRH + len);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK_EQ(wc.src_qp, u.qp[0]->qp_num);
	CHECK_EQ(wc.qp_num, u.qp[1]->qp_num);
	CHECK_MEM(rbuf(&u, 1) + GRH, sbuf(&u, 0), len);
	{
		const uint8_t *ip = rbuf(&u, 1) + 20;
		uint32_t sum = 0;

		CHECK_EQ(ip[0], 0x45);
		CHECK_EQ(ip[1], 0x20); /* traffic class */
		/* IP + UDP + BTH + DETH + data + ICRC */
		CHECK_EQ(be16_at(ip + 2), 20 + 8 + 12 + 8 + len + 4);
		CHECK_EQ(ip[8], 64); /* TTL: the hop limit */
		CHECK_EQ(ip[9], 17); /* UDP */
		CHECK_MEM(ip + 12, &gid.raw[12], 4);
		CHECK_MEM(ip + 16, &gid.raw[12], 4);
		for (int i = 0; i < 20; i += 2)
			sum += be16_at(ip + i);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		CHECK_EQ(sum, 0xffff); /* the checksum checks */
	}

	t_case("ibv_init_ah_from_wc / ibv_create_ah_from_wc: the answer reaches the sender");
	{
		struct ibv_ah_attr back;
		struct ibv_ah *ah2;

		CHECK_OK(ibv_init_ah_from_wc(u.ctx, 1, &wc, (struct ibv_grh *)rbuf(&u, 1), &back));
		CHECK_EQ(back.is_global, 1);
		CHECK_MEM(back.grh.dgid.raw, gid.raw, 16);
		CHECK_EQ(back.grh.sgid_index, 3);
		ah2 = CHECK_PTR(ibv_create_ah_from_wc(u.pd, &wc, (struct ibv_grh *)rbuf(&u, 1), 1));
		post_recv(&u, 0, 12, GRH + len);
		send_dgram(&u, 1, ah2, wc.src_qp, QKEY, len, 2);
		expect_sent(&u, 1, 2);
		wc = t_poll1(u.cq[0], "the answer");
		CHECK_WC(&wc, 12, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.src_qp, u.qp[1]->qp_num);
		CHECK_OK(ibv_destroy_ah(ah2));
	}
	CHECK_OK(ibv_destroy_ah(ah));

	t_case("RoCE v1 (GID 2): a GRH with both GIDs");
	ah = ud_ah(&u, 2, &gid);
	memset(rbuf(&u, 1), 0x7b, GRH + len);
	post_recv(&u, 1, 13, GRH + len);
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, QKEY, len, 3);
	expect_sent(&u, 0, 3);
	wc = t_poll1(u.cq[1], "the datagram");
	CHECK_WC(&wc, 13, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, GRH + len);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	{
		const struct ibv_grh *g = (const struct ibv_grh *)rbuf(&u, 1);
		uint32_t vtf = ntohl(g->version_tclass_flow);

		CHECK_EQ(vtf >> 28, 6);
		CHECK_EQ((vtf >> 20) & 0xff, 0x20);
		CHECK_EQ(vtf & 0xfffff, 0x12345);
		CHECK_EQ(ntohs(g->paylen), 12 + 8 + len + 4);
		CHECK_EQ(g->next_hdr, 0x1b);
		CHECK_EQ(g->hop_limit, 64);
		CHECK_MEM(g->sgid.raw, gid.raw, 16);
		CHECK_MEM(g->dgid.raw, gid.raw, 16);
	}
	CHECK_MEM(rbuf(&u, 1) + GRH, sbuf(&u, 0), len);
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

static void case_qkey(void)
{
	struct ud u;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ibv_qp_attr a = {.qkey = 0x3333};

	ud_open(&u);
	ah = ud_ah(&u, 3, NULL);
	t_case("another Q_Key: dropped silently, the sender completes");
	post_recv(&u, 1, 21, GRH + 64);
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, QKEY + 1, 64, 1);
	expect_sent(&u, 0, 1);
	t_expect_empty(u.cq[1], "a datagram with the wrong Q_Key");

	t_case("the privileged Q_Key bit: the sender QP's Q_Key");
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, 0x80000000u, 64, 2);
	expect_sent(&u, 0, 2);
	wc = t_poll1(u.cq[1], "the datagram with the QP's Q_Key");
	CHECK_WC(&wc, 21, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, GRH + 64);
	CHECK_OK(ibv_modify_qp(u.qp[0], &a, IBV_QP_QKEY)); /* RTS -> RTS: the Q_Key only */
	post_recv(&u, 1, 22, GRH + 64);
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, 0x80000000u, 64, 3);
	expect_sent(&u, 0, 3);
	t_expect_empty(u.cq[1], "the sender's new Q_Key is not the receiver's");
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

static void case_oversize(void)
{
	struct ud u;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	ud_open(&u);
	ah = ud_ah(&u, 3, NULL);
	t_case("4096 bytes (the MTU) go, 4097 are a local length error");
	post_recv(&u, 1, 31, GRH + 4097);
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, QKEY, 4096, 1);
	expect_sent(&u, 0, 1);
	wc = t_poll1(u.cq[1], "the MTU-sized datagram");
	CHECK_WC(&wc, 31, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, GRH + 4096);
	post_recv(&u, 1, 32, GRH + 4097);
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, QKEY, 4097, 2);
	wc = t_poll1(u.cq[0], "the oversized send");
	CHECK_WC_STATUS(&wc, 2, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(t_qp_state(u.qp[0]), IBV_QPS_ERR);
	t_expect_empty(u.cq[1], "nothing of the oversized datagram");

	t_case("a receive buffer without room for GRH + data: LOC_LEN_ERR at the receiver");
	post_recv(&u, 3, 33, 100); /* 100 bytes of data need 140 */
	send_dgram(&u, 2, ah, u.qp[3]->qp_num, QKEY, 100, 3);
	expect_sent(&u, 2, 3);
	wc = t_poll1(u.cq[3], "the receive that is too small");
	CHECK_WC_STATUS(&wc, 33, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(t_qp_state(u.qp[3]), IBV_QPS_ERR);
	CHECK_EQ(t_qp_state(u.qp[2]), IBV_QPS_RTS);
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

static void case_unknown_qpn(void)
{
	struct ud u;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	ud_open(&u);
	ah = ud_ah(&u, 3, NULL);
	t_case("a datagram to a QPN nobody has: sent, lost, the QP keeps working");
	post_recv(&u, 1, 41, GRH + 64);
	send_dgram(&u, 0, ah, 0xfffff0, QKEY, 64, 1);
	expect_sent(&u, 0, 1);
	for (int i = 1; i < NQP; i++)
		t_expect_empty(u.cq[i], "no QP got the lost datagram");
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, QKEY, 64, 2);
	expect_sent(&u, 0, 2);
	wc = t_poll1(u.cq[1], "the next datagram");
	CHECK_WC(&wc, 41, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(t_qp_state(u.qp[0]), IBV_QPS_RTS);
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

#define PER_SENDER 8

static void case_many(void)
{
	struct ud u;
	struct ibv_ah *ah;
	struct ibv_wc wc[(NQP - 1) * PER_SENDER];
	int got[NQP] = {0};
	const int total = (NQP - 1) * PER_SENDER;

	ud_open(&u);
	ah = ud_ah(&u, 3, NULL);
	t_case("%d senders x %d datagrams to one QP", NQP - 1, PER_SENDER);
	for (int n = 0; n < total; n++) {
		struct ibv_sge sge = {(uintptr_t)(rbuf(&u, 0) + (size_t)n * 128), 128, u.mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)n, .sg_list = &sge, .num_sge = 1};

		t_post_recv(u.qp[0], &wr);
	}
	for (int s = 1; s < NQP; s++)
		for (int k = 0; k < PER_SENDER; k++) {
			sbuf(&u, s)[k] = (uint8_t)(s << 4 | k);
		}
	for (int k = 0; k < PER_SENDER; k++)
		for (int s = 1; s < NQP; s++) {
			struct ibv_sge sge = {(uintptr_t)(sbuf(&u, s) + k), 1, u.mr->lkey};
			struct ibv_send_wr wr = {.wr_id = (uint64_t)k,
			                         .sg_list = &sge,
			                         .num_sge = 1,
			                         .opcode = IBV_WR_SEND,
			                         .send_flags = IBV_SEND_SIGNALED};

			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = u.qp[0]->qp_num;
			wr.wr.ud.remote_qkey = QKEY;
			t_post_send(u.qp[s], &wr);
		}
	for (int s = 1; s < NQP; s++) {
		struct ibv_wc sw[PER_SENDER];

		t_poll(u.cq[s], PER_SENDER, sw, "a sender's completions");
		for (int k = 0; k < PER_SENDER; k++)
			CHECK_WC(&sw[k], (uint64_t)k, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	t_poll(u.cq[0], total, wc, "every datagram");
	for (int n = 0; n < total; n++) {
		const uint8_t *b = rbuf(&u, 0) + wc[n].wr_id * 128;
		int s = -1;

		CHECK_WC_STATUS(&wc[n], (uint64_t)n, IBV_WC_SUCCESS);
		CHECK_EQ(wc[n].byte_len, GRH + 1);
		for (int i = 1; i < NQP; i++)
			if (u.qp[i]->qp_num == wc[n].src_qp)
				s = i;
		CHECK(s > 0);
		CHECK_EQ(b[GRH] >> 4, s);       /* the data is that sender's */
		CHECK_EQ(b[GRH] & 0xf, got[s]); /* in its order */
		got[s]++;
	}
	for (int s = 1; s < NQP; s++)
		CHECK_EQ(got[s], PER_SENDER);
	t_expect_empty(u.cq[0], "nothing twice");
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

static void case_attrs(void)
{
	struct ud u;
	struct ibv_qp_init_attr ia = {
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = 0x42};
	struct ibv_qp_init_attr qia;
	struct ibv_qp *qp;
	const int init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	ud_open(&u);
	ia.send_cq = ia.recv_cq = u.cq[0];
	qp = CHECK_PTR(ibv_create_qp(u.pd, &ia));
	t_case("RESET -> INIT: the Q_Key is required, access flags are not UD's");
	CHECK_RET(ibv_modify_qp(qp, &a, init), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &a, init | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS), EINVAL);
	CHECK_OK(ibv_modify_qp(qp, &a, init | IBV_QP_QKEY));
	t_case("INIT -> RTR: no path, destination or PSN");
	a.qp_state = IBV_QPS_RTR;
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_DEST_QPN), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_RQ_PSN), EINVAL);
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
	t_case("RTR -> RTS: the SQ PSN, no timeout, retries or RNR");
	a.qp_state = IBV_QPS_RTS;
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
	          EINVAL);
	CHECK_EQ(t_qp_state(qp), IBV_QPS_RTR);
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	t_case("query_qp: type UD and the Q_Key");
	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY, &qia));
	CHECK_EQ(qia.qp_type, IBV_QPT_UD);
	CHECK_EQ(a.qkey, 0x42);
	CHECK_EQ(a.qp_state, IBV_QPS_RTS);
	t_case("create_ah on RoCE: a GRH required, the source GID valid");
	{
		struct ibv_ah_attr aa = {.port_num = 1};

		errno = 0;
		CHECK(ibv_create_ah(u.pd, &aa) == NULL);
		CHECK_EQ(errno, EINVAL);
		aa.is_global = 1;
		CHECK_OK(ibv_query_gid(u.ctx, 1, 3, &aa.grh.dgid));
		aa.grh.sgid_index = 7; /* an empty entry */
		errno = 0;
		CHECK(ibv_create_ah(u.pd, &aa) == NULL);
		CHECK_EQ(errno, EINVAL);
	}
	CHECK_OK(ibv_destroy_qp(qp));
	ud_close(&u);
}

static void case_opcodes(void)
{
	struct ud u;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
	    .wr_id = 9, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED};

	ud_open(&u);
	ah = ud_ah(&u, 3, NULL);
	t_case("RDMA WRITE on UD: posted as mlx5 posts it, LOC_QP_OP_ERR from the NIC");
	sge = (struct ibv_sge){(uintptr_t)sbuf(&u, 0), 8, u.mr->lkey};
	wr.sg_list = &sge;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = u.qp[1]->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	t_post_send(u.qp[0], &wr);
	wc = t_poll1(u.cq[0], "the WRITE");
	CHECK_WC_STATUS(&wc, 9, IBV_WC_LOC_QP_OP_ERR);
	CHECK_EQ(t_qp_state(u.qp[0]), IBV_QPS_ERR);
	t_case("a WR without an AH: EINVAL, nothing posted");
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = NULL;
	{
		struct ibv_send_wr *bad = NULL;

		CHECK_RET(ibv_post_send(u.qp[1], &wr, &bad), EINVAL);
		CHECK(bad == &wr);
	}
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

static void case_layout(void)
{
	struct ud u;
	struct ibv_ah *ah;
	struct mlx5dv_qp dq;
	struct mlx5dv_ah dah;
	struct mlx5dv_obj obj = {0};
	const uint8_t *wqe;
	union ibv_gid gid;
	uint32_t v;

	ud_open(&u);
	ah = ud_ah(&u, 3, &gid);
	obj.qp.in = u.qp[0];
	obj.qp.out = &dq;
	obj.ah.in = ah;
	obj.ah.out = &dah;
	t_case("mlx5dv_init_obj: the QP's queues and the AH's address vector");
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_AH));
	CHECK_EQ(dq.sq.stride, 64);
	CHECK(dq.sq.wqe_cnt >= DEPTH);
	CHECK(dah.av != NULL);
	CHECK_MEM((const uint8_t *)dah.av + 32, gid.raw, 16); /* rgid */
	memcpy(&v, (const uint8_t *)dah.av + 28, 4);
	CHECK_EQ((ntohl(v) >> 20) & 0xff, 3);          /* sgid_index */
	CHECK_EQ(ntohl(v) & 0xfffff, 0x12345);         /* flow label */
	CHECK_EQ(((const uint8_t *)dah.av)[26], 0x20); /* tclass */
	CHECK_EQ(((const uint8_t *)dah.av)[27], 64);   /* hop limit */

	t_case("the WQE post_send writes: ctrl, datagram segment, data segment");
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, 0xabcd, 8, 1);
	expect_sent(&u, 0, 1);
	wqe = dq.sq.buf;
	memcpy(&v, wqe, 4);
	CHECK_EQ(ntohl(v) & 0xff, 0x0a); /* SEND */
	memcpy(&v, wqe + 4, 4);
	CHECK_EQ(ntohl(v) >> 8, u.qp[0]->qp_num);
	CHECK_EQ(ntohl(v) & 0x3f, 1 + 3 + 1); /* ctrl + 48-byte AV + one data segment */
	memcpy(&v, wqe + 16, 4);
	CHECK_EQ(ntohl(v), 0xabcd); /* Q_Key */
	memcpy(&v, wqe + 16 + 8, 4);
	CHECK_EQ(ntohl(v), u.qp[1]->qp_num | 0x80000000u); /* dqp_dct, extended AV */
	CHECK_MEM(wqe + 16 + 32, gid.raw, 16);
	memcpy(&v, wqe + 64, 4);
	CHECK_EQ(ntohl(v), 8); /* the data segment's byte count */
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

static void case_wr_api(void)
{
	struct ud u;
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
	struct ibv_ah *ah;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_wc wc;

	ud_open(&u);
	ah = ud_ah(&u, 3, NULL);
	ia = t_qp_ex_attr(u.pd, u.cq[0], IBV_QPT_UD,
	                  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
	t_case("send_ops_flags with RDMA_WRITE on UD: EOPNOTSUPP");
	errno = 0;
	CHECK(ibv_create_qp_ex(u.ctx, &ia) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	t_case("SEND | SEND_WITH_IMM: ibv_wr_send_imm, ibv_wr_set_ud_addr, ibv_wr_set_sge");
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	qp = CHECK_PTR(ibv_create_qp_ex(u.ctx, &ia));
	CHECK_OK(
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
	a.qp_state = IBV_QPS_RTR;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	qpx = CHECK_PTR(ibv_qp_to_qp_ex(qp));
	t_fill(sbuf(&u, 0), 256, 5);
	post_recv(&u, 1, 71, GRH + 256);
	ibv_wr_start(qpx);
	qpx->wr_id = 70;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(qpx, htonl(0x5eed));
	ibv_wr_set_ud_addr(qpx, ah, u.qp[1]->qp_num, QKEY);
	ibv_wr_set_sge(qpx, u.mr->lkey, (uintptr_t)sbuf(&u, 0), 256);
	CHECK_OK(ibv_wr_complete(qpx));
	wc = t_poll1(u.cq[0], "the wr_api send");
	CHECK_WC(&wc, 70, IBV_WC_SUCCESS, IBV_WC_SEND);
	wc = t_poll1(u.cq[1], "its datagram");
	CHECK_WC(&wc, 71, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, GRH + 256);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 0x5eed);
	CHECK_EQ(wc.src_qp, qp->qp_num);
	CHECK_MEM(rbuf(&u, 1) + GRH, sbuf(&u, 0), 256);
	t_case("a send without ibv_wr_set_ud_addr: EINVAL from wr_complete, nothing posted");
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, u.mr->lkey, (uintptr_t)sbuf(&u, 0), 16);
	CHECK_RET(ibv_wr_complete(qpx), EINVAL);
	t_expect_empty(u.cq[0], "nothing was posted");
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

static void case_devices(void)
{
	struct ud u;
	int n = 0;
	struct ibv_device **list = CHECK_PTR(ibv_get_device_list(&n));
	struct ibv_context *ctx2;
	struct ibv_pd *pd2;
	struct ibv_cq *cq2;
	struct ibv_mr *mr2;
	struct ibv_qp *qp2;
	struct ibv_ah *to2, *to1;
	union ibv_gid g1, g2;
	struct ibv_wc wc;
	uint8_t *b2;
	struct ibv_qp_init_attr ia = {
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};

	if (n < 2) {
		printf("note: one device: case devices runs with GNIC_EMU_DEVICES=2 (ctest "
		       "test_ud_devices)\n");
		ibv_free_device_list(list);
		return;
	}
	ud_open(&u);
	ctx2 = CHECK_PTR(ibv_open_device(list[1]));
	ibv_free_device_list(list);
	pd2 = CHECK_PTR(ibv_alloc_pd(ctx2));
	cq2 = t_cq(ctx2, 16);
	b2 = t_alloc(T_PAGE, 0);
	mr2 = t_reg(pd2, b2, T_PAGE, IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = ia.recv_cq = cq2;
	qp2 = CHECK_PTR(ibv_create_qp(pd2, &ia));
	CHECK_OK(
	    ibv_modify_qp(qp2, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
	a.qp_state = IBV_QPS_RTR;
	CHECK_OK(ibv_modify_qp(qp2, &a, IBV_QP_STATE));
	CHECK_OK(ibv_query_gid(u.ctx, 1, 3, &g1));
	CHECK_OK(ibv_query_gid(ctx2, 1, 3, &g2));
	CHECK(memcmp(&g1, &g2, sizeof(g1)) != 0);
	aa.grh.sgid_index = 3;
	aa.grh.hop_limit = 8;
	aa.grh.dgid = g2;
	to2 = CHECK_PTR(ibv_create_ah(u.pd, &aa));
	aa.grh.dgid = g1;
	to1 = CHECK_PTR(ibv_create_ah(u.pd, &aa));

	t_case("device 0 -> device 1: delivered, both addresses in the IPv4 header");
	t_post_recv_buf(qp2, 90, b2, GRH + 64, mr2->lkey);
	t_fill(sbuf(&u, 0), 64, 2);
	send_dgram(&u, 0, to2, qp2->qp_num, QKEY, 64, 1);
	expect_sent(&u, 0, 1);
	wc = t_poll1(cq2, "the datagram on device 1");
	CHECK_WC(&wc, 90, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.src_qp, u.qp[0]->qp_num);
	CHECK_MEM(b2 + 32, &g1.raw[12], 4); /* source address */
	CHECK_MEM(b2 + 36, &g2.raw[12], 4); /* destination address */
	CHECK_EQ(b2[28], 8);
	CHECK_MEM(b2 + GRH, sbuf(&u, 0), 64);

	t_case("device 1's QPN by device 0's address: lost on device 0");
	t_post_recv_buf(qp2, 91, b2, GRH + 64, mr2->lkey);
	send_dgram(&u, 0, to1, qp2->qp_num, QKEY, 64, 2);
	expect_sent(&u, 0, 2);
	t_expect_empty(cq2, "a datagram addressed to the other device");

	CHECK_OK(ibv_destroy_ah(to1));
	CHECK_OK(ibv_destroy_ah(to2));
	CHECK_OK(ibv_destroy_qp(qp2));
	CHECK_OK(ibv_destroy_cq(cq2));
	CHECK_OK(ibv_dereg_mr(mr2));
	CHECK_OK(ibv_dealloc_pd(pd2));
	CHECK_OK(ibv_close_device(ctx2));
	free(b2);
	ud_close(&u);
}

static void case_ib(void)
{
	struct ud u;
	struct ibv_port_attr pa;
	struct ibv_ah_attr aa = {.port_num = 1, .sl = 5};
	struct ibv_ah *ah;
	struct ibv_wc wc;

	ud_open(&u);
	CHECK_OK(ibv_query_port(u.ctx, 1, &pa));
	if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND) {
		printf("note: RoCE port: case ib runs with GNIC_EMU_LINK=ib (ctest test_ud_ib)\n");
		ud_close(&u);
		return;
	}
	t_case("InfiniBand, no GRH: the data at offset 0, the sender's LID and SL in the CQE");
	aa.dlid = pa.lid;
	ah = CHECK_PTR(ibv_create_ah(u.pd, &aa));
	t_fill(sbuf(&u, 0), 64, 9);
	memset(rbuf(&u, 1), 0x7b, GRH + 64);
	post_recv(&u, 1, 51, GRH + 64);
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, QKEY, 64, 1);
	expect_sent(&u, 0, 1);
	wc = t_poll1(u.cq[1], "the datagram without GRH");
	CHECK_WC(&wc, 51, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 64);
	CHECK(!(wc.wc_flags & IBV_WC_GRH));
	CHECK_EQ(wc.slid, pa.lid);
	CHECK_EQ(wc.sl, 5);
	CHECK_EQ(wc.src_qp, u.qp[0]->qp_num);
	CHECK_MEM(rbuf(&u, 1), sbuf(&u, 0), 64);
	CHECK_BYTES(rbuf(&u, 1) + 64, 0x7b, GRH); /* nothing more written */
	t_case("ibv_create_ah_from_wc without a GRH: the answer by LID");
	{
		struct ibv_ah *back = CHECK_PTR(ibv_create_ah_from_wc(u.pd, &wc, NULL, 1));

		post_recv(&u, 0, 52, GRH + 64);
		send_dgram(&u, 1, back, wc.src_qp, QKEY, 64, 2);
		expect_sent(&u, 1, 2);
		wc = t_poll1(u.cq[0], "the answer");
		CHECK_WC(&wc, 52, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, 64);
		CHECK_OK(ibv_destroy_ah(back));
	}
	CHECK_OK(ibv_destroy_ah(ah));
	t_case("InfiniBand with a GRH: written, counted, flagged");
	aa.is_global = 1;
	aa.grh.sgid_index = 0;
	aa.grh.hop_limit = 1;
	CHECK_OK(ibv_query_gid(u.ctx, 1, 0, &aa.grh.dgid));
	ah = CHECK_PTR(ibv_create_ah(u.pd, &aa));
	post_recv(&u, 1, 53, GRH + 64);
	send_dgram(&u, 0, ah, u.qp[1]->qp_num, QKEY, 64, 3);
	expect_sent(&u, 0, 3);
	wc = t_poll1(u.cq[1], "the datagram with a GRH");
	CHECK_WC(&wc, 53, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, GRH + 64);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK_EQ(rbuf(&u, 1)[6], 0x1b); /* next header: BTH */
	CHECK_MEM(rbuf(&u, 1) + 8, aa.grh.dgid.raw, 16);
	CHECK_MEM(rbuf(&u, 1) + GRH, sbuf(&u, 0), 64);
	CHECK_OK(ibv_destroy_ah(ah));
	ud_close(&u);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"grh", case_grh},
	    {"qkey", case_qkey},
	    {"oversize", case_oversize},
	    {"unknown_qpn", case_unknown_qpn},
	    {"many", case_many},
	    {"attrs", case_attrs},
	    {"opcodes", case_opcodes},
	    {"layout", case_layout},
	    {"wr_api", case_wr_api},
	    {"devices", case_devices},
	    {"ib", case_ib},
	};

	T_RUN_CASES(cases, argc, argv);
	return 0;
}
