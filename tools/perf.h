/* SPDX-License-Identifier: MIT */
/*
 * gnic-perf: a perftest-style benchmark for gnic-emu and libgnic.
 *
 * One file per test (put_bw.c, put_lat.c, ...: the list is PERF_TESTS in
 * perf_dev.h), each holding the test's descriptor, its host-mode body
 * (verbs) and its device body (the libgnic modes: CUDA threads or CPU
 * threads) side by side. The harness (gnic-perf.c) runs the descriptors'
 * hooks; it never looks at which test it runs. The rest:
 *   perf_args.c      command line, --help, the mode table and the catalogue
 *   perf_session.c   the two sides: one process, or a server and a client
 *                    talking through libgnic's bootstrap (gnic_boot_*)
 *   perf_verbs.c     host mode: verbs objects, posting, the shared loops
 *   perf_gnic.c      libgnic modes: contexts, QPs, memory, launches
 *   perf_dev_worker.h, perf_dev_cpu.c, perf_dev_gpu.cu: the device workers
 *   perf_util.c      errors, deadlines, patterns and the buffer ring
 *   perf_report.c    table / CSV / JSON, and --plot (through perf_plot.sh)
 *
 * Side A is the initiator (the client, or the first side in one process),
 * side B the target (the server). A process holds both sides or one; a
 * test does the steps of the sides it holds, so one body serves both.
 * Anything fatal prints "gnic-perf: FAIL: what" and exits 1 (2: bad usage).
 */
#ifndef GNIC_PERF_H
#define GNIC_PERF_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gnic/gnic.h>

#include "perf_dev.h"

#define PERF_MAX_SIZES         64
#define PERF_MAX_LIST          16           /* values of --ctas, --qps, --scope */
#define PERF_MAX_MSG           (2ul << 30)  /* the largest message an mlx5 NIC sends */
#define PERF_RING_BUDGET       (32ul << 20) /* sources, and destinations, per side */
#define PERF_DEFAULT_PORT      18600
#define PERF_DEFAULT_TIMEOUT_S 30
#define PERF_CPU_MAX_CTAS      64 /* CPU threads standing in for CTAs */
#define PERF_SLICES            8  /* a bw run's chunks; BW peak is the best one */
#define PERF_MAX_SAMPLES       (1l << 24)
#define PERF_EXIT_FAIL         1
#define PERF_EXIT_USAGE        2

/* ---- modes and tests ----------------------------------------------------------------- */
enum perf_mode_id {
	PERF_HOST,
	PERF_GPU,
	PERF_GPU_BF,
	PERF_CPU_ASSISTED,
	PERF_CPU_PROXY,
	PERF_NMODES
};
#define PERF_MODES_ALL  ((1u << PERF_NMODES) - 1)
#define PERF_MODES_GNIC (PERF_MODES_ALL & ~(1u << PERF_HOST))

struct perf_backend;
struct perf_mode {
	const char *name, *help;
	enum perf_mode_id id;
	int db_mode; /* enum gnic_db_mode of the QPs device threads post on */
	bool gnic;   /* device threads (GPU or CPU) drive libgnic QPs */
	const struct perf_backend *ops;
};

enum perf_kind { PERF_BW, PERF_LAT, PERF_RATE };
enum perf_flag {
	PERF_F_SCOPES = 1 << 0,      /* warp and CTA scope (gnic_dev has them for puts) */
	PERF_F_BIDIR = 1 << 1,       /* -b: both sides send */
	PERF_F_HALF_RTT = 1 << 2,    /* a ping-pong: latency is half the round trip */
	PERF_F_PINGPONG = 1 << 3,    /* buffer: two receive slots per side */
	PERF_F_LOCAL = 1 << 4,       /* no NIC, no sides */
	PERF_F_UNCONNECTED = 1 << 5, /* QPs stay in RESET (one process, side A only) */
	PERF_F_OPERAND8 = 1 << 6,    /* 8-byte operands only */
	PERF_F_RECV = 1 << 7,        /* receive queues */
	PERF_F_HOSTMEM = 1 << 8,     /* buffers in (pinned) host memory, also on a GPU */
	PERF_F_LOOPBACK = 1 << 9,    /* one process, side A only, its QPs connected to themselves */
	PERF_F_ETH = 1 << 10,        /* one process, an Ethernet queue pair per CTA (eth_echo) */
};

struct perf_run;
struct perf_ep;
/* Host mode's work: a stream's work request for iteration i, or a
 * ping-pong's: message i of ep's side goes out as op (from its source to
 * the peer's slot, the immediate i), await() sees it arrive, done() (may
 * be NULL) gives its slot back. */
typedef void perf_wr_fn(struct perf_run *r, struct perf_ep *ep, long i, struct ibv_send_wr *wr,
                        struct ibv_sge *sge);
struct perf_pp_host {
	enum ibv_wr_opcode op;
	void (*await)(struct perf_run *r, struct perf_ep *ep, long i);
	void (*done)(struct perf_run *r, struct perf_ep *ep, long i);
};

/* The hooks left NULL are the shared ones (gnic-perf.c's run_hooks): streams
 * (wr) fill side src's sources and check the peer's slots, latency tests set
 * up the ping-pong ring and check each message on arrival; a chunk runs the
 * device body, or wr, pp or host (side A's loop) in host mode. */
struct perf_test {
	const char *name, *help;
	enum perf_test_id id;
	enum perf_kind kind;
	unsigned modes, flags;
	const char *sizes; /* default --sizes */
	long iters, quick_iters;
	perf_wr_fn *wr;
	const struct perf_pp_host *pp;
	void (*host)(struct perf_run *r, struct perf_ep *a);
	enum perf_side src;
	/* before the first chunk: sources, poison, first receives */
	void (*setup)(struct perf_run *r);
	/* iterations [r->first, r->first + r->count): r->ns, r->lat */
	void (*run)(struct perf_run *r);
	/* after the last chunk, on the sides this process holds */
	bool (*validate)(struct perf_run *r);
	/* a device thread failed: what the test knows of it, before the exit (may be NULL) */
	void (*explain)(const struct perf_run *r);
};

/* A test's descriptor, in its file: the fixed fields, then designated ones. */
#define PERF_TEST_DEF(n, kind_, modes_, flags_, sizes_, iters_, quick_, help_, ...)                \
	const struct perf_test perf_test_##n = {                                                   \
	    #n, help_, PERF_TEST_##n, kind_, modes_, flags_, sizes_, iters_, quick_, __VA_ARGS__}
extern const struct perf_mode perf_modes[PERF_NMODES];
extern const struct perf_test *const perf_tests[PERF_NTESTS];
#define PERF_TEST_DECL(name) extern const struct perf_test perf_test_##name;
PERF_TESTS(PERF_TEST_DECL)

/* ---- command line (perf_args.c) -------------------------------------------------------- */
enum perf_format { PERF_FMT_TABLE, PERF_FMT_CSV, PERF_FMT_JSON };
/* Options given explicitly: a server refuses a client that differs in one. */
enum perf_set {
	PERF_SET_MODE = 1 << 0,
	PERF_SET_SIZES = 1 << 1,
	PERF_SET_ITERS = 1 << 2,
	PERF_SET_QPS = 1 << 3,
	PERF_SET_DEPTH = 1 << 4,
	PERF_SET_SCOPE = 1 << 5,
	PERF_SET_CTAS = 1 << 6,
	PERF_SET_THREADS = 1 << 7,
	PERF_SET_DURATION = 1 << 8,
	PERF_SET_BIDIR = 1 << 9,
	PERF_SET_WARMUP = 1 << 10,
	PERF_SET_GPU = 1 << 11,
	PERF_SET_ETH = 1 << 12, /* --rx-bufs, --window */
};

struct perf_args {
	const struct perf_test *test;
	const struct perf_mode *mode;
	size_t sizes[PERF_MAX_SIZES];
	int nsizes;
	long iters, warmup;
	double duration; /* -D seconds; 0: --iters */
	int repeat;
	bool bidir, gbits;
	int tx_depth;
	int scopes[PERF_MAX_LIST], nscopes;
	int ctas_list[PERF_MAX_LIST], nctas;
	int qps_list[PERF_MAX_LIST], nqps;
	int scope, ctas, qps; /* of the row being run */
	int threads;          /* per CTA; 0 until resolved */
	bool host_mem;        /* libgnic modes on a GPU: buffers in pinned host memory */
	int gpu;
	bool on_gpu;        /* resolved: the device code runs on a GPU */
	char dev_name[160]; /* "CPU threads (no GPU)" or the GPU */
	char plot[512];
	bool server;
	char host[256]; /* the server a client connects to; "" otherwise */
	int port;
	enum perf_format format;
	bool validate, quick;
	int eth_rx_bufs, eth_window; /* eth_echo: receive buffers per queue, frames in flight */
	char device[64];
	int timeout_s;
	unsigned set; /* enum perf_set */
};

/* Parses argv; --help and --list print and exit 0, errors exit 2. */
void perf_args_parse(int argc, char **argv, struct perf_args *a);
/* Combinations the test or mode cannot honour: exit 2 (a server checks
 * again with its client's settings, and refuses: the text goes to why). */
bool perf_args_check(const struct perf_args *a, char *why, size_t cap);
bool perf_two_process(const struct perf_args *a);
int perf_list_max(const int *v, int n);
const char *perf_scope_name(int scope);
const struct perf_mode *perf_mode_find(const char *name); /* NULL: no such mode */

/* ---- errors, clock, waits (perf_util.c) ------------------------------------------------- */
void perf_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void perf_usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void perf_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t perf_now_ns(void);
/* Every wait ends after --timeout without progress; with a peer process
 * also when its socket (peer_fd) closes: it failed and will never answer. */
void perf_wait_setup(int timeout_s, int peer_fd);
struct perf_wait {
	uint64_t deadline_ns, next_check_ns;
	uint32_t spins;
	const char *what;
};
void perf_wait_start(struct perf_wait *w, const char *what);
void perf_wait_check(struct perf_wait *w); /* exits on timeout or a dead peer */
static inline void perf_wait_tick(struct perf_wait *w)
{
	if ((++w->spins & 255) == 0) /* reading the clock every spin would slow the polls */
		perf_wait_check(w);
}
void perf_wait_progress(struct perf_wait *w); /* work got done: the deadline moves on */
uint64_t perf_timeout_ns(void);
/* Page-aligned, zeroed lazily (pages are faulted in when first written). */
void *perf_alloc(size_t len);
void perf_free(void *p, size_t len);

/* ---- patterns and the ring (perf_util.c) ------------------------------------------------ */
void perf_pattern_poison(uint8_t *p, size_t len, enum perf_side side);
/* The pattern (flip 0) or the poison (~0); on a mismatch prints where
 * (what, iteration) and returns false. */
bool perf_pattern_check(const uint8_t *p, size_t len, enum perf_side side, uint32_t region,
                        uint64_t flip, const char *what, long iter);
/* The ring of a row (the test's shape, the row's writers and depth). */
void perf_ring_for(struct perf_ring *r, const struct perf_args *a, size_t size);
void perf_ring_fill(uint8_t *buf, const struct perf_ring *r, enum perf_side side);
void perf_ring_poison(uint8_t *buf, const struct perf_ring *r, enum perf_side src);
/* Every destination slot against the last write of total iterations (a
 * slot never written still holds the poison). */
bool perf_ring_check(const uint8_t *buf, const struct perf_ring *r, enum perf_side src, long total,
                     enum perf_side holder);

/* ---- one side's objects ---------------------------------------------------------------- */
struct perf_ep {
	enum perf_side side;
	uint8_t *buf; /* the CPU's view of the buffer */
	uint8_t *dev; /* as registered and as device threads see it: buf, or GPU memory */
	size_t len;
	bool on_gpu, gpu_mem, mapped;
	int nqps;
	uint64_t raddr; /* the peer's buffer */
	uint32_t rkey;
	/* host mode (perf_verbs.c) */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	struct ibv_qp *qp[PERF_MAX_QPS];
	uint32_t psn[PERF_MAX_QPS];
	uint32_t max_inline, sq_depth, sq_signal, rd_atomic, max_msg;
	enum ibv_mtu mtu;
	uint64_t sq_posted[PERF_MAX_QPS], sq_done[PERF_MAX_QPS];
	/* libgnic modes (perf_gnic.c) */
	struct gnic_ctx *gctx;
	struct gnic_qp_group *group;
	struct gnic_dev_qp *const *dqp; /* gnic_qp_group_dev(): GPU memory on a GPU */
	uint64_t *bb;                   /* device-accessible: post_rate's pd_side.bb */
	struct gnic_mr *gmr;
	struct pd_status *st;
	uint64_t *lat;
	size_t lat_cap;
	uint64_t posted[PERF_MAX_QPS], posted_row[PERF_MAX_QPS]; /* post_rate: BBs taken */
	/* eth_echo: an Ethernet queue per CTA, their device views (device memory), and
	 * the port's counters when the run began */
	struct gnic_eth **eth;
	struct gnic_dev_eth **deth;
	int neth;
	struct gnic_eth_stats eth_base;
};

/* What a side tells the other to connect (host mode: GID, QPNs, PSNs;
 * libgnic modes: blobs), and its buffer. */
struct perf_ep_info {
	uint32_t nqps, lid, rkey, rsvd;
	uint64_t addr, len;
	uint8_t gid[16];
	uint32_t qpn[PERF_MAX_QPS], psn[PERF_MAX_QPS];
	struct gnic_blob blob[PERF_MAX_QPS];
};

/* One side's objects: host mode's (perf_verbs.c) or the libgnic modes'
 * (perf_gnic.c). connect() with peer NULL: the QPs stay unconnected. */
struct perf_session;
struct perf_backend {
	struct perf_ep *(*open)(const struct perf_args *a, enum perf_side side, size_t len);
	void (*info)(const struct perf_ep *ep, struct perf_ep_info *info);
	void (*connect)(struct perf_ep *ep, const struct perf_args *a,
	                const struct perf_ep_info *peer);
	void (*close)(struct perf_ep *ep);
	void (*env)(struct perf_session *s); /* the NIC and library, for the header */
};
extern const struct perf_backend perf_verbs_ops, perf_gnic_ops;

/* ---- the session (perf_session.c) --------------------------------------------------------- */
struct perf_session {
	struct perf_args *a;
	struct gnic_boot *boot; /* two processes; NULL in one */
	int peer_fd;            /* the bootstrap's socket: a closed one means the peer died */
	struct perf_ep *ep[2];  /* the sides this process holds */
	/* the NIC, for the header */
	char nic[64], lib[512];
	bool emu;
};

void perf_session_open(struct perf_session *s, struct perf_args *a);
void perf_session_close(struct perf_session *s);
void perf_sync(struct perf_session *s); /* both processes meet (no-op in one) */
/* Two processes: mine goes to the peer, the peer's to peer (len bytes). */
void perf_exchange(struct perf_session *s, const void *mine, void *peer, size_t len);

/* ---- a test run (gnic-perf.c) ------------------------------------------------------------ */
struct perf_run {
	struct perf_session *s;
	struct perf_args *a;
	const struct perf_test *t;
	struct perf_ep *ep[2]; /* s->ep: NULL where the other process holds the side */
	struct perf_ring ring;
	size_t size;
	long first, count; /* this chunk */
	long stop;         /* no iteration at or after stop follows (LONG_MAX: unknown) */
	long done;         /* iterations run so far, warm-up included */
	double ns;         /* the chunk's time */
	double *lat;       /* its latency samples (side A, ns), count of them */
	uint8_t *local;    /* a local test's buffer */
};
static inline bool perf_gnic(const struct perf_run *r)
{
	return r->a->mode->gnic;
}
/* Streams: the side whose sources are written, and the peer. */
static inline enum perf_side perf_peer(enum perf_side side)
{
	return side == PERF_A ? PERF_B : PERF_A;
}

/* Shared hooks. Streams: the sources are side src's (both with -b).
 * Counters: side B's word at sig_off, PERF_COUNTER_BASE plus every add. */
void perf_stream_setup(struct perf_run *r, enum perf_side src);
bool perf_stream_validate(struct perf_run *r, enum perf_side src);
void perf_counter_setup(struct perf_run *r);
bool perf_counter_check(struct perf_run *r);

/* ---- host mode (perf_verbs.c) ---------------------------------------------------------------- */
void perf_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, struct perf_ep *ep, enum ibv_wr_opcode op,
             uint64_t loff, uint32_t len, uint64_t roff);
void perf_sq_post(struct perf_ep *ep, int q, struct ibv_send_wr *wr, bool last);
void perf_sq_post_wait(struct perf_ep *ep, int q, struct ibv_send_wr *wr);
void perf_rq_post(struct perf_ep *ep, uint64_t off, uint32_t len, uint64_t wr_id);
void perf_rq_wait(struct perf_ep *ep, uint64_t wr_id, struct ibv_wc *wc);
void perf_wait_byte(const uint8_t *p, uint8_t value, const char *what);
/* Posts the chunk round-robin over the QPs of side A (and B with -b), at
 * most tx-depth outstanding per QP, and waits for all: r->ns. */
void perf_host_stream(struct perf_run *r, perf_wr_fn *wr);
/* Ping-pongs: each message out, its arrival, its slot given back. */
void perf_host_pingpong(struct perf_run *r, const struct perf_pp_host *h);
void perf_pingpong_setup(struct perf_run *r);

/* ---- libgnic modes (perf_gnic.c) ------------------------------------------------------------- */
void perf_gnic_resolve(struct perf_args *a);
bool perf_gnic_row_ok(const struct perf_args *a);
uint32_t perf_writers(const struct perf_args *a); /* a row's writers: QPs, or device threads */
long perf_granule(const struct perf_args *a);     /* chunks are multiples of it */
/* The CPU's view of [off, off + len) to the device's, or back (GPU memory). */
void perf_ep_push(struct perf_ep *ep, size_t off, size_t len);
void perf_ep_pull(struct perf_ep *ep, size_t off, size_t len);
void perf_ep_eth_dev(struct perf_ep *ep); /* ep->deth from ep->eth */
/* Runs the chunk's device body on the sides in mask this process holds,
 * phase for tests with several launches; r->ns, r->lat. */
#define PERF_RUN_A 1u
#define PERF_RUN_B 2u
void perf_dev_run(struct perf_run *r, unsigned mask, uint32_t phase);

/* The CUDA side (perf_dev_gpu.cu; without CUDA, stubs in perf_dev_cpu.c). */
#ifdef __cplusplus
extern "C" {
#endif
int perf_gpu_count(void); /* 0 without CUDA, a driver or a GPU */
void perf_gpu_use(int ordinal, char *name, size_t cap);
int perf_gpu_max_threads(void);
void *perf_gpu_alloc(size_t len, int host_mapped);
void perf_gpu_free(void *p, int host_mapped);
void perf_gpu_copy(void *dst, const void *src, size_t len, int to_dev);
double perf_gpu_launch(const struct pd_launch *L);
double perf_cpu_launch(const struct pd_launch *L);
#ifdef __cplusplus
}
#endif

/* ---- output (perf_report.c) ---------------------------------------------------------------- */
enum perf_fig { /* bandwidth in MiB/s (Gb/s with --report_gbits), times in us */
	        PERF_BW_PEAK,
	        PERF_BW_AVG,
	        PERF_MPPS,
	        PERF_T_MIN,
	        PERF_T_MAX,
	        PERF_T_TYP,
	        PERF_T_AVG,
	        PERF_T_SD,
	        PERF_T_P99,
	        PERF_T_P999,
	        PERF_NFIG
};
struct perf_stats {
	long iters;
	double v[PERF_NFIG];
};
/* msgs messages of size bytes in ns; the best chunk did best messages per ns. */
void perf_stats_bw(struct perf_stats *st, const struct perf_args *a, size_t size, long msgs,
                   double ns, double best);
void perf_stats_lat(struct perf_stats *st, double *ns, long n);
void perf_report_begin(const struct perf_session *s);
/* One row: the median of n repeats, with the spread of the headline figure. */
void perf_report_row(const struct perf_args *a, size_t size, const struct perf_stats *reps, int n);
void perf_report_server_row(const struct perf_args *a, size_t size);
void perf_report_end(const struct perf_args *a);
void perf_report_group(const char *group); /* a suite's: the rows' group column; NULL: none */
/* A usable name, perf_plot.sh there (else exit 2); whether gnuplot is (need_gnuplot: or exit 2) */
bool perf_plot_check(const char *plot, bool need_gnuplot);
void perf_plot_write(const struct perf_args *a);
/* base + suffix + ext, base being png without ".png" */
void perf_plot_path(char *out, size_t cap, const char *png, const char *suffix, const char *ext);
void perf_plot_csv(const char *path, const char *group); /* the rows of group (NULL: all) */
/* perf_plot.sh draws csv into png; x (-x) and ref (-r: reference rows) may be NULL; without
 * now, the command that would draw it is printed instead (no gnuplot here) */
void perf_plot_draw(const char *png, const char *title, const char *x, const char *ref,
                    const char *csv, bool now);

/* ---- suites (perf_suite.c) ------------------------------------------------------------------ */
bool perf_suite_wanted(int argc, char **argv);
int perf_suite_main(int argc, char **argv);
int perf_run_args(struct perf_args *a); /* one command line's rows (gnic-perf.c): the runs made */

#endif /* GNIC_PERF_H */
