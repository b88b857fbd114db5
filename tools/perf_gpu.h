/* SPDX-License-Identifier: MIT */
/*
 * The CUDA side of gnic-perf, callable from C: implemented by
 * perf_dev_gpu.cu in a CUDA build and by perf_nogpu.c otherwise (there
 * perf_gpu_count() is 0 and nothing else is ever called). Every failure is
 * fatal (exit 1) with the CUDA error's name.
 */
#ifndef GNIC_PERF_GPU_H
#define GNIC_PERF_GPU_H

#include <stddef.h>

#include "perf_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA devices the runtime sees (0 without CUDA, a driver or a GPU). */
int perf_gpu_count(void);
/* Make ordinal current; its name goes to name. */
void perf_gpu_use(int ordinal, char *name, size_t cap);
/* The most threads per CTA the workers' kernel can be launched with. */
int perf_gpu_max_threads(void);
/* len bytes of GPU memory, or (host_mapped) pinned host memory mapped
 * into the GPU at the same address; zeroed. */
void *perf_gpu_alloc(size_t len, int host_mapped);
void perf_gpu_free(void *p, int host_mapped);
void perf_gpu_to_dev(void *dev, const void *host, size_t len);
void perf_gpu_to_host(void *host, const void *dev, size_t len);
/* Runs the launch as a grid of nsides * ctas blocks of threads threads and
 * waits for it (bounded by --timeout); returns the kernel's time in ns. */
double perf_gpu_launch(const struct pd_launch *L);

#ifdef __cplusplus
}
#endif

#endif /* GNIC_PERF_GPU_H */
