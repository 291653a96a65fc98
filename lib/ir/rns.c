/* rns.c: host helpers for RNS moduli: checking a modulus for a radix, the
 * parameter table of SPEC section 2, the NTT root and twiddle tables of
 * SPEC section 5, and NTT-friendly prime generation.
 *
 * These are pure functions: `ctx` only receives the error message and may be
 * NULL (the status is returned all the same). Every output is written only
 * after all checks passed, so a failure leaves the caller's buffers as they
 * were. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/modarith.h"

/* ------------------------------------------------------------- primality */

/* One Miller-Rabin round: is `a` a witness that odd n > 2 is composite? */
static int mr_witness(uint64_t n, uint64_t a, uint64_t d, int s) {
  uint64_t x = ir_powmod(a, d, n);
  if (x == 1 || x == n - 1) return 0;
  for (int i = 1; i < s; i++) {
    x = ir_mulmod(x, x, n);
    if (x == n - 1) return 0;
  }
  return 1;
}

/* Deterministic for all 64-bit n: the first twelve primes as bases suffice
 * below 3.3 * 10^24. */
int fhjit_is_prime(uint64_t n) {
  static const uint64_t bases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  if (n < 2) return 0;
  for (size_t i = 0; i < sizeof bases / sizeof *bases; i++) {
    if (n == bases[i]) return 1;
    if (n % bases[i] == 0) return 0;
  }
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) d >>= 1, s++;
  for (size_t i = 0; i < sizeof bases / sizeof *bases; i++)
    if (mr_witness(n, bases[i], d, s)) return 0;
  return 1;
}

static int is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

static int log2_exact(uint64_t x) {
  int l = 0;
  while ((UINT64_C(1) << l) < x) l++;
  return l;
}

/* ---------------------------------------------------------------- checks */

const char *ir_ntt_modulus_problem(uint64_t q, int64_t n, char *buf, size_t size) {
  uint64_t two_n = 2 * (uint64_t)n;
  if (q % two_n != 1) {
    snprintf(buf, size, "not 1 mod 2N = %llu (q mod 2N = %llu)", (unsigned long long)two_n,
             (unsigned long long)(q % two_n));
    return buf;
  }
  if (!fhjit_is_prime(q)) {
    snprintf(buf, size, "not prime");
    return buf;
  }
  return NULL;
}

/* The reason q is unfit, or NULL. `ntt_n` > 0 asks for NTT use with N =
 * ntt_n, which needs a prime q = 1 mod 2N (ntt_n itself is checked by the
 * callers). */
static const char *modulus_problem(fhjit_radix radix, uint64_t q, int64_t ntt_n,
                                   char *buf, size_t size) {
  if (q == 0) return "it is zero";
  if (q == 1) return "it is one (no residues to compute with)";
  if ((q & 1) == 0) return "it is even (Montgomery reduction needs an odd modulus)";
  if (q >= ir_modulus_limit(radix)) {
    snprintf(buf, size, "it is not below 2^%d, the limit of radix %s",
             radix == FHJIT_R32 ? 30 : 60, ir_radix_name(radix));
    return buf;
  }
  char why[120];
  if (ntt_n > 0 && ir_ntt_modulus_problem(q, ntt_n, why, sizeof why)) {
    snprintf(buf, size, "it is %s, which an NTT of size N = %lld needs", why, (long long)ntt_n);
    return buf;
  }
  return NULL;
}

static fhjit_status check_radix(fhjit_context *ctx, const char *fn, fhjit_radix radix) {
  if (radix == FHJIT_R32 || radix == FHJIT_R62) return FHJIT_OK;
  return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: radix %d is neither FHJIT_R32 nor FHJIT_R62",
                  fn, (int)radix);
}

/* An NTT size must be a power of two (and fit the 2N arithmetic). */
static fhjit_status check_ntt_n(fhjit_context *ctx, const char *fn, int64_t n) {
  if (n >= 1 && n <= (INT64_C(1) << 40) && is_pow2((uint64_t)n)) return FHJIT_OK;
  return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                  "%s: the NTT size N = %lld must be a power of two between 1 and 2^40",
                  fn, (long long)n);
}

fhjit_status fhjit_check_modulus(fhjit_context *ctx, fhjit_radix radix, uint64_t q,
                                 int64_t ntt_n) {
  fhjit_status st = check_radix(ctx, "fhjit_check_modulus", radix);
  if (st) return st;
  if (ntt_n < 0)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_check_modulus: ntt_n = %lld is negative (0: no NTT)",
                    (long long)ntt_n);
  if (ntt_n > 0 && (st = check_ntt_n(ctx, "fhjit_check_modulus", ntt_n))) return st;
  char buf[200];
  const char *why = modulus_problem(radix, q, ntt_n, buf, sizeof buf);
  if (why)
    return ir_error(ctx, FHJIT_ERR_MODULUS, "modulus %llu is unfit for radix %s: %s",
                    (unsigned long long)q, ir_radix_name(radix), why);
  return FHJIT_OK;
}

/* Checks every modulus of a list; the message names the failing index. */
static fhjit_status check_moduli(fhjit_context *ctx, const char *fn, fhjit_radix radix,
                                 const uint64_t *moduli, int32_t rows, int64_t ntt_n) {
  if (!moduli) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null moduli", fn);
  if (rows < 1)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: rows = %d, need at least one modulus", fn,
                    (int)rows);
  char buf[200];
  for (int32_t i = 0; i < rows; i++) {
    const char *why = modulus_problem(radix, moduli[i], ntt_n, buf, sizeof buf);
    if (why)
      return ir_error(ctx, FHJIT_ERR_MODULUS, "%s: modulus #%d = %llu is unfit for radix %s: %s",
                      fn, (int)i, (unsigned long long)moduli[i], ir_radix_name(radix), why);
  }
  return FHJIT_OK;
}

/* Stores word `x` at index `i` of a table of the radix's words. */
static void put_word(fhjit_radix radix, void *table, int64_t i, uint64_t x) {
  if (radix == FHJIT_R32) ((uint32_t *)table)[i] = (uint32_t)x;
  else ((uint64_t *)table)[i] = x;
}

/* ------------------------------------------------------- parameter table */

fhjit_status fhjit_param_table(fhjit_context *ctx, fhjit_radix radix, const uint64_t *moduli,
                               int32_t rows, int64_t n, int ntt, uint64_t scale, void *table,
                               int64_t pstride) {
  const char *fn = "fhjit_param_table";
  fhjit_status st = check_radix(ctx, fn, radix);
  if (st) return st;
  if (!table) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null table", fn);
  if (n < 0)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: N = %lld is negative", fn, (long long)n);
  if (ntt && (st = check_ntt_n(ctx, fn, n))) return st;
  if ((st = check_moduli(ctx, fn, radix, moduli, rows, ntt ? n : 0))) return st;
  if (pstride < rows)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: pstride = %lld is smaller than rows = %d (rows of the table would "
                    "overlap)",
                    fn, (long long)pstride, (int)rows);
  int64_t most = ir_pstride_max(rows, ir_word_size(radix));
  if (pstride > most)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: pstride = %lld puts the table's row 7 past the address space (at "
                    "most %lld words)",
                    fn, (long long)pstride, (long long)most);
  for (int32_t i = 0; i < rows && n > 0; i++)
    if (ir_invmod((uint64_t)n, moduli[i]) == 0)
      return ir_error(ctx, FHJIT_ERR_MODULUS,
                      "%s: modulus #%d = %llu: N = %lld has no inverse mod q (row 7 needs "
                      "N^-1)",
                      fn, (int)i, (unsigned long long)moduli[i], (long long)n);

  int w = ir_word_bits(radix), half = w / 2;
  uint64_t half_mask = (UINT64_C(1) << half) - 1;
  for (int32_t i = 0; i < rows; i++) {
    uint64_t q = moduli[i];
    ir_modulus m = ir_modulus_make(radix, q);
    uint64_t r1 = ir_mont_r1(q, w);
    uint64_t row[8] = {
        2 * q,
        q & half_mask,
        q >> half,
        m.k & half_mask,
        m.k >> half,
        m.r2,
        ir_mulmod(scale % q, m.r2, q),
        n > 0 ? ir_mulmod(ir_invmod((uint64_t)n, q), r1, q) : 0,
    };
    for (int r = 0; r < 8; r++) put_word(radix, table, r * pstride + i, row[r]);
  }
  return FHJIT_OK;
}

/* ------------------------------------------------------------------- NTT */

/* SPEC section 5: the first r = c^((q-1)/(2N)) for c = 2, 3, ... with
 * r^N != 1. For prime q, r^(2N) = 1 and r^N != 1 force r^N = -1, so r is a
 * primitive 2N-th root. Half the residues are non-squares, so the loop ends
 * quickly. */
static uint64_t find_psi(uint64_t q, uint64_t n) {
  uint64_t e = (q - 1) / (2 * n);
  for (uint64_t c = 2; c < q; c++) {
    uint64_t r = ir_powmod(c, e, q);
    if (ir_powmod(r, n, q) != 1) return r;
  }
  return 0; /* unreachable for prime q = 1 mod 2N */
}

/* The prime/NTT checks shared by psi and twiddles, without a radix limit. */
static fhjit_status check_ntt_prime(fhjit_context *ctx, const char *fn, uint64_t q,
                                    int64_t n, int32_t index) {
  char buf[120];
  const char *why = q < 3 || (q & 1) == 0 ? "not an odd prime"
                                          : ir_ntt_modulus_problem(q, n, buf, sizeof buf);
  if (!why) return FHJIT_OK;
  if (index < 0)
    return ir_error(ctx, FHJIT_ERR_MODULUS,
                    "%s: modulus %llu is unfit for an NTT of size %lld: it is %s", fn,
                    (unsigned long long)q, (long long)n, why);
  return ir_error(ctx, FHJIT_ERR_MODULUS,
                  "%s: modulus #%d = %llu is unfit for an NTT of size %lld: it is %s", fn,
                  (int)index, (unsigned long long)q, (long long)n, why);
}

fhjit_status fhjit_ntt_psi(fhjit_context *ctx, uint64_t q, int64_t n, uint64_t *psi) {
  const char *fn = "fhjit_ntt_psi";
  fhjit_status st;
  if (!psi) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null psi", fn);
  if ((st = check_ntt_n(ctx, fn, n))) return st;
  if ((st = check_ntt_prime(ctx, fn, q, n, -1))) return st;
  *psi = find_psi(q, (uint64_t)n);
  return FHJIT_OK;
}

fhjit_status fhjit_twiddle_tables(fhjit_context *ctx, fhjit_radix radix, const uint64_t *moduli,
                                  int32_t rows, int64_t n, void *fwd, void *inv) {
  const char *fn = "fhjit_twiddle_tables";
  fhjit_status st = check_radix(ctx, fn, radix);
  if (st) return st;
  if ((st = check_ntt_n(ctx, fn, n))) return st;
  if ((st = check_moduli(ctx, fn, radix, moduli, rows, n))) return st;
  if (!fwd && !inv) return FHJIT_OK;
  int logn = log2_exact((uint64_t)n);
  for (int32_t i = 0; i < rows; i++) {
    ir_modulus m = ir_modulus_make(radix, moduli[i]);
    uint64_t psi = find_psi(m.q, (uint64_t)n);
    uint64_t psi_inv = ir_invmod(psi, m.q);
    /* Entry k holds psi^br(k) in Montgomery form REDC(x * (R^2 mod q)) with
     * x canonical; entry 0 (unused by the butterflies) is psi^0 = 1 in the
     * same form, R mod q (for r62 possibly its lazy representative). */
    for (int64_t k = 0; k < n; k++) {
      uint64_t e = ir_bitrev((uint64_t)k, logn);
      if (fwd) put_word(radix, fwd, i * n + k, ir_mod_to_mont(&m, ir_powmod(psi, e, m.q)));
      if (inv) put_word(radix, inv, i * n + k, ir_mod_to_mont(&m, ir_powmod(psi_inv, e, m.q)));
    }
  }
  return FHJIT_OK;
}

/* ----------------------------------------------------------------- primes */

fhjit_status fhjit_find_primes(fhjit_context *ctx, int bits, uint64_t m, int32_t count,
                               uint64_t *out) {
  const char *fn = "fhjit_find_primes";
  if (bits < 2 || bits > 63)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: bits = %d must be between 2 and 63", fn, bits);
  if (m < 2 || !is_pow2(m) || m >= (UINT64_C(1) << bits))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: m = %llu must be a power of two with 2 <= m < 2^%d", fn,
                    (unsigned long long)m, bits);
  if (count < 0)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: count = %d is negative", fn, (int)count);
  if (count > 0 && !out) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null output", fn);
  if (count == 0) return FHJIT_OK;
  uint64_t *found = malloc(sizeof *found * (size_t)count);
  if (!found) return ir_error(ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
  int32_t nfound = 0;
  /* Candidates 1 mod m below 2^bits, largest first: 2^bits - m + 1, ... */
  for (uint64_t q = (UINT64_C(1) << bits) - m + 1; q > 1 && nfound < count; q -= m)
    if (fhjit_is_prime(q)) found[nfound++] = q;
  if (nfound < count) {
    free(found);
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: only %d primes below 2^%d are 1 mod %llu, %d were asked for", fn,
                    (int)nfound, bits, (unsigned long long)m, (int)count);
  }
  memcpy(out, found, sizeof *found * (size_t)count);
  free(found);
  return FHJIT_OK;
}
