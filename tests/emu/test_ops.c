// SPDX-License-Identifier: MIT
/*
 * Every RC operation between two connected QPs of one process: RDMA WRITE
 * (several sizes, multi-SGE, inline), WRITE_IMM, SEND/RECV (+IMM, inline,
 * scatter), READ, atomics; then a chain of mixed WRs. Every byte around each
 * target is checked (guard bytes stay untouched), and every completion's
 * wr_id, opcode, byte_len, imm and count.
 */
#include <endian.h>

#include "common.h"

#define BUF_SIZE (4u << 20)
#define GUARD    0xee

static struct t_pair p;
static uint8_t *abuf, *bbuf, *want; /* A's memory, B's memory, B's expected */
static struct ibv_mr *amr, *bmr;
static uint32_t seed = 1;

static void reset_buffers(void)
{
	memset(bbuf, GUARD, BUF_SIZE);
	memset(want, GUARD, BUF_SIZE);
	t_fill(abuf, BUF_SIZE, ++seed);
}

static struct ibv_sge sge_a(size_t off, uint32_t len)
{
	return (struct ibv_sge){.addr = (uintptr_t)abuf + off, .length = len, .lkey = amr->lkey};
}

static struct ibv_send_wr write_wr(uint64_t wr_id, struct ibv_sge *sg, int nsge, size_t boff)
{
	return (struct ibv_send_wr){
	    .wr_id = wr_id,
	    .sg_list = sg,
	    .num_sge = nsge,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)bbuf + boff, .rkey = bmr->rkey}};
}

static void expect_send_cqe(uint64_t wr_id, enum ibv_wc_opcode op, const char *what)
{
	struct ibv_wc wc = t_poll1(p.scq[0], what);

	CHECK_WC(&wc, wr_id, IBV_WC_SUCCESS, op);
	CHECK_EQ(wc.qp_num, p.qp[0]->qp_num);
	t_expect_empty(p.scq[0], "one WR, one completion");
}

/* WRITE of len bytes from A+aoff to B+boff; B must hold exactly those bytes. */
static void test_write(uint32_t len, size_t aoff, size_t boff)
{
	struct ibv_sge sge = sge_a(aoff, len);
	struct ibv_send_wr wr = write_wr(len, &sge, 1, boff);

	t_case("RDMA WRITE %u bytes (local +%zu, remote +%zu)", len, aoff, boff);
	reset_buffers();
	t_post_send(p.qp[0], &wr);
	expect_send_cqe(len, IBV_WC_RDMA_WRITE, "RDMA WRITE");
	memcpy(want + boff, abuf + aoff, len);
	CHECK_MEM(bbuf, want, BUF_SIZE);
	t_expect_empty(p.rcq[1], "a plain WRITE consumes no receive");
}

/* Zero-length WRITE and SEND, with no SGE and with one empty SGE (a zero
 * length means nothing, not mlx5's "byte_count 0 = 2 GiB"). Run first:
 * nothing else has warmed up the engine's buffers yet. */
static void test_zero_length(void)
{
	struct ibv_sge empty = sge_a(0, 0);
	struct ibv_wc wc;

	for (int nsge = 0; nsge < 2; nsge++) {
		struct ibv_send_wr wr = write_wr(20 + nsge, &empty, nsge, 0);

		t_case("zero-length RDMA WRITE, %d SGE", nsge);
		reset_buffers();
		t_post_send(p.qp[0], &wr);
		expect_send_cqe(20 + nsge, IBV_WC_RDMA_WRITE, "zero-length WRITE");
		CHECK_MEM(bbuf, want, BUF_SIZE);

		t_case("zero-length SEND, %d SGE", nsge);
		wr.opcode = IBV_WR_SEND;
		wr.wr_id = 30 + nsge;
		t_post_recv_buf(p.qp[1], 40 + nsge, bbuf, 64, bmr->lkey);
		t_post_send(p.qp[0], &wr);
		expect_send_cqe(30 + nsge, IBV_WC_SEND, "zero-length SEND");
		wc = t_poll1(p.rcq[1], "zero-length receive");
		CHECK_WC(&wc, 40 + nsge, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, 0);
		CHECK_MEM(bbuf, want, BUF_SIZE);
	}
}

/* Three SGEs gathered into one contiguous remote range. */
static void test_write_multi_sge(void)
{
	struct ibv_sge sg[3] = {sge_a(0, 100), sge_a(1000, 1), sge_a(5003, 4000)};
	struct ibv_send_wr wr = write_wr(77, sg, 3, 17);
	size_t off = 17;

	t_case("RDMA WRITE gathering 3 SGEs");
	reset_buffers();
	t_post_send(p.qp[0], &wr);
	expect_send_cqe(77, IBV_WC_RDMA_WRITE, "multi-SGE WRITE");
	for (int i = 0; i < 3; i++) {
		memcpy(want + off, (void *)(uintptr_t)sg[i].addr, sg[i].length);
		off += sg[i].length;
	}
	CHECK_MEM(bbuf, want, BUF_SIZE);
}

/* Inline data is copied at post time: the source may change right after,
 * and need not be registered at all. */
static void test_write_inline(uint32_t len)
{
	uint8_t src[512];
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = len, .lkey = 0};
	struct ibv_send_wr wr = write_wr(500 + len, &sge, 1, 4096 + 3);

	t_case("inline RDMA WRITE %u bytes from unregistered memory", len);
	CHECK(len <= sizeof(src) && len <= p.cap[0].max_inline_data);
	reset_buffers();
	t_fill(src, len, 999);
	memcpy(want + 4096 + 3, src, len);
	wr.send_flags |= IBV_SEND_INLINE;
	t_post_send(p.qp[0], &wr);
	memset(src, 0, sizeof(src));
	expect_send_cqe(500 + len, IBV_WC_RDMA_WRITE, "inline WRITE");
	CHECK_MEM(bbuf, want, BUF_SIZE);
}

static void test_write_imm(uint32_t len)
{
	struct ibv_sge sge = sge_a(64, len);
	struct ibv_send_wr wr = write_wr(900, &sge, len ? 1 : 0, 8192);
	uint8_t *rbuf = bbuf + BUF_SIZE - 4096;
	struct ibv_wc wc;

	t_case("RDMA WRITE_IMM %u bytes", len);
	reset_buffers();
	/* The receive is consumed, but its buffer is not written. */
	t_post_recv_buf(p.qp[1], 901, rbuf, 4096, bmr->lkey);
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(0x12345678 + len);
	t_post_send(p.qp[0], &wr);
	expect_send_cqe(900, IBV_WC_RDMA_WRITE, "WRITE_IMM (requester)");
	wc = t_poll1(p.rcq[1], "WRITE_IMM receive completion");
	CHECK_WC(&wc, 901, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(wc.imm_data, htobe32(0x12345678 + len));
	CHECK_EQ(wc.byte_len, len);
	CHECK_EQ(wc.qp_num, p.qp[1]->qp_num);
	memcpy(want + 8192, abuf + 64, len);
	CHECK_MEM(bbuf, want, BUF_SIZE);
	t_expect_empty(p.rcq[1], "one receive consumed");
}

static void test_send(uint32_t len, bool imm, bool inl)
{
	struct ibv_sge sge = sge_a(300, len);
	struct ibv_send_wr wr = {.wr_id = 1000 + len,
	                         .sg_list = &sge,
	                         .num_sge = len ? 1 : 0,
	                         .opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0),
	                         .imm_data = htobe32(0xa0b0c0d0)};
	struct ibv_wc wc;

	t_case("SEND%s%s %u bytes", imm ? "_IMM" : "", inl ? " inline" : "", len);
	reset_buffers();
	t_post_recv_buf(p.qp[1], 2000 + len, bbuf + 40, 1u << 20, bmr->lkey);
	t_post_send(p.qp[0], &wr);
	expect_send_cqe(1000 + len, IBV_WC_SEND, "SEND");
	wc = t_poll1(p.rcq[1], "receive completion");
	CHECK_WC(&wc, 2000 + len, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, len);
	CHECK_EQ(wc.qp_num, p.qp[1]->qp_num);
	CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm);
	if (imm)
		CHECK_EQ(wc.imm_data, htobe32(0xa0b0c0d0));
	memcpy(want + 40, abuf + 300, len);
	CHECK_MEM(bbuf, want, BUF_SIZE);
}

/* A 2-SGE send scattered over a 3-SGE receive, the last one partly filled. */
static void test_send_scatter(void)
{
	struct ibv_sge ssg[2] = {sge_a(0, 600), sge_a(10000, 400)};
	struct ibv_send_wr wr = {.wr_id = 3000,
	                         .sg_list = ssg,
	                         .num_sge = 2,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};
	size_t roff[3] = {100, 5000, 70000};
	uint32_t rlen[3] = {7, 64, 3000};
	struct ibv_sge rsg[3];
	struct ibv_recv_wr rwr = {.wr_id = 3001, .sg_list = rsg, .num_sge = 3};
	uint8_t msg[1000];
	size_t got = 0;
	struct ibv_wc wc;

	t_case("SEND 2 SGEs scattered into a 3-SGE receive");
	reset_buffers();
	for (int i = 0; i < 3; i++)
		rsg[i] = (struct ibv_sge){
		    .addr = (uintptr_t)bbuf + roff[i], .length = rlen[i], .lkey = bmr->lkey};
	t_post_recv(p.qp[1], &rwr);
	t_post_send(p.qp[0], &wr);
	expect_send_cqe(3000, IBV_WC_SEND, "scatter SEND");
	wc = t_poll1(p.rcq[1], "scatter receive");
	CHECK_WC(&wc, 3001, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 1000);
	memcpy(msg, abuf, 600);
	memcpy(msg + 600, abuf + 10000, 400);
	for (int i = 0; i < 3 && got < sizeof(msg); i++) {
		size_t n = rlen[i] < sizeof(msg) - got ? rlen[i] : sizeof(msg) - got;

		memcpy(want + roff[i], msg + got, n);
		got += n;
	}
	CHECK_MEM(bbuf, want, BUF_SIZE);
}

/* Receives are consumed in posting order, one per message. */
static void test_send_order(void)
{
	struct ibv_wc wc[8];

	t_case("8 SENDs consume 8 receives in order");
	reset_buffers();
	for (int i = 0; i < 8; i++)
		t_post_recv_buf(p.qp[1], 4000 + i, bbuf + i * 256, 256, bmr->lkey);
	for (int i = 0; i < 8; i++) {
		struct ibv_sge sge = sge_a(i * 1000, 10 + i);
		struct ibv_send_wr wr = {.wr_id = 5000 + i,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED};

		t_post_send(p.qp[0], &wr);
		memcpy(want + i * 256, abuf + i * 1000, 10 + i);
	}
	t_poll(p.scq[0], 8, wc, "8 SEND completions");
	for (int i = 0; i < 8; i++)
		CHECK_WC(&wc[i], 5000 + i, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_poll(p.rcq[1], 8, wc, "8 receive completions");
	for (int i = 0; i < 8; i++) {
		CHECK_WC(&wc[i], 4000 + i, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc[i].byte_len, 10 + i);
	}
	CHECK_MEM(bbuf, want, BUF_SIZE);
	t_expect_empty(p.rcq[1], "8 receives, 8 completions");
}

/* READ len bytes of B+boff into A+aoff (scattered over nsge local SGEs). */
static void test_read(uint32_t len, int nsge)
{
	uint8_t *dst = abuf + BUF_SIZE / 2, *awant = want; /* reuse want for A's side */
	struct ibv_sge sg[3];
	uint32_t per = len / (uint32_t)nsge;
	struct ibv_send_wr wr = {
	    .wr_id = 6000 + len,
	    .sg_list = sg,
	    .num_sge = nsge,
	    .opcode = IBV_WR_RDMA_READ,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)bbuf + 33, .rkey = bmr->rkey}};
	struct ibv_wc wc;
	size_t off = 0;

	t_case("RDMA READ %u bytes into %d SGEs", len, nsge);
	t_fill(bbuf, BUF_SIZE, ++seed);
	memset(dst, GUARD, BUF_SIZE / 2);
	memset(awant, GUARD, BUF_SIZE / 2);
	for (int i = 0; i < nsge; i++) {
		uint32_t n = i == nsge - 1 ? len - per * (uint32_t)i : per;
		size_t loff = (size_t)i * (len + 4096) + 5; /* gaps between SGEs */

		sg[i] =
		    (struct ibv_sge){.addr = (uintptr_t)dst + loff, .length = n, .lkey = amr->lkey};
		memcpy(awant + loff, bbuf + 33 + off, n);
		off += n;
	}
	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], "RDMA READ");
	CHECK_WC(&wc, 6000 + len, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_EQ(wc.byte_len, len);
	CHECK_MEM(dst, awant, BUF_SIZE / 2);
	t_expect_empty(p.rcq[1], "a READ consumes no receive");
}

/* A WRITE and a READ whose source and target overlap in one MR, shifted by
 * `shift` bytes either way. A NIC reads a message before it lands it, so the
 * target must end up holding the source's bytes as they were before the
 * operation (memmove's result): every byte, the last one too. */
static void test_overlap(uint32_t len, long shift, bool read)
{
	size_t src = BUF_SIZE / 4, dst = (size_t)((long)src + shift);
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	t_case("RDMA %s %u bytes onto itself shifted by %ld", read ? "READ" : "WRITE", len, shift);
	t_fill(abuf, BUF_SIZE, ++seed);
	memcpy(want, abuf, BUF_SIZE);
	memmove(want + dst, abuf + src, len);
	/* READ: the remote (source) and the local SGE (target) are both in A */
	sge = sge_a(read ? dst : src, len);
	wr = (struct ibv_send_wr){
	    .wr_id = 7000 + len,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)abuf + (read ? src : dst), .rkey = amr->rkey}};
	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], read ? "overlapping READ" : "overlapping WRITE");
	CHECK_WC(&wc, 7000 + len, IBV_WC_SUCCESS, read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE);
	CHECK_MEM(abuf, want, BUF_SIZE);
}

static struct ibv_send_wr atomic_wr(uint64_t wr_id, struct ibv_sge *sge, enum ibv_wr_opcode op,
                                    uint64_t *target, uint64_t cmp_add, uint64_t swap)
{
	return (struct ibv_send_wr){.wr_id = wr_id,
	                            .sg_list = sge,
	                            .num_sge = 1,
	                            .opcode = op,
	                            .send_flags = IBV_SEND_SIGNALED,
	                            .wr.atomic = {.remote_addr = (uintptr_t)target,
	                                          .compare_add = cmp_add,
	                                          .swap = swap,
	                                          .rkey = bmr->rkey}};
}

/* Atomics work on 8 bytes in host byte order; the old value comes back. */
static void test_atomics(void)
{
	uint64_t *target = (uint64_t *)(bbuf + 4096 + 8), *result = (uint64_t *)(abuf + 8);
	struct ibv_sge sge = {.addr = (uintptr_t)result, .length = 8, .lkey = amr->lkey};
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	t_case("ATOMIC FETCH_AND_ADD");
	reset_buffers();
	*target = 0x0102030405060708ull;
	*result = 0;
	wr = atomic_wr(7001, &sge, IBV_WR_ATOMIC_FETCH_AND_ADD, target, 0x1000000000000001ull, 0);
	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], "FETCH_ADD");
	CHECK_WC(&wc, 7001, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(*result, 0x0102030405060708ull);
	CHECK_EQ(*target, 0x1102030405060709ull);
	CHECK_BYTES(bbuf, GUARD, 4096 + 8);
	CHECK_BYTES(bbuf + 4096 + 16, GUARD, 64);

	t_case("ATOMIC FETCH_AND_ADD wraps at 64 bits");
	*target = 0xffffffffffffffffull;
	wr = atomic_wr(7002, &sge, IBV_WR_ATOMIC_FETCH_AND_ADD, target, 2, 0);
	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], "FETCH_ADD wrap");
	CHECK_WC(&wc, 7002, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	CHECK_EQ(*result, 0xffffffffffffffffull);
	CHECK_EQ(*target, 1);

	t_case("ATOMIC CMP_AND_SWP that matches");
	*target = 0x1122334455667788ull;
	wr = atomic_wr(7003, &sge, IBV_WR_ATOMIC_CMP_AND_SWP, target, 0x1122334455667788ull,
	               0xdeadbeefcafef00dull);
	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], "CMP_SWAP (match)");
	CHECK_WC(&wc, 7003, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(*result, 0x1122334455667788ull);
	CHECK_EQ(*target, 0xdeadbeefcafef00dull);

	t_case("ATOMIC CMP_AND_SWP that does not match");
	wr = atomic_wr(7004, &sge, IBV_WR_ATOMIC_CMP_AND_SWP, target, 0x1122334455667788ull,
	               0x0123456789abcdefull);
	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], "CMP_SWAP (no match)");
	CHECK_WC(&wc, 7004, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	CHECK_EQ(*result, 0xdeadbeefcafef00dull);
	CHECK_EQ(*target, 0xdeadbeefcafef00dull);
	t_expect_empty(p.scq[0], "four atomics, four completions");
}

/* One post of six different WRs: completions in order, one each. */
static void test_chain(void)
{
	struct ibv_sge s_w = sge_a(0, 128), s_r = {0}, s_s = sge_a(256, 32), s_fa = {0}, s_cs = {0},
	               s_wi = sge_a(512, 16);
	uint64_t *t1 = (uint64_t *)(bbuf + 65536), *t2 = t1 + 1;
	uint8_t *rdst = abuf + BUF_SIZE / 2;
	struct ibv_send_wr wr[6];
	struct ibv_wc wc[6];
	static const enum ibv_wc_opcode ops[6] = {IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
	                                          IBV_WC_SEND,       IBV_WC_FETCH_ADD,
	                                          IBV_WC_COMP_SWAP,  IBV_WC_RDMA_WRITE};

	t_case("chain WRITE, READ, SEND, FETCH_ADD, CMP_SWAP, WRITE_IMM in one post");
	reset_buffers();
	memset(rdst, 0, 4096);
	*t1 = 40;
	*t2 = 50;
	memset(bbuf + 131072, 0x3c, 64); /* what the READ fetches */
	s_r = (struct ibv_sge){.addr = (uintptr_t)rdst, .length = 64, .lkey = amr->lkey};
	s_fa = (struct ibv_sge){.addr = (uintptr_t)(rdst + 1024), .length = 8, .lkey = amr->lkey};
	s_cs = (struct ibv_sge){.addr = (uintptr_t)(rdst + 2048), .length = 8, .lkey = amr->lkey};
	wr[0] = write_wr(8000, &s_w, 1, 0);
	wr[1] = write_wr(8001, &s_r, 1, 131072);
	wr[1].opcode = IBV_WR_RDMA_READ;
	wr[2] = (struct ibv_send_wr){.wr_id = 8002,
	                             .sg_list = &s_s,
	                             .num_sge = 1,
	                             .opcode = IBV_WR_SEND,
	                             .send_flags = IBV_SEND_SIGNALED};
	wr[3] = atomic_wr(8003, &s_fa, IBV_WR_ATOMIC_FETCH_AND_ADD, t1, 2, 0);
	wr[4] = atomic_wr(8004, &s_cs, IBV_WR_ATOMIC_CMP_AND_SWP, t2, 50, 51);
	wr[5] = write_wr(8005, &s_wi, 1, 1024);
	wr[5].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[5].imm_data = htobe32(7);
	for (int i = 0; i < 5; i++)
		wr[i].next = &wr[i + 1];
	t_post_recv_buf(p.qp[1], 8100, bbuf + 200000, 64, bmr->lkey);
	t_post_recv_buf(p.qp[1], 8101, bbuf + 300000, 64, bmr->lkey);
	t_post_send(p.qp[0], wr);

	t_poll(p.scq[0], 6, wc, "6 chained WRs");
	for (int i = 0; i < 6; i++)
		CHECK_WC(&wc[i], 8000 + i, IBV_WC_SUCCESS, ops[i]);
	t_expect_empty(p.scq[0], "six WRs, six completions");
	t_poll(p.rcq[1], 2, wc, "SEND and WRITE_IMM receives");
	CHECK_WC(&wc[0], 8100, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc[0].byte_len, 32);
	CHECK_WC(&wc[1], 8101, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(wc[1].imm_data, htobe32(7));
	CHECK_EQ(wc[1].byte_len, 16);

	CHECK_BYTES(rdst, 0x3c, 64);
	CHECK_EQ(*(uint64_t *)(rdst + 1024), 40);
	CHECK_EQ(*(uint64_t *)(rdst + 2048), 50);
	CHECK_EQ(*t1, 42);
	CHECK_EQ(*t2, 51);
	memcpy(want, abuf, 128);
	memcpy(want + 1024, abuf + 512, 16);
	memcpy(want + 200000, abuf + 256, 32);
	memcpy(want + 65536, t1, 16);
	memset(want + 131072, 0x3c, 64);
	CHECK_MEM(bbuf, want, BUF_SIZE);
}

int main(void)
{
	struct t_qp_caps caps;
	struct ibv_context *ctx = t_open(T_DEVICE);

	t_qp_caps_default(&caps);
	caps.inline_data = 256;
	t_pair_create(&p, ctx, &caps, NULL, 0);
	abuf = t_alloc(BUF_SIZE, 0);
	bbuf = t_alloc(BUF_SIZE, 0);
	want = t_alloc(BUF_SIZE, 0);
	amr = t_reg(p.pd, abuf, BUF_SIZE, T_ACCESS_ALL);
	bmr = t_reg(p.pd, bbuf, BUF_SIZE, T_ACCESS_ALL);

	test_zero_length();
	test_write(1, 0, 0);
	test_write(64, 0, 64);
	test_write(4096, 0, 4096);
	test_write(4097, 1, 3);
	test_write(1u << 20, 0, 0);
	test_write(1u << 20, 7, (1u << 20) + 5);
	test_write_multi_sge();
	test_write_inline(1);
	test_write_inline(100);
	test_write_inline(p.cap[0].max_inline_data < 256 ? p.cap[0].max_inline_data : 256);
	test_write_imm(4096);
	test_write_imm(0);
	test_send(1000, false, false);
	test_send(1u << 20, false, false);
	test_send(0, false, false);
	test_send(64, true, false);
	test_send(100, false, true);
	test_send_scatter();
	test_send_order();
	test_read(1, 1);
	test_read(4096, 1);
	test_read(1u << 20, 1);
	test_read(10000, 3);
	for (int rd = 0; rd < 2; rd++) {
		test_overlap(64, 1, rd);
		test_overlap(64, -1, rd);
		test_overlap(4096, 7, rd);
		test_overlap(1u << 20, 4096, rd);
		test_overlap(1u << 20, -3, rd);
	}
	test_atomics();
	test_chain();

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
