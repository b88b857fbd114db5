// SPDX-License-Identifier: MIT
/* Shared helpers for the gnic-emu tests; see common.h. */
#define _GNU_SOURCE /* sched_setaffinity */
#include "common.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char t_case_name[160];

void t_case(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t_case_name, sizeof(t_case_name), fmt, ap);
	va_end(ap);
	printf("case: %s\n", t_case_name);
	fflush(stdout);
}

void t_run_cases(const struct t_named_case *cases, size_t n, int argc, char **argv)
{
	int ran = 0;

	for (size_t i = 0; i < n; i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		t_case("%s", cases[i].name);
		cases[i].fn();
		ran++;
	}
	if (!ran)
		T_FAIL("no case named %s", argv[1]);
}

void t_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d", file, line);
	if (t_case_name[0])
		fprintf(stderr, " [%s]", t_case_name);
	fprintf(stderr, ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(T_EXIT_FAIL);
}

void t_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(T_EXIT_SKIP);
}

void t_check_mem(const char *file, int line, const char *what, const void *got, const void *want,
                 size_t len)
{
	const uint8_t *g = got, *w = want;
	size_t first = len, ndiff = 0;

	for (size_t i = 0; i < len; i++) {
		if (g[i] == w[i])
			continue;
		if (first == len)
			first = i;
		ndiff++;
	}
	if (ndiff)
		t_fail(file, line,
		       "%s: %zu of %zu bytes differ, first at offset %zu: got 0x%02x, want 0x%02x",
		       what, ndiff, len, first, g[first], w[first]);
}

void t_check_bytes(const char *file, int line, const char *what, const void *buf, int c, size_t len)
{
	const uint8_t *b = buf;
	size_t first = len, ndiff = 0;

	for (size_t i = 0; i < len; i++) {
		if (b[i] == (uint8_t)c)
			continue;
		if (first == len)
			first = i;
		ndiff++;
	}
	if (ndiff)
		t_fail(file, line,
		       "%s: %zu of %zu bytes changed, first at offset %zu: 0x%02x, want 0x%02x",
		       what, ndiff, len, first, b[first], (uint8_t)c);
}

static const char *const wc_status_names[] = {
    [IBV_WC_SUCCESS] = "SUCCESS",
    [IBV_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
    [IBV_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
    [IBV_WC_LOC_EEC_OP_ERR] = "LOC_EEC_OP_ERR",
    [IBV_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
    [IBV_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
    [IBV_WC_MW_BIND_ERR] = "MW_BIND_ERR",
    [IBV_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
    [IBV_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",
    [IBV_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
    [IBV_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
    [IBV_WC_REM_OP_ERR] = "REM_OP_ERR",
    [IBV_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
    [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
    [IBV_WC_LOC_RDD_VIOL_ERR] = "LOC_RDD_VIOL_ERR",
    [IBV_WC_REM_INV_RD_REQ_ERR] = "REM_INV_RD_REQ_ERR",
    [IBV_WC_REM_ABORT_ERR] = "REM_ABORT_ERR",
    [IBV_WC_INV_EECN_ERR] = "INV_EECN_ERR",
    [IBV_WC_INV_EEC_STATE_ERR] = "INV_EEC_STATE_ERR",
    [IBV_WC_FATAL_ERR] = "FATAL_ERR",
    [IBV_WC_RESP_TIMEOUT_ERR] = "RESP_TIMEOUT_ERR",
    [IBV_WC_GENERAL_ERR] = "GENERAL_ERR",
};

const char *t_wc_status_str(int status)
{
	if (status < 0 || status >= (int)(sizeof(wc_status_names) / sizeof(wc_status_names[0])) ||
	    !wc_status_names[status])
		return "?";
	return wc_status_names[status];
}

const char *t_wc_opcode_str(int opcode)
{
	switch (opcode) {
	case IBV_WC_SEND:
		return "SEND";
	case IBV_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WC_RDMA_READ:
		return "RDMA_READ";
	case IBV_WC_COMP_SWAP:
		return "COMP_SWAP";
	case IBV_WC_FETCH_ADD:
		return "FETCH_ADD";
	case IBV_WC_BIND_MW:
		return "BIND_MW";
	case IBV_WC_LOCAL_INV:
		return "LOCAL_INV";
	case IBV_WC_RECV:
		return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return "RECV_RDMA_WITH_IMM";
	default:
		return "?";
	}
}

const char *t_qp_state_str(int state)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS",
	                                    "SQD",   "SQE",  "ERR", "UNKNOWN"};

	if (state < 0 || state > IBV_QPS_UNKNOWN)
		return "?";
	return names[state];
}

void t_print_wc(FILE *f, const struct ibv_wc *wc)
{
	fprintf(f,
	        "  wc: wr_id %llu status %s(%d) opcode %s(%d) byte_len %u imm 0x%08x "
	        "flags 0x%x qp_num 0x%x vendor_err 0x%x\n",
	        (unsigned long long)wc->wr_id, t_wc_status_str(wc->status), wc->status,
	        t_wc_opcode_str(wc->opcode), wc->opcode, wc->byte_len, (unsigned)wc->imm_data,
	        wc->wc_flags, wc->qp_num, wc->vendor_err);
}

void t_check_wc(const char *file, int line, const struct ibv_wc *wc, uint64_t wr_id,
                enum ibv_wc_status status, int opcode)
{
	bool bad = wc->wr_id != wr_id || wc->status != status;

	/* The opcode of an error completion is undefined (IB spec), so only
	 * successful completions are held to it. */
	if (opcode >= 0 && status == IBV_WC_SUCCESS && (int)wc->opcode != opcode)
		bad = true;
	if (!bad)
		return;
	t_print_wc(stderr, wc);
	t_fail(file, line, "completion: want wr_id %llu status %s opcode %s",
	       (unsigned long long)wr_id, t_wc_status_str(status),
	       opcode >= 0 ? t_wc_opcode_str(opcode) : "(any)");
}

uint8_t t_pattern_byte(size_t i, uint32_t seed)
{
	uint32_t x = seed * 0x9e3779b1u ^ (uint32_t)i * 0x85ebca6bu ^ (uint32_t)(i >> 32);

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return (uint8_t)x;
}

void t_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++)
		b[i] = t_pattern_byte(i, seed);
}

void *t_alloc(size_t len, int fill)
{
	void *p = NULL;

	if (posix_memalign(&p, T_PAGE, len ? len : 1))
		T_FAIL("posix_memalign(%zu) failed", len);
	memset(p, fill, len);
	return p;
}

uint64_t t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Every thread of the process (gnic-emu's workers too) onto one CPU of the
 * process's mask, or back to that mask. On one CPU a thread that wakes another
 * is often preempted by it at once: an event raised before the state it
 * announces is then seen before that state. */
static cpu_set_t t_saved_cpus;

static void set_all_threads(const cpu_set_t *set)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");

	CHECK(dir != NULL);
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			sched_setaffinity(atoi(d->d_name), sizeof(*set), set); /* may have exited */
	closedir(dir);
}

void t_pin_one_cpu(void)
{
	cpu_set_t one;
	int cpu = 0;

	CHECK_OK(sched_getaffinity(0, sizeof(t_saved_cpus), &t_saved_cpus));
	while (!CPU_ISSET(cpu, &t_saved_cpus))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	set_all_threads(&one);
}

void t_unpin(void)
{
	set_all_threads(&t_saved_cpus);
}

void t_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* ---- verbs helpers ------------------------------------------------------
 * Left out of the unit tests' build (T_NO_VERBS): they link no libibverbs. */
#ifndef T_NO_VERBS

struct ibv_context *t_open(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list)
		T_FAIL("ibv_get_device_list: NULL, errno %d (%s); is the test linked to gnic-emu's "
		       "libibverbs.so.1 in <build>/emu?",
		       errno, strerror(errno));
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			T_FAIL("ibv_open_device(%s): errno %d (%s)", name, errno, strerror(errno));
		break;
	}
	ibv_free_device_list(list);
	if (!ctx)
		T_FAIL("device %s not found among %d devices", name, n);
	return ctx;
}

struct ibv_cq *t_cq(struct ibv_context *ctx, int cqe)
{
	return CHECK_PTR(ibv_create_cq(ctx, cqe, NULL, NULL, 0));
}

struct ibv_mr *t_reg(struct ibv_pd *pd, void *buf, size_t len, int access)
{
	return CHECK_PTR(ibv_reg_mr(pd, buf, len, access));
}

void t_qp_caps_default(struct t_qp_caps *c)
{
	*c = (struct t_qp_caps){.send_wr = 64,
	                        .recv_wr = 64,
	                        .send_sge = 4,
	                        .recv_sge = 4,
	                        .inline_data = 64,
	                        .sq_sig_all = 0};
}

struct ibv_qp *t_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
                    const struct t_qp_caps *caps, struct ibv_qp_cap *actual)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = scq,
	    .recv_cq = rcq,
	    .cap = {.max_send_wr = caps->send_wr,
	            .max_recv_wr = caps->recv_wr,
	            .max_send_sge = caps->send_sge,
	            .max_recv_sge = caps->recv_sge,
	            .max_inline_data = caps->inline_data},
	    .qp_type = IBV_QPT_RC,
	    .sq_sig_all = caps->sq_sig_all,
	};
	struct ibv_qp *qp = CHECK_PTR(ibv_create_qp(pd, &ia));

	/* ibv_create_qp reports the capabilities actually granted. */
	CHECK_GE(ia.cap.max_send_wr, caps->send_wr);
	CHECK_GE(ia.cap.max_recv_wr, caps->recv_wr);
	CHECK_GE(ia.cap.max_send_sge, caps->send_sge);
	CHECK_GE(ia.cap.max_recv_sge, caps->recv_sge);
	CHECK_GE(ia.cap.max_inline_data, caps->inline_data);
	if (actual)
		*actual = ia.cap;
	return qp;
}

struct ibv_qp *t_qp_on(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type, uint32_t depth)
{
	struct ibv_qp_init_attr a = {.send_cq = cq,
	                             .recv_cq = cq,
	                             .cap = {.max_send_wr = depth,
	                                     .max_recv_wr = depth,
	                                     .max_send_sge = 1,
	                                     .max_recv_sge = 1},
	                             .qp_type = type};

	return CHECK_PTR(ibv_create_qp(pd, &a));
}

struct ibv_qp *t_small_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	return t_qp_on(pd, cq, IBV_QPT_RC, 4);
}

struct ibv_qp_init_attr_ex t_qp_ex_attr(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type,
                                        uint64_t ops)
{
	return (struct ibv_qp_init_attr_ex){
	    .send_cq = cq,
	    .recv_cq = cq,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = type,
	    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	    .pd = pd,
	    .send_ops_flags = ops};
}

struct mlx5dv_qp t_dv_qp(struct ibv_qp *qp)
{
	struct mlx5dv_qp dv;
	struct mlx5dv_obj o = {.qp = {.in = qp, .out = &dv}};

	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_QP));
	return dv;
}

uintptr_t t_bf_reg(struct ibv_qp *qp)
{
	return (uintptr_t)t_dv_qp(qp).bf.reg;
}

void t_xpair_finish(struct t_xpair *xp, size_t len, int guard)
{
	struct t_pair *p = &xp->p;

	t_connect(p->qp[0], &p->ep[1], &p->opts);
	t_connect(p->qp[1], &p->ep[0], &p->opts);
	xp->x = CHECK_PTR(ibv_qp_to_qp_ex(p->qp[0]));
	xp->dv = t_dv_qp(p->qp[0]);
	xp->a = t_alloc(len, 0);
	xp->b = t_alloc(len, guard);
	xp->amr = t_reg(p->pd, xp->a, len, T_ACCESS_ALL);
	xp->bmr = t_reg(p->pd, xp->b, len, T_ACCESS_ALL);
}

void t_xpair_destroy(struct t_xpair *xp)
{
	CHECK_OK(ibv_dereg_mr(xp->amr));
	CHECK_OK(ibv_dereg_mr(xp->bmr));
	t_pair_destroy(&xp->p);
	free(xp->a);
	free(xp->b);
}

void t_conn_opts_default(struct t_conn_opts *o)
{
	*o = (struct t_conn_opts){.access = T_ACCESS_ALL,
	                          .timeout = 14, /* 4.096 us << 14 = 67 ms */
	                          .retry_cnt = 7,
	                          .rnr_retry = 7, /* 7 = retry forever */
	                          .min_rnr_timer = 1,
	                          .max_rd_atomic = 8,
	                          .max_dest_rd_atomic = 8,
	                          .sq_psn = 0x1000,
	                          .rq_psn = 0x1000,
	                          .mtu = IBV_MTU_4096,
	                          .sgid_index = T_GID_INDEX};
}

void t_local_ep(struct ibv_qp *qp, struct t_ep *ep)
{
	memset(ep, 0, sizeof(*ep));
	CHECK_OK(ibv_query_gid(qp->context, 1, T_GID_INDEX, &ep->gid));
	ep->qpn = qp->qp_num;
}

uint16_t t_fabric_port(void)
{
	const char *s = getenv("GNIC_EMU_PORT");

	return (uint16_t)(s && *s ? atoi(s) : 4791);
}

void t_fabric_id(struct ibv_context *ctx, union ibv_gid *id)
{
	uint16_t port = htons(t_fabric_port());
	union ibv_gid gid;

	CHECK_OK(ibv_query_gid(ctx, 1, T_GID_INDEX, &gid));
	memset(id, 0, sizeof(*id));
	memcpy(&id->raw[8], &port, 2);
	id->raw[10] = id->raw[11] = 0xff;
	memcpy(&id->raw[12], &gid.raw[12], 4);
}

int t_qp_to_init(struct ibv_qp *qp, const struct t_conn_opts *o)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
	                        .pkey_index = 0,
	                        .port_num = 1,
	                        .qp_access_flags = (unsigned)o->access};

	return ibv_modify_qp(qp, &a,
	                     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int t_qp_to_rtr(struct ibv_qp *qp, const struct t_ep *peer, const struct t_conn_opts *o)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
	                        .path_mtu = o->mtu,
	                        .dest_qp_num = peer->qpn,
	                        .rq_psn = o->rq_psn,
	                        .max_dest_rd_atomic = o->max_dest_rd_atomic,
	                        .min_rnr_timer = o->min_rnr_timer};

	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = o->sgid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(qp, &a,
	                     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int t_qp_to_rts(struct ibv_qp *qp, const struct t_conn_opts *o)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS,
	                        .timeout = o->timeout,
	                        .retry_cnt = o->retry_cnt,
	                        .rnr_retry = o->rnr_retry,
	                        .sq_psn = o->sq_psn,
	                        .max_rd_atomic = o->max_rd_atomic};

	return ibv_modify_qp(qp, &a,
	                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int t_qp_to(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = {.qp_state = state};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

void t_connect(struct ibv_qp *qp, const struct t_ep *peer, const struct t_conn_opts *o)
{
	CHECK_OK(t_qp_to_init(qp, o));
	CHECK_OK(t_qp_to_rtr(qp, peer, o));
	CHECK_OK(t_qp_to_rts(qp, o));
	CHECK_EQ(t_qp_state(qp), IBV_QPS_RTS);
}

void t_reconnect(struct ibv_qp *qp, const struct t_ep *peer, const struct t_conn_opts *o)
{
	CHECK_OK(t_qp_to(qp, IBV_QPS_RESET));
	CHECK_EQ(t_qp_state(qp), IBV_QPS_RESET);
	t_connect(qp, peer, o);
}

enum ibv_qp_state t_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia));
	return a.qp_state;
}

void t_pair_create(struct t_pair *p, struct ibv_context *ctx, const struct t_qp_caps *caps,
                   const struct t_conn_opts *opts, int cqe)
{
	struct t_qp_caps dcaps;

	memset(p, 0, sizeof(*p));
	if (!caps) {
		t_qp_caps_default(&dcaps);
		caps = &dcaps;
	}
	if (opts)
		p->opts = *opts;
	else
		t_conn_opts_default(&p->opts);
	p->ctx = ctx;
	p->pd = CHECK_PTR(ibv_alloc_pd(ctx));
	for (int i = 0; i < 2; i++) {
		p->scq[i] = t_cq(ctx, cqe ? cqe : 256);
		p->rcq[i] = t_cq(ctx, cqe ? cqe : 256);
		p->qp[i] = t_qp(p->pd, p->scq[i], p->rcq[i], caps, &p->cap[i]);
		t_local_ep(p->qp[i], &p->ep[i]);
	}
	t_connect(p->qp[0], &p->ep[1], &p->opts);
	t_connect(p->qp[1], &p->ep[0], &p->opts);
}

void t_pair_reconnect(struct t_pair *p)
{
	t_reconnect(p->qp[0], &p->ep[1], &p->opts);
	t_reconnect(p->qp[1], &p->ep[0], &p->opts);
}

void t_pair_destroy(struct t_pair *p)
{
	for (int i = 0; i < 2; i++) {
		if (p->qp[i])
			CHECK_OK(ibv_destroy_qp(p->qp[i]));
		p->qp[i] = NULL;
	}
	for (int i = 0; i < 2; i++) {
		CHECK_OK(ibv_destroy_cq(p->scq[i]));
		CHECK_OK(ibv_destroy_cq(p->rcq[i]));
	}
	CHECK_OK(ibv_dealloc_pd(p->pd));
}

void t_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(qp, wr, &bad);

	if (ret)
		T_FAIL("ibv_post_send(qp 0x%x, wr_id %llu) returned %d (%s), bad_wr wr_id %lld",
		       qp->qp_num, (unsigned long long)wr->wr_id, ret, strerror(ret),
		       bad ? (long long)bad->wr_id : -1LL);
}

void t_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad = NULL;
	int ret = ibv_post_recv(qp, wr, &bad);

	if (ret)
		T_FAIL("ibv_post_recv(qp 0x%x, wr_id %llu) returned %d (%s), bad_wr wr_id %lld",
		       qp->qp_num, (unsigned long long)wr->wr_id, ret, strerror(ret),
		       bad ? (long long)bad->wr_id : -1LL);
}

void t_post_recv_buf(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};

	t_post_recv(qp, &wr);
}

/* Spinning is fine for the first few polls; after that, yield the core to
 * the engine thread (these machines have two). */
static void t_backoff(unsigned *idle)
{
	if (++*idle > 64) {
		struct timespec ts = {.tv_nsec = 20000};

		nanosleep(&ts, NULL);
	}
}

void t_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc, const char *what)
{
	t_poll_timeout(cq, n, wc, T_WAIT_MS, what);
}

void t_poll_timeout(struct ibv_cq *cq, int n, struct ibv_wc *wc, unsigned ms, const char *what)
{
	uint64_t deadline = t_now_ms() + ms;
	unsigned idle = 0;
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			T_FAIL("ibv_poll_cq returned %d while waiting for %s", r, what);
		got += r;
		if (r) {
			idle = 0;
			continue;
		}
		if (t_now_ms() > deadline) {
			for (int i = 0; i < got; i++)
				t_print_wc(stderr, &wc[i]);
			T_FAIL("timed out after %u ms waiting for %d completion(s) of %s: got %d",
			       ms, n, what, got);
		}
		t_backoff(&idle);
	}
}

struct ibv_wc t_poll1(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	t_poll(cq, 1, &wc, what);
	return wc;
}

void t_expect_empty(struct ibv_cq *cq, const char *what)
{
	uint64_t end = t_now_ms() + 30;
	struct ibv_wc wc;

	do {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0)
			T_FAIL("ibv_poll_cq returned %d (%s)", r, what);
		if (r > 0) {
			t_print_wc(stderr, &wc);
			T_FAIL("unexpected completion: %s", what);
		}
		t_sleep_ms(1);
	} while (t_now_ms() < end);
}

struct ibv_wc t_write_once(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *src,
                           struct ibv_mr *dst, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)src->addr, .length = len, .lkey = src->lkey};
	struct ibv_send_wr wr = {
	    .wr_id = wr_id,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)dst->addr, .rkey = dst->rkey}};
	struct ibv_wc wc;

	t_post_send(qp, &wr);
	t_poll_timeout(cq, 1, &wc, 10000, "the WRITE's completion");
	return wc;
}

#endif /* T_NO_VERBS */
