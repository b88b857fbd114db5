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
 *   errors    bad attributes, rules and device arguments: clear errors,
 *             nothing changed
 */
#include <string.h>

#include "dev_eth.h"

#define RX_TAG 0x77
#define PORT   9000

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
	struct gnic_ctx *ctx = dev_ctx_open();
	struct gnic_eth *rx = dev_eth_open(ctx, 64, 256), *tx = dev_eth_open(ctx, 64, 256);
	struct gnic_dev_eth *drx = gnic_eth_dev(rx), *dtx = gnic_eth_dev(tx);
	uint8_t *pool = gnic_eth_pool_host(tx), want[2048];
	uint32_t stride = gnic_eth_buf_stride(tx);

	CHECK(pool != NULL);
	CHECK_EQ(drx->magic, GNIC_DEV_ETH_MAGIC);
	CHECK_EQ(gnic_eth_nbuf(rx), 64u);
	dev_eth_udp_rule(rx, PORT, RX_TAG);
	for (uint32_t i = 0; i < 60; i++) {
		uint32_t pay = 1 + (i * 97) % 1400, len;
		uint8_t *f =
		    pool + (size_t)(i % 32) * stride; /* tx's buffers: no rule feeds them */
		struct gnic_eth_pkt p;

		len = dev_frame4(want, dev_mac_a, 0x0a000002, 0x0a000001, 17, 5000, PORT, pay, i);
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
		p = dev_eth_rx_one(drx);
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
		uint32_t len =
		    dev_frame4(want, dev_mac_a, 0x0a000002, 0x0a000001, 17, 5000, PORT, 100, 7);
		struct gnic_eth_pkt p;

		want[40] = want[41] = 0xff; /* a wrong UDP checksum */
		CHECK_DEV(gnic_dev_eth_send_hdr(dtx, want, len, 0, 0, 0, 0));
		p = dev_eth_rx_one(drx);
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
	struct gnic_ctx *ctx = dev_ctx_open();
	struct gnic_eth *q = dev_eth_open(ctx, 8, 64), *tx = dev_eth_open(ctx, 8, 64);
	struct gnic_dev_eth *d = gnic_eth_dev(q), *dtx = gnic_eth_dev(tx);
	uint8_t want[2048];
	uint32_t seen[8] = {0};

	CHECK_EQ(gnic_eth_nbuf(q), 8u);
	CHECK(d->qp->sq_wqe_cnt <= 128);
	dev_eth_udp_rule(q, PORT, 1);
	dev_eth_udp_rule(q, PORT + 1, 2);
	for (uint32_t i = 0; i < 300; i++) {
		uint32_t len = dev_frame4(want, dev_mac_a, 0x0a000002, 0x0a000001, 17, 5000, PORT,
		                          20 + i % 180, i);
		struct gnic_eth_pkt p, back;

		CHECK_DEV(gnic_dev_eth_send_hdr(dtx, want, len, 0, 0, 0, GNIC_ETH_TX_CSUM));
		CHECK_GE(gnic_dev_eth_tx_poll(dtx), 0);
		p = dev_eth_rx_one(d);
		CHECK_EQ(p.tag, 1u);
		check_frame(&p, want, len);
		seen[p.buf]++;
		dev_put16(p.data + 36, PORT + 1);
		dev_put16(want + 36, PORT + 1);
		CHECK_DEV(gnic_dev_eth_send_buf(d, p.buf, p.len, GNIC_ETH_TX_CSUM));
		back = dev_eth_rx_one(d);
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
	struct gnic_ctx *ctx = dev_ctx_open();
	struct gnic_eth *q = dev_eth_open(ctx, 8, 64), *tx = dev_eth_open(ctx, 8, 64);
	struct gnic_dev_eth *d = gnic_eth_dev(q), *dtx = gnic_eth_dev(tx);
	struct gnic_eth_stats s0, s1;
	struct gnic_eth_pkt p[32];
	uint8_t f[256];
	uint32_t len = dev_frame4(f, dev_mac_a, 0x0a000002, 0x0a000001, 17, 5000, PORT, 64, 1),
	         bufs[8];
	int n;

	dev_eth_udp_rule(q, PORT, RX_TAG);
	dev_eth_stats(q, &s0);
	for (int i = 0; i < 20; i++)
		CHECK_DEV(gnic_dev_eth_send_hdr(dtx, f, len, 0, 0, 0, GNIC_ETH_TX_CSUM));
	CHECK_DEV(gnic_dev_eth_flush(dtx));
	dev_eth_wait_frames(q, &s0, 20);
	dev_eth_stats(q, &s1);
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
	p[0] = dev_eth_rx_one(d);
	CHECK_EQ(p[0].len, len);
	dev_eth_stats(q, &s1);
	CHECK_EQ(s1.rx_out_of_buffer - s0.rx_out_of_buffer, 12u);
	gnic_eth_destroy(tx);
	gnic_eth_destroy(q);
	gnic_ctx_destroy(ctx);
}

static void case_errors(void)
{
	struct gnic_ctx *ctx = dev_ctx_open();
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

	q = dev_eth_open(ctx, 4, 64);
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
	    {"frames", case_frames},
	    {"laps", case_laps},
	    {"oob", case_oob},
	    {"errors", case_errors},
	};

	T_RUN_CASES(cases, argc, argv);
	return T_EXIT_PASS;
}
