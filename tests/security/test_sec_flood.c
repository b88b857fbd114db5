// SPDX-License-Identifier: MIT
/*
 * A connection flood against a process with few descriptors, by someone
 * holding no secret. Three processes:
 *
 *   victim   the emulator, RLIMIT_NOFILE 128; two target QPs whose peers
 *            are the legitimate process's two devices
 *   peer     the legitimate process (GNIC_EMU_DEVICES=2), same secret:
 *            device 0's QP connects before the flood, device 1's during it
 *            (a device's first QP to a peer opens its connection at RTR)
 *   flooder  this process: FLOOD_N raw TCP connections to the victim's
 *            listener, held open silently; each one the victim closes is
 *            opened again at once
 *
 * Phases: the peer runs WRITE+READ pairs on its established QP (rate
 * before), the flood starts, then the peer runs them again on that QP (rate
 * during the flood) and on its second QP, whose connection must be made
 * through the flood. Checked:
 *   - the new connection's first operation completes within FIRST_MS, and
 *     every operation completes, with the right bytes;
 *   - the established stream keeps at least 1/RATE_DIV of its rate;
 *   - the flood's connections are shed (closed by the victim), and the
 *     victim says so;
 *   - the victim writes at most LOG_LINES lines to stderr and uses at most
 *     CPU_PCT % of a CPU during the flood.
 *
 *   test_sec_flood caps     the victim has its 128 descriptors: the pending
 *                           handshake bounds do the work
 *   test_sec_flood emfile   the victim's application holds all but
 *                           EMFILE_ROOM of them: accept() fails with EMFILE,
 *                           pending handshakes give up their descriptors
 *   test_sec_flood nofd     ... all of them: every new connection is
 *                           refused (the reserve descriptor), the listener
 *                           backs off; no new connection is possible, the
 *                           established one must go on, the rest as above
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define VICTIM_NOFILE 128
#define FLOOD_N       1000
#define WARMUP_MS     1000 /* the flood runs this long before the peer's next phase */
#define PHASE_MS      1000 /* each rate is measured over this */
#define NEW_OPS       200  /* operations on the connection made during the flood */
#define FIRST_MS      5000 /* its first operation must complete within this */
#define RATE_DIV      10
#define LOG_LINES     30
#define CPU_PCT       60
#define SOCK_MS       30000
#define OP_MS         10000
#define OP_LEN        4096
#define REGION        65536
#define GUARD         0xee
#define SECRET        "gnic-sec-flood-secret-0123456789"
#define EMFILE_ROOM   8

/* ---- socket to the orchestrator: every wait bounded ---------------------- */

static void sock_put(int fd, const void *p, size_t len)
{
	if (write(fd, p, len) != (ssize_t)len)
		T_FAIL("socket write: %s", strerror(errno));
}

/* false when the other side closed it or said nothing within SOCK_MS. */
static bool sock_try_get(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, SOCK_MS) <= 0)
			return false;
		n = read(fd, p, len);
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static void sock_get(int fd, void *buf, size_t len, const char *what)
{
	if (!sock_try_get(fd, buf, len))
		T_FAIL("no word from the other side within %d ms, or it closed the socket (%s)",
		       SOCK_MS, what);
}

static void wait_for(int fd, char want, const char *what)
{
	char c = 0;

	sock_get(fd, &c, 1, what);
	if (c != want)
		T_FAIL("got '%c', want '%c' (%s)", c, want, what);
}

static uint64_t cpu_us(void)
{
	struct rusage ru;

	CHECK_EQ(getrusage(RUSAGE_SELF, &ru), 0);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* ---- one side's QP -------------------------------------------------------- */

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct t_ep peer;
};

static void end_open(struct end *e, const char *dev, struct t_ep *ep)
{
	struct t_qp_caps caps;

	e->ctx = t_open(dev);
	e->pd = CHECK_PTR(ibv_alloc_pd(e->ctx));
	e->cq = t_cq(e->ctx, 64);
	t_qp_caps_default(&caps);
	e->qp = t_qp(e->pd, e->cq, e->cq, &caps, NULL);
	e->buf = t_alloc(REGION, GUARD);
	e->mr = t_reg(e->pd, e->buf, REGION, T_ACCESS_ALL);
	t_local_ep(e->qp, ep);
	ep->rkey = e->mr->rkey;
	ep->addr = (uintptr_t)e->buf;
	ep->len = REGION;
}

static void end_connect(struct end *e, const struct t_ep *peer)
{
	struct t_conn_opts o;

	t_conn_opts_default(&o);
	o.timeout = 17; /* 537 ms, 8 tries: 4.3 s for a connection to come up */
	o.retry_cnt = 7;
	e->peer = *peer;
	t_connect(e->qp, &e->peer, &o);
}

static void end_close(struct end *e)
{
	CHECK_OK(ibv_destroy_qp(e->qp));
	CHECK_OK(ibv_dereg_mr(e->mr));
	CHECK_OK(ibv_destroy_cq(e->cq));
	CHECK_OK(ibv_dealloc_pd(e->pd));
	CHECK_OK(ibv_close_device(e->ctx));
	free(e->buf);
}

/* One operation: a WRITE of OP_LEN bytes of pattern i to the peer, then a
 * READ of them back, compared. */
static void op(struct end *e, uint32_t i)
{
	uint8_t *src = e->buf, *dst = e->buf + OP_LEN;
	struct ibv_sge ws = {.addr = (uintptr_t)src, .length = OP_LEN, .lkey = e->mr->lkey};
	struct ibv_sge rs = {.addr = (uintptr_t)dst, .length = OP_LEN, .lkey = e->mr->lkey};
	struct ibv_send_wr w = {.wr_id = 2 * (uint64_t)i,
	                        .sg_list = &ws,
	                        .num_sge = 1,
	                        .opcode = IBV_WR_RDMA_WRITE,
	                        .send_flags = IBV_SEND_SIGNALED,
	                        .wr.rdma = {.remote_addr = e->peer.addr, .rkey = e->peer.rkey}};
	struct ibv_send_wr r = w;
	struct ibv_wc wc[2];

	r.wr_id = w.wr_id + 1;
	r.sg_list = &rs;
	r.opcode = IBV_WR_RDMA_READ;
	t_fill(src, OP_LEN, i);
	memset(dst, 0, OP_LEN);
	t_post_send(e->qp, &w);
	t_post_send(e->qp, &r);
	t_poll_timeout(e->cq, 2, wc, OP_MS, "a WRITE and a READ");
	CHECK_WC(&wc[0], w.wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_WC(&wc[1], r.wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(dst, src, OP_LEN);
}

/* Operations for ms milliseconds; returns how many per second. */
static double ops_for(struct end *e, unsigned ms, uint32_t *seq)
{
	uint64_t start = t_now_ms(), n = 0;

	while (t_now_ms() - start < ms) {
		op(e, (*seq)++);
		n++;
	}
	return (double)n * 1000.0 / (double)(t_now_ms() - start);
}

/* ---- the two emulator processes ------------------------------------------ */

struct peer_report {
	double rate_before, rate_during;
	uint64_t first_ms, new_ms; /* the new connection's first op, all NEW_OPS */
};

/* Hold every free descriptor but room (the application near its limit). */
static void hog_fds(int room)
{
	static int fds[VICTIM_NOFILE];
	int n = 0;

	while (n < VICTIM_NOFILE && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	CHECK_EQ(errno, EMFILE);
	while (room-- > 0 && n > 0)
		close(fds[--n]);
	printf("victim: holding %d descriptors\n", n);
}

static int run_victim(int fd, int room)
{
	struct end e[2];
	struct t_ep ep[2], peer[2];
	uint64_t cpu;

	t_case("victim: setup");
	for (int i = 0; i < 2; i++)
		end_open(&e[i], T_DEVICE, &ep[i]);
	sock_put(fd, ep, sizeof(ep));
	sock_get(fd, peer, sizeof(peer), "the peer's endpoints");
	for (int i = 0; i < 2; i++)
		end_connect(&e[i], &peer[i]);
	sock_put(fd, "R", 1);
	/* once the peer's first connection is up: it keeps its descriptor */
	wait_for(fd, 'H', "the flood's start");
	if (room >= 0)
		hog_fds(room);
	sock_put(fd, "h", 1);
	wait_for(fd, 'F', "the flood's start");
	cpu = cpu_us();
	sock_put(fd, &cpu, sizeof(cpu));
	wait_for(fd, 'D', "the end");
	cpu = cpu_us();
	sock_put(fd, &cpu, sizeof(cpu));
	for (int i = 0; i < 2; i++)
		end_close(&e[i]);
	return T_EXIT_PASS;
}

static int run_peer(int fd)
{
	static const char *devs[2] = {"rocep1s0f0", "rocep1s0f1"};
	struct peer_report rep;
	struct end e[2];
	struct t_ep ep[2], victim[2];
	uint32_t seq = 0;
	uint64_t start;
	char c;

	t_case("peer: setup");
	for (int i = 0; i < 2; i++)
		end_open(&e[i], devs[i], &ep[i]);
	sock_put(fd, ep, sizeof(ep));
	sock_get(fd, victim, sizeof(victim), "the victim's endpoints");
	end_connect(&e[0], &victim[0]);
	wait_for(fd, 'A', "the first phase");
	t_case("peer: the established connection, before the flood");
	rep.rate_before = ops_for(&e[0], PHASE_MS, &seq);
	sock_put(fd, "a", 1);
	sock_get(fd, &c, 1, "the flood");
	t_case("peer: the established connection, during the flood");
	rep.rate_during = ops_for(&e[0], PHASE_MS, &seq);
	rep.first_ms = rep.new_ms = 0;
	if (c == 'B') {
		t_case("peer: a new connection, during the flood");
		start = t_now_ms();
		end_connect(&e[1], &victim[1]); /* RTR dials the victim */
		op(&e[1], seq++);
		rep.first_ms = t_now_ms() - start;
		for (int i = 1; i < NEW_OPS; i++)
			op(&e[1], seq++);
		rep.new_ms = t_now_ms() - start;
	} else {
		end_connect(&e[1], &victim[1]); /* for end_close(); no operation */
	}
	sock_put(fd, &rep, sizeof(rep));
	wait_for(fd, 'D', "the end");
	for (int i = 0; i < 2; i++)
		end_close(&e[i]);
	return T_EXIT_PASS;
}

/* ---- orchestration -------------------------------------------------------- */

static char tmp[64];

static char *path(const char *rel)
{
	static char buf[4][256];
	static int i;
	char *p = buf[i++ % 4];

	snprintf(p, 256, "%s/%s", tmp, rel);
	return p;
}

static void cleanup(void)
{
	unlink(path("victim.log"));
	unlink(path("peer.log"));
	rmdir(tmp);
}

static pid_t spawn(const char *role, int fd, int other_fd, int room)
{
	char fdstr[16], roomstr[16], log[256];
	pid_t pid = fork();
	int lfd;

	if (pid < 0)
		T_FAIL("fork: %s", strerror(errno));
	if (pid)
		return pid;
	close(other_fd);
	setenv("GNIC_EMU_SECRET", SECRET, 1);
	unsetenv("GNIC_EMU_SECRET_FILE");
	if (!strcmp(role, "victim")) {
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl))
			_exit(125);
		rl.rlim_cur = VICTIM_NOFILE;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			_exit(125);
		unsetenv("GNIC_EMU_DEVICES");
	} else {
		setenv("GNIC_EMU_DEVICES", "2", 1);
	}
	snprintf(log, sizeof(log), "%s/%s.log", tmp, role);
	lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (lfd < 0 || dup2(lfd, 2) < 0)
		_exit(126);
	snprintf(fdstr, sizeof(fdstr), "%d", fd);
	snprintf(roomstr, sizeof(roomstr), "%d", room);
	execl("/proc/self/exe", "test_sec_flood", "--role", role, "--fd", fdstr, "--room", roomstr,
	      (char *)NULL);
	_exit(127);
}

/* The flood: FLOOD_N connections, each reopened when the victim closes it. */
static struct {
	struct sockaddr_in to;
	struct pollfd pfd[FLOOD_N + 1]; /* [FLOOD_N]: the peer's socket */
	unsigned opened, shed;
} fl;

static void flood_open(int i)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	fl.pfd[i].fd = fd;
	fl.pfd[i].events = POLLIN;
	if (fd < 0)
		return; /* out of descriptors here: try again next round */
	if (connect(fd, (struct sockaddr *)&fl.to, sizeof(fl.to)) && errno != EINPROGRESS) {
		close(fd);
		fl.pfd[i].fd = -1;
		return;
	}
	fl.opened++;
}

/* Poll the flood and the socket s for ms (or until s is readable): a
 * connection the victim closed is counted and opened again. true if s is
 * readable. */
static bool flood_run(unsigned ms, int s)
{
	uint64_t end = t_now_ms() + ms;

	fl.pfd[FLOOD_N] = (struct pollfd){.fd = s, .events = POLLIN};
	while (t_now_ms() < end) {
		if (poll(fl.pfd, FLOOD_N + 1, 5) < 0 && errno != EINTR)
			T_FAIL("poll: %s", strerror(errno));
		if (s >= 0 && (fl.pfd[FLOOD_N].revents & POLLIN))
			return true;
		for (int i = 0; i < FLOOD_N; i++) {
			uint8_t b[64];

			if (fl.pfd[i].fd < 0) {
				flood_open(i);
				continue;
			}
			if (!(fl.pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (recv(fl.pfd[i].fd, b, sizeof(b), MSG_DONTWAIT) > 0)
				continue; /* the victim never says anything first */
			close(fl.pfd[i].fd);
			fl.shed++;
			flood_open(i);
		}
	}
	return false;
}

static void flood_start(const union ibv_gid *gid)
{
	struct rlimit rl;

	/* this process holds FLOOD_N sockets */
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < FLOOD_N + 64)
		t_skip("RLIMIT_NOFILE hard limit %llu: the flooder needs %d descriptors",
		       (unsigned long long)rl.rlim_max, FLOOD_N + 64);
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur < FLOOD_N + 64) {
		rl.rlim_cur = FLOOD_N + 64;
		CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	memset(&fl.to, 0, sizeof(fl.to));
	fl.to.sin_family = AF_INET;
	fl.to.sin_port = htons(t_fabric_port()); /* the GID's IPv4 address, the fabric port */
	memcpy(&fl.to.sin_addr, &gid->raw[12], 4);
	for (int i = 0; i < FLOOD_N; i++)
		flood_open(i);
}

static void flood_stop(void)
{
	for (int i = 0; i < FLOOD_N; i++)
		if (fl.pfd[i].fd >= 0)
			close(fl.pfd[i].fd);
}

/* Lines in the log, and how many contain needle. */
static unsigned log_lines(const char *p, const char *needle, unsigned *with)
{
	char line[1024];
	unsigned n = 0;
	FILE *f = fopen(p, "r");

	*with = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, needle))
			(*with)++;
	}
	fclose(f);
	return n;
}

static void print_log(const char *p, unsigned max)
{
	char line[1024];
	unsigned n = 0;
	FILE *f = fopen(p, "r");

	while (f && n++ < max && fgets(line, sizeof(line), f))
		fputs(line, stdout);
	if (f)
		fclose(f);
}

/* room: descriptors the victim's application leaves free (-1: all). */
static int orchestrate(int room)
{
	int vs[2], ps[2], st[2];
	struct t_ep vep[2], pep[2];
	struct peer_report rep;
	uint64_t cpu0, cpu1, t0, wall;
	unsigned lines, accept_lines, cpu_pct;
	bool peer_ok;
	pid_t pid[2];

	snprintf(tmp, sizeof(tmp), "/tmp/gnic-sec-flood-XXXXXX");
	if (!mkdtemp(tmp))
		T_FAIL("mkdtemp: %s", strerror(errno));
	atexit(cleanup);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, vs) || socketpair(AF_UNIX, SOCK_STREAM, 0, ps))
		T_FAIL("socketpair: %s", strerror(errno));
	pid[0] = spawn("victim", vs[1], vs[0], room);
	pid[1] = spawn("peer", ps[1], ps[0], room);
	close(vs[1]);
	close(ps[1]);

	t_case("setup: the victim and the peer exchange endpoints");
	sock_get(vs[0], vep, sizeof(vep), "the victim's endpoints");
	sock_get(ps[0], pep, sizeof(pep), "the peer's endpoints");
	sock_put(vs[0], pep, sizeof(pep));
	sock_put(ps[0], vep, sizeof(vep));
	wait_for(vs[0], 'R', "the victim's QPs");

	t_case("before the flood: the peer's established connection");
	sock_put(ps[0], "A", 1);
	wait_for(ps[0], 'a', "the peer's first phase");

	t_case("the flood: %d connections held open", FLOOD_N);
	sock_put(vs[0], "H", 1);
	wait_for(vs[0], 'h', "the victim's descriptors");
	sock_put(vs[0], "F", 1);
	sock_get(vs[0], &cpu0, sizeof(cpu0), "the victim's CPU time");
	t0 = t_now_ms();
	flood_start(&vep[0].gid);
	flood_run(WARMUP_MS, -1);
	printf("flood: %u connections opened, %u shed by the victim after %d ms\n", fl.opened,
	       fl.shed, WARMUP_MS);

	t_case("during the flood: the peer's established and new connections");
	sock_put(ps[0], room ? "B" : "b", 1); /* no descriptor: no new connection */
	peer_ok = flood_run(20000, ps[0]) && sock_try_get(ps[0], &rep, sizeof(rep));
	wall = t_now_ms() - t0;
	printf("flood: %u connections opened, %u shed by the victim in %llu ms\n", fl.opened,
	       fl.shed, (unsigned long long)wall);
	flood_stop();
	sock_put(vs[0], "D", 1);
	sock_get(vs[0], &cpu1, sizeof(cpu1), "the victim's CPU time");
	if (peer_ok)
		sock_put(ps[0], "D", 1);
	for (int i = 0; i < 2; i++) {
		uint64_t end = t_now_ms() + SOCK_MS;

		while (waitpid(pid[i], &st[i], WNOHANG) != pid[i]) {
			if (t_now_ms() > end) {
				kill(pid[i], SIGKILL);
				waitpid(pid[i], &st[i], 0);
				break;
			}
			t_sleep_ms(5);
		}
	}
	lines = log_lines(path("victim.log"), "too many connections", &accept_lines);
	cpu_pct = (unsigned)((cpu1 - cpu0) / 10 / (wall ? wall : 1));
	printf("---- the victim's stderr (%u lines, %u about too many connections; the first "
	       "40)\n",
	       lines, accept_lines);
	print_log(path("victim.log"), 40);
	printf("---- the peer's stderr\n");
	print_log(path("peer.log"), 40);
	printf("----\n");
	printf("victim: %u %% of a CPU during the flood (%llu ms in %llu ms)\n", cpu_pct,
	       (unsigned long long)((cpu1 - cpu0) / 1000), (unsigned long long)wall);
	if (!peer_ok)
		T_FAIL("the peer failed during the flood (its stderr above), after %llu ms; the "
		       "victim wrote %u lines",
		       (unsigned long long)wall, lines);
	printf("peer: established connection %.0f ops/s before the flood, %.0f during it\n",
	       rep.rate_before, rep.rate_during);
	if (room)
		printf("peer: new connection: first operation after %llu ms, %d operations in "
		       "%llu ms\n",
		       (unsigned long long)rep.first_ms, NEW_OPS, (unsigned long long)rep.new_ms);
	for (int i = 0; i < 2; i++)
		if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]))
			T_FAIL("the %s failed (status 0x%x)", i ? "peer" : "victim", st[i]);

	t_case("verdict");
	if (room && rep.first_ms > FIRST_MS)
		T_FAIL("the new connection's first operation took %llu ms (bound %d)",
		       (unsigned long long)rep.first_ms, FIRST_MS);
	if (rep.rate_during * RATE_DIV < rep.rate_before)
		T_FAIL("the established stream fell from %.0f to %.0f ops/s", rep.rate_before,
		       rep.rate_during);
	if (fl.shed < FLOOD_N)
		T_FAIL("only %u flood connections were shed", fl.shed);
	if (!accept_lines)
		T_FAIL("the victim did not report the flood");
	if (lines > LOG_LINES)
		T_FAIL("the victim wrote %u lines to stderr (bound %d)", lines, LOG_LINES);
	if (cpu_pct > CPU_PCT)
		T_FAIL("the victim used %u %% of a CPU during the flood (bound %d %%)", cpu_pct,
		       CPU_PCT);
	printf("PASS\n");
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 7 && !strcmp(argv[1], "--role") && !strcmp(argv[3], "--fd") &&
	    !strcmp(argv[5], "--room")) {
		int fd = atoi(argv[4]);

		return !strcmp(argv[2], "victim") ? run_victim(fd, atoi(argv[6])) : run_peer(fd);
	}
	if (argc == 2 && !strcmp(argv[1], "caps"))
		return orchestrate(-1);
	if (argc == 2 && !strcmp(argv[1], "emfile"))
		return orchestrate(EMFILE_ROOM);
	if (argc == 2 && !strcmp(argv[1], "nofd"))
		return orchestrate(0);
	fprintf(stderr, "usage: %s caps|emfile|nofd\n", argv[0]);
	return T_EXIT_FAIL;
}
