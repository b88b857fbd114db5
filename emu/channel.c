/* SPDX-License-Identifier: MIT */
/*
 * Completion channels and asynchronous events.
 *
 * Both are pipes of fixed-size records, so the fd the user polls is a real
 * fd: a completion event is one struct emu_cq pointer, an async event one
 * struct ibv_async_event. Records are far below PIPE_BUF, so each write and
 * read moves a whole record. The write ends never block: the engine must not
 * stall on an application that stopped reading.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"

static struct emu_channel *to_echannel(struct ibv_comp_channel *ch)
{
	return container_of(ch, struct emu_channel, ibch);
}

EMU_EXPORT struct ibv_comp_channel *gemu_create_comp_channel(struct ibv_context *context)
{
	struct emu_channel *ch;
	int fds[2];

	if (!gemu_is_emu_context(context)) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		free(ch);
		return NULL; /* errno from pipe2 */
	}
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK)) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		free(ch);
		errno = err;
		return NULL;
	}
	ch->ibch.context = context;
	ch->ibch.fd = fds[0];
	ch->ibch.refcnt = 0;
	ch->wfd = fds[1];
	return &ch->ibch;
}

/* cq.c counts the channel's CQs in refcnt under context->mutex. */
EMU_EXPORT int gemu_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct emu_channel *ch;
	int busy;

	if (!channel || !gemu_is_emu_context(channel->context))
		return EINVAL;
	ch = to_echannel(channel);
	pthread_mutex_lock(&channel->context->mutex);
	busy = channel->refcnt;
	pthread_mutex_unlock(&channel->context->mutex);
	if (busy)
		return EBUSY;
	close(ch->ibch.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}

void emu_channel_notify(struct emu_cq *cq)
{
	struct ibv_comp_channel *channel = cq->ibcq.channel;
	ssize_t n;

	if (!channel)
		return;
	n = write(to_echannel(channel)->wfd, &cq, sizeof(cq));
	if (n != (ssize_t)sizeof(cq))
		emu_warn("CQ 0x%x: completion event lost (%s): the application is not reading "
		         "its completion channel",
		         cq->cqn, n < 0 ? strerror(errno) : "short write");
}

/* Blocks unless the user made channel->fd non-blocking: then -1/EAGAIN. */
EMU_EXPORT int gemu_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                                 void **cq_context)
{
	struct emu_cq *ecq;
	ssize_t n;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	n = read(channel->fd, &ecq, sizeof(ecq));
	if (n != (ssize_t)sizeof(ecq)) {
		if (n >= 0)
			errno = EIO; /* cannot happen: whole records only */
		return -1;
	}
	/* destroy_cq waits until every event handed out here is acked */
	pthread_mutex_lock(&ecq->ibcq.mutex);
	ecq->comp_events_reported++;
	pthread_mutex_unlock(&ecq->ibcq.mutex);
	*cq = &ecq->ibcq;
	*cq_context = ecq->ibcq.cq_context;
	return 0;
}

EMU_EXPORT void gemu_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq || !nevents)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

void emu_async_event(struct emu_context *ctx, const struct ibv_async_event *ev)
{
	ssize_t n = write(ctx->async_pipe[1], ev, sizeof(*ev));

	if (n != (ssize_t)sizeof(*ev))
		emu_warn("async event %d lost (%s): the application is not reading async_fd",
		         (int)ev->event_type, n < 0 ? strerror(errno) : "short write");
}

EMU_EXPORT int gemu_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	ssize_t n;

	if (!gemu_is_emu_context(context) || !event) {
		errno = EINVAL;
		return -1;
	}
	n = read(context->async_fd, event, sizeof(*event));
	if (n != (ssize_t)sizeof(*event)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

static void events_done(pthread_mutex_t *mutex, pthread_cond_t *cond, uint32_t *count)
{
	pthread_mutex_lock(mutex);
	(*count)++;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(mutex);
}

/* Destroying a QP/CQ/SRQ/WQ waits for its async events to be acked. */
EMU_EXPORT void gemu_ack_async_event(struct ibv_async_event *event)
{
	if (!event)
		return;
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		events_done(&event->element.cq->mutex, &event->element.cq->cond,
		            &event->element.cq->async_events_completed);
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		events_done(&event->element.qp->mutex, &event->element.qp->cond,
		            &event->element.qp->events_completed);
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		events_done(&event->element.srq->mutex, &event->element.srq->cond,
		            &event->element.srq->events_completed);
		break;
	case IBV_EVENT_WQ_FATAL:
		events_done(&event->element.wq->mutex, &event->element.wq->cond,
		            &event->element.wq->events_completed);
		break;
	default:
		break; /* device and port events have no object to release */
	}
}
