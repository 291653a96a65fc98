/* modarith.h: the exact modular arithmetic of SPEC sections 2-3 on the host,
 * as plain static inline formulas over uint64_t words. This is the reference
 * every other implementation (interpreter, host JIT, GPU kernels) is checked
 * against, so each function is the SPEC formula written out once, without
 * shortcuts. Callers guarantee the SPEC input ranges (operands lazy, q odd
 * and below the radix limit); nothing here checks them.
 *
 * Radices: r32 (R = 2^32, Montgomery product canonical) and r62 (R = 2^62,
 * REDC without final subtraction: lazy [0, 2q)). */
#ifndef FHJIT_MODARITH_H
#define FHJIT_MODARITH_H

#include <stdint.h>

#include "ir/ir.h"

/* ------------------------------------------------------- integer helpers */

/* The greatest common divisor (gcd(a, 0) = a). */
static inline uint64_t ir_gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* (a * b) mod q for any 64-bit a, b and q >= 1. */
static inline uint64_t ir_mulmod(uint64_t a, uint64_t b, uint64_t q) {
  return (uint64_t)(((ir_u128)a * b) % q);
}

/* a^e mod q (q >= 1). */
static inline uint64_t ir_powmod(uint64_t a, uint64_t e, uint64_t q) {
  uint64_t result = 1 % q, base = a % q;
  while (e) {
    if (e & 1) result = ir_mulmod(result, base, q);
    base = ir_mulmod(base, base, q);
    e >>= 1;
  }
  return result;
}

/* a^-1 mod q by the extended Euclidean algorithm; 0 when gcd(a, q) != 1
 * (or q == 1). Works for composite q, unlike Fermat inversion. */
static inline uint64_t ir_invmod(uint64_t a, uint64_t q) {
  if (q <= 1) return 0;
  /* Invariant: r_i = s_i * a (mod q), kept with signed 128-bit cofactors. */
  __int128 r0 = (__int128)q, r1 = (__int128)(a % q), s0 = 0, s1 = 1;
  while (r1 != 0) {
    __int128 quot = r0 / r1, t;
    t = r0 - quot * r1, r0 = r1, r1 = t;
    t = s0 - quot * s1, s0 = s1, s1 = t;
  }
  if (r0 != 1) return 0;
  if (s0 < 0) s0 += (__int128)q;
  return (uint64_t)s0;
}

/* The low `bits` bits of x in reverse order (bits = log2 N; 0 gives 0). */
static inline uint64_t ir_bitrev(uint64_t x, int bits) {
  uint64_t r = 0;
  for (int i = 0; i < bits; i++) r |= ((x >> i) & 1) << (bits - 1 - i);
  return r;
}

/* --------------------------------------------------- Montgomery constants */

/* k = -q^-1 mod 2^w for odd q (w = 32 or 62). Newton's iteration doubles
 * the number of correct low bits each step: x = q is right to 3 bits for
 * odd q (q*q = 1 mod 8), so five steps reach 96 >= 64 bits. */
static inline uint64_t ir_mont_k(uint64_t q, int w) {
  uint64_t inv = q;
  for (int i = 0; i < 5; i++) inv *= 2 - q * inv; /* mod 2^64 */
  uint64_t mask = w >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
  return (0 - inv) & mask;
}

/* R mod q and R^2 mod q, with R = 2^w. */
static inline uint64_t ir_mont_r1(uint64_t q, int w) {
  return (uint64_t)(((ir_u128)1 << w) % q);
}
static inline uint64_t ir_mont_r2(uint64_t q, int w) {
  uint64_t r1 = ir_mont_r1(q, w);
  return ir_mulmod(r1, r1, q);
}

/* ---------------------------------------------------------------- REDC */

/* r32: t < 2^62. m = (t*k) mod 2^32; u = (t + m*q) >> 32 (< 2^63, no
 * overflow); one conditional subtraction makes it canonical. */
static inline uint64_t ir_redc32(uint64_t t, uint64_t q, uint64_t k) {
  uint64_t m = (uint64_t)(uint32_t)((uint32_t)t * (uint32_t)k);
  uint64_t u = (t + m * q) >> 32;
  if (u >= q) u -= q;
  return u;
}

/* r62: t < 2^122. m = (low64(t)*k) mod 2^62; u = (t + m*q) >> 62 in 128
 * bits; no final subtraction, so u is lazy [0, 2q) (REDC(x*1) is in [0, q]). */
static inline uint64_t ir_redc62(ir_u128 t, uint64_t q, uint64_t k) {
  const uint64_t mask62 = (UINT64_C(1) << 62) - 1;
  uint64_t m = ((uint64_t)t * k) & mask62;
  return (uint64_t)((t + (ir_u128)m * q) >> 62);
}

/* ------------------------------------------------------- one limb's modulus */

/* Everything the pointwise formulas need about one limb. */
typedef struct ir_modulus {
  fhjit_radix radix;
  uint64_t q;  /* odd, below ir_modulus_limit(radix) */
  uint64_t k;  /* -q^-1 mod R */
  uint64_t r2; /* R^2 mod q */
} ir_modulus;

static inline ir_modulus ir_modulus_make(fhjit_radix radix, uint64_t q) {
  int w = ir_word_bits(radix);
  ir_modulus m = {radix, q, ir_mont_k(q, w), ir_mont_r2(q, w)};
  return m;
}

/* REDC of a product of two lazy values (or of a value times a constant < q). */
static inline uint64_t ir_mod_redc(const ir_modulus *m, ir_u128 t) {
  if (m->radix == FHJIT_R32) return ir_redc32((uint64_t)t, m->q, m->k);
  return ir_redc62(t, m->q, m->k);
}

/* ------------------------------------------------ SPEC section 3 pointwise */

/* s = a+b; if s >= 2q: s -= 2q; if s >= q: s -= q. Canonical. */
static inline uint64_t ir_mod_add(const ir_modulus *m, uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  if (s >= 2 * m->q) s -= 2 * m->q;
  if (s >= m->q) s -= m->q;
  return s;
}

/* d = a-b (signed); if d < 0: d += 2q; if d >= q: d -= q. Canonical. */
static inline uint64_t ir_mod_sub(const ir_modulus *m, uint64_t a, uint64_t b) {
  int64_t d = (int64_t)a - (int64_t)b;
  if (d < 0) d += (int64_t)(2 * m->q);
  if (d >= (int64_t)m->q) d -= (int64_t)m->q;
  return (uint64_t)d;
}

/* c = a >= q ? a-q : a; c == 0 ? 0 : q-c. Canonical. */
static inline uint64_t ir_mod_neg(const ir_modulus *m, uint64_t a) {
  uint64_t c = a >= m->q ? a - m->q : a;
  return c == 0 ? 0 : m->q - c;
}

/* s = a+b; if s >= 2q: s -= 2q. Lazy. */
static inline uint64_t ir_mod_add_lazy(const ir_modulus *m, uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  if (s >= 2 * m->q) s -= 2 * m->q;
  return s;
}

/* REDC(a*b): r32 canonical, r62 lazy. */
static inline uint64_t ir_mod_mul(const ir_modulus *m, uint64_t a, uint64_t b) {
  return ir_mod_redc(m, (ir_u128)a * b);
}

/* REDC(a * (R^2 mod q)): r32 canonical, r62 lazy. */
static inline uint64_t ir_mod_to_mont(const ir_modulus *m, uint64_t a) {
  return ir_mod_redc(m, (ir_u128)a * m->r2);
}

/* REDC(a * 1): r32 canonical, r62 in [0, q]. */
static inline uint64_t ir_mod_from_mont(const ir_modulus *m, uint64_t a) {
  return ir_mod_redc(m, (ir_u128)a);
}

#endif
