// SPDX-License-Identifier: MIT
/*
 * Fuzz target "wqe": gnic-emu's send WQE decoder end to end (emu/wqe.c
 * emu_wqe_fetch/decode_ctrl/parse_sgl, emu/requester.c issue, then
 * emu/responder.c).
 *
 * Once per process: rocep1s0f0 opened through the verbs shims, two RC QPs
 * connected to each other (the pair is reused by every input), the SQ and the
 * send CQ of QP 0 taken over with mlx5dv as device code does, and four memory
 * regions between guard pages (fuzz_wqe.h). Per input (format: fuzz_wqe.h):
 * its basic blocks go into the SQ, a signaled NOP of the harness behind them,
 * the doorbell is rung in the input's style, and the harness waits for the
 * NOP's CQE or an error CQE. Then the invariants:
 *
 *   - guard pages, the read-only MR and the unregistered buffer are unchanged
 *     (only the two writable MRs may change);
 *   - the send CQ carries only requester CQEs of this QP for WQEs of this
 *     input; a NOP that completes means both QPs are still in RTS, an error
 *     CQE that the QP is in ERR;
 *   - one of the two CQEs comes: WAIT_MS is plenty, an answer within
 *     SLOW_WAIT_MS more is counted as late (a loaded machine), none at all
 *     means the engine lost track of the SQ;
 *   - the engine keeps working: every HEALTH_EVERY inputs a well-formed
 *     RDMA WRITE must move exactly its bytes.
 *
 * A failed input (error CQE) resets both QPs (RESET -> INIT -> RTR -> RTS,
 * new PSNs, now and then just below the 24-bit wrap), so every input starts
 * on a healthy pair. A broken invariant prints what was found and aborts.
 */
#include <infiniband/mlx5dv.h>
#include <sched.h>
#include <stdarg.h>

#include "common.h"
#include "fuzz_wqe.h"
#include "gnic/gnic_mlx5.h"

#define WAIT_MS      200  /* per input: a healthy engine answers in microseconds */
#define SLOW_WAIT_MS 5000 /* beyond that, an answer is lost, not late */
#define HEALTH_EVERY 64
#define GUARD_LEN    4096u
#define GUARD_BYTE   0xee
#define CHAIN_MAX_BB (WQE_IN_MAX_BB + GNIC_MLX5_MAX_WQE_BB + 1) /* + the NOP */
#define RECV_MAX     8 /* receives kept posted on QP 1 at most */
#define BB           GNIC_MLX5_SEND_WQE_BB

enum outcome { DONE_OK, DONE_ERR, DONE_TIMEOUT };

static const uint32_t region_len[WQE_NREG] = WQE_REGION_LENS;

static struct harness {
	struct ibv_context *ctx;
	struct t_pair p;
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dcq;
	uint32_t qpn;
	uint16_t pi;     /* next free SQ basic block (16-bit, as the NIC sees it) */
	uint32_t ci;     /* next send CQE */
	uint32_t bf_off; /* register half for the next ring */
	uint8_t *arena, *ref;
	size_t arena_len;
	uint8_t *reg[WQE_NREG];
	struct ibv_mr *mr[WQE_NREG];
	uint32_t key[WQE_NREG];
	uint32_t recv_posted;
	uint32_t psn;
	uint64_t inputs, resets, timeouts;
	bool verbose; /* FUZZ_WQE_VERBOSE=1: one line per input */
	uint8_t synd; /* syndrome of the last error CQE */
} H;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_wqe: invariant broken after %llu inputs (%llu resets): ",
	        (unsigned long long)H.inputs, (unsigned long long)H.resets);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ---- memory ------------------------------------------------------------- */

/* [guard][SRC][guard][DST][guard][RO][guard][RAW][guard], page aligned. */
static void arena_setup(void)
{
	size_t off = GUARD_LEN;

	H.arena_len = GUARD_LEN;
	for (int r = 0; r < WQE_NREG; r++)
		H.arena_len += region_len[r] + GUARD_LEN;
	H.arena = t_alloc(H.arena_len, GUARD_BYTE);
	for (int r = 0; r < WQE_NREG; r++) {
		H.reg[r] = H.arena + off;
		t_fill(H.reg[r], region_len[r], 100 + r);
		off += region_len[r] + GUARD_LEN;
	}
	H.ref = malloc(H.arena_len);
	CHECK(H.ref);
	memcpy(H.ref, H.arena, H.arena_len);
}

static void mr_setup(void)
{
	struct ibv_mr *dead;

	H.mr[WQE_R_SRC] = t_reg(H.p.pd, H.reg[WQE_R_SRC], region_len[WQE_R_SRC], T_ACCESS_ALL);
	H.mr[WQE_R_DST] = t_reg(H.p.pd, H.reg[WQE_R_DST], region_len[WQE_R_DST], T_ACCESS_ALL);
	H.mr[WQE_R_RO] =
	    t_reg(H.p.pd, H.reg[WQE_R_RO], region_len[WQE_R_RO], IBV_ACCESS_REMOTE_READ);
	/* a key that existed once: the RAW region's key token */
	dead = t_reg(H.p.pd, H.reg[WQE_R_RAW], region_len[WQE_R_RAW], T_ACCESS_ALL);
	H.key[WQE_R_RAW] = dead->lkey;
	CHECK_OK(ibv_dereg_mr(dead));
	for (int r = 0; r < WQE_R_RAW; r++)
		H.key[r] = H.mr[r]->lkey;
}

static void check_range(size_t from, size_t to, const char *when)
{
	if (!memcmp(H.arena + from, H.ref + from, to - from))
		return;
	for (size_t i = from; i < to; i++)
		if (H.arena[i] != H.ref[i])
			die("%s: byte %zu of the arena (SRC at %zu, DST at %zu) is 0x%02x, was "
			    "0x%02x",
			    when, i, (size_t)(H.reg[WQE_R_SRC] - H.arena),
			    (size_t)(H.reg[WQE_R_DST] - H.arena), H.arena[i], H.ref[i]);
}

/* Everything but the two writable MRs must hold what it held at start. */
static void check_memory(const char *when)
{
	size_t src = (size_t)(H.reg[WQE_R_SRC] - H.arena),
	       dst = (size_t)(H.reg[WQE_R_DST] - H.arena);

	check_range(0, src, when);
	check_range(src + region_len[WQE_R_SRC], dst, when);
	check_range(dst + region_len[WQE_R_DST], H.arena_len, when);
}

/* ---- queues ------------------------------------------------------------- */

static uint8_t *sq_bb(uint32_t idx)
{
	return (uint8_t *)H.dq.sq.buf + (size_t)(idx & (H.dq.sq.wqe_cnt - 1)) * BB;
}

static void set_ctrl(uint8_t *bb, uint16_t idx, uint8_t opcode, uint32_t ds, uint8_t flags)
{
	struct gnic_mlx5_ctrl_seg *c = (void *)bb;

	c->opmod_idx_opcode = gnic_be32(gnic_mlx5_ctrl_word0(0, idx, opcode));
	c->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(H.qpn, ds));
	c->fm_ce_se = flags;
}

static void reg_write(uint64_t v)
{
	__atomic_store_n((uint64_t *)((uint8_t *)H.dq.bf.reg + H.bf_off), v, __ATOMIC_RELEASE);
	H.bf_off ^= H.dq.bf.size;
}

/* Tell the NIC about everything up to H.pi; last = first BB of the last WQE. */
static void ring(enum wqe_ring style, uint16_t last)
{
	uint32_t w[2];
	uint64_t v;

	if (style != WQE_RING_REGISTER)
		__atomic_store_n(&H.dq.dbrec[GNIC_MLX5_SND_DBR], gnic_be32(H.pi), __ATOMIC_RELEASE);
	if (style == WQE_RING_RECORD)
		return;
	if (style == WQE_RING_CTRL) {
		memcpy(w, sq_bb(last), sizeof(w));
	} else {
		w[0] = gnic_be32((uint32_t)H.pi << 8);
		w[1] = gnic_be32(H.qpn << 8);
	}
	memcpy(&v, w, sizeof(v));
	reg_write(v);
}

/* Consume send CQEs until the one for WQE `last`, an error CQE, or ms.
 * [first, end) are the basic blocks of the WQEs in flight. */
static enum outcome wait_done(uint16_t first, uint16_t end, uint16_t last, unsigned ms)
{
	struct gnic_mlx5_cqe64 *ring_buf = H.dcq.buf, cqe;
	uint64_t deadline = t_now_ms() + ms;
	unsigned idle = 0;

	for (;;) {
		struct gnic_mlx5_cqe64 *p = &ring_buf[H.ci & (H.dcq.cqe_cnt - 1)];
		uint8_t op_own = __atomic_load_n(&p->op_own, __ATOMIC_ACQUIRE);
		uint16_t wc;
		uint8_t op;

		if (!gnic_mlx5_cqe_sw_owned(op_own, H.ci, H.dcq.cqe_cnt)) {
			if (t_now_ms() > deadline)
				return DONE_TIMEOUT;
			if (++idle > 64)
				sched_yield();
			continue;
		}
		memcpy(&cqe, p, sizeof(cqe));
		H.ci++;
		__atomic_store_n(&H.dcq.dbrec[0], gnic_be32(H.ci & 0xffffff), __ATOMIC_RELEASE);
		op = gnic_mlx5_cqe_opcode(cqe.op_own);
		wc = gnic_be16(cqe.wqe_counter);
		if (op != GNIC_MLX5_CQE_REQ && op != GNIC_MLX5_CQE_REQ_ERR)
			die("send CQ got CQE opcode %u", op);
		if ((gnic_be32(cqe.sop_drop_qpn) & 0xffffff) != H.qpn)
			die("send CQE for QPN 0x%x, ours is 0x%x",
			    gnic_be32(cqe.sop_drop_qpn) & 0xffffff, H.qpn);
		if ((uint16_t)(wc - first) >= (uint16_t)(end - first))
			die("CQE for WQE index %u, only [%u, %u) were posted", wc, first, end);
		if (op == GNIC_MLX5_CQE_REQ_ERR) {
			H.synd = ((const struct gnic_mlx5_err_cqe *)&cqe)->syndrome;
			return DONE_ERR;
		}
		if (wc == last)
			return DONE_OK;
	}
}

/* Receive completions (and anything else the verbs CQs hold). */
static void drain_verbs(void)
{
	struct ibv_wc wc[16];

	for (int n; (n = ibv_poll_cq(H.p.rcq[1], 16, wc)) > 0;)
		H.recv_posted -= (uint32_t)n < H.recv_posted ? (uint32_t)n : H.recv_posted;
	while (ibv_poll_cq(H.p.scq[1], 16, wc) > 0 || ibv_poll_cq(H.p.rcq[0], 16, wc) > 0)
		;
}

/* Every send CQE left (flushes after an error). */
static void drain_send(void)
{
	struct gnic_mlx5_cqe64 *ring_buf = H.dcq.buf;

	while (gnic_mlx5_cqe_sw_owned(
	    __atomic_load_n(&ring_buf[H.ci & (H.dcq.cqe_cnt - 1)].op_own, __ATOMIC_ACQUIRE), H.ci,
	    H.dcq.cqe_cnt))
		H.ci++;
	__atomic_store_n(&H.dcq.dbrec[0], gnic_be32(H.ci & 0xffffff), __ATOMIC_RELEASE);
}

/* Both QPs back to RTS with new PSNs; the SQ restarts at index 0. */
static void pair_reset(void)
{
	/* PSNs just below the 24-bit wrap now and then */
	H.resets++;
	H.psn = H.resets % 4 ? (H.psn + 0x010101) & 0xffffff : 0xffffff - H.resets % 61;
	H.p.opts.sq_psn = H.p.opts.rq_psn = H.psn;
	t_pair_reconnect(&H.p); /* RESET zeroes the SQ, record and register */
	drain_send();
	drain_verbs();
	H.recv_posted = 0;
	H.pi = 0;
	H.bf_off = 0;
}

/* Copy n basic blocks into the SQ at H.pi (wrapping) and advance it. */
static void sq_write(const uint8_t *blocks, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		memcpy(sq_bb((uint16_t)(H.pi + i)), blocks + i * BB, BB);
	H.pi = (uint16_t)(H.pi + n);
}

static void sq_zero(uint16_t from, uint16_t to)
{
	for (uint16_t i = from; i != to; i++)
		memset(sq_bb(i), 0, BB);
}

/* Post the harness's own WQEs (n blocks, last one signaled) and require
 * them to succeed. */
static void run_own(const uint8_t *blocks, uint32_t n, const char *what)
{
	uint16_t first = H.pi, last = (uint16_t)(H.pi + n - 1);
	enum outcome o;

	sq_write(blocks, n);
	ring(WQE_RING_GPU, last);
	o = wait_done(first, H.pi, last, SLOW_WAIT_MS);
	if (o != DONE_OK)
		die("%s: %s", what, o == DONE_ERR ? "error CQE" : "no CQE in time");
	sq_zero(first, H.pi);
}

/* NOPs up to one basic block before the SQ's end. */
static void pad_to_end(void)
{
	uint32_t cnt = H.dq.sq.wqe_cnt, n = (cnt - 1 - (H.pi & (cnt - 1))) & (cnt - 1);
	uint8_t *nops;

	if (!n)
		return;
	nops = calloc(n, BB);
	CHECK(nops);
	for (uint32_t i = 0; i < n; i++)
		set_ctrl(nops + i * BB, (uint16_t)(H.pi + i), GNIC_MLX5_OPCODE_NOP, 1,
		         i == n - 1 ? GNIC_MLX5_CTRL_CQ_UPDATE : 0);
	run_own(nops, n, "padding NOPs");
	free(nops);
}

/* The periodic check that the engine still works: a 1 KiB WRITE. */
static void health(void)
{
	uint8_t wqe[BB] = {0};
	struct gnic_mlx5_raddr_seg *r = (void *)(wqe + 16);
	struct gnic_mlx5_data_seg *d = (void *)(wqe + 32);
	uint8_t *src = H.reg[WQE_R_SRC] + 4096, *dst = H.reg[WQE_R_DST] + WQE_DST_HEALTH;

	t_fill(src, 1024, (uint32_t)H.inputs);
	set_ctrl(wqe, H.pi, GNIC_MLX5_OPCODE_RDMA_WRITE, 3, GNIC_MLX5_CTRL_CQ_UPDATE);
	r->raddr = gnic_be64((uintptr_t)dst);
	r->rkey = gnic_be32(H.key[WQE_R_DST]);
	d->byte_count = gnic_be32(1024);
	d->lkey = gnic_be32(H.key[WQE_R_SRC]);
	d->addr = gnic_be64((uintptr_t)src);
	run_own(wqe, 1, "health WRITE");
	if (memcmp(src, dst, 1024))
		die("health WRITE: completed but the target does not hold the bytes");
	check_memory("health WRITE");
}

/* ---- inputs ------------------------------------------------------------- */

static void relocate(uint8_t *b, uint32_t len)
{
	for (uint32_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v;

		memcpy(&v, b + i, 8);
		v = gnic_be64(v);
		if (v >> 40 != WQE_TOK_ADDR)
			continue;
		v = (uintptr_t)H.reg[(v >> 32 & 0xff) % WQE_NREG] + (int64_t)(int32_t)(uint32_t)v;
		v = gnic_be64(v);
		memcpy(b + i, &v, 8);
	}
	for (uint32_t i = 0; i + 4 <= len; i += 4) {
		uint32_t v;

		memcpy(&v, b + i, 4);
		v = gnic_be32(v);
		if (v >> 8 != WQE_TOK_KEY)
			continue;
		v = gnic_be32(H.key[(v & 0xff) % WQE_NREG]);
		memcpy(b + i, &v, 4);
	}
}

/* Walk the WQEs in the first nbb blocks as the engine will (ds gives each
 * one's size); with patch, give each ctrl its index and our QPN. Returns
 * where the chain ends, in blocks (a WQE may claim blocks past nbb). */
static uint32_t chain(uint8_t *b, uint32_t nbb, uint16_t start, bool patch)
{
	uint32_t at = 0;

	while (at < nbb) {
		struct gnic_mlx5_ctrl_seg *c = (void *)(b + at * BB);
		uint32_t w0 = gnic_be32(c->opmod_idx_opcode), ds = gnic_be32(c->qpn_ds) & 0x3f;

		if (patch) {
			w0 = (w0 & 0xff0000ffu) | (uint32_t)(uint16_t)(start + at) << 8;
			c->opmod_idx_opcode = gnic_be32(w0);
			c->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(H.qpn, ds));
		}
		at += ds ? (ds * 16 + BB - 1) / BB : 1;
	}
	return at;
}

static void post_recv(void)
{
	if (H.recv_posted >= RECV_MAX)
		return;
	t_post_recv_buf(H.p.qp[1], H.inputs, H.reg[WQE_R_DST] + WQE_DST_RECV, WQE_RECV_LEN,
	                H.key[WQE_R_DST]);
	H.recv_posted++;
}

static void setup(void)
{
	struct t_qp_caps caps;
	struct t_conn_opts o;
	struct mlx5dv_obj obj;

	/* quiet, and quick to notice mlx5dv doorbells (which cannot wake it) */
	setenv("GNIC_EMU_LOG", "0", 0);
	setenv("GNIC_EMU_SPIN_US", "200", 0);
	setenv("GNIC_EMU_SLEEP_US", "50", 0);
	H.ctx = t_open(T_DEVICE);
	t_qp_caps_default(&caps);
	caps.send_wr = 64;
	caps.recv_wr = 16;
	caps.recv_sge = 1;
	t_conn_opts_default(&o);
	o.timeout = 8; /* 1 ms: lost requests fail fast */
	o.retry_cnt = 1;
	o.rnr_retry = 1; /* a SEND without a receive fails after one retry */
	o.min_rnr_timer = 1;
	t_pair_create(&H.p, H.ctx, &caps, &o, 1024);
	memset(&obj, 0, sizeof(obj));
	obj.qp.in = H.p.qp[0];
	obj.qp.out = &H.dq;
	obj.cq.in = H.p.scq[0];
	obj.cq.out = &H.dcq;
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ));
	CHECK_EQ(H.dq.sq.stride, BB);
	/* a full SQ of flush CQEs fits in the CQ */
	CHECK_GE(H.dcq.cqe_cnt, H.dq.sq.wqe_cnt + CHAIN_MAX_BB);
	CHECK_GE(H.dq.sq.wqe_cnt, 2 * CHAIN_MAX_BB);
	H.qpn = H.p.qp[0]->qp_num;
	H.psn = o.sq_psn;
	H.verbose = getenv("FUZZ_WQE_VERBOSE") && atoi(getenv("FUZZ_WQE_VERBOSE"));
	arena_setup();
	mr_setup();
}

static void summary(void)
{
	fprintf(stderr, "fuzz_wqe: %llu inputs, %llu QP resets, %llu answered later than %d ms\n",
	        (unsigned long long)H.inputs, (unsigned long long)H.resets,
	        (unsigned long long)H.timeouts, WAIT_MS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setup();
	atexit(summary);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t blocks[CHAIN_MAX_BB * BB];
	uint32_t nbb, end;
	uint16_t first;
	enum outcome o;
	uint8_t ctl;

	if (size < 1)
		return 0;
	ctl = data[0];
	nbb = (ctl & WQE_CTL_NBB) + 1u;
	memset(blocks, 0, sizeof(blocks));
	memcpy(blocks, data + 1, size - 1 < nbb * BB ? size - 1 : nbb * BB);
	if (ctl & WQE_CTL_RELOC)
		relocate(blocks, nbb * BB);
	if (ctl & WQE_CTL_RECV)
		post_recv();
	if (ctl & WQE_CTL_STRADDLE)
		pad_to_end();

	first = H.pi;
	end = chain(blocks, nbb, first, ctl & WQE_CTL_PATCH);
	set_ctrl(blocks + end * BB, (uint16_t)(first + end), GNIC_MLX5_OPCODE_NOP, 1,
	         GNIC_MLX5_CTRL_CQ_UPDATE);
	sq_write(blocks, end + 1);
	ring((enum wqe_ring)((ctl & WQE_CTL_RING) >> WQE_CTL_RING_SHIFT), (uint16_t)(first + end));
	o = wait_done(first, H.pi, (uint16_t)(first + end), WAIT_MS);
	if (o == DONE_TIMEOUT) {
		/* slow (a loaded machine), or lost: nothing legitimate keeps
		 * the NOP's CQE, or an error CQE, from coming */
		H.timeouts++;
		o = wait_done(first, H.pi, (uint16_t)(first + end), SLOW_WAIT_MS);
		if (o == DONE_TIMEOUT)
			die("no CQE for the input's WQEs or the NOP behind them at [%u, %u) within "
			    "%d ms; QP states %s / %s",
			    first, H.pi, WAIT_MS + SLOW_WAIT_MS,
			    t_qp_state_str(t_qp_state(H.p.qp[0])),
			    t_qp_state_str(t_qp_state(H.p.qp[1])));
	}
	if (H.verbose)
		printf("wqe: ctl 0x%02x, %u blocks at %u: %s (syndrome 0x%02x)\n", ctl, end + 1,
		       first, o == DONE_OK ? "ok" : "error CQE", o == DONE_ERR ? H.synd : 0);
	check_memory("after the input");
	if (o == DONE_OK &&
	    (t_qp_state(H.p.qp[0]) != IBV_QPS_RTS || t_qp_state(H.p.qp[1]) != IBV_QPS_RTS))
		die("every WQE completed, but QP states are %s / %s",
		    t_qp_state_str(t_qp_state(H.p.qp[0])), t_qp_state_str(t_qp_state(H.p.qp[1])));
	if (o == DONE_ERR && t_qp_state(H.p.qp[0]) != IBV_QPS_ERR)
		die("error CQE (syndrome 0x%02x), but the QP is in %s, not ERR", H.synd,
		    t_qp_state_str(t_qp_state(H.p.qp[0])));
	if (o == DONE_OK) {
		/* a CQE left behind the NOP's shows up at the next wait_done() */
		sq_zero(first, H.pi);
		drain_verbs();
	} else {
		pair_reset();
		check_memory("after the reset");
	}
	if (++H.inputs % HEALTH_EVERY == 0)
		health();
	return 0;
}
