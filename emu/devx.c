/* SPDX-License-Identifier: MIT */
/*
 * DEVX entry points: a DEVX context, general commands, and the lifetime of
 * the CQ and QP objects that commands create (devx.h says how errors come
 * back). An object belongs to the context that made it; a call that names
 * an object this process does not have is EINVAL.
 */
#include <errno.h>
#include <stdlib.h>

#include "devx.h"

static pthread_mutex_t devx_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mlx5dv_devx_obj *objs; /* under devx_mu */

void emu_devx_lock(void)
{
	pthread_mutex_lock(&devx_mu);
}

void emu_devx_unlock(void)
{
	pthread_mutex_unlock(&devx_mu);
}

void emu_devx_obj_add(struct mlx5dv_devx_obj *obj)
{
	obj->next = objs;
	objs = obj;
}

static bool obj_live(const struct mlx5dv_devx_obj *obj)
{
	for (struct mlx5dv_devx_obj *o = objs; o; o = o->next)
		if (o == obj)
			return true;
	return false;
}

static void obj_unlink(struct mlx5dv_devx_obj *obj)
{
	for (struct mlx5dv_devx_obj **p = &objs; *p; p = &(*p)->next)
		if (*p == obj) {
			*p = obj->next;
			return;
		}
}

bool emu_devx_eqn_valid(struct emu_context *ctx, uint32_t eqn)
{
	return eqn >= EMU_DEVX_EQN_BASE &&
	       eqn - EMU_DEVX_EQN_BASE < (uint32_t)ctx->vctx.context.num_comp_vectors;
}

/* The kernel gives a context DEVX (a user id) at open; without it every
 * DEVX method is EINVAL. */
static struct emu_context *devx_ctx(struct ibv_context *context)
{
	if (!context || !gemu_is_emu_context(context) || !to_ectx(context)->devx)
		return NULL;
	return to_ectx(context);
}

/* mlx5dv_open_device: as rdma-core, a device that is not mlx5 is
 * EOPNOTSUPP and an attribute this release does not know EINVAL. */
EMU_EXPORT struct ibv_context *gemu_mlx5dv_open_device(struct ibv_device *device,
                                                       struct mlx5dv_context_attr *attr)
{
	struct ibv_context *context;

	if (!gemu_mlx5dv_is_supported(device)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr && (attr->comp_mask || (attr->flags & ~(uint32_t)MLX5DV_CONTEXT_FLAGS_DEVX))) {
		errno = EINVAL;
		return NULL;
	}
	if (attr && (attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX) && !emu_cfg.devx) {
		emu_info("mlx5dv_open_device: DEVX refused (GNIC_EMU_DEVX=0)");
		errno = EOPNOTSUPP;
		return NULL;
	}
	context = gemu_open_device(device);
	if (context && attr && (attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX))
		to_ectx(context)->devx = true;
	return context;
}

EMU_EXPORT int gemu_mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in,
                                            size_t inlen, void *out, size_t outlen)
{
	struct emu_context *ctx = devx_ctx(context);
	int ret;

	if (!ctx)
		return EINVAL;
	emu_devx_lock();
	ret = emu_devx_exec(ctx, DEVX_GENERAL, NULL, in, inlen, out, outlen, NULL);
	emu_devx_unlock();
	return ret;
}

EMU_EXPORT struct mlx5dv_devx_obj *gemu_mlx5dv_devx_obj_create(struct ibv_context *context,
                                                               const void *in, size_t inlen,
                                                               void *out, size_t outlen)
{
	struct emu_context *ctx = devx_ctx(context);
	struct mlx5dv_devx_obj *obj = NULL;
	int ret = EINVAL;

	if (ctx) {
		emu_devx_lock();
		ret = emu_devx_exec(ctx, DEVX_CREATE, NULL, in, inlen, out, outlen, &obj);
		emu_devx_unlock();
	}
	if (ret) {
		errno = ret;
		return NULL;
	}
	return obj;
}

static int obj_cmd(struct mlx5dv_devx_obj *obj, enum devx_method m, const void *in, size_t inlen,
                   void *out, size_t outlen)
{
	int ret = EINVAL;

	emu_devx_lock();
	if (obj && obj_live(obj))
		ret = emu_devx_exec(obj->ctx, m, obj, in, inlen, out, outlen, NULL);
	emu_devx_unlock();
	return ret;
}

EMU_EXPORT int gemu_mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen,
                                          void *out, size_t outlen)
{
	return obj_cmd(obj, DEVX_QUERY, in, inlen, out, outlen);
}

EMU_EXPORT int gemu_mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in,
                                           size_t inlen, void *out, size_t outlen)
{
	return obj_cmd(obj, DEVX_MODIFY, in, inlen, out, outlen);
}

/* The kernel keeps each object's destroy command and runs it here: a CQ
 * that QPs still use stays (EBUSY), as the firmware refuses to destroy it. */
EMU_EXPORT int gemu_mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
	int ret = EINVAL;

	emu_devx_lock();
	if (obj && obj_live(obj)) {
		ret =
		    obj->type == EMU_DEVX_CQ ? emu_devx_destroy_cq(obj) : emu_devx_destroy_qp(obj);
		if (!ret)
			obj_unlink(obj);
	}
	emu_devx_unlock();
	if (!ret)
		free(obj);
	return ret;
}

/* The kernel destroys a context's DevX objects when it closes (QPs before
 * the CQs they use), then its umems and UARs. */
void emu_devx_close(struct emu_context *ctx)
{
	emu_devx_lock();
	for (enum emu_devx_type t = EMU_DEVX_QP; t >= EMU_DEVX_CQ; t--)
		for (struct mlx5dv_devx_obj **p = &objs; *p;) {
			struct mlx5dv_devx_obj *o = *p;

			if (o->ctx != ctx || o->type != t) {
				p = &o->next;
				continue;
			}
			if (t == EMU_DEVX_QP ? emu_devx_destroy_qp(o) : emu_devx_destroy_cq(o)) {
				emu_warn("devx: object 0x%x could not go with its context", o->id);
				p = &o->next;
				continue;
			}
			*p = o->next;
			free(o);
		}
	emu_devx_umem_close(ctx);
	emu_devx_uar_close(ctx);
	emu_devx_unlock();
}

/* One EQ per completion vector (gnic-emu has one): CREATE_CQ's c_eqn must
 * be one of these. */
EMU_EXPORT int gemu_mlx5dv_devx_query_eqn(struct ibv_context *context, uint32_t vector,
                                          uint32_t *eqn)
{
	struct emu_context *ctx = devx_ctx(context);

	if (!ctx || !eqn || vector >= (uint32_t)context->num_comp_vectors)
		return EINVAL;
	*eqn = EMU_DEVX_EQN_BASE + vector;
	return 0;
}
