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

#include <openssl/evp.h>
#include <openssl/hmac.h>

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
	fz_local(acc_nonce, &acc_gid);
	emu_hs_start(&con, EMU_HS_CONNECTOR, fz_secret, sizeof(fz_secret) - 1, &gid, &acc_gid,
	             nonce, hello, &n);
	memset(acc_nonce, acc_fill, sizeof(acc_nonce));
	emu_hs_start(&acc, EMU_HS_ACCEPTOR, fz_secret, sizeof(fz_secret) - 1, &acc_gid, NULL,
	             acc_nonce, ch, &m);
	must(!emu_hs_step(&acc, hello, ch, &m), "acceptor refused the hello");
	must(!emu_hs_step(&con, ch, proof, &m) && con.state == EMU_HS_DONE,
	     "connector refused the challenge");
	if (corrupt)
		proof[5] ^= 0x40;
	put(s, hello, n);
	put(s, proof, m);
}

/* The MAC an honest side would send for this transcript (the layout of
 * fabric_wire.h, computed here independently). The handshake code refuses
 * to make MACs for reflected transcripts, and the seeds below need valid
 * ones: only the identity checks may stop them. */
static void transcript_mac(bool connector, const uint8_t nonce_con[EMU_AUTH_NONCE_LEN],
                           const uint8_t nonce_acc[EMU_AUTH_NONCE_LEN],
                           const union ibv_gid *gid_con, const union ibv_gid *gid_acc,
                           uint8_t mac[EMU_AUTH_MAC_LEN])
{
	struct {
		char label[16];
		uint32_t version, zero;
		uint8_t nonce[2][EMU_AUTH_NONCE_LEN];
		union ibv_gid gid[2];
	} t;
	unsigned int len = 0;

	memset(&t, 0, sizeof(t));
	memcpy(t.label, connector ? "gnic-emu v2 con" : "gnic-emu v2 acc", sizeof(t.label));
	t.version = EMU_FABRIC_VERSION;
	memcpy(t.nonce[0], nonce_con, EMU_AUTH_NONCE_LEN);
	memcpy(t.nonce[1], nonce_acc, EMU_AUTH_NONCE_LEN);
	t.gid[0] = *gid_con;
	t.gid[1] = *gid_acc;
	must(HMAC(EVP_sha256(), fz_secret, (int)sizeof(fz_secret) - 1, (const unsigned char *)&t,
	          sizeof(t), mac, &len) &&
	         len == EMU_AUTH_MAC_LEN,
	     "HMAC");
}

static void hello_make(struct emu_hello *h, const union ibv_gid *gid, uint8_t nonce_fill)
{
	memset(h, 0, sizeof(*h));
	h->magic = EMU_FABRIC_MAGIC;
	h->version = EMU_FABRIC_VERSION;
	h->src_gid = *gid;
	memset(h->nonce, nonce_fill, sizeof(h->nonce));
}

/* We are the acceptor: a hello that is not a peer's but a copy of ours
 * (our GID, our nonce, or another local device's GID), as a reflection
 * relays it, then the proof that would be valid for it, and a WRITE. */
static void reflected_hello(struct stream *s, const union ibv_gid *gid, uint8_t nonce_fill)
{
	uint8_t nonce[EMU_AUTH_NONCE_LEN];
	struct emu_proof pr;
	union ibv_gid own;
	struct emu_hello h;

	fz_local(nonce, &own);
	hello_make(&h, gid, nonce_fill);
	transcript_mac(true, h.nonce, nonce, gid, &own, pr.mac);
	put(s, &h, sizeof(h));
	put(s, &pr, sizeof(pr));
	msg(s, EMU_MSG_WRITE, 64, 64);
}

/* We are the connector: our own hello came back to our own listener, whose
 * valid challenge (GID = ours, nonce 0x33) the reflector hands to us. */
static void reflected_challenge(struct stream *s)
{
	uint8_t nonce[EMU_AUTH_NONCE_LEN];
	struct emu_challenge ch;
	union ibv_gid own;

	fz_local(nonce, &own);
	hello_make(&ch.hello, &own, 0x33);
	transcript_mac(false, nonce, ch.hello.nonce, &own, &own, ch.mac);
	put(s, &ch, sizeof(ch));
}

/* transcript_mac() computes what fabric_wire.c does, for a transcript the
 * handshake code does accept. */
static void check_transcript_mac(void)
{
	uint8_t hello[EMU_HS_OUT_MAX], ch[EMU_HS_OUT_MAX], nonce[EMU_AUTH_NONCE_LEN],
	    mac[EMU_AUTH_MAC_LEN];
	struct emu_challenge c;
	struct emu_hello h;
	struct emu_hs con, acc;
	union ibv_gid gid;
	size_t n, m;

	fz_start(&con, EMU_HS_CONNECTOR, hello, &n);
	fz_dialed(&gid);
	memset(nonce, 0x22, sizeof(nonce));
	emu_hs_start(&acc, EMU_HS_ACCEPTOR, fz_secret, sizeof(fz_secret) - 1, &gid, NULL, nonce, ch,
	             &m);
	must(!emu_hs_step(&acc, hello, ch, &m), "acceptor refused our hello");
	memcpy(&h, hello, sizeof(h));
	memcpy(&c, ch, sizeof(c));
	transcript_mac(false, h.nonce, nonce, &h.src_gid, &gid, mac);
	must(!memcmp(mac, c.mac, sizeof(mac)), "transcript_mac() disagrees with fabric_wire.c");
}

/* We are the connector: the challenge to our hello from an acceptor with
 * GID acc_gid and nonce bytes fill. */
static void acceptor_opening_as(struct stream *s, const union ibv_gid *acc_gid, uint8_t fill,
                                bool corrupt)
{
	uint8_t hello[EMU_HS_OUT_MAX], ch[EMU_HS_OUT_MAX], nonce[EMU_AUTH_NONCE_LEN];
	struct emu_hs con, acc;
	size_t n, m;

	fz_start(&con, EMU_HS_CONNECTOR, hello, &n);
	memset(nonce, fill, sizeof(nonce));
	emu_hs_start(&acc, EMU_HS_ACCEPTOR, fz_secret, sizeof(fz_secret) - 1, acc_gid, NULL, nonce,
	             ch, &m);
	must(!emu_hs_step(&acc, hello, ch, &m), "acceptor refused our hello");
	if (corrupt)
		ch[sizeof(struct emu_hello) + 3] ^= 0x01;
	put(s, ch, m);
}

static void acceptor_opening(struct stream *s, bool corrupt)
{
	union ibv_gid dialed;

	fz_dialed(&dialed);
	acceptor_opening_as(s, &dialed, 0x22, corrupt);
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
	check_transcript_mac();

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

	{ /* reflections and wrong identities: each must fail the handshake */
		uint8_t nonce[EMU_AUTH_NONCE_LEN];
		union ibv_gid own, other, stranger;

		fz_local(nonce, &own);
		fz_other_device(&other);
		peer_id(0x11, nonce, &stranger);

		memset(&s, 0, sizeof(s));
		reflected_hello(&s, &own, 0x11); /* our GID, another nonce */
		write_seed(dir, "acc-hello-own-gid", 0x16, &s);

		memset(&s, 0, sizeof(s));
		reflected_hello(&s, &stranger, 0xa5); /* another GID, our nonce */
		write_seed(dir, "acc-hello-own-nonce", 0x18, &s);

		memset(&s, 0, sizeof(s));
		reflected_hello(&s, &other, 0x11); /* a device of our own process */
		write_seed(dir, "acc-hello-other-device", 0x1a, &s);

		memset(&s, 0, sizeof(s));
		acceptor_opening_as(&s, &stranger, 0x33, false); /* valid MAC, not dialed */
		msg(&s, EMU_MSG_ACK, 0, 0);
		write_seed(dir, "con-not-dialed", 0x07, &s);

		memset(&s, 0, sizeof(s));
		reflected_challenge(&s); /* our own acceptor's answer to our hello */
		msg(&s, EMU_MSG_ACK, 0, 0);
		write_seed(dir, "con-reflected", 0x09, &s);
	}
	return 0;
}
