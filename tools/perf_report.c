/* SPDX-License-Identifier: MIT */
/*
 * Output: a perftest-like table on the terminal, or CSV / JSON rows with the
 * same columns. Rows go out as each one finishes, so a long sweep shows
 * results as it goes; on a terminal, stderr also shows which row runs.
 * Rows are kept for --plot, which writes them as the same CSV.
 *
 * In the libgnic modes a row is one (scope, QPs, CTAs, size) of the sweep
 * and names them; host mode keeps its original columns in the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define RULE                                                                                       \
	"----------------------------------------------------------------------------------"       \
	"--------------------------"

struct perf_stats {
	double bw_mib, mpps;
	double min_us, median_us, p99_us, max_us;
};

struct rep_row {
	char series[96];
	int scope, ctas, threads, qps;
	size_t size;
	long iters;
	struct perf_stats st;
};

static struct {
	const struct perf_args *a;
	const struct perf_env *env;
	char connection[320];
	char title[512];
	struct rep_row *rows;
	int nrows, cap;
	bool progress_shown;
} rep;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void compute(const struct perf_result *r, struct perf_stats *st)
{
	double secs = r->elapsed_ns / 1e9;
	double *v;
	long n = r->nlat;

	memset(st, 0, sizeof(*st));
	if (secs > 0) {
		st->bw_mib = (double)r->size * (double)r->iters / secs / (1 << 20);
		st->mpps = (double)r->iters / secs / 1e6;
	}
	if (n <= 0)
		return;
	v = malloc((size_t)n * sizeof(*v));
	if (!v)
		perf_fatal("out of memory");
	memcpy(v, r->lat_ns, (size_t)n * sizeof(*v));
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	st->min_us = v[0] / 1e3;
	st->median_us = (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1e3;
	st->p99_us = v[(n * 99 + 99) / 100 - 1] / 1e3; /* nearest rank */
	st->max_us = v[n - 1] / 1e3;
	free(v);
}

static bool gnic(const struct perf_args *a)
{
	return a->mode->gnic;
}

static bool post_only(const struct perf_args *a)
{
	return a->test->kind == PERF_KIND_POST;
}

static void describe_connection(const struct perf_args *a)
{
	if (a->test->kind == PERF_KIND_LOCAL)
		snprintf(rep.connection, sizeof(rep.connection), "local (no NIC)");
	else if (post_only(a))
		snprintf(rep.connection, sizeof(rep.connection), "none (QPs left unconnected)");
	else if (a->server)
		snprintf(rep.connection, sizeof(rep.connection), "server on TCP port %d (side B)",
		         a->port);
	else if (a->connect_host[0])
		snprintf(rep.connection, sizeof(rep.connection), "client of %s port %d (side A)",
		         a->connect_host, a->port);
	else
		snprintf(rep.connection, sizeof(rep.connection), "in-process (sides A and B)");
}

static void print_list(const char *label, const int *v, int n)
{
	printf("%s", label);
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", v[i]);
}

static void table_sweep(const struct perf_args *a)
{
	printf(" Scope        : ");
	for (int i = 0; i < a->nscopes; i++)
		printf("%s%s", i ? "," : "", perf_scope_name(a->scopes[i]));
	print_list("   CTAs: ", a->ctas_list, a->nctas);
	printf("   threads/CTA: %d", a->threads);
	print_list("   QPs: ", a->qps_list, a->nqps);
	printf("\n");
}

static void table_details(const struct perf_args *a, const struct perf_session *s)
{
	const struct perf_ep *ep = s->ep[PERF_A] ? s->ep[PERF_A] : s->ep[PERF_B];

	if (gnic(a)) {
		table_sweep(a);
		printf(" QPs          : %s\n", rep.env->qps);
	} else if (a->test->kind == PERF_KIND_BW || a->test->kind == PERF_KIND_ATOMIC) {
		printf(" QPs          : %-8d TX depth : %-6d Signaled : every %u\n", a->qps,
		       ep ? (int)ep->sq_depth : a->tx_depth, ep ? ep->sq_signal : 0);
	} else if (a->test->kind == PERF_KIND_LAT) {
		printf(" QPs          : 1\n");
	}
	if (ep && a->test->kind != PERF_KIND_ATOMIC)
		printf(" Inline       : messages <= %u B\n", ep->max_inline);
	if (a->test->kind == PERF_KIND_ATOMIC)
		printf(" Latency      : one fetch-add at a time, full operation\n");
	else if (a->test->half_rtt)
		printf(" Latency      : half a round trip (like perftest)\n");
	else if (a->test->kind == PERF_KIND_LAT)
		printf(" Latency      : one READ at a time, full operation\n");
}

static void table_gnic_env(const struct perf_env *env)
{
	const char *spin = getenv("GNIC_EMU_SPIN_US");

	printf(" Device code  : %s\n", env->devices);
	printf(" Memory       : %s\n", env->memory);
	if (!strcmp(env->provider, "gnic-emu"))
		printf(" gnic-emu     : GNIC_EMU_SPIN_US=%s (device-thread doorbells do not wake a "
		       "sleeping engine)\n",
		       spin ? spin : "auto");
}

static void table_columns(const struct perf_args *a)
{
	if (gnic(a))
		printf(" %-12s %-6s %5s %7s %3s ", "mode", "scope", "ctas", "threads", "qps");
	if (post_only(a)) {
		printf(" %-11s %-13s %s\n", "#bytes", "#WQEs", "WQE rate[M/s]");
		return;
	}
	if (!perf_test_has_lat(a->test)) {
		printf(" %-11s %-13s %-19s %s\n", "#bytes", "#iterations", "BW average[MiB/s]",
		       "MsgRate[Mpps]");
		return;
	}
	printf(" %-11s %-13s %-19s %-14s %-12s %-15s %-12s %s\n", "#bytes", "#iterations",
	       "BW average[MiB/s]", "MsgRate[Mpps]", "t_min[usec]", "t_median[usec]", "t_p99[usec]",
	       "t_max[usec]");
}

static void table_begin(const struct perf_args *a, const struct perf_env *env,
                        const struct perf_session *s)
{
	printf("%s\n", RULE);
	printf(" gnic-perf %s: %s\n", a->test->name, a->test->help);
	printf(" Mode         : %s: %s\n", a->mode->name, a->mode->help);
	if (a->test->kind != PERF_KIND_LOCAL) {
		printf(" Device       : %s (provider %s)\n", env->device, env->provider);
		printf(" %-13s: %s\n", gnic(a) ? "Provider lib" : "libibverbs", env->libibverbs);
	}
	if (gnic(a))
		table_gnic_env(env);
	printf(" Connection   : %s\n", rep.connection);
	table_details(a, s);
	printf(" Iterations   : %ld per %s (+%ld warmup)%s\n", a->iters, gnic(a) ? "row" : "size",
	       a->warmup,
	       gnic(a) && a->test->kind != PERF_KIND_LAT
	           ? ", rounded up to a multiple of the row's device threads"
	           : "");
	printf(" Validation   : %s\n", a->validate ? "on" : "off");
	printf("%s\n", RULE);
	if (a->server) {
		if (gnic(a))
			printf(" %-12s %-6s %5s %7s %3s ", "mode", "scope", "ctas", "threads",
			       "qps");
		printf(" #bytes      #iterations   data\n");
		return;
	}
	table_columns(a);
}

static const char *csv_columns =
    "test,mode,scope,ctas,threads,qps,bytes,iterations,bw_mib_s,msg_rate_mpps,t_min_us,"
    "t_median_us,t_p99_us,t_max_us,series,device,device_code,memory,provider,connection";

void perf_report_csv_header(FILE *f)
{
	fprintf(f, "%s\n", csv_columns);
}

/* Strings we print into JSON come from us or the verbs library; escape the
 * two characters that could break it anyway. */
static void json_str(const char *key, const char *v)
{
	printf("\"%s\": \"", key);
	for (; *v; v++)
		printf(*v == '"' || *v == '\\' ? "\\%c" : "%c", *v);
	printf("\"");
}

static void json_begin(const struct perf_args *a, const struct perf_env *env)
{
	printf("{");
	json_str("test", a->test->name);
	printf(", ");
	json_str("mode", a->mode->name);
	printf(", ");
	json_str("device", env->device);
	printf(", ");
	json_str("provider", env->provider);
	printf(", ");
	json_str("libibverbs", env->libibverbs);
	printf(", ");
	json_str("connection", rep.connection);
	printf(", ");
	json_str("device_code", gnic(a) ? env->devices : "host CPU thread (verbs)");
	printf(", ");
	json_str("memory", gnic(a) ? env->memory : "host memory");
	if (gnic(a)) {
		printf(", ");
		json_str("qp_settings", env->qps);
	} else {
		printf(", \"tx_depth\": %d", a->tx_depth);
	}
	printf(", \"iterations\": %ld, \"warmup\": %ld, \"validate\": %s, \"results\": [", a->iters,
	       a->warmup, a->validate ? "true" : "false");
}

void perf_report_begin(const struct perf_args *a, const struct perf_env *env,
                       const struct perf_session *s)
{
	rep.a = a;
	rep.env = env;
	rep.nrows = 0;
	describe_connection(a);
	snprintf(rep.title, sizeof(rep.title), "gnic-perf %s (%s, %s)", a->test->name,
	         gnic(a) ? env->devices : "host mode", rep.connection);
	switch (a->format) {
	case PERF_FMT_TABLE:
		table_begin(a, env, s);
		break;
	case PERF_FMT_CSV:
		if (!a->server)
			perf_report_csv_header(stdout);
		break;
	case PERF_FMT_JSON:
		if (!a->server)
			json_begin(a, env);
		break;
	}
	fflush(stdout);
}

const char *perf_report_title(void)
{
	return rep.title;
}

static void table_row(const struct perf_args *a, const struct rep_row *w)
{
	const struct perf_stats *st = &w->st;

	if (gnic(a))
		printf(" %-12s %-6s %5d %7d %3d ", a->mode->name, perf_scope_name(w->scope),
		       w->ctas, w->threads, w->qps);
	if (post_only(a)) {
		printf(" %-11zu %-13ld %.4f\n", w->size, w->iters, st->mpps);
		return;
	}
	if (!perf_test_has_lat(a->test)) {
		printf(" %-11zu %-13ld %-19.2f %.4f\n", w->size, w->iters, st->bw_mib, st->mpps);
		return;
	}
	printf(" %-11zu %-13ld %-19.2f %-14.4f %-12.2f %-15.2f %-12.2f %.2f\n", w->size, w->iters,
	       st->bw_mib, st->mpps, st->min_us, st->median_us, st->p99_us, st->max_us);
}

static void csv_row(FILE *f, const struct perf_args *a, const struct rep_row *w)
{
	const struct perf_stats *st = &w->st;

	fprintf(f, "%s,%s,", a->test->name, a->mode->name);
	if (gnic(a))
		fprintf(f, "%s,%d,%d,%d,", perf_scope_name(w->scope), w->ctas, w->threads, w->qps);
	else
		fprintf(f, "-,-,-,%d,", w->qps);
	fprintf(f, "%zu,%ld,", w->size, w->iters);
	if (post_only(a))
		fprintf(f, ",%.6f", st->mpps); /* no data moves: no bandwidth */
	else
		fprintf(f, "%.3f,%.6f", st->bw_mib, st->mpps);
	if (perf_test_has_lat(a->test))
		fprintf(f, ",%.3f,%.3f,%.3f,%.3f", st->min_us, st->median_us, st->p99_us,
		        st->max_us);
	else
		fprintf(f, ",,,,");
	fprintf(f, ",%s,%s,\"%s\",\"%s\",%s,\"%s\"\n", w->series, rep.env->device,
	        gnic(a) ? rep.env->devices : "host CPU thread (verbs)",
	        gnic(a) ? rep.env->memory : "host memory", rep.env->provider, rep.connection);
}

/* Distinct series, in the order their first rows came. */
int perf_report_nseries(void)
{
	int n = 0;

	for (int i = 0; i < rep.nrows; i++) {
		int k = 0;

		while (k < i && strcmp(rep.rows[k].series, rep.rows[i].series))
			k++;
		n += k == i;
	}
	return n;
}

const char *perf_report_series(int index)
{
	for (int i = 0, n = 0; i < rep.nrows; i++) {
		int k = 0;

		while (k < i && strcmp(rep.rows[k].series, rep.rows[i].series))
			k++;
		if (k == i && n++ == index)
			return rep.rows[i].series;
	}
	return "";
}

void perf_report_csv_rows(FILE *f)
{
	for (int i = 0; i < rep.nrows; i++)
		csv_row(f, rep.a, &rep.rows[i]);
}

static void json_row(const struct perf_args *a, const struct rep_row *w)
{
	const struct perf_stats *st = &w->st;

	printf("%s{", rep.nrows > 1 ? ", " : "");
	if (gnic(a))
		printf("\"scope\": \"%s\", \"ctas\": %d, \"threads\": %d, ",
		       perf_scope_name(w->scope), w->ctas, w->threads);
	printf("\"qps\": %d, \"bytes\": %zu, \"iterations\": %ld, ", w->qps, w->size, w->iters);
	if (!post_only(a))
		printf("\"bw_mib_s\": %.3f, ", st->bw_mib);
	printf("\"msg_rate_mpps\": %.6f", st->mpps);
	if (perf_test_has_lat(a->test))
		printf(", \"t_min_us\": %.3f, \"t_median_us\": %.3f, \"t_p99_us\": %.3f, "
		       "\"t_max_us\": %.3f",
		       st->min_us, st->median_us, st->p99_us, st->max_us);
	printf("}");
}

static void clear_progress(void)
{
	if (rep.progress_shown)
		fprintf(stderr, "\r\033[K");
	rep.progress_shown = false;
}

/* The row's settings, kept with its figures. */
static struct rep_row *add_row(const struct perf_args *a, const struct perf_result *r)
{
	struct rep_row *w;

	if (rep.nrows == rep.cap) {
		rep.cap = rep.cap ? rep.cap * 2 : 64;
		rep.rows = realloc(rep.rows, (size_t)rep.cap * sizeof(*rep.rows));
		if (!rep.rows)
			perf_fatal("out of memory");
	}
	w = &rep.rows[rep.nrows++];
	memset(w, 0, sizeof(*w));
	w->scope = a->scope;
	w->ctas = a->ctas;
	w->threads = a->threads;
	w->qps = a->qps;
	w->size = r->size;
	w->iters = r->iters;
	if (gnic(a))
		snprintf(w->series, sizeof(w->series), "%s %s %dx%d q%d", a->mode->name,
		         perf_scope_name(a->scope), a->ctas, a->threads, a->qps);
	else
		snprintf(w->series, sizeof(w->series), "%s q%d", a->mode->name, a->qps);
	compute(r, &w->st);
	return w;
}

void perf_report_row(const struct perf_args *a, const struct perf_result *r)
{
	struct rep_row *w = add_row(a, r);

	clear_progress();
	switch (a->format) {
	case PERF_FMT_TABLE:
		table_row(a, w);
		break;
	case PERF_FMT_CSV:
		csv_row(stdout, a, w);
		break;
	case PERF_FMT_JSON:
		json_row(a, w);
		break;
	}
	fflush(stdout);
}

void perf_report_server(const struct perf_args *a, size_t size, bool ok)
{
	clear_progress();
	if (a->format != PERF_FMT_TABLE)
		return;
	if (gnic(a))
		printf(" %-12s %-6s %5d %7d %3d ", a->mode->name, perf_scope_name(a->scope),
		       a->ctas, a->threads, a->qps);
	printf(" %-11zu %-13ld %s\n", size, a->iters,
	       !ok           ? "MISMATCH"
	       : a->validate ? "validated"
	                     : "not validated");
	fflush(stdout);
}

void perf_report_progress(const struct perf_args *a, int index, int total, size_t size)
{
	if (total <= 4 || !isatty(STDERR_FILENO))
		return;
	if (gnic(a))
		fprintf(stderr, "\r\033[K[%d/%d] %s %s %s ctas %d qps %d, %zu bytes ...", index + 1,
		        total, a->test->name, a->mode->name, perf_scope_name(a->scope), a->ctas,
		        a->qps, size);
	else
		fprintf(stderr, "\r\033[K[%d/%d] %s %zu bytes ...", index + 1, total, a->test->name,
		        size);
	rep.progress_shown = true;
}

void perf_report_end(const struct perf_args *a)
{
	clear_progress();
	if (a->format == PERF_FMT_TABLE)
		printf("%s\n", RULE);
	else if (a->format == PERF_FMT_JSON && !a->server)
		printf("]}\n");
	fflush(stdout);
}
