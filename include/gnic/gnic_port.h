/* SPDX-License-Identifier: MIT */
/*
 * The portable layer under the device data path: atomics, ordering, MMIO
 * stores, clocks. One CUDA implementation (PTX) and one C11/GNU C
 * implementation, so gnic_dev.cuh compiles unchanged for GPU threads and for
 * CPU threads (which is how CI, with no GPU, runs the real data path).
 *
 * Scopes: "gpu" operations are on counters in the memory of the device
 * running the code (GPU memory for kernels, host memory for CPU threads);
 * "sys" operations are on memory the NIC reads or writes (host-pinned queues,
 * doorbells), which must be ordered against the NIC, i.e. system-wide.
 */
#ifndef GNIC_PORT_H
#define GNIC_PORT_H

#include <stdint.h>

#if defined(__CUDACC__)

#define GNIC_DEVFN  static __device__ __forceinline__
#define GNIC_ON_GPU 1

GNIC_DEVFN uint64_t gnic_add64(uint64_t *p, uint64_t v)
{
	return atomicAdd((unsigned long long *)p, (unsigned long long)v);
}

GNIC_DEVFN uint32_t gnic_add32(uint32_t *p, uint32_t v)
{
	return atomicAdd(p, v);
}

GNIC_DEVFN uint32_t gnic_cas32(uint32_t *p, uint32_t cmp, uint32_t v)
{
	return atomicCAS(p, cmp, v);
}

GNIC_DEVFN uint32_t gnic_xchg32(uint32_t *p, uint32_t v)
{
	return atomicExch(p, v);
}

/* Store-then-load handshakes (the SQ's publish marks): two threads that each
 * do  x_sc(A); gnic_fence_sc(); y_sc(B)  with A and B swapped cannot both
 * miss the other's store. On the GPU the fence does it; on CPU threads the
 * accesses are seq_cst themselves (TSan does not model fences). */

GNIC_DEVFN uint64_t gnic_cas_sc64(uint64_t *p, uint64_t cmp, uint64_t v)
{
	uint64_t old;

	asm volatile("atom.acq_rel.gpu.global.cas.b64 %0, [%1], %2, %3;"
	             : "=l"(old)
	             : "l"(p), "l"(cmp), "l"(v)
	             : "memory");
	return old;
}

GNIC_DEVFN void gnic_fence_sc(void)
{
	asm volatile("fence.sc.gpu;" ::: "memory");
}

/* A publish mark scanned in a run: relaxed (an acquire load invalidates L1
 * each time), the run's gnic_fence_acq() then acquires what it saw. */
GNIC_DEVFN uint64_t gnic_load_mark64(const uint64_t *p)
{
	uint64_t v;

	asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

GNIC_DEVFN void gnic_fence_acq(void)
{
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

/* A try-lock for one side of such a handshake: taking it acquires what the
 * last holder did; the holder's release is followed by gnic_fence_sc(). */
GNIC_DEVFN int gnic_trylock_sc32(uint32_t *p)
{
	uint32_t old;

	asm volatile("atom.acq_rel.gpu.global.cas.b32 %0, [%1], 0, 1;"
	             : "=r"(old)
	             : "l"(p)
	             : "memory");
	return old == 0;
}

GNIC_DEVFN void gnic_unlock_sc32(uint32_t *p)
{
	asm volatile("st.release.gpu.global.u32 [%0], 0;" ::"l"(p) : "memory");
}

/* This thread's earlier stores (WQEs in host memory) before its later ones
 * for every observer, the NIC included: the poster's own system-scope
 * release, so that another thread ringing the doorbell for its WQE need not
 * carry it (NVSHMEM's IBGDA posts the same way). */
GNIC_DEVFN void gnic_fence_rel_sys(void)
{
	asm volatile("fence.acq_rel.sys;" ::: "memory");
}

GNIC_DEVFN uint64_t gnic_load_acq64(const uint64_t *p)
{
	uint64_t v;

	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

GNIC_DEVFN uint32_t gnic_load_acq32(const uint32_t *p)
{
	uint32_t v;

	asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

GNIC_DEVFN void gnic_store_rel64(uint64_t *p, uint64_t v)
{
	asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

GNIC_DEVFN void gnic_store_rel32(uint32_t *p, uint32_t v)
{
	asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* The handshake's plain accesses (see gnic_fence_sc): release/acquire, the
 * fence between them does the rest. */
GNIC_DEVFN void gnic_store_sc64(uint64_t *p, uint64_t v)
{
	gnic_store_rel64(p, v);
}

GNIC_DEVFN uint64_t gnic_load_sc64(const uint64_t *p)
{
	return gnic_load_acq64(p);
}

/* Loads of memory the NIC writes (CQEs, atomic results, signals). */
GNIC_DEVFN uint32_t gnic_load_sys32(const void *p)
{
	uint32_t v;

	asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

GNIC_DEVFN uint64_t gnic_load_sys64(const void *p)
{
	uint64_t v;

	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

/* A store the NIC must see after every store before it (doorbell record). */
GNIC_DEVFN void gnic_store_sys32(void *p, uint32_t v)
{
	asm volatile("fence.release.sys;\n\tst.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v)
	             : "memory");
}

GNIC_DEVFN void gnic_store_sys64(void *p, uint64_t v)
{
	asm volatile("fence.release.sys;\n\tst.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v)
	             : "memory");
}

/* The doorbell register: an MMIO store, after every earlier store. */
GNIC_DEVFN void gnic_mmio_store64(void *reg, uint64_t v)
{
	asm volatile("fence.release.sys;\n\tst.mmio.relaxed.sys.global.u64 [%0], %1;" ::"l"(reg),
	             "l"(v)
	             : "memory");
}

GNIC_DEVFN uint64_t gnic_now_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

GNIC_DEVFN void gnic_backoff(uint32_t round)
{
	__nanosleep(round < 8 ? 32u << round : 4096u);
}

#else /* CPU threads */

#include <sched.h>
#include <time.h>

#define GNIC_DEVFN  static inline
#define GNIC_ON_GPU 0

GNIC_DEVFN uint64_t gnic_add64(uint64_t *p, uint64_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

GNIC_DEVFN uint32_t gnic_add32(uint32_t *p, uint32_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

GNIC_DEVFN uint32_t gnic_cas32(uint32_t *p, uint32_t cmp, uint32_t v)
{
	__atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return cmp;
}

GNIC_DEVFN uint32_t gnic_xchg32(uint32_t *p, uint32_t v)
{
	return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
}

GNIC_DEVFN void gnic_store_sc64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

GNIC_DEVFN uint64_t gnic_load_sc64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

GNIC_DEVFN uint64_t gnic_cas_sc64(uint64_t *p, uint64_t cmp, uint64_t v)
{
	__atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return cmp;
}

/* The seq_cst accesses around it order themselves. */
GNIC_DEVFN void gnic_fence_sc(void) {}

/* TSan does not model fences: the loads acquire themselves. */
GNIC_DEVFN uint64_t gnic_load_mark64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

GNIC_DEVFN void gnic_fence_acq(void) {}

GNIC_DEVFN int gnic_trylock_sc32(uint32_t *p)
{
	uint32_t cmp = 0;

	return __atomic_compare_exchange_n(p, &cmp, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

GNIC_DEVFN void gnic_unlock_sc32(uint32_t *p)
{
	__atomic_store_n(p, 0, __ATOMIC_SEQ_CST);
}

/* CPU stores to host memory are seen in order by the NIC once released
 * (x86-TSO, and the release stores on Arm); the doorbell's own ordering is
 * gnic_mmio_store64's. */
GNIC_DEVFN void gnic_fence_rel_sys(void) {}

GNIC_DEVFN uint64_t gnic_load_acq64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

GNIC_DEVFN uint32_t gnic_load_acq32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

GNIC_DEVFN void gnic_store_rel64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

GNIC_DEVFN void gnic_store_rel32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

GNIC_DEVFN uint32_t gnic_load_sys32(const void *p)
{
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

GNIC_DEVFN uint64_t gnic_load_sys64(const void *p)
{
	return __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE);
}

/* Release stores order every earlier store before them (no fences: TSan
 * does not model fences, and these are all the ordering the NIC needs). */
GNIC_DEVFN void gnic_store_sys32(void *p, uint32_t v)
{
	__atomic_store_n((uint32_t *)p, v, __ATOMIC_RELEASE);
}

GNIC_DEVFN void gnic_store_sys64(void *p, uint64_t v)
{
	__atomic_store_n((uint64_t *)p, v, __ATOMIC_RELEASE);
}

/* A real NIC's doorbell register is write-combining memory, which the
 * CPU's ordinary ordering does not cover: flushed before (every earlier
 * store reaches the bus first: rdma-core's mmio_wc_start) and after (the
 * doorbell leaves the WC buffer now, not at some later eviction:
 * mmio_flush_writes). */
GNIC_DEVFN void gnic_wc_flush(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("sfence" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dsb st" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

GNIC_DEVFN void gnic_mmio_store64(void *reg, uint64_t v)
{
	gnic_wc_flush();
	__atomic_store_n((uint64_t *)reg, v, __ATOMIC_RELEASE);
	gnic_wc_flush();
}

/* The monotonic clock where POSIX is visible; strict ISO C (-std=c11 with no
 * feature macro) has only C11's timespec_get, a wall clock, which bounds the
 * waits all the same unless the clock is set back during one. */
GNIC_DEVFN uint64_t gnic_now_ns(void)
{
	struct timespec ts;

#ifdef CLOCK_MONOTONIC
	clock_gettime(CLOCK_MONOTONIC, &ts);
#else
	timespec_get(&ts, TIME_UTC);
#endif
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU threads may outnumber cores (CI has two): yield while waiting. */
GNIC_DEVFN void gnic_backoff(uint32_t round)
{
	if (round >= 4)
		sched_yield();
#if defined(__x86_64__) || defined(__i386__)
	else
		__builtin_ia32_pause();
#endif
}

#endif /* __CUDACC__ */

#endif /* GNIC_PORT_H */
