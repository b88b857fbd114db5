/* SPDX-License-Identifier: MIT */
/*
 * Publish marks across SQ laps, failing within seconds and saying where.
 * On a shared QP a poster marks its slot with the index it wrote there and
 * any poster moves sq_ready over marked slots; a mark is valid only for the
 * lap it names, since every slot still holds the mark of the lap before. A
 * tiny SQ and many threads make every slot change lap hundreds of times
 * while others' marks sit in it.
 *
 * Every WQE is a SEND whose message names its thread, its sequence number
 * and its SQ index; this thread receives them (without blocking) and checks
 * that each thread's messages arrive exactly once and in order, that SQ
 * indexes only grow (the NIC's order is the SQ's), that sq_ready never
 * passes sq_reserved, and that messages keep coming. Singles and blocks of
 * WQEs under one reservation (one mark for several BBs, as a warp posts)
 * are mixed, so marks of different sizes meet in the same slots.
 */
#include "dev_common.h"

#define THREADS 8
#define POSTS   400 /* reservations per thread: 1, 2 or 3 SENDs each */
#define MAX_MSG (POSTS * 3)
#define STALL_S 3 /* no message for this long: the SQ is stuck */
#define STR_(x) #x
#define STR(x)  STR_(x)

/* Indexes that are the second or later BB of a block (one mark for all). */
#define LOG_LEN (THREADS * (MAX_MSG + 2) + 64)
static uint8_t in_block[LOG_LEN];

struct msg {
	uint32_t thread, seq;
	uint64_t idx; /* the SQ index of the SEND that carried it */
};

struct poster {
	struct pair *p;
	pthread_barrier_t *start;
	int id;
	uint32_t sent;
	int rc;
};

/* How many SENDs reservation i of a thread carries. */
static uint32_t block_len(int id, uint32_t i)
{
	return 1 + (id + i) % 3;
}

static uint32_t total_msgs(int id)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < POSTS; i++)
		n += block_len(id, i);
	return n;
}

static struct msg *msg_buf(struct pair *p, int id, uint32_t seq)
{
	return (struct msg *)p->abuf + (size_t)id * MAX_MSG + seq;
}

/* One reservation of n SENDs, each message written once its index is known. */
static int post_block(struct poster *t, uint32_t n)
{
	struct pair *p = t->p;
	uint64_t base;
	int rc = gnic_dev_sq_reserve(p->a, n, &base);

	if (rc)
		return rc;
	for (uint32_t k = 0; k < n; k++) {
		struct msg *m = msg_buf(p, t->id, t->sent);

		if (k && base + k < LOG_LEN)
			__atomic_store_n(&in_block[base + k], 1, __ATOMIC_RELAXED);
		*m = (struct msg){.thread = (uint32_t)t->id, .seq = t->sent++, .idx = base + k};
		gnic_dev_wqe_rdma(p->a, base + k, GNIC_MLX5_OPCODE_SEND, (uintptr_t)m,
		                  gnic_mr_lkey(p->amr), 0, 0, sizeof(*m), 0, 0, NULL);
	}
	return gnic_dev_sq_commit(p->a, base, n, NULL);
}

static void *post(void *arg)
{
	struct poster *t = arg;

	pthread_barrier_wait(t->start);
	for (uint32_t i = 0; i < POSTS && !t->rc; i++)
		t->rc = post_block(t, block_len(t->id, i));
	if (!t->rc)
		t->rc = gnic_dev_quiet(t->p->a);
	return NULL;
}

/* ---- the receiving side ----------------------------------------------------------- */

struct check {
	struct pair *p;
	uint32_t next[THREADS]; /* each thread's next sequence number */
	uint32_t got, want;
	uint64_t last_idx; /* SQ index of the last message + 1 */
	uint32_t rq_cnt;
};

static uint64_t slot_of(const struct gnic_dev_qp *qp, uint64_t idx)
{
	return idx & (qp->sq_wqe_cnt - 1);
}

static uint64_t lap_of(const struct gnic_dev_qp *qp, uint64_t idx)
{
	return idx / qp->sq_wqe_cnt;
}

/* The first index from sq_retired on that starts a WQE (or a block) and
 * whose slot does not hold its mark: where sq_ready has to stop. */
static uint64_t ready_stop(const struct gnic_dev_qp *qp, uint64_t from, uint64_t end)
{
	for (uint64_t i = from; i < end && i < LOG_LEN; i++) {
		uint64_t m = gnic_load_acq64(&qp->sq_pub[slot_of(qp, i)]);

		if (!__atomic_load_n(&in_block[i], __ATOMIC_RELAXED) && (m >> 16) != i)
			return i;
	}
	return end;
}

/* The sending QP's counters, and where the ready index should stand: the
 * mark found there names another lap (or none). */
static void print_sq(struct gnic_dev_qp *qp)
{
	uint64_t ready = gnic_load_acq64(&qp->sq_ready);
	uint64_t retired = gnic_load_acq64(&qp->sq_retired);
	uint64_t reserved = gnic_load_acq64(&qp->sq_reserved);
	uint64_t stop = ready_stop(qp, retired, reserved);
	uint64_t mark = gnic_load_acq64(&qp->sq_pub[slot_of(qp, stop)]);

	fprintf(stderr,
	        "  SQ of %u BBs: reserved %llu, ready %llu (slot %llu, lap %llu), rung %llu, "
	        "retired %llu\n",
	        qp->sq_wqe_cnt, (unsigned long long)reserved, (unsigned long long)ready,
	        (unsigned long long)slot_of(qp, ready), (unsigned long long)lap_of(qp, ready),
	        (unsigned long long)gnic_load_acq64(&qp->sq_rung), (unsigned long long)retired);
	fprintf(stderr,
	        "  marks from retired on say ready stops at index %llu (slot %llu, lap %llu), "
	        "whose slot holds the mark of index %llu (lap %llu, %llu BBs)\n",
	        (unsigned long long)stop, (unsigned long long)slot_of(qp, stop),
	        (unsigned long long)lap_of(qp, stop), (unsigned long long)(mark >> 16),
	        (unsigned long long)lap_of(qp, mark >> 16), (unsigned long long)(mark & 0xffff));
	if (gnic_dev_failed(qp))
		fprintf(stderr, "  QP failed: status %d, WQE counter %u (slot %u)\n",
		        (int)qp->err->status, qp->err->wqe_counter,
		        qp->err->wqe_counter & (qp->sq_wqe_cnt - 1));
}

static void fail_sq(const struct check *c, const char *why)
{
	fprintf(stderr, "%s, after %u of %u messages:\n", why, c->got, c->want);
	print_sq(c->p->a);
	T_FAIL("%s", why);
}

/* sq_ready is read first: both only grow, so a ready above reserved is real. */
static void check_ready(const struct check *c)
{
	const struct gnic_dev_qp *qp = c->p->a;
	uint64_t ready = gnic_load_acq64(&qp->sq_ready);

	if (ready > gnic_load_acq64(&qp->sq_reserved))
		fail_sq(c, "sq_ready passed sq_reserved: it moved over a mark of an earlier lap");
}

static void check_msg(struct check *c, const struct msg *m)
{
	const struct gnic_dev_qp *qp = c->p->a;

	if (m->thread >= THREADS)
		T_FAIL("message %u names thread %u", c->got, m->thread);
	if (m->seq != c->next[m->thread])
		T_FAIL("thread %u: message %u (SQ index %llu: slot %llu, lap %llu) arrived when "
		       "%u was due: a WQE %s",
		       m->thread, m->seq, (unsigned long long)m->idx,
		       (unsigned long long)slot_of(qp, m->idx),
		       (unsigned long long)lap_of(qp, m->idx), c->next[m->thread],
		       m->seq < c->next[m->thread] ? "ran twice" : "was skipped");
	if (m->idx < c->last_idx)
		T_FAIL(
		    "SQ index %llu (slot %llu, lap %llu) ran after index %llu (lap %llu): the NIC "
		    "got WQEs out of SQ order",
		    (unsigned long long)m->idx, (unsigned long long)slot_of(qp, m->idx),
		    (unsigned long long)lap_of(qp, m->idx), (unsigned long long)c->last_idx - 1,
		    (unsigned long long)lap_of(qp, c->last_idx - 1));
	c->next[m->thread]++;
	c->last_idx = m->idx + 1;
	c->got++;
}

/* A receive completion is waiting (gnic_dev_recv_wait would block). */
static int recv_ready(const struct gnic_dev_qp *qp)
{
	const struct gnic_mlx5_cqe64 *cqe = &qp->rcq.buf[qp->rcq_ci & (qp->rcq.cqe_cnt - 1)];

	return gnic_mlx5_cqe_sw_owned(__atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE),
	                              (uint32_t)qp->rcq_ci, qp->rcq.cqe_cnt);
}

static struct msg *recv_slot(struct check *c, uint32_t n)
{
	return (struct msg *)c->p->bbuf + n % c->rq_cnt;
}

static void recv_post(struct check *c, uint32_t n)
{
	CHECK_DEV(gnic_dev_recv_post(c->p->b, recv_slot(c, n), gnic_mr_lkey(c->p->bmr),
	                             sizeof(struct msg)));
}

/* Receive until every message is in, each within STALL_S of the last. */
static void receive_all(struct check *c)
{
	uint64_t deadline = gnic_now_ns() + STALL_S * 1000000000ull;
	uint32_t idle = 0;

	for (uint32_t n = 0; n < c->rq_cnt; n++)
		recv_post(c, n);
	while (c->got < c->want) {
		uint32_t len = 0;

		check_ready(c);
		if (!recv_ready(c->p->b)) {
			if (gnic_dev_failed(c->p->a))
				fail_sq(c, "the sending QP failed");
			if (gnic_now_ns() > deadline)
				fail_sq(c, "no message for " STR(STALL_S) " s");
			gnic_backoff(idle < 8 ? idle++ : 8);
			continue;
		}
		CHECK_DEV(gnic_dev_recv_wait(c->p->b, &len, NULL));
		CHECK_EQ(len, sizeof(struct msg));
		check_msg(c, recv_slot(c, c->got));
		recv_post(c, c->got - 1 + c->rq_cnt); /* the slot just read */
		deadline = gnic_now_ns() + STALL_S * 1000000000ull;
		idle = 0;
	}
}

static void one(enum gnic_share share)
{
	struct gnic_qp_attr attr;
	struct poster t[THREADS];
	pthread_t th[THREADS];
	pthread_barrier_t start;
	struct check c = {0};
	struct pair p;

	gnic_qp_attr_init(&attr);
	attr.share = share;
	attr.sq_depth = 8;
	attr.cqe_every = 4;
	attr.rq_depth = 512;
	attr.timeout_ns = 2000000000ull;
	pair_open(&p, &attr, (size_t)THREADS * MAX_MSG * sizeof(struct msg));
	memset(in_block, 0, sizeof(in_block));
	c.p = &p;
	c.rq_cnt = p.b->rq_wqe_cnt;
	for (int i = 0; i < THREADS; i++)
		c.want += total_msgs(i);
	t_case("share %d: %d threads, %u SENDs through a %u-BB SQ (%u laps)", share, THREADS,
	       c.want, p.a->sq_wqe_cnt, c.want / p.a->sq_wqe_cnt);
	CHECK_EQ(pthread_barrier_init(&start, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++) {
		t[i] = (struct poster){.p = &p, .start = &start, .id = i};
		CHECK_EQ(pthread_create(&th[i], NULL, post, &t[i]), 0);
	}
	receive_all(&c);
	dev_join_all(th, THREADS, 2 * STALL_S);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(t[i].rc, GNIC_DEV_OK);
	/* every SEND has completed: a message beyond the expected ones is here now */
	if (recv_ready(p.b))
		fail_sq(&c, "a message beyond the expected ones: a WQE ran twice");
	check_ready(&c);
	CHECK_EQ(dev_sq_ready(p.a), p.a->sq_reserved);
	CHECK_EQ(dev_sq_done(p.a), p.a->sq_reserved);
	pair_close(&p);
}

int main(void)
{
	one(GNIC_SHARE_GPU);
	one(GNIC_SHARE_CTA);
	return T_EXIT_PASS;
}
