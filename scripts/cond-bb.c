/* A bounded buffer on one pthread mutex and two condvars, signalled under the mutex: the
 * classic condvar pattern, for the preload (docs/experiments.md and the condvar module doc,
 * "Signal under the mutex").
 *
 *   cc -O2 -pthread -o target/cond-bb scripts/cond-bb.c
 *   target/cond-bb PRODUCERS CONSUMERS ITEMS
 *   LD_PRELOAD=target/release/libkslock_preload.so target/cond-bb PRODUCERS CONSUMERS ITEMS
 *
 * Producers put ITEMS numbers each through a 64-slot ring; consumers take them until a -1
 * each; both do ~200 additions of work per item outside the mutex. Checks the sum and prints
 * the wall time in seconds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CAP 64
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notempty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER;
static long ring[CAP];
static int head, count;
static long items, total;

static void work(void) {
    volatile int w = 0;
    for (int k = 0; k < 200; k++)
        w += k;
}

static void put(long v) {
    pthread_mutex_lock(&m);
    while (count == CAP)
        pthread_cond_wait(&notfull, &m);
    ring[(head + count) % CAP] = v;
    count++;
    pthread_cond_signal(&notempty);
    pthread_mutex_unlock(&m);
}

static long get(void) {
    pthread_mutex_lock(&m);
    while (count == 0)
        pthread_cond_wait(&notempty, &m);
    long v = ring[head];
    head = (head + 1) % CAP;
    count--;
    pthread_cond_signal(&notfull);
    pthread_mutex_unlock(&m);
    return v;
}

static void *produce(void *arg) {
    (void)arg;
    for (long i = 0; i < items; i++) {
        work();
        put(i);
    }
    return NULL;
}

static void *consume(void *arg) {
    (void)arg;
    long s = 0;
    for (;;) {
        long v = get();
        if (v < 0)
            break;
        work();
        s += v;
    }
    __atomic_fetch_add(&total, s, __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PRODUCERS CONSUMERS ITEMS\n", argv[0]);
        return 2;
    }
    int np = atoi(argv[1]), nc = atoi(argv[2]);
    items = atol(argv[3]);
    if (np < 1 || nc < 1 || np + nc > 256 || items < 1) {
        fprintf(stderr, "PRODUCERS, CONSUMERS >= 1 (256 threads at most), ITEMS >= 1\n");
        return 2;
    }
    pthread_t t[256];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < nc; i++)
        pthread_create(&t[i], NULL, consume, NULL);
    for (int i = 0; i < np; i++)
        pthread_create(&t[nc + i], NULL, produce, NULL);
    for (int i = 0; i < np; i++)
        pthread_join(t[nc + i], NULL);
    for (int i = 0; i < nc; i++)
        put(-1);
    for (int i = 0; i < nc; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (total != (long)np * (items * (items - 1) / 2)) {
        printf("BAD SUM\n");
        return 1;
    }
    printf("%.3f\n", (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
