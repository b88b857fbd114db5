// SPDX-License-Identifier: MIT
/*
 * Checksum offload of libgnic's Ethernet queues on gnic-emu's loopback port.
 * The test computes every checksum itself (RFC 1071, with the RFC 768 /
 * RFC 793 / RFC 8200 pseudo-headers) and compares the frame that arrives
 * byte for byte, checksum fields included:
 *
 *   offload   IPv4/UDP, IPv4/TCP, IPv6/UDP, IPv6/TCP sent with
 *             GNIC_ETH_TX_CSUM (checksum fields 0 and garbage): the NIC
 *             wrote the right checksums; the receive side says L3 and L4 OK
 *   partial   GNIC_ETH_TX_L3_CSUM alone fills the IPv4 header checksum and
 *             leaves the L4 field as sent; GNIC_ETH_TX_L4_CSUM alone the
 *             other way round
 *   verify    frames with correct checksums sent without offload: both OK;
 *             a corrupted IPv4 header checksum: L3 not OK (L4 still OK); a
 *             corrupted TCP or UDP checksum, or payload byte: L4 not OK;
 *             a UDP/IPv4 checksum of 0 ("none") is OK
 */
#include <string.h>

#include "dev_eth.h"

#define TAG4 0x11
#define TAG6 0x12

static uint32_t sum16(const uint8_t *p, uint32_t n, uint32_t s)
{
	for (uint32_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Where the L4 header starts, its length and its checksum field. */
static void l4_geometry(const uint8_t *f, uint32_t len, uint32_t *off, uint32_t *n, uint32_t *field)
{
	int six = f[12] == 0x86;
	uint8_t proto = six ? f[20] : f[23];

	*off = six ? 54 : 34;
	*n = len - *off;
	*field = *off + (proto == 6 ? 16 : 6);
}

/* The right checksums written into f (len bytes). */
static void csum_fill(uint8_t *f, uint32_t len, int l3, int l4)
{
	int six = f[12] == 0x86;
	uint32_t off, n, field, s;
	uint16_t c;

	if (l3 && !six) {
		dev_put16(f + 24, 0);
		dev_put16(f + 24, (uint16_t)~fold(sum16(f + 14, 20, 0)));
	}
	if (!l4)
		return;
	l4_geometry(f, len, &off, &n, &field);
	dev_put16(f + field, 0);
	s = six ? sum16(f + 22, 32, 0) : sum16(f + 26, 8, 0); /* addresses */
	s += (six ? f[20] : f[23]) + n;
	c = (uint16_t)~fold(sum16(f + off, n, s));
	if (c == 0 && (six ? f[20] : f[23]) == 17)
		c = 0xffff; /* UDP sends 0 as 0xffff */
	dev_put16(f + field, c);
}

static uint32_t flags_of(int six, uint8_t proto, int l3_ok, int l4_ok)
{
	return (six ? GNIC_ETH_RX_IPV6 : GNIC_ETH_RX_IPV4) |
	       (proto == 17 ? GNIC_ETH_RX_UDP : GNIC_ETH_RX_TCP) | (l3_ok ? GNIC_ETH_RX_L3_OK : 0) |
	       (l4_ok ? GNIC_ETH_RX_L4_OK : 0);
}

static uint32_t make(uint8_t *f, int six, uint8_t proto, uint32_t pay, uint32_t seed)
{
	static const uint8_t s6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	static const uint8_t d6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

	if (six)
		return dev_frame6(f, s6, d6, proto, 5000, 9000, pay, seed);
	return dev_frame4(f, dev_mac_a, 0x0a000002, 0x0a000001, proto, 5000, 9000, pay, seed);
}

/* Send f with flags; it must arrive equal to want, with flags rx. */
static void send_check(struct dev_eth_env *e, const uint8_t *f, const uint8_t *want, uint32_t len,
                       uint32_t flags, uint32_t rx)
{
	struct gnic_eth_pkt p;

	CHECK_DEV(gnic_dev_eth_send_hdr(e->dtx, f, len, 0, 0, 0, flags));
	CHECK_GE(gnic_dev_eth_tx_poll(e->dtx), 0);
	p = dev_eth_rx_one(e->d);
	CHECK_EQ(p.tag, f[12] == 0x86 ? (uint32_t)TAG6 : (uint32_t)TAG4);
	CHECK_EQ(p.len, len);
	CHECK_MEM(p.data, want, len);
	CHECK_EQ(p.flags, rx);
	CHECK_DEV(gnic_dev_eth_rx_return(e->d, p.buf));
}

static void env(struct dev_eth_env *e)
{
	struct gnic_eth_rule r;
	struct gnic_eth_flow *fl;

	dev_eth_env_open(e);
	for (int six = 0; six < 2; six++) { /* every IPv4 / IPv6 frame */
		memset(&r, 0, sizeof(r));
		r.ip_version = six ? 6 : 4;
		r.flow_tag = six ? TAG6 : TAG4;
		CHECK_GNIC(gnic_eth_rule_add(e->q, &r, &fl));
	}
}

static void case_offload(void)
{
	struct dev_eth_env e;
	uint8_t f[256], want[256];

	env(&e);
	for (int six = 0; six < 2; six++) {
		for (int tcp = 0; tcp < 2; tcp++) {
			uint8_t proto = tcp ? 6 : 17;

			t_case("IPv%d/%s: offload fills both checksums", six ? 6 : 4,
			       tcp ? "TCP" : "UDP");
			for (uint32_t pay = 0; pay < 160; pay += 13) { /* odd and even lengths */
				uint32_t len = make(f, six, proto, pay, pay), off, n, field;

				memcpy(want, f, len);
				csum_fill(want, len, 1, 1);
				l4_geometry(f, len, &off, &n, &field);
				if (pay % 2) { /* garbage where the checksums go: overwritten */
					f[field] = 0xde, f[field + 1] = 0xad;
					if (!six)
						f[24] = 0xbe, f[25] = 0xef;
				}
				send_check(&e, f, want, len, GNIC_ETH_TX_CSUM,
				           flags_of(six, proto, 1, 1));
			}
		}
	}
	dev_eth_env_close(&e);
}

static void case_partial(void)
{
	struct dev_eth_env e;
	uint8_t f[256], want[256];
	uint32_t len;

	env(&e);
	for (int tcp = 0; tcp < 2; tcp++) {
		uint8_t proto = tcp ? 6 : 17;
		uint32_t off, n, field;

		t_case("IPv4/%s: L3 offload alone", tcp ? "TCP" : "UDP");
		len = make(f, 0, proto, 77, 5);
		l4_geometry(f, len, &off, &n, &field);
		f[field] = 0x12, f[field + 1] = 0x34; /* a wrong L4 checksum, kept */
		memcpy(want, f, len);
		csum_fill(want, len, 1, 0);
		send_check(&e, f, want, len, GNIC_ETH_TX_L3_CSUM, flags_of(0, proto, 1, 0));

		t_case("IPv4/%s: L4 offload alone", tcp ? "TCP" : "UDP");
		len = make(f, 0, proto, 78, 6);
		memcpy(want, f, len);
		csum_fill(want, len, 0, 1); /* IPv4 header checksum left 0: wrong */
		send_check(&e, f, want, len, GNIC_ETH_TX_L4_CSUM, flags_of(0, proto, 0, 1));
	}
	dev_eth_env_close(&e);
}

static void case_verify(void)
{
	struct dev_eth_env e;
	uint8_t f[256];
	uint32_t len, off, n, field;

	env(&e);
	for (int six = 0; six < 2; six++) {
		for (int tcp = 0; tcp < 2; tcp++) {
			uint8_t proto = tcp ? 6 : 17;

			t_case("IPv%d/%s: right checksums without offload, then each broken",
			       six ? 6 : 4, tcp ? "TCP" : "UDP");
			len = make(f, six, proto, 101, 9);
			csum_fill(f, len, 1, 1);
			send_check(&e, f, f, len, 0, flags_of(six, proto, 1, 1));
			l4_geometry(f, len, &off, &n, &field);
			f[field + 1] ^= 0x01;
			send_check(&e, f, f, len, 0, flags_of(six, proto, 1, 0));
			f[field + 1] ^= 0x01;
			f[len - 1] ^= 0x40; /* a payload byte */
			send_check(&e, f, f, len, 0, flags_of(six, proto, 1, 0));
			f[len - 1] ^= 0x40;
			if (!six) {
				f[25] ^= 0x10; /* the IPv4 header checksum */
				send_check(&e, f, f, len, 0, flags_of(six, proto, 0, 1));
				f[25] ^= 0x10;
				f[22] = 63; /* the TTL, under the header checksum only */
				send_check(&e, f, f, len, 0, flags_of(six, proto, 0, 1));
			}
		}
	}
	t_case("UDP/IPv4 checksum 0: none sent, OK");
	len = make(f, 0, 17, 50, 3);
	csum_fill(f, len, 1, 0);
	send_check(&e, f, f, len, 0, flags_of(0, 17, 1, 1));
	dev_eth_env_close(&e);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"offload", case_offload},
	    {"partial", case_partial},
	    {"verify", case_verify},
	};

	T_RUN_CASES(cases, argc, argv);
	return T_EXIT_PASS;
}
