/* SPDX-License-Identifier: MIT */
/*
 * CUDA device memory behind MRs, through the CUDA driver API.
 *
 * The emulator never links or requires CUDA. A process can only hold device
 * memory after it loaded libcuda.so.1 itself, so we look for the library
 * with RTLD_NOLOAD when an MR is registered: a CPU-only program never pays
 * for loading the driver, and a program that starts CUDA later is found at
 * its first GPU registration. The few types and constants we need are
 * defined here from the driver API's documented values.
 *
 * Memory of the VMM API (cuMemCreate + cuMemMap) belongs to no context: its
 * CU_POINTER_ATTRIBUTE_CONTEXT is NULL. Its copies run in the primary context
 * of the device holding it (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL), which each
 * MR retains for as long as it lives.
 *
 * Copies run on a private non-blocking stream per CUDA context. A plain
 * cuMemcpyDtoH uses the legacy default stream, which waits for every kernel
 * on blocking streams: a persistent kernel that waits for its RDMA to finish
 * would then deadlock the engine that performs that RDMA.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "emu.h"

typedef int CUresult;
typedef void *CUcontext;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;

enum {
	CUDA_SUCCESS = 0,
	CU_POINTER_ATTRIBUTE_CONTEXT = 1,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
	CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
	CU_MEMORYTYPE_DEVICE = 2,
	CU_STREAM_NON_BLOCKING = 1,
};

#define EMU_CUDA_MAX_CTX 64
#define EMU_CUDA_STAGE   (1u << 20) /* pinned bounce buffer per context */

struct cuda_api {
	CUresult (*pointer_get_attribute)(void *data, int attribute, CUdeviceptr ptr);
	CUresult (*ctx_get_current)(CUcontext *ctx);
	CUresult (*ctx_set_current)(CUcontext ctx);
	CUresult (*stream_create)(CUstream *stream, unsigned int flags);
	CUresult (*stream_synchronize)(CUstream stream);
	CUresult (*memcpy_htod_async)(CUdeviceptr dst, const void *src, size_t n, CUstream s);
	CUresult (*memcpy_dtoh_async)(void *dst, CUdeviceptr src, size_t n, CUstream s);
	CUresult (*mem_host_alloc)(void **p, size_t n, unsigned int flags);
	/* for memory without a context (VMM); optional: without them such
	 * memory cannot be registered */
	CUresult (*device_get)(CUdevice *dev, int ordinal);
	CUresult (*primary_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*primary_release)(CUdevice dev);
	CUresult (*primary_state)(CUdevice dev, unsigned int *flags, int *active);
};

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
/* One copy at a time: engine workers share a context's stream and pinned
 * stage, and a copy is the stage's from the first piece to the last. */
static pthread_mutex_t copy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cuda_api cu;
static bool cu_loaded, cu_broken;
static struct {
	CUcontext ctx;
	CUstream stream;
	void *stage; /* pinned: copies from pageable memory may wait for kernels */
} streams[EMU_CUDA_MAX_CTX];
static int nstreams;

static bool cuda_sym(void *lib, const char *name, void *fn)
{
	void *p = dlsym(lib, name);

	memcpy(fn, &p, sizeof(p));
	return p != NULL;
}

static bool cuda_resolve(void *lib)
{
	return cuda_sym(lib, "cuPointerGetAttribute", &cu.pointer_get_attribute) &&
	       cuda_sym(lib, "cuCtxGetCurrent", &cu.ctx_get_current) &&
	       cuda_sym(lib, "cuCtxSetCurrent", &cu.ctx_set_current) &&
	       cuda_sym(lib, "cuStreamCreate", &cu.stream_create) &&
	       cuda_sym(lib, "cuStreamSynchronize", &cu.stream_synchronize) &&
	       cuda_sym(lib, "cuMemcpyHtoDAsync_v2", &cu.memcpy_htod_async) &&
	       cuda_sym(lib, "cuMemcpyDtoHAsync_v2", &cu.memcpy_dtoh_async) &&
	       cuda_sym(lib, "cuMemHostAlloc", &cu.mem_host_alloc);
}

static void cuda_resolve_optional(void *lib)
{
	cuda_sym(lib, "cuDeviceGet", &cu.device_get);
	cuda_sym(lib, "cuDevicePrimaryCtxRetain", &cu.primary_retain);
	cuda_sym(lib, "cuDevicePrimaryCtxRelease_v2", &cu.primary_release);
	cuda_sym(lib, "cuDevicePrimaryCtxGetState", &cu.primary_state);
}

/* Is the driver API usable? Loads nothing: only finds a loaded libcuda. */
static bool cuda_available(void)
{
	void *lib;
	bool ok;

	pthread_mutex_lock(&cuda_lock);
	if (!cu_loaded && !cu_broken) {
		lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (lib && cuda_resolve(lib)) {
			cuda_resolve_optional(lib);
			cu_loaded = true; /* keep our reference: the library stays */
		} else if (lib) {
			emu_warn("libcuda.so.1 lacks a driver call we need; treating all memory "
			         "as host memory");
			cu_broken = true;
			dlclose(lib);
		}
	}
	ok = cu_loaded;
	pthread_mutex_unlock(&cuda_lock);
	return ok;
}

/* Memory without a context of its own (VMM): the primary context of the
 * device holding it, retained. 0, or -EFAULT when the driver cannot say. */
static int primary_ctx_of(CUdeviceptr va, struct emu_cuda_ctx *c)
{
	int ordinal = -1;
	CUdevice dev;
	CUcontext ctx = NULL;

	if (!cu.device_get || !cu.primary_retain || !cu.primary_release ||
	    cu.pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va) ||
	    ordinal < 0 || cu.device_get(&dev, ordinal) || cu.primary_retain(&ctx, dev) || !ctx) {
		emu_warn("device address 0x%llx has no CUDA context and its device's primary "
		         "context cannot be had (device ordinal %d)",
		         va, ordinal);
		return -EFAULT;
	}
	c->ctx = ctx;
	c->primary_dev = dev;
	return 0;
}

int emu_cuda_lookup(uint64_t va, uint64_t len, struct emu_cuda_ctx *c)
{
	unsigned int mem_type = 0;
	uint64_t managed = 0; /* the driver writes a bool-sized flag */
	CUdeviceptr start = 0;
	size_t size = 0;
	CUcontext ctx = NULL;

	c->ctx = NULL;
	c->primary_dev = -1;
	if (!va || !cuda_available())
		return 0;
	/* any failure here (not a CUDA pointer, CUDA not initialised) means
	 * the driver does not know this address: it is host memory */
	if (cu.pointer_get_attribute(&mem_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va) ||
	    mem_type != CU_MEMORYTYPE_DEVICE)
		return 0;
	/* managed memory is directly addressable by the CPU */
	if (!cu.pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, va) && managed)
		return 0;
	/* like pinning on a real NIC: the range must lie in one allocation */
	if (!cu.pointer_get_attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va) &&
	    !cu.pointer_get_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va) &&
	    (va - start > size || len > size - (va - start)))
		return -EFAULT;
	if (cu.pointer_get_attribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, va) || !ctx)
		return primary_ctx_of(va, c) ? -EFAULT : 1;
	c->ctx = ctx;
	return 1;
}

/* Drops the cached stream and stage of a context that is gone: a later
 * context may get the same handle. The driver freed both with it. */
static void streams_forget(CUcontext ctx)
{
	pthread_mutex_lock(&cuda_lock);
	for (int i = 0; i < nstreams; i++)
		if (streams[i].ctx == ctx)
			streams[i--] = streams[--nstreams];
	pthread_mutex_unlock(&cuda_lock);
}

void emu_cuda_put(struct emu_cuda_ctx *c)
{
	unsigned int flags = 0;
	int active = 1;

	if (!c || c->primary_dev < 0)
		return;
	if (cu.primary_release(c->primary_dev))
		emu_warn("cuDevicePrimaryCtxRelease(%d) failed", c->primary_dev);
	/* the last reference: the context is destroyed, and its streams */
	else if (cu.primary_state && !cu.primary_state(c->primary_dev, &flags, &active) && !active)
		streams_forget(c->ctx);
	c->primary_dev = -1;
	c->ctx = NULL;
}

/* The private stream and pinned stage for ctx; ctx must be current. false if
 * they cannot be made. Copies through pageable memory are not truly
 * asynchronous: the driver may order them behind kernels of the legacy
 * stream, and a kernel that waits for this very RDMA then never ends. */
static bool stream_for(CUcontext ctx, CUstream *s, void **stage)
{
	int i;

	pthread_mutex_lock(&cuda_lock);
	for (i = 0; i < nstreams && streams[i].ctx != ctx; i++)
		;
	if (i == nstreams && nstreams < EMU_CUDA_MAX_CTX &&
	    !cu.stream_create(&streams[i].stream, CU_STREAM_NON_BLOCKING)) {
		if (cu.mem_host_alloc(&streams[i].stage, EMU_CUDA_STAGE, 0))
			streams[i].stage = NULL;
		streams[i].ctx = ctx;
		nstreams++;
	}
	*s = i < nstreams ? streams[i].stream : NULL;
	*stage = i < nstreams ? streams[i].stage : NULL;
	pthread_mutex_unlock(&cuda_lock);
	return *s && *stage;
}

/* Copy in stage-sized pieces through the pinned buffer. */
static CUresult staged_copy(CUstream s, uint8_t *stage, CUdeviceptr dev, uint8_t *host,
                            uint64_t len, bool to_dev)
{
	CUresult r = CUDA_SUCCESS;

	for (uint64_t off = 0; off < len && !r; off += EMU_CUDA_STAGE) {
		size_t n = len - off < EMU_CUDA_STAGE ? (size_t)(len - off) : EMU_CUDA_STAGE;

		if (to_dev) {
			memcpy(stage, host + off, n);
			r = cu.memcpy_htod_async(dev + off, stage, n, s);
			if (!r)
				r = cu.stream_synchronize(s);
		} else {
			r = cu.memcpy_dtoh_async(stage, dev + off, n, s);
			if (!r)
				r = cu.stream_synchronize(s);
			if (!r)
				memcpy(host + off, stage, n);
		}
	}
	return r;
}

static int cuda_copy(CUcontext ctx, CUdeviceptr dev, void *host, uint64_t len, bool to_dev)
{
	CUcontext prev = NULL;
	void *stage;
	CUstream s;
	CUresult r;

	if (!len)
		return 0;
	if (!cu_loaded || cu.ctx_get_current(&prev))
		return -EIO;
	if (prev != ctx && cu.ctx_set_current(ctx))
		return -EIO;
	pthread_mutex_lock(&copy_lock);
	if (stream_for(ctx, &s, &stage))
		r = staged_copy(s, stage, dev, host, len, to_dev);
	else
		r = -1;
	pthread_mutex_unlock(&copy_lock);
	if (prev != ctx)
		cu.ctx_set_current(prev);
	if (r) {
		emu_warn("CUDA copy of %llu bytes %s device address 0x%llx failed (error %d)",
		         (unsigned long long)len, to_dev ? "to" : "from", dev, r);
		return -EIO;
	}
	return 0;
}

int emu_cuda_read(void *cu_ctx, uint64_t dev_va, void *dst, uint64_t len)
{
	return cuda_copy(cu_ctx, dev_va, dst, len, false);
}

int emu_cuda_write(void *cu_ctx, uint64_t dev_va, const void *src, uint64_t len)
{
	return cuda_copy(cu_ctx, dev_va, (void *)src, len, true);
}
