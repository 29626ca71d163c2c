// Two facts of the Linux scheduler that shape kslock's per-thread spread (docs/experiments.md,
// "A yield forfeits the slice"; measured 2026-11-29). No lock involved: threads spin for a
// while and call sched_yield().
//
//   cc -O2 -pthread -o /tmp/sched-yield scripts/sched-yield.c
//
//   /tmp/sched-yield forfeit
//       One thread spins without yielding, two yield every 10 µs; all three on CPU 0 for 1 s.
//       Prints each thread's CPU seconds. Where sched_yield forfeits the rest of the yielder's
//       slice (upstream 79104becf42b "sched/fair: Forfeit vruntime on yield", also backported
//       to the 6.6 / 6.12 stable lines; the development VM's 6.18.44 has it), the non-yielder
//       gets nearly all of the CPU.
//
//   /tmp/sched-yield start THREADS DELAY_MS [futex]
//       THREADS threads start together (poll a start flag, yielding; with "futex", sleep on a
//       futex that one FUTEX_WAKE releases, as a bulk wakeup does), then loop: spin 5 µs,
//       sched_yield. Nobody sleeps after the start. Prints max/min per-thread CPU time over
//       0.4 s starting DELAY_MS after the start: how long the start's placement of the
//       threads on the CPUs lasts when no thread sleeps again.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { MAX_THREADS = 256 };

static atomic_int go, measuring, stop;
static int go_word; // the futex word of the "futex" start
static int use_futex;
static double cpu_s[MAX_THREADS];

static double now(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void spin_for(double s) {
    double t = now(CLOCK_MONOTONIC);
    while (now(CLOCK_MONOTONIC) - t < s) {
    }
}

static void *forfeit_worker(void *arg) {
    long i = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    while (!atomic_load(&stop)) {
        if (i == 0)
            continue; // the non-yielder
        spin_for(10e-6);
        sched_yield();
    }
    cpu_s[i] = now(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

static void *start_worker(void *arg) {
    long i = (long)arg;
    while (!atomic_load(&go)) {
        if (use_futex)
            syscall(SYS_futex, &go_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        else
            sched_yield();
    }
    double c0 = 0;
    int counted = 0;
    while (!atomic_load(&stop)) {
        if (!counted && atomic_load(&measuring)) {
            counted = 1;
            c0 = now(CLOCK_THREAD_CPUTIME_ID);
        }
        spin_for(5e-6);
        sched_yield();
    }
    cpu_s[i] = now(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

static void sleep_s(double s) {
    struct timespec d = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&d, NULL);
}

int main(int argc, char **argv) {
    pthread_t t[MAX_THREADS];
    if (argc >= 2 && !strcmp(argv[1], "forfeit")) {
        for (long i = 0; i < 3; i++)
            pthread_create(&t[i], NULL, forfeit_worker, (void *)i);
        sleep_s(1.0);
        atomic_store(&stop, 1);
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);
        printf("CPU s: non-yielder %.3f, yielders %.3f %.3f\n", cpu_s[0], cpu_s[1], cpu_s[2]);
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "start")) {
        int n = atoi(argv[2]);
        double delay = atof(argv[3]) / 1e3;
        use_futex = argc >= 5 && !strcmp(argv[4], "futex");
        if (n < 1 || n > MAX_THREADS) {
            fprintf(stderr, "THREADS must be 1..%d\n", MAX_THREADS);
            return 2;
        }
        for (long i = 0; i < n; i++)
            pthread_create(&t[i], NULL, start_worker, (void *)i);
        sleep_s(0.05);
        atomic_store(&go, 1);
        __atomic_store_n(&go_word, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &go_word, FUTEX_WAKE_PRIVATE, MAX_THREADS, NULL, NULL, 0);
        sleep_s(delay);
        atomic_store(&measuring, 1);
        sleep_s(0.4);
        atomic_store(&stop, 1);
        double lo = 1e9, hi = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(t[i], NULL);
            lo = cpu_s[i] < lo ? cpu_s[i] : lo;
            hi = cpu_s[i] > hi ? cpu_s[i] : hi;
        }
        printf("%d threads, CPU ms over 0.4 s from %.0f ms: min %.1f max %.1f, max/min %.1f\n", n,
               delay * 1e3, lo * 1e3, hi * 1e3, hi / lo);
        return 0;
    }
    fprintf(stderr, "usage: %s forfeit | start THREADS DELAY_MS [futex]\n", argv[0]);
    return 2;
}
