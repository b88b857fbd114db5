/* SPDX-License-Identifier: MIT */
/*
 * What gnic-perf's host code and its device workers share, in C that also
 * compiles as CUDA: the list of tests, the buffer ring and its data
 * patterns, and what a launch of device threads carries.
 */
#ifndef GNIC_PERF_DEV_H
#define GNIC_PERF_DEV_H

#include <stdint.h>

#include <gnic/gnic_dev.h>

#if defined(__CUDACC__)
#define PERF_HD static __host__ __device__ __forceinline__
#else
#define PERF_HD static inline
#endif

#define PERF_MAX_QPS 1024 /* e.g. one per CTA, or one per warp */

/* Every test, one file each (NAME.c). The list makes the test enum, the
 * catalogue (perf_args.c) and the device workers' dispatch (perf_dev_worker.h). */
/* clang-format off */
#define PERF_TESTS(X) X(put_bw) X(get_bw) X(atomic_rate) X(post_rate) X(memcpy) \
	X(put_lat) X(send_lat) X(signal_lat) X(get_lat) X(atomic_lat) X(store_rate) X(flag_lat) \
	X(dma_bw) X(eth_echo)
/* clang-format on */
#define PERF_TEST_ENUM(name) PERF_TEST_##name,
enum perf_test_id { PERF_TESTS(PERF_TEST_ENUM) PERF_NTESTS };

enum perf_scope { PERF_SCOPE_THREAD, PERF_SCOPE_WARP, PERF_SCOPE_CTA };
enum perf_side { PERF_A, PERF_B }; /* A: the initiator (client), B: the target (server) */

/* ---- data patterns ----------------------------------------------------------------------
 * Byte off of pattern (side, region, len) is byte off % 8 of the
 * little-endian word perf_pat_word(key, off / 8), except the last byte: the
 * region's marker, which pollers take as "the rest is here". */
PERF_HD uint64_t perf_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

PERF_HD uint64_t perf_pat_key(uint32_t side, uint32_t region, uint64_t len)
{
	return perf_mix64(((uint64_t)side << 60) ^ ((uint64_t)region << 40) ^ len ^
	                  0x9e3779b97f4a7c15ull);
}

/* Never 0 (0 marks a consumed slot) and distinct for regions 0..127 of a side. */
PERF_HD uint8_t perf_pat_marker(uint32_t side, uint32_t region)
{
	return (uint8_t)(1 + (region + side * 128) % 255);
}

PERF_HD uint64_t perf_pat_word(uint64_t key, uint64_t w)
{
	return perf_mix64(key + w);
}

PERF_HD uint8_t perf_pat_byte(uint64_t key, uint64_t len, uint64_t off, uint8_t marker)
{
	if (off == len - 1)
		return marker;
	return (uint8_t)(perf_pat_word(key, off / 8) >> (8 * (off % 8)));
}

/* A pattern word as it sits in memory: little-endian (GPUs are). */
PERF_HD uint64_t perf_le64(uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ && !defined(__CUDA_ARCH__)
	return __builtin_bswap64(v);
#else
	return v;
#endif
}

/* The pattern into p, XORed with flip (~0: the poison, which differs in
 * every byte). Volatile: a NIC reads and writes this memory too. */
PERF_HD void perf_pat_fill(uint8_t *p, uint64_t len, uint32_t side, uint32_t region, uint64_t flip)
{
	uint64_t key = perf_pat_key(side, region, len), w;
	uint8_t marker = perf_pat_marker(side, region);

	for (w = 0; w < len / 8; w++)
		((volatile uint64_t *)p)[w] = perf_le64(perf_pat_word(key, w)) ^ flip;
	for (w *= 8; w < len; w++)
		((volatile uint8_t *)p)[w] = perf_pat_byte(key, len, w, marker) ^ (uint8_t)flip;
	((volatile uint8_t *)p)[len - 1] = marker ^ (uint8_t)flip; /* last: "the rest is here" */
}

/* The first offset where p differs from the pattern (or poison), or -1;
 * *seen and *want get the bytes there. */
PERF_HD int64_t perf_pat_find(const uint8_t *p, uint64_t len, uint32_t side, uint32_t region,
                              uint64_t flip, uint8_t *seen, uint8_t *want)
{
	uint64_t key = perf_pat_key(side, region, len), w;
	uint8_t marker = perf_pat_marker(side, region);

	for (w = 0; w + 1 < (len + 7) / 8; w++)
		if (((const volatile uint64_t *)p)[w] != (perf_le64(perf_pat_word(key, w)) ^ flip))
			break;
	for (w *= 8; w < len; w++) {
		*seen = ((const volatile uint8_t *)p)[w];
		*want = perf_pat_byte(key, len, w, marker) ^ (uint8_t)flip;
		if (*seen != *want)
			return (int64_t)w;
	}
	return -1;
}

/* Fetch-adds: iteration i adds perf_pat_add(i) to a counter that starts
 * at PERF_COUNTER_BASE; perf_add_sum(n) is what iterations 0..n-1 add. */
#define PERF_COUNTER_BASE 0x0123456700000000ull
PERF_HD uint64_t perf_pat_add(int64_t i)
{
	return (uint64_t)(i % 1000) + 1;
}

PERF_HD uint64_t perf_add_sum(int64_t n)
{
	uint64_t m = (uint64_t)n % 1000;

	return (uint64_t)(n / 1000) * 500500u + m * (m + 1) / 2;
}

/* ---- the buffer ring ----------------------------------------------------------------------
 * A side's buffer: nsrc source regions, the destination slots, then a
 * 64-byte word (signal or counter), each region and slot stride bytes.
 * Iteration i belongs to writer w = i % nw (a QP in host mode, a device
 * thread in the libgnic modes: either posts in program order through one
 * QP, so the last write to each of its slots is known) as its k = i / nw.
 * Own slots: writer w has slots w * nslots + (0 .. nslots-1), iteration i
 * goes to slot k % nslots from region i % nsrc, nsrc coprime with
 * nw * nslots so that consecutive writes of a slot carry other patterns.
 * Shared (own slots would not fit the memory budget): writer w always
 * writes slot w % nslots from region 0, so every slot ends up the same
 * whoever wrote it last. */
struct perf_ring {
	uint64_t size, stride;
	uint64_t src_off, dst_off, sig_off, total;
	uint32_t nw, nslots, nsrc, shared;
};

PERF_HD uint64_t perf_ring_src(const struct perf_ring *r, uint64_t region)
{
	return r->src_off + region * r->stride;
}

PERF_HD uint64_t perf_ring_dst(const struct perf_ring *r, uint64_t slot)
{
	return r->dst_off + slot * r->stride;
}

PERF_HD uint64_t perf_ring_slot(const struct perf_ring *r, int64_t i)
{
	uint64_t w = (uint64_t)i % r->nw, k = (uint64_t)i / r->nw;

	return r->shared ? w % r->nslots : w * r->nslots + k % r->nslots;
}

PERF_HD uint32_t perf_ring_region(const struct perf_ring *r, int64_t i)
{
	return r->shared ? 0 : (uint32_t)((uint64_t)i % r->nsrc);
}

/* Ping-pongs: message i goes from the sender's region i % nsrc into the
 * peer's slot i % 2 (one is checked while the next lands in the other). */
PERF_HD uint32_t perf_pp_region(const struct perf_ring *r, int64_t i)
{
	return (uint32_t)((uint64_t)i % r->nsrc);
}

PERF_HD uint64_t perf_pp_slot(const struct perf_ring *r, int64_t i)
{
	return perf_ring_dst(r, (uint64_t)i % 2);
}

PERF_HD uint64_t perf_pp_src(const struct perf_ring *r, int64_t i)
{
	return perf_ring_src(r, perf_pp_region(r, i));
}

/* ---- a launch of device threads ----------------------------------------------------------
 * ctas "CTAs" of threads threads per side (a CUDA grid of nsides * ctas
 * blocks, or nsides * ctas CPU threads of one thread each); thread g = cta *
 * threads + tid of a side posts on QP cta % nqps, so a warp or CTA shares one. */
/* Which call failed (pd_status.op), and its name in the report. */
/* clang-format off */
#define PD_OPS(X) X(PUT, "put") X(GET, "get") X(PUT_SIGNAL, "put_signal") X(ADD, "add") \
	X(FETCH_ADD, "fetch-add") X(SEND, "send") X(RECV_POST, "receive post") \
	X(RECV_WAIT, "receive") X(QUIET, "quiet") X(WAIT, "wait") X(RETIRE, "retire") \
	X(CHECK, "check")
/* clang-format on */
#define PD_OP_ENUM(name, text) PD_OP_##name,
enum pd_op { PD_OP_NONE, PD_OPS(PD_OP_ENUM) PD_NOPS };

/* Failures the workers find themselves, besides gnic_dev statuses, and what
 * the report says of each (pd_status: off, got, want); PD_PEER_FAILED is
 * not recorded: the other side's status says why. */
#define PD_BADS(X)                                                                                 \
	X(DATA, "data mismatch (at: the byte)")                                                    \
	X(LEN, "a receive of the wrong length")                                                    \
	X(SIGNAL, "a wrong signal word")                                                           \
	X(FETCH, "a fetch-add fetched a wrong value")                                              \
	X(COUNTER, "a QP counter is off (at: 0 sq_reserved, 1 sq_ready, 2 sq_rung, "               \
	           "3 sq_retired, 4 CPU doorbell, 5 doorbell record)")                             \
	X(WQE, "a WQE field is off (iteration: 0 ctrl word 0, 1 ctrl word 1, 2 length, "           \
	       "3 lkey, 4 rkey, 5 remote offset, 6 local offset; at: its BB)")                     \
	X(LOST, "frames lost: an echo out of sequence (iteration: the one expected; got: the "     \
	        "sequence number that came)")                                                      \
	X(FRAME, "a frame with the wrong flow tag or checksum flags (got, expected: tag << 32 | "  \
	         "GNIC_ETH_RX_* flags)")
#define PD_BAD_ENUM(name, text) PD_BAD_##name,
enum pd_bad { PD_BAD_BASE = -101, PD_BADS(PD_BAD_ENUM) PD_PEER_FAILED };

struct pd_status { /* the launch's first failure and the span of its iterations */
	uint32_t claimed;
	int32_t rc, op;
	uint32_t q;
	int64_t iter, off;
	uint64_t got, want;
	uint64_t t_start, t_end; /* ns (gnic_now_ns) */
	uint64_t c_start, c_end; /* pd_clock() units, the samples' unit */
};

struct pd_side {
	struct gnic_dev_qp *const *qp; /* nqps (gnic_qp_group_dev); the doorbell mode says how work
	                                * gets out */
	struct gnic_dev_eth *const *eth; /* eth_echo: the side's Ethernet queues, one per CTA */
	const uint64_t *bb; /* post_rate: QP q has taken bb[2q] BBs, bb[2q + 1] on in this row */
	struct perf_ring r;
	uint8_t *lbase; /* the local buffer as registered, device-accessible */
	uint64_t rbase; /* the peer's buffer */
	uint32_t lkey, rkey;
	int64_t first, count; /* iterations [first, first + count) */
	int64_t stop;         /* no iteration at or after stop will follow */
	uint64_t *lat;        /* latency samples in pd_clock() units, count of them */
	struct pd_status *st;
	struct pd_status *peer_st; /* in-process ping-pong: stop when the peer failed */
	uint64_t timeout_ns;
	uint32_t nqps, side, test, phase, scope, validate;
};

struct pd_launch {
	struct pd_side side[2];
	uint32_t nsides, ctas, threads, rsvd;
};

#endif /* GNIC_PERF_DEV_H */
