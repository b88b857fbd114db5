#!/bin/bash
# One ibv_rc_pingpong server + client on loopback over the gnic-emu libraries
# in $LIB/emu; prints the client's usec/iter (or FAIL, keeping the outputs).
#   LIB=build pp2.sh PORT [ibv_rc_pingpong options]
port=$1
shift
export LD_LIBRARY_PATH=$LIB/emu
out=${TMPDIR:-/tmp}/pp.$port
timeout 60 ibv_rc_pingpong -d rocep1s0f0 -g 0 -p "$port" "$@" >"$out.s" 2>&1 &
sp=$!
for _ in $(seq 100); do
	timeout 60 ibv_rc_pingpong -d rocep1s0f0 -g 0 -p "$port" "$@" localhost >"$out.c" 2>&1
	rc=$?
	if [ $rc -ne 0 ] && grep -q "Couldn't connect" "$out.c"; then
		sleep 0.05
		continue
	fi
	break
done
wait $sp
v=$(grep -o '[0-9.]* usec/iter' "$out.c" | cut -d' ' -f1)
echo "${v:-FAIL}"
[ -n "$v" ] && rm -f "$out.s" "$out.c"
