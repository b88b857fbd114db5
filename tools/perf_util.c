/* SPDX-License-Identifier: MIT */
/*
 * Errors, deadlines, data patterns and the buffer ring.
 *
 * Every message carries a pattern that depends on (side, source region,
 * length), so a byte from the wrong place, an earlier message or none at all
 * is caught. Sources are filled once per run, outside the timed loop; which
 * region an iteration uses follows from its number, so the target knows
 * what each slot must finally hold without being told.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "perf.h"

#define PEER_CHECK_NS 10000000ull /* look at the peer's socket every 10 ms of waiting */

static int wait_timeout_s = PERF_DEFAULT_TIMEOUT_S;
static int wait_peer_fd = -1;

/* The body of each of them: "gnic-perf: PREFIX" and the message on stderr. */
#define SAY(prefix)                                                                                \
	do {                                                                                       \
		va_list ap;                                                                        \
                                                                                                   \
		va_start(ap, fmt);                                                                 \
		fflush(stdout);                                                                    \
		fprintf(stderr, "gnic-perf: %s", prefix);                                          \
		vfprintf(stderr, fmt, ap);                                                         \
		fprintf(stderr, "\n");                                                             \
		va_end(ap);                                                                        \
	} while (0)

void perf_fatal(const char *fmt, ...)
{
	SAY("FAIL: ");
	exit(PERF_EXIT_FAIL);
}

void perf_usage_error(const char *fmt, ...)
{
	SAY("FAIL: usage: ");
	exit(PERF_EXIT_USAGE);
}

void perf_note(const char *fmt, ...)
{
	SAY("note: ");
}

uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void perf_wait_setup(int timeout_s, int peer_fd)
{
	wait_timeout_s = timeout_s;
	wait_peer_fd = peer_fd;
}

uint64_t perf_timeout_ns(void)
{
	return (uint64_t)wait_timeout_s * 1000000000ull;
}

void perf_wait_start(struct perf_wait *w, const char *what)
{
	uint64_t now = perf_now_ns();

	w->deadline_ns = now + perf_timeout_ns();
	w->next_check_ns = now + PEER_CHECK_NS;
	w->spins = 0;
	w->what = what;
}

void perf_wait_progress(struct perf_wait *w)
{
	w->deadline_ns = perf_now_ns() + perf_timeout_ns();
}

/* Only a hang-up counts: the peer may have sent its next message already. */
static bool peer_gone(void)
{
	struct pollfd pfd = {.fd = wait_peer_fd, .events = POLLRDHUP};

	if (wait_peer_fd < 0 || poll(&pfd, 1, 0) <= 0)
		return false;
	return pfd.revents & (POLLRDHUP | POLLHUP | POLLERR);
}

void perf_wait_check(struct perf_wait *w)
{
	uint64_t now = perf_now_ns();

	if (now > w->deadline_ns)
		perf_fatal("timed out after %d s waiting for %s", wait_timeout_s, w->what);
	if (now < w->next_check_ns)
		return;
	w->next_check_ns = now + PEER_CHECK_NS;
	if (peer_gone())
		perf_fatal("the peer process closed the connection while this side waited for %s "
		           "(see its output)",
		           w->what);
}

void *perf_alloc(size_t len)
{
	void *p =
	    mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		perf_fatal("cannot map %zu bytes", len);
	if (len >= (2u << 20)) /* large buffers: far fewer page faults */
		madvise(p, len, MADV_HUGEPAGE);
	return p;
}

void perf_free(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

/* ---- patterns ------------------------------------------------------------------------- */

void perf_pattern_poison(uint8_t *p, size_t len, enum perf_side side)
{
	perf_pat_fill(p, len, (uint32_t)side, 0, ~0ull);
}

bool perf_pattern_check(const uint8_t *p, size_t len, enum perf_side side, uint32_t region,
                        uint64_t flip, const char *what, long iter)
{
	uint8_t seen = 0, want = 0;
	int64_t off = perf_pat_find(p, len, (uint32_t)side, region, flip, &seen, &want);

	if (off < 0)
		return true;
	fflush(stdout);
	fprintf(stderr,
	        "gnic-perf: data mismatch in %s after iteration %ld: byte %lld of %zu is 0x%02x, "
	        "expected 0x%02x (%s side %c, region %u)%s\n",
	        what, iter, (long long)off, len, seen, want,
	        flip ? "never written: poison against" : "pattern of", side == PERF_A ? 'A' : 'B',
	        region,
	        perf_pat_find(p, len, (uint32_t)side, region, flip, &seen, &want) < 0
	            ? "; a second look finds it right: it landed after the byte that signalled it"
	            : "");
	return false;
}

/* ---- the ring ------------------------------------------------------------------------- */

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static uint32_t gcd(uint32_t a, uint32_t b)
{
	while (b) {
		uint32_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static uint32_t clamp32(uint64_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}

static uint32_t ndst(const struct perf_ring *r)
{
	return r->shared ? r->nslots : r->nw * r->nslots;
}

static void ring_place(struct perf_ring *r)
{
	r->src_off = 0;
	r->dst_off = round_up((uint64_t)r->nsrc * r->stride, 4096);
	r->sig_off = round_up(r->dst_off + (uint64_t)ndst(r) * r->stride, 64);
	r->total = round_up(r->sig_off + 64, 4096);
}

/* At most PERF_RING_BUDGET of sources and of slots (one of each at least),
 * at most depth slots per writer: more could never be in flight. */
static void ring_stream(struct perf_ring *r, size_t size, uint32_t nw, uint32_t depth)
{
	uint64_t stride = round_up(size, 64), fit = PERF_RING_BUDGET / stride;

	memset(r, 0, sizeof(*r));
	r->size = size;
	r->stride = stride;
	r->nw = nw;
	if (fit >= nw) {
		r->nslots = clamp32(fit / nw, 1, depth);
		r->nsrc = clamp32(fit, 1, 17);
		while (gcd(nw * r->nslots, r->nsrc) != 1)
			r->nsrc--;
	} else {
		r->shared = 1;
		r->nslots = clamp32(fit, 1, nw);
		r->nsrc = 1;
	}
	ring_place(r);
}

/* Two slots: one is checked while the next message lands in the other. */
static void ring_pingpong(struct perf_ring *r, size_t size)
{
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->stride = round_up(size, 64);
	r->nw = 1;
	r->nslots = 2;
	r->nsrc = clamp32(PERF_RING_BUDGET / r->stride, 1, 4);
	ring_place(r);
}

/* eth_echo: the first window frames of each CTA's chunk are built in its
 * window slots (one source region, unused). */
static void ring_eth(struct perf_ring *r, size_t size, uint32_t ctas, uint32_t window)
{
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->stride = round_up(size, 64);
	r->nw = ctas;
	r->nslots = window;
	r->nsrc = 1;
	ring_place(r);
}

void perf_ring_for(struct perf_ring *r, const struct perf_args *a, size_t size)
{
	if (a->test->flags & PERF_F_PINGPONG)
		ring_pingpong(r, size);
	else if (a->test->flags & PERF_F_ETH)
		ring_eth(r, size, (uint32_t)a->ctas, (uint32_t)a->eth_window);
	else
		ring_stream(r, size, perf_writers(a), (uint32_t)a->tx_depth);
}

/* The last of total iterations that wrote slot, or -1. */
static long ring_last(const struct perf_ring *r, uint32_t slot, long total)
{
	uint32_t w = r->shared ? slot : slot / r->nslots, j = r->shared ? 0 : slot % r->nslots;
	long count = total > (long)w ? (total - (long)w - 1) / (long)r->nw + 1 : 0;

	if (r->shared)
		return count ? (long)w : -1;
	if (count <= (long)j)
		return -1;
	return ((long)j + (long)r->nslots * ((count - 1 - (long)j) / (long)r->nslots)) * r->nw + w;
}

void perf_ring_fill(uint8_t *buf, const struct perf_ring *r, enum perf_side side)
{
	for (uint32_t k = 0; k < r->nsrc; k++)
		perf_pat_fill(buf + perf_ring_src(r, k), r->size, (uint32_t)side, k, 0);
}

void perf_ring_poison(uint8_t *buf, const struct perf_ring *r, enum perf_side src)
{
	for (uint32_t s = 0; s < ndst(r); s++)
		perf_pattern_poison(buf + perf_ring_dst(r, s), r->size, src);
}

bool perf_ring_check(const uint8_t *buf, const struct perf_ring *r, enum perf_side src, long total,
                     enum perf_side holder)
{
	char what[64];

	for (uint32_t s = 0; s < ndst(r); s++) {
		long last = ring_last(r, s, total);

		snprintf(what, sizeof(what), "slot %u of side %c", s, holder == PERF_A ? 'A' : 'B');
		if (!perf_pattern_check(buf + perf_ring_dst(r, s), r->size, src,
		                        last < 0 ? 0 : perf_ring_region(r, last),
		                        last < 0 ? ~0ull : 0, what, last))
			return false;
	}
	return true;
}

/* ---- streams: the hooks every stream test shares --------------------------------------------
 * The sources of side src (both with -b) are filled, the destination slots
 * of the other side poisoned; afterwards each slot must hold the last
 * message written to it. */
static bool receives(const struct perf_run *r, int side, enum perf_side src)
{
	return side != (int)src || r->a->bidir;
}

void perf_stream_setup(struct perf_run *r, enum perf_side src)
{
	const struct perf_ring *g = &r->ring;

	for (int side = PERF_A; side <= PERF_B; side++) {
		struct perf_ep *ep = r->ep[side];

		if (!ep)
			continue;
		if (side == (int)src || r->a->bidir) {
			perf_ring_fill(ep->buf, g, (enum perf_side)side);
			perf_ep_push(ep, g->src_off, g->dst_off - g->src_off);
		}
		if (receives(r, side, src)) {
			perf_ring_poison(ep->buf, g, perf_peer((enum perf_side)side));
			perf_ep_push(ep, g->dst_off, g->sig_off - g->dst_off);
		}
	}
}

bool perf_stream_validate(struct perf_run *r, enum perf_side src)
{
	const struct perf_ring *g = &r->ring;
	bool ok = true;

	for (int side = PERF_A; side <= PERF_B && ok; side++) {
		struct perf_ep *ep = r->ep[side];

		if (!ep || !receives(r, side, src))
			continue;
		perf_ep_pull(ep, g->dst_off, g->sig_off - g->dst_off);
		ok = perf_ring_check(ep->buf, g, perf_peer((enum perf_side)side), r->done,
		                     (enum perf_side)side);
	}
	return ok;
}

void perf_counter_setup(struct perf_run *r)
{
	uint64_t base = PERF_COUNTER_BASE;
	struct perf_ep *b = r->ep[PERF_B];

	if (b) {
		memcpy(b->buf + r->ring.sig_off, &base, 8);
		perf_ep_push(b, r->ring.sig_off, 8);
	}
}

bool perf_counter_check(struct perf_run *r)
{
	uint64_t got, want = PERF_COUNTER_BASE + perf_add_sum(r->done);
	struct perf_ep *b = r->ep[PERF_B];

	if (!b)
		return true;
	perf_ep_pull(b, r->ring.sig_off, 8);
	memcpy(&got, b->buf + r->ring.sig_off, 8);
	if (got != want)
		fprintf(stderr,
		        "gnic-perf: the counter is 0x%llx after %ld atomic adds, expected 0x%llx "
		        "(difference %lld)\n",
		        (unsigned long long)got, r->done, (unsigned long long)want,
		        (long long)(got - want));
	return got == want;
}
