/* SPDX-License-Identifier: MIT */
/*
 * store_rate: how many messages of --size bytes (64: a WQE) device threads
 * write per second into host memory with 8-byte stores, as they write WQEs:
 * the posting path's ceiling, no NIC. Iterations are spread as in put_bw,
 * each writing the pattern of its region into its own slot; afterwards
 * every slot is checked against the last write.
 */
#ifdef PERF_DEV_PASS
/* The pattern with its marker folded into the last word: whole words only. */
GNIC_DEVFN int store_rate_iter(const struct pd_side *s, struct gnic_dev_qp *q, int64_t i, int *op)
{
	uint8_t *p = s->lbase + perf_ring_dst(&s->r, perf_ring_slot(&s->r, i));
	uint32_t region = perf_ring_region(&s->r, i);
	uint64_t key = perf_pat_key(PERF_A, region, s->r.size), n = s->r.size / 8;

	(void)q, (void)op;
	if (s->r.size % 8) {
		perf_pat_fill(p, s->r.size, PERF_A, region, 0);
		return 0;
	}
	for (uint64_t w = 0; w < n; w++) {
		uint64_t v = perf_pat_word(key, w);

		if (w == n - 1)
			v = (v & ~(0xffull << 56)) | (uint64_t)perf_pat_marker(PERF_A, region)
			                                 << 56;
		((volatile uint64_t *)p)[w] = perf_le64(v);
	}
	return 0;
}

PD_STREAM_DEV(store_rate, 0)
#else
#include "perf.h"

static void setup(struct perf_run *r)
{
	struct perf_ep *ep = r->ep[PERF_A];

	perf_ring_poison(ep->buf, &r->ring, PERF_A);
	perf_ep_push(ep, r->ring.dst_off, r->ring.sig_off - r->ring.dst_off);
}

static bool validate(struct perf_run *r)
{
	struct perf_ep *ep = r->ep[PERF_A];

	perf_ep_pull(ep, r->ring.dst_off, r->ring.sig_off - r->ring.dst_off);
	return perf_ring_check(ep->buf, &r->ring, PERF_A, r->done, PERF_A);
}

PERF_TEST_DEF(store_rate, PERF_RATE, PERF_MODES_GNIC, PERF_F_UNCONNECTED | PERF_F_HOSTMEM, "64",
              1000000, 20000, "messages device threads store into host memory per second (no NIC)",
              .setup = setup, .validate = validate);
#endif
