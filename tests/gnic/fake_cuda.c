// SPDX-License-Identifier: MIT
/*
 * A stand-in for the CUDA driver (libcuda.so.1, built under
 * <build>/tests/gnic/fake-cuda/) whose "GPU" is this process: device memory
 * is host memory and a device pointer is the host address, so CPU threads
 * can run device code on what libgnic placed "in the GPU". It lets a
 * machine without a GPU run libgnic's GPU placement (place_gpu in
 * src/qp_dev.c), with the driver's rules that catch placement bugs:
 * registering a page twice fails with CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
 * a device pointer exists only for registered host memory, unregistering
 * unregistered memory fails. fake_cuda_live() reports what is still
 * registered or allocated. Prototypes are our own: libgnic looks the names
 * up with dlsym.
 *
 * It also has what gnic-emu copies device memory with (pointer attributes,
 * streams, asynchronous copies, pinned host memory), with the driver's rule
 * that a copy needs a live current context (per thread), and the virtual
 * memory management API: cuMemCreate makes a memfd, cuMemAddressReserve an
 * inaccessible reservation, cuMemMap maps the memfd there and cuMemSetAccess
 * opens it, so memory that is mapped but not made accessible faults as on a
 * GPU. As the real driver does, such memory reports a NULL
 * CU_POINTER_ATTRIBUTE_CONTEXT: it belongs to the device, not a context.
 * fake_cuda_primary_refs() reports the primary context's references.
 *
 * Asynchronous copies (fake_async.c's part, below): by default a copy is done
 * when its call returns. fake_cuda_set_async(us) (or FAKE_CUDA_ASYNC_US)
 * queues every asynchronous copy and event record instead, and a thread of
 * the fake carries them out in stream order, each no sooner than us after it
 * was issued: completions come late, and cuEventQuery says NOT_READY until
 * then. The copies of one cuMemcpyBatchAsync run in reverse order, which the
 * driver allows (a batch has no order inside). fake_cuda_fail_copies() makes
 * the next copies fail, at issue or when they run (then the next event
 * recorded on that stream reports the error, as a real stream's would).
 * fake_cuda_stat() counts calls by kind; FAKE_CUDA_NO_BATCH=1 hides
 * cuMemcpyBatchAsync from cuGetProcAddress, as a driver before 12.8 does.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum {
	OK = 0,
	ERR_INVALID_VALUE = 1,
	ERR_OUT_OF_MEMORY = 2,
	ERR_INVALID_CONTEXT = 201,
	ERR_NOT_FOUND = 500,
	ERR_NOT_READY = 600,
	ERR_ILLEGAL_ADDRESS = 700,
	ERR_ALREADY_REGISTERED = 712,
	ERR_NOT_REGISTERED = 713,
	CONTEXT_ATTR = 1,
	MEMORY_TYPE_ATTR = 2,
	IS_MANAGED_ATTR = 8,
	DEVICE_ORDINAL_ATTR = 9,
	RANGE_START_ATTR = 11,
	RANGE_SIZE_ATTR = 12,
	MEMORYTYPE_HOST = 1,
	MEMORYTYPE_DEVICE = 2,
};

#define MAX_RANGES 4096

struct range {
	uintptr_t base;
	size_t len;
};

#define VMM_GRANULE (2u << 20) /* as a GPU's minimum granularity */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct range regs[MAX_RANGES], allocs[MAX_RANGES], maps[MAX_RANGES], hosts[MAX_RANGES];
static struct range maphosts[MAX_RANGES]; /* cuMemHostAlloc'd with DEVICEMAP */
static int nregs, nallocs, nmaps, nhosts, nmaphosts;
static int ctx_token, primary_refs;
static _Thread_local int *current; /* the calling thread's context */

static int find(const struct range *t, int n, uintptr_t p, size_t len)
{
	for (int i = 0; i < n; i++)
		if (t[i].base <= p && p + len <= t[i].base + t[i].len)
			return i;
	return -1;
}

static int overlaps(const struct range *t, int n, uintptr_t p, size_t len)
{
	for (int i = 0; i < n; i++)
		if (t[i].base < p + len && p < t[i].base + t[i].len)
			return 1;
	return 0;
}

EXPORT int cuInit(unsigned flags)
{
	return flags ? ERR_INVALID_VALUE : OK;
}

EXPORT int cuDeviceGetCount(int *n)
{
	*n = 1;
	return OK;
}

EXPORT int cuDeviceGet(int *dev, int ordinal)
{
	if (ordinal)
		return ERR_INVALID_VALUE;
	*dev = 0;
	return OK;
}

EXPORT int cuDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	strncpy(name, "fake GPU (host memory)", (size_t)len - 1);
	name[len - 1] = 0;
	return OK;
}

EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	if (dev)
		return ERR_INVALID_VALUE;
	__atomic_add_fetch(&primary_refs, 1, __ATOMIC_RELAXED);
	*ctx = &ctx_token;
	return OK;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int dev)
{
	if (dev || __atomic_load_n(&primary_refs, __ATOMIC_RELAXED) <= 0)
		return ERR_INVALID_CONTEXT;
	__atomic_sub_fetch(&primary_refs, 1, __ATOMIC_RELAXED);
	return OK;
}

EXPORT int cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active)
{
	if (dev)
		return ERR_INVALID_VALUE;
	*flags = 0;
	*active = __atomic_load_n(&primary_refs, __ATOMIC_RELAXED) > 0;
	return OK;
}

EXPORT int cuCtxSetCurrent(void *ctx)
{
	current = (int *)ctx;
	return OK;
}

EXPORT int cuCtxGetCurrent(void **ctx)
{
	*ctx = current;
	return OK;
}

/* A copy or a stream needs a current context that is alive. */
static int ctx_live(void)
{
	return current == &ctx_token && __atomic_load_n(&primary_refs, __ATOMIC_RELAXED) > 0;
}

EXPORT int cuMemHostRegister_v2(void *p, size_t len, unsigned flags)
{
	int r = OK;

	(void)flags;
	pthread_mutex_lock(&lock);
	if (overlaps(regs, nregs, (uintptr_t)p, len))
		r = ERR_ALREADY_REGISTERED;
	else if (nregs == MAX_RANGES)
		r = ERR_OUT_OF_MEMORY;
	else
		regs[nregs++] = (struct range){(uintptr_t)p, len};
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT int cuMemHostUnregister(void *p)
{
	int i, r = OK;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nregs && regs[i].base != (uintptr_t)p; i++)
		;
	if (i == nregs)
		r = ERR_NOT_REGISTERED;
	else
		regs[i] = regs[--nregs];
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT int cuMemHostGetDevicePointer_v2(uint64_t *dptr, void *p, unsigned flags)
{
	int r;

	(void)flags;
	pthread_mutex_lock(&lock);
	r = find(regs, nregs, (uintptr_t)p, 1) >= 0 ||
	            find(maphosts, nmaphosts, (uintptr_t)p, 1) >= 0
	        ? OK
	        : ERR_INVALID_VALUE;
	pthread_mutex_unlock(&lock);
	if (!r)
		*dptr = (uintptr_t)p;
	return r;
}

EXPORT int cuMemAlloc_v2(uint64_t *dptr, size_t len)
{
	void *p = NULL;
	int r = OK;

	if (!len || posix_memalign(&p, 256, len))
		return ERR_OUT_OF_MEMORY;
	memset(p, 0xa5, len); /* as uninitialised as GPU memory */
	pthread_mutex_lock(&lock);
	if (nallocs == MAX_RANGES)
		r = ERR_OUT_OF_MEMORY;
	else
		allocs[nallocs++] = (struct range){(uintptr_t)p, len};
	pthread_mutex_unlock(&lock);
	if (r)
		free(p);
	else
		*dptr = (uintptr_t)p;
	return r;
}

EXPORT int cuMemFree_v2(uint64_t dptr)
{
	int i, r = OK;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nallocs && allocs[i].base != dptr; i++)
		;
	if (i == nallocs)
		r = ERR_INVALID_VALUE;
	else
		allocs[i] = allocs[--nallocs];
	pthread_mutex_unlock(&lock);
	if (!r)
		free((void *)(uintptr_t)dptr);
	return r;
}

/* Copies must stay inside one allocation, as on a GPU. */
static int in_alloc(uint64_t d, size_t len)
{
	int r;

	pthread_mutex_lock(&lock);
	r = find(allocs, nallocs, d, len) >= 0 || find(regs, nregs, d, len) >= 0 ||
	    find(maps, nmaps, d, len) >= 0;
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t len)
{
	if (!in_alloc(dst, len))
		return ERR_INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, len);
	return OK;
}

EXPORT int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t len)
{
	if (!in_alloc(src, len))
		return ERR_INVALID_VALUE;
	memcpy(dst, (const void *)(uintptr_t)src, len);
	return OK;
}

EXPORT int cuPointerGetAttribute(void *data, int attr, uint64_t p)
{
	const struct range *r = NULL;
	int i, vmm = 0;

	int host = 0;

	pthread_mutex_lock(&lock);
	i = find(allocs, nallocs, p, 1);
	if (i >= 0) {
		r = &allocs[i];
	} else if ((i = find(maps, nmaps, p, 1)) >= 0) {
		r = &maps[i];
		vmm = 1;
	} else if ((i = find(regs, nregs, p, 1)) >= 0) {
		r = &regs[i]; /* pinned host memory: the driver knows it */
		host = 1;
	} else if ((i = find(hosts, nhosts, p, 1)) >= 0) {
		r = &hosts[i];
		host = 1;
	}
	pthread_mutex_unlock(&lock);
	if (!r)
		return ERR_INVALID_VALUE; /* host memory the driver does not know */
	if (attr == MEMORY_TYPE_ATTR)
		*(unsigned *)data = host ? MEMORYTYPE_HOST : MEMORYTYPE_DEVICE;
	else if (attr == IS_MANAGED_ATTR)
		*(uint64_t *)data = 0;
	else if (attr == CONTEXT_ATTR)
		*(void **)data = vmm ? NULL : &ctx_token; /* VMM memory has no context */
	else if (attr == DEVICE_ORDINAL_ATTR)
		*(int *)data = 0;
	else if (attr == RANGE_START_ATTR)
		*(uint64_t *)data = r->base;
	else if (attr == RANGE_SIZE_ATTR)
		*(size_t *)data = r->len;
	else
		return ERR_INVALID_VALUE;
	return OK;
}

/* Virtual memory management. A handle is a memfd of the allocation's size;
 * the prototypes' structs are read only as far as the fake needs: none. */
EXPORT int cuMemGetAllocationGranularity(size_t *g, const void *prop, int option)
{
	(void)prop;
	(void)option;
	*g = VMM_GRANULE;
	return OK;
}

EXPORT int cuMemCreate(uint64_t *handle, size_t len, const void *prop, unsigned long long flags)
{
	int fd;

	if (!prop || flags || !len || len % VMM_GRANULE)
		return ERR_INVALID_VALUE;
	fd = memfd_create("fake-cuda-vmm", MFD_CLOEXEC);
	if (fd < 0)
		return ERR_OUT_OF_MEMORY;
	if (ftruncate(fd, (off_t)len)) {
		close(fd);
		return ERR_OUT_OF_MEMORY;
	}
	*handle = (uint64_t)fd + 1; /* never 0 */
	return OK;
}

EXPORT int cuMemRelease(uint64_t handle)
{
	return handle && !close((int)(handle - 1)) ? OK : ERR_INVALID_VALUE;
}

EXPORT int cuMemAddressReserve(uint64_t *ptr, size_t len, size_t align, uint64_t addr,
                               unsigned long long flags)
{
	void *p;

	(void)align;
	(void)addr;
	if (flags || !len || len % VMM_GRANULE)
		return ERR_INVALID_VALUE;
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return ERR_OUT_OF_MEMORY;
	*ptr = (uintptr_t)p;
	return OK;
}

EXPORT int cuMemAddressFree(uint64_t ptr, size_t len)
{
	return munmap((void *)(uintptr_t)ptr, len) ? ERR_INVALID_VALUE : OK;
}

/* Mapped, still inaccessible until cuMemSetAccess. */
EXPORT int cuMemMap(uint64_t ptr, size_t len, size_t offset, uint64_t handle,
                    unsigned long long flags)
{
	int r = OK;

	if (flags || !handle ||
	    mmap((void *)(uintptr_t)ptr, len, PROT_NONE, MAP_SHARED | MAP_FIXED, (int)(handle - 1),
	         (off_t)offset) == MAP_FAILED)
		return ERR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	if (nmaps == MAX_RANGES)
		r = ERR_OUT_OF_MEMORY;
	else
		maps[nmaps++] = (struct range){(uintptr_t)ptr, len};
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT int cuMemSetAccess(uint64_t ptr, size_t len, const void *desc, size_t count)
{
	int mapped;

	pthread_mutex_lock(&lock);
	mapped = find(maps, nmaps, ptr, len) >= 0;
	pthread_mutex_unlock(&lock);
	if (!desc || !count || !mapped)
		return ERR_INVALID_VALUE;
	return mprotect((void *)(uintptr_t)ptr, len, PROT_READ | PROT_WRITE) ? ERR_INVALID_VALUE
	                                                                     : OK;
}

EXPORT int cuMemUnmap(uint64_t ptr, size_t len)
{
	int i, r = OK;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nmaps && (maps[i].base != ptr || maps[i].len != len); i++)
		;
	if (i == nmaps)
		r = ERR_INVALID_VALUE;
	else
		maps[i] = maps[--nmaps];
	pthread_mutex_unlock(&lock);
	/* back to a bare reservation */
	if (!r &&
	    mmap((void *)(uintptr_t)ptr, len, PROT_NONE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		r = ERR_INVALID_VALUE;
	return r;
}

EXPORT int cuGetErrorName(int r, const char **name)
{
	*name = r == ERR_ALREADY_REGISTERED ? "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"
	        : r == ERR_NOT_REGISTERED   ? "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"
	        : r == ERR_OUT_OF_MEMORY    ? "CUDA_ERROR_OUT_OF_MEMORY"
	        : r == ERR_INVALID_CONTEXT  ? "CUDA_ERROR_INVALID_CONTEXT"
	        : r == ERR_NOT_READY        ? "CUDA_ERROR_NOT_READY"
	        : r == ERR_ILLEGAL_ADDRESS  ? "CUDA_ERROR_ILLEGAL_ADDRESS"
	                                    : "CUDA_ERROR_INVALID_VALUE";
	return OK;
}

/* References to the primary context (retained, not yet released). */
EXPORT int fake_cuda_primary_refs(void)
{
	return __atomic_load_n(&primary_refs, __ATOMIC_RELAXED);
}

/* Ranges still registered and allocations not freed. */
EXPORT void fake_cuda_live(int *registered, int *allocated)
{
	pthread_mutex_lock(&lock);
	*registered = nregs;
	*allocated = nallocs;
	pthread_mutex_unlock(&lock);
}

/* ---- asynchronous copies ------------------------------------------------ */

enum {
	STAT_BATCH_CALLS,
	STAT_BATCH_COPIES,
	STAT_HTOD,
	STAT_DTOH,
	STAT_DTOD,
	STAT_STREAM_SYNC,
	STAT_EVENT_QUERY,
	STAT_EVENT_RECORD,
	STAT_HOST_REGISTERED, /* a copy's host side: cuMemHostRegister'd memory */
	STAT_HOST_ALLOC,      /* ... cuMemHostAlloc'd (a bounce buffer, say) */
	STAT_HOST_PAGEABLE,   /* ... memory the driver does not know */
	STAT_STREAM_CREATE,
	STAT_KERNEL_LAUNCHES, /* the copy kernel's launches (cuLaunchKernel) */
	STAT_KERNEL_COPIES,   /* ... and the copies they carried */
	STAT_COUNT
};
static const char *const stat_names[STAT_COUNT] = {
    "batch_calls",   "batch_copies",  "async_htod",      "async_dtoh",      "async_dtod",
    "stream_sync",   "event_query",   "event_record",    "host_registered", "host_alloc",
    "host_pageable", "stream_create", "kernel_launches", "kernel_copies"};
static long stats[STAT_COUNT];

static void stat_add(int k, long n)
{
	__atomic_add_fetch(&stats[k], n, __ATOMIC_RELAXED);
}

/* The stat of that name (names above), -1 for an unknown one. */
EXPORT long fake_cuda_stat(const char *name)
{
	for (int i = 0; i < STAT_COUNT; i++)
		if (!strcmp(name, stat_names[i]))
			return __atomic_load_n(&stats[i], __ATOMIC_RELAXED);
	return -1;
}

struct fake_stream {
	int err; /* a copy that failed when it ran: the next event recorded reports it */
};

struct fake_event {
	unsigned long recorded, done; /* records issued, records carried out */
	int err;
};

struct copy {
	uint64_t dst, src;
	size_t n;
	int last; /* the copy kernel's: the last byte after the rest */
};

/* One queued operation: copies (a batch, or one) or an event record. */
struct op {
	struct op *next;
	struct fake_stream *s;
	uint64_t due_ns;
	struct fake_event *ev; /* an event record, else copies */
	int fail;              /* the copies fail when they run with this error */
	size_t ncopies;
	struct copy copies[];
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct op *q_head, *q_tail;
static long async_us = -1;                 /* -1: not read yet */
static int fail_issue, fail_run, fail_err; /* copies to fail, and how */
static pthread_t q_thread;
static int q_started;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Under q_lock. */
static long delay_us(void)
{
	if (async_us < 0) {
		const char *e = getenv("FAKE_CUDA_ASYNC_US");

		async_us = e ? atol(e) : 0;
	}
	return async_us;
}

/* Asynchronous copies complete us microseconds after they were issued (0:
 * when the call returns). */
EXPORT void fake_cuda_set_async(long us)
{
	pthread_mutex_lock(&q_lock);
	async_us = us < 0 ? 0 : us;
	pthread_mutex_unlock(&q_lock);
}

/* The next n copies fail with err: at issue (the call returns err) or, with
 * at_run, when they run. */
EXPORT void fake_cuda_fail_copies(int n, int at_run, int err)
{
	pthread_mutex_lock(&q_lock);
	fail_issue = at_run ? 0 : n;
	fail_run = at_run ? n : 0;
	fail_err = err;
	pthread_mutex_unlock(&q_lock);
}

/* memmove as a DMA engine moves bytes: aligned 8-byte words whole (never
 * torn), the rest byte by byte, each an acquire load and a release store, so
 * that software polling or writing "device memory" (host memory here) with
 * atomics while a copy reads or writes it, as a GPU kernel polls a CQE's
 * op_own or writes a doorbell record, sees what it would on a GPU (and
 * ThreadSanitizer agrees). */
static void move_one(uint8_t *d, const uint8_t *s, size_t *i, size_t n, bool back)
{
	size_t k = back ? *i - 1 : *i;

	if (!back && !(((uintptr_t)(d + k) | (uintptr_t)(s + k)) & 7) && n - k >= 8) {
		__atomic_store_n((uint64_t *)(d + k),
		                 __atomic_load_n((const uint64_t *)(s + k), __ATOMIC_ACQUIRE),
		                 __ATOMIC_RELEASE);
		*i += 8;
		return;
	}
	__atomic_store_n(&d[k], __atomic_load_n(&s[k], __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
	*i = back ? k : k + 1;
}

static void copy_bytes(uint8_t *d, const uint8_t *s, size_t n)
{
	size_t i;

	if (d > s && d < s + n) { /* overlapping, forward: back to front */
		for (i = n; i > 0;)
			move_one(d, s, &i, n, true);
		return;
	}
	for (i = 0; i < n;)
		move_one(d, s, &i, n, false);
}

static void run_op(struct op *o)
{
	if (o->ev) {
		pthread_mutex_lock(&q_lock);
		if (o->s && o->s->err) {
			o->ev->err = o->s->err;
			o->s->err = 0;
		}
		o->ev->done++;
		pthread_mutex_unlock(&q_lock);
		return;
	}
	if (o->fail) {
		pthread_mutex_lock(&q_lock);
		if (o->s)
			o->s->err = o->fail;
		pthread_mutex_unlock(&q_lock);
		return;
	}
	for (size_t i = o->ncopies; i-- > 0;) { /* a batch has no order: run it backwards */
		const struct copy *c = &o->copies[i];
		size_t body = c->last && c->n ? c->n - 1 : c->n;

		copy_bytes((uint8_t *)(uintptr_t)c->dst, (const uint8_t *)(uintptr_t)c->src, body);
		if (body < c->n)
			__atomic_store_n((uint8_t *)(uintptr_t)(c->dst + body),
			                 *(const uint8_t *)(uintptr_t)(c->src + body),
			                 __ATOMIC_RELEASE);
	}
}

static void *q_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&q_lock);
	for (;;) {
		struct op *o = q_head;
		uint64_t now = now_ns();

		if (!o) {
			pthread_cond_wait(&q_cond, &q_lock);
			continue;
		}
		if (o->due_ns > now) {
			uint64_t d = o->due_ns - now;
			struct timespec ts = {0, (long)(d < 1000000 ? d : 1000000)};

			pthread_mutex_unlock(&q_lock);
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&q_lock);
			continue;
		}
		q_head = o->next;
		if (!q_head)
			q_tail = NULL;
		pthread_mutex_unlock(&q_lock);
		run_op(o);
		free(o);
		pthread_mutex_lock(&q_lock);
	}
	return NULL;
}

/* Queue o (async mode) or run it now. Takes o. */
static void submit(struct op *o)
{
	long us;

	pthread_mutex_lock(&q_lock);
	us = delay_us();
	if (us > 0) {
		o->due_ns = now_ns() + (uint64_t)us * 1000;
		o->next = NULL;
		if (q_tail)
			q_tail->next = o;
		else
			q_head = o;
		q_tail = o;
		if (!q_started && !pthread_create(&q_thread, NULL, q_main, NULL)) {
			pthread_detach(q_thread);
			q_started = 1;
		}
		pthread_cond_signal(&q_cond);
		pthread_mutex_unlock(&q_lock);
		return;
	}
	pthread_mutex_unlock(&q_lock);
	run_op(o);
	free(o);
}

/* 0, or the error this copy fails with at issue; *run: the error it fails
 * with when it runs. */
static int take_failure(int *run)
{
	int r = OK;

	pthread_mutex_lock(&q_lock);
	*run = 0;
	if (fail_issue > 0) {
		fail_issue--;
		r = fail_err;
	} else if (fail_run > 0) {
		fail_run--;
		*run = fail_err;
	}
	pthread_mutex_unlock(&q_lock);
	return r;
}

static struct op *op_new(void *stream, size_t ncopies)
{
	struct op *o = calloc(1, sizeof(*o) + ncopies * sizeof(struct copy));

	if (o) {
		o->s = stream;
		o->ncopies = ncopies;
	}
	return o;
}

/* Device memory proper: an allocation or a mapping. */
static int in_device(uint64_t d, size_t len)
{
	int r;

	pthread_mutex_lock(&lock);
	r = find(allocs, nallocs, d, len) >= 0 || find(maps, nmaps, d, len) >= 0;
	pthread_mutex_unlock(&lock);
	return r;
}

/* Count what kind of host memory a copy reads or writes at p. */
static void host_stat(uint64_t p, size_t n)
{
	int k;

	pthread_mutex_lock(&lock);
	k = find(regs, nregs, p, n) >= 0     ? STAT_HOST_REGISTERED
	    : find(hosts, nhosts, p, n) >= 0 ? STAT_HOST_ALLOC
	                                     : STAT_HOST_PAGEABLE;
	pthread_mutex_unlock(&lock);
	stat_add(k, 1);
}

/* One asynchronous copy; dev_dst / dev_src: that side must lie in device
 * memory (an allocation, a mapping or registered host memory). */
static int copy_async(uint64_t dst, uint64_t src, size_t n, void *stream, int dev_dst, int dev_src,
                      int stat)
{
	struct op *o;
	int r, run;

	if (!stream || !ctx_live())
		return ERR_INVALID_CONTEXT;
	if ((dev_dst && !in_alloc(dst, n)) || (dev_src && !in_alloc(src, n)))
		return ERR_INVALID_VALUE;
	r = take_failure(&run);
	if (r)
		return r;
	o = op_new(stream, 1);
	if (!o)
		return ERR_OUT_OF_MEMORY;
	o->copies[0] = (struct copy){dst, src, n, 0};
	o->fail = run;
	stat_add(stat, 1);
	if (stat == STAT_HTOD)
		host_stat(src, n);
	else if (stat == STAT_DTOH)
		host_stat(dst, n);
	submit(o);
	return OK;
}

/* Streams need a context; each is a struct fake_stream of its own. */
EXPORT int cuStreamCreate(void **stream, unsigned flags)
{
	(void)flags;
	if (!ctx_live())
		return ERR_INVALID_CONTEXT;
	stat_add(STAT_STREAM_CREATE, 1);
	*stream = calloc(1, sizeof(struct fake_stream));
	return *stream ? OK : ERR_OUT_OF_MEMORY;
}

EXPORT int cuStreamDestroy_v2(void *stream)
{
	free(stream);
	return OK;
}

/* Waits for everything queued before it (every stream: one queue). */
EXPORT int cuStreamSynchronize(void *stream)
{
	struct fake_event ev = {0};
	struct op *o;
	int r;

	if (!stream || !ctx_live())
		return ERR_INVALID_CONTEXT;
	stat_add(STAT_STREAM_SYNC, 1);
	o = op_new(stream, 0);
	if (!o)
		return ERR_OUT_OF_MEMORY;
	o->ev = &ev;
	pthread_mutex_lock(&q_lock);
	ev.recorded = 1;
	pthread_mutex_unlock(&q_lock);
	submit(o);
	for (;;) {
		pthread_mutex_lock(&q_lock);
		r = ev.done == ev.recorded ? ev.err : ERR_NOT_READY;
		pthread_mutex_unlock(&q_lock);
		if (r != ERR_NOT_READY)
			return r;
		usleep(20);
	}
}

EXPORT int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t len, void *stream)
{
	return copy_async(dst, (uintptr_t)src, len, stream, 1, 0, STAT_HTOD);
}

EXPORT int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t len, void *stream)
{
	return copy_async((uintptr_t)dst, src, len, stream, 0, 1, STAT_DTOH);
}

EXPORT int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t len, void *stream)
{
	return copy_async(dst, src, len, stream, 1, 1, STAT_DTOD);
}

/* cuMemcpyBatchAsync of CUDA 12.8 (attrs are checked for presence only). */
static int batch_async(uint64_t *dsts, uint64_t *srcs, size_t *sizes, size_t count, void *attrs,
                       size_t *attr_idxs, size_t nattrs, size_t *fail_idx, void *stream)
{
	struct op *o;
	int run_err = 0;

	if (fail_idx)
		*fail_idx = SIZE_MAX;
	if (!stream || !ctx_live())
		return ERR_INVALID_CONTEXT;
	if (!count || !dsts || !srcs || !sizes || !attrs || !attr_idxs || !nattrs ||
	    nattrs > count || attr_idxs[0] != 0)
		return ERR_INVALID_VALUE;
	o = op_new(stream, count);
	if (!o)
		return ERR_OUT_OF_MEMORY;
	for (size_t i = 0; i < count; i++) {
		int run, r = take_failure(&run);

		if (!r && !in_alloc(dsts[i], sizes[i]) && !in_alloc(srcs[i], sizes[i]))
			r = ERR_INVALID_VALUE; /* host to host */
		if (r) {
			free(o);
			if (fail_idx)
				*fail_idx = i;
			return r;
		}
		if (run)
			run_err = run;
		if (!in_device(srcs[i], sizes[i]))
			host_stat(srcs[i], sizes[i]);
		else if (!in_device(dsts[i], sizes[i]))
			host_stat(dsts[i], sizes[i]);
		o->copies[i] = (struct copy){dsts[i], srcs[i], sizes[i], 0};
	}
	o->fail = run_err;
	stat_add(STAT_BATCH_CALLS, 1);
	stat_add(STAT_BATCH_COPIES, (long)count);
	submit(o);
	return OK;
}

/* The versioned entry points the driver has: only the batch copy here,
 * unless FAKE_CUDA_NO_BATCH is set (an older driver). */
EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                               int *status)
{
	const char *no = getenv("FAKE_CUDA_NO_BATCH");

	(void)flags;
	if (!strcmp(symbol, "cuMemcpyBatchAsync") && version >= 12080 && !(no && *no == '1')) {
		*(int (**)(uint64_t *, uint64_t *, size_t *, size_t, void *, size_t *, size_t,
		           size_t *, void *))pfn = batch_async;
		if (status)
			*status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
		return OK;
	}
	*pfn = NULL;
	if (status)
		*status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
	return ERR_NOT_FOUND;
}

EXPORT int cuEventCreate(void **ev, unsigned flags)
{
	(void)flags;
	if (!ctx_live())
		return ERR_INVALID_CONTEXT;
	*ev = calloc(1, sizeof(struct fake_event));
	return *ev ? OK : ERR_OUT_OF_MEMORY;
}

EXPORT int cuEventDestroy_v2(void *ev)
{
	free(ev);
	return OK;
}

EXPORT int cuEventRecord(void *event, void *stream)
{
	struct fake_event *ev = event;
	struct op *o;

	if (!ev || !stream || !ctx_live())
		return ERR_INVALID_VALUE;
	o = op_new(stream, 0);
	if (!o)
		return ERR_OUT_OF_MEMORY;
	o->ev = ev;
	stat_add(STAT_EVENT_RECORD, 1);
	pthread_mutex_lock(&q_lock);
	ev->recorded++;
	ev->err = 0;
	pthread_mutex_unlock(&q_lock);
	submit(o);
	return OK;
}

EXPORT int cuEventQuery(void *event)
{
	struct fake_event *ev = event;
	int r;

	if (!ev)
		return ERR_INVALID_VALUE;
	stat_add(STAT_EVENT_QUERY, 1);
	pthread_mutex_lock(&q_lock);
	r = ev->done < ev->recorded ? ERR_NOT_READY : ev->err;
	pthread_mutex_unlock(&q_lock);
	return r;
}

/* Pinned host memory the driver knows (MEMORY_TYPE host). */
EXPORT int cuMemHostAlloc(void **p, size_t len, unsigned flags)
{
	int r = OK;

	(void)flags;
	if (!ctx_live())
		return ERR_INVALID_CONTEXT;
	*p = malloc(len);
	if (!*p)
		return ERR_OUT_OF_MEMORY;
	pthread_mutex_lock(&lock);
	if (nhosts == MAX_RANGES)
		r = ERR_OUT_OF_MEMORY;
	else
		hosts[nhosts++] = (struct range){(uintptr_t)*p, len};
	if (!r && (flags & 2) && nmaphosts < MAX_RANGES) /* CU_MEMHOSTALLOC_DEVICEMAP */
		maphosts[nmaphosts++] = (struct range){(uintptr_t)*p, len};
	pthread_mutex_unlock(&lock);
	if (r) {
		free(*p);
		*p = NULL;
	}
	return r;
}

EXPORT int cuMemFreeHost(void *p)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nhosts && hosts[i].base != (uintptr_t)p; i++)
		;
	if (i < nhosts)
		hosts[i] = hosts[--nhosts];
	for (i = 0; i < nmaphosts && maphosts[i].base != (uintptr_t)p; i++)
		;
	if (i < nmaphosts)
		maphosts[i] = maphosts[--nmaphosts];
	pthread_mutex_unlock(&lock);
	free(p);
	return OK;
}

/* ---- gnic-emu's copy kernel (emu/copy_kernel.c) -------------------------- */

static int module_tag, function_tag;

/* Loads only the copy kernel's PTX (a module is its entry point here). */
EXPORT int cuModuleLoadData(void **mod, const void *image)
{
	if (!ctx_live())
		return ERR_INVALID_CONTEXT;
	if (!image || !strstr(image, ".entry gnic_emu_copy(") || !strstr(image, ".version "))
		return 218; /* CUDA_ERROR_INVALID_PTX */
	*mod = &module_tag;
	return OK;
}

EXPORT int cuModuleGetFunction(void **fn, void *mod, const char *name)
{
	if (mod != &module_tag || !name || strcmp(name, "gnic_emu_copy"))
		return ERR_NOT_FOUND;
	*fn = &function_tag;
	return OK;
}

/* What a kernel may touch: device memory, or host memory mapped into it. */
static int device_reaches(uint64_t p, size_t n)
{
	int r;

	pthread_mutex_lock(&lock);
	r = find(allocs, nallocs, p, n) >= 0 || find(maps, nmaps, p, n) >= 0 ||
	    find(regs, nregs, p, n) >= 0 || find(maphosts, nmaphosts, p, n) >= 0;
	pthread_mutex_unlock(&lock);
	return r;
}

/* The copy kernel, carried out like a batch (in stream order, no order
 * inside): its parameter block is a u32 count, 4 bytes of padding and count
 * copies of {dst, src, n} with bit 63 of n meaning "last byte last". An
 * address the device cannot reach faults when the kernel runs. */
EXPORT int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, unsigned shmem, void *stream, void **params, void **extra)
{
	const uint8_t *p;
	uint32_t count;
	struct op *o;
	int run, r;

	if (!stream || !ctx_live())
		return ERR_INVALID_CONTEXT;
	if (fn != &function_tag || !params || !params[0] || extra || !gx || gy != 1 || gz != 1 ||
	    !bx || bx > 1024 || by != 1 || bz != 1 || shmem)
		return ERR_INVALID_VALUE;
	p = params[0];
	memcpy(&count, p, sizeof(count));
	if (!count || count > 168)
		return ERR_INVALID_VALUE;
	r = take_failure(&run);
	if (r)
		return r;
	o = op_new(stream, count);
	if (!o)
		return ERR_OUT_OF_MEMORY;
	for (uint32_t i = 0; i < count; i++) {
		uint64_t v[3];

		memcpy(v, p + 8 + 24 * (size_t)i, sizeof(v));
		o->copies[i] =
		    (struct copy){v[0], v[1], (size_t)(v[2] & ~(1ull << 63)), (int)(v[2] >> 63)};
		if (!device_reaches(v[0], o->copies[i].n) || !device_reaches(v[1], o->copies[i].n))
			run = ERR_ILLEGAL_ADDRESS;
	}
	o->fail = run;
	stat_add(STAT_KERNEL_LAUNCHES, 1);
	stat_add(STAT_KERNEL_COPIES, (long)count);
	submit(o);
	return OK;
}
