/* SPDX-License-Identifier: MIT */
/*
 * The two sides of a run and everything they tell each other. In one
 * process both sides live here and connect directly. Across two, libgnic's
 * bootstrap carries every exchange (gnic_boot_*): the server is rank 0 and
 * listens, the client is rank 1. The client sends its settings; the server
 * adopts them, or refuses with its reason, which the client shows; then
 * each opens its side and they trade what the other needs to connect.
 * Both run the same rows and meet at barriers; nothing else is private.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define ATTEMPT_MS 1000        /* one connection attempt; a refused one is reported after it */
#define FD_SCAN    1024        /* where the bootstrap's socket is looked for */
#define WIRE_MAGIC 0x33465047u /* "GPF3": a gnic-perf speaking this layout */

/* The client's settings, which the server runs: its perf_args as they are
 * (both sides run this gnic-perf; args_size catches another build), with
 * the test and mode by name. */
struct wire_params {
	uint32_t magic, args_size;
	char test[32], mode[32];
	struct perf_args a;
};

struct wire_verdict {
	int32_t ok, rsvd;
	char why[248];
};

static bool said(const char *text, int err)
{
	return strstr(text, strerror(err)) != NULL;
}

static int ms_until(uint64_t end_ns)
{
	uint64_t now = perf_now_ns();

	return now >= end_ns ? 0 : (int)((end_ns - now) / 1000000 + 1);
}

/* libgnic's bootstrap retries a refused connection until its timeout and
 * tells why it gave up only in its text; so each attempt lasts ATTEMPT_MS
 * (a server started at the same moment is still found) and the text tells
 * "nobody listens", "unreachable" and "no answer" apart. */
static struct gnic_boot *client_boot(const struct perf_args *a)
{
	uint64_t end = perf_now_ns() + perf_timeout_ns();
	struct gnic_boot *b = NULL;
	bool noted = false;
	char addr[300];

	snprintf(addr, sizeof(addr), strchr(a->host, ':') ? "[%s]:%d" : "%s:%d", a->host, a->port);
	for (;;) {
		int left = ms_until(end) ? ms_until(end) : 1;
		gnic_status_t st =
		    gnic_boot_init(addr, 1, 2, left < ATTEMPT_MS ? left : ATTEMPT_MS, &b);
		const char *why = gnic_last_error();

		if (st == GNIC_OK)
			return b;
		if (st != GNIC_ERR_TIMEOUT)
			perf_fatal("cannot connect to %s port %d: %s", a->host, a->port, why);
		if (said(why, ECONNREFUSED))
			perf_fatal(
			    "connection refused by %s port %d: no gnic-perf server listens there "
			    "(start one first: gnic-perf %s --server -p %d)",
			    a->host, a->port, a->test->name, a->port);
		if (said(why, EHOSTUNREACH) || said(why, ENETUNREACH))
			perf_fatal("%s port %d is unreachable: %s", a->host, a->port, why);
		if (!strstr(why, "not reached"))
			perf_fatal("%s port %d answered, but not as a gnic-perf server: %s",
			           a->host, a->port, why);
		if (!ms_until(end))
			perf_fatal(
			    "no answer from %s port %d within %d s (is a server running there, "
			    "and the port open?): %s",
			    a->host, a->port, a->timeout_s, why);
		if (!noted)
			perf_note("no answer from %s port %d yet; trying for up to %d s", a->host,
			          a->port, a->timeout_s);
		noted = true;
	}
}

/* Listens on every address (IPv6 and IPv4, or IPv4 alone) until a client
 * comes; a connection that is not a gnic-perf client does not end it. */
static struct gnic_boot *server_boot(const struct perf_args *a)
{
	uint64_t end = perf_now_ns() + perf_timeout_ns();
	const char *any = "[::]";
	struct gnic_boot *b = NULL;
	char addr[32];

	fprintf(stderr, "gnic-perf: %s server listening on TCP port %d\n", a->test->name, a->port);
	for (;;) {
		gnic_status_t st;
		const char *why;

		snprintf(addr, sizeof(addr), "%s:%d", any, a->port);
		if (!ms_until(end))
			break;
		st = gnic_boot_init(addr, 0, 2, (uint64_t)ms_until(end), &b);
		why = gnic_last_error();
		if (st == GNIC_OK)
			return b;
		if (strstr(why, "listen on") && said(why, EAFNOSUPPORT) && any[0] == '[')
			any = "0.0.0.0";
		else if (strstr(why, "listen on"))
			perf_fatal("cannot listen on TCP port %d: %s", a->port, why);
		else if (st == GNIC_ERR_TIMEOUT && strstr(why, "joined"))
			break;
		else
			perf_note(
			    "a connection to port %d was no gnic-perf client (%s); waiting on",
			    a->port, why);
	}
	perf_fatal("no client connected to TCP port %d within %d s", a->port, a->timeout_s);
}

/* The bootstrap's socket, so that waits end when the peer dies: libgnic
 * does not expose it, and it is the one socket its init opened. */
static int boot_init(struct perf_session *s)
{
	static unsigned char before[FD_SCAN];
	struct stat sb;

	for (int fd = 0; fd < FD_SCAN; fd++)
		before[fd] = fcntl(fd, F_GETFD) != -1;
	s->boot = s->a->server ? server_boot(s->a) : client_boot(s->a);
	for (int fd = 0; fd < FD_SCAN; fd++)
		if (!before[fd] && !fstat(fd, &sb) && S_ISSOCK(sb.st_mode))
			return fd;
	return -1;
}

static void lost(void)
{
	const char *why = gnic_last_error();

	if (strstr(why, "closed"))
		perf_fatal("the peer process closed the connection (it failed or exited: see its "
		           "output)");
	perf_fatal("the peer process did not answer: %s", why);
}

void perf_exchange(struct perf_session *s, const void *mine, void *peer, size_t len)
{
	uint8_t *all = malloc(2 * len);

	if (!all)
		perf_fatal("out of memory");
	if (gnic_boot_allgather(s->boot, mine, all, len) != GNIC_OK)
		lost();
	memcpy(peer, all + (s->a->server ? len : 0), len); /* rank 0 is the server */
	free(all);
}

void perf_sync(struct perf_session *s)
{
	if (s->boot && gnic_boot_barrier(s->boot) != GNIC_OK)
		lost();
}

/* ---- settings ------------------------------------------------------------------------------- */

static bool same(const int *x, int nx, const int *y, int ny)
{
	return nx == ny && !memcmp(x, y, (size_t)nx * sizeof(*x));
}

#define REFUSE(...) return snprintf(why, cap, __VA_ARGS__), false

/* The server runs the client's settings, but refuses a client that differs
 * in one the server was given explicitly. */
static bool adopt(struct perf_args *a, const struct wire_params *w, char *why, size_t cap)
{
	const struct perf_args *c = &w->a;
	struct perf_args own = *a;
	unsigned set = a->set;

	if (w->magic != WIRE_MAGIC || w->args_size != sizeof(*a))
		REFUSE("the client is another gnic-perf version or build");
	if (strcmp(w->test, a->test->name))
		REFUSE("the client runs %s, this server was started for %s", w->test,
		       a->test->name);
	if ((set & PERF_SET_MODE) && strcmp(w->mode, a->mode->name))
		REFUSE("the client runs --mode %s, this server was started with --mode %s", w->mode,
		       a->mode->name);
	if ((set & PERF_SET_SIZES) &&
	    (c->nsizes != a->nsizes || memcmp(c->sizes, a->sizes, sizeof(a->sizes[0]) * a->nsizes)))
		REFUSE(
		    "the client's message sizes (%d, from %zu B) are not this server's (%d, from "
		    "%zu B)",
		    c->nsizes, c->sizes[0], a->nsizes, a->sizes[0]);
	if (((set & PERF_SET_ITERS) && c->iters != a->iters) ||
	    ((set & PERF_SET_DURATION) && c->duration != a->duration) ||
	    ((set & PERF_SET_BIDIR) && c->bidir != a->bidir))
		REFUSE("the client's --iters, --duration or --bidirectional (%ld, %.0f, %s) are "
		       "not this "
		       "server's (%ld, %.0f, %s)",
		       c->iters, c->duration, c->bidir ? "on" : "off", a->iters, a->duration,
		       a->bidir ? "on" : "off");
	if (((set & PERF_SET_QPS) && !same(c->qps_list, c->nqps, a->qps_list, a->nqps)) ||
	    ((set & PERF_SET_CTAS) && !same(c->ctas_list, c->nctas, a->ctas_list, a->nctas)) ||
	    ((set & PERF_SET_SCOPE) && !same(c->scopes, c->nscopes, a->scopes, a->nscopes)) ||
	    ((set & PERF_SET_DEPTH) && c->tx_depth != a->tx_depth))
		REFUSE("the client's --qp, --ctas, --scope or --tx-depth are not this server's");
	*a = *c; /* then what is this process's own */
	a->test = own.test;
	if (!(a->mode = perf_mode_find(w->mode)))
		REFUSE("the client asks for --mode %s, which this server does not know", w->mode);
	a->server = true;
	a->host[0] = 0;
	a->port = own.port;
	a->format = own.format;
	a->timeout_s = own.timeout_s;
	a->gpu = own.gpu;
	memcpy(a->device, own.device, sizeof(a->device));
	memcpy(a->plot, own.plot, sizeof(a->plot));
	return perf_args_check(a, why, cap);
}

static void negotiate(struct perf_session *s)
{
	struct wire_params mine = {WIRE_MAGIC, sizeof(*s->a), "", "", *s->a}, peer;
	struct wire_verdict v = {.ok = 1}, pv;

	snprintf(mine.test, sizeof(mine.test), "%s", s->a->test->name);
	snprintf(mine.mode, sizeof(mine.mode), "%s", s->a->mode->name);
	perf_exchange(s, &mine, &peer, sizeof(mine));
	if (s->a->server)
		v.ok = adopt(s->a, &peer, v.why, sizeof(v.why));
	perf_exchange(s, &v, &pv, sizeof(v));
	if (!s->a->server && !pv.ok)
		perf_fatal("the server refused this client: %s", pv.why);
	if (!v.ok)
		perf_fatal("refused the client: %s", v.why);
	if (s->a->server && s->a->mode->gnic)
		perf_gnic_resolve(s->a);
}

/* ---- the sides ------------------------------------------------------------------------------- */

/* The largest ring any row needs. */
static size_t buffer_len(const struct perf_args *a)
{
	struct perf_args row = *a;
	size_t len = 4096;

	for (int c = 0; c < a->nctas; c++)
		for (int q = 0; q < a->nqps; q++)
			for (int i = 0; i < a->nsizes; i++) {
				struct perf_ring r;

				row.ctas = a->ctas_list[c];
				row.qps = a->qps_list[q];
				perf_ring_for(&r, &row, a->sizes[i]);
				len = r.total > len ? r.total : len;
			}
	return len;
}

static struct perf_ep *open_side(struct perf_session *s, enum perf_side side, size_t len,
                                 struct perf_ep_info *info)
{
	struct perf_ep *ep = s->a->mode->ops->open(s->a, side, len);

	memset(info, 0, sizeof(*info));
	s->a->mode->ops->info(ep, info);
	return s->ep[side] = ep;
}

void perf_session_open(struct perf_session *s, struct perf_args *a)
{
	static struct perf_ep_info ia, ib;
	const struct perf_backend *ops;
	size_t len;

	memset(s, 0, sizeof(*s));
	s->a = a;
	s->peer_fd = -1;
	snprintf(s->nic, sizeof(s->nic), "none");
	srand48((long)getpid() ^ (long)time(NULL));
	perf_wait_setup(a->timeout_s, -1);
	if (a->test->flags & PERF_F_LOCAL)
		return;
	if (perf_two_process(a)) {
		s->peer_fd = boot_init(s);
		perf_wait_setup(a->timeout_s, s->peer_fd);
		negotiate(s);
	}
	ops = a->mode->ops; /* a server's: its client's mode */
	len = buffer_len(a);
	if (perf_two_process(a)) {
		struct perf_ep *ep = open_side(s, a->server ? PERF_B : PERF_A, len, &ia);

		perf_exchange(s, &ia, &ib, sizeof(ia));
		ops->connect(ep, a, &ib);
	} else if (a->test->flags & (PERF_F_UNCONNECTED | PERF_F_LOOPBACK)) {
		ops->connect(open_side(s, PERF_A, len, &ia), a, NULL);
	} else {
		open_side(s, PERF_A, len, &ia);
		open_side(s, PERF_B, len, &ib);
		ops->connect(s->ep[PERF_A], a, &ib);
		ops->connect(s->ep[PERF_B], a, &ia);
	}
	ops->env(s);
}

void perf_session_close(struct perf_session *s)
{
	for (int side = PERF_A; side <= PERF_B; side++)
		if (s->ep[side])
			s->a->mode->ops->close(s->ep[side]);
	perf_wait_setup(s->a->timeout_s, -1);
	gnic_boot_fini(s->boot);
}
