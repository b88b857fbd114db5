# SPDX-License-Identifier: MIT
#
# Sourced by scripts/test-pingpong.sh and tests/mp/test_perftest.sh: running
# an unmodified rdma-core program as server and client over gnic-emu.
#
#   sc_init LIBDIR     LD_LIBRARY_PATH, the sanitizer runtime (a sanitizer
#                      build of the libraries needs it loaded first into
#                      the uninstrumented program, and only there: array
#                      `launch`, `sanitized` 1), a scratch dir $tmp whose
#                      files the EXIT trap removes with any server left
#   sc_pair HOST PROG ARGS...
#                      PROG ARGS as server (output $tmp/server) and PROG ARGS
#                      HOST as client ($tmp/client), each under
#                      `timeout $RUN_TIMEOUT`; sets server_rc and client_rc;
#                      returns 2 when the server could not listen (port taken)
#   sc_show            both sides' output, for a failure report

sc_init() {
	export LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	launch=(env)
	sanitized=0
	local preload
	preload=$(ldd "$1/libibverbs.so.1" 2>/dev/null |
		awk '/libasan\.so|libtsan\.so/ { first = first $3 ":" }
		     /libubsan\.so/ { rest = rest $3 ":" }
		     END { printf "%s%s", first, rest }')
	if [ -n "$preload" ]; then
		launch=(env "LD_PRELOAD=${preload%:}" "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}")
		sanitized=1
		echo "sanitizer runtime preloaded: ${preload%:}"
	fi
	tmp=$(mktemp -d)
	server_pid=
	trap sc_cleanup EXIT
}

sc_cleanup() {
	# Only the server this script started, by its pid.
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}

sc_pair() {
	local host=$1 try
	shift
	timeout "$RUN_TIMEOUT" "${launch[@]}" "$@" >"$tmp/server" 2>&1 &
	server_pid=$!
	# The server listens only after setting up its resources: retry the
	# client while it cannot connect and the server is still alive.
	client_rc=1
	for try in $(seq 1 200); do
		timeout "$RUN_TIMEOUT" "${launch[@]}" "$@" "$host" >"$tmp/client" 2>&1
		client_rc=$?
		if [ $client_rc -ne 0 ] && grep -q "Couldn't connect" "$tmp/client" &&
			kill -0 "$server_pid" 2>/dev/null; then
			sleep 0.05
			continue
		fi
		break
	done
	if [ $client_rc -ne 0 ] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null
	fi
	wait "$server_pid"
	server_rc=$?
	server_pid=
	if [ $server_rc -ne 0 ] && grep -q "Couldn't listen" "$tmp/server"; then
		return 2
	fi
	return 0
}

sc_show() {
	local side
	for side in server client; do
		echo "---- $side ----"
		cat "$tmp/$side"
	done
}
