/* SPDX-License-Identifier: MIT */
/*
 * gnic-emu fabric: moves requests and responses between RC QPs.
 *
 * A QP's peer is found from the destination GID + QPN given at RTR. When the
 * GID belongs to a device of this process the message is handed to the peer
 * by a direct call (no copy, no syscall); otherwise it travels over TCP to the
 * listener whose address the GID encodes. One TCP connection carries every
 * request from this process to one remote listener, and the responses to
 * those requests flow back on the same connection, in order.
 *
 * Wire format: struct emu_msg (host byte order, x86-64/aarch64 only) followed
 * by m.len payload bytes. A connection starts with one struct emu_hello.
 * All functions run on the engine thread with nic.lock held.
 */
#ifndef GNIC_EMU_FABRIC_H
#define GNIC_EMU_FABRIC_H

#include "emu.h"

#define EMU_FABRIC_MAGIC 0x43494e47u /* "GNIC" */
#define EMU_FABRIC_VERSION 1u

enum emu_msg_type {
	/* requests: requester -> responder */
	EMU_MSG_WRITE = 1,
	EMU_MSG_WRITE_IMM,
	EMU_MSG_SEND,
	EMU_MSG_SEND_IMM,
	EMU_MSG_READ, /* no payload; operand[0] = bytes to read */
	EMU_MSG_ATOMIC_CS,
	EMU_MSG_ATOMIC_FA,
	/* responses: responder -> requester */
	EMU_MSG_ACK = 16,   /* every request up to and including psn succeeded */
	EMU_MSG_NAK,	    /* request psn failed: syndrome (requester view) */
	EMU_MSG_RNR_NAK,    /* no receive posted for psn: retry after rnr_timer */
	EMU_MSG_READ_RESP,  /* payload = data read */
	EMU_MSG_ATOMIC_RESP /* operand[0] = value before the atomic */
};

enum {
	EMU_MSG_F_SOLICITED = 1 << 0,
	/* Requester wants an ACK for this request (cumulative: it covers every
	 * earlier psn too). Unflagged WRITE/SEND are acknowledged by a later ACK;
	 * errors are always NAKed; READ/ATOMIC always answer. */
	EMU_MSG_F_ACKREQ = 1 << 1,
};

struct emu_msg {
	uint8_t type;	   /* enum emu_msg_type */
	uint8_t syndrome;  /* NAK: GNIC_MLX5_SYND_* for the requester */
	uint8_t flags;	   /* EMU_MSG_F_* */
	uint8_t rnr_timer; /* RNR_NAK: responder's min_rnr_timer code */
	uint32_t len;	   /* payload bytes that follow */
	uint32_t dst_qpn;  /* QP this message is for */
	uint32_t src_qpn;  /* QP it came from */
	uint32_t psn;	   /* request sequence number (responses: echoed) */
	uint32_t imm;	   /* *_IMM: immediate, big-endian as in the WQE */
	uint64_t raddr;	   /* WRITE/READ/ATOMIC target address */
	uint32_t rkey;
	uint32_t rsvd;
	uint64_t operand[2]; /* ATOMIC: swap_add, compare (host order) */
};
_Static_assert(sizeof(struct emu_msg) == 56, "emu_msg is a wire format");

struct emu_hello {
	uint32_t magic;	  /* EMU_FABRIC_MAGIC */
	uint32_t version; /* EMU_FABRIC_VERSION */
	union ibv_gid src_gid;
};

/* Where a responder's reply goes: a local requester QP or a connection. */
struct emu_reply_path {
	struct emu_qp *local;	       /* in-process requester, or NULL */
	struct emu_conn *conn;	       /* TCP connection it came on, or NULL */
	const union ibv_gid *peer_gid; /* sender's GID (the local device's for in-process) */
};

/* Bind device dev's listener (emu_cfg.bind_addr, base_port + index or an
 * ephemeral port) and fill dev->addr / dev->gid. 0 or -errno. */
int emu_fabric_listen(struct emu_device *dev);
void emu_fabric_close_listener(struct emu_device *dev);

/* At RTR: resolve qp->dgid to an in-process device or a connection (opened
 * lazily and non-blocking). 0, or -errno for a GID that is not an emulator's. */
int emu_fabric_attach(struct emu_qp *qp);
void emu_fabric_detach(struct emu_qp *qp); /* at RESET / destroy */

/* Send request m (+ m->len payload bytes) from qp to its peer. In-process:
 * the peer's responder runs before this returns (its reply may already have
 * reached emu_requester_on_response). Returns 0 when delivered or queued,
 * -EAGAIN when the connection's output is full (try later), -ENOTCONN when
 * the peer is unreachable now (the requester's timer decides what follows). */
int emu_fabric_send(struct emu_qp *qp, const struct emu_msg *m, const void *payload);

/* Send a responder's reply (+ m->len payload bytes) back along path. */
int emu_fabric_reply(struct emu_reply_path *path, const struct emu_msg *m, const void *payload);

/* Accept, read and dispatch whatever sockets have ready (no waiting):
 * requests go to emu_responder_on_request(), responses to the requester QP
 * (m->dst_qpn) through emu_requester_on_response(). Returns messages handled. */
int emu_fabric_poll(void);
/* Push queued output. Returns bytes sent. */
int emu_fabric_flush(void);
/* Sleep until a socket or the kick eventfd is ready, at most timeout_ns.
 * Called WITHOUT nic.lock. */
void emu_fabric_wait(uint64_t timeout_ns);
/* Is any output still queued (the engine must not sleep long then)? */
bool emu_fabric_pending(void);

#endif /* GNIC_EMU_FABRIC_H */
