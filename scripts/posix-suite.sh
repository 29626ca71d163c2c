#!/usr/bin/env bash
# The Open POSIX Test Suite's pthread mutex, rwlock and condvar tests, plainly (glibc) and under
# LD_PRELOAD=libkslock_preload.so: prints every test whose result differs and a summary.
#
#   scripts/posix-suite.sh [--preload PATH] [--jobs N]
#
# The suite (1.5.2, GPL-2.0) is Debian's source package `posixtestsuite`; it is downloaded into
# target/posix-suite (apt-get source, through a deb-src entry written next to the system's
# Debian sources if none exists), built there and run from there: nothing of it enters the
# tree. Needs root (or sudo) for apt. Each test runs in target/posix-suite/run with a 60 s limit
# (limit() below); the ones that step CLOCK_REALTIME run alone, after the others (SERIAL).
# Every result goes to target/posix-suite/results.txt. Exit status: 1 if a test that passes
# plainly does not pass under the preload, except the differences listed in KNOWN below (each
# explained there); 2 if a test did not build (or for a bad argument); else 0.
set -euo pipefail
cd "$(dirname "$0")/.."

preload=""
jobs=2
while [ $# -gt 0 ]; do
    case "$1" in
        --preload) preload="$2"; shift ;;
        --jobs) jobs="$2"; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "posix-suite.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

# Differences that are not kslock defects (any other test that passes with glibc and not under
# the preload fails the script, and the CI step). Rates: this 2-vCPU guest, 2026-12-02, unless
# dated otherwise.
# - pthread_cond_init/1-2, pthread_cond_init/2-2: step CLOCK_REALTIME past two timed waiters'
#   deadline, unlock, call sched_yield() once and expect both waiters to have run (else they
#   signal both and look once more, after one more yield): a race with the scheduler, lost
#   plainly too (1-2: 4 of 22 plain runs, 2 of 10 under the preload; 2-2: 4 of 20 plain, 1 of
#   20 under the preload). A realtime wait under the preload notices the step at its next
#   slice, not at the step (crates/kslock-c/README.md, "Differences from glibc").
# - pthread_cond_init/1-3: waits on two process-private condvars from a forked child (in
#   shared memory with process-shared mutexes: undefined in POSIX) and fails when one of its
#   two waiters sees the parent's signals and the other does not, which is timing: 5 of 20
#   plain runs, 4 of 20 under the preload (3 of 20 under d95101d's).
# - pthread_cond_init/4-2, pthread_mutex_init/5-3, pthread_mutex_lock/3-1: their signal
#   senders start before their worker has installed its SIGUSR1 handler, so the worker may die
#   of the signal (exit 138), plainly too: 4-2 1 of 10 plain runs, 2 of 10 under the preload;
#   5-3 7 of 20 and 9 of 20; 3-1 3 of 10 and 3 of 10 (plainly 0 of 10 and 7 of 12 minutes
#   apart, `ea1f553`, 2026-11-29; any preload with initial-exec TLS moves it).
# - pthread_cond_signal/1-1: after its first check, signals every 100 us until its other two
#   waiters have run and fails if that took three signals or more: a woken waiter that does not
#   run within 100 us (a loaded machine) fails it plainly too (1 of 2 suite runs here; 0 of 20
#   runs alone, plainly and under the preload).
# - pthread_rwlock_unlock/4-1: unlocking an unlocked rwlock; the test accepts 0 or EINVAL and
#   the preload returns EPERM (POSIX's "may fail" error for it; LTP's current copy of this test
#   reports UNSUPPORTED on Linux).
KNOWN="pthread_cond_init-1-2 pthread_cond_init-1-3 pthread_cond_init-2-2 pthread_cond_init-4-2
    pthread_cond_signal-1-1 pthread_mutex_init-5-3 pthread_mutex_lock-3-1
    pthread_rwlock_unlock-4-1"
KNOWN=$(echo $KNOWN) # one line
# Tests that step CLOCK_REALTIME: they run alone, after the others, so that their step cannot
# expire a realtime deadline of a test running beside them.
SERIAL="pthread_cond_init-1-2 pthread_cond_init-2-2"
# A test's time limit (s). pthread_cond_broadcast/1-2 waits on one condvar with 10,000 threads
# in each of its 24 scenarios and has its own 180 s watchdog: 25-52 s plainly, 45-68 s under
# the preload (its waiters, cancellable, wake every 64 ms at most to test for cancellation:
# crates/kslock-c/README.md, "Differences from glibc").
limit() {
    case $1 in
        pthread_cond_broadcast-1-2) echo 180 ;;
        *) echo 60 ;;
    esac
}

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
# Fresh binaries and outputs: a leftover binary of an older build would run as a test.
rm -rf "$bin" "$out"
mkdir -p "$bin" "$out" "$top/run"
# A test's name is its path under conformance/interfaces, '/' as '-', without '.c'
# (pthread_cond_init/4-2.c: pthread_cond_init-4-2), so no two tests share a binary:
# pthread_mutexattr_gettype/speculative/3-1.c and pthread_rwlock_trywrlock/speculative/3-1.c
# are two tests.
tname() {
    local n=${1#"$src/conformance/interfaces/"}
    n=${n%.c}
    echo "${n//\//-}"
}
build() {
    local f=$1 n
    n=$(tname "$f")
    gcc -w -O1 -D_XOPEN_SOURCE=600 -D_GNU_SOURCE -I "$src/include" -I "$(dirname "$f")" "$f" \
        -o "$bin/$n" -lpthread -lrt -lm 2>/dev/null || echo "posix-suite.sh: $n did not build" >&2
}
export -f tname build
export src bin
sources=$(find "$src/conformance/interfaces" -path '*/pthread_mutex*' -name '[0-9]*-*.c' -o \
    -path '*/pthread_rwlock*' -name '[0-9]*-*.c' -o -path '*/pthread_cond*' -name '[0-9]*-*.c' |
    sort)
xargs -P "$jobs" -I{} bash -c 'build {}' <<<"$sources"
want=$(wc -l <<<"$sources")
names=$(while read -r f; do tname "$f"; done <<<"$sources" | sort -u | wc -l)
built=$(ls "$bin" | wc -l)
if [ "$names" != "$want" ] || [ "$built" != "$want" ]; then
    echo "posix-suite.sh: $want test sources, $names distinct names, $built built" >&2
    exit 2
fi

# Seconds since boot (CLOCK_BOOTTIME, which the clock-stepping tests do not move).
now() { cut -d' ' -f1 /proc/uptime; }
# Runs test $1 plainly and under the preload; prints "name glibc preload glibc-s preload-s"
# (exit statuses and seconds).
one() {
    local b=$1 p r t0 t1 t2 lim
    lim=$(limit "$b")
    mkdir -p "$top/run/$b"
    cd "$top/run/$b"
    t0=$(now)
    timeout -k 10 "$lim" "$bin/$b" >"$out/$b.plain" 2>&1 && p=0 || p=$?
    t1=$(now)
    LD_PRELOAD="$preload" timeout -k 10 "$lim" "$bin/$b" >"$out/$b.preload" 2>&1 && r=0 || r=$?
    t2=$(now)
    echo "$b $p $r $(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.1f %.1f", b - a, c - b }')"
}
export -f now limit one
export top out preload
parallel=$(ls "$bin" | grep -vxF -f <(tr ' ' '\n' <<<"$SERIAL"))
results=$({
    xargs -P "$jobs" -I{} bash -c 'one {}' <<<"$parallel"
    for b in $SERIAL; do one "$b"; done
} 2>/dev/null | sort)
printf '%s\n' "$results" >"$top/results.txt"

name() {
    case $1 in
        0) echo PASS ;; 1) echo FAIL ;; 2) echo UNRESOLVED ;; 4) echo UNSUPPORTED ;;
        5) echo UNTESTED ;; 124) echo TIMEOUT ;; *) echo "exit $1" ;;
    esac
}
# The results in column $1 (2: glibc, 3: the preload) as "N PASS, N FAIL, ...".
tally() {
    awk -v c="$1" '{ print $c }' <<<"$results" | sort -n | uniq -c |
        while read -r n code; do printf '%s %s, ' "$n" "$(name "$code")"; done | sed 's/, $//'
}
bad=0
echo "test | glibc | preload"
while read -r b p r _; do
    [ "$p" = "$r" ] && continue
    note=""
    if [ "$p" = 0 ]; then
        if [[ " $KNOWN " == *" $b "* ]]; then
            note=" (known, see KNOWN)"
        else
            bad=1
            note=" (REGRESSION)"
        fi
    fi
    echo "$b | $(name "$p") | $(name "$r")$note"
done <<<"$results"
echo "slowest under the preload (seconds, glibc / preload):"
# (awk, not head: head closes the pipe early, sort may then die of SIGPIPE, and pipefail would
# end the script there.)
sort -k5 -n -r <<<"$results" | awk 'NR <= 3 { printf "  %s %s / %s\n", $1, $4, $5 }'
total=$(wc -l <<<"$results")
plain_pass=$(awk '$2 == 0' <<<"$results" | wc -l)
pre_pass=$(awk '$3 == 0' <<<"$results" | wc -l)
echo "glibc:   $(tally 2)"
echo "preload: $(tally 3)"
echo "$total tests: $plain_pass pass with glibc, $pre_pass under the preload"
echo "(outputs in $out, every result in $top/results.txt)"
if [ "$bad" = 1 ]; then
    echo "posix-suite.sh: a test that passes with glibc does not under the preload (REGRESSION)"
fi
exit "$bad"
