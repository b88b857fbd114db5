/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "dev_common.h"

void pair_connect(struct pair *p)
{
	struct gnic_blob ba, bb;

	CHECK_GNIC(gnic_qp_export(p->qa, &ba));
	CHECK_GNIC(gnic_qp_export(p->qb, &bb));
	CHECK_GNIC(gnic_qp_connect(p->qa, &bb));
	CHECK_GNIC(gnic_qp_connect(p->qb, &ba));
}

static uint8_t *alloc_buf(size_t len)
{
	void *b = NULL;

	CHECK_EQ(posix_memalign(&b, 4096, len), 0);
	memset(b, 0, len);
	return b;
}

void pair_open(struct pair *p, const struct gnic_qp_attr *attr, size_t len)
{
	struct gnic_ctx_attr ca;
	struct gnic_qp_attr qa;
	const char *mode;

	memset(p, 0, sizeof(*p));
	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = GNIC_GPU_NONE;
	CHECK_GNIC(gnic_ctx_create(&ca, &p->ctx));
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
	p->abuf = alloc_buf(len);
	p->bbuf = alloc_buf(len);
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
