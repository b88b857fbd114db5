#!/bin/sh
# perf-smoke: one gnic-perf run across two processes. The server (side B)
# starts in the background, the client (side A) connects over TCP once the
# server says it listens; both must exit 0 (the server validates the data
# written into its memory).
# Usage: perf_two_process.sh PATH/TO/gnic-perf [TEST [CLIENT OPTIONS...]]
# (the client's options, --mode among them, are used by both sides)
set -u
perf=${1:?usage: perf_two_process.sh GNIC_PERF [TEST [OPTIONS...]]}
test=${2:-put_bw}
if [ $# -ge 2 ]; then shift 2; else shift $#; fi
# A port of our own per run, so parallel CTest runs do not collide; another
# one when it is taken (the server says "listening" just before it listens,
# so a client refused at once, or a server that cannot listen, means: again).
log=$(mktemp)
clog=$(mktemp)
trap 'rm -f "$log" "$clog"' EXIT

for attempt in 1 2 3 4 5; do
	port=$((20000 + ($$ + attempt * 7919) % 20000))
	"$perf" "$test" --server --port "$port" --timeout 30 2>"$log" &
	server=$!
	for _ in $(seq 100); do # at most 10 s
		grep -q "listening on TCP port" "$log" && break
		sleep 0.1
	done
	sleep 0.2
	"$perf" "$test" --connect "127.0.0.1:$port" --quick --iters 300 --timeout 30 "$@" >"$clog" 2>&1
	client_rc=$?
	cat "$clog"
	# a client that never connected leaves the server waiting for one
	[ "$client_rc" -eq 0 ] || { sleep 1; kill "$server" 2>/dev/null; }
	wait "$server"
	server_rc=$?
	cat "$log" >&2
	if [ "$client_rc" -ne 0 ] && { grep -q "connection refused" "$clog" ||
		grep -q "cannot listen" "$log"; }; then
		echo "port $port not usable (attempt $attempt); another one"
		continue
	fi
	break
done
echo "client exit $client_rc, server exit $server_rc"
[ "$client_rc" -eq 0 ] && [ "$server_rc" -eq 0 ]
