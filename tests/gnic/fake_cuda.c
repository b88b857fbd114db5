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
 *
 * It also has what gnic-emu copies device memory with (pointer attributes,
 * streams, asynchronous copies, pinned host memory), with the driver's rule
 * that a copy needs a live current context (per thread), and the virtual
 * memory management API: cuMemCreate makes a memfd, cuMemAddressReserve an
 * inaccessible reservation, cuMemMap maps the memfd there and cuMemSetAccess
 * opens it, so memory that is mapped but not made accessible faults as on a
 * GPU. As the real driver does, such memory reports a NULL
 * CU_POINTER_ATTRIBUTE_CONTEXT: it belongs to the device, not a context.
 * fake_cuda_primary_refs() reports the primary context's references.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum {
	OK = 0,
	ERR_INVALID_VALUE = 1,
	ERR_OUT_OF_MEMORY = 2,
	ERR_INVALID_CONTEXT = 201,
	ERR_ALREADY_REGISTERED = 712,
	ERR_NOT_REGISTERED = 713,
	CONTEXT_ATTR = 1,
	MEMORY_TYPE_ATTR = 2,
	IS_MANAGED_ATTR = 8,
	DEVICE_ORDINAL_ATTR = 9,
	RANGE_START_ATTR = 11,
	RANGE_SIZE_ATTR = 12,
	MEMORYTYPE_DEVICE = 2,
};

#define MAX_RANGES 4096

struct range {
	uintptr_t base;
	size_t len;
};

#define VMM_GRANULE (2u << 20) /* as a GPU's minimum granularity */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct range regs[MAX_RANGES], allocs[MAX_RANGES], maps[MAX_RANGES];
static int nregs, nallocs, nmaps;
static int ctx_token, primary_refs;
static _Thread_local int *current; /* the calling thread's context */

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
	if (dev)
		return ERR_INVALID_VALUE;
	__atomic_add_fetch(&primary_refs, 1, __ATOMIC_RELAXED);
	*ctx = &ctx_token;
	return OK;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int dev)
{
	if (dev || __atomic_load_n(&primary_refs, __ATOMIC_RELAXED) <= 0)
		return ERR_INVALID_CONTEXT;
	__atomic_sub_fetch(&primary_refs, 1, __ATOMIC_RELAXED);
	return OK;
}

EXPORT int cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active)
{
	if (dev)
		return ERR_INVALID_VALUE;
	*flags = 0;
	*active = __atomic_load_n(&primary_refs, __ATOMIC_RELAXED) > 0;
	return OK;
}

EXPORT int cuCtxSetCurrent(void *ctx)
{
	current = (int *)ctx;
	return OK;
}

EXPORT int cuCtxGetCurrent(void **ctx)
{
	*ctx = current;
	return OK;
}

/* A copy or a stream needs a current context that is alive. */
static int ctx_live(void)
{
	return current == &ctx_token && __atomic_load_n(&primary_refs, __ATOMIC_RELAXED) > 0;
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
	r = find(allocs, nallocs, d, len) >= 0 || find(regs, nregs, d, len) >= 0 ||
	    find(maps, nmaps, d, len) >= 0;
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
	const struct range *r = NULL;
	int i, vmm = 0;

	pthread_mutex_lock(&lock);
	i = find(allocs, nallocs, p, 1);
	if (i >= 0) {
		r = &allocs[i];
	} else if ((i = find(maps, nmaps, p, 1)) >= 0) {
		r = &maps[i];
		vmm = 1;
	}
	pthread_mutex_unlock(&lock);
	if (!r)
		return ERR_INVALID_VALUE; /* host memory the driver does not know */
	if (attr == MEMORY_TYPE_ATTR)
		*(unsigned *)data = MEMORYTYPE_DEVICE;
	else if (attr == IS_MANAGED_ATTR)
		*(uint64_t *)data = 0;
	else if (attr == CONTEXT_ATTR)
		*(void **)data = vmm ? NULL : &ctx_token; /* VMM memory has no context */
	else if (attr == DEVICE_ORDINAL_ATTR)
		*(int *)data = 0;
	else if (attr == RANGE_START_ATTR)
		*(uint64_t *)data = r->base;
	else if (attr == RANGE_SIZE_ATTR)
		*(size_t *)data = r->len;
	else
		return ERR_INVALID_VALUE;
	return OK;
}

/* Streams: every copy is done when it returns; a stream needs a context. */
EXPORT int cuStreamCreate(void **stream, unsigned flags)
{
	static int stream_token;

	(void)flags;
	if (!ctx_live())
		return ERR_INVALID_CONTEXT;
	*stream = &stream_token;
	return OK;
}

EXPORT int cuStreamSynchronize(void *stream)
{
	return stream && ctx_live() ? OK : ERR_INVALID_CONTEXT;
}

EXPORT int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t len, void *stream)
{
	if (!stream || !ctx_live())
		return ERR_INVALID_CONTEXT;
	return cuMemcpyHtoD_v2(dst, src, len);
}

EXPORT int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t len, void *stream)
{
	if (!stream || !ctx_live())
		return ERR_INVALID_CONTEXT;
	return cuMemcpyDtoH_v2(dst, src, len);
}

EXPORT int cuMemHostAlloc(void **p, size_t len, unsigned flags)
{
	(void)flags;
	if (!ctx_live())
		return ERR_INVALID_CONTEXT;
	*p = malloc(len);
	return *p ? OK : ERR_OUT_OF_MEMORY;
}

EXPORT int cuMemFreeHost(void *p)
{
	free(p);
	return OK;
}

/* Virtual memory management. A handle is a memfd of the allocation's size;
 * the prototypes' structs are read only as far as the fake needs: none. */
EXPORT int cuMemGetAllocationGranularity(size_t *g, const void *prop, int option)
{
	(void)prop;
	(void)option;
	*g = VMM_GRANULE;
	return OK;
}

EXPORT int cuMemCreate(uint64_t *handle, size_t len, const void *prop, unsigned long long flags)
{
	int fd;

	if (!prop || flags || !len || len % VMM_GRANULE)
		return ERR_INVALID_VALUE;
	fd = memfd_create("fake-cuda-vmm", MFD_CLOEXEC);
	if (fd < 0)
		return ERR_OUT_OF_MEMORY;
	if (ftruncate(fd, (off_t)len)) {
		close(fd);
		return ERR_OUT_OF_MEMORY;
	}
	*handle = (uint64_t)fd + 1; /* never 0 */
	return OK;
}

EXPORT int cuMemRelease(uint64_t handle)
{
	return handle && !close((int)(handle - 1)) ? OK : ERR_INVALID_VALUE;
}

EXPORT int cuMemAddressReserve(uint64_t *ptr, size_t len, size_t align, uint64_t addr,
                               unsigned long long flags)
{
	void *p;

	(void)align;
	(void)addr;
	if (flags || !len || len % VMM_GRANULE)
		return ERR_INVALID_VALUE;
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return ERR_OUT_OF_MEMORY;
	*ptr = (uintptr_t)p;
	return OK;
}

EXPORT int cuMemAddressFree(uint64_t ptr, size_t len)
{
	return munmap((void *)(uintptr_t)ptr, len) ? ERR_INVALID_VALUE : OK;
}

/* Mapped, still inaccessible until cuMemSetAccess. */
EXPORT int cuMemMap(uint64_t ptr, size_t len, size_t offset, uint64_t handle,
                    unsigned long long flags)
{
	int r = OK;

	if (flags || !handle ||
	    mmap((void *)(uintptr_t)ptr, len, PROT_NONE, MAP_SHARED | MAP_FIXED, (int)(handle - 1),
	         (off_t)offset) == MAP_FAILED)
		return ERR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	if (nmaps == MAX_RANGES)
		r = ERR_OUT_OF_MEMORY;
	else
		maps[nmaps++] = (struct range){(uintptr_t)ptr, len};
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT int cuMemSetAccess(uint64_t ptr, size_t len, const void *desc, size_t count)
{
	int mapped;

	pthread_mutex_lock(&lock);
	mapped = find(maps, nmaps, ptr, len) >= 0;
	pthread_mutex_unlock(&lock);
	if (!desc || !count || !mapped)
		return ERR_INVALID_VALUE;
	return mprotect((void *)(uintptr_t)ptr, len, PROT_READ | PROT_WRITE) ? ERR_INVALID_VALUE
	                                                                     : OK;
}

EXPORT int cuMemUnmap(uint64_t ptr, size_t len)
{
	int i, r = OK;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nmaps && (maps[i].base != ptr || maps[i].len != len); i++)
		;
	if (i == nmaps)
		r = ERR_INVALID_VALUE;
	else
		maps[i] = maps[--nmaps];
	pthread_mutex_unlock(&lock);
	/* back to a bare reservation */
	if (!r &&
	    mmap((void *)(uintptr_t)ptr, len, PROT_NONE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		r = ERR_INVALID_VALUE;
	return r;
}

EXPORT int cuGetErrorName(int r, const char **name)
{
	*name = r == ERR_ALREADY_REGISTERED ? "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"
	        : r == ERR_NOT_REGISTERED   ? "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"
	        : r == ERR_OUT_OF_MEMORY    ? "CUDA_ERROR_OUT_OF_MEMORY"
	                                    : "CUDA_ERROR_INVALID_VALUE";
	return OK;
}

/* References to the primary context (retained, not yet released). */
EXPORT int fake_cuda_primary_refs(void)
{
	return __atomic_load_n(&primary_refs, __ATOMIC_RELAXED);
}

/* Ranges still registered and allocations not freed. */
EXPORT void fake_cuda_live(int *registered, int *allocated)
{
	pthread_mutex_lock(&lock);
	*registered = nregs;
	*allocated = nallocs;
	pthread_mutex_unlock(&lock);
}
