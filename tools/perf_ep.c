/* SPDX-License-Identifier: MIT */
/*
 * One side's verbs objects: context, PD, a send and a receive CQ, nqps RC
 * QPs and one registered buffer. Plain libibverbs calls only, so the same
 * code runs on gnic-emu or on any other provider the loader picks.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define RQ_DEPTH      64
#define MIN_RNR_TIMER 12 /* 0.64 ms */
#define QP_TIMEOUT    14 /* 4.096 us * 2^14 = 67 ms */
#define QP_RETRY      7
#define PERF_PORT     1

static struct ibv_device *pick_device(struct ibv_device **list, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!name[0] || !strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	return NULL;
}

/* The device named by --device (or the first), opened; exits if none. */
static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list, *dev;
	struct ibv_context *ctx;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		perf_fatal("ibv_get_device_list: %s (no verbs provider answered)", strerror(errno));
	dev = pick_device(list, n, name);
	if (!dev) {
		ibv_free_device_list(list);
		perf_fatal(name[0] ? "no verbs device named %s" : "no verbs devices found%s", name);
	}
	ctx = ibv_open_device(dev);
	if (!ctx)
		perf_fatal("ibv_open_device(%s): %s", ibv_get_device_name(dev), strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Limits of the device and port we honour. */
static void query_limits(struct perf_ep *ep, const struct perf_args *a, struct ibv_device_attr *d)
{
	struct ibv_port_attr port;
	int ret;

	ret = ibv_query_device(ep->ctx, d);
	if (ret)
		perf_fatal("ibv_query_device: %s", strerror(ret));
	ret = ibv_query_port(ep->ctx, PERF_PORT, &port);
	if (ret)
		perf_fatal("ibv_query_port: %s", strerror(ret));
	if (port.state != IBV_PORT_ACTIVE)
		perf_fatal("port %d of %s is not active", PERF_PORT,
		           ibv_get_device_name(ep->ctx->device));
	ep->mtu = port.active_mtu;
	ep->sq_depth = min_u32((uint32_t)a->tx_depth, (uint32_t)d->max_qp_wr);
	ep->rd_atomic =
	    min_u32(16, min_u32((uint32_t)d->max_qp_rd_atom, (uint32_t)d->max_qp_init_rd_atom));
	if (!ep->rd_atomic)
		ep->rd_atomic = 1;
	/* Signal often enough that the SQ never fills with unretired requests. */
	ep->sq_signal = ep->sq_depth / 4 ? min_u32(ep->sq_depth / 4, 64) : 1;
}

static struct ibv_cq *make_cq(struct perf_ep *ep, uint32_t want, int max_cqe)
{
	struct ibv_cq *cq =
	    ibv_create_cq(ep->ctx, (int)min_u32(want, (uint32_t)max_cqe), NULL, NULL, 0);

	if (!cq)
		perf_fatal("ibv_create_cq(%u): %s", want, strerror(errno));
	return cq;
}

static struct ibv_qp *make_qp(struct perf_ep *ep, uint32_t inline_len)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = ep->scq,
	    .recv_cq = ep->rcq,
	    .cap = {.max_send_wr = ep->sq_depth,
	            .max_recv_wr = RQ_DEPTH,
	            .max_send_sge = 1,
	            .max_recv_sge = 1,
	            .max_inline_data = inline_len},
	    .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(ep->pd, &init);

	if (qp)
		ep->max_inline = init.cap.max_inline_data;
	return qp;
}

static void make_qps(struct perf_ep *ep, int nqps)
{
	for (int q = 0; q < nqps; q++) {
		ep->qp[q] = make_qp(ep, PERF_INLINE);
		if (!ep->qp[q]) /* a provider without inline data still works */
			ep->qp[q] = make_qp(ep, 0);
		if (!ep->qp[q])
			perf_fatal("ibv_create_qp (RC, depth %u): %s", ep->sq_depth,
			           strerror(errno));
		ep->psn[q] = (uint32_t)lrand48() & 0xffffff;
	}
	ep->nqps = nqps;
}

static void make_buffer(struct perf_ep *ep, size_t len)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
	             IBV_ACCESS_REMOTE_ATOMIC;
	void *p;

	if (posix_memalign(&p, 4096, len))
		perf_fatal("cannot allocate a %zu-byte buffer", len);
	memset(p, 0, len); /* fault the pages in before anything is timed */
	ep->buf = p;
	ep->len = len;
	ep->mr = ibv_reg_mr(ep->pd, p, len, access);
	if (!ep->mr)
		perf_fatal("ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
}

struct perf_ep *perf_ep_open(const struct perf_args *a, enum perf_side side, size_t len)
{
	struct perf_ep *ep = calloc(1, sizeof(*ep));
	struct ibv_device_attr d;
	int nqps = a->qps;

	if (!ep)
		perf_fatal("out of memory");
	ep->side = side;
	ep->ctx = open_device(a->device);
	query_limits(ep, a, &d);
	ep->pd = ibv_alloc_pd(ep->ctx);
	if (!ep->pd)
		perf_fatal("ibv_alloc_pd: %s", strerror(errno));
	ep->scq = make_cq(ep, (uint32_t)nqps * ep->sq_depth + 16, d.max_cqe);
	ep->rcq = make_cq(ep, (uint32_t)nqps * RQ_DEPTH + 16, d.max_cqe);
	make_qps(ep, nqps);
	make_buffer(ep, len);
	return ep;
}

void perf_ep_info(const struct perf_ep *ep, struct perf_ep_info *info)
{
	struct ibv_port_attr port;
	int ret;

	memset(info, 0, sizeof(*info));
	ret = ibv_query_gid(ep->ctx, PERF_PORT, 0, &info->gid);
	if (ret)
		perf_fatal("ibv_query_gid: %s", strerror(ret));
	ret = ibv_query_port(ep->ctx, PERF_PORT, &port);
	if (ret)
		perf_fatal("ibv_query_port: %s", strerror(ret));
	info->lid = port.lid;
	info->addr = (uintptr_t)ep->buf;
	info->rkey = ep->mr->rkey;
	info->len = ep->len;
	info->nqps = (uint32_t)ep->nqps;
	for (int q = 0; q < ep->nqps; q++) {
		info->qpn[q] = ep->qp[q]->qp_num;
		info->psn[q] = ep->psn[q];
	}
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, const char *step)
{
	int ret = ibv_modify_qp(qp, attr, mask);

	if (ret)
		perf_fatal("ibv_modify_qp(QP 0x%x to %s): %s", qp->qp_num, step, strerror(ret));
}

static void to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {
	    .qp_state = IBV_QPS_INIT,
	    .pkey_index = 0,
	    .port_num = PERF_PORT,
	    .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	                       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};

	modify(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	       "INIT");
}

/* RoCE ports (and gnic-emu) address peers by GID; IB ports may use LIDs. */
static void to_rtr(const struct perf_ep *ep, struct ibv_qp *qp, const struct perf_ep_info *peer,
                   int q)
{
	static const union ibv_gid zero_gid;
	struct ibv_qp_attr attr = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = ep->mtu,
	    .dest_qp_num = peer->qpn[q],
	    .rq_psn = peer->psn[q],
	    .max_dest_rd_atomic = (uint8_t)ep->rd_atomic,
	    .min_rnr_timer = MIN_RNR_TIMER,
	    .ah_attr = {.dlid = peer->lid, .port_num = PERF_PORT},
	};

	if (memcmp(&peer->gid, &zero_gid, sizeof(zero_gid))) {
		attr.ah_attr.is_global = 1;
		attr.ah_attr.grh.dgid = peer->gid;
		attr.ah_attr.grh.sgid_index = 0;
		attr.ah_attr.grh.hop_limit = 64;
	}
	modify(qp, &attr,
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	       "RTR");
}

static void to_rts(const struct perf_ep *ep, struct ibv_qp *qp, int q)
{
	struct ibv_qp_attr attr = {
	    .qp_state = IBV_QPS_RTS,
	    .sq_psn = ep->psn[q],
	    .timeout = QP_TIMEOUT,
	    .retry_cnt = QP_RETRY,
	    .rnr_retry = QP_RETRY,
	    .max_rd_atomic = (uint8_t)ep->rd_atomic,
	};

	modify(qp, &attr,
	       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	           IBV_QP_MAX_QP_RD_ATOMIC,
	       "RTS");
}

void perf_ep_connect(struct perf_ep *ep, const struct perf_ep_info *peer)
{
	if (peer->nqps != (uint32_t)ep->nqps)
		perf_fatal("the peer has %u QPs, this side %d", peer->nqps, ep->nqps);
	for (int q = 0; q < ep->nqps; q++) {
		to_init(ep->qp[q]);
		to_rtr(ep, ep->qp[q], peer, q);
		to_rts(ep, ep->qp[q], q);
	}
	ep->remote = (struct perf_remote){.addr = peer->addr, .rkey = peer->rkey, .len = peer->len};
}

static void check(int ret, const char *what)
{
	if (ret)
		perf_fatal("%s: %s", what, strerror(ret));
}

void perf_ep_close(struct perf_ep *ep)
{
	if (!ep)
		return;
	for (int q = 0; q < ep->nqps; q++)
		check(ibv_destroy_qp(ep->qp[q]), "ibv_destroy_qp");
	check(ibv_dereg_mr(ep->mr), "ibv_dereg_mr");
	check(ibv_destroy_cq(ep->scq), "ibv_destroy_cq");
	check(ibv_destroy_cq(ep->rcq), "ibv_destroy_cq");
	check(ibv_dealloc_pd(ep->pd), "ibv_dealloc_pd");
	check(ibv_close_device(ep->ctx), "ibv_close_device");
	free(ep->buf);
	free(ep);
}

void perf_ep_info_encode(const struct perf_ep_info *info, uint8_t *wire)
{
	uint8_t *pos = wire + 16;

	memcpy(wire, info->gid.raw, 16);
	perf_put32(&pos, info->lid);
	perf_put64(&pos, info->addr);
	perf_put32(&pos, info->rkey);
	perf_put64(&pos, info->len);
	perf_put32(&pos, info->nqps);
	for (int q = 0; q < PERF_MAX_QPS; q++) {
		perf_put32(&pos, info->qpn[q]);
		perf_put32(&pos, info->psn[q]);
	}
}

void perf_ep_info_decode(const uint8_t *wire, struct perf_ep_info *info)
{
	const uint8_t *pos = wire + 16;

	memcpy(info->gid.raw, wire, 16);
	info->lid = (uint16_t)perf_get32(&pos);
	info->addr = perf_get64(&pos);
	info->rkey = perf_get32(&pos);
	info->len = perf_get64(&pos);
	info->nqps = perf_get32(&pos);
	if (info->nqps > PERF_MAX_QPS)
		perf_fatal("the peer announced %u QPs (at most %d)", info->nqps, PERF_MAX_QPS);
	for (int q = 0; q < PERF_MAX_QPS; q++) {
		info->qpn[q] = perf_get32(&pos);
		info->psn[q] = perf_get32(&pos);
	}
}

/* Where ibv_get_device_list came from: the libibverbs this process uses. */
static void probe_library(struct perf_env *env)
{
	void *sym = dlsym(RTLD_DEFAULT, "ibv_get_device_list");
	Dl_info info;

	snprintf(env->libibverbs, sizeof(env->libibverbs), "unknown");
	if (sym && dladdr(sym, &info) && info.dli_fname)
		snprintf(env->libibverbs, sizeof(env->libibverbs), "%s", info.dli_fname);
}

void perf_env_probe(const struct perf_args *a, struct perf_env *env)
{
	struct ibv_device **list, *dev;
	int n = 0;

	memset(env, 0, sizeof(*env));
	probe_library(env);
	env->provider = "none";
	snprintf(env->device, sizeof(env->device), "none");
	if (a->test->kind == PERF_KIND_LOCAL)
		return; /* no NIC involved: do not wake a provider up */
	list = ibv_get_device_list(&n);
	if (!list)
		return;
	dev = pick_device(list, n, a->device);
	if (dev) {
		snprintf(env->device, sizeof(env->device), "%s", ibv_get_device_name(dev));
		/* by the library, not the name: gnic-emu names devices like rdma-core */
		env->provider = dlsym(RTLD_DEFAULT, "gemu_get_device_list") ? "gnic-emu" : "other";
	}
	ibv_free_device_list(list);
}
