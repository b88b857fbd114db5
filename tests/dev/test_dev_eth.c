// SPDX-License-Identifier: MIT
/*
 * libgnic's Ethernet queues on gnic-emu's loopback port (no interface: what
 * a queue sends is steered back into the device), the device calls of
 * gnic_dev_eth.cuh on the test's thread:
 *
 *   frames    frames sent as 42 or up to 200 inline bytes + payload, or
 *             whole from registered memory, arrive byte for byte, with the
 *             rule's tag, the header types and the checksum bits of
 *             checksums the NIC filled (and without offload: not OK)
 *   laps      a frame received, rewritten and sent again from its buffer,
 *             received again, 300 times over 8 buffers and a small SQ: the
 *             buffers come back by themselves
 *   oob       20 frames to a queue of 8 buffers nobody takes: 8 delivered,
 *             12 counted out of buffer; after returning them it receives
 *   rules     dst MAC + EtherType, IPv4 source prefix, IPv6 destination
 *             prefix, TCP source port, a drop rule, priorities; frames
 *             outside them counted as no rule; a removed rule steers nothing
 *   errors    bad attributes, rules and device arguments: clear errors,
 *             nothing changed
 */
#include <string.h>

#include "dev_common.h"

#define RX_TAG 0x77
#define PORT   9000

static struct gnic_ctx *ctx_open(void)
{
	struct gnic_ctx_attr ca;
	struct gnic_ctx *ctx;

	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = GNIC_GPU_NONE;
	CHECK_GNIC(gnic_ctx_create(&ca, &ctx));
	return ctx;
}

static struct gnic_eth *eth_open(struct gnic_ctx *ctx, uint32_t nbuf, uint32_t sq_depth)
{
	struct gnic_eth_attr a;
	struct gnic_eth *eth;

	gnic_eth_attr_init(&a);
	a.rx_bufs = nbuf;
	a.sq_depth = sq_depth;
	a.share = GNIC_SHARE_EXCLUSIVE;
	a.timeout_ns = 5ull * 1000 * 1000 * 1000;
	CHECK_GNIC(gnic_eth_create(ctx, &a, &eth));
	return eth;
}

static struct gnic_eth_flow *udp_rule(struct gnic_eth *eth, uint16_t port, uint32_t tag)
{
	struct gnic_eth_rule r;
	struct gnic_eth_flow *f;

	memset(&r, 0, sizeof(r));
	r.match = GNIC_ETH_MATCH_DST_PORT;
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_UDP;
	r.dst_port = port;
	r.flow_tag = tag;
	CHECK_GNIC(gnic_eth_rule_add(eth, &r, &f));
	return f;
}

static const uint8_t mac_a[6] = {0x02, 0, 0, 0, 0, 0x0a}, mac_b[6] = {0x02, 0, 0, 0, 0, 0x0b};

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* An IPv4 frame (UDP, or TCP with proto 6) of pay payload bytes from src to
 * dst; checksums 0 (the NIC fills them). Returns its length. */
static uint32_t frame4(uint8_t *f, const uint8_t *dmac, uint32_t src, uint32_t dst, uint8_t proto,
                       uint16_t sport, uint16_t dport, uint32_t pay, uint32_t seed)
{
	uint32_t l4 = proto == 6 ? 20 : 8;

	memset(f, 0, 14 + 20 + l4);
	memcpy(f, dmac, 6);
	memcpy(f + 6, mac_b, 6);
	put16(f + 12, 0x0800);
	f[14] = 0x45;
	put16(f + 16, 20 + l4 + pay);
	f[22] = 64;
	f[23] = proto;
	put16(f + 26, src >> 16), put16(f + 28, src);
	put16(f + 30, dst >> 16), put16(f + 32, dst);
	put16(f + 34, sport);
	put16(f + 36, dport);
	if (proto == 17)
		put16(f + 38, 8 + pay);
	else
		f[46] = 5 << 4, f[47] = 0x18; /* data offset 5, PSH|ACK */
	t_fill(f + 34 + l4, pay, seed);
	return 34 + l4 + pay;
}

/* An IPv6/UDP frame to dst (16 bytes). */
static uint32_t frame6(uint8_t *f, const uint8_t *dst, uint16_t dport, uint32_t pay, uint32_t seed)
{
	memset(f, 0, 14 + 40 + 8);
	memcpy(f, mac_a, 6);
	memcpy(f + 6, mac_b, 6);
	put16(f + 12, 0x86dd);
	f[14] = 0x60;
	put16(f + 18, 8 + pay);
	f[20] = 17;
	f[21] = 64;
	f[22] = 0xfd, f[37] = 1; /* source fd00::1 */
	memcpy(f + 38, dst, 16);
	put16(f + 54, 5000);
	put16(f + 56, dport);
	put16(f + 58, 8 + pay);
	t_fill(f + 62, pay, seed);
	return 62 + pay;
}

/* Take exactly one frame (bounded). */
static struct gnic_eth_pkt rx_one(struct gnic_dev_eth *d)
{
	struct gnic_eth_pkt p;
	uint64_t end = gnic_now_ns() + 5000000000ull;
	int n;

	while ((n = gnic_dev_eth_rx_burst(d, &p, 1)) == 0) {
		if (gnic_now_ns() > end)
			T_FAIL("no frame within 5 s");
		sched_yield();
	}
	CHECK_EQ(n, 1);
	return p;
}

static void stats(struct gnic_eth *e, struct gnic_eth_stats *s)
{
	CHECK_GNIC(gnic_eth_stats(e, s));
}

/* Wait until the port has seen n more frames than s0 says. */
static void wait_frames(struct gnic_eth *e, const struct gnic_eth_stats *s0, uint64_t n)
{
	struct gnic_eth_stats s;
	uint64_t end = gnic_now_ns() + 5000000000ull;

	for (;;) {
		stats(e, &s);
		if (s.rx_frames - s0->rx_frames >= n)
			return;
		if (gnic_now_ns() > end)
			T_FAIL("the port saw %llu of %llu frames",
			       (unsigned long long)(s.rx_frames - s0->rx_frames),
			       (unsigned long long)n);
		t_sleep_ms(1);
	}
}

/* Equal but for the checksums (IPv4 header, UDP) the NIC filled. */
static void check_frame(const struct gnic_eth_pkt *p, const uint8_t *want, uint32_t len)
{
	uint8_t got[2048];

	CHECK_EQ(p->len, len);
	memcpy(got, p->data, len);
	got[24] = got[25] = got[40] = got[41] = 0;
	CHECK_MEM(got, want, len);
	CHECK_EQ(p->flags,
	         GNIC_ETH_RX_IPV4 | GNIC_ETH_RX_UDP | GNIC_ETH_RX_L3_OK | GNIC_ETH_RX_L4_OK);
}

static void case_frames(void)
{
	struct gnic_ctx *ctx = ctx_open();
	struct gnic_eth *rx = eth_open(ctx, 64, 256), *tx = eth_open(ctx, 64, 256);
	struct gnic_dev_eth *drx = gnic_eth_dev(rx), *dtx = gnic_eth_dev(tx);
	uint8_t *pool = gnic_eth_pool_host(tx), want[2048];
	uint32_t stride = gnic_eth_buf_stride(tx);

	CHECK(pool != NULL);
	CHECK_EQ(drx->magic, GNIC_DEV_ETH_MAGIC);
	CHECK_EQ(gnic_eth_nbuf(rx), 64u);
	udp_rule(rx, PORT, RX_TAG);
	for (uint32_t i = 0; i < 60; i++) {
		uint32_t pay = 1 + (i * 97) % 1400, len;
		uint8_t *f =
		    pool + (size_t)(i % 32) * stride; /* tx's buffers: no rule feeds them */
		struct gnic_eth_pkt p;

		len = frame4(want, mac_a, 0x0a000002, 0x0a000001, 17, 5000, PORT, pay, i);
		memcpy(f, want, len);
		if (i % 3 == 0) /* 42 inline bytes + the payload by pointer */
			CHECK_DEV(gnic_dev_eth_send_hdr(dtx, want, 42, (uintptr_t)f + 42,
			                                dtx->pool_lkey, len - 42,
			                                GNIC_ETH_TX_CSUM));
		else if (i % 3 == 1) /* the whole frame in registered memory */
			CHECK_DEV(gnic_dev_eth_send(dtx, f, dtx->pool_lkey, len, GNIC_ETH_TX_CSUM));
		else /* up to 200 bytes inline (several BBs), the rest by pointer */
			CHECK_DEV(gnic_dev_eth_send_hdr(
			    dtx, want, len < 200 ? len : 200, (uintptr_t)f + 200, dtx->pool_lkey,
			    len < 200 ? 0 : len - 200, GNIC_ETH_TX_CSUM));
		p = rx_one(drx);
		CHECK_EQ(p.tag, (uint32_t)RX_TAG);
		check_frame(&p, want, len);
		CHECK_DEV(gnic_dev_eth_rx_return(drx, p.buf));
		if (i % 32 == 31)
			CHECK_DEV(gnic_dev_eth_flush(dtx)); /* the buffers' frames are out */
		else
			CHECK_GE(gnic_dev_eth_tx_poll(dtx), 0);
	}
	/* without checksum offload, the zero checksums arrive as sent: not OK */
	{
		uint32_t len = frame4(want, mac_a, 0x0a000002, 0x0a000001, 17, 5000, PORT, 100, 7);
		struct gnic_eth_pkt p;

		want[40] = want[41] = 0xff; /* a wrong UDP checksum */
		CHECK_DEV(gnic_dev_eth_send_hdr(dtx, want, len, 0, 0, 0, 0));
		p = rx_one(drx);
		CHECK_EQ(p.flags, (uint32_t)(GNIC_ETH_RX_IPV4 | GNIC_ETH_RX_UDP));
		CHECK_MEM(p.data, want, len);
		CHECK_DEV(gnic_dev_eth_rx_return(drx, p.buf));
	}
	CHECK_DEV(gnic_dev_eth_flush(dtx));
	CHECK_EQ(dtx->tx_recycled, dtx->qp->sq_reserved);
	gnic_eth_destroy(tx);
	gnic_eth_destroy(rx);
	gnic_ctx_destroy(ctx);
}

/* A frame received by q is rewritten (UDP port PORT -> PORT + 1) and sent
 * from its buffer; it comes back with tag 2, and is returned. */
static void case_laps(void)
{
	struct gnic_ctx *ctx = ctx_open();
	struct gnic_eth *q = eth_open(ctx, 8, 64), *tx = eth_open(ctx, 8, 64);
	struct gnic_dev_eth *d = gnic_eth_dev(q), *dtx = gnic_eth_dev(tx);
	uint8_t want[2048];
	uint32_t seen[8] = {0};

	CHECK_EQ(gnic_eth_nbuf(q), 8u);
	CHECK(d->qp->sq_wqe_cnt <= 128);
	udp_rule(q, PORT, 1);
	udp_rule(q, PORT + 1, 2);
	for (uint32_t i = 0; i < 300; i++) {
		uint32_t len =
		    frame4(want, mac_a, 0x0a000002, 0x0a000001, 17, 5000, PORT, 20 + i % 180, i);
		struct gnic_eth_pkt p, back;

		CHECK_DEV(gnic_dev_eth_send_hdr(dtx, want, len, 0, 0, 0, GNIC_ETH_TX_CSUM));
		CHECK_GE(gnic_dev_eth_tx_poll(dtx), 0);
		p = rx_one(d);
		CHECK_EQ(p.tag, 1u);
		check_frame(&p, want, len);
		seen[p.buf]++;
		put16(p.data + 36, PORT + 1);
		put16(want + 36, PORT + 1);
		CHECK_DEV(gnic_dev_eth_send_buf(d, p.buf, p.len, GNIC_ETH_TX_CSUM));
		back = rx_one(d);
		CHECK_EQ(back.tag, 2u);
		CHECK(back.buf != p.buf); /* its own buffer was not back yet, or was reused */
		check_frame(&back, want, len);
		seen[back.buf]++;
		CHECK_DEV(gnic_dev_eth_rx_return(d, back.buf));
		/* the sent buffer comes back at the next CQE: at the latest the flush */
		if (i % 3 == 0)
			CHECK_DEV(gnic_dev_eth_flush(d));
		else
			CHECK_GE(gnic_dev_eth_tx_poll(d), 0);
	}
	CHECK_DEV(gnic_dev_eth_flush(d));
	CHECK_DEV(gnic_dev_eth_flush(dtx));
	for (int b = 0; b < 8; b++) /* every buffer took its turns */
		CHECK(seen[b] > 0);
	/* every buffer is posted again: the receive queue is full */
	CHECK_EQ(d->qp->rq_posted - d->qp->rq_done, 8u);
	CHECK_EQ(d->tx_recycled, d->qp->sq_reserved);
	CHECK(d->qp->sq_reserved > 2 * d->qp->sq_wqe_cnt); /* the SQ went round */
	gnic_eth_destroy(tx);
	gnic_eth_destroy(q);
	gnic_ctx_destroy(ctx);
}

static void case_oob(void)
{
	struct gnic_ctx *ctx = ctx_open();
	struct gnic_eth *q = eth_open(ctx, 8, 64), *tx = eth_open(ctx, 8, 64);
	struct gnic_dev_eth *d = gnic_eth_dev(q), *dtx = gnic_eth_dev(tx);
	struct gnic_eth_stats s0, s1;
	struct gnic_eth_pkt p[32];
	uint8_t f[256];
	uint32_t len = frame4(f, mac_a, 0x0a000002, 0x0a000001, 17, 5000, PORT, 64, 1), bufs[8];
	int n;

	udp_rule(q, PORT, RX_TAG);
	stats(q, &s0);
	for (int i = 0; i < 20; i++)
		CHECK_DEV(gnic_dev_eth_send_hdr(dtx, f, len, 0, 0, 0, GNIC_ETH_TX_CSUM));
	CHECK_DEV(gnic_dev_eth_flush(dtx));
	wait_frames(q, &s0, 20);
	stats(q, &s1);
	CHECK_EQ(s1.rx_delivered - s0.rx_delivered, 8u);
	CHECK_EQ(s1.rx_out_of_buffer - s0.rx_out_of_buffer, 12u);
	CHECK_EQ(s1.tx_frames - s0.tx_frames, 20u);
	n = gnic_dev_eth_rx_burst(d, p, 32);
	CHECK_EQ(n, 8);
	CHECK_EQ(gnic_dev_eth_rx_burst(d, p + 8, 32), 0);
	for (int i = 0; i < 8; i++)
		bufs[i] = p[i].buf;
	CHECK_DEV(gnic_dev_eth_rx_return_burst(d, bufs, 8));
	CHECK_DEV(gnic_dev_eth_send_hdr(dtx, f, len, 0, 0, 0, GNIC_ETH_TX_CSUM));
	p[0] = rx_one(d);
	CHECK_EQ(p[0].len, len);
	stats(q, &s1);
	CHECK_EQ(s1.rx_out_of_buffer - s0.rx_out_of_buffer, 12u);
	gnic_eth_destroy(tx);
	gnic_eth_destroy(q);
	gnic_ctx_destroy(ctx);
}

struct rules_env {
	struct gnic_eth *q, *tx;
	struct gnic_dev_eth *d, *dtx;
};

/* Send f; it must arrive with tag (tag < 0: be counted as what=0 no rule,
 * what=1 drop rule). */
static void expect(struct rules_env *e, const uint8_t *f, uint32_t len, int tag, int what)
{
	struct gnic_eth_stats s0, s1;

	stats(e->q, &s0);
	CHECK_DEV(gnic_dev_eth_send_hdr(e->dtx, f, len, 0, 0, 0, GNIC_ETH_TX_CSUM));
	if (tag >= 0) {
		struct gnic_eth_pkt p = rx_one(e->d);

		CHECK_EQ(p.tag, (uint32_t)tag);
		CHECK_EQ(p.len, len);
		CHECK_DEV(gnic_dev_eth_rx_return(e->d, p.buf));
		return;
	}
	wait_frames(e->q, &s0, 1);
	stats(e->q, &s1);
	CHECK_EQ(s1.rx_no_rule - s0.rx_no_rule, what == 0 ? 1u : 0u);
	CHECK_EQ(s1.rx_drop_rule - s0.rx_drop_rule, what == 1 ? 1u : 0u);
	CHECK_EQ(s1.rx_delivered, s0.rx_delivered);
}

static void case_rules(void)
{
	struct gnic_ctx *ctx = ctx_open();
	struct rules_env e;
	struct gnic_eth_rule r;
	struct gnic_eth_flow *f1, *f2;
	uint8_t f[256], dst6[16] = {0xfd, 0x12, 0, 0, 0, 0, 0, 0x34, 0, 0, 0, 0, 0, 0, 0, 9};
	uint32_t len;

	e.q = eth_open(ctx, 16, 64);
	e.tx = eth_open(ctx, 16, 64);
	e.d = gnic_eth_dev(e.q);
	e.dtx = gnic_eth_dev(e.tx);

	t_case("destination MAC + EtherType");
	memset(&r, 0, sizeof(r));
	r.match = GNIC_ETH_MATCH_DST_MAC | GNIC_ETH_MATCH_ETHERTYPE;
	memcpy(r.dst_mac, mac_a, 6);
	r.ethertype = 0x0800;
	r.flow_tag = 3;
	CHECK_GNIC(gnic_eth_rule_add(e.q, &r, &f1));
	len = frame4(f, mac_a, 0x0a000002, 0x0a000001, 17, 1, 2, 30, 1);
	expect(&e, f, len, 3, 0);
	len = frame4(f, mac_b, 0x0a000002, 0x0a000001, 17, 1, 2, 30, 1);
	expect(&e, f, len, -1, 0);
	len = frame6(f, dst6, 2, 30, 1); /* mac_a, but IPv6 */
	expect(&e, f, len, -1, 0);
	CHECK_GNIC(gnic_eth_rule_remove(f1));
	len = frame4(f, mac_a, 0x0a000002, 0x0a000001, 17, 1, 2, 30, 1);
	expect(&e, f, len, -1, 0); /* removed: nothing steers it */

	t_case("IPv4 source prefix /24, and a more specific rule before it");
	memset(&r, 0, sizeof(r));
	r.match = GNIC_ETH_MATCH_SRC_IP;
	r.ip_version = 4;
	memcpy(r.src_ip, (uint8_t[]){10, 1, 2, 0}, 4);
	r.src_prefix = 24;
	r.flow_tag = 4;
	r.priority = 5;
	CHECK_GNIC(gnic_eth_rule_add(e.q, &r, &f1));
	r.src_prefix = 0; /* all 32 bits: 10.1.2.0 exactly */
	memcpy(r.src_ip, (uint8_t[]){10, 1, 2, 7}, 4);
	r.flow_tag = 5;
	r.priority = 1;
	CHECK_GNIC(gnic_eth_rule_add(e.q, &r, &f2));
	expect(&e, f, frame4(f, mac_a, 0x0a01024d, 1, 17, 1, 2, 30, 2), 4, 0);
	expect(&e, f, frame4(f, mac_a, 0x0a010207, 1, 6, 1, 2, 30, 2), 5, 0); /* TCP too */
	expect(&e, f, frame4(f, mac_a, 0x0a010301, 1, 17, 1, 2, 30, 2), -1, 0);
	CHECK_GNIC(gnic_eth_rule_remove(f1));
	CHECK_GNIC(gnic_eth_rule_remove(f2));

	t_case("IPv6 destination prefix /64 + UDP");
	memset(&r, 0, sizeof(r));
	r.match = GNIC_ETH_MATCH_DST_IP;
	r.ip_version = 6;
	r.l4 = GNIC_ETH_L4_UDP;
	memcpy(r.dst_ip, dst6, 16);
	r.dst_prefix = 64;
	r.flow_tag = 6;
	CHECK_GNIC(gnic_eth_rule_add(e.q, &r, &f1));
	dst6[15] = 0x55; /* same /64 */
	expect(&e, f, frame6(f, dst6, 7, 40, 3), 6, 0);
	dst6[7] = 0x35; /* another /64 */
	expect(&e, f, frame6(f, dst6, 7, 40, 3), -1, 0);
	CHECK_GNIC(gnic_eth_rule_remove(f1));

	t_case("TCP source port; drop");
	memset(&r, 0, sizeof(r));
	r.match = GNIC_ETH_MATCH_SRC_PORT;
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_TCP;
	r.src_port = 4444;
	r.flow_tag = 7;
	CHECK_GNIC(gnic_eth_rule_add(e.q, &r, &f1));
	r.l4 = GNIC_ETH_L4_UDP;
	r.action = GNIC_ETH_DROP;
	r.flow_tag = 0;
	CHECK_GNIC(gnic_eth_rule_add(e.q, &r, &f2));
	expect(&e, f, frame4(f, mac_a, 1, 2, 6, 4444, 80, 10, 4), 7, 0);
	expect(&e, f, frame4(f, mac_a, 1, 2, 17, 4444, 80, 10, 4), -1, 1); /* UDP: dropped */
	expect(&e, f, frame4(f, mac_a, 1, 2, 6, 4445, 80, 10, 4), -1, 0);
	/* gnic_eth_destroy removes the rules left */
	gnic_eth_destroy(e.tx);
	gnic_eth_destroy(e.q);
	gnic_ctx_destroy(ctx);
}

static void case_errors(void)
{
	struct gnic_ctx *ctx = ctx_open();
	struct gnic_eth_attr a;
	struct gnic_eth *q = (struct gnic_eth *)0x1, *keep = q;
	struct gnic_eth_rule r;
	struct gnic_eth_flow *f = NULL;
	struct gnic_dev_eth *d;
	struct gnic_eth_pkt pk[2];
	uint8_t hdr[300] = {0};
	uint32_t bufs[2] = {0, 1};
	uint64_t reserved;

	gnic_eth_attr_init(&a);
	a.rx_bufs = 0;
	CHECK_RET(gnic_eth_create(ctx, &a, &q), GNIC_ERR_INVALID);
	gnic_eth_attr_init(&a);
	a.buf_size = 32;
	CHECK_RET(gnic_eth_create(ctx, &a, &q), GNIC_ERR_INVALID);
	gnic_eth_attr_init(&a);
	a.pool_mem = GNIC_ETH_MEM_GPU;
	CHECK_RET(gnic_eth_create(ctx, &a, &q), GNIC_ERR_INVALID);
	gnic_eth_attr_init(&a);
	a.db_mode = GNIC_DB_PROXY;
	CHECK_RET(gnic_eth_create(ctx, &a, &q), GNIC_ERR_NOT_SUPPORTED);
	CHECK(strstr(gnic_last_error(), "PROXY") != NULL);
	CHECK_RET(gnic_eth_create(NULL, NULL, &q), GNIC_ERR_INVALID);
	CHECK(q == keep); /* untouched */

	q = eth_open(ctx, 4, 64);
	d = gnic_eth_dev(q);
	memset(&r, 0, sizeof(r));
	r.match = 1u << 12;
	CHECK_RET(gnic_eth_rule_add(q, &r, &f), GNIC_ERR_INVALID);
	r.match = GNIC_ETH_MATCH_SRC_IP; /* no ip_version */
	CHECK_RET(gnic_eth_rule_add(q, &r, &f), GNIC_ERR_INVALID);
	r.ip_version = 4;
	r.src_prefix = 33;
	CHECK_RET(gnic_eth_rule_add(q, &r, &f), GNIC_ERR_INVALID);
	r.src_prefix = 0;
	r.match = GNIC_ETH_MATCH_DST_PORT; /* no l4 */
	CHECK_RET(gnic_eth_rule_add(q, &r, &f), GNIC_ERR_INVALID);
	r.l4 = GNIC_ETH_L4_UDP;
	r.flow_tag = 0x1000000;
	CHECK_RET(gnic_eth_rule_add(q, &r, &f), GNIC_ERR_INVALID);
	r.flow_tag = 1;
	r.action = 9;
	CHECK_RET(gnic_eth_rule_add(q, &r, &f), GNIC_ERR_INVALID);
	CHECK(f == NULL);
	CHECK_RET(gnic_eth_rule_remove(NULL), GNIC_ERR_INVALID);

	/* device calls: GNIC_DEV_ERR_INVAL, nothing posted */
	reserved = d->qp->sq_reserved;
	CHECK_EQ(gnic_dev_eth_send(d, hdr, d->pool_lkey, 17, 0), GNIC_DEV_ERR_INVAL);
	CHECK_EQ(gnic_dev_eth_send_hdr(d, hdr, 17, 0, 0, 0, 0), GNIC_DEV_ERR_INVAL);
	CHECK_EQ(gnic_dev_eth_send_hdr(d, hdr, GNIC_ETH_MAX_HDR + 1, 0, 0, 0, 0),
	         GNIC_DEV_ERR_INVAL);
	CHECK_EQ(gnic_dev_eth_send_buf(d, 4, 64, 0), GNIC_DEV_ERR_INVAL);
	CHECK_EQ(gnic_dev_eth_send_buf(d, 0, d->buf_stride + 1, 0), GNIC_DEV_ERR_INVAL);
	pk[0] = (struct gnic_eth_pkt){.buf = 0, .len = 64};
	pk[1] = (struct gnic_eth_pkt){.buf = 9, .len = 64};
	CHECK_EQ(gnic_dev_eth_send_burst(d, pk, 2, 0), GNIC_DEV_ERR_INVAL);
	CHECK_EQ(d->qp->sq_reserved, reserved);
	CHECK_EQ(gnic_dev_eth_rx_return(d, 4), GNIC_DEV_ERR_INVAL);
	/* every buffer is posted: one more would be a buffer given back twice */
	CHECK_EQ(gnic_dev_eth_rx_return_burst(d, bufs, 2), GNIC_DEV_ERR_INVAL);
	CHECK_EQ(d->qp->rq_posted, 4u);
	CHECK_EQ(gnic_dev_eth_rx_burst(d, pk, 2), 0);
	gnic_eth_destroy(q);
	gnic_ctx_destroy(ctx);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"frames", case_frames}, {"laps", case_laps},     {"oob", case_oob},
	    {"rules", case_rules},   {"errors", case_errors},
	};

	T_RUN_CASES(cases, argc, argv);
	return T_EXIT_PASS;
}
