#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Debian's unmodified perftest over gnic-emu with perftest's own settings:
# one program, server and client, each of
#
#   (defaults)   its default size and iterations (no -n)
#   -a           every size from 2 bytes to 8 MiB
#   -q 4         four QPs
#   -b           bidirectional
#
# five rounds in a row, and gnic-emu's defaults (no GNIC_EMU_* knob).
# perftest refuses some combinations itself (-q and -b outside the bw tests,
# -a for the atomic ones): each is tried once as a client, and skipped with
# perftest's own reason only if perftest rejects it before connecting.
#
#   tests/mp/test_perftest_matrix.sh <build dir> <program>
#
# PERFTEST_A_ITERS=N gives -a N iterations a size (-n N) instead of
# perftest's own (5000 for ib_write_bw, 1000 for the others): those move
# 84 GB per ib_write_bw -a round, 17 GB per round of the other bandwidth
# tests' and 34 GB per round of a latency test's -a. CTest leaves it unset
# (a round of all eight programs took about four minutes on two shared CPUs;
# see tests/CMakeLists.txt and docs/data/large-messages-2026-12-02.md); a
# smaller N makes a quick run by hand. ROUNDS (5) and
# RUN_TIMEOUT (300 s a pair) can be set too.
#
# Each pair runs under `timeout $RUN_TIMEOUT` (a hang fails, it does not
# stall); both sides must exit 0 and the client must print its result row.
# Prints each pair's wall time. Exit 0 pass, 1 fail, 77 skip (perftest is
# not installed: scripts/deps.sh installs it).
set -u

RUN_TIMEOUT=${RUN_TIMEOUT:-300}
ROUNDS=${ROUNDS:-5}
build=${1:-build}
prog=${2:-}

case $prog in
ib_write_bw | ib_read_bw | ib_send_bw | ib_atomic_bw | ib_write_lat | ib_read_lat | \
	ib_send_lat | ib_atomic_lat) ;;
*)
	echo "FAIL: program '$prog': one of ib_{write,read,send,atomic}_{bw,lat}"
	exit 1
	;;
esac
if ! command -v "$prog" >/dev/null; then
	echo "SKIP: $prog is not installed (scripts/deps.sh installs perftest)"
	exit 77
fi
libdir=$(cd "$build/emu" 2>/dev/null && pwd) || {
	echo "FAIL: no $build/emu (build gnic-emu first)"
	exit 1
}
# gnic-emu's defaults: whatever the caller's environment says
for v in $(env | sed -n 's/^\(GNIC_EMU_[A-Z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
. "$(dirname "$0")/../../scripts/lib/server-client.sh"
sc_init "$libdir"

# A port range of our own per invocation, so parallel runs do not collide.
port=$((26000 + ($$ % 1000) * 32))
# the client's result row: message size, iterations, then figures
result_re='^ *[0-9]+ +[0-9]+ +[0-9.]+'
common=(-d rocep1s0f0 -x 3 -F)

# Does perftest take these flags? A client with nobody to talk to gets as
# far as connecting; one perftest refuses stops in its parser. Prints the
# refusal (perftest's words) and returns 1 for that.
accepted() {
	port=$((port + 1))
	timeout 30 "${launch[@]}" "$prog" "${common[@]}" -p "$port" "$@" 127.0.0.1 >"$tmp/probe" 2>&1
	if grep -q "Couldn't connect" "$tmp/probe"; then
		return 0
	fi
	grep -v '^-*$' "$tmp/probe" | grep -v 'Parser function exited' | tail -1 | sed 's/^ *//'
	return 1
}

# One server + client pair. Returns 0 pass, 1 fail, 2 port taken.
pair() {
	sc_pair 127.0.0.1 "$prog" "${common[@]}" -p "$port" "$@" || return 2
	if [ $server_rc -ne 0 ] || [ $client_rc -ne 0 ]; then
		echo "FAIL: $prog $* : server exit $server_rc, client exit $client_rc" \
			"(124 = timed out after ${RUN_TIMEOUT}s)"
		sc_show
		return 1
	fi
	if ! grep -Eq "$result_re" "$tmp/client"; then
		echo "FAIL: $prog $* : the client printed no result row"
		sc_show
		return 1
	fi
	return 0
}

failures=0
run() {
	local round attempt rc t0 t1 why
	if ! why=$(accepted "$@"); then
		echo "skip: $prog $* : perftest refuses it: $why"
		return
	fi
	for round in $(seq 1 "$ROUNDS"); do
		t0=$(date +%s.%N)
		for attempt in 1 2 3 4 5; do
			port=$((port + 1))
			pair "$@"
			rc=$?
			[ $rc -ne 2 ] && break
			echo "port $port is taken, trying another"
		done
		t1=$(date +%s.%N)
		if [ $rc -ne 0 ]; then
			failures=$((failures + 1))
			echo "FAIL: $prog $* : round $round of $ROUNDS"
			return
		fi
		printf 'ok: %s %s : round %d, %.1f s, last row: %s\n' "$prog" "$*" "$round" \
			"$(echo "$t1 - $t0" | bc)" \
			"$(grep -E "$result_re" "$tmp/client" | tail -1 | tr -s ' \t' ' ')"
	done
}

run
if [ -n "${PERFTEST_A_ITERS:-}" ]; then
	echo "note: -a with ${PERFTEST_A_ITERS} iterations a size (PERFTEST_A_ITERS)"
	run -a -n "$PERFTEST_A_ITERS"
else
	run -a
fi
run -q 4
run -b

if [ "$failures" -ne 0 ]; then
	echo "FAIL: $failures combination(s) of $prog failed"
	exit 1
fi
echo "PASS"
