#!/bin/sh
# SPDX-License-Identifier: MIT
#
# gnic-emu-run, the runner for unmodified verbs programs:
#   test_run.sh devinfo <gnic-emu-run>           Debian's ibv_devinfo -v sees the emulated CX-7
#   test_run.sh sysfs <gnic-emu-run> <test_run_sysfs>
#                                                the emulated sysfs tree matches verbs
#   test_run.sh nons <gnic-emu-run>              namespace off: one line, the program still runs
#   test_run.sh user <gnic-emu-run> <test_run_sysfs>
#                                                as an unprivileged user (setpriv)
# Exit 0 pass, 1 fail, 77 skip.
# shellcheck disable=SC2015,SC2016,SC2086 # `a && b || fail`: fail exits; inner shells expand;
# $launch is split into words on purpose
set -u
mode=$1
run=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}
no_ns_msg='gnic-emu-run: no private mount namespace'

# A sanitizer build of our libraries needs its runtime loaded first into the
# uninstrumented program that loads them (ibv_devinfo; not into sh, which
# does not load them and which TSan's runtime crashes).
launch="env"
preload=$(ldd "$(dirname "$run")/libibverbs.so.1" 2>/dev/null |
	awk '/libasan\.so|libtsan\.so/ { first = first $3 ":" }
	     /libubsan\.so/ { rest = rest $3 ":" }
	     END { printf "%s%s", first, rest }')
[ -z "$preload" ] || launch="env LD_PRELOAD=${preload%:} ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}"

# The host's entries before and after: the runner must not change them.
host_state() { ls -la /sys/class/infiniband /sys/class/infiniband_verbs /dev/infiniband 2>&1; }
host_state >"$tmp/host.before"
check_host() {
	host_state >"$tmp/host.after"
	cmp -s "$tmp/host.before" "$tmp/host.after" || fail "the host's RDMA entries changed"
}

# A namespace must be possible here, else these modes skip.
need_ns() {
	"$run" true 2>"$tmp/ns.err" || fail "gnic-emu-run true: exit $?"
	if grep -q "$no_ns_msg" "$tmp/ns.err"; then
		echo "SKIP: $(cat "$tmp/ns.err")"
		exit 77
	fi
}

case $mode in
devinfo)
	[ -x /usr/bin/ibv_devinfo ] || {
		echo "SKIP: no ibv_devinfo (ibverbs-utils)"
		exit 77
	}
	"$run" $launch /usr/bin/ibv_devinfo -v >"$tmp/out" 2>"$tmp/err" || fail "ibv_devinfo -v: exit $?"
	cat "$tmp/out" "$tmp/err"
	grep -Eq '^hca_id:[[:space:]]+rocep1s0f0$' "$tmp/out" || fail "no hca_id rocep1s0f0"
	grep -Eq '^[[:space:]]+vendor_id:[[:space:]]+0x02c9$' "$tmp/out" || fail "vendor_id not 0x02c9"
	grep -Eq '^[[:space:]]+vendor_part_id:[[:space:]]+4129$' "$tmp/out" || fail "part id not 4129"
	grep -Eq 'state:[[:space:]]+PORT_ACTIVE' "$tmp/out" || fail "port not active"
	;;
sysfs)
	need_ns
	sysfs_test=$3
	# ibv_devinfo's node_guid and the file, read in one run (the GUID names
	# the emulator's listener port, which the runner pins for its program).
	# shellcheck disable=SC2016 # expanded by the inner shell
	IBV_LAUNCH=$launch "$run" sh -c '$IBV_LAUNCH /usr/bin/ibv_devinfo | sed -n "s/^[[:space:]]*node_guid:[[:space:]]*//p";
		cat /sys/class/infiniband/rocep1s0f0/node_guid;
		readlink -f /sys/class/infiniband/rocep1s0f0/device;
		cat /sys/class/infiniband/rocep1s0f0/device/vendor' >"$tmp/out" ||
		fail "script under gnic-emu-run: exit $?"
	cat "$tmp/out"
	g1=$(sed -n 1p "$tmp/out")
	g2=$(sed -n 2p "$tmp/out")
	[ -n "$g1" ] && [ "$g1" = "$g2" ] || fail "ibv_devinfo node_guid '$g1', sysfs '$g2'"
	case $(sed -n 3p "$tmp/out") in
	*/0000:01:00.0) ;;
	*) fail "device link resolves to '$(sed -n 3p "$tmp/out")', not a PCI function" ;;
	esac
	[ "$(sed -n 4p "$tmp/out")" = 0x15b3 ] || fail "device/vendor not 0x15b3"
	"$run" "$sysfs_test" || fail "test_run_sysfs under gnic-emu-run"
	GNIC_EMU_DEVICES=3 "$run" "$sysfs_test" || fail "test_run_sysfs, 3 devices"
	# The program's exit status is the runner's.
	"$run" sh -c 'exit 7'
	[ $? -eq 7 ] || fail "exit status not passed through"
	"$run" /nonexistent/program 2>/dev/null
	[ $? -eq 127 ] || fail "a missing program is not 127"
	check_host
	;;
nons)
	for how in env opt; do
		if [ $how = env ]; then
			GNIC_EMU_RUN_NAMESPACE=0 "$run" sh -c 'echo "$LD_LIBRARY_PATH"; exit 5' \
				>"$tmp/out" 2>"$tmp/err"
		else
			"$run" --no-namespace sh -c 'echo "$LD_LIBRARY_PATH"; exit 5' >"$tmp/out" 2>"$tmp/err"
		fi
		rc=$?
		cat "$tmp/out" "$tmp/err"
		[ $rc -eq 5 ] || fail "$how: exit $rc, want the program's 5"
		[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$how: want one line on stderr"
		grep -q '^gnic-emu-run: namespace off' "$tmp/err" || fail "$how: no message"
		libdir=$(cut -d: -f1 "$tmp/out")
		[ -e "$libdir/libibverbs.so.1" ] && [ -e "$libdir/libmlx5.so.1" ] ||
			fail "$how: LD_LIBRARY_PATH does not start with the drop-in libraries"
	done
	# Verbs still work through LD_LIBRARY_PATH alone.
	if [ -x /usr/bin/ibv_devinfo ]; then
		"$run" --no-namespace $launch /usr/bin/ibv_devinfo -l 2>/dev/null | grep -q rocep1s0f0 ||
			fail "ibv_devinfo -l without the namespace"
	fi
	check_host
	;;
user)
	sysfs_test=$3
	[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null || {
		echo "SKIP: needs root and setpriv to become an unprivileged user"
		exit 77
	}
	# nobody's own home (the emulator keeps its fabric secret there).
	chmod 755 "$tmp"
	mkdir "$tmp/home" && chown 65534:65534 "$tmp/home" || fail "a home for nobody"
	as_nobody() {
		HOME=$tmp/home setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- "$@"
	}
	as_nobody "$run" sh -c 'id -u; exit 9' >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err"
	[ $rc -eq 9 ] || fail "as nobody: exit $rc, want 9 (is the build tree readable by nobody?)"
	[ "$(head -1 "$tmp/out")" = 65534 ] || fail "the program did not run as the same user"
	if grep -q "$no_ns_msg" "$tmp/err"; then
		# No user namespaces here: the one-line message, the program still ran.
		[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "want one line on stderr"
	else
		[ ! -s "$tmp/err" ] || fail "unexpected stderr"
		as_nobody "$run" "$sysfs_test" || fail "test_run_sysfs as nobody in a user namespace"
	fi
	check_host
	;;
*)
	fail "unknown mode $mode"
	;;
esac
echo "PASS: gnic-emu-run $mode"
