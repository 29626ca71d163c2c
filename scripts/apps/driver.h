/* Shared by the real-program drivers of scripts/apps.sh: argument parsing, the preload check,
 * failure reporting. Each driver prints one line "ok ..." (exit 0) or "FAIL ..." (exit 1) and a
 * line "preload: yes|no" saying whether kslock_preload_version resolved in the process. */
#ifndef KSLOCK_APPS_DRIVER_H
#define KSLOCK_APPS_DRIVER_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline void driver_preload_line(void) {
    typedef const char *(*version_fn)(void);
    version_fn v = (version_fn)dlsym(RTLD_DEFAULT, "kslock_preload_version");
    if (v != NULL)
        printf("preload: yes (%s)\n", v());
    else
        printf("preload: no\n");
}

static inline void driver_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    driver_preload_line();
    fflush(stdout);
    exit(1);
}

/* argv[i] as a positive integer, or `dflt` when absent. */
static inline long driver_arg(int argc, char **argv, int i, long dflt) {
    if (argc <= i) return dflt;
    long v = strtol(argv[i], NULL, 10);
    if (v <= 0) driver_fail("bad argument %s", argv[i]);
    return v;
}

#ifdef __cplusplus
}
#endif
#endif
