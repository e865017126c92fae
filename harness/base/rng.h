/* harness/base/rng.h — the harness's seeded random numbers: splitmix64, tiny, fast and the
 * same sequence on every machine (no libc random functions), so a seed names the same cases
 * everywhere. The per-number calls are inline: the random-problem generator makes tens of them
 * per problem, and `diff` was 5% slower when they were calls into rng.c. */
#ifndef QMM_HARNESS_RNG_H
#define QMM_HARNESS_RNG_H

#include <stdint.h>

typedef struct qh_rng {
    uint64_t s;
} qh_rng;

/* A stream for (seed, index): problem `index` of a seed can be regenerated on its own. */
void qh_rng_seed(qh_rng *r, uint64_t seed, uint64_t index);

static inline uint64_t qh_rng_next(qh_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (inclusive; lo <= hi). */
static inline int64_t qh_rng_range(qh_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1u;
    if (span == 0)
        return (int64_t)qh_rng_next(r);
    return lo + (int64_t)(qh_rng_next(r) % span);
}

/* 1 with probability num/den. */
static inline int qh_rng_chance(qh_rng *r, int num, int den)
{
    return qh_rng_range(r, 0, den - 1) < num;
}

#endif /* QMM_HARNESS_RNG_H */
