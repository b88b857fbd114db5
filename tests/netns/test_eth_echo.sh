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
#      byte (udp_blast checks); no drop anywhere: each datagram sent (a
#      resent one twice: its echo was late) delivered and echoed once, no
#      frame out of buffer, overrun, unsent, or dropped by the sender's
#      veth or socket; the one in ten sent to a port no rule steers is
#      never answered and each is counted as "no rule", exactly
#   2. overload (COUNT/5 datagrams back to back, none resent, 16 receive
#      buffers): frames are dropped for want of a buffer (rx_out_of_buffer)
#      and every drop is counted somewhere, both ways: sent = echoed back +
#      dropped by the sender's veth end (its tx_dropped) + lost before
#      steering (rx_overrun) + out of buffer + delivered but not echoed +
#      echoes the port could not send (tx_dropped) + echoes the sender's
#      full socket dropped (its namespace's UDP RcvbufErrors); each side's
#      sum is checked on its own too
#   3. the same overload at the sender: 512 receive buffers, the sender's
#      socket buffer 16 KiB: echoes are dropped by the sender's socket, and
#      the same sums hold
#
# Needs CAP_NET_ADMIN (`ip netns add`); exits 77 (skip) without it.
set -eu

echo_bin=${1:?usage: test_eth_echo.sh PATH/TO/eth_echo PATH/TO/udp_blast [COUNT]}
blast=${2:?usage: test_eth_echo.sh PATH/TO/eth_echo PATH/TO/udp_blast [COUNT]}
count=${3:-100000}
over=$((count / 5))
addr_a=10.231.79.1
addr_b=10.231.79.2
port=18900
echo_pid=""
blast_pid=""

. "$(dirname "$0")/../../scripts/lib/netns-pair.sh"
np_init ee ethecho
np_pids=(echo_pid blast_pid)
np_create
ip -n "$nsb" addr add "$addr_b/30" dev "$veth_b"
np_neigh_a "$addr_a"
# IPv4 only: no neighbour discovery or MLD frames besides the test's, so
# the port's counters add up exactly
for dev in "$nsa:$veth_a" "$nsb:$veth_b"; do
	ip netns exec "${dev%%:*}" sysctl -qw "net.ipv6.conf.${dev#*:}.disable_ipv6=1"
done

udp_rcvbuf_errors() { # the sender's namespace: UDP datagrams its full sockets dropped
	ip netns exec "$nsb" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp
}
veth_b_tx_dropped() { # frames the sender's veth end could not hand over
	ip netns exec "$nsb" cat "/sys/class/net/$veth_b/statistics/tx_dropped"
}
echo "echo in $nsa on $veth_a ($mac_a), sender in $nsb ($addr_b) on $veth_b"

start_echo() { # $1: count, $2: idle ms, $3: receive buffers, $4: log
	np_start_echo echo_pid "$4" env GNIC_EMU_ETH_IF="$veth_a" GNIC_PROVIDER=emu \
		"$echo_bin" $port "$1" "$2" "$3"
}

field() { # $1: name, $2: log: the number after "name " on the echo's result line
	sed -n "s/^echoed.* $1 \([0-9]*\).*/\1/p" "$2" | head -1
}

echo "--- 1. $count datagrams, paced, echoed by device code"
udp_before=$(udp_rcvbuf_errors)
fwd_before=$(veth_b_tx_dropped)
start_echo "$count" 10000 512 "$work/echo.log"
rc=0
ip netns exec "$nsb" "$blast" $addr_a $port "$count" 64 >"$work/blast.log" 2>&1 || rc=$?
np_wait_pid "$echo_pid" 30
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
delivered=$(field rx_delivered "$work/echo.log")
resent=$(sed -n 's/.* resent \([0-9]*\) .*/\1/p' "$work/blast.log")
back=$(sed -n 's/.* echoed \([0-9]*\) .*/\1/p' "$work/blast.log")
np_check_echoes "$count" "$echoed" "$others" "$no_rule"
if [ "${oob:-x}" != 0 ]; then
	echo "FAIL: ${oob:-?} frames dropped for want of a receive buffer at a paced rate"
	exit 1
fi
# No drop anywhere: each datagram sent (a resent one twice: its echo was
# late, not lost) was delivered and echoed, and no counter saw a drop.
p1_drops="$(field rx_overrun "$work/echo.log") $(field tx_dropped "$work/echo.log")"
p1_drops="$p1_drops $(($(veth_b_tx_dropped) - fwd_before)) $(($(udp_rcvbuf_errors) - udp_before))"
if [ "$back" != "$count" ] || [ "$delivered" != $((count + resent)) ] ||
	[ "$echoed" != "$delivered" ] || [ "$p1_drops" != "0 0 0 0" ]; then
	echo "FAIL: at a paced rate $back of $count came back, $resent resent, $delivered" \
		"delivered, $echoed echoed; drops (overrun, not sent back, sender's veth," \
		"sender's socket): $p1_drops"
	exit 1
fi
if [ "$no_rule" != "$others" ]; then
	echo "FAIL: $others datagrams went to the unsteered port, $no_rule frames matched no rule"
	exit 1
fi
echo "paced: $back echoed back ($resent resent), $others unsteered ($no_rule counted as no rule), no drop"

# $1: receive buffers, $2: the sender's socket buffer (0: udp_blast's), $3:
# the counter that must show drops (oob: out of buffer, udp_drop: the
# sender's socket)
overload() {
	local udp_before fwd_before rc erc sent back lost frames delivered no_rule oob drop long
	local overrun tx_dropped echoed bad fwd_drop udp_drop v sum to_echo unanswered back_sum counted
	udp_before=$(udp_rcvbuf_errors)
	fwd_before=$(veth_b_tx_dropped)
	start_echo 0 3000 "$1" "$work/echo-over.log"
	rc=0
	ip netns exec "$nsb" "$blast" $addr_a $port "$over" once $([ "$2" = 0 ] || echo "$2") \
		>"$work/blast-over.log" 2>&1 || rc=$?
	np_wait_pid "$echo_pid" 30
	erc=$wait_rc
	echo_pid=""
	sed 's/^/  [sender] /' "$work/blast-over.log"
	grep -v "^ready" "$work/echo-over.log" | sed 's/^/  [echo] /'
	[ "$rc" -eq 0 ] || { echo "FAIL: the sender exited $rc"; exit 1; }
	[ "$erc" -eq 0 ] || { echo "FAIL: the echo exited $erc"; exit 1; }
	sent=$(sed -n 's/^sent \([0-9]*\) .*/\1/p' "$work/blast-over.log")
	back=$(sed -n 's/.* echoed \([0-9]*\) .*/\1/p' "$work/blast-over.log")
	lost=$(sed -n 's/.* lost \([0-9]*\) .*/\1/p' "$work/blast-over.log")
	frames=$(field rx_frames "$work/echo-over.log")
	delivered=$(field rx_delivered "$work/echo-over.log")
	no_rule=$(field rx_no_rule "$work/echo-over.log")
	oob=$(field rx_out_of_buffer "$work/echo-over.log")
	drop=$(field rx_drop_rule "$work/echo-over.log")
	long=$(field rx_too_long "$work/echo-over.log")
	overrun=$(field rx_overrun "$work/echo-over.log")
	tx_dropped=$(field tx_dropped "$work/echo-over.log")
	echoed=$(sed -n 's/^echoed \([0-9]*\) .*/\1/p' "$work/echo-over.log")
	bad=$(sed -n 's/^echoed [0-9]* bad \([0-9]*\) .*/\1/p' "$work/echo-over.log")
	fwd_drop=$(($(veth_b_tx_dropped) - fwd_before))
	udp_drop=$(($(udp_rcvbuf_errors) - udp_before))
	for v in sent back lost frames delivered no_rule oob drop long overrun tx_dropped echoed bad; do
		[ -n "${!v}" ] || { echo "FAIL: no figure for $v in the logs"; exit 1; }
	done
	if [ "${!3}" -eq 0 ]; then
		echo "FAIL: this overload should have shown drops as $3, but none were counted"
		exit 1
	fi
	# The port: every frame that reached steering is accounted for.
	sum=$((delivered + no_rule + oob + drop + long))
	if [ "$sum" -ne "$frames" ]; then
		echo "FAIL: $frames frames reached steering, but $delivered delivered + $no_rule no rule +" \
			"$oob out of buffer + $drop dropped by rule + $long too long = $sum"
		exit 1
	fi
	if [ "$no_rule" -ne 0 ] || [ "$drop" -ne 0 ] || [ "$long" -ne 0 ] || [ "$bad" -ne 0 ]; then
		echo "FAIL: only the echoed flow was sent: $no_rule no rule, $drop dropped by rule," \
			"$long too long, $bad bad"
		exit 1
	fi
	# Towards the echo: each datagram sent was dropped by the veth, by the
	# port's socket (overrun), for want of a receive buffer, or delivered.
	to_echo=$((fwd_drop + overrun + oob + delivered))
	if [ "$to_echo" -ne "$sent" ]; then
		echo "FAIL: $sent sent, but $fwd_drop dropped by the veth + $overrun overrun +" \
			"$oob out of buffer + $delivered delivered = $to_echo"
		exit 1
	fi
	# Back: each delivered frame echoed (or left when the echo stopped), each
	# echo refused by the port's interface, dropped by the sender's full socket,
	# or received.
	unanswered=$((delivered - echoed))
	back_sum=$((back + tx_dropped + udp_drop))
	if [ "$back_sum" -ne "$echoed" ]; then
		echo "FAIL: $echoed echoed, but $back came back + $tx_dropped not sent by the port +" \
			"$udp_drop dropped by the sender's socket = $back_sum"
		exit 1
	fi
	counted=$((fwd_drop + overrun + oob + unanswered + tx_dropped + udp_drop))
	if [ $((back + counted)) -ne "$sent" ] || [ "$lost" -ne "$counted" ]; then
		echo "FAIL: $sent sent = $back echoed back + $lost lost, but the drops counted are $counted"
		exit 1
	fi
	echo "overload: $sent sent = $back echoed back + $counted counted drops ($fwd_drop veth," \
		"$overrun overrun, $oob out of buffer, $unanswered unanswered, $tx_dropped not sent back," \
		"$udp_drop sender's socket full)"
}

echo "--- 2. overload at the echo: 16 receive buffers, $over datagrams back to back, none resent"
overload 16 0 oob
echo "--- 3. overload at the sender: 512 receive buffers, the sender's socket buffer 16 KiB"
overload 512 8192 udp_drop
echo "PASS"
