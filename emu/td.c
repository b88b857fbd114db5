/* SPDX-License-Identifier: MIT */
/*
 * Thread domains, as rdma-core's mlx5 makes them (providers/mlx5/verbs.c
 * mlx5_alloc_td): a promise that one thread at a time uses the QPs of the
 * parent domains made with it, for which the provider gives the domain a
 * doorbell register of its own (uar.c: emu_uar_td_attach) that those QPs
 * write without a lock. A QP made on such a parent domain takes that
 * register instead of one of the context's (qp.c).
 *
 * Errors as in rdma-core: a comp_mask bit: EINVAL; no register to be had
 * (the device's UAR pages are used up, GNIC_EMU_UAR_PAGES): NULL with
 * ENOMEM; ibv_dealloc_td while a parent domain holds the domain: EBUSY.
 * gnic-emu adds EINVAL for a NULL attribute or another provider's context,
 * where rdma-core would crash.
 */
#include <errno.h>
#include <stdlib.h>

#include "emu.h"

static struct emu_td *to_etd(struct ibv_td *td)
{
	return container_of(td, struct emu_td, ibtd);
}

EMU_EXPORT struct ibv_td *gemu_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr)
{
	struct emu_td *td;

	if (!gemu_is_emu_context(context) || !attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->bf = emu_uar_td_attach(to_ectx(context));
	if (!td->bf) {
		free(td);
		errno = ENOMEM;
		return NULL;
	}
	td->ibtd.context = context;
	return &td->ibtd;
}

EMU_EXPORT int gemu_dealloc_td(struct ibv_td *ibtd)
{
	struct emu_td *td;
	int busy;

	if (!ibtd || !gemu_is_emu_context(ibtd->context))
		return EINVAL;
	td = to_etd(ibtd);
	emu_nic_lock();
	busy = td->refcnt;
	emu_nic_unlock();
	if (busy)
		return EBUSY;
	emu_uar_td_detach(td->bf);
	free(td);
	return 0;
}
