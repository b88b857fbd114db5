// SPDX-License-Identifier: MIT
/*
 * gnic_dev_recv_wait on a receive CQE that carries the SEND's data itself
 * (scatter-to-CQE, format SCATTER_32: what a ConnectX writes for a QP made
 * with scatter-to-CQE on, e.g. by a provider without mlx5dv_create_qp).
 * Nothing is sent to QP b, so the NIC writes no CQE into its receive CQ:
 * the test writes them by hand, as the NIC would, and checks that the
 * data lands in the posted buffer, that a CQE in the plain format leaves the
 * buffer alone, and that data longer than the buffer is refused.
 */
#include "dev_common.h"

#define GUARD 0xee

static void write_cqe(struct gnic_dev_qp *d, uint64_t n, const uint8_t *data, uint32_t len,
                      bool scatter)
{
	struct gnic_mlx5_cqe64 *cqe = &d->rcq.buf[n & (d->rcq.cqe_cnt - 1)];

	memset(cqe, 0, sizeof(*cqe) - 1);
	if (scatter)
		memcpy(cqe, data, len);
	cqe->byte_cnt = gnic_be32(len);
	cqe->wqe_counter = gnic_be16((uint16_t)n);
	cqe->sop_drop_qpn = gnic_be32(d->qpn);
	__atomic_store_n(&cqe->op_own,
	                 (uint8_t)(GNIC_MLX5_CQE_RESP_SEND << 4 |
	                           (scatter ? GNIC_MLX5_INLINE_SCATTER_32 : 0) |
	                           !!(n & d->rcq.cqe_cnt)),
	                 __ATOMIC_RELEASE);
}

int main(void)
{
	struct gnic_qp_attr qa;
	struct pair p;
	uint8_t data[32];
	uint32_t len = 0;

	gnic_qp_attr_init(&qa);
	qa.rq_depth = 16;
	pair_open(&p, &qa, 4096);
	for (int i = 0; i < 32; i++)
		data[i] = (uint8_t)(0xa0 + i);

	t_case("SCATTER_32 CQE: 20 data bytes into the posted buffer");
	memset(p.bbuf, GUARD, 4096);
	CHECK_DEV(gnic_dev_recv_post(p.b, p.bbuf, gnic_mr_lkey(p.bmr), 64));
	write_cqe(p.b, 0, data, 20, true);
	CHECK_DEV(gnic_dev_recv_wait(p.b, &len, NULL));
	CHECK_EQ(len, 20);
	CHECK_MEM(p.bbuf, data, 20);
	CHECK_BYTES(p.bbuf + 20, GUARD, 4096 - 20);

	t_case("SCATTER_32 CQE: all 32 bytes");
	CHECK_DEV(gnic_dev_recv_post(p.b, p.bbuf + 100, gnic_mr_lkey(p.bmr), 32));
	write_cqe(p.b, 1, data, 32, true);
	CHECK_DEV(gnic_dev_recv_wait(p.b, &len, NULL));
	CHECK_EQ(len, 32);
	CHECK_MEM(p.bbuf + 100, data, 32);

	t_case("plain CQE: the NIC wrote the buffer, recv_wait copies nothing");
	memset(p.bbuf, GUARD, 4096);
	CHECK_DEV(gnic_dev_recv_post(p.b, p.bbuf, gnic_mr_lkey(p.bmr), 64));
	write_cqe(p.b, 2, data, 20, false);
	CHECK_DEV(gnic_dev_recv_wait(p.b, &len, NULL));
	CHECK_EQ(len, 20);
	CHECK_BYTES(p.bbuf, GUARD, 4096);

	t_case("SCATTER_32 CQE longer than the buffer: refused, buffer untouched");
	CHECK_DEV(gnic_dev_recv_post(p.b, p.bbuf, gnic_mr_lkey(p.bmr), 8));
	write_cqe(p.b, 3, data, 24, true);
	CHECK_EQ(gnic_dev_recv_wait(p.b, &len, NULL), GNIC_DEV_ERR_INVAL);
	CHECK_EQ(len, 24);
	CHECK_BYTES(p.bbuf, GUARD, 4096);

	pair_close(&p);
	printf("PASS\n");
	return T_EXIT_PASS;
}
