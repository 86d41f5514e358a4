/* check.h -- the checks of the C tests: count passes and failures, print `N passed, N failed`. */
#ifndef UDC_CHECK_H
#define UDC_CHECK_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static atomic_long checks_passed;
static atomic_long checks_failed;

/* Passes if `cond` holds; else prints where and what. Usable from any thread. */
#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (cond) {                                                                       \
            atomic_fetch_add(&checks_passed, 1);                                          \
        } else {                                                                          \
            atomic_fetch_add(&checks_failed, 1);                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);      \
        }                                                                                 \
    } while (0)

/* Passes if two integers are equal; else prints both. */
#define CHECK_EQ(a, b)                                                                    \
    do {                                                                                  \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                   \
        if (check_a_ == check_b_) {                                                       \
            atomic_fetch_add(&checks_passed, 1);                                          \
        } else {                                                                          \
            atomic_fetch_add(&checks_failed, 1);                                          \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld != %lld)\n", __FILE__, \
                    __LINE__, #a, #b, check_a_, check_b_);                                \
        }                                                                                 \
    } while (0)

/* A string literal as the (name, len) pair the API takes. */
#define S(lit) (lit), (sizeof(lit) - 1)

/* Prints the summary line `<what>: N passed, N failed` and returns the exit status. */
static inline int check_summary(const char *what) {
    long passed = atomic_load(&checks_passed), failed = atomic_load(&checks_failed);
    printf("%s: %ld passed, %ld failed\n", what, passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}

/* A small deterministic random number generator (SplitMix64) for the tests' workloads. */
typedef struct {
    uint64_t state;
} rng;

static inline uint64_t rng_next(rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
