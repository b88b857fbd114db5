/* SPDX-License-Identifier: MIT */
/*
 * Raw Ethernet in gnic-emu: RAW_PACKET QPs (raw.c), the device's flow
 * steering (flow.c), its Ethernet port (eth_port.c) and the frame parsing
 * and checksums they share (eth_pkt.c).
 *
 * The path of a frame:
 *   send: a RAW_PACKET QP's WQE (ctrl, Ethernet segment, data) -> raw.c
 *       gathers the frame, fills the checksums cs_flags ask for -> the port
 *       (emu_eth_port_tx): out on the bound interface, or, without one, back
 *       into the device's own steering (loopback);
 *   receive: the port's receive thread (or the loopback) -> emu_flow_rx:
 *       the device's rules, in priority order, pick one QP (or drop) ->
 *       raw.c writes the frame into that QP's next receive WQE and a receive
 *       CQE with its length, header types, checksum bits and flow tag.
 *
 * Every RAW_PACKET QP lives on engine worker 0 (worker.c): steering hands
 * a frame to a QP with worker 0's lock held, from worker 0's own pass
 * (loopback) or from the port's receive thread, which takes that lock.
 */
#ifndef GNIC_EMU_ETH_H
#define GNIC_EMU_ETH_H

#include <stdbool.h>
#include <stdint.h>

#include "emu.h"
#include "gnic/gnic_emu.h"

#define EMU_ETH_MAX_FRAME 9216u /* the largest frame the port moves (jumbo) */
#define EMU_ETH_HLEN      14u
#define EMU_ETH_P_IPV4    0x0800
#define EMU_ETH_P_IPV6    0x86dd
#define EMU_ETH_P_VLAN    0x8100
#define EMU_IPPROTO_TCP   6
#define EMU_IPPROTO_UDP   17

/* ---- eth_pkt.c: one frame's headers as hardware parses them ------------ */
enum emu_l3 { EMU_L3_NONE, EMU_L3_IPV4, EMU_L3_IPV6 };
enum emu_l4 { EMU_L4_NONE, EMU_L4_TCP, EMU_L4_UDP };

struct emu_pkt {
	const uint8_t *data;
	uint32_t len;
	uint16_t ethertype; /* after one VLAN tag, if any */
	bool vlan;
	uint16_t vlan_tci;
	enum emu_l3 l3;
	enum emu_l4 l4; /* NONE also for a fragment past the first */
	uint32_t l3_off, l4_off;
	uint32_t l3_len; /* IPv4 total length / IPv6 40 + payload length, clipped to the frame */
	uint8_t proto;   /* IPv4 protocol / IPv6 next header */
	bool l3_ok;      /* IPv4 header checksum right (IPv6: a whole header) */
	bool l4_ok;      /* TCP/UDP checksum right */
	uint8_t tcp_flags;
	uint32_t l4_payload; /* TCP: bytes after its header */
};

/* Parse frame (len bytes) into p, checksums verified. */
void emu_pkt_parse(struct emu_pkt *p, const uint8_t *frame, uint32_t len);
/* Fill the IPv4 header checksum (l3) and the TCP/UDP checksum (l4) of a
 * frame in place, as the Ethernet segment's cs_flags ask; a frame without
 * such headers is left as it is. */
void emu_pkt_fill_csum(uint8_t *frame, uint32_t len, bool l3, bool l4);

/* ---- flow.c: steering --------------------------------------------------- */
/* Counters of one device's Ethernet port (also gemu_eth_stats). */
struct emu_eth_counters {
	_Atomic uint64_t rx_frames;    /* frames that reached steering */
	_Atomic uint64_t rx_delivered; /* ... written into a receive WQE */
	_Atomic uint64_t rx_no_rule;   /* matched no rule: dropped (default drop) */
	_Atomic uint64_t rx_drop_rule; /* matched a rule whose action is drop */
	_Atomic uint64_t rx_no_wqe;    /* the QP had no receive WQE posted (or was not ready) */
	_Atomic uint64_t rx_too_long;  /* longer than the receive WQE's buffers */
	_Atomic uint64_t rx_bad_wqe;   /* the receive WQE named memory it may not write */
	_Atomic uint64_t rx_overrun;   /* the kernel dropped it: the port's socket was full */
	_Atomic uint64_t tx_frames;    /* frames sent by RAW_PACKET QPs */
	_Atomic uint64_t tx_dropped;   /* ... that the port could not send */
};
struct emu_eth_counters *emu_eth_counters(const struct emu_device *dev);

/* Steer one frame received by dev's port (worker 0's lock held). */
void emu_flow_rx(struct emu_device *dev, const uint8_t *frame, uint32_t len);
/* A frame a QP of dev sends: its copies for the sniffer rules (worker 0). */
void emu_flow_sniff_tx(struct emu_device *dev, const uint8_t *frame, uint32_t len);
/* Does a rule name qp? (A QP with rules cannot be destroyed: EBUSY, as
 * with the kernel's reference from each flow.) Control path, worker 0's
 * lock held. */
bool emu_flow_qp_busy(const struct emu_qp *qp);

/* ibv_create_flow / ibv_destroy_flow (the context's operation table) */
EMU_EXPORT struct ibv_flow *gemu_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
EMU_EXPORT int gemu_destroy_flow(struct ibv_flow *flow);

/* ---- raw.c: a RAW_PACKET QP's receive side ------------------------------ */
/* Deliver frame p to qp's next receive WQE with flow tag tag (worker 0's
 * lock held). */
void emu_raw_deliver(struct emu_qp *qp, const struct emu_pkt *p, uint32_t tag);
/* A receive CQE's header types and checksum-OK bits for p (raw.c). */
uint8_t emu_raw_hdr_types(const struct emu_pkt *p);
uint8_t emu_raw_csum_bits(const struct emu_pkt *p);

/* ---- eth_port.c: the port --------------------------------------------- */
/* A RAW_PACKET QP of dev is created / destroyed (control path, nic.lock
 * held): the first opens the port (GNIC_EMU_ETH_IF names its interface),
 * the last closes it. 0 or -errno (the interface cannot be bound). */
int emu_eth_port_get(struct emu_device *dev);
void emu_eth_port_put(struct emu_device *dev);
/* Send one frame out of dev's port (worker 0, its lock held). */
void emu_eth_port_tx(struct emu_device *dev, const uint8_t *frame, uint32_t len);

#endif /* GNIC_EMU_ETH_H */
