#!/usr/bin/env bash
# The cost of kslock's contention statistics (feature `stats`, issue "kslock-stat"), as
# kslock ÷ the best peer in the same runs (scripts/ab-ratio.py), three sides interleaved:
#   base  a build without the feature (target/release/lockbench)
#   off   a build with it, recording switched off (lockbench without --stats)
#   on    the same build recording (lockbench --stats; its reports go to /dev/null)
# usage: scripts/stats-overhead.sh [RUNS] (default 3). Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
cargo build -q --release -p lockbench
CARGO_TARGET_DIR=target/stats cargo build -q --release -p lockbench --features stats
on=$(mktemp)
trap 'rm -f "$on"' EXIT
printf '#!/bin/sh\nexec %s "$@" --stats 2>/dev/null\n' "$PWD/target/stats/release/lockbench" >"$on"
chmod +x "$on"
sides="base|off=@$PWD/target/stats/release/lockbench|on=@$on"
echo "== matrix, mutexes"
scripts/ab-ratio.py "$runs" "$sides" -- matrix --locks mutexes --threads 8,32,96 \
    --cs-load 1,20 --secs 0.2
echo "== matrix, rwlocks at 90% reads"
scripts/ab-ratio.py "$runs" "$sides" -- matrix --locks rwlocks --threads 8,32,96 \
    --cs-load 1,20 --read-pct 90 --secs 0.2
for w in file tree; do
    echo "== workload $w"
    scripts/ab-ratio.py "$runs" "$sides" -- workload "$w" --threads 8,32 --secs 0.2
done
echo "== uncontended (ns per lock + unlock)"
for b in target/release/lockbench target/stats/release/lockbench; do  # the second: compiled in, off
    echo "-- $b"
    "$b" uncontended --locks kslock-mutex,kslock-rwsem,parking-lot-mutex
done
