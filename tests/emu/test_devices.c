// SPDX-License-Identifier: MIT
/*
 * Device discovery and queries: the device list (GNIC_EMU_DEVICES of them),
 * device/port/GID/P_Key attributes, errors for bad ports and indexes, the
 * inline ibv_query_device_ex path of verbs.h, advertised limits enforced,
 * and with several devices a WRITE from one device to another.
 */
#include <arpa/inet.h>

#include <infiniband/mlx5dv.h>

#include "common.h"

/* rdma-core exports ibv_query_gid_type but declares it in its provider
 * header (infiniband/driver.h), with this enum */
enum ibv_gid_type_sysfs { IBV_GID_TYPE_SYSFS_IB_ROCE_V1, IBV_GID_TYPE_SYSFS_ROCE_V2 };
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
                       enum ibv_gid_type_sysfs *type);

/* device names: <prefix>0, <prefix>1, ... (argv[1], else gnic-emu's default) */
static const char *name_prefix = "rocep1s0f";

static int expected_devices(void)
{
	const char *s = getenv("GNIC_EMU_DEVICES");

	return s && *s ? atoi(s) : 1;
}

/* Device i's IPv4 address: GNIC_EMU_ADDR + i, else a loopback one (0 = any). */
static uint32_t expected_addr(int dev_index)
{
	const char *s = getenv("GNIC_EMU_ADDR");
	struct in_addr a;

	if (!s || !*s)
		return 0;
	if (inet_pton(AF_INET, s, &a) != 1)
		T_FAIL("GNIC_EMU_ADDR=%s is not an IPv4 address", s);
	return ntohl(a.s_addr) + (uint32_t)dev_index;
}

static void test_list(int want)
{
	struct ibv_device **list;
	__be64 guids[64];
	int n = -1;

	t_case("device list has %d gnic_emu devices", want);
	CHECK(want >= 1 && want <= 64);
	list = CHECK_PTR(ibv_get_device_list(&n));
	CHECK_EQ(n, want);
	CHECK(list[n] == NULL);
	for (int i = 0; i < n; i++) {
		char name[32];
		int found = 0;

		snprintf(name, sizeof(name), "%s%d", name_prefix, i);
		for (int j = 0; j < n; j++)
			found += !strcmp(ibv_get_device_name(list[j]), name);
		if (found != 1)
			T_FAIL("%s appears %d times in the device list", name, found);
		CHECK(mlx5dv_is_supported(list[i])); /* how software finds an mlx5 NIC */
		CHECK_EQ(list[i]->node_type, IBV_NODE_CA);
		CHECK_EQ(list[i]->transport_type, IBV_TRANSPORT_IB);
		guids[i] = ibv_get_device_guid(list[i]);
		CHECK_NE(guids[i], 0);
		for (int j = 0; j < i; j++)
			CHECK_NE(guids[i], guids[j]);
	}
	ibv_free_device_list(list);
}

static void test_query_device(struct ibv_context *ctx)
{
	struct ibv_device_attr a;

	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_device(ctx, &a));
	CHECK_EQ(a.phys_port_cnt, 1);
	CHECK_EQ(a.node_guid, ibv_get_device_guid(ctx->device));
	CHECK_GE(a.max_qp, 1);
	CHECK_GE(a.max_qp_wr, 1024);
	CHECK_GE(a.max_sge, 1);
	CHECK_GE(a.max_cq, 1);
	CHECK_GE(a.max_cqe, 1024);
	CHECK_GE(a.max_mr, 1);
	CHECK_GE(a.max_pd, 1);
	CHECK_GE(a.max_qp_rd_atom, 1);
	CHECK_GE(a.max_qp_init_rd_atom, 1);
	CHECK_NE(a.atomic_cap, IBV_ATOMIC_NONE);
	CHECK_GE(a.max_mr_size, 1u << 30);
}

static void test_query_port(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	memset(&pa, 0, sizeof(pa));
	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(pa.active_mtu, IBV_MTU_4096);
	CHECK_EQ(pa.max_mtu, IBV_MTU_4096);
	CHECK_GE(pa.gid_tbl_len, 1);
	CHECK_GE(pa.pkey_tbl_len, 1);

	t_case("query_port on a bad port");
	CHECK_RET(ibv_query_port(ctx, 0, &pa), EINVAL);
	CHECK_RET(ibv_query_port(ctx, 2, &pa), EINVAL);
	CHECK_RET(ibv_query_port(ctx, 255, &pa), EINVAL);
}

/* The GID table of a RoCE port with one IPv4 address, as the kernel fills
 * it: 0 RoCE v1 fe80::<EUI-64 of MAC 02:47:<ipv4>>, 1 the same as v2,
 * 2 RoCE v1 ::ffff:<ipv4>, 3 the same as v2; the rest empty. Returns the
 * IPv4 address (host order). */
static uint32_t check_gid(struct ibv_context *ctx, int dev_index)
{
	uint32_t want = expected_addr(dev_index);
	struct ibv_gid_entry tbl[8], e;
	enum ibv_gid_type_sysfs st;
	struct ibv_port_attr pa;
	union ibv_gid gid, ll, v4;
	uint32_t ip;

	memset(&pa, 0, sizeof(pa));
	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	CHECK_EQ(pa.gid_tbl_len, 256);
	CHECK_OK(ibv_query_gid(ctx, 1, 3, &v4));
	CHECK_BYTES(v4.raw, 0, 10);
	CHECK_EQ(v4.raw[10], 0xff);
	CHECK_EQ(v4.raw[11], 0xff);
	ip = (uint32_t)v4.raw[12] << 24 | (uint32_t)v4.raw[13] << 16 | (uint32_t)v4.raw[14] << 8 |
	     v4.raw[15];
	if (want)
		CHECK_EQ(ip, want);
	else
		CHECK(v4.raw[12] == 127 && v4.raw[13] != 0); /* its own, not 127.0.0.x */
	memset(&ll, 0, sizeof(ll));
	ll.raw[0] = 0xfe;
	ll.raw[1] = 0x80;
	ll.raw[9] = 0x47; /* 02:47:a:b:c:d with the U/L bit flipped, ff:fe inserted */
	ll.raw[10] = v4.raw[12];
	ll.raw[11] = 0xff;
	ll.raw[12] = 0xfe;
	memcpy(&ll.raw[13], &v4.raw[13], 3);

	t_case("GID entries 0-3: address and type by every query");
	for (int i = 0; i < 4; i++) {
		const union ibv_gid *g = i < 2 ? &ll : &v4;
		int type = i % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;

		memset(&gid, 0xa5, sizeof(gid));
		CHECK_OK(ibv_query_gid(ctx, 1, i, &gid));
		CHECK_MEM(gid.raw, g->raw, 16);
		CHECK_OK(ibv_query_gid_type(ctx, 1, (unsigned)i, &st));
		CHECK_EQ(st, i % 2 ? IBV_GID_TYPE_SYSFS_ROCE_V2 : IBV_GID_TYPE_SYSFS_IB_ROCE_V1);
		memset(&e, 0xa5, sizeof(e));
		CHECK_OK(ibv_query_gid_ex(ctx, 1, (uint32_t)i, &e, 0));
		CHECK_MEM(e.gid.raw, g->raw, 16);
		CHECK_EQ(e.gid_index, i);
		CHECK_EQ(e.port_num, 1);
		CHECK_EQ(e.gid_type, type);
	}
	CHECK_EQ(ibv_query_gid_table(ctx, tbl, 8, 0), 4);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(tbl[i].gid_index, i);
		CHECK_EQ(tbl[i].gid_type, i % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1);
		CHECK_MEM(tbl[i].gid.raw, i < 2 ? ll.raw : v4.raw, 16);
	}
	CHECK_EQ(ibv_query_gid_table(ctx, tbl, 3, 0), -EINVAL);

	t_case("an empty GID entry, as rdma-core reports one");
	memset(&gid, 0xa5, sizeof(gid));
	CHECK_OK(ibv_query_gid(ctx, 1, 4, &gid));
	CHECK_BYTES(gid.raw, 0, 16);
	CHECK_OK(ibv_query_gid(ctx, 1, 255, &gid));
	CHECK_BYTES(gid.raw, 0, 16);
	CHECK_RET(ibv_query_gid_ex(ctx, 1, 4, &e, 0), ENODATA);
	st = IBV_GID_TYPE_SYSFS_ROCE_V2;
	CHECK_OK(ibv_query_gid_type(ctx, 1, 4, &st));
	CHECK_EQ(st, IBV_GID_TYPE_SYSFS_IB_ROCE_V1);

	t_case("query_gid with a bad port or index");
	CHECK_NE(ibv_query_gid(ctx, 1, pa.gid_tbl_len, &gid), 0);
	CHECK_NE(ibv_query_gid(ctx, 1, -1, &gid), 0);
	CHECK_NE(ibv_query_gid(ctx, 2, 0, &gid), 0);
	CHECK_NE(ibv_query_gid(ctx, 0, 0, &gid), 0);
	CHECK_RET(ibv_query_gid_ex(ctx, 1, pa.gid_tbl_len, &e, 0), EINVAL);
	CHECK_RET(ibv_query_gid_ex(ctx, 2, 0, &e, 0), EINVAL);
	return ip;
}

static void test_pkey(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;
	__be16 pkey = 0;

	CHECK_OK(ibv_query_pkey(ctx, 1, 0, &pkey));
	CHECK_EQ(pkey, htons(0xffff)); /* the default full-membership P_Key */
	memset(&pa, 0, sizeof(pa));
	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	CHECK_NE(ibv_query_pkey(ctx, 1, pa.pkey_tbl_len, &pkey), 0);
	CHECK_NE(ibv_query_pkey(ctx, 2, 0, &pkey), 0);
}

/* verbs.h's inline ibv_query_device_ex calls the provider only when the
 * verbs_context advertises query_device_ex (size and offset checks); else it
 * silently falls back to the legacy query. Require the real path. */
static void test_query_device_ex(struct ibv_context *ctx)
{
	struct ibv_query_device_ex_input in = {.comp_mask = 0};
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr a;

	CHECK(verbs_get_ctx_op(ctx, query_device_ex) != NULL);
	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_device(ctx, &a));
	memset(&ax, 0xa5, sizeof(ax));
	CHECK_OK(ibv_query_device_ex(ctx, NULL, &ax));
	CHECK_MEM(&ax.orig_attr, &a, sizeof(a));
	memset(&ax, 0, sizeof(ax));
	CHECK_OK(ibv_query_device_ex(ctx, &in, &ax));
	CHECK_EQ(ax.orig_attr.max_qp_wr, a.max_qp_wr);
	in.comp_mask = 1;
	CHECK_RET(ibv_query_device_ex(ctx, &in, &ax), EINVAL);
}

static struct ibv_qp *qp_with(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t send_wr,
                              uint32_t recv_wr, uint32_t sge)
{
	struct ibv_qp_init_attr ia = {.send_cq = cq,
	                              .recv_cq = cq,
	                              .cap = {.max_send_wr = send_wr,
	                                      .max_recv_wr = recv_wr,
	                                      .max_send_sge = sge,
	                                      .max_recv_sge = sge},
	                              .qp_type = IBV_QPT_RC};

	errno = 0;
	return ibv_create_qp(pd, &ia);
}

/* What query_device advertises is what create accepts, and one more is not:
 * max_qp_wr receive WRs, max_sge SGEs each way. A send queue holds max_qp_wr
 * basic blocks, so it takes fewer WRs (test_qp_caps has the exact rules). */
static void test_limits(struct ibv_context *ctx)
{
	struct ibv_device_attr a;
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_device(ctx, &a));
	qp = qp_with(pd, cq, 1, (uint32_t)a.max_qp_wr, 1);
	if (!qp)
		T_FAIL("create_qp(max_recv_wr = max_qp_wr %d): errno %d", a.max_qp_wr, errno);
	CHECK_OK(ibv_destroy_qp(qp));
	qp = qp_with(pd, cq, 16, 1, (uint32_t)a.max_sge);
	if (!qp)
		T_FAIL("create_qp(max_send/recv_sge = max_sge %d): errno %d", a.max_sge, errno);
	CHECK_OK(ibv_destroy_qp(qp));

	CHECK(qp_with(pd, cq, 1, (uint32_t)a.max_qp_wr + 1, 1) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(qp_with(pd, cq, (uint32_t)a.max_qp_wr, 1, 1) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(ibv_create_cq(ctx, a.max_cqe + 1, NULL, NULL, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(ibv_create_cq(ctx, 0, NULL, NULL, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
}

/* Two devices of one process reach each other through the fabric. */
static void test_cross_device(struct ibv_context *c0, struct ibv_context *c1)
{
	struct t_conn_opts o;
	struct t_qp_caps caps;
	struct t_ep ep0, ep1;
	struct ibv_pd *pd0 = CHECK_PTR(ibv_alloc_pd(c0)), *pd1 = CHECK_PTR(ibv_alloc_pd(c1));
	struct ibv_cq *cq0 = t_cq(c0, 16), *cq1 = t_cq(c1, 16);
	uint8_t *src = t_alloc(8192, 0), *dst = t_alloc(8192, 0xee), *want = t_alloc(8192, 0xee);
	struct ibv_mr *smr = t_reg(pd0, src, 8192, T_ACCESS_ALL);
	struct ibv_mr *dmr = t_reg(pd1, dst, 8192, T_ACCESS_ALL);
	struct ibv_qp *q0, *q1;

	t_conn_opts_default(&o);
	t_qp_caps_default(&caps);
	q0 = t_qp(pd0, cq0, cq0, &caps, NULL);
	q1 = t_qp(pd1, cq1, cq1, &caps, NULL);
	t_local_ep(q0, &ep0);
	t_local_ep(q1, &ep1);
	CHECK(memcmp(&ep0.gid, &ep1.gid, sizeof(ep0.gid)) != 0);
	t_connect(q0, &ep1, &o);
	t_connect(q1, &ep0, &o);

	t_fill(src, 8192, 77);
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = 4096, .lkey = smr->lkey};
	struct ibv_send_wr wr = {
	    .wr_id = 0xc0ffee,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)dst + 100, .rkey = dmr->rkey}};

	t_post_send(q0, &wr);
	struct ibv_wc wc = t_poll1(cq0, "cross-device RDMA WRITE");

	CHECK_WC(&wc, 0xc0ffee, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	memcpy(want + 100, src, 4096);
	CHECK_MEM(dst, want, 8192);
	t_expect_empty(cq1, "a plain WRITE consumes no receive");

	CHECK_OK(ibv_destroy_qp(q0));
	CHECK_OK(ibv_destroy_qp(q1));
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	CHECK_OK(ibv_destroy_cq(cq0));
	CHECK_OK(ibv_destroy_cq(cq1));
	CHECK_OK(ibv_dealloc_pd(pd0));
	CHECK_OK(ibv_dealloc_pd(pd1));
	free(src);
	free(dst);
	free(want);
}

int main(int argc, char **argv)
{
	int n = expected_devices();
	struct ibv_context *ctx[64];
	uint32_t addrs[64];

	if (argc > 1)
		name_prefix = argv[1];
	test_list(n);
	for (int i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%s%d", name_prefix, i);
		t_case("%s: open", name);
		ctx[i] = t_open(name);
		t_case("%s: query_device", name);
		test_query_device(ctx[i]);
		t_case("%s: query_port", name);
		test_query_port(ctx[i]);
		t_case("%s: query_gid", name);
		addrs[i] = check_gid(ctx[i], i);
		for (int j = 0; j < i; j++)
			CHECK_NE(addrs[i], addrs[j]); /* one address per device */
		t_case("%s: query_pkey", name);
		test_pkey(ctx[i]);
		t_case("%s: ibv_query_device_ex (inline verbs.h path)", name);
		test_query_device_ex(ctx[i]);
	}
	t_case("advertised limits are enforced");
	test_limits(ctx[0]);

	t_case("a device opened twice gives two working contexts");
	struct ibv_context *again = t_open(ibv_get_device_name(ctx[0]->device));

	CHECK(again != ctx[0]);
	test_query_port(again);
	CHECK_OK(ibv_close_device(again));

	if (n > 1) {
		t_case("RDMA WRITE from %s0 to %s%d", name_prefix, name_prefix, n - 1);
		test_cross_device(ctx[0], ctx[n - 1]);
	}
	for (int i = 0; i < n; i++)
		CHECK_OK(ibv_close_device(ctx[i]));
	printf("PASS\n");
	return T_EXIT_PASS;
}
