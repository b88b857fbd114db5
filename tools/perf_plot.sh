#!/bin/sh
# Several gnic-perf runs in one PNG, one line per file and series (a series
# is a row's mode, scope, CTAs x threads and QPs). The inputs are gnic-perf
# CSV files: the output of --csv, or the FILE.csv that --plot FILE.png
# writes (also those of earlier gnic-perf versions: columns are found by
# name). Latency runs (*_lat) draw t_typical with the 99% percentile as a
# second curve; rate runs (atomic_rate, post_rate) the message rate;
# others bandwidth and message rate.
#
#   tools/perf_plot.sh -o OUT.png [-t TITLE] [-x size|ctas|qps] [-r REF.csv] FILE.csv [FILE.csv ...]
#
# -x ctas / -x qps: against the CTA or QP count of a --ctas / --qp sweep
# instead, one line per mode, scope and the other count. -r: each row of
# REF.csv (gnic-perf CSV too) is a dashed horizontal line on the message
# rate panel: its message rate, or for a latency row one over its
# t_typical (one hand-off at a time).
#
#   gnic-perf put_bw --mode host --csv > host.csv
#   gnic-perf put_bw --mode gpu --csv > gpu.csv
#   tools/perf_plot.sh -o put_bw.png host.csv gpu.csv
#
# Exit status: 0 drawn, 1 gnuplot failed, 2 bad usage or no gnuplot.
set -eu

prefix='test,mode,scope,ctas,threads,qps,bytes,iterations,'

usage() {
	echo "usage: perf_plot.sh -o OUT.png [-t TITLE] [-x size|ctas|qps] [-r REF.csv] FILE.csv [FILE.csv ...]" >&2
	exit 2
}

out=""
title="gnic-perf"
x=size
ref=""
while getopts o:t:x:r: opt; do
	case $opt in
	o) out=$OPTARG ;;
	r) ref=$OPTARG ;;
	t) title=$OPTARG ;;
	x) x=$OPTARG ;;
	*) usage ;;
	esac
done
# the x column, and how rows group into lines (awk and gnuplot spellings)
case $x in
size) xcol=7 xlabel='message size (bytes)' ;;
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
for f in "$out" "$title" "$ref" "$@"; do
	case $f in *\'*)
		echo "perf_plot.sh: no single quotes in names, please: $f" >&2
		exit 2
		;;
	esac
done

# col FILE NAME...: the 1-based column of the first NAME in FILE's header
col() {
	f=$1
	shift
	head -n 1 "$f" | tr ',' '\n' | awk -v names="$*" '
		BEGIN { n = split(names, want, " ") }
		{ for (i = 1; i <= n; i++) if ($0 == want[i]) at[i] = NR }
		END { for (i = 1; i <= n; i++) if (at[i]) { print at[i]; exit } print 0 }'
}

kind=""
for f in $ref "$@"; do
	case "$(head -n 1 "$f" 2>/dev/null)" in
	"$prefix"*) ;;
	*)
		echo "perf_plot.sh: $f is not a gnic-perf CSV file (first line: the --csv header)" >&2
		exit 2
		;;
	esac
	if [ "$(wc -l <"$f")" -lt 2 ] && [ "$f" != "$ref" ]; then
		echo "perf_plot.sh: $f has no rows" >&2
		exit 2
	fi
	[ "$f" != "$ref" ] || continue
	for k in $(awk -F, 'NR > 1 { print ($1 ~ /_lat$/) ? "lat" : ($1 ~ /_rate$/) ? "rate" : "bw" }' "$f"); do
		[ -z "$kind" ] || [ "$kind" = "$k" ] || kind=bw
		[ -n "$kind" ] || kind=$k
	done
done

# One plot command for the columns named by $1 (alternatives separated by
# '|'), titled with suffix $2: every series of every file.
panel() {
	names=$(echo "$1" | tr '|' ' ')
	suffix=$2
	shift 2
	for f in "$@"; do
		c=$(col "$f" $names)
		ser=$(col "$f" series)
		[ "$c" -gt 0 ] || continue
		if [ "$x" = size ] && [ "$(awk -F, 'NR > 1 { print $1 }' "$f" | sort -u | wc -l)" -gt 1 ]; then
			ak="\$1 \" \" \$$ser" gk="strcol(1).' '.strcol($ser)" # several tests: name them
		elif [ "$x" = size ]; then
			ak="\$$ser" gk="strcol($ser)"
		else
			ak=$akey gk=$gkey
		fi
		awk -F, "NR > 1 { k = $ak; if (!seen[k]++) print k }" "$f" | while IFS= read -r s; do
			label=$s
			[ "$nfiles" -gt 1 ] && label="$(basename "$f" .csv): $s"
			printf "%s'%s' every ::1 using %s:(%s eq '%s' ? column(%s) : NaN) with linespoints title '%s%s'" \
				"$sep" "$f" "$xcol" "$gk" "$s" "$c" "$label" "$suffix"
			sep=", "
		done
		sep=", "
	done
}

# The reference lines (-r), after the rate panel's curves.
refs() {
	[ -n "$ref" ] || return 0
	awk -F, -v r="$(col "$ref" msg_rate_mpps)" -v t="$(col "$ref" t_typical_us)" \
		-v s="$(col "$ref" series)" '
	NR > 1 && $r != "" { printf ", %s with lines dashtype 2 linewidth 2 title \"ref: %s %s B, %s\"", $r, $1, $7, $s }
	NR > 1 && $r == "" && $t > 0 {
		printf ", %g with lines dashtype 3 linewidth 2 title \"ref: 1 / %s (%s us), %s\"", 1 / $t, $1, $t, $s }' "$ref"
}

nfiles=$#
{
	[ "$kind" = bw ] && rows=2 || rows=1
	echo "set terminal png size 1000,$((rows * 450)) noenhanced"
	echo "set output '$out'"
	echo "set datafile separator ','"
	echo "set multiplot layout $rows,1 title '$title'"
	echo "set logscale x 2"
	echo "set logscale y"
	echo "set grid"
	echo "set key outside right"
	echo "set xlabel '$xlabel'"
	if [ "$kind" = lat ]; then
		echo "set ylabel 'latency (us)'"
		sep="plot "
		{ panel 't_typical_us|t_median_us' ' t_typical' "$@"; sep=", "; panel t_p99_us ' 99%' "$@"; }
		echo
	else
		if [ "$kind" = bw ]; then
			echo "set ylabel 'bandwidth (MiB/s)'"
			sep="plot "
			panel 'bw_avg_mib_s|bw_mib_s' '' "$@"
			echo
		fi
		echo "set ylabel 'message rate (M/s)'"
		sep="plot "
		panel msg_rate_mpps '' "$@"
		refs
		echo
	fi
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
