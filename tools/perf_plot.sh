#!/bin/sh
# Several gnic-perf runs in one PNG: bandwidth and message rate against
# message size, one line per file and series (a series is a row's mode,
# scope, CTAs x threads and QPs). The inputs are gnic-perf CSV files: the
# output of --csv, or the FILE.csv that --plot FILE.png writes.
#
#   tools/perf_plot.sh -o OUT.png [-t TITLE] [-x size|ctas|qps] FILE.csv [FILE.csv ...]
#
# -x ctas / -x qps: against the CTA or QP count of a --ctas / --qps sweep
# instead, one line per mode, scope and the other count.
#
#   gnic-perf put_bw --mode host --csv > host.csv
#   gnic-perf put_bw --mode gpu --csv > gpu.csv
#   gnic-perf put_bw --mode cpu-proxy --csv > proxy.csv
#   tools/perf_plot.sh -o put_bw.png host.csv gpu.csv proxy.csv
#
# Exit status: 0 drawn, 1 gnuplot failed, 2 bad usage or no gnuplot.
set -eu

header='test,mode,scope,ctas,threads,qps,bytes,iterations,bw_mib_s,msg_rate_mpps,t_min_us,t_median_us,t_p99_us,t_max_us,series,device,device_code,memory,provider,connection'

usage() {
	echo "usage: perf_plot.sh -o OUT.png [-t TITLE] [-x size|ctas|qps] FILE.csv [FILE.csv ...]" >&2
	exit 2
}

out=""
title="gnic-perf"
x=size
while getopts o:t:x: opt; do
	case $opt in
	o) out=$OPTARG ;;
	t) title=$OPTARG ;;
	x) x=$OPTARG ;;
	*) usage ;;
	esac
done
# the x column, and how rows group into lines (awk and gnuplot spellings)
case $x in
size) xcol=7 xlabel='message size (bytes)' akey='$15' gkey='strcol(15)' ;;
ctas) xcol=4 xlabel='CTAs' akey='$2 " " $3 " q" $6' gkey="strcol(2).' '.strcol(3).' q'.strcol(6)" ;;
qps) xcol=6 xlabel='QPs' akey='$2 " " $3 " " $4 "x" $5' gkey="strcol(2).' '.strcol(3).' '.strcol(4).'x'.strcol(5)" ;;
*) usage ;;
esac
shift $((OPTIND - 1))
if [ -z "$out" ] || [ $# -lt 1 ]; then
	usage
fi
if ! command -v gnuplot >/dev/null 2>&1; then
	echo "perf_plot.sh: gnuplot is not installed (Debian/Ubuntu: apt-get install -y gnuplot-nox)" >&2
	exit 2
fi
for f in "$out" "$title" "$@"; do
	case $f in *\'*)
		echo "perf_plot.sh: no single quotes in names, please: $f" >&2
		exit 2
		;;
	esac
done
only_post=1
for f in "$@"; do
	if [ ! -r "$f" ] || [ "$(head -n 1 "$f")" != "$header" ]; then
		echo "perf_plot.sh: $f is not a gnic-perf CSV file (first line: the --csv header)" >&2
		exit 2
	fi
	if [ "$(wc -l <"$f")" -lt 2 ]; then
		echo "perf_plot.sh: $f has no rows" >&2
		exit 2
	fi
	if [ "$(awk -F, 'NR > 1 && $1 != "post_rate"' "$f" | wc -l)" -ne 0 ]; then
		only_post=0
	fi
done

# One plot command for column $1: every series of every file.
panel() {
	col=$1
	shift
	sep="plot "
	for f in "$@"; do
		awk -F, "NR > 1 { k = $akey; if (!seen[k]++) print k }" "$f" | while IFS= read -r s; do
			label=$s
			[ "$nfiles" -gt 1 ] && label="$(basename "$f" .csv): $s"
			printf "%s'%s' every ::1 using %s:(%s eq '%s' ? column(%s) : NaN) with linespoints title '%s'" \
				"$sep" "$f" "$xcol" "$gkey" "$s" "$col" "$label"
			sep=", "
		done
		sep=", "
	done
	echo
}

nfiles=$#
{
	if [ $only_post -eq 1 ]; then
		echo "set terminal png size 1000,500 noenhanced"
	else
		echo "set terminal png size 1000,900 noenhanced"
	fi
	echo "set output '$out'"
	echo "set datafile separator ','"
	if [ $only_post -eq 1 ]; then
		echo "set multiplot layout 1,1 title '$title'"
	else
		echo "set multiplot layout 2,1 title '$title'"
	fi
	echo "set logscale x 2"
	echo "set logscale y"
	echo "set grid"
	echo "set key outside right"
	echo "set xlabel '$xlabel'"
	if [ $only_post -eq 0 ]; then
		echo "set ylabel 'bandwidth (MiB/s)'"
		panel 9 "$@"
	fi
	echo "set ylabel 'message rate (M/s)'"
	panel 10 "$@"
	echo "unset multiplot"
} | gnuplot || {
	echo "perf_plot.sh: gnuplot failed" >&2
	exit 1
}
[ -s "$out" ] || {
	echo "perf_plot.sh: gnuplot wrote no $out" >&2
	exit 1
}
echo "perf_plot.sh: wrote $out"
