/* SPDX-License-Identifier: MIT */
/*
 * gnic-emu's own diagnostics calls, beyond the verbs and mlx5dv it
 * implements: exported by libgnic_emu.so (a program run on gnic-emu can
 * look them up with dlsym(RTLD_DEFAULT, ...)); nothing of rdma-core.
 */
#ifndef GNIC_EMU_API_H
#define GNIC_EMU_API_H

#include <infiniband/verbs.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The counters of a device's Ethernet port since the process started
 * (docs/emu.md, "Raw Ethernet"). */
struct gemu_eth_stats {
	uint64_t rx_frames;    /* frames that reached steering */
	uint64_t rx_delivered; /* written into a RAW_PACKET QP's receive WQE */
	uint64_t rx_no_rule;   /* matched no flow rule: dropped */
	uint64_t rx_drop_rule; /* matched a rule with the drop action */
	uint64_t rx_no_wqe;    /* its QP had no receive WQE (or was not in RTR/RTS) */
	uint64_t rx_too_long;  /* longer than the receive WQE's buffers */
	uint64_t rx_bad_wqe;   /* the receive WQE named memory it may not write */
	uint64_t rx_overrun;   /* lost before steering: the port's socket buffer was full */
	uint64_t tx_frames;    /* sent by RAW_PACKET QPs */
	uint64_t tx_dropped;   /* ... that the port could not send */
};

/* The counters of context's device: 0, or EINVAL (not a gnic-emu context,
 * or out NULL). */
int gemu_eth_stats(struct ibv_context *context, struct gemu_eth_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* GNIC_EMU_API_H */
