#!/bin/sh
# SPDX-License-Identifier: MIT
# The committed seed corpus of the "fabric" fuzz target is what its generator
# writes today: a change of the wire format or handshake must regenerate it
# (make_fabric_seeds tests/fuzz/corpus/fabric).
#   check_fabric_corpus.sh PATH/TO/make_fabric_seeds CORPUS_DIR
set -eu
gen=$1
corpus=$2
out=$(mktemp -d /tmp/gnic-fabric-corpus-XXXXXX)
trap 'rm -rf "$out"' EXIT
"$gen" "$out" >/dev/null
if ! diff -r "$out" "$corpus"; then
	echo "FAIL: $corpus is stale; regenerate it: $gen $corpus"
	exit 1
fi
echo "ok: $(ls "$corpus" | wc -l) seeds match the generator"
