/* SPDX-License-Identifier: MIT */
/*
 * Bandwidth loop with the gnic device API: N threads share one QP
 * (GNIC_SHARE_GPU, as the threads of a grid would), each putting fixed-size
 * messages into its own slice of the target, then gnic_dev_quiet(). The
 * target checks every byte. On a GPU the loop body is a kernel's body.
 *
 *   put_bw [threads] [msg_bytes] [msgs_per_thread]   (runs on gnic-emu)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

struct worker {
	struct gnic_dev_qp *qp;
	uint8_t *src;
	uint32_t lkey;
	struct gnic_rmem dst;
	size_t msg;
	int n, id, rc;
};

static void *run(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < w->n && !w->rc; i++) {
		size_t off = ((size_t)w->id * w->n + i) * w->msg;

		w->rc = gnic_dev_put(w->qp, w->src + off, w->lkey, w->dst.addr + off, w->dst.rkey,
		                     (uint32_t)w->msg, 0, NULL);
	}
	if (!w->rc)
		w->rc = gnic_dev_quiet(w->qp);
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 4;
	size_t msg = argc > 2 ? (size_t)atol(argv[2]) : 4096;
	int n = argc > 3 ? atoi(argv[3]) : 2000;
	size_t len = (size_t)nthreads * n * msg;
	struct gnic_qp_attr qa;
	struct gnic_ctx *ctx;
	struct gnic_qp *a, *b;
	struct gnic_mr *smr, *dmr;
	struct gnic_blob ba, bb;
	struct worker w[64];
	pthread_t th[64];
	uint8_t *src, *dst;
	uint64_t t0;
	double s;

	if (nthreads < 1 || nthreads > 64 || msg < 1 || n < 1) {
		fprintf(stderr, "usage: put_bw [threads 1-64] [msg_bytes] [msgs_per_thread]\n");
		return 2;
	}
	src = malloc(len);
	dst = calloc(1, len);
	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 31 + 7);
	if (gnic_ctx_create(NULL, &ctx) || gnic_mr_reg(ctx, src, len, GNIC_ACCESS_LOCAL, &smr) ||
	    gnic_mr_reg(ctx, dst, len, GNIC_ACCESS_ALL, &dmr)) {
		fprintf(stderr, "setup: %s\n", gnic_last_error());
		return 1;
	}
	gnic_qp_attr_init(&qa);
	qa.share = GNIC_SHARE_GPU;
	if (gnic_qp_create(ctx, &qa, &a) || gnic_qp_create(ctx, &qa, &b) ||
	    gnic_qp_export(a, &ba) || gnic_qp_export(b, &bb) || gnic_qp_connect(a, &bb) ||
	    gnic_qp_connect(b, &ba)) {
		fprintf(stderr, "qp: %s\n", gnic_last_error());
		return 1;
	}
	t0 = gnic_now_ns();
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){gnic_qp_dev(a), src, gnic_mr_lkey(smr), {0}, msg, n, i, 0};
		gnic_mr_rmem(dmr, &w[i].dst);
		pthread_create(&th[i], NULL, run, &w[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		if (w[i].rc) {
			fprintf(stderr, "thread %d: status %d\n", i, w[i].rc);
			return 1;
		}
	}
	s = (double)(gnic_now_ns() - t0) / 1e9;
	if (memcmp(src, dst, len)) {
		fprintf(stderr, "data mismatch\n");
		return 1;
	}
	printf("%d threads x %d puts of %zu B: %.2f Mmsg/s, %.1f MiB/s (verified)\n", nthreads, n,
	       msg, nthreads * (double)n / s / 1e6, (double)len / s / (1 << 20));
	gnic_qp_destroy(a);
	gnic_qp_destroy(b);
	gnic_mr_dereg(smr);
	gnic_mr_dereg(dmr);
	gnic_ctx_destroy(ctx);
	free(src);
	free(dst);
	return 0;
}
