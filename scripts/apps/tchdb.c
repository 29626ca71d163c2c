/* Tokyo Cabinet driver: THREADS threads share one hash database (tchdbsetmutex: Tokyo
 * Cabinet's pthread rwlocks and recursive mutexes) and each stores OPS records, bumps a shared
 * counter record with tchdbaddint, and reads back its records. Verified: every get, the record
 * count, the counter, then an iteration over every record with its value.
 * usage: tchdb PATH THREADS OPS */
#include "driver.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <tcutil.h>
#include <tchdb.h>

static TCHDB *hdb;
static long ops;

static void kv(long t, long i, char *k, char *v) {
    sprintf(k, "k%03ld-%08ld", t, i);
    sprintf(v, "%s=%ld", k, t * 1000003 + i * 7);
}

static void *worker(void *arg) {
    long t = (long)arg;
    char k[48], v[96];
    for (long i = 0; i < ops; i++) {
        kv(t, i, k, v);
        if (!tchdbput2(hdb, k, v)) driver_fail("put: %s", tchdberrmsg(tchdbecode(hdb)));
        if (tchdbaddint(hdb, "counter", 7, 1) == INT_MIN)
            driver_fail("addint: %s", tchdberrmsg(tchdbecode(hdb)));
        if (i % 3 == 0) {
            long j = i / 2;
            kv(t, j, k, v);
            char *got = tchdbget2(hdb, k);
            if (got == NULL || strcmp(got, v) != 0) driver_fail("thread %ld key %ld not read back", t, j);
            free(got);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) driver_fail("usage: tchdb PATH THREADS OPS");
    long threads = driver_arg(argc, argv, 2, 4);
    ops = driver_arg(argc, argv, 3, 20000);
    hdb = tchdbnew();
    if (!tchdbsetmutex(hdb)) driver_fail("setmutex");
    if (!tchdbtune(hdb, threads * ops * 2, -1, -1, 0)) driver_fail("tune");
    if (!tchdbopen(hdb, argv[1], HDBOWRITER | HDBOCREAT | HDBOTRUNC))
        driver_fail("open %s: %s", argv[1], tchdberrmsg(tchdbecode(hdb)));
    pthread_t th[threads];
    for (long t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t) != 0) driver_fail("pthread_create");
    for (long t = 0; t < threads; t++) pthread_join(th[t], NULL);

    uint64_t rnum = tchdbrnum(hdb);
    int sz = 0;
    void *c = tchdbget(hdb, "counter", 7, &sz);
    int counter = (c != NULL && sz == (int)sizeof(int)) ? *(int *)c : -1;
    free(c);
    if (rnum != (uint64_t)(threads * ops + 1) || counter != threads * ops)
        driver_fail("%llu records, counter %d; want %ld, %ld", (unsigned long long)rnum, counter,
                    threads * ops + 1, threads * ops);
    /* Every record once, with its value. */
    char *seen = calloc(threads * ops, 1);
    long n = 0;
    if (!tchdbiterinit(hdb)) driver_fail("iterinit");
    char *k;
    while ((k = tchdbiternext2(hdb)) != NULL) {
        long t, i;
        char kk[48], vv[96];
        if (strcmp(k, "counter") != 0) {
            if (sscanf(k, "k%ld-%ld", &t, &i) != 2 || t < 0 || t >= threads || i < 0 || i >= ops ||
                seen[t * ops + i])
                driver_fail("iteration: unexpected key %s", k);
            seen[t * ops + i] = 1;
            kv(t, i, kk, vv);
            char *v = tchdbget2(hdb, k);
            if (v == NULL || strcmp(v, vv) != 0) driver_fail("iteration: bad value for %s", k);
            free(v);
            n++;
        }
        free(k);
    }
    free(seen);
    if (n != threads * ops) driver_fail("iteration saw %ld records", n);
    if (!tchdbclose(hdb)) driver_fail("close: %s", tchdberrmsg(tchdbecode(hdb)));
    tchdbdel(hdb);
    printf("ok tchdb: %llu records, counter %d, iteration verified\n", (unsigned long long)rnum,
           counter);
    driver_preload_line();
    return 0;
}
