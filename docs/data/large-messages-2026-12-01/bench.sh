#!/bin/bash
# interleaved old/new: prog size iters reps
out=/tmp/bench.txt
port=28000
for rep in 1 2 3; do
 for cfg in "ib_write_bw 8388608 200" "ib_read_bw 8388608 200" "ib_send_bw 8388608 200" "ib_write_bw 65536 5000" "ib_read_bw 65536 5000" "ib_send_bw 65536 5000"; do
  set -- $cfg
  for which in new old; do
   b=/work/wt/large/build-rel; [ $which = old ] && b=/tmp/base/build-rel
   port=$((port+1))
   t0=$(date +%s.%N)
   r=$(/tmp/large_pair.sh $b $1 $port -s $2 -n $3 2>&1 | tail -1)
   t1=$(date +%s.%N)
   echo "$which $1 $2 $3 rep$rep wall $(echo "$t1 - $t0" | bc) load $(cut -d' ' -f1 /proc/loadavg) :: $r" | tee -a $out
  done
 done
done
