/* SPDX-License-Identifier: MIT */
/*
 * Output: a perftest-like table on the terminal, or CSV / JSON rows with the
 * same columns. Rows go out as each size finishes, so a long sweep shows
 * results as it goes; progress goes to stderr only when it is a terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define RULE                                                                                       \
	"----------------------------------------------------------------------------------"       \
	"--------------------------"

static struct {
	const struct perf_env *env;
	char connection[320];
	int rows;
} rep;

struct perf_stats {
	double bw_mib, mpps;
	double min_us, median_us, p99_us, max_us;
};

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

static void describe_connection(const struct perf_args *a)
{
	if (a->test->kind == PERF_KIND_LOCAL)
		snprintf(rep.connection, sizeof(rep.connection), "local (no NIC)");
	else if (a->server)
		snprintf(rep.connection, sizeof(rep.connection), "server on TCP port %d (side B)",
		         a->port);
	else if (a->connect_host[0])
		snprintf(rep.connection, sizeof(rep.connection), "client of %s port %d (side A)",
		         a->connect_host, a->port);
	else
		snprintf(rep.connection, sizeof(rep.connection), "in-process (sides A and B)");
}

static void table_details(const struct perf_args *a, const struct perf_session *s)
{
	const struct perf_ep *ep = s->ep[PERF_A] ? s->ep[PERF_A] : s->ep[PERF_B];

	if (a->test->kind == PERF_KIND_BW || a->test->kind == PERF_KIND_ATOMIC)
		printf(" QPs          : %-8d TX depth : %-6d Signaled : every %u\n", a->qps,
		       ep ? (int)ep->sq_depth : a->tx_depth, ep ? ep->sq_signal : 0);
	else if (a->test->kind == PERF_KIND_LAT)
		printf(" QPs          : 1\n");
	if (ep && a->test->kind != PERF_KIND_ATOMIC)
		printf(" Inline       : messages <= %u B\n", ep->max_inline);
	if (a->test->kind == PERF_KIND_ATOMIC)
		printf(" Latency      : one fetch-add at a time, full operation\n");
	else if (a->test->half_rtt)
		printf(" Latency      : half a round trip (like perftest)\n");
	else if (a->test->kind == PERF_KIND_LAT)
		printf(" Latency      : one READ at a time, full operation\n");
}

static void table_begin(const struct perf_args *a, const struct perf_env *env,
                        const struct perf_session *s)
{
	printf("%s\n", RULE);
	printf(" gnic-perf %s: %s\n", a->test->name, a->test->help);
	printf(" Mode         : %s\n", a->mode->name);
	if (a->test->kind != PERF_KIND_LOCAL) {
		printf(" Device       : %s (provider %s)\n", env->device, env->provider);
		printf(" libibverbs   : %s\n", env->libibverbs);
	}
	printf(" Connection   : %s\n", rep.connection);
	table_details(a, s);
	printf(" Iterations   : %ld per size (+%ld warmup)\n", a->iters, a->warmup);
	printf(" Validation   : %s\n", a->validate ? "on" : "off");
	printf("%s\n", RULE);
	if (a->server) {
		printf(" #bytes      #iterations   data\n");
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

static void csv_begin(const struct perf_args *a)
{
	printf("test,mode,device,provider,connection,qps,bytes,iterations,bw_mib_s,msg_rate_mpps");
	if (perf_test_has_lat(a->test))
		printf(",t_min_us,t_median_us,t_p99_us,t_max_us");
	printf("\n");
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
	printf(", \"qps\": %d, \"tx_depth\": %d, \"iterations\": %ld, \"warmup\": %ld, "
	       "\"validate\": %s, \"results\": [",
	       a->qps, a->tx_depth, a->iters, a->warmup, a->validate ? "true" : "false");
}

void perf_report_begin(const struct perf_args *a, const struct perf_env *env,
                       const struct perf_session *s)
{
	rep.env = env;
	rep.rows = 0;
	describe_connection(a);
	switch (a->format) {
	case PERF_FMT_TABLE:
		table_begin(a, env, s);
		break;
	case PERF_FMT_CSV:
		if (!a->server)
			csv_begin(a);
		break;
	case PERF_FMT_JSON:
		if (!a->server)
			json_begin(a, env);
		break;
	}
	fflush(stdout);
}

static void table_row(const struct perf_args *a, const struct perf_result *r,
                      const struct perf_stats *st)
{
	if (!perf_test_has_lat(a->test)) {
		printf(" %-11zu %-13ld %-19.2f %.4f\n", r->size, r->iters, st->bw_mib, st->mpps);
		return;
	}
	printf(" %-11zu %-13ld %-19.2f %-14.4f %-12.2f %-15.2f %-12.2f %.2f\n", r->size, r->iters,
	       st->bw_mib, st->mpps, st->min_us, st->median_us, st->p99_us, st->max_us);
}

static void csv_row(const struct perf_args *a, const struct perf_result *r,
                    const struct perf_stats *st)
{
	printf("%s,%s,%s,%s,\"%s\",%d,%zu,%ld,%.3f,%.6f", a->test->name, a->mode->name,
	       rep.env->device, rep.env->provider, rep.connection, a->qps, r->size, r->iters,
	       st->bw_mib, st->mpps);
	if (perf_test_has_lat(a->test))
		printf(",%.3f,%.3f,%.3f,%.3f", st->min_us, st->median_us, st->p99_us, st->max_us);
	printf("\n");
}

static void json_row(const struct perf_args *a, const struct perf_result *r,
                     const struct perf_stats *st)
{
	printf("%s{\"bytes\": %zu, \"iterations\": %ld, \"bw_mib_s\": %.3f, "
	       "\"msg_rate_mpps\": %.6f",
	       rep.rows ? ", " : "", r->size, r->iters, st->bw_mib, st->mpps);
	if (perf_test_has_lat(a->test))
		printf(", \"t_min_us\": %.3f, \"t_median_us\": %.3f, \"t_p99_us\": %.3f, "
		       "\"t_max_us\": %.3f",
		       st->min_us, st->median_us, st->p99_us, st->max_us);
	printf("}");
}

static void clear_progress(const struct perf_args *a)
{
	if (a->nsizes > 4 && isatty(STDERR_FILENO))
		fprintf(stderr, "\r\033[K");
}

void perf_report_row(const struct perf_args *a, const struct perf_result *r)
{
	struct perf_stats st;

	compute(r, &st);
	clear_progress(a);
	switch (a->format) {
	case PERF_FMT_TABLE:
		table_row(a, r, &st);
		break;
	case PERF_FMT_CSV:
		csv_row(a, r, &st);
		break;
	case PERF_FMT_JSON:
		json_row(a, r, &st);
		break;
	}
	rep.rows++;
	fflush(stdout);
}

void perf_report_server(const struct perf_args *a, size_t size, bool ok)
{
	clear_progress(a);
	if (a->format == PERF_FMT_TABLE)
		printf(" %-11zu %-13ld %s\n", size, a->iters,
		       !ok           ? "MISMATCH"
		       : a->validate ? "validated"
		                     : "not validated");
	fflush(stdout);
}

void perf_report_progress(const struct perf_args *a, int index, size_t size)
{
	if (a->nsizes > 4 && isatty(STDERR_FILENO))
		fprintf(stderr, "\r[%d/%d] %s %zu bytes ...", index + 1, a->nsizes, a->test->name,
		        size);
}

void perf_report_end(const struct perf_args *a)
{
	if (a->format == PERF_FMT_TABLE)
		printf("%s\n", RULE);
	else if (a->format == PERF_FMT_JSON && !a->server)
		printf("]}\n");
	fflush(stdout);
}
