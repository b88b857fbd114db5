/* SPDX-License-Identifier: MIT */
/*
 * The device view of a QP: struct gnic_dev_qp, and where it and everything
 * it points to live.
 *
 * Without a GPU the struct and its arrays are host memory and every pointer
 * is a host pointer (device code runs on CPU threads).
 *
 * With a GPU the queues stay where the provider put them (host memory), and
 * are mapped into the GPU with cuMemHostRegister; the struct holds their
 * device addresses. The doorbell register page is mapped the same way (as
 * I/O memory on real hardware); when that fails, AUTO falls back to the
 * CPU proxy (proxy.c). The tracking arrays (sq_pub, res_owned, wqe_nbb)
 * and the struct itself live in GPU memory.
 *
 * A GNIC_DB_PROXY QP also has the proxy's block (host memory, mapped like
 * the queues): device code finds its ring there, its result slots
 * (scratch) and its error record (err); the proxy thread posts through a
 * second, host-only view of the same QP (gnic_qp_dev_host_view).
 */
#include <stdlib.h>
#include <string.h>

#include "gnic_int.h"

#define COUNTERS_OFF offsetof(struct gnic_dev_qp, sq_reserved)

/* sq_pub[cnt], res_owned[2 * cnt], then wqe_nbb[cnt]: see struct gnic_dev_qp */
size_t gnic_qp_track_len(const struct gnic_qp *qp)
{
	return (size_t)qp->dv.sq.wqe_cnt * (sizeof(uint64_t) + 2 * sizeof(uint32_t) + 1);
}

#define track_len gnic_qp_track_len

/* Where the device finds each piece (host or device addresses). */
struct dev_ptrs {
	uint64_t sq_buf, rq_buf, dbrec, db_reg;
	uint64_t scq_buf, scq_dbrec, rcq_buf, rcq_dbrec;
	uint64_t track, scratch, err, cpu_db;
	uint64_t px; /* GNIC_DB_PROXY: the proxy's block, else 0 */
};

static void *ptr(uint64_t p)
{
	return (void *)(uintptr_t)p;
}

static void fill(struct gnic_qp *qp, struct gnic_dev_qp *d, const struct dev_ptrs *p)
{
	memset(d, 0, sizeof(*d));
	d->magic = GNIC_DEV_QP_MAGIC;
	d->qpn = qp->qpn;
	d->sq_buf = ptr(p->sq_buf);
	d->sq_wqe_cnt = qp->dv.sq.wqe_cnt;
	d->db_mode = qp->attr.db_mode;
	d->dbrec = ptr(p->dbrec);
	d->db_reg = ptr(p->db_reg);
	d->bf_size = qp->dv.bf.size;
	d->share = qp->attr.share;
	d->rq_buf = qp->dv.rq.wqe_cnt ? ptr(p->rq_buf) : NULL;
	d->rq_wqe_cnt = qp->dv.rq.wqe_cnt;
	d->rq_stride = qp->dv.rq.stride;
	d->scq = (struct gnic_dev_cq){ptr(p->scq_buf), ptr(p->scq_dbrec), qp->dv_scq.cqe_cnt,
	                              qp->dv_scq.cqn};
	d->rcq = (struct gnic_dev_cq){ptr(p->rcq_buf), ptr(p->rcq_dbrec), qp->dv_rcq.cqe_cnt,
	                              qp->dv_rcq.cqn};
	d->cqe_every = qp->attr.cqe_every;
	d->db_batch = qp->attr.db_batch;
	d->max_inline = qp->attr.max_inline;
	d->timeout_ns = qp->attr.timeout_ns;
	d->sq_pub = ptr(p->track);
	d->res_owned = (uint32_t *)(d->sq_pub + qp->dv.sq.wqe_cnt);
	d->wqe_nbb = (uint8_t *)(d->res_owned + 2 * (size_t)qp->dv.sq.wqe_cnt);
	d->scratch = ptr(p->scratch);
	d->scratch_iova = (uintptr_t)qp->scratch; /* as registered */
	d->scratch_lkey = qp->scratch_mr->lkey;
	d->atomic_be = qp->ctx->atomic_be;
	d->cpu_db = ptr(p->cpu_db);
	d->err = ptr(p->err);
	if (p->px) { /* results, error record and ring in the proxy's block */
		d->px = ptr(p->px);
		d->px_ring = ptr(p->px + gnic_proxy_ring_off(d->sq_wqe_cnt));
		d->scratch = ptr(p->px + gnic_proxy_res_off());
		d->err = ptr(p->px + offsetof(struct gnic_px_block, dev_err));
	}
}

/* GNIC_DB_MAP=off: as if the system could not map the register. */
static gnic_status_t db_map_allowed(void)
{
	if (!gnic_config()->db_map)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED, "GNIC_DB_MAP=off");
	return GNIC_OK;
}

/* AUTO without a register device code can store to: the proxy, said once
 * per context at the default log level, then at info. */
static void fall_back_to_proxy(struct gnic_qp *qp, const char *why)
{
	int level = qp->ctx->px_noted ? GNIC_LOG_INFO : GNIC_LOG_NOTE;

	qp->ctx->px_noted = true;
	gnic_log(level,
	         "QP %#x: the doorbell register is not mappable for device code (%s): "
	         "CPU proxy (GNIC_DB_PROXY)",
	         qp->qpn, why);
	qp->attr.db_mode = GNIC_DB_PROXY;
}

/* BlueFlame needs a register with room for a WQE. */
static gnic_status_t check_bf(struct gnic_qp *qp)
{
	if (qp->attr.db_mode == GNIC_DB_BF && !qp->dv.bf.size)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED, "qp: db_mode BF, but %s has no BlueFlame",
		                  qp->ctx->device);
	return GNIC_OK;
}

/* ---- host placement ------------------------------------------------------ */

static gnic_status_t place_host(struct gnic_qp *qp)
{
	struct dev_ptrs p = {
	    .sq_buf = (uintptr_t)qp->dv.sq.buf,
	    .rq_buf = (uintptr_t)qp->dv.rq.buf,
	    .dbrec = (uintptr_t)qp->dv.dbrec,
	    .db_reg = (uintptr_t)qp->dv.bf.reg,
	    .scq_buf = (uintptr_t)qp->dv_scq.buf,
	    .scq_dbrec = (uintptr_t)qp->dv_scq.dbrec,
	    .rcq_buf = (uintptr_t)qp->dv_rcq.buf,
	    .rcq_dbrec = (uintptr_t)qp->dv_rcq.dbrec,
	    .scratch = (uintptr_t)qp->scratch,
	    .err = (uintptr_t)qp->err,
	    .cpu_db = (uintptr_t)qp->cpu_db,
	};

	gnic_status_t st;

	/* CPU threads can store to the register themselves, unless told not to */
	st = db_map_allowed();
	if (st && qp->attr.db_mode == GNIC_DB_AUTO)
		fall_back_to_proxy(qp, gnic_last_error());
	else if (st && (qp->attr.db_mode == GNIC_DB_SM || qp->attr.db_mode == GNIC_DB_BF))
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "qp: db_mode %s needs the doorbell register: GNIC_DB_MAP=off",
		                  qp->attr.db_mode == GNIC_DB_BF ? "BF" : "SM");
	if (qp->attr.db_mode == GNIC_DB_AUTO)
		qp->attr.db_mode = GNIC_DB_SM;
	if (qp->attr.db_mode == GNIC_DB_PROXY) {
		st = gnic_proxy_create(qp);
		if (st)
			return st;
		p.px = (uintptr_t)gnic_proxy_block(qp, NULL);
	}
	if (posix_memalign((void **)&qp->track, 64, track_len(qp)))
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	memset(qp->track, 0, track_len(qp));
	p.track = (uintptr_t)qp->track;
	fill(qp, qp->img, &p);
	return GNIC_OK;
}

void gnic_qp_dev_host_view(struct gnic_qp *qp, struct gnic_dev_qp *d, uint8_t *track)
{
	struct dev_ptrs p = {
	    .sq_buf = (uintptr_t)qp->dv.sq.buf,
	    .rq_buf = (uintptr_t)qp->dv.rq.buf,
	    .dbrec = (uintptr_t)qp->dv.dbrec,
	    .db_reg = (uintptr_t)qp->dv.bf.reg,
	    .scq_buf = (uintptr_t)qp->dv_scq.buf,
	    .scq_dbrec = (uintptr_t)qp->dv_scq.dbrec,
	    .rcq_buf = (uintptr_t)qp->dv_rcq.buf,
	    .rcq_dbrec = (uintptr_t)qp->dv_rcq.dbrec,
	    .track = (uintptr_t)track,
	    .scratch = (uintptr_t)qp->scratch,
	    .err = (uintptr_t)qp->err,
	    .cpu_db = (uintptr_t)qp->cpu_db,
	};

	fill(qp, d, &p);
	d->db_mode = GNIC_DB_SM;
	d->share = GNIC_SHARE_EXCLUSIVE;
	d->db_batch = UINT32_MAX; /* the host thread rings once per batch (gnic_dev_flush) */
}

/* ---- GPU placement ------------------------------------------------------- */

static gnic_status_t map(struct gnic_qp *qp, void *addr, size_t len, unsigned flags)
{
	gnic_status_t st;

	if (qp->nmaps == GNIC_QP_MAX_MAPS)
		return gnic_error(GNIC_ERR_NOMEM, "qp: too many host mappings");
	st = gnic_hostmap_add(addr, len, flags);
	if (st)
		return st;
	qp->maps[qp->nmaps].addr = addr;
	qp->maps[qp->nmaps++].len = len;
	return GNIC_OK;
}

static void unmap_all(struct gnic_qp *qp)
{
	while (qp->nmaps > 0) {
		qp->nmaps--;
		gnic_hostmap_del(qp->maps[qp->nmaps].addr, qp->maps[qp->nmaps].len);
	}
}

/* The SQ and RQ share one provider buffer (RQ first on mlx5); map it whole
 * so the page they may share is registered once. A RAW_PACKET QP's SQ is a
 * buffer of its own (rdma-core's sq_buf): then each is mapped alone. */
static gnic_status_t map_wq(struct gnic_qp *qp)
{
	const uintptr_t page = GNIC_PAGE;
	uint8_t *lo = qp->dv.sq.buf;
	uint8_t *hi = lo + (size_t)qp->dv.sq.wqe_cnt * qp->dv.sq.stride;
	uint8_t *rq = qp->dv.rq.buf, *rq_end;
	gnic_status_t st;

	if (qp->dv.rq.wqe_cnt) {
		rq_end = rq + (size_t)qp->dv.rq.wqe_cnt * qp->dv.rq.stride;
		/* apart by more than a page: two buffers */
		if ((uintptr_t)rq_end + page < (uintptr_t)lo ||
		    (uintptr_t)hi + page < (uintptr_t)rq) {
			st = map(qp, rq, (size_t)(rq_end - rq), 0);
			return st ? st : map(qp, lo, (size_t)(hi - lo), 0);
		}
		lo = rq < lo ? rq : lo;
		hi = rq_end > hi ? rq_end : hi;
	}
	return map(qp, lo, (size_t)(hi - lo), 0);
}

static gnic_status_t map_queues(struct gnic_qp *qp)
{
	const size_t cqe = sizeof(struct gnic_mlx5_cqe64), dbrec = 2 * sizeof(uint32_t);
	gnic_status_t st;

	if (qp->queue == GNIC_QUEUE_GPU) /* in GPU memory already: only the host block */
		return map(qp, qp->hblk, qp->hblk_len, 0);
	st = map_wq(qp);

	if (!st)
		st = map(qp, qp->dv_scq.buf, qp->dv_scq.cqe_cnt * cqe, 0);
	if (!st)
		st = map(qp, qp->dv_rcq.buf, qp->dv_rcq.cqe_cnt * cqe, 0);
	if (!st)
		st = map(qp, qp->dv.dbrec, dbrec, 0);
	if (!st)
		st = map(qp, qp->dv_scq.dbrec, dbrec, 0);
	if (!st)
		st = map(qp, qp->dv_rcq.dbrec, dbrec, 0);
	if (!st)
		st = map(qp, qp->hblk, qp->hblk_len, 0);
	return st;
}

/* Real UAR pages are device MMIO: I/O memory first. gnic-emu's register is
 * an ordinary page, which CUDA refuses to take as I/O memory. */
/* A real NIC's register page is MMIO: registered as I/O memory first. If
 * that fails and the retry as ordinary memory fails too, the error names
 * both CUDA errors (the first one is usually the telling one). */
static gnic_status_t map_db_reg(struct gnic_qp *qp)
{
	size_t len = qp->dv.bf.size ? 2 * qp->dv.bf.size : sizeof(uint64_t);
	char iomem_err[256];
	gnic_status_t st = db_map_allowed();

	if (st)
		return st;
	if (qp->ctx->v->provider != GNIC_PROVIDER_VERBS)
		return map(qp, qp->dv.bf.reg, len, 0);
	st = map(qp, qp->dv.bf.reg, len, GNIC_CUDA_REG_IOMEM);
	if (!st)
		return GNIC_OK;
	snprintf(iomem_err, sizeof(iomem_err), "%s", gnic_last_error());
	gnic_info("QP %#x: doorbell page as I/O memory: %s; retrying as ordinary memory", qp->qpn,
	          iomem_err);
	st = map(qp, qp->dv.bf.reg, len, 0);
	if (!st)
		return GNIC_OK;
	return gnic_error(st, "doorbell page as I/O memory: %s; as ordinary memory: %s", iomem_err,
	                  gnic_last_error());
}

/* Resolve db_mode: SM/BF need the register in the GPU; AUTO settles for
 * the proxy. */
static gnic_status_t place_db_reg(struct gnic_qp *qp, uint64_t *db_reg)
{
	gnic_status_t st;

	*db_reg = 0;
	if (qp->attr.db_mode == GNIC_DB_CPU || qp->attr.db_mode == GNIC_DB_PROXY)
		return GNIC_OK;
	st = map_db_reg(qp);
	if (!st)
		st = gnic_cuda_host_dev_ptr(qp->dv.bf.reg, db_reg);
	if (!st) {
		if (qp->attr.db_mode == GNIC_DB_AUTO)
			qp->attr.db_mode = GNIC_DB_SM;
		return GNIC_OK;
	}
	if (qp->attr.db_mode != GNIC_DB_AUTO)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "qp: db_mode %s needs the doorbell register in the GPU: %s",
		                  qp->attr.db_mode == GNIC_DB_BF ? "BF" : "SM", gnic_last_error());
	if (qp->queue == GNIC_QUEUE_GPU) /* the proxy writes WQEs from the host */
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "qp: GPU queues need the doorbell register in the GPU: %s",
		                  gnic_last_error());
	fall_back_to_proxy(qp, gnic_last_error());
	return GNIC_OK;
}

/* The proxy's block, mapped like the queues. */
static gnic_status_t place_proxy(struct gnic_qp *qp, uint64_t *px)
{
	gnic_status_t st;
	size_t len;
	void *blk;

	*px = 0;
	if (qp->attr.db_mode != GNIC_DB_PROXY)
		return GNIC_OK;
	st = gnic_proxy_create(qp);
	if (st)
		return st;
	blk = gnic_proxy_block(qp, &len);
	st = map(qp, blk, len, 0);
	return st ? st : gnic_cuda_host_dev_ptr(blk, px);
}

static gnic_status_t dev_ptr(void *host, uint64_t *out)
{
	*out = 0;
	return host ? gnic_cuda_host_dev_ptr(host, out) : GNIC_OK;
}

/* GPU queues: their addresses are device addresses already. */
static void gpu_queues(const struct gnic_qp *qp, struct dev_ptrs *p)
{
	p->sq_buf = (uintptr_t)qp->dv.sq.buf;
	p->rq_buf = (uintptr_t)qp->dv.rq.buf;
	p->dbrec = (uintptr_t)qp->dv.dbrec;
	p->scq_buf = (uintptr_t)qp->dv_scq.buf;
	p->scq_dbrec = (uintptr_t)qp->dv_scq.dbrec;
	p->rcq_buf = (uintptr_t)qp->dv_rcq.buf;
	p->rcq_dbrec = (uintptr_t)qp->dv_rcq.dbrec;
}

static gnic_status_t translate(struct gnic_qp *qp, struct dev_ptrs *p)
{
	gnic_status_t st;

	if (qp->queue == GNIC_QUEUE_GPU) {
		gpu_queues(qp, p);
		goto host_block;
	}
	st = dev_ptr(qp->dv.sq.buf, &p->sq_buf);

	if (!st && qp->dv.rq.wqe_cnt)
		st = dev_ptr(qp->dv.rq.buf, &p->rq_buf);
	if (!st)
		st = dev_ptr(qp->dv.dbrec, &p->dbrec);
	if (!st)
		st = dev_ptr(qp->dv_scq.buf, &p->scq_buf);
	if (!st)
		st = dev_ptr(qp->dv_scq.dbrec, &p->scq_dbrec);
	if (!st)
		st = dev_ptr(qp->dv_rcq.buf, &p->rcq_buf);
	if (!st)
		st = dev_ptr(qp->dv_rcq.dbrec, &p->rcq_dbrec);
	if (st)
		return st;
host_block:
	st = dev_ptr(qp->scratch, &p->scratch);
	if (!st)
		st = dev_ptr(qp->err, &p->err);
	if (!st)
		st = dev_ptr(qp->cpu_db, &p->cpu_db);
	return st;
}

/* A zero-filled device array of len bytes. */
static gnic_status_t gpu_zeroed(size_t len, uint64_t *dptr)
{
	void *zero = calloc(1, len);
	gnic_status_t st;

	if (!zero)
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	st = gnic_cuda_alloc(len, dptr);
	if (!st)
		st = gnic_cuda_htod(*dptr, zero, len);
	free(zero);
	return st;
}

static gnic_status_t place_gpu_locked(struct gnic_qp *qp)
{
	struct dev_ptrs p = {0};
	gnic_status_t st = map_queues(qp);

	if (!st)
		st = place_db_reg(qp, &p.db_reg);
	if (!st)
		st = place_proxy(qp, &p.px);
	if (!st)
		st = translate(qp, &p);
	if (!st)
		st = gpu_zeroed(track_len(qp), &qp->track_gpu);
	if (!st)
		st = gnic_cuda_alloc(sizeof(struct gnic_dev_qp), &qp->dev_gpu);
	if (st)
		return st;
	p.track = qp->track_gpu;
	fill(qp, qp->img, &p);
	return gnic_cuda_htod(qp->dev_gpu, qp->img, sizeof(*qp->img));
}

static gnic_status_t place_gpu(struct gnic_qp *qp)
{
	gnic_status_t st;
	void *prev;

	st = gnic_cuda_enter(&qp->ctx->gpu, &prev);
	if (st)
		return st;
	st = place_gpu_locked(qp);
	gnic_cuda_leave(prev);
	return st;
}

gnic_status_t gnic_qp_dev_create(struct gnic_qp *qp)
{
	gnic_status_t st;

	st = check_bf(qp); /* db_mode: GNIC_DB_MODE applied (gnic_qp_create) */
	if (st)
		return st;
	if (posix_memalign((void **)&qp->img, 64, sizeof(*qp->img)))
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	memset(qp->img, 0, sizeof(*qp->img));
	return gnic_ctx_has_gpu(qp->ctx) ? place_gpu(qp) : place_host(qp);
}

void gnic_qp_dev_destroy(struct gnic_qp *qp)
{
	void *prev;

	if (gnic_ctx_has_gpu(qp->ctx) && !gnic_cuda_enter(&qp->ctx->gpu, &prev)) {
		gnic_cuda_free(qp->dev_gpu);
		gnic_cuda_free(qp->track_gpu);
		unmap_all(qp);
		gnic_cuda_leave(prev);
	}
	gnic_proxy_destroy(qp); /* after its block is unmapped */
	qp->dev_gpu = qp->track_gpu = 0;
	free(qp->img);
	free(qp->track);
	qp->img = NULL;
	qp->track = NULL;
}

/* ---- reset ---------------------------------------------------------------- */

/* Consume every CQE the NIC has written: after RESET it writes no more for
 * this QP, and the CQ is ours alone. Returns the new consumer index. */
static uint64_t drain_cq(const struct mlx5dv_cq *cq, uint64_t ci)
{
	const volatile struct gnic_mlx5_cqe64 *buf = cq->buf;
	uint32_t n = 0;

	while (n++ < cq->cqe_cnt && gnic_mlx5_cqe_sw_owned(buf[ci & (cq->cqe_cnt - 1)].op_own,
	                                                   (uint32_t)ci, cq->cqe_cnt))
		ci++;
	__atomic_store_n(&cq->dbrec[0], gnic_be32((uint32_t)ci & 0xffffff), __ATOMIC_RELEASE);
	return ci;
}

/* drain_cq() on a CQ in GPU memory: through a host copy of the ring, the
 * consumer index written back to its record. */
static gnic_status_t drain_gpu_cq(const struct mlx5dv_cq *cq, uint64_t *ci)
{
	size_t len = (size_t)cq->cqe_cnt * sizeof(struct gnic_mlx5_cqe64);
	struct mlx5dv_cq copy = *cq;
	uint32_t dbrec[2] = {0};
	gnic_status_t st;

	copy.buf = malloc(len);
	if (!copy.buf)
		return gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
	copy.dbrec = dbrec;
	st = gnic_cuda_dtoh(copy.buf, (uintptr_t)cq->buf, len);
	if (!st) {
		*ci = drain_cq(&copy, *ci);
		st = gnic_cuda_htod((uintptr_t)cq->dbrec, dbrec, sizeof(dbrec[0]));
	}
	free(copy.buf);
	return st;
}

static gnic_status_t drain_cqs(struct gnic_qp *qp, uint64_t *scq_ci, uint64_t *rcq_ci)
{
	gnic_status_t st;

	if (qp->queue != GNIC_QUEUE_GPU) {
		*scq_ci = drain_cq(&qp->dv_scq, *scq_ci);
		*rcq_ci = drain_cq(&qp->dv_rcq, *rcq_ci);
		return GNIC_OK;
	}
	st = drain_gpu_cq(&qp->dv_scq, scq_ci);
	return st ? st : drain_gpu_cq(&qp->dv_rcq, rcq_ci);
}

static gnic_status_t reset_gpu_locked(struct gnic_qp *qp, uint64_t *scq_ci, uint64_t *rcq_ci)
{
	struct gnic_dev_qp *d = qp->img;
	gnic_status_t st;

	st = gnic_cuda_dtoh(d, qp->dev_gpu, sizeof(*d));
	if (st)
		return st;
	*scq_ci = qp->px ? gnic_proxy_scq_ci(qp) : d->scq_ci;
	*rcq_ci = d->rcq_ci;
	st = drain_cqs(qp, scq_ci, rcq_ci);
	if (st)
		return st;
	memset((char *)d + COUNTERS_OFF, 0, sizeof(*d) - COUNTERS_OFF);
	d->scq_ci = *scq_ci;
	d->rcq_ci = *rcq_ci;
	return gnic_cuda_htod(qp->dev_gpu, d, sizeof(*d));
}

static gnic_status_t reset_gpu(struct gnic_qp *qp)
{
	uint64_t scq_ci, rcq_ci;
	gnic_status_t st;
	void *prev;

	st = gnic_cuda_enter(&qp->ctx->gpu, &prev);
	if (st)
		return st;
	st = reset_gpu_locked(qp, &scq_ci, &rcq_ci);
	if (!st) {
		uint8_t *zero = calloc(1, track_len(qp));

		st = zero ? gnic_cuda_htod(qp->track_gpu, zero, track_len(qp))
		          : gnic_error(GNIC_ERR_NOMEM, "qp: out of memory");
		free(zero);
	}
	gnic_cuda_leave(prev);
	return st;
}

static void reset_host(struct gnic_qp *qp)
{
	struct gnic_dev_qp *d = qp->img;
	uint64_t scq_ci = drain_cq(&qp->dv_scq, qp->px ? gnic_proxy_scq_ci(qp) : d->scq_ci);
	uint64_t rcq_ci = drain_cq(&qp->dv_rcq, d->rcq_ci);

	memset((char *)d + COUNTERS_OFF, 0, sizeof(*d) - COUNTERS_OFF);
	d->scq_ci = scq_ci;
	d->rcq_ci = rcq_ci;
	memset(qp->track, 0, track_len(qp));
}

/* After the QP went to RESET: the device starts again at index 0 of the SQ
 * and RQ; the CQs keep their (drained) consumer indexes, since a CQ does not
 * restart with its QP. Nothing may use the QP meanwhile. */
gnic_status_t gnic_qp_dev_reset(struct gnic_qp *qp)
{
	gnic_status_t st = GNIC_OK;

	if (qp->px) /* the proxy thread keeps off the QP meanwhile */
		gnic_proxy_lock(qp);
	if (gnic_ctx_has_gpu(qp->ctx))
		st = reset_gpu(qp);
	else
		reset_host(qp);
	if (!st) {
		memset(qp->err, 0, sizeof(*qp->err));
		gnic_progress_rewind(qp);
		if (qp->px) /* img holds the drained consumer index (reset_*) */
			gnic_proxy_rewind(qp, qp->img->scq_ci);
	}
	if (qp->px)
		gnic_proxy_unlock(qp);
	return st;
}
