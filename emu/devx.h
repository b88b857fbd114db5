/* SPDX-License-Identifier: MIT */
/*
 * DEVX: the firmware command interface of a ConnectX as mlx5dv_devx_* reach
 * it (through the kernel's mlx5_ib DEVX methods), over gnic-emu's own
 * objects. The user places queues in memory it registered as umem, creates
 * CQs and QPs with PRM commands (devx_cmd.c decodes them, devx_cq.c and
 * devx_qp.c carry them out on the engine's CQ and QP objects), and rings
 * doorbells through UAR pages it allocated (devx_uar.c).
 *
 * Errors come as the kernel returns them: a call the kernel itself refuses
 * (a NULL or short mailbox, an opcode of the wrong class, another object's
 * id, a context without DEVX) is EINVAL with the outbox untouched; a command
 * the firmware fails has its status and syndrome in the outbox and the call
 * returns EREMOTEIO.
 *
 * The DEVX registries (umems, UARs, objects) are guarded by the DEVX lock,
 * which is taken before nic.lock (the CQ and QP calls take that one
 * themselves) and never after it.
 */
#ifndef GNIC_EMU_DEVX_H
#define GNIC_EMU_DEVX_H

#include <infiniband/mlx5dv.h>

#include "emu.h"
#include "prm.h"

struct emu_devx_umem {
	struct mlx5dv_devx_umem pub; /* first: the user's handle */
	struct emu_context *ctx;
	uint8_t *addr; /* host memory, or the shadow of GPU memory */
	size_t size;
	uint32_t access;
	bool gpu; /* GPU memory: addr is a shadow, dev its GPU address */
	uint64_t dev;
	struct emu_cuda_ctx cu; /* the context its copies run in */
	int refcnt;             /* objects whose queues or doorbells are in it */
	struct emu_devx_umem *next;
};

struct emu_devx_uar {
	struct mlx5dv_devx_uar pub; /* first: the user's handle */
	struct emu_context *ctx;
	void *page; /* one page: the doorbell register at +GNIC_MLX5_BF_OFFSET */
	int refcnt; /* objects naming it, + 1 until mlx5dv_devx_free_uar */
	bool freed; /* mlx5dv_devx_free_uar was called */
	struct emu_devx_uar *next;
};

enum emu_devx_type { EMU_DEVX_CQ = 1, EMU_DEVX_QP };

/* What mlx5dv_devx_obj_create hands out (rdma-core's type is opaque). */
struct mlx5dv_devx_obj {
	struct emu_context *ctx;
	enum emu_devx_type type;
	uint32_t id; /* cqn, qpn */
	struct emu_cq *cq;
	struct emu_qp *qp;
	struct emu_devx_umem *umem, *dbr_umem;
	struct emu_devx_uar *uar;
	/* the context as created and last modified, in PRM layout: QUERY_* give
	 * it back with the live state (cqc: 64 bytes, qpc: 232) */
	uint8_t img[PRM_QPC_BYTES];
	struct mlx5dv_devx_obj *next;
};

/* One command through the decoder: in is a zero-padded copy of the inbox at
 * least the command's length; out is the user's outbox (already zeroed,
 * at least the command's length). A handler returns a PRM status and may
 * set reason (the low half of the syndrome). */
struct devx_call {
	struct emu_context *ctx;
	struct mlx5dv_devx_obj *obj; /* modify/query/destroy: the object */
	const uint8_t *in;
	uint8_t *out;
	struct mlx5dv_devx_obj *created; /* create: the new object */
	uint16_t opcode;
	uint16_t reason;
};

/* How the call came: which kernel method, which decides what opcodes are
 * allowed (anything else is EINVAL before the firmware sees it). */
enum devx_method { DEVX_GENERAL, DEVX_CREATE, DEVX_MODIFY, DEVX_QUERY, DEVX_DESTROY };

/* devx_cmd.c: run one command; 0, EINVAL (refused, outbox untouched) or
 * EREMOTEIO (the outbox has the status). obj: the object of a modify or
 * query; *created: a create's new object. */
int emu_devx_exec(struct emu_context *ctx, enum devx_method m, struct mlx5dv_devx_obj *obj,
                  const void *in, size_t inlen, void *out, size_t outlen,
                  struct mlx5dv_devx_obj **created);
/* The opcode a command on obj must carry to be that object's (kernel's
 * devx_is_valid_obj_id): its id field. */
uint32_t emu_devx_cmd_obj_id(const uint8_t *in, uint16_t opcode);

/* devx_cq.c / devx_qp.c: the handlers (DEVX lock held). */
uint8_t emu_devx_create_cq(struct devx_call *c);
uint8_t emu_devx_query_cq(struct devx_call *c);
int emu_devx_destroy_cq(struct mlx5dv_devx_obj *obj); /* 0 or EBUSY */
uint8_t emu_devx_create_qp(struct devx_call *c);
uint8_t emu_devx_modify_qp(struct devx_call *c);
uint8_t emu_devx_query_qp(struct devx_call *c);
int emu_devx_destroy_qp(struct mlx5dv_devx_obj *obj);

/* devx_umem.c / devx_uar.c: the context closes: its umems and UARs go
 * (DEVX lock held, its objects already destroyed). */
void emu_devx_umem_close(struct emu_context *ctx);
void emu_devx_uar_close(struct emu_context *ctx);
/* devx_umem.c / devx_uar.c: lookups of this context's (DEVX lock held). */
struct emu_devx_umem *emu_devx_umem_get(struct emu_context *ctx, uint32_t id);
struct emu_devx_uar *emu_devx_uar_get(struct emu_context *ctx, uint32_t page_id);
void emu_devx_uar_put(struct emu_devx_uar *uar);
/* A range of a umem as a host pointer: NULL when [off, off + len) is not
 * inside it or off is not a multiple of align. */
void *emu_devx_umem_ptr(struct emu_devx_umem *u, uint64_t off, uint64_t len, uint64_t align);

/* devx.c: the DEVX lock, and the object registry (DEVX lock held). */
void emu_devx_lock(void);
void emu_devx_unlock(void);
void emu_devx_obj_add(struct mlx5dv_devx_obj *obj);
/* The EQ numbers mlx5dv_devx_query_eqn gives: one per completion vector. */
#define EMU_DEVX_EQN_BASE 8u
bool emu_devx_eqn_valid(struct emu_context *ctx, uint32_t eqn);

#endif /* GNIC_EMU_DEVX_H */
