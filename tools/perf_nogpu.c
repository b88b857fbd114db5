/* SPDX-License-Identifier: MIT */
/*
 * perf_gpu.h in a build without CUDA (GNIC_CUDA=OFF or no nvcc): there is no
 * GPU, so the libgnic modes run their device workers on CPU threads and
 * nothing below perf_gpu_count() is reached.
 */
#include "perf.h"
#include "perf_gpu.h"

int perf_gpu_count(void)
{
	return 0;
}

static void no_cuda(const char *what) __attribute__((noreturn));
static void no_cuda(const char *what)
{
	perf_fatal("internal: %s called in a build without CUDA", what);
}

void perf_gpu_use(int ordinal, char *name, size_t cap)
{
	(void)ordinal;
	(void)name;
	(void)cap;
	no_cuda("perf_gpu_use");
}

int perf_gpu_max_threads(void)
{
	no_cuda("perf_gpu_max_threads");
}

void *perf_gpu_alloc(size_t len, int host_mapped)
{
	(void)len;
	(void)host_mapped;
	no_cuda("perf_gpu_alloc");
}

void perf_gpu_free(void *p, int host_mapped)
{
	(void)p;
	(void)host_mapped;
	no_cuda("perf_gpu_free");
}

void perf_gpu_to_dev(void *dev, const void *host, size_t len)
{
	(void)dev;
	(void)host;
	(void)len;
	no_cuda("perf_gpu_to_dev");
}

void perf_gpu_to_host(void *host, const void *dev, size_t len)
{
	(void)host;
	(void)dev;
	(void)len;
	no_cuda("perf_gpu_to_host");
}

double perf_gpu_launch(const struct pd_launch *L)
{
	(void)L;
	no_cuda("perf_gpu_launch");
}
