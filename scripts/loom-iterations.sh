#!/usr/bin/env bash
# Prints each loom model's iteration count at the given preemption bound(s), for
# crates/kslock/tests/README.md. Usage: scripts/loom-iterations.sh [BOUND...] (default: 2 3).
# A model that runs past LOOM_TIMEOUT seconds (default 900) is reported as such.
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
for b in ${@:-2 3}; do
    models | while IFS='|' read -r target name; do
        start=$(date +%s)
        # loom logs a line per iteration: count in the pipe, never capture it all.
        n=$(LOOM_MAX_PREEMPTIONS=$b LOOM_LOG=info timeout "${LOOM_TIMEOUT:-900}" \
            cargo test -p kslock --release -q $target -- --exact --nocapture "$name" 2>&1 \
            | grep -oE "Completed in [0-9]+ iterations|panicked" \
            | sed -E 's/Completed in ([0-9]+) iterations/\1/' | tail -1)
        rc=${PIPESTATUS[0]}
        secs=$(( $(date +%s) - start ))
        if [ "$rc" -eq 124 ]; then n="> ${LOOM_TIMEOUT:-900} s"
        elif [ "$rc" -ne 0 ] || [ "$n" = panicked ]; then n="FAILED"; fi
        printf '%s\t%s\t%s\t%ss\n' "$b" "${name##*::}" "${n:-?}" "$secs"
    done
done
