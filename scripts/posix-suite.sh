#!/usr/bin/env bash
# The Open POSIX Test Suite's pthread mutex, rwlock and condvar tests, plainly (glibc) and under
# LD_PRELOAD=libkslock_preload.so: prints every test whose result differs and a summary.
#
#   scripts/posix-suite.sh [--preload PATH] [--jobs N]
#
# The suite (1.5.2, GPL-2.0) is Debian's source package `posixtestsuite`; it is downloaded into
# target/posix-suite (apt-get source, through a deb-src entry written next to the system's
# Debian sources if none exists), built there and run from there: nothing of it enters the
# tree. Needs root (or sudo) for apt. Each test runs with a 60 s limit, in target/posix-suite/run.
# Exit status: 1 if a test that passes plainly does not pass under the preload, except the
# differences listed in KNOWN below (each explained there); else 0.
set -euo pipefail
cd "$(dirname "$0")/.."

preload=""
jobs=2
while [ $# -gt 0 ]; do
    case "$1" in
        --preload) preload="$2"; shift ;;
        --jobs) jobs="$2"; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "posix-suite.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

# Differences that are not kslock defects:
# - pthread_cond_init/4-2: the test starts signalling its worker before the worker has
#   installed its SIGUSR1 handler; it dies of the signal plainly too (3 of 6 plain runs here).
# - pthread_mutex_lock/3-1: the same race (its signal senders start before its worker installs
#   its handlers); plainly 0 of 10 and 7 of 12 runs on the same machine minutes apart (session
#   43), and any preload with initial-exec TLS moves it (a 96-byte one: 7 of 12).
# - pthread_rwlock_unlock/4-1: unlocking an unlocked rwlock; the test accepts 0 or EINVAL and
#   the preload returns EPERM (POSIX's "may fail" error for it; LTP's current copy of this test
#   reports UNSUPPORTED on Linux).
KNOWN="pthread_cond_init-4-2 pthread_mutex_lock-3-1 pthread_rwlock_unlock-4-1"

if [ -z "$preload" ]; then
    preload=target/release/libkslock_preload.so
    [ -f "$preload" ] || cargo build --release -p kslock-c >&2
fi
[ -f "$preload" ] || { echo "posix-suite.sh: no preload at $preload" >&2; exit 2; }
preload=$(realpath "$preload")

top=target/posix-suite
mkdir -p "$top"
top=$(realpath "$top")
src="$top/posixtestsuite"
if [ ! -d "$src" ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    command -v gcc >/dev/null 2>&1 || $sudo apt-get install -y -q gcc >&2
    if ! (cd "$top" && apt-get source -q --download-only posixtestsuite >&2 2>/dev/null); then
        list=/etc/apt/sources.list.d/kslock-posix-suite-src.sources
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
            $sudo tee "$list" >/dev/null
        $sudo apt-get update -q >&2
        (cd "$top" && apt-get source -q --download-only posixtestsuite >&2)
    fi
    tar -C "$top" -xzf "$top"/posixtestsuite_*.orig.tar.gz
fi

bin="$top/bin"
out="$top/out"
mkdir -p "$bin" "$out" "$top/run"
build() {
    local f=$1 d n
    d=$(dirname "$f")
    n=$(basename "$d")-$(basename "$f" .c)
    gcc -w -O1 -D_XOPEN_SOURCE=600 -D_GNU_SOURCE -I "$src/include" -I "$d" "$f" \
        -o "$bin/$n" -lpthread -lrt -lm 2>/dev/null || echo "posix-suite.sh: $n did not build" >&2
}
export -f build
export src bin
find "$src/conformance/interfaces" -path '*/pthread_mutex*' -name '[0-9]*-*.c' -o \
    -path '*/pthread_rwlock*' -name '[0-9]*-*.c' -o -path '*/pthread_cond*' -name '[0-9]*-*.c' |
    sort | xargs -P "$jobs" -I{} bash -c 'build {}'

one() {
    local b=$1 p r
    mkdir -p "$top/run/$b"
    cd "$top/run/$b"
    timeout 60 "$bin/$b" >"$out/$b.plain" 2>&1 && p=0 || p=$?
    LD_PRELOAD="$preload" timeout 60 "$bin/$b" >"$out/$b.preload" 2>&1 && r=0 || r=$?
    echo "$b $p $r"
}
export -f one
export top out preload
results=$(ls "$bin" | xargs -P "$jobs" -I{} bash -c 'one {}' 2>/dev/null | sort)

name() {
    case $1 in
        0) echo PASS ;; 1) echo FAIL ;; 2) echo UNRESOLVED ;; 4) echo UNSUPPORTED ;;
        5) echo UNTESTED ;; 124) echo TIMEOUT ;; *) echo "exit $1" ;;
    esac
}
bad=0
echo "test | glibc | preload"
while read -r b p r; do
    [ "$p" = "$r" ] && continue
    note=""
    if [ "$p" = 0 ]; then
        if [[ " $KNOWN " == *" $b "* ]]; then note=" (known, see KNOWN)"; else bad=1; fi
    fi
    echo "$b | $(name "$p") | $(name "$r")$note"
done <<<"$results"
total=$(wc -l <<<"$results")
plain_pass=$(awk '$2 == 0' <<<"$results" | wc -l)
pre_pass=$(awk '$3 == 0' <<<"$results" | wc -l)
echo "$total tests: $plain_pass pass with glibc, $pre_pass under the preload (outputs in $out)"
exit "$bad"
