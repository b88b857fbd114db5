/* SPDX-License-Identifier: MIT */
/*
 * A fabric connection: its life (connect, reconnect, close, reap), its
 * output (one direct write per pass, the rest buffered for
 * emu_fabric_flush) and its input, read in big chunks, parsed in place and
 * dispatched to the QP each message names through its type's table
 * (qp_ops.h). The handshake before any of that is fabric_hs.c's.
 */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fabric_int.h"

/* ---- life cycle ----------------------------------------------------------- */

const char *fab_conn_name(const struct emu_conn *c, char *buf, size_t size)
{
	char a[48];

	if (c->local && !c->outbound)
		snprintf(buf, size, "from a local process");
	else
		snprintf(buf, size, "%s %s%s", c->outbound ? "to" : "from",
		         fab_addr_str(&c->addr, a, sizeof(a)), c->local ? " (local)" : "");
	return buf;
}

static uint32_t conn_want_events(const struct emu_conn *c)
{
	uint32_t ev;

	if (c->state == CONN_CONNECTING)
		return EPOLLOUT;
	ev = c->in_blocked ? 0 : EPOLLIN;
	if (fab_out_used(c))
		ev |= EPOLLOUT;
	return ev;
}

void fab_conn_update_events(struct emu_conn *c)
{
	uint32_t want;

	if (c->fd < 0)
		return;
	want = conn_want_events(c);
	if (want != c->events && !fab_epoll_set(EPOLL_CTL_MOD, c->fd, &c->h, want))
		c->events = want;
}

static void conn_close_fd(struct emu_conn *c)
{
	if (c->fd < 0)
		return;
	fab_epoll_forget(c->fd);
	close(c->fd);
	c->fd = -1;
	c->events = 0;
}

/* The connection is gone: whatever was queued either way is lost, like
 * packets on a cut wire (requesters retransmit). Memory goes in fab_reap(). */
void fab_conn_down(struct emu_conn *c)
{
	fab_pending_del(c);
	conn_close_fd(c);
	c->state = CONN_DEAD;
	c->in_blocked = false;
	c->admitted = false;
	c->landing = false;
	c->land_lost = false;
	c->skip = 0;
	c->progress_at = 0;
	c->in.head = c->in.tail = 0;
	fab_out_clear(c);
	c->hold.head = c->hold.tail = 0;
	c->out_hs = 0;
	c->tx_sent = c->tx_posted; /* lost on the wire: the timers run */
	if (!c->outbound)
		c->doomed = true;
	fab.reap_due = true;
}

void fab_conn_fail(struct emu_conn *c, const char *why, int err)
{
	char name[64];

	if (c->state == CONN_DEAD)
		return;
	emu_info("fabric: connection %s: %s%s%s", fab_conn_name(c, name, sizeof(name)), why,
	         err ? ": " : "", err ? strerror(err) : "");
	fab_conn_down(c);
}

void fab_conn_connect_failed(struct emu_conn *c, int err)
{
	char name[64];

	/* A peer that is not up yet is retried every few ms: log it once. */
	if (c->fails++ == 0)
		emu_info("fabric: cannot connect %s: %s", fab_conn_name(c, name, sizeof(name)),
		         strerror(err));
	else
		emu_dbg("fabric: cannot connect %s: %s", fab_conn_name(c, name, sizeof(name)),
		        strerror(err));
	fab_conn_down(c);
}

/* ---- connect -------------------------------------------------------------- */

/* Whether a is an address of this host (its network namespace): only then
 * is the listener behind it a process here, which its twin may stand for. */
static bool addr_is_local(const struct sockaddr_in *a)
{
	struct sockaddr_in any = *a;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool local;

	if (fd < 0)
		return false;
	any.sin_port = 0;
	local = !bind(fd, (const struct sockaddr *)&any, sizeof(any));
	close(fd);
	return local;
}

/* Any process may bind an abstract name, so the name proves nothing: the
 * process that listens there must run as our user or as root. */
static bool listener_trusted(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) &&
	       (cr.uid == geteuid() || cr.uid == 0);
}

/* A connection to the AF_UNIX twin of c's listener, when that listener is a
 * process of this host and the twin's owner is trusted: connected at once,
 * or -1 (then TCP). */
static int local_connect(const struct emu_conn *c)
{
	struct sockaddr_un un;
	socklen_t len = fab_local_name(&c->addr, &un);
	char name[48];
	int fd;

	if (!emu_cfg.fabric_local || !addr_is_local(&c->addr))
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)&un, len)) {
		close(fd);
		return -1;
	}
	if (!listener_trusted(fd)) {
		emu_warn("fabric: connection %s: its listener's local twin is held by a process "
		         "of another user: ignored, connecting over TCP",
		         fab_conn_name(c, name, sizeof(name)));
		close(fd);
		return -1;
	}
	fab_set_local_bufs(fd);
	return fd;
}

/* Start a non-blocking connect, over AF_UNIX when the listener is of this
 * host, else TCP; the hello goes first in the output. On failure the
 * connection stays DEAD until retry_ns. */
void fab_conn_connect(struct emu_conn *c)
{
	uint64_t now = emu_now_ns();
	int fd, err;

	c->retry_ns = now + FAB_RECONNECT_NS;
	c->in.head = c->in.tail = 0;
	fab_out_clear(c);
	c->hold.head = c->hold.tail = 0;
	c->out_hs = 0;
	c->tx_sent = c->tx_posted;
	c->sock_full = false;
	err = fab_hs_begin(c, EMU_HS_CONNECTOR);
	if (err) {
		fab_conn_connect_failed(c, -err);
		return;
	}
	fab_hs_arm(c, now);
	fd = local_connect(c);
	c->local = fd >= 0;
	if (!c->local) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			fab_conn_connect_failed(c, errno);
			return;
		}
		fab_set_nodelay(fd);
	}
	c->fd = fd;
	if (c->local || !connect(fd, (const struct sockaddr *)&c->addr, sizeof(c->addr)))
		c->state = CONN_AUTH;
	else if (errno == EINPROGRESS)
		c->state = CONN_CONNECTING;
	else
		goto fail;
	c->events = conn_want_events(c);
	if (fab_epoll_set(EPOLL_CTL_ADD, fd, &c->h, c->events))
		goto fail;
	if (c->state == CONN_AUTH)
		c->fails = 0;
	return;
fail:
	err = errno;
	fab_conn_connect_failed(c, err);
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
		fab_conn_connect_failed(c, err);
		return 1;
	}
	c->state = CONN_AUTH;
	c->fails = 0;
	emu_dbg("fabric: connected %s", fab_conn_name(c, name, sizeof(name)));
	fab_conn_update_events(c);
	return 1;
}

struct emu_conn *fab_conn_alloc(struct emu_device *dev, const struct sockaddr_in *addr,
                                bool outbound)
{
	static _Atomic uint64_t next_id = 1;
	struct emu_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->id = atomic_fetch_add(&next_id, 1);
	c->h.kind = FAB_CONN;
	c->fd = -1;
	c->state = CONN_DEAD;
	c->outbound = outbound;
	c->dev = dev;
	c->addr = *addr;
	c->heard_ns = emu_now_ns(); /* nothing can have come before it existed */
	c->next = fab.conns;
	fab.conns = c;
	return c;
}

struct emu_conn *fab_conn_find(const struct emu_device *dev, const struct sockaddr_in *addr)
{
	for (struct emu_conn *c = fab.conns; c; c = c->next)
		if (c->outbound && !c->doomed && c->dev == dev &&
		    c->addr.sin_addr.s_addr == addr->sin_addr.s_addr &&
		    c->addr.sin_port == addr->sin_port)
			return c;
	return NULL;
}

/* Give inbound connection c (unlinked by the caller at *pp) to the worker
 * its first request chose. false: it stays here, linked again. Once the
 * inbox has it, c is that worker's: not one more access here. */
static bool conn_hand(struct emu_conn **pp, struct emu_conn *c)
{
	struct emu_worker *to = emu_worker_at(c->handoff - 1);
	int ret;

	/* no piece of its output points into an MR once it is in transit
	 * (fab_out_detach_mr finds only connections in a worker's list) */
	if (fab_out_detach_mr(c, NULL))
		return false;
	if (c->fd >= 0)
		fab_epoll_forget(c->fd);
	c->events = 0;
	*pp = c->next;
	ret = to ? emu_inbox_push_conn(to, c) : -EINVAL;
	if (!ret)
		return true;
	emu_dbg("fabric: inbound connection stays on worker %d: %s", emu_worker_cur()->index,
	        strerror(-ret));
	c->handoff = 0;
	c->next = *pp;
	*pp = c;
	c->events = conn_want_events(c);
	if (c->fd >= 0 && fab_epoll_set(EPOLL_CTL_ADD, c->fd, &c->h, c->events)) {
		c->events = 0;
		fab_conn_fail(c, "epoll", errno);
	}
	return false;
}

/* Free what dead connections hold, unlink the doomed ones and hand those
 * that belong to another worker over. Never called while a message is being
 * dispatched. */
void fab_reap_due(void)
{
	struct emu_conn **pp = &fab.conns;

	fab.reap_due = false;
	while (*pp) {
		struct emu_conn *c = *pp;

		if (c->handoff && !c->doomed && c->state == CONN_UP && conn_hand(pp, c))
			continue;
		c->handoff = 0;

		if (c->state == CONN_DEAD || c->doomed) {
			fab_buf_free(&c->in);
			fab_out_free(c);
			fab_buf_free(&c->hold);
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

void fab_conn_retire(struct emu_conn *c)
{
	conn_close_fd(c);
	c->state = CONN_DEAD;
	c->doomed = true;
	fab.reap_due = true;
	if (!fab.dispatching)
		fab_reap(&fab);
}

/* A dead connection is retried at most once per FAB_RECONNECT_NS. */
bool fab_conn_revive(struct emu_conn *c)
{
	if (c->state != CONN_DEAD)
		return true;
	if (emu_now_ns() < c->retry_ns)
		return false;
	fab_conn_connect(c);
	return c->state != CONN_DEAD;
}

/* ---- output --------------------------------------------------------------- */

/* An idle connection sends its first message of the pass right away (one
 * latency hop less); later ones wait for emu_fabric_flush(). Returns bytes
 * written, or -errno when the socket is broken. */
static ssize_t out_direct(struct emu_conn *c, const struct emu_msg *m, const void *payload,
                          uint32_t plen)
{
	struct iovec iov[2] = {{(void *)m, sizeof(*m)}, {(void *)payload, plen}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = plen ? 2 : 1};
	ssize_t n;

	if (c->state != CONN_UP || fab_out_used(c) || c->wrote_this_pass)
		return 0;
	c->wrote_this_pass = true;
	do
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

int fab_out_hs(struct emu_conn *c, const void *p, size_t n)
{
	int ret = fab_out_copy(c, p, n);

	if (!ret)
		c->out_hs += n;
	return ret;
}

int fab_conn_post(struct emu_conn *c, const struct emu_msg *m, const void *payload,
                  struct emu_mr *src)
{
	uint32_t plen = emu_wire_payload_len(m);
	size_t size = sizeof(*m) + plen;
	ssize_t sent;

	/* not authenticated yet: nothing may precede the proof */
	if (c->state != CONN_UP) {
		if (fab_msg_append(&c->hold, m, payload, plen, 0))
			return -EAGAIN;
		c->tx_posted += size;
		return 0;
	}
	/* A pass that answers many large requests (READs of MiBs each) must
	 * not hold all but the first answer back until its end: the peer's
	 * requester would hear nothing for that long (its timer runs). What is
	 * queued goes first, as far as the socket takes it. */
	if (plen >= EMU_PROGRESS_BYTES && fab_out_used(c))
		fab_conn_write(c);
	sent = out_direct(c, m, payload, plen);
	if (sent < 0) {
		fab_conn_fail(c, "send failed", (int)-sent);
		return -ENOTCONN;
	}
	c->tx_posted += (size_t)sent;
	c->tx_sent += (size_t)sent;
	if ((size_t)sent == size)
		return 0;
	/* out of memory: like a full queue, the requester tries again later */
	if (fab_out_msg(c, m, payload, plen, (size_t)sent, src))
		return -EAGAIN;
	c->tx_posted += size - (size_t)sent;
	return 0;
}

/* Message bytes n of a write took from the output's head. */
static void out_sent(struct emu_conn *c, size_t n)
{
	size_t hs = n < c->out_hs ? n : c->out_hs;

	c->out_hs -= hs;
	c->tx_sent += n - hs;
}

/* Write what is queued until the socket is full, up to FAB_OUT_IOV pieces a
 * call. Returns bytes written. */
size_t fab_conn_write(struct emu_conn *c)
{
	struct iovec iov[FAB_OUT_IOV];
	size_t total = 0;

	while ((c->state == CONN_UP || c->state == CONN_AUTH) && fab_out_used(c)) {
		struct msghdr mh = {.msg_iov = iov,
		                    .msg_iovlen = (size_t)fab_out_iov(c, iov, FAB_OUT_IOV)};
		ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			fab_out_consume(c, (size_t)n);
			total += (size_t)n;
			out_sent(c, (size_t)n);
			c->sock_full = false;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->sock_full = true;
			break;
		} else {
			fab_conn_fail(c, "send failed", n < 0 ? errno : EPIPE);
			return total;
		}
	}
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
	return emu_wire_need(&c->hs, in_head(c), fab_buf_used(&c->in));
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
	size_t used = fab_buf_used(&c->in), need = c->skip ? 0 : in_need(c), want;

	fab_buf_settle(&c->in);
	want = need > used ? need - used : 0;
	if (c->state == CONN_AUTH) {
		want = want ? want : 1; /* never a 0-byte recv(): that reads as EOF */
		if (fab_buf_reserve(&c->in, want, EMU_HS_OUT_MAX))
			return 0;
		return want;
	}
	if (msg_big(need) && !c->admitted)
		want = 0; /* a chunk at a time until conn_parse() asked its QP */
	if (want < FAB_READ_CHUNK)
		want = FAB_READ_CHUNK;
	if (fab_buf_reserve(&c->in, want, FAB_IN_MIN))
		return 0;
	return c->in.cap - c->in.tail;
}

/* A request for a QP of another worker goes to that worker's inbox, whole
 * (false for the header alone: then its data is buffered first), and its
 * answer comes back through ours to connection c. */
static bool forward_request(struct emu_conn *c, int owner, const struct emu_msg *m,
                            const void *payload)
{
	struct emu_inbox_from from = {
	    .reply_w = emu_worker_cur()->index, .conn_id = c->id, .peer_gid = &c->peer_gid};

	if (m->len && !payload)
		return false;
	if (emu_inbox_push(emu_worker_at(owner - 1), EMU_INBOX_REQUEST, &from, m, payload, NULL,
	                   false))
		emu_dbg("request type %u psn %u for QP 0x%x dropped: worker %d's inbox: out of "
		        "memory",
		        m->type, m->psn, m->dst_qpn, owner - 1);
	return true;
}

/* Request m for a QP of this process goes to its type's responder. Like a
 * wire: a request for a QP that does not exist is dropped. */
static bool deliver_request(struct emu_conn *c, struct emu_reply_path *from,
                            const struct emu_msg *m, const void *payload)
{
	struct emu_worker *w = emu_worker_cur();
	int owner = emu_qpn_worker(m->dst_qpn);
	struct emu_qp *qp;

	if (owner && owner != w->index + 1)
		return forward_request(c, owner, m, payload);
	qp = emu_worker_qp(w, m->dst_qpn);
	if (!qp) {
		emu_dbg("request type %u psn %u for QP 0x%x dropped: no such QP", m->type, m->psn,
		        m->dst_qpn);
		return true;
	}
	return qp->ops->on_request(qp, from, m, payload);
}

/* A response for a QP that is gone, or that talks to someone else now, is
 * dropped like a stray packet (true: nothing more to do with it). Only QPs
 * of this worker use its connections. */
static bool deliver_response(struct emu_conn *c, const struct emu_msg *m, const void *payload)
{
	struct emu_qp *qp = emu_worker_qp(emu_worker_cur(), m->dst_qpn);

	return !qp || qp->conn != c || qp->ops->on_response(qp, m, payload);
}

/* Must request m wait (c->in_blocked)? While c's output is over the mark
 * (FAB_OUT_ANSWERS_MAX: the replies would grow it without bound), or while the inbox of the
 * worker m's QP is on is (forwarded requests are copies: without this a
 * peer could queue any amount there, and the answers to what it sent
 * would wait behind all of it). */
static bool hold_request(const struct emu_conn *c, const struct emu_msg *m)
{
	int owner;

	if (fab_out_used(c) >= FAB_OUT_ANSWERS_MAX)
		return true;
	owner = emu_qpn_worker(m->dst_qpn);
	if (!owner || owner == emu_worker_cur()->index + 1)
		return false;
	return atomic_load_explicit(&emu_worker_at(owner - 1)->inbox_bytes, memory_order_relaxed) >=
	       EMU_INBOX_HIGH_WATER;
}

/* An inbound connection carries the requests of one remote worker's QPs
 * (each worker opens its own), whose peers here RTR placement spreads: it
 * goes to the worker of the QP its first request names, so that QP's
 * requests and replies take no inbox. true: handed off at the next
 * fab_reap(), parse no further here. */
static bool conn_home(struct emu_conn *c, const struct emu_msg *m)
{
	int owner;

	if (c->outbound || c->homed)
		return false;
	c->homed = true;
	owner = emu_qpn_worker(m->dst_qpn);
	if (!owner || owner == emu_worker_cur()->index + 1)
		return false;
	c->handoff = owner;
	fab.reap_due = true;
	return true;
}

void fab_dispatch(struct emu_conn *c, const struct emu_msg *m, const void *payload)
{
	struct emu_reply_path path = {.conn = c, .peer_gid = &c->peer_gid};

	if (emu_wire_is_request(m->type))
		deliver_request(c, &path, m, payload);
	else
		deliver_response(c, m, payload);
}

/* A large message's header is in, its data is not: offer the header alone
 * (emu_requester_on_response() in rc.h says how). true: it was handled
 * without the data, which is then dropped as it arrives. */
bool fab_take_header(struct emu_conn *c, const struct emu_msg *m)
{
	struct emu_reply_path path = {.conn = c, .peer_gid = &c->peer_gid};

	if (emu_wire_is_request(m->type))
		return deliver_request(c, &path, m, NULL);
	return deliver_response(c, m, NULL);
}

/* The message at the input's head was handled from its header: drop the
 * header and its data, what is here now and the rest as it comes. */
static void skip_msg(struct emu_conn *c, const struct emu_msg *m, size_t size)
{
	size_t data = size - sizeof(*m), here = fab_buf_used(&c->in) - sizeof(*m);
	char name[64];

	if (here > data)
		here = data;
	c->in.head += sizeof(*m) + here;
	c->skip = (uint32_t)(data - here);
	c->skipping = *m;
	c->progress_at = (uint32_t)here;
	emu_dbg("fabric: connection %s: %zu bytes of data of type %u psn %u for QP 0x%x dropped "
	        "(not taken)",
	        fab_conn_name(c, name, sizeof(name)), data, m->type, m->psn, m->dst_qpn);
}

/* Drop skipped data that arrived. true while more of it is to come. */
static bool skip_input(struct emu_conn *c)
{
	size_t n = fab_buf_used(&c->in);

	if (n > c->skip)
		n = c->skip;
	c->in.head += n;
	c->skip -= (uint32_t)n;
	return c->skip != 0;
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

		if (c->landing)
			return msgs; /* fab_conn_read() receives its data */
		if (c->skip && skip_input(c))
			return msgs;
		if (c->land_lost) { /* its data is gone: what the header alone does */
			c->land_lost = false;
			fab_take_header(c, &c->skipping);
			msgs++;
		}
		p = in_head(c);
		emu_wire_input(&c->hs, p, fab_buf_used(&c->in), &st);
		switch (st.ev) {
		case EMU_WIRE_EV_NEED:
			/* a large message's header, not yet offered: go on */
			if (c->state != CONN_UP || c->admitted || !msg_big(st.size) ||
			    fab_buf_used(&c->in) < sizeof(st.msg))
				return msgs;
			break;
		case EMU_WIRE_EV_HS:
		case EMU_WIRE_EV_HS_FAIL:
			c->in.head += st.size;
			fab_conn_hs_step(c, &st);
			continue;
		case EMU_WIRE_EV_BAD:
			emu_warn("fabric: connection %s: malformed message (type %u len %u), "
			         "closing",
			         fab_conn_name(c, name, sizeof(name)), st.msg.type, st.msg.len);
			fab_conn_down(c);
			return msgs;
		case EMU_WIRE_EV_MSG:
			break;
		}
		if (emu_wire_is_request(st.msg.type) && conn_home(c, &st.msg))
			return msgs;
		if (emu_wire_is_request(st.msg.type) && hold_request(c, &st.msg)) {
			emu_dbg("fabric: connection %s: output or inbox full, holding requests",
			        fab_conn_name(c, name, sizeof(name)));
			c->in_blocked = true;
			break;
		}
		if (st.ev == EMU_WIRE_EV_NEED) {
			if (!fab_take_header(c, &st.msg)) {
				if (fab_land_start(c, &st.msg))
					return msgs + 1;
				c->admitted = true; /* in_room() makes room for all of it */
				return msgs;
			}
			skip_msg(c, &st.msg, st.size);
			msgs++;
			continue;
		}
		c->in.head += st.size;
		c->admitted = false;
		c->progress_at = 0;
		fab_dispatch(c, &st.msg, p + sizeof(st.msg));
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
		fab_conn_auth_failed(c, why);
	} else if (c->state == CONN_AUTH) {
		emu_dbg("fabric: connection %s: closed during the handshake",
		        fab_conn_name(c, name, sizeof(name)));
		fab_conn_down(c);
	} else {
		fab_conn_fail(c, err ? "receive failed" : "closed by peer", err);
	}
}

void fab_conn_heard(struct emu_conn *c, uint64_t t)
{
	if (t > c->heard_ns)
		c->heard_ns = t;
}

/* The socket was found empty by a recv() that started at t: everything that
 * came before t is dispatched, unless requests are held back. */
static void conn_drained(struct emu_conn *c, uint64_t t)
{
	if (!c->in_blocked)
		fab_conn_heard(c, t);
}

/* The message at the input's head is still arriving. For each
 * EMU_PROGRESS_BYTES more of its data its requester hears so (an ACK with
 * EMU_MSG_F_PROGRESS, fabric_wire.h), as a ConnectX acknowledges a long
 * message's packets as they come: a request's back on this connection (if
 * it asked for ACKs: RC), a READ response's to our requester at once. */
static void conn_progress(struct emu_conn *c)
{
	struct emu_msg m, p = {.type = EMU_MSG_ACK, .flags = EMU_MSG_F_PROGRESS};
	size_t used = fab_buf_used(&c->in), size, got;

	if (c->state != CONN_UP)
		return;
	if (c->landing) {
		m = c->land;
		got = c->land_got;
	} else if (c->skip) {
		/* a READ response nobody took (a second answer to a READ sent
		 * again after a timeout) fills the in-order stream ahead of the
		 * answers still wanted: the peer works on, as the wire here is
		 * slow where a ConnectX's would carry it in no time */
		m = c->skipping;
		if (m.type != EMU_MSG_READ_RESP)
			return;
		got = m.len - c->skip;
	} else {
		if (used < sizeof(m) ||
		    emu_wire_frame(in_head(c), used, &m, &size) != EMU_WIRE_PARTIAL)
			return;
		got = used - sizeof(m);
	}
	if (got < (size_t)c->progress_at + EMU_PROGRESS_BYTES)
		return;
	c->progress_at = (uint32_t)got;
	p.psn = m.psn;
	p.gid_type = m.gid_type;
	if (emu_wire_is_request(m.type) && (m.flags & EMU_MSG_F_ACKREQ)) {
		p.dst_qpn = m.src_qpn;
		p.src_qpn = m.dst_qpn;
		fab_conn_post(c, &p, NULL, NULL);
	} else if (m.type == EMU_MSG_READ_RESP) {
		p.dst_qpn = m.dst_qpn;
		p.src_qpn = m.src_qpn;
		deliver_response(c, &p, NULL);
	}
}

/* Read and dispatch until the socket is empty or the budget is spent. */
int fab_conn_read(struct emu_conn *c)
{
	size_t budget = FAB_READ_BUDGET;
	int work = 0;

	c->read_seq = fab.poll_seq;
	while (budget && c->fd >= 0 && !c->in_blocked && !c->handoff) {
		uint64_t t = emu_now_ns();
		bool landing = c->landing;
		size_t room;
		uint8_t *at;
		ssize_t n;

		if (landing) {
			at = fab_land_at(c, &room);
			if (!at)
				continue; /* its target went away: skipped from here */
		} else {
			room = in_room(c);
			if (!room) {
				fab_conn_fail(c, "input buffer", ENOMEM);
				break;
			}
			at = c->in.data + c->in.tail;
		}
		n = landing ? fab_land_recv(c, at, room) : recv(c->fd, at, room, MSG_DONTWAIT);
		if (n > 0) {
			budget -= (size_t)n < budget ? (size_t)n : budget;
			if (landing) {
				work += fab_land_got(c, (size_t)n);
			} else {
				c->in.tail += (size_t)n;
				work += 1 + conn_parse(c);
			}
			conn_progress(c);
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
	fab_conn_update_events(c);
	return work;
}

int fab_conn_event(struct emu_conn *c, uint32_t events)
{
	if (c->fd < 0 || c->doomed || c->handoff)
		return 0;
	if (c->state == CONN_CONNECTING)
		return conn_connected(c);
	if (c->in_blocked && (events & (EPOLLHUP | EPOLLERR))) {
		fab_conn_fail(c, "hung up", 0);
		return 1;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		return fab_conn_read(c);
	return 0;
}

/* Connections whose output fell below the mark take requests again (and
 * hold them again at once if an inbox they go to is still full). */
int fab_resume_blocked_conns(void)
{
	int work = 0;

	for (struct emu_conn *c = fab.conns; c; c = c->next) {
		if (!c->in_blocked || fab_out_used(c) >= FAB_OUT_ANSWERS_MAX)
			continue;
		c->in_blocked = false;
		work += conn_parse(c);
		fab_conn_update_events(c);
	}
	return work;
}

/* An inbox item (worker.c): inbound connection c, handed over by the
 * worker that accepted it, is this worker's now. Its input may already hold
 * requests: they are parsed here, as a read would have. */
void emu_fabric_adopt(struct emu_conn *c)
{
	char name[64];
	int ret = 0;

	c->handoff = 0;
	c->next = fab.conns;
	fab.conns = c;
	emu_dbg("fabric: connection %s: served by worker %d", fab_conn_name(c, name, sizeof(name)),
	        emu_worker_cur()->index);
	if (c->fd >= 0) {
		c->events = conn_want_events(c);
		ret = fab_epoll_set(EPOLL_CTL_ADD, c->fd, &c->h, c->events);
	}
	if (ret) {
		c->events = 0;
		fab_conn_fail(c, "epoll", -ret);
	} else {
		fab.dispatching = true;
		conn_parse(c);
		fab.dispatching = false;
		fab_conn_update_events(c);
	}
	fab_reap(&fab);
}

void emu_fabric_orphan(struct emu_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	fab_buf_free(&c->in);
	fab_out_free(c);
	fab_buf_free(&c->hold);
	free(c);
}
