/* SPDX-License-Identifier: MIT */
#include <sched.h>
#include <string.h>

#include "dev_eth.h"

const uint8_t dev_mac_a[6] = {0x02, 0, 0, 0, 0, 0x0a}, dev_mac_b[6] = {0x02, 0, 0, 0, 0, 0x0b};

struct gnic_eth *dev_eth_open(struct gnic_ctx *ctx, uint32_t nbuf, uint32_t sq_depth)
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

struct gnic_eth_flow *dev_eth_udp_rule(struct gnic_eth *eth, uint16_t port, uint32_t tag)
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

void dev_put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The L4 header at l4 (zeroed before): ports, UDP length or TCP offset. */
static uint32_t l4_header(uint8_t *l4, uint8_t proto, uint16_t sport, uint16_t dport, uint32_t pay)
{
	dev_put16(l4, sport);
	dev_put16(l4 + 2, dport);
	if (proto == 17) {
		dev_put16(l4 + 4, 8 + pay);
		return 8;
	}
	l4[12] = 5 << 4; /* data offset 5 */
	l4[13] = 0x18;   /* PSH|ACK */
	return 20;
}

uint32_t dev_frame4(uint8_t *f, const uint8_t *dmac, uint32_t src, uint32_t dst, uint8_t proto,
                    uint16_t sport, uint16_t dport, uint32_t pay, uint32_t seed)
{
	uint32_t l4 = proto == 6 ? 20 : 8;

	memset(f, 0, 14 + 20 + l4);
	memcpy(f, dmac, 6);
	memcpy(f + 6, dev_mac_b, 6);
	dev_put16(f + 12, 0x0800);
	f[14] = 0x45;
	dev_put16(f + 16, 20 + l4 + pay);
	f[22] = 64;
	f[23] = proto;
	dev_put16(f + 26, src >> 16), dev_put16(f + 28, src);
	dev_put16(f + 30, dst >> 16), dev_put16(f + 32, dst);
	l4_header(f + 34, proto, sport, dport, pay);
	t_fill(f + 34 + l4, pay, seed);
	return 34 + l4 + pay;
}

uint32_t dev_frame6(uint8_t *f, const uint8_t *src, const uint8_t *dst, uint8_t proto,
                    uint16_t sport, uint16_t dport, uint32_t pay, uint32_t seed)
{
	uint32_t l4 = proto == 6 ? 20 : 8;

	memset(f, 0, 14 + 40 + l4);
	memcpy(f, dev_mac_a, 6);
	memcpy(f + 6, dev_mac_b, 6);
	dev_put16(f + 12, 0x86dd);
	f[14] = 0x60;
	dev_put16(f + 18, l4 + pay);
	f[20] = proto;
	f[21] = 64;
	memcpy(f + 22, src, 16);
	memcpy(f + 38, dst, 16);
	l4_header(f + 54, proto, sport, dport, pay);
	t_fill(f + 54 + l4, pay, seed);
	return 54 + l4 + pay;
}

struct gnic_eth_pkt dev_eth_rx_one(struct gnic_dev_eth *d)
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

void dev_eth_stats(struct gnic_eth *e, struct gnic_eth_stats *s)
{
	CHECK_GNIC(gnic_eth_stats(e, s));
}

static uint64_t fates(const struct gnic_eth_stats *s)
{
	return s->rx_delivered + s->rx_no_rule + s->rx_drop_rule + s->rx_out_of_buffer +
	       s->rx_too_long;
}

void dev_eth_wait_frames(struct gnic_eth *e, const struct gnic_eth_stats *s0, uint64_t n)
{
	struct gnic_eth_stats s;
	uint64_t end = gnic_now_ns() + 5000000000ull;

	for (;;) {
		dev_eth_stats(e, &s);
		if (fates(&s) - fates(s0) >= n)
			return;
		if (gnic_now_ns() > end)
			T_FAIL("%llu of %llu frames met their fate (the port saw %llu)",
			       (unsigned long long)(fates(&s) - fates(s0)), (unsigned long long)n,
			       (unsigned long long)(s.rx_frames - s0->rx_frames));
		t_sleep_ms(1);
	}
}

void dev_eth_env_open(struct dev_eth_env *e)
{
	e->ctx = dev_ctx_open();
	e->q = dev_eth_open(e->ctx, 16, 64);
	e->tx = dev_eth_open(e->ctx, 16, 64);
	e->d = gnic_eth_dev(e->q);
	e->dtx = gnic_eth_dev(e->tx);
}

void dev_eth_env_close(struct dev_eth_env *e)
{
	gnic_eth_destroy(e->tx); /* removes its rules */
	gnic_eth_destroy(e->q);
	gnic_ctx_destroy(e->ctx);
}

void dev_eth_expect(struct dev_eth_env *e, const uint8_t *f, uint32_t len, int tag,
                    enum dev_eth_fate fate)
{
	struct gnic_eth_stats s0, s1;
	struct gnic_eth_pkt p;

	dev_eth_stats(e->q, &s0);
	CHECK(len <= GNIC_ETH_MAX_HDR);
	/* no checksum offload: the frame arrives exactly as sent */
	CHECK_DEV(gnic_dev_eth_send_hdr(e->dtx, f, len, 0, 0, 0, 0));
	CHECK_GE(gnic_dev_eth_tx_poll(e->dtx), 0);
	if (tag >= 0) {
		p = dev_eth_rx_one(e->d);
		CHECK_EQ(p.tag, (uint32_t)tag);
		CHECK_EQ(p.len, len);
		CHECK_MEM(p.data, f, len);
		CHECK_DEV(gnic_dev_eth_rx_return(e->d, p.buf));
		dev_eth_stats(e->q, &s1);
		CHECK_EQ(s1.rx_delivered - s0.rx_delivered, 1u);
		CHECK_EQ(s1.rx_no_rule, s0.rx_no_rule);
		CHECK_EQ(s1.rx_drop_rule, s0.rx_drop_rule);
		return;
	}
	dev_eth_wait_frames(e->q, &s0, 1);
	dev_eth_stats(e->q, &s1);
	CHECK_EQ(s1.rx_no_rule - s0.rx_no_rule, fate == DEV_ETH_NO_RULE ? 1u : 0u);
	CHECK_EQ(s1.rx_drop_rule - s0.rx_drop_rule, fate == DEV_ETH_DROP_RULE ? 1u : 0u);
	CHECK_EQ(s1.rx_delivered, s0.rx_delivered);
	CHECK_EQ(gnic_dev_eth_rx_burst(e->d, &p, 1), 0); /* nothing came to the queue */
}
