/* SPDX-License-Identifier: MIT */
/*
 * What the fabric fuzz target (fuzz_fabric.c) and its seed generator
 * (make_fabric_seeds.c) agree on: the fixed secret, nonce and GID of the
 * emulated local end, so a seed can carry a handshake that checks out and
 * mutations reach the message parser behind it.
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

/* The local end's nonce and GID (::<port 1>:ffff:127.0.0.1 style). */
static inline void fz_local(uint8_t nonce[EMU_AUTH_NONCE_LEN], union ibv_gid *gid)
{
	memset(nonce, 0xa5, EMU_AUTH_NONCE_LEN);
	memset(gid, 0, sizeof(*gid));
	gid->raw[9] = 1;
	gid->raw[10] = gid->raw[11] = 0xff;
	gid->raw[12] = 127;
	gid->raw[15] = 1;
}

static inline void fz_start(struct emu_hs *hs, enum emu_hs_role role, uint8_t *out, size_t *out_len)
{
	uint8_t nonce[EMU_AUTH_NONCE_LEN];
	union ibv_gid gid;

	fz_local(nonce, &gid);
	emu_hs_start(hs, role, fz_secret, sizeof(fz_secret) - 1, &gid, nonce, out, out_len);
}

#endif /* GNIC_FUZZ_FABRIC_H */
