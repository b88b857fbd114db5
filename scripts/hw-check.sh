#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The first-run checklist on a host with a real ConnectX (docs/hardware.md):
# what rdma-core reports, then libgnic's tests and gnic-perf against the
# rdma-core provider (GNIC_PROVIDER=verbs: a missing NIC fails instead of
# falling back to gnic-emu), every libgnic mode, validation on. One line per
# check and a summary; everything each check printed goes to the log.
#
#   scripts/hw-check.sh [BUILD_DIR] [PEER_HOST]
#
# BUILD_DIR defaults to build/ (built with `scripts/test.sh` or cmake).
# With PEER_HOST, also a two-host put_bw and atomic_lat: start
# `gnic-perf put_bw --server` / `gnic-perf atomic_lat --server` there first.
# Exit status: 0 if every check that ran passed, 1 otherwise, 77 if this
# host has no mlx5 device. HW_CHECK_PROVIDER=emu (with gnic-emu's drop-in
# libraries on LD_LIBRARY_PATH) runs the same list on the emulator: how
# the script itself is tested.
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
peer=${2:-}
log=${HW_CHECK_LOG:-/tmp/gnic-hw-check.log}
perf=$build/tools/gnic-perf
export GNIC_PROVIDER=${HW_CHECK_PROVIDER:-verbs} GNIC_LOG=${GNIC_LOG:-2}
pass=0 fail=0 skip=0
: >"$log"

# check NAME CMD...: run it with a bound, say PASS/FAIL, keep its output.
check() {
	local name=$1 rc
	shift
	echo "== $name: $*" >>"$log"
	timeout 600 "$@" >>"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		printf '  PASS  %s\n' "$name"
	elif [ "$rc" -eq 77 ]; then
		skip=$((skip + 1))
		printf '  SKIP  %s\n' "$name"
	else
		fail=$((fail + 1))
		printf '  FAIL  %s (exit %d)\n' "$name" "$rc"
	fi
}

# `ibv_devinfo -l` prints "N HCAs found:" then one name per line
if ! command -v ibv_devinfo >/dev/null ||
	! ibv_devinfo -l 2>/dev/null | grep -v 'HCAs\? found' | grep -q '[^[:space:]]'; then
	echo "hw-check: rdma-core lists no RDMA device here (ibv_devinfo -l); nothing to check"
	exit 77
fi
[ -x "$perf" ] || { echo "hw-check: no $perf: build first (scripts/test.sh)"; exit 1; }
echo "hw-check: log in $log"
ibv_devinfo -v >>"$log" 2>&1
ibv_devinfo | grep -E 'hca_id|link_layer|port_lid|state' | sed 's/^/  /'
command -v show_gids >/dev/null && show_gids >>"$log" 2>&1

gpu=no
nvidia-smi -L >/dev/null 2>&1 && gpu=yes
echo "  GPU: $gpu"

# libgnic's own checks that run against a real provider
check "context, GID choice, QP connect" "$build/tests/gnic/test_gnic_connect"
check "QP groups" "$build/tests/gnic/test_gnic_group"
check "device data path on CPU threads" "$build/tests/dev/test_dev_ops"
check "shared QPs on CPU threads" "$build/tests/dev/test_dev_shared"
check "fetched atomic values" "$build/tests/dev/test_dev_results"
if [ "$gpu" = yes ]; then
	check "GPU placement" "$build/tests/gnic/test_gnic_gpu"
	check "GPU data path (SM, BF, CPU-assisted, proxy)" "$build/tests/gpu/test_gpu_dev"
	check "GPU atomics" "$build/tests/gpu/test_gpu_atomics"
fi

# gnic-perf, one process (loopback through the NIC), every mode
for m in host gpu gpu-bf cpu-assisted cpu-proxy; do
	for t in put_bw get_bw put_lat atomic_lat send_lat; do
		check "gnic-perf $t --mode $m" "$perf" "$t" --mode "$m" --quick --timeout 60
	done
done
[ "$gpu" = yes ] && check "gnic-perf post_rate (GPU posting, no consumer)" \
	"$perf" post_rate --mode gpu --quick --timeout 60

if [ -n "$peer" ]; then
	check "two hosts: put_bw" "$perf" put_bw --mode gpu --quick --timeout 60 --connect "$peer"
	check "two hosts: atomic_lat" "$perf" atomic_lat --mode gpu --quick --timeout 60 \
		--connect "$peer"
fi

echo "hw-check: $pass passed, $fail failed, $skip skipped (log: $log)"
[ "$fail" -eq 0 ]
