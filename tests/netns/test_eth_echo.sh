#!/bin/bash
# SPDX-License-Identifier: MIT
# The device-code UDP echo (examples/eth_echo.c: libgnic's Ethernet API, its
# device code on a CPU thread) through gnic-emu's AF_PACKET port: a veth
# pair, an ordinary UDP program in one namespace, the echo in the other
# (GNIC_EMU_ETH_IF = its end).
#
#   test_eth_echo.sh PATH/TO/eth_echo PATH/TO/udp_blast [COUNT]
#
#   1. paced (at most 64 datagrams unanswered): COUNT (default 100000)
#      datagrams, IPv4 packets of 64..1500 bytes, all come back byte for
#      byte (udp_blast checks); the one in ten sent to a port no rule
#      steers is never answered and each is counted as "no rule"; no frame
#      is dropped for want of a receive buffer (rx_out_of_buffer 0)
#   2. overload (4096 unanswered at a time, 16 receive buffers): frames are
#      dropped for want of a buffer and counted as rx_out_of_buffer, and
#      every frame that reached steering is accounted for: delivered (echoed,
#      or left in the queue when the echo stopped), no rule, out of buffer
#
# Needs CAP_NET_ADMIN (`ip netns add`); exits 77 (skip) without it.
set -eu

echo_bin=${1:?usage: test_eth_echo.sh PATH/TO/eth_echo PATH/TO/udp_blast [COUNT]}
blast=${2:?usage: test_eth_echo.sh PATH/TO/eth_echo PATH/TO/udp_blast [COUNT]}
count=${3:-100000}
id=$$
nsa=gnic-eea-$id
nsb=gnic-eeb-$id
veth_a=gea$id
veth_b=geb$id
addr_a=10.231.79.1
addr_b=10.231.79.2
port=18900
work=$(mktemp -d /tmp/gnic-ethecho-XXXXXX)
echo_pid=""
blast_pid=""

cleanup() {
	[ -n "$echo_pid" ] && kill -9 "$echo_pid" 2>/dev/null || true
	[ -n "$blast_pid" ] && kill -9 "$blast_pid" 2>/dev/null || true
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

start_echo() { # $1: count, $2: idle ms, $3: receive buffers, $4: log
	ip netns exec "$nsa" env GNIC_EMU_ETH_IF="$veth_a" GNIC_PROVIDER=emu \
		"$echo_bin" $port "$1" "$2" "$3" >"$4" 2>&1 &
	echo_pid=$!
	for _ in $(seq 100); do
		grep -q "^ready" "$4" && return
		kill -0 "$echo_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$4"
	echo "FAIL: the echo did not start"
	exit 1
}

field() { # $1: name, $2: log: the number after "name " on the echo's result line
	sed -n "s/^echoed.* $1 \([0-9]*\).*/\1/p" "$2" | head -1
}

echo "--- 1. $count datagrams, paced, echoed by device code"
start_echo "$count" 10000 512 "$work/echo.log"
rc=0
ip netns exec "$nsb" "$blast" $addr_a $port "$count" 64 >"$work/blast.log" 2>&1 || rc=$?
wait_pid "$echo_pid" 30
erc=$wait_rc
echo_pid=""
sed 's/^/  [sender] /' "$work/blast.log"
grep -v "^ready" "$work/echo.log" | sed 's/^/  [echo] /'
[ "$rc" -eq 0 ] || { echo "FAIL: the sender exited $rc"; exit 1; }
[ "$erc" -eq 0 ] || { echo "FAIL: the echo exited $erc"; exit 1; }
others=$(sed -n 's/.* others \([0-9]*\) .*/\1/p' "$work/blast.log")
echoed=$(sed -n 's/^echoed \([0-9]*\) .*/\1/p' "$work/echo.log")
no_rule=$(field rx_no_rule "$work/echo.log")
oob=$(field rx_out_of_buffer "$work/echo.log")
if [ "${echoed:-0}" -lt "$count" ]; then
	echo "FAIL: the echo echoed ${echoed:-0} of $count"
	exit 1
fi
if [ "${no_rule:-0}" -lt "${others:-1}" ]; then
	echo "FAIL: $others datagrams went to the unsteered port, the port counted only" \
		"${no_rule:-0} frames matching no rule"
	exit 1
fi
if [ "${oob:-x}" != 0 ]; then
	echo "FAIL: ${oob:-?} frames dropped for want of a receive buffer at a paced rate"
	exit 1
fi
echo "paced: $echoed echoed, $others unsteered ($no_rule counted as no rule), 0 out of buffer"

echo "--- 2. overload: 16 receive buffers, 4096 datagrams unanswered at a time"
start_echo 0 3000 16 "$work/echo-over.log"
ip netns exec "$nsb" "$blast" $addr_a $port 40000 4096 >"$work/blast-over.log" 2>&1 &
blast_pid=$!
wait_pid "$blast_pid" 8 # it need not finish: resends of what was dropped take time
blast_pid=""
wait_pid "$echo_pid" 30
erc=$wait_rc
echo_pid=""
grep -v "^ready" "$work/echo-over.log" | sed 's/^/  [echo] /'
[ "$erc" -eq 0 ] || { echo "FAIL: the echo exited $erc"; exit 1; }
frames=$(field rx_frames "$work/echo-over.log")
delivered=$(field rx_delivered "$work/echo-over.log")
no_rule=$(field rx_no_rule "$work/echo-over.log")
oob=$(field rx_out_of_buffer "$work/echo-over.log")
drop=$(field rx_drop_rule "$work/echo-over.log")
long=$(field rx_too_long "$work/echo-over.log")
echoed=$(sed -n 's/^echoed \([0-9]*\) .*/\1/p' "$work/echo-over.log")
if [ "${oob:-0}" -eq 0 ]; then
	echo "FAIL: no frame counted as dropped for want of a receive buffer under overload"
	exit 1
fi
sum=$((delivered + no_rule + oob + drop + long))
if [ "$sum" -ne "$frames" ]; then
	echo "FAIL: $frames frames reached steering, but $delivered delivered + $no_rule no rule +" \
		"$oob out of buffer + $drop dropped by rule + $long too long = $sum"
	exit 1
fi
if [ "$echoed" -gt "$delivered" ]; then
	echo "FAIL: $echoed echoed of $delivered delivered"
	exit 1
fi
echo "overload: $frames frames: $delivered delivered ($echoed echoed), $no_rule no rule," \
	"$oob out of buffer"
echo "PASS"
