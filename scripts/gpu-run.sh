#!/usr/bin/env bash
# The GPU suite on a machine with an NVIDIA GPU, from a build tree made
# elsewhere (scripts/test.sh or cmake): ctest -L gpu, compute-sanitizer
# memcheck, racecheck and synccheck on the device data path, and the first GPU put
# rates. Results go to ${OUT:-/tmp/gnic-gpu}. Used with the device tool;
# docs/gpu-testing.md records the runs.
set -uo pipefail
b=${1:-build}
out=${OUT:-/tmp/gnic-gpu}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$b/src:$PWD/$b/emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
	date -u; nvidia-smi -L; nproc
	# the binaries directly: the build tree may come from another path
	# each in both queue placements: host memory (ibv_create_qp) and GPU
	# memory (DevX umem); QPs in CPU/PROXY doorbell modes stay on the host
	for q in host gpu; do
		for t in "$b/tests/gnic/test_gnic_gpu" "$b/tests/gpu/test_gpu_dev" \
			"$b/tests/gpu/test_gpu_atomics" "$b/examples/put_bw_gpu"; do
			echo "== GNIC_QUEUE=$q $t"; GNIC_QUEUE=$q timeout 100 "$t"; echo "rc=$?"
		done
		echo "== GNIC_QUEUE=$q GNIC_DB_MAP=off test_gnic_gpu nomap"
		GNIC_QUEUE=$q GNIC_DB_MAP=off timeout 100 "$b/tests/gnic/test_gnic_gpu" nomap
		echo "rc=$?"
		echo "== GNIC_QUEUE=$q GNIC_DB_MODE=proxy test_gpu_atomics"
		GNIC_QUEUE=$q GNIC_DB_MODE=proxy timeout 100 "$b/tests/gpu/test_gpu_atomics"
		echo "rc=$?"
	done
	echo "== compute-sanitizer memcheck"
	timeout 120 compute-sanitizer --tool memcheck --report-api-errors no --target-processes all \
		"$b/tests/gpu/test_gpu_dev"; echo "rc=$?"
	echo "== compute-sanitizer racecheck"
	timeout 120 compute-sanitizer --tool racecheck --target-processes all \
		"$b/tests/gpu/test_gpu_dev"; echo "rc=$?"
	timeout 120 compute-sanitizer --tool racecheck "$b/examples/put_bw_gpu" 8 64 20; echo "rc=$?"
	timeout 120 compute-sanitizer --tool racecheck "$b/tests/gpu/test_gpu_atomics"; echo "rc=$?"
	timeout 120 compute-sanitizer --tool memcheck --report-api-errors no \
		"$b/tests/gpu/test_gpu_atomics"; echo "rc=$?"
	echo "== compute-sanitizer synccheck"
	timeout 120 compute-sanitizer --tool synccheck --target-processes all \
		"$b/tests/gpu/test_gpu_dev"; echo "rc=$?"
	echo "== bench"
	GNIC_EMU_SPIN_US=1000 timeout 150 "$b/tests/gpu/test_gpu_dev" --bench; echo "rc=$?"
	echo "== emulator ceilings (host mode) on this machine"
	"$b/tools/gnic-perf" put_bw --sizes 64,4096 --iters 1000000
	"$b/tools/gnic-perf" put_bw --sizes 1048576 --iters 5000
	"$b/tools/gnic-perf" put_lat --sizes 8,4096 --iters 100000
} 2>&1 | tee "$out/gpu-run.log"
