// SPDX-License-Identifier: MIT
/*
 * Two processes, one RC connection over the emulator's TCP fabric.
 *
 *   test_mp_ops [ops|kill|atomics]
 *                            forks and execs itself twice, as "server" and
 *                            "client", joined by a socketpair on which they
 *                            swap GID/QPN/rkey/address and synchronise.
 *   ops:  both sides WRITE, READ, SEND/RECV and run atomics on each other,
 *         then stream 10k 64-B WRITEs (window 128, every 64th signaled);
 *         every byte, wr_id and count checked.
 *   kill: the client streams WRITEs and has the server SIGKILL itself
 *         mid-transfer; the client must see RETRY_EXC_ERR (then flushes)
 *         within a bound derived from its timeout and retry count.
 *   atomics: with two engine workers per process (GNIC_EMU_THREADS=2 unless
 *         set), the client's two QPs FETCH_ADD one word of the server's
 *         GNIC_TEST_ATOMICS (default 100000) times each, 16 in flight per
 *         QP; the server's two QPs are on different workers. The word ends
 *         at exactly 2N * addend, the old values are exactly 0, addend, ...;
 *         and the server forwarded no request between its workers (each
 *         inbound connection is served by the worker of its QP).
 */
#include <endian.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define REGION              (4u << 20)
#define OFF_TARGET          0          /* peer WRITEs and SENDs land here (1 MiB) */
#define OFF_READ_SRC        (1u << 20) /* peer READs this (1 MiB) */
#define OFF_COUNTER         (2u << 20) /* peer's atomics target (8 B) */
#define OFF_SCRATCH         (3u << 20) /* local sources and READ/atomic results */
#define MIB                 (1u << 20)
#define SOCK_WAIT_MS        60000
#define STREAM_N            10000
#define STREAM_WINDOW       128
#define STREAM_SIGNAL_EVERY 64
#define N_ATOMICS           1000

struct side {
	const char *role;
	int me, peer; /* 1 client, 2 server: seeds for what each side writes */
	int sock;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_qp_cap cap;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct t_ep peer_ep;
	struct t_conn_opts opts;
	unsigned poll_ms;   /* longest wait for one completion */
	uint64_t killed_at; /* kill: when the server was told to die */
};

/* ---- socket: exchange and barriers, every wait bounded ---------------- */

static void sock_send(struct side *s, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(s->sock, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			T_FAIL("%s: socket write: %s", s->role, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void sock_recv(struct side *s, void *buf, size_t len, const char *what)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = s->sock, .events = POLLIN};
		int r = poll(&pfd, 1, SOCK_WAIT_MS);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			T_FAIL("%s: no word from the peer within %d ms (%s)", s->role, SOCK_WAIT_MS,
			       what);
		n = read(s->sock, p, len);
		if (n == 0)
			T_FAIL("%s: the peer closed the socket (%s); did it fail?", s->role, what);
		if (n < 0 && errno != EINTR)
			T_FAIL("%s: socket read: %s", s->role, strerror(errno));
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
}

/* Both sides call it: neither passes until the other has arrived. */
static void barrier(struct side *s, char tag)
{
	char got = 0;

	sock_send(s, &tag, 1);
	sock_recv(s, &got, 1, "barrier");
	if (got != tag)
		T_FAIL("%s: barrier '%c' met the peer at '%c'", s->role, tag, got);
}

/* ---- setup -------------------------------------------------------------- */

static void side_setup(struct side *s)
{
	struct t_qp_caps caps = {
	    .send_wr = 256, .recv_wr = 64, .send_sge = 4, .recv_sge = 4, .inline_data = 64};
	struct t_ep ep;

	t_case("%s: setup", s->role);
	s->ctx = t_open(T_DEVICE);
	s->pd = CHECK_PTR(ibv_alloc_pd(s->ctx));
	s->scq = t_cq(s->ctx, 1024);
	s->rcq = t_cq(s->ctx, 1024);
	s->qp = t_qp(s->pd, s->scq, s->rcq, &caps, &s->cap);
	s->buf = t_alloc(REGION, 0);
	s->mr = t_reg(s->pd, s->buf, REGION, T_ACCESS_ALL);
	t_fill(s->buf + OFF_READ_SRC, MIB, 200 + (uint32_t)s->me);

	t_local_ep(s->qp, &ep);
	ep.rkey = s->mr->rkey;
	ep.addr = (uintptr_t)s->buf;
	ep.len = REGION;
	sock_send(s, &ep, sizeof(ep));
	sock_recv(s, &s->peer_ep, sizeof(s->peer_ep), "the peer's endpoint");
	CHECK_EQ(s->peer_ep.len, REGION);
	/* Two processes, two listeners: the GIDs must differ. */
	CHECK(memcmp(&ep.gid, &s->peer_ep.gid, sizeof(ep.gid)) != 0);
	t_connect(s->qp, &s->peer_ep, &s->opts);
	barrier(s, 'C');
}

static void side_teardown(struct side *s)
{
	t_case("%s: teardown", s->role);
	CHECK_OK(ibv_destroy_qp(s->qp));
	CHECK_OK(ibv_dereg_mr(s->mr));
	CHECK_OK(ibv_destroy_cq(s->scq));
	CHECK_OK(ibv_destroy_cq(s->rcq));
	CHECK_OK(ibv_dealloc_pd(s->pd));
	CHECK_OK(ibv_close_device(s->ctx));
	free(s->buf);
}

static uint64_t peer_addr(struct side *s, size_t off)
{
	return s->peer_ep.addr + off;
}

static struct ibv_sge local_sge(struct side *s, size_t off, uint32_t len)
{
	return (struct ibv_sge){
	    .addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};
}

static void post(struct side *s, struct ibv_send_wr *wr)
{
	t_post_send(s->qp, wr);
}

/* Post WRs [0, n) built by make(), at most `window` in flight, all signaled;
 * completions must come back in order with the right opcode. */
static void run_signaled(struct side *s, int n, int window, enum ibv_wc_opcode op,
                         void (*make)(struct side *, int, struct ibv_send_wr *, struct ibv_sge *),
                         const char *what)
{
	int posted = 0, done = 0;

	while (done < n) {
		while (posted < n && posted - done < window) {
			struct ibv_send_wr wr;
			struct ibv_sge sge;

			make(s, posted, &wr, &sge);
			wr.wr_id = (uint64_t)posted;
			wr.send_flags |= IBV_SEND_SIGNALED;
			post(s, &wr);
			posted++;
		}
		struct ibv_wc wc = t_poll1(s->scq, what);

		CHECK_WC(&wc, (uint64_t)done, IBV_WC_SUCCESS, op);
		done++;
	}
}

/* ---- ops ---------------------------------------------------------------- */

/* 1 MiB in chunks of 1, 63, 4096, 65536 and 262144 bytes. */
static const uint32_t chunk_sizes[] = {1, 63, 4096, 65536, 262144};

static int chunks(uint32_t total, uint32_t *off, uint32_t *len, int max)
{
	uint32_t o = 0;
	int n = 0;

	while (o < total) {
		uint32_t l = chunk_sizes[n % 5];

		CHECK(n < max);
		if (l > total - o)
			l = total - o;
		off[n] = o;
		len[n++] = l;
		o += l;
	}
	return n;
}

static uint32_t ck_off[64], ck_len[64];

static void make_write(struct side *s, int i, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	*sge = local_sge(s, OFF_SCRATCH + ck_off[i], ck_len[i]);
	*wr = (struct ibv_send_wr){.sg_list = sge,
	                           .num_sge = 1,
	                           .opcode = IBV_WR_RDMA_WRITE,
	                           .wr.rdma = {.remote_addr = peer_addr(s, OFF_TARGET + ck_off[i]),
	                                       .rkey = s->peer_ep.rkey}};
}

static void make_read(struct side *s, int i, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	*sge = local_sge(s, OFF_SCRATCH + ck_off[i], ck_len[i]);
	*wr =
	    (struct ibv_send_wr){.sg_list = sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_READ,
	                         .wr.rdma = {.remote_addr = peer_addr(s, OFF_READ_SRC + ck_off[i]),
	                                     .rkey = s->peer_ep.rkey}};
}

static void expect_pattern(struct side *s, size_t off, size_t len, uint32_t seed, const char *what)
{
	uint8_t *want = t_alloc(len, 0);

	t_fill(want, len, seed);
	if (memcmp(s->buf + off, want, len)) {
		fprintf(stderr, "%s: %s\n", s->role, what);
		CHECK_MEM(s->buf + off, want, len);
	}
	free(want);
}

static void phase_write(struct side *s)
{
	int n = chunks(MIB, ck_off, ck_len, 64);

	t_case("%s: RDMA WRITE 1 MiB to the peer in %d chunks", s->role, n);
	t_fill(s->buf + OFF_SCRATCH, MIB, 100 + (uint32_t)s->me);
	run_signaled(s, n, 16, IBV_WC_RDMA_WRITE, make_write, "WRITE chunks");
	barrier(s, 'W');
	expect_pattern(s, OFF_TARGET, MIB, 100 + (uint32_t)s->peer, "the peer's WRITEs");
}

static void phase_read(struct side *s)
{
	int n = chunks(MIB, ck_off, ck_len, 64);

	t_case("%s: RDMA READ 1 MiB from the peer in %d chunks", s->role, n);
	memset(s->buf + OFF_SCRATCH, 0, MIB);
	run_signaled(s, n, 16, IBV_WC_RDMA_READ, make_read, "READ chunks");
	expect_pattern(s, OFF_SCRATCH, MIB, 200 + (uint32_t)s->peer, "what READ fetched");
	barrier(s, 'R');
}

static const uint32_t msg_len[] = {0, 1, 100, 4096, 65536, 150000};
#define N_MSG    (int)(sizeof(msg_len) / sizeof(msg_len[0]))
#define MSG_SLOT 163840u

static uint32_t msg_seed(int side, int i)
{
	return 300u + (uint32_t)side * 16u + (uint32_t)i;
}

static void phase_send(struct side *s)
{
	struct ibv_wc wc[N_MSG];
	size_t soff = OFF_SCRATCH;

	t_case("%s: SEND/RECV %d messages each way", s->role, N_MSG);
	memset(s->buf + OFF_TARGET, 0, MIB);
	for (int i = 0; i < N_MSG; i++)
		t_post_recv_buf(s->qp, 500 + (uint64_t)i, s->buf + OFF_TARGET + i * MSG_SLOT,
		                MSG_SLOT, s->mr->lkey);
	barrier(s, 'P'); /* receives posted on both sides */
	for (int i = 0; i < N_MSG; i++) {
		struct ibv_sge sge = local_sge(s, soff, msg_len[i]);
		struct ibv_send_wr wr = {.wr_id = 600 + (uint64_t)i,
		                         .sg_list = &sge,
		                         .num_sge = msg_len[i] ? 1 : 0,
		                         .opcode =
		                             i == N_MSG - 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED,
		                         .imm_data = htobe32(0xabc00000u + (uint32_t)s->me)};

		t_fill(s->buf + soff, msg_len[i], msg_seed(s->me, i));
		post(s, &wr);
		soff += msg_len[i];
	}
	t_poll(s->scq, N_MSG, wc, "SEND completions");
	for (int i = 0; i < N_MSG; i++)
		CHECK_WC(&wc[i], 600 + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_poll(s->rcq, N_MSG, wc, "receive completions");
	for (int i = 0; i < N_MSG; i++) {
		CHECK_WC(&wc[i], 500 + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc[i].byte_len, msg_len[i]);
		CHECK_EQ(!!(wc[i].wc_flags & IBV_WC_WITH_IMM), i == N_MSG - 1);
		if (i == N_MSG - 1)
			CHECK_EQ(wc[i].imm_data, htobe32(0xabc00000u + (uint32_t)s->peer));
		expect_pattern(s, OFF_TARGET + i * MSG_SLOT, msg_len[i], msg_seed(s->peer, i),
		               "a received message");
	}
	t_expect_empty(s->rcq, "one completion per message");
	barrier(s, 'S');
}

static void make_fadd(struct side *s, int i, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	*sge = local_sge(s, OFF_SCRATCH + (size_t)i * 8, 8);
	*wr = (struct ibv_send_wr){.sg_list = sge,
	                           .num_sge = 1,
	                           .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
	                           .wr.atomic = {.remote_addr = peer_addr(s, OFF_COUNTER),
	                                         .compare_add = 1,
	                                         .rkey = s->peer_ep.rkey}};
}

static void cmp_swap(struct side *s, uint64_t cmp, uint64_t swap, uint64_t want_old)
{
	uint64_t *res = (uint64_t *)(s->buf + OFF_SCRATCH + MIB / 2);
	struct ibv_sge sge = local_sge(s, OFF_SCRATCH + MIB / 2, 8);
	struct ibv_send_wr wr = {.wr_id = 700,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.atomic = {.remote_addr = peer_addr(s, OFF_COUNTER),
	                                       .compare_add = cmp,
	                                       .swap = swap,
	                                       .rkey = s->peer_ep.rkey}};
	struct ibv_wc wc;

	*res = 0x5555;
	post(s, &wr);
	wc = t_poll1(s->scq, "CMP_SWAP");
	CHECK_WC(&wc, 700, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(*res, want_old);
}

static void phase_atomics(struct side *s)
{
	const uint64_t *res = (const uint64_t *)(s->buf + OFF_SCRATCH);
	uint64_t final = 0x5eed000000000000ull + (uint64_t)s->me;

	t_case("%s: %d FETCH_ADDs and 2 CMP_SWAPs on the peer's counter", s->role, N_ATOMICS);
	memset(s->buf + OFF_SCRATCH, 0xff, N_ATOMICS * 8);
	run_signaled(s, N_ATOMICS, 16, IBV_WC_FETCH_ADD, make_fadd, "FETCH_ADDs");
	/* Only this side touches that counter: the old values are 0, 1, 2... */
	for (int i = 0; i < N_ATOMICS; i++)
		if (res[i] != (uint64_t)i)
			T_FAIL("%s: FETCH_ADD %d returned %llu", s->role, i,
			       (unsigned long long)res[i]);
	cmp_swap(s, N_ATOMICS, final, N_ATOMICS);
	cmp_swap(s, N_ATOMICS, 7, final); /* no match: unchanged */
	barrier(s, 'A');
	CHECK_EQ(*(uint64_t *)(s->buf + OFF_COUNTER), 0x5eed000000000000ull + (uint64_t)s->peer);
}

/* Stream n 64-B WRITEs, at most `window` outstanding, every
 * STREAM_SIGNAL_EVERY-th (and the last) signaled. Returns after n
 * completed, or at the first error completion (*err gets it). */
static uint64_t stream(struct side *s, uint64_t n, uint64_t *posted_out, struct ibv_wc *err,
                       uint64_t kill_after)
{
	uint64_t posted = 0, retired = 0;
	bool killed = false;

	while (retired < n) {
		while (posted < n && posted - retired < STREAM_WINDOW) {
			uint32_t slot = (uint32_t)(posted % (MIB / 64));
			struct ibv_sge sge = local_sge(s, OFF_SCRATCH + slot * 64, 64);
			bool sig = posted % STREAM_SIGNAL_EVERY == STREAM_SIGNAL_EVERY - 1 ||
			           posted == n - 1;
			struct ibv_send_wr wr = {
			    .wr_id = posted,
			    .sg_list = &sge,
			    .num_sge = 1,
			    .opcode = IBV_WR_RDMA_WRITE,
			    .send_flags = sig ? IBV_SEND_SIGNALED : 0,
			    .wr.rdma = {.remote_addr = peer_addr(s, OFF_TARGET + slot * 64),
			                .rkey = s->peer_ep.rkey}};

			post(s, &wr);
			posted++;
		}
		struct ibv_wc wc;

		t_poll_timeout(s->scq, 1, &wc, s->poll_ms, "a signaled streaming WRITE");

		if (wc.status != IBV_WC_SUCCESS) {
			*err = wc;
			break;
		}
		CHECK_WC(&wc,
		         retired + STREAM_SIGNAL_EVERY - 1 < n ? retired + STREAM_SIGNAL_EVERY - 1
		                                               : n - 1,
		         IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		retired = wc.wr_id + 1;
		if (kill_after && !killed && retired >= kill_after) {
			sock_send(s, "K", 1); /* the server kills itself on this */
			s->killed_at = t_now_ms();
			killed = true;
		}
	}
	*posted_out = posted;
	return retired;
}

static void phase_stream(struct side *s)
{
	uint64_t posted;
	struct ibv_wc err = {0};

	t_case("%s: %d 64-B WRITEs, window %d, every %dth signaled", s->role, STREAM_N,
	       STREAM_WINDOW, STREAM_SIGNAL_EVERY);
	CHECK_GE(s->cap.max_send_wr, STREAM_WINDOW);
	memset(s->buf + OFF_TARGET, 0, MIB);
	t_fill(s->buf + OFF_SCRATCH, MIB, 400 + (uint32_t)s->me);
	barrier(s, 'Z'); /* both targets cleared */
	CHECK_EQ(stream(s, STREAM_N, &posted, &err, 0), STREAM_N);
	CHECK_EQ(posted, STREAM_N);
	t_expect_empty(s->scq, "exactly the signaled completions");
	barrier(s, 'T');
	uint8_t *want = t_alloc(MIB, 0);

	t_fill(want, MIB, 400 + (uint32_t)s->peer);
	CHECK_MEM(s->buf + OFF_TARGET, want, (size_t)STREAM_N * 64);
	CHECK_BYTES(s->buf + OFF_TARGET + STREAM_N * 64, 0, MIB - STREAM_N * 64);
	free(want);
}

static int run_ops(struct side *s)
{
	side_setup(s);
	phase_write(s);
	phase_read(s);
	phase_send(s);
	phase_atomics(s);
	phase_stream(s);
	barrier(s, 'D');
	side_teardown(s);
	printf("%s: PASS\n", s->role);
	return T_EXIT_PASS;
}

/* ---- kill ---------------------------------------------------------------- */

static int run_kill_server(struct side *s)
{
	char k = 0;

	side_setup(s);
	t_case("%s: waiting to be killed", s->role);
	sock_recv(s, &k, 1, "the kill request");
	CHECK_EQ(k, 'K');
	printf("%s: killing myself mid-transfer\n", s->role);
	fflush(stdout);
	kill(getpid(), SIGKILL);
	T_FAIL("still alive after SIGKILL");
}

static int run_kill_client(struct side *s)
{
	/* 4.096 us << timeout per try, retry_cnt + 1 tries; generous slack. */
	uint64_t bound_ms =
	    5000 + 100 * (((4096ull << s->opts.timeout) / 1000000) + 1) * (s->opts.retry_cnt + 1);
	uint64_t posted, retired;
	struct ibv_wc err = {0}, wc[STREAM_WINDOW];

	side_setup(s);
	t_case("%s: stream until the killed peer makes the QP fail", s->role);
	t_fill(s->buf + OFF_SCRATCH, MIB, 500);
	s->poll_ms = (unsigned)bound_ms; /* the error must come within the bound */
	retired = stream(s, 1ull << 40, &posted, &err, 2000);
	if (err.status != IBV_WC_RETRY_EXC_ERR) {
		t_print_wc(stderr, &err);
		T_FAIL("first error: %s, want RETRY_EXC_ERR", t_wc_status_str(err.status));
	}
	printf("%s: RETRY_EXC_ERR %llu ms after the kill request (bound %llu ms), %llu WRs "
	       "completed\n",
	       s->role, (unsigned long long)(t_now_ms() - s->killed_at),
	       (unsigned long long)bound_ms, (unsigned long long)retired);
	CHECK(s->killed_at != 0);
	CHECK_GE(err.wr_id, retired);
	CHECK(err.wr_id < posted);
	CHECK_GE(retired, 2000);

	t_case("%s: every WR behind the failed one is flushed", s->role);
	int nflush = (int)(posted - 1 - err.wr_id);

	CHECK(nflush < STREAM_WINDOW);
	if (nflush)
		t_poll(s->scq, nflush, wc, "flushed WRITEs");
	for (int i = 0; i < nflush; i++)
		CHECK_WC_STATUS(&wc[i], err.wr_id + 1 + (uint64_t)i, IBV_WC_WR_FLUSH_ERR);
	t_expect_empty(s->scq, "nothing after the flushes");
	CHECK_EQ(t_qp_state(s->qp), IBV_QPS_ERR);
	side_teardown(s);
	printf("%s: PASS\n", s->role);
	return T_EXIT_PASS;
}

/* ---- atomics: two QPs a side, the server's on different workers ---------- */

#define MP_ADDEND 5ull

int gemu_qp_engine_worker(struct ibv_qp *qp); /* libgnic_emu */
uint64_t gemu_engine_forwarded(void);         /* libgnic_emu */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Client: FETCH_ADD n times on each of qp[0..1], window 16 each. */
static void mp_fadd(struct side *s, struct ibv_qp **qp, struct ibv_cq **cq, int n)
{
	int posted[2] = {0, 0}, done[2] = {0, 0};
	uint64_t *res = (uint64_t *)s->buf, deadline = t_now_ms() + T_WAIT_MS;

	while (done[0] < n || done[1] < n) {
		for (int k = 0; k < 2; k++) {
			while (posted[k] < n && posted[k] - done[k] < 16) {
				size_t slot = (size_t)k * (size_t)n + (size_t)posted[k];
				struct ibv_sge sge = {.addr = (uintptr_t)&res[slot],
				                      .length = 8,
				                      .lkey = s->mr->lkey};
				struct ibv_send_wr wr = {
				    .wr_id = (uint64_t)posted[k],
				    .sg_list = &sge,
				    .num_sge = 1,
				    .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				    .send_flags = IBV_SEND_SIGNALED,
				    .wr.atomic = {.remote_addr = s->peer_ep.addr,
				                  .compare_add = MP_ADDEND,
				                  .rkey = s->peer_ep.rkey}};

				t_post_send(qp[k], &wr);
				posted[k]++;
			}
			struct ibv_wc wc[16];
			int got = ibv_poll_cq(cq[k], 16, wc);

			CHECK_GE(got, 0);
			for (int j = 0; j < got; j++) {
				CHECK_WC(&wc[j], (uint64_t)done[k], IBV_WC_SUCCESS,
				         IBV_WC_FETCH_ADD);
				done[k]++;
				deadline = t_now_ms() + T_WAIT_MS;
			}
		}
		if (t_now_ms() > deadline)
			T_FAIL("%s: FETCH_ADDs: %d + %d of %d each, then none for %d ms", s->role,
			       done[0], done[1], n, T_WAIT_MS);
	}
	qsort(res, (size_t)n * 2, 8, cmp_u64);
	for (int i = 0; i < 2 * n; i++)
		if (res[i] != (uint64_t)i * MP_ADDEND)
			T_FAIL("%s: sorted old value %d is %llu, not %llu (duplicate or lost add)",
			       s->role, i, (unsigned long long)res[i],
			       (unsigned long long)i * MP_ADDEND);
}

static int run_atomics(struct side *s, bool client)
{
	const char *env = getenv("GNIC_TEST_ATOMICS");
	int n = env && *env ? atoi(env) : 100000;
	struct t_qp_caps caps = {
	    .send_wr = 64, .recv_wr = 16, .send_sge = 1, .recv_sge = 1, .inline_data = 0};
	struct ibv_qp *qp[2];
	struct ibv_cq *cq[2];
	struct t_ep ep[2], peer[2];
	size_t len = (size_t)n * 16 + T_PAGE;

	CHECK_GE(n, 1);
	t_case("%s: two QPs, %d FETCH_ADDs each on the server's word", s->role, n);
	s->opts.max_rd_atomic = s->opts.max_dest_rd_atomic = 16;
	s->ctx = t_open(T_DEVICE);
	s->pd = CHECK_PTR(ibv_alloc_pd(s->ctx));
	s->buf = t_alloc(len, 0);
	s->mr = t_reg(s->pd, s->buf, len, T_ACCESS_ALL);
	for (int k = 0; k < 2; k++) {
		cq[k] = t_cq(s->ctx, 256);
		qp[k] = t_qp(s->pd, cq[k], cq[k], &caps, NULL);
		t_local_ep(qp[k], &ep[k]);
		ep[k].rkey = s->mr->rkey;
		ep[k].addr = (uintptr_t)s->buf; /* the server's word is its byte 0 */
		ep[k].len = len;
	}
	printf("%s: QPs on workers %d and %d\n", s->role, gemu_qp_engine_worker(qp[0]),
	       gemu_qp_engine_worker(qp[1]));
	CHECK_NE(gemu_qp_engine_worker(qp[0]), gemu_qp_engine_worker(qp[1]));
	sock_send(s, ep, sizeof(ep));
	sock_recv(s, peer, sizeof(peer), "the peer's endpoints");
	for (int k = 0; k < 2; k++)
		t_connect(qp[k], &peer[k], &s->opts);
	s->peer_ep = peer[0];
	barrier(s, 'C');
	if (client)
		mp_fadd(s, qp, cq, n);
	barrier(s, 'F');
	if (!client) {
		CHECK_EQ(__atomic_load_n((uint64_t *)s->buf, __ATOMIC_SEQ_CST),
		         2ull * (uint64_t)n * MP_ADDEND);
		/* each client worker's connection is served by the worker of
		 * the QP it carries requests for: none went through an inbox */
		printf("%s: %llu requests forwarded between workers\n", s->role,
		       (unsigned long long)gemu_engine_forwarded());
		CHECK_EQ(gemu_engine_forwarded(), 0);
	}
	barrier(s, 'D');
	for (int k = 0; k < 2; k++) {
		CHECK_OK(ibv_destroy_qp(qp[k]));
		CHECK_OK(ibv_destroy_cq(cq[k]));
	}
	CHECK_OK(ibv_dereg_mr(s->mr));
	CHECK_OK(ibv_dealloc_pd(s->pd));
	CHECK_OK(ibv_close_device(s->ctx));
	free(s->buf);
	printf("%s: PASS\n", s->role);
	return T_EXIT_PASS;
}

/* ---- orchestration ------------------------------------------------------ */

static pid_t spawn(const char *role, int fd, int other_fd, const char *scenario)
{
	char fdstr[16];
	pid_t pid = fork();

	if (pid < 0)
		T_FAIL("fork: %s", strerror(errno));
	if (pid)
		return pid;
	close(other_fd);
	snprintf(fdstr, sizeof(fdstr), "%d", fd);
	execl("/proc/self/exe", "test_mp_ops", "--role", role, "--fd", fdstr, "--scenario",
	      scenario, (char *)NULL);
	fprintf(stderr, "exec /proc/self/exe: %s\n", strerror(errno));
	_exit(127);
}

static const char *describe(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "status 0x%x", st);
	return buf;
}

static int orchestrate(const char *scenario)
{
	int sv[2], st[2] = {0, 0};
	bool done[2] = {false, false};
	pid_t pid[2];
	uint64_t deadline = t_now_ms() + 150000;
	char d0[64], d1[64];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		T_FAIL("socketpair: %s", strerror(errno));
	pid[0] = spawn("server", sv[0], sv[1], scenario);
	pid[1] = spawn("client", sv[1], sv[0], scenario);
	close(sv[0]);
	close(sv[1]);
	while (!done[0] || !done[1]) {
		for (int i = 0; i < 2; i++) {
			if (!done[i] && waitpid(pid[i], &st[i], WNOHANG) == pid[i])
				done[i] = true;
		}
		if (t_now_ms() > deadline) {
			for (int i = 0; i < 2; i++) {
				if (!done[i]) {
					kill(pid[i], SIGKILL);
					waitpid(pid[i], &st[i], 0);
				}
			}
			T_FAIL("%s: the processes did not finish within 150 s", scenario);
		}
		t_sleep_ms(10);
	}
	printf("%s: server %s, client %s\n", scenario, describe(st[0], d0, sizeof(d0)),
	       describe(st[1], d1, sizeof(d1)));
	if (!strcmp(scenario, "kill")) {
		CHECK(WIFSIGNALED(st[0]) && WTERMSIG(st[0]) == SIGKILL);
	} else {
		CHECK(WIFEXITED(st[0]) && WEXITSTATUS(st[0]) == 0);
	}
	CHECK(WIFEXITED(st[1]) && WEXITSTATUS(st[1]) == 0);
	printf("PASS\n");
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	struct side s = {0};
	const char *scenario = argc > 1 ? argv[1] : "ops";

	if (argc == 7 && !strcmp(argv[1], "--role") && !strcmp(argv[3], "--fd") &&
	    !strcmp(argv[5], "--scenario")) {
		bool client = !strcmp(argv[2], "client");

		s.role = client ? "client" : "server";
		s.me = client ? 1 : 2;
		s.peer = 3 - s.me;
		s.sock = atoi(argv[4]);
		s.poll_ms = T_WAIT_MS;
		t_conn_opts_default(&s.opts);
		if (!strcmp(argv[6], "kill")) {
			/* 67 ms: a live peer under ThreadSanitizer on a loaded
			 * machine answered later than 4 x 16.8 ms */
			s.opts.timeout = 14;
			s.opts.retry_cnt = 3;
			return client ? run_kill_client(&s) : run_kill_server(&s);
		}
		if (!strcmp(argv[6], "atomics"))
			return run_atomics(&s, client);
		return run_ops(&s);
	}
	if (strcmp(scenario, "ops") && strcmp(scenario, "kill") && strcmp(scenario, "atomics")) {
		fprintf(stderr, "usage: %s [ops|kill|atomics]\n", argv[0]);
		return T_EXIT_FAIL;
	}
	/* both processes, before their first verbs call */
	if (!strcmp(scenario, "atomics"))
		setenv("GNIC_EMU_THREADS", "2", 0);
	return orchestrate(scenario);
}
