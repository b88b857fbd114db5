/* SPDX-License-Identifier: MIT */
/*
 * The libgnic modes of gnic-perf (gpu, gpu-bf, cpu-assisted, cpu-proxy),
 * host side. Pieces:
 *   perf_gep.c          one side's libgnic objects: context, QPs, buffer, MR
 *   perf_proxy.c        the cpu-proxy thread
 *   perf_gnic.c         device resolution, launches, errors, dispatch
 *   perf_gnic_stream.c  put_bw, get_bw, atomic_rate, post_rate
 *   perf_gnic_pingpong.c put_lat, send_lat, signal_lat, get_lat
 *   perf_dev_cpu.c / perf_dev_gpu.cu  the device workers' runners
 */
#ifndef GNIC_PERF_GNIC_H
#define GNIC_PERF_GNIC_H

#include <gnic/gnic.h>

#include "perf.h"
#include "perf_dev.h"

struct perf_gep {
	enum perf_side side;
	bool on_gpu; /* device code runs on a GPU (perf_args.on_gpu) */
	struct gnic_ctx *ctx;
	struct gnic_qp *qp[PERF_MAX_QPS];
	struct gnic_dev_qp *dqp[PERF_MAX_QPS]; /* gnic_qp_dev(): a device pointer on a GPU */
	int nqps;
	/* the buffer: dev as registered and as device threads use it; host is
	 * the CPU's view (the same memory, or a staging copy of GPU memory) */
	uint8_t *dev, *host;
	size_t len;
	bool gpu_mem; /* dev is GPU memory */
	bool mapped;  /* dev is pinned host memory mapped into the GPU */
	struct gnic_mr *mr;
	struct gnic_rmem remote; /* the peer's buffer (our own for post_rate) */
	/* cpu-proxy: the device side (device memory) and host side of each ring */
	struct pp_ring *ring[PERF_MAX_QPS];
	struct pp_host *ring_host[PERF_MAX_QPS];
	/* device-accessible results of a launch */
	struct pd_status *st;
	uint64_t *lat;
	size_t lat_cap;
	uint64_t posted[PERF_MAX_QPS]; /* post_rate: BBs each QP has taken */
};

/* What the peer needs: one blob per QP and the buffer. */
struct perf_gep_info {
	uint32_t nqps;
	struct gnic_blob blob[PERF_MAX_QPS];
	struct gnic_rmem mem;
};
#define PERF_GEP_INFO_WIRE (4 + PERF_MAX_QPS * GNIC_BLOB_SIZE + 8 + 8 + 4)

static inline struct perf_gep *perf_ga(struct perf_session *s)
{
	return s->gep[PERF_A];
}

static inline struct perf_gep *perf_gb(struct perf_session *s)
{
	return s->gep[PERF_B];
}

/* perf_gep.c */
struct perf_gep *perf_gep_open(const struct perf_args *a, enum perf_side side, size_t len);
void perf_gep_info(const struct perf_gep *ep, struct perf_gep_info *info);
void perf_gep_connect(struct perf_gep *ep, const struct perf_gep_info *peer);
/* post_rate: QPs stay in RESET; the "peer" is our own buffer. */
void perf_gep_unconnected(struct perf_gep *ep);
void perf_gep_close(struct perf_gep *ep);
void perf_gep_info_encode(const struct perf_gep_info *info, uint8_t *wire);
void perf_gep_info_decode(const uint8_t *wire, struct perf_gep_info *info);
/* Staging: the host view of [off, off + len) to the device, or back. */
void perf_gep_push(struct perf_gep *ep, size_t off, size_t len);
void perf_gep_pull(struct perf_gep *ep, size_t off, size_t len);
/* Host memory on pages of its own (what CUDA copies from and to). */
void *perf_host_alloc(size_t len);
/* Device-accessible memory (GPU memory, or host memory on CPU threads). */
void *perf_devmem_alloc(const struct perf_args *a, size_t len);
void perf_devmem_free(const struct perf_args *a, void *p);
void perf_devmem_to_dev(const struct perf_args *a, void *dev, const void *host, size_t len);
void perf_devmem_to_host(const struct perf_args *a, void *host, const void *dev, size_t len);

/* perf_proxy.c: one thread per process serves every ring. */
void perf_proxy_start(int timeout_s);
/* Serve ring h for the proxy's QP qp (host memory; EXCLUSIVE, ours only).
 * post_only: the QP is not connected; retire WQEs as soon as they are rung. */
void perf_proxy_add(struct gnic_qp *qp, struct pp_host *h, uint8_t *lbase, uint32_t lkey,
                    uint64_t rbase, uint32_t rkey, bool post_only);
/* While active the proxy spins; otherwise it looks every 200 us. */
void perf_proxy_active(bool on);
void perf_proxy_stop(void);

/* perf_gnic.c */
/* After parsing: GPU or CPU threads, threads per CTA, CTA caps. */
void perf_gnic_resolve(struct perf_args *a);
/* Whether the current row can run (every QP has a CTA). */
bool perf_gnic_row_ok(const struct perf_args *a);
size_t perf_gnic_buffer_len(const struct perf_args *a);
uint32_t perf_gnic_sq_depth(const struct perf_args *a);
bool perf_gnic_exclusive(const struct perf_args *a);
/* Device threads of a row: ctas * threads (latency tests: 1). */
uint32_t perf_gnic_nthreads(const struct perf_args *a);
/* Iterations rounded up to a multiple of the device threads. */
long perf_gnic_round(const struct perf_args *a, long n);
/* A side of a launch: QPs, memory and layout of ep, test and scope. */
void perf_gnic_side(const struct perf_args *a, struct perf_gep *ep, struct pd_side *ps,
                    enum pd_test test, const struct perf_layout *l);
/* Runs it (GPU or CPU threads), checks every side's status (exits 1 with
 * where and what on a failure) and returns the elapsed ns. */
double perf_gnic_launch(const struct perf_args *a, struct perf_gep **eps, struct pd_launch *L);
/* Exits 1 if ep's status records a failure. */
void perf_gnic_check(const struct perf_args *a, struct perf_gep *ep);
/* Room for side ps's latency samples in ep; ps->lat points there. */
void perf_gnic_want_samples(const struct perf_args *a, struct perf_gep *ep, struct pd_side *ps);
/* The latency samples of side ps, as ns (halved when half_rtt), and the
 * elapsed time of the timed iterations. */
void perf_gnic_samples(const struct perf_args *a, struct perf_gep *ep, const struct pd_side *ps,
                       bool half_rtt, struct perf_result *r);
void perf_gnic_run(struct perf_session *s, const struct perf_test *t, size_t size,
                   struct perf_result *r);

/* perf_gnic_stream.c, perf_gnic_pingpong.c */
void perf_gnic_stream(struct perf_session *s, const struct perf_test *t, size_t size,
                      struct perf_result *r);
void perf_gnic_atomic(struct perf_session *s, struct perf_result *r);
void perf_gnic_post_rate(struct perf_session *s, size_t size, struct perf_result *r);
void perf_gnic_pingpong(struct perf_session *s, const struct perf_test *t, size_t size,
                        struct perf_result *r);
void perf_gnic_get_lat(struct perf_session *s, size_t size, struct perf_result *r);

/* perf_dev_cpu.c */
double perf_cpu_launch(const struct pd_launch *L);
void perf_cpu_post_check(const struct pd_side *s);

#endif /* GNIC_PERF_GNIC_H */
