/* SPDX-License-Identifier: MIT */
/*
 * Command line (perftest's flags and gnic-perf's own), the modes and the
 * catalogue of tests. Defaults that depend on the test come from its
 * descriptor; combinations a test or mode cannot honour are refused.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define PERF_TEST_PTR(name) &perf_test_##name,
const struct perf_test *const perf_tests[PERF_NTESTS] = {PERF_TESTS(PERF_TEST_PTR)};

const struct perf_mode perf_modes[PERF_NMODES] = {
    {"host", "the CPU posts verbs work requests (ibv_post_send chains, ibv_poll_cq batches)",
     PERF_HOST, 0, false, &perf_verbs_ops},
    {"gpu", "device threads write WQEs and ring the doorbell themselves (GNIC_DB_SM)", PERF_GPU,
     GNIC_DB_SM, true, &perf_gnic_ops},
    {"gpu-bf", "device threads write WQEs and ring with BlueFlame copies (GNIC_DB_BF)", PERF_GPU_BF,
     GNIC_DB_BF, true, &perf_gnic_ops},
    {"cpu-assisted", "device threads write WQEs, libgnic's progress thread rings (GNIC_DB_CPU)",
     PERF_CPU_ASSISTED, GNIC_DB_CPU, true, &perf_gnic_ops},
    {"cpu-proxy",
     "device threads hand descriptors to libgnic's proxy thread, which builds and posts the "
     "WQEs (GNIC_DB_PROXY)",
     PERF_CPU_PROXY, GNIC_DB_PROXY, true, &perf_gnic_ops},
};

static const char usage_text[] =
    "Usage: gnic-perf TEST [options]                 both sides in this process\n"
    "       gnic-perf TEST --server | -p PORT [opts] the server (side B)\n"
    "       gnic-perf TEST [options] HOST            its client (or --connect HOST[:PORT])\n"
    "       gnic-perf --suite headline [opts]        GPU vs CPU proxy, every sweep\n"
    "       gnic-perf --list | --help                tests and modes | this\n\n"
    "perftest's: -s/--size N (K, M, G; at most 2G)   -a/--all (2 .. 8M)   -n/--iters N\n"
    "  -D/--duration S   -b/--bidirectional   -q/--qp N[,N..]   -t/--tx-depth N (128;\n"
    "  libgnic modes: SQ depth 1024)   -d/--ib-dev NAME   -p/--port P (%d)\n"
    "  --report_gbits   -F (accepted: the clock is CLOCK_MONOTONIC)\n"
    "gnic-perf's:\n"
    "  --mode MODE        host (default), gpu, gpu-bf, cpu-assisted, cpu-proxy (--list)\n"
    "  --sizes LIST       8,64,4096 or 1-1M      --warmup N (iters / 10)   --repeat N\n"
    "  --ctas N[,N..]     CTAs (CPU threads: at most %d)    --threads N (GPU: 128)\n"
    "  --scope S[,S..]    thread, warp, cta (put_bw, post_rate)    --gpu N   --host-mem\n"
    "  --server           wait for a client (it sends its settings)\n"
    "  --rx-bufs N (512)  --window N (rx-bufs / 2 - 32): eth_echo's receive ring per queue\n"
    "                     and frames in flight per CTA (more than the ring holds: drops)\n"
    "  --csv | --json     --plot FILE.png   --no-validate   --quick   --timeout S (%d)\n"
    "Last line: gnic-perf: PASS or gnic-perf: FAIL: why. Exit 0 pass, 1 fail, 2 usage.\n";

static void list(void)
{
	static const char *const kinds[] = {"bw", "lat", "rate"};

	printf("Tests (kind, modes, default iterations):\n");
	for (int i = 0; i < PERF_NTESTS; i++) {
		const struct perf_test *t = perf_tests[i];

		printf("  %-12s %-4s %-7s %6ld  %s\n", t->name, kinds[t->kind],
		       t->modes == PERF_MODES_ALL ? "all"
		       : t->modes & 1             ? "host"
		                                  : "libgnic",
		       t->iters, t->help);
	}
	printf("Modes:\n");
	for (int i = 0; i < PERF_NMODES; i++)
		printf("  %-12s %s\n", perf_modes[i].name, perf_modes[i].help);
}

/* A size with an optional binary suffix; 0 if it does not parse or is too big. */
static size_t parse_size(const char *s, const char *end)
{
	unsigned long long v = 0, shift = 0;
	const char *p = s, *u;

	if (p == end || !isdigit((unsigned char)*p))
		return 0;
	for (; p < end && isdigit((unsigned char)*p); p++)
		if ((v = v * 10 + (unsigned)(*p - '0')) > PERF_MAX_MSG)
			return 0;
	if (p < end && (u = strchr("KMG", toupper((unsigned char)*p++))) != NULL)
		shift = 10 * (unsigned)(u - "KMG" + 1);
	return p == end && (v << shift) <= PERF_MAX_MSG ? (size_t)(v << shift) : 0;
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
			perf_usage_error(
			    "%s: bad size '%.*s' (1 B .. 2G: an mlx5 NIC sends messages "
			    "of at most 2 GiB)",
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

static const char *const scope_names[] = {"thread", "warp", "cta"};

const char *perf_scope_name(int scope)
{
	return scope >= 0 && scope < 3 ? scope_names[scope] : "?";
}

/* N[,N...] of integers in [min, max], or of scope names. */
static int parse_list(const char *opt, const char *s, int min, int max, int *out, bool names)
{
	int n = 0;

	while (*s) {
		size_t len = strcspn(s, ",");
		char tok[32];

		if (n == PERF_MAX_LIST || !len || len >= sizeof(tok) || (s[len] && !s[len + 1]))
			perf_usage_error("%s: not a list of up to %d values such as 1,2,4", opt,
			                 PERF_MAX_LIST);
		memcpy(tok, s, len);
		tok[len] = 0;
		for (out[n] = 0; names && out[n] < 3 && strcmp(tok, scope_names[out[n]]); out[n]++)
			;
		if (names && out[n] == 3)
			perf_usage_error("%s: '%s' is not thread, warp or cta", opt, tok);
		if (!names)
			out[n] = (int)parse_long(opt, tok, min, max);
		n++;
		s += len + (s[len] == ',');
	}
	return n;
}

int perf_list_max(const int *v, int n)
{
	int m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* HOST, HOST:PORT, [V6ADDR] or [V6ADDR]:PORT. */
static void parse_host(struct perf_args *a, const char *s)
{
	const char *close = *s == '[' ? strchr(s, ']') : NULL, *host = close ? s + 1 : s;
	const char *colon = close ? (close[1] == ':' ? close + 1 : NULL) : strchr(s, ':');
	size_t hlen = close ? (size_t)(close - host) : colon ? (size_t)(colon - s) : strlen(s);

	if ((*s == '[' && (!close || (close[1] && !colon))) ||
	    (!close && colon && strchr(colon + 1, ':')))
		perf_usage_error("bad server address '%s' (IPv6: [ADDR]:PORT)", s);
	if (!hlen || hlen >= sizeof(a->host))
		perf_usage_error("bad server address '%s'", s);
	memcpy(a->host, host, hlen);
	a->host[hlen] = 0;
	if (colon)
		a->port = (int)parse_long("server port", colon + 1, 1, 65535);
}

/* Options that set a field: numbers, flags and strings; the rest is below. */
enum { O_LONG, O_INT, O_TRUE, O_FALSE, O_STR, O_OTHER, O_FLAG /* O_OTHER, no argument */ };
struct opt {
	const char *name;
	int key, kind;
	size_t off;
	unsigned set; /* enum perf_set */
	long min, max;
};
#define F(field)   offsetof(struct perf_args, field)
#define LEN(field) sizeof(((struct perf_args *)0)->field)
/* key: the short option, or 0 (getopt then returns 256 + its index) */
static const struct opt opts[] = {
    {"iters", 'n', O_LONG, F(iters), PERF_SET_ITERS, 1, 1000000000},
    {"warmup", 0, O_LONG, F(warmup), PERF_SET_WARMUP, 0, 1000000000},
    {"tx-depth", 't', O_INT, F(tx_depth), PERF_SET_DEPTH, 1, 32768},
    {"port", 'p', O_INT, F(port), 0, 1, 65535},
    {"repeat", 0, O_INT, F(repeat), 0, 1, 100},
    {"timeout", 0, O_INT, F(timeout_s), 0, 1, 86400},
    {"threads", 0, O_INT, F(threads), PERF_SET_THREADS, 1, 1024},
    {"rx-bufs", 0, O_INT, F(eth_rx_bufs), PERF_SET_ETH, 2, 32768},
    {"window", 0, O_INT, F(eth_window), PERF_SET_ETH, 1, 32768},
    {"gpu", 0, O_INT, F(gpu), PERF_SET_GPU, 0, 1023},
    {"bidirectional", 'b', O_TRUE, F(bidir), PERF_SET_BIDIR, 0, 0},
    {"report_gbits", 0, O_TRUE, F(gbits), 0, 0, 0},
    {"server", 0, O_TRUE, F(server), 0, 0, 0},
    {"host-mem", 0, O_TRUE, F(host_mem), 0, 0, 0},
    {"quick", 0, O_TRUE, F(quick), 0, 0, 0},
    {"no-validate", 0, O_FALSE, F(validate), 0, 0, 0},
    {"ib-dev", 'd', O_STR, F(device), 0, 0, LEN(device)},
    {"plot", 0, O_STR, F(plot), 0, 0, LEN(plot)},
    {"size", 's', O_OTHER, 0, PERF_SET_SIZES, 0, 0},
    {"all", 'a', O_FLAG, 0, PERF_SET_SIZES, 0, 0},
    {"duration", 'D', O_OTHER, 0, PERF_SET_DURATION, 0, 0},
    {"qp", 'q', O_OTHER, 0, PERF_SET_QPS, 0, 0},
    {"qps", 'q', O_OTHER, 0, PERF_SET_QPS, 0, 0},
    {"CPU-freq", 'F', O_FLAG, 0, 0, 0, 0},
    {"help", 'h', O_FLAG, 0, 0, 0, 0},
    {"mode", 0, O_OTHER, 0, PERF_SET_MODE, 0, 0},
    {"sizes", 0, O_OTHER, 0, PERF_SET_SIZES, 0, 0},
    {"connect", 0, O_OTHER, 0, 0, 0, 0},
    {"csv", 0, O_FLAG, 0, 0, 0, 0},
    {"json", 0, O_FLAG, 0, 0, 0, 0},
    {"list", 0, O_FLAG, 0, 0, 0, 0},
    {"ctas", 0, O_OTHER, 0, PERF_SET_CTAS, 0, 0},
    {"scope", 0, O_OTHER, 0, PERF_SET_SCOPE, 0, 0},
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))
static bool is_flag(const struct opt *o)
{
	return o->kind == O_TRUE || o->kind == O_FALSE || o->kind == O_FLAG;
}

const struct perf_mode *perf_mode_find(const char *name)
{
	for (int i = 0; i < PERF_NMODES; i++)
		if (!strcmp(perf_modes[i].name, name))
			return &perf_modes[i];
	return NULL;
}

static void parse_other(struct perf_args *a, const char *name, const char *arg)
{
	if (!strcmp(name, "size") || !strcmp(name, "all") || !strcmp(name, "sizes")) {
		parse_sizes(a, name[0] == 'a' ? "2-8M" : arg,
		            name[0] == 's' ? "--size" : "--sizes");
	} else if (!strcmp(name, "duration")) {
		a->duration = (double)parse_long("--duration", arg, 1, 86400);
	} else if (!strncmp(name, "qp", 2)) {
		a->nqps = parse_list("--qp", arg, 1, PERF_MAX_QPS, a->qps_list, false);
	} else if (!strcmp(name, "ctas")) {
		a->nctas = parse_list("--ctas", arg, 1, 1 << 20, a->ctas_list, false);
	} else if (!strcmp(name, "scope")) {
		a->nscopes = parse_list("--scope", arg, 0, 2, a->scopes, true);
	} else if (!strcmp(name, "mode")) {
		if (!(a->mode = perf_mode_find(arg)))
			perf_usage_error("unknown mode '%s' (see --list)", arg);
	} else if (!strcmp(name, "connect")) {
		parse_host(a, arg);
	} else if (!strcmp(name, "csv") || !strcmp(name, "json")) {
		if (a->format != PERF_FMT_TABLE)
			perf_usage_error("--csv and --json exclude each other");
		a->format = name[0] == 'c' ? PERF_FMT_CSV : PERF_FMT_JSON;
	} else if (!strcmp(name, "help")) {
		printf(usage_text, PERF_DEFAULT_PORT, PERF_CPU_MAX_CTAS, PERF_DEFAULT_TIMEOUT_S);
		exit(0);
	} else if (!strcmp(name, "list")) {
		list();
		exit(0);
	} /* -F, perftest's "do not fail on cpufreq": nothing here reads a cycle counter */
}

static void parse_option(struct perf_args *a, const struct opt *o, const char *arg)
{
	char *field = (char *)a + o->off;

	a->set |= o->set;
	if (o->kind == O_LONG)
		*(long *)field = parse_long(o->name, arg, o->min, o->max);
	else if (o->kind == O_INT)
		*(int *)field = (int)parse_long(o->name, arg, o->min, o->max);
	else if (o->kind == O_TRUE || o->kind == O_FALSE)
		*(bool *)field = o->kind == O_TRUE;
	else if (o->kind == O_STR && strlen(arg) >= (size_t)o->max)
		perf_usage_error("--%s: too long", o->name);
	else if (o->kind == O_STR)
		strcpy(field, arg);
	else /* O_OTHER, O_FLAG */
		parse_other(a, o->name, arg);
}

static void apply_defaults(struct perf_args *a)
{
	const struct perf_test *t = a->test;
	bool fixed = t->kind == PERF_RATE || t->flags & PERF_F_OPERAND8;

	if (!a->mode) /* post_rate needs device threads; the rest compares with host */
		a->mode = &perf_modes[t->modes & 1 ? PERF_HOST : PERF_GPU];
	if (!a->nscopes)
		a->nscopes = parse_list("--scope",
		                        t->flags & PERF_F_ETH ? "thread,warp"
		                        : t->flags & PERF_F_SCOPES && t->kind == PERF_RATE
		                            ? "thread,warp,cta"
		                            : "thread",
		                        0, 2, a->scopes, true);
	if (!a->nsizes)
		parse_sizes(a, a->quick && !fixed ? "8,64,4096,65536" : t->sizes, "--sizes");
	if (!(a->set & PERF_SET_ITERS))
		a->iters = a->quick ? t->quick_iters : t->iters;
	if (!(a->set & PERF_SET_WARMUP))
		a->warmup = a->iters / 10;
	if (!(a->set & PERF_SET_DEPTH))
		a->tx_depth = a->mode->gnic ? 0 : 128; /* libgnic modes: from the CTA size */
	if (!a->eth_rx_bufs)
		a->eth_rx_bufs = 512;
	/* Half the ring less 32: an echoed frame's buffer stays out of the ring until
	 * its send completion is polled, so besides the window in flight up to a
	 * window of sent buffers can be out, and up to 16 sends whose CQE has not
	 * come (one every 16 BBs) and a burst being turned around. */
	if (!a->eth_window)
		a->eth_window = a->eth_rx_bufs / 2 > 33 ? a->eth_rx_bufs / 2 - 32 : 1;
	a->scope = a->scopes[0];
	a->qps = a->qps_list[0];
	a->ctas = a->ctas_list[0];
}

/* TEST first, then HOST (perftest's client). */
static void positional(struct perf_args *a, const char *arg)
{
	if (a->test && a->host[0])
		perf_usage_error("'%s': one TEST and at most one HOST, please", arg);
	if (a->test) {
		parse_host(a, arg);
		return;
	}
	for (int i = 0; i < PERF_NTESTS && !a->test; i++)
		if (!strcmp(perf_tests[i]->name, arg))
			a->test = perf_tests[i];
	if (!a->test)
		perf_usage_error("unknown test '%s' (see --list)", arg);
}

void perf_args_parse(int argc, char **argv, struct perf_args *a)
{
	struct option lopts[NOPTS + 1] = {{0}};
	char shorts[64] = "+", why[256];
	bool port_set = false;
	int c;

	for (size_t i = 0; i < NOPTS; i++) {
		char k[3] = {(char)opts[i].key, is_flag(&opts[i]) ? 0 : ':', 0};

		lopts[i] = (struct option){opts[i].name,
		                           is_flag(&opts[i]) ? no_argument : required_argument,
		                           NULL, opts[i].key ? opts[i].key : 256 + (int)i};
		if (opts[i].key && !strchr(shorts, k[0]))
			strcat(shorts, k);
	}
	memset(a, 0, sizeof(*a));
	optind = 0; /* a suite parses one command line after another */
	a->qps_list[0] = a->ctas_list[0] = a->nqps = a->nctas = a->repeat = 1;
	a->port = PERF_DEFAULT_PORT;
	a->validate = true;
	a->timeout_s = PERF_DEFAULT_TIMEOUT_S;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lopts, NULL)) != -1 || optind < argc) {
		size_t i = 0;

		if (c == -1) {
			positional(a, argv[optind++]);
			continue;
		}
		while (i < NOPTS && opts[i].key != c && 256 + (int)i != c)
			i++;
		if (i == NOPTS)
			perf_usage_error("unknown or incomplete option '%s' (see --help)",
			                 argv[optind - 1]);
		port_set |= c == 'p';
		parse_option(a, &opts[i], optarg);
	}
	if (!a->test)
		perf_usage_error("no TEST given (see --list)");
	if (a->server && a->host[0])
		perf_usage_error("--server and a server to connect to exclude each other");
	a->server |= port_set && !a->host[0]; /* perftest: a port and no host is a server */
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

/* eth_echo: frames of 64 B .. the port's largest, a queue pair per CTA
 * driven by one thread or one warp, the ring a power of two. */
static bool eth_ok(const struct perf_args *a, char *why, size_t cap)
{
	for (int i = 0; i < a->nsizes; i++)
		if (a->sizes[i] < 64 || a->sizes[i] > 9216)
			REFUSE("%s: frames of 64 .. 9216 bytes (--size %zu)", a->test->name,
			       a->sizes[i]);
	for (int i = 0; i < a->nscopes; i++)
		if (a->scopes[i] == PERF_SCOPE_CTA)
			REFUSE("--scope cta: gnic_dev_eth has warp calls, no CTA calls; %s runs at "
			       "thread and warp scope",
			       a->test->name);
	if (perf_list_max(a->qps_list, a->nqps) > 1)
		REFUSE("%s has an Ethernet queue pair per CTA: --qp does not apply", a->test->name);
	if (a->threads > 32)
		REFUSE("--threads %d: %s drives a CTA's queue with one thread or one warp (at most "
		       "32)",
		       a->threads, a->test->name);
	if (a->eth_rx_bufs & (a->eth_rx_bufs - 1))
		REFUSE("--rx-bufs %d: a power of two, please", a->eth_rx_bufs);
	return true;
}

bool perf_args_check(const struct perf_args *a, char *why, size_t cap)
{
	const struct perf_test *t = a->test;
	const char *gnic_only = a->nqps > 1                 ? "a --qp list"
	                        : a->set & PERF_SET_CTAS    ? "--ctas"
	                        : a->set & PERF_SET_THREADS ? "--threads"
	                        : a->set & PERF_SET_SCOPE   ? "--scope"
	                        : a->host_mem               ? "--host-mem"
	                        : a->set & PERF_SET_GPU     ? "--gpu"
	                                                    : NULL;

	if (!(t->modes & (1u << a->mode->id)))
		REFUSE("%s has no --mode %s (it runs in %s)", t->name, a->mode->name,
		       t->modes & 1            ? "host mode only"
		       : t->flags & PERF_F_ETH ? "gpu, gpu-bf and cpu-assisted: an Ethernet queue "
		                                 "has no proxy doorbell"
		                               : "the libgnic modes only");
	for (int i = 0; i < a->nsizes; i++)
		if (t->flags & PERF_F_OPERAND8 && a->sizes[i] != 8)
			REFUSE("%s works on 8-byte operands: --size 8 only", t->name);
	if (a->bidir && !(t->flags & PERF_F_BIDIR))
		REFUSE("%s has no --bidirectional (put_bw and get_bw have)", t->name);
	if (t->kind == PERF_LAT && perf_list_max(a->qps_list, a->nqps) > 1)
		REFUSE("%s measures one QP: --qp must be 1", t->name);
	if (t->kind == PERF_LAT && a->set & PERF_SET_DEPTH)
		REFUSE("%s keeps one message in flight: --tx-depth does not apply", t->name);
	if (t->flags & (PERF_F_LOCAL | PERF_F_UNCONNECTED | PERF_F_LOOPBACK | PERF_F_ETH) &&
	    perf_two_process(a))
		REFUSE("%s runs in one process: no server or client", t->name);
	if (a->plot[0] && a->server)
		REFUSE("--plot is for the side that reports (the client)");
	if (!a->mode->gnic && gnic_only)
		REFUSE(
		    "%s applies to the libgnic modes (gpu, gpu-bf, cpu-assisted, cpu-proxy), not "
		    "to --mode host",
		    gnic_only);
	if (!a->mode->gnic && !a->duration && a->iters < a->qps_list[0])
		REFUSE("--iters %ld is below --qp %d: some QPs would do nothing", a->iters,
		       a->qps_list[0]);
	for (int i = 0; a->mode->gnic && i < a->nscopes; i++)
		if (a->scopes[i] != PERF_SCOPE_THREAD && !(t->flags & (PERF_F_SCOPES | PERF_F_ETH)))
			REFUSE("--scope %s: gnic_dev has warp and CTA calls for puts only; %s runs "
			       "at thread scope",
			       perf_scope_name(a->scopes[i]), t->name);
	if (t->flags & PERF_F_ETH && !eth_ok(a, why, cap))
		return false;
	if (!(t->flags & PERF_F_ETH) && a->set & PERF_SET_ETH)
		REFUSE("--window and --rx-bufs are eth_echo's");
	if (a->mode->gnic && t->kind == PERF_LAT &&
	    (perf_list_max(a->ctas_list, a->nctas) > 1 || a->threads > 1))
		REFUSE("%s is one device thread per side: --ctas and --threads must be 1", t->name);
	return true;
}
