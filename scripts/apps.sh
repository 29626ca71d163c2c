#!/usr/bin/env bash
# Real programs on the preload (issue 9): builds small multi-threaded drivers (scripts/apps/)
# against Debian's SQLite, LevelDB, Tokyo Cabinet and jemalloc, runs each plainly and under
# LD_PRELOAD=libkslock_preload.so, verifies each run's result (the drivers check their own
# data and say whether the preload was loaded), and prints a table.
#
#   scripts/apps.sh [--verify-only] [--only sqlite,leveldb,tchdb,jemalloc] [--preload PATH]
#                   [--threads N]
#
# --verify-only: short runs, correctness only (CI). Default: timing runs (larger inputs); the
# table then gives seconds and the ratio plain s / preload s (> 1: faster under the preload).
# Missing packages are installed with apt-get (root, non-interactive). The preload defaults to
# target/release/libkslock_preload.so, built with `cargo build --release -p kslock-c` if absent.
set -euo pipefail
cd "$(dirname "$0")/.."

verify_only=0
only="sqlite,leveldb,tchdb,jemalloc"
preload=""
threads=4
while [ $# -gt 0 ]; do
    case "$1" in
        --verify-only) verify_only=1 ;;
        --only) only="$2"; shift ;;
        --preload) preload="$2"; shift ;;
        --threads) threads="$2"; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "apps.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

declare -A pkg=([sqlite]=libsqlite3-dev [leveldb]=libleveldb-dev [tchdb]=libtokyocabinet-dev
                [jemalloc]=libjemalloc-dev)
IFS=, read -r -a progs <<< "$only"
need=()
for p in "${progs[@]}"; do
    [ -n "${pkg[$p]:-}" ] || { echo "apps.sh: unknown program $p" >&2; exit 2; }
    dpkg -s "${pkg[$p]}" >/dev/null 2>&1 || need+=("${pkg[$p]}")
done
command -v c++ >/dev/null 2>&1 || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
    echo "apps.sh: installing ${need[*]}" >&2
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q "${need[@]}" >&2 ||
        { $sudo apt-get update -q >&2 && $sudo apt-get install -y -q "${need[@]}" >&2; }
fi

if [ -z "$preload" ]; then
    preload=target/release/libkslock_preload.so
    [ -f "$preload" ] || cargo build --release -p kslock-c >&2
fi
[ -f "$preload" ] || { echo "apps.sh: no preload at $preload" >&2; exit 2; }
preload=$(realpath "$preload")

out=target/apps
mkdir -p "$out"
src=scripts/apps
flags=(-O2 -g -pthread -Wall -Wextra -Werror)
build() {
    case "$1" in
        sqlite) cc "${flags[@]}" -o "$out/sqlite" "$src/sqlite.c" -lsqlite3 -ldl ;;
        leveldb) c++ "${flags[@]}" -o "$out/leveldb" "$src/leveldb.cc" -lleveldb -ldl ;;
        tchdb) cc "${flags[@]}" -o "$out/tchdb" "$src/tchdb.c" -ltokyocabinet -ldl ;;
        jemalloc) cc "${flags[@]}" -o "$out/jemalloc" "$src/jemalloc.c" -ljemalloc -ldl ;;
    esac
}

# Inputs: verify-only runs take a second or two each, timing runs longer.
if [ $verify_only = 1 ]; then
    declare -A ops=([sqlite]=2000 [leveldb]=20000 [tchdb]=20000 [jemalloc]=50000)
else
    declare -A ops=([sqlite]=50000 [leveldb]=300000 [tchdb]=300000 [jemalloc]=2000000)
fi

# run PROG MODE: runs one driver; sets `result` (ok/FAIL) and `secs`.
run() {
    local p=$1 mode=$2 env=() log="$out/$1.$2.log" db
    [ "$mode" = preload ] && env=(LD_PRELOAD="$preload")
    db="$out/db.$p.$mode"
    rm -rf "$db" "$db.tch"
    local args
    case "$p" in
        sqlite|jemalloc) args=("$threads" "${ops[$p]}") ;;
        leveldb) args=("$db" "$threads" "${ops[$p]}") ;;
        tchdb) args=("$db.tch" "$threads" "${ops[$p]}") ;;
    esac
    local t0 t1 rc=0
    t0=$(date +%s.%N)
    env "${env[@]}" timeout 600 "$out/$p" "${args[@]}" >"$log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    rm -rf "$db" "$db.tch"
    local want="preload: no"
    [ "$mode" = preload ] && want="preload: yes"
    if [ $rc = 0 ] && grep -q '^ok ' "$log" && grep -q "^$want" "$log"; then
        result=ok
    else
        result=FAIL
        echo "apps.sh: $p ($mode) failed (exit $rc); $log:" >&2
        sed 's/^/    /' "$log" >&2
    fi
}

failed=0
rows=()
for p in "${progs[@]}"; do
    build "$p"
    run "$p" plain; r1=$result; s1=$secs
    run "$p" preload; r2=$result; s2=$secs
    [ "$r1" = ok ] && [ "$r2" = ok ] || failed=1
    if [ $verify_only = 1 ]; then
        rows+=("$(printf '| %-9s | %-5s | %-7s | %9s | %11s | %13s |' "$p" "$r1" "$r2" - - -)")
    else
        ratio=$(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.3f", a / b }')
        rows+=("$(printf '| %-9s | %-5s | %-7s | %9.2f | %11.2f | %13.2f |' "$p" "$r1" "$r2" "$s1" "$s2" "$ratio")")
    fi
done

echo
echo "threads $threads; preload $preload; $(nproc) CPUs$([ $verify_only = 1 ] && echo '; --verify-only: no timings')"
echo "| program   | plain | preload | s (plain) | s (preload) | plain/preload |"
echo "|-----------|-------|---------|-----------|-------------|---------------|"
printf '%s\n' "${rows[@]}"
exit $failed
