/* SPDX-License-Identifier: MIT */
/*
 * The bandwidth loop as a CUDA kernel: every CTA streams its slice of a
 * buffer to the peer with CTA-scope puts (one reservation and one doorbell
 * per 128 WQEs), then quiets. Both QPs live in this process (connected to
 * each other); between processes, exchange the blobs and gnic_rmem with
 * gnic_boot_allgather() as tests/gpu/test_gpu_dev.cu does.
 *
 *   put_bw_gpu [ctas] [msg_bytes] [rounds]    exit 77 when there is no GPU
 *
 * The source is pinned host memory, the target GPU memory. gnic-emu reads and
 * writes GPU memory with one CUDA copy per message (~8 us), so on the emulator
 * this example runs at ~0.1 M puts/s (H200, 2026-11-30); a NIC uses PCIe
 * peer-to-peer. With a host-memory target the same kernel shape reaches
 * 3.5-4 M puts/s through gnic-emu (docs/perf.md).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

#define THREADS 128

__global__ void stream(struct gnic_dev_qp *qp, const uint8_t *src, uint32_t lkey,
                       struct gnic_rmem dst, uint32_t msg, int rounds, int *rc_out)
{
	size_t slot = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	int rc = 0;

	for (int r = 0; r < rounds && !rc; r++)
		rc = gnic_dev_put_cta(qp, src + slot * msg, lkey, dst.addr + slot * msg, dst.rkey,
		                      msg, 0);
	if (threadIdx.x == 0 && !rc)
		rc = gnic_dev_quiet(qp);
	if (rc)
		atomicCAS(rc_out, 0, rc);
}

static int fail(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, gnic_last_error());
	return 1;
}

int main(int argc, char **argv)
{
	int ctas = argc > 1 ? atoi(argv[1]) : 8, rounds = argc > 3 ? atoi(argv[3]) : 50;
	uint32_t msg = argc > 2 ? (uint32_t)atoi(argv[2]) : 64;
	size_t len = (size_t)ctas * THREADS * msg;
	struct gnic_ctx_attr ca;
	struct gnic_qp_attr qa;
	struct gnic_ctx *ctx;
	struct gnic_qp *a, *b;
	struct gnic_blob ba, bb;
	struct gnic_mr *smr, *dmr;
	struct gnic_rmem dst;
	uint8_t *src, *target, *back;
	int *rc_dev, rc = 0, ngpu = 0;
	cudaEvent_t t0, t1;
	float ms;

	if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
		printf("SKIP: no CUDA GPU\n");
		return 77;
	}
	if (ctas < 1 || msg < 1 || rounds < 1)
		return 2;
	gnic_ctx_attr_init(&ca);
	ca.gpu = 0;
	if (gnic_ctx_create(&ca, &ctx))
		return fail("gnic_ctx_create");
	gnic_qp_attr_init(&qa);
	qa.sq_depth = 4096; /* a CTA reserves THREADS WQEs at once: keep room for several */
	if (gnic_qp_create(ctx, &qa, &a) || gnic_qp_create(ctx, &qa, &b) ||
	    gnic_qp_export(a, &ba) || gnic_qp_export(b, &bb) || gnic_qp_connect(a, &bb) ||
	    gnic_qp_connect(b, &ba))
		return fail("qp");
	cudaHostAlloc((void **)&src, len, cudaHostAllocMapped);
	cudaMalloc((void **)&target, len);
	cudaMalloc((void **)&rc_dev, sizeof(int));
	cudaMemset(target, 0, len);
	cudaMemset(rc_dev, 0, sizeof(int));
	back = (uint8_t *)malloc(len);
	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	if (gnic_mr_reg(ctx, src, len, GNIC_ACCESS_LOCAL, &smr) ||
	    gnic_mr_reg(ctx, target, len, GNIC_ACCESS_ALL, &dmr))
		return fail("gnic_mr_reg");
	gnic_mr_rmem(dmr, &dst);

	cudaEventCreate(&t0);
	cudaEventCreate(&t1);
	cudaEventRecord(t0);
	stream<<<ctas, THREADS>>>(gnic_qp_dev(a), src, gnic_mr_lkey(smr), dst, msg, rounds, rc_dev);
	cudaEventRecord(t1);
	cudaEventSynchronize(t1);
	cudaEventElapsedTime(&ms, t0, t1);
	cudaMemcpy(&rc, rc_dev, sizeof(int), cudaMemcpyDeviceToHost);
	cudaMemcpy(back, target, len, cudaMemcpyDeviceToHost);
	if (rc) {
		struct gnic_qp_error e;

		gnic_qp_error(a, &e);
		fprintf(stderr, "kernel: status %d: %s\n", rc, e.text);
		return 1;
	}
	for (size_t i = 0; i < len; i++)
		if (back[i] != src[i]) {
			fprintf(stderr, "byte %zu: %u != %u\n", i, back[i], src[i]);
			return 1;
		}
	printf("%d CTAs x %d threads x %d rounds of %u B: %.3f M puts/s (verified)\n", ctas,
	       THREADS, rounds, msg, (double)ctas * THREADS * rounds / (ms * 1e3));
	gnic_mr_dereg(smr);
	gnic_mr_dereg(dmr);
	gnic_qp_destroy(a);
	gnic_qp_destroy(b);
	gnic_ctx_destroy(ctx);
	return 0;
}
