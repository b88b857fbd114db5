/* SPDX-License-Identifier: MIT */
/*
 * DEVX umem: memory the user registers so that the NIC may hold its queues,
 * CQEs and doorbell records there (mlx5dv_devx_umem_reg / _reg_ex). Created
 * objects name a umem by id plus an offset. A umem that objects use cannot
 * go (EBUSY), as the firmware refuses to destroy it.
 *
 * Host memory the engine reads and writes directly. GPU memory (told apart
 * by the CUDA pointer checks MRs use) the engine sees through a host shadow
 * of the same size: u->addr is the shadow, u->dev the GPU address of its
 * byte 0. What the NIC reads there it pulls with a CUDA copy when the UAR
 * doorbell says there is something to read (requester.c: the send record
 * and the WQEs rung; recv.c: the receive record and the WQE taken; cqe.c: a
 * CQ's consumer index when the CQ looks full), and what it writes it pushes
 * (cqe.c: each CQE, its op_own byte last). dma-buf registrations
 * (umem_reg_ex with MLX5DV_UMEM_MASK_DMABUF) answer EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devx.h"

#define UMEM_ACCESS_OK                                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING)
#define UMEM_MIN_PAGE (1ull << 12) /* the device's smallest page: 4 KiB */

static struct emu_devx_umem *umems; /* under the DEVX lock */

static void umem_free(struct emu_devx_umem *u)
{
	if (u->gpu) {
		emu_cuda_put(&u->cu);
		free(u->addr); /* the shadow */
	}
	free(u);
}

static int umem_copy(const struct emu_devx_umem *u, void *p, uint64_t len, bool to_dev)
{
	uint64_t off = (uint64_t)((uint8_t *)p - u->addr);

	if (!u || !u->gpu || !len) /* host memory: nothing to copy */
		return 0;
	if ((uint8_t *)p < u->addr || off > u->size || len > u->size - off)
		return -EIO;
	return to_dev ? emu_cuda_write(u->cu.ctx, u->dev + off, p, len)
	              : emu_cuda_read(u->cu.ctx, u->dev + off, p, len);
}

int emu_devx_umem_pull(const struct emu_devx_umem *u, void *p, uint64_t len)
{
	return umem_copy(u, p, len, false);
}

int emu_devx_umem_push(const struct emu_devx_umem *u, const void *p, uint64_t len)
{
	return umem_copy(u, (void *)p, len, true);
}

static uint32_t umem_id_alloc(void)
{
	static uint32_t next = 1; /* under the DEVX lock; 0 never names a umem */
	uint32_t id;

	for (;;) {
		bool used = false;

		id = next++;
		if (!next)
			next = 1;
		for (struct emu_devx_umem *u = umems; u && !used; u = u->next)
			used = u->pub.umem_id == id;
		if (id && !used)
			return id;
	}
}

void emu_devx_umem_close(struct emu_context *ctx)
{
	for (struct emu_devx_umem **p = &umems; *p;) {
		struct emu_devx_umem *u = *p;

		if (u->ctx != ctx || u->refcnt) {
			p = &u->next;
			continue;
		}
		*p = u->next;
		umem_free(u);
	}
}

struct emu_devx_umem *emu_devx_umem_get(struct emu_context *ctx, uint32_t id)
{
	for (struct emu_devx_umem *u = umems; u; u = u->next)
		if (u->pub.umem_id == id && u->ctx == ctx)
			return u;
	return NULL;
}

void *emu_devx_umem_ptr(struct emu_devx_umem *u, uint64_t off, uint64_t len, uint64_t align)
{
	if (!u || off > u->size || len > u->size - off || (align && off % align))
		return NULL;
	return u->addr + off;
}

/* *cu: the CUDA context of GPU memory (1), else unset (0); or an errno. */
static int umem_check(struct ibv_context *context, const struct mlx5dv_devx_umem_in *in,
                      struct emu_cuda_ctx *cu, int *gpu)
{
	int where;

	if (!context || !gemu_is_emu_context(context) || !to_ectx(context)->devx || !in)
		return EINVAL;
	if (in->comp_mask & ~(uint64_t)MLX5DV_UMEM_MASK_DMABUF)
		return EINVAL;
	if (in->comp_mask & MLX5DV_UMEM_MASK_DMABUF) {
		emu_info("devx_umem_reg_ex: dma-buf umem is not supported by gnic-emu (host memory "
		         "only)");
		return EOPNOTSUPP;
	}
	if (!in->addr || !in->size || (in->access & ~(uint32_t)UMEM_ACCESS_OK) ||
	    !(in->pgsz_bitmap & ~(UMEM_MIN_PAGE - 1)))
		return EINVAL;
	where = emu_cuda_lookup((uint64_t)(uintptr_t)in->addr, in->size, cu);
	if (where < 0)
		return EFAULT;
	*gpu = where == 1;
	return 0;
}

/* The shadow of a GPU umem: zeroes until pulled; what the NIC writes is
 * pushed, so nothing needs to be read now. */
static int umem_shadow(struct emu_devx_umem *u, const struct mlx5dv_devx_umem_in *in,
                       const struct emu_cuda_ctx *cu)
{
	size_t len = (in->size + EMU_PAGE - 1) & ~(size_t)(EMU_PAGE - 1);

	u->gpu = true;
	u->cu = *cu;
	u->dev = (uint64_t)(uintptr_t)in->addr;
	if (posix_memalign((void **)&u->addr, EMU_PAGE, len))
		return ENOMEM;
	memset(u->addr, 0, len);
	return 0;
}

EMU_EXPORT struct mlx5dv_devx_umem *gemu_mlx5dv_devx_umem_reg_ex(struct ibv_context *context,
                                                                 struct mlx5dv_devx_umem_in *in)
{
	struct emu_cuda_ctx cu = {0};
	struct emu_devx_umem *u;
	int gpu = 0, err = umem_check(context, in, &cu, &gpu);

	if (err) {
		errno = err;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	err = !u ? ENOMEM : gpu ? umem_shadow(u, in, &cu) : 0;
	if (err) {
		if (gpu)
			emu_cuda_put(&cu);
		free(u ? u->addr : NULL);
		free(u);
		errno = err;
		return NULL;
	}
	u->ctx = to_ectx(context);
	if (!gpu)
		u->addr = in->addr;
	u->size = in->size;
	u->access = in->access;
	emu_devx_lock();
	u->pub.umem_id = umem_id_alloc();
	u->next = umems;
	umems = u;
	emu_devx_unlock();
	emu_dbg("devx umem 0x%x: %zu bytes of %s memory at %p", u->pub.umem_id, u->size,
	        gpu ? "GPU" : "host", gpu ? in->addr : (void *)u->addr);
	return &u->pub;
}

/* rdma-core: every page size from the device's smallest up. */
EMU_EXPORT struct mlx5dv_devx_umem *
gemu_mlx5dv_devx_umem_reg(struct ibv_context *context, void *addr, size_t size, uint32_t access)
{
	struct mlx5dv_devx_umem_in in = {
	    .addr = addr, .size = size, .access = access, .pgsz_bitmap = ~(UMEM_MIN_PAGE - 1)};

	return gemu_mlx5dv_devx_umem_reg_ex(context, &in);
}

EMU_EXPORT int gemu_mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *pub)
{
	struct emu_devx_umem **p, *u = NULL;
	int err = EINVAL;

	emu_devx_lock();
	for (p = &umems; *p; p = &(*p)->next)
		if (&(*p)->pub == pub) {
			u = *p;
			break;
		}
	if (u && u->refcnt)
		err = EBUSY;
	else if (u) {
		*p = u->next;
		err = 0;
	}
	emu_devx_unlock();
	if (!err)
		umem_free(u);
	return err;
}
