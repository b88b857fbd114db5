/* SPDX-License-Identifier: MIT */
/*
 * Mode "host": the CPU posts verbs work requests itself (the baseline the
 * GPU modes are measured against). One function per family of tests.
 */
#include "perf.h"

void perf_host_run(struct perf_session *s, const struct perf_test *t, size_t size,
                   struct perf_result *r)
{
	switch (t->id) {
	case PERF_PUT_BW:
	case PERF_GET_BW:
		perf_host_stream(s, t, size, r);
		break;
	case PERF_PUT_LAT:
	case PERF_SEND_LAT:
	case PERF_SIGNAL_LAT:
		perf_host_pingpong(s, t, size, r);
		break;
	case PERF_GET_LAT:
		perf_host_get_lat(s, size, r);
		break;
	case PERF_ATOMIC_RATE:
		perf_host_atomic(s, r);
		break;
	case PERF_MEMCPY:
		perf_memcpy_run(s->args, size, r);
		break;
	case PERF_POST_RATE: /* refused by perf_args_check() */
		perf_fatal("post_rate has no host mode");
	}
}
