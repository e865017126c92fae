/* harness/base/rng.h — the harness's seeded random numbers: splitmix64, tiny, fast and the
 * same sequence on every machine (no libc random functions), so a seed names the same cases
 * everywhere. */
#ifndef QMM_HARNESS_RNG_H
#define QMM_HARNESS_RNG_H

#include <stdint.h>

typedef struct qh_rng {
    uint64_t s;
} qh_rng;

/* A stream for (seed, index): problem `index` of a seed can be regenerated on its own. */
void qh_rng_seed(qh_rng *r, uint64_t seed, uint64_t index);
uint64_t qh_rng_next(qh_rng *r);
/* Uniform in [lo, hi] (inclusive; lo <= hi). */
int64_t qh_rng_range(qh_rng *r, int64_t lo, int64_t hi);
/* 1 with probability num/den. */
int qh_rng_chance(qh_rng *r, int num, int den);

#endif /* QMM_HARNESS_RNG_H */
