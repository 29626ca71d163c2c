/* Tiny assertion helpers for the C tests (always on, whatever NDEBUG says). */
#ifndef KSLOCK_TEST_CHECK_H
#define KSLOCK_TEST_CHECK_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* Checks that an errno-returning call returns `want`, printing both on failure. */
#define CHECK_RC(call, want)                                                           \
    do {                                                                               \
        int rc_ = (call);                                                              \
        if (rc_ != (want)) {                                                           \
            fprintf(stderr, "%s:%d: %s returned %d (%s), want %d (%s)\n", __FILE__,    \
                    __LINE__, #call, rc_, strerror(rc_), (want), strerror(want));      \
            abort();                                                                   \
        }                                                                              \
    } while (0)

static inline long long now_ns(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The absolute time `ms` milliseconds from now on `clk`. */
static inline struct timespec after_ms(clockid_t clk, long ms) {
    long long t = now_ns(clk) + ms * 1000000LL;
    struct timespec ts = {t / 1000000000LL, t % 1000000000LL};
    return ts;
}

#define TEST(name) static void name(void)
#define RUN(name)                                                                      \
    do {                                                                               \
        name();                                                                        \
        printf("ok %s\n", #name);                                                      \
        fflush(stdout);                                                                \
    } while (0)

#endif
