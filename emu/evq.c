/* SPDX-License-Identifier: MIT */
/* Event queues for async events and completion channels; see evq.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "emu.h"
#include "evq.h"

struct emu_ev {
	struct emu_ev *next;
	const void *owner; /* NULL: a device or port event */
	uint32_t *reads;   /* the owner's count of events handed out */
	struct ibv_async_event ev;
};

/* The eventfd's count is the number of listed events: both change under
 * q->lock only, so a count is there to take whenever an event is. */
static void count_add(struct emu_evq *q)
{
	uint64_t one = 1;

	if (write(q->fd, &one, sizeof(one)) != sizeof(one)) /* never: 2^64 - 2 */
		emu_warn("event queue: eventfd write failed");
}

static void count_take(struct emu_evq *q)
{
	uint64_t one;

	if (read(q->fd, &one, sizeof(one)) != sizeof(one)) /* never: the count is >= 1 */
		emu_warn("event queue: eventfd read failed");
}

int emu_evq_init(struct emu_evq *q)
{
	q->head = NULL;
	q->tail = &q->head;
	q->fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (q->fd < 0)
		return errno;
	pthread_mutex_init(&q->lock, NULL);
	return 0;
}

void emu_evq_fini(struct emu_evq *q)
{
	while (q->head) {
		struct emu_ev *e = q->head;

		q->head = e->next;
		free(e);
	}
	close(q->fd);
	pthread_mutex_destroy(&q->lock);
}

bool emu_evq_push(struct emu_evq *q, const void *owner, uint32_t *reads,
                  const struct ibv_async_event *ev)
{
	struct emu_ev *e = calloc(1, sizeof(*e));

	if (!e) {
		emu_warn("event %d lost: out of memory", (int)ev->event_type);
		return false;
	}
	e->owner = owner;
	e->reads = reads;
	e->ev = *ev;
	pthread_mutex_lock(&q->lock);
	*q->tail = e;
	q->tail = &e->next;
	count_add(q);
	pthread_mutex_unlock(&q->lock);
	return true;
}

static void unlink_next(struct emu_evq *q, struct emu_ev **link)
{
	struct emu_ev *e = *link;

	*link = e->next;
	if (q->tail == &e->next)
		q->tail = link;
	count_take(q);
	free(e);
}

static bool take_head(struct emu_evq *q, struct ibv_async_event *ev)
{
	bool got = false;

	pthread_mutex_lock(&q->lock);
	if (q->head) {
		*ev = q->head->ev;
		if (q->head->reads)
			(*q->head->reads)++;
		unlink_next(q, &q->head);
		got = true;
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}

/* Wait for a count as read() would: not at all when the application made
 * the fd non-blocking. */
static int wait_count(struct emu_evq *q)
{
	struct pollfd p = {.fd = q->fd, .events = POLLIN};
	int fl = fcntl(q->fd, F_GETFL);

	if (fl < 0)
		return -1;
	if (fl & O_NONBLOCK) {
		errno = EAGAIN;
		return -1;
	}
	return poll(&p, 1, -1) < 0 ? -1 : 0;
}

int emu_evq_pop(struct emu_evq *q, struct ibv_async_event *ev)
{
	while (!take_head(q, ev))
		if (wait_count(q))
			return -1;
	return 0;
}

uint32_t emu_evq_drop(struct emu_evq *q, const void *owner, const uint32_t *reads)
{
	struct emu_ev **link = &q->head;
	uint32_t n;

	pthread_mutex_lock(&q->lock);
	while (*link)
		if ((*link)->owner == owner)
			unlink_next(q, link);
		else
			link = &(*link)->next;
	n = *reads;
	pthread_mutex_unlock(&q->lock);
	return n;
}
