/* SPDX-License-Identifier: MIT */
/*
 * send_lat: SEND/RECV ping-pong, half the round trip reported (as
 * perftest's ib_send_lat). Each side keeps the receives for its next two
 * messages posted (one slot is checked while the next message lands in
 * the other) and posts none past the run's last message, so a run leaves
 * the receive queues empty for the next.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN int send_lat_send(const struct pd_side *s, int64_t i)
{
	int rc = gnic_dev_send(s->qp[0], s->lbase + perf_pp_src(&s->r, i), s->lkey,
	                       (uint32_t)s->r.size, 0);

	return rc ? pd_fail(s, rc, PD_OP_SEND, 0, i, -1, 0, 0) : 0;
}

GNIC_DEVFN int send_lat_arrived(const struct pd_side *s, int64_t i)
{
	(void)i;
	return pd_recv_ready(s->qp[0]);
}

GNIC_DEVFN int send_lat_take(const struct pd_side *s, int64_t i)
{
	uint32_t len = 0;
	int rc = gnic_dev_recv_wait(s->qp[0], &len, 0);

	if (rc)
		return pd_fail(s, rc, PD_OP_RECV_WAIT, 0, i, -1, 0, 0);
	if (len != s->r.size)
		return pd_fail(s, PD_BAD_LEN, PD_OP_RECV_WAIT, 0, i, -1, len, s->r.size);
	return 0;
}

/* Message i + 2 lands where message i was. */
GNIC_DEVFN int send_lat_done(const struct pd_side *s, int64_t i)
{
	int rc = i + 2 < s->stop ? gnic_dev_recv_post(s->qp[0], s->lbase + perf_pp_slot(&s->r, i),
	                                              s->lkey, (uint32_t)s->r.size)
	                         : 0;

	return rc ? pd_fail(s, rc, PD_OP_RECV_POST, 0, i + 2, -1, 0, 0) : 0;
}

GNIC_DEVFN void send_lat_dev(const struct pd_side *s, const struct pd_thread *t)
{
	(void)t;
	if (s->phase == 0)
		pd_pingpong(s, send_lat_send, send_lat_arrived, send_lat_take, send_lat_done);
	else /* before the peer sends: receives for the first two messages */
		for (int64_t i = 0; i < 2 && i < s->stop; i++)
			if (send_lat_done(s, i - 2))
				return;
}
#else
#include "perf.h"

static void host_await(struct perf_run *r, struct perf_ep *ep, long i)
{
	struct ibv_wc wc;

	perf_rq_wait(ep, (uint64_t)i, &wc);
	if (wc.opcode != IBV_WC_RECV || wc.byte_len != r->size)
		perf_fatal("receive %ld: opcode %d, %u bytes (sent %zu)", i, wc.opcode, wc.byte_len,
		           r->size);
}

static void host_done(struct perf_run *r, struct perf_ep *ep, long i)
{
	if (i + 2 < r->stop)
		perf_rq_post(ep, perf_pp_slot(&r->ring, i), (uint32_t)r->size, (uint64_t)i + 2);
}

static const struct perf_pp_host hooks = {IBV_WR_SEND, host_await, host_done};

/* The device threads post their first receives in a launch of their own. */
static void setup(struct perf_run *r)
{
	perf_pingpong_setup(r);
	if (perf_gnic(r))
		perf_dev_run(r, PERF_RUN_A | PERF_RUN_B, 1);
}

PERF_TEST_DEF(send_lat, PERF_LAT, PERF_MODES_ALL, PERF_F_HALF_RTT | PERF_F_PINGPONG | PERF_F_RECV,
              "8,64,4096", 1000, 200, "SEND/RECV ping-pong", .pp = &hooks, .setup = setup);
#endif
