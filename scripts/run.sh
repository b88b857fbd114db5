#!/bin/sh
# The main job: build gnic (RelWithDebInfo) and run gnic-perf's default
# suite on gnic-emu, both sides in one process, --quick:
#   host mode: the CPU posts verbs work requests (the baseline);
#   libgnic modes: device threads post through libgnic, GPU-initiated
#   (gpu: the threads ring the doorbell) against cpu-proxy (they hand
#   descriptors to a CPU thread that posts). The device code runs on the GPU
#   when there is one, else on CPU threads (the same code); each table's
#   "Device code" line says which.
# Every run validates its data and every run happens even if one fails; the
# exit status says whether all passed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j2
perf="$root/build/tools/gnic-perf"
failed=""
for t in put_bw put_lat get_lat atomic_rate send_lat; do
	"$perf" "$t" --mode host --quick || failed="$failed host:$t"
done
for run in "put_bw --mode gpu" "put_lat --mode gpu" "post_rate --mode gpu" \
	"put_bw --mode cpu-proxy"; do
	# shellcheck disable=SC2086 # run holds the test and its options
	"$perf" $run --quick || failed="$failed $(echo "$run" | sed 's/ --mode /:/')"
done
if [ -n "$failed" ]; then
	echo "run.sh: failed:$failed" >&2
	exit 1
fi
