// SPDX-License-Identifier: MIT
/*
 * A UDP echo in device code through libgnic's Ethernet API: one Ethernet
 * queue, one steering rule (IPv4, UDP destination port PORT, flow tag TAG;
 * everything else is dropped by the NIC), and eth_echo_run (eth_apps.h),
 * which turns each frame around in its receive buffer and sends it back
 * with the checksums left to the NIC. On CPU threads here; eth_echo_gpu.cu
 * is the same program with the loop in a kernel.
 *
 *   eth_echo PORT COUNT [IDLE_MS] [RX_BUFS]
 *
 * Stops IDLE_MS (default 10000) without a frame, or, once COUNT echoes were
 * sent, 1.5 s without one; prints "ready" when the rule is in place and at
 * the end one line: "echoed N bad M rx_frames F rx_delivered V rx_no_rule R
 * rx_out_of_buffer O rx_drop_rule D rx_too_long L tx_frames T rx_overrun V
 * tx_dropped X seconds S rate P/s" (the port's counters; rate: echoes over
 * the time from the first to the last).
 * Exit 0 only when N >= COUNT, M == 0 and the device code met no error.
 * On gnic-emu GNIC_EMU_ETH_IF names the interface.
 */
#include <gnic/gnic.h>

#include "eth_run.h"

#define TAG 0x4242

static int run(struct gnic_ctx *ctx, uint16_t port, uint64_t count, unsigned idle_ms,
               uint32_t rx_bufs)
{
	struct gnic_eth_attr ea;
	struct gnic_eth_rule rule;
	struct gnic_eth_stats s;
	struct gnic_eth_flow *flow;
	struct gnic_eth *eth;
	struct eth_job job;
	uint64_t last, seen = 0, t_first = 0, t_last = 0;
	double secs;
	int rc = 0;

	memset(&job, 0, sizeof(job));
	gnic_eth_attr_init(&ea);
	ea.rx_bufs = rx_bufs;
	ea.share = GNIC_SHARE_EXCLUSIVE; /* one thread drives the queue */
	if (gnic_eth_create(ctx, &ea, &eth))
		return eth_fail("eth_echo", "gnic_eth_create");
	eth_udp_rule(&rule, port, TAG);
	if (gnic_eth_rule_add(eth, &rule, &flow)) {
		gnic_eth_destroy(eth);
		return eth_fail("eth_echo", "gnic_eth_rule_add");
	}
	job.app = 0;
	job.eth = gnic_eth_dev(eth);
	job.ctl = eth_ctl_alloc();
	if (!job.ctl || (job.ctl->want_tag = TAG, eth_start(&job))) {
		fprintf(stderr, "eth_echo: cannot start the device code\n");
		gnic_eth_destroy(eth);
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	last = eth_now_ms();
	while (eth_now_ms() - last < (seen >= count ? 1500 : idle_ms) &&
	       !__atomic_load_n(&job.ctl->rc, __ATOMIC_ACQUIRE)) {
		uint64_t n = eth_ctl_load(&job.ctl->echoed) + eth_ctl_load(&job.ctl->bad);
		struct timespec ts = {0, 1000000};

		if (n != seen) {
			last = eth_now_ms();
			t_last = eth_now_ns();
			if (!seen)
				t_first = t_last;
			seen = n;
		}
		nanosleep(&ts, NULL);
	}
	eth_ctl_stop(job.ctl);
	if (eth_join(&job))
		rc = 2;
	if (job.ctl->rc) {
		struct gnic_qp_error e;

		gnic_eth_error(eth, &e);
		fprintf(stderr, "eth_echo: device code failed: %d (%s)\n", job.ctl->rc, e.text);
		rc = 1;
	}
	if (gnic_eth_stats(eth, &s))
		memset(&s, 0, sizeof(s));
	secs = (double)(t_last - t_first) / 1e9;
	printf("echoed %llu bad %llu rx_frames %llu rx_delivered %llu rx_no_rule %llu "
	       "rx_out_of_buffer %llu rx_drop_rule %llu rx_too_long %llu tx_frames %llu "
	       "rx_overrun %llu tx_dropped %llu seconds %.2f rate %.0f/s\n",
	       (unsigned long long)job.ctl->echoed, (unsigned long long)job.ctl->bad,
	       (unsigned long long)s.rx_frames, (unsigned long long)s.rx_delivered,
	       (unsigned long long)s.rx_no_rule, (unsigned long long)s.rx_out_of_buffer,
	       (unsigned long long)s.rx_drop_rule, (unsigned long long)s.rx_too_long,
	       (unsigned long long)s.tx_frames, (unsigned long long)s.rx_overrun,
	       (unsigned long long)s.tx_dropped, secs,
	       secs > 0 ? (double)job.ctl->echoed / secs : 0.0);
	if (!rc && (job.ctl->echoed < count || job.ctl->bad))
		rc = 1;
	eth_ctl_free(job.ctl);
	gnic_eth_destroy(eth);
	return rc;
}

int main(int argc, char **argv)
{
	struct gnic_ctx *ctx;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: eth_echo PORT COUNT [IDLE_MS] [RX_BUFS]\n");
		return 2;
	}
	rc = eth_ctx_open("eth_echo", &ctx);
	if (rc)
		return rc;
	rc = run(ctx, (uint16_t)atoi(argv[1]), strtoull(argv[2], NULL, 0),
	         argc > 3 ? (unsigned)atoi(argv[3]) : 10000,
	         argc > 4 ? (uint32_t)atoi(argv[4]) : 512);
	gnic_ctx_destroy(ctx);
	return rc;
}
