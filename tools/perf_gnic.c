/* SPDX-License-Identifier: MIT */
/*
 * The libgnic modes (gpu, gpu-bf, cpu-assisted, cpu-proxy), host side: who
 * runs the device code (a GPU, or CPU threads when there is none), one
 * side's libgnic objects, and running a chunk of a test's device body.
 *
 * Where things live: on a GPU the QPs' device views are GPU memory (a GPU
 * context) and the buffer is GPU memory with a staging copy for the CPU,
 * or with --host-mem pinned host memory mapped into the GPU; cpu-proxy's
 * QPs are GNIC_DB_PROXY QPs of the same context (libgnic's proxy thread
 * posts for the device threads). Without a GPU everything is host memory.
 */
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static void check(gnic_status_t st, const char *what)
{
	if (st != GNIC_OK)
		perf_fatal("%s: %s: %s", what, gnic_strerror(st), gnic_last_error());
}

/* ---- the shape of the run ------------------------------------------------------------------ */

static bool streams(const struct perf_args *a)
{
	return a->test->kind != PERF_LAT;
}

/* CPU threads stand in for CTAs of one thread: cap and deduplicate. */
static void fit_cpu(struct perf_args *a)
{
	int n = 0;

	if (a->threads > 1)
		perf_note("no GPU: each CTA is one CPU thread (--threads %d applies on a GPU)",
		          a->threads);
	a->threads = 1;
	for (int i = 0; i < a->nctas; i++) {
		int c = a->ctas_list[i], dup = 0;

		if (c > PERF_CPU_MAX_CTAS)
			perf_note("no GPU: --ctas %d runs as %d CPU threads (the most gnic-perf "
			          "starts)",
			          c, PERF_CPU_MAX_CTAS);
		c = c > PERF_CPU_MAX_CTAS ? PERF_CPU_MAX_CTAS : c;
		for (int k = 0; k < n; k++)
			dup |= a->ctas_list[k] == c;
		if (!dup)
			a->ctas_list[n++] = c;
	}
	a->nctas = n;
	a->ctas = a->ctas_list[0];
}

/* A row needs a CTA for every QP (CTA c posts on QP c % qps). */
bool perf_gnic_row_ok(const struct perf_args *a)
{
	return !a->mode->gnic || !streams(a) || a->qps <= a->ctas;
}

static void check_rows(const struct perf_args *a)
{
	int ok = 0;

	for (int q = 0; q < a->nqps; q++)
		for (int c = 0; c < a->nctas; c++)
			if (a->qps_list[q] <= a->ctas_list[c])
				ok++;
			else
				perf_note("skipping --qp %d with --ctas %d: CTA c posts on QP c %% "
				          "qps, so every QP needs a CTA",
				          a->qps_list[q], a->ctas_list[c]);
	if (!ok)
		perf_usage_error("no row has --qp <= --ctas: every QP needs a CTA");
}

void perf_gnic_resolve(struct perf_args *a)
{
	int n = perf_gpu_count();

	if (n > 0 && a->gpu >= n)
		perf_usage_error("--gpu %d: this machine has %d CUDA device(s)", a->gpu, n);
	a->on_gpu = n > 0;
	if (a->on_gpu)
		perf_gpu_use(a->gpu, a->dev_name, sizeof(a->dev_name));
	else
		snprintf(a->dev_name, sizeof(a->dev_name), "CPU threads (no GPU)");
	if (!a->on_gpu && (a->host_mem || a->set & PERF_SET_GPU))
		perf_note("no GPU: --host-mem and --gpu do not apply");
	a->host_mem |= a->on_gpu && a->test->flags & PERF_F_HOSTMEM;
	if (a->server) /* the client's shape, adopted */
		return;
	if (!a->on_gpu)
		fit_cpu(a);
	else if (!a->threads) /* eth_echo: a warp drives a CTA's queue */
		a->threads = a->test->flags & PERF_F_ETH ? 32 : streams(a) ? 128 : 1;
	if (a->on_gpu && a->threads > perf_gpu_max_threads())
		perf_usage_error("--threads %d: gnic-perf's kernel runs at most %d threads per CTA "
		                 "on this GPU (its registers)",
		                 a->threads, perf_gpu_max_threads());
	if (streams(a))
		check_rows(a);
	if (!a->tx_depth) /* a CTA-scope reservation takes at most half the SQ */
		for (a->tx_depth = 1024; a->tx_depth < 2 * a->threads; a->tx_depth *= 2)
			;
	if (perf_list_max(a->scopes, a->nscopes) == PERF_SCOPE_CTA && a->tx_depth < 2 * a->threads)
		perf_usage_error("--tx-depth %d: CTA scope reserves %d WQEs at once; the SQ needs "
		                 "at least twice that",
		                 a->tx_depth, a->threads);
}

uint32_t perf_writers(const struct perf_args *a)
{
	if (!a->mode->gnic)
		return (uint32_t)a->qps;
	return streams(a) ? (uint32_t)a->ctas * (uint32_t)a->threads : 1;
}

long perf_granule(const struct perf_args *a)
{
	return a->mode->gnic ? (long)perf_writers(a) : 1;
}

/* ---- memory ------------------------------------------------------------------------------- */

/* Device-accessible memory: GPU memory, or host memory on CPU threads. */
static void *devmem_alloc(bool on_gpu, size_t len)
{
	return on_gpu ? perf_gpu_alloc(len, 0) : perf_alloc(len);
}

static void devmem_free(bool on_gpu, void *p, size_t len)
{
	if (on_gpu)
		perf_gpu_free(p, 0);
	else
		perf_free(p, len);
}

static void devmem_copy(bool on_gpu, void *dst, const void *src, size_t len, int to_dev)
{
	if (on_gpu)
		perf_gpu_copy(dst, src, len, to_dev);
	else if (dst != src)
		memcpy(dst, src, len);
}

void perf_ep_push(struct perf_ep *ep, size_t off, size_t len)
{
	if (ep->gpu_mem && len)
		perf_gpu_copy(ep->dev + off, ep->buf + off, len, 1);
}

void perf_ep_pull(struct perf_ep *ep, size_t off, size_t len)
{
	if (ep->gpu_mem && len)
		perf_gpu_copy(ep->buf + off, ep->dev + off, len, 0);
}

/* The device views of ep's Ethernet queues, as an array device code reads. */
void perf_ep_eth_dev(struct perf_ep *ep)
{
	struct gnic_dev_eth **v = calloc((size_t)ep->neth, sizeof(*v));

	if (!v)
		perf_fatal("out of memory");
	for (int c = 0; c < ep->neth; c++)
		v[c] = gnic_eth_dev(ep->eth[c]);
	ep->deth = devmem_alloc(ep->on_gpu, (size_t)ep->neth * sizeof(*v));
	devmem_copy(ep->on_gpu, ep->deth, v, (size_t)ep->neth * sizeof(*v), 1);
	free(v);
}

/* ---- one side ------------------------------------------------------------------------------- */

static struct perf_ep *perf_gnic_open(const struct perf_args *a, enum perf_side side, size_t len)
{
	struct perf_ep *ep = calloc(1, sizeof(*ep));
	struct gnic_ctx_attr ca;
	struct gnic_qp_attr qa;

	if (!ep)
		perf_fatal("out of memory");
	ep->side = side;
	ep->on_gpu = a->on_gpu;
	gnic_ctx_attr_init(&ca);
	ca.device = a->device[0] ? a->device : NULL;
	ca.gpu = a->on_gpu ? a->gpu : GNIC_GPU_NONE;
	check(gnic_ctx_create(&ca, &ep->gctx), "gnic_ctx_create");
	gnic_qp_attr_init(&qa);
	qa.db_mode = (enum gnic_db_mode)a->mode->db_mode;
	/* one poster per QP: latency tests */
	qa.share = !streams(a) ? GNIC_SHARE_EXCLUSIVE : GNIC_SHARE_GPU;
	qa.sq_depth = (uint32_t)a->tx_depth;
	qa.timeout_ns = (uint64_t)a->timeout_s * 1000000000ull;
	if (!(a->test->flags & PERF_F_RECV))
		qa.rq_depth = 0;
	ep->nqps = perf_list_max(a->qps_list, a->nqps);
	check(gnic_qp_group_create(ep->gctx, &qa, (uint32_t)ep->nqps, &ep->group),
	      "gnic_qp_group_create");
	ep->dqp = gnic_qp_group_dev(ep->group);
	ep->len = len;
	ep->mapped = a->on_gpu && a->host_mem;
	ep->gpu_mem = a->on_gpu && !a->host_mem;
	ep->dev = a->on_gpu ? perf_gpu_alloc(len, ep->mapped) : perf_alloc(len);
	ep->buf = ep->gpu_mem ? perf_alloc(len) : ep->dev; /* mapped: one address (UVA) */
	check(gnic_mr_reg(ep->gctx, ep->dev, len, GNIC_ACCESS_ALL, &ep->gmr), "gnic_mr_reg");
	ep->st = devmem_alloc(a->on_gpu, sizeof(*ep->st));
	ep->bb = devmem_alloc(a->on_gpu, 2 * sizeof(*ep->bb) * (size_t)ep->nqps);
	return ep;
}

static void perf_gnic_info(const struct perf_ep *ep, struct perf_ep_info *info)
{
	struct gnic_rmem m;

	info->nqps = (uint32_t)ep->nqps;
	check(gnic_qp_group_export(ep->group, info->blob), "gnic_qp_group_export");
	gnic_mr_rmem(ep->gmr, &m);
	info->addr = m.addr;
	info->len = m.len;
	info->rkey = m.rkey;
}

/* peer NULL: "the peer" is our own buffer, and the QPs stay in RESET, but
 * for GNIC_DB_PROXY QPs, which loop back to themselves: the proxy needs
 * completions to free ring and SQ space; and PERF_F_LOOPBACK's, which do
 * too (dma_bw copies through them). */
static void perf_gnic_connect(struct perf_ep *ep, const struct perf_args *a,
                              const struct perf_ep_info *peer)
{
	struct perf_ep_info own;

	if (!peer)
		perf_gnic_info(ep, &own);
	else if (peer->nqps != (uint32_t)ep->nqps)
		perf_fatal("the peer has %u QPs, this side %d", peer->nqps, ep->nqps);
	if (peer || a->mode->db_mode == GNIC_DB_PROXY || a->test->flags & PERF_F_LOOPBACK)
		check(gnic_qp_group_connect(ep->group, peer ? peer->blob : own.blob),
		      "gnic_qp_group_connect");
	peer = peer ? peer : &own;
	ep->raddr = peer->addr;
	ep->rkey = peer->rkey;
}

static void perf_gnic_close(struct perf_ep *ep)
{
	for (int c = 0; c < ep->neth; c++)
		gnic_eth_destroy(ep->eth[c]);
	free(ep->eth);
	if (ep->deth)
		devmem_free(ep->on_gpu, ep->deth, (size_t)ep->neth * sizeof(*ep->deth));
	gnic_mr_dereg(ep->gmr);
	gnic_qp_group_destroy(ep->group);
	gnic_ctx_destroy(ep->gctx);
	devmem_free(ep->on_gpu, ep->st, sizeof(*ep->st));
	devmem_free(ep->on_gpu, ep->bb, 2 * sizeof(*ep->bb) * (size_t)ep->nqps);
	if (ep->lat)
		devmem_free(ep->on_gpu, ep->lat, ep->lat_cap * sizeof(*ep->lat));
	if (ep->on_gpu)
		perf_gpu_free(ep->dev, ep->mapped);
	else
		perf_free(ep->dev, ep->len);
	if (ep->gpu_mem)
		perf_free(ep->buf, ep->len);
	free(ep);
}

static void perf_gnic_env(struct perf_session *s)
{
	struct perf_ep *ep = s->ep[PERF_A] ? s->ep[PERF_A] : s->ep[PERF_B];
	struct gnic_ctx_info info;

	if (gnic_ctx_query(ep->gctx, &info) != GNIC_OK)
		return;
	snprintf(s->nic, sizeof(s->nic), "%s", info.device);
	snprintf(s->lib, sizeof(s->lib), "%s (loaded by libgnic)", info.provider_lib);
	s->emu = info.provider == GNIC_PROVIDER_EMU;
}

const struct perf_backend perf_gnic_ops = {perf_gnic_open, perf_gnic_info, perf_gnic_connect,
                                           perf_gnic_close, perf_gnic_env};

/* ---- a device thread's failure as one line --------------------------------------------------- */

static void describe(const struct pd_status *st, int side, char *buf, size_t cap)
{
#define PD_TEXT(name, text) text,
	static const char *const ops[] = {"?", PD_OPS(PD_TEXT)};
	static const char *const bad[] = {PD_BADS(PD_TEXT)};
	const char *what =
	    st->rc > PD_BAD_BASE && st->rc < PD_PEER_FAILED ? bad[st->rc - PD_BAD_DATA]
	    : st->rc == GNIC_DEV_ERR_CQE     ? "GNIC_DEV_ERR_CQE (an error completion)"
	    : st->rc == GNIC_DEV_ERR_TIMEOUT ? "GNIC_DEV_ERR_TIMEOUT (a wait ran out)"
	    : st->rc == GNIC_DEV_ERR_INVAL   ? "GNIC_DEV_ERR_INVAL (bad argument)"
	    : st->rc == GNIC_DEV_ERR_QP      ? "GNIC_DEV_ERR_QP (the QP failed earlier)"
	                                     : "unknown status";

	snprintf(buf, cap, "side %c, %s on QP %u, iteration %lld: %s", side ? 'B' : 'A',
	         st->op > 0 && st->op < PD_NOPS ? ops[st->op] : "?", st->q, (long long)st->iter,
	         what);
	if (st->rc > PD_BAD_BASE && st->rc < PD_PEER_FAILED)
		snprintf(buf + strlen(buf), cap - strlen(buf),
		         " (at %lld: %llu = 0x%llx, expected %llu = 0x%llx)", (long long)st->off,
		         (unsigned long long)st->got, (unsigned long long)st->got,
		         (unsigned long long)st->want, (unsigned long long)st->want);
}

/* Exits with what failed where (and libgnic's record of the QP error). */
static void check_side(const struct perf_run *r, struct perf_ep *ep, struct pd_status *st)
{
	struct gnic_qp_error e;
	char what[320];

	devmem_copy(ep->on_gpu, st, ep->st, sizeof(*st), 0);
	if (!st->rc)
		return;
	describe(st, ep->side, what, sizeof(what));
	if (r->t->explain)
		r->t->explain(r);
	if (st->rc > PD_BAD_DATA && st->q < (uint32_t)ep->nqps &&
	    gnic_qp_error(gnic_qp_group_qp(ep->group, st->q), &e) == GNIC_OK && e.dev_status)
		perf_fatal("%s (mode %s; QP error: %s)", what, r->a->mode->name, e.text);
	perf_fatal("%s (mode %s)", what, r->a->mode->name);
}

/* ---- running a chunk ------------------------------------------------------------------------- */

static void side_init(struct perf_run *r, struct perf_ep *ep, struct pd_side *ps, uint32_t phase)
{
	const struct perf_args *a = r->a;

	memset(ps, 0, sizeof(*ps));
	ps->nqps = (uint32_t)a->qps;
	ps->qp = ep->dqp;
	ps->eth = ep->deth;
	ps->bb = ep->bb;
	if (phase && r->t->flags & PERF_F_UNCONNECTED) { /* post_rate's check */
		static uint64_t bb[2 * PERF_MAX_QPS];

		for (int q = 0; q < a->qps; q++) {
			bb[2 * q] = ep->posted[q];
			bb[2 * q + 1] = ep->posted_row[q];
		}
		devmem_copy(ep->on_gpu, ep->bb, bb, 2 * sizeof(*bb) * (size_t)a->qps, 1);
	}
	ps->r = r->ring;
	ps->lbase = ep->dev;
	ps->rbase = ep->raddr;
	ps->lkey = gnic_mr_lkey(ep->gmr);
	ps->rkey = ep->rkey;
	ps->first = r->first;
	ps->count = r->count;
	ps->stop = r->stop;
	ps->st = ep->st;
	ps->timeout_ns = (uint64_t)a->timeout_s * 1000000000ull;
	ps->side = ep->side;
	ps->test = r->t->id;
	ps->phase = phase;
	ps->scope = (uint32_t)a->scope;
	ps->validate = a->validate;
	if (ep->side == PERF_A && r->t->kind == PERF_LAT && !phase) {
		if (ep->lat_cap < (size_t)r->count) {
			if (ep->lat)
				devmem_free(ep->on_gpu, ep->lat, ep->lat_cap * sizeof(*ep->lat));
			ep->lat_cap = (size_t)r->count;
			ep->lat = devmem_alloc(ep->on_gpu, ep->lat_cap * sizeof(*ep->lat));
		}
		ps->lat = ep->lat;
	}
}

/* Side A's samples as ns: GPU samples are SM cycles, converted with the
 * ns/cycle ratio of the whole run. */
static void samples(struct perf_run *r, struct perf_ep *ep, const struct pd_status *st)
{
	uint64_t *raw = perf_alloc((size_t)r->count * sizeof(*raw));
	double scale = 1.0, half = r->t->flags & PERF_F_HALF_RTT ? 2 : 1;

	devmem_copy(ep->on_gpu, raw, ep->lat, (size_t)r->count * sizeof(*raw), 0);
	if (st->c_end > st->c_start && st->t_end > st->t_start)
		scale = (double)(st->t_end - st->t_start) / (double)(st->c_end - st->c_start);
	for (long i = 0; i < r->count; i++)
		r->lat[i] = (double)raw[i] * scale / half;
	r->ns = (double)(st->t_end - st->t_start);
	perf_free(raw, (size_t)r->count * sizeof(*raw));
}

void perf_dev_run(struct perf_run *r, unsigned mask, uint32_t phase)
{
	const struct perf_args *a = r->a;
	bool one = r->t->kind == PERF_LAT || phase;
	struct pd_launch L = {.ctas = one ? 1 : (uint32_t)a->ctas,
	                      .threads = one ? 1 : (uint32_t)a->threads};
	static const struct pd_status zero;
	struct pd_status st[2];
	struct perf_ep *eps[2];
	double ns = 0;

	for (int side = PERF_A; side <= PERF_B; side++)
		if (r->ep[side] && mask & (1u << side)) {
			side_init(r, r->ep[side], &L.side[L.nsides], phase);
			devmem_copy(a->on_gpu, r->ep[side]->st, &zero, sizeof(zero), 1);
			eps[L.nsides++] = r->ep[side];
		}
	if (L.nsides == 2) { /* a side that fails ends the other's waits */
		L.side[0].peer_st = L.side[1].st;
		L.side[1].peer_st = L.side[0].st;
	}
	if (L.nsides)
		ns = a->on_gpu ? perf_gpu_launch(&L) : perf_cpu_launch(&L);
	for (uint32_t k = 0; k < L.nsides; k++)
		check_side(r, eps[k], &st[k]);
	r->ns = ns;
	if (L.nsides && eps[0]->side == PERF_A && L.side[0].lat)
		samples(r, eps[0], &st[0]);
}
