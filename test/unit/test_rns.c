/* test_rns.c: the RNS host helpers (lib/ir/rns.c): parameter table rows,
 * NTT root and twiddle tables, prime generation and primality, and the
 * errors for bad moduli, each against direct computation in the test. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "testutil.h"

#define SENTINEL UINT64_C(0xA5A5A5A5A5A5A5A5)

static void fill_sentinel(void *buf, size_t bytes) { memset(buf, 0xA5, bytes); }

/* Jacobi symbol (a/n) for odd n > 0, by quadratic reciprocity: independent
 * of the powmod-based root search it checks. */
static int jacobi(uint64_t a, uint64_t n) {
  int s = 1;
  a %= n;
  while (a) {
    while ((a & 1) == 0) {
      a >>= 1;
      if ((n & 7) == 3 || (n & 7) == 5) s = -s;
    }
    uint64_t t = a;
    a = n, n = t;
    if ((a & 3) == 3 && (n & 3) == 3) s = -s;
    a %= n;
  }
  return n == 1 ? s : 0;
}

/* An independent probable-prime test: Fermat and strong tests to bases other
 * than the library's (43 and up), plus trial division by small primes. */
static int probably_prime(uint64_t n) {
  if (n < 2) return 0;
  for (uint64_t p = 2; p < 1000; p++)
    if (n % p == 0) return n == p;
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) d >>= 1, s++;
  for (uint64_t a = 43; a < 43 + 2 * 20; a += 2) {
    uint64_t x = tu_powmod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    int composite = 1;
    for (int i = 1; i < s && composite; i++) {
      x = tu_mulmod(x, x, n);
      if (x == n - 1) composite = 0;
    }
    if (composite) return 0;
  }
  return 1;
}

/* ---------------------------------------------------------- param table */

static void check_table(fhjit_radix radix, const uint64_t *moduli, int32_t rows, int64_t n,
                        int ntt, uint64_t scale, int64_t pstride) {
  fhjit_context *ctx = fhjit_context_create();
  size_t wsize = radix == FHJIT_R32 ? 4 : 8;
  void *table = malloc(wsize * (size_t)(8 * pstride));
  fill_sentinel(table, wsize * (size_t)(8 * pstride));
  ck_assert_msg(fhjit_param_table(ctx, radix, moduli, rows, n, ntt, scale, table, pstride) ==
                    FHJIT_OK,
                "%s", fhjit_last_error(ctx));
  int w = tu_word_bits(radix), half = w / 2;
  tu_u128 R = (tu_u128)1 << w;
  for (int32_t i = 0; i < rows; i++) {
    uint64_t q = moduli[i], row[8];
    for (int r = 0; r < 8; r++) row[r] = tu_word(tu_ws(radix), table, r * pstride + i);
    ck_assert_uint_eq(row[0], 2 * q);
    ck_assert_uint_eq(row[1] + (row[2] << half), q);
    ck_assert_uint_lt(row[1], UINT64_C(1) << half);
    ck_assert_uint_lt(row[3], UINT64_C(1) << half);
    uint64_t k = row[3] + (row[4] << half);
    ck_assert_msg((tu_u128)k < R && ((tu_u128)k * q + 1) % R == 0, "k*q != -1 mod R, q=%llu",
                  (unsigned long long)q);
    ck_assert_uint_eq(row[5], (uint64_t)((R % q) * (R % q) % q));
    ck_assert_uint_eq(row[6], (uint64_t)(((tu_u128)(scale % q) * row[5]) % q));
    if (n > 0) {
      ck_assert_uint_lt(row[7], q);
      ck_assert_uint_eq(tu_mulmod(row[7], (uint64_t)n, q), (uint64_t)(R % q)); /* N^-1 R * N = R */
    } else {
      ck_assert_uint_eq(row[7], 0);
    }
  }
  /* words between the rows' columns are left alone */
  for (int r = 0; r < 8; r++)
    for (int64_t j = rows; j < pstride; j++)
      ck_assert_uint_eq(tu_word(tu_ws(radix), table, r * pstride + j),
                        radix == FHJIT_R32 ? (SENTINEL & 0xffffffffu) : SENTINEL);
  free(table);
  fhjit_context_destroy(ctx);
}

START_TEST(test_param_table) {
  const uint64_t m32[] = {268369921, 134176769, 786433, 3, (UINT64_C(1) << 30) - 1};
  const uint64_t m62[] = {UINT64_C(1152921504606748673), UINT64_C(576460752303423649),
                          UINT64_C(1099510054913), 3, (UINT64_C(1) << 60) - 1};
  check_table(FHJIT_R32, m32, 5, 1024, 0, 1u << 20, 5);
  check_table(FHJIT_R32, m32, 5, 0, 0, 12345, 9);
  check_table(FHJIT_R32, m32, 3, 16, 1, UINT64_MAX, 3);
  check_table(FHJIT_R62, m62, 5, 4096, 0, UINT64_C(1) << 40, 5);
  check_table(FHJIT_R62, m62, 5, 0, 0, 0, 7);
  check_table(FHJIT_R62, m62, 2, 16, 1, 3, 4);
  /* odd N (no NTT): N^-1 exists for coprime q */
  check_table(FHJIT_R62, m62, 3, 7, 0, 9, 3);
}
END_TEST

/* ------------------------------------------------------------------ NTT */

static void check_psi(uint64_t q, int64_t n) {
  fhjit_context *ctx = fhjit_context_create();
  uint64_t psi = 0;
  ck_assert_msg(fhjit_ntt_psi(ctx, q, n, &psi) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_uint_eq(tu_powmod(psi, (uint64_t)n, q), q - 1);
  ck_assert_uint_eq(tu_powmod(psi, 2 * (uint64_t)n, q), 1);
  /* SPEC's choice: r = c^((q-1)/2N) has r^N = c^((q-1)/2) = (c/q), so the
   * first c with r^N != 1 is the least quadratic non-residue. */
  uint64_t c = 2;
  while (jacobi(c, q) != -1) c++;
  ck_assert_uint_eq(psi, tu_powmod(c, (q - 1) / (2 * (uint64_t)n), q));
  fhjit_context_destroy(ctx);
}

START_TEST(test_psi) {
  check_psi(268369921, 1 << 15);
  check_psi(268369921, 1);
  check_psi(268369921, 2);
  check_psi(134176769, 4096);
  check_psi(786433, 1 << 17);
  check_psi(UINT64_C(1152921504606748673), 1 << 14);
  check_psi(UINT64_C(576460752303423649), 16);
  check_psi(17, 8);
  /* 7681 = 15 * 2^9 + 1: 2, 3, 5, ..., 12 are squares mod 7681, 13 is not
   * (Euler's criterion, computed outside), so psi = 13^(7680/512) */
  check_psi(7681, 256);
  for (uint64_t c = 2; c < 13; c++) ck_assert_int_eq(jacobi(c, 7681), 1);
  ck_assert_int_eq(jacobi(13, 7681), -1);
  uint64_t psi;
  ck_assert_int_eq(fhjit_ntt_psi(NULL, 7681, 256, &psi), FHJIT_OK);
  ck_assert_uint_eq(psi, tu_powmod(13, 15, 7681));
}
END_TEST

static void check_twiddles(fhjit_radix radix, const uint64_t *moduli, int32_t rows, int64_t n) {
  fhjit_context *ctx = fhjit_context_create();
  size_t wsize = radix == FHJIT_R32 ? 4 : 8, bytes = wsize * (size_t)(rows * n);
  void *fwd = malloc(bytes), *inv = malloc(bytes), *fwd_only = malloc(bytes);
  ck_assert_msg(fhjit_twiddle_tables(ctx, radix, moduli, rows, n, fwd, inv) == FHJIT_OK, "%s",
                fhjit_last_error(ctx));
  fill_sentinel(fwd_only, bytes);
  ck_assert_int_eq(fhjit_twiddle_tables(ctx, radix, moduli, rows, n, fwd_only, NULL), FHJIT_OK);
  ck_assert_int_eq(memcmp(fwd, fwd_only, bytes), 0);
  ck_assert_int_eq(fhjit_twiddle_tables(ctx, radix, moduli, rows, n, NULL, NULL), FHJIT_OK);
  int logn = 0;
  while ((INT64_C(1) << logn) < n) logn++;
  for (int32_t r = 0; r < rows; r++) {
    uint64_t q = moduli[r], psi;
    ck_assert_int_eq(fhjit_ntt_psi(ctx, q, n, &psi), FHJIT_OK);
    uint64_t psi_inv = tu_powmod(psi, 2 * (uint64_t)n - 1, q); /* psi^(2N) = 1 */
    uint64_t r2 = tu_r2(radix, q), rinv = tu_rinv(radix, q);
    for (int64_t k = 0; k < n; k++) {
      uint64_t br = 0;
      for (int b = 0; b < logn; b++)
        if ((uint64_t)k & (UINT64_C(1) << b)) br |= UINT64_C(1) << (logn - 1 - b);
      uint64_t xf = tu_powmod(psi, br, q), xi = tu_powmod(psi_inv, br, q);
      uint64_t f = tu_word(tu_ws(radix), fwd, r * n + k), v = tu_word(tu_ws(radix), inv, r * n + k);
      /* exact SPEC representative REDC(x * (R^2 mod q)) ... */
      ck_assert_uint_eq(f, tu_redc(radix, q, (tu_u128)xf * r2));
      ck_assert_uint_eq(v, tu_redc(radix, q, (tu_u128)xi * r2));
      /* ... which is x R mod q, lazy (canonical for r32) */
      ck_assert_uint_eq(tu_mulmod(f % q, rinv, q), xf);
      ck_assert_uint_eq(tu_mulmod(v % q, rinv, q), xi);
      ck_assert_uint_lt(f, radix == FHJIT_R32 ? q : 2 * q);
      /* fwd * inv = 1 (in Montgomery form: R^2) */
      ck_assert_uint_eq(tu_mulmod(f % q, v % q, q), tu_mulmod(1, r2, q));
    }
  }
  free(fwd);
  free(inv);
  free(fwd_only);
  fhjit_context_destroy(ctx);
}

START_TEST(test_twiddles) {
  const uint64_t m32[] = {268369921, 786433, 7681};
  const uint64_t m62[] = {UINT64_C(1152921504606748673), UINT64_C(1099510054913)};
  check_twiddles(FHJIT_R32, m32, 3, 256);
  check_twiddles(FHJIT_R32, m32, 3, 2);
  check_twiddles(FHJIT_R32, m32, 1, 1);
  check_twiddles(FHJIT_R62, m62, 2, 1024);
  check_twiddles(FHJIT_R62, m62, 2, 8);
  /* entry 0 is psi^0 = 1 in Montgomery form: R mod q (r32) */
  uint32_t f[4];
  fhjit_context *ctx = fhjit_context_create();
  ck_assert_int_eq(fhjit_twiddle_tables(ctx, FHJIT_R32, m32, 1, 4, f, NULL), FHJIT_OK);
  ck_assert_uint_eq(f[0], tu_powmod(2, 32, 268369921));
  fhjit_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- primes */

static void check_primes(int bits, uint64_t m, int32_t count, int window_by_trial) {
  fhjit_context *ctx = fhjit_context_create();
  uint64_t *out = malloc(sizeof *out * (size_t)count);
  ck_assert_msg(fhjit_find_primes(ctx, bits, m, count, out) == FHJIT_OK, "%s",
                fhjit_last_error(ctx));
  uint64_t limit = UINT64_C(1) << bits;
  for (int32_t i = 0; i < count; i++) {
    ck_assert_uint_lt(out[i], limit);
    ck_assert_uint_eq(out[i] % m, 1);
    if (i) ck_assert_uint_lt(out[i], out[i - 1]);
    if (bits <= 40) ck_assert_msg(tu_is_prime_trial(out[i]), "%llu not prime", (unsigned long long)out[i]);
    else ck_assert_msg(probably_prime(out[i]), "%llu not prime", (unsigned long long)out[i]);
  }
  /* nothing skipped: every candidate 1 mod m from the top down to the last
   * prime found is either found or composite */
  int32_t next = 0;
  for (uint64_t q = limit - m + 1; q >= out[count - 1]; q -= m) {
    if (next < count && q == out[next]) {
      next++;
      continue;
    }
    int prime = window_by_trial ? tu_is_prime_trial(q) : probably_prime(q);
    ck_assert_msg(!prime, "prime %llu = 1 mod %llu was skipped", (unsigned long long)q,
                  (unsigned long long)m);
  }
  ck_assert_int_eq(next, count);
  free(out);
  fhjit_context_destroy(ctx);
}

START_TEST(test_find_primes) {
  check_primes(30, UINT64_C(1) << 18, 6, 1);
  check_primes(24, UINT64_C(1) << 10, 20, 1);
  check_primes(20, UINT64_C(1) << 18, 1, 1);
  check_primes(40, UINT64_C(1) << 18, 3, 1);
  check_primes(60, UINT64_C(1) << 18, 4, 0);
  check_primes(62, UINT64_C(1) << 16, 2, 0);
  check_primes(8, 2, 10, 1); /* 251, 241, 239, ... */
  uint64_t small[3];
  fhjit_context *ctx = fhjit_context_create();
  ck_assert_int_eq(fhjit_find_primes(ctx, 8, 2, 3, small), FHJIT_OK);
  ck_assert_uint_eq(small[0], 251);
  ck_assert_uint_eq(small[1], 241);
  ck_assert_uint_eq(small[2], 239);
  ck_assert_int_eq(fhjit_find_primes(ctx, 8, 2, 0, NULL), FHJIT_OK);
  fhjit_context_destroy(ctx);
}
END_TEST

START_TEST(test_is_prime) {
  for (uint64_t n = 0; n < 100000; n++)
    ck_assert_msg(fhjit_is_prime(n) == tu_is_prime_trial(n), "is_prime(%llu)", (unsigned long long)n);
  uint64_t seed = 1;
  for (int i = 0; i < 3000; i++) {
    uint64_t n = tu_below(&seed, UINT64_C(1) << 36) | 1;
    ck_assert_msg(fhjit_is_prime(n) == tu_is_prime_trial(n), "is_prime(%llu)", (unsigned long long)n);
  }
  /* strong pseudoprimes to several small bases, Carmichael numbers */
  const uint64_t composite[] = {561, 41041, 3215031751u, UINT64_C(2152302898747),
                                UINT64_C(3474749660383), UINT64_C(341550071728321),
                                UINT64_C(3825123056546413051), UINT64_MAX,
                                UINT64_C(1) << 63, (UINT64_C(1) << 60) - 1};
  for (size_t i = 0; i < sizeof composite / sizeof *composite; i++)
    ck_assert_msg(!fhjit_is_prime(composite[i]), "%llu is composite",
                  (unsigned long long)composite[i]);
  const uint64_t prime[] = {2, 3, 37, 41, (UINT64_C(1) << 61) - 1, UINT64_C(18446744073709551557),
                            UINT64_C(1152921504606748673), UINT64_C(576460752303423649),
                            268369921, 134176769};
  for (size_t i = 0; i < sizeof prime / sizeof *prime; i++)
    ck_assert_msg(fhjit_is_prime(prime[i]), "%llu is prime", (unsigned long long)prime[i]);
}
END_TEST

/* ---------------------------------------------------------------- errors */

static void expect_modulus_error(fhjit_radix radix, uint64_t q, int64_t ntt_n,
                                 fhjit_status status, const char *reason) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_status st = fhjit_check_modulus(ctx, radix, q, ntt_n);
  ck_assert_msg(st == status, "q=%llu n=%lld: status %d, want %d (%s)", (unsigned long long)q,
                (long long)ntt_n, st, status, fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_last_status(ctx), status);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), reason), "message '%s' lacks '%s'",
                fhjit_last_error(ctx), reason);
  fhjit_context_destroy(ctx);
}

START_TEST(test_check_modulus) {
  fhjit_context *ctx = fhjit_context_create();
  ck_assert_int_eq(fhjit_check_modulus(ctx, FHJIT_R32, 268369921, 0), FHJIT_OK);
  ck_assert_int_eq(fhjit_check_modulus(ctx, FHJIT_R32, 268369921, 1 << 15), FHJIT_OK);
  ck_assert_int_eq(fhjit_check_modulus(ctx, FHJIT_R32, (1u << 30) - 1, 0), FHJIT_OK);
  ck_assert_int_eq(fhjit_check_modulus(ctx, FHJIT_R62, (UINT64_C(1) << 60) - 1, 0), FHJIT_OK);
  ck_assert_int_eq(fhjit_check_modulus(ctx, FHJIT_R62, (UINT64_C(1) << 40) + 1, 0), FHJIT_OK);
  ck_assert_int_eq(fhjit_check_modulus(NULL, FHJIT_R32, 4, 0), FHJIT_ERR_MODULUS);
  fhjit_context_destroy(ctx);
  expect_modulus_error(FHJIT_R32, 0, 0, FHJIT_ERR_MODULUS, "zero");
  expect_modulus_error(FHJIT_R62, 1, 0, FHJIT_ERR_MODULUS, "one");
  expect_modulus_error(FHJIT_R32, 268369922, 0, FHJIT_ERR_MODULUS, "even");
  expect_modulus_error(FHJIT_R32, UINT64_C(1) << 30, 0, FHJIT_ERR_MODULUS, "even");
  expect_modulus_error(FHJIT_R32, (UINT64_C(1) << 30) + 1, 0, FHJIT_ERR_MODULUS, "2^30");
  expect_modulus_error(FHJIT_R32, UINT64_C(1152921504606748673), 0, FHJIT_ERR_MODULUS, "2^30");
  expect_modulus_error(FHJIT_R62, (UINT64_C(1) << 60) + 1, 0, FHJIT_ERR_MODULUS, "2^60");
  /* 268369921 = 1 mod 2^16 only */
  expect_modulus_error(FHJIT_R32, 268369921, 1 << 16, FHJIT_ERR_MODULUS, "1 mod 2N");
  /* (2N+1)(4N+1) = 1 mod 2N, N = 8: 17 * 33 = 561, composite */
  expect_modulus_error(FHJIT_R32, 561, 8, FHJIT_ERR_MODULUS, "prime");
  /* 65 = 5 * 13 = 1 mod 32: composite; 1000003 is prime but 3 mod 32 */
  expect_modulus_error(FHJIT_R32, 65, 16, FHJIT_ERR_MODULUS, "it is not prime");
  expect_modulus_error(FHJIT_R32, 1000003, 16, FHJIT_ERR_MODULUS, "not 1 mod 2N = 32");
  expect_modulus_error(FHJIT_R32, 268369921, 3, FHJIT_ERR_ARGUMENT, "power of two");
  expect_modulus_error(FHJIT_R32, 268369921, -2, FHJIT_ERR_ARGUMENT, "negative");
  expect_modulus_error((fhjit_radix)7, 268369921, 0, FHJIT_ERR_ARGUMENT, "radix");
}
END_TEST

START_TEST(test_table_errors) {
  fhjit_context *ctx = fhjit_context_create();
  const uint64_t good[] = {268369921, 786433};
  const uint64_t bad[] = {268369921, 786434};
  uint32_t table[32];
  memset(table, 0xA5, sizeof table);
  uint32_t copy[32];
  memcpy(copy, table, sizeof table);
#define EXPECT_TABLE(call, status, reason)                                         \
  do {                                                                            \
    ck_assert_int_eq((call), (status));                                           \
    ck_assert_msg(tu_contains(fhjit_last_error(ctx), (reason)), "'%s' lacks '%s'", \
                  fhjit_last_error(ctx), (reason));                               \
    ck_assert_int_eq(memcmp(table, copy, sizeof table), 0);                        \
  } while (0)
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, bad, 2, 8, 0, 1, table, 2), FHJIT_ERR_MODULUS,
               "#1");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, bad, 2, 8, 0, 1, table, 2), FHJIT_ERR_MODULUS,
               "even");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, NULL, 2, 8, 0, 1, table, 2), FHJIT_ERR_ARGUMENT,
               "null moduli");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, good, 0, 8, 0, 1, table, 2), FHJIT_ERR_ARGUMENT,
               "rows");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, good, 2, 8, 0, 1, NULL, 2), FHJIT_ERR_ARGUMENT,
               "null table");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, good, 2, 8, 0, 1, table, 1), FHJIT_ERR_ARGUMENT,
               "pstride");
  /* row 7 at 7 * pstride words must be addressable (it overflowed before) */
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, good, 2, 8, 0, 1, table, INT64_MAX),
               FHJIT_ERR_ARGUMENT, "address space");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R62, good, 2, 8, 0, 1, table, INT64_MAX / 56 + 1),
               FHJIT_ERR_ARGUMENT, "address space");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, good, 2, -8, 0, 1, table, 2), FHJIT_ERR_ARGUMENT,
               "negative");
  /* 268369921 = 1 mod 2^16 but not 1 mod 2^17 */
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, good, 2, 1 << 16, 1, 1, table, 2),
               FHJIT_ERR_MODULUS, "1 mod 2N");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, good, 2, 0, 1, 1, table, 2), FHJIT_ERR_ARGUMENT,
               "power of two");
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, good, 2, 12, 1, 1, table, 2), FHJIT_ERR_ARGUMENT,
               "power of two");
  /* N = 6 has no inverse mod 21 = 3 * 7 (row 7 needs N^-1) */
  const uint64_t q21[] = {21};
  EXPECT_TABLE(fhjit_param_table(ctx, FHJIT_R32, q21, 1, 6, 0, 1, table, 1), FHJIT_ERR_MODULUS,
               "inverse");
  EXPECT_TABLE(fhjit_param_table(ctx, (fhjit_radix)2, good, 2, 8, 0, 1, table, 2),
               FHJIT_ERR_ARGUMENT, "radix");
  /* twiddles: NTT needs prime, 1 mod 2N, power-of-two N */
  const uint64_t q561[] = {561};
  EXPECT_TABLE(fhjit_twiddle_tables(ctx, FHJIT_R32, q561, 1, 8, table, table + 16),
               FHJIT_ERR_MODULUS, "prime");
  EXPECT_TABLE(fhjit_twiddle_tables(ctx, FHJIT_R32, good, 2, 6, table, NULL), FHJIT_ERR_ARGUMENT,
               "power of two");
  EXPECT_TABLE(fhjit_twiddle_tables(ctx, FHJIT_R32, good, 2, 1 << 17, table, NULL),
               FHJIT_ERR_MODULUS, "1 mod 2N");
  EXPECT_TABLE(fhjit_twiddle_tables(ctx, FHJIT_R32, bad, 2, 8, table, NULL), FHJIT_ERR_MODULUS,
               "even");
  EXPECT_TABLE(fhjit_twiddle_tables(ctx, FHJIT_R32, good, 0, 8, table, NULL), FHJIT_ERR_ARGUMENT,
               "rows");
  EXPECT_TABLE(fhjit_twiddle_tables(ctx, FHJIT_R32, NULL, 2, 8, table, NULL), FHJIT_ERR_ARGUMENT,
               "null moduli");
  /* psi */
  uint64_t psi = 77;
  ck_assert_int_eq(fhjit_ntt_psi(ctx, 561, 8, &psi), FHJIT_ERR_MODULUS);
  ck_assert(tu_contains(fhjit_last_error(ctx), "prime"));
  ck_assert_int_eq(fhjit_ntt_psi(ctx, 268369921, 1 << 16, &psi), FHJIT_ERR_MODULUS);
  ck_assert(tu_contains(fhjit_last_error(ctx), "1 mod 2N"));
  ck_assert_int_eq(fhjit_ntt_psi(ctx, 268369921, 0, &psi), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_ntt_psi(ctx, 268369921, 8, NULL), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_ntt_psi(ctx, 2, 1, &psi), FHJIT_ERR_MODULUS);
  ck_assert_uint_eq(psi, 77);
  /* primes */
  uint64_t out[4] = {1, 2, 3, 4};
  ck_assert_int_eq(fhjit_find_primes(ctx, 20, UINT64_C(1) << 18, 2, out), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "only 1"));
  ck_assert_int_eq(fhjit_find_primes(ctx, 64, 2, 1, out), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_find_primes(ctx, 1, 2, 1, out), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_find_primes(ctx, 30, 12, 1, out), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "power of two"));
  ck_assert_int_eq(fhjit_find_primes(ctx, 30, 1, 1, out), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_find_primes(ctx, 10, 1024, 1, out), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_find_primes(ctx, 30, 2, -1, out), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_find_primes(ctx, 30, 2, 1, NULL), FHJIT_ERR_ARGUMENT);
  ck_assert_uint_eq(out[0], 1);
  ck_assert_uint_eq(out[1], 2);
  fhjit_context_destroy(ctx);
#undef EXPECT_TABLE
}
END_TEST

int main(void) {
  Suite *s = suite_create("rns");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_param_table);
  tcase_add_test(tc, test_psi);
  tcase_add_test(tc, test_twiddles);
  tcase_add_test(tc, test_find_primes);
  tcase_add_test(tc, test_is_prime);
  tcase_add_test(tc, test_check_modulus);
  tcase_add_test(tc, test_table_errors);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
