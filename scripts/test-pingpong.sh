#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Debian's unmodified ibv_rc_pingpong and ibv_srq_pingpong (16 QPs sharing
# one SRQ by default), server and client, over gnic-emu; with a second
# argument ud or uc, ibv_ud_pingpong or ibv_uc_pingpong instead. Each
# program: five rounds with its defaults, then other sizes, events and
# validation.
#
#   scripts/test-pingpong.sh <build dir> [rc|ud|uc]
#
# Runs several sizes / iteration counts (some with CQ events, some with
# buffer validation; for the SRQ, a receive depth small enough that every
# SRQ WQE is reposted many times), each under `timeout`, on its own TCP
# port. Both sides must exit 0 and print the bandwidth line. Exit 0 pass,
# 1 fail, 77 skip (the program is not installed; without ibv_srq_pingpong
# only its runs are skipped, with a note).
set -u

mode=${2:-rc}
case $mode in
rc) PINGPONG=${PINGPONG:-/usr/bin/ibv_rc_pingpong} ;;
ud) PINGPONG=${UD_PINGPONG:-/usr/bin/ibv_ud_pingpong} ;;
uc) PINGPONG=${UC_PINGPONG:-/usr/bin/ibv_uc_pingpong} ;;
*)
	echo "FAIL: mode $mode: rc, ud or uc"
	exit 1
	;;
esac
SRQ_PINGPONG=${SRQ_PINGPONG:-/usr/bin/ibv_srq_pingpong}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
build=${1:-build}

if [ ! -x "$PINGPONG" ]; then
	echo "SKIP: $PINGPONG is not installed (apt-get install ibverbs-utils)"
	exit 77
fi
libdir=$(cd "$build/emu" 2>/dev/null && pwd) || {
	echo "FAIL: no $build/emu (build gnic-emu first)"
	exit 1
}
if [ ! -e "$libdir/libibverbs.so.1" ]; then
	echo "FAIL: $libdir/libibverbs.so.1 is missing"
	exit 1
fi
. "$(dirname "$0")/lib/server-client.sh"
sc_init "$libdir"

# A port range of our own per invocation, so parallel runs do not collide.
port=$((20000 + ($$ % 2000) * 16))
bandwidth_re='[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec'
iters_re='[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter'

# One server + client pair on a fresh port. Returns 0 pass, 1 fail, 2 when
# the port was taken (the caller retries on another).
run_once() {
	local p=$1
	shift
	local common=(-d rocep1s0f0 -g 3 -p "$p" "$@")

	sc_pair localhost "$prog" "${common[@]}" || return 2
	local ok=0
	if [ $server_rc -ne 0 ] || [ $client_rc -ne 0 ]; then
		echo "FAIL: ${prog##*/} $* : server exit $server_rc, client exit $client_rc" \
			"(124 = timed out after ${RUN_TIMEOUT}s)"
		ok=1
	else
		for side in server client; do
			if ! grep -Eq "$bandwidth_re" "$tmp/$side" || ! grep -Eq "$iters_re" "$tmp/$side"; then
				echo "FAIL: ${prog##*/} $* : $side printed no bandwidth line"
				ok=1
			fi
		done
	fi
	[ $ok -eq 0 ] || sc_show
	return $ok
}

run() {
	local attempt rc
	for attempt in 1 2 3 4 5; do
		port=$((port + 1))
		run_once "$port" "$@"
		rc=$?
		[ $rc -ne 2 ] && break
		echo "port $port is taken, trying another"
	done
	if [ $rc -eq 0 ]; then
		echo "ok: ${prog##*/} $* : $(grep -Eo "$bandwidth_re" "$tmp/client")"
		return 0
	fi
	failures=$((failures + 1))
}

failures=0
prog=$PINGPONG
if [ "$mode" != rc ]; then
	for round in 1 2 3 4 5; do
		echo "round $round: defaults"
		run
	done
	if [ "$mode" = ud ]; then
		run -s 4096 -n 500 -c # the port MTU: the largest datagram
		run -s 1 -n 1000
		run -s 1024 -n 200 -e -c
	else
		run -s 65536 -n 200 -c
		run -s 1 -n 1000
		run -s 4096 -m 4096 -n 200 -e -c
	fi
	if [ $failures -ne 0 ]; then
		echo "FAIL: $failures run(s) failed"
		exit 1
	fi
	echo "PASS"
	exit 0
fi
for round in 1 2 3 4 5; do
	echo "round $round: defaults"
	run
done
run -s 1 -n 100
run -s 1 -n 1000
run -s 4096 -n 1000 -c
run -s 65536 -n 100 -c
run -s 65536 -n 1000
run -s 4096 -n 1000 -m 4096 -c
run -s 4096 -n 100 -e -c
run -s 65536 -n 100 -e

if [ -x "$SRQ_PINGPONG" ]; then
	prog=$SRQ_PINGPONG
	for round in 1 2 3 4 5; do
		echo "round $round: defaults"
		run
	done
	run -n 200
	run -s 65536 -n 50 -c
	run -q 4 -r 16 -s 1024 -n 500 -c
	run -s 4096 -n 100 -e -c
else
	echo "note: $SRQ_PINGPONG is not installed: its runs are skipped"
fi

if [ $failures -ne 0 ]; then
	echo "FAIL: $failures run(s) failed"
	exit 1
fi
echo "PASS"
exit 0
