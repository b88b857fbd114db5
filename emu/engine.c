/* SPDX-License-Identifier: MIT */
/*
 * The engine: the emulated NIC's processors, GNIC_EMU_THREADS worker threads
 * per process (worker.h), each running the loop below over its own QPs,
 * inbox and sockets.
 *
 * Hardware notices doorbells by bus writes; we cannot trap a GPU's store into
 * host memory, so a worker polls each of its QPs' doorbell record and
 * register. To keep CI's two cores usable it polls only for emu_cfg.spin_us
 * after the last work (busy while its core is free, by short epoll waits
 * while other threads want the core: engine_idle()), then sleeps with a
 * doubling timeout (up to emu_cfg.sleep_us) on the fabric's epoll set, which
 * also holds an eventfd that software doorbells (post_send/post_recv) write
 * to wake it at once.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dma.h"
#include "emu.h"
#include "fabric.h"
#include "worker.h"

static pthread_mutex_t engine_ctl = PTHREAD_MUTEX_INITIALIZER;
static int engine_users;

/* One sweep over the worker's inbox, sockets and QPs. Runs with w->lock
 * held. Input comes first: answers that arrived while the worker did not run
 * must be seen before any retransmission timer is judged. The tests before
 * the DMA, inbox and outbox calls are the callees' own first ones, made here
 * since most passes find nothing: w->dma exists once a GPU copy was queued,
 * inbox_nonempty is set by pushes, the outbox by this pass. */
static int engine_pass(struct emu_worker *w)
{
	int work = w->dma ? emu_dma_poll(w) : 0; /* GPU copies done: their ACKs, CQEs, responses */
	uint64_t now;

	if (atomic_load_explicit(&w->inbox_nonempty, memory_order_acquire))
		work += emu_inbox_drain(w);
	work += emu_fabric_poll();
	now = emu_now_ns();
	for (uint32_t i = 0; i < w->nactive; i++) {
		struct emu_qp *qp = w->active[i];

		work += qp->ops->progress(qp, now);
	}
	if (w->dma)
		emu_dma_submit(w); /* the pass's GPU copies, issued together */
	if (w->outbox_mask || atomic_load_explicit(&w->draining, memory_order_relaxed))
		emu_outbox_flush(w);
	if (emu_fabric_flush() > 0)
		work++;
	w->passes++;
	return work;
}

/* One pass under the lock. *pending: fabric output still queued (read under
 * the lock too: a control-path call may free connections between passes). */
static int locked_pass(struct emu_worker *w, bool *pending)
{
	int work;

	pthread_mutex_lock(&w->lock);
	work = engine_pass(w);
	if (pending) /* GPU copies in flight are polled for like queued output */
		*pending = emu_fabric_pending() || emu_dma_busy(w);
	pthread_mutex_unlock(&w->lock);
	/* the control path is waiting for the lock: let it in */
	if (atomic_load_explicit(&w->lock_waiters, memory_order_relaxed))
		sched_yield();
	return work;
}

/* Sleep unless a doorbell rang or the inbox got something between our last
 * pass and now. Pairs with the read-modify-write in emu_worker_kick() (RMWs
 * rather than fences: TSan does not model fences): either the poster sees
 * sleeping == 1 and kicks, or our re-check pass sees its doorbell. */
static void idle_sleep(struct emu_worker *w, uint64_t timeout_ns)
{
	atomic_exchange(&w->sleeping, 1); /* a full barrier */
	if (!locked_pass(w, NULL))
		emu_fabric_wait(timeout_ns);
	atomic_store(&w->sleeping, 0);
}

/* What the engine does after a pass that found no work. For emu_cfg.spin_us
 * after its last work it keeps polling, since a GPU's doorbell is a plain
 * store that cannot wake it: by sched_yield() while its core is free, and by
 * epoll waits of emu_cfg.poll_us once a yield gave the core away (the yield
 * took longer than EMU_YIELD_LOST_NS: another thread was runnable here).
 * On a core shared with busy-polling threads, each such yield would hand
 * the core away for a whole scheduler slice while the thread we wait for
 * may be the one that needs us; a thread waking from epoll is run at once,
 * and software doorbells and sockets wake it. The spin is tried again after
 * 10 ms, or twice the last span when the core stays taken. Past the window
 * it sleeps with a doubling timeout up to emu_cfg.sleep_us. */
struct engine_idle {
	uint64_t last_work, sleep_ns;
	uint64_t shared_until; /* poll by epoll, not by yield, until then */
	uint64_t backoff_ns;   /* the last such span */
};

#define EMU_MIN_SLEEP_NS   10000ull      /* first idle sleep */
#define EMU_YIELD_LOST_NS  50000ull      /* a yield this long ran another thread */
#define EMU_MIN_BACKOFF_NS 10000000ull   /* 10 ms */
#define EMU_MAX_BACKOFF_NS 1000000000ull /* 1 s */

/* Yield; when the yield gave the core away, poll by epoll for a while: for
 * twice as long as last time if that was recent, else for the least. */
static void spin_yield(struct engine_idle *s, uint64_t now)
{
	uint64_t after;

	sched_yield();
	after = emu_now_ns();
	if (after - now < EMU_YIELD_LOST_NS)
		return;
	if (after - s->shared_until > 2 * s->backoff_ns)
		s->backoff_ns = EMU_MIN_BACKOFF_NS;
	else
		s->backoff_ns =
		    s->backoff_ns * 2 < EMU_MAX_BACKOFF_NS ? s->backoff_ns * 2 : EMU_MAX_BACKOFF_NS;
	s->shared_until = after + s->backoff_ns;
	emu_dbg("engine: a yield lost the core for %llu us: polling by epoll for %llu ms",
	        (unsigned long long)((after - now) / 1000),
	        (unsigned long long)(s->backoff_ns / 1000000));
}

static void engine_idle(struct emu_worker *w, struct engine_idle *s, bool pending)
{
	uint64_t now = emu_now_ns(), max_sleep = (uint64_t)emu_cfg.sleep_us * 1000;

	if (now - s->last_work < (uint64_t)emu_cfg.spin_us * 1000 || pending) {
		if (now < s->shared_until)
			idle_sleep(w, (uint64_t)emu_cfg.poll_us * 1000);
		else
			spin_yield(s, now);
		return;
	}
	idle_sleep(w, s->sleep_ns);
	s->sleep_ns = s->sleep_ns * 2 < max_sleep ? s->sleep_ns * 2 : max_sleep;
	if (s->sleep_ns < EMU_MIN_SLEEP_NS)
		s->sleep_ns = EMU_MIN_SLEEP_NS;
}

static void *engine_main(void *arg)
{
	struct emu_worker *w = arg;
	struct engine_idle s = {.last_work = emu_now_ns(),
	                        .sleep_ns = EMU_MIN_SLEEP_NS,
	                        .backoff_ns = EMU_MIN_BACKOFF_NS};

	emu_worker_enter(w);
	while (!atomic_load(&w->stop)) {
		bool pending = false;

		if (locked_pass(w, &pending)) {
			s.last_work = emu_now_ns();
			s.sleep_ns = EMU_MIN_SLEEP_NS;
			continue;
		}
		engine_idle(w, &s, pending);
	}
	return NULL;
}

static void workers_stop(int n)
{
	for (int i = 0; i < n; i++) {
		struct emu_worker *w = emu_worker_at(i);

		if (!w->running)
			continue;
		atomic_store(&w->stop, true);
		atomic_store(&w->sleeping, 1); /* kick it whether it sleeps or not */
		emu_worker_kick(w);
		pthread_join(w->thread, NULL);
		w->running = false;
		atomic_store(&w->sleeping, 0);
		emu_inbox_discard(w);
		emu_dma_discard(w);
	}
}

int emu_engine_start(void)
{
	int ret = 0;

	pthread_mutex_lock(&engine_ctl);
	if (engine_users++ == 0) {
		for (int i = 0; i < emu_workers_count() && !ret; i++) {
			struct emu_worker *w = emu_worker_at(i);

			atomic_store(&w->stop, false);
			ret = pthread_create(&w->thread, NULL, engine_main, w);
			if (ret)
				emu_err("cannot start engine worker %d: %s", i, strerror(ret));
			else
				w->running = true;
		}
		if (ret) {
			workers_stop(emu_workers_count());
			engine_users--;
		}
	}
	pthread_mutex_unlock(&engine_ctl);
	return ret;
}

void emu_engine_stop(void)
{
	pthread_mutex_lock(&engine_ctl);
	if (engine_users > 0 && --engine_users == 0)
		workers_stop(emu_workers_count());
	pthread_mutex_unlock(&engine_ctl);
}

void emu_engine_kick(struct emu_qp *qp)
{
	emu_worker_kick(qp->worker);
}

int emu_engine_qp_add(struct emu_qp *qp)
{
	return qp->ops->add(qp);
}

void emu_engine_qp_remove(struct emu_qp *qp)
{
	qp->ops->remove(qp);
}

void emu_engine_qp_state(struct emu_qp *qp, enum ibv_qp_state old_state)
{
	qp->ops->state_change(qp, old_state);
}

void emu_qp_connected_rtr(struct emu_qp *qp, const char *what, const char *fate)
{
	qp->resp.psn_expected = qp->attr.rq_psn & 0xffffff;
	if (emu_fabric_attach(qp))
		emu_warn("QP 0x%x: destination GID is not a gnic-emu address; %s to QP 0x%x %s",
		         qp->ibqp.qp_num, what, qp->dest_qpn, fate);
}
