// SPDX-License-Identifier: MIT
/*
 * Receive-only RC QPs (max_send_wr 0), as mlx5 makes them: no SQ (the
 * kernel's no_sq), caps reported with max_send_wr 0, and every send it is
 * asked to post refused as rdma-core's mlx5 refuses it: the opcode is
 * checked first (EINVAL), then the SQ is full (ENOMEM, *bad_wr the first
 * WR), before SGEs, flags or inline data are looked at. The QP receives
 * SENDs as any other, before and after such refusals.
 */
#include "common.h"

#define MSG  4096
#define NMSG 8

struct ro {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2]; /* [0] sends, [1] receives only */
	struct ibv_qp_cap cap[2];
	struct ibv_mr *mr[2];
	uint8_t *buf[2];
};

static void ro_create(struct ro *r)
{
	struct t_qp_caps caps[2];
	struct t_conn_opts o;
	struct t_ep ep[2];

	memset(r, 0, sizeof(*r));
	r->ctx = t_open(T_DEVICE);
	r->pd = CHECK_PTR(ibv_alloc_pd(r->ctx));
	t_qp_caps_default(&caps[0]);
	caps[1] = caps[0];
	caps[1].send_wr = 0;
	caps[1].send_sge = 0;
	caps[1].inline_data = 0;
	caps[1].recv_wr = 2 * NMSG;
	t_conn_opts_default(&o);
	for (int i = 0; i < 2; i++) {
		r->cq[i] = t_cq(r->ctx, 256);
		r->qp[i] = t_qp(r->pd, r->cq[i], r->cq[i], &caps[i], &r->cap[i]);
		t_local_ep(r->qp[i], &ep[i]);
		r->buf[i] = t_alloc(NMSG * MSG, 0);
		r->mr[i] = t_reg(r->pd, r->buf[i], NMSG * MSG, T_ACCESS_ALL);
	}
	t_connect(r->qp[0], &ep[1], &o);
	t_connect(r->qp[1], &ep[0], &o);
}

static void ro_destroy(struct ro *r)
{
	for (int i = 0; i < 2; i++) {
		CHECK_OK(ibv_destroy_qp(r->qp[i]));
		CHECK_OK(ibv_dereg_mr(r->mr[i]));
		free(r->buf[i]);
		CHECK_OK(ibv_destroy_cq(r->cq[i]));
	}
	CHECK_OK(ibv_dealloc_pd(r->pd));
	CHECK_OK(ibv_close_device(r->ctx));
}

/* n SENDs of different lengths from qp[0] into qp[1]'s receives; every
 * byte arrives, every completion says how many. */
static void ro_exchange(struct ro *r, int n, uint32_t seed)
{
	struct ibv_wc wc[NMSG];

	for (int i = 0; i < n; i++)
		t_post_recv_buf(r->qp[1], 100 + i, r->buf[1] + i * MSG, MSG, r->mr[1]->lkey);
	t_fill(r->buf[0], NMSG * MSG, seed);
	memset(r->buf[1], 0, NMSG * MSG);
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {(uintptr_t)(r->buf[0] + i * MSG), 1u + (uint32_t)i * 517,
		                      r->mr[0]->lkey};
		struct ibv_send_wr wr = {.wr_id = (uint64_t)i,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED,
		                         .imm_data = htobe32(i)};

		t_post_send(r->qp[0], &wr);
	}
	t_poll(r->cq[0], n, wc, "sender completions");
	for (int i = 0; i < n; i++)
		CHECK_WC(&wc[i], (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_poll(r->cq[1], n, wc, "receive-only QP's receives");
	for (int i = 0; i < n; i++) {
		uint32_t len = 1u + (uint32_t)i * 517;

		CHECK_WC(&wc[i], 100u + i, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc[i].byte_len, len);
		CHECK_EQ(!!(wc[i].wc_flags & IBV_WC_WITH_IMM), i & 1);
		CHECK_MEM(r->buf[1] + i * MSG, r->buf[0] + i * MSG, len);
		CHECK_BYTES(r->buf[1] + i * MSG + len, 0, MSG - len);
	}
}

static void case_caps(void)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ro r;

	ro_create(&r);
	CHECK_EQ(r.cap[1].max_send_wr, 0);
	CHECK_GE(r.cap[1].max_recv_wr, 2 * NMSG);
	CHECK_OK(ibv_query_qp(r.qp[1], &attr, IBV_QP_CAP, &init));
	CHECK_EQ(init.cap.max_send_wr, 0);
	CHECK_EQ(init.cap.max_send_sge, 0);
	CHECK_EQ(init.cap.max_inline_data, 0);
	CHECK_EQ(attr.cap.max_send_wr, 0);
	ro_destroy(&r);
}

static void case_receives(void)
{
	struct ro r;

	ro_create(&r);
	ro_exchange(&r, NMSG, 1);
	ro_exchange(&r, NMSG, 2); /* the RQ wraps: 2 x NMSG receives through it */
	ro_destroy(&r);
}

/* ibv_post_send on it: err, and *bad_wr names wr. */
static void expect_refused(struct ibv_qp *qp, struct ibv_send_wr *wr, int err)
{
	struct ibv_send_wr *bad = NULL;

	CHECK_EQ(ibv_post_send(qp, wr, &bad), err);
	CHECK(bad == wr);
}

static void case_post_send(void)
{
	uint8_t inl[16] = {0};
	struct ro r;

	ro_create(&r);
	{
		struct ibv_sge sge = {(uintptr_t)r.buf[1], 64, r.mr[1]->lkey};
		struct ibv_send_wr wr = {.wr_id = 1,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED};
		struct ibv_send_wr second = wr;

		t_case("SEND, one SGE");
		expect_refused(r.qp[1], &wr, ENOMEM);
		t_case("SEND, no SGE");
		wr.num_sge = 0;
		expect_refused(r.qp[1], &wr, ENOMEM);
		t_case("a chain of two");
		wr.num_sge = 1;
		wr.next = &second;
		expect_refused(r.qp[1], &wr, ENOMEM);
		wr.next = NULL;
		t_case("RDMA WRITE, inline");
		sge = (struct ibv_sge){(uintptr_t)inl, sizeof(inl), 0};
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		wr.wr.rdma.remote_addr = (uintptr_t)r.buf[0];
		wr.wr.rdma.rkey = r.mr[0]->rkey;
		expect_refused(r.qp[1], &wr, ENOMEM);
		t_case("more SGEs than any QP has: still the full SQ first");
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.num_sge = 1000;
		expect_refused(r.qp[1], &wr, ENOMEM);
		t_case("an opcode mlx5 does not know: EINVAL before the SQ");
		wr.num_sge = 1;
		wr.opcode = (enum ibv_wr_opcode)77;
		expect_refused(r.qp[1], &wr, EINVAL);
	}
	t_case("nothing was sent, and the QP still receives");
	t_expect_empty(r.cq[1], "the receive-only QP's CQ");
	t_expect_empty(r.cq[0], "the peer's CQ");
	ro_exchange(&r, NMSG, 3);
	ro_destroy(&r);
}

/* The same QP made by ibv_create_qp_ex with send_ops_flags: ibv_wr_*
 * accumulate the error and wr_complete returns it. */
static void case_wr_api(void)
{
	struct ibv_context *ctx = t_open(T_DEVICE);
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct ibv_qp_init_attr_ex a = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .cap = {.max_send_wr = 0, .max_recv_wr = 4, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC,
	    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	    .pd = pd,
	    .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct ibv_qp *qp = CHECK_PTR(ibv_create_qp_ex(ctx, &a));
	struct ibv_qp_ex *qpx = CHECK_PTR(ibv_qp_to_qp_ex(qp));
	struct t_conn_opts o;
	struct t_ep ep;
	uint64_t word = 0;

	CHECK_EQ(a.cap.max_send_wr, 0);
	t_conn_opts_default(&o);
	t_local_ep(qp, &ep);
	t_connect(qp, &ep, &o); /* to itself: the post must fail before anything moves */
	ibv_wr_start(qpx);
	qpx->wr_id = 5;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 0, (uintptr_t)&word, sizeof(word));
	CHECK_EQ(ibv_wr_complete(qpx), ENOMEM);
	t_expect_empty(cq, "the receive-only QP's CQ");
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"caps", case_caps},
	    {"receives", case_receives},
	    {"post_send", case_post_send},
	    {"wr_api", case_wr_api},
	};

	T_RUN_CASES(cases, argc, argv);
	return 0;
}
