/* SPDX-License-Identifier: MIT */
/*
 * flag_lat: the round trip of a flag between a device thread and a CPU
 * thread through host memory, no NIC: the least a CPU proxy adds to a
 * post. The device thread stores i + 1 into one word and waits for a CPU
 * thread of this process to copy it into another; every echo is checked.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN void flag_lat_dev(const struct pd_side *s, const struct pd_thread *t)
{
	uint8_t *flag = s->lbase + s->r.sig_off, *echo = s->lbase + perf_ring_dst(&s->r, 0);

	(void)t;
	pd_span(s, 0);
	for (int64_t i = s->first; i < s->first + s->count; i++) {
		uint64_t t0 = pd_clock(), want = (uint64_t)i + 1, v;
		struct gnic_wait w;

		gnic_wait_init(&w, s->timeout_ns);
		gnic_store_sys64(flag, want);
		while ((v = gnic_load_sys64(echo)) < want && !gnic_wait_expired(&w))
			;
		s->lat[i - s->first] = pd_clock() - t0;
		if (v != want) {
			pd_fail(s, v < want ? GNIC_DEV_ERR_TIMEOUT : PD_BAD_SIGNAL, PD_OP_WAIT, 0,
			        i, -1, v, want);
			break;
		}
	}
	pd_span(s, 1);
}
#else
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "perf.h"

struct echo {
	uint64_t *flag, *echo, end;
	int stop;
};

/* Copies each new flag value back until the chunk's last (or told to stop). */
static void *echo_main(void *arg)
{
	struct echo *e = arg;
	uint64_t last = __atomic_load_n(e->echo, __ATOMIC_ACQUIRE), v;
	struct perf_wait w;

	perf_wait_start(&w, "the device thread's flag");
	while (last < e->end && !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		if ((v = __atomic_load_n(e->flag, __ATOMIC_ACQUIRE)) != last) {
			__atomic_store_n(e->echo, last = v, __ATOMIC_RELEASE);
			perf_wait_progress(&w);
		} else if ((++w.spins & 63) == 0) {
			sched_yield(); /* on a busy machine the device thread needs the core */
			perf_wait_check(&w);
		}
	}
	return NULL;
}

static void setup(struct perf_run *r)
{
	struct perf_ep *ep = r->ep[PERF_A];

	memset(ep->buf + r->ring.sig_off, 0, 8);
	memset(ep->buf + perf_ring_dst(&r->ring, 0), 0, 8);
}

static void run(struct perf_run *r)
{
	struct perf_ep *ep = r->ep[PERF_A];
	struct echo e = {(uint64_t *)(ep->buf + r->ring.sig_off),
	                 (uint64_t *)(ep->buf + perf_ring_dst(&r->ring, 0)),
	                 (uint64_t)(r->first + r->count), 0};
	pthread_t th;
	int ret;

	if ((ret = pthread_create(&th, NULL, echo_main, &e)) != 0)
		perf_fatal("cannot start the echo thread: %s", strerror(ret));
	perf_dev_run(r, PERF_RUN_A, 0);
	__atomic_store_n(&e.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
}

PERF_TEST_DEF(flag_lat, PERF_LAT, PERF_MODES_GNIC,
              PERF_F_PINGPONG | PERF_F_OPERAND8 | PERF_F_UNCONNECTED | PERF_F_HOSTMEM, "8", 10000,
              200, "device thread <-> CPU thread flag round trip in host memory (no NIC)",
              .setup = setup, .run = run);
#endif
