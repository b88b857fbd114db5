/* SPDX-License-Identifier: MIT */
/*
 * --plot FILE.png: the run's rows are written as CSV (FILE.csv, the same
 * columns --csv prints) and gnuplot draws bandwidth and message rate
 * against message size from it, one line per series (mode, scope, CTAs x
 * threads, QPs). tools/perf_plot.sh draws several such CSV files together.
 *
 * gnuplot is looked for before the run: without it --plot is refused
 * (exit 2) with how to install it, and nothing runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf.h"

#define CSV_BYTES 7
#define CSV_BW    9
#define CSV_RATE  10
#define CSV_SER   15

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char dir[4096];

	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(dir, sizeof(dir), "%.*s/%s", (int)n, path, prog);
		if (n && access(dir, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* FILE.png -> FILE.csv (or FILE + .csv) */
static void csv_path(const char *png, char *out, size_t cap)
{
	size_t n = strlen(png);

	if (n > 4 && !strcmp(png + n - 4, ".png"))
		n -= 4;
	snprintf(out, cap, "%.*s.csv", (int)n, png);
}

static void dir_of(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(out, cap, ".");
	else if (slash == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

void perf_plot_check(const struct perf_args *a)
{
	char dir[512];

	if (strchr(a->plot, '\'') || strchr(a->plot, '\n'))
		perf_usage_error("--plot: quotes and newlines are not allowed in the file name");
	if (!in_path("gnuplot"))
		perf_usage_error("--plot needs gnuplot, which is not installed (Debian/Ubuntu: "
		                 "apt-get install -y gnuplot-nox)");
	dir_of(a->plot, dir, sizeof(dir));
	if (access(dir, W_OK))
		perf_usage_error("--plot %s: cannot write into %s", a->plot, dir);
}

static void write_csv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		perf_fatal("--plot: cannot write %s", path);
	perf_report_csv_header(f);
	perf_report_csv_rows(f);
	if (fclose(f))
		perf_fatal("--plot: cannot write %s", path);
}

/* One "plot" command: column col against size, a line per series. */
static void plot_panel(FILE *g, const char *csv, int col, const char *ylabel)
{
	int n = perf_report_nseries();

	fprintf(g, "set ylabel '%s'\nplot ", ylabel);
	for (int i = 0; i < n; i++)
		fprintf(g,
		        "%s'%s' every ::1 using %d:(strcol(%d) eq '%s' ? column(%d) : NaN) "
		        "with linespoints title '%s'",
		        i ? ", " : "", csv, CSV_BYTES, CSV_SER, perf_report_series(i), col,
		        perf_report_series(i));
	fprintf(g, "\n");
}

void perf_plot_write(const struct perf_args *a)
{
	bool post = a->test->kind == PERF_KIND_POST;
	char csv[600];
	struct stat sb;
	FILE *g;
	int st;

	csv_path(a->plot, csv, sizeof(csv));
	write_csv(csv);
	fflush(stdout);
	g = popen("gnuplot", "w");
	if (!g)
		perf_fatal("--plot: cannot run gnuplot");
	fprintf(g, "set terminal png size 1000,%d noenhanced\n", post ? 500 : 900);
	fprintf(g, "set output '%s'\nset datafile separator ','\n", a->plot);
	fprintf(g, "set multiplot layout %d,1 title '%s'\n", post ? 1 : 2, perf_report_title());
	fprintf(g, "set logscale x 2\nset logscale y\nset grid\nset key outside right\n");
	fprintf(g, "set xlabel 'message size (bytes)'\n");
	if (!post)
		plot_panel(g, csv, CSV_BW, "bandwidth (MiB/s)");
	plot_panel(g, csv, CSV_RATE, post ? "WQEs posted (M/s)" : "message rate (M/s)");
	fprintf(g, "unset multiplot\n");
	st = pclose(g);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		perf_fatal("--plot: gnuplot failed (exit status %d); its data is in %s",
		           st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st), csv);
	if (stat(a->plot, &sb) || sb.st_size == 0)
		perf_fatal("--plot: gnuplot wrote no %s; its data is in %s", a->plot, csv);
	fprintf(stderr, "gnic-perf: plot %s (data %s)\n", a->plot, csv);
}
