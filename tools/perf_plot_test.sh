#!/bin/sh
# perf-smoke: --plot and tools/perf_plot.sh draw real PNGs from real runs.
# Exit 77 (skip) only when gnuplot is not installed (CI installs it).
# Usage: perf_plot_test.sh PATH/TO/gnic-perf WORK_DIR
set -eu
perf=${1:?usage: perf_plot_test.sh GNIC_PERF WORK_DIR}
dir=${2:?usage: perf_plot_test.sh GNIC_PERF WORK_DIR}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v gnuplot >/dev/null 2>&1; then
	echo "SKIP: gnuplot is not installed"
	exit 77
fi
mkdir -p "$dir"
rm -f "$dir"/plot_*.png "$dir"/plot_*.csv

# a PNG starts with these 8 bytes
is_png() {
	if [ ! -s "$1" ] || [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" != "89504e470d0a1a0a" ]; then
		echo "FAIL: $1 is not a PNG"
		exit 1
	fi
}

"$perf" put_bw --mode cpu-proxy --ctas 1,2 --sizes 8,64,4096 --iters 200 --timeout 20 \
	--plot "$dir/plot_proxy.png" >/dev/null
is_png "$dir/plot_proxy.png"
# the CSV it drew from: a header and one row per (CTAs, size)
[ "$(wc -l <"$dir/plot_proxy.csv")" -eq 7 ] || {
	echo "FAIL: $dir/plot_proxy.csv should have 7 lines"
	exit 1
}
"$perf" put_bw --sizes 8,64,4096 --iters 200 --timeout 20 --csv >"$dir/plot_host.csv"
# a latency test plots t_typical and its 99% percentile
"$perf" put_lat --mode gpu --sizes 8,64 --iters 100 --timeout 20 --plot "$dir/plot_lat.png" \
	>/dev/null
is_png "$dir/plot_lat.png"
awk -F, 'NR > 1 && $14 > 0 && $17 >= $14 { n++ } END { exit n != 2 }' "$dir/plot_lat.csv" || {
	echo "FAIL: $dir/plot_lat.csv should have 2 rows with t_typical <= t_p99"
	exit 1
}
"$here/perf_plot.sh" -o "$dir/plot_both.png" -t "host vs cpu-proxy" \
	"$dir/plot_host.csv" "$dir/plot_proxy.csv"
is_png "$dir/plot_both.png"
# a file that is not gnic-perf CSV is refused with exit 2
if "$here/perf_plot.sh" -o "$dir/plot_bad.png" "$0" 2>/dev/null; then
	echo "FAIL: perf_plot.sh accepted $0"
	exit 1
fi
echo "plots drawn and checked"
