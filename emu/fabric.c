/* SPDX-License-Identifier: MIT */
/*
 * The fabric: carries requests and responses between QPs. This file holds
 * its entry points (fabric.h) and its event loop; fabric_int.h says where
 * the rest is.
 *
 * In-process peers get a direct call when both QPs are on one engine worker,
 * else a copy through the peer's worker's inbox (worker.h). Everything else
 * travels over TCP: each device listens on one socket (served by worker 0),
 * and each worker opens one connection per (local device, remote listener)
 * pair, shared by every QP of that worker and device whose destination GID
 * names that listener. An inbound connection is served by worker 0 until its
 * handshake is over, then by the worker of the QP its first request names
 * (fabric_int.h). The hello that opens a connection names the local
 * device's GID, which is why connections are not shared across local devices.
 *
 * Every socket is non-blocking and sits in its worker's epoll set
 * (level-triggered) next to the worker's kick eventfd. Output is appended to
 * a per-connection buffer and written once per engine pass (emu_fabric_flush); input is read in
 * big chunks into a compacting buffer and dispatched in place, so a message
 * costs a memcpy, not a syscall or a malloc. A message larger than
 * FAB_IN_FREE is buffered whole only once its QP said it takes it (its
 * header is offered alone first): a peer can make this process hold no more
 * than the WRITE targets it may write or the READ data it was asked for;
 * the data of anything refused or dropped is discarded as it arrives.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fabric_int.h"

static struct fab_handle kick_handle = {FAB_KICK};
static _Atomic bool no_pwait2;

/* ---- helpers -------------------------------------------------------------- */

const char *fab_addr_str(const struct sockaddr_in *a, char *buf, size_t size)
{
	char ip[INET_ADDRSTRLEN];

	if (!inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip)))
		strcpy(ip, "?");
	snprintf(buf, size, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}

int fab_epoll_set(int op, int fd, struct fab_handle *h, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = h};

	return epoll_ctl(emu_worker_cur()->epoll_fd, op, fd, &ev) ? -errno : 0;
}

void fab_epoll_forget(int fd)
{
	epoll_ctl(emu_worker_cur()->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
}

/* The engine sleeps in emu_fabric_wait(); the kick eventfd must be in the set
 * to cut that sleep short. MOD also covers a registration made by someone else
 * with other event data. */
void fab_register_kick_now(int fd)
{
	if (fab_epoll_set(EPOLL_CTL_ADD, fd, &kick_handle, EPOLLIN) == -EEXIST &&
	    fab_epoll_set(EPOLL_CTL_MOD, fd, &kick_handle, EPOLLIN))
		return;
	fab.kick_registered = fd;
}

static void drain_kick(void)
{
	uint64_t v;

	/* Level-triggered and we are the only reader: this never blocks. */
	if (read(emu_worker_cur()->kick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		emu_dbg("fabric: kick eventfd read: %s", strerror(errno));
}

void fab_set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Deeper socket buffers for the AF_UNIX connections: fewer wake-ups per
 * large message. */
void fab_set_local_bufs(int fd)
{
	int n = FAB_LOCAL_SOCKBUF;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(n));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n));
}

/* The abstract AF_UNIX name of the twin of the listener at a: seen only by
 * processes of this host (of its network namespace), which reach that
 * listener there without the TCP stack. Returns the name's length. */
socklen_t fab_local_name(const struct sockaddr_in *a, struct sockaddr_un *un)
{
	char ip[INET_ADDRSTRLEN];
	int n;

	if (!inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip)))
		strcpy(ip, "?");
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "gnic-emu-fabric/%s:%u", ip,
	             ntohs(a->sin_port));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
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
	c = fab_conn_find(qp->ctx->dev, &addr);
	if (c && c == qp->conn)
		return 0;
	if (!c) {
		c = fab_conn_alloc(qp->ctx->dev, &addr, true);
		if (!c)
			return -ENOMEM;
		emu_gid_identity(&qp->dgid, &c->peer_gid); /* whom the handshake must meet */
		fab_conn_connect(c);
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
		fab_conn_retire(c);
}

/* A peer QP of this worker runs its responder inside this call; one of
 * another worker gets a copy through that worker's inbox (-EAGAIN while the
 * inbox is over its mark, as a full connection would say). The peer is QP
 * m->dst_qpn of the device dgid names. */
static int send_local(struct emu_qp *qp, const union ibv_gid *dgid, const struct emu_msg *m,
                      const void *payload, struct emu_mr *src)
{
	struct emu_reply_path path = {
	    .local = qp, .peer_gid = &qp->ctx->dev->gid, .payload_mr = src};
	/* a connected QP's peer device was looked up when its path was set */
	struct emu_device *dev = dgid == &qp->dgid ? qp->peer_dev : emu_device_by_gid(dgid);
	int owner = emu_qpn_worker(m->dst_qpn);
	struct emu_qp *peer;

	if (!dev)
		return -ENOTCONN; /* attach found no emulator at that GID */
	/* No such QP on that device: lost on the wire, the timer decides. */
	if (!owner)
		return 0;
	if (owner != qp->worker->index + 1) {
		struct emu_inbox_from from = {.reply_w = qp->worker->index,
		                              .reply_qpn = qp->ibqp.qp_num,
		                              .peer_gid = &qp->ctx->dev->gid,
		                              .dst_dev = dev};
		int ret = emu_inbox_push(emu_worker_at(owner - 1), EMU_INBOX_REQUEST, &from, m,
		                         payload, src, true);

		return ret == -ENOMEM ? 0 : ret; /* out of memory: lost, the timer decides */
	}
	/* owner is this worker, which holds its lock: emu_worker_qp()'s check
	 * of the owner again would find the same */
	peer = emu_qp_lookup(m->dst_qpn);
	if (!peer || !peer->ctx || peer->ctx->dev != dev)
		return 0;
	peer->ops->on_request(peer, &path, m, payload);
	return 0;
}

/* The connection of qp's worker to the listener at addr that qp holds a
 * reference on, taking one (and making the connection) if it holds none;
 * the oldest of its EMU_DGRAM_CONNS references makes room. */
static struct emu_conn *dgram_conn(struct emu_qp *qp, const union ibv_gid *dgid,
                                   const struct sockaddr_in *addr)
{
	struct emu_conn *c = fab_conn_find(qp->ctx->dev, addr), **slot;

	for (int i = 0; c && i < EMU_DGRAM_CONNS; i++)
		if (qp->dgram[i] == c)
			return c;
	if (!c) {
		c = fab_conn_alloc(qp->ctx->dev, addr, true);
		if (!c)
			return NULL;
		emu_gid_identity(dgid, &c->peer_gid); /* whom the handshake must meet */
		fab_conn_connect(c);
	}
	c->refs++;
	slot = &qp->dgram[qp->dgram_next++ % EMU_DGRAM_CONNS];
	if (*slot && --(*slot)->refs == 0)
		fab_conn_retire(*slot);
	*slot = c;
	return c;
}

int emu_fabric_send_dgram(struct emu_qp *qp, const union ibv_gid *dgid, const struct emu_msg *m,
                          const void *payload, struct emu_mr *src)
{
	struct sockaddr_in addr;
	struct emu_conn *c;

	if (!qp || !qp->ctx || !dgid || !m || !emu_wire_msg_valid(m) ||
	    !emu_wire_is_request(m->type) || (emu_wire_payload_len(m) && !payload))
		return -EINVAL;
	if (emu_device_by_gid(dgid))
		return send_local(qp, dgid, m, payload, src);
	if (emu_gid_to_addr(dgid, &addr))
		return -ENOTCONN;
	c = dgram_conn(qp, dgid, &addr);
	if (!c)
		return -ENOTCONN;
	if (!fab_conn_revive(c))
		return -ENOTCONN;
	if (fab_out_used(c) + fab_buf_used(&c->hold) >= FAB_OUT_HIGH_WATER)
		return -EAGAIN;
	return fab_conn_post(c, m, payload, src);
}

void emu_fabric_dgram_release(struct emu_qp *qp)
{
	for (int i = 0; i < EMU_DGRAM_CONNS; i++) {
		struct emu_conn *c = qp->dgram[i];

		qp->dgram[i] = NULL;
		if (c && --c->refs == 0)
			fab_conn_retire(c);
	}
	qp->dgram_next = 0;
}

int emu_fabric_send(struct emu_qp *qp, const struct emu_msg *m, const void *payload,
                    struct emu_mr *src)
{
	struct emu_conn *c;

	if (!qp || !qp->ctx || !m || !emu_wire_msg_valid(m) || !emu_wire_is_request(m->type) ||
	    (emu_wire_payload_len(m) && !payload))
		return -EINVAL;
	c = qp->conn;
	if (!c)
		return send_local(qp, &qp->dgid, m, payload, src);
	if (!fab_conn_revive(c))
		return -ENOTCONN;
	if (fab_out_used(c) + fab_buf_used(&c->hold) >= FAB_OUT_HIGH_WATER)
		return -EAGAIN;
	return fab_conn_post(c, m, payload, src);
}

int emu_fabric_reply(struct emu_reply_path *path, const struct emu_msg *m, const void *payload,
                     struct emu_mr *src)
{
	if (!path || !m || !emu_wire_msg_valid(m) || emu_wire_is_request(m->type) ||
	    (emu_wire_payload_len(m) && !payload))
		return -EINVAL;
	if (path->local) {
		path->local->ops->on_response(path->local, m, payload);
		return 0;
	}
	if (!path->conn) {
		struct emu_worker *w = emu_worker_at(path->fwd_w);
		struct emu_inbox_from from = {.conn_id = path->fwd_conn};

		if (!w || (!path->fwd_qpn && !path->fwd_conn))
			return -EINVAL;
		/* no high-water check, as below: requests are what is held back */
		return emu_inbox_push(w, path->fwd_qpn ? EMU_INBOX_RESPONSE : EMU_INBOX_CONN, &from,
		                      m, payload, path->fwd_qpn ? src : NULL, false);
	}
	if (path->conn->state != CONN_UP)
		return -ENOTCONN; /* dropped: the requester retransmits */
	/* No high-water check: requests stop being parsed above the mark. */
	return fab_conn_post(path->conn, m, payload, src);
}

void emu_fabric_path_save(const struct emu_reply_path *path, struct emu_reply_saved *saved)
{
	saved->local_qpn = path->local ? path->local->ibqp.qp_num : 0;
	saved->conn_id = path->conn ? path->conn->id : 0;
	saved->fwd_w = path->fwd_w;
	saved->fwd_qpn = path->fwd_qpn;
	saved->fwd_conn = path->fwd_conn;
}

int emu_fabric_reply_saved(const struct emu_reply_saved *saved, const struct emu_msg *m,
                           const void *payload)
{
	struct emu_reply_path path = {
	    .fwd_w = saved->fwd_w, .fwd_qpn = saved->fwd_qpn, .fwd_conn = saved->fwd_conn};

	if (saved->local_qpn) {
		path.local = emu_worker_qp(emu_worker_cur(), saved->local_qpn);
		if (!path.local)
			return -ENOTCONN; /* gone: lost */
	} else if (saved->conn_id) {
		emu_fabric_conn_reply(saved->conn_id, m, payload);
		return 0;
	}
	return emu_fabric_reply(&path, m, payload, NULL);
}

void emu_fabric_detach_mr(const struct emu_mr *mr)
{
	for (int i = 0; i < emu_workers_count() && atomic_load(&mr->wire_refs); i++) {
		struct emu_worker *w = emu_worker_at(i);

		emu_worker_lock(w);
		for (struct emu_conn *c = fab.conns; c; c = c->next)
			fab_out_detach_mr(c, mr);
		emu_worker_unlock(w);
	}
}

void emu_fabric_conn_reply(uint64_t conn_id, const struct emu_msg *m, const void *payload)
{
	for (struct emu_conn *c = fab.conns; c; c = c->next) {
		if (c->id != conn_id)
			continue;
		if (c->state == CONN_UP && !c->doomed)
			fab_conn_post(c, m, payload, NULL); /* the inbox's copy: freed after */
		return;
	}
	/* gone: the reply is lost, the requester retransmits */
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
		return fab_listener_accept(container_of(h, struct emu_listener, h));
	case FAB_CONN:
		return fab_conn_event(container_of(h, struct emu_conn, h), ev->events);
	}
	return 0;
}

/* Without connections the sockets only matter for accepting one, and an
 * epoll_wait() per pass would double the cost of an in-process engine pass. */
static bool idle_skip(struct fab_state *fs)
{
	uint64_t now;

	if (fs->conns)
		return false;
	now = emu_now_ns();
	if (now < fs->idle_next_ns)
		return true;
	fs->idle_next_ns = now + FAB_IDLE_POLL_NS;
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
static int heard_rest(struct fab_state *fs, uint64_t t0, bool epoll_full)
{
	int work = 0;

	for (struct emu_conn *c = fs->conns; c; c = c->next) {
		if (c->read_seq == fs->poll_seq || c->doomed || c->handoff || conn_input_hidden(c))
			continue;
		if (epoll_full && c->fd >= 0 && (c->state == CONN_AUTH || c->state == CONN_UP))
			work += fab_conn_read(c);
		else
			fab_conn_heard(c, t0);
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
	struct emu_worker *w = emu_worker_cur();
	struct fab_state *fs = &fab; /* this worker's, looked up once */
	uint64_t t0;
	int n, work;

	if (w->index == 0)
		fab_listeners_resume(); /* worker 0 has the listeners */
	if (idle_skip(fs))
		return 0;
	fab_register_kick(w, fs);
	fs->dispatching = true;
	fs->poll_seq++;
	work = fab_resume_blocked(fs);
	t0 = emu_now_ns();
	n = epoll_wait(w->epoll_fd, ev, FAB_POLL_EVENTS, 0);
	for (int i = 0; i < n; i++) {
		first[i] = event_first(&ev[i]);
		if (first[i])
			work += handle_event(&ev[i]);
	}
	for (int i = 0; i < n; i++)
		if (!first[i])
			work += handle_event(&ev[i]);
	work += heard_rest(fs, t0, n == FAB_POLL_EVENTS);
	fab_hs_expire(fs);
	fs->dispatching = false;
	fab_reap(fs);
	return work;
}

uint64_t emu_fabric_heard_ns(const struct emu_qp *qp, uint64_t now)
{
	int owner;

	/* in-process: a peer of this worker answers inside emu_fabric_send();
	 * one of another worker as soon as that worker ran our request (and
	 * its answer is drained from our inbox before any timer is judged) */
	if (!qp->conn) {
		owner = emu_qpn_worker(qp->dest_qpn);
		if (!owner || owner == qp->worker->index + 1)
			return now;
		return emu_worker_heard_ns(emu_worker_at(owner - 1), now);
	}
	if (qp->conn->heard_ns > now)
		return now;
	return qp->conn->heard_ns;
}

uint64_t emu_fabric_tx_mark(const struct emu_qp *qp)
{
	return qp->conn ? qp->conn->tx_posted : 0;
}

bool emu_fabric_tx_done(const struct emu_qp *qp, uint64_t mark)
{
	return !qp->conn || qp->conn->tx_sent >= mark;
}

int emu_fabric_flush(void)
{
	struct fab_state *fs = &fab;
	size_t total = 0;

	for (struct emu_conn *c = fs->conns; c; c = c->next) {
		c->wrote_this_pass = false;
		if (c->state != CONN_UP && c->state != CONN_AUTH)
			continue;
		if (fab_out_used(c))
			total += fab_conn_write(c);
		fab_conn_update_events(c);
	}
	fab_reap(fs);
	return total > INT_MAX ? INT_MAX : (int)total;
}

/* Output the next flush can write. Output stuck behind a full socket does not
 * count: EPOLLOUT is armed for it and ends emu_fabric_wait() as soon as the
 * peer reads, so the engine need not spin (and steal the peer's CPU). */
bool emu_fabric_pending(void)
{
	for (struct emu_conn *c = fab.conns; c; c = c->next)
		if ((c->state == CONN_UP || c->state == CONN_AUTH) && fab_out_used(c) &&
		    !c->sock_full)
			return true;
	return false;
}

void emu_fabric_wait(uint64_t timeout_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
	                      .tv_nsec = (long)(timeout_ns % 1000000000u)};
	struct emu_worker *w = emu_worker_cur();
	struct epoll_event ev;
	uint64_t ms,
	    resume =
	        w->index ? 0 : atomic_load_explicit(&fab_accept_resume_ns, memory_order_relaxed);

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
		if (epoll_pwait2(w->epoll_fd, &ev, 1, &ts, NULL) >= 0 || errno != ENOSYS)
			return;
		atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
	}
	ms = (timeout_ns + 999999) / 1000000;
	epoll_wait(w->epoll_fd, &ev, 1, ms > INT_MAX ? INT_MAX : (int)ms);
}
