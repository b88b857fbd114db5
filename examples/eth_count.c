// SPDX-License-Identifier: MIT
/*
 * A packet counter/filter in device code through libgnic's Ethernet API.
 * One queue counts: rules give UDP port 7001 flow tag 1 and port 7002 tag
 * 2, drop port 7003, and leave 7004 to the NIC's default drop; eth_count_run
 * (eth_apps.h) counts frames by tag and reports each through the hand-off
 * ring to this thread, which checks them in order. A second queue sends the
 * traffic (eth_send_run, one frame per port in turn). The frames go round
 * through the emulator's loopback port: run on gnic-emu without
 * GNIC_EMU_ETH_IF (on a NIC, they leave on the wire and nothing comes back).
 * On CPU threads here; eth_count_gpu.cu runs both loops as kernels.
 *
 *   eth_count COUNT
 *
 * Prints "counted N tag1 A tag2 B ring R dropped D unsteered U
 * out_of_buffer O" and exits 0 when every figure is what COUNT frames give:
 * A and B a quarter each, D and U (the port's drop and no-rule counters)
 * a quarter each, R = N ring entries with the tag and length of each frame
 * in send order, no out-of-buffer drop.
 */
#include <gnic/gnic.h>

#include "eth_run.h"

/* Frames to the counted ports among the first n. */
static uint64_t steered_in(uint64_t n)
{
	return n / 4 * 2 + (n % 4 > 2 ? 2 : n % 4);
}

/* The k-th (0-based) steered frame's index among all frames. */
static uint64_t steered_frame(uint64_t k)
{
	return k / 2 * 4 + k % 2;
}

static int check_entries(const struct gnic_ring_entry *e, uint32_t n, uint64_t *seen)
{
	for (uint32_t i = 0; i < n; i++, (*seen)++) {
		uint64_t f = steered_frame(*seen);
		uint32_t tag = (uint32_t)(f % 4) + 1, len = 42 + eth_app_payload(f);

		if (e[i].user != *seen + 1 || e[i].tag != tag || e[i].len != len) {
			fprintf(stderr,
			        "eth_count: ring entry %llu: count %llu tag %u len %u, want %llu "
			        "%u %u\n",
			        (unsigned long long)*seen, (unsigned long long)e[i].user, e[i].tag,
			        e[i].len, (unsigned long long)*seen + 1, tag, len);
			return 1;
		}
	}
	return 0;
}

static int add_rule(struct gnic_eth *eth, uint16_t port, uint32_t tag, int drop,
                    struct gnic_eth_flow **f)
{
	struct gnic_eth_rule r;

	eth_udp_rule(&r, port, tag);
	r.action = drop ? GNIC_ETH_DROP : GNIC_ETH_DELIVER;
	return gnic_eth_rule_add(eth, &r, f) ? eth_fail("eth_count", "gnic_eth_rule_add") : 0;
}

struct count_run {
	struct gnic_eth *rx, *tx;
	struct gnic_ring *ring;
	struct eth_job cnt, snd;
	struct gnic_eth_stats s0, s1;
	uint64_t seen;
};

/* Consume the ring until every steered frame was reported (or a bound). */
static int consume(struct count_run *r, uint64_t want)
{
	struct gnic_ring_entry e[64];
	uint64_t end = eth_now_ms() + 20000;

	while (r->seen < want && eth_now_ms() < end) {
		uint32_t n = 0;
		gnic_status_t st = gnic_ring_consume(r->ring, e, 64, 100000000ull, &n);

		if (st == GNIC_ERR_TIMEOUT) {
			if (__atomic_load_n(&r->cnt.ctl->rc, __ATOMIC_ACQUIRE) ||
			    __atomic_load_n(&r->snd.ctl->rc, __ATOMIC_ACQUIRE))
				break;
			continue;
		}
		if (st)
			return eth_fail("eth_count", "gnic_ring_consume");
		if (check_entries(e, n, &r->seen))
			return 1;
	}
	return 0;
}

static int report(struct count_run *r, uint64_t count)
{
	uint64_t q = count / 4, want = steered_in(count);
	uint64_t dropped = r->s1.rx_drop_rule - r->s0.rx_drop_rule;
	uint64_t unsteered = r->s1.rx_no_rule - r->s0.rx_no_rule;
	uint64_t oob = r->s1.rx_out_of_buffer - r->s0.rx_out_of_buffer;
	struct eth_ctl *c = r->cnt.ctl;

	printf("counted %llu tag1 %llu tag2 %llu ring %llu dropped %llu unsteered %llu "
	       "out_of_buffer %llu\n",
	       (unsigned long long)c->echoed, (unsigned long long)c->tags[1],
	       (unsigned long long)c->tags[2], (unsigned long long)r->seen,
	       (unsigned long long)dropped, (unsigned long long)unsteered, (unsigned long long)oob);
	if (c->rc || r->snd.ctl->rc) {
		fprintf(stderr, "eth_count: device code failed: counter %d, sender %d\n", c->rc,
		        r->snd.ctl->rc);
		return 1;
	}
	if (c->echoed != want || c->tags[1] != q + (count % 4 >= 1) ||
	    c->tags[2] != q + (count % 4 >= 2) || r->seen != want || c->bad ||
	    dropped != q + (count % 4 >= 3) || unsteered != q || oob) {
		fprintf(stderr, "eth_count: figures differ from what %llu frames give\n",
		        (unsigned long long)count);
		return 1;
	}
	return 0;
}

static int run(struct gnic_ctx *ctx, uint64_t count)
{
	struct count_run r;
	struct gnic_eth_flow *f;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	if (gnic_eth_create(ctx, NULL, &r.rx) || gnic_eth_create(ctx, NULL, &r.tx) ||
	    gnic_ring_create(ctx, 1024, 0, &r.ring)) {
		rc = eth_fail("eth_count", "create");
		goto out;
	}
	if (add_rule(r.rx, ETH_APP_PORT0, 1, 0, &f) ||
	    add_rule(r.rx, ETH_APP_PORT0 + 1, 2, 0, &f) ||
	    add_rule(r.rx, ETH_APP_PORT0 + 2, 0, 1, &f) || gnic_eth_stats(r.rx, &r.s0)) {
		rc = 2;
		goto out;
	}
	r.cnt.app = 1;
	r.cnt.eth = gnic_eth_dev(r.rx);
	r.cnt.ring = gnic_ring_dev(r.ring);
	r.snd.app = 2;
	r.snd.eth = gnic_eth_dev(r.tx);
	r.snd.count = count;
	r.cnt.ctl = eth_ctl_alloc();
	r.snd.ctl = eth_ctl_alloc();
	r.snd.peer = r.cnt.ctl;
	if (!r.cnt.ctl || !r.snd.ctl || eth_start(&r.cnt)) {
		rc = 2;
		goto out;
	}
	if (eth_start(&r.snd)) {
		eth_ctl_stop(r.cnt.ctl);
		eth_join(&r.cnt);
		rc = 2;
		goto out;
	}
	rc = consume(&r, steered_in(count));
	eth_join(&r.snd);
	eth_ctl_stop(r.cnt.ctl);
	eth_join(&r.cnt);
	if (!rc && gnic_eth_stats(r.rx, &r.s1))
		rc = eth_fail("eth_count", "gnic_eth_stats");
	if (!rc)
		rc = report(&r, count);
out:
	if (r.cnt.ctl)
		eth_ctl_free(r.cnt.ctl);
	if (r.snd.ctl)
		eth_ctl_free(r.snd.ctl);
	gnic_ring_destroy(r.ring);
	gnic_eth_destroy(r.tx);
	gnic_eth_destroy(r.rx);
	return rc;
}

int main(int argc, char **argv)
{
	struct gnic_ctx *ctx;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: eth_count COUNT\n");
		return 2;
	}
	rc = eth_ctx_open("eth_count", &ctx);
	if (rc)
		return rc;
	rc = run(ctx, strtoull(argv[1], NULL, 0));
	gnic_ctx_destroy(ctx);
	return rc;
}
