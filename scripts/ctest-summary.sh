#!/usr/bin/env bash
# ctest-summary.sh <build dir> [ctest args...]: runs ctest and ends with
# "tests: N passed, N failed, N skipped"; exits with ctest's status (also
# non-zero when no test ran at all).
set -uo pipefail
dir=$1
shift
log="$dir/ctest-summary.log"
ctest --test-dir "$dir" --output-on-failure "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
total=$(sed -nE 's/.*tests passed, [0-9]+ tests? failed out of ([0-9]+).*/\1/p' "$log" | tail -1)
failed=$(sed -nE 's/.*tests passed, ([0-9]+) tests? failed out of [0-9]+.*/\1/p' "$log" | tail -1)
skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$log")
if [ -z "$total" ] || [ "$total" -eq 0 ]; then
	echo "tests: no test ran"
	exit 1
fi
echo "tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
exit "$rc"
