/* SPDX-License-Identifier: MIT */
/*
 * Protection domains. The engine checks that a QP and the MRs it touches
 * share a PD; a PD therefore outlives every QP and MR created on it
 * (refcnt, changed under nic.lock by mr.c and qp.c).
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

EMU_EXPORT int gemu_dealloc_pd(struct ibv_pd *ibpd)
{
	struct emu_pd *pd;
	int busy;

	if (!ibpd || !gemu_is_emu_context(ibpd->context))
		return EINVAL;
	pd = to_epd(ibpd);
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
