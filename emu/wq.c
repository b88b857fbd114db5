/* SPDX-License-Identifier: MIT */
/*
 * Work queues: what the SQ and the RQ have in common (wq.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wq.h"

int emu_wq_alloc_arrays(struct emu_wq *wq)
{
	wq->wrid = calloc(wq->wqe_cnt ? wq->wqe_cnt : 1, sizeof(*wq->wrid));
	return wq->wrid ? 0 : ENOMEM;
}

void emu_wq_free_arrays(struct emu_wq *wq)
{
	free(wq->wrid);
	wq->wrid = NULL;
}

void emu_wq_init_lock(struct emu_wq *wq)
{
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
}

void emu_wq_destroy_lock(struct emu_wq *wq)
{
	pthread_spin_destroy(&wq->lock);
}

void emu_wq_reset(struct emu_wq *wq)
{
	wq->head = 0;
	emu_wq_retire(wq, 0);
}

void emu_wq_copy_in(struct emu_wq *wq, uint32_t idx, const void *src, uint32_t n)
{
	uint32_t first = emu_wq_slot(wq, idx);
	uint32_t part = wq->wqe_cnt - first < n ? wq->wqe_cnt - first : n;

	memcpy(emu_wq_at(wq, first), src, (size_t)part * wq->stride);
	if (part < n)
		memcpy(wq->buf, (const uint8_t *)src + (size_t)part * wq->stride,
		       (size_t)(n - part) * wq->stride);
}

void emu_wq_copy_out(const struct emu_wq *wq, uint32_t idx, void *dst, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		memcpy((uint8_t *)dst + (size_t)i * wq->stride, emu_wq_at(wq, idx + i), wq->stride);
}
