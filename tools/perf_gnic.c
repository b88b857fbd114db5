/* SPDX-License-Identifier: MIT */
/*
 * The libgnic modes, common part: who runs the device code (a GPU, or CPU
 * threads when there is none), the shape of each row, building and running
 * a launch, and turning a device thread's failure into one clear line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_gnic.h"
#include "perf_gpu.h"

static bool streams(const struct perf_args *a)
{
	return a->test->kind == PERF_KIND_BW || a->test->kind == PERF_KIND_ATOMIC ||
	       a->test->kind == PERF_KIND_POST;
}

/* CPU threads stand in for CTAs of one thread: cap and deduplicate. */
static void fit_cpu(struct perf_args *a)
{
	int n = 0;

	if (a->threads_set && a->threads > 1)
		fprintf(stderr,
		        "gnic-perf: note: no GPU: each CTA is one CPU thread (--threads %d "
		        "applies on a GPU)\n",
		        a->threads);
	a->threads = 1;
	for (int i = 0; i < a->nctas; i++) {
		int c = a->ctas_list[i];
		bool dup = false;

		if (c > PERF_CPU_MAX_CTAS) {
			fprintf(stderr,
			        "gnic-perf: note: no GPU: --ctas %d runs as %d CPU threads (the "
			        "most gnic-perf starts)\n",
			        c, PERF_CPU_MAX_CTAS);
			c = PERF_CPU_MAX_CTAS;
		}
		for (int k = 0; k < n; k++)
			dup |= a->ctas_list[k] == c;
		if (!dup)
			a->ctas_list[n++] = c;
	}
	a->nctas = n;
	a->ctas = a->ctas_list[0];
}

static void pick_device(struct perf_args *a)
{
	int n = perf_gpu_count();

	if (n > 0 && a->gpu >= n)
		perf_usage_error("--gpu %d: this machine has %d CUDA device%s", a->gpu, n,
		                 n == 1 ? "" : "s");
	a->on_gpu = n > 0;
	if (a->on_gpu) {
		perf_gpu_use(a->gpu, a->dev_name, sizeof(a->dev_name));
		return;
	}
	snprintf(a->dev_name, sizeof(a->dev_name), "CPU threads (no GPU)");
	if (a->host_mem || a->gpu_set)
		fprintf(stderr, "gnic-perf: note: no GPU: --host-mem / --gpu do not apply\n");
}

/* A row needs a CTA for every QP (CTA c posts on QP c % qps). */
bool perf_gnic_row_ok(const struct perf_args *a)
{
	return !streams(a) || a->qps <= a->ctas;
}

static void check_rows(const struct perf_args *a)
{
	int ok = 0;

	for (int q = 0; q < a->nqps; q++)
		for (int c = 0; c < a->nctas; c++) {
			if (a->qps_list[q] <= a->ctas_list[c])
				ok++;
			else if (!a->server)
				fprintf(stderr,
				        "gnic-perf: note: skipping --qps %d with --ctas %d: CTA c "
				        "posts on QP c %% qps, so every QP needs a CTA\n",
				        a->qps_list[q], a->ctas_list[c]);
		}
	if (!ok)
		perf_usage_error("no row has --qps <= --ctas: CTA c posts on QP c %% qps, so every "
		                 "QP needs a CTA");
}

void perf_gnic_resolve(struct perf_args *a)
{
	pick_device(a);
	if (a->server) /* the client's shape, already resolved */
		return;
	if (!a->on_gpu)
		fit_cpu(a);
	else if (!a->threads)
		a->threads = streams(a) ? 128 : 1;
	if (a->on_gpu && a->threads > perf_gpu_max_threads())
		perf_usage_error(
		    "--threads %d: gnic-perf's kernel runs at most %d threads per CTA on "
		    "this GPU (its registers)",
		    a->threads, perf_gpu_max_threads());
	if (!streams(a))
		return;
	check_rows(a);
	if (a->depth_set && perf_list_max(a->scopes, a->nscopes) == PERF_SCOPE_CTA &&
	    a->tx_depth < 2 * a->threads)
		perf_usage_error("--tx-depth %d: CTA scope reserves %d WQEs at once; the SQ needs "
		                 "at least twice that",
		                 a->tx_depth, a->threads);
}

uint32_t perf_gnic_nthreads(const struct perf_args *a)
{
	return streams(a) ? (uint32_t)a->ctas * (uint32_t)a->threads : 1;
}

long perf_gnic_round(const struct perf_args *a, long n)
{
	long t = (long)perf_gnic_nthreads(a);

	return (n + t - 1) / t * t;
}

uint32_t perf_gnic_sq_depth(const struct perf_args *a)
{
	uint32_t d = 1024;

	if (a->depth_set)
		return (uint32_t)a->tx_depth;
	while (d < 2u * (uint32_t)a->threads) /* a CTA-scope reservation: half the SQ */
		d *= 2;
	return d;
}

/* One poster per QP: latency tests, and the proxy (its own QPs). */
bool perf_gnic_exclusive(const struct perf_args *a)
{
	return a->mode->proxy || a->test->kind == PERF_KIND_LAT;
}

/* The largest layout any row needs (every combination of the lists). */
size_t perf_gnic_buffer_len(const struct perf_args *a)
{
	struct perf_args row = *a;
	size_t len = 4096;

	for (int c = 0; c < a->nctas; c++) {
		row.ctas = a->ctas_list[c];
		for (int i = 0; i < a->nsizes; i++) {
			long total =
			    perf_gnic_round(&row, a->iters) + perf_gnic_round(&row, a->warmup);
			struct perf_layout l;

			if (a->test->kind == PERF_KIND_ATOMIC)
				perf_layout_atomic(&l, 1, 1);
			else if (a->test->kind == PERF_KIND_LAT)
				perf_layout_pingpong(&l, a->sizes[i]);
			else
				perf_layout_stream(&l, a->sizes[i], (int)perf_gnic_nthreads(&row),
				                   total);
			if (l.total + 64 > len) /* + the signal word */
				len = l.total + 64;
		}
	}
	if (len > PERF_MAX_DEV_BUF)
		perf_usage_error("this sweep needs a %zu MiB buffer per side (at most %lu): one "
		                 "slot per device thread and size; use fewer CTAs or threads, or "
		                 "smaller sizes",
		                 len >> 20, PERF_MAX_DEV_BUF >> 20);
	return len;
}

void perf_gnic_side(const struct perf_args *a, struct perf_gep *ep, struct pd_side *ps,
                    enum pd_test test, const struct perf_layout *l)
{
	memset(ps, 0, sizeof(*ps));
	ps->nqps = (uint32_t)a->qps;
	for (int q = 0; q < a->qps; q++) {
		if (a->mode->proxy)
			ps->qp[q].ring = ep->ring[q];
		else
			ps->qp[q].qp = ep->dqp[q];
	}
	ps->mem = (struct pd_mem){.lbase = ep->dev,
	                          .rbase = ep->remote.addr,
	                          .lkey = gnic_mr_lkey(ep->mr),
	                          .rkey = ep->remote.rkey};
	ps->l = (struct pd_layout){.size = l->size,
	                           .stride = l->stride,
	                           .src_off = l->src_off,
	                           .dst_off = l->dst_off,
	                           .nq = l->nqps,
	                           .nslots = l->nslots,
	                           .nsrc = l->nsrc};
	ps->sig_off = l->total; /* the buffer has 64 bytes past every layout */
	ps->st = ep->st;
	ps->timeout_ns = (uint64_t)a->timeout_s * 1000000000ull;
	ps->side = ep->side;
	ps->test = test;
	ps->scope = (uint32_t)a->scope;
	ps->validate = a->validate;
}

/* ---- failures ------------------------------------------------------------------- */

static const char *op_name(int op)
{
	static const char *const names[] = {"?",          "put",           "get",
	                                    "put_signal", "add",           "fetch-add",
	                                    "send",       "receive post",  "receive wait",
	                                    "quiet",      "wait for data", "wait for signal",
	                                    "retire",     "check"};

	return op > 0 && op < (int)(sizeof(names) / sizeof(names[0])) ? names[op] : "?";
}

static const char *dev_status_name(int rc)
{
	switch (rc) {
	case GNIC_DEV_ERR_CQE:
		return "GNIC_DEV_ERR_CQE (an error completion)";
	case GNIC_DEV_ERR_TIMEOUT:
		return "GNIC_DEV_ERR_TIMEOUT (a bounded wait ran out)";
	case GNIC_DEV_ERR_INVAL:
		return "GNIC_DEV_ERR_INVAL (bad argument)";
	case GNIC_DEV_ERR_QP:
		return "GNIC_DEV_ERR_QP (the QP failed earlier)";
	default:
		return "unknown status";
	}
}

static const char *const counter_names[] = {"sq_reserved", "sq_ready",          "sq_rung",
                                            "sq_retired",  "CPU doorbell word", "doorbell record"};
static const char *const wqe_fields[] = {"ctrl word 0 (index, opcode)",
                                         "ctrl word 1 (QPN, ds)",
                                         "byte count",
                                         "lkey",
                                         "rkey",
                                         "remote offset",
                                         "local offset"};

static void describe(const struct pd_status *st, enum perf_side side, char *buf, size_t cap)
{
	char c = side == PERF_A ? 'A' : 'B';

	switch (st->rc) {
	case PD_BAD_DATA:
		snprintf(
		    buf, cap,
		    "data mismatch on side %c in message %lld: byte %lld is 0x%02llx, expected "
		    "0x%02llx",
		    c, (long long)st->iter, (long long)st->off, (unsigned long long)st->got,
		    (unsigned long long)st->want);
		break;
	case PD_BAD_LEN:
		snprintf(buf, cap, "side %c: receive %lld has %llu bytes, sent %llu", c,
		         (long long)st->iter, (unsigned long long)st->got,
		         (unsigned long long)st->want);
		break;
	case PD_BAD_SIGNAL:
		snprintf(buf, cap,
		         "side %c: the signal word is %llu after message %lld, expected %llu", c,
		         (unsigned long long)st->got, (long long)st->iter,
		         (unsigned long long)st->want);
		break;
	case PD_BAD_FETCH:
		snprintf(buf, cap, "fetch-add %lld fetched 0x%llx, the counter held 0x%llx",
		         (long long)st->iter, (unsigned long long)st->got,
		         (unsigned long long)st->want);
		break;
	case PD_BAD_COUNTER:
		snprintf(buf, cap, "post_rate: QP %u %s is %llu, expected %llu", st->q,
		         st->off >= 0 && st->off < 6 ? counter_names[st->off] : "?",
		         (unsigned long long)st->got, (unsigned long long)st->want);
		break;
	case PD_BAD_WQE:
		snprintf(buf, cap, "post_rate: QP %u WQE at BB %lld: %s is 0x%llx, expected 0x%llx",
		         st->q, (long long)st->off,
		         st->iter >= 0 && st->iter < 7 ? wqe_fields[st->iter] : "?",
		         (unsigned long long)st->got, (unsigned long long)st->want);
		break;
	default:
		snprintf(buf, cap, "side %c: %s on QP %u failed at iteration %lld: %s", c,
		         op_name(st->op), st->q, (long long)st->iter, dev_status_name(st->rc));
		break;
	}
}

/* Exits 1 with what failed where (and libgnic's record of the QP error). */
void perf_gnic_check(const struct perf_args *a, struct perf_gep *ep)
{
	struct gnic_qp_error e;
	struct pd_status st;
	char what[320];

	perf_devmem_to_host(a, &st, ep->st, sizeof(st));
	if (!st.rc)
		return;
	describe(&st, ep->side, what, sizeof(what));
	if (st.rc < 0 && st.rc > PD_BAD_DATA && st.q < (uint32_t)ep->nqps &&
	    gnic_qp_error(ep->qp[st.q], &e) == GNIC_OK && e.dev_status)
		perf_fatal("%s (mode %s; QP error: %s)", what, a->mode->name, e.text);
	perf_fatal("%s (mode %s)", what, a->mode->name);
}

double perf_gnic_launch(const struct perf_args *a, struct perf_gep **eps, struct pd_launch *L)
{
	static const struct pd_status zero;
	double ns;

	for (uint32_t i = 0; i < L->nsides; i++)
		perf_devmem_to_dev(a, eps[i]->st, &zero, sizeof(zero));
	if (a->mode->proxy)
		perf_proxy_active(true);
	ns = a->on_gpu ? perf_gpu_launch(L) : perf_cpu_launch(L);
	if (a->mode->proxy)
		perf_proxy_active(false);
	for (uint32_t i = 0; i < L->nsides; i++)
		perf_gnic_check(a, eps[i]);
	return ns;
}

/* Device-accessible room for n samples on ep. */
static void ensure_lat(const struct perf_args *a, struct perf_gep *ep, size_t n)
{
	if (ep->lat_cap >= n)
		return;
	perf_devmem_free(a, ep->lat);
	ep->lat = perf_devmem_alloc(a, n * sizeof(*ep->lat));
	ep->lat_cap = n;
}

void perf_gnic_samples(const struct perf_args *a, struct perf_gep *ep, const struct pd_side *ps,
                       bool half_rtt, struct perf_result *r)
{
	struct pd_status st;
	uint64_t *raw;
	double scale = 1.0;
	long n = (long)(ps->count - ps->warmup);

	perf_devmem_to_host(a, &st, ep->st, sizeof(st));
	raw = perf_host_alloc((size_t)n * sizeof(*raw));
	perf_devmem_to_host(a, raw, ps->lat, (size_t)n * sizeof(*raw));
	/* GPU samples are SM cycles: the run's ns per cycle converts them */
	if (st.c_end > st.c_start && st.t_end > st.t_start)
		scale = (double)(st.t_end - st.t_start) / (double)(st.c_end - st.c_start);
	for (long i = 0; i < n; i++)
		r->lat_ns[i] = (double)raw[i] * scale / (half_rtt ? 2 : 1);
	r->nlat = n;
	r->elapsed_ns = (double)(st.t_end - st.t_start);
	free(raw);
}

/* Samples land in ep's buffer; ps->lat points there. */
void perf_gnic_want_samples(const struct perf_args *a, struct perf_gep *ep, struct pd_side *ps)
{
	ensure_lat(a, ep, (size_t)(ps->count - ps->warmup) + 1);
	ps->lat = ep->lat;
}

void perf_gnic_run(struct perf_session *s, const struct perf_test *t, size_t size,
                   struct perf_result *r)
{
	switch (t->id) {
	case PERF_PUT_BW:
	case PERF_GET_BW:
		perf_gnic_stream(s, t, size, r);
		break;
	case PERF_ATOMIC_RATE:
		perf_gnic_atomic(s, r);
		break;
	case PERF_POST_RATE:
		perf_gnic_post_rate(s, size, r);
		break;
	case PERF_PUT_LAT:
	case PERF_SEND_LAT:
	case PERF_SIGNAL_LAT:
		perf_gnic_pingpong(s, t, size, r);
		break;
	case PERF_GET_LAT:
		perf_gnic_get_lat(s, size, r);
		break;
	case PERF_MEMCPY: /* refused by perf_args_check() */
		perf_fatal("memcpy has only --mode host");
	}
}

/* The header's lines about libgnic: device, provider, device threads, memory. */
void perf_gnic_env(const struct perf_session *s, struct perf_env *env)
{
	const struct perf_args *a = s->args;
	const struct perf_gep *ep = s->gep[PERF_A] ? s->gep[PERF_A] : s->gep[PERF_B];
	static struct gnic_ctx_info info;

	memset(env, 0, sizeof(*env));
	env->provider = "none";
	snprintf(env->device, sizeof(env->device), "none");
	if (ep && gnic_ctx_query(ep->ctx, &info) == GNIC_OK) {
		snprintf(env->device, sizeof(env->device), "%s", info.device);
		env->provider = info.provider == GNIC_PROVIDER_EMU ? "gnic-emu" : "rdma-core";
		snprintf(env->libibverbs, sizeof(env->libibverbs), "%s (loaded by libgnic)",
		         info.provider_lib);
	}
	snprintf(env->devices, sizeof(env->devices), "%s", a->dev_name);
	if (!a->on_gpu)
		snprintf(env->memory, sizeof(env->memory), "host memory");
	else if (a->host_mem)
		snprintf(env->memory, sizeof(env->memory), "pinned host memory (--host-mem)");
	else
		snprintf(env->memory, sizeof(env->memory),
		         "GPU memory (gnic-emu moves each message with a CUDA copy; --host-mem "
		         "shows the posting path better)");
	snprintf(env->qps, sizeof(env->qps), "share %s, SQ depth %u, CQE every 16 BBs%s",
	         perf_gnic_exclusive(a) ? "EXCLUSIVE" : "GPU", perf_gnic_sq_depth(a),
	         a->mode->proxy ? " (the proxy's QPs; context without GPU)" : "");
}
