// SPDX-License-Identifier: MIT
/*
 * Memory regions: keys, the remote descriptor, every access combination,
 * and refusals of bad arguments (which register nothing).
 */
#include "gt.h"

static const unsigned accesses[] = {
    0,
    GNIC_ACCESS_LOCAL,
    GNIC_ACCESS_REMOTE_READ,
    GNIC_ACCESS_LOCAL | GNIC_ACCESS_REMOTE_WRITE,
    GNIC_ACCESS_LOCAL | GNIC_ACCESS_REMOTE_ATOMIC,
    GNIC_ACCESS_ALL,
};

int main(void)
{
	struct gnic_ctx *ctx = gt_ctx();
	size_t len = 1 << 20;
	uint8_t *buf = t_alloc(len, 0);
	struct gnic_mr *mr = NULL, *mr2 = NULL;
	struct gnic_rmem rm;

	t_case("register, keys, rmem");
	CHECK_GNIC(gnic_mr_reg(ctx, buf, len, GNIC_ACCESS_ALL, &mr));
	CHECK_NE(gnic_mr_lkey(mr), 0);
	CHECK_NE(gnic_mr_rkey(mr), 0);
	memset(&rm, 0xff, sizeof(rm));
	gnic_mr_rmem(mr, &rm);
	CHECK_EQ(rm.addr, (uintptr_t)buf);
	CHECK_EQ(rm.len, len);
	CHECK_EQ(rm.rkey, gnic_mr_rkey(mr));
	CHECK_EQ(rm.rsvd, 0);

	t_case("a second region has other keys; sub-ranges and odd sizes");
	CHECK_GNIC(gnic_mr_reg(ctx, buf + 100, 1, GNIC_ACCESS_LOCAL, &mr2));
	CHECK_NE(gnic_mr_lkey(mr2), gnic_mr_lkey(mr));
	CHECK_NE(gnic_mr_rkey(mr2), gnic_mr_rkey(mr));
	gnic_mr_rmem(mr2, &rm);
	CHECK_EQ(rm.addr, (uintptr_t)(buf + 100));
	CHECK_EQ(rm.len, 1);
	gnic_mr_dereg(mr2);

	t_case("every valid access combination");
	for (size_t i = 0; i < sizeof(accesses) / sizeof(accesses[0]); i++) {
		CHECK_GNIC(gnic_mr_reg(ctx, buf, 4096, accesses[i], &mr2));
		gnic_mr_dereg(mr2);
	}

	t_case("bad arguments");
	mr2 = NULL;
	CHECK_GNIC_ERR(gnic_mr_reg(NULL, buf, len, GNIC_ACCESS_ALL, &mr2), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_mr_reg(ctx, NULL, len, GNIC_ACCESS_ALL, &mr2), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_mr_reg(ctx, buf, 0, GNIC_ACCESS_ALL, &mr2), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_mr_reg(ctx, buf, len, GNIC_ACCESS_ALL, NULL), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_mr_reg(ctx, buf, len, 0x10, &mr2), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_mr_reg(ctx, buf, len, GNIC_ACCESS_REMOTE_WRITE, &mr2),
	               GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_mr_reg(ctx, buf, len, GNIC_ACCESS_REMOTE_ATOMIC, &mr2),
	               GNIC_ERR_INVALID);
	CHECK(mr2 == NULL);

	t_case("NULL handles");
	CHECK_EQ(gnic_mr_lkey(NULL), 0);
	CHECK_EQ(gnic_mr_rkey(NULL), 0);
	gnic_mr_rmem(NULL, &rm);
	CHECK_EQ(rm.addr, 0);
	gnic_mr_rmem(mr, NULL);
	gnic_mr_dereg(NULL);

	gnic_mr_dereg(mr);
	gnic_ctx_destroy(ctx);
	free(buf);
	return T_EXIT_PASS;
}
