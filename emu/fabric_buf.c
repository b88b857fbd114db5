/* SPDX-License-Identifier: MIT */
/*
 * The fabric's byte buffers: bytes [head, tail) of one allocation, which
 * slides them to the front before it grows and is released when a large
 * message left it big and empty. A connection's steady traffic costs no
 * malloc.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"

void fab_buf_free(struct fab_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* Make room for n more bytes at the tail: slide the queued bytes to the front
 * first, grow only if that is not enough. */
int fab_buf_reserve(struct fab_buf *b, size_t n, size_t min_cap)
{
	size_t used = fab_buf_used(b), cap;
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
int fab_buf_append(struct fab_buf *b, const void *p, size_t n, size_t min_cap)
{
	if (fab_buf_reserve(b, n, min_cap))
		return -ENOMEM;
	memcpy(b->data + b->tail, p, n);
	b->tail += n;
	return 0;
}

/* An empty buffer rewinds; a big one (after a large message) is released. */
void fab_buf_settle(struct fab_buf *b)
{
	if (b->head != b->tail)
		return;
	b->head = b->tail = 0;
	if (b->cap > FAB_KEEP_MAX)
		fab_buf_free(b);
}

/* Append header + payload to b, skipping the first skip bytes already
 * written. */
int fab_msg_append(struct fab_buf *b, const struct emu_msg *m, const void *payload, uint32_t plen,
                   size_t skip)
{
	size_t hlen = sizeof(*m), n = hlen + plen - skip;
	uint8_t *p;

	if (fab_buf_reserve(b, n, FAB_OUT_MIN))
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
