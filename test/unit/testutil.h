/* testutil.h: shared helpers for the Check unit tests: a seeded random
 * generator and the exact big-integer style references they compare to. */
#ifndef FHJIT_TESTUTIL_H
#define FHJIT_TESTUTIL_H
#include <stddef.h>
#include <stdint.h>

/* splitmix64: deterministic, seedable. */
uint64_t tu_rand(uint64_t *state);
/* Uniform in [0, bound). */
uint64_t tu_below(uint64_t *state, uint64_t bound);

/* ---- exact references for SPEC sections 2-3 (added by the arithmetic tests).
 * Computed independently of lib/ir/modarith.h: no Montgomery constant k, no
 * REDC formula; only __int128 remainders and the characterisation below. */
#include "fhjit/fhjit.h"

typedef unsigned __int128 tu_u128;

/* a*b mod q and a^e mod q, by plain 128-bit remainders (q >= 1). */
uint64_t tu_mulmod(uint64_t a, uint64_t b, uint64_t q);
uint64_t tu_powmod(uint64_t a, uint64_t e, uint64_t q);
/* w = 32 or 62, R = 2^w. */
int tu_word_bits(fhjit_radix radix);
/* R^-1 mod q for odd q, as ((q+1)/2)^w (2^-1 = (q+1)/2). */
uint64_t tu_rinv(fhjit_radix radix, uint64_t q);
/* R^2 mod q, as 2^(2w) mod q. */
uint64_t tu_r2(fhjit_radix radix, uint64_t q);
/* The exact REDC(t) representative of SPEC section 2, characterised without
 * the algorithm: REDC(t) = (t + m q) / R with the unique m in [0, R) making
 * the division exact, i.e. the unique u = t R^-1 (mod q) with
 * ceil(t/R) <= u < ceil(t/R) + q; r32 then subtracts q once if u >= q. */
uint64_t tu_redc(fhjit_radix radix, uint64_t q, tu_u128 t);

/* The pointwise operations of SPEC section 3, restated: add/sub/neg give the
 * canonical residue, add_lazy the residue of a+b mod 2q, and mul/to_mont/
 * from_mont the REDC representative of a*b, a*(R^2 mod q), a. */
typedef enum tu_op {
  TU_ADD, TU_SUB, TU_NEG, TU_ADD_LAZY, TU_MUL, TU_TO_MONT, TU_FROM_MONT, TU_NUM_OPS
} tu_op;
uint64_t tu_ref(fhjit_radix radix, tu_op op, uint64_t q, uint64_t a, uint64_t b);
const char *tu_op_name(tu_op op);

/* A random lazy value in [0, 2q), one time in eight one of the edges
 * 0, 1, q-1, q, q+1, 2q-2, 2q-1. */
uint64_t tu_lazy(uint64_t *state, uint64_t q);

/* Trial division (for numbers up to about 2^44). */
int tu_is_prime_trial(uint64_t n);

/* A POLY type: comps (0 = no axis), nbatch batch extents, rows, n. */
fhjit_type tu_poly(int comps, int nbatch, const int64_t *batch, int64_t rows, int64_t n);
/* A KEY type [digits, 2, rows, n]. */
fhjit_type tu_key(int64_t digits, int64_t rows, int64_t n);
/* Word i of a buffer of ws-byte words (4: r32, 8: r62), and its store. */
uint64_t tu_word(size_t ws, const void *b, int64_t i);
void tu_set_word(size_t ws, void *b, int64_t i, uint64_t x);
/* The word size of a radix, for tu_word where a test holds the radix:
 * 4 for r32, 8 for r62. */
size_t tu_ws(fhjit_radix radix);
/* Does haystack contain needle? (for error-message checks; NULL-safe) */
int tu_contains(const char *haystack, const char *needle);

/* Sampling for the slow sanitizer stage. FHJIT_TEST_SAMPLE=1 (read at run
 * time; scripts/test.sh sets it in its ASan + UBSan stage only) makes the
 * heaviest loop tests run a fixed, deterministic part of their cases:
 * under ASan they take 2-8x their Debug time (LLVM's many small
 * allocations), and the cases left out run the same code paths on other
 * shapes, seeds or the other radix; test.sh's Debug stage runs them.
 * Unset, empty or 0 means every case, in any build (docs/testing.md). */
int tu_sampling(void);
/* In a loop test: under FHJIT_TEST_SAMPLE, every third case (0, 3, 6 ..). */
#define TU_SAMPLED(i)                                                        \
  do {                                                                       \
    if (tu_sampling() && (i) % 3) return;                                    \
  } while (0)
/* In a loop test over a few variants: under FHJIT_TEST_SAMPLE, case `keep`
 * only (chosen per test so that both radices still run across a file). */
#define TU_SAMPLED_ONLY(i, keep)                                             \
  do {                                                                       \
    if (tu_sampling() && (i) != (keep)) return;                              \
  } while (0)
/* In a loop test: under FHJIT_TEST_SAMPLE, the listed cases only. */
#define TU_SAMPLED_IN(i, ...)                                                \
  do {                                                                       \
    static const int tu_keep_[] = {__VA_ARGS__};                             \
    if (tu_sampling() && !tu_listed((i), tu_keep_, sizeof tu_keep_ / sizeof tu_keep_[0])) \
      return;                                                                \
  } while (0)
/* Is i one of list[0 .. n)? (TU_SAMPLED_IN) */
int tu_listed(int i, const int *list, size_t n);
#endif
