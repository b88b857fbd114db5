#!/bin/bash
# SPDX-License-Identifier: MIT
#
# gnic-emu's drop-in libibverbs.so.1 and libmlx5.so.1 export exactly what the
# machine's rdma-core libraries export, and programs linked against rdma-core
# (and against its provider libraries) load on them, BIND_NOW included.
#
#   tests/emu/test_surface.sh <build dir>
#
#  1. The symbol surface: every name@version (default "@@" and compat "@"
#     alike, with its kind: function, data object or version node) that
#     `nm -D --defined-only --with-symbol-versions` lists for the real
#     library, and nothing else.
#  2. Every library of the machine that links libibverbs.so.1 (librdmacm,
#     the provider libraries libefa/libmlx4/libmlx5/libmana/..., libfabric;
#     perftest links some of them) resolves all of its symbols against ours
#     under LD_BIND_NOW (`ldd -r`) as it does against rdma-core's.
#  3. Debian's perftest: each ib_* program resolves every symbol (`ldd -r`
#     under LD_BIND_NOW) with libibverbs.so.1 and libmlx5.so.1 taken from
#     the build, and `ib_write_bw --help` runs.
#
# Exit 0 pass, 1 fail, 77 skip: no rdma-core libraries to compare with, or
# parts 1 and 2 passed and perftest is not installed (scripts/deps.sh
# installs it).
set -u

build=${1:-build}
libdir=$(cd "$build/emu" 2>/dev/null && pwd) || {
	echo "FAIL: no $build/emu (build gnic-emu first)"
	exit 1
}
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

# The machine's own copy of a library, from the loader's cache (never ours:
# the build directory is not in it).
system_lib() {
	/sbin/ldconfig -p 2>/dev/null | awk -v want="$1" '$1 == want { print $NF; exit }'
}

# "kind name@version" per exported symbol; kind: func, data or version (the
# absolute symbol the linker makes for each version node).
surface() {
	nm -D --defined-only --with-symbol-versions "$1" | awk '
		NF == 3 {
			k = $2
			if (k ~ /^[TtWwi]$/) kind = "func"
			else if (k == "A") kind = "version"
			else kind = "data"
			print kind, $3
		}' | sort -u
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- 1. symbol surface ------------------------------------------------------
compared=0
for lib in libibverbs.so.1 libmlx5.so.1; do
	real=$(system_lib "$lib")
	ours="$libdir/$lib"
	if [ -z "$real" ]; then
		echo "note: no system $lib to compare with"
		continue
	fi
	[ -e "$ours" ] || {
		bad "$ours is missing"
		continue
	}
	surface "$real" >"$tmp/real"
	surface "$ours" >"$tmp/ours"
	if [ ! -s "$tmp/real" ]; then
		bad "nm lists no symbols of $real"
		continue
	fi
	compared=$((compared + 1))
	comm -23 "$tmp/real" "$tmp/ours" >"$tmp/missing"
	comm -13 "$tmp/real" "$tmp/ours" >"$tmp/extra"
	n_real=$(wc -l <"$tmp/real")
	if [ -s "$tmp/missing" ]; then
		bad "$lib lacks $(wc -l <"$tmp/missing") of the $n_real symbols of $real:"
		sed 's/^/    /' "$tmp/missing"
	fi
	if [ -s "$tmp/extra" ]; then
		bad "$lib exports $(wc -l <"$tmp/extra") symbols $real does not:"
		sed 's/^/    /' "$tmp/extra"
	fi
	[ -s "$tmp/missing" ] || [ -s "$tmp/extra" ] ||
		echo "ok: $lib exports the $n_real symbols of $real"
done
if [ "$compared" -eq 0 ]; then
	echo "SKIP: no rdma-core libibverbs.so.1 / libmlx5.so.1 on this machine"
	exit 77
fi

# ---- 2 and 3: loading against our libraries ----------------------------------
# ldd -r under LD_BIND_NOW: the loader resolves every symbol of the object and
# of its dependencies, as a BIND_NOW program does before main(). What fails
# with rdma-core's own libraries too (a plugin expecting its host program's
# symbols) is not ours to answer for: only new failures count.
load_problems() { # load_problems <object> [LD_LIBRARY_PATH]
	LD_BIND_NOW=1 LD_LIBRARY_PATH="${2:-}" ldd -r "$1" 2>&1 |
		grep -E 'undefined symbol|not found|error' | sort -u
}

bind_now_check() {
	local obj=$1 out new
	out=$(LD_BIND_NOW=1 LD_LIBRARY_PATH="$libdir" ldd -r "$obj" 2>&1)
	new=$(comm -13 <(load_problems "$obj") <(load_problems "$obj" "$libdir"))
	if [ -n "$new" ]; then
		bad "$obj does not load on gnic-emu's libraries (it does on rdma-core's):"
		sed 's/^/    /' <<<"$new"
		return 1
	fi
	for lib in libibverbs.so.1 libmlx5.so.1; do
		if grep -q "^[[:space:]]*$lib " <<<"$out" &&
			! grep -q "^[[:space:]]*$lib => $libdir/$lib " <<<"$out"; then
			bad "$obj: $lib does not come from $libdir"
			grep "^[[:space:]]*$lib " <<<"$out" | sed 's/^/    /'
			return 1
		fi
	done
	return 0
}

# Every system library that links libibverbs.so.1 directly (other than
# libibverbs itself): librdmacm and the provider libraries.
real_verbs=$(system_lib libibverbs.so.1)
libs=0
for f in "$(dirname "$real_verbs")"/lib*.so.*; do
	[ -f "$f" ] && [ ! -L "$f" ] || continue
	case "$(basename "$f")" in libibverbs.so.*) continue ;; esac
	readelf -d "$f" 2>/dev/null | grep -q 'NEEDED.*\[libibverbs\.so\.1\]' || continue
	libs=$((libs + 1))
	bind_now_check "$f" && echo "ok: $(basename "$f") resolves against gnic-emu (BIND_NOW)"
done
echo "checked $libs system libraries that link libibverbs.so.1"

perftest="ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat \
ib_atomic_bw ib_atomic_lat"
if ! command -v ib_write_bw >/dev/null; then
	[ "$fail" -eq 0 ] || exit 1
	echo "SKIP: perftest is not installed (scripts/deps.sh installs it); the rest passed"
	exit 77
fi
for p in $perftest; do
	path=$(command -v "$p") || {
		bad "perftest is installed but $p is not"
		continue
	}
	bind_now_check "$path" && echo "ok: $p resolves every symbol against gnic-emu (BIND_NOW)"
done

# A sanitizer build of our libraries needs its runtime loaded first into the
# uninstrumented program.
launch=(env)
preload=$(ldd "$libdir/libibverbs.so.1" 2>/dev/null |
	awk '/libasan\.so|libtsan\.so/ { first = first $3 ":" }
	     /libubsan\.so/ { rest = rest $3 ":" }
	     END { printf "%s%s", first, rest }')
[ -z "$preload" ] ||
	launch=(env "LD_PRELOAD=${preload%:}" "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}")

# perftest prints its usage and exits 1 for --help, also on rdma-core.
LD_BIND_NOW=1 LD_LIBRARY_PATH="$libdir" timeout 30 "${launch[@]}" ib_write_bw --help \
	>"$tmp/help" 2>&1
rc=$?
if [ "$rc" -ge 124 ] || grep -Eq 'symbol lookup error|error while loading' "$tmp/help" ||
	! grep -q 'Usage:' "$tmp/help"; then
	bad "LD_LIBRARY_PATH=$libdir ib_write_bw --help (exit $rc):"
	sed 's/^/    /' "$tmp/help" | head -20
else
	echo "ok: ib_write_bw --help runs on gnic-emu"
fi

if [ "$fail" -ne 0 ]; then
	echo "FAIL"
	exit 1
fi
echo "PASS"
