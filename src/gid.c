/* SPDX-License-Identifier: MIT */
/*
 * Which entry of port 1's GID table a context's QPs send from.
 *
 * On RoCE the table holds, per address of the port's netdev, one entry per
 * RoCE version (the kernel fills it: fe80::<MAC> v1 and v2 first, then each
 * IP address as v1 and v2). Entry 0 is RoCE v1 link-local, which crosses no
 * router and which RoCE v2 peers cannot talk to. Like NCCL and NVSHMEM we
 * take a RoCE v2 entry, an IPv4-mapped one before a global IPv6 one before
 * a link-local one; a port without RoCE v2 gets its best v1 entry with a
 * warning. On InfiniBand entry 0 is the port GID (subnet prefix + GUID).
 * GNIC_GID_INDEX or gnic_ctx_attr.gid_index names an entry instead.
 *
 * An entry's type comes from ibv_query_gid_ex (rdma-core >= 32, gnic-emu),
 * else ibv_query_gid_type, else it is unknown and counted as RoCE v1.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gnic_int.h"

#define GID_SCAN_MAX 256 /* ConnectX ports have 255 or 256 entries */

struct gid_entry {
	union ibv_gid gid;
	int type; /* enum ibv_gid_type */
};

static bool gid_is_zero(const union ibv_gid *g)
{
	static const uint8_t zero[16];

	return !memcmp(g->raw, zero, sizeof(zero));
}

static bool gid_is_v4_mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

static bool gid_is_link_local(const union ibv_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

/* 0 and the entry, -ENODATA for an empty one, or another -errno. */
static int read_entry(const struct gnic_ctx *ctx, int index, struct gid_entry *e)
{
	struct ibv_gid_entry x;
	int r, sysfs_type;

	memset(e, 0, sizeof(*e));
	if (ctx->v->query_gid_ex) {
		memset(&x, 0, sizeof(x));
		r = ctx->v->query_gid_ex(ctx->ibctx, GNIC_PORT, (uint32_t)index, &x, 0, sizeof(x));
		if (r == ENODATA)
			return -ENODATA;
		if (!r) {
			e->gid = x.gid;
			e->type = (int)x.gid_type;
			return gid_is_zero(&e->gid) ? -ENODATA : 0;
		}
		/* anything else (an old kernel's EOPNOTSUPP): the old calls */
	}
	errno = 0;
	if (ctx->v->query_gid(ctx->ibctx, GNIC_PORT, index, &e->gid))
		return errno ? -errno : -EINVAL;
	if (gid_is_zero(&e->gid))
		return -ENODATA;
	e->type =
	    ctx->link_layer == IBV_LINK_LAYER_INFINIBAND ? IBV_GID_TYPE_IB : IBV_GID_TYPE_ROCE_V1;
	if (ctx->v->query_gid_type &&
	    !ctx->v->query_gid_type(ctx->ibctx, GNIC_PORT, (unsigned)index, &sysfs_type) &&
	    sysfs_type == 1)
		e->type = IBV_GID_TYPE_ROCE_V2;
	return 0;
}

/* Higher is better; ties go to the lower index. */
static int rank(const struct gid_entry *e)
{
	int r = e->type == IBV_GID_TYPE_ROCE_V2 ? 4 : 0;

	if (gid_is_v4_mapped(&e->gid))
		return r + 2;
	return r + (gid_is_link_local(&e->gid) ? 0 : 1);
}

static const char *type_name(int type)
{
	return type == IBV_GID_TYPE_ROCE_V2   ? "RoCE v2"
	       : type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1"
	                                      : "IB";
}

static void gid_str(const union ibv_gid *g, char *buf, size_t size)
{
	if (gid_is_v4_mapped(g))
		snprintf(buf, size, "::ffff:%u.%u.%u.%u", g->raw[12], g->raw[13], g->raw[14],
		         g->raw[15]);
	else
		snprintf(buf, size,
		         "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		         g->raw[0], g->raw[1], g->raw[2], g->raw[3], g->raw[4], g->raw[5],
		         g->raw[6], g->raw[7], g->raw[8], g->raw[9], g->raw[10], g->raw[11],
		         g->raw[12], g->raw[13], g->raw[14], g->raw[15]);
}

static gnic_status_t use(struct gnic_ctx *ctx, int index, const struct gid_entry *e,
                         const char *how)
{
	char s[48];

	ctx->gid = e->gid;
	ctx->gid_index = index;
	ctx->gid_type = e->type;
	gid_str(&e->gid, s, sizeof(s));
	gnic_info("%s: GID index %d (%s, %s), %s", ctx->device, index, type_name(e->type), s, how);
	return GNIC_OK;
}

static gnic_status_t pick_given(struct gnic_ctx *ctx, int want, int tbl_len)
{
	struct gid_entry e;
	int r;

	if (want >= tbl_len)
		return gnic_error(GNIC_ERR_INVALID, "GID index %d: %s port %d has %d entries", want,
		                  ctx->device, GNIC_PORT, tbl_len);
	r = read_entry(ctx, want, &e);
	if (r == -ENODATA)
		return gnic_error(GNIC_ERR_INVALID,
		                  "GID index %d of %s port %d is empty (show_gids or "
		                  "ibv_devinfo -v lists the valid ones)",
		                  want, ctx->device, GNIC_PORT);
	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "query_gid(%s, %d, %d): %s", ctx->device,
		                  GNIC_PORT, want, strerror(-r));
	return use(ctx, want, &e, "as configured");
}

static gnic_status_t pick_auto(struct gnic_ctx *ctx, int tbl_len)
{
	struct gid_entry e, best_e;
	int best = -1, r;

	if (ctx->link_layer == IBV_LINK_LAYER_INFINIBAND)
		return pick_given(ctx, 0, tbl_len);
	for (int i = 0; i < tbl_len && i < GID_SCAN_MAX; i++) {
		r = read_entry(ctx, i, &e);
		if (r == -ENODATA)
			continue;
		if (r)
			return gnic_error(GNIC_ERR_SYSTEM, "query_gid(%s, %d, %d): %s", ctx->device,
			                  GNIC_PORT, i, strerror(-r));
		if (best < 0 || rank(&e) > rank(&best_e)) {
			best = i;
			best_e = e;
		}
	}
	if (best < 0)
		return gnic_error(GNIC_ERR_NO_DEVICE,
		                  "%s port %d has no GID: give its netdev an IP address",
		                  ctx->device, GNIC_PORT);
	if (best_e.type != IBV_GID_TYPE_ROCE_V2)
		gnic_warn("%s port %d has no RoCE v2 GID; using index %d (%s), which RoCE v2 "
		          "peers cannot reach",
		          ctx->device, GNIC_PORT, best, type_name(best_e.type));
	return use(ctx, best, &best_e, "chosen");
}

gnic_status_t gnic_gid_pick(struct gnic_ctx *ctx, int want)
{
	struct ibv_port_attr pa;
	int r = gnic_verbs_query_port(ctx->v, ctx->ibctx, GNIC_PORT, &pa);

	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "query_port(%s, %d): %s", ctx->device, GNIC_PORT,
		                  strerror(r));
	if (pa.gid_tbl_len < 1)
		return gnic_error(GNIC_ERR_NO_DEVICE, "%s port %d has an empty GID table",
		                  ctx->device, GNIC_PORT);
	return want >= 0 ? pick_given(ctx, want, pa.gid_tbl_len) : pick_auto(ctx, pa.gid_tbl_len);
}
