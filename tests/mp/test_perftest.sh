#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Debian's unmodified perftest, server and client on loopback, over gnic-emu:
# the eight ib_{write,read,send,atomic}_{bw,lat} programs, RC, the SEND
# tests also with --use-srq, in both of perftest's post modes:
#
#   wr    its default on a ConnectX-7: QPs made by ibv_create_qp_ex with
#         send_ops_flags, WQEs posted through ibv_wr_start .. ibv_wr_complete
#         (one run is checked to have made such QPs, from the emulator's
#         debug log);
#   old   --use_old_post_send: ibv_create_qp and ibv_post_send.
#
#   tests/mp/test_perftest.sh <build dir> [wr|old]   (default: both)
#
# Each pair runs under `timeout` on its own TCP port; both sides must exit 0
# and the client must print its result row. Exit 0 pass, 1 fail, 77 skip
# (perftest not installed: scripts/deps.sh installs it).
set -u

RUN_TIMEOUT=${RUN_TIMEOUT:-60}
build=${1:-build}
modes=${2:-wr old}

if ! command -v ib_write_bw >/dev/null; then
	echo "SKIP: perftest is not installed (scripts/deps.sh installs it)"
	exit 77
fi
libdir=$(cd "$build/emu" 2>/dev/null && pwd) || {
	echo "FAIL: no $build/emu (build gnic-emu first)"
	exit 1
}
. "$(dirname "$0")/../../scripts/lib/server-client.sh"
sc_init "$libdir"
# A sanitizer build runs the emulator several times slower: its QPs get a
# longer ack timeout (perftest's -u: 4.096 us x 2^20 = 4.3 s a try instead
# of 67 ms), or a 4 MiB WRITE can run out of retries under TSan.
slow=()
[ "$sanitized" -eq 0 ] || slow=(-u 20)

# A port range of our own per invocation, so parallel runs do not collide.
port=$((23000 + ($$ % 1000) * 16))
# the client's result row: message size, iterations, then figures
result_re='^ *[0-9]+ +[0-9]+ +[0-9.]+'

# One server + client pair in post mode $mode. Returns 0 pass, 1 fail, 2 when
# the port was taken.
run_once() {
	local p=$1 prog=$2
	shift 2
	local post=()
	[ "$mode" = old ] && post=(--use_old_post_send)
	local common=(-d rocep1s0f0 -x 3 -F "${post[@]}" "${slow[@]}" -p "$p" "$@")

	sc_pair 127.0.0.1 "$prog" "${common[@]}" || return 2
	local ok=0
	if [ $server_rc -ne 0 ] || [ $client_rc -ne 0 ]; then
		echo "FAIL: [$mode] $prog $* : server exit $server_rc, client exit $client_rc" \
			"(124 = timed out after ${RUN_TIMEOUT}s)"
		ok=1
	elif ! grep -Eq "$result_re" "$tmp/client"; then
		echo "FAIL: [$mode] $prog $* : the client printed no result row"
		ok=1
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
		echo "ok: [$mode] $* : $(grep -E "$result_re" "$tmp/client" | head -1 | tr -s ' \t' ' ')"
		return 0
	fi
	failures=$((failures + 1))
}

failures=0
for mode in $modes; do
	case $mode in
	wr | old) ;;
	*)
		echo "FAIL: unknown post mode '$mode' (wr or old)"
		exit 1
		;;
	esac
	for prog in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
		run "$prog" -n 200
	done
	for prog in ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat; do
		run "$prog" -n 200
	done
	# several sizes in one run, and inline sends (a ConnectX-7 gets them by
	# default for the latency tests; here explicitly)
	run ib_write_bw -a -n 20
	run ib_send_lat -s 64 -I 64 -n 200
	# receives from a shared receive queue (four QPs on one SRQ)
	run ib_send_bw --use-srq -q 4 -n 200
	run ib_send_lat --use-srq -n 200
done

# The default mode really is the ibv_wr_* path: its QPs were made with
# send_ops_flags (the emulator's debug log says so at QP creation).
case " $modes " in
*" wr "*)
	saved_log=${GNIC_EMU_LOG-unset}
	export GNIC_EMU_LOG=3
	mode=wr
	if run ib_write_lat -n 5; then
		for side in server client; do
			if ! grep -q "posts through ibv_post_send and ibv_wr_\*" "$tmp/$side"; then
				echo "FAIL: [wr] ib_write_lat ($side) made no QP with send_ops_flags"
				failures=$((failures + 1))
			fi
		done
	fi
	if [ "$saved_log" = unset ]; then unset GNIC_EMU_LOG; else GNIC_EMU_LOG=$saved_log; fi
	;;
esac

if [ "$failures" -ne 0 ]; then
	echo "FAIL: $failures perftest run(s) failed"
	exit 1
fi
echo "PASS"
