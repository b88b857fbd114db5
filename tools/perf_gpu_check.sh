#!/bin/sh
# gnic-perf's libgnic modes on a machine with an NVIDIA GPU (CI has none):
# every test in every libgnic mode with GPU-memory and pinned host-memory
# buffers, post_rate per scope, a two-process run, and the scaling sweeps
# docs/perf.md records. Validation is on throughout: a failing run is a
# failure, not a figure. From the repository root, with a build tree made
# with nvcc (cmake's default when nvcc is found):
#
#   sh tools/perf_gpu_check.sh BUILD_DIR [LOG_DIR]    (log: LOG_DIR/perf-gpu.log)
#
# PERF_GPU_QUICK=1 leaves out the scaling sweeps (a few minutes less).
#
# Exit status: the number of failed runs (0 = all passed).
set -u
b=${1:-build}
out=${2:-${OUT:-/tmp/gnic-perf-gpu}}
perf=$b/tools/gnic-perf
mkdir -p "$out"
# the build tree may come from another path (its RUNPATH then points nowhere)
export LD_LIBRARY_PATH="$PWD/$b/src:$PWD/$b/emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# GPU doorbells cannot wake a sleeping gnic-emu engine: keep it polling
export GNIC_EMU_SPIN_US="${GNIC_EMU_SPIN_US:-1000}"
fails=0
port=$((22000 + $$ % 20000))

run() {
	echo "== gnic-perf $*"
	timeout 300 "$perf" "$@"
	rc=$?
	echo "rc=$rc"
	[ $rc -eq 0 ] || fails=$((fails + 1))
}

two_process() {
	port=$((port + 1))
	echo "== two processes: gnic-perf $* (server on port $port)"
	timeout 120 "$perf" "$1" --server --port $port --timeout 60 &
	srv=$!
	timeout 120 "$perf" "$@" --connect 127.0.0.1:$port --timeout 60
	crc=$?
	wait $srv
	src=$?
	echo "client rc=$crc server rc=$src"
	[ $crc -eq 0 ] && [ $src -eq 0 ] || fails=$((fails + 1))
}

{
	date -u
	nvidia-smi -L
	nproc
	for m in gpu gpu-bf cpu-assisted cpu-proxy; do
		for t in put_bw get_bw put_lat get_lat atomic_rate atomic_lat send_lat signal_lat \
			store_rate flag_lat; do
			run $t --mode $m --quick --iters 200 --timeout 60 --csv
			run $t --mode $m --quick --iters 200 --timeout 60 --csv --host-mem
		done
		run post_rate --mode $m --quick --timeout 60
		run put_bw --mode $m --scope warp,cta --ctas 1,4 --sizes 64,4096 --iters 20000 \
			--timeout 60 --host-mem
	done
	# two processes on one GPU: pinned host memory (gnic-emu's CUDA copies
	# for a GPU-memory target wait behind the peer process's kernel)
	two_process put_bw --mode gpu --quick --iters 500 --host-mem
	two_process put_lat --mode cpu-proxy --quick --iters 200 --host-mem
	two_process put_bw --mode gpu -b -s 4096 --iters 2000 --host-mem
	run put_bw --mode gpu -b -s 4096 -n 20000 --timeout 60
	run put_bw --mode gpu -D 2 -s 64 --host-mem --timeout 60
	run put_lat --mode gpu -a -n 50 --host-mem --timeout 60
	run put_bw --mode gpu -s 256M -n 8 --timeout 120
	# one QP per CTA on a full H200 (a libgnic QP group of 132), both posters
	run put_bw --mode gpu --scope thread,warp,cta --ctas 132 --qps 132 --sizes 64 \
		--iters 20000 --host-mem --timeout 60
	run post_rate --mode cpu-proxy --ctas 132 --qps 132 --timeout 60 --host-mem
	# the headline suite's short form (its full form: docs/perf.md)
	run --suite headline --quick --timeout 60
	if [ "${PERF_GPU_QUICK:-0}" = 1 ]; then
		echo "failed runs: $fails"
		exit 0
	fi
	# the figures: scaling with CTAs at each scope, GPU-initiated vs proxy
	for m in gpu cpu-proxy; do
		run put_bw --mode $m --scope thread,warp,cta --ctas 1,2,4,8,16,32,64,132 \
			--sizes 64 --iters 200000 --host-mem --timeout 120 --csv
		run post_rate --mode $m --ctas 1,8,32,132 --iters 1000000 --timeout 120 --csv
	done
	run put_lat --mode gpu --sizes 8,64,4096 --iters 5000 --host-mem --csv
	run put_lat --mode cpu-proxy --sizes 8,64,4096 --iters 5000 --host-mem --csv
	if command -v gnuplot >/dev/null 2>&1; then
		run put_bw --mode gpu --ctas 8 --sizes 64-1M --iters 20000 --plot "$out/put_bw_gpu.png"
	else
		echo "== no gnuplot here: --plot not run"
	fi
	echo "failed runs: $fails"
} 2>&1 | tee "$out/perf-gpu.log"
exit "$(tail -n 1 "$out/perf-gpu.log" | sed -n 's/^failed runs: //p')"
