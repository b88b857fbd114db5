#!/bin/sh
# perf-smoke: gnic-perf's perftest options, reports, memory bound and
# connection errors, one case per CTest.
# Usage: perf_cli_test.sh PATH/TO/gnic-perf CASE
set -u
perf=${1:?usage: perf_cli_test.sh GNIC_PERF CASE}
port=$((40000 + $$ % 20000))
tmp=$(mktemp -d)
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
server=""

fail() {
	echo "FAIL: $*"
	exit 1
}

# run NAME ARGS...: gnic-perf's output in $tmp/NAME, its exit status in $rc
run() {
	name=$1
	shift
	"$perf" "$@" >"$tmp/$name" 2>&1
	rc=$?
	cat "$tmp/$name"
}

pass() {
	[ "$rc" -eq 0 ] || fail "exit status $rc"
	tail -n 1 "$tmp/$1" | grep -q '^gnic-perf: PASS' || fail "no final PASS line"
}

# rows NAME: the number of result rows (a line starting with a size)
rows() {
	grep -Ec '^ +[0-9]+ +[0-9]+ +[0-9.]+ ' "$tmp/$1"
}

now_ms() {
	date +%s%3N
}

start_server() {
	"$perf" "$@" 2>"$tmp/server" >&2 &
	server=$!
	for _ in $(seq 100); do
		grep -q "listening on TCP port" "$tmp/server" && return
		sleep 0.1
	done
	fail "the server did not start listening"
}

# pair 'SERVER ARGS' 'CLIENT ARGS' (both naming $port): the server in the
# background, the client's output in $tmp/out ($rc), the server's exit in
# $src. Another port when this one is taken by another program, or when a
# loaded machine had the server listen only after the client's 1 s of tries.
pair() {
	for attempt in 1 2 3 4 5; do
		port=$((40000 + ($$ + attempt * 7919) % 20000))
		eval "start_server $1"
		eval "run out $2"
		retry=0
		grep -q "connection refused\|not as a gnic-perf server" "$tmp/out" && retry=1
		[ "$retry" -eq 0 ] || kill "$server" 2>/dev/null
		wait "$server"
		src=$?
		server=""
		grep -q "cannot listen" "$tmp/server" && retry=1
		[ "$retry" -eq 1 ] || return 0
		echo "port $port not usable (attempt $attempt): another one"
	done
	fail "no usable port in 5 attempts"
}

case $2 in
bidir)
	run out put_bw -s 4096 -n 1000 -b --timeout 20
	pass out
	[ "$(rows out)" -eq 1 ] || fail "expected one row"
	;;
lat_all) # perftest's -a: sizes 2 .. 8M; latency columns only
	run out put_lat -a -n 20 --warmup 2 --timeout 20
	pass out
	[ "$(rows out)" -eq 23 ] || fail "expected 23 rows (2 B .. 8 MiB)"
	grep -q 't_typical\[usec\].*99.9% percentile' "$tmp/out" || fail "no latency columns"
	! grep -q 'BW' "$tmp/out" || fail "a latency table shows bandwidth"
	;;
duration) # -D 2: about two seconds, iterations counted
	t0=$(now_ms)
	run out put_bw -s 64 -D 2 --timeout 20
	t=$(($(now_ms) - t0))
	pass out
	[ "$t" -ge 2000 ] && [ "$t" -lt 15000 ] || fail "ran $t ms"
	n=$(awk '/^ +64 +[0-9]+/ { print $2 }' "$tmp/out")
	[ "${n:-0}" -ge 1000 ] || fail "counted ${n:-no} iterations"
	;;
repeat) # the median of 3 runs and their spread, in the table and the CSV
	run out put_bw -s 4096 -n 500 --repeat 3 --timeout 20
	pass out
	grep -q 'spread (min-max)' "$tmp/out" || fail "no spread column"
	grep -q 'PASS (3 runs validated)' "$tmp/out" || fail "not 3 runs"
	"$perf" put_lat -s 8 -n 100 --repeat 3 --csv >"$tmp/csv" 2>/dev/null || fail "--csv"
	awk -F, 'NR == 2 && $19 == 3 && $20 <= $14 && $14 <= $21 { ok = 1 } END { exit !ok }' \
		"$tmp/csv" || fail "CSV: repeats 3 and spread_min <= t_typical <= spread_max"
	;;
memory) # 1 GiB messages in a ring of one slot a side, not iterations x size
	command -v /usr/bin/time >/dev/null || { echo "SKIP: no /usr/bin/time"; exit 77; }
	case ${GNIC_SANITIZE:-} in *thread*) # its shadow memory is several times the program's
		echo "SKIP: no RSS bound under TSan"
		exit 77
		;;
	esac
	/usr/bin/time -f '%M' -o "$tmp/rss" "$perf" put_bw -s 1G -n 8 --warmup 0 --timeout 60 \
		>"$tmp/out" 2>&1
	rc=$?
	cat "$tmp/out"
	pass out
	rss=$(tail -n 1 "$tmp/rss")
	echo "max RSS $rss KiB (8 iterations x 1 GiB would be 8 GiB)"
	[ "$rss" -lt $((2560 * 1024)) ] || fail "max RSS $rss KiB: more than one slot a side"
	/usr/bin/time -f '%M' -o "$tmp/rss" "$perf" put_bw -a -q 16 -n 64 --warmup 0 \
		--timeout 60 >"$tmp/out" 2>&1
	rc=$?
	pass out
	rss=$(tail -n 1 "$tmp/rss")
	echo "-a -q 16: max RSS $rss KiB"
	[ "$rss" -lt $((512 * 1024)) ] || fail "-a -q 16: max RSS $rss KiB"
	run big put_bw -s 3G
	[ "$rc" -eq 2 ] && grep -q '2 GiB' "$tmp/big" || fail "-s 3G: not a clear usage error"
	;;
dead_port) # nothing listens: a clear message after the 1 s of retries, not the 30 s --timeout
	# (bounded at 5 s: sanitizer builds on a loaded machine start slowly)
	for attempt in 1 2 3 4 5; do # a port some other program listens on: another one
		port=$((40000 + ($$ + attempt * 7919) % 20000))
		t0=$(now_ms)
		run out put_bw --connect "127.0.0.1:$port" --timeout 30
		t=$(($(now_ms) - t0))
		grep -q 'not as a gnic-perf server' "$tmp/out" || break
	done
	[ "$rc" -eq 1 ] || fail "exit status $rc"
	grep -q 'FAIL: connection refused by 127.0.0.1 port' "$tmp/out" || fail "no clear message"
	[ "$t" -lt 5000 ] || fail "took $t ms"
	;;
refused) # a server given -s 4096 refuses a client of other sizes, and says why
	pair 'put_bw --server -p "$port" -s 4096 --timeout 20' \
		'put_bw -p "$port" -s 64 127.0.0.1 --timeout 20'
	[ "$rc" -eq 1 ] || fail "client exit status $rc"
	grep -q "the server refused this client: the client's message sizes" "$tmp/out" ||
		fail "the client does not show the server's reason"
	[ "$src" -eq 1 ] || fail "server exit status $src"
	grep -q 'FAIL: refused the client' "$tmp/server" || fail "the server does not say so"
	;;
perftest) # perftest's convention: -p and no host is the server, a host the client
	pair 'send_lat -p "$port" --timeout 20' 'send_lat -p "$port" -n 200 127.0.0.1 --timeout 20'
	pass out
	[ "$src" -eq 0 ] || fail "server exit status $src"
	grep -q '^gnic-perf: PASS' "$tmp/server" || fail "no PASS line from the server"
	;;
*)
	fail "unknown case $2"
	;;
esac
echo "PASS: $2"
