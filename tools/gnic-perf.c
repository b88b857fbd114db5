/* SPDX-License-Identifier: MIT */
/*
 * gnic-perf: perftest-style benchmark of gnic-emu and libgnic (see perf.h).
 *
 * main() parses the command line, opens the session (one process, or a
 * server and a client) and runs every row: scope x QPs x CTAs in the
 * libgnic modes, then every size, each --repeat times. One run is the
 * test's setup, a warm-up chunk, the timed chunks, the test's validation
 * and both sides' verdicts. A bw or rate run is cut into PERF_SLICES
 * chunks (BW peak is the best one); with -D chunks follow until the time
 * is up, each sized from the rate so far. The client (or the one process)
 * plans each chunk and in two processes tells the server.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

struct plan {
	int64_t first, count, stop;
	int32_t go, timed;
};

struct verdict {
	int32_t ok, rsvd;
};

/* What a run has done so far (on the side that plans and reports). */
struct progress {
	long g, warm, total, per; /* granule; -n: warm-up, timed iterations, per chunk */
	long next, timed;         /* the next iteration; timed ones done */
	double ns, best;          /* their time; iterations per ns of the best full chunk */
	uint64_t t0;              /* -D: when the first timed chunk began */
	bool over;
	double *lat; /* latency samples of the timed chunks */
	long lat_cap;
};

static long round_up(long v, long g)
{
	return (v + g - 1) / g * g;
}

static void progress_init(struct progress *p, const struct perf_args *a)
{
	long slices;

	memset(p, 0, sizeof(*p));
	p->g = perf_granule(a);
	p->warm = round_up(a->warmup, p->g);
	p->total = round_up(a->iters, p->g);
	slices = a->test->kind == PERF_LAT ? 1 : p->total / p->g;
	slices = slices < 1 ? 1 : slices > PERF_SLICES ? PERF_SLICES : slices;
	p->per = round_up((p->total + slices - 1) / slices, p->g);
}

/* -D: chunks of an eighth of the duration at the rate so far (less when
 * less is left, and at most a quarter of --timeout: the peer waits for
 * each) until the time is up, then a last one of one granule: a run's last
 * iteration must be known before it starts (receives are not posted past
 * it). Latency runs also end at PERF_MAX_SAMPLES. */
static long duration_chunk(struct progress *p, const struct perf_args *a, bool *last)
{
	uint64_t now = perf_now_ns();
	double span = a->duration * 1e9, busy = (double)(now - p->t0) + 1, rate, chunk;
	long n, cap = a->test->kind == PERF_LAT ? PERF_MAX_SAMPLES - p->g - p->timed : LONG_MAX;

	if (!p->timed) {
		p->t0 = now;
		return p->per;
	}
	if (busy >= span || cap <= 0) {
		*last = true;
		return p->g;
	}
	rate = (double)p->timed / busy;
	chunk = span / PERF_SLICES < (double)perf_timeout_ns() / 4 ? span / PERF_SLICES
	                                                           : (double)perf_timeout_ns() / 4;
	p->per = round_up((long)(rate * chunk) + 1, p->g);
	n = round_up((long)(rate * (span - busy)) + 1, p->g);
	n = n < p->per ? n : p->per;
	return n < cap ? n : cap;
}

static bool plan_next(struct progress *p, const struct perf_args *a, struct plan *c)
{
	bool last = false;

	if (p->over)
		return false;
	c->first = p->next;
	c->timed = p->next >= p->warm;
	if (!c->timed)
		c->count = p->warm;
	else if (a->duration)
		c->count = duration_chunk(p, a, &last);
	else if ((last = p->warm + p->total - p->next <= p->per))
		c->count = p->warm + p->total - p->next;
	else
		c->count = p->per;
	c->stop = a->duration ? (last ? c->first + c->count : LONG_MAX) : p->warm + p->total;
	p->over = last;
	return true;
}

/* Room for a chunk's samples: the warm-up's are overwritten. */
static double *samples_for(struct progress *p, const struct plan *c)
{
	long need = (c->timed ? p->timed : 0) + (long)c->count;

	if (need > p->lat_cap) {
		p->lat_cap = need > 2 * p->lat_cap ? need : 2 * p->lat_cap;
		p->lat = realloc(p->lat, (size_t)p->lat_cap * sizeof(*p->lat));
		if (!p->lat)
			perf_fatal("out of memory for %ld latency samples", p->lat_cap);
	}
	return p->lat + (c->timed ? p->timed : 0);
}

/* The shared hooks, where a test has none of its own (perf.h). */
static void setup_run(struct perf_run *r)
{
	if (r->t->setup)
		r->t->setup(r);
	else if (r->t->wr)
		perf_stream_setup(r, r->t->src);
	else
		perf_pingpong_setup(r);
}

static void run_chunk(struct perf_run *r)
{
	const struct perf_test *t = r->t;

	if (t->run)
		t->run(r);
	else if (perf_gnic(r)) /* ping-pongs: both sides; streams: A (and B with -b) */
		perf_dev_run(r, PERF_RUN_A | (t->pp || r->a->bidir ? PERF_RUN_B : 0), 0);
	else if (t->wr)
		perf_host_stream(r, t->wr);
	else if (t->pp)
		perf_host_pingpong(r, t->pp);
	else if (r->ep[PERF_A])
		t->host(r, r->ep[PERF_A]);
}

static bool validate_run(struct perf_run *r)
{
	if (r->t->validate)
		return r->t->validate(r);
	return !r->t->wr || perf_stream_validate(r, r->t->src); /* else checked on arrival */
}

static void run_chunks(struct perf_run *r, struct progress *p)
{
	struct perf_session *s = r->s;
	bool planner = !r->a->server;

	for (;;) {
		struct plan c = {0}, peer;
		double ns;

		c.go = planner && plan_next(p, r->a, &c);
		if (s->boot) {
			perf_exchange(s, &c, &peer, sizeof(c));
			c = planner ? c : peer;
		}
		if (!c.go)
			return;
		r->first = (long)c.first;
		r->count = (long)c.count;
		r->stop = (long)c.stop;
		r->lat = r->t->kind == PERF_LAT && planner ? samples_for(p, &c) : NULL;
		run_chunk(r);
		r->done = r->first + r->count;
		if (s->boot) { /* with -b the slower side's time counts */
			perf_exchange(s, &r->ns, &ns, sizeof(ns));
			r->ns = ns > r->ns && r->a->bidir ? ns : r->ns;
		}
		p->next = r->done;
		if (!c.timed || !planner)
			continue;
		p->timed += r->count;
		p->ns += r->ns;
		if (r->ns > 0 && 2 * r->count >= p->per && (double)r->count / r->ns > p->best)
			p->best = (double)r->count / r->ns;
	}
}

/* One run of one row and size; returns its figures (on the reporting side). */
static void run_once(struct perf_session *s, size_t size, struct perf_stats *st)
{
	struct perf_args *a = s->a;
	struct perf_run r = {
	    .s = s, .a = a, .t = a->test, .ep = {s->ep[0], s->ep[1]}, .size = size};
	struct verdict mine = {.ok = 1}, peer = {.ok = 1};
	struct progress p;

	perf_ring_for(&r.ring, a, size);
	if (a->test->flags & PERF_F_LOCAL)
		r.local = perf_alloc(r.ring.total);
	progress_init(&p, a);
	r.stop = a->duration ? LONG_MAX : p.warm + p.total;
	setup_run(&r);
	perf_sync(s);
	run_chunks(&r, &p);
	if (a->validate)
		mine.ok = validate_run(&r);
	if (s->boot)
		perf_exchange(s, &mine, &peer, sizeof(mine));
	if (!mine.ok)
		perf_fatal("%s, %zu-byte messages: the data did not validate (see above)",
		           a->test->name, size);
	if (!peer.ok)
		perf_fatal("the %s found a data mismatch (see its output)",
		           a->server ? "client" : "server");
	perf_free(r.local, r.ring.total);
	memset(st, 0, sizeof(*st));
	if (a->test->kind == PERF_LAT)
		perf_stats_lat(st, p.lat, p.timed);
	else
		perf_stats_bw(st, a, size, p.timed * (a->bidir ? 2 : 1), p.ns,
		              p.best * (a->bidir ? 2 : 1));
	st->iters = p.timed;
	free(p.lat);
}

static void progress_line(const struct perf_args *a, int k, int total, size_t size)
{
	if (total > 4 && isatty(STDERR_FILENO) && a->format == PERF_FMT_TABLE)
		fprintf(stderr, "\r\033[K[%d/%d] %s %s %s ctas %d qps %d, %zu bytes ...\r", k + 1,
		        total, a->test->name, a->mode->name, perf_scope_name(a->scope), a->ctas,
		        a->qps, size);
}

/* Scopes, then QPs, then CTAs, then sizes: a plot's series (all but the
 * size) come out one after the other. Returns the runs made. */
static int run_rows(struct perf_session *s)
{
	struct perf_args *a = s->a;
	struct perf_stats reps[100];
	int runs = 0, total = a->nscopes * a->nqps * a->nctas * a->nsizes;

	for (int sc = 0; sc < a->nscopes; sc++)
		for (int q = 0; q < a->nqps; q++)
			for (int c = 0; c < a->nctas; c++) {
				a->scope = a->scopes[sc];
				a->qps = a->qps_list[q];
				a->ctas = a->ctas_list[c];
				if (!perf_gnic_row_ok(a))
					continue; /* noted by perf_gnic_resolve() */
				for (int i = 0; i < a->nsizes; i++) {
					progress_line(
					    a, ((sc * a->nqps + q) * a->nctas + c) * a->nsizes + i,
					    total, a->sizes[i]);
					for (int k = 0; k < a->repeat; k++, runs++)
						run_once(s, a->sizes[i], &reps[k]);
					if (a->server)
						perf_report_server_row(a, a->sizes[i]);
					else
						perf_report_row(a, a->sizes[i], reps, a->repeat);
				}
			}
	return runs;
}

int perf_run_args(struct perf_args *a)
{
	struct perf_session s;
	int runs;

	if (a->mode->gnic && !a->server) /* a server learns the shape from its client */
		perf_gnic_resolve(a);
	perf_session_open(&s, a);
	perf_report_begin(&s);
	runs = run_rows(&s);
	perf_report_end(a);
	perf_session_close(&s);
	return runs;
}

int main(int argc, char **argv)
{
	struct perf_args a;
	int runs;

	if (perf_suite_wanted(argc, argv))
		return perf_suite_main(argc, argv);
	perf_args_parse(argc, argv, &a);
	if (a.plot[0])
		perf_plot_check(a.plot, true);
	runs = perf_run_args(&a);
	if (a.plot[0])
		perf_plot_write(&a);
	fprintf(a.format == PERF_FMT_TABLE ? stdout : stderr, "gnic-perf: PASS (%d run%s%s)\n",
	        runs, runs == 1 ? "" : "s", a.validate ? " validated" : ", validation off");
	return 0;
}
