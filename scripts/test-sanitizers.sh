#!/usr/bin/env bash
# The test suite under ASan+UBSan and under TSan (CPU only: no CUDA build).
# Run by .ci/run after scripts/test.sh. Build trees: build-asan/, build-tsan/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
run() { # run <build dir> <sanitizers>
	echo "== $2 ($1)"
	cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNIC_SANITIZE="$2" \
		-DGNIC_CUDA=OFF >/dev/null
	cmake --build "$1" -j"$(nproc)"
	# one test at a time: sanitizers slow everything down, and the
	# time-bounded error tests must not starve on two cores; perftest's
	# full matrix (label perftest_matrix) runs in the normal suite only:
	# tests/mp/test_perftest.sh covers each program here
	scripts/ctest-summary.sh "$1" -j1 --timeout 600 -LE perftest_matrix
}
run build-asan address,undefined
run build-tsan thread
