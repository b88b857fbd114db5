/* SPDX-License-Identifier: MIT */
/*
 * Output: perftest's tables (bandwidth tests: #bytes, #iterations, BW peak,
 * BW average, MsgRate; latency tests: t_min, t_max, t_typical (the median),
 * t_avg, t_stdev, 99% and 99.9% percentiles), or CSV / JSON rows with the
 * same figures. With --repeat a row is the median of its runs, figure by
 * figure, plus the min-max spread of its headline figure (BW average,
 * MsgRate for rate tests, t_typical). Rows go out as they finish and are
 * kept for --plot, which writes them as the same CSV.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define RULE                                                                                       \
	"---------------------------------------------------------------------------------------"  \
	"---------------------------------------"

struct row {
	char series[96];
	int scope, ctas, threads, qps, reps;
	size_t size;
	struct perf_stats st; /* medians */
	double lo, hi;        /* the headline figure's spread */
};

static struct {
	const struct perf_session *s;
	char connection[320], title[512], code[200], memory[200];
	struct row *rows;
	int n, cap;
} rep;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double rank(const double *v, long n, double q) /* nearest rank, v sorted */
{
	long k = (long)ceil(q * (double)n);

	return v[k < 1 ? 0 : k - 1];
}

void perf_stats_lat(struct perf_stats *st, double *ns, long n)
{
	double sum = 0, sq = 0;

	if (n <= 0)
		return;
	qsort(ns, (size_t)n, sizeof(*ns), cmp_double);
	for (long i = 0; i < n; i++) {
		sum += ns[i];
		sq += ns[i] * ns[i];
	}
	st->v[PERF_T_MIN] = ns[0] / 1e3;
	st->v[PERF_T_MAX] = ns[n - 1] / 1e3;
	st->v[PERF_T_TYP] = (n % 2 ? ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2) / 1e3;
	st->v[PERF_T_AVG] = sum / (double)n / 1e3;
	st->v[PERF_T_SD] =
	    sqrt(fmax(0, sq / (double)n - (sum / (double)n) * (sum / (double)n))) / 1e3;
	st->v[PERF_T_P99] = rank(ns, n, 0.99) / 1e3;
	st->v[PERF_T_P999] = rank(ns, n, 0.999) / 1e3;
}

void perf_stats_bw(struct perf_stats *st, const struct perf_args *a, size_t size, long msgs,
                   double ns, double best)
{
	double unit = a->gbits ? 1e9 / 8 : 1 << 20; /* bytes per reported unit */

	if (ns <= 0)
		return;
	st->v[PERF_BW_AVG] = (double)size * (double)msgs / ns * 1e9 / unit;
	st->v[PERF_BW_PEAK] = (double)size * best * 1e9 / unit;
	st->v[PERF_MPPS] = (double)msgs / ns * 1e3;
}

static int headline(const struct perf_args *a)
{
	return a->test->kind == PERF_LAT    ? PERF_T_TYP
	       : a->test->kind == PERF_RATE ? PERF_MPPS
	                                    : PERF_BW_AVG;
}

static const char *bw_unit(const struct perf_args *a)
{
	return a->gbits ? "Gb/s" : "MiB/s";
}

/* ---- the table ------------------------------------------------------------------------------- */

static void prefix(const struct perf_args *a, const char *mode, const char *scope, int ctas,
                   int threads, int qps)
{
	if (!a->mode->gnic)
		return;
	if (ctas < 0)
		printf(" %-12s %-6s %5s %7s %3s ", mode, scope, "ctas", "threads", "qps");
	else
		printf(" %-12s %-6s %5d %7d %3d ", mode, scope, ctas, threads, qps);
}

static void columns(const struct perf_args *a)
{
	char peak[32], avg[32];

	prefix(a, "mode", "scope", -1, 0, 0);
	if (a->server) {
		printf(" %-10s %-12s data\n", "#bytes", "#iterations");
		return;
	}
	if (a->test->kind == PERF_LAT) {
		printf(" %-10s %-12s %-12s %-12s %-16s %-12s %-14s %-21s %-22s", "#bytes",
		       "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
		       "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]",
		       "99.9% percentile[usec]");
	} else {
		snprintf(peak, sizeof(peak), "BW peak[%s]", bw_unit(a));
		snprintf(avg, sizeof(avg), "BW average[%s]", bw_unit(a));
		printf(" %-10s %-12s %-17s %-20s %-14s", "#bytes", "#iterations", peak, avg,
		       "MsgRate[Mpps]");
	}
	if (a->repeat > 1)
		printf(" spread (min-max)");
	printf("\n");
}

static void table_row(const struct perf_args *a, const struct row *w)
{
	const double *v = w->st.v;

	prefix(a, a->mode->name, perf_scope_name(w->scope), w->ctas, w->threads, w->qps);
	if (a->test->kind == PERF_LAT)
		printf(" %-10zu %-12ld %-12.2f %-12.2f %-16.2f %-12.2f %-14.2f %-21.2f %-22.2f",
		       w->size, w->st.iters, v[PERF_T_MIN], v[PERF_T_MAX], v[PERF_T_TYP],
		       v[PERF_T_AVG], v[PERF_T_SD], v[PERF_T_P99], v[PERF_T_P999]);
	else
		printf(" %-10zu %-12ld %-17.2f %-20.2f %-14.4f", w->size, w->st.iters,
		       v[PERF_BW_PEAK], v[PERF_BW_AVG], v[PERF_MPPS]);
	if (w->reps > 1)
		printf(" %.4g-%.4g", w->lo, w->hi);
	printf("\n");
}

static void print_list(const char *label, const int *v, int n)
{
	printf("%s", label);
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : " ", v[i]);
}

static void table_setup(const struct perf_session *s)
{
	const struct perf_args *a = s->a;
	const struct perf_ep *ep = s->ep[PERF_A] ? s->ep[PERF_A] : s->ep[PERF_B];
	const char *spin = getenv("GNIC_EMU_SPIN_US");

	if (!(a->test->flags & PERF_F_LOCAL)) {
		printf(" Device       : %s\n", s->nic);
		printf(" %-13s: %s\n", a->mode->gnic ? "Provider lib" : "libibverbs", s->lib);
	}
	if (a->mode->gnic) {
		printf(" Device code  : %s\n Memory       : %s\n", rep.code, rep.memory);
		if (s->emu)
			printf(
			    " gnic-emu     : GNIC_EMU_SPIN_US=%s (device-thread doorbells do not "
			    "wake a sleeping engine)\n",
			    spin ? spin : "auto");
	}
	printf(" Connection   : %s\n", rep.connection);
	if (a->mode->gnic) {
		printf(" Scope        :");
		for (int i = 0; i < a->nscopes; i++)
			printf("%s%s", i ? "," : " ", perf_scope_name(a->scopes[i]));
		print_list("   CTAs:", a->ctas_list, a->nctas);
		printf("   threads/CTA: %d", a->threads);
		print_list("   QPs:", a->qps_list, a->nqps);
		printf("\n");
		printf(" QP settings  : share %s, SQ depth %d, CQE every 16 BBs%s\n",
		       a->mode->proxy || a->test->kind == PERF_LAT ? "EXCLUSIVE" : "GPU",
		       a->tx_depth,
		       a->mode->proxy ? " (the proxy's QPs; context without GPU)" : "");
	} else if (ep) {
		printf(
		    " QPs          : %-8d TX depth : %-6u Signaled : every %u   Inline : <= %u B\n",
		    a->qps_list[0], ep->sq_depth, ep->sq_signal, ep->max_inline);
	}
}

static void table_begin(const struct perf_session *s)
{
	const struct perf_args *a = s->a;

	printf("%s\n", RULE);
	if (s->emu)
		printf(" NIC: gnic-emu (software emulator) — figures are emulator figures, not "
		       "hardware\n");
	printf(" gnic-perf %s: %s\n", a->test->name, a->test->help);
	printf(" Mode         : %s: %s\n", a->mode->name, a->mode->help);
	table_setup(s);
	if (a->test->flags & PERF_F_HALF_RTT)
		printf(" Latency      : half a round trip (like perftest)\n");
	else if (a->test->kind == PERF_LAT)
		printf(" Latency      : one operation at a time, whole operation\n");
	if (a->duration)
		printf(" Duration     : %.0f s per row (+%ld warm-up iterations)\n", a->duration,
		       a->warmup);
	else
		printf(" Iterations   : %ld per row (+%ld warm-up)%s\n", a->iters, a->warmup,
		       perf_granule(a) > 1 ? ", rounded up to a multiple of the device threads"
		                           : "");
	if (a->repeat > 1)
		printf(" Repeat       : %d runs per row: medians, and the spread of %s\n",
		       a->repeat,
		       a->test->kind == PERF_LAT    ? "t_typical"
		       : a->test->kind == PERF_RATE ? "MsgRate"
		                                    : "BW average");
	printf(" Validation   : %s\n%s\n", a->validate ? "on" : "off", RULE);
	columns(a);
}

/* ---- CSV and JSON
 * -------------------------------------------------------------------------------- */

static const char *const csv_figs[PERF_NFIG] = {
    "bw_peak",      "bw_avg",   "msg_rate_mpps", "t_min_us", "t_max_us",
    "t_typical_us", "t_avg_us", "t_stdev_us",    "t_p99_us", "t_p999_us"};

static const char *fig_name(int k, char *buf, size_t cap)
{
	if (k > PERF_BW_AVG)
		return csv_figs[k];
	snprintf(buf, cap, "%s_%s", csv_figs[k], rep.s->a->gbits ? "gbit_s" : "mib_s");
	return buf;
}

static void csv_header(FILE *f)
{
	char buf[32];

	fprintf(f, "test,mode,scope,ctas,threads,qps,bytes,iterations");
	for (int k = 0; k < PERF_NFIG; k++)
		fprintf(f, ",%s", fig_name(k, buf, sizeof(buf)));
	fprintf(f, ",repeats,spread_min,spread_max,series,device,device_code,memory,provider,"
	           "connection\n");
}

static bool fig_applies(const struct perf_args *a, int k)
{
	return a->test->kind == PERF_LAT ? k >= PERF_T_MIN : k <= PERF_MPPS;
}

static void csv_row(FILE *f, const struct perf_args *a, const struct row *w)
{
	fprintf(f, "%s,%s,", a->test->name, a->mode->name);
	if (a->mode->gnic)
		fprintf(f, "%s,%d,%d,%d,", perf_scope_name(w->scope), w->ctas, w->threads, w->qps);
	else
		fprintf(f, "-,-,-,%d,", w->qps);
	fprintf(f, "%zu,%ld", w->size, w->st.iters);
	for (int k = 0; k < PERF_NFIG; k++)
		fprintf(f, fig_applies(a, k) ? ",%.6g" : ",", w->st.v[k]);
	fprintf(f, ",%d,%.6g,%.6g,%s,%s,\"%s\",\"%s\",%s,\"%s\"\n", w->reps, w->lo, w->hi,
	        w->series, rep.s->nic, rep.code, rep.memory, rep.s->emu ? "gnic-emu" : "rdma-core",
	        rep.connection);
}

/* Our strings and the provider's: escape what could break JSON anyway. */
static void json_str(const char *key, const char *v, const char *sep)
{
	printf("\"%s\": \"", key);
	for (; *v; v++)
		printf(*v == '"' || *v == '\\' ? "\\%c" : "%c", *v);
	printf("\"%s", sep);
}

static void json_begin(const struct perf_session *s)
{
	printf("{");
	json_str("test", s->a->test->name, ", ");
	json_str("mode", s->a->mode->name, ", ");
	json_str("device", s->nic, ", ");
	json_str("provider_lib", s->lib, ", ");
	printf("\"emulator\": %s, ", s->emu ? "true" : "false");
	json_str("connection", rep.connection, ", ");
	json_str("device_code", rep.code, ", ");
	json_str("memory", rep.memory, ", ");
	printf("\"iterations\": %ld, \"warmup\": %ld, \"duration_s\": %.0f, \"repeat\": %d, "
	       "\"validate\": %s, \"results\": [",
	       s->a->iters, s->a->warmup, s->a->duration, s->a->repeat,
	       s->a->validate ? "true" : "false");
}

static void json_row(const struct perf_args *a, const struct row *w)
{
	char buf[32];

	printf("%s{", rep.n > 1 ? ", " : "");
	if (a->mode->gnic)
		printf("\"scope\": \"%s\", \"ctas\": %d, \"threads\": %d, ",
		       perf_scope_name(w->scope), w->ctas, w->threads);
	printf("\"qps\": %d, \"bytes\": %zu, \"iterations\": %ld", w->qps, w->size, w->st.iters);
	for (int k = 0; k < PERF_NFIG; k++)
		if (fig_applies(a, k))
			printf(", \"%s\": %.6g", fig_name(k, buf, sizeof(buf)), w->st.v[k]);
	if (w->reps > 1)
		printf(", \"repeats\": %d, \"spread_min\": %.6g, \"spread_max\": %.6g", w->reps,
		       w->lo, w->hi);
	printf("}");
}

/* ---- rows
 * ----------------------------------------------------------------------------------------- */

static void describe(const struct perf_session *s)
{
	const struct perf_args *a = s->a;

	if (a->test->flags & PERF_F_LOCAL)
		snprintf(rep.connection, sizeof(rep.connection), "local (no NIC)");
	else if (a->test->flags & PERF_F_UNCONNECTED)
		snprintf(rep.connection, sizeof(rep.connection), "none (QPs left unconnected)");
	else if (a->server)
		snprintf(rep.connection, sizeof(rep.connection), "server on TCP port %d (side B)",
		         a->port);
	else if (a->host[0])
		snprintf(rep.connection, sizeof(rep.connection), "client of %s port %d (side A)",
		         a->host, a->port);
	else
		snprintf(rep.connection, sizeof(rep.connection), "in-process (sides A and B)");
	snprintf(rep.code, sizeof(rep.code), "%s",
	         a->mode->gnic ? a->dev_name : "host CPU thread (verbs)");
	snprintf(rep.memory, sizeof(rep.memory), "%s",
	         !a->mode->gnic || !a->on_gpu ? "host memory"
	         : a->host_mem                ? "pinned host memory (--host-mem)"
	                       : "GPU memory (gnic-emu moves each message with a CUDA "
	                         "copy; --host-mem shows the posting path better)");
	snprintf(rep.title, sizeof(rep.title), "gnic-perf %s (%s, %s)", a->test->name,
	         a->mode->gnic ? a->dev_name : "host mode", rep.connection);
}

void perf_report_begin(const struct perf_session *s)
{
	rep.s = s;
	rep.n = 0;
	describe(s);
	if (s->emu && s->a->format != PERF_FMT_TABLE)
		fprintf(stderr,
		        "gnic-perf: NIC: gnic-emu (software emulator) — figures are emulator "
		        "figures, not hardware\n");
	if (s->a->format == PERF_FMT_TABLE)
		table_begin(s);
	else if (s->a->format == PERF_FMT_CSV && !s->a->server)
		csv_header(stdout);
	else if (!s->a->server)
		json_begin(s);
	fflush(stdout);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct row *add_row(const struct perf_args *a, size_t size, const struct perf_stats *reps,
                           int n)
{
	double v[100];
	struct row *w;

	if (rep.n == rep.cap) {
		rep.cap = rep.cap ? 2 * rep.cap : 64;
		rep.rows = realloc(rep.rows, (size_t)rep.cap * sizeof(*rep.rows));
		if (!rep.rows)
			perf_fatal("out of memory");
	}
	w = &rep.rows[rep.n++];
	*w = (struct row){.scope = a->scope,
	                  .ctas = a->ctas,
	                  .threads = a->threads,
	                  .qps = a->qps,
	                  .reps = n,
	                  .size = size,
	                  .st = reps[0]};
	for (int k = 0; k < PERF_NFIG; k++) {
		for (int i = 0; i < n; i++)
			v[i] = reps[i].v[k];
		w->st.v[k] = median(v, n);
		if (k == headline(a)) {
			w->lo = v[0];
			w->hi = v[n - 1];
		}
	}
	if (a->mode->gnic)
		snprintf(w->series, sizeof(w->series), "%s %s %dx%d q%d", a->mode->name,
		         perf_scope_name(a->scope), a->ctas, a->threads, a->qps);
	else
		snprintf(w->series, sizeof(w->series), "%s q%d", a->mode->name, a->qps);
	return w;
}

void perf_report_row(const struct perf_args *a, size_t size, const struct perf_stats *reps, int n)
{
	struct row *w = add_row(a, size, reps, n);

	if (a->format == PERF_FMT_TABLE)
		table_row(a, w);
	else if (a->format == PERF_FMT_CSV)
		csv_row(stdout, a, w);
	else
		json_row(a, w);
	fflush(stdout);
}

void perf_report_server_row(const struct perf_args *a, size_t size)
{
	if (a->format != PERF_FMT_TABLE)
		return;
	prefix(a, a->mode->name, perf_scope_name(a->scope), a->ctas, a->threads, a->qps);
	printf(" %-10zu %-12ld %s\n", size, a->iters, a->validate ? "validated" : "not validated");
	fflush(stdout);
}

void perf_report_end(const struct perf_args *a)
{
	if (a->format == PERF_FMT_TABLE)
		printf("%s\n", RULE);
	else if (a->format == PERF_FMT_JSON && !a->server)
		printf("]}\n");
	fflush(stdout);
}

void perf_report_csv(FILE *f)
{
	csv_header(f);
	for (int i = 0; i < rep.n; i++)
		csv_row(f, rep.s->a, &rep.rows[i]);
}

const char *perf_report_title(void)
{
	return rep.title;
}

/* Distinct series, in the order of their first rows. */
static int series_first(int index)
{
	for (int i = 0, n = 0; i < rep.n; i++) {
		int k = 0;

		while (k < i && strcmp(rep.rows[k].series, rep.rows[i].series))
			k++;
		if (k == i && n++ == index)
			return i;
	}
	return -1;
}

int perf_report_nseries(void)
{
	int n = 0;

	while (series_first(n) >= 0)
		n++;
	return n;
}

const char *perf_report_series(int i)
{
	return rep.rows[series_first(i)].series;
}
