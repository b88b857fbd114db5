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
 * Copies run on private non-blocking streams. A plain cuMemcpyDtoH uses the
 * legacy default stream, which waits for every kernel on blocking streams: a
 * persistent kernel that waits for its RDMA to finish would then deadlock the
 * engine that performs that RDMA.
 *
 * Two kinds of copy live here: the synchronous emu_cuda_read/_write (one
 * stream and pinned stage per context, one copy at a time: the control path
 * and rare engine paths), and the asynchronous primitives the engine's copy
 * queue (dma.c) is built of: streams, events, single and batched copies
 * (cuMemcpyBatchAsync where the driver has it, found through
 * cuGetProcAddress), pinned host memory. Those never wait.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "emu.h"

typedef int CUresult;
typedef void *CUcontext;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
_Static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), "a device address is 64 bits");
typedef int CUdevice;

enum {
	CUDA_SUCCESS = 0,
	CU_POINTER_ATTRIBUTE_CONTEXT = 1,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
	CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
	CU_MEMORYTYPE_HOST = 1,
	CU_MEMORYTYPE_DEVICE = 2,
	CU_STREAM_NON_BLOCKING = 1,
	CU_EVENT_DISABLE_TIMING = 2,
	CU_MEMHOSTALLOC_PORTABLE = 1,
	CU_MEMHOSTALLOC_DEVICEMAP = 2,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_NOT_READY = 600,
	CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 1,
	CUDA_VERSION_BATCH = 12080, /* cuMemcpyBatchAsync's first driver: its ABI */
};

/* cuMemcpyBatchAsync's per-copy attributes (CUmemcpyAttributes_v1): 24 bytes */
struct cu_mem_location {
	int type; /* CUmemLocationType; 0: no hint (ignored for non-managed memory) */
	int id;
};
struct cu_memcpy_attrs {
	int src_access_order; /* CUmemcpySrcAccessOrder */
	struct cu_mem_location src_hint, dst_hint;
	unsigned int flags;
};
_Static_assert(sizeof(struct cu_memcpy_attrs) == 24, "CUmemcpyAttributes_v1");

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
	/* the copy queue's (dma.c); optional: without them every copy is
	 * synchronous, as before */
	CUresult (*event_create)(void **ev, unsigned int flags);
	CUresult (*event_record)(void *ev, CUstream s);
	CUresult (*event_query)(void *ev);
	CUresult (*stream_query)(CUstream s);
	CUresult (*memcpy_dtod_async)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
	CUresult (*memcpy_peer_async)(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
	                              CUcontext sctx, size_t n, CUstream s);
	CUresult (*error_name)(CUresult r, const char **name);
	CUresult (*get_proc_address)(const char *sym, void **fn, int version,
	                             unsigned long long flags, int *status);
	/* cuMemcpyBatchAsync of CUDA 12.8 (with failIdx), or NULL */
	CUresult (*memcpy_batch_async)(uint64_t *dsts, uint64_t *srcs, size_t *sizes, size_t count,
	                               struct cu_memcpy_attrs *attrs, size_t *attr_idxs,
	                               size_t nattrs, size_t *fail_idx, CUstream s);
	/* the copy kernel's (copy_kernel.c); optional */
	CUresult (*module_load_data)(void **mod, const void *image);
	CUresult (*module_get_function)(void **fn, void *mod, const char *name);
	CUresult (*launch_kernel)(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
	                          unsigned by, unsigned bz, unsigned shmem, CUstream s,
	                          void **params, void **extra);
	CUresult (*mem_host_get_device_pointer)(CUdeviceptr *dptr, void *p, unsigned int flags);
	CUresult (*func_load)(void *fn);                                 /* CUDA 12.4 */
	CUresult (*func_get_attribute)(int *v, int attribute, void *fn); /* else this */
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

/* The copy kernel, per context. It is loaded when GPU memory of the context
 * is registered (the control path), never at a launch: loading a module
 * (and CUDA's lazy loading of a function at its first launch) may wait for
 * the context's running kernels, and the application's kernel may be
 * waiting for the very copies being launched. So the module is loaded and
 * the function forced in (cuFuncLoad, or asking an attribute of it where
 * the driver predates cuFuncLoad) here, and a context whose kernel is not
 * loaded gets driver copies. */
static struct {
	CUcontext ctx;
	void *fn; /* NULL: could not be loaded (said once) */
} kernels[EMU_CUDA_MAX_CTX];
static int nkernels;

static void copy_kernel_load(CUcontext ctx);

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
	cuda_sym(lib, "cuEventCreate", &cu.event_create);
	cuda_sym(lib, "cuEventRecord", &cu.event_record);
	cuda_sym(lib, "cuEventQuery", &cu.event_query);
	cuda_sym(lib, "cuStreamQuery", &cu.stream_query);
	cuda_sym(lib, "cuMemcpyDtoDAsync_v2", &cu.memcpy_dtod_async);
	cuda_sym(lib, "cuMemcpyPeerAsync", &cu.memcpy_peer_async);
	cuda_sym(lib, "cuGetErrorName", &cu.error_name);
	cuda_sym(lib, "cuModuleLoadData", &cu.module_load_data);
	cuda_sym(lib, "cuModuleGetFunction", &cu.module_get_function);
	cuda_sym(lib, "cuLaunchKernel", &cu.launch_kernel);
	cuda_sym(lib, "cuMemHostGetDevicePointer_v2", &cu.mem_host_get_device_pointer);
	cuda_sym(lib, "cuFuncLoad", &cu.func_load);
	cuda_sym(lib, "cuFuncGetAttribute", &cu.func_get_attribute);
	/* versioned: ask for the 12.8 ABI of the batch copy, whatever the
	 * driver's own version (13.0 dropped failIdx from the default one) */
	if (cuda_sym(lib, "cuGetProcAddress_v2", &cu.get_proc_address)) {
		void *fn = NULL;
		int status = -1;

		if (!cu.get_proc_address("cuMemcpyBatchAsync", &fn, CUDA_VERSION_BATCH, 0,
		                         &status) &&
		    status == 0 && fn)
			memcpy(&cu.memcpy_batch_async, &fn, sizeof(fn));
	}
	emu_info("CUDA driver: asynchronous copies %s, batch copies %s",
	         emu_cuda_async_ok() ? "yes" : "no", cu.memcpy_batch_async ? "yes" : "no");
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
	if ((cu.pointer_get_attribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, va) || !ctx) &&
	    primary_ctx_of(va, c))
		return -EFAULT;
	if (!c->ctx)
		c->ctx = ctx;
	copy_kernel_load(c->ctx);
	return 1;
}

/* Drops the cached stream and stage of a context that is gone: a later
 * context may get the same handle. The driver freed both with it. */
static _Atomic unsigned ctx_gen; /* contexts destroyed so far (emu_cuda_ctx_gen) */

/* The copy queues' streams (emu_cuda_stream_new), a few per context, shared
 * by every engine worker. Few, because the GPU has few hardware queues
 * (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default): with more streams than that,
 * streams share queues, and a copy could then wait behind the application's
 * kernel on a shared queue while that kernel waits for the copy (seen on an
 * H200 with 8 workers: every WRITE into GPU memory stalled until
 * RETRY_EXC). */
#define COPY_STREAMS 2
static struct copy_streams {
	CUcontext ctx;
	CUstream s[COPY_STREAMS];
	unsigned n, next;
} copy_streams[16];
static int ncopy_streams;

static void streams_forget(CUcontext ctx)
{
	atomic_fetch_add(&ctx_gen, 1);
	pthread_mutex_lock(&cuda_lock);
	for (int i = 0; i < nstreams; i++)
		if (streams[i].ctx == ctx)
			streams[i--] = streams[--nstreams];
	for (int i = 0; i < ncopy_streams; i++)
		if (copy_streams[i].ctx == ctx)
			copy_streams[i--] = copy_streams[--ncopy_streams];
	for (int i = 0; i < nkernels; i++)
		if (kernels[i].ctx == ctx)
			kernels[i--] = kernels[--nkernels];
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

/* ---- asynchronous primitives (the engine's copy queue, dma.c) ----------- */

unsigned emu_cuda_ctx_gen(void)
{
	return atomic_load(&ctx_gen);
}

bool emu_cuda_async_ok(void)
{
	return cu.event_create && cu.event_record && cu.event_query && cu.memcpy_dtod_async;
}

bool emu_cuda_batch_ok(void)
{
	return cu.memcpy_batch_async != NULL;
}

const char *emu_cuda_error_str(int r)
{
	const char *name = NULL;

	if (r < 0)
		return r == -ETIMEDOUT ? "timed out"
		       : r == -ENOMEM  ? "out of memory"
		                       : "synchronous copy failed";
	if (!cu.error_name || cu.error_name(r, &name) || !name)
		return "CUDA error";
	return name;
}

/* Make ctx current for a call; *prev gets what was, to restore. 0 or -EIO. */
static int ctx_enter(CUcontext ctx, CUcontext *prev)
{
	*prev = NULL;
	if (!cu_loaded || cu.ctx_get_current(prev))
		return -EIO;
	if (*prev != ctx && cu.ctx_set_current(ctx))
		return -EIO;
	return 0;
}

static void ctx_leave(CUcontext ctx, CUcontext prev)
{
	if (prev != ctx)
		cu.ctx_set_current(prev);
}

/* A stream for copies in ctx: one of the context's COPY_STREAMS, in turn
 * (several workers may share one: each one's copies stay in its order). */
int emu_cuda_stream_new(void *ctx, void **stream)
{
	struct copy_streams *cs = NULL;
	CUcontext prev;
	int r = 0;

	*stream = NULL;
	if (!emu_cuda_async_ok())
		return -EIO;
	pthread_mutex_lock(&cuda_lock);
	for (int i = 0; i < ncopy_streams && !cs; i++)
		if (copy_streams[i].ctx == ctx)
			cs = &copy_streams[i];
	if (!cs && ncopy_streams < (int)(sizeof(copy_streams) / sizeof(copy_streams[0]))) {
		cs = &copy_streams[ncopy_streams++];
		*cs = (struct copy_streams){.ctx = ctx};
	}
	if (cs && cs->n < COPY_STREAMS) {
		r = ctx_enter(ctx, &prev);
		if (!r) {
			r = (int)cu.stream_create(&cs->s[cs->n], CU_STREAM_NON_BLOCKING);
			ctx_leave(ctx, prev);
		}
		if (!r)
			cs->n++;
	}
	if (cs && cs->n)
		*stream = cs->s[cs->next++ % cs->n];
	pthread_mutex_unlock(&cuda_lock);
	if (!*stream)
		return r ? r : -EIO;
	return 0;
}

int emu_cuda_event_new(void *ctx, void **ev)
{
	CUcontext prev;
	CUresult r;

	*ev = NULL;
	if (!emu_cuda_async_ok() || ctx_enter(ctx, &prev))
		return -EIO;
	r = cu.event_create(ev, CU_EVENT_DISABLE_TIMING);
	ctx_leave(ctx, prev);
	return r ? (int)r : 0;
}

int emu_cuda_event_record(void *ctx, void *ev, void *stream)
{
	CUcontext prev;
	CUresult r;

	if (ctx_enter(ctx, &prev))
		return -EIO;
	r = cu.event_record(ev, stream);
	ctx_leave(ctx, prev);
	return r;
}

/* 0 done, 1 not yet, else the CUDA error. ev NULL: the whole stream. */
int emu_cuda_query(void *ctx, void *ev, void *stream)
{
	CUcontext prev;
	CUresult r;

	if (ctx_enter(ctx, &prev))
		return -EIO;
	if (ev)
		r = cu.event_query(ev);
	else
		r = cu.stream_query ? cu.stream_query(stream) : cu.stream_synchronize(stream);
	ctx_leave(ctx, prev);
	return r == CUDA_ERROR_NOT_READY ? 1 : r;
}

void *emu_cuda_pinned_alloc(void *ctx, size_t n)
{
	CUcontext prev;
	void *p = NULL;

	if (ctx_enter(ctx, &prev))
		return NULL;
	/* mapped: the copy kernel reads and writes it from the device */
	if (cu.mem_host_alloc(&p, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP))
		p = NULL;
	ctx_leave(ctx, prev);
	return p;
}

bool emu_cuda_pinned_mapped(void *ctx, void *p)
{
	CUdeviceptr d = 0;
	CUcontext prev;
	bool same;

	if (!cu.mem_host_get_device_pointer || ctx_enter(ctx, &prev))
		return false;
	same = !cu.mem_host_get_device_pointer(&d, p, 0) && d == (uintptr_t)p;
	ctx_leave(ctx, prev);
	return same;
}

bool emu_cuda_host_pinned(const void *p, uint64_t len)
{
	unsigned int mem_type = 0;
	CUdeviceptr start = 0;
	size_t size = 0;
	uint64_t va = (uintptr_t)p;

	if (!p || !cuda_available() ||
	    cu.pointer_get_attribute(&mem_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va) ||
	    mem_type != CU_MEMORYTYPE_HOST)
		return false;
	/* all of it must be one pinned range */
	if (cu.pointer_get_attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va) ||
	    cu.pointer_get_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va))
		return false;
	return va >= start && va - start <= size && len <= size - (va - start);
}

int emu_cuda_copy_async(void *ctx, void *stream, const struct emu_cuda_copy *c)
{
	CUcontext prev;
	CUresult r;

	if (ctx_enter(ctx, &prev))
		return -EIO;
	switch (c->kind) {
	case EMU_CUDA_HTOD:
		r = cu.memcpy_htod_async(c->dst, (const void *)(uintptr_t)c->src, c->n, stream);
		break;
	case EMU_CUDA_DTOH:
		r = cu.memcpy_dtoh_async((void *)(uintptr_t)c->dst, c->src, c->n, stream);
		break;
	default:
		if (c->src_ctx && c->src_ctx != ctx && cu.memcpy_peer_async)
			r = cu.memcpy_peer_async(c->dst, ctx, c->src, c->src_ctx, c->n, stream);
		else
			r = cu.memcpy_dtod_async(c->dst, c->src, c->n, stream);
		break;
	}
	ctx_leave(ctx, prev);
	return r;
}

int emu_cuda_copy_batch(void *ctx, void *stream, uint64_t *dsts, uint64_t *srcs, size_t *sizes,
                        size_t n, size_t *fail_idx)
{
	struct cu_memcpy_attrs attr = {.src_access_order = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
	size_t idx0 = 0;
	CUcontext prev;
	CUresult r;

	*fail_idx = SIZE_MAX;
	if (!cu.memcpy_batch_async)
		return -ENOSYS;
	if (ctx_enter(ctx, &prev))
		return -EIO;
	r = cu.memcpy_batch_async(dsts, srcs, sizes, n, &attr, &idx0, 1, fail_idx, stream);
	ctx_leave(ctx, prev);
	return r;
}

static void *copy_kernel_find(CUcontext ctx)
{
	for (int i = 0; i < nkernels; i++)
		if (kernels[i].ctx == ctx)
			return kernels[i].fn;
	return NULL;
}

static void copy_kernel_load(CUcontext ctx)
{
	void *mod = NULL, *fn = NULL;
	CUcontext prev;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	int v;

	if (!emu_cfg.cuda_kernel_max || !ctx)
		return;
	pthread_mutex_lock(&cuda_lock);
	for (int i = 0; i < nkernels; i++)
		if (kernels[i].ctx == ctx) {
			pthread_mutex_unlock(&cuda_lock);
			return;
		}
	if (nkernels < EMU_CUDA_MAX_CTX && !ctx_enter(ctx, &prev)) {
		if (cu.module_load_data && cu.module_get_function && cu.launch_kernel) {
			r = cu.module_load_data(&mod, emu_copy_kernel_ptx);
			if (!r)
				r = cu.module_get_function(&fn, mod, "gnic_emu_copy");
			if (!r && cu.func_load)
				r = cu.func_load(fn);
			else if (!r && cu.func_get_attribute)
				r = cu.func_get_attribute(&v, 0 /* MAX_THREADS_PER_BLOCK */, fn);
		}
		ctx_leave(ctx, prev);
		if (r)
			emu_warn(
			    "cannot load the GPU copy kernel (%s, %d): small GPU copies are one "
			    "driver copy each",
			    emu_cuda_error_str(r), r);
		kernels[nkernels].ctx = ctx;
		kernels[nkernels++].fn = r ? NULL : fn;
	}
	pthread_mutex_unlock(&cuda_lock);
}

/* The kernel's parameter block (copy_kernel.c). */
struct kcopy_params {
	uint32_t count, pad;
	struct emu_cuda_kcopy c[EMU_CUDA_KCOPY_MAX];
};
_Static_assert(sizeof(struct kcopy_params) == 4040, "the copy kernel's parameters");

int emu_cuda_copy_kernel(void *ctx, void *stream, const struct emu_cuda_kcopy *c, size_t n)
{
	struct kcopy_params p;
	void *params[] = {&p};
	CUcontext prev;
	void *fn;
	CUresult r;

	if (!n || n > EMU_CUDA_KCOPY_MAX)
		return -EINVAL;
	if (ctx_enter(ctx, &prev))
		return -EIO;
	pthread_mutex_lock(&cuda_lock);
	fn = copy_kernel_find(ctx);
	pthread_mutex_unlock(&cuda_lock);
	if (!fn) {
		ctx_leave(ctx, prev);
		return -ENOSYS;
	}
	p.count = (uint32_t)n;
	p.pad = 0;
	memcpy(p.c, c, n * sizeof(*c));
	/* one CTA a copy; 128 threads share its bytes */
	r = cu.launch_kernel(fn, (unsigned)n, 1, 1, 128, 1, 1, 0, stream, params, NULL);
	ctx_leave(ctx, prev);
	return r;
}
