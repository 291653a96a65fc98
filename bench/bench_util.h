/* bench_util.h: the small helpers every standalone benchmark and GPU test
 * program needs (they link only the public library, not the unit tests'
 * support code): a monotonic clock, a seeded splitmix64 generator, and the
 * median of samples. Header-only. */
#ifndef FHJIT_BENCH_UTIL_H
#define FHJIT_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline double bu_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* splitmix64: the next value of the sequence seeded by *state. */
static inline uint64_t bu_splitmix(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* qsort comparison of doubles, ascending. */
static inline int bu_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorts v). */
static inline double bu_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bu_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
