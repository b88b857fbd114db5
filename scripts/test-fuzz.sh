#!/usr/bin/env bash
# Build the libFuzzer targets (clang, -DGNIC_FUZZ=ON, into build-fuzz/) and
# run each for FUZZ_SECONDS (default 30) on a scratch copy of its seed corpus
# (nothing is written into the repository). Fails on any finding: crash,
# sanitizer report, leak, timeout or out-of-memory; the reproducer is kept in
# build-fuzz/fuzz-artifacts/<name>/ and its path printed.
#
#   scripts/test-fuzz.sh            every target (one per tests/fuzz/corpus/<name>)
#   scripts/test-fuzz.sh wqe blob   these only
#
# Per-target libFuzzer flags (e.g. -max_len) come from tests/fuzz/fuzz_<name>.options,
# one per line. Run by .ci/run after the sanitizer suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
build=${FUZZ_BUILD:-build-fuzz}
secs=${FUZZ_SECONDS:-30}

cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DGNIC_FUZZ=ON -DGNIC_CUDA=OFF >/dev/null
# every fuzz binary and replay driver, with what they link
cmake --build "$build" -j"$(nproc)" --target gnic_fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for d in tests/fuzz/corpus/*/; do
		targets+=("$(basename "$d")")
	done
fi

# the committed corpus and reproducers first: they must pass as they are
regex=$(printf '|%s' "${targets[@]}")
ctest --test-dir "$build" --output-on-failure -L fuzz -R "^fuzz_replay_(${regex#|})\$"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=()
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/fuzz_$t
	art=$build/fuzz-artifacts/$t
	log=$build/fuzz-logs/$t.log
	opts=()
	if [ -f "tests/fuzz/fuzz_$t.options" ]; then
		mapfile -t opts < <(grep -v '^#' "tests/fuzz/fuzz_$t.options" | grep .)
	fi
	rm -rf "$art"
	mkdir -p "$art" "$(dirname "$log")" "$scratch/$t"
	cp -r "tests/fuzz/corpus/$t/." "$scratch/$t/"
	echo "== fuzz_$t: ${secs}s on a copy of tests/fuzz/corpus/$t ($(find "$scratch/$t" -type f | wc -l) seeds)"
	rc=0
	"$bin" "${opts[@]}" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art/" "$scratch/$t" >"$log" 2>&1 || rc=$?
	grep -E '^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
		"$log" || true
	findings=$(find "$art" -type f)
	if [ "$rc" -ne 0 ] || [ -n "$findings" ]; then
		echo "FAIL fuzz_$t (exit $rc); log: $log"
		grep -E 'ERROR|SUMMARY|fuzz_[a-z]*: ' "$log" | head -20 || true
		for f in $findings; do
			echo "  reproducer: $f"
			echo "  replay it:  $bin $f   (then add it to tests/fuzz/regress/$t/)"
		done
		failed+=("$t")
	fi
done
if [ ${#failed[@]} -ne 0 ]; then
	echo "fuzzing found problems in: ${failed[*]}"
	exit 1
fi
echo "fuzzing: ${targets[*]}: no findings in ${secs}s each"
