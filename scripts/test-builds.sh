#!/usr/bin/env bash
# Every build type a user may pick, with gcc and with clang, builds warning-free
# (-Wall -Wextra -Werror). Build only, no tests: .ci/run runs this before the suite.
# Build trees: build-matrix/<compiler>-<type>/. Extra arguments: build types.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Release Debug RelWithDebInfo MinSizeRel)
for cc in gcc clang; do
	for type in "${types[@]}"; do
		dir="build-matrix/$cc-$type"
		echo "== $cc $type"
		# CUDA off: nvcc pins its own host compiler; the CUDA build is the default one
		cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DCMAKE_C_COMPILER="$cc" \
			-DGNIC_CUDA=OFF >/dev/null
		cmake --build "$dir" -j"$(nproc)" >"$dir/build.log" 2>&1 || {
			grep -E 'error|warning' "$dir/build.log" | head -40
			echo "FAIL: $cc $type does not build (log: $dir/build.log)"
			exit 1
		}
	done
done
echo "PASS: build matrix (gcc, clang) x (${types[*]})"
