/* SPDX-License-Identifier: MIT */
/*
 * GNIC_DB_PROXY's own contract (the device calls themselves run in proxy
 * mode in every *_proxy CTest):
 *   - a full ring holds posters back, bounded, and drops nothing: SENDs to a
 *     peer without receives are RNR-retried forever, so the SQ and then the
 *     ring fill; the poster blocks in its reservation with exactly 2 x the
 *     SQ's basic blocks taken, and every message arrives once receives are
 *     posted;
 *   - destroying QPs and the context with descriptors still in the ring and
 *     WQEs in flight returns at once, and the proxy thread goes with the
 *     last proxied QP;
 *   - a put to a bad rkey ends as in SM mode: the same status for the
 *     device caller and the same error record;
 *   - inline data in a ring slot never reads as a descriptor in a later lap;
 *   - (argument "fallback", run with GNIC_DB_MAP=off) AUTO falls back to the
 *     proxy and says why at the default log level, once per context; SM and
 *     BF are refused.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "dev_common.h"

#define MSG 64

static uint64_t ms(uint64_t n)
{
	return n * 1000000ull;
}

static void sleep_ms(unsigned n)
{
	struct timespec ts = {.tv_sec = n / 1000, .tv_nsec = (long)(n % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static void proxy_attr(struct gnic_qp_attr *a)
{
	gnic_qp_attr_init(a);
	a->db_mode = GNIC_DB_PROXY;
	a->sq_depth = 8;
	a->cqe_every = 4;
	a->rq_depth = 512;
}

/* Threads of this process, from /proc. */
static int thread_count(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY), n = -1;
	ssize_t len;
	char *p;

	CHECK(fd >= 0);
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(len > 0);
	buf[len] = 0;
	p = strstr(buf, "Threads:");
	CHECK(p != NULL);
	n = atoi(p + 8);
	return n;
}

/* ---- back-pressure ----------------------------------------------------------------- */

struct sender {
	struct pair *p;
	uint32_t n;
	int rc;
	int finished;
};

static void *send_all(void *arg)
{
	struct sender *s = arg;

	for (uint32_t i = 0; i < s->n && !s->rc; i++)
		s->rc = gnic_dev_send(s->p->a, s->p->abuf + (size_t)i * MSG,
		                      gnic_mr_lkey(s->p->amr), MSG, 0);
	if (!s->rc)
		s->rc = gnic_dev_quiet(s->p->a);
	__atomic_store_n(&s->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_back_pressure(void)
{
	struct gnic_qp_attr attr;
	struct sender s = {0};
	struct pair p;
	pthread_t th;
	uint32_t cnt, len;
	uint64_t t0;

	proxy_attr(&attr);
	pair_open(&p, &attr, 512 * MSG);
	cnt = p.a->sq_wqe_cnt;
	t_case("ring full: the poster waits at 2 x %u slots, then all %u SENDs arrive", cnt,
	       2 * cnt + 16);
	s.p = &p;
	s.n = 2 * cnt + 16;
	CHECK(s.n <= p.b->rq_wqe_cnt);
	for (uint32_t i = 0; i < s.n; i++)
		memset(p.abuf + (size_t)i * MSG, (uint8_t)(i + 1), MSG);
	CHECK_EQ(pthread_create(&th, NULL, send_all, &s), 0);
	/* no receive posted: RNR NAKs, retried forever (rnr_retry 7) */
	t0 = gnic_now_ns();
	while (__atomic_load_n(&p.a->sq_reserved, __ATOMIC_ACQUIRE) < 2 * (uint64_t)cnt + 1) {
		CHECK(gnic_now_ns() - t0 < ms(5000));
		sleep_ms(1);
	}
	sleep_ms(200); /* long enough for anything the proxy could still take */
	CHECK_EQ(__atomic_load_n(&s.finished, __ATOMIC_ACQUIRE), 0);
	CHECK_EQ(__atomic_load_n(&p.a->sq_reserved, __ATOMIC_ACQUIRE), 2 * (uint64_t)cnt + 1);
	CHECK_EQ(dev_sq_ready(p.a), cnt); /* the SQ is full, the ring too */
	CHECK_EQ(dev_sq_done(p.a), 0);
	CHECK(!gnic_dev_failed(p.a));
	for (uint32_t i = 0; i < s.n; i++)
		CHECK_DEV(
		    gnic_dev_recv_post(p.b, p.bbuf + (size_t)i * MSG, gnic_mr_lkey(p.bmr), MSG));
	for (uint32_t i = 0; i < s.n; i++) {
		CHECK_DEV(gnic_dev_recv_wait(p.b, &len, NULL));
		CHECK_EQ(len, MSG);
	}
	dev_join_all(&th, 1, 20);
	CHECK_EQ(s.rc, GNIC_DEV_OK);
	CHECK_MEM(p.bbuf, p.abuf, (size_t)s.n * MSG);
	CHECK_EQ(dev_sq_done(p.a), s.n);
	pair_close(&p);
}

/* ---- shutdown ---------------------------------------------------------------------- */

static void test_shutdown_in_flight(void)
{
	struct gnic_qp_attr attr;
	struct pair p;
	uint32_t cnt;
	int before, with;
	uint64_t t0;

	proxy_attr(&attr);
	attr.db_mode = GNIC_DB_SM;
	before = thread_count();
	pair_open(&p, &attr, 512 * MSG); /* SM QPs: no proxy thread */
	with = thread_count() - before;
	pair_close(&p);

	proxy_attr(&attr);
	pair_open(&p, &attr, 512 * MSG);
	t_case("destroy with full SQ and ring: returns at once, the proxy thread ends");
	CHECK_EQ(thread_count() - before, with + 1); /* one proxy thread for both QPs */
	cnt = p.a->sq_wqe_cnt;
	for (uint32_t i = 0; i < 2 * cnt; i++) /* SENDs that RNR forever: nothing completes */
		CHECK_DEV(gnic_dev_send(p.a, p.abuf, gnic_mr_lkey(p.amr), MSG, 0));
	for (uint32_t i = 0; i < 64; i++) /* and puts behind them in the ring */
		CHECK_DEV(gnic_dev_put(p.b, p.bbuf, gnic_mr_lkey(p.bmr), p.arm.addr, p.arm.rkey,
		                       MSG, 0, NULL));
	t0 = gnic_now_ns();
	gnic_qp_destroy(p.qa);
	CHECK_EQ(thread_count() - before, with + 1); /* qb is still proxied */
	gnic_qp_destroy(p.qb);
	CHECK(gnic_now_ns() - t0 < ms(2000));
	p.qa = p.qb = NULL;
	gnic_mr_dereg(p.amr);
	gnic_mr_dereg(p.bmr);
	p.amr = p.bmr = NULL;
	CHECK_EQ(thread_count() - before, with); /* gone with the last proxied QP */
	pair_close(&p);
}

/* ---- errors as in SM mode ----------------------------------------------------------- */

struct outcome {
	int put, quiet, next;
	struct gnic_qp_error err;
};

static void bad_rkey(enum gnic_db_mode mode, struct outcome *o)
{
	struct gnic_qp_attr attr;
	struct pair p;

	gnic_qp_attr_init(&attr);
	attr.db_mode = mode;
	pair_open(&p, &attr, 4096);
	CHECK_DEV(
	    gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr, p.brm.rkey, 64, 0, NULL));
	o->put = gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr, p.brm.rkey ^ 0x100, 64,
	                      0, NULL);
	o->quiet = gnic_dev_quiet(p.a);
	o->next = gnic_dev_atomic_fetch_add(p.a, p.brm.addr, p.brm.rkey, 1, NULL);
	CHECK_GNIC(gnic_qp_error(p.qa, &o->err));
	pair_close(&p);
}

static void test_error_parity(void)
{
	struct outcome sm, px;

	t_case("bad rkey: the same statuses and error record as SM mode");
	bad_rkey(GNIC_DB_SM, &sm);
	bad_rkey(GNIC_DB_PROXY, &px);
	CHECK_EQ(sm.put, GNIC_DEV_OK);
	CHECK_EQ(sm.quiet, GNIC_DEV_ERR_CQE);
	CHECK_EQ(sm.next, GNIC_DEV_ERR_QP);
	CHECK_EQ(px.put, sm.put);
	CHECK_EQ(px.quiet, sm.quiet);
	CHECK_EQ(px.next, sm.next);
	CHECK_EQ(px.err.dev_status, sm.err.dev_status);
	CHECK_EQ(px.err.syndrome, sm.err.syndrome);
	CHECK_EQ(px.err.opcode, sm.err.opcode);
	CHECK_EQ(px.err.wqe_counter, sm.err.wqe_counter);
	CHECK(strcmp(px.err.text, sm.err.text) == 0);
}

/* ---- ring laps ---------------------------------------------------------------------- */

/* An inline WRITE over slots 0 and 1 whose data puts cnt + 2 where slot 1's
 * seq is read: index cnt + 1's in the next lap. The proxy must not take it
 * for a descriptor once its head gets there. */
static void test_stale_inline(void)
{
	struct gnic_qp_attr attr;
	uint8_t data[60];
	uint64_t fake;
	uint32_t cnt;
	struct pair p;

	proxy_attr(&attr);
	attr.share = GNIC_SHARE_EXCLUSIVE;
	pair_open(&p, &attr, 4096);
	cnt = p.a->sq_wqe_cnt;
	t_case("inline data in slot 1 never reads as index %u's descriptor", cnt + 1);
	CHECK_EQ(gnic_dev_inline_nbb(sizeof(data)), 2);
	fake = cnt + 2;
	memset(data, GNIC_PX_RDMA, sizeof(data)); /* what follows would read as an RDMA op */
	memcpy(data + 64 - GNIC_PX_INLINE_OFF, &fake, sizeof(fake));
	CHECK_DEV(gnic_dev_put_inline(p.a, data, sizeof(data), p.brm.addr, p.brm.rkey, 0));
	for (uint32_t i = 2; i <= cnt; i++) /* indexes 2 .. cnt: slot 0 again */
		CHECK_DEV(gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr + 128,
		                       p.brm.rkey, 8, 0, NULL));
	CHECK_DEV(gnic_dev_quiet(p.a));
	CHECK_EQ(p.a->sq_reserved, cnt + 1);
	sleep_ms(50); /* the proxy's head sits at index cnt + 1 (slot 1) */
	CHECK_EQ(dev_sq_ready(p.a), cnt + 1);
	CHECK(!gnic_dev_failed(p.a));
	CHECK_MEM(p.bbuf, data, sizeof(data));
	memset(p.abuf, 0x3c, 8);
	CHECK_DEV(gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr + 256, p.brm.rkey, 8, 0,
	                       NULL));
	CHECK_DEV(gnic_dev_quiet(p.a));
	CHECK_BYTES(p.bbuf + 256, 0x3c, 8);
	pair_close(&p);
}

/* ---- AUTO's fallback ---------------------------------------------------------------- */

static void test_fallback(void)
{
	struct gnic_qp_attr attr;
	struct gnic_qp *q1, *q2, *q3;
	struct gnic_ctx *ctx;
	char log[4096];

	t_case("GNIC_DB_MAP=off: AUTO falls back to the proxy and says why, once");
	ctx = dev_ctx_open();
	gnic_qp_attr_init(&attr);
	CHECK_GNIC(dev_qp_create_logged(ctx, &attr, &q1, log, sizeof(log)));
	CHECK_EQ(gnic_qp_dev(q1)->db_mode, GNIC_DB_PROXY);
	printf("logged: %s", log);
	CHECK(strstr(log, "note:") != NULL);
	CHECK(strstr(log, "GNIC_DB_MAP=off") != NULL);
	CHECK(strstr(log, "CPU proxy") != NULL);
	CHECK_GNIC(dev_qp_create_logged(ctx, &attr, &q2, log, sizeof(log)));
	CHECK_EQ(gnic_qp_dev(q2)->db_mode, GNIC_DB_PROXY);
	CHECK(strstr(log, "CPU proxy") == NULL); /* said once per context */

	t_case("GNIC_DB_MAP=off: SM and BF are refused, CPU and PROXY are not");
	attr.db_mode = GNIC_DB_SM;
	CHECK_EQ(gnic_qp_create(ctx, &attr, &q3), GNIC_ERR_NOT_SUPPORTED);
	CHECK(strstr(gnic_last_error(), "GNIC_DB_MAP=off") != NULL);
	attr.db_mode = GNIC_DB_BF;
	CHECK_EQ(gnic_qp_create(ctx, &attr, &q3), GNIC_ERR_NOT_SUPPORTED);
	attr.db_mode = GNIC_DB_CPU;
	CHECK_GNIC(gnic_qp_create(ctx, &attr, &q3));
	gnic_qp_destroy(q3);
	gnic_qp_destroy(q2);
	gnic_qp_destroy(q1);
	gnic_ctx_destroy(ctx);

	t_case("the fallen-back QPs work: put, fetch-add, quiet");
	{
		struct pair p;
		uint64_t old = 1;

		pair_open(&p, NULL, 4096);
		CHECK_EQ(p.a->db_mode, GNIC_DB_PROXY);
		memset(p.abuf, 0x77, 256);
		CHECK_DEV(gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr, p.brm.rkey,
		                       256, 0, NULL));
		CHECK_DEV(gnic_dev_atomic_fetch_add(p.a, p.brm.addr + 1024, p.brm.rkey, 5, &old));
		CHECK_EQ(old, 0);
		CHECK_DEV(gnic_dev_quiet(p.a));
		CHECK_BYTES(p.bbuf, 0x77, 256);
		CHECK_EQ(*(uint64_t *)(p.bbuf + 1024), 5);
		pair_close(&p);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "fallback")) {
		test_fallback();
		return T_EXIT_PASS;
	}
	test_back_pressure();
	test_shutdown_in_flight();
	test_error_parity();
	test_stale_inline();
	return T_EXIT_PASS;
}
