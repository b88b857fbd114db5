// SPDX-License-Identifier: MIT
/*
 * The fabric's authentication, attacked with raw TCP from the outside.
 *
 * One process runs the emulator (the job's secret comes from
 * GNIC_EMU_SECRET, set by CTest) and plays the attacker on plain sockets,
 * building the wire bytes with emu/fabric_wire.c. A target QP waits for
 * requests from a peer GID the attacker claims; its memory is guard bytes.
 *
 * Acceptor side (the emulator's listener; attacker = client):
 *   control        hello + proof made with the secret, then a WRITE: the
 *                  bytes land and an ACK comes back (the requests below are
 *                  exactly the ones that would work)
 *   no_handshake   WRITEs with no hello at all
 *   v1_hello       the old unauthenticated version-1 hello, then a WRITE
 *   no_proof       a version-2 hello, then a WRITE where the proof belongs
 *   wrong_secret   the full handshake answered with another secret
 *   replay         the client bytes of a recorded good session, re-sent on
 *                  a new connection after the target was reset to accept
 *                  that very WRITE again
 *   timeout        a hello and then silence; and silence from the start
 * each must close the connection within the bound, leave every target
 * byte as it was and complete nothing on the target.
 *
 * Connector side (the emulator dials a fake peer; attacker = server):
 *   server_wrong   the challenge is made with another secret
 *   server_replay  the challenge is one the real listener gave to another
 *                  hello (recorded)
 *   server_other_gid  the challenge is valid (the secret) but names a GID
 *                  other than the one the emulator dialed (a relay to some
 *                  other process of the job)
 * the emulator must send nothing after its hello (no proof, not one byte
 * of the WRITE it holds) and its QP must end in RETRY_EXC_ERR in time;
 *   server_slow    a valid challenge sent only after the WRITE's one try
 *                  (134 ms) would have passed: the WRITE's timer starts
 *                  when it is transmitted, after the handshake, so the ACK
 *                  completes it
 *   server_ok      the control: a challenge made with the secret gets the
 *                  proof and the WRITE, and an ACK completes it.
 *
 * Identities:
 *   reflect        no secret at all: the emulator's QP dials a port the
 *                  attacker holds (its peer died); the attacker relays the
 *                  emulator's hello into the emulator's own listener, the
 *                  challenge back and the proof on, then answers requests
 *                  with forged ACKs and READ data. No byte may follow the
 *                  hello, the READ buffer keeps its guard bytes, the WRITE
 *                  ends in RETRY_EXC_ERR.
 *   hello_self     hellos naming the listener's own GID and another local
 *                  device's: closed with no challenge
 *   other_peer     a client with the secret claiming a GID the target QP is
 *                  not connected to: its WRITE is dropped (the responder)
 *   mac_first_byte, mac_last_byte  a proof and a challenge wrong in just
 *                  that byte of the MAC: refused like any other
 *
 * Large messages from a peer holding the secret:
 *   big_write_refused  WRITEs announcing 256 MiB and 2 GiB that the target
 *                  does not take (out of sequence, duplicate): memory does
 *                  not grow with their data, which is skipped exactly
 *   big_write_ok   a 16 MiB WRITE the target takes lands and is ACKed
 *   big_read       a 16 MiB READ answered in full lands; a 4 KiB READ
 *                  answered with 2 GiB fails at once, memory stays put
 *   big_write_dereg  a 16 MiB WRITE the emulator sends from its MR waits
 *                  behind a peer that reads nothing; the MR is deregistered
 *                  (at once) and overwritten: the peer gets the bytes of
 *                  the post
 *
 * The fake peer also counts what no in-process peer can show exactly:
 *   rnr_count      a SEND answered with RNR NAKs only: with rnr_retry N
 *                  (0, 1, 3, 6) the emulator sends it exactly N + 1 times,
 *                  then completes it with RNR_RETRY_EXC_ERR; with 7 it
 *                  retries for ever (10 NAKs, then an ACK: SUCCESS)
 *   wrong_answer   a WRITE and a SEND answered with an atomic's response:
 *                  BAD_RESP_ERR, and the 8 bytes it carries land nowhere
 *                  (not in the WRITE's source buffer either)
 *
 * Run one case: test_sec_wire <case>.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "fabric_wire.h"
#include "gnic/gnic_mlx5.h"

#define TB_LEN      8192
#define W_OFF       512
#define W_LEN       64
#define GUARD       0xee
#define CLIENT_QPN  0x4242
#define FAKE_QPN    0x5151
#define PSN0        0x1000 /* t_conn_opts_default's rq_psn */
#define CLOSE_MS    5000   /* a refused connection is closed within this */
#define CAPTURE_MAX 4096

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *tgt;
static uint8_t *tb, *src;
static struct ibv_mr *tmr, *smr;
static struct t_conn_opts opts;
static struct sockaddr_in listener;
static union ibv_gid listener_gid, client_gid;
static const char *secret;

/* ---- GIDs and sockets ---------------------------------------------------- */

/* gnic-emu GID: bytes 8-9 port (big-endian), 10-11 ff ff, 12-15 IPv4. */
static void gid_of(const struct sockaddr_in *a, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	memcpy(&gid->raw[8], &a->sin_port, 2);
	gid->raw[10] = gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &a->sin_addr, 4);
}

static void addr_of(const union ibv_gid *gid, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	memcpy(&a->sin_port, &gid->raw[8], 2);
	memcpy(&a->sin_addr, &gid->raw[12], 4);
}

/* raw_connect() dials the listener's AF_UNIX twin, as the emulator does
 * for a listener of this host (case_local_*). */
static bool via_local;

/* The twin's abstract name, as fabric.c's fab_local_name makes it. */
static socklen_t twin_name(const struct sockaddr_in *a, struct sockaddr_un *un)
{
	char ip[INET_ADDRSTRLEN];
	int n;

	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	CHECK(inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip)) != NULL);
	n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "gnic-emu-fabric/%s:%u", ip,
	             ntohs(a->sin_port));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int local_connect(const struct sockaddr_in *a)
{
	struct sockaddr_un un;
	socklen_t len = twin_name(a, &un);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	if (connect(fd, (const struct sockaddr *)&un, len))
		T_FAIL("connect to the local twin of the emulator's listener (@%s): %s",
		       un.sun_path + 1, strerror(errno));
	return fd;
}

/* A socket listening on the twin name of a, as any process may bind one. */
static int twin_squat(const struct sockaddr_in *a)
{
	struct sockaddr_un un;
	socklen_t len = twin_name(a, &un);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (const struct sockaddr *)&un, len) || listen(fd, 4))
		return -1;
	return fd;
}

static int raw_connect(const struct sockaddr_in *a)
{
	int fd, one = 1;

	if (via_local)
		return local_connect(a);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a)))
		T_FAIL("connect to the emulator's listener: %s", strerror(errno));
	return fd;
}

static void send_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) /* the peer may close while we send: that is fine */
			return;
		b += n;
		len -= (size_t)n;
	}
}

/* Read exactly len bytes within ms. false on EOF, reset or timeout. */
static bool recv_exact(int fd, void *p, size_t len, unsigned ms)
{
	uint8_t *b = p;
	uint64_t end = t_now_ms() + ms;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = t_now_ms();
		ssize_t n;

		if (now >= end || poll(&pfd, 1, (int)(end - now)) <= 0)
			return false;
		n = recv(fd, b, len, 0);
		if (n <= 0)
			return false;
		b += n;
		len -= (size_t)n;
	}
	return true;
}

/* Wait until the peer closes fd (EOF or reset). Returns the time it took and
 * the bytes that arrived meanwhile in *got; fails the test after ms. */
static uint64_t wait_closed(int fd, unsigned ms, size_t *got, const char *what)
{
	uint64_t start = t_now_ms(), end = start + ms;
	uint8_t buf[4096];

	*got = 0;
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = t_now_ms();
		ssize_t n;

		if (now >= end || poll(&pfd, 1, (int)(end - now)) <= 0)
			T_FAIL("%s: the connection is still open after %u ms", what, ms);
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return t_now_ms() - start;
		*got += (size_t)n;
	}
}

/* ---- wire bytes ---------------------------------------------------------- */

static void nonce_random(uint8_t n[EMU_AUTH_NONCE_LEN])
{
	CHECK_EQ(getrandom(n, EMU_AUTH_NONCE_LEN, 0), EMU_AUTH_NONCE_LEN);
}

/* peer: the GID a connector dialed; NULL for an acceptor. */
static void start_hs(struct emu_hs *hs, enum emu_hs_role role, const char *key,
                     const union ibv_gid *gid, const union ibv_gid *peer, uint8_t *out, size_t *n)
{
	uint8_t nonce[EMU_AUTH_NONCE_LEN];

	nonce_random(nonce);
	emu_hs_start(hs, role, key, strlen(key), gid, peer, nonce, out, n);
}

static size_t write_msg(uint8_t *out)
{
	struct emu_msg m;

	memset(&m, 0, sizeof(m));
	m.type = EMU_MSG_WRITE;
	m.flags = EMU_MSG_F_ACKREQ;
	m.len = W_LEN;
	m.dst_qpn = tgt->qp_num;
	m.src_qpn = CLIENT_QPN;
	m.psn = PSN0;
	m.raddr = (uintptr_t)tb + W_OFF;
	m.rkey = tmr->rkey;
	m.gid_type = IBV_GID_TYPE_ROCE_V2; /* the target's sgid: T_GID_INDEX */
	memcpy(out, &m, sizeof(m));
	t_fill(out + sizeof(m), W_LEN, 77);
	return sizeof(m) + W_LEN;
}

/* A recording of what a client sent. */
struct capture {
	uint8_t b[CAPTURE_MAX];
	size_t len;
};

static void csend(int fd, struct capture *c, const void *p, size_t n)
{
	if (c) {
		CHECK(c->len + n <= sizeof(c->b));
		memcpy(c->b + c->len, p, n);
		c->len += n;
	}
	send_all(fd, p, n);
}

/* Client handshake with key, claiming GID gid; the proof is computed for
 * the server's real nonce even when key is wrong (an attacker with another
 * secret), and byte flip of it is inverted (-1: none). Returns the connected
 * socket. */
static int client_handshake_as(const char *key, const union ibv_gid *gid, struct capture *cap,
                               int flip)
{
	uint8_t hello[EMU_HS_OUT_MAX], ch[EMU_HS_OUT_MAX], proof[EMU_HS_OUT_MAX];
	int fd = raw_connect(&listener);
	struct emu_hs con;
	size_t n;

	start_hs(&con, EMU_HS_CONNECTOR, key, gid, &listener_gid, hello, &n);
	csend(fd, cap, hello, n);
	if (!recv_exact(fd, ch, sizeof(struct emu_challenge), CLOSE_MS))
		T_FAIL("no challenge from the emulator after a valid hello");
	if (strcmp(key, secret)) {
		/* We cannot verify the emulator, but we can answer its nonce
		 * with our key: re-make its MAC as ours so our side goes on. */
		struct emu_challenge c;
		struct emu_hs acc;
		uint8_t mine[EMU_HS_OUT_MAX];

		memcpy(&c, ch, sizeof(c));
		emu_hs_start(&acc, EMU_HS_ACCEPTOR, key, strlen(key), &c.hello.src_gid, NULL,
		             c.hello.nonce, mine, &n);
		CHECK_EQ(emu_hs_step(&acc, hello, mine, &n), EMU_HS_OK);
		memcpy(ch, mine, n);
	}
	CHECK_EQ(emu_hs_step(&con, ch, proof, &n), EMU_HS_OK);
	CHECK_EQ(con.state, EMU_HS_DONE);
	if (flip >= 0)
		proof[flip] ^= 0x01;
	csend(fd, cap, proof, n);
	return fd;
}

static int client_handshake(const char *key, struct capture *cap)
{
	return client_handshake_as(key, &client_gid, cap, -1);
}

/* ---- target checks ------------------------------------------------------- */

static void expect_untouched(const char *what)
{
	t_case("%s: nothing written, nothing completed", what);
	CHECK_BYTES(tb, GUARD, TB_LEN);
	t_expect_empty(rcq, what);
	t_expect_empty(scq, what);
	CHECK_EQ(t_qp_state(tgt), IBV_QPS_RTS);
}

static void expect_refused(int fd, const char *what)
{
	size_t got;
	uint64_t ms = wait_closed(fd, CLOSE_MS, &got, what);

	printf("%s: closed by the emulator after %llu ms (%zu bytes came back)\n", what,
	       (unsigned long long)ms, got);
	/* at most its challenge: never an answer to a request */
	CHECK(got <= sizeof(struct emu_challenge));
	close(fd);
	expect_untouched(what);
}

/* The target accepts the WRITE at PSN0 again, memory back to guard bytes. */
static void target_reset(void)
{
	struct t_ep peer = {.gid = client_gid, .qpn = CLIENT_QPN};

	memset(tb, GUARD, TB_LEN);
	t_reconnect(tgt, &peer, &opts);
}

/* ---- acceptor-side cases ------------------------------------------------- */

/* A good session: the WRITE lands and is ACKed. Records it if cap. */
static void good_session(struct capture *cap)
{
	uint8_t w[sizeof(struct emu_msg) + W_LEN], want[W_LEN];
	struct emu_msg ack;
	int fd;

	fd = client_handshake(secret, cap);
	csend(fd, cap, w, write_msg(w));
	if (!recv_exact(fd, &ack, sizeof(ack), T_WAIT_MS))
		T_FAIL("no ACK for a WRITE after a valid handshake");
	CHECK_EQ(ack.type, EMU_MSG_ACK);
	CHECK_EQ(ack.psn, PSN0);
	CHECK_EQ(ack.dst_qpn, CLIENT_QPN);
	t_fill(want, W_LEN, 77);
	CHECK_MEM(tb + W_OFF, want, W_LEN);
	CHECK_BYTES(tb, GUARD, W_OFF);
	CHECK_BYTES(tb + W_OFF + W_LEN, GUARD, TB_LEN - W_OFF - W_LEN);
	close(fd);
}

static void case_control(void)
{
	good_session(NULL);
	target_reset();
}

static void case_no_handshake(void)
{
	uint8_t w[sizeof(struct emu_msg) + W_LEN];
	int fd = raw_connect(&listener);
	size_t n = write_msg(w);

	send_all(fd, w, n);
	send_all(fd, w, n);
	expect_refused(fd, "WRITEs without a handshake");
}

static void case_v1_hello(void)
{
	struct {
		uint32_t magic, version;
		union ibv_gid gid;
	} v1 = {EMU_FABRIC_MAGIC, 1, client_gid};
	uint8_t w[sizeof(struct emu_msg) + W_LEN];
	int fd = raw_connect(&listener);

	send_all(fd, &v1, sizeof(v1));
	send_all(fd, w, write_msg(w));
	expect_refused(fd, "a version-1 hello and a WRITE");
}

static void case_no_proof(void)
{
	uint8_t hello[EMU_HS_OUT_MAX], w[sizeof(struct emu_msg) + W_LEN];
	int fd = raw_connect(&listener);
	struct emu_hs con;
	size_t n;

	start_hs(&con, EMU_HS_CONNECTOR, secret, &client_gid, &listener_gid, hello, &n);
	send_all(fd, hello, n);
	send_all(fd, w, write_msg(w));
	expect_refused(fd, "a hello and a WRITE where the proof belongs");
}

static void case_wrong_secret(void)
{
	uint8_t w[sizeof(struct emu_msg) + W_LEN];
	int fd = client_handshake("not the job's secret, but long enough", NULL);

	send_all(fd, w, write_msg(w));
	expect_refused(fd, "a handshake with another secret and a WRITE");
}

static void case_replay(void)
{
	static struct capture cap;
	int fd;

	t_case("replay: record a good session");
	cap.len = 0;
	good_session(&cap);
	t_case("replay: the target accepts the same WRITE again");
	target_reset();
	fd = raw_connect(&listener);
	send_all(fd, cap.b, cap.len);
	expect_refused(fd, "the recorded session's bytes, re-sent");
	t_case("replay: a fresh good session still works");
	good_session(NULL);
	target_reset();
}

static unsigned handshake_ms(void)
{
	const char *s = getenv("GNIC_EMU_HANDSHAKE_MS");

	return s ? (unsigned)atoi(s) : 5000;
}

static void case_timeout(void)
{
	unsigned hs = handshake_ms();
	uint8_t hello[EMU_HS_OUT_MAX], ch[sizeof(struct emu_challenge)];
	struct emu_hs con;
	uint64_t ms;
	size_t n, got;
	int fd;

	t_case("timeout: hello, then silence (GNIC_EMU_HANDSHAKE_MS %u)", hs);
	fd = raw_connect(&listener);
	start_hs(&con, EMU_HS_CONNECTOR, secret, &client_gid, &listener_gid, hello, &n);
	send_all(fd, hello, n);
	CHECK(recv_exact(fd, ch, sizeof(ch), CLOSE_MS));
	ms = wait_closed(fd, hs + CLOSE_MS, &got, "a client that never sends its proof");
	printf("hello then silence: closed after %llu ms\n", (unsigned long long)ms);
	CHECK_EQ(got, 0);
	CHECK_GE(ms + 50, hs * 8 / 10); /* not before its time (50 ms of slack) */
	close(fd);

	t_case("timeout: silence from the start");
	fd = raw_connect(&listener);
	ms = wait_closed(fd, hs + CLOSE_MS, &got, "a client that never says hello");
	printf("silence: closed after %llu ms\n", (unsigned long long)ms);
	CHECK_EQ(got, 0);
	close(fd);
	expect_untouched("handshake timeouts");
}

/* ---- connector-side cases ------------------------------------------------ */

enum fake {
	FAKE_WRONG,     /* the challenge is made with another secret */
	FAKE_REPLAY,    /* the challenge the real listener gave another hello */
	FAKE_OK,        /* a valid challenge: the control */
	FAKE_OTHER_GID, /* valid MAC, but the fake names a GID it was not dialed at */
	FAKE_MAC_FIRST, /* valid but for the MAC's first byte */
	FAKE_MAC_LAST,  /* valid but for the MAC's last byte */
	FAKE_SLOW,      /* valid, but the challenge comes after the WRITE's timeouts */
};
static const char *fake_names[] = {"server_wrong",     "server_replay",  "server_ok",
                                   "server_other_gid", "mac_first_byte", "mac_last_byte",
                                   "server_slow"};
/* FAKE_SLOW: the QP has one try of 134 ms (timeout 15, retry_cnt 0), and the
 * challenge comes 200 ms after the hello: past that try counted from the
 * post, within the grace a request waiting to be transmitted gets (one
 * timeout), and within the handshake deadline (GNIC_EMU_HANDSHAKE_MS=300) */
#define SLOW_TIMEOUT      15
#define SLOW_CHALLENGE_MS 200

static int fake_listen(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(fd >= 0);
	CHECK_EQ(bind(fd, (struct sockaddr *)a, sizeof(*a)), 0);
	CHECK_EQ(listen(fd, 16), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)a, &len), 0);
	return fd;
}

static int fake_accept(int lfd)
{
	struct pollfd pfd = {.fd = lfd, .events = POLLIN};
	int fd;

	if (poll(&pfd, 1, T_WAIT_MS) <= 0)
		T_FAIL("the emulator did not connect to the fake peer");
	fd = accept(lfd, NULL, NULL);
	CHECK(fd >= 0);
	return fd;
}

/* A challenge the real listener gave to some other hello. */
static void recorded_challenge(uint8_t *ch)
{
	uint8_t hello[EMU_HS_OUT_MAX];
	int fd = raw_connect(&listener);
	struct emu_hs con;
	size_t n;

	start_hs(&con, EMU_HS_CONNECTOR, secret, &client_gid, &listener_gid, hello, &n);
	send_all(fd, hello, n);
	CHECK(recv_exact(fd, ch, sizeof(struct emu_challenge), CLOSE_MS));
	close(fd);
}

/* The fake's challenge to the emulator's hello, as kind says. */
static void fake_challenge(enum fake kind, const union ibv_gid *dialed, const uint8_t *hello,
                           uint8_t *ch, size_t *n, struct emu_hs *acc)
{
	union ibv_gid gid = *dialed;

	if (kind == FAKE_REPLAY) {
		recorded_challenge(ch);
		*n = sizeof(struct emu_challenge);
		return;
	}
	if (kind == FAKE_OTHER_GID)
		gid.raw[9] ^= 0x01; /* a neighbouring port */
	start_hs(acc, EMU_HS_ACCEPTOR,
	         kind == FAKE_WRONG ? "not the job's secret, but long enough" : secret, &gid, NULL,
	         ch, n);
	CHECK_EQ(emu_hs_step(acc, hello, ch, n), EMU_HS_OK);
	if (kind == FAKE_MAC_FIRST)
		ch[sizeof(struct emu_hello)] ^= 0x01;
	if (kind == FAKE_MAC_LAST)
		ch[sizeof(struct emu_challenge) - 1] ^= 0x80;
}

static void case_server(enum fake kind)
{
	const char *const *names = fake_names;
	uint8_t hello[sizeof(struct emu_hello)], ch[EMU_HS_OUT_MAX], proof[EMU_HS_OUT_MAX];
	struct t_conn_opts fast;
	struct sockaddr_in fa;
	struct emu_hs acc;
	struct emu_hello h;
	struct t_ep peer;
	struct ibv_qp *rq;
	struct ibv_cq *rq_cq = t_cq(ctx, 16);
	struct ibv_wc wc;
	struct t_qp_caps caps;
	int lfd = fake_listen(&fa), fd;
	size_t n;

	t_case("%s: the emulator dials a fake peer", names[kind]);
	t_conn_opts_default(&fast);
	fast.timeout = 12; /* 16.8 ms, 4 tries */
	fast.retry_cnt = 3;
	if (kind == FAKE_SLOW) {
		fast.timeout = SLOW_TIMEOUT;
		fast.retry_cnt = 0;
	}
	t_qp_caps_default(&caps);
	rq = t_qp(pd, rq_cq, rq_cq, &caps, NULL);
	memset(&peer, 0, sizeof(peer));
	gid_of(&fa, &peer.gid);
	peer.qpn = FAKE_QPN;
	t_connect(rq, &peer, &fast);
	t_fill(src, W_LEN, 99);
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = W_LEN, .lkey = smr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_WRITE,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.rdma = {.remote_addr = 0x1000, .rkey = 0x1234}};
	t_post_send(rq, &wr);

	fd = fake_accept(lfd);
	if (!recv_exact(fd, hello, sizeof(hello), CLOSE_MS))
		T_FAIL("no hello from the emulator");
	memcpy(&h, hello, sizeof(h));
	CHECK_EQ(h.magic, EMU_FABRIC_MAGIC);
	CHECK_EQ(h.version, EMU_FABRIC_VERSION);
	fake_challenge(kind, &peer.gid, hello, ch, &n, &acc);
	if (kind == FAKE_SLOW)
		t_sleep_ms(SLOW_CHALLENGE_MS);
	send_all(fd, ch, n);

	if (kind == FAKE_OK || kind == FAKE_SLOW) {
		uint8_t m[sizeof(struct emu_msg) + W_LEN];
		struct emu_msg ack, w;

		CHECK(recv_exact(fd, proof, sizeof(struct emu_proof), CLOSE_MS));
		CHECK_EQ(emu_hs_step(&acc, proof, ch, &n), EMU_HS_OK);
		CHECK_EQ(acc.state, EMU_HS_DONE);
		CHECK(recv_exact(fd, m, sizeof(m), CLOSE_MS));
		memcpy(&w, m, sizeof(w));
		CHECK_EQ(w.type, EMU_MSG_WRITE);
		CHECK_EQ(w.len, W_LEN);
		CHECK_EQ(w.dst_qpn, FAKE_QPN);
		CHECK_MEM(m + sizeof(w), src, W_LEN);
		memset(&ack, 0, sizeof(ack));
		ack.type = EMU_MSG_ACK;
		ack.dst_qpn = rq->qp_num;
		ack.src_qpn = FAKE_QPN;
		ack.psn = w.psn;
		send_all(fd, &ack, sizeof(ack));
		wc = t_poll1(rq_cq, "the WRITE the fake peer ACKed");
		CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	} else {
		size_t got;
		uint64_t ms = wait_closed(fd, CLOSE_MS, &got, names[kind]);
		uint64_t start = t_now_ms();

		printf("%s: the emulator closed after %llu ms, %zu bytes after its hello\n",
		       names[kind], (unsigned long long)ms, got);
		if (got)
			T_FAIL("%s: the emulator sent %zu bytes to a peer that failed to "
			       "authenticate",
			       names[kind], got);
		/* 4 tries of 16.8 ms; the bound has plenty of slack */
		t_poll_timeout(rq_cq, 1, &wc, 3000, "the WRITE to an impostor");
		CHECK_WC_STATUS(&wc, 1, IBV_WC_RETRY_EXC_ERR);
		printf("%s: RETRY_EXC_ERR %llu ms later\n", names[kind],
		       (unsigned long long)(t_now_ms() - start));
	}
	close(fd);
	CHECK_OK(ibv_destroy_qp(rq));
	CHECK_OK(ibv_destroy_cq(rq_cq));
	close(lfd);
	expect_untouched(names[kind]);
}

static void case_server_wrong(void)
{
	case_server(FAKE_WRONG);
}

static void case_server_replay(void)
{
	case_server(FAKE_REPLAY);
}

static void case_server_ok(void)
{
	case_server(FAKE_OK);
}

/* The WRITE waits in the emulator for the handshake longer than its QP's
 * timeout: its timer starts when it is transmitted, as a ConnectX's does,
 * so the peer's ACK completes it (not RETRY_EXC_ERR). */
static void case_server_slow(void)
{
	case_server(FAKE_SLOW);
}

/* ---- MACs wrong in one byte ---------------------------------------------- */

/* A proof right but for byte i: refused like any wrong one (a comparison
 * that stops early or looks at a prefix would let it in). */
static void proof_flipped(int i)
{
	uint8_t w[sizeof(struct emu_msg) + W_LEN];
	char what[64];
	int fd;

	snprintf(what, sizeof(what), "a proof wrong only in byte %d, then a WRITE", i);
	t_case("%s", what);
	fd = client_handshake_as(secret, &client_gid, NULL, i);
	send_all(fd, w, write_msg(w));
	expect_refused(fd, what);
}

static void case_mac_first_byte(void)
{
	proof_flipped(0);
	case_server(FAKE_MAC_FIRST);
}

static void case_mac_last_byte(void)
{
	proof_flipped(EMU_AUTH_MAC_LEN - 1);
	case_server(FAKE_MAC_LAST);
}

/* ---- identities ---------------------------------------------------------- */

/* A fresh hello naming gid: the emulator must close the connection without
 * answering it (a challenge would be half of a reflection). */
static void hello_refused(const union ibv_gid *gid, const char *what)
{
	struct emu_hello h;
	size_t got;
	uint64_t ms;
	int fd;

	t_case("%s", what);
	memset(&h, 0, sizeof(h));
	h.magic = EMU_FABRIC_MAGIC;
	h.version = EMU_FABRIC_VERSION;
	h.src_gid = *gid;
	nonce_random(h.nonce);
	fd = raw_connect(&listener);
	send_all(fd, &h, sizeof(h));
	ms = wait_closed(fd, CLOSE_MS, &got, what);
	printf("%s: closed after %llu ms, %zu bytes came back\n", what, (unsigned long long)ms,
	       got);
	if (got)
		T_FAIL("%s: the emulator answered it with %zu bytes (a challenge)", what, got);
	close(fd);
}

/* Hellos naming this process's own GIDs: the listener's, and another
 * device's (GNIC_EMU_DEVICES=2). In-process peers never use the fabric, so
 * such a hello can only be a relayed copy of one the process sent. */
static void case_hello_self(void)
{
	struct ibv_device **list;
	int n, others = 0;

	hello_refused(&listener_gid, "hello_self: a hello naming the listener's own GID");
	list = CHECK_PTR(ibv_get_device_list(&n));
	for (int i = 0; i < n; i++) {
		struct ibv_context *c;
		union ibv_gid gid;

		if (!strcmp(ibv_get_device_name(list[i]), T_DEVICE))
			continue;
		c = CHECK_PTR(ibv_open_device(list[i]));
		t_fabric_id(c, &gid);
		CHECK_OK(ibv_close_device(c));
		hello_refused(&gid, "hello_self: a hello naming another device of this process");
		others++;
	}
	ibv_free_device_list(list);
	CHECK_GE(others, 1); /* the test runs with GNIC_EMU_DEVICES=2 */
	expect_untouched("hello_self");
}

/* The responder's own check, behind the handshake: a client that holds the
 * secret but claims another GID than the target QP's peer gets nothing
 * done (no ACK, no byte written). */
static void case_other_peer(void)
{
	uint8_t w[sizeof(struct emu_msg) + W_LEN];
	union ibv_gid other = client_gid;
	struct emu_msg ack;
	int fd;

	t_case("other_peer: a WRITE from a GID the target QP is not connected to");
	other.raw[9] = 3; /* port 3 instead of 1 */
	fd = client_handshake_as(secret, &other, NULL, -1);
	send_all(fd, w, write_msg(w));
	if (recv_exact(fd, &ack, sizeof(ack), 500))
		T_FAIL("a WRITE from another peer was answered (type %u psn 0x%x)", ack.type,
		       ack.psn);
	close(fd);
	expect_untouched("other_peer");
}

/* ---- reflection ---------------------------------------------------------- */

#define STEP_MS   1000 /* one relay step */
#define LEAK_MS   500  /* how long the attacker listens for requests */
#define R_LEN     64
#define FORGED    0x66
#define VICTIM_WR 2

struct relay {
	unsigned conns, challenges, proofs, msgs, forged;
	size_t leaked; /* bytes the victim's connector sent after its hello */
};

/* Answer every whole request in buf[0, *len) as the peer would: an ACK, or
 * READ data of FORGED bytes. Consumed bytes leave buf. */
static void forge_answers(int vfd, uint8_t *buf, size_t *len, struct relay *r)
{
	static uint8_t data[R_LEN];
	size_t off = 0;

	memset(data, FORGED, sizeof(data));
	while (*len - off >= sizeof(struct emu_msg)) {
		struct emu_msg m, a;
		size_t total;

		memcpy(&m, buf + off, sizeof(m));
		if (!emu_wire_msg_valid(&m)) {
			off = *len;
			break;
		}
		total = sizeof(m) + emu_wire_payload_len(&m);
		if (*len - off < total)
			break;
		off += total;
		r->msgs++;
		memset(&a, 0, sizeof(a));
		a.dst_qpn = m.src_qpn;
		a.src_qpn = m.dst_qpn;
		a.psn = m.psn;
		a.type = m.type == EMU_MSG_READ ? EMU_MSG_READ_RESP : EMU_MSG_ACK;
		a.len = m.type == EMU_MSG_READ ? R_LEN : 0;
		send_all(vfd, &a, sizeof(a));
		if (a.len)
			send_all(vfd, data, a.len);
		r->forged++;
	}
	memmove(buf, buf + off, *len - off);
	*len -= off;
}

/* One connection the victim made to the attacker's port: its hello goes to
 * the victim's own listener, that listener's challenge back to the victim,
 * the victim's proof on to its listener; whatever requests follow get
 * forged answers. The attacker holds no secret. */
static void relay_one(int lfd, struct relay *r)
{
	uint8_t hello[sizeof(struct emu_hello)], ch[sizeof(struct emu_challenge)],
	    proof[sizeof(struct emu_proof)], buf[4096];
	uint64_t end;
	size_t len = 0;
	int vfd = accept(lfd, NULL, NULL), afd;

	CHECK(vfd >= 0);
	r->conns++;
	if (!recv_exact(vfd, hello, sizeof(hello), STEP_MS)) {
		close(vfd);
		return;
	}
	afd = raw_connect(&listener);
	send_all(afd, hello, sizeof(hello));
	if (recv_exact(afd, ch, sizeof(ch), STEP_MS)) {
		r->challenges++;
		send_all(vfd, ch, sizeof(ch));
		if (recv_exact(vfd, proof, sizeof(proof), STEP_MS)) {
			r->proofs++;
			r->leaked += sizeof(proof);
			send_all(afd, proof, sizeof(proof));
		}
	}
	for (end = t_now_ms() + LEAK_MS; t_now_ms() < end;) {
		struct pollfd pfd = {.fd = vfd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, 10) <= 0)
			continue;
		n = recv(vfd, buf + len, sizeof(buf) - len, 0);
		if (n <= 0)
			break; /* the victim closed: it refused the handshake */
		r->leaked += (size_t)n;
		len += (size_t)n;
		forge_answers(vfd, buf, &len, r);
		if (len == sizeof(buf))
			len = 0;
	}
	close(afd);
	close(vfd);
}

static void post_victim_ops(struct ibv_qp *vq, uint8_t *rbuf, struct ibv_mr *rmr)
{
	struct ibv_sge ws = {.addr = (uintptr_t)src, .length = W_LEN, .lkey = smr->lkey};
	struct ibv_sge rs = {.addr = (uintptr_t)rbuf, .length = R_LEN, .lkey = rmr->lkey};
	struct ibv_send_wr w = {.wr_id = 1,
	                        .sg_list = &ws,
	                        .num_sge = 1,
	                        .opcode = IBV_WR_RDMA_WRITE,
	                        .send_flags = IBV_SEND_SIGNALED,
	                        .wr.rdma = {.remote_addr = 0x1000, .rkey = 0x1234}};
	struct ibv_send_wr rd = {.wr_id = 2,
	                         .sg_list = &rs,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_READ,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.rdma = {.remote_addr = 0x2000, .rkey = 0x1234}};

	t_fill(src, W_LEN, 99);
	t_post_send(vq, &w);
	t_post_send(vq, &rd);
}

/* The victim's peer died and the attacker took its port: the victim's own
 * handshake, relayed back into the victim, must not authenticate anybody. */
static void case_reflect(void)
{
	struct ibv_cq *vcq = t_cq(ctx, 16);
	struct ibv_wc wc[VICTIM_WR];
	struct t_conn_opts o;
	struct t_qp_caps caps;
	struct sockaddr_in fa;
	struct relay r = {0};
	struct ibv_qp *vq;
	struct ibv_mr *rmr;
	struct t_ep peer;
	uint8_t *rbuf;
	uint64_t end;
	int lfd = fake_listen(&fa), got = 0;

	t_case("reflect: the victim dials a port the attacker holds");
	rbuf = t_alloc(T_PAGE, GUARD);
	rmr = t_reg(pd, rbuf, T_PAGE, T_ACCESS_ALL);
	t_conn_opts_default(&o);
	o.timeout = 14; /* 67 ms, 4 tries */
	o.retry_cnt = 3;
	t_qp_caps_default(&caps);
	vq = t_qp(pd, vcq, vcq, &caps, NULL);
	memset(&peer, 0, sizeof(peer));
	gid_of(&fa, &peer.gid);
	peer.qpn = FAKE_QPN;
	t_connect(vq, &peer, &o);
	post_victim_ops(vq, rbuf, rmr);
	for (end = t_now_ms() + T_WAIT_MS; got < VICTIM_WR && t_now_ms() < end;) {
		struct pollfd pfd = {.fd = lfd, .events = POLLIN};
		int k = ibv_poll_cq(vcq, VICTIM_WR - got, wc + got);

		CHECK(k >= 0);
		got += k;
		if (got < VICTIM_WR && poll(&pfd, 1, 5) == 1)
			relay_one(lfd, &r);
	}
	printf("reflect: %u connections relayed, %u challenges from the victim's listener, %u "
	       "proofs, %zu bytes after the hello, %u requests, %u forged answers\n",
	       r.conns, r.challenges, r.proofs, r.leaked, r.msgs, r.forged);
	if (got < VICTIM_WR)
		T_FAIL("the victim's WRITE and READ did not end within %d ms", T_WAIT_MS);
	CHECK_GE(r.conns, 1); /* the attack was made */
	for (int i = 0; i < VICTIM_WR; i++)
		t_print_wc(stdout, &wc[i]);
	if (r.challenges)
		T_FAIL("the victim's listener answered its own relayed hello with a challenge");
	if (r.leaked)
		T_FAIL("the victim sent the attacker %zu bytes after its hello (%u proofs, %u "
		       "requests)",
		       r.leaked, r.proofs, r.msgs);
	if (rbuf[0] == FORGED)
		T_FAIL("the victim's READ buffer holds the attacker's bytes");
	CHECK_BYTES(rbuf, GUARD, T_PAGE);
	CHECK_WC_STATUS(&wc[0], 1, IBV_WC_RETRY_EXC_ERR);
	CHECK_WC_STATUS(&wc[1], 2, IBV_WC_WR_FLUSH_ERR);
	CHECK_OK(ibv_destroy_qp(vq));
	CHECK_OK(ibv_destroy_cq(vcq));
	CHECK_OK(ibv_dereg_mr(rmr));
	free(rbuf);
	close(lfd);
	expect_untouched("reflect");
}

static void case_server_other_gid(void)
{
	case_server(FAKE_OTHER_GID);
}

/* ---- large messages ------------------------------------------------------ */

#define BIG_LEN      (16u << 20) /* a large message its QP takes */
#define STREAM_LEN   (256u << 20)
#define RSS_SLACK    (64u << 20) /* growth allowed while STREAM_LEN arrive */
#define STREAM_CHUNK (1u << 20)

static size_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	CHECK(f != NULL);
	CHECK_EQ(fscanf(f, "%lu %lu", &size, &resident), 2);
	fclose(f);
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* len bytes of data; false if the emulator stopped reading (closed). */
static bool stream(int fd, size_t len)
{
	static uint8_t chunk[STREAM_CHUNK];

	while (len) {
		size_t n = len < sizeof(chunk) ? len : sizeof(chunk);
		ssize_t w = send(fd, chunk, n, MSG_NOSIGNAL);

		if (w <= 0)
			return false;
		len -= (size_t)w;
	}
	return true;
}

static void check_rss(size_t before, const char *what)
{
	size_t now = rss_bytes(), grew = now > before ? now - before : 0;

	printf("%s: resident memory grew by %zu KiB\n", what, grew >> 10);
	if (grew > RSS_SLACK)
		T_FAIL("%s: the emulator's memory grew by %zu MiB while %u MiB of data it does not "
		       "take arrived (allowed %u MiB)",
		       what, grew >> 20, STREAM_LEN >> 20, RSS_SLACK >> 20);
}

static void big_write_header(int fd, uint32_t len, uint32_t psn)
{
	uint8_t w[sizeof(struct emu_msg) + W_LEN];
	struct emu_msg m;

	write_msg(w);
	memcpy(&m, w, sizeof(m));
	m.len = len;
	m.psn = psn;
	send_all(fd, &m, sizeof(m));
}

/* An authenticated peer announces WRITEs of 256 MiB and 2 GiB its target
 * does not take (out of sequence; a duplicate): their data must be dropped
 * as it arrives, never buffered, and the stream stays in step. */
static void case_big_write_refused(void)
{
	struct emu_msg ack;
	size_t rss0;
	int fd;

	t_case("big_write_refused: a 256 MiB WRITE out of sequence, all of its data");
	fd = client_handshake(secret, NULL);
	rss0 = rss_bytes();
	big_write_header(fd, STREAM_LEN, PSN0 + 5);
	CHECK(stream(fd, STREAM_LEN));
	check_rss(rss0, "a 256 MiB WRITE out of sequence");

	t_case("big_write_refused: then a 2 GiB duplicate WRITE, 256 MiB of its data");
	big_write_header(fd, EMU_WIRE_MAX_MSG, PSN0 - 1);
	/* a duplicate is ACKed from its header, before its data (and this
	 * ACK shows the 256 MiB before were taken exactly) */
	if (!recv_exact(fd, &ack, sizeof(ack), CLOSE_MS))
		T_FAIL("no ACK for a duplicate 2 GiB WRITE before its data");
	CHECK_EQ(ack.type, EMU_MSG_ACK);
	CHECK_EQ(ack.psn, PSN0 - 1);
	CHECK(stream(fd, STREAM_LEN));
	check_rss(rss0, "a 2 GiB duplicate WRITE");
	close(fd);
	expect_untouched("big_write_refused");
	t_case("big_write_refused: a fresh session still writes");
	good_session(NULL);
	target_reset();
}

/* A 16 MiB WRITE the target takes: buffered whole, written, ACKed. */
static void case_big_write_ok(void)
{
	uint8_t *big = t_alloc(BIG_LEN, GUARD), *data = t_alloc(BIG_LEN, 0);
	struct ibv_mr *bmr = t_reg(pd, big, BIG_LEN, T_ACCESS_ALL);
	struct emu_msg m, ack;
	uint8_t w[sizeof(struct emu_msg) + W_LEN];
	int fd;

	t_case("big_write_ok: a 16 MiB WRITE into a 16 MiB MR");
	t_fill(data, BIG_LEN, 5);
	fd = client_handshake(secret, NULL);
	write_msg(w);
	memcpy(&m, w, sizeof(m));
	m.len = BIG_LEN;
	m.raddr = (uintptr_t)big;
	m.rkey = bmr->rkey;
	send_all(fd, &m, sizeof(m));
	send_all(fd, data, BIG_LEN);
	do { /* ACKs of its pieces as they came first (progress_acks) */
		if (!recv_exact(fd, &ack, sizeof(ack), T_WAIT_MS))
			T_FAIL("no ACK for a 16 MiB WRITE");
		CHECK_EQ(ack.type, EMU_MSG_ACK);
		CHECK_EQ(ack.psn, PSN0);
	} while (ack.flags & EMU_MSG_F_PROGRESS);
	CHECK_MEM(big, data, BIG_LEN);
	close(fd);
	CHECK_OK(ibv_dereg_mr(bmr));
	free(big);
	free(data);
	target_reset();
}

/* A QP of the emulator dialed the fake peer at fake_gid, which holds the
 * secret: the fake's end of the authenticated connection. */
static int fake_session(int lfd, const union ibv_gid *fake_gid)
{
	uint8_t hello[sizeof(struct emu_hello)], ch[EMU_HS_OUT_MAX], proof[EMU_HS_OUT_MAX];
	struct emu_hs acc;
	size_t n;
	int fd = fake_accept(lfd);

	CHECK(recv_exact(fd, hello, sizeof(hello), CLOSE_MS));
	start_hs(&acc, EMU_HS_ACCEPTOR, secret, fake_gid, NULL, ch, &n);
	CHECK_EQ(emu_hs_step(&acc, hello, ch, &n), EMU_HS_OK);
	send_all(fd, ch, n);
	CHECK(recv_exact(fd, proof, sizeof(struct emu_proof), CLOSE_MS));
	CHECK_EQ(emu_hs_step(&acc, proof, ch, &n), EMU_HS_OK);
	CHECK_EQ(acc.state, EMU_HS_DONE);
	return fd;
}

/* A signaled op on one buffer (a READ's or WRITE's remote side is the fake
 * peer's, which checks nothing). */
static void post_op(struct ibv_qp *qp, uint64_t id, enum ibv_wr_opcode op, void *buf, uint32_t len,
                    uint32_t lkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = lkey};
	struct ibv_send_wr wr = {.wr_id = id,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = op,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.rdma = {.remote_addr = 0x10000, .rkey = 0x1234}};

	t_post_send(qp, &wr);
}

/* The next READ request on fd for want_len bytes (retransmissions of an
 * earlier one, as a slow build may send, are skipped); its psn. */
static uint32_t read_request(int fd, uint32_t want_len)
{
	struct emu_msg m;

	do {
		CHECK(recv_exact(fd, &m, sizeof(m), CLOSE_MS));
		CHECK_EQ(m.type, EMU_MSG_READ);
	} while (m.operand[0] != want_len);
	return m.psn;
}

/* READ responses: a 16 MiB one the emulator asked for lands; one that
 * announces 2 GiB for a 4 KiB READ fails that READ at once (BAD_RESP) and
 * its data is dropped as it arrives, never buffered. */
static void case_big_read(void)
{
	uint8_t *dst = t_alloc(BIG_LEN, GUARD), *data = t_alloc(BIG_LEN, 0);
	struct ibv_mr *dmr = t_reg(pd, dst, BIG_LEN, T_ACCESS_ALL);
	struct ibv_cq *rq_cq = t_cq(ctx, 16);
	struct t_conn_opts o;
	struct t_qp_caps caps;
	struct sockaddr_in fa;
	struct emu_msg r;
	struct t_ep peer;
	struct ibv_qp *rq;
	struct ibv_wc wc;
	size_t rss0;
	int lfd = fake_listen(&fa), fd;

	t_case("big_read: a 16 MiB READ answered in full");
	t_conn_opts_default(&o);
	o.timeout = 18; /* 1.07 s: few retransmissions of the 16 MiB READ */
	t_qp_caps_default(&caps);
	rq = t_qp(pd, rq_cq, rq_cq, &caps, NULL);
	memset(&peer, 0, sizeof(peer));
	gid_of(&fa, &peer.gid);
	peer.qpn = FAKE_QPN;
	t_connect(rq, &peer, &o);
	post_op(rq, 1, IBV_WR_RDMA_READ, dst, BIG_LEN, dmr->lkey);
	fd = fake_session(lfd, &peer.gid);
	memset(&r, 0, sizeof(r));
	r.type = EMU_MSG_READ_RESP;
	r.dst_qpn = rq->qp_num;
	r.src_qpn = FAKE_QPN;
	r.psn = read_request(fd, BIG_LEN);
	r.len = BIG_LEN;
	t_fill(data, BIG_LEN, 6);
	send_all(fd, &r, sizeof(r));
	send_all(fd, data, BIG_LEN);
	wc = t_poll1(rq_cq, "the 16 MiB READ");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(dst, data, BIG_LEN);

	t_case("big_read: a 4 KiB READ answered with 2 GiB");
	memset(dst, GUARD, BIG_LEN);
	post_op(rq, 2, IBV_WR_RDMA_READ, dst, 4096, dmr->lkey);
	r.psn = read_request(fd, 4096);
	r.len = EMU_WIRE_MAX_MSG;
	rss0 = rss_bytes();
	send_all(fd, &r, sizeof(r));
	stream(fd, STREAM_LEN); /* the emulator may close meanwhile: fine */
	check_rss(rss0, "a 2 GiB READ response");
	t_poll_timeout(rq_cq, 1, &wc, CLOSE_MS, "a READ whose answer announces 2 GiB");
	CHECK_WC_STATUS(&wc, 2, IBV_WC_BAD_RESP_ERR);
	CHECK_BYTES(dst, GUARD, BIG_LEN);
	close(fd);
	CHECK_OK(ibv_destroy_qp(rq));
	CHECK_OK(ibv_destroy_cq(rq_cq));
	CHECK_OK(ibv_dereg_mr(dmr));
	close(lfd);
	free(dst);
	free(data);
	expect_untouched("big_read");
}

/* A 16 MiB WRITE the emulator sends from its MR (not copied: the socket
 * reads the MR as it takes the bytes) to a fake peer that reads nothing
 * yet: most of it waits. Its MR is deregistered and the buffer overwritten
 * meanwhile: deregistration does not wait for the peer, and what the peer
 * then reads is exactly what the buffer held when the WRITE was posted,
 * as nothing may read an MR's memory once ibv_dereg_mr returned. */
static void case_big_write_dereg(void)
{
	uint8_t *buf = t_alloc(BIG_LEN, 0), *data = t_alloc(BIG_LEN, 0), *got = t_alloc(BIG_LEN, 0);
	struct ibv_mr *bmr = t_reg(pd, buf, BIG_LEN, T_ACCESS_ALL);
	struct ibv_cq *rq_cq = t_cq(ctx, 16);
	struct t_conn_opts o;
	struct t_qp_caps caps;
	struct sockaddr_in fa;
	struct emu_msg w, ack;
	struct t_ep peer;
	struct ibv_qp *rq;
	struct ibv_wc wc;
	uint64_t t0, ms;
	int lfd = fake_listen(&fa), fd, small = 64 * 1024;

	t_case("big_write_dereg: a queued 16 MiB WRITE's MR deregistered before it left");
	/* a small window: the WRITE cannot leave while the fake reads nothing */
	CHECK_EQ(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	t_conn_opts_default(&o);
	o.timeout = 20; /* 4.3 s: no retransmission within the case */
	t_qp_caps_default(&caps);
	rq = t_qp(pd, rq_cq, rq_cq, &caps, NULL);
	memset(&peer, 0, sizeof(peer));
	gid_of(&fa, &peer.gid);
	peer.qpn = FAKE_QPN;
	/* before the QP dials (at RTR): under a sanitizer filling 16 MiB can take
	 * longer than the handshake's deadline (GNIC_EMU_HANDSHAKE_MS) */
	t_fill(buf, BIG_LEN, 7);
	memcpy(data, buf, BIG_LEN);
	t_connect(rq, &peer, &o);
	fd = fake_session(lfd, &peer.gid);
	t_sleep_ms(20); /* ... and is authenticated: no hold */
	post_op(rq, 1, IBV_WR_RDMA_WRITE, buf, BIG_LEN, bmr->lkey);
	CHECK(recv_exact(fd, &w, sizeof(w), CLOSE_MS));
	CHECK_EQ(w.type, EMU_MSG_WRITE);
	CHECK_EQ(w.len, BIG_LEN);
	t_sleep_ms(50); /* the emulator's socket fills; the rest is queued */
	t0 = t_now_ms();
	CHECK_OK(ibv_dereg_mr(bmr));
	ms = t_now_ms() - t0;
	printf("big_write_dereg: ibv_dereg_mr took %llu ms\n", (unsigned long long)ms);
	if (ms > 1000)
		T_FAIL("ibv_dereg_mr waited %llu ms for a peer that reads nothing",
		       (unsigned long long)ms);
	memset(buf, GUARD, BIG_LEN);
	if (!recv_exact(fd, got, BIG_LEN, T_WAIT_MS))
		T_FAIL("the 16 MiB WRITE's data did not come");
	CHECK_MEM(got, data, BIG_LEN);
	memset(&ack, 0, sizeof(ack));
	ack.type = EMU_MSG_ACK;
	ack.dst_qpn = rq->qp_num;
	ack.src_qpn = FAKE_QPN;
	ack.psn = w.psn;
	send_all(fd, &ack, sizeof(ack));
	wc = t_poll1(rq_cq, "the 16 MiB WRITE the fake peer ACKed");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	close(fd);
	CHECK_OK(ibv_destroy_qp(rq));
	CHECK_OK(ibv_destroy_cq(rq_cq));
	close(lfd);
	free(buf);
	free(data);
	free(got);
	expect_untouched("big_write_dereg");
}

/* ---- main ---------------------------------------------------------------- */

static void setup(void)
{
	struct t_qp_caps caps;
	struct sockaddr_in none = {.sin_family = AF_INET};
	struct t_ep peer;

	ctx = t_open(T_DEVICE);
	pd = CHECK_PTR(ibv_alloc_pd(ctx));
	scq = t_cq(ctx, 64);
	rcq = t_cq(ctx, 64);
	t_qp_caps_default(&caps);
	tgt = t_qp(pd, scq, rcq, &caps, NULL);
	tb = t_alloc(TB_LEN, GUARD);
	src = t_alloc(4096, 0);
	tmr = t_reg(pd, tb, TB_LEN, T_ACCESS_ALL);
	smr = t_reg(pd, src, 4096, T_ACCESS_ALL);
	t_conn_opts_default(&opts);
	/* The peer the attacker claims to be: port 1 of loopback, where nothing
	 * listens (the target's own connection attempts there just fail). */
	none.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	none.sin_port = htons(1);
	gid_of(&none, &client_gid);
	memset(&peer, 0, sizeof(peer));
	peer.gid = client_gid;
	peer.qpn = CLIENT_QPN;
	t_connect(tgt, &peer, &opts);
	/* a receive, so a SEND could complete: none may */
	t_post_recv_buf(tgt, 7, tb, 256, tmr->lkey);
	t_fabric_id(ctx, &listener_gid);
	addr_of(&listener_gid, &listener);
}

/* ---- RNR retry count ------------------------------------------------------ */

/* The next request on fd within ms (retransmissions included), of this
 * type and with at most 64 bytes of data; false: none. */
static bool next_request(int fd, uint8_t type, struct emu_msg *m, unsigned ms)
{
	uint8_t payload[64];

	if (!recv_exact(fd, m, sizeof(*m), ms))
		return false;
	CHECK_EQ(m->type, type);
	CHECK(m->len <= sizeof(payload));
	CHECK(recv_exact(fd, payload, m->len, CLOSE_MS));
	return true;
}

static bool next_send(int fd, struct emu_msg *m, unsigned ms)
{
	return next_request(fd, EMU_MSG_SEND, m, ms);
}

/* Answer request req to QP qpn with a response of this type (operand: an
 * ATOMIC_RESP's old value). */
static void answer_req(int fd, const struct emu_msg *req, uint8_t type, uint32_t qpn,
                       uint64_t operand)
{
	struct emu_msg a;

	memset(&a, 0, sizeof(a));
	a.type = type;
	a.rnr_timer = 1; /* 0.01 ms */
	a.dst_qpn = qpn;
	a.src_qpn = FAKE_QPN;
	a.psn = req->psn;
	a.operand[0] = operand;
	send_all(fd, &a, sizeof(a));
}

/* A QP on cq connected to QP FAKE_QPN of the fake peer listening at fa,
 * whose GID goes to *gid. */
static struct ibv_qp *fake_peer_qp(struct ibv_cq *cq, const struct sockaddr_in *fa,
                                   const struct t_conn_opts *o, union ibv_gid *gid)
{
	struct t_qp_caps caps;
	struct t_ep peer;
	struct ibv_qp *qp;

	t_qp_caps_default(&caps);
	qp = t_qp(pd, cq, cq, &caps, NULL);
	memset(&peer, 0, sizeof(peer));
	gid_of(fa, &peer.gid);
	peer.qpn = FAKE_QPN;
	t_connect(qp, &peer, o);
	*gid = peer.gid;
	return qp;
}

/* One SEND with rnr_retry n, every try NAKed (n == 7: 10 NAKs, then an ACK). */
static void rnr_round(uint8_t n)
{
	struct ibv_cq *cq = t_cq(ctx, 16);
	unsigned sends = 0, naks = n == 7 ? 10 : 1000;
	struct t_conn_opts o;
	struct sockaddr_in fa;
	union ibv_gid gid;
	struct emu_msg m;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int lfd = fake_listen(&fa), fd, got = 0;

	t_case("rnr_count: rnr_retry %u", n);
	t_conn_opts_default(&o);
	o.rnr_retry = n;
	o.timeout = 14; /* 67 ms: no transport retry while the NAKs come */
	qp = fake_peer_qp(cq, &fa, &o, &gid);
	t_fill(src, 16, n);
	post_op(qp, 7, IBV_WR_SEND, src, 16, smr->lkey);
	fd = fake_session(lfd, &gid);
	while (!got && next_send(fd, &m, 2000)) {
		sends++;
		answer_req(fd, &m, sends <= naks ? EMU_MSG_RNR_NAK : EMU_MSG_ACK, qp->qp_num, 0);
		got = ibv_poll_cq(cq, 1, &wc);
		if (!got && n != 7 && sends == n + 1u) /* the last try: its answer ends it */
			t_poll_timeout(cq, 1, &wc, 2000, "the SEND after its last RNR NAK"),
			    got = 1;
	}
	if (!got)
		t_poll_timeout(cq, 1, &wc, 2000, "the SEND"), got = 1;
	printf("rnr_retry %u: %u tries, status %s\n", n, sends, ibv_wc_status_str(wc.status));
	if (n == 7) {
		CHECK_WC_STATUS(&wc, 7, IBV_WC_SUCCESS);
		CHECK_EQ(sends, naks + 1);
	} else {
		CHECK_WC_STATUS(&wc, 7, IBV_WC_RNR_RETRY_EXC_ERR);
		if (sends != n + 1u)
			T_FAIL("rnr_retry %u: the SEND went out %u times, want %u", n, sends,
			       n + 1);
		CHECK(!next_send(fd, &m, 100)); /* and not once more */
	}
	close(fd);
	close(lfd);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_cq(cq));
}

static void case_rnr_count(void)
{
	static const uint8_t ns[] = {0, 1, 3, 6, 7};

	for (unsigned i = 0; i < sizeof(ns); i++)
		rnr_round(ns[i]);
}

/* ---- answers of the wrong type --------------------------------------------- */

/* A signaled WRITE (or SEND) of 16 bytes from src, answered by the fake
 * peer with an ATOMIC_RESP for its psn: a response no such request has.
 * The WQE completes with BAD_RESP_ERR and src keeps its bytes (the
 * answer's old value must not be scattered into the WQE's buffers). */
static void wrong_answer_round(enum ibv_wr_opcode op, uint8_t type, const char *what)
{
	struct ibv_cq *cq = t_cq(ctx, 16);
	uint8_t want[16];
	struct t_conn_opts o;
	struct sockaddr_in fa;
	union ibv_gid gid;
	struct emu_msg m;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int lfd = fake_listen(&fa), fd;

	t_case("wrong_answer: a %s answered with an ATOMIC_RESP", what);
	t_conn_opts_default(&o);
	qp = fake_peer_qp(cq, &fa, &o, &gid);
	t_fill(src, sizeof(want), op);
	memcpy(want, src, sizeof(want));
	post_op(qp, 9, op, src, sizeof(want), smr->lkey);
	fd = fake_session(lfd, &gid);
	CHECK(next_request(fd, type, &m, CLOSE_MS));
	answer_req(fd, &m, EMU_MSG_ATOMIC_RESP, qp->qp_num, 0x1122334455667788ull);
	t_poll_timeout(cq, 1, &wc, CLOSE_MS, what);
	CHECK_WC_STATUS(&wc, 9, IBV_WC_BAD_RESP_ERR);
	CHECK_MEM(src, want, sizeof(want));
	close(fd);
	close(lfd);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_cq(cq));
}

static void case_wrong_answer(void)
{
	wrong_answer_round(IBV_WR_RDMA_WRITE, EMU_MSG_WRITE, "WRITE");
	wrong_answer_round(IBV_WR_SEND, EMU_MSG_SEND, "SEND");
}

/* An ACK for a PSN the requester has not sent (a peer that expects other
 * PSNs, or a forged answer) acknowledges nothing: the requester drops it, as
 * an IB requester drops an ACK outside the PSNs it has outstanding. The
 * WRITE completes only with its own ACK; before, the forged one completed it
 * with SUCCESS though no byte had landed. */
static void case_future_ack(void)
{
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct t_conn_opts o;
	struct sockaddr_in fa;
	union ibv_gid gid;
	struct emu_msg m, ahead;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int lfd = fake_listen(&fa), fd;

	t_case("future_ack: an ACK beyond every PSN sent completes nothing");
	t_conn_opts_default(&o);
	qp = fake_peer_qp(cq, &fa, &o, &gid);
	post_op(qp, 5, IBV_WR_RDMA_WRITE, src, 16, smr->lkey);
	fd = fake_session(lfd, &gid);
	CHECK(next_request(fd, EMU_MSG_WRITE, &m, CLOSE_MS));
	ahead = m;
	ahead.psn = (m.psn + 1000) & 0xffffff;
	answer_req(fd, &ahead, EMU_MSG_ACK, qp->qp_num, 0);
	t_sleep_ms(30); /* under the 67 ms ack timeout: no retransmission yet */
	CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 0);
	answer_req(fd, &m, EMU_MSG_ACK, qp->qp_num, 0);
	t_poll_timeout(cq, 1, &wc, CLOSE_MS, "the WRITE");
	CHECK_WC(&wc, 5, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	close(fd);
	close(lfd);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_cq(cq));
}

/* ---- large messages that take longer than the timeout to cross ----------- */

#define SLOW_LEN   (4u << 20)   /* above FAB_IN_FREE: taken from its header */
#define SLOW_PIECE (128u << 10) /* EMU_PROGRESS_BYTES */
#define SLOW_GAP                                                                                   \
	40 /* ms between pieces: 32 of them, 1.28 s, well past the                                 \
	    * (retry_cnt 7 + 1) x 67 ms = 536 ms of tries */

/* A 4 MiB landing buffer (GUARD bytes) registered on pd, and 4 MiB of data
 * to send there. */
struct slow_buf {
	uint8_t *dst, *data;
	struct ibv_mr *mr;
};

static void slow_buf_open(struct slow_buf *b)
{
	b->dst = t_alloc(SLOW_LEN, GUARD);
	b->data = t_alloc(SLOW_LEN, 0);
	b->mr = t_reg(pd, b->dst, SLOW_LEN, T_ACCESS_ALL);
}

static void slow_buf_close(struct slow_buf *b)
{
	CHECK_OK(ibv_dereg_mr(b->mr));
	free(b->dst);
	free(b->data);
}

/* data[from, SLOW_LEN) on fd in 128 KiB pieces, gap_ms apart. */
static void send_pieces(int fd, const uint8_t *data, uint32_t from, unsigned gap_ms)
{
	for (uint32_t off = from; off < SLOW_LEN; off += SLOW_PIECE) {
		send_all(fd, data + off, SLOW_PIECE);
		if (gap_ms)
			t_sleep_ms(gap_ms);
	}
}

/* A QP of ours connected to the fake peer (default timeout and retries)
 * with a 4 MiB READ (wr_id 1) into the buffer posted and its request taken
 * from the session; resp: the READ_RESP header that answers it. */
struct slow_read {
	struct slow_buf b;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct emu_msg resp;
	int lfd, fd;
};

static void slow_read_open(struct slow_read *s, uint32_t seed)
{
	struct t_conn_opts o;
	struct sockaddr_in fa;
	union ibv_gid gid;

	slow_buf_open(&s->b);
	s->cq = t_cq(ctx, 16);
	s->lfd = fake_listen(&fa);
	t_conn_opts_default(&o);
	s->qp = fake_peer_qp(s->cq, &fa, &o, &gid);
	post_op(s->qp, 1, IBV_WR_RDMA_READ, s->b.dst, SLOW_LEN, s->b.mr->lkey);
	s->fd = fake_session(s->lfd, &gid);
	memset(&s->resp, 0, sizeof(s->resp));
	s->resp.type = EMU_MSG_READ_RESP;
	s->resp.dst_qpn = s->qp->qp_num;
	s->resp.src_qpn = FAKE_QPN;
	s->resp.psn = read_request(s->fd, SLOW_LEN);
	s->resp.len = SLOW_LEN;
	t_fill(s->b.data, SLOW_LEN, seed);
}

static void slow_read_close(struct slow_read *s)
{
	close(s->fd);
	close(s->lfd);
	CHECK_OK(ibv_destroy_qp(s->qp));
	CHECK_OK(ibv_destroy_cq(s->cq));
	slow_buf_close(&s->b);
}

/* A 4 MiB READ response that takes 1.28 s to arrive, in 128 KiB pieces
 * 40 ms apart, against the default 67 ms timeout and 7 retries. A ConnectX
 * hears such a response packet by packet, each restarting its timer; a
 * requester that counted only whole responses ended it in RETRY_EXC. */
static void case_slow_read_resp(void)
{
	struct slow_read s;
	struct ibv_wc wc;

	t_case("slow_read_resp: a 4 MiB READ response over 1.28 s, timeout 67 ms, retry_cnt 7");
	slow_read_open(&s, 8);
	send_all(s.fd, &s.resp, sizeof(s.resp));
	send_pieces(s.fd, s.b.data, 0, SLOW_GAP);
	wc = t_poll1(s.cq, "the slow 4 MiB READ");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(s.b.dst, s.b.data, SLOW_LEN);
	slow_read_close(&s);
}

/* The first READ of s answered whole and checked (its buffer then set to
 * 0x44), and a 4 KiB READ posted behind it: returns that READ's answer
 * header, for the peer to send after whatever it sends first. */
static struct emu_msg first_read_then_small(struct slow_read *s)
{
	struct emu_msg b;
	struct ibv_wc wc;

	send_all(s->fd, &s->resp, sizeof(s->resp));
	send_all(s->fd, s->b.data, SLOW_LEN);
	wc = t_poll1(s->cq, "the first READ");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(s->b.dst, s->b.data, SLOW_LEN);
	memset(s->b.dst, 0x44, SLOW_LEN);
	post_op(s->qp, 2, IBV_WR_RDMA_READ, s->b.dst, 4096, s->b.mr->lkey);
	b = s->resp;
	b.psn = read_request(s->fd, 4096);
	b.len = 4096;
	return b;
}

/* The 4 KiB READ's answer b, with the first 4 KiB of s's data: it completes
 * and lands whole. */
static void small_read_done(struct slow_read *s, const struct emu_msg *b)
{
	struct ibv_wc wc;

	send_all(s->fd, b, sizeof(*b));
	send_all(s->fd, s->b.data, 4096);
	wc = t_poll1(s->cq, "the READ behind the second answer");
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(s->b.dst, s->b.data, 4096);
}

/* A second answer to a READ that is done (as a peer sends for a READ
 * sent again after a timeout) holds the wanted answer behind it in the
 * in-order stream: 4 MiB of it over 1.28 s restart the next READ's timer as
 * they come (the default 67 ms and 7 retries), and that READ completes;
 * when only the answers taken counted, it ended in RETRY_EXC. */
static void case_slow_ghost_resp(void)
{
	struct slow_read s;
	struct emu_msg b;

	t_case("slow_ghost_resp: a READ behind 4 MiB of a done READ's second answer over 1.28 s");
	slow_read_open(&s, 10);
	b = first_read_then_small(&s);
	send_all(s.fd, &s.resp, sizeof(s.resp)); /* the first READ's answer again, slowly */
	send_pieces(s.fd, s.b.data, 0, SLOW_GAP);
	t_fill(s.b.data, 4096, 11);
	small_read_done(&s, &b);
	slow_read_close(&s);
}

/* A 4 MiB WRITE into b (seed 9) from a fresh session: its header and first
 * 256 KiB are sent, and the progress ACK they earn is received. */
static int slow_write_begin(struct slow_buf *b)
{
	uint8_t w[sizeof(struct emu_msg) + W_LEN];
	struct emu_msg m, ack;
	int fd;

	t_fill(b->data, SLOW_LEN, 9);
	fd = client_handshake(secret, NULL);
	write_msg(w);
	memcpy(&m, w, sizeof(m));
	m.len = SLOW_LEN;
	m.raddr = (uintptr_t)b->dst;
	m.rkey = b->mr->rkey;
	send_all(fd, &m, sizeof(m));
	send_all(fd, b->data, 2 * SLOW_PIECE);
	if (!recv_exact(fd, &ack, sizeof(ack), CLOSE_MS))
		T_FAIL("no ACK of the first 256 KiB of a 4 MiB WRITE while the rest is to come");
	CHECK_EQ(ack.type, EMU_MSG_ACK);
	CHECK_EQ(ack.flags, EMU_MSG_F_PROGRESS);
	CHECK_EQ(ack.psn, PSN0);
	CHECK_EQ(ack.dst_qpn, CLIENT_QPN);
	CHECK_EQ(ack.src_qpn, tgt->qp_num);
	return fd;
}

/* A 4 MiB WRITE that asks for an ACK, its data in 128 KiB pieces: the
 * responder acknowledges the pieces as they arrive (ACKs with
 * EMU_MSG_F_PROGRESS for its psn, nothing completed by them), the first
 * one before the rest is sent, then the WRITE itself once it landed. Its
 * data lands as it comes, as a ConnectX writes each packet's: nothing
 * beyond what came, and not the last byte, is written before the rest. */
static void case_progress_acks(void)
{
	struct emu_msg ack;
	struct slow_buf b;
	unsigned progress = 0;
	int fd;

	t_case("progress_acks: a 4 MiB WRITE in 128 KiB pieces");
	slow_buf_open(&b);
	fd = slow_write_begin(&b);
	CHECK_BYTES(b.dst + 2 * SLOW_PIECE, GUARD, SLOW_LEN - 2 * SLOW_PIECE);
	send_pieces(fd, b.data, 2 * SLOW_PIECE, 0);
	for (;;) {
		if (!recv_exact(fd, &ack, sizeof(ack), T_WAIT_MS))
			T_FAIL("no ACK for the 4 MiB WRITE");
		CHECK_EQ(ack.type, EMU_MSG_ACK);
		CHECK_EQ(ack.psn, PSN0);
		if (!(ack.flags & EMU_MSG_F_PROGRESS))
			break;
		progress++;
	}
	/* one per 128 KiB that came after the first: 30 at most */
	printf("progress_acks: %u more progress ACKs\n", progress);
	CHECK(progress <= SLOW_LEN / SLOW_PIECE - 2);
	CHECK_MEM(b.dst, b.data, SLOW_LEN);
	close(fd);
	slow_buf_close(&b);
	target_reset();
}

/* The MR a 4 MiB WRITE lands in is deregistered after its first 256 KiB
 * came: ibv_dereg_mr returns at once, nothing of the rest is written to the
 * memory (the application's again), and the WRITE is NAKed as one whose key
 * is gone, the target QP in ERR. */
static void case_land_dereg(void)
{
	struct emu_msg ack;
	struct slow_buf b;
	int fd;

	t_case("land_dereg: a landing 4 MiB WRITE's MR deregistered after 256 KiB");
	slow_buf_open(&b);
	fd = slow_write_begin(&b);
	CHECK_OK(ibv_dereg_mr(b.mr));
	memset(b.dst, 0x33, SLOW_LEN);
	send_pieces(fd, b.data, 2 * SLOW_PIECE, 0);
	do {
		if (!recv_exact(fd, &ack, sizeof(ack), T_WAIT_MS))
			T_FAIL("no NAK for a WRITE whose MR was deregistered");
		CHECK_EQ(ack.psn, PSN0);
	} while (ack.type == EMU_MSG_ACK && (ack.flags & EMU_MSG_F_PROGRESS));
	CHECK_EQ(ack.type, EMU_MSG_NAK);
	CHECK_EQ(ack.syndrome, GNIC_MLX5_SYND_REMOTE_ACCESS);
	CHECK_BYTES(b.dst, 0x33, SLOW_LEN);
	close(fd);
	free(b.dst);
	free(b.data);
	target_reset();
}

/* A 4 MiB READ answered twice (as for a READ sent again): the first answer
 * completes it and the application reuses the buffer; the second one's data
 * must not land there. A 4 KiB READ behind it shows it was taken. */
static void case_read_twice(void)
{
	struct slow_read s;
	struct emu_msg b;

	t_case("read_twice: a second answer to a completed 4 MiB READ lands nowhere");
	slow_read_open(&s, 12);
	b = first_read_then_small(&s);
	send_all(s.fd, &s.resp, sizeof(s.resp)); /* the first READ's answer again */
	t_fill(s.b.data, SLOW_LEN, 13);
	send_all(s.fd, s.b.data, SLOW_LEN);
	small_read_done(&s, &b);
	CHECK_BYTES(s.b.dst + 4096, 0x44, SLOW_LEN - 4096);
	slow_read_close(&s);
}

/* The listener's AF_UNIX twin, where the processes of this host connect:
 * the same handshake guards it (a WRITE before it, or after a hello with
 * another secret, is refused), and a good session writes. */
static void case_local(void)
{
	via_local = true;
	t_case("local: the AF_UNIX twin: WRITEs without a handshake");
	case_no_handshake();
	t_case("local: a handshake with another secret");
	case_wrong_secret();
	t_case("local: a good session");
	good_session(NULL);
	target_reset();
	via_local = false;
}

/* Bytes the squatter at lfd got within ms: -1 if nothing connected. */
static long squatter_bytes(int lfd, int ms)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	char buf[512];
	long got = 0;
	ssize_t n;
	int fd;

	if (poll(&p, 1, ms) <= 0)
		return -1;
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return -1;
	p.fd = fd;
	while (poll(&p, 1, ms) > 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		got += n;
	close(fd);
	return got;
}

/* A squatter of another user on the twin name of the fake peer's listener,
 * in a child process; it reports what it got on the pipe. */
static pid_t other_user_squatter(const struct sockaddr_in *fa, int *rfd)
{
	int pfd[2];
	pid_t pid;

	CHECK_OK(pipe(pfd));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		long got = -2;
		int lfd;

		close(pfd[0]);
		if (!setgid(65534) && !setuid(65534) && (lfd = twin_squat(fa)) >= 0) {
			got = -1;
			if (write(pfd[1], "r", 1) != 1)
				_exit(1);
			got = squatter_bytes(lfd, 3000);
		}
		if (write(pfd[1], &got, sizeof(got)) != sizeof(got))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	*rfd = pfd[0];
	return pid;
}

/* Any process may bind an abstract name: the emulator dials a twin only for
 * a listener of this host, and only one owned by its user or root. */
static void case_local_squat(void)
{
	struct sockaddr_in remote = {.sin_family = AF_INET, .sin_port = htons(4791)}, fa;
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct t_conn_opts o;
	union ibv_gid gid;
	struct ibv_qp *qp;
	int sq, lfd, rfd, status;
	long got;
	char c;
	pid_t pid;

	t_case("local_squat: the twin name of an address not of this host is not dialed");
	inet_pton(AF_INET, "192.0.2.1", &remote.sin_addr); /* TEST-NET-1 */
	sq = twin_squat(&remote);
	CHECK(sq >= 0);
	t_conn_opts_default(&o);
	qp = fake_peer_qp(cq, &remote, &o, &gid);
	post_op(qp, 1, IBV_WR_RDMA_WRITE, src, 64, smr->lkey);
	got = squatter_bytes(sq, 1000);
	if (got >= 0)
		T_FAIL("the emulator connected to the twin name of 192.0.2.1 (%ld bytes)", got);
	close(sq);
	CHECK_OK(ibv_destroy_qp(qp));

	t_case("local_squat: a twin held by another user is left for TCP, not one byte sent");
	if (geteuid() != 0) {
		printf("not root: the other-user case needs setuid, not run\n");
		CHECK_OK(ibv_destroy_cq(cq));
		return;
	}
	lfd = fake_listen(&fa);
	pid = other_user_squatter(&fa, &rfd);
	CHECK_EQ(read(rfd, &c, 1), 1);
	qp = fake_peer_qp(cq, &fa, &o, &gid);
	post_op(qp, 2, IBV_WR_RDMA_WRITE, src, 64, smr->lkey);
	close(fake_session(lfd, &gid)); /* reached over TCP */
	CHECK_EQ(read(rfd, &got, sizeof(got)), sizeof(got));
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (got > 0)
		T_FAIL("the squatter of another user got %ld bytes", got);
	close(rfd);
	close(lfd);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_cq(cq));
}

static const struct t_named_case cases[] = {
    {"control", case_control},
    {"future_ack", case_future_ack},
    {"no_handshake", case_no_handshake},
    {"v1_hello", case_v1_hello},
    {"no_proof", case_no_proof},
    {"wrong_secret", case_wrong_secret},
    {"replay", case_replay},
    {"timeout", case_timeout},
    {"server_wrong", case_server_wrong},
    {"server_replay", case_server_replay},
    {"server_ok", case_server_ok},
    {"server_slow", case_server_slow},
    {"server_other_gid", case_server_other_gid},
    {"reflect", case_reflect},
    {"hello_self", case_hello_self},
    {"other_peer", case_other_peer},
    {"mac_first_byte", case_mac_first_byte},
    {"mac_last_byte", case_mac_last_byte},
    {"big_write_refused", case_big_write_refused},
    {"big_write_ok", case_big_write_ok},
    {"big_read", case_big_read},
    {"slow_read_resp", case_slow_read_resp},
    {"slow_ghost_resp", case_slow_ghost_resp},
    {"progress_acks", case_progress_acks},
    {"land_dereg", case_land_dereg},
    {"read_twice", case_read_twice},
    {"local", case_local},
    {"local_squat", case_local_squat},
    {"rnr_count", case_rnr_count},
    {"wrong_answer", case_wrong_answer},
    {"big_write_dereg", case_big_write_dereg},
};

int main(int argc, char **argv)
{
	secret = getenv("GNIC_EMU_SECRET");
	if (!secret || strlen(secret) < 16)
		t_skip("set GNIC_EMU_SECRET (>= 16 bytes): the test plays both sides with it");
	setup();
	T_RUN_CASES(cases, argc, argv);
	printf("PASS\n");
	return T_EXIT_PASS;
}
