/* SPDX-License-Identifier: MIT */
/*
 * Ethernet queues from GPU threads, on gnic-emu's loopback port (run it
 * without GNIC_EMU_ETH_IF), pools in GPU memory, in one kernel of one warp:
 *
 *   1. lane 0 sends 32 frames to UDP port 9000 from queue tx (whole frames
 *      in its pool, gnic_dev_eth_send), each its own length and bytes;
 *   2. the warp takes them on queue rx with gnic_dev_eth_rx_burst_warp
 *      (rule: tag 1) until every lane holds one, checks tag, length, flags
 *      and bytes, rewrites the port to 9001 and sends them back from their
 *      buffers with one gnic_dev_eth_send_buf_warp (checksums by the NIC);
 *   3. lane 0 takes the 32 again (tag 2), checks them, returns the
 *      buffers and flushes: every buffer back in the receive queue;
 *   4. every lane pushes one hand-off ring entry, the host consumes 32.
 *
 * Exit 77 without a GPU; 1 with the first failure (lane, step, code).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

#include "gpu_check.h"

#define N 32

struct result {
	int rc, step, lane, bad;
	uint32_t rq_free; /* receive slots posted and not consumed, at the end */
};

__device__ uint32_t frame_len(uint32_t i)
{
	return 60 + i * 41;
}

__device__ uint8_t frame_byte(uint32_t i, uint32_t k)
{
	return (uint8_t)(i * 7 + k * 3);
}

/* Frame i's bytes into f (IPv4/UDP to port, checksums 0). */
__device__ void build(uint8_t *f, uint32_t i, uint16_t port)
{
	uint32_t len = frame_len(i);

	for (uint32_t k = 0; k < len; k++)
		f[k] = frame_byte(i, k);
	f[0] = 0x02; /* unicast destination */
	f[12] = 0x08, f[13] = 0x00, f[14] = 0x45, f[15] = 0;
	f[16] = (uint8_t)((len - 14) >> 8), f[17] = (uint8_t)(len - 14);
	f[20] = f[21] = 0, f[23] = 17, f[24] = f[25] = 0;
	f[34] = (uint8_t)i; /* source port: the frame's number */
	f[35] = 0;
	f[36] = (uint8_t)(port >> 8), f[37] = (uint8_t)port;
	f[38] = (uint8_t)((len - 34) >> 8), f[39] = (uint8_t)(len - 34);
	f[40] = f[41] = 0;
}

/* Payload bytes (past the UDP header) as built. */
__device__ int payload_ok(const uint8_t *f, uint32_t i)
{
	for (uint32_t k = 42; k < frame_len(i); k++)
		if (f[k] != frame_byte(i, k))
			return 0;
	return 1;
}

__device__ void fail(struct result *r, int step, int rc)
{
	if (atomicCAS(&r->rc, 0, rc ? rc : -100) == 0) {
		r->step = step;
		r->lane = (int)(threadIdx.x & 31);
	}
}

__global__ void run(struct gnic_dev_eth *rx, struct gnic_dev_eth *tx, struct gnic_dev_ring *ring,
                    struct result *res)
{
	__shared__ struct gnic_eth_pkt all[N];
	__shared__ int cnt;
	uint32_t lane = threadIdx.x & 31;
	uint64_t end;
	int rc = 0;

	if (lane == 0) {
		cnt = 0;
		for (uint32_t i = 0; i < N && !rc; i++) {
			uint8_t *f = tx->pool + (size_t)i * tx->buf_stride;

			build(f, i, 9000);
			rc =
			    gnic_dev_eth_send(tx, f, tx->pool_lkey, frame_len(i), GNIC_ETH_TX_CSUM);
		}
		if (!rc)
			rc = gnic_dev_eth_flush(tx);
		if (rc)
			fail(res, 1, rc);
	}
	__syncwarp();
	if (res->rc)
		return;
	/* 2: a warp's bursts until each lane holds a frame */
	end = gnic_now_ns() + 5000000000ull;
	while (cnt < N) {
		struct gnic_eth_pkt p;
		int got = gnic_dev_eth_rx_burst_warp(rx, &p);
		unsigned have = __ballot_sync(0xffffffffu, got == 1);
		int base = cnt;

		__syncwarp();
		if (got < 0) {
			fail(res, 2, got);
			return;
		}
		if (got == 1 && base + __popc(have & ((1u << lane) - 1)) < N)
			all[base + __popc(have & ((1u << lane) - 1))] = p;
		__syncwarp();
		if (lane == 0)
			cnt = base + __popc(have) < N ? base + __popc(have) : N;
		__syncwarp();
		if (gnic_now_ns() > end) {
			fail(res, 2, GNIC_DEV_ERR_TIMEOUT);
			return;
		}
	}
	{
		struct gnic_eth_pkt p = all[lane];
		uint32_t i = p.data[34];

		if (p.tag != 1 || i >= N || p.len != frame_len(i) || !payload_ok(p.data, i) ||
		    (p.flags & (GNIC_ETH_RX_L3_OK | GNIC_ETH_RX_L4_OK)) !=
		        (GNIC_ETH_RX_L3_OK | GNIC_ETH_RX_L4_OK))
			fail(res, 2, 0);
		p.data[37] = 9001 & 0xff; /* 9000 -> 9001 */
		p.data[36] = 9001 >> 8;
		p.data[40] = p.data[41] = 0;
		rc = gnic_dev_eth_send_buf_warp(rx, p.buf, p.len, GNIC_ETH_TX_CSUM);
		if (rc)
			fail(res, 2, rc);
	}
	__syncwarp();
	if (res->rc)
		return;
	/* 3 */
	if (lane == 0) {
		uint32_t seen = 0;

		end = gnic_now_ns() + 5000000000ull;
		while (seen < N && !rc) {
			struct gnic_eth_pkt p;
			int n = gnic_dev_eth_rx_burst(rx, &p, 1);

			if (n < 0)
				rc = n;
			if (n == 1) {
				uint32_t i = p.data[34];

				if (p.tag != 2 || i >= N || p.len != frame_len(i) ||
				    !payload_ok(p.data, i) || !(p.flags & GNIC_ETH_RX_L4_OK))
					res->bad++;
				seen++;
				rc = gnic_dev_eth_rx_return(rx, p.buf);
			}
			if (!rc) {
				int t = gnic_dev_eth_tx_poll(rx);

				rc = t < 0 ? t : 0;
			}
			if (gnic_now_ns() > end)
				rc = GNIC_DEV_ERR_TIMEOUT;
		}
		if (!rc)
			rc = gnic_dev_eth_flush(rx);
		if (rc)
			fail(res, 3, rc);
		res->rq_free = (uint32_t)(rx->qp->rq_posted - rx->qp->rq_done);
	}
	__syncwarp();
	/* 4 */
	rc = gnic_dev_ring_push(ring, lane, lane * 2, 7, lane);
	if (rc)
		fail(res, 4, rc);
}

int main(void)
{
	struct gnic_ctx_attr ca;
	struct gnic_ctx *ctx;
	struct gnic_eth_attr ea;
	struct gnic_eth *rx, *tx;
	struct gnic_eth_rule r;
	struct gnic_eth_flow *f;
	struct gnic_ring *ring;
	struct gnic_ring_entry e[N];
	struct result *res;
	uint32_t n, got = 0, mask = 0;
	int ngpu = 0;

	if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
		printf("SKIP: no GPU\n");
		return 77;
	}
	gnic_ctx_attr_init(&ca);
	ca.gpu = 0;
	CK(gnic_ctx_create(&ca, &ctx));
	gnic_eth_attr_init(&ea);
	ea.rx_bufs = 64;
	CK(gnic_eth_create(ctx, &ea, &rx));
	CK(gnic_eth_create(ctx, &ea, &tx));
	CK(gnic_ring_create(ctx, N, 0, &ring)); /* the host consumes after the kernel */
	memset(&r, 0, sizeof(r));
	r.match = GNIC_ETH_MATCH_DST_PORT;
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_UDP;
	r.dst_port = 9000;
	r.flow_tag = 1;
	CK(gnic_eth_rule_add(rx, &r, &f));
	r.dst_port = 9001;
	r.flow_tag = 2;
	CK(gnic_eth_rule_add(rx, &r, &f));
	CKC(cudaHostAlloc((void **)&res, sizeof(*res), cudaHostAllocMapped));
	memset(res, 0, sizeof(*res));
	run<<<1, 32>>>(gnic_eth_dev(rx), gnic_eth_dev(tx), gnic_ring_dev(ring), res);
	CKC(cudaDeviceSynchronize());
	if (res->rc == 0)
		while (got < N) {
			CK(gnic_ring_consume(ring, e, N, 5000000000ull, &n));
			for (uint32_t k = 0; k < n; k++)
				if (e[k].addr < N && e[k].len == e[k].addr * 2 && e[k].tag == 7)
					mask |= 1u << e[k].addr;
			got += n;
		}
	printf("rc %d step %d lane %d bad %d rq_free %u ring %u mask %#x\n", res->rc, res->step,
	       res->lane, res->bad, res->rq_free, got, mask);
	n = res->rc == 0 && res->bad == 0 && res->rq_free == gnic_eth_nbuf(rx) && got == N &&
	    mask == 0xffffffffu;
	if (res->rc) {
		struct gnic_qp_error qe;

		gnic_eth_error(rx, &qe);
		fprintf(stderr, "rx error: %s\n", qe.text);
	}
	cudaFreeHost(res);
	gnic_ring_destroy(ring);
	gnic_eth_destroy(tx);
	gnic_eth_destroy(rx);
	gnic_ctx_destroy(ctx);
	printf("%s\n", n ? "PASS" : "FAIL");
	return n ? 0 : 1;
}
