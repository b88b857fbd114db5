#!/bin/bash
# Instructions per message of gnic-emu builds under one libgnic and gnic-perf, by callgrind.
# usage: ipm.sh PERF_BUILD EMU_BUILD [EMU_BUILD...]   (build directories; first EMU is the base)
#
# Each benchmark runs at N1 and N2 iterations; (Ir(N2) - Ir(N1)) / (N2 - N1) removes set-up.
# Three figures per message (all threads of the process, callgrind's inclusive costs):
#   engine  the engine's threads (engine_main): fetching WQEs, both sides' protocol, CQEs
#   post    the application's verbs posts (gemu_post_send, gemu_post_recv; host mode)
#   total   the whole process; includes the benchmark's busy polling, whose count depends on
#           how valgrind schedules threads: noisy (several x between identical runs)
# Both GNIC_EMU_LIB and LD_LIBRARY_PATH name the emulator build: libibverbs.so.1 comes from
# LD_LIBRARY_PATH (gnic-perf's RUNPATH is its own build), libgnic's provider from GNIC_EMU_LIB.
set -u
PERF=$(realpath "$1"); shift
N1=${N1:-5000} N2=${N2:-20000}
export GNIC_EMU_THREADS=1 GNIC_EMU_SPIN_US=0 CUDA_VISIBLE_DEVICES=
TESTS=${TESTS:-"put_bw_host put_bw_gpu put_bw_proxy get_bw_host get_bw_gpu atomic_host put_lat_host"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
args() {
	case $1 in
	put_bw_host) echo "put_bw --mode host" ;;
	put_bw_gpu) echo "put_bw --mode gpu" ;;
	put_bw_proxy) echo "put_bw --mode cpu-proxy" ;;
	get_bw_host) echo "get_bw --mode host" ;;
	get_bw_gpu) echo "get_bw --mode gpu" ;;
	atomic_host) echo "atomic_rate --mode host" ;;
	put_lat_host) echo "put_lat --mode host" ;;
	esac
}
size() { case $1 in atomic*) echo 8 ;; *) echo "${SIZE:-64}" ;; esac; }
costs() { # build test iters -> "engine post total" Ir of one run
	local b=$1 t=$2 n=$3 lib f=$TMP/cg
	lib=$(realpath "$b")/emu
	LD_LIBRARY_PATH=$lib GNIC_EMU_LIB=$lib/libgnic_emu.so.0 \
		valgrind --tool=callgrind --callgrind-out-file=$f \
		"$PERF/tools/gnic-perf" $(args "$t") --sizes $(size "$t") -n "$n" --warmup 100 \
		--timeout 600 >$TMP/out 2>&1
	grep -q "gnic-perf: PASS" $TMP/out || { echo "FAIL FAIL FAIL"; return; }
	callgrind_annotate --inclusive=yes --auto=no --threshold=100 $f 2>/dev/null | tr -d , | awk '
		/PROGRAM TOTALS/ {tot = $1}
		/:engine_main / {eng += $1}
		/:gemu_post_send |:gemu_post_recv / {post += $1}
		END {printf "%d %d %d\n", eng, post, tot}'
}
echo "# $(date -u +%F) N1=$N1 N2=$N2 size=${SIZE:-64} perf=$PERF"
printf "%-13s %-10s %8s %8s %8s\n" test build engine post total
for t in $TESTS; do
	for b in "$@"; do
		read -r e1 p1 t1 <<<"$(costs "$b" "$t" "$N1")"
		read -r e2 p2 t2 <<<"$(costs "$b" "$t" "$N2")"
		awk -v t="$t" -v b="$(basename "$b")" -v n="$((N2 - N1))" \
			-v e="$e1 $e2" -v p="$p1 $p2" -v x="$t1 $t2" 'BEGIN {
			split(e, E); split(p, P); split(x, X)
			if (E[1] == "FAIL" || E[2] == "FAIL") { printf "%-13s %-10s FAIL\n", t, b; exit }
			printf "%-13s %-10s %8.0f %8.0f %8.0f\n", t, b, (E[2]-E[1])/n, (P[2]-P[1])/n, (X[2]-X[1])/n }'
	done
done
