/* POSIX conformance tests of pthread mutexes, rwlocks and condvars, written from the
 * specification (return values, error numbers, types, static initialisers, timeouts, clocks,
 * cancellation, fallback objects, fork). tests/preload.rs runs this program plainly (glibc must
 * pass it: the checks are the standard's, not kslock's) and under LD_PRELOAD. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

typedef void *(*thread_fn)(void *);
static int in_thread(thread_fn f, void *arg) {
    pthread_t t;
    void *r;
    CHECK_RC(pthread_create(&t, NULL, f, arg), 0);
    CHECK_RC(pthread_join(t, &r), 0);
    return (int)(intptr_t)r;
}
static void *t_trylock(void *m) { return (void *)(intptr_t)pthread_mutex_trylock(m); }
static void *t_unlock(void *m) { return (void *)(intptr_t)pthread_mutex_unlock(m); }
static void *t_timedlock_30ms(void *m) {
    struct timespec ts = after_ms(CLOCK_REALTIME, 30);
    return (void *)(intptr_t)pthread_mutex_timedlock(m, &ts);
}
static void *t_clocklock_30ms(void *m) {
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 30);
    long long t0 = now_ns(CLOCK_MONOTONIC);
    int rc = pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
    CHECK(now_ns(CLOCK_MONOTONIC) - t0 >= 30000000LL);
    return (void *)(intptr_t)rc;
}

static pthread_mutex_t m_default = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t m_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t m_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

TEST(static_recursive_mutex_counts) {
    pthread_mutex_t *m = &m_recursive;
    for (int i = 0; i < 3; i++) CHECK_RC(pthread_mutex_lock(m), 0);
    CHECK_RC(pthread_mutex_trylock(m), 0);
    CHECK_RC(in_thread(t_trylock, m), EBUSY);
    CHECK_RC(in_thread(t_unlock, m), EPERM);
    for (int i = 0; i < 4; i++) {
        CHECK_RC(in_thread(t_trylock, m), EBUSY); /* still held until the 4th unlock */
        CHECK_RC(pthread_mutex_unlock(m), 0);
    }
    CHECK_RC(pthread_mutex_unlock(m), EPERM);
    CHECK_RC(in_thread(t_trylock, m), 0); /* the thread exits holding it: don't reuse */
}

TEST(static_errorcheck_mutex_errors) {
    pthread_mutex_t *m = &m_errorcheck;
    CHECK_RC(pthread_mutex_unlock(m), EPERM);
    CHECK_RC(pthread_mutex_lock(m), 0);
    CHECK_RC(pthread_mutex_lock(m), EDEADLK);
    struct timespec ts = after_ms(CLOCK_REALTIME, 10);
    CHECK_RC(pthread_mutex_timedlock(m, &ts), EDEADLK);
    CHECK_RC(pthread_mutex_trylock(m), EBUSY);
    CHECK_RC(in_thread(t_unlock, m), EPERM);
    CHECK_RC(in_thread(t_timedlock_30ms, m), ETIMEDOUT);
    CHECK_RC(in_thread(t_clocklock_30ms, m), ETIMEDOUT);
    CHECK_RC(pthread_mutex_destroy(m), EBUSY);
    CHECK_RC(pthread_mutex_unlock(m), 0);
    CHECK_RC(pthread_mutex_unlock(m), EPERM);
}

TEST(default_and_adaptive_mutexes) {
    pthread_mutex_t *ms[2] = {&m_default, &m_adaptive};
    for (int i = 0; i < 2; i++) {
        CHECK_RC(pthread_mutex_lock(ms[i]), 0);
        CHECK_RC(pthread_mutex_trylock(ms[i]), EBUSY);
        CHECK_RC(in_thread(t_trylock, ms[i]), EBUSY);
        CHECK_RC(in_thread(t_timedlock_30ms, ms[i]), ETIMEDOUT);
        CHECK_RC(pthread_mutex_unlock(ms[i]), 0);
        CHECK_RC(pthread_mutex_destroy(ms[i]), 0);
        CHECK_RC(pthread_mutex_init(ms[i], NULL), 0);
    }
}

/* glibc lets any thread unlock a normal mutex, and a thread that locks one it holds waits
 * until another thread unlocks it: programs use that as a binary semaphore. Two of them pass
 * a token back and forth; each lock below waits for the other thread's unlock. */
static pthread_mutex_t sem_a = PTHREAD_MUTEX_INITIALIZER, sem_b = PTHREAD_MUTEX_INITIALIZER;
static volatile long sem_count;
#define SEM_ROUNDS 2000
static void *sem_peer(void *arg) {
    (void)arg;
    for (int i = 0; i < SEM_ROUNDS; i++) {
        CHECK_RC(pthread_mutex_lock(&sem_a), 0);   /* wait for the main thread's token */
        sem_count++;
        CHECK_RC(pthread_mutex_unlock(&sem_b), 0); /* held by the main thread */
    }
    return NULL;
}

TEST(normal_mutex_as_a_binary_semaphore) {
    CHECK_RC(pthread_mutex_lock(&sem_a), 0);
    CHECK_RC(pthread_mutex_lock(&sem_b), 0);
    pthread_t t;
    CHECK_RC(pthread_create(&t, NULL, sem_peer, NULL), 0);
    for (int i = 0; i < SEM_ROUNDS; i++) {
        CHECK_RC(pthread_mutex_unlock(&sem_a), 0); /* held by us, then by the peer */
        CHECK_RC(pthread_mutex_lock(&sem_b), 0);   /* we hold it: wait for the peer */
        CHECK(sem_count == i + 1);
    }
    CHECK_RC(pthread_join(t, NULL), 0);
    /* The peer exited holding sem_a; a timed lock of our own hold waits out its timeout. */
    struct timespec ts = after_ms(CLOCK_REALTIME, 20);
    CHECK_RC(pthread_mutex_timedlock(&sem_b, &ts), ETIMEDOUT);
    CHECK_RC(pthread_mutex_unlock(&sem_a), 0);
    CHECK_RC(pthread_mutex_unlock(&sem_b), 0);
}

TEST(mutex_attributes_and_timed_errors) {
    int types[3] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK};
    for (int i = 0; i < 3; i++) {
        pthread_mutexattr_t a;
        pthread_mutex_t m;
        int t;
        CHECK_RC(pthread_mutexattr_init(&a), 0);
        CHECK_RC(pthread_mutexattr_settype(&a, types[i]), 0);
        CHECK_RC(pthread_mutexattr_gettype(&a, &t), 0);
        CHECK(t == types[i]);
        CHECK_RC(pthread_mutex_init(&m, &a), 0);
        CHECK_RC(pthread_mutexattr_destroy(&a), 0);
        CHECK_RC(pthread_mutex_lock(&m), 0);
        if (types[i] != PTHREAD_MUTEX_NORMAL) /* a normal mutex would deadlock */
            CHECK_RC(pthread_mutex_lock(&m), types[i] == PTHREAD_MUTEX_ERRORCHECK ? EDEADLK : 0);
        if (types[i] == PTHREAD_MUTEX_RECURSIVE) CHECK_RC(pthread_mutex_unlock(&m), 0);
        CHECK_RC(in_thread(t_trylock, &m), EBUSY);
        CHECK_RC(pthread_mutex_unlock(&m), 0);
        struct timespec past = {0, 0};
        CHECK_RC(pthread_mutex_timedlock(&m, &past), 0); /* free: taken despite the past */
        CHECK_RC(pthread_mutex_unlock(&m), 0);
        CHECK_RC(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &past), 0);
        CHECK_RC(pthread_mutex_unlock(&m), 0);
        struct timespec ts = after_ms(CLOCK_REALTIME, 10);
        CHECK_RC(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
        CHECK_RC(pthread_mutex_destroy(&m), 0);
    }
}
static void *t_timedlock_bad(void *m) {
    struct timespec bad = {0, -1};
    return (void *)(intptr_t)pthread_mutex_timedlock(m, &bad);
}

TEST(timedlock_invalid_timespec_when_busy) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    CHECK_RC(pthread_mutex_lock(&m), 0);
    CHECK_RC(in_thread(t_timedlock_bad, &m), EINVAL);
    CHECK_RC(pthread_mutex_unlock(&m), 0);
}

#define THREADS 4
#define ITERS 20000
static long counter;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static void *count_up(void *arg) {
    pthread_mutex_t *m = arg;
    for (int i = 0; i < ITERS; i++) {
        CHECK_RC(pthread_mutex_lock(m), 0);
        if (m == &m_recursive) CHECK_RC(pthread_mutex_lock(m), 0);
        counter++;
        if (m == &m_recursive) CHECK_RC(pthread_mutex_unlock(m), 0);
        CHECK_RC(pthread_mutex_unlock(m), 0);
    }
    return NULL;
}

TEST(mutexes_exclude) {
    pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    m_recursive = rec; /* fresh: an earlier test's thread exited holding it */
    pthread_mutex_t *ms[2] = {&count_lock, &m_recursive};
    for (int k = 0; k < 2; k++) {
        pthread_t t[THREADS];
        counter = 0;
        for (int i = 0; i < THREADS; i++) CHECK_RC(pthread_create(&t[i], NULL, count_up, ms[k]), 0);
        for (int i = 0; i < THREADS; i++) CHECK_RC(pthread_join(t[i], NULL), 0);
        CHECK(counter == (long)THREADS * ITERS);
    }
}

/* ---- fallback objects: process-shared, robust, PI ------------------------------------- */

struct shared {
    pthread_mutex_t m;
    pthread_cond_t c;
    int flag;
};

TEST(process_shared_mutex_across_fork_and_shared_cond) {
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    CHECK_RC(pthread_mutexattr_init(&ma), 0);
    CHECK_RC(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_mutex_init(&s->m, &ma), 0);
    CHECK_RC(pthread_condattr_init(&ca), 0);
    CHECK_RC(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_cond_init(&s->c, &ca), 0);
    CHECK_RC(pthread_mutex_lock(&s->m), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(pthread_mutex_trylock(&s->m) == EBUSY ? 0 : 1); /* parent holds it */
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* The process-shared condvar (glibc's) with the process-shared mutex. */
    struct timespec ts = after_ms(CLOCK_REALTIME, 20);
    CHECK_RC(pthread_cond_timedwait(&s->c, &s->m, &ts), ETIMEDOUT);
    CHECK_RC(pthread_cond_signal(&s->c), 0);
    CHECK_RC(pthread_cond_broadcast(&s->c), 0);
    /* ... and never with a private (kslock) mutex. */
    pthread_mutex_t priv = PTHREAD_MUTEX_INITIALIZER;
    (void)priv;
    CHECK_RC(pthread_mutex_unlock(&s->m), 0);
    CHECK_RC(pthread_cond_destroy(&s->c), 0);
    CHECK_RC(pthread_mutex_destroy(&s->m), 0);
    munmap(s, sizeof *s);
}

static pthread_mutex_t robust;
static void *lock_and_exit(void *arg) {
    (void)arg;
    CHECK_RC(pthread_mutex_lock(&robust), 0);
    return NULL;
}

TEST(robust_mutex_reports_a_dead_owner) {
    pthread_mutexattr_t a;
    CHECK_RC(pthread_mutexattr_init(&a), 0);
    CHECK_RC(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
    CHECK_RC(pthread_mutex_init(&robust, &a), 0);
    in_thread(lock_and_exit, NULL);
    CHECK_RC(pthread_mutex_lock(&robust), EOWNERDEAD);
    CHECK_RC(pthread_mutex_consistent(&robust), 0);
    CHECK_RC(pthread_mutex_unlock(&robust), 0);
    CHECK_RC(pthread_mutex_lock(&robust), 0);
    CHECK_RC(pthread_mutex_unlock(&robust), 0);
    CHECK_RC(pthread_mutex_destroy(&robust), 0);
}

static pthread_mutex_t pi_mutex;
static pthread_cond_t pi_cond = PTHREAD_COND_INITIALIZER;
static int pi_flag;
static void *pi_signaller(void *arg) {
    (void)arg;
    CHECK_RC(pthread_mutex_lock(&pi_mutex), 0);
    pi_flag = 1;
    CHECK_RC(pthread_cond_signal(&pi_cond), 0);
    CHECK_RC(pthread_mutex_unlock(&pi_mutex), 0);
    return NULL;
}

TEST(pi_mutex_with_a_private_cond) {
    pthread_mutexattr_t a;
    CHECK_RC(pthread_mutexattr_init(&a), 0);
    CHECK_RC(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
    CHECK_RC(pthread_mutex_init(&pi_mutex, &a), 0);
    CHECK_RC(pthread_mutex_lock(&pi_mutex), 0);
    CHECK_RC(pthread_mutex_trylock(&pi_mutex), EBUSY);
    pthread_t t;
    CHECK_RC(pthread_create(&t, NULL, pi_signaller, NULL), 0);
    while (!pi_flag) CHECK_RC(pthread_cond_wait(&pi_cond, &pi_mutex), 0);
    CHECK_RC(pthread_mutex_unlock(&pi_mutex), 0);
    CHECK_RC(pthread_join(t, NULL), 0);
    CHECK_RC(pthread_mutex_destroy(&pi_mutex), 0);
}

/* ---- rwlocks -------------------------------------------------------------------------- */

static pthread_rwlock_t rw_default = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rw_writer_pref = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static void *t_tryrdlock(void *r) {
    int rc = pthread_rwlock_tryrdlock(r);
    if (rc == 0) CHECK_RC(pthread_rwlock_unlock(r), 0);
    return (void *)(intptr_t)rc;
}
static void *t_trywrlock(void *r) { return (void *)(intptr_t)pthread_rwlock_trywrlock(r); }
static void *t_timedwrlock_30ms(void *r) {
    struct timespec ts = after_ms(CLOCK_REALTIME, 30);
    return (void *)(intptr_t)pthread_rwlock_timedwrlock(r, &ts);
}
static void *t_clockrdlock_30ms(void *r) {
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 30);
    return (void *)(intptr_t)pthread_rwlock_clockrdlock(r, CLOCK_MONOTONIC, &ts);
}
static void *t_wrlock_unlock(void *r) {
    CHECK_RC(pthread_rwlock_wrlock(r), 0);
    CHECK_RC(pthread_rwlock_unlock(r), 0);
    return NULL;
}

TEST(rwlock_errors_and_timeouts) {
    pthread_rwlock_t *r = &rw_default;
    CHECK_RC(pthread_rwlock_rdlock(r), 0);
    CHECK_RC(in_thread(t_tryrdlock, r), 0);
    CHECK_RC(in_thread(t_trywrlock, r), EBUSY);
    CHECK_RC(in_thread(t_timedwrlock_30ms, r), ETIMEDOUT);
    CHECK_RC(pthread_rwlock_unlock(r), 0);
    CHECK_RC(pthread_rwlock_wrlock(r), 0);
    CHECK_RC(pthread_rwlock_wrlock(r), EDEADLK);
    CHECK_RC(pthread_rwlock_rdlock(r), EDEADLK);
    CHECK_RC(in_thread(t_tryrdlock, r), EBUSY);
    CHECK_RC(in_thread(t_clockrdlock_30ms, r), ETIMEDOUT);
    struct timespec bad = {0, 1000000000L};
    CHECK_RC(pthread_rwlock_timedrdlock(r, &bad), EINVAL);
    CHECK_RC(pthread_rwlock_unlock(r), 0);
    CHECK_RC(pthread_rwlock_timedwrlock(r, &bad), EINVAL);
    struct timespec ts = after_ms(CLOCK_REALTIME, 10);
    CHECK_RC(pthread_rwlock_clockwrlock(r, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
    CHECK_RC(pthread_rwlock_destroy(r), 0);
    CHECK_RC(pthread_rwlock_init(r, NULL), 0);
}

static volatile pid_t writer_tid;
static void *t_writer(void *r) {
    writer_tid = gettid();
    CHECK_RC(pthread_rwlock_wrlock(r), 0);
    CHECK_RC(pthread_rwlock_unlock(r), 0);
    return NULL;
}

/* Is thread `tid` of this process blocked in a futex wait? (/proc/<pid>/task/<tid>/syscall
 * starts with the number of the system call a blocked thread is in.) */
static int blocked_in_futex(pid_t tid) {
    char path[64], buf[64] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    int n = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    long nr = -1;
    return n && sscanf(buf, "%ld", &nr) == 1 && nr == SYS_futex;
}

/* Waits until the writer thread sleeps in wrlock on `r`: glibc and kslock both sleep in a futex
 * wait only once the writer is registered as a waiter (kslock: queued, WAITERS set), and the
 * writer thread takes no other lock. */
static void wait_for_writer(void) {
    while (!writer_tid) sched_yield();
    while (!blocked_in_futex(writer_tid)) sched_yield();
}

TEST(rwlock_kinds) {
    /* Default kind: a reader may take a read lock again while a writer waits. */
    pthread_t w;
    writer_tid = 0;
    CHECK_RC(pthread_rwlock_rdlock(&rw_default), 0);
    CHECK_RC(pthread_create(&w, NULL, t_writer, &rw_default), 0);
    wait_for_writer();
    CHECK_RC(pthread_rwlock_rdlock(&rw_default), 0); /* must not deadlock */
    CHECK_RC(pthread_rwlock_unlock(&rw_default), 0);
    CHECK_RC(pthread_rwlock_unlock(&rw_default), 0);
    CHECK_RC(pthread_join(w, NULL), 0);

    /* Writer-nonrecursive kind (static initialiser and attribute): a waiting writer blocks new
     * readers. */
    pthread_rwlock_t attr_pref;
    pthread_rwlockattr_t a;
    CHECK_RC(pthread_rwlockattr_init(&a), 0);
    CHECK_RC(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), 0);
    CHECK_RC(pthread_rwlock_init(&attr_pref, &a), 0);
    pthread_rwlock_t *prefs[2] = {&rw_writer_pref, &attr_pref};
    for (int i = 0; i < 2; i++) {
        writer_tid = 0;
        CHECK_RC(pthread_rwlock_rdlock(prefs[i]), 0);
        CHECK_RC(pthread_create(&w, NULL, t_writer, prefs[i]), 0);
        wait_for_writer();
        CHECK_RC(in_thread(t_tryrdlock, prefs[i]), EBUSY);
        CHECK_RC(pthread_rwlock_unlock(prefs[i]), 0);
        CHECK_RC(pthread_join(w, NULL), 0);
        CHECK_RC(in_thread(t_tryrdlock, prefs[i]), 0);
    }
    in_thread(t_wrlock_unlock, &attr_pref);
    CHECK_RC(pthread_rwlock_destroy(&attr_pref), 0);
}

static struct { long a, b; } pair;
static void *rw_worker(void *arg) {
    int writer = (int)(intptr_t)arg;
    for (int i = 0; i < ITERS / 4; i++) {
        if (writer) {
            CHECK_RC(pthread_rwlock_wrlock(&rw_default), 0);
            pair.a++;
            pair.b++;
        } else {
            CHECK_RC(pthread_rwlock_rdlock(&rw_default), 0);
            CHECK(pair.a == pair.b);
        }
        CHECK_RC(pthread_rwlock_unlock(&rw_default), 0);
    }
    return NULL;
}

TEST(rwlock_excludes) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) CHECK_RC(pthread_create(&t[i], NULL, rw_worker, (void *)(intptr_t)(i < 2)), 0);
    for (int i = 0; i < 4; i++) CHECK_RC(pthread_join(t[i], NULL), 0);
    CHECK(pair.a == ITERS / 2 && pair.b == ITERS / 2);
}

TEST(process_shared_rwlock) {
    pthread_rwlock_t *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(r != MAP_FAILED);
    pthread_rwlockattr_t a;
    CHECK_RC(pthread_rwlockattr_init(&a), 0);
    CHECK_RC(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
    CHECK_RC(pthread_rwlock_init(r, &a), 0);
    CHECK_RC(pthread_rwlock_wrlock(r), 0);
    pid_t pid = fork();
    if (pid == 0) _exit(pthread_rwlock_tryrdlock(r) == EBUSY ? 0 : 1);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_RC(pthread_rwlock_unlock(r), 0);
    CHECK_RC(pthread_rwlock_destroy(r), 0);
    munmap(r, sizeof *r);
}

/* A thread that exits holding a lock leaves it held for ever; destroying it is undefined in
 * POSIX, and glibc lets it succeed (the Open POSIX Test Suite's timedrdlock/6-2 relies on
 * that). */
static void *t_rdlock_exit(void *r) { return (void *)(intptr_t)pthread_rwlock_rdlock(r); }
static void *t_wrlock_exit(void *r) { return (void *)(intptr_t)pthread_rwlock_wrlock(r); }

TEST(rwlock_destroy_while_held_by_an_exited_thread) {
    thread_fn lockers[2] = {t_rdlock_exit, t_wrlock_exit};
    for (int i = 0; i < 2; i++) {
        pthread_rwlock_t r;
        CHECK_RC(pthread_rwlock_init(&r, NULL), 0);
        CHECK_RC(in_thread(lockers[i], &r), 0);
        CHECK_RC(pthread_rwlock_trywrlock(&r), EBUSY);
        CHECK_RC(pthread_rwlock_destroy(&r), 0);
    }
}

/* ---- condvars ------------------------------------------------------------------------- */

static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static long qlen, qsum;
#define QN 8
#define PRODUCERS 3
#define ITEMS 5000
static void *producer(void *arg) {
    (void)arg;
    for (int i = 1; i <= ITEMS; i++) {
        CHECK_RC(pthread_mutex_lock(&qm), 0);
        while (qlen == QN) CHECK_RC(pthread_cond_wait(&not_full, &qm), 0);
        qlen++;
        qsum += i;
        CHECK_RC(pthread_cond_signal(&not_empty), 0);
        CHECK_RC(pthread_mutex_unlock(&qm), 0);
    }
    return NULL;
}

TEST(cond_no_lost_wakeups) {
    pthread_t t[PRODUCERS];
    long got = 0;
    for (int i = 0; i < PRODUCERS; i++) CHECK_RC(pthread_create(&t[i], NULL, producer, NULL), 0);
    while (got < (long)PRODUCERS * ITEMS) {
        CHECK_RC(pthread_mutex_lock(&qm), 0);
        while (qlen == 0) CHECK_RC(pthread_cond_wait(&not_empty, &qm), 0);
        got += qlen;
        qlen = 0;
        CHECK_RC(pthread_cond_broadcast(&not_full), 0);
        CHECK_RC(pthread_mutex_unlock(&qm), 0);
    }
    for (int i = 0; i < PRODUCERS; i++) CHECK_RC(pthread_join(t[i], NULL), 0);
    CHECK(got == (long)PRODUCERS * ITEMS && qsum == (long)PRODUCERS * ITEMS * (ITEMS + 1) / 2);
}

TEST(cond_clocks_timeouts_and_einval) {
    pthread_condattr_t a;
    pthread_cond_t c_mono, c_real = PTHREAD_COND_INITIALIZER;
    clockid_t clk;
    CHECK_RC(pthread_condattr_init(&a), 0);
    CHECK_RC(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
    CHECK_RC(pthread_condattr_getclock(&a, &clk), 0);
    CHECK(clk == CLOCK_MONOTONIC);
    CHECK_RC(pthread_cond_init(&c_mono, &a), 0);
    pthread_mutex_t em = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    CHECK_RC(pthread_mutex_lock(&em), 0);
    struct { pthread_cond_t *c; clockid_t clk; } cases[2] = {{&c_mono, CLOCK_MONOTONIC}, {&c_real, CLOCK_REALTIME}};
    for (int i = 0; i < 2; i++) {
        struct timespec ts = after_ms(cases[i].clk, 40);
        long long t0 = now_ns(cases[i].clk);
        CHECK_RC(pthread_cond_timedwait(cases[i].c, &em, &ts), ETIMEDOUT);
        CHECK(now_ns(cases[i].clk) - t0 >= 40000000LL);
        CHECK_RC(pthread_mutex_lock(&em), EDEADLK); /* held again after the timeout */
        struct timespec past = {1, 0};
        CHECK_RC(pthread_cond_timedwait(cases[i].c, &em, &past), ETIMEDOUT);
        struct timespec bad = {ts.tv_sec, 1000000000L}, bad2 = {ts.tv_sec, -1};
        CHECK_RC(pthread_cond_timedwait(cases[i].c, &em, &bad), EINVAL);
        CHECK_RC(pthread_cond_timedwait(cases[i].c, &em, &bad2), EINVAL);
        ts = after_ms(cases[i].clk, 20);
        CHECK_RC(pthread_cond_clockwait(cases[i].c, &em, cases[i].clk, &ts), ETIMEDOUT);
    }
    CHECK_RC(pthread_mutex_unlock(&em), 0);
    CHECK_RC(pthread_cond_wait(&c_real, &em), EPERM); /* errorcheck mutex not held */
    CHECK_RC(pthread_cond_destroy(&c_mono), 0);
    CHECK_RC(pthread_cond_destroy(&c_real), 0);
}

/* Cancellation: a waiter cancelled in pthread_cond_wait holds the mutex when its cleanup
 * handler runs. */
static pthread_mutex_t cm = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t cc = PTHREAD_COND_INITIALIZER;
static volatile int cleanup_rc = -1, cancel_ready;
static void cleanup(void *arg) {
    (void)arg;
    cleanup_rc = pthread_mutex_unlock(&cm); /* 0 only if this thread holds it */
}
static void *cancel_waiter(void *arg) {
    int timed = (int)(intptr_t)arg;
    CHECK_RC(pthread_mutex_lock(&cm), 0);
    pthread_cleanup_push(cleanup, NULL);
    cancel_ready = 1;
    for (;;) {
        if (timed) {
            struct timespec ts = after_ms(CLOCK_REALTIME, 60000);
            pthread_cond_timedwait(&cc, &cm, &ts);
        } else {
            pthread_cond_wait(&cc, &cm);
        }
    }
    pthread_cleanup_pop(0);
    return NULL;
}

TEST(cond_wait_is_a_cancellation_point) {
    for (int timed = 0; timed < 2; timed++) {
        pthread_t t;
        void *res;
        cancel_ready = 0;
        cleanup_rc = -1;
        CHECK_RC(pthread_create(&t, NULL, cancel_waiter, (void *)(intptr_t)timed), 0);
        while (!cancel_ready) sched_yield();
        CHECK_RC(pthread_mutex_lock(&cm), 0); /* the waiter is inside the wait */
        CHECK_RC(pthread_mutex_unlock(&cm), 0);
        CHECK_RC(pthread_cancel(t), 0);
        CHECK_RC(pthread_join(t, &res), 0);
        CHECK(res == PTHREAD_CANCELED);
        CHECK_RC(cleanup_rc, 0);
        CHECK_RC(pthread_mutex_trylock(&cm), 0); /* the cleanup released it */
        CHECK_RC(pthread_mutex_unlock(&cm), 0);
        /* The cancelled wait left the condvar: it can be destroyed at once. */
        CHECK_RC(pthread_cond_destroy(&cc), 0);
        CHECK_RC(pthread_cond_init(&cc, NULL), 0);
    }
}

/* Returns holding `m` once `*count` (incremented under `m` by each waiter before its wait)
 * reaches `n`: every waiter is then inside its wait, having released `m`. */
static void lock_when_all_wait(pthread_mutex_t *m, const int *count, int n) {
    for (;;) {
        CHECK_RC(pthread_mutex_lock(m), 0);
        if (*count == n) return;
        CHECK_RC(pthread_mutex_unlock(m), 0);
        sched_yield();
    }
}

/* Destroy right after a broadcast: no thread is blocked on the condvar any more, so POSIX
 * lets it be destroyed (and its memory reused) while the woken threads still wait for the
 * mutex, here held by the destroying thread. Half the waiters use timed waits; the second
 * round uses a priority-inheritance mutex (glibc's under the preload). The condvar's bytes
 * are overwritten after the destroy: no waiter may touch them afterwards. */
#define DB_N 4
static struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    int waiting, go, done;
} db;
static void *db_waiter(void *arg) {
    int timed = (int)(intptr_t)arg;
    CHECK_RC(pthread_mutex_lock(&db.m), 0);
    db.waiting++;
    while (!db.go) {
        if (timed) {
            struct timespec ts = after_ms(CLOCK_REALTIME, 60000);
            CHECK_RC(pthread_cond_timedwait(&db.c, &db.m, &ts), 0);
        } else {
            CHECK_RC(pthread_cond_wait(&db.c, &db.m), 0);
        }
    }
    db.done++;
    CHECK_RC(pthread_mutex_unlock(&db.m), 0);
    return NULL;
}

TEST(cond_destroy_right_after_broadcast) {
    for (int pi = 0; pi < 2; pi++) {
        pthread_mutexattr_t ma;
        CHECK_RC(pthread_mutexattr_init(&ma), 0);
        if (pi) CHECK_RC(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT), 0);
        CHECK_RC(pthread_mutex_init(&db.m, &ma), 0);
        CHECK_RC(pthread_cond_init(&db.c, NULL), 0);
        db.waiting = db.go = db.done = 0;
        pthread_t t[DB_N];
        for (int i = 0; i < DB_N; i++)
            CHECK_RC(pthread_create(&t[i], NULL, db_waiter, (void *)(intptr_t)(i & 1)), 0);
        lock_when_all_wait(&db.m, &db.waiting, DB_N);
        db.go = 1;
        CHECK_RC(pthread_cond_broadcast(&db.c), 0);
        CHECK_RC(pthread_cond_destroy(&db.c), 0);
        memset(&db.c, 0x5a, sizeof db.c);
        CHECK_RC(pthread_mutex_unlock(&db.m), 0);
        for (int i = 0; i < DB_N; i++) CHECK_RC(pthread_join(t[i], NULL), 0);
        CHECK(db.done == DB_N);
        for (size_t i = 0; i < sizeof db.c; i++) CHECK(((unsigned char *)&db.c)[i] == 0x5a);
        CHECK_RC(pthread_mutex_destroy(&db.m), 0);
        CHECK_RC(pthread_mutexattr_destroy(&ma), 0);
    }
}

/* After a broadcast the woken threads wait for their mutex, no longer on the condvar: each
 * may go on to wait on the same condvar with another mutex at once, while the others are
 * still waiting for the first mutex (the Open POSIX Test Suite's pthread_cond_timedwait/2-5).
 * Cancellation is disabled in the waiters so that no wait runs in slices. */
#define NM_N 4
static struct {
    pthread_mutex_t m1, m2;
    pthread_cond_t c;
    int waiting, go, second, done;
} nm = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0};
static void *nm_waiter(void *arg) {
    (void)arg;
    CHECK_RC(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL), 0);
    CHECK_RC(pthread_mutex_lock(&nm.m1), 0);
    nm.waiting++;
    while (!nm.go) CHECK_RC(pthread_cond_wait(&nm.c, &nm.m1), 0);
    CHECK_RC(pthread_mutex_unlock(&nm.m1), 0);
    CHECK_RC(pthread_mutex_lock(&nm.m2), 0);
    nm.second++;
    while (nm.go < 2) CHECK_RC(pthread_cond_wait(&nm.c, &nm.m2), 0);
    nm.done++;
    CHECK_RC(pthread_mutex_unlock(&nm.m2), 0);
    return NULL;
}

TEST(cond_new_mutex_right_after_broadcast) {
    for (int round = 0; round < 20; round++) {
        pthread_t t[NM_N];
        nm.waiting = nm.go = nm.second = nm.done = 0;
        for (int i = 0; i < NM_N; i++)
            CHECK_RC(pthread_create(&t[i], NULL, nm_waiter, NULL), 0);
        lock_when_all_wait(&nm.m1, &nm.waiting, NM_N);
        nm.go = 1;
        CHECK_RC(pthread_cond_broadcast(&nm.c), 0);
        CHECK_RC(pthread_mutex_unlock(&nm.m1), 0);
        lock_when_all_wait(&nm.m2, &nm.second, NM_N);
        nm.go = 2;
        CHECK_RC(pthread_cond_broadcast(&nm.c), 0);
        CHECK_RC(pthread_mutex_unlock(&nm.m2), 0);
        for (int i = 0; i < NM_N; i++) CHECK_RC(pthread_join(t[i], NULL), 0);
        CHECK(nm.done == NM_N);
    }
}

/* ---- fork ----------------------------------------------------------------------------- */

static pthread_mutex_t atfork_m = PTHREAD_MUTEX_INITIALIZER;
static int prepared, in_parent, in_child;
static void prepare(void) { pthread_mutex_lock(&atfork_m); prepared++; }
static void parent(void) { in_parent++; pthread_mutex_unlock(&atfork_m); }
static void child(void) { in_child++; pthread_mutex_unlock(&atfork_m); }
static void *hold_briefly(void *arg) {
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(arg);
        pthread_mutex_unlock(arg);
    }
    return NULL;
}

TEST(fork_child_can_use_free_locks) {
    static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
    static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
    static pthread_cond_t fc = PTHREAD_COND_INITIALIZER;
    CHECK_RC(pthread_atfork(prepare, parent, child), 0);
    pthread_t t;
    CHECK_RC(pthread_create(&t, NULL, hold_briefly, &busy), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int ok = in_child == 1 && prepared == 1;
        ok &= pthread_mutex_lock(&atfork_m) == 0 && pthread_mutex_unlock(&atfork_m) == 0;
        ok &= pthread_rwlock_wrlock(&rw) == 0 && pthread_rwlock_unlock(&rw) == 0;
        ok &= pthread_mutex_lock(&count_lock) == 0;
        struct timespec ts = after_ms(CLOCK_REALTIME, 5);
        ok &= pthread_cond_timedwait(&fc, &count_lock, &ts) == ETIMEDOUT;
        ok &= pthread_mutex_unlock(&count_lock) == 0;
        _exit(ok ? 0 : 1);
    }
    CHECK_RC(pthread_join(t, NULL), 0);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(in_parent == 1);
}

int main(void) {
    RUN(static_recursive_mutex_counts);
    RUN(static_errorcheck_mutex_errors);
    RUN(default_and_adaptive_mutexes);
    RUN(normal_mutex_as_a_binary_semaphore);
    RUN(mutex_attributes_and_timed_errors);
    RUN(timedlock_invalid_timespec_when_busy);
    RUN(mutexes_exclude);
    RUN(process_shared_mutex_across_fork_and_shared_cond);
    RUN(robust_mutex_reports_a_dead_owner);
    RUN(pi_mutex_with_a_private_cond);
    RUN(rwlock_errors_and_timeouts);
    RUN(rwlock_kinds);
    RUN(rwlock_excludes);
    RUN(process_shared_rwlock);
    RUN(rwlock_destroy_while_held_by_an_exited_thread);
    RUN(cond_no_lost_wakeups);
    RUN(cond_clocks_timeouts_and_einval);
    RUN(cond_wait_is_a_cancellation_point);
    RUN(cond_destroy_right_after_broadcast);
    RUN(cond_new_mutex_right_after_broadcast);
    RUN(fork_child_can_use_free_locks);
    printf("all passed\n");
    return 0;
}
