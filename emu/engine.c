/* SPDX-License-Identifier: MIT */
/*
 * The engine: the emulated NIC's processor, one thread per process.
 *
 * Hardware notices doorbells by bus writes; we cannot trap a GPU's store into
 * host memory, so the engine polls every active QP's doorbell record and
 * register. To keep CI's two cores usable it busy-polls only for
 * emu_cfg.spin_us after the last work, then sleeps with a doubling timeout (up
 * to emu_cfg.sleep_us) on the fabric's epoll set, which also holds an eventfd
 * that software doorbells (post_send/post_recv) write to wake it at once.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"
#include "fabric.h"

static pthread_mutex_t engine_ctl = PTHREAD_MUTEX_INITIALIZER;
static int engine_users;

/* One sweep over every socket and QP. Runs with nic.lock held. Input comes
 * first: answers that arrived while the engine did not run must be seen
 * before any retransmission timer is judged. */
static int engine_pass(void)
{
	int work = emu_fabric_poll();
	uint64_t now = emu_now_ns();

	for (uint32_t i = 0; i < emu_nic.nactive; i++) {
		struct emu_qp *qp = emu_nic.active[i];

		work += qp->ops->progress(qp, now);
	}
	if (emu_fabric_flush() > 0)
		work++;
	emu_nic.engine_passes++;
	return work;
}

/* One pass under the lock. *pending: fabric output still queued (read under
 * the lock too: a control-path call may free connections between passes). */
static int locked_pass(bool *pending)
{
	int work;

	pthread_mutex_lock(&emu_nic.lock);
	work = engine_pass();
	if (pending)
		*pending = emu_fabric_pending();
	pthread_mutex_unlock(&emu_nic.lock);
	/* the control path is waiting for the lock: let it in */
	if (atomic_load_explicit(&emu_nic.lock_waiters, memory_order_relaxed))
		sched_yield();
	return work;
}

/* Sleep unless a doorbell rang between our last pass and now. Pairs with the
 * read-modify-write in emu_engine_kick() (RMWs rather than fences: TSan
 * does not model fences): either the poster sees sleeping == 1 and kicks, or
 * our re-check pass sees its doorbell. */
static void idle_sleep(uint64_t timeout_ns)
{
	atomic_exchange(&emu_nic.engine_sleeping, 1); /* a full barrier */
	if (!locked_pass(NULL))
		emu_fabric_wait(timeout_ns);
	atomic_store(&emu_nic.engine_sleeping, 0);
}

static void *engine_main(void *arg)
{
	const uint64_t min_sleep = 10000;
	uint64_t spin_ns = (uint64_t)emu_cfg.spin_us * 1000;
	uint64_t max_sleep = (uint64_t)emu_cfg.sleep_us * 1000;
	uint64_t last_work = emu_now_ns(), sleep_ns = min_sleep;

	(void)arg;
	while (!atomic_load(&emu_nic.engine_stop)) {
		bool pending = false;
		uint64_t now;

		if (locked_pass(&pending)) {
			last_work = emu_now_ns();
			sleep_ns = min_sleep;
			continue;
		}
		now = emu_now_ns();
		if (now - last_work < spin_ns || pending) {
			/* yield rather than pause: on a machine with fewer cores
			 * than busy threads (CI: 2), the thread we wait for may
			 * need this core */
			sched_yield();
			continue;
		}
		idle_sleep(sleep_ns);
		sleep_ns = sleep_ns * 2 < max_sleep ? sleep_ns * 2 : max_sleep;
		if (sleep_ns < min_sleep)
			sleep_ns = min_sleep;
	}
	return NULL;
}

int emu_engine_start(void)
{
	int ret = 0;

	pthread_mutex_lock(&engine_ctl);
	if (engine_users++ == 0) {
		atomic_store(&emu_nic.engine_stop, false);
		ret = pthread_create(&emu_nic.engine, NULL, engine_main, NULL);
		if (ret) {
			engine_users--;
			emu_err("cannot start the engine thread: %s", strerror(ret));
		} else {
			emu_nic.engine_running = true;
		}
	}
	pthread_mutex_unlock(&engine_ctl);
	return ret;
}

void emu_engine_stop(void)
{
	pthread_mutex_lock(&engine_ctl);
	if (engine_users > 0 && --engine_users == 0 && emu_nic.engine_running) {
		atomic_store(&emu_nic.engine_stop, true);
		emu_engine_kick();
		pthread_join(emu_nic.engine, NULL);
		emu_nic.engine_running = false;
	}
	pthread_mutex_unlock(&engine_ctl);
}

void emu_engine_kick(void)
{
	uint64_t one = 1;

	if (atomic_fetch_add(&emu_nic.engine_sleeping, 0) &&
	    write(emu_nic.kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		emu_dbg("engine kick failed: %s", strerror(errno));
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
