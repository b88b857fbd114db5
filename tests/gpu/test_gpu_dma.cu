/* SPDX-License-Identifier: MIT */
/*
 * Local DMA from GPU threads (gnic_dev_dma.cuh) through gnic-emu in one
 * process, between host memory and GPU memory:
 *   1. host -> GPU, thread scope: every thread copies its own piece (length
 *      0..8000, odd offsets) from a registered host buffer into a
 *      registered cudaMalloc buffer and waits on its ticket;
 *   2. GPU -> GPU, warp scope: every lane its own piece, one quiet per warp;
 *   3. GPU -> host, batch: thread 0 of each CTA posts its CTA's pieces as one
 *      batch and waits on the batch's ticket;
 *   4. GPU -> GPU, CTA scope, into the first GPU buffer cleared again.
 * The host checks every piece of every stage byte for byte and the bytes
 * between pieces (guards) unchanged, and device statuses all OK.
 *
 *   test_gpu_dma   exit 0 pass, 1 fail, 77 no GPU. Every wait is bounded.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev_dma.cuh>

#include "gpu_check.h"

#define CTAS    8
#define THREADS 64
#define NPIECE  (CTAS * THREADS)
#define SLOT    8192u
#define BUF     ((size_t)NPIECE * SLOT)
#define GUARD   0xee

/* Piece i: [i * SLOT + off, + len) in every buffer. */
__host__ __device__ static uint32_t piece_len(uint32_t i)
{
	return i % 13 == 0 ? 0 : (i * 2654435761u) % 8000u;
}

__host__ __device__ static uint32_t piece_off(uint32_t i)
{
	return i % 7;
}

struct keys {
	uint8_t *host_src, *gpu_a, *gpu_b, *host_dst;
	uint32_t host_src_lkey, gpu_a_lkey, gpu_b_lkey;
	uint32_t gpu_a_rkey, gpu_b_rkey, host_dst_rkey;
};

__global__ void host_to_gpu(struct gnic_dev_dma *dma, struct keys k, int *status)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	size_t at = (size_t)i * SLOT + piece_off(i);
	uint64_t ticket;
	int rc = gnic_dev_dma_copy(dma, k.gpu_a + at, k.gpu_a_rkey, k.host_src + at,
	                           k.host_src_lkey, piece_len(i), 0, &ticket);

	if (rc == 0)
		rc = gnic_dev_dma_wait(dma, ticket);
	if (rc)
		atomicCAS(status, 0, rc);
}

__global__ void gpu_to_gpu_warp(struct gnic_dev_dma *dma, struct keys k, int *status)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	size_t at = (size_t)i * SLOT + piece_off(i);
	int rc = gnic_dev_dma_copy_warp(dma, k.gpu_b + at, k.gpu_b_rkey, k.gpu_a + at, k.gpu_a_lkey,
	                                piece_len(i));

	if (rc == 0)
		rc = gnic_dev_dma_quiet(dma);
	if (rc)
		atomicCAS(status, 0, rc);
}

__global__ void gpu_to_host_batch(struct gnic_dev_dma *dma, struct keys k, int *status)
{
	__shared__ struct gnic_dma_desc d[THREADS];
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	size_t at = (size_t)i * SLOT + piece_off(i);
	uint64_t ticket;
	int rc;

	d[threadIdx.x].dst = (uint64_t)(uintptr_t)(k.host_dst + at);
	d[threadIdx.x].src = (uint64_t)(uintptr_t)(k.gpu_b + at);
	d[threadIdx.x].dst_rkey = k.host_dst_rkey;
	d[threadIdx.x].src_lkey = k.gpu_b_lkey;
	d[threadIdx.x].len = piece_len(i);
	d[threadIdx.x].rsvd = 0;
	__syncthreads();
	if (threadIdx.x != 0)
		return;
	rc = gnic_dev_dma_copy_batch(dma, d, THREADS, 0, &ticket);
	if (rc == 0)
		rc = gnic_dev_dma_wait(dma, ticket);
	if (rc)
		atomicCAS(status, 0, rc);
}

__global__ void gpu_to_gpu_cta(struct gnic_dev_dma *dma, struct keys k, int *status)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	size_t at = (size_t)i * SLOT + piece_off(i);
	int rc = gnic_dev_dma_copy_cta(dma, k.gpu_a + at, k.gpu_a_rkey, k.gpu_b + at, k.gpu_b_lkey,
	                               piece_len(i));

	if (rc == 0 && threadIdx.x == 0)
		rc = gnic_dev_dma_quiet(dma);
	if (rc)
		atomicCAS(status, 0, rc);
}

/* Every piece of got equals src's, every other byte is GUARD. */
static int check(const char *stage, const uint8_t *got, const uint8_t *src)
{
	for (uint32_t i = 0; i < NPIECE; i++) {
		size_t base = (size_t)i * SLOT, at = base + piece_off(i), end = at + piece_len(i);

		for (size_t j = base; j < base + SLOT; j++) {
			int want = j >= at && j < end ? src[j] : GUARD;

			if (got[j] != want) {
				fprintf(stderr,
				        "FAIL: %s: piece %u byte %zu is 0x%02x, want 0x%02x\n",
				        stage, i, j - base, got[j], want);
				return 1;
			}
		}
	}
	printf("%s: %d pieces ok\n", stage, NPIECE);
	return 0;
}

static int run_stage(const char *stage, int *status)
{
	int st = 0;

	CKC(cudaGetLastError());
	CKC(cudaDeviceSynchronize());
	CKC(cudaMemcpy(&st, status, sizeof(st), cudaMemcpyDeviceToHost));
	if (st) {
		fprintf(stderr, "FAIL: %s: device status %d\n", stage, st);
		return 1;
	}
	return 0;
}

int main(void)
{
	struct gnic_ctx_attr ca;
	struct gnic_qp_attr qa;
	struct gnic_ctx *ctx;
	struct gnic_dma *dma;
	struct gnic_dev_dma *d;
	struct gnic_mr *m_src, *m_a, *m_b, *m_dst;
	struct gnic_qp_error err;
	struct keys k;
	uint8_t *src, *dst, *host;
	int *status, ngpu = 0, fails = 0;

	if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
		printf("SKIP: no GPU\n");
		return 77;
	}
	CKC(cudaSetDevice(0));
	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = 0;
	CK(gnic_ctx_create(&ca, &ctx));
	gnic_qp_attr_init(&qa);
	qa.share = GNIC_SHARE_GPU;
	qa.sq_depth = 256; /* the 512 thread-scope copies lap it */
	CK(gnic_dma_create(ctx, &qa, &dma));
	d = gnic_dma_dev(dma);

	CKC(cudaHostAlloc((void **)&src, BUF, cudaHostAllocMapped));
	CKC(cudaHostAlloc((void **)&dst, BUF, cudaHostAllocMapped));
	host = (uint8_t *)malloc(BUF);
	for (size_t j = 0; j < BUF; j++)
		src[j] = (uint8_t)(j * 131 + (j >> 11) + 1);
	memset(dst, GUARD, BUF);
	CKC(cudaMalloc((void **)&k.gpu_a, BUF));
	CKC(cudaMalloc((void **)&k.gpu_b, BUF));
	CKC(cudaMemset(k.gpu_a, GUARD, BUF));
	CKC(cudaMemset(k.gpu_b, GUARD, BUF));
	CKC(cudaMalloc((void **)&status, sizeof(int)));
	CKC(cudaMemset(status, 0, sizeof(int)));
	CK(gnic_mr_reg(ctx, src, BUF, GNIC_ACCESS_LOCAL, &m_src));
	CK(gnic_mr_reg(ctx, k.gpu_a, BUF, GNIC_ACCESS_LOCAL | GNIC_ACCESS_REMOTE_WRITE, &m_a));
	CK(gnic_mr_reg(ctx, k.gpu_b, BUF, GNIC_ACCESS_LOCAL | GNIC_ACCESS_REMOTE_WRITE, &m_b));
	CK(gnic_mr_reg(ctx, dst, BUF, GNIC_ACCESS_LOCAL | GNIC_ACCESS_REMOTE_WRITE, &m_dst));
	k.host_src = src; /* registered host memory: the NIC addresses it by its VA */
	k.host_dst = dst;
	k.host_src_lkey = gnic_mr_lkey(m_src);
	k.gpu_a_lkey = gnic_mr_lkey(m_a);
	k.gpu_b_lkey = gnic_mr_lkey(m_b);
	k.gpu_a_rkey = gnic_mr_rkey(m_a);
	k.gpu_b_rkey = gnic_mr_rkey(m_b);
	k.host_dst_rkey = gnic_mr_rkey(m_dst);

	host_to_gpu<<<CTAS, THREADS>>>(d, k, status);
	fails += run_stage("host -> GPU (thread scope)", status);
	CKC(cudaMemcpy(host, k.gpu_a, BUF, cudaMemcpyDeviceToHost));
	fails += check("host -> GPU (thread scope)", host, src);

	gpu_to_gpu_warp<<<CTAS, THREADS>>>(d, k, status);
	fails += run_stage("GPU -> GPU (warp scope)", status);
	CKC(cudaMemcpy(host, k.gpu_b, BUF, cudaMemcpyDeviceToHost));
	fails += check("GPU -> GPU (warp scope)", host, src);

	gpu_to_host_batch<<<CTAS, THREADS>>>(d, k, status);
	fails += run_stage("GPU -> host (batch)", status);
	fails += check("GPU -> host (batch)", dst, src);

	CKC(cudaMemset(k.gpu_a, GUARD, BUF));
	gpu_to_gpu_cta<<<CTAS, THREADS>>>(d, k, status);
	fails += run_stage("GPU -> GPU (CTA scope)", status);
	CKC(cudaMemcpy(host, k.gpu_a, BUF, cudaMemcpyDeviceToHost));
	fails += check("GPU -> GPU (CTA scope)", host, src);

	CK(gnic_dma_error(dma, &err));
	if (err.dev_status) {
		fprintf(stderr, "FAIL: queue error: %s\n", err.text);
		fails++;
	}
	gnic_mr_dereg(m_src);
	gnic_mr_dereg(m_a);
	gnic_mr_dereg(m_b);
	gnic_mr_dereg(m_dst);
	gnic_dma_destroy(dma);
	gnic_ctx_destroy(ctx);
	cudaFree(k.gpu_a);
	cudaFree(k.gpu_b);
	cudaFree(status);
	cudaFreeHost(src);
	cudaFreeHost(dst);
	free(host);
	printf("%s\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}
