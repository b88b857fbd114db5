/* SPDX-License-Identifier: MIT */
/*
 * Set-up shared by the Ethernet queue tests (test_dev_eth*.c): queues on
 * gnic-emu's loopback port (what one sends is steered back into the
 * device), frames built byte by byte, one frame taken with a bound, and the
 * check that a frame sent reaches the queue with a tag or is counted as
 * dropped.
 */
#ifndef GNIC_TEST_DEV_ETH_H
#define GNIC_TEST_DEV_ETH_H

#include "dev_common.h"

extern const uint8_t dev_mac_a[6], dev_mac_b[6];

/* An exclusive queue of nbuf buffers and sq_depth WQEs, 5 s bounds. */
struct gnic_eth *dev_eth_open(struct gnic_ctx *ctx, uint32_t nbuf, uint32_t sq_depth);
/* A rule for IPv4 UDP destination port with tag. */
struct gnic_eth_flow *dev_eth_udp_rule(struct gnic_eth *eth, uint16_t port, uint32_t tag);

void dev_put16(uint8_t *p, uint32_t v);
/* An IPv4 frame (UDP 17, or TCP 6) of pay payload bytes from src to dst,
 * source MAC dev_mac_b; checksums 0 (the NIC fills them). Its length. */
uint32_t dev_frame4(uint8_t *f, const uint8_t *dmac, uint32_t src, uint32_t dst, uint8_t proto,
                    uint16_t sport, uint16_t dport, uint32_t pay, uint32_t seed);
/* An IPv6 frame (UDP 17, or TCP 6) from src to dst (16 bytes each),
 * dev_mac_b to dev_mac_a, checksum 0. Its length. */
uint32_t dev_frame6(uint8_t *f, const uint8_t *src, const uint8_t *dst, uint8_t proto,
                    uint16_t sport, uint16_t dport, uint32_t pay, uint32_t seed);

/* Take exactly one frame (fails after 5 s). */
struct gnic_eth_pkt dev_eth_rx_one(struct gnic_dev_eth *d);
void dev_eth_stats(struct gnic_eth *e, struct gnic_eth_stats *s);
/* Wait (5 s at most) until n more frames than s0 says have met their fate
 * (delivered, or dropped for a counted reason): rx_frames alone counts a
 * frame as it reaches steering, before its fate is counted. */
void dev_eth_wait_frames(struct gnic_eth *e, const struct gnic_eth_stats *s0, uint64_t n);

/* A receiving queue q and a sending queue tx (no rule feeds it). */
struct dev_eth_env {
	struct gnic_ctx *ctx;
	struct gnic_eth *q, *tx;
	struct gnic_dev_eth *d, *dtx;
};
void dev_eth_env_open(struct dev_eth_env *e);
void dev_eth_env_close(struct dev_eth_env *e);

enum dev_eth_fate { DEV_ETH_NO_RULE, DEV_ETH_DROP_RULE };
/* Send f (len bytes, checksums filled by the NIC) from tx: it must arrive
 * in q byte for byte with tag (tag < 0: be counted as fate, delivered
 * nowhere). */
void dev_eth_expect(struct dev_eth_env *e, const uint8_t *f, uint32_t len, int tag,
                    enum dev_eth_fate fate);

#endif
