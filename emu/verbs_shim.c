/* SPDX-License-Identifier: MIT */
/*
 * libibverbs.so.1 for gnic-emu: with LD_LIBRARY_PATH pointing here, any
 * verbs program runs on the emulated NIC unchanged.
 *
 * The library exports every symbol of rdma-core 44's libibverbs.so.1 with
 * its symbol version (libibverbs.map). This file holds the public verbs the
 * emulator implements: each forwards to a gemu_* call of libgnic_emu.so or,
 * for pure helpers (strings, rate tables, kernel struct copies), does the
 * work itself, answering in the call's own convention. The rest of the
 * surface lives beside it:
 *
 *   verbs_unsupported.c  public verbs the emulator does not model
 *                        (multicast, resize/rereg, imports, ECE): EOPNOTSUPP
 *   verbs_provider.c     the provider interface (IBVERBS_PRIVATE_34) that
 *                        provider libraries linked into a program import
 *   verbs_compat.c       the libibverbs 1.0 ABI (IBVERBS_1.0) and
 *                        ibv_register_driver@IBVERBS_1.1
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "emu.h"

/* verbs.h turns these into inline wrappers; the library defines the real
 * functions underneath them. */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* Exported names that no public rdma-core 44 header declares. */
enum emu_gid_type_sysfs { EMU_GID_TYPE_SYSFS_IB_ROCE_V1, EMU_GID_TYPE_SYSFS_ROCE_V2 };
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
                       enum emu_gid_type_sysfs *type);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

/* For the calls whose failure is -1 + errno, given the core's errno value. */
static int errno_to_minus1(int err)
{
	if (!err)
		return 0;
	errno = err;
	return -1;
}

/* ---- devices and contexts -------------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	return gemu_get_device_list(num_devices);
}

void ibv_free_device_list(struct ibv_device **list)
{
	gemu_free_device_list(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return gemu_get_device_name(device);
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	return gemu_get_device_guid(device);
}

int ibv_get_device_index(struct ibv_device *device)
{
	return gemu_get_device_index(device);
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	return gemu_open_device(device);
}

/* 0, or -1 and errno (ibv_open_device(3)). */
int ibv_close_device(struct ibv_context *context)
{
	return errno_to_minus1(gemu_close_device(context));
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	return gemu_query_device(context, device_attr);
}

/* The binary-compatible entry: callers built before ibv_port_attr grew
 * port_cap_flags2 pass the shorter struct, which ends right before it. */
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                   struct _compat_ibv_port_attr *port_attr)
{
	return gemu_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
	                       offsetof(struct ibv_port_attr, port_cap_flags2));
}

/* 0, or -1 and errno (ibv_query_gid(3)). */
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	return errno_to_minus1(gemu_query_gid(context, port_num, index, gid));
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	return gemu_query_gid_ex(context, port_num, gid_index, entry, flags, entry_size);
}

/* The valid entries of the one port, in index order. */
ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
                             size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry entry;
	size_t n = 0;

	if (!entries || entry_size < sizeof(entry))
		return -EINVAL;
	for (uint32_t i = 0; i < EMU_GID_TBL_LEN; i++) {
		int ret = gemu_query_gid_ex(context, 1, i, &entry, flags, sizeof(entry));

		if (ret == ENODATA)
			continue;
		if (ret)
			return -ret;
		if (n == max_entries)
			return -EINVAL; /* as rdma-core: more valid entries than room */
		memcpy((char *)entries + n * entry_size, &entry, sizeof(entry));
		memset((char *)entries + n * entry_size + sizeof(entry), 0,
		       entry_size - sizeof(entry));
		n++;
	}
	return (ssize_t)n;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
                       enum emu_gid_type_sysfs *type)
{
	struct ibv_gid_entry entry;
	int ret;

	if (!type || index > UINT32_MAX) {
		errno = EINVAL;
		return -1;
	}
	ret = gemu_query_gid_ex(context, port_num, index, &entry, 0, sizeof(entry));
	if (ret == ENODATA) { /* rdma-core: an empty entry reads as v1 */
		*type = EMU_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (ret) {
		errno = ret;
		return -1;
	}
	*type = entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? EMU_GID_TYPE_SYSFS_ROCE_V2
	                                               : EMU_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

/* 0, or -1 and errno (ibv_query_pkey(3)). */
int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	return errno_to_minus1(gemu_query_pkey(context, port_num, index, pkey));
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	__be16 entry;
	int ret = gemu_query_pkey(context, port_num, 0, &entry);

	if (ret) {
		errno = ret;
		return -1;
	}
	if (entry != pkey) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* ---- PD, MR ---------------------------------------------------------------- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	return gemu_alloc_pd(context);
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	return gemu_dealloc_pd(pd);
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return gemu_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                               int access)
{
	return gemu_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access)
{
	return gemu_reg_mr_iova2(pd, addr, length, iova, access);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                                 int fd, int access)
{
	return gemu_reg_dmabuf_mr(pd, offset, length, iova, fd, access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	return gemu_dereg_mr(mr);
}

/* ---- CQ and channels --------------------------------------------------------- */

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel, int comp_vector)
{
	return gemu_create_cq(context, cqe, cq_context, channel, comp_vector);
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	return gemu_destroy_cq(cq);
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	return gemu_create_comp_channel(context);
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	return gemu_destroy_comp_channel(channel);
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	return gemu_get_cq_event(channel, cq, cq_context);
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	gemu_ack_cq_events(cq, nevents);
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	return gemu_get_async_event(context, event);
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	gemu_ack_async_event(event);
}

/* ---- QP ------------------------------------------------------------------------ */

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	return gemu_create_qp(pd, qp_init_attr);
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	return gemu_modify_qp(qp, attr, attr_mask);
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                 struct ibv_qp_init_attr *init_attr)
{
	return gemu_query_qp(qp, attr, attr_mask, init_attr);
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	return gemu_destroy_qp(qp);
}

/* The ibv_wr_* view of a QP made with send_ops_flags; NULL for the others. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return gemu_qp_to_qp_ex(qp);
}

/* ---- SRQ ------------------------------------------------------------------------ */

/* ---- address handles ------------------------------------------------------ */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	return gemu_create_ah(pd, attr);
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	return gemu_destroy_ah(ah);
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
                        struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	return errno_to_minus1(gemu_init_ah_from_wc(context, port_num, wc, grh, ah_attr));
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
                                     uint8_t port_num)
{
	return gemu_create_ah_from_wc(pd, wc, grh, port_num);
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr)
{
	return gemu_create_srq(pd, srq_init_attr);
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	return gemu_modify_srq(srq, srq_attr, srq_attr_mask);
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	return gemu_query_srq(srq, srq_attr);
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	return gemu_destroy_srq(srq);
}

/* 0 = no in-order guarantee claimed, always a correct answer. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;
}

/* ---- fork and sysfs ----------------------------------------------------------------- */

/* The emulator pins nothing, so fork() needs no preparation. */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

/* An emulated device's directory (ibdev_path) answers with the core's
 * identity files, never with what the file system has there (a real adapter
 * may have the same name); any other path is read as rdma-core reads it: the
 * length of the contents without their newline, NUL-terminated, or -1 and
 * errno (also when they would not fit with their terminator). */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[IBV_SYSFS_PATH_MAX * 2];
	ssize_t len;
	int fd, ret = gemu_read_sysfs_attr(dir, file, buf, size);

	if (ret >= 0)
		return ret;
	if (ret != -ENODEV)
		return errno_to_minus1(-ret);
	if (!dir || !file || !buf)
		return errno_to_minus1(EINVAL);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return errno_to_minus1(ENAMETOOLONG);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if (len > 0 && (size_t)len < size)
		buf[len] = '\0';
	else if (len > 0)
		return errno_to_minus1(EOVERFLOW);
	return (int)len;
}

/* ---- strings ---------------------------------------------------------------------- */

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const str[] = {
	    [IBV_WC_SUCCESS] = "success",
	    [IBV_WC_LOC_LEN_ERR] = "local length error",
	    [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
	    [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	    [IBV_WC_LOC_PROT_ERR] = "local protection error",
	    [IBV_WC_WR_FLUSH_ERR] = "work request flushed error",
	    [IBV_WC_MW_BIND_ERR] = "memory window bind error",
	    [IBV_WC_BAD_RESP_ERR] = "bad response error",
	    [IBV_WC_LOC_ACCESS_ERR] = "local access error",
	    [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	    [IBV_WC_REM_ACCESS_ERR] = "remote access error",
	    [IBV_WC_REM_OP_ERR] = "remote operation error",
	    [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	    [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	    [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	    [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	    [IBV_WC_REM_ABORT_ERR] = "remote operation aborted",
	    [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
	    [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	    [IBV_WC_FATAL_ERR] = "fatal error",
	    [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	    [IBV_WC_GENERAL_ERR] = "general error",
	    [IBV_WC_TM_ERR] = "tag matching error",
	    [IBV_WC_TM_RNDV_INCOMPLETE] = "tag matching rendezvous incomplete",
	};

	if ((unsigned int)status >= sizeof(str) / sizeof(str[0]) || !str[status])
		return "unknown";
	return str[status];
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const str[] = {
	    [IBV_EVENT_CQ_ERR] = "CQ error",
	    [IBV_EVENT_QP_FATAL] = "QP fatal error",
	    [IBV_EVENT_QP_REQ_ERR] = "QP request error",
	    [IBV_EVENT_QP_ACCESS_ERR] = "QP access error",
	    [IBV_EVENT_COMM_EST] = "communication established",
	    [IBV_EVENT_SQ_DRAINED] = "send queue drained",
	    [IBV_EVENT_PATH_MIG] = "path migrated",
	    [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
	    [IBV_EVENT_DEVICE_FATAL] = "device fatal error",
	    [IBV_EVENT_PORT_ACTIVE] = "port active",
	    [IBV_EVENT_PORT_ERR] = "port error",
	    [IBV_EVENT_LID_CHANGE] = "LID change",
	    [IBV_EVENT_PKEY_CHANGE] = "P_Key change",
	    [IBV_EVENT_SM_CHANGE] = "SM change",
	    [IBV_EVENT_SRQ_ERR] = "SRQ error",
	    [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
	    [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
	    [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
	    [IBV_EVENT_GID_CHANGE] = "GID table change",
	    [IBV_EVENT_WQ_FATAL] = "WQ fatal error",
	};

	if ((unsigned int)event >= sizeof(str) / sizeof(str[0]) || !str[event])
		return "unknown";
	return str[event];
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	switch (node_type) {
	case IBV_NODE_CA:
		return "InfiniBand channel adapter";
	case IBV_NODE_SWITCH:
		return "InfiniBand switch";
	case IBV_NODE_ROUTER:
		return "InfiniBand router";
	case IBV_NODE_RNIC:
		return "iWARP NIC";
	case IBV_NODE_USNIC:
		return "usNIC";
	case IBV_NODE_USNIC_UDP:
		return "usNIC UDP";
	case IBV_NODE_UNSPECIFIED:
		return "unspecified";
	default:
		return "unknown";
	}
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	switch (port_state) {
	case IBV_PORT_NOP:
		return "PORT_NOP";
	case IBV_PORT_DOWN:
		return "PORT_DOWN";
	case IBV_PORT_INIT:
		return "PORT_INIT";
	case IBV_PORT_ARMED:
		return "PORT_ARMED";
	case IBV_PORT_ACTIVE:
		return "PORT_ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "PORT_ACTIVE_DEFER";
	default:
		return "invalid state";
	}
}

/* ---- rates ---------------------------------------------------------------------- */

/* mult: the rate in units of 2.5 Gb/s, for the rates that are such a
 * multiple (0 for the others); mbps: the data rate after line encoding. */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 0, 25781},
    {IBV_RATE_100_GBPS, 0, 103125},   {IBV_RATE_200_GBPS, 0, 206250},
    {IBV_RATE_300_GBPS, 0, 309375},   {IBV_RATE_28_GBPS, 0, 28125},
    {IBV_RATE_50_GBPS, 0, 53125},     {IBV_RATE_400_GBPS, 0, 425000},
    {IBV_RATE_600_GBPS, 0, 637500},   {IBV_RATE_800_GBPS, 0, 850000},
    {IBV_RATE_1200_GBPS, 0, 1275000},
};

#define NUM_RATES (sizeof(rates) / sizeof(rates[0]))

int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < NUM_RATES; i++)
		if (rates[i].rate == rate && rates[i].mult)
			return rates[i].mult;
	return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < NUM_RATES; i++)
		if (mult && rates[i].mult == mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < NUM_RATES; i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < NUM_RATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- kernel ABI struct copies (used by librdmacm-style callers) -------------- */

static void ah_from_kern(struct ibv_ah_attr *dst, const struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	ah_from_kern(dst, src);
}

void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->qp_state = src->qp_state;
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ah_from_kern(&dst->ah_attr, &src->ah_attr);
	ah_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (int)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = (int)src->reversible;
	dst->mtu = (uint8_t)src->mtu;
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (uint32_t)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = (uint32_t)src->reversible;
	dst->mtu = src->mtu;
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}
