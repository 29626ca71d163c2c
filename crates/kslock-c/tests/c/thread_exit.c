/* Threads that take pthread mutexes in a pthread_key destructor, as jemalloc's thread cleanup
 * does: 20000 short threads, each locking at exit (a first lock there, or a lock after earlier
 * use). Under the preload every such lock is a kslock lock after kslock's own thread-local
 * destructors ran; kslock used to leak one thread record per exit then (the resident memory
 * check catches that). Prints "all passed". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 5000
#define BATCH 4

static pthread_key_t key;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rm = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static long at_exit, during;

static void destructor(void *value) {
    (void)value;
    pthread_mutex_lock(&rm);
    pthread_mutex_lock(&rm);
    pthread_mutex_lock(&m);
    at_exit++;
    pthread_mutex_unlock(&m);
    pthread_mutex_unlock(&rm);
    pthread_mutex_unlock(&rm);
}

/* Resident memory in KiB (a leaked thread record stays resident: kslock writes it). */
static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
    if (f != NULL) fclose(f);
    return kib;
}

static void *body(void *arg) {
    if (arg != NULL) { /* every other thread also locks before it exits */
        pthread_mutex_lock(&m);
        during++;
        pthread_mutex_unlock(&m);
    }
    pthread_setspecific(key, (void *)1);
    return NULL;
}

int main(void) {
    if (pthread_key_create(&key, destructor) != 0) return 1;
    long rss0 = 0;
    for (int r = 0; r < ROUNDS; r++) {
        if (r == ROUNDS / 10) rss0 = rss_kib();
        pthread_t t[BATCH];
        for (int i = 0; i < BATCH; i++)
            if (pthread_create(&t[i], NULL, body, (i & 1) ? (void *)1 : NULL) != 0) {
                perror("pthread_create");
                return 1;
            }
        for (int i = 0; i < BATCH; i++) pthread_join(t[i], NULL);
    }
    pthread_mutex_lock(&m);
    long a = at_exit, d = during;
    pthread_mutex_unlock(&m);
    if (a != (long)ROUNDS * BATCH || d != (long)ROUNDS * BATCH / 2) {
        printf("FAIL: %ld locks at exit, %ld during (want %d, %d)\n", a, d, ROUNDS * BATCH,
               ROUNDS * BATCH / 2);
        return 1;
    }
    /* 18000 leaked records would be several MiB. */
    long grown = rss_kib() - rss0;
    if (grown > 2048) {
        printf("FAIL: resident memory grew by %ld KiB over %d threads\n", grown, ROUNDS * BATCH * 9 / 10);
        return 1;
    }
    printf("%d threads locked in a key destructor (resident memory +%ld KiB); all passed\n",
           ROUNDS * BATCH, grown);
    return 0;
}
