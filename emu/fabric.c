/* SPDX-License-Identifier: MIT */
/*
 * The fabric: carries requests and responses between QPs.
 *
 * In-process peers get a direct call. Everything else travels over TCP: each
 * device listens on one socket, and this process opens one connection per
 * (local device, remote listener) pair, shared by every QP of that device
 * whose destination GID names that listener. The hello that opens a
 * connection names the local device's GID, which is why connections are not
 * shared across local devices.
 *
 * Before anything else both ends of a connection authenticate each other
 * (fabric_wire.h): the connector queues its hello at connect(), requests
 * posted meanwhile wait in a hold buffer, and only when the acceptor's
 * challenge proved the secret do the proof and then the held requests go
 * out. The acceptor parses no message before the proof checked out. A
 * handshake that fails or does not finish within GNIC_EMU_HANDSHAKE_MS
 * closes the connection with one log line; the requester's retransmit timer
 * then ends its QP in TRANSPORT_RETRY_EXC as for any unreachable peer.
 *
 * Anyone who can reach a listener can open connections without the secret,
 * and each holds a descriptor until its handshake ends. So inbound
 * handshakes are bounded (GNIC_EMU_PENDING_MAX in all, at most a quarter of
 * RLIMIT_NOFILE; GNIC_EMU_PENDING_PER_IP from one address): over a bound the
 * oldest one that has not even said hello is dropped first. Out of
 * descriptors, a listener sheds a pending handshake, or takes one connection
 * off its backlog with a reserve descriptor and closes it, and then leaves
 * epoll for FAB_ACCEPT_PAUSE_NS instead of waking the engine for nothing;
 * any listener under such pressure pauses the same way, which bounds the
 * CPU a flood costs. Events of authenticated connections are handled before
 * those of handshakes and listeners, and the warnings are one per listener
 * and FAB_FLOOD_LOG_NS, with counts.
 *
 * Every socket is non-blocking and sits in emu_nic.epoll_fd (level-triggered)
 * next to the engine's kick eventfd. Output is appended to a per-connection
 * buffer and written once per engine pass (emu_fabric_flush); input is read in
 * big chunks into a compacting buffer and dispatched in place, so a message
 * costs a memcpy, not a syscall or a malloc. A message larger than
 * FAB_IN_FREE is buffered whole only once its QP said it takes it (its
 * header is offered alone first): a peer can make this process hold no more
 * than the WRITE targets it may write or the READ data it was asked for;
 * the data of anything refused or dropped is discarded as it arrives.
 *
 * All state here belongs to the engine and is guarded by nic.lock, except the
 * epoll set itself, which emu_fabric_wait() sleeps on without the lock.
 * Connection memory is only freed between dispatches (reap()), so callbacks
 * may fail or detach any connection without pulling memory from under the
 * parser.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "fabric.h"

enum {
	FAB_READ_CHUNK = 256 * 1024,       /* one recv() */
	FAB_READ_BUDGET = 4 * 1024 * 1024, /* per connection and poll: fairness */
	FAB_IN_MIN = 2 * FAB_READ_CHUNK,   /* so a chunk fits after a partial message */
	FAB_IN_FREE = 1024 * 1024,         /* larger messages: only once their QP takes them */
	FAB_OUT_MIN = 64 * 1024,
	FAB_KEEP_MAX = 4 * 1024 * 1024, /* idle buffers above this are released */
	FAB_POLL_EVENTS = 64,
	FAB_ACCEPT_BATCH = 16,
};
#define FAB_OUT_HIGH_WATER  ((size_t)64 << 20)
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

struct emu_conn {
	struct fab_handle h;
	int fd;
	enum conn_state state;
	bool outbound;
	bool in_blocked;         /* requests held back: our output is over the mark */
	bool wrote_this_pass;    /* one direct write per pass, the rest is batched */
	bool sock_full;          /* last write hit EAGAIN: EPOLLOUT will tell */
	bool doomed;             /* unlinked and freed by the next reap() */
	bool admitted;           /* the large message at the input's head: its QP takes it */
	uint32_t skip;           /* data bytes of a message nobody took: dropped on arrival */
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
	struct fab_buf in, out;
	struct fab_buf hold; /* outbound requests posted before CONN_UP */
	struct emu_conn *next;
	bool pending; /* inbound, in the pending list: handshake not over */
	struct emu_conn *pend_prev, *pend_next;
};

static struct fab_handle kick_handle = {FAB_KICK};
static int kick_registered = -1;
static struct emu_conn *conns;
static bool dispatching;    /* inside emu_fabric_poll(): frees wait for reap() */
static uint64_t poll_seq;   /* emu_fabric_poll() calls */
static bool reap_due;       /* some connection died or was retired */
static uint64_t hs_next_ns; /* earliest handshake deadline; 0: none pending */
/* Failed handshakes are logged once per peer and FAB_AUTH_LOG_NS: a
 * requester retries every few ms, every QP reconnect opens a new connection,
 * and an inbound peer comes from a new port each time. */
static struct auth_log {
	bool outbound;
	struct in_addr ip;
	in_port_t port;     /* outbound: the listener's; inbound: not compared */
	uint64_t next_ns;   /* no report before this */
	unsigned int quiet; /* failures not reported since the last line */
} auth_logs[16];
/* ... and, peers being many (a flood from all of 127/8), in all. */
static struct {
	uint64_t window_ns; /* this window of FAB_AUTH_LOG_NS began then */
	unsigned int lines, quiet;
} auth_log_all;
static _Atomic bool no_pwait2;
/* Inbound connections in their handshake, oldest first. */
static struct {
	struct emu_conn *head, *tail;
	unsigned int n;
} pend;
static int reserve_fd = -1;               /* spent to refuse a connection on EMFILE */
static _Atomic uint64_t accept_resume_ns; /* a paused listener's return; 0: none */

/* ---- helpers -------------------------------------------------------------- */

static const char *addr_str(const struct sockaddr_in *a, char *buf, size_t size)
{
	char ip[INET_ADDRSTRLEN];

	if (!inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip)))
		strcpy(ip, "?");
	snprintf(buf, size, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}

static int epoll_set(int op, int fd, struct fab_handle *h, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = h};

	return epoll_ctl(emu_nic.epoll_fd, op, fd, &ev) ? -errno : 0;
}

static void epoll_forget(int fd)
{
	epoll_ctl(emu_nic.epoll_fd, EPOLL_CTL_DEL, fd, NULL);
}

/* The engine sleeps in emu_fabric_wait(); the kick eventfd must be in the set
 * to cut that sleep short. MOD also covers a registration made by someone else
 * with other event data. */
static void register_kick(void)
{
	int fd = emu_nic.kick_fd;

	if (fd <= 0 || fd == kick_registered)
		return;
	if (epoll_set(EPOLL_CTL_ADD, fd, &kick_handle, EPOLLIN) == -EEXIST &&
	    epoll_set(EPOLL_CTL_MOD, fd, &kick_handle, EPOLLIN))
		return;
	kick_registered = fd;
}

static void drain_kick(void)
{
	uint64_t v;

	/* Level-triggered and we are the only reader: this never blocks. */
	if (read(emu_nic.kick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		emu_dbg("fabric: kick eventfd read: %s", strerror(errno));
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- buffers -------------------------------------------------------------- */

static size_t buf_used(const struct fab_buf *b)
{
	return b->tail - b->head;
}

static void buf_free(struct fab_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* Make room for n more bytes at the tail: slide the queued bytes to the front
 * first, grow only if that is not enough. */
static int buf_reserve(struct fab_buf *b, size_t n, size_t min_cap)
{
	size_t used = buf_used(b), cap;
	uint8_t *data;

	if (b->cap - b->tail >= n)
		return 0;
	if (b->head) {
		memmove(b->data, b->data + b->head, used);
		b->head = 0;
		b->tail = used;
		if (b->cap - used >= n)
			return 0;
	}
	cap = b->cap * 2 > min_cap ? b->cap * 2 : min_cap;
	if (cap < used + n)
		cap = used + n;
	data = realloc(b->data, cap);
	if (!data)
		return -ENOMEM;
	b->data = data;
	b->cap = cap;
	return 0;
}

/* Append n bytes. */
static int buf_append(struct fab_buf *b, const void *p, size_t n, size_t min_cap)
{
	if (buf_reserve(b, n, min_cap))
		return -ENOMEM;
	memcpy(b->data + b->tail, p, n);
	b->tail += n;
	return 0;
}

/* An empty buffer rewinds; a big one (after a large message) is released. */
static void buf_settle(struct fab_buf *b)
{
	if (b->head != b->tail)
		return;
	b->head = b->tail = 0;
	if (b->cap > FAB_KEEP_MAX)
		buf_free(b);
}

/* ---- connections: life cycle ---------------------------------------------- */

static const char *conn_name(const struct emu_conn *c, char *buf, size_t size)
{
	char a[48];

	snprintf(buf, size, "%s %s", c->outbound ? "to" : "from", addr_str(&c->addr, a, sizeof(a)));
	return buf;
}

static uint32_t conn_want_events(const struct emu_conn *c)
{
	uint32_t ev;

	if (c->state == CONN_CONNECTING)
		return EPOLLOUT;
	ev = c->in_blocked ? 0 : EPOLLIN;
	if (buf_used(&c->out))
		ev |= EPOLLOUT;
	return ev;
}

static void conn_update_events(struct emu_conn *c)
{
	uint32_t want;

	if (c->fd < 0)
		return;
	want = conn_want_events(c);
	if (want != c->events && !epoll_set(EPOLL_CTL_MOD, c->fd, &c->h, want))
		c->events = want;
}

static void conn_close_fd(struct emu_conn *c)
{
	if (c->fd < 0)
		return;
	epoll_forget(c->fd);
	close(c->fd);
	c->fd = -1;
	c->events = 0;
}

/* The connection is gone: whatever was queued either way is lost, like
 * packets on a cut wire (requesters retransmit). Memory goes in reap(). */
static void pending_del(struct emu_conn *c);

static void conn_down(struct emu_conn *c)
{
	pending_del(c);
	conn_close_fd(c);
	c->state = CONN_DEAD;
	c->in_blocked = false;
	c->admitted = false;
	c->skip = 0;
	c->in.head = c->in.tail = 0;
	c->out.head = c->out.tail = 0;
	c->hold.head = c->hold.tail = 0;
	if (!c->outbound)
		c->doomed = true;
	reap_due = true;
}

static void conn_fail(struct emu_conn *c, const char *why, int err)
{
	char name[64];

	if (c->state == CONN_DEAD)
		return;
	emu_info("fabric: connection %s: %s%s%s", conn_name(c, name, sizeof(name)), why,
	         err ? ": " : "", err ? strerror(err) : "");
	conn_down(c);
}

static void conn_connect_failed(struct emu_conn *c, int err)
{
	char name[64];

	/* A peer that is not up yet is retried every few ms: log it once. */
	if (c->fails++ == 0)
		emu_info("fabric: cannot connect %s: %s", conn_name(c, name, sizeof(name)),
		         strerror(err));
	else
		emu_dbg("fabric: cannot connect %s: %s", conn_name(c, name, sizeof(name)),
		        strerror(err));
	conn_down(c);
}

/* ---- connections: authentication ----------------------------------------- */

/* The handshake must be over by then; emu_fabric_poll() checks. */
static void hs_arm(struct emu_conn *c, uint64_t now)
{
	c->hs_deadline_ns = now + (uint64_t)emu_cfg.handshake_ms * 1000000u;
	if (!hs_next_ns || c->hs_deadline_ns < hs_next_ns)
		hs_next_ns = c->hs_deadline_ns;
}

/* Start the handshake: fresh nonce, and for the connector its hello as the
 * first bytes of the output. The connector accepts only the GID it dialed;
 * the acceptor refuses the GIDs of this process's devices (they never dial
 * each other over the fabric: emu_fabric_attach). 0 or -errno. */
static int hs_begin(struct emu_conn *c, enum emu_hs_role role)
{
	uint8_t nonce[EMU_AUTH_NONCE_LEN], out[EMU_HS_OUT_MAX];
	const uint8_t *key;
	size_t key_len, n;
	int ret;

	if (emu_auth_key(&key, &key_len))
		return -ENOKEY; /* why was logged when the secret was loaded */
	ret = emu_auth_nonce(nonce);
	if (ret)
		return ret;
	emu_hs_start(&c->hs, role, key, key_len, &c->dev->gid,
	             role == EMU_HS_CONNECTOR ? &c->peer_gid : NULL, nonce, out, &n);
	for (int i = 0; role == EMU_HS_ACCEPTOR && i < emu_nic.num_devices; i++)
		emu_hs_refuse_gid(&c->hs, &emu_nic.devices[i].gid);
	return n ? buf_append(&c->out, out, n, FAB_OUT_MIN) : 0;
}

static struct auth_log *auth_log_of(const struct emu_conn *c)
{
	struct auth_log *oldest = &auth_logs[0];

	for (size_t i = 0; i < sizeof(auth_logs) / sizeof(auth_logs[0]); i++) {
		struct auth_log *l = &auth_logs[i];

		if (l->next_ns && l->outbound == c->outbound &&
		    l->ip.s_addr == c->addr.sin_addr.s_addr &&
		    (!c->outbound || l->port == c->addr.sin_port))
			return l;
		if (l->next_ns < oldest->next_ns)
			oldest = l;
	}
	memset(oldest, 0, sizeof(*oldest));
	oldest->outbound = c->outbound;
	oldest->ip = c->addr.sin_addr;
	oldest->port = c->addr.sin_port;
	return oldest;
}

/* A handshake that failed or timed out: one warning per peer and
 * FAB_AUTH_LOG_NS (with a count of the ones in between), debug lines for
 * the rest. */
static void conn_auth_failed(struct emu_conn *c, const char *why)
{
	struct auth_log *l;
	char name[64];
	uint64_t now;

	if (c->state == CONN_DEAD)
		return;
	conn_name(c, name, sizeof(name));
	l = auth_log_of(c);
	now = emu_now_ns();
	if (now >= auth_log_all.window_ns + FAB_AUTH_LOG_NS) {
		auth_log_all.window_ns = now;
		auth_log_all.lines = 0;
	}
	if (now >= l->next_ns && auth_log_all.lines < FAB_AUTH_LOG_MAX) {
		if (l->quiet || auth_log_all.quiet)
			emu_warn("fabric: connection %s: %s; closing (%u more from this peer, %u "
			         "from others, since the last report)",
			         name, why, l->quiet, auth_log_all.quiet);
		else
			emu_warn("fabric: connection %s: %s; closing", name, why);
		l->quiet = 0;
		auth_log_all.quiet = 0;
		auth_log_all.lines++;
		l->next_ns = now + FAB_AUTH_LOG_NS;
	} else if (now >= l->next_ns) {
		auth_log_all.quiet++; /* too many peers failing: counted, reported later */
		emu_dbg("fabric: connection %s: %s; closing", name, why);
	} else {
		l->quiet++;
		emu_dbg("fabric: connection %s: %s; closing", name, why);
	}
	conn_down(c);
}

/* The peer proved the secret: messages may flow. The connector's proof is
 * queued now, and the requests held back go out right behind it. */
static void conn_authenticated(struct emu_conn *c)
{
	char name[64];

	/* the handshake checked it; messages flow only on this being true */
	if (c->outbound && memcmp(emu_hs_peer_gid(&c->hs), &c->peer_gid, sizeof(c->peer_gid))) {
		conn_auth_failed(c, "authentication failed: the peer is not the one dialed");
		return;
	}
	c->state = CONN_UP;
	pending_del(c);
	if (!c->outbound)
		c->peer_gid = *emu_hs_peer_gid(&c->hs);
	if (buf_used(&c->hold)) {
		if (buf_append(&c->out, c->hold.data + c->hold.head, buf_used(&c->hold),
		               FAB_OUT_MIN)) {
			conn_fail(c, "output buffer", ENOMEM);
			return;
		}
		c->hold.head = c->hold.tail;
	}
	buf_free(&c->hold);
	emu_dbg("fabric: connection %s: authenticated", conn_name(c, name, sizeof(name)));
	conn_update_events(c);
}

/* Give up on handshakes past their deadline. */
static void hs_expire(void)
{
	uint64_t now, next = 0;

	if (!hs_next_ns || (now = emu_now_ns()) < hs_next_ns)
		return;
	for (struct emu_conn *c = conns; c; c = c->next) {
		if (c->state != CONN_CONNECTING && c->state != CONN_AUTH)
			continue;
		if (now < c->hs_deadline_ns) {
			if (!next || c->hs_deadline_ns < next)
				next = c->hs_deadline_ns;
		} else if (c->state == CONN_CONNECTING) {
			conn_connect_failed(c, ETIMEDOUT);
		} else {
			conn_auth_failed(c, "handshake timed out");
		}
	}
	hs_next_ns = next;
}

/* ---- connections: connect ------------------------------------------------- */

/* Start a non-blocking connect; the hello goes first in the output. On
 * failure the connection stays DEAD until retry_ns. */
static void conn_connect(struct emu_conn *c)
{
	uint64_t now = emu_now_ns();
	int fd, err;

	c->retry_ns = now + FAB_RECONNECT_NS;
	c->in.head = c->in.tail = c->out.head = c->out.tail = 0;
	c->hold.head = c->hold.tail = 0;
	c->sock_full = false;
	err = hs_begin(c, EMU_HS_CONNECTOR);
	if (err) {
		conn_connect_failed(c, -err);
		return;
	}
	hs_arm(c, now);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		conn_connect_failed(c, errno);
		return;
	}
	set_nodelay(fd);
	c->fd = fd;
	if (!connect(fd, (const struct sockaddr *)&c->addr, sizeof(c->addr)))
		c->state = CONN_AUTH;
	else if (errno == EINPROGRESS)
		c->state = CONN_CONNECTING;
	else
		goto fail;
	c->events = conn_want_events(c);
	if (epoll_set(EPOLL_CTL_ADD, fd, &c->h, c->events))
		goto fail;
	if (c->state == CONN_AUTH)
		c->fails = 0;
	return;
fail:
	err = errno;
	conn_connect_failed(c, err);
}

/* A stale readiness event can reach a socket that is still connecting:
 * SO_ERROR is 0 then too, but it has no peer yet. */
static bool still_connecting(int fd)
{
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);

	return getpeername(fd, (struct sockaddr *)&peer, &len) && errno == ENOTCONN;
}

/* connect() finished, one way or the other. */
static int conn_connected(struct emu_conn *c)
{
	char name[64];
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return 0;
	if (!err && still_connecting(c->fd))
		return 0;
	if (err) {
		conn_connect_failed(c, err);
		return 1;
	}
	c->state = CONN_AUTH;
	c->fails = 0;
	emu_dbg("fabric: connected %s", conn_name(c, name, sizeof(name)));
	conn_update_events(c);
	return 1;
}

static struct emu_conn *conn_alloc(struct emu_device *dev, const struct sockaddr_in *addr,
                                   bool outbound)
{
	struct emu_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->h.kind = FAB_CONN;
	c->fd = -1;
	c->state = CONN_DEAD;
	c->outbound = outbound;
	c->dev = dev;
	c->addr = *addr;
	c->heard_ns = emu_now_ns(); /* nothing can have come before it existed */
	c->next = conns;
	conns = c;
	return c;
}

static struct emu_conn *conn_find(const struct emu_device *dev, const struct sockaddr_in *addr)
{
	for (struct emu_conn *c = conns; c; c = c->next)
		if (c->outbound && !c->doomed && c->dev == dev &&
		    c->addr.sin_addr.s_addr == addr->sin_addr.s_addr &&
		    c->addr.sin_port == addr->sin_port)
			return c;
	return NULL;
}

/* Free what dead connections hold and unlink the doomed ones. Never called
 * while a message is being dispatched. */
static void reap(void)
{
	struct emu_conn **pp = &conns;

	if (!reap_due)
		return;
	reap_due = false;
	while (*pp) {
		struct emu_conn *c = *pp;

		if (c->state == CONN_DEAD || c->doomed) {
			buf_free(&c->in);
			buf_free(&c->out);
			buf_free(&c->hold);
		}
		if (c->doomed) {
			conn_close_fd(c);
			*pp = c->next;
			free(c);
			continue;
		}
		pp = &c->next;
	}
}

static void conn_retire(struct emu_conn *c)
{
	conn_close_fd(c);
	c->state = CONN_DEAD;
	c->doomed = true;
	reap_due = true;
	if (!dispatching)
		reap();
}

/* ---- output --------------------------------------------------------------- */

/* Append header + payload to b, skipping the first skip bytes already
 * written. */
static int msg_append(struct fab_buf *b, const struct emu_msg *m, const void *payload,
                      uint32_t plen, size_t skip)
{
	size_t hlen = sizeof(*m), n = hlen + plen - skip;
	uint8_t *p;

	if (buf_reserve(b, n, FAB_OUT_MIN))
		return -ENOMEM;
	p = b->data + b->tail;
	if (skip < hlen) {
		memcpy(p, (const uint8_t *)m + skip, hlen - skip);
		p += hlen - skip;
		skip = 0;
	} else {
		skip -= hlen;
	}
	if (plen > skip)
		memcpy(p, (const uint8_t *)payload + skip, plen - skip);
	b->tail += n;
	return 0;
}

/* An idle connection sends its first message of the pass right away (one
 * latency hop less); later ones wait for emu_fabric_flush(). Returns bytes
 * written, or -errno when the socket is broken. */
static ssize_t out_direct(struct emu_conn *c, const struct emu_msg *m, const void *payload,
                          uint32_t plen)
{
	struct iovec iov[2] = {{(void *)m, sizeof(*m)}, {(void *)payload, plen}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = plen ? 2 : 1};
	ssize_t n;

	if (c->state != CONN_UP || buf_used(&c->out) || c->wrote_this_pass)
		return 0;
	c->wrote_this_pass = true;
	do
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

static int conn_post(struct emu_conn *c, const struct emu_msg *m, const void *payload)
{
	uint32_t plen = emu_wire_payload_len(m);
	ssize_t sent;

	/* not authenticated yet: nothing may precede the proof */
	if (c->state != CONN_UP)
		return msg_append(&c->hold, m, payload, plen, 0) ? -EAGAIN : 0;
	sent = out_direct(c, m, payload, plen);
	if (sent < 0) {
		conn_fail(c, "send failed", (int)-sent);
		return -ENOTCONN;
	}
	if ((size_t)sent == sizeof(*m) + plen)
		return 0;
	/* out of memory: like a full queue, the requester tries again later */
	return msg_append(&c->out, m, payload, plen, (size_t)sent) ? -EAGAIN : 0;
}

/* Write what is queued until the socket is full. Returns bytes written. */
static size_t conn_write(struct emu_conn *c)
{
	size_t total = 0;

	while ((c->state == CONN_UP || c->state == CONN_AUTH) && buf_used(&c->out)) {
		ssize_t n = send(c->fd, c->out.data + c->out.head, buf_used(&c->out),
		                 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->out.head += (size_t)n;
			total += (size_t)n;
			c->sock_full = false;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->sock_full = true;
			break;
		} else {
			conn_fail(c, "send failed", n < 0 ? errno : EPIPE);
			return total;
		}
	}
	buf_settle(&c->out);
	return total;
}

/* ---- input ---------------------------------------------------------------- */

/* The unread input (a released buffer has no data pointer at all). */
static const uint8_t *in_head(const struct emu_conn *c)
{
	return c->in.data ? c->in.data + c->in.head : NULL;
}

/* Bytes the next frame needs in the input buffer, counted from its head. */
static size_t in_need(const struct emu_conn *c)
{
	return emu_wire_need(&c->hs, in_head(c), buf_used(&c->in));
}

/* Does the next message need more than FAB_IN_FREE bytes of buffer? */
static bool msg_big(size_t need)
{
	return need > sizeof(struct emu_msg) + FAB_IN_FREE;
}

/* Room for one recv(): a full chunk, or the rest of a large message its QP
 * took. Before the peer is authenticated, exactly the next handshake frame:
 * an unknown peer gets no big buffer, and no message byte is read before
 * the proof. */
static size_t in_room(struct emu_conn *c)
{
	size_t used = buf_used(&c->in), need = c->skip ? 0 : in_need(c), want;

	buf_settle(&c->in);
	want = need > used ? need - used : 0;
	if (c->state == CONN_AUTH) {
		want = want ? want : 1; /* never a 0-byte recv(): that reads as EOF */
		if (buf_reserve(&c->in, want, EMU_HS_OUT_MAX))
			return 0;
		return want;
	}
	if (msg_big(need) && !c->admitted)
		want = 0; /* a chunk at a time until conn_parse() asked its QP */
	if (want < FAB_READ_CHUNK)
		want = FAB_READ_CHUNK;
	if (buf_reserve(&c->in, want, FAB_IN_MIN))
		return 0;
	return c->in.cap - c->in.tail;
}

/* Request m for a QP of this process goes to its type's responder. Like a
 * wire: a request for a QP that does not exist is dropped. */
static bool deliver_request(struct emu_reply_path *from, const struct emu_msg *m,
                            const void *payload)
{
	struct emu_qp *qp = emu_qp_lookup(m->dst_qpn);

	if (!qp) {
		emu_dbg("request type %u psn %u for QP 0x%x dropped: no such QP", m->type, m->psn,
		        m->dst_qpn);
		return true;
	}
	return qp->ops->on_request(qp, from, m, payload);
}

/* A response for a QP that is gone, or that talks to someone else now, is
 * dropped like a stray packet (true: nothing more to do with it). */
static bool deliver_response(struct emu_conn *c, const struct emu_msg *m, const void *payload)
{
	struct emu_qp *qp = emu_qp_lookup(m->dst_qpn);

	return !qp || qp->conn != c || qp->ops->on_response(qp, m, payload);
}

static void dispatch(struct emu_conn *c, const struct emu_msg *m, const void *payload)
{
	struct emu_reply_path path = {.conn = c, .peer_gid = &c->peer_gid};

	if (emu_wire_is_request(m->type))
		deliver_request(&path, m, payload);
	else
		deliver_response(c, m, payload);
}

/* A large message's header is in, its data is not: offer the header alone
 * (emu_requester_on_response() in rc.h says how). true: it was handled
 * without the data, which is then dropped as it arrives. */
static bool take_header(struct emu_conn *c, const struct emu_msg *m)
{
	struct emu_reply_path path = {.conn = c, .peer_gid = &c->peer_gid};

	if (emu_wire_is_request(m->type))
		return deliver_request(&path, m, NULL);
	return deliver_response(c, m, NULL);
}

/* The message at the input's head was handled from its header: drop the
 * header and its data, what is here now and the rest as it comes. */
static void skip_msg(struct emu_conn *c, const struct emu_msg *m, size_t size)
{
	size_t data = size - sizeof(*m), here = buf_used(&c->in) - sizeof(*m);
	char name[64];

	if (here > data)
		here = data;
	c->in.head += sizeof(*m) + here;
	c->skip = (uint32_t)(data - here);
	emu_dbg("fabric: connection %s: %zu bytes of data of type %u psn %u for QP 0x%x dropped "
	        "(not taken)",
	        conn_name(c, name, sizeof(name)), data, m->type, m->psn, m->dst_qpn);
}

/* Drop skipped data that arrived. true while more of it is to come. */
static bool skip_input(struct emu_conn *c)
{
	size_t n = buf_used(&c->in);

	if (n > c->skip)
		n = c->skip;
	c->in.head += n;
	c->skip -= (uint32_t)n;
	return c->skip != 0;
}

/* A GID as the address it encodes, or in hex when it encodes none. */
static const char *gid_str(const union ibv_gid *gid, char *buf, size_t size)
{
	struct sockaddr_in a;
	size_t n = 0;

	if (!emu_gid_to_addr(gid, &a))
		return addr_str(&a, buf, size);
	for (size_t i = 0; i < sizeof(gid->raw) && n + 3 <= size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%02x", gid->raw[i]);
	return buf;
}

/* Why a peer's identity was refused, naming the GIDs involved. */
static void hs_identity_why(const struct emu_conn *c, enum emu_hs_result r, char *why, size_t size)
{
	char claim[48], dialed[48];

	gid_str(&c->hs.peer_claim, claim, sizeof(claim));
	if (r == EMU_HS_ERR_NOT_DIALED)
		snprintf(why, size,
		         "authentication failed: %s (it names GID %s, this connection "
		         "dialed %s)",
		         emu_hs_result_str(r), claim,
		         gid_str(&c->peer_gid, dialed, sizeof(dialed)));
	else
		snprintf(why, size, "authentication failed: %s (GID %s)", emu_hs_result_str(r),
		         claim);
}

/* A handshake frame was taken: send the reply it asks for, and admit the
 * peer once the handshake is over. */
static void conn_hs_step(struct emu_conn *c, const struct emu_wire_step *st)
{
	char why[200];

	if (st->ev == EMU_WIRE_EV_HS_FAIL) {
		if (st->result == EMU_HS_ERR_MAGIC)
			snprintf(why, sizeof(why), "authentication failed: %s: magic 0x%08x",
			         emu_hs_result_str(st->result), c->hs.peer_magic);
		else if (st->result == EMU_HS_ERR_VERSION)
			snprintf(why, sizeof(why),
			         "authentication failed: the peer speaks fabric version %u, this "
			         "emulator %u",
			         c->hs.peer_version, EMU_FABRIC_VERSION);
		else if (st->result == EMU_HS_ERR_NOT_DIALED || st->result == EMU_HS_ERR_SELF)
			hs_identity_why(c, st->result, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "authentication failed: %s",
			         emu_hs_result_str(st->result));
		conn_auth_failed(c, why);
		return;
	}
	if (st->out_len && buf_append(&c->out, st->out, st->out_len, FAB_OUT_MIN)) {
		conn_fail(c, "output buffer", ENOMEM);
		return;
	}
	if (c->hs.state == EMU_HS_DONE)
		conn_authenticated(c);
	else
		conn_update_events(c);
}

/* Take every whole frame in the input buffer: handshake frames until the
 * peer is authenticated, then messages, which are dispatched; of a large
 * message the header alone first (take_header). Requests wait while this
 * connection's output is over the high-water mark: their replies would grow
 * it without bound. Responses always go through, so two processes that both
 * hold back requests still drain each other. */
static int conn_parse(struct emu_conn *c)
{
	struct emu_wire_step st;
	char name[64];
	int msgs = 0;

	while (c->state == CONN_AUTH || c->state == CONN_UP) {
		const uint8_t *p;

		if (c->skip && skip_input(c))
			return msgs;
		p = in_head(c);
		emu_wire_input(&c->hs, p, buf_used(&c->in), &st);
		switch (st.ev) {
		case EMU_WIRE_EV_NEED:
			/* a large message's header, not yet offered: go on */
			if (c->state != CONN_UP || c->admitted || !msg_big(st.size) ||
			    buf_used(&c->in) < sizeof(st.msg))
				return msgs;
			break;
		case EMU_WIRE_EV_HS:
		case EMU_WIRE_EV_HS_FAIL:
			c->in.head += st.size;
			conn_hs_step(c, &st);
			continue;
		case EMU_WIRE_EV_BAD:
			emu_warn("fabric: connection %s: malformed message (type %u len %u), "
			         "closing",
			         conn_name(c, name, sizeof(name)), st.msg.type, st.msg.len);
			conn_down(c);
			return msgs;
		case EMU_WIRE_EV_MSG:
			break;
		}
		if (emu_wire_is_request(st.msg.type) && buf_used(&c->out) >= FAB_OUT_HIGH_WATER) {
			emu_dbg("fabric: connection %s: output full, holding requests",
			        conn_name(c, name, sizeof(name)));
			c->in_blocked = true;
			break;
		}
		if (st.ev == EMU_WIRE_EV_NEED) {
			if (!take_header(c, &st.msg)) {
				c->admitted = true; /* in_room() makes room for all of it */
				return msgs;
			}
			skip_msg(c, &st.msg, st.size);
			msgs++;
			continue;
		}
		c->in.head += st.size;
		c->admitted = false;
		dispatch(c, &st.msg, p + sizeof(st.msg));
		msgs++;
	}
	return msgs;
}

/* The peer closed or reset the connection. During the handshake that is
 * how an acceptor that refused us answers: the connector says so (once);
 * an inbound peer that gives up has nothing to report. */
static void conn_closed(struct emu_conn *c, int err)
{
	char name[64], why[160];

	if (c->state == CONN_AUTH && c->outbound) {
		snprintf(why, sizeof(why),
		         "handshake failed: closed by the peer%s%s (another secret or fabric "
		         "version on that side, or too many connections waiting there?)",
		         err ? ": " : "", err ? strerror(err) : "");
		conn_auth_failed(c, why);
	} else if (c->state == CONN_AUTH) {
		emu_dbg("fabric: connection %s: closed during the handshake",
		        conn_name(c, name, sizeof(name)));
		conn_down(c);
	} else {
		conn_fail(c, err ? "receive failed" : "closed by peer", err);
	}
}

static void conn_heard(struct emu_conn *c, uint64_t t)
{
	if (t > c->heard_ns)
		c->heard_ns = t;
}

/* The socket was found empty by a recv() that started at t: everything that
 * came before t is dispatched, unless requests are held back. */
static void conn_drained(struct emu_conn *c, uint64_t t)
{
	if (!c->in_blocked)
		conn_heard(c, t);
}

/* Read and dispatch until the socket is empty or the budget is spent. */
static int conn_read(struct emu_conn *c)
{
	size_t budget = FAB_READ_BUDGET;
	int work = 0;

	c->read_seq = poll_seq;
	while (budget && c->fd >= 0 && !c->in_blocked) {
		size_t room = in_room(c);
		uint64_t t = emu_now_ns();
		ssize_t n;

		if (!room) {
			conn_fail(c, "input buffer", ENOMEM);
			break;
		}
		n = recv(c->fd, c->in.data + c->in.tail, room, MSG_DONTWAIT);
		if (n > 0) {
			c->in.tail += (size_t)n;
			budget -= (size_t)n < budget ? (size_t)n : budget;
			work += 1 + conn_parse(c);
			if ((size_t)n < room) { /* short read: the socket is drained */
				conn_drained(c, t);
				break;
			}
		} else if (n == 0) {
			conn_closed(c, 0);
		} else if (errno != EINTR) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				conn_drained(c, t);
			else
				conn_closed(c, errno);
			break;
		}
	}
	conn_update_events(c);
	return work;
}

static int conn_event(struct emu_conn *c, uint32_t events)
{
	if (c->fd < 0 || c->doomed)
		return 0;
	if (c->state == CONN_CONNECTING)
		return conn_connected(c);
	if (c->in_blocked && (events & (EPOLLHUP | EPOLLERR))) {
		conn_fail(c, "hung up", 0);
		return 1;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		return conn_read(c);
	return 0;
}

/* Connections whose output fell below the mark take requests again. */
static int resume_blocked(void)
{
	int work = 0;

	for (struct emu_conn *c = conns; c; c = c->next) {
		if (!c->in_blocked || buf_used(&c->out) >= FAB_OUT_HIGH_WATER)
			continue;
		c->in_blocked = false;
		work += conn_parse(c);
		conn_update_events(c);
	}
	return work;
}

/* ---- pending handshakes ---------------------------------------------------- */

static void pending_add(struct emu_conn *c)
{
	c->pending = true;
	c->pend_prev = pend.tail;
	c->pend_next = NULL;
	if (pend.tail)
		pend.tail->pend_next = c;
	else
		pend.head = c;
	pend.tail = c;
	pend.n++;
}

static void pending_del(struct emu_conn *c)
{
	if (!c->pending)
		return;
	if (c->pend_prev)
		c->pend_prev->pend_next = c->pend_next;
	else
		pend.head = c->pend_next;
	if (c->pend_next)
		c->pend_next->pend_prev = c->pend_prev;
	else
		pend.tail = c->pend_prev;
	c->pending = false;
	c->pend_prev = c->pend_next = NULL;
	pend.n--;
}

/* GNIC_EMU_PENDING_MAX, or less: a flood must leave the application most of
 * its descriptors. */
static unsigned int pending_limit(void)
{
	unsigned int limit = (unsigned int)emu_cfg.pending_max;
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < limit)
		limit = rl.rlim_cur / 4 > FAB_PENDING_MIN ? (unsigned int)(rl.rlim_cur / 4)
		                                          : FAB_PENDING_MIN;
	return limit;
}

static unsigned int pending_per_ip_limit(unsigned int total)
{
	unsigned int per_ip = (unsigned int)emu_cfg.pending_per_ip;

	return per_ip < total ? per_ip : total;
}

static unsigned int pending_from(struct in_addr ip)
{
	unsigned int n = 0;

	for (struct emu_conn *c = pend.head; c; c = c->pend_next)
		n += c->addr.sin_addr.s_addr == ip.s_addr;
	return n;
}

/* The pending handshake to drop first (from ip only, unless NULL): the
 * oldest that has not sent its hello, so a silent flood never displaces a
 * peer that is talking; else the oldest. */
static struct emu_conn *pending_victim(const struct in_addr *ip)
{
	struct emu_conn *oldest = NULL;

	for (struct emu_conn *c = pend.head; c; c = c->pend_next) {
		if (ip && c->addr.sin_addr.s_addr != ip->s_addr)
			continue;
		if (c->hs.state == EMU_HS_WAIT_HELLO)
			return c;
		if (!oldest)
			oldest = c;
	}
	return oldest;
}

/* Close pending handshake c; count is the reason's counter. */
static void pending_shed(struct emu_conn *c, unsigned int *count)
{
	char name[64];

	emu_dbg("fabric: connection %s: dropped, %u handshakes pending",
	        conn_name(c, name, sizeof(name)), pend.n);
	(*count)++;
	conn_down(c);
}

/* Room for one more pending handshake, from ip. true if some had to go. */
static bool pending_make_room(struct emu_listener *l, struct in_addr ip)
{
	unsigned int total = pending_limit(), per_ip = pending_per_ip_limit(total);
	struct emu_conn *v;
	bool shed = false;

	if (pending_from(ip) >= per_ip && (v = pending_victim(&ip))) {
		pending_shed(v, &l->flood.shed);
		shed = true;
	}
	while (pend.n >= total && (v = pending_victim(NULL))) {
		pending_shed(v, &l->flood.shed);
		shed = true;
	}
	return shed;
}

/* ---- listeners ------------------------------------------------------------ */

static void conn_accepted(struct emu_listener *l, int fd, const struct sockaddr_in *peer)
{
	struct emu_conn *c = conn_alloc(l->dev, peer, false);
	char name[64];
	int ret;

	if (!c) {
		emu_warn("fabric: no memory for a new connection");
		close(fd);
		return;
	}
	set_nodelay(fd);
	c->fd = fd;
	ret = hs_begin(c, EMU_HS_ACCEPTOR);
	if (ret) { /* no secret (logged once): nobody gets in */
		emu_dbg("fabric: connection %s: refused: %s", conn_name(c, name, sizeof(name)),
		        strerror(-ret));
		conn_down(c);
		return;
	}
	c->state = CONN_AUTH;
	hs_arm(c, emu_now_ns());
	c->events = EPOLLIN;
	if (epoll_set(EPOLL_CTL_ADD, fd, &c->h, c->events)) {
		emu_warn("fabric: connection %s: epoll: %s", conn_name(c, name, sizeof(name)),
		         strerror(errno));
		conn_down(c);
		return;
	}
	pending_add(c);
}

static bool out_of_fds(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

/* No descriptor and no pending handshake to give up: take up to n
 * connections off the backlog with the reserve descriptor and close them,
 * so their peers learn at once and the backlog does not keep the listener
 * ready for nothing. */
static void refuse(struct emu_listener *l, int n)
{
	while (n-- > 0) {
		int fd;

		if (reserve_fd < 0)
			reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (reserve_fd < 0)
			return;
		close(reserve_fd);
		fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return;
		close(fd);
		l->flood.refused++;
	}
}

/* Out of epoll for FAB_ACCEPT_PAUSE_NS: new connections wait in the backlog
 * meanwhile, and the engine is not woken by them. */
static void listener_pause(struct emu_listener *l)
{
	uint64_t resume = emu_now_ns() + FAB_ACCEPT_PAUSE_NS, next;

	if (l->paused)
		return;
	epoll_forget(l->fd);
	l->paused = true;
	l->resume_ns = resume;
	next = atomic_load_explicit(&accept_resume_ns, memory_order_relaxed);
	if (!next || resume < next)
		atomic_store_explicit(&accept_resume_ns, resume, memory_order_relaxed);
}

static void listeners_resume(void)
{
	uint64_t now, next = 0;

	if (!atomic_load_explicit(&accept_resume_ns, memory_order_relaxed))
		return;
	now = emu_now_ns();
	for (int i = 0; i < emu_nic.num_devices; i++) {
		struct emu_listener *l = emu_nic.devices[i].listener;

		if (!l || !l->paused)
			continue;
		if (now < l->resume_ns) {
			if (!next || l->resume_ns < next)
				next = l->resume_ns;
			continue;
		}
		if (epoll_set(EPOLL_CTL_ADD, l->fd, &l->h, EPOLLIN)) {
			l->resume_ns = now + FAB_ACCEPT_PAUSE_NS; /* try again then */
			next = next && next < l->resume_ns ? next : l->resume_ns;
			continue;
		}
		l->paused = false;
	}
	atomic_store_explicit(&accept_resume_ns, next, memory_order_relaxed);
}

/* One warning per listener and FAB_FLOOD_LOG_NS about the pressure on it,
 * with what happened since the last one. */
static void flood_report(struct emu_listener *l)
{
	struct flood_log *f = &l->flood;
	char what[320];
	size_t n = 0;
	uint64_t now;

	if (!f->shed && !f->refused && !f->failures && !f->shed_fd)
		return;
	now = emu_now_ns();
	if (now < f->next_ns)
		return;
	if (f->shed)
		n += (size_t)snprintf(what + n, sizeof(what) - n,
		                      "; %u handshakes dropped to stay within %u pending (%u per "
		                      "address)",
		                      f->shed, pending_limit(),
		                      pending_per_ip_limit(pending_limit()));
	if (f->failures && n < sizeof(what))
		n += (size_t)snprintf(what + n, sizeof(what) - n,
		                      "; accept failed %u times (%s): %u handshakes dropped for "
		                      "their descriptors, %u connections refused",
		                      f->failures, strerror(f->err), f->shed_fd, f->refused);
	emu_warn("fabric: device %d: too many connections%s; next report in %llu s at the "
	         "earliest",
	         l->dev->index, what, (unsigned long long)(FAB_FLOOD_LOG_NS / 1000000000u));
	f->shed = f->shed_fd = f->refused = f->failures = 0;
	f->next_ns = now + FAB_FLOOD_LOG_NS;
}

/* Accept what the backlog holds, up to FAB_ACCEPT_BATCH, within the pending
 * bounds; pause under pressure. */
static int listener_accept(struct emu_listener *l)
{
	bool pressure = false;
	int n;

	for (n = 0; n < FAB_ACCEPT_BATCH; n++) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		int fd =
		    accept4(l->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			int err = errno;

			if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR ||
			    err == ECONNABORTED)
				break;
			l->flood.failures++;
			l->flood.err = err;
			pressure = true;
			if (out_of_fds(err) && pend.n) { /* a handshake's descriptor will do */
				pending_shed(pending_victim(NULL), &l->flood.shed_fd);
				continue;
			}
			if (out_of_fds(err))
				refuse(l, FAB_ACCEPT_BATCH - n);
			break;
		}
		if (pending_make_room(l, peer.sin_addr))
			pressure = true;
		conn_accepted(l, fd, &peer);
	}
	if (pressure)
		listener_pause(l);
	flood_report(l);
	return n;
}

static int listen_addr(const struct emu_device *dev, struct sockaddr_in *addr)
{
	const char *ip = emu_cfg.bind_addr[0] ? emu_cfg.bind_addr : "127.0.0.1";
	long port = emu_cfg.base_port ? (long)emu_cfg.base_port + dev->index : 0;

	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	if (inet_pton(AF_INET, ip, &addr->sin_addr) != 1) {
		emu_err("fabric: GNIC_EMU_ADDR '%s' is not an IPv4 address", ip);
		return -EINVAL;
	}
	if (emu_addr_not_unicast(addr->sin_addr)) { /* config.c refuses these already */
		emu_err("fabric: GNIC_EMU_ADDR '%s' is %s, not a unicast address", ip,
		        emu_addr_not_unicast(addr->sin_addr));
		return -EADDRNOTAVAIL;
	}
	if (port < 0 || port > 65535) {
		emu_err("fabric: GNIC_EMU_PORT %d + device %d is not a TCP port", emu_cfg.base_port,
		        dev->index);
		return -EINVAL;
	}
	addr->sin_port = htons((uint16_t)port);
	return 0;
}

static int listen_socket(const struct sockaddr_in *addr, struct sockaddr_in *bound)
{
	socklen_t len = sizeof(*bound);
	int one = 1, fd, ret;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) || listen(fd, SOMAXCONN) ||
	    getsockname(fd, (struct sockaddr *)bound, &len)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int emu_fabric_listen(struct emu_device *dev)
{
	struct sockaddr_in addr, bound;
	struct emu_listener *l;
	char name[48];
	int fd, ret;

	if (!dev)
		return -EINVAL;
	if (dev->listener)
		return 0;
	if (reserve_fd < 0) /* for refuse() */
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ret = listen_addr(dev, &addr);
	if (ret)
		return ret;
	fd = listen_socket(&addr, &bound);
	if (fd < 0) {
		/* the caller (nic.c) reports the failure; this adds the address */
		emu_dbg("fabric: device %d: cannot listen on %s: %s", dev->index,
		        addr_str(&addr, name, sizeof(name)), strerror(-fd));
		return fd;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	l->h.kind = FAB_LISTENER;
	l->fd = fd;
	l->dev = dev;
	ret = epoll_set(EPOLL_CTL_ADD, fd, &l->h, EPOLLIN);
	if (ret) {
		emu_err("fabric: device %d: epoll: %s", dev->index, strerror(-ret));
		close(fd);
		free(l);
		return ret;
	}
	dev->listener = l;
	dev->addr = bound;
	emu_gid_make(&dev->gid, &dev->addr);
	register_kick();
	emu_dbg("fabric: device %d listens on %s", dev->index,
	        addr_str(&bound, name, sizeof(name)));
	return 0;
}

void emu_fabric_close_listener(struct emu_device *dev)
{
	struct emu_listener *l = dev ? dev->listener : NULL;

	if (!l)
		return;
	if (!l->paused)
		epoll_forget(l->fd);
	close(l->fd);
	free(l);
	dev->listener = NULL;
	/* the device's port goes down: so do the connections it accepted */
	for (struct emu_conn *c = conns; c; c = c->next)
		if (!c->outbound && c->dev == dev)
			conn_down(c);
	if (!dispatching)
		reap();
}

/* ---- attach / send / reply ------------------------------------------------ */

int emu_fabric_attach(struct emu_qp *qp)
{
	struct sockaddr_in addr;
	struct emu_conn *c;
	int ret;

	if (!qp || !qp->ctx || !qp->ctx->dev)
		return -EINVAL;
	if (emu_device_by_gid(&qp->dgid)) {
		emu_fabric_detach(qp); /* in-process: the peer is looked up per send */
		return 0;
	}
	ret = emu_gid_to_addr(&qp->dgid, &addr);
	if (ret)
		return ret < 0 ? ret : -EINVAL;
	c = conn_find(qp->ctx->dev, &addr);
	if (c && c == qp->conn)
		return 0;
	if (!c) {
		c = conn_alloc(qp->ctx->dev, &addr, true);
		if (!c)
			return -ENOMEM;
		c->peer_gid = qp->dgid;
		conn_connect(c);
	}
	c->refs++;
	emu_fabric_detach(qp);
	qp->conn = c;
	return 0;
}

void emu_fabric_detach(struct emu_qp *qp)
{
	struct emu_conn *c;

	if (!qp)
		return;
	c = qp->conn;
	qp->conn = NULL;
	if (c && --c->refs == 0)
		conn_retire(c);
}

static int send_local(struct emu_qp *qp, const struct emu_msg *m, const void *payload)
{
	struct emu_reply_path path = {.local = qp, .peer_gid = &qp->ctx->dev->gid};
	struct emu_device *dev = emu_device_by_gid(&qp->dgid);
	struct emu_qp *peer;

	if (!dev)
		return -ENOTCONN; /* attach found no emulator at that GID */
	/* No such QP on that device: lost on the wire, the timer decides. */
	peer = emu_qp_lookup(qp->dest_qpn);
	if (!peer || !peer->ctx || peer->ctx->dev != dev)
		return 0;
	peer->ops->on_request(peer, &path, m, payload);
	return 0;
}

/* A dead connection is retried at most once per FAB_RECONNECT_NS. */
static bool conn_revive(struct emu_conn *c)
{
	if (c->state != CONN_DEAD)
		return true;
	if (emu_now_ns() < c->retry_ns)
		return false;
	conn_connect(c);
	return c->state != CONN_DEAD;
}

int emu_fabric_send(struct emu_qp *qp, const struct emu_msg *m, const void *payload)
{
	struct emu_conn *c;

	if (!qp || !qp->ctx || !m || !emu_wire_msg_valid(m) || !emu_wire_is_request(m->type) ||
	    (emu_wire_payload_len(m) && !payload))
		return -EINVAL;
	c = qp->conn;
	if (!c)
		return send_local(qp, m, payload);
	if (!conn_revive(c))
		return -ENOTCONN;
	if (buf_used(&c->out) + buf_used(&c->hold) >= FAB_OUT_HIGH_WATER)
		return -EAGAIN;
	return conn_post(c, m, payload);
}

int emu_fabric_reply(struct emu_reply_path *path, const struct emu_msg *m, const void *payload)
{
	if (!path || !m || !emu_wire_msg_valid(m) || emu_wire_is_request(m->type) ||
	    (emu_wire_payload_len(m) && !payload))
		return -EINVAL;
	if (path->local) {
		path->local->ops->on_response(path->local, m, payload);
		return 0;
	}
	if (!path->conn)
		return -EINVAL;
	if (path->conn->state != CONN_UP)
		return -ENOTCONN; /* dropped: the requester retransmits */
	/* No high-water check: requests stop being parsed above the mark. */
	return conn_post(path->conn, m, payload);
}

/* ---- engine entry points -------------------------------------------------- */

static int handle_event(const struct epoll_event *ev)
{
	struct fab_handle *h = ev->data.ptr;

	switch (h->kind) {
	case FAB_KICK:
		drain_kick();
		return 0;
	case FAB_LISTENER:
		return listener_accept(container_of(h, struct emu_listener, h));
	case FAB_CONN:
		return conn_event(container_of(h, struct emu_conn, h), ev->events);
	}
	return 0;
}

/* Without connections the sockets only matter for accepting one, and an
 * epoll_wait() per pass would double the cost of an in-process engine pass. */
static bool idle_skip(void)
{
	static uint64_t next_ns;
	uint64_t now;

	if (conns)
		return false;
	now = emu_now_ns();
	if (now < next_ns)
		return true;
	next_ns = now + FAB_IDLE_POLL_NS;
	return false;
}

/* Could input wait on c that epoll does not report (requests held back, or
 * an interest change that failed)? Without a socket, or before connect()
 * completes, nothing can. */
static bool conn_input_hidden(const struct emu_conn *c)
{
	if (c->fd < 0 || c->state == CONN_CONNECTING)
		return false;
	return c->in_blocked || !(c->events & EPOLLIN);
}

/* After a poll that started at t0: bring every connection's heard_ns up to
 * t0 that this poll did not read. When epoll reported fewer events than it
 * could, the others had no input at t0 (level-triggered); when it was full,
 * read them now, so a silent peer's connection is not left behind by busy
 * ones (its requesters' timers judge against heard_ns). */
static int heard_rest(uint64_t t0, bool epoll_full)
{
	int work = 0;

	for (struct emu_conn *c = conns; c; c = c->next) {
		if (c->read_seq == poll_seq || c->doomed || conn_input_hidden(c))
			continue;
		if (epoll_full && c->fd >= 0 && (c->state == CONN_AUTH || c->state == CONN_UP))
			work += conn_read(c);
		else
			conn_heard(c, t0);
	}
	return work;
}

/* An event of an authenticated connection: served before the others. */
static bool event_first(const struct epoll_event *ev)
{
	struct fab_handle *h = ev->data.ptr;

	return h->kind == FAB_CONN && container_of(h, struct emu_conn, h)->state == CONN_UP;
}

int emu_fabric_poll(void)
{
	struct epoll_event ev[FAB_POLL_EVENTS];
	bool first[FAB_POLL_EVENTS];
	uint64_t t0;
	int n, work;

	listeners_resume();
	if (idle_skip())
		return 0;
	register_kick();
	dispatching = true;
	poll_seq++;
	work = resume_blocked();
	t0 = emu_now_ns();
	n = epoll_wait(emu_nic.epoll_fd, ev, FAB_POLL_EVENTS, 0);
	for (int i = 0; i < n; i++) {
		first[i] = event_first(&ev[i]);
		if (first[i])
			work += handle_event(&ev[i]);
	}
	for (int i = 0; i < n; i++)
		if (!first[i])
			work += handle_event(&ev[i]);
	work += heard_rest(t0, n == FAB_POLL_EVENTS);
	hs_expire();
	dispatching = false;
	reap();
	return work;
}

uint64_t emu_fabric_heard_ns(const struct emu_qp *qp, uint64_t now)
{
	/* in-process peers answer inside emu_fabric_send(): nothing waits */
	if (!qp->conn || qp->conn->heard_ns > now)
		return now;
	return qp->conn->heard_ns;
}

int emu_fabric_flush(void)
{
	size_t total = 0;

	for (struct emu_conn *c = conns; c; c = c->next) {
		c->wrote_this_pass = false;
		if (c->state != CONN_UP && c->state != CONN_AUTH)
			continue;
		if (buf_used(&c->out))
			total += conn_write(c);
		conn_update_events(c);
	}
	reap();
	return total > INT_MAX ? INT_MAX : (int)total;
}

/* Output the next flush can write. Output stuck behind a full socket does not
 * count: EPOLLOUT is armed for it and ends emu_fabric_wait() as soon as the
 * peer reads, so the engine need not spin (and steal the peer's CPU). */
bool emu_fabric_pending(void)
{
	for (struct emu_conn *c = conns; c; c = c->next)
		if ((c->state == CONN_UP || c->state == CONN_AUTH) && buf_used(&c->out) &&
		    !c->sock_full)
			return true;
	return false;
}

void emu_fabric_wait(uint64_t timeout_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
	                      .tv_nsec = (long)(timeout_ns % 1000000000u)};
	struct epoll_event ev;
	uint64_t ms, resume = atomic_load_explicit(&accept_resume_ns, memory_order_relaxed);

	/* a paused listener returns on time, however long the engine sleeps */
	if (resume) {
		uint64_t now = emu_now_ns();

		timeout_ns = resume <= now               ? 0
		             : resume - now < timeout_ns ? resume - now
		                                         : timeout_ns;
		ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
		ts.tv_nsec = (long)(timeout_ns % 1000000000u);
	}
	/* Level-triggered readiness only: whatever is ready stays for poll. */
	if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
		if (epoll_pwait2(emu_nic.epoll_fd, &ev, 1, &ts, NULL) >= 0 || errno != ENOSYS)
			return;
		atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
	}
	ms = (timeout_ns + 999999) / 1000000;
	epoll_wait(emu_nic.epoll_fd, &ev, 1, ms > INT_MAX ? INT_MAX : (int)ms);
}
