/* SPDX-License-Identifier: MIT */
/*
 * The device code of the two Ethernet examples, C and CUDA from one source
 * (eth_echo.c / eth_count.c run it on CPU threads, eth_echo_gpu.cu /
 * eth_count_gpu.cu in a kernel):
 *
 *   eth_echo_run   a UDP echo: take a burst, turn each IPv4/UDP frame
 *                  around (MAC, IP addresses and UDP ports swapped, the
 *                  checksums left to the NIC), send the burst back from
 *                  the same buffers
 *   eth_count_run  a counter: frames counted by flow tag, each reported to
 *                  the host through the hand-off ring, buffers returned
 *   eth_send_run   eth_count's traffic: UDP frames to four ports, built in
 *                  pool buffers, sent alternately whole and as inline
 *                  headers + payload, checksums by the NIC
 *
 * Both run until the host sets ctl->stop, publishing their counters in ctl
 * (host memory the host reads while they run).
 */
#ifndef GNIC_EXAMPLE_ETH_APPS_H
#define GNIC_EXAMPLE_ETH_APPS_H

#include <gnic/gnic_dev.cuh>

#if defined(__CUDACC__) /* what both the host and the device side compute */
#define ETH_APP_HD static __host__ __device__ inline
#else
#define ETH_APP_HD static inline
#endif

#define ETH_APP_BURST 32
#define ETH_APP_TAGS  8

struct eth_ctl {
	uint64_t stop;               /* host: 1 = finish */
	uint64_t echoed;             /* frames sent back / counted */
	uint64_t bad;                /* frames refused (not IPv4/UDP, wrong tag, checksum not OK) */
	uint64_t tags[ETH_APP_TAGS]; /* count: frames by flow tag (tag < ETH_APP_TAGS) */
	int32_t rc;                  /* the first device error, 0 = none */
	uint32_t want_tag;           /* echo: the flow tag every frame must carry */
};

GNIC_DEVFN void eth_app_swap(uint8_t *a, uint8_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint8_t t = a[i];

		a[i] = b[i];
		b[i] = t;
	}
}

/* Turn an IPv4/UDP frame around in place; 0 if it is not one. */
GNIC_DEVFN int eth_app_turn(uint8_t *f, uint32_t len)
{
	uint32_t ihl;

	if (len < 42 || f[12] != 0x08 || f[13] != 0x00 || (f[14] >> 4) != 4)
		return 0;
	ihl = (uint32_t)(f[14] & 0xf) * 4;
	if (f[23] != 17 || 14 + ihl + 8 > len)
		return 0;
	eth_app_swap(f, f + 6, 6);                       /* MACs */
	eth_app_swap(f + 26, f + 30, 4);                 /* IPv4 addresses */
	eth_app_swap(f + 14 + ihl, f + 14 + ihl + 2, 2); /* UDP ports */
	f[24] = f[25] = 0;                               /* the NIC fills both checksums */
	f[14 + ihl + 6] = f[14 + ihl + 7] = 0;
	return 1;
}

GNIC_DEVFN void eth_app_publish(volatile struct eth_ctl *ctl, uint64_t echoed, uint64_t bad)
{
	gnic_store_sys64((void *)&ctl->bad, bad);
	gnic_store_sys64((void *)&ctl->echoed, echoed);
}

GNIC_DEVFN void eth_app_fail(volatile struct eth_ctl *ctl, int rc)
{
	gnic_store_sys32((void *)&ctl->rc, (uint32_t)rc);
}

/* The echo loop (one thread). */
GNIC_DEVFN void eth_echo_run(struct gnic_dev_eth *eth, volatile struct eth_ctl *ctl)
{
	struct gnic_eth_pkt pk[ETH_APP_BURST];
	uint64_t echoed = 0, bad = 0;
	uint32_t want = ctl->want_tag;
	int rc = 0;

	while (!gnic_load_sys64((const void *)&ctl->stop)) {
		int n = gnic_dev_eth_rx_burst(eth, pk, ETH_APP_BURST);
		uint32_t out = 0;

		if (n < 0) {
			rc = n;
			break;
		}
		for (int i = 0; i < n; i++) {
			int ok = pk[i].tag == want && (pk[i].flags & GNIC_ETH_RX_L4_OK) &&
			         eth_app_turn(pk[i].data, pk[i].len);

			if (ok) {
				pk[out++] = pk[i];
			} else {
				bad++;
				rc = gnic_dev_eth_rx_return(eth, pk[i].buf);
			}
		}
		if (rc == 0 && out)
			rc = gnic_dev_eth_send_burst(eth, pk, out, GNIC_ETH_TX_CSUM);
		if (rc == 0) {
			int r = gnic_dev_eth_tx_poll(eth);

			rc = r < 0 ? r : 0;
		}
		if (rc)
			break;
		echoed += out;
		if (n)
			eth_app_publish(ctl, echoed, bad);
		else /* idle: what was sent goes out and its buffers come back */
			rc = gnic_dev_eth_flush(eth);
		if (rc)
			break;
	}
	if (rc == 0)
		rc = gnic_dev_eth_flush(eth);
	eth_app_publish(ctl, echoed, bad);
	if (rc)
		eth_app_fail(ctl, rc);
}

/* The counter loop (one thread): every frame counted by its flow tag and
 * reported through ring (tag, length, the count so far), then returned. */
GNIC_DEVFN void eth_count_run(struct gnic_dev_eth *eth, struct gnic_dev_ring *ring,
                              volatile struct eth_ctl *ctl)
{
	struct gnic_eth_pkt pk[ETH_APP_BURST];
	uint64_t counted = 0, bad = 0;
	int rc = 0;

	while (!rc && !gnic_load_sys64((const void *)&ctl->stop)) {
		uint32_t bufs[ETH_APP_BURST];
		int n = gnic_dev_eth_rx_burst(eth, pk, ETH_APP_BURST);

		if (n < 0) {
			rc = n;
			break;
		}
		for (int i = 0; i < n && !rc; i++) {
			uint32_t t = pk[i].tag < ETH_APP_TAGS ? pk[i].tag : 0;

			if (!(pk[i].flags & GNIC_ETH_RX_L4_OK))
				bad++;
			ctl->tags[t]++;
			counted++;
			rc = gnic_dev_ring_push(ring, (uint64_t)(uintptr_t)pk[i].data, pk[i].len,
			                        pk[i].tag, counted);
			bufs[i] = pk[i].buf;
		}
		if (!rc && n)
			rc = gnic_dev_eth_rx_return_burst(eth, bufs, (uint32_t)n);
		if (n)
			eth_app_publish(ctl, counted, bad);
	}
	eth_app_publish(ctl, counted, bad);
	if (rc)
		eth_app_fail(ctl, rc);
}

/* eth_send_run's frame i: UDP destination port ETH_APP_PORT0 + i % 4 and
 * payload length eth_app_payload(i). */
#define ETH_APP_PORT0 7001
ETH_APP_HD uint32_t eth_app_payload(uint64_t i)
{
	return 18 + (uint32_t)((i * 37) % 983);
}

/* Frame i's 42 bytes of headers (checksums 0: the NIC fills them). */
GNIC_DEVFN void eth_app_headers(uint8_t *h, uint64_t i)
{
	const uint8_t proto[34] = {0x02, 0,    0, 0, 0,  0x01, 0x02, 0, 0,  0,  0, 0x02,
	                           0x08, 0x00, /* MACs, IPv4 */
	                           0x45, 0,    0, 0, 0,  0,    0x40, 0, 64, 17, 0, 0, /* IPv4 ... */
	                           10,   0,    0, 2, 10, 0,    0,    1}; /* 10.0.0.2 > .1 */
	uint32_t pay = eth_app_payload(i), ip_len = 20 + 8 + pay;
	uint16_t dport = (uint16_t)(ETH_APP_PORT0 + i % 4);

	for (int k = 0; k < 34; k++)
		h[k] = proto[k];
	h[16] = (uint8_t)(ip_len >> 8);
	h[17] = (uint8_t)ip_len;
	h[34] = 5000 >> 8; /* UDP source port 5000 */
	h[35] = 5000 & 0xff;
	h[36] = (uint8_t)(dport >> 8);
	h[37] = (uint8_t)dport;
	h[38] = (uint8_t)((8 + pay) >> 8);
	h[39] = (uint8_t)(8 + pay);
	h[40] = h[41] = 0;
}

/* Send count frames (one thread). Frame i is built in pool buffer i % nbuf
 * (a send-only queue: its buffers, posted to a receive queue no rule feeds,
 * are free to use); even frames go as 42 inline header bytes + the payload
 * in the buffer, odd ones whole. Steered frames (ports 0 and 1 of four)
 * stay at most 256 ahead of peer->echoed, the counter's count. */
GNIC_DEVFN void eth_send_run(struct gnic_dev_eth *eth, volatile struct eth_ctl *ctl,
                             volatile struct eth_ctl *peer, uint64_t count)
{
	uint64_t steered = 0;
	int rc = 0;

	for (uint64_t i = 0; i < count && !rc; i++) {
		uint32_t buf = (uint32_t)(i % eth->nbuf), pay = eth_app_payload(i);
		uint8_t *f = eth->pool + (size_t)buf * eth->buf_stride;
		uint64_t iova = eth->pool_iova + (uint64_t)buf * eth->buf_stride;
		struct gnic_wait w;

		if (buf == 0 && i) /* the buffers' earlier frames are out */
			rc = gnic_dev_eth_flush(eth);
		gnic_wait_init(&w, eth->qp->timeout_ns);
		while (!rc && steered > gnic_load_sys64((const void *)&peer->echoed) + 256)
			if (gnic_wait_expired(&w))
				rc = GNIC_DEV_ERR_TIMEOUT;
		if (rc)
			break;
		eth_app_headers(f, i);
		for (uint32_t k = 0; k < pay; k++)
			f[42 + k] = (uint8_t)(i * 13 + k);
		if (i % 2 == 0) {
			uint8_t h[42];

			eth_app_headers(h, i);
			rc = gnic_dev_eth_send_hdr(eth, h, 42, iova + 42, eth->pool_lkey, pay,
			                           GNIC_ETH_TX_CSUM);
		} else {
			rc = gnic_dev_eth_send(eth, f, eth->pool_lkey, 42 + pay, GNIC_ETH_TX_CSUM);
		}
		if (!rc && i % 4 < 2)
			steered++;
		if (!rc) {
			int r = gnic_dev_eth_tx_poll(eth);

			rc = r < 0 ? r : 0;
		}
		eth_app_publish(ctl, i + 1, 0);
	}
	if (!rc)
		rc = gnic_dev_eth_flush(eth);
	if (rc)
		eth_app_fail(ctl, rc);
}

#endif /* GNIC_EXAMPLE_ETH_APPS_H */
