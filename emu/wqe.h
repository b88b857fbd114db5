/* SPDX-License-Identifier: MIT */
/*
 * Send WQE decoding: a WQE copied out of the SQ (it may wrap), its ctrl
 * segment decoded, its data/inline segments parsed. The engine's requester
 * decodes every WQE it executes with these; poll_cq (cq.c) reads a READ's or
 * atomic's local buffers back out of the SQ with the same copy. Nothing here
 * checks keys or touches memory other than the SQ.
 */
#ifndef GNIC_EMU_WQE_H
#define GNIC_EMU_WQE_H

#include <stdbool.h>
#include <stdint.h>

#include "gnic/gnic_mlx5.h"
#include "wq.h"

#define EMU_WQE_MAX_BYTES (GNIC_MLX5_MAX_WQE_BB * GNIC_MLX5_SEND_WQE_BB)

/* A WQE copied out of the SQ with its control fields decoded. */
struct emu_wqe {
	uint8_t bytes[EMU_WQE_MAX_BYTES];
	uint16_t idx;
	uint8_t opcode, opmod, fm_ce_se, nbb, ds;
	uint32_t qpn, imm;
};

/* A WQE's local buffers: at most EMU_MAX_SGE + a little slack. */
struct emu_mr;

struct emu_sgl {
	struct gnic_mlx5_data_seg *seg[GNIC_MLX5_MAX_DS];
	int n;
	const uint8_t *inl; /* inline data, or NULL */
	uint64_t len;       /* total bytes */
	struct emu_mr *mr0; /* seg[0]'s MR once emu_requester_check_sgl passed it */
};

/* The fields of ctrl segment c (nbb: 1 for ds 0, as for a NOP). */
void emu_wqe_decode_ctrl(struct emu_wqe *w, const struct gnic_mlx5_ctrl_seg *c);

/* Copy the WQE at basic block idx out of sq, as many blocks as its ds says,
 * whatever else its ctrl says. */
void emu_wqe_copy(const struct emu_wq *sq, uint16_t idx, struct emu_wqe *w);

/* The engine's copy of the WQE at basic block idx. false (with a warning;
 * only the first block copied, w->idx = idx, w->nbb = 1): its ctrl is not a
 * WQE that QP qpn posted at idx (doorbell beyond written WQEs, or garbage). */
bool emu_wqe_fetch(const struct emu_wq *sq, uint32_t qpn, uint16_t idx, struct emu_wqe *w);

/* Parse the data/inline segments starting at byte off of the WQE. false: a
 * malformed list (inline data mixed with data segments, or past ds). */
bool emu_wqe_parse_sgl(struct emu_wqe *w, unsigned off, struct emu_sgl *s);

/* Where the local buffers of a READ or an atomic start: after the ctrl, the
 * remote address and (atomics) the atomic segment. */
unsigned emu_wqe_rd_atomic_sgl(uint8_t opcode);

/* A data segment's length: hardware reads byte_count 0 as 2 GiB. */
static inline uint32_t emu_seg_len(const struct gnic_mlx5_data_seg *d)
{
	uint32_t bc = gnic_be32(d->byte_count);

	return bc ? bc : 0x80000000u;
}

#endif /* GNIC_EMU_WQE_H */
