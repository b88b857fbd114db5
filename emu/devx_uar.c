/* SPDX-License-Identifier: MIT */
/*
 * DEVX UARs (mlx5dv_devx_alloc_uar): a page of doorbell registers the user
 * writes and CQ/QP contexts name by page_id. The doorbell register is at
 * +GNIC_MLX5_BF_OFFSET, in two halves of GNIC_MLX5_BF_SIZE bytes, for every
 * allocation type (BlueFlame, non-cached, dedicated non-cached): the engine
 * reads it as memory, so the types differ only in name. QPs may share a
 * page; a write names its QP (the ctrl's qpn_ds). A page named by live
 * objects outlives mlx5dv_devx_free_uar until the last of them goes.
 */
#include <errno.h>
#include <stdlib.h>

#include "devx.h"

/* rdma-core 45 and later; a program built against them may pass it */
#ifndef MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED
#define MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED (1u << 31)
#endif

static struct emu_devx_uar *uars; /* under the DEVX lock */

static uint32_t uar_id_alloc(void)
{
	static uint32_t next = 0x10; /* under the DEVX lock; low indices are the kernel's own */

	for (;;) {
		uint32_t id = next;
		bool used = false;

		next = next + 1 < (1u << 24) ? next + 1 : 0x10;
		for (struct emu_devx_uar *u = uars; u && !used; u = u->next)
			used = u->pub.page_id == id;
		if (!used)
			return id;
	}
}

struct emu_devx_uar *emu_devx_uar_get(struct emu_context *ctx, uint32_t page_id)
{
	for (struct emu_devx_uar *u = uars; u; u = u->next)
		if (u->pub.page_id == page_id && u->ctx == ctx && !u->freed) {
			u->refcnt++;
			return u;
		}
	return NULL;
}

/* DEVX lock held. The last reference frees the page. */
void emu_devx_uar_put(struct emu_devx_uar *uar)
{
	if (--uar->refcnt)
		return;
	for (struct emu_devx_uar **p = &uars; *p; p = &(*p)->next)
		if (*p == uar) {
			*p = uar->next;
			break;
		}
	free(uar->page);
	free(uar);
}

/* Only the user's reference is left once the context's objects are gone. */
void emu_devx_uar_close(struct emu_context *ctx)
{
	for (struct emu_devx_uar *u = uars, *next; u; u = next) {
		next = u->next;
		if (u->ctx == ctx && !u->freed) {
			u->freed = true;
			emu_devx_uar_put(u);
		}
	}
}

EMU_EXPORT struct mlx5dv_devx_uar *gemu_mlx5dv_devx_alloc_uar(struct ibv_context *context,
                                                              uint32_t flags)
{
	struct emu_devx_uar *u;

	if (!context || !gemu_is_emu_context(context) ||
	    (flags != MLX5DV_UAR_ALLOC_TYPE_BF && flags != MLX5DV_UAR_ALLOC_TYPE_NC &&
	     flags != MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED)) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (u)
		u->page = emu_alloc_pages(EMU_PAGE);
	if (!u || !u->page) {
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	u->ctx = to_ectx(context);
	u->refcnt = 1;
	u->pub.base_addr = u->page;
	u->pub.reg_addr = (uint8_t *)u->page + GNIC_MLX5_BF_OFFSET;
	emu_devx_lock();
	u->pub.page_id = uar_id_alloc();
	u->next = uars;
	uars = u;
	emu_devx_unlock();
	/* what the user would mmap on hardware; nothing to map here */
	u->pub.mmap_off = (off_t)u->pub.page_id << 12;
	u->pub.comp_mask = 0;
	return &u->pub;
}

EMU_EXPORT void gemu_mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *pub)
{
	emu_devx_lock();
	for (struct emu_devx_uar *u = uars; u; u = u->next)
		if (&u->pub == pub && !u->freed) {
			u->freed = true; /* no new object may name it */
			emu_devx_uar_put(u);
			break;
		}
	emu_devx_unlock();
}
