#!/bin/sh
# The main job: build gnic (RelWithDebInfo) and run gnic-perf's default
# suite on gnic-emu, host mode, both sides in one process.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j2
for t in put_bw put_lat get_lat atomic_rate send_lat; do
	"$root/build/tools/gnic-perf" "$t" --mode host --quick
done
