#!/usr/bin/env bash
# Prints each loom model's iteration count at the given preemption bound(s), for
# crates/kslock/tests/README.md. Usage: scripts/loom-iterations.sh [BOUND...] (default: 2 3).
# Env: LOOM_TIMEOUT (seconds per model, default 900; a model past it is reported as "> N s"),
# MODELS (an extended regex the model names must match, default: all), JOBS (models run at
# once, default 1; loom is single-threaded).
set -uo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg kslock_loom" CARGO_TARGET_DIR=target/loom
cargo test -p kslock --release --lib --tests --no-run -q 2>/dev/null
# "<cargo target args>|<test filter>" per model
models() {
    for f in crates/kslock/tests/loom_*.rs; do
        t=$(basename "$f" .rs)
        grep -oE "fn loom_[a-z0-9_]+" "$f" | sed "s/^fn //; s/^/--test $t|/"
    done
    for f in $(grep -rlE "fn loom_[a-z0-9_]+" crates/kslock/src); do
        m=$(echo "$f" | sed 's|crates/kslock/src/||; s|\.rs$||; s|/mod$||; s|/|::|g')
        grep -oE "fn loom_[a-z0-9_]+" "$f" | sed "s/^fn //; s/^/--lib|$m::loom_tests::/"
    done
}
# One model at bound $1: "<bound> <name> <iterations | > N s | FAILED> <seconds>s".
one() {
    local b=$1 target=${2%%|*} name=${2#*|} start out rc n
    start=$(date +%s)
    # Only loom::model logs (its closing "Completed in N iterations"): full logs slow loom 3x.
    out=$(LOOM_MAX_PREEMPTIONS=$b LOOM_LOG=loom::model=info timeout "${LOOM_TIMEOUT:-900}" \
        cargo test -p kslock --release -q $target -- --exact --nocapture "$name" 2>&1)
    rc=$?
    n=$(grep -oE "Completed in [0-9]+ iterations" <<<"$out" | grep -oE "[0-9]+" | tail -1)
    if [ "$rc" -eq 124 ]; then n="> ${LOOM_TIMEOUT:-900} s"
    elif [ "$rc" -ne 0 ]; then n="FAILED"; fi
    printf '%s\t%s\t%s\t%ss\n' "$b" "${name##*::}" "${n:-?}" "$(( $(date +%s) - start ))"
}
export -f one
for b in ${@:-2 3}; do
    models | grep -E "${MODELS:-.}" | xargs -d '\n' -P "${JOBS:-1}" -I{} bash -c 'one "$0" "$1"' "$b" {}
done
