// SPDX-License-Identifier: MIT
/*
 * The byte order of an atomic's fetched value, GNIC_EMU_ATOMIC_ENDIAN:
 *
 *   test_atomic_endian host   atomic_cap IBV_ATOMIC_HCA; the value lands in
 *                             host order (what mlx5_core sets where it can)
 *   test_atomic_endian big    atomic_cap IBV_ATOMIC_NONE; the value lands
 *                             as the wire carries it, big-endian
 *
 * Either way the target word is operated on in host order (the mode is the
 * requester's: how it writes the response).
 */
#include "common.h"

static uint64_t expect(bool be, uint64_t v)
{
	return be ? __builtin_bswap64(v) : v;
}

static struct ibv_send_wr fa_wr(struct ibv_sge *sge, uint64_t *target, uint32_t rkey, uint64_t add)
{
	struct ibv_send_wr wr = {.wr_id = 1,
	                         .sg_list = sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
	                         .send_flags = IBV_SEND_SIGNALED};

	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = add;
	return wr;
}

int main(int argc, char **argv)
{
	bool be = argc > 1 && !strcmp(argv[1], "big");
	struct ibv_context *ctx = t_open(T_DEVICE);
	struct ibv_device_attr da;
	struct t_pair p;
	uint8_t *buf = t_alloc(4096, 0);
	struct ibv_mr *mr;
	uint64_t *target = (uint64_t *)buf, *result = (uint64_t *)(buf + 64);
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	t_case("%s: atomic_cap", be ? "big" : "host");
	memset(&da, 0, sizeof(da));
	CHECK_OK(ibv_query_device(ctx, &da));
	CHECK_EQ(da.atomic_cap, be ? IBV_ATOMIC_NONE : IBV_ATOMIC_HCA);

	t_pair_create(&p, ctx, NULL, NULL, 0);
	mr = t_reg(p.pd, buf, 4096, T_ACCESS_ALL);
	sge = (struct ibv_sge){.addr = (uintptr_t)result, .length = 8, .lkey = mr->lkey};

	t_case("FETCH_AND_ADD: the old value in %s order, the target in host order",
	       be ? "big-endian" : "host");
	*target = 0x0102030405060708ull;
	*result = 0;
	wr = fa_wr(&sge, target, mr->rkey, 0x10);
	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], "FETCH_ADD");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	CHECK_EQ(*result, expect(be, 0x0102030405060708ull));
	CHECK_EQ(*target, 0x0102030405060718ull);

	t_case("CMP_AND_SWP that matches: the same order");
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 0x0102030405060718ull;
	wr.wr.atomic.swap = 7;
	wr.wr_id = 2;
	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], "CMP_SWAP");
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	CHECK_EQ(*result, expect(be, 0x0102030405060718ull));
	CHECK_EQ(*target, 7);

	CHECK_OK(ibv_dereg_mr(mr));
	t_pair_destroy(&p);
	CHECK_OK(ibv_close_device(ctx));
	free(buf);
	printf("PASS\n");
	return T_EXIT_PASS;
}
