/* SPDX-License-Identifier: MIT */
/*
 * A QP group: n QPs with the same attributes, made, connected and torn down
 * together, and one device array of their struct gnic_dev_qp pointers so a
 * kernel can pick a QP per CTA (qps[blockIdx.x % n]) or per peer (qps[pe]).
 *
 * Connecting is all or nothing: if QP k cannot connect, QPs 0..k-1 go back
 * to RESET and the group is as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "gnic_int.h"

struct gnic_qp_group {
	struct gnic_ctx *ctx;
	uint32_t n;
	struct gnic_qp **qp;
	struct gnic_dev_qp **host_arr; /* the device pointers, host copy */
	uint64_t dev_arr;              /* CUdeviceptr of the same array (GPU) */
};

static void group_free(struct gnic_qp_group *g)
{
	void *prev;

	if (g->dev_arr && !gnic_cuda_enter(&g->ctx->gpu, &prev)) {
		gnic_cuda_free(g->dev_arr);
		gnic_cuda_leave(prev);
	}
	for (uint32_t i = g->n; i-- > 0;)
		gnic_qp_destroy(g->qp[i]);
	free(g->host_arr);
	free(g->qp);
	free(g);
}

/* For a GPU context the array lives in GPU memory, where kernels read it. */
static gnic_status_t publish_array(struct gnic_qp_group *g)
{
	size_t len = g->n * sizeof(*g->host_arr);
	gnic_status_t st;
	void *prev;

	if (!gnic_ctx_has_gpu(g->ctx))
		return GNIC_OK;
	st = gnic_cuda_enter(&g->ctx->gpu, &prev);
	if (st)
		return st;
	st = gnic_cuda_alloc(len, &g->dev_arr);
	if (!st)
		st = gnic_cuda_htod(g->dev_arr, g->host_arr, len);
	gnic_cuda_leave(prev);
	return st;
}

GNIC_API gnic_status_t gnic_qp_group_create(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                            uint32_t n, struct gnic_qp_group **group_p)
{
	struct gnic_qp_group *g;
	gnic_status_t st = GNIC_OK;

	if (!ctx || !group_p)
		return gnic_error(GNIC_ERR_INVALID, "qp_group_create: NULL argument");
	if (n == 0 || n > GNIC_QP_GROUP_MAX)
		return gnic_error(GNIC_ERR_INVALID, "qp_group_create: %u QPs (1..%u)", n,
		                  GNIC_QP_GROUP_MAX);
	g = calloc(1, sizeof(*g));
	if (g) {
		g->qp = calloc(n, sizeof(*g->qp));
		g->host_arr = calloc(n, sizeof(*g->host_arr));
	}
	if (!g || !g->qp || !g->host_arr) {
		if (g)
			group_free(g);
		return gnic_error(GNIC_ERR_NOMEM, "qp_group_create: out of memory for %u QPs", n);
	}
	g->ctx = ctx;
	for (uint32_t i = 0; i < n && !st; i++) {
		st = gnic_qp_create(ctx, attr, &g->qp[i]);
		if (!st) {
			g->host_arr[i] = gnic_qp_dev(g->qp[i]);
			g->n = i + 1;
		}
	}
	if (!st)
		st = publish_array(g);
	if (st) {
		/* keep the failing call's text: it names the cause */
		group_free(g);
		return st;
	}
	*group_p = g;
	return GNIC_OK;
}

GNIC_API void gnic_qp_group_destroy(struct gnic_qp_group *group)
{
	if (group)
		group_free(group);
}

GNIC_API uint32_t gnic_qp_group_size(const struct gnic_qp_group *group)
{
	return group ? group->n : 0;
}

GNIC_API struct gnic_qp *gnic_qp_group_qp(struct gnic_qp_group *group, uint32_t i)
{
	if (!group || i >= group->n)
		return NULL;
	return group->qp[i];
}

GNIC_API struct gnic_dev_qp *const *gnic_qp_group_dev(struct gnic_qp_group *group)
{
	if (!group)
		return NULL;
	if (group->dev_arr)
		return (struct gnic_dev_qp *const *)(uintptr_t)group->dev_arr;
	return group->host_arr;
}

GNIC_API gnic_status_t gnic_qp_group_export(struct gnic_qp_group *group, struct gnic_blob *blobs)
{
	gnic_status_t st;

	if (!group || !blobs)
		return gnic_error(GNIC_ERR_INVALID, "qp_group_export: NULL argument");
	for (uint32_t i = 0; i < group->n; i++) {
		st = gnic_qp_export(group->qp[i], &blobs[i]);
		if (st)
			return st;
	}
	return GNIC_OK;
}

/* Blob i of remote goes to QP i; the stride lets a caller pass a column of
 * an allgathered matrix. */
static gnic_status_t connect_strided(struct gnic_qp_group *g, const struct gnic_blob *remote,
                                     size_t stride)
{
	gnic_status_t st = GNIC_OK;
	uint32_t i;

	for (i = 0; i < g->n; i++)
		if (g->qp[i]->connected)
			return gnic_error(GNIC_ERR_STATE,
			                  "qp_group_connect: QP %u is connected; reset it first",
			                  i);
	for (i = 0; i < g->n && !st; i++)
		st = gnic_qp_connect(g->qp[i], &remote[i * stride]);
	if (!st)
		return GNIC_OK;
	/* all or nothing: QP i - 1 failed and undid itself; undo the rest */
	for (uint32_t j = 0; j + 1 < i; j++)
		if (gnic_qp_reset(g->qp[j]))
			gnic_warn("qp_group_connect: undoing QP %u: %s", j, gnic_last_error());
	return gnic_error(st, "qp_group_connect: QP %u of %u: %s", i - 1, g->n, gnic_last_error());
}

GNIC_API gnic_status_t gnic_qp_group_connect(struct gnic_qp_group *group,
                                             const struct gnic_blob *remote)
{
	if (!group || !remote)
		return gnic_error(GNIC_ERR_INVALID, "qp_group_connect: NULL argument");
	return connect_strided(group, remote, 1);
}

GNIC_API gnic_status_t gnic_boot_connect_all(struct gnic_boot *boot, struct gnic_qp_group *group)
{
	struct gnic_blob *mine, *all;
	int rank, nranks;
	gnic_status_t st;

	if (!boot || !group)
		return gnic_error(GNIC_ERR_INVALID, "boot_connect_all: NULL argument");
	gnic_boot_info(boot, &rank, &nranks);
	if (group->n != (uint32_t)nranks)
		return gnic_error(
		    GNIC_ERR_INVALID,
		    "boot_connect_all: the group has %u QPs for %d ranks (one per rank)", group->n,
		    nranks);
	mine = calloc(group->n, sizeof(*mine));
	all = calloc((size_t)group->n * group->n, sizeof(*all));
	st = mine && all ? GNIC_OK : gnic_error(GNIC_ERR_NOMEM, "boot_connect_all: out of memory");
	if (!st)
		st = gnic_qp_group_export(group, mine);
	if (!st)
		st = gnic_boot_allgather(boot, mine, all, group->n * sizeof(*mine));
	/* rank r's QP p talks to rank p's QP r: column r of the matrix */
	if (!st)
		st = connect_strided(group, &all[rank], group->n);
	/* nobody sends before every peer's QP is ready to receive */
	if (!st)
		st = gnic_boot_barrier(boot);
	free(all);
	free(mine);
	return st;
}
