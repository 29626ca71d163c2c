/* One hot mutex, held for about 1 ms by each of 4 threads 10 times, one cold mutex that
 * only the main thread takes, and a heap mutex contended lightly. kslock-stat's test runs
 * it and checks that the report names hot_lock first. A fork child takes hot_lock again
 * and exits: it dumps a report of its own. Argument "term": the process ends by SIGTERM;
 * "_exit": by _exit() (both must still dump). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t cold_lock = PTHREAD_MUTEX_INITIALIZER;
static long hot_count, cold_count;

static void hold_for_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

__attribute__((noinline)) static void update_hot(void) {
    pthread_mutex_lock(&hot_lock);
    hold_for_ms(1);
    hot_count++;
    pthread_mutex_unlock(&hot_lock);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 10; i++)
        update_hot();
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 10; i++) {
        pthread_mutex_lock(&cold_lock);
        cold_count++;
        pthread_mutex_unlock(&cold_lock);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        update_hot();
        exit(0);
    }
    int st = 0;
    if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 2;
    printf("hot %ld cold %ld\n", hot_count, cold_count);
    int rc = hot_count == 40 && cold_count == 10 ? 0 : 1;
    fflush(stdout);
    if (strcmp(mode, "term") == 0)
        raise(SIGTERM);
    if (strcmp(mode, "_exit") == 0)
        _exit(rc);
    return rc;
}
