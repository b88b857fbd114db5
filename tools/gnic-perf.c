/* SPDX-License-Identifier: MIT */
/*
 * gnic-perf: perftest-style benchmark of gnic-emu and libgnic.
 *
 *   gnic-perf TEST [--mode MODE] [--sizes LIST] [--iters N] ... (see --help)
 *
 * main() parses the command line, works out who runs the device code (for
 * the libgnic modes: a GPU, or CPU threads), opens the session (one
 * process, or a server / client pair) and runs the test once per row:
 * every combination of scope, QPs and CTAs (one each in host mode), then
 * every size. Exit: 0 success, 1 run-time failure or data mismatch, 2 bad
 * usage.
 */
#include <stdio.h>
#include <stdlib.h>

#include "perf.h"

static void run_size(struct perf_session *s, size_t size, int index, int total)
{
	struct perf_args *a = s->args;
	struct perf_result r = {.size = size, .iters = a->iters};
	bool reporter = !a->server;

	if (reporter && perf_test_has_lat(a->test)) {
		r.lat_ns = calloc((size_t)a->iters, sizeof(*r.lat_ns));
		if (!r.lat_ns)
			perf_fatal("out of memory for %ld latency samples", a->iters);
	}
	perf_report_progress(a, index, total, size);
	a->mode->run(s, a->test, size, &r);
	if (reporter)
		perf_report_row(a, &r);
	else
		perf_report_server(a, size, true); /* a mismatch has exited already */
	free(r.lat_ns);
}

/* Scopes, then QPs, then CTAs, then sizes: a plot's series (all but the
 * size) come out one after the other. */
static void run_rows(struct perf_session *s)
{
	struct perf_args *a = s->args;
	int total = 0, k = 0;

	for (int q = 0; q < a->nqps; q++)
		for (int c = 0; c < a->nctas; c++) {
			a->qps = a->qps_list[q];
			a->ctas = a->ctas_list[c];
			total += !a->mode->gnic || perf_gnic_row_ok(a);
		}
	total *= a->nscopes * a->nsizes;

	for (int sc = 0; sc < a->nscopes; sc++) {
		a->scope = a->scopes[sc];
		for (int q = 0; q < a->nqps; q++) {
			a->qps = a->qps_list[q];
			for (int c = 0; c < a->nctas; c++) {
				a->ctas = a->ctas_list[c];
				if (a->mode->gnic && !perf_gnic_row_ok(a))
					continue; /* noted by perf_gnic_resolve() */
				for (int i = 0; i < a->nsizes; i++)
					run_size(s, a->sizes[i], k++, total);
			}
		}
	}
}

/* Tests without a NIC need no session, only the arguments. */
static void open_session(struct perf_session *s, struct perf_args *a)
{
	if (a->test->kind != PERF_KIND_LOCAL) {
		perf_session_open(s, a);
		return;
	}
	*s = (struct perf_session){.args = a, .oob = -1, .listen_fd = -1};
	perf_wait_setup(a->timeout_s, -1);
}

int main(int argc, char **argv)
{
	struct perf_session s;
	struct perf_args a;
	struct perf_env env;

	perf_args_parse(argc, argv, &a);
	if (a.plot[0])
		perf_plot_check(&a);
	if (a.mode->gnic && !a.server) /* a server learns the shape from its client */
		perf_gnic_resolve(&a);
	open_session(&s, &a);
	if (a.mode->gnic)
		perf_gnic_env(&s, &env);
	else
		perf_env_probe(&a, &env);
	perf_report_begin(&a, &env, &s);
	run_rows(&s);
	perf_report_end(&a);
	if (a.test->kind != PERF_KIND_LOCAL)
		perf_session_close(&s);
	if (a.plot[0])
		perf_plot_write(&a);
	return 0;
}
