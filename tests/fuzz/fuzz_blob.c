// SPDX-License-Identifier: MIT
/*
 * Fuzz target "blob": libgnic's connection blob parser, gnic_blob_decode()
 * (src/blob.c, compiled into the target: it is internal).
 *
 * Input: up to GNIC_BLOB_SIZE (64) bytes, the blob; a shorter input is a
 * truncated blob, zero-padded as a short read into a zeroed buffer leaves it;
 * a longer one is not a blob and is ignored. Properties, each checked on every
 * input; a broken one prints what it saw and aborts:
 *
 *  1. decode either fails with GNIC_ERR_PROTOCOL (and an error text), or
 *     succeeds with fields that gnic_blob_encode() turns back into exactly the
 *     same 64 bytes: nothing in a blob is silently ignored.
 *  2. The same for the input with its checksum resealed (the CRC-32 of bytes
 *     0..43 written at 44), so mutations reach the field checks behind it.
 *  3. Fields taken from the input bytes (any values, or forced into range
 *     when the input's byte 27 is odd): encode then decode fails with
 *     GNIC_ERR_PROTOCOL exactly when a field is out of range (QPN or PSN
 *     wider than 24 bits, MTU code not 1..5, flags not 0, a link layer not 1
 *     or 2, a LID that is not unicast on InfiniBand or not 0 on Ethernet),
 *     and otherwise gives back the same fields. Version 2 (the current one).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnic_int.h"

#define OFF_CRC 44

static void dump(const char *what, const uint8_t *b)
{
	fprintf(stderr, "%s:", what);
	for (int i = 0; i < GNIC_BLOB_SIZE; i++)
		fprintf(stderr, "%s%02x", i % 16 ? " " : "\n  ", b[i]);
	fprintf(stderr, "\n");
}

/* out: what the accepted blob re-encodes to, or NULL after a failed decode
 * (whose text is then this thread's last error). */
static void fail(const char *why, const struct gnic_blob *in, const struct gnic_blob *out)
{
	fprintf(stderr, "fuzz_blob: %s\n", why);
	dump("input blob", in->bytes);
	if (out)
		dump("re-encoded", out->bytes);
	else
		fprintf(stderr, "decode said: %s\n", gnic_last_error());
	abort();
}

/* Properties 1 and 2. */
static void check_decode(const struct gnic_blob *in)
{
	struct gnic_blob_info info;
	struct gnic_blob out;
	gnic_status_t st;

	memset(&info, 0, sizeof(info));
	st = gnic_blob_decode(in, &info);
	if (st != GNIC_OK) {
		if (st != GNIC_ERR_PROTOCOL)
			fail("decode failed with a status other than GNIC_ERR_PROTOCOL", in, NULL);
		if (strncmp(gnic_last_error(), "blob: ", 6) != 0)
			fail("decode failed without saying why", in, NULL);
		return;
	}
	gnic_blob_encode(&info, &out);
	if (memcmp(out.bytes, in->bytes, GNIC_BLOB_SIZE) != 0)
		fail("accepted blob does not re-encode to the same bytes", in, &out);
}

static bool link_valid(const struct gnic_blob_info *f)
{
	if (f->link_layer == IBV_LINK_LAYER_INFINIBAND)
		return f->lid >= 1 && f->lid <= 0xbfff;
	return f->link_layer == IBV_LINK_LAYER_ETHERNET && f->lid == 0;
}

static bool fields_valid(const struct gnic_blob_info *f)
{
	return f->qpn <= 0xffffff && f->psn <= 0xffffff && f->mtu >= IBV_MTU_256 &&
	       f->mtu <= IBV_MTU_4096 && f->flags == 0 && link_valid(f);
}

/* Property 3. b: the zero-padded input. */
static void check_round_trip(const uint8_t *b)
{
	struct gnic_blob_info f, back;
	struct gnic_blob enc;
	gnic_status_t st;

	memset(&f, 0, sizeof(f));
	memcpy(f.gid, b, 16);
	f.qpn = gnic_get_le32(b + 16);
	f.psn = gnic_get_le32(b + 20);
	f.mtu = b[24];
	f.flags = gnic_get_le16(b + 25);
	f.lid = gnic_get_le16(b + 28);
	f.link_layer = b[30];
	f.version = 2;
	if (b[27] & 1) {
		f.qpn &= 0xffffff;
		f.psn &= 0xffffff;
		f.mtu = (uint8_t)(IBV_MTU_256 + f.mtu % 5);
		f.flags = 0;
		f.link_layer = (uint8_t)(IBV_LINK_LAYER_INFINIBAND + (f.link_layer & 1));
		f.lid =
		    f.link_layer == IBV_LINK_LAYER_ETHERNET ? 0 : (uint16_t)(1 + f.lid % 0xbfff);
	}
	gnic_blob_encode(&f, &enc);
	memset(&back, 0, sizeof(back));
	st = gnic_blob_decode(&enc, &back);
	if (!fields_valid(&f)) {
		if (st != GNIC_ERR_PROTOCOL)
			fail("out-of-range fields encoded and decoded without GNIC_ERR_PROTOCOL",
			     &enc, st ? NULL : &enc);
		return;
	}
	if (st != GNIC_OK)
		fail("valid fields did not survive encode + decode", &enc, NULL);
	if (memcmp(back.gid, f.gid, 16) || back.qpn != f.qpn || back.psn != f.psn ||
	    back.mtu != f.mtu || back.flags != f.flags || back.lid != f.lid ||
	    back.link_layer != f.link_layer || back.version != 2)
		fail("encode + decode changed a field", &enc, &enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gnic_blob in;

	if (size > GNIC_BLOB_SIZE)
		return 0;
	memset(&in, 0, sizeof(in));
	memcpy(in.bytes, data, size);
	check_decode(&in);
	gnic_put_le32(in.bytes + OFF_CRC, gnic_crc32(in.bytes, OFF_CRC));
	check_decode(&in);
	check_round_trip(in.bytes);
	return 0;
}
