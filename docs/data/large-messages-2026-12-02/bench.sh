#!/bin/bash
# usage: bench.sh ROUNDS NAME=BUILD...: 8 MiB ib_{write,read,send}_bw -n 200 with each
# build in turn (interleaved); prints "prog name round MB/s(BW average) rc server/client load"
rounds=$1; shift; d=$(dirname "$0"); port=19000
for r in $(seq "$rounds"); do
  for prog in ib_write_bw ib_read_bw ib_send_bw; do
    for nb in "$@"; do
      port=$((port + 1))
      out=$("$d/large_pair.sh" "${nb#*=}" "$prog" "$port" -s 8388608 -n 200)
      echo "$prog ${nb%%=*} $r $(echo "$out" | awk '/^rc/{rc=$2"/"$3} /^ *8388608/{bw=$4} END{print bw, "rc", rc}') load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
