/* SPDX-License-Identifier: MIT */
/*
 * A device's Ethernet port: where RAW_PACKET QPs' frames go and where the
 * frames steering hands them come from.
 *
 * With GNIC_EMU_ETH_IF naming an interface for the device, the port is an
 * AF_PACKET socket (SOCK_RAW, ETH_P_ALL) bound to it, opened with the
 * device's first RAW_PACKET QP and closed with its last: frames the QPs send
 * go out there (frames the socket itself sent are not received back), and a
 * receive thread of the port reads what arrives, in batches, and steers it
 * with worker 0's lock held (eth.h). The interface is put in promiscuous
 * mode while the port is open, as a NIC's steering sees every frame on the
 * wire. The kernel hands AF_PACKET some frames as no wire carries them: a
 * VLAN tag moved out of the frame, a TCP/UDP checksum left for an offload
 * to fill; the port puts the tag back and fills the checksum first.
 *
 * Without an interface the port is a loopback: every frame sent goes
 * straight into the device's own steering, so RAW_PACKET QPs of one device
 * reach each other (and nothing else).
 *
 * Bounded: the receive thread waits at most RX_WAIT_MS at a time and checks
 * for its stop; a send never blocks (a frame the interface cannot take now,
 * because it is down, gone or full, is dropped and counted, as a link that is
 * down drops it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eth.h"
#include "worker.h"

#define RX_WAIT_MS 100
#define RX_BATCH   32
#define RX_SOCKBUF (8 << 20) /* frames waiting for the receive thread */

struct eth_port {
	int refs; /* RAW_PACKET QPs of the device (under nic.lock) */
	int fd;   /* -1: loopback */
	int ifindex;
	char ifname[IF_NAMESIZE];
	pthread_t rx;
	_Atomic bool stop;
	uint8_t (*buf)[EMU_ETH_MAX_FRAME + 4]; /* RX_BATCH frames, room for a tag */
	uint32_t len[RX_BATCH];
};

static struct eth_port ports[EMU_MAX_DEVICES];

/* Device index's interface from GNIC_EMU_ETH_IF ("if0,if1,..."; an empty
 * entry: loopback). false: none. */
static bool ifname_of(int index, char *name)
{
	const char *s = emu_cfg.eth_if;

	for (int i = 0; i < index && s; i++) {
		s = strchr(s, ',');
		if (s)
			s++;
	}
	if (!s || !*s || *s == ',')
		return false;
	size_t n = strcspn(s, ",");
	if (n >= IF_NAMESIZE)
		n = IF_NAMESIZE - 1;
	memcpy(name, s, n);
	name[n] = '\0';
	return true;
}

/* ---- receive ------------------------------------------------------------------- */

/* The frame as the wire carried it: the VLAN tag back in place (the kernel
 * moved it to auxdata), a checksum the kernel left to offload filled. */
static uint32_t as_on_wire(uint8_t *f, uint32_t len, const struct tpacket_auxdata *aux)
{
	if (aux && (aux->tp_status & TP_STATUS_VLAN_VALID) && len >= 12) {
		uint16_t tpid = (aux->tp_status & TP_STATUS_VLAN_TPID_VALID) ? aux->tp_vlan_tpid
		                                                             : EMU_ETH_P_VLAN;

		memmove(f + 16, f + 12, len - 12);
		f[12] = (uint8_t)(tpid >> 8);
		f[13] = (uint8_t)tpid;
		f[14] = (uint8_t)(aux->tp_vlan_tci >> 8);
		f[15] = (uint8_t)aux->tp_vlan_tci;
		len += 4;
	}
	if (aux && (aux->tp_status & TP_STATUS_CSUMNOTREADY))
		emu_pkt_fill_csum(f, len, false, true);
	return len;
}

/* One frame into slot i: its length, 0 for none (or one not kept), -1 when
 * the socket has nothing more now. */
static int rx_one(struct emu_device *dev, struct eth_port *p, int i)
{
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
	} ctl;
	struct sockaddr_ll from;
	struct iovec iov = {.iov_base = p->buf[i], .iov_len = EMU_ETH_MAX_FRAME};
	struct msghdr mh = {.msg_name = &from,
	                    .msg_namelen = sizeof(from),
	                    .msg_iov = &iov,
	                    .msg_iovlen = 1,
	                    .msg_control = &ctl,
	                    .msg_controllen = sizeof(ctl)};
	const struct tpacket_auxdata *aux = NULL;
	ssize_t n = recvmsg(p->fd, &mh, MSG_DONTWAIT | MSG_TRUNC);

	if (n < 0)
		return -1; /* EAGAIN, or the interface is down or gone: wait */
	if (from.sll_pkttype == PACKET_OUTGOING)
		return 0;
	if ((size_t)n > EMU_ETH_MAX_FRAME || (mh.msg_flags & MSG_TRUNC)) {
		atomic_fetch_add_explicit(&emu_eth_counters(dev)->rx_too_long, 1,
		                          memory_order_relaxed);
		return 0;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA)
			aux = (const void *)CMSG_DATA(c);
	return (int)as_on_wire(p->buf[i], (uint32_t)n, aux);
}

/* Frames the kernel dropped because the socket was full (its counter
 * restarts at each read). */
static void count_overrun(struct emu_device *dev, struct eth_port *p)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0 && st.tp_drops)
		atomic_fetch_add_explicit(&emu_eth_counters(dev)->rx_overrun, st.tp_drops,
		                          memory_order_relaxed);
}

static void *rx_main(void *arg)
{
	struct emu_device *dev = arg;
	struct eth_port *p = &ports[dev->index];
	struct emu_worker *w = emu_worker_at(0);

	while (!atomic_load(&p->stop)) {
		struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
		int n = 0, got = 0;

		if (poll(&pfd, 1, RX_WAIT_MS) <= 0) {
			count_overrun(dev, p);
			continue;
		}
		if (!(pfd.revents & POLLIN)) {
			/* an error only (the interface went down or away): take it,
			 * so the next poll waits for frames again */
			int err = 0;
			socklen_t len = sizeof(err);

			getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len);
			emu_dbg("%s: Ethernet port on %s: %s", dev->ibdev.name, p->ifname,
			        strerror(err));
			usleep(RX_WAIT_MS * 1000);
			continue;
		}
		while (n < RX_BATCH && (got = rx_one(dev, p, n)) >= 0)
			if (got > 0)
				p->len[n++] = (uint32_t)got;
		if (!n)
			continue;
		emu_worker_lock(w);
		for (int i = 0; i < n; i++)
			emu_flow_rx(dev, p->buf[i], p->len[i]);
		emu_worker_unlock(w);
		if (n == RX_BATCH)
			count_overrun(dev, p);
	}
	count_overrun(dev, p);
	return NULL;
}

/* ---- open / close -------------------------------------------------------------- */

static int set_opt(int fd, int level, int name, const void *v, socklen_t len, const char *what)
{
	if (setsockopt(fd, level, name, v, len) == 0)
		return 0;
	emu_err("Ethernet port: %s: %s", what, strerror(errno));
	return -errno;
}

static int bind_if(struct eth_port *p)
{
	struct sockaddr_ll sa = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	struct packet_mreq mr = {.mr_type = PACKET_MR_PROMISC};
	int one = 1, ret;

	p->ifindex = (int)if_nametoindex(p->ifname);
	if (!p->ifindex) {
		emu_err("GNIC_EMU_ETH_IF: no interface %s: %s", p->ifname, strerror(errno));
		return -ENODEV;
	}
	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (p->fd < 0) {
		ret = -errno;
		emu_err("GNIC_EMU_ETH_IF=%s: AF_PACKET socket: %s (needs CAP_NET_RAW)", p->ifname,
		        strerror(errno));
		return ret;
	}
	sa.sll_ifindex = p->ifindex;
	mr.mr_ifindex = p->ifindex;
	if (bind(p->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		emu_err("GNIC_EMU_ETH_IF=%s: bind: %s", p->ifname, strerror(errno));
		return ret;
	}
	if ((ret =
	         set_opt(p->fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one), "PACKET_AUXDATA")) ||
	    (ret = set_opt(p->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr),
	                   "promiscuous mode")))
		return ret;
	/* Linux >= 4.20; without it PACKET_OUTGOING frames are skipped one by one */
	setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	/* past net.core.rmem_max where allowed (CAP_NET_ADMIN); else what it gives */
	if (setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &(int){RX_SOCKBUF}, sizeof(int)))
		setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &(int){RX_SOCKBUF}, sizeof(int));
	return 0;
}

static void close_port(struct eth_port *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	free(p->buf);
	p->buf = NULL;
}

static int open_port(struct emu_device *dev, struct eth_port *p)
{
	int ret;

	p->fd = -1;
	if (!ifname_of(dev->index, p->ifname))
		return 0; /* loopback */
	p->buf = malloc(sizeof(*p->buf) * RX_BATCH);
	ret = p->buf ? bind_if(p) : -ENOMEM;
	if (!ret) {
		atomic_store(&p->stop, false);
		ret = -pthread_create(&p->rx, NULL, rx_main, dev);
	}
	if (ret) {
		close_port(p);
		return ret;
	}
	emu_info("%s: Ethernet port on %s (AF_PACKET)", dev->ibdev.name, p->ifname);
	return 0;
}

static void log_counters(const struct emu_device *dev, const char *where)
{
	struct emu_eth_counters *c = emu_eth_counters(dev);

	emu_info("%s: Ethernet port (%s) closed: rx %llu frames, %llu delivered, dropped: "
	         "%llu no rule, %llu drop rule, %llu no receive WQE, %llu too long, %llu bad "
	         "WQE, %llu overrun; tx %llu frames, %llu dropped",
	         dev->ibdev.name, where, (unsigned long long)atomic_load(&c->rx_frames),
	         (unsigned long long)atomic_load(&c->rx_delivered),
	         (unsigned long long)atomic_load(&c->rx_no_rule),
	         (unsigned long long)atomic_load(&c->rx_drop_rule),
	         (unsigned long long)atomic_load(&c->rx_no_wqe),
	         (unsigned long long)atomic_load(&c->rx_too_long),
	         (unsigned long long)atomic_load(&c->rx_bad_wqe),
	         (unsigned long long)atomic_load(&c->rx_overrun),
	         (unsigned long long)atomic_load(&c->tx_frames),
	         (unsigned long long)atomic_load(&c->tx_dropped));
}

int emu_eth_port_get(struct emu_device *dev)
{
	struct eth_port *p = &ports[dev->index];
	int ret;

	if (p->refs++)
		return 0;
	ret = open_port(dev, p);
	if (ret)
		p->refs--;
	return ret;
}

void emu_eth_port_put(struct emu_device *dev)
{
	struct eth_port *p = &ports[dev->index];

	if (--p->refs)
		return;
	log_counters(dev, p->fd >= 0 ? p->ifname : "loopback");
	if (p->fd >= 0) {
		atomic_store(&p->stop, true);
		pthread_join(p->rx, NULL); /* within RX_WAIT_MS */
	}
	close_port(p);
}

/* ---- send ---------------------------------------------------------------------- */

void emu_eth_port_tx(struct emu_device *dev, const uint8_t *frame, uint32_t len)
{
	struct eth_port *p = &ports[dev->index];

	if (p->fd < 0) {
		emu_flow_rx(dev, frame, len);
		return;
	}
	if (send(p->fd, frame, len, MSG_DONTWAIT) != (ssize_t)len) {
		static struct emu_log_limit limit;

		atomic_fetch_add_explicit(&emu_eth_counters(dev)->tx_dropped, 1,
		                          memory_order_relaxed);
		emu_warn_limited(&limit, "%s: a %u-byte frame was not sent on %s: %s",
		                 dev->ibdev.name, len, p->ifname, strerror(errno));
	}
}
