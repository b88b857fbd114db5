/* SPDX-License-Identifier: MIT */
/*
 * libmlx5.so.1 for gnic-emu: the mlx5 direct-verbs entry points a GPU
 * data path needs (init_obj, query_device, is_supported, create_qp,
 * open_device, DEVX's commands, umem and UARs) forward to libgnic_emu.so.
 * The library exports every symbol of rdma-core 44's libmlx5.so.1 at its
 * version (libmlx5.map); the calls that need firmware objects the emulator
 * does not have (DEVX events and asynchronous commands, steering,
 * mkeys, crypto, scheduling, VFIO) are in mlx5_stubs.c and fail with
 * EOPNOTSUPP.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "emu.h"
#include "rwq.h"

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

/* The capability blocks of the offloads gnic-emu does not have, answered as a
 * ConnectX-7's libmlx5 answers every block the caller asks for: with the
 * device's capabilities, here none (CQE compression, software parsing,
 * tunnel offloads, flow action flags, DC ODP, signature, DCI
 * streams, DMA memcpy, crypto). The clock, core clock and LAG port count
 * are left unanswered, as libmlx5 does for a device without them. */
static void no_offload_caps(struct mlx5dv_context *a, uint64_t want)
{
	static const struct {
		uint64_t mask;
		size_t offset, size;
	} blocks[] = {
#define BLOCK(mask, field)                                                                         \
	{mask, offsetof(struct mlx5dv_context, field), sizeof(((struct mlx5dv_context *)0)->field)}
	    BLOCK(MLX5DV_CONTEXT_MASK_CQE_COMPRESION, cqe_comp_caps),
	    BLOCK(MLX5DV_CONTEXT_MASK_SWP, sw_parsing_caps),
	    BLOCK(MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS, tunnel_offloads_caps),
	    BLOCK(MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS, flow_action_flags),
	    BLOCK(MLX5DV_CONTEXT_MASK_DC_ODP_CAPS, dc_odp_caps),
	    BLOCK(MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD, sig_caps),
	    BLOCK(MLX5DV_CONTEXT_MASK_DCI_STREAMS, dci_streams_caps),
	    BLOCK(MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH, max_wr_memcpy_length),
	    BLOCK(MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD, crypto_caps),
#undef BLOCK
	};

	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		if (!(want & blocks[i].mask))
			continue;
		memset((char *)a + blocks[i].offset, 0, blocks[i].size);
		a->comp_mask |= blocks[i].mask;
	}
}

/* A caller built against older headers has a shorter struct and asks, through
 * comp_mask, only for the blocks it has room for: only those are written. */
int mlx5dv_query_device(struct ibv_context *ctx_in, struct mlx5dv_context *attrs_out)
{
	uint64_t want = attrs_out ? attrs_out->comp_mask : 0;
	int ret = gemu_mlx5dv_query_device(ctx_in, attrs_out);

	if (!ret)
		no_offload_caps(attrs_out, want);
	if (!ret && (want & MLX5DV_CONTEXT_MASK_STRIDING_RQ)) { /* rwq.h, a ConnectX-7's */
		struct mlx5dv_striding_rq_caps *s = &attrs_out->striding_rq_caps;

		s->min_single_stride_log_num_of_bytes = EMU_MPRQ_MIN_LOG_STRIDE;
		s->max_single_stride_log_num_of_bytes = EMU_MPRQ_MAX_LOG_STRIDE;
		s->min_single_wqe_log_num_of_strides = EMU_MPRQ_MIN_LOG_NSTRIDES;
		s->max_single_wqe_log_num_of_strides = EMU_MPRQ_MAX_LOG_NSTRIDES;
		s->supported_qpts = 1u << IBV_QPT_RAW_PACKET;
		attrs_out->comp_mask |= MLX5DV_CONTEXT_MASK_STRIDING_RQ;
	}
	return ret;
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

/* Receive WQs, striding (multi-packet) ones too (emu/rwq.c). */
struct ibv_wq *mlx5dv_create_wq(struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr,
                                struct mlx5dv_wq_init_attr *mlx5_wq_attr)
{
	return gemu_mlx5dv_create_wq(context, wq_init_attr, mlx5_wq_attr);
}

/* DEVX (emu/devx.c): a DEVX context, firmware commands over gnic-emu's CQs
 * and QPs, umem, UARs. */
struct ibv_context *mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	return gemu_mlx5dv_open_device(device, attr);
}

int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out,
                            size_t outlen)
{
	return gemu_mlx5dv_devx_general_cmd(context, in, inlen, out, outlen);
}

struct mlx5dv_devx_obj *mlx5dv_devx_obj_create(struct ibv_context *context, const void *in,
                                               size_t inlen, void *out, size_t outlen)
{
	return gemu_mlx5dv_devx_obj_create(context, in, inlen, out, outlen);
}

int mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
                          size_t outlen)
{
	return gemu_mlx5dv_devx_obj_query(obj, in, inlen, out, outlen);
}

int mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
                           size_t outlen)
{
	return gemu_mlx5dv_devx_obj_modify(obj, in, inlen, out, outlen);
}

int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
	return gemu_mlx5dv_devx_obj_destroy(obj);
}

int mlx5dv_devx_query_eqn(struct ibv_context *context, uint32_t vector, uint32_t *eqn)
{
	return gemu_mlx5dv_devx_query_eqn(context, vector, eqn);
}

struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg(struct ibv_context *ctx, void *addr, size_t size,
                                              uint32_t access)
{
	return gemu_mlx5dv_devx_umem_reg(ctx, addr, size, access);
}

struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg_ex(struct ibv_context *ctx,
                                                 struct mlx5dv_devx_umem_in *umem_in)
{
	return gemu_mlx5dv_devx_umem_reg_ex(ctx, umem_in);
}

int mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem)
{
	return gemu_mlx5dv_devx_umem_dereg(umem);
}

struct mlx5dv_devx_uar *mlx5dv_devx_alloc_uar(struct ibv_context *context, uint32_t flags)
{
	return gemu_mlx5dv_devx_alloc_uar(context, flags);
}

void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *devx_uar)
{
	gemu_mlx5dv_devx_free_uar(devx_uar);
}

/* The mlx5dv_wr_* builders of an extended QP (qp_ex.c). */
struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
	return gemu_mlx5dv_qp_ex_from_ibv_qp_ex(qp);
}

/* ---- CQ ------------------------------------------------------------------------ */

struct ibv_cq_ex *mlx5dv_create_cq(struct ibv_context *context, struct ibv_cq_init_attr_ex *cq_attr,
                                   struct mlx5dv_cq_init_attr *mlx5_cq_attr)
{
	return gemu_mlx5dv_create_cq(context, cq_attr, mlx5_cq_attr);
}
