// SPDX-License-Identifier: MIT
/*
 * RAW_PACKET QPs on gnic-emu's loopback Ethernet port (no GNIC_EMU_ETH_IF):
 * a frame one QP sends comes back into the device's flow steering, which
 * hands it to the QP of the first matching rule or drops it.
 *
 *   qp         creation, the kernel's state table for raw packet QPs,
 *              post_send's checks
 *   steer_*    each match field of ibv_flow_spec (ETH dst/src MAC,
 *              EtherType, VLAN; IPv4 src/dst, proto/TOS/TTL; IPv6 src/dst,
 *              next header, flow label; UDP and TCP ports), with masks:
 *              the matching frame arrives byte for byte, one differing in
 *              that field does not and is counted as "no rule"
 *   order      priorities, drop rules, MC_DEFAULT and ALL_DEFAULT
 *   sniffer    a SNIFFER rule's QP gets a copy of each frame sent and of
 *              each received, besides the QP steering picks
 *   flow_errs  what ibv_create_flow refuses, and a QP with rules is busy
 *   csum       IBV_SEND_IP_CSUM: IPv4 header, UDP and TCP checksums over
 *              IPv4 and IPv6 against this file's own reference
 *   cqe        the receive CQE's bytes: byte count, L3/L4 header types,
 *              L3/L4 checksum-OK bits, flow tag, QP by user index; and
 *              what ibv_poll_cq / ibv_wc_read_* make of them
 *   dv_wqe     a send WQE written by hand through mlx5dv (as device code
 *              writes it) with 18 bytes of inline headers and cs_flags; and
 *              IBV_SEND_INLINE
 *   drops      no receive WQE, a QP not yet in RTR, a frame longer than
 *              the WQE: counted, WQE kept
 *   errors     a receive WQE with a bad lkey: LOCAL_PROT, the QP in ERR,
 *              the rest of its RQ and SQ flushed; a send WQE with a bad
 *              lkey: LOCAL_PROT on the send side
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gnic/gnic_emu.h"
#include "gnic/gnic_mlx5.h"

#define SLOT   2048 /* bytes of one receive buffer */
#define NSLOT  32
#define TXOFF  (NSLOT * SLOT)
#define BUFLEN (TXOFF + 4 * SLOT)

int gemu_qp_engine_worker(struct ibv_qp *qp); /* libgnic_emu */

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq;
static struct ibv_cq_ex *rcqx;
static struct ibv_qp *tx, *rx, *rx2;
static uint8_t *buf;
static struct ibv_mr *mr;
static struct mlx5dv_cq rcq_dv;
static uint32_t rcq_seen; /* CQEs of rcqx consumed */
static int (*eth_stats)(struct ibv_context *, struct gemu_eth_stats *);

static const uint8_t MAC_A[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0a};
static const uint8_t MAC_B[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0b};

/* ---- reference frames and checksums ----------------------------------------- */

/* RFC 1071, byte by byte: independent of the emulator's word loop. */
static uint16_t ref_csum(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i < n; i++)
		sum += (i & 1) ? p[i] : (uint32_t)p[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

struct frame_opts {
	int ipv6;  /* else IPv4 */
	int proto; /* 17 UDP, 6 TCP */
	int vlan;  /* a 802.1Q tag with this TCI + 1 (0: none) */
	uint8_t src_ip[16], dst_ip[16];
	uint16_t sport, dport;
	uint8_t tos, ttl;
	uint32_t flow_label;
	uint32_t payload;
	int good_csum;      /* fill every checksum (else leave them 0) */
	uint16_t ethertype; /* non-IP frames: this EtherType and payload bytes */
	uint8_t dmac_xor;   /* into the destination MAC's last byte */
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The pseudo header's sum for an L4 segment of len bytes. */
static uint32_t pseudo(const struct frame_opts *o, uint32_t len)
{
	uint8_t ph[40];
	size_t n = 0;
	uint32_t sum = 0;

	if (o->ipv6) {
		memcpy(ph, o->src_ip, 16);
		memcpy(ph + 16, o->dst_ip, 16);
		n = 32;
	} else {
		memcpy(ph, o->src_ip, 4);
		memcpy(ph + 4, o->dst_ip, 4);
		n = 8;
	}
	for (size_t i = 0; i < n; i += 2)
		sum += (uint32_t)ph[i] << 8 | ph[i + 1];
	return sum + (uint32_t)o->proto + len;
}

/* Build the frame into f; returns its length. The L4 checksum offset into
 * *csum_at (0: none). */
static uint32_t build(uint8_t *f, const struct frame_opts *o, uint32_t *csum_at)
{
	uint32_t off = 12, l4len, l3, l4;

	memcpy(f, MAC_B, 6);
	f[5] ^= o->dmac_xor;
	memcpy(f + 6, MAC_A, 6);
	if (o->vlan) {
		put16(f + 12, 0x8100);
		put16(f + 14, (uint16_t)(o->vlan - 1));
		off = 16;
	}
	if (o->ethertype) {
		put16(f + off, o->ethertype);
		for (uint32_t i = 0; i < o->payload; i++)
			f[off + 2 + i] = (uint8_t)(i * 7 + 1);
		*csum_at = 0;
		return off + 2 + o->payload;
	}
	put16(f + off, o->ipv6 ? 0x86dd : 0x0800);
	l3 = off + 2;
	l4len = (o->proto == 6 ? 20 : 8) + o->payload;
	if (o->ipv6) {
		uint32_t w0 = 6u << 28 | (uint32_t)o->tos << 20 | (o->flow_label & 0xfffff);

		f[l3] = (uint8_t)(w0 >> 24);
		f[l3 + 1] = (uint8_t)(w0 >> 16);
		f[l3 + 2] = (uint8_t)(w0 >> 8);
		f[l3 + 3] = (uint8_t)w0;
		put16(f + l3 + 4, (uint16_t)l4len);
		f[l3 + 6] = (uint8_t)o->proto;
		f[l3 + 7] = o->ttl;
		memcpy(f + l3 + 8, o->src_ip, 16);
		memcpy(f + l3 + 24, o->dst_ip, 16);
		l4 = l3 + 40;
	} else {
		memset(f + l3, 0, 20);
		f[l3] = 0x45;
		f[l3 + 1] = o->tos;
		put16(f + l3 + 2, (uint16_t)(20 + l4len));
		put16(f + l3 + 4, 0x1234);
		f[l3 + 8] = o->ttl;
		f[l3 + 9] = (uint8_t)o->proto;
		memcpy(f + l3 + 12, o->src_ip, 4);
		memcpy(f + l3 + 16, o->dst_ip, 4);
		if (o->good_csum)
			put16(f + l3 + 10, ref_csum(f + l3, 20, 0));
		l4 = l3 + 20;
	}
	memset(f + l4, 0, o->proto == 6 ? 20 : 8);
	put16(f + l4, o->sport);
	put16(f + l4 + 2, o->dport);
	if (o->proto == 6) {
		f[l4 + 12] = 5 << 4;
		f[l4 + 13] = 0x18; /* PSH ACK */
		*csum_at = l4 + 16;
	} else {
		put16(f + l4 + 4, (uint16_t)l4len);
		*csum_at = l4 + 6;
	}
	for (uint32_t i = 0; i < o->payload; i++)
		f[l4 + (o->proto == 6 ? 20 : 8) + i] = (uint8_t)(i * 13 + 5);
	if (o->good_csum) {
		uint16_t c = ref_csum(f + l4, l4len, pseudo(o, l4len));

		if (o->proto == 17 && c == 0)
			c = 0xffff;
		put16(f + *csum_at, c);
	}
	return l4 + l4len;
}

static struct frame_opts udp4(void)
{
	struct frame_opts o = {
	    .proto = 17, .sport = 1111, .dport = 2222, .ttl = 64, .payload = 100, .good_csum = 1};

	memcpy(o.src_ip, (uint8_t[]){10, 1, 2, 3}, 4);
	memcpy(o.dst_ip, (uint8_t[]){10, 4, 5, 6}, 4);
	return o;
}

static struct frame_opts udp6(void)
{
	struct frame_opts o = udp4();

	o.ipv6 = 1;
	for (int i = 0; i < 16; i++) {
		o.src_ip[i] = (uint8_t)(0x20 + i);
		o.dst_ip[i] = (uint8_t)(0x40 + i);
	}
	o.src_ip[0] = 0xfd;
	o.dst_ip[0] = 0xfd;
	o.flow_label = 0x12345;
	return o;
}

/* ---- the fixture ---------------------------------------------------------------- */

static struct ibv_qp *raw_qp(struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr a = {
	    .send_cq = scq,
	    .recv_cq = rcq,
	    .cap = {.max_send_wr = 64, .max_recv_wr = NSLOT, .max_send_sge = 2, .max_recv_sge = 2},
	    .qp_type = IBV_QPT_RAW_PACKET};

	return CHECK_PTR(ibv_create_qp(pd, &a));
}

static void to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};

	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT));
	a.qp_state = IBV_QPS_RTR;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
}

static struct gemu_eth_stats stats(void)
{
	struct gemu_eth_stats s;

	CHECK_OK(eth_stats(ctx, &s));
	return s;
}

static void setup(void)
{
	struct ibv_cq_init_attr_ex ca = {
	    .cqe = 256, .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG};
	struct mlx5dv_obj obj = {.cq = {.in = NULL, .out = &rcq_dv}};

	ctx = t_open(T_DEVICE);
	pd = CHECK_PTR(ibv_alloc_pd(ctx));
	scq = t_cq(ctx, 256);
	rcqx = CHECK_PTR(ibv_create_cq_ex(ctx, &ca));
	obj.cq.in = ibv_cq_ex_to_cq(rcqx);
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ));
	buf = t_alloc(BUFLEN, 0);
	mr = t_reg(pd, buf, BUFLEN, IBV_ACCESS_LOCAL_WRITE);
	tx = raw_qp(ibv_cq_ex_to_cq(rcqx));
	rx = raw_qp(ibv_cq_ex_to_cq(rcqx));
	rx2 = raw_qp(ibv_cq_ex_to_cq(rcqx));
	to_rts(tx);
	to_rts(rx);
	to_rts(rx2);
	eth_stats = (int (*)(struct ibv_context *, struct gemu_eth_stats *))dlsym(RTLD_DEFAULT,
	                                                                          "gemu_eth_stats");
	CHECK(eth_stats != NULL);
}

static void post_rx(struct ibv_qp *qp, int slot, uint32_t len)
{
	t_post_recv_buf(qp, (uint64_t)slot, buf + (size_t)slot * SLOT, len, mr->lkey);
}

/* Send frame f (len bytes) from tx and wait for its send CQE: the loopback
 * port has steered it by then. */
static void send_frame(const uint8_t *f, uint32_t len, unsigned flags)
{
	struct ibv_sge sge = {(uintptr_t)(buf + TXOFF), len, mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 7,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED | flags};
	struct ibv_wc wc;

	memcpy(buf + TXOFF, f, len);
	t_post_send(tx, &wr);
	wc = t_poll1(scq, "the frame's send CQE");
	CHECK_WC(&wc, 7, IBV_WC_SUCCESS, IBV_WC_SEND);
}

struct got {
	int n;
	struct ibv_wc wc;
	uint32_t tag;
	struct gnic_mlx5_cqe64 cqe; /* its raw bytes */
};

/* The receive completion waiting on rcqx, if any (the frame was steered
 * before its send CQE, so one is there at once or never). */
static struct got take_rx(void)
{
	struct ibv_poll_cq_attr pa = {0};
	struct got g = {0};

	g.cqe = ((struct gnic_mlx5_cqe64 *)rcq_dv.buf)[rcq_seen & (rcq_dv.cqe_cnt - 1)];
	if (ibv_start_poll(rcqx, &pa) == ENOENT)
		return g;
	g.n = 1;
	g.wc.wr_id = rcqx->wr_id;
	g.wc.status = rcqx->status;
	g.wc.opcode = ibv_wc_read_opcode(rcqx);
	g.wc.byte_len = ibv_wc_read_byte_len(rcqx);
	g.wc.qp_num = ibv_wc_read_qp_num(rcqx);
	g.wc.wc_flags = ibv_wc_read_wc_flags(rcqx);
	g.tag = ibv_wc_read_flow_tag(rcqx);
	CHECK_EQ(ibv_next_poll(rcqx), ENOENT); /* exactly one */
	ibv_end_poll(rcqx);
	rcq_seen++;
	return g;
}

/* Frame f must reach qp (in receive slot `slot`, posted here) intact. */
static struct got expect_rx(struct ibv_qp *qp, const uint8_t *f, uint32_t len, unsigned flags)
{
	static int slot;
	struct got g;

	slot = (slot + 1) % NSLOT;
	memset(buf + (size_t)slot * SLOT, 0xee, SLOT);
	post_rx(qp, slot, SLOT);
	send_frame(f, len, flags);
	g = take_rx();
	CHECK_EQ(g.n, 1);
	CHECK_EQ(g.wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(g.wc.opcode, IBV_WC_RECV);
	CHECK_EQ(g.wc.wr_id, (uint64_t)slot);
	CHECK_EQ(g.wc.qp_num, qp->qp_num);
	CHECK_EQ(g.wc.byte_len, len);
	if (!(flags & IBV_SEND_IP_CSUM))
		CHECK_MEM(buf + (size_t)slot * SLOT, f, len);
	CHECK_EQ(buf[(size_t)slot * SLOT + len], 0xee);
	return g;
}

/* Frame f must reach no QP and be counted as matching no rule. */
static void expect_no_rule(const uint8_t *f, uint32_t len)
{
	struct gemu_eth_stats before = stats(), after;

	send_frame(f, len, 0);
	CHECK_EQ(take_rx().n, 0);
	after = stats();
	CHECK_EQ(after.rx_frames, before.rx_frames + 1);
	CHECK_EQ(after.rx_no_rule, before.rx_no_rule + 1);
	CHECK_EQ(after.rx_delivered, before.rx_delivered);
}

/* Drain rx's posted receives (flush by going through ERR and back). */
static void reset_rx(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
	to_rts(qp);
}

/* ---- rules ------------------------------------------------------------------------ */

struct rule {
	struct ibv_flow_attr attr;
	uint8_t specs[512];
};

static size_t rule_len;

static void rule_init(struct rule *r, uint16_t priority)
{
	memset(r, 0, sizeof(*r));
	r->attr.type = IBV_FLOW_ATTR_NORMAL;
	r->attr.priority = priority;
	r->attr.port = 1;
	r->attr.size = sizeof(r->attr);
	rule_len = 0;
}

static void rule_add(struct rule *r, const void *spec, size_t size)
{
	memcpy(r->specs + rule_len, spec, size);
	rule_len += size;
	r->attr.size = (uint16_t)(sizeof(r->attr) + rule_len);
	r->attr.num_of_specs++;
}

static void add_tag(struct rule *r, uint32_t tag)
{
	struct ibv_flow_spec_action_tag t = {
	    .type = IBV_FLOW_SPEC_ACTION_TAG, .size = sizeof(t), .tag_id = tag};

	rule_add(r, &t, sizeof(t));
}

static struct ibv_flow *flow(struct ibv_qp *qp, struct rule *r)
{
	return CHECK_PTR(ibv_create_flow(qp, &r->attr));
}

static void flow_refused(struct ibv_qp *qp, struct rule *r, int err, const char *what)
{
	t_case("create_flow refuses %s: %d", what, err);
	errno = 0;
	CHECK(ibv_create_flow(qp, &r->attr) == NULL);
	CHECK_EQ(errno, err);
}

static const struct ibv_flow_spec_eth eth_dst_rule = {
    .type = IBV_FLOW_SPEC_ETH,
    .size = sizeof(struct ibv_flow_spec_eth),
    .val = {.dst_mac = {0x02, 0, 0, 0, 0, 0x0b}},
    .mask = {.dst_mac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
};

/* ---- cases ------------------------------------------------------------------------- */

static void test_qp(void)
{
	struct ibv_qp_init_attr a = {
	    .send_cq = scq,
	    .recv_cq = scq,
	    .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RAW_PACKET};
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0};
	struct ibv_qp_init_attr qi;
	struct ibv_qp *qp;
	struct ibv_sge sge = {(uintptr_t)buf, 64, mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE}, *bad;

	t_case("qp: RAW_PACKET is created, queries as one");
	qp = CHECK_PTR(ibv_create_qp(pd, &a));
	CHECK_GE(a.cap.max_send_wr, 8);
	CHECK_OK(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi));
	CHECK_EQ(qi.qp_type, IBV_QPT_RAW_PACKET);
	CHECK_EQ(qa.qp_state, IBV_QPS_RESET);

	t_case("qp: every RAW_PACKET QP is engine worker 0's (steering runs under its lock)");
	CHECK_EQ(gemu_qp_engine_worker(qp), 0);
	CHECK_EQ(gemu_qp_engine_worker(tx), 0);
	CHECK_EQ(gemu_qp_engine_worker(rx), 0);
	CHECK_EQ(gemu_qp_engine_worker(rx2), 0);

	t_case("qp: RESET->INIT needs the port and takes no P_Key or access flags");
	qa.qp_state = IBV_QPS_INIT;
	CHECK_RET(ibv_modify_qp(qp, &qa, IBV_QP_STATE), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX), EINVAL);
	qa.port_num = 2;
	CHECK_RET(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
	qa.port_num = 1;
	CHECK_OK(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT));

	t_case("qp: INIT->INIT takes no port; INIT->RTR and RTR->RTS no AV, PSN, timeouts");
	qa.qp_state = IBV_QPS_INIT;
	CHECK_RET(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
	CHECK_OK(ibv_modify_qp(qp, &qa, IBV_QP_STATE));
	qa.qp_state = IBV_QPS_RTR;
	CHECK_RET(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV), EINVAL);
	CHECK_RET(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_RQ_PSN), EINVAL);
	CHECK_OK(ibv_modify_qp(qp, &qa, IBV_QP_STATE));
	qa.qp_state = IBV_QPS_RTS;
	CHECK_RET(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);
	CHECK_OK(ibv_modify_qp(qp, &qa, IBV_QP_STATE));

	t_case("qp: post_send takes SEND only, with at least one SGE");
	CHECK_RET(ibv_post_send(qp, &wr, &bad), EINVAL);
	wr.opcode = IBV_WR_SEND;
	wr.num_sge = 0;
	CHECK_RET(ibv_post_send(qp, &wr, &bad), EINVAL);
	CHECK_OK(ibv_destroy_qp(qp));

	t_case("qp: an SRQ or TSO: EOPNOTSUPP");
	{
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
		struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &sa));
		struct ibv_qp_init_attr_ex ex = {.send_cq = scq,
		                                 .recv_cq = scq,
		                                 .cap = a.cap,
		                                 .qp_type = IBV_QPT_RAW_PACKET,
		                                 .comp_mask = IBV_QP_INIT_ATTR_PD |
		                                              IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		                                 .pd = pd,
		                                 .send_ops_flags = IBV_QP_EX_WITH_TSO};

		errno = 0;
		CHECK(ibv_create_qp_ex(ctx, &ex) == NULL);
		CHECK_EQ(errno, EOPNOTSUPP);
		a.srq = srq;
		errno = 0;
		CHECK(ibv_create_qp(pd, &a) == NULL);
		CHECK_EQ(errno, EOPNOTSUPP);
		CHECK_OK(ibv_destroy_srq(srq));
	}

	t_case("qp: the device says RAW_IP_CSUM and managed flow steering");
	{
		struct ibv_device_attr_ex dx;

		CHECK_OK(ibv_query_device_ex(ctx, NULL, &dx));
		CHECK(dx.orig_attr.device_cap_flags & IBV_DEVICE_RAW_IP_CSUM);
		CHECK(dx.orig_attr.device_cap_flags & IBV_DEVICE_MANAGED_FLOW_STEERING);
		CHECK(dx.raw_packet_caps & IBV_RAW_PACKET_CAP_IP_CSUM);
	}
}

/* One field's rule: the frame `hit` must arrive with tag `tag`, `miss`
 * must not. */
static void check_rule(const char *what, struct rule *r, const struct frame_opts *hit,
                       const struct frame_opts *miss)
{
	uint8_t f[SLOT];
	uint32_t at, len;
	struct ibv_flow *fl;
	struct got g;
	static uint32_t tag = 0x100;

	t_case("steer: %s", what);
	add_tag(r, ++tag);
	fl = flow(rx, r);
	len = build(f, hit, &at);
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.tag, tag);
	len = build(f, miss, &at);
	expect_no_rule(f, len);
	CHECK_OK(ibv_destroy_flow(fl));
	len = build(f, hit, &at); /* the rule is gone: so is the frame */
	expect_no_rule(f, len);
}

static void test_steer_eth(void)
{
	struct rule r;
	struct frame_opts hit = udp4(), miss = udp4();
	struct ibv_flow_spec_eth e = eth_dst_rule;

	t_case("steer: no rule at all: every frame is dropped and counted");
	{
		uint8_t f[SLOT];
		uint32_t at, len = build(f, &hit, &at);

		post_rx(rx, 0, SLOT);
		expect_no_rule(f, len);
		reset_rx(rx);
	}

	rule_init(&r, 0);
	rule_add(&r, &e, sizeof(e));
	miss.dmac_xor = 0x01;
	check_rule("ETH destination MAC", &r, &hit, &miss);

	t_case("steer: ETH destination MAC under a mask of its first 5 bytes");
	rule_init(&r, 0);
	e.mask.dst_mac[5] = 0;
	rule_add(&r, &e, sizeof(e));
	hit.dmac_xor = 0x40; /* inside the mask's hole */
	miss.dmac_xor = 0;
	miss.src_ip[0] ^= 0x80; /* ... and a different frame otherwise */
	{
		uint8_t f[SLOT];
		uint32_t at, len;
		struct ibv_flow *fl = flow(rx, &r);

		len = build(f, &hit, &at);
		expect_rx(rx, f, len, 0);
		len = build(f, &miss, &at);
		expect_rx(rx, f, len, 0);
		f[4] ^= 1; /* outside the hole */
		expect_no_rule(f, len);
		CHECK_OK(ibv_destroy_flow(fl));
	}
	hit = udp4();

	rule_init(&r, 0);
	e = (struct ibv_flow_spec_eth){.type = IBV_FLOW_SPEC_ETH, .size = sizeof(e)};
	memcpy(e.val.src_mac, MAC_A, 6);
	memset(e.mask.src_mac, 0xff, 6);
	rule_add(&r, &e, sizeof(e));
	{
		uint8_t f[SLOT];
		uint32_t at, len = build(f, &hit, &at);
		struct ibv_flow *fl = flow(rx, &r);
		struct got g;

		t_case("steer: ETH source MAC");
		g = expect_rx(rx, f, len, 0);
		CHECK_EQ(g.tag, 0); /* no tag action: 0 */
		f[11] ^= 1;
		expect_no_rule(f, len);
		CHECK_OK(ibv_destroy_flow(fl));
	}

	rule_init(&r, 0);
	e = (struct ibv_flow_spec_eth){.type = IBV_FLOW_SPEC_ETH, .size = sizeof(e)};
	e.val.ether_type = htons(0x88b5);
	e.mask.ether_type = 0xffff;
	rule_add(&r, &e, sizeof(e));
	hit = udp4();
	hit.ethertype = 0x88b5;
	hit.payload = 46;
	miss = hit;
	miss.ethertype = 0x88b6;
	check_rule("ETH EtherType (a non-IP frame)", &r, &hit, &miss);

	rule_init(&r, 0);
	e = (struct ibv_flow_spec_eth){.type = IBV_FLOW_SPEC_ETH, .size = sizeof(e)};
	e.val.vlan_tag = htons(100);
	e.mask.vlan_tag = htons(0x0fff);
	e.val.ether_type = htons(0x0800);
	e.mask.ether_type = 0xffff;
	rule_add(&r, &e, sizeof(e));
	hit = udp4();
	hit.vlan = 100 + 1;
	miss = udp4();
	miss.vlan = 101 + 1;
	check_rule("ETH VLAN ID (the EtherType is the one after the tag)", &r, &hit, &miss);
	miss.vlan = 0;
	rule_init(&r, 0);
	rule_add(&r, &e, sizeof(e));
	check_rule("ETH VLAN ID: an untagged frame does not match", &r, &hit, &miss);
}

static void test_steer_ip(void)
{
	struct rule r;
	struct frame_opts hit = udp4(), miss;
	struct ibv_flow_spec_ipv4 v4 = {.type = IBV_FLOW_SPEC_IPV4, .size = sizeof(v4)};
	struct ibv_flow_spec_ipv4_ext v4x = {.type = IBV_FLOW_SPEC_IPV4_EXT, .size = sizeof(v4x)};
	struct ibv_flow_spec_ipv6 v6 = {.type = IBV_FLOW_SPEC_IPV6, .size = sizeof(v6)};

	memcpy(&v4.val.src_ip, hit.src_ip, 4);
	v4.mask.src_ip = 0xffffffff;
	rule_init(&r, 0);
	rule_add(&r, &v4, sizeof(v4));
	miss = hit;
	miss.src_ip[3]++;
	check_rule("IPv4 source", &r, &hit, &miss);

	v4 = (struct ibv_flow_spec_ipv4){.type = IBV_FLOW_SPEC_IPV4, .size = sizeof(v4)};
	memcpy(&v4.val.dst_ip, hit.dst_ip, 4);
	v4.mask.dst_ip = htonl(0xffffff00); /* a /24 */
	rule_init(&r, 0);
	rule_add(&r, &v4, sizeof(v4));
	miss = hit;
	miss.dst_ip[2]++;
	hit.dst_ip[3] = 200; /* still inside the /24 */
	check_rule("IPv4 destination under a /24 mask", &r, &hit, &miss);
	miss = udp6();
	memcpy(miss.dst_ip, hit.dst_ip, 4);
	rule_init(&r, 0);
	rule_add(&r, &v4, sizeof(v4));
	check_rule("an IPv4 spec does not take IPv6", &r, &hit, &miss);

	hit = udp4();
	hit.tos = 0x28;
	hit.ttl = 9;
	v4x.val.proto = 17;
	v4x.mask.proto = 0xff;
	v4x.val.tos = 0x28;
	v4x.mask.tos = 0xff;
	v4x.val.ttl = 9;
	v4x.mask.ttl = 0xff;
	rule_init(&r, 0);
	rule_add(&r, &v4x, sizeof(v4x));
	miss = hit;
	miss.proto = 6;
	check_rule("IPv4_EXT protocol", &r, &hit, &miss);
	miss = hit;
	miss.tos = 0x2c;
	rule_init(&r, 0);
	rule_add(&r, &v4x, sizeof(v4x));
	check_rule("IPv4_EXT TOS", &r, &hit, &miss);
	miss = hit;
	miss.ttl = 10;
	rule_init(&r, 0);
	rule_add(&r, &v4x, sizeof(v4x));
	check_rule("IPv4_EXT TTL", &r, &hit, &miss);

	hit = udp6();
	memcpy(v6.val.src_ip, hit.src_ip, 16);
	memset(v6.mask.src_ip, 0xff, 16);
	rule_init(&r, 0);
	rule_add(&r, &v6, sizeof(v6));
	miss = hit;
	miss.src_ip[15]++;
	check_rule("IPv6 source", &r, &hit, &miss);
	v6 = (struct ibv_flow_spec_ipv6){.type = IBV_FLOW_SPEC_IPV6, .size = sizeof(v6)};
	memcpy(v6.val.dst_ip, hit.dst_ip, 16);
	memset(v6.mask.dst_ip, 0xff, 8); /* a /64 */
	rule_init(&r, 0);
	rule_add(&r, &v6, sizeof(v6));
	miss = hit;
	miss.dst_ip[7]++;
	hit.dst_ip[15] = 0x99;
	check_rule("IPv6 destination under a /64 mask", &r, &hit, &miss);
	hit = udp6();
	v6 = (struct ibv_flow_spec_ipv6){.type = IBV_FLOW_SPEC_IPV6, .size = sizeof(v6)};
	v6.val.next_hdr = 17;
	v6.mask.next_hdr = 0xff;
	v6.val.flow_label = htonl(0x12345);
	v6.mask.flow_label = htonl(0xfffff);
	rule_init(&r, 0);
	rule_add(&r, &v6, sizeof(v6));
	miss = hit;
	miss.flow_label = 0x12346;
	check_rule("IPv6 flow label and next header", &r, &hit, &miss);
	miss = hit;
	miss.proto = 6;
	rule_init(&r, 0);
	rule_add(&r, &v6, sizeof(v6));
	check_rule("IPv6 next header", &r, &hit, &miss);
}

static void test_steer_l4(void)
{
	struct rule r;
	struct frame_opts hit = udp4(), miss;
	struct ibv_flow_spec_tcp_udp u = {.type = IBV_FLOW_SPEC_UDP, .size = sizeof(u)};
	struct ibv_flow_spec_ipv4 v4 = {.type = IBV_FLOW_SPEC_IPV4, .size = sizeof(v4)};

	u.val.dst_port = htons(2222);
	u.mask.dst_port = 0xffff;
	rule_init(&r, 0);
	rule_add(&r, &eth_dst_rule, sizeof(eth_dst_rule));
	rule_add(&r, &v4, sizeof(v4)); /* any IPv4 */
	rule_add(&r, &u, sizeof(u));
	miss = hit;
	miss.dport = 2223;
	check_rule("ETH + IPv4 + UDP destination port", &r, &hit, &miss);
	miss = hit;
	miss.proto = 6; /* TCP with the same ports */
	rule_init(&r, 0);
	rule_add(&r, &u, sizeof(u));
	check_rule("a UDP spec does not take TCP", &r, &hit, &miss);

	u = (struct ibv_flow_spec_tcp_udp){.type = IBV_FLOW_SPEC_UDP, .size = sizeof(u)};
	u.val.src_port = htons(1111);
	u.mask.src_port = 0xffff;
	rule_init(&r, 0);
	rule_add(&r, &u, sizeof(u));
	miss = hit;
	miss.sport = 1112;
	check_rule("UDP source port", &r, &hit, &miss);

	hit.proto = 6;
	u.type = IBV_FLOW_SPEC_TCP;
	u.val.dst_port = htons(2222);
	u.mask.dst_port = htons(0xff00); /* the port's high byte only */
	rule_init(&r, 0);
	rule_add(&r, &u, sizeof(u));
	miss = hit;
	miss.sport = 1112;
	hit.dport = 2222 ^ 0x55;
	check_rule("TCP source port and masked destination port", &r, &hit, &miss);
	hit = udp6();
	hit.proto = 6;
	miss = hit;
	miss.dport = 2222 + 256;
	u = (struct ibv_flow_spec_tcp_udp){.type = IBV_FLOW_SPEC_TCP, .size = sizeof(u)};
	u.val.dst_port = htons(2222);
	u.mask.dst_port = 0xffff;
	rule_init(&r, 0);
	rule_add(&r, &u, sizeof(u));
	check_rule("TCP over IPv6, destination port", &r, &hit, &miss);
}

static void test_order(void)
{
	struct rule r;
	struct frame_opts o = udp4();
	struct ibv_flow_spec_tcp_udp u = {.type = IBV_FLOW_SPEC_UDP, .size = sizeof(u)};
	struct ibv_flow_spec_action_drop d = {.type = IBV_FLOW_SPEC_ACTION_DROP, .size = sizeof(d)};
	struct ibv_flow *f1, *f2, *f3;
	uint8_t f[SLOT];
	uint32_t at, len = build(f, &o, &at);
	struct gemu_eth_stats s0, s1;
	struct got g;

	u.val.dst_port = htons(2222);
	u.mask.dst_port = 0xffff;

	t_case("order: of two matching rules the lower priority value wins, whatever the order");
	rule_init(&r, 5);
	rule_add(&r, &eth_dst_rule, sizeof(eth_dst_rule));
	add_tag(&r, 55);
	f1 = flow(rx, &r);
	rule_init(&r, 2);
	rule_add(&r, &u, sizeof(u));
	add_tag(&r, 22);
	f2 = flow(rx2, &r);
	g = expect_rx(rx2, f, len, 0);
	CHECK_EQ(g.tag, 22);
	CHECK_OK(ibv_destroy_flow(f2));
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.tag, 55);

	t_case("order: the same priority: the older rule wins");
	rule_init(&r, 5);
	rule_add(&r, &u, sizeof(u));
	add_tag(&r, 56);
	f2 = flow(rx2, &r);
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.tag, 55);
	CHECK_OK(ibv_destroy_flow(f2));

	t_case("order: a drop rule of higher priority drops, counted");
	rule_init(&r, 1);
	rule_add(&r, &u, sizeof(u));
	rule_add(&r, &d, sizeof(d));
	f2 = flow(rx2, &r);
	post_rx(rx, 1, SLOT);
	s0 = stats();
	send_frame(f, len, 0);
	CHECK_EQ(take_rx().n, 0);
	s1 = stats();
	CHECK_EQ(s1.rx_drop_rule, s0.rx_drop_rule + 1);
	CHECK_EQ(s1.rx_delivered, s0.rx_delivered);
	CHECK_OK(ibv_destroy_flow(f2));
	CHECK_OK(ibv_destroy_flow(f1));
	reset_rx(rx);

	t_case("order: MC_DEFAULT takes unmatched multicast only; ALL_DEFAULT the rest");
	memset(&r, 0, sizeof(r));
	r.attr.type = IBV_FLOW_ATTR_MC_DEFAULT;
	r.attr.port = 1;
	r.attr.size = sizeof(r.attr);
	f1 = flow(rx2, &r);
	expect_no_rule(f, len);
	f[0] = 0x01; /* 01:00:00:00:00:0b, multicast */
	expect_rx(rx2, f, len, 0);
	r.attr.type = IBV_FLOW_ATTR_ALL_DEFAULT;
	f2 = flow(rx, &r);
	expect_rx(rx2, f, len, 0); /* multicast: MC_DEFAULT first */
	f[0] = 0x02;
	expect_rx(rx, f, len, 0);
	rule_init(&r, 0);
	rule_add(&r, &u, sizeof(u));
	f3 = flow(rx2, &r);
	expect_rx(rx2, f, len, 0); /* NORMAL before the defaults */
	CHECK_OK(ibv_destroy_flow(f3));
	CHECK_OK(ibv_destroy_flow(f2));
	CHECK_OK(ibv_destroy_flow(f1));

	t_case("order: a rule whose first spec is a multicast MAC or IPv4 destination goes after "
	       "every priority (mlx5_ib's multicast table)");
	{
		struct ibv_flow_spec_eth mc = eth_dst_rule;
		struct ibv_flow_spec_ipv4 v4 = {.type = IBV_FLOW_SPEC_IPV4, .size = sizeof(v4)};

		mc.val.dst_mac[0] = 0x01; /* 01:00:00:00:00:0b */
		rule_init(&r, 0);
		rule_add(&r, &mc, sizeof(mc));
		add_tag(&r, 1);
		f1 = flow(rx, &r); /* priority 0, multicast only */
		rule_init(&r, 7);
		rule_add(&r, &u, sizeof(u));
		add_tag(&r, 7);
		f2 = flow(rx2, &r); /* priority 7, any UDP to 2222 */
		f[0] = 0x01;
		g = expect_rx(rx2, f, len, 0);
		CHECK_EQ(g.tag, 7);
		CHECK_OK(ibv_destroy_flow(f2));
		g = expect_rx(rx, f, len, 0);
		CHECK_EQ(g.tag, 1);
		CHECK_OK(ibv_destroy_flow(f1));
		/* a multicast MAC after an IPv4 spec is not the first spec: priority counts */
		rule_init(&r, 0);
		rule_add(&r, &v4, sizeof(v4));
		rule_add(&r, &mc, sizeof(mc));
		add_tag(&r, 2);
		f1 = flow(rx, &r);
		rule_init(&r, 7);
		rule_add(&r, &u, sizeof(u));
		add_tag(&r, 7);
		f2 = flow(rx2, &r);
		g = expect_rx(rx, f, len, 0);
		CHECK_EQ(g.tag, 2);
		CHECK_OK(ibv_destroy_flow(f1));
		/* an IPv4 spec first with a multicast destination: after priority 7 */
		v4.val.dst_ip = htonl(0xe0000001);
		rule_init(&r, 0);
		rule_add(&r, &v4, sizeof(v4));
		add_tag(&r, 3);
		f1 = flow(rx, &r);
		g = expect_rx(rx2, f, len, 0);
		CHECK_EQ(g.tag, 7);
		CHECK_OK(ibv_destroy_flow(f2));
		CHECK_OK(ibv_destroy_flow(f1));
		f[0] = 0x02;
	}
}

/* Every receive completion waiting on rcqx (at most n): QP and tag. */
static int take_all(struct ibv_wc *wc, uint32_t *tag, int n)
{
	struct ibv_poll_cq_attr pa = {0};
	int k = 0;

	if (ibv_start_poll(rcqx, &pa))
		return 0;
	do {
		CHECK(k < n);
		wc[k].wr_id = rcqx->wr_id;
		wc[k].status = rcqx->status;
		wc[k].qp_num = ibv_wc_read_qp_num(rcqx);
		wc[k].byte_len = ibv_wc_read_byte_len(rcqx);
		tag[k++] = ibv_wc_read_flow_tag(rcqx);
	} while (ibv_next_poll(rcqx) == 0);
	ibv_end_poll(rcqx);
	rcq_seen += (uint32_t)k;
	return k;
}

static void test_sniffer(void)
{
	struct rule r;
	struct frame_opts o = udp4();
	uint8_t f[SLOT];
	uint32_t at, len = build(f, &o, &at), tag[4];
	struct ibv_flow *sn, *nf;
	struct ibv_wc wc[4];
	int n;

	t_case("sniffer: a copy of the frame leaving and of it arriving (loopback), besides the "
	       "steered one");
	memset(&r, 0, sizeof(r));
	r.attr.type = IBV_FLOW_ATTR_SNIFFER;
	r.attr.port = 1;
	r.attr.size = sizeof(r.attr);
	sn = flow(rx2, &r); /* no specs, so no tag either: 0 */
	rule_init(&r, 0);
	add_tag(&r, 11);
	nf = flow(rx, &r);
	for (int i = 0; i < 2; i++)
		post_rx(rx2, 10 + i, SLOT);
	post_rx(rx, 12, SLOT);
	send_frame(f, len, 0);
	n = take_all(wc, tag, 4);
	CHECK_EQ(n, 3);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[i].byte_len, len);
		CHECK_EQ(tag[i], wc[i].qp_num == rx2->qp_num ? 0u : 11u);
		CHECK_MEM(buf + (size_t)wc[i].wr_id * SLOT, f, len);
	}
	CHECK_EQ((wc[0].qp_num == rx->qp_num) + (wc[1].qp_num == rx->qp_num) +
	             (wc[2].qp_num == rx->qp_num),
	         1);

	t_case("sniffer: a frame no rule takes is still copied (and counted as no rule)");
	CHECK_OK(ibv_destroy_flow(nf));
	for (int i = 0; i < 2; i++)
		post_rx(rx2, 13 + i, SLOT);
	{
		struct gemu_eth_stats s0 = stats();

		send_frame(f, len, 0);
		CHECK_EQ(take_all(wc, tag, 4), 2);
		CHECK_EQ(stats().rx_no_rule, s0.rx_no_rule + 1);
	}
	CHECK_OK(ibv_destroy_flow(sn));
	reset_rx(rx);
}

static void test_flow_errs(void)
{
	struct rule r;
	struct ibv_flow_spec_eth e = eth_dst_rule;
	struct ibv_flow *fl;

	rule_init(&r, 0);
	r.attr.type = IBV_FLOW_ATTR_SNIFFER;
	rule_add(&r, &e, sizeof(e));
	flow_refused(rx, &r, EINVAL, "a sniffer rule with specs");
	rule_init(&r, 0);
	r.attr.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	flow_refused(rx, &r, EOPNOTSUPP, "DONT_TRAP");
	rule_init(&r, 0);
	r.attr.port = 2;
	flow_refused(rx, &r, EINVAL, "port 2");
	rule_init(&r, 16); /* mlx5 has 16 priorities: 0..15 */
	rule_add(&r, &e, sizeof(e));
	flow_refused(rx, &r, ENOMEM, "priority 16");
	rule_init(&r, 0xffff);
	rule_add(&r, &e, sizeof(e));
	flow_refused(rx, &r, ENOMEM, "priority 0xffff");
	rule_init(&r, 0);
	e.size = sizeof(e) - 2;
	rule_add(&r, &e, sizeof(e));
	flow_refused(rx, &r, EINVAL, "a spec of the wrong size");
	rule_init(&r, 0);
	add_tag(&r, 1u << 24);
	flow_refused(rx, &r, EINVAL, "a flow tag of more than 24 bits");
	rule_init(&r, 0);
	{
		struct ibv_flow_spec_ipv4 v4 = {.type = IBV_FLOW_SPEC_IPV4, .size = sizeof(v4)};
		struct ibv_flow_spec_ipv6 v6 = {.type = IBV_FLOW_SPEC_IPV6, .size = sizeof(v6)};

		rule_add(&r, &v4, sizeof(v4));
		rule_add(&r, &v6, sizeof(v6));
		flow_refused(rx, &r, EINVAL, "IPv4 and IPv6 in one rule");
	}
	rule_init(&r, 0);
	{
		struct ibv_flow_spec_tunnel t = {.type = IBV_FLOW_SPEC_VXLAN_TUNNEL,
		                                 .size = sizeof(t)};

		rule_add(&r, &t, sizeof(t));
		flow_refused(rx, &r, EOPNOTSUPP, "a VXLAN spec");
	}
	rule_init(&r, 0);
	r.attr.num_of_specs = 1; /* a spec the size does not cover */
	flow_refused(rx, &r, EINVAL, "num_of_specs past attr.size");

	t_case("flow_errs: an RC QP takes no rules: EINVAL");
	{
		struct t_qp_caps caps;
		struct ibv_qp *rc;

		t_qp_caps_default(&caps);
		rc = t_qp(pd, scq, scq, &caps, NULL);

		rule_init(&r, 0);
		errno = 0;
		CHECK(ibv_create_flow(rc, &r.attr) == NULL);
		CHECK_EQ(errno, EINVAL);
		CHECK_OK(ibv_destroy_qp(rc));
	}

	t_case("flow_errs: a QP with a rule cannot be destroyed: EBUSY; after the rule, it can");
	{
		struct ibv_qp *qp = raw_qp(scq);

		rule_init(&r, 0);
		fl = flow(qp, &r);
		CHECK_RET(ibv_destroy_qp(qp), EBUSY);
		CHECK_OK(ibv_destroy_flow(fl));
		CHECK_OK(ibv_destroy_qp(qp));
	}
}

/* Frame o sent with IP_CSUM and all checksums zeroed must arrive with them
 * equal to the reference. */
static void check_csum(const char *what, struct frame_opts o)
{
	uint8_t ref[SLOT], f[SLOT];
	uint32_t at, len;
	struct got g;
	struct rule r;
	struct ibv_flow *fl;
	uint8_t *got;
	uint32_t l3 = 14 + (o.vlan ? 4 : 0);

	t_case("csum: %s", what);
	o.good_csum = 1;
	len = build(ref, &o, &at);
	o.good_csum = 0;
	build(f, &o, &at);
	CHECK(memcmp(ref, f, len) != 0 || at == 0); /* the zeroed frame differs */
	rule_init(&r, 0);
	fl = flow(rx, &r); /* everything */
	g = expect_rx(rx, f, len, IBV_SEND_IP_CSUM);
	got = buf + (size_t)g.wc.wr_id * SLOT;
	CHECK_MEM(got, ref, len);
	if (!o.ipv6)
		CHECK_NE(got[l3 + 10] | got[l3 + 11], 0);
	CHECK_NE(got[at] | got[at + 1], 0);
	CHECK_EQ(g.wc.wc_flags & IBV_WC_IP_CSUM_OK, o.ipv6 ? 0u : (unsigned)IBV_WC_IP_CSUM_OK);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_HDS_IP_EXT] &
	             (GNIC_MLX5_CQE_L3_OK | GNIC_MLX5_CQE_L4_OK),
	         GNIC_MLX5_CQE_L3_OK | GNIC_MLX5_CQE_L4_OK);

	t_case("csum: %s, without IP_CSUM: sent as posted (checksums 0), not OK", what);
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.wc.wc_flags & IBV_WC_IP_CSUM_OK, 0u);
	/* IPv4's header checksum 0 is wrong; UDP's 0 over IPv4 means "none" */
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_HDS_IP_EXT],
	         (o.ipv6 ? GNIC_MLX5_CQE_L3_OK : 0) |
	             (o.proto == 17 && !o.ipv6 ? GNIC_MLX5_CQE_L4_OK : 0));
	CHECK_OK(ibv_destroy_flow(fl));
}

static void test_csum(void)
{
	struct frame_opts o = udp4();

	for (uint32_t p = 0; p < 4; p++) {
		o.payload = 1 + p * 333; /* odd and even lengths */
		check_csum("UDP over IPv4", o);
	}
	o.proto = 6;
	check_csum("TCP over IPv4", o);
	o.payload = 1001;
	o.vlan = 7 + 1;
	check_csum("TCP over IPv4 behind a VLAN tag", o);
	o = udp6();
	check_csum("UDP over IPv6", o);
	o.proto = 6;
	o.payload = 777;
	check_csum("TCP over IPv6", o);
}

static void test_cqe(void)
{
	struct rule r;
	struct ibv_flow *fl;
	struct frame_opts o = udp4();
	uint8_t f[SLOT];
	uint32_t at, len;
	struct got g;

	rule_init(&r, 0);
	add_tag(&r, 0xabcdef);
	fl = flow(rx, &r);

	t_case("cqe: UDP/IPv4 with good checksums: opcode RESP_SEND, byte count, types, OK bits, "
	       "tag in sop_drop_qpn, QP in srqn_uidx");
	len = build(f, &o, &at);
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(gnic_mlx5_cqe_opcode(g.cqe.op_own), GNIC_MLX5_CQE_RESP_SEND);
	CHECK_EQ(gnic_be32(g.cqe.byte_cnt), len);
	CHECK_EQ(gnic_be32(g.cqe.sop_drop_qpn) & 0xffffff, 0xabcdefu);
	CHECK_EQ(gnic_be32(g.cqe.srqn_uidx) & 0xffffff, rx->qp_num);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_HDS_IP_EXT], GNIC_MLX5_CQE_L3_OK | GNIC_MLX5_CQE_L4_OK);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_L4_HDR_TYPE_ETC],
	         GNIC_MLX5_CQE_L4_HDR_TYPE_UDP << 4 | GNIC_MLX5_CQE_L3_HDR_TYPE_IPV4 << 2);
	CHECK_EQ(g.tag, 0xabcdefu);
	CHECK_EQ(g.wc.wc_flags & IBV_WC_IP_CSUM_OK, (unsigned)IBV_WC_IP_CSUM_OK);

	t_case("cqe: a bad IPv4 header checksum: L3 not OK, no IP_CSUM_OK");
	f[14 + 10] ^= 0x40;
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_HDS_IP_EXT], GNIC_MLX5_CQE_L4_OK);
	CHECK_EQ(g.wc.wc_flags & IBV_WC_IP_CSUM_OK, 0u);

	t_case("cqe: a bad UDP checksum: L4 not OK");
	len = build(f, &o, &at);
	f[at] ^= 0x01;
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_HDS_IP_EXT], GNIC_MLX5_CQE_L3_OK);
	CHECK_EQ(g.wc.wc_flags & IBV_WC_IP_CSUM_OK, 0u);

	t_case("cqe: UDP over IPv4 with checksum 0 (none sent): L4 OK");
	len = build(f, &o, &at);
	f[at] = f[at + 1] = 0;
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_HDS_IP_EXT], GNIC_MLX5_CQE_L3_OK | GNIC_MLX5_CQE_L4_OK);

	t_case("cqe: TCP/IPv6: types IPv6 and TCP ACK with data, both OK, no IP_CSUM_OK (IPv4 "
	       "only, as rdma-core)");
	o = udp6();
	o.proto = 6;
	len = build(f, &o, &at);
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_L4_HDR_TYPE_ETC],
	         GNIC_MLX5_CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA << 4 | GNIC_MLX5_CQE_L3_HDR_TYPE_IPV6
	                                                               << 2);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_HDS_IP_EXT], GNIC_MLX5_CQE_L3_OK | GNIC_MLX5_CQE_L4_OK);
	CHECK_EQ(g.wc.wc_flags & IBV_WC_IP_CSUM_OK, 0u);

	t_case("cqe: a non-IP frame: no L3, no L4, no OK bits");
	o = udp4();
	o.ethertype = 0x88b5;
	o.payload = 50;
	len = build(f, &o, &at);
	g = expect_rx(rx, f, len, 0);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_L4_HDR_TYPE_ETC], 0);
	CHECK_EQ(g.cqe.rsvd0[GNIC_MLX5_CQE_HDS_IP_EXT], 0);

	t_case("cqe: ibv_poll_cq on a plain CQ reports the frame too");
	{
		struct ibv_cq *cq = t_cq(ctx, 16);
		struct ibv_qp *q = raw_qp(cq);
		struct ibv_flow *f2;
		struct ibv_wc wc;

		to_rts(q);
		rule_init(&r, 0);
		f2 = flow(q, &r); /* priority 0, but newer than fl: add a tag to see */
		CHECK_OK(ibv_destroy_flow(fl));
		o = udp4();
		len = build(f, &o, &at);
		t_post_recv_buf(q, 99, buf, SLOT, mr->lkey);
		send_frame(f, len, 0);
		wc = t_poll1(cq, "the frame's receive");
		CHECK_WC(&wc, 99, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, len);
		CHECK_EQ(wc.qp_num, q->qp_num);
		CHECK(wc.wc_flags & IBV_WC_IP_CSUM_OK);
		CHECK_MEM(buf, f, len);
		CHECK_OK(ibv_destroy_flow(f2));
		CHECK_OK(ibv_destroy_qp(q));
		CHECK_OK(ibv_destroy_cq(cq));
	}
}

/* Write one send WQE into tx's SQ at basic block pi: ctrl, an Ethernet
 * segment with the frame's first 18 bytes inline, one data segment with the
 * rest; ring the record and the register. Returns the next pi. */
static uint16_t dv_send(struct mlx5dv_qp *d, uint16_t pi, const uint8_t *f, uint32_t len,
                        uint8_t cs_flags)
{
	uint8_t *wqe = (uint8_t *)d->sq.buf + (size_t)(pi % d->sq.wqe_cnt) * d->sq.stride;
	struct gnic_mlx5_ctrl_seg *c = (void *)wqe;
	struct gnic_mlx5_eth_seg *e = (void *)(wqe + 16);
	struct gnic_mlx5_data_seg *ds = (void *)(wqe + 48); /* 14 + 18 -> 32 into the segment */
	uint64_t reg;

	memcpy(buf + TXOFF, f + 18, len - 18);
	memset(wqe, 0, 64);
	c->opmod_idx_opcode = gnic_be32(gnic_mlx5_ctrl_word0(0, pi, GNIC_MLX5_OPCODE_SEND));
	c->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(tx->qp_num, 4));
	c->fm_ce_se = GNIC_MLX5_CTRL_CQ_UPDATE;
	e->cs_flags = cs_flags;
	e->inline_hdr_sz = gnic_be16(18);
	memcpy(e->inline_hdr_start, f, 18); /* runs on into inline_hdr */
	ds->byte_count = gnic_be32(len - 18);
	ds->lkey = gnic_be32(mr->lkey);
	ds->addr = gnic_be64((uintptr_t)(buf + TXOFF));
	pi++;
	__atomic_store_n(&d->dbrec[GNIC_MLX5_SND_DBR], gnic_be32(pi), __ATOMIC_RELEASE);
	memcpy(&reg, wqe, 8);
	__atomic_store_n((uint64_t *)d->bf.reg, reg, __ATOMIC_RELEASE);
	return pi;
}

static void test_dv_wqe(void)
{
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct ibv_qp_init_attr a = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RAW_PACKET};
	struct ibv_qp *saved = tx, *q = CHECK_PTR(ibv_create_qp(pd, &a));
	struct mlx5dv_qp d;
	struct mlx5dv_obj obj = {.qp = {.in = q, .out = &d}};
	struct frame_opts o = udp4();
	uint8_t f[SLOT], ref[SLOT];
	uint32_t at, len;
	struct ibv_flow *fl;
	struct rule r;
	struct ibv_wc wc;
	struct got g;
	uint16_t pi = 0;

	to_rts(q);
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP));
	CHECK_EQ(d.sq.stride, 64u);
	tx = q; /* dv_send writes tx's WQEs */
	rule_init(&r, 0);
	fl = flow(rx, &r);

	t_case("dv_wqe: 18 inline header bytes + a data segment: the frame arrives whole");
	len = build(f, &o, &at);
	post_rx(rx, 5, SLOT);
	pi = dv_send(&d, pi, f, len, 0);
	wc = t_poll1(cq, "the hand-written WQE's CQE");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	g = take_rx();
	CHECK_EQ(g.n, 1);
	CHECK_EQ(g.wc.byte_len, len);
	CHECK_MEM(buf + 5 * SLOT, f, len);

	t_case("dv_wqe: cs_flags L3|L4 by hand: the checksums filled");
	o.good_csum = 1;
	len = build(ref, &o, &at);
	o.good_csum = 0;
	build(f, &o, &at);
	post_rx(rx, 6, SLOT);
	pi = dv_send(&d, pi, f, len, GNIC_MLX5_ETH_WQE_L3_CSUM | GNIC_MLX5_ETH_WQE_L4_CSUM);
	wc = t_poll1(cq, "the hand-written WQE's CQE");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	g = take_rx();
	CHECK_EQ(g.n, 1);
	CHECK_MEM(buf + 6 * SLOT, ref, len);

	tx = saved; /* verbs posts from here on: not into q, whose SQ dv_send wrote */
	t_case("dv_wqe: IBV_SEND_INLINE: the frame travels in the WQE");
	{
		struct ibv_sge sge = {(uintptr_t)ref, 200, 0};
		struct ibv_send_wr wr = {.wr_id = 9,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE},
		                   *bad;

		struct ibv_qp_init_attr qi;
		struct ibv_qp_attr qa;

		CHECK_OK(ibv_query_qp(tx, &qa, IBV_QP_CAP, &qi));
		if (qi.cap.max_inline_data < 200)
			sge.length = qi.cap.max_inline_data;
		CHECK_GE(sge.length, 64u);
		post_rx(rx, 7, SLOT);
		CHECK_OK(ibv_post_send(tx, &wr, &bad));
		wc = t_poll1(scq, "the inline send's CQE");
		CHECK_WC(&wc, 9, IBV_WC_SUCCESS, IBV_WC_SEND);
		g = take_rx();
		CHECK_EQ(g.n, 1);
		CHECK_EQ(g.wc.byte_len, sge.length);
		CHECK_MEM(buf + 7 * SLOT, ref, sge.length);
	}
	CHECK_OK(ibv_destroy_flow(fl));
	CHECK_OK(ibv_destroy_qp(q));
	CHECK_OK(ibv_destroy_cq(cq));
}

static void test_drops(void)
{
	struct rule r;
	struct ibv_flow *fl;
	struct frame_opts o = udp4();
	uint8_t f[SLOT];
	uint32_t at, len = build(f, &o, &at);
	struct gemu_eth_stats s0, s1;
	struct ibv_qp *q = raw_qp(ibv_cq_ex_to_cq(rcqx));
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct got g;

	rule_init(&r, 0);
	fl = flow(q, &r);

	t_case("drops: a QP in INIT receives nothing (counted as no WQE), its WQE is kept");
	CHECK_OK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT));
	post_rx(q, 3, SLOT);
	s0 = stats();
	send_frame(f, len, 0);
	CHECK_EQ(take_rx().n, 0);
	s1 = stats();
	CHECK_EQ(s1.rx_no_wqe, s0.rx_no_wqe + 1);
	a.qp_state = IBV_QPS_RTR; /* RTR receives; sending needs RTS (tx sends) */
	CHECK_OK(ibv_modify_qp(q, &a, IBV_QP_STATE));
	send_frame(f, len, 0);
	g = take_rx();
	CHECK_EQ(g.n, 1);
	CHECK_EQ(g.wc.wr_id, 3u);
	CHECK_MEM(buf + 3 * SLOT, f, len);

	t_case("drops: no receive WQE posted: counted");
	s0 = stats();
	send_frame(f, len, 0);
	CHECK_EQ(take_rx().n, 0);
	s1 = stats();
	CHECK_EQ(s1.rx_no_wqe, s0.rx_no_wqe + 1);

	t_case("drops: a frame longer than the WQE's buffer: counted; the WQE takes the next");
	post_rx(q, 4, len - 1);
	s0 = stats();
	send_frame(f, len, 0);
	CHECK_EQ(take_rx().n, 0);
	s1 = stats();
	CHECK_EQ(s1.rx_too_long, s0.rx_too_long + 1);
	o.payload = 10;
	len = build(f, &o, &at);
	send_frame(f, len, 0);
	g = take_rx();
	CHECK_EQ(g.n, 1);
	CHECK_EQ(g.wc.wr_id, 4u);
	CHECK_OK(ibv_destroy_flow(fl));
	CHECK_OK(ibv_destroy_qp(q));
}

static void test_errors(void)
{
	struct ibv_cq *cq = t_cq(ctx, 64);
	struct ibv_qp *q = raw_qp(cq), *saved = tx;
	struct frame_opts o = udp4();
	uint8_t f[SLOT];
	uint32_t at, len = build(f, &o, &at);
	struct gemu_eth_stats s0 = stats();
	struct ibv_wc wc[4];
	struct rule r;
	struct ibv_flow *fl;

	to_rts(q);
	rule_init(&r, 0);
	fl = flow(q, &r);

	t_case("errors: a receive WQE with a bad lkey: LOCAL_PROT, counted, QP in ERR");
	t_post_recv_buf(q, 50, buf, SLOT, mr->lkey ^ 0x5500);
	t_post_recv_buf(q, 51, buf + SLOT, SLOT, mr->lkey);
	send_frame(f, len, 0);
	wc[0] = t_poll1(cq, "the bad receive's error CQE");
	CHECK_WC_STATUS(&wc[0], 50, IBV_WC_LOC_PROT_ERR);
	CHECK_EQ(stats().rx_bad_wqe, s0.rx_bad_wqe + 1);
	CHECK_EQ(t_qp_state(q), IBV_QPS_ERR);

	t_case("errors: in ERR the rest of the RQ flushes, and so do new sends");
	wc[0] = t_poll1(cq, "the flushed receive");
	CHECK_WC_STATUS(&wc[0], 51, IBV_WC_WR_FLUSH_ERR);
	{
		struct ibv_sge sge = {(uintptr_t)buf, 64, mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 52,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED},
		                   *bad;

		CHECK_OK(ibv_post_send(q, &wr, &bad));
		wc[0] = t_poll1(scq, "the flushed send"); /* raw_qp's send CQ */
		CHECK_WC_STATUS(&wc[0], 52, IBV_WC_WR_FLUSH_ERR);
	}
	CHECK_OK(ibv_destroy_flow(fl));

	t_case("errors: a send WQE with a bad lkey: LOCAL_PROT, nothing sent");
	reset_rx(q);
	{
		struct ibv_sge sge = {(uintptr_t)buf, 64, mr->lkey ^ 0x5500};
		struct ibv_send_wr wr = {.wr_id = 53,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_SEND,
		                         .send_flags = IBV_SEND_SIGNALED},
		                   *bad;
		struct gemu_eth_stats s1 = stats();

		CHECK_OK(ibv_post_send(q, &wr, &bad));
		wc[0] = t_poll1(scq, "the bad send's error CQE");
		CHECK_WC_STATUS(&wc[0], 53, IBV_WC_LOC_PROT_ERR);
		CHECK_EQ(stats().tx_frames, s1.tx_frames);
		CHECK_EQ(t_qp_state(q), IBV_QPS_ERR);
	}
	tx = saved;
	CHECK_OK(ibv_destroy_qp(q));
	CHECK_OK(ibv_destroy_cq(cq));
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"qp", test_qp},
	    {"steer_eth", test_steer_eth},
	    {"steer_ip", test_steer_ip},
	    {"steer_l4", test_steer_l4},
	    {"order", test_order},
	    {"sniffer", test_sniffer},
	    {"flow_errs", test_flow_errs},
	    {"csum", test_csum},
	    {"cqe", test_cqe},
	    {"dv_wqe", test_dv_wqe},
	    {"drops", test_drops},
	    {"errors", test_errors},
	};

	setup();
	T_RUN_CASES(cases, argc, argv);
	return 0;
}
