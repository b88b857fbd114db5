/* SPDX-License-Identifier: MIT */
/*
 * One side's libgnic objects in the libgnic modes: a context, the QPs
 * device threads post on, one registered buffer, and for cpu-proxy the
 * hand-off rings.
 *
 * Where things live:
 *   gpu, gpu-bf, cpu-assisted on a GPU: a GPU context (the QPs' device views
 *     in GPU memory); the buffer in GPU memory, or with --host-mem in pinned
 *     host memory mapped into the GPU.
 *   cpu-proxy: a context without GPU (gpu = GNIC_GPU_NONE) whatever runs the
 *     device code: the proxy is a CPU thread and drives the QPs with the C
 *     build of gnic_dev.cuh (see perf_proxy.c); the rings are pinned host
 *     memory plus a reservation counter in GPU memory.
 *   CPU threads (no GPU): everything in host memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_gnic.h"
#include "perf_gpu.h"

static void check(gnic_status_t st, const char *what)
{
	if (st != GNIC_OK)
		perf_fatal("%s: %s: %s", what, gnic_strerror(st), gnic_last_error());
}

/* ---- host memory the CUDA runtime copies from or to ---------------------------
 * On pages of its own: libgnic registers the pages of the queues it maps into
 * the GPU (cuMemHostRegister), and a heap buffer that starts on such a page
 * looks registered to cudaMemcpy, which then refuses the copy as reaching
 * past the registration (cudaErrorInvalidValue, seen on an H200). */
void *perf_host_alloc(size_t len)
{
	size_t page = 4096, n = (len + page - 1) / page * page;
	void *p;

	if (posix_memalign(&p, page, n ? n : page))
		perf_fatal("cannot allocate %zu bytes", len);
	memset(p, 0, n);
	return p;
}

/* ---- device-accessible memory ------------------------------------------------ */

void *perf_devmem_alloc(const struct perf_args *a, size_t len)
{
	void *p = NULL;

	if (a->on_gpu)
		return perf_gpu_alloc(len, 0);
	if (posix_memalign(&p, 4096, len < 4096 ? 4096 : len))
		perf_fatal("cannot allocate %zu bytes", len);
	memset(p, 0, len);
	return p;
}

void perf_devmem_free(const struct perf_args *a, void *p)
{
	if (a->on_gpu)
		perf_gpu_free(p, 0);
	else
		free(p);
}

void perf_devmem_to_dev(const struct perf_args *a, void *dev, const void *host, size_t len)
{
	if (a->on_gpu)
		perf_gpu_to_dev(dev, host, len);
	else if (dev != host)
		memcpy(dev, host, len);
}

void perf_devmem_to_host(const struct perf_args *a, void *host, const void *dev, size_t len)
{
	if (a->on_gpu)
		perf_gpu_to_host(host, dev, len);
	else if (dev != host)
		memcpy(host, dev, len);
}

/* ---- the buffer ------------------------------------------------------------------ */

static void make_buffer(struct perf_gep *ep, const struct perf_args *a, size_t len)
{
	void *p;

	ep->len = len;
	if (a->on_gpu) { /* a staging copy of GPU memory, or one mapped buffer */
		ep->mapped = a->host_mem;
		ep->gpu_mem = !a->host_mem;
		ep->dev = perf_gpu_alloc(len, ep->mapped);
		if (ep->mapped) {
			ep->host = ep->dev; /* same address on both sides (UVA) */
		} else {
			ep->host = perf_host_alloc(len);
		}
	} else {
		if (posix_memalign(&p, 4096, len))
			perf_fatal("cannot allocate a %zu-byte buffer", len);
		memset(p, 0, len); /* fault the pages in before anything is timed */
		ep->dev = ep->host = p;
	}
	check(gnic_mr_reg(ep->ctx, ep->dev, len, GNIC_ACCESS_ALL, &ep->mr), "gnic_mr_reg");
}

void perf_gep_push(struct perf_gep *ep, size_t off, size_t len)
{
	if (ep->gpu_mem && len)
		perf_gpu_to_dev(ep->dev + off, ep->host + off, len);
}

void perf_gep_pull(struct perf_gep *ep, size_t off, size_t len)
{
	if (ep->gpu_mem && len)
		perf_gpu_to_host(ep->host + off, ep->dev + off, len);
}

/* ---- context and QPs --------------------------------------------------------------- */

static void make_ctx(struct perf_gep *ep, const struct perf_args *a)
{
	struct gnic_ctx_attr ca;

	gnic_ctx_attr_init(&ca);
	ca.device = a->device[0] ? a->device : NULL;
	/* the proxy's QPs are driven by a CPU thread: no GPU in its context */
	ca.gpu = a->on_gpu && !a->mode->proxy ? a->gpu : GNIC_GPU_NONE;
	check(gnic_ctx_create(&ca, &ep->ctx), "gnic_ctx_create");
}

static void qp_attr(const struct perf_args *a, struct gnic_qp_attr *qa)
{
	gnic_qp_attr_init(qa);
	qa->db_mode = (enum gnic_db_mode)a->mode->db_mode;
	qa->share = perf_gnic_exclusive(a) ? GNIC_SHARE_EXCLUSIVE : GNIC_SHARE_GPU;
	qa->sq_depth = perf_gnic_sq_depth(a);
	qa->timeout_ns = (uint64_t)a->timeout_s * 1000000000ull;
	if (a->test->id != PERF_SEND_LAT)
		qa->rq_depth = 0; /* only send_lat receives */
}

/* cpu-proxy: ring q's host part (pinned, mapped) and device part. */
static void make_ring(struct perf_gep *ep, const struct perf_args *a, int q)
{
	struct pp_ring init = {.nslots = PP_SLOTS};
	struct pp_host *h;

	if (a->on_gpu) {
		h = perf_gpu_alloc(sizeof(*h), 1);
	} else if (posix_memalign((void **)&h, 64, sizeof(*h))) {
		perf_fatal("cannot allocate a proxy ring");
	}
	memset(h, 0, sizeof(*h));
	init.h = h;
	ep->ring_host[q] = h;
	ep->ring[q] = perf_devmem_alloc(a, sizeof(struct pp_ring));
	perf_devmem_to_dev(a, ep->ring[q], &init, sizeof(init));
}

struct perf_gep *perf_gep_open(const struct perf_args *a, enum perf_side side, size_t len)
{
	struct perf_gep *ep = calloc(1, sizeof(*ep));
	struct gnic_qp_attr qa;

	if (!ep)
		perf_fatal("out of memory");
	ep->side = side;
	ep->on_gpu = a->on_gpu;
	make_ctx(ep, a);
	qp_attr(a, &qa);
	ep->nqps = perf_list_max(a->qps_list, a->nqps);
	for (int q = 0; q < ep->nqps; q++) {
		check(gnic_qp_create(ep->ctx, &qa, &ep->qp[q]), "gnic_qp_create");
		ep->dqp[q] = gnic_qp_dev(ep->qp[q]);
		if (a->mode->proxy)
			make_ring(ep, a, q);
	}
	make_buffer(ep, a, len);
	ep->st = perf_devmem_alloc(a, sizeof(*ep->st));
	return ep;
}

void perf_gep_info(const struct perf_gep *ep, struct perf_gep_info *info)
{
	memset(info, 0, sizeof(*info));
	info->nqps = (uint32_t)ep->nqps;
	for (int q = 0; q < ep->nqps; q++)
		check(gnic_qp_export(ep->qp[q], &info->blob[q]), "gnic_qp_export");
	gnic_mr_rmem(ep->mr, &info->mem);
}

/* The proxy serves our rings once it knows where the peer's buffer is. */
static void add_to_proxy(struct perf_gep *ep, bool post_only)
{
	for (int q = 0; q < ep->nqps && ep->ring_host[q]; q++)
		perf_proxy_add(ep->qp[q], ep->ring_host[q], ep->dev, gnic_mr_lkey(ep->mr),
		               ep->remote.addr, ep->remote.rkey, post_only);
}

void perf_gep_connect(struct perf_gep *ep, const struct perf_gep_info *peer)
{
	if (peer->nqps != (uint32_t)ep->nqps)
		perf_fatal("the peer has %u QPs, this side %d", peer->nqps, ep->nqps);
	for (int q = 0; q < ep->nqps; q++)
		check(gnic_qp_connect(ep->qp[q], &peer->blob[q]), "gnic_qp_connect");
	ep->remote = peer->mem;
	add_to_proxy(ep, false);
}

void perf_gep_unconnected(struct perf_gep *ep)
{
	gnic_mr_rmem(ep->mr, &ep->remote);
	add_to_proxy(ep, true);
}

void perf_gep_close(struct perf_gep *ep)
{
	struct perf_args a = {.on_gpu = false};

	if (!ep)
		return;
	a.on_gpu = ep->on_gpu;
	gnic_mr_dereg(ep->mr);
	for (int q = 0; q < ep->nqps; q++) {
		gnic_qp_destroy(ep->qp[q]);
		if (ep->ring[q]) {
			perf_devmem_free(&a, ep->ring[q]);
			if (a.on_gpu)
				perf_gpu_free(ep->ring_host[q], 1);
			else
				free(ep->ring_host[q]);
		}
	}
	gnic_ctx_destroy(ep->ctx);
	perf_devmem_free(&a, ep->st);
	perf_devmem_free(&a, ep->lat);
	if (a.on_gpu) {
		perf_gpu_free(ep->dev, ep->mapped);
		if (ep->gpu_mem)
			free(ep->host);
	} else {
		free(ep->dev);
	}
	free(ep);
}

void perf_gep_info_encode(const struct perf_gep_info *info, uint8_t *wire)
{
	uint8_t *pos = wire;

	perf_put32(&pos, info->nqps);
	for (int q = 0; q < PERF_MAX_QPS; q++) {
		memcpy(pos, info->blob[q].bytes, GNIC_BLOB_SIZE);
		pos += GNIC_BLOB_SIZE;
	}
	perf_put64(&pos, info->mem.addr);
	perf_put64(&pos, info->mem.len);
	perf_put32(&pos, info->mem.rkey);
}

void perf_gep_info_decode(const uint8_t *wire, struct perf_gep_info *info)
{
	const uint8_t *pos = wire;

	memset(info, 0, sizeof(*info));
	info->nqps = perf_get32(&pos);
	if (info->nqps < 1 || info->nqps > PERF_MAX_QPS)
		perf_fatal("the peer announced %u QPs (1 to %d)", info->nqps, PERF_MAX_QPS);
	for (int q = 0; q < PERF_MAX_QPS; q++) {
		memcpy(info->blob[q].bytes, pos, GNIC_BLOB_SIZE);
		pos += GNIC_BLOB_SIZE;
	}
	info->mem.addr = perf_get64(&pos);
	info->mem.len = perf_get64(&pos);
	info->mem.rkey = perf_get32(&pos);
}
