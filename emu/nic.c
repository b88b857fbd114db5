/* SPDX-License-Identifier: MIT */
/*
 * The process-wide NIC: configuration, devices, the control path's lock and
 * the object tables the engine looks things up in.
 *
 * Initialisation runs once per process (first ibv_get_device_list): it
 * loads the fabric secret, creates GNIC_EMU_DEVICES devices and binds each
 * device's fabric listener, since a device's GID is the address of that
 * listener.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "fabric.h"
#include "worker.h"

/* Node GUID: the first two bytes are a locally administered EUI-64 prefix
 * (0x02: the U/L bit, so no vendor's OUI and never a real adapter's GUID;
 * 0x47: 'G'), the other six are the device's fabric address, the IPv4
 * address and TCP port its GID carries too. Two devices that can reach each
 * other never share a listener address, so they never share a GUID; a device
 * keeps its GUID across runs whenever it keeps its address (GNIC_EMU_PORT
 * set). GNIC_EMU_GUID sets device 0's GUID instead, device i's is that + i. */
#define EMU_GUID_PREFIX 0x0247ull

struct emu_nic emu_nic = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .next_pdn = 1,
};

static pthread_once_t nic_once = PTHREAD_ONCE_INIT;
static int nic_init_err;

/* Queue memory on pages of its own: a GPU context maps these pages whole
 * (cuMemHostRegister), and a heap allocation sharing the last page would be
 * mapped with them and then fail the application's own CUDA copies (seen on
 * the H200 with gnic-perf's staging buffers). */
void *emu_alloc_pages(size_t size)
{
	size_t len = (size + EMU_PAGE - 1) & ~(size_t)(EMU_PAGE - 1);
	void *p;

	if (!len || posix_memalign(&p, EMU_PAGE, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

uint64_t emu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Device index's name: GNIC_EMU_NAME with the number it ends in counted up
 * by index. Letters, digits and '_' only (a name is a sysfs directory);
 * anything else falls back to the default. */
static void device_name(int index, char *out, size_t size)
{
	const char *base = emu_cfg.dev_name;
	size_t len = strlen(base), digits = 0;
	bool ok = len > 0;

	for (size_t i = 0; i < len; i++)
		ok &= isalnum((unsigned char)base[i]) || base[i] == '_';
	while (digits < len && digits < 9 && isdigit((unsigned char)base[len - 1 - digits]))
		digits++;
	if (!ok || !digits || digits == len) {
		emu_err("GNIC_EMU_NAME '%s': a name of letters, digits and '_' that ends in a "
		        "number; using rocep1s0f0",
		        base);
		snprintf(emu_cfg.dev_name, sizeof(emu_cfg.dev_name), "rocep1s0f0");
		device_name(index, out, size);
		return;
	}
	snprintf(out, size, "%.*s%ld", (int)(len - digits), base,
	         strtol(base + len - digits, NULL, 10) + index);
}

/* After the listener is bound: dev->addr is the device's fabric address. */
static __be64 device_guid(const struct emu_device *dev)
{
	if (emu_cfg.node_guid)
		return gnic_be64(emu_cfg.node_guid + (uint64_t)dev->index);
	return gnic_be64(EMU_GUID_PREFIX << 48 | (uint64_t)ntohl(dev->addr.sin_addr.s_addr) << 16 |
	                 ntohs(dev->addr.sin_port));
}

static void device_init(struct emu_device *dev, int index)
{
	struct ibv_device *ib = &dev->ibdev;

	memset(dev, 0, sizeof(*dev));
	dev->index = index;
	ib->node_type = IBV_NODE_CA;
	ib->transport_type = IBV_TRANSPORT_IB;
	device_name(index, ib->name, sizeof(ib->name));
	snprintf(ib->dev_name, sizeof(ib->dev_name), "uverbs%d", index);
	snprintf(ib->dev_path, sizeof(ib->dev_path), "/sys/class/infiniband_verbs/uverbs%d", index);
	snprintf(ib->ibdev_path, sizeof(ib->ibdev_path), "/sys/class/infiniband/%s", ib->name);
}

static int devices_create(void)
{
	int i, ret;

	for (i = 0; i < emu_cfg.num_devices; i++) {
		struct emu_device *dev = &emu_nic.devices[i];

		device_init(dev, i);
		ret = emu_fabric_listen(dev);
		if (ret) {
			emu_err("%s: cannot listen on %s%s%s port %d: %s%s", dev->ibdev.name,
			        emu_cfg.bind_addr[0] ? emu_cfg.bind_addr : "a loopback address",
			        emu_cfg.bind_addr[0] && i ? " + " : "",
			        emu_cfg.bind_addr[0] && i ? "the device index" : "",
			        emu_cfg.base_port, strerror(-ret),
			        ret == -EADDRINUSE
			            ? " (one device per address and fabric port: give "
			              "each process its own GNIC_EMU_ADDR)"
			            : "");
			goto undo;
		}
		dev->guid = device_guid(dev);
		emu_nic.dev_list[i] = &dev->ibdev;
	}
	emu_nic.num_devices = emu_cfg.num_devices;
	return 0;
undo:
	while (i-- > 0) {
		emu_fabric_close_listener(&emu_nic.devices[i]);
		emu_nic.dev_list[i] = NULL;
	}
	return ret;
}

static void nic_init_once(void)
{
	int ret;

	emu_config_load();
	/* before any listener exists, and outside nic.lock: file I/O */
	emu_auth_load();
	/* the workers' eventfds and epoll sets: listeners join worker 0's */
	ret = emu_workers_init();
	if (ret) {
		emu_err("cannot create the engine workers' eventfd/epoll: %s", strerror(-ret));
		nic_init_err = ret;
		return;
	}
	ret = devices_create();
	if (ret) {
		nic_init_err = ret;
		return;
	}
	emu_info("%d device(s) ready, %d engine thread(s)", emu_nic.num_devices,
	         emu_workers_count());
}

/* 0, or -errno of the first initialisation, which is final for the process
 * (a failure is a configuration problem: port in use, bad address). */
int emu_nic_init(void)
{
	pthread_once(&nic_once, nic_init_once);
	return nic_init_err;
}

void emu_nic_lock(void)
{
	pthread_mutex_lock(&emu_nic.lock);
}

void emu_nic_unlock(void)
{
	pthread_mutex_unlock(&emu_nic.lock);
}

struct emu_qp *emu_qp_lookup(uint32_t qpn)
{
	if (qpn < EMU_QPN_BASE || qpn - EMU_QPN_BASE >= EMU_MAX_QP)
		return NULL;
	return emu_nic.qps[qpn - EMU_QPN_BASE];
}

/* Lock-free: mr.c publishes with a release store under nic.lock, and frees
 * only after unpublishing and waiting for every worker's pass to end
 * (emu_workers_sync). */
struct emu_mr *emu_mr_lookup(uint32_t key)
{
	struct emu_mr *mr;

	if ((key >> 8) >= EMU_MAX_MR)
		return NULL;
	mr = atomic_load_explicit(&emu_nic.mrs[key >> 8], memory_order_acquire);
	return mr && mr->ibmr.lkey == key ? mr : NULL;
}
