/* test_ntt_ref.c: the reference NTT (lib/ir/ntt_ref.c) against independent
 * mathematics: direct evaluation of the polynomial at the SPEC points with
 * 128-bit modular powers, round trips of the four transforms, the
 * negacyclic convolution theorem, and a second spelling of the SPEC stage
 * loops with the test's own REDC (so the exact lazy representatives are
 * pinned too). Both radices, N = 2^4 .. 2^17, moduli q = 1 mod 2^18 near
 * each radix limit and far below, random and edge inputs. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ntt.h"
#include "testutil.h"

typedef unsigned __int128 u128;

/* ------------------------------------------------- independent arithmetic */

static uint64_t t_mulmod(uint64_t a, uint64_t b, uint64_t q) {
  return (uint64_t)((u128)a * b % q);
}

static uint64_t t_pow(uint64_t a, uint64_t e, uint64_t q) {
  uint64_t r = 1 % q;
  a %= q;
  for (; e; e >>= 1, a = t_mulmod(a, a, q))
    if (e & 1) r = t_mulmod(r, a, q);
  return r;
}

/* Fermat inverse: q is prime in every use here. */
static uint64_t t_inv(uint64_t a, uint64_t q) { return t_pow(a, q - 2, q); }

static uint64_t t_bitrev(uint64_t x, int bits) {
  uint64_t r = 0;
  for (int i = 0; i < bits; i++, x >>= 1) r = (r << 1) | (x & 1);
  return r;
}

/* SPEC section 2 REDC, written from the text: r32 canonical, r62 lazy. */
typedef struct tmod {
  fhjit_radix radix;
  uint64_t q, k, r1, r2; /* k = -q^-1 mod R, r1 = R mod q, r2 = R^2 mod q */
  int w;
} tmod;

static tmod t_mod(fhjit_radix radix, uint64_t q) {
  tmod m = {.radix = radix, .q = q, .w = radix == FHJIT_R32 ? 32 : 62};
  u128 big_r = (u128)1 << m.w;
  /* k by brute-force lifting: x with q*x = -1 mod 2^i, bit by bit */
  uint64_t x = 0;
  for (int i = 0; i < m.w; i++)
    if ((((u128)q * x + 1) >> i) & 1) x |= UINT64_C(1) << i;
  m.k = x;
  m.r1 = (uint64_t)(big_r % q);
  m.r2 = t_mulmod(m.r1, m.r1, q);
  return m;
}

static uint64_t t_redc(const tmod *m, u128 t) {
  if (m->radix == FHJIT_R32) {
    uint64_t t64 = (uint64_t)t;
    uint64_t mm = (uint64_t)(uint32_t)(t64 * m->k);
    uint64_t u = (t64 + mm * m->q) >> 32;
    return u >= m->q ? u - m->q : u;
  }
  uint64_t mm = ((uint64_t)t * m->k) & ((UINT64_C(1) << 62) - 1);
  return (uint64_t)((t + (u128)mm * m->q) >> 62);
}

/* SPEC section 5 root: first c^((q-1)/2N) with r^N != 1. */
static uint64_t t_psi(uint64_t q, uint64_t n) {
  for (uint64_t c = 2;; c++) {
    uint64_t r = t_pow(c, (q - 1) / (2 * n), q);
    if (t_pow(r, n, q) != 1) return r;
  }
}

/* Test tables [N] in Montgomery form REDC(x * R^2), for one modulus. */
static void t_tables(const tmod *m, int logn, uint64_t *fwd, uint64_t *inv) {
  uint64_t n = UINT64_C(1) << logn, psi = t_psi(m->q, n), psi_inv = t_inv(psi, m->q);
  for (uint64_t k = 0; k < n; k++) {
    uint64_t e = t_bitrev(k, logn);
    fwd[k] = t_redc(m, (u128)t_pow(psi, e, m->q) * m->r2);
    inv[k] = t_redc(m, (u128)t_pow(psi_inv, e, m->q) * m->r2);
  }
}

/* The SPEC stage loops spelled by groups (g outer, j inner), with the
 * test's REDC: pins the exact representatives. */
static uint64_t t_lazyadd(const tmod *m, uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  return s >= 2 * m->q ? s - 2 * m->q : s;
}

static void t_forward(const tmod *m, int logn, const uint64_t *fwd, uint64_t *x) {
  uint64_t n = UINT64_C(1) << logn;
  for (int s = 0; s < logn; s++) {
    uint64_t t = n >> (s + 1);
    for (uint64_t g = 0; g < (UINT64_C(1) << s); g++)
      for (uint64_t lo = 2 * g * t; lo < 2 * g * t + t; lo++) {
        uint64_t p = t_redc(m, (u128)fwd[(UINT64_C(1) << s) + g] * x[lo + t]);
        uint64_t a = x[lo];
        x[lo] = t_lazyadd(m, a, p);
        x[lo + t] = t_lazyadd(m, a, 2 * m->q - p);
      }
  }
}

static void t_inverse(const tmod *m, int logn, const uint64_t *inv, uint64_t *x) {
  uint64_t n = UINT64_C(1) << logn;
  for (int s = 0; s < logn; s++) {
    uint64_t t = UINT64_C(1) << s;
    for (uint64_t g = 0; g < n / (2 * t); g++)
      for (uint64_t lo = 2 * g * t; lo < 2 * g * t + t; lo++) {
        uint64_t a = x[lo], b = x[lo + t];
        x[lo] = t_lazyadd(m, a, b);
        x[lo + t] = t_redc(m, (u128)inv[(n >> (s + 1)) + g] * t_lazyadd(m, a, 2 * m->q - b));
      }
  }
}

/* -------------------------------------------------------------- fixtures */

typedef struct tcase_q {
  fhjit_radix radix;
  uint64_t q;
} tcase_q;

static tcase_q g_moduli[16];
static int g_nmoduli;

/* q = 1 mod 2^18 primes near each radix limit and far below it, plus the
 * reference library's primes (used only for the N they support). */
static void setup_moduli(void) {
  if (g_nmoduli) return;
  uint64_t p[2];
  const uint64_t m18 = UINT64_C(1) << 18;
  ck_assert_int_eq(fhjit_find_primes(NULL, 30, m18, 2, p), FHJIT_OK);
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R32, p[0]};
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R32, p[1]};
  ck_assert_int_eq(fhjit_find_primes(NULL, 22, m18, 1, p), FHJIT_OK);
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R32, p[0]};
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R32, 268369921};
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R32, 134176769};
  ck_assert_int_eq(fhjit_find_primes(NULL, 60, m18, 2, p), FHJIT_OK);
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R62, p[0]};
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R62, p[1]};
  ck_assert_int_eq(fhjit_find_primes(NULL, 40, m18, 1, p), FHJIT_OK);
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R62, p[0]};
  ck_assert_int_eq(fhjit_find_primes(NULL, 20, m18, 1, p), FHJIT_OK);
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R62, p[0]};
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R62, UINT64_C(1152921504606748673)};
  g_moduli[g_nmoduli++] = (tcase_q){FHJIT_R62, UINT64_C(576460752303423649)};
  for (int i = 0; i < g_nmoduli; i++) {
    ck_assert(fhjit_is_prime(g_moduli[i].q));
    ck_assert_uint_lt(g_moduli[i].q, g_moduli[i].radix == FHJIT_R32 ? UINT64_C(1) << 30
                                                                     : UINT64_C(1) << 60);
  }
  /* near the limit means near: within 2^23 of 2^30 and of 2^60 */
  ck_assert_uint_gt(g_moduli[0].q, (UINT64_C(1) << 30) - (UINT64_C(1) << 23));
  ck_assert_uint_gt(g_moduli[5].q, (UINT64_C(1) << 60) - (UINT64_C(1) << 23));
}

/* One (modulus, N) instance with everything the checks need. */
typedef struct inst {
  tmod m;
  ir_modulus im;
  int logn;
  uint64_t n, psi, n_inv_r;
  uint64_t *fwd, *inv;
} inst;

static int inst_make(inst *I, tcase_q c, int logn) {
  uint64_t n = UINT64_C(1) << logn;
  if ((c.q - 1) % (2 * n) != 0) return 0;
  memset(I, 0, sizeof *I);
  I->m = t_mod(c.radix, c.q);
  I->im = ir_modulus_make(c.radix, c.q);
  ck_assert_uint_eq(I->im.k, I->m.k);
  ck_assert_uint_eq(I->im.r2, I->m.r2);
  I->logn = logn;
  I->n = n;
  I->psi = t_psi(c.q, n);
  I->n_inv_r = t_mulmod(t_inv(n % c.q, c.q), I->m.r1, c.q);
  I->fwd = malloc(8 * n);
  I->inv = malloc(8 * n);
  ck_assert(I->fwd && I->inv);
  t_tables(&I->m, logn, I->fwd, I->inv);

  /* the library's tables and psi agree with the test's (words of the radix) */
  uint64_t psi = 0;
  ck_assert_int_eq(fhjit_ntt_psi(NULL, c.q, (int64_t)n, &psi), FHJIT_OK);
  ck_assert_uint_eq(psi, I->psi);
  size_t ws = c.radix == FHJIT_R32 ? 4 : 8;
  unsigned char *lf = malloc(ws * n), *li = malloc(ws * n);
  ck_assert(lf && li);
  ck_assert_int_eq(fhjit_twiddle_tables(NULL, c.radix, &c.q, 1, (int64_t)n, lf, li), FHJIT_OK);
  for (uint64_t k = 1; k < n; k++) {
    uint64_t a = ws == 4 ? ((uint32_t *)lf)[k] : ((uint64_t *)lf)[k];
    uint64_t b = ws == 4 ? ((uint32_t *)li)[k] : ((uint64_t *)li)[k];
    ck_assert_uint_eq(a, I->fwd[k]);
    ck_assert_uint_eq(b, I->inv[k]);
  }
  free(lf);
  free(li);
  return 1;
}

static void inst_free(inst *I) {
  free(I->fwd);
  free(I->inv);
}

/* Inputs: random lazy values, with SPEC edge values (0, q-1, q, 2q-1)
 * sprinkled in; `pattern` 1 makes the whole row edge values. */
static void fill_input(uint64_t *x, uint64_t n, uint64_t q, uint64_t *seed, int pattern) {
  const uint64_t edges[4] = {0, q - 1, q, 2 * q - 1};
  for (uint64_t i = 0; i < n; i++) {
    if (pattern == 1) x[i] = edges[tu_below(seed, 4)];
    else if (pattern == 2) x[i] = 2 * q - 1; /* all maximal */
    else if (tu_below(seed, 8) == 0) x[i] = edges[tu_below(seed, 4)];
    else x[i] = tu_below(seed, 2 * q);
  }
}

/* sum_i x_i * z^i mod q */
static uint64_t eval_poly(const uint64_t *x, uint64_t n, uint64_t z, uint64_t q) {
  uint64_t acc = 0, zi = 1;
  for (uint64_t i = 0; i < n; i++) {
    acc = (uint64_t)(((u128)acc + t_mulmod(x[i] % q, zi, q)) % q);
    zi = t_mulmod(zi, z, q);
  }
  return acc;
}

/* Sampled positions: the ends and some random ones (all when N is small). */
static int sample_positions(uint64_t n, uint64_t *seed, uint64_t *pos) {
  if (n <= 64) {
    for (uint64_t j = 0; j < n; j++) pos[j] = j;
    return (int)n;
  }
  int k = 0;
  pos[k++] = 0;
  pos[k++] = 1;
  pos[k++] = n - 1;
  pos[k++] = n / 2;
  int extra = n <= 4096 ? 12 : 3;
  for (int i = 0; i < extra; i++) pos[k++] = tu_below(seed, n);
  return k;
}

static int bound_ok(const inst *I, uint64_t v, int canonical) {
  return v < (canonical ? I->m.q : 2 * I->m.q);
}

/* --------------------------------------------------------------- checks */

/* Forward kinds against direct evaluation and the group-wise spelling. */
static void check_forward(const inst *I, uint64_t *seed, int pattern) {
  uint64_t n = I->n, q = I->m.q;
  uint64_t *x = malloc(8 * n), *y = malloc(8 * n), *z = malloc(8 * n);
  ck_assert(x && y && z);
  fill_input(x, n, q, seed, pattern);
  uint64_t pos[80];
  for (int kind = IR_NTT_STD_TO_NTT; kind <= IR_NTT_MONT_TO_NTT; kind++) {
    memcpy(y, x, 8 * n);
    ir_ntt_row((ir_ntt_kind)kind, &I->im, I->n_inv_r, I->logn, I->fwd, y);
    /* the same representatives from the test's own spelling */
    memcpy(z, x, 8 * n);
    if (kind == IR_NTT_STD_TO_NTT)
      for (uint64_t i = 0; i < n; i++) z[i] = t_redc(&I->m, (u128)z[i] * I->m.r2);
    t_forward(&I->m, I->logn, I->fwd, z);
    for (uint64_t j = 0; j < n; j++) {
      if (y[j] != z[j] || !bound_ok(I, y[j], 0))
        ck_abort_msg("forward kind %d q=%llu N=2^%d: y[%llu]=%llu, SPEC loops give %llu", kind,
                     (unsigned long long)q, I->logn, (unsigned long long)j,
                     (unsigned long long)y[j], (unsigned long long)z[j]);
    }
    int np = sample_positions(n, seed, pos);
    for (int s = 0; s < np; s++) {
      uint64_t j = pos[s];
      uint64_t point = t_pow(I->psi, 2 * t_bitrev(j, I->logn) + 1, q);
      uint64_t want = eval_poly(x, n, point, q);
      if (kind == IR_NTT_STD_TO_NTT) want = t_mulmod(want, I->m.r1, q);
      if (y[j] % q != want)
        ck_abort_msg("forward kind %d q=%llu N=2^%d: position %llu is %llu, A(psi^(2br+1))%s = %llu",
                     kind, (unsigned long long)q, I->logn, (unsigned long long)j,
                     (unsigned long long)(y[j] % q), kind == IR_NTT_STD_TO_NTT ? "*R" : "",
                     (unsigned long long)want);
    }
  }
  free(x);
  free(y);
  free(z);
}

/* Inverse kinds: direct evaluation on arbitrary NTT-domain input, the
 * group-wise spelling, and the round trips with the forward kinds. */
static void check_inverse(const inst *I, uint64_t *seed, int pattern) {
  uint64_t n = I->n, q = I->m.q;
  uint64_t *y = malloc(8 * n), *x = malloc(8 * n), *z = malloc(8 * n);
  ck_assert(x && y && z);
  fill_input(y, n, q, seed, pattern);
  uint64_t pos[80];
  uint64_t n_inv = t_inv(n % q, q), r_inv = t_inv(I->m.r1, q);
  for (int kind = IR_NTT_TO_MONT; kind <= IR_NTT_TO_STD; kind++) {
    memcpy(x, y, 8 * n);
    ir_ntt_row((ir_ntt_kind)kind, &I->im, I->n_inv_r, I->logn, I->inv, x);
    memcpy(z, y, 8 * n);
    t_inverse(&I->m, I->logn, I->inv, z);
    for (uint64_t i = 0; i < n; i++) {
      z[i] = t_redc(&I->m, (u128)z[i] * I->n_inv_r);
      if (kind == IR_NTT_TO_STD) {
        z[i] = t_redc(&I->m, z[i]);
        if (z[i] >= q) z[i] -= q;
      }
      int canonical = kind == IR_NTT_TO_STD || I->m.radix == FHJIT_R32;
      if (x[i] != z[i] || !bound_ok(I, x[i], canonical))
        ck_abort_msg("inverse kind %d q=%llu N=2^%d: x[%llu]=%llu, SPEC loops give %llu", kind,
                     (unsigned long long)q, I->logn, (unsigned long long)i,
                     (unsigned long long)x[i], (unsigned long long)z[i]);
    }
    /* x_i = N^-1 sum_j y_j psi^-(2br(j)+1)i  (times R^-1 for coef-std) */
    int np = sample_positions(n, seed, pos);
    uint64_t psi_inv = t_inv(I->psi, q);
    for (int s = 0; s < np; s++) {
      uint64_t i = pos[s], acc = 0;
      for (uint64_t j = 0; j < n; j++) {
        uint64_t e = (2 * t_bitrev(j, I->logn) + 1) * i % (2 * n);
        acc = (acc + t_mulmod(y[j] % q, t_pow(psi_inv, e, q), q)) % q;
      }
      acc = t_mulmod(acc, n_inv, q);
      if (kind == IR_NTT_TO_STD) acc = t_mulmod(acc, r_inv, q);
      if (x[i] % q != acc)
        ck_abort_msg("inverse kind %d q=%llu N=2^%d: position %llu is %llu, expected %llu", kind,
                     (unsigned long long)q, I->logn, (unsigned long long)i,
                     (unsigned long long)(x[i] % q), (unsigned long long)acc);
    }
  }
  /* round trips: coef-std -> ntt -> coef-std is x mod q, canonical;
   * coef-mont -> ntt -> coef-mont is x mod q. */
  fill_input(x, n, q, seed, pattern);
  memcpy(z, x, 8 * n);
  ir_ntt_row(IR_NTT_STD_TO_NTT, &I->im, I->n_inv_r, I->logn, I->fwd, z);
  ir_ntt_row(IR_NTT_TO_STD, &I->im, I->n_inv_r, I->logn, I->inv, z);
  for (uint64_t i = 0; i < n; i++)
    if (z[i] != x[i] % q)
      ck_abort_msg("std round trip q=%llu N=2^%d: %llu -> %llu", (unsigned long long)q, I->logn,
                   (unsigned long long)x[i], (unsigned long long)z[i]);
  memcpy(z, x, 8 * n);
  ir_ntt_row(IR_NTT_MONT_TO_NTT, &I->im, I->n_inv_r, I->logn, I->fwd, z);
  ir_ntt_row(IR_NTT_TO_MONT, &I->im, I->n_inv_r, I->logn, I->inv, z);
  for (uint64_t i = 0; i < n; i++)
    if (z[i] % q != x[i] % q || !bound_ok(I, z[i], I->m.radix == FHJIT_R32))
      ck_abort_msg("mont round trip q=%llu N=2^%d: %llu -> %llu", (unsigned long long)q,
                   I->logn, (unsigned long long)x[i], (unsigned long long)z[i]);
  free(x);
  free(y);
  free(z);
}

/* INTT(NTT(a) . NTT(b)) is the negacyclic convolution a*b mod X^N + 1. */
static void check_convolution(const inst *I, uint64_t *seed, int pattern) {
  uint64_t n = I->n, q = I->m.q;
  uint64_t *a = malloc(8 * n), *b = malloc(8 * n), *fa = malloc(8 * n), *fb = malloc(8 * n),
           *want = calloc(n, 8);
  ck_assert(a && b && fa && fb && want);
  fill_input(a, n, q, seed, pattern);
  fill_input(b, n, q, seed, 0);
  memcpy(fa, a, 8 * n);
  memcpy(fb, b, 8 * n);
  ir_ntt_row(IR_NTT_STD_TO_NTT, &I->im, I->n_inv_r, I->logn, I->fwd, fa);
  ir_ntt_row(IR_NTT_STD_TO_NTT, &I->im, I->n_inv_r, I->logn, I->fwd, fb);
  for (uint64_t j = 0; j < n; j++) fa[j] = t_redc(&I->m, (u128)fa[j] * fb[j]);
  ir_ntt_row(IR_NTT_TO_STD, &I->im, I->n_inv_r, I->logn, I->inv, fa);
  for (uint64_t i = 0; i < n; i++)
    for (uint64_t j = 0; j < n; j++) {
      uint64_t p = t_mulmod(a[i] % q, b[j] % q, q);
      uint64_t k = i + j;
      if (k < n) want[k] = (want[k] + p) % q;
      else want[k - n] = (want[k - n] + q - p) % q;
    }
  for (uint64_t i = 0; i < n; i++)
    if (fa[i] != want[i])
      ck_abort_msg("convolution q=%llu N=2^%d: c[%llu]=%llu, schoolbook %llu",
                   (unsigned long long)q, I->logn, (unsigned long long)i,
                   (unsigned long long)fa[i], (unsigned long long)want[i]);
  free(a);
  free(b);
  free(fa);
  free(fb);
  free(want);
}

/* ----------------------------------------------------------------- tests */

/* _i: the modulus index. Every N from 2^4 to 2^17 the modulus supports. */
START_TEST(test_transforms) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h: the ASan stage): moduli 0 and
   * 5 (each radix's near its limit: every N) and 4 and 10 (each radix's
   * last, a stated prime), every N each supports; the others run the
   * same reference code on other primes (the Debug stage runs them) */
  TU_SAMPLED_IN(_i, 0, 4, 5, 10);
  setup_moduli();
  tcase_q c = g_moduli[_i];
  uint64_t seed = 0x5eed0000 + (uint64_t)_i;
  int any = 0;
  for (int logn = IR_NTT_MIN_LOG; logn <= IR_NTT_MAX_LOG; logn++) {
    inst I;
    if (!inst_make(&I, c, logn)) continue;
    any = 1;
    int patterns = logn <= 12 ? 3 : 1;
    for (int p = 0; p < patterns; p++) {
      check_forward(&I, &seed, p);
      check_inverse(&I, &seed, p);
      if (logn <= 10) check_convolution(&I, &seed, p);
    }
    inst_free(&I);
  }
  ck_assert(any);
}
END_TEST

/* A hand-computed instance, so a shared misreading of SPEC by the test's
 * helpers and the library would still be caught: N = 16, q = 97 (97 = 1 mod
 * 32) in r32, forward of the unit impulse x = (R, 0, ..., 0) in Montgomery
 * form is R at every position (A = 1 evaluates to 1), and of x = X (the
 * monomial, Montgomery form R at index 1) is psi^(2br(j)+1) * R. */
START_TEST(test_small_by_hand) {
  const uint64_t q = 97;
  tmod m = t_mod(FHJIT_R32, q);
  ir_modulus im = ir_modulus_make(FHJIT_R32, q);
  uint64_t fwd[16], inv[16], x[16];
  t_tables(&m, 4, fwd, inv);
  /* psi: the first c^(96/32) = c^3 with (c^3)^16 = c^48 != 1. 2, 3 and 4
   * are squares mod 97 (c^48 = 1); 5 is not, so psi = 125 mod 97 = 28. */
  ck_assert_uint_eq(t_psi(q, 16), 28);
  uint64_t lib_psi = 0;
  ck_assert_int_eq(fhjit_ntt_psi(NULL, q, 16, &lib_psi), FHJIT_OK);
  ck_assert_uint_eq(lib_psi, 28);
  memset(x, 0, sizeof x);
  x[0] = m.r1;
  ir_ntt_row(IR_NTT_MONT_TO_NTT, &im, 0, 4, fwd, x);
  for (int j = 0; j < 16; j++) ck_assert_uint_eq(x[j] % q, m.r1);
  memset(x, 0, sizeof x);
  x[1] = m.r1;
  ir_ntt_row(IR_NTT_MONT_TO_NTT, &im, 0, 4, fwd, x);
  const int br4[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
  for (int j = 0; j < 16; j++) {
    uint64_t want = 1;
    for (int e = 0; e < 2 * br4[j] + 1; e++) want = want * 28 % q;
    ck_assert_uint_eq(x[j] % q, want * m.r1 % q);
  }
}
END_TEST

START_TEST(test_log2) {
  ck_assert_int_eq(ir_ntt_log2(16), 4);
  ck_assert_int_eq(ir_ntt_log2(1 << 17), 17);
  ck_assert_int_eq(ir_ntt_log2(8), -1);
  ck_assert_int_eq(ir_ntt_log2(1 << 18), -1);
  ck_assert_int_eq(ir_ntt_log2(48), -1);
  ck_assert_int_eq(ir_ntt_log2(0), -1);
  ck_assert_int_eq(ir_ntt_log2(-16), -1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ntt_ref");
  TCase *tc = tcase_create("ntt_ref");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_small_by_hand);
  tcase_add_test(tc, test_log2);
  tcase_add_loop_test(tc, test_transforms, 0, 11);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
