/* SPDX-License-Identifier: MIT */
/*
 * Engine workers: the emulated NIC's processors. GNIC_EMU_THREADS of them per
 * process; every QP belongs to one worker from creation to destruction
 * (emu_worker_assign) and only that worker runs its engine state, under the
 * worker's lock. A worker owns its scratch buffers, its QPs, an epoll set
 * with a kick eventfd, the fabric connections its QPs opened, the inbound
 * connections handed to it (worker 0 has the listeners and every inbound
 * connection until its handshake is over; then the connection goes to the
 * worker of the QP its first request names), and an inbox.
 *
 * Messages between QPs of different workers (in-process requests and
 * responses, requests that arrived on a connection of another worker than
 * their QP's, and replies to them) travel as copies through the destination worker's inbox,
 * which is drained in order at the start of each pass: one FIFO per worker
 * keeps every QP's requests and responses in order. Between two QPs of the
 * same worker a message is a direct call, as with one worker.
 */
#ifndef GNIC_EMU_WORKER_H
#define GNIC_EMU_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"

#define EMU_MAX_WORKERS 64
/* Bytes a worker's inbox may hold before in-process senders are told to try
 * later (-EAGAIN, like a full connection) and worker 0 stops reading
 * requests for it from a connection (fabric_conn.c). Small: what waits here
 * delays every answer behind it, and requesters' timers run meanwhile. */
#define EMU_INBOX_HIGH_WATER ((size_t)16 << 20)

struct emu_conn;
struct emu_dma;
struct emu_inbox_item;

/* The fabric's per-worker part (fabric_int.h says what each holds). */
struct fab_state {
	struct emu_conn *conns; /* every connection of this worker, newest first */
	bool dispatching;       /* inside emu_fabric_poll(): frees wait for fab_reap() */
	uint64_t poll_seq;      /* emu_fabric_poll() calls */
	bool reap_due;          /* some connection died or was retired */
	uint64_t hs_next_ns;    /* earliest handshake deadline; 0: none pending */
	uint64_t idle_next_ns;  /* no connection: next epoll look */
	int kick_registered;    /* kick_fd once it is in epoll_fd, else -1 */
};

/* A growable buffer of the worker's own (requester gather, responder stage). */
struct emu_scratch {
	uint8_t *buf;
	size_t cap;
};

struct emu_worker {
	int index;
	/* held for one pass at a time by the worker's thread, and by the
	 * control path around a change to one of its QPs */
	pthread_mutex_t lock;
	_Atomic int lock_waiters; /* control path waiting: the worker yields */
	pthread_t thread;
	bool running;
	_Atomic bool stop;
	_Atomic int sleeping; /* see engine.c's idle_sleep */
	int kick_fd;          /* eventfd: wakes the sleeping worker */
	int epoll_fd;         /* its sockets + kick_fd */
	uint64_t passes;      /* statistics */

	/* QPs it serves (under lock); nqps also read unlocked for placement */
	struct emu_qp **active;
	uint32_t nactive, active_cap;
	_Atomic uint32_t nqps;
	uint32_t nrun; /* of them, QPs placed at RTR and not reset since (nic.lock) */

	/* messages for other workers made in this pass (its own thread only),
	 * appended to their inboxes at the end of the pass, one lock and at
	 * most one kick per destination (emu_outbox_flush) */
	struct emu_outbox {
		struct emu_inbox_item *head, *tail;
	} outbox[EMU_MAX_WORKERS];
	uint64_t outbox_mask; /* destinations with something staged */

	/* messages from other workers: FIFO under inbox_lock */
	pthread_mutex_t inbox_lock;
	struct emu_inbox_item *in_head, *in_tail;
	_Atomic size_t inbox_bytes;
	_Atomic bool inbox_nonempty;
	_Atomic bool draining;       /* running items taken from the inbox, until
	                              * their answers left the outbox */
	_Atomic uint64_t drained_ns; /* everything queued before this is done */
	uint64_t drain_t0;           /* the running drain's start (own thread) */

	struct emu_scratch gather, stage;
	struct fab_state fab;
	struct emu_dma *dma; /* its GPU copy queue (dma.c), made on first use */
};

/* Set up emu_cfg.threads workers (fds only, no threads): 0 or -errno. */
int emu_workers_init(void);
int emu_workers_count(void);
struct emu_worker *emu_worker_at(int index);
/* The worker this thread runs as: a worker's own thread, or the control
 * path while it holds a worker's lock (emu_worker_lock); worker 0 for
 * initialisation, which runs before any worker exists. */
extern EMU_TLS struct emu_worker *emu_worker_tls; /* worker.c's; read it as below */
struct emu_worker *emu_worker_first(void);
static inline struct emu_worker *emu_worker_cur(void)
{
	struct emu_worker *w = emu_worker_tls;

	return w ? w : emu_worker_first();
}
void emu_worker_enter(struct emu_worker *w);  /* a worker's thread, once */
void emu_worker_lock(struct emu_worker *w);   /* control path: fair w.r.t. the worker */
void emu_worker_unlock(struct emu_worker *w); /* ... and back to the previous current */
/* Every worker finishes the pass it is in: after unpublishing an object
 * (an MR) no worker still uses it. Takes each worker's lock in turn; call
 * without any worker lock held. */
void emu_workers_sync(void);

/* Placement at QP creation (under nic.lock): the worker with the fewest QPs
 * (the lowest index on ties), or the worker of the QP's SRQ; emu_worker_rtr
 * may move it at RTR. qp->worker is set; the QP joins its
 * active list in emu_worker_qp_add (with the worker's lock held). */
void emu_worker_assign(struct emu_qp *qp);
void emu_worker_unassign(struct emu_qp *qp); /* creation failed after assign */
/* Placement at INIT->RTR, once the peer is known (qp->dest_qpn, qp->dgid
 * committed), under nic.lock and qp's worker's lock (emu_worker_lock), which
 * the call leaves held on qp's worker, old or new. A QP does no engine work
 * before RTR, so it can move then without reordering anything:
 *   - a QP of an SRQ stays (the SRQ's single consumer);
 *   - an in-process peer that is placed (RTR or later) or pinned by its
 *     SRQ: the QP joins its worker, so the pair's messages are direct calls;
 *   - otherwise (the peer comes later, or is in another process): the worker
 *     with the fewest placed QPs, the QP's own on ties, then the lowest index;
 *     its peer joins it at its own RTR.
 * Moving takes the QP off the old worker's list (its number has no owner for
 * that instant: anything sent to it then is lost, as for a QP that is not yet
 * in RTR) and publishes it on the new one. */
void emu_worker_rtr(struct emu_qp *qp);
/* The QP left its placement (to RESET) or is destroyed: nic.lock. */
void emu_worker_unplace(struct emu_qp *qp);
int emu_worker_qp_add(struct emu_qp *qp); /* 0 or ENOMEM */
void emu_worker_qp_del(struct emu_qp *qp);
/* qpn's QP if worker w serves it, else NULL. Safe for w's own thread with
 * w's lock held: a QP is published and unpublished under its worker's lock. */
struct emu_qp *emu_worker_qp(const struct emu_worker *w, uint32_t qpn);
/* Index + 1 of the worker serving qpn, 0 if none (no dereference). */
int emu_qpn_worker(uint32_t qpn);

/* Scratch of at least n bytes (NULL on failure). */
uint8_t *emu_scratch_get(struct emu_scratch *s, size_t n);

/* Inbox: what another worker asked this one to do. */
enum emu_inbox_kind {
	EMU_INBOX_REQUEST,  /* m goes to QP m->dst_qpn's on_request */
	EMU_INBOX_RESPONSE, /* m goes to QP m->dst_qpn's on_response */
	EMU_INBOX_CONN,     /* m goes out on connection conn_id of this worker */
	EMU_INBOX_ADOPT,    /* inbound connection conn is this worker's now */
};
/* Queue a copy of m (+ payload, see src below) for worker w. REQUEST: the reply goes back
 * to QP reply_qpn of worker reply_w (in-process) or to connection conn_id of
 * worker reply_w; peer_gid: the sender's GID. 0, -EAGAIN (w's inbox is over
 * its high-water mark and limit was asked), -ENOMEM. */
struct emu_inbox_from {
	int reply_w;        /* worker index */
	uint32_t reply_qpn; /* in-process requester, or 0 */
	uint64_t conn_id;   /* or the connection the request came on */
	const union ibv_gid *peer_gid;
	struct emu_device *dst_dev; /* in-process: the device the requester named */
};
int emu_inbox_push(struct emu_worker *w, enum emu_inbox_kind kind,
                   const struct emu_inbox_from *from, const struct emu_msg *m, const void *payload,
                   struct emu_mr *src, bool limit);
/* (A worker's own thread stages the copy in its outbox; it counts in w's
 * inbox_bytes at once. The control path appends it to w's inbox.) */
/* Hand inbound connection c to worker w (emu_fabric_adopt). 0 or -ENOMEM. */
int emu_inbox_push_conn(struct emu_worker *w, struct emu_conn *c);
/* Requests a worker took from a connection and forwarded to another
 * worker's inbox, all workers together (diagnostics). */
uint64_t emu_workers_forwarded(void);
/* Payloads of at least this many bytes in a host MR (src) are passed by
 * reference instead of copied. */
#define EMU_INBOX_REF_MIN (64u * 1024)
/* The end of worker w's pass (its thread): what it staged for others goes
 * to their inboxes, each destination's batch in order under one lock. */
void emu_outbox_flush(struct emu_worker *w);
/* Worker w (its thread, lock held) runs what its inbox holds, taken whole
 * under one lock. Returns items. */
int emu_inbox_drain(struct emu_worker *w);
/* The engine stopped: drop what w's inbox holds (lost on the wire). */
void emu_inbox_discard(struct emu_worker *w);
/* The time up to which w has run everything queued for it and sent the
 * answers on (its outbox is flushed): now when nothing waits (what
 * emu_fabric_heard_ns gives a requester whose peer QP is on w: its timer
 * must not fire while w is still at the request or holds the answer). */
uint64_t emu_worker_heard_ns(struct emu_worker *w, uint64_t now);
/* Wake w if it sleeps (inbox push, doorbell). */
void emu_worker_kick(struct emu_worker *w);

#endif /* GNIC_EMU_WORKER_H */
