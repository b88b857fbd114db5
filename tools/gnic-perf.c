/* SPDX-License-Identifier: MIT */
/*
 * gnic-perf: perftest-style benchmark of gnic-emu (and, later, libgnic).
 *
 *   gnic-perf TEST [--mode MODE] [--sizes LIST] [--iters N] ... (see --help)
 *
 * main() parses the command line, opens the session (one process, or a
 * server / client pair), runs the test once per message size through the
 * selected mode and prints a row per size. Exit: 0 success, 1 run-time
 * failure or data mismatch, 2 bad usage or a mode that is not built.
 */
#include <stdio.h>
#include <stdlib.h>

#include "perf.h"

static void run_size(struct perf_session *s, int index)
{
	struct perf_args *a = s->args;
	struct perf_result r = {.size = a->sizes[index], .iters = a->iters};
	bool reporter = !a->server;

	if (reporter && perf_test_has_lat(a->test)) {
		r.lat_ns = calloc((size_t)a->iters, sizeof(*r.lat_ns));
		if (!r.lat_ns)
			perf_fatal("out of memory for %ld latency samples", a->iters);
	}
	perf_report_progress(a, index, r.size);
	a->mode->run(s, a->test, r.size, &r);
	if (reporter)
		perf_report_row(a, &r);
	else
		perf_report_server(a, r.size, true); /* a mismatch has exited already */
	free(r.lat_ns);
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
	if (!a.mode->run) {
		fprintf(stderr, "mode %s needs libgnic (not built yet)\n", a.mode->name);
		return PERF_EXIT_USAGE;
	}
	open_session(&s, &a);
	perf_env_probe(&a, &env);
	perf_report_begin(&a, &env, &s);
	for (int i = 0; i < a.nsizes; i++)
		run_size(&s, i);
	perf_report_end(&a);
	if (a.test->kind != PERF_KIND_LOCAL)
		perf_session_close(&s);
	return 0;
}
