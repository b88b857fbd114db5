#!/usr/bin/env bash
# Build gnic and run its test suite (the README's test command).
# Extra arguments go to ctest, e.g. scripts/test.sh -L unit
# Ends with one line: "tests: N passed, N failed, N skipped" (GPU tests skip
# without a GPU, so "passed" counts only what ran and passed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
scripts/ctest-summary.sh build -j2 "$@"
