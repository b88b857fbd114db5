/* SPDX-License-Identifier: MIT */
/*
 * A DEVX RC QP and its CQ as production GPU networking code makes them: one
 * host-memory umem holding the CQ ring, both doorbell records and the WQ
 * (RQ then SQ), a UAR for the doorbell, CREATE_CQ / CREATE_QP, the
 * RST2INIT / INIT2RTR / RTR2RTS commands; then raw mlx5 WQEs, doorbells and
 * CQEs (tests/emu/test_devx.c, tests/mp/test_mp_devx.c).
 */
#ifndef GNIC_TEST_DEVX_Q_H
#define GNIC_TEST_DEVX_Q_H

#include <infiniband/mlx5dv.h>

#include "common.h"
#include "gnic/gnic_mlx5.h"

#define DQ_CQE_LOG   6  /* 64 CQEs */
#define DQ_SQ_LOG    6  /* 64 basic blocks */
#define DQ_RQ_LOG    4  /* 16 receive WQEs ... */
#define DQ_RQ_STRIDE 32 /* ... of two data segments */
#define DQ_DATA_LEN  (1u << 16)

struct dq {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint32_t pdn, eqn;
	uint8_t *mem; /* the umem */
	struct mlx5dv_devx_umem *umem;
	struct mlx5dv_devx_uar *uar;
	struct mlx5dv_devx_obj *cq, *qp;
	uint32_t cqn, qpn;
	struct gnic_mlx5_cqe64 *cqes;
	__be32 *cq_dbr, *qp_dbr;
	uint8_t *rq, *sq;
	uint32_t ci;      /* next CQE */
	uint16_t pi;      /* next SQ basic block */
	uint32_t rq_head; /* receive WQEs posted */
	uint32_t bf_off;
	uint8_t *data; /* DQ_DATA_LEN bytes, registered */
	struct ibv_mr *mr;
	bool own_uar; /* dq_destroy frees the UAR */
	bool zero_rq; /* made by dq_create_zero_rq: no RQ, the SQ at the WQ's start */
	bool own_mem; /* dq_destroy frees mem */
};

#define DQ_MEM_LEN (64u * 1024u) /* the umem: CQ ring, records, WQ */

/* The PRM status and syndrome of an outbox. */
uint8_t dq_status(const void *out);
uint32_t dq_syndrome(const void *out);

/* A DEVX context on device 0 (mlx5dv_open_device with DEVX). */
struct ibv_context *dq_open(void);
/* Make q's umem, UAR, CQ and QP on ctx (QP in RST). */
void dq_create(struct dq *q, struct ibv_context *ctx);
/* The same with its doorbells through uar, a UAR of the caller's (shared). */
void dq_create_on(struct dq *q, struct ibv_context *ctx, struct mlx5dv_devx_uar *uar);
/* A QP with a zero-size RQ (rq_type 3), as GPU initiators make theirs. */
void dq_create_zero_rq(struct dq *q, struct ibv_context *ctx);
/* With the umem at mem (DQ_MEM_LEN bytes of the caller's, say GPU memory of
 * the fake CUDA driver, which this process can read and write). */
void dq_create_in(struct dq *q, struct ibv_context *ctx, uint8_t *mem);
void dq_destroy(struct dq *q);
/* A modify command of q's QP: 0, or the errno mlx5dv_devx_obj_modify gave
 * (the outbox in out, 16 bytes). */
int dq_rst2init(struct dq *q, uint8_t *out);
int dq_init2rtr(struct dq *q, const union ibv_gid *rgid, uint32_t remote_qpn, uint8_t *out);
/* InfiniBand: the peer by its LID, no GRH. */
int dq_init2rtr_ib(struct dq *q, uint16_t dlid, uint32_t remote_qpn, uint8_t *out);
int dq_rtr2rts(struct dq *q, uint8_t *out);
int dq_to_state(struct dq *q, uint16_t opcode, uint8_t *out); /* 2ERR_QP, 2RST_QP */
void dq_connect(struct dq *q, const union ibv_gid *rgid, uint32_t remote_qpn);
/* The QP's state as QUERY_QP gives it (PRM encoding), and its qpc. */
uint32_t dq_query_state(struct dq *q, uint8_t *qpc_out /* NULL or PRM_QPC_BYTES */);
/* The GID the tests use (T_GID_INDEX) of ctx's port. */
void dq_gid(struct ibv_context *ctx, union ibv_gid *gid);

/* Write one WQE at pi and ring: opcode with an optional remote segment
 * (raddr/rkey, RDMA opcodes) and one local data segment; signalled. */
void dq_post(struct dq *q, uint8_t opcode, uint64_t laddr, uint32_t len, uint64_t raddr,
             uint32_t rkey);
void dq_post_recv(struct dq *q, uint64_t addr, uint32_t len);
/* The next CQE within ms (a failure otherwise); consumed (ci published). */
struct gnic_mlx5_cqe64 dq_poll(struct dq *q, unsigned ms, const char *what);

#endif /* GNIC_TEST_DEVX_Q_H */
