/* SPDX-License-Identifier: MIT */
/*
 * libgnic host API, raw Ethernet: Ethernet queues (a RAW_PACKET QP with its
 * CQs and a registered pool of receive buffers), their steering rules, and
 * the GPU-to-CPU hand-off ring. Included by gnic.h; the device side is
 * gnic_dev_eth.cuh (through gnic_dev.cuh). Conventions are gnic.h's:
 * gnic_status_t, gnic_last_error(), outputs set only on success, bad input
 * changes nothing.
 */
#ifndef GNIC_ETH_H
#define GNIC_ETH_H

#include <stdint.h>

#include "gnic.h"
#include "gnic_dev_eth.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Ethernet queues ------------------------------------------------------ */

enum gnic_eth_mem {
	GNIC_ETH_MEM_AUTO = 0, /* GPU memory for a GPU context, host memory otherwise */
	GNIC_ETH_MEM_HOST = 1, /* host memory (mapped into the GPU for a GPU context) */
	GNIC_ETH_MEM_GPU = 2,  /* GPU memory: a GPU context only */
};

struct gnic_eth_attr {
	uint32_t sq_depth;          /* send WQEs (basic blocks); 1024 */
	uint32_t rx_bufs;           /* receive buffers = receive queue slots; 512 */
	uint32_t buf_size;          /* bytes per buffer, the longest frame received; 2048 */
	enum gnic_eth_mem pool_mem; /* AUTO */
	enum gnic_db_mode db_mode;  /* AUTO (SM), SM, BF or CPU; PROXY is not supported */
	enum gnic_share share;      /* GNIC_SHARE_GPU */
	uint32_t cqe_every;         /* a send CQE at least every N BBs (pow2); 16 */
	uint64_t timeout_ns;        /* bound of each device wait; 10 s */
};

struct gnic_eth;

/* Defaults as above. */
void gnic_eth_attr_init(struct gnic_eth_attr *attr);
/* A RAW_PACKET QP on port 1 of ctx's device (in RTS), its send and receive
 * CQs, a pool of rx_bufs buffers of buf_size bytes (rounded up to a power
 * of two and to 64 B) registered for local write, every buffer posted to the
 * receive queue, and the device view (gnic_eth_dev). The port receives
 * nothing until a rule steers frames to the queue (gnic_eth_rule_add).
 * Needs what the provider needs for a RAW_PACKET QP (on hardware:
 * CAP_NET_RAW; on gnic-emu: GNIC_EMU_ETH_IF names the interface, or its
 * frames loop back). GNIC_ERR_INVALID: depth 0 or above the device's, a
 * buffer size outside 64..65536, GPU memory without a GPU context;
 * GNIC_ERR_NOT_SUPPORTED: db_mode PROXY, or SM/BF where the register cannot
 * be mapped. */
gnic_status_t gnic_eth_create(struct gnic_ctx *ctx, const struct gnic_eth_attr *attr,
                              struct gnic_eth **eth_p);
/* Removes its rules first, then the queue and pool. Before
 * gnic_ctx_destroy(), which refuses while the queue's QP and MR exist. */
void gnic_eth_destroy(struct gnic_eth *eth);
/* The queue as device code sees it (a device pointer for a GPU context);
 * valid until gnic_eth_destroy(). */
struct gnic_dev_eth *gnic_eth_dev(struct gnic_eth *eth);
/* The pool in host memory (buffer i at + i * gnic_eth_buf_stride()), NULL
 * for a pool in GPU memory. */
uint8_t *gnic_eth_pool_host(struct gnic_eth *eth);
uint32_t gnic_eth_buf_stride(const struct gnic_eth *eth);
uint32_t gnic_eth_nbuf(const struct gnic_eth *eth);
uint32_t gnic_eth_qpn(const struct gnic_eth *eth);
/* The first error device code recorded on the queue (as gnic_qp_error). */
gnic_status_t gnic_eth_error(struct gnic_eth *eth, struct gnic_qp_error *err);

/* ---- steering rules ------------------------------------------------------------
 * A rule matches the fields its match bits name, exactly (IP addresses on
 * the prefix length given); frames that no rule of the port takes are
 * dropped by the NIC (counted as rx_no_rule). Lower priority goes first;
 * one priority: in creation order; a rule for a multicast destination MAC
 * (or, without a MAC or EtherType match, a multicast IPv4 destination)
 * after every priority, as a ConnectX keeps them in a table of their own. */
enum {
	GNIC_ETH_MATCH_DST_MAC = 1 << 0,
	GNIC_ETH_MATCH_ETHERTYPE = 1 << 1,
	GNIC_ETH_MATCH_SRC_IP = 1 << 2, /* with ip_version 4 or 6 */
	GNIC_ETH_MATCH_DST_IP = 1 << 3,
	GNIC_ETH_MATCH_SRC_PORT = 1 << 4, /* with l4 UDP or TCP */
	GNIC_ETH_MATCH_DST_PORT = 1 << 5,
	GNIC_ETH_MATCH_ALL = (1 << 6) - 1,
};

/* The last priority: a ConnectX has 16 for verbs flow rules (mlx5_ib's
 * MLX5_IB_FLOW_LAST_PRIO). */
#define GNIC_ETH_PRIO_MAX 15u

enum gnic_eth_l4 { GNIC_ETH_L4_ANY = 0, GNIC_ETH_L4_UDP = 17, GNIC_ETH_L4_TCP = 6 };

enum gnic_eth_action {
	GNIC_ETH_DELIVER = 0, /* to this queue, with flow_tag in each CQE */
	GNIC_ETH_DROP = 1,    /* dropped by the NIC (counted as rx_drop_rule) */
};

struct gnic_eth_rule {
	uint32_t match;     /* GNIC_ETH_MATCH_* */
	uint8_t dst_mac[6]; /* e.g. the port's own, or a multicast group */
	uint16_t ethertype; /* host order, e.g. 0x0800 */
	uint8_t ip_version; /* 0 (any), 4 or 6: also matches frames of that IP version */
	uint8_t l4;         /* enum gnic_eth_l4: also matches that protocol */
	uint8_t src_prefix; /* leading bits of src_ip that count; 0 = all (32 / 128) */
	uint8_t dst_prefix;
	uint8_t src_ip[16]; /* IPv4: the first 4 bytes, network order */
	uint8_t dst_ip[16];
	uint16_t src_port; /* host order */
	uint16_t dst_port;
	uint32_t flow_tag; /* 0..0xffffff: reported in each CQE (0 = no tag) */
	uint16_t priority; /* 0..GNIC_ETH_PRIO_MAX */
	uint8_t action;    /* enum gnic_eth_action */
	uint8_t rsvd;
};

struct gnic_eth_flow;

/* Install rule on eth's port. GNIC_ERR_INVALID: unknown match bits, an IP
 * match without ip_version, an EtherType match that is not ip_version's, a
 * port match without l4, a prefix too long, a tag above 0xffffff, a
 * priority above GNIC_ETH_PRIO_MAX; GNIC_ERR_NOT_SUPPORTED: the provider refused it
 * (its reason in the text). */
gnic_status_t gnic_eth_rule_add(struct gnic_eth *eth, const struct gnic_eth_rule *rule,
                                struct gnic_eth_flow **flow_p);
/* Remove a rule (frames it took are then steered by the others). */
gnic_status_t gnic_eth_rule_remove(struct gnic_eth_flow *flow);

/* The port's counters. On gnic-emu all of them (the device's, every queue
 * of it); on hardware rx_out_of_buffer from the port's hw_counters in
 * sysfs and the rest GNIC_ETH_STAT_UNKNOWN. */
#define GNIC_ETH_STAT_UNKNOWN UINT64_MAX
struct gnic_eth_stats {
	uint64_t rx_frames;        /* frames that reached steering */
	uint64_t rx_delivered;     /* written into a receive buffer */
	uint64_t rx_no_rule;       /* matched no rule: dropped */
	uint64_t rx_drop_rule;     /* matched a drop rule */
	uint64_t rx_out_of_buffer; /* steered to a queue with no receive buffer posted: dropped */
	uint64_t rx_too_long;      /* longer than a receive buffer: dropped */
	uint64_t tx_frames;        /* sent */
	uint64_t rx_overrun;       /* lost before steering: the host could not keep up with the
	                              port (gnic-emu's interface socket was full) */
	uint64_t tx_dropped;       /* handed to the port but not sent (its interface refused it) */
};
gnic_status_t gnic_eth_stats(struct gnic_eth *eth, struct gnic_eth_stats *out);

/* ---- hand-off ring (device -> host) ------------------------------------------
 * Device threads push descriptors (gnic_dev_ring_push: address, length,
 * tag, a user word); one host thread consumes them in order, which frees
 * their entries. Entries live in host memory (mapped into the GPU for a GPU
 * context). A full ring holds producers back, bounded by timeout_ns. */
struct gnic_ring;

/* entries: a power of two, 2..1<<20; timeout_ns: the producers' bound (0:
 * 10 s). */
gnic_status_t gnic_ring_create(struct gnic_ctx *ctx, uint32_t entries, uint64_t timeout_ns,
                               struct gnic_ring **ring_p);
/* No producer may still push; before gnic_ctx_destroy(). */
void gnic_ring_destroy(struct gnic_ring *ring);
/* The device view (a device pointer for a GPU context). */
struct gnic_dev_ring *gnic_ring_dev(struct gnic_ring *ring);
/* Copy up to max ready entries, in order, into out and free them; *n = how
 * many. Waits up to timeout_ns for the first (0: not at all).
 * GNIC_ERR_TIMEOUT: none came in time (*n = 0); GNIC_ERR_INVALID: NULL, or
 * max 0. One consumer thread at a time (others wait for it). */
gnic_status_t gnic_ring_consume(struct gnic_ring *ring, struct gnic_ring_entry *out, uint32_t max,
                                uint64_t timeout_ns, uint32_t *n);
/* Entries consumed so far. */
uint64_t gnic_ring_consumed(const struct gnic_ring *ring);

#ifdef __cplusplus
}
#endif

#endif /* GNIC_ETH_H */
