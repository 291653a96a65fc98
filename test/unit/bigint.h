/* bigint.h: a small unsigned big-integer helper for the section 7 tests
 * (CRT reconstruction and the identities of bconv, rescale, modup and
 * moddown), written independently of lib/ir: little-endian 64-bit limbs,
 * a fixed capacity, only the operations those identities need. */
#ifndef FHJIT_TEST_BIGINT_H
#define FHJIT_TEST_BIGINT_H
#include <stdint.h>

#define BI_LIMBS 24 /* 1536 bits */

typedef struct bi {
  uint64_t w[BI_LIMBS];
} bi;

void bi_set(bi *a, uint64_t v);
int bi_cmp(const bi *a, const bi *b);
void bi_add(bi *r, const bi *a, const bi *b);
/* r = a - b, a >= b. */
void bi_sub(bi *r, const bi *a, const bi *b);
void bi_mul_u64(bi *r, const bi *a, uint64_t m);
/* q = a / d (q may be NULL), returns a mod d; d >= 1. */
uint64_t bi_divmod_u64(bi *q, const bi *a, uint64_t d);
/* The integer X in [0, prod m) with X = x[i] mod m[i] (pairwise coprime
 * moduli), by Garner's mixed-radix algorithm. */
void bi_crt(bi *x, const uint64_t *res, const uint64_t *mod, int n);
uint64_t bi_invmod(uint64_t a, uint64_t m);
#endif
