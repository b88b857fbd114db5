/* SPDX-License-Identifier: MIT */
/*
 * The fabric's internals, shared by its files and seen by no other:
 *
 *   fabric.c         the entry points (fabric.h): attach, send, reply, poll,
 *                    flush, wait; the epoll set and the engine's kick
 *   fabric_conn.c    a connection's life (connect, reconnect, close, reap),
 *                    its output, and its input: parsed in place, dispatched
 *                    to the QP each message names through qp->ops
 *   fabric_hs.c      the handshake on a connection (fabric_wire.c's parser
 *                    driven by socket input) and the log of failed ones
 *   fabric_listen.c  listeners and the bounded set of pending inbound
 *                    handshakes, also when descriptors run out
 *   fabric_buf.c     the compacting byte buffers
 *   fabric_out.c     a connection's output queue: copied bytes, and large
 *                    payloads sent from their MR without a copy
 *   fabric_land.c    a large message's data received straight at its target
 *   fabric_wire.c    the wire format and its parsers: no sockets, no engine
 *                    state (fuzzed by tests/fuzz/fuzz_fabric.c)
 *
 * All state here belongs to one engine worker (worker.h) and is guarded by
 * its lock, except the epoll set itself, which emu_fabric_wait() sleeps on
 * without the lock. `fab` is the current worker's part (emu_worker_cur()):
 * its connections; worker 0 also has the listeners and the inbound
 * connections they accept until their handshake is over. An inbound
 * connection then belongs to the worker of the QP its first request names:
 * worker 0 takes it out of its list and epoll set at its next fab_reap()
 * and hands it, input buffer and all, through that worker's inbox
 * (emu_fabric_adopt). Whoever owns a connection hands requests for other
 * workers' QPs on through their inboxes.
 * Connection memory is only freed between dispatches (fab_reap()), so
 * callbacks may fail or detach any connection without pulling memory from
 * under the parser.
 */
#ifndef GNIC_EMU_FABRIC_INT_H
#define GNIC_EMU_FABRIC_INT_H

#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "emu.h"
#include "fabric.h"
#include "worker.h"

enum {
	FAB_READ_CHUNK = 256 * 1024,       /* one recv() */
	FAB_READ_BUDGET = 4 * 1024 * 1024, /* per connection and poll: fairness */
	FAB_IN_MIN = 2 * FAB_READ_CHUNK,   /* so a chunk fits after a partial message */
	FAB_IN_FREE = 1024 * 1024,         /* larger messages: only once their QP takes them */
	FAB_OUT_MIN = 64 * 1024,
	FAB_OUT_IOV = 64,               /* pieces one sendmsg() takes */
	FAB_KEEP_MAX = 4 * 1024 * 1024, /* idle buffers above this are released */
	FAB_POLL_EVENTS = 64,
	FAB_ACCEPT_BATCH = 16,
	FAB_LOCAL_SOCKBUF = 1024 * 1024, /* SO_SNDBUF/SO_RCVBUF of an AF_UNIX connection */
};
#define FAB_OUT_HIGH_WATER ((size_t)64 << 20)
/* Answers queued on a connection above which its requests wait: about one
 * large READ response at a time, so a pass does not queue many of them
 * while the requester hears nothing. */
#define FAB_OUT_ANSWERS_MAX ((size_t)8 << 20)
#define FAB_RECONNECT_NS    5000000ull    /* at most one connect() per 5 ms per peer */
#define FAB_IDLE_POLL_NS    20000ull      /* epoll period while no connection exists */
#define FAB_AUTH_LOG_NS     5000000000ull /* failed handshakes: one warning per peer per 5 s */
#define FAB_AUTH_LOG_MAX    8             /* ... and at most this many per 5 s in all */
#define FAB_FLOOD_LOG_NS    5000000000ull /* a listener under pressure: one warning per 5 s */
#define FAB_ACCEPT_PAUSE_NS 2000000ull    /* a listener under pressure leaves epoll this long */
#define FAB_PENDING_MIN     4             /* pending handshakes allowed however low NOFILE is */

/* What an epoll event's data.ptr points at: the first member of each. */
enum fab_kind { FAB_KICK, FAB_LISTENER, FAB_CONN };
struct fab_handle {
	enum fab_kind kind;
};

/* What a listener had to do since its last warning about it. */
struct flood_log {
	uint64_t next_ns;      /* no warning before this */
	unsigned int shed;     /* pending handshakes closed: over a bound */
	unsigned int shed_fd;  /* ... closed for their descriptor (EMFILE) */
	unsigned int refused;  /* connections closed on accept: no descriptor left */
	unsigned int failures; /* accept() failures, the last one's errno: */
	int err;
};

struct emu_listener {
	struct fab_handle h;
	int fd;
	bool local;                /* the AF_UNIX twin of the device's TCP listener */
	struct emu_listener *twin; /* the TCP one's AF_UNIX twin, or NULL */
	struct emu_device *dev;
	bool paused; /* out of epoll until resume_ns */
	uint64_t resume_ns;
	struct flood_log flood;
};

enum conn_state {
	CONN_CONNECTING, /* outbound: connect() in progress, hello queued */
	CONN_AUTH,       /* handshake in progress: c->hs says what comes next */
	CONN_UP,         /* authenticated: messages flow */
	CONN_DEAD,       /* socket closed; outbound ones reconnect on the next send */
};

struct fab_buf {
	uint8_t *data;
	size_t head, tail, cap; /* bytes [head, tail) are queued */
};

/* One stretch of a connection's output (fabric_out.c): ext NULL, the next
 * len bytes of its out buffer; else len bytes at ext, in MR mr (counted in
 * its wire_refs) or in own (malloc'd, freed with the piece). */
struct fab_piece {
	const uint8_t *ext;
	size_t len;
	struct emu_mr *mr;
	void *own;
};

/* The pieces in order, a ring of cap; bytes: their lengths' sum. */
struct fab_outq {
	struct fab_piece *v;
	size_t first, n, cap;
	size_t bytes;
};

struct emu_conn {
	struct fab_handle h;
	uint64_t id; /* unique in the process: inbox replies name it (worker.h) */
	int fd;
	enum conn_state state;
	bool outbound;
	bool local;              /* an AF_UNIX connection to a process of this host */
	bool in_blocked;         /* requests held back: our output is over the mark */
	bool wrote_this_pass;    /* one direct write per pass, the rest is batched */
	bool sock_full;          /* last write hit EAGAIN: EPOLLOUT will tell */
	bool doomed;             /* unlinked and freed by the next fab_reap() */
	bool admitted;           /* the large message at the input's head: its QP takes it */
	bool homed;              /* inbound: its first request chose its worker */
	int handoff;             /* inbound: index + 1 of the worker it goes to at fab_reap() */
	uint32_t skip;           /* data bytes of a message nobody took: dropped on arrival */
	uint32_t progress_at;    /* data bytes of the message at the input's head (or of the
	                          * one being skipped) when its requester last heard it was
	                          * arriving (conn_progress) */
	struct emu_msg skipping; /* the header of the message whose data is skipped */
	bool landing;            /* land's data is received at its target (fabric_land.c) */
	bool land_lost;          /* ... its target went away: skipping, then offered again */
	uint8_t land_last;       /* its last byte, received aside and stored last */
	uint32_t land_got;       /* its data bytes received */
	struct emu_msg land;
	uint32_t events;         /* epoll interest registered now */
	int refs;                /* attached QPs (outbound) */
	unsigned int fails;      /* failed connects in a row: quiets the log */
	uint64_t retry_ns;       /* no new connect() before this */
	uint64_t hs_deadline_ns; /* CONNECTING / AUTH: give up at this time */
	uint64_t heard_ns;       /* all input that came before this is dispatched */
	uint64_t read_seq;       /* the poll that last read it */
	struct emu_hs hs;
	struct emu_device *dev;  /* outbound: hello source; inbound: listener's */
	struct sockaddr_in addr; /* remote listener (outbound) or peer (inbound) */
	union ibv_gid peer_gid;
	struct fab_buf in, out; /* out: the bytes of outq's buffer pieces */
	struct fab_outq outq;
	struct fab_buf hold; /* outbound requests posted before CONN_UP */
	/* message bytes posted (written at once or queued in out or hold) and
	 * transmitted (written to the socket, or lost with the connection): a
	 * requester's timer starts once its request is transmitted */
	uint64_t tx_posted, tx_sent;
	size_t out_hs; /* handshake bytes at the head of out (before any message) */
	struct emu_conn *next;
	bool pending; /* inbound, in the pending list: handshake not over */
	struct emu_conn *pend_prev, *pend_next;
};

/* What the fabric's files share: the current worker's struct fab_state. */
#define fab (emu_worker_cur()->fab)
/* A paused listener's return; 0: none (emu_fabric_wait reads it unlocked). */
extern _Atomic uint64_t fab_accept_resume_ns;

/* fabric.c: sockets and the epoll set */
const char *fab_addr_str(const struct sockaddr_in *a, char *buf, size_t size);
int fab_epoll_set(int op, int fd, struct fab_handle *h, uint32_t events);
void fab_epoll_forget(int fd);
void fab_register_kick_now(int fd);
/* Register worker w's kick eventfd in its fabric state fs unless it is
 * already: the test is inline since every engine pass makes it. */
static inline void fab_register_kick(const struct emu_worker *w, const struct fab_state *fs)
{
	if (w->kick_fd > 0 && w->kick_fd != fs->kick_registered)
		fab_register_kick_now(w->kick_fd);
}
void fab_set_nodelay(int fd);
void fab_set_local_bufs(int fd);
socklen_t fab_local_name(const struct sockaddr_in *a, struct sockaddr_un *un);

/* fabric_buf.c */
static inline size_t fab_buf_used(const struct fab_buf *b)
{
	return b->tail - b->head;
}
void fab_buf_free(struct fab_buf *b);
int fab_buf_reserve(struct fab_buf *b, size_t n, size_t min_cap);
int fab_buf_append(struct fab_buf *b, const void *p, size_t n, size_t min_cap);
void fab_buf_settle(struct fab_buf *b);
/* Handshake bytes into c's output: they precede every message there. */
int fab_out_hs(struct emu_conn *c, const void *p, size_t n);
int fab_msg_append(struct fab_buf *b, const struct emu_msg *m, const void *payload, uint32_t plen,
                   size_t skip);

/* fabric_out.c: the output queue */
static inline size_t fab_out_used(const struct emu_conn *c)
{
	return c->outq.bytes;
}
int fab_out_copy(struct emu_conn *c, const void *p, size_t n);
/* Header m and plen bytes of payload but their first skip bytes; a large
 * payload in host MR src is queued by reference. 0 or -ENOMEM (nothing
 * queued). */
int fab_out_msg(struct emu_conn *c, const struct emu_msg *m, const void *payload, uint32_t plen,
                size_t skip, struct emu_mr *src);
void fab_out_trim(struct emu_conn *c, size_t keep);
int fab_out_iov(struct emu_conn *c, struct iovec *iov, int max);
void fab_out_consume(struct emu_conn *c, size_t n);
void fab_out_clear(struct emu_conn *c);
void fab_out_free(struct emu_conn *c);
int fab_out_detach_mr(struct emu_conn *c, const struct emu_mr *mr);

/* fabric_conn.c: life cycle */
const char *fab_conn_name(const struct emu_conn *c, char *buf, size_t size);
void fab_conn_update_events(struct emu_conn *c);
void fab_conn_down(struct emu_conn *c);
void fab_conn_fail(struct emu_conn *c, const char *why, int err);
void fab_conn_connect_failed(struct emu_conn *c, int err);
struct emu_conn *fab_conn_alloc(struct emu_device *dev, const struct sockaddr_in *addr,
                                bool outbound);
struct emu_conn *fab_conn_find(const struct emu_device *dev, const struct sockaddr_in *addr);
void fab_conn_connect(struct emu_conn *c);
bool fab_conn_revive(struct emu_conn *c);
void fab_conn_retire(struct emu_conn *c);
void fab_reap_due(void);
/* Free, unlink and hand over what is due (fab_reap_due). The test is inline:
 * the engine makes it twice a pass, and it is almost always false. */
static inline void fab_reap(const struct fab_state *fs)
{
	if (fs->reap_due)
		fab_reap_due();
}
/* fabric_conn.c: output and input */
int fab_conn_post(struct emu_conn *c, const struct emu_msg *m, const void *payload,
                  struct emu_mr *src);
size_t fab_conn_write(struct emu_conn *c);
int fab_conn_read(struct emu_conn *c);
void fab_dispatch(struct emu_conn *c, const struct emu_msg *m, const void *payload);
bool fab_take_header(struct emu_conn *c, const struct emu_msg *m);
int fab_conn_event(struct emu_conn *c, uint32_t events);
void fab_conn_heard(struct emu_conn *c, uint64_t t);
int fab_resume_blocked_conns(void);
/* Parse again what was held back; without connections there is none. */
static inline int fab_resume_blocked(const struct fab_state *fs)
{
	return fs->conns ? fab_resume_blocked_conns() : 0;
}

/* fabric_land.c */
bool fab_land_start(struct emu_conn *c, const struct emu_msg *m);
uint8_t *fab_land_at(struct emu_conn *c, size_t *room);
ssize_t fab_land_recv(struct emu_conn *c, uint8_t *at, size_t room);
int fab_land_got(struct emu_conn *c, size_t n);

/* fabric_hs.c */
int fab_hs_begin(struct emu_conn *c, enum emu_hs_role role);
void fab_hs_arm(struct emu_conn *c, uint64_t now);
void fab_conn_hs_step(struct emu_conn *c, const struct emu_wire_step *st);
void fab_conn_auth_failed(struct emu_conn *c, const char *why);
void fab_hs_expire_due(void);
/* Give up on handshakes past their deadline; inline test: none pending is
 * the engine's usual case, and it is checked every pass. */
static inline void fab_hs_expire(const struct fab_state *fs)
{
	if (fs->hs_next_ns)
		fab_hs_expire_due();
}

/* fabric_listen.c */
void fab_pending_del(struct emu_conn *c);
int fab_listener_accept(struct emu_listener *l);
void fab_listeners_resume(void);

#endif /* GNIC_EMU_FABRIC_INT_H */
