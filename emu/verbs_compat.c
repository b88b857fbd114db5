/* SPDX-License-Identifier: MIT */
/*
 * libibverbs' old binary interfaces, exported under their old versions as
 * rdma-core 44 does:
 *
 *  - IBVERBS_1.0, the libibverbs 1.0 ABI (2006): programs linked against it
 *    see devices, contexts and every object through wrapper structs of that
 *    release's layout (struct ibv_device_1_0 and so on). gnic-emu does not
 *    provide that layout: such a program finds no device
 *    (ibv_get_device_list@IBVERBS_1.0 fails with EOPNOTSUPP), and since no
 *    1.0 object can exist, every other 1.0 call fails the same way in its own
 *    convention (NULL + errno for objects, EOPNOTSUPP for int calls; the
 *    void calls do nothing). Programs built since 2006 bind to the
 *    IBVERBS_1.1 defaults, which verbs_shim.c implements.
 *  - ibv_register_driver@IBVERBS_1.1, the registration call of providers
 *    older than rdma-core 13, which rdma-core itself only keeps as a no-op.
 *
 * Each function is defined under a local name and bound to the exported
 * name@version with .symver; libibverbs.map defines the version nodes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* A stub's parameters document the call; none of them is used. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define COMPAT(local, name, version) __asm__(".symver " #local ", " #name "@" version)

/* The 1.0 wrapper objects: only ever pointed to. */
struct ibv_device_1_0;
struct ibv_context_1_0;
struct ibv_pd_1_0;
struct ibv_mr_1_0;
struct ibv_cq_1_0;
struct ibv_srq_1_0;
struct ibv_qp_1_0;
struct ibv_ah_1_0;
struct ibv_qp_init_attr_1_0;

static void *no_object(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int no_abi(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* ---- devices and contexts ------------------------------------------------------ */

struct ibv_device_1_0 **ibv_get_device_list_1_0(int *num);
struct ibv_device_1_0 **ibv_get_device_list_1_0(int *num)
{
	if (num)
		*num = 0;
	return no_object();
}
COMPAT(ibv_get_device_list_1_0, ibv_get_device_list, "IBVERBS_1.0");

void ibv_free_device_list_1_0(struct ibv_device_1_0 **list);
void ibv_free_device_list_1_0(struct ibv_device_1_0 **list) {}
COMPAT(ibv_free_device_list_1_0, ibv_free_device_list, "IBVERBS_1.0");

const char *ibv_get_device_name_1_0(struct ibv_device_1_0 *device);
const char *ibv_get_device_name_1_0(struct ibv_device_1_0 *device)
{
	return no_object();
}
COMPAT(ibv_get_device_name_1_0, ibv_get_device_name, "IBVERBS_1.0");

/* 0 is what libibverbs answers for a device it does not know. */
__be64 ibv_get_device_guid_1_0(struct ibv_device_1_0 *device);
__be64 ibv_get_device_guid_1_0(struct ibv_device_1_0 *device)
{
	errno = EOPNOTSUPP;
	return 0;
}
COMPAT(ibv_get_device_guid_1_0, ibv_get_device_guid, "IBVERBS_1.0");

struct ibv_context_1_0 *ibv_open_device_1_0(struct ibv_device_1_0 *device);
struct ibv_context_1_0 *ibv_open_device_1_0(struct ibv_device_1_0 *device)
{
	return no_object();
}
COMPAT(ibv_open_device_1_0, ibv_open_device, "IBVERBS_1.0");

int ibv_close_device_1_0(struct ibv_context_1_0 *context);
int ibv_close_device_1_0(struct ibv_context_1_0 *context)
{
	return no_abi();
}
COMPAT(ibv_close_device_1_0, ibv_close_device, "IBVERBS_1.0");

/* ibv_get_async_event is one of the calls whose failure is -1 + errno. */
int ibv_get_async_event_1_0(struct ibv_context_1_0 *context, struct ibv_async_event *event);
int ibv_get_async_event_1_0(struct ibv_context_1_0 *context, struct ibv_async_event *event)
{
	errno = EOPNOTSUPP;
	return -1;
}
COMPAT(ibv_get_async_event_1_0, ibv_get_async_event, "IBVERBS_1.0");

void ibv_ack_async_event_1_0(struct ibv_async_event *event);
void ibv_ack_async_event_1_0(struct ibv_async_event *event) {}
COMPAT(ibv_ack_async_event_1_0, ibv_ack_async_event, "IBVERBS_1.0");

int ibv_query_device_1_0(struct ibv_context_1_0 *context, struct ibv_device_attr *device_attr);
int ibv_query_device_1_0(struct ibv_context_1_0 *context, struct ibv_device_attr *device_attr)
{
	return no_abi();
}
COMPAT(ibv_query_device_1_0, ibv_query_device, "IBVERBS_1.0");

int ibv_query_port_1_0(struct ibv_context_1_0 *context, uint8_t port_num,
                       struct ibv_port_attr *port_attr);
int ibv_query_port_1_0(struct ibv_context_1_0 *context, uint8_t port_num,
                       struct ibv_port_attr *port_attr)
{
	return no_abi();
}
COMPAT(ibv_query_port_1_0, ibv_query_port, "IBVERBS_1.0");

int ibv_query_gid_1_0(struct ibv_context_1_0 *context, uint8_t port_num, int index,
                      union ibv_gid *gid);
int ibv_query_gid_1_0(struct ibv_context_1_0 *context, uint8_t port_num, int index,
                      union ibv_gid *gid)
{
	return no_abi();
}
COMPAT(ibv_query_gid_1_0, ibv_query_gid, "IBVERBS_1.0");

int ibv_query_pkey_1_0(struct ibv_context_1_0 *context, uint8_t port_num, int index, __be16 *pkey);
int ibv_query_pkey_1_0(struct ibv_context_1_0 *context, uint8_t port_num, int index, __be16 *pkey)
{
	return no_abi();
}
COMPAT(ibv_query_pkey_1_0, ibv_query_pkey, "IBVERBS_1.0");

/* ---- PD, MR ----------------------------------------------------------------------- */

struct ibv_pd_1_0 *ibv_alloc_pd_1_0(struct ibv_context_1_0 *context);
struct ibv_pd_1_0 *ibv_alloc_pd_1_0(struct ibv_context_1_0 *context)
{
	return no_object();
}
COMPAT(ibv_alloc_pd_1_0, ibv_alloc_pd, "IBVERBS_1.0");

int ibv_dealloc_pd_1_0(struct ibv_pd_1_0 *pd);
int ibv_dealloc_pd_1_0(struct ibv_pd_1_0 *pd)
{
	return no_abi();
}
COMPAT(ibv_dealloc_pd_1_0, ibv_dealloc_pd, "IBVERBS_1.0");

struct ibv_mr_1_0 *ibv_reg_mr_1_0(struct ibv_pd_1_0 *pd, void *addr, size_t length, int access);
struct ibv_mr_1_0 *ibv_reg_mr_1_0(struct ibv_pd_1_0 *pd, void *addr, size_t length, int access)
{
	return no_object();
}
COMPAT(ibv_reg_mr_1_0, ibv_reg_mr, "IBVERBS_1.0");

int ibv_dereg_mr_1_0(struct ibv_mr_1_0 *mr);
int ibv_dereg_mr_1_0(struct ibv_mr_1_0 *mr)
{
	return no_abi();
}
COMPAT(ibv_dereg_mr_1_0, ibv_dereg_mr, "IBVERBS_1.0");

/* ---- CQ ------------------------------------------------------------------------------ */

struct ibv_cq_1_0 *ibv_create_cq_1_0(struct ibv_context_1_0 *context, int cqe, void *cq_context,
                                     struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_1_0 *ibv_create_cq_1_0(struct ibv_context_1_0 *context, int cqe, void *cq_context,
                                     struct ibv_comp_channel *channel, int comp_vector)
{
	return no_object();
}
COMPAT(ibv_create_cq_1_0, ibv_create_cq, "IBVERBS_1.0");

int ibv_resize_cq_1_0(struct ibv_cq_1_0 *cq, int cqe);
int ibv_resize_cq_1_0(struct ibv_cq_1_0 *cq, int cqe)
{
	return no_abi();
}
COMPAT(ibv_resize_cq_1_0, ibv_resize_cq, "IBVERBS_1.0");

int ibv_destroy_cq_1_0(struct ibv_cq_1_0 *cq);
int ibv_destroy_cq_1_0(struct ibv_cq_1_0 *cq)
{
	return no_abi();
}
COMPAT(ibv_destroy_cq_1_0, ibv_destroy_cq, "IBVERBS_1.0");

/* -1 + errno, as ibv_get_cq_event reports every failure. */
int ibv_get_cq_event_1_0(struct ibv_comp_channel *channel, struct ibv_cq_1_0 **cq,
                         void **cq_context);
int ibv_get_cq_event_1_0(struct ibv_comp_channel *channel, struct ibv_cq_1_0 **cq,
                         void **cq_context)
{
	errno = EOPNOTSUPP;
	return -1;
}
COMPAT(ibv_get_cq_event_1_0, ibv_get_cq_event, "IBVERBS_1.0");

void ibv_ack_cq_events_1_0(struct ibv_cq_1_0 *cq, unsigned int nevents);
void ibv_ack_cq_events_1_0(struct ibv_cq_1_0 *cq, unsigned int nevents) {}
COMPAT(ibv_ack_cq_events_1_0, ibv_ack_cq_events, "IBVERBS_1.0");

/* ---- SRQ ------------------------------------------------------------------------------ */

struct ibv_srq_1_0 *ibv_create_srq_1_0(struct ibv_pd_1_0 *pd,
                                       struct ibv_srq_init_attr *srq_init_attr);
struct ibv_srq_1_0 *ibv_create_srq_1_0(struct ibv_pd_1_0 *pd,
                                       struct ibv_srq_init_attr *srq_init_attr)
{
	return no_object();
}
COMPAT(ibv_create_srq_1_0, ibv_create_srq, "IBVERBS_1.0");

int ibv_modify_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask);
int ibv_modify_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	return no_abi();
}
COMPAT(ibv_modify_srq_1_0, ibv_modify_srq, "IBVERBS_1.0");

int ibv_query_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *srq_attr);
int ibv_query_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *srq_attr)
{
	return no_abi();
}
COMPAT(ibv_query_srq_1_0, ibv_query_srq, "IBVERBS_1.0");

int ibv_destroy_srq_1_0(struct ibv_srq_1_0 *srq);
int ibv_destroy_srq_1_0(struct ibv_srq_1_0 *srq)
{
	return no_abi();
}
COMPAT(ibv_destroy_srq_1_0, ibv_destroy_srq, "IBVERBS_1.0");

/* ---- QP ---------------------------------------------------------------------------------- */

struct ibv_qp_1_0 *ibv_create_qp_1_0(struct ibv_pd_1_0 *pd,
                                     struct ibv_qp_init_attr_1_0 *qp_init_attr);
struct ibv_qp_1_0 *ibv_create_qp_1_0(struct ibv_pd_1_0 *pd,
                                     struct ibv_qp_init_attr_1_0 *qp_init_attr)
{
	return no_object();
}
COMPAT(ibv_create_qp_1_0, ibv_create_qp, "IBVERBS_1.0");

int ibv_query_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr, int attr_mask,
                     struct ibv_qp_init_attr_1_0 *init_attr);
int ibv_query_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr, int attr_mask,
                     struct ibv_qp_init_attr_1_0 *init_attr)
{
	return no_abi();
}
COMPAT(ibv_query_qp_1_0, ibv_query_qp, "IBVERBS_1.0");

int ibv_modify_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr, int attr_mask);
int ibv_modify_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	return no_abi();
}
COMPAT(ibv_modify_qp_1_0, ibv_modify_qp, "IBVERBS_1.0");

int ibv_destroy_qp_1_0(struct ibv_qp_1_0 *qp);
int ibv_destroy_qp_1_0(struct ibv_qp_1_0 *qp)
{
	return no_abi();
}
COMPAT(ibv_destroy_qp_1_0, ibv_destroy_qp, "IBVERBS_1.0");

/* ---- AH and multicast -------------------------------------------------------------------- */

struct ibv_ah_1_0 *ibv_create_ah_1_0(struct ibv_pd_1_0 *pd, struct ibv_ah_attr *attr);
struct ibv_ah_1_0 *ibv_create_ah_1_0(struct ibv_pd_1_0 *pd, struct ibv_ah_attr *attr)
{
	return no_object();
}
COMPAT(ibv_create_ah_1_0, ibv_create_ah, "IBVERBS_1.0");

int ibv_destroy_ah_1_0(struct ibv_ah_1_0 *ah);
int ibv_destroy_ah_1_0(struct ibv_ah_1_0 *ah)
{
	return no_abi();
}
COMPAT(ibv_destroy_ah_1_0, ibv_destroy_ah, "IBVERBS_1.0");

int ibv_attach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid, uint16_t lid);
int ibv_attach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid, uint16_t lid)
{
	return no_abi();
}
COMPAT(ibv_attach_mcast_1_0, ibv_attach_mcast, "IBVERBS_1.0");

int ibv_detach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid, uint16_t lid);
int ibv_detach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid, uint16_t lid)
{
	return no_abi();
}
COMPAT(ibv_detach_mcast_1_0, ibv_detach_mcast, "IBVERBS_1.0");

/* ---- pre-rdma-core-13 providers ------------------------------------------------------------ */

struct ibv_device;
typedef struct ibv_device *(*emu_driver_init_func_1_1)(const char *uverbs_sys_path,
                                                       int abi_version);

/* Such a provider cannot run on any libibverbs of today; nothing to do. */
void ibv_register_driver_1_1(const char *name, emu_driver_init_func_1_1 init_func);
void ibv_register_driver_1_1(const char *name, emu_driver_init_func_1_1 init_func) {}
COMPAT(ibv_register_driver_1_1, ibv_register_driver, "IBVERBS_1.1");
