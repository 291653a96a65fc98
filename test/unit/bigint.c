/* bigint.c: the test-side big integers of bigint.h (schoolbook limb loops
 * with unsigned __int128 carries; no code shared with lib/ir). */
#include "bigint.h"

#include <string.h>

typedef unsigned __int128 u128;

void bi_set(bi *a, uint64_t v) {
  memset(a, 0, sizeof *a);
  a->w[0] = v;
}

int bi_cmp(const bi *a, const bi *b) {
  for (int i = BI_LIMBS - 1; i >= 0; i--)
    if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
  return 0;
}

void bi_add(bi *r, const bi *a, const bi *b) {
  u128 c = 0;
  for (int i = 0; i < BI_LIMBS; i++) {
    c += (u128)a->w[i] + b->w[i];
    r->w[i] = (uint64_t)c;
    c >>= 64;
  }
}

void bi_sub(bi *r, const bi *a, const bi *b) {
  uint64_t borrow = 0;
  for (int i = 0; i < BI_LIMBS; i++) {
    u128 d = (u128)a->w[i] - b->w[i] - borrow;
    r->w[i] = (uint64_t)d;
    borrow = (uint64_t)(d >> 64) ? 1 : 0;
  }
}

void bi_mul_u64(bi *r, const bi *a, uint64_t m) {
  u128 c = 0;
  for (int i = 0; i < BI_LIMBS; i++) {
    c += (u128)a->w[i] * m;
    r->w[i] = (uint64_t)c;
    c >>= 64;
  }
}

uint64_t bi_divmod_u64(bi *q, const bi *a, uint64_t d) {
  u128 rem = 0;
  bi out;
  for (int i = BI_LIMBS - 1; i >= 0; i--) {
    rem = (rem << 64) | a->w[i];
    out.w[i] = (uint64_t)(rem / d);
    rem %= d;
  }
  if (q) *q = out;
  return (uint64_t)rem;
}

uint64_t bi_invmod(uint64_t a, uint64_t m) {
  __int128 r0 = m, r1 = a % m, s0 = 0, s1 = 1;
  while (r1) {
    __int128 k = r0 / r1, t = r0 - k * r1;
    r0 = r1, r1 = t;
    t = s0 - k * s1, s0 = s1, s1 = t;
  }
  return (uint64_t)(s0 < 0 ? s0 + m : s0);
}

void bi_crt(bi *x, const uint64_t *res, const uint64_t *mod, int n) {
  bi m;
  bi_set(x, 0);
  bi_set(&m, 1);
  for (int i = 0; i < n; i++) {
    uint64_t q = mod[i];
    uint64_t xm = bi_divmod_u64(NULL, x, q), mm = bi_divmod_u64(NULL, &m, q);
    uint64_t diff = (res[i] % q + q - xm) % q;
    uint64_t t = (uint64_t)((u128)diff * bi_invmod(mm, q) % q);
    bi step;
    bi_mul_u64(&step, &m, t);
    bi_add(x, x, &step);
    bi_mul_u64(&m, &m, q);
  }
}
