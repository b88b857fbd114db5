/* SPDX-License-Identifier: MIT */
/*
 * Command line of gnic-perf. Parsing fills struct perf_args; defaults that
 * depend on the test (sizes, iterations) are applied after parsing, and
 * combinations a test or mode cannot honour are refused with exit 2.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: gnic-perf TEST [options]\n"
	        "       gnic-perf --list | --help\n"
	        "\n"
	        "Runs TEST (see --list) and prints one row per message size. With neither\n"
	        "--server nor --connect both sides run in this process.\n"
	        "\n"
	        "Options:\n"
	        "  --mode MODE          how work requests reach the NIC (default host;\n"
	        "                       post_rate: gpu). gpu, gpu-bf, cpu-assisted and\n"
	        "                       cpu-proxy run device threads through libgnic: CUDA\n"
	        "                       threads on a GPU, else CPU threads (same code)\n"
	        "  --sizes LIST         sizes in bytes: 8,64,4096 or ranges of powers of two\n"
	        "                       such as 1-1M (suffixes K, M, G are binary); default\n"
	        "                       1-1M for bw tests, 8,64,4096 for lat tests\n"
	        "  --iters N            timed iterations per size (default: bw 5000, lat 1000,\n"
	        "                       atomic_rate 10000, post_rate 200000; --quick: 1000,\n"
	        "                       200, 2000, 20000)\n"
	        "  --warmup N           untimed iterations before them (default iters/10);\n"
	        "                       libgnic modes round both up to a multiple of the\n"
	        "                       device threads\n"
	        "  --qps N[,N...]       QPs used round-robin (bw tests and atomic_rate); a\n"
	        "                       list sweeps (libgnic modes; CTA c uses QP c %% qps)\n"
	        "  --ctas N[,N...]      libgnic modes: CTAs (CPU threads without a GPU, at\n"
	        "                       most %d); a list sweeps (default 1)\n"
	        "  --threads N          libgnic modes: threads per CTA (default 128 on a GPU\n"
	        "                       for bw tests, else 1; always 1 on CPU threads)\n"
	        "  --scope S[,S...]     thread, warp or cta: how device threads post (put_bw,\n"
	        "                       post_rate; default thread, post_rate all three)\n"
	        "  --host-mem           libgnic modes on a GPU: buffers in pinned host\n"
	        "                       memory instead of GPU memory\n"
	        "  --gpu N              CUDA device to use (default 0)\n"
	        "  --tx-depth N         work requests outstanding per QP (default 128; libgnic\n"
	        "                       modes: the SQ depth, default 1024)\n"
	        "  --server             wait for one client (the side that validates)\n"
	        "  --port P             server's TCP port (default %d)\n"
	        "  --connect HOST[:PORT]\n"
	        "                       run as the client of a server (the client's settings\n"
	        "                       are used by both sides)\n"
	        "  --csv | --json       machine-readable rows instead of the table\n"
	        "  --plot FILE.png      also draw bandwidth and message rate against size\n"
	        "                       with gnuplot (its data: FILE.csv, written too)\n"
	        "  --no-validate        skip data validation (on by default)\n"
	        "  --device NAME        verbs device (default: the first one)\n"
	        "  --quick              short sweep: sizes 8,64,4096,65536, few iterations\n"
	        "  --timeout S          longest wait for anything (default %d s)\n"
	        "  --list               list tests and modes\n"
	        "  --help               this text\n"
	        "\n"
	        "Exit status: 0 success, 1 run-time failure or data mismatch, 2 bad usage.\n",
	        PERF_CPU_MAX_CTAS, PERF_DEFAULT_PORT, PERF_DEFAULT_TIMEOUT_S);
}

/* A size with an optional binary suffix; 0 if it does not parse. */
static size_t parse_size(const char *s, const char *end)
{
	unsigned long long v = 0, mult = 1;
	const char *p = s;

	if (p == end || !isdigit((unsigned char)*p))
		return 0;
	for (; p < end && isdigit((unsigned char)*p); p++) {
		v = v * 10 + (unsigned)(*p - '0');
		if (v > PERF_MAX_SIZE)
			return 0;
	}
	if (p < end) {
		switch (toupper((unsigned char)*p++)) {
		case 'K':
			mult = 1ull << 10;
			break;
		case 'M':
			mult = 1ull << 20;
			break;
		case 'G':
			mult = 1ull << 30;
			break;
		default:
			return 0;
		}
	}
	if (p != end || v * mult > PERF_MAX_SIZE)
		return 0;
	return (size_t)(v * mult);
}

static void add_size(struct perf_args *a, size_t v)
{
	if (a->nsizes == PERF_MAX_SIZES)
		perf_usage_error("--sizes: at most %d sizes", PERF_MAX_SIZES);
	a->sizes[a->nsizes++] = v;
}

/* One comma-separated item: a size, or LO-HI meaning LO, 2*LO, ... <= HI. */
static void parse_size_item(struct perf_args *a, const char *s, const char *end)
{
	const char *dash = memchr(s, '-', (size_t)(end - s));
	size_t lo = parse_size(s, dash ? dash : end);
	size_t hi = dash ? parse_size(dash + 1, end) : lo;

	if (!lo || !hi || hi < lo)
		perf_usage_error("--sizes: bad item '%.*s' (sizes are 1 B .. 1G)", (int)(end - s),
		                 s);
	for (size_t v = lo; v <= hi; v *= 2)
		add_size(a, v);
}

static void parse_sizes(struct perf_args *a, const char *s)
{
	a->nsizes = 0;
	while (*s) {
		const char *end = strchr(s, ',');

		if (!end)
			end = s + strlen(s);
		parse_size_item(a, s, end);
		s = *end ? end + 1 : end;
	}
	if (!a->nsizes)
		perf_usage_error("--sizes: empty list");
	a->sizes_set = true;
}

static long parse_long(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		perf_usage_error("%s: '%s' is not a number in [%ld, %ld]", opt, s, min, max);
	return v;
}

/* N[,N...] of integers in [min, max]. */
static int parse_int_list(const char *opt, const char *s, int min, int max, int *out)
{
	char buf[256], *save = NULL, *tok;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		perf_usage_error("%s: list too long", opt);
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == PERF_MAX_LIST)
			perf_usage_error("%s: at most %d values", opt, PERF_MAX_LIST);
		out[n++] = (int)parse_long(opt, tok, min, max);
	}
	if (!n || s[strlen(s) - 1] == ',' || s[0] == ',' || strstr(s, ",,"))
		perf_usage_error("%s: '%s' is not a list such as 1,2,4", opt, s);
	return n;
}

static const char *const scope_names[] = {"thread", "warp", "cta"};

const char *perf_scope_name(int scope)
{
	return scope >= 0 && scope < 3 ? scope_names[scope] : "?";
}

static void parse_scopes(struct perf_args *a, const char *s)
{
	char buf[128], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf))
		perf_usage_error("--scope: list too long");
	strcpy(buf, s);
	a->nscopes = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < 3 && strcmp(tok, scope_names[k]); k++)
			;
		if (k == 3)
			perf_usage_error("--scope: '%s' is not thread, warp or cta", tok);
		if (a->nscopes == 3)
			perf_usage_error("--scope: at most the three scopes");
		a->scopes[a->nscopes++] = k;
	}
	if (!a->nscopes)
		perf_usage_error("--scope: empty list");
	a->scope_set = true;
}

int perf_list_max(const int *v, int n)
{
	int m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static void copy_str(char *dst, size_t cap, const char *src, const char *opt)
{
	if (strlen(src) >= cap)
		perf_usage_error("%s: too long", opt);
	strcpy(dst, src);
}

/* HOST, HOST:PORT, [V6ADDR] or [V6ADDR]:PORT. */
static void parse_connect(struct perf_args *a, const char *s)
{
	const char *colon, *host = s;
	size_t hlen;

	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close || (close[1] && close[1] != ':'))
			perf_usage_error("--connect: bad address '%s'", s);
		host = s + 1;
		hlen = (size_t)(close - host);
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			perf_usage_error("--connect: write IPv6 addresses as [ADDR]:PORT");
		hlen = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (!hlen || hlen >= sizeof(a->connect_host))
		perf_usage_error("--connect: bad host in '%s'", s);
	memcpy(a->connect_host, host, hlen);
	a->connect_host[hlen] = 0;
	if (colon)
		a->port = (int)parse_long("--connect port", colon + 1, 1, 65535);
}

enum {
	OPT_MODE = 256,
	OPT_SIZES,
	OPT_ITERS,
	OPT_WARMUP,
	OPT_QPS,
	OPT_DEPTH,
	OPT_SERVER,
	OPT_PORT,
	OPT_CONNECT,
	OPT_CSV,
	OPT_JSON,
	OPT_NO_VALIDATE,
	OPT_DEVICE,
	OPT_QUICK,
	OPT_TIMEOUT,
	OPT_HELP,
	OPT_LIST,
	OPT_CTAS,
	OPT_THREADS,
	OPT_SCOPE,
	OPT_HOST_MEM,
	OPT_GPU,
	OPT_PLOT,
};

static const struct option options[] = {
    {"mode", required_argument, NULL, OPT_MODE},
    {"sizes", required_argument, NULL, OPT_SIZES},
    {"iters", required_argument, NULL, OPT_ITERS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"qps", required_argument, NULL, OPT_QPS},
    {"tx-depth", required_argument, NULL, OPT_DEPTH},
    {"server", no_argument, NULL, OPT_SERVER},
    {"port", required_argument, NULL, OPT_PORT},
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"csv", no_argument, NULL, OPT_CSV},
    {"json", no_argument, NULL, OPT_JSON},
    {"no-validate", no_argument, NULL, OPT_NO_VALIDATE},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"help", no_argument, NULL, OPT_HELP},
    {"list", no_argument, NULL, OPT_LIST},
    {"ctas", required_argument, NULL, OPT_CTAS},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"scope", required_argument, NULL, OPT_SCOPE},
    {"host-mem", no_argument, NULL, OPT_HOST_MEM},
    {"gpu", required_argument, NULL, OPT_GPU},
    {"plot", required_argument, NULL, OPT_PLOT},
    {NULL, 0, NULL, 0},
};

static void set_format(struct perf_args *a, enum perf_format f)
{
	if (a->format != PERF_FMT_TABLE && a->format != f)
		perf_usage_error("--csv and --json exclude each other");
	a->format = f;
}

static void parse_option(struct perf_args *a, int c, const char *arg, bool *port_set)
{
	switch (c) {
	case OPT_MODE:
		a->mode = perf_mode_find(arg);
		if (!a->mode)
			perf_usage_error("unknown mode '%s' (see --list)", arg);
		break;
	case OPT_SIZES:
		parse_sizes(a, arg);
		break;
	case OPT_ITERS:
		a->iters = parse_long("--iters", arg, 1, 1000000000);
		a->iters_set = true;
		break;
	case OPT_WARMUP:
		a->warmup = parse_long("--warmup", arg, 0, 1000000000);
		a->warmup_set = true;
		break;
	case OPT_QPS:
		a->nqps = parse_int_list("--qps", arg, 1, PERF_MAX_QPS, a->qps_list);
		a->qps = a->qps_list[0];
		a->qps_set = true;
		break;
	case OPT_CTAS:
		a->nctas = parse_int_list("--ctas", arg, 1, 1 << 20, a->ctas_list);
		a->ctas = a->ctas_list[0];
		a->ctas_set = true;
		break;
	case OPT_THREADS:
		a->threads = (int)parse_long("--threads", arg, 1, 1024);
		a->threads_set = true;
		break;
	case OPT_SCOPE:
		parse_scopes(a, arg);
		a->scope = a->scopes[0];
		break;
	case OPT_HOST_MEM:
		a->host_mem = true;
		break;
	case OPT_GPU:
		a->gpu = (int)parse_long("--gpu", arg, 0, 1023);
		a->gpu_set = true;
		break;
	case OPT_PLOT:
		copy_str(a->plot, sizeof(a->plot), arg, "--plot");
		break;
	case OPT_DEPTH:
		a->tx_depth = (int)parse_long("--tx-depth", arg, 1, PERF_MAX_DEPTH);
		a->depth_set = true;
		break;
	case OPT_SERVER:
		a->server = true;
		break;
	case OPT_PORT:
		a->port = (int)parse_long("--port", arg, 1, 65535);
		*port_set = true;
		break;
	case OPT_CONNECT:
		parse_connect(a, arg);
		break;
	case OPT_CSV:
		set_format(a, PERF_FMT_CSV);
		break;
	case OPT_JSON:
		set_format(a, PERF_FMT_JSON);
		break;
	case OPT_NO_VALIDATE:
		a->validate = false;
		break;
	case OPT_DEVICE:
		copy_str(a->device, sizeof(a->device), arg, "--device");
		break;
	case OPT_QUICK:
		a->quick = true;
		break;
	case OPT_TIMEOUT:
		a->timeout_s = (int)parse_long("--timeout", arg, 1, 86400);
		break;
	case OPT_HELP:
		usage(stdout);
		exit(0);
	case OPT_LIST:
		perf_catalog_list();
		exit(0);
	default:
		usage(stderr);
		exit(PERF_EXIT_USAGE);
	}
}

static void default_sizes(struct perf_args *a)
{
	if (a->test->kind == PERF_KIND_ATOMIC || a->test->kind == PERF_KIND_POST)
		parse_sizes(a, "8");
	else if (a->quick)
		parse_sizes(a, "8,64,4096,65536");
	else if (a->test->kind == PERF_KIND_LAT)
		parse_sizes(a, "8,64,4096");
	else
		parse_sizes(a, "1-1M");
	a->sizes_set = false;
}

static long default_iters(const struct perf_args *a)
{
	switch (a->test->kind) {
	case PERF_KIND_LAT:
		return a->quick ? 200 : 1000;
	case PERF_KIND_ATOMIC:
		return a->quick ? 2000 : 10000;
	case PERF_KIND_POST:
		return a->quick ? 20000 : 200000;
	default:
		return a->quick ? 1000 : 5000;
	}
}

static void apply_defaults(struct perf_args *a)
{
	if (!a->mode) /* post-only needs device threads; everything else compares to host */
		a->mode = perf_mode_find(a->test->kind == PERF_KIND_POST ? "gpu" : "host");
	if (!a->nscopes) {
		if (a->test->kind == PERF_KIND_POST)
			parse_scopes(a, "thread,warp,cta");
		else
			parse_scopes(a, "thread");
		a->scope_set = false;
	}
	a->scope = a->scopes[0];
	if (!a->nsizes)
		default_sizes(a);
	if (!a->iters_set)
		a->iters = default_iters(a);
	if (!a->warmup_set)
		a->warmup = a->iters / 10;
}

static void init_args(struct perf_args *a)
{
	memset(a, 0, sizeof(*a));
	a->qps = 1;
	a->qps_list[0] = 1;
	a->nqps = 1;
	a->ctas = 1;
	a->ctas_list[0] = 1;
	a->nctas = 1;
	a->tx_depth = 128;
	a->port = PERF_DEFAULT_PORT;
	a->validate = true;
	a->timeout_s = PERF_DEFAULT_TIMEOUT_S;
}

void perf_args_parse(int argc, char **argv, struct perf_args *a)
{
	bool port_set = false;
	int c;

	init_args(a);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (c == '?')
			perf_usage_error("unknown or incomplete option '%s' (see --help)",
			                 argv[optind - 1]);
		parse_option(a, c, optarg, &port_set);
	}
	if (optind != argc - 1)
		perf_usage_error(optind == argc ? "no TEST given (see --list)"
		                                : "exactly one TEST, please (see --help)");
	a->test = perf_test_find(argv[optind]);
	if (!a->test)
		perf_usage_error("unknown test '%s' (see --list)", argv[optind]);
	if (a->server && a->connect_host[0])
		perf_usage_error("--server and --connect exclude each other");
	if (port_set && !a->server)
		perf_usage_error("--port is for --server; a client writes --connect HOST:PORT");
	apply_defaults(a);
	perf_args_check(a);
}

bool perf_is_two_process(const struct perf_args *a)
{
	return a->server || a->connect_host[0];
}

static void check_sizes(const struct perf_args *a)
{
	if (a->test->kind != PERF_KIND_ATOMIC)
		return;
	for (int i = 0; i < a->nsizes; i++)
		if (a->sizes[i] != 8)
			perf_usage_error("atomic_rate works on 8-byte operands: --sizes 8 only");
}

/* Options only the libgnic modes have. */
static void check_host_mode(const struct perf_args *a)
{
	const char *opt = a->nqps > 1      ? "a --qps list"
	                  : a->ctas_set    ? "--ctas"
	                  : a->threads_set ? "--threads"
	                  : a->scope_set   ? "--scope"
	                  : a->host_mem    ? "--host-mem"
	                  : a->gpu_set     ? "--gpu"
	                                   : NULL;

	if (opt)
		perf_usage_error("%s applies to the libgnic modes (gpu, gpu-bf, cpu-assisted, "
		                 "cpu-proxy), not to --mode %s",
		                 opt, a->mode->name);
	if (a->test->kind == PERF_KIND_POST)
		perf_usage_error("%s measures device threads posting WQEs: use --mode gpu, gpu-bf, "
		                 "cpu-assisted or cpu-proxy",
		                 a->test->name);
}

static void check_gnic_mode(const struct perf_args *a)
{
	const char *name = a->test->name;
	bool one_thread = a->test->kind == PERF_KIND_LAT;

	if (a->test->kind == PERF_KIND_LOCAL)
		perf_usage_error("%s measures this machine's memcpy: it has only --mode host",
		                 name);
	if (a->test->kind == PERF_KIND_POST && perf_is_two_process(a))
		perf_usage_error("%s posts on unconnected QPs: no --server / --connect", name);
	for (int i = 0; i < a->nscopes; i++)
		if (a->scopes[i] != PERF_SCOPE_THREAD && a->test->id != PERF_PUT_BW &&
		    a->test->kind != PERF_KIND_POST)
			perf_usage_error(
			    "--scope %s: gnic_dev has warp and CTA calls for puts only; "
			    "%s runs at thread scope",
			    perf_scope_name(a->scopes[i]), name);
	if (one_thread && (perf_list_max(a->ctas_list, a->nctas) > 1 || a->threads > 1))
		perf_usage_error("%s is one device thread per side: --ctas and --threads must be 1",
		                 name);
	if (a->depth_set && a->tx_depth > 32768)
		perf_usage_error("--tx-depth %d: a libgnic QP holds at most 32768 WQEs",
		                 a->tx_depth);
}

void perf_args_check(const struct perf_args *a)
{
	const char *name = a->test->name;
	bool lat = a->test->kind == PERF_KIND_LAT;
	int qmax = perf_list_max(a->qps_list, a->nqps);

	check_sizes(a);
	if (a->mode->gnic)
		check_gnic_mode(a);
	else
		check_host_mode(a);
	if (lat && qmax > 1)
		perf_usage_error("%s measures one QP: --qps must be 1", name);
	if (lat && a->depth_set)
		perf_usage_error("%s keeps one message in flight: --tx-depth does not apply", name);
	if (a->test->kind == PERF_KIND_LOCAL && perf_is_two_process(a))
		perf_usage_error("%s is a local test: no --server / --connect", name);
	if (a->test->kind == PERF_KIND_LOCAL && qmax > 1)
		perf_usage_error("%s uses no QPs: --qps does not apply", name);
	if (!a->mode->gnic && a->iters < a->qps)
		perf_usage_error("--iters %ld is below --qps %d: some QPs would do nothing",
		                 a->iters, a->qps);
	if (a->plot[0] && a->server)
		perf_usage_error("--plot is for the side that reports (the client)");
}
