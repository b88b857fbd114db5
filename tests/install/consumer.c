/* SPDX-License-Identifier: MIT */
/*
 * An external program built against an installed gnic (pkg-config or
 * find_package): strict ISO C11, public headers only. It opens a context
 * (gnic-emu on a machine without a NIC), checks that the provider library
 * in use lies under the install prefix given as argv[1], connects two QPs
 * to each other and moves bytes with the device data path on this thread.
 *
 *   consumer <prefix>   prints "consumer: PASS" and exits 0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

#define LEN 4096

static int fail(const char *what)
{
	fprintf(stderr, "consumer: %s: %s\n", what, gnic_last_error());
	return 1;
}

int main(int argc, char **argv)
{
	static uint8_t src[LEN], dst[LEN];
	struct gnic_ctx_info info;
	struct gnic_ctx *ctx;
	struct gnic_qp *a, *b;
	struct gnic_mr *smr, *dmr;
	struct gnic_blob ba, bb;
	struct gnic_rmem rm;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: consumer <install prefix>\n");
		return 2;
	}
	for (size_t i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 13 + 5);
	if (gnic_ctx_create(NULL, &ctx) || gnic_ctx_query(ctx, &info))
		return fail("context");
	printf("consumer: provider %s, device %s, library %s\n",
	       info.provider == GNIC_PROVIDER_EMU ? "gnic-emu" : "rdma-core", info.device,
	       info.provider_lib);
	if (info.provider == GNIC_PROVIDER_EMU &&
	    strncmp(info.provider_lib, argv[1], strlen(argv[1]))) {
		fprintf(stderr,
		        "consumer: gnic-emu loaded from %s, not from the install prefix %s\n",
		        info.provider_lib, argv[1]);
		return 1;
	}
	if (gnic_mr_reg(ctx, src, LEN, GNIC_ACCESS_LOCAL, &smr) ||
	    gnic_mr_reg(ctx, dst, LEN, GNIC_ACCESS_ALL, &dmr))
		return fail("memory registration");
	if (gnic_qp_create(ctx, NULL, &a) || gnic_qp_create(ctx, NULL, &b) ||
	    gnic_qp_export(a, &ba) || gnic_qp_export(b, &bb) || gnic_qp_connect(a, &bb) ||
	    gnic_qp_connect(b, &ba))
		return fail("QPs");
	gnic_mr_rmem(dmr, &rm);
	rc = gnic_dev_put(gnic_qp_dev(a), src, gnic_mr_lkey(smr), rm.addr, rm.rkey, LEN, 0, NULL);
	if (!rc)
		rc = gnic_dev_quiet(gnic_qp_dev(a));
	if (rc) {
		fprintf(stderr, "consumer: put: device status %d\n", rc);
		return 1;
	}
	if (memcmp(src, dst, LEN)) {
		fprintf(stderr, "consumer: the put's bytes did not land\n");
		return 1;
	}
	gnic_qp_destroy(a);
	gnic_qp_destroy(b);
	gnic_mr_dereg(smr);
	gnic_mr_dereg(dmr);
	gnic_ctx_destroy(ctx);
	printf("consumer: PASS\n");
	return 0;
}
