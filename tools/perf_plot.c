/* SPDX-License-Identifier: MIT */
/*
 * --plot FILE.png: the run's rows are written as CSV (FILE.csv, the columns
 * --csv prints) and gnuplot draws them against message size, one line per
 * series (mode, scope, CTAs x threads, QPs): latency tests t_typical with
 * the 99% percentile as a second curve, bandwidth tests bandwidth and
 * message rate, rate tests the message rate. tools/perf_plot.sh draws
 * several such files together. gnuplot is looked for before anything runs:
 * without it --plot is refused (exit 2) with how to install it.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf.h"

/* CSV columns (1-based) */
#define COL_BYTES 7
#define COL_BW    10
#define COL_RATE  11
#define COL_TYP   14
#define COL_P99   17
#define COL_SER   22

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char file[4096];

	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(file, sizeof(file), "%.*s/%s", (int)n, path, prog);
		if (n && access(file, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

void perf_plot_check(const struct perf_args *a)
{
	const char *slash = strrchr(a->plot, '/');
	char dir[512];

	if (strchr(a->plot, '\'') || strchr(a->plot, '\n'))
		perf_usage_error("--plot: no quotes or newlines in the file name, please");
	if (!in_path("gnuplot"))
		perf_usage_error("--plot needs gnuplot, which is not installed (Debian/Ubuntu: "
		                 "apt-get install -y gnuplot-nox)");
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - a->plot) + 1 : 1,
	         slash ? a->plot : ".");
	if (access(dir, W_OK))
		perf_usage_error("--plot %s: cannot write into %s", a->plot, dir);
}

/* One plot command: column col against size, a line per series. */
static void panel(FILE *g, const char *csv, const int *cols, const char *const *names, int ncols,
                  const char *ylabel)
{
	const char *sep = "plot ";

	fprintf(g, "set ylabel '%s'\n", ylabel);
	for (int i = 0; i < perf_report_nseries(); i++)
		for (int c = 0; c < ncols; c++, sep = ", ")
			fprintf(g,
			        "%s'%s' every ::1 using %d:(strcol(%d) eq '%s' ? column(%d) : NaN) "
			        "with linespoints title '%s%s'",
			        sep, csv, COL_BYTES, COL_SER, perf_report_series(i), cols[c],
			        perf_report_series(i), names[c]);
	fprintf(g, "\n");
}

void perf_plot_write(const struct perf_args *a)
{
	static const int lat[] = {COL_TYP, COL_P99}, bw[] = {COL_BW}, rate[] = {COL_RATE};
	static const char *const lat_names[] = {" t_typical", " 99%"}, *const none[] = {""};
	bool two = a->test->kind == PERF_BW;
	size_t n = strlen(a->plot);
	char csv[600], unit[40];
	struct stat sb;
	FILE *f, *g;
	int st;

	n -= n > 4 && !strcmp(a->plot + n - 4, ".png") ? 4 : 0;
	snprintf(csv, sizeof(csv), "%.*s.csv", (int)n, a->plot);
	if (!(f = fopen(csv, "w")))
		perf_fatal("--plot: cannot write %s", csv);
	perf_report_csv(f);
	if (fclose(f) || !(g = popen("gnuplot", "w")))
		perf_fatal("--plot: cannot write %s or run gnuplot", csv);
	fprintf(g, "set terminal png size 1000,%d noenhanced\nset output '%s'\n", two ? 900 : 500,
	        a->plot);
	fprintf(g, "set datafile separator ','\nset multiplot layout %d,1 title '%s'\n",
	        two ? 2 : 1, perf_report_title());
	fprintf(g, "set logscale x 2\nset logscale y\nset grid\nset key outside right\n"
	           "set xlabel 'message size (bytes)'\n");
	snprintf(unit, sizeof(unit), "bandwidth (%s)", a->gbits ? "Gb/s" : "MiB/s");
	if (a->test->kind == PERF_LAT)
		panel(g, csv, lat, lat_names, 2, "latency (us)");
	if (two)
		panel(g, csv, bw, none, 1, unit);
	if (a->test->kind != PERF_LAT)
		panel(g, csv, rate, none, 1, "message rate (M/s)");
	fprintf(g, "unset multiplot\n");
	st = pclose(g);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		perf_fatal("--plot: gnuplot failed (status %d); its data is in %s", st, csv);
	if (stat(a->plot, &sb) || sb.st_size == 0)
		perf_fatal("--plot: gnuplot wrote no %s; its data is in %s", a->plot, csv);
	fprintf(stderr, "gnic-perf: plot %s (data %s)\n", a->plot, csv);
}
