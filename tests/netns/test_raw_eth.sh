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
id=$$
nsa=gnic-rea-$id
nsb=gnic-reb-$id
veth_a=gra$id
veth_b=grb$id
addr_a=10.231.78.1
addr_b=10.231.78.2
port=18800
work=$(mktemp -d /tmp/gnic-raweth-XXXXXX)
echo_pid=""

cleanup() {
	[ -n "$echo_pid" ] && kill -9 "$echo_pid" 2>/dev/null || true
	ip netns del "$nsa" 2>/dev/null || true
	ip netns del "$nsb" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if ! command -v ip >/dev/null || ! ip netns add "$nsa" 2>/dev/null; then
	echo "SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN and iproute2)"
	exit 77
fi
ip netns add "$nsb"
ip link add "$veth_a" type veth peer name "$veth_b"
ip link set "$veth_a" netns "$nsa"
ip link set "$veth_b" netns "$nsb"
ip -n "$nsb" addr add "$addr_b/30" dev "$veth_b"
for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
ip -n "$nsa" link set "$veth_a" up
ip -n "$nsb" link set "$veth_b" up
mac_a=$(ip -n "$nsa" -o link show "$veth_a" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
ip -n "$nsb" neigh replace "$addr_a" lladdr "$mac_a" dev "$veth_b" nud permanent
echo "echo in $nsa on $veth_a ($mac_a), sender in $nsb ($addr_b) on $veth_b"

wait_rc=0
wait_pid() { # $1: pid, $2: bound in s; sets wait_rc: its exit status, 124 on timeout
	local end=$((SECONDS + $2))
	while kill -0 "$1" 2>/dev/null; do
		if [ $SECONDS -ge "$end" ]; then
			kill -9 "$1" 2>/dev/null || true
			wait "$1" 2>/dev/null || true
			wait_rc=124
			return
		fi
		sleep 0.1
	done
	wait_rc=0
	wait "$1" || wait_rc=$?
}

start_echo() { # $1: count, $2: idle ms, $3: log
	ip netns exec "$nsa" env GNIC_EMU_ETH_IF="$veth_a" GNIC_EMU_LOG=2 \
		"$echo_bin" $port "$1" "$2" >"$3" 2>&1 &
	echo_pid=$!
	for _ in $(seq 100); do
		grep -q "^ready" "$3" && return
		kill -0 "$echo_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$3"
	echo "FAIL: the echo did not start"
	exit 1
}

field() { # $1: name, $2: log: the number after "name " on the echo's result line
	sed -n "s/^echoed.* $1 \([0-9]*\).*/\1/p; s/^echoed \([0-9]*\) .*/\1/p" "$2" |
		if [ "$1" = echoed ]; then tail -1; else head -1; fi
}

echo "--- 1. $count datagrams echoed through a RAW_PACKET QP"
start_echo "$count" 10000 "$work/echo.log"
rc=0
ip netns exec "$nsb" "$blast" $addr_a $port "$count" 64 >"$work/blast.log" 2>&1 || rc=$?
wait_pid "$echo_pid" 30
erc=$wait_rc
echo_pid=""
sed 's/^/  [sender] /' "$work/blast.log"
sed 's/^/  [echo] /' "$work/echo.log"
[ "$rc" -eq 0 ] || { echo "FAIL: the sender exited $rc"; exit 1; }
[ "$erc" -eq 0 ] || { echo "FAIL: the echo exited $erc"; exit 1; }
others=$(sed -n 's/.* others \([0-9]*\) .*/\1/p' "$work/blast.log")
no_rule=$(sed -n 's/.* rx_no_rule \([0-9]*\) .*/\1/p' "$work/echo.log")
echoed=$(sed -n 's/^echoed \([0-9]*\) .*/\1/p' "$work/echo.log")
if [ "${echoed:-0}" -lt "$count" ]; then
	echo "FAIL: the echo echoed ${echoed:-0} of $count"
	exit 1
fi
if [ "${no_rule:-0}" -lt "${others:-1}" ]; then
	echo "FAIL: $others datagrams went to the unsteered port, the port counted only" \
		"${no_rule:-0} frames matching no rule"
	exit 1
fi
echo "steering: $others unsteered datagrams, $no_rule frames counted as matching no rule"

echo "--- 2. the interface goes down under the echo"
start_echo 1000000000 3000 "$work/echo-down.log"
ip netns exec "$nsb" "$blast" $addr_a $port 2000000 64 >"$work/blast-down.log" 2>&1 &
blast_pid=$!
sleep 1
ip -n "$nsa" link set "$veth_a" down
echo "veth $veth_a down"
wait_pid "$echo_pid" 20
erc=$wait_rc
echo_pid=""
kill -9 "$blast_pid" 2>/dev/null || true
wait "$blast_pid" 2>/dev/null || true
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
