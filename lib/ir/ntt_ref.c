/* ntt_ref.c: the reference NTT of SPEC section 5, one row at a time. Written
 * as the SPEC text reads (stage loop, butterfly loop, index formulas), with
 * no regrouping, so it can serve as the oracle for the generated kernels. */
#include <stdlib.h>

#include "ir/ntt.h"

/* lazyadd(a, b) = a + b, minus 2q if >= 2q (SPEC section 5). */
static inline uint64_t lazyadd(const ir_modulus *m, uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  if (s >= 2 * m->q) s -= 2 * m->q;
  return s;
}

void ir_ntt_forward(const ir_modulus *m, int log_n, const uint64_t *fwd,
                    uint64_t *x) {
  const uint64_t n = UINT64_C(1) << log_n;
  for (int s = 0; s < log_n; s++) {
    const uint64_t t = n >> (s + 1);
    for (uint64_t j = 0; j < n / 2; j++) {
      uint64_t g = j / t;
      uint64_t lo = 2 * g * t + j % t, hi = lo + t;
      uint64_t w = fwd[(UINT64_C(1) << s) + g];
      uint64_t p = ir_mod_mul(m, w, x[hi]);
      uint64_t old_lo = x[lo];
      x[lo] = lazyadd(m, old_lo, p);
      x[hi] = lazyadd(m, old_lo, 2 * m->q - p);
    }
  }
}

void ir_ntt_inverse(const ir_modulus *m, int log_n, const uint64_t *inv,
                    uint64_t *x) {
  const uint64_t n = UINT64_C(1) << log_n;
  for (int s = 0; s < log_n; s++) {
    const uint64_t t = UINT64_C(1) << s;
    for (uint64_t j = 0; j < n / 2; j++) {
      uint64_t g = j / t;
      uint64_t lo = 2 * g * t + j % t, hi = lo + t;
      uint64_t w = inv[(n >> (s + 1)) + g];
      uint64_t old_lo = x[lo], old_hi = x[hi];
      x[lo] = lazyadd(m, old_lo, old_hi);
      x[hi] = ir_mod_mul(m, w, lazyadd(m, old_lo, 2 * m->q - old_hi));
    }
  }
}

void ir_ntt_row(ir_ntt_kind kind, const ir_modulus *m, uint64_t n_inv_r,
                int log_n, const uint64_t *table, uint64_t *x) {
  const uint64_t n = UINT64_C(1) << log_n;
  switch (kind) {
  case IR_NTT_STD_TO_NTT:
    for (uint64_t i = 0; i < n; i++) x[i] = ir_mod_to_mont(m, x[i]);
    ir_ntt_forward(m, log_n, table, x);
    break;
  case IR_NTT_MONT_TO_NTT:
    ir_ntt_forward(m, log_n, table, x);
    break;
  case IR_NTT_TO_MONT:
  case IR_NTT_TO_STD:
    ir_ntt_inverse(m, log_n, table, x);
    for (uint64_t i = 0; i < n; i++) x[i] = ir_mod_mul(m, x[i], n_inv_r);
    if (kind == IR_NTT_TO_STD)
      for (uint64_t i = 0; i < n; i++) {
        uint64_t v = ir_mod_from_mont(m, x[i]);
        x[i] = v >= m->q ? v - m->q : v;
      }
    break;
  default:
    break;
  }
}

int ir_ntt_log2(int64_t n) {
  for (int l = IR_NTT_MIN_LOG; l <= IR_NTT_MAX_LOG; l++)
    if (n == (INT64_C(1) << l)) return l;
  return -1;
}

const char *ir_ntt_op_name(ir_ntt_kind kind) {
  return ir_ntt_is_forward(kind) ? "ntt_fwd" : "ntt_inv";
}

const char *ir_ntt_kind_name(ir_ntt_kind kind) {
  switch (kind) {
  case IR_NTT_STD_TO_NTT: return "std";
  case IR_NTT_MONT_TO_NTT: return "mont";
  case IR_NTT_TO_MONT: return "mont";
  case IR_NTT_TO_STD: return "std";
  default: return "?";
  }
}

int64_t ir_ntt_table_mismatch(const ir_modulus *m, int log_n, const uint64_t *table) {
  const int64_t n = INT64_C(1) << log_n;
  uint64_t root = table[n / 2];
  if (root >= m->q) return n / 2;
  /* walk the exponents in table order: entry 2^s + g of level s has
   * e = 2^(n-1-s) (1 + 2 br_s(g)) < 2N, so powers up to 2N - 1 */
  uint64_t *pw = malloc(sizeof *pw * (size_t)(2 * n));
  if (!pw) return -2;
  pw[0] = ir_mont_r1(m->q, ir_word_bits(m->radix));
  for (int64_t e = 1; e < 2 * n; e++) pw[e] = ir_mod_mul(m, pw[e - 1], root);
  int64_t bad = -1;
  for (int s = 0; s < log_n && bad < 0; s++) {
    /* br = br_s(g), stepped as g counts up (a reversed increment) */
    uint64_t br = 0;
    for (int64_t g = 0; g < (INT64_C(1) << s) && bad < 0; g++) {
      int64_t e = (INT64_C(1) << (log_n - 1 - s)) * (1 + 2 * (int64_t)br);
      if (table[(INT64_C(1) << s) + g] != pw[e]) bad = (INT64_C(1) << s) + g;
      uint64_t bit = s ? UINT64_C(1) << (s - 1) : 0;
      while (bit && (br & bit)) br ^= bit, bit >>= 1;
      br |= bit;
    }
  }
  free(pw);
  return bad;
}
