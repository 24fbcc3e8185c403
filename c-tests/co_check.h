/* co_check.h - the assertions of the c-tests/co_*.c tests of corun's C API. */
#ifndef CO_CHECK_H
#define CO_CHECK_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)
/* An int result equal to the expected one (errno values), named on failure. */
#define CHECK_EQ(a, b)                                                                              \
    do {                                                                                            \
        long long a_ = (long long)(a), b_ = (long long)(b);                                         \
        if (a_ != b_) {                                                                             \
            fprintf(stderr, "%s:%d: %s is %lld (%s), expected %lld (%s)\n", __FILE__, __LINE__, #a, \
                    a_, strerror((int)a_), b_, strerror((int)b_));                                  \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

static inline uint64_t co_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#define MS 1000000ull
#endif
