#!/usr/bin/env bash
# test_install.sh <build dir>: `cmake --install` into a fresh prefix, check
# what lands there, then build and run an external program against it twice:
# with pkg-config and plain cc, and as a CMake project with find_package(gnic).
# Nothing of the build tree may be used at run time.
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || {
	cat "$tmp/install.log"
	fail "cmake --install"
}
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig"
pkg-config --exists gnic || fail "pkg-config finds no gnic.pc under $prefix"
libdir=$(pkg-config --variable=libdir gnic)
for f in "$libdir/libgnic.so.0" "$libdir/libgnic_emu.so.0" "$libdir/gnic-emu/libibverbs.so.1" \
	"$libdir/gnic-emu/libmlx5.so.1" "$prefix/include/gnic/gnic.h" \
	"$prefix/include/gnic/gnic_dev.cuh" "$prefix/bin/gnic-perf" "$prefix/bin/gnic-emu-run" \
	"$libdir/cmake/gnic/gnicConfig.cmake" "$prefix/share/doc/gnic/LICENSE"; do
	[ -e "$f" ] || fail "not installed: $f"
done
# The drop-in verbs libraries stay out of the default search path.
[ ! -e "$libdir/libibverbs.so.1" ] || fail "libibverbs.so.1 installed beside libgnic"
# libgnic's ABI: gnic_* only, all under the GNIC_0.1 version node.
syms=$(objdump -T "$libdir/libgnic.so.0" | awk '$2 == "g" && $4 == ".text" {print $6 " " $7}')
[ -n "$syms" ] || fail "libgnic exports nothing"
bad=$(echo "$syms" | grep -v '^GNIC_0.1 gnic_' || true)
[ -z "$bad" ] || fail "libgnic exports outside GNIC_0.1/gnic_*: $bad"

# Run with no trace of the build tree in the environment.
unset LD_LIBRARY_PATH GNIC_EMU_LIB
cd "$tmp"

echo "== pkg-config"
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
cc -std=c11 -pedantic -Wall -Wextra -Werror $(pkg-config --cflags gnic) "$here/consumer.c" \
	-o consumer-pc $(pkg-config --libs gnic) -Wl,-rpath,"$libdir"
./consumer-pc "$prefix"

echo "== find_package"
cmake -S "$here/cmake-project" -B cmake-build -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_BUILD_TYPE=Release >cmake.log || { cat cmake.log; fail "configure"; }
cmake --build cmake-build >>cmake.log 2>&1 || { cat cmake.log; fail "build"; }
./cmake-build/consumer "$prefix"

echo "== gnic-perf and the drop-in verbs libraries, installed"
LD_LIBRARY_PATH="$libdir/gnic-emu" "$prefix/bin/gnic-perf" put_lat --quick --iters 100 \
	--timeout 20 >perf.log || { cat perf.log; fail "installed gnic-perf"; }
grep -q "$libdir/gnic-emu/libibverbs.so.1" perf.log || {
	cat perf.log
	fail "installed gnic-perf did not use the installed gnic-emu"
}
echo "== gnic-emu-run, installed"
# shellcheck disable=SC2016 # expanded by the inner shell
run_ldpath=$("$prefix/bin/gnic-emu-run" --no-namespace sh -c 'echo "$LD_LIBRARY_PATH"' 2>/dev/null)
[ "${run_ldpath%%:*}" = "$(cd "$libdir/gnic-emu" && pwd -P)" ] ||
	fail "installed gnic-emu-run puts '$run_ldpath' on LD_LIBRARY_PATH, not $libdir/gnic-emu"
"$prefix/bin/gnic-emu-run" sh -c 'cat /sys/class/infiniband/rocep1s0f0/node_guid' \
	>run.log 2>&1 || { cat run.log; fail "installed gnic-emu-run"; }
grep -Eq '^[0-9a-f]{4}(:[0-9a-f]{4}){3}$|no private mount namespace' run.log || {
	cat run.log
	fail "installed gnic-emu-run: no emulated sysfs tree and no message why"
}
echo "PASS: install, pkg-config and find_package consumers"
