// SPDX-License-Identifier: MIT
/*
 * mlx5 direct verbs: mlx5dv_init_obj's view of a QP and a CQ, then the NIC
 * driven the way a GPU thread drives it: WQEs written into sq.buf with
 * gnic_mlx5.h, the doorbell record and register updated by hand (rdma-core
 * style, GPU style, record only), CQEs read from cq.buf by owner bit. Also
 * NOP, unsignaled runs, WQEs that straddle the end of the SQ (written by
 * hand, and by ibv_post_send), CQ owner-bit
 * flips, and garbage WQEs (wrong index, foreign QPN) that must end in an
 * error CQE rather than a crash.
 */
#include <infiniband/mlx5dv.h>
#include <unistd.h>

#include "common.h"
#include "gnic/gnic_mlx5.h"

#define BUF_LEN (1u << 20)
/* gnic-emu's per-call-site warning burst (EMU_LOG_BURST in emu/emu.h) */
#define EMU_LOG_BURST_FOR_TEST 10
#define GUARD                  0xee

enum ring_style { RING_RDMA_CORE, RING_GPU, RING_RECORD_ONLY };
static const char *const ring_names[] = {"rdma-core doorbell", "GPU doorbell", "record only"};

static struct ibv_context *ctx;

/* What a GPU thread holds: the raw queues and its own counters. */
struct dv {
	struct t_pair p;
	struct mlx5dv_qp qp;
	struct mlx5dv_cq cq;
	uint32_t qpn;
	uint16_t pi;     /* next free SQ basic block (wraps at 16 bits) */
	uint32_t ci;     /* next CQE to read */
	uint32_t bf_off; /* alternates between the two register halves */
	uint8_t *a, *b;  /* local and remote memory */
	struct ibv_mr *amr, *bmr;
};

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static void dv_setup(struct dv *d)
{
	struct mlx5dv_obj obj;
	struct t_qp_caps caps;

	memset(d, 0, sizeof(*d));
	t_qp_caps_default(&caps);
	caps.send_wr = 16;
	caps.send_sge = 4;
	t_pair_create(&d->p, ctx, &caps, NULL, 64);
	memset(&obj, 0, sizeof(obj));
	obj.qp.in = d->p.qp[0];
	obj.qp.out = &d->qp;
	obj.cq.in = d->p.scq[0];
	obj.cq.out = &d->cq;
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ));
	d->qpn = d->p.qp[0]->qp_num;
	d->a = t_alloc(BUF_LEN, 0);
	d->b = t_alloc(BUF_LEN, GUARD);
	d->amr = t_reg(d->p.pd, d->a, BUF_LEN, T_ACCESS_ALL);
	d->bmr = t_reg(d->p.pd, d->b, BUF_LEN, T_ACCESS_ALL);
}

static void dv_teardown(struct dv *d)
{
	CHECK_OK(ibv_dereg_mr(d->amr));
	CHECK_OK(ibv_dereg_mr(d->bmr));
	t_pair_destroy(&d->p);
	free(d->a);
	free(d->b);
}

static void test_init_obj(struct dv *d)
{
	struct mlx5dv_obj obj;
	struct mlx5dv_cq rcq;
	const struct gnic_mlx5_cqe64 *cqe = d->cq.buf;
	uint8_t *qbuf = d->qp.rq.wqe_cnt ? d->qp.rq.buf : d->qp.sq.buf;

	t_case("mlx5dv_init_obj: QP");
	CHECK(d->qp.sq.buf && d->qp.dbrec && d->qp.bf.reg);
	CHECK_EQ((uintptr_t)qbuf % T_PAGE, 0);
	CHECK_EQ((uintptr_t)d->qp.sq.buf % GNIC_MLX5_SEND_WQE_BB, 0);
	CHECK_EQ(d->qp.sq.stride, 64);
	CHECK(is_pow2(d->qp.sq.wqe_cnt));
	CHECK_GE(d->qp.sq.wqe_cnt, d->p.cap[0].max_send_wr);
	CHECK(is_pow2(d->qp.rq.wqe_cnt));
	CHECK_GE(d->qp.rq.wqe_cnt, d->p.cap[0].max_recv_wr);
	CHECK(is_pow2(d->qp.rq.stride));
	CHECK_GE(d->qp.rq.stride, 16 * d->p.cap[0].max_recv_sge);
	CHECK_EQ(d->qp.bf.size, GNIC_MLX5_BF_SIZE);
	CHECK_EQ((uintptr_t)d->qp.bf.reg % T_PAGE, GNIC_MLX5_BF_OFFSET);
	CHECK_EQ((uintptr_t)d->qp.dbrec % 4, 0);
	CHECK_EQ(gnic_be32(d->qp.dbrec[GNIC_MLX5_SND_DBR]), 0);
	CHECK_EQ(gnic_be32(d->qp.dbrec[GNIC_MLX5_RCV_DBR]), 0);

	t_case("mlx5dv_init_obj: CQ");
	CHECK(d->cq.buf && d->cq.dbrec);
	CHECK_EQ((uintptr_t)d->cq.buf % T_PAGE, 0);
	CHECK_EQ(d->cq.cqe_size, 64);
	CHECK(is_pow2(d->cq.cqe_cnt));
	CHECK_GE(d->cq.cqe_cnt, (uint32_t)d->p.scq[0]->cqe);
	for (uint32_t i = 0; i < d->cq.cqe_cnt; i++)
		if (cqe[i].op_own != 0xf0)
			T_FAIL("fresh CQE %u: op_own 0x%02x, want 0xf0", i, cqe[i].op_own);

	memset(&obj, 0, sizeof(obj));
	obj.cq.in = d->p.rcq[0];
	obj.cq.out = &rcq;
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ));
	CHECK_NE(rcq.cqn, d->cq.cqn);
	CHECK(rcq.buf != d->cq.buf);
}

/* ---- WQE building: segments staged, then copied in by basic block so a
 * WQE that runs past the end of the SQ continues at its start. ---------- */

struct wqe {
	uint8_t bytes[GNIC_MLX5_MAX_WQE_BB * GNIC_MLX5_SEND_WQE_BB];
	uint32_t ds;    /* 16-byte units */
	uint8_t opcode; /* goes into the ctrl when the WQE is placed */
};

static void *wqe_seg(struct wqe *w, size_t len)
{
	void *seg = w->bytes + w->ds * GNIC_MLX5_SEG_SIZE;

	w->ds += (uint32_t)((len + GNIC_MLX5_SEG_SIZE - 1) / GNIC_MLX5_SEG_SIZE);
	CHECK(w->ds <= GNIC_MLX5_MAX_DS);
	return seg;
}

static void wqe_ctrl(struct wqe *w, uint8_t opcode, uint8_t flags)
{
	struct gnic_mlx5_ctrl_seg *c;

	memset(w, 0, sizeof(*w));
	c = wqe_seg(w, sizeof(*c));
	c->fm_ce_se = flags;
	w->opcode = opcode;
}

static void wqe_raddr(struct wqe *w, uint64_t raddr, uint32_t rkey)
{
	struct gnic_mlx5_raddr_seg *r = wqe_seg(w, sizeof(*r));

	r->raddr = gnic_be64(raddr);
	r->rkey = gnic_be32(rkey);
}

static void wqe_data(struct wqe *w, const void *addr, uint32_t len, uint32_t lkey)
{
	struct gnic_mlx5_data_seg *s = wqe_seg(w, sizeof(*s));

	s->byte_count = gnic_be32(len);
	s->lkey = gnic_be32(lkey);
	s->addr = gnic_be64((uintptr_t)addr);
}

static uint32_t wqe_bbs(const struct wqe *w)
{
	return (w->ds * GNIC_MLX5_SEG_SIZE + GNIC_MLX5_SEND_WQE_BB - 1) / GNIC_MLX5_SEND_WQE_BB;
}

static uint8_t *sq_bb(struct dv *d, uint32_t idx)
{
	return (uint8_t *)d->qp.sq.buf + (size_t)(idx & (d->qp.sq.wqe_cnt - 1)) * 64;
}

/* Copy w into the SQ at pi with ctrl index `idx` and QPN `qpn`. */
static uint16_t dv_write_wqe_as(struct dv *d, struct wqe *w, uint16_t idx, uint32_t qpn)
{
	struct gnic_mlx5_ctrl_seg *c = (void *)w->bytes;
	uint16_t start = d->pi;

	c->opmod_idx_opcode = gnic_be32(gnic_mlx5_ctrl_word0(0, idx, w->opcode));
	c->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(qpn, w->ds));
	for (uint32_t i = 0; i < wqe_bbs(w); i++)
		memcpy(sq_bb(d, start + i), w->bytes + i * 64, 64);
	d->pi = (uint16_t)(start + wqe_bbs(w));
	return start;
}

static uint16_t dv_write_wqe(struct dv *d, struct wqe *w)
{
	return dv_write_wqe_as(d, w, d->pi, d->qpn);
}

static void reg_write(struct dv *d, uint32_t w0_be, uint32_t w1_be)
{
	uint32_t w[2] = {w0_be, w1_be};
	uint64_t v;

	memcpy(&v, w, sizeof(v));
	/* One 8-byte store, released after the doorbell record. */
	__atomic_store_n((uint64_t *)((uint8_t *)d->qp.bf.reg + d->bf_off), v, __ATOMIC_RELEASE);
	d->bf_off ^= d->qp.bf.size;
}

/* Publish everything written up to d->pi; last = first BB of the last WQE. */
static void dv_ring(struct dv *d, enum ring_style style, uint16_t last)
{
	const uint32_t *ctrl = (const uint32_t *)sq_bb(d, last);

	/* Release stores: the WQE bytes before the record, the record before
	 * the register. */
	__atomic_store_n(&d->qp.dbrec[GNIC_MLX5_SND_DBR], gnic_be32(d->pi), __ATOMIC_RELEASE);
	switch (style) {
	case RING_RDMA_CORE: /* the first 8 bytes of the last WQE's ctrl */
		reg_write(d, ctrl[0], ctrl[1]);
		break;
	case RING_GPU:
		reg_write(d, gnic_be32((uint32_t)d->pi << 8), gnic_be32(d->qpn << 8));
		break;
	case RING_RECORD_ONLY:
		break;
	}
}

/* Wait for the next CQE the way device code does, then hand it back. */
static struct gnic_mlx5_cqe64 dv_poll(struct dv *d, const char *what)
{
	struct gnic_mlx5_cqe64 *ring = d->cq.buf, out;
	uint64_t deadline = t_now_ms() + T_WAIT_MS;

	for (unsigned spins = 0;; spins++) {
		struct gnic_mlx5_cqe64 *cqe = &ring[d->ci & (d->cq.cqe_cnt - 1)];
		uint8_t op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);

		if (gnic_mlx5_cqe_sw_owned(op_own, d->ci, d->cq.cqe_cnt)) {
			memcpy(&out, cqe, sizeof(out));
			d->ci++;
			/* The CQE is copied out before the NIC may reuse it. */
			__atomic_store_n(&d->cq.dbrec[0], gnic_be32(d->ci & 0xffffff),
			                 __ATOMIC_RELEASE);
			return out;
		}
		if (t_now_ms() > deadline)
			T_FAIL("timed out after %d ms waiting for CQE %u (%s); op_own 0x%02x",
			       T_WAIT_MS, d->ci, what, op_own);
		if (spins > 64)
			t_sleep_ms(0);
	}
}

static void dv_expect_empty(struct dv *d, const char *what)
{
	struct gnic_mlx5_cqe64 *ring = d->cq.buf;
	uint64_t end = t_now_ms() + 30;

	do {
		uint8_t op_own =
		    __atomic_load_n(&ring[d->ci & (d->cq.cqe_cnt - 1)].op_own, __ATOMIC_ACQUIRE);

		if (gnic_mlx5_cqe_sw_owned(op_own, d->ci, d->cq.cqe_cnt))
			T_FAIL("unexpected CQE %u (op_own 0x%02x): %s", d->ci, op_own, what);
		t_sleep_ms(1);
	} while (t_now_ms() < end);
}

#define CHECK_REQ_CQE(d, cqe, opcode, wqe_idx)                                                     \
	check_req_cqe(__FILE__, __LINE__, d, cqe, opcode, wqe_idx)

static void check_req_cqe(const char *file, int line, struct dv *d,
                          const struct gnic_mlx5_cqe64 *cqe, uint8_t opcode, uint16_t wqe_idx)
{
	uint32_t sop = gnic_be32(cqe->sop_drop_qpn);
	uint8_t op = gnic_mlx5_cqe_opcode(cqe->op_own);

	if (op != GNIC_MLX5_CQE_REQ) {
		const struct gnic_mlx5_err_cqe *e = (const void *)cqe;

		t_fail(file, line, "CQE opcode %u, want REQ (syndrome 0x%02x vendor 0x%02x)", op,
		       e->syndrome, e->vendor_err_synd);
	}
	if (sop >> 24 != opcode)
		t_fail(file, line, "CQE WQE opcode 0x%02x, want 0x%02x", sop >> 24, opcode);
	if ((sop & 0xffffff) != d->qpn)
		t_fail(file, line, "CQE qpn 0x%x, want 0x%x", sop & 0xffffff, d->qpn);
	if (gnic_be16(cqe->wqe_counter) != wqe_idx)
		t_fail(file, line, "CQE wqe_counter %u, want %u", gnic_be16(cqe->wqe_counter),
		       wqe_idx);
}

static void dv_write_case(struct dv *d, enum ring_style style, uint32_t len, size_t off)
{
	struct wqe w;
	struct gnic_mlx5_cqe64 cqe;
	uint16_t idx;

	t_case("direct RDMA WRITE %u bytes, %s", len, ring_names[style]);
	memset(d->b, GUARD, BUF_LEN);
	t_fill(d->a + off, len, off + len);
	wqe_ctrl(&w, GNIC_MLX5_OPCODE_RDMA_WRITE, GNIC_MLX5_CTRL_CQ_UPDATE);
	wqe_raddr(&w, (uintptr_t)d->b + off, d->bmr->rkey);
	wqe_data(&w, d->a + off, len, d->amr->lkey);
	CHECK_EQ(w.ds, 3);
	idx = dv_write_wqe(d, &w);
	dv_ring(d, style, idx);
	cqe = dv_poll(d, "direct WRITE");
	CHECK_REQ_CQE(d, &cqe, GNIC_MLX5_OPCODE_RDMA_WRITE, idx);
	CHECK_MEM(d->b + off, d->a + off, len);
	CHECK_BYTES(d->b, GUARD, off);
	CHECK_BYTES(d->b + off + len, GUARD, BUF_LEN - off - len);
	dv_expect_empty(d, "one WQE, one CQE");
}

static void dv_read_case(struct dv *d)
{
	struct wqe w;
	struct gnic_mlx5_cqe64 cqe;
	uint16_t idx;

	t_case("direct RDMA READ 3000 bytes: byte_cnt in the CQE");
	t_fill(d->b, 3000, 31);
	memset(d->a + 8192, 0, 4096);
	wqe_ctrl(&w, GNIC_MLX5_OPCODE_RDMA_READ, GNIC_MLX5_CTRL_CQ_UPDATE);
	wqe_raddr(&w, (uintptr_t)d->b, d->bmr->rkey);
	wqe_data(&w, d->a + 8192, 3000, d->amr->lkey);
	idx = dv_write_wqe(d, &w);
	dv_ring(d, RING_RDMA_CORE, idx);
	cqe = dv_poll(d, "direct READ");
	CHECK_REQ_CQE(d, &cqe, GNIC_MLX5_OPCODE_RDMA_READ, idx);
	CHECK_EQ(gnic_be32(cqe.byte_cnt), 3000);
	CHECK_MEM(d->a + 8192, d->b, 3000);
	CHECK_BYTES(d->a + 8192 + 3000, 0, 4096 - 3000);
}

static uint16_t dv_nop(struct dv *d, bool signaled)
{
	struct wqe w;

	wqe_ctrl(&w, GNIC_MLX5_OPCODE_NOP, signaled ? GNIC_MLX5_CTRL_CQ_UPDATE : 0);
	return dv_write_wqe(d, &w);
}

static void dv_nop_case(struct dv *d)
{
	struct gnic_mlx5_cqe64 cqe;
	uint16_t idx;

	t_case("direct NOP");
	idx = dv_nop(d, true);
	dv_ring(d, RING_GPU, idx);
	cqe = dv_poll(d, "NOP");
	CHECK_REQ_CQE(d, &cqe, GNIC_MLX5_OPCODE_NOP, idx);
	dv_expect_empty(d, "one NOP, one CQE");
}

static void dv_unsignaled_case(struct dv *d)
{
	struct gnic_mlx5_cqe64 cqe;
	uint16_t idx = 0;

	t_case("5 unsignaled WRITEs then 1 signaled: one CQE for the last");
	memset(d->b, GUARD, 6 * 128);
	t_fill(d->a, 6 * 128, 41);
	for (int i = 0; i < 6; i++) {
		struct wqe w;

		wqe_ctrl(&w, GNIC_MLX5_OPCODE_RDMA_WRITE, i == 5 ? GNIC_MLX5_CTRL_CQ_UPDATE : 0);
		wqe_raddr(&w, (uintptr_t)d->b + i * 128, d->bmr->rkey);
		wqe_data(&w, d->a + i * 128, 128, d->amr->lkey);
		idx = dv_write_wqe(d, &w);
	}
	dv_ring(d, RING_RDMA_CORE, idx);
	cqe = dv_poll(d, "the signaled WRITE");
	CHECK_REQ_CQE(d, &cqe, GNIC_MLX5_OPCODE_RDMA_WRITE, idx);
	CHECK_MEM(d->b, d->a, 6 * 128);
	dv_expect_empty(d, "unsignaled WQEs give no CQE");
}

/* More CQEs than the CQ holds: the owner bit flips on every pass. */
static void dv_owner_flip_case(struct dv *d)
{
	uint32_t batch = (d->qp.sq.wqe_cnt < d->cq.cqe_cnt ? d->qp.sq.wqe_cnt : d->cq.cqe_cnt) / 2;
	uint32_t total = 4 * d->cq.cqe_cnt + 3, done = 0;

	t_case("%u signaled NOPs through a %u-CQE CQ (batches of %u)", total, d->cq.cqe_cnt, batch);
	CHECK_GE(batch, 1);
	while (done < total) {
		uint16_t first = d->pi, idx = 0;
		uint32_t n = total - done < batch ? total - done : batch;

		for (uint32_t i = 0; i < n; i++)
			idx = dv_nop(d, true);
		dv_ring(d, done % 2 ? RING_GPU : RING_RDMA_CORE, idx);
		for (uint32_t i = 0; i < n; i++) {
			struct gnic_mlx5_cqe64 cqe = dv_poll(d, "NOP batch");

			CHECK_REQ_CQE(d, &cqe, GNIC_MLX5_OPCODE_NOP, (uint16_t)(first + i));
		}
		done += n;
	}
	dv_expect_empty(d, "exactly one CQE per NOP");
}

/* A WRITE of nsge SGEs whose WQE starts `back` BBs before the SQ end. */
static void dv_wrap_case(struct dv *d, int nsge, uint32_t back)
{
	uint32_t cnt = d->qp.sq.wqe_cnt, pad = (cnt - back - (d->pi & (cnt - 1))) & (cnt - 1);
	struct gnic_mlx5_cqe64 cqe;
	uint32_t off = 0;
	struct wqe w;
	uint16_t idx = 0;

	t_case("%d-SGE WRITE starting %u BB(s) before the SQ end", nsge, back);
	/* Move pi with NOPs (one CQE for all of them) so the WQE straddles. */
	if (pad) {
		for (uint32_t i = 0; i < pad; i++)
			idx = dv_nop(d, i == pad - 1);
		dv_ring(d, RING_GPU, idx);
		cqe = dv_poll(d, "padding NOPs");
		CHECK_REQ_CQE(d, &cqe, GNIC_MLX5_OPCODE_NOP, idx);
	}
	CHECK_EQ(d->pi & (cnt - 1), cnt - back);

	memset(d->b, GUARD, 65536);
	t_fill(d->a, 65536, 51 + nsge);
	wqe_ctrl(&w, GNIC_MLX5_OPCODE_RDMA_WRITE, GNIC_MLX5_CTRL_CQ_UPDATE);
	wqe_raddr(&w, (uintptr_t)d->b + 8, d->bmr->rkey);
	for (int i = 0; i < nsge; i++) {
		uint32_t len = 100 + (uint32_t)i * 13;

		wqe_data(&w, d->a + i * 1024, len, d->amr->lkey);
		memcpy(d->a + 32768 + off, d->a + i * 1024, len); /* what must land */
		off += len;
	}
	CHECK(wqe_bbs(&w) > back); /* it really straddles */
	idx = dv_write_wqe(d, &w);
	dv_ring(d, RING_RDMA_CORE, idx);
	cqe = dv_poll(d, "the straddling WRITE");
	CHECK_REQ_CQE(d, &cqe, GNIC_MLX5_OPCODE_RDMA_WRITE, idx);
	CHECK_MEM(d->b + 8, d->a + 32768, off);
	CHECK_BYTES(d->b, GUARD, 8);
	CHECK_BYTES(d->b + 8 + off, GUARD, 65536 - 8 - off);
}

/* ibv_post_send's side of the wrap: a 2-BB WRITE posted when one BB is left
 * before the SQ end must lie in the SQ as hardware reads it (ctrl, raddr and
 * two data segments in the last BB, the other two in BB 0) and move the
 * right bytes. The QP is fresh, so the only producer index is ibv_post_send's
 * (1-SGE WRITEs take one BB each to get there). */
static void post_send_wrap_case(void)
{
	struct ibv_sge sg[4];
	struct ibv_wc wc;
	struct dv d;
	uint32_t cnt, off = 0;

	dv_setup(&d);
	cnt = d.qp.sq.wqe_cnt;
	t_case("ibv_post_send: 4-SGE WRITE straddling the end of a %u-BB SQ", cnt);
	for (uint32_t i = 0; i < cnt - 1; i++) {
		struct ibv_send_wr wr = {
		    .wr_id = i,
		    .sg_list = sg,
		    .num_sge = 1,
		    .opcode = IBV_WR_RDMA_WRITE,
		    .send_flags = IBV_SEND_SIGNALED,
		    .wr.rdma = {.remote_addr = (uintptr_t)d.b, .rkey = d.bmr->rkey}};

		sg[0] = (struct ibv_sge){.addr = (uintptr_t)d.a, .length = 8, .lkey = d.amr->lkey};
		t_post_send(d.p.qp[0], &wr);
		wc = t_poll1(d.p.scq[0], "1-BB WRITE before the wrap");
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	}
	memset(d.b, GUARD, 65536);
	t_fill(d.a, 65536, 77);
	for (int i = 0; i < 4; i++) {
		uint32_t len = 200 + (uint32_t)i * 29;

		sg[i] = (struct ibv_sge){
		    .addr = (uintptr_t)d.a + (size_t)i * 2048, .length = len, .lkey = d.amr->lkey};
		memcpy(d.a + 32768 + off, d.a + (size_t)i * 2048, len);
		off += len;
	}
	struct ibv_send_wr wr = {
	    .wr_id = 99,
	    .sg_list = sg,
	    .num_sge = 4,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)d.b + 8, .rkey = d.bmr->rkey}};
	t_post_send(d.p.qp[0], &wr);
	wc = t_poll1(d.p.scq[0], "the straddling WRITE");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 99);
	/* the WQE as it lies in the SQ */
	const struct gnic_mlx5_ctrl_seg *c = (const void *)sq_bb(&d, cnt - 1);
	const struct gnic_mlx5_data_seg *head = (const void *)(sq_bb(&d, cnt - 1) + 32);
	const struct gnic_mlx5_data_seg *tail = (const void *)sq_bb(&d, 0);

	CHECK_EQ((gnic_be32(c->opmod_idx_opcode) >> 8) & 0xffff, cnt - 1);
	CHECK_EQ(gnic_be32(c->qpn_ds) & 0x3f, 6);
	for (int i = 0; i < 4; i++) {
		const struct gnic_mlx5_data_seg *s = i < 2 ? &head[i] : &tail[i - 2];

		CHECK_EQ(gnic_be64(s->addr), sg[i].addr);
		CHECK_EQ(gnic_be32(s->byte_count), sg[i].length);
	}
	CHECK_MEM(d.b + 8, d.a + 32768, off);
	CHECK_BYTES(d.b, GUARD, 8);
	CHECK_BYTES(d.b + 8 + off, GUARD, 65536 - 8 - off);
	dv_teardown(&d);
}

/* A WQE the NIC must refuse: an error CQE for it, LOCAL_QP_OP, QP in ERR. */
static void dv_garbage_case(bool wrong_index)
{
	struct dv d;
	struct wqe w;
	struct gnic_mlx5_cqe64 cqe;
	const struct gnic_mlx5_err_cqe *e = (const void *)&cqe;
	uint16_t idx;

	t_case("garbage WQE: %s", wrong_index ? "wrong ctrl index" : "foreign QPN in ctrl");
	dv_setup(&d);
	/* A good WQE first, so the bad one is not at index 0. */
	idx = dv_nop(&d, true);
	dv_ring(&d, RING_GPU, idx);
	cqe = dv_poll(&d, "NOP before the garbage");
	CHECK_REQ_CQE(&d, &cqe, GNIC_MLX5_OPCODE_NOP, idx);

	wqe_ctrl(&w, GNIC_MLX5_OPCODE_RDMA_WRITE, GNIC_MLX5_CTRL_CQ_UPDATE);
	wqe_raddr(&w, (uintptr_t)d.b, d.bmr->rkey);
	wqe_data(&w, d.a, 64, d.amr->lkey);
	if (wrong_index)
		idx = dv_write_wqe_as(&d, &w, (uint16_t)(d.pi + 5), d.qpn);
	else
		idx = dv_write_wqe_as(&d, &w, d.pi, d.p.qp[1]->qp_num);
	dv_ring(&d, RING_GPU, idx);
	cqe = dv_poll(&d, "error CQE for the garbage WQE");
	if (gnic_mlx5_cqe_opcode(cqe.op_own) != GNIC_MLX5_CQE_REQ_ERR)
		T_FAIL("CQE opcode %u, want REQ_ERR (13)", gnic_mlx5_cqe_opcode(cqe.op_own));
	CHECK_EQ(e->syndrome, GNIC_MLX5_SYND_LOCAL_QP_OP);
	CHECK_EQ(gnic_be16(e->wqe_counter), idx);
	CHECK_EQ(gnic_be32(e->s_wqe_opcode_qpn) & 0xffffff, d.qpn);
	CHECK_BYTES(d.b, GUARD, BUF_LEN);
	CHECK_EQ(t_qp_state(d.p.qp[0]), IBV_QPS_ERR);
	/* The QP whose number was borrowed is not affected. */
	CHECK_EQ(t_qp_state(d.p.qp[1]), IBV_QPS_RTS);
	dv_teardown(&d);
}

/* RESET, as rdma-core does it: the doorbell records are zeroed, the SQ and
 * RQ buffers keep every byte (software may reuse WQEs it wrote before). */
static void reset_keeps_queues_case(void)
{
	struct dv d;
	size_t sq_len, rq_len;
	uint8_t *sq_copy, *rq_copy;
	uint16_t idx;

	t_case("RESET leaves the SQ and RQ bytes as they are, zeroes the doorbell records");
	dv_setup(&d);
	idx = dv_nop(&d, true);
	dv_ring(&d, RING_GPU, idx);
	(void)dv_poll(&d, "NOP before the reset");
	t_post_recv_buf(d.p.qp[0], 1, d.a, 64, d.amr->lkey);
	sq_len = (size_t)d.qp.sq.wqe_cnt * d.qp.sq.stride;
	rq_len = (size_t)d.qp.rq.wqe_cnt * d.qp.rq.stride;
	sq_copy = t_alloc(sq_len, 0);
	rq_copy = t_alloc(rq_len, 0);
	memcpy(sq_copy, d.qp.sq.buf, sq_len);
	memcpy(rq_copy, d.qp.rq.buf, rq_len);
	CHECK_EQ(t_qp_to(d.p.qp[0], IBV_QPS_RESET), 0);
	CHECK_MEM(d.qp.sq.buf, sq_copy, sq_len);
	CHECK_MEM(d.qp.rq.buf, rq_copy, rq_len);
	CHECK_EQ(d.qp.dbrec[GNIC_MLX5_RCV_DBR], 0);
	CHECK_EQ(d.qp.dbrec[GNIC_MLX5_SND_DBR], 0);
	free(sq_copy);
	free(rq_copy);
	dv_teardown(&d);
}

/* stderr into a file while the emulator logs, then the lines that hold a word. */
struct capture {
	char path[64];
	int fd, saved;
};

static void capture_begin(struct capture *c)
{
	snprintf(c->path, sizeof(c->path), "/tmp/gnic-mlx5dv-stderr-XXXXXX");
	c->fd = mkstemp(c->path);
	c->saved = dup(2);
	CHECK(c->fd >= 0 && c->saved >= 0);
	fflush(stderr);
	CHECK(dup2(c->fd, 2) == 2);
}

static int capture_end(struct capture *c, const char *word)
{
	char line[512];
	int lines = 0;
	FILE *f;

	fflush(stderr);
	CHECK(dup2(c->saved, 2) == 2);
	close(c->saved);
	f = CHECK_PTR(fdopen(c->fd, "r"));
	rewind(f);
	while (fgets(line, sizeof(line), f))
		lines += strstr(line, word) != NULL;
	fclose(f);
	unlink(c->path);
	return lines;
}

/* A stream of bad WQEs gives a bounded number of warnings (a log line per
 * WQE is a flood a buggy or hostile poster controls). */
static void garbage_warnings_limited_case(void)
{
	const int n = 3 * EMU_LOG_BURST_FOR_TEST;
	struct capture cap;
	struct dv d;
	int lines;

	t_case("%d bad WQEs in a row: at most %d warnings", n, EMU_LOG_BURST_FOR_TEST);
	dv_setup(&d);
	capture_begin(&cap);
	for (int i = 0; i < n; i++) {
		struct gnic_mlx5_cqe64 cqe;
		struct wqe w;
		uint16_t idx;

		t_reconnect(d.p.qp[0], &d.p.ep[1], &d.p.opts);
		d.pi = 0;
		wqe_ctrl(&w, GNIC_MLX5_OPCODE_RDMA_WRITE, GNIC_MLX5_CTRL_CQ_UPDATE);
		wqe_raddr(&w, (uintptr_t)d.b, d.bmr->rkey);
		wqe_data(&w, d.a, 64, d.amr->lkey);
		idx = dv_write_wqe_as(&d, &w, (uint16_t)(d.pi + 5), d.qpn);
		dv_ring(&d, RING_GPU, idx);
		cqe = dv_poll(&d, "error CQE for a bad WQE");
		CHECK_EQ(gnic_mlx5_cqe_opcode(cqe.op_own), GNIC_MLX5_CQE_REQ_ERR);
	}
	lines = capture_end(&cap, "bad WQE");
	printf("%d bad WQEs: %d warning lines\n", n, lines);
	CHECK_GE(lines, 1);
	if (lines > EMU_LOG_BURST_FOR_TEST)
		T_FAIL("%d warning lines for %d bad WQEs (at most %d)", lines, n,
		       EMU_LOG_BURST_FOR_TEST);
	dv_teardown(&d);
}

/* A doorbell record more than one SQ ahead of the engine: software rang for
 * WQEs it can only have written over unexecuted ones. Logged and ignored;
 * the QP works on with the right index. */
static void doorbell_ahead_case(void)
{
	struct gnic_mlx5_cqe64 cqe;
	struct capture cap;
	struct dv d;
	uint16_t idx;
	int lines;

	t_case("a doorbell more than one SQ ahead is logged and ignored");
	dv_setup(&d);
	capture_begin(&cap);
	__atomic_store_n(&d.qp.dbrec[GNIC_MLX5_SND_DBR],
	                 gnic_be32((uint16_t)(d.pi + d.qp.sq.wqe_cnt + 5)), __ATOMIC_RELEASE);
	t_sleep_ms(300); /* the engine looks at it many times */
	lines = capture_end(&cap, "ahead of the engine");
	CHECK_GE(lines, 1);
	dv_expect_empty(&d, "after the doorbell from nowhere");
	CHECK_BYTES(d.b, GUARD, BUF_LEN);
	idx = dv_nop(&d, true);
	dv_ring(&d, RING_GPU, idx);
	cqe = dv_poll(&d, "a NOP rung right");
	CHECK_REQ_CQE(&d, &cqe, GNIC_MLX5_OPCODE_NOP, idx);
	dv_teardown(&d);
}

/* After the garbage the NIC still works for everybody else. */
static void still_alive(void)
{
	struct t_pair p;
	uint8_t *a = t_alloc(4096, 0x42), *b = t_alloc(4096, 0);
	struct ibv_wc wc;

	t_case("a fresh pair still works after the garbage");
	t_pair_create(&p, ctx, NULL, NULL, 0);
	struct ibv_mr *am = t_reg(p.pd, a, 4096, T_ACCESS_ALL),
	              *bm = t_reg(p.pd, b, 4096, T_ACCESS_ALL);
	struct ibv_sge sge = {.addr = (uintptr_t)a, .length = 4096, .lkey = am->lkey};
	struct ibv_send_wr wr = {.wr_id = 5,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_WRITE,
	                         .send_flags = IBV_SEND_SIGNALED,
	                         .wr.rdma = {.remote_addr = (uintptr_t)b, .rkey = bm->rkey}};

	t_post_send(p.qp[0], &wr);
	wc = t_poll1(p.scq[0], "WRITE on a fresh pair");
	CHECK_WC(&wc, 5, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(b, a, 4096);
	CHECK_OK(ibv_dereg_mr(am));
	CHECK_OK(ibv_dereg_mr(bm));
	t_pair_destroy(&p);
	free(a);
	free(b);
}

int main(void)
{
	struct dv d;

	ctx = t_open(T_DEVICE);
	dv_setup(&d);
	printf("SQ %u BBs, RQ %u x %u B, CQ %u CQEs, bf.size %u\n", d.qp.sq.wqe_cnt,
	       d.qp.rq.wqe_cnt, d.qp.rq.stride, d.cq.cqe_cnt, d.qp.bf.size);
	test_init_obj(&d);
	CHECK_GE(d.qp.sq.wqe_cnt, 8);

	dv_write_case(&d, RING_RDMA_CORE, 256, 0);
	dv_write_case(&d, RING_GPU, 4096, 100);
	dv_write_case(&d, RING_RECORD_ONLY, 1, 7);
	dv_write_case(&d, RING_RDMA_CORE, 65536, 3);
	dv_read_case(&d);
	dv_nop_case(&d);
	dv_unsignaled_case(&d);
	dv_owner_flip_case(&d);
	dv_wrap_case(&d, 4, 1);  /* 2 BBs: 1 at the end, 1 at the start */
	dv_wrap_case(&d, 14, 3); /* 4 BBs: 3 + 1 */
	dv_wrap_case(&d, 14, 1); /* 4 BBs: 1 + 3 */
	dv_write_case(&d, RING_GPU, 512, 64);
	dv_teardown(&d);

	post_send_wrap_case();
	garbage_warnings_limited_case();
	doorbell_ahead_case();
	reset_keeps_queues_case();
	dv_garbage_case(true);
	dv_garbage_case(false);
	still_alive();
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
