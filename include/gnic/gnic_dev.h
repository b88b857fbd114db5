/* SPDX-License-Identifier: MIT */
/*
 * The state a device thread works on: one struct gnic_dev_qp per QP.
 *
 * Plain C, shared by the host control path (src/, which fills it at export)
 * and the device data path (gnic_dev.cuh, on GPU threads or CPU threads).
 * The host places it in GPU memory for a GPU context, in host memory
 * otherwise; every pointer in it is valid where the struct lives (GPU
 * pointers to host-registered queues, or plain host pointers).
 *
 * Counters are 64-bit and never wrap in practice; the hardware sees their low
 * 16 bits (SQ/RQ) or 24 bits (CQ). Each hot counter has its own cache line.
 */
#ifndef GNIC_DEV_H
#define GNIC_DEV_H

#include <stdint.h>

#include "gnic_mlx5.h"

#define GNIC_DEV_ALIGNED  __attribute__((aligned(64)))
#define GNIC_DEV_QP_MAGIC 0x676e6963u /* "gnic": export sanity check */

/* How a device thread tells the NIC about new WQEs. */
enum gnic_db_mode {
	GNIC_DB_AUTO = 0,  /* host picks: SM if the register maps into the GPU, else PROXY */
	GNIC_DB_SM = 1,    /* thread writes doorbell record + 8-byte register */
	GNIC_DB_BF = 2,    /* BlueFlame: thread copies the last WQE into the register */
	GNIC_DB_CPU = 3,   /* CPU-assisted: thread publishes its index, a host thread rings */
	GNIC_DB_PROXY = 4, /* CPU proxy: thread hands a descriptor to a host thread that
	                    * builds, posts and completes the WQE (docs/api.md) */
};

/* Who may post on a QP at the same time. */
enum gnic_share {
	GNIC_SHARE_EXCLUSIVE = 0, /* one thread (or one warp/CTA leader) at a time */
	GNIC_SHARE_CTA = 1,       /* threads of one CTA */
	GNIC_SHARE_GPU = 2,       /* any thread of the GPU (or any CPU thread) */
};

/* Status of device calls (0 or negative). */
enum gnic_dev_status {
	GNIC_DEV_OK = 0,
	GNIC_DEV_ERR_CQE = -1,     /* an error completion: see gnic_dev_err */
	GNIC_DEV_ERR_TIMEOUT = -2, /* a bounded wait ran out */
	GNIC_DEV_ERR_INVAL = -3,   /* bad argument (e.g. inline too long) */
	GNIC_DEV_ERR_QP = -4,      /* the QP failed earlier; nothing was posted */
};

/* The first error a QP met, written once by the device, read by the host
 * (gnic_qp_error()) through host-mapped memory, also after the kernel. */
struct gnic_dev_err {
	uint32_t status;  /* enum gnic_dev_status, 0 = no error */
	uint8_t syndrome; /* GNIC_MLX5_SYND_* for GNIC_DEV_ERR_CQE */
	uint8_t vendor_syndrome;
	uint8_t opcode;       /* GNIC_MLX5_OPCODE_* of the failed WQE */
	uint8_t cqe_opcode;   /* GNIC_MLX5_CQE_REQ_ERR / RESP_ERR */
	uint16_t wqe_counter; /* index of the failed WQE */
	uint16_t rsvd;
	uint32_t qpn;
};

struct gnic_dev_cq {
	struct gnic_mlx5_cqe64 *buf;
	gnic_be32_t *dbrec; /* [0] = consumer index & 0xffffff */
	uint32_t cqe_cnt;   /* power of two */
	uint32_t cqn;
};

struct gnic_dev_qp {
	/* ---- set by the host at export; read-only here ---- */
	uint32_t magic; /* GNIC_DEV_QP_MAGIC */
	uint32_t qpn;
	uint8_t *sq_buf;     /* sq_wqe_cnt basic blocks of 64 B */
	uint32_t sq_wqe_cnt; /* power of two, <= 32768 */
	uint32_t db_mode;    /* enum gnic_db_mode, never AUTO here */
	gnic_be32_t *dbrec;  /* [GNIC_MLX5_RCV_DBR], [GNIC_MLX5_SND_DBR] */
	uint64_t *db_reg;    /* doorbell register (BlueFlame half 0) */
	uint32_t bf_size;    /* bytes per BlueFlame half (0: no BlueFlame) */
	uint32_t share;      /* enum gnic_share */
	uint8_t *rq_buf;
	uint32_t rq_wqe_cnt;    /* power of two, 0 = no receive queue */
	uint32_t rq_stride;     /* bytes */
	struct gnic_dev_cq scq; /* send completions */
	struct gnic_dev_cq rcq; /* receive completions */
	uint32_t cqe_every;     /* request a CQE at least every this many BBs (pow2) */
	uint32_t db_batch;      /* ring every this many WQEs (1 = every post) */
	uint32_t max_inline;    /* bytes of inline data a WQE may carry */
	uint32_t rsvd0;
	uint64_t timeout_ns;   /* bound of every wait */
	uint8_t *wqe_nbb;      /* [sq_wqe_cnt]: size in BBs of the WQE at each slot */
	uint64_t *sq_pub;      /* [sq_wqe_cnt]: publish marks, (index << 16) | nbb (shared QPs) */
	uint32_t *res_owned;   /* [2 * sq_wqe_cnt]: 1 while scratch[i] holds an unread result */
	uint64_t *scratch;     /* [2 * sq_wqe_cnt + 1] 8-B atomic results by WQE index, then the
	                        * discard word (old values nobody wants) */
	uint64_t scratch_iova; /* the same area as the NIC addresses it (registered VA) */
	uint32_t scratch_lkey;
	/* 1: the NIC writes fetched atomic values big-endian (its atomic_cap is
	 * IBV_ATOMIC_NONE: no host-endian atomic responses); gnic_dev_result_release
	 * converts */
	uint32_t atomic_be;
	uint64_t *cpu_db;         /* GNIC_DB_CPU: ready index, read by the host progress thread */
	struct gnic_dev_err *err; /* host-mapped */
	/* GNIC_DB_PROXY (gnic_dev_proxy.h, host-mapped): the block and its ring of
	 * sq_wqe_cnt descriptor slots; scratch then points at its result[] and
	 * err at its dev_err. NULL in the other modes. */
	struct gnic_px_block *px;
	struct gnic_px_desc *px_ring;

	/* ---- hot counters, device-owned ---- */
	GNIC_DEV_ALIGNED uint64_t sq_reserved; /* BBs handed out to posters */
	GNIC_DEV_ALIGNED uint64_t sq_ready;    /* BBs written, published in order */
	GNIC_DEV_ALIGNED uint64_t sq_rung;     /* producer index last given to the NIC */
	uint32_t db_lock;                      /* serialises ringing (and BF halves) */
	uint32_t bf_half;                      /* next BF half, 0 or 1, of its own register */
	uint32_t rsvd2;
	uint32_t unrung;                      /* WQEs ready but not rung (batching) */
	GNIC_DEV_ALIGNED uint64_t sq_retired; /* BBs whose completion was seen */
	uint64_t scq_ci;                      /* send CQ consumer index */
	uint32_t scq_lock;                    /* one poller at a time */
	uint32_t failed;                      /* an error CQE was seen: QP is in ERR */
	GNIC_DEV_ALIGNED uint64_t rq_posted;  /* receive WQEs posted */
	uint64_t rq_done;                     /* receive completions consumed */
	uint64_t rcq_ci;                      /* receive CQ consumer index */
	uint32_t rq_lock;
	uint32_t rcq_lock;
};

#endif /* GNIC_DEV_H */
