#!/bin/bash
# SPDX-License-Identifier: MIT
# Two processes in two network namespaces, joined by a veth pair, talk over
# gnic-emu's TCP fabric; then the wire is cut mid-transfer.
#
#   test_netns.sh PATH/TO/netns_peer
#
#   1. a transfer across the namespaces completes (GNIC_EMU_ADDR = each
#      side's namespace address, so the fabric listens there, not on
#      loopback)
#   2. cut: a long transfer runs, the veth goes down under it; the
#      initiator must end with an error completion (exit 3, a line saying
#      which) within a bound, never hang
#   3. the veth comes back up: a fresh transfer completes
#
# Needs CAP_NET_ADMIN (`ip netns add`); exits 77 (skip) without it. The
# namespaces and the veth get names unique to this run and are removed on
# every exit. Addresses come from 10.231.77.0/30, which exists only inside
# the two namespaces: nothing is routed anywhere else.
set -eu

peer=${1:?usage: test_netns.sh PATH/TO/netns_peer}
addr_a=10.231.77.1
addr_b=10.231.77.2
port=18700
cut_bound_s=15 # the initiator's QP gives up after ~0.5 s; generous slack
server_pid=""
client_pid=""

. "$(dirname "$0")/../../scripts/lib/netns-pair.sh"
np_init ns netns
np_pids=(client_pid server_pid)
np_create
ip -n "$nsa" addr add "$addr_a/30" dev "$veth_a"
ip -n "$nsb" addr add "$addr_b/30" dev "$veth_b"
echo "namespaces $nsa ($addr_a) and $nsb ($addr_b) joined by $veth_a/$veth_b"

# Both sides share this user's per-user secret file (same HOME); pin it to
# a private one so the run does not depend on the caller's.
export GNIC_EMU_SECRET="gnic-netns-test-secret-$$-$(date +%s)"

start_server() { # $1: log file
	ip netns exec "$nsb" env GNIC_EMU_ADDR=$addr_b "$peer" server $addr_b $port >"$1" 2>&1 &
	server_pid=$!
}

# Runs a whole transfer of $1 WRITEs; both sides must exit 0.
transfer_ok() { # $1: WRITEs, $2: label
	start_server "$work/server-$2.log"
	rc=0
	ip netns exec "$nsa" env GNIC_EMU_ADDR=$addr_a "$peer" client $addr_b $port "$1" 10000 \
		>"$work/client-$2.log" 2>&1 || rc=$?
	np_wait_pid "$server_pid" 30
	src=$wait_rc
	server_pid=""
	sed "s/^/  [$2 client] /" "$work/client-$2.log"
	sed "s/^/  [$2 server] /" "$work/server-$2.log"
	if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ]; then
		echo "FAIL: $2: client exit $rc, server exit $src (want 0 and 0)"
		exit 1
	fi
	grep -q "GID ...$addr_a:" "$work/client-$2.log" || {
		echo "FAIL: $2: the client's fabric did not listen on $addr_a"
		exit 1
	}
}

echo "--- 1. a transfer across the namespaces"
transfer_ok 20000 first

echo "--- 2. cut the wire mid-transfer"
start_server "$work/server-cut.log"
ip netns exec "$nsa" env GNIC_EMU_ADDR=$addr_a "$peer" client $addr_b $port 100000000 60000 \
	>"$work/client-cut.log" 2>&1 &
client_pid=$!
# wait until the stream runs, then let it run a little
for _ in $(seq 100); do
	grep -q "client: streaming" "$work/client-cut.log" && break
	sleep 0.1
done
grep -q "client: streaming" "$work/client-cut.log" || {
	cat "$work/client-cut.log"
	echo "FAIL: the client did not start streaming"
	exit 1
}
sleep 0.5
ip -n "$nsa" link set "$veth_a" down
cut_at=$(date +%s%N)
echo "veth $veth_a down"
np_wait_pid "$client_pid" $cut_bound_s
rc=$wait_rc
client_pid=""
took_ms=$((($(date +%s%N) - cut_at) / 1000000))
kill -9 "$server_pid" 2>/dev/null || true # it waits for a verdict that cannot come
wait "$server_pid" 2>/dev/null || true
server_pid=""
sed 's/^/  [cut client] /' "$work/client-cut.log"
if [ "$rc" -eq 124 ]; then
	echo "FAIL: the initiator still runs ${cut_bound_s} s after the cut (a hang)"
	exit 1
fi
if [ "$rc" -ne 3 ] || ! grep -q "client: transfer failed: RETRY_EXC_ERR" "$work/client-cut.log"; then
	echo "FAIL: after the cut the initiator exited $rc; want 3 with RETRY_EXC_ERR"
	exit 1
fi
done_before=$(sed -n 's/.*, \([0-9]*\) WRITEs completed,.*/\1/p' "$work/client-cut.log")
if [ "${done_before:-0}" -le 0 ]; then
	echo "FAIL: no WRITE completed before the cut: not a mid-transfer cut"
	exit 1
fi
echo "cut: the initiator ended with RETRY_EXC_ERR ${took_ms} ms after the cut" \
	"(bound ${cut_bound_s} s), ${done_before} WRITEs completed before it"

echo "--- 3. the wire back up: a fresh transfer"
ip -n "$nsa" link set "$veth_a" up
transfer_ok 20000 again
echo "PASS"
