/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the libgnic host tests (on top of ../common.h).
 *
 * The few raw-WQE helpers below post one RDMA WRITE through a struct
 * gnic_dev_qp in host memory and poll its send CQ, exactly as device code
 * would: they prove that the fields libgnic exported describe a working QP.
 * They are not the data path (gnic_dev.cuh is).
 */
#ifndef GNIC_GT_H
#define GNIC_GT_H

#include <gnic/gnic.h>

#include "common.h"

/* A gnic call that must succeed; prints the status and gnic_last_error(). */
#define CHECK_GNIC(expr)                                                                           \
	do {                                                                                       \
		gnic_status_t s_ = (expr);                                                         \
		if (s_ != GNIC_OK)                                                                 \
			T_FAIL("%s: %s: %s", #expr, gnic_strerror(s_), gnic_last_error());         \
	} while (0)

/* A gnic call that must fail with `want` and explain itself. */
#define CHECK_GNIC_ERR(expr, want)                                                                 \
	do {                                                                                       \
		gnic_status_t s_ = (expr);                                                         \
		if (s_ != (want))                                                                  \
			T_FAIL("%s returned %s (\"%s\"), expected %s", #expr, gnic_strerror(s_),   \
			       gnic_last_error(), gnic_strerror(want));                            \
		if (!gnic_last_error()[0])                                                         \
			T_FAIL("%s failed without a text", #expr);                                 \
		printf("  expected: %s\n", gnic_last_error());                                     \
	} while (0)

/* A CPU-only context on the default provider. */
struct gnic_ctx *gt_ctx(void);

/* Post one signaled RDMA WRITE of len bytes and announce it (SM: doorbell
 * record + register; CPU: the cpu_db word, for the progress thread). */
void gt_post_write(struct gnic_dev_qp *d, const void *src, uint32_t lkey, uint64_t raddr,
                   uint32_t rkey, uint32_t len);
/* Wait for the next send CQE; returns its CQE opcode (GNIC_MLX5_CQE_*), the
 * syndrome of an error CQE in *syndrome. Fails the test after T_WAIT_MS. */
int gt_poll_send(struct gnic_dev_qp *d, uint8_t *syndrome);
/* WRITE and wait for a successful completion. */
void gt_write(struct gnic_dev_qp *d, const void *src, uint32_t lkey, uint64_t raddr, uint32_t rkey,
              uint32_t len);

#endif /* GNIC_GT_H */
