// SPDX-License-Identifier: MIT
/*
 * Which GID a context's QPs send from, on gnic-emu's RoCE port (entries 0
 * RoCE v1 fe80::, 1 RoCE v2 fe80::, 2 RoCE v1 ::ffff:a.b.c.d, 3 RoCE v2
 * ::ffff:a.b.c.d, the rest empty), and the traffic class and SL.
 *
 *   test_gnic_gid auto     defaults: entry 3, in ctx_query and in the blob;
 *                          two such contexts move data; gnic_ctx_attr picks
 *                          others (1: fe80::, v2 still meets 3); a RoCE v1
 *                          entry against a v2 peer ends in RETRY_EXC; bad
 *                          and empty indexes are refused
 *   test_gnic_gid env      GNIC_GID_INDEX=2 GNIC_TRAFFIC_CLASS=96 GNIC_SL=5;
 *                          the attr overrides them
 *   test_gnic_gid env_bad  GNIC_GID_INDEX=abc: no context, a reason
 *   test_gnic_gid ib       GNIC_EMU_LINK=ib: entry 0 (IB), the port's LID
 *                          in the blob, QPs addressed by LID move data; a
 *                          version 1 blob (no LID) is refused
 */
#include "gt.h"

#define LEN 4096u

struct side {
	struct gnic_ctx *ctx;
	struct gnic_qp *qp;
	struct gnic_dev_qp *d;
	uint8_t *buf; /* [0, LEN) source, [LEN, 2 LEN) target */
	struct gnic_mr *mr;
	struct gnic_blob blob;
};

static struct gnic_ctx *ctx_on(int gid_index, int tclass, int sl)
{
	struct gnic_ctx_attr attr;
	struct gnic_ctx *ctx = NULL;

	gnic_ctx_attr_init(&attr);
	attr.gpu = GNIC_GPU_NONE;
	attr.gid_index = gid_index;
	attr.traffic_class = tclass;
	attr.sl = sl;
	CHECK_GNIC(gnic_ctx_create(&attr, &ctx));
	return ctx;
}

static void side_init(struct side *s, int gid_index)
{
	struct gnic_qp_attr a;

	s->ctx = ctx_on(gid_index, GNIC_FROM_ENV, GNIC_FROM_ENV);
	gnic_qp_attr_init(&a);
	a.sq_depth = 64;
	a.rq_depth = 16;
	a.timeout = 10; /* 4.2 ms: a mismatch fails fast */
	a.retry_cnt = 2;
	CHECK_GNIC(gnic_qp_create(s->ctx, &a, &s->qp));
	s->d = gnic_qp_dev(s->qp);
	s->buf = t_alloc(2 * LEN, 0);
	CHECK_GNIC(gnic_mr_reg(s->ctx, s->buf, 2 * LEN, GNIC_ACCESS_ALL, &s->mr));
	CHECK_GNIC(gnic_qp_export(s->qp, &s->blob));
}

static void side_fini(struct side *s)
{
	gnic_qp_destroy(s->qp);
	gnic_mr_dereg(s->mr);
	gnic_ctx_destroy(s->ctx);
	free(s->buf);
}

static void check_entry(struct gnic_ctx *ctx, int index)
{
	struct gnic_ctx_info info;
	static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	CHECK_GNIC(gnic_ctx_query(ctx, &info));
	printf("  gid index %d type %d link layer %d tclass %d sl %d\n", info.gid_index,
	       info.gid_type, info.link_layer, info.traffic_class, info.sl);
	CHECK_EQ(info.gid_index, index);
	CHECK_EQ(info.link_layer, 2); /* IBV_LINK_LAYER_ETHERNET */
	CHECK_EQ(info.gid_type, index % 2 ? 2 : 1);
	if (index >= 2) {
		CHECK_MEM(info.gid, v4, 12);
		CHECK_EQ(info.gid[12], 127);
	} else {
		CHECK_EQ(info.gid[0], 0xfe);
		CHECK_EQ(info.gid[1], 0x80);
	}
}

/* the blob's GID (bytes 8-23) is the context's */
static void check_blob_gid(const struct side *s)
{
	struct gnic_ctx_info info;

	CHECK_GNIC(gnic_ctx_query(s->ctx, &info));
	CHECK_MEM(s->blob.bytes + 8, info.gid, 16);
}

static void write_ok(struct side *a, struct side *b)
{
	CHECK_GNIC(gnic_qp_connect(a->qp, &b->blob));
	CHECK_GNIC(gnic_qp_connect(b->qp, &a->blob));
	t_fill(a->buf, LEN, 11);
	gt_write(a->d, a->buf, gnic_mr_lkey(a->mr), (uintptr_t)(b->buf + LEN), gnic_mr_rkey(b->mr),
	         LEN);
	CHECK_MEM(b->buf + LEN, a->buf, LEN);
}

static void case_auto(void)
{
	struct gnic_ctx_attr attr;
	struct gnic_ctx *ctx = NULL;
	struct side a, b;
	uint8_t synd = 0;

	t_case("default: RoCE v2 IPv4-mapped entry 3, also in the blob");
	side_init(&a, GNIC_GID_AUTO);
	side_init(&b, GNIC_GID_AUTO);
	{ /* the blob alone: ::ffff:127.x.y.z, not entry 0's fe80:: */
		static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

		CHECK_MEM(a.blob.bytes + 8, v4, 12);
	}
	check_entry(a.ctx, 3);
	check_blob_gid(&a);
	t_case("two such contexts connect and WRITE");
	write_ok(&a, &b);
	side_fini(&b);

	t_case("gid_index 1 (RoCE v2 fe80::) meets entry 3 of the peer");
	side_init(&b, 1);
	check_entry(b.ctx, 1);
	check_blob_gid(&b);
	CHECK_GNIC(gnic_qp_reset(a.qp));
	write_ok(&a, &b);
	side_fini(&b);

	t_case("gid_index 2 (RoCE v1) against a RoCE v2 peer: RETRY_EXC, nothing written");
	side_init(&b, 2);
	check_entry(b.ctx, 2);
	CHECK_GNIC(gnic_qp_reset(a.qp));
	CHECK_GNIC(gnic_qp_connect(a.qp, &b.blob));
	CHECK_GNIC(gnic_qp_connect(b.qp, &a.blob));
	t_fill(a.buf, LEN, 12);
	gt_post_write(a.d, a.buf, gnic_mr_lkey(a.mr), (uintptr_t)(b.buf + LEN), gnic_mr_rkey(b.mr),
	              LEN);
	CHECK_EQ(gt_poll_send(a.d, &synd), GNIC_MLX5_CQE_REQ_ERR);
	CHECK_EQ(synd, GNIC_MLX5_SYND_TRANSPORT_RETRY_EXC);
	CHECK_BYTES(b.buf + LEN, 0, LEN);
	side_fini(&b);
	side_fini(&a);

	t_case("an empty entry, one past 255, a bad traffic class or SL: refused");
	gnic_ctx_attr_init(&attr);
	attr.gpu = GNIC_GPU_NONE;
	attr.gid_index = 4;
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "GID index 4") && strstr(gnic_last_error(), "empty"));
	attr.gid_index = 256;
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
	attr.gid_index = GNIC_GID_AUTO;
	attr.traffic_class = 256;
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
	attr.traffic_class = GNIC_FROM_ENV;
	attr.sl = 16;
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
	CHECK(ctx == NULL);

	t_case("traffic class and SL from the attr");
	ctx = ctx_on(GNIC_GID_AUTO, 106, 3);
	{
		struct gnic_ctx_info info;

		CHECK_GNIC(gnic_ctx_query(ctx, &info));
		CHECK_EQ(info.traffic_class, 106);
		CHECK_EQ(info.sl, 3);
	}
	gnic_ctx_destroy(ctx);
}

static void case_env(void)
{
	struct gnic_ctx_info info;
	struct gnic_ctx *ctx;
	struct side a, b;

	t_case("GNIC_GID_INDEX=2 GNIC_TRAFFIC_CLASS=96 GNIC_SL=5");
	side_init(&a, GNIC_GID_AUTO);
	check_entry(a.ctx, 2);
	CHECK_GNIC(gnic_ctx_query(a.ctx, &info));
	CHECK_EQ(info.traffic_class, 96);
	CHECK_EQ(info.sl, 5);
	t_case("two RoCE v1 contexts of the environment's entry WRITE");
	side_init(&b, GNIC_GID_AUTO);
	write_ok(&a, &b);
	side_fini(&b);
	side_fini(&a);

	t_case("the attr overrides the environment");
	ctx = ctx_on(3, 0, 1);
	check_entry(ctx, 3);
	CHECK_GNIC(gnic_ctx_query(ctx, &info));
	CHECK_EQ(info.traffic_class, 0);
	CHECK_EQ(info.sl, 1);
	gnic_ctx_destroy(ctx);
}

static void case_env_bad(void)
{
	struct gnic_ctx_attr attr;
	struct gnic_ctx *ctx = NULL;

	t_case("GNIC_GID_INDEX=abc: no context");
	gnic_ctx_attr_init(&attr);
	attr.gpu = GNIC_GPU_NONE;
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "GNIC_GID_INDEX"));
	CHECK(ctx == NULL);
}

static void case_ib(void)
{
	struct gnic_ctx_info info;
	struct gnic_blob v1;
	struct side a, b;

	t_case("InfiniBand: GID entry 0 (IB), the port's LID");
	side_init(&a, GNIC_GID_AUTO);
	side_init(&b, GNIC_GID_AUTO);
	CHECK_GNIC(gnic_ctx_query(a.ctx, &info));
	printf("  lid 0x%x gid index %d type %d\n", (unsigned)info.lid, info.gid_index,
	       info.gid_type);
	CHECK_EQ(info.link_layer, 1); /* IBV_LINK_LAYER_INFINIBAND */
	CHECK_EQ(info.gid_index, 0);
	CHECK_EQ(info.gid_type, 0); /* IBV_GID_TYPE_IB */
	CHECK(info.lid >= 1 && info.lid <= 0xbfff);
	CHECK_EQ(info.gid[0], 0xfe);
	t_case("the blob carries the LID and the link layer");
	CHECK_EQ(a.blob.bytes[36] | a.blob.bytes[37] << 8, info.lid);
	CHECK_EQ(a.blob.bytes[38], 1);
	check_blob_gid(&a);

	t_case("a version 1 blob (no LID) is refused on InfiniBand");
	v1 = b.blob;
	v1.bytes[4] = 1;
	memset(v1.bytes + 36, 0, 3);
	{
		uint32_t crc = 0xffffffffu;

		for (int i = 0; i < 44; i++) {
			crc ^= v1.bytes[i];
			for (int k = 0; k < 8; k++)
				crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
		}
		crc = ~crc;
		for (int i = 0; i < 4; i++)
			v1.bytes[44 + i] = (uint8_t)(crc >> (8 * i));
	}
	CHECK_GNIC_ERR(gnic_qp_connect(a.qp, &v1), GNIC_ERR_PROTOCOL);
	CHECK(strstr(gnic_last_error(), "LID"));

	t_case("QPs addressed by LID connect and WRITE");
	write_ok(&a, &b);
	side_fini(&b);
	side_fini(&a);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "auto";

	if (!strcmp(mode, "auto"))
		case_auto();
	else if (!strcmp(mode, "env"))
		case_env();
	else if (!strcmp(mode, "env_bad"))
		case_env_bad();
	else if (!strcmp(mode, "ib"))
		case_ib();
	else
		T_FAIL("unknown case %s", mode);
	printf("PASS\n");
	return T_EXIT_PASS;
}
