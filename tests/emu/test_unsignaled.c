// SPDX-License-Identifier: MIT
/*
 * Unsignaled WRs: a run of unsignaled WRITEs closed by one signaled WRITE
 * gives exactly one completion, and that completion frees the SQ slots of the
 * whole run, so many more WRs than the SQ depth go through. With sq_sig_all
 * every WR completes. A full SQ refuses the next WR with ENOMEM.
 */
#include "common.h"
#include "gnic/gnic_mlx5.h"

#define SLOT   64
#define ROUNDS 20

static struct t_pair p;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;

/* WRITE SLOT bytes from A's slot i to B's slot i. */
static struct ibv_send_wr slot_write(struct ibv_sge *sge, uint32_t i, bool signaled)
{
	*sge =
	    (struct ibv_sge){.addr = (uintptr_t)abuf + i * SLOT, .length = SLOT, .lkey = amr->lkey};
	return (struct ibv_send_wr){
	    .wr_id = i,
	    .sg_list = sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	    .wr.rdma = {.remote_addr = (uintptr_t)bbuf + i * SLOT, .rkey = bmr->rkey}};
}

/* ROUNDS x depth WRs, one signaled per round, posted one by one. */
static void test_rounds(uint32_t depth)
{
	uint32_t total = ROUNDS * depth;
	struct ibv_wc wc;

	t_case("%u rounds of %u unsignaled WRITEs + 1 signaled (SQ depth %u)", ROUNDS, depth - 1,
	       depth);
	t_fill(abuf, (size_t)total * SLOT, 11);
	memset(bbuf, 0, (size_t)total * SLOT);
	for (uint32_t r = 0; r < ROUNDS; r++) {
		for (uint32_t k = 0; k < depth; k++) {
			uint32_t i = r * depth + k;
			struct ibv_sge sge;
			struct ibv_send_wr wr = slot_write(&sge, i, k == depth - 1);

			t_post_send(p.qp[0], &wr);
		}
		wc = t_poll1(p.scq[0], "the signaled WRITE closing a round");
		CHECK_WC(&wc, (r + 1) * depth - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		t_expect_empty(p.scq[0], "unsignaled WRITEs give no completion");
		/* RC completes in order: the whole round has landed. */
		CHECK_MEM(bbuf + (size_t)r * depth * SLOT, abuf + (size_t)r * depth * SLOT,
		          (size_t)depth * SLOT);
	}
	CHECK_MEM(bbuf, abuf, (size_t)total * SLOT);
}

/* The same as one chained post per round. */
static void test_chained(uint32_t depth)
{
	struct ibv_send_wr *wr = calloc(depth, sizeof(*wr));
	struct ibv_sge *sge = calloc(depth, sizeof(*sge));
	struct ibv_wc wc;

	CHECK(wr && sge);
	t_case("%d chained posts of %u WRs, last one signaled", ROUNDS, depth);
	t_fill(abuf, (size_t)ROUNDS * depth * SLOT, 12);
	memset(bbuf, 0, (size_t)ROUNDS * depth * SLOT);
	for (uint32_t r = 0; r < ROUNDS; r++) {
		for (uint32_t k = 0; k < depth; k++) {
			wr[k] = slot_write(&sge[k], r * depth + k, k == depth - 1);
			wr[k].next = k + 1 < depth ? &wr[k + 1] : NULL;
		}
		t_post_send(p.qp[0], wr);
		wc = t_poll1(p.scq[0], "the signaled WRITE closing a chain");
		CHECK_WC(&wc, (r + 1) * depth - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		t_expect_empty(p.scq[0], "unsignaled WRITEs give no completion");
	}
	CHECK_MEM(bbuf, abuf, (size_t)ROUNDS * depth * SLOT);
	free(wr);
	free(sge);
}

/* A mix: every 5th signaled, the SQ kept full; completions exactly those. */
static void test_sparse(uint32_t depth)
{
	uint32_t total = 4 * depth + 3, posted = 0, retired = 0, expect_next = 4;
	struct ibv_wc wc;

	t_case("every 5th WRITE signaled, %u WRITEs through a %u-deep SQ", total, depth);
	CHECK_GE(depth, 5); /* else a full window could hold no signaled WR */
	t_fill(abuf, (size_t)total * SLOT, 13);
	memset(bbuf, 0, (size_t)total * SLOT);
	while (retired < total) {
		while (posted < total && posted - retired < depth) {
			struct ibv_sge sge;
			bool sig = posted % 5 == 4 || posted == total - 1;
			struct ibv_send_wr wr = slot_write(&sge, posted, sig);

			t_post_send(p.qp[0], &wr);
			posted++;
		}
		wc = t_poll1(p.scq[0], "a signaled WRITE");
		CHECK_WC(&wc, expect_next, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		retired = (uint32_t)wc.wr_id + 1;
		expect_next = retired + 4 < total ? retired + 4 : total - 1;
	}
	t_expect_empty(p.scq[0], "no extra completion");
	CHECK_MEM(bbuf, abuf, (size_t)total * SLOT);
}

static void test_sig_all(void)
{
	struct t_qp_caps caps;
	struct t_pair q;
	struct ibv_wc wc[10];

	t_case("sq_sig_all=1: every WR completes, IBV_SEND_SIGNALED or not");
	t_qp_caps_default(&caps);
	caps.sq_sig_all = 1;
	t_pair_create(&q, p.ctx, &caps, NULL, 0);
	struct ibv_mr *am = t_reg(q.pd, abuf, 10 * SLOT, T_ACCESS_ALL);
	struct ibv_mr *bm = t_reg(q.pd, bbuf, 10 * SLOT, T_ACCESS_ALL);

	t_fill(abuf, 10 * SLOT, 14);
	memset(bbuf, 0, 10 * SLOT);
	for (uint32_t i = 0; i < 10; i++) {
		struct ibv_sge sge = {
		    .addr = (uintptr_t)abuf + i * SLOT, .length = SLOT, .lkey = am->lkey};
		struct ibv_send_wr wr = {
		    .wr_id = 100 + i,
		    .sg_list = &sge,
		    .num_sge = 1,
		    .opcode = IBV_WR_RDMA_WRITE,
		    .wr.rdma = {.remote_addr = (uintptr_t)bbuf + i * SLOT, .rkey = bm->rkey}};

		t_post_send(q.qp[0], &wr);
	}
	t_poll(q.scq[0], 10, wc, "10 WRITEs on an sq_sig_all QP");
	for (int i = 0; i < 10; i++)
		CHECK_WC(&wc[i], 100 + i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	t_expect_empty(q.scq[0], "ten WRs, ten completions");
	CHECK_MEM(bbuf, abuf, 10 * SLOT);
	CHECK_OK(ibv_dereg_mr(am));
	CHECK_OK(ibv_dereg_mr(bm));
	t_pair_destroy(&q);
}

/* Unsignaled WRs are not retired until a later completion: once the SQ
 * holds max_send_wr of them, the next post is refused. Run last: the QP
 * cannot be used afterwards. */
static void test_full(uint32_t depth)
{
	uint32_t accepted = 0;
	int ret = 0;

	t_case("a full SQ of unsignaled WRs refuses the next WR with ENOMEM");
	while (accepted <= depth * GNIC_MLX5_MAX_WQE_BB) {
		struct ibv_sge sge;
		struct ibv_send_wr wr = slot_write(&sge, accepted % depth, false);
		struct ibv_send_wr *bad = NULL;

		ret = ibv_post_send(p.qp[0], &wr, &bad);
		if (ret) {
			CHECK(bad == &wr);
			break;
		}
		accepted++;
	}
	printf("SQ took %u unsignaled WRs (max_send_wr %u)\n", accepted, depth);
	CHECK_EQ(ret, ENOMEM);
	CHECK_GE(accepted, depth);
	t_expect_empty(p.scq[0], "unsignaled WRs give no completion");
}

int main(void)
{
	struct t_qp_caps caps;
	struct ibv_context *ctx = t_open(T_DEVICE);
	size_t len;
	uint32_t depth;

	t_qp_caps_default(&caps);
	caps.send_wr = 16;
	caps.send_sge = 1;
	t_pair_create(&p, ctx, &caps, NULL, 0);
	depth = p.cap[0].max_send_wr;
	printf("SQ depth granted: %u\n", depth);
	len = (size_t)ROUNDS * depth * SLOT;
	abuf = t_alloc(len, 0);
	bbuf = t_alloc(len, 0);
	amr = t_reg(p.pd, abuf, len, T_ACCESS_ALL);
	bmr = t_reg(p.pd, bbuf, len, T_ACCESS_ALL);

	test_rounds(depth);
	test_chained(depth);
	test_sparse(depth);
	test_sig_all();
	test_full(depth);

	t_case("teardown");
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_pair_destroy(&p);
	CHECK_OK(ibv_close_device(ctx));
	free(abuf);
	free(bbuf);
	printf("PASS\n");
	return T_EXIT_PASS;
}
