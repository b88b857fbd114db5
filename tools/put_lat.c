/* SPDX-License-Identifier: MIT */
/*
 * put_lat: RDMA WRITE ping-pong, half the round trip reported (as
 * perftest's ib_write_lat). Each side sees a message arrive when the last
 * byte of its slot turns into the message's marker (the NIC writes it
 * last), then checks the whole message.
 */
#ifdef PERF_DEV_PASS
GNIC_DEVFN int put_lat_send(const struct pd_side *s, int64_t i)
{
	int rc =
	    pd_put(s, s->qp[0], perf_pp_src(&s->r, i), perf_pp_slot(&s->r, i), (uint32_t)s->r.size);

	return rc ? pd_fail(s, rc, PD_OP_PUT, 0, i, -1, 0, 0) : 0;
}

GNIC_DEVFN int put_lat_arrived(const struct pd_side *s, int64_t i)
{
	return pd_load_acq8(s->lbase + perf_pp_slot(&s->r, i) + s->r.size - 1) ==
	       perf_pat_marker(s->side ^ 1, perf_pp_region(&s->r, i));
}

GNIC_DEVFN void put_lat_dev(const struct pd_side *s, const struct pd_thread *t)
{
	(void)t;
	pd_pingpong(s, put_lat_send, put_lat_arrived, 0, 0);
}
#else
#include "perf.h"

static void host_await(struct perf_run *r, struct perf_ep *ep, long i)
{
	perf_wait_byte(ep->buf + perf_pp_slot(&r->ring, i) + r->size - 1,
	               perf_pat_marker(perf_peer(ep->side), perf_pp_region(&r->ring, i)),
	               "the peer's write");
}

static const struct perf_pp_host hooks = {IBV_WR_RDMA_WRITE, host_await, NULL};

PERF_TEST_DEF(put_lat, PERF_LAT, PERF_MODES_ALL, PERF_F_HALF_RTT | PERF_F_PINGPONG, "8,64,4096",
              1000, 200, "RDMA WRITE ping-pong; each side polls the last byte of its slot",
              .pp = &hooks);
#endif
