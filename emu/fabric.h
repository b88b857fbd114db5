/* SPDX-License-Identifier: MIT */
/*
 * gnic-emu fabric: moves requests and responses between QPs (and UD's
 * datagrams, emu_fabric_send_dgram).
 *
 * A QP's peer is found from the destination GID + QPN given at RTR. When the
 * GID belongs to a device of this process the message is handed to the peer
 * by a direct call (no copy, no syscall); otherwise it travels over TCP to the
 * listener whose address the GID encodes. One TCP connection carries every
 * request from this process to one remote listener, and the responses to
 * those requests flow back on the same connection, in order.
 *
 * Wire format (fabric_wire.h): an authenticated handshake (hello, challenge,
 * proof), then struct emu_msg headers each followed by its payload. No
 * request is parsed before the peer proved it holds the job's secret.
 * All functions run on a worker (worker.h) with its lock held, and act on
 * that worker's fabric state: its connections and epoll set.
 */
#ifndef GNIC_EMU_FABRIC_H
#define GNIC_EMU_FABRIC_H

#include "emu.h"

#include "fabric_wire.h"

_Static_assert(EMU_WIRE_MAX_MSG == EMU_MAX_MSG_SIZE, "one message size limit");
_Static_assert(EMU_HS_REFUSED_MAX >= EMU_MAX_DEVICES, "an acceptor refuses every local GID");

/* Where a responder's reply goes: a local requester QP or a connection of
 * this worker, or else (neither set) through worker fwd_w's inbox to its QP
 * fwd_qpn (in-process) or its connection fwd_conn. */
struct emu_reply_path {
	struct emu_qp *local;          /* in-process requester of this worker, or NULL */
	struct emu_conn *conn;         /* TCP connection of this worker it came on, or NULL */
	const union ibv_gid *peer_gid; /* sender's GID (the local device's for in-process) */
	int fwd_w;
	uint32_t fwd_qpn;
	uint64_t fwd_conn;
	/* In-process requests only: the MR the request's payload lies in (held
	 * for the call), or NULL. For GPU memory (EMU_MEM_CUDA) payload is not
	 * a host pointer but the device address, which only a CUDA copy reads. */
	struct emu_mr *payload_mr;
};

/* A reply path kept past the request's call (a reply that waits for GPU
 * copies, dma.h): by QP number and connection id, not pointers. */
struct emu_reply_saved {
	uint32_t local_qpn; /* in-process requester of this worker, or 0 */
	uint64_t conn_id;   /* connection of this worker, or 0 */
	int fwd_w;
	uint32_t fwd_qpn;
	uint64_t fwd_conn;
};
void emu_fabric_path_save(const struct emu_reply_path *path, struct emu_reply_saved *saved);
/* emu_fabric_reply along a saved path, on the worker it was saved on: a
 * requester or connection that is gone by now loses the reply, like a wire. */
int emu_fabric_reply_saved(const struct emu_reply_saved *saved, const struct emu_msg *m,
                           const void *payload);

/* Bind device dev's listener (GNIC_EMU_ADDR + index, or a loopback address
 * of its own; the fabric port GNIC_EMU_PORT) and fill dev->addr / dev->gid.
 * 0 or -errno. */
int emu_fabric_listen(struct emu_device *dev);
void emu_fabric_close_listener(struct emu_device *dev);

/* At RTR: resolve qp->dgid to an in-process device or a connection (opened
 * lazily and non-blocking). 0, or -errno for a GID that is not an emulator's. */
int emu_fabric_attach(struct emu_qp *qp);
void emu_fabric_detach(struct emu_qp *qp); /* at RESET / destroy */

/* Send request m (+ m->len payload bytes) from qp to its peer. In-process:
 * on the same worker, the peer's responder runs before this returns (its
 * reply may already have reached qp's on_response, qp_ops.h); on another,
 * it gets a copy (or reference) through that worker's inbox. Returns 0 when delivered or queued,
 * -EAGAIN when the connection's output is full (try later), -ENOTCONN when
 * the peer is unreachable now (the requester's timer decides what follows). */
int emu_fabric_send(struct emu_qp *qp, const struct emu_msg *m, const void *payload,
                    struct emu_mr *src);

/* UD: send datagram m (+ payload) from qp to QP m->dst_qpn of the device
 * dgid names (a GID table entry or an identity): in-process as
 * emu_fabric_send does, else over a connection of qp's worker to that
 * device, which qp keeps (EMU_DGRAM_CONNS of them) until
 * emu_fabric_dgram_release (RESET, destroy). Returns as emu_fabric_send;
 * nothing answers a datagram. */
int emu_fabric_send_dgram(struct emu_qp *qp, const union ibv_gid *dgid, const struct emu_msg *m,
                          const void *payload, struct emu_mr *src);
void emu_fabric_dgram_release(struct emu_qp *qp);

/* Send a responder's reply (+ m->len payload bytes) back along path. */
int emu_fabric_reply(struct emu_reply_path *path, const struct emu_msg *m, const void *payload,
                     struct emu_mr *src);
/* src (send and reply): the registered host MR payload lies in, or NULL (a
 * scratch buffer, inline data). A large payload in an MR goes to another
 * worker's inbox by reference, the MR held until the item is done (mr.c's
 * dereg waits for that), so an in-process 1 GiB WRITE is not copied twice;
 * on a connection it is not copied at all: the socket takes it from the MR
 * (fabric_out.c), unless the MR is deregistered first. */

/* An inbox item from another worker: send reply m (+ payload) on this
 * worker's connection conn_id (dropped if it is gone or down). */
/* MR mr is being deregistered (no worker can look it up any more): output
 * still to be sent from its memory is copied first, on every worker. */
void emu_fabric_detach_mr(const struct emu_mr *mr);
void emu_fabric_conn_reply(uint64_t conn_id, const struct emu_msg *m, const void *payload);

/* An inbox item from the worker that accepted inbound connection c: this
 * worker serves it from now on (fabric_int.h says when that happens). */
void emu_fabric_adopt(struct emu_conn *c);
/* The engine stopped before c was adopted: close and free it. */
void emu_fabric_orphan(struct emu_conn *c);

/* Accept, read and dispatch whatever sockets have ready (no waiting):
 * requests and responses go to the QP they name (m->dst_qpn), through its
 * type's on_request / on_response (qp_ops.h). Returns messages handled. */
int emu_fabric_poll(void);
/* The time up to which every answer that reached qp has been dispatched:
 * now for an in-process peer, else when emu_fabric_poll() last found qp's
 * connection empty. A retransmission timer fires only once this passes its
 * deadline, so a requester that did not run for a while (stopped, descheduled)
 * takes the ACKs already waiting before it gives up on them. */
uint64_t emu_fabric_heard_ns(const struct emu_qp *qp, uint64_t now);
/* Transmission, as a ConnectX's timer sees it: a request posted while qp's
 * connection is still in its handshake, or behind a full socket, is not on
 * the wire yet. emu_fabric_tx_mark() after emu_fabric_send() names that
 * request; emu_fabric_tx_done() says whether it left (written to the socket,
 * or lost with the connection). An in-process request leaves at once. */
uint64_t emu_fabric_tx_mark(const struct emu_qp *qp);
bool emu_fabric_tx_done(const struct emu_qp *qp, uint64_t mark);
/* Push queued output. Returns bytes sent. */
int emu_fabric_flush(void);
/* Sleep until a socket or the kick eventfd is ready, at most timeout_ns.
 * Called WITHOUT the worker's lock. */
void emu_fabric_wait(uint64_t timeout_ns);
/* Is any output still queued (the engine must not sleep long then)? */
bool emu_fabric_pending(void);

/* auth.c: the job's shared secret (GNIC_EMU_SECRET, GNIC_EMU_SECRET_FILE or
 * the per-user file) and handshake nonces. emu_auth_load() reads it, once,
 * at initialisation and WITHOUT nic.lock (file I/O); a failure is logged
 * then. emu_auth_key() only hands out the result: 0, or the load's -errno
 * every time after. */
void emu_auth_load(void);
int emu_auth_key(const uint8_t **key, size_t *len);
int emu_auth_nonce(uint8_t nonce[EMU_AUTH_NONCE_LEN]);

#endif /* GNIC_EMU_FABRIC_H */
