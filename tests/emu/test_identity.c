// SPDX-License-Identifier: MIT
/*
 * The device's identity as software sees it: a ConnectX-7 (vendor 0x02c9,
 * part 4129, firmware version of the real format) whose board ID and node
 * description say gnic-emu; node GUIDs derived from each device's fabric
 * address, or from GNIC_EMU_GUID; the sysfs identity files ibv_devinfo reads
 * through ibv_read_sysfs_file; ibv_query_device_ex's extended flags; the
 * answers of mlx5dv_query_device; mlx5dv_open_device.
 *
 *   test_identity [GUID of device 0]
 *
 * With an argument, GNIC_EMU_GUID is expected to have set that GUID; without,
 * each GUID is the one derived from the device's GID.
 */
#include <ctype.h>

#include <infiniband/mlx5dv.h>

#include "common.h"

/* Exported by libibverbs (rdma-core 44) without a public declaration. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

static uint64_t guid_of(__be64 be)
{
	const uint8_t *b = (const uint8_t *)&be;
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

/* "28.39.1002": three dot-separated decimal numbers, ConnectX-7's major 28. */
static void check_fw_ver(const char *fw)
{
	int major = -1, minor = -1, sub = -1, n = 0;

	if (sscanf(fw, "%d.%d.%d%n", &major, &minor, &sub, &n) != 3 || fw[n] || !isdigit(fw[0]))
		T_FAIL("fw_ver \"%s\" is not of the form major.minor.subminor", fw);
	CHECK_EQ(major, 28);
	CHECK_GE(minor, 0);
	CHECK_GE(sub, 0);
}

static void test_device_attr(struct ibv_context *ctx)
{
	struct ibv_device_attr a;

	memset(&a, 0xa5, sizeof(a));
	CHECK_OK(ibv_query_device(ctx, &a));
	CHECK_EQ(a.vendor_id, 0x02c9);
	CHECK_EQ(a.vendor_part_id, 4129);
	CHECK_EQ(a.hw_ver, 0);
	check_fw_ver(a.fw_ver);
	CHECK_EQ(a.node_guid, ibv_get_device_guid(ctx->device));
	CHECK_EQ(a.sys_image_guid, a.node_guid);
	CHECK(a.device_cap_flags & IBV_DEVICE_SYS_IMAGE_GUID);
	CHECK(a.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN);
	CHECK((a.page_size_cap & 0x1fffff000ull) == 0x1fffff000ull); /* 4 KiB .. 4 GiB pages */
	CHECK_EQ(a.page_size_cap & 0xfff, 0);
}

/* 0x0247 (a locally administered prefix), then the device's IPv4 address
 * (bytes 12-15 of its IPv4-mapped GID) and its fabric port. */
static uint64_t guid_from_gid(struct ibv_context *ctx)
{
	union ibv_gid id;
	uint64_t g = 0x0247;

	t_fabric_id(ctx, &id);
	for (int i = 12; i < 16; i++)
		g = g << 8 | id.raw[i];
	return g << 16 | (uint64_t)id.raw[8] << 8 | id.raw[9];
}

static void test_guid(struct ibv_context *ctx, int index, uint64_t base)
{
	uint64_t got = guid_of(ibv_get_device_guid(ctx->device));

	if (base)
		CHECK_EQ(got, base + (uint64_t)index);
	else
		CHECK_EQ(got, guid_from_gid(ctx));
}

static void read_attr(struct ibv_context *ctx, const char *file, char *buf, size_t size)
{
	int n = ibv_read_sysfs_file(ctx->device->ibdev_path, file, buf, size);

	if (n <= 0)
		T_FAIL("ibv_read_sysfs_file(%s, %s) = %d, errno %d", ctx->device->ibdev_path, file,
		       n, errno);
	CHECK_EQ((size_t)n, strlen(buf));
}

static void test_sysfs(struct ibv_context *ctx)
{
	struct ibv_device_attr a;
	char buf[256], want[64], path[300];
	uint64_t g = guid_of(ibv_get_device_guid(ctx->device));

	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_device(ctx, &a));
	read_attr(ctx, "board_id", buf, sizeof(buf));
	CHECK(!strcmp(buf, "GNIC0000000001"));
	read_attr(ctx, "fw_ver", buf, sizeof(buf));
	CHECK(!strcmp(buf, a.fw_ver));
	read_attr(ctx, "hca_type", buf, sizeof(buf));
	CHECK(!strcmp(buf, "MT4129"));
	read_attr(ctx, "hw_rev", buf, sizeof(buf));
	CHECK(!strcmp(buf, "0x0"));
	read_attr(ctx, "node_type", buf, sizeof(buf));
	CHECK(!strcmp(buf, "1: CA"));
	snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
	         (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
	read_attr(ctx, "node_guid", buf, sizeof(buf));
	CHECK(!strcmp(buf, want));
	read_attr(ctx, "sys_image_guid", buf, sizeof(buf));
	CHECK(!strcmp(buf, want));
	read_attr(ctx, "node_desc", buf, sizeof(buf));
	CHECK(strstr(buf, ibv_get_device_name(ctx->device)) != NULL);
	CHECK(strstr(buf, "gnic-emu") != NULL);

	t_case("sysfs: a trailing '/' on the directory");
	snprintf(path, sizeof(path), "%s/", ctx->device->ibdev_path);
	CHECK(ibv_read_sysfs_file(path, "board_id", buf, sizeof(buf)) > 0);

	t_case("sysfs: a file the device does not have");
	errno = 0;
	CHECK_EQ(ibv_read_sysfs_file(ctx->device->ibdev_path, "no_such_file", buf, sizeof(buf)),
	         -1);
	CHECK_EQ(errno, ENOENT);

	t_case("sysfs: a buffer too small for the value and its NUL");
	errno = 0;
	CHECK_EQ(ibv_read_sysfs_file(ctx->device->ibdev_path, "board_id", buf, 14), -1);
	CHECK_EQ(errno, EOVERFLOW);
	CHECK_EQ(ibv_read_sysfs_file(ctx->device->ibdev_path, "board_id", buf, 15), 14);
}

/* Another path is read from the file system, as rdma-core does. */
static void test_sysfs_other(void)
{
	char buf[64];
	int n;

	n = ibv_read_sysfs_file("/proc/sys/kernel", "ostype", buf, sizeof(buf));
	CHECK_EQ(n, 5);
	CHECK(!strcmp(buf, "Linux"));
	errno = 0;
	CHECK_EQ(ibv_read_sysfs_file("/nonexistent", "x", buf, sizeof(buf)), -1);
	CHECK_EQ(errno, ENOENT);
}

static void test_query_device_ex(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0xa5, sizeof(ax));
	CHECK_OK(ibv_query_device_ex(ctx, NULL, &ax));
	CHECK_EQ(ax.device_cap_flags_ex, (uint64_t)ax.orig_attr.device_cap_flags);
	CHECK_EQ(ax.completion_timestamp_mask, 0);
	CHECK_EQ(ax.hca_core_clock, 0);
	CHECK_EQ(ax.odp_caps.general_caps, 0);
	CHECK_EQ(ax.tso_caps.max_tso, 0);
	CHECK_EQ(ax.max_dm_size, 0);
	CHECK_EQ(ax.phys_port_cnt_ex, 1);
}

static void test_mlx5dv_query(struct ibv_context *ctx)
{
	const uint64_t answered_blocks =
	    MLX5DV_CONTEXT_MASK_CQE_COMPRESION | MLX5DV_CONTEXT_MASK_SWP |
	    MLX5DV_CONTEXT_MASK_STRIDING_RQ | MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS |
	    MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS | MLX5DV_CONTEXT_MASK_DC_ODP_CAPS |
	    MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD | MLX5DV_CONTEXT_MASK_DCI_STREAMS |
	    MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH | MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD;
	struct mlx5dv_context dv, zero;

	memset(&dv, 0xa5, sizeof(dv));
	dv.comp_mask = ~0ull;
	CHECK_OK(mlx5dv_query_device(ctx, &dv));
	CHECK(dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1);
	CHECK_EQ(dv.comp_mask & answered_blocks, answered_blocks);
	CHECK(dv.comp_mask & MLX5DV_CONTEXT_MASK_DYN_BFREGS);
	CHECK_EQ(dv.max_dynamic_bfregs, 0);
	/* no clock, core clock or LAG: not answered, as on a device without them */
	CHECK_EQ(dv.comp_mask &
	             (MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE | MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK |
	              MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS),
	         0);
	memset(&zero, 0, sizeof(zero));
	CHECK_MEM(&dv.cqe_comp_caps, &zero.cqe_comp_caps, sizeof(zero.cqe_comp_caps));
	CHECK_MEM(&dv.sw_parsing_caps, &zero.sw_parsing_caps, sizeof(zero.sw_parsing_caps));
	/* striding RQs (emu/rwq.c): a ConnectX-7's limits, for RAW_PACKET QPs */
	CHECK_EQ(dv.striding_rq_caps.min_single_stride_log_num_of_bytes, 6u);
	CHECK_EQ(dv.striding_rq_caps.max_single_stride_log_num_of_bytes, 13u);
	CHECK_EQ(dv.striding_rq_caps.min_single_wqe_log_num_of_strides, 3u);
	CHECK_EQ(dv.striding_rq_caps.max_single_wqe_log_num_of_strides, 16u);
	CHECK_EQ(dv.striding_rq_caps.supported_qpts, 1u << IBV_QPT_RAW_PACKET);
	CHECK_EQ(dv.tunnel_offloads_caps, 0);
	CHECK_EQ(dv.flow_action_flags, 0);
	CHECK_EQ(dv.dc_odp_caps, 0);
	CHECK_MEM(&dv.sig_caps, &zero.sig_caps, sizeof(zero.sig_caps));
	CHECK_MEM(&dv.dci_streams_caps, &zero.dci_streams_caps, sizeof(zero.dci_streams_caps));
	CHECK_EQ(dv.max_wr_memcpy_length, 0);
	CHECK_MEM(&dv.crypto_caps, &zero.crypto_caps, sizeof(zero.crypto_caps));

	t_case("mlx5dv_query_device writes only the blocks asked for");
	memset(&dv, 0xa5, sizeof(dv));
	dv.comp_mask = MLX5DV_CONTEXT_MASK_SWP;
	CHECK_OK(mlx5dv_query_device(ctx, &dv));
	CHECK_EQ(dv.comp_mask, MLX5DV_CONTEXT_MASK_SWP);
	CHECK_MEM(&dv.sw_parsing_caps, &zero.sw_parsing_caps, sizeof(zero.sw_parsing_caps));
	CHECK_EQ(dv.tunnel_offloads_caps, 0xa5a5a5a5u);
	CHECK_EQ(dv.max_wr_memcpy_length, (size_t)0xa5a5a5a5a5a5a5a5ull);
}

static void test_mlx5dv_open(struct ibv_device *dev)
{
	struct mlx5dv_context_attr attr = {.flags = 0, .comp_mask = 0};
	struct ibv_device_attr a;
	struct ibv_context *ctx;

	ctx = CHECK_PTR(mlx5dv_open_device(dev, NULL));
	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_device(ctx, &a));
	CHECK_EQ(a.vendor_part_id, 4129);
	CHECK_OK(ibv_close_device(ctx));
	ctx = CHECK_PTR(mlx5dv_open_device(dev, &attr));
	CHECK_OK(ibv_close_device(ctx));

	t_case("mlx5dv_open_device: a DevX context; unknown attributes are EINVAL");
	attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
	ctx = CHECK_PTR(mlx5dv_open_device(dev, &attr));
	CHECK_OK(ibv_close_device(ctx));
	attr.flags = 1u << 5;
	errno = 0;
	CHECK(mlx5dv_open_device(dev, &attr) == NULL);
	CHECK_EQ(errno, EINVAL);
	attr.flags = 0;
	attr.comp_mask = 1;
	errno = 0;
	CHECK(mlx5dv_open_device(dev, &attr) == NULL);
	CHECK_EQ(errno, EINVAL);
}

static uint64_t parse_guid_arg(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || !v)
		T_FAIL("bad GUID argument \"%s\"", s);
	return v;
}

int main(int argc, char **argv)
{
	uint64_t base = argc > 1 ? parse_guid_arg(argv[1]) : 0;
	struct ibv_device **list;
	int n = 0;

	list = CHECK_PTR(ibv_get_device_list(&n));
	CHECK_GE(n, 1);
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_context *ctx;

		t_case("%s: open", name);
		ctx = t_open(name);
		t_case("%s: ConnectX-7 identity (ibv_query_device)", name);
		test_device_attr(ctx);
		t_case("%s: node GUID %s", name,
		       base ? "from GNIC_EMU_GUID" : "from the device's fabric address");
		test_guid(ctx, i, base);
		for (int j = 0; j < i; j++)
			CHECK_NE(ibv_get_device_guid(list[i]), ibv_get_device_guid(list[j]));
		t_case("%s: sysfs identity files", name);
		test_sysfs(ctx);
		t_case("%s: ibv_query_device_ex", name);
		test_query_device_ex(ctx);
		t_case("%s: mlx5dv_query_device", name);
		test_mlx5dv_query(ctx);
		CHECK_OK(ibv_close_device(ctx));
		t_case("%s: mlx5dv_open_device", name);
		test_mlx5dv_open(list[i]);
	}
	t_case("ibv_read_sysfs_file of another path reads the file system");
	test_sysfs_other();
	ibv_free_device_list(list);
	printf("PASS\n");
	return T_EXIT_PASS;
}
