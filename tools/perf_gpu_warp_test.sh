#!/bin/sh
# SPDX-License-Identifier: MIT
# Warp-scope posting on a GPU, many rounds: post_rate with 4 warps on one QP
# (1 CTA) and with 8 CTAs sharing it, each lane retiring its warp's WQEs.
# Lanes that call a warp operation together may reach it apart; a warp call
# that formed its group from __activemask() hung here in 5 of 15 runs.
# Usage: perf_gpu_warp_test.sh GNIC_PERF. Skipped (77) without a GPU: on CPU
# threads a warp is one thread and there is nothing to test.
perf=$1
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "no GPU: skipped"
	exit 77
fi
for ctas in 1 8; do
	for round in 1 2 3; do
		echo "== post_rate warp, $ctas CTA(s) x 128 threads, round $round"
		"$perf" post_rate --mode gpu --scope warp --ctas "$ctas" --threads 128 \
			--iters 20000 --timeout 5 --host-mem || exit 1
	done
done
