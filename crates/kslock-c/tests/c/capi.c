/* Tests of libkslock's C API (include/kslock.h): return values, errors, timeouts, clocks,
 * exclusion. Run by tests/c_lib.rs against libkslock.so and libkslock.a. */
#include <kslock.h>
#include <pthread.h>
#include <stdint.h>

#include "check.h"

static kslock_mutex_t gm = KSLOCK_MUTEX_INITIALIZER;
static kslock_rwsem_t gs = KSLOCK_RWSEM_INITIALIZER;
static kslock_cond_t gc = KSLOCK_COND_INITIALIZER;

typedef void *(*thread_fn)(void *);
static void *join_one(thread_fn f, void *arg) {
    pthread_t t;
    void *r;
    CHECK_RC(pthread_create(&t, NULL, f, arg), 0);
    CHECK_RC(pthread_join(t, &r), 0);
    return r;
}

TEST(sizes_match_the_library) {
    CHECK(sizeof(kslock_mutex_t) == kslock_mutex_sizeof());
    CHECK(sizeof(kslock_rwsem_t) == kslock_rwsem_sizeof());
    CHECK(sizeof(kslock_cond_t) == kslock_cond_sizeof());
    CHECK(_Alignof(kslock_mutex_t) == 8 && _Alignof(kslock_rwsem_t) == 8);
    CHECK(kslock_version() != NULL && kslock_version()[0] != 0);
}

static void *m_trylock(void *m) { return (void *)(intptr_t)kslock_mutex_trylock(m); }
static void *m_unlock(void *m) { return (void *)(intptr_t)kslock_mutex_unlock(m); }
static void *m_timed_50ms(void *m) {
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 50);
    long long t0 = now_ns(CLOCK_MONOTONIC);
    int rc = kslock_mutex_timedlock(m, CLOCK_MONOTONIC, &ts);
    CHECK(now_ns(CLOCK_MONOTONIC) - t0 >= 50000000LL);
    return (void *)(intptr_t)rc;
}
static void *m_timed_bad(void *m) {
    struct timespec ts = {0, 1000000000L};
    return (void *)(intptr_t)kslock_mutex_timedlock(m, CLOCK_REALTIME, &ts);
}

TEST(mutex_errors) {
    kslock_mutex_t *m = &gm;
    CHECK_RC(kslock_mutex_lock(m), 0);
    CHECK_RC(kslock_mutex_lock(m), EDEADLK);
    CHECK_RC(kslock_mutex_trylock(m), EBUSY);
    CHECK_RC(kslock_mutex_trylock_spin(m), EBUSY);
    CHECK_RC((int)(intptr_t)join_one(m_trylock, m), EBUSY);
    CHECK_RC((int)(intptr_t)join_one(m_unlock, m), EPERM);
    CHECK_RC((int)(intptr_t)join_one(m_timed_50ms, m), ETIMEDOUT);
    CHECK_RC((int)(intptr_t)join_one(m_timed_bad, m), EINVAL);
    struct timespec ts = after_ms(CLOCK_REALTIME, 10);
    CHECK_RC(kslock_mutex_timedlock(m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
    CHECK_RC(kslock_mutex_destroy(m), EBUSY);
    CHECK_RC(kslock_mutex_unlock(m), 0);
    CHECK_RC(kslock_mutex_unlock(m), EPERM);
    /* A free mutex is taken even with a deadline in the past; an invalid timespec is only
     * looked at when the call would block (POSIX). */
    struct timespec past = {0, 0}, bad = {0, -1};
    CHECK_RC(kslock_mutex_timedlock(m, CLOCK_REALTIME, &past), 0);
    CHECK_RC(kslock_mutex_unlock(m), 0);
    CHECK_RC(kslock_mutex_timedlock(m, CLOCK_MONOTONIC, &bad), 0);
    CHECK_RC(kslock_mutex_unlock(m), 0);
    CHECK_RC(kslock_mutex_trylock_spin(m), 0);
    CHECK_RC(kslock_mutex_unlock(m), 0);
    CHECK_RC(kslock_mutex_destroy(m), 0);
    CHECK_RC(kslock_mutex_init(m), 0);
    CHECK_RC(kslock_mutex_lock(NULL), EINVAL);
}

#define THREADS 4
#define ITERS 20000
static long counter;
static void *count_up(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        CHECK_RC(kslock_mutex_lock(&gm), 0);
        long v = counter;
        counter = v + 1;
        CHECK_RC(kslock_mutex_unlock(&gm), 0);
    }
    return NULL;
}

TEST(mutex_excludes) {
    pthread_t t[THREADS];
    counter = 0;
    for (int i = 0; i < THREADS; i++) CHECK_RC(pthread_create(&t[i], NULL, count_up, NULL), 0);
    for (int i = 0; i < THREADS; i++) CHECK_RC(pthread_join(t[i], NULL), 0);
    CHECK(counter == (long)THREADS * ITERS);
}

static void *s_trywrite(void *s) { return (void *)(intptr_t)kslock_rwsem_trywrite(s); }
static void *s_tryread(void *s) { return (void *)(intptr_t)kslock_rwsem_tryread(s); }
static void *s_read_and_release(void *s) {
    int rc = kslock_rwsem_tryread(s);
    if (rc == 0) CHECK_RC(kslock_rwsem_read_unlock(s), 0);
    return (void *)(intptr_t)rc;
}
static void *s_write_unlock(void *s) { return (void *)(intptr_t)kslock_rwsem_write_unlock(s); }
static void *s_timedwrite_30ms(void *s) {
    struct timespec ts = after_ms(CLOCK_REALTIME, 30);
    return (void *)(intptr_t)kslock_rwsem_timedwrite(s, CLOCK_REALTIME, &ts);
}
static void *s_timedread_30ms(void *s) {
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 30);
    return (void *)(intptr_t)kslock_rwsem_timedread(s, CLOCK_MONOTONIC, &ts);
}

TEST(rwsem_errors) {
    kslock_rwsem_t *s = &gs;
    CHECK_RC(kslock_rwsem_read_unlock(s), EPERM);
    CHECK_RC(kslock_rwsem_write_unlock(s), EPERM);
    CHECK_RC(kslock_rwsem_read(s), 0);
    CHECK_RC((int)(intptr_t)join_one(s_read_and_release, s), 0); /* readers share */
    CHECK_RC((int)(intptr_t)join_one(s_trywrite, s), EBUSY);
    CHECK_RC((int)(intptr_t)join_one(s_timedwrite_30ms, s), ETIMEDOUT);
    CHECK_RC(kslock_rwsem_destroy(s), EBUSY);
    CHECK_RC(kslock_rwsem_read_unlock(s), 0);
    CHECK_RC(kslock_rwsem_write(s), 0);
    CHECK_RC(kslock_rwsem_write(s), EDEADLK);
    CHECK_RC(kslock_rwsem_read(s), EDEADLK);
    CHECK_RC(kslock_rwsem_tryread(s), EBUSY);
    CHECK_RC((int)(intptr_t)join_one(s_tryread, s), EBUSY);
    CHECK_RC((int)(intptr_t)join_one(s_timedread_30ms, s), ETIMEDOUT);
    CHECK_RC((int)(intptr_t)join_one(s_write_unlock, s), EPERM);
    CHECK_RC(kslock_rwsem_read_unlock(s), EPERM);
    CHECK_RC(kslock_rwsem_downgrade(s), 0);
    CHECK_RC(kslock_rwsem_downgrade(s), EPERM);
    CHECK_RC((int)(intptr_t)join_one(s_read_and_release, s), 0);
    CHECK_RC((int)(intptr_t)join_one(s_trywrite, s), EBUSY);
    CHECK_RC(kslock_rwsem_read_unlock(s), 0);
    CHECK_RC(kslock_rwsem_trywrite_spin(s), 0);
    CHECK_RC(kslock_rwsem_write_unlock(s), 0);
    struct timespec bad = {0, 1000000000L};
    CHECK_RC(kslock_rwsem_timedwrite(s, CLOCK_MONOTONIC, &bad), 0); /* free: taken */
    CHECK_RC(kslock_rwsem_write_unlock(s), 0);
    CHECK_RC(kslock_rwsem_destroy(s), 0);
}

/* Writers keep a == b; readers check it: a torn state means exclusion failed. */
static struct { long a, b; } pair;
static void *rw_writer(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS / 4; i++) {
        CHECK_RC(kslock_rwsem_write(&gs), 0);
        pair.a++;
        pair.b++;
        CHECK_RC(kslock_rwsem_write_unlock(&gs), 0);
    }
    return NULL;
}
static void *rw_reader(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS / 4; i++) {
        CHECK_RC(kslock_rwsem_read(&gs), 0);
        CHECK(pair.a == pair.b);
        CHECK_RC(kslock_rwsem_read_unlock(&gs), 0);
    }
    return NULL;
}

TEST(rwsem_excludes) {
    pthread_t t[4];
    CHECK_RC(pthread_create(&t[0], NULL, rw_writer, NULL), 0);
    CHECK_RC(pthread_create(&t[1], NULL, rw_writer, NULL), 0);
    CHECK_RC(pthread_create(&t[2], NULL, rw_reader, NULL), 0);
    CHECK_RC(pthread_create(&t[3], NULL, rw_reader, NULL), 0);
    for (int i = 0; i < 4; i++) CHECK_RC(pthread_join(t[i], NULL), 0);
    CHECK(pair.a == ITERS / 2 && pair.b == ITERS / 2);
}

/* A bounded queue of `QN` slots, PRODUCERS producers, one consumer: nothing lost. */
#define QN 8
#define PRODUCERS 3
#define ITEMS 5000
static long queue_len, consumed_sum;
static kslock_cond_t not_empty = KSLOCK_COND_INITIALIZER, not_full = KSLOCK_COND_INITIALIZER;
static void *producer(void *arg) {
    (void)arg;
    for (int i = 1; i <= ITEMS; i++) {
        kslock_mutex_lock(&gm);
        while (queue_len == QN) CHECK_RC(kslock_cond_wait(&not_full, &gm), 0);
        queue_len++;
        consumed_sum += i;
        CHECK_RC(kslock_cond_signal(&not_empty), 0);
        kslock_mutex_unlock(&gm);
    }
    return NULL;
}

TEST(cond_no_lost_wakeups) {
    pthread_t t[PRODUCERS];
    long got = 0;
    consumed_sum = 0;
    for (int i = 0; i < PRODUCERS; i++) CHECK_RC(pthread_create(&t[i], NULL, producer, NULL), 0);
    while (got < (long)PRODUCERS * ITEMS) {
        kslock_mutex_lock(&gm);
        while (queue_len == 0) CHECK_RC(kslock_cond_wait(&not_empty, &gm), 0);
        got += queue_len;
        queue_len = 0;
        CHECK_RC(kslock_cond_broadcast(&not_full), 0);
        kslock_mutex_unlock(&gm);
    }
    for (int i = 0; i < PRODUCERS; i++) CHECK_RC(pthread_join(t[i], NULL), 0);
    CHECK(got == (long)PRODUCERS * ITEMS);
    CHECK(consumed_sum == (long)PRODUCERS * ITEMS * (ITEMS + 1) / 2);
}

static kslock_mutex_t m2 = KSLOCK_MUTEX_INITIALIZER;
static volatile int waiter_ready;
static void *wait_on_gc_with_gm(void *arg) {
    (void)arg;
    kslock_mutex_lock(&gm);
    waiter_ready = 1;
    while (waiter_ready != 2) CHECK_RC(kslock_cond_wait(&gc, &gm), 0);
    kslock_mutex_unlock(&gm);
    return NULL;
}

TEST(cond_errors_and_timeouts) {
    clockid_t clocks[2] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    for (int i = 0; i < 2; i++) {
        kslock_mutex_lock(&gm);
        struct timespec ts = after_ms(clocks[i], 40);
        long long t0 = now_ns(clocks[i]);
        CHECK_RC(kslock_cond_timedwait(&gc, &gm, clocks[i], &ts), ETIMEDOUT);
        CHECK(now_ns(clocks[i]) - t0 >= 40000000LL);
        CHECK_RC(kslock_mutex_trylock(&gm), EBUSY); /* relocked on return */
        struct timespec bad = {ts.tv_sec, -1}, bad2 = {ts.tv_sec, 1000000000L};
        CHECK_RC(kslock_cond_timedwait(&gc, &gm, clocks[i], &bad), EINVAL);
        CHECK_RC(kslock_cond_timedwait(&gc, &gm, clocks[i], &bad2), EINVAL);
        CHECK_RC(kslock_cond_timedwait(&gc, &gm, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
        kslock_mutex_unlock(&gm);
    }
    CHECK_RC(kslock_cond_wait(&gc, &gm), EPERM); /* not holding the mutex */

    /* A waiter with gm is queued: waiting with another mutex is EINVAL, destroy is EBUSY. */
    pthread_t t;
    waiter_ready = 0;
    CHECK_RC(pthread_create(&t, NULL, wait_on_gc_with_gm, NULL), 0);
    for (;;) {
        kslock_mutex_lock(&gm);
        int r = waiter_ready;
        kslock_mutex_unlock(&gm);
        if (r) break;
        sched_yield();
    }
    /* The waiter set `ready` and then waits; it is admitted before it unlocks gm, so once we
     * get gm after seeing `ready` it is inside the wait. */
    kslock_mutex_lock(&gm);
    kslock_mutex_unlock(&gm);
    CHECK_RC(kslock_cond_destroy(&gc), EBUSY);
    kslock_mutex_lock(&m2);
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 1000);
    CHECK_RC(kslock_cond_timedwait(&gc, &m2, CLOCK_MONOTONIC, &ts), EINVAL);
    kslock_mutex_unlock(&m2);
    /* Signalled, the waiter is blocked no more: destroy succeeds at once, while the waiter
     * still waits for gm, which we hold. */
    kslock_mutex_lock(&gm);
    waiter_ready = 2;
    CHECK_RC(kslock_cond_signal(&gc), 0);
    CHECK_RC(kslock_cond_destroy(&gc), 0);
    kslock_mutex_unlock(&gm);
    CHECK_RC(pthread_join(t, NULL), 0);
}

int main(void) {
    RUN(sizes_match_the_library);
    RUN(mutex_errors);
    RUN(mutex_excludes);
    RUN(rwsem_errors);
    RUN(rwsem_excludes);
    RUN(cond_no_lost_wakeups);
    RUN(cond_errors_and_timeouts);
    printf("all passed\n");
    return 0;
}
