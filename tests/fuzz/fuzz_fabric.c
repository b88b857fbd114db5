// SPDX-License-Identifier: MIT
/*
 * Fuzz target "fabric": gnic-emu's fabric input, emu_wire_input() and the
 * handshake behind it (emu/fabric_wire.c), exactly as emu/fabric_conn.c
 * drives them on a connection's receive buffer.
 *
 * Input: a mode byte and the byte stream a peer sends (fuzz_fabric.h). The
 * local end has a fixed secret, nonce and GID, so a seed can hold a valid
 * handshake. The stream is parsed twice: arriving all at once, and cut into
 * recv()-like chunks of 1..97 bytes; every frame is handed to the parser in
 * a heap copy of exactly the bytes received so far, so ASan sees any read
 * past them. Properties, each checked on every input; a broken one prints
 * what it saw and aborts:
 *
 *  1. No read outside the bytes received (ASan), and every size the parser
 *     reports is consistent: NEED asks for more than is there, a frame taken
 *     is no larger than what is there, a message is header + its payload
 *     length (<= EMU_WIRE_MAX_MSG) and has a valid header, BAD has not.
 *  2. No message before the handshake is DONE; nothing at all after a
 *     failure (the connection closes).
 *  3. The handshake replies have their fixed sizes; a handshake that
 *     completes does so only with the very bytes an honest peer holding the
 *     secret sends for these nonces (re-derived with the other role), and
 *     only with the peer it may have: the connector with the GID it dialed,
 *     the acceptor with someone other than itself (its GID, its nonce,
 *     another device of its process).
 *  4. Both arrivals give the same sequence of events and messages: the
 *     parse does not depend on how TCP cuts the stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fabric.h"

#define MAX_EVENTS 4096

struct event {
	enum emu_wire_event ev;
	size_t size;
	enum emu_hs_result result;
	struct emu_msg msg;
	uint32_t sum; /* of the payload: touches every byte of it */
};

struct run {
	struct emu_hs hs;
	struct event ev[MAX_EVENTS];
	int n;
	size_t taken; /* stream bytes consumed */
	bool closed;
	uint8_t hello[sizeof(struct emu_hello)]; /* acceptor: the hello it took */
};

static void fail(const char *why, const struct run *r, const uint8_t *data, size_t size)
{
	fprintf(stderr, "fuzz_fabric: %s (event %d, %zu bytes taken, hs state %d)\n", why, r->n,
	        r->taken, (int)r->hs.state);
	fprintf(stderr, "input (%zu bytes):", size);
	for (size_t i = 0; i < size && i < 512; i++)
		fprintf(stderr, "%s%02x", i % 32 ? "" : "\n  ", data[i]);
	fprintf(stderr, "\n");
	abort();
}

/* Property 3 for the acceptor: the hello and proof it accepted are what a
 * connector with the hello's nonce and GID sends, given the challenge that
 * our (fixed) acceptor end answers that hello with. */
static bool honest_connector(const uint8_t *hello, const uint8_t *proof)
{
	uint8_t out[EMU_HS_OUT_MAX], challenge[EMU_HS_OUT_MAX];
	struct emu_hs con, acc;
	struct emu_hello h;
	size_t n, m;

	uint8_t acc_nonce[EMU_AUTH_NONCE_LEN];
	union ibv_gid acc_gid;

	memcpy(&h, hello, sizeof(h));
	fz_local(acc_nonce, &acc_gid);
	emu_hs_start(&con, EMU_HS_CONNECTOR, fz_secret, sizeof(fz_secret) - 1, &h.src_gid, &acc_gid,
	             h.nonce, out, &n);
	if (n != sizeof(h) || memcmp(out, hello, n))
		return false;
	fz_start(&acc, EMU_HS_ACCEPTOR, challenge, &m);
	if (emu_hs_step(&acc, hello, challenge, &m) || m != sizeof(struct emu_challenge))
		return false;
	if (emu_hs_step(&con, challenge, out, &n) || con.state != EMU_HS_DONE ||
	    n != sizeof(struct emu_proof))
		return false;
	return memcmp(out, proof, n) == 0;
}

/* Property 3 for the connector: the challenge it accepted is what an
 * acceptor with the challenge's nonce and GID sends for our hello. */
static bool honest_acceptor(const uint8_t *challenge)
{
	uint8_t hello[EMU_HS_OUT_MAX], out[EMU_HS_OUT_MAX];
	struct emu_hs con, acc;
	struct emu_challenge ch;
	size_t n;

	memcpy(&ch, challenge, sizeof(ch));
	fz_start(&con, EMU_HS_CONNECTOR, hello, &n);
	emu_hs_start(&acc, EMU_HS_ACCEPTOR, fz_secret, sizeof(fz_secret) - 1, &ch.hello.src_gid,
	             NULL, ch.hello.nonce, out, &n);
	if (emu_hs_step(&acc, hello, out, &n) || n != sizeof(ch))
		return false;
	return memcmp(out, challenge, n) == 0;
}

/* Property 3 on identities: a connector is done only with the GID it
 * dialed, an acceptor only with a peer that is neither itself (GID, nonce)
 * nor another device of its process. */
static bool peer_identity_ok(const struct emu_hs *hs)
{
	uint8_t nonce[EMU_AUTH_NONCE_LEN];
	union ibv_gid own, other, dialed;
	const union ibv_gid *peer = emu_hs_peer_gid(hs);

	fz_local(nonce, &own);
	if (hs->role == EMU_HS_CONNECTOR) {
		fz_dialed(&dialed);
		return !memcmp(peer, &dialed, sizeof(dialed));
	}
	fz_other_device(&other);
	return memcmp(peer, &own, sizeof(own)) && memcmp(peer, &other, sizeof(other)) &&
	       memcmp(hs->nonce[0], nonce, sizeof(nonce));
}

/* Properties 1-3 for one event; the frame is at p (avail bytes). */
static void check_event(struct run *r, const struct emu_wire_step *st, enum emu_hs_state before,
                        size_t hs_need, const uint8_t *p, size_t avail, const uint8_t *data,
                        size_t size)
{
	switch (st->ev) {
	case EMU_WIRE_EV_NEED:
		if (st->size <= avail)
			fail("NEED for no more than what is there", r, data, size);
		if (before != EMU_HS_DONE && st->size != hs_need)
			fail("NEED during the handshake is not the frame size", r, data, size);
		if (before == EMU_HS_DONE &&
		    (st->size < sizeof(struct emu_msg) ||
		     st->size > sizeof(struct emu_msg) + (size_t)EMU_WIRE_MAX_MSG))
			fail("NEED for a message of impossible size", r, data, size);
		break;
	case EMU_WIRE_EV_HS: {
		static const size_t reply[2][3] = {
		    /* WAIT_HELLO, WAIT_CHALLENGE, WAIT_PROOF */
		    {0, sizeof(struct emu_proof), 0},     /* connector */
		    {sizeof(struct emu_challenge), 0, 0}, /* acceptor */
		};

		if (before == EMU_HS_DONE || before == EMU_HS_FAILED)
			fail("a handshake frame outside the handshake", r, data, size);
		if (st->size != hs_need || st->size > avail)
			fail("handshake frame of the wrong size", r, data, size);
		if (st->out_len != reply[r->hs.role][before])
			fail("handshake reply of the wrong size", r, data, size);
		if (before == EMU_HS_WAIT_HELLO)
			memcpy(r->hello, p, sizeof(r->hello));
		if (r->hs.state == EMU_HS_DONE) {
			bool ok = r->hs.role == EMU_HS_ACCEPTOR ? honest_connector(r->hello, p)
			                                        : honest_acceptor(p);
			if (!ok)
				fail("handshake accepted bytes an honest peer would not send", r,
				     data, size);
			if (!peer_identity_ok(&r->hs))
				fail("handshake accepted a peer it must not (not dialed, or "
				     "itself)",
				     r, data, size);
		}
		break;
	}
	case EMU_WIRE_EV_HS_FAIL:
		if (before == EMU_HS_DONE || st->result == EMU_HS_OK ||
		    r->hs.state != EMU_HS_FAILED || st->out_len)
			fail("handshake failure reported inconsistently", r, data, size);
		break;
	case EMU_WIRE_EV_MSG: {
		uint32_t plen = emu_wire_payload_len(&st->msg);

		if (before != EMU_HS_DONE)
			fail("a message before the handshake was done", r, data, size);
		if (!emu_wire_msg_valid(&st->msg) || plen > EMU_WIRE_MAX_MSG ||
		    st->size != sizeof(struct emu_msg) + plen || st->size > avail ||
		    memcmp(&st->msg, p, sizeof(st->msg)))
			fail("message of inconsistent size or header", r, data, size);
		break;
	}
	case EMU_WIRE_EV_BAD:
		if (before != EMU_HS_DONE || emu_wire_msg_valid(&st->msg) ||
		    memcmp(&st->msg, p, sizeof(st->msg)))
			fail("BAD for a valid header, or during the handshake", r, data, size);
		break;
	}
}

static void record(struct run *r, const struct emu_wire_step *st, const uint8_t *p)
{
	struct event *e = &r->ev[r->n++];

	memset(e, 0, sizeof(*e));
	e->ev = st->ev;
	e->size = st->size;
	e->result = st->result;
	if (st->ev == EMU_WIRE_EV_MSG || st->ev == EMU_WIRE_EV_BAD)
		e->msg = st->msg;
	if (st->ev == EMU_WIRE_EV_MSG)
		for (size_t i = sizeof(st->msg); i < st->size; i++)
			e->sum = e->sum * 31 + p[i];
}

/* Take every whole frame in stream[r->taken, end), as fabric_conn.c's
 * conn_parse does; the frame is parsed from an exact-size heap copy. */
static void parse(struct run *r, const uint8_t *stream, size_t end, const uint8_t *data,
                  size_t size)
{
	while (!r->closed && r->n < MAX_EVENTS - 1) {
		size_t avail = end - r->taken, hs_need = emu_hs_need(&r->hs);
		enum emu_hs_state before = r->hs.state;
		uint8_t *copy = malloc(avail ? avail : 1);
		struct emu_wire_step st;

		if (!copy)
			abort();
		memcpy(copy, stream + r->taken, avail);
		emu_wire_input(&r->hs, avail ? copy : NULL, avail, &st);
		check_event(r, &st, before, hs_need, copy, avail, data, size);
		if (st.ev != EMU_WIRE_EV_NEED) /* a NEED ends every chunk: not recorded */
			record(r, &st, copy);
		free(copy);
		if (st.ev == EMU_WIRE_EV_NEED)
			return;
		if (st.ev == EMU_WIRE_EV_HS_FAIL || st.ev == EMU_WIRE_EV_BAD)
			r->closed = true;
		else
			r->taken += st.size;
	}
}

static void run_stream(struct run *r, enum emu_hs_role role, const uint8_t *stream, size_t len,
                       unsigned int chunk_seed, const uint8_t *data, size_t size)
{
	uint8_t out[EMU_HS_OUT_MAX];
	uint32_t lcg = chunk_seed * 2654435761u + 1;
	size_t end = 0, n;

	memset(r, 0, sizeof(*r));
	fz_start(&r->hs, role, out, &n);
	while (end < len && !r->closed) {
		size_t chunk = len - end;

		if (chunk_seed) {
			lcg = lcg * 1103515245u + 12345u;
			chunk = 1 + (lcg >> 16) % 97;
			if (chunk > len - end)
				chunk = len - end;
		}
		end += chunk;
		parse(r, stream, end, data, size);
	}
	if (r->taken > len)
		fail("took more bytes than the stream has", r, data, size);
}

static struct run whole, chunked;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum emu_hs_role role;
	unsigned int seed;

	if (size < 1)
		return 0;
	role = data[0] & FZ_MODE_CONNECTOR ? EMU_HS_CONNECTOR : EMU_HS_ACCEPTOR;
	seed = data[0] >> 1;
	run_stream(&whole, role, data + 1, size - 1, 0, data, size);
	run_stream(&chunked, role, data + 1, size - 1, seed ? seed : 1, data, size);
	/* property 4 (a cap hit in either run makes the comparison moot) */
	if (whole.n >= MAX_EVENTS - 1 || chunked.n >= MAX_EVENTS - 1)
		return 0;
	if (whole.n != chunked.n || whole.closed != chunked.closed ||
	    whole.taken != chunked.taken || whole.hs.state != chunked.hs.state)
		fail("whole and chunked arrival disagree", &chunked, data, size);
	for (int i = 0; i < whole.n; i++) {
		const struct event *a = &whole.ev[i], *b = &chunked.ev[i];

		if (a->ev != b->ev || a->size != b->size || a->result != b->result ||
		    a->sum != b->sum || memcmp(&a->msg, &b->msg, sizeof(a->msg)))
			fail("whole and chunked arrival give different events", &chunked, data,
			     size);
	}
	return 0;
}
