/* SPDX-License-Identifier: MIT */
/*
 * Command line (perftest's flags and gnic-perf's own), the modes and the
 * catalogue of tests. Defaults that depend on the test come from its
 * descriptor; combinations a test or mode cannot honour are refused.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define PERF_TEST_PTR(name) &perf_test_##name,
const struct perf_test *const perf_tests[PERF_NTESTS] = {PERF_TESTS(PERF_TEST_PTR)};

const struct perf_mode perf_modes[PERF_NMODES] = {
    {"host", "the CPU posts verbs work requests (ibv_post_send chains, ibv_poll_cq batches)",
     PERF_HOST, 0, false, false},
    {"gpu", "device threads write WQEs and ring the doorbell themselves (GNIC_DB_SM)", PERF_GPU,
     GNIC_DB_SM, true, false},
    {"gpu-bf", "device threads write WQEs and ring with BlueFlame copies (GNIC_DB_BF)", PERF_GPU_BF,
     GNIC_DB_BF, true, false},
    {"cpu-assisted", "device threads write WQEs, libgnic's progress thread rings (GNIC_DB_CPU)",
     PERF_CPU_ASSISTED, GNIC_DB_CPU, true, false},
    /* the proxy's own QPs ring like host software: SM doorbells from a CPU thread */
    {"cpu-proxy",
     "device threads hand descriptors to a CPU proxy thread that builds and posts the WQEs",
     PERF_CPU_PROXY, GNIC_DB_SM, true, true},
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: gnic-perf TEST [options]                 both sides in this process\n"
	    "       gnic-perf TEST --server | -p PORT [opts] the server (side B)\n"
	    "       gnic-perf TEST [options] HOST            its client (or --connect "
	    "HOST[:PORT])\n"
	    "       gnic-perf --list | --help\n\n"
	    "perftest's options:\n"
	    "  -s, --size N          one message size (suffixes K, M, G; at most 2G)\n"
	    "  -a, --all             sizes 2 .. 8M, every power of two\n"
	    "  -n, --iters N         timed iterations per size (default per test, see --list)\n"
	    "  -D, --duration S      run each size for S seconds, counting iterations\n"
	    "  -b, --bidirectional   both sides send at once (put_bw, get_bw)\n"
	    "  -q, --qp N[,N...]     QPs, used round-robin (a list sweeps; libgnic modes:\n"
	    "                        CTA c posts on QP c %% qps)\n"
	    "  -t, --tx-depth N      work requests in flight per QP (default 128; libgnic\n"
	    "                        modes: the SQ depth, default 1024)\n"
	    "  -d, --ib-dev NAME     RDMA device (default: the first)\n"
	    "  -p, --port P          TCP port of the server (default %d)\n"
	    "  -F                    accepted; there is no CPU-frequency check to skip (the\n"
	    "                        clock is CLOCK_MONOTONIC, not cycle counters)\n"
	    "  --report_gbits        bandwidth in Gb/s instead of MiB/s\n\n"
	    "gnic-perf's options:\n"
	    "  --mode MODE           how work reaches the NIC (default host; post_rate: gpu):\n"
	    "                        gpu, gpu-bf, cpu-assisted and cpu-proxy run device\n"
	    "                        threads through libgnic, CUDA threads on a GPU, else\n"
	    "                        CPU threads (the same code)\n"
	    "  --sizes LIST          sizes such as 8,64,4096 or 1-1M (powers of two)\n"
	    "  --warmup N            untimed iterations first (default iters / 10)\n"
	    "  --repeat N            run each row N times: median and min-max spread\n"
	    "  --ctas N[,N...]       libgnic modes: CTAs (CPU threads without a GPU, at most\n"
	    "                        %d); a list sweeps (default 1)\n"
	    "  --threads N           threads per CTA (default 128 on a GPU for bw and rate\n"
	    "                        tests, else 1; 1 on CPU threads)\n"
	    "  --scope S[,S...]      thread, warp or cta: how device threads post (put_bw,\n"
	    "                        post_rate; post_rate's default: all three)\n"
	    "  --host-mem            on a GPU: buffers in pinned host memory, not GPU memory\n"
	    "  --gpu N               CUDA device (default 0)\n"
	    "  --server              wait for one client; --connect HOST[:PORT] is one. The\n"
	    "                        client's settings are used by both; a server refuses a\n"
	    "                        client whose settings differ from ones given to it. A\n"
	    "                        refused connection is retried for 1 s, then reported\n"
	    "  --csv | --json        machine-readable rows instead of the table\n"
	    "  --plot FILE.png       also draw the rows with gnuplot (data: FILE.csv)\n"
	    "  --no-validate         skip data validation (on by default)\n"
	    "  --device NAME         as -d\n"
	    "  --quick               short sweep: sizes 8,64,4096,65536, fewer iterations\n"
	    "  --timeout S           longest wait for anything (default %d s)\n"
	    "  --list                tests and modes\n\n"
	    "The last line says gnic-perf: PASS or gnic-perf: FAIL: why (stdout with the table,\n"
	    "stderr with --csv / --json). Exit status: 0 pass, 1 failure, 2 bad usage.\n",
	    PERF_DEFAULT_PORT, PERF_CPU_MAX_CTAS, PERF_DEFAULT_TIMEOUT_S);
}

static void list(void)
{
	static const char *const kinds[] = {"bw", "lat", "rate"};

	printf("Tests (kind, modes, default iterations):\n");
	for (int i = 0; i < PERF_NTESTS; i++) {
		const struct perf_test *t = perf_tests[i];

		printf("  %-12s %-4s %-10s %6ld  %s\n", t->name, kinds[t->kind],
		       t->modes == PERF_MODES_ALL    ? "all"
		       : t->modes == PERF_MODES_GNIC ? "libgnic"
		                                     : "host",
		       t->iters, t->help);
	}
	printf("Modes:\n");
	for (int i = 0; i < PERF_NMODES; i++)
		printf("  %-12s %s\n", perf_modes[i].name, perf_modes[i].help);
}

/* A size with an optional binary suffix; 0 if it does not parse or is too big. */
static size_t parse_size(const char *s, const char *end)
{
	unsigned long long v = 0, mult = 1;
	const char *p = s;

	if (p == end || !isdigit((unsigned char)*p))
		return 0;
	for (; p < end && isdigit((unsigned char)*p); p++)
		if ((v = v * 10 + (unsigned)(*p - '0')) > PERF_MAX_MSG)
			return 0;
	if (p < end) {
		const char *u = strchr("KMG", toupper((unsigned char)*p++));

		if (!u || !*u)
			return 0;
		mult = 1ull << (10 * (u - "KMG" + 1));
	}
	return p == end && v * mult <= PERF_MAX_MSG ? (size_t)(v * mult) : 0;
}

/* Items: a size, or LO-HI meaning LO, 2 LO, ... <= HI. */
static void parse_sizes(struct perf_args *a, const char *s, const char *opt)
{
	a->nsizes = 0;
	while (*s) {
		const char *end = s + strcspn(s, ","), *dash = memchr(s, '-', (size_t)(end - s));
		size_t lo = parse_size(s, dash ? dash : end),
		       hi = dash ? parse_size(dash + 1, end) : lo;

		if (!lo || !hi || hi < lo)
			perf_usage_error("%s: bad size '%.*s' (1 B .. 2G: messages above 2 GiB are "
			                 "more than an mlx5 NIC sends)",
			                 opt, (int)(end - s), s);
		for (size_t v = lo; v <= hi; v *= 2) {
			if (a->nsizes == PERF_MAX_SIZES)
				perf_usage_error("%s: at most %d sizes", opt, PERF_MAX_SIZES);
			a->sizes[a->nsizes++] = v;
		}
		s = *end ? end + 1 : end;
	}
	if (!a->nsizes)
		perf_usage_error("%s: no sizes", opt);
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

/* N[,N...] of integers in [min, max], or of names. */
static int parse_list(const char *opt, const char *s, int min, int max, int *out,
                      const char *const *names)
{
	int n = 0;

	if (!*s || s[strlen(s) - 1] == ',')
		perf_usage_error("%s: '%s' is not a list such as 1,2,4", opt, s);
	while (*s) {
		size_t len = strcspn(s, ",");
		char tok[32];

		if (n == PERF_MAX_LIST || !len || len >= sizeof(tok))
			perf_usage_error("%s: '%s' is not a list of up to %d values", opt, s,
			                 PERF_MAX_LIST);
		memcpy(tok, s, len);
		tok[len] = 0;
		if (names) {
			for (out[n] = 0; out[n] <= max && strcmp(tok, names[out[n]]); out[n]++)
				;
			if (out[n] > max)
				perf_usage_error("%s: '%s' is not thread, warp or cta", opt, tok);
			n++;
		} else {
			out[n++] = (int)parse_long(opt, tok, min, max);
		}
		s += len + (s[len] == ',');
	}
	return n;
}

static const char *const scope_names[] = {"thread", "warp", "cta"};

const char *perf_scope_name(int scope)
{
	return scope >= 0 && scope < 3 ? scope_names[scope] : "?";
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
static void parse_host(struct perf_args *a, const char *s)
{
	const char *host = s, *colon;
	size_t hlen;

	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close || (close[1] && close[1] != ':'))
			perf_usage_error("bad server address '%s'", s);
		host = s + 1;
		hlen = (size_t)(close - host);
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			perf_usage_error("write IPv6 addresses as [ADDR]:PORT");
		hlen = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (!hlen || hlen >= sizeof(a->host))
		perf_usage_error("bad server address '%s'", s);
	memcpy(a->host, host, hlen);
	a->host[hlen] = 0;
	if (colon)
		a->port = (int)parse_long("server port", colon + 1, 1, 65535);
}

enum {
	OPT_MODE = 256,
	OPT_SIZES,
	OPT_WARMUP,
	OPT_REPEAT,
	OPT_GBITS,
	OPT_SERVER,
	OPT_CONNECT,
	OPT_CSV,
	OPT_JSON,
	OPT_NO_VALIDATE,
	OPT_QUICK,
	OPT_TIMEOUT,
	OPT_LIST,
	OPT_CTAS,
	OPT_THREADS,
	OPT_SCOPE,
	OPT_HOST_MEM,
	OPT_GPU,
	OPT_PLOT,
};

static const struct option options[] = {
    {"size", required_argument, NULL, 's'},
    {"all", no_argument, NULL, 'a'},
    {"iters", required_argument, NULL, 'n'},
    {"duration", required_argument, NULL, 'D'},
    {"bidirectional", no_argument, NULL, 'b'},
    {"qp", required_argument, NULL, 'q'},
    {"qps", required_argument, NULL, 'q'},
    {"tx-depth", required_argument, NULL, 't'},
    {"ib-dev", required_argument, NULL, 'd'},
    {"device", required_argument, NULL, 'd'},
    {"port", required_argument, NULL, 'p'},
    {"CPU-freq", no_argument, NULL, 'F'},
    {"help", no_argument, NULL, 'h'},
    {"report_gbits", no_argument, NULL, OPT_GBITS},
    {"report-gbits", no_argument, NULL, OPT_GBITS},
    {"mode", required_argument, NULL, OPT_MODE},
    {"sizes", required_argument, NULL, OPT_SIZES},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"server", no_argument, NULL, OPT_SERVER},
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"csv", no_argument, NULL, OPT_CSV},
    {"json", no_argument, NULL, OPT_JSON},
    {"no-validate", no_argument, NULL, OPT_NO_VALIDATE},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
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

static void parse_option(struct perf_args *a, int c, const char *arg)
{
	switch (c) {
	case 's':
		parse_sizes(a, arg, "--size");
		a->set |= PERF_SET_SIZES;
		break;
	case OPT_SIZES:
		parse_sizes(a, arg, "--sizes");
		a->set |= PERF_SET_SIZES;
		break;
	case 'a':
		parse_sizes(a, "2-8M", "--all");
		a->set |= PERF_SET_SIZES;
		break;
	case 'n':
		a->iters = parse_long("--iters", arg, 1, 1000000000);
		a->set |= PERF_SET_ITERS;
		break;
	case 'D':
		a->duration = (double)parse_long("--duration", arg, 1, 86400);
		a->set |= PERF_SET_DURATION;
		break;
	case 'b':
		a->bidir = true;
		a->set |= PERF_SET_BIDIR;
		break;
	case 'q':
		a->nqps = parse_list("--qp", arg, 1, PERF_MAX_QPS, a->qps_list, NULL);
		a->set |= PERF_SET_QPS;
		break;
	case 't':
		a->tx_depth = (int)parse_long("--tx-depth", arg, 1, 32768);
		a->set |= PERF_SET_DEPTH;
		break;
	case 'd':
		copy_str(a->device, sizeof(a->device), arg, "--ib-dev");
		break;
	case 'p':
		a->port = (int)parse_long("--port", arg, 1, 65535);
		break;
	case 'F': /* perftest's "do not fail on cpufreq": nothing here reads cycle counters */
		break;
	case OPT_GBITS:
		a->gbits = true;
		break;
	case OPT_MODE:
		for (a->mode = perf_modes; a->mode < perf_modes + PERF_NMODES; a->mode++)
			if (!strcmp(a->mode->name, arg))
				break;
		if (a->mode == perf_modes + PERF_NMODES)
			perf_usage_error("unknown mode '%s' (see --list)", arg);
		a->set |= PERF_SET_MODE;
		break;
	case OPT_WARMUP:
		a->warmup = parse_long("--warmup", arg, 0, 1000000000);
		a->set |= PERF_SET_WARMUP;
		break;
	case OPT_REPEAT:
		a->repeat = (int)parse_long("--repeat", arg, 1, 100);
		break;
	case OPT_SERVER:
		a->server = true;
		break;
	case OPT_CONNECT:
		parse_host(a, arg);
		break;
	case OPT_CSV:
	case OPT_JSON:
		set_format(a, c == OPT_CSV ? PERF_FMT_CSV : PERF_FMT_JSON);
		break;
	case OPT_NO_VALIDATE:
		a->validate = false;
		break;
	case OPT_QUICK:
		a->quick = true;
		break;
	case OPT_TIMEOUT:
		a->timeout_s = (int)parse_long("--timeout", arg, 1, 86400);
		break;
	case OPT_CTAS:
		a->nctas = parse_list("--ctas", arg, 1, 1 << 20, a->ctas_list, NULL);
		a->set |= PERF_SET_CTAS;
		break;
	case OPT_THREADS:
		a->threads = (int)parse_long("--threads", arg, 1, 1024);
		a->set |= PERF_SET_THREADS;
		break;
	case OPT_SCOPE:
		a->nscopes = parse_list("--scope", arg, 0, 2, a->scopes, scope_names);
		a->set |= PERF_SET_SCOPE;
		break;
	case OPT_HOST_MEM:
		a->host_mem = true;
		break;
	case OPT_GPU:
		a->gpu = (int)parse_long("--gpu", arg, 0, 1023);
		a->set |= PERF_SET_GPU;
		break;
	case OPT_PLOT:
		copy_str(a->plot, sizeof(a->plot), arg, "--plot");
		break;
	case 'h':
		usage(stdout);
		exit(0);
	case OPT_LIST:
		list();
		exit(0);
	}
}

static void apply_defaults(struct perf_args *a)
{
	const struct perf_test *t = a->test;

	if (!a->mode) /* post_rate needs device threads; the rest compares with host */
		a->mode = &perf_modes[t->modes & 1 ? PERF_HOST : PERF_GPU];
	if (!a->nscopes)
		a->nscopes = parse_list(
		    "--scope",
		    t->kind == PERF_RATE && t->flags & PERF_F_SCOPES ? "thread,warp,cta" : "thread",
		    0, 2, a->scopes, scope_names);
	if (!a->nsizes)
		parse_sizes(a,
		            a->quick && t->kind != PERF_RATE && !(t->flags & PERF_F_OPERAND8)
		                ? "8,64,4096,65536"
		                : t->sizes,
		            "--sizes");
	if (!(a->set & PERF_SET_ITERS))
		a->iters = a->quick ? t->quick_iters : t->iters;
	if (!(a->set & PERF_SET_WARMUP))
		a->warmup = a->iters / 10;
	a->scope = a->scopes[0];
	a->qps = a->qps_list[0];
	a->ctas = a->ctas_list[0];
	if (!(a->set & PERF_SET_DEPTH) && a->mode->gnic)
		a->tx_depth = 0; /* libgnic modes: resolved from the CTA size */
}

static void init_args(struct perf_args *a)
{
	memset(a, 0, sizeof(*a));
	a->qps_list[0] = a->ctas_list[0] = 1;
	a->nqps = a->nctas = 1;
	a->tx_depth = 128;
	a->repeat = 1;
	a->port = PERF_DEFAULT_PORT;
	a->validate = true;
	a->timeout_s = PERF_DEFAULT_TIMEOUT_S;
}

void perf_args_parse(int argc, char **argv, struct perf_args *a)
{
	bool port_set = false;
	char why[256];
	int c;

	init_args(a);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+s:an:D:bq:t:d:p:Fh", options, NULL)) != -1 ||
	       optind < argc) {
		if (c == -1) { /* a positional argument: TEST, then HOST */
			const char *arg = argv[optind++];

			if (!a->test) {
				for (int i = 0; i < PERF_NTESTS && !a->test; i++)
					if (!strcmp(perf_tests[i]->name, arg))
						a->test = perf_tests[i];
				if (!a->test)
					perf_usage_error("unknown test '%s' (see --list)", arg);
			} else if (!a->host[0]) {
				parse_host(a, arg);
			} else {
				perf_usage_error("'%s': one TEST and at most one HOST, please",
				                 arg);
			}
			continue;
		}
		if (c == '?')
			perf_usage_error("unknown or incomplete option '%s' (see --help)",
			                 argv[optind - 1]);
		port_set |= c == 'p';
		parse_option(a, c, optarg);
	}
	if (!a->test)
		perf_usage_error("no TEST given (see --list)");
	if (a->server && a->host[0])
		perf_usage_error("--server and a server to connect to exclude each other");
	if (port_set && !a->host[0]) /* perftest: a port and no host is a server */
		a->server = true;
	if ((a->set & PERF_SET_ITERS) && a->duration)
		perf_usage_error("--iters and --duration exclude each other");
	apply_defaults(a);
	if (!perf_args_check(a, why, sizeof(why)))
		perf_usage_error("%s", why);
}

bool perf_two_process(const struct perf_args *a)
{
	return a->server || a->host[0];
}

#define REFUSE(...) return snprintf(why, cap, __VA_ARGS__), false

/* The libgnic modes' own limits. */
static bool check_gnic(const struct perf_args *a, char *why, size_t cap)
{
	const struct perf_test *t = a->test;

	for (int i = 0; i < a->nscopes; i++)
		if (a->scopes[i] != PERF_SCOPE_THREAD && !(t->flags & PERF_F_SCOPES))
			REFUSE("--scope %s: gnic_dev has warp and CTA calls for puts only; %s runs "
			       "at thread scope",
			       perf_scope_name(a->scopes[i]), t->name);
	if (t->kind == PERF_LAT && (perf_list_max(a->ctas_list, a->nctas) > 1 || a->threads > 1))
		REFUSE("%s is one device thread per side: --ctas and --threads must be 1", t->name);
	return true;
}

static bool check_host(const struct perf_args *a, char *why, size_t cap)
{
	const char *opt = a->nqps > 1                 ? "a --qp list"
	                  : a->set & PERF_SET_CTAS    ? "--ctas"
	                  : a->set & PERF_SET_THREADS ? "--threads"
	                  : a->set & PERF_SET_SCOPE   ? "--scope"
	                  : a->host_mem               ? "--host-mem"
	                  : a->set & PERF_SET_GPU     ? "--gpu"
	                                              : NULL;

	if (opt)
		REFUSE("%s applies to the libgnic modes (gpu, gpu-bf, cpu-assisted, cpu-proxy), "
		       "not to --mode host",
		       opt);
	if (!a->duration && a->iters < a->qps_list[0])
		REFUSE("--iters %ld is below --qp %d: some QPs would do nothing", a->iters,
		       a->qps_list[0]);
	return true;
}

bool perf_args_check(const struct perf_args *a, char *why, size_t cap)
{
	const struct perf_test *t = a->test;

	if (!(t->modes & (1u << a->mode->id)))
		REFUSE("%s has no --mode %s (it runs in %s)", t->name, a->mode->name,
		       t->modes & 1 ? "host mode only" : "the libgnic modes only");
	for (int i = 0; i < a->nsizes; i++)
		if (t->flags & PERF_F_OPERAND8 && a->sizes[i] != 8)
			REFUSE("%s works on 8-byte operands: --size 8 only", t->name);
	if (a->bidir && !(t->flags & PERF_F_BIDIR))
		REFUSE("%s has no --bidirectional (put_bw and get_bw have)", t->name);
	if (t->kind == PERF_LAT && perf_list_max(a->qps_list, a->nqps) > 1)
		REFUSE("%s measures one QP: --qp must be 1", t->name);
	if (t->kind == PERF_LAT && a->set & PERF_SET_DEPTH)
		REFUSE("%s keeps one message in flight: --tx-depth does not apply", t->name);
	if (t->flags & (PERF_F_LOCAL | PERF_F_UNCONNECTED) && perf_two_process(a))
		REFUSE("%s runs in one process: no server or client", t->name);
	if (a->plot[0] && a->server)
		REFUSE("--plot is for the side that reports (the client)");
	return a->mode->gnic ? check_gnic(a, why, cap) : check_host(a, why, cap);
}
