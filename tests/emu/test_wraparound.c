// SPDX-License-Identifier: MIT
/*
 * Queue wraparound: a small SQ (8 WRs) fed WQEs of 1, 3 and 4 basic blocks
 * (one SGE, eight SGEs, 200 B inline) for hundreds of rounds, so WQEs
 * straddle the end of the SQ buffer; small CQs (4 entries) so the CQE owner
 * bit flips hundreds of times; a small RQ the same way. Every byte checked.
 */
#include "common.h"

#define SLOT         512
#define NSLOTS       64
#define WRITE_ROUNDS 400
#define SEND_ROUNDS  300
#define INLINE_LEN   200
#define NSGE         8

static struct t_pair p;
static uint8_t *abuf, *bbuf, *want;
static struct ibv_mr *amr, *bmr;

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* WR n writes slot n % NSLOTS with pattern n; its kind sets the WQE size. */
static uint32_t build_write(struct ibv_send_wr *wr, struct ibv_sge *sg, uint8_t *inl, uint32_t n)
{
	uint8_t *src = abuf + (size_t)(n % NSLOTS) * SLOT * 2; /* gaps between SGEs */
	uint8_t *dst = bbuf + (size_t)(n % NSLOTS) * SLOT;
	uint32_t len = 0;

	*wr = (struct ibv_send_wr){.wr_id = n,
	                           .sg_list = sg,
	                           .opcode = IBV_WR_RDMA_WRITE,
	                           .send_flags = IBV_SEND_SIGNALED,
	                           .wr.rdma = {.remote_addr = (uintptr_t)dst, .rkey = bmr->rkey}};
	switch (n % 3 + (n / 7) % 2) {
	case 0: /* inline: 4 basic blocks */
		t_fill(inl, INLINE_LEN, n);
		sg[0] = (struct ibv_sge){.addr = (uintptr_t)inl, .length = INLINE_LEN};
		wr->num_sge = 1;
		wr->send_flags |= IBV_SEND_INLINE;
		memcpy(want + (dst - bbuf), inl, INLINE_LEN);
		return INLINE_LEN;
	case 1:
	case 3: /* eight SGEs: 3 basic blocks */
		for (int i = 0; i < NSGE; i++) {
			uint32_t l = 1 + (n + (uint32_t)i * 7) % 50;

			t_fill(src + i * 64, l, n * 16 + (uint32_t)i);
			sg[i] = (struct ibv_sge){
			    .addr = (uintptr_t)src + i * 64, .length = l, .lkey = amr->lkey};
			memcpy(want + (dst - bbuf) + len, src + i * 64, l);
			len += l;
		}
		wr->num_sge = NSGE;
		return len;
	default: /* one SGE: 1 basic block */
		t_fill(src, 64, n);
		sg[0] = (struct ibv_sge){.addr = (uintptr_t)src, .length = 64, .lkey = amr->lkey};
		wr->num_sge = 1;
		memcpy(want + (dst - bbuf), src, 64);
		return 64;
	}
}

static void test_write_wrap(void)
{
	uint32_t window = min_u32(p.cap[0].max_send_wr, (uint32_t)p.scq[0]->cqe);
	uint8_t inl[64][INLINE_LEN];
	uint32_t n = 0;

	t_case("%d rounds of %u mixed-size WRITEs, SQ %u WRs, CQ %d entries", WRITE_ROUNDS, window,
	       p.cap[0].max_send_wr, p.scq[0]->cqe);
	CHECK(window >= 1 && window <= 64);
	for (int r = 0; r < WRITE_ROUNDS; r++) {
		struct ibv_send_wr wr[64];
		struct ibv_sge sg[64][NSGE];
		struct ibv_wc wc[64];
		uint32_t first = n;

		memset(bbuf, 0, NSLOTS * SLOT);
		memset(want, 0, NSLOTS * SLOT);
		for (uint32_t k = 0; k < window; k++, n++)
			build_write(&wr[k], sg[k], inl[k], n);
		/* Alternate single posts and one chained post. */
		if (r % 2) {
			for (uint32_t k = 0; k + 1 < window; k++)
				wr[k].next = &wr[k + 1];
			t_post_send(p.qp[0], &wr[0]);
		} else {
			for (uint32_t k = 0; k < window; k++)
				t_post_send(p.qp[0], &wr[k]);
		}
		t_poll(p.scq[0], (int)window, wc, "a window of WRITEs");
		for (uint32_t k = 0; k < window; k++)
			CHECK_WC(&wc[k], first + k, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK_MEM(bbuf, want, NSLOTS * SLOT);
	}
	t_expect_empty(p.scq[0], "no extra completion");
}

/* SENDs of 2 SGEs (or inline) into 2-SGE receives through a small RQ. */
static void test_send_wrap(void)
{
	uint32_t window = min_u32(min_u32(p.cap[1].max_recv_wr, (uint32_t)p.rcq[1]->cqe),
	                          min_u32(p.cap[0].max_send_wr, (uint32_t)p.scq[0]->cqe));
	uint32_t n = 0;

	t_case("%d rounds of %u SEND/RECV, RQ %u WRs, CQ %d entries", SEND_ROUNDS, window,
	       p.cap[1].max_recv_wr, p.rcq[1]->cqe);
	CHECK(window >= 1 && window <= 64);
	for (int r = 0; r < SEND_ROUNDS; r++) {
		struct ibv_wc wc[64];
		uint32_t first = n;

		memset(bbuf, 0, NSLOTS * SLOT);
		memset(want, 0, NSLOTS * SLOT);
		for (uint32_t k = 0; k < window; k++) {
			uint8_t *dst = bbuf + k * SLOT;
			struct ibv_sge rsg[2] = {
			    {.addr = (uintptr_t)dst, .length = 100, .lkey = bmr->lkey},
			    {.addr = (uintptr_t)dst + 256, .length = 200, .lkey = bmr->lkey}};
			struct ibv_recv_wr rwr = {
			    .wr_id = 1000000 + first + k, .sg_list = rsg, .num_sge = 2};

			t_post_recv(p.qp[1], &rwr);
		}
		for (uint32_t k = 0; k < window; k++, n++) {
			uint8_t *src = abuf + k * SLOT, msg[300];
			uint32_t len = 1 + (n * 37) % 300;
			struct ibv_sge ssg[2] = {
			    {.addr = (uintptr_t)src, .length = len / 2, .lkey = amr->lkey},
			    {.addr = (uintptr_t)src + 300,
			     .length = len - len / 2,
			     .lkey = amr->lkey}};
			struct ibv_send_wr wr = {.wr_id = n,
			                         .sg_list = ssg,
			                         .num_sge = 2,
			                         .opcode = IBV_WR_SEND,
			                         .send_flags = IBV_SEND_SIGNALED};

			if (n % 4 == 1 && len <= p.cap[0].max_inline_data)
				wr.send_flags |= IBV_SEND_INLINE;
			t_fill(src, len / 2, n);
			t_fill(src + 300, len - len / 2, n + 0x10000);
			memcpy(msg, src, len / 2);
			memcpy(msg + len / 2, src + 300, len - len / 2);
			memcpy(want + k * SLOT, msg, len < 100 ? len : 100);
			if (len > 100)
				memcpy(want + k * SLOT + 256, msg + 100, len - 100);
			t_post_send(p.qp[0], &wr);
		}
		t_poll(p.scq[0], (int)window, wc, "a window of SENDs");
		for (uint32_t k = 0; k < window; k++)
			CHECK_WC(&wc[k], first + k, IBV_WC_SUCCESS, IBV_WC_SEND);
		t_poll(p.rcq[1], (int)window, wc, "a window of receives");
		for (uint32_t k = 0; k < window; k++) {
			CHECK_WC(&wc[k], 1000000 + first + k, IBV_WC_SUCCESS, IBV_WC_RECV);
			CHECK_EQ(wc[k].byte_len, 1 + ((first + k) * 37) % 300);
		}
		CHECK_MEM(bbuf, want, NSLOTS * SLOT);
	}
	t_expect_empty(p.rcq[1], "no extra receive completion");
}

int main(void)
{
	struct t_qp_caps caps = {
	    .send_wr = 8, .recv_wr = 4, .send_sge = NSGE, .recv_sge = 2, .inline_data = INLINE_LEN};
	struct ibv_context *ctx = t_open(T_DEVICE);
	size_t len = (size_t)NSLOTS * SLOT * 2;

	t_pair_create(&p, ctx, &caps, NULL, 4);
	printf("granted: SQ %u WRs, RQ %u WRs, CQs %d entries\n", p.cap[0].max_send_wr,
	       p.cap[1].max_recv_wr, p.scq[0]->cqe);
	abuf = t_alloc(len, 0);
	bbuf = t_alloc(len, 0);
	want = t_alloc(len, 0);
	amr = t_reg(p.pd, abuf, len, T_ACCESS_ALL);
	bmr = t_reg(p.pd, bbuf, len, T_ACCESS_ALL);

	test_write_wrap();
	test_send_wrap();

	t_case("teardown");
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_pair_destroy(&p);
	CHECK_OK(ibv_close_device(ctx));
	free(abuf);
	free(bbuf);
	free(want);
	printf("PASS\n");
	return T_EXIT_PASS;
}
