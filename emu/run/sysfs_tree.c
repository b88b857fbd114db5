// SPDX-License-Identifier: MIT
/*
 * The emulated RDMA sysfs and /dev entries, laid out and formatted as the
 * Linux kernel does for an mlx5 device (drivers/infiniband/core/sysfs.c,
 * uverbs_main.c), with the values the emulator reports through verbs:
 *
 *   /sys/class/infiniband/<dev>         -> ../.gnic-emu/pci0000:00/<bdf>/infiniband/<dev>
 *   /sys/class/infiniband_verbs/uverbsN -> ../.gnic-emu/pci0000:00/<bdf>/infiniband_verbs/uverbsN
 *   <bdf>/{vendor,device,...}            the PCI function (ConnectX-7: 15b3:1021)
 *   /dev/infiniband/{uverbsN,rdma_cm}    placeholders (empty files: no kernel
 *                                        driver is behind them)
 *
 * The PCI functions live in a hidden directory of the tmpfs over /sys/class,
 * since /sys/devices cannot get new entries; <dev>/device resolves to them.
 */
#define _GNU_SOURCE
#include "run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libibverbs exports it; its header (driver.h) is for providers */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

#define PCI_ROOT         RUN_SYS_CLASS "/.gnic-emu/pci0000:00"
#define PCI_VENDOR_MLX   0x15b3
#define PCI_DEVICE_CX7   0x1021 /* ConnectX-7 */
#define UVERBS_MAJOR     231
#define UVERBS_MINOR     192
#define UVERBS_CLASS_ABI 6 /* IB_USER_VERBS_ABI_VERSION */
#define MLX5_UVERBS_ABI  1 /* MLX5_IB_UVERBS_ABI_VERSION */

/* snprintf into a path buffer, true when it did not fit */
#define PATH_FMT(buf, ...) (snprintf(buf, sizeof(buf), __VA_ARGS__) >= (int)sizeof(buf))

static int tree_err(const char *what, const char *path, int err)
{
	fprintf(stderr, "gnic-emu-run: %s %s: %s\n", what, path, strerror(err));
	return -1;
}

static int make_dir(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int make_dir(const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return tree_err("mkdir", path, errno);
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return tree_err("mkdir", path, errno);
	return 0;
}

/* dir/name holding text (a sysfs attribute: read-only, one line). */
static int put(const char *dir, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int put(const char *dir, const char *name, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	FILE *f;
	int bad;

	if (PATH_FMT(path, "%s/%s", dir, name))
		return tree_err("path", path, ENAMETOOLONG);
	f = fopen(path, "we");
	if (!f)
		return tree_err("create", path, errno);
	va_start(ap, fmt);
	bad = vfprintf(f, fmt, ap) < 0;
	va_end(ap);
	bad |= fclose(f) != 0;
	if (bad)
		return tree_err("write", path, EIO);
	chmod(path, 0444);
	return 0;
}

static int put_link(const char *target, const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (PATH_FMT(path, "%s/%s", dir, name))
		return tree_err("path", path, ENAMETOOLONG);
	if (symlink(target, path))
		return tree_err("symlink", path, errno);
	return 0;
}

static void guid_str(__be64 guid, char *buf, size_t size)
{
	uint64_t g = be64toh(guid);

	snprintf(buf, size, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
	         (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
	         (unsigned int)g & 0xffff);
}

/* The kernel's "%pI6": eight groups of four hex digits, nothing compressed. */
static void gid_str(const union ibv_gid *gid, char *buf, size_t size)
{
	const uint8_t *r = gid->raw;

	snprintf(buf, size,
	         "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", r[0],
	         r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
	         r[14], r[15]);
}

static const char *port_state_str(enum ibv_port_state s)
{
	static const char *const names[] = {"NOP",   "DOWN",   "INIT",
	                                    "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

static const char *phys_state_str(uint8_t s)
{
	static const char *const names[] = {"<unknown>",
	                                    "Sleep",
	                                    "Polling",
	                                    "Disabled",
	                                    "PortConfigurationTraining",
	                                    "LinkUp",
	                                    "LinkErrorRecovery",
	                                    "Phy Test"};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "<unknown>";
}

static int width_lanes(uint8_t w)
{
	switch (w) {
	case 1:
		return 1;
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	default:
		return 0;
	}
}

/* rate as the kernel shows it: "<Gb/s> Gb/sec (<lanes>X<speed>)", from the
 * per-lane rate in units of 0.1 Gb/s. */
static int put_rate(const char *dir, const struct ibv_port_attr *pa)
{
	static const struct {
		uint32_t speed;
		int tenths;
		const char *name;
	} speeds[] = {{2, 50, " DDR"},     {4, 100, " QDR"},   {8, 100, " FDR10"},
	              {16, 140, " FDR"},   {32, 250, " EDR"},  {64, 500, " HDR"},
	              {128, 1000, " NDR"}, {256, 2000, " XDR"}};
	uint32_t speed = pa->active_speed;
	int lanes = width_lanes(pa->active_width), rate = 25;
	const char *name = "";

	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].speed == speed) {
			rate = speeds[i].tenths;
			name = speeds[i].name;
		}
	rate *= lanes;
	return put(dir, "rate", "%d%s Gb/sec (%dX%s)\n", rate / 10, rate % 10 ? ".5" : "", lanes,
	           name);
}

/* The netdev of a GID: the interface holding its IPv4 address (the
 * emulator's listener address), else none. */
static int gid_ndev(const union ibv_gid *gid, char *name, size_t size)
{
	struct ifaddrs *ifs, *i;
	uint32_t addr;
	int found = -1;

	if (gid->raw[10] != 0xff || gid->raw[11] != 0xff || getifaddrs(&ifs))
		return -1;
	memcpy(&addr, &gid->raw[12], 4);
	for (i = ifs; i && found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr != addr)
			continue;
		snprintf(name, size, "%s", i->ifa_name);
		found = 0;
	}
	freeifaddrs(ifs);
	return found;
}

static int put_gid(struct ibv_context *ctx, const char *port_dir, uint8_t port, int index)
{
	struct ibv_gid_entry entry;
	char dir[PATH_MAX], name[16], str[64], ndev[IF_NAMESIZE];
	union ibv_gid gid;
	int ret;

	snprintf(name, sizeof(name), "%d", index);
	memset(&gid, 0, sizeof(gid));
	ret = ibv_query_gid(ctx, port, index, &gid);
	gid_str(&gid, str, sizeof(str));
	if (PATH_FMT(dir, "%s/gids", port_dir))
		return tree_err("path", dir, ENAMETOOLONG);
	if (put(dir, name, "%s\n", str))
		return -1;
	if (ret || ibv_query_gid_ex(ctx, port, (uint32_t)index, &entry, 0))
		return 0; /* an empty entry: a zero GID with no attributes */
	if (PATH_FMT(dir, "%s/gid_attrs/types", port_dir))
		return tree_err("path", dir, ENAMETOOLONG);
	if (put(dir, name, "%s\n",
	        entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : "IB/RoCE v1"))
		return -1;
	if ((entry.ndev_ifindex && if_indextoname(entry.ndev_ifindex, ndev)) ||
	    !gid_ndev(&gid, ndev, sizeof(ndev))) {
		if (PATH_FMT(dir, "%s/gid_attrs/ndevs", port_dir))
			return tree_err("path", dir, ENAMETOOLONG);
		return put(dir, name, "%s\n", ndev);
	}
	return 0;
}

static int put_port(struct ibv_context *ctx, const char *dev_dir, uint8_t port)
{
	struct ibv_port_attr pa;
	char dir[PATH_MAX];
	int ret;

	ret = ibv_query_port(ctx, port, &pa);
	if (ret)
		return tree_err("ibv_query_port", ibv_get_device_name(ctx->device), ret);
	if (PATH_FMT(dir, "%s/ports/%u", dev_dir, port))
		return tree_err("path", dir, ENAMETOOLONG);
	if (make_dir("%s/gids", dir) || make_dir("%s/gid_attrs/types", dir) ||
	    make_dir("%s/gid_attrs/ndevs", dir))
		return -1;
	if (put(dir, "state", "%d: %s\n", pa.state, port_state_str(pa.state)) ||
	    put(dir, "phys_state", "%u: %s\n", pa.phys_state, phys_state_str(pa.phys_state)) ||
	    put(dir, "link_layer", "%s\n",
	        pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand") ||
	    put_rate(dir, &pa) || put(dir, "lid", "0x%x\n", pa.lid) ||
	    put(dir, "sm_lid", "0x%x\n", pa.sm_lid) || put(dir, "sm_sl", "%u\n", pa.sm_sl) ||
	    put(dir, "lid_mask_count", "%u\n", pa.lmc) ||
	    put(dir, "cap_mask", "0x%08x\n", pa.port_cap_flags))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++)
		if (put_gid(ctx, dir, port, i))
			return -1;
	return 0;
}

/* What the emulator answers for <dev>'s sysfs file, when it has one. */
static int put_emu_attr(const char *dir, struct ibv_device *ib, const char *file)
{
	char val[256];

	if (ibv_read_sysfs_file(ib->ibdev_path, file, val, sizeof(val)) < 0)
		return 0;
	val[strcspn(val, "\n")] = '\0';
	return put(dir, file, "%s\n", val);
}

/* <pci>/infiniband/<dev>/device and <pci>/infiniband_verbs/uverbsN/device:
 * up to the PCI function, as the kernel links them. */
static int put_device_link(const char *pci, const char *dir)
{
	char target[PATH_MAX];

	if (PATH_FMT(target, "../../../%s", strrchr(pci, '/') + 1))
		return tree_err("path", target, ENAMETOOLONG);
	return put_link(target, dir, "device");
}

static int put_pci(const char *pci)
{
	if (make_dir("%s", pci))
		return -1;
	return put(pci, "vendor", "0x%04x\n", PCI_VENDOR_MLX) ||
	       put(pci, "device", "0x%04x\n", PCI_DEVICE_CX7) ||
	       put(pci, "subsystem_vendor", "0x%04x\n", PCI_VENDOR_MLX) ||
	       put(pci, "class", "0x020000\n") || put(pci, "numa_node", "-1\n");
}

static int put_ibdev(struct ibv_device *ib, struct ibv_context *ctx, const char *pci)
{
	struct ibv_device_attr da;
	char dir[PATH_MAX], guid[32];
	int ret = ibv_query_device(ctx, &da);

	if (ret)
		return tree_err("ibv_query_device", ib->name, ret);
	if (PATH_FMT(dir, "%s/infiniband/%s", pci, ib->name))
		return tree_err("path", dir, ENAMETOOLONG);
	if (make_dir("%s", dir))
		return -1;
	guid_str(da.node_guid, guid, sizeof(guid));
	if (put(dir, "node_guid", "%s\n", guid))
		return -1;
	guid_str(da.sys_image_guid, guid, sizeof(guid));
	if (put(dir, "sys_image_guid", "%s\n", guid) || put(dir, "fw_ver", "%s\n", da.fw_ver) ||
	    put(dir, "node_type", "%d: %s\n", ib->node_type,
	        ib->node_type == IBV_NODE_CA ? "CA" : "unknown") ||
	    put_emu_attr(dir, ib, "hca_type") || put_emu_attr(dir, ib, "board_id") ||
	    put_emu_attr(dir, ib, "hw_rev") || put_emu_attr(dir, ib, "node_desc") ||
	    put_device_link(pci, dir))
		return -1;
	for (uint8_t p = 1; p <= da.phys_port_cnt; p++)
		if (put_port(ctx, dir, p))
			return -1;
	return 0;
}

static int put_uverbs(struct ibv_device *ib, int index, const char *pci)
{
	char dir[PATH_MAX];

	if (PATH_FMT(dir, "%s/infiniband_verbs/uverbs%d", pci, index))
		return tree_err("path", dir, ENAMETOOLONG);
	if (make_dir("%s", dir))
		return -1;
	return put(dir, "ibdev", "%s\n", ib->name) ||
	       put(dir, "abi_version", "%d\n", MLX5_UVERBS_ABI) ||
	       put(dir, "dev", "%d:%d\n", UVERBS_MAJOR, UVERBS_MINOR + index) ||
	       put_device_link(pci, dir);
}

/* Placeholders under /dev/infiniband: they exist, as on a host with the
 * driver, but open nothing. */
static int put_dev_node(const char *name)
{
	char path[PATH_MAX];
	FILE *f;

	if (PATH_FMT(path, RUN_DEV "/infiniband/%s", name))
		return tree_err("path", path, ENAMETOOLONG);
	f = fopen(path, "we");
	if (!f)
		return tree_err("create", path, errno);
	fclose(f);
	chmod(path, 0666);
	return 0;
}

static int put_device(struct ibv_device *ib, int index)
{
	char pci[PATH_MAX], target[PATH_MAX], node[32];
	struct ibv_context *ctx = ibv_open_device(ib);
	int ret;

	if (!ctx)
		return tree_err("ibv_open_device", ib->name, errno);
	snprintf(pci, sizeof(pci), PCI_ROOT "/0000:01:00.%d", index);
	ret = put_pci(pci) || put_ibdev(ib, ctx, pci) || put_uverbs(ib, index, pci) ? -1 : 0;
	ibv_close_device(ctx);
	if (ret)
		return -1;
	snprintf(target, sizeof(target), "../.gnic-emu/pci0000:00/0000:01:00.%d/infiniband/%s",
	         index, ib->name);
	if (put_link(target, RUN_SYS_CLASS "/infiniband", ib->name))
		return -1;
	snprintf(target, sizeof(target),
	         "../.gnic-emu/pci0000:00/0000:01:00.%d/infiniband_verbs/uverbs%d", index, index);
	snprintf(node, sizeof(node), "uverbs%d", index);
	if (put_link(target, RUN_SYS_CLASS "/infiniband_verbs", node))
		return -1;
	return put_dev_node(node);
}

int sysfs_tree_write(void)
{
	struct ibv_device **list;
	int n, ret = 0;

	if (make_dir(RUN_SYS_CLASS "/infiniband") || make_dir(RUN_SYS_CLASS "/infiniband_verbs") ||
	    make_dir(RUN_DEV "/infiniband") ||
	    put(RUN_SYS_CLASS "/infiniband_verbs", "abi_version", "%d\n", UVERBS_CLASS_ABI) ||
	    put_dev_node("rdma_cm"))
		return -1;
	list = ibv_get_device_list(&n);
	if (!list)
		return tree_err("ibv_get_device_list", "(gnic-emu)", errno);
	for (int i = 0; i < n && !ret; i++)
		ret = put_device(list[i], i);
	ibv_free_device_list(list);
	return ret;
}
