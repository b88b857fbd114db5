// SPDX-License-Identifier: MIT
/*
 * CUDA memory of the virtual memory management API (cuMemCreate,
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess) behind an MR of gnic-emu.
 * Such memory belongs to no context (CU_POINTER_ATTRIBUTE_CONTEXT is NULL):
 * the emulator must copy through the device's primary context, which the MR
 * holds while it lives. An RDMA WRITE from host memory lands in it (checked
 * with cuMemcpyDtoH, the bytes around it untouched), an RDMA READ fetches it
 * back, and after ibv_dereg_mr the primary context's references are what
 * they were (with the fake driver, which counts them).
 *
 * The driver is loaded with dlopen("libcuda.so.1"): the real one on a GPU
 * machine (ctest test_cuda_vmm, label gpu), tests/gnic/fake_cuda.c in CI
 * (test_cuda_vmm_fake, label emu). Exit 77 without a driver or a GPU.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "common.h"

/* The driver API's types, from its documented layout (checked against
 * cuda.h where the toolkit is installed). */
typedef unsigned long long cu_ptr;
typedef unsigned long long cu_handle;
struct cu_location {
	int type; /* T_CU_LOCATION_DEVICE */
	int id;
};
struct cu_alloc_prop {
	int type;                   /* T_CU_ALLOCATION_PINNED */
	int requested_handle_types; /* none */
	struct cu_location location;
	void *win32_metadata;
	struct {
		unsigned char compression_type;
		unsigned char gpu_direct_rdma_capable;
		unsigned short usage;
		unsigned char reserved[4];
	} alloc_flags;
};
struct cu_access_desc {
	struct cu_location location;
	int flags; /* T_CU_PROT_READWRITE */
};
enum {
	T_CU_LOCATION_DEVICE = 1,
	T_CU_ALLOCATION_PINNED = 1,
	T_CU_PROT_READWRITE = 3,
	T_CU_GRANULARITY_MINIMUM = 0,
};

#ifdef GNIC_HAVE_CUDA_H
#include <cuda.h>
_Static_assert(sizeof(struct cu_alloc_prop) == sizeof(CUmemAllocationProp), "prop");
_Static_assert(offsetof(struct cu_alloc_prop, location) == offsetof(CUmemAllocationProp, location),
               "prop.location");
_Static_assert(offsetof(struct cu_alloc_prop, alloc_flags) ==
                   offsetof(CUmemAllocationProp, allocFlags),
               "prop.allocFlags");
_Static_assert(sizeof(struct cu_access_desc) == sizeof(CUmemAccessDesc), "access desc");
_Static_assert(T_CU_LOCATION_DEVICE == (int)CU_MEM_LOCATION_TYPE_DEVICE, "location");
_Static_assert(T_CU_ALLOCATION_PINNED == (int)CU_MEM_ALLOCATION_TYPE_PINNED, "pinned");
_Static_assert(T_CU_PROT_READWRITE == (int)CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "readwrite");
_Static_assert(T_CU_GRANULARITY_MINIMUM == (int)CU_MEM_ALLOC_GRANULARITY_MINIMUM, "granularity");
#endif

static struct {
	int (*init)(unsigned int);
	int (*device_get_count)(int *);
	int (*device_get)(int *, int);
	int (*primary_retain)(void **, int);
	int (*primary_release)(int);
	int (*ctx_set_current)(void *);
	int (*granularity)(size_t *, const struct cu_alloc_prop *, int);
	int (*mem_create)(cu_handle *, size_t, const struct cu_alloc_prop *, unsigned long long);
	int (*mem_release)(cu_handle);
	int (*address_reserve)(cu_ptr *, size_t, size_t, cu_ptr, unsigned long long);
	int (*address_free)(cu_ptr, size_t);
	int (*mem_map)(cu_ptr, size_t, size_t, cu_handle, unsigned long long);
	int (*mem_unmap)(cu_ptr, size_t);
	int (*set_access)(cu_ptr, size_t, const struct cu_access_desc *, size_t);
	int (*htod)(cu_ptr, const void *, size_t);
	int (*dtoh)(void *, cu_ptr, size_t);
	int (*fake_primary_refs)(void); /* the fake driver only */
} cu;

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p)
		t_skip("libcuda.so.1 has no %s", name);
	return p;
}

#define CU_SYM(field, name) (*(void **)&cu.field = sym(lib, name))
#define CU_OK(expr)                                                                                \
	do {                                                                                       \
		int r_ = (expr);                                                                   \
		if (r_)                                                                            \
			T_FAIL("%s: CUDA error %d", #expr, r_);                                    \
	} while (0)

static void cuda_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	int n = 0;

	if (!lib)
		t_skip("no CUDA driver (libcuda.so.1): %s", dlerror());
	CU_SYM(init, "cuInit");
	CU_SYM(device_get_count, "cuDeviceGetCount");
	CU_SYM(device_get, "cuDeviceGet");
	CU_SYM(primary_retain, "cuDevicePrimaryCtxRetain");
	CU_SYM(primary_release, "cuDevicePrimaryCtxRelease_v2");
	CU_SYM(ctx_set_current, "cuCtxSetCurrent");
	CU_SYM(granularity, "cuMemGetAllocationGranularity");
	CU_SYM(mem_create, "cuMemCreate");
	CU_SYM(mem_release, "cuMemRelease");
	CU_SYM(address_reserve, "cuMemAddressReserve");
	CU_SYM(address_free, "cuMemAddressFree");
	CU_SYM(mem_map, "cuMemMap");
	CU_SYM(mem_unmap, "cuMemUnmap");
	CU_SYM(set_access, "cuMemSetAccess");
	CU_SYM(htod, "cuMemcpyHtoD_v2");
	CU_SYM(dtoh, "cuMemcpyDtoH_v2");
	*(void **)&cu.fake_primary_refs = dlsym(lib, "fake_cuda_primary_refs");
	if (cu.init(0) || cu.device_get_count(&n) || n < 1)
		t_skip("no CUDA device");
}

struct vmm {
	cu_handle handle;
	cu_ptr ptr;
	size_t size;
};

static void vmm_alloc(struct vmm *m, int dev, size_t want)
{
	struct cu_alloc_prop prop = {.type = T_CU_ALLOCATION_PINNED,
	                             .location = {T_CU_LOCATION_DEVICE, dev}};
	struct cu_access_desc access = {.location = {T_CU_LOCATION_DEVICE, dev},
	                                .flags = T_CU_PROT_READWRITE};
	size_t g = 0;

	prop.alloc_flags.gpu_direct_rdma_capable = 1;
	CU_OK(cu.granularity(&g, &prop, T_CU_GRANULARITY_MINIMUM));
	CHECK(g > 0);
	m->size = (want + g - 1) / g * g;
	CU_OK(cu.mem_create(&m->handle, m->size, &prop, 0));
	CU_OK(cu.address_reserve(&m->ptr, m->size, g, 0, 0));
	CU_OK(cu.mem_map(m->ptr, m->size, 0, m->handle, 0));
	CU_OK(cu.set_access(m->ptr, m->size, &access, 1));
}

static void vmm_free(struct vmm *m)
{
	CU_OK(cu.mem_unmap(m->ptr, m->size));
	CU_OK(cu.address_free(m->ptr, m->size));
	CU_OK(cu.mem_release(m->handle));
}

#define OFF 1000
#define LEN ((1u << 20) + 4096 + 7) /* more than the emulator's 1 MiB copy stage */

static void rdma(struct t_pair *p, enum ibv_wr_opcode op, void *local, uint32_t lkey,
                 uint64_t remote, uint32_t rkey, const char *what)
{
	struct ibv_sge sge = {(uintptr_t)local, LEN, lkey};
	struct ibv_send_wr wr = {.wr_id = 7,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = op,
	                         .send_flags = IBV_SEND_SIGNALED};
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = rkey;
	t_post_send(p->qp[0], &wr);
	wc = t_poll1(p->scq[0], what);
	CHECK_WC(&wc, 7, IBV_WC_SUCCESS,
	         op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ);
}

int main(void)
{
	struct ibv_context *ctx;
	struct ibv_mr *host_mr, *vmm_mr;
	uint8_t *src, *back, *dst;
	struct t_pair p;
	struct vmm m;
	void *primary;
	int dev, refs = -1;

	cuda_load();
	CU_OK(cu.device_get(&dev, 0));
	CU_OK(cu.primary_retain(&primary, dev));
	CU_OK(cu.ctx_set_current(primary));
	vmm_alloc(&m, dev, OFF + LEN + 4096);
	src = t_alloc(m.size, 0);
	back = t_alloc(m.size, 0);
	dst = t_alloc(LEN, 0);
	memset(back, 0x5a, m.size);
	CU_OK(cu.htod(m.ptr, back, m.size)); /* a known background */
	t_fill(src, LEN, 42);

	ctx = t_open(T_DEVICE);
	t_pair_create(&p, ctx, NULL, NULL, 0);
	host_mr = t_reg(p.pd, src, LEN, T_ACCESS_ALL);
	if (cu.fake_primary_refs)
		refs = cu.fake_primary_refs();
	t_case("ibv_reg_mr on VMM memory");
	vmm_mr = ibv_reg_mr(p.pd, (void *)(uintptr_t)m.ptr, m.size, T_ACCESS_ALL);
	if (!vmm_mr)
		T_FAIL("ibv_reg_mr(VMM memory, %zu bytes): %s", m.size, strerror(errno));
	if (cu.fake_primary_refs)
		CHECK_EQ(cu.fake_primary_refs(), refs + 1); /* the MR holds the primary context */

	t_case("RDMA WRITE into VMM memory");
	rdma(&p, IBV_WR_RDMA_WRITE, src, host_mr->lkey, m.ptr + OFF, vmm_mr->rkey, "WRITE");
	CU_OK(cu.dtoh(back, m.ptr, m.size));
	CHECK_BYTES(back, 0x5a, OFF);
	CHECK_MEM(back + OFF, src, LEN);
	CHECK_BYTES(back + OFF + LEN, 0x5a, m.size - OFF - LEN);

	t_case("RDMA READ from VMM memory");
	{
		struct ibv_mr *dst_mr = t_reg(p.pd, dst, LEN, T_ACCESS_ALL);

		rdma(&p, IBV_WR_RDMA_READ, dst, dst_mr->lkey, m.ptr + OFF, vmm_mr->rkey, "READ");
		CHECK_MEM(dst, src, LEN);
		CHECK_OK(ibv_dereg_mr(dst_mr));
	}

	t_case("ibv_dereg_mr releases the primary context");
	CHECK_OK(ibv_dereg_mr(vmm_mr));
	if (cu.fake_primary_refs)
		CHECK_EQ(cu.fake_primary_refs(), refs);
	CHECK_OK(ibv_dereg_mr(host_mr));
	t_pair_destroy(&p);
	CHECK_OK(ibv_close_device(ctx));
	vmm_free(&m);
	CU_OK(cu.primary_release(dev));
	free(src);
	free(back);
	free(dst);
	printf("PASS: RDMA WRITE and READ of %u bytes through VMM memory\n", LEN);
	return 0;
}
