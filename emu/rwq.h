/* SPDX-License-Identifier: MIT */
/*
 * Receive work queues (ibv_create_wq, mlx5dv_create_wq), their indirection
 * tables (ibv_create_rwq_ind_table) and the RSS RAW_PACKET QPs that receive
 * through them (ibv_create_qp_ex with IBV_QP_INIT_ATTR_IND_TABLE and
 * _RX_HASH), as a ConnectX Ethernet port has them with rdma-core's mlx5
 * provider and DPDK uses them. rwq.c.
 *
 * A WQ is a plain cyclic RQ (receive WQEs of data segments, what
 * ibv_post_wq_recv writes) or a striding (multi-packet) RQ: each WQE is
 * the 16-byte next segment followed by one data segment naming a buffer of
 * 2^log_nstrides strides of 2^log_stride bytes, and each frame takes as
 * many whole strides of the current WQE as it needs (rwq_stride.c).
 */
#ifndef GNIC_EMU_RWQ_H
#define GNIC_EMU_RWQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "eth.h"

#define EMU_RWQN_BASE   0xe00000u /* WQ numbers: a range QPNs never take */
#define EMU_MAX_RWQ     4096u
#define EMU_RSS_KEY     40u         /* the Toeplitz key of a TIR */
#define EMU_MPRQ_FILLER 0x80000000u /* byte_cnt of a striding RQ's filler CQE */

/* Striding RQ limits of a ConnectX-7 (mlx5_ib with ext_stride_num_range). */
#define EMU_MPRQ_MIN_LOG_STRIDE   6
#define EMU_MPRQ_MAX_LOG_STRIDE   13
#define EMU_MPRQ_MIN_LOG_NSTRIDES 3
#define EMU_MPRQ_MAX_LOG_NSTRIDES 16

struct emu_rwq {
	struct ibv_wq ibwq;
	struct emu_context *ctx;
	uint32_t events_reported; /* async events handed out (the context's evq lock) */
	struct emu_pd *pd;
	struct emu_cq *cq;
	uint32_t wqn;
	int refcnt; /* indirection tables holding it (under nic.lock): destroy -> EBUSY */
	/* hardware layout (page-aligned): wqe_cnt WQEs of stride bytes */
	uint8_t *buf;
	__be32 *dbrec; /* [0]: receive producer index & 0xffff */
	uint32_t wqe_cnt, stride, max_sge;
	/* striding: 0 for a plain RQ */
	bool striding;
	uint8_t log_stride, log_nstrides; /* bytes of a stride, strides of a WQE */
	bool shift2;                      /* two_byte_shift_en: frames start 2 bytes in */
	/* posting side (ibv_post_wq_recv), under lock */
	uint32_t head;
	uint64_t *wrid;
	pthread_spinlock_t lock;
	/* engine side, under eng_lock: the current WQE and its strides taken */
	pthread_mutex_t eng_lock;
	uint16_t ci;
	uint32_t used;
	_Atomic int state; /* enum ibv_wq_state */
};

struct emu_rwq_ind_tbl {
	struct ibv_rwq_ind_table ibtbl;
	uint32_t log_size;
	struct emu_rwq **wq; /* 2^log_size entries */
	int refcnt;          /* QPs receiving through it (under nic.lock) */
};

/* A RAW_PACKET QP's receive side when it was created with an indirection
 * table: what a TIR holds. */
struct emu_rss {
	struct emu_rwq_ind_tbl *tbl;
	uint64_t fields; /* IBV_RX_HASH_* */
	uint8_t key[EMU_RSS_KEY];
};

static inline struct emu_rwq *to_erwq(struct ibv_wq *wq)
{
	return (struct emu_rwq *)wq;
}

/* ibv_create_qp_ex of an RSS QP: 0 or an errno (EOPNOTSUPP with a reason
 * logged for what is not emulated); *rss is filled on success, *cq is the
 * CQ of the table's first WQ (the QP's internal CQ: it completes nothing). */
int emu_rss_check(struct ibv_context *context, const struct ibv_qp_init_attr_ex *a,
                  struct emu_rss *rss, struct ibv_cq **cq);
void emu_rss_hold(struct emu_rss *rss, int delta); /* under nic.lock */
/* The frame for an RSS QP: the WQ its hash picks receives it. */
void emu_rss_deliver(struct emu_qp *qp, const struct emu_pkt *p, uint32_t tag);
/* Toeplitz over the fields the QP hashes (0: nothing to hash). */
uint32_t emu_rss_hash(const struct emu_rss *rss, const struct emu_pkt *p, uint8_t *htype);

/* rwq_stride.c: one frame into a WQ (plain or striding), engine side. */
void emu_rwq_receive(struct emu_rwq *wq, const struct emu_pkt *p, uint32_t tag, uint32_t hash,
                     uint8_t htype);
void emu_rwq_engine_reset(struct emu_rwq *wq); /* under eng_lock */

EMU_EXPORT struct ibv_wq *gemu_create_wq(struct ibv_context *context,
                                         struct ibv_wq_init_attr *attr);
EMU_EXPORT struct ibv_wq *gemu_mlx5dv_create_wq(struct ibv_context *context,
                                                struct ibv_wq_init_attr *attr,
                                                struct mlx5dv_wq_init_attr *mlx5_attr);
EMU_EXPORT int gemu_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
EMU_EXPORT int gemu_destroy_wq(struct ibv_wq *wq);
EMU_EXPORT struct ibv_rwq_ind_table *
gemu_create_rwq_ind_table(struct ibv_context *context, struct ibv_rwq_ind_table_init_attr *attr);
EMU_EXPORT int gemu_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl);

#endif /* GNIC_EMU_RWQ_H */
