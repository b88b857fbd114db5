/* SPDX-License-Identifier: MIT */
/*
 * The connection blob: what one QP tells its peer, in 64 bytes with every
 * field little-endian at a fixed offset, so hosts of any kind agree.
 *
 *   0  magic "GNB1"     4  version (u16)   6  size (u16): bytes in use (48)
 *   8  gid[16]         24  qpn (u32)      28  psn (u32, 24 bits)
 *  32  mtu (enum ibv_mtu, u8)  33 reserved  34 flags (u16, none defined)
 *  36  version 2: lid (u16; 0 on RoCE)  38 link layer (u8: 1 InfiniBand,
 *      2 Ethernet)  39 reserved (5, zero); version 1: reserved (8, zero)
 *  44  crc32 (IEEE) of bytes 0..43
 *  48  unused (zero)
 *
 * This libgnic writes version 2 and reads 1 and 2; a version 1 blob says
 * nothing of LIDs or the link layer (lid 0, link layer 0), which is enough
 * on RoCE only.
 */
#include <stdio.h>
#include <string.h>

#include "gnic_int.h"

#define BLOB_MAGIC   "GNB1"
#define BLOB_VERSION 2 /* what we write; 1 is read too */
#define OFF_VERSION  4
#define OFF_SIZE     6
#define OFF_GID      8
#define OFF_QPN      24
#define OFF_PSN      28
#define OFF_MTU      32
#define OFF_FLAGS    34
#define OFF_LID      36 /* version 2 */
#define OFF_LINK     38 /* version 2 */
#define OFF_CRC      44
#define BLOB_USED    48

_Static_assert(BLOB_USED <= GNIC_BLOB_SIZE, "blob layout exceeds GNIC_BLOB_SIZE");

/* IEEE 802.3 CRC-32 (reflected 0xEDB88320), bit by bit: blobs are small. */
uint32_t gnic_crc32(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

void gnic_blob_encode(const struct gnic_blob_info *info, struct gnic_blob *blob)
{
	uint8_t *b = blob->bytes;

	memset(b, 0, GNIC_BLOB_SIZE);
	memcpy(b, BLOB_MAGIC, 4);
	gnic_put_le16(b + OFF_VERSION, info->version ? info->version : BLOB_VERSION);
	gnic_put_le16(b + OFF_SIZE, BLOB_USED);
	memcpy(b + OFF_GID, info->gid, 16);
	gnic_put_le32(b + OFF_QPN, info->qpn);
	gnic_put_le32(b + OFF_PSN, info->psn);
	b[OFF_MTU] = info->mtu;
	gnic_put_le16(b + OFF_FLAGS, info->flags);
	if (info->version != 1) {
		gnic_put_le16(b + OFF_LID, info->lid);
		b[OFF_LINK] = info->link_layer;
	}
	gnic_put_le32(b + OFF_CRC, gnic_crc32(b, OFF_CRC));
}

/* Envelope first (magic, version, size, checksum), so the text says what is
 * wrong with the blob itself before judging its contents. */
static gnic_status_t check_envelope(const uint8_t *b)
{
	uint32_t crc;

	if (memcmp(b, BLOB_MAGIC, 4))
		return gnic_error(GNIC_ERR_PROTOCOL,
		                  "blob: bad magic %02x %02x %02x %02x (want \"GNB1\"): not a "
		                  "gnic connection blob",
		                  b[0], b[1], b[2], b[3]);
	unsigned version = gnic_get_le16(b + OFF_VERSION);

	if (version < 1 || version > BLOB_VERSION)
		return gnic_error(GNIC_ERR_PROTOCOL,
		                  "blob: version %u, this libgnic speaks 1 and %u", version,
		                  BLOB_VERSION);
	if (gnic_get_le16(b + OFF_SIZE) != BLOB_USED)
		return gnic_error(GNIC_ERR_PROTOCOL, "blob: size %u, version %u blobs are %u",
		                  gnic_get_le16(b + OFF_SIZE), version, BLOB_USED);
	crc = gnic_crc32(b, OFF_CRC);
	if (gnic_get_le32(b + OFF_CRC) != crc)
		return gnic_error(GNIC_ERR_PROTOCOL,
		                  "blob: checksum 0x%08x, computed 0x%08x: corrupted or truncated",
		                  gnic_get_le32(b + OFF_CRC), crc);
	return GNIC_OK;
}

/* Reserved and unused bytes must be zero: a blob decodes to exactly one set
 * of fields, and a future version can give them meaning without old peers
 * silently ignoring it (the fuzzer found these unchecked). */
static gnic_status_t check_zero(const uint8_t *b, unsigned version)
{
	static const struct {
		unsigned off, len;
	} zero[] = {{OFF_MTU + 1, 1},
	            {OFF_LINK + 1, OFF_CRC - OFF_LINK - 1},
	            {BLOB_USED, GNIC_BLOB_SIZE - BLOB_USED},
	            {OFF_FLAGS + 2, OFF_LINK + 1 - OFF_FLAGS - 2}}; /* version 1 only */
	unsigned n = sizeof(zero) / sizeof(zero[0]) - (version == 1 ? 0 : 1);

	for (unsigned r = 0; r < n; r++)
		for (unsigned i = zero[r].off; i < zero[r].off + zero[r].len; i++)
			if (b[i])
				return gnic_error(GNIC_ERR_PROTOCOL,
				                  "blob: reserved byte %u is 0x%02x, not 0", i,
				                  b[i]);
	return GNIC_OK;
}

static gnic_status_t check_fields(const struct gnic_blob_info *info)
{
	if (info->qpn > 0xffffff || info->psn > 0xffffff)
		return gnic_error(GNIC_ERR_PROTOCOL, "blob: qpn %#x / psn %#x wider than 24 bits",
		                  info->qpn, info->psn);
	if (info->mtu < IBV_MTU_256 || info->mtu > IBV_MTU_4096)
		return gnic_error(GNIC_ERR_PROTOCOL, "blob: unknown MTU code %u", info->mtu);
	if (info->flags)
		return gnic_error(GNIC_ERR_PROTOCOL, "blob: unknown flags %#x", info->flags);
	if (info->version == 2 && info->link_layer != IBV_LINK_LAYER_INFINIBAND &&
	    info->link_layer != IBV_LINK_LAYER_ETHERNET)
		return gnic_error(GNIC_ERR_PROTOCOL, "blob: unknown link layer %u",
		                  info->link_layer);
	if (info->version == 2 && info->link_layer == IBV_LINK_LAYER_INFINIBAND &&
	    (!info->lid || info->lid > 0xbfff))
		return gnic_error(GNIC_ERR_PROTOCOL, "blob: LID %#x is not a unicast LID",
		                  info->lid);
	if (info->version == 2 && info->link_layer == IBV_LINK_LAYER_ETHERNET && info->lid)
		return gnic_error(GNIC_ERR_PROTOCOL, "blob: LID %#x on an Ethernet port",
		                  info->lid);
	return GNIC_OK;
}

gnic_status_t gnic_blob_decode(const struct gnic_blob *blob, struct gnic_blob_info *info)
{
	const uint8_t *b = blob->bytes;
	gnic_status_t st = check_envelope(b);

	if (!st)
		st = check_zero(b, gnic_get_le16(b + OFF_VERSION));
	if (st)
		return st;
	memset(info, 0, sizeof(*info));
	info->version = gnic_get_le16(b + OFF_VERSION);
	if (info->version == 2) {
		info->lid = gnic_get_le16(b + OFF_LID);
		info->link_layer = b[OFF_LINK];
	}
	memcpy(info->gid, b + OFF_GID, 16);
	info->qpn = gnic_get_le32(b + OFF_QPN);
	info->psn = gnic_get_le32(b + OFF_PSN);
	info->mtu = b[OFF_MTU];
	info->flags = gnic_get_le16(b + OFF_FLAGS);
	return check_fields(info);
}
