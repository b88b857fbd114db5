// SPDX-License-Identifier: MIT
/*
 * Receive WQs on gnic-emu's loopback Ethernet port, as DPDK's mlx5 PMD uses
 * them: WQs (mlx5dv_create_wq, striding or plain) behind an indirection
 * table and an RSS RAW_PACKET QP that a flow rule steers to; frames sent
 * by a plain RAW_PACKET QP come back through steering into them. CQEs are
 * read byte for byte from the CQ (mlx5dv), striding WQEs written by hand.
 *
 *   caps      mlx5dv_query_device's striding RQ caps; what create_wq refuses
 *   stride    a 4-WQE striding RQ of 8 strides of 64 B: 300 frames of 60..500
 *             bytes wrap the ring ~40 times; every CQE is checked against a
 *             model of the strides (WQE index, stride index, strides
 *             consumed, byte count, filler CQEs where a frame does not fit
 *             the WQE's rest) and every frame's bytes where its stride says
 *   shift     two_byte_shift_en: frames start 2 bytes into their stride and
 *             take a stride more when the 2 bytes spill over
 *   plain     a plain WQ filled with ibv_post_wq_recv
 *   rss       Toeplitz over IPv4 addresses and UDP ports: the CQE's hash is
 *             the published RSS verification vector's, its type IPv4+UDP,
 *             and the frame lands in the WQ the hash's low bits pick
 *   errors    busy WQs and tables, modify of an RSS QP (ENOSYS), a bad key,
 *             a striding WQE with a bad lkey: LOCAL_PROT error CQE
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gnic/gnic_mlx5.h"

#define BUFLEN (1u << 20)
#define TXOFF  (BUFLEN - 16384)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq;
static struct ibv_qp *tx;
static uint8_t *buf;
static struct ibv_mr *mr;

/* RSS verification key (40 bytes) */
static const uint8_t KEY[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                                0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                                0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                                0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

static void setup(void)
{
	struct ibv_qp_init_attr a = {.cap = {.max_send_wr = 64, .max_send_sge = 1},
	                             .qp_type = IBV_QPT_RAW_PACKET};
	struct ibv_qp_attr m = {.qp_state = IBV_QPS_INIT, .port_num = 1};

	ctx = t_open(T_DEVICE);
	pd = CHECK_PTR(ibv_alloc_pd(ctx));
	scq = t_cq(ctx, 256);
	a.send_cq = a.recv_cq = scq;
	tx = CHECK_PTR(ibv_create_qp(pd, &a));
	CHECK_OK(ibv_modify_qp(tx, &m, IBV_QP_STATE | IBV_QP_PORT));
	m.qp_state = IBV_QPS_RTR;
	CHECK_OK(ibv_modify_qp(tx, &m, IBV_QP_STATE));
	m.qp_state = IBV_QPS_RTS;
	CHECK_OK(ibv_modify_qp(tx, &m, IBV_QP_STATE));
	buf = t_alloc(BUFLEN, 0);
	mr = t_reg(pd, buf, BUFLEN, IBV_ACCESS_LOCAL_WRITE);
}

/* Ethernet + IPv4 + UDP, len bytes in all (>= 42), payload from seed. */
static uint32_t frame(uint8_t *f, uint32_t len, const uint8_t src[4], const uint8_t dst[4],
                      uint16_t sport, uint16_t dport, uint32_t seed)
{
	static const uint8_t mac[12] = {2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xa};
	uint16_t v;

	memcpy(f, mac, 12);
	f[12] = 0x08, f[13] = 0x00;
	memset(f + 14, 0, 28);
	f[14] = 0x45;
	v = htons((uint16_t)(len - 14));
	memcpy(f + 16, &v, 2);
	f[22] = 64, f[23] = 17;
	memcpy(f + 26, src, 4);
	memcpy(f + 30, dst, 4);
	v = htons(sport);
	memcpy(f + 34, &v, 2);
	v = htons(dport);
	memcpy(f + 36, &v, 2);
	v = htons((uint16_t)(len - 34));
	memcpy(f + 38, &v, 2);
	t_fill(f + 42, len - 42, seed);
	return len;
}

static void send_frame(const uint8_t *f, uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)(buf + TXOFF), len, mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 9,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED};
	struct ibv_wc wc;

	memcpy(buf + TXOFF, f, len);
	t_post_send(tx, &wr);
	wc = t_poll1(scq, "the frame's send CQE"); /* steered by then */
	CHECK_WC(&wc, 9, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* ---- a WQ read directly ---------------------------------------------------------- */

struct rq {
	struct ibv_cq *cq;
	struct mlx5dv_cq dcq;
	uint32_t ci; /* CQEs consumed */
	struct ibv_wq *wq;
	struct mlx5dv_rwq d;
	uint16_t posted;
	uint8_t *bufs; /* WQE slot i's buffer: bufs + i * wqe_bytes */
	uint32_t wqe_bytes;
};

static void rq_open(struct rq *r, bool striding, uint32_t log_stride, uint32_t log_n, bool shift,
                    uint32_t max_wr, uint8_t *bufs)
{
	struct mlx5dv_wq_init_attr dv = {.comp_mask = MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ,
	                                 .striding_rq_attrs = {log_stride, log_n, shift}};
	struct mlx5dv_obj obj = {0};
	struct ibv_wq_init_attr a;
	struct ibv_wq_attr m = {.attr_mask = IBV_WQ_ATTR_STATE, .wq_state = IBV_WQS_RDY};

	memset(r, 0, sizeof(*r));
	r->cq = t_cq(ctx, 1024);
	a = (struct ibv_wq_init_attr){
	    .wq_type = IBV_WQT_RQ, .max_wr = max_wr, .max_sge = 1, .pd = pd, .cq = r->cq};
	r->wq = CHECK_PTR(striding ? mlx5dv_create_wq(ctx, &a, &dv) : ibv_create_wq(ctx, &a));
	obj.cq.in = r->cq;
	obj.cq.out = &r->dcq;
	obj.rwq.in = r->wq;
	obj.rwq.out = &r->d;
	CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ | MLX5DV_OBJ_RWQ));
	CHECK_EQ(r->d.wqe_cnt, max_wr);
	CHECK_EQ(r->d.stride, striding ? 32u : 16u); /* next segment + one data segment */
	CHECK_OK(ibv_modify_wq(r->wq, &m));
	r->bufs = bufs;
	r->wqe_bytes = striding ? 1u << (log_stride + log_n) : 0;
}

/* Striding WQE at slot posted % wqe_cnt: next segment, one data segment. */
static void rq_post_striding(struct rq *r, uint32_t lkey)
{
	uint8_t *w = (uint8_t *)r->d.buf + (size_t)(r->posted & (r->d.wqe_cnt - 1)) * r->d.stride;
	struct gnic_mlx5_data_seg *seg = (struct gnic_mlx5_data_seg *)(w + 16);
	uint8_t *b = r->bufs + (size_t)(r->posted & (r->d.wqe_cnt - 1)) * r->wqe_bytes;

	memset(w, 0, 16);
	seg->byte_count = htonl(r->wqe_bytes);
	seg->lkey = htonl(lkey);
	seg->addr = htobe64((uint64_t)(uintptr_t)b);
	memset(b, 0xee, r->wqe_bytes);
	r->posted++;
	__atomic_store_n(r->d.dbrec, htonl(r->posted), __ATOMIC_RELEASE);
}

/* The next CQE, or NULL if none (the frame was steered before its send CQE). */
static struct gnic_mlx5_cqe64 *rq_cqe(struct rq *r)
{
	struct gnic_mlx5_cqe64 *c =
	    (struct gnic_mlx5_cqe64 *)r->dcq.buf + (r->ci & (r->dcq.cqe_cnt - 1));
	uint8_t own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);

	if (!gnic_mlx5_cqe_sw_owned(own, r->ci, r->dcq.cqe_cnt))
		return NULL;
	r->ci++;
	*r->dcq.dbrec = htonl(r->ci & 0xffffff);
	return c;
}

static void rq_close(struct rq *r)
{
	CHECK_OK(ibv_destroy_wq(r->wq));
	CHECK_OK(ibv_destroy_cq(r->cq));
}

static uint16_t cqe_wqe_id(const struct gnic_mlx5_cqe64 *c)
{
	return (uint16_t)(((const uint8_t *)c)[2] << 8 | ((const uint8_t *)c)[3]);
}

/* An RSS QP over the n WQs (repeated to a table of 2^log entries), fields
 * IPv4 addresses and UDP ports, with an ALL_DEFAULT rule. */
struct rss {
	struct ibv_rwq_ind_table *tbl;
	struct ibv_qp *qp;
	struct ibv_flow *flow;
};

static int rss_open(struct rss *s, struct ibv_wq **wqs, uint32_t log, const uint8_t *key,
                    uint8_t key_len)
{
	struct ibv_rwq_ind_table_init_attr ta = {.log_ind_tbl_size = log, .ind_tbl = wqs};
	struct ibv_qp_init_attr_ex qa = {
	    .qp_type = IBV_QPT_RAW_PACKET,
	    .comp_mask =
	        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH,
	    .pd = pd,
	    .rx_hash_conf = {.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
	                     .rx_hash_key_len = key_len,
	                     .rx_hash_key = (uint8_t *)key,
	                     .rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
	                                            IBV_RX_HASH_SRC_PORT_UDP |
	                                            IBV_RX_HASH_DST_PORT_UDP}};
	struct ibv_flow_attr fa = {
	    .type = IBV_FLOW_ATTR_ALL_DEFAULT, .size = sizeof(fa), .port = 1};

	s->tbl = CHECK_PTR(ibv_create_rwq_ind_table(ctx, &ta));
	qa.rwq_ind_tbl = s->tbl;
	s->qp = ibv_create_qp_ex(ctx, &qa);
	if (!s->qp) {
		int e = errno;

		CHECK_OK(ibv_destroy_rwq_ind_table(s->tbl));
		return e;
	}
	CHECK(s->qp->send_cq == NULL && s->qp->recv_cq == NULL);
	s->flow = CHECK_PTR(ibv_create_flow(s->qp, &fa));
	return 0;
}

static void rss_close(struct rss *s)
{
	CHECK_OK(ibv_destroy_flow(s->flow));
	CHECK_OK(ibv_destroy_qp(s->qp));
	CHECK_OK(ibv_destroy_rwq_ind_table(s->tbl));
}

static const uint8_t SRC[4] = {10, 0, 0, 1}, DST[4] = {10, 0, 0, 2};

/* ---- cases ------------------------------------------------------------------------------ */

static void test_caps(void)
{
	struct mlx5dv_context c = {.comp_mask = MLX5DV_CONTEXT_MASK_STRIDING_RQ};
	struct mlx5dv_wq_init_attr dv = {.comp_mask = MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ,
	                                 .striding_rq_attrs = {6, 3, 0}};
	struct ibv_cq *cq = t_cq(ctx, 16);
	struct ibv_wq_init_attr a = {
	    .wq_type = IBV_WQT_RQ, .max_wr = 8, .max_sge = 1, .pd = pd, .cq = cq};

	t_case("striding RQ caps: strides of 2^6..2^13 bytes, 2^3..2^16 a WQE, RAW_PACKET");
	CHECK_OK(mlx5dv_query_device(ctx, &c));
	CHECK(c.comp_mask & MLX5DV_CONTEXT_MASK_STRIDING_RQ);
	CHECK_EQ(c.striding_rq_caps.min_single_stride_log_num_of_bytes, 6u);
	CHECK_EQ(c.striding_rq_caps.max_single_stride_log_num_of_bytes, 13u);
	CHECK_EQ(c.striding_rq_caps.min_single_wqe_log_num_of_strides, 3u);
	CHECK_EQ(c.striding_rq_caps.max_single_wqe_log_num_of_strides, 16u);
	CHECK_EQ(c.striding_rq_caps.supported_qpts, 1u << IBV_QPT_RAW_PACKET);

	t_case("create_wq refuses strides outside the caps, unknown comp_mask, max_wr 0");
	dv.striding_rq_attrs.single_stride_log_num_of_bytes = 5;
	CHECK(mlx5dv_create_wq(ctx, &a, &dv) == NULL && errno == EINVAL);
	dv.striding_rq_attrs.single_stride_log_num_of_bytes = 14;
	CHECK(mlx5dv_create_wq(ctx, &a, &dv) == NULL && errno == EINVAL);
	dv.striding_rq_attrs.single_stride_log_num_of_bytes = 6;
	dv.striding_rq_attrs.single_wqe_log_num_of_strides = 17;
	CHECK(mlx5dv_create_wq(ctx, &a, &dv) == NULL && errno == EINVAL);
	dv.striding_rq_attrs.single_wqe_log_num_of_strides = 3;
	dv.comp_mask |= 1u << 5;
	CHECK(mlx5dv_create_wq(ctx, &a, &dv) == NULL && errno == EINVAL);
	a.max_wr = 0;
	CHECK(ibv_create_wq(ctx, &a) == NULL && errno == EINVAL);
	CHECK_OK(ibv_destroy_cq(cq));
}

/* Sends nframes frames into a striding RQ and checks every CQE against the
 * model: used = strides taken of the current WQE. */
static void run_striding(uint32_t log_stride, uint32_t log_n, bool shift, int nframes,
                         uint32_t (*len_of)(int i), int *fillers_out)
{
	uint32_t stride = 1u << log_stride, nstr = 1u << log_n, sh = shift ? 2 : 0;
	uint8_t f[2048];
	struct ibv_wq *wqs[1];
	struct rss s;
	struct rq r;
	uint16_t cur = 0; /* the WQE the model fills */
	uint32_t used = 0;
	int fillers = 0;

	rq_open(&r, true, log_stride, log_n, shift, 4, buf);
	for (int i = 0; i < 4; i++)
		rq_post_striding(&r, mr->lkey);
	wqs[0] = r.wq;
	CHECK_OK(rss_open(&s, wqs, 0, KEY, 40));
	for (int i = 0; i < nframes; i++) {
		uint32_t len =
		    frame(f, len_of(i), SRC, DST, (uint16_t)(1000 + i), 2000, (uint32_t)i);
		uint32_t need = (len + sh + stride - 1) / stride;
		struct gnic_mlx5_cqe64 *c;

		send_frame(f, len);
		if (used + need > nstr) { /* the model: a filler CQE first */
			c = rq_cqe(&r);
			CHECK(c != NULL);
			CHECK_EQ(gnic_mlx5_cqe_opcode(c->op_own), GNIC_MLX5_CQE_RESP_SEND);
			CHECK_EQ(ntohl(c->byte_cnt), 0x80000000u | (nstr - used) << 16);
			CHECK_EQ(cqe_wqe_id(c), cur);
			CHECK_EQ(ntohs(c->wqe_counter), used);
			CHECK_EQ(ntohl(c->srqn_uidx) & 0xffffff, r.wq->wq_num);
			fillers++;
			cur++;
			used = 0;
			rq_post_striding(&r, mr->lkey); /* the WQE is done: post it again */
		}
		c = rq_cqe(&r);
		CHECK(c != NULL);
		CHECK_EQ(gnic_mlx5_cqe_opcode(c->op_own), GNIC_MLX5_CQE_RESP_SEND);
		CHECK_EQ(ntohl(c->byte_cnt), need << 16 | len);
		CHECK_EQ(cqe_wqe_id(c), cur);
		CHECK_EQ(ntohs(c->wqe_counter), used);
		CHECK_EQ(ntohl(c->srqn_uidx) & 0xffffff, r.wq->wq_num);
		{
			uint8_t *at =
			    r.bufs + (size_t)(cur & 3) * r.wqe_bytes + (size_t)used * stride;

			CHECK_MEM(at + sh, f, len);
			if (sh)
				CHECK_BYTES(at, 0xee, sh);
			/* the rest of its last stride untouched */
			CHECK_BYTES(at + sh + len, 0xee, need * stride - sh - len);
		}
		CHECK(rq_cqe(&r) == NULL); /* nothing else */
		used += need;
		if (used == nstr) {
			cur++;
			used = 0;
			rq_post_striding(&r, mr->lkey);
		}
	}
	rss_close(&s);
	rq_close(&r);
	*fillers_out = fillers;
}

static uint32_t len_mixed(int i)
{
	return 60 + (uint32_t)(i * 97) % 441; /* 60..500 */
}

static uint32_t len_64(int i)
{
	return i % 2 == 0 ? 64 : 62; /* 2 and 1 strides with the shift */
}

static void test_stride(void)
{
	int fillers;

	t_case("striding RQ, 4 WQEs x 8 strides x 64 B: 300 frames of 60..500 B, ring wrapped");
	run_striding(6, 3, false, 300, len_mixed, &fillers);
	printf("  %d filler CQEs\n", fillers);
	CHECK(fillers > 20); /* the lengths make many WQE ends */
}

static void test_shift(void)
{
	int fillers;

	t_case("two_byte_shift_en: frames 2 bytes in; 64-byte frames take 2 strides, 62-byte 1");
	run_striding(6, 3, true, 60, len_64, &fillers);
	CHECK(fillers > 0);
}

static void test_plain(void)
{
	struct ibv_sge sge = {(uintptr_t)buf, 1500, mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 77, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
	struct ibv_wq *wqs[1];
	struct gnic_mlx5_cqe64 *c;
	uint8_t f[256];
	struct rss s;
	struct rq r;

	t_case("a plain WQ: ibv_post_wq_recv, one frame, wqe_counter and byte count");
	rq_open(&r, false, 0, 0, false, 8, buf);
	memset(buf, 0xee, 4096);
	CHECK_OK(ibv_post_wq_recv(r.wq, &wr, &bad));
	sge.addr = (uintptr_t)(buf + 2048);
	CHECK_OK(ibv_post_wq_recv(r.wq, &wr, &bad));
	wqs[0] = r.wq;
	CHECK_OK(rss_open(&s, wqs, 0, KEY, 40));
	for (uint16_t i = 0; i < 2; i++) {
		uint32_t len = frame(f, 100 + i, SRC, DST, 5, 6, i);

		send_frame(f, len);
		c = rq_cqe(&r);
		CHECK(c != NULL);
		CHECK_EQ(ntohs(c->wqe_counter), i);
		CHECK_EQ(ntohl(c->byte_cnt), len);
		CHECK_MEM(buf + 2048 * i, f, len);
		CHECK_BYTES(buf + 2048 * i + len, 0xee, 2048 - len);
	}
	t_case("a third frame finds no WQE: dropped, no CQE");
	send_frame(f, 100);
	CHECK(rq_cqe(&r) == NULL);
	rss_close(&s);
	rq_close(&r);
}

static void test_rss(void)
{
	/* the RSS verification suite's IPv4 rows: source, destination, ports, hash */
	static const struct {
		uint8_t src[4], dst[4];
		uint16_t sport, dport;
		uint32_t hash;
	} v[] = {{{66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766, 0x51ccc178},
	         {{199, 92, 111, 2}, {65, 69, 140, 83}, 14230, 4739, 0xc626b0ea}};
	struct rq a, b;
	struct ibv_wq *wqs[4];
	struct rss s;
	uint8_t f[256];

	t_case(
	    "RSS: Toeplitz hash of IPv4 + UDP ports as the verification vectors, WQ by low bits");
	rq_open(&a, true, 6, 3, false, 4, buf);
	rq_open(&b, true, 6, 3, false, 4, buf + 65536);
	for (int i = 0; i < 4; i++) {
		rq_post_striding(&a, mr->lkey);
		rq_post_striding(&b, mr->lkey);
	}
	wqs[0] = a.wq, wqs[1] = wqs[2] = wqs[3] = b.wq;
	CHECK_OK(rss_open(&s, wqs, 2, KEY, 40));
	for (unsigned i = 0; i < 2; i++) {
		uint32_t len = frame(f, 120, v[i].src, v[i].dst, v[i].sport, v[i].dport, i);
		struct rq *want = (v[i].hash & 3) == 0 ? &a : &b, *other = want == &a ? &b : &a;
		struct gnic_mlx5_cqe64 *c;
		uint32_t h;

		send_frame(f, len);
		c = rq_cqe(want);
		CHECK(c != NULL);
		CHECK(rq_cqe(other) == NULL);
		memcpy(&h, (uint8_t *)c + 12, 4);
		CHECK_EQ(ntohl(h), v[i].hash);
		CHECK_EQ(((uint8_t *)c)[16], 1u << 2 | 2u << 6); /* IPv4, UDP */
		CHECK_EQ(ntohl(c->byte_cnt) & 0xffff, len);
	}
	rss_close(&s);
	rq_close(&a);
	rq_close(&b);
}

static void test_errors(void)
{
	struct ibv_qp_attr m = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct ibv_wq *wqs[1];
	struct gnic_mlx5_cqe64 *c;
	uint8_t f[256];
	struct rss s;
	struct rq r;

	rq_open(&r, true, 6, 3, false, 4, buf);
	wqs[0] = r.wq;
	t_case("a Toeplitz key of 39 bytes is refused");
	CHECK_EQ(rss_open(&s, wqs, 0, KEY, 39), EINVAL);
	CHECK_OK(rss_open(&s, wqs, 0, KEY, 40));
	t_case("a WQ in a table and a table under a QP are busy; an RSS QP is not modified");
	CHECK_EQ(ibv_destroy_wq(r.wq), EBUSY);
	CHECK_EQ(ibv_destroy_rwq_ind_table(s.tbl), EBUSY);
	CHECK_EQ(ibv_modify_qp(s.qp, &m, IBV_QP_STATE | IBV_QP_PORT), ENOSYS);
	t_case("a striding WQE with a bad lkey: a LOCAL_PROT error CQE, then drops");
	rq_post_striding(&r, mr->lkey + 0x100);
	send_frame(f, frame(f, 100, SRC, DST, 1, 2, 0));
	c = rq_cqe(&r);
	CHECK(c != NULL);
	CHECK_EQ(gnic_mlx5_cqe_opcode(c->op_own), GNIC_MLX5_CQE_RESP_ERR);
	CHECK_EQ(((struct gnic_mlx5_err_cqe *)c)->syndrome, GNIC_MLX5_SYND_LOCAL_PROT);
	rq_post_striding(&r, mr->lkey);
	send_frame(f, frame(f, 100, SRC, DST, 1, 2, 0));
	CHECK(rq_cqe(&r) == NULL);
	rss_close(&s);
	rq_close(&r);
}

int main(int argc, char **argv)
{
	static const struct t_named_case cases[] = {
	    {"caps", test_caps},   {"stride", test_stride}, {"shift", test_shift},
	    {"plain", test_plain}, {"rss", test_rss},       {"errors", test_errors},
	};

	setup();
	T_RUN_CASES(cases, argc, argv);
	return 0;
}
