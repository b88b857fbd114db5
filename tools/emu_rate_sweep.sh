#!/bin/sh
# gnic-emu engine scaling: RDMA WRITE message rate (64 B) and bandwidth
# (1 MiB) through gnic-perf put_bw in host mode, for every engine worker count
# (GNIC_EMU_THREADS) and QP count, in one process (sides A and B) and across
# two processes (server + client on 127.0.0.1). Prints one CSV row per run:
#   connection,threads,qps,bytes,msg_rate_mpps,bw_avg_mib_s,status
# Usage: tools/emu_rate_sweep.sh [BUILD_DIR]
# Environment: THREADS (default "1 2 4 8"), QPS ("1 2 4 8 16"), SIZES
# ("64 1M"), DURATION (seconds per run, default 2), CONNECTIONS ("local
# remote"). A benchmark, not a test: run it on a quiet machine with at least
# as many cores as the largest THREADS, twice that for "remote".
set -u
build=${1:-build}
perf=$build/tools/gnic-perf
[ -x "$perf" ] || { echo "no $perf: build first (cmake --build $build)" >&2; exit 2; }
threads=${THREADS:-1 2 4 8}
qps=${QPS:-1 2 4 8 16}
sizes=${SIZES:-64 1M}
duration=${DURATION:-2}
connections=${CONNECTIONS:-local remote}
log=$(mktemp)
out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT

# The CSV row of one gnic-perf run: the named columns of its --csv output.
pick() {
	awk -F, -v conn="$1" -v t="$2" -v q="$3" -v rc="$4" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		/^put_bw,/ { printf "%s,%s,%s,%s,%s,%s,%s\n", conn, t, q, $col["bytes"],
		             $col["msg_rate_mpps"], $col["bw_avg_mib_s"], rc == 0 ? "ok" : "fail"; n++ }
		END { if (!n) printf "%s,%s,%s,,,,fail\n", conn, t, q }' "$out"
}

run_local() { # threads qps size
	GNIC_EMU_THREADS=$1 "$perf" put_bw --sizes "$3" -q "$2" -D "$duration" --csv \
		--no-validate >"$out" 2>"$log"
}

run_remote() { # threads qps size
	port=$((20000 + $$ % 20000))
	GNIC_EMU_THREADS=$1 "$perf" put_bw --server --port "$port" --timeout 60 \
		>/dev/null 2>"$log" &
	server=$!
	for _ in $(seq 100); do
		grep -q "listening on TCP port" "$log" && break
		sleep 0.1
	done
	GNIC_EMU_THREADS=$1 "$perf" put_bw --connect "127.0.0.1:$port" --sizes "$3" -q "$2" \
		-D "$duration" --csv --no-validate --timeout 60 >"$out" 2>>"$log"
	rc=$?
	[ "$rc" -eq 0 ] || { sleep 1; kill "$server" 2>/dev/null; }
	wait "$server" || rc=1
	return "$rc"
}

echo "connection,threads,qps,bytes,msg_rate_mpps,bw_avg_mib_s,status"
for conn in $connections; do
	for t in $threads; do
		for q in $qps; do
			for s in $sizes; do
				if [ "$conn" = local ]; then run_local "$t" "$q" "$s"; else
					run_remote "$t" "$q" "$s"; fi
				rc=$?
				pick "$conn" "$t" "$q" "$rc"
				[ "$rc" -eq 0 ] || sed 's/^/# /' "$log" | tail -5 >&2
			done
		done
	done
done
