/* interp.h: the reference interpreter's state (interp.c), shared with the
 * evaluator of SPEC section 7's ops (interp_mix.c). Private to lib/ir. */
#ifndef FHJIT_IR_INTERP_H
#define FHJIT_IR_INTERP_H

#include "ir/ir.h"
#include "ir/modarith.h"

typedef struct interp {
  fhjit_graph *g;
  const void *const *inputs;
  ir_modulus *mods;     /* one per chain position (column of the parameter table) */
  int64_t nmods;
  uint64_t **temp;      /* per node: dense value of a computed node, or NULL */
  fhjit_layout *dense;  /* per node: the dense layout of temp[v] */
  fhjit_status status;  /* the first failure while reading inputs */
  const void *params;   /* the parameter table (row 7 for inverse NTTs) */
  int64_t pstride;
  /* r32: per (input, chain position), whether that twiddle row was found
   * a canonical power table (ir_it_check_twiddles), so each is checked once */
  unsigned char *tw_checked;
} interp;

/* Word `off` of input #index's buffer. */
uint64_t ir_it_load_input(const interp *it, int32_t index, int64_t off);
/* The element of operand v that a consumer's element (c, bidx[0..nb), row, i)
 * reads (components and batch broadcast); inputs are checked to be lazy for
 * the modulus of v's row. */
uint64_t ir_it_read_elem(interp *it, fhjit_value v, int64_t c, const int64_t *bidx, int nb,
                         int64_t row, int64_t i);
/* r32: twiddle row `pos` of input node tw, read into tab[0..2^logn), must be
 * a canonical power table (ir_ntt_table_mismatch), since r32 kernels may
 * read an entry as the product of two others: else an error naming the
 * input, position and entry. Once per input and position. */
fhjit_status ir_it_check_twiddles(interp *it, const ir_node *tw, int64_t pos, int logn,
                                  const uint64_t *tab);
/* Row r, column `limb` of the parameter table. */
uint64_t ir_it_load_param(fhjit_radix radix, const void *params, int64_t pstride, int r,
                          int64_t limb);
/* A section 7 node (automorphism, bconv, rescale, modup, moddown) into its
 * dense temporary `out` (interp_mix.c). */
fhjit_status ir_it_eval_mixing(interp *it, fhjit_value v, uint64_t *out);

#endif
