// SPDX-License-Identifier: MIT
/*
 * A stand-in for the CUDA driver (libcuda.so.1, built under
 * <build>/tests/gnic/fake-cuda/) whose "GPU" is this process: device memory
 * is host memory and a device pointer is the host address, so CPU threads
 * can run device code on what libgnic placed "in the GPU". It lets a
 * machine without a GPU run libgnic's GPU placement (place_gpu in
 * src/qp_dev.c), with the driver's rules that catch placement bugs:
 * registering a page twice fails with CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
 * a device pointer exists only for registered host memory, unregistering
 * unregistered memory fails. fake_cuda_live() reports what is still
 * registered or allocated. Prototypes are our own: libgnic looks the names
 * up with dlsym.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum {
	OK = 0,
	ERR_INVALID_VALUE = 1,
	ERR_OUT_OF_MEMORY = 2,
	ERR_ALREADY_REGISTERED = 712,
	ERR_NOT_REGISTERED = 713,
	MEMORY_TYPE_ATTR = 2,
	IS_MANAGED_ATTR = 8,
	MEMORYTYPE_DEVICE = 2,
};

#define MAX_RANGES 4096

struct range {
	uintptr_t base;
	size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct range regs[MAX_RANGES], allocs[MAX_RANGES];
static int nregs, nallocs;
static int ctx_token, *current;

static int find(const struct range *t, int n, uintptr_t p, size_t len)
{
	for (int i = 0; i < n; i++)
		if (t[i].base <= p && p + len <= t[i].base + t[i].len)
			return i;
	return -1;
}

static int overlaps(const struct range *t, int n, uintptr_t p, size_t len)
{
	for (int i = 0; i < n; i++)
		if (t[i].base < p + len && p < t[i].base + t[i].len)
			return 1;
	return 0;
}

EXPORT int cuInit(unsigned flags)
{
	return flags ? ERR_INVALID_VALUE : OK;
}

EXPORT int cuDeviceGetCount(int *n)
{
	*n = 1;
	return OK;
}

EXPORT int cuDeviceGet(int *dev, int ordinal)
{
	if (ordinal)
		return ERR_INVALID_VALUE;
	*dev = 0;
	return OK;
}

EXPORT int cuDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	strncpy(name, "fake GPU (host memory)", (size_t)len - 1);
	name[len - 1] = 0;
	return OK;
}

EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	(void)dev;
	*ctx = &ctx_token;
	return OK;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int dev)
{
	(void)dev;
	return OK;
}

EXPORT int cuCtxSetCurrent(void *ctx)
{
	__atomic_store_n(&current, (int *)ctx, __ATOMIC_RELAXED);
	return OK;
}

EXPORT int cuCtxGetCurrent(void **ctx)
{
	*ctx = __atomic_load_n(&current, __ATOMIC_RELAXED);
	return OK;
}

EXPORT int cuMemHostRegister_v2(void *p, size_t len, unsigned flags)
{
	int r = OK;

	(void)flags;
	pthread_mutex_lock(&lock);
	if (overlaps(regs, nregs, (uintptr_t)p, len))
		r = ERR_ALREADY_REGISTERED;
	else if (nregs == MAX_RANGES)
		r = ERR_OUT_OF_MEMORY;
	else
		regs[nregs++] = (struct range){(uintptr_t)p, len};
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT int cuMemHostUnregister(void *p)
{
	int i, r = OK;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nregs && regs[i].base != (uintptr_t)p; i++)
		;
	if (i == nregs)
		r = ERR_NOT_REGISTERED;
	else
		regs[i] = regs[--nregs];
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT int cuMemHostGetDevicePointer_v2(uint64_t *dptr, void *p, unsigned flags)
{
	int r;

	(void)flags;
	pthread_mutex_lock(&lock);
	r = find(regs, nregs, (uintptr_t)p, 1) >= 0 ? OK : ERR_INVALID_VALUE;
	pthread_mutex_unlock(&lock);
	if (!r)
		*dptr = (uintptr_t)p;
	return r;
}

EXPORT int cuMemAlloc_v2(uint64_t *dptr, size_t len)
{
	void *p = NULL;
	int r = OK;

	if (!len || posix_memalign(&p, 256, len))
		return ERR_OUT_OF_MEMORY;
	memset(p, 0xa5, len); /* as uninitialised as GPU memory */
	pthread_mutex_lock(&lock);
	if (nallocs == MAX_RANGES)
		r = ERR_OUT_OF_MEMORY;
	else
		allocs[nallocs++] = (struct range){(uintptr_t)p, len};
	pthread_mutex_unlock(&lock);
	if (r)
		free(p);
	else
		*dptr = (uintptr_t)p;
	return r;
}

EXPORT int cuMemFree_v2(uint64_t dptr)
{
	int i, r = OK;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nallocs && allocs[i].base != dptr; i++)
		;
	if (i == nallocs)
		r = ERR_INVALID_VALUE;
	else
		allocs[i] = allocs[--nallocs];
	pthread_mutex_unlock(&lock);
	if (!r)
		free((void *)(uintptr_t)dptr);
	return r;
}

/* Copies must stay inside one allocation, as on a GPU. */
static int in_alloc(uint64_t d, size_t len)
{
	int r;

	pthread_mutex_lock(&lock);
	r = find(allocs, nallocs, d, len) >= 0 || find(regs, nregs, d, len) >= 0;
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t len)
{
	if (!in_alloc(dst, len))
		return ERR_INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, len);
	return OK;
}

EXPORT int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t len)
{
	if (!in_alloc(src, len))
		return ERR_INVALID_VALUE;
	memcpy(dst, (const void *)(uintptr_t)src, len);
	return OK;
}

EXPORT int cuPointerGetAttribute(void *data, int attr, uint64_t p)
{
	int dev;

	pthread_mutex_lock(&lock);
	dev = find(allocs, nallocs, p, 1) >= 0;
	pthread_mutex_unlock(&lock);
	if (!dev)
		return ERR_INVALID_VALUE; /* host memory the driver does not know */
	if (attr == MEMORY_TYPE_ATTR)
		*(unsigned *)data = MEMORYTYPE_DEVICE;
	else if (attr == IS_MANAGED_ATTR)
		*(uint64_t *)data = 0;
	else
		return ERR_INVALID_VALUE;
	return OK;
}

EXPORT int cuGetErrorName(int r, const char **name)
{
	*name = r == ERR_ALREADY_REGISTERED ? "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"
	        : r == ERR_NOT_REGISTERED   ? "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"
	        : r == ERR_OUT_OF_MEMORY    ? "CUDA_ERROR_OUT_OF_MEMORY"
	                                    : "CUDA_ERROR_INVALID_VALUE";
	return OK;
}

/* Ranges still registered and allocations not freed. */
EXPORT void fake_cuda_live(int *registered, int *allocated)
{
	pthread_mutex_lock(&lock);
	*registered = nregs;
	*allocated = nallocs;
	pthread_mutex_unlock(&lock);
}
