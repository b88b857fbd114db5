// SPDX-License-Identifier: MIT
/*
 * A raw Ethernet UDP echo, written as a verbs program would be for a
 * ConnectX: a RAW_PACKET QP, one flow rule (IPv4, UDP destination port
 * PORT, flow tag TAG) and a plain receive queue; each frame received has
 * its MAC and IPv4 addresses and UDP ports swapped, its IPv4 and UDP
 * checksums zeroed, and goes back out from its own receive buffer with
 * IBV_SEND_IP_CSUM (the NIC fills them again); the buffer is posted again
 * when the send completes. Every receive must carry the rule's tag and
 * IBV_WC_IP_CSUM_OK.
 *
 *   raw_echo PORT COUNT [IDLE_MS]
 *
 * Run on gnic-emu with GNIC_EMU_ETH_IF naming the interface. Stops IDLE_MS
 * (default 10000) without a frame, or, once COUNT echoes were sent, 1.5 s
 * without one (a sender that resends may need a few more); prints one line
 * "echoed N bad M rx_no_rule R ..." (gnic-emu's port counters) and exits 0
 * only when N >= COUNT and M == 0.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gnic/gnic_emu.h"

#define NBUF  512
#define BUFSZ 2048
#define TAG   0x4242

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "raw_echo: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void swap(uint8_t *a, uint8_t *b, size_t n)
{
	uint8_t t[16];

	memcpy(t, a, n);
	memcpy(a, b, n);
	memcpy(b, t, n);
}

/* Turn frame f around; false if it is not IPv4/UDP (it is not echoed). */
static bool turn(uint8_t *f, uint32_t len)
{
	uint32_t ihl;

	if (len < 42 || f[12] != 0x08 || f[13] != 0x00 || (f[14] >> 4) != 4)
		return false;
	ihl = (uint32_t)(f[14] & 0xf) * 4;
	if (f[23] != 17 || 14 + ihl + 8 > len)
		return false;
	swap(f, f + 6, 6);
	swap(f + 26, f + 30, 4);
	swap(f + 14 + ihl, f + 14 + ihl + 2, 2);
	f[24] = f[25] = 0;                     /* IPv4 header checksum */
	f[14 + ihl + 6] = f[14 + ihl + 7] = 0; /* UDP checksum */
	return true;
}

struct echo {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq;
	struct ibv_cq_ex *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_flow *flow;
	uint8_t *buf;
};

static void post_recv(struct echo *e, uint64_t i)
{
	struct ibv_sge sge = {(uintptr_t)(e->buf + i * BUFSZ), BUFSZ, e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(e->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_echo(struct echo *e, uint64_t i, uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)(e->buf + i * BUFSZ), len, e->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = i,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM},
	                   *bad;

	errno = ibv_post_send(e->qp, &wr, &bad);
	if (errno)
		die("ibv_post_send");
}

static void setup(struct echo *e, uint16_t port)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_cq_init_attr_ex ca = {
	    .cqe = NBUF, .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG};
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = NBUF, .max_recv_wr = NBUF, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RAW_PACKET};
	struct ibv_qp_attr m = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_ipv4 ip;
		struct ibv_flow_spec_tcp_udp udp;
		struct ibv_flow_spec_action_tag tag;
	} rule = {
	    .attr = {.type = IBV_FLOW_ATTR_NORMAL,
	             .size = sizeof(rule),
	             .num_of_specs = 3,
	             .port = 1},
	    .ip = {.type = IBV_FLOW_SPEC_IPV4, .size = sizeof(rule.ip)},
	    .udp = {.type = IBV_FLOW_SPEC_UDP,
	            .size = sizeof(rule.udp),
	            .val = {.dst_port = htons(port)},
	            .mask = {.dst_port = 0xffff}},
	    .tag = {.type = IBV_FLOW_SPEC_ACTION_TAG, .size = sizeof(rule.tag), .tag_id = TAG},
	};

	if (!list || !list[0])
		die("no RDMA device");
	e->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!e->ctx || !(e->pd = ibv_alloc_pd(e->ctx)))
		die("open");
	e->scq = ibv_create_cq(e->ctx, NBUF, NULL, NULL, 0);
	e->rcq = ibv_create_cq_ex(e->ctx, &ca);
	if (!e->scq || !e->rcq)
		die("ibv_create_cq");
	e->buf = aligned_alloc(4096, (size_t)NBUF * BUFSZ);
	if (!e->buf ||
	    !(e->mr = ibv_reg_mr(e->pd, e->buf, (size_t)NBUF * BUFSZ, IBV_ACCESS_LOCAL_WRITE)))
		die("ibv_reg_mr");
	qa.send_cq = e->scq;
	qa.recv_cq = ibv_cq_ex_to_cq(e->rcq);
	if (!(e->qp = ibv_create_qp(e->pd, &qa)))
		die("ibv_create_qp(RAW_PACKET)");
	if ((errno = ibv_modify_qp(e->qp, &m, IBV_QP_STATE | IBV_QP_PORT)))
		die("INIT");
	m.qp_state = IBV_QPS_RTR;
	if ((errno = ibv_modify_qp(e->qp, &m, IBV_QP_STATE)))
		die("RTR");
	m.qp_state = IBV_QPS_RTS;
	if ((errno = ibv_modify_qp(e->qp, &m, IBV_QP_STATE)))
		die("RTS");
	for (uint64_t i = 0; i < NBUF; i++)
		post_recv(e, i);
	if (!(e->flow = ibv_create_flow(e->qp, &rule.attr)))
		die("ibv_create_flow");
}

/* Everything goes, the rule first (a QP with rules is busy). */
static int teardown(struct echo *e)
{
	int err = ibv_destroy_flow(e->flow);

	err = err ? err : ibv_destroy_qp(e->qp);
	err = err ? err : ibv_destroy_cq(e->scq);
	err = err ? err : ibv_destroy_cq(ibv_cq_ex_to_cq(e->rcq));
	err = err ? err : ibv_dereg_mr(e->mr);
	err = err ? err : ibv_dealloc_pd(e->pd);
	err = err ? err : ibv_close_device(e->ctx);
	if (err)
		fprintf(stderr, "raw_echo: teardown: %s\n", strerror(err));
	free(e->buf);
	return err;
}

/* Receives: echo each (or count it bad and repost). Returns frames seen. */
static int poll_rx(struct echo *e, uint64_t *echoed, uint64_t *bad)
{
	struct ibv_poll_cq_attr pa = {0};
	int n = 0;

	if (ibv_start_poll(e->rcq, &pa))
		return 0;
	do {
		uint64_t i = e->rcq->wr_id;
		uint32_t len = ibv_wc_read_byte_len(e->rcq);
		bool ok = e->rcq->status == IBV_WC_SUCCESS && ibv_wc_read_flow_tag(e->rcq) == TAG &&
		          (ibv_wc_read_wc_flags(e->rcq) & IBV_WC_IP_CSUM_OK) &&
		          turn(e->buf + i * BUFSZ, len);

		n++;
		if (ok) {
			post_echo(e, i, len);
			(*echoed)++;
		} else {
			if (*bad < 5)
				fprintf(stderr,
				        "raw_echo: bad receive: status %d tag 0x%x flags 0x%x\n",
				        e->rcq->status, ibv_wc_read_flow_tag(e->rcq),
				        ibv_wc_read_wc_flags(e->rcq));
			(*bad)++;
			post_recv(e, i);
		}
	} while (ibv_next_poll(e->rcq) == 0);
	ibv_end_poll(e->rcq);
	return n;
}

/* Send completions: their buffers take receives again. */
static int poll_tx(struct echo *e, uint64_t *bad)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(e->scq, 32, wc);

	for (int k = 0; k < n; k++) {
		if (wc[k].status != IBV_WC_SUCCESS)
			(*bad)++;
		post_recv(e, wc[k].wr_id);
	}
	return n;
}

int main(int argc, char **argv)
{
	struct echo e = {0};
	uint64_t count, echoed = 0, bad = 0, last;
	unsigned idle_ms;
	int (*stats)(struct ibv_context *, struct gemu_eth_stats *);
	struct gemu_eth_stats s = {0};

	if (argc < 3) {
		fprintf(stderr, "usage: raw_echo PORT COUNT [IDLE_MS]\n");
		return 2;
	}
	count = strtoull(argv[2], NULL, 0);
	idle_ms = argc > 3 ? (unsigned)atoi(argv[3]) : 10000;
	setup(&e, (uint16_t)atoi(argv[1]));
	printf("ready\n");
	fflush(stdout);
	last = now_ms();
	while (now_ms() - last < (echoed >= count ? 1500 : idle_ms)) {
		int n = poll_rx(&e, &echoed, &bad) + poll_tx(&e, &bad);

		if (n)
			last = now_ms();
	}
	/* the last echoes' sends complete */
	for (uint64_t t = now_ms(); now_ms() - t < 1000;)
		poll_tx(&e, &bad);
	stats = (int (*)(struct ibv_context *, struct gemu_eth_stats *))dlsym(RTLD_DEFAULT,
	                                                                      "gemu_eth_stats");
	if (stats)
		stats(e.ctx, &s);
	printf("echoed %llu bad %llu rx_frames %llu rx_no_rule %llu rx_no_wqe %llu rx_overrun %llu "
	       "tx_frames %llu tx_dropped %llu\n",
	       (unsigned long long)echoed, (unsigned long long)bad, (unsigned long long)s.rx_frames,
	       (unsigned long long)s.rx_no_rule, (unsigned long long)s.rx_no_wqe,
	       (unsigned long long)s.rx_overrun, (unsigned long long)s.tx_frames,
	       (unsigned long long)s.tx_dropped);
	if (teardown(&e))
		return 1;
	return echoed >= count && bad == 0 ? 0 : 1;
}
