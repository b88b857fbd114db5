# SPDX-License-Identifier: MIT
#
# Sourced by the tests under tests/netns/: two network namespaces joined by
# a veth pair, with names unique to this run, removed on every exit.
#
#   np_init TAG WORKNAME
#                      namespaces $nsa / $nsb (gnic-TAGa-PID, gnic-TAGb-PID),
#                      veth ends $veth_a / $veth_b (gTAGa PID, gTAGb PID), a
#                      scratch dir $work (/tmp/gnic-WORKNAME-XXXXXX); the
#                      EXIT trap kills (-9) the pids held in the variables
#                      named in array np_pids, then removes the namespaces
#                      (and with them the veth) and $work
#   np_create          creates both namespaces and the veth, one end in each,
#                      loopback and both ends up; exits 77 (skip) when
#                      namespaces cannot be made (needs CAP_NET_ADMIN and
#                      iproute2). Addresses are the caller's (ip -n NS addr)
#   np_neigh_a ADDR_A  $mac_a: the MAC of $veth_a; a permanent neighbour
#                      entry ADDR_A -> $mac_a in $nsb, so $nsa's end needs no
#                      address (its kernel then never answers itself)
#   np_wait_pid PID S  waits at most S seconds for PID; $wait_rc is its exit
#                      status, or 124 after killing it on timeout
#   np_start_echo VAR LOG CMD...
#                      CMD in $nsa, in the background, its pid in variable
#                      VAR, output to LOG; returns once LOG has a line
#                      "ready"; exits 1 with LOG shown when CMD ends or 10 s
#                      pass without it
#   np_check_echoes COUNT ECHOED OTHERS NO_RULE
#                      exits 1 saying why unless ECHOED >= COUNT and the
#                      port counted NO_RULE >= OTHERS frames matching no rule
#                      (OTHERS: datagrams the sender sent to a port no rule
#                      steers); an empty ECHOED or NO_RULE counts as 0

np_init() {
	local tag=$1
	nsa=gnic-${tag}a-$$
	nsb=gnic-${tag}b-$$
	veth_a=g${tag}a$$
	veth_b=g${tag}b$$
	work=$(mktemp -d "/tmp/gnic-$2-XXXXXX")
	np_pids=()
	trap np_cleanup EXIT
}

np_cleanup() {
	local v
	# Only the processes this test started, by their pids.
	for v in "${np_pids[@]}"; do
		[ -n "${!v}" ] && kill -9 "${!v}" 2>/dev/null || true
	done
	ip netns del "$nsa" 2>/dev/null || true
	ip netns del "$nsb" 2>/dev/null || true
	rm -rf "$work"
}

np_create() {
	if ! command -v ip >/dev/null || ! ip netns add "$nsa" 2>/dev/null; then
		echo "SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN and iproute2)"
		exit 77
	fi
	ip netns add "$nsb"
	ip link add "$veth_a" type veth peer name "$veth_b"
	ip link set "$veth_a" netns "$nsa"
	ip link set "$veth_b" netns "$nsb"
	local ns
	for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
	ip -n "$nsa" link set "$veth_a" up
	ip -n "$nsb" link set "$veth_b" up
}

np_neigh_a() {
	mac_a=$(ip -n "$nsa" -o link show "$veth_a" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
	ip -n "$nsb" neigh replace "$1" lladdr "$mac_a" dev "$veth_b" nud permanent
}

wait_rc=0
np_wait_pid() {
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

np_start_echo() {
	local var=$1 log=$2 pid
	shift 2
	ip netns exec "$nsa" "$@" >"$log" 2>&1 &
	pid=$!
	printf -v "$var" %s "$pid"
	for _ in $(seq 100); do
		grep -q "^ready" "$log" && return
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log"
	echo "FAIL: the echo did not start"
	exit 1
}

np_check_echoes() {
	local count=$1 echoed=${2:-0} others=$3 no_rule=${4:-0}
	if [ "$echoed" -lt "$count" ]; then
		echo "FAIL: the echo echoed $echoed of $count"
		exit 1
	fi
	if [ "$no_rule" -lt "${others:-1}" ]; then
		echo "FAIL: $others datagrams went to the unsteered port, the port counted only" \
			"$no_rule frames matching no rule"
		exit 1
	fi
}
