/* SPDX-License-Identifier: MIT */
/*
 * Devices and contexts: the device list, open/close, and the query verbs.
 *
 * An emulated device looks like a single-port ConnectX on RoCE with one
 * IPv4 address, and a GID table as the kernel fills it (see the GIDs
 * section); every entry names the device's fabric listener, so a peer that
 * learns one of our GIDs through any out-of-band exchange can reach us.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"
#include "eth.h"
#include "rwq.h"

/* A ConnectX-7's identity, so that software keyed on it (perftest, UCX, NCCL,
 * ...) takes its mlx5 path: the vendor ID, the part ID and a firmware version
 * of the real format. What says "emulator" to a human is the board ID (the
 * PSID ibv_devinfo prints, here "GNIC" + a serial instead of "MT_..." or an
 * OEM's code) and the node description. */
#define EMU_VENDOR_ID      0x02c9 /* Mellanox */
#define EMU_VENDOR_PART_ID 4129   /* ConnectX-7 (MT4129) */
#define EMU_HCA_TYPE       "MT4129"
#define EMU_FW_VER         "28.39.1002"
#define EMU_HW_VER         0
#define EMU_BOARD_ID       "GNIC0000000001"
/* MRs may start and end anywhere: every page size from 4 KiB up works. */
#define EMU_PAGE_SIZE_CAP (~(uint64_t)(EMU_PAGE - 1))
#define EMU_MAX_MR_SIZE   (1ull << 40)
#define EMU_MAX_PD        65535
#define EMU_CA_ACK_DELAY  16
#define EMU_PKEY_DEFAULT  0xffff

/* Port speed encodings of struct ibv_port_attr (IBTA PortInfo):
 * 4X lanes of 25 Gb/s (EDR) = 100 Gb/s. */
#define EMU_PORT_WIDTH_4X     2
#define EMU_PORT_SPEED_EDR    32
#define EMU_PORT_PHYS_LINK_UP 5
#define EMU_PORT_MAX_VL       4 /* VL0-7 */

/* Serialises open/close so the engine starts with the first context and
 * stops with the last. Separate from nic.lock, which is not held while the
 * workers are joined. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static int open_contexts;

/* ---- GIDs -----------------------------------------------------------------
 *
 * Two kinds of 16-byte name. The GID table (emu_gid_entry) is what verbs
 * show, laid out as the kernel's roce_gid_mgmt fills a RoCE port with one
 * IPv4 address: the default GIDs first (fe80:: + the modified EUI-64 of the
 * MAC, once per RoCE version), then the IPv4-mapped address per version.
 * The MAC is 02:47:<ipv4> (locally administered, 'G'), so each entry names
 * the device's IPv4 address, and all devices listen on one fabric port, as
 * RoCE v2 uses UDP port 4791 everywhere. The identity (emu_gid_make) names a
 * listener by address and port; the handshake carries it, and a relay may
 * be given one as a destination. */

#define EMU_MAC_OUI1 0x47

static void gid_link_local(union ibv_gid *gid, const uint8_t ip[4])
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	/* addrconf's EUI-48 to EUI-64: MAC 02:47:a:b:c:d, U/L bit flipped,
	 * ff:fe in the middle */
	gid->raw[8] = 0x02 ^ 0x02;
	gid->raw[9] = EMU_MAC_OUI1;
	gid->raw[10] = ip[0];
	gid->raw[11] = 0xff;
	gid->raw[12] = 0xfe;
	memcpy(&gid->raw[13], &ip[1], 3);
}

static void gid_v4_mapped(union ibv_gid *gid, const uint8_t ip[4])
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], ip, 4);
}

uint16_t emu_device_lid(const struct emu_device *dev)
{
	return emu_cfg.link_ib ? (uint16_t)(ntohl(dev->addr.sin_addr.s_addr) & 0xffff) : 0;
}

void emu_lid_identity(const struct emu_device *dev, uint16_t lid, union ibv_gid *id)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)emu_cfg.base_port)};

	a.sin_addr.s_addr = htonl((ntohl(dev->addr.sin_addr.s_addr) & 0xffff0000u) | lid);
	emu_gid_make(id, &a);
}

/* InfiniBand: the port GID, subnet prefix fe80:: (the default) + port GUID. */
static int ib_gid_entry(const struct emu_device *dev, uint32_t index, union ibv_gid *gid,
                        enum ibv_gid_type *type)
{
	if (index)
		return -ENODATA;
	memset(gid, 0, sizeof(*gid));
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	memcpy(&gid->raw[8], &dev->guid, 8); /* already big-endian */
	*type = IBV_GID_TYPE_IB;
	return 0;
}

int emu_gid_entry(const struct emu_device *dev, uint32_t index, union ibv_gid *gid,
                  enum ibv_gid_type *type)
{
	const uint8_t *ip = (const uint8_t *)&dev->addr.sin_addr.s_addr;

	if (index >= EMU_GID_TBL_LEN)
		return -EINVAL;
	if (emu_cfg.link_ib)
		return ib_gid_entry(dev, index, gid, type);
	if (index >= EMU_GID_VALID)
		return -ENODATA;
	if (index < 2)
		gid_link_local(gid, ip);
	else
		gid_v4_mapped(gid, ip);
	*type = index % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
	return 0;
}

void emu_gid_make(union ibv_gid *gid, const struct sockaddr_in *addr)
{
	memset(gid, 0, sizeof(*gid));
	memcpy(&gid->raw[8], &addr->sin_port, 2); /* already big-endian */
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &addr->sin_addr.s_addr, 4);
}

/* The IPv4 address of a table entry (either form), or false. */
static bool gid_entry_ip(const union ibv_gid *gid, uint8_t ip[4])
{
	union ibv_gid want;

	memcpy(ip, &gid->raw[12], 4);
	gid_v4_mapped(&want, ip);
	if (!memcmp(&want, gid, sizeof(want)))
		return true;
	ip[0] = gid->raw[10];
	memcpy(&ip[1], &gid->raw[13], 3);
	gid_link_local(&want, ip);
	return !memcmp(&want, gid, sizeof(want));
}

int emu_gid_to_addr(const union ibv_gid *gid, struct sockaddr_in *addr)
{
	static const uint8_t zero[8];
	uint8_t ip[4];
	uint16_t port;

	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	if (gid_entry_ip(gid, ip)) {
		addr->sin_port = htons((uint16_t)emu_cfg.base_port);
		memcpy(&addr->sin_addr.s_addr, ip, 4);
		return 0;
	}
	memcpy(&port, &gid->raw[8], 2);
	if (memcmp(gid->raw, zero, sizeof(zero)) || gid->raw[10] != 0xff || gid->raw[11] != 0xff ||
	    !port)
		return -EINVAL;
	addr->sin_port = port;
	memcpy(&addr->sin_addr.s_addr, &gid->raw[12], 4);
	return 0;
}

int emu_gid_identity(const union ibv_gid *gid, union ibv_gid *id)
{
	struct sockaddr_in addr;
	int ret = emu_gid_to_addr(gid, &addr);

	if (!ret)
		emu_gid_make(id, &addr);
	return ret;
}

struct emu_device *emu_device_by_gid(const union ibv_gid *gid)
{
	union ibv_gid id;

	if (emu_gid_identity(gid, &id))
		return NULL;
	for (int i = 0; i < emu_nic.num_devices; i++)
		if (!memcmp(emu_nic.devices[i].gid.raw, id.raw, sizeof(id.raw)))
			return &emu_nic.devices[i];
	return NULL;
}

/* ---- device list ---------------------------------------------------------- */

/* The emu_device behind an ibv_device, or NULL if it is not one of ours. */
static struct emu_device *to_edev(struct ibv_device *device)
{
	for (int i = 0; i < emu_nic.num_devices; i++)
		if (device == &emu_nic.devices[i].ibdev)
			return &emu_nic.devices[i];
	return NULL;
}

EMU_EXPORT struct ibv_device **gemu_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	int ret = emu_nic_init();

	if (num_devices)
		*num_devices = 0;
	if (ret) {
		errno = -ret;
		return NULL;
	}
	/* a fresh array per call, as libibverbs does: callers free it */
	list = calloc((size_t)emu_nic.num_devices + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(list, emu_nic.dev_list, (size_t)emu_nic.num_devices * sizeof(*list));
	if (num_devices)
		*num_devices = emu_nic.num_devices;
	return list;
}

EMU_EXPORT void gemu_free_device_list(struct ibv_device **list)
{
	free(list);
}

EMU_EXPORT const char *gemu_get_device_name(struct ibv_device *device)
{
	struct emu_device *dev = to_edev(device);

	if (!dev) {
		errno = EINVAL;
		return NULL;
	}
	return dev->ibdev.name;
}

EMU_EXPORT __be64 gemu_get_device_guid(struct ibv_device *device)
{
	struct emu_device *dev = to_edev(device);

	if (!dev) {
		errno = EINVAL;
		return 0;
	}
	return dev->guid;
}

EMU_EXPORT int gemu_get_device_index(struct ibv_device *device)
{
	struct emu_device *dev = to_edev(device);

	return dev ? dev->index : -1;
}

/* ---- contexts ------------------------------------------------------------- */

EMU_EXPORT bool gemu_is_emu_context(struct ibv_context *context)
{
	/* any context's device and ops may be read; only ours have both */
	return context && to_edev(context->device) &&
	       context->abi_compat == __VERBS_ABI_IS_EXTENDED &&
	       context->ops.poll_cq == gemu_poll_cq;
}

static void context_fill_ops(struct emu_context *ctx)
{
	struct verbs_context *vctx = &ctx->vctx;
	struct ibv_context_ops *ops = &vctx->context.ops;

	ops->poll_cq = gemu_poll_cq;
	ops->req_notify_cq = gemu_req_notify_cq;
	ops->post_send = gemu_post_send;
	ops->post_recv = gemu_post_recv;
	ops->post_srq_recv = gemu_post_srq_recv;
	/* the alloc_mw/bind_mw/dealloc_mw slots stay NULL: no memory windows
	 * (verbs.h then reports EOPNOTSUPP) */
	vctx->query_port = gemu_query_port;
	vctx->query_device_ex = gemu_query_device_ex;
	vctx->create_qp_ex = gemu_create_qp_ex;
	vctx->create_cq_ex = gemu_create_cq_ex;
	vctx->alloc_td = gemu_alloc_td; /* thread and parent domains (td.c, pd.c) */
	vctx->dealloc_td = gemu_dealloc_td;
	vctx->alloc_parent_domain = gemu_alloc_parent_domain;
	vctx->ibv_create_flow = gemu_create_flow; /* RAW_PACKET steering (flow.c) */
	vctx->ibv_destroy_flow = gemu_destroy_flow;
	vctx->create_wq = gemu_create_wq; /* receive WQs and RSS (rwq.c) */
	vctx->modify_wq = gemu_modify_wq;
	vctx->destroy_wq = gemu_destroy_wq;
	vctx->create_rwq_ind_table = gemu_create_rwq_ind_table;
	vctx->destroy_rwq_ind_table = gemu_destroy_rwq_ind_table;
	vctx->sz = sizeof(struct verbs_context);
	vctx->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

static void context_close_fds(struct emu_context *ctx)
{
	if (ctx->vctx.context.cmd_fd >= 0)
		close(ctx->vctx.context.cmd_fd);
	if (ctx->vctx.context.async_fd >= 0)
		emu_evq_fini(&ctx->async_q);
}

/* cmd_fd and async_fd must be real descriptors (programs poll or dup
 * them); async events wait in an event queue (evq.h). */
static int context_open_fds(struct emu_context *ctx)
{
	struct ibv_context *c = &ctx->vctx.context;
	int ret;

	c->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (c->cmd_fd < 0)
		return errno;
	ret = emu_evq_init(&ctx->async_q);
	if (ret)
		return ret;
	c->async_fd = ctx->async_q.fd;
	return 0;
}

static int engine_get(struct emu_device *dev)
{
	int ret = 0;

	pthread_mutex_lock(&open_lock);
	if (open_contexts == 0)
		ret = emu_engine_start();
	if (!ret) {
		open_contexts++;
		dev->open_count++;
	}
	pthread_mutex_unlock(&open_lock);
	return ret < 0 ? -ret : ret;
}

static void engine_put(struct emu_device *dev)
{
	pthread_mutex_lock(&open_lock);
	dev->open_count--;
	if (--open_contexts == 0)
		emu_engine_stop();
	pthread_mutex_unlock(&open_lock);
}

EMU_EXPORT struct ibv_context *gemu_open_device(struct ibv_device *device)
{
	struct emu_device *dev = to_edev(device);
	struct emu_context *ctx;
	int ret;

	if (!dev) {
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->dev = dev;
	ctx->vctx.context.device = device;
	ctx->vctx.context.cmd_fd = -1;
	ctx->vctx.context.async_fd = -1;
	ctx->vctx.context.num_comp_vectors = 1;
	ret = emu_uars_open(ctx);
	if (!ret) {
		ret = context_open_fds(ctx);
		if (ret)
			emu_uars_close(ctx);
	}
	if (!ret)
		ret = engine_get(dev);
	if (ret) {
		emu_uars_close(ctx);
		context_close_fds(ctx);
		free(ctx);
		errno = ret;
		return NULL;
	}
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	context_fill_ops(ctx);
	return &ctx->vctx.context;
}

EMU_EXPORT int gemu_close_device(struct ibv_context *context)
{
	struct emu_context *ctx;

	if (!gemu_is_emu_context(context))
		return EINVAL;
	ctx = to_ectx(context);
	emu_devx_close(ctx); /* as the kernel does: the context's DevX objects go with it */
	engine_put(ctx->dev);
	emu_uars_close(ctx);
	context_close_fds(ctx);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

/* ---- queries -------------------------------------------------------------- */

static void device_attr_fill(struct emu_device *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	strncpy(a->fw_ver, EMU_FW_VER, sizeof(a->fw_ver) - 1);
	a->node_guid = dev->guid;
	a->sys_image_guid = dev->guid; /* each device is an adapter of its own */
	a->max_mr_size = EMU_MAX_MR_SIZE;
	a->page_size_cap = EMU_PAGE_SIZE_CAP;
	a->vendor_id = EMU_VENDOR_ID;
	a->vendor_part_id = EMU_VENDOR_PART_ID;
	a->hw_ver = EMU_HW_VER;
	a->max_qp = EMU_MAX_QP - 1;
	a->max_qp_wr = EMU_MAX_QP_WR;
	/* the ConnectX-7 flags the emulator honours; not: P_Key/Q_Key violation
	 * counters, path migration, port change, memory windows, XRC, UD,
	 * memory management extensions; raw packet checksums and flow steering
	 * are RAW_PACKET QPs' (raw.c, flow.c) */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
	                      IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RAW_IP_CSUM |
	                      IBV_DEVICE_MANAGED_FLOW_STEERING;
	a->max_sge = EMU_MAX_SGE;
	a->max_sge_rd = EMU_MAX_SGE;
	a->max_cq = EMU_MAX_CQ - 1;
	a->max_cqe = EMU_MAX_CQE;
	a->max_mr = EMU_MAX_MR - 2; /* indices 0 and 1 are never used: see mr.c */
	a->max_pd = EMU_MAX_PD;
	a->max_qp_rd_atom = emu_cfg.max_rd_atom;
	a->max_qp_init_rd_atom = emu_cfg.max_rd_atom;
	a->max_res_rd_atom = emu_cfg.max_rd_atom * (int)(EMU_MAX_QP - 1);
	/* mlx5_ib: HCA when the requester writes fetched values in host order
	 * (atomic_req_8B_endianness_mode, which mlx5_core sets where the NIC
	 * can), NONE otherwise, though the atomics themselves work */
	a->atomic_cap = emu_cfg.atomic_be ? IBV_ATOMIC_NONE : IBV_ATOMIC_HCA;
	a->max_srq = EMU_MAX_SRQ - 1;
	a->max_srq_wr = EMU_MAX_SRQ_WR;
	a->max_srq_sge = EMU_MAX_SRQ_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = EMU_CA_ACK_DELAY;
	a->phys_port_cnt = 1;
}

EMU_EXPORT int gemu_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (!gemu_is_emu_context(context) || !attr)
		return EINVAL;
	device_attr_fill(to_ectx(context)->dev, attr);
	return 0;
}

EMU_EXPORT int gemu_query_device_ex(struct ibv_context *context,
                                    const struct ibv_query_device_ex_input *input,
                                    struct ibv_device_attr_ex *attr, size_t attr_size)
{
	if (!gemu_is_emu_context(context) || !attr || (input && input->comp_mask) ||
	    attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	/* an application built against newer headers may pass a larger struct:
	 * everything we do not know about reads as "not supported" (zero) */
	memset(attr, 0, attr_size);
	device_attr_fill(to_ectx(context)->dev, &attr->orig_attr);
	/* as the kernel reports it: the legacy flags are its low 32 bits, and no
	 * extended capability (ODP, timestamps, TSO, RSS, tag matching, CQ
	 * moderation, device memory, PCI atomics) is there to add */
	if (vext_field_avail(struct ibv_device_attr_ex, device_cap_flags_ex, attr_size))
		attr->device_cap_flags_ex = (uint64_t)attr->orig_attr.device_cap_flags;
	if (vext_field_avail(struct ibv_device_attr_ex, phys_port_cnt_ex, attr_size))
		attr->phys_port_cnt_ex = 1;
	if (vext_field_avail(struct ibv_device_attr_ex, raw_packet_caps, attr_size))
		attr->raw_packet_caps = IBV_RAW_PACKET_CAP_IP_CSUM;
	return 0;
}

/* A subnet manager's view of the port: its LID, the SM at LID 1, no LMC. */
static void port_attr_ib(const struct emu_device *dev, struct ibv_port_attr *a)
{
	a->link_layer = IBV_LINK_LAYER_INFINIBAND;
	a->port_cap_flags = 0;
	a->lid = emu_device_lid(dev);
	a->sm_lid = 1;
	a->lmc = 0;
}

static void port_attr_fill(const struct emu_device *dev, struct ibv_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_4096;
	a->gid_tbl_len = EMU_GID_TBL_LEN;
	a->port_cap_flags = IBV_PORT_IP_BASED_GIDS;
	a->max_msg_sz = EMU_MAX_MSG_SIZE;
	a->pkey_tbl_len = 1;
	a->lid = 0; /* Ethernet: no LIDs */
	a->max_vl_num = EMU_PORT_MAX_VL;
	a->active_width = EMU_PORT_WIDTH_4X;
	a->active_speed = EMU_PORT_SPEED_EDR;
	a->phys_state = EMU_PORT_PHYS_LINK_UP;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	if (emu_cfg.link_ib)
		port_attr_ib(dev, a);
}

/* attr_len is the caller's idea of sizeof(struct ibv_port_attr): older
 * binaries pass the shorter legacy struct, newer ones a longer one. */
EMU_EXPORT int gemu_query_port(struct ibv_context *context, uint8_t port_num,
                               struct ibv_port_attr *attr, size_t attr_len)
{
	struct ibv_port_attr a;

	if (!gemu_is_emu_context(context) || !attr || port_num != 1)
		return EINVAL;
	port_attr_fill(to_ectx(context)->dev, &a);
	if (attr_len > sizeof(a)) {
		memset((char *)attr + sizeof(a), 0, attr_len - sizeof(a));
		attr_len = sizeof(a);
	}
	memcpy(attr, &a, attr_len);
	return 0;
}

/* rdma-core's ibv_query_gid: an empty entry reads as the zero GID. */
EMU_EXPORT int gemu_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                              union ibv_gid *gid)
{
	enum ibv_gid_type type;
	int ret;

	if (!gemu_is_emu_context(context) || !gid || port_num != 1 || index < 0)
		return EINVAL;
	ret = emu_gid_entry(to_ectx(context)->dev, (uint32_t)index, gid, &type);
	if (ret == -ENODATA)
		memset(gid, 0, sizeof(*gid));
	return ret == -EINVAL ? EINVAL : 0;
}

/* The kernel's QUERY_GID_ENTRY: ENODATA for an empty entry. */
EMU_EXPORT int gemu_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
                                 struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	enum ibv_gid_type type;
	union ibv_gid gid;
	int ret;

	if (!gemu_is_emu_context(context) || !entry || flags || entry_size < sizeof(*entry) ||
	    port_num != 1)
		return EINVAL;
	ret = emu_gid_entry(to_ectx(context)->dev, gid_index, &gid, &type);
	if (ret)
		return -ret;
	memset(entry, 0, entry_size);
	entry->gid = gid;
	entry->gid_index = gid_index;
	entry->port_num = 1;
	entry->gid_type = type;
	entry->ndev_ifindex = 0; /* no kernel netdev behind it */
	return 0;
}

EMU_EXPORT int gemu_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                               __be16 *pkey)
{
	if (!gemu_is_emu_context(context) || !pkey || port_num != 1 || index != 0)
		return EINVAL;
	*pkey = gnic_be16(EMU_PKEY_DEFAULT);
	return 0;
}

/* ---- sysfs attributes ------------------------------------------------------ */

/* The emulated device whose ibdev_path dir is (a trailing '/' allowed). */
static struct emu_device *device_by_sysfs_dir(const char *dir)
{
	for (int i = 0; i < emu_nic.num_devices; i++) {
		const char *path = emu_nic.devices[i].ibdev.ibdev_path;
		size_t len = strlen(path);

		if (!strncmp(dir, path, len) && strspn(dir + len, "/") == strlen(dir + len))
			return &emu_nic.devices[i];
	}
	return NULL;
}

static void guid_str(__be64 guid, char *buf, size_t size)
{
	uint64_t g = gnic_be64(guid); /* the swap is its own inverse */

	snprintf(buf, size, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
	         (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
	         (unsigned int)g & 0xffff);
}

/* The files of /sys/class/infiniband/<device>/ that identify an adapter, as
 * ibv_read_sysfs_file() reads them: the value without its newline, in buf
 * (NUL-terminated), and its length. -ENODEV for a directory that is not an
 * emulated device's, -ENOENT for a file the device does not have, -EOVERFLOW
 * when buf is too small (rdma-core fails rather than truncate). */
EMU_EXPORT int gemu_read_sysfs_attr(const char *dir, const char *file, char *buf, size_t size)
{
	struct emu_device *dev = dir && file ? device_by_sysfs_dir(dir) : NULL;
	char val[IBV_SYSFS_PATH_MAX + 64], host[64];
	size_t len;

	if (!dev)
		return -ENODEV;
	if (!strcmp(file, "board_id")) {
		snprintf(val, sizeof(val), "%s", EMU_BOARD_ID);
	} else if (!strcmp(file, "fw_ver")) {
		snprintf(val, sizeof(val), "%s", EMU_FW_VER);
	} else if (!strcmp(file, "hca_type")) {
		snprintf(val, sizeof(val), "%s", EMU_HCA_TYPE);
	} else if (!strcmp(file, "hw_rev")) {
		snprintf(val, sizeof(val), "0x%x", EMU_HW_VER);
	} else if (!strcmp(file, "node_type")) {
		snprintf(val, sizeof(val), "%d: CA", IBV_NODE_CA);
	} else if (!strcmp(file, "node_guid") || !strcmp(file, "sys_image_guid")) {
		guid_str(dev->guid, val, sizeof(val));
	} else if (!strcmp(file, "node_desc")) {
		/* rdma-ndd's "<host> <device>", and what the device really is */
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		snprintf(val, sizeof(val), "%s %s (gnic-emu)", host, dev->ibdev.name);
	} else {
		return -ENOENT;
	}
	len = strlen(val);
	if (!buf || len >= size)
		return -EOVERFLOW;
	memcpy(buf, val, len + 1);
	return (int)len;
}
