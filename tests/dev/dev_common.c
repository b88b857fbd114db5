/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dev_common.h"

struct gnic_ctx *dev_ctx_open(void)
{
	struct gnic_ctx_attr ca;
	struct gnic_ctx *ctx;

	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = GNIC_GPU_NONE;
	CHECK_GNIC(gnic_ctx_create(&ca, &ctx));
	return ctx;
}

uint8_t *dev_buf_new(size_t len)
{
	void *b = NULL;

	CHECK_EQ(posix_memalign(&b, 4096, len), 0);
	memset(b, 0, len);
	return b;
}

void dev_qp_connect(struct gnic_qp *x, struct gnic_qp *y)
{
	struct gnic_blob bx, by;

	CHECK_GNIC(gnic_qp_export(x, &bx));
	CHECK_GNIC(gnic_qp_export(y, &by));
	CHECK_GNIC(gnic_qp_connect(x, &by));
	CHECK_GNIC(gnic_qp_connect(y, &bx));
}

void pair_connect(struct pair *p)
{
	dev_qp_connect(p->qa, p->qb);
}

void pair_open(struct pair *p, const struct gnic_qp_attr *attr, size_t len)
{
	struct gnic_qp_attr qa;
	const char *mode;

	memset(p, 0, sizeof(*p));
	p->ctx = dev_ctx_open();
	if (!attr) {
		gnic_qp_attr_init(&qa);
		attr = &qa;
	}
	CHECK_GNIC(gnic_qp_create(p->ctx, attr, &p->qa));
	CHECK_GNIC(gnic_qp_create(p->ctx, attr, &p->qb));
	pair_connect(p);
	p->a = gnic_qp_dev(p->qa);
	p->b = gnic_qp_dev(p->qb);
	CHECK(p->a && p->b);
	mode = getenv("GNIC_DB_MODE");
	if (attr->db_mode == GNIC_DB_AUTO && mode && !strcmp(mode, "proxy"))
		CHECK_EQ(p->a->db_mode, GNIC_DB_PROXY);
	mode = getenv("GNIC_QUEUE");
	if (attr->queue == GNIC_QUEUE_AUTO && mode && !strcmp(mode, "host_devx"))
		CHECK_EQ(gnic_qp_queue(p->qa), GNIC_QUEUE_HOST_DEVX);
	p->len = len;
	p->abuf = dev_buf_new(len);
	p->bbuf = dev_buf_new(len);
	CHECK_GNIC(gnic_mr_reg(p->ctx, p->abuf, len, GNIC_ACCESS_ALL, &p->amr));
	CHECK_GNIC(gnic_mr_reg(p->ctx, p->bbuf, len, GNIC_ACCESS_ALL, &p->bmr));
	gnic_mr_rmem(p->bmr, &p->brm);
	gnic_mr_rmem(p->amr, &p->arm);
}

void pair_close(struct pair *p)
{
	gnic_mr_dereg(p->amr);
	gnic_mr_dereg(p->bmr);
	gnic_qp_destroy(p->qa);
	gnic_qp_destroy(p->qb);
	gnic_ctx_destroy(p->ctx);
	free(p->abuf);
	free(p->bbuf);
}

uint64_t dev_sq_ready(const struct gnic_dev_qp *qp)
{
	if (qp->db_mode == GNIC_DB_PROXY)
		return gnic_load_acq64(&qp->px->consumed);
	return gnic_load_acq64(&qp->sq_ready);
}

uint64_t dev_sq_done(const struct gnic_dev_qp *qp)
{
	if (qp->db_mode == GNIC_DB_PROXY)
		return gnic_load_acq64(&qp->px->done);
	return gnic_load_acq64(&qp->sq_retired);
}

void dev_join_all(pthread_t *th, int n, unsigned timeout_s)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_s;
	for (int i = 0; i < n; i++) {
		int rc = pthread_timedjoin_np(th[i], NULL, &until);

		if (rc)
			T_FAIL("thread %d of %d not done after %u s (%s): a device call did not "
			       "return within its bound",
			       i, n, timeout_s, strerror(rc));
	}
}

void dev_log_start(struct dev_log *l)
{
	char path[] = "/tmp/gnic-dev-log-XXXXXX";

	l->fd = mkstemp(path);
	l->saved = dup(2);
	CHECK(l->fd >= 0 && l->saved >= 0);
	unlink(path);
	fflush(stderr);
	CHECK(dup2(l->fd, 2) == 2);
}

void dev_log_stop(struct dev_log *l, char *log, size_t size)
{
	ssize_t n;

	fflush(stderr);
	CHECK(dup2(l->saved, 2) == 2);
	close(l->saved);
	n = pread(l->fd, log, size - 1, 0);
	close(l->fd);
	log[n > 0 ? n : 0] = 0;
}

gnic_status_t dev_qp_create_logged(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                   struct gnic_qp **qp, char *log, size_t size)
{
	struct dev_log l;
	gnic_status_t st;

	dev_log_start(&l);
	st = gnic_qp_create(ctx, attr, qp);
	dev_log_stop(&l, log, size);
	return st;
}
