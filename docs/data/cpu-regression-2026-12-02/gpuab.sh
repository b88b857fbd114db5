#!/bin/bash
# End to end on the GPU: a6102d4's emulator (start) against the merged one (new), same gnic-perf
set -u
C=$PWD/build-abx/carry; P=$PWD/build-abx/gpu/gnic-perf; o=$OUT/gpuab.csv
echo "rep,variant,test,figure" > $o
for rep in $(seq ${REPS:-5}); do for v in start new; do
 while read -r name args; do
  line=$(LD_LIBRARY_PATH=$C/$v:$PWD/build-abx/gpu GNIC_EMU_LIB=$C/$v/libgnic_emu.so.0 GNIC_EMU_SPIN_US=1000 timeout 60 $P $args --csv 2>>$OUT/gpuab-err.log | grep -E "^(put_bw|put_lat)," | head -1)
  case $name in lat*) f=$(echo "$line" | cut -d, -f14);; *) f=$(echo "$line" | cut -d, -f11);; esac
  echo "$rep,$v,$name,$f" >> $o
 done <<'T'
gpu8x1 put_bw --mode gpu --ctas 8 --host-mem -s 64 -n 2000000
gpu8x8 put_bw --mode gpu --ctas 8 --qps 8 --host-mem -s 64 -n 4000000
proxy8x8 put_bw --mode cpu-proxy --ctas 8 --qps 8 --host-mem -s 64 -n 4000000
gpumem8x8 put_bw --mode gpu --ctas 8 --qps 8 -s 64 -n 1000000
lat8 put_lat --mode gpu --host-mem -s 8 -n 20000
T
done; done
python3 - $o <<'P'
import csv,sys,statistics as st
d={}
for r in csv.DictReader(open(sys.argv[1])):
    try: d.setdefault((r['test'],r['variant']),[]).append(float(r['figure']))
    except ValueError: pass
for t in ['gpu8x1','gpu8x8','proxy8x8','gpumem8x8','lat8']:
    if (t,'start') not in d: continue
    b=st.median(d[(t,'start')])
    print(t,' '.join(f"{v}:{st.median(d[(t,v)]):.3f}[{min(d[(t,v)]):.2f}-{max(d[(t,v)]):.2f}]({st.median(d[(t,v)])/b:.2f}x)" for v in ['start','new'] if (t,v) in d))
P
