/* SPDX-License-Identifier: MIT */
/*
 * Send WQE decoding (wqe.h). fuzz_wqe (tests/fuzz) drives it end to end.
 */
#include <string.h>

#include "emu.h"
#include "wqe.h"

void emu_wqe_decode_ctrl(struct emu_wqe *w, const struct gnic_mlx5_ctrl_seg *c)
{
	uint32_t w0 = gnic_be32(c->opmod_idx_opcode), w1 = gnic_be32(c->qpn_ds);

	w->opmod = w0 >> 24;
	w->idx = (uint16_t)(w0 >> 8);
	w->opcode = (uint8_t)w0;
	w->qpn = w1 >> 8;
	w->ds = w1 & 0x3f;
	w->fm_ce_se = c->fm_ce_se;
	w->imm = c->imm;
	w->nbb = w->ds ? (w->ds * 16 + 63) / 64 : 1;
}

static void copy_first(const struct emu_wq *sq, uint16_t idx, struct emu_wqe *w)
{
	emu_wq_copy_out(sq, idx, w->bytes, 1);
	emu_wqe_decode_ctrl(w, (const struct gnic_mlx5_ctrl_seg *)w->bytes);
}

/* The blocks after the first; ds <= 63 keeps nbb <= GNIC_MLX5_MAX_WQE_BB. */
static void copy_rest(const struct emu_wq *sq, uint16_t idx, struct emu_wqe *w)
{
	emu_wq_copy_out(sq, (uint16_t)(idx + 1), w->bytes + GNIC_MLX5_SEND_WQE_BB, w->nbb - 1u);
}

void emu_wqe_copy(const struct emu_wq *sq, uint16_t idx, struct emu_wqe *w)
{
	copy_first(sq, idx, w);
	copy_rest(sq, idx, w);
}

bool emu_wqe_fetch(const struct emu_wq *sq, uint32_t qpn, uint16_t idx, struct emu_wqe *w)
{
	copy_first(sq, idx, w);
	if (w->idx != idx || w->qpn != qpn || w->ds == 0 || w->nbb > GNIC_MLX5_MAX_WQE_BB ||
	    w->nbb > sq->wqe_cnt) {
		static struct emu_log_limit limit;

		emu_warn_limited(
		    &limit,
		    "QP 0x%x: bad WQE at index %u: ctrl says index %u, QPN 0x%x, ds %u "
		    "(doorbell rung beyond the written WQEs, or a corrupt WQE)",
		    qpn, idx, w->idx, w->qpn, w->ds);
		w->idx = idx;
		w->nbb = 1;
		return false;
	}
	copy_rest(sq, idx, w);
	return true;
}

bool emu_wqe_parse_sgl(struct emu_wqe *w, unsigned off, struct emu_sgl *s)
{
	unsigned end = w->ds * 16u;

	s->n = 0;
	s->inl = NULL;
	s->len = 0;
	s->mr0 = NULL;
	while (off < end) {
		uint32_t bc = gnic_be32(*(const gnic_be32_t *)(w->bytes + off));

		if (bc & GNIC_MLX5_INLINE_SEG) {
			uint32_t len = bc & ~GNIC_MLX5_INLINE_SEG;

			if (s->inl || s->n || off + 4 + len > end)
				return false;
			s->inl = w->bytes + off + 4;
			s->len = len;
			off += (4 + len + 15) & ~15u;
			continue;
		}
		if (s->inl)
			return false;
		s->seg[s->n++] = (struct gnic_mlx5_data_seg *)(w->bytes + off);
		/* hardware reads byte_count 0 as 2 GiB */
		s->len += bc ? bc : 0x80000000u;
		off += 16;
	}
	return true;
}

unsigned emu_wqe_rd_atomic_sgl(uint8_t opcode)
{
	unsigned off = sizeof(struct gnic_mlx5_ctrl_seg) + sizeof(struct gnic_mlx5_raddr_seg);

	if (opcode == GNIC_MLX5_OPCODE_ATOMIC_CS || opcode == GNIC_MLX5_OPCODE_ATOMIC_FA)
		off += sizeof(struct gnic_mlx5_atomic_seg);
	return off;
}
