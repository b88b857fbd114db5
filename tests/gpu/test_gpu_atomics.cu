/* SPDX-License-Identifier: MIT */
/*
 * Fetched values on one shared QP from many GPU threads, through gnic-emu in
 * one process: CTAS x THREADS threads share a GNIC_SHARE_GPU QP with a tiny
 * SQ (so posters lap it hundreds of times), and each fetch-adds 1 to its own
 * host word ITERS times, then compare-and-swaps it. Every returned old value
 * must be this thread's own (0, 1, 2, ...); the words must end exact. A
 * result slot reused before its owner read it shows up as a wrong old value.
 *
 *   test_gpu_atomics   exit 0 pass, 1 fail, 77 no GPU. Every wait is bounded.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

#include "gpu_check.h"

#define CTAS    8
#define THREADS 64
#define ITERS   64
#define NWORDS  (CTAS * THREADS)

struct result {
	unsigned int wrong;     /* old values that were not this thread's */
	unsigned int first_tid; /* the first wrong one: thread, op, value */
	unsigned int first_op;
	unsigned long long first_got;
	int rc; /* first device status other than OK */
};

__global__ void atomics_kernel(struct gnic_dev_qp *qp, uint64_t words, uint32_t rkey,
                               struct result *res)
{
	uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t addr = words + 8ull * tid, old = 0;
	int rc = 0;

	for (uint32_t i = 0; i < ITERS && !rc; i++) {
		rc = gnic_dev_atomic_fetch_add(qp, addr, rkey, 1, &old);
		if (!rc && old != i && atomicAdd(&res->wrong, 1) == 0) {
			res->first_tid = tid;
			res->first_op = i;
			res->first_got = old;
		}
	}
	/* CAS that hits (ITERS -> ITERS + 1000), then one that misses */
	if (!rc)
		rc = gnic_dev_atomic_cas(qp, addr, rkey, ITERS, ITERS + 1000, &old);
	if (!rc && old != ITERS)
		atomicAdd(&res->wrong, 1);
	if (!rc)
		rc = gnic_dev_atomic_cas(qp, addr, rkey, 7, 9, &old);
	if (!rc && old != ITERS + 1000)
		atomicAdd(&res->wrong, 1);
	if (rc)
		atomicCAS(&res->rc, 0, rc);
}

int main(void)
{
	struct gnic_ctx_attr ca;
	struct gnic_qp_attr qa;
	struct gnic_ctx *ctx;
	struct gnic_qp *a, *b;
	struct gnic_blob ba, bb;
	struct gnic_mr *mr;
	struct gnic_rmem rm;
	struct result *res, host;
	uint64_t *words;
	int ngpu = 0, fails = 0;

	if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
		printf("SKIP: no GPU\n");
		return 77;
	}
	CKC(cudaSetDevice(0));
	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = 0;
	CK(gnic_ctx_create(&ca, &ctx));
	CKC(cudaHostAlloc((void **)&words, NWORDS * 8, cudaHostAllocMapped));
	memset(words, 0, NWORDS * 8);
	CKC(cudaMalloc((void **)&res, sizeof(*res)));
	CKC(cudaMemset(res, 0, sizeof(*res)));
	CK(gnic_mr_reg(ctx, words, NWORDS * 8, GNIC_ACCESS_ALL, &mr));
	gnic_mr_rmem(mr, &rm);
	gnic_qp_attr_init(&qa);
	qa.share = GNIC_SHARE_GPU;
	qa.sq_depth = 8; /* 16 BBs at most: every poster laps the SQ all the time */
	CK(gnic_qp_create(ctx, &qa, &a));
	CK(gnic_qp_create(ctx, &qa, &b));
	CK(gnic_qp_export(a, &ba));
	CK(gnic_qp_export(b, &bb));
	CK(gnic_qp_connect(a, &bb));
	CK(gnic_qp_connect(b, &ba));
	atomics_kernel<<<CTAS, THREADS>>>(gnic_qp_dev(a), rm.addr, rm.rkey, res);
	CKC(cudaDeviceSynchronize());
	CKC(cudaMemcpy(&host, res, sizeof(host), cudaMemcpyDeviceToHost));
	if (host.rc) {
		fprintf(stderr, "FAIL: device status %d\n", host.rc);
		fails++;
	}
	if (host.wrong) {
		fprintf(stderr,
		        "FAIL: %u of %u fetched values wrong; first: thread %u op %u got %llu\n",
		        host.wrong, NWORDS * (ITERS + 2), host.first_tid, host.first_op,
		        host.first_got);
		fails++;
	}
	for (int i = 0; i < NWORDS; i++)
		if (words[i] != ITERS + 1000) {
			fprintf(stderr, "FAIL: word %d is %llu, want %d\n", i,
			        (unsigned long long)words[i], ITERS + 1000);
			fails++;
			break;
		}
	gnic_qp_destroy(a);
	gnic_qp_destroy(b);
	gnic_mr_dereg(mr);
	gnic_ctx_destroy(ctx);
	printf("%s: %d threads x %d fetch-adds + 2 CAS on one shared QP (SQ depth 8)\n",
	       fails ? "FAIL" : "PASS", NWORDS, ITERS);
	return fails ? 1 : 0;
}
