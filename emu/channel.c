/*
 * Completion channels and asynchronous events, each an event queue (evq.h):
 * the fd the user polls is a real one (an eventfd), the engine never blocks
 * on a reader, and a destroyed object's unread events are dropped, as the
 * kernel drops them from its event files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "rwq.h"

static struct emu_channel *to_echannel(struct ibv_comp_channel *ch)
{
	return container_of(ch, struct emu_channel, ibch);
}

EMU_EXPORT struct ibv_comp_channel *gemu_create_comp_channel(struct ibv_context *context)
{
	struct emu_channel *ch;
	int err;

	if (!gemu_is_emu_context(context)) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	err = emu_evq_init(&ch->q);
	if (err) {
		free(ch);
		errno = err;
		return NULL;
	}
	ch->ibch.context = context;
	ch->ibch.fd = ch->q.fd;
	ch->ibch.refcnt = 0;
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
	emu_evq_fini(&ch->q);
	free(ch);
	return 0;
}

void emu_channel_notify(struct emu_cq *cq)
{
	struct ibv_comp_channel *channel = cq->ibcq.channel;
	struct ibv_async_event ev = {.element.cq = &cq->ibcq};

	if (channel)
		emu_evq_push(&to_echannel(channel)->q, cq, &cq->comp_events_reported, &ev);
}

/* Blocks unless the user made channel->fd non-blocking: then -1/EAGAIN. */
EMU_EXPORT int gemu_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                                 void **cq_context)
{
	struct ibv_async_event ev;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	if (emu_evq_pop(&to_echannel(channel)->q, &ev))
		return -1;
	*cq = ev.element.cq;
	*cq_context = ev.element.cq->cq_context;
	return 0;
}

/* The number of cq's completion events handed out; none unread stays. */
uint32_t emu_channel_drop(struct emu_cq *cq)
{
	struct ibv_comp_channel *channel = cq->ibcq.channel;

	if (!channel)
		return 0;
	return emu_evq_drop(&to_echannel(channel)->q, cq, &cq->comp_events_reported);
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

/* What an async event names: nothing (device and port events) or an object. */
enum ev_object { EV_NONE, EV_CQ, EV_QP, EV_SRQ, EV_WQ };

static enum ev_object event_object(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return EV_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return EV_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return EV_SRQ;
	case IBV_EVENT_WQ_FATAL:
		return EV_WQ;
	default:
		return EV_NONE;
	}
}

/* The object an async event names and its count of events handed out. */
static void *event_owner(const struct ibv_async_event *ev, uint32_t **reads)
{
	switch (event_object(ev->event_type)) {
	case EV_CQ:
		*reads = &to_ecq(ev->element.cq)->async_events_reported;
		return to_ecq(ev->element.cq);
	case EV_QP:
		*reads = &to_eqp(ev->element.qp)->events_reported;
		return to_eqp(ev->element.qp);
	case EV_SRQ:
		*reads = &to_esrq(ev->element.srq)->events_reported;
		return to_esrq(ev->element.srq);
	case EV_WQ:
		*reads = &to_erwq(ev->element.wq)->events_reported;
		return to_erwq(ev->element.wq);
	default:
		*reads = NULL;
		return NULL;
	}
}

/* The kernel hands a DEVX object's events to DEVX event channels that
 * subscribed to them (not emulated), never to the context's async fd. */
static bool devx_object(const struct ibv_async_event *ev)
{
	switch (event_object(ev->event_type)) {
	case EV_CQ:
		return to_ecq(ev->element.cq)->devx;
	case EV_QP:
		return to_eqp(ev->element.qp)->devx;
	default:
		return false;
	}
}

void emu_async_event(struct emu_context *ctx, const struct ibv_async_event *ev)
{
	uint32_t *reads;
	void *owner = event_owner(ev, &reads);

	if (devx_object(ev))
		emu_dbg("async event %d of a DEVX object not raised (no DEVX event channels)",
		        (int)ev->event_type);
	else
		emu_evq_push(&ctx->async_q, owner, reads, ev);
}

/* The number of owner's async events handed out; none unread stays. */
uint32_t emu_async_drop(struct emu_context *ctx, const void *owner, const uint32_t *reads)
{
	return emu_evq_drop(&ctx->async_q, owner, reads);
}

EMU_EXPORT int gemu_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	if (!gemu_is_emu_context(context) || !event) {
		errno = EINVAL;
		return -1;
	}
	return emu_evq_pop(&to_ectx(context)->async_q, event);
}

/* Destroying an object waits until its events handed out are acked:
 * libibverbs' contract (unbounded, as there). */
void emu_events_wait(pthread_mutex_t *mutex, pthread_cond_t *cond, const uint32_t *completed,
                     uint32_t reported)
{
	pthread_mutex_lock(mutex);
	while (*completed != reported)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
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
	switch (event_object(event->event_type)) {
	case EV_CQ:
		events_done(&event->element.cq->mutex, &event->element.cq->cond,
		            &event->element.cq->async_events_completed);
		break;
	case EV_QP:
		events_done(&event->element.qp->mutex, &event->element.qp->cond,
		            &event->element.qp->events_completed);
		break;
	case EV_SRQ:
		events_done(&event->element.srq->mutex, &event->element.srq->cond,
		            &event->element.srq->events_completed);
		break;
	case EV_WQ:
		events_done(&event->element.wq->mutex, &event->element.wq->cond,
		            &event->element.wq->events_completed);
		break;
	default:
		break; /* device and port events have no object to release */
	}
}
