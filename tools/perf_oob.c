/* SPDX-License-Identifier: MIT */
/*
 * The out-of-band TCP socket of two-process runs: settings, QP numbers,
 * GIDs, keys and barriers travel here, never over the NIC under test.
 * Messages are {magic, type, length} (big-endian) plus a body. Every call
 * waits at most the --timeout deadline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define OOB_MAGIC    0x47505246u /* "GPRF" */
#define OOB_HDR      12
#define OOB_MAX_BODY 65536u
#define RETRY_MS     50

void perf_put32(uint8_t **pos, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		*(*pos)++ = (uint8_t)(v >> (i * 8));
}

void perf_put64(uint8_t **pos, uint64_t v)
{
	perf_put32(pos, (uint32_t)(v >> 32));
	perf_put32(pos, (uint32_t)v);
}

uint32_t perf_get32(const uint8_t **pos)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v = v << 8 | *(*pos)++;
	return v;
}

uint64_t perf_get64(const uint8_t **pos)
{
	uint64_t hi = perf_get32(pos);

	return hi << 32 | perf_get32(pos);
}

/* Milliseconds left before deadline_ns, at least 0. */
static int ms_left(uint64_t deadline_ns)
{
	uint64_t now = perf_now_ns();

	return now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000 + 1);
}

static uint64_t deadline(void)
{
	return perf_now_ns() + (uint64_t)perf_timeout_ms() * 1000000ull;
}

/* Waits for events on fd; exits on timeout. */
static void wait_fd(int fd, short events, uint64_t dl, const char *what)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int ret;

	do {
		ret = poll(&pfd, 1, ms_left(dl));
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		perf_fatal("poll (%s): %s", what, strerror(errno));
	if (ret == 0)
		perf_fatal("timed out after %d s waiting for %s", perf_timeout_ms() / 1000, what);
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* Barriers are tiny; Nagle would add milliseconds to each. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int listen_on(int family, int port)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int fd, one = 1, zero = 0;

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		/* One socket for IPv4 and IPv6 clients. */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		s6->sin6_addr = in6addr_any;
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		len = sizeof(*s4);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 1)) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

int perf_oob_listen(int port)
{
	int fd = listen_on(AF_INET6, port);

	if (fd == -EAFNOSUPPORT)
		fd = listen_on(AF_INET, port);
	if (fd < 0)
		perf_fatal("cannot listen on TCP port %d: %s", port, strerror(-fd));
	return fd;
}

int perf_oob_accept(int lfd)
{
	int fd;

	wait_fd(lfd, POLLIN, deadline(), "a client to connect");
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		perf_fatal("accept: %s", strerror(errno));
	set_nodelay(fd);
	return fd;
}

/* One non-blocking connect attempt; the socket is blocking again on success. */
static int connect_once(const struct addrinfo *ai, uint64_t dl)
{
	int fd, err = 0;
	socklen_t elen = sizeof(err);
	struct pollfd pfd;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		goto fail;
	pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
	if (poll(&pfd, 1, ms_left(dl)) != 1)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err)
		goto fail;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	set_nodelay(fd);
	return fd;
fail:
	close(fd);
	return -1;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* The server may start after us: retry until the deadline. */
int perf_oob_connect(const char *host, int port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
	char service[16];
	uint64_t dl = deadline();
	int ret, fd = -1;

	snprintf(service, sizeof(service), "%d", port);
	ret = getaddrinfo(host, service, &hints, &res);
	if (ret)
		perf_fatal("cannot resolve %s: %s", host, gai_strerror(ret));
	while (fd < 0 && ms_left(dl) > 0) {
		for (ai = res; ai && fd < 0; ai = ai->ai_next)
			fd = connect_once(ai, dl);
		if (fd < 0)
			sleep_ms(RETRY_MS);
	}
	freeaddrinfo(res);
	if (fd < 0)
		perf_fatal("no gnic-perf server answered at %s port %d within %d s", host, port,
		           perf_timeout_ms() / 1000);
	return fd;
}

static void send_all(int fd, const uint8_t *p, size_t len, uint64_t dl)
{
	while (len) {
		ssize_t n;

		wait_fd(fd, POLLOUT, dl, "the peer to take our message");
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			perf_fatal("out-of-band send: %s", n < 0 ? strerror(errno) : "closed");
		p += n;
		len -= (size_t)n;
	}
}

static void recv_all(int fd, uint8_t *p, size_t len, uint64_t dl)
{
	while (len) {
		ssize_t n;

		wait_fd(fd, POLLIN, dl, "the peer's message");
		n = recv(fd, p, len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == 0)
			perf_fatal(
			    "the peer process closed the connection (it failed or exited; see "
			    "its output)");
		if (n < 0)
			perf_fatal("out-of-band receive: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

void perf_oob_send(int fd, uint32_t type, const void *body, uint32_t len)
{
	uint8_t hdr[OOB_HDR], *pos = hdr;
	uint64_t dl = deadline();

	perf_put32(&pos, OOB_MAGIC);
	perf_put32(&pos, type);
	perf_put32(&pos, len);
	send_all(fd, hdr, sizeof(hdr), dl);
	send_all(fd, body, len, dl);
}

void perf_oob_recv(int fd, uint32_t type, void *body, uint32_t len)
{
	uint8_t hdr[OOB_HDR];
	const uint8_t *pos = hdr;
	uint32_t magic, got_type, got_len;
	uint64_t dl = deadline();

	recv_all(fd, hdr, sizeof(hdr), dl);
	magic = perf_get32(&pos);
	got_type = perf_get32(&pos);
	got_len = perf_get32(&pos);
	if (magic != OOB_MAGIC)
		perf_fatal("the peer does not speak gnic-perf (bad magic 0x%08x)", magic);
	if (got_type != type || got_len != len || len > OOB_MAX_BODY)
		perf_fatal("out-of-band protocol error: got message %u of %u bytes, expected %u "
		           "of %u (are both sides the same gnic-perf version and test?)",
		           got_type, got_len, type, len);
	recv_all(fd, body, len, dl);
}
