/* SPDX-License-Identifier: MIT */
/*
 * The tests and modes gnic-perf knows. A new mode is one more row here plus
 * its run function.
 */
#include <stdio.h>
#include <string.h>

#include <gnic/gnic_dev.h>

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
     "ping-pong on a signal: host mode WRITE with immediate + receive completion, "
     "libgnic modes put_signal + wait_signal"},
    {"memcpy", PERF_MEMCPY, PERF_KIND_LOCAL, false,
     "CPU memcpy bandwidth of this machine (reference, no NIC)"},
    {"post_rate", PERF_POST_RATE, PERF_KIND_POST, false,
     "WQEs device threads post per second with no consumer (unconnected QPs, "
     "retired by the benchmark), per scope"},
};

static const struct perf_mode modes[] = {
    {.name = "host",
     .help = "the CPU posts verbs work requests (ibv_post_send chains, ibv_poll_cq batches)",
     .run = perf_host_run},
    {.name = "gpu",
     .help = "device threads write WQEs and ring the doorbell themselves (GNIC_DB_SM)",
     .gnic = true,
     .db_mode = GNIC_DB_SM,
     .run = perf_gnic_run},
    {.name = "gpu-bf",
     .help = "device threads write WQEs and ring with BlueFlame copies (GNIC_DB_BF)",
     .gnic = true,
     .db_mode = GNIC_DB_BF,
     .run = perf_gnic_run},
    {.name = "cpu-assisted",
     .help = "device threads write WQEs, libgnic's progress thread rings (GNIC_DB_CPU)",
     .gnic = true,
     .db_mode = GNIC_DB_CPU,
     .run = perf_gnic_run},
    /* the proxy's own QPs ring like host software: SM doorbells from a CPU thread */
    {.name = "cpu-proxy",
     .help = "device threads hand descriptors to a CPU proxy thread that builds and posts "
             "the WQEs",
     .gnic = true,
     .db_mode = GNIC_DB_SM,
     .proxy = true,
     .run = perf_gnic_run},
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
		printf("  %-12s %s\n", modes[i].name, modes[i].help);
	printf("The libgnic modes run their device threads as CUDA threads on a GPU, or as\n"
	       "CPU threads (the same code) when there is none.\n");
}
