/* SPDX-License-Identifier: MIT */
/*
 * An event queue: what a uverbs event file is to the kernel. A context's
 * async events and a completion channel's events each wait in one.
 *
 * Events wait in a list and an eventfd counts them, so the fd the
 * application polls is readable exactly when an event waits, the engine
 * never blocks on a reader, and nothing bounds the queue but memory. Each event names an
 * object (a CQ, QP, SRQ or WQ; none for device and port events). When the
 * object is destroyed its unread events are dropped (emu_evq_drop), as the
 * kernel drops them from the event file, and the count of its events
 * already read tells destroy how many acknowledgements to wait for, as
 * libibverbs does with the kernel's events_reported.
 */
#ifndef GNIC_EMU_EVQ_H
#define GNIC_EMU_EVQ_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct emu_ev;

struct emu_evq {
	pthread_mutex_t lock; /* the list and every owner's read count */
	struct emu_ev *head;
	struct emu_ev **tail;
	int fd; /* eventfd (semaphore): its count is the number of listed events */
};

/* 0 or an errno; *fd is the descriptor the application gets. */
int emu_evq_init(struct emu_evq *q);
void emu_evq_fini(struct emu_evq *q); /* frees what was never read */

/* Queue ev, naming owner; *reads counts the owner's events handed out.
 * False (and a warning) only when memory ran out. */
bool emu_evq_push(struct emu_evq *q, const void *owner, uint32_t *reads,
                  const struct ibv_async_event *ev);

/* The oldest event: 0, or -1 with errno (EAGAIN when there is none and the
 * application made the fd non-blocking; else it blocks, as read() would). */
int emu_evq_pop(struct emu_evq *q, struct ibv_async_event *ev);

/* Drops owner's unread events; returns how many of its events were read. */
uint32_t emu_evq_drop(struct emu_evq *q, const void *owner, const uint32_t *reads);

#endif
