#!/usr/bin/env bash
# GPU-initiated vs CPU-proxy sweeps for docs/perf.md (one H200).
set -u
b=build-perf2
p=$b/tools/gnic-perf
export LD_LIBRARY_PATH=$PWD/$b/src:$PWD/$b/emu
export GNIC_EMU_SPIN_US=10000000
out=${OUT:-/tmp/cmp}
mkdir -p $out
t0=$(date +%s)
left() { [ $(( $(date +%s) - t0 )) -lt ${1:-165} ]; }
r() { # r NAME ARGS...
	n=$1; shift
	left || { echo "skip $n (time)"; return; }
	s=$(date +%s.%N)
	timeout 60 $p "$@" --csv > $out/$n.csv 2> $out/$n.err
	echo "$n rc=$?"
}
{ date -u; nvidia-smi -L
for m in gpu cpu-proxy; do
	r cta_$m put_bw --mode $m --host-mem --sizes 64 --ctas 1,2,4,8,16,32,64,132 --scope cta,warp,thread --iters 131072
done
for m in gpu cpu-proxy; do
	r post_$m post_rate --mode $m --ctas 1,2,4,8,16,32,64,132 --scope cta --iters 1048576
done
for m in gpu cpu-proxy cpu-assisted; do
	r size_$m put_bw --mode $m --host-mem --sizes 1-64K --ctas 32 --scope cta --iters 32768
done
r size_host put_bw --mode host --sizes 1-64K --iters 32768
for m in gpu cpu-proxy; do
	r qps_$m put_bw --mode $m --host-mem --sizes 64 --ctas 128 --qps 1,2,4,8,16,32,64 --scope thread,cta --iters 131072
done
for m in gpu cpu-proxy; do
	r lat_$m put_lat --mode $m --host-mem --sizes 8,64,4096 --iters 2000
done
r lat_host put_lat --mode host --sizes 8,64,4096 --iters 2000
date -u; } > $out/cmp.log 2>&1
cat $out/cmp.log
cd $out && tar czf all.tgz *.csv *.err cmp.log && rm -f *.csv *.err
