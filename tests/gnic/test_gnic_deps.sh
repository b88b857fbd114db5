#!/bin/sh
# SPDX-License-Identifier: MIT
# libgnic.so must not depend on rdma-core or CUDA at link time: it may need
# only libc, libdl and pthread (and the dynamic loader itself, for TLS);
# everything else is dlopen'ed.
#   test_gnic_deps.sh <path of libgnic.so>
lib=$1
[ -f "$lib" ] || { echo "FAIL: no library at $lib"; exit 1; }
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "NEEDED: $needed"
for n in $needed; do
	case $n in
	libc.so.* | libdl.so.* | libpthread.so.* | ld-linux*.so.*) ;;
	libasan.so.* | libubsan.so.* | libtsan.so.*) ;; # GNIC_SANITIZE builds
	*) echo "FAIL: $lib needs $n"; exit 1 ;;
	esac
done
if ldd "$lib" | grep -E 'libibverbs|libmlx5|libcuda|libgnic_emu'; then
	echo "FAIL: ldd shows a provider or CUDA library"
	exit 1
fi
# the public API and nothing else is exported
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDB]/ {print $3}' | grep -v '^gnic_')
if [ -n "$bad" ]; then
	echo "FAIL: exports outside gnic_*: $bad"
	exit 1
fi
echo "ok"
