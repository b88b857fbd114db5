/* SPDX-License-Identifier: MIT */
/*
 * What the fabric fuzz target (fuzz_fabric.c) and its seed generator
 * (make_fabric_seeds.c) agree on: the fixed secret, nonce and GID of the
 * emulated local end, the GID it dialed as connector and the other local
 * device GID it refuses as acceptor, so a seed can carry a handshake that
 * checks out and mutations reach the message parser behind it.
 *
 * Input layout: byte 0 = mode, the rest = the bytes a peer sends on one
 * connection.
 *   mode bit 0      0: we are the acceptor (input: hello, proof, messages)
 *                   1: we are the connector (input: challenge, messages)
 *   mode bits 1..7  seed of the recv() chunk sizes the stream is cut into
 */
#ifndef GNIC_FUZZ_FABRIC_H
#define GNIC_FUZZ_FABRIC_H

#include <string.h>

#include "fabric_wire.h"

#define FZ_MODE_CONNECTOR 0x01u

static const char fz_secret[] = "gnic-emu fuzz secret: not a real one";

/* A GID of the ::<port>:ffff:127.0.0.<host> style. */
static inline void fz_gid(union ibv_gid *gid, uint8_t port, uint8_t host)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[9] = port;
	gid->raw[10] = gid->raw[11] = 0xff;
	gid->raw[12] = 127;
	gid->raw[15] = host;
}

/* The local end's nonce and GID. */
static inline void fz_local(uint8_t nonce[EMU_AUTH_NONCE_LEN], union ibv_gid *gid)
{
	memset(nonce, 0xa5, EMU_AUTH_NONCE_LEN);
	fz_gid(gid, 1, 1);
}

/* As connector, the local end dialed this GID. */
static inline void fz_dialed(union ibv_gid *gid)
{
	fz_gid(gid, 0x22, 2);
}

/* As acceptor, the local end refuses this GID too: another device of its
 * process. */
static inline void fz_other_device(union ibv_gid *gid)
{
	fz_gid(gid, 2, 1);
}

static inline void fz_start(struct emu_hs *hs, enum emu_hs_role role, uint8_t *out, size_t *out_len)
{
	uint8_t nonce[EMU_AUTH_NONCE_LEN];
	union ibv_gid gid, dialed, other;

	fz_local(nonce, &gid);
	fz_dialed(&dialed);
	emu_hs_start(hs, role, fz_secret, sizeof(fz_secret) - 1, &gid,
	             role == EMU_HS_CONNECTOR ? &dialed : NULL, nonce, out, out_len);
	if (role == EMU_HS_ACCEPTOR) {
		fz_other_device(&other);
		emu_hs_refuse_gid(hs, &other);
	}
}

#endif /* GNIC_FUZZ_FABRIC_H */
