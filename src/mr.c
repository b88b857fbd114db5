/* SPDX-License-Identifier: MIT */
/*
 * Memory regions over host memory or CUDA device memory.
 *
 * GPU memory is recognised with cuPointerGetAttribute when the context has a
 * GPU. On rdma-core it is registered through a dma-buf exported by the CUDA
 * driver (no kernel module beyond the GPU driver needed), and if that fails
 * through plain reg_mr, which works when nvidia-peermem is loaded. gnic-emu
 * recognises CUDA memory itself, so plain reg_mr is right there.
 *
 * GPU memory is registered with IBV_ACCESS_RELAXED_ORDERING, as NCCL and
 * UCX do: the NIC's writes into it may then be reordered by PCIe, which is
 * what GPUs need for full peer-to-peer bandwidth on many hosts. It is an
 * optional access flag: libibverbs drops it where the kernel does not take
 * optional flags, and the kernel where the device cannot do it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gnic_int.h"

struct gnic_mr {
	struct gnic_ctx *ctx;
	struct ibv_mr *ibmr;
	void *addr;
	size_t len;
	bool gpu;
};

static int to_ibv_access(unsigned access)
{
	int a = 0;

	if (access & GNIC_ACCESS_LOCAL)
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (access & GNIC_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (access & GNIC_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (access & GNIC_ACCESS_REMOTE_ATOMIC)
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	return a;
}

static gnic_status_t check_args(struct gnic_ctx *ctx, void *addr, size_t len, unsigned access,
                                struct gnic_mr **mr_p)
{
	if (!ctx || !addr || !mr_p)
		return gnic_error(GNIC_ERR_INVALID, "mr_reg: NULL argument");
	if (!len)
		return gnic_error(GNIC_ERR_INVALID, "mr_reg: length 0");
	if (access & ~(unsigned)GNIC_ACCESS_ALL)
		return gnic_error(GNIC_ERR_INVALID, "mr_reg: unknown access bits %#x",
		                  access & ~(unsigned)GNIC_ACCESS_ALL);
	/* InfiniBand: a region others may write must be locally writable */
	if ((access & (GNIC_ACCESS_REMOTE_WRITE | GNIC_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & GNIC_ACCESS_LOCAL))
		return gnic_error(GNIC_ERR_INVALID,
		                  "mr_reg: REMOTE_WRITE and REMOTE_ATOMIC need GNIC_ACCESS_LOCAL");
	return GNIC_OK;
}

static bool is_gpu_mem(struct gnic_ctx *ctx, void *addr)
{
	void *prev;
	bool gpu;

	if (!gnic_ctx_has_gpu(ctx) || gnic_cuda_enter(&ctx->gpu, &prev))
		return false;
	gpu = gnic_cuda_is_device_mem(addr);
	gnic_cuda_leave(prev);
	return gpu;
}

/* dma-buf offsets and lengths are in whole pages of the exporter. */
static struct ibv_mr *reg_dmabuf(struct gnic_ctx *ctx, void *addr, size_t len, int access)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t base = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	struct ibv_mr *mr;
	void *prev;
	int fd;

	if (!ctx->v->reg_dmabuf_mr || gnic_cuda_enter(&ctx->gpu, &prev))
		return NULL;
	fd = gnic_cuda_dmabuf_fd(base, end - base);
	gnic_cuda_leave(prev);
	if (fd < 0)
		return NULL;
	mr = ctx->v->reg_dmabuf_mr(ctx->pd, (uintptr_t)addr - base, len, (uintptr_t)addr, fd,
	                           access);
	if (!mr)
		gnic_error(GNIC_ERR_SYSTEM, "reg_dmabuf_mr: %s", strerror(errno));
	close(fd); /* the MR holds its own reference to the dma-buf */
	return mr;
}

static struct ibv_mr *reg(struct gnic_ctx *ctx, void *addr, size_t len, int access, bool gpu)
{
	struct ibv_mr *mr;

	if (!gpu || ctx->v->provider != GNIC_PROVIDER_VERBS)
		return gnic_verbs_reg_mr(ctx->v, ctx->pd, addr, len, access);
	mr = reg_dmabuf(ctx, addr, len, access);
	if (mr)
		return mr;
	gnic_info("GPU memory %p: dma-buf registration failed (%s); trying nvidia-peermem", addr,
	          gnic_last_error());
	return gnic_verbs_reg_mr(ctx->v, ctx->pd, addr, len, access);
}

GNIC_API gnic_status_t gnic_mr_reg(struct gnic_ctx *ctx, void *addr, size_t len, unsigned access,
                                   struct gnic_mr **mr_p)
{
	gnic_status_t st = check_args(ctx, addr, len, access, mr_p);
	struct gnic_mr *mr;

	if (st)
		return st;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return gnic_error(GNIC_ERR_NOMEM, "mr_reg: out of memory");
	mr->gpu = is_gpu_mem(ctx, addr);
	errno = 0;
	mr->ibmr =
	    reg(ctx, addr, len, to_ibv_access(access) | (mr->gpu ? IBV_ACCESS_RELAXED_ORDERING : 0),
	        mr->gpu);
	if (!mr->ibmr) {
		st = gnic_error(GNIC_ERR_SYSTEM, "reg_mr(%p, %zu, access %#x) on %s %s memory: %s",
		                addr, len, access, ctx->device, mr->gpu ? "GPU" : "host",
		                strerror(errno ? errno : EINVAL));
		free(mr);
		return st;
	}
	mr->ctx = ctx;
	mr->addr = addr;
	mr->len = len;
	ctx->nmr++;
	*mr_p = mr;
	return GNIC_OK;
}

GNIC_API void gnic_mr_dereg(struct gnic_mr *mr)
{
	int r;

	if (!mr)
		return;
	r = mr->ctx->v->dereg_mr(mr->ibmr);
	if (r) {
		/* e.g. still bound: keep the handle valid rather than leak it freed */
		gnic_error(GNIC_ERR_SYSTEM, "dereg_mr: %s", strerror(r));
		gnic_warn("%s", gnic_last_error());
		return;
	}
	mr->ctx->nmr--;
	free(mr);
}

GNIC_API uint32_t gnic_mr_lkey(const struct gnic_mr *mr)
{
	return mr ? mr->ibmr->lkey : 0;
}

GNIC_API uint32_t gnic_mr_rkey(const struct gnic_mr *mr)
{
	return mr ? mr->ibmr->rkey : 0;
}

GNIC_API void gnic_mr_rmem(const struct gnic_mr *mr, struct gnic_rmem *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!mr)
		return;
	out->addr = (uintptr_t)mr->addr;
	out->len = mr->len;
	out->rkey = mr->ibmr->rkey;
}
