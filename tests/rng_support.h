/* tests/rng_support.h — the seedable generator the randomized tests draw from.
 *
 * Header-only, like cli_support.h: each test executable is one .c file. */
#ifndef QMM_TESTS_RNG_SUPPORT_H
#define QMM_TESTS_RNG_SUPPORT_H

#include <stdint.h>

/* splitmix64: small, seedable, identical everywhere; advances *s. */
static inline uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif /* QMM_TESTS_RNG_SUPPORT_H */
