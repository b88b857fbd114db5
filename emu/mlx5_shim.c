/* SPDX-License-Identifier: MIT */
/*
 * libmlx5.so.1 for gnic-emu: the mlx5 direct-verbs entry points a GPU
 * data path needs (init_obj, query_device, is_supported, create_qp,
 * open_device) forward to libgnic_emu.so. The library exports every symbol
 * of rdma-core 44's libmlx5.so.1 at its version (libmlx5.map); the calls
 * that need firmware objects the emulator does not have (DevX, steering,
 * mkeys, crypto, scheduling, VFIO) are in mlx5_stubs.c and fail with
 * EOPNOTSUPP.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

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

/* The capability blocks of the offloads gnic-emu does not have, answered as a
 * ConnectX-7's libmlx5 answers every block the caller asks for: with the
 * device's capabilities, here none (CQE compression, software parsing,
 * striding RQ, tunnel offloads, flow action flags, DC ODP, signature, DCI
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
	    BLOCK(MLX5DV_CONTEXT_MASK_STRIDING_RQ, striding_rq_caps),
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

/* As rdma-core: a device that is not mlx5 is EOPNOTSUPP, an attribute this
 * release does not know is EINVAL. A plain open (no flags) is ibv_open_device;
 * a DevX context needs the firmware command interface, which the emulator
 * does not have. */
struct ibv_context *mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	if (!gemu_mlx5dv_is_supported(device)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr && (attr->comp_mask || (attr->flags & ~(uint32_t)MLX5DV_CONTEXT_FLAGS_DEVX))) {
		errno = EINVAL;
		return NULL;
	}
	if (attr && attr->flags)
		return unsupported_ptr();
	return gemu_open_device(device);
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
