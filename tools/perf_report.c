/* SPDX-License-Identifier: MIT */
/*
 * Output: perftest's tables (bandwidth and rate tests: #bytes, #iterations,
 * BW peak, BW average, MsgRate; latency tests: t_min, t_max, t_typical (the
 * median), t_avg, t_stdev, 99% and 99.9% percentiles), or CSV / JSON rows
 * of the same figures. With --repeat a row holds the medians of its runs,
 * figure by figure, and the min-max spread of its headline figure (BW
 * average; MsgRate for rate tests; t_typical). Rows are kept for --plot,
 * which writes them as CSV and has tools/perf_plot.sh draw them.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf.h"

#define RULE                                                                                       \
	"---------------------------------------------------------------------------------------"  \
	"---------------------------------------"

static const char emu_banner[] =
    "NIC: gnic-emu (software emulator) — figures are emulator figures, not hardware";

struct row {
	char series[96];
	int reps;
	size_t size;
	struct perf_stats st; /* medians */
	double lo, hi;        /* the headline figure's spread */
};

/* Every row's CSV line is kept for --plot (a suite's rows name their group). */
static struct {
	const struct perf_session *s;
	const char *code, *memory, *group;
	char connection[320], title[600];
	char *header, **lines;
	const char **groups;
	int n, cap;
} rep;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
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
	st->v[PERF_T_SD] = sqrt(fmax(0, sq / (double)n - pow(sum / (double)n, 2))) / 1e3;
	st->v[PERF_T_P99] = ns[(long)ceil(0.99 * (double)n) - 1] / 1e3; /* nearest rank */
	st->v[PERF_T_P999] = ns[(long)ceil(0.999 * (double)n) - 1] / 1e3;
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

static bool lat(const struct perf_args *a)
{
	return a->test->kind == PERF_LAT;
}

/* ---- the table ---------------------------------------------------------------------------- */

/* Every figure: its CSV / JSON name (bandwidths get their unit appended),
 * its table head (a format: %s is the bandwidth unit) and column width. */
static const struct fig {
	const char *name, *head;
	int width;
} figs[PERF_NFIG] = {{"bw_peak", "BW peak[%s]", 17},
                     {"bw_avg", "BW average[%s]", 20},
                     {"msg_rate_mpps", "MsgRate[Mpps]", 13},
                     {"t_min_us", "t_min[usec]", 12},
                     {"t_max_us", "t_max[usec]", 12},
                     {"t_typical_us", "t_typical[usec]", 16},
                     {"t_avg_us", "t_avg[usec]", 12},
                     {"t_stdev_us", "t_stdev[usec]", 14},
                     {"t_p99_us", "99%% percentile[usec]", 21},
                     {"t_p999_us", "99.9%% percentile[usec]", 22}};

/* A row, or with w NULL the header: #bytes, #iterations, then the test's
 * figures (latency tests: the t_ ones, the others: the rest). */
static void table_line(const struct perf_args *a, const struct row *w)
{
	int lo = lat(a) ? PERF_T_MIN : PERF_BW_PEAK, hi = lat(a) ? PERF_NFIG : PERF_T_MIN;
	char cell[40];

	if (a->mode->gnic && w)
		printf(" %-12s %-6s %5d %7d %3d ", a->mode->name, perf_scope_name(a->scope),
		       a->ctas, a->threads, a->qps);
	else if (a->mode->gnic)
		printf(" %-12s %-6s %5s %7s %3s ", "mode", "scope", "ctas", "threads", "qps");
	if (w)
		printf(" %-10zu %-12ld", w->size, w->st.iters);
	else
		printf(" %-10s %-12s", "#bytes", "#iterations");
	for (int k = lo; k < hi; k++) {
		if (!w)
			snprintf(cell, sizeof(cell), figs[k].head, a->gbits ? "Gb/s" : "MiB/s");
		else
			snprintf(cell, sizeof(cell), "%.*f", k == PERF_MPPS ? 4 : 2, w->st.v[k]);
		/* the last column is padded only when the spread follows */
		printf(" %-*s", k + 1 < hi || a->repeat > 1 ? figs[k].width : 0, cell);
	}
	if (a->repeat > 1 && w)
		printf(" %.4g-%.4g", w->lo, w->hi);
	printf("%s\n", a->repeat > 1 && !w ? " spread (min-max)" : "");
}

static void print_list(const char *label, const int *v, int n)
{
	printf("%s", label);
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : " ", v[i]);
}

static void table_begin(const struct perf_session *s)
{
	const struct perf_args *a = s->a;
	const struct perf_ep *ep = s->ep[PERF_A] ? s->ep[PERF_A] : s->ep[PERF_B];
	const char *spin = getenv("GNIC_EMU_SPIN_US");

	printf("%s\n", RULE);
	if (s->emu)
		printf(" %s\n", emu_banner);
	printf(" gnic-perf %s: %s\n Mode         : %s: %s\n", a->test->name, a->test->help,
	       a->mode->name, a->mode->help);
	if (!(a->test->flags & PERF_F_LOCAL))
		printf(" Device       : %s\n %-13s: %s\n", s->nic,
		       a->mode->gnic ? "Provider lib" : "libibverbs", s->lib);
	if (a->mode->gnic)
		printf(" Device code  : %s\n Memory       : %s\n", rep.code, rep.memory);
	if (a->mode->gnic && s->emu)
		printf(" gnic-emu     : GNIC_EMU_SPIN_US=%s (device-thread doorbells do not wake a "
		       "sleeping engine)\n",
		       spin ? spin : "auto");
	printf(" Connection   : %s\n", rep.connection);
	if (a->mode->gnic) {
		printf(" Scope        :");
		for (int i = 0; i < a->nscopes; i++)
			printf("%s%s", i ? "," : " ", perf_scope_name(a->scopes[i]));
		print_list("   CTAs:", a->ctas_list, a->nctas);
		printf("   threads/CTA: %d", a->threads);
		print_list("   QPs:", a->qps_list, a->nqps);
		printf("\n QP settings  : share %s, SQ depth %d, CQE every 16 BBs\n",
		       lat(a) ? "EXCLUSIVE" : "GPU", a->tx_depth);
		if (a->test->flags & PERF_F_ETH)
			printf(
			    " Ethernet     : a queue pair per CTA, each queue a UDP-port rule and "
			    "%d receive buffers; at most %d frames in flight per CTA\n",
			    a->eth_rx_bufs, a->eth_window);
	} else if (ep) {
		printf(
		    " QPs          : %-8d TX depth : %-6u Signaled : every %u   Inline : <= %u B\n",
		    a->qps_list[0], ep->sq_depth, ep->sq_signal, ep->max_inline);
	}
	if (lat(a))
		printf(" Latency      : %s\n", a->test->flags & PERF_F_HALF_RTT
		                                   ? "half a round trip (like perftest)"
		                                   : "one operation at a time, whole operation");
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
		       lat(a)                       ? "t_typical"
		       : a->test->kind == PERF_RATE ? "MsgRate"
		                                    : "BW average");
	printf(" Validation   : %s\n%s\n", a->validate ? "on" : "off", RULE);
	if (a->server)
		printf(" %-10s %-12s data\n", "#bytes", "#iterations");
	else
		table_line(a, NULL);
}

/* ---- CSV and JSON: one list of fields -------------------------------------------------------- */

enum { NUM, STR, QSTR }; /* QSTR: quoted in CSV */
struct field {
	char name[24], val[200];
	int kind;
};

static struct field *put(struct field *f, const char *name, int kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static struct field *put(struct field *f, const char *name, int kind, const char *fmt, ...)
{
	va_list ap;

	snprintf(f->name, sizeof(f->name), "%s", name);
	f->kind = kind;
	va_start(ap, fmt);
	vsnprintf(f->val, sizeof(f->val), fmt, ap);
	va_end(ap);
	return f + 1;
}

/* The row's fields (f has room for 32); returns how many. */
static int fields(const struct perf_args *a, const struct row *w, struct field *f)
{
	struct field *p = put(f, "test", STR, "%s", a->test->name);

	p = put(p, "mode", STR, "%s", a->mode->name);
	if (a->mode->gnic) {
		p = put(p, "scope", STR, "%s", perf_scope_name(a->scope));
		p = put(p, "ctas", NUM, "%d", a->ctas);
		p = put(p, "threads", NUM, "%d", a->threads);
	} else {
		p = put(put(put(p, "scope", STR, "-"), "ctas", STR, "-"), "threads", STR, "-");
	}
	p = put(p, "qps", NUM, "%d", a->qps);
	p = put(p, "bytes", NUM, "%zu", w->size);
	p = put(p, "iterations", NUM, "%ld", w->st.iters);
	for (int k = 0; k < PERF_NFIG; k++) {
		char name[24];

		snprintf(name, sizeof(name), "%s%s", figs[k].name,
		         k > PERF_BW_AVG ? ""
		         : a->gbits      ? "_gbit_s"
		                         : "_mib_s");
		p = lat(a) == (k >= PERF_T_MIN) ? put(p, name, NUM, "%.6g", w->st.v[k])
		                                : put(p, name, NUM, "%s", "");
	}
	p = put(p, "repeats", NUM, "%d", w->reps);
	p = put(p, "spread_min", NUM, "%.6g", w->lo);
	p = put(p, "spread_max", NUM, "%.6g", w->hi);
	p = put(p, "series", STR, "%s", w->series);
	p = put(p, "device", STR, "%s", rep.s->nic);
	p = put(p, "device_code", QSTR, "%s", rep.code);
	p = put(p, "memory", QSTR, "%s", rep.memory);
	p = put(p, "provider", STR, "%s", rep.s->emu ? "gnic-emu" : "rdma-core");
	p = put(p, "connection", QSTR, "%s", rep.connection);
	if (rep.group)
		p = put(p, "group", STR, "%s", rep.group);
	return (int)(p - f);
}

/* The fields' names (header) or values as one CSV line, newline included. */
static char *csv_line(const struct field *fs, int n, bool header)
{
	char line[8192];
	size_t k = 0;

	for (int i = 0; i < n; i++)
		k += (size_t)snprintf(line + k, sizeof(line) - k,
		                      fs[i].kind == QSTR && !header ? "%s\"%s\"" : "%s%s",
		                      i ? "," : "", header ? fs[i].name : fs[i].val);
	snprintf(line + k, sizeof(line) - k, "\n");
	return strdup(line);
}

/* Our strings and the provider's: escape what could break JSON anyway. */
static void json_str(const char *v)
{
	putchar('"');
	for (; *v; v++)
		printf(*v == '"' || *v == '\\' ? "\\%c" : "%c", *v);
	putchar('"');
}

static void json_row(const struct field *fs, int n, bool first_row)
{
	printf("%s{", first_row ? "\n  " : ",\n  ");
	for (int i = 0, first = 1; i < n; i++) {
		if (!fs[i].val[0])
			continue; /* a figure the test does not have */
		printf("%s\"%s\": ", first ? "" : ", ", fs[i].name);
		if (fs[i].kind == NUM)
			printf("%s", fs[i].val);
		else
			json_str(fs[i].val);
		first = 0;
	}
	printf("}");
}

/* ---- rows ------------------------------------------------------------------------------------ */

void perf_report_begin(const struct perf_session *s)
{
	const struct perf_args *a = s->a;

	rep.s = s;
	if (a->server)
		snprintf(rep.connection, sizeof(rep.connection), "server on TCP port %d (side B)",
		         a->port);
	else if (a->host[0])
		snprintf(rep.connection, sizeof(rep.connection), "client of %s port %d (side A)",
		         a->host, a->port);
	else
		snprintf(rep.connection, sizeof(rep.connection), "%s",
		         a->test->flags & PERF_F_LOCAL         ? "local (no NIC)"
		         : a->test->flags & PERF_F_UNCONNECTED ? "none (QPs left unconnected)"
		         : a->test->flags & PERF_F_LOOPBACK
		             ? "loopback (QPs connected to themselves)"
		         : a->test->flags & PERF_F_ETH
		             ? "the NIC's Ethernet port, no interface (gnic-emu: loopback); "
		               "side A the wire, side B the echo"
		             : "in-process (sides A and B)");
	rep.code = a->mode->gnic ? a->dev_name : "host CPU thread (verbs)";
	rep.memory = !a->mode->gnic || !a->on_gpu ? "host memory"
	             : a->host_mem                ? "pinned host memory (--host-mem)"
	                           : "GPU memory (gnic-emu moves each message with a CUDA copy; "
	                             "--host-mem shows the posting path better)";
	snprintf(rep.title, sizeof(rep.title), "gnic-perf %s (%s, %s)", a->test->name,
	         a->mode->gnic ? a->dev_name : "host mode", rep.connection);
	if (s->emu && a->format != PERF_FMT_TABLE)
		fprintf(stderr, "gnic-perf: %s\n", emu_banner);
	if (a->format == PERF_FMT_TABLE)
		table_begin(s);
	else if (a->format == PERF_FMT_JSON && !a->server)
		printf("{\"test\": \"%s\", \"mode\": \"%s\", \"emulator\": %s, \"results\": [",
		       a->test->name, a->mode->name, s->emu ? "true" : "false");
	fflush(stdout);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void perf_report_group(const char *group)
{
	rep.group = group;
}

void perf_report_row(const struct perf_args *a, size_t size, const struct perf_stats *reps, int n)
{
	int head = lat(a) ? PERF_T_TYP : a->test->kind == PERF_RATE ? PERF_MPPS : PERF_BW_AVG;
	struct field fs[32];
	struct row row, *w = &row;
	double v[100];
	int nf;

	*w = (struct row){.reps = n, .size = size, .st = reps[0]};
	for (int k = 0; k < PERF_NFIG; k++) {
		for (int i = 0; i < n; i++)
			v[i] = reps[i].v[k];
		w->st.v[k] = median(v, n);
		w->lo = k == head ? v[0] : w->lo;
		w->hi = k == head ? v[n - 1] : w->hi;
	}
	if (a->mode->gnic)
		snprintf(w->series, sizeof(w->series), "%s %s %dx%d q%d%s", a->mode->name,
		         perf_scope_name(a->scope), a->ctas, a->threads, a->qps,
		         a->on_gpu && a->host_mem ? " host-mem" : "");
	else
		snprintf(w->series, sizeof(w->series), "%s q%d", a->mode->name, a->qps);
	nf = fields(a, w, fs);
	if (rep.n == rep.cap) {
		rep.cap = rep.cap ? 2 * rep.cap : 64;
		rep.lines = realloc(rep.lines, (size_t)rep.cap * sizeof(*rep.lines));
		rep.groups = realloc(rep.groups, (size_t)rep.cap * sizeof(*rep.groups));
		if (!rep.lines || !rep.groups)
			perf_fatal("out of memory");
	}
	if (!rep.header)
		rep.header = csv_line(fs, nf, true);
	rep.groups[rep.n] = rep.group;
	if (!(rep.lines[rep.n++] = csv_line(fs, nf, false)) || !rep.header)
		perf_fatal("out of memory");
	if (a->format == PERF_FMT_TABLE)
		table_line(a, w);
	else if (a->format == PERF_FMT_CSV)
		printf("%s%s", rep.n == 1 ? rep.header : "", rep.lines[rep.n - 1]);
	else
		json_row(fs, nf, rep.n == 1);
	fflush(stdout);
}

void perf_report_server_row(const struct perf_args *a, size_t size)
{
	char iters[24] = "-"; /* with -D the client counts them */

	if (!a->duration)
		snprintf(iters, sizeof(iters), "%ld", a->iters);
	if (a->format == PERF_FMT_TABLE)
		printf(" %-10zu %-12s %s\n", size, iters,
		       a->validate ? "validated" : "not validated");
	fflush(stdout);
}

void perf_report_end(const struct perf_args *a)
{
	if (a->format == PERF_FMT_TABLE)
		printf("%s\n", RULE);
	else if (a->format == PERF_FMT_JSON && !a->server)
		printf("\n]}\n");
	fflush(stdout);
}

/* ---- --plot: the rows as CSV, drawn by perf_plot.sh ------------------------------------------ */

/* Installed next to gnic-perf as gnic-perf-plot; else the source tree's. */
static const char *plot_script(void)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 20);
	char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;

	if (slash) {
		strcpy(slash, "/gnic-perf-plot");
		if (access(path, R_OK) == 0)
			return path;
	}
	return PERF_PLOT_SH;
}

bool perf_plot_check(const char *plot, bool need_gnuplot)
{
	bool gnuplot = system("command -v gnuplot >/dev/null 2>&1") == 0;

	if (strchr(plot, '\'') || strchr(plot, '\n'))
		perf_usage_error("--plot: no quotes or newlines in the file name, please");
	if (!gnuplot && need_gnuplot)
		perf_usage_error("--plot needs gnuplot, which is not installed (Debian/Ubuntu: "
		                 "apt-get install -y gnuplot-nox)");
	if (access(plot_script(), R_OK))
		perf_usage_error("--plot: %s is missing", plot_script());
	return gnuplot;
}

/* base + suffix + ext, base being png without its ".png". */
void perf_plot_path(char *out, size_t cap, const char *png, const char *suffix, const char *ext)
{
	size_t n = strlen(png) - (strlen(png) > 4 && !strcmp(strchr(png, 0) - 4, ".png") ? 4 : 0);

	if ((size_t)snprintf(out, cap, "%.*s%s%s", (int)n, png, suffix, ext) >= cap)
		perf_usage_error("--plot: the file name is too long");
}

void perf_plot_csv(const char *path, const char *group)
{
	FILE *f = fopen(path, "w");

	if (!f)
		perf_fatal("--plot: cannot write %s", path);
	fputs(rep.header ? rep.header : "", f);
	for (int i = 0; i < rep.n; i++)
		if (!group || (rep.groups[i] && !strcmp(rep.groups[i], group)))
			fputs(rep.lines[i], f);
	if (fclose(f))
		perf_fatal("--plot: cannot write %s", path);
}

void perf_plot_draw(const char *png, const char *title, const char *x, const char *ref,
                    const char *csv, bool now)
{
	char *argv[12] = {"sh", (char *)plot_script(), "-o", (char *)png, "-t", (char *)title};
	posix_spawn_file_actions_t fa;
	int n = 6, st;
	bool ok;
	pid_t pid;

	if (x)
		argv[n++] = "-x", argv[n++] = (char *)x;
	if (ref)
		argv[n++] = "-r", argv[n++] = (char *)ref;
	argv[n] = (char *)csv;
	if (!now) { /* no gnuplot here: how to draw it elsewhere */
		fprintf(stderr,
		        "gnic-perf: note: no gnuplot: draw %s with: sh tools/perf_plot.sh -o %s -t "
		        "'%s'%s%s%s%s %s\n",
		        png, png, title, x ? " -x " : "", x ? x : "", ref ? " -r " : "",
		        ref ? ref : "", csv);
		return;
	}
	fflush(stdout);
	ok = !posix_spawn_file_actions_init(&fa) &&
	     !posix_spawn_file_actions_adddup2(&fa, 2, 1) && /* its messages: not in the CSV */
	     !posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, NULL);
	posix_spawn_file_actions_destroy(&fa);
	if (!ok || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		perf_fatal("--plot: perf_plot.sh could not draw %s (its data: %s)", png, csv);
}

void perf_plot_write(const struct perf_args *a)
{
	char csv[600];

	perf_plot_path(csv, sizeof(csv), a->plot, "", ".csv");
	perf_plot_csv(csv, NULL);
	perf_plot_draw(a->plot, rep.title, NULL, NULL, csv, true);
}
