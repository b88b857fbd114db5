// SPDX-License-Identifier: MIT
/* Helpers of the forked-process tests: see mp_common.h. */
#define _GNU_SOURCE
#include "mp_common.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

void mp_send(int fd, char c)
{
	while (write(fd, &c, 1) != 1)
		if (errno != EINTR)
			T_FAIL("control socket write: %s", strerror(errno));
}

char mp_recv_within(int fd, unsigned ms, const char *what)
{
	uint64_t deadline = t_now_ms() + ms;
	char c = 0;

	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = t_now_ms();
		int r = poll(&pfd, 1, now < deadline ? (int)(deadline - now) : 0);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			T_FAIL("poll (%s): %s", what, strerror(errno));
		if (r == 0)
			return 0;
		n = read(fd, &c, 1);
		if (n == 1)
			return c;
		if (n == 0)
			T_FAIL("the other side closed the control socket (%s); did it fail?", what);
		if (errno != EINTR)
			T_FAIL("control socket read (%s): %s", what, strerror(errno));
	}
}

char mp_recv(int fd, const char *what)
{
	char c = mp_recv_within(fd, MP_WAIT_MS, what);

	if (!c)
		T_FAIL("no word within %d ms (%s)", MP_WAIT_MS, what);
	return c;
}

void mp_expect(int fd, char want, const char *what)
{
	char c = mp_recv(fd, what);

	if (c != want)
		T_FAIL("%s: got '%c', expected '%c'", what, c, want);
}

void mp_blob_send(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			T_FAIL("control socket write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

void mp_blob_recv(int fd, void *buf, size_t len, const char *what)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int r = poll(&pfd, 1, MP_WAIT_MS);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			T_FAIL("no %s within %d ms", what, MP_WAIT_MS);
		n = read(fd, p, len);
		if (n == 0)
			T_FAIL("the other side closed the control socket (%s)", what);
		if (n < 0 && errno != EINTR)
			T_FAIL("control socket read (%s): %s", what, strerror(errno));
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
}

pid_t mp_spawn(const char *name, const char *role, int fd, int other_fd, const char *extra)
{
	char fdstr[16];
	pid_t pid = fork();

	if (pid < 0)
		T_FAIL("fork: %s", strerror(errno));
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* even when stopped */
	close(other_fd);
	snprintf(fdstr, sizeof(fdstr), "%d", fd);
	execl("/proc/self/exe", name, "--role", role, "--fd", fdstr, extra, (char *)NULL);
	fprintf(stderr, "exec /proc/self/exe: %s\n", strerror(errno));
	_exit(127);
}

void mp_stop(pid_t pid)
{
	uint64_t deadline = t_now_ms() + MP_WAIT_MS;
	int st;

	CHECK_OK(kill(pid, SIGSTOP));
	for (;;) {
		pid_t r = waitpid(pid, &st, WUNTRACED | WNOHANG);

		if (r == pid && WIFSTOPPED(st))
			return;
		if (r == pid)
			T_FAIL("child %d ended (status 0x%x) instead of stopping", (int)pid, st);
		if (t_now_ms() > deadline)
			T_FAIL("child %d did not stop within %d ms", (int)pid, MP_WAIT_MS);
		t_sleep_ms(1);
	}
}

void mp_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The socket inode a /proc/PID/fd link names, or 0. */
static unsigned long fd_socket_inode(const char *link)
{
	unsigned long ino = 0;

	return sscanf(link, "socket:[%lu]", &ino) == 1 ? ino : 0;
}

static bool has_inode(const unsigned long *inodes, int n, unsigned long ino)
{
	for (int i = 0; i < n; i++)
		if (inodes[i] == ino)
			return true;
	return false;
}

long mp_rx_queued(pid_t pid)
{
	unsigned long inodes[256];
	char path[64], link[64], line[512];
	int n = 0;
	long total = 0;
	DIR *d;
	FILE *f;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)) && n < 256) {
		char fdpath[64 + sizeof(e->d_name)];
		ssize_t len;

		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, e->d_name);
		len = readlink(fdpath, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (fd_socket_inode(link))
			inodes[n++] = fd_socket_inode(link);
	}
	closedir(d);
	f = fopen("/proc/net/tcp", "r");
	if (!f)
		return -1;
	/* sl local rem st tx_queue:rx_queue tr:when retrnsmt uid timeout inode */
	while (fgets(line, sizeof(line), f)) {
		unsigned long tx, rx, ino;

		if (sscanf(line, " %*s %*s %*s %*s %lx:%lx %*s %*s %*s %*s %lu", &tx, &rx, &ino) ==
		        3 &&
		    has_inode(inodes, n, ino))
			total += (long)rx;
	}
	fclose(f);
	return total;
}

void mp_side_open(struct mp_side *s, size_t len, uint8_t timeout, uint8_t retry_cnt)
{
	struct t_qp_caps caps;

	t_case("%s: setup", s->role);
	t_qp_caps_default(&caps);
	t_conn_opts_default(&s->opts);
	s->opts.timeout = timeout;
	s->opts.retry_cnt = retry_cnt;
	s->ctx = t_open(T_DEVICE);
	s->pd = CHECK_PTR(ibv_alloc_pd(s->ctx));
	s->scq = t_cq(s->ctx, 64);
	s->rcq = t_cq(s->ctx, 64);
	s->qp = t_qp(s->pd, s->scq, s->rcq, &caps, NULL);
	s->buf = t_alloc(len, 0);
	s->mr = t_reg(s->pd, s->buf, len, T_ACCESS_ALL);
}

void mp_side_connect(struct mp_side *s, size_t len)
{
	struct t_ep ep;

	t_local_ep(s->qp, &ep);
	ep.rkey = s->mr->rkey;
	ep.addr = (uintptr_t)s->buf;
	ep.len = len;
	mp_blob_send(s->fd, &ep, sizeof(ep));
	mp_blob_recv(s->fd, &s->peer, sizeof(s->peer), "the peer's endpoint");
	t_connect(s->qp, &s->peer, &s->opts);
	mp_send(s->fd, 'C');
}

void mp_side_close(struct mp_side *s)
{
	t_case("%s: teardown", s->role);
	CHECK_OK(ibv_destroy_qp(s->qp));
	CHECK_OK(ibv_dereg_mr(s->mr));
	CHECK_OK(ibv_destroy_cq(s->scq));
	CHECK_OK(ibv_destroy_cq(s->rcq));
	CHECK_OK(ibv_dealloc_pd(s->pd));
	CHECK_OK(ibv_close_device(s->ctx));
	free(s->buf);
}
