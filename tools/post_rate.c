/* SPDX-License-Identifier: MIT */
/*
 * post_rate ("post-only"): how fast device threads reserve, write, publish
 * and ring WQEs when nothing consumes them: the data path's own ceiling,
 * without the NIC. The QPs stay in RESET, which gnic-emu's engine ignores
 * (it looks at a QP's doorbells in RTS or ERR only), and the workers retire
 * their own WQEs, as if the CQEs had come, so the loop never waits for
 * room. In cpu-proxy mode (GNIC_DB_PROXY) it measures the hand-off plus
 * the proxy's posting, on QPs looped back to themselves: the proxy frees
 * ring and SQ space only on completions, so there the NIC consumes the
 * WRITEs. Afterwards every QP's counters, doorbell and WQE bytes are
 * checked where the QP's struct lives.
 */
#ifdef PERF_DEV_PASS
/* Every published WQE is retired, as if its CQE had come: sq_retired is
 * raised to sq_ready with a compare-and-swap (a lock-free max), so the
 * retiring is not what the figure measures (it used to take the CQ-poll
 * lock, which cost warp and thread scope most of their rate); only
 * published WQEs, so no slot a writer still fills is handed out again. */
GNIC_DEVFN int post_rate_retire(const struct pd_side *s, struct gnic_dev_qp *qp)
{
	uint64_t ready = gnic_load_acq64(&qp->sq_ready), cur = gnic_load_acq64(&qp->sq_retired);

	(void)s;
	while (cur < ready) {
		uint64_t seen = gnic_cas_sc64(&qp->sq_retired, cur, ready);

		if (seen == cur)
			break;
		cur = seen;
	}
	return GNIC_DEV_OK;
}

GNIC_DEVFN int post_rate_iter(const struct pd_side *s, struct gnic_dev_qp *q, int64_t i, int *op)
{
	int rc;

	*op = PD_OP_PUT;
	rc = pd_put(s, q, perf_ring_src(&s->r, perf_ring_region(&s->r, i)),
	            perf_ring_dst(&s->r, perf_ring_slot(&s->r, i)), (uint32_t)s->r.size);
	if (rc == 0 && q->db_mode != GNIC_DB_PROXY && pd_is_leader(s->scope)) {
		*op = PD_OP_RETIRE;
		rc = post_rate_retire(s, q);
	}
	return rc;
}

/* Field k (0 ctrl word 0, 1 ctrl word 1, 2 length, 3 lkey, 4 rkey, 5 remote
 * offset, 6 local offset) of the WRITE in BB k. */
GNIC_DEVFN int post_rate_wqe(const struct pd_side *s, struct gnic_dev_qp *qp, uint32_t q,
                             uint64_t k)
{
	const union gnic_bb *bb = (const union gnic_bb *)gnic_dev_sq_slot(qp, k);
	const struct perf_ring *r = &s->r;
	uint64_t got[7], want[7];

	got[0] = gnic_be32(bb->seg.ctrl.opmod_idx_opcode);
	want[0] = gnic_mlx5_ctrl_word0(0, (uint16_t)k, GNIC_MLX5_OPCODE_RDMA_WRITE);
	got[1] = gnic_be32(bb->seg.ctrl.qpn_ds);
	want[1] = gnic_mlx5_ctrl_word1(qp->qpn, 3);
	got[2] = gnic_be32(bb->seg.s2.data.byte_count);
	want[2] = r->size;
	got[3] = gnic_be32(bb->seg.s2.data.lkey);
	want[3] = s->lkey;
	got[4] = gnic_be32(bb->seg.raddr.rkey);
	want[4] = s->rkey;
	got[5] = gnic_be64(bb->seg.raddr.raddr) - s->rbase;
	want[5] =
	    got[5] >= r->dst_off && got[5] < r->sig_off && !((got[5] - r->dst_off) % r->stride)
	        ? got[5]
	        : r->dst_off;
	got[6] = gnic_be64(bb->seg.s2.data.addr) - (uint64_t)(uintptr_t)s->lbase;
	want[6] = got[6] < r->dst_off && !((got[6] - r->src_off) % r->stride) ? got[6] : r->src_off;
	for (int f = 0; f < 7; f++)
		if (got[f] != want[f])
			return pd_fail(s, PD_BAD_WQE, PD_OP_CHECK, q, f, (int64_t)k, got[f],
			               want[f]);
	return 0;
}

/* QP q has taken want BBs since it was made, those from from on in this row.
 * The proxy's counters stand for published, rung and retired (its WQEs
 * are one BB per descriptor: the same SQ indexes). */
GNIC_DEVFN int post_rate_qp(const struct pd_side *s, struct gnic_dev_qp *qp, uint32_t q)
{
	uint64_t want = s->bb[2 * q], from = s->bb[2 * q + 1], got[6];
	int cpu = qp->db_mode == GNIC_DB_CPU, px = qp->db_mode == GNIC_DB_PROXY;

	got[0] = gnic_load_acq64(&qp->sq_reserved);
	got[1] = px ? gnic_load_sys64(&qp->px->consumed) : gnic_load_acq64(&qp->sq_ready);
	got[2] = px ? gnic_load_sys64(&qp->px->done) : gnic_load_acq64(&qp->sq_rung);
	got[3] = px ? want : gnic_load_acq64(&qp->sq_retired);
	got[4] = cpu ? gnic_load_sys64(qp->cpu_db) : want; /* the CPU doorbell word, or */
	got[5] = cpu ? want & 0xffff                       /* the doorbell record's index */
	             : gnic_be32(gnic_load_sys32(&qp->dbrec[GNIC_MLX5_SND_DBR]));
	for (int k = 0; k < 6; k++)
		if (got[k] != (k == 5 ? want & 0xffff : want))
			return pd_fail(s, PD_BAD_COUNTER, PD_OP_CHECK, q, -1, k, got[k],
			               k == 5 ? want & 0xffff : want);
	if (want - from > qp->sq_wqe_cnt) /* older ones were overwritten */
		from = want - qp->sq_wqe_cnt;
	for (uint64_t k = from; k < want; k++)
		if (post_rate_wqe(s, qp, q, k))
			return 1;
	return 0;
}

GNIC_DEVFN void post_rate_dev(const struct pd_side *s, const struct pd_thread *t)
{
	if (s->phase == 0)
		pd_stream(s, t, post_rate_iter, s->qp[0]->db_mode == GNIC_DB_PROXY);
	else if (t->cta == 0 && t->tid == 0)
		for (uint32_t q = 0; q < s->nqps && !post_rate_qp(s, s->qp[q], q); q++)
			;
}
#else
#include <string.h>

#include "perf.h"

static void setup(struct perf_run *r)
{
	struct perf_ep *ep = r->ep[PERF_A];

	memcpy(ep->posted_row, ep->posted, sizeof(ep->posted));
}

/* One WRITE (one BB) per iteration, CTA c on QP c % qps. */
static void run(struct perf_run *r)
{
	struct perf_ep *ep = r->ep[PERF_A];
	uint64_t per_thread = (uint64_t)r->count / perf_writers(r->a);

	perf_dev_run(r, PERF_RUN_A, 0);
	for (int c = 0; c < r->a->ctas; c++)
		ep->posted[c % r->a->qps] += per_thread * (uint64_t)r->a->threads;
}

static bool validate(struct perf_run *r)
{
	perf_dev_run(r, PERF_RUN_A, 1); /* a failure exits there */
	return true;
}

PERF_TEST_DEF(post_rate, PERF_RATE, PERF_MODES_GNIC, PERF_F_SCOPES | PERF_F_UNCONNECTED, "8",
              200000, 20000,
              "WQEs device threads post per second with no consumer (unconnected QPs, retired "
              "by the benchmark), per scope",
              .setup = setup, .run = run, .validate = validate);
#endif
