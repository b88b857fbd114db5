/* SPDX-License-Identifier: MIT */
/*
 * The verbs calls libgnic makes, as one table of function pointers filled by
 * dlopen + dlsym, either from rdma-core (libibverbs.so.1 + libmlx5.so.1,
 * names ibv_* / mlx5dv_*) or from gnic-emu's core (libgnic_emu.so.0, names
 * gemu_*, same signatures). Nothing here is linked: libgnic loads on machines
 * without rdma-core and without the emulator.
 *
 * The emulator's core is reached only through its gemu_* names. Its drop-in
 * libibverbs.so.1 shim may shadow rdma-core's on LD_LIBRARY_PATH; we detect it
 * (it carries gemu_* through its dependency) and refuse to treat it as
 * rdma-core, so one process never holds the emulator under two names.
 *
 * Loaded libraries stay loaded for the life of the process: a provider owns
 * threads, TLS and atexit handlers that must not lose their code.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnic_int.h"

enum { LIB_VERBS, LIB_MLX5 };

struct verbs_sym {
	size_t off;       /* of the pointer in struct gnic_verbs */
	const char *ibv;  /* rdma-core name, NULL if not taken from rdma-core */
	int ibv_lib;      /* LIB_VERBS or LIB_MLX5 */
	const char *gemu; /* gnic-emu name, NULL if not taken from gnic-emu */
	bool optional;
};

#define SYM(field, ibv, lib, gemu, opt)                                                            \
	{                                                                                          \
		offsetof(struct gnic_verbs, field), ibv, lib, gemu, opt                            \
	}

static const struct verbs_sym syms[] = {
    SYM(get_device_list, "ibv_get_device_list", LIB_VERBS, "gemu_get_device_list", false),
    SYM(free_device_list, "ibv_free_device_list", LIB_VERBS, "gemu_free_device_list", false),
    SYM(get_device_name, "ibv_get_device_name", LIB_VERBS, "gemu_get_device_name", false),
    SYM(open_device, "ibv_open_device", LIB_VERBS, "gemu_open_device", false),
    SYM(close_device, "ibv_close_device", LIB_VERBS, "gemu_close_device", false),
    /* rdma-core exports only the compat query_port (its header inlines the
     * rest); gnic-emu exports the provider-op signature */
    SYM(query_port, NULL, LIB_VERBS, "gemu_query_port", false),
    SYM(query_port_compat, "ibv_query_port", LIB_VERBS, NULL, false),
    SYM(query_gid, "ibv_query_gid", LIB_VERBS, "gemu_query_gid", false),
    SYM(query_gid_ex, "_ibv_query_gid_ex", LIB_VERBS, "gemu_query_gid_ex", true),
    SYM(query_gid_type, "ibv_query_gid_type", LIB_VERBS, NULL, true),
    SYM(query_device, "ibv_query_device", LIB_VERBS, "gemu_query_device", false),
    SYM(alloc_pd, "ibv_alloc_pd", LIB_VERBS, "gemu_alloc_pd", false),
    SYM(dealloc_pd, "ibv_dealloc_pd", LIB_VERBS, "gemu_dealloc_pd", false),
    SYM(reg_mr_iova2, "ibv_reg_mr_iova2", LIB_VERBS, "gemu_reg_mr_iova2", true),
    SYM(reg_mr, "ibv_reg_mr", LIB_VERBS, NULL, true),
    SYM(reg_dmabuf_mr, "ibv_reg_dmabuf_mr", LIB_VERBS, "gemu_reg_dmabuf_mr", true),
    SYM(dereg_mr, "ibv_dereg_mr", LIB_VERBS, "gemu_dereg_mr", false),
    SYM(create_cq, "ibv_create_cq", LIB_VERBS, "gemu_create_cq", false),
    SYM(destroy_cq, "ibv_destroy_cq", LIB_VERBS, "gemu_destroy_cq", false),
    SYM(create_qp, "ibv_create_qp", LIB_VERBS, "gemu_create_qp", false),
    SYM(modify_qp, "ibv_modify_qp", LIB_VERBS, "gemu_modify_qp", false),
    SYM(query_qp, "ibv_query_qp", LIB_VERBS, "gemu_query_qp", false),
    SYM(destroy_qp, "ibv_destroy_qp", LIB_VERBS, "gemu_destroy_qp", false),
    SYM(mlx5dv_init_obj, "mlx5dv_init_obj", LIB_MLX5, "gemu_mlx5dv_init_obj", false),
    SYM(mlx5dv_is_supported, "mlx5dv_is_supported", LIB_MLX5, "gemu_mlx5dv_is_supported", true),
    SYM(mlx5dv_create_qp, "mlx5dv_create_qp", LIB_MLX5, "gemu_mlx5dv_create_qp", true),
    SYM(mlx5dv_open_device, "mlx5dv_open_device", LIB_MLX5, "gemu_mlx5dv_open_device", true),
    SYM(create_ah, "ibv_create_ah", LIB_VERBS, "gemu_create_ah", true),
    SYM(destroy_ah, "ibv_destroy_ah", LIB_VERBS, "gemu_destroy_ah", true),
    SYM(devx_umem_reg, "mlx5dv_devx_umem_reg", LIB_MLX5, "gemu_mlx5dv_devx_umem_reg", true),
    SYM(devx_umem_reg_ex, "mlx5dv_devx_umem_reg_ex", LIB_MLX5, "gemu_mlx5dv_devx_umem_reg_ex",
        true),
    SYM(devx_umem_dereg, "mlx5dv_devx_umem_dereg", LIB_MLX5, "gemu_mlx5dv_devx_umem_dereg", true),
    SYM(devx_alloc_uar, "mlx5dv_devx_alloc_uar", LIB_MLX5, "gemu_mlx5dv_devx_alloc_uar", true),
    SYM(devx_free_uar, "mlx5dv_devx_free_uar", LIB_MLX5, "gemu_mlx5dv_devx_free_uar", true),
    SYM(devx_query_eqn, "mlx5dv_devx_query_eqn", LIB_MLX5, "gemu_mlx5dv_devx_query_eqn", true),
    SYM(devx_obj_create, "mlx5dv_devx_obj_create", LIB_MLX5, "gemu_mlx5dv_devx_obj_create", true),
    SYM(devx_obj_modify, "mlx5dv_devx_obj_modify", LIB_MLX5, "gemu_mlx5dv_devx_obj_modify", true),
    SYM(devx_obj_destroy, "mlx5dv_devx_obj_destroy", LIB_MLX5, "gemu_mlx5dv_devx_obj_destroy",
        true),
    SYM(emu_eth_stats, NULL, LIB_VERBS, "gemu_eth_stats", true),
};

#define NUM_SYMS (sizeof(syms) / sizeof(syms[0]))

static pthread_mutex_t verbs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gnic_verbs tables[3]; /* by enum gnic_provider; AUTO unused */
static bool loaded[3];

static void set_fn(struct gnic_verbs *t, size_t off, void *fn)
{
	memcpy((char *)t + off, &fn, sizeof(fn));
}

static void lib_path(void *handle, char *out, size_t size)
{
	struct link_map *lm = NULL;

	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm || !lm->l_name[0])
		snprintf(out, size, "?");
	else
		snprintf(out, size, "%s", lm->l_name);
}

/* Resolve the table from handles[LIB_VERBS/LIB_MLX5] (rdma-core) or h (emu). */
static gnic_status_t resolve(struct gnic_verbs *t, void *const handles[2], bool emu)
{
	for (size_t i = 0; i < NUM_SYMS; i++) {
		const struct verbs_sym *s = &syms[i];
		const char *name = emu ? s->gemu : s->ibv;
		void *fn;

		if (!name)
			continue;
		fn = dlsym(handles[emu ? LIB_VERBS : s->ibv_lib], name);
		if (!fn && !s->optional)
			return gnic_error(GNIC_ERR_NO_DEVICE, "%s lacks %s: too old or not %s",
			                  t->lib_path, name, emu ? "gnic-emu" : "rdma-core");
		set_fn(t, s->off, fn);
	}
	if (!t->reg_mr_iova2 && !t->reg_mr)
		return gnic_error(GNIC_ERR_NO_DEVICE, "%s has no ibv_reg_mr", t->lib_path);
	return GNIC_OK;
}

static gnic_status_t load_rdma_core(struct gnic_verbs *t)
{
	void *h[2];

	h[LIB_VERBS] = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h[LIB_VERBS])
		return gnic_error(GNIC_ERR_NO_DEVICE, "rdma-core not found: %s", dlerror());
	lib_path(h[LIB_VERBS], t->lib_path, sizeof(t->lib_path));
	if (dlsym(h[LIB_VERBS], "gemu_get_device_list")) {
		/* the one library we unload: nothing of it ran, and it must not
		 * keep a second copy of the emulator core around */
		dlclose(h[LIB_VERBS]);
		return gnic_error(GNIC_ERR_NO_DEVICE,
		                  "libibverbs.so.1 found first is gnic-emu's shim (%s), not "
		                  "rdma-core; use GNIC_PROVIDER=emu",
		                  t->lib_path);
	}
	h[LIB_MLX5] = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h[LIB_MLX5])
		return gnic_error(GNIC_ERR_NO_DEVICE, "rdma-core's libmlx5.so.1 not found: %s",
		                  dlerror());
	t->provider = GNIC_PROVIDER_VERBS;
	return resolve(t, h, false);
}

/* dlopen one candidate path of libgnic_emu.so.0; appends why it failed. */
/* Adds one reason to the "; "-separated list in why; a list longer than
 * the buffer ends in "..." (size is at least 4). */
static void why_add(char *why, size_t size, const char *what, const char *suffix)
{
	size_t n = strlen(why);

	if (n + 4 >= size)
		return;
	if (snprintf(why + n, size - n, "%s%s%s", n ? "; " : "", what, suffix) >= (int)(size - n))
		memcpy(why + size - 4, "...", 4);
}

static void *try_emu(const char *path, char *why, size_t size)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		why_add(why, size, dlerror(), "");
		return NULL;
	}
	if (!dlsym(h, "gemu_get_device_list")) {
		why_add(why, size, path, " is not gnic-emu");
		return NULL; /* not ours; never unloaded, like every library we open */
	}
	return h;
}

/* Where libgnic.so itself lives, so gnic-emu is found beside it. */
static bool own_dir(char *out, size_t size)
{
	Dl_info info;
	char path[PATH_MAX];

	if (!dladdr((void *)own_dir, &info) || !info.dli_fname || !realpath(info.dli_fname, path))
		return false;
	snprintf(out, size, "%s", dirname(path));
	return true;
}

/* A candidate beside libgnic.so, by its canonical path (so provider_lib
 * reads well), if the file exists. */
static void *try_beside(const char *dir, const char *rel, char *why, size_t size)
{
	char path[PATH_MAX + 32], real[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
		return NULL;
	if (realpath(path, real))
		return try_emu(real, why, size);
	why_add(why, size, path, ": not found");
	return NULL;
}

static void *find_emu(char *why, size_t size)
{
	const char *explicit_lib = gnic_config()->emu_lib;
	char dir[PATH_MAX];
	void *h;

	if (explicit_lib[0])
		return try_emu(explicit_lib, why, size); /* told where: look nowhere else */
	if (own_dir(dir, sizeof(dir))) {
		if ((h = try_beside(dir, "../emu/libgnic_emu.so.0", why, size)))
			return h;
		if ((h = try_beside(dir, "libgnic_emu.so.0", why, size)))
			return h;
	}
	return try_emu("libgnic_emu.so.0", why, size);
}

static gnic_status_t load_emu(struct gnic_verbs *t)
{
	char why[768] = "";
	void *h[2];

	h[LIB_VERBS] = h[LIB_MLX5] = find_emu(why, sizeof(why));
	if (!h[LIB_VERBS])
		return gnic_error(GNIC_ERR_NO_DEVICE, "gnic-emu not found: %s", why);
	lib_path(h[LIB_VERBS], t->lib_path, sizeof(t->lib_path));
	t->provider = GNIC_PROVIDER_EMU;
	return resolve(t, h, true);
}

gnic_status_t gnic_verbs_get(enum gnic_provider provider, const struct gnic_verbs **v)
{
	gnic_status_t st = GNIC_OK;
	struct gnic_verbs t = {0};

	if (provider != GNIC_PROVIDER_VERBS && provider != GNIC_PROVIDER_EMU)
		return gnic_error(GNIC_ERR_INVALID, "provider %d is not VERBS or EMU", provider);
	pthread_mutex_lock(&verbs_lock);
	if (!loaded[provider]) {
		st = provider == GNIC_PROVIDER_EMU ? load_emu(&t) : load_rdma_core(&t);
		if (!st) {
			tables[provider] = t;
			loaded[provider] = true;
			gnic_info("verbs provider %s from %s",
			          provider == GNIC_PROVIDER_EMU ? "gnic-emu" : "rdma-core",
			          t.lib_path);
		}
	}
	pthread_mutex_unlock(&verbs_lock);
	if (!st)
		*v = &tables[provider];
	return st;
}

bool gnic_verbs_is_mlx5(const struct gnic_verbs *v, struct ibv_device *dev)
{
	if (v->mlx5dv_is_supported)
		return v->mlx5dv_is_supported(dev);
	return !strncmp(v->get_device_name(dev), "mlx5", 4); /* before persistent names */
}

/* Does rdma-core list an mlx5 device? why says what was found, either way. */
static bool lists_mlx5(const struct gnic_verbs *v, char *why, size_t size)
{
	struct ibv_device **list;
	int n = 0, found = -1;

	errno = 0;
	list = v->get_device_list(&n);
	if (!list) {
		snprintf(why, size, "rdma-core lists no devices (errno %d: %s)", errno,
		         strerror(errno));
		return false;
	}
	for (int i = 0; i < n && found < 0; i++)
		if (gnic_verbs_is_mlx5(v, list[i]))
			found = i;
	if (found >= 0)
		snprintf(why, size, "rdma-core lists mlx5 device %s",
		         v->get_device_name(list[found]));
	else
		snprintf(why, size, "rdma-core lists %d device%s, none driven by mlx5", n,
		         n == 1 ? "" : "s");
	v->free_device_list(list);
	return found >= 0;
}

gnic_status_t gnic_verbs_select(enum gnic_provider want, const struct gnic_verbs **v, char *why,
                                size_t size)
{
	const struct gnic_verbs *real;

	why[0] = 0;
	if (want != GNIC_PROVIDER_AUTO)
		return gnic_verbs_get(want, v);
	if (gnic_verbs_get(GNIC_PROVIDER_VERBS, &real))
		snprintf(why, size, "rdma-core unusable: %s", gnic_last_error());
	else if (lists_mlx5(real, why, size)) {
		*v = real;
		return GNIC_OK;
	}
	return gnic_verbs_get(GNIC_PROVIDER_EMU, v);
}

int gnic_verbs_query_port(const struct gnic_verbs *v, struct ibv_context *ctx, uint8_t port,
                          struct ibv_port_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	if (v->query_port)
		return v->query_port(ctx, port, attr, sizeof(*attr));
	/* rdma-core's exported call fills a prefix of struct ibv_port_attr
	 * (state, MTUs, GID table, link layer): all we read */
	return v->query_port_compat(ctx, port, attr);
}

struct ibv_mr *gnic_verbs_reg_mr(const struct gnic_verbs *v, struct ibv_pd *pd, void *addr,
                                 size_t len, int access)
{
	if (v->reg_mr_iova2)
		return v->reg_mr_iova2(pd, addr, len, (uintptr_t)addr, (unsigned int)access);
	return v->reg_mr(pd, addr, len, access);
}

/* Thread and parent domains have no symbols: verbs.h's inline calls reach
 * the context's own operation table (rdma-core's provider or gnic-emu's),
 * so they are the same for both providers and link nothing. */
struct ibv_td *gnic_verbs_alloc_td(struct ibv_context *ctx)
{
	struct ibv_td_init_attr a = {.comp_mask = 0};

	return ibv_alloc_td(ctx, &a);
}

int gnic_verbs_dealloc_td(struct ibv_td *td)
{
	return ibv_dealloc_td(td);
}

struct ibv_pd *gnic_verbs_alloc_parent_domain(struct ibv_context *ctx, struct ibv_pd *pd,
                                              struct ibv_td *td)
{
	struct ibv_parent_domain_init_attr a = {.pd = pd, .td = td};

	return ibv_alloc_parent_domain(ctx, &a);
}

/* umem_reg_ex (dma-buf) is newer than the rest and optional. */
bool gnic_verbs_has_devx(const struct gnic_verbs *v)
{
	return v->mlx5dv_open_device && v->create_ah && v->destroy_ah && v->devx_umem_reg &&
	       v->devx_umem_dereg && v->devx_alloc_uar && v->devx_free_uar && v->devx_query_eqn &&
	       v->devx_obj_create && v->devx_obj_modify && v->devx_obj_destroy;
}
