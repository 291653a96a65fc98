/* ntt.h: the negacyclic NTT of SPEC section 5 on the host (prefix ir_ntt_):
 * the plain stage loops for one row, the oracle that the interpreter calls
 * and that every generated NTT kernel is checked against bit for bit. */
#ifndef FHJIT_IR_NTT_H
#define FHJIT_IR_NTT_H

#include <stdint.h>

#include "ir/ir.h"
#include "ir/modarith.h"

/* The four transforms of SPEC section 5 (the op's attr[0]). */
typedef enum ir_ntt_kind {
  IR_NTT_STD_TO_NTT = 0,  /* coef-std  -> ntt-mont: to_mont, then forward */
  IR_NTT_MONT_TO_NTT = 1, /* coef-mont -> ntt-mont: forward */
  IR_NTT_TO_MONT = 2,     /* ntt-mont  -> coef-mont: inverse, times N^-1 R */
  IR_NTT_TO_STD = 3,      /* ntt-mont  -> coef-std: as above, REDC(v*1), -q if >= q */
  IR_NTT_NUM_KINDS
} ir_ntt_kind;

/* Smallest and largest supported transform sizes (log2 N). */
#define IR_NTT_MIN_LOG 4
#define IR_NTT_MAX_LOG 17

static inline int ir_ntt_is_forward(ir_ntt_kind kind) {
  return kind == IR_NTT_STD_TO_NTT || kind == IR_NTT_MONT_TO_NTT;
}

/* Forward Cooley-Tukey butterflies in place on one row x[0..N), N = 2^log_n,
 * with the row's table fwd[k] = psi^br(k) in Montgomery form. Inputs lazy,
 * outputs lazy; bit-reversed evaluation order. */
void ir_ntt_forward(const ir_modulus *m, int log_n, const uint64_t *fwd,
                    uint64_t *x);

/* Inverse Gentleman-Sande butterflies in place (inv[k] = psi^-br(k), in
 * Montgomery form); consumes bit-reversed order, produces natural order,
 * without the N^-1 scaling. */
void ir_ntt_inverse(const ir_modulus *m, int log_n, const uint64_t *inv,
                    uint64_t *x);

/* One of the four transforms on one row, pre/post steps included. table is
 * fwd for forward kinds and inv for inverse kinds; n_inv_r is N^-1 * R mod q
 * (parameter-table row 7; only read by the inverse kinds). */
void ir_ntt_row(ir_ntt_kind kind, const ir_modulus *m, uint64_t n_inv_r,
                int log_n, const uint64_t *table, uint64_t *x);

/* r32 tables as the kernels may read them: the first entry i >= 1 of the
 * row's table that is not the canonical Montgomery word of root^e(i), with
 * root = table[N/2] / R and e(2^s + g) = 2^(n-1-s) (1 + 2 br_s(g)) (the
 * exponents of SPEC 5's fwd and inv tables, for their roots psi and
 * psi^-1), -1 when every one is, -2 when out of memory. Such a table has
 * table[i] = REDC(table[hi] * table[lo]) for every split of i into
 * disjoint bits, which r32 kernels use to read it in part (ntt_plan
 * twsplit, docs/ntt.md). */
int64_t ir_ntt_table_mismatch(const ir_modulus *m, int log_n, const uint64_t *table);

/* log2 n when n is a power of two in [2^IR_NTT_MIN_LOG, 2^IR_NTT_MAX_LOG],
 * else -1. */
int ir_ntt_log2(int64_t n);

/* The text form: op "ntt_fwd" or "ntt_inv", and the mode word "std" or
 * "mont" (the form of the coefficient side). */
const char *ir_ntt_op_name(ir_ntt_kind kind);
const char *ir_ntt_kind_name(ir_ntt_kind kind);

#endif
