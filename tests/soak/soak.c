// SPDX-License-Identifier: MIT
/*
 * Soak test of the device data path (gnic_dev.cuh on CPU threads) over
 * gnic-emu: Q connected pairs of QPs in this process, T threads posting random
 * operations of random sizes on all of them at once for a fixed time, and a
 * model that accounts for everything.
 *
 *   soak [--seconds S] [--qps Q] [--threads T] [--seed N]
 *
 * Each pair is an initiator QP (shared by every thread, GNIC_SHARE_GPU) and a
 * target QP. Pair q's doorbell mode is SM, BF, CPU or PROXY (q % 4). Every thread
 * owns one slice of target memory per pair, written only by that thread and
 * only through that pair, so the expected content of every byte is known:
 *
 *   data[DATA_LEN]   puts, inline puts, put_signal data, READ-fence-WRITE copies
 *   sig, atom        64-bit words: signal adds, fetch-add and compare-and-swap
 *   recv[RECV_SLOTS] receive buffers (the thread that owns pair q for
 *                    messaging, q % T, posts them on the target QP)
 *
 * Checks: READs return the model's bytes (RC orders them after the thread's
 * earlier writes on the same QP); a signaled put's bytes are in place at its
 * ticket; put_signal's data is in place once the signal is seen; every
 * atomic's old value is the model's; every receive's length, immediate and
 * bytes are the sent ones (some SENDs go out before their receive is posted:
 * RNR NAK, retry, go-back-N under the other threads' traffic); after each
 * quiet, and at the end, every slice, signal total and atomic word equals the
 * model; at the end every QP has retired every basic block it reserved,
 * every receive was consumed, and no QP recorded an error.
 *
 * Prints one summary line (ops by kind, bytes, ops/s, errors); exit 0 only
 * with 0 errors.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

#define MAX_QPS     64
#define MAX_THREADS 64
#define DATA_LEN    (64u << 10)
#define WORDS_LEN   4096u
#define RECV_SLOTS  4
#define RECV_LEN    8192u
#define SLICE_LEN   (DATA_LEN + WORDS_LEN + RECV_SLOTS * RECV_LEN)
#define SRC_LEN     (512u << 10) /* per thread: sources of posts in flight */
#define GET_LEN     (64u << 10)  /* per thread: READ destination */
#define LOCAL_LEN   (SRC_LEN + GET_LEN)
#define MAX_INLINE  128
#define MAX_ERRORS  20 /* printed; all are counted */

enum op {
	OP_PUT,
	OP_PUT_WAIT,
	OP_PUT_INLINE,
	OP_PUT_SIGNAL,
	OP_SIGNAL,
	OP_GET,
	OP_GET_FENCE_PUT,
	OP_FADD,
	OP_CAS,
	OP_SEND,
	OP_SEND_RNR,
	OP_FENCE,
	OP_QUIET,
	NOPS
};

static const char *const op_names[NOPS] = {
    "put",  "put_wait", "put_inline", "put_signal", "signal", "get_wait", "get_fence_put",
    "fadd", "cas",      "send",       "send_rnr",   "fence",  "quiet"};
/* relative frequencies */
static const unsigned op_weight[NOPS] = {24, 6, 14, 10, 3, 10, 5, 8, 7, 6, 1, 2, 4};

/* One thread's part of one pair's target memory, and its model. */
struct slice {
	uint8_t *data;        /* DATA_LEN bytes at the target */
	uint64_t *sig, *atom; /* target words */
	uint8_t *recv;        /* RECV_SLOTS x RECV_LEN */
	uint64_t raddr;       /* remote address of data; words and recv follow */
	uint8_t *model;       /* what data must hold */
	uint64_t sig_model, atom_model;
};

struct pair {
	struct gnic_qp *qa, *qb;
	struct gnic_dev_qp *a, *b;       /* a posts, b is the target */
	uint64_t recv_posted, recv_done; /* by the owner (q % T) only */
};

struct worker {
	int id;
	pthread_t th;
	uint64_t rng;
	uint8_t *src, *get; /* local buffers */
	uint32_t src_off;   /* next free byte of src */
	struct slice slice[MAX_QPS];
	uint64_t ops[NOPS], bytes;
};

static struct {
	unsigned seconds, nqps, nthreads;
	uint64_t seed;
	struct gnic_ctx *ctx;
	struct pair pair[MAX_QPS];
	uint8_t *tgt, *local;
	struct gnic_mr *tgt_mr, *local_mr;
	uint32_t tgt_rkey, tgt_lkey, local_lkey;
	uint64_t tgt_raddr;
	uint64_t deadline_ns;
	unsigned weight_total;
	struct worker w[MAX_THREADS];
	atomic_uint errors;
	atomic_int stop;
} S;

static void error(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void error(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&S.errors, 1) < MAX_ERRORS) {
		fprintf(stderr, "soak: thread %d: ", w ? w->id : -1);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\n");
	}
}

/* A data-path call failed: the QP is unusable, so this run is over. */
static bool dev_ok(struct worker *w, int q, int rc, const char *what)
{
	struct gnic_qp_error e;

	if (rc == GNIC_DEV_OK)
		return true;
	gnic_qp_error(S.pair[q].qa, &e);
	error(w, "%s on pair %d: status %d; initiator QP error: %s", what, q, rc, e.text);
	atomic_store(&S.stop, 1);
	return false;
}

static uint64_t rnd(struct worker *w)
{
	uint64_t x = w->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	w->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd_below(struct worker *w, uint32_t n)
{
	return (uint32_t)(rnd(w) % n);
}

/* Mostly small messages, some medium, a few large (up to max). */
static uint32_t rnd_len(struct worker *w, uint32_t max)
{
	uint32_t k = rnd_below(w, 100), lim = k < 70 ? 256 : k < 95 ? 4096 : max;

	return 1 + rnd_below(w, lim < max ? lim : max);
}

static void fill(struct worker *w, uint8_t *p, uint32_t len)
{
	uint64_t x = rnd(w);

	for (uint32_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

/* ---- local buffers -------------------------------------------------------- */

static bool quiet_all(struct worker *w)
{
	for (unsigned q = 0; q < S.nqps; q++)
		if (!dev_ok(w, (int)q, gnic_dev_quiet(S.pair[q].a), "quiet"))
			return false;
	return true;
}

/* len bytes of src that no post in flight uses; NULL after a failure. Space
 * comes back by quieting every QP once the ring is used up. */
static uint8_t *src_take(struct worker *w, uint32_t len)
{
	uint8_t *p;

	if (w->src_off + len > SRC_LEN) {
		if (!quiet_all(w))
			return NULL;
		w->src_off = 0;
	}
	p = w->src + w->src_off;
	w->src_off = (w->src_off + len + 63) & ~63u;
	return p;
}

/* ---- checks --------------------------------------------------------------- */

static void check_bytes(struct worker *w, int q, const uint8_t *got, const uint8_t *want,
                        uint32_t len, const char *what)
{
	uint32_t first = 0, n = 0;

	if (!memcmp(got, want, len))
		return;
	for (uint32_t i = 0; i < len; i++)
		if (got[i] != want[i] && n++ == 0)
			first = i;
	error(w, "%s on pair %d: %u of %u bytes differ, first at %u: 0x%02x, want 0x%02x", what, q,
	      n, len, first, got[first], want[first]);
}

/* After a quiet of pair q: the whole slice equals the model. */
static void check_slice(struct worker *w, int q, const char *when)
{
	struct slice *s = &w->slice[q];
	uint64_t sig = __atomic_load_n(s->sig, __ATOMIC_ACQUIRE);
	uint64_t atom = __atomic_load_n(s->atom, __ATOMIC_ACQUIRE);

	check_bytes(w, q, s->data, s->model, DATA_LEN, when);
	if (sig != s->sig_model)
		error(w, "%s on pair %d: signal word %llu, model %llu", when, q,
		      (unsigned long long)sig, (unsigned long long)s->sig_model);
	if (atom != s->atom_model)
		error(w, "%s on pair %d: atomic word %llu, model %llu", when, q,
		      (unsigned long long)atom, (unsigned long long)s->atom_model);
}

/* ---- operations --------------------------------------------------------------- */

/* A put into the slice; with wait, signaled and waited for, then checked. */
static bool op_put(struct worker *w, int q, bool wait)
{
	struct slice *s = &w->slice[q];
	uint32_t len = rnd_len(w, DATA_LEN / 2), off = rnd_below(w, DATA_LEN - len + 1);
	uint8_t *src = src_take(w, len);
	uint64_t ticket = 0;

	if (!src)
		return false;
	fill(w, src, len);
	memcpy(s->model + off, src, len);
	if (!dev_ok(w, q,
	            gnic_dev_put(S.pair[q].a, src, S.local_lkey, s->raddr + off, S.tgt_rkey, len,
	                         wait ? GNIC_DEV_F_SIGNAL : 0, wait ? &ticket : NULL),
	            "put"))
		return false;
	if (wait) {
		if (!dev_ok(w, q, gnic_dev_wait(S.pair[q].a, ticket), "put ticket wait"))
			return false;
		check_bytes(w, q, s->data + off, s->model + off, len, "put at its ticket");
	}
	w->bytes += len;
	return true;
}

static bool op_put_inline(struct worker *w, int q)
{
	struct slice *s = &w->slice[q];
	uint32_t len = 1 + rnd_below(w, S.pair[q].a->max_inline),
	         off = rnd_below(w, DATA_LEN - len + 1);
	uint8_t src[MAX_INLINE];

	fill(w, src, len);
	memcpy(s->model + off, src, len);
	if (!dev_ok(w, q, gnic_dev_put_inline(S.pair[q].a, src, len, s->raddr + off, S.tgt_rkey, 0),
	            "put_inline"))
		return false;
	memset(src, 0xa5, len); /* inline: the source is free at once */
	w->bytes += len;
	return true;
}

/* put + signal add; once the signal shows the add, the data must be there. */
static bool op_put_signal(struct worker *w, int q)
{
	struct slice *s = &w->slice[q];
	uint32_t len = rnd_len(w, DATA_LEN / 4), off = rnd_below(w, DATA_LEN - len + 1);
	uint64_t add = 1 + rnd_below(w, 1000);
	uint8_t *src = src_take(w, len);

	if (!src)
		return false;
	fill(w, src, len);
	memcpy(s->model + off, src, len);
	s->sig_model += add;
	if (!dev_ok(w, q,
	            gnic_dev_put_signal(S.pair[q].a, src, S.local_lkey, s->raddr + off, S.tgt_rkey,
	                                len, s->raddr + DATA_LEN, S.tgt_rkey, add, 0),
	            "put_signal"))
		return false;
	/* the words are written only by this thread's adds: EQ, not GE */
	if (!dev_ok(w, q, gnic_dev_wait_signal(s->sig, GNIC_CMP_EQ, s->sig_model, 10000000000ull),
	            "wait_signal after put_signal"))
		return false;
	check_bytes(w, q, s->data + off, s->model + off, len, "put_signal data at its signal");
	w->bytes += len;
	return true;
}

static bool op_signal(struct worker *w, int q)
{
	struct slice *s = &w->slice[q];
	uint64_t add = 1 + rnd_below(w, 1u << 20);

	s->sig_model += add;
	return dev_ok(w, q, gnic_dev_signal(S.pair[q].a, s->raddr + DATA_LEN, S.tgt_rkey, add, 0),
	              "signal");
}

static bool op_get(struct worker *w, int q)
{
	struct slice *s = &w->slice[q];
	uint32_t len = rnd_len(w, GET_LEN), off = rnd_below(w, DATA_LEN - len + 1);

	memset(w->get, 0, len);
	if (!dev_ok(w, q,
	            gnic_dev_get_wait(S.pair[q].a, w->get, S.local_lkey, s->raddr + off, S.tgt_rkey,
	                              len),
	            "get_wait"))
		return false;
	check_bytes(w, q, w->get, s->model + off, len, "get after earlier writes");
	w->bytes += len;
	return true;
}

/* READ a range, fence, WRITE what was read to another range. */
static bool op_get_fence_put(struct worker *w, int q)
{
	struct slice *s = &w->slice[q];
	uint32_t len = rnd_len(w, 8192), from = rnd_below(w, DATA_LEN - len + 1),
	         to = rnd_below(w, DATA_LEN - len + 1);
	uint8_t *buf = src_take(w, len);
	struct gnic_dev_qp *a = S.pair[q].a;

	if (!buf)
		return false;
	if (!dev_ok(w, q,
	            gnic_dev_get(a, buf, S.local_lkey, s->raddr + from, S.tgt_rkey, len, NULL),
	            "get") ||
	    !dev_ok(w, q, gnic_dev_fence(a), "fence") ||
	    !dev_ok(w, q,
	            gnic_dev_put(a, buf, S.local_lkey, s->raddr + to, S.tgt_rkey, len, 0, NULL),
	            "put after fence"))
		return false;
	memmove(s->model + to, s->model + from, len);
	w->bytes += 2ull * len;
	return true;
}

static bool op_atomic(struct worker *w, int q, bool cas)
{
	struct slice *s = &w->slice[q];
	uint64_t old = ~0ull, raddr = s->raddr + DATA_LEN + 64;
	int rc;

	if (cas) {
		bool hit = rnd_below(w, 2);
		uint64_t cmp = hit ? s->atom_model : s->atom_model ^ 1, swap = rnd(w);

		rc = gnic_dev_atomic_cas(S.pair[q].a, raddr, S.tgt_rkey, cmp, swap, &old);
		if (!dev_ok(w, q, rc, "atomic_cas"))
			return false;
		if (old != s->atom_model)
			error(w, "cas on pair %d returned %llu, model %llu", q,
			      (unsigned long long)old, (unsigned long long)s->atom_model);
		if (hit)
			s->atom_model = swap;
		return true;
	}
	{
		uint64_t add = rnd(w) >> 1;

		rc = gnic_dev_atomic_fetch_add(S.pair[q].a, raddr, S.tgt_rkey, add, &old);
		if (!dev_ok(w, q, rc, "atomic_fetch_add"))
			return false;
		if (old != s->atom_model)
			error(w, "fetch_add on pair %d returned %llu, model %llu", q,
			      (unsigned long long)old, (unsigned long long)s->atom_model);
		s->atom_model += add;
	}
	return true;
}

/* Post the next receive of pair q (owner only). */
static bool recv_post(struct worker *w, int q)
{
	struct pair *p = &S.pair[q];
	uint8_t *buf = w->slice[q].recv + (p->recv_posted % RECV_SLOTS) * RECV_LEN;

	if (!dev_ok(w, q, gnic_dev_recv_post(p->b, buf, S.tgt_lkey, RECV_LEN), "recv_post"))
		return false;
	p->recv_posted++;
	return true;
}

/* SEND or SEND_IMM on pair q, received and checked. With rnr, the receive is
 * posted only after the SEND went out: the target answers RNR NAK until it
 * is there, and the initiator goes back to the SEND and resends everything
 * the other threads posted behind it. */
static bool op_send(struct worker *w, int q, bool rnr)
{
	struct pair *p = &S.pair[q];
	uint32_t len = rnd_len(w, RECV_LEN), imm = (uint32_t)rnd(w), got_len = 0, got_imm = 0;
	bool with_imm = rnd_below(w, 2);
	uint32_t slot = p->recv_done % RECV_SLOTS;
	uint8_t *src = src_take(w, len);
	int rc;

	if (!src)
		return false;
	fill(w, src, len);
	if (!rnr && p->recv_posted == p->recv_done && !recv_post(w, q))
		return false;
	if (with_imm)
		rc = gnic_dev_post_rdma(p->a, GNIC_MLX5_OPCODE_SEND_IMM, src, S.local_lkey, 0, 0,
		                        len, 0, imm, NULL);
	else
		rc = gnic_dev_send(p->a, src, S.local_lkey, len, 0);
	if (!dev_ok(w, q, rc, with_imm ? "send_imm" : "send"))
		return false;
	if (rnr) {
		usleep(200 + rnd_below(w, 2000));
		if (!recv_post(w, q))
			return false;
	}
	if (!dev_ok(w, q, gnic_dev_recv_wait(p->b, &got_len, &got_imm), "recv_wait"))
		return false;
	p->recv_done++;
	if (got_len != len)
		error(w, "receive on pair %d: length %u, sent %u", q, got_len, len);
	if (with_imm && got_imm != imm)
		error(w, "receive on pair %d: immediate 0x%08x, sent 0x%08x", q, got_imm, imm);
	check_bytes(w, q, w->slice[q].recv + slot * RECV_LEN, src, len < got_len ? len : got_len,
	            "received bytes");
	w->bytes += len;
	return true;
}

static enum op pick(struct worker *w)
{
	unsigned r = rnd_below(w, S.weight_total);

	for (int i = 0; i < NOPS; i++) {
		if (r < op_weight[i])
			return (enum op)i;
		r -= op_weight[i];
	}
	return OP_PUT;
}

/* The pair this thread sends on, or -1 when it owns none. */
static int owned_pair(struct worker *w)
{
	unsigned n = 0;

	for (unsigned q = (unsigned)w->id; q < S.nqps; q += S.nthreads)
		n++;
	if (!n)
		return -1;
	return (int)((unsigned)w->id + S.nthreads * rnd_below(w, n));
}

static bool run_op(struct worker *w, enum op op)
{
	int q = (int)rnd_below(w, S.nqps);

	switch (op) {
	case OP_PUT:
		return op_put(w, q, false);
	case OP_PUT_WAIT:
		return op_put(w, q, true);
	case OP_PUT_INLINE:
		return op_put_inline(w, q);
	case OP_PUT_SIGNAL:
		return op_put_signal(w, q);
	case OP_SIGNAL:
		return op_signal(w, q);
	case OP_GET:
		return op_get(w, q);
	case OP_GET_FENCE_PUT:
		return op_get_fence_put(w, q);
	case OP_FADD:
	case OP_CAS:
		return op_atomic(w, q, op == OP_CAS);
	case OP_SEND:
	case OP_SEND_RNR:
		q = owned_pair(w);
		return q < 0 || op_send(w, q, op == OP_SEND_RNR);
	case OP_FENCE:
		return dev_ok(w, q, gnic_dev_fence(S.pair[q].a), "fence");
	case OP_QUIET:
		if (!dev_ok(w, q, gnic_dev_quiet(S.pair[q].a), "quiet"))
			return false;
		check_slice(w, q, "slice after quiet");
		return true;
	default:
		return false;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load(&S.stop) && gnic_now_ns() < S.deadline_ns) {
		enum op op = pick(w);

		if (owned_pair(w) < 0 && (op == OP_SEND || op == OP_SEND_RNR))
			continue;
		if (!run_op(w, op))
			break;
		w->ops[op]++;
	}
	/* everything this thread posted lands before the final check */
	quiet_all(w);
	return NULL;
}

/* ---- set-up and the final account -------------------------------------------- */

static int die(const char *what)
{
	fprintf(stderr, "soak: %s: %s\n", what, gnic_last_error());
	return 1;
}

static void *alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static int setup(void)
{
	static const enum gnic_db_mode modes[4] = {GNIC_DB_SM, GNIC_DB_BF, GNIC_DB_CPU,
	                                           GNIC_DB_PROXY};
	struct gnic_ctx_attr ca;
	struct gnic_rmem rm;
	size_t tgt_len = (size_t)S.nqps * S.nthreads * SLICE_LEN;

	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = GNIC_GPU_NONE;
	if (gnic_ctx_create(&ca, &S.ctx))
		return die("gnic_ctx_create");
	S.tgt = alloc(tgt_len);
	S.local = alloc((size_t)S.nthreads * LOCAL_LEN);
	if (!S.tgt || !S.local)
		return die("out of memory");
	if (gnic_mr_reg(S.ctx, S.tgt, tgt_len, GNIC_ACCESS_ALL, &S.tgt_mr) ||
	    gnic_mr_reg(S.ctx, S.local, (size_t)S.nthreads * LOCAL_LEN, GNIC_ACCESS_ALL,
	                &S.local_mr))
		return die("gnic_mr_reg");
	gnic_mr_rmem(S.tgt_mr, &rm);
	S.tgt_raddr = rm.addr;
	S.tgt_rkey = rm.rkey;
	S.tgt_lkey = gnic_mr_lkey(S.tgt_mr);
	S.local_lkey = gnic_mr_lkey(S.local_mr);
	for (unsigned q = 0; q < S.nqps; q++) {
		struct pair *p = &S.pair[q];
		struct gnic_qp_attr attr;
		struct gnic_blob ba, bb;

		gnic_qp_attr_init(&attr);
		attr.share = GNIC_SHARE_GPU;
		attr.max_inline = MAX_INLINE;
		attr.db_mode = modes[q % 4];
		if (gnic_qp_create(S.ctx, &attr, &p->qa) || gnic_qp_create(S.ctx, &attr, &p->qb) ||
		    gnic_qp_export(p->qa, &ba) || gnic_qp_export(p->qb, &bb) ||
		    gnic_qp_connect(p->qa, &bb) || gnic_qp_connect(p->qb, &ba))
			return die("QP pair");
		p->a = gnic_qp_dev(p->qa);
		p->b = gnic_qp_dev(p->qb);
	}
	for (unsigned t = 0; t < S.nthreads; t++) {
		struct worker *w = &S.w[t];

		w->id = (int)t;
		w->rng = S.seed * 0x9e3779b97f4a7c15ull + t + 1;
		w->src = S.local + (size_t)t * LOCAL_LEN;
		w->get = w->src + SRC_LEN;
		for (unsigned q = 0; q < S.nqps; q++) {
			struct slice *s = &w->slice[q];
			size_t off = ((size_t)q * S.nthreads + t) * SLICE_LEN;

			s->data = S.tgt + off;
			s->sig = (uint64_t *)(s->data + DATA_LEN);
			s->atom = (uint64_t *)(s->data + DATA_LEN + 64);
			s->recv = s->data + DATA_LEN + WORDS_LEN;
			s->raddr = S.tgt_raddr + off;
			s->model = calloc(1, DATA_LEN);
			if (!s->model)
				return die("out of memory");
		}
	}
	return 0;
}

/* Every QP idle, nothing left over, no error recorded. */
static void final_account(void)
{
	for (unsigned q = 0; q < S.nqps; q++) {
		struct pair *p = &S.pair[q];
		struct gnic_qp_error e;
		/* GNIC_DB_PROXY: the proxy's done count stands for sq_retired */
		uint64_t retired = p->a->db_mode == GNIC_DB_PROXY
		                       ? __atomic_load_n(&p->a->px->done, __ATOMIC_ACQUIRE)
		                       : p->a->sq_retired;

		if (retired != p->a->sq_reserved)
			error(NULL, "pair %u: %llu BBs reserved, %llu retired", q,
			      (unsigned long long)p->a->sq_reserved, (unsigned long long)retired);
		if (p->recv_posted != p->recv_done || p->b->rq_posted != p->recv_posted ||
		    p->b->rq_done != p->recv_done)
			error(
			    NULL,
			    "pair %u: receives posted %llu (device %llu), done %llu (device %llu)",
			    q, (unsigned long long)p->recv_posted,
			    (unsigned long long)p->b->rq_posted, (unsigned long long)p->recv_done,
			    (unsigned long long)p->b->rq_done);
		gnic_qp_error(p->qa, &e);
		if (e.dev_status)
			error(NULL, "pair %u initiator: %s", q, e.text);
		gnic_qp_error(p->qb, &e);
		if (e.dev_status)
			error(NULL, "pair %u target: %s", q, e.text);
		for (unsigned t = 0; t < S.nthreads; t++)
			check_slice(&S.w[t], (int)q, "final slice");
	}
}

static void teardown(void)
{
	for (unsigned q = 0; q < S.nqps; q++) {
		gnic_qp_destroy(S.pair[q].qa);
		gnic_qp_destroy(S.pair[q].qb);
	}
	gnic_mr_dereg(S.tgt_mr);
	gnic_mr_dereg(S.local_mr);
	gnic_ctx_destroy(S.ctx);
	for (unsigned t = 0; t < S.nthreads; t++)
		for (unsigned q = 0; q < S.nqps; q++)
			free(S.w[t].slice[q].model);
	free(S.tgt);
	free(S.local);
}

static void summary(double secs)
{
	uint64_t ops[NOPS] = {0}, total = 0, bytes = 0;

	for (unsigned t = 0; t < S.nthreads; t++) {
		for (int i = 0; i < NOPS; i++)
			ops[i] += S.w[t].ops[i];
		bytes += S.w[t].bytes;
	}
	printf("soak: %.1f s, %u QP pairs x %u threads, seed %llu:", secs, S.nqps, S.nthreads,
	       (unsigned long long)S.seed);
	for (int i = 0; i < NOPS; i++) {
		printf(" %s %llu", op_names[i], (unsigned long long)ops[i]);
		total += ops[i];
	}
	printf("; %llu ops, %.1f MiB, %.0f ops/s, errors %u\n", (unsigned long long)total,
	       (double)bytes / (1 << 20), (double)total / secs, atomic_load(&S.errors));
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: soak [--seconds S (10)] [--qps Q 1-%d (4)] [--threads T 1-%d (4)] "
	        "[--seed N (1)]\n",
	        MAX_QPS, MAX_THREADS);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"seconds", required_argument, NULL, 's'},
	                                     {"qps", required_argument, NULL, 'q'},
	                                     {"threads", required_argument, NULL, 't'},
	                                     {"seed", required_argument, NULL, 'r'},
	                                     {NULL, 0, NULL, 0}};
	uint64_t t0;
	double secs;
	int c;

	S.seconds = 10;
	S.nqps = 4;
	S.nthreads = 4;
	S.seed = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		unsigned long v;

		if (c == '?')
			return usage();
		errno = 0;
		v = strtoul(optarg, &end, 0);
		if (errno || *end || end == optarg)
			return usage();
		if (c == 's')
			S.seconds = (unsigned)v;
		else if (c == 'q')
			S.nqps = (unsigned)v;
		else if (c == 't')
			S.nthreads = (unsigned)v;
		else
			S.seed = v;
	}
	if (optind != argc || S.nqps < 1 || S.nqps > MAX_QPS || S.nthreads < 1 ||
	    S.nthreads > MAX_THREADS || S.seconds < 1)
		return usage();
	for (int i = 0; i < NOPS; i++)
		S.weight_total += op_weight[i];
	if (setup())
		return 1;
	t0 = gnic_now_ns();
	S.deadline_ns = t0 + (uint64_t)S.seconds * 1000000000ull;
	for (unsigned t = 0; t < S.nthreads; t++)
		if (pthread_create(&S.w[t].th, NULL, worker_main, &S.w[t])) {
			fprintf(stderr, "soak: pthread_create failed\n");
			return 1;
		}
	for (unsigned t = 0; t < S.nthreads; t++)
		pthread_join(S.w[t].th, NULL);
	secs = (double)(gnic_now_ns() - t0) / 1e9;
	final_account();
	summary(secs);
	teardown();
	return atomic_load(&S.errors) ? 1 : 0;
}
