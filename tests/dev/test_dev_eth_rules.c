// SPDX-License-Identifier: MIT
/*
 * Steering rules of libgnic's Ethernet queues (gnic_eth_rule_add) on
 * gnic-emu's loopback port, one field at a time: a frame that matches the
 * rule arrives byte for byte with the rule's flow tag, and the same frame
 * with only that field changed is counted as matching no rule and reaches
 * no queue.
 *
 *   mac       destination MAC
 *   ethertype EtherType (a non-IP type, and IPv4's)
 *   ipv4      source and destination on /24, /22 and all 32 bits; bits
 *             of the address past the prefix do not count
 *   ipv6      source on /48, destination on /64 and all 128 bits
 *   ports     UDP source, UDP destination, TCP source, TCP destination;
 *             the protocol counts too (same ports, the other protocol)
 *   version   ip_version alone, l4 alone
 *   tag       tag 0 (none) and the largest, 0xffffff
 *   drop      a drop rule before a delivering one: counted as dropped by
 *             rule, frames outside it delivered
 *   priority  lower priority first whatever the creation order; equal
 *             priorities in creation order; a removed rule hands its
 *             frames on; a multicast MAC rule after every priority
 *   default   no rule: every frame counted as no rule, none delivered
 *   bad       each kind of bad rule (a priority above a ConnectX's 16, an
 *             EtherType contradicting ip_version among them):
 *             GNIC_ERR_INVALID naming the field, no flow handed out,
 *             steering unchanged
 */
#include <string.h>

#include "dev_eth.h"

static const uint8_t six_a[16] = {0xfd, 0, 0, 0xaa, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};
static const uint8_t six_b[16] = {0xfd, 0x12, 0, 0, 0, 0, 0, 0x34, 0, 0, 0, 0, 0, 0, 0, 9};

static void rule_init(struct gnic_eth_rule *r, uint32_t match, uint32_t tag)
{
	memset(r, 0, sizeof(*r));
	r->match = match;
	r->flow_tag = tag;
}

static struct gnic_eth_flow *add(struct dev_eth_env *e, const struct gnic_eth_rule *r)
{
	struct gnic_eth_flow *f = NULL;

	CHECK_GNIC(gnic_eth_rule_add(e->q, r, &f));
	CHECK(f != NULL);
	return f;
}

/* An IPv4 UDP frame to mac_a, 1.2.3.4:1000 -> 5.6.7.8:2000, 40 bytes. */
static uint32_t plain4(uint8_t *f)
{
	return dev_frame4(f, dev_mac_a, 0x01020304, 0x05060708, 17, 1000, 2000, 40, 1);
}

static void case_mac(void)
{
	struct dev_eth_env e;
	struct gnic_eth_rule r;
	uint8_t f[256];
	uint32_t len;

	dev_eth_env_open(&e);
	rule_init(&r, GNIC_ETH_MATCH_DST_MAC, 0x101);
	memcpy(r.dst_mac, dev_mac_a, 6);
	add(&e, &r);
	dev_eth_expect(&e, f, plain4(f), 0x101, 0);
	dev_eth_expect(&e, f,
	               dev_frame4(f, dev_mac_b, 0x01020304, 0x05060708, 17, 1000, 2000, 40, 1), -1,
	               DEV_ETH_NO_RULE);
	len = plain4(f);
	f[5] ^= 0x80; /* one bit of the last byte */
	dev_eth_expect(&e, f, len, -1, DEV_ETH_NO_RULE);
	dev_eth_env_close(&e);
}

static uint32_t raw_frame(uint8_t *f, uint16_t type)
{
	memcpy(f, dev_mac_a, 6);
	memcpy(f + 6, dev_mac_b, 6);
	dev_put16(f + 12, type);
	t_fill(f + 14, 50, type);
	return 64;
}

static void case_ethertype(void)
{
	struct dev_eth_env e;
	struct gnic_eth_rule r;
	uint8_t f[256];
	uint32_t len;

	dev_eth_env_open(&e);
	t_case("EtherType 0x88b5 (not IP)");
	rule_init(&r, GNIC_ETH_MATCH_ETHERTYPE, 0x102);
	r.ethertype = 0x88b5;
	add(&e, &r);
	dev_eth_expect(&e, f, raw_frame(f, 0x88b5), 0x102, 0);
	dev_eth_expect(&e, f, raw_frame(f, 0x88b6), -1, DEV_ETH_NO_RULE);
	t_case("EtherType 0x0800: an IPv4 frame, and its bytes with type 0x0801");
	r.ethertype = 0x0800;
	r.flow_tag = 0x103;
	add(&e, &r);
	len = plain4(f);
	dev_eth_expect(&e, f, len, 0x103, 0);
	f[13] = 0x01;
	dev_eth_expect(&e, f, len, -1, DEV_ETH_NO_RULE);
	dev_eth_env_close(&e);
}

static uint32_t v4(uint8_t *f, uint32_t src, uint32_t dst)
{
	return dev_frame4(f, dev_mac_a, src, dst, 17, 1000, 2000, 40, 2);
}

static void case_ipv4(void)
{
	struct dev_eth_env e;
	struct gnic_eth_rule r;
	struct gnic_eth_flow *fl;
	uint8_t f[256];

	dev_eth_env_open(&e);
	t_case("IPv4 source 10.1.2.99/24 (the .99 does not count)");
	rule_init(&r, GNIC_ETH_MATCH_SRC_IP, 0x201);
	r.ip_version = 4;
	memcpy(r.src_ip, (uint8_t[]){10, 1, 2, 99}, 4);
	r.src_prefix = 24;
	fl = add(&e, &r);
	dev_eth_expect(&e, f, v4(f, 0x0a01024d, 0x05060708), 0x201, 0);
	dev_eth_expect(&e, f, v4(f, 0x0a010200, 0x05060708), 0x201, 0);
	dev_eth_expect(&e, f, v4(f, 0x0a01034d, 0x05060708), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(&e, f, v4(f, 0x05060708, 0x0a01024d), -1, DEV_ETH_NO_RULE); /* as dst */
	CHECK_GNIC(gnic_eth_rule_remove(fl));

	t_case("IPv4 destination 192.168.4.0/22");
	rule_init(&r, GNIC_ETH_MATCH_DST_IP, 0x202);
	r.ip_version = 4;
	memcpy(r.dst_ip, (uint8_t[]){192, 168, 4, 0}, 4);
	r.dst_prefix = 22;
	fl = add(&e, &r);
	dev_eth_expect(&e, f, v4(f, 0x01020304, 0xc0a80709), 0x202, 0);
	dev_eth_expect(&e, f, v4(f, 0x01020304, 0xc0a80409), 0x202, 0);
	dev_eth_expect(&e, f, v4(f, 0x01020304, 0xc0a80809), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(&e, f, v4(f, 0x01020304, 0xc0a80309), -1, DEV_ETH_NO_RULE);
	CHECK_GNIC(gnic_eth_rule_remove(fl));

	t_case("IPv4 destination, all 32 bits (prefix 0), and source with it");
	rule_init(&r, GNIC_ETH_MATCH_DST_IP | GNIC_ETH_MATCH_SRC_IP, 0x203);
	r.ip_version = 4;
	memcpy(r.dst_ip, (uint8_t[]){192, 168, 4, 9}, 4);
	memcpy(r.src_ip, (uint8_t[]){1, 2, 3, 4}, 4);
	add(&e, &r);
	dev_eth_expect(&e, f, v4(f, 0x01020304, 0xc0a80409), 0x203, 0);
	dev_eth_expect(&e, f, v4(f, 0x01020304, 0xc0a80408), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(&e, f, v4(f, 0x01020305, 0xc0a80409), -1, DEV_ETH_NO_RULE);
	dev_eth_env_close(&e);
}

static uint32_t v6(uint8_t *f, const uint8_t *src, const uint8_t *dst)
{
	return dev_frame6(f, src, dst, 17, 1000, 2000, 40, 3);
}

static void case_ipv6(void)
{
	struct dev_eth_env e;
	struct gnic_eth_rule r;
	struct gnic_eth_flow *fl;
	uint8_t f[256], a[16], b[16];

	dev_eth_env_open(&e);
	t_case("IPv6 source fd00:0:aa::/48");
	rule_init(&r, GNIC_ETH_MATCH_SRC_IP, 0x301);
	r.ip_version = 6;
	memcpy(r.src_ip, six_a, 16);
	r.src_prefix = 48;
	fl = add(&e, &r);
	memcpy(a, six_a, 16);
	a[6] = 0x77, a[15] = 0x33; /* past the /48 */
	dev_eth_expect(&e, f, v6(f, a, six_b), 0x301, 0);
	a[5] ^= 1; /* bit 47 */
	dev_eth_expect(&e, f, v6(f, a, six_b), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(&e, f, v6(f, six_b, six_a), -1, DEV_ETH_NO_RULE); /* as dst */
	CHECK_GNIC(gnic_eth_rule_remove(fl));

	t_case("IPv6 destination fd12:0:0:34::/64");
	rule_init(&r, GNIC_ETH_MATCH_DST_IP, 0x302);
	r.ip_version = 6;
	memcpy(r.dst_ip, six_b, 16);
	r.dst_prefix = 64;
	fl = add(&e, &r);
	memcpy(b, six_b, 16);
	b[15] = 0x55;
	dev_eth_expect(&e, f, v6(f, six_a, b), 0x302, 0);
	b[7] = 0x35; /* another /64 */
	dev_eth_expect(&e, f, v6(f, six_a, b), -1, DEV_ETH_NO_RULE);
	CHECK_GNIC(gnic_eth_rule_remove(fl));

	t_case("IPv6 destination, all 128 bits (prefix 0)");
	r.dst_prefix = 0;
	r.flow_tag = 0x303;
	add(&e, &r);
	dev_eth_expect(&e, f, v6(f, six_a, six_b), 0x303, 0);
	memcpy(b, six_b, 16);
	b[15] ^= 1;
	dev_eth_expect(&e, f, v6(f, six_a, b), -1, DEV_ETH_NO_RULE);
	/* an IPv4 frame is not an IPv6 one */
	dev_eth_expect(&e, f, plain4(f), -1, DEV_ETH_NO_RULE);
	dev_eth_env_close(&e);
}

/* A frame of protocol proto with these ports, IPv4 or IPv6. */
static uint32_t l4f(uint8_t *f, int six, uint8_t proto, uint16_t sport, uint16_t dport)
{
	if (six)
		return dev_frame6(f, six_a, six_b, proto, sport, dport, 30, 4);
	return dev_frame4(f, dev_mac_a, 0x01020304, 0x05060708, proto, sport, dport, 30, 4);
}

/* One port rule: the field (src or dst) of protocol proto over IP six. */
static void port_field(struct dev_eth_env *e, int six, uint8_t proto, int dst, uint32_t tag)
{
	uint8_t other = proto == 17 ? 6 : 17, f[256];
	uint16_t p = dst ? 7000 : 7100, q = dst ? 40000 : 40100; /* the field, the other port */
	struct gnic_eth_rule r;
	struct gnic_eth_flow *fl;

	t_case("IPv%d %s %s port", six ? 6 : 4, proto == 17 ? "UDP" : "TCP",
	       dst ? "destination" : "source");
	rule_init(&r, dst ? GNIC_ETH_MATCH_DST_PORT : GNIC_ETH_MATCH_SRC_PORT, tag);
	r.ip_version = six ? 6 : 4;
	r.l4 = proto;
	if (dst)
		r.dst_port = p;
	else
		r.src_port = p;
	fl = add(e, &r);
	dev_eth_expect(e, f, l4f(f, six, proto, dst ? q : p, dst ? p : q), (int)tag, 0);
	dev_eth_expect(e, f, l4f(f, six, proto, dst ? q : p + 1, dst ? p + 1 : q), -1,
	               DEV_ETH_NO_RULE);
	dev_eth_expect(e, f, l4f(f, six, proto, dst ? p : q, dst ? q : p), -1,
	               DEV_ETH_NO_RULE); /* the other port */
	dev_eth_expect(e, f, l4f(f, six, other, dst ? q : p, dst ? p : q), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(e, f, l4f(f, !six, proto, dst ? q : p, dst ? p : q), -1, DEV_ETH_NO_RULE);
	CHECK_GNIC(gnic_eth_rule_remove(fl));
}

static void case_ports(void)
{
	struct dev_eth_env e;
	uint32_t tag = 0x400;

	dev_eth_env_open(&e);
	for (int six = 0; six < 2; six++)
		for (int proto = 0; proto < 2; proto++)
			for (int dst = 0; dst < 2; dst++)
				port_field(&e, six, proto ? 6 : 17, dst, ++tag);
	dev_eth_env_close(&e);
}

static void case_version(void)
{
	struct dev_eth_env e;
	struct gnic_eth_rule r;
	struct gnic_eth_flow *fl;
	uint8_t f[256];

	dev_eth_env_open(&e);
	t_case("ip_version 6 alone: IPv6 frames, whatever their addresses");
	rule_init(&r, 0, 0x501);
	r.ip_version = 6;
	fl = add(&e, &r);
	dev_eth_expect(&e, f, l4f(f, 1, 17, 1, 2), 0x501, 0);
	dev_eth_expect(&e, f, l4f(f, 1, 6, 1, 2), 0x501, 0);
	dev_eth_expect(&e, f, l4f(f, 0, 17, 1, 2), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(&e, f, raw_frame(f, 0x88b5), -1, DEV_ETH_NO_RULE);
	CHECK_GNIC(gnic_eth_rule_remove(fl));

	t_case("l4 TCP alone over IPv4: TCP frames, whatever their ports");
	rule_init(&r, 0, 0x502);
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_TCP;
	add(&e, &r);
	dev_eth_expect(&e, f, l4f(f, 0, 6, 1, 2), 0x502, 0);
	dev_eth_expect(&e, f, l4f(f, 0, 6, 9, 65535), 0x502, 0);
	dev_eth_expect(&e, f, l4f(f, 0, 17, 1, 2), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(&e, f, l4f(f, 1, 6, 1, 2), -1, DEV_ETH_NO_RULE);
	dev_eth_env_close(&e);
}

static void case_tag(void)
{
	struct dev_eth_env e;
	uint8_t f[256];

	dev_eth_env_open(&e);
	dev_eth_udp_rule(e.q, 2000, 0); /* no tag */
	dev_eth_udp_rule(e.q, 2001, 0xffffff);
	dev_eth_expect(&e, f, l4f(f, 0, 17, 1000, 2000), 0, 0);
	dev_eth_expect(&e, f, l4f(f, 0, 17, 1000, 2001), 0xffffff, 0);
	dev_eth_env_close(&e);
}

static void case_drop(void)
{
	struct dev_eth_env e;
	struct gnic_eth_rule r;
	struct gnic_eth_flow *drop;
	uint8_t f[256];

	dev_eth_env_open(&e);
	rule_init(&r, 0, 0x601); /* every IPv4 UDP frame, priority 1 */
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_UDP;
	r.priority = 1;
	add(&e, &r);
	rule_init(&r, GNIC_ETH_MATCH_DST_PORT, 0); /* UDP port 7, priority 0: dropped */
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_UDP;
	r.dst_port = 7;
	r.action = GNIC_ETH_DROP;
	drop = add(&e, &r);
	dev_eth_expect(&e, f, l4f(f, 0, 17, 1, 7), -1, DEV_ETH_DROP_RULE);
	dev_eth_expect(&e, f, l4f(f, 0, 17, 1, 8), 0x601, 0);
	dev_eth_expect(&e, f, l4f(f, 0, 6, 1, 7), -1, DEV_ETH_NO_RULE); /* TCP: neither */
	CHECK_GNIC(gnic_eth_rule_remove(drop));
	dev_eth_expect(&e, f, l4f(f, 0, 17, 1, 7), 0x601, 0);
	dev_eth_env_close(&e);
}

static struct gnic_eth_flow *prio_rule(struct dev_eth_env *e, uint32_t match, uint16_t prio,
                                       uint32_t tag)
{
	struct gnic_eth_rule r;

	rule_init(&r, match, tag);
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_UDP;
	r.dst_port = 2000;
	memcpy(r.dst_ip, (uint8_t[]){5, 6, 7, 8}, 4);
	r.priority = prio;
	return add(e, &r);
}

static void case_priority(void)
{
	struct dev_eth_env e;
	struct gnic_eth_flow *a, *b, *c, *d;
	uint8_t f[256];
	uint32_t len;

	dev_eth_env_open(&e);
	len = l4f(f, 0, 17, 1000, 2000); /* to 5.6.7.8, UDP port 2000: every rule below */
	t_case("priority 2, then priority 1 made later: 1 takes the frame");
	a = prio_rule(&e, GNIC_ETH_MATCH_DST_PORT, 2, 0x701);
	dev_eth_expect(&e, f, len, 0x701, 0);
	b = prio_rule(&e, GNIC_ETH_MATCH_DST_IP, 1, 0x702);
	dev_eth_expect(&e, f, len, 0x702, 0);
	t_case("priority 3 twice: the first made takes it; priority 0 made last before all");
	c = prio_rule(&e, GNIC_ETH_MATCH_DST_IP | GNIC_ETH_MATCH_DST_PORT, 3, 0x703);
	d = prio_rule(&e, GNIC_ETH_MATCH_DST_PORT, 3, 0x704);
	CHECK_GNIC(gnic_eth_rule_remove(a));
	CHECK_GNIC(gnic_eth_rule_remove(b));
	dev_eth_expect(&e, f, len, 0x703, 0);
	a = prio_rule(&e, 0, 0, 0x705);
	dev_eth_expect(&e, f, len, 0x705, 0);
	t_case("removing rules hands the frames on, down to none");
	CHECK_GNIC(gnic_eth_rule_remove(a));
	dev_eth_expect(&e, f, len, 0x703, 0);
	CHECK_GNIC(gnic_eth_rule_remove(c));
	dev_eth_expect(&e, f, len, 0x704, 0);
	t_case("the last priority, %u, after priority 3", GNIC_ETH_PRIO_MAX);
	b = prio_rule(&e, 0, GNIC_ETH_PRIO_MAX, 0x706);
	dev_eth_expect(&e, f, len, 0x704, 0);
	CHECK_GNIC(gnic_eth_rule_remove(d));
	dev_eth_expect(&e, f, len, 0x706, 0);
	CHECK_GNIC(gnic_eth_rule_remove(b));
	dev_eth_expect(&e, f, len, -1, DEV_ETH_NO_RULE);
	CHECK_RET(gnic_eth_rule_remove(NULL), GNIC_ERR_INVALID);

	t_case("a multicast destination MAC rule goes after every priority (a ConnectX's "
	       "multicast table)");
	{
		static const uint8_t group[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb};
		struct gnic_eth_rule r;

		rule_init(&r, GNIC_ETH_MATCH_DST_MAC, 0x707);
		memcpy(r.dst_mac, group, 6);
		a = add(&e, &r); /* priority 0 */
		b = prio_rule(&e, 0, 9, 0x708);
		len = dev_frame4(f, group, 0x01020304, 0x05060708, 17, 1000, 2000, 30, 7);
		dev_eth_expect(&e, f, len, 0x708, 0);
		CHECK_GNIC(gnic_eth_rule_remove(b));
		dev_eth_expect(&e, f, len, 0x707, 0);
		CHECK_GNIC(gnic_eth_rule_remove(a));
	}
	dev_eth_env_close(&e);
}

static void case_default(void)
{
	struct dev_eth_env e;
	uint8_t f[256];

	dev_eth_env_open(&e);
	dev_eth_expect(&e, f, plain4(f), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(&e, f, l4f(f, 1, 6, 1, 2), -1, DEV_ETH_NO_RULE);
	dev_eth_expect(&e, f, raw_frame(f, 0x88b5), -1, DEV_ETH_NO_RULE);
	dev_eth_udp_rule(e.q, 2001, 1); /* a rule for another port changes nothing */
	dev_eth_expect(&e, f, plain4(f), -1, DEV_ETH_NO_RULE);
	dev_eth_env_close(&e);
}

/* A good rule (IPv4 UDP port 2000, tag 0x801) broken one way: refused with
 * GNIC_ERR_INVALID and a text naming why; nothing installed: a frame to
 * port 2000 still arrives with tag (-1: matches no rule). */
static void refuse(struct dev_eth_env *e, void (*breakit)(struct gnic_eth_rule *), const char *why,
                   int tag)
{
	struct gnic_eth_flow *keep = (struct gnic_eth_flow *)0x1, *f = keep;
	struct gnic_eth_rule r;
	uint8_t fr[256];

	rule_init(&r, GNIC_ETH_MATCH_DST_PORT, 0x801);
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_UDP;
	r.dst_port = 2000;
	breakit(&r);
	CHECK_RET(gnic_eth_rule_add(e->q, &r, &f), GNIC_ERR_INVALID);
	CHECK(f == keep);
	if (!strstr(gnic_last_error(), why))
		T_FAIL("error \"%s\" does not say \"%s\"", gnic_last_error(), why);
	dev_eth_expect(e, fr, l4f(fr, 0, 17, 1000, 2000), tag, DEV_ETH_NO_RULE);
}

static void bad_match(struct gnic_eth_rule *r)
{
	r->match |= 1u << 9;
}
static void bad_version(struct gnic_eth_rule *r)
{
	r->ip_version = 5;
}
static void bad_ip_no_version(struct gnic_eth_rule *r)
{
	r->match |= GNIC_ETH_MATCH_DST_IP;
	r->ip_version = 0;
}
static void bad_prefix4(struct gnic_eth_rule *r)
{
	r->match |= GNIC_ETH_MATCH_SRC_IP;
	r->src_prefix = 33;
}
static void bad_prefix6(struct gnic_eth_rule *r)
{
	r->match |= GNIC_ETH_MATCH_DST_IP;
	r->ip_version = 6;
	r->dst_prefix = 129;
}
static void bad_l4(struct gnic_eth_rule *r)
{
	r->l4 = 99;
}
static void bad_port_no_l4(struct gnic_eth_rule *r)
{
	r->l4 = 0;
}
static void bad_tag(struct gnic_eth_rule *r)
{
	r->flow_tag = 0x1000000;
}
static void bad_priority(struct gnic_eth_rule *r)
{
	r->priority = GNIC_ETH_PRIO_MAX + 1; /* a ConnectX has 16 */
}
static void bad_ethertype(struct gnic_eth_rule *r)
{
	r->match |= GNIC_ETH_MATCH_ETHERTYPE;
	r->ethertype = 0x86dd; /* with ip_version 4 */
}
static void bad_action(struct gnic_eth_rule *r)
{
	r->action = 2;
}

static void case_bad(void)
{
	struct dev_eth_env e;
	struct gnic_eth_flow *f = NULL;
	struct gnic_eth_rule r;

	dev_eth_env_open(&e);
	refuse(&e, bad_match, "unknown match bits", -1);
	refuse(&e, bad_version, "ip_version 5", -1);
	refuse(&e, bad_ip_no_version, "needs ip_version", -1);
	refuse(&e, bad_prefix4, "prefix 33 above 32", -1);
	refuse(&e, bad_prefix6, "prefix 129 above 128", -1);
	refuse(&e, bad_l4, "l4 99", -1);
	refuse(&e, bad_port_no_l4, "port match needs l4", -1);
	refuse(&e, bad_tag, "flow_tag", -1);
	refuse(&e, bad_priority, "priority 16 above 15", -1);
	refuse(&e, bad_action, "unknown action 2", -1);
	refuse(&e, bad_ethertype, "ethertype 0x86dd with ip_version 4", -1);
	rule_init(&r, 0, 0);
	CHECK_RET(gnic_eth_rule_add(NULL, &r, &f), GNIC_ERR_INVALID);
	CHECK_RET(gnic_eth_rule_add(e.q, NULL, &f), GNIC_ERR_INVALID);
	CHECK_RET(gnic_eth_rule_add(e.q, &r, NULL), GNIC_ERR_INVALID);
	CHECK(f == NULL);
	t_case("a rule in place keeps steering after refusals");
	dev_eth_udp_rule(e.q, 2000, 0x802);
	refuse(&e, bad_tag, "flow_tag", 0x802);
	refuse(&e, bad_priority, "priority 16 above 15", 0x802);
	dev_eth_env_close(&e);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"mac", case_mac},           {"ethertype", case_ethertype},
	    {"ipv4", case_ipv4},         {"ipv6", case_ipv6},
	    {"ports", case_ports},       {"version", case_version},
	    {"tag", case_tag},           {"drop", case_drop},
	    {"priority", case_priority}, {"default", case_default},
	    {"bad", case_bad},
	};

	T_RUN_CASES(cases, argc, argv);
	return T_EXIT_PASS;
}
