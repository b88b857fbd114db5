// SPDX-License-Identifier: MIT
/*
 * Several engine workers (GNIC_EMU_THREADS, 2 unless the environment says
 * otherwise) in one process: RDMA atomics that two responders on different
 * workers run on the same 8-byte word stay exact.
 *
 *   fadd:  two requesters FETCH_ADD the same word N times each, 16 in flight
 *          per QP: the final value is 2N * addend, and the 2N old values
 *          returned are exactly 0, addend, 2 * addend, ... (so each unique).
 *   cswap: two requesters increment the same word by COMPARE_SWAP, N / 4
 *          each, 16 in flight (compare = a value the word may reach, swap =
 *          it + 1): the word ends at the number of swaps that succeeded, and
 *          the old values of the successful ones are exactly 0 .. that
 *          number - 1 (no value swapped twice).
 *   share: fadd again, both requesters' send CQ one CQ (CQE writes
 *          from two workers): every completion arrives once, in order per
 *          QP, with its wr_id.
 *
 *   srq:   the QPs of one SRQ are placed on one worker.
 *   apart: a pair whose ends are pinned to two workers by their SRQs: WRITEs,
 *          SENDs and READs cross the inboxes both ways, in order, bytes intact.
 *
 * The placement is checked first (gemu_qp_engine_worker): the two ends of a
 * pair share a worker, and the responders of the two pairs must be on
 * different workers, or the test proves nothing.
 * GNIC_TEST_ATOMICS (default 100000) sets N, for slow sanitizer builds.
 */
#include "common.h"

#define WINDOW 16
#define ADDEND 3ull

int gemu_qp_engine_worker(struct ibv_qp *qp); /* libgnic_emu */

struct side {
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;  /* scq: the requester's send CQ (maybe shared) */
	struct ibv_cq *own_cq;     /* the responder's send CQ */
	struct ibv_qp *req, *resp; /* requester, and the responder it talks to */
	uint64_t *res;             /* one old value per WR */
	struct ibv_mr *res_mr, *word_mr;
};

static struct ibv_context *ctx;
static uint64_t *word; /* the target, registered in both sides' PDs */
static struct side sides[2];
static int n_ops;

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

static struct ibv_qp *make_qp(struct side *s, struct ibv_cq *scq)
{
	struct t_qp_caps caps;

	t_qp_caps_default(&caps);
	caps.send_wr = 64;
	return t_qp(s->pd, scq, s->rcq, &caps, NULL);
}

/* QPs are created side 0's requester, its responder, side 1's responder, its
 * requester: placed in turn over the workers at creation, but at RTR each
 * pair's second end joins its peer's worker and the second pair goes to
 * another worker (worker.c): the two responders run on different workers. */
static void setup(struct ibv_cq *shared_cq)
{
	struct t_conn_opts o;

	t_conn_opts_default(&o);
	o.max_rd_atomic = o.max_dest_rd_atomic = 16;
	for (int k = 0; k < 2; k++) {
		struct side *s = &sides[k];

		s->pd = CHECK_PTR(ibv_alloc_pd(ctx));
		s->scq = shared_cq ? shared_cq : t_cq(ctx, 1024);
		s->rcq = t_cq(ctx, 64);
		s->own_cq = t_cq(ctx, 64);
		s->res = t_alloc((size_t)n_ops * 8, 0xff);
		s->res_mr = t_reg(s->pd, s->res, (size_t)n_ops * 8, T_ACCESS_ALL);
		s->word_mr = t_reg(s->pd, word, T_PAGE, T_ACCESS_ALL);
	}
	sides[0].req = make_qp(&sides[0], sides[0].scq);
	sides[0].resp = make_qp(&sides[0], sides[0].own_cq);
	sides[1].resp = make_qp(&sides[1], sides[1].own_cq);
	sides[1].req = make_qp(&sides[1], sides[1].scq);
	for (int k = 0; k < 2; k++) {
		struct t_ep a, b;

		t_local_ep(sides[k].req, &a);
		t_local_ep(sides[k].resp, &b);
		t_connect(sides[k].req, &b, &o);
		t_connect(sides[k].resp, &a, &o);
	}
	printf("workers: side 0 req %d resp %d, side 1 req %d resp %d\n",
	       gemu_qp_engine_worker(sides[0].req), gemu_qp_engine_worker(sides[0].resp),
	       gemu_qp_engine_worker(sides[1].req), gemu_qp_engine_worker(sides[1].resp));
	CHECK_GE(gemu_qp_engine_worker(sides[0].resp), 0);
	CHECK_NE(gemu_qp_engine_worker(sides[0].resp), gemu_qp_engine_worker(sides[1].resp));
	for (int k = 0; k < 2; k++)
		CHECK_EQ(gemu_qp_engine_worker(sides[k].req), gemu_qp_engine_worker(sides[k].resp));
}

static void teardown(void)
{
	for (int k = 0; k < 2; k++) {
		struct side *s = &sides[k];

		CHECK_OK(ibv_destroy_qp(s->req));
		CHECK_OK(ibv_destroy_qp(s->resp));
		CHECK_OK(ibv_dereg_mr(s->res_mr));
		CHECK_OK(ibv_dereg_mr(s->word_mr));
		free(s->res);
	}
	for (int k = 0; k < 2; k++) {
		struct side *s = &sides[k];

		if (k == 0 || s->scq != sides[0].scq)
			CHECK_OK(ibv_destroy_cq(s->scq));
		CHECK_OK(ibv_destroy_cq(s->rcq));
		CHECK_OK(ibv_destroy_cq(s->own_cq));
		CHECK_OK(ibv_dealloc_pd(s->pd));
	}
}

static void post_atomic(struct side *s, int i, enum ibv_wr_opcode op, uint64_t cmp_add,
                        uint64_t swap)
{
	struct ibv_sge sge = {.addr = (uintptr_t)&s->res[i], .length = 8, .lkey = s->res_mr->lkey};
	struct ibv_send_wr wr = {.wr_id = (uint64_t)(s - sides) << 32 | (uint32_t)i,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = op,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.atomic = {.remote_addr = (uintptr_t)word,
	                                       .compare_add = cmp_add,
	                                       .swap = swap,
	                                       .rkey = s->word_mr->rkey}};

	t_post_send(s->req, &wr);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Both sides FETCH_ADD n_ops times, WINDOW in flight each; completions are
 * polled from cq (both sides' when shared) and checked in order per side. */
static void run_fadd(struct ibv_cq *shared)
{
	int posted[2] = {0, 0}, done[2] = {0, 0};
	uint64_t deadline = t_now_ms() + T_WAIT_MS;

	while (done[0] < n_ops || done[1] < n_ops) {
		for (int k = 0; k < 2; k++) {
			struct side *s = &sides[k];

			while (posted[k] < n_ops && posted[k] - done[k] < WINDOW)
				post_atomic(s, posted[k]++, IBV_WR_ATOMIC_FETCH_AND_ADD, ADDEND, 0);
		}
		for (int k = 0; k < (shared ? 1 : 2); k++) {
			struct ibv_wc wc[32];
			int n = ibv_poll_cq(shared ? shared : sides[k].scq, 32, wc);

			CHECK_GE(n, 0);
			for (int j = 0; j < n; j++) {
				int side = (int)(wc[j].wr_id >> 32);

				CHECK(side == 0 || side == 1);
				CHECK_WC(&wc[j], (uint64_t)side << 32 | (uint32_t)done[side],
				         IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
				done[side]++;
				deadline = t_now_ms() + T_WAIT_MS;
			}
		}
		if (t_now_ms() > deadline)
			T_FAIL("FETCH_ADDs: %d + %d of %d each done, then none for %d ms", done[0],
			       done[1], n_ops, T_WAIT_MS);
	}
	t_expect_empty(sides[0].scq, "one completion per FETCH_ADD");
	t_expect_empty(sides[1].scq, "one completion per FETCH_ADD");
}

static void check_fadd(void)
{
	uint64_t *all = malloc((size_t)n_ops * 2 * 8);

	CHECK(all != NULL);
	CHECK_EQ(__atomic_load_n(word, __ATOMIC_SEQ_CST), 2ull * (uint64_t)n_ops * ADDEND);
	memcpy(all, sides[0].res, (size_t)n_ops * 8);
	memcpy(all + n_ops, sides[1].res, (size_t)n_ops * 8);
	qsort(all, (size_t)n_ops * 2, 8, cmp_u64);
	for (int i = 0; i < 2 * n_ops; i++)
		if (all[i] != (uint64_t)i * ADDEND)
			T_FAIL("sorted old value %d is %llu, not %llu (duplicate or lost add)", i,
			       (unsigned long long)all[i], (unsigned long long)i * ADDEND);
	free(all);
}

static void case_fadd(void)
{
	t_case("fadd: 2 x %d FETCH_ADDs of %llu on one word from two workers", n_ops, ADDEND);
	*word = 0;
	setup(NULL);
	run_fadd(NULL);
	check_fadd();
	teardown();
}

static void case_share(void)
{
	struct ibv_cq *cq = t_cq(ctx, 1024);

	t_case("share: 2 x %d FETCH_ADDs, both requesters on one send CQ", n_ops);
	*word = 0;
	setup(cq);
	run_fadd(cq);
	check_fadd();
	teardown();
}

/* WINDOW COMPARE_SWAPs in flight per side, each trying compare = the next
 * value this side expects the word to reach, swap = that + 1; a failure
 * tells the word's value, from which the side goes on. */
static void case_cswap(void)
{
	int tries = n_ops / 4, ok[2] = {0, 0}, posted[2] = {0, 0}, done[2] = {0, 0};
	uint64_t next[2] = {0, 0}, *cmpv[2], *wins[2];
	uint64_t deadline = t_now_ms() + T_WAIT_MS;
	int total;

	t_case("cswap: 2 x %d COMPARE_SWAP increments of one word from two workers", tries);
	*word = 0;
	setup(NULL);
	for (int k = 0; k < 2; k++) {
		wins[k] = calloc((size_t)tries, 8);
		cmpv[k] = calloc((size_t)tries, 8);
		CHECK(wins[k] != NULL && cmpv[k] != NULL);
	}
	while (done[0] < tries || done[1] < tries) {
		for (int k = 0; k < 2; k++) {
			struct side *s = &sides[k];
			struct ibv_wc wc;
			uint64_t old;

			while (posted[k] < tries && posted[k] - done[k] < WINDOW) {
				cmpv[k][posted[k]] = next[k]++;
				post_atomic(s, posted[k], IBV_WR_ATOMIC_CMP_AND_SWP,
				            cmpv[k][posted[k]], cmpv[k][posted[k]] + 1);
				posted[k]++;
			}
			if (done[k] == tries || ibv_poll_cq(s->scq, 1, &wc) != 1)
				continue;
			CHECK_WC(&wc, (uint64_t)k << 32 | (uint32_t)done[k], IBV_WC_SUCCESS,
			         IBV_WC_COMP_SWAP);
			old = s->res[done[k]];
			if (old == cmpv[k][done[k]])
				wins[k][ok[k]++] = old; /* ours: the word was old, is old + 1 */
			else if (old > next[k])
				next[k] = old; /* behind: go on from where the word is */
			done[k]++;
			deadline = t_now_ms() + T_WAIT_MS;
		}
		if (t_now_ms() > deadline)
			T_FAIL("COMPARE_SWAPs: %d + %d of %d each done, then none for %d ms",
			       done[0], done[1], tries, T_WAIT_MS);
	}
	total = ok[0] + ok[1];
	printf("cswap: %d + %d of 2 x %d succeeded\n", ok[0], ok[1], tries);
	CHECK_EQ(__atomic_load_n(word, __ATOMIC_SEQ_CST), (uint64_t)total);
	{
		uint64_t *all = malloc((size_t)total * 8 + 8);

		CHECK(all != NULL);
		memcpy(all, wins[0], (size_t)ok[0] * 8);
		memcpy(all + ok[0], wins[1], (size_t)ok[1] * 8);
		qsort(all, (size_t)total, 8, cmp_u64);
		for (int i = 0; i < total; i++)
			if (all[i] != (uint64_t)i)
				T_FAIL("successful swap %d saw %llu (two swaps of one value?)", i,
				       (unsigned long long)all[i]);
		free(all);
	}
	for (int k = 0; k < 2; k++) {
		free(wins[k]);
		free(cmpv[k]);
	}
	teardown();
}

/* The QPs of one SRQ are on one worker (its single consumer), though
 * placement in turn would put the second elsewhere; the next QP without an
 * SRQ goes to another worker. */
static void case_srq(void)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = t_cq(ctx, 64);
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &sa));
	struct ibv_qp *qp[4];

	t_case("srq: the QPs of one SRQ share a worker");
	for (int i = 0; i < 4; i++) {
		struct ibv_qp_init_attr a = {.send_cq = cq,
		                             .recv_cq = cq,
		                             .srq = i < 2 ? srq : NULL,
		                             .cap = {.max_send_wr = 4, .max_send_sge = 1},
		                             .qp_type = IBV_QPT_RC};

		qp[i] = CHECK_PTR(ibv_create_qp(pd, &a));
	}
	printf("srq: workers %d %d (SRQ), %d %d (none)\n", gemu_qp_engine_worker(qp[0]),
	       gemu_qp_engine_worker(qp[1]), gemu_qp_engine_worker(qp[2]),
	       gemu_qp_engine_worker(qp[3]));
	CHECK_EQ(gemu_qp_engine_worker(qp[0]), gemu_qp_engine_worker(qp[1]));
	CHECK_NE(gemu_qp_engine_worker(qp[0]), gemu_qp_engine_worker(qp[2]));
	for (int i = 0; i < 4; i++)
		CHECK_OK(ibv_destroy_qp(qp[i]));
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
}

#define APART_N   256 /* WRITEs in a row */
#define APART_LEN 64

static struct ibv_srq *apart_srq(struct ibv_pd *pd)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};

	return CHECK_PTR(ibv_create_srq(pd, &sa));
}

static void apart_post_srq(struct ibv_srq *srq, uint64_t wr_id, void *buf, uint32_t lkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = APART_LEN, .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	CHECK_OK(ibv_post_srq_recv(srq, &wr, &bad));
}

static void apart_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *buf,
                       uint32_t lkey, uint64_t raddr, uint32_t rkey, bool signaled)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = APART_LEN, .lkey = lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = op,
	                         .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	                         .wr.rdma = {.remote_addr = raddr, .rkey = rkey}};

	t_post_send(qp, &wr);
}

/* Each end has its own SRQ, and each SRQ pins its QPs to the worker its first
 * QP got: the pair cannot share a worker, so every message goes through an
 * inbox. WRITEs land in order (the last one's bytes are the last WRITE's), a
 * SEND after them finds them all done, a READ returns what was written. */
static void case_apart(void)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq[2] = {t_cq(ctx, 512), t_cq(ctx, 512)};
	struct ibv_srq *srq[2] = {apart_srq(pd), apart_srq(pd)};
	size_t len = (size_t)(APART_N + 4) * APART_LEN;
	uint8_t *src = t_alloc(len, 0), *dst = t_alloc(len, 0);
	struct ibv_mr *smr = t_reg(pd, src, len, T_ACCESS_ALL),
	              *dmr = t_reg(pd, dst, len, T_ACCESS_ALL);
	struct t_conn_opts o;
	struct ibv_qp *qp[2];
	struct t_ep ep[2];
	struct ibv_wc wc[APART_N];

	t_case("apart: a pair on two workers (SRQs pin them): WRITE, SEND, READ through inboxes");
	t_conn_opts_default(&o);
	for (int k = 0; k < 2; k++) {
		struct ibv_qp_init_attr a = {.send_cq = cq[k],
		                             .recv_cq = cq[k],
		                             .srq = srq[k],
		                             .cap = {.max_send_wr = APART_N, .max_send_sge = 1},
		                             .qp_type = IBV_QPT_RC};

		qp[k] = CHECK_PTR(ibv_create_qp(pd, &a));
		t_local_ep(qp[k], &ep[k]);
	}
	t_connect(qp[0], &ep[1], &o);
	t_connect(qp[1], &ep[0], &o);
	printf("apart: workers %d %d\n", gemu_qp_engine_worker(qp[0]),
	       gemu_qp_engine_worker(qp[1]));
	CHECK_NE(gemu_qp_engine_worker(qp[0]), gemu_qp_engine_worker(qp[1]));
	/* APART_N WRITEs of 64 bytes into one slot: bytes of WRITE i are i */
	for (int i = 0; i < APART_N; i++) {
		memset(src + (size_t)i * APART_LEN, i, APART_LEN);
		apart_send(qp[0], IBV_WR_RDMA_WRITE, (uint64_t)i, src + (size_t)i * APART_LEN,
		           smr->lkey, (uintptr_t)dst, dmr->rkey, true);
	}
	t_poll(cq[0], APART_N, wc, "WRITE completions");
	for (int i = 0; i < APART_N; i++)
		CHECK_WC(&wc[i], (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_BYTES(dst, APART_N - 1, APART_LEN);
	/* SEND 0 -> 1 and 1 -> 0, each into the other's SRQ */
	apart_post_srq(srq[1], 101, dst + APART_LEN, dmr->lkey);
	apart_post_srq(srq[0], 100, src + (size_t)(APART_N + 1) * APART_LEN, smr->lkey);
	memset(src + (size_t)APART_N * APART_LEN, 0xa5, APART_LEN);
	memset(dst + 2 * APART_LEN, 0x5a, APART_LEN);
	apart_send(qp[0], IBV_WR_SEND, 200, src + (size_t)APART_N * APART_LEN, smr->lkey, 0, 0,
	           true);
	apart_send(qp[1], IBV_WR_SEND, 201, dst + 2 * APART_LEN, dmr->lkey, 0, 0, true);
	for (int k = 0; k < 2; k++) {
		struct ibv_wc got[2];
		int sends = 0, recvs = 0;

		t_poll(cq[k], 2, got, "SEND and receive completions");
		for (int j = 0; j < 2; j++) {
			CHECK_EQ(got[j].status, IBV_WC_SUCCESS);
			if (got[j].opcode == IBV_WC_SEND) {
				CHECK_EQ(got[j].wr_id, 200u + (unsigned)k);
				sends++;
			} else {
				CHECK_EQ(got[j].opcode, IBV_WC_RECV);
				CHECK_EQ(got[j].wr_id, 100u + (unsigned)k);
				CHECK_EQ(got[j].byte_len, APART_LEN);
				recvs++;
			}
		}
		CHECK_EQ(sends, 1);
		CHECK_EQ(recvs, 1);
	}
	CHECK_BYTES(dst + APART_LEN, 0xa5, APART_LEN);
	CHECK_BYTES(src + (size_t)(APART_N + 1) * APART_LEN, 0x5a, APART_LEN);
	/* READ 1's first slot back into 0's */
	apart_send(qp[0], IBV_WR_RDMA_READ, 300, src + (size_t)(APART_N + 2) * APART_LEN, smr->lkey,
	           (uintptr_t)dst, dmr->rkey, true);
	wc[0] = t_poll1(cq[0], "READ completion");
	CHECK_WC(&wc[0], 300, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_BYTES(src + (size_t)(APART_N + 2) * APART_LEN, APART_N - 1, APART_LEN);
	t_expect_empty(cq[0], "nothing more");
	t_expect_empty(cq[1], "nothing more");
	for (int k = 0; k < 2; k++) {
		CHECK_OK(ibv_destroy_qp(qp[k]));
		CHECK_OK(ibv_destroy_srq(srq[k]));
		CHECK_OK(ibv_destroy_cq(cq[k]));
	}
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	CHECK_OK(ibv_dealloc_pd(pd));
	free(src);
	free(dst);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"fadd", case_fadd}, {"cswap", case_cswap}, {"share", case_share},
	    {"srq", case_srq},   {"apart", case_apart},
	};

	/* before the first verbs call: the emulator reads its knobs then */
	setenv("GNIC_EMU_THREADS", "2", 0);
	n_ops = env_int("GNIC_TEST_ATOMICS", 100000);
	CHECK_GE(n_ops, 40);
	ctx = t_open(T_DEVICE);
	word = t_alloc(T_PAGE, 0);
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	free(word);
	printf("PASS\n");
	return T_EXIT_PASS;
}
