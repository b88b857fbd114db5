// SPDX-License-Identifier: MIT
/*
 * Connection blobs: export is deterministic and self-consistent; every kind
 * of corruption (magic, version, size, checksum, truncation, contents) gives
 * GNIC_ERR_PROTOCOL, says which, and leaves the QP untouched: a good blob
 * connects it afterwards.
 */
#include "gt.h"

/* IEEE CRC-32, independent of libgnic's, to re-seal edited blobs. */
static uint32_t crc32(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
	}
	return ~crc;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void reseal(struct gnic_blob *b)
{
	put_le32(b->bytes + 44, crc32(b->bytes, 44));
}

static void expect_protocol(struct gnic_qp *qp, const struct gnic_blob *b, const char *what,
                            const char *word)
{
	t_case("corrupt blob: %s", what);
	CHECK_GNIC_ERR(gnic_qp_connect(qp, b), GNIC_ERR_PROTOCOL);
	if (!strstr(gnic_last_error(), word))
		T_FAIL("text \"%s\" does not mention \"%s\"", gnic_last_error(), word);
}

static void layout(const struct gnic_blob *b, const struct gnic_dev_qp *d)
{
	t_case("layout: magic, version, size, qpn, psn, mtu, lid, link layer, crc");
	CHECK(!memcmp(b->bytes, "GNB1", 4));
	CHECK_EQ(b->bytes[4] | b->bytes[5] << 8, 2);
	CHECK_EQ(b->bytes[6] | b->bytes[7] << 8, 48);
	CHECK_EQ(le32(b->bytes + 24), d->qpn);
	CHECK(le32(b->bytes + 28) <= 0xffffff);
	CHECK(b->bytes[32] >= 1 && b->bytes[32] <= 5);
	CHECK_EQ(b->bytes[36] | b->bytes[37] << 8, 0); /* RoCE: no LID */
	CHECK_EQ(b->bytes[38], 2);                     /* IBV_LINK_LAYER_ETHERNET */
	CHECK_EQ(le32(b->bytes + 44), crc32(b->bytes, 44));
	CHECK_BYTES(b->bytes + 48, 0, 16);
}

static void corruptions(struct gnic_qp *qp, const struct gnic_blob *good)
{
	struct gnic_blob b;

	b = *good;
	b.bytes[0] = 'X';
	expect_protocol(qp, &b, "magic", "magic");
	memset(&b, 0, sizeof(b));
	expect_protocol(qp, &b, "all zero", "magic");
	b = *good;
	b.bytes[4] = 3;
	reseal(&b);
	expect_protocol(qp, &b, "version 3", "version");
	b = *good;
	b.bytes[38] = 7;
	reseal(&b);
	expect_protocol(qp, &b, "link layer 7", "link layer");
	b = *good;
	b.bytes[38] = 1; /* InfiniBand, with a LID */
	b.bytes[36] = 5;
	reseal(&b);
	expect_protocol(qp, &b, "a peer on InfiniBand", "InfiniBand");
	b = *good;
	b.bytes[36] = 5; /* a LID on Ethernet */
	reseal(&b);
	expect_protocol(qp, &b, "a LID on Ethernet", "LID");
	b = *good;
	b.bytes[4] = 1; /* version 1: bytes 36..43 reserved */
	reseal(&b);
	expect_protocol(qp, &b, "version 1 with a link layer byte", "reserved byte 38");
	b = *good;
	b.bytes[6] = 40;
	reseal(&b);
	expect_protocol(qp, &b, "size", "size");
	b = *good;
	b.bytes[25] ^= 0x01;
	expect_protocol(qp, &b, "flipped qpn bit", "checksum");
	b = *good;
	b.bytes[45] ^= 0x80;
	expect_protocol(qp, &b, "flipped crc bit", "checksum");
	for (size_t keep = 8; keep < 48; keep += 12) {
		b = *good;
		memset(b.bytes + keep, 0, sizeof(b.bytes) - keep);
		expect_protocol(qp, &b, "truncated", "checksum");
	}
	b = *good;
	b.bytes[32] = 9;
	reseal(&b);
	expect_protocol(qp, &b, "MTU code 9", "MTU");
	b = *good;
	b.bytes[27] = 1; /* qpn above 24 bits */
	reseal(&b);
	expect_protocol(qp, &b, "qpn above 24 bits", "24 bits");
	b = *good;
	b.bytes[34] = 1;
	reseal(&b);
	expect_protocol(qp, &b, "unknown flag", "flags");
	/* found by tests/fuzz (fuzz_blob): these bytes were never checked */
	b = *good;
	b.bytes[33] = 1;
	reseal(&b);
	expect_protocol(qp, &b, "reserved byte 33", "reserved byte 33");
	b = *good;
	b.bytes[40] = 7;
	reseal(&b);
	expect_protocol(qp, &b, "reserved bytes 39..43", "reserved byte 40");
	b = *good;
	b.bytes[63] = 0x80; /* past the checksummed part */
	expect_protocol(qp, &b, "unused bytes 48..63", "reserved byte 63");
}

int main(void)
{
	struct gnic_ctx *ctx = gt_ctx();
	struct gnic_qp *qp, *peer;
	struct gnic_blob blob, blob2, peer_blob;

	CHECK_GNIC(gnic_qp_create(ctx, NULL, &qp));
	CHECK_GNIC(gnic_qp_create(ctx, NULL, &peer));

	t_case("export twice: same bytes");
	CHECK_GNIC(gnic_qp_export(qp, &blob));
	CHECK_GNIC(gnic_qp_export(qp, &blob2));
	CHECK_MEM(blob.bytes, blob2.bytes, sizeof(blob.bytes));
	layout(&blob, gnic_qp_dev(qp));
	CHECK_GNIC(gnic_qp_export(peer, &peer_blob));
	CHECK(memcmp(blob.bytes, peer_blob.bytes, sizeof(blob.bytes)));

	t_case("NULL arguments");
	CHECK_GNIC_ERR(gnic_qp_export(NULL, &blob2), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_export(qp, NULL), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_connect(qp, NULL), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_qp_connect(NULL, &peer_blob), GNIC_ERR_INVALID);

	corruptions(qp, &peer_blob);

	t_case("after all that, the good blobs connect both");
	CHECK_GNIC(gnic_qp_connect(qp, &peer_blob));
	CHECK_GNIC(gnic_qp_connect(peer, &blob));

	t_case("a version 1 blob (an older libgnic's) still connects on RoCE");
	CHECK_GNIC(gnic_qp_reset(qp));
	blob2 = peer_blob;
	blob2.bytes[4] = 1;
	blob2.bytes[38] = 0;
	reseal(&blob2);
	CHECK_GNIC(gnic_qp_connect(qp, &blob2));

	gnic_qp_destroy(peer);
	gnic_qp_destroy(qp);
	gnic_ctx_destroy(ctx);
	return T_EXIT_PASS;
}
