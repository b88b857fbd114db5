/* SPDX-License-Identifier: MIT */
/*
 * Host side shared by the Ethernet examples: where their device code runs.
 * A C build starts it on a CPU thread; a CUDA build (the _gpu.cu files,
 * which include the .c) launches it as a one-thread kernel. The control
 * block is host memory either way (mapped into the GPU). Also the set-up
 * their main()s share: the context, and the UDP port rule each one adds.
 */
#ifndef GNIC_EXAMPLE_ETH_RUN_H
#define GNIC_EXAMPLE_ETH_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eth_apps.h"

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include <pthread.h>
#endif

static inline uint64_t eth_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t eth_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct eth_job {
	int app; /* 0 echo, 1 count, 2 send */
	struct gnic_dev_eth *eth;
	struct gnic_dev_ring *ring;
	struct eth_ctl *ctl;  /* its control block (host memory) */
	struct eth_ctl *peer; /* send: the counter's */
	uint64_t count;       /* send: frames */
#if defined(__CUDACC__)
	cudaStream_t stream;
#else
	pthread_t thread;
#endif
};

#if defined(__CUDACC__)
__global__ void eth_kernel(struct gnic_dev_eth *eth, struct gnic_dev_ring *ring,
                           struct eth_ctl *ctl, struct eth_ctl *peer, uint64_t count, int app)
{
	if (app == 0)
		eth_echo_run(eth, ctl);
	else if (app == 1)
		eth_count_run(eth, ring, ctl);
	else
		eth_send_run(eth, ctl, peer, count);
}

static inline int eth_gpu_count(void)
{
	int n = 0;

	return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

static struct eth_ctl *eth_ctl_alloc(void)
{
	struct eth_ctl *c = NULL;

	if (cudaHostAlloc((void **)&c, sizeof(*c), cudaHostAllocMapped) != cudaSuccess)
		return NULL;
	memset(c, 0, sizeof(*c));
	return c;
}

static void eth_ctl_free(struct eth_ctl *c)
{
	cudaFreeHost(c);
}

/* Each job on a stream of its own: the counter and its sender run at once. */
static int eth_start(struct eth_job *j)
{
	struct eth_ctl *dctl, *dpeer = NULL;

	if (cudaHostGetDevicePointer((void **)&dctl, j->ctl, 0) != cudaSuccess ||
	    (j->peer && cudaHostGetDevicePointer((void **)&dpeer, j->peer, 0) != cudaSuccess) ||
	    cudaStreamCreateWithFlags(&j->stream, cudaStreamNonBlocking) != cudaSuccess)
		return -1;
	eth_kernel<<<1, 1, 0, j->stream>>>(j->eth, j->ring, dctl, dpeer, j->count, j->app);
	return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

static int eth_join(struct eth_job *j)
{
	int rc = cudaStreamSynchronize(j->stream) == cudaSuccess ? 0 : -1;

	cudaStreamDestroy(j->stream);
	return rc;
}

#define ETH_GPU_CTX 0 /* GPU 0 */
#else
static void *eth_thread_main(void *arg)
{
	struct eth_job *j = (struct eth_job *)arg;

	if (j->app == 0)
		eth_echo_run(j->eth, j->ctl);
	else if (j->app == 1)
		eth_count_run(j->eth, j->ring, j->ctl);
	else
		eth_send_run(j->eth, j->ctl, j->peer, j->count);
	return NULL;
}

static struct eth_ctl *eth_ctl_alloc(void)
{
	return (struct eth_ctl *)calloc(1, sizeof(struct eth_ctl));
}

static void eth_ctl_free(struct eth_ctl *c)
{
	free(c);
}

static int eth_start(struct eth_job *j)
{
	return pthread_create(&j->thread, NULL, eth_thread_main, j) ? -1 : 0;
}

static int eth_join(struct eth_job *j)
{
	return pthread_join(j->thread, NULL) ? -1 : 0;
}

#define ETH_GPU_CTX GNIC_GPU_NONE
#endif

static inline uint64_t eth_ctl_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void eth_ctl_stop(struct eth_ctl *c)
{
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
}

static inline int eth_fail(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, gnic_last_error());
	return 2;
}

/*
 * The context the examples run on: GPU 0 in a CUDA build (exit 77, skip,
 * on a machine without one), no GPU in a C build, where the device code
 * runs on CPU threads. Returns 0 with *ctx set, else the exit status.
 */
static inline int eth_ctx_open(const char *prog, struct gnic_ctx **ctx)
{
	struct gnic_ctx_attr ca;

#if defined(__CUDACC__)
	if (eth_gpu_count() == 0) {
		printf("SKIP: no GPU\n");
		return 77;
	}
#endif
	gnic_ctx_attr_init(&ca);
	ca.gpu = ETH_GPU_CTX;
	if (gnic_ctx_create(&ca, ctx))
		return eth_fail(prog, "gnic_ctx_create");
	return 0;
}

/* A rule for IPv4 UDP to destination port `port`, delivered with `tag`. */
static inline void eth_udp_rule(struct gnic_eth_rule *r, uint16_t port, uint32_t tag)
{
	memset(r, 0, sizeof(*r));
	r->match = GNIC_ETH_MATCH_DST_PORT;
	r->ip_version = 4;
	r->l4 = GNIC_ETH_L4_UDP;
	r->dst_port = port;
	r->flow_tag = tag;
}

#endif /* GNIC_EXAMPLE_ETH_RUN_H */
