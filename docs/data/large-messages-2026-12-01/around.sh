#!/bin/bash
# one -a round with perftest's default iterations: which prog
port=$((29000 + RANDOM % 500))
b=/work/wt/large/build-rel; [ $1 = old ] && b=/tmp/base/build-rel
t0=$(date +%s.%N)
r=$(RUN=1 /tmp/large_pair.sh $b $2 $port -a 2>&1)
t1=$(date +%s.%N)
echo "$1 $2 -a default: wall $(echo "$t1 - $t0" | bc) s load $(cut -d' ' -f1 /proc/loadavg) :: $(echo "$r" | head -1) :: $(echo "$r" | tail -1)" | tee -a /tmp/around.txt
cp /tmp/lp_cli.$port /tmp/around_$1_$2.cli
