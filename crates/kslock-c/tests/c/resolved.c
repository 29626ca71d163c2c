/* Checks at run time that pthread_mutex_lock (and its siblings) resolved into
 * libkslock_preload.so. Exit 0: they did; 1: they did not (a plain run). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int from_preload(const char *what, void *addr) {
    Dl_info info;
    int yes = addr != NULL && dladdr(addr, &info) && info.dli_fname != NULL &&
              strstr(info.dli_fname, "libkslock_preload") != NULL;
    printf("%s -> %s\n", what, yes ? info.dli_fname : "not the preload");
    return yes;
}

int main(void) {
    int n = 0;
    n += from_preload("pthread_mutex_lock (linked)", (void *)&pthread_mutex_lock);
    n += from_preload("pthread_mutex_lock", dlsym(RTLD_DEFAULT, "pthread_mutex_lock"));
    n += from_preload("pthread_rwlock_wrlock", dlsym(RTLD_DEFAULT, "pthread_rwlock_wrlock"));
    /* The program's own reference is versioned (pthread_cond_wait@GLIBC_2.3.2); the preload's
     * unversioned definition satisfies it. */
    n += from_preload("pthread_cond_wait (linked)", (void *)&pthread_cond_wait);
    const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "kslock_preload_version");
    if (version != NULL) printf("kslock_preload_version() = %s\n", version());
    if (n == 4 && version != NULL) {
        printf("preloaded\n");
        return 0;
    }
    printf("%s\n", n == 0 && version == NULL ? "not preloaded" : "partly preloaded");
    return n == 0 ? 1 : 2;
}
