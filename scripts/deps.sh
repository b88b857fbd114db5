#!/bin/sh
# Installs what gnic needs to build, only if something is missing.
set -eu
# clang + libclang-rt-dev: fuzz targets (libFuzzer); libssl-dev: the emulator's fabric
# authentication (HMAC); pkg-config: the install test's consumer; gnuplot-nox: gnic-perf --plot; Open MPI: gnic_mpi.h's test;
# perftest: test_surface loads its ib_* programs on the drop-in libraries
pkgs="cmake gcc make pkg-config libibverbs-dev ibverbs-utils clang libclang-rt-dev libssl-dev gnuplot-nox openmpi-bin libopenmpi-dev perftest"
missing=""
for p in $pkgs; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps.sh: installing:$missing"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update
# shellcheck disable=SC2086 # one word per package
$sudo apt-get install -y $missing
