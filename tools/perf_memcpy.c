/* SPDX-License-Identifier: MIT */
/*
 * memcpy: the CPU copy bandwidth of this machine, with the same buffer
 * layout, iteration pattern and validation as put_bw, so the two rows can be
 * compared directly (an emulated NIC moves bytes with memcpy too).
 */
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static void copy_range(uint8_t *buf, const struct perf_layout *l, long first, long count)
{
	for (long i = first; i < first + count; i++)
		memcpy(buf + perf_dst(l, 0, perf_stream_slot(l, i)),
		       buf + perf_src(l, perf_stream_region(l, i)), l->size);
}

static void check_all(uint8_t *buf, const struct perf_layout *l, long total)
{
	for (uint32_t s = 0; s < l->nslots; s++) {
		long last = perf_stream_last_iter(l, 0, s, total);

		perf_pattern_expect(buf + perf_dst(l, 0, s), l->size, PERF_A,
		                    perf_stream_region(l, last), "a memcpy destination", last);
	}
}

void perf_memcpy_run(const struct perf_args *a, size_t size, struct perf_result *r)
{
	long total = a->warmup + a->iters;
	struct perf_layout l;
	uint8_t *buf;
	uint64_t t0;

	perf_layout_for(&l, a, size);
	if (posix_memalign((void **)&buf, 4096, l.total))
		perf_fatal("cannot allocate %zu bytes", l.total);
	perf_fill_sources(buf, &l, PERF_A);
	for (uint32_t s = 0; s < l.nslots; s++) /* faults the pages in, too */
		perf_pattern_poison(buf + perf_dst(&l, 0, s), size, PERF_A,
		                    perf_stream_region(&l, perf_stream_last_iter(&l, 0, s, total)));
	copy_range(buf, &l, 0, a->warmup);
	t0 = perf_now_ns();
	copy_range(buf, &l, a->warmup, a->iters);
	r->elapsed_ns = (double)(perf_now_ns() - t0);
	if (a->validate)
		check_all(buf, &l, total);
	free(buf);
}
