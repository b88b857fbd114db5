#!/bin/sh
# The main job: build gnic (RelWithDebInfo) and run gnic-perf's default
# suite on gnic-emu: host mode, both sides in one process, --quick.
# Every test runs even if one fails; the exit status says whether all passed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j2
failed=""
for t in put_bw put_lat get_lat atomic_rate send_lat; do
	"$root/build/tools/gnic-perf" "$t" --mode host --quick || failed="$failed $t"
done
if [ -n "$failed" ]; then
	echo "run.sh: failed:$failed" >&2
	exit 1
fi
