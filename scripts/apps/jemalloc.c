/* jemalloc driver (linked with -ljemalloc, whose arenas, bins and tcache flushes take pthread
 * mutexes): THREADS long-lived threads allocate blocks of mixed sizes, fill them with a
 * pattern, verify and free them, and hand every 8th block to the next thread through a
 * mutex+condvar mailbox (cross-thread frees; a full mailbox is waited on for 1 ms); meanwhile waves of short threads allocate and exit
 * (jemalloc's thread cleanup takes its mutexes in a pthread_key destructor). Verified: every
 * block's pattern, the checksum of all bytes written against the bytes read back, and that
 * jemalloc is the process's allocator.
 * usage: jemalloc THREADS OPS */
#include "driver.h"
#include <pthread.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#define RING 64
#define BOX 16

struct mailbox {
    pthread_mutex_t m;
    pthread_cond_t cv;
    unsigned char *blk[BOX];
    size_t len[BOX];
    int n;
};

static long threads, ops;
static struct mailbox *boxes;
static pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t written, verified;

static size_t size_of(uint64_t r) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    return (r >> 33) % 8 == 0 ? 4096 + (r >> 40) % 60000 : 8 + (r >> 40) % 1024;
}

static uint64_t fill(unsigned char *p, size_t n, uint64_t seed) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(seed + i * 31);
        s += p[i];
    }
    return s;
}

static uint64_t check(const unsigned char *p, size_t n) {
    /* The pattern is p[i] = p[0] + 31 i (mod 256). */
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != (unsigned char)(p[0] + i * 31)) driver_fail("block corrupted at byte %zu", i);
        s += p[i];
    }
    return s;
}

static void post(struct mailbox *b, unsigned char *p, size_t n, uint64_t *mine_verified) {
    pthread_mutex_lock(&b->m);
    if (b->n == BOX) { /* full: give the owner 1 ms to drain it (a timed condvar wait) */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        int rc = 0;
        while (b->n == BOX && rc == 0) rc = pthread_cond_timedwait(&b->cv, &b->m, &ts);
        if (rc != 0 && rc != ETIMEDOUT) driver_fail("pthread_cond_timedwait: %d", rc);
    }
    if (b->n == BOX) { /* still full: free it ourselves */
        pthread_mutex_unlock(&b->m);
        *mine_verified += check(p, n);
        free(p);
        return;
    }
    b->blk[b->n] = p;
    b->len[b->n] = n;
    b->n++;
    pthread_mutex_unlock(&b->m);
}

static uint64_t drain(struct mailbox *b) {
    uint64_t s = 0;
    pthread_mutex_lock(&b->m);
    while (b->n > 0) {
        b->n--;
        s += check(b->blk[b->n], b->len[b->n]);
        free(b->blk[b->n]);
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->m);
    return s;
}

static void *worker(void *arg) {
    long t = (long)arg;
    unsigned char *ring[RING] = {0};
    size_t len[RING] = {0};
    uint64_t w = 0, v = 0;
    for (long i = 0; i < ops; i++) {
        int k = i % RING;
        if (ring[k] != NULL) {
            v += check(ring[k], len[k]);
            free(ring[k]);
        }
        len[k] = size_of((uint64_t)t << 32 | (uint64_t)i);
        ring[k] = malloc(len[k]);
        if (ring[k] == NULL) driver_fail("malloc(%zu)", len[k]);
        w += fill(ring[k], len[k], (uint64_t)(t * 7 + i));
        if (i % 8 == 0) {
            post(&boxes[(t + 1) % threads], ring[k], len[k], &v);
            ring[k] = NULL;
        }
        if (i % 64 == 0) v += drain(&boxes[t]);
    }
    for (int k = 0; k < RING; k++)
        if (ring[k] != NULL) {
            v += check(ring[k], len[k]);
            free(ring[k]);
        }
    pthread_mutex_lock(&sum_lock);
    written += w;
    verified += v;
    pthread_mutex_unlock(&sum_lock);
    return NULL;
}

static void *short_lived(void *arg) {
    long t = (long)arg;
    uint64_t w = 0, v = 0;
    for (int i = 0; i < 32; i++) {
        size_t n = size_of((uint64_t)t * 977 + i);
        unsigned char *p = malloc(n);
        if (p == NULL) driver_fail("malloc");
        w += fill(p, n, (uint64_t)t + i);
        v += check(p, n);
        free(p);
    }
    pthread_mutex_lock(&sum_lock);
    written += w;
    verified += v;
    pthread_mutex_unlock(&sum_lock);
    return NULL;
}

int main(int argc, char **argv) {
    threads = driver_arg(argc, argv, 1, 4);
    ops = driver_arg(argc, argv, 2, 200000);
    int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
        (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
    const char *version = NULL;
    size_t vlen = sizeof version;
    if (mallctl == NULL || mallctl("version", &version, &vlen, NULL, 0) != 0)
        driver_fail("jemalloc is not the allocator");
    boxes = calloc(threads, sizeof *boxes);
    for (long t = 0; t < threads; t++) {
        pthread_mutex_init(&boxes[t].m, NULL);
        pthread_cond_init(&boxes[t].cv, NULL);
    }
    pthread_t th[threads];
    for (long t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t) != 0) driver_fail("pthread_create");
    long waves = ops / 1000 + 1, shorts = 0;
    for (long w = 0; w < waves; w++) {
        pthread_t s[4];
        for (int i = 0; i < 4; i++, shorts++)
            if (pthread_create(&s[i], NULL, short_lived, (void *)shorts) != 0)
                driver_fail("pthread_create");
        for (int i = 0; i < 4; i++) pthread_join(s[i], NULL);
    }
    for (long t = 0; t < threads; t++) pthread_join(th[t], NULL);
    uint64_t rest = 0;
    for (long t = 0; t < threads; t++) rest += drain(&boxes[t]);
    verified += rest;
    if (written != verified)
        driver_fail("checksum: wrote %llu, read back %llu", (unsigned long long)written,
                    (unsigned long long)verified);
    printf("ok jemalloc %s: %ld threads x %ld blocks + %ld short threads, checksum %llu\n", version,
           threads, ops, shorts, (unsigned long long)written);
    driver_preload_line();
    return 0;
}
