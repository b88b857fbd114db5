/* SPDX-License-Identifier: MIT */
/*
 * Device workers as a CUDA kernel: block b runs side b / ctas, CTA b % ctas,
 * and every thread calls the same pd_worker() the CPU threads call. Plus
 * the few CUDA runtime calls gnic-perf needs (declared in perf.h).
 *
 * The kernel is timed with CUDA events; the host waits for it by polling
 * the end event under the --timeout deadline (the device's own waits are
 * bounded too, by the QPs' timeout).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "perf.h"
}
#include "perf_dev_worker.h"

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess)                                                             \
			perf_fatal("%s: %s (%s)", #call, cudaGetErrorName(e_),                     \
			           cudaGetErrorString(e_));                                        \
	} while (0)

__global__ void pd_kernel(const struct pd_launch *L)
{
	struct pd_thread t = {blockIdx.x % L->ctas, threadIdx.x, blockDim.x, L->ctas};

	pd_worker(&L->side[blockIdx.x / L->ctas], &t);
}

extern "C" int perf_gpu_count(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) { /* no driver or no device: CPU threads */
		cudaGetLastError();
		return 0;
	}
	return n;
}

extern "C" void perf_gpu_use(int ordinal, char *name, size_t cap)
{
	cudaDeviceProp p;

	CK(cudaSetDevice(ordinal));
	CK(cudaGetDeviceProperties(&p, ordinal));
	snprintf(name, cap, "GPU %d: %s (sm_%d%d; %d SMs)", ordinal, p.name, p.major, p.minor,
	         p.multiProcessorCount);
}

extern "C" int perf_gpu_max_threads(void)
{
	cudaFuncAttributes fa;

	CK(cudaFuncGetAttributes(&fa, pd_kernel));
	return fa.maxThreadsPerBlock; /* bounded by its registers */
}

/* len bytes of GPU memory, or (host_mapped) pinned host memory mapped into
 * the GPU at the same address; zeroed. */
extern "C" void *perf_gpu_alloc(size_t len, int host_mapped)
{
	void *p = NULL;

	if (host_mapped) {
		CK(cudaHostAlloc(&p, len, cudaHostAllocMapped | cudaHostAllocPortable));
		memset(p, 0, len);
	} else {
		CK(cudaMalloc(&p, len));
		CK(cudaMemset(p, 0, len));
	}
	return p;
}

extern "C" void perf_gpu_free(void *p, int host_mapped)
{
	if (p && host_mapped)
		CK(cudaFreeHost(p));
	else if (p)
		CK(cudaFree(p));
}

/* A failed copy names its addresses and what the driver knows of them. */
extern "C" void perf_gpu_copy(void *dst, const void *src, size_t len, int to_dev)
{
	cudaError_t e =
	    cudaMemcpy(dst, src, len, to_dev ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
	const void *dev = to_dev ? dst : src;
	cudaPointerAttributes pa = {};

	if (e == cudaSuccess)
		return;
	perf_fatal("cudaMemcpy %s of %zu bytes (device %p): %s (%s); the device address is %s, "
	           "memory type %d",
	           to_dev ? "to the GPU" : "from the GPU", len, dev, cudaGetErrorName(e),
	           cudaGetErrorString(e),
	           cudaPointerGetAttributes(&pa, dev) == cudaSuccess ? "known" : "unknown",
	           (int)pa.type);
}

static void wait_event(cudaEvent_t ev)
{
	struct timespec nap = {0, 50000};
	struct perf_wait w;
	cudaError_t e;

	perf_wait_start(&w, "the GPU kernel to finish");
	w.deadline_ns += 10000000000ull; /* slack for its threads to report why they stopped */
	while ((e = cudaEventQuery(ev)) == cudaErrorNotReady) {
		nanosleep(&nap, NULL);
		perf_wait_check(&w);
	}
	CK(e);
}

extern "C" double perf_gpu_launch(const struct pd_launch *L)
{
	struct pd_launch *dl;
	cudaEvent_t t0, t1;
	float ms = 0;

	CK(cudaMalloc((void **)&dl, sizeof(*dl)));
	CK(cudaMemcpy(dl, L, sizeof(*dl), cudaMemcpyHostToDevice));
	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	CK(cudaEventRecord(t0));
	pd_kernel<<<L->nsides * L->ctas, L->threads>>>(dl);
	CK(cudaGetLastError());
	CK(cudaEventRecord(t1));
	wait_event(t1);
	CK(cudaEventElapsedTime(&ms, t0, t1));
	CK(cudaEventDestroy(t0));
	CK(cudaEventDestroy(t1));
	CK(cudaFree(dl));
	return (double)ms * 1e6;
}
