// SPDX-License-Identifier: MIT
/*
 * Configuration that must be refused with a clear reason, never followed:
 * each case runs the emulator in a child process (its stdout and stderr in
 * files) and kills it if it has not finished within CHILD_MS (a hang).
 *
 *   secret_fifo      GNIC_EMU_SECRET_FILE names a FIFO nobody writes to
 *   secret_dir       ... a directory
 *   secret_symlink   ... a symbolic link to a good secret file
 *   secret_large     ... a 1 MiB file
 * the child's QP connects to a listener this process holds and posts a
 * WRITE: the emulator never dials it (no secret: nothing may be sent), the
 * WRITE ends in RETRY_EXC_ERR within its bound, and the log names the file
 * and why it was refused;
 *   secret_ok        the control: a good file, and the emulator's hello
 *                    reaches the listener.
 *
 *   addr_broadcast   GNIC_EMU_ADDR=255.255.255.255
 *   addr_multicast   GNIC_EMU_ADDR=224.0.0.1
 *   addr_unspecified GNIC_EMU_ADDR=0.0.0.0
 * the address is refused with a warning naming why, and the device listens
 * on a loopback address of its own, port 4791, as by default (its GIDs say
 * so).
 *
 * Run one case: test_sec_config <case>.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define CHILD_MS  10000 /* a child still running after this hangs */
#define BOUND_MS  3000  /* the WRITE's 4 tries of 16.8 ms, with slack */
#define SECRET    "gnic-sec-config-secret-0123456789"
#define LARGE_LEN (1u << 20)

/* ---- the child: the emulator under test ---------------------------------- */

static void gid_to_str(const union ibv_gid *gid, char *buf, size_t size)
{
	char ip[INET_ADDRSTRLEN];
	uint16_t port;

	memcpy(&port, &gid->raw[8], 2);
	if (!inet_ntop(AF_INET, &gid->raw[12], ip, sizeof(ip)))
		strcpy(ip, "?");
	snprintf(buf, size, "%s:%u", ip, ntohs(port));
}

/* Print the device's GID; with a port, post a WRITE to that port of
 * loopback and print how it ended. */
static int run_child(int port)
{
	struct ibv_context *ctx = t_open(T_DEVICE);
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = t_cq(ctx, 16);
	uint8_t *buf = t_alloc(T_PAGE, 7);
	struct ibv_mr *mr = t_reg(pd, buf, T_PAGE, T_ACCESS_ALL);
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct t_conn_opts o;
	struct t_qp_caps caps;
	union ibv_gid gid;
	struct t_ep peer;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	char s[64];

	t_fabric_id(ctx, &gid);
	gid_to_str(&gid, s, sizeof(s));
	printf("gid %s\n", s);
	fflush(stdout);
	if (port) {
		struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 1,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_RDMA_WRITE,
		                         .send_flags = IBV_SEND_SIGNALED,
		                         .wr.rdma = {.remote_addr = 0x1000, .rkey = 0x1234}};

		t_qp_caps_default(&caps);
		qp = t_qp(pd, cq, cq, &caps, NULL);
		t_conn_opts_default(&o);
		o.timeout = 12; /* 16.8 ms, 4 tries */
		o.retry_cnt = 3;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons((uint16_t)port);
		memset(&peer, 0, sizeof(peer));
		memset(&peer.gid, 0, sizeof(peer.gid));
		memcpy(&peer.gid.raw[8], &a.sin_port, 2);
		peer.gid.raw[10] = peer.gid.raw[11] = 0xff;
		memcpy(&peer.gid.raw[12], &a.sin_addr, 4);
		peer.qpn = 0x4242;
		t_connect(qp, &peer, &o);
		t_post_send(qp, &wr);
		t_poll_timeout(cq, 1, &wc, BOUND_MS, "the WRITE");
		printf("wc %s\n", t_wc_status_str(wc.status));
		CHECK_OK(ibv_destroy_qp(qp));
	}
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	free(buf);
	return T_EXIT_PASS;
}

/* ---- the parent ---------------------------------------------------------- */

static char tmp[64];

static char *path(const char *rel)
{
	static char buf[4][256];
	static int i;
	char *p = buf[i++ % 4];

	snprintf(p, 256, "%s/%s", tmp, rel);
	return p;
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

static void write_file(const char *p, const char *text, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, len), len);
	CHECK_EQ(close(fd), 0);
}

static void cleanup(void)
{
	static const char *files[] = {"out", "err", "fifo", "good", "link", "large"};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(path(files[i]));
	rmdir(path("dir"));
	rmdir(tmp);
}

static int listen_loopback(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	CHECK(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(fd, 16), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static pid_t spawn(const char *var, const char *value, int port)
{
	char portstr[16];
	pid_t pid = fork();
	int out, err;

	if (pid < 0)
		T_FAIL("fork: %s", strerror(errno));
	if (pid)
		return pid;
	unsetenv("GNIC_EMU_SECRET");
	unsetenv("GNIC_EMU_SECRET_FILE");
	unsetenv("GNIC_EMU_ADDR");
	if (strcmp(var, "GNIC_EMU_SECRET_FILE"))
		setenv("GNIC_EMU_SECRET", SECRET, 1);
	setenv(var, value, 1);
	setenv("HOME", tmp, 1); /* no per-user secret file of the user running the test */
	out = open(path("out"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	err = open(path("err"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(126);
	snprintf(portstr, sizeof(portstr), "%d", port);
	execl("/proc/self/exe", "test_sec_config", "--child", portstr, (char *)NULL);
	_exit(127);
}

struct seen {
	unsigned conns;
	size_t bytes; /* what the emulator sent the listener */
};

/* Accept and read whatever the child sends until it exits; kill it after
 * CHILD_MS. Returns its wait status. */
static int watch(pid_t pid, int lfd, struct seen *seen)
{
	uint64_t end = t_now_ms() + CHILD_MS;
	int fds[16], nfds = 0, st;

	memset(seen, 0, sizeof(*seen));
	while (waitpid(pid, &st, WNOHANG) != pid) {
		struct pollfd pfd[17];
		int fd;

		if (t_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			T_FAIL("the child is still running after %d ms: it hangs", CHILD_MS);
		}
		pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < nfds; i++)
			pfd[i + 1] = (struct pollfd){.fd = fds[i], .events = POLLIN};
		if (poll(pfd, (nfds_t)nfds + 1, 5) <= 0)
			continue;
		if ((pfd[0].revents & POLLIN) && (fd = accept(lfd, NULL, NULL)) >= 0) {
			seen->conns++;
			if (nfds < 16)
				fds[nfds++] = fd;
			else
				close(fd);
		}
		for (int i = 0; i < nfds; i++) {
			uint8_t b[256];
			ssize_t n;

			if (!(pfd[i + 1].revents & (POLLIN | POLLHUP)))
				continue;
			n = recv(fds[i], b, sizeof(b), MSG_DONTWAIT);
			if (n > 0)
				seen->bytes += (size_t)n;
		}
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return st;
}

struct scase {
	const char *name;
	const char *var, *value; /* value: a path under tmp for the secret cases */
	bool dial;               /* the emulator must dial the listener */
	const char *why[3];      /* the log must say all of these */
};

static const struct scase cases[] = {
    {"secret_fifo",
     "GNIC_EMU_SECRET_FILE",
     "fifo",
     false,
     {"is not a regular file (it is a FIFO); refusing it",
      "every fabric connection will be refused"}},
    {"secret_dir",
     "GNIC_EMU_SECRET_FILE",
     "dir",
     false,
     {"is not a regular file (it is a directory); refusing it",
      "every fabric connection will be refused"}},
    {"secret_symlink",
     "GNIC_EMU_SECRET_FILE",
     "link",
     false,
     {"is a symbolic link; refusing it", "every fabric connection will be refused"}},
    {"secret_large",
     "GNIC_EMU_SECRET_FILE",
     "large",
     false,
     {"is too large (1048576 bytes", "every fabric connection will be refused"}},
    {"secret_ok", "GNIC_EMU_SECRET_FILE", "good", true, {NULL}},
    {"addr_broadcast",
     "GNIC_EMU_ADDR",
     "255.255.255.255",
     false,
     {"ignoring GNIC_EMU_ADDR=\"255.255.255.255\" (a broadcast address",
      "using a loopback address per device"}},
    {"addr_multicast",
     "GNIC_EMU_ADDR",
     "224.0.0.1",
     false,
     {"ignoring GNIC_EMU_ADDR=\"224.0.0.1\" (a multicast address",
      "using a loopback address per device"}},
    {"addr_unspecified",
     "GNIC_EMU_ADDR",
     "0.0.0.0",
     false,
     {"ignoring GNIC_EMU_ADDR=\"0.0.0.0\" (the unspecified address",
      "using a loopback address per device"}},
};

static void make_files(void)
{
	static char big[LARGE_LEN];

	CHECK_EQ(mkfifo(path("fifo"), 0600), 0);
	CHECK_EQ(mkdir(path("dir"), 0700), 0);
	write_file(path("good"), SECRET "\n", strlen(SECRET) + 1);
	CHECK_EQ(symlink(path("good"), path("link")), 0);
	memset(big, 'x', sizeof(big));
	write_file(path("large"), big, sizeof(big));
}

static int run_case(const struct scase *c)
{
	bool addr = !strcmp(c->var, "GNIC_EMU_ADDR");
	struct seen seen;
	char *out, *err;
	int lfd, port, st;
	uint64_t start;

	snprintf(tmp, sizeof(tmp), "/tmp/gnic-sec-config-XXXXXX");
	if (!mkdtemp(tmp))
		T_FAIL("mkdtemp: %s", strerror(errno));
	atexit(cleanup);
	make_files();
	lfd = listen_loopback(&port);

	t_case("%s: %s=%s", c->name, c->var, c->value);
	start = t_now_ms();
	st = watch(spawn(c->var, addr ? c->value : path(c->value), addr ? 0 : port), lfd, &seen);
	out = slurp(path("out"));
	err = slurp(path("err"));
	printf("---- the child's stdout\n%s---- its stderr\n%s----\n", out, err);
	printf("%s: finished after %llu ms; %u connections to the listener, %zu bytes\n", c->name,
	       (unsigned long long)(t_now_ms() - start), seen.conns, seen.bytes);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		T_FAIL("%s: the child failed (status 0x%x)", c->name, st);
	for (int i = 0; i < 3 && c->why[i]; i++)
		if (!strstr(err, c->why[i]))
			T_FAIL("%s: the log does not say \"%s\"", c->name, c->why[i]);
	if (addr) {
		if (!strstr(out, "gid 127.") || !strstr(out, ":4791\n"))
			T_FAIL("%s: the device does not listen on a loopback address, port 4791",
			       c->name);
	} else {
		if (!strstr(out, "wc RETRY_EXC_ERR"))
			T_FAIL("%s: the WRITE did not end in RETRY_EXC_ERR", c->name);
		if (c->dial && seen.bytes < 56)
			T_FAIL("%s: the emulator did not send its hello (%zu bytes)", c->name,
			       seen.bytes);
		if (!c->dial && (seen.conns || seen.bytes))
			T_FAIL("%s: the emulator dialed the listener without a secret", c->name);
	}
	CHECK(!strstr(err, SECRET));
	close(lfd);
	printf("%s: PASS\n", c->name);
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return run_child(atoi(argv[2]));
	for (size_t i = 0; argc == 2 && i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(argv[1], cases[i].name))
			return run_case(&cases[i]);
	fprintf(stderr,
	        "usage: %s CASE (secret_fifo secret_dir secret_symlink secret_large "
	        "secret_ok addr_broadcast addr_multicast addr_unspecified)\n",
	        argv[0]);
	return T_EXIT_FAIL;
}
