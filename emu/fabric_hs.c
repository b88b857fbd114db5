/* SPDX-License-Identifier: MIT */
/*
 * The fabric's handshake: fabric_wire.c's parser driven by a connection's
 * input, the deadline it must meet, and the log of the ones that fail.
 *
 * Before anything else both ends of a connection authenticate each other
 * (fabric_wire.h): the connector queues its hello at connect(), requests
 * posted meanwhile wait in a hold buffer, and only when the acceptor's
 * challenge proved the secret do the proof and then the held requests go
 * out. The acceptor parses no message before the proof checked out. A
 * handshake that fails or does not finish within GNIC_EMU_HANDSHAKE_MS
 * closes the connection with one log line; the requester's retransmit timer
 * then ends its QP in TRANSPORT_RETRY_EXC as for any unreachable peer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fabric_int.h"

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
/* the logs are the process's, the connections any worker's */
static pthread_mutex_t auth_log_lock = PTHREAD_MUTEX_INITIALIZER;

/* The handshake must be over by then; emu_fabric_poll() checks. */
void fab_hs_arm(struct emu_conn *c, uint64_t now)
{
	c->hs_deadline_ns = now + (uint64_t)emu_cfg.handshake_ms * 1000000u;
	if (!fab.hs_next_ns || c->hs_deadline_ns < fab.hs_next_ns)
		fab.hs_next_ns = c->hs_deadline_ns;
}

/* Start the handshake: fresh nonce, and for the connector its hello as the
 * first bytes of the output. The connector accepts only the GID it dialed;
 * the acceptor refuses the GIDs of this process's devices (they never dial
 * each other over the fabric: emu_fabric_attach). 0 or -errno. */
int fab_hs_begin(struct emu_conn *c, enum emu_hs_role role)
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
	return n ? fab_out_hs(c, out, n) : 0;
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
void fab_conn_auth_failed(struct emu_conn *c, const char *why)
{
	struct auth_log *l;
	char name[64];
	uint64_t now;

	if (c->state == CONN_DEAD)
		return;
	fab_conn_name(c, name, sizeof(name));
	pthread_mutex_lock(&auth_log_lock);
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
	pthread_mutex_unlock(&auth_log_lock);
	fab_conn_down(c);
}

/* The peer proved the secret: messages may flow. The connector's proof is
 * queued now, and the requests held back go out right behind it. */
static void conn_authenticated(struct emu_conn *c)
{
	char name[64];

	/* the handshake checked it; messages flow only on this being true */
	if (c->outbound && memcmp(emu_hs_peer_gid(&c->hs), &c->peer_gid, sizeof(c->peer_gid))) {
		fab_conn_auth_failed(c, "authentication failed: the peer is not the one dialed");
		return;
	}
	c->state = CONN_UP;
	fab_pending_del(c);
	if (!c->outbound)
		c->peer_gid = *emu_hs_peer_gid(&c->hs);
	if (fab_buf_used(&c->hold)) {
		if (fab_out_copy(c, c->hold.data + c->hold.head, fab_buf_used(&c->hold))) {
			fab_conn_fail(c, "output buffer", ENOMEM);
			return;
		}
		c->hold.head = c->hold.tail;
	}
	fab_buf_free(&c->hold);
	emu_dbg("fabric: connection %s: authenticated", fab_conn_name(c, name, sizeof(name)));
	fab_conn_update_events(c);
}

/* Give up on handshakes past their deadline (fab_hs_expire: one pending). */
void fab_hs_expire_due(void)
{
	uint64_t now = emu_now_ns(), next = 0;

	if (now < fab.hs_next_ns)
		return;
	for (struct emu_conn *c = fab.conns; c; c = c->next) {
		if (c->state != CONN_CONNECTING && c->state != CONN_AUTH)
			continue;
		if (now < c->hs_deadline_ns) {
			if (!next || c->hs_deadline_ns < next)
				next = c->hs_deadline_ns;
		} else if (c->state == CONN_CONNECTING) {
			fab_conn_connect_failed(c, ETIMEDOUT);
		} else {
			fab_conn_auth_failed(c, "handshake timed out");
		}
	}
	fab.hs_next_ns = next;
}

/* A GID as the address it encodes, or in hex when it encodes none. */
static const char *gid_str(const union ibv_gid *gid, char *buf, size_t size)
{
	struct sockaddr_in a;
	size_t n = 0;

	if (!emu_gid_to_addr(gid, &a))
		return fab_addr_str(&a, buf, size);
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
void fab_conn_hs_step(struct emu_conn *c, const struct emu_wire_step *st)
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
		fab_conn_auth_failed(c, why);
		return;
	}
	if (st->out_len && fab_out_hs(c, st->out, st->out_len)) {
		fab_conn_fail(c, "output buffer", ENOMEM);
		return;
	}
	if (c->hs.state == EMU_HS_DONE)
		conn_authenticated(c);
	else
		fab_conn_update_events(c);
}
