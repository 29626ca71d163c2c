/* pthread_mutex_destroy returns EBUSY while a condvar waiter uses the mutex (glibc's behaviour,
 * checked by glibc's own tst-mutex8 and tst-mutexpi8): while the waiter is blocked in the
 * wait (the mutex itself free), after a broadcast that requeues it onto the mutex, across its
 * timeouts, and before its cancellation; and 0 once it has left. For every mutex kind the
 * preload serves (normal, recursive, error-checking, adaptive, the static initialiser) and for
 * two that glibc serves but kslock's condvar waits on (priority-inheritance, process-shared). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "check.h"

static pthread_mutex_t m;
static pthread_cond_t c;
/* Written under `m`: the waiter is inside its wait whenever the main thread holds `m` and
 * sees `ready` set (the waiter held `m` from setting it until its wait released `m`). */
static int ready, done, timed, timeouts;

static void unlock_m(void *arg) {
    (void)arg;
    CHECK_RC(pthread_mutex_unlock(&m), 0);
}

static void *waiter(void *arg) {
    (void)arg;
    CHECK_RC(pthread_mutex_lock(&m), 0);
    ready = 1;
    pthread_cleanup_push(unlock_m, NULL);
    while (!done) {
        if (timed) {
            struct timespec ts = after_ms(CLOCK_REALTIME, 1);
            int rc = pthread_cond_timedwait(&c, &m, &ts);
            CHECK(rc == 0 || rc == ETIMEDOUT);
            timeouts += rc == ETIMEDOUT;
        } else {
            CHECK_RC(pthread_cond_wait(&c, &m), 0);
        }
    }
    pthread_cleanup_pop(0);
    CHECK_RC(pthread_mutex_unlock(&m), 0);
    return NULL;
}

/* Starts a waiter and returns once it is inside its wait. */
static pthread_t start_waiter(int with_timeouts) {
    pthread_t t;
    ready = done = timeouts = 0;
    timed = with_timeouts;
    CHECK_RC(pthread_create(&t, NULL, waiter, NULL), 0);
    for (;;) {
        CHECK_RC(pthread_mutex_lock(&m), 0);
        int r = ready;
        CHECK_RC(pthread_mutex_unlock(&m), 0);
        if (r)
            return t;
        sched_yield();
    }
}

static void stop_waiter(pthread_t t) {
    CHECK_RC(pthread_mutex_lock(&m), 0);
    done = 1;
    CHECK_RC(pthread_cond_signal(&c), 0);
    CHECK_RC(pthread_mutex_unlock(&m), 0);
    CHECK_RC(pthread_join(t, NULL), 0);
}

/* Held, blocked and requeued waiters, on `m` freshly initialised by the caller; destroys it. */
static void check_blocked_and_requeued(void) {
    CHECK_RC(pthread_mutex_lock(&m), 0);
    CHECK_RC(pthread_mutex_destroy(&m), EBUSY);
    CHECK_RC(pthread_mutex_unlock(&m), 0);

    /* Blocked in the wait; then woken and requeued onto the mutex by broadcasts made while
     * holding it, going back to wait each time: always a user, or holding the mutex. */
    pthread_t t = start_waiter(0);
    CHECK_RC(pthread_mutex_destroy(&m), EBUSY);
    for (int i = 0; i < 20; i++) {
        CHECK_RC(pthread_mutex_lock(&m), 0);
        CHECK_RC(pthread_cond_broadcast(&c), 0);
        CHECK_RC(pthread_mutex_unlock(&m), 0);
        CHECK_RC(pthread_mutex_destroy(&m), EBUSY);
    }
    stop_waiter(t);
    CHECK_RC(pthread_mutex_destroy(&m), 0);
}

/* A waiter whose 1 ms waits time out again and again, on `m` freshly initialised by the
 * caller; destroys it. */
static void check_timeouts(void) {
    pthread_t t = start_waiter(1);
    for (;;) {
        CHECK_RC(pthread_mutex_destroy(&m), EBUSY);
        CHECK_RC(pthread_mutex_lock(&m), 0);
        int n = timeouts;
        CHECK_RC(pthread_mutex_unlock(&m), 0);
        if (n >= 20)
            break;
        sched_yield();
    }
    stop_waiter(t);
    CHECK_RC(pthread_mutex_destroy(&m), 0);
}

/* A waiter cancelled in its wait (its cleanup handler unlocks `m`), on `m` freshly
 * initialised by the caller; destroys it. */
static void check_cancelled(void) {
    void *res;
    pthread_t t = start_waiter(0);
    CHECK_RC(pthread_mutex_destroy(&m), EBUSY);
    CHECK_RC(pthread_cancel(t), 0);
    CHECK_RC(pthread_join(t, &res), 0);
    CHECK(res == PTHREAD_CANCELED);
    CHECK_RC(pthread_mutex_destroy(&m), 0);
}

/* Runs every check on mutexes made by `init`. */
static void check_all(const char *kind, void (*init)(void)) {
    CHECK_RC(pthread_cond_init(&c, NULL), 0);
    init();
    check_blocked_and_requeued();
    init();
    check_timeouts();
    init();
    check_cancelled();
    CHECK_RC(pthread_cond_destroy(&c), 0);
    printf("ok %s\n", kind);
    fflush(stdout);
}

static int attr_type, attr_protocol, attr_pshared;
static void init_attr(void) {
    pthread_mutexattr_t a;
    CHECK_RC(pthread_mutexattr_init(&a), 0);
    CHECK_RC(pthread_mutexattr_settype(&a, attr_type), 0);
    CHECK_RC(pthread_mutexattr_setprotocol(&a, attr_protocol), 0);
    CHECK_RC(pthread_mutexattr_setpshared(&a, attr_pshared), 0);
    CHECK_RC(pthread_mutex_init(&m, &a), 0);
    CHECK_RC(pthread_mutexattr_destroy(&a), 0);
}
static void init_static(void) {
    pthread_mutex_t s = PTHREAD_MUTEX_INITIALIZER;
    m = s;
}

int main(void) {
    static const struct { const char *name; int type, protocol, pshared; } kinds[] = {
        {"normal", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_PROCESS_PRIVATE},
        {"recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_PRIO_NONE, PTHREAD_PROCESS_PRIVATE},
        {"errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_NONE, PTHREAD_PROCESS_PRIVATE},
        {"adaptive", PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_PRIO_NONE, PTHREAD_PROCESS_PRIVATE},
        {"pi-normal", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_INHERIT, PTHREAD_PROCESS_PRIVATE},
        {"pi-errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_INHERIT, PTHREAD_PROCESS_PRIVATE},
        {"pshared-normal", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_PROCESS_SHARED},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        attr_type = kinds[i].type;
        attr_protocol = kinds[i].protocol;
        attr_pshared = kinds[i].pshared;
        check_all(kinds[i].name, init_attr);
    }
    check_all("static initialiser", init_static);
    puts("all passed");
    return 0;
}
