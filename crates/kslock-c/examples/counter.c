/* libkslock example: threads increment a shared counter under a kslock mutex and hand work
 * items through a condition variable.
 *
 *   cc -I crates/kslock-c/include examples/counter.c -L target/release -lkslock -pthread \
 *      -Wl,-rpath,target/release -o counter && ./counter
 */
#include <kslock.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 100000

static kslock_mutex_t lock = KSLOCK_MUTEX_INITIALIZER; /* all-zero: no init call needed */
static kslock_cond_t done_cv = KSLOCK_COND_INITIALIZER;
static long counter;
static int finished;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        kslock_mutex_lock(&lock);
        counter++;
        kslock_mutex_unlock(&lock);
    }
    kslock_mutex_lock(&lock);
    finished++;
    kslock_cond_signal(&done_cv);
    kslock_mutex_unlock(&lock);
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    kslock_mutex_lock(&lock);
    while (finished < THREADS) kslock_cond_wait(&done_cv, &lock);
    long total = counter;
    kslock_mutex_unlock(&lock);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("kslock %s: counter = %ld (expected %d)\n", kslock_version(), total, THREADS * ITERS);
    return total == (long)THREADS * ITERS ? 0 : 1;
}
