/* SPDX-License-Identifier: MIT */
/*
 * Every wait of gnic-perf has a deadline (--timeout), and in two-process
 * runs a wait also ends when the peer's socket closes: the peer failed and
 * will never answer, so waiting out the deadline would only hide its error.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "perf.h"

#define PEER_CHECK_NS 10000000ull /* look at the socket every 10 ms of waiting */

static int wait_timeout_s = PERF_DEFAULT_TIMEOUT_S;
static int wait_oob_fd = -1;

void perf_fatal(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "gnic-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(PERF_EXIT_FAIL);
}

void perf_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gnic-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(PERF_EXIT_USAGE);
}

uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void perf_wait_setup(int timeout_s, int oob_fd)
{
	wait_timeout_s = timeout_s;
	wait_oob_fd = oob_fd;
}

int perf_timeout_ms(void)
{
	return wait_timeout_s * 1000;
}

void perf_wait_start(struct perf_wait *w, const char *what)
{
	perf_wait_start_slack(w, what, 0);
}

void perf_wait_start_slack(struct perf_wait *w, const char *what, int slack_s)
{
	uint64_t now = perf_now_ns();

	w->deadline_ns = now + (uint64_t)(wait_timeout_s + slack_s) * 1000000000ull;
	w->next_check_ns = now + PEER_CHECK_NS;
	w->spins = 0;
	w->progressed = false;
	w->what = what;
}

/* Only a hang-up counts: the peer may legitimately have sent the next
 * out-of-band message already. */
static bool peer_gone(void)
{
	struct pollfd pfd = {.fd = wait_oob_fd, .events = POLLRDHUP};

	if (wait_oob_fd < 0 || poll(&pfd, 1, 0) <= 0)
		return false;
	return pfd.revents & (POLLRDHUP | POLLHUP | POLLERR);
}

void perf_wait_check(struct perf_wait *w)
{
	uint64_t now = perf_now_ns();

	if (w->progressed) {
		w->deadline_ns = now + (uint64_t)wait_timeout_s * 1000000000ull;
		w->progressed = false;
	}
	if (now > w->deadline_ns)
		perf_fatal("timed out after %d s waiting for %s", wait_timeout_s, w->what);
	if (now < w->next_check_ns)
		return;
	w->next_check_ns = now + PEER_CHECK_NS;
	if (peer_gone())
		perf_fatal("the peer process closed the connection while this side waited for %s",
		           w->what);
}
