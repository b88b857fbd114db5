// SPDX-License-Identifier: MIT
/*
 * Run under gnic-emu-run: the emulated sysfs and /dev entries it creates
 * hold what this process's emulator reports through verbs, in the kernel's
 * formats, for every device: node_guid / sys_image_guid, every GID of the
 * port table (gids/N against ibv_query_gid, types/N against ibv_query_gid_type), port state,
 * link layer, the device link to a Mellanox ConnectX-7 PCI function, the
 * uverbs class entries and the /dev/infiniband placeholders.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common.h"

/* snprintf into a path buffer; a path that does not fit fails the test */
#define PATH_FMT(buf, ...)                                                                         \
	do {                                                                                       \
		if (snprintf(buf, sizeof(buf), __VA_ARGS__) >= (int)sizeof(buf))                   \
			T_FAIL("path too long: %s", buf);                                          \
	} while (0)

static void read_attr(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	size_t n;
	FILE *f;

	PATH_FMT(path, "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		T_FAIL("open %s: %s", path, strerror(errno));
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n == 0 || buf[n - 1] != '\n')
		T_FAIL("%s: '%s' is not one line ending in a newline", path, buf);
	buf[n - 1] = '\0';
}

static void check_attr(const char *dir, const char *file, const char *want)
{
	char got[256];

	read_attr(dir, file, got, sizeof(got));
	if (strcmp(got, want))
		T_FAIL("%s/%s: '%s', want '%s'", dir, file, got, want);
}

static void guid_str(__be64 guid, char *buf, size_t size)
{
	uint64_t g = be64toh(guid);

	snprintf(buf, size, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
	         (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
	         (unsigned int)g & 0xffff);
}

static void check_gids(struct ibv_context *ctx, const char *port_dir, int tbl_len)
{
	char dir[PATH_MAX], name[16], got[128];
	union ibv_gid want, file_gid;

	for (int i = 0; i < tbl_len; i++) {
		t_case("%s gid %d", port_dir, i);
		PATH_FMT(name, "%d", i);
		PATH_FMT(dir, "%s/gids", port_dir);
		read_attr(dir, name, got, sizeof(got));
		/* "%pI6": eight groups of four digits, nothing compressed */
		CHECK_EQ(strlen(got), 39);
		CHECK_EQ(inet_pton(AF_INET6, got, file_gid.raw), 1);
		memset(&want, 0, sizeof(want));
		if (ibv_query_gid(ctx, 1, i, &want))
			memset(&want, 0, sizeof(want));
		CHECK_MEM(file_gid.raw, want.raw, sizeof(want.raw));
		if (i < 4) { /* the populated entries: v1, v2, v1, v2 */
			struct ibv_gid_entry e;

			CHECK_OK(ibv_query_gid_ex(ctx, 1, (uint32_t)i, &e, 0));
			PATH_FMT(dir, "%s/gid_attrs/types", port_dir);
			check_attr(dir, name,
			           e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : "IB/RoCE v1");
		}
	}
}

static void check_device(struct ibv_device *ib, int index)
{
	char dir[PATH_MAX], port_dir[PATH_MAX], pci[PATH_MAX], path[PATH_MAX], want[64];
	struct ibv_context *ctx = ibv_open_device(ib);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct stat st;

	CHECK_PTR(ctx);
	CHECK_OK(ibv_query_device(ctx, &da));
	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	PATH_FMT(dir, "/sys/class/infiniband/%s", ib->name);
	t_case("%s", dir);
	CHECK_EQ(strcmp(ib->ibdev_path, dir), 0);
	guid_str(da.node_guid, want, sizeof(want));
	check_attr(dir, "node_guid", want);
	guid_str(da.sys_image_guid, want, sizeof(want));
	check_attr(dir, "sys_image_guid", want);
	check_attr(dir, "fw_ver", da.fw_ver);
	check_attr(dir, "node_type", "1: CA");
	check_attr(dir, "hca_type", "MT4129");

	PATH_FMT(port_dir, "%s/ports/1", dir);
	check_attr(port_dir, "state", "4: ACTIVE");
	check_attr(port_dir, "phys_state", "5: LinkUp");
	check_attr(port_dir, "link_layer", "Ethernet");
	check_attr(port_dir, "rate", "100 Gb/sec (4X EDR)");
	check_gids(ctx, port_dir, pa.gid_tbl_len);

	t_case("%s/device", dir);
	PATH_FMT(path, "%s/device", dir);
	if (!realpath(path, pci))
		T_FAIL("%s does not resolve: %s", path, strerror(errno));
	CHECK(stat(pci, &st) == 0 && S_ISDIR(st.st_mode));
	check_attr(pci, "vendor", "0x15b3");
	check_attr(pci, "device", "0x1021");

	PATH_FMT(dir, "/sys/class/infiniband_verbs/uverbs%d", index);
	t_case("%s", dir);
	CHECK_EQ(strcmp(ib->dev_path, dir), 0);
	check_attr(dir, "ibdev", ib->name);
	check_attr(dir, "abi_version", "1");
	PATH_FMT(path, "/dev/infiniband/uverbs%d", index);
	CHECK_OK(stat(path, &st));
	CHECK_OK(ibv_close_device(ctx));
}

int main(void)
{
	struct ibv_device **list;
	struct stat st;
	int n;

	list = ibv_get_device_list(&n);
	CHECK_PTR(list);
	CHECK_GE(n, 1);
	for (int i = 0; i < n; i++)
		check_device(list[i], i);
	ibv_free_device_list(list);
	t_case("class and /dev entries");
	check_attr("/sys/class/infiniband_verbs", "abi_version", "6");
	CHECK_OK(stat("/dev/infiniband/rdma_cm", &st));
	printf("PASS: %d device(s) in sysfs as verbs reports them\n", n);
	return 0;
}
