/* SPDX-License-Identifier: MIT */
/*
 * Raw Ethernet and the GPU-to-CPU hand-off ring: the state device threads
 * work on (plain C, shared by libgnic, which fills it, and the data path in
 * gnic_dev_eth.cuh).
 *
 * struct gnic_dev_eth: one Ethernet queue (gnic_eth_create()): a RAW_PACKET
 * QP, whose SQ, doorbells and CQs are a struct gnic_dev_qp like an RC QP's,
 * plus its receive buffer pool: nbuf buffers of buf_stride bytes, one per
 * receive queue slot. Receive slot i holds whichever buffer was returned
 * into it (rq_buf_of[i]); a buffer sent with gnic_dev_eth_send_buf() goes
 * back to the receive queue by itself once its send completed (tx_mark).
 *
 * struct gnic_dev_ring: the hand-off ring (gnic_ring_create()): entries in
 * host memory, filled by device threads and consumed in order by one host
 * thread, which frees them by advancing *tail.
 */
#ifndef GNIC_DEV_ETH_H
#define GNIC_DEV_ETH_H

#include <stdint.h>

#include "gnic_dev.h"

#define GNIC_DEV_ETH_MAGIC  0x67657468u /* "geth" */
#define GNIC_DEV_RING_MAGIC 0x6772696eu /* "grin" */

/* What a receive completion says about its frame (struct gnic_eth_pkt.flags),
 * from the CQE's header types and checksum bits. */
enum {
	GNIC_ETH_RX_IPV4 = 1 << 0,
	GNIC_ETH_RX_IPV6 = 1 << 1,
	GNIC_ETH_RX_UDP = 1 << 2,
	GNIC_ETH_RX_TCP = 1 << 3,
	GNIC_ETH_RX_L3_OK = 1 << 4, /* IPv4 header checksum verified by the NIC */
	GNIC_ETH_RX_L4_OK = 1 << 5, /* TCP/UDP checksum verified by the NIC */
};

/* Flags of the send calls (with GNIC_DEV_F_SIGNAL of gnic_dev.cuh). */
enum {
	GNIC_ETH_TX_L3_CSUM = 1 << 8, /* the NIC fills the IPv4 header checksum */
	GNIC_ETH_TX_L4_CSUM = 1 << 9, /* the NIC fills the TCP/UDP checksum */
	GNIC_ETH_TX_CSUM = GNIC_ETH_TX_L3_CSUM | GNIC_ETH_TX_L4_CSUM,
};

/* Bytes of the frame's start that a send WQE carries inline (rdma-core's
 * MLX5_ETH_L2_INLINE_HEADER_SIZE: the NIC's minimum for a RAW_PACKET SQ). */
#define GNIC_ETH_MIN_INLINE 18u
/* The longest header gnic_dev_eth_send_hdr() carries inline. */
#define GNIC_ETH_MAX_HDR 256u

/* One received frame, as gnic_dev_eth_rx_burst() hands it out. */
struct gnic_eth_pkt {
	uint8_t *data;  /* the frame, where device code reads it (pool + buf * stride) */
	uint32_t len;   /* its bytes */
	uint32_t buf;   /* its pool buffer: return it or send from it */
	uint32_t tag;   /* the steering rule's flow tag (0: none) */
	uint32_t flags; /* GNIC_ETH_RX_* */
};

struct gnic_dev_eth {
	/* ---- set by the host; read-only here ---- */
	uint32_t magic;         /* GNIC_DEV_ETH_MAGIC */
	uint32_t nbuf;          /* pool buffers == receive queue slots (power of two) */
	struct gnic_dev_qp *qp; /* the RAW_PACKET QP */
	uint8_t *pool;          /* buffer i at pool + i * buf_stride, for device code */
	uint64_t pool_iova;     /* the same memory as the NIC addresses it */
	uint32_t buf_stride;    /* bytes per buffer: the longest frame received */
	uint32_t pool_lkey;
	uint32_t *rq_buf_of; /* [nbuf]: the buffer posted in each receive slot */
	uint64_t *tx_mark;   /* [sq_wqe_cnt]: (first BB << 24) | buffer of a pool send */
	/* ---- device-owned ---- */
	GNIC_DEV_ALIGNED uint64_t tx_recycled; /* BBs whose buffers went back to receive */
	uint32_t tx_lock;
	uint32_t rsvd;
};

/* One hand-off entry: a descriptor the device fills and the host reads. */
struct gnic_ring_entry {
	uint64_t addr; /* e.g. a payload's address */
	uint32_t len;
	uint32_t tag;
	uint64_t user;
	uint64_t seq; /* index + 1 once the rest is written (the ready mark) */
};

struct gnic_dev_ring {
	/* ---- set by the host; read-only here ---- */
	uint32_t magic;              /* GNIC_DEV_RING_MAGIC */
	uint32_t cnt;                /* entries (power of two) */
	struct gnic_ring_entry *ent; /* host memory (mapped into the GPU) */
	uint64_t *tail;              /* host memory: entries below it are free, host-written */
	uint64_t timeout_ns;         /* bound of a producer's wait for a free entry */
	/* ---- device-owned ---- */
	GNIC_DEV_ALIGNED uint64_t head; /* entries handed out to producers */
};

#endif /* GNIC_DEV_ETH_H */
