#!/bin/sh
# The main job: build gnic (RelWithDebInfo, compiler output only on a
# failure, in the log named then) and run gnic-perf's default suite on
# gnic-emu, both sides in one process, --quick:
#   host mode: the CPU posts verbs work requests (the baseline);
#   libgnic modes: device threads post through libgnic, GPU-initiated
#   (gpu: the threads ring the doorbell) against cpu-proxy (they hand
#   descriptors to a CPU thread that posts). The device code runs on the GPU
#   when there is one, else on CPU threads (the same code).
# Every run validates its data and every run happens even if one fails; a
# summary table (test, mode, size, figure, PASS/FAIL) and the last line
# (run.sh: PASS, or run.sh: FAIL: which) say how it went; so does the exit
# status. Each run's own output is kept in build/run/.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/run"
log="$root/build/run-build.log"
"$root/scripts/deps.sh" || {
	echo "run.sh: FAIL: scripts/deps.sh could not install what the build needs"
	exit 1
}
mkdir -p "$out"
echo "run.sh: building (log: $log)"
if ! { cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	cmake --build "$root/build" -j2; } >"$log" 2>&1; then
	tail -n 40 "$log"
	echo "run.sh: FAIL: the build (all of its output: $log)"
	exit 1
fi
perf="$root/build/tools/gnic-perf"
# GPU doorbells cannot wake a sleeping gnic-emu engine: keep it polling there
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	export GNIC_EMU_SPIN_US="${GNIC_EMU_SPIN_US:-1000}"
fi

failed=""
n=0
rm -f "$out"/*.csv "$out"/*.log
for run in "put_bw --mode host" "get_bw --mode host" "put_lat --mode host" "get_lat --mode host" \
	"atomic_rate --mode host" "atomic_lat --mode host" "send_lat --mode host" \
	"put_bw --mode gpu" "put_lat --mode gpu" "post_rate --mode gpu" "put_bw --mode gpu-bf" \
	"put_bw --mode cpu-assisted" "put_bw --mode cpu-proxy" "put_lat --mode cpu-proxy" \
	"post_rate --mode cpu-proxy"; do
	n=$((n + 1))
	name=$(printf '%02d-%s' "$n" "$(echo "$run" | sed 's/ --mode /-/')")
	echo "run.sh: gnic-perf $run --quick"
	# shellcheck disable=SC2086 # run holds the test and its options
	if ! "$perf" $run --quick --timeout 30 --csv >"$out/$name.csv" 2>"$out/$name.log"; then
		failed="$failed $(echo "$run" | sed 's/ --mode /:/')"
		echo "fail" >"$out/$name.fail"
		tail -n 3 "$out/$name.log"
	fi
done

# The summary: one line per row of every run, its headline figure.
echo
printf '%-12s %-12s %-8s %-8s %10s %-20s %s\n' test mode scope bytes figure unit result
for f in "$out"/*.csv; do
	result=PASS
	[ -e "${f%.csv}.fail" ] && result=FAIL
	rows=$(awk -F, -v r="$result" 'NR > 1 {
		if ($1 ~ /_lat$/) { v = $14; u = "us (t_typical)" }
		else if ($1 ~ /_rate$/) { v = $11; u = "Mpps (MsgRate)" }
		else { v = $10; u = "MiB/s (BW average)" }
		printf "%-12s %-12s %-8s %-8s %10.3f %-20s %s\n", $1, $2, $3, $7, v, u, r }' "$f")
	if [ -n "$rows" ]; then
		echo "$rows"
	else
		printf '%-12s %-12s %-8s %-8s %10s %-20s %s\n' "$(basename "$f" .csv | cut -c4-)" - - - - - "$result"
	fi
done
grep -h "NIC: gnic-emu" "$out"/*.log | head -n 1 | sed 's/^gnic-perf: //'
if [ -n "$failed" ]; then
	echo "run.sh: FAIL:$failed (their output: $out)"
	exit 1
fi
echo "run.sh: PASS ($n runs, every one validated)"
