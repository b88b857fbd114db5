/* SPDX-License-Identifier: MIT */
/*
 * A connection's output queue: what is posted but not yet taken by the
 * socket, in order, as pieces. Headers, handshake frames and small payloads
 * are copied into the connection's out buffer; a large payload in a host
 * MR is not copied at all: its piece points into the MR, and the socket
 * reads it from there, as a ConnectX's DMA reads a message's data while it
 * transmits it. Each such piece counts in its MR's wire_refs; an MR being
 * deregistered first has its pieces copied (fab_out_detach_mr), so no
 * piece outlives the memory it points into.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "fabric_int.h"

/* Payloads from this size on are sent from their MR, not copied. */
#define FAB_OUT_REF_MIN ((size_t)16 * 1024)

static struct fab_piece *piece_at(struct fab_outq *q, size_t i)
{
	return &q->v[(q->first + i) % q->cap];
}

static int piece_room(struct fab_outq *q)
{
	struct fab_piece *v;
	size_t cap;

	if (q->n < q->cap)
		return 0;
	cap = q->cap ? q->cap * 2 : 16;
	v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < q->n; i++)
		v[i] = *piece_at(q, i);
	free(q->v);
	q->v = v;
	q->cap = cap;
	q->first = 0;
	return 0;
}

/* Copy n bytes to the tail: into the buffer, as part of the last piece when
 * that one is in the buffer too. */
int fab_out_copy(struct emu_conn *c, const void *p, size_t n)
{
	struct fab_outq *q = &c->outq;
	bool fresh = !q->n || piece_at(q, q->n - 1)->ext; /* the last piece is not the buffer's */
	struct fab_piece *last;

	if (!n)
		return 0;
	if (fresh && piece_room(q)) /* may move the ring: no piece pointer kept across it */
		return -ENOMEM;
	if (fab_buf_append(&c->out, p, n, FAB_OUT_MIN))
		return -ENOMEM;
	if (fresh)
		*piece_at(q, q->n++) = (struct fab_piece){0};
	last = piece_at(q, q->n - 1);
	last->len += n;
	q->bytes += n;
	return 0;
}

/* n bytes of MR mr from p, read when the socket takes them. */
static int out_ref(struct emu_conn *c, const uint8_t *p, size_t n, struct emu_mr *mr)
{
	struct fab_outq *q = &c->outq;

	if (piece_room(q))
		return -ENOMEM;
	*piece_at(q, q->n++) = (struct fab_piece){.ext = p, .len = n, .mr = mr};
	atomic_fetch_add(&mr->wire_refs, 1);
	q->bytes += n;
	return 0;
}

int fab_out_msg(struct emu_conn *c, const struct emu_msg *m, const void *payload, uint32_t plen,
                size_t skip, struct emu_mr *src)
{
	size_t hlen = sizeof(*m), before = c->outq.bytes;
	int ret = 0;

	if (skip < hlen) {
		ret = fab_out_copy(c, (const uint8_t *)m + skip, hlen - skip);
		skip = 0;
	} else {
		skip -= hlen;
	}
	if (!ret && plen > skip) {
		const uint8_t *p = (const uint8_t *)payload + skip;
		size_t n = plen - skip;

		if (src && src->mem_type == EMU_MEM_HOST && n >= FAB_OUT_REF_MIN)
			ret = out_ref(c, p, n, src);
		else
			ret = fab_out_copy(c, p, n);
	}
	if (ret) /* nothing of it stays queued: a half message would break the stream */
		fab_out_trim(c, before);
	return ret;
}

static void piece_release(struct fab_piece *pc)
{
	if (pc->mr)
		atomic_fetch_sub(&pc->mr->wire_refs, 1);
	free(pc->own);
	*pc = (struct fab_piece){0};
}

/* Drop what was queued after the first `keep` bytes (a message that did not
 * fit whole). Only the newest pieces go. */
void fab_out_trim(struct emu_conn *c, size_t keep)
{
	struct fab_outq *q = &c->outq;

	while (q->bytes > keep && q->n) {
		struct fab_piece *pc = piece_at(q, q->n - 1);
		size_t cut = q->bytes - keep < pc->len ? q->bytes - keep : pc->len;

		if (!pc->ext)
			c->out.tail -= cut;
		pc->len -= cut;
		q->bytes -= cut;
		if (!pc->len) {
			piece_release(pc);
			q->n--;
		}
	}
}

/* At most max iovecs of the queue's head. Returns how many. */
int fab_out_iov(struct emu_conn *c, struct iovec *iov, int max)
{
	struct fab_outq *q = &c->outq;
	size_t off = c->out.head;
	int k = 0;

	for (size_t i = 0; i < q->n && k < max; i++) {
		struct fab_piece *pc = piece_at(q, i);

		if (pc->ext) {
			iov[k++] = (struct iovec){(void *)pc->ext, pc->len};
		} else {
			iov[k++] = (struct iovec){c->out.data + off, pc->len};
			off += pc->len;
		}
	}
	return k;
}

/* The socket took n bytes from the head. */
void fab_out_consume(struct emu_conn *c, size_t n)
{
	struct fab_outq *q = &c->outq;

	while (n && q->n) {
		struct fab_piece *pc = piece_at(q, 0);
		size_t k = n < pc->len ? n : pc->len;

		if (pc->ext)
			pc->ext += k;
		else
			c->out.head += k;
		pc->len -= k;
		q->bytes -= k;
		n -= k;
		if (!pc->len) {
			piece_release(pc);
			q->first = (q->first + 1) % q->cap;
			q->n--;
		}
	}
	if (!q->n)
		q->first = 0;
	fab_buf_settle(&c->out);
}

/* Everything queued is lost (the connection went down). */
void fab_out_clear(struct emu_conn *c)
{
	struct fab_outq *q = &c->outq;

	for (size_t i = 0; i < q->n; i++)
		piece_release(piece_at(q, i));
	q->n = q->first = q->bytes = 0;
	c->out.head = c->out.tail = 0;
}

void fab_out_free(struct emu_conn *c)
{
	fab_out_clear(c);
	free(c->outq.v);
	c->outq.v = NULL;
	c->outq.cap = 0;
	fab_buf_free(&c->out);
}

/* Copy the pieces that point into mr (any MR: NULL) into memory of their
 * own. 0, or -ENOMEM (then the connection is failed: nothing may read mr
 * after this). */
int fab_out_detach_mr(struct emu_conn *c, const struct emu_mr *mr)
{
	struct fab_outq *q = &c->outq;

	for (size_t i = 0; i < q->n; i++) {
		struct fab_piece *pc = piece_at(q, i);
		void *own;

		if (!pc->mr || (mr && pc->mr != mr))
			continue;
		own = malloc(pc->len);
		if (!own) {
			fab_conn_fail(c, "output buffer", ENOMEM);
			return -ENOMEM;
		}
		memcpy(own, pc->ext, pc->len);
		atomic_fetch_sub(&pc->mr->wire_refs, 1);
		pc->mr = NULL;
		pc->own = own;
		pc->ext = own;
	}
	return 0;
}
