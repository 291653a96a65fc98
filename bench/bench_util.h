/* bench_util.h: the small helpers every standalone benchmark and GPU test
 * program needs (they link only the public library, not the unit tests'
 * support code): a monotonic clock, a seeded splitmix64 generator, the
 * median of samples, and the --json writer. Header-only (one program, one
 * translation unit: its static state is that program's). */
#ifndef FHJIT_BENCH_UTIL_H
#define FHJIT_BENCH_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
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

/* --json FILE: one object per result of {"...", "results": [...]},
 * written and flushed as it is measured, so a run cut short keeps what it
 * measured. The program opens bu_json and writes the head and tail. */
static FILE *bu_json;
static int bu_json_items;

static inline void bu_json_item(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void bu_json_item(const char *fmt, ...) {
  if (!bu_json) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(bu_json, "%s\n  {", bu_json_items++ ? "," : "");
  vfprintf(bu_json, fmt, ap);
  fprintf(bu_json, "}");
  va_end(ap);
  fflush(bu_json);
}

#endif
