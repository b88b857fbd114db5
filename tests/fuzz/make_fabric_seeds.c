// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of the "fabric" fuzz target (fuzz_fabric.c):
 * streams a peer could send on one fabric connection, with handshakes made
 * by emu/fabric_wire.c itself against the target's fixed local end
 * (fuzz_fabric.h), so the valid ones really pass and their messages reach
 * the parser. Deterministic: the same files every run.
 *
 *   make_fabric_seeds DIR      (DIR = tests/fuzz/corpus/fabric)
 *
 * tests/security builds it and checks that the committed corpus is what it
 * writes (test security_fabric_corpus).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fabric.h"

struct stream {
	uint8_t buf[1 << 16];
	size_t len;
};

static void put(struct stream *s, const void *p, size_t n)
{
	if (s->len + n > sizeof(s->buf)) {
		fprintf(stderr, "make_fabric_seeds: stream too long\n");
		exit(1);
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static void msg(struct stream *s, uint8_t type, uint32_t len, uint32_t plen)
{
	struct emu_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.len = len;
	m.flags = EMU_MSG_F_ACKREQ;
	m.dst_qpn = 0x101;
	m.src_qpn = 0x102;
	m.psn = (uint32_t)s->len;
	m.raddr = 0x7f0000001000ull;
	m.rkey = 0x2a7;
	if (type == EMU_MSG_READ)
		m.operand[0] = 4096;
	if (type == EMU_MSG_ATOMIC_CS || type == EMU_MSG_ATOMIC_FA || type == EMU_MSG_ATOMIC_RESP) {
		m.operand[0] = 7;
		m.operand[1] = 3;
	}
	if (type == EMU_MSG_NAK)
		m.syndrome = 0x13; /* GNIC_MLX5_SYND_REMOTE_ACCESS */
	if (type == EMU_MSG_RNR_NAK)
		m.rnr_timer = 1;
	put(s, &m, sizeof(m));
	for (uint32_t i = 0; i < plen; i++) {
		uint8_t b = (uint8_t)(i * 7 + type);

		put(s, &b, 1);
	}
}

static void peer_id(uint8_t fill, uint8_t nonce[EMU_AUTH_NONCE_LEN], union ibv_gid *gid)
{
	memset(nonce, fill, EMU_AUTH_NONCE_LEN);
	memset(gid, 0, sizeof(*gid));
	gid->raw[9] = fill;
	gid->raw[10] = gid->raw[11] = 0xff;
	gid->raw[12] = 127;
	gid->raw[15] = 2;
}

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "make_fabric_seeds: %s\n", what);
		exit(1);
	}
}

/* We are the acceptor: the connector's hello and its proof. The acceptor
 * that answered the hello used acc_fill for its nonce: 0xa5 is the target's
 * own (a valid proof), anything else a recorded session (a replay). */
static void connector_opening(struct stream *s, uint8_t acc_fill, bool corrupt)
{
	uint8_t nonce[EMU_AUTH_NONCE_LEN], hello[EMU_HS_OUT_MAX], ch[EMU_HS_OUT_MAX],
	    proof[EMU_HS_OUT_MAX], acc_nonce[EMU_AUTH_NONCE_LEN];
	struct emu_hs con, acc;
	union ibv_gid gid, acc_gid;
	size_t n, m;

	peer_id(0x11, nonce, &gid);
	emu_hs_start(&con, EMU_HS_CONNECTOR, fz_secret, sizeof(fz_secret) - 1, &gid, nonce, hello,
	             &n);
	fz_local(acc_nonce, &acc_gid);
	memset(acc_nonce, acc_fill, sizeof(acc_nonce));
	emu_hs_start(&acc, EMU_HS_ACCEPTOR, fz_secret, sizeof(fz_secret) - 1, &acc_gid, acc_nonce,
	             ch, &m);
	must(!emu_hs_step(&acc, hello, ch, &m), "acceptor refused the hello");
	must(!emu_hs_step(&con, ch, proof, &m) && con.state == EMU_HS_DONE,
	     "connector refused the challenge");
	if (corrupt)
		proof[5] ^= 0x40;
	put(s, hello, n);
	put(s, proof, m);
}

/* We are the connector: the acceptor's challenge to our hello. */
static void acceptor_opening(struct stream *s, bool corrupt)
{
	uint8_t hello[EMU_HS_OUT_MAX], ch[EMU_HS_OUT_MAX], nonce[EMU_AUTH_NONCE_LEN];
	struct emu_hs con, acc;
	union ibv_gid gid;
	size_t n, m;

	fz_start(&con, EMU_HS_CONNECTOR, hello, &n);
	peer_id(0x22, nonce, &gid);
	emu_hs_start(&acc, EMU_HS_ACCEPTOR, fz_secret, sizeof(fz_secret) - 1, &gid, nonce, ch, &m);
	must(!emu_hs_step(&acc, hello, ch, &m), "acceptor refused our hello");
	if (corrupt)
		ch[sizeof(struct emu_hello) + 3] ^= 0x01;
	put(s, ch, m);
}

static void write_seed(const char *dir, const char *name, uint8_t mode, const struct stream *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(&mode, 1, 1, f) != 1 || fwrite(s->buf, 1, s->len, f) != s->len ||
	    fclose(f)) {
		fprintf(stderr, "make_fabric_seeds: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	printf("%s: mode 0x%02x, %zu bytes\n", path, mode, s->len + 1);
}

static const uint8_t every_type[] = {
    EMU_MSG_WRITE, EMU_MSG_WRITE_IMM, EMU_MSG_SEND,      EMU_MSG_SEND_IMM,
    EMU_MSG_READ,  EMU_MSG_ATOMIC_CS, EMU_MSG_ATOMIC_FA, EMU_MSG_ACK,
    EMU_MSG_NAK,   EMU_MSG_RNR_NAK,   EMU_MSG_READ_RESP, EMU_MSG_ATOMIC_RESP,
};

int main(int argc, char **argv)
{
	static struct stream s;
	const char *dir;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, false);
	s.len -= sizeof(struct emu_proof); /* hello only: waits for the proof */
	write_seed(dir, "acc-hello-only", 0x00, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, false);
	msg(&s, EMU_MSG_WRITE, 100, 100);
	write_seed(dir, "acc-write", 0x02, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, false);
	for (size_t i = 0; i < sizeof(every_type); i++) {
		uint32_t len = (uint32_t)(i * 37 % 300);
		struct emu_msg probe = {.type = every_type[i], .len = len};

		msg(&s, every_type[i], len, emu_wire_payload_len(&probe));
	}
	write_seed(dir, "acc-every-type", 0x04, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, true);
	msg(&s, EMU_MSG_WRITE, 64, 64);
	write_seed(dir, "acc-wrong-proof", 0x06, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0x33, false); /* proof for another session's nonce */
	msg(&s, EMU_MSG_WRITE, 64, 64);
	write_seed(dir, "acc-replayed-proof", 0x08, &s);

	memset(&s, 0, sizeof(s));
	{ /* a version 1 client: 24-byte hello, then requests */
		struct {
			uint32_t magic, version;
			union ibv_gid gid;
		} v1 = {EMU_FABRIC_MAGIC, 1, {.raw = {0}}};

		put(&s, &v1, sizeof(v1));
		msg(&s, EMU_MSG_WRITE, 64, 64);
	}
	write_seed(dir, "acc-v1-hello", 0x0a, &s);

	memset(&s, 0, sizeof(s));
	msg(&s, EMU_MSG_WRITE, 64, 64); /* requests with no handshake at all */
	msg(&s, EMU_MSG_WRITE, 8, 8);
	write_seed(dir, "acc-no-handshake", 0x0c, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, false);
	msg(&s, EMU_MSG_ACK, 0, 0);
	msg(&s, 99, 0, 0); /* unknown type: closes */
	write_seed(dir, "acc-bad-type", 0x0e, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, false);
	msg(&s, EMU_MSG_WRITE, 4096, 10); /* payload cut short */
	write_seed(dir, "acc-partial-payload", 0x10, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, false);
	msg(&s, EMU_MSG_SEND, EMU_WIRE_MAX_MSG, 16); /* the largest length: waits */
	write_seed(dir, "acc-max-len", 0x12, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, false);
	msg(&s, EMU_MSG_WRITE, EMU_WIRE_MAX_MSG + 1, 0); /* one too many: closes */
	write_seed(dir, "acc-over-max-len", 0x14, &s);

	memset(&s, 0, sizeof(s));
	connector_opening(&s, 0xa5, false);
	for (int i = 0; i < 200; i++)
		msg(&s, EMU_MSG_WRITE, 8, 8);
	write_seed(dir, "acc-many-small", 0xfe, &s);

	memset(&s, 0, sizeof(s));
	acceptor_opening(&s, false);
	msg(&s, EMU_MSG_ACK, 0, 0);
	msg(&s, EMU_MSG_READ_RESP, 256, 256);
	msg(&s, EMU_MSG_ATOMIC_RESP, 0, 0);
	msg(&s, EMU_MSG_RNR_NAK, 0, 0);
	msg(&s, EMU_MSG_NAK, 0, 0);
	write_seed(dir, "con-responses", 0x01, &s);

	memset(&s, 0, sizeof(s));
	acceptor_opening(&s, false);
	msg(&s, EMU_MSG_WRITE_IMM, 33, 33);
	msg(&s, EMU_MSG_READ, 0, 0);
	write_seed(dir, "con-requests", 0x03, &s);

	memset(&s, 0, sizeof(s));
	acceptor_opening(&s, true);
	msg(&s, EMU_MSG_ACK, 0, 0);
	write_seed(dir, "con-wrong-mac", 0x05, &s);
	return 0;
}
