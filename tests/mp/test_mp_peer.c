// SPDX-License-Identifier: MIT
/*
 * A requester's signaled WRITE and READ to a peer process that fails or
 * pauses, with QP timeout T (4.096 us << TIMEOUT_EXP) and retry_cnt R:
 *
 *   kill        the peer is SIGKILLed: its NIC answers nothing, so each
 *               ends in RETRY_EXC_ERR after (R+1) x T, not at once when the
 *               peer's socket resets (what a ConnectX sees of a dead host
 *               is silence)
 *   stop_long   the peer is SIGSTOPped for longer than (R+1) x T: the same
 *   stop_short  the peer is stopped for T/4 (retry_cnt 0, so no resend can
 *               hide a timer that fired): SUCCESS, the READ with its bytes
 *   slow        the peer is stopped for 2.5 x T, under (R+1) x T: the
 *               resends wait in its socket with the first request, and it
 *               answers them all when it runs again: SUCCESS
 *
 * RETRY_EXC_ERR must come no sooner than (R+1) x T less LATE_MS's tenth
 * (the emulator's timer is exact; a ConnectX's lies between T and 4 T) and
 * no later than (R+1) x T + LATE_MS. A requester stopped itself while the
 * answer waits in its socket is test_mp_stop; a cut connection is
 * test_cut_loopback.
 *
 *   test_mp_peer <case>   forks and execs itself as "requester" and
 *                         "responder", each joined to this parent by a
 *                         socketpair; the parent relays the endpoints and
 *                         stops, continues or kills the responder.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "mp_common.h"

#define TIMEOUT_EXP 16 /* 4.096 us << 16 = 268 ms */
#define RETRIES     3
#define LEN         4096
#define OFF_LOCAL   0         /* the requester's WRITE source / READ target */
#define OFF_WRITE   LEN       /* the responder's WRITE target */
#define OFF_READ    (2 * LEN) /* the responder's READ source */
#define REGION      (3 * LEN)
#define LATE_MS     1000 /* slack past the bound, for a loaded machine */

struct result {
	int status;
	uint32_t elapsed_ms; /* post to completion */
};

static uint64_t timeout_ms(void)
{
	return ((4096ull << TIMEOUT_EXP) + 999999) / 1000000;
}

/* ---- the two children ----------------------------------------------------- */

static void side_setup(struct mp_side *s, int retries)
{
	mp_side_open(s, REGION, TIMEOUT_EXP, (uint8_t)retries);
	t_fill(s->buf + OFF_READ, LEN, 900); /* what a READ of the responder gets */
	mp_side_connect(s, REGION);
}

/* One signaled WRITE or READ; says 'p' once posted, then sends the result. */
static void requester_op(struct mp_side *s, bool read)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)s->buf + OFF_LOCAL, .length = LEN, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = read,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
	                         .send_flags = IBV_SEND_SIGNALED};
	uint64_t bound = (RETRIES + 1) * timeout_ms() + 2 * LATE_MS, posted;
	struct result r;
	struct ibv_wc wc;

	t_case("%s: %s", s->role, read ? "READ" : "WRITE");
	if (read)
		memset(s->buf + OFF_LOCAL, 0, LEN);
	else
		t_fill(s->buf + OFF_LOCAL, LEN, 901);
	wr.wr.rdma.remote_addr = s->peer.addr + (read ? OFF_READ : OFF_WRITE);
	wr.wr.rdma.rkey = s->peer.rkey;
	posted = t_now_ms();
	t_post_send(s->qp, &wr);
	mp_send(s->fd, 'p');
	memset(&wc, 0, sizeof(wc));
	t_poll_timeout(s->scq, 1, &wc, (unsigned)bound, read ? "the READ" : "the WRITE");
	r.elapsed_ms = (uint32_t)(t_now_ms() - posted);
	r.status = wc.status;
	CHECK_EQ(wc.wr_id, (uint64_t)read);
	if (wc.status == IBV_WC_SUCCESS && read) {
		uint8_t want[LEN];

		t_fill(want, LEN, 900);
		CHECK_MEM(s->buf + OFF_LOCAL, want, LEN);
	}
	mp_blob_send(s->fd, &r, sizeof(r));
}

static void warm_up(struct mp_side *s)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)s->buf + OFF_LOCAL, .length = 8, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 7,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_READ,
	                         .send_flags = IBV_SEND_SIGNALED};
	struct ibv_wc wc;

	t_case("%s: warm-up READ", s->role);
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_READ;
	wr.wr.rdma.rkey = s->peer.rkey;
	t_post_send(s->qp, &wr);
	wc = t_poll1(s->scq, "the warm-up READ");
	CHECK_WC(&wc, 7, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	mp_send(s->fd, 'u');
}

/* Commands: W/D a WRITE/READ, U a warm-up, R back to RTS (at new PSNs: the
 * peer may still hold the failed requests), Q quit. The responder only
 * answers, in its engine, until Q. */
static int run_child(struct mp_side *s, bool requester, int retries)
{
	side_setup(s, retries);
	for (;;) {
		char c = mp_recv(s->fd, "the parent's next command");

		if (c == 'Q')
			break;
		if (!requester)
			T_FAIL("%s: unexpected command '%c'", s->role, c);
		if (c == 'W' || c == 'D') {
			requester_op(s, c == 'D');
		} else if (c == 'U') {
			warm_up(s);
		} else if (c == 'R') {
			t_case("%s: reconnect", s->role);
			s->opts.sq_psn = (s->opts.sq_psn + 0x10000) & 0xffffff;
			t_reconnect(s->qp, &s->peer, &s->opts);
			mp_send(s->fd, 'r');
		} else {
			T_FAIL("%s: unknown command '%c'", s->role, c);
		}
	}
	mp_side_close(s);
	return T_EXIT_PASS;
}

/* ---- the parent ----------------------------------------------------------- */

enum { REQ, RESP };
static pid_t kids[2];
static int kid_fd[2];

/* A failing parent must not leave a stopped child behind. */
static void kill_kids(void)
{
	for (int i = 0; i < 2; i++)
		if (kids[i] > 0)
			mp_kill(kids[i]);
}

static void start(int retries)
{
	char arg[16];
	int sv[2][2];
	struct t_ep ep[2];

	snprintf(arg, sizeof(arg), "%d", retries);
	for (int k = 0; k < 2; k++)
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[k]))
			T_FAIL("socketpair: %s", strerror(errno));
	atexit(kill_kids);
	kids[REQ] = mp_spawn("test_mp_peer", "requester", sv[REQ][1], sv[REQ][0], arg);
	kids[RESP] = mp_spawn("test_mp_peer", "responder", sv[RESP][1], sv[RESP][0], arg);
	for (int k = 0; k < 2; k++) {
		close(sv[k][1]);
		kid_fd[k] = sv[k][0];
	}
	mp_blob_recv(kid_fd[REQ], &ep[REQ], sizeof(ep[REQ]), "the requester's endpoint");
	mp_blob_recv(kid_fd[RESP], &ep[RESP], sizeof(ep[RESP]), "the responder's endpoint");
	mp_blob_send(kid_fd[REQ], &ep[RESP], sizeof(ep[RESP]));
	mp_blob_send(kid_fd[RESP], &ep[REQ], sizeof(ep[REQ]));
	mp_expect(kid_fd[REQ], 'C', "the requester connected");
	mp_expect(kid_fd[RESP], 'C', "the responder connected");
	/* the fabric connection's handshake needs both running */
	mp_send(kid_fd[REQ], 'U');
	mp_expect(kid_fd[REQ], 'u', "the warm-up READ");
}

static void reap(int k, bool killed)
{
	uint64_t deadline = t_now_ms() + MP_WAIT_MS;
	int st = 0;

	if (!killed)
		mp_send(kid_fd[k], 'Q');
	while (waitpid(kids[k], &st, WNOHANG) != kids[k]) {
		if (t_now_ms() > deadline)
			T_FAIL("child %d did not exit within %d ms", k, MP_WAIT_MS);
		t_sleep_ms(5);
	}
	kids[k] = 0;
	if (killed)
		return;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		T_FAIL("child %d ended with status 0x%x", k, st);
}

static const char *op_name(char op)
{
	return op == 'D' ? "READ" : "WRITE";
}

static struct result op_run(char op)
{
	struct result r;

	mp_send(kid_fd[REQ], op);
	mp_expect(kid_fd[REQ], 'p', "the post");
	mp_blob_recv(kid_fd[REQ], &r, sizeof(r), "the requester's result");
	return r;
}

/* op must end in RETRY_EXC_ERR within the bound; then back to RTS. */
static void expect_retry_exc(const char *why, char op)
{
	uint64_t bound = (RETRIES + 1) * timeout_ms();
	struct result r;

	t_case("%s: %s", why, op_name(op));
	r = op_run(op);
	printf("%s: %s ended in %s after %u ms ((R+1) x T = %llu ms)\n", why, op_name(op),
	       t_wc_status_str(r.status), r.elapsed_ms, (unsigned long long)bound);
	CHECK_EQ(r.status, IBV_WC_RETRY_EXC_ERR);
	if (r.elapsed_ms + LATE_MS / 10 < bound)
		T_FAIL("%s: %s gave up after %u ms, before (R+1) x T = %llu ms", why, op_name(op),
		       r.elapsed_ms, (unsigned long long)bound);
	if (r.elapsed_ms > bound + LATE_MS)
		T_FAIL("%s: %s gave up after %u ms, later than %llu ms + %d ms", why, op_name(op),
		       r.elapsed_ms, (unsigned long long)bound, LATE_MS);
	mp_send(kid_fd[REQ], 'R');
	mp_expect(kid_fd[REQ], 'r', "the requester's reconnect");
}

/* The responder stopped for stop_ms while op waits: it must succeed, and
 * only after the responder ran again. */
static void expect_success(const char *why, char op, unsigned stop_ms)
{
	uint64_t stopped;
	struct result r;

	t_case("%s: %s, peer stopped %u ms", why, op_name(op), stop_ms);
	mp_stop(kids[RESP]);
	stopped = t_now_ms();
	mp_send(kid_fd[REQ], op);
	mp_expect(kid_fd[REQ], 'p', "the post");
	while (t_now_ms() - stopped < stop_ms)
		t_sleep_ms(1);
	CHECK_OK(kill(kids[RESP], SIGCONT));
	mp_blob_recv(kid_fd[REQ], &r, sizeof(r), "the requester's result");
	printf("%s: %s ended in %s after %u ms (peer stopped %u ms, T = %llu ms, R = %d)\n", why,
	       op_name(op), t_wc_status_str(r.status), r.elapsed_ms, stop_ms,
	       (unsigned long long)timeout_ms(), RETRIES);
	CHECK_EQ(r.status, IBV_WC_SUCCESS);
	if (r.elapsed_ms + 50 < stop_ms)
		T_FAIL("%s: %s done after %u ms, while the peer was stopped", why, op_name(op),
		       r.elapsed_ms);
}

static void case_kill(void)
{
	start(RETRIES);
	t_case("kill the responder");
	mp_kill(kids[RESP]);
	kids[RESP] = 0;
	expect_retry_exc("killed peer", 'W');
	expect_retry_exc("killed peer", 'D');
	reap(REQ, false);
}

static void case_stop_long(void)
{
	start(RETRIES);
	t_case("stop the responder");
	mp_stop(kids[RESP]);
	expect_retry_exc("stopped peer", 'W');
	expect_retry_exc("stopped peer", 'D');
	CHECK_OK(kill(kids[RESP], SIGCONT));
	reap(REQ, false);
	reap(RESP, false);
}

static void case_stop_short(void)
{
	start(0);
	expect_success("briefly stopped peer", 'W', (unsigned)timeout_ms() / 4);
	expect_success("briefly stopped peer", 'D', (unsigned)timeout_ms() / 4);
	reap(REQ, false);
	reap(RESP, false);
}

static void case_slow(void)
{
	start(RETRIES);
	expect_success("slow peer", 'W', (unsigned)(timeout_ms() * 5 / 2));
	expect_success("slow peer", 'D', (unsigned)(timeout_ms() * 5 / 2));
	reap(REQ, false);
	reap(RESP, false);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {{"kill", case_kill},
	                                            {"stop_long", case_stop_long},
	                                            {"stop_short", case_stop_short},
	                                            {"slow", case_slow}};
	struct mp_side s = {0};

	if (argc == 6 && !strcmp(argv[1], "--role") && !strcmp(argv[3], "--fd")) {
		bool requester = !strcmp(argv[2], "requester");

		s.role = requester ? "requester" : "responder";
		s.fd = atoi(argv[4]);
		return run_child(&s, requester, atoi(argv[5]));
	}
	T_RUN_CASES(cases, argc, argv);
	printf("PASS\n");
	return T_EXIT_PASS;
}
