/* tables.h: the constant tables of SPEC section 7's limb-mixing ops
 * (prefix ir_): their sizes, and their words computed from moduli by chain
 * position. One computation serves the public helpers (fhjit_bconv_table,
 * ...), the binder (sizes) and the interpreter, which checks the table it is
 * given word for word against it. Layouts: docs/section7.md. */
#ifndef FHJIT_IR_TABLES_H
#define FHJIT_IR_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* Words of the table node n (bconv, rescale, modup, moddown; bound
 * operands) reads; 0 for other ops. */
int64_t ir_table_len(const fhjit_graph *g, const ir_node *n);

/* The rows of value v whose chain positions lie in digit j's group: their
 * number, and the row indices into rows_out when it is not NULL. */
int64_t ir_digit_rows(const fhjit_graph *g, fhjit_value v, int64_t j, int64_t *rows_out);

/* The bconv from src to dst: a[i] = (h_i^-1 mod s_i) R mod s_i, then
 * c[j*nsrc + i] = (h_i mod t_j) R mod t_j (nsrc + nsrc*ndst words, chain[]
 * indexed by position). NULL, or why not (moduli not pairwise coprime)
 * written into why. */
const char *ir_bconv_words(fhjit_radix radix, const uint64_t *chain, const int32_t *src,
                           int32_t nsrc, const int32_t *dst, int32_t ndst, uint64_t *out,
                           char *why, size_t size);
/* (m^-1 mod q_i) R mod q_i for each q_i = chain[pos[i]], m the product of
 * chain[div[0..ndiv)] (rescale: one modulus; moddown: P*). */
const char *ir_inverse_words(fhjit_radix radix, const uint64_t *chain, const int32_t *pos,
                             int32_t npos, const int32_t *div, int32_t ndiv, uint64_t *out,
                             char *why, size_t size);

/* The words node n's table must hold, from moduli chain[] by position
 * (malloc'd into *out, ir_table_len words). Errors name the node. */
fhjit_status ir_node_table(fhjit_graph *g, const ir_node *n, const uint64_t *chain,
                           uint64_t **out);

/* The positions of node n's internal conversion (bconv: x's basis to the
 * target; modup: the digit's rows to the others, in output order; moddown:
 * P to Q), malloc'd; *nsrc, *ndst. Returns 0 when out of memory. */
int ir_conversion_bases(const fhjit_graph *g, const ir_node *n, int32_t **src, int32_t *nsrc,
                        int32_t **dst, int32_t *ndst);

#endif
