/*
 * kslock.h — the Linux kernel's sleeping locks for C (libkslock).
 *
 *   kslock_mutex_t   kernel mutex: optimistic spinning while the owner runs, FIFO sleepers,
 *                    bounded unfairness (handoff), error-checking (EDEADLK / EPERM).
 *   kslock_rwsem_t   kernel rw-semaphore: writer spinning, reader stealing, handoff,
 *                    downgrade.
 *   kslock_cond_t    condition variable for kslock_mutex_t; broadcast requeues waiters onto
 *                    the mutex instead of waking them all at once.
 *
 * All-zero is a valid unlocked object: a static or zero-filled object needs no init call
 * (KSLOCK_*_INITIALIZER are {0}). Functions return 0 or an errno value, as POSIX does:
 * EBUSY (a try-lock failed; destroy of a held lock), ETIMEDOUT, EINVAL (null object,
 * unsupported clock, tv_nsec outside [0, 1e9), a wait on a condvar on which threads are
 * blocked with another mutex), EPERM (unlock of what this thread does not hold), EDEADLK
 * (relock of what this thread holds exclusively). Timed functions take an absolute time on
 * CLOCK_REALTIME or CLOCK_MONOTONIC.
 *
 * Link with -lkslock (shared) or libkslock.a plus -lpthread -ldl -lm -lgcc_s (static).
 * This header is checked against the library by crates/kslock-c/tests/c_lib.rs.
 * License: MIT OR Apache-2.0.
 */
#ifndef KSLOCK_H
#define KSLOCK_H

#include <stddef.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes in bytes; every type is 8-byte aligned. */
#define KSLOCK_MUTEX_SIZE 32
#define KSLOCK_RWSEM_SIZE 48
#define KSLOCK_COND_SIZE 32

typedef union kslock_mutex { unsigned char __opaque[KSLOCK_MUTEX_SIZE]; long long __align; } kslock_mutex_t;
typedef union kslock_rwsem { unsigned char __opaque[KSLOCK_RWSEM_SIZE]; long long __align; } kslock_rwsem_t;
typedef union kslock_cond { unsigned char __opaque[KSLOCK_COND_SIZE]; long long __align; } kslock_cond_t;

#define KSLOCK_MUTEX_INITIALIZER { { 0 } }
#define KSLOCK_RWSEM_INITIALIZER { { 0 } }
#define KSLOCK_COND_INITIALIZER { { 0 } }

/* The library version, a static string. */
const char *kslock_version(void);

/* ---- kslock_mutex_t ------------------------------------------------------------------ */

/* sizeof(kslock_mutex_t) as the library was built (equals KSLOCK_MUTEX_SIZE). */
size_t kslock_mutex_sizeof(void);
/* Initialise unlocked (same as zero-filling). */
int kslock_mutex_init(kslock_mutex_t *m);
/* EBUSY if locked, else 0. */
int kslock_mutex_destroy(kslock_mutex_t *m);
/* Lock; EDEADLK if this thread holds it. */
int kslock_mutex_lock(kslock_mutex_t *m);
/* Lock if free right now, else EBUSY. Never spins or sleeps. */
int kslock_mutex_trylock(kslock_mutex_t *m);
/* Like trylock, but spins (bounded) while the owner runs before failing (seed S3). */
int kslock_mutex_trylock_spin(kslock_mutex_t *m);
/* Lock unless abstime on clockid passes first: 0, ETIMEDOUT, EDEADLK, EINVAL. */
int kslock_mutex_timedlock(kslock_mutex_t *m, clockid_t clockid, const struct timespec *abstime);
/* Unlock; EPERM if this thread does not hold it. */
int kslock_mutex_unlock(kslock_mutex_t *m);

/* ---- kslock_rwsem_t ------------------------------------------------------------------ */

/* sizeof(kslock_rwsem_t) as the library was built (equals KSLOCK_RWSEM_SIZE). */
size_t kslock_rwsem_sizeof(void);
/* Initialise unlocked (same as zero-filling). */
int kslock_rwsem_init(kslock_rwsem_t *s);
/* EBUSY if held, else 0. */
int kslock_rwsem_destroy(kslock_rwsem_t *s);
/* Read lock; waits while a writer holds the lock or waits awake for it (a queued writer
 * that sleeps does not keep readers out until it reserves the lock, within the rwsem's
 * handoff bound). EDEADLK if this thread is the writer. Not recursive: a nested read can
 * deadlock against a waiting writer. */
int kslock_rwsem_read(kslock_rwsem_t *s);
/* Read lock if that needs no wait, else EBUSY. */
int kslock_rwsem_tryread(kslock_rwsem_t *s);
/* Read lock unless abstime on clockid passes first. */
int kslock_rwsem_timedread(kslock_rwsem_t *s, clockid_t clockid, const struct timespec *abstime);
/* Release a read lock; EPERM if the lock is not read-locked. */
int kslock_rwsem_read_unlock(kslock_rwsem_t *s);
/* Write lock; EDEADLK if this thread holds it. */
int kslock_rwsem_write(kslock_rwsem_t *s);
/* Write lock if the lock is entirely free, else EBUSY. */
int kslock_rwsem_trywrite(kslock_rwsem_t *s);
/* Like trywrite, but spins (bounded) while that can pay before failing (seed S3). */
int kslock_rwsem_trywrite_spin(kslock_rwsem_t *s);
/* Write lock unless abstime on clockid passes first. */
int kslock_rwsem_timedwrite(kslock_rwsem_t *s, clockid_t clockid, const struct timespec *abstime);
/* Release the write lock; EPERM if this thread does not hold it. */
int kslock_rwsem_write_unlock(kslock_rwsem_t *s);
/* Turn this thread's write lock into a read lock (no writer in between); EPERM if not the
 * writer. Release it with kslock_rwsem_read_unlock. */
int kslock_rwsem_downgrade(kslock_rwsem_t *s);

/* ---- kslock_cond_t ------------------------------------------------------------------- */

/* sizeof(kslock_cond_t) as the library was built (equals KSLOCK_COND_SIZE). */
size_t kslock_cond_sizeof(void);
/* Initialise with no waiters (same as zero-filling). */
int kslock_cond_init(kslock_cond_t *c);
/* EBUSY while threads are blocked on c, else 0. Threads already signalled may still wait
 * for their mutex (which the caller may hold): it waits until they have left c. */
int kslock_cond_destroy(kslock_cond_t *c);
/* Atomically unlock m and wait for a signal; m is locked again on return. EPERM if this
 * thread does not hold m; EINVAL if threads are blocked on c with another mutex. */
int kslock_cond_wait(kslock_cond_t *c, kslock_mutex_t *m);
/* kslock_cond_wait that gives up when abstime on clockid passes: ETIMEDOUT (m relocked). */
int kslock_cond_timedwait(kslock_cond_t *c, kslock_mutex_t *m, clockid_t clockid,
                          const struct timespec *abstime);
/* Wake the longest waiter, if any. */
int kslock_cond_signal(kslock_cond_t *c);
/* Wake every waiter (one now, the rest as the mutex frees). */
int kslock_cond_broadcast(kslock_cond_t *c);

#ifdef __cplusplus
}
#endif

#endif /* KSLOCK_H */
