/* SPDX-License-Identifier: MIT */
/*
 * put + signal ping-pong with the gnic device API.
 *
 * Two "ranks" (here two CPU threads of one process, each with its own RC QP,
 * connected to each other) bounce a message: each waits for its signal word
 * to reach the round number, then puts its message into the peer's buffer
 * and adds 1 to the peer's signal word, in one gnic_dev_put_signal().
 * In a CUDA kernel the very same gnic_dev_* calls run on a GPU thread; only
 * the context is created with a GPU (gpu = 0) and the buffers are cudaMalloc'ed.
 *
 *   put_signal_pingpong [rounds]      (runs on gnic-emu; no NIC, no GPU needed)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

#define MSG 64

struct rank {
	struct gnic_qp *qp;
	struct gnic_dev_qp *dev;
	struct gnic_mr *mr;
	uint8_t *buf;          /* [0..8): signal word, [64..128): message */
	struct gnic_rmem peer; /* the other rank's buffer */
	int first;             /* starts the ping-pong */
	int rounds;
	int rc;
};

#define TRY(expr)                                                                                  \
	do {                                                                                       \
		gnic_status_t s_ = (expr);                                                         \
		if (s_) {                                                                          \
			fprintf(stderr, "%s: %s\n", #expr, gnic_last_error());                     \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void *play(void *arg)
{
	struct rank *r = arg;
	const uint64_t *sig = (const uint64_t *)r->buf;
	uint32_t lkey = gnic_mr_lkey(r->mr);

	for (int i = 0; i < r->rounds && !r->rc; i++) {
		/* my turn once the peer has signalled i (+1 if I start second) */
		uint64_t want = (uint64_t)i + (r->first ? 0 : 1);

		r->rc = gnic_dev_wait_signal(sig, GNIC_CMP_GE, want, 5000000000ull);
		if (r->rc)
			break;
		memset(r->buf + 64, (uint8_t)i, MSG);
		r->rc = gnic_dev_put_signal(r->dev, r->buf + 64, lkey, r->peer.addr + 64,
		                            r->peer.rkey, MSG, r->peer.addr, r->peer.rkey, 1, 0);
	}
	if (!r->rc)
		r->rc = gnic_dev_quiet(r->dev);
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10000;
	struct gnic_ctx_attr ca;
	struct gnic_ctx *ctx;
	struct gnic_ctx_info info;
	struct rank r[2];
	struct gnic_blob blob[2];
	pthread_t th[2];
	uint64_t t0;

	gnic_ctx_attr_init(&ca);
	ca.gpu = GNIC_GPU_NONE; /* device code on CPU threads */
	TRY(gnic_ctx_create(&ca, &ctx));
	TRY(gnic_ctx_query(ctx, &info));
	printf("device %s via %s\n", info.device, info.provider_lib);
	for (int i = 0; i < 2; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].buf = aligned_alloc(4096, 4096);
		memset(r[i].buf, 0, 4096);
		TRY(gnic_mr_reg(ctx, r[i].buf, 4096, GNIC_ACCESS_ALL, &r[i].mr));
		TRY(gnic_qp_create(ctx, NULL, &r[i].qp));
		TRY(gnic_qp_export(r[i].qp, &blob[i]));
		r[i].rounds = rounds;
		r[i].first = i == 0;
	}
	for (int i = 0; i < 2; i++) { /* normally exchanged with gnic_boot_allgather() */
		TRY(gnic_qp_connect(r[i].qp, &blob[1 - i]));
		gnic_mr_rmem(r[1 - i].mr, &r[i].peer);
		r[i].dev = gnic_qp_dev(r[i].qp);
	}
	t0 = gnic_now_ns();
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, play, &r[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (r[0].rc || r[1].rc) {
		struct gnic_qp_error e;

		gnic_qp_error(r[r[0].rc ? 0 : 1].qp, &e);
		fprintf(stderr, "failed: %d / %d: %s\n", r[0].rc, r[1].rc, e.text);
		return 1;
	}
	printf("%d round trips, %.2f us each (half: %.2f us)\n", rounds,
	       (double)(gnic_now_ns() - t0) / 1e3 / rounds,
	       (double)(gnic_now_ns() - t0) / 2e3 / rounds);
	for (int i = 0; i < 2; i++) {
		gnic_qp_destroy(r[i].qp);
		gnic_mr_dereg(r[i].mr);
		free(r[i].buf);
	}
	gnic_ctx_destroy(ctx);
	return 0;
}
