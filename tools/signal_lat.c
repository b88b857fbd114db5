/* SPDX-License-Identifier: MIT */
/*
 * signal_lat: ping-pong on a signal, half the round trip reported. Host
 * mode: RDMA WRITE with immediate, seen as a receive completion carrying
 * the message number. Device threads: gnic_dev_put_signal (a WRITE and an
 * add to the peer's signal word under one doorbell); the peer waits for
 * the word to count the message, as gnic_dev_wait_signal would.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN int signal_lat_send(const struct pd_side *s, int64_t i)
{
	int rc = gnic_dev_put_signal(s->qp[0], s->lbase + perf_pp_src(&s->r, i), s->lkey,
	                             s->rbase + perf_pp_slot(&s->r, i), s->rkey,
	                             (uint32_t)s->r.size, s->rbase + s->r.sig_off, s->rkey, 1, 0);

	return rc ? pd_fail(s, rc, PD_OP_PUT_SIGNAL, 0, i, -1, 0, 0) : 0;
}

GNIC_DEVFN int signal_lat_arrived(const struct pd_side *s, int64_t i)
{
	return gnic_load_sys64(s->lbase + s->r.sig_off) >= (uint64_t)i + 1;
}

/* One signal per message, and the next only after our answer. */
GNIC_DEVFN int signal_lat_take(const struct pd_side *s, int64_t i)
{
	uint64_t v = gnic_load_sys64(s->lbase + s->r.sig_off);

	return v == (uint64_t)i + 1
	           ? 0
	           : pd_fail(s, PD_BAD_SIGNAL, PD_OP_WAIT, 0, i, -1, v, (uint64_t)i + 1);
}

GNIC_DEVFN void signal_lat_dev(const struct pd_side *s, const struct pd_thread *t)
{
	(void)t;
	pd_pingpong(s, signal_lat_send, signal_lat_arrived, signal_lat_take, 0);
}
#else
#include <arpa/inet.h>

#include "perf.h"

static void host_await(struct perf_run *r, struct perf_ep *ep, long i)
{
	struct ibv_wc wc;

	(void)r;
	perf_rq_wait(ep, (uint64_t)i, &wc);
	if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
	    ntohl(wc.imm_data) != (uint32_t)i)
		perf_fatal("receive %ld: opcode %d, immediate %u (flags 0x%x)", i, wc.opcode,
		           ntohl(wc.imm_data), wc.wc_flags);
}

/* A receive for message i + 2: no data, only its completion. */
static void host_done(struct perf_run *r, struct perf_ep *ep, long i)
{
	if (i + 2 < r->stop)
		perf_rq_post(ep, 0, 0, (uint64_t)i + 2);
}

static const struct perf_pp_host hooks = {IBV_WR_RDMA_WRITE_WITH_IMM, host_await, host_done};

PERF_TEST_DEF(signal_lat, PERF_LAT, PERF_MODES_ALL, PERF_F_HALF_RTT | PERF_F_PINGPONG, "8,64,4096",
              1000, 200,
              "ping-pong on a signal: host mode WRITE with immediate + receive completion, "
              "libgnic modes put_signal + the signal word",
              .pp = &hooks);
#endif
