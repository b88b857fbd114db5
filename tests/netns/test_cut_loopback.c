// SPDX-License-Identifier: MIT
/*
 * The fabric connection cut under a running transfer, on loopback, with no
 * privileges: QP A reaches QP B (same process) through a TCP relay of this
 * test instead of the direct in-process call, because A's destination GID
 * names the relay. The relay then breaks the wire:
 *
 *   blackhole  stops moving bytes but keeps both sockets open (a cable
 *              pulled, a switch gone: nothing tells TCP)
 *   reset      resets both sockets (RST) and refuses every new
 *              connection (a crashed middlebox, a closed port)
 *
 * Either way A must end in RETRY_EXC_ERR within a bound derived from its
 * timeout and retry count, the WRs behind it flushed, and never hang; then
 * the relay heals and a fresh connection of the same QPs moves data again.
 * Then one signaled WRITE and one READ across the cut wire: each must end in
 * RETRY_EXC_ERR no sooner than (R+1) x T after its post (what a ConnectX
 * sees of a cut wire is silence, however TCP learns of it) and no later
 * than (R+1) x T + LATE_MS.
 *
 * The fabric authenticates identities: a connection reaches only the GID it
 * dialed, and a process never accepts its own hello back. So the relay
 * holds the job's secret (GNIC_EMU_SECRET) and ends each handshake itself:
 * to A it is the peer at the relay's GID, to the emulator's listener a
 * client with the relay's GID, which is also B's peer GID. After the two
 * handshakes it moves bytes unchanged.
 *
 *   unreachable  A's destination GID names a port where nothing listens
 *                (every connect() refused): RETRY_EXC_ERR the same way
 *
 * Run one case: test_cut_loopback <case>.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "fabric_wire.h"

#define MSG     4096u
#define SLOTS   64
#define WINDOW  32
#define HS_MS   2000 /* one handshake frame */
#define T_EXP   14   /* 4.096 us << 14 = 67 ms per try */
#define RETRIES 3
#define LATE_MS 1000 /* slack past (R+1) x T, for a loaded machine */

enum relay_mode { RELAY_FORWARD, RELAY_BLACKHOLE, RELAY_RESET };

static struct {
	int lfd;
	struct sockaddr_in to; /* the emulator's listener */
	pthread_t th;
	_Atomic int mode;
	_Atomic bool stop;
	_Atomic int pairs; /* connections relayed so far */
	union ibv_gid emu_gid;
	const char *secret;
} relay;

static struct t_pair p;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;
static struct t_ep via_relay; /* B as A sees it: the relay's GID */

static void rst_close(int fd)
{
	struct linger l = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static bool recv_exact(int fd, void *p, size_t len)
{
	uint8_t *b = p;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, HS_MS) <= 0)
			return false;
		n = recv(fd, b, len, 0);
		if (n <= 0)
			return false;
		b += n;
		len -= (size_t)n;
	}
	return true;
}

static bool send_exact(int fd, const void *p, size_t len)
{
	return send(fd, p, len, MSG_NOSIGNAL) == (ssize_t)len; /* small: fits the socket */
}

static void nonce(uint8_t n[EMU_AUTH_NONCE_LEN])
{
	for (size_t i = 0; i < EMU_AUTH_NONCE_LEN; i++)
		n[i] = (uint8_t)rand();
}

/* One handshake frame in, the reply out, until done. */
static bool hs_run(int fd, struct emu_hs *hs)
{
	uint8_t in[EMU_HS_OUT_MAX], out[EMU_HS_OUT_MAX];
	size_t n;

	while (hs->state != EMU_HS_DONE) {
		if (!recv_exact(fd, in, emu_hs_need(hs)) || emu_hs_step(hs, in, out, &n))
			return false;
		if (n && !send_exact(fd, out, n))
			return false;
	}
	return true;
}

/* A dialed the relay: answer as the peer at the relay's GID. */
static bool relay_accept_hs(int c)
{
	uint8_t n[EMU_AUTH_NONCE_LEN], out[EMU_HS_OUT_MAX];
	struct emu_hs hs;
	size_t len;

	nonce(n);
	emu_hs_start(&hs, EMU_HS_ACCEPTOR, relay.secret, strlen(relay.secret), &via_relay.gid, NULL,
	             n, out, &len);
	return hs_run(c, &hs);
}

/* Dial the emulator's listener as a client with the relay's GID. */
static bool relay_connect_hs(int u)
{
	uint8_t n[EMU_AUTH_NONCE_LEN], out[EMU_HS_OUT_MAX];
	struct emu_hs hs;
	size_t len;

	nonce(n);
	emu_hs_start(&hs, EMU_HS_CONNECTOR, relay.secret, strlen(relay.secret), &via_relay.gid,
	             &relay.emu_gid, n, out, &len);
	return send_exact(u, out, len) && hs_run(u, &hs);
}

/* Move bytes between one accepted connection and the emulator until the
 * mode says otherwise or either side closes. A connection that lived
 * through a blackhole is reset when the wire heals: a new cable carries
 * none of the old one's bytes (which the test's reconnected QPs must not
 * see). */
static void relay_pair(int c)
{
	int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint8_t buf[65536];
	bool was_cut = false;

	if (u < 0 || connect(u, (struct sockaddr *)&relay.to, sizeof(relay.to)) ||
	    !relay_accept_hs(c) || !relay_connect_hs(u)) {
		rst_close(c);
		if (u >= 0)
			rst_close(u);
		return;
	}
	relay.pairs++;
	for (;;) {
		struct pollfd pfd[2] = {{.fd = c, .events = POLLIN}, {.fd = u, .events = POLLIN}};
		int mode = relay.mode;

		if (relay.stop || mode == RELAY_RESET || (mode == RELAY_FORWARD && was_cut)) {
			rst_close(c);
			rst_close(u);
			return;
		}
		if (mode == RELAY_BLACKHOLE) { /* hold both ends, move nothing */
			was_cut = true;
			t_sleep_ms(5);
			continue;
		}
		if (poll(pfd, 2, 5) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = recv(pfd[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n <= 0) {
				close(c);
				close(u);
				return;
			}
			for (ssize_t off = 0; off < n;) {
				ssize_t w =
				    send(pfd[!i].fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);

				if (w <= 0) {
					close(c);
					close(u);
					return;
				}
				off += w;
			}
		}
	}
}

/* One connection at a time: the fabric opens one per peer. */
static void *relay_main(void *arg)
{
	(void)arg;
	while (!relay.stop) {
		struct pollfd pfd = {.fd = relay.lfd, .events = POLLIN};
		int c;

		if (poll(&pfd, 1, 5) <= 0)
			continue;
		c = accept(relay.lfd, NULL, NULL);
		if (c < 0)
			continue;
		if (relay.mode != RELAY_FORWARD) {
			rst_close(c); /* refused while the wire is cut */
			continue;
		}
		relay_pair(c);
	}
	return NULL;
}

/* ep_gid: B's GID (IPv4-mapped); the relay listens on B's address too. */
static void relay_start(const union ibv_gid *ep_gid)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	uint16_t fabric_port = htons(t_fabric_port());
	socklen_t len = sizeof(a);

	/* B's identity: its address and the fabric port */
	memset(&relay.emu_gid, 0, sizeof(relay.emu_gid));
	memcpy(&relay.emu_gid.raw[8], &fabric_port, 2);
	relay.emu_gid.raw[10] = relay.emu_gid.raw[11] = 0xff;
	memcpy(&relay.emu_gid.raw[12], &ep_gid->raw[12], 4);
	relay.to.sin_family = AF_INET;
	relay.to.sin_port = fabric_port;
	memcpy(&relay.to.sin_addr, &ep_gid->raw[12], 4);
	memcpy(&a.sin_addr, &ep_gid->raw[12], 4);
	relay.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(relay.lfd >= 0);
	CHECK_EQ(bind(relay.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(relay.lfd, 16), 0);
	CHECK_EQ(getsockname(relay.lfd, (struct sockaddr *)&a, &len), 0);
	/* the relay's GID: a fabric identity, which names a listener by address
	 * and port (see docs/emu.md) */
	via_relay.gid = relay.emu_gid;
	memcpy(&via_relay.gid.raw[8], &a.sin_port, 2);
	CHECK_EQ(pthread_create(&relay.th, NULL, relay_main, NULL), 0);
}

static void relay_stop(void)
{
	relay.stop = true;
	pthread_join(relay.th, NULL);
	close(relay.lfd);
}

/* A over the relay; B's peer is the relay's GID too (B only answers, on the
 * connection A's requests come in on). Each connection starts at new PSNs,
 * as an application reconnecting would. */
static void connect_pair(void)
{
	static uint32_t gen;
	struct t_ep a_via_relay = via_relay;

	p.opts.sq_psn = p.opts.rq_psn = (0x1000 + ++gen * 0x10000) & 0xffffff;
	via_relay.qpn = p.qp[1]->qp_num;
	a_via_relay.qpn = p.qp[0]->qp_num;
	t_reconnect(p.qp[0], &via_relay, &p.opts);
	t_reconnect(p.qp[1], &a_via_relay, &p.opts);
}

static void post_write(uint64_t i, bool signaled)
{
	uint32_t slot = (uint32_t)(i % SLOTS);
	struct ibv_sge sge = {
	    .addr = (uintptr_t)abuf + slot * MSG, .length = MSG, .lkey = amr->lkey};
	struct ibv_send_wr wr = {
	    .wr_id = i,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	    .wr.rdma = {.remote_addr = (uintptr_t)bbuf + slot * MSG, .rkey = bmr->rkey}};

	t_post_send(p.qp[0], &wr);
}

/* n signaled WRITEs, all must succeed and land. */
static void transfer_ok(int n)
{
	struct ibv_wc wc;

	memset(bbuf, 0, MSG * SLOTS);
	for (int i = 0; i < n; i++) {
		t_fill(abuf + (size_t)(i % SLOTS) * MSG, MSG, (uint32_t)i);
		post_write((uint64_t)i, true);
		wc = t_poll1(p.scq[0], "a WRITE through the relay");
		CHECK_WC(&wc, (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK_MEM(bbuf + (size_t)(i % SLOTS) * MSG, abuf + (size_t)(i % SLOTS) * MSG, MSG);
	}
}

/* (R+1) x T in ms, T = 4.096 us << T_EXP */
static uint64_t tries_ms(void)
{
	return (RETRIES + 1) * (4096ull << T_EXP) / 1000000;
}

/* One signaled WRITE or READ with the wire cut (mode cut): RETRY_EXC_ERR
 * within [(R+1) x T, (R+1) x T + LATE_MS] of its post. */
static void op_across_cut(enum relay_mode cut, const char *name, bool read)
{
	struct ibv_sge sge = {.addr = (uintptr_t)abuf, .length = MSG, .lkey = amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 77,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.rdma = {.remote_addr = (uintptr_t)bbuf, .rkey = bmr->rkey}};
	uint64_t start, took;
	struct ibv_wc wc;

	t_case("%s: a %s across the cut wire", name, read ? "READ" : "WRITE");
	relay.mode = RELAY_FORWARD;
	connect_pair();
	transfer_ok(10);
	relay.mode = cut;
	t_sleep_ms(20); /* the relay sees the mode within 5 ms */
	start = t_now_ms();
	t_post_send(p.qp[0], &wr);
	t_poll_timeout(p.scq[0], 1, &wc, (unsigned)(tries_ms() + 2 * LATE_MS), "the lone request");
	took = t_now_ms() - start;
	printf("%s: %s ended in %s after %llu ms ((R+1) x T = %llu ms)\n", name,
	       read ? "READ" : "WRITE", t_wc_status_str(wc.status), (unsigned long long)took,
	       (unsigned long long)tries_ms());
	CHECK_WC_STATUS(&wc, 77, IBV_WC_RETRY_EXC_ERR);
	CHECK_GE(took + 1, tries_ms()); /* ms rounding */
	CHECK(took <= tries_ms() + LATE_MS);
	CHECK_EQ(t_qp_state(p.qp[0]), IBV_QPS_ERR);
}

static void run_cut(enum relay_mode cut, const char *name)
{
	/* 4 tries; generous slack */
	const unsigned bound_ms = (unsigned)tries_ms() + LATE_MS;
	uint64_t posted = 0, done = 0, cut_at = 0;
	struct ibv_wc wc;

	relay.mode = RELAY_FORWARD;
	connect_pair();
	t_case("%s: data flows through the relay", name);
	transfer_ok(100);
	CHECK_GE(relay.pairs, 1);

	t_case("%s: cut under a running stream", name);
	for (;;) {
		for (; posted - done < WINDOW; posted++)
			post_write(posted, posted % 4 == 3);
		t_poll_timeout(p.scq[0], 1, &wc, cut_at ? bound_ms : T_WAIT_MS, "the stream");
		if (wc.status != IBV_WC_SUCCESS)
			break;
		done = wc.wr_id + 1;
		if (!cut_at && done >= 400) {
			relay.mode = cut;
			cut_at = t_now_ms();
		}
	}
	printf("%s: %s %llu ms after the cut, %llu WRITEs completed\n", name,
	       t_wc_status_str(wc.status), (unsigned long long)(t_now_ms() - cut_at),
	       (unsigned long long)done);
	CHECK(cut_at != 0);
	CHECK_WC_STATUS(&wc, wc.wr_id, IBV_WC_RETRY_EXC_ERR);
	CHECK(t_now_ms() - cut_at <= bound_ms);
	/* the last ACK came before the cut; more than half the tries must
	 * have passed since (a reset ends nothing at once) */
	CHECK_GE(t_now_ms() - cut_at, tries_ms() / 2);
	/* every later WR, signaled or not, completes flushed */
	for (uint64_t i = wc.wr_id + 1; i < posted; i++) {
		struct ibv_wc f = t_poll1(p.scq[0], "the flushed WRITEs");

		CHECK_WC_STATUS(&f, i, IBV_WC_WR_FLUSH_ERR);
	}
	t_expect_empty(p.scq[0], "nothing after the flushes");
	CHECK_EQ(t_qp_state(p.qp[0]), IBV_QPS_ERR);

	t_case("%s: the wire heals, the same QPs reconnect", name);
	relay.mode = RELAY_FORWARD;
	connect_pair();
	transfer_ok(100);

	op_across_cut(cut, name, false);
	op_across_cut(cut, name, true);
	relay.mode = RELAY_FORWARD;
	connect_pair();
	transfer_ok(10);
}

static void case_blackhole(void)
{
	run_cut(RELAY_BLACKHOLE, "blackhole");
}

static void case_reset(void)
{
	run_cut(RELAY_RESET, "reset");
}

static void case_unreachable(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct t_ep nowhere = via_relay;
	uint64_t start, took;
	struct ibv_wc wc;

	/* a port that was just free and is closed again: connect() is refused */
	CHECK(fd >= 0);
	CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	memcpy(&nowhere.gid.raw[8], &a.sin_port, 2);
	nowhere.qpn = p.qp[1]->qp_num;
	t_reconnect(p.qp[0], &nowhere, &p.opts);
	start = t_now_ms();
	post_write(0, true);
	t_poll_timeout(p.scq[0], 1, &wc, (unsigned)(tries_ms() + 2 * LATE_MS),
	               "a WRITE to a port nobody listens on");
	took = t_now_ms() - start;
	CHECK_WC_STATUS(&wc, 0, IBV_WC_RETRY_EXC_ERR);
	printf("unreachable: RETRY_EXC_ERR after %llu ms ((R+1) x T = %llu ms)\n",
	       (unsigned long long)took, (unsigned long long)tries_ms());
	CHECK_GE(took + 1, tries_ms()); /* every try is waited out */
	CHECK(took <= tries_ms() + LATE_MS);
	CHECK_EQ(t_qp_state(p.qp[0]), IBV_QPS_ERR);
	CHECK_BYTES(bbuf, 0, MSG); /* nothing arrived anywhere */
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {{"blackhole", case_blackhole},
	                                            {"reset", case_reset},
	                                            {"unreachable", case_unreachable}};
	struct t_conn_opts o;
	struct ibv_context *ctx;

	relay.secret = getenv("GNIC_EMU_SECRET");
	if (!relay.secret || strlen(relay.secret) < 16)
		t_skip("set GNIC_EMU_SECRET (>= 16 bytes): the relay authenticates with it");
	ctx = t_open(T_DEVICE);
	t_conn_opts_default(&o);
	o.timeout = T_EXP;
	o.retry_cnt = RETRIES;
	t_pair_create(&p, ctx, NULL, &o, 1024);
	abuf = t_alloc(MSG * SLOTS, 0);
	bbuf = t_alloc(MSG * SLOTS, 0);
	amr = t_reg(p.pd, abuf, MSG * SLOTS, T_ACCESS_ALL);
	bmr = t_reg(p.pd, bbuf, MSG * SLOTS, T_ACCESS_ALL);
	relay_start(&p.ep[1].gid);
	T_RUN_CASES(cases, argc, argv);
	relay_stop();
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_pair_destroy(&p);
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
