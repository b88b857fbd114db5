/* SPDX-License-Identifier: MIT */
/*
 * Device workers on CPU threads, when there is no GPU: the pd_worker() a
 * CUDA kernel runs (gnic_dev.cuh compiled as C), one thread per CTA of one
 * thread (warp and CTA scope: gnic_dev.cuh's C fallbacks). Each thread
 * times itself after a barrier, so thread creation is not timed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"
#include "perf_dev_worker.h"

struct cpu_worker {
	const struct pd_side *side;
	struct pd_thread t;
	pthread_barrier_t *start;
	uint64_t t0, t1;
	uint32_t *finished;
};

static void *cpu_main(void *arg)
{
	struct cpu_worker *w = arg;

	pthread_barrier_wait(w->start);
	w->t0 = perf_now_ns();
	pd_worker(w->side, &w->t);
	w->t1 = perf_now_ns();
	__atomic_add_fetch(w->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Bounded: device waits end by themselves within the QPs' timeout; this
 * deadline (or a vanished peer) ends the process if they do not. */
static void wait_finished(uint32_t *finished, uint32_t n)
{
	struct timespec nap = {0, 200000};
	struct perf_wait w;

	perf_wait_start(&w, "the device threads to finish");
	w.deadline_ns += 10000000000ull; /* slack for them to report why they stopped */
	while (__atomic_load_n(finished, __ATOMIC_ACQUIRE) < n) {
		nanosleep(&nap, NULL);
		perf_wait_check(&w);
	}
}

double perf_cpu_launch(const struct pd_launch *L)
{
	uint32_t n = L->nsides * L->ctas, finished = 0;
	struct cpu_worker *w = calloc(n, sizeof(*w));
	pthread_t *th = calloc(n, sizeof(*th));
	uint64_t t0 = UINT64_MAX, t1 = 0;
	pthread_barrier_t start;

	if (!w || !th)
		perf_fatal("out of memory for %u CPU threads", n);
	if (L->threads != 1) /* a server without GPU, given a GPU client's shape */
		perf_fatal("no GPU here: a CTA is one CPU thread, not %u (give the other side "
		           "--threads 1)",
		           L->threads);
	pthread_barrier_init(&start, NULL, n + 1);
	for (uint32_t i = 0; i < n; i++) {
		int ret;

		w[i] = (struct cpu_worker){.side = &L->side[i / L->ctas],
		                           .t = {i % L->ctas, 0, 1, L->ctas},
		                           .start = &start,
		                           .finished = &finished};
		if ((ret = pthread_create(&th[i], NULL, cpu_main, &w[i])) != 0)
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

#ifndef GNIC_PERF_CUDA /* no CUDA build: no GPU is ever seen, nothing else is called */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define NO_CUDA(decl)                                                                              \
	decl                                                                                       \
	{                                                                                          \
		perf_fatal("internal: a CUDA call in a build without CUDA");                       \
	}
int perf_gpu_count(void)
{
	return 0;
}
NO_CUDA(void perf_gpu_use(int ordinal, char *name, size_t cap))
NO_CUDA(int perf_gpu_max_threads(void))
NO_CUDA(void *perf_gpu_alloc(size_t len, int host_mapped))
NO_CUDA(void perf_gpu_free(void *p, int host_mapped))
NO_CUDA(void perf_gpu_copy(void *dst, const void *src, size_t len, int to_dev))
NO_CUDA(double perf_gpu_launch(const struct pd_launch *L))
#endif
