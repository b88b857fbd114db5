/* SPDX-License-Identifier: MIT */
/*
 * Every device data-path operation from one CPU thread, through gnic-emu:
 * put, inline put, get, atomics, signals, send/recv, fence, quiet, on a
 * grid-shared QP and on an exclusive one. Every byte is checked.
 */
#include "dev_common.h"

#define TMO 5000000000ull

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void test_put(struct pair *p)
{
	static const uint32_t sizes[] = {1, 64, 4096, 65536};
	size_t off = 0;

	t_case("put");
	for (unsigned i = 0; i < 4; i++) {
		fill(p->abuf + off, sizes[i], (uint8_t)i);
		CHECK_DEV(gnic_dev_put(p->a, p->abuf + off, gnic_mr_lkey(p->amr), p->brm.addr + off,
		                       p->brm.rkey, sizes[i], 0, NULL));
		off += sizes[i];
	}
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK(memcmp(p->abuf, p->bbuf, off) == 0);
	CHECK_EQ(p->bbuf[off], 0); /* nothing beyond */
}

static void test_put_inline(struct pair *p)
{
	uint8_t src[64];

	t_case("put_inline");
	for (uint32_t len = 1; len <= p->a->max_inline && len <= sizeof(src); len += 13) {
		fill(src, len, (uint8_t)len);
		CHECK_DEV(
		    gnic_dev_put_inline(p->a, src, len, p->brm.addr + 4096 * len, p->brm.rkey, 0));
		memset(src, 0xee, sizeof(src)); /* inline: the source is free at once */
		CHECK_DEV(gnic_dev_quiet(p->a));
		fill(src, len, (uint8_t)len);
		CHECK(memcmp(p->bbuf + 4096 * len, src, len) == 0);
	}
	CHECK_EQ(gnic_dev_put_inline(p->a, src, p->a->max_inline + 1, p->brm.addr, p->brm.rkey, 0),
	         GNIC_DEV_ERR_INVAL);
}

static void test_get(struct pair *p)
{
	t_case("get");
	fill(p->bbuf + 8192, 3000, 42);
	memset(p->abuf, 0, 3000);
	CHECK_DEV(gnic_dev_get_wait(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr + 8192,
	                            p->brm.rkey, 3000));
	CHECK(memcmp(p->abuf, p->bbuf + 8192, 3000) == 0);
}

static void test_atomics(struct pair *p)
{
	uint64_t *word = (uint64_t *)(p->bbuf + 64);
	uint64_t raddr = p->brm.addr + 64, old = 0;

	t_case("atomics");
	*word = 1000;
	CHECK_DEV(gnic_dev_atomic_fetch_add(p->a, raddr, p->brm.rkey, 5, &old));
	CHECK_EQ(old, 1000);
	CHECK_EQ(*word, 1005);
	CHECK_DEV(gnic_dev_atomic_cas(p->a, raddr, p->brm.rkey, 1005, 77, &old));
	CHECK_EQ(old, 1005);
	CHECK_EQ(*word, 77);
	CHECK_DEV(gnic_dev_atomic_cas(p->a, raddr, p->brm.rkey, 1, 99, &old)); /* no match */
	CHECK_EQ(old, 77);
	CHECK_EQ(*word, 77);
}

static void test_put_signal(struct pair *p)
{
	uint64_t *sig = (uint64_t *)(p->bbuf + 128);

	t_case("put_signal / signal / wait_signal");
	*sig = 0;
	fill(p->abuf + 20000, 1000, 9);
	CHECK_DEV(gnic_dev_put_signal(p->a, p->abuf + 20000, gnic_mr_lkey(p->amr),
	                              p->brm.addr + 20000, p->brm.rkey, 1000, p->brm.addr + 128,
	                              p->brm.rkey, 1, 0));
	CHECK_DEV(gnic_dev_wait_signal(sig, GNIC_CMP_GE, 1, TMO));
	CHECK(memcmp(p->abuf + 20000, p->bbuf + 20000, 1000) == 0);
	CHECK_DEV(gnic_dev_signal(p->a, p->brm.addr + 128, p->brm.rkey, 41, 0));
	CHECK_DEV(gnic_dev_wait_signal(sig, GNIC_CMP_EQ, 42, TMO));
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK_EQ(*sig, 42);
	CHECK_EQ(gnic_dev_wait_signal(sig, GNIC_CMP_GT, 42, 20000000), GNIC_DEV_ERR_TIMEOUT);
}

static void test_send_recv(struct pair *p)
{
	uint32_t len = 0, imm = 1;

	t_case("send / recv");
	memset(p->bbuf + 30000, 0, 512);
	CHECK_DEV(gnic_dev_recv_post(p->b, p->bbuf + 30000, gnic_mr_lkey(p->bmr), 512));
	fill(p->abuf + 40000, 300, 3);
	CHECK_DEV(gnic_dev_send(p->a, p->abuf + 40000, gnic_mr_lkey(p->amr), 300, 0));
	CHECK_DEV(gnic_dev_recv_wait(p->b, &len, &imm));
	CHECK_EQ(len, 300);
	CHECK(memcmp(p->abuf + 40000, p->bbuf + 30000, 300) == 0);
	CHECK_EQ(p->bbuf[30000 + 300], 0);
	CHECK_DEV(gnic_dev_quiet(p->a));
}

static void test_fence(struct pair *p)
{
	t_case("get, fence, put of what was read");
	fill(p->bbuf + 50000, 256, 77);
	CHECK_DEV(gnic_dev_get(p->a, p->abuf + 50000, gnic_mr_lkey(p->amr), p->brm.addr + 50000,
	                       p->brm.rkey, 256, NULL));
	CHECK_DEV(gnic_dev_fence(p->a));
	CHECK_DEV(gnic_dev_put(p->a, p->abuf + 50000, gnic_mr_lkey(p->amr), p->brm.addr + 51000,
	                       p->brm.rkey, 256, 0, NULL));
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK(memcmp(p->bbuf + 50000, p->bbuf + 51000, 256) == 0);
}

static void test_many(struct pair *p)
{
	/* Many times the SQ (space must come back), and past the 16-bit WQE
	 * counter: a never-written doorbell half once read as "rung up to
	 * 65536" when the index neared the wrap (found on the H200). */
	const unsigned n = 70000;

	t_case("%u puts through a %u-BB SQ", n, p->a->sq_wqe_cnt);
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = i;

		memcpy(p->abuf + 8 * (i % 1024), &v, 8);
		CHECK_DEV(gnic_dev_put(p->a, p->abuf + 8 * (i % 1024), gnic_mr_lkey(p->amr),
		                       p->brm.addr + 8 * (i % 1024), p->brm.rkey, 8, 0, NULL));
		if (i % 64 == 63) /* drained SQs near the wrap triggered the bug */
			CHECK_DEV(gnic_dev_quiet(p->a));
	}
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK(memcmp(p->abuf, p->bbuf, 8 * 1024) == 0);
	CHECK_EQ(dev_sq_done(p->a), p->a->sq_reserved);
}

/* A quiet right behind unsignaled puts, all rung by one doorbell: the
 * engine then sees the WRITEs and the quiet's NOP in one burst. The NOP's
 * CQE needs the WRITEs acknowledged; gnic-emu once asked for that ACK only
 * on the burst's last WQE (the NOP, which sends nothing), so the quiet
 * waited for the retransmission timer (67 ms on the H200 per kernel). With
 * no retries allowed, that wait is an error here instead of a delay. */
static void test_quiet_behind_batch(void)
{
	struct gnic_qp_attr attr;
	struct pair p;

	t_case("quiet behind 5 batched unsignaled puts: no retransmission needed");
	gnic_qp_attr_init(&attr);
	attr.db_batch = 64; /* the puts are rung together with the NOP */
	attr.retry_cnt = 0;
	attr.timeout = 16; /* 268 ms: a real ACK comes long before */
	pair_open(&p, &attr, 4096);
	for (int round = 0; round < 3; round++) {
		fill(p.abuf, 5 * 64, (uint8_t)(round + 40));
		for (int i = 0; i < 5; i++)
			CHECK_DEV(gnic_dev_put(p.a, p.abuf + 64 * i, gnic_mr_lkey(p.amr),
			                       p.brm.addr + 64 * i, p.brm.rkey, 64, 0, NULL));
		CHECK_DEV(gnic_dev_quiet(p.a));
		CHECK(memcmp(p.abuf, p.bbuf, 5 * 64) == 0);
	}
	pair_close(&p);
}

/* Every operation on a QP with the given sharing mode (one thread here). */
static void all_ops(enum gnic_share share)
{
	struct gnic_qp_attr attr;
	struct pair p;

	printf("== share mode %d\n", share);
	gnic_qp_attr_init(&attr);
	attr.share = share;
	pair_open(&p, &attr, 1 << 20);
	CHECK_EQ(p.a->share, (uint32_t)share);
	test_put(&p);
	test_put_inline(&p);
	test_get(&p);
	test_atomics(&p);
	test_put_signal(&p);
	test_send_recv(&p);
	test_fence(&p);
	test_many(&p);
	pair_close(&p);
}

int main(void)
{
	all_ops(GNIC_SHARE_GPU);
	all_ops(GNIC_SHARE_EXCLUSIVE);
	test_quiet_behind_batch();
	return T_EXIT_PASS;
}
