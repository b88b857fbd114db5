/* SPDX-License-Identifier: MIT */
/*
 * Receive WQs, indirection tables and RSS QPs (rwq.h), the control side:
 * sizing as rdma-core's mlx5 sizes them (mlx5_calc_rwq_size), the checks
 * of mlx5's create_wq and of the kernel's, ibv_post_wq_recv as mlx5 writes
 * it, and the Toeplitz hash that picks a frame's WQ. The receive engine is
 * rwq_stride.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rwq.h"

static struct emu_rwq *rwqs[EMU_MAX_RWQ]; /* by wqn - EMU_RWQN_BASE, under nic.lock */

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* mlx5_calc_rwq_size: data segments (and the next segment of a striding
 * WQE) rounded up to a power of two; max_wr rounded up to a power of two;
 * at least one basic block. */
static int rwq_size(struct emu_rwq *wq, const struct ibv_wq_init_attr *a)
{
	uint32_t sge = a->max_sge ? a->max_sge : 1, wqe, bytes;

	if (!a->max_wr || a->max_wr > EMU_MAX_QP_WR || sge > EMU_MAX_RQ_DESC / GNIC_MLX5_SEG_SIZE)
		return EINVAL;
	wqe = sge * GNIC_MLX5_SEG_SIZE + (wq->striding ? 16u : 0);
	if (wqe > EMU_MAX_RQ_DESC)
		return EINVAL;
	wq->stride = roundup_pow2(wqe);
	bytes = roundup_pow2(a->max_wr) * wq->stride;
	if (bytes < GNIC_MLX5_SEND_WQE_BB)
		bytes = GNIC_MLX5_SEND_WQE_BB;
	wq->wqe_cnt = bytes / wq->stride;
	wq->max_sge = (wq->stride - (wq->striding ? 16u : 0)) / GNIC_MLX5_SEG_SIZE;
	return 0;
}

static int check_striding(const struct mlx5dv_striding_rq_init_attr *s)
{
	if (s->single_stride_log_num_of_bytes < EMU_MPRQ_MIN_LOG_STRIDE ||
	    s->single_stride_log_num_of_bytes > EMU_MPRQ_MAX_LOG_STRIDE ||
	    s->single_wqe_log_num_of_strides < EMU_MPRQ_MIN_LOG_NSTRIDES ||
	    s->single_wqe_log_num_of_strides > EMU_MPRQ_MAX_LOG_NSTRIDES)
		return EINVAL;
	return 0;
}

static void rwq_free(struct emu_rwq *wq)
{
	free(wq->buf);
	free(wq->dbrec);
	free(wq->wrid);
	free(wq);
}

static int wqn_alloc(struct emu_rwq *wq)
{
	static uint32_t next; /* under nic.lock */

	for (uint32_t n = 0; n < EMU_MAX_RWQ; n++) {
		uint32_t i = (next + n) % EMU_MAX_RWQ;

		if (!rwqs[i]) {
			rwqs[i] = wq;
			wq->wqn = EMU_RWQN_BASE + i;
			next = i + 1;
			return 0;
		}
	}
	return ENOMEM;
}

static int post_wq_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

static struct ibv_wq *create_wq(struct ibv_context *context, struct ibv_wq_init_attr *a,
                                const struct mlx5dv_wq_init_attr *dv)
{
	struct emu_rwq *wq;
	int err = 0;

	if (!context || !a || !gemu_is_emu_context(context) || !a->pd || !a->cq ||
	    a->pd->context != context || a->cq->context != context) {
		errno = EINVAL;
		return NULL;
	}
	if (a->wq_type != IBV_WQT_RQ || (a->comp_mask & ~(uint32_t)IBV_WQ_INIT_ATTR_FLAGS) ||
	    ((a->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && a->create_flags)) {
		emu_info("create_wq: only plain receive WQs without create flags are emulated");
		errno = a->wq_type != IBV_WQT_RQ ? EINVAL : EOPNOTSUPP;
		return NULL;
	}
	if (dv && (dv->comp_mask & ~(uint64_t)MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ)) {
		errno = EINVAL; /* mlx5_calc_rwq_size's check_comp_mask */
		return NULL;
	}
	wq = calloc(1, sizeof(*wq));
	if (!wq) {
		errno = ENOMEM;
		return NULL;
	}
	if (dv && (dv->comp_mask & MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ)) {
		err = check_striding(&dv->striding_rq_attrs);
		wq->striding = true;
		wq->log_stride = (uint8_t)dv->striding_rq_attrs.single_stride_log_num_of_bytes;
		wq->log_nstrides = (uint8_t)dv->striding_rq_attrs.single_wqe_log_num_of_strides;
		wq->shift2 = dv->striding_rq_attrs.two_byte_shift_en != 0;
	}
	if (!err)
		err = rwq_size(wq, a);
	if (!err) {
		wq->buf = emu_alloc_pages((size_t)wq->wqe_cnt * wq->stride);
		wq->dbrec = emu_alloc_pages(EMU_PAGE);
		wq->wrid = calloc(wq->wqe_cnt, sizeof(*wq->wrid));
		if (!wq->buf || !wq->dbrec || !wq->wrid)
			err = ENOMEM;
	}
	if (!err) {
		emu_nic_lock();
		err = wqn_alloc(wq);
		if (!err) {
			to_epd(a->pd)->refcnt++;
			to_ecq(a->cq)->refcnt++;
		}
		emu_nic_unlock();
	}
	if (err) {
		rwq_free(wq);
		errno = err;
		return NULL;
	}
	wq->ctx = to_ectx(context);
	wq->pd = to_epd(a->pd);
	wq->cq = to_ecq(a->cq);
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&wq->eng_lock, NULL);
	atomic_init(&wq->state, IBV_WQS_RESET);
	wq->ibwq = (struct ibv_wq){.context = context,
	                           .wq_context = a->wq_context,
	                           .pd = a->pd,
	                           .cq = a->cq,
	                           .wq_num = wq->wqn,
	                           .state = IBV_WQS_RESET,
	                           .wq_type = IBV_WQT_RQ,
	                           .post_recv = post_wq_recv};
	pthread_mutex_init(&wq->ibwq.mutex, NULL);
	pthread_cond_init(&wq->ibwq.cond, NULL);
	/* what mlx5 reports back: the WQEs and SGEs the queue has room for */
	a->max_wr = wq->wqe_cnt;
	a->max_sge = wq->max_sge;
	emu_dbg("WQ 0x%x: %u WQEs of %u bytes%s", wq->wqn, wq->wqe_cnt, wq->stride,
	        wq->striding ? ", striding" : "");
	return &wq->ibwq;
}

EMU_EXPORT struct ibv_wq *gemu_create_wq(struct ibv_context *context, struct ibv_wq_init_attr *attr)
{
	return create_wq(context, attr, NULL);
}

EMU_EXPORT struct ibv_wq *gemu_mlx5dv_create_wq(struct ibv_context *context,
                                                struct ibv_wq_init_attr *attr,
                                                struct mlx5dv_wq_init_attr *mlx5_attr)
{
	return create_wq(context, attr, mlx5_attr);
}

static bool wq_ok(struct ibv_wq *ibwq)
{
	struct emu_rwq *wq = to_erwq(ibwq);
	uint32_t i = wq->wqn - EMU_RWQN_BASE;

	return i < EMU_MAX_RWQ && rwqs[i] == wq;
}

/* RESET, RDY and ERR, as the kernel's modify_rq takes them; leaving RESET
 * the queue starts over (mlx5_modify_wq zeroes the doorbell record and its
 * indexes, the NIC its consumer index). */
EMU_EXPORT int gemu_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct emu_rwq *wq;
	int cur, next;

	if (!ibwq || !attr || !gemu_is_emu_context(ibwq->context))
		return EINVAL;
	wq = to_erwq(ibwq);
	if (attr->attr_mask & ~(uint32_t)(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE))
		return EOPNOTSUPP; /* flags */
	if (!(attr->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	cur = atomic_load(&wq->state);
	next = attr->wq_state;
	if ((attr->attr_mask & IBV_WQ_ATTR_CURR_STATE) && (int)attr->curr_wq_state != cur)
		return EINVAL;
	if (next != IBV_WQS_RESET && next != IBV_WQS_RDY && next != IBV_WQS_ERR)
		return EINVAL;
	if (next == IBV_WQS_RDY && cur == IBV_WQS_ERR)
		return EINVAL; /* ERR goes back through RESET */
	pthread_mutex_lock(&wq->eng_lock);
	if (cur == IBV_WQS_RESET && next == IBV_WQS_RDY) {
		emu_cq_clean(wq->cq, wq->wqn, NULL);
		pthread_spin_lock(&wq->lock);
		wq->head = 0;
		pthread_spin_unlock(&wq->lock);
		wq->dbrec[0] = 0;
		emu_rwq_engine_reset(wq);
	}
	if (next == IBV_WQS_RESET)
		emu_rwq_engine_reset(wq);
	atomic_store(&wq->state, next);
	ibwq->state = (enum ibv_wq_state)next;
	pthread_mutex_unlock(&wq->eng_lock);
	return 0;
}

EMU_EXPORT int gemu_destroy_wq(struct ibv_wq *ibwq)
{
	struct emu_rwq *wq;
	int err = 0;

	if (!ibwq || !gemu_is_emu_context(ibwq->context))
		return EINVAL;
	wq = to_erwq(ibwq);
	emu_nic_lock();
	if (!wq_ok(ibwq))
		err = EINVAL;
	else if (wq->refcnt)
		err = EBUSY; /* an indirection table names it */
	else {
		rwqs[wq->wqn - EMU_RWQN_BASE] = NULL;
		wq->pd->refcnt--;
		wq->cq->refcnt--;
	}
	emu_nic_unlock();
	if (err)
		return err;
	emu_events_wait(&ibwq->mutex, &ibwq->cond, &ibwq->events_completed,
	                emu_async_drop(wq->ctx, wq, &wq->events_reported));
	emu_cq_clean(wq->cq, wq->wqn, NULL);
	pthread_spin_destroy(&wq->lock);
	pthread_mutex_destroy(&wq->eng_lock);
	pthread_cond_destroy(&wq->ibwq.cond);
	pthread_mutex_destroy(&wq->ibwq.mutex);
	rwq_free(wq);
	return 0;
}

/* mlx5_post_wq_recv: data segments from the WQE's first byte (zero-length
 * SGEs skipped), an INVALID_LKEY segment after them when there is room,
 * then the doorbell record. A striding WQ gets the same bytes (which its
 * WQE layout reads as the next segment): post striding WQEs directly. */
static int post_wq_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct emu_rwq *wq = to_erwq(ibwq);
	int err = 0, n = 0;

	pthread_spin_lock(&wq->lock);
	for (; wr; wr = wr->next, n++) {
		struct gnic_mlx5_data_seg *seg;
		uint32_t j = 0;

		/* ibv_poll_cq does not consume WQ completions (rwq_stride.c), so
		 * the free room is the caller's to know: one call posts at most
		 * a ring's worth */
		if ((uint32_t)n >= wq->wqe_cnt) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			err = EINVAL;
			break;
		}
		seg = (struct gnic_mlx5_data_seg *)(wq->buf + (size_t)((wq->head + (uint32_t)n) &
		                                                       (wq->wqe_cnt - 1)) *
		                                                  wq->stride);
		for (int i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			seg[j].byte_count = gnic_be32(wr->sg_list[i].length);
			seg[j].lkey = gnic_be32(wr->sg_list[i].lkey);
			seg[j].addr = gnic_be64(wr->sg_list[i].addr);
			j++;
		}
		if (j < wq->max_sge) {
			seg[j].byte_count = 0;
			seg[j].lkey = gnic_be32(GNIC_MLX5_INVALID_LKEY);
			seg[j].addr = 0;
		}
		wq->wrid[(wq->head + (uint32_t)n) & (wq->wqe_cnt - 1)] = wr->wr_id;
	}
	if (err && bad)
		*bad = wr;
	if (n) {
		wq->head += (uint32_t)n;
		atomic_store_explicit((_Atomic uint32_t *)wq->dbrec, gnic_be32(wq->head & 0xffff),
		                      memory_order_release);
	}
	pthread_spin_unlock(&wq->lock);
	return err;
}

/* ---- indirection tables ------------------------------------------------------ */

EMU_EXPORT struct ibv_rwq_ind_table *
gemu_create_rwq_ind_table(struct ibv_context *context, struct ibv_rwq_ind_table_init_attr *attr)
{
	struct emu_rwq_ind_tbl *t;
	uint32_t n;
	int err = 0;

	if (!context || !attr || !gemu_is_emu_context(context) || attr->comp_mask ||
	    attr->log_ind_tbl_size > 16 || !attr->ind_tbl) {
		errno = EINVAL;
		return NULL;
	}
	n = 1u << attr->log_ind_tbl_size;
	t = calloc(1, sizeof(*t));
	if (t)
		t->wq = calloc(n, sizeof(*t->wq));
	if (!t || !t->wq) {
		if (t)
			free(t);
		errno = ENOMEM;
		return NULL;
	}
	emu_nic_lock();
	for (uint32_t i = 0; i < n && !err; i++)
		if (!attr->ind_tbl[i] || attr->ind_tbl[i]->context != context ||
		    !wq_ok(attr->ind_tbl[i]))
			err = EINVAL;
	for (uint32_t i = 0; i < n && !err; i++) {
		t->wq[i] = to_erwq(attr->ind_tbl[i]);
		t->wq[i]->refcnt++;
	}
	emu_nic_unlock();
	if (err) {
		free(t->wq);
		free(t);
		errno = err;
		return NULL;
	}
	t->log_size = attr->log_ind_tbl_size;
	t->ibtbl.context = context;
	t->ibtbl.ind_tbl_num = t->wq[0]->wqn;
	return &t->ibtbl;
}

EMU_EXPORT int gemu_destroy_rwq_ind_table(struct ibv_rwq_ind_table *ibtbl)
{
	struct emu_rwq_ind_tbl *t = (struct emu_rwq_ind_tbl *)ibtbl;
	int err = 0;

	if (!ibtbl || !gemu_is_emu_context(ibtbl->context))
		return EINVAL;
	emu_nic_lock();
	if (t->refcnt)
		err = EBUSY; /* an RSS QP receives through it */
	else
		for (uint32_t i = 0; i < 1u << t->log_size; i++)
			t->wq[i]->refcnt--;
	emu_nic_unlock();
	if (err)
		return err;
	free(t->wq);
	free(t);
	return 0;
}

/* ---- RSS QPs ------------------------------------------------------------------ */

#define RSS_FIELDS_KNOWN                                                                           \
	(IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_IPV6 |                      \
	 IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |              \
	 IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)

int emu_rss_check(struct ibv_context *context, const struct ibv_qp_init_attr_ex *a,
                  struct emu_rss *rss, struct ibv_cq **cq)
{
	const struct ibv_rx_hash_conf *h = &a->rx_hash_conf;
	struct emu_rwq_ind_tbl *t = (struct emu_rwq_ind_tbl *)a->rwq_ind_tbl;

	if (a->qp_type != IBV_QPT_RAW_PACKET || !(a->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    !(a->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) || !t || t->ibtbl.context != context)
		return EINVAL; /* mlx5 makes RSS QPs of raw packet QPs with both */
	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ || h->rx_hash_key_len != EMU_RSS_KEY ||
	    !h->rx_hash_key)
		return EINVAL; /* mlx5_ib: Toeplitz with the TIR's 40-byte key only */
	if (h->rx_hash_fields_mask & ~(uint64_t)RSS_FIELDS_KNOWN) {
		emu_info("create_qp: rx_hash_fields_mask 0x%llx: gnic-emu hashes IPv4/IPv6 "
		         "addresses and TCP/UDP ports only",
		         (unsigned long long)h->rx_hash_fields_mask);
		return EOPNOTSUPP;
	}
	if (((h->rx_hash_fields_mask & (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4)) &&
	     (h->rx_hash_fields_mask & (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6))) ||
	    ((h->rx_hash_fields_mask & (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP)) &&
	     (h->rx_hash_fields_mask & (IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP))))
		return EINVAL; /* one L3 and one L4 protocol per TIR, as mlx5_ib checks */
	rss->tbl = t;
	rss->fields = h->rx_hash_fields_mask;
	memcpy(rss->key, h->rx_hash_key, EMU_RSS_KEY);
	*cq = &t->wq[0]->cq->ibcq;
	return 0;
}

void emu_rss_hold(struct emu_rss *rss, int delta)
{
	rss->tbl->refcnt += delta;
}

/* Toeplitz: for every set bit of the input, the 32 key bits starting at
 * that bit position are XORed into the result. */
static uint32_t toeplitz(const uint8_t key[EMU_RSS_KEY], const uint8_t *in, unsigned n)
{
	uint32_t r = 0, win = (uint32_t)key[0] << 24 | key[1] << 16 | key[2] << 8 | key[3];

	for (unsigned i = 0; i < n; i++) {
		for (int b = 7; b >= 0; b--) {
			if (in[i] >> b & 1)
				r ^= win;
			win <<= 1;
			if (i + 4 < EMU_RSS_KEY && (key[i + 4] >> b & 1))
				win |= 1;
		}
	}
	return r;
}

uint32_t emu_rss_hash(const struct emu_rss *rss, const struct emu_pkt *p, uint8_t *htype)
{
	uint64_t f = rss->fields;
	const uint8_t *l3 = p->data + p->l3_off, *l4 = p->data + p->l4_off;
	uint8_t in[36];
	unsigned n = 0, alen = p->l3 == EMU_L3_IPV4 ? 4 : 16;
	uint64_t want_src = p->l3 == EMU_L3_IPV4 ? IBV_RX_HASH_SRC_IPV4 : IBV_RX_HASH_SRC_IPV6;
	uint64_t want_dst = p->l3 == EMU_L3_IPV4 ? IBV_RX_HASH_DST_IPV4 : IBV_RX_HASH_DST_IPV6;
	uint64_t sport = p->l4 == EMU_L4_TCP ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP;
	uint64_t dport = p->l4 == EMU_L4_TCP ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP;
	unsigned src_off = p->l3 == EMU_L3_IPV4 ? 12 : 8, dst_off = src_off + alen;

	*htype = 0;
	if (p->l3 == EMU_L3_NONE || !(f & (want_src | want_dst)))
		return 0; /* a TIR hashing what the frame lacks: WQ 0, no hash */
	if (f & want_src) {
		memcpy(in + n, l3 + src_off, alen);
		n += alen;
	}
	if (f & want_dst) {
		memcpy(in + n, l3 + dst_off, alen);
		n += alen;
	}
	*htype = (uint8_t)((p->l3 == EMU_L3_IPV4 ? 1 : 2) << 2);
	if (p->l4 != EMU_L4_NONE && (f & (sport | dport))) {
		if (f & sport) {
			memcpy(in + n, l4, 2);
			n += 2;
		}
		if (f & dport) {
			memcpy(in + n, l4 + 2, 2);
			n += 2;
		}
		*htype |= (uint8_t)((p->l4 == EMU_L4_TCP ? 1 : 2) << 6);
	}
	return toeplitz(rss->key, in, n);
}

void emu_rss_deliver(struct emu_qp *qp, const struct emu_pkt *p, uint32_t tag)
{
	const struct emu_rss *rss = qp->rss;
	uint8_t htype;
	uint32_t hash = emu_rss_hash(rss, p, &htype);

	emu_rwq_receive(rss->tbl->wq[hash & ((1u << rss->tbl->log_size) - 1)], p, tag, hash, htype);
}
