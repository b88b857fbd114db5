// SPDX-License-Identifier: MIT
/*
 * Message lengths at the edges of the mlx5 encoding, through the device
 * data path: a data segment's byte_count 0 means 2 GiB to the NIC and bit
 * 31 is the inline flag, so
 *   - zero-length put, get, send and receive carry no data segment and
 *     complete, touching no byte;
 *   - a length of 2^31 or more is refused (GNIC_DEV_ERR_INVAL) before
 *     anything is posted, and the QP goes on working;
 *   - an inline put takes up to the QP's max_inline bytes (the largest the
 *     QP was created for: 828 B, 16 basic blocks), one more is refused.
 */
#include "dev_common.h"

#define LEN   65536
#define GUARD 0xee

static void zero_length_cases(struct pair *p)
{
	uint32_t got = 1;

	t_case("zero-length put and get");
	memset(p->bbuf, GUARD, LEN);
	CHECK_DEV(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr, p->brm.rkey, 0, 0,
	                       NULL));
	CHECK_DEV(gnic_dev_quiet(p->a));
	memset(p->abuf, 0x11, LEN);
	CHECK_DEV(
	    gnic_dev_get_wait(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr, p->brm.rkey, 0));
	CHECK_BYTES(p->bbuf, GUARD, LEN);
	CHECK_BYTES(p->abuf, 0x11, LEN);

	t_case("zero-length send into a zero-length receive");
	CHECK_DEV(gnic_dev_recv_post(p->b, p->bbuf, gnic_mr_lkey(p->bmr), 0));
	CHECK_DEV(gnic_dev_send(p->a, p->abuf, gnic_mr_lkey(p->amr), 0, 0));
	CHECK_DEV(gnic_dev_recv_wait(p->b, &got, NULL));
	CHECK_EQ(got, 0);
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK_BYTES(p->bbuf, GUARD, LEN);

	t_case("zero-length send into a 64-byte receive");
	CHECK_DEV(gnic_dev_recv_post(p->b, p->bbuf, gnic_mr_lkey(p->bmr), 64));
	CHECK_DEV(gnic_dev_send(p->a, p->abuf, gnic_mr_lkey(p->amr), 0, 0));
	got = 1;
	CHECK_DEV(gnic_dev_recv_wait(p->b, &got, NULL));
	CHECK_EQ(got, 0);
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK_BYTES(p->bbuf, GUARD, LEN);
}

static void too_long_cases(struct pair *p)
{
	const uint32_t lens[] = {0x80000000u, 0x80000040u, 0xffffffffu};

	t_case("lengths of 2^31 and more are refused, nothing posted");
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint64_t reserved = p->a->sq_reserved;

		CHECK_EQ(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr, p->brm.rkey,
		                      lens[i], 0, NULL),
		         GNIC_DEV_ERR_INVAL);
		CHECK_EQ(gnic_dev_get(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr, p->brm.rkey,
		                      lens[i], NULL),
		         GNIC_DEV_ERR_INVAL);
		CHECK_EQ(gnic_dev_send(p->a, p->abuf, gnic_mr_lkey(p->amr), lens[i], 0),
		         GNIC_DEV_ERR_INVAL);
		CHECK_EQ(gnic_dev_put_signal(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr,
		                             p->brm.rkey, lens[i], p->brm.addr + 8, p->brm.rkey, 1,
		                             0),
		         GNIC_DEV_ERR_INVAL);
		CHECK_EQ(gnic_dev_recv_post(p->b, p->bbuf, gnic_mr_lkey(p->bmr), lens[i]),
		         GNIC_DEV_ERR_INVAL);
		CHECK_EQ(p->a->sq_reserved, reserved);
	}
	t_case("the QP still works");
	CHECK_EQ(gnic_dev_failed(p->a), 0);
	memset(p->bbuf, GUARD, LEN);
	CHECK_DEV(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr, p->brm.rkey, 4096,
	                       0, NULL));
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK_MEM(p->bbuf, p->abuf, 4096);
}

static void inline_cases(struct pair *p)
{
	uint32_t max = p->a->max_inline;
	uint8_t src[1024];

	t_case("inline put of max_inline (%u) bytes, then one more", max);
	CHECK_EQ(max, 828);
	for (uint32_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 5 + 1);
	for (uint32_t len = 1; len <= max; len = len < 64 ? len * 2 : len + 191) {
		memset(p->bbuf, GUARD, 2048);
		CHECK_DEV(gnic_dev_put_inline(p->a, src, len, p->brm.addr + 16, p->brm.rkey, 0));
		CHECK_DEV(gnic_dev_quiet(p->a));
		CHECK_MEM(p->bbuf + 16, src, len);
		CHECK_BYTES(p->bbuf, GUARD, 16);
		CHECK_BYTES(p->bbuf + 16 + len, GUARD, 2048 - 16 - len);
	}
	memset(p->bbuf, GUARD, 2048);
	CHECK_DEV(gnic_dev_put_inline(p->a, src, max, p->brm.addr, p->brm.rkey, 0));
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK_MEM(p->bbuf, src, max);
	CHECK_EQ(gnic_dev_put_inline(p->a, src, max + 1, p->brm.addr, p->brm.rkey, 0),
	         GNIC_DEV_ERR_INVAL);
	CHECK_EQ(gnic_dev_failed(p->a), 0);
}

int main(void)
{
	struct gnic_qp_attr qa;
	struct pair p;

	gnic_qp_attr_init(&qa);
	qa.max_inline = 828; /* the most a QP can be made for */
	qa.sq_depth = 64;
	qa.rq_depth = 16;
	pair_open(&p, &qa, LEN);
	zero_length_cases(&p);
	too_long_cases(&p);
	inline_cases(&p);
	pair_close(&p);
	printf("PASS\n");
	return T_EXIT_PASS;
}
