/* SPDX-License-Identifier: MIT */
/*
 * Frame parsing and Internet checksums, as a ConnectX parses what it
 * receives (for steering and the receive CQE's header types and checksum
 * bits) and fills in what a send WQE's Ethernet segment asks for.
 *
 * Parsed: Ethernet II with at most one 802.1Q tag, IPv4 (any header
 * length; only the first fragment carries an L4 header), IPv6 without
 * extension headers, TCP and UDP. Everything else is "no L3" / "no L4".
 */
#include <string.h>

#include "eth.h"

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* One's-complement sum of n bytes (an odd last byte padded with zero). */
static uint32_t sum_bytes(const uint8_t *p, uint32_t n, uint32_t sum)
{
	for (; n >= 2; p += 2, n -= 2)
		sum += rd16(p);
	if (n)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The pseudo header of an L4 segment of len bytes. */
static uint32_t pseudo_sum(const struct emu_pkt *p, uint32_t len)
{
	const uint8_t *ip = p->data + p->l3_off;
	uint32_t sum = 0;

	if (p->l3 == EMU_L3_IPV4)
		sum = sum_bytes(ip + 12, 8, 0); /* source and destination */
	else
		sum = sum_bytes(ip + 8, 32, 0);
	return sum + p->proto + (len & 0xffff) + (len >> 16);
}

static uint32_t l3_end(const struct emu_pkt *p)
{
	return p->l3_off + p->l3_len;
}

static bool l4_sum_ok(const struct emu_pkt *p)
{
	uint32_t n = l3_end(p) - p->l4_off;

	/* over IPv4 a UDP checksum of 0 means "none sent" */
	if (p->l4 == EMU_L4_UDP && p->l3 == EMU_L3_IPV4 && rd16(p->data + p->l4_off + 6) == 0)
		return true;
	return fold(sum_bytes(p->data + p->l4_off, n, pseudo_sum(p, n))) == 0xffff;
}

static void parse_l4(struct emu_pkt *p)
{
	uint32_t end = l3_end(p), off = p->l4_off;

	if (p->proto == EMU_IPPROTO_TCP && off + 20 <= end) {
		uint32_t hl = (uint32_t)(p->data[off + 12] >> 4) * 4;

		if (hl < 20 || off + hl > end)
			return;
		p->l4 = EMU_L4_TCP;
		p->tcp_flags = p->data[off + 13];
		p->l4_payload = end - off - hl;
	} else if (p->proto == EMU_IPPROTO_UDP && off + 8 <= end) {
		p->l4 = EMU_L4_UDP;
	}
}

static void parse_ipv4(struct emu_pkt *p)
{
	const uint8_t *ip = p->data + p->l3_off;
	uint32_t room = p->len - p->l3_off, hl, total;

	if (room < 20 || ip[0] >> 4 != 4)
		return;
	hl = (uint32_t)(ip[0] & 0xf) * 4;
	total = rd16(ip + 2);
	if (hl < 20 || hl > room || total < hl)
		return;
	p->l3 = EMU_L3_IPV4;
	p->l3_len = total < room ? total : room;
	p->l3_ok = fold(sum_bytes(ip, hl, 0)) == 0xffff;
	p->proto = ip[9];
	p->l4_off = p->l3_off + hl;
	if (rd16(ip + 6) & 0x1fff) /* a later fragment: no L4 header */
		return;
	parse_l4(p);
	/* a first fragment's checksum covers data that is not here */
	if (p->l4 != EMU_L4_NONE && !(rd16(ip + 6) & 0x2000))
		p->l4_ok = l4_sum_ok(p);
}

static void parse_ipv6(struct emu_pkt *p)
{
	const uint8_t *ip = p->data + p->l3_off;
	uint32_t room = p->len - p->l3_off, total;

	if (room < 40 || ip[0] >> 4 != 6)
		return;
	total = 40u + rd16(ip + 4);
	p->l3 = EMU_L3_IPV6;
	p->l3_len = total < room ? total : room;
	p->l3_ok = true; /* no header checksum */
	p->proto = ip[6];
	p->l4_off = p->l3_off + 40;
	parse_l4(p);
	if (p->l4 != EMU_L4_NONE)
		p->l4_ok = l4_sum_ok(p);
}

void emu_pkt_parse(struct emu_pkt *p, const uint8_t *frame, uint32_t len)
{
	memset(p, 0, sizeof(*p));
	p->data = frame;
	p->len = len;
	if (len < EMU_ETH_HLEN)
		return;
	p->ethertype = rd16(frame + 12);
	p->l3_off = EMU_ETH_HLEN;
	if (p->ethertype == EMU_ETH_P_VLAN && len >= EMU_ETH_HLEN + 4) {
		p->vlan = true;
		p->vlan_tci = rd16(frame + 14);
		p->ethertype = rd16(frame + 16);
		p->l3_off += 4;
	}
	if (p->ethertype == EMU_ETH_P_IPV4)
		parse_ipv4(p);
	else if (p->ethertype == EMU_ETH_P_IPV6)
		parse_ipv6(p);
}

void emu_pkt_fill_csum(uint8_t *frame, uint32_t len, bool l3, bool l4)
{
	struct emu_pkt p;
	uint32_t n, field;
	uint16_t sum;

	emu_pkt_parse(&p, frame, len);
	if (l3 && p.l3 == EMU_L3_IPV4) {
		uint8_t *ip = frame + p.l3_off;
		uint32_t hl = (uint32_t)(ip[0] & 0xf) * 4;

		wr16(ip + 10, 0);
		wr16(ip + 10, (uint16_t)~fold(sum_bytes(ip, hl, 0)));
	}
	if (!l4 || p.l4 == EMU_L4_NONE)
		return;
	field = p.l4_off + (p.l4 == EMU_L4_TCP ? 16 : 6);
	n = l3_end(&p) - p.l4_off;
	wr16(frame + field, 0);
	sum = (uint16_t)~fold(sum_bytes(frame + p.l4_off, n, pseudo_sum(&p, n)));
	if (p.l4 == EMU_L4_UDP && sum == 0)
		sum = 0xffff; /* 0 would mean "no checksum" */
	wr16(frame + field, sum);
}
