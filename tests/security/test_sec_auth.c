// SPDX-License-Identifier: MIT
/*
 * Two processes, each with its own idea of the job's secret.
 *
 *   test_sec_auth <scenario>   forks and execs itself as "target" and
 *                              "requester" with the scenario's environment,
 *                              their stderr in files it checks afterwards.
 *
 * The requester runs WRITE, READ, FETCH_ADD, CMP_SWAP and SEND against the
 * target. When the secrets agree every one succeeds with the right bytes;
 * when they do not, every one ends in RETRY_EXC_ERR within the bound, the
 * requester's READ/atomic destinations keep their guard bytes (nothing was
 * read), and the target's memory, counter and receive queue are unchanged
 * (nothing was written).
 *
 *   same_secret   GNIC_EMU_SECRET equal on both sides                -> ok
 *   wrong_secret  GNIC_EMU_SECRET differs                            -> refused
 *   secret_file   one side GNIC_EMU_SECRET=S, the other
 *                 GNIC_EMU_SECRET_FILE holding "S\n" (mode 0600)      -> ok
 *   default_file  neither set, one HOME: the per-user file is made
 *                 on first use (0600, 64 hex digits) and shared       -> ok
 *   other_home    neither set, different HOMEs (another user or
 *                 host): two different per-user secrets               -> refused
 *   file_mode     the per-user file exists with mode 0644             -> refused
 *                 (and the log says why)
 * A refusal must be logged on the requester as "authentication failed"
 * naming the peer's address; the secret itself never appears in a log.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define REGION     65536
#define OFF_W      0     /* target: WRITE lands here; requester: WRITE source */
#define OFF_R      4096  /* target: READ source; requester: READ destination */
#define OFF_CNT    8192  /* target: atomics' counter; requester: their results */
#define OFF_RECV   12288 /* target: receive buffer; requester: SEND source */
#define OP_LEN     256
#define SEND_LEN   64
#define GUARD      0xee
#define COUNTER0   42ull
#define SOCK_MS    30000
#define BOUND_MS   3000 /* 4 tries of 16.8 ms, with plenty of slack */
#define SECRET_A   "gnic-sec-auth-secret-AAAAAAAAAA"
#define SECRET_B   "gnic-sec-auth-secret-BBBBBBBBBB"
#define DEFAULT_RC ".gnic-emu-secret"

struct side {
	const char *role;
	bool ok; /* the scenario expects the operations to succeed */
	int sock;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct t_ep peer;
	struct t_conn_opts opts;
};

/* ---- socket to the other side: every wait bounded ------------------------ */

static void sock_send(struct side *s, char c)
{
	if (write(s->sock, &c, 1) != 1)
		T_FAIL("%s: socket write: %s", s->role, strerror(errno));
}

static void sock_recv(struct side *s, void *buf, size_t len, const char *what)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = s->sock, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, SOCK_MS) <= 0)
			T_FAIL("%s: no word from the other side within %d ms (%s)", s->role,
			       SOCK_MS, what);
		n = read(s->sock, p, len);
		if (n <= 0)
			T_FAIL("%s: the other side closed the socket (%s)", s->role, what);
		p += n;
		len -= (size_t)n;
	}
}

static void wait_for(struct side *s, char want, const char *what)
{
	char c = 0;

	sock_recv(s, &c, 1, what);
	if (c != want)
		T_FAIL("%s: got '%c' from the other side, want '%c' (%s)", s->role, c, want, what);
}

/* ---- both sides ---------------------------------------------------------- */

static void side_setup(struct side *s)
{
	struct t_qp_caps caps;
	struct t_ep ep;

	t_case("%s: setup", s->role);
	s->ctx = t_open(T_DEVICE);
	s->pd = CHECK_PTR(ibv_alloc_pd(s->ctx));
	s->cq = t_cq(s->ctx, 64);
	t_qp_caps_default(&caps);
	s->qp = t_qp(s->pd, s->cq, s->cq, &caps, NULL);
	s->buf = t_alloc(REGION, GUARD);
	s->mr = t_reg(s->pd, s->buf, REGION, T_ACCESS_ALL);
	t_conn_opts_default(&s->opts);
	s->opts.timeout = 12; /* 16.8 ms */
	s->opts.retry_cnt = 3;
	t_local_ep(s->qp, &ep);
	ep.rkey = s->mr->rkey;
	ep.addr = (uintptr_t)s->buf;
	ep.len = REGION;
	if (write(s->sock, &ep, sizeof(ep)) != (ssize_t)sizeof(ep))
		T_FAIL("%s: socket write: %s", s->role, strerror(errno));
	sock_recv(s, &s->peer, sizeof(s->peer), "the other side's endpoint");
	t_connect(s->qp, &s->peer, &s->opts);
}

static void side_teardown(struct side *s)
{
	CHECK_OK(ibv_destroy_qp(s->qp));
	CHECK_OK(ibv_dereg_mr(s->mr));
	CHECK_OK(ibv_destroy_cq(s->cq));
	CHECK_OK(ibv_dealloc_pd(s->pd));
	CHECK_OK(ibv_close_device(s->ctx));
	free(s->buf);
}

/* ---- target -------------------------------------------------------------- */

static int run_target(struct side *s)
{
	uint8_t want[OP_LEN];
	struct ibv_wc wc;

	side_setup(s);
	t_fill(s->buf + OFF_R, OP_LEN, 21);
	*(uint64_t *)(s->buf + OFF_CNT) = COUNTER0;
	t_post_recv_buf(s->qp, 9, s->buf + OFF_RECV, OP_LEN, s->mr->lkey);
	sock_send(s, 'C');
	wait_for(s, 'D', "the requester's end");

	t_case("%s: what the requester left in this memory", s->role);
	if (s->ok) {
		t_fill(want, OP_LEN, 11);
		CHECK_MEM(s->buf + OFF_W, want, OP_LEN);
		CHECK_EQ(*(uint64_t *)(s->buf + OFF_CNT), 1000);
		wc = t_poll1(s->cq, "the SEND's receive");
		CHECK_WC(&wc, 9, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, SEND_LEN);
		t_fill(want, SEND_LEN, 12);
		CHECK_MEM(s->buf + OFF_RECV, want, SEND_LEN);
	} else {
		CHECK_BYTES(s->buf + OFF_W, GUARD, OFF_R - OFF_W);
		CHECK_EQ(*(uint64_t *)(s->buf + OFF_CNT), COUNTER0);
		CHECK_BYTES(s->buf + OFF_CNT + 8, GUARD, OFF_RECV - OFF_CNT - 8);
		CHECK_BYTES(s->buf + OFF_RECV, GUARD, REGION - OFF_RECV);
		t_expect_empty(s->cq, "no receive may complete");
		CHECK_EQ(t_qp_state(s->qp), IBV_QPS_RTS);
	}
	t_fill(want, OP_LEN, 21);
	CHECK_MEM(s->buf + OFF_R, want, OP_LEN);
	sock_send(s, 'K');
	side_teardown(s);
	printf("%s: PASS\n", s->role);
	return T_EXIT_PASS;
}

/* ---- requester ----------------------------------------------------------- */

struct op {
	const char *name;
	enum ibv_wr_opcode opcode;
	enum ibv_wc_opcode wc_opcode;
	size_t loff; /* local buffer */
	uint32_t len;
	size_t roff; /* remote */
	uint64_t add_or_cmp, swap;
};

static const struct op ops[] = {
    {"WRITE", IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, OFF_W, OP_LEN, OFF_W, 0, 0},
    {"READ", IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, OFF_R, OP_LEN, OFF_R, 0, 0},
    {"FETCH_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD, OFF_CNT, 8, OFF_CNT, 5, 0},
    {"CMP_SWAP", IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WC_COMP_SWAP, OFF_CNT + 8, 8, OFF_CNT, COUNTER0 + 5,
     1000},
    {"SEND", IBV_WR_SEND, IBV_WC_SEND, OFF_RECV, SEND_LEN, 0, 0, 0},
};

static void run_op(struct side *s, const struct op *o, uint64_t id)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)s->buf + o->loff, .length = o->len, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = id,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = o->opcode,
	                         .send_flags = IBV_SEND_SIGNALED};
	uint64_t start = t_now_ms();
	struct ibv_wc wc;

	t_case("%s: %s", s->role, o->name);
	if (o->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || o->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = s->peer.addr + o->roff;
		wr.wr.atomic.rkey = s->peer.rkey;
		wr.wr.atomic.compare_add = o->add_or_cmp;
		wr.wr.atomic.swap = o->swap;
	} else if (o->opcode != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = s->peer.addr + o->roff;
		wr.wr.rdma.rkey = s->peer.rkey;
	}
	t_post_send(s->qp, &wr);
	t_poll_timeout(s->cq, 1, &wc, s->ok ? T_WAIT_MS : BOUND_MS, o->name);
	if (s->ok) {
		CHECK_WC(&wc, id, IBV_WC_SUCCESS, o->wc_opcode);
		return;
	}
	CHECK_WC_STATUS(&wc, id, IBV_WC_RETRY_EXC_ERR);
	printf("%s: %s: RETRY_EXC_ERR after %llu ms\n", s->role, o->name,
	       (unsigned long long)(t_now_ms() - start));
	/* the QP is in ERR: back to RTS for the next one */
	t_reconnect(s->qp, &s->peer, &s->opts);
}

static int run_requester(struct side *s)
{
	uint8_t want[OP_LEN];

	side_setup(s);
	t_fill(s->buf + OFF_W, OP_LEN, 11);
	t_fill(s->buf + OFF_RECV, SEND_LEN, 12);
	wait_for(s, 'C', "the target's receive");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		run_op(s, &ops[i], 100 + i);

	t_case("%s: what came back", s->role);
	if (s->ok) {
		t_fill(want, OP_LEN, 21);
		CHECK_MEM(s->buf + OFF_R, want, OP_LEN);
		CHECK_EQ(*(uint64_t *)(s->buf + OFF_CNT), COUNTER0);
		CHECK_EQ(*(uint64_t *)(s->buf + OFF_CNT + 8), COUNTER0 + 5);
	} else { /* nothing was read: the destinations keep their guard bytes */
		CHECK_BYTES(s->buf + OFF_R, GUARD, OFF_CNT - OFF_R);
		CHECK_BYTES(s->buf + OFF_CNT, GUARD, OFF_RECV - OFF_CNT);
	}
	sock_send(s, 'D');
	wait_for(s, 'K', "the target's verdict");
	side_teardown(s);
	printf("%s: PASS\n", s->role);
	return T_EXIT_PASS;
}

/* ---- orchestration ------------------------------------------------------- */

struct env {
	const char *secret, *secret_file, *home;
};

struct scenario {
	const char *name;
	bool ok;
	struct env target, requester;
	bool make_home_file; /* pre-create <home>/.gnic-emu-secret with mode 0644 */
};

static char tmp[64];

static char *path(const char *rel)
{
	static char buf[4][256];
	static int i;
	char *p = buf[i++ % 4];

	snprintf(p, 256, "%s/%s", tmp, rel);
	return p;
}

static void write_file(const char *p, const char *text, mode_t mode)
{
	FILE *f = fopen(p, "w");

	CHECK(f != NULL);
	CHECK(fputs(text, f) >= 0);
	CHECK_EQ(fclose(f), 0);
	CHECK_EQ(chmod(p, mode), 0);
}

static pid_t spawn(const char *role, bool ok, const struct env *e, int fd, int other_fd)
{
	char fdstr[16], log[256];
	pid_t pid = fork();
	int lfd;

	if (pid < 0)
		T_FAIL("fork: %s", strerror(errno));
	if (pid)
		return pid;
	close(other_fd);
	unsetenv("GNIC_EMU_SECRET");
	unsetenv("GNIC_EMU_SECRET_FILE");
	if (e->secret)
		setenv("GNIC_EMU_SECRET", e->secret, 1);
	if (e->secret_file)
		setenv("GNIC_EMU_SECRET_FILE", path(e->secret_file), 1);
	if (e->home)
		setenv("HOME", path(e->home), 1);
	snprintf(log, sizeof(log), "%s/%s.log", tmp, role);
	lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (lfd < 0 || dup2(lfd, 2) < 0)
		_exit(126);
	snprintf(fdstr, sizeof(fdstr), "%d", fd);
	execl("/proc/self/exe", "test_sec_auth", "--role", role, "--fd", fdstr, "--want",
	      ok ? "ok" : "refuse", (char *)NULL);
	_exit(127);
}

static char *slurp(const char *p)
{
	static char buf[2][65536];
	static int i;
	char *b = buf[i++ % 2];
	FILE *f = fopen(p, "r");
	size_t n = 0;

	if (f) {
		n = fread(b, 1, sizeof(buf[0]) - 1, f);
		fclose(f);
	}
	b[n] = 0;
	return b;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Run both sides; returns after both exited 0, with their logs read. */
static void run_pair(const struct scenario *sc, char **tlog, char **rlog)
{
	int sv[2], st[2] = {0, 0};
	bool done[2] = {false, false};
	uint64_t deadline = t_now_ms() + 60000;
	pid_t pid[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		T_FAIL("socketpair: %s", strerror(errno));
	pid[0] = spawn("target", sc->ok, &sc->target, sv[0], sv[1]);
	pid[1] = spawn("requester", sc->ok, &sc->requester, sv[1], sv[0]);
	close(sv[0]);
	close(sv[1]);
	while (!done[0] || !done[1]) {
		for (int i = 0; i < 2; i++)
			if (!done[i] && waitpid(pid[i], &st[i], WNOHANG) == pid[i])
				done[i] = true;
		if (t_now_ms() > deadline) {
			for (int i = 0; i < 2; i++)
				if (!done[i]) {
					kill(pid[i], SIGKILL);
					waitpid(pid[i], &st[i], 0);
				}
			T_FAIL("%s: the processes did not finish within 60 s", sc->name);
		}
		t_sleep_ms(5);
	}
	*tlog = slurp(path("target.log"));
	*rlog = slurp(path("requester.log"));
	printf("---- target's stderr\n%s---- requester's stderr\n%s----\n", *tlog, *rlog);
	for (int i = 0; i < 2; i++)
		if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]))
			T_FAIL("%s: the %s failed (status 0x%x)", sc->name,
			       i ? "requester" : "target", st[i]);
}

static void check_default_file(const char *home, char *content)
{
	char p[300];
	struct stat sb;
	char *text;

	snprintf(p, sizeof(p), "%s/%s", path(home), DEFAULT_RC);
	if (stat(p, &sb))
		T_FAIL("no per-user secret file %s: %s", p, strerror(errno));
	CHECK_EQ(sb.st_mode & 07777, 0600);
	CHECK_EQ(sb.st_uid, geteuid());
	CHECK_EQ(sb.st_size, 65);
	text = slurp(p);
	for (int i = 0; i < 64; i++)
		CHECK(strchr("0123456789abcdef", text[i]) != NULL);
	CHECK_EQ(text[64], '\n');
	if (content)
		strcpy(content, text);
}

static const struct scenario scenarios[] = {
    {"same_secret", true, {SECRET_A, NULL, "home"}, {SECRET_A, NULL, "home"}, false},
    {"wrong_secret", false, {SECRET_A, NULL, "home"}, {SECRET_B, NULL, "home"}, false},
    {"secret_file", true, {SECRET_A, NULL, "home"}, {NULL, "secret.txt", "home"}, false},
    {"default_file", true, {NULL, NULL, "home"}, {NULL, NULL, "home"}, false},
    {"other_home", false, {NULL, NULL, "home"}, {NULL, NULL, "home2"}, false},
    {"file_mode", false, {NULL, NULL, "home"}, {NULL, NULL, "home"}, true},
};

static void cleanup(void)
{
	static const char *files[] = {"target.log", "requester.log", "secret.txt",
	                              "home/" DEFAULT_RC, "home2/" DEFAULT_RC};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(path(files[i]));
	rmdir(path("home"));
	rmdir(path("home2"));
	rmdir(tmp);
}

static int orchestrate(const struct scenario *sc)
{
	char *tlog, *rlog, one[128], two[128];

	snprintf(tmp, sizeof(tmp), "/tmp/gnic-sec-auth-XXXXXX");
	if (!mkdtemp(tmp))
		T_FAIL("mkdtemp: %s", strerror(errno));
	atexit(cleanup);
	CHECK_EQ(mkdir(path("home"), 0700), 0);
	CHECK_EQ(mkdir(path("home2"), 0700), 0);
	write_file(path("secret.txt"), SECRET_A "\n", 0600);
	if (sc->make_home_file)
		write_file(path("home/" DEFAULT_RC), SECRET_A "\n", 0644);

	t_case("%s", sc->name);
	run_pair(sc, &tlog, &rlog);
	CHECK(!strstr(tlog, SECRET_A) && !strstr(rlog, SECRET_A));
	CHECK(!strstr(tlog, SECRET_B) && !strstr(rlog, SECRET_B));
	if (sc->ok) {
		CHECK_EQ(count(tlog, "authentication failed"), 0);
		CHECK_EQ(count(rlog, "authentication failed"), 0);
	} else if (sc->make_home_file) {
		CHECK(strstr(rlog, "has mode 0644") && strstr(rlog, "refusing it"));
		CHECK(strstr(tlog, "has mode 0644") && strstr(tlog, "refusing it"));
		CHECK(strstr(rlog, "every fabric connection will be refused"));
	} else {
		/* one line however many connections the QP's retries and
		 * reconnects opened (one per peer and 5 s) */
		CHECK_EQ(count(rlog, "authentication failed: wrong secret"), 1);
		CHECK(strstr(rlog, "fabric: connection to 127."));
		CHECK_EQ(count(tlog, "authentication failed: wrong secret"), 1);
	}
	if (!strcmp(sc->name, "default_file"))
		check_default_file("home", NULL);
	if (!strcmp(sc->name, "other_home")) {
		check_default_file("home", one);
		check_default_file("home2", two);
		CHECK(strcmp(one, two) != 0);
	}
	printf("%s: PASS\n", sc->name);
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	struct side s = {0};

	if (argc == 7 && !strcmp(argv[1], "--role") && !strcmp(argv[3], "--fd") &&
	    !strcmp(argv[5], "--want")) {
		s.role = !strcmp(argv[2], "target") ? "target" : "requester";
		s.sock = atoi(argv[4]);
		s.ok = !strcmp(argv[6], "ok");
		return s.role[0] == 't' ? run_target(&s) : run_requester(&s);
	}
	for (size_t i = 0; argc == 2 && i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(argv[1], scenarios[i].name))
			return orchestrate(&scenarios[i]);
	fprintf(stderr,
	        "usage: %s SCENARIO (same_secret wrong_secret secret_file default_file "
	        "other_home file_mode)\n",
	        argv[0]);
	return T_EXIT_FAIL;
}
