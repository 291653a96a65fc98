/* testutil.c: shared helpers for the unit tests (see testutil.h). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- exact references */

uint64_t tu_mulmod(uint64_t a, uint64_t b, uint64_t q) {
  return (uint64_t)(((tu_u128)a * b) % q);
}

uint64_t tu_powmod(uint64_t a, uint64_t e, uint64_t q) {
  uint64_t r = 1 % q;
  a %= q;
  for (; e; e >>= 1, a = tu_mulmod(a, a, q))
    if (e & 1) r = tu_mulmod(r, a, q);
  return r;
}

int tu_word_bits(fhjit_radix radix) { return radix == FHJIT_R32 ? 32 : 62; }

uint64_t tu_rinv(fhjit_radix radix, uint64_t q) {
  return tu_powmod((q + 1) / 2, (uint64_t)tu_word_bits(radix), q);
}

uint64_t tu_r2(fhjit_radix radix, uint64_t q) {
  return tu_powmod(2, 2 * (uint64_t)tu_word_bits(radix), q);
}

uint64_t tu_redc(fhjit_radix radix, uint64_t q, tu_u128 t) {
  int w = tu_word_bits(radix);
  uint64_t u0 = tu_mulmod((uint64_t)(t % q), tu_rinv(radix, q), q);
  tu_u128 lo = (t + (((tu_u128)1 << w) - 1)) >> w; /* ceil(t / R) */
  uint64_t l = (uint64_t)lo;
  uint64_t u = l + (uint64_t)(((tu_u128)u0 + q - l % q) % q);
  if (radix == FHJIT_R32 && u >= q) u -= q;
  return u;
}

uint64_t tu_ref(fhjit_radix radix, tu_op op, uint64_t q, uint64_t a, uint64_t b) {
  switch (op) {
  case TU_ADD: return (uint64_t)(((tu_u128)a + b) % q);
  case TU_SUB: return (uint64_t)(((tu_u128)a + 2 * (tu_u128)q - b) % q);
  case TU_NEG: return (q - a % q) % q;
  case TU_ADD_LAZY: return (uint64_t)(((tu_u128)a + b) % (2 * (tu_u128)q));
  case TU_MUL: return tu_redc(radix, q, (tu_u128)a * b);
  case TU_TO_MONT: return tu_redc(radix, q, (tu_u128)a * tu_r2(radix, q));
  case TU_FROM_MONT: return tu_redc(radix, q, a);
  default: return 0;
  }
}

const char *tu_op_name(tu_op op) {
  static const char *const names[] = {"add", "sub", "neg", "add_lazy",
                                      "mul", "to_mont", "from_mont"};
  return (unsigned)op < TU_NUM_OPS ? names[op] : "?";
}

uint64_t tu_lazy(uint64_t *state, uint64_t q) {
  if (tu_below(state, 8) == 0) {
    const uint64_t edges[] = {0, 1, q - 1, q, q + 1, 2 * q - 2, 2 * q - 1};
    return edges[tu_below(state, 7)];
  }
  return tu_below(state, 2 * q);
}

int tu_is_prime_trial(uint64_t n) {
  if (n < 2) return 0;
  if (n % 2 == 0) return n == 2;
  for (uint64_t d = 3; d * d <= n; d += 2)
    if (n % d == 0) return 0;
  return 1;
}

fhjit_type tu_poly(int comps, int nbatch, const int64_t *batch, int64_t rows, int64_t n) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY;
  t.comps = comps;
  t.nbatch = nbatch;
  for (int a = 0; a < nbatch; a++) t.batch[a] = batch[a];
  t.rows = rows;
  t.n = n;
  return t;
}

fhjit_type tu_key(int64_t digits, int64_t rows, int64_t n) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_KEY;
  t.comps = 2;
  t.digits = digits;
  t.rows = rows;
  t.n = n;
  return t;
}

uint64_t tu_word(size_t ws, const void *b, int64_t i) {
  return ws == 4 ? ((const uint32_t *)b)[i] : ((const uint64_t *)b)[i];
}

void tu_set_word(size_t ws, void *b, int64_t i, uint64_t x) {
  if (ws == 4) ((uint32_t *)b)[i] = (uint32_t)x;
  else ((uint64_t *)b)[i] = x;
}

size_t tu_ws(fhjit_radix radix) { return radix == FHJIT_R32 ? 4 : 8; }

int tu_contains(const char *haystack, const char *needle) {
  return haystack && needle && strstr(haystack, needle) != NULL;
}

/* FHJIT_TEST_SAMPLE (testutil.h): read once; "0" or empty is off, so a
 * stage can clear it explicitly; anything else on, said once on stderr so
 * a log shows which cases ran. */
int tu_sampling(void) {
  static int on = -1;
  if (on < 0) {
    const char *v = getenv("FHJIT_TEST_SAMPLE");
    on = v && *v && strcmp(v, "0") != 0;
    if (on) fprintf(stderr, "FHJIT_TEST_SAMPLE=%s: the sampled loop tests run part of their cases\n", v);
  }
  return on;
}

int tu_listed(int i, const int *list, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (list[k] == i) return 1;
  return 0;
}
