/* SPDX-License-Identifier: MIT */
/*
 * gnic-perf: a perftest-style benchmark for gnic-emu and libgnic.
 *
 * Pieces (one concern per file):
 *   perf_catalog.c   the tests and modes this binary knows
 *   perf_args.c      command line, --help, --list
 *   perf_report.c    header, table / CSV / JSON rows, latency statistics
 *   perf_wait.c      deadlines for every wait, fatal errors, clock
 *   perf_pattern.c   data patterns, buffer layouts, validation
 *   perf_oob.c       the out-of-band TCP socket between two processes
 *   perf_ep.c        one side's verbs objects (context, PD, CQs, QPs, MR)
 *   perf_session.c   the two sides: in-process, server or client
 *   perf_verbs.c     posting and polling with credits and error checks
 *   perf_host_*.c    mode "host": the CPU posts verbs work requests
 *   perf_memcpy.c    memcpy reference bandwidth (no NIC)
 *   perf_plot.c      --plot: a PNG through gnuplot
 *   perf_gnic*.c ... the libgnic modes (device threads post): see perf_gnic.h
 *
 * Roles: side A is the initiator (the client, or the first QP set in one
 * process), side B the target (the server, or the second QP set). A session
 * drives the sides this process owns: both in-process, one otherwise. A test
 * is written once against the session and does only the steps of the sides
 * it holds, so the same code runs in one process or across two.
 *
 * Errors: this is a command-line tool; anything fatal prints one clear line
 * and exits (1 for run-time failures, 2 for bad usage).
 */
#ifndef GNIC_PERF_H
#define GNIC_PERF_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PERF_MAX_SIZES         64
#define PERF_MAX_QPS           64
#define PERF_MAX_SIZE          (1ul << 30)
#define PERF_MAX_DEPTH         8192
#define PERF_DEFAULT_PORT      18600
#define PERF_DEFAULT_TIMEOUT_S 30
#define PERF_CHAIN             32  /* work requests per ibv_post_send call */
#define PERF_POLL_BATCH        16  /* completions per ibv_poll_cq call */
#define PERF_INLINE            128 /* inline data we ask the QP for */
#define PERF_EXIT_FAIL         1
#define PERF_EXIT_USAGE        2
#define PERF_MAX_LIST          16          /* values of --ctas, --qps, --scope */
#define PERF_CPU_MAX_CTAS      64          /* CPU threads standing in for CTAs */
#define PERF_MAX_DEV_BUF       (4ul << 30) /* a side's buffer in the libgnic modes */

enum perf_side { PERF_A, PERF_B };

/* ---- catalogue (perf_catalog.c) ----------------------------------------- */
enum perf_test_id {
	PERF_PUT_BW,
	PERF_PUT_LAT,
	PERF_GET_BW,
	PERF_GET_LAT,
	PERF_ATOMIC_RATE,
	PERF_SEND_LAT,
	PERF_SIGNAL_LAT,
	PERF_MEMCPY,
	PERF_POST_RATE,
};

enum perf_kind {
	PERF_KIND_BW,     /* many outstanding: bandwidth + message rate */
	PERF_KIND_LAT,    /* one at a time: latency samples */
	PERF_KIND_ATOMIC, /* rate phase + latency phase, 8-byte operands */
	PERF_KIND_LOCAL,  /* no NIC: reference figures of this machine */
	PERF_KIND_POST,   /* device threads post on unconnected QPs: WQE rate */
};

struct perf_session;
struct perf_result;

struct perf_test {
	const char *name;
	enum perf_test_id id;
	enum perf_kind kind;
	bool half_rtt; /* latency reported as half a round trip (ping-pong) */
	const char *help;
};

/* A mode is how work requests reach the NIC. */
struct perf_mode {
	const char *name;
	const char *help;
	bool gnic;   /* libgnic: device threads (GPU or CPU) drive the QPs */
	int db_mode; /* enum gnic_db_mode of the QPs device threads post on */
	bool proxy;  /* cpu-proxy: device threads hand requests to a CPU thread */
	/* Runs test t for one message size; fills r. Fatal errors exit. */
	void (*run)(struct perf_session *s, const struct perf_test *t, size_t size,
	            struct perf_result *r);
};

const struct perf_test *perf_test_find(const char *name);
const struct perf_mode *perf_mode_find(const char *name);
void perf_catalog_list(void);
bool perf_test_has_lat(const struct perf_test *t);

/* ---- command line (perf_args.c) ----------------------------------------- */
enum perf_format { PERF_FMT_TABLE, PERF_FMT_CSV, PERF_FMT_JSON };
enum perf_scope { PERF_SCOPE_THREAD, PERF_SCOPE_WARP, PERF_SCOPE_CTA };
const char *perf_scope_name(int scope);

struct perf_args {
	const struct perf_test *test;
	const struct perf_mode *mode;
	size_t sizes[PERF_MAX_SIZES];
	int nsizes;
	long iters, warmup;
	int qps, tx_depth; /* qps: of the current row */
	/* lists swept, one row per combination and size (libgnic modes) */
	int scopes[PERF_MAX_LIST], nscopes;
	int ctas_list[PERF_MAX_LIST], nctas;
	int qps_list[PERF_MAX_LIST], nqps;
	int scope, ctas; /* of the current row */
	int threads;     /* per CTA; 0 until resolved */
	bool host_mem;   /* libgnic modes on a GPU: buffers in pinned host memory */
	int gpu;         /* CUDA ordinal */
	char plot[512];  /* --plot PNG, "" = none */
	/* resolved by perf_gnic_resolve() for the libgnic modes */
	bool on_gpu;
	char dev_name[160]; /* "CPU threads (no GPU)" or the GPU */
	bool server;
	char connect_host[256]; /* empty: not a client */
	int port;
	enum perf_format format;
	bool validate;
	char device[64]; /* empty: the first device */
	bool quick;
	int timeout_s;
	/* what the user set explicitly (a server reports what it overrides) */
	bool sizes_set, iters_set, warmup_set, qps_set, depth_set;
	bool scope_set, ctas_set, threads_set, gpu_set;
};

/* Parses argv into a; --help and --list print and exit 0, errors exit 2. */
void perf_args_parse(int argc, char **argv, struct perf_args *a);
/* Checks combinations that depend on the test (a server calls it again
 * after adopting the client's settings). Exits 2 with a message. */
void perf_args_check(const struct perf_args *a);
bool perf_is_two_process(const struct perf_args *a);
int perf_list_max(const int *v, int n);

/* ---- deadlines, errors, clock (perf_wait.c) ----------------------------- */
void perf_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void perf_usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
uint64_t perf_now_ns(void);
/* Every wait runs under the --timeout deadline; in two-process runs it also
 * stops when the peer's socket closes (the peer failed). */
void perf_wait_setup(int timeout_s, int oob_fd);
struct perf_wait {
	uint64_t deadline_ns, next_check_ns;
	uint32_t spins;
	bool progressed; /* work got done: the deadline moves on */
	const char *what;
};
void perf_wait_start(struct perf_wait *w, const char *what);
/* Waiting for device threads whose own waits end after --timeout: give
 * them slack_s more to report why. */
#define PERF_DEVICE_SLACK_S 10
void perf_wait_start_slack(struct perf_wait *w, const char *what, int slack_s);
void perf_wait_check(struct perf_wait *w); /* exits on timeout or a dead peer */
static inline void perf_wait_tick(struct perf_wait *w)
{
	/* Reading the clock on every spin would slow the polls measured. */
	if ((++w->spins & 255) == 0)
		perf_wait_check(w);
}
/* For loops that wait and work: each bit of work restarts the deadline (the
 * clock is read only when the loop next waits). */
static inline void perf_wait_progress(struct perf_wait *w)
{
	w->progressed = true;
}
int perf_timeout_ms(void);

/* ---- patterns and layouts (perf_pattern.c) ------------------------------
 * A buffer holds nsrc source regions then nslots destination slots per QP,
 * each stride bytes (size rounded up to 64). Region r of side X is filled with pattern (X, r);
 * its last byte is a marker distinct for every r < 128, so a poller can tell
 * consecutive messages apart. */
struct perf_layout {
	size_t size, stride;
	uint32_t nqps, nslots, nsrc;
	size_t src_off, dst_off, total;
};

void perf_layout_stream(struct perf_layout *l, size_t size, int nqps, long total_iters);
void perf_layout_pingpong(struct perf_layout *l, size_t size);
void perf_layout_atomic(struct perf_layout *l, int nqps, int depth);
void perf_layout_for(struct perf_layout *l, const struct perf_args *a, size_t size);
size_t perf_buffer_len(const struct perf_args *a);
static inline size_t perf_src(const struct perf_layout *l, uint32_t r)
{
	return l->src_off + (size_t)r * l->stride;
}
static inline size_t perf_dst(const struct perf_layout *l, uint32_t q, uint32_t s)
{
	return l->dst_off + ((size_t)q * l->nslots + s) * l->stride;
}
/* Streams: iteration i goes through QP i % nqps into that QP's slot
 * (i / nqps) % nslots, from source region i % nsrc. */
uint32_t perf_stream_slot(const struct perf_layout *l, long i);
uint32_t perf_stream_region(const struct perf_layout *l, long i);
/* The last of total iterations that wrote slot (q, s). */
long perf_stream_last_iter(const struct perf_layout *l, uint32_t q, uint32_t s, long total);
void perf_pattern_fill(uint8_t *p, size_t len, enum perf_side side, uint32_t region);
void perf_pattern_poison(uint8_t *p, size_t len, enum perf_side side, uint32_t region);
uint8_t perf_pattern_marker(enum perf_side side, uint32_t region);
/* Offset of the first byte that differs from pattern (side, region), or -1. */
long perf_pattern_find(const uint8_t *p, size_t len, enum perf_side side, uint32_t region);
/* Checks; on a mismatch prints where and returns false (check) or exits 1
 * (expect). what names the place, iter the last iteration that wrote it. */
bool perf_pattern_check(const uint8_t *p, size_t len, enum perf_side side, uint32_t region,
                        const char *what, long iter);
void perf_pattern_expect(const uint8_t *p, size_t len, enum perf_side side, uint32_t region,
                         const char *what, long iter);
/* Fill every source region of a buffer with its pattern. */
void perf_fill_sources(uint8_t *buf, const struct perf_layout *l, enum perf_side side);
/* Streams: before the run every destination slot holds the complement of
 * what it must hold after total iterations; afterwards each is checked
 * (unit names the layout's "QP": a QP, or a device thread; holder is the
 * side whose buffer it is). */
void perf_stream_poison(uint8_t *buf, const struct perf_layout *l, enum perf_side src, long total);
bool perf_stream_check(const uint8_t *buf, const struct perf_layout *l, enum perf_side src,
                       long total, const char *unit, enum perf_side holder);

/* ---- out-of-band socket (perf_oob.c) ------------------------------------ */
int perf_oob_listen(int port);                    /* listening fd; exits on error */
int perf_oob_accept(int lfd);                     /* waits at most the timeout */
int perf_oob_connect(const char *host, int port); /* retries until the timeout */
void perf_oob_send(int fd, uint32_t type, const void *body, uint32_t len);
/* Receives one message of this type and exactly len bytes, or exits. */
void perf_oob_recv(int fd, uint32_t type, void *body, uint32_t len);
enum perf_oob_type {
	PERF_OOB_PARAMS = 1,
	PERF_OOB_EP_INFO,
	PERF_OOB_BARRIER,
	PERF_OOB_VERDICT,
	PERF_OOB_GEP_INFO,
};
/* Wire encoding helpers: big-endian, at *pos, advancing it. */
void perf_put32(uint8_t **pos, uint32_t v);
void perf_put64(uint8_t **pos, uint64_t v);
uint32_t perf_get32(const uint8_t **pos);
uint64_t perf_get64(const uint8_t **pos);

/* ---- one side's verbs objects (perf_ep.c) ------------------------------- */
struct perf_remote {
	uint64_t addr; /* the peer's buffer as its rkey sees it */
	uint32_t rkey;
	uint64_t len;
};

struct perf_ep {
	enum perf_side side;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp[PERF_MAX_QPS];
	uint32_t psn[PERF_MAX_QPS];
	int nqps;
	uint8_t *buf;
	size_t len;
	struct ibv_mr *mr;
	uint32_t max_inline;
	uint32_t sq_depth;  /* max_send_wr of each QP */
	uint32_t rd_atomic; /* max_rd_atomic we use */
	enum ibv_mtu mtu;
	struct perf_remote remote;
	/* send queue accounting (perf_verbs.c), per QP */
	uint64_t sq_posted[PERF_MAX_QPS], sq_done[PERF_MAX_QPS];
	uint32_t sq_signal; /* signal every Nth work request */
};

/* What one side tells the other to connect. */
struct perf_ep_info {
	union ibv_gid gid;
	uint16_t lid;
	uint64_t addr;
	uint32_t rkey;
	uint64_t len;
	uint32_t nqps;
	uint32_t qpn[PERF_MAX_QPS], psn[PERF_MAX_QPS];
};
#define PERF_EP_INFO_WIRE (16 + 4 + 8 + 4 + 8 + 4 + PERF_MAX_QPS * 8)

struct perf_ep *perf_ep_open(const struct perf_args *a, enum perf_side side, size_t len);
void perf_ep_info(const struct perf_ep *ep, struct perf_ep_info *info);
void perf_ep_connect(struct perf_ep *ep, const struct perf_ep_info *peer);
void perf_ep_close(struct perf_ep *ep);
void perf_ep_info_encode(const struct perf_ep_info *info, uint8_t *wire);
void perf_ep_info_decode(const uint8_t *wire, struct perf_ep_info *info);

/* Which library answered, for the header. */
struct perf_env {
	char device[64];
	const char *provider; /* "gnic-emu" or "other" */
	char libibverbs[512];
	/* libgnic modes */
	char devices[160]; /* who runs the device code: "CPU threads (no GPU)" or the GPU */
	char memory[160];  /* where the buffers are */
	char qps[160];     /* QP settings */
};
void perf_env_probe(const struct perf_args *a, struct perf_env *env);

/* ---- the two sides (perf_session.c) ------------------------------------- */
struct perf_gep; /* a side in the libgnic modes (perf_gnic.h) */

struct perf_session {
	struct perf_args *args;
	struct perf_ep *ep[2];   /* host mode; NULL: that side lives in the other process */
	struct perf_gep *gep[2]; /* libgnic modes; the same */
	int oob;                 /* -1 in-process */
	int listen_fd;
};

/* Opens the sides this process owns and connects them; a server first
 * adopts the client's settings into s->args. */
void perf_session_open(struct perf_session *s, struct perf_args *a);
void perf_session_close(struct perf_session *s);
/* Both processes reach this point before either goes on (no-op in-process). */
void perf_session_barrier(struct perf_session *s, uint32_t step);
/* Side B's validation verdict reaches side A; returns whether it passed. */
bool perf_session_verdict(struct perf_session *s, bool b_ok);
static inline struct perf_ep *perf_a(struct perf_session *s)
{
	return s->ep[PERF_A];
}
static inline struct perf_ep *perf_b(struct perf_session *s)
{
	return s->ep[PERF_B];
}

/* ---- posting and polling (perf_verbs.c) --------------------------------- */
void perf_wr_init(struct ibv_send_wr *wr, struct ibv_sge *sge, struct perf_ep *ep,
                  enum ibv_wr_opcode op, size_t local_off, uint32_t len, size_t remote_off);
/* Numbers wr for QP q and signals it when due (or when last is set). */
void perf_sq_prepare(struct perf_ep *ep, int q, struct ibv_send_wr *wr, bool last);
void perf_sq_post(struct perf_ep *ep, int q, struct ibv_send_wr *first);
/* How many more work requests QP q may take: depth minus those posted and
 * not yet retired by a completion (unsignaled ones count too). */
uint32_t perf_sq_room(const struct perf_ep *ep, int q, uint32_t depth);
int perf_sq_reap(struct perf_ep *ep); /* polls once; returns completions */
void perf_sq_wait_room(struct perf_ep *ep, int q, uint32_t depth);
void perf_sq_drain(struct perf_ep *ep);
/* Posts, waits for and checks the completion of one signaled request. */
void perf_sq_post_wait(struct perf_ep *ep, int q, struct ibv_send_wr *wr);
/* Posts iterations [first, first + count) of a stream of op round-robin
 * over side A's QPs, at most depth outstanding per QP, then waits for all. */
void perf_stream_post(struct perf_ep *ep, const struct perf_layout *l, enum ibv_wr_opcode op,
                      long first, long count);
uint64_t perf_atomic_add(long i); /* addend of fetch-add iteration i */
void perf_rq_post(struct perf_ep *ep, int q, size_t off, uint32_t len, uint64_t wr_id);
/* Waits for the next receive completion; checks status and wr_id. */
void perf_rq_wait(struct perf_ep *ep, uint64_t wr_id, struct ibv_wc *wc);
void perf_check_wc(const struct ibv_wc *wc, const char *where);
void perf_wait_byte(const volatile uint8_t *p, uint8_t value, const char *what);

/* ---- results and output (perf_report.c) --------------------------------- */
struct perf_result {
	size_t size;
	long iters;
	double elapsed_ns;
	double *lat_ns; /* iters samples (latency tests), owned by the caller */
	long nlat;
};

void perf_report_begin(const struct perf_args *a, const struct perf_env *env,
                       const struct perf_session *s);
void perf_report_row(const struct perf_args *a, const struct perf_result *r);
void perf_report_end(const struct perf_args *a);
void perf_report_progress(const struct perf_args *a, int index, int total, size_t size);
/* The CSV header and one row, as --csv prints them (and --plot writes). */
void perf_report_csv_header(FILE *f);
void perf_report_csv_rows(FILE *f);
const char *perf_report_title(void);
/* The rows' series (all settings but the size), in order. */
int perf_report_nseries(void);
const char *perf_report_series(int index);

/* ---- --plot (perf_plot.c) ----------------------------------------------- */
/* Exits 2 with how to install gnuplot when it is missing. */
void perf_plot_check(const struct perf_args *a);
/* Writes the rows as CSV next to the PNG and has gnuplot draw it. */
void perf_plot_write(const struct perf_args *a);
void perf_report_server(const struct perf_args *a, size_t size, bool ok);

/* ---- modes and tests ---------------------------------------------------- */
void perf_host_run(struct perf_session *s, const struct perf_test *t, size_t size,
                   struct perf_result *r);
void perf_host_stream(struct perf_session *s, const struct perf_test *t, size_t size,
                      struct perf_result *r);
void perf_host_pingpong(struct perf_session *s, const struct perf_test *t, size_t size,
                        struct perf_result *r);
void perf_host_get_lat(struct perf_session *s, size_t size, struct perf_result *r);
void perf_host_atomic(struct perf_session *s, struct perf_result *r);
void perf_memcpy_run(const struct perf_args *a, size_t size, struct perf_result *r);
/* The libgnic modes (perf_gnic.h). */
void perf_gnic_run(struct perf_session *s, const struct perf_test *t, size_t size,
                   struct perf_result *r);
void perf_gnic_resolve(struct perf_args *a);
bool perf_gnic_row_ok(const struct perf_args *a);
struct perf_env;
void perf_gnic_env(const struct perf_session *s, struct perf_env *env);

#endif /* GNIC_PERF_H */
