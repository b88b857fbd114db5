#!/bin/bash
# CPU-thread A/B of gnic-emu builds on two quiet cores of the H200 host (GPU hidden): one
# libgnic and one gnic-perf (the newest), only the emulator changes (GNIC_EMU_LIB and
# LD_LIBRARY_PATH both name it). Rounds interleave the variants; figures are M msg/s
# (put_lat: typical µs). Output: $OUT/cpuab.csv and a median [min-max] (ratio to the first
# variant) table on stdout.
#   cpuab.sh CARRY_DIR VARIANT...   (CARRY_DIR/VARIANT/ holds that build's emu libraries,
#                                    CARRY_DIR/gnic-perf and CARRY_DIR/libgnic.so*)
set -u
C=$(realpath "$1"); shift
VARS=("$@")
export CUDA_VISIBLE_DEVICES= GNIC_EMU_THREADS=1 GNIC_EMU_SPIN_US=0
OUT=${OUT:-/tmp/cpuab}; mkdir -p "$OUT"
CPUS=$(lscpu -p=CPU,CORE | grep -v "^#" | awk -F, '$1>=2 && !seen[$2]++ {print $1}' | head -2 | paste -sd,)
echo "cpus $CPUS" >"$OUT/cpus.txt"
o=$OUT/cpuab.csv; echo "rep,variant,test,figure" >"$o"
for rep in $(seq "${REPS:-7}"); do
	for v in "${VARS[@]}"; do
		while read -r name args; do
			line=$(LD_LIBRARY_PATH=$C/$v:$C GNIC_EMU_LIB=$C/$v/libgnic_emu.so.0 taskset -c "$CPUS" \
				timeout 60 "$C/gnic-perf" $args --csv 2>>"$OUT/err.log" | grep -E "^(put_bw|get_bw|put_lat|atomic_rate)," | head -1)
			case $name in lat*) f=$(echo "$line" | cut -d, -f14) ;; *) f=$(echo "$line" | cut -d, -f11) ;; esac
			echo "$rep,$v,$name,$f" >>"$o"
		done <<'T'
proxy64 put_bw --mode cpu-proxy -s 64 -n 4000000
host64 put_bw --mode host -s 64 -n 2000000
gpu4 put_bw --mode gpu --ctas 4 -s 64 -n 4000000
get64 get_bw --mode host -s 64 -n 1000000
atomic atomic_rate --mode host -n 1000000
lat8 put_lat --mode host -s 8 -n 100000
T
	done
done
python3 - "$o" "${VARS[@]}" <<'P'
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1]))); vs = sys.argv[2:]
d = {}
for r in rows:
    try: d.setdefault((r['test'], r['variant']), []).append(float(r['figure']))
    except ValueError: pass
for t in ['proxy64', 'host64', 'gpu4', 'get64', 'atomic', 'lat8']:
    if (t, vs[0]) not in d: continue
    base = st.median(d[(t, vs[0])])
    print(t, ' '.join(f"{v}:{st.median(d[(t,v)]):.3f}[{min(d[(t,v)]):.2f}-{max(d[(t,v)]):.2f}]({st.median(d[(t,v)])/base:.2f}x)"
                      for v in vs if (t, v) in d))
P
