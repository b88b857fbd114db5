#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The engine's idle policy under busy-polling peers: Debian's unmodified
# ibv_rc_pingpong (every size from 1 B to 1 MiB in powers of 4, polling and
# with CQ events, buffers validated) and perftest's ib_read_lat and
# ib_atomic_lat (busy-polling READ and atomic ping-pong), server and client
# on loopback, each with GNIC_EMU_SPIN_US 0, 200 and 10000000, several
# rounds. Every run is under `timeout`; both sides must exit 0 and print
# their result line.
#
#   tests/mp/test_engine_stress.sh <build dir>
#
# On two CPUs the four busy threads (two applications, two engines) share
# the cores: a spinning engine must give way, not starve the peer. So the
# ping-pong latency with each spin setting (median of its polling runs) must
# stay within SPIN_FACTOR times that of spin 0, plus SPIN_SLACK_US. The
# whole run must end within STRESS_BUDGET_S; the time is reported.
#
# Sanitizer builds (several times slower) run 1 round on every other size
# up to 64 KiB (powers of 16), unless STRESS_ROUNDS / STRESS_SIZES say
# otherwise.
# Exit 0 pass, 1 fail, 77 skip (ibverbs-utils or perftest not installed).
set -u

RUN_TIMEOUT=${RUN_TIMEOUT:-60}
SPIN_FACTOR=${SPIN_FACTOR:-4}
SPIN_SLACK_US=${SPIN_SLACK_US:-500}
log=${GNIC_EMU_LOG:-2}
build=${1:-build}

for prog in ibv_rc_pingpong ib_read_lat ib_atomic_lat; do
	if ! command -v "$prog" >/dev/null; then
		echo "SKIP: $prog is not installed (scripts/deps.sh installs it)"
		exit 77
	fi
done
libdir=$(cd "$build/emu" 2>/dev/null && pwd) || {
	echo "FAIL: no $build/emu (build gnic-emu first)"
	exit 1
}
. "$(dirname "$0")/../../scripts/lib/server-client.sh"
sc_init "$libdir"

spins=(0 200 10000000)
if [ "$sanitized" -eq 0 ]; then
	rounds=${STRESS_ROUNDS:-5}
	sizes=${STRESS_SIZES:-"1 4 16 64 256 1024 4096 16384 65536 262144 1048576"}
	budget=${STRESS_BUDGET_S:-240}
	slow=()
else
	rounds=${STRESS_ROUNDS:-1}
	# up to 64 KiB: under ThreadSanitizer a 1 MiB message between two
	# loaded engines can outlast ibv_rc_pingpong's fixed ack timeout (67 ms,
	# 7 retries); the normal build covers 1 MiB
	sizes=${STRESS_SIZES:-"1 16 256 4096 65536"}
	budget=${STRESS_BUDGET_S:-540}
	slow=(-u 20) # perftest's ack timeout: 4.3 s, as in test_perftest.sh
fi

# Ports of our own per invocation, reused in turn (both programs set
# SO_REUSEADDR); a taken one is skipped.
port_base=$((40000 + ($$ % 300) * 64))
port_n=0
next_port() {
	port=$((port_base + port_n % 64))
	port_n=$((port_n + 1))
}

# Iterations: fewer for big messages, so each run moves at most ~16 MiB.
iters_for() {
	local n=$((16777216 / $1))
	[ $n -gt 500 ] && n=500
	[ $n -lt 16 ] && n=16
	echo $n
}

pp_re='[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter'
perf_re='^ *[0-9]+ +[0-9]+ +[0-9.]+'

# run SPIN KIND PROG ARGS...: one server + client pair (KIND pp or perf),
# another port while the port is taken. Sets usec (pp: the client's
# usec/iter). Returns 0 pass, 1 fail.
run() {
	local spin=$1 kind=$2 prog=$3 attempt ok
	shift 3
	local args=("$@")

	for attempt in 1 2 3 4 5; do
		next_port
		# info-level emulator lines (retries given up, connections lost)
		# explain a failure; the programs' own stdout is lost when killed
		if [ "$kind" = pp ]; then
			sc_pair localhost env GNIC_EMU_SPIN_US="$spin" GNIC_EMU_LOG="$log" "$prog" \
				-d rocep1s0f0 -g 3 -p "$port" "${args[@]}" && break
		else
			sc_pair 127.0.0.1 env GNIC_EMU_SPIN_US="$spin" GNIC_EMU_LOG="$log" "$prog" \
				-d rocep1s0f0 -x 3 -F --use_old_post_send "${slow[@]}" -p "$port" \
				"${args[@]}" && break
		fi
		echo "port $port is taken, trying another"
	done
	ok=0
	if [ "$server_rc" -ne 0 ] || [ "$client_rc" -ne 0 ]; then
		echo "FAIL: spin $spin: $prog ${args[*]}: server exit $server_rc, client exit" \
			"$client_rc (124 = timed out after ${RUN_TIMEOUT}s)"
		ok=1
	elif [ "$kind" = pp ]; then
		for side in server client; do
			if ! grep -Eq "$pp_re" "$tmp/$side"; then
				echo "FAIL: spin $spin: $prog ${args[*]}: the $side printed no result"
				ok=1
			fi
		done
		usec=$(grep -Eo "$pp_re" "$tmp/client" | awk '{ print $(NF - 1) }')
	elif ! grep -Eq "$perf_re" "$tmp/client"; then
		echo "FAIL: spin $spin: $prog ${args[*]}: the client printed no result row"
		ok=1
	fi
	if [ $ok -ne 0 ]; then
		echo "($(uptime | sed 's/.*load/load/'))"
		sc_show
		failures=$((failures + 1))
	fi
	return $ok
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}

failures=0
runs=0
start=$(date +%s.%N)
declare -A lat secs
for spin in "${spins[@]}"; do
	lat[$spin]=""
	secs[$spin]=0
done
for round in $(seq 1 "$rounds"); do
	for spin in "${spins[@]}"; do
		t0=$(date +%s.%N)
		for size in $sizes; do
			n=$(iters_for "$size")
			for mode in poll events; do
				ev=()
				[ $mode = events ] && ev=(-e)
				usec=
				if run "$spin" pp ibv_rc_pingpong -s "$size" -n "$n" -c "${ev[@]}" &&
					[ $mode = poll ]; then
					lat[$spin]+="$usec "
				fi
				runs=$((runs + 1))
			done
		done
		run "$spin" perf ib_read_lat -n 200
		run "$spin" perf ib_atomic_lat -n 200
		runs=$((runs + 2))
		secs[$spin]=$(echo "${secs[$spin]} $t0 $(date +%s.%N)" | awk '{ print $1 + $3 - $2 }')
	done
	echo "round $round done: $failures failure(s) so far"
done
total=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')

echo "$runs runs, $rounds round(s), sizes: $sizes; $(uptime | sed 's/.*load/load/')"
for spin in "${spins[@]}"; do
	med=$(echo "${lat[$spin]}" | tr ' ' '\n' | grep . | median)
	printf 'GNIC_EMU_SPIN_US=%-8s %6.1f s, ping-pong median %s usec/iter\n' "$spin" \
		"${secs[$spin]}" "$med"
done
echo "total ${total} s (budget ${budget} s)"

base=$(echo "${lat[0]}" | tr ' ' '\n' | grep . | median)
for spin in "${spins[@]}"; do
	med=$(echo "${lat[$spin]}" | tr ' ' '\n' | grep . | median)
	[ "$med" = - ] || [ "$base" = - ] && continue
	if awk -v m="$med" -v b="$base" -v f="$SPIN_FACTOR" -v s="$SPIN_SLACK_US" \
		'BEGIN { exit !(m > f * b + s) }'; then
		echo "FAIL: spin $spin: ping-pong median $med usec/iter, over $SPIN_FACTOR x" \
			"spin 0's ($base) + $SPIN_SLACK_US"
		failures=$((failures + 1))
	fi
done
if awk -v t="$total" -v b="$budget" 'BEGIN { exit !(t > b) }'; then
	echo "FAIL: took ${total} s, over the ${budget} s budget"
	failures=$((failures + 1))
fi
if [ "$failures" -ne 0 ]; then
	echo "FAIL: $failures failure(s)"
	exit 1
fi
echo "PASS"
