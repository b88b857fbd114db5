/* SPDX-License-Identifier: MIT */
/*
 * Input format of the "wqe" fuzz target (fuzz_wqe.c), shared with the seed
 * generator (make_seeds.c).
 *
 *   byte 0       control byte, WQE_CTL_* below
 *   bytes 1..    WQE bytes: (ctl & 3) + 1 basic blocks of 64 bytes, zero-padded;
 *                anything beyond is ignored
 *
 * The harness copies the blocks into the SQ at its producer index. With
 * WQE_CTL_PATCH it walks the chain of WQEs in them (each ctrl's ds gives the
 * next one) and writes the right WQE index and QPN into each ctrl, so the
 * engine gets past fetch_wqe() to the segment decoder; without it the bytes
 * go in as they are. Behind the chain it puts one signaled NOP of its own,
 * whose CQE says the engine is done with the input.
 *
 * With WQE_CTL_RELOC, tokens in the blocks stand for what only the running
 * process knows (buffer addresses, memory keys):
 *   big-endian u64 at an 8-byte boundary 0xa5a5a5RR_OOOOOOOO
 *       -> address of region RR % WQE_NREG plus the signed 32-bit offset O
 *   big-endian u32 at a 4-byte boundary  0x5a5a5aRR
 *       -> memory key (lkey == rkey) of region RR % WQE_NREG
 */
#ifndef GNIC_FUZZ_WQE_H
#define GNIC_FUZZ_WQE_H

#include <stdint.h>

enum {
	WQE_CTL_NBB = 3,        /* input basic blocks - 1 */
	WQE_CTL_PATCH = 1 << 2, /* set each ctrl's WQE index and QPN */
	WQE_CTL_RELOC = 1 << 3, /* replace address and key tokens */
	WQE_CTL_RING_SHIFT = 4, /* 2 bits: enum wqe_ring */
	WQE_CTL_RING = 3 << 4,
	WQE_CTL_STRADDLE = 1 << 6, /* start 1 basic block before the SQ's end */
	WQE_CTL_RECV = 1 << 7,     /* post a receive on the target QP first */
};

enum wqe_ring {
	WQE_RING_GPU = 0,      /* record, then register {be32(pi << 8), be32(qpn << 8)} */
	WQE_RING_CTRL = 1,     /* record, then register = last WQE's ctrl (rdma-core) */
	WQE_RING_RECORD = 2,   /* doorbell record only */
	WQE_RING_REGISTER = 3, /* register only (GPU form), record untouched */
};

#define WQE_IN_MAX_BB 4
#define WQE_TOK_ADDR  0xa5a5a5u /* high 24 bits of an address token */
#define WQE_TOK_KEY   0x5a5a5au /* high 24 bits of a key token */

/* Memory the target sets up, each region between guard pages. */
enum wqe_region {
	WQE_R_SRC, /* local MR, all access (READ/atomic results land here) */
	WQE_R_DST, /* target MR, all access (receives are posted here too) */
	WQE_R_RO,  /* MR with remote read only: must never change */
	WQE_R_RAW, /* not registered; its key token is a deregistered key */
	WQE_NREG
};

/* Region sizes in bytes, by enum wqe_region. */
#define WQE_REGION_LENS                                                                            \
	{                                                                                          \
		8192u, 16384u, 4096u, 4096u                                                        \
	}

/* Offsets inside WQE_R_DST the harness itself uses. */
#define WQE_DST_RECV   8192u /* posted receive buffer, WQE_RECV_LEN bytes */
#define WQE_RECV_LEN   4096u
#define WQE_DST_HEALTH 12288u /* the periodic well-formed WRITE */

static inline uint64_t wqe_tok_addr(unsigned region, int32_t off)
{
	return (uint64_t)WQE_TOK_ADDR << 40 | (uint64_t)(region & 0xff) << 32 | (uint32_t)off;
}

static inline uint32_t wqe_tok_key(unsigned region)
{
	return WQE_TOK_KEY << 8 | (region & 0xff);
}

#endif /* GNIC_FUZZ_WQE_H */
