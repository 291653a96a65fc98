/* testutil.c: shared helpers for the unit tests (see testutil.h). */
#include "testutil.h"

uint64_t tu_rand(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

uint64_t tu_below(uint64_t *state, uint64_t bound) {
  if (bound == 0) return 0;
  unsigned __int128 m = (unsigned __int128)tu_rand(state) * bound;
  return (uint64_t)(m >> 64);
}
