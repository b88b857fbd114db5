/* SPDX-License-Identifier: MIT */
/*
 * memcpy: the CPU copy bandwidth of this machine, with put_bw's ring,
 * iteration pattern and validation in one local buffer, so the two can be
 * compared (an emulated NIC moves bytes with memcpy too). No NIC, no sides.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN void memcpy_dev(const struct pd_side *s, const struct pd_thread *t)
{
	(void)s, (void)t; /* a local test: never launched */
}
#else
#include <string.h>

#include "perf.h"

static void setup(struct perf_run *r)
{
	perf_ring_fill(r->local, &r->ring, PERF_A);
	perf_ring_poison(r->local, &r->ring, PERF_A); /* faults the pages in, too */
}

static void run(struct perf_run *r)
{
	uint64_t t0 = perf_now_ns();

	for (long i = r->first; i < r->first + r->count; i++)
		memcpy(r->local + perf_ring_dst(&r->ring, perf_ring_slot(&r->ring, i)),
		       r->local + perf_ring_src(&r->ring, perf_ring_region(&r->ring, i)), r->size);
	r->ns = (double)(perf_now_ns() - t0);
}

static bool validate(struct perf_run *r)
{
	return perf_ring_check(r->local, &r->ring, PERF_A, r->done, PERF_A);
}

PERF_TEST_DEF(memcpy, PERF_BW, 1u << PERF_HOST, PERF_F_LOCAL, "1-1M", 5000, 1000,
              "CPU memcpy bandwidth of this machine (reference, no NIC)", .setup = setup,
              .run = run, .validate = validate);
#endif
