// SPDX-License-Identifier: MIT
/*
 * UC queue pairs as a ConnectX with rdma-core's mlx5 has them:
 *
 *   ops        RDMA WRITE (bytes land), WRITE with immediate (a receive
 *              CQE with the immediate), SEND large and small: each completes
 *              at the sender; ops_cross the same with the two QPs on two
 *              engine workers where there are several (a 0-byte SEND behind
 *              a WRITE tells when it landed)
 * The other cases put both QPs on one engine worker, so that a message is
 * delivered (or dropped) before the sender's completion.
 *   no_ack     the sender completes on transmission: with the receiver not
 *              even in RTR (nothing could answer) its signaled SEND and
 *              WRITE complete at once, successfully, where RC would wait for
 *              an ACK; the receiver takes nothing
 *   lost       a message that finds no receive posted is dropped (a WRITE
 *              behind it has landed, so it was seen) and never comes again
 *              once a receive is posted; the next message (a later PSN) is
 *              taken; a WRITE with a bad rkey is dropped, the receiver stays
 *              in RTS
 *   psn        sequence numbers: a message after a gap (the sender's PSN
 *              ahead of the receiver's: messages lost on the wire) is taken,
 *              a stale one (behind) is dropped
 *   read       READ and atomics: posted as rdma-core's mlx5 posts them,
 *              completed with LOC_QP_OP_ERR by the NIC, QP in ERR
 *   wr_api     send_ops_flags: SEND, SEND_IMM, WRITE, WRITE_IMM (READ or
 *              atomics: EOPNOTSUPP, as mlx5 has none for UC); ibv_wr_rdma_write
 *   attrs      the UC rows of the state machine: no RD atomic depth, RNR
 *              timer, timeout or retries (EINVAL); query_qp says UC
 *
 * Run one case: test_uc <case>.
 */
#include <arpa/inet.h>

#include "common.h"

#define MSG   65536
#define DEPTH 32
#define MARK  8192 /* where the marker WRITEs land */
#define FENCE 99   /* wr_id of a fence's receive */

int gemu_qp_engine_worker(struct ibv_qp *qp); /* libgnic_emu */

struct uc {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_mr *mr[2];
	uint8_t *buf[2];
};

static struct ibv_qp *uc_qp(struct uc *u, int i)
{
	return t_qp_on(u->pd, u->cq[i], IBV_QPT_UC, DEPTH);
}

static void uc_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
	                        .pkey_index = 0,
	                        .port_num = 1,
	                        .qp_access_flags =
	                            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};

	CHECK_OK(ibv_modify_qp(
	    qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
}

static struct ibv_qp_attr rtr_attr(struct ibv_qp *peer)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
	                        .path_mtu = IBV_MTU_4096,
	                        .dest_qp_num = peer->qp_num,
	                        .rq_psn = 0x100,
	                        .ah_attr = {.is_global = 1, .port_num = 1}};

	CHECK_OK(ibv_query_gid(peer->context, 1, T_GID_INDEX, &a.ah_attr.grh.dgid));
	a.ah_attr.grh.sgid_index = T_GID_INDEX;
	a.ah_attr.grh.hop_limit = 64;
	return a;
}

#define RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)

static void uc_rtr(struct ibv_qp *qp, struct ibv_qp *peer)
{
	struct ibv_qp_attr a = rtr_attr(peer);

	CHECK_OK(ibv_modify_qp(qp, &a, RTR_MASK));
}

static void uc_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .sq_psn = 0x100};

	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
}

/* qp[1] on qp[0]'s engine worker (QPs made in turn go round the workers):
 * then a message is delivered inside the sender's engine pass, before its
 * completion, and a case can tell a dropped message from a late one. */
static void place_together(struct uc *u)
{
	struct ibv_qp *spare[64];
	int n = 0;

	while (gemu_qp_engine_worker(u->qp[1]) != gemu_qp_engine_worker(u->qp[0])) {
		CHECK(n < 64);
		spare[n++] = u->qp[1];
		u->qp[1] = uc_qp(u, 1);
	}
	while (n--)
		CHECK_OK(ibv_destroy_qp(spare[n]));
}

/* Both QPs made; qp[0] in RTS; qp[1] up to `state` (INIT, RTR or RTS), on
 * qp[0]'s worker if together (else wherever it lands). */
static void uc_open_placed(struct uc *u, enum ibv_qp_state state, bool together)
{
	memset(u, 0, sizeof(*u));
	u->ctx = t_open(T_DEVICE);
	u->pd = CHECK_PTR(ibv_alloc_pd(u->ctx));
	for (int i = 0; i < 2; i++) {
		u->buf[i] = t_alloc(MSG, 0);
		u->mr[i] =
		    t_reg(u->pd, u->buf[i], MSG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		u->cq[i] = t_cq(u->ctx, 4 * DEPTH);
		u->qp[i] = uc_qp(u, i);
	}
	if (together)
		place_together(u);
	uc_init(u->qp[0]);
	uc_init(u->qp[1]);
	uc_rtr(u->qp[0], u->qp[1]);
	uc_rts(u->qp[0]);
	if (state >= IBV_QPS_RTR)
		uc_rtr(u->qp[1], u->qp[0]);
	if (state >= IBV_QPS_RTS)
		uc_rts(u->qp[1]);
}

static void uc_open(struct uc *u, enum ibv_qp_state state)
{
	uc_open_placed(u, state, true);
}

static void uc_close(struct uc *u)
{
	for (int i = 0; i < 2; i++) {
		CHECK_OK(ibv_destroy_qp(u->qp[i]));
		CHECK_OK(ibv_destroy_cq(u->cq[i]));
		CHECK_OK(ibv_dereg_mr(u->mr[i]));
		free(u->buf[i]);
	}
	CHECK_OK(ibv_dealloc_pd(u->pd));
	CHECK_OK(ibv_close_device(u->ctx));
}

static void post(struct uc *u, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off, uint32_t len,
                 uint32_t rkey)
{
	struct ibv_sge sge = {(uintptr_t)(u->buf[0] + off), len, u->mr[0]->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = op,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .imm_data = htonl(0xc0ffee)};

	wr.wr.rdma.remote_addr = (uintptr_t)(u->buf[1] + off);
	wr.wr.rdma.rkey = rkey;
	t_post_send(u->qp[0], &wr);
}

static void expect_done(struct uc *u, uint64_t wr_id, int opcode)
{
	struct ibv_wc wc = t_poll1(u->cq[0], "the sender's completion");

	CHECK_WC(&wc, wr_id, IBV_WC_SUCCESS, opcode);
}

/* Everything `from` sent qp[1] before is done once a 0-byte SEND behind
 * it completed its receive (in order, and the CQE orders the memory). */
static void fence(struct uc *u, struct ibv_qp *from)
{
	struct ibv_send_wr wr = {.wr_id = FENCE, .opcode = IBV_WR_SEND};
	struct ibv_wc wc;

	t_post_recv_buf(u->qp[1], FENCE, u->buf[1] + MSG - 64, 64, u->mr[1]->lkey);
	t_post_send(from, &wr);
	wc = t_poll1(u->cq[1], "the fence");
	CHECK_WC(&wc, FENCE, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 0);
}

/* ops runs with the QPs on one worker or (cross) on whichever they land. */
static void ops(bool together)
{
	struct uc u;
	struct ibv_wc wc;

	uc_open_placed(&u, IBV_QPS_RTS, together);
	t_fill(u.buf[0], MSG, 3);
	t_case("RDMA WRITE of 64 KiB: the bytes land, the sender completes");
	post(&u, IBV_WR_RDMA_WRITE, 1, 0, MSG - 64, u.mr[1]->rkey);
	expect_done(&u, 1, IBV_WC_RDMA_WRITE);
	fence(&u, u.qp[0]); /* its receive is the only one taken: the WRITE took none */
	CHECK_MEM(u.buf[1], u.buf[0], MSG - 64);
	t_expect_empty(u.cq[1], "a WRITE consumes no receive");

	t_case("WRITE with immediate: a receive CQE with the immediate");
	t_post_recv_buf(u.qp[1], 20, u.buf[1], 0, u.mr[1]->lkey);
	post(&u, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 0, 4096, u.mr[1]->rkey);
	expect_done(&u, 2, IBV_WC_RDMA_WRITE);
	wc = t_poll1(u.cq[1], "the WRITE_IMM's receive");
	CHECK_WC(&wc, 20, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 0xc0ffee);
	CHECK_EQ(wc.byte_len, 4096);

	t_case("SEND of 64 KiB and of 16 bytes (scatter-to-CQE)");
	memset(u.buf[1], 0, MSG);
	t_fill(u.buf[0], MSG, 4);
	t_post_recv_buf(u.qp[1], 21, u.buf[1], MSG, u.mr[1]->lkey);
	post(&u, IBV_WR_SEND, 3, 0, MSG, 0);
	expect_done(&u, 3, IBV_WC_SEND);
	wc = t_poll1(u.cq[1], "the SEND");
	CHECK_WC(&wc, 21, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, MSG);
	CHECK_MEM(u.buf[1], u.buf[0], MSG);
	memset(u.buf[1], 0, 16);
	t_post_recv_buf(u.qp[1], 22, u.buf[1], 64, u.mr[1]->lkey);
	post(&u, IBV_WR_SEND_WITH_IMM, 4, 0, 16, 0);
	expect_done(&u, 4, IBV_WC_SEND);
	wc = t_poll1(u.cq[1], "the small SEND");
	CHECK_WC(&wc, 22, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(wc.byte_len, 16);
	CHECK_EQ(wc.src_qp, u.qp[0]->qp_num);
	CHECK_MEM(u.buf[1], u.buf[0], 16);
	uc_close(&u);
}

static void case_ops(void)
{
	ops(true);
}

static void case_ops_cross(void)
{
	ops(false);
}

static void case_no_ack(void)
{
	struct uc u;
	uint64_t t0;

	uc_open(&u, IBV_QPS_INIT);
	t_case("receiver in INIT: the SEND and WRITE complete, successfully, at once");
	t_post_recv_buf(u.qp[1], 30, u.buf[1], MSG, u.mr[1]->lkey);
	t0 = t_now_ms();
	post(&u, IBV_WR_SEND, 1, 0, 4096, 0);
	post(&u, IBV_WR_RDMA_WRITE, 2, 0, 4096, u.mr[1]->rkey);
	expect_done(&u, 1, IBV_WC_SEND);
	expect_done(&u, 2, IBV_WC_RDMA_WRITE);
	/* RC's default timeout is seconds (GNIC_EMU_TIMEOUT_MS 4000): no wait for an answer */
	CHECK(t_now_ms() - t0 < 2000);
	t_sleep_ms(50);
	t_expect_empty(u.cq[1], "a receiver in INIT takes nothing");
	CHECK_BYTES(u.buf[1], 0, 4096);
	uc_close(&u);
}

static void case_lost(void)
{
	struct uc u;
	struct ibv_wc wc;

	uc_open(&u, IBV_QPS_RTS);
	t_case("a SEND without a receive posted is dropped, not retried");
	memset(u.buf[0], 0xa1, 64);
	post(&u, IBV_WR_SEND, 1, 0, 64, 0);
	expect_done(&u, 1, IBV_WC_SEND);
	/* messages arrive in order: once this WRITE landed, the SEND was seen */
	memset(u.buf[0] + MARK, 0xee, 8);
	post(&u, IBV_WR_RDMA_WRITE, 5, MARK, 8, u.mr[1]->rkey);
	expect_done(&u, 5, IBV_WC_RDMA_WRITE);
	CHECK_BYTES(u.buf[1] + MARK, 0xee, 8);
	t_post_recv_buf(u.qp[1], 40, u.buf[1], MSG, u.mr[1]->lkey);
	t_expect_empty(u.cq[1], "the lost SEND");
	t_sleep_ms(50);
	t_expect_empty(u.cq[1], "the lost SEND, later");
	t_case("the next message (after the gap) is taken");
	memset(u.buf[0] + 64, 0xb2, 64);
	post(&u, IBV_WR_SEND, 2, 64, 64, 0);
	expect_done(&u, 2, IBV_WC_SEND);
	wc = t_poll1(u.cq[1], "the SEND after the lost one");
	CHECK_WC(&wc, 40, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 64);
	CHECK_BYTES(u.buf[1], 0xb2, 64);

	t_case("a WRITE with a bad rkey: dropped, the receiver stays in RTS");
	memset(u.buf[1] + 4096, 0, 4096);
	memset(u.buf[0] + 4096, 0x5a, 4096);
	post(&u, IBV_WR_RDMA_WRITE, 3, 4096, 4096, u.mr[1]->rkey ^ 0x55);
	expect_done(&u, 3, IBV_WC_RDMA_WRITE);
	t_post_recv_buf(u.qp[1], 41, u.buf[1], MSG, u.mr[1]->lkey);
	post(&u, IBV_WR_SEND, 4, 64, 64, 0);
	expect_done(&u, 4, IBV_WC_SEND);
	wc = t_poll1(u.cq[1], "a SEND after the bad WRITE");
	CHECK_WC(&wc, 41, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_BYTES(u.buf[1] + 4096, 0, 4096); /* the WRITE before it did not land */
	CHECK_EQ(t_qp_state(u.qp[1]), IBV_QPS_RTS);
	CHECK_EQ(t_qp_state(u.qp[0]), IBV_QPS_RTS);
	uc_close(&u);
}

/* qp[0] from RESET to RTS again, its SQ PSN psn. */
static void restart_sender(struct uc *u, uint32_t psn)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .sq_psn = psn};

	CHECK_OK(t_qp_to(u->qp[0], IBV_QPS_RESET));
	uc_init(u->qp[0]);
	uc_rtr(u->qp[0], u->qp[1]);
	CHECK_OK(ibv_modify_qp(u->qp[0], &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
}

static void case_psn(void)
{
	struct uc u;
	struct ibv_wc wc;

	uc_open(&u, IBV_QPS_RTS); /* the receiver expects PSN 0x100 */
	t_case("PSN 0x180 where 0x100 is expected (a gap): taken");
	restart_sender(&u, 0x180);
	t_post_recv_buf(u.qp[1], 60, u.buf[1], MSG, u.mr[1]->lkey);
	memset(u.buf[0], 0xc3, 64);
	post(&u, IBV_WR_SEND, 1, 0, 64, 0);
	expect_done(&u, 1, IBV_WC_SEND);
	wc = t_poll1(u.cq[1], "the message after the gap");
	CHECK_WC(&wc, 60, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_BYTES(u.buf[1], 0xc3, 64);
	t_case("PSN 0x100 where 0x181 is expected (stale): dropped");
	restart_sender(&u, 0x100);
	t_post_recv_buf(u.qp[1], 61, u.buf[1], MSG, u.mr[1]->lkey);
	post(&u, IBV_WR_SEND, 2, 0, 64, 0);
	expect_done(&u, 2, IBV_WC_SEND);
	/* a WRITE at PSN 0x101 lands nowhere either: stale too */
	memset(u.buf[0] + MARK, 0xee, 8);
	post(&u, IBV_WR_RDMA_WRITE, 3, MARK, 8, u.mr[1]->rkey);
	expect_done(&u, 3, IBV_WC_RDMA_WRITE);
	t_case("... and PSN 0x181 on is taken again");
	restart_sender(&u, 0x181);
	post(&u, IBV_WR_RDMA_WRITE, 4, MARK, 8, u.mr[1]->rkey);
	expect_done(&u, 4, IBV_WC_RDMA_WRITE);
	CHECK_BYTES(u.buf[1] + MARK, 0xee, 8);
	t_expect_empty(u.cq[1], "the stale SEND took no receive");
	uc_close(&u);
}

static void case_read(void)
{
	struct uc u;
	struct ibv_wc wc;

	uc_open(&u, IBV_QPS_RTS);
	t_case("READ on UC: posted, LOC_QP_OP_ERR, QP in ERR, the rest flushed");
	post(&u, IBV_WR_RDMA_READ, 1, 0, 64, u.mr[1]->rkey);
	post(&u, IBV_WR_SEND, 2, 0, 64, 0);
	wc = t_poll1(u.cq[0], "the READ");
	CHECK_WC_STATUS(&wc, 1, IBV_WC_LOC_QP_OP_ERR);
	wc = t_poll1(u.cq[0], "the SEND behind it");
	CHECK_WC_STATUS(&wc, 2, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(t_qp_state(u.qp[0]), IBV_QPS_ERR);
	t_case("an atomic likewise");
	CHECK_OK(t_qp_to(u.qp[0], IBV_QPS_RESET));
	uc_init(u.qp[0]);
	uc_rtr(u.qp[0], u.qp[1]);
	uc_rts(u.qp[0]);
	{
		struct ibv_sge sge = {(uintptr_t)u.buf[0], 8, u.mr[0]->lkey};
		struct ibv_send_wr wr = {.wr_id = 3,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		                         .send_flags = IBV_SEND_SIGNALED};

		wr.wr.atomic.remote_addr = (uintptr_t)u.buf[1];
		wr.wr.atomic.rkey = u.mr[1]->rkey;
		wr.wr.atomic.compare_add = 1;
		t_post_send(u.qp[0], &wr);
	}
	wc = t_poll1(u.cq[0], "the atomic");
	CHECK_WC_STATUS(&wc, 3, IBV_WC_LOC_QP_OP_ERR);
	uc_close(&u);
}

static void case_wr_api(void)
{
	struct uc u;
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_wc wc;

	uc_open(&u, IBV_QPS_RTS);
	ia = t_qp_ex_attr(u.pd, u.cq[0], IBV_QPT_UC,
	                  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ);
	t_case("send_ops_flags with RDMA_READ on UC: EOPNOTSUPP");
	errno = 0;
	CHECK(ibv_create_qp_ex(u.ctx, &ia) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	t_case("RDMA_WRITE through ibv_wr_rdma_write into qp[1]");
	ia.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
	qp = CHECK_PTR(ibv_create_qp_ex(u.ctx, &ia));
	uc_init(qp);
	uc_rtr(qp, u.qp[1]);
	uc_rts(qp);
	/* qp[1] takes messages from qp[0] only: point it at the new QP */
	CHECK_OK(t_qp_to(u.qp[1], IBV_QPS_RESET));
	uc_init(u.qp[1]);
	uc_rtr(u.qp[1], qp);
	qpx = CHECK_PTR(ibv_qp_to_qp_ex(qp));
	t_fill(u.buf[0], 4096, 8);
	ibv_wr_start(qpx);
	qpx->wr_id = 80;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, u.mr[1]->rkey, (uintptr_t)u.buf[1]);
	ibv_wr_set_sge(qpx, u.mr[0]->lkey, (uintptr_t)u.buf[0], 4096);
	CHECK_OK(ibv_wr_complete(qpx));
	wc = t_poll1(u.cq[0], "the wr_api WRITE");
	CHECK_WC(&wc, 80, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	fence(&u, qp);
	CHECK_MEM(u.buf[1], u.buf[0], 4096);
	CHECK_OK(ibv_destroy_qp(qp));
	uc_close(&u);
}

static void case_attrs(void)
{
	struct uc u;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr qia;

	uc_open(&u, IBV_QPS_INIT);
	t_case("INIT -> RTR: no RD atomic depth, no RNR timer");
	a = rtr_attr(u.qp[0]);
	a.max_dest_rd_atomic = 1;
	CHECK_RET(ibv_modify_qp(u.qp[1], &a, RTR_MASK | IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	CHECK_RET(ibv_modify_qp(u.qp[1], &a, RTR_MASK | IBV_QP_MIN_RNR_TIMER), EINVAL);
	CHECK_RET(ibv_modify_qp(u.qp[1], &a, RTR_MASK & ~IBV_QP_DEST_QPN), EINVAL);
	CHECK_EQ(t_qp_state(u.qp[1]), IBV_QPS_INIT);
	CHECK_OK(ibv_modify_qp(u.qp[1], &a, RTR_MASK));
	t_case("RTR -> RTS: no timeout, retries, RNR retries or RD atomics");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	CHECK_RET(ibv_modify_qp(u.qp[1], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT),
	          EINVAL);
	CHECK_RET(ibv_modify_qp(u.qp[1], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT),
	          EINVAL);
	CHECK_RET(ibv_modify_qp(u.qp[1], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY),
	          EINVAL);
	CHECK_RET(
	    ibv_modify_qp(u.qp[1], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
	    EINVAL);
	CHECK_RET(ibv_modify_qp(u.qp[1], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_QKEY), EINVAL);
	CHECK_OK(ibv_modify_qp(u.qp[1], &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	CHECK_OK(ibv_query_qp(u.qp[1], &a, IBV_QP_STATE, &qia));
	CHECK_EQ(qia.qp_type, IBV_QPT_UC);
	CHECK_EQ(a.qp_state, IBV_QPS_RTS);
	uc_close(&u);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"ops", case_ops},       {"ops_cross", case_ops_cross},
	    {"no_ack", case_no_ack}, {"lost", case_lost},
	    {"psn", case_psn},       {"read", case_read},
	    {"attrs", case_attrs},   {"wr_api", case_wr_api},
	};

	T_RUN_CASES(cases, argc, argv);
	return 0;
}
