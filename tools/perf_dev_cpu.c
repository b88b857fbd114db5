/* SPDX-License-Identifier: MIT */
/*
 * Device workers on CPU threads: the same pd_worker() a CUDA kernel runs
 * (gnic_dev.cuh compiled as C), one thread per CTA (a CTA of one thread;
 * warp and CTA scope are then gnic_dev.cuh's C fallbacks). Used when there
 * is no GPU: no CUDA build, or no device at run time.
 *
 * Each thread takes its start and end time itself, after a barrier that
 * all of them and this thread pass, so thread creation is not timed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"
#include "perf_dev_worker.h"
#include "perf_gnic.h"

struct cpu_worker {
	const struct pd_launch *L;
	pthread_barrier_t *start;
	uint32_t side, cta;
	uint64_t t0, t1;
	uint32_t *finished;
};

static void *cpu_main(void *arg)
{
	struct cpu_worker *w = arg;

	pthread_barrier_wait(w->start);
	w->t0 = perf_now_ns();
	pd_worker(&w->L->side[w->side], w->cta, 0, 1, w->L->ctas);
	w->t1 = perf_now_ns();
	__atomic_add_fetch(w->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void sleep_us(long us)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = us * 1000};

	nanosleep(&ts, NULL);
}

/* Bounded: device waits end by themselves within the QP timeout; this
 * deadline (or a vanished peer) ends the process if they do not. */
static void wait_finished(uint32_t *finished, uint32_t n)
{
	struct perf_wait w;

	perf_wait_start_slack(&w, "the device threads to finish", PERF_DEVICE_SLACK_S);
	while (__atomic_load_n(finished, __ATOMIC_ACQUIRE) < n) {
		sleep_us(200);
		perf_wait_check(&w);
	}
}

double perf_cpu_launch(const struct pd_launch *L)
{
	uint32_t n = L->nsides * L->ctas, finished = 0;
	struct cpu_worker *w = calloc(n, sizeof(*w));
	pthread_t *th = calloc(n, sizeof(*th));
	pthread_barrier_t start;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	int ret;

	if (!w || !th)
		perf_fatal("out of memory for %u CPU threads", n);
	if (L->threads != 1)
		perf_fatal("internal: a CPU-thread CTA has one thread, not %u", L->threads);
	pthread_barrier_init(&start, NULL, n + 1);
	for (uint32_t i = 0; i < n; i++) {
		w[i] = (struct cpu_worker){.L = L,
		                           .start = &start,
		                           .side = i / L->ctas,
		                           .cta = i % L->ctas,
		                           .finished = &finished};
		ret = pthread_create(&th[i], NULL, cpu_main, &w[i]);
		if (ret)
			perf_fatal("cannot start CPU thread %u of %u: %s", i, n, strerror(ret));
	}
	pthread_barrier_wait(&start);
	wait_finished(&finished, n);
	for (uint32_t i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		t0 = w[i].t0 < t0 ? w[i].t0 : t0;
		t1 = w[i].t1 > t1 ? w[i].t1 : t1;
	}
	pthread_barrier_destroy(&start);
	free(w);
	free(th);
	return (double)(t1 - t0);
}

/* post_rate's check on QPs whose struct is host memory (CPU threads, and
 * the cpu-proxy's QPs also with a GPU). */
void perf_cpu_post_check(const struct pd_side *s)
{
	pd_post_check(s);
}
