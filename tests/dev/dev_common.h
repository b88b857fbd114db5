/* SPDX-License-Identifier: MIT */
/*
 * Set-up shared by the CPU data-path tests: a gnic context on gnic-emu with
 * no GPU, two RC QPs connected to each other in this process ("a" posts, "b"
 * is the target), and registered buffers on both sides.
 *
 * Every test also runs with GNIC_DB_MODE=proxy (the *_proxy CTests): QPs
 * left at db_mode AUTO then go through libgnic's CPU proxy, and pair_open()
 * checks that they did; and with GNIC_QUEUE=host_devx (the *_devx CTests):
 * QPs left at queue AUTO are made through DEVX, which pair_open() checks too.
 */
#ifndef GNIC_TEST_DEV_COMMON_H
#define GNIC_TEST_DEV_COMMON_H

#include <pthread.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

#include "common.h"

#define CHECK_GNIC(expr)                                                                           \
	do {                                                                                       \
		gnic_status_t s_ = (expr);                                                         \
		if (s_ != GNIC_OK)                                                                 \
			T_FAIL("%s = %d (%s): %s", #expr, s_, gnic_strerror(s_),                   \
			       gnic_last_error());                                                 \
	} while (0)

#define CHECK_DEV(expr) CHECK_EQ((expr), GNIC_DEV_OK)

struct pair {
	struct gnic_ctx *ctx;
	struct gnic_qp *qa, *qb;
	struct gnic_dev_qp *a, *b; /* device views (host memory: no GPU) */
	uint8_t *abuf, *bbuf;      /* local source / remote target */
	size_t len;
	struct gnic_mr *amr, *bmr;
	struct gnic_rmem brm, arm;
};

/* A gnic context on gnic-emu with no GPU (device code on CPU threads). */
struct gnic_ctx *dev_ctx_open(void);
/* len bytes, page-aligned, zeroed; free() them. */
uint8_t *dev_buf_new(size_t len);
/* Connect two QPs of this process to each other. */
void dev_qp_connect(struct gnic_qp *x, struct gnic_qp *y);

/* stderr into a scratch file from start to stop, which puts what was
 * logged meanwhile, NUL-ended, into log (size bytes at most). */
struct dev_log {
	int fd, saved;
};
void dev_log_start(struct dev_log *l);
void dev_log_stop(struct dev_log *l, char *log, size_t size);
/* gnic_qp_create with what it logged in log. */
gnic_status_t dev_qp_create_logged(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                   struct gnic_qp **qp, char *log, size_t size);

/* attr may be NULL (defaults). */
void pair_open(struct pair *p, const struct gnic_qp_attr *attr, size_t len);
void pair_close(struct pair *p);
/* Connect (or reconnect after gnic_qp_reset) both QPs to each other. */
void pair_connect(struct pair *p);
/* Join n threads, failing the test if any is still running after timeout_s
 * (every device call is bounded, so a thread that is not back is a bug). */
void dev_join_all(pthread_t *th, int n, unsigned timeout_s);

/* The SQ's progress in any doorbell mode: BBs published (sq_ready; the ring
 * slots the proxy took in GNIC_DB_PROXY) and completed (sq_retired; the
 * proxy's done count). Both equal sq_reserved once a quiet returned. */
uint64_t dev_sq_ready(const struct gnic_dev_qp *qp);
uint64_t dev_sq_done(const struct gnic_dev_qp *qp);

#endif
