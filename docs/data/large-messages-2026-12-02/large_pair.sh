#!/bin/bash
# usage: large_pair.sh BUILD PROG PORT ARGS...
b=$1; prog=$2; port=$3; shift 3
export LD_LIBRARY_PATH=$(cd $b/emu && pwd)
timeout 300 $prog -d rocep1s0f0 -x 3 -F -p $port "$@" >/tmp/lp_srv.$port 2>&1 &
sp=$!
for i in $(seq 200); do
  timeout 300 $prog -d rocep1s0f0 -x 3 -F -p $port "$@" 127.0.0.1 >/tmp/lp_cli.$port 2>&1; rc=$?
  if [ $rc -ne 0 ] && grep -q "Couldn't connect" /tmp/lp_cli.$port; then sleep 0.05; continue; fi
  break
done
wait $sp; src=$?
echo "rc $src $rc"; grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/lp_cli.$port | tail -3
