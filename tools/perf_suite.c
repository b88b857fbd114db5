/* SPDX-License-Identifier: MIT */
/*
 * --suite NAME: a table of gnic-perf command lines run one after another in
 * this process, each validated, their rows in one table or CSV with a group
 * column (the plot a row belongs to); --plot FILE.png draws one FILE-GROUP.png
 * per group with the "ref" group's rows as reference lines. $WORDS in an
 * entry are the sweep's lists, which --sizes, --ctas, --qps and --scope
 * replace; entries marked so run once per compared mode and memory. Every
 * command line is parsed before the first runs: bad input runs nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define MAX_RUNS 64
#define X_MODES  1u /* once per compared mode ($MODE) */
#define X_MEMS   2u /* once per memory ($MEM): GPU memory, then pinned host memory */

struct entry {
	const char *group;
	unsigned expand;
	const char *args;
};

struct suite {
	const char *name, *help;
	const struct entry *entries;
	int n;
};

/* The groups and their plots' x axes ("ref": reference lines, not a plot). */
static const char *const groups[][3] = {{"size", "size", "vs message size"},
                                        {"ctas", "ctas", "64 B, one QP, vs CTAs"},
                                        {"qps", "qps", "64 B, vs QPs"},
                                        {"post_ctas", "ctas", "post_rate, one QP, vs CTAs"},
                                        {"post_qps", "qps", "post_rate vs QPs"}};

/* GPU-initiated posting (every scope) against libgnic's CPU proxy, end to
 * end and posting only, with the ceilings measured alongside. */
static const struct entry headline[] = {
    {"ref", 0, "store_rate --mode gpu --sizes 64 --ctas $CMAX"},
    {"ref", 0, "flag_lat --mode gpu"},
    {"size", 0, "memcpy --sizes $SIZES"},
    {"size", 0, "put_bw --sizes $SIZES"},
    {"size", X_MODES | X_MEMS,
     "put_bw --mode $MODE $MEM --scope $SCOPES --ctas $CSIZE --qps $CSIZE "
     "--sizes $SIZES"},
    {"ctas", X_MODES, "put_bw --mode $MODE $HMEM --scope $SCOPES --ctas $CTAS --sizes 64"},
    {"qps", X_MODES,
     "put_bw --mode $MODE $HMEM --scope $SCOPES --ctas $CMAX --qps $QPS --sizes 64"},
    {"post_ctas", X_MODES, "post_rate --mode $MODE $HMEM --scope $SCOPES --ctas $CTAS"},
    {"post_qps", X_MODES, "post_rate --mode $MODE $HMEM --scope $SCOPES --ctas $CMAX --qps $QPS"},
};

static const struct suite suites[] = {
    {"headline", "GPU-initiated posting (thread, warp, CTA) vs libgnic's CPU proxy, with ceilings",
     headline, sizeof(headline) / sizeof(headline[0])},
};

static const char *const modes[] = {"gpu", "cpu-proxy"};

/* The sweep: on a GPU the full one, on CPU threads (or --quick) a short one. */
enum { V_SIZES, V_CTAS, V_QPS, V_SCOPES, V_CSIZE, V_CMAX, V_MODE, V_MEM, V_HMEM, NVARS };
static const char *const var_names[NVARS] = {"SIZES", "CTAS", "QPS", "SCOPES", "CSIZE",
                                             "CMAX",  "MODE", "MEM", "HMEM"};
static const char *const full[] = {"1-1M", "1,2,4,8,16,32,64,132", "1,2,4,8,16,32,64,132",
                                   "thread,warp,cta", "8"};
static const char *const reduced[] = {"64,4096", "1,2", "1,2", "thread,warp,cta", "2"};

struct suite_args {
	const struct suite *suite;
	const char *vars[NVARS];
	char cmax[16], common[512], plot[512];
	bool list, csv;
};

bool perf_suite_wanted(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--suite"))
			return true;
	return false;
}

static void append(char *buf, size_t cap, const char *a, const char *b)
{
	size_t n = strlen(buf);

	if ((size_t)snprintf(buf + n, cap - n, " %s%s%s", a, b ? " " : "", b ? b : "") >= cap - n)
		perf_usage_error("--suite: the command line is too long");
}

/* The suite's own options: the sweep's lists, what every command line
 * gets (PASS), the suite, --plot and --list; the rest are refused. */
enum { PASS = NVARS, SUITE, PLOT, LIST };
static const struct {
	const char *name;
	int what;
	bool value;
} sopts[] = {
    {"--sizes", V_SIZES, 1}, {"--ctas", V_CTAS, 1},    {"--qps", V_QPS, 1},
    {"-q", V_QPS, 1},        {"--scope", V_SCOPES, 1}, {"--repeat", PASS, 1},
    {"--iters", PASS, 1},    {"-n", PASS, 1},          {"--warmup", PASS, 1},
    {"--timeout", PASS, 1},  {"--gpu", PASS, 1},       {"--threads", PASS, 1},
    {"--quick", PASS, 0},    {"--csv", PASS, 0},       {"--no-validate", PASS, 0},
    {"--suite", SUITE, 1},   {"--plot", PLOT, 1},      {"--list", LIST, 0},
};

static void suite_parse(int argc, char **argv, struct suite_args *s)
{
	bool quick = false, gpu = perf_gpu_count() > 0;
	int cmax = 0, k;

	memset(s, 0, sizeof(*s));
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;

		for (k = 0; k < (int)(sizeof(sopts) / sizeof(*sopts)); k++)
			if (!strcmp(argv[i], sopts[k].name))
				break;
		if (k == (int)(sizeof(sopts) / sizeof(*sopts)))
			perf_usage_error("--suite: '%s' is not a suite option (see docs/perf.md)",
			                 argv[i]);
		if (sopts[k].value && !(v = argv[++i]))
			perf_usage_error("%s: needs a value", argv[i - 1]);
		if (sopts[k].what < NVARS)
			s->vars[sopts[k].what] = v;
		else if (sopts[k].what == PASS)
			append(s->common, sizeof(s->common), sopts[k].name, v);
		else if (sopts[k].what == PLOT)
			snprintf(s->plot, sizeof(s->plot), "%s", v);
		s->list |= sopts[k].what == LIST;
		quick |= !strcmp(argv[i], "--quick");
		s->csv |= !strcmp(argv[i], "--csv");
		for (size_t n = 0; sopts[k].what == SUITE && n < sizeof(suites) / sizeof(*suites);
		     n++)
			s->suite = strcmp(suites[n].name, v) ? s->suite : &suites[n];
		if (sopts[k].what == SUITE && !s->suite)
			perf_usage_error("--suite: no suite '%s' (there is: headline)", v);
	}
	for (k = 0; k < V_CMAX; k++) /* on CPU threads, or --quick: the short sweep */
		if (!s->vars[k])
			s->vars[k] = quick || !gpu ? reduced[k] : full[k];
	if (!quick && !gpu) /* and the tests' short iterations */
		append(s->common, sizeof(s->common), "--quick", NULL);
	if (!strstr(s->common, "--repeat")) /* medians of 3, with their spread */
		append(s->common, sizeof(s->common), "--repeat", "3");
	for (const char *p = s->vars[V_CTAS]; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		cmax = atoi(p) > cmax ? atoi(p) : cmax; /* a bad list fails in the parse */
	snprintf(s->cmax, sizeof(s->cmax), "%d", cmax > 0 ? cmax : 1);
	s->vars[V_CMAX] = s->cmax;
}

/* tmpl with its $WORDS replaced, then the common options. */
static void expand(const struct suite_args *s, const char *tmpl, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *p = tmpl; *p && n + 1 < cap;) {
		int k = 0;

		if (*p != '$') {
			if (*p != ' ' || (n && out[n - 1] != ' '))
				out[n++] = *p;
			p++;
			continue;
		}
		while (k < NVARS && strncmp(p + 1, var_names[k], strlen(var_names[k])))
			k++;
		if (k == NVARS) /* a typo in the table */
			perf_fatal("internal: suite entry '%s' names no known $WORD", tmpl);
		n += (size_t)snprintf(out + n, cap - n, "%s", s->vars[k]);
		p += 1 + strlen(var_names[k]);
	}
	out[n < cap ? n : cap - 1] = 0;
	append(out, cap, s->common + (s->common[0] == ' '), NULL);
}

/* "gnic-perf ARGS" into argv (pointers into line, which it splits). */
static int split(char *line, char **argv, int cap)
{
	int n = 0;

	argv[n++] = "gnic-perf";
	for (char *t = strtok(line, " "); t && n < cap - 1; t = strtok(NULL, " "))
		argv[n++] = t;
	argv[n] = NULL;
	return n;
}

struct run {
	const char *group;
	char line[1024];
	struct perf_args a;
};

/* Every entry's command lines, parsed (bad input exits 2 here, before any run). */
static int plan(struct suite_args *s, struct run *runs)
{
	bool gpu = perf_gpu_count() > 0;
	int n = 0;

	for (int e = 0; e < s->suite->n; e++) {
		const struct entry *en = &s->suite->entries[e];

		for (int m = 0; m < (en->expand & X_MODES ? 2 : 1); m++)
			for (int mem = 0; mem < (en->expand & X_MEMS && gpu ? 2 : 1); mem++) {
				struct run *r = &runs[n++];
				char copy[1024], *argv[64];

				if (n > MAX_RUNS)
					perf_fatal("internal: suite %s has over %d runs",
					           s->suite->name, MAX_RUNS);
				s->vars[V_MODE] = modes[m];
				s->vars[V_MEM] = mem ? "--host-mem" : "";
				s->vars[V_HMEM] =
				    gpu ? "--host-mem" : ""; /* CPU threads: host memory */
				r->group = en->group;
				expand(s, en->args, r->line, sizeof(r->line));
				memcpy(copy, r->line, sizeof(copy));
				perf_args_parse(split(copy, argv, 64), argv, &r->a);
			}
	}
	return n;
}

static void draw(const struct suite_args *s, bool gnuplot)
{
	char ref[600], csv[600], png[600], suffix[32], title[160];

	perf_plot_path(csv, sizeof(csv), s->plot, "", ".csv");
	perf_plot_csv(csv, NULL);
	perf_plot_path(ref, sizeof(ref), s->plot, "-ref", ".csv");
	perf_plot_csv(ref, "ref");
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		snprintf(suffix, sizeof(suffix), "-%s", groups[g][0]);
		perf_plot_path(csv, sizeof(csv), s->plot, suffix, ".csv");
		perf_plot_path(png, sizeof(png), s->plot, suffix, ".png");
		snprintf(title, sizeof(title), "gnic-perf suite %s: %s", s->suite->name,
		         groups[g][2]);
		perf_plot_csv(csv, groups[g][0]);
		perf_plot_draw(png, title, groups[g][1], ref, csv, gnuplot);
	}
}

int perf_suite_main(int argc, char **argv)
{
	static struct run runs[MAX_RUNS];
	uint64_t t0 = perf_now_ns();
	struct suite_args s;
	bool gnuplot = false;
	FILE *log;
	int n, total = 0;

	suite_parse(argc, argv, &s);
	if (!s.suite)
		perf_usage_error("--suite: which one? (there is: headline)");
	n = plan(&s, runs);
	if (s.list) {
		printf("suite %s: %s\n", s.suite->name, s.suite->help);
		for (int i = 0; i < n; i++)
			printf("  %-9s gnic-perf %s\n", runs[i].group, runs[i].line);
		return 0;
	}
	if (s.plot[0]) /* without gnuplot the CSV files, and how to draw them */
		gnuplot = perf_plot_check(s.plot, false);
	log = s.csv ? stderr : stdout;
	for (int i = 0; i < n; i++) {
		uint64_t t = perf_now_ns();

		fprintf(log, "gnic-perf suite %s %d/%d (%s): gnic-perf %s\n", s.suite->name, i + 1,
		        n, runs[i].group, runs[i].line);
		fflush(log);
		perf_report_group(runs[i].group);
		total += perf_run_args(&runs[i].a);
		fprintf(log, "gnic-perf suite %s %d/%d: %.1f s\n", s.suite->name, i + 1, n,
		        (double)(perf_now_ns() - t) / 1e9);
	}
	if (s.plot[0])
		draw(&s, gnuplot);
	fprintf(log, "gnic-perf: PASS (suite %s: %d command lines, %d runs%s, %.0f s)\n",
	        s.suite->name, n, total, runs[0].a.validate ? " validated" : ", validation off",
	        (double)(perf_now_ns() - t0) / 1e9);
	return 0;
}
