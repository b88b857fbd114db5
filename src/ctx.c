/* SPDX-License-Identifier: MIT */
/*
 * A context: one RDMA device (port 1 and one entry of its GID table, see
 * gid.c), one PD, and optionally
 * one GPU (its primary CUDA context). The verbs provider is chosen here:
 * attr->provider, where AUTO defers to GNIC_PROVIDER, where AUTO means a real
 * mlx5 device through rdma-core if one is listed, else gnic-emu.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnic_int.h"

GNIC_API void gnic_ctx_attr_init(struct gnic_ctx_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->provider = GNIC_PROVIDER_AUTO;
	attr->device = NULL;
	attr->gpu = GNIC_GPU_AUTO;
	attr->gid_index = GNIC_GID_AUTO;
	attr->traffic_class = GNIC_FROM_ENV;
	attr->sl = GNIC_FROM_ENV;
}

static gnic_status_t check_attr(const struct gnic_ctx_attr *attr)
{
	if (attr->provider < GNIC_PROVIDER_AUTO || attr->provider > GNIC_PROVIDER_EMU)
		return gnic_error(GNIC_ERR_INVALID, "ctx: unknown provider %d", attr->provider);
	if (attr->gpu < GNIC_GPU_AUTO)
		return gnic_error(GNIC_ERR_INVALID, "ctx: gpu %d is not an ordinal, NONE or AUTO",
		                  attr->gpu);
	if (attr->device && strlen(attr->device) >= sizeof(((struct gnic_ctx *)0)->device))
		return gnic_error(GNIC_ERR_INVALID, "ctx: device name too long");
	if (attr->gid_index < GNIC_GID_AUTO || attr->gid_index > 255)
		return gnic_error(GNIC_ERR_INVALID, "ctx: gid_index %d is not 0-255 or GID_AUTO",
		                  attr->gid_index);
	if (attr->traffic_class < GNIC_FROM_ENV || attr->traffic_class > 255)
		return gnic_error(GNIC_ERR_INVALID,
		                  "ctx: traffic_class %d is not 0-255 or GNIC_FROM_ENV",
		                  attr->traffic_class);
	if (attr->sl < GNIC_FROM_ENV || attr->sl > 15)
		return gnic_error(GNIC_ERR_INVALID, "ctx: sl %d is not 0-15 or GNIC_FROM_ENV",
		                  attr->sl);
	if (gnic_config()->error[0])
		return gnic_error(GNIC_ERR_INVALID, "environment: %s", gnic_config()->error);
	return GNIC_OK;
}

/* The environment decides only what the program left to AUTO. */
static enum gnic_provider wanted_provider(const struct gnic_ctx_attr *attr)
{
	if (attr->provider != GNIC_PROVIDER_AUTO)
		return attr->provider;
	return (enum gnic_provider)gnic_config()->provider;
}

/* The PCI device a context without a device name wants its NIC near:
 * GNIC_NEAR_PCI, else its GPU; NULL if neither. */
static const char *near_pci(const struct gnic_ctx *ctx)
{
	if (gnic_config()->near_pci[0])
		return gnic_config()->near_pci;
	return ctx->gpu.ordinal != GNIC_GPU_NONE && ctx->gpu.pci[0] ? ctx->gpu.pci : NULL;
}

/* Without a name: of the devices mlx5 drives (other kinds may be listed
 * too), the one nearest near_pci() in the PCIe tree, the first of equals;
 * the first one if no distance is known. why: how it was chosen. */
static struct ibv_device *pick_nearest(struct gnic_ctx *ctx, struct ibv_device **list, int n,
                                       char *why, size_t size)
{
	const char *pci = near_pci(ctx);
	struct ibv_device *best = NULL, *first = NULL;
	int best_d = -1, mlx5 = 0;

	for (int i = 0; i < n; i++) {
		int d;

		if (!gnic_verbs_is_mlx5(ctx->v, list[i]))
			continue;
		mlx5++;
		first = first ? first : list[i];
		d = pci ? gnic_topo_nic_distance(list[i]->ibdev_path, pci) : -1;
		if (d >= 0 && (best_d < 0 || d < best_d)) {
			best = list[i];
			best_d = d;
		}
	}
	if (mlx5 > 1 && best)
		snprintf(why, size, "nearest %s of %d mlx5 devices (PCIe distance %d)", pci, mlx5,
		         best_d);
	else if (mlx5 > 1 && pci)
		snprintf(why, size, "the first of %d mlx5 devices: no PCIe distance to %s known",
		         mlx5, pci);
	return best ? best : first;
}

/* By name, else pick_nearest(). *not_mlx5: the named one is not. */
static struct ibv_device *pick_device(struct gnic_ctx *ctx, struct ibv_device **list, int n,
                                      const char *name, bool *not_mlx5, char *why, size_t size)
{
	*not_mlx5 = false;
	if (!name)
		return pick_nearest(ctx, list, n, why, size);
	for (int i = 0; i < n; i++) {
		bool mlx5 = gnic_verbs_is_mlx5(ctx->v, list[i]);

		if (!strcmp(ctx->v->get_device_name(list[i]), name)) {
			*not_mlx5 = !mlx5;
			return mlx5 ? list[i] : NULL;
		}
	}
	return NULL;
}

/* With DEVX when the library has it (DEVX QPs, qp_devx.c, need it; verbs
 * objects work the same on such a context), else as before; ctx->devx_why
 * keeps the reason for GNIC_QUEUE_AUTO's fallback. */
static struct ibv_context *open_ctx(struct gnic_ctx *ctx, struct ibv_device *dev)
{
	struct mlx5dv_context_attr a = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};
	struct ibv_context *c;

	if (!gnic_verbs_has_devx(ctx->v)) {
		snprintf(ctx->devx_why, sizeof(ctx->devx_why), "%s has no DEVX calls",
		         ctx->v->lib_path);
		return ctx->v->open_device(dev);
	}
	errno = 0;
	c = ctx->v->mlx5dv_open_device(dev, &a);
	if (c) {
		ctx->devx = true;
		return c;
	}
	snprintf(ctx->devx_why, sizeof(ctx->devx_why), "mlx5dv_open_device(%s, DEVX): %s",
	         ctx->device, strerror(errno ? errno : EINVAL));
	gnic_info("%s; opening without DEVX", ctx->devx_why);
	return ctx->v->open_device(dev);
}

/* The PD's number goes into DEVX commands. */
static void query_pdn(struct gnic_ctx *ctx)
{
	struct mlx5dv_pd dvpd = {0};
	struct mlx5dv_obj obj = {0};
	int r;

	if (!ctx->devx)
		return;
	obj.pd.in = ctx->pd;
	obj.pd.out = &dvpd;
	r = ctx->v->mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD);
	if (!r) {
		ctx->pdn = dvpd.pdn;
		return;
	}
	ctx->devx = false;
	snprintf(ctx->devx_why, sizeof(ctx->devx_why), "mlx5dv_init_obj(PD) on %s: %s", ctx->device,
	         strerror(r));
	gnic_info("%s: no DEVX QPs", ctx->devx_why);
}

static gnic_status_t open_device(struct gnic_ctx *ctx, const char *name, char *why, size_t size)
{
	struct ibv_device **list;
	struct ibv_device *dev;
	bool not_mlx5;
	int n = 0;

	errno = 0;
	list = ctx->v->get_device_list(&n);
	if (!list)
		return gnic_error(GNIC_ERR_NO_DEVICE, "%s lists no RDMA device (errno %d: %s)",
		                  ctx->v->lib_path, errno, strerror(errno));
	dev = pick_device(ctx, list, n, name, &not_mlx5, why, size);
	if (dev) {
		snprintf(ctx->device, sizeof(ctx->device), "%s", ctx->v->get_device_name(dev));
		ctx->ibctx = open_ctx(ctx, dev);
	}
	ctx->v->free_device_list(list);
	if (not_mlx5)
		return gnic_error(GNIC_ERR_NO_DEVICE,
		                  "RDMA device \"%s\" of %s is not driven by mlx5 "
		                  "(mlx5dv_is_supported() says no)",
		                  name, ctx->v->lib_path);
	if (!dev)
		return gnic_error(GNIC_ERR_NO_DEVICE, "no RDMA device %s%s%s among the %d of %s",
		                  name ? "\"" : "", name ? name : "driven by mlx5",
		                  name ? "\"" : "", n, ctx->v->lib_path);
	if (!ctx->ibctx)
		return gnic_error(GNIC_ERR_SYSTEM, "open_device(%s): %s", ctx->device,
		                  strerror(errno));
	return GNIC_OK;
}

static gnic_status_t query_port(struct gnic_ctx *ctx)
{
	struct ibv_port_attr pa;
	int r = gnic_verbs_query_port(ctx->v, ctx->ibctx, GNIC_PORT, &pa);

	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "query_port(%s, %d): %s", ctx->device, GNIC_PORT,
		                  strerror(r));
	if (pa.state != IBV_PORT_ACTIVE)
		gnic_warn("%s port %d is not ACTIVE (state %d)", ctx->device, GNIC_PORT, pa.state);
	ctx->mtu = pa.active_mtu;
	/* rdma-core's legacy query_port leaves link_layer 0 (unspecified): IB */
	ctx->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? IBV_LINK_LAYER_ETHERNET
	                                                           : IBV_LINK_LAYER_INFINIBAND;
	ctx->lid = ctx->link_layer == IBV_LINK_LAYER_INFINIBAND ? pa.lid : 0;
	if (ctx->link_layer == IBV_LINK_LAYER_INFINIBAND && (!ctx->lid || ctx->lid > 0xbfff))
		return gnic_error(GNIC_ERR_NO_DEVICE,
		                  "%s port %d is InfiniBand without a unicast LID (%#x): is a "
		                  "subnet manager running?",
		                  ctx->device, GNIC_PORT, ctx->lid);
	return GNIC_OK;
}

/* The program's choice, else the environment's, else the default. */
static gnic_status_t choose_path(struct gnic_ctx *ctx, const struct gnic_ctx_attr *attr)
{
	const struct gnic_config *cfg = gnic_config();

	ctx->traffic_class =
	    (uint8_t)(attr->traffic_class >= 0 ? attr->traffic_class : cfg->traffic_class);
	ctx->sl = (uint8_t)(attr->sl >= 0 ? attr->sl : cfg->sl);
	return gnic_gid_pick(ctx, attr->gid_index >= 0 ? attr->gid_index : cfg->gid_index);
}

/* What QP creation and connection take from the device: the queue limit
 * checked up front (qp_attr.c), and the READ/atomic depths QPs ask for,
 * at most 16 (more buys nothing at the message sizes device code posts). A
 * device that reports less refuses a QP asking more (EINVAL at RTR/RTS). */
static gnic_status_t query_caps(struct gnic_ctx *ctx)
{
	struct ibv_device_attr da;
	int r;

	memset(&da, 0, sizeof(da));
	r = ctx->v->query_device(ctx->ibctx, &da);
	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "query_device(%s): %s", ctx->device,
		                  strerror(r));
	if (da.max_qp_wr < 1)
		return gnic_error(GNIC_ERR_SYSTEM, "query_device(%s): max_qp_wr %d", ctx->device,
		                  da.max_qp_wr);
	ctx->max_qp_wr = (uint32_t)da.max_qp_wr;
	ctx->max_rd_atomic = (uint8_t)(da.max_qp_init_rd_atom < 16 ? da.max_qp_init_rd_atom : 16);
	ctx->max_dest_rd_atomic = (uint8_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16);
	ctx->atomic_be = da.atomic_cap == IBV_ATOMIC_NONE;
	if (ctx->atomic_be)
		gnic_info("%s: atomic_cap NONE: fetched atomic values arrive big-endian and are "
		          "converted",
		          ctx->device);
	if (ctx->max_rd_atomic < 16 || ctx->max_dest_rd_atomic < 16)
		gnic_info("%s: READs/atomics in flight per QP: %u out, %u in", ctx->device,
		          ctx->max_rd_atomic, ctx->max_dest_rd_atomic);
	return GNIC_OK;
}

/* Which NIC a job runs on matters (gnic-emu instead of a NIC that was not
 * found is a 100x slowdown): said once per process at the default level. */
static void say_choice(const struct gnic_ctx *ctx, const char *why)
{
	static atomic_bool said;
	const char *prov = ctx->v->provider == GNIC_PROVIDER_EMU ? "gnic-emu" : "rdma-core";

	if (!atomic_exchange(&said, true))
		gnic_note("using %s device %s (%s)%s%s", prov, ctx->device, ctx->v->lib_path,
		          why[0] ? "; " : "", why);
	else
		gnic_info("using %s device %s", prov, ctx->device);
}

static gnic_status_t open_verbs(struct gnic_ctx *ctx, const struct gnic_ctx_attr *attr)
{
	char why[384], pick[192] = "";
	gnic_status_t st = gnic_verbs_select(wanted_provider(attr), &ctx->v, why, sizeof(why));

	if (!st)
		st = open_device(ctx, attr->device, pick, sizeof(pick));
	if (!st && pick[0] && strlen(why) + strlen(pick) + 3 < sizeof(why))
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s", why[0] ? "; " : "",
		         pick);
	if (!st)
		say_choice(ctx, why);
	if (!st)
		st = query_caps(ctx);
	if (!st)
		st = query_port(ctx);
	if (!st)
		st = choose_path(ctx, attr);
	if (!st) {
		ctx->pd = ctx->v->alloc_pd(ctx->ibctx);
		if (!ctx->pd)
			st = gnic_error(GNIC_ERR_SYSTEM, "alloc_pd(%s): %s", ctx->device,
			                strerror(errno));
		else
			query_pdn(ctx);
	}
	return st;
}

static void close_verbs(struct gnic_ctx *ctx)
{
	if (ctx->pd)
		ctx->v->dealloc_pd(ctx->pd);
	if (ctx->ibctx)
		ctx->v->close_device(ctx->ibctx);
}

GNIC_API gnic_status_t gnic_ctx_create(const struct gnic_ctx_attr *attr, struct gnic_ctx **ctx_p)
{
	struct gnic_ctx_attr defaults;
	struct gnic_ctx *ctx;
	gnic_status_t st;

	if (!ctx_p)
		return gnic_error(GNIC_ERR_INVALID, "ctx_create: ctx_p is NULL");
	if (!attr) {
		gnic_ctx_attr_init(&defaults);
		attr = &defaults;
	}
	st = check_attr(attr);
	if (st)
		return st;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return gnic_error(GNIC_ERR_NOMEM, "ctx_create: out of memory");
	ctx->gpu.ordinal = GNIC_GPU_NONE;
	/* the GPU first: the NIC chosen is the one nearest it */
	st = gnic_cuda_open(attr->gpu, &ctx->gpu);
	if (!st)
		st = open_verbs(ctx, attr);
	if (st) {
		close_verbs(ctx);
		gnic_cuda_close(&ctx->gpu);
		free(ctx);
		return st;
	}
	pthread_mutex_init(&ctx->prog_lock, NULL);
	pthread_mutex_init(&ctx->px_lock, NULL);
	gnic_info("context on %s (%s), GPU %d", ctx->device, ctx->v->lib_path, ctx->gpu.ordinal);
	*ctx_p = ctx;
	return GNIC_OK;
}

GNIC_API void gnic_ctx_destroy(struct gnic_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->nqp || ctx->nmr) {
		gnic_error(GNIC_ERR_STATE,
		           "ctx_destroy: %d QPs and %d MRs still exist; not destroyed", ctx->nqp,
		           ctx->nmr);
		gnic_log(GNIC_LOG_ERR, "%s", gnic_last_error());
		return;
	}
	gnic_progress_stop(ctx);
	gnic_proxy_stop(ctx);
	gnic_cuda_close(&ctx->gpu);
	close_verbs(ctx);
	pthread_mutex_destroy(&ctx->prog_lock);
	pthread_mutex_destroy(&ctx->px_lock);
	free(ctx);
}

GNIC_API gnic_status_t gnic_ctx_query(struct gnic_ctx *ctx, struct gnic_ctx_info *info)
{
	if (!ctx || !info)
		return gnic_error(GNIC_ERR_INVALID, "ctx_query: NULL argument");
	memset(info, 0, sizeof(*info));
	info->provider = ctx->v->provider;
	snprintf(info->device, sizeof(info->device), "%s", ctx->device);
	snprintf(info->provider_lib, sizeof(info->provider_lib), "%s", ctx->v->lib_path);
	info->gpu = ctx->gpu.ordinal;
	if (gnic_ctx_has_gpu(ctx))
		snprintf(info->gpu_name, sizeof(info->gpu_name), "%s", ctx->gpu.name);
	info->gid_index = ctx->gid_index;
	info->gid_type = ctx->gid_type;
	memcpy(info->gid, ctx->gid.raw, sizeof(info->gid));
	info->link_layer = ctx->link_layer;
	info->lid = ctx->lid;
	info->traffic_class = ctx->traffic_class;
	info->sl = ctx->sl;
	return GNIC_OK;
}
