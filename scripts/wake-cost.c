// What a handover's pieces cost on this machine (docs/experiments.md, "Wakeups, timers and
// yields"; measured 2026-12-01). No lock involved: one futex word, two or three threads pinned
// to CPUs 0 and 1.
//
//   cc -O2 -pthread -o /tmp/wake-cost scripts/wake-cost.c
//
//   /tmp/wake-cost wake
//       A thread on CPU 0 wakes a thread sleeping in FUTEX_WAIT 2000 times, 200 µs apart:
//       on the idle CPU 1, on CPU 1 while a third thread spins there, and on CPU 0 itself.
//       Prints the waker's FUTEX_WAKE syscall and the time until the wakee runs (p50 / p90
//       / p99, ns): what a wakeup costs the thread that makes it and what it costs the lock
//       that waits for the woken thread.
//   /tmp/wake-cost timer
//       The lateness of a 50 µs FUTEX_WAIT timeout with the default timer slack and with 1 µs
//       (PR_SET_TIMERSLACK), 500 waits each, and the cost of a sched_yield with nothing else
//       to run.
//   /tmp/wake-cost busy
//       A 20-pause loop's ns per iteration on CPU 0, alone and while CPU 1 runs a pause loop
//       or an increment loop: does a busy second vCPU slow the first?
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define N 2000
static double ghz;
static atomic_int word, stop;
static _Atomic unsigned long long ran_at;
static int wakee_cpu, hog_kind;

static unsigned long long now(void) { return __rdtsc(); }
static double mono(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static void pin(int c) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(c, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}
static long futex(atomic_int *a, int op, int v, struct timespec *ts) {
    return syscall(SYS_futex, a, op, v, ts, 0, 0);
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void pct(const char *what, double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    printf("  %-28s p50 %7.0f  p90 %7.0f  p99 %7.0f ns\n", what, v[n / 2], v[n * 9 / 10],
           v[n * 99 / 100]);
}
static void spin_ns(double ns) {
    unsigned long long s = now();
    while ((now() - s) / ghz < ns) _mm_pause();
}

static void *wakee(void *x) {
    (void)x;
    pin(wakee_cpu);
    for (int i = 0; i < N; i++) {
        while (atomic_load(&word) == 0) futex(&word, FUTEX_WAIT_PRIVATE, 0, 0);
        ran_at = now();
        atomic_store(&word, 0);
    }
    return 0;
}
static void *hog(void *x) {
    (void)x;
    pin(1);
    volatile unsigned long sink = 0;
    while (!atomic_load(&stop)) {
        if (hog_kind == 1) _mm_pause();
        else sink++;
    }
    return 0;
}

static void wake_case(const char *name, int cpu, int busy) {
    static double cost[N], lat[N];
    atomic_store(&stop, 0);
    wakee_cpu = cpu;
    hog_kind = 1;
    pthread_t h, t;
    if (busy) pthread_create(&h, 0, hog, 0);
    pthread_create(&t, 0, wakee, 0);
    for (int i = 0; i < N; i++) {
        // The waker must not spin on the wakee's CPU: sleep there, spin elsewhere.
        if (cpu == 0) usleep(200);
        else spin_ns(200000);
        ran_at = 0;
        unsigned long long s = now();
        atomic_store(&word, 1);
        futex(&word, FUTEX_WAKE_PRIVATE, 1, 0);
        cost[i] = (now() - s) / ghz;
        while (ran_at == 0) {
            if (cpu == 0) sched_yield();
            else _mm_pause();
        }
        lat[i] = (ran_at - s) / ghz;
        while (atomic_load(&word)) sched_yield();
    }
    pthread_join(t, 0);
    atomic_store(&stop, 1);
    if (busy) pthread_join(h, 0);
    printf("wakee on %s\n", name);
    pct("waker's FUTEX_WAKE", cost, N);
    pct("wake to run", lat, N);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    double m0 = mono();
    unsigned long long t0 = now();
    usleep(100000);
    ghz = (now() - t0) / ((mono() - m0) * 1e9);
    pin(0);
    if (!strcmp(mode, "wake")) {
        wake_case("the idle CPU 1", 1, 0);
        wake_case("CPU 1, busy with a spinning thread", 1, 1);
        wake_case("the waker's CPU 0", 0, 0);
    } else if (!strcmp(mode, "timer")) {
        static double late[500], y[1000];
        for (int slack = 0; slack < 2; slack++) {
            if (slack) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
            for (int i = 0; i < 500; i++) {
                atomic_int z = 0;
                struct timespec ts = {0, 50000};
                unsigned long long s = now();
                futex(&z, FUTEX_WAIT_PRIVATE, 0, &ts);
                late[i] = (now() - s) / ghz - 50000;
            }
            pct(slack ? "50 µs timeout, 1 µs slack" : "50 µs timeout, default slack", late, 500);
        }
        for (int i = 0; i < 1000; i++) {
            unsigned long long s = now();
            sched_yield();
            y[i] = (now() - s) / ghz;
        }
        pct("sched_yield, nothing to run", y, 1000);
    } else if (!strcmp(mode, "busy")) {
        const char *names[] = {"alone", "CPU 1 pausing", "CPU 1 incrementing"};
        for (int k = 0; k < 3; k++) {
            pthread_t h;
            atomic_store(&stop, 0);
            hog_kind = k;
            if (k) pthread_create(&h, 0, hog, 0);
            double best = 1e18;
            for (int r = 0; r < 3; r++) {
                double s = mono();
                long n = 0;
                while (mono() - s < 0.5)
                    for (int i = 0; i < 1000; i++, n++)
                        for (int j = 0; j < 20; j++) _mm_pause();
                double per = (mono() - s) / n * 1e9;
                if (per < best) best = per;
            }
            atomic_store(&stop, 1);
            if (k) pthread_join(h, 0);
            printf("  20 pauses on CPU 0, %-20s %6.1f ns (best of 3 x 0.5 s)\n", names[k], best);
        }
    } else {
        fprintf(stderr, "usage: %s wake|timer|busy\n", argv[0]);
        return 2;
    }
    return 0;
}
