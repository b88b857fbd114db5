#!/bin/sh
# eth_echo's checks: GNIC_PERF pass | loss
#   pass: thread and warp scope, 64, 512 and 1500-byte frames on the loopback
#         port, every echo checked: exit 0, a result row per scope and size,
#         and the PASS line.
#   loss: more frames in flight than the receive rings hold (--window above
#         --rx-bufs, no credit to stop the wire): the run must FAIL (exit 1)
#         in a receive, report the port's rx_out_of_buffer drops (more than
#         0, as the counters line says), and when the wire saw the gap, at
#         least as many drops as the frames it found missing.
set -u
perf=$1
case=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT

fail() {
	cat "$out"
	echo "perf_eth_test $case: FAIL: $*"
	exit 1
}

case $case in
pass)
	"$perf" eth_echo --mode gpu --iters 2000 --timeout 20 >"$out" 2>&1 ||
		fail "exit $? (want 0)"
	for s in thread warp; do
		for n in 64 512 1500; do
			grep -Eq "^ *gpu +$s +[0-9]+ +[0-9]+ +[0-9]+ +$n +[0-9]+ " "$out" ||
				fail "no $s row for $n bytes"
		done
	done
	grep -q "^gnic-perf: PASS (6 runs validated)" "$out" || fail "no PASS line"
	;;
loss)
	# The wire finds a gap (a later echo came) at once, or, when the last
	# frames in flight were the ones lost, a wait runs out (--timeout).
	"$perf" eth_echo --mode gpu --scope thread --sizes 512 --iters 2000 --rx-bufs 16 \
		--window 512 --timeout 3 >"$out" 2>&1
	rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc (want 1: frames were lost)"
	grep -Eq "^gnic-perf: FAIL: side [AB], receive on QP 0, iteration [0-9]+: \
(frames lost|GNIC_DEV_ERR_TIMEOUT)" "$out" || fail "no failure of a receive"
	drops=$(sed -n 's/^gnic-perf: eth_echo: frames lost: the port dropped \([0-9]*\) .*/\1/p' \
		"$out")
	[ -n "$drops" ] && [ "$drops" -gt 0 ] || fail "no drops reported"
	grep -q "eth_echo: a device thread failed;.* rx_out_of_buffer $drops " "$out" ||
		fail "the counters do not show the $drops drops"
	line=$(grep "gnic-perf: FAIL: side A, .*: frames lost" "$out")
	if [ -n "$line" ]; then
		got=$(echo "$line" | sed -n 's/.*(at -1: \([0-9]*\) = .*, expected \([0-9]*\) = .*/\1/p')
		want=$(echo "$line" | sed -n 's/.*(at -1: \([0-9]*\) = .*, expected \([0-9]*\) = .*/\2/p')
		[ -n "$got" ] && [ -n "$want" ] || fail "cannot read the lost frames"
		[ "$got" -gt "$want" ] || fail "the echo that came ($got) is not past the one expected ($want)"
		[ "$drops" -ge $((got - want)) ] ||
			fail "$drops drops, fewer than the $((got - want)) frames found missing"
	fi
	;;
*)
	echo "usage: perf_eth_test.sh GNIC_PERF pass|loss" >&2
	exit 2
	;;
esac
cat "$out"
echo "perf_eth_test $case: ok"
