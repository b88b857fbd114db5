/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic of gnic-perf's data patterns, shared by the host
 * (perf_pattern.c) and the device workers (perf_dev_worker.h, compiled for
 * CUDA kernels and for CPU threads), so a device thread that receives a
 * message checks it against exactly what the host would.
 *
 * Byte off of the pattern (side, region, len) is byte off % 8 of the
 * little-endian representation of perf_pat_word(key, off / 8), except the
 * last byte, which is the region's marker.
 */
#ifndef GNIC_PERF_PATTERN_H
#define GNIC_PERF_PATTERN_H

#include <stdint.h>

#if defined(__CUDACC__)
#define PERF_HD static __host__ __device__ __forceinline__
#else
#define PERF_HD static inline
#endif

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

/* Never 0 and distinct for regions 0..127 of one side. */
PERF_HD uint8_t perf_pat_marker(uint32_t side, uint32_t region)
{
	return (uint8_t)(1 + (region + side * 128) % 255);
}

/* Word w of the pattern as a number (store it little-endian). */
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

/* Addend of fetch-add iteration i (atomic_rate). */
PERF_HD uint64_t perf_pat_add(int64_t i)
{
	return (uint64_t)(i % 1000) + 1;
}

#endif /* GNIC_PERF_PATTERN_H */
