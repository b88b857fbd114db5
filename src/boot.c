/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap over TCP: N ranks exchange small messages (connection blobs)
 * through rank 0, which listens on the given address; every other rank
 * connects to it (retrying until the timeout, since rank 0 may start last).
 *
 * Wire format, all little-endian:
 *   hello      magic "GNBT" (u32), version (u16), 0 (u16), rank (u32), nranks (u32)
 *   collective magic, seq (u32), len (u64), then len bytes
 * A collective is an allgather: ranks send their part to rank 0, rank 0
 * answers each with the whole. Every wait is a poll() bounded by the time
 * left until the call's deadline (timeout_ms after it started).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gnic_int.h"

#define BOOT_MAGIC   0x54424e47u /* "GNBT" in little-endian byte order */
#define BOOT_VERSION 1
#define HELLO_SIZE   16
#define COLL_SIZE    16
#define MAX_RANKS    65536
#define RETRY_MS     20 /* between connection attempts to rank 0 */

struct gnic_boot {
	int rank, nranks;
	uint64_t timeout_ms;
	int *fds; /* rank 0: fds[r] of rank r >= 1; other ranks: fds[0] */
	uint32_t seq;
};

/* ---- bounded socket I/O ---------------------------------------------------- */

static uint64_t deadline_after(uint64_t ms)
{
	return gnic_time_ns() + ms * 1000000u;
}

/* Milliseconds left (rounded up), 0 when the deadline passed. */
static int ms_left(uint64_t deadline)
{
	uint64_t now = gnic_time_ns();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999u) / 1000000u);
}

/* 1 ready, 0 timed out, -1 error (errno). */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int left = ms_left(deadline), r;

		if (!left)
			return 0;
		r = poll(&p, 1, left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static gnic_status_t io_fail(struct gnic_boot *b, int r, const char *what)
{
	if (!r)
		return gnic_error(GNIC_ERR_TIMEOUT, "boot rank %d: %s: no progress within %llu ms",
		                  b->rank, what, (unsigned long long)b->timeout_ms);
	return gnic_error(GNIC_ERR_SYSTEM, "boot rank %d: %s: %s", b->rank, what, strerror(errno));
}

static gnic_status_t send_all(struct gnic_boot *b, int fd, const void *buf, size_t len,
                              uint64_t deadline, const char *what)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		int r;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return io_fail(b, -1, what);
		r = wait_fd(fd, POLLOUT, deadline);
		if (r <= 0)
			return io_fail(b, r, what);
	}
	return GNIC_OK;
}

static gnic_status_t recv_all(struct gnic_boot *b, int fd, void *buf, size_t len, uint64_t deadline,
                              const char *what)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);
		int r;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return gnic_error(GNIC_ERR_SYSTEM,
			                  "boot rank %d: %s: peer closed the connection", b->rank,
			                  what);
		if (errno != EAGAIN && errno != EINTR)
			return io_fail(b, -1, what);
		r = wait_fd(fd, POLLIN, deadline);
		if (r <= 0)
			return io_fail(b, r, what);
	}
	return GNIC_OK;
}

/* ---- address --------------------------------------------------------------- */

/* "host:port" or "[v6]:port"; the port must be given (rank 0 listens there). */
static gnic_status_t resolve(const char *addr, bool passive, struct addrinfo **res)
{
	char host[256], *port, *end;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	long num = 0;
	int r;

	if (strlen(addr) >= sizeof(host))
		return gnic_error(GNIC_ERR_INVALID, "boot: address too long");
	strcpy(host, addr);
	port = strrchr(host, ':');
	if (port && port != host)
		num = strtol(port + 1, &end, 10);
	if (num < 1 || *end || num > 65535)
		return gnic_error(GNIC_ERR_INVALID, "boot: \"%s\" is not host:port (port 1-65535)",
		                  addr);
	*port++ = '\0';
	if (host[0] == '[' && port[-2] == ']') {
		port[-2] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	r = getaddrinfo(host, port, &hints, res);
	if (r)
		return gnic_error(GNIC_ERR_INVALID, "boot: cannot resolve \"%s\": %s", addr,
		                  gai_strerror(r));
	return GNIC_OK;
}

static int tcp_socket(int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- hello ----------------------------------------------------------------- */

static void hello_encode(uint8_t *m, int rank, int nranks)
{
	memset(m, 0, HELLO_SIZE);
	gnic_put_le32(m, BOOT_MAGIC);
	gnic_put_le16(m + 4, BOOT_VERSION);
	gnic_put_le32(m + 8, (uint32_t)rank);
	gnic_put_le32(m + 12, (uint32_t)nranks);
}

/* Checks a peer's hello against ours; its rank in *rank. */
static gnic_status_t hello_check(struct gnic_boot *b, const uint8_t *m, int *rank)
{
	uint32_t r = gnic_get_le32(m + 8), n = gnic_get_le32(m + 12);

	if (gnic_get_le32(m) != BOOT_MAGIC)
		return gnic_error(GNIC_ERR_PROTOCOL, "boot rank %d: peer is not a gnic bootstrap",
		                  b->rank);
	if (gnic_get_le16(m + 4) != BOOT_VERSION)
		return gnic_error(GNIC_ERR_PROTOCOL, "boot rank %d: peer speaks version %u, we %u",
		                  b->rank, gnic_get_le16(m + 4), BOOT_VERSION);
	if (n != (uint32_t)b->nranks)
		return gnic_error(GNIC_ERR_PROTOCOL,
		                  "boot rank %d: peer (rank %u) says %u ranks, we %d", b->rank, r,
		                  n, b->nranks);
	if (r >= n)
		return gnic_error(GNIC_ERR_PROTOCOL, "boot rank %d: peer claims rank %u of %u",
		                  b->rank, r, n);
	*rank = (int)r;
	return GNIC_OK;
}

/* ---- rank 0 ---------------------------------------------------------------- */

static int listen_on(const struct addrinfo *ai)
{
	int fd = tcp_socket(ai->ai_family), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, SOMAXCONN)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* One connection: exchange hellos, file it under the peer's rank. */
static gnic_status_t admit(struct gnic_boot *b, int fd, uint64_t deadline)
{
	uint8_t m[HELLO_SIZE];
	gnic_status_t st;
	int rank;

	hello_encode(m, 0, b->nranks);
	st = send_all(b, fd, m, sizeof(m), deadline, "hello to a rank");
	if (!st)
		st = recv_all(b, fd, m, sizeof(m), deadline, "hello from a rank");
	if (!st)
		st = hello_check(b, m, &rank);
	if (!st && (rank == 0 || b->fds[rank] >= 0))
		st = gnic_error(GNIC_ERR_PROTOCOL, "boot rank 0: rank %d connected twice", rank);
	if (st) {
		close(fd);
		return st;
	}
	b->fds[rank] = fd;
	return GNIC_OK;
}

static gnic_status_t accept_ranks(struct gnic_boot *b, int lfd, uint64_t deadline)
{
	for (int joined = 1; joined < b->nranks; joined++) {
		int r = wait_fd(lfd, POLLIN, deadline), fd;
		gnic_status_t st;

		if (r <= 0)
			return r ? io_fail(b, r, "accept")
			         : gnic_error(GNIC_ERR_TIMEOUT,
			                      "boot rank 0: %d of %d ranks joined within %llu ms",
			                      joined, b->nranks, (unsigned long long)b->timeout_ms);
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			joined--; /* a connection that went away before accept */
			continue;
		}
		st = admit(b, fd, deadline);
		if (st)
			return st;
	}
	return GNIC_OK;
}

static gnic_status_t init_root(struct gnic_boot *b, const char *addr, uint64_t deadline)
{
	struct addrinfo *ai;
	gnic_status_t st = resolve(addr, true, &ai);
	int lfd;

	if (st)
		return st;
	lfd = listen_on(ai);
	freeaddrinfo(ai);
	if (lfd < 0)
		return gnic_error(GNIC_ERR_SYSTEM, "boot rank 0: listen on %s: %s", addr,
		                  strerror(errno));
	st = accept_ranks(b, lfd, deadline);
	close(lfd);
	return st;
}

/* ---- other ranks ----------------------------------------------------------- */

/* One attempt: a connected socket, or -1 with errno. */
static int try_connect(const struct addrinfo *ai, uint64_t deadline)
{
	int fd = tcp_socket(ai->ai_family), err = 0, r;
	socklen_t len = sizeof(err);

	if (fd < 0)
		return -1;
	if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
		return fd;
	if (errno == EINPROGRESS) {
		r = wait_fd(fd, POLLOUT, deadline);
		if (r > 0 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && !err)
			return fd;
		errno = r == 0 ? ETIMEDOUT : err ? err : errno;
	}
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

static void pause_ms(int ms)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000};

	nanosleep(&ts, NULL);
}

static gnic_status_t connect_root(struct gnic_boot *b, const char *addr, uint64_t deadline)
{
	struct addrinfo *ai;
	gnic_status_t st = resolve(addr, false, &ai);
	int fd = -1, err = 0;

	if (st)
		return st;
	while (fd < 0 && ms_left(deadline)) {
		fd = try_connect(ai, deadline);
		err = errno;
		if (fd < 0 && ms_left(deadline))
			pause_ms(ms_left(deadline) < RETRY_MS ? ms_left(deadline) : RETRY_MS);
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return gnic_error(GNIC_ERR_TIMEOUT,
		                  "boot rank %d: rank 0 at %s not reached within %llu ms (%s)",
		                  b->rank, addr, (unsigned long long)b->timeout_ms, strerror(err));
	b->fds[0] = fd;
	return GNIC_OK;
}

static gnic_status_t init_rank(struct gnic_boot *b, const char *addr, uint64_t deadline)
{
	uint8_t m[HELLO_SIZE];
	gnic_status_t st = connect_root(b, addr, deadline);
	int rank;

	if (st)
		return st;
	hello_encode(m, b->rank, b->nranks);
	st = send_all(b, b->fds[0], m, sizeof(m), deadline, "hello to rank 0");
	if (!st)
		st = recv_all(b, b->fds[0], m, sizeof(m), deadline, "hello from rank 0");
	if (!st)
		st = hello_check(b, m, &rank);
	if (!st && rank != 0)
		st = gnic_error(GNIC_ERR_PROTOCOL, "boot rank %d: %s answered as rank %d", b->rank,
		                addr, rank);
	return st;
}

/* ---- public ---------------------------------------------------------------- */

static gnic_status_t check_init(const char *addr, int rank, int nranks, uint64_t timeout_ms,
                                struct gnic_boot **boot_p)
{
	if (!addr || !boot_p)
		return gnic_error(GNIC_ERR_INVALID, "boot_init: NULL argument");
	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
		return gnic_error(GNIC_ERR_INVALID, "boot_init: rank %d of %d", rank, nranks);
	if (!timeout_ms || timeout_ms > 24ull * 3600 * 1000)
		return gnic_error(GNIC_ERR_INVALID, "boot_init: timeout %llu ms not in (0, 1 day]",
		                  (unsigned long long)timeout_ms);
	return GNIC_OK;
}

GNIC_API gnic_status_t gnic_boot_init(const char *addr, int rank, int nranks, uint64_t timeout_ms,
                                      struct gnic_boot **boot_p)
{
	gnic_status_t st = check_init(addr, rank, nranks, timeout_ms, boot_p);
	uint64_t deadline = deadline_after(timeout_ms);
	struct gnic_boot *b;

	if (st)
		return st;
	b = calloc(1, sizeof(*b));
	if (b)
		b->fds = malloc((size_t)nranks * sizeof(*b->fds));
	if (!b || !b->fds) {
		free(b);
		return gnic_error(GNIC_ERR_NOMEM, "boot_init: out of memory");
	}
	for (int i = 0; i < nranks; i++)
		b->fds[i] = -1;
	b->rank = rank;
	b->nranks = nranks;
	b->timeout_ms = timeout_ms;
	if (nranks > 1)
		st = rank ? init_rank(b, addr, deadline) : init_root(b, addr, deadline);
	if (st) {
		gnic_boot_fini(b);
		return st;
	}
	*boot_p = b;
	return GNIC_OK;
}

GNIC_API void gnic_boot_info(const struct gnic_boot *boot, int *rank, int *nranks)
{
	if (rank)
		*rank = boot ? boot->rank : -1;
	if (nranks)
		*nranks = boot ? boot->nranks : 0;
}

GNIC_API void gnic_boot_fini(struct gnic_boot *boot)
{
	if (!boot)
		return;
	for (int i = 0; i < boot->nranks; i++)
		if (boot->fds[i] >= 0)
			close(boot->fds[i]);
	free(boot->fds);
	free(boot);
}

static void coll_encode(uint8_t *h, uint32_t seq, uint64_t len)
{
	gnic_put_le32(h, BOOT_MAGIC);
	gnic_put_le32(h + 4, seq);
	gnic_put_le64(h + 8, len);
}

static gnic_status_t coll_check(struct gnic_boot *b, const uint8_t *h, uint64_t len, int from)
{
	if (gnic_get_le32(h) != BOOT_MAGIC)
		return gnic_error(GNIC_ERR_PROTOCOL, "boot rank %d: garbage from rank %d", b->rank,
		                  from);
	if (gnic_get_le32(h + 4) != b->seq || gnic_get_le64(h + 8) != len)
		return gnic_error(GNIC_ERR_PROTOCOL,
		                  "boot rank %d: rank %d is in collective %u with %llu bytes, we "
		                  "in %u with %llu: mismatched calls",
		                  b->rank, from, gnic_get_le32(h + 4),
		                  (unsigned long long)gnic_get_le64(h + 8), b->seq,
		                  (unsigned long long)len);
	return GNIC_OK;
}

static gnic_status_t gather_root(struct gnic_boot *b, uint8_t *all, size_t len, uint64_t deadline)
{
	size_t total = len * (size_t)b->nranks;
	uint8_t h[COLL_SIZE];
	gnic_status_t st = GNIC_OK;

	for (int r = 1; r < b->nranks && !st; r++) {
		st = recv_all(b, b->fds[r], h, sizeof(h), deadline, "allgather receive");
		if (!st)
			st = coll_check(b, h, len, r);
		if (!st)
			st = recv_all(b, b->fds[r], all + (size_t)r * len, len, deadline,
			              "allgather receive");
	}
	coll_encode(h, b->seq, total);
	for (int r = 1; r < b->nranks && !st; r++) {
		st = send_all(b, b->fds[r], h, sizeof(h), deadline, "allgather send");
		if (!st)
			st = send_all(b, b->fds[r], all, total, deadline, "allgather send");
	}
	return st;
}

static gnic_status_t gather_rank(struct gnic_boot *b, const void *mine, uint8_t *all, size_t len,
                                 uint64_t deadline)
{
	size_t total = len * (size_t)b->nranks;
	uint8_t h[COLL_SIZE];
	gnic_status_t st;

	coll_encode(h, b->seq, len);
	st = send_all(b, b->fds[0], h, sizeof(h), deadline, "allgather send");
	if (!st)
		st = send_all(b, b->fds[0], mine, len, deadline, "allgather send");
	if (!st)
		st = recv_all(b, b->fds[0], h, sizeof(h), deadline, "allgather receive");
	if (!st)
		st = coll_check(b, h, total, 0);
	if (!st)
		st = recv_all(b, b->fds[0], all, total, deadline, "allgather receive");
	return st;
}

GNIC_API gnic_status_t gnic_boot_allgather(struct gnic_boot *boot, const void *mine, void *all,
                                           size_t len)
{
	uint64_t deadline;

	if (!boot || (len && (!mine || !all)))
		return gnic_error(GNIC_ERR_INVALID, "boot_allgather: NULL argument");
	if (len > SIZE_MAX / (size_t)boot->nranks)
		return gnic_error(GNIC_ERR_INVALID, "boot_allgather: %zu bytes per rank", len);
	deadline = deadline_after(boot->timeout_ms);
	boot->seq++;
	if (len)
		memmove((uint8_t *)all + (size_t)boot->rank * len, mine, len);
	if (boot->nranks == 1)
		return GNIC_OK;
	if (boot->rank)
		return gather_rank(boot, mine, all, len, deadline);
	return gather_root(boot, all, len, deadline);
}

GNIC_API gnic_status_t gnic_boot_barrier(struct gnic_boot *boot)
{
	uint8_t mine = 0, *all;
	gnic_status_t st;

	if (!boot)
		return gnic_error(GNIC_ERR_INVALID, "boot_barrier: boot is NULL");
	all = malloc((size_t)boot->nranks);
	if (!all)
		return gnic_error(GNIC_ERR_NOMEM, "boot_barrier: out of memory");
	st = gnic_boot_allgather(boot, &mine, all, 1);
	free(all);
	return st;
}
