#!/bin/sh
# gnic-emu ceilings for docs/perf.md: each measurement runs 3 times (host
# mode, validation on) and the median of each column is printed.
# Usage: tools/perf_ceilings.sh [PATH/TO/gnic-perf]
set -eu
perf=${1:-build/tools/gnic-perf}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$((30000 + $$ % 20000))

run() {
	"$perf" "$@" --csv | tail -n +2 >>"$tmp/rows"
}

for r in 1 2 3; do
	run put_bw --sizes 64 --iters 200000
	run put_bw --sizes 65536,1048576 --iters 20000
	run memcpy --sizes 64,65536,1048576 --iters 20000
	run get_lat --sizes 8,4096 --iters 10000
	run atomic_rate --iters 20000
	run atomic_lat --iters 10000
	run send_lat --sizes 8,4096 --iters 10000
	run put_lat --sizes 8 --iters 10000
	"$perf" put_bw --server --port $((port + r)) >/dev/null 2>&1 &
	run put_bw --connect 127.0.0.1:$((port + r)) --sizes 64 --iters 200000
	wait $!
done

# Median of the three values of each column, per (test, connection, bytes);
# the client's port differs per run, so it is dropped from the key. CSV
# columns (gnic-perf --csv): 1 test, 7 bytes, 10 BW average MiB/s, 11 Mpps,
# 14 t_typical (latency tests only), 27 connection (the last).
sed 's/ port [0-9]*//' "$tmp/rows" | sort -t, -k1,1 -k27,27 -k7,7n | awk -F, '
function med(a, b, c) {
	if ((a - b) * (c - a) >= 0) return a
	if ((b - a) * (c - b) >= 0) return b
	return c
}
{
	key = $1 "," $27 "," $7
	n[key]++
	for (i = 10; i <= 14; i++) v[key, n[key], i] = $i
	nf[key] = NF
	if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
}
END {
	printf "%-12s %-38s %8s %12s %10s %10s\n", "test", "connection", "bytes",
	       "MiB/s", "Mpps", "t_typ[us]"
	for (k = 1; k <= keys; k++) {
		key = order[k]
		split(key, f, ",")
		if (n[key] != 3) { print "expected 3 runs of " key > "/dev/stderr"; exit 1 }
		t = v[key,1,14] != "" ? sprintf("%.2f", med(v[key,1,14], v[key,2,14], v[key,3,14])) : "-"
		printf "%-12s %-38s %8s %12.1f %10.3f %10s\n", f[1], f[2], f[3],
		       med(v[key,1,10], v[key,2,10], v[key,3,10]),
		       med(v[key,1,11], v[key,2,11], v[key,3,11]), t
	}
}'
