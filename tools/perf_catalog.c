/* SPDX-License-Identifier: MIT */
/*
 * The tests and modes gnic-perf knows. A new mode is one more row here plus
 * its run function; modes without one are reserved names that say what they
 * are waiting for.
 */
#include <stdio.h>
#include <string.h>

#include "perf.h"

static const struct perf_test tests[] = {
    {"put_bw", PERF_PUT_BW, PERF_KIND_BW, false,
     "RDMA WRITE bandwidth and message rate, many outstanding, every Nth signaled"},
    {"put_lat", PERF_PUT_LAT, PERF_KIND_LAT, true,
     "RDMA WRITE ping-pong; each side polls the last byte of its buffer"},
    {"get_bw", PERF_GET_BW, PERF_KIND_BW, false, "RDMA READ bandwidth and message rate"},
    {"get_lat", PERF_GET_LAT, PERF_KIND_LAT, false, "RDMA READ latency, one at a time"},
    {"atomic_rate", PERF_ATOMIC_RATE, PERF_KIND_ATOMIC, false,
     "8-byte fetch-add: rate (pipelined) and latency (one at a time)"},
    {"send_lat", PERF_SEND_LAT, PERF_KIND_LAT, true, "SEND/RECV ping-pong"},
    {"signal_lat", PERF_SIGNAL_LAT, PERF_KIND_LAT, true,
     "RDMA WRITE with immediate ping-pong; waits for receive completions"},
    {"memcpy", PERF_MEMCPY, PERF_KIND_LOCAL, false,
     "CPU memcpy bandwidth of this machine (reference, no NIC)"},
};

static const struct perf_mode modes[] = {
    {"host", "the CPU posts verbs work requests (ibv_post_send chains, ibv_poll_cq batches)",
     perf_host_run},
    {"gpu", "GPU threads post WQEs through libgnic", NULL},
    {"gpu-bf", "GPU threads post WQEs with BlueFlame doorbells through libgnic", NULL},
    {"cpu-assisted", "GPU threads write WQEs, a CPU thread rings doorbells (libgnic)", NULL},
    {"cpu-proxy", "GPU threads hand requests to a CPU proxy that posts them (libgnic)", NULL},
};

#define ARRAY_LEN(x) (sizeof(x) / sizeof((x)[0]))

const struct perf_test *perf_test_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(tests); i++)
		if (!strcmp(tests[i].name, name))
			return &tests[i];
	return NULL;
}

const struct perf_mode *perf_mode_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(modes); i++)
		if (!strcmp(modes[i].name, name))
			return &modes[i];
	return NULL;
}

bool perf_test_has_lat(const struct perf_test *t)
{
	return t->kind == PERF_KIND_LAT || t->kind == PERF_KIND_ATOMIC;
}

void perf_catalog_list(void)
{
	printf("Tests:\n");
	for (size_t i = 0; i < ARRAY_LEN(tests); i++)
		printf("  %-12s %s\n", tests[i].name, tests[i].help);
	printf("Modes:\n");
	for (size_t i = 0; i < ARRAY_LEN(modes); i++)
		printf("  %-12s %s%s\n", modes[i].name, modes[i].help,
		       modes[i].run ? "" : " [needs libgnic, not built yet]");
}
