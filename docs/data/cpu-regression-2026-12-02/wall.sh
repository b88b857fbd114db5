#!/bin/bash
# Wall-clock message rates (Mpps) and put_lat's typical latency (us) of gnic-emu builds under
# one libgnic and gnic-perf: REPS interleaved rounds, each build in turn, medians and ranges.
# usage: wall.sh PERF_BUILD EMU_BUILD [EMU_BUILD...]   (first EMU is the base of the ratio)
set -u
PERF=$(realpath "$1"); shift
REPS=${REPS:-3} DUR=${DUR:-2}
export GNIC_EMU_THREADS=1 GNIC_EMU_SPIN_US=0 CUDA_VISIBLE_DEVICES=
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
echo "# $(date -u '+%F %T') REPS=$REPS DUR=${DUR}s perf=$PERF $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$REPS"); do
	for b in "$@"; do
		lib=$(realpath "$b")/emu
		while read -r name args; do
			line=$(LD_LIBRARY_PATH=$lib GNIC_EMU_LIB=$lib/libgnic_emu.so.0 \
				"$PERF/tools/gnic-perf" $args -D "$DUR" --csv 2>/dev/null |
				grep -E "^(put_bw|get_bw|atomic_rate|put_lat)," | head -1)
			case $name in *lat*) f=$(echo "$line" | cut -d, -f14) ;; *) f=$(echo "$line" | cut -d, -f11) ;; esac
			echo "$name $(basename "$b") ${f:-nan}" >>"$raw"
		done <<'T'
put_bw_host put_bw --mode host -s 64
put_bw_gpu put_bw --mode gpu -s 64
put_bw_proxy put_bw --mode cpu-proxy -s 64
get_bw_host get_bw --mode host -s 64
atomic_host atomic_rate --mode host -s 8
put_lat_host put_lat --mode host -s 64
T
	done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$raw" "$(basename "$1")" <<'P'
import sys, statistics as st
d = {}
for l in open(sys.argv[1]):
    t, b, f = l.split()
    d.setdefault(t, {}).setdefault(b, []).append(float(f))
base = sys.argv[2]
for t, bs in d.items():
    m0 = st.median(bs[base])
    cells = []
    for b, v in bs.items():
        m = st.median(v)
        cells.append(f"{b} {m:.4g} [{min(v):.4g}-{max(v):.4g}] ({m / m0:.2f}x)")
    print(f"{t:13s} " + "  ".join(cells), "(us: lower is better)" if "lat" in t else "(Mpps)")
P
