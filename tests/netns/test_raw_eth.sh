#!/bin/bash
# SPDX-License-Identifier: MIT
# Raw Ethernet through gnic-emu's AF_PACKET port: a veth pair, one end in a
# namespace where an ordinary UDP program sends, the other in a namespace
# where a verbs program echoes through a RAW_PACKET QP of gnic-emu
# (GNIC_EMU_ETH_IF = its end).
#
#   test_raw_eth.sh PATH/TO/raw_echo PATH/TO/udp_blast [COUNT]
#
#   1. COUNT (default 20000) datagrams of 64..1500-byte IPv4 packets come
#      back byte for byte; one in ten more go to a port no rule steers:
#      never answered, each counted as "no rule" by the emulator's port
#   2. the interface goes down under a running echo: nothing hangs; the
#      echo ends by its idle bound and tears its QP and port down
#
# The echo's end has no IP address (its kernel must not answer the
# datagrams itself); the sender's namespace knows its MAC statically.
# Needs CAP_NET_ADMIN (`ip netns add`); exits 77 (skip) without it.
set -eu

echo_bin=${1:?usage: test_raw_eth.sh PATH/TO/raw_echo PATH/TO/udp_blast [COUNT]}
blast=${2:?usage: test_raw_eth.sh PATH/TO/raw_echo PATH/TO/udp_blast [COUNT]}
count=${3:-20000}
addr_a=10.231.78.1
addr_b=10.231.78.2
port=18800
echo_pid=""
blast_pid=""

. "$(dirname "$0")/../../scripts/lib/netns-pair.sh"
np_init re raweth
np_pids=(echo_pid blast_pid)
np_create
ip -n "$nsb" addr add "$addr_b/30" dev "$veth_b"
np_neigh_a "$addr_a"
echo "echo in $nsa on $veth_a ($mac_a), sender in $nsb ($addr_b) on $veth_b"

start_echo() { # $1: count, $2: idle ms, $3: log
	np_start_echo echo_pid "$3" env GNIC_EMU_ETH_IF="$veth_a" GNIC_EMU_LOG=2 \
		"$echo_bin" $port "$1" "$2"
}

echo "--- 1. $count datagrams echoed through a RAW_PACKET QP"
start_echo "$count" 10000 "$work/echo.log"
rc=0
ip netns exec "$nsb" "$blast" $addr_a $port "$count" 64 >"$work/blast.log" 2>&1 || rc=$?
np_wait_pid "$echo_pid" 30
erc=$wait_rc
echo_pid=""
sed 's/^/  [sender] /' "$work/blast.log"
sed 's/^/  [echo] /' "$work/echo.log"
[ "$rc" -eq 0 ] || { echo "FAIL: the sender exited $rc"; exit 1; }
[ "$erc" -eq 0 ] || { echo "FAIL: the echo exited $erc"; exit 1; }
others=$(sed -n 's/.* others \([0-9]*\) .*/\1/p' "$work/blast.log")
no_rule=$(sed -n 's/.* rx_no_rule \([0-9]*\) .*/\1/p' "$work/echo.log")
echoed=$(sed -n 's/^echoed \([0-9]*\) .*/\1/p' "$work/echo.log")
np_check_echoes "$count" "$echoed" "$others" "$no_rule"
echo "steering: $others unsteered datagrams, $no_rule frames counted as matching no rule"

echo "--- 2. the interface goes down under the echo"
start_echo 1000000000 3000 "$work/echo-down.log"
ip netns exec "$nsb" "$blast" $addr_a $port 2000000 64 >"$work/blast-down.log" 2>&1 &
blast_pid=$!
sleep 1
ip -n "$nsa" link set "$veth_a" down
echo "veth $veth_a down"
np_wait_pid "$echo_pid" 20
erc=$wait_rc
echo_pid=""
kill -9 "$blast_pid" 2>/dev/null || true
wait "$blast_pid" 2>/dev/null || true
blast_pid=""
sed 's/^/  [echo] /' "$work/echo-down.log"
if [ "$erc" -eq 124 ]; then
	echo "FAIL: the echo still runs 20 s after the link went down (a hang)"
	exit 1
fi
# exit 1: fewer echoes than asked, as it must be; anything else is a crash
if [ "$erc" -ne 1 ] || ! grep -q "^echoed [1-9]" "$work/echo-down.log"; then
	echo "FAIL: the echo exited $erc without echoing (want 1, after some echoes)"
	exit 1
fi
echo "PASS"
