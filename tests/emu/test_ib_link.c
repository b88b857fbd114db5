// SPDX-License-Identifier: MIT
/*
 * GNIC_EMU_LINK=ib: InfiniBand ports. Each device has a unicast LID of its
 * own (what a subnet manager assigns), a GID table of one entry (fe80:: +
 * the port GUID, type IB), and QPs are addressed by DLID, with or without a
 * GRH: a WRITE across two devices by LID alone and with a GRH; a DLID no
 * device has ends in RETRY_EXC_ERR with nothing written; DLID 0 and a
 * multicast DLID are refused at RTR.
 *
 * Run with GNIC_EMU_LINK=ib GNIC_EMU_DEVICES=2.
 */
#include "common.h"

#define LEN 256u

static int rtr(struct ibv_qp *qp, uint32_t dqpn, uint16_t dlid, const union ibv_gid *dgid,
               const struct t_conn_opts *o)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
	                        .path_mtu = o->mtu,
	                        .dest_qp_num = dqpn,
	                        .rq_psn = o->rq_psn,
	                        .max_dest_rd_atomic = o->max_dest_rd_atomic,
	                        .min_rnr_timer = o->min_rnr_timer};

	a.ah_attr.dlid = dlid;
	a.ah_attr.port_num = 1;
	if (dgid) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *dgid;
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 1;
	}
	return ibv_modify_qp(qp, &a,
	                     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static void conn(struct ibv_qp *qp, uint32_t dqpn, uint16_t dlid, const union ibv_gid *dgid,
                 const struct t_conn_opts *o)
{
	CHECK_OK(t_qp_to(qp, IBV_QPS_RESET));
	CHECK_OK(t_qp_to_init(qp, o));
	CHECK_OK(rtr(qp, dqpn, dlid, dgid, o));
	CHECK_OK(t_qp_to_rts(qp, o));
}

static void check_port(struct ibv_context *ctx, uint16_t *lid, union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	uint64_t guid = ibv_get_device_guid(ctx->device);

	memset(&pa, 0, sizeof(pa));
	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_INFINIBAND);
	CHECK(pa.lid >= 1 && pa.lid <= 0xbfff);
	CHECK_EQ(pa.sm_lid, 1);
	CHECK_EQ(pa.lmc, 0);
	CHECK_OK(ibv_query_gid_ex(ctx, 1, 0, &e, 0));
	CHECK_EQ(e.gid_type, IBV_GID_TYPE_IB);
	CHECK_EQ(e.gid.raw[0], 0xfe);
	CHECK_EQ(e.gid.raw[1], 0x80);
	CHECK_BYTES(&e.gid.raw[2], 0, 6);
	CHECK_MEM(&e.gid.raw[8], &guid, 8);
	CHECK_RET(ibv_query_gid_ex(ctx, 1, 1, &e, 0), ENODATA);
	*lid = pa.lid;
	CHECK_OK(ibv_query_gid(ctx, 1, 0, gid));
}

int main(void)
{
	struct ibv_context *c0 = t_open(T_DEVICE), *c1 = t_open("rocep1s0f1");
	struct ibv_pd *pd0 = CHECK_PTR(ibv_alloc_pd(c0)), *pd1 = CHECK_PTR(ibv_alloc_pd(c1));
	struct ibv_cq *cq0 = t_cq(c0, 16), *cq1 = t_cq(c1, 16);
	uint8_t *sb = t_alloc(LEN, 0), *db = t_alloc(LEN, 0);
	struct ibv_mr *smr = t_reg(pd0, sb, LEN, T_ACCESS_ALL);
	struct ibv_mr *dmr = t_reg(pd1, db, LEN, T_ACCESS_ALL);
	struct ibv_qp *a, *b;
	struct t_qp_caps caps;
	struct t_conn_opts o;
	union ibv_gid g0, g1;
	uint16_t l0, l1, nobody;
	struct ibv_wc wc;

	t_case("ports: InfiniBand, a unicast LID each, one IB GID");
	check_port(c0, &l0, &g0);
	check_port(c1, &l1, &g1);
	CHECK_NE(l0, l1);

	t_qp_caps_default(&caps);
	t_conn_opts_default(&o);
	o.timeout = 10;
	o.retry_cnt = 2;
	a = t_qp(pd0, cq0, cq0, &caps, NULL);
	b = t_qp(pd1, cq1, cq1, &caps, NULL);

	t_case("by LID alone (no GRH): WRITE succeeds");
	conn(a, b->qp_num, l1, NULL, &o);
	conn(b, a->qp_num, l0, NULL, &o);
	t_fill(sb, LEN, 1);
	wc = t_write_once(a, cq0, smr, dmr, LEN, 1);
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(db, sb, LEN);

	t_case("by LID with a GRH: WRITE succeeds");
	conn(a, b->qp_num, l1, &g1, &o);
	conn(b, a->qp_num, l0, &g0, &o);
	t_fill(sb, LEN, 2);
	wc = t_write_once(a, cq0, smr, dmr, LEN, 2);
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(db, sb, LEN);

	t_case("a DLID no port has: RETRY_EXC_ERR, nothing written");
	nobody = (uint16_t)(l1 == 0xbfff ? l1 - 1 : l1 + 1);
	if (nobody == l0)
		nobody = (uint16_t)(nobody == 0xbfff ? nobody - 2 : nobody + 1);
	conn(a, b->qp_num, nobody, NULL, &o);
	memset(db, 0, LEN);
	wc = t_write_once(a, cq0, smr, dmr, LEN, 3);
	CHECK_WC(&wc, 3, IBV_WC_RETRY_EXC_ERR, wc.opcode);
	CHECK_BYTES(db, 0, LEN);

	t_case("DLID 0 and a multicast DLID are refused at RTR");
	CHECK_OK(t_qp_to(a, IBV_QPS_RESET));
	CHECK_OK(t_qp_to_init(a, &o));
	CHECK_RET(rtr(a, b->qp_num, 0, NULL, &o), EINVAL);
	CHECK_RET(rtr(a, b->qp_num, 0xc001, NULL, &o), EINVAL);
	CHECK_EQ(t_qp_state(a), IBV_QPS_INIT);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
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
