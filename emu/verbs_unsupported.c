/* SPDX-License-Identifier: MIT */
/*
 * The public verbs of rdma-core 44 that gnic-emu does not model: Ethernet
 * L2 resolution, multicast, resizing a CQ, re-registering an MR, importing
 * objects of another process, and ECE. Each one fails the way its man page
 * says a failure looks (NULL + errno for objects, an errno value for most
 * int calls, -1 + errno where that is the convention), always with
 * EOPNOTSUPP, so software probing for a feature takes its fallback path.
 *
 * The verbs reached through the context's operation table instead of a
 * symbol (ibv_alloc_mw, ibv_open_xrcd, XRC and tag-matching SRQs, flows, WQs, DM, ...)
 * need no code: device.c leaves those slots empty and verbs.h then returns
 * EOPNOTSUPP itself.
 */
#include <errno.h>

#include <infiniband/verbs.h>

/* A stub's parameters document the call; none of them is used. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static void *unsupported_ptr(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int unsupported(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* ---- address handles: ibv_resolve_eth_l2_from_gid (the rest is verbs_shim.c) ---- */

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
                                uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	return unsupported();
}

/* ---- multicast ------------------------------------------------------------------- */

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return unsupported();
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return unsupported();
}

/* ---- resize and re-register ------------------------------------------------------- */

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return unsupported();
}

/* IBV_REREG_MR_ERR_INPUT: the old MR stays valid. */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
                 int access)
{
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

/* ---- objects of another process ---------------------------------------------------- */

struct ibv_context *ibv_import_device(int cmd_fd)
{
	return unsupported_ptr();
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	return unsupported_ptr();
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	return unsupported_ptr();
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	return unsupported_ptr();
}

/* Nothing can have been imported, so there is nothing to release. */
void ibv_unimport_pd(struct ibv_pd *pd) {}

void ibv_unimport_mr(struct ibv_mr *mr) {}

void ibv_unimport_dm(struct ibv_dm *dm) {}

/* ---- enhanced connection establishment --------------------------------------------- */

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return unsupported();
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return unsupported();
}
