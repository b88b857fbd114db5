/* SPDX-License-Identifier: MIT */
/*
 * Engine workers (worker.h): their table, placement of QPs, locks, scratch
 * buffers and inboxes. engine.c runs their threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric.h"
#include "worker.h"

struct emu_inbox_item {
	struct emu_inbox_item *next;
	enum emu_inbox_kind kind;
	int reply_w;
	uint32_t reply_qpn;
	uint64_t conn_id;
	struct emu_device *dst_dev;
	struct emu_conn *conn; /* EMU_INBOX_ADOPT */
	union ibv_gid peer_gid;
	struct emu_msg m;
	size_t size;         /* of the whole item, for inbox_bytes */
	struct emu_mr *ref;  /* payload lies in ref's memory (held), or NULL: */
	const uint8_t *data; /* ... here, or in copy */
	uint8_t copy[];
};

static struct emu_worker workers[EMU_MAX_WORKERS];
static int nworkers;
static EMU_TLS struct emu_worker *self; /* a worker's own thread */
EMU_TLS struct emu_worker *emu_worker_tls;
/* qpn - EMU_QPN_BASE -> index + 1 of its worker, 0: none. Written under the
 * worker's lock (and nic.lock), read by anyone. */
static _Atomic uint8_t qp_owner[EMU_MAX_QP];
static _Atomic uint64_t forwarded; /* emu_workers_forwarded() */

static int worker_fds(struct emu_worker *w)
{
	w->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->kick_fd < 0)
		return -errno;
	w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epoll_fd < 0) {
		int ret = -errno;

		close(w->kick_fd);
		w->kick_fd = -1;
		return ret;
	}
	return 0;
}

int emu_workers_init(void)
{
	int n = emu_cfg.threads < 1 ? 1 : emu_cfg.threads;

	if (n > EMU_MAX_WORKERS)
		n = EMU_MAX_WORKERS;
	for (int i = 0; i < n; i++) {
		struct emu_worker *w = &workers[i];
		int ret;

		w->index = i;
		pthread_mutex_init(&w->lock, NULL);
		pthread_mutex_init(&w->inbox_lock, NULL);
		w->fab.kick_registered = -1;
		ret = worker_fds(w);
		if (ret) {
			while (i-- > 0) {
				close(workers[i].epoll_fd);
				close(workers[i].kick_fd);
			}
			return ret;
		}
	}
	nworkers = n;
	return 0;
}

int emu_workers_count(void)
{
	return nworkers;
}

struct emu_worker *emu_worker_at(int index)
{
	return index >= 0 && index < nworkers ? &workers[index] : NULL;
}

struct emu_worker *emu_worker_first(void)
{
	return &workers[0];
}

/* A worker's own thread marks itself current (engine.c). */
void emu_worker_enter(struct emu_worker *w)
{
	emu_worker_tls = self = w;
}

void emu_worker_lock(struct emu_worker *w)
{
	/* announce ourselves first: the worker yields between passes while
	 * anybody waits, so the control path cannot be starved */
	atomic_fetch_add(&w->lock_waiters, 1);
	pthread_mutex_lock(&w->lock);
	atomic_fetch_sub(&w->lock_waiters, 1);
	emu_worker_tls = w;
}

void emu_worker_unlock(struct emu_worker *w)
{
	emu_worker_tls = self;
	pthread_mutex_unlock(&w->lock);
}

void emu_workers_sync(void)
{
	for (int i = 0; i < nworkers; i++) {
		emu_worker_lock(&workers[i]);
		emu_worker_unlock(&workers[i]);
	}
}

/* ---- QPs ------------------------------------------------------------------ */

/* Deterministic: the same sequence of creations gives the same placement
 * (QPs made in turn go round the workers), which tests rely on. The QPs of
 * one SRQ share a worker: it is the SRQ's single consumer (peek and take of
 * its next WQE, the limit), as a NIC has one. Under nic.lock. */
void emu_worker_assign(struct emu_qp *qp)
{
	struct emu_worker *best = &workers[0];

	if (qp->ibqp.qp_type == IBV_QPT_RAW_PACKET) {
		best = &workers[0]; /* steering delivers under worker 0's lock (eth.h) */
	} else if (qp->srq && atomic_load(&qp->srq->worker)) {
		best = atomic_load(&qp->srq->worker);
	} else {
		for (int k = 1; k < nworkers; k++)
			if (atomic_load(&workers[k].nqps) < atomic_load(&best->nqps))
				best = &workers[k];
		if (qp->srq)
			atomic_store(&qp->srq->worker, best);
	}
	qp->worker = best;
	atomic_fetch_add(&best->nqps, 1);
}

/* The worker with the fewest placed QPs: `own` on ties, then the lowest index. */
static struct emu_worker *least_placed(struct emu_worker *own)
{
	struct emu_worker *best = own;

	for (int k = 0; k < nworkers; k++)
		if (workers[k].nrun < best->nrun)
			best = &workers[k];
	return best;
}

static struct emu_worker *rtr_target(const struct emu_qp *qp)
{
	struct emu_device *dev;
	struct emu_qp *peer = NULL;

	/* an SRQ's QPs stay with it; a RAW_PACKET QP stays on worker 0, whose
	 * lock steering delivers under (emu_worker_assign) */
	if (nworkers == 1 || qp->srq || qp->ibqp.qp_type == IBV_QPT_RAW_PACKET)
		return qp->worker;
	dev = emu_device_by_gid(&qp->dgid);
	if (dev && qp->dest_qpn != qp->ibqp.qp_num)
		peer = emu_qp_lookup(qp->dest_qpn);
	if (peer && peer->ctx && peer->ctx->dev == dev && (peer->placed || peer->srq))
		return peer->worker;
	return least_placed(qp->worker);
}

/* Move qp from its worker (locked by us) to `to` (locked on return). */
static void qp_move(struct emu_qp *qp, struct emu_worker *to)
{
	struct emu_worker *from = qp->worker;

	emu_worker_qp_del(qp);
	emu_worker_unlock(from);
	emu_worker_lock(to);
	qp->worker = to;
	atomic_fetch_add(&to->nqps, 1);
	if (!emu_worker_qp_add(qp))
		return;
	/* no memory for to's list: back where it was (its slot is free) */
	emu_warn("QP 0x%x: stays on engine worker %d: out of memory", qp->ibqp.qp_num, from->index);
	atomic_fetch_sub(&to->nqps, 1);
	emu_worker_unlock(to);
	emu_worker_lock(from);
	qp->worker = from;
	atomic_fetch_add(&from->nqps, 1);
	emu_worker_qp_add(qp);
}

void emu_worker_rtr(struct emu_qp *qp)
{
	struct emu_worker *to = rtr_target(qp);

	if (to != qp->worker) {
		emu_dbg("QP 0x%x: engine worker %d -> %d (peer QP 0x%x)", qp->ibqp.qp_num,
		        qp->worker->index, to->index, qp->dest_qpn);
		qp_move(qp, to);
	}
	if (!qp->placed) {
		qp->placed = true;
		qp->worker->nrun++;
	}
}

void emu_worker_unplace(struct emu_qp *qp)
{
	if (!qp->placed)
		return;
	qp->placed = false;
	qp->worker->nrun--;
}

EMU_EXPORT int gemu_qp_engine_worker(struct ibv_qp *ibqp)
{
	if (!ibqp || !gemu_is_emu_context(ibqp->context))
		return -1;
	return to_eqp(ibqp)->worker->index;
}

void emu_worker_unassign(struct emu_qp *qp)
{
	atomic_fetch_sub(&qp->worker->nqps, 1);
}

int emu_worker_qp_add(struct emu_qp *qp)
{
	struct emu_worker *w = qp->worker;

	if (w->nactive == w->active_cap) {
		uint32_t cap = w->active_cap ? w->active_cap * 2 : 64;
		struct emu_qp **a = realloc(w->active, cap * sizeof(*a));

		if (!a)
			return ENOMEM;
		w->active = a;
		w->active_cap = cap;
	}
	w->active[w->nactive++] = qp;
	atomic_store(&qp_owner[qp->ibqp.qp_num - EMU_QPN_BASE], (uint8_t)(w->index + 1));
	return 0;
}

void emu_worker_qp_del(struct emu_qp *qp)
{
	struct emu_worker *w = qp->worker;

	atomic_store(&qp_owner[qp->ibqp.qp_num - EMU_QPN_BASE], 0);
	for (uint32_t i = 0; i < w->nactive; i++) {
		if (w->active[i] != qp)
			continue;
		w->active[i] = w->active[--w->nactive];
		w->active[w->nactive] = NULL;
		break;
	}
	atomic_fetch_sub(&w->nqps, 1);
}

int emu_qpn_worker(uint32_t qpn)
{
	if (qpn < EMU_QPN_BASE || qpn - EMU_QPN_BASE >= EMU_MAX_QP)
		return 0;
	return atomic_load_explicit(&qp_owner[qpn - EMU_QPN_BASE], memory_order_acquire);
}

struct emu_qp *emu_worker_qp(const struct emu_worker *w, uint32_t qpn)
{
	if (emu_qpn_worker(qpn) != w->index + 1)
		return NULL;
	return emu_qp_lookup(qpn);
}

uint8_t *emu_scratch_get(struct emu_scratch *s, size_t n)
{
	if (n > s->cap) {
		uint8_t *nb = realloc(s->buf, n);

		if (!nb)
			return NULL;
		s->buf = nb;
		s->cap = n;
	}
	return s->buf;
}

/* ---- inbox ------------------------------------------------------------------ */

void emu_worker_kick(struct emu_worker *w)
{
	uint64_t one = 1;

	/* an RMW pairs with the worker's exchange before its re-check pass
	 * (engine.c): either we see it asleep, or it sees what we queued */
	if (atomic_fetch_add(&w->sleeping, 0) && write(w->kick_fd, &one, sizeof(one)) < 0 &&
	    errno != EAGAIN)
		emu_dbg("worker %d: kick failed: %s", w->index, strerror(errno));
}

/* Append the chain first..last (already counted in inbox_bytes) to w's
 * inbox and wake it. */
static void inbox_append_chain(struct emu_worker *w, struct emu_inbox_item *first,
                               struct emu_inbox_item *last)
{
	pthread_mutex_lock(&w->inbox_lock);
	if (w->in_tail)
		w->in_tail->next = first;
	else
		w->in_head = first;
	w->in_tail = last;
	atomic_store_explicit(&w->inbox_nonempty, true, memory_order_release);
	pthread_mutex_unlock(&w->inbox_lock);
	emu_worker_kick(w);
}

static void inbox_append(struct emu_worker *w, struct emu_inbox_item *it)
{
	atomic_fetch_add_explicit(&w->inbox_bytes, it->size, memory_order_relaxed);
	inbox_append_chain(w, it, it);
}

/* A worker's own thread keeps what it sends others until the end of its
 * pass (emu_outbox_flush); it counts against their high-water mark at once. */
static bool stage(struct emu_worker *w, struct emu_inbox_item *it)
{
	struct emu_outbox *o;

	if (!self || emu_worker_tls != self || self == w)
		return false;
	o = &self->outbox[w->index];
	if (o->tail)
		o->tail->next = it;
	else
		o->head = it;
	o->tail = it;
	self->outbox_mask |= 1ull << w->index;
	atomic_fetch_add_explicit(&w->inbox_bytes, it->size, memory_order_relaxed);
	return true;
}

void emu_outbox_flush(struct emu_worker *w)
{
	while (w->outbox_mask) {
		int i = __builtin_ctzll(w->outbox_mask);
		struct emu_outbox *o = &w->outbox[i];

		w->outbox_mask &= w->outbox_mask - 1;
		inbox_append_chain(&workers[i], o->head, o->tail);
		o->head = o->tail = NULL;
	}
	/* what this pass drained is answered now (emu_worker_heard_ns) */
	if (atomic_load_explicit(&w->draining, memory_order_relaxed)) {
		atomic_store(&w->drained_ns, w->drain_t0);
		atomic_store(&w->draining, false);
	}
}

int emu_inbox_push(struct emu_worker *w, enum emu_inbox_kind kind,
                   const struct emu_inbox_from *from, const struct emu_msg *m, const void *payload,
                   struct emu_mr *src, bool limit)
{
	uint32_t plen = emu_wire_payload_len(m);
	/* GPU memory cannot be copied here: it always goes by reference */
	bool by_ref = src && ((plen >= EMU_INBOX_REF_MIN && src->mem_type == EMU_MEM_HOST) ||
	                      src->mem_type == EMU_MEM_CUDA);
	size_t size = sizeof(struct emu_inbox_item) + (by_ref ? 0 : plen);
	struct emu_inbox_item *it;

	if (limit &&
	    atomic_load_explicit(&w->inbox_bytes, memory_order_relaxed) >= EMU_INBOX_HIGH_WATER)
		return -EAGAIN;
	it = malloc(size);
	if (!it)
		return -ENOMEM;
	it->next = NULL;
	it->kind = kind;
	it->reply_w = from ? from->reply_w : 0;
	it->reply_qpn = from ? from->reply_qpn : 0;
	it->conn_id = from ? from->conn_id : 0;
	it->dst_dev = from ? from->dst_dev : NULL;
	if (from && from->peer_gid)
		it->peer_gid = *from->peer_gid;
	else
		memset(&it->peer_gid, 0, sizeof(it->peer_gid));
	it->m = *m;
	it->size = size;
	it->ref = by_ref ? src : NULL;
	it->data = by_ref ? payload : it->copy;
	it->conn = NULL;
	if (by_ref)
		atomic_fetch_add(&src->inbox_refs, 1);
	else if (plen)
		memcpy(it->copy, payload, plen);
	if (kind == EMU_INBOX_REQUEST && from && from->conn_id)
		atomic_fetch_add_explicit(&forwarded, 1, memory_order_relaxed);
	if (!stage(w, it))
		inbox_append(w, it);
	return 0;
}

int emu_inbox_push_conn(struct emu_worker *w, struct emu_conn *c)
{
	struct emu_inbox_item *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->kind = EMU_INBOX_ADOPT;
	it->conn = c;
	it->size = sizeof(*it);
	inbox_append(w, it);
	return 0;
}

static void run_request(struct emu_worker *w, struct emu_inbox_item *it)
{
	struct emu_qp *qp = emu_worker_qp(w, it->m.dst_qpn);
	struct emu_reply_path path = {
	    .peer_gid = &it->peer_gid,
	    .fwd_w = it->reply_w,
	    .fwd_qpn = it->reply_qpn,
	    .fwd_conn = it->conn_id,
	    .payload_mr = it->ref,
	};

	/* gone, or (in-process) not on the device the requester named: lost */
	if (!qp || !qp->ctx || (it->dst_dev && qp->ctx->dev != it->dst_dev)) {
		emu_dbg("worker %d: request type %u psn %u for QP 0x%x dropped: no such QP",
		        w->index, it->m.type, it->m.psn, it->m.dst_qpn);
		return;
	}
	qp->ops->on_request(qp, &path, &it->m, it->data);
}

static void run_item(struct emu_worker *w, struct emu_inbox_item *it)
{
	struct emu_qp *qp;

	switch (it->kind) {
	case EMU_INBOX_REQUEST:
		run_request(w, it);
		break;
	case EMU_INBOX_RESPONSE:
		/* only a QP that still talks to an in-process peer takes it */
		qp = emu_worker_qp(w, it->m.dst_qpn);
		if (qp && !qp->conn)
			qp->ops->on_response(qp, &it->m, it->data);
		break;
	case EMU_INBOX_CONN:
		emu_fabric_conn_reply(it->conn_id, &it->m, it->data);
		break;
	case EMU_INBOX_ADOPT:
		emu_fabric_adopt(it->conn);
		break;
	}
}

void emu_inbox_discard(struct emu_worker *w)
{
	struct emu_inbox_item *it, *next;

	pthread_mutex_lock(&w->inbox_lock);
	it = w->in_head;
	w->in_head = w->in_tail = NULL;
	atomic_store(&w->inbox_nonempty, false);
	pthread_mutex_unlock(&w->inbox_lock);
	for (; it; it = next) {
		next = it->next;
		atomic_fetch_sub(&w->inbox_bytes, it->size);
		if (it->ref)
			atomic_fetch_sub(&it->ref->inbox_refs, 1);
		if (it->kind == EMU_INBOX_ADOPT)
			emu_fabric_orphan(it->conn);
		free(it);
	}
}

int emu_inbox_drain(struct emu_worker *w)
{
	struct emu_inbox_item *it, *next;
	size_t bytes = 0;
	int n = 0;

	uint64_t t0;

	if (!atomic_load_explicit(&w->inbox_nonempty, memory_order_acquire))
		return 0;
	t0 = emu_now_ns();
	atomic_store(&w->draining, true); /* before the list leaves the inbox */
	pthread_mutex_lock(&w->inbox_lock);
	it = w->in_head;
	w->in_head = w->in_tail = NULL;
	atomic_store_explicit(&w->inbox_nonempty, false, memory_order_relaxed);
	pthread_mutex_unlock(&w->inbox_lock);
	for (; it; it = next) {
		next = it->next;
		run_item(w, it);
		bytes += it->size;
		if (it->ref)
			atomic_fetch_sub(&it->ref->inbox_refs, 1);
		free(it);
		n++;
	}
	/* below the mark again: in-process senders got -EAGAIN, and worker 0
	 * may hold a connection's requests for us (fabric_conn.c) */
	if (atomic_fetch_sub_explicit(&w->inbox_bytes, bytes, memory_order_relaxed) >=
	    EMU_INBOX_HIGH_WATER)
		for (int i = 0; i < nworkers; i++)
			if (&workers[i] != w)
				emu_worker_kick(&workers[i]);
	/* done once the answers left with the outbox, at the end of the pass */
	w->drain_t0 = t0;
	return n;
}

uint64_t emu_worker_heard_ns(struct emu_worker *w, uint64_t now)
{
	uint64_t t;

	if (!atomic_load(&w->inbox_nonempty) && !atomic_load(&w->draining))
		return now;
	t = atomic_load(&w->drained_ns);
	return t < now ? t : now;
}

uint64_t emu_workers_forwarded(void)
{
	return atomic_load_explicit(&forwarded, memory_order_relaxed);
}

EMU_EXPORT uint64_t gemu_engine_forwarded(void)
{
	return emu_workers_forwarded();
}
