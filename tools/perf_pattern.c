/* SPDX-License-Identifier: MIT */
/*
 * Data patterns and buffer layouts.
 *
 * Every message carries a pattern that depends on (side, source region,
 * length), so a byte that arrives from the wrong place, from an earlier
 * message or not at all is caught. Sources are filled once per size, outside
 * the timed loop; which region a message uses follows from its iteration
 * number, so the target knows what each slot must finally hold without being
 * told.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "perf_pattern.h"

#define DST_BUDGET   (16ul << 20) /* destination bytes per side for streams */
#define MAX_SLOTS    64
#define MAX_SRC      17
#define ATOMIC_SLOTS 256

static uint64_t pattern_key(enum perf_side side, uint32_t region, size_t len)
{
	return perf_pat_key((uint32_t)side, region, len);
}

uint8_t perf_pattern_marker(enum perf_side side, uint32_t region)
{
	return perf_pat_marker((uint32_t)side, region);
}

/* Word w of a pattern, in memory order (little-endian on every host). */
static uint64_t pattern_word(uint64_t key, size_t w)
{
	return htole64(perf_pat_word(key, w));
}

static uint8_t pattern_byte(uint64_t key, size_t len, size_t off, uint8_t marker)
{
	return perf_pat_byte(key, len, off, marker);
}

static void fill(uint8_t *p, size_t len, enum perf_side side, uint32_t region, uint64_t flip)
{
	uint64_t key = pattern_key(side, region, len);
	uint8_t marker = perf_pattern_marker(side, region);
	size_t w, off;

	for (w = 0; w < len / 8; w++) {
		uint64_t v = pattern_word(key, w) ^ flip;

		memcpy(p + w * 8, &v, 8);
	}
	for (off = w * 8; off < len; off++)
		p[off] = pattern_byte(key, len, off, marker) ^ (uint8_t)flip;
	/* The marker goes last: pollers take it as "the rest is here". */
	p[len - 1] = marker ^ (uint8_t)flip;
}

void perf_pattern_fill(uint8_t *p, size_t len, enum perf_side side, uint32_t region)
{
	fill(p, len, side, region, 0);
}

/* The complement of the pattern: no byte matches before the data lands. */
void perf_pattern_poison(uint8_t *p, size_t len, enum perf_side side, uint32_t region)
{
	fill(p, len, side, region, ~0ull);
}

/* First differing offset, or -1; *seen gets the byte read there (the
 * memory may change under us while a NIC writes it). */
static long find_mismatch(const uint8_t *p, size_t len, enum perf_side side, uint32_t region,
                          uint8_t *seen)
{
	uint64_t key = pattern_key(side, region, len);
	uint8_t marker = perf_pattern_marker(side, region);
	size_t w, off = 0;

	for (w = 0; w + 1 < (len + 7) / 8; w++) {
		uint64_t v, want = pattern_word(key, w);

		memcpy(&v, p + w * 8, 8);
		if (v != want)
			break;
	}
	for (off = w * 8; off < len; off++) {
		uint8_t b = p[off];

		if (b != pattern_byte(key, len, off, marker)) {
			*seen = b;
			return (long)off;
		}
	}
	return -1;
}

long perf_pattern_find(const uint8_t *p, size_t len, enum perf_side side, uint32_t region)
{
	uint8_t seen;

	return find_mismatch(p, len, side, region, &seen);
}

bool perf_pattern_check(const uint8_t *p, size_t len, enum perf_side side, uint32_t region,
                        const char *what, long iter)
{
	uint8_t seen = 0;
	long off = find_mismatch(p, len, side, region, &seen);
	uint64_t key = pattern_key(side, region, len);

	if (off < 0)
		return true;
	fflush(stdout);
	fprintf(stderr,
	        "gnic-perf: data mismatch in %s after iteration %ld: byte %ld of %zu is 0x%02x, "
	        "expected 0x%02x (pattern of side %c, region %u)\n",
	        what, iter, off, len, seen,
	        pattern_byte(key, len, (size_t)off, perf_pattern_marker(side, region)),
	        side == PERF_A ? 'A' : 'B', region);
	if (perf_pattern_find(p, len, side, region) < 0)
		fprintf(stderr, "gnic-perf: a second look finds the data right: it landed after "
		                "the byte that signalled its arrival\n");
	return false;
}

void perf_pattern_expect(const uint8_t *p, size_t len, enum perf_side side, uint32_t region,
                         const char *what, long iter)
{
	if (!perf_pattern_check(p, len, side, region, what, iter))
		exit(PERF_EXIT_FAIL);
}

void perf_fill_sources(uint8_t *buf, const struct perf_layout *l, enum perf_side side)
{
	for (uint32_t r = 0; r < l->nsrc; r++)
		perf_pattern_fill(buf + perf_src(l, r), l->size, side, r);
}

/* Before a stream: every destination slot holds the complement of what it
 * must hold afterwards, so a write that never lands is caught. */
void perf_stream_poison(uint8_t *buf, const struct perf_layout *l, enum perf_side src, long total)
{
	for (uint32_t q = 0; q < l->nqps; q++)
		for (uint32_t s = 0; s < l->nslots; s++)
			perf_pattern_poison(
			    buf + perf_dst(l, q, s), l->size, src,
			    perf_stream_region(l, perf_stream_last_iter(l, q, s, total)));
}

bool perf_stream_check(const uint8_t *buf, const struct perf_layout *l, enum perf_side src,
                       long total, const char *unit, enum perf_side holder)
{
	char what[64];

	for (uint32_t q = 0; q < l->nqps; q++) {
		for (uint32_t s = 0; s < l->nslots; s++) {
			long last = perf_stream_last_iter(l, q, s, total);

			snprintf(what, sizeof(what), "%s %u slot %u (side %c)", unit, q, s,
			         holder == PERF_A ? 'A' : 'B');
			if (!perf_pattern_check(buf + perf_dst(l, q, s), l->size, src,
			                        perf_stream_region(l, last), what, last))
				return false;
		}
	}
	return true;
}

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static void layout_finish(struct perf_layout *l)
{
	l->src_off = 0;
	l->dst_off = round_up((size_t)l->nsrc * l->stride, 4096);
	l->total = round_up(l->dst_off + (size_t)l->nqps * l->nslots * l->stride, 4096);
}

/*
 * Streams cycle each QP through nslots destination slots (bounded memory)
 * and the source regions; nsrc is coprime to nqps * nslots so that two
 * consecutive writes of one slot never carry the same pattern.
 */
void perf_layout_stream(struct perf_layout *l, size_t size, int nqps, long total_iters)
{
	size_t slots;

	l->size = size;
	l->stride = round_up(size, 64);
	l->nqps = (uint32_t)nqps;
	slots = DST_BUDGET / (l->stride * (size_t)nqps);
	slots = slots < 1 ? 1 : slots > MAX_SLOTS ? MAX_SLOTS : slots;
	if ((long)slots > total_iters / nqps)
		slots = (size_t)(total_iters / nqps); /* every slot gets written */
	l->nslots = (uint32_t)slots;
	l->nsrc = l->nslots + 1 < MAX_SRC ? l->nslots + 1 : MAX_SRC;
	if (l->nsrc < 3)
		l->nsrc = 3;
	while (gcd((uint64_t)l->nqps * l->nslots, l->nsrc) != 1)
		l->nsrc++;
	layout_finish(l);
}

/* Ping-pong: two receive slots (one may be checked while the next message
 * lands in the other) and four sources, so consecutive markers differ. */
void perf_layout_pingpong(struct perf_layout *l, size_t size)
{
	l->size = size;
	l->stride = round_up(size, 64);
	l->nqps = 1;
	l->nslots = 2;
	l->nsrc = 4;
	layout_finish(l);
}

/* Atomics: slot (0, 0) of side B is the counter; side A's slots take the
 * values fetched, one per request in flight. */
void perf_layout_atomic(struct perf_layout *l, int nqps, int depth)
{
	l->size = 8;
	l->stride = 8;
	l->nqps = (uint32_t)nqps;
	l->nslots = depth < ATOMIC_SLOTS ? (uint32_t)depth : ATOMIC_SLOTS;
	l->nsrc = 0;
	layout_finish(l);
}

void perf_layout_for(struct perf_layout *l, const struct perf_args *a, size_t size)
{
	long total = a->iters + a->warmup;

	switch (a->test->kind) {
	case PERF_KIND_LAT:
		perf_layout_pingpong(l, size);
		break;
	case PERF_KIND_ATOMIC:
		perf_layout_atomic(l, a->qps, a->tx_depth);
		break;
	case PERF_KIND_LOCAL:
		perf_layout_stream(l, size, 1, total);
		break;
	default:
		perf_layout_stream(l, size, a->qps, total);
		break;
	}
}

size_t perf_buffer_len(const struct perf_args *a)
{
	size_t len = 4096;

	for (int i = 0; i < a->nsizes; i++) {
		struct perf_layout l;

		perf_layout_for(&l, a, a->sizes[i]);
		if (l.total > len)
			len = l.total;
	}
	return len;
}

uint32_t perf_stream_slot(const struct perf_layout *l, long i)
{
	return (uint32_t)((i / l->nqps) % l->nslots);
}

uint32_t perf_stream_region(const struct perf_layout *l, long i)
{
	return (uint32_t)(i % l->nsrc);
}

long perf_stream_last_iter(const struct perf_layout *l, uint32_t q, uint32_t s, long total)
{
	long count = (total - q + l->nqps - 1) / l->nqps; /* iterations of QP q */
	long last = s + (long)l->nslots * ((count - 1 - s) / l->nslots);

	return last * l->nqps + q;
}
