/* SPDX-License-Identifier: MIT */
/*
 * A queue pair as the device uses it: an RC QP with its own send and receive
 * CQs, made by the provider (qp_verbs.c) or through DEVX (qp_devx.c) as the
 * queue placement says, plus a small host block (atomic results, the error
 * record, the CPU doorbell word). qp_dev.c builds the struct gnic_dev_qp
 * that describes all of it to device code.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "gnic_int.h"

/* The host block, on pages of its own so a GPU context can map it alone:
 * scratch[2 * sq_wqe_cnt + 1] (result slots, then the discard word), then the
 * error record and the CPU doorbell word, each on its own cache line. */
static gnic_status_t alloc_hblk(struct gnic_qp *qp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t scratch_len =
	    ((2 * (size_t)qp->dv.sq.wqe_cnt + 1) * sizeof(uint64_t) + 63) & ~(size_t)63;
	uint8_t *p;

	qp->hblk_len = (scratch_len + 2 * 64 + page - 1) & ~(page - 1);
	if (posix_memalign(&qp->hblk, page, qp->hblk_len))
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	memset(qp->hblk, 0, qp->hblk_len);
	p = qp->hblk;
	qp->scratch = (uint64_t *)p;
	qp->err = (struct gnic_dev_err *)(p + scratch_len);
	qp->cpu_db = (uint64_t *)(p + scratch_len + 64);
	/* atomic results are written by the NIC: local write */
	qp->scratch_mr = gnic_verbs_reg_mr(qp->ctx->v, qp->ctx->pd, qp->scratch, scratch_len,
	                                   IBV_ACCESS_LOCAL_WRITE);
	if (!qp->scratch_mr)
		return gnic_error(GNIC_ERR_SYSTEM, "qp: reg_mr of the scratch area: %s",
		                  strerror(errno));
	return GNIC_OK;
}

static void free_hblk(struct gnic_qp *qp)
{
	if (qp->scratch_mr)
		qp->ctx->v->dereg_mr(qp->scratch_mr);
	free(qp->hblk);
}

static uint32_t random_psn(void)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)gnic_time_ns() * 2654435761u; /* no entropy: still varies */
	return r & 0xffffff;
}

static const char *const queue_names[] = {"AUTO", "HOST", "GPU", "HOST_DEVX"};

/* Why explicit DEVX placements cannot be had on this context, or GNIC_OK. */
static gnic_status_t devx_usable(const struct gnic_qp *qp, enum gnic_queue q)
{
	const struct gnic_ctx *ctx = qp->ctx;
	enum gnic_db_mode db = qp->attr.db_mode;

	if (!ctx->devx)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED, "qp: queue %s needs DEVX: %s",
		                  queue_names[q], ctx->devx_why);
	if (q != GNIC_QUEUE_GPU)
		return GNIC_OK;
	if (!gnic_ctx_has_gpu(ctx))
		return gnic_error(GNIC_ERR_NOT_SUPPORTED, "qp: queue GPU needs a GPU context");
	/* the progress and proxy threads write queues and records from the host */
	if (db == GNIC_DB_CPU || db == GNIC_DB_PROXY)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "qp: queue GPU with db_mode %s: the host writes that mode's "
		                  "queues; use SM, BF or AUTO",
		                  db == GNIC_DB_CPU ? "CPU" : "PROXY");
	if (!gnic_config()->db_map)
		return gnic_error(
		    GNIC_ERR_NOT_SUPPORTED,
		    "qp: queue GPU needs the doorbell register in the GPU: GNIC_DB_MAP=off");
	return GNIC_OK;
}

static gnic_status_t create_as(struct gnic_qp *qp, enum gnic_queue q)
{
	gnic_status_t st;

	qp->queue = q;
	qp->ops = q == GNIC_QUEUE_HOST ? &gnic_qp_verbs_ops : &gnic_qp_devx_ops;
	st = qp->ops->create(qp);
	if (st) {
		qp->ops->destroy(qp);
		qp->ops = NULL;
	}
	return st;
}

/* AUTO did not get GPU queues: said once per context at the default
 * level, then at info. */
static void fall_back_to_host(struct gnic_qp *qp, const char *why)
{
	int level = qp->ctx->queue_noted ? GNIC_LOG_INFO : GNIC_LOG_NOTE;

	qp->ctx->queue_noted = true;
	gnic_log(level, "qp: queues in host memory (GNIC_QUEUE_HOST), not in the GPU: %s", why);
}

/* CPU and PROXY QPs have host threads write their queues; AUTO becomes
 * PROXY where the register may not be mapped. */
static bool host_writes_queues(enum gnic_db_mode db)
{
	return db == GNIC_DB_CPU || db == GNIC_DB_PROXY ||
	       (db == GNIC_DB_AUTO && !gnic_config()->db_map);
}

static const char *db_name(enum gnic_db_mode db)
{
	return db == GNIC_DB_CPU ? "CPU" : db == GNIC_DB_PROXY ? "PROXY" : "AUTO (GNIC_DB_MAP=off)";
}

/* AUTO: GPU queues in a GPU context unless they failed here before. */
static gnic_status_t create_auto(struct gnic_qp *qp)
{
	struct gnic_ctx *ctx = qp->ctx;
	gnic_status_t st;

	if (!gnic_ctx_has_gpu(ctx) || host_writes_queues(qp->attr.db_mode))
		return create_as(qp, GNIC_QUEUE_HOST);
	/* gnic-emu reaches queues in GPU memory through a CUDA copy per
	 * doorbell and per CQE: there host queues are the fast default, and
	 * GPU queues are asked for (GNIC_QUEUE=gpu, attr.queue) */
	if (ctx->v->provider == GNIC_PROVIDER_EMU) {
		gnic_info("qp: host queues (gnic-emu: GPU queues only when asked for)");
		return create_as(qp, GNIC_QUEUE_HOST);
	}
	if (ctx->queue_gpu_why[0]) {
		gnic_info("qp: host queues: %s", ctx->queue_gpu_why);
		return create_as(qp, GNIC_QUEUE_HOST);
	}
	st = devx_usable(qp, GNIC_QUEUE_GPU);
	if (!st)
		st = create_as(qp, GNIC_QUEUE_GPU);
	if (!st)
		return st;
	snprintf(ctx->queue_gpu_why, sizeof(ctx->queue_gpu_why), "%s", gnic_last_error());
	fall_back_to_host(qp, ctx->queue_gpu_why);
	return create_as(qp, GNIC_QUEUE_HOST);
}

/* attr.queue, where AUTO defers to GNIC_QUEUE. The knob's GPU leaves QPs
 * whose doorbell mode has the host write their queues (CPU, PROXY) on the
 * host, said at info; an attribute's GPU refuses them. */
static gnic_status_t create_queues(struct gnic_qp *qp)
{
	enum gnic_queue q = (enum gnic_queue)qp->attr.queue;
	gnic_status_t st;

	if (qp->raw_eth) { /* DEVX here makes RC QPs only: Ethernet queues are verbs ones */
		if (q != GNIC_QUEUE_AUTO && q != GNIC_QUEUE_HOST)
			return gnic_error(
			    GNIC_ERR_NOT_SUPPORTED,
			    "eth: queue placement %s: Ethernet queues are RAW_PACKET QPs "
			    "in host memory",
			    queue_names[q]);
		return create_as(qp, GNIC_QUEUE_HOST);
	}
	if (q == GNIC_QUEUE_AUTO) {
		q = (enum gnic_queue)gnic_config()->queue;
		if (q == GNIC_QUEUE_GPU && host_writes_queues(qp->attr.db_mode)) {
			gnic_info("qp: GNIC_QUEUE=gpu, but db_mode %s writes the queues from the "
			          "host: host queues",
			          db_name(qp->attr.db_mode));
			q = GNIC_QUEUE_HOST;
		}
	}
	if (q == GNIC_QUEUE_AUTO)
		return create_auto(qp);
	if (q == GNIC_QUEUE_HOST)
		return create_as(qp, GNIC_QUEUE_HOST);
	st = devx_usable(qp, q);
	return st ? st : create_as(qp, q);
}

static gnic_status_t qp_build(struct gnic_qp *qp)
{
	gnic_status_t st;

	st = create_queues(qp); /* db_mode: GNIC_DB_MODE applied (gnic_qp_create) */
	if (!st)
		st = gnic_qp_attr_check_geometry(&qp->attr, qp->dv.sq.wqe_cnt);
	if (!st)
		st = alloc_hblk(qp);
	if (!st)
		st = gnic_qp_dev_create(qp);
	return st;
}

static void qp_free(struct gnic_qp *qp)
{
	gnic_qp_dev_destroy(qp);
	free_hblk(qp);
	if (qp->ops)
		qp->ops->destroy(qp);
	gnic_qp_bf_close(qp);
	free(qp);
}

static gnic_status_t create_any(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr, bool raw,
                                struct gnic_qp **qp_p)
{
	struct gnic_qp_attr defaults;
	struct gnic_qp *qp;
	gnic_status_t st;

	if (!ctx || !qp_p)
		return gnic_error(GNIC_ERR_INVALID, "qp_create: NULL argument");
	if (!attr) {
		gnic_qp_attr_init(&defaults);
		attr = &defaults;
	}
	st = gnic_qp_attr_check(attr, ctx->max_qp_wr);
	if (st)
		return st;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return gnic_error(GNIC_ERR_NOMEM, "qp_create: out of memory");
	qp->ctx = ctx;
	qp->attr = *attr;
	if (qp->attr.db_mode == GNIC_DB_AUTO) { /* GNIC_DB_MODE, if set */
		qp->attr.db_mode = (enum gnic_db_mode)gnic_config()->db_mode;
		qp->db_from_env = qp->attr.db_mode != GNIC_DB_AUTO;
	}
	qp->raw_eth = raw;
	st = qp_build(qp);
	if (!st && raw && qp->attr.db_mode == GNIC_DB_PROXY) /* placement fell back to it */
		st = gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                "eth: the doorbell register cannot be mapped for device code "
		                "(%s), and Ethernet queues have no CPU proxy",
		                gnic_last_error());
	if (st) {
		qp_free(qp);
		return st;
	}
	qp->psn = random_psn();
	if (qp->attr.db_mode == GNIC_DB_CPU)
		st = gnic_progress_add(qp);
	else if (qp->attr.db_mode == GNIC_DB_PROXY)
		st = gnic_proxy_add(qp);
	if (st) {
		qp_free(qp);
		return st;
	}
	ctx->nqp++;
	*qp_p = qp;
	return GNIC_OK;
}

GNIC_API gnic_status_t gnic_qp_create(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                      struct gnic_qp **qp_p)
{
	return create_any(ctx, attr, false, qp_p);
}

gnic_status_t gnic_qp_create_raw(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                 struct gnic_qp **qp_p)
{
	if (attr && attr->db_mode == GNIC_DB_PROXY)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "eth: db_mode PROXY: Ethernet queues "
		                  "have no CPU proxy (AUTO, SM, BF or CPU)");
	return create_any(ctx, attr, true, qp_p);
}

GNIC_API void gnic_qp_destroy(struct gnic_qp *qp)
{
	if (!qp)
		return;
	gnic_progress_remove(qp);
	gnic_proxy_remove(qp); /* the thread lets go of it first */
	qp->ctx->nqp--;
	qp_free(qp);
}

GNIC_API int gnic_qp_queue(const struct gnic_qp *qp)
{
	return qp ? (int)qp->queue : -1;
}

GNIC_API struct gnic_dev_qp *gnic_qp_dev(struct gnic_qp *qp)
{
	if (!qp)
		return NULL;
	if (qp->dev_gpu)
		return (struct gnic_dev_qp *)(uintptr_t)qp->dev_gpu;
	return qp->img;
}
