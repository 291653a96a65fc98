/* testutil.h: shared helpers for the Check unit tests: a seeded random
 * generator and the exact big-integer style references they compare to. */
#ifndef FHJIT_TESTUTIL_H
#define FHJIT_TESTUTIL_H
#include <stdint.h>

/* splitmix64: deterministic, seedable. */
uint64_t tu_rand(uint64_t *state);
/* Uniform in [0, bound). */
uint64_t tu_below(uint64_t *state, uint64_t bound);
#endif
