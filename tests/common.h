/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers for the gnic-emu tests.
 *
 * Every test is a standalone program: exit 0 pass, 1 fail, 77 skip. Checks
 * fail fast: they print file:line, the expression and both values, then
 * exit(1), so the first broken expectation is the one reported. t_*() helpers
 * that set up objects fail the same way; the few that return a status are
 * there for tests that expect the failure.
 */
#ifndef GNIC_TEST_COMMON_H
#define GNIC_TEST_COMMON_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

#define T_DEVICE "rocep1s0f0"
#define T_PAGE   4096u
/* How long any wait may take before the test fails (never spin forever). */
#define T_WAIT_MS 10000

/* What the test is doing now; printed with every failure. */
void t_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void t_fail(const char *file, int line, const char *fmt, ...) __attribute__((noreturn))
__attribute__((format(printf, 3, 4)));
void t_skip(const char *fmt, ...) __attribute__((noreturn)) __attribute__((format(printf, 1, 2)));

#define T_FAIL(...) t_fail(__FILE__, __LINE__, __VA_ARGS__)

/* Programs made of named cases: run the one argv[1] names, or all of them.
 * A name that matches no case fails the test. */
struct t_named_case {
	const char *name;
	void (*fn)(void);
};
void t_run_cases(const struct t_named_case *cases, size_t n, int argc, char **argv);
#define T_RUN_CASES(cases, argc, argv)                                                             \
	t_run_cases(cases, sizeof(cases) / sizeof(cases[0]), argc, argv)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			T_FAIL("CHECK(%s) failed", #cond);                                         \
	} while (0)

/* Compare as integers; prints both values in decimal and hex. */
#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		unsigned long long a_ = (unsigned long long)(a);                                   \
		unsigned long long b_ = (unsigned long long)(b);                                   \
		if (a_ != b_)                                                                      \
			T_FAIL("CHECK_EQ(%s, %s) failed: %lld (0x%llx) != %lld (0x%llx)", #a, #b,  \
			       (long long)a_, a_, (long long)b_, b_);                              \
	} while (0)

#define CHECK_NE(a, b)                                                                             \
	do {                                                                                       \
		unsigned long long a_ = (unsigned long long)(a);                                   \
		unsigned long long b_ = (unsigned long long)(b);                                   \
		if (a_ == b_)                                                                      \
			T_FAIL("CHECK_NE(%s, %s) failed: both %lld (0x%llx)", #a, #b,              \
			       (long long)a_, a_);                                                 \
	} while (0)

#define CHECK_GE(a, b)                                                                             \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ < b_)                                                                       \
			T_FAIL("CHECK_GE(%s, %s) failed: %lld < %lld", #a, #b, a_, b_);            \
	} while (0)

/* A verbs int call that must return 0 (libibverbs returns a positive errno). */
#define CHECK_OK(expr)                                                                             \
	do {                                                                                       \
		int r_ = (expr);                                                                   \
		if (r_ != 0)                                                                       \
			T_FAIL("%s returned %d (%s), errno %d", #expr, r_,                         \
			       r_ > 0 ? strerror(r_) : "?", errno);                                \
	} while (0)

/* A call that must fail with exactly this errno-style return value. */
#define CHECK_RET(expr, want)                                                                      \
	do {                                                                                       \
		int r_ = (expr);                                                                   \
		if (r_ != (want))                                                                  \
			T_FAIL("%s returned %d (%s), expected %d (%s)", #expr, r_,                 \
			       r_ > 0 ? strerror(r_) : "-", (int)(want), strerror(want));          \
	} while (0)

/* A create call that must succeed (NULL + errno on failure). */
#define CHECK_PTR(expr)                                                                            \
	({                                                                                         \
		errno = 0;                                                                         \
		__typeof__(expr) p_ = (expr);                                                      \
		if (!p_)                                                                           \
			T_FAIL("%s returned NULL, errno %d (%s)", #expr, errno, strerror(errno));  \
		p_;                                                                                \
	})

/* Byte-exact comparison; reports the first differing offset and how many. */
#define CHECK_MEM(got, want, len) t_check_mem(__FILE__, __LINE__, #got, got, want, len)
void t_check_mem(const char *file, int line, const char *what, const void *got, const void *want,
                 size_t len);
/* Every byte of buf[0, len) equals c. */
#define CHECK_BYTES(buf, c, len) t_check_bytes(__FILE__, __LINE__, #buf, buf, c, len)
void t_check_bytes(const char *file, int line, const char *what, const void *buf, int c,
                   size_t len);

/* Completion checks: status, wr_id and opcode, with names on failure. */
#define CHECK_WC(wc, id, st, op)    t_check_wc(__FILE__, __LINE__, wc, id, st, op)
#define CHECK_WC_STATUS(wc, id, st) t_check_wc(__FILE__, __LINE__, wc, id, st, -1)
void t_check_wc(const char *file, int line, const struct ibv_wc *wc, uint64_t wr_id,
                enum ibv_wc_status status, int opcode);
const char *t_wc_status_str(int status);
const char *t_wc_opcode_str(int opcode);
const char *t_qp_state_str(int state);
void t_print_wc(FILE *f, const struct ibv_wc *wc);

/* Deterministic test data: byte i of pattern seed s. */
void t_fill(void *buf, size_t len, uint32_t seed);
uint8_t t_pattern_byte(size_t i, uint32_t seed);
void *t_alloc(size_t len, int fill); /* page-aligned, every byte = fill */
uint64_t t_now_ms(void);
void t_sleep_ms(unsigned ms);
void t_pin_one_cpu(void); /* every thread of the process on one CPU (races show) */
void t_unpin(void);       /* back to the mask t_pin_one_cpu found */

/* ---- verbs helpers ------------------------------------------------------ */
struct ibv_context *t_open(const char *name);
struct ibv_cq *t_cq(struct ibv_context *ctx, int cqe);
struct ibv_mr *t_reg(struct ibv_pd *pd, void *buf, size_t len, int access);
#define T_ACCESS_ALL                                                                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)

struct t_qp_caps {
	uint32_t send_wr, recv_wr, send_sge, recv_sge, inline_data;
	int sq_sig_all;
};
void t_qp_caps_default(struct t_qp_caps *c);
/* Returns the QP; *actual (may be NULL) receives the caps the QP really got. */
struct ibv_qp *t_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
                    const struct t_qp_caps *caps, struct ibv_qp_cap *actual);

/* A QP of `type` on one CQ: depth send and receive WRs of one SGE each. */
struct ibv_qp *t_qp_on(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type, uint32_t depth);
/* A small RC QP on one CQ: 4 send and 4 receive WRs of one SGE each. */
struct ibv_qp *t_small_qp(struct ibv_pd *pd, struct ibv_cq *cq);
/* ibv_create_qp_ex's attributes for a QP like t_qp_on(pd, cq, type, 4)
 * with send_ops_flags ops. */
struct ibv_qp_init_attr_ex t_qp_ex_attr(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type,
                                        uint64_t ops);

#ifndef T_NO_VERBS
#include <infiniband/mlx5dv.h>
/* The QP as mlx5dv_init_obj shows it (queues, doorbell record, register). */
struct mlx5dv_qp t_dv_qp(struct ibv_qp *qp);
/* The address of the QP's BlueFlame / doorbell register (mlx5dv bf.reg). */
uintptr_t t_bf_reg(struct ibv_qp *qp);
#endif

/* Connection parameters; t_conn_opts_default gives a fast, reliable RC QP. */
struct t_conn_opts {
	int access; /* qp_access_flags */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint32_t sq_psn, rq_psn;
	enum ibv_mtu mtu;
	uint8_t sgid_index; /* T_GID_INDEX */
};
void t_conn_opts_default(struct t_conn_opts *o);
/* The GID index tests use: RoCE v2, IPv4-mapped, as on a real RoCE port. */
#define T_GID_INDEX 3

/* Where a peer QP is: what two sides exchange before connecting. */
struct t_ep {
	union ibv_gid gid;
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr, len;
};
void t_local_ep(struct ibv_qp *qp, struct t_ep *ep); /* GID of port 1, T_GID_INDEX */
/* The device's fabric identity (::<port>:ffff:<ipv4>, what its handshake
 * names and where its listener is): the IPv4 address of its GIDs and the
 * fabric port (GNIC_EMU_PORT, default 4791). */
void t_fabric_id(struct ibv_context *ctx, union ibv_gid *id);
uint16_t t_fabric_port(void); /* host order */

/* Single transitions, returning ibv_modify_qp's result (for negative tests). */
int t_qp_to_init(struct ibv_qp *qp, const struct t_conn_opts *o);
int t_qp_to_rtr(struct ibv_qp *qp, const struct t_ep *peer, const struct t_conn_opts *o);
int t_qp_to_rts(struct ibv_qp *qp, const struct t_conn_opts *o);
int t_qp_to(struct ibv_qp *qp, enum ibv_qp_state state); /* RESET, ERR, ... */
/* RESET -> INIT -> RTR -> RTS; fails the test on any error. */
void t_connect(struct ibv_qp *qp, const struct t_ep *peer, const struct t_conn_opts *o);
/* Any state -> RESET -> ... -> RTS again. */
void t_reconnect(struct ibv_qp *qp, const struct t_ep *peer, const struct t_conn_opts *o);
enum ibv_qp_state t_qp_state(struct ibv_qp *qp); /* from ibv_query_qp */

/* Two RC QPs of one context connected to each other; one send and one
 * receive CQ per side so completions can be counted per queue. */
struct t_pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq[2], *rcq[2];
	struct ibv_qp *qp[2];
	struct ibv_qp_cap cap[2];
	struct t_ep ep[2];
	struct t_conn_opts opts;
};
/* caps/opts may be NULL for the defaults; cqe: entries of each CQ (0: 256). */
void t_pair_create(struct t_pair *p, struct ibv_context *ctx, const struct t_qp_caps *caps,
                   const struct t_conn_opts *opts, int cqe);
void t_pair_reconnect(struct t_pair *p);
void t_pair_destroy(struct t_pair *p);

#ifndef T_NO_VERBS
/* A t_pair whose QPs the test made itself (ibv_create_qp_ex,
 * mlx5dv_create_qp), with two buffers: t_xpair_finish connects qp[0] and
 * qp[1], takes qp[0]'s ibv_qp_ex and mlx5dv view (its SQ, to read WQE
 * bytes) and registers len bytes of zeros (a, local) and of `guard` bytes
 * (b, remote) on p.pd; t_xpair_destroy tears all of it down. dx is the
 * test's (mlx5dv_qp_ex of a QP made by mlx5dv_create_qp). */
struct t_xpair {
	struct t_pair p;
	struct ibv_qp_ex *x;
	struct mlx5dv_qp_ex *dx;
	struct mlx5dv_qp dv;
	uint8_t *a, *b;
	struct ibv_mr *amr, *bmr;
};
void t_xpair_finish(struct t_xpair *xp, size_t len, int guard);
void t_xpair_destroy(struct t_xpair *xp);
#endif

/* Post exactly one WR or a chain and fail the test if post_send refuses it. */
void t_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr);
void t_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr);
void t_post_recv_buf(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey);

/* Collect exactly n completions within T_WAIT_MS or fail, naming `what`. */
void t_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc, const char *what);
void t_poll_timeout(struct ibv_cq *cq, int n, struct ibv_wc *wc, unsigned ms, const char *what);
struct ibv_wc t_poll1(struct ibv_cq *cq, const char *what);
/* No completion may be waiting (checked for a short while). */
void t_expect_empty(struct ibv_cq *cq, const char *what);
/* One signaled RDMA WRITE of len bytes from the start of src to the start
 * of dst on qp; its completion from cq (within 10 s, else the test fails),
 * whatever its status. */
struct ibv_wc t_write_once(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *src,
                           struct ibv_mr *dst, uint32_t len, uint64_t wr_id);

#endif /* GNIC_TEST_COMMON_H */
