/* SPDX-License-Identifier: MIT */
/*
 * INTERNAL to libgnic, not an API: the layout of the hand-off between device
 * threads and libgnic's CPU proxy thread (GNIC_DB_PROXY). gnic_dev.cuh and
 * src/proxy.c include it; it changes with libgnic. Applications call
 * gnic_dev.cuh only, which behaves the same in every doorbell mode.
 *
 * One block per proxied QP, in host memory (mapped into the GPU for a GPU
 * context). Device threads write 64-byte descriptors into its ring, one
 * slot per basic block the WQE would take (so reservation indexes, tickets
 * and result slots mean what they mean in the other modes), and publish
 * each by storing seq = index + 1 last. The proxy thread copies descriptors
 * out in ring order, builds and posts the WQEs on the QP itself (the C build
 * of gnic_dev.cuh: the same bytes device threads write in SM mode), and
 * reports back here: slots copied out (free again), slots completed (what
 * waits and quiet wait for), fetched atomic values, and its failure.
 * Every word has one writer: the proxy writes consumed, done, status and
 * result[]; device threads write desc[] and dev_err.
 */
#ifndef GNIC_DEV_PROXY_H
#define GNIC_DEV_PROXY_H

#include <stdint.h>

#include "gnic_dev.h"

enum gnic_px_kind {
	GNIC_PX_RDMA = 1, /* WRITE / READ / SEND (and _IMM): one data segment */
	GNIC_PX_INLINE,   /* inline WRITE: data from byte GNIC_PX_INLINE_OFF on, over nslots */
	GNIC_PX_ATOMIC,   /* FA / CS; the old value to result[slot of the index] */
	GNIC_PX_NOP,      /* fence, or a warp/CTA lane with nothing to post */
};

#define GNIC_PX_INLINE_OFF 28u /* inline data starts here in the first slot */

struct gnic_px_desc {
	uint64_t seq;   /* index + 1 once the rest (and the slots after) is written */
	uint8_t kind;   /* enum gnic_px_kind */
	uint8_t opcode; /* GNIC_MLX5_OPCODE_* */
	uint8_t flags;  /* GNIC_DEV_F_* */
	uint8_t nslots; /* slots it takes: 1, or an inline WRITE's basic blocks */
	uint32_t len;   /* message bytes */
	uint64_t raddr; /* 16 */
	uint32_t rkey;  /* 24 */
	uint32_t lkey;  /* 28: inline data starts here */
	uint64_t laddr; /* 32 */
	uint64_t swap_add;
	uint64_t compare;
	uint32_t imm_be; /* SEND_IMM / WRITE_IMM immediate, big-endian */
	uint32_t rsvd;
};

/* The fixed head of the block; result[2 * sq_wqe_cnt + 1] and then the ring
 * desc[sq_wqe_cnt] follow (struct gnic_dev_qp points at both). */
struct gnic_px_block {
	GNIC_DEV_ALIGNED uint64_t consumed; /* slots copied out by the proxy: free again */
	GNIC_DEV_ALIGNED uint64_t done;     /* slots whose WQEs completed, in ring order */
	uint32_t status; /* the proxy's failure (enum gnic_dev_status; qp err record set first) */
	GNIC_DEV_ALIGNED struct gnic_dev_err dev_err; /* device threads' own failure (timeouts) */
};

#endif /* GNIC_DEV_PROXY_H */
