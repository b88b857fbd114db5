/* SPDX-License-Identifier: MIT */
/*
 * libmlx5.so.1 for gnic-emu: the mlx5 direct-verbs entry points a GPU
 * data path needs (init_obj, query_device, is_supported) forward to
 * libgnic_emu.so; a few others that GPU libraries commonly look up exist at
 * their rdma-core 44 versions (libmlx5.map) and fail with EOPNOTSUPP, since
 * the emulator has no DevX firmware interface.
 */
#include <errno.h>

#include <infiniband/mlx5dv.h>

#include "emu.h"

static void *unsupported_ptr(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* mlx5dv_init_obj exists twice, as in rdma-core: the default
 * mlx5dv_init_obj@@MLX5_1.2 and, for binaries linked before 1.2,
 * mlx5dv_init_obj@MLX5_1.0. Both mean the same call here. */
int mlx5dv_init_obj_v1_2(struct mlx5dv_obj *obj, uint64_t obj_type);
int mlx5dv_init_obj_v1_0(struct mlx5dv_obj *obj, uint64_t obj_type);

int mlx5dv_init_obj_v1_2(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	return gemu_mlx5dv_init_obj(obj, obj_type);
}
__asm__(".symver mlx5dv_init_obj_v1_2, mlx5dv_init_obj@@MLX5_1.2");

int mlx5dv_init_obj_v1_0(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	return gemu_mlx5dv_init_obj(obj, obj_type);
}
__asm__(".symver mlx5dv_init_obj_v1_0, mlx5dv_init_obj@MLX5_1.0");

int mlx5dv_query_device(struct ibv_context *ctx_in, struct mlx5dv_context *attrs_out)
{
	return gemu_mlx5dv_query_device(ctx_in, attrs_out);
}

bool mlx5dv_is_supported(struct ibv_device *device)
{
	return gemu_mlx5dv_is_supported(device);
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_attr,
                                struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
	return gemu_mlx5dv_create_qp(context, qp_attr, mlx5_qp_attr);
}

/* ---- not emulated ------------------------------------------------------------ */

struct ibv_cq_ex *mlx5dv_create_cq(struct ibv_context *context, struct ibv_cq_init_attr_ex *cq_attr,
                                   struct mlx5dv_cq_init_attr *mlx5_cq_attr)
{
	(void)context, (void)cq_attr, (void)mlx5_cq_attr;
	return unsupported_ptr();
}

int mlx5dv_get_clock_info(struct ibv_context *context, struct mlx5dv_clock_info *clock_info)
{
	(void)context, (void)clock_info;
	return EOPNOTSUPP;
}

struct ibv_context *mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	(void)device, (void)attr;
	return unsupported_ptr();
}

struct mlx5dv_devx_obj *mlx5dv_devx_obj_create(struct ibv_context *context, const void *in,
                                               size_t inlen, void *out, size_t outlen)
{
	(void)context, (void)in, (void)inlen, (void)out, (void)outlen;
	return unsupported_ptr();
}

int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
	(void)obj;
	return EOPNOTSUPP;
}

int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out,
                            size_t outlen)
{
	(void)context, (void)in, (void)inlen, (void)out, (void)outlen;
	return EOPNOTSUPP;
}

int mlx5dv_devx_query_eqn(struct ibv_context *context, uint32_t vector, uint32_t *eqn)
{
	(void)context, (void)vector, (void)eqn;
	return EOPNOTSUPP;
}

struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg(struct ibv_context *ctx, void *addr, size_t size,
                                              uint32_t access)
{
	(void)ctx, (void)addr, (void)size, (void)access;
	return unsupported_ptr();
}

int mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem)
{
	(void)umem;
	return EOPNOTSUPP;
}

struct mlx5dv_devx_uar *mlx5dv_devx_alloc_uar(struct ibv_context *context, uint32_t flags)
{
	(void)context, (void)flags;
	return unsupported_ptr();
}

void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *devx_uar)
{
	(void)devx_uar; /* none can have been allocated */
}
