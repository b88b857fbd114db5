// SPDX-License-Identifier: MIT
/*
 * Completion channels: an armed CQ wakes its channel for a completion
 * (observed with poll() on channel->fd, so a missing event fails instead of
 * hanging), ibv_get_cq_event returns the CQ and its context, ack, re-arm,
 * no event without arming, solicited-only arming, a non-blocking fd, and the
 * destroy order (a channel in use by a CQ cannot go first). Destroying an
 * object drops its unread events (completion and async, as the kernel drops
 * them from its event files) and waits until those handed out are acked.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *ch;
static struct ibv_cq *scq[2], *rcq[2];
static struct ibv_qp *qp[2];
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;
static int cq_ctx_tag[4];

static bool fd_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int r = poll(&pfd, 1, timeout_ms);

	if (r < 0)
		T_FAIL("poll: %s", strerror(errno));
	return r > 0 && (pfd.revents & POLLIN);
}

/* The next event must come within T_WAIT_MS and name this CQ. */
static void expect_event(struct ibv_cq *want, void *want_ctx, const char *what)
{
	struct ibv_cq *cq = NULL;
	void *cq_ctx = NULL;

	if (!fd_readable(ch->fd, T_WAIT_MS))
		T_FAIL("no event on the channel within %d ms: %s", T_WAIT_MS, what);
	CHECK_OK(ibv_get_cq_event(ch, &cq, &cq_ctx));
	CHECK(cq == want);
	CHECK(cq_ctx == want_ctx);
	ibv_ack_cq_events(cq, 1);
}

static void expect_no_event(const char *what)
{
	if (fd_readable(ch->fd, 50))
		T_FAIL("unexpected event on the channel: %s", what);
}

static void post_write(uint64_t id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)abuf, .length = 64, .lkey = amr->lkey};
	struct ibv_send_wr wr = {.wr_id = id,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_WRITE,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.rdma = {.remote_addr = (uintptr_t)bbuf, .rkey = bmr->rkey}};

	t_post_send(qp[0], &wr);
}

static void post_send(uint64_t id, bool solicited)
{
	struct ibv_sge sge = {.addr = (uintptr_t)abuf, .length = 32, .lkey = amr->lkey};
	struct ibv_send_wr wr = {.wr_id = id,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags =
	                             IBV_SEND_SIGNALED | (solicited ? IBV_SEND_SOLICITED : 0)};

	t_post_recv_buf(qp[1], id + 1000, bbuf + 4096, 64, bmr->lkey);
	t_post_send(qp[0], &wr);
}

static void setup(void)
{
	struct t_qp_caps caps;
	struct t_conn_opts o;
	struct t_ep ep[2];

	ctx = t_open(T_DEVICE);
	pd = CHECK_PTR(ibv_alloc_pd(ctx));
	ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	CHECK(ch->fd >= 0);
	CHECK(ch->context == ctx);
	for (int i = 0; i < 2; i++) {
		scq[i] = CHECK_PTR(ibv_create_cq(ctx, 64, &cq_ctx_tag[2 * i], ch, 0));
		rcq[i] = CHECK_PTR(ibv_create_cq(ctx, 64, &cq_ctx_tag[2 * i + 1], ch, 0));
		CHECK(scq[i]->channel == ch && scq[i]->cq_context == &cq_ctx_tag[2 * i]);
	}
	t_qp_caps_default(&caps);
	t_conn_opts_default(&o);
	for (int i = 0; i < 2; i++) {
		qp[i] = t_qp(pd, scq[i], rcq[i], &caps, NULL);
		t_local_ep(qp[i], &ep[i]);
	}
	t_connect(qp[0], &ep[1], &o);
	t_connect(qp[1], &ep[0], &o);
	abuf = t_alloc(8192, 0x61);
	bbuf = t_alloc(8192, 0);
	amr = t_reg(pd, abuf, 8192, T_ACCESS_ALL);
	bmr = t_reg(pd, bbuf, 8192, T_ACCESS_ALL);
}

static void test_basic(void)
{
	struct ibv_wc wc;

	t_case("no event without arming");
	post_write(1);
	wc = t_poll1(scq[0], "unarmed WRITE");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	expect_no_event("the CQ was not armed");

	t_case("armed CQ: one event for a completion");
	CHECK_OK(ibv_req_notify_cq(scq[0], 0));
	post_write(2);
	expect_event(scq[0], &cq_ctx_tag[0], "WRITE completion on an armed CQ");
	wc = t_poll1(scq[0], "the WRITE that raised the event");
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);

	t_case("an event fires once per arming");
	post_write(3);
	wc = t_poll1(scq[0], "WRITE after the event, not re-armed");
	CHECK_WC(&wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	expect_no_event("not re-armed");

	t_case("re-arm, event again");
	CHECK_OK(ibv_req_notify_cq(scq[0], 0));
	post_write(4);
	expect_event(scq[0], &cq_ctx_tag[0], "second armed completion");
	wc = t_poll1(scq[0], "second armed WRITE");
	CHECK_WC(&wc, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
}

static void test_solicited(void)
{
	struct ibv_wc wc;

	t_case("solicited-only arming ignores an unsolicited SEND");
	CHECK_OK(ibv_req_notify_cq(rcq[1], 1));
	post_send(10, false);
	wc = t_poll1(scq[0], "unsolicited SEND");
	CHECK_WC(&wc, 10, IBV_WC_SUCCESS, IBV_WC_SEND);
	wc = t_poll1(rcq[1], "unsolicited receive");
	CHECK_WC(&wc, 1010, IBV_WC_SUCCESS, IBV_WC_RECV);
	expect_no_event("solicited-only CQ, unsolicited message");

	t_case("solicited-only arming wakes for a solicited SEND");
	post_send(11, true);
	expect_event(rcq[1], &cq_ctx_tag[3], "solicited receive");
	wc = t_poll1(rcq[1], "solicited receive");
	CHECK_WC(&wc, 1011, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
	wc = t_poll1(scq[0], "solicited SEND");
	CHECK_WC(&wc, 11, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* Two CQs on one channel: each event names its own CQ. */
static void test_two_cqs(void)
{
	struct ibv_cq *cq;
	void *cctx;
	bool seen_s = false, seen_r = false;
	struct ibv_wc wc;

	t_case("two armed CQs on one channel");
	CHECK_OK(ibv_req_notify_cq(scq[0], 0));
	CHECK_OK(ibv_req_notify_cq(rcq[1], 0));
	post_send(20, false);
	for (int i = 0; i < 2; i++) {
		if (!fd_readable(ch->fd, T_WAIT_MS))
			T_FAIL("event %d of 2 did not come within %d ms", i + 1, T_WAIT_MS);
		CHECK_OK(ibv_get_cq_event(ch, &cq, &cctx));
		if (cq == scq[0] && cctx == &cq_ctx_tag[0] && !seen_s)
			seen_s = true;
		else if (cq == rcq[1] && cctx == &cq_ctx_tag[3] && !seen_r)
			seen_r = true;
		else
			T_FAIL("event %d names an unexpected CQ %p", i + 1, (void *)cq);
		ibv_ack_cq_events(cq, 1);
	}
	wc = t_poll1(scq[0], "SEND");
	CHECK_WC(&wc, 20, IBV_WC_SUCCESS, IBV_WC_SEND);
	wc = t_poll1(rcq[1], "receive");
	CHECK_WC(&wc, 1020, IBV_WC_SUCCESS, IBV_WC_RECV);
	expect_no_event("both events consumed");
}

static void test_nonblocking(void)
{
	struct ibv_cq *cq;
	void *cctx;
	int flags = fcntl(ch->fd, F_GETFL);

	t_case("non-blocking channel fd: get_cq_event fails instead of waiting");
	CHECK(flags >= 0);
	CHECK_OK(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK));
	CHECK_NE(ibv_get_cq_event(ch, &cq, &cctx), 0);
	CHECK_OK(fcntl(ch->fd, F_SETFL, flags));
}

/* A destroy run on a thread of its own, to see it wait for an ack. */
struct destroyer {
	pthread_t thread;
	int (*fn)(void *);
	void *obj;
	atomic_bool done;
	int ret;
};

static void *destroyer_main(void *arg)
{
	struct destroyer *d = arg;

	d->ret = d->fn(d->obj);
	atomic_store(&d->done, true);
	return NULL;
}

static void destroyer_start(struct destroyer *d, int (*fn)(void *), void *obj)
{
	d->fn = fn;
	d->obj = obj;
	atomic_store(&d->done, false);
	CHECK_OK(pthread_create(&d->thread, NULL, destroyer_main, d));
	t_sleep_ms(200);
	if (atomic_load(&d->done))
		T_FAIL("destroy returned (%d) while an event it had handed out was not acked",
		       d->ret);
}

/* After the ack: the destroy must return 0 within T_WAIT_MS. */
static void destroyer_finish(struct destroyer *d)
{
	uint64_t end = t_now_ms() + T_WAIT_MS;

	while (!atomic_load(&d->done))
		if (t_now_ms() > end)
			T_FAIL("destroy still waits %d ms after the ack", T_WAIT_MS);
		else
			t_sleep_ms(1);
	CHECK_OK(pthread_join(d->thread, NULL));
	CHECK_OK(d->ret);
}

static int destroy_cq(void *cq)
{
	return ibv_destroy_cq(cq);
}

static int destroy_qp(void *qp)
{
	return ibv_destroy_qp(qp);
}

/* A nonblocking read of fd's events must find none, and poll() none. */
static void expect_fd_empty(int fd, int (*get)(void), const char *what)
{
	int flags = fcntl(fd, F_GETFL);

	if (fd_readable(fd, 50))
		T_FAIL("the fd is readable: %s", what);
	CHECK_OK(fcntl(fd, F_SETFL, flags | O_NONBLOCK));
	CHECK_EQ(get(), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_OK(fcntl(fd, F_SETFL, flags));
}

static int get_cq_event(void)
{
	struct ibv_cq *cq;
	void *cctx;

	return ibv_get_cq_event(ch, &cq, &cctx);
}

static int get_async_event(void)
{
	struct ibv_async_event ev;

	return ibv_get_async_event(ctx, &ev);
}

/* scq[0]'s first event is handed out and not acked yet, its second never
 * read: destroying the CQ drops the second and waits for the first's ack. */
static void destroy_scq0_with_events(void)
{
	struct destroyer d;
	struct ibv_cq *cq;
	void *cctx;

	t_case("destroy_cq: an unread completion event is dropped, a read one waits for its ack");
	CHECK_OK(ibv_req_notify_cq(scq[0], 0));
	post_write(10);
	CHECK(fd_readable(ch->fd, T_WAIT_MS));
	CHECK_OK(ibv_get_cq_event(ch, &cq, &cctx));
	CHECK(cq == scq[0]);
	CHECK_OK(ibv_req_notify_cq(scq[0], 0));
	post_write(11);
	CHECK(fd_readable(ch->fd, T_WAIT_MS));
	CHECK_OK(ibv_destroy_qp(qp[0])); /* the CQ goes only when no QP uses it */
	destroyer_start(&d, destroy_cq, scq[0]);
	ibv_ack_cq_events(cq, 1);
	destroyer_finish(&d);
	expect_fd_empty(ch->fd, get_cq_event, "the destroyed CQ's unread event");
}

/* A WRITE with a bad rkey: qp[1] of p is the responder that fails, and its
 * IBV_EVENT_QP_ACCESS_ERR is queued (within T_WAIT_MS). */
static void raise_access_err(struct t_pair *p, uint8_t *buf)
{
	struct ibv_mr *mr = t_reg(p->pd, buf, 64, T_ACCESS_ALL);
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_send_wr wr = {
	    .wr_id = 1,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)buf, .rkey = mr->rkey ^ 0x5a5a00}};
	struct ibv_wc wc;

	t_post_send(p->qp[0], &wr);
	wc = t_poll1(p->scq[0], "the WRITE with a bad rkey");
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK(fd_readable(ctx->async_fd, T_WAIT_MS));
	CHECK_OK(ibv_dereg_mr(mr));
}

static void test_async_destroy(void)
{
	struct t_pair p, q;
	struct ibv_async_event ev;
	struct destroyer d;
	uint8_t buf[2][64];

	t_case("destroy_qp: an unread async event is dropped, a read one waits for its ack");
	t_pair_create(&p, ctx, NULL, NULL, 0);
	t_pair_create(&q, ctx, NULL, NULL, 0);
	raise_access_err(&p, buf[0]);
	CHECK_OK(ibv_get_async_event(ctx, &ev));
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
	CHECK(ev.element.qp == p.qp[1]);
	raise_access_err(&q, buf[1]);
	CHECK_OK(ibv_destroy_qp(q.qp[1])); /* its event unread: nothing to wait for */
	q.qp[1] = NULL;
	destroyer_start(&d, destroy_qp, p.qp[1]);
	ibv_ack_async_event(&ev);
	destroyer_finish(&d);
	p.qp[1] = NULL;
	expect_fd_empty(ctx->async_fd, get_async_event, "the destroyed QP's unread event");
	t_pair_destroy(&p);
	t_pair_destroy(&q);
}

static void test_destroy_order(void)
{
	t_case("destroy: the channel outlives its CQs");
	CHECK_RET(ibv_destroy_comp_channel(ch), EBUSY);
	destroy_scq0_with_events();
	CHECK_OK(ibv_destroy_qp(qp[1]));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	CHECK_OK(ibv_destroy_cq(rcq[0]));
	CHECK_OK(ibv_destroy_cq(scq[1]));
	CHECK_OK(ibv_destroy_cq(rcq[1]));
	CHECK_OK(ibv_destroy_comp_channel(ch));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
}

int main(void)
{
	setup();
	test_basic();
	test_solicited();
	test_two_cqs();
	test_nonblocking();
	test_async_destroy();
	test_destroy_order();
	free(abuf);
	free(bbuf);
	printf("PASS\n");
	return T_EXIT_PASS;
}
