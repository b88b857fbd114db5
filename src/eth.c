/* SPDX-License-Identifier: MIT */
/*
 * An Ethernet queue: a RAW_PACKET QP (qp.c builds it like an RC QP, with
 * its SQ, CQs and device view struct gnic_dev_qp), a pool of receive
 * buffers registered for local write, every buffer posted at creation, and
 * the device view struct gnic_dev_eth (gnic_dev_eth.h) with its two arrays:
 * the buffer in each receive slot, and the mark of each pool send.
 *
 * Without a GPU everything is host memory. With one the pool is GPU memory
 * (or host memory mapped into the GPU), and the struct and its arrays are
 * GPU memory, filled here and copied over once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gnic/gnic_emu.h"
#include "gnic_int.h"

#define ETH_BUF_MIN 64u
#define ETH_BUF_MAX 65536u

struct gnic_eth_flow {
	struct gnic_eth *eth;
	struct ibv_flow *ibflow;
	struct gnic_eth_flow *next;
};

struct gnic_eth {
	struct gnic_ctx *ctx;
	struct gnic_eth_attr attr;
	struct gnic_qp *qp;
	uint32_t nbuf, stride;
	/* the pool: host memory (pool_host) or GPU memory (pool_gpu) */
	uint8_t *pool_host;
	uint64_t pool_gpu;
	uint64_t pool_dev; /* where device code finds it */
	size_t pool_len;
	struct gnic_mr *mr;
	/* the device view and its arrays: tx_mark[sq_wqe_cnt], rq_buf_of[nbuf] */
	struct gnic_dev_eth img;
	void *dev_host; /* without a GPU: the struct device code uses */
	void *track_host;
	uint64_t dev_gpu, track_gpu;
	struct gnic_eth_flow *flows;
};

GNIC_API void gnic_eth_attr_init(struct gnic_eth_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->sq_depth = 1024;
	attr->rx_bufs = 512;
	attr->buf_size = 2048;
	attr->pool_mem = GNIC_ETH_MEM_AUTO;
	attr->db_mode = GNIC_DB_AUTO;
	attr->share = GNIC_SHARE_GPU;
	attr->cqe_every = 16;
	attr->timeout_ns = 10ull * 1000 * 1000 * 1000;
}

/* ---- device-visible memory (shared with ring.c) ---------------------------- */

gnic_status_t gnic_eth_host_block(struct gnic_ctx *ctx, size_t len, void **host, uint64_t *dev)
{
	gnic_status_t st = GNIC_OK;
	void *p, *prev;

	if (posix_memalign(&p, GNIC_PAGE, len))
		return gnic_error(GNIC_ERR_NOMEM, "eth: out of memory (%zu bytes)", len);
	memset(p, 0, len);
	*dev = (uintptr_t)p;
	if (gnic_ctx_has_gpu(ctx)) {
		st = gnic_cuda_enter(&ctx->gpu, &prev);
		if (!st) {
			st = gnic_hostmap_add(p, len, 0);
			if (!st) {
				st = gnic_cuda_host_dev_ptr(p, dev);
				if (st)
					gnic_hostmap_del(p, len);
			}
			gnic_cuda_leave(prev);
		}
	}
	if (st) {
		free(p);
		return st;
	}
	*host = p;
	return GNIC_OK;
}

void gnic_eth_host_block_free(struct gnic_ctx *ctx, void *host, size_t len)
{
	void *prev;

	if (!host)
		return;
	if (gnic_ctx_has_gpu(ctx) && !gnic_cuda_enter(&ctx->gpu, &prev)) {
		gnic_hostmap_del(host, len);
		gnic_cuda_leave(prev);
	}
	free(host);
}

gnic_status_t gnic_eth_dev_copy(struct gnic_ctx *ctx, const void *src, size_t len, void **host,
                                uint64_t *dev)
{
	gnic_status_t st;
	void *prev;

	*host = NULL;
	*dev = 0;
	if (!gnic_ctx_has_gpu(ctx)) {
		if (posix_memalign(host, 64, len))
			return gnic_error(GNIC_ERR_NOMEM, "eth: out of memory (%zu bytes)", len);
		memcpy(*host, src, len);
		*dev = (uintptr_t)*host;
		return GNIC_OK;
	}
	st = gnic_cuda_enter(&ctx->gpu, &prev);
	if (st)
		return st;
	st = gnic_cuda_alloc(len, dev);
	if (!st) {
		st = gnic_cuda_htod(*dev, src, len);
		if (st) {
			gnic_cuda_free(*dev);
			*dev = 0;
		}
	}
	gnic_cuda_leave(prev);
	return st;
}

void gnic_eth_dev_free(struct gnic_ctx *ctx, void *host, uint64_t dev)
{
	void *prev;

	free(host);
	if (!host && dev && gnic_ctx_has_gpu(ctx) && !gnic_cuda_enter(&ctx->gpu, &prev)) {
		gnic_cuda_free(dev);
		gnic_cuda_leave(prev);
	}
}

/* ---- create ---------------------------------------------------------------- */

static gnic_status_t check_attr(struct gnic_ctx *ctx, const struct gnic_eth_attr *a)
{
	if (!a->rx_bufs || a->rx_bufs > ctx->max_qp_wr || a->rx_bufs > GNIC_MAX_QP_WR)
		return gnic_error(GNIC_ERR_INVALID, "eth: rx_bufs %u not in [1, %u]", a->rx_bufs,
		                  ctx->max_qp_wr < GNIC_MAX_QP_WR ? ctx->max_qp_wr
		                                                  : GNIC_MAX_QP_WR);
	if (a->buf_size < ETH_BUF_MIN || a->buf_size > ETH_BUF_MAX)
		return gnic_error(GNIC_ERR_INVALID, "eth: buf_size %u not in [%u, %u]", a->buf_size,
		                  ETH_BUF_MIN, ETH_BUF_MAX);
	if ((unsigned)a->pool_mem > GNIC_ETH_MEM_GPU)
		return gnic_error(GNIC_ERR_INVALID, "eth: unknown pool_mem %d", a->pool_mem);
	if (a->pool_mem == GNIC_ETH_MEM_GPU && !gnic_ctx_has_gpu(ctx))
		return gnic_error(GNIC_ERR_INVALID, "eth: pool_mem GPU in a context without a GPU");
	if (a->db_mode == GNIC_DB_PROXY)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED,
		                  "eth: db_mode PROXY: Ethernet queues "
		                  "have no CPU proxy (AUTO, SM, BF or CPU)");
	return GNIC_OK;
}

/* The RAW_PACKET QP, in RTS. AUTO takes GNIC_DB_MODE unless that is the
 * proxy, which Ethernet queues do not have: then SM. */
static gnic_status_t create_qp(struct gnic_eth *eth)
{
	const struct gnic_eth_attr *a = &eth->attr;
	struct gnic_qp_attr qa;
	struct ibv_qp_attr m = {.qp_state = IBV_QPS_INIT, .port_num = GNIC_PORT};
	int env = gnic_config()->db_mode, r;
	gnic_status_t st;

	gnic_qp_attr_init(&qa);
	qa.sq_depth = a->sq_depth;
	qa.rq_depth = a->rx_bufs;
	qa.max_inline = 0; /* headers go in the Ethernet segment, not inline segments */
	qa.db_mode = a->db_mode;
	if (qa.db_mode == GNIC_DB_AUTO)
		qa.db_mode = env == GNIC_DB_AUTO || env == GNIC_DB_PROXY ? GNIC_DB_SM
		                                                         : (enum gnic_db_mode)env;
	qa.share = a->share;
	qa.cqe_every = a->cqe_every;
	qa.timeout_ns = a->timeout_ns;
	st = gnic_qp_create_raw(eth->ctx, &qa, &eth->qp);
	if (st)
		return st;
	r = eth->ctx->v->modify_qp(eth->qp->ibqp, &m, IBV_QP_STATE | IBV_QP_PORT);
	if (!r) {
		m.qp_state = IBV_QPS_RTR;
		r = eth->ctx->v->modify_qp(eth->qp->ibqp, &m, IBV_QP_STATE);
	}
	if (!r) {
		m.qp_state = IBV_QPS_RTS;
		r = eth->ctx->v->modify_qp(eth->qp->ibqp, &m, IBV_QP_STATE);
	}
	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "eth: modify_qp of RAW_PACKET QP %#x to %s: %s",
		                  eth->qp->ibqp->qp_num,
		                  m.qp_state == IBV_QPS_INIT  ? "INIT"
		                  : m.qp_state == IBV_QPS_RTR ? "RTR"
		                                              : "RTS",
		                  strerror(r));
	return GNIC_OK;
}

static gnic_status_t alloc_pool(struct gnic_eth *eth)
{
	struct gnic_ctx *ctx = eth->ctx;
	bool gpu = eth->attr.pool_mem == GNIC_ETH_MEM_GPU ||
	           (eth->attr.pool_mem == GNIC_ETH_MEM_AUTO && gnic_ctx_has_gpu(ctx));
	gnic_status_t st;
	void *addr, *prev;

	eth->pool_len =
	    ((size_t)eth->nbuf * eth->stride + GNIC_PAGE - 1) & ~(size_t)(GNIC_PAGE - 1);
	if (gpu) {
		st = gnic_cuda_enter(&ctx->gpu, &prev);
		if (st)
			return st;
		st = gnic_cuda_alloc(eth->pool_len, &eth->pool_gpu);
		gnic_cuda_leave(prev);
		if (st)
			return st;
		eth->pool_dev = eth->pool_gpu;
		addr = (void *)(uintptr_t)eth->pool_gpu;
	} else {
		st = gnic_eth_host_block(ctx, eth->pool_len, &addr, &eth->pool_dev);
		if (st)
			return st;
		eth->pool_host = addr;
	}
	return gnic_mr_reg(ctx, addr, eth->pool_len, GNIC_ACCESS_LOCAL, &eth->mr);
}

static void free_pool(struct gnic_eth *eth)
{
	void *prev;

	if (eth->mr)
		gnic_mr_dereg(eth->mr);
	gnic_eth_host_block_free(eth->ctx, eth->pool_host, eth->pool_len);
	if (eth->pool_gpu && !gnic_cuda_enter(&eth->ctx->gpu, &prev)) {
		gnic_cuda_free(eth->pool_gpu);
		gnic_cuda_leave(prev);
	}
}

/* Every buffer into the receive queue: buffer i in slot i. */
static void post_all(struct gnic_eth *eth, uint32_t *rq_buf_of)
{
	struct gnic_qp *qp = eth->qp;
	uint64_t iova = eth->pool_host ? (uintptr_t)eth->pool_host : eth->pool_gpu;

	for (uint32_t i = 0; i < eth->nbuf; i++) {
		struct gnic_mlx5_data_seg *seg =
		    (struct gnic_mlx5_data_seg *)((uint8_t *)qp->dv.rq.buf +
		                                  (size_t)i * qp->dv.rq.stride);

		seg->byte_count = gnic_be32(eth->stride);
		seg->lkey = gnic_be32(gnic_mr_lkey(eth->mr));
		seg->addr = gnic_be64(iova + (uint64_t)i * eth->stride);
		if (qp->dv.rq.stride > sizeof(*seg)) {
			seg[1].byte_count = 0;
			seg[1].lkey = gnic_be32(GNIC_MLX5_INVALID_LKEY);
			seg[1].addr = 0;
		}
		rq_buf_of[i] = i;
	}
	__atomic_store_n(&qp->dv.dbrec[GNIC_MLX5_RCV_DBR], gnic_be32(eth->nbuf & 0xffff),
	                 __ATOMIC_RELEASE);
	qp->img->rq_posted = eth->nbuf;
}

/* The QP's device struct again, now that rq_posted moved (GPU context). */
static gnic_status_t push_qp_view(struct gnic_eth *eth)
{
	gnic_status_t st;
	void *prev;

	if (!eth->qp->dev_gpu)
		return GNIC_OK;
	st = gnic_cuda_enter(&eth->ctx->gpu, &prev);
	if (st)
		return st;
	st = gnic_cuda_htod(eth->qp->dev_gpu, eth->qp->img, sizeof(*eth->qp->img));
	gnic_cuda_leave(prev);
	return st;
}

static gnic_status_t export_dev(struct gnic_eth *eth)
{
	uint32_t sq_cnt = eth->qp->dv.sq.wqe_cnt;
	size_t mark_len = (size_t)sq_cnt * sizeof(uint64_t);
	size_t len = mark_len + (size_t)eth->nbuf * sizeof(uint32_t);
	uint8_t *track = calloc(1, len);
	struct gnic_dev_eth *d = &eth->img;
	gnic_status_t st;

	if (!track)
		return gnic_error(GNIC_ERR_NOMEM, "eth: out of memory");
	post_all(eth, (uint32_t *)(track + mark_len));
	st = push_qp_view(eth);
	if (!st)
		st = gnic_eth_dev_copy(eth->ctx, track, len, &eth->track_host, &eth->track_gpu);
	free(track);
	if (st)
		return st;
	memset(d, 0, sizeof(*d));
	d->magic = GNIC_DEV_ETH_MAGIC;
	d->nbuf = eth->nbuf;
	d->qp = gnic_qp_dev(eth->qp);
	d->pool = (uint8_t *)(uintptr_t)eth->pool_dev;
	d->pool_iova = eth->pool_host ? (uintptr_t)eth->pool_host : eth->pool_gpu;
	d->buf_stride = eth->stride;
	d->pool_lkey = gnic_mr_lkey(eth->mr);
	d->tx_mark = (uint64_t *)(uintptr_t)eth->track_gpu;
	d->rq_buf_of = (uint32_t *)(uintptr_t)(eth->track_gpu + mark_len);
	return gnic_eth_dev_copy(eth->ctx, d, sizeof(*d), &eth->dev_host, &eth->dev_gpu);
}

static void eth_free(struct gnic_eth *eth)
{
	while (eth->flows)
		gnic_eth_rule_remove(eth->flows);
	gnic_eth_dev_free(eth->ctx, eth->dev_host, eth->dev_gpu);
	gnic_eth_dev_free(eth->ctx, eth->track_host, eth->track_gpu);
	if (eth->qp)
		gnic_qp_destroy(eth->qp);
	free_pool(eth);
	free(eth);
}

static uint32_t pow2_at_least(uint32_t v, uint32_t min)
{
	uint32_t p = gnic_pow2_ceil(v);

	return p < min ? min : p;
}

GNIC_API gnic_status_t gnic_eth_create(struct gnic_ctx *ctx, const struct gnic_eth_attr *attr,
                                       struct gnic_eth **eth_p)
{
	struct gnic_eth_attr defaults;
	struct gnic_eth *eth;
	gnic_status_t st;

	if (!ctx || !eth_p)
		return gnic_error(GNIC_ERR_INVALID, "eth_create: NULL argument");
	if (!attr) {
		gnic_eth_attr_init(&defaults);
		attr = &defaults;
	}
	st = check_attr(ctx, attr);
	if (st)
		return st;
	eth = calloc(1, sizeof(*eth));
	if (!eth)
		return gnic_error(GNIC_ERR_NOMEM, "eth_create: out of memory");
	eth->ctx = ctx;
	eth->attr = *attr;
	eth->stride = pow2_at_least(attr->buf_size, ETH_BUF_MIN);
	st = create_qp(eth);
	if (!st) {
		/* one buffer per receive slot: the provider may round the RQ up */
		eth->nbuf = eth->qp->dv.rq.wqe_cnt;
		st = alloc_pool(eth);
	}
	if (!st)
		st = export_dev(eth);
	if (st) {
		char why[512];

		snprintf(why, sizeof(why), "%s", gnic_last_error());
		eth_free(eth);
		return gnic_error(st, "%s", why);
	}
	*eth_p = eth;
	return GNIC_OK;
}

GNIC_API void gnic_eth_destroy(struct gnic_eth *eth)
{
	if (eth)
		eth_free(eth);
}

GNIC_API struct gnic_dev_eth *gnic_eth_dev(struct gnic_eth *eth)
{
	if (!eth)
		return NULL;
	return (struct gnic_dev_eth *)(uintptr_t)(eth->dev_host ? (uintptr_t)eth->dev_host
	                                                        : eth->dev_gpu);
}

GNIC_API uint8_t *gnic_eth_pool_host(struct gnic_eth *eth)
{
	return eth ? eth->pool_host : NULL;
}

GNIC_API uint32_t gnic_eth_buf_stride(const struct gnic_eth *eth)
{
	return eth ? eth->stride : 0;
}

GNIC_API uint32_t gnic_eth_nbuf(const struct gnic_eth *eth)
{
	return eth ? eth->nbuf : 0;
}

GNIC_API uint32_t gnic_eth_qpn(const struct gnic_eth *eth)
{
	return eth ? eth->qp->ibqp->qp_num : 0;
}

GNIC_API gnic_status_t gnic_eth_error(struct gnic_eth *eth, struct gnic_qp_error *err)
{
	if (!eth || !err)
		return gnic_error(GNIC_ERR_INVALID, "eth_error: NULL argument");
	return gnic_qp_error(eth->qp, err);
}

/* ---- rules ------------------------------------------------------------------- */

struct rule_buf {
	struct ibv_flow_attr attr;
	uint8_t specs[sizeof(struct ibv_flow_spec_eth) + sizeof(struct ibv_flow_spec_ipv6) +
	              sizeof(struct ibv_flow_spec_tcp_udp) +
	              sizeof(struct ibv_flow_spec_action_tag) +
	              sizeof(struct ibv_flow_spec_action_drop)];
};

/* prefix leading one bits of n bytes into mask (prefix 0: all of them) */
static void prefix_mask(uint8_t *mask, size_t n, unsigned prefix)
{
	if (!prefix)
		prefix = (unsigned)(n * 8);
	for (size_t i = 0; i < n; i++) {
		unsigned bits = prefix > 8 * i ? prefix - 8 * (unsigned)i : 0;

		mask[i] = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
	}
}

static gnic_status_t check_rule(const struct gnic_eth_rule *r)
{
	unsigned max_prefix = r->ip_version == 6 ? 128 : 32;

	if (r->match & ~(uint32_t)GNIC_ETH_MATCH_ALL)
		return gnic_error(GNIC_ERR_INVALID, "eth rule: unknown match bits %#x",
		                  r->match & ~(uint32_t)GNIC_ETH_MATCH_ALL);
	if (r->ip_version != 0 && r->ip_version != 4 && r->ip_version != 6)
		return gnic_error(GNIC_ERR_INVALID, "eth rule: ip_version %u (0, 4 or 6)",
		                  r->ip_version);
	if ((r->match & (GNIC_ETH_MATCH_SRC_IP | GNIC_ETH_MATCH_DST_IP)) && !r->ip_version)
		return gnic_error(GNIC_ERR_INVALID,
		                  "eth rule: an IP address match needs ip_version");
	/* a ConnectX matches the version on ethertype or on ip_version by model:
	 * a contradicting EtherType would steer differently by model */
	if ((r->match & GNIC_ETH_MATCH_ETHERTYPE) && r->ip_version &&
	    r->ethertype != (r->ip_version == 4 ? 0x0800 : 0x86dd))
		return gnic_error(GNIC_ERR_INVALID, "eth rule: ethertype %#x with ip_version %u",
		                  r->ethertype, r->ip_version);
	if (r->src_prefix > max_prefix || r->dst_prefix > max_prefix)
		return gnic_error(GNIC_ERR_INVALID, "eth rule: prefix %u above %u for IPv%u",
		                  r->src_prefix > r->dst_prefix ? r->src_prefix : r->dst_prefix,
		                  max_prefix, r->ip_version ? r->ip_version : 4);
	if (r->l4 != GNIC_ETH_L4_ANY && r->l4 != GNIC_ETH_L4_UDP && r->l4 != GNIC_ETH_L4_TCP)
		return gnic_error(GNIC_ERR_INVALID, "eth rule: l4 %u (0, UDP 17 or TCP 6)", r->l4);
	if ((r->match & (GNIC_ETH_MATCH_SRC_PORT | GNIC_ETH_MATCH_DST_PORT)) && !r->l4)
		return gnic_error(GNIC_ERR_INVALID, "eth rule: a port match needs l4 UDP or TCP");
	if (r->flow_tag > GNIC_MLX5_FLOW_TAG_MASK)
		return gnic_error(GNIC_ERR_INVALID, "eth rule: flow_tag %#x above 0xffffff",
		                  r->flow_tag);
	if (r->priority > GNIC_ETH_PRIO_MAX)
		return gnic_error(GNIC_ERR_INVALID, "eth rule: priority %u above %u", r->priority,
		                  GNIC_ETH_PRIO_MAX);
	if (r->action != GNIC_ETH_DELIVER && r->action != GNIC_ETH_DROP)
		return gnic_error(GNIC_ERR_INVALID, "eth rule: unknown action %u", r->action);
	return GNIC_OK;
}

/* Specs follow the attr unpadded (offset 20: 4-byte aligned, as each spec
 * struct is; the union struct ibv_flow_spec would want 8), so the header is
 * written through the 4-byte header-only struct. */
static void *add_spec(struct rule_buf *b, size_t *off, uint32_t type, size_t size)
{
	struct ibv_flow_spec_action_drop *s = (void *)(b->specs + *off);

	memset(s, 0, size);
	s->type = (enum ibv_flow_spec_type)type;
	s->size = (uint16_t)size;
	*off += size;
	b->attr.num_of_specs++;
	return s;
}

static void add_l3(struct rule_buf *b, size_t *off, const struct gnic_eth_rule *r)
{
	if (r->ip_version == 4) {
		struct ibv_flow_spec_ipv4 *s = add_spec(b, off, IBV_FLOW_SPEC_IPV4, sizeof(*s));

		if (r->match & GNIC_ETH_MATCH_SRC_IP) {
			memcpy(&s->val.src_ip, r->src_ip, 4);
			prefix_mask((uint8_t *)&s->mask.src_ip, 4, r->src_prefix);
		}
		if (r->match & GNIC_ETH_MATCH_DST_IP) {
			memcpy(&s->val.dst_ip, r->dst_ip, 4);
			prefix_mask((uint8_t *)&s->mask.dst_ip, 4, r->dst_prefix);
		}
		s->val.src_ip &= s->mask.src_ip;
		s->val.dst_ip &= s->mask.dst_ip;
	} else if (r->ip_version == 6) {
		struct ibv_flow_spec_ipv6 *s = add_spec(b, off, IBV_FLOW_SPEC_IPV6, sizeof(*s));

		if (r->match & GNIC_ETH_MATCH_SRC_IP) {
			prefix_mask(s->mask.src_ip, 16, r->src_prefix);
			for (int i = 0; i < 16; i++)
				s->val.src_ip[i] = r->src_ip[i] & s->mask.src_ip[i];
		}
		if (r->match & GNIC_ETH_MATCH_DST_IP) {
			prefix_mask(s->mask.dst_ip, 16, r->dst_prefix);
			for (int i = 0; i < 16; i++)
				s->val.dst_ip[i] = r->dst_ip[i] & s->mask.dst_ip[i];
		}
	}
}

static void build_rule(struct rule_buf *b, const struct gnic_eth_rule *r)
{
	size_t off = 0;

	memset(b, 0, sizeof(*b));
	b->attr.type = IBV_FLOW_ATTR_NORMAL;
	b->attr.priority = r->priority;
	b->attr.port = GNIC_PORT;
	if (r->match & (GNIC_ETH_MATCH_DST_MAC | GNIC_ETH_MATCH_ETHERTYPE)) {
		struct ibv_flow_spec_eth *s = add_spec(b, &off, IBV_FLOW_SPEC_ETH, sizeof(*s));

		if (r->match & GNIC_ETH_MATCH_DST_MAC) {
			memcpy(s->val.dst_mac, r->dst_mac, 6);
			memset(s->mask.dst_mac, 0xff, 6);
		}
		if (r->match & GNIC_ETH_MATCH_ETHERTYPE) {
			s->val.ether_type = htobe16(r->ethertype);
			s->mask.ether_type = 0xffff;
		}
	}
	add_l3(b, &off, r);
	if (r->l4) {
		struct ibv_flow_spec_tcp_udp *s = add_spec(
		    b, &off, r->l4 == GNIC_ETH_L4_UDP ? IBV_FLOW_SPEC_UDP : IBV_FLOW_SPEC_TCP,
		    sizeof(*s));

		if (r->match & GNIC_ETH_MATCH_SRC_PORT) {
			s->val.src_port = htobe16(r->src_port);
			s->mask.src_port = 0xffff;
		}
		if (r->match & GNIC_ETH_MATCH_DST_PORT) {
			s->val.dst_port = htobe16(r->dst_port);
			s->mask.dst_port = 0xffff;
		}
	}
	if (r->action == GNIC_ETH_DROP) {
		add_spec(b, &off, IBV_FLOW_SPEC_ACTION_DROP,
		         sizeof(struct ibv_flow_spec_action_drop));
	} else if (r->flow_tag) {
		struct ibv_flow_spec_action_tag *s =
		    add_spec(b, &off, IBV_FLOW_SPEC_ACTION_TAG, sizeof(*s));

		s->tag_id = r->flow_tag;
	}
	b->attr.size = (uint16_t)(sizeof(b->attr) + off);
}

GNIC_API gnic_status_t gnic_eth_rule_add(struct gnic_eth *eth, const struct gnic_eth_rule *rule,
                                         struct gnic_eth_flow **flow_p)
{
	struct gnic_eth_flow *f;
	struct rule_buf b;
	gnic_status_t st;

	if (!eth || !rule || !flow_p)
		return gnic_error(GNIC_ERR_INVALID, "eth_rule_add: NULL argument");
	st = check_rule(rule);
	if (st)
		return st;
	f = calloc(1, sizeof(*f));
	if (!f)
		return gnic_error(GNIC_ERR_NOMEM, "eth_rule_add: out of memory");
	build_rule(&b, rule);
	errno = 0;
	f->ibflow = ibv_create_flow(eth->qp->ibqp, &b.attr);
	if (!f->ibflow) {
		int e = errno ? errno : EINVAL;

		free(f);
		return gnic_error(e == EOPNOTSUPP ? GNIC_ERR_NOT_SUPPORTED : GNIC_ERR_SYSTEM,
		                  "eth_rule_add: create_flow on %s (QP %#x): %s", eth->ctx->device,
		                  eth->qp->ibqp->qp_num, strerror(e));
	}
	f->eth = eth;
	f->next = eth->flows;
	eth->flows = f;
	*flow_p = f;
	return GNIC_OK;
}

GNIC_API gnic_status_t gnic_eth_rule_remove(struct gnic_eth_flow *flow)
{
	struct gnic_eth_flow **pp;
	int r;

	if (!flow)
		return gnic_error(GNIC_ERR_INVALID, "eth_rule_remove: NULL argument");
	for (pp = &flow->eth->flows; *pp && *pp != flow; pp = &(*pp)->next)
		;
	if (!*pp)
		return gnic_error(GNIC_ERR_INVALID, "eth_rule_remove: not a rule of its queue");
	r = ibv_destroy_flow(flow->ibflow);
	*pp = flow->next;
	free(flow);
	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "eth_rule_remove: destroy_flow: %s",
		                  strerror(r));
	return GNIC_OK;
}

/* ---- counters ------------------------------------------------------------------ */

/* A hardware port's out_of_buffer counter (rdma-core's hw_counters). */
static gnic_status_t hw_out_of_buffer(struct gnic_eth *eth, uint64_t *v)
{
	char path[512];
	unsigned long long n;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%d/hw_counters/out_of_buffer",
	         gnic_config()->sysfs, eth->ctx->device, GNIC_PORT);
	f = fopen(path, "r");
	if (!f)
		return gnic_error(GNIC_ERR_NOT_SUPPORTED, "eth_stats: %s: %s", path,
		                  strerror(errno));
	ok = fscanf(f, "%llu", &n) == 1;
	fclose(f);
	if (!ok)
		return gnic_error(GNIC_ERR_SYSTEM, "eth_stats: %s holds no number", path);
	*v = n;
	return GNIC_OK;
}

GNIC_API gnic_status_t gnic_eth_stats(struct gnic_eth *eth, struct gnic_eth_stats *out)
{
	struct gemu_eth_stats s;
	struct gnic_eth_stats o;
	gnic_status_t st;
	int r;

	if (!eth || !out)
		return gnic_error(GNIC_ERR_INVALID, "eth_stats: NULL argument");
	if (!eth->ctx->v->emu_eth_stats) {
		memset(&o, 0xff, sizeof(o)); /* GNIC_ETH_STAT_UNKNOWN */
		st = hw_out_of_buffer(eth, &o.rx_out_of_buffer);
		if (!st)
			*out = o;
		return st;
	}
	r = eth->ctx->v->emu_eth_stats(eth->ctx->ibctx, &s);
	if (r)
		return gnic_error(GNIC_ERR_SYSTEM, "eth_stats: gemu_eth_stats: %s", strerror(r));
	out->rx_frames = s.rx_frames;
	out->rx_delivered = s.rx_delivered;
	out->rx_no_rule = s.rx_no_rule;
	out->rx_drop_rule = s.rx_drop_rule;
	out->rx_out_of_buffer = s.rx_no_wqe;
	out->rx_too_long = s.rx_too_long;
	out->tx_frames = s.tx_frames;
	out->rx_overrun = s.rx_overrun;
	out->tx_dropped = s.tx_dropped;
	return GNIC_OK;
}
