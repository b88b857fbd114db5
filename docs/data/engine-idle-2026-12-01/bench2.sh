#!/bin/bash
# Interleaved ping-pong runs of several configurations; the median of each.
#   bench2.sh REPS "PINGPONG OPTIONS" NAME:LIBDIR:VAR=V,VAR=V ...
# e.g. bench2.sh 5 "-s 4096 -n 1000" old0:/tmp/old:GNIC_EMU_SPIN_US=0 \
#        new200:build:GNIC_EMU_SPIN_US=200
here=$(cd "$(dirname "$0")" && pwd)
reps=$1
args=$2
shift 2
declare -A res
for _ in $(seq "$reps"); do
	for cfg in "$@"; do
		IFS=: read -r name lib envs <<<"$cfg"
		port=$((45000 + RANDOM % 2000))
		# shellcheck disable=SC2046,SC2086
		out=$(env $(echo "$envs" | tr ',' ' ') LIB=$lib "$here/pp2.sh" $port $args)
		res[$name]+="$out "
	done
done
echo "args: $args; $(uptime)"
for cfg in "$@"; do
	name=${cfg%%:*}
	med=$(echo "${res[$name]}" | tr ' ' '\n' | grep -v '^$' | sort -g |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	echo "$name: median $med all: ${res[$name]}"
done
