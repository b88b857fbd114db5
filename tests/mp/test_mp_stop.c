// SPDX-License-Identifier: MIT
/*
 * A requester that is stopped (SIGSTOP) for longer than its ACK timeout,
 * with retry_cnt 0, while the answer to its WRITE (the ACK) or READ (the
 * response) already waits in its socket: when it runs again the answer must
 * count, not the timer that expired while it was stopped. The WRITE or READ
 * completes with SUCCESS (the READ with the peer's bytes), never
 * RETRY_EXC_ERR: a local engine that did not run is not a dead peer.
 *
 *   test_mp_stop   forks and execs itself as "requester" and "responder",
 *                  each joined to this parent by a socketpair; the parent
 *                  relays the endpoints and stops and continues the two.
 *
 * Each round (WRITEs and READs in turn): the responder is stopped; the
 * requester posts one signaled WRITE or READ and, once its engine has sent
 * it, is stopped too; the responder continues, executes it (for a WRITE its
 * main thread sees the bytes land) and answers; when more than twice the
 * timeout has passed since the post, the requester continues and reports
 * the completion. A round counts only when the requester was stopped well
 * within its timeout and the answer was seen waiting in its socket (its
 * receive queue in /proc/net/tcp, so over TCP: CTest sets
 * GNIC_EMU_FABRIC_LOCAL=0) while it was stopped: then only the ordering of
 * answer and timer decides.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "mp_common.h"

#define ROUNDS        8 /* even: WRITE, odd: READ */
#define MIN_COUNTED   6
#define WRITE_LEN     64
#define TIMEOUT_EXP   16                   /* 4.096 us << 16 = 268 ms */
#define SEND_GRACE_MS 20                   /* for the requester's engine to send the WRITE */
#define ACK_GRACE_MS  50                   /* for the responder's engine to flush the ACK */
#define ANSWER_MS     2000                 /* for the answer to reach the requester's socket */
#define WARM_OFF      (ROUNDS * WRITE_LEN) /* warm-up WRITEs land here */
#define REGION        (WARM_OFF + WRITE_LEN)

static uint64_t timeout_ms(void)
{
	return ((4096ull << TIMEOUT_EXP) + 999999) / 1000000;
}

/* ---- the two children ----------------------------------------------------- */

static uint32_t seed_of(int round)
{
	return 700 + (uint32_t)round;
}

static bool is_read(int round)
{
	return round % 2 == 1;
}

static void side_setup(struct mp_side *s)
{
	/* retry_cnt 0: the first expiry is fatal, no retransmission hides it */
	mp_side_open(s, REGION, TIMEOUT_EXP, 0);
	/* what the READ rounds read from the responder, in place before the
	 * engine can see the QP (written later, it would race the engine's
	 * read for ThreadSanitizer: the ordering runs through the parent) */
	for (int r = 0; r < ROUNDS; r++)
		if (is_read(r))
			t_fill(s->buf + (size_t)r * WRITE_LEN, WRITE_LEN, seed_of(r));
	mp_side_connect(s, REGION);
}

/* A signaled WRITE of our bytes at off to the peer's off, or a READ of the
 * peer's into ours. */
static void post_op(struct mp_side *s, uint64_t wr_id, size_t off, bool read)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)s->buf + off, .length = WRITE_LEN, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
	                         .send_flags = IBV_SEND_SIGNALED};

	wr.wr.rdma.remote_addr = s->peer.addr + off;
	wr.wr.rdma.rkey = s->peer.rkey;
	t_post_send(s->qp, &wr);
}

/* One WRITE both engines run freely for: the fabric connection is up (its
 * handshake needs both processes running) before a round stops anyone. */
static void requester_warm_up(struct mp_side *s)
{
	struct ibv_wc wc;

	t_case("%s: warm-up WRITE", s->role);
	post_op(s, ~0ull, WARM_OFF, false);
	wc = t_poll1(s->scq, "the warm-up WRITE");
	CHECK_WC(&wc, ~0ull, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	mp_send(s->fd, 'u');
}

/* Post the round's WRITE or READ, say so, then report its completion status
 * (a READ's bytes checked). */
static void requester_round(struct mp_side *s, int round)
{
	size_t off = (size_t)round * WRITE_LEN;
	bool read = is_read(round);
	struct ibv_wc wc;

	t_case("%s: round %d (%s)", s->role, round, read ? "READ" : "WRITE");
	if (read)
		memset(s->buf + off, 0, WRITE_LEN);
	else
		t_fill(s->buf + off, WRITE_LEN, seed_of(round));
	post_op(s, (uint64_t)round, off, read);
	mp_send(s->fd, 'p');
	wc = t_poll1(s->scq, read ? "the READ" : "the WRITE");
	CHECK_EQ(wc.wr_id, (uint64_t)round);
	if (wc.status != IBV_WC_SUCCESS) {
		printf("%s: round %d: %s\n", s->role, round, t_wc_status_str(wc.status));
	} else if (read) {
		uint8_t want[WRITE_LEN];

		t_fill(want, WRITE_LEN, seed_of(round));
		CHECK_MEM(s->buf + off, want, WRITE_LEN);
	}
	mp_send(s->fd, (char)('A' + wc.status));
}

/* Our engine thread stores the bytes while we look: atomic loads. */
static bool landed(const uint8_t *dst, const uint8_t *want)
{
	for (int i = 0; i < WRITE_LEN; i++)
		if (__atomic_load_n(&dst[i], __ATOMIC_ACQUIRE) != want[i])
			return false;
	return true;
}

/* WRITE: wait (bounded) for the round's bytes to land, then say so. READ:
 * the bytes are in place since setup; nothing to watch (the engine answers
 * alone). */
static void responder_round(struct mp_side *s, int round)
{
	const uint8_t *dst = s->buf + (size_t)round * WRITE_LEN;
	uint64_t deadline = t_now_ms() + MP_WAIT_MS;
	uint8_t want[WRITE_LEN];

	t_case("%s: round %d", s->role, round);
	t_fill(want, WRITE_LEN, seed_of(round));
	mp_send(s->fd, 'w');
	while (!landed(dst, want)) {
		if (t_now_ms() > deadline)
			T_FAIL("round %d: the WRITE did not land within %d ms", round, MP_WAIT_MS);
		t_sleep_ms(1);
	}
	mp_send(s->fd, 'l');
}

static int run_child(struct mp_side *s, bool requester)
{
	side_setup(s);
	for (;;) {
		char c = mp_recv(s->fd, "the parent's next command");

		if (c == 'Q')
			break;
		if (c == 'R') { /* after a failed round: both QPs back to RTS */
			t_case("%s: reconnect", s->role);
			t_reconnect(s->qp, &s->peer, &s->opts);
			mp_send(s->fd, 'r');
			continue;
		}
		if (c == 'U' && requester) {
			requester_warm_up(s);
			continue;
		}
		if (c < '0' || c >= '0' + ROUNDS)
			T_FAIL("%s: unknown command '%c'", s->role, c);
		if (requester)
			requester_round(s, c - '0');
		else
			responder_round(s, c - '0');
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
	for (int i = 0; i < 2; i++) {
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
	}
}

static void sleep_until(uint64_t t_ms)
{
	uint64_t now = t_now_ms();

	if (now < t_ms)
		t_sleep_ms((unsigned)(t_ms - now));
}

/* Wait (bounded) until bytes wait in pid's TCP sockets; when they did, how
 * long that took, else -1. */
static long answer_queued(pid_t pid)
{
	uint64_t start = t_now_ms();

	while (t_now_ms() - start < ANSWER_MS) {
		if (mp_rx_queued(pid) > 0)
			return (long)(t_now_ms() - start);
		t_sleep_ms(1);
	}
	return -1;
}

/* One round; returns whether it counts (see the top), *status = the WC's. */
static bool round_run(int round, int *status)
{
	const char *op = is_read(round) ? "READ" : "WRITE";
	uint64_t posted, stopped, landed_at = 0;
	char cmd = (char)('0' + round), c;
	long queued;
	bool counts;

	t_case("round %d (%s)", round, op);
	mp_send(kid_fd[RESP], cmd);
	mp_expect(kid_fd[RESP], 'w', "the responder watching its buffer");
	mp_stop(kids[RESP]);
	mp_send(kid_fd[REQ], cmd);
	mp_expect(kid_fd[REQ], 'p', "the requester's post");
	posted = t_now_ms();
	t_sleep_ms(SEND_GRACE_MS);
	mp_stop(kids[REQ]);
	stopped = t_now_ms();
	counts = stopped - posted < timeout_ms() / 2;
	CHECK_OK(kill(kids[RESP], SIGCONT));
	c = mp_recv_within(kid_fd[RESP], ANSWER_MS, "the WRITE landing");
	if (c == 'l')
		landed_at = t_now_ms();
	else if (c)
		T_FAIL("responder said '%c', expected 'l'", c);
	queued = landed_at ? answer_queued(kids[REQ]) : -1;
	counts = counts && queued >= 0;
	sleep_until(posted + 2 * timeout_ms() + ACK_GRACE_MS);
	printf("round %d: requester stopped %llu ms after the post of its %s, %s, continued "
	       "after %llu ms (timeout %llu ms)\n",
	       round, (unsigned long long)(stopped - posted), op,
	       queued >= 0 ? "the answer waited in its socket" : "no answer seen",
	       (unsigned long long)(t_now_ms() - posted), (unsigned long long)timeout_ms());
	CHECK_OK(kill(kids[REQ], SIGCONT));
	if (!landed_at)
		mp_expect(kid_fd[RESP], 'l', "the WRITE landing after the requester continued");
	*status = mp_recv(kid_fd[REQ], "the requester's completion") - 'A';
	return counts;
}

static void reconnect_both(void)
{
	/* the responder first: it must expect the first PSN again before the
	 * requester may send it */
	mp_send(kid_fd[RESP], 'R');
	mp_expect(kid_fd[RESP], 'r', "the responder's reconnect");
	mp_send(kid_fd[REQ], 'R');
	mp_expect(kid_fd[REQ], 'r', "the requester's reconnect");
}

static void warm_up(void)
{
	mp_send(kid_fd[REQ], 'U');
	mp_expect(kid_fd[REQ], 'u', "the warm-up WRITE");
}

static void relay_endpoints(void)
{
	struct t_ep ep[2];

	mp_blob_recv(kid_fd[REQ], &ep[REQ], sizeof(ep[REQ]), "the requester's endpoint");
	mp_blob_recv(kid_fd[RESP], &ep[RESP], sizeof(ep[RESP]), "the responder's endpoint");
	mp_blob_send(kid_fd[REQ], &ep[RESP], sizeof(ep[RESP]));
	mp_blob_send(kid_fd[RESP], &ep[REQ], sizeof(ep[REQ]));
	mp_expect(kid_fd[REQ], 'C', "the requester connected");
	mp_expect(kid_fd[RESP], 'C', "the responder connected");
	warm_up();
}

static void reap_kids(void)
{
	for (int i = 0; i < 2; i++) {
		uint64_t deadline = t_now_ms() + MP_WAIT_MS;
		int st = 0;

		while (waitpid(kids[i], &st, WNOHANG) != kids[i]) {
			if (t_now_ms() > deadline)
				T_FAIL("child %d did not exit within %d ms", i, MP_WAIT_MS);
			t_sleep_ms(5);
		}
		kids[i] = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			T_FAIL("child %d ended with status 0x%x", i, st);
	}
}

static int orchestrate(void)
{
	int sv[2][2], counted = 0, failed = 0;

	for (int k = 0; k < 2; k++)
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[k]))
			T_FAIL("socketpair: %s", strerror(errno));
	atexit(kill_kids);
	kids[REQ] = mp_spawn("test_mp_stop", "requester", sv[REQ][1], sv[REQ][0], NULL);
	kids[RESP] = mp_spawn("test_mp_stop", "responder", sv[RESP][1], sv[RESP][0], NULL);
	for (int k = 0; k < 2; k++) {
		close(sv[k][1]);
		kid_fd[k] = sv[k][0];
	}
	relay_endpoints();
	for (int r = 0; r < ROUNDS; r++) {
		int status;
		bool counts = round_run(r, &status);

		printf("round %d: %s%s\n", r, t_wc_status_str(status),
		       counts ? "" : " (does not count: the stop came late or no answer was seen)");
		counted += counts;
		failed += counts && status != IBV_WC_SUCCESS;
		if (status != IBV_WC_SUCCESS) {
			reconnect_both();
			warm_up();
		}
	}
	mp_send(kid_fd[REQ], 'Q');
	mp_send(kid_fd[RESP], 'Q');
	reap_kids();
	t_case("verdict");
	printf("%d of %d rounds counted, %d failed\n", counted, ROUNDS, failed);
	if (failed)
		T_FAIL("%d of %d rounds: the expired timer won over the ACK already waiting",
		       failed, counted);
	CHECK_GE(counted, MIN_COUNTED);
	printf("PASS\n");
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	struct mp_side s = {0};

	if (argc == 5 && !strcmp(argv[1], "--role") && !strcmp(argv[3], "--fd")) {
		bool requester = !strcmp(argv[2], "requester");

		s.role = requester ? "requester" : "responder";
		s.fd = atoi(argv[4]);
		return run_child(&s, requester);
	}
	if (argc != 1) {
		fprintf(stderr, "usage: %s\n", argv[0]);
		return T_EXIT_FAIL;
	}
	return orchestrate();
}
