/* A waiter cancelled in pthread_cond_wait must hold the mutex when its cleanup handlers run,
 * also when its wait had to contend for the mutex on the way out. Here the waiter's wait ends
 * (a cancellation slice of the preload, or glibc's own cancellation) while main holds the
 * mutex and runs on a CPU for 20 ms, so the waiter's relock contends with a running owner and
 * spins: a spin is the process's first here, and kslock once read a machine fact through an
 * open() there, a cancellation point, so the waiter was cancelled without the mutex. Each
 * round is a fresh process (the program re-executes itself), since that read happened once per
 * process. Prints "all passed". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile int waiting, cleanup_rc = -1;

static void cleanup(void *arg) {
    (void)arg;
    cleanup_rc = pthread_mutex_unlock(&m); /* 0 only if this thread holds it */
}

static void *waiter(void *arg) {
    (void)arg;
    CHECK_RC(pthread_mutex_lock(&m), 0);
    pthread_cleanup_push(cleanup, NULL);
    waiting = 1;
    for (;;) pthread_cond_wait(&c, &m);
    pthread_cleanup_pop(0);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int one_round(void) {
    pthread_t t;
    void *res;
    CHECK_RC(pthread_create(&t, NULL, waiter, NULL), 0);
    for (;;) { /* until the waiter is inside its wait (it released the mutex) */
        CHECK_RC(pthread_mutex_lock(&m), 0);
        if (waiting) break;
        CHECK_RC(pthread_mutex_unlock(&m), 0);
        sched_yield();
    }
    CHECK_RC(pthread_cancel(t), 0);
    double end = now_s() + 0.02;
    while (now_s() < end) { /* hold the mutex, running */ }
    CHECK_RC(pthread_mutex_unlock(&m), 0);
    CHECK_RC(pthread_join(t, &res), 0);
    CHECK(res == PTHREAD_CANCELED);
    CHECK_RC(cleanup_rc, 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--one") == 0) return one_round();
    for (int i = 0; i < 20; i++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s' --one", argv[0]);
        if (system(cmd) != 0) {
            fprintf(stderr, "round %d failed\n", i);
            return 1;
        }
    }
    printf("all passed\n");
    return 0;
}
