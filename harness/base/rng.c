/* harness/base/rng.c — see rng.h. */
#include "harness/base/rng.h"

void qh_rng_seed(qh_rng *r, uint64_t seed, uint64_t index)
{
    /* Two rounds of mixing keep nearby (seed, index) pairs from sharing a prefix. */
    r->s = seed ^ 0x9e3779b97f4a7c15u;
    r->s = qh_rng_next(r) ^ (index * 0xbf58476d1ce4e5b9u + 0x94d049bb133111ebu);
    (void)qh_rng_next(r);
}

uint64_t qh_rng_next(qh_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

int64_t qh_rng_range(qh_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1u;
    if (span == 0)
        return (int64_t)qh_rng_next(r);
    return lo + (int64_t)(qh_rng_next(r) % span);
}

int qh_rng_chance(qh_rng *r, int num, int den)
{
    return qh_rng_range(r, 0, den - 1) < num;
}
