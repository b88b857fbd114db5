// SPDX-License-Identifier: MIT
/*
 * The source GID of a connection, as on a RoCE port: any valid entry of the
 * GID table may be the sgid and any of the peer's entries the dgid, as long
 * as both QPs use the same RoCE version; a RoCE v1 QP and a v2 QP never
 * meet (the packets of one are dropped at the other: RETRY_EXC_ERR). An
 * empty entry is refused at RTR (ENODATA) and the QP stays in INIT; what
 * was set (sgid index, traffic class, SL) reads back from query_qp.
 *
 * Run with GNIC_EMU_DEVICES=2: the cases cross two devices too.
 */
#include "common.h"

#define LEN 512u

struct side {
	struct ibv_qp *qp;
	uint8_t sgid;     /* our source entry */
	uint8_t peer_gid; /* the entry of the peer we name as dgid */
	uint8_t tclass, sl;
};

static int rtr(struct side *me, const struct side *peer, const struct t_conn_opts *o)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
	                        .path_mtu = o->mtu,
	                        .dest_qp_num = peer->qp->qp_num,
	                        .rq_psn = o->rq_psn,
	                        .max_dest_rd_atomic = o->max_dest_rd_atomic,
	                        .min_rnr_timer = o->min_rnr_timer};

	a.ah_attr.is_global = 1;
	CHECK_OK(ibv_query_gid(peer->qp->context, 1, me->peer_gid, &a.ah_attr.grh.dgid));
	a.ah_attr.grh.sgid_index = me->sgid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.grh.traffic_class = me->tclass;
	a.ah_attr.sl = me->sl;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(me->qp, &a,
	                     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static void connect_side(struct side *me, const struct side *peer, const struct t_conn_opts *o)
{
	CHECK_OK(t_qp_to(me->qp, IBV_QPS_RESET));
	CHECK_OK(t_qp_to_init(me->qp, o));
	CHECK_OK(rtr(me, peer, o));
	CHECK_OK(t_qp_to_rts(me->qp, o));
}

int main(void)
{
	struct ibv_context *c0 = t_open(T_DEVICE), *c1 = t_open("rocep1s0f1");
	struct ibv_pd *pd0 = CHECK_PTR(ibv_alloc_pd(c0)), *pd1 = CHECK_PTR(ibv_alloc_pd(c1));
	struct ibv_cq *cq0 = t_cq(c0, 16), *cq1 = t_cq(c1, 16);
	uint8_t *sb = t_alloc(LEN, 0), *db = t_alloc(LEN, 0);
	struct ibv_mr *smr = t_reg(pd0, sb, LEN, T_ACCESS_ALL);
	struct ibv_mr *dmr = t_reg(pd1, db, LEN, T_ACCESS_ALL);
	struct t_qp_caps caps;
	struct t_conn_opts o;
	struct side a, b;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;
	uint64_t id = 1;

	t_qp_caps_default(&caps);
	t_conn_opts_default(&o);
	o.timeout = 10; /* 4.2 ms, so the mismatch fails fast */
	o.retry_cnt = 2;
	a = (struct side){.qp = t_qp(pd0, cq0, cq0, &caps, NULL)};
	b = (struct side){.qp = t_qp(pd1, cq1, cq1, &caps, NULL)};

	/* same version: every pairing of forms moves the bytes */
	static const uint8_t same[][4] = {/* a.sgid, a names b's, b.sgid, b names a's */
	                                  {3, 3, 3, 3}, {1, 1, 1, 1}, {1, 3, 3, 1},
	                                  {0, 0, 0, 0}, {2, 2, 2, 2}, {0, 2, 2, 0}};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		t_case("sgid %u -> peer entry %u, peer sgid %u -> entry %u: WRITE succeeds",
		       same[i][0], same[i][1], same[i][2], same[i][3]);
		a.sgid = same[i][0];
		a.peer_gid = same[i][1];
		b.sgid = same[i][2];
		b.peer_gid = same[i][3];
		connect_side(&a, &b, &o);
		connect_side(&b, &a, &o);
		t_fill(sb, LEN, (unsigned)i + 1);
		memset(db, 0, LEN);
		wc = t_write_once(a.qp, cq0, smr, dmr, LEN, id);
		CHECK_WC(&wc, id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK_MEM(db, sb, LEN);
		id++;
	}

	/* a RoCE v2 QP and a RoCE v1 QP: the requests are dropped */
	static const uint8_t mixed[][2] = {{3, 2}, {1, 0}, {2, 3}};
	for (size_t i = 0; i < sizeof(mixed) / sizeof(mixed[0]); i++) {
		t_case("sgid %u (RoCE v%d) to a peer on sgid %u (v%d): RETRY_EXC_ERR, nothing "
		       "written",
		       mixed[i][0], mixed[i][0] % 2 + 1, mixed[i][1], mixed[i][1] % 2 + 1);
		a.sgid = mixed[i][0];
		a.peer_gid = mixed[i][1];
		b.sgid = mixed[i][1];
		b.peer_gid = mixed[i][0];
		connect_side(&a, &b, &o);
		connect_side(&b, &a, &o);
		t_fill(sb, LEN, 99);
		memset(db, 0, LEN);
		wc = t_write_once(a.qp, cq0, smr, dmr, LEN, id);
		CHECK_WC(&wc, id, IBV_WC_RETRY_EXC_ERR, wc.opcode);
		CHECK_BYTES(db, 0, LEN);
		id++;
	}

	t_case("an empty sgid entry is refused at RTR with ENODATA; the QP stays in INIT");
	a.sgid = 4;
	a.peer_gid = 3;
	b.sgid = 3;
	CHECK_OK(t_qp_to(a.qp, IBV_QPS_RESET));
	CHECK_OK(t_qp_to_init(a.qp, &o));
	CHECK_RET(rtr(&a, &b, &o), ENODATA);
	a.sgid = 255;
	CHECK_RET(rtr(&a, &b, &o), ENODATA);
	CHECK_EQ(t_qp_state(a.qp), IBV_QPS_INIT);

	t_case("sgid index, traffic class and SL read back from query_qp");
	a.sgid = 3;
	a.tclass = 106; /* DSCP 26 (AF31), ECT(0) */
	a.sl = 3;
	CHECK_OK(rtr(&a, &b, &o));
	memset(&qa, 0, sizeof(qa));
	CHECK_OK(ibv_query_qp(a.qp, &qa, IBV_QP_AV, &qia));
	CHECK_EQ(qa.ah_attr.grh.sgid_index, 3);
	CHECK_EQ(qa.ah_attr.grh.traffic_class, 106);
	CHECK_EQ(qa.ah_attr.sl, 3);
	CHECK_EQ(qa.ah_attr.is_global, 1);

	CHECK_OK(ibv_destroy_qp(a.qp));
	CHECK_OK(ibv_destroy_qp(b.qp));
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	CHECK_OK(ibv_destroy_cq(cq0));
	CHECK_OK(ibv_destroy_cq(cq1));
	CHECK_OK(ibv_dealloc_pd(pd0));
	CHECK_OK(ibv_dealloc_pd(pd1));
	CHECK_OK(ibv_close_device(c0));
	CHECK_OK(ibv_close_device(c1));
	free(sb);
	free(db);
	printf("PASS\n");
	return T_EXIT_PASS;
}
