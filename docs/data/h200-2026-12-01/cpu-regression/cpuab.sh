#!/bin/bash
# CPU-thread A/B of gnic-emu builds (same libgnic + gnic-perf) on 2 quiet cores
C=$PWD/gpucarry/cpu; export CUDA_VISIBLE_DEVICES= GNIC_EMU_THREADS=1 GNIC_EMU_SPIN_US=0
lscpu -e > $OUT/lscpu.txt; CPUS=$(lscpu -p=CPU,CORE | grep -v "^#" | awk -F, '$1>=2 && !seen[$2]++ {print $1}' | head -2 | paste -sd,); echo "cpus $CPUS" > $OUT/cpus.txt; o=$OUT/cpuab.csv; echo "rep,variant,test,figure" > $o
for rep in 1 2 3 4 5; do
 for v in cf5 pre gid gidfix d6e new; do
  while read -r name args; do
   line=$(LD_LIBRARY_PATH=$C/$v:$C GNIC_EMU_LIB=$C/$v/libgnic_emu.so.0 taskset -c $CPUS timeout 60 $C/gnic-perf $args --csv 2>>$OUT/err.log | grep -E "^(put_bw|get_bw|put_lat)," | head -1)
   case $name in *lat*) f=$(echo "$line" | cut -d, -f14);; *) f=$(echo "$line" | cut -d, -f11);; esac
   echo "$rep,$v,$name,$f" >> $o
  done <<'T'
proxy64 put_bw --mode cpu-proxy -s 64 -n 4000000
host64 put_bw --mode host -s 64 -n 4000000
gpu4 put_bw --mode gpu --ctas 4 -s 64 -n 4000000
T
 done
done
python3 - $o <<'P'
import csv,sys,statistics as st
rows=list(csv.DictReader(open(sys.argv[1])))
d={}
for r in rows:
    try: d.setdefault((r['test'],r['variant']),[]).append(float(r['figure']))
    except: pass
for t in ['proxy64','host64','gpu4','getbw','lat8']:
    if (t,'cf5') not in d: continue
    base=st.median(d.get((t,'cf5'),[0]) or [0])
    print(t, ' '.join(f"{v}:{st.median(d[(t,v)]):.3f}[{min(d[(t,v)]):.2f}-{max(d[(t,v)]):.2f}]({st.median(d[(t,v)])/base if base else 0:.2f}x)" for v in ['cf5','pre','gid','gidfix','d6e','new'] if (t,v) in d))
P
