// SPDX-License-Identifier: MIT
/*
 * Shared receive queues, against rdma-core 44's mlx5 provider and the mlx5
 * kernel driver:
 *
 *   create  sizing (WQE = 16-byte next segment + data segments, a power of
 *           two >= 32 bytes; max_wr reported as pow2(max_wr + 1) - 1, query
 *           reporting the allocation with mlx5's wait queue), limits, QPs
 *           with an SRQ have no RQ, destroy while used: EBUSY;
 *   format  the WQE bytes ibv_post_srq_recv writes (mlx5dv_init_obj): data
 *           segments after the next segment, an INVALID_LKEY end, the free
 *           list's next_wqe_index chain, the doorbell record's count;
 *   shared  SENDs to four QPs land in the SRQ's buffers in posting order,
 *           each receive CQE naming its QP and its WQE's wr_id;
 *   full    max_wr WQEs fit, one more is ENOMEM (bad_wr names it), too many
 *           SGEs EINVAL; hundreds of laps through a small SRQ recycle WQEs;
 *   limit   IBV_EVENT_SRQ_LIMIT_REACHED once fewer WQEs than the armed limit
 *           are left, then disarmed; modify checks;
 *   errors  a SEND too big for the WQE: a receive error CQE with the WQE's
 *           wr_id; a QP reset drops CQEs and their WQEs return to the SRQ;
 *           a SEND with no WQE posted waits (RNR) until one is;
 *   lastwqe IBV_EVENT_QP_LAST_WQE_REACHED, once, for a QP of the SRQ that
 *           enters ERR (modify_qp, or a receive error: after its error CQE),
 *           again after a reset; none for a QP without an SRQ; the SRQ's
 *           WQEs stay for its other QPs.
 */
#include <infiniband/mlx5dv.h>
#include <poll.h>

#include "common.h"

#define NQP     4
#define BUF_LEN (256 * 1024)
#define SLOT    1024
#define GUARD   0xee

static struct ibv_context *ctx;

struct sset {
	struct ibv_pd *pd;
	struct ibv_srq *srq;
	struct ibv_cq *scq, *rcq, *dummy;
	struct ibv_qp *tx[NQP], *rx[NQP];
	uint32_t srq_wr, srq_sge; /* what create reported */
	uint8_t *a, *b;           /* send data, receive buffers */
	struct ibv_mr *amr, *bmr;
};

static struct ibv_qp *srq_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
                             struct ibv_srq *srq, struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr a = {.send_cq = scq,
	                             .recv_cq = rcq,
	                             .srq = srq,
	                             .cap = {.max_send_wr = 16,
	                                     .max_recv_wr = 16, /* ignored with an SRQ */
	                                     .max_send_sge = 1,
	                                     .max_recv_sge = 1},
	                             .qp_type = IBV_QPT_RC};
	struct ibv_qp *qp = CHECK_PTR(ibv_create_qp(pd, &a));

	if (cap)
		*cap = a.cap;
	return qp;
}

static void sset_create(struct sset *s, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = max_wr, .max_sge = max_sge}};
	struct t_conn_opts o;
	struct t_ep ep_tx, ep_rx;

	memset(s, 0, sizeof(*s));
	t_conn_opts_default(&o);
	s->pd = CHECK_PTR(ibv_alloc_pd(ctx));
	s->srq = CHECK_PTR(ibv_create_srq(s->pd, &sa));
	s->srq_wr = sa.attr.max_wr;
	s->srq_sge = sa.attr.max_sge;
	s->scq = t_cq(ctx, 256);
	s->rcq = t_cq(ctx, 256);
	s->dummy = t_cq(ctx, 16);
	for (int i = 0; i < NQP; i++) {
		s->tx[i] = srq_qp(s->pd, s->scq, s->dummy, NULL, NULL);
		s->rx[i] = srq_qp(s->pd, s->dummy, s->rcq, s->srq, NULL);
		t_local_ep(s->tx[i], &ep_tx);
		t_local_ep(s->rx[i], &ep_rx);
		t_connect(s->tx[i], &ep_rx, &o);
		t_connect(s->rx[i], &ep_tx, &o);
	}
	s->a = t_alloc(BUF_LEN, 0);
	s->b = t_alloc(BUF_LEN, GUARD);
	s->amr = t_reg(s->pd, s->a, BUF_LEN, T_ACCESS_ALL);
	s->bmr = t_reg(s->pd, s->b, BUF_LEN, T_ACCESS_ALL);
}

static void sset_destroy(struct sset *s)
{
	for (int i = 0; i < NQP; i++) {
		CHECK_OK(ibv_destroy_qp(s->tx[i]));
		CHECK_OK(ibv_destroy_qp(s->rx[i]));
	}
	CHECK_OK(ibv_destroy_srq(s->srq));
	CHECK_OK(ibv_destroy_cq(s->scq));
	CHECK_OK(ibv_destroy_cq(s->rcq));
	CHECK_OK(ibv_destroy_cq(s->dummy));
	CHECK_OK(ibv_dereg_mr(s->amr));
	CHECK_OK(ibv_dereg_mr(s->bmr));
	CHECK_OK(ibv_dealloc_pd(s->pd));
	free(s->a);
	free(s->b);
}

/* One receive of len bytes into slot n of b, wr_id 1000 + n. */
static int post_srq(struct sset *s, uint32_t n, uint32_t len, struct ibv_recv_wr **bad)
{
	struct ibv_sge sg = {.addr = (uintptr_t)s->b + (size_t)(n % (BUF_LEN / SLOT)) * SLOT,
	                     .length = len,
	                     .lkey = s->bmr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 1000 + n, .sg_list = &sg, .num_sge = 1};

	return ibv_post_srq_recv(s->srq, &wr, bad);
}

/* SEND of len bytes (pattern seed) from slot 0 of a on sender QP q. */
static void send_from(struct sset *s, int q, uint32_t len, uint32_t seed, uint64_t wr_id)
{
	struct ibv_sge sg = {
	    .addr = (uintptr_t)s->a + (size_t)q * SLOT, .length = len, .lkey = s->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
	                         .sg_list = &sg,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};

	t_fill(s->a + (size_t)q * SLOT, len, seed);
	t_post_send(s->tx[q], &wr);
}

/* ---- create ---------------------------------------------------------------- */

static uint32_t pow2_u32(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static void check_size(struct ibv_pd *pd, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = max_wr, .max_sge = max_sge}};
	uint32_t stride = pow2_u32(16 + 16 * max_sge < 32 ? 32 : 16 + 16 * max_sge);
	uint32_t alloc = 2 * max_wr + 1 > 32767 ? max_wr + 1 : 2 * max_wr + 1;
	struct ibv_srq_attr qa;
	struct ibv_srq *srq;

	t_case("create: max_wr %u, max_sge %u: %u-byte WQEs, %u posted at most", max_wr, max_sge,
	       stride, pow2_u32(max_wr + 1) - 1);
	srq = CHECK_PTR(ibv_create_srq(pd, &sa));
	CHECK_EQ(sa.attr.max_wr, pow2_u32(max_wr + 1) - 1);
	CHECK_EQ(sa.attr.max_sge, (stride - 16) / 16);
	CHECK_OK(ibv_query_srq(srq, &qa));
	CHECK_EQ(qa.max_wr, pow2_u32(alloc) - 1);
	CHECK_EQ(qa.max_sge, (stride - 16) / 16);
	CHECK_EQ(qa.srq_limit, 0);
	CHECK_OK(ibv_destroy_srq(srq));
}

static void test_create(void)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qia;
	struct ibv_qp_attr qa;
	struct ibv_qp_cap cap;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	t_case("create: the device reports SRQs");
	CHECK_OK(ibv_query_device(ctx, &da));
	CHECK_GE(da.max_srq, 1);
	CHECK_EQ(da.max_srq_wr, 32767);
	CHECK_EQ(da.max_srq_sge, 31);
	check_size(pd, 16, 1);
	check_size(pd, 100, 2);
	check_size(pd, 1, 4);
	check_size(pd, 20000, 1); /* too big for mlx5's wait queue */
	check_size(pd, 32767, 32);

	t_case("create: more WRs or SGEs than the device has: EINVAL");
	sa.attr.max_wr = 32768;
	errno = 0;
	CHECK(ibv_create_srq(pd, &sa) == NULL);
	CHECK_EQ(errno, EINVAL);
	sa.attr = (struct ibv_srq_attr){.max_wr = 16, .max_sge = 33};
	errno = 0;
	CHECK(ibv_create_srq(pd, &sa) == NULL);
	CHECK_EQ(errno, EINVAL);

	t_case("create: a QP with an SRQ has no RQ; the SRQ and its PD cannot go while it is used");
	sa.attr = (struct ibv_srq_attr){.max_wr = 16, .max_sge = 1};
	srq = CHECK_PTR(ibv_create_srq(pd, &sa));
	qp = srq_qp(pd, cq, cq, srq, &cap);
	CHECK_EQ(cap.max_recv_wr, 0);
	CHECK_EQ(cap.max_recv_sge, 0);
	CHECK_OK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia));
	CHECK(qia.srq == srq);
	CHECK_EQ(qia.cap.max_recv_wr, 0);
	t_case("create: ibv_post_recv on a QP with an SRQ: ENOMEM (no RQ), as with mlx5");
	{
		struct t_conn_opts o;
		struct ibv_sge sg = {0};
		struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &sg, .num_sge = 1}, *rbad = NULL;

		t_conn_opts_default(&o);
		CHECK_OK(t_qp_to_init(qp, &o));
		CHECK_RET(ibv_post_recv(qp, &rw, &rbad), ENOMEM);
		CHECK(rbad == &rw);
	}
	CHECK_RET(ibv_destroy_srq(srq), EBUSY);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_RET(ibv_dealloc_pd(pd), EBUSY);
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
}

/* ---- format ---------------------------------------------------------------- */

static void test_format(void)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 7, .max_sge = 3}};
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &sa));
	struct mlx5dv_srq dv = {.comp_mask = MLX5DV_SRQ_MASK_SRQN};
	struct mlx5dv_obj obj = {.srq = {.in = srq, .out = &dv}};
	struct ibv_sge sg[3] = {{0x1000, 10, 0x111}, {0x2000, 20, 0x222}, {0x3000, 30, 0x333}};
	struct ibv_recv_wr w2 = {.wr_id = 2, .sg_list = sg, .num_sge = 1};
	struct ibv_recv_wr w1 = {.wr_id = 1, .next = &w2, .sg_list = sg, .num_sge = 3};
	struct ibv_recv_wr *bad = NULL;

	t_case("format: mlx5dv_init_obj's SRQ: 64-byte WQEs, the free list 0 -> 1 -> ... -> 7");
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ));
	CHECK_EQ(dv.stride, 64);
	CHECK_EQ(dv.head, 0);
	CHECK_EQ(dv.tail, 7);
	CHECK_EQ(dv.comp_mask, MLX5DV_SRQ_MASK_SRQN);
	for (int i = 0; i < 7; i++) {
		struct mlx5_wqe_srq_next_seg *n = (void *)((uint8_t *)dv.buf + 64 * i);

		CHECK_EQ(be16toh(n->next_wqe_index), i + 1);
	}
	CHECK_EQ(be32toh(dv.dbrec[0]), 0);

	t_case("format: two receives: data segments after the next segment, INVALID_LKEY ends one");
	CHECK_OK(ibv_post_srq_recv(srq, &w1, &bad));
	CHECK_EQ(be32toh(dv.dbrec[0]), 2);
	for (int w = 0; w < 2; w++) {
		struct mlx5_wqe_data_seg *d = (void *)((uint8_t *)dv.buf + 64 * w + 16);
		int n = w == 0 ? 3 : 1;

		for (int i = 0; i < n; i++) {
			CHECK_EQ(be32toh(d[i].byte_count), sg[i].length);
			CHECK_EQ(be32toh(d[i].lkey), sg[i].lkey);
			CHECK_EQ(be64toh(d[i].addr), sg[i].addr);
		}
		if (n < 3) {
			CHECK_EQ(be32toh(d[n].lkey), MLX5_INVALID_LKEY);
			CHECK_EQ(d[n].byte_count, 0);
		}
	}
	memset(&dv, 0, sizeof(dv));
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ));
	CHECK_EQ(dv.head, 2);
	CHECK_EQ(dv.tail, 7);
	CHECK_EQ(dv.comp_mask, 0);
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_dealloc_pd(pd));
}

/* ---- shared ---------------------------------------------------------------- */

static void test_shared(void)
{
	struct sset s;
	struct ibv_wc wc[8];
	uint8_t want[SLOT];

	sset_create(&s, 64, 1);
	t_case("shared: 8 receives, then SENDs on each of %d QPs: WQEs taken in posting order",
	       NQP);
	for (uint32_t n = 0; n < 8; n++)
		CHECK_OK(post_srq(&s, n, 512, NULL));
	for (int i = 0; i < 8; i++) {
		send_from(&s, i % NQP, 100 + (uint32_t)i, (uint32_t)i, (uint64_t)i);
		t_poll(s.scq, 1, wc, "SEND");
		CHECK_WC(&wc[0], (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_SEND);
		t_poll(s.rcq, 1, wc, "receive from the SRQ");
		CHECK_WC(&wc[0], 1000 + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc[0].qp_num, s.rx[i % NQP]->qp_num);
		CHECK_EQ(wc[0].src_qp, s.tx[i % NQP]->qp_num);
		CHECK_EQ(wc[0].byte_len, 100 + (uint32_t)i);
		t_fill(want, 100 + (uint32_t)i, (uint32_t)i);
		CHECK_MEM(s.b + (size_t)i * SLOT, want, 100 + (uint32_t)i);
		CHECK_BYTES(s.b + (size_t)i * SLOT + 100 + i, GUARD, 64);
	}

	t_case("shared: a small SEND through the SRQ (scatter-to-CQE) is copied into its buffer");
	CHECK_OK(post_srq(&s, 8, 512, NULL));
	send_from(&s, 1, 24, 77, 50);
	t_poll(s.scq, 1, wc, "small SEND");
	t_poll(s.rcq, 1, wc, "small receive");
	CHECK_WC(&wc[0], 1008, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc[0].byte_len, 24);
	t_fill(want, 24, 77);
	CHECK_MEM(s.b + 8 * SLOT, want, 24);
	sset_destroy(&s);
}

/* ---- full ------------------------------------------------------------------ */

static void test_full(void)
{
	struct ibv_sge sg[4] = {{0}};
	struct ibv_recv_wr big = {.wr_id = 9, .sg_list = sg, .num_sge = 4}, *bad = NULL;
	struct ibv_wc wc;
	struct sset s;
	uint32_t n = 0;

	sset_create(&s, 8, 1);
	t_case("full: %u receives fit, the next is ENOMEM and bad_wr names it", s.srq_wr);
	CHECK_EQ(s.srq_wr, 15);
	for (; n < s.srq_wr; n++)
		CHECK_OK(post_srq(&s, n, 256, NULL));
	CHECK_RET(post_srq(&s, n, 256, &bad), ENOMEM);
	CHECK(bad != NULL && bad->wr_id == 1000 + n);
	t_case("full: more SGEs than max_sge: EINVAL");
	bad = NULL;
	CHECK_RET(ibv_post_srq_recv(s.srq, &big, &bad), EINVAL);
	CHECK(bad == &big);

	t_case("full: 600 SENDs through the %u-WQE SRQ, each WQE reposted once its CQE is read",
	       s.srq_wr);
	for (uint32_t i = 0; i < 600; i++) {
		uint8_t want[256];

		send_from(&s, (int)(i % NQP), 200, i, i);
		t_poll(s.scq, 1, &wc, "SEND");
		CHECK_WC_STATUS(&wc, i, IBV_WC_SUCCESS);
		t_poll(s.rcq, 1, &wc, "receive");
		CHECK_WC(&wc, 1000 + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RECV);
		t_fill(want, 200, i);
		CHECK_MEM(s.b + (size_t)(i % (BUF_LEN / SLOT)) * SLOT, want, 200);
		CHECK_OK(post_srq(&s, n++, 256, NULL));
	}
	sset_destroy(&s);
}

/* ---- limit ------------------------------------------------------------------- */

static bool async_event(struct ibv_async_event *ev, int ms)
{
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};

	if (poll(&pfd, 1, ms) != 1)
		return false;
	CHECK_OK(ibv_get_async_event(ctx, ev));
	return true;
}

static void test_limit(void)
{
	struct ibv_srq_attr a = {0};
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct sset s;

	sset_create(&s, 16, 1);
	t_case("limit: modify checks: resizing and a limit beyond the SRQ are EINVAL");
	a.max_wr = 64;
	CHECK_RET(ibv_modify_srq(s.srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	CHECK_OK(ibv_query_srq(s.srq, &a));
	a.srq_limit = a.max_wr + 1;
	CHECK_RET(ibv_modify_srq(s.srq, &a, IBV_SRQ_LIMIT), EINVAL);
	CHECK_RET(ibv_modify_srq(s.srq, &a, 1 << 5), EINVAL);

	t_case("limit: 8 posted, limit 5: no event at 5 left, one at 4, then disarmed");
	for (uint32_t n = 0; n < 8; n++)
		CHECK_OK(post_srq(&s, n, 256, NULL));
	a.srq_limit = 5;
	CHECK_OK(ibv_modify_srq(s.srq, &a, IBV_SRQ_LIMIT));
	CHECK_OK(ibv_query_srq(s.srq, &a));
	CHECK_EQ(a.srq_limit, 5);
	for (int i = 0; i < 3; i++) {
		send_from(&s, 0, 64, 1, (uint64_t)i);
		t_poll(s.scq, 1, &wc, "SEND");
		t_poll(s.rcq, 1, &wc, "receive");
	}
	CHECK(!async_event(&ev, 200));
	send_from(&s, 1, 64, 1, 3);
	t_poll(s.scq, 1, &wc, "SEND");
	t_poll(s.rcq, 1, &wc, "receive");
	CHECK(async_event(&ev, T_WAIT_MS));
	CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	CHECK(ev.element.srq == s.srq);
	ibv_ack_async_event(&ev);
	CHECK_OK(ibv_query_srq(s.srq, &a));
	CHECK_EQ(a.srq_limit, 0);
	send_from(&s, 2, 64, 1, 4);
	t_poll(s.scq, 1, &wc, "SEND");
	t_poll(s.rcq, 1, &wc, "receive");
	CHECK(!async_event(&ev, 200));
	sset_destroy(&s);
}

/* ---- errors ------------------------------------------------------------------ */

static void test_errors(void)
{
	struct ibv_srq_attr a;
	struct ibv_wc wc;
	struct sset s;
	struct t_ep ep_tx, ep_rx;
	struct t_conn_opts o;

	sset_create(&s, 8, 1);
	t_case("errors: a SEND bigger than the SRQ WQE: receive error CQE with the WQE's wr_id");
	CHECK_OK(post_srq(&s, 0, 64, NULL));
	send_from(&s, 0, 200, 1, 1);
	t_poll(s.rcq, 1, &wc, "receive error");
	CHECK_WC_STATUS(&wc, 1000, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(wc.qp_num, s.rx[0]->qp_num);
	t_poll(s.scq, 1, &wc, "SEND error");
	CHECK_WC_STATUS(&wc, 1, IBV_WC_REM_INV_REQ_ERR);

	t_case("errors: a reset drops the QP's receive CQEs and their WQEs return to the SRQ");
	for (uint32_t n = 1; n <= s.srq_wr; n++)
		CHECK_OK(post_srq(&s, n, 256, NULL));
	for (int i = 0; i < 3; i++) {
		send_from(&s, 1, 64, 2, 10 + (uint64_t)i);
		t_poll(s.scq, 1, &wc, "SEND");
	}
	CHECK_OK(t_qp_to(s.rx[1], IBV_QPS_RESET)); /* 3 receive CQEs dropped */
	t_expect_empty(s.rcq, "receives of the reset QP");
	for (uint32_t n = 0; n < 3; n++)
		CHECK_OK(post_srq(&s, 100 + n, 256, NULL));
	CHECK_RET(post_srq(&s, 200, 256, NULL), ENOMEM);

	t_case("errors: a SEND with no WQE posted waits (RNR) until one is");
	t_conn_opts_default(&o);
	t_local_ep(s.tx[1], &ep_tx);
	t_local_ep(s.rx[1], &ep_rx);
	t_reconnect(s.tx[1], &ep_rx, &o);
	t_connect(s.rx[1], &ep_tx, &o);
	CHECK_OK(ibv_query_srq(s.srq, &a));
	/* drain the SRQ: its WQEs (8 .. 15 and the reposted ones) to QP 2 */
	for (uint32_t i = 0; i < s.srq_wr; i++) {
		send_from(&s, 2, 32 + 1, 3, 20 + (uint64_t)i);
		t_poll(s.scq, 1, &wc, "draining SEND");
		t_poll(s.rcq, 1, &wc, "draining receive");
		CHECK_WC_STATUS(&wc, wc.wr_id, IBV_WC_SUCCESS);
	}
	send_from(&s, 3, 40, 4, 99);
	t_expect_empty(s.scq, "a SEND without a receive");
	CHECK_OK(post_srq(&s, 300, 256, NULL));
	t_poll(s.scq, 1, &wc, "the SEND after the receive came");
	CHECK_WC(&wc, 99, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_poll(s.rcq, 1, &wc, "its receive");
	CHECK_WC(&wc, 1300, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.qp_num, s.rx[3]->qp_num);
	sset_destroy(&s);
}

/* ---- last WQE reached ---------------------------------------------------------- */

static void drain_async_events(void)
{
	struct ibv_async_event ev;

	while (async_event(&ev, 0))
		ibv_ack_async_event(&ev);
}

/* The next event must be LAST_WQE_REACHED for qp, and no other follows. */
static void expect_last_wqe(struct ibv_qp *qp)
{
	struct ibv_async_event ev;

	CHECK(async_event(&ev, T_WAIT_MS));
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	CHECK(ev.element.qp == qp);
	ibv_ack_async_event(&ev);
	CHECK(!async_event(&ev, 200));
}

static void last_wqe(void)
{
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct sset s;

	sset_create(&s, 16, 1);
	drain_async_events();
	for (uint32_t n = 0; n < 4; n++)
		CHECK_OK(post_srq(&s, n, 64, NULL));
	t_case("lastwqe: modify_qp to ERR of a QP of the SRQ: LAST_WQE_REACHED naming it, once");
	CHECK_OK(t_qp_to(s.rx[0], IBV_QPS_ERR));
	expect_last_wqe(s.rx[0]);
	t_expect_empty(s.rcq, "an SRQ QP in ERR (the SRQ's WQEs are not flushed)");

	t_case("lastwqe: the SRQ's WQEs stay for its other QPs");
	send_from(&s, 1, 48, 5, 1);
	t_poll(s.scq, 1, &wc, "SEND to another QP of the SRQ");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_poll(s.rcq, 1, &wc, "its receive");
	CHECK_WC(&wc, 1000, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.qp_num, s.rx[1]->qp_num);

	t_case("lastwqe: a receive error takes the QP to ERR: the event comes after its CQE");
	send_from(&s, 2, 200, 6, 2);        /* 200 bytes into a 64-byte WQE */
	CHECK(async_event(&ev, T_WAIT_MS)); /* the responder's invalid request error first */
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_REQ_ERR);
	CHECK(ev.element.qp == s.rx[2]);
	ibv_ack_async_event(&ev);
	CHECK(async_event(&ev, T_WAIT_MS));
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	CHECK(ev.element.qp == s.rx[2]);
	ibv_ack_async_event(&ev);
	CHECK_EQ(ibv_poll_cq(s.rcq, 1, &wc), 1); /* already there: no waiting */
	CHECK_WC_STATUS(&wc, 1001, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(wc.qp_num, s.rx[2]->qp_num);
	t_poll(s.scq, 1, &wc, "the SEND's error");
	CHECK_WC_STATUS(&wc, 2, IBV_WC_REM_INV_REQ_ERR);
	CHECK(!async_event(&ev, 200));

	t_case("lastwqe: a QP without an SRQ enters ERR: no LAST_WQE_REACHED");
	CHECK_OK(t_qp_to(s.tx[3], IBV_QPS_ERR));
	CHECK(!async_event(&ev, 300));

	t_case("lastwqe: after RESET the next ERR raises it again; RESET to ERR too");
	CHECK_OK(t_qp_to(s.rx[0], IBV_QPS_RESET));
	CHECK(!async_event(&ev, 200));
	CHECK_OK(t_qp_to(s.rx[0], IBV_QPS_ERR));
	expect_last_wqe(s.rx[0]);
	sset_destroy(&s);
}

/* On a context of its own: the async events of the other cases name
 * objects that are gone (gnic-emu keeps the events of a destroyed object
 * queued, which the kernel drops). */
static void test_last_wqe(void)
{
	struct ibv_context *saved = ctx;

	ctx = t_open(T_DEVICE);
	last_wqe();
	CHECK_OK(ibv_close_device(ctx));
	ctx = saved;
}

static const struct t_named_case cases[] = {
    {"create", test_create},    {"format", test_format}, {"shared", test_shared},
    {"full", test_full},        {"limit", test_limit},   {"errors", test_errors},
    {"lastwqe", test_last_wqe},
};

int main(int argc, char **argv)
{
	ctx = t_open(T_DEVICE);
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
