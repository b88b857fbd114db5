// SPDX-License-Identifier: MIT
/* Helpers for the libgnic host tests; see gt.h. */
#include "gt.h"

#include <gnic/gnic_port.h>

struct gnic_ctx *gt_ctx(void)
{
	struct gnic_ctx_attr attr;
	struct gnic_ctx *ctx = NULL;

	gnic_ctx_attr_init(&attr);
	attr.gpu = GNIC_GPU_NONE;
	CHECK_GNIC(gnic_ctx_create(&attr, &ctx));
	return ctx;
}

static void ring(struct gnic_dev_qp *d, uint64_t pi)
{
	uint32_t words[2] = {gnic_be32((uint32_t)(pi & 0xffff) << 8), gnic_be32(d->qpn << 8)};
	uint64_t reg;

	if (d->db_mode == GNIC_DB_CPU) {
		gnic_store_rel64(d->cpu_db, pi);
		return;
	}
	memcpy(&reg, words, sizeof(reg));
	gnic_store_sys32(&d->dbrec[GNIC_MLX5_SND_DBR], gnic_be32((uint32_t)(pi & 0xffff)));
	gnic_mmio_store64(d->db_reg, reg);
}

void gt_post_write(struct gnic_dev_qp *d, const void *src, uint32_t lkey, uint64_t raddr,
                   uint32_t rkey, uint32_t len)
{
	uint64_t idx = d->sq_reserved++;
	uint8_t *wqe = d->sq_buf + (idx & (d->sq_wqe_cnt - 1)) * GNIC_MLX5_SEND_WQE_BB;
	struct gnic_mlx5_ctrl_seg *ctrl = (void *)wqe;
	struct gnic_mlx5_raddr_seg *ra = (void *)(wqe + 16);
	struct gnic_mlx5_data_seg *ds = (void *)(wqe + 32);

	memset(wqe, 0, GNIC_MLX5_SEND_WQE_BB);
	ctrl->opmod_idx_opcode =
	    gnic_be32(gnic_mlx5_ctrl_word0(0, (uint16_t)idx, GNIC_MLX5_OPCODE_RDMA_WRITE));
	ctrl->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(d->qpn, 3));
	ctrl->fm_ce_se = GNIC_MLX5_CTRL_CQ_UPDATE;
	ra->raddr = gnic_be64(raddr);
	ra->rkey = gnic_be32(rkey);
	ds->byte_count = gnic_be32(len);
	ds->lkey = gnic_be32(lkey);
	ds->addr = gnic_be64((uintptr_t)src);
	d->wqe_nbb[idx & (d->sq_wqe_cnt - 1)] = 1;
	d->sq_ready = d->sq_reserved;
	d->sq_rung = d->sq_ready;
	ring(d, d->sq_rung);
}

int gt_poll_send(struct gnic_dev_qp *d, uint8_t *syndrome)
{
	uint64_t deadline = t_now_ms() + T_WAIT_MS;
	uint32_t n = d->scq.cqe_cnt;

	for (;;) {
		struct gnic_mlx5_cqe64 *cqe = &d->scq.buf[d->scq_ci & (n - 1)];
		uint8_t op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);
		int opcode;

		if (gnic_mlx5_cqe_sw_owned(op_own, (uint32_t)d->scq_ci, n)) {
			opcode = gnic_mlx5_cqe_opcode(op_own);
			if (syndrome)
				*syndrome = ((struct gnic_mlx5_err_cqe *)cqe)->syndrome;
			d->scq_ci++;
			d->sq_retired = d->sq_rung;
			__atomic_store_n(&d->scq.dbrec[0],
			                 gnic_be32((uint32_t)d->scq_ci & 0xffffff),
			                 __ATOMIC_RELEASE);
			return opcode;
		}
		if (t_now_ms() > deadline)
			T_FAIL("no send CQE on QP %#x within %d ms (ci %llu)", d->qpn, T_WAIT_MS,
			       (unsigned long long)d->scq_ci);
	}
}

void gt_write(struct gnic_dev_qp *d, const void *src, uint32_t lkey, uint64_t raddr, uint32_t rkey,
              uint32_t len)
{
	uint8_t synd = 0;
	int op;

	gt_post_write(d, src, lkey, raddr, rkey, len);
	op = gt_poll_send(d, &synd);
	if (op != GNIC_MLX5_CQE_REQ)
		T_FAIL("WRITE on QP %#x: CQE opcode %d, syndrome %#x", d->qpn, op, synd);
}
