/* harness/base/rng.c — see rng.h (the per-number calls are inline there). */
#include "harness/base/rng.h"

void qh_rng_seed(qh_rng *r, uint64_t seed, uint64_t index)
{
    /* Two rounds of mixing keep nearby (seed, index) pairs from sharing a prefix. */
    r->s = seed ^ 0x9e3779b97f4a7c15u;
    r->s = qh_rng_next(r) ^ (index * 0xbf58476d1ce4e5b9u + 0x94d049bb133111ebu);
    (void)qh_rng_next(r);
}
