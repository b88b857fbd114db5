/* SPDX-License-Identifier: MIT */
/*
 * The ibv_wr_* post API of a QP made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
 * (struct ibv_qp_ex), with the semantics of rdma-core's mlx5 provider
 * (providers/mlx5/qp.c, mlx5_send_wr_*); a UD WQE takes its destination
 * from ibv_wr_set_ud_addr between the opcode call and the data setter:
 *
 *   ibv_wr_start      takes the SQ lock and remembers the producer index;
 *   an opcode call    (wr_rdma_write, wr_send, ...) begins a WQE with the
 *                     QP's wr_id and wr_flags (FENCE, SIGNALED, SOLICITED;
 *                     the rest are ignored, as mlx5 ignores them);
 *   a data setter     (wr_set_sge(_list), wr_set_inline_data(_list)) ends it:
 *                     the WQE is written into the SQ by post.c's encoder, the
 *                     one ibv_post_send uses, so the bytes are the same;
 *   ibv_wr_complete   rings the doorbell once for all of them and returns 0,
 *                     or returns the first error since wr_start and posts
 *                     none of them (the producer index goes back);
 *   ibv_wr_abort      discards every WQE since wr_start.
 *
 * Errors, as mlx5 reports them through wr_complete: ENOMEM for a full SQ,
 * more SGEs than max_send_sge or more inline data than max_inline_data.
 * Where mlx5 would write a broken WQE without complaint, wr_complete says
 * EINVAL instead: an opcode call without its setter, a setter without an
 * opcode call, an atomic whose SGE is not one of 8 bytes, a QP that is not in
 * RTS (or ERR). The opcodes mlx5 has for RC but gnic-emu does not emulate
 * (wr_send_inv, wr_local_inv, wr_bind_mw) and those mlx5 leaves unset for RC
 * (wr_send_tso, wr_set_ud_addr outside UD, wr_set_xrc_srqn, wr_atomic_write)
 * make wr_complete return EOPNOTSUPP.
 *
 * As in mlx5, every opcode call is there whatever send_ops_flags asked for;
 * send_ops_flags only sizes the SQ (qp.c).
 *
 * mlx5dv_qp_ex_from_ibv_qp_ex gives the QP's struct mlx5dv_qp_ex, whose
 * mlx5dv_wr_* builders join the same batch. As mlx5 sets them for RC, they
 * are there only when mlx5dv_create_qp named mlx5 send_ops_flags (else every
 * pointer is NULL), and then all of them but the DC ones, whichever flags:
 *   mlx5dv_wr_raw_wqe     copies the caller's WQE (ds from its ctrl segment)
 *                         into the SQ, puts the WQE index into its ctrl
 *                         segment, completes as IBV_WC_DRIVER2; emulated;
 *   mlx5dv_wr_mr_*, _mkey_configure and its setters (access flags, layouts,
 *                         signature, crypto): need an mkey, which
 *                         mlx5dv_create_mkey cannot make here: the batch
 *                         fails with EOPNOTSUPP;
 *   mlx5dv_wr_memcpy      the device has no DMA engine (max_wr_memcpy_length
 *                         0): EINVAL, as mlx5 answers a length over the
 *                         device's; MLX5DV_QP_EX_WITH_MEMCPY at creation is
 *                         EOPNOTSUPP, as mlx5 answers without DMA MMO.
 */
#include <errno.h>

#include "emu.h"

#define WR_FLAGS_USED (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED)

static struct emu_qp *to_eqp_ex(struct ibv_qp_ex *qpx)
{
	return to_eqp(&qpx->qp_base);
}

/* The first error of a batch is the one wr_complete returns. */
static void batch_fail(struct emu_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* ---- start, complete, abort --------------------------------------------- */

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct emu_qp *qp = to_eqp_ex(qpx);
	struct emu_wr_batch *b = &qp->wrb;

	pthread_spin_lock(&qp->sq.lock);
	b->head_rb = qp->sq.head;
	b->posted = 0;
	b->err = 0;
	b->open = false;
}

static void roll_back(struct emu_qp *qp)
{
	/* the WQE bytes stay in the SQ beyond the producer index, unrung, as
	 * mlx5 leaves them; the next post overwrites them */
	qp->sq.head = qp->wrb.head_rb;
	qp->wrb.open = false;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct emu_qp *qp = to_eqp_ex(qpx);
	struct emu_wr_batch *b = &qp->wrb;
	bool rung = false;
	int err;

	if (b->open)
		batch_fail(b, EINVAL); /* an opcode call without its data setter */
	if (!emu_send_allowed(atomic_load_explicit(&qp->state, memory_order_acquire)))
		batch_fail(b, EINVAL);
	err = b->err;
	if (err) {
		roll_back(qp);
	} else if (b->posted) {
		emu_ring_send_doorbell_nreq(qp, b->ctrl8, b->posted);
		rung = true;
	}
	pthread_spin_unlock(&qp->sq.lock);
	if (rung)
		emu_engine_kick(qp);
	return err;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct emu_qp *qp = to_eqp_ex(qpx);

	roll_back(qp);
	pthread_spin_unlock(&qp->sq.lock);
}

/* ---- opcode calls: begin a WQE -------------------------------------------- */

static struct emu_send_req *wqe_begin(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op)
{
	struct emu_wr_batch *b = &to_eqp_ex(qpx)->wrb;

	if (b->open)
		batch_fail(b, EINVAL); /* the previous opcode call got no setter */
	if (b->err)
		return NULL;
	b->open = true;
	b->req = (struct emu_send_req){
	    .wr_id = qpx->wr_id,
	    .opcode = op,
	    .send_flags = qpx->wr_flags & WR_FLAGS_USED,
	};
	return &b->req;
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	wqe_begin(qpx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct emu_send_req *r = wqe_begin(qpx, IBV_WR_SEND_WITH_IMM);

	if (r)
		r->imm = imm;
}

static void rdma_begin(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr,
                       __be32 imm)
{
	struct emu_send_req *r = wqe_begin(qpx, op);

	if (!r)
		return;
	r->rkey = rkey;
	r->raddr = raddr;
	r->imm = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	rdma_begin(qpx, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	rdma_begin(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	rdma_begin(qpx, IBV_WR_RDMA_READ, rkey, raddr, 0);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
                              uint64_t compare, uint64_t swap)
{
	struct emu_send_req *r = wqe_begin(qpx, IBV_WR_ATOMIC_CMP_AND_SWP);

	if (!r)
		return;
	r->rkey = rkey;
	r->raddr = raddr;
	r->compare_add = compare;
	r->swap = swap;
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	struct emu_send_req *r = wqe_begin(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD);

	if (!r)
		return;
	r->rkey = rkey;
	r->raddr = raddr;
	r->compare_add = add;
}

/* ---- not emulated: the batch fails with EOPNOTSUPP ------------------------ */

static void not_emulated(struct ibv_qp_ex *qpx, const char *what)
{
	struct emu_wr_batch *b = &to_eqp_ex(qpx)->wrb;

	emu_dbg("QP 0x%x: %s is not emulated: wr_complete returns EOPNOTSUPP", qpx->qp_base.qp_num,
	        what);
	b->open = false;
	batch_fail(b, EOPNOTSUPP);
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	not_emulated(qpx, "ibv_wr_send_inv");
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	not_emulated(qpx, "ibv_wr_local_inv");
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
                       const struct ibv_mw_bind_info *info)
{
	(void)mw, (void)rkey, (void)info;
	not_emulated(qpx, "ibv_wr_bind_mw");
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	not_emulated(qpx, "ibv_wr_send_tso (raw packet QPs only)");
}

/* UD: the destination of the WQE just begun, as mlx5's wr_set_ud_addr
 * fills its datagram segment; the data setter then writes the WQE. */
static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct emu_wr_batch *b = &to_eqp_ex(qpx)->wrb;

	if (qpx->qp_base.qp_type != IBV_QPT_UD) {
		not_emulated(qpx, "ibv_wr_set_ud_addr (UD QPs only)");
		return;
	}
	if (!b->open)
		batch_fail(b, EINVAL); /* no opcode call before it */
	if (b->err)
		return;
	b->req.ah = ah;
	b->req.remote_qpn = qpn;
	b->req.remote_qkey = qkey;
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	(void)srqn;
	not_emulated(qpx, "ibv_wr_set_xrc_srqn (XRC QPs only)");
}

static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, const void *wr)
{
	(void)rkey, (void)raddr, (void)wr;
	not_emulated(qpx, "ibv_wr_atomic_write");
}

/* ---- data setters: end the WQE and write it ------------------------------- */

/* The open WQE, for a setter; NULL (and the batch fails) if there is none. */
static struct emu_send_req *wqe_open(struct ibv_qp_ex *qpx)
{
	struct emu_wr_batch *b = &to_eqp_ex(qpx)->wrb;

	if (!b->open)
		batch_fail(b, EINVAL); /* a setter without an opcode call */
	if (b->err)
		return NULL;
	b->open = false;
	return &b->req;
}

static void wqe_end(struct ibv_qp_ex *qpx)
{
	struct emu_qp *qp = to_eqp_ex(qpx);
	struct emu_wr_batch *b = &qp->wrb;
	int err = emu_post_one(qp, &b->req, &b->ctrl8);

	if (err)
		batch_fail(b, err);
	else
		b->posted++;
}

static void set_sges(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sg)
{
	struct emu_qp *qp = to_eqp_ex(qpx);
	struct emu_send_req *r = wqe_open(qpx);

	if (!r)
		return;
	if (n > (size_t)qp->max_send_sge) {
		batch_fail(&qp->wrb, ENOMEM); /* mlx5: more than sq.max_gs */
		return;
	}
	r->sge = sg;
	r->num_sge = n;
	wqe_end(qpx);
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct emu_wr_batch *b = &to_eqp_ex(qpx)->wrb;

	b->sge = (struct ibv_sge){.addr = addr, .length = length, .lkey = lkey};
	set_sges(qpx, 1, &b->sge);
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sg)
{
	set_sges(qpx, n, sg);
}

static void set_inline(struct ibv_qp_ex *qpx, size_t n, const struct ibv_data_buf *bufs)
{
	struct emu_qp *qp = to_eqp_ex(qpx);
	struct emu_send_req *r = wqe_open(qpx);

	if (!r)
		return;
	r->send_flags |= IBV_SEND_INLINE;
	r->inl = bufs;
	r->num_inl = n;
	/* signed, as mlx5 compares against its max_inline_data */
	if ((int64_t)emu_send_inline_len(r) > qp->max_inline) {
		batch_fail(&qp->wrb, ENOMEM);
		return;
	}
	wqe_end(qpx);
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct emu_wr_batch *b = &to_eqp_ex(qpx)->wrb;

	b->buf = (struct ibv_data_buf){.addr = addr, .length = length};
	set_inline(qpx, 1, &b->buf);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n,
                                    const struct ibv_data_buf *bufs)
{
	set_inline(qpx, n, bufs);
}

/* ---- mlx5dv_wr_*: mlx5's own builders ---------------------------------------- */

#define DV_OPS_MLX5                                                                                \
	(MLX5DV_QP_EX_WITH_MR_INTERLEAVED | MLX5DV_QP_EX_WITH_MR_LIST |                            \
	 MLX5DV_QP_EX_WITH_MKEY_CONFIGURE | MLX5DV_QP_EX_WITH_RAW_WQE | MLX5DV_QP_EX_WITH_MEMCPY)

static struct emu_qp *dv_to_eqp(struct mlx5dv_qp_ex *dvx)
{
	return container_of(dvx, struct emu_qp, dvqpx);
}

static void dv_not_emulated(struct mlx5dv_qp_ex *dvx, const char *what)
{
	not_emulated(&dv_to_eqp(dvx)->ibqpx, what);
}

/* The WQE as the caller built it, but for the index, which is the SQ's. */
static void dv_wr_raw_wqe(struct mlx5dv_qp_ex *dvx, const void *wqe)
{
	struct emu_qp *qp = dv_to_eqp(dvx);
	struct emu_wr_batch *b = &qp->wrb;
	struct gnic_mlx5_ctrl_seg c;
	_Alignas(64) uint8_t tmp[GNIC_MLX5_MAX_WQE_BB * GNIC_MLX5_SEND_WQE_BB];
	uint32_t ds, bb, slot;

	if (b->open)
		batch_fail(b, EINVAL); /* the previous opcode call got no setter */
	if (b->err)
		return;
	memcpy(&c, wqe, sizeof(c));
	ds = gnic_be32(c.qpn_ds) & 0x3f;
	bb = (ds + 3) / 4;
	if (!ds) {
		batch_fail(b, EINVAL); /* mlx5 would post a WQE of no size */
		return;
	}
	if (emu_wq_used(&qp->sq) + bb > qp->sq.wqe_cnt) {
		batch_fail(b, ENOMEM);
		return;
	}
	/* mlx5 copies ds * 16 bytes: the rest of the last basic block stays */
	emu_wq_copy_out(&qp->sq, qp->sq.head, tmp, bb);
	memcpy(tmp, wqe, (size_t)ds * GNIC_MLX5_SEG_SIZE);
	c.opmod_idx_opcode = gnic_be32((gnic_be32(c.opmod_idx_opcode) & 0xff0000ffu) |
	                               ((qp->sq.head & 0xffffu) << 8));
	memcpy(tmp, &c.opmod_idx_opcode, sizeof(c.opmod_idx_opcode));
	emu_wq_copy_in(&qp->sq, qp->sq.head, tmp, bb);
	memcpy(&b->ctrl8, tmp, sizeof(b->ctrl8));
	slot = emu_wq_slot(&qp->sq, qp->sq.head);
	qp->sq.wrid[slot] = qp->ibqpx.wr_id;
	qp->sq_wqe_end[slot] = qp->sq.head + bb;
	qp->sq_opcode[slot] = IBV_WC_DRIVER2;
	qp->sq.head += bb;
	b->posted++;
}

static void dv_wr_mr_interleaved(struct mlx5dv_qp_ex *dvx, struct mlx5dv_mkey *mkey,
                                 uint32_t access, uint32_t repeat, uint16_t n,
                                 struct mlx5dv_mr_interleaved *data)
{
	(void)mkey, (void)access, (void)repeat, (void)n, (void)data;
	dv_not_emulated(dvx, "mlx5dv_wr_mr_interleaved (no mkeys)");
}

static void dv_wr_mr_list(struct mlx5dv_qp_ex *dvx, struct mlx5dv_mkey *mkey, uint32_t access,
                          uint16_t n, struct ibv_sge *sge)
{
	(void)mkey, (void)access, (void)n, (void)sge;
	dv_not_emulated(dvx, "mlx5dv_wr_mr_list (no mkeys)");
}

static void dv_wr_mkey_configure(struct mlx5dv_qp_ex *dvx, struct mlx5dv_mkey *mkey,
                                 uint8_t num_setters, struct mlx5dv_mkey_conf_attr *attr)
{
	(void)mkey, (void)num_setters, (void)attr;
	dv_not_emulated(dvx, "mlx5dv_wr_mkey_configure (no mkeys)");
}

static void dv_wr_set_mkey_access_flags(struct mlx5dv_qp_ex *dvx, uint32_t access)
{
	(void)access;
	dv_not_emulated(dvx, "mlx5dv_wr_set_mkey_access_flags (no mkeys)");
}

static void dv_wr_set_mkey_layout_list(struct mlx5dv_qp_ex *dvx, uint16_t n,
                                       const struct ibv_sge *sge)
{
	(void)n, (void)sge;
	dv_not_emulated(dvx, "mlx5dv_wr_set_mkey_layout_list (no mkeys)");
}

static void dv_wr_set_mkey_layout_interleaved(struct mlx5dv_qp_ex *dvx, uint32_t repeat, uint16_t n,
                                              const struct mlx5dv_mr_interleaved *data)
{
	(void)repeat, (void)n, (void)data;
	dv_not_emulated(dvx, "mlx5dv_wr_set_mkey_layout_interleaved (no mkeys)");
}

static void dv_wr_set_mkey_sig_block(struct mlx5dv_qp_ex *dvx,
                                     const struct mlx5dv_sig_block_attr *attr)
{
	(void)attr;
	dv_not_emulated(dvx, "mlx5dv_wr_set_mkey_sig_block (no mkeys)");
}

static void dv_wr_set_mkey_crypto(struct mlx5dv_qp_ex *dvx, const struct mlx5dv_crypto_attr *attr)
{
	(void)attr;
	dv_not_emulated(dvx, "mlx5dv_wr_set_mkey_crypto (no mkeys)");
}

/* mlx5's check of the length against the device's DMA limit, here 0 */
static void dv_wr_memcpy(struct mlx5dv_qp_ex *dvx, uint32_t dest_lkey, uint64_t dest_addr,
                         uint32_t src_lkey, uint64_t src_addr, size_t length)
{
	struct emu_qp *qp = dv_to_eqp(dvx);

	(void)dest_lkey, (void)dest_addr, (void)src_lkey, (void)src_addr, (void)length;
	emu_dbg("QP 0x%x: mlx5dv_wr_memcpy: the device has no DMA engine (max_wr_memcpy_length 0)",
	        qp->ibqp.qp_num);
	batch_fail(&qp->wrb, EINVAL);
}

int emu_qp_ex_check_dv(uint64_t dv_ops)
{
	if (dv_ops & ~(uint64_t)DV_OPS_MLX5) {
		emu_info("mlx5dv_create_qp: send_ops_flags 0x%llx: unknown to mlx5",
		         (unsigned long long)dv_ops);
		return EOPNOTSUPP;
	}
	if (dv_ops & MLX5DV_QP_EX_WITH_MEMCPY) {
		emu_info("mlx5dv_create_qp: MLX5DV_QP_EX_WITH_MEMCPY: the device has no DMA "
		         "engine (no DMA MMO)");
		return EOPNOTSUPP;
	}
	return 0;
}

void emu_qp_ex_init_dv(struct emu_qp *qp, uint64_t dv_ops)
{
	struct mlx5dv_qp_ex *d = &qp->dvqpx;

	if (!dv_ops)
		return;
	d->wr_raw_wqe = dv_wr_raw_wqe;
	d->wr_mr_interleaved = dv_wr_mr_interleaved;
	d->wr_mr_list = dv_wr_mr_list;
	d->wr_mkey_configure = dv_wr_mkey_configure;
	d->wr_set_mkey_access_flags = dv_wr_set_mkey_access_flags;
	d->wr_set_mkey_layout_list = dv_wr_set_mkey_layout_list;
	d->wr_set_mkey_layout_interleaved = dv_wr_set_mkey_layout_interleaved;
	d->wr_set_mkey_sig_block = dv_wr_set_mkey_sig_block;
	d->wr_set_mkey_crypto = dv_wr_set_mkey_crypto;
	d->wr_memcpy = dv_wr_memcpy;
}

/* rdma-core's: the mlx5dv_qp_ex inside the QP of an ibv_qp_ex. */
EMU_EXPORT struct mlx5dv_qp_ex *gemu_mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qpx)
{
	if (!qpx || !gemu_is_emu_context(qpx->qp_base.context)) {
		errno = EINVAL;
		return NULL;
	}
	return &to_eqp_ex(qpx)->dvqpx;
}

/* ---- setup ---------------------------------------------------------------- */

void emu_qp_ex_init(struct emu_qp *qp)
{
	struct ibv_qp_ex *x = &qp->ibqpx;

	qp->wr_api = true;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_send_inv = wr_send_inv;
	x->wr_local_inv = wr_local_inv;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_atomic_write = wr_atomic_write;
}

/* rdma-core's ibv_qp_to_qp_ex: the QP's ibv_qp_ex if it was made with
 * send_ops_flags, else NULL (errno untouched, as rdma-core leaves it). */
EMU_EXPORT struct ibv_qp_ex *gemu_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct emu_qp *qp;

	if (!ibqp || !gemu_is_emu_context(ibqp->context))
		return NULL;
	qp = to_eqp(ibqp);
	return qp->wr_api ? &qp->ibqpx : NULL;
}
