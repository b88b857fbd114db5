/* SPDX-License-Identifier: MIT */
/*
 * Device workers as a CUDA kernel: block b runs side b / ctas, CTA b % ctas,
 * and every thread calls the same pd_worker() the CPU threads call. Plus
 * the few CUDA runtime calls gnic-perf needs (perf_gpu.h).
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
#include "perf_gpu.h"

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess)                                                             \
			perf_fatal("%s: %s (%s)", #call, cudaGetErrorName(e_),                     \
			           cudaGetErrorString(e_));                                        \
	} while (0)

__global__ void pd_kernel(const struct pd_launch *L)
{
	uint32_t side = blockIdx.x / L->ctas, cta = blockIdx.x % L->ctas;

	pd_worker(&L->side[side], cta, threadIdx.x, blockDim.x, L->ctas);
}

extern "C" int perf_gpu_count(void)
{
	int n = 0;

	/* no driver or no device: CPU threads, not an error */
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
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
	if (!p)
		return;
	if (host_mapped)
		CK(cudaFreeHost(p));
	else
		CK(cudaFree(p));
}

/* A failed copy names its addresses and what the driver knows of them. */
static void copy_failed(cudaError_t e, const char *dir, const void *dev, const void *host,
                        size_t len)
{
	cudaPointerAttributes pa = {};
	cudaError_t pe = cudaPointerGetAttributes(&pa, dev);

	perf_fatal("cudaMemcpy %s of %zu bytes (device %p, host %p): %s (%s); the device "
	           "address is %s memory type %d",
	           dir, len, dev, host, cudaGetErrorName(e), cudaGetErrorString(e),
	           pe == cudaSuccess ? "known," : "unknown to the runtime,", (int)pa.type);
}

extern "C" void perf_gpu_to_dev(void *dev, const void *host, size_t len)
{
	cudaError_t e = cudaMemcpy(dev, host, len, cudaMemcpyHostToDevice);

	if (e != cudaSuccess)
		copy_failed(e, "to the GPU", dev, host, len);
}

extern "C" void perf_gpu_to_host(void *host, const void *dev, size_t len)
{
	cudaError_t e = cudaMemcpy(host, dev, len, cudaMemcpyDeviceToHost);

	if (e != cudaSuccess)
		copy_failed(e, "from the GPU", dev, host, len);
}

static void wait_event(cudaEvent_t ev)
{
	struct timespec nap = {0, 50000};
	struct perf_wait w;
	cudaError_t e;

	perf_wait_start_slack(&w, "the GPU kernel to finish", PERF_DEVICE_SLACK_S);
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
