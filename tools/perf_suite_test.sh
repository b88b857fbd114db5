#!/bin/sh
# perf-smoke: gnic-perf --suite headline (on CPU threads without a GPU: the
# short sweep) ends with PASS, and its CSV holds every group's rows (the
# reference rows, GPU-initiated and proxied puts at every scope, post_rate),
# each the median of 3 runs inside its min-max spread; with gnuplot, one PNG
# per group.
# Usage: perf_suite_test.sh PATH/TO/gnic-perf WORK_DIR
set -u
perf=${1:?usage: perf_suite_test.sh GNIC_PERF WORK_DIR}
dir=${2:?usage: perf_suite_test.sh GNIC_PERF WORK_DIR}
mkdir -p "$dir"
rm -f "$dir"/suite*

fail() {
	echo "FAIL: $*"
	exit 1
}

plot=""
! command -v gnuplot >/dev/null 2>&1 || plot="--plot $dir/suite.png"
# shellcheck disable=SC2086 # $plot is two words or none
"$perf" --suite headline --csv --timeout 30 $plot >"$dir/suite_out.csv" 2>"$dir/suite.err"
rc=$?
grep -v 'using gnic-emu device' "$dir/suite.err"
[ "$rc" -eq 0 ] || fail "exit status $rc"
tail -n 1 "$dir/suite.err" | grep -q '^gnic-perf: PASS (suite headline: ' || fail "no final PASS line"
csv=$dir/suite_out.csv
head -n 1 "$csv" | grep -q '^test,mode,scope,.*,connection,group$' || fail "no group column"
[ "$(grep -c '^test,' "$csv")" -eq 1 ] || fail "more than one CSV header"

# has GROUP TEST MODE SCOPE: at least one such row
has() {
	awk -F, -v g="$1" -v t="$2" -v m="$3" -v s="$4" \
		'$28 == g && $1 == t && $2 == m && $3 == s { n++ } END { exit !n }' "$csv" ||
		fail "no $2 --mode $3 --scope $4 row in group $1"
}
has ref store_rate gpu thread
has ref flag_lat gpu thread
has size memcpy host -
has size put_bw host -
for m in gpu cpu-proxy; do
	for s in thread warp cta; do
		for g in size ctas qps; do has "$g" put_bw "$m" "$s"; done
		for g in post_ctas post_qps; do has "$g" post_rate "$m" "$s"; done
	done
done
# every row: 3 repeats, spread_min <= headline figure <= spread_max (t_typical
# for latency tests, MsgRate for rate tests, else BW average), and above 0
awk -F, 'NR > 1 {
	h = $1 ~ /_lat$/ ? $14 : $1 ~ /_rate$/ ? $11 : $10
	if ($19 != 3 || !(h > 0) || $20 > h || h > $21) { print "bad row: " $0; bad = 1 }
} END { exit bad }' "$csv" || fail "a row is not a median of 3 inside its spread"
if [ -n "$plot" ]; then
	for g in size ctas qps post_ctas post_qps; do
		[ "$(od -An -tx1 -N8 "$dir/suite-$g.png" | tr -d ' \n')" = 89504e470d0a1a0a ] ||
			fail "$dir/suite-$g.png is not a PNG"
	done
	[ "$(wc -l <"$dir/suite-ref.csv")" -eq 3 ] || fail "suite-ref.csv: not a header and 2 rows"
fi
echo "PASS: suite headline, $(($(wc -l <"$csv") - 1)) rows"
