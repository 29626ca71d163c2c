/* Threads created while the creator holds the mutex they all lock first (the shape of
 * stress-ng's `--pthread` stressor): a lock held long, by a running thread, with up to N
 * waiters arriving one by one (mutex module doc of kslock, "The yield gate").
 *
 *   cc -O2 -pthread -o target/create-under-lock scripts/create-under-lock.c
 *   target/create-under-lock [THREADS [SECONDS]]
 *   LD_PRELOAD=$PWD/target/release/libkslock_preload.so target/create-under-lock 1024 1
 *
 * Each round: lock the mutex, create THREADS threads (each stamps its start, locks the mutex,
 * counts itself and unlocks), unlock, join them all. Repeats for SECONDS (default 1). Checks
 * that every thread created ran once; prints threads created per second and the mean time from
 * pthread_create to the thread's first instruction. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long ran; /* under m */

struct slot {
    pthread_t t;
    double created, started;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *body(void *arg) {
    struct slot *s = arg;
    s->started = now();
    pthread_mutex_lock(&m);
    ran++;
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    double secs = argc > 2 ? atof(argv[2]) : 1.0;
    if (n < 1 || secs <= 0) {
        fprintf(stderr, "usage: %s [THREADS >= 1 [SECONDS > 0]]\n", argv[0]);
        return 2;
    }
    struct slot *slots = calloc(n, sizeof *slots);
    if (!slots) return 1;
    double t0 = now(), start_sum = 0;
    long created = 0;
    while (now() - t0 < secs) {
        pthread_mutex_lock(&m);
        int k = 0;
        for (; k < n; k++) {
            slots[k].created = now();
            if (pthread_create(&slots[k].t, NULL, body, &slots[k])) break;
        }
        pthread_mutex_unlock(&m);
        for (int j = 0; j < k; j++) {
            pthread_join(slots[j].t, NULL);
            start_sum += slots[j].started - slots[j].created;
        }
        created += k;
        if (k == 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    }
    double el = now() - t0;
    if (ran != created) {
        fprintf(stderr, "FAIL: %ld threads created, %ld ran\n", created, ran);
        return 1;
    }
    printf("created/s=%.0f mean_start_us=%.1f threads=%ld\n", created / el,
           start_sum / created * 1e6, created);
    return 0;
}
