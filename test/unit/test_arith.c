/* test_arith.c: the SPEC section 2-3 formulas of lib/ir/modarith.h against
 * independent references (testutil's tu_redc/tu_ref: 128-bit remainders, no
 * Montgomery constant), on random lazy operands and every SPEC section 6
 * edge pair, for both radices, near each modulus limit and far below it. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/modarith.h"
#include "testutil.h"

#define RANDOM_PAIRS 100000

/* The moduli of one radix: SPEC test primes, NTT-friendly primes q = 1 mod
 * 2^18 near the limit and far below it, and odd composites (Montgomery
 * arithmetic needs only an odd modulus) including the largest allowed. */
static int moduli_for(fhjit_radix radix, uint64_t *out) {
  int k = 0;
  fhjit_context *ctx = fhjit_context_create();
  if (radix == FHJIT_R32) {
    out[k++] = 268369921;
    out[k++] = 134176769;
    ck_assert_int_eq(fhjit_find_primes(ctx, 30, UINT64_C(1) << 18, 2, out + k), FHJIT_OK);
    k += 2;
    ck_assert_int_eq(fhjit_find_primes(ctx, 20, UINT64_C(1) << 18, 1, out + k), FHJIT_OK);
    k += 1;
    out[k++] = 3;
    out[k++] = (UINT64_C(1) << 30) - 1; /* odd composite at the limit */
  } else {
    out[k++] = UINT64_C(1152921504606748673);
    out[k++] = UINT64_C(576460752303423649);
    ck_assert_int_eq(fhjit_find_primes(ctx, 60, UINT64_C(1) << 18, 2, out + k), FHJIT_OK);
    k += 2;
    ck_assert_int_eq(fhjit_find_primes(ctx, 40, UINT64_C(1) << 18, 2, out + k), FHJIT_OK);
    k += 2;
    out[k++] = 3;
    out[k++] = (UINT64_C(1) << 60) - 1;
  }
  fhjit_context_destroy(ctx);
  return k;
}

static uint64_t run_op(const ir_modulus *m, tu_op op, uint64_t a, uint64_t b) {
  switch (op) {
  case TU_ADD: return ir_mod_add(m, a, b);
  case TU_SUB: return ir_mod_sub(m, a, b);
  case TU_NEG: return ir_mod_neg(m, a);
  case TU_ADD_LAZY: return ir_mod_add_lazy(m, a, b);
  case TU_MUL: return ir_mod_mul(m, a, b);
  case TU_TO_MONT: return ir_mod_to_mont(m, a);
  case TU_FROM_MONT: return ir_mod_from_mont(m, a);
  default: return 0;
  }
}

/* The exclusive upper bound SPEC section 3 gives for an op's output. */
static uint64_t range_of(fhjit_radix radix, tu_op op, uint64_t q) {
  switch (op) {
  case TU_ADD: case TU_SUB: case TU_NEG: return q;
  case TU_ADD_LAZY: return 2 * q;
  case TU_MUL: case TU_TO_MONT: return radix == FHJIT_R32 ? q : 2 * q;
  case TU_FROM_MONT: return radix == FHJIT_R32 ? q : q + 1;
  default: return 0;
  }
}

/* Congruence each op must satisfy, by plain remainders: a second,
 * representation-free check next to the exact representative. */
static int congruent(fhjit_radix radix, tu_op op, uint64_t q, uint64_t a, uint64_t b,
                     uint64_t r) {
  uint64_t R = tu_powmod(2, (uint64_t)tu_word_bits(radix), q);
  uint64_t rr = tu_mulmod(r % q, R, q); /* r * R mod q */
  switch (op) {
  case TU_ADD: case TU_ADD_LAZY: return r % q == (uint64_t)(((tu_u128)a + b) % q);
  case TU_SUB: return (uint64_t)(((tu_u128)r + b) % q) == a % q;
  case TU_NEG: return (uint64_t)(((tu_u128)r + a) % q) == 0;
  case TU_MUL: return rr == tu_mulmod(a, b, q);
  case TU_TO_MONT: return r % q == tu_mulmod(a, R, q);
  case TU_FROM_MONT: return rr == a % q;
  default: return 0;
  }
}

static void check_op(fhjit_radix radix, const ir_modulus *m, tu_op op, uint64_t a,
                     uint64_t b) {
  uint64_t got = run_op(m, op, a, b);
  uint64_t want = tu_ref(radix, op, m->q, a, b);
  if (got != want || got >= range_of(radix, op, m->q) || !congruent(radix, op, m->q, a, b, got))
    ck_abort_msg("%s %s q=%llu a=%llu b=%llu: got %llu, want %llu (bound %llu)",
                 ir_radix_name(radix), tu_op_name(op), (unsigned long long)m->q,
                 (unsigned long long)a, (unsigned long long)b, (unsigned long long)got,
                 (unsigned long long)want, (unsigned long long)range_of(radix, op, m->q));
}

/* r62 REDC without the algorithm: u * 2^62 - t must be m*q with 0 <= m < 2^62. */
static void check_redc62_exact(uint64_t q, uint64_t k, tu_u128 t) {
  uint64_t u = ir_redc62(t, q, k);
  tu_u128 ut = (tu_u128)u << 62;
  if (ut < t) ck_abort_msg("r62 REDC q=%llu: u*2^62 < t", (unsigned long long)q);
  tu_u128 mq = ut - t;
  if (mq % q != 0 || mq / q >= ((tu_u128)1 << 62) || u >= 2 * q)
    ck_abort_msg("r62 REDC q=%llu u=%llu: not (t + m q) / 2^62 with m < 2^62",
                 (unsigned long long)q, (unsigned long long)u);
}

/* r32: canonical and u * 2^32 = t (mod q). */
static void check_redc32(uint64_t q, uint64_t k, uint64_t t) {
  uint64_t u = ir_redc32(t, q, k);
  uint64_t want = tu_redc(FHJIT_R32, q, t);
  if (u != want || u >= q || tu_mulmod(u, tu_powmod(2, 32, q), q) != t % q)
    ck_abort_msg("r32 REDC q=%llu t=%llu: got %llu want %llu", (unsigned long long)q,
                 (unsigned long long)t, (unsigned long long)u, (unsigned long long)want);
}

static void check_radix_ops(fhjit_radix radix) {
  uint64_t moduli[16];
  int count = moduli_for(radix, moduli);
  uint64_t seed = 0x5eed0000u + (uint64_t)radix;
  for (int mi = 0; mi < count; mi++) {
    uint64_t q = moduli[mi];
    ck_assert_msg(q & 1, "test modulus must be odd");
    ck_assert_uint_lt(q, ir_modulus_limit(radix));
    ir_modulus m = ir_modulus_make(radix, q);
    const uint64_t edges[][2] = {{0, 2 * q - 1}, {q - 1, q},         {q, q - 1},
                                 {2 * q - 1, 1}, {2 * q - 1, 2 * q - 1}, {0, 0}};
    for (int op = 0; op < TU_NUM_OPS; op++)
      for (size_t e = 0; e < sizeof edges / sizeof *edges; e++)
        check_op(radix, &m, (tu_op)op, edges[e][0], edges[e][1]);
    for (int i = 0; i < RANDOM_PAIRS; i++) {
      uint64_t a = tu_lazy(&seed, q), b = tu_lazy(&seed, q);
      for (int op = 0; op < TU_NUM_OPS; op++) check_op(radix, &m, (tu_op)op, a, b);
      /* REDC on its own, for products and for any t of its input range */
      if (radix == FHJIT_R32) {
        check_redc32(q, m.k, a * b);
        check_redc32(q, m.k, tu_below(&seed, 4 * q * q));
      } else {
        check_redc62_exact(q, m.k, (tu_u128)a * b);
        tu_u128 t = ((tu_u128)tu_rand(&seed) << 64 | tu_rand(&seed)) % (4 * (tu_u128)q * q);
        check_redc62_exact(q, m.k, t);
        ck_assert_uint_eq(ir_redc62(t, q, m.k), tu_redc(FHJIT_R62, q, t));
      }
    }
  }
}

START_TEST(test_ops_r32) { check_radix_ops(FHJIT_R32); }
END_TEST

START_TEST(test_ops_r62) { check_radix_ops(FHJIT_R62); }
END_TEST

/* The representatives SPEC calls out by name. */
START_TEST(test_spec_representatives) {
  /* r62 REDC of a single value can return exactly q: REDC(q) = q, since
   * m = q k = -1 mod 2^62 and (q + (2^62 - 1) q) / 2^62 = q. */
  uint64_t q62 = UINT64_C(1152921504606748673);
  ir_modulus m62 = ir_modulus_make(FHJIT_R62, q62);
  ck_assert_uint_eq(ir_mod_from_mont(&m62, q62), q62);
  ck_assert_uint_eq(ir_mod_from_mont(&m62, 0), 0);
  ir_modulus m32 = ir_modulus_make(FHJIT_R32, 268369921);
  ck_assert_uint_eq(ir_mod_from_mont(&m32, 268369921), 0);
  /* sub of (q-1, q): -1 -> +2q -> 2q-1 -> -q -> q-1; neg(q) = 0; neg(2q-1) = 1 */
  ck_assert_uint_eq(ir_mod_sub(&m32, 268369920, 268369921), 268369920);
  ck_assert_uint_eq(ir_mod_neg(&m32, 268369921), 0);
  ck_assert_uint_eq(ir_mod_neg(&m32, 2 * 268369921 - 1), 1);
  /* add_lazy keeps [q, 2q): (q, q-1) -> 2q-1 */
  ck_assert_uint_eq(ir_mod_add_lazy(&m62, q62, q62 - 1), 2 * q62 - 1);
  /* r62 products are lazy: some product lands in [q, 2q) (else the lazy
   * range would be untested); r32 never does. */
  uint64_t seed = 7;
  int seen_lazy = 0;
  for (int i = 0; i < 10000 && !seen_lazy; i++) {
    uint64_t a = tu_below(&seed, 2 * q62), b = tu_below(&seed, 2 * q62);
    seen_lazy = ir_mod_mul(&m62, a, b) >= q62;
  }
  ck_assert_msg(seen_lazy, "no r62 product in [q, 2q) among 10000");
}
END_TEST

START_TEST(test_constants) {
  uint64_t seed = 99;
  for (int i = 0; i < 20000; i++) {
    fhjit_radix radix = (i & 1) ? FHJIT_R62 : FHJIT_R32;
    int w = ir_word_bits(radix);
    uint64_t q = (tu_below(&seed, ir_modulus_limit(radix) / 2 - 1) * 2 + 3);
    uint64_t k = ir_mont_k(q, w);
    tu_u128 R = (tu_u128)1 << w;
    ck_assert_msg(k < R && ((tu_u128)k * q + 1) % R == 0, "k = -q^-1 mod R fails for q=%llu",
                  (unsigned long long)q);
    ck_assert_uint_eq(ir_mont_r2(q, w), tu_r2(radix, q));
    ck_assert_uint_eq(ir_mont_r1(q, w), tu_powmod(2, (uint64_t)w, q));
    ir_modulus m = ir_modulus_make(radix, q);
    ck_assert_uint_eq(m.k, k);
    ck_assert_uint_eq(m.r2, tu_r2(radix, q));
    /* inverse, and its absence for non-units */
    uint64_t a = tu_below(&seed, q - 1) + 1;
    uint64_t inv = ir_invmod(a, q);
    uint64_t x = a, y = q; /* gcd(a, q) */
    while (y) {
      uint64_t r = x % y;
      x = y, y = r;
    }
    if (x == 1) ck_assert_uint_eq(tu_mulmod(a, inv, q), 1);
    else ck_assert_uint_eq(inv, 0);
  }
  ck_assert_uint_eq(ir_invmod(6, 9), 0);
  ck_assert_uint_eq(ir_invmod(3, 1), 0);
  ck_assert_uint_eq(ir_invmod(2, 9), 5);
  ck_assert_uint_eq(ir_invmod(UINT64_C(12345678901234567), UINT64_C(1152921504606748673)),
                    tu_powmod(UINT64_C(12345678901234567), UINT64_C(1152921504606748671),
                              UINT64_C(1152921504606748673)));
  /* powmod against repeated multiplication */
  for (uint64_t e = 0; e < 200; e++) {
    uint64_t q = 1000003, x = 1;
    for (uint64_t j = 0; j < e; j++) x = x * 12345 % q;
    ck_assert_uint_eq(ir_powmod(12345, e, q), x);
  }
  ck_assert_uint_eq(ir_powmod(5, 0, 1), 0);
  /* bit reversal */
  ck_assert_uint_eq(ir_bitrev(1, 3), 4);
  ck_assert_uint_eq(ir_bitrev(6, 3), 3);
  ck_assert_uint_eq(ir_bitrev(0, 0), 0);
  for (uint64_t x = 0; x < 1024; x++) {
    uint64_t r = 0;
    for (int b = 0; b < 10; b++)
      if (x & (UINT64_C(1) << b)) r += UINT64_C(1) << (9 - b);
    ck_assert_uint_eq(ir_bitrev(x, 10), r);
  }
}
END_TEST

/* The reference itself: spot values worked out by hand. */
START_TEST(test_reference_sanity) {
  /* q = 7, R = 2^32: R mod 7 = 4, R^-1 = 2; REDC(3) = 6 */
  ck_assert_uint_eq(tu_redc(FHJIT_R32, 7, 3), 6);
  /* r62, q = 3: R = 2^62 = 1 mod 3, R^-1 = 1; t = 5 -> u = 2 mod 3 in
   * [ceil(5/2^62), +3) = [1, 4): 2 */
  ck_assert_uint_eq(tu_redc(FHJIT_R62, 3, 5), 2);
  /* t = 3 -> u = 0 mod 3 in [1, 4): 3 (the lazy representative q) */
  ck_assert_uint_eq(tu_redc(FHJIT_R62, 3, 3), 3);
  ck_assert_uint_eq(tu_ref(FHJIT_R32, TU_SUB, 7, 0, 13), 1);
  ck_assert_uint_eq(tu_ref(FHJIT_R32, TU_ADD_LAZY, 7, 13, 13), 12);
}
END_TEST

int main(void) {
  Suite *s = suite_create("arith");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_reference_sanity);
  tcase_add_test(tc, test_constants);
  tcase_add_test(tc, test_spec_representatives);
  tcase_add_test(tc, test_ops_r32);
  tcase_add_test(tc, test_ops_r62);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
