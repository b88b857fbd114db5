/* SPDX-License-Identifier: MIT */
/*
 * Protection domains. The engine checks that a QP and the MRs it touches
 * share a PD; a PD therefore outlives every QP and MR created on it
 * (refcnt, changed under nic.lock by mr.c and qp.c).
 *
 * Parent domains, as rdma-core's mlx5 makes them (mlx5_alloc_parent_domain):
 * an ibv_pd that stands for the PD it contains wherever a PD is taken (its
 * handle is that PD's; to_epd() resolves it, as rdma-core's to_mpd does),
 * holding that PD and its thread domain, if any, until it is freed. QPs
 * (qp.c) and CQs (cq_ex.c, IBV_CQ_INIT_ATTR_MASK_PD) made on it hold it; a
 * QP on one with a thread domain uses the domain's doorbell register.
 *
 * Errors as in rdma-core 44: no PD or a comp_mask bit other than
 * ALLOCATORS / PD_CONTEXT: EINVAL; ibv_dealloc_pd of the parent domain
 * while QPs or CQs use it, or of its PD or ibv_dealloc_td of its thread
 * domain while it exists: EBUSY. gnic-emu adds EINVAL for a PD or thread
 * domain of another context. IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS (the
 * user allocating the queues' memory) is not emulated: EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>

#include "emu.h"

static struct emu_pd *pd_list; /* under nic.lock */

struct emu_pd *emu_pd_lookup(uint32_t pdn)
{
	for (struct emu_pd *pd = pd_list; pd; pd = pd->next)
		if (pd->pdn == pdn)
			return pd;
	return NULL;
}

EMU_EXPORT struct ibv_pd *gemu_alloc_pd(struct ibv_context *context)
{
	struct emu_pd *pd;

	if (!gemu_is_emu_context(context)) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	emu_nic_lock();
	pd->pdn = emu_nic.next_pdn++;
	if (!emu_nic.next_pdn)
		emu_nic.next_pdn = 1; /* pdn 0 stays unused */
	pd->next = pd_list;
	pd_list = pd;
	emu_nic_unlock();
	pd->ibpd.context = context;
	pd->ibpd.handle = pd->pdn;
	return &pd->ibpd;
}

struct emu_pd *emu_parent_domain(struct ibv_pd *ibpd)
{
	struct emu_pd *pd = ibpd ? container_of(ibpd, struct emu_pd, ibpd) : NULL;

	return pd && pd->protection ? pd : NULL;
}

/* mlx5's checks, in its order, then gnic-emu's of the objects' contexts. */
static int check_parent_attr(struct ibv_context *context,
                             const struct ibv_parent_domain_init_attr *a)
{
	const uint32_t known =
	    IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;

	if (!gemu_is_emu_context(context) || !a || !a->pd || (a->comp_mask & ~known))
		return EINVAL;
	if (a->pd->context != context || (a->td && a->td->context != context))
		return EINVAL;
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		emu_info("ibv_alloc_parent_domain: IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS is not "
		         "emulated (gnic-emu allocates the queues itself)");
		return EOPNOTSUPP;
	}
	return 0;
}

EMU_EXPORT struct ibv_pd *gemu_alloc_parent_domain(struct ibv_context *context,
                                                   struct ibv_parent_domain_init_attr *attr)
{
	int err = check_parent_attr(context, attr);
	struct emu_pd *pd = err ? NULL : calloc(1, sizeof(*pd));

	if (!err && !pd)
		err = ENOMEM;
	if (err) {
		errno = err;
		return NULL;
	}
	pd->protection = to_epd(attr->pd);
	pd->td = attr->td ? container_of(attr->td, struct emu_td, ibtd) : NULL;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	pd->pdn = pd->protection->pdn;
	pd->ibpd.context = pd->protection->ibpd.context;
	pd->ibpd.handle = pd->protection->ibpd.handle;
	emu_nic_lock();
	pd->protection->refcnt++;
	if (pd->td)
		pd->td->refcnt++;
	emu_nic_unlock();
	return &pd->ibpd;
}

/* Under nic.lock: EBUSY while QPs or CQs use it, else it lets go. */
static int parent_release(struct emu_pd *pd)
{
	if (pd->refcnt)
		return EBUSY;
	pd->protection->refcnt--;
	if (pd->td)
		pd->td->refcnt--;
	return 0;
}

EMU_EXPORT int gemu_dealloc_pd(struct ibv_pd *ibpd)
{
	struct emu_pd *pd;
	int busy;

	if (!ibpd || !gemu_is_emu_context(ibpd->context))
		return EINVAL;
	pd = container_of(ibpd, struct emu_pd, ibpd);
	if (pd->protection) {
		emu_nic_lock();
		busy = parent_release(pd);
		emu_nic_unlock();
		if (!busy)
			free(pd);
		return busy;
	}
	emu_nic_lock();
	busy = pd->refcnt;
	for (struct emu_pd **p = &pd_list; !busy && *p; p = &(*p)->next)
		if (*p == pd) {
			*p = pd->next;
			break;
		}
	emu_nic_unlock();
	if (busy)
		return EBUSY;
	free(pd);
	return 0;
}
