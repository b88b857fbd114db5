// SPDX-License-Identifier: MIT
/*
 * Extended CQs: ibv_create_cq_ex and the poll API (ibv_start_poll,
 * ibv_next_poll, ibv_end_poll, ibv_wc_read_*), against rdma-core's mlx5:
 *
 *   create  the attribute checks (EINVAL, and EOPNOTSUPP for the wc_flags
 *           the emulated device cannot fill), read_* set only as asked;
 *   poll    every kind of completion read through ibv_wc_read_* equals what
 *           ibv_poll_cq returns for the same work, errors included;
 *   empty   start_poll on an empty CQ: ENOENT, and the CQ is not left
 *           locked; a comp_mask: EINVAL;
 *   ring    a 4-entry CQ polled hundreds of times around: end_poll hands the
 *           CQEs back to the NIC (else the CQ overruns), next_poll ENOENT;
 *   events  the CQ's ibv_cq works with a completion channel;
 *   overrun a full CQ: IBV_EVENT_CQ_ERR and its QP in ERR; with
 *           IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (ibv_create_cq_ex and
 *           mlx5dv_create_cq), no event, the QP stays in RTS and the NIC
 *           writes on over the unread CQEs (the CQ context's oi bit).
 */
#include <infiniband/mlx5dv.h>
#include <poll.h>

#include "common.h"

#define BUF_LEN 8192
#define GUARD   0xee

static struct ibv_context *ctx;

static struct ibv_cq_ex *cq_ex(struct ibv_context *c, uint32_t cqe, uint64_t wc_flags,
                               struct ibv_comp_channel *ch)
{
	struct ibv_cq_init_attr_ex a = {.cqe = cqe, .channel = ch, .wc_flags = wc_flags};

	return CHECK_PTR(ibv_create_cq_ex(c, &a));
}

/* How xcq_create makes qp[0]'s send CQ. */
enum scq_kind { SCQ_PLAIN, SCQ_IGNORE_OVERRUN, SCQ_DV_IGNORE_OVERRUN };

static struct ibv_cq_ex *send_cq_ex(uint32_t cqe, struct ibv_comp_channel *ch, enum scq_kind k)
{
	struct ibv_cq_init_attr_ex a = {
	    .cqe = cqe, .channel = ch, .wc_flags = IBV_WC_STANDARD_FLAGS};

	if (k == SCQ_PLAIN)
		return CHECK_PTR(ibv_create_cq_ex(ctx, &a));
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	if (k == SCQ_IGNORE_OVERRUN)
		return CHECK_PTR(ibv_create_cq_ex(ctx, &a));
	return CHECK_PTR(mlx5dv_create_cq(ctx, &a, NULL));
}

static void check_refused(struct ibv_cq_init_attr_ex a, int want, const char *what)
{
	t_case("create: %s: %s", what, strerror(want));
	errno = 0;
	CHECK(ibv_create_cq_ex(ctx, &a) == NULL);
	CHECK_EQ(errno, want);
}

static void test_create(void)
{
	struct ibv_cq_init_attr_ex ok = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS};
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *cq;
	static const struct {
		uint64_t flag;
		const char *name;
	} no[] = {
	    {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, "COMPLETION_TIMESTAMP"},
	    {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, "COMPLETION_TIMESTAMP_WALLCLOCK"},
	    {IBV_WC_EX_WITH_CVLAN, "CVLAN"},
	    {IBV_WC_EX_WITH_TM_INFO, "TM_INFO"},
	    {1ull << 30, "an unknown flag"},
	};

	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		a = ok;
		a.wc_flags |= no[i].flag;
		check_refused(a, EOPNOTSUPP, no[i].name);
	}
	a = ok;
	a.cqe = 0;
	check_refused(a, EINVAL, "cqe 0");
	a = ok;
	a.cqe = 1u << 24;
	check_refused(a, EINVAL, "more CQEs than the device has");
	a = ok;
	a.comp_mask = 1u << 5;
	check_refused(a, EINVAL, "an unknown comp_mask bit");
	a = ok;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = 1u << 5;
	check_refused(a, EINVAL, "an unknown creation flag");
	a = ok;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	check_refused(a, EINVAL, "IBV_CQ_INIT_ATTR_MASK_PD without a parent domain");
	a = ok;
	a.comp_vector = 1;
	check_refused(a, EINVAL, "completion vector 1 (the device has one)");

	t_case("create: the standard wc_flags; read_* set for them, not for the others");
	cq = cq_ex(ctx, 16, IBV_WC_STANDARD_FLAGS, NULL);
	CHECK(cq->start_poll && cq->next_poll && cq->end_poll && cq->read_opcode &&
	      cq->read_vendor_err && cq->read_wc_flags && cq->read_byte_len && cq->read_imm_data &&
	      cq->read_qp_num && cq->read_src_qp && cq->read_slid && cq->read_sl &&
	      cq->read_dlid_path_bits);
	CHECK(!cq->read_completion_ts && !cq->read_cvlan && !cq->read_flow_tag &&
	      !cq->read_tm_info && !cq->read_completion_wallclock_ns);
	CHECK_GE(ibv_cq_ex_to_cq(cq)->cqe, 16);
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
	cq = cq_ex(ctx, 16, IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG, NULL);
	CHECK(cq->read_flow_tag != NULL); /* raw Ethernet receives carry one */
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
	cq = cq_ex(ctx, 16, IBV_WC_EX_WITH_BYTE_LEN, NULL);
	CHECK(cq->read_byte_len && !cq->read_imm_data && !cq->read_qp_num && !cq->read_src_qp);
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));

	t_case("create: mlx5dv_create_cq: 64-byte CQEs; 128: EOPNOTSUPP; mlx5's EINVAL cases");
	{
		struct mlx5dv_cq_init_attr m = {0};
		static const struct {
			uint64_t mask;
			uint32_t flags;
			uint16_t size;
			int want;
		} dv[] = {
		    {MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 0, 128, EOPNOTSUPP},
		    {MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 0, 32, EINVAL},
		    {MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, 0, 0, EINVAL},
		    {MLX5DV_CQ_INIT_ATTR_MASK_FLAGS, MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD, 0, EINVAL},
		    {1u << 7, 0, 0, EINVAL},
		};

		a = ok;
		cq = CHECK_PTR(mlx5dv_create_cq(ctx, &a, NULL));
		CHECK(cq->read_byte_len != NULL);
		CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
		m.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
		m.cqe_size = 64;
		cq = CHECK_PTR(mlx5dv_create_cq(ctx, &a, &m));
		CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
		for (size_t i = 0; i < sizeof(dv) / sizeof(dv[0]); i++) {
			m = (struct mlx5dv_cq_init_attr){
			    .comp_mask = dv[i].mask, .flags = dv[i].flags, .cqe_size = dv[i].size};
			errno = 0;
			CHECK(mlx5dv_create_cq(ctx, &a, &m) == NULL);
			CHECK_EQ(errno, dv[i].want);
		}
		a.wc_flags |= IBV_WC_EX_WITH_CVLAN;
		errno = 0;
		CHECK(mlx5dv_create_cq(ctx, &a, NULL) == NULL);
		CHECK_EQ(errno, EOPNOTSUPP);
	}

	t_case("create: SINGLE_THREADED and IGNORE_OVERRUN are accepted");
	a = ok;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	cq = CHECK_PTR(ibv_create_cq_ex(ctx, &a));
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
}

/* ---- a pair of QPs on extended CQs -------------------------------------------- */

struct xcq {
	struct t_pair p;
	struct ibv_cq_ex *scq, *rcq; /* qp[0]'s send CQ, qp[1]'s receive CQ */
	uint8_t *a, *b;
	struct ibv_mr *amr, *bmr;
};

static void xcq_create_kind(struct xcq *x, uint32_t cqe, struct ibv_comp_channel *ch,
                            enum scq_kind kind)
{
	struct t_pair *p = &x->p;
	struct t_qp_caps caps;

	memset(x, 0, sizeof(*x));
	t_qp_caps_default(&caps);
	t_conn_opts_default(&p->opts);
	p->ctx = ctx;
	p->pd = CHECK_PTR(ibv_alloc_pd(ctx));
	x->scq = send_cq_ex(cqe, ch, kind);
	x->rcq = cq_ex(ctx, cqe, IBV_WC_STANDARD_FLAGS, NULL);
	p->scq[0] = ibv_cq_ex_to_cq(x->scq);
	p->rcq[1] = ibv_cq_ex_to_cq(x->rcq);
	p->rcq[0] = t_cq(ctx, 64);
	p->scq[1] = t_cq(ctx, 64);
	for (int i = 0; i < 2; i++) {
		p->qp[i] = t_qp(p->pd, p->scq[i], p->rcq[i], &caps, &p->cap[i]);
		t_local_ep(p->qp[i], &p->ep[i]);
	}
	t_connect(p->qp[0], &p->ep[1], &p->opts);
	t_connect(p->qp[1], &p->ep[0], &p->opts);
	x->a = t_alloc(BUF_LEN, 0);
	x->b = t_alloc(BUF_LEN, GUARD);
	x->amr = t_reg(p->pd, x->a, BUF_LEN, T_ACCESS_ALL);
	x->bmr = t_reg(p->pd, x->b, BUF_LEN, T_ACCESS_ALL);
}

static void xcq_create(struct xcq *x, uint32_t cqe, struct ibv_comp_channel *ch)
{
	xcq_create_kind(x, cqe, ch, SCQ_PLAIN);
}

static void xcq_destroy(struct xcq *x)
{
	CHECK_OK(ibv_dereg_mr(x->amr));
	CHECK_OK(ibv_dereg_mr(x->bmr));
	t_pair_destroy(&x->p);
	free(x->a);
	free(x->b);
}

/* The current completion as an ibv_wc, through the read_* calls. */
static void read_wc(struct ibv_cq_ex *cq, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cq->wr_id;
	wc->status = cq->status;
	wc->opcode = ibv_wc_read_opcode(cq);
	wc->vendor_err = ibv_wc_read_vendor_err(cq);
	wc->byte_len = ibv_wc_read_byte_len(cq);
	wc->imm_data = ibv_wc_read_imm_data(cq);
	wc->qp_num = ibv_wc_read_qp_num(cq);
	wc->src_qp = ibv_wc_read_src_qp(cq);
	wc->wc_flags = ibv_wc_read_wc_flags(cq);
	wc->slid = (uint16_t)ibv_wc_read_slid(cq);
	wc->sl = ibv_wc_read_sl(cq);
	wc->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
}

/* n completions through start/next/end, within T_WAIT_MS. */
static void poll_ex(struct ibv_cq_ex *cq, int n, struct ibv_wc *wc, const char *what)
{
	struct ibv_poll_cq_attr attr = {0};
	uint64_t end = t_now_ms() + T_WAIT_MS;
	int got = 0;

	while (got < n) {
		int ret = ibv_start_poll(cq, &attr);

		if (ret == ENOENT) {
			if (t_now_ms() > end)
				T_FAIL("%s: %d of %d completions within %d ms", what, got, n,
				       T_WAIT_MS);
			t_sleep_ms(1);
			continue;
		}
		CHECK_OK(ret);
		do
			read_wc(cq, &wc[got++]);
		while (got < n && (ret = ibv_next_poll(cq)) == 0);
		CHECK(got == n || ret == ENOENT);
		ibv_end_poll(cq);
	}
}

static void wc_same(const struct ibv_wc *ex, const struct ibv_wc *old)
{
	CHECK_EQ(ex->wr_id, old->wr_id);
	CHECK_EQ(ex->status, old->status);
	if (old->status != IBV_WC_SUCCESS) {
		CHECK_EQ(ex->vendor_err, old->vendor_err);
		return; /* the rest is undefined for an error */
	}
	CHECK_EQ(ex->opcode, old->opcode);
	CHECK_EQ(ex->byte_len, old->byte_len);
	CHECK_EQ(ex->qp_num, old->qp_num);
	CHECK_EQ(ex->src_qp, old->src_qp);
	CHECK_EQ(ex->wc_flags, old->wc_flags);
	if (old->wc_flags & IBV_WC_WITH_IMM)
		CHECK_EQ(ex->imm_data, old->imm_data);
	CHECK_EQ(ex->slid, old->slid);
	CHECK_EQ(ex->sl, old->sl);
	CHECK_EQ(ex->dlid_path_bits, old->dlid_path_bits);
}

/* SEND_IMM 100 B, SEND 20 B (scatter-to-CQE), WRITE_IMM 64 B, READ 48 B,
 * FETCH_AND_ADD; with bad, a WRITE with a wrong rkey last. */
static int post_round(struct xcq *x, uint64_t base, bool bad)
{
	struct ibv_sge s[5] = {
	    {(uintptr_t)x->a, 100, x->amr->lkey},      {(uintptr_t)x->a + 128, 20, x->amr->lkey},
	    {(uintptr_t)x->a + 256, 64, x->amr->lkey}, {(uintptr_t)x->a + 512, 48, x->amr->lkey},
	    {(uintptr_t)x->a + 1024, 8, x->amr->lkey},
	};
	struct ibv_send_wr wr[6];
	int n = bad ? 6 : 5;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 3; i++)
		t_post_recv_buf(x->p.qp[1], base + 10 + (uint64_t)i, x->b + 2048 + 512 * i, 512,
		                x->bmr->lkey);
	wr[0].opcode = IBV_WR_SEND_WITH_IMM;
	wr[0].imm_data = htobe32(0xa1b2c3d4);
	wr[1].opcode = IBV_WR_SEND;
	wr[2].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[2].imm_data = htobe32(0x01020304);
	wr[2].wr.rdma.remote_addr = (uintptr_t)x->b;
	wr[2].wr.rdma.rkey = x->bmr->rkey;
	wr[3].opcode = IBV_WR_RDMA_READ;
	wr[3].wr.rdma.remote_addr = (uintptr_t)x->b + 512;
	wr[3].wr.rdma.rkey = x->bmr->rkey;
	wr[4].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[4].wr.atomic.remote_addr = (uintptr_t)x->b + 1024;
	wr[4].wr.atomic.rkey = x->bmr->rkey;
	wr[4].wr.atomic.compare_add = 3;
	wr[5].opcode = IBV_WR_RDMA_WRITE;
	wr[5].wr.rdma.remote_addr = (uintptr_t)x->b;
	wr[5].wr.rdma.rkey = x->bmr->rkey ^ 0x80;
	for (int i = 0; i < n; i++) {
		wr[i].wr_id = base + (uint64_t)i;
		wr[i].sg_list = &s[i < 5 ? i : 0];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	t_post_send(x->p.qp[0], wr);
	return n;
}

static void test_poll(void)
{
	struct ibv_wc ex_s[6], ex_r[3], old_s[6], old_r[3];
	struct xcq x;
	int n;

	xcq_create(&x, 64, NULL);
	t_fill(x.a, 2048, 1);
	t_case("poll: SEND_IMM, SEND, WRITE_IMM, READ, FETCH_ADD through ibv_wc_read_*");
	n = post_round(&x, 100, false);
	poll_ex(x.scq, n, ex_s, "send completions (extended)");
	poll_ex(x.rcq, 3, ex_r, "receive completions (extended)");
	for (int i = 0; i < n; i++)
		CHECK_WC_STATUS(&ex_s[i], 100 + (uint64_t)i, IBV_WC_SUCCESS);
	CHECK_EQ(ex_s[0].opcode, IBV_WC_SEND);
	CHECK_EQ(ex_s[2].opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(ex_s[3].opcode, IBV_WC_RDMA_READ);
	CHECK_EQ(ex_s[3].byte_len, 48);
	CHECK_EQ(ex_s[4].opcode, IBV_WC_FETCH_ADD);
	CHECK_EQ(ex_s[4].qp_num, x.p.qp[0]->qp_num);
	CHECK_WC(&ex_r[0], 110, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(ex_r[0].byte_len, 100);
	CHECK_EQ(ex_r[0].wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	CHECK_EQ(ex_r[0].imm_data, htobe32(0xa1b2c3d4));
	CHECK_EQ(ex_r[0].qp_num, x.p.qp[1]->qp_num);
	CHECK_EQ(ex_r[0].src_qp, x.p.qp[0]->qp_num);
	CHECK_WC(&ex_r[1], 111, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(ex_r[1].byte_len, 20);
	CHECK_EQ(ex_r[1].wc_flags & IBV_WC_WITH_IMM, 0);
	CHECK_MEM(x.b + 2048 + 512, x.a + 128, 20); /* scatter-to-CQE: copied out */
	CHECK_WC(&ex_r[2], 112, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(ex_r[2].imm_data, htobe32(0x01020304));

	t_case("poll: the same work through ibv_poll_cq gives the same completions");
	n = post_round(&x, 100, false);
	t_poll(x.p.scq[0], n, old_s, "send completions (ibv_poll_cq)");
	t_poll(x.p.rcq[1], 3, old_r, "receive completions (ibv_poll_cq)");
	for (int i = 0; i < n; i++)
		wc_same(&ex_s[i], &old_s[i]);
	for (int i = 0; i < 3; i++)
		wc_same(&ex_r[i], &old_r[i]);

	t_case("poll: an error completion (bad rkey) and the flush after it");
	n = post_round(&x, 200, true);
	poll_ex(x.scq, n, ex_s, "send completions with an error");
	for (int i = 0; i < 5; i++)
		CHECK_WC_STATUS(&ex_s[i], 200 + (uint64_t)i, IBV_WC_SUCCESS);
	CHECK_WC_STATUS(&ex_s[5], 205, IBV_WC_REM_ACCESS_ERR);
	poll_ex(x.rcq, 3, ex_r, "receives of the error round");
	/* the responder QP saw a bad rkey too: its posted receives flush */
	t_post_recv_buf(x.p.qp[1], 300, x.b, 64, x.bmr->lkey);
	poll_ex(x.rcq, 1, ex_r, "a receive flushed");
	CHECK_WC_STATUS(&ex_r[0], 300, IBV_WC_WR_FLUSH_ERR);
	xcq_destroy(&x);
}

static void test_empty(void)
{
	struct ibv_cq_ex *cq = cq_ex(ctx, 8, IBV_WC_STANDARD_FLAGS, NULL);
	struct ibv_poll_cq_attr attr = {0};
	struct ibv_wc wc;

	t_case("empty: start_poll returns ENOENT and leaves the CQ unlocked");
	CHECK_RET(ibv_start_poll(cq, &attr), ENOENT);
	CHECK_RET(ibv_start_poll(cq, &attr), ENOENT);
	CHECK_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 1, &wc), 0);
	t_case("empty: a poll attribute comp_mask: EINVAL");
	attr.comp_mask = 1;
	CHECK_RET(ibv_start_poll(cq, &attr), EINVAL);
	CHECK_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 1, &wc), 0);
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
}

static void test_ring(void)
{
	struct ibv_poll_cq_attr attr = {0};
	struct xcq x;

	xcq_create(&x, 4, NULL);
	t_case("ring: 300 WRITEs one by one through a CQ of %d entries", x.p.scq[0]->cqe);
	CHECK_EQ(x.p.scq[0]->cqe, 7); /* mlx5 rounds cqe + 1 up to a power of two */
	for (uint64_t i = 0; i < 300; i++) {
		struct ibv_sge s = {(uintptr_t)x.a, 64, x.amr->lkey};
		struct ibv_send_wr wr = {.wr_id = i,
		                         .sg_list = &s,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_RDMA_WRITE,
		                         .send_flags = IBV_SEND_SIGNALED};
		uint64_t end = t_now_ms() + T_WAIT_MS;
		int ret;

		wr.wr.rdma.remote_addr = (uintptr_t)x.b;
		wr.wr.rdma.rkey = x.bmr->rkey;
		t_post_send(x.p.qp[0], &wr);
		while ((ret = ibv_start_poll(x.scq, &attr)) == ENOENT) {
			if (t_now_ms() > end)
				T_FAIL("WRITE %llu: no completion within %d ms",
				       (unsigned long long)i, T_WAIT_MS);
		}
		CHECK_OK(ret);
		CHECK_EQ(x.scq->wr_id, i);
		CHECK_EQ(x.scq->status, IBV_WC_SUCCESS);
		CHECK_EQ(ibv_wc_read_opcode(x.scq), IBV_WC_RDMA_WRITE);
		CHECK_RET(ibv_next_poll(x.scq), ENOENT);
		ibv_end_poll(x.scq);
	}
	CHECK_EQ(t_qp_state(x.p.qp[0]), IBV_QPS_RTS); /* no overrun took the QP to ERR */
	xcq_destroy(&x);
}

static void test_events(void)
{
	struct ibv_comp_channel *ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	struct ibv_sge s;
	struct ibv_send_wr wr = {.wr_id = 9,
	                         .sg_list = &s,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_WRITE,
	                         .send_flags = IBV_SEND_SIGNALED};
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct ibv_cq *got = NULL;
	struct ibv_wc wc;
	struct xcq x;
	void *cctx;

	xcq_create(&x, 16, ch);
	t_case("events: a completion on an extended CQ wakes its channel, which names its ibv_cq");
	CHECK(ibv_cq_ex_to_cq(x.scq)->channel == ch);
	CHECK_OK(ibv_req_notify_cq(ibv_cq_ex_to_cq(x.scq), 0));
	s = (struct ibv_sge){(uintptr_t)x.a, 32, x.amr->lkey};
	wr.wr.rdma.remote_addr = (uintptr_t)x.b;
	wr.wr.rdma.rkey = x.bmr->rkey;
	t_post_send(x.p.qp[0], &wr);
	CHECK_EQ(poll(&pfd, 1, T_WAIT_MS), 1);
	CHECK_OK(ibv_get_cq_event(ch, &got, &cctx));
	CHECK(got == ibv_cq_ex_to_cq(x.scq));
	ibv_ack_cq_events(got, 1);
	poll_ex(x.scq, 1, &wc, "the WRITE that raised the event");
	CHECK_WC(&wc, 9, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_RET(ibv_destroy_comp_channel(ch), EBUSY);
	xcq_destroy(&x);
	CHECK_OK(ibv_destroy_comp_channel(ch));
}

/* ---- overrun ----------------------------------------------------------------- */

/* The next async event within ms (false: none came). */
static bool async_event(struct ibv_async_event *ev, int ms)
{
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};

	if (poll(&pfd, 1, ms) != 1)
		return false;
	CHECK_OK(ibv_get_async_event(ctx, ev));
	return true;
}

static void drain_async_events(void)
{
	struct ibv_async_event ev;

	while (async_event(&ev, 0))
		ibv_ack_async_event(&ev);
}

#define OVR_WRITES 6 /* through a CQ of 2 CQEs, none polled */

/* OVR_WRITES signaled 64-byte WRITEs, write i of byte i + 1 to b + 64 * i;
 * sq_idx[i]: write i's WQE index (the SQ producer counter before it). */
static void overrun_post_range(struct xcq *x, uint16_t sq_idx[OVR_WRITES], int from, int to)
{
	struct mlx5dv_qp dq;
	struct mlx5dv_obj o = {.qp = {.in = x->p.qp[0], .out = &dq}};

	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_QP));
	for (int i = from; i < to; i++) {
		struct ibv_sge s = {(uintptr_t)x->a + 64 * i, 64, x->amr->lkey};
		struct ibv_send_wr wr = {.wr_id = 100 + i,
		                         .sg_list = &s,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_RDMA_WRITE,
		                         .send_flags = IBV_SEND_SIGNALED};

		memset(x->a + 64 * i, i + 1, 64);
		wr.wr.rdma.remote_addr = (uintptr_t)x->b + 64 * i;
		wr.wr.rdma.rkey = x->bmr->rkey;
		sq_idx[i] = (uint16_t)be32toh(dq.dbrec[MLX5_SND_DBR]);
		t_post_send(x->p.qp[0], &wr);
	}
}

static void overrun_post(struct xcq *x, uint16_t sq_idx[OVR_WRITES])
{
	overrun_post_range(x, sq_idx, 0, OVR_WRITES);
}

static void test_overrun_error(void)
{
	struct ibv_async_event ev;
	uint16_t idx[OVR_WRITES];
	struct xcq x;
	struct ibv_wc wc[2];

	drain_async_events();
	xcq_create(&x, 1, NULL);
	t_case("overrun: %d WRITEs through a CQ of %d CQEs, none polled: IBV_EVENT_CQ_ERR",
	       OVR_WRITES, x.p.scq[0]->cqe + 1);
	CHECK_EQ(x.p.scq[0]->cqe, 1);
	overrun_post(&x, idx);
	CHECK(async_event(&ev, T_WAIT_MS));
	CHECK_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
	CHECK(ev.element.cq == x.p.scq[0]);
	ibv_ack_async_event(&ev);
	t_case("overrun: the QP that found the CQ full is in ERR; the CQEs written stay");
	CHECK_EQ(t_qp_state(x.p.qp[0]), IBV_QPS_ERR);
	t_poll(x.p.scq[0], 2, wc, "the two CQEs before the overrun");
	CHECK_WC(&wc[0], 100, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_WC(&wc[1], 101, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	t_expect_empty(x.p.scq[0], "a CQ in error");
	CHECK(!async_event(&ev, 100)); /* one event per CQ error */
	xcq_destroy(&x);
}

/* Wait until slot's op_own holds a requester CQE with this owner bit. Only
 * op_own is read (acquire), as the NIC may be writing the slot meanwhile. */
static void overrun_wait_owner(struct mlx5dv_cq *dcq, uint32_t slot, uint8_t owner)
{
	const struct mlx5_cqe64 *cqe = (const void *)((char *)dcq->buf + 64 * slot);
	uint64_t end = t_now_ms() + T_WAIT_MS;
	uint8_t op_own;

	while (op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE),
	       (op_own >> 4) != MLX5_CQE_REQ || (op_own & 1) != owner) {
		if (t_now_ms() > end)
			T_FAIL("slot %u: no CQE with owner %u within %d ms (op_own 0x%02x)", slot,
			       owner, T_WAIT_MS, op_own);
		t_sleep_ms(1);
	}
}

static void overrun_ignored(enum scq_kind kind, const char *how)
{
	struct ibv_async_event ev;
	uint16_t idx[OVR_WRITES];
	struct mlx5dv_cq dcq;
	struct mlx5dv_obj o;
	struct ibv_wc wc[2];
	struct xcq x;

	drain_async_events();
	xcq_create_kind(&x, 1, NULL, kind);
	o.cq.in = x.p.scq[0];
	o.cq.out = &dcq;
	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ));
	CHECK_EQ(dcq.cqe_cnt, 2);
	t_case("overrun: %s IGNORE_OVERRUN: %d WRITEs, no CQE polled: the last two CQEs "
	       "overwrote the ring, no event, the QP in RTS",
	       how, OVR_WRITES);
	/* CQE n lands in slot n % 2 with owner bit n / 2 % 2: CQEs 0..3 end
	 * with owner 1 in slot 1; CQEs 4 and 5 then make both slots owner 0,
	 * and nothing is written after them (what is read is then stable) */
	overrun_post_range(&x, idx, 0, 4);
	overrun_wait_owner(&dcq, 1, 1);
	overrun_post_range(&x, idx, 4, OVR_WRITES);
	overrun_wait_owner(&dcq, 0, 0);
	overrun_wait_owner(&dcq, 1, 0);
	CHECK_EQ(be16toh(((const struct mlx5_cqe64 *)dcq.buf)[0].wqe_counter), idx[4]);
	CHECK_EQ(be16toh(((const struct mlx5_cqe64 *)dcq.buf)[1].wqe_counter), idx[5]);
	for (int i = 0; i < OVR_WRITES; i++)
		CHECK_BYTES(x.b + 64 * i, i + 1, 64);
	CHECK(!async_event(&ev, 100));
	CHECK_EQ(t_qp_state(x.p.qp[0]), IBV_QPS_RTS);
	/* slot 0 holds CQE 4, slot 1 CQE 5: the owner bits of passes 0 and 2
	 * are equal, so software at consumer index 0 reads them as its next two */
	t_poll(x.p.scq[0], 2, wc, "the two CQEs left in the ring");
	CHECK_WC(&wc[0], 100 + OVR_WRITES - 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_WC(&wc[1], 100 + OVR_WRITES - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	xcq_destroy(&x);
}

/* Each on a context of its own: the async events of the other cases name
 * objects that are gone (gnic-emu keeps the events of a destroyed object
 * queued, which the kernel drops). */
static void on_own_context(void (*fn)(void))
{
	struct ibv_context *saved = ctx;

	ctx = t_open(T_DEVICE);
	fn();
	CHECK_OK(ibv_close_device(ctx));
	ctx = saved;
}

static void overrun_ignored_ex(void)
{
	overrun_ignored(SCQ_IGNORE_OVERRUN, "ibv_create_cq_ex");
}

static void overrun_ignored_dv(void)
{
	overrun_ignored(SCQ_DV_IGNORE_OVERRUN, "mlx5dv_create_cq");
}

static void test_overrun(void)
{
	on_own_context(test_overrun_error);
	on_own_context(overrun_ignored_ex);
	on_own_context(overrun_ignored_dv);
}

/* The QP is in ERR before IBV_EVENT_CQ_ERR is raised, not after: with every
 * thread on one CPU the woken reader used to run before the engine had set
 * the state (about 6 runs in 100). */
static void test_overrun_order(void)
{
	t_pin_one_cpu();
	for (int i = 0; i < 40; i++)
		on_own_context(test_overrun_error);
	t_unpin();
}

static const struct t_named_case cases[] = {
    {"create", test_create},
    {"poll", test_poll},
    {"empty", test_empty},
    {"ring", test_ring},
    {"events", test_events},
    {"overrun", test_overrun},
    {"overrun_order", test_overrun_order},
};

int main(int argc, char **argv)
{
	ctx = t_open(T_DEVICE);
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
