// SPDX-License-Identifier: MIT
/*
 * Memory keys, protection domains and access rights: what a connected peer
 * (one that passed authentication) still cannot touch. Each case runs on a
 * fresh pair of QPs of one process, checks the error completion(s), and
 * that no target byte changed and no local destination received anything.
 * tests/emu/test_errors.c covers bad/stale lkey and rkey, bounds and the
 * MR's REMOTE_WRITE/READ/ATOMIC and the QP's REMOTE_WRITE; this file adds:
 *
 *   key_random      MR keys carry random bits: 64 MRs show many different
 *                   key bytes, and two processes get different ones
 *   key_byte_guess  all 255 wrong key bytes of a valid rkey are refused; the
 *                   right one then works
 *   pd_lkey         an lkey of another PD as a WRITE source: LOC_PROT
 *   pd_rkey         an rkey of another PD (covering the very target bytes)
 *                   for WRITE, READ, FETCH_ADD: REM_ACCESS
 *   pd_recv         a receive buffer of another PD: the responder's LOC_PROT,
 *                   the requester's REM_OP
 *   local_write     no LOCAL_WRITE on the READ destination, on the atomic
 *                   result, on the receive buffer
 *   qp_no_remote_read, _write, _atomic      the responder QP's rights
 *
 * Run one case: test_sec_keys <case>.
 */
#include <limits.h>
#include <unistd.h>

#include "common.h"

#define LEN   65536
#define GUARD 0xee
#define CNT   4096 /* offset of the target's 8-byte counter */
#define CNT0  0x1122334455667788ull

static struct ibv_context *ctx;

struct fx {
	struct t_pair p;
	struct ibv_pd *pd2; /* another PD of the same context */
	uint8_t *a, *b;     /* requester's and target's memory */
	struct ibv_mr *amr, *bmr;
	uint8_t a_before[LEN];
};

static void fx_setup(struct fx *f, const struct t_conn_opts *o)
{
	t_pair_create(&f->p, ctx, NULL, o, 0);
	f->pd2 = CHECK_PTR(ibv_alloc_pd(ctx));
	f->a = t_alloc(LEN, 0);
	t_fill(f->a, LEN, 5);
	f->b = t_alloc(LEN, GUARD);
	*(uint64_t *)(f->b + CNT) = CNT0;
	f->amr = t_reg(f->p.pd, f->a, LEN, T_ACCESS_ALL);
	f->bmr = t_reg(f->p.pd, f->b, LEN, T_ACCESS_ALL);
	memcpy(f->a_before, f->a, LEN);
}

static void fx_teardown(struct fx *f)
{
	CHECK_OK(ibv_dereg_mr(f->amr));
	CHECK_OK(ibv_dereg_mr(f->bmr));
	t_pair_destroy(&f->p);
	CHECK_OK(ibv_dealloc_pd(f->pd2));
	free(f->a);
	free(f->b);
}

/* Nothing written at the target, nothing placed in the requester's memory. */
static void expect_untouched(struct fx *f, const char *what)
{
	t_case("%s: no byte changed", what);
	CHECK_BYTES(f->b, GUARD, CNT);
	CHECK_EQ(*(uint64_t *)(f->b + CNT), CNT0);
	CHECK_BYTES(f->b + CNT + 8, GUARD, LEN - CNT - 8);
	CHECK_MEM(f->a, f->a_before, LEN);
}

static struct ibv_send_wr wr_rdma(uint64_t id, struct ibv_sge *sge, enum ibv_wr_opcode op,
                                  uint64_t raddr, uint32_t rkey)
{
	return (struct ibv_send_wr){.wr_id = id,
	                            .sg_list = sge,
	                            .num_sge = 1,
	                            .opcode = op,
	                            .send_flags = IBV_SEND_SIGNALED,
	                            .wr.rdma = {.remote_addr = raddr, .rkey = rkey}};
}

static struct ibv_send_wr wr_fadd(uint64_t id, struct ibv_sge *sge, uint64_t raddr, uint32_t rkey)
{
	return (struct ibv_send_wr){
	    .wr_id = id,
	    .sg_list = sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.atomic = {.remote_addr = raddr, .compare_add = 1, .rkey = rkey}};
}

/* Post wr on QP 0; its completion must have status st; both QPs are then
 * reset and connected again for the next attempt. */
static void expect_status(struct fx *f, struct ibv_send_wr *wr, enum ibv_wc_status st,
                          const char *what)
{
	struct ibv_wc wc;

	t_post_send(f->p.qp[0], wr);
	wc = t_poll1(f->p.scq[0], what);
	if (wc.status != st)
		t_print_wc(stderr, &wc);
	CHECK_WC_STATUS(&wc, wr->wr_id, st);
	CHECK_EQ(t_qp_state(f->p.qp[0]), IBV_QPS_ERR);
	t_pair_reconnect(&f->p);
}

/* ---- keys ---------------------------------------------------------------- */

static int print_keys(void)
{
	static uint8_t buf[64];
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));

	for (int i = 0; i < 16; i++) {
		struct ibv_mr *mr = t_reg(pd, buf, sizeof(buf), T_ACCESS_ALL);

		printf("%02x", mr->rkey & 0xff);
		/* kept registered: every MR gets a new index */
	}
	printf("\n");
	return 0;
}

static void other_process_keys(char *out, size_t size)
{
	char exe[PATH_MAX], cmd[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *p;

	CHECK(n > 0);
	exe[n] = 0;
	snprintf(cmd, sizeof(cmd), "'%s' print_keys", exe);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	CHECK(fgets(out, (int)size, p) != NULL);
	CHECK_EQ(pclose(p), 0);
	CHECK_EQ(strlen(out), 33);
}

static void case_key_random(void)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	static uint8_t buf[64];
	struct ibv_mr *mr[64];
	bool seen[256] = {false};
	int distinct = 0;
	char one[64], two[64];

	for (int i = 0; i < 64; i++) {
		mr[i] = t_reg(pd, buf, sizeof(buf), T_ACCESS_ALL);
		CHECK_EQ(mr[i]->lkey, mr[i]->rkey);
		if (!seen[mr[i]->rkey & 0xff])
			distinct++;
		seen[mr[i]->rkey & 0xff] = true;
	}
	/* 64 random bytes hit ~57 values; a counter or a constant hits 1..64
	 * in sequence, caught by the two-process check below */
	printf("64 MRs: %d different key bytes\n", distinct);
	CHECK_GE(distinct, 16);
	for (int i = 0; i < 64; i++)
		CHECK_OK(ibv_dereg_mr(mr[i]));
	CHECK_OK(ibv_dealloc_pd(pd));

	t_case("key_random: two processes, 16 MRs each");
	other_process_keys(one, sizeof(one));
	other_process_keys(two, sizeof(two));
	printf("key bytes, run 1: %s", one);
	printf("key bytes, run 2: %s", two);
	/* the same 16 MR indexes in each: only random bytes make them differ */
	CHECK(strcmp(one, two) != 0);
}

static void case_key_byte_guess(void)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	struct fx f;
	int refused = 0;

	fx_setup(&f, NULL);
	for (unsigned k = 0; k < 256; k++) {
		uint32_t key = (f.bmr->rkey & ~0xffu) | k;

		if (key == f.bmr->rkey)
			continue;
		sge = (struct ibv_sge){.addr = (uintptr_t)f.a, .length = 64, .lkey = f.amr->lkey};
		wr = wr_rdma(k, &sge, IBV_WR_RDMA_WRITE, (uintptr_t)f.b, key);
		t_case("key_byte_guess: rkey 0x%x (the MR's is 0x%x)", key, f.bmr->rkey);
		expect_status(&f, &wr, IBV_WC_REM_ACCESS_ERR, "WRITE with a guessed key byte");
		CHECK_BYTES(f.b, GUARD, CNT);
		refused++;
	}
	CHECK_EQ(refused, 255);
	expect_untouched(&f, "255 guessed key bytes");

	t_case("key_byte_guess: the right key works");
	sge = (struct ibv_sge){.addr = (uintptr_t)f.a, .length = 64, .lkey = f.amr->lkey};
	wr = wr_rdma(1000, &sge, IBV_WR_RDMA_WRITE, (uintptr_t)f.b, f.bmr->rkey);
	t_post_send(f.p.qp[0], &wr);
	wc = t_poll1(f.p.scq[0], "WRITE with the right key");
	CHECK_WC(&wc, 1000, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(f.b, f.a, 64);
	fx_teardown(&f);
}

/* ---- protection domains ------------------------------------------------- */

static void case_pd_lkey(void)
{
	struct fx f;

	fx_setup(&f, NULL);
	struct ibv_mr *other = t_reg(f.pd2, f.a, LEN, T_ACCESS_ALL);
	struct ibv_sge sge = {.addr = (uintptr_t)f.a, .length = 64, .lkey = other->lkey};
	struct ibv_send_wr wr = wr_rdma(1, &sge, IBV_WR_RDMA_WRITE, (uintptr_t)f.b, f.bmr->rkey);

	expect_status(&f, &wr, IBV_WC_LOC_PROT_ERR, "WRITE from an lkey of another PD");
	expect_untouched(&f, "pd_lkey");
	CHECK_OK(ibv_dereg_mr(other));
	fx_teardown(&f);
}

static void case_pd_rkey(void)
{
	struct fx f;

	fx_setup(&f, NULL);
	/* every right, over the very bytes the target QP's PD exposes too */
	struct ibv_mr *other = t_reg(f.pd2, f.b, LEN, T_ACCESS_ALL);
	struct ibv_sge sge = {.addr = (uintptr_t)f.a, .length = 64, .lkey = f.amr->lkey};
	struct ibv_sge sge8 = {.addr = (uintptr_t)f.a + 256, .length = 8, .lkey = f.amr->lkey};
	struct ibv_send_wr w = wr_rdma(1, &sge, IBV_WR_RDMA_WRITE, (uintptr_t)f.b, other->rkey);
	struct ibv_send_wr r = wr_rdma(2, &sge, IBV_WR_RDMA_READ, (uintptr_t)f.b, other->rkey);
	struct ibv_send_wr a = wr_fadd(3, &sge8, (uintptr_t)f.b + CNT, other->rkey);

	expect_status(&f, &w, IBV_WC_REM_ACCESS_ERR, "WRITE with an rkey of another PD");
	expect_status(&f, &r, IBV_WC_REM_ACCESS_ERR, "READ with an rkey of another PD");
	expect_status(&f, &a, IBV_WC_REM_ACCESS_ERR, "FETCH_ADD with an rkey of another PD");
	expect_untouched(&f, "pd_rkey");
	CHECK_OK(ibv_dereg_mr(other));
	fx_teardown(&f);
}

/* A SEND whose receive buffer the responder may not write. */
static void expect_recv_refused(struct fx *f, uint32_t recv_lkey, const char *what)
{
	struct ibv_sge sge = {.addr = (uintptr_t)f->a, .length = 64, .lkey = f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};
	struct ibv_wc wc;

	t_post_recv_buf(f->p.qp[1], 50, f->b, 256, recv_lkey);
	t_post_send(f->p.qp[0], &wr);
	wc = t_poll1(f->p.rcq[1], what);
	CHECK_WC_STATUS(&wc, 50, IBV_WC_LOC_PROT_ERR);
	wc = t_poll1(f->p.scq[0], what);
	CHECK_WC_STATUS(&wc, 1, IBV_WC_REM_OP_ERR);
	expect_untouched(f, what);
}

static void case_pd_recv(void)
{
	struct fx f;

	fx_setup(&f, NULL);
	struct ibv_mr *other = t_reg(f.pd2, f.b, LEN, T_ACCESS_ALL);

	expect_recv_refused(&f, other->lkey, "a receive buffer of another PD");
	CHECK_OK(ibv_dereg_mr(other));
	fx_teardown(&f);
}

/* ---- access rights ------------------------------------------------------- */

static void case_local_write(void)
{
	struct fx f;

	fx_setup(&f, NULL);
	/* read-only local memory (no LOCAL_WRITE): the NIC may not write it */
	struct ibv_mr *ro = t_reg(f.p.pd, f.a, LEN, IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *bro = t_reg(f.p.pd, f.b, LEN, IBV_ACCESS_REMOTE_READ);
	struct ibv_sge sge = {.addr = (uintptr_t)f.a, .length = 64, .lkey = ro->lkey};
	struct ibv_sge sge8 = {.addr = (uintptr_t)f.a + 256, .length = 8, .lkey = ro->lkey};
	struct ibv_send_wr r = wr_rdma(1, &sge, IBV_WR_RDMA_READ, (uintptr_t)f.b, f.bmr->rkey);
	struct ibv_send_wr a = wr_fadd(2, &sge8, (uintptr_t)f.b + CNT, f.bmr->rkey);

	expect_status(&f, &r, IBV_WC_LOC_PROT_ERR, "READ into memory without LOCAL_WRITE");
	/* the atomic must not run remotely when its result cannot land */
	expect_status(&f, &a, IBV_WC_LOC_PROT_ERR, "FETCH_ADD result without LOCAL_WRITE");
	expect_untouched(&f, "local_write: READ and atomic");
	t_case("local_write: receive buffer without LOCAL_WRITE");
	expect_recv_refused(&f, bro->lkey, "a receive buffer without LOCAL_WRITE");
	CHECK_OK(ibv_dereg_mr(ro));
	CHECK_OK(ibv_dereg_mr(bro));
	fx_teardown(&f);
}

static void qp_without(int missing, enum ibv_wr_opcode op, const char *what)
{
	struct t_conn_opts o;
	struct fx f;

	t_conn_opts_default(&o);
	o.access = T_ACCESS_ALL & ~missing;
	fx_setup(&f, &o);
	struct ibv_sge sge = {.addr = (uintptr_t)f.a, .length = 64, .lkey = f.amr->lkey};
	struct ibv_sge sge8 = {.addr = (uintptr_t)f.a + 256, .length = 8, .lkey = f.amr->lkey};
	struct ibv_send_wr r = wr_rdma(1, &sge, IBV_WR_RDMA_READ, (uintptr_t)f.b, f.bmr->rkey);
	struct ibv_send_wr w = wr_rdma(1, &sge, IBV_WR_RDMA_WRITE, (uintptr_t)f.b, f.bmr->rkey);
	struct ibv_send_wr a = wr_fadd(1, &sge8, (uintptr_t)f.b + CNT, f.bmr->rkey);
	struct ibv_send_wr *wr = op == IBV_WR_RDMA_READ ? &r : op == IBV_WR_RDMA_WRITE ? &w : &a;

	expect_status(&f, wr, IBV_WC_REM_ACCESS_ERR, what);
	expect_untouched(&f, what);
	fx_teardown(&f);
}

static void case_qp_no_remote_read(void)
{
	qp_without(IBV_ACCESS_REMOTE_READ, IBV_WR_RDMA_READ, "READ from a QP without REMOTE_READ");
}

static void case_qp_no_remote_write(void)
{
	qp_without(IBV_ACCESS_REMOTE_WRITE, IBV_WR_RDMA_WRITE,
	           "WRITE to a QP without REMOTE_WRITE");
}

static void case_qp_no_remote_atomic(void)
{
	qp_without(IBV_ACCESS_REMOTE_ATOMIC, IBV_WR_ATOMIC_FETCH_AND_ADD,
	           "FETCH_ADD on a QP without REMOTE_ATOMIC");
}

static const struct t_named_case cases[] = {
    {"key_random", case_key_random},
    {"key_byte_guess", case_key_byte_guess},
    {"pd_lkey", case_pd_lkey},
    {"pd_rkey", case_pd_rkey},
    {"pd_recv", case_pd_recv},
    {"local_write", case_local_write},
    {"qp_no_remote_read", case_qp_no_remote_read},
    {"qp_no_remote_write", case_qp_no_remote_write},
    {"qp_no_remote_atomic", case_qp_no_remote_atomic},
};

int main(int argc, char **argv)
{
	ctx = t_open(T_DEVICE);
	if (argc > 1 && !strcmp(argv[1], "print_keys"))
		return print_keys();
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
