#!/usr/bin/env bash
# The GPU suite on a machine with an NVIDIA GPU, from a build tree made
# elsewhere (scripts/test.sh or cmake; building only the gpu tests' targets
# and gnic-perf is enough): every ctest entry of label gpu in both queue
# placements, compute-sanitizer memcheck, racecheck and synccheck on the
# device data path in both placements, the first GPU put rates and the
# emulator's ceilings. Results go to ${OUT:-/tmp/gnic-gpu}; the summary's
# last line is "gpu-run: PASS" or "gpu-run: FAIL: ...". Used with the device
# tool; docs/gpu-testing.md records the runs.
#
#   bash scripts/gpu-run.sh [BUILD_DIR]
set -uo pipefail
b=$(cd "${1:-build}" && pwd) || exit 1
src=$PWD
out=${OUT:-/tmp/gnic-gpu}
mkdir -p "$out"

# ctest names the paths the tree was configured with; where the tree came
# from another machine, make those paths lead here.
cache_path() { sed -n "s|^$1:INTERNAL=||p" "$b/CMakeCache.txt"; }
link_to() {
	[ -e "$1" ] && return 0
	mkdir -p "$(dirname "$1")" && ln -s "$2" "$1" && echo "linked $1 -> $2"
}
cfg_src=$(cache_path CMAKE_HOME_DIRECTORY)
cfg_bin=$(cache_path CMAKE_CACHEFILE_DIR)
link_to "$cfg_src" "$src"
link_to "$cfg_bin" "$b"

export LD_LIBRARY_PATH=$b/src:$b/emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
failed=()
step() { # NAME CMD...: runs it, records a failure by name
	local name=$1 rc
	shift
	echo "== $name"
	"$@"
	rc=$?
	echo "rc=$rc ($name)"
	[ $rc -eq 0 ] || failed+=("$name")
}
sanitize() { # TOOL PROG [ARGS]
	local tool=$1
	shift
	timeout 300 compute-sanitizer --tool "$tool" --report-api-errors no \
		--target-processes all --error-exitcode 1 "$@"
}
{
	date -u
	nvidia-smi -L
	nproc
	# Each placement: host memory (ibv_create_qp; AUTO's choice on gnic-emu)
	# and GPU memory (DevX umem). Entries that name their own placement or
	# the proxy (whose QPs stay on the host) keep theirs.
	for q in host gpu; do
		step "ctest -L gpu, GNIC_QUEUE=$q" env GNIC_QUEUE=$q \
			ctest --test-dir "$cfg_bin" -L gpu --output-on-failure --timeout 600
	done
	for q in host gpu; do
		export GNIC_QUEUE=$q
		step "memcheck test_gpu_dev ($q)" sanitize memcheck "$b/tests/gpu/test_gpu_dev"
		step "racecheck test_gpu_dev ($q)" sanitize racecheck "$b/tests/gpu/test_gpu_dev"
		step "synccheck test_gpu_dev ($q)" sanitize synccheck "$b/tests/gpu/test_gpu_dev"
		step "memcheck test_gpu_atomics ($q)" sanitize memcheck "$b/tests/gpu/test_gpu_atomics"
		step "racecheck test_gpu_atomics ($q)" sanitize racecheck "$b/tests/gpu/test_gpu_atomics"
		step "memcheck test_gpu_dma ($q)" sanitize memcheck "$b/tests/gpu/test_gpu_dma"
		step "racecheck test_gpu_dma ($q)" sanitize racecheck "$b/tests/gpu/test_gpu_dma"
		step "memcheck test_gnic_gpu ($q)" sanitize memcheck "$b/tests/gnic/test_gnic_gpu"
		unset GNIC_QUEUE
	done
	# (an assignment before a function call holds for the call and its children)
	GNIC_PROVIDER=emu step "memcheck test_gpu_eth" sanitize memcheck "$b/tests/gpu/test_gpu_eth"
	GNIC_PROVIDER=emu step "racecheck test_gpu_eth" sanitize racecheck "$b/tests/gpu/test_gpu_eth"
	step "racecheck put_bw_gpu" sanitize racecheck "$b/examples/put_bw_gpu" 8 64 20
	step "bench test_gpu_dev" env GNIC_EMU_SPIN_US=1000 timeout 150 "$b/tests/gpu/test_gpu_dev" --bench
	echo "== emulator ceilings (host mode) on this machine"
	"$b/tools/gnic-perf" put_bw --sizes 64,4096 --iters 1000000
	"$b/tools/gnic-perf" put_bw --sizes 1048576 --iters 5000
	"$b/tools/gnic-perf" put_lat --sizes 8,4096 --iters 100000
	if [ ${#failed[@]} -eq 0 ]; then
		echo "gpu-run: PASS"
	else
		echo "gpu-run: FAIL: ${failed[*]}"
	fi
} 2>&1 | tee "$out/gpu-run.log"
grep -q '^gpu-run: PASS' "$out/gpu-run.log"
