/* SPDX-License-Identifier: MIT */
/*
 * DEVX umem: memory the user registers so that the NIC may hold its queues,
 * CQEs and doorbell records there (mlx5dv_devx_umem_reg / _reg_ex). Created
 * objects name a umem by id plus an offset; the engine reads and writes that
 * memory directly, so only host memory is taken: device memory and dma-buf
 * registrations answer EOPNOTSUPP. A umem that objects use cannot go
 * (EBUSY), as the firmware refuses to destroy it.
 */
#include <errno.h>
#include <stdlib.h>

#include "devx.h"

#define UMEM_ACCESS_OK                                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING)
#define UMEM_MIN_PAGE (1ull << 12) /* the device's smallest page: 4 KiB */

static struct emu_devx_umem *umems; /* under the DEVX lock */

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
		free(u);
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

/* Host memory only: the engine keeps plain pointers into it. */
static int umem_check(struct ibv_context *context, const struct mlx5dv_devx_umem_in *in)
{
	struct emu_cuda_ctx cu;
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
	where = emu_cuda_lookup((uint64_t)(uintptr_t)in->addr, in->size, &cu);
	if (where < 0)
		return EFAULT;
	if (where == 1) {
		emu_cuda_put(&cu);
		emu_info("devx_umem_reg: GPU memory at %p is not supported as umem by gnic-emu "
		         "(host memory only)",
		         in->addr);
		return EOPNOTSUPP;
	}
	return 0;
}

EMU_EXPORT struct mlx5dv_devx_umem *gemu_mlx5dv_devx_umem_reg_ex(struct ibv_context *context,
                                                                 struct mlx5dv_devx_umem_in *in)
{
	struct emu_devx_umem *u;
	int err = umem_check(context, in);

	if (err) {
		errno = err;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		errno = ENOMEM;
		return NULL;
	}
	u->ctx = to_ectx(context);
	u->addr = in->addr;
	u->size = in->size;
	u->access = in->access;
	emu_devx_lock();
	u->pub.umem_id = umem_id_alloc();
	u->next = umems;
	umems = u;
	emu_devx_unlock();
	emu_dbg("devx umem 0x%x: %zu bytes at %p", u->pub.umem_id, u->size, (void *)u->addr);
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
		free(u);
	return err;
}
