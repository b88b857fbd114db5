// SPDX-License-Identifier: MIT
/*
 * Extended QPs (ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) and
 * the ibv_wr_* post API, against rdma-core's mlx5 provider:
 *
 *   caps    SQ sizing from send_ops_flags (mlx5 sq_overhead: no memory-window
 *           room unless BIND_MW / LOCAL_INV), the flags mlx5 refuses or that
 *           are not emulated (EOPNOTSUPP), ibv_qp_to_qp_ex;
 *   ops     each opcode and data setter: the WQE bytes in the SQ equal those
 *           ibv_post_send writes for the same request, and the data lands;
 *   abort   ibv_wr_abort discards the WQEs since ibv_wr_start, and the next
 *           batch takes their place in the SQ;
 *   errors  what wr_complete returns (ENOMEM, EINVAL, EOPNOTSUPP), and that
 *           a failed batch posts nothing, not even its good WQEs;
 *   signal  wr_flags: unsignaled WQEs retire with the next signaled one;
 *   wrap    batches of mixed-size WQEs through a small SQ, hundreds of times
 *           around it, every byte checked.
 */
#include <infiniband/mlx5dv.h>

#include "common.h"

#define BUF_LEN (64 * 1024)
#define GUARD   0xee

static struct ibv_context *ctx;

static struct ibv_qp *ex_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, uint64_t ops,
                            struct ibv_qp_cap *cap, int sig_all, int *err)
{
	struct ibv_qp_init_attr_ex a = {.send_cq = scq,
	                                .recv_cq = rcq,
	                                .cap = *cap,
	                                .qp_type = IBV_QPT_RC,
	                                .sq_sig_all = sig_all,
	                                .comp_mask =
	                                    IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	                                .pd = pd,
	                                .send_ops_flags = ops};
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp_ex(pd->context, &a);
	*err = qp ? 0 : errno;
	if (qp)
		*cap = a.cap;
	return qp;
}

#define OPS_ALL                                                                                    \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |    \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                                 \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static void xpair_create(struct t_xpair *xp, uint64_t ops, const struct ibv_qp_cap *cap, int cqe,
                         int sig_all)
{
	struct t_pair *p = &xp->p;
	int err;

	memset(xp, 0, sizeof(*xp));
	t_conn_opts_default(&p->opts);
	p->ctx = ctx;
	p->pd = CHECK_PTR(ibv_alloc_pd(ctx));
	for (int i = 0; i < 2; i++) {
		p->scq[i] = t_cq(ctx, cqe);
		p->rcq[i] = t_cq(ctx, cqe);
		p->cap[i] = *cap;
		p->qp[i] = ex_qp(p->pd, p->scq[i], p->rcq[i], ops, &p->cap[i], sig_all, &err);
		if (!p->qp[i])
			T_FAIL("ibv_create_qp_ex(send_ops_flags 0x%llx): %s",
			       (unsigned long long)ops, strerror(err));
		t_local_ep(p->qp[i], &p->ep[i]);
	}
	t_xpair_finish(xp, BUF_LEN, GUARD);
}

/* The SQ producer index software last rang (doorbell record). */
static uint16_t sq_pi(const struct t_xpair *xp)
{
	return (uint16_t)be32toh(__atomic_load_n(&xp->dv.dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE));
}

/* The WQE at basic block idx, wrapping: returns its size in basic blocks. */
static uint32_t sq_wqe(const struct t_xpair *xp, uint32_t idx, uint8_t *dst)
{
	const uint8_t *sq = xp->dv.sq.buf;
	uint32_t mask = xp->dv.sq.wqe_cnt - 1, bb;
	const struct mlx5_wqe_ctrl_seg *c;

	memcpy(dst, sq + (size_t)(idx & mask) * 64, 64);
	c = (const void *)dst;
	bb = ((be32toh(c->qpn_ds) & 0x3f) + 3) / 4;
	CHECK(bb >= 1 && bb <= 16);
	for (uint32_t i = 1; i < bb; i++)
		memcpy(dst + i * 64, sq + (size_t)((idx + i) & mask) * 64, 64);
	return bb;
}

/* ---- caps ------------------------------------------------------------------ */

/* mlx5's sizing for an RC QP with send_ops_flags (verbs.c): the reference
 * the emulator must match. Returns the WQE size, 0 when it does not fit. */
static uint32_t mlx5_overhead(uint64_t ops)
{
	uint32_t size = 16;

	if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	           IBV_QP_EX_WITH_RDMA_READ))
		size = 32;
	if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
		size = 48;
	return size;
}

static uint32_t align_u32(uint32_t v, uint32_t a)
{
	return (v + a - 1) / a * a;
}

static uint32_t pow2_u32(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static void check_caps(struct ibv_pd *pd, struct ibv_cq *cq, uint64_t ops, uint32_t wr,
                       uint32_t sge, uint32_t inl)
{
	struct ibv_qp_cap cap = {.max_send_wr = wr,
	                         .max_recv_wr = 1,
	                         .max_send_sge = sge,
	                         .max_recv_sge = 1,
	                         .max_inline_data = inl};
	uint32_t ovh = mlx5_overhead(ops), size = ovh + sge * 16, isz = 0, wqe, sq;
	struct mlx5dv_qp dv;
	struct mlx5dv_obj obj = {.qp = {.out = &dv}};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp *qp;
	int err;

	if (inl)
		isz = ovh + align_u32(4 + inl, 16);
	wqe = align_u32(size > isz ? size : isz, 64);
	sq = pow2_u32(wr * wqe);
	t_case("caps: send_ops_flags 0x%llx, %u WRs, %u SGEs, %u inline: WQE %u B, SQ %u BBs",
	       (unsigned long long)ops, wr, sge, inl, wqe, sq / 64);
	qp = ex_qp(pd, cq, cq, ops, &cap, 0, &err);
	if (!qp)
		T_FAIL("ibv_create_qp_ex: %s", strerror(err));
	CHECK_EQ(cap.max_send_wr, sq / wqe);
	CHECK_EQ(cap.max_inline_data, wqe - ovh - 4);
	CHECK_EQ(cap.max_send_sge, sge);
	obj.qp.in = qp;
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP));
	CHECK_EQ(dv.sq.wqe_cnt, sq / 64);
	CHECK_EQ(dv.sq.stride, 64);
	CHECK_OK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia));
	CHECK_EQ(qia.cap.max_inline_data, wqe - ovh - 4);
	CHECK_EQ(qia.cap.max_send_wr, sq / wqe);
	CHECK_OK(ibv_destroy_qp(qp));
}

static void check_refused(struct ibv_pd *pd, struct ibv_cq *cq, uint64_t ops, int want)
{
	struct ibv_qp_cap cap = {
	    .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1};
	struct ibv_qp_cap before = cap;
	int err;

	t_case("caps: send_ops_flags 0x%llx refused with %s", (unsigned long long)ops,
	       strerror(want));
	CHECK(ex_qp(pd, cq, cq, ops, &cap, 0, &err) == NULL);
	CHECK_EQ(err, want);
	CHECK_MEM(&cap, &before, sizeof(cap)); /* the caller's caps stay */
}

static void test_caps(void)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct ibv_qp_cap cap = {
	    .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1};
	struct ibv_qp *plain, *ex;
	struct t_qp_caps tc;
	int err;

	/* perftest's: one opcode, one SGE, tx depth 128; the latency tests
	 * ask for 220 bytes inline on a ConnectX-7 */
	check_caps(pd, cq, IBV_QP_EX_WITH_RDMA_WRITE, 128, 1, 0);
	check_caps(pd, cq, IBV_QP_EX_WITH_SEND, 128, 1, 0);
	check_caps(pd, cq, IBV_QP_EX_WITH_RDMA_READ, 128, 1, 0);
	check_caps(pd, cq, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, 128, 1, 0);
	check_caps(pd, cq, IBV_QP_EX_WITH_RDMA_WRITE, 128, 1, 220);
	check_caps(pd, cq, IBV_QP_EX_WITH_SEND, 1, 1, 220);
	check_caps(pd, cq, OPS_ALL, 64, 4, 64);
	check_caps(pd, cq, 0, 8, 0, 0); /* no opcode named: the ctrl segment alone */
	/* 62 SGEs fit a 1024-byte WQE behind ctrl + raddr; a plain QP has 52 */
	check_caps(pd, cq, IBV_QP_EX_WITH_RDMA_WRITE, 4, 62, 0);
	t_case("caps: 63 SGEs after ctrl + raddr do not fit 1024 bytes: EINVAL");
	cap.max_send_sge = 63;
	CHECK(ex_qp(pd, cq, cq, IBV_QP_EX_WITH_RDMA_WRITE, &cap, 0, &err) == NULL);
	CHECK_EQ(err, EINVAL);

	check_refused(pd, cq, IBV_QP_EX_WITH_BIND_MW, EOPNOTSUPP);
	check_refused(pd, cq, IBV_QP_EX_WITH_LOCAL_INV, EOPNOTSUPP);
	check_refused(pd, cq, IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_SEND, EOPNOTSUPP);
	check_refused(pd, cq, IBV_QP_EX_WITH_TSO, EOPNOTSUPP);
	check_refused(pd, cq, IBV_QP_EX_WITH_ATOMIC_WRITE, EOPNOTSUPP);
	check_refused(pd, cq, 1ull << 20, EOPNOTSUPP);

	t_case("ibv_qp_to_qp_ex: a QP with send_ops_flags is an ibv_qp_ex; without, NULL");
	cap.max_send_sge = 1;
	t_qp_caps_default(&tc);
	plain = t_qp(pd, cq, cq, &tc, NULL);
	CHECK(ibv_qp_to_qp_ex(plain) == NULL);
	ex = ex_qp(pd, cq, cq, IBV_QP_EX_WITH_SEND, &cap, 0, &err);
	CHECK(ex != NULL);
	CHECK(ibv_qp_to_qp_ex(ex) == (struct ibv_qp_ex *)ex);
	CHECK(ibv_qp_to_qp_ex(ex)->wr_start && ibv_qp_to_qp_ex(ex)->wr_bind_mw);
	CHECK_OK(ibv_destroy_qp(ex));
	CHECK_OK(ibv_destroy_qp(plain));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
}

/* ---- one request, posted either way ----------------------------------------- */

struct req {
	const char *name;
	enum ibv_wr_opcode op;
	unsigned int flags; /* IBV_SEND_*: INLINE picks the inline setter */
	bool list;          /* the _list setter */
	uint32_t nsge;
	uint32_t len[3]; /* payload pieces */
	uint64_t cmp, swap;
};

static __be32 req_imm(const struct req *r)
{
	return htobe32(0x1234abcdu ^ (uint32_t)r->op);
}

/* The request's SGEs over xp->a (local data at 0, 256, 512), its target
 * at offset 0 of xp->b. */
static uint32_t req_sges(struct t_xpair *xp, const struct req *r, struct ibv_sge *sg)
{
	uint32_t total = 0;

	for (uint32_t i = 0; i < r->nsge; i++) {
		sg[i] = (struct ibv_sge){
		    .addr = (uintptr_t)xp->a + 256 * i, .length = r->len[i], .lkey = xp->amr->lkey};
		total += r->len[i];
	}
	return total;
}

static void post_old(struct t_xpair *xp, const struct req *r, uint64_t wr_id)
{
	struct ibv_sge sg[3];
	struct ibv_send_wr wr = {.wr_id = wr_id,
	                         .sg_list = sg,
	                         .num_sge = (int)r->nsge,
	                         .opcode = r->op,
	                         .send_flags = r->flags,
	                         .imm_data = req_imm(r)};

	req_sges(xp, r, sg);
	if (r->op == IBV_WR_ATOMIC_CMP_AND_SWP || r->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		wr.wr.atomic = (typeof(wr.wr.atomic)){.remote_addr = (uintptr_t)xp->b,
		                                      .compare_add = r->cmp,
		                                      .swap = r->swap,
		                                      .rkey = xp->bmr->rkey};
	else
		wr.wr.rdma =
		    (typeof(wr.wr.rdma)){.remote_addr = (uintptr_t)xp->b, .rkey = xp->bmr->rkey};
	t_post_send(xp->p.qp[0], &wr);
}

static void wr_opcode(struct ibv_qp_ex *x, const struct req *r, uint32_t rkey, uint64_t raddr)
{
	switch (r->op) {
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(x, rkey, raddr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(x, rkey, raddr, req_imm(r));
		break;
	case IBV_WR_SEND:
		ibv_wr_send(x);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(x, req_imm(r));
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(x, rkey, raddr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		ibv_wr_atomic_cmp_swp(x, rkey, raddr, r->cmp, r->swap);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(x, rkey, raddr, r->cmp);
		break;
	default:
		T_FAIL("no such opcode in this test: %d", r->op);
	}
}

static void wr_data(struct ibv_qp_ex *x, const struct req *r, const struct ibv_sge *sg)
{
	struct ibv_data_buf bufs[3];

	if (!(r->flags & IBV_SEND_INLINE)) {
		if (r->list)
			ibv_wr_set_sge_list(x, r->nsge, sg);
		else
			ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, sg[0].length);
		return;
	}
	for (uint32_t i = 0; i < r->nsge; i++)
		bufs[i] = (struct ibv_data_buf){.addr = (void *)(uintptr_t)sg[i].addr,
		                                .length = sg[i].length};
	if (r->list)
		ibv_wr_set_inline_data_list(x, r->nsge, bufs);
	else
		ibv_wr_set_inline_data(x, bufs[0].addr, bufs[0].length);
}

/* One request through ibv_wr_*; wr_complete's result. */
static int post_new(struct t_xpair *xp, const struct req *r, uint64_t wr_id)
{
	struct ibv_sge sg[3];

	req_sges(xp, r, sg);
	ibv_wr_start(xp->x);
	xp->x->wr_id = wr_id;
	xp->x->wr_flags = r->flags;
	wr_opcode(xp->x, r, xp->bmr->rkey, (uintptr_t)xp->b);
	wr_data(xp->x, r, sg);
	return ibv_wr_complete(xp->x);
}

static bool is_send(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static const int wc_op_of[] = {
    [IBV_WR_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
    [IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_WC_RDMA_WRITE,
    [IBV_WR_SEND] = IBV_WC_SEND,
    [IBV_WR_SEND_WITH_IMM] = IBV_WC_SEND,
    [IBV_WR_RDMA_READ] = IBV_WC_RDMA_READ,
    [IBV_WR_ATOMIC_CMP_AND_SWP] = IBV_WC_COMP_SWAP,
    [IBV_WR_ATOMIC_FETCH_AND_ADD] = IBV_WC_FETCH_ADD,
};

/* Fresh data, a receive where one is needed; the expected target bytes. */
static void req_prepare(struct t_xpair *xp, const struct req *r, uint32_t seed, uint8_t *want,
                        uint32_t *want_len)
{
	uint32_t total = 0;

	memset(xp->a, 0, 1024);
	memset(xp->b, GUARD, 1024);
	for (uint32_t i = 0; i < r->nsge; i++) {
		t_fill(xp->a + 256 * i, r->len[i], seed + i);
		memcpy(want + total, xp->a + 256 * i, r->len[i]);
		total += r->len[i];
	}
	if (r->op == IBV_WR_RDMA_READ) {
		t_fill(xp->b, r->len[0], seed ^ 0x55);
		memcpy(want, xp->b, r->len[0]);
	}
	if (is_atomic(r->op)) {
		uint64_t old = 0x1111222233334444ull + seed, now;

		memcpy(xp->b, &old, 8);
		if (r->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			now = old + r->cmp;
		else
			now = old == r->cmp ? r->swap : old;
		memcpy(want, &old, 8);     /* what comes back to a */
		memcpy(want + 8, &now, 8); /* what b holds after */
		total = 8;
	}
	if (is_send(r->op) || r->op == IBV_WR_RDMA_WRITE_WITH_IMM)
		t_post_recv_buf(xp->p.qp[1], 77, r->op == IBV_WR_RDMA_WRITE_WITH_IMM ? NULL : xp->b,
		                r->op == IBV_WR_RDMA_WRITE_WITH_IMM ? 0 : 1024, xp->bmr->lkey);
	*want_len = total;
}

static void req_check(struct t_xpair *xp, const struct req *r, uint64_t wr_id, const uint8_t *want,
                      uint32_t len)
{
	struct ibv_wc wc = t_poll1(xp->p.scq[0], r->name);

	CHECK_WC(&wc, wr_id, IBV_WC_SUCCESS, wc_op_of[r->op]);
	if (is_send(r->op) || r->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		struct ibv_wc rwc = t_poll1(xp->p.rcq[1], r->name);

		CHECK_WC_STATUS(&rwc, 77, IBV_WC_SUCCESS);
		CHECK_EQ(rwc.byte_len, len);
		if (r->op != IBV_WR_SEND) {
			CHECK(rwc.wc_flags & IBV_WC_WITH_IMM);
			CHECK_EQ(rwc.imm_data, req_imm(r));
		}
	}
	if (r->op == IBV_WR_RDMA_READ) {
		CHECK_EQ(wc.byte_len, len);
		CHECK_MEM(xp->a, want, len);
	} else if (is_atomic(r->op)) {
		CHECK_MEM(xp->a, want, 8);
		CHECK_MEM(xp->b, want + 8, 8);
	} else {
		CHECK_MEM(xp->b, want, len);
		CHECK_BYTES(xp->b + len, GUARD, 64);
	}
}

/* Two WQEs of the same request: equal but for the WQE index. */
static void check_same_wqe(const uint8_t *old, uint32_t old_bb, uint16_t old_idx,
                           const uint8_t *neu, uint32_t new_bb, uint16_t new_idx)
{
	const struct mlx5_wqe_ctrl_seg *a = (const void *)old, *b = (const void *)neu;

	CHECK_EQ(new_bb, old_bb);
	CHECK_EQ((be32toh(a->opmod_idx_opcode) >> 8) & 0xffff, old_idx);
	CHECK_EQ((be32toh(b->opmod_idx_opcode) >> 8) & 0xffff, new_idx);
	CHECK_EQ(be32toh(b->opmod_idx_opcode) & 0xff0000ff,
	         be32toh(a->opmod_idx_opcode) & 0xff0000ff);
	CHECK_MEM(neu + 4, old + 4, (size_t)old_bb * 64 - 4);
}

static void run_req(struct t_xpair *xp, const struct req *r)
{
	uint8_t want[1024], wqe_old[1024], wqe_new[1024];
	uint32_t len, bb_old, bb_new;
	uint16_t i_old, i_new;

	t_case("ops: %s through ibv_post_send, then through ibv_wr_*", r->name);
	req_prepare(xp, r, 1, want, &len);
	i_old = sq_pi(xp);
	post_old(xp, r, 100);
	req_check(xp, r, 100, want, len);
	bb_old = sq_wqe(xp, i_old, wqe_old);
	CHECK_EQ((uint16_t)(sq_pi(xp) - i_old), bb_old);

	req_prepare(xp, r, 1, want, &len);
	i_new = sq_pi(xp);
	CHECK_OK(post_new(xp, r, 200));
	req_check(xp, r, 200, want, len);
	bb_new = sq_wqe(xp, i_new, wqe_new);
	CHECK_EQ((uint16_t)(sq_pi(xp) - i_new), bb_new);
	check_same_wqe(wqe_old, bb_old, i_old, wqe_new, bb_new, i_new);
}

static const struct req reqs[] = {
    {"WRITE, one SGE", IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, false, 1, {100}, 0, 0},
    {"WRITE, SGE list with a zero-length entry",
     IBV_WR_RDMA_WRITE,
     IBV_SEND_SIGNALED,
     true,
     3,
     {40, 0, 24},
     0,
     0},
    {"WRITE, inline", IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED | IBV_SEND_INLINE, false, 1, {60}, 0, 0},
    {"WRITE, inline list, fenced",
     IBV_WR_RDMA_WRITE,
     IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_FENCE,
     true,
     3,
     {10, 20, 30},
     0,
     0},
    {"WRITE_WITH_IMM", IBV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_SIGNALED, false, 1, {200}, 0, 0},
    {"SEND, one SGE", IBV_WR_SEND, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, false, 1, {300}, 0, 0},
    {"SEND, small (scatter-to-CQE)", IBV_WR_SEND, IBV_SEND_SIGNALED, false, 1, {20}, 0, 0},
    {"SEND_WITH_IMM, inline list",
     IBV_WR_SEND_WITH_IMM,
     IBV_SEND_SIGNALED | IBV_SEND_INLINE,
     true,
     2,
     {16, 33},
     0,
     0},
    {"READ", IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, false, 1, {500}, 0, 0},
    {"READ, small (scatter-to-CQE)", IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, false, 1, {16}, 0, 0},
    {"ATOMIC_CMP_AND_SWP (equal)",
     IBV_WR_ATOMIC_CMP_AND_SWP,
     IBV_SEND_SIGNALED,
     false,
     1,
     {8},
     0x1111222233334445ull,
     0xfeedfacecafebeefull},
    {"ATOMIC_CMP_AND_SWP (not equal)",
     IBV_WR_ATOMIC_CMP_AND_SWP,
     IBV_SEND_SIGNALED,
     false,
     1,
     {8},
     7,
     9},
    {"ATOMIC_FETCH_AND_ADD",
     IBV_WR_ATOMIC_FETCH_AND_ADD,
     IBV_SEND_SIGNALED,
     false,
     1,
     {8},
     0x100000001ull,
     0},
};

static void test_ops(void)
{
	struct ibv_qp_cap cap = {.max_send_wr = 16,
	                         .max_recv_wr = 16,
	                         .max_send_sge = 3,
	                         .max_recv_sge = 1,
	                         .max_inline_data = 128};
	struct t_xpair xp;

	xpair_create(&xp, OPS_ALL, &cap, 64, 1);
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++)
		run_req(&xp, &reqs[i]);
	t_xpair_destroy(&xp);
}

/* ---- abort -------------------------------------------------------------------- */

static void test_abort(void)
{
	struct ibv_qp_cap cap = {
	    .max_send_wr = 16, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1};
	struct t_xpair xp;
	uint8_t wqe[1024];
	uint16_t pi;

	xpair_create(&xp, IBV_QP_EX_WITH_RDMA_WRITE, &cap, 64, 0);
	t_case("abort: two WRITEs built, then ibv_wr_abort: nothing lands, no doorbell");
	t_fill(xp.a, 128, 9);
	pi = sq_pi(&xp);
	ibv_wr_start(xp.x);
	xp.x->wr_id = 1;
	xp.x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b);
	ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a, 64);
	xp.x->wr_id = 2;
	ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b + 64);
	ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a + 64, 64);
	ibv_wr_abort(xp.x);
	CHECK_EQ(sq_pi(&xp), pi);
	t_expect_empty(xp.p.scq[0], "aborted WRITEs");
	CHECK_BYTES(xp.b, GUARD, 128);

	t_case("abort: the next batch takes the aborted WQEs' place in the SQ");
	ibv_wr_start(xp.x);
	xp.x->wr_id = 3;
	xp.x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b + 256);
	ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a, 32);
	CHECK_OK(ibv_wr_complete(xp.x));
	struct ibv_wc wc = t_poll1(xp.p.scq[0], "WRITE after the abort");

	CHECK_WC(&wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_EQ(sq_pi(&xp), (uint16_t)(pi + 1));
	sq_wqe(&xp, pi, wqe);
	CHECK_EQ((be32toh(((struct mlx5_wqe_ctrl_seg *)wqe)->opmod_idx_opcode) >> 8) & 0xffff, pi);
	CHECK_MEM(xp.b + 256, xp.a, 32);
	CHECK_BYTES(xp.b, GUARD, 256);
	t_expect_empty(xp.p.scq[0], "nothing else");

	t_case("abort: an empty batch completes with 0 and rings nothing");
	ibv_wr_start(xp.x);
	CHECK_OK(ibv_wr_complete(xp.x));
	CHECK_EQ(sq_pi(&xp), (uint16_t)(pi + 1));
	t_xpair_destroy(&xp);
}

/* ---- errors ------------------------------------------------------------------- */

enum bad {
	BAD_INLINE_TOO_LONG,
	BAD_SGE_LIST_TOO_LONG,
	BAD_NO_SETTER,
	BAD_NO_OPCODE,
	BAD_TWO_OPCODES,
	BAD_ATOMIC_SGE,
	BAD_SEND_INV,
	BAD_LOCAL_INV,
	BAD_BIND_MW,
	BAD_UD_ADDR,
	BAD_SQ_FULL,
};

static const struct {
	const char *name;
	int want;
} bads[] = {
    [BAD_INLINE_TOO_LONG] = {"inline data beyond max_inline_data", ENOMEM},
    [BAD_SGE_LIST_TOO_LONG] = {"more SGEs than max_send_sge", ENOMEM},
    [BAD_NO_SETTER] = {"an opcode without a data setter", EINVAL},
    [BAD_NO_OPCODE] = {"a data setter without an opcode", EINVAL},
    [BAD_TWO_OPCODES] = {"two opcodes for one WQE", EINVAL},
    [BAD_ATOMIC_SGE] = {"an atomic with a 4-byte SGE", EINVAL},
    [BAD_SEND_INV] = {"ibv_wr_send_inv", EOPNOTSUPP},
    [BAD_LOCAL_INV] = {"ibv_wr_local_inv", EOPNOTSUPP},
    [BAD_BIND_MW] = {"ibv_wr_bind_mw", EOPNOTSUPP},
    [BAD_UD_ADDR] = {"ibv_wr_set_ud_addr on RC", EOPNOTSUPP},
    [BAD_SQ_FULL] = {"more WQEs than the SQ holds", ENOMEM},
};

static void bad_step(struct t_xpair *xp, enum bad b)
{
	struct ibv_qp_ex *x = xp->x;
	struct ibv_sge sg[8];
	uint8_t big[512] = {0};
	struct ibv_mw_bind_info bi = {0};

	for (int i = 0; i < 8; i++)
		sg[i] = (struct ibv_sge){
		    .addr = (uintptr_t)xp->a + 8 * i, .length = 8, .lkey = xp->amr->lkey};
	switch (b) {
	case BAD_INLINE_TOO_LONG:
		ibv_wr_rdma_write(x, xp->bmr->rkey, (uintptr_t)xp->b);
		ibv_wr_set_inline_data(x, big, xp->p.cap[0].max_inline_data + 1);
		break;
	case BAD_SGE_LIST_TOO_LONG:
		ibv_wr_rdma_write(x, xp->bmr->rkey, (uintptr_t)xp->b);
		ibv_wr_set_sge_list(x, xp->p.cap[0].max_send_sge + 1, sg);
		break;
	case BAD_NO_SETTER:
		ibv_wr_rdma_write(x, xp->bmr->rkey, (uintptr_t)xp->b);
		break;
	case BAD_NO_OPCODE:
		ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, 8);
		break;
	case BAD_TWO_OPCODES:
		ibv_wr_rdma_write(x, xp->bmr->rkey, (uintptr_t)xp->b);
		ibv_wr_rdma_write(x, xp->bmr->rkey, (uintptr_t)xp->b);
		ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, 8);
		break;
	case BAD_ATOMIC_SGE:
		ibv_wr_atomic_fetch_add(x, xp->bmr->rkey, (uintptr_t)xp->b, 1);
		ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, 4);
		break;
	case BAD_SEND_INV:
		ibv_wr_send_inv(x, xp->bmr->rkey);
		ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, 8);
		break;
	case BAD_LOCAL_INV:
		ibv_wr_local_inv(x, xp->bmr->rkey);
		break;
	case BAD_BIND_MW:
		ibv_wr_bind_mw(x, NULL, 0, &bi);
		break;
	case BAD_UD_ADDR:
		ibv_wr_send(x);
		ibv_wr_set_ud_addr(x, NULL, 1, 1);
		ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, 8);
		break;
	case BAD_SQ_FULL:
		for (uint32_t i = 0; i <= xp->dv.sq.wqe_cnt; i++) {
			ibv_wr_rdma_write(x, xp->bmr->rkey, (uintptr_t)xp->b);
			ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, 8);
		}
		break;
	}
}

static void test_errors(void)
{
	struct ibv_qp_cap cap = {.max_send_wr = 8,
	                         .max_recv_wr = 4,
	                         .max_send_sge = 2,
	                         .max_recv_sge = 1,
	                         .max_inline_data = 32};
	struct t_xpair xp;

	xpair_create(&xp, OPS_ALL, &cap, 64, 0);
	t_fill(xp.a, 64, 5);
	for (size_t b = 0; b < sizeof(bads) / sizeof(bads[0]); b++) {
		uint16_t pi = sq_pi(&xp);

		t_case("errors: a good WRITE, then %s: wr_complete returns %s, nothing is posted",
		       bads[b].name, strerror(bads[b].want));
		ibv_wr_start(xp.x);
		xp.x->wr_id = 10 + b;
		xp.x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b + 512);
		ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a, 16);
		bad_step(&xp, (enum bad)b);
		CHECK_RET(ibv_wr_complete(xp.x), bads[b].want);
		CHECK_EQ(sq_pi(&xp), pi);
		t_expect_empty(xp.p.scq[0], bads[b].name);
		CHECK_BYTES(xp.b, GUARD, 1024);

		t_case("errors: after %s the QP posts again", bads[b].name);
		ibv_wr_start(xp.x);
		xp.x->wr_id = 100 + b;
		xp.x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b + 2048);
		ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a, 16);
		CHECK_OK(ibv_wr_complete(xp.x));
		struct ibv_wc wc = t_poll1(xp.p.scq[0], "the good WRITE");

		CHECK_WC(&wc, 100 + b, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK_MEM(xp.b + 2048, xp.a, 16);
		memset(xp.b + 2048, GUARD, 16);
	}

	t_case(
	    "errors: wr_flags mlx5 ignores on RC (IP_CSUM, INLINE without the setter) are ignored");
	ibv_wr_start(xp.x);
	xp.x->wr_id = 7;
	xp.x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM | IBV_SEND_INLINE;
	ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b + 4096);
	ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a, 48);
	CHECK_OK(ibv_wr_complete(xp.x));
	struct ibv_wc wc = t_poll1(xp.p.scq[0], "WRITE with ignored flags");

	CHECK_WC(&wc, 7, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(xp.b + 4096, xp.a, 48);

	t_case("errors: a QP that is not in RTS: EINVAL, nothing posted");
	CHECK_OK(t_qp_to(xp.p.qp[0], IBV_QPS_RESET));
	CHECK_OK(t_qp_to_init(xp.p.qp[0], &xp.p.opts));
	ibv_wr_start(xp.x);
	ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b);
	ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a, 16);
	CHECK_RET(ibv_wr_complete(xp.x), EINVAL);
	CHECK_EQ(sq_pi(&xp), 0);
	t_xpair_destroy(&xp);
}

/* ---- signaling ------------------------------------------------------------------- */

static void test_signal(void)
{
	struct ibv_qp_cap cap = {
	    .max_send_wr = 16, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1};
	struct t_xpair xp;
	struct ibv_wc wc;

	xpair_create(&xp, IBV_QP_EX_WITH_RDMA_WRITE, &cap, 64, 0);
	t_case("signal: four WRITEs in one batch, the last signaled: one CQE, the last wr_id");
	t_fill(xp.a, 256, 3);
	ibv_wr_start(xp.x);
	for (int i = 0; i < 4; i++) {
		xp.x->wr_id = 40 + i;
		xp.x->wr_flags = i == 3 ? IBV_SEND_SIGNALED : 0;
		ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b + 64 * i);
		ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a + 64 * i, 64);
	}
	CHECK_OK(ibv_wr_complete(xp.x));
	wc = t_poll1(xp.p.scq[0], "the signaled WRITE");
	CHECK_WC(&wc, 43, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	t_expect_empty(xp.p.scq[0], "unsignaled WRITEs");
	CHECK_MEM(xp.b, xp.a, 256);
	for (int i = 0; i < 4; i++) {
		uint8_t w[64];

		sq_wqe(&xp, (uint32_t)i, w);
		CHECK_EQ(((struct mlx5_wqe_ctrl_seg *)w)->fm_ce_se,
		         i == 3 ? MLX5_WQE_CTRL_CQ_UPDATE : 0);
	}
	t_xpair_destroy(&xp);

	t_case("signal: sq_sig_all signals every WQE whatever wr_flags says");
	xpair_create(&xp, IBV_QP_EX_WITH_RDMA_WRITE, &cap, 64, 1);
	ibv_wr_start(xp.x);
	for (int i = 0; i < 3; i++) {
		xp.x->wr_id = 50 + i;
		xp.x->wr_flags = 0;
		ibv_wr_rdma_write(xp.x, xp.bmr->rkey, (uintptr_t)xp.b + 64 * i);
		ibv_wr_set_sge(xp.x, xp.amr->lkey, (uintptr_t)xp.a + 64 * i, 64);
	}
	CHECK_OK(ibv_wr_complete(xp.x));
	for (int i = 0; i < 3; i++) {
		wc = t_poll1(xp.p.scq[0], "sq_sig_all WRITE");
		CHECK_WC(&wc, 50 + i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	}
	t_xpair_destroy(&xp);
}

/* ---- wrap-around ---------------------------------------------------------------------- */

#define WRAP_ROUNDS 300
#define WRAP_SLOT   512
#define WRAP_SLOTS  64

/* WQE n of the wrap test: WRITE to slot n, of 1 (one SGE), 3 (eight SGEs)
 * or 4 (200 B inline) basic blocks; builds the expected bytes too. */
static void wrap_wqe(struct t_xpair *xp, uint32_t n, uint8_t *want, uint8_t (*inl)[200])
{
	uint8_t *src = xp->a + (size_t)(n % WRAP_SLOTS) * WRAP_SLOT * 2;
	uint64_t dst = (uintptr_t)xp->b + (size_t)(n % WRAP_SLOTS) * WRAP_SLOT;
	uint8_t *w = want + (size_t)(n % WRAP_SLOTS) * WRAP_SLOT;
	struct ibv_sge sg[8];
	uint32_t len = 0;

	ibv_wr_rdma_write(xp->x, xp->bmr->rkey, dst);
	switch (n % 3) {
	case 0:
		t_fill(inl[n % WRAP_SLOTS], 200, n);
		memcpy(w, inl[n % WRAP_SLOTS], 200);
		ibv_wr_set_inline_data(xp->x, inl[n % WRAP_SLOTS], 200);
		break;
	case 1:
		for (int i = 0; i < 8; i++) {
			uint32_t l = 1 + (n + (uint32_t)i * 7) % 50;

			t_fill(src + i * 64, l, n * 16 + (uint32_t)i);
			sg[i] = (struct ibv_sge){
			    .addr = (uintptr_t)src + i * 64, .length = l, .lkey = xp->amr->lkey};
			memcpy(w + len, src + i * 64, l);
			len += l;
		}
		ibv_wr_set_sge_list(xp->x, 8, sg);
		break;
	default:
		t_fill(src, 64, n);
		memcpy(w, src, 64);
		ibv_wr_set_sge(xp->x, xp->amr->lkey, (uintptr_t)src, 64);
	}
}

static void test_wrap(void)
{
	struct ibv_qp_cap cap = {.max_send_wr = 8,
	                         .max_recv_wr = 4,
	                         .max_send_sge = 8,
	                         .max_recv_sge = 1,
	                         .max_inline_data = 200};
	static uint8_t inl[WRAP_SLOTS][200];
	uint8_t *want = t_alloc(WRAP_SLOTS * WRAP_SLOT, GUARD);
	struct t_xpair xp;
	uint32_t n = 0, wraps;
	uint16_t pi0;

	xpair_create(&xp, IBV_QP_EX_WITH_RDMA_WRITE, &cap, 4, 0);
	memset(xp.b, GUARD, WRAP_SLOTS * WRAP_SLOT);
	pi0 = sq_pi(&xp);
	t_case("wrap: %d batches of up to %u mixed WRITEs (1, 3, 4 BBs) through an SQ of %u BBs",
	       WRAP_ROUNDS, xp.p.cap[0].max_send_wr, xp.dv.sq.wqe_cnt);
	CHECK_EQ(xp.dv.sq.wqe_cnt, 32); /* 8 x 256-byte WQEs (32 + 224 inline) */
	for (int r = 0; r < WRAP_ROUNDS; r++) {
		uint32_t k = 1 + (uint32_t)r % xp.p.cap[0].max_send_wr;
		struct ibv_wc wc;

		ibv_wr_start(xp.x);
		for (uint32_t i = 0; i < k; i++, n++) {
			xp.x->wr_id = n;
			xp.x->wr_flags = i == k - 1 ? IBV_SEND_SIGNALED : 0;
			wrap_wqe(&xp, n, want, inl);
		}
		CHECK_OK(ibv_wr_complete(xp.x));
		wc = t_poll1(xp.p.scq[0], "the batch's last WRITE");
		CHECK_WC(&wc, n - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK_MEM(xp.b, want, WRAP_SLOTS * WRAP_SLOT);
	}
	wraps = (uint16_t)(sq_pi(&xp) - pi0) / xp.dv.sq.wqe_cnt;
	t_case("wrap: %u WQEs went %u times around the SQ", n, wraps);
	CHECK_GE(wraps, 100);
	t_xpair_destroy(&xp);
	free(want);
}

static const struct t_named_case cases[] = {
    {"caps", test_caps},     {"ops", test_ops},       {"abort", test_abort},
    {"errors", test_errors}, {"signal", test_signal}, {"wrap", test_wrap},
};

int main(int argc, char **argv)
{
	ctx = t_open(T_DEVICE);
	T_RUN_CASES(cases, argc, argv);
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
