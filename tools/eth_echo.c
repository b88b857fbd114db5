/* SPDX-License-Identifier: MIT */
/*
 * eth_echo: UDP frames received and echoed by device code, through the
 * Ethernet API (gnic_dev_eth.cuh) on the NIC's Ethernet port with no
 * interface behind it (gnic-emu's loopback port: every frame sent comes
 * back to the port's own steering). One process, both sides, one pair of
 * Ethernet queues per CTA, each queue with its own steering rule (UDP
 * destination port):
 *
 *   side A, the wire: sends frames of --size bytes to its echo's port and
 *     keeps at most --window of them in flight: it primes the window from
 *     its staging slots (the ring's destination slots of its CTA), then
 *     turns every echo it receives, once checked, into its next frame in
 *     the same receive buffer (gnic_dev_eth_send_burst / _send_buf_warp),
 *     so frames in flight never exceed the window;
 *   side B, the echo (as examples/eth_echo): takes a burst, swaps MAC, IP
 *     addresses and UDP ports, sends it back from the same buffers.
 *
 * Checksums are the NIC's (GNIC_ETH_TX_CSUM; received frames must carry
 * L3_OK and L4_OK). The wire checks every echo as it arrives: its length,
 * flow tag, checksum flags, sequence number (in order: a gap is a lost
 * frame and fails the run at once), and with validation every byte (the
 * headers as the echo turned them, the payload of that sequence number).
 * After each chunk the port's counters must show every frame sent and
 * delivered twice and none dropped. Thread scope: thread 0 of each CTA
 * drives its queue; warp scope: the CTA's first warp, a frame per lane (on
 * CPU threads the _warp calls act for the caller, a frame at a time).
 *
 * Frame: Ethernet, IPv4 (10.0.0.1 > .2), UDP (port ETH_ECHO_WIRE_PORT + c
 * > ETH_ECHO_ECHO_PORT + c for CTA c), the sequence number (8 bytes,
 * little-endian: the iteration), 6 zero bytes, then the payload: word k of
 * sequence s is eth_echo_word(s, k), little-endian.
 */
#define ETH_ECHO_WIRE_PORT 20000
#define ETH_ECHO_ECHO_PORT 40000
#define ETH_ECHO_TAG_WIRE  0x100000 /* + CTA: the wire's flow tag */
#define ETH_ECHO_TAG_ECHO  0x200000
#define ETH_ECHO_SEQ_OFF   42
#define ETH_ECHO_PAY_OFF   56
#define ETH_ECHO_MIN       64
#define ETH_ECHO_BURST     32

#ifdef PERF_DEV_PASS
#include <gnic/gnic_dev_eth.cuh>

PERF_HD uint64_t eth_echo_word(uint64_t seq, uint64_t k)
{
	return perf_mix64(seq ^ 0x6574686563686full) + k * 0x9e3779b97f4a7c15ull;
}

/* At warp scope the warp's lane and how many of its lanes hold pred; at
 * thread scope (one thread of the CTA, the others gone) and on CPU threads
 * (a warp is the calling thread) the caller alone. */
GNIC_DEVFN uint32_t eth_echo_lane(uint32_t warp)
{
#if GNIC_ON_GPU
	if (warp)
		return gnic_cta_tid() & 31;
#endif
	(void)warp;
	return 0;
}

GNIC_DEVFN uint32_t eth_echo_count(uint32_t warp, int pred)
{
#if GNIC_ON_GPU
	if (warp)
		return (uint32_t)__popc(__ballot_sync(gnic_warp_lanes(), pred));
#endif
	(void)warp;
	return pred != 0;
}

GNIC_DEVFN void eth_echo_syncwarp(uint32_t warp)
{
#if GNIC_ON_GPU
	if (warp)
		__syncwarp(gnic_warp_lanes());
#endif
	(void)warp;
}

/* The 42 header bytes of CTA c's frames of len bytes, as the wire sends
 * them (echoed: as the echo sends them back); checksums 0. */
GNIC_DEVFN void eth_echo_hdr(uint8_t *h, uint32_t c, uint32_t len, int echoed)
{
	const uint8_t mac[2][6] = {{0x02, 0, 0, 0, 0, 0x0a}, {0x02, 0, 0, 0, 0, 0x0b}};
	const uint8_t ip[2][4] = {{10, 0, 0, 1}, {10, 0, 0, 2}};
	uint16_t port[2] = {(uint16_t)(ETH_ECHO_WIRE_PORT + c), (uint16_t)(ETH_ECHO_ECHO_PORT + c)};
	uint32_t ip_len = len - 14, from = echoed ? 1 : 0, to = from ^ 1;

	for (int k = 0; k < 6; k++) {
		h[k] = mac[to][k];
		h[6 + k] = mac[from][k];
	}
	h[12] = 0x08;
	h[13] = 0x00;
	h[14] = 0x45; /* IPv4, 20-byte header */
	h[15] = 0;
	h[16] = (uint8_t)(ip_len >> 8);
	h[17] = (uint8_t)ip_len;
	h[18] = h[19] = 0;
	h[20] = 0x40; /* don't fragment */
	h[21] = 0;
	h[22] = 64;
	h[23] = 17;
	h[24] = h[25] = 0;
	for (int k = 0; k < 4; k++) {
		h[26 + k] = ip[from][k];
		h[30 + k] = ip[to][k];
	}
	h[34] = (uint8_t)(port[from] >> 8);
	h[35] = (uint8_t)port[from];
	h[36] = (uint8_t)(port[to] >> 8);
	h[37] = (uint8_t)port[to];
	h[38] = (uint8_t)((ip_len - 20) >> 8);
	h[39] = (uint8_t)(ip_len - 20);
	h[40] = h[41] = 0;
}

/* Frame seq of CTA c, len bytes, into f. */
GNIC_DEVFN void eth_echo_build(uint8_t *f, uint32_t c, uint32_t len, uint64_t seq)
{
	uint32_t n = len - ETH_ECHO_PAY_OFF, k;

	eth_echo_hdr(f, c, len, 0);
	for (k = 0; k < 8; k++)
		f[ETH_ECHO_SEQ_OFF + k] = (uint8_t)(seq >> (8 * k));
	for (k = ETH_ECHO_SEQ_OFF + 8; k < ETH_ECHO_PAY_OFF; k++)
		f[k] = 0;
	for (k = 0; k < n / 8; k++) /* f + 56 is 8-aligned: buffers and slots are */
		((uint64_t *)(f + ETH_ECHO_PAY_OFF))[k] = perf_le64(eth_echo_word(seq, k));
	for (k *= 8; k < n; k++)
		f[ETH_ECHO_PAY_OFF + k] = (uint8_t)(eth_echo_word(seq, k / 8) >> (8 * (k % 8)));
}

GNIC_DEVFN uint64_t eth_echo_seq(const uint8_t *f)
{
	uint64_t s = 0;

	for (int k = 7; k >= 0; k--)
		s = s << 8 | f[ETH_ECHO_SEQ_OFF + k];
	return s;
}

/* The flags every frame must arrive with. */
#define ETH_ECHO_RX_FLAGS                                                                          \
	(GNIC_ETH_RX_IPV4 | GNIC_ETH_RX_UDP | GNIC_ETH_RX_L3_OK | GNIC_ETH_RX_L4_OK)

GNIC_DEVFN int eth_echo_frame_ok(const struct pd_side *s, const struct gnic_eth_pkt *p,
                                 uint32_t tag, uint32_t c, int64_t iter)
{
	uint64_t want = (uint64_t)tag << 32 | ETH_ECHO_RX_FLAGS;

	if (p->len != s->r.size)
		return pd_fail(s, PD_BAD_LEN, PD_OP_RECV_WAIT, c, iter, -1, p->len, s->r.size);
	if (p->tag != tag || (p->flags & ETH_ECHO_RX_FLAGS) != ETH_ECHO_RX_FLAGS)
		return pd_fail(s, PD_BAD_FRAME, PD_OP_RECV_WAIT, c, iter, -1,
		               (uint64_t)p->tag << 32 | p->flags, want);
	return 0;
}

/* An echo that must be sequence number seq: 0, or the failure recorded. */
GNIC_DEVFN int eth_echo_check(const struct pd_side *s, const struct gnic_eth_pkt *p, uint32_t c,
                              int64_t seq)
{
	const uint8_t *f = p->data;
	uint32_t len = (uint32_t)s->r.size, n = len - ETH_ECHO_PAY_OFF;
	uint8_t h[ETH_ECHO_SEQ_OFF];
	uint64_t got;
	int rc = eth_echo_frame_ok(s, p, ETH_ECHO_TAG_WIRE + c, c, seq);

	if (rc)
		return rc;
	if ((got = eth_echo_seq(f)) != (uint64_t)seq)
		return pd_fail(s, PD_BAD_LOST, PD_OP_RECV_WAIT, c, seq, -1, got, (uint64_t)seq);
	if (!s->validate)
		return 0;
	eth_echo_hdr(h, c, len, 1);
	for (uint32_t k = 0; k < ETH_ECHO_SEQ_OFF; k++)
		if (f[k] != h[k] && k != 24 && k != 25 && k != 40 && k != 41) /* checksums: flags */
			return pd_fail(s, PD_BAD_DATA, PD_OP_CHECK, c, seq, k, f[k], h[k]);
	for (uint32_t k = ETH_ECHO_SEQ_OFF + 8; k < ETH_ECHO_PAY_OFF; k++)
		if (f[k])
			return pd_fail(s, PD_BAD_DATA, PD_OP_CHECK, c, seq, k, f[k], 0);
	for (uint32_t k = 0; k < n; k += 8) {
		uint64_t w = eth_echo_word((uint64_t)seq, k / 8);

		if (k + 8 <= n && ((const uint64_t *)(f + ETH_ECHO_PAY_OFF))[k / 8] == perf_le64(w))
			continue;
		for (uint32_t b = k; b < n && b < k + 8; b++) {
			uint8_t want = (uint8_t)(w >> (8 * (b % 8)));

			if (f[ETH_ECHO_PAY_OFF + b] != want)
				return pd_fail(s, PD_BAD_DATA, PD_OP_CHECK, c, seq,
				               ETH_ECHO_PAY_OFF + b, f[ETH_ECHO_PAY_OFF + b], want);
		}
	}
	return 0;
}

/* Turn a frame around in place (the NIC fills both checksums again). */
GNIC_DEVFN void eth_echo_turn(uint8_t *f)
{
	for (int k = 0; k < 6; k++) {
		uint8_t t = f[k];

		f[k] = f[6 + k];
		f[6 + k] = t;
	}
	for (int k = 0; k < 4; k++) {
		uint8_t t = f[26 + k];

		f[26 + k] = f[30 + k];
		f[30 + k] = t;
	}
	for (int k = 0; k < 2; k++) {
		uint8_t t = f[34 + k];

		f[34 + k] = f[36 + k];
		f[36 + k] = t;
	}
	f[24] = f[25] = f[40] = f[41] = 0;
}

/* A bounded wait for the next frame, over once the other side failed. */
GNIC_DEVFN int eth_echo_idle(const struct pd_side *s, struct gnic_dev_eth *eth, struct gnic_wait *w,
                             uint32_t c, int64_t iter)
{
	int rc = gnic_dev_eth_tx_poll(eth);

	if (rc < 0)
		return pd_fail(s, rc, PD_OP_SEND, c, iter, -1, 0, 0);
	if (s->peer_st && gnic_load_acq32(&s->peer_st->claimed))
		return PD_PEER_FAILED;
	if (gnic_wait_expired(w))
		return pd_fail(s, GNIC_DEV_ERR_TIMEOUT, PD_OP_RECV_WAIT, c, iter, -1, 0, 0);
	return 0;
}

/* CTA c's per frames of this chunk are iterations first + c + j * nctas. */
struct eth_echo_job {
	struct gnic_dev_eth *eth;
	uint32_t c, len, warp;
	int64_t first, step, per;
};

GNIC_DEVFN int64_t eth_echo_iter(const struct eth_echo_job *j, int64_t k)
{
	return j->first + k * j->step;
}

/* The window's first frames, from CTA c's staging slots, in order. */
GNIC_DEVFN int eth_echo_prime(const struct pd_side *s, const struct eth_echo_job *j, int64_t win)
{
	uint32_t lane = eth_echo_lane(j->warp), step = eth_echo_count(j->warp, 1);
	int rc = 0;

	for (int64_t k = lane; k < win; k += step)
		eth_echo_build(s->lbase + perf_ring_dst(&s->r, j->c * s->r.nslots + (uint64_t)k),
		               j->c, j->len, (uint64_t)eth_echo_iter(j, k));
	eth_echo_syncwarp(j->warp);
	for (int64_t k = 0; lane == 0 && k < win && !rc; k++) {
		uint8_t *f = s->lbase + perf_ring_dst(&s->r, j->c * s->r.nslots + (uint64_t)k);

		rc = gnic_dev_eth_send(j->eth, f, s->lkey, j->len, GNIC_ETH_TX_CSUM);
		if (rc)
			pd_fail(s, rc, PD_OP_SEND, j->c, eth_echo_iter(j, k), -1, 0, 0);
	}
	return (int)eth_echo_count(j->warp, rc != 0);
}

/* The wire, thread scope: echoes checked in order, each buffer resent as
 * the frame one window later (or given back at the chunk's end). */
GNIC_DEVFN int eth_echo_wire_thread(const struct pd_side *s, const struct eth_echo_job *j,
                                    int64_t sent)
{
	struct gnic_eth_pkt pk[ETH_ECHO_BURST];
	uint32_t back[ETH_ECHO_BURST];
	struct gnic_wait w;
	int64_t got = 0;
	int rc = 0;

	gnic_wait_init(&w, s->timeout_ns);
	while (got < j->per && !rc) {
		int n = gnic_dev_eth_rx_burst(j->eth, pk, ETH_ECHO_BURST);
		uint32_t out = 0, nb = 0;

		if (n < 0)
			return pd_fail(s, n, PD_OP_RECV_WAIT, j->c, eth_echo_iter(j, got), -1, 0,
			               0);
		if (n == 0) {
			rc = eth_echo_idle(s, j->eth, &w, j->c, eth_echo_iter(j, got));
			continue;
		}
		gnic_wait_init(&w, s->timeout_ns);
		for (int i = 0; i < n && !rc; i++, got++) {
			rc = eth_echo_check(s, &pk[i], j->c, eth_echo_iter(j, got));
			if (!rc && sent < j->per) {
				eth_echo_build(pk[i].data, j->c, j->len,
				               (uint64_t)eth_echo_iter(j, sent++));
				pk[out++] = pk[i];
			} else {
				back[nb++] = pk[i].buf;
			}
		}
		if (rc)
			break;
		if ((rc = gnic_dev_eth_send_burst(j->eth, pk, out,
		                                  GNIC_ETH_TX_CSUM | GNIC_DEV_F_SIGNAL)) == 0 &&
		    (rc = gnic_dev_eth_rx_return_burst(j->eth, back, nb)) == 0)
			rc = gnic_dev_eth_tx_poll(j->eth) < 0 ? GNIC_DEV_ERR_QP : 0;
		if (rc)
			pd_fail(s, rc, PD_OP_SEND, j->c, eth_echo_iter(j, got), -1, 0, 0);
	}
	return rc;
}

/* The wire, warp scope: a frame per lane, one doorbell per warp. */
GNIC_DEVFN int eth_echo_wire_warp(const struct pd_side *s, const struct eth_echo_job *j,
                                  int64_t sent)
{
	uint32_t lane = eth_echo_lane(j->warp);
	struct gnic_wait w;
	int64_t got = 0;
	int rc = 0;

	gnic_wait_init(&w, s->timeout_ns);
	while (got < j->per) {
		struct gnic_eth_pkt p = {0};
		int has = gnic_dev_eth_rx_burst_warp(j->eth, &p), again;
		uint32_t n, resent;

		if (has < 0) /* the same in every lane */
			return pd_fail(s, has, PD_OP_RECV_WAIT, j->c, eth_echo_iter(j, got), -1, 0,
			               0);
		n = eth_echo_count(1, has);
		if (n == 0) {
			rc = lane == 0 ? eth_echo_idle(s, j->eth, &w, j->c, eth_echo_iter(j, got))
			               : 0;
			if (eth_echo_count(1, rc != 0))
				return 1;
			continue;
		}
		gnic_wait_init(&w, s->timeout_ns);
		rc = has ? eth_echo_check(s, &p, j->c, eth_echo_iter(j, got + lane)) : 0;
		if (eth_echo_count(1, rc != 0))
			return 1;
		again = has && sent + lane < j->per;
		if (again)
			eth_echo_build(p.data, j->c, j->len,
			               (uint64_t)eth_echo_iter(j, sent + lane));
		resent = eth_echo_count(1, again);
		rc =
		    gnic_dev_eth_send_buf_warp(j->eth, p.buf, again ? j->len : 0, GNIC_ETH_TX_CSUM);
		if (!rc && has && !again)
			rc = gnic_dev_eth_rx_return(j->eth, p.buf);
		if (!rc && lane == 0 && gnic_dev_eth_tx_poll(j->eth) < 0)
			rc = GNIC_DEV_ERR_QP;
		if (rc)
			pd_fail(s, rc, PD_OP_SEND, j->c, eth_echo_iter(j, got), -1, 0, 0);
		if (eth_echo_count(1, rc != 0))
			return 1;
		got += n;
		sent += resent;
	}
	return 0;
}

/* The echo, thread scope: a burst in, turned, sent back. */
GNIC_DEVFN int eth_echo_echo_thread(const struct pd_side *s, const struct eth_echo_job *j)
{
	struct gnic_eth_pkt pk[ETH_ECHO_BURST];
	struct gnic_wait w;
	int64_t done = 0;
	int rc = 0;

	gnic_wait_init(&w, s->timeout_ns);
	while (done < j->per && !rc) {
		int n = gnic_dev_eth_rx_burst(j->eth, pk, ETH_ECHO_BURST);

		if (n < 0)
			return pd_fail(s, n, PD_OP_RECV_WAIT, j->c, eth_echo_iter(j, done), -1, 0,
			               0);
		if (n == 0) {
			rc = eth_echo_idle(s, j->eth, &w, j->c, eth_echo_iter(j, done));
			continue;
		}
		gnic_wait_init(&w, s->timeout_ns);
		for (int i = 0; i < n && !rc; i++) {
			rc = eth_echo_frame_ok(s, &pk[i], ETH_ECHO_TAG_ECHO + j->c, j->c,
			                       eth_echo_iter(j, done + i));
			eth_echo_turn(pk[i].data);
		}
		if (rc)
			break;
		if ((rc = gnic_dev_eth_send_burst(j->eth, pk, (uint32_t)n,
		                                  GNIC_ETH_TX_CSUM | GNIC_DEV_F_SIGNAL)) == 0)
			rc = gnic_dev_eth_tx_poll(j->eth) < 0 ? GNIC_DEV_ERR_QP : 0;
		if (rc)
			pd_fail(s, rc, PD_OP_SEND, j->c, eth_echo_iter(j, done), -1, 0, 0);
		done += n;
	}
	return rc;
}

GNIC_DEVFN int eth_echo_echo_warp(const struct pd_side *s, const struct eth_echo_job *j)
{
	uint32_t lane = eth_echo_lane(j->warp);
	struct gnic_wait w;
	int64_t done = 0;
	int rc = 0;

	gnic_wait_init(&w, s->timeout_ns);
	while (done < j->per) {
		struct gnic_eth_pkt p = {0};
		int has = gnic_dev_eth_rx_burst_warp(j->eth, &p);
		uint32_t n;

		if (has < 0)
			return pd_fail(s, has, PD_OP_RECV_WAIT, j->c, eth_echo_iter(j, done), -1, 0,
			               0);
		n = eth_echo_count(1, has);
		if (n == 0) {
			rc = lane == 0 ? eth_echo_idle(s, j->eth, &w, j->c, eth_echo_iter(j, done))
			               : 0;
			if (eth_echo_count(1, rc != 0))
				return 1;
			continue;
		}
		gnic_wait_init(&w, s->timeout_ns);
		rc = has ? eth_echo_frame_ok(s, &p, ETH_ECHO_TAG_ECHO + j->c, j->c,
		                             eth_echo_iter(j, done + lane))
		         : 0;
		if (eth_echo_count(1, rc != 0))
			return 1;
		if (has)
			eth_echo_turn(p.data);
		rc = gnic_dev_eth_send_buf_warp(j->eth, p.buf, has ? p.len : 0, GNIC_ETH_TX_CSUM);
		if (!rc && lane == 0 && gnic_dev_eth_tx_poll(j->eth) < 0)
			rc = GNIC_DEV_ERR_QP;
		if (rc)
			pd_fail(s, rc, PD_OP_SEND, j->c, eth_echo_iter(j, done), -1, 0, 0);
		if (eth_echo_count(1, rc != 0))
			return 1;
		done += n;
	}
	return 0;
}

GNIC_DEVFN void eth_echo_dev(const struct pd_side *s, const struct pd_thread *t)
{
	struct eth_echo_job j;
	int64_t win;
	int rc;

	if (t->tid >= (s->scope == PERF_SCOPE_WARP ? 32u : 1u))
		return; /* a CTA's first thread or warp drives its queue */
	j.eth = s->eth[t->cta];
	j.c = t->cta;
	j.len = (uint32_t)s->r.size;
	j.warp = s->scope == PERF_SCOPE_WARP;
	j.first = s->first + t->cta;
	j.step = t->nctas;
	j.per = s->count / t->nctas;
	win = j.per < (int64_t)s->r.nslots ? j.per : (int64_t)s->r.nslots;
	if (s->side == PERF_A) {
		rc = eth_echo_prime(s, &j, win);
		if (!rc)
			rc = j.warp ? eth_echo_wire_warp(s, &j, win)
			            : eth_echo_wire_thread(s, &j, win);
	} else {
		rc = j.warp ? eth_echo_echo_warp(s, &j) : eth_echo_echo_thread(s, &j);
	}
	/* every send out and its buffer back in the receive queue */
	if (!rc && eth_echo_lane(j.warp) == 0 && (rc = gnic_dev_eth_flush(j.eth)) != 0)
		pd_fail(s, rc, PD_OP_QUIET, j.c, s->first + s->count, -1, 0, 0);
}
#else
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* ---- the queues -------------------------------------------------------------------------------
 */

static void check(gnic_status_t st, const char *what)
{
	if (st != GNIC_OK)
		perf_fatal("eth_echo: %s: %s: %s", what, gnic_strerror(st), gnic_last_error());
}

/* Side ep's queues, one per CTA of the largest row, each with its rule. */
static void open_queues(const struct perf_args *a, struct perf_ep *ep)
{
	size_t max = 0;
	struct gnic_eth_attr ea;

	for (int i = 0; i < a->nsizes; i++)
		max = a->sizes[i] > max ? a->sizes[i] : max;
	gnic_eth_attr_init(&ea);
	ea.sq_depth = (uint32_t)a->tx_depth;
	ea.rx_bufs = (uint32_t)a->eth_rx_bufs;
	while (ea.buf_size < max)
		ea.buf_size *= 2;
	ea.pool_mem = a->on_gpu && a->host_mem ? GNIC_ETH_MEM_HOST : GNIC_ETH_MEM_AUTO;
	ea.db_mode = (enum gnic_db_mode)a->mode->db_mode;
	ea.timeout_ns = (uint64_t)a->timeout_s * 1000000000ull;
	ep->neth = perf_list_max(a->ctas_list, a->nctas);
	ep->eth = calloc((size_t)ep->neth, sizeof(*ep->eth));
	if (!ep->eth)
		perf_fatal("out of memory");
	for (int c = 0; c < ep->neth; c++) {
		struct gnic_eth_rule rule;
		struct gnic_eth_flow *flow;

		check(gnic_eth_create(ep->gctx, &ea, &ep->eth[c]), "gnic_eth_create");
		memset(&rule, 0, sizeof(rule));
		rule.match = GNIC_ETH_MATCH_DST_PORT;
		rule.ip_version = 4;
		rule.l4 = GNIC_ETH_L4_UDP;
		rule.dst_port =
		    (uint16_t)((ep->side == PERF_A ? ETH_ECHO_WIRE_PORT : ETH_ECHO_ECHO_PORT) + c);
		rule.flow_tag = (ep->side == PERF_A ? ETH_ECHO_TAG_WIRE : ETH_ECHO_TAG_ECHO) + c;
		check(gnic_eth_rule_add(ep->eth[c], &rule, &flow), "gnic_eth_rule_add");
	}
	perf_ep_eth_dev(ep);
}

/* The port's counters (the device's: both sides' queues are on it). */
static struct gnic_eth_stats stats(const struct perf_run *r)
{
	struct gnic_eth_stats st;

	check(gnic_eth_stats(r->ep[PERF_A]->eth[0], &st), "gnic_eth_stats");
	return st;
}

static void print_counters(const struct perf_run *r, const char *why)
{
	const struct gnic_eth_stats *b = &r->ep[PERF_A]->eth_base;
	struct gnic_eth_stats n = stats(r);

	fprintf(stderr,
	        "gnic-perf: eth_echo: %s; the port's counters over this run: rx_frames %llu "
	        "rx_delivered %llu rx_no_rule %llu rx_drop_rule %llu rx_out_of_buffer %llu "
	        "rx_too_long %llu tx_frames %llu\n",
	        why, (unsigned long long)(n.rx_frames - b->rx_frames),
	        (unsigned long long)(n.rx_delivered - b->rx_delivered),
	        (unsigned long long)(n.rx_no_rule - b->rx_no_rule),
	        (unsigned long long)(n.rx_drop_rule - b->rx_drop_rule),
	        (unsigned long long)(n.rx_out_of_buffer - b->rx_out_of_buffer),
	        (unsigned long long)(n.rx_too_long - b->rx_too_long),
	        (unsigned long long)(n.tx_frames - b->tx_frames));
	if (n.rx_out_of_buffer - b->rx_out_of_buffer)
		fprintf(stderr,
		        "gnic-perf: eth_echo: frames lost: the port dropped %llu for want of a "
		        "receive buffer (rx_out_of_buffer)\n",
		        (unsigned long long)(n.rx_out_of_buffer - b->rx_out_of_buffer));
}

/* ---- the hooks --------------------------------------------------------------------------------
 */

static void setup(struct perf_run *r)
{
	for (int side = PERF_A; side <= PERF_B; side++)
		if (!r->ep[side]->eth)
			open_queues(r->a, r->ep[side]);
	r->ep[PERF_A]->eth_base = stats(r);
}

/* After each chunk: every frame sent twice (out and back) and delivered
 * twice, none dropped (a hardware port counts only rx_out_of_buffer). */
static void run(struct perf_run *r)
{
	const struct gnic_eth_stats *b = &r->ep[PERF_A]->eth_base;
	uint64_t want = 2 * (uint64_t)(r->first + r->count);
	struct gnic_eth_stats n;

	perf_dev_run(r, PERF_RUN_A | PERF_RUN_B, 0);
	n = stats(r);
	if (n.rx_out_of_buffer - b->rx_out_of_buffer ||
	    (n.tx_frames != GNIC_ETH_STAT_UNKNOWN &&
	     (n.tx_frames - b->tx_frames != want || n.rx_delivered - b->rx_delivered != want ||
	      n.rx_frames - b->rx_frames != want))) {
		print_counters(r, "frames lost or extra");
		perf_fatal("eth_echo, %zu-byte frames: the port did not carry each of %lld frames "
		           "out and back exactly once (counters above)",
		           r->size, (long long)(r->first + r->count));
	}
}

/* A device thread failed: what the port saw, and the queues' errors. */
static void explain(const struct perf_run *r)
{
	print_counters(r, "a device thread failed");
	for (int side = PERF_A; side <= PERF_B; side++)
		for (int c = 0; c < r->ep[side]->neth; c++) {
			struct gnic_qp_error e;

			if (gnic_eth_error(r->ep[side]->eth[c], &e) == GNIC_OK && e.dev_status)
				fprintf(stderr, "gnic-perf: eth_echo: side %c queue %d: %s\n",
				        side == PERF_A ? 'A' : 'B', c, e.text);
		}
}

PERF_TEST_DEF(eth_echo, PERF_RATE, PERF_MODES_GNIC & ~(1u << PERF_CPU_PROXY), PERF_F_ETH,
              "64,512,1500", 200000, 5000,
              "UDP frames echoed by device code per second (Ethernet queues, gnic-emu's "
              "loopback port), every echo checked",
              .setup = setup, .run = run, .explain = explain);
#endif
