/* SPDX-License-Identifier: MIT */
/*
 * What gnic-perf's device workers see: plain C structs shared by the host
 * code (perf_gnic*.c), the CPU-thread runner (perf_dev_cpu.c), the CUDA
 * runner (perf_dev_gpu.cu) and the cpu-proxy thread (perf_proxy.c).
 *
 * A launch runs one or two sides' workers: ctas "CTAs" of threads threads
 * per side (a CUDA grid of nsides * ctas blocks, or nsides * ctas CPU
 * threads of one thread each). Device thread g = cta * threads + tid of a
 * side uses QP cta % nqps, so a warp or CTA always shares one QP.
 */
#ifndef GNIC_PERF_DEV_H
#define GNIC_PERF_DEV_H

#include <stdint.h>

#include <gnic/gnic_dev.h>

#define PD_MAX_QPS 64   /* PERF_MAX_QPS */
#define PP_SLOTS   4096 /* descriptors per cpu-proxy ring (power of two) */
#define PP_NRES    64   /* fetched values per ring (by device thread % PP_NRES) */
#define PP_RLEN    64   /* receive lengths a ring remembers */

/* What a worker does; the host builds one launch per phase. */
enum pd_test {
	PD_PUT_BW = 1,  /* stream of puts at the launch's scope, then quiet */
	PD_GET_BW,      /* stream of gets, then quiet */
	PD_POST_RATE,   /* puts on unconnected QPs, retired by the workers */
	PD_ATOMIC_RATE, /* stream of non-fetching adds, then quiet */
	PD_ATOMIC_LAT,  /* one fetch-add at a time, each value checked */
	PD_PUT_LAT,     /* ping-pong: put, poll the last byte */
	PD_SEND_LAT,    /* ping-pong: send, wait for the receive */
	PD_SIGNAL_LAT,  /* ping-pong: put_signal, wait for the signal word */
	PD_GET_LAT,     /* one get at a time, each checked */
	PD_RECV_PREP,   /* post the first two receives (send_lat) */
	PD_POST_CHECK,  /* after post_rate: counters and WQE bytes of each QP */
};

enum pd_scope { PD_SCOPE_THREAD, PD_SCOPE_WARP, PD_SCOPE_CTA };

/* Which call failed (pd_status.op). */
enum pd_op {
	PD_OP_PUT = 1,
	PD_OP_GET,
	PD_OP_PUT_SIGNAL,
	PD_OP_ADD,
	PD_OP_FETCH_ADD,
	PD_OP_SEND,
	PD_OP_RECV_POST,
	PD_OP_RECV_WAIT,
	PD_OP_QUIET,
	PD_OP_WAIT_DATA,
	PD_OP_WAIT_SIGNAL,
	PD_OP_RETIRE,
	PD_OP_CHECK,
};

/* Failures found by the workers themselves (besides gnic_dev statuses). */
enum pd_bad {
	PD_BAD_DATA = -100, /* a byte differs from the pattern: off, got, want */
	PD_BAD_LEN,         /* a receive has the wrong length: got, want */
	PD_BAD_SIGNAL,      /* the signal word has the wrong value: got, want */
	PD_BAD_FETCH,       /* a fetch-add returned the wrong value: got, want */
	PD_BAD_COUNTER,     /* post_rate: a QP counter is off (off = which), got, want */
	PD_BAD_WQE,         /* post_rate: a WQE field is wrong (off = BB index), got, want */
	PD_PEER_FAILED,     /* not recorded: the peer side's status says why */
};

/* ---- cpu-proxy hand-off ------------------------------------------------------
 * A device thread reserves ring slots (an atomic add on pp_ring.reserved, in
 * device memory), writes a descriptor into pinned host memory and publishes
 * it by storing seq = index + 1 last. The proxy thread consumes descriptors
 * in ring order, posts them as WQEs and reports back, in host memory, how
 * many it has taken (slots free again) and how many have completed. */
enum pp_op { PP_PUT = 1, PP_GET, PP_PUT_SIGNAL, PP_ADD, PP_FADD, PP_SEND, PP_RECV };

struct pp_desc {       /* one cache line each: writers of neighbours do not share one */
	uint64_t seq;  /* index + 1 once the fields below are written */
	uint32_t op;   /* enum pp_op */
	uint32_t len;  /* bytes */
	uint64_t loff; /* offset in the local buffer */
	uint64_t roff; /* offset in the peer's buffer */
	uint64_t arg0; /* PUT_SIGNAL: signal offset; ADD, FADD: addend */
	uint64_t arg1; /* PUT_SIGNAL: addend; FADD: result slot */
	uint64_t rsvd[2];
};

struct pp_host { /* pinned host memory, mapped into the GPU; the proxy writes it */
	GNIC_DEV_ALIGNED uint64_t consumed; /* descriptors copied out: their slots are free */
	GNIC_DEV_ALIGNED uint64_t done;     /* descriptors whose work has completed */
	GNIC_DEV_ALIGNED uint64_t recv_done;
	uint32_t status; /* a gnic_dev status of the proxy's QP; 0 = fine */
	uint32_t recv_len[PP_RLEN];
	uint64_t result[PP_NRES];
	GNIC_DEV_ALIGNED struct pp_desc desc[PP_SLOTS];
};

struct pp_ring {                            /* device memory: the device threads' side */
	GNIC_DEV_ALIGNED uint64_t reserved; /* descriptor slots handed out */
	struct pp_host *h;                  /* as the device addresses it */
	uint32_t nslots;
	uint32_t rsvd;
};

/* ---- what a launch carries --------------------------------------------------- */
struct pd_qp {                  /* exactly one of the two is set */
	struct gnic_dev_qp *qp; /* gpu, gpu-bf, cpu-assisted: the device posts itself */
	struct pp_ring *ring;   /* cpu-proxy: hand-off ring of this QP */
};

struct pd_mem {
	uint8_t *lbase; /* local buffer as registered (device-accessible) */
	uint64_t rbase; /* the peer's buffer */
	uint32_t lkey, rkey;
};

struct pd_layout { /* struct perf_layout's fields (perf_pattern.c) */
	uint64_t size, stride, src_off, dst_off;
	uint32_t nq, nslots, nsrc, rsvd;
};

struct pd_status { /* first failure of a launch, plus the latency run's span */
	uint32_t claimed;
	int32_t rc; /* 0, a gnic_dev status or an enum pd_bad */
	int32_t op; /* enum pd_op */
	uint32_t q; /* QP index */
	int64_t iter;
	int64_t off;
	uint64_t got, want;
	uint64_t t_start, t_end; /* ns (gnic_now_ns): span of the timed iterations */
	uint64_t c_start, c_end; /* the same span in pd_clock() units (samples' unit) */
};

struct pd_side {
	struct pd_qp qp[PD_MAX_QPS];
	struct pd_mem mem;
	struct pd_layout l;
	uint64_t sig_off;   /* signal word (signal_lat) or counter (atomics) */
	int64_t first;      /* first iteration of this launch */
	int64_t count;      /* iterations (streams: a multiple of the device threads) */
	int64_t warmup;     /* latency tests: untimed iterations among count */
	uint64_t expect;    /* ATOMIC_LAT: the counter before iteration first */
	uint64_t recv_base; /* cpu-proxy: receives the ring of QP 0 reported before */
	uint64_t *lat;      /* latency samples in pd_clock() units, count - warmup */
	struct pd_status *st;
	struct pd_status *peer_st; /* in-process ping-pong: stop when the peer failed */
	uint64_t timeout_ns;
	uint32_t nqps;
	uint32_t side; /* enum perf_side: 0 = A, 1 = B */
	uint32_t test; /* enum pd_test */
	uint32_t scope;
	uint32_t validate;
	uint32_t rsvd;
	/* POST_CHECK: QP q has taken want_bb[q] BBs since it was created,
	 * those from from_bb[q] on in the row just run */
	uint64_t want_bb[PD_MAX_QPS], from_bb[PD_MAX_QPS];
};

struct pd_launch {
	struct pd_side side[2];
	uint32_t nsides;  /* 1 or 2 (both sides of a ping-pong in one process) */
	uint32_t ctas;    /* per side */
	uint32_t threads; /* per CTA */
	uint32_t rsvd;
};

#endif /* GNIC_PERF_DEV_H */
