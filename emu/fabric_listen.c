/* SPDX-License-Identifier: MIT */
/*
 * The fabric's listeners: one per device, and the inbound connections they
 * accept until those finish their handshake.
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
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric_int.h"

_Atomic uint64_t fab_accept_resume_ns;
/* Inbound connections in their handshake, oldest first. */
static struct {
	struct emu_conn *head, *tail;
	unsigned int n;
} pend;
static int reserve_fd = -1; /* spent to refuse a connection on EMFILE */

/* ---- pending handshakes --------------------------------------------------- */

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

void fab_pending_del(struct emu_conn *c)
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
	        fab_conn_name(c, name, sizeof(name)), pend.n);
	(*count)++;
	fab_conn_down(c);
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
	struct emu_conn *c = fab_conn_alloc(l->dev, peer, false);
	char name[64];
	int ret;

	if (!c) {
		emu_warn("fabric: no memory for a new connection");
		close(fd);
		return;
	}
	c->local = l->local;
	if (c->local)
		fab_set_local_bufs(fd);
	else
		fab_set_nodelay(fd);
	c->fd = fd;
	ret = fab_hs_begin(c, EMU_HS_ACCEPTOR);
	if (ret) { /* no secret (logged once): nobody gets in */
		emu_dbg("fabric: connection %s: refused: %s", fab_conn_name(c, name, sizeof(name)),
		        strerror(-ret));
		fab_conn_down(c);
		return;
	}
	c->state = CONN_AUTH;
	fab_hs_arm(c, emu_now_ns());
	c->events = EPOLLIN;
	if (fab_epoll_set(EPOLL_CTL_ADD, fd, &c->h, c->events)) {
		emu_warn("fabric: connection %s: epoll: %s", fab_conn_name(c, name, sizeof(name)),
		         strerror(errno));
		fab_conn_down(c);
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
	fab_epoll_forget(l->fd);
	l->paused = true;
	l->resume_ns = resume;
	next = atomic_load_explicit(&fab_accept_resume_ns, memory_order_relaxed);
	if (!next || resume < next)
		atomic_store_explicit(&fab_accept_resume_ns, resume, memory_order_relaxed);
}

/* Paused listener l back in epoll once due; *next: the earliest return
 * still to come. */
static void listener_resume(struct emu_listener *l, uint64_t now, uint64_t *next)
{
	if (!l->paused)
		return;
	if (now < l->resume_ns) {
		if (!*next || l->resume_ns < *next)
			*next = l->resume_ns;
		return;
	}
	if (fab_epoll_set(EPOLL_CTL_ADD, l->fd, &l->h, EPOLLIN)) {
		l->resume_ns = now + FAB_ACCEPT_PAUSE_NS; /* try again then */
		*next = *next && *next < l->resume_ns ? *next : l->resume_ns;
		return;
	}
	l->paused = false;
}

void fab_listeners_resume(void)
{
	uint64_t now, next = 0;

	if (!atomic_load_explicit(&fab_accept_resume_ns, memory_order_relaxed))
		return;
	now = emu_now_ns();
	for (int i = 0; i < emu_nic.num_devices; i++) {
		struct emu_listener *l = emu_nic.devices[i].listener;

		if (l) {
			listener_resume(l, now, &next);
			if (l->twin)
				listener_resume(l->twin, now, &next);
		}
	}
	atomic_store_explicit(&fab_accept_resume_ns, next, memory_order_relaxed);
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
int fab_listener_accept(struct emu_listener *l)
{
	bool pressure = false;
	int n;

	for (n = 0; n < FAB_ACCEPT_BATCH; n++) {
		/* a local peer has no address: all count as 0.0.0.0 */
		struct sockaddr_in peer = {.sin_family = AF_INET};
		socklen_t len = sizeof(peer);
		int fd = accept4(l->fd, l->local ? NULL : (struct sockaddr *)&peer,
		                 l->local ? NULL : &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

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

/* A loopback address of 127.1.0.1 .. 127.254.255.254 for try n of device
 * dev: spread by process, time and device so that processes on one host
 * rarely meet (a taken one is tried again, n + 1). 127.0.0.x stays free for
 * the host's own services. */
static uint32_t loopback_pick(const struct emu_device *dev, unsigned n)
{
	uint64_t z = emu_now_ns() ^ (uint64_t)getpid() << 32 ^ (uint64_t)dev->index << 16 ^ n;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull; /* splitmix64's finaliser */
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	if (emu_cfg.link_ib) /* 127.1.0.0/16, the low 16 bits a unicast LID */
		return 127u << 24 | 1u << 16 | (uint32_t)(1 + z % 0xbe) << 8 |
		       (uint32_t)(1 + (z >> 8) % 254);
	return 127u << 24 | (uint32_t)(1 + z % 254) << 16 | (uint32_t)((z >> 8) % 256) << 8 |
	       (uint32_t)(1 + (z >> 16) % 254);
}

/* Device dev's fabric address on try n: GNIC_EMU_ADDR + index, or a
 * loopback address of its own; the port is the fabric's (GNIC_EMU_PORT). */
static int listen_addr(const struct emu_device *dev, unsigned n, struct sockaddr_in *addr)
{
	const char *ip = emu_cfg.bind_addr;
	uint32_t a;

	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_port = htons((uint16_t)emu_cfg.base_port);
	if (!ip[0]) {
		addr->sin_addr.s_addr = htonl(loopback_pick(dev, n));
		return 0;
	}
	if (inet_pton(AF_INET, ip, &addr->sin_addr) != 1) {
		emu_err("fabric: GNIC_EMU_ADDR '%s' is not an IPv4 address", ip);
		return -EINVAL;
	}
	a = ntohl(addr->sin_addr.s_addr) + (uint32_t)dev->index;
	addr->sin_addr.s_addr = htonl(a);
	if (emu_cfg.link_ib && ((a & 0xffff) == 0 || (a & 0xffff) > EMU_LID_UNICAST_MAX)) {
		emu_err("fabric: GNIC_EMU_LINK=ib: the address of device %d gives LID 0x%04x, not "
		        "a unicast LID (0x0001-0xbfff)",
		        dev->index, a & 0xffff);
		return -EADDRNOTAVAIL;
	}
	if (emu_addr_not_unicast(addr->sin_addr)) { /* config.c refuses these already */
		emu_err("fabric: GNIC_EMU_ADDR '%s' + device %d is %s, not a unicast address", ip,
		        dev->index, emu_addr_not_unicast(addr->sin_addr));
		return -EADDRNOTAVAIL;
	}
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

/* The AF_UNIX twin of the listener bound at addr: processes of this host
 * connect there (fabric_conn.c), past the TCP stack, and the handshake is
 * the same. NULL if it cannot be made: they then use TCP. */
static struct emu_listener *twin_listen(struct emu_device *dev, const struct sockaddr_in *addr)
{
	struct sockaddr_un un;
	socklen_t len = fab_local_name(addr, &un);
	struct emu_listener *l;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return NULL;
	if (bind(fd, (const struct sockaddr *)&un, len) || listen(fd, SOMAXCONN))
		goto fail;
	l = calloc(1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		goto fail;
	}
	l->h.kind = FAB_LISTENER;
	l->fd = fd;
	l->local = true;
	l->dev = dev;
	err = fab_epoll_set(EPOLL_CTL_ADD, fd, &l->h, EPOLLIN);
	if (!err)
		return l;
	free(l);
	errno = -err;
fail:
	err = errno;
	close(fd);
	emu_info("fabric: device %d: no local listener (%s): processes of this host connect "
	         "over TCP",
	         dev->index, strerror(err));
	return NULL;
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
	/* an own loopback address may be taken by another process: pick again */
	for (unsigned n = 0;; n++) {
		ret = listen_addr(dev, n, &addr);
		if (ret)
			return ret;
		fd = listen_socket(&addr, &bound);
		if (fd != -EADDRINUSE || emu_cfg.bind_addr[0] || n == 63)
			break;
	}
	if (fd < 0) {
		/* the caller (nic.c) reports the failure; this adds the address */
		emu_dbg("fabric: device %d: cannot listen on %s: %s", dev->index,
		        fab_addr_str(&addr, name, sizeof(name)), strerror(-fd));
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
	ret = fab_epoll_set(EPOLL_CTL_ADD, fd, &l->h, EPOLLIN);
	if (ret) {
		emu_err("fabric: device %d: epoll: %s", dev->index, strerror(-ret));
		close(fd);
		free(l);
		return ret;
	}
	l->twin = emu_cfg.fabric_local ? twin_listen(dev, &bound) : NULL;
	dev->listener = l;
	dev->addr = bound;
	emu_gid_make(&dev->gid, &dev->addr);
	fab_register_kick(emu_worker_cur(), &fab);
	emu_dbg("fabric: device %d listens on %s", dev->index,
	        fab_addr_str(&bound, name, sizeof(name)));
	return 0;
}

static void listener_free(struct emu_listener *l)
{
	if (!l)
		return;
	if (!l->paused)
		fab_epoll_forget(l->fd);
	close(l->fd);
	free(l);
}

void emu_fabric_close_listener(struct emu_device *dev)
{
	struct emu_listener *l = dev ? dev->listener : NULL;

	if (!l)
		return;
	listener_free(l->twin);
	listener_free(l);
	dev->listener = NULL;
	/* the device's port goes down: so do the connections it accepted */
	for (struct emu_conn *c = fab.conns; c; c = c->next)
		if (!c->outbound && c->dev == dev)
			fab_conn_down(c);
	if (!fab.dispatching)
		fab_reap(&fab);
}
