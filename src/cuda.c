/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver API, loaded with dlopen("libcuda.so.1") the first time a
 * context asks for a GPU; a CPU-only context never loads it. The few types
 * and constants we use are defined here from the driver API's documented
 * values (cuda.h of CUDA 13.0), so libgnic builds without CUDA.
 *
 * The driver is never unloaded: it owns threads and process-wide state.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gnic_int.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	CU_MEMORYTYPE_DEVICE = 2,
	CU_MEMHOSTREGISTER_PORTABLE = 0x01,
	CU_MEMHOSTREGISTER_DEVICEMAP = 0x02,
	CU_MEMHOSTREGISTER_IOMEMORY = 0x04,
	CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 0x1,
};

struct cuda_api {
	CUresult (*init)(unsigned int flags);
	CUresult (*device_get_count)(int *count);
	CUresult (*device_get)(CUdevice *dev, int ordinal);
	CUresult (*device_get_name)(char *name, int len, CUdevice dev);
	CUresult (*device_get_pci_bus_id)(char *id, int len, CUdevice dev);
	CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*primary_ctx_release)(CUdevice dev);
	CUresult (*ctx_set_current)(CUcontext ctx);
	CUresult (*ctx_get_current)(CUcontext *ctx);
	CUresult (*mem_host_register)(void *p, size_t len, unsigned int flags);
	CUresult (*mem_host_unregister)(void *p);
	CUresult (*mem_host_get_device_pointer)(CUdeviceptr *dptr, void *p, unsigned int flags);
	CUresult (*mem_alloc)(CUdeviceptr *dptr, size_t len);
	CUresult (*mem_free)(CUdeviceptr dptr);
	CUresult (*memcpy_htod)(CUdeviceptr dst, const void *src, size_t len);
	CUresult (*memcpy_dtoh)(void *dst, CUdeviceptr src, size_t len);
	CUresult (*pointer_get_attribute)(void *data, int attribute, CUdeviceptr ptr);
	CUresult (*get_error_name)(CUresult r, const char **name);
	CUresult (*mem_get_handle_for_address_range)(void *handle, CUdeviceptr dptr, size_t len,
	                                             int type, unsigned long long flags);
};

struct cuda_sym {
	size_t off;
	const char *name, *alt; /* the versioned entry point first */
	bool optional;
};

#define SYM(field, name, alt, opt)                                                                 \
	{                                                                                          \
		offsetof(struct cuda_api, field), name, alt, opt                                   \
	}

static const struct cuda_sym syms[] = {
    SYM(init, "cuInit", NULL, false),
    SYM(device_get_count, "cuDeviceGetCount", NULL, false),
    SYM(device_get, "cuDeviceGet", NULL, false),
    SYM(device_get_name, "cuDeviceGetName", NULL, false),
    /* for the NIC nearest the GPU; without it the first NIC is taken */
    SYM(device_get_pci_bus_id, "cuDeviceGetPCIBusId", NULL, true),
    SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain", NULL, false),
    SYM(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease", false),
    SYM(ctx_set_current, "cuCtxSetCurrent", NULL, false),
    SYM(ctx_get_current, "cuCtxGetCurrent", NULL, false),
    SYM(mem_host_register, "cuMemHostRegister_v2", "cuMemHostRegister", false),
    SYM(mem_host_unregister, "cuMemHostUnregister", NULL, false),
    SYM(mem_host_get_device_pointer, "cuMemHostGetDevicePointer_v2", NULL, false),
    SYM(mem_alloc, "cuMemAlloc_v2", NULL, false),
    SYM(mem_free, "cuMemFree_v2", NULL, false),
    SYM(memcpy_htod, "cuMemcpyHtoD_v2", NULL, false),
    SYM(memcpy_dtoh, "cuMemcpyDtoH_v2", NULL, false),
    SYM(pointer_get_attribute, "cuPointerGetAttribute", NULL, false),
    SYM(get_error_name, "cuGetErrorName", NULL, false),
    /* CUDA >= 11.7; without it GPU memory registers through nvidia-peermem */
    SYM(mem_get_handle_for_address_range, "cuMemGetHandleForAddressRange", NULL, true),
};

#define NUM_SYMS (sizeof(syms) / sizeof(syms[0]))

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cuda_api cu;
static bool cu_loaded;

static const char *cu_name(CUresult r)
{
	const char *name = NULL;

	if (!cu.get_error_name || cu.get_error_name(r, &name) || !name)
		return "CUDA_ERROR_UNKNOWN";
	return name;
}

/* Sets the text: "<what>: CUDA_ERROR_X (n)". */
static gnic_status_t cu_fail(gnic_status_t st, CUresult r, const char *what)
{
	return gnic_error(st, "%s: %s (%d)", what, cu_name(r), r);
}

static bool resolve(void *lib)
{
	for (size_t i = 0; i < NUM_SYMS; i++) {
		void *fn = dlsym(lib, syms[i].name);

		if (!fn && syms[i].alt)
			fn = dlsym(lib, syms[i].alt);
		if (!fn && !syms[i].optional) {
			gnic_error(GNIC_ERR_NO_DEVICE, "libcuda.so.1 lacks %s: driver too old",
			           syms[i].name);
			return false;
		}
		memcpy((char *)&cu + syms[i].off, &fn, sizeof(fn));
	}
	return true;
}

static gnic_status_t load_locked(void)
{
	void *lib;
	CUresult r;

	if (cu_loaded)
		return GNIC_OK;
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return gnic_error(GNIC_ERR_NO_DEVICE, "no CUDA driver: %s", dlerror());
	if (!resolve(lib))
		return GNIC_ERR_NO_DEVICE;
	r = cu.init(0);
	if (r)
		return cu_fail(GNIC_ERR_NO_DEVICE, r, "cuInit");
	cu_loaded = true;
	return GNIC_OK;
}

static gnic_status_t cuda_load(void)
{
	gnic_status_t st;

	pthread_mutex_lock(&cuda_lock);
	st = load_locked();
	pthread_mutex_unlock(&cuda_lock);
	return st;
}

/* Which ordinal to use: GNIC_GPU_NONE for AUTO without GPUs. */
static gnic_status_t pick_ordinal(int want, int *ordinal)
{
	gnic_status_t st = cuda_load();
	int count = 0;
	CUresult r;

	if (!st) {
		r = cu.device_get_count(&count);
		if (r)
			st = cu_fail(GNIC_ERR_NO_DEVICE, r, "cuDeviceGetCount");
		else if (!count)
			st = gnic_error(GNIC_ERR_NO_DEVICE, "the CUDA driver sees no GPU");
	}
	if (st && want == GNIC_GPU_AUTO) {
		gnic_info("no GPU (%s): device code runs on CPU threads", gnic_last_error());
		*ordinal = GNIC_GPU_NONE;
		return GNIC_OK;
	}
	if (st)
		return gnic_error(GNIC_ERR_NO_DEVICE, "GPU %d requested, but %s", want,
		                  gnic_last_error());
	*ordinal = want == GNIC_GPU_AUTO ? 0 : want;
	if (*ordinal >= count)
		return gnic_error(GNIC_ERR_NO_DEVICE, "GPU %d requested, %d present", want, count);
	return GNIC_OK;
}

/* gpu->pci, normalised, or "" when CUDA cannot say. */
static void gpu_pci(struct gnic_gpu *gpu, CUdevice dev)
{
	char id[64];

	gpu->pci[0] = 0;
	if (!cu.device_get_pci_bus_id || cu.device_get_pci_bus_id(id, sizeof(id), dev) ||
	    !gnic_pci_norm(id, gpu->pci))
		gpu->pci[0] = 0;
}

gnic_status_t gnic_cuda_open(int want, struct gnic_gpu *gpu)
{
	CUdevice dev;
	CUcontext ctx;
	gnic_status_t st;
	int ordinal = GNIC_GPU_NONE;
	CUresult r;

	gpu->ordinal = GNIC_GPU_NONE;
	if (want == GNIC_GPU_NONE)
		return GNIC_OK;
	st = pick_ordinal(want, &ordinal);
	if (st || ordinal == GNIC_GPU_NONE)
		return st;
	r = cu.device_get(&dev, ordinal);
	if (r)
		return cu_fail(GNIC_ERR_NO_DEVICE, r, "cuDeviceGet");
	r = cu.device_get_name(gpu->name, sizeof(gpu->name), dev);
	if (r)
		return cu_fail(GNIC_ERR_CUDA, r, "cuDeviceGetName");
	gpu_pci(gpu, dev);
	r = cu.primary_ctx_retain(&ctx, dev);
	if (r)
		return cu_fail(GNIC_ERR_CUDA, r, "cuDevicePrimaryCtxRetain");
	gpu->ordinal = ordinal;
	gpu->dev = dev;
	gpu->cu_ctx = ctx;
	return GNIC_OK;
}

void gnic_cuda_close(struct gnic_gpu *gpu)
{
	if (gpu->ordinal == GNIC_GPU_NONE)
		return;
	cu.primary_ctx_release(gpu->dev);
	gpu->ordinal = GNIC_GPU_NONE;
}

gnic_status_t gnic_cuda_enter(const struct gnic_gpu *gpu, void **prev)
{
	CUresult r = cu.ctx_get_current(prev);

	if (r)
		return cu_fail(GNIC_ERR_CUDA, r, "cuCtxGetCurrent");
	if (*prev == gpu->cu_ctx)
		return GNIC_OK;
	r = cu.ctx_set_current(gpu->cu_ctx);
	if (r)
		return cu_fail(GNIC_ERR_CUDA, r, "cuCtxSetCurrent");
	return GNIC_OK;
}

void gnic_cuda_leave(void *prev)
{
	CUcontext cur = NULL;

	if (!cu.ctx_get_current(&cur) && cur != prev)
		cu.ctx_set_current(prev);
}

bool gnic_cuda_is_device_mem(const void *addr)
{
	unsigned int type = 0;
	uint64_t managed = 0; /* the driver writes a bool-sized flag */
	CUdeviceptr p = (uintptr_t)addr;

	if (!cu_loaded)
		return false;
	/* failure means the driver does not know the address: host memory */
	if (cu.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ||
	    type != CU_MEMORYTYPE_DEVICE)
		return false;
	/* managed memory is addressable by the CPU: register it as host memory */
	return cu.pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) || !managed;
}

gnic_status_t gnic_cuda_alloc(size_t len, uint64_t *dptr)
{
	CUdeviceptr p = 0;
	CUresult r = cu.mem_alloc(&p, len);

	if (r)
		return cu_fail(r == CUDA_ERROR_OUT_OF_MEMORY ? GNIC_ERR_NOMEM : GNIC_ERR_CUDA, r,
		               "cuMemAlloc");
	*dptr = p;
	return GNIC_OK;
}

void gnic_cuda_free(uint64_t dptr)
{
	if (dptr)
		cu.mem_free(dptr);
}

gnic_status_t gnic_cuda_htod(uint64_t dst, const void *src, size_t len)
{
	CUresult r = cu.memcpy_htod(dst, src, len);

	return r ? cu_fail(GNIC_ERR_CUDA, r, "cuMemcpyHtoD") : GNIC_OK;
}

gnic_status_t gnic_cuda_dtoh(void *dst, uint64_t src, size_t len)
{
	CUresult r = cu.memcpy_dtoh(dst, src, len);

	return r ? cu_fail(GNIC_ERR_CUDA, r, "cuMemcpyDtoH") : GNIC_OK;
}

int gnic_cuda_host_register(void *addr, size_t len, unsigned flags)
{
	unsigned int f = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP;
	CUresult r;

	if (flags & GNIC_CUDA_REG_IOMEM)
		f |= CU_MEMHOSTREGISTER_IOMEMORY;
	r = cu.mem_host_register(addr, len, f);
	if (r)
		cu_fail(GNIC_ERR_CUDA, r, "cuMemHostRegister");
	return r;
}

void gnic_cuda_host_unregister(void *addr)
{
	CUresult r = cu.mem_host_unregister(addr);

	if (r)
		gnic_warn("cuMemHostUnregister(%p): %s (%d)", addr, cu_name(r), r);
}

gnic_status_t gnic_cuda_host_dev_ptr(void *addr, uint64_t *dptr)
{
	CUdeviceptr p = 0;
	CUresult r = cu.mem_host_get_device_pointer(&p, addr, 0);

	if (r)
		return cu_fail(GNIC_ERR_CUDA, r, "cuMemHostGetDevicePointer");
	*dptr = p;
	return GNIC_OK;
}

int gnic_cuda_dmabuf_fd(uint64_t dptr, size_t len)
{
	int fd = -1;
	CUresult r;

	if (!cu.mem_get_handle_for_address_range) {
		gnic_error(GNIC_ERR_NOT_SUPPORTED, "cuMemGetHandleForAddressRange: not in driver");
		return -1;
	}
	r = cu.mem_get_handle_for_address_range(&fd, dptr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
	                                        0);
	if (r) {
		cu_fail(GNIC_ERR_CUDA, r, "cuMemGetHandleForAddressRange");
		return -1;
	}
	return fd;
}
