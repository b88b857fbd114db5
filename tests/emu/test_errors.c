// SPDX-License-Identifier: MIT
/*
 * Error completions, one case per syndrome the emulator promises, each on a
 * fresh pair of QPs: local protection, remote access (bad rkey, out of
 * bounds, missing access right), remote invalid request / local length,
 * RNR and transport retries exceeded. After an error: the failing WR's
 * status, WR_FLUSH_ERR for every later WR (signaled or not) and for posted
 * receives, QP state ERR, target memory untouched, and a reconnect that
 * works again. Also an RNR wait that ends in success.
 *
 * Run one case: test_errors <case name>.
 */
#include <endian.h>

#include "common.h"

#define FX_LEN  65536
#define WIN_OFF 4096 /* B's MR covers b[WIN_OFF, WIN_OFF + WIN_LEN) */
#define WIN_LEN 8192
#define GUARD   0xee

static struct ibv_context *ctx;

struct fx {
	struct t_pair p;
	uint8_t *a, *b;
	struct ibv_mr *amr, *bmr;
	struct ibv_mr *okmr; /* all of B, every right: for checks after recovery */
	uint64_t win;        /* address of B's MR */
	uint32_t rkey;       /* B's MR */
};

static void fx_setup_opts(struct fx *f, int b_access, const struct t_conn_opts *opts)
{
	t_pair_create(&f->p, ctx, NULL, opts, 0);
	f->a = t_alloc(FX_LEN, 0);
	t_fill(f->a, FX_LEN, 5);
	f->b = t_alloc(FX_LEN, GUARD);
	f->amr = t_reg(f->p.pd, f->a, FX_LEN, T_ACCESS_ALL);
	f->bmr = t_reg(f->p.pd, f->b + WIN_OFF, WIN_LEN, b_access);
	f->okmr = t_reg(f->p.pd, f->b, FX_LEN, T_ACCESS_ALL);
	f->win = (uintptr_t)f->b + WIN_OFF;
	f->rkey = f->bmr->rkey;
}

static void fx_setup(struct fx *f, int b_access)
{
	fx_setup_opts(f, b_access, NULL);
}

static void fx_teardown(struct fx *f)
{
	CHECK_OK(ibv_dereg_mr(f->amr));
	CHECK_OK(ibv_dereg_mr(f->bmr));
	CHECK_OK(ibv_dereg_mr(f->okmr));
	t_pair_destroy(&f->p);
	free(f->a);
	free(f->b);
}

/* A key that was valid once: its MR has been deregistered. */
static uint32_t stale_key(struct ibv_pd *pd)
{
	static uint8_t buf[64];
	struct ibv_mr *mr = t_reg(pd, buf, sizeof(buf), T_ACCESS_ALL);
	uint32_t key = mr->lkey;

	CHECK_OK(ibv_dereg_mr(mr));
	return key;
}

static struct ibv_send_wr rdma_wr(uint64_t id, struct ibv_sge *sge, enum ibv_wr_opcode op,
                                  uint64_t raddr, uint32_t rkey, bool signaled)
{
	return (struct ibv_send_wr){.wr_id = id,
	                            .sg_list = sge,
	                            .num_sge = 1,
	                            .opcode = op,
	                            .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	                            .wr.rdma = {.remote_addr = raddr, .rkey = rkey}};
}

static struct ibv_sge sge_of(struct fx *f, size_t off, uint32_t len)
{
	return (struct ibv_sge){.addr = (uintptr_t)f->a + off, .length = len, .lkey = f->amr->lkey};
}

static void expect_err(struct ibv_cq *cq, uint64_t id, enum ibv_wc_status st, struct ibv_qp *qp,
                       const char *what)
{
	struct ibv_wc wc = t_poll1(cq, what);

	CHECK_WC_STATUS(&wc, id, st);
	CHECK_EQ(wc.qp_num, qp->qp_num);
}

/* n completions, wr_ids first..first+n-1, all WR_FLUSH_ERR. */
static void expect_flushed(struct ibv_cq *cq, uint64_t first, int n, const char *what)
{
	struct ibv_wc wc[16];

	CHECK(n <= 16);
	t_poll(cq, n, wc, what);
	for (int i = 0; i < n; i++)
		CHECK_WC_STATUS(&wc[i], first + (uint64_t)i, IBV_WC_WR_FLUSH_ERR);
	t_expect_empty(cq, what);
}

/* A WR posted to a QP in ERR is accepted and flushed, signaled or not. */
static void expect_post_flushes(struct fx *f, uint64_t id)
{
	struct ibv_sge s1 = sge_of(f, 0, 8), s2 = sge_of(f, 8, 8);
	struct ibv_send_wr w1 = rdma_wr(id, &s1, IBV_WR_RDMA_WRITE, f->win, f->rkey, false);
	struct ibv_send_wr w2 = rdma_wr(id + 1, &s2, IBV_WR_RDMA_WRITE, f->win, f->rkey, true);

	t_post_send(f->p.qp[0], &w1);
	t_post_send(f->p.qp[0], &w2);
	expect_flushed(f->p.scq[0], id, 2, "WRs posted after the error");
	t_post_recv_buf(f->p.qp[0], id + 2, f->a, 64, f->amr->lkey);
	expect_flushed(f->p.rcq[0], id + 2, 1, "a receive posted after the error");
}

/* Both sides back to RTS (with every access right); a WRITE then works. */
static void expect_reconnect_works(struct fx *f)
{
	struct ibv_sge sge = sge_of(f, 1024, 256);
	struct ibv_send_wr wr =
	    rdma_wr(999, &sge, IBV_WR_RDMA_WRITE, f->win + 512, f->okmr->rkey, true);
	struct ibv_wc wc;

	f->p.opts.access = T_ACCESS_ALL;
	t_pair_reconnect(&f->p);
	memset(f->b + WIN_OFF + 512, 0, 256);
	t_post_send(f->p.qp[0], &wr);
	wc = t_poll1(f->p.scq[0], "WRITE after reconnect");
	CHECK_WC(&wc, 999, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(f->b + WIN_OFF + 512, f->a + 1024, 256);
}

static void case_bad_lkey(void)
{
	struct fx f;

	fx_setup(&f, T_ACCESS_ALL);
	t_post_recv_buf(f.p.qp[0], 50, f.a + 60000, 64, f.amr->lkey);
	t_post_recv_buf(f.p.qp[0], 51, f.a + 61000, 64, f.amr->lkey);

	struct ibv_sge bad = sge_of(&f, 0, 64), s2 = sge_of(&f, 64, 64), s3 = sge_of(&f, 128, 64);
	struct ibv_send_wr wr[3] = {
	    rdma_wr(1, &bad, IBV_WR_RDMA_WRITE, f.win, f.rkey, true),
	    rdma_wr(2, &s2, IBV_WR_RDMA_WRITE, f.win + 64, f.rkey, false),
	    rdma_wr(3, &s3, IBV_WR_RDMA_WRITE, f.win + 128, f.rkey, true),
	};

	bad.lkey = stale_key(f.p.pd);
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];
	t_post_send(f.p.qp[0], wr);
	expect_err(f.p.scq[0], 1, IBV_WC_LOC_PROT_ERR, f.p.qp[0], "WRITE with a bad lkey");
	expect_flushed(f.p.scq[0], 2, 2, "WRs after the failing one (unsignaled + signaled)");
	expect_flushed(f.p.rcq[0], 50, 2, "receives posted before the error");
	CHECK_EQ(t_qp_state(f.p.qp[0]), IBV_QPS_ERR);
	CHECK_BYTES(f.b, GUARD, WIN_OFF + 64); /* the failed WRITE wrote nothing */
	expect_post_flushes(&f, 10);
	t_expect_empty(f.p.rcq[1], "the peer saw nothing");
	expect_reconnect_works(&f);
	fx_teardown(&f);
}

/* The lkey is valid but the local range runs past its MR. */
static void case_lkey_range(void)
{
	struct fx f;

	fx_setup(&f, T_ACCESS_ALL);
	struct ibv_sge sge = sge_of(&f, FX_LEN - 32, 64);
	struct ibv_send_wr wr = rdma_wr(1, &sge, IBV_WR_RDMA_WRITE, f.win, f.rkey, true);

	t_post_send(f.p.qp[0], &wr);
	expect_err(f.p.scq[0], 1, IBV_WC_LOC_PROT_ERR, f.p.qp[0], "WRITE past the local MR");
	CHECK_EQ(t_qp_state(f.p.qp[0]), IBV_QPS_ERR);
	CHECK_BYTES(f.b, GUARD, FX_LEN);
	fx_teardown(&f);
}

/* One WR that the responder must refuse with a remote access error; then
 * one more WR flushes; the target never changes; the pair recovers. */
static void expect_rem_access(struct fx *f, struct ibv_send_wr *wr, const char *what)
{
	uint8_t a_before[FX_LEN];

	memcpy(a_before, f->a, FX_LEN);
	t_post_send(f->p.qp[0], wr);
	expect_err(f->p.scq[0], wr->wr_id, IBV_WC_REM_ACCESS_ERR, f->p.qp[0], what);
	CHECK_EQ(t_qp_state(f->p.qp[0]), IBV_QPS_ERR);
	CHECK_BYTES(f->b, GUARD, FX_LEN);
	CHECK_MEM(f->a, a_before, FX_LEN); /* nothing read back either */
	expect_post_flushes(f, 20);
	t_expect_empty(f->p.rcq[1], "the peer's receive queue saw nothing");
	expect_reconnect_works(f);
}

static void case_bad_rkey(void)
{
	struct fx f;

	fx_setup(&f, T_ACCESS_ALL);
	struct ibv_sge sge = sge_of(&f, 0, 64);
	struct ibv_send_wr wr = rdma_wr(1, &sge, IBV_WR_RDMA_WRITE, f.win, stale_key(f.p.pd), true);

	expect_rem_access(&f, &wr, "WRITE with a bad rkey");
	fx_teardown(&f);
}

static void case_out_of_bounds(void)
{
	static const struct {
		int64_t off; /* from the MR start */
		uint32_t len;
	} ranges[] = {{WIN_LEN - 4, 8}, {-8, 16}, {-1, 1}, {WIN_LEN, 1}, {0, WIN_LEN + 1}};

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		struct fx f;

		t_case("out_of_bounds: WRITE %u bytes at MR start %+lld", ranges[i].len,
		       (long long)ranges[i].off);
		fx_setup(&f, T_ACCESS_ALL);
		struct ibv_sge sge = sge_of(&f, 0, ranges[i].len);
		struct ibv_send_wr wr = rdma_wr(1, &sge, IBV_WR_RDMA_WRITE,
		                                f.win + (uint64_t)ranges[i].off, f.rkey, true);

		expect_rem_access(&f, &wr, "WRITE outside the remote MR");
		fx_teardown(&f);
	}

	struct fx f;

	t_case("out_of_bounds: READ past the remote MR");
	fx_setup(&f, T_ACCESS_ALL);
	struct ibv_sge sge = sge_of(&f, 0, 64);
	struct ibv_send_wr wr =
	    rdma_wr(1, &sge, IBV_WR_RDMA_READ, f.win + WIN_LEN - 32, f.rkey, true);

	expect_rem_access(&f, &wr, "READ outside the remote MR");
	fx_teardown(&f);
}

static void case_no_remote_write(void)
{
	struct fx f;

	fx_setup(&f, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	struct ibv_sge sge = sge_of(&f, 0, 64);
	struct ibv_send_wr wr = rdma_wr(1, &sge, IBV_WR_RDMA_WRITE, f.win, f.rkey, true);

	expect_rem_access(&f, &wr, "WRITE to an MR without REMOTE_WRITE");
	fx_teardown(&f);
}

/* The responder QP's own access flags gate remote writes too. */
static void case_qp_no_remote_write(void)
{
	struct t_conn_opts o;
	struct fx f;

	t_conn_opts_default(&o);
	o.access = IBV_ACCESS_REMOTE_READ;
	fx_setup_opts(&f, T_ACCESS_ALL, &o);
	struct ibv_sge sge = sge_of(&f, 0, 64);
	struct ibv_send_wr wr = rdma_wr(1, &sge, IBV_WR_RDMA_WRITE, f.win, f.rkey, true);

	expect_rem_access(&f, &wr, "WRITE to a QP without REMOTE_WRITE");
	fx_teardown(&f);
}

static void case_no_remote_read(void)
{
	struct fx f;

	fx_setup(&f, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	struct ibv_sge sge = sge_of(&f, 0, 64);
	struct ibv_send_wr wr = rdma_wr(1, &sge, IBV_WR_RDMA_READ, f.win, f.rkey, true);

	expect_rem_access(&f, &wr, "READ from an MR without REMOTE_READ");
	fx_teardown(&f);
}

static void case_no_remote_atomic(void)
{
	struct fx f;

	fx_setup(&f, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	struct ibv_sge sge = sge_of(&f, 0, 8);
	struct ibv_send_wr wr = {
	    .wr_id = 1,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.atomic = {.remote_addr = f.win, .compare_add = 1, .rkey = f.rkey}};

	expect_rem_access(&f, &wr, "FETCH_ADD on an MR without REMOTE_ATOMIC");
	fx_teardown(&f);
}

static void case_recv_too_small(void)
{
	struct fx f;
	struct ibv_wc wc;

	fx_setup(&f, T_ACCESS_ALL);
	t_post_recv_buf(f.p.qp[1], 60, (void *)(uintptr_t)f.win, 16, f.bmr->lkey);
	struct ibv_sge sge = sge_of(&f, 0, 64);
	struct ibv_send_wr wr = {.wr_id = 61,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};

	t_post_send(f.p.qp[0], &wr);
	expect_err(f.p.scq[0], 61, IBV_WC_REM_INV_REQ_ERR, f.p.qp[0],
	           "SEND larger than the receive (requester)");
	wc = t_poll1(f.p.rcq[1], "SEND larger than the receive (responder)");
	CHECK_WC_STATUS(&wc, 60, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(wc.qp_num, f.p.qp[1]->qp_num);
	CHECK_EQ(t_qp_state(f.p.qp[0]), IBV_QPS_ERR);
	expect_post_flushes(&f, 70);
	expect_reconnect_works(&f);
	fx_teardown(&f);
}

static void case_rnr_retry_exceeded(void)
{
	struct t_conn_opts o;
	struct fx f;

	t_conn_opts_default(&o);
	o.rnr_retry = 0;
	fx_setup_opts(&f, T_ACCESS_ALL, &o);
	struct ibv_sge sge = sge_of(&f, 0, 64);
	struct ibv_send_wr wr = {.wr_id = 80,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};

	t_post_send(f.p.qp[0], &wr);
	expect_err(f.p.scq[0], 80, IBV_WC_RNR_RETRY_EXC_ERR, f.p.qp[0],
	           "SEND without a receive, rnr_retry 0");
	CHECK_EQ(t_qp_state(f.p.qp[0]), IBV_QPS_ERR);
	t_expect_empty(f.p.rcq[1], "no receive was posted");
	expect_post_flushes(&f, 90);
	fx_teardown(&f);
}

/* Short transport timer so retries run out quickly. */
static void fast_retry_opts(struct t_conn_opts *o)
{
	t_conn_opts_default(o);
	o->timeout = 8; /* 4.096 us << 8 = 1 ms */
	o->retry_cnt = 2;
}

static void case_unknown_qpn(void)
{
	struct t_conn_opts o;
	struct t_ep nowhere;
	struct fx f;

	fast_retry_opts(&o);
	fx_setup_opts(&f, T_ACCESS_ALL, &o);
	/* A QPN on a live device that no QP has ever had (24-bit, large). */
	nowhere = f.p.ep[1];
	nowhere.qpn = 0xabcde;
	t_reconnect(f.p.qp[0], &nowhere, &o);
	struct ibv_sge sge = sge_of(&f, 0, 64);
	struct ibv_send_wr wr = rdma_wr(1, &sge, IBV_WR_RDMA_WRITE, f.win, f.rkey, true);

	t_post_send(f.p.qp[0], &wr);
	expect_err(f.p.scq[0], 1, IBV_WC_RETRY_EXC_ERR, f.p.qp[0], "WRITE to an unknown QPN");
	CHECK_EQ(t_qp_state(f.p.qp[0]), IBV_QPS_ERR);
	CHECK_BYTES(f.b, GUARD, FX_LEN);
	expect_post_flushes(&f, 100);
	fx_teardown(&f);
}

static void case_peer_destroyed(void)
{
	struct t_conn_opts o;
	struct fx f;

	fast_retry_opts(&o);
	fx_setup_opts(&f, T_ACCESS_ALL, &o);
	CHECK_OK(ibv_destroy_qp(f.p.qp[1]));
	f.p.qp[1] = NULL;
	struct ibv_sge s1 = sge_of(&f, 0, 64), s2 = sge_of(&f, 64, 64);
	struct ibv_send_wr wr[2] = {rdma_wr(1, &s1, IBV_WR_RDMA_WRITE, f.win, f.rkey, true),
	                            rdma_wr(2, &s2, IBV_WR_RDMA_WRITE, f.win, f.rkey, false)};

	wr[0].next = &wr[1];
	t_post_send(f.p.qp[0], wr);
	expect_err(f.p.scq[0], 1, IBV_WC_RETRY_EXC_ERR, f.p.qp[0], "WRITE to a destroyed peer");
	expect_flushed(f.p.scq[0], 2, 1, "the unsignaled WR behind it");
	CHECK_EQ(t_qp_state(f.p.qp[0]), IBV_QPS_ERR);
	CHECK_BYTES(f.b, GUARD, FX_LEN);
	fx_teardown(&f);
}

static void case_modify_to_err_flushes(void)
{
	struct fx f;

	fx_setup(&f, T_ACCESS_ALL);
	for (int i = 0; i < 3; i++)
		t_post_recv_buf(f.p.qp[1], 200 + (uint64_t)i, (void *)(uintptr_t)f.win, 64,
		                f.bmr->lkey);
	t_expect_empty(f.p.rcq[1], "receives wait for a message");
	CHECK_OK(t_qp_to(f.p.qp[1], IBV_QPS_ERR));
	expect_flushed(f.p.rcq[1], 200, 3, "receives flushed by modify to ERR");
	CHECK_BYTES(f.b, GUARD, FX_LEN);
	expect_reconnect_works(&f);
	fx_teardown(&f);
}

/* With rnr_retry 7 the requester waits for the receive however late. */
static void case_rnr_then_success(void)
{
	struct t_conn_opts o;
	struct fx f;
	struct ibv_wc wc;

	t_conn_opts_default(&o);
	o.rnr_retry = 7;
	o.min_rnr_timer = 1;
	fx_setup_opts(&f, T_ACCESS_ALL, &o);
	struct ibv_sge sge = sge_of(&f, 100, 1000);
	struct ibv_send_wr wr = {.wr_id = 300,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};

	t_post_send(f.p.qp[0], &wr);
	t_sleep_ms(20);
	t_expect_empty(f.p.scq[0], "a SEND cannot complete before its receive is posted");
	t_post_recv_buf(f.p.qp[1], 301, (void *)(uintptr_t)f.win, WIN_LEN, f.bmr->lkey);
	wc = t_poll1(f.p.scq[0], "SEND after the late receive");
	CHECK_WC(&wc, 300, IBV_WC_SUCCESS, IBV_WC_SEND);
	wc = t_poll1(f.p.rcq[1], "the late receive");
	CHECK_WC(&wc, 301, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK_MEM(f.b + WIN_OFF, f.a + 100, 1000);
	CHECK_BYTES(f.b + WIN_OFF + 1000, GUARD, FX_LEN - WIN_OFF - 1000);
	CHECK_EQ(t_qp_state(f.p.qp[0]), IBV_QPS_RTS);
	fx_teardown(&f);
}

/* rnr_retry counts RNR NAKs in a row: a receive that arrives resets it (as
 * progress resets retry_cnt), so a QP with rnr_retry 1 survives one RNR NAK
 * per SEND for as many SENDs as it likes. The RNR delay (min_rnr_timer 0:
 * 655 ms) leaves time to post each receive after its SEND was refused. */
static void case_rnr_reset_by_progress(void)
{
	struct t_conn_opts o;
	struct fx f;

	t_conn_opts_default(&o);
	o.rnr_retry = 1;
	o.min_rnr_timer = 0;
	fx_setup_opts(&f, T_ACCESS_ALL, &o);
	for (int r = 0; r < 2; r++) {
		struct ibv_sge sge = sge_of(&f, 0, 64);
		struct ibv_send_wr wr = {.wr_id = 400 + (uint64_t)r,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED};
		struct ibv_wc wc;

		t_post_send(f.p.qp[0], &wr);
		t_sleep_ms(50);
		t_expect_empty(f.p.scq[0], "a SEND waiting out its RNR NAK");
		t_post_recv_buf(f.p.qp[1], 410 + (uint64_t)r, (void *)(uintptr_t)f.win, WIN_LEN,
		                f.bmr->lkey);
		wc = t_poll1(f.p.scq[0], "SEND after the late receive");
		CHECK_WC(&wc, 400 + (uint64_t)r, IBV_WC_SUCCESS, IBV_WC_SEND);
		wc = t_poll1(f.p.rcq[1], "the late receive");
		CHECK_WC(&wc, 410 + (uint64_t)r, IBV_WC_SUCCESS, IBV_WC_RECV);
	}
	CHECK_EQ(t_qp_state(f.p.qp[0]), IBV_QPS_RTS);
	fx_teardown(&f);
}

static const struct t_named_case cases[] = {
    {"bad_lkey", case_bad_lkey},
    {"lkey_range", case_lkey_range},
    {"bad_rkey", case_bad_rkey},
    {"out_of_bounds", case_out_of_bounds},
    {"no_remote_write", case_no_remote_write},
    {"qp_no_remote_write", case_qp_no_remote_write},
    {"no_remote_read", case_no_remote_read},
    {"no_remote_atomic", case_no_remote_atomic},
    {"recv_too_small", case_recv_too_small},
    {"rnr_retry_exceeded", case_rnr_retry_exceeded},
    {"unknown_qpn", case_unknown_qpn},
    {"peer_destroyed", case_peer_destroyed},
    {"modify_to_err_flushes", case_modify_to_err_flushes},
    {"rnr_then_success", case_rnr_then_success},
    {"rnr_reset_by_progress", case_rnr_reset_by_progress},
};

int main(int argc, char **argv)
{
	ctx = t_open(T_DEVICE);
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
