#!/usr/bin/env bash
# What the block checks cost an import: imports a block file into fresh
# stores with the checks and with --trust-blocks, alternating so both see
# the same machine, and prints each run's wall and CPU seconds, then the
# medians and the ratio checked/trusted.
#
#   scripts/block-checks-cost.sh [FILE]    (ENGINE=pebble ROUNDS=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-../shared/data/btc-mainnet-0-14131.blk}
engine=${ENGINE:-pebble}
rounds=${ROUNDS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/utxostore" ./cmd/utxostore
for _ in $(seq "$rounds"); do
  for mode in checked trusted; do
    flags=()
    if [ "$mode" = trusted ]; then flags=(--trust-blocks); fi
    TIMEFORMAT="$mode %R %U %S"
    { time "$work/utxostore" import --quiet --engine "$engine" --sync block --data "$work/data" "${flags[@]}" "$file" >/dev/null; } 2>>"$work/times"
    rm -rf "$work/data"
  done
done
cat "$work/times"
python3 - "$work/times" "$engine" "$rounds" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for name, seconds in [("wall", lambda r: float(r[1])), ("cpu", lambda r: float(r[2]) + float(r[3]))]:
    checked = statistics.median(seconds(r) for r in rows if r[0] == "checked")
    trusted = statistics.median(seconds(r) for r in rows if r[0] == "trusted")
    print(f"{sys.argv[2]}, median of {sys.argv[3]}: {name} checked {checked:.3f}s trusted {trusted:.3f}s ratio {checked / trusted:.3f}")
PY
