/* SPDX-License-Identifier: MIT */
/*
 * The fabric's authentication handshake, as pure functions of its input
 * bytes (the per-message parsers are inline in fabric_wire.h). Nothing here touches a socket,
 * a clock or the engine; the caller supplies the secret and the nonce.
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fabric_wire.h"

/* ---- handshake ----------------------------------------------------------- */

/* What each MAC covers. The label names the direction, so the acceptor's
 * MAC can never be presented as the connector's proof (reflection). */
struct transcript {
	char label[16];
	uint32_t version;
	uint32_t zero;
	uint8_t nonce[2][EMU_AUTH_NONCE_LEN]; /* connector's, acceptor's */
	union ibv_gid gid[2];                 /* connector's, acceptor's */
};
_Static_assert(sizeof(struct transcript) == 120, "no padding in the MAC input");

static const char label_con[16] = "gnic-emu v2 con";
static const char label_acc[16] = "gnic-emu v2 acc";

/* MAC of the transcript as the given side states it. */
static bool hs_mac(const struct emu_hs *hs, enum emu_hs_role side, uint8_t mac[EMU_AUTH_MAC_LEN])
{
	struct transcript t;
	unsigned int len = 0;

	memset(&t, 0, sizeof(t));
	memcpy(t.label, side == EMU_HS_CONNECTOR ? label_con : label_acc, sizeof(t.label));
	t.version = EMU_FABRIC_VERSION;
	memcpy(t.nonce, hs->nonce, sizeof(t.nonce));
	memcpy(t.gid, hs->gid, sizeof(t.gid));
	if (!HMAC(EVP_sha256(), hs->key, (int)hs->key_len, (const unsigned char *)&t, sizeof(t),
	          mac, &len))
		return false;
	return len == EMU_AUTH_MAC_LEN;
}

/* Does mac match what side must have sent? Constant time. */
static enum emu_hs_result hs_verify(const struct emu_hs *hs, enum emu_hs_role side,
                                    const uint8_t *mac)
{
	uint8_t want[EMU_AUTH_MAC_LEN];

	if (!hs_mac(hs, side, want))
		return EMU_HS_ERR_CRYPTO;
	return CRYPTO_memcmp(want, mac, sizeof(want)) ? EMU_HS_ERR_SECRET : EMU_HS_OK;
}

static void hello_fill(const struct emu_hs *hs, struct emu_hello *h)
{
	int me = hs->role == EMU_HS_CONNECTOR ? 0 : 1;

	memset(h, 0, sizeof(*h));
	h->magic = EMU_FABRIC_MAGIC;
	h->version = EMU_FABRIC_VERSION;
	h->src_gid = hs->gid[me];
	memcpy(h->nonce, hs->nonce[me], sizeof(h->nonce));
}

static bool gid_eq(const union ibv_gid *a, const union ibv_gid *b)
{
	return !memcmp(a->raw, b->raw, sizeof(a->raw));
}

/* Is the hello one of ours coming back: our GID, our nonce, or the GID of
 * another device of this process? */
static bool hello_is_self(const struct emu_hs *hs, const struct emu_hello *h)
{
	int me = hs->role == EMU_HS_CONNECTOR ? 0 : 1;

	if (gid_eq(&h->src_gid, &hs->gid[me]) ||
	    !memcmp(h->nonce, hs->nonce[me], EMU_AUTH_NONCE_LEN))
		return true;
	for (unsigned int i = 0; i < hs->nrefused; i++)
		if (gid_eq(&h->src_gid, &hs->refused[i]))
			return true;
	return false;
}

/* Take the peer's hello: its GID and nonce go into the transcript, once they
 * are the identity we expect (the MAC alone cannot tell: a reflected
 * transcript carries a valid MAC). */
static enum emu_hs_result hello_take(struct emu_hs *hs, const struct emu_hello *h)
{
	int peer = hs->role == EMU_HS_CONNECTOR ? 1 : 0;

	hs->peer_magic = h->magic;
	hs->peer_version = h->version;
	hs->peer_claim = h->src_gid;
	if (h->magic != EMU_FABRIC_MAGIC)
		return EMU_HS_ERR_MAGIC;
	if (h->version != EMU_FABRIC_VERSION)
		return EMU_HS_ERR_VERSION;
	if (hello_is_self(hs, h))
		return EMU_HS_ERR_SELF;
	if (hs->role == EMU_HS_CONNECTOR && !gid_eq(&h->src_gid, &hs->dialed))
		return EMU_HS_ERR_NOT_DIALED;
	hs->gid[peer] = h->src_gid;
	memcpy(hs->nonce[peer], h->nonce, sizeof(h->nonce));
	return EMU_HS_OK;
}

void emu_hs_start(struct emu_hs *hs, enum emu_hs_role role, const void *key, size_t key_len,
                  const union ibv_gid *local_gid, const union ibv_gid *peer_gid,
                  const uint8_t nonce[EMU_AUTH_NONCE_LEN], uint8_t out[EMU_HS_OUT_MAX],
                  size_t *out_len)
{
	int me = role == EMU_HS_CONNECTOR ? 0 : 1;
	struct emu_hello h;

	memset(hs, 0, sizeof(*hs));
	hs->role = role;
	hs->key = key;
	hs->key_len = key_len;
	hs->gid[me] = *local_gid;
	memcpy(hs->nonce[me], nonce, EMU_AUTH_NONCE_LEN);
	*out_len = 0;
	if (role == EMU_HS_ACCEPTOR) {
		hs->state = EMU_HS_WAIT_HELLO;
		return;
	}
	if (!peer_gid) { /* a connector that cannot tell its peer accepts nobody */
		hs->state = EMU_HS_FAILED;
		return;
	}
	hs->dialed = *peer_gid;
	hs->state = EMU_HS_WAIT_CHALLENGE;
	hello_fill(hs, &h);
	memcpy(out, &h, sizeof(h));
	*out_len = sizeof(h);
}

bool emu_hs_refuse_gid(struct emu_hs *hs, const union ibv_gid *gid)
{
	if (hs->nrefused >= EMU_HS_REFUSED_MAX)
		return false;
	hs->refused[hs->nrefused++] = *gid;
	return true;
}

size_t emu_hs_need(const struct emu_hs *hs)
{
	switch (hs->state) {
	case EMU_HS_WAIT_HELLO:
		return sizeof(struct emu_hello);
	case EMU_HS_WAIT_CHALLENGE:
		return sizeof(struct emu_challenge);
	case EMU_HS_WAIT_PROOF:
		return sizeof(struct emu_proof);
	default:
		return 0;
	}
}

/* Acceptor: the connector's hello. Answer with our hello and MAC_acc. */
static enum emu_hs_result step_hello(struct emu_hs *hs, const void *frame, uint8_t *out,
                                     size_t *out_len)
{
	struct emu_challenge ch;
	struct emu_hello h;
	enum emu_hs_result r;

	memcpy(&h, frame, sizeof(h));
	r = hello_take(hs, &h);
	if (r)
		return r;
	hello_fill(hs, &ch.hello);
	if (!hs_mac(hs, EMU_HS_ACCEPTOR, ch.mac))
		return EMU_HS_ERR_CRYPTO;
	memcpy(out, &ch, sizeof(ch));
	*out_len = sizeof(ch);
	hs->state = EMU_HS_WAIT_PROOF;
	return EMU_HS_OK;
}

/* Connector: the acceptor's hello and MAC_acc. Check it, answer MAC_con. */
static enum emu_hs_result step_challenge(struct emu_hs *hs, const void *frame, uint8_t *out,
                                         size_t *out_len)
{
	struct emu_challenge ch;
	struct emu_proof pr;
	enum emu_hs_result r;

	memcpy(&ch, frame, sizeof(ch));
	r = hello_take(hs, &ch.hello);
	if (!r)
		r = hs_verify(hs, EMU_HS_ACCEPTOR, ch.mac);
	if (r)
		return r;
	if (!hs_mac(hs, EMU_HS_CONNECTOR, pr.mac))
		return EMU_HS_ERR_CRYPTO;
	memcpy(out, &pr, sizeof(pr));
	*out_len = sizeof(pr);
	hs->state = EMU_HS_DONE;
	return EMU_HS_OK;
}

/* Acceptor: MAC_con. */
static enum emu_hs_result step_proof(struct emu_hs *hs, const void *frame)
{
	struct emu_proof pr;
	enum emu_hs_result r;

	memcpy(&pr, frame, sizeof(pr));
	r = hs_verify(hs, EMU_HS_CONNECTOR, pr.mac);
	if (!r)
		hs->state = EMU_HS_DONE;
	return r;
}

enum emu_hs_result emu_hs_step(struct emu_hs *hs, const void *frame, uint8_t out[EMU_HS_OUT_MAX],
                               size_t *out_len)
{
	enum emu_hs_result r;

	*out_len = 0;
	switch (hs->state) {
	case EMU_HS_WAIT_HELLO:
		r = step_hello(hs, frame, out, out_len);
		break;
	case EMU_HS_WAIT_CHALLENGE:
		r = step_challenge(hs, frame, out, out_len);
		break;
	case EMU_HS_WAIT_PROOF:
		r = step_proof(hs, frame);
		break;
	default:
		return EMU_HS_ERR_STATE;
	}
	if (r) {
		hs->state = EMU_HS_FAILED;
		*out_len = 0;
	}
	return r;
}

/* ---- a connection's input ------------------------------------------------ */

void emu_wire_input_handshake(struct emu_hs *hs, const void *p, size_t avail,
                              struct emu_wire_step *st)
{
	size_t need = emu_hs_need(hs);

	st->size = 0;
	st->out_len = 0;
	st->result = EMU_HS_OK;
	if (!need) { /* FAILED: nothing more is accepted */
		st->ev = EMU_WIRE_EV_HS_FAIL;
		st->result = EMU_HS_ERR_STATE;
		return;
	}
	if (avail < need) {
		st->ev = EMU_WIRE_EV_NEED;
		st->size = need;
		return;
	}
	st->result = emu_hs_step(hs, p, st->out, &st->out_len);
	st->ev = st->result ? EMU_WIRE_EV_HS_FAIL : EMU_WIRE_EV_HS;
	st->size = need;
}

const char *emu_hs_result_str(enum emu_hs_result r)
{
	switch (r) {
	case EMU_HS_OK:
		return "ok";
	case EMU_HS_ERR_MAGIC:
		return "not a gnic-emu fabric peer";
	case EMU_HS_ERR_VERSION:
		return "fabric version mismatch";
	case EMU_HS_ERR_SECRET:
		return "wrong secret";
	case EMU_HS_ERR_CRYPTO:
		return "HMAC-SHA256 failed";
	case EMU_HS_ERR_STATE:
		return "handshake already over";
	case EMU_HS_ERR_NOT_DIALED:
		return "the peer is not the one dialed";
	case EMU_HS_ERR_SELF:
		return "the peer's hello is this process's own (a reflected handshake)";
	}
	return "?";
}
