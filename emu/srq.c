/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues: the verbs side, as rdma-core 44's mlx5 provider
 * (providers/mlx5/srq.c, verbs.c mlx5_create_srq) and the mlx5 kernel
 * driver (create/modify/query) do it.
 *
 * Sizing: a WQE is the 16-byte next segment plus max_sge data segments, at
 * least 32 bytes, rounded up to a power of two (max_sge is then what fits);
 * mlx5 allocates 2 x max_wr + 1 WQEs (a wait queue for ODP page faults; only
 * max_wr + 1 when that exceeds the device) rounded up to a power of two, and
 * links the first pow2(max_wr + 1) of them into the free list: create
 * reports max_wr = that - 1, the WQEs that can be posted at once (the list
 * always keeps one). ibv_query_srq reports what the kernel knows: every
 * allocated WQE but one, and the armed limit.
 *
 * The NIC's side is recv.c: it follows the list from WQE 0 as far as the
 * doorbell record's count of posted WQEs allows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "worker.h"

#define SRQ_NEXT_SEG   16u /* struct mlx5_wqe_srq_next_seg */
#define SRQ_NEXT_INDEX 2u  /* its next_wqe_index (be16) */
#define SRQ_MIN_WQE    32u

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static uint8_t *srq_at(const struct emu_srq *srq, uint32_t idx)
{
	return emu_wq_at(&srq->wq, idx);
}

uint16_t emu_srq_next_index(const struct emu_srq *srq, uint32_t idx)
{
	uint16_t be;

	memcpy(&be, srq_at(srq, idx) + SRQ_NEXT_INDEX, sizeof(be));
	return gnic_be16(be);
}

static void set_next_index(struct emu_srq *srq, uint32_t idx, uint32_t next)
{
	uint16_t be = gnic_be16((uint16_t)next);

	memcpy(srq_at(srq, idx) + SRQ_NEXT_INDEX, &be, sizeof(be));
}

struct gnic_mlx5_data_seg *emu_srq_wqe(const struct emu_srq *srq, uint16_t idx, unsigned *nseg)
{
	*nseg = (srq->wq.stride - SRQ_NEXT_SEG) / sizeof(struct gnic_mlx5_data_seg);
	return (struct gnic_mlx5_data_seg *)(srq_at(srq, idx) + SRQ_NEXT_SEG);
}

/* ---- create ----------------------------------------------------------------- */

static int srq_size(struct emu_srq *srq, const struct ibv_srq_attr *a)
{
	uint32_t alloc, stride;

	if (a->max_wr > EMU_MAX_SRQ_WR || a->max_sge > EMU_MAX_RQ_DESC / GNIC_MLX5_SEG_SIZE)
		return EINVAL;
	stride = SRQ_NEXT_SEG + a->max_sge * GNIC_MLX5_SEG_SIZE;
	stride = roundup_pow2(stride < SRQ_MIN_WQE ? SRQ_MIN_WQE : stride);
	alloc = 2 * a->max_wr + 1;
	if (alloc > EMU_MAX_SRQ_WR)
		alloc = a->max_wr + 1; /* no room for mlx5's wait queue */
	srq->wq.stride = stride;
	srq->wq.wqe_cnt = roundup_pow2(alloc);
	srq->max_sge = (int)((stride - SRQ_NEXT_SEG) / GNIC_MLX5_SEG_SIZE);
	srq->last_free = roundup_pow2(a->max_wr + 1) - 1;
	srq->max_wr = srq->last_free;
	return 0;
}

static int srq_alloc(struct emu_srq *srq)
{
	srq->wq.buf = emu_alloc_pages((size_t)srq->wq.wqe_cnt * srq->wq.stride);
	srq->dbrec = emu_alloc_pages(EMU_PAGE);
	if (!srq->wq.buf || !srq->dbrec || emu_wq_alloc_arrays(&srq->wq))
		return ENOMEM;
	/* the free list: WQE i -> i + 1, up to last_free; the WQEs after it
	 * are linked the same way, as mlx5 links its wait queue (which only
	 * ODP page faults use) */
	for (uint32_t i = 0; i + 1 < srq->wq.wqe_cnt; i++)
		if (i != srq->last_free)
			set_next_index(srq, i, i + 1);
	return 0;
}

static void srq_free(struct emu_srq *srq)
{
	free(srq->wq.buf);
	free(srq->dbrec);
	emu_wq_free_arrays(&srq->wq);
	free(srq);
}

static int srqn_alloc(struct emu_srq *srq)
{
	static uint32_t next = 1; /* under nic.lock; 0 is never a live SRQ */

	for (uint32_t n = 0; n < EMU_MAX_SRQ - 1; n++) {
		uint32_t i = next;

		next = next + 1 < EMU_MAX_SRQ ? next + 1 : 1;
		if (!emu_nic.srqs[i]) {
			emu_nic.srqs[i] = srq;
			srq->srqn = i;
			srq->ibsrq.handle = i;
			return 0;
		}
	}
	return ENOMEM;
}

static void init_ibsrq(struct emu_srq *srq, struct ibv_pd *pd, void *srq_context)
{
	srq->ibsrq.context = pd->context;
	srq->ibsrq.srq_context = srq_context;
	srq->ibsrq.pd = pd;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	emu_wq_init_lock(&srq->wq);
	srq->ctx = to_ectx(pd->context);
	srq->pd = to_epd(pd);
}

static void destroy_ibsrq(struct emu_srq *srq)
{
	emu_wq_destroy_lock(&srq->wq);
	pthread_cond_destroy(&srq->ibsrq.cond);
	pthread_mutex_destroy(&srq->ibsrq.mutex);
}

EMU_EXPORT struct ibv_srq *gemu_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct emu_srq *srq;
	int err;

	if (!pd || !attr || !gemu_is_emu_context(pd->context)) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	err = srq_size(srq, &attr->attr);
	if (!err)
		err = srq_alloc(srq);
	if (err) {
		srq_free(srq);
		errno = err;
		return NULL;
	}
	init_ibsrq(srq, pd, attr->srq_context);
	emu_nic_lock();
	err = srqn_alloc(srq);
	if (!err)
		srq->pd->refcnt++;
	emu_nic_unlock();
	if (err) {
		destroy_ibsrq(srq);
		srq_free(srq);
		errno = err;
		return NULL;
	}
	attr->attr.max_wr = srq->max_wr;
	attr->attr.max_sge = (uint32_t)srq->max_sge;
	return &srq->ibsrq;
}

/* ---- modify, query, destroy --------------------------------------------------- */

/* The limit is its worker's too (recv.c disarms it): nic.lock, then the
 * worker's lock once a QP placed the SRQ. */
static void srq_ctl_lock(struct emu_srq *srq)
{
	emu_nic_lock();
	if (atomic_load(&srq->worker))
		emu_worker_lock(atomic_load(&srq->worker));
}

static void srq_ctl_unlock(struct emu_srq *srq)
{
	if (atomic_load(&srq->worker))
		emu_worker_unlock(atomic_load(&srq->worker));
	emu_nic_unlock();
}

/* mlx5_ib: no resize (IBV_SRQ_MAX_WR); a limit below the WQEs allocated. */
EMU_EXPORT int gemu_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct emu_srq *srq;

	if (!ibsrq || !attr || !gemu_is_emu_context(ibsrq->context))
		return EINVAL;
	srq = to_esrq(ibsrq);
	if (attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (attr_mask & IBV_SRQ_MAX_WR) {
		emu_info("modify_srq: an SRQ cannot be resized (IBV_SRQ_MAX_WR), as with mlx5");
		return EINVAL;
	}
	if ((attr_mask & IBV_SRQ_LIMIT) && attr->srq_limit >= srq->wq.wqe_cnt)
		return EINVAL;
	if (attr_mask & IBV_SRQ_LIMIT) {
		srq_ctl_lock(srq);
		srq->limit = attr->srq_limit;
		srq_ctl_unlock(srq);
	}
	return 0;
}

EMU_EXPORT int gemu_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct emu_srq *srq;

	if (!ibsrq || !attr || !gemu_is_emu_context(ibsrq->context))
		return EINVAL;
	srq = to_esrq(ibsrq);
	srq_ctl_lock(srq);
	attr->srq_limit = srq->limit;
	srq_ctl_unlock(srq);
	attr->max_wr = srq->wq.wqe_cnt - 1;
	attr->max_sge = (uint32_t)srq->max_sge;
	return 0;
}

/* EBUSY while a QP uses it, as the kernel refuses. */
EMU_EXPORT int gemu_destroy_srq(struct ibv_srq *ibsrq)
{
	struct emu_srq *srq;
	int err = 0;

	if (!ibsrq || !gemu_is_emu_context(ibsrq->context))
		return EINVAL;
	srq = to_esrq(ibsrq);
	emu_nic_lock();
	if (emu_nic.srqs[srq->srqn] != srq)
		err = EINVAL;
	else if (srq->refcnt)
		err = EBUSY;
	else {
		emu_nic.srqs[srq->srqn] = NULL;
		srq->pd->refcnt--;
	}
	emu_nic_unlock();
	if (err)
		return err;
	emu_events_wait(&ibsrq->mutex, &ibsrq->cond, &ibsrq->events_completed,
	                emu_async_drop(srq->ctx, srq, &srq->events_reported));
	destroy_ibsrq(srq);
	srq_free(srq);
	return 0;
}

/* ---- post and free ------------------------------------------------------------- */

static void write_srq_wqe(struct emu_srq *srq, uint32_t idx, const struct ibv_recv_wr *wr)
{
	unsigned nseg, j = 0;
	struct gnic_mlx5_data_seg *seg = emu_srq_wqe(srq, (uint16_t)idx, &nseg);

	/* zero-length SGEs are kept, as mlx5's SRQ post keeps them */
	for (int i = 0; i < wr->num_sge; i++, j++) {
		seg[j].byte_count = gnic_be32(wr->sg_list[i].length);
		seg[j].lkey = gnic_be32(wr->sg_list[i].lkey);
		seg[j].addr = gnic_be64(wr->sg_list[i].addr);
	}
	if (j < nseg) {
		seg[j].byte_count = 0;
		seg[j].lkey = gnic_be32(GNIC_MLX5_INVALID_LKEY);
		seg[j].addr = 0;
	}
}

/* WRs before a failing one stay posted; *bad names it: EINVAL (too many
 * SGEs), ENOMEM (the SRQ is full). */
EMU_EXPORT int gemu_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                                  struct ibv_recv_wr **bad)
{
	struct emu_srq *srq = to_esrq(ibsrq);
	uint32_t posted = 0;
	int err = 0;

	pthread_spin_lock(&srq->wq.lock);
	for (; wr; wr = wr->next, posted++) {
		if (wr->num_sge < 0 || wr->num_sge > srq->max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		if (srq->next_free == srq->last_free) {
			err = ENOMEM;
			break;
		}
		srq->wq.wrid[srq->next_free] = wr->wr_id;
		write_srq_wqe(srq, srq->next_free, wr);
		srq->next_free = emu_srq_next_index(srq, srq->next_free);
	}
	if (posted) {
		srq->wq.head += posted;
		/* release: the WQEs before the count */
		__atomic_store_n(&srq->dbrec[0], gnic_be32(srq->wq.head & 0xffff),
		                 __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&srq->wq.lock);
	if (posted && atomic_load(&srq->worker))
		emu_worker_kick(atomic_load(&srq->worker));
	if (err && bad)
		*bad = wr;
	return err;
}

void emu_srq_free_wqe(struct emu_srq *srq, uint16_t idx)
{
	pthread_spin_lock(&srq->wq.lock);
	set_next_index(srq, srq->last_free, idx);
	srq->last_free = idx;
	pthread_spin_unlock(&srq->wq.lock);
}
