/* SPDX-License-Identifier: MIT */
/*
 * A large message's data received straight at its target: a WRITE's or
 * SEND's into the responder's MR, a READ response's into the requester's
 * buffer, as a ConnectX's DMA writes each packet's data where it goes as
 * it arrives. Without this the data went through the connection's input
 * buffer and was copied from there once all of it came.
 *
 * Only a message its QP declined without its data (take_header) and whose
 * QP names one contiguous host destination (qp_ops.h's land_dest) lands
 * so; everything else (a bad key, a short buffer, GPU memory, several
 * scatter entries) takes the buffered path and its error semantics. The QP
 * is asked again before every recv(): a QP destroyed or moved on, an MR
 * deregistered (after which emu_mr_check fails in every later pass, and
 * ibv_dereg_mr waits for the pass in flight) or a WQE flushed meanwhile
 * stops the landing, the rest of the data is dropped as it arrives, and the
 * header is offered again at its end, so the request meets the checks it
 * would have met buffered (a NAK for a key gone). The last byte is received
 * aside and stored last with a release store (emu_mem_place's order), and
 * the message is dispatched, its CQE written, only after it.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "fabric_int.h"
#include "qp_ops.h"

/* The QP of this worker message m is for, when it may land (requests:
 * from the peer the QP is connected to; responses: on its connection). */
static struct emu_qp *land_qp(const struct emu_conn *c, const struct emu_msg *m)
{
	struct emu_worker *w = emu_worker_cur();
	int owner = emu_qpn_worker(m->dst_qpn);
	struct emu_qp *qp;

	if (owner && owner != w->index + 1)
		return NULL; /* forwarded requests are buffered whole */
	qp = emu_worker_qp(w, m->dst_qpn);
	if (!qp || !qp->ops->land_dest)
		return NULL;
	if (emu_wire_is_request(m->type))
		return qp->peer_id_ok && !memcmp(&c->peer_gid, &qp->peer_id, sizeof(qp->peer_id))
		           ? qp
		           : NULL;
	return qp->conn == c ? qp : NULL;
}

static uint8_t *land_dest(struct emu_conn *c, const struct emu_msg *m, bool start)
{
	struct emu_qp *qp = land_qp(c, m);

	return qp ? qp->ops->land_dest(qp, m, start) : NULL;
}

/* Message m, its header at the input's head and part of its data behind
 * it, was declined without its data: true when it lands from here on (the
 * header and the data here are taken from the input). */
bool fab_land_start(struct emu_conn *c, const struct emu_msg *m)
{
	size_t here = fab_buf_used(&c->in) - sizeof(*m);
	uint8_t *dst;

	if (here >= m->len) /* all here: not the case it is for */
		return false;
	dst = land_dest(c, m, true);
	if (!dst)
		return false;
	memcpy(dst, c->in.data + c->in.head + sizeof(*m), here);
	c->in.head += sizeof(*m) + here;
	c->landing = true;
	c->land = *m;
	c->land_got = (uint32_t)here;
	return true;
}

/* The target went away mid-way: drop the rest as it comes, then offer the
 * header again (conn_parse). */
static void land_lost(struct emu_conn *c)
{
	char name[64];

	c->landing = false;
	c->land_lost = true;
	c->skip = c->land.len - c->land_got;
	c->skipping = c->land;
	emu_dbg("fabric: connection %s: type %u psn %u for QP 0x%x: its target went away after "
	        "%u of %u bytes; the rest is dropped",
	        fab_conn_name(c, name, sizeof(name)), c->land.type, c->land.psn, c->land.dst_qpn,
	        c->land_got, c->land.len);
}

/* The recv() of a landing message's data into its target: a function of
 * its own so that ThreadSanitizer suppressions can name it. The peer that
 * wrote or read that memory before sending learns nothing in between but
 * through the socket, an ordering ThreadSanitizer does not see. */
ssize_t fab_land_recv(struct emu_conn *c, uint8_t *at, size_t room)
{
	return recv(c->fd, at, room, MSG_DONTWAIT);
}

/* Where the next recv() of the landing message's data goes and *room, its
 * size; NULL when the landing stopped (the data is skipped now). */
uint8_t *fab_land_at(struct emu_conn *c, size_t *room)
{
	uint32_t rest = c->land.len - c->land_got;
	uint8_t *dst = land_dest(c, &c->land, false);

	if (!dst) {
		land_lost(c);
		return NULL;
	}
	if (rest == 1) {
		*room = 1;
		return &c->land_last;
	}
	*room = rest - 1;
	return dst + c->land_got;
}

/* n more bytes landed; the last one dispatches the message. Returns work. */
int fab_land_got(struct emu_conn *c, size_t n)
{
	struct emu_msg m = c->land;
	uint8_t *dst;

	c->land_got += (uint32_t)n;
	if (c->land_got < m.len)
		return 0;
	c->landing = false;
	c->progress_at = 0;
	dst = land_dest(c, &m, false);
	if (!dst) {
		fab_take_header(c, &m); /* the checks it meets buffered */
		return 1;
	}
	__atomic_store_n(dst + m.len - 1, c->land_last, __ATOMIC_RELEASE);
	fab_dispatch(c, &m, dst);
	return 1;
}
