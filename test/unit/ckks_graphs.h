/* ckks_graphs.h: test-side builders of SPEC section 7's whole operations
 * (hybrid key switch, relinearisation, rescale, rotation, hoisted
 * rotations) from fhjit's primitives, with the shapes of the public
 * builders (fhjit_keyswitch, fhjit_ckks_*): an independent cross-check of
 * those. Public API only. Each adds its own FHJIT_KIND_TABLE inputs (fill
 * them with fhjit_input_table after binding). Operands are on a chain
 * prefix [0, rows) (a level), NTT-domain Montgomery; fwd and inv are
 * twiddle tables of the whole chain. FHJIT_NO_VALUE on error (the
 * context holds the message). */
#ifndef FHJIT_TEST_CKKS_GRAPHS_H
#define FHJIT_TEST_CKKS_GRAPHS_H

#include "fhjit/fhjit.h"

fhjit_value tg_keyswitch(fhjit_graph *g, fhjit_value d, fhjit_value key, fhjit_value fwd,
                         fhjit_value inv);
fhjit_value tg_ckks_relinearize(fhjit_graph *g, fhjit_value ct3, fhjit_value rlk,
                                fhjit_value fwd, fhjit_value inv);
fhjit_value tg_ckks_rescale(fhjit_graph *g, fhjit_value ct, fhjit_value fwd, fhjit_value inv);
fhjit_value tg_ckks_mul_relin_rescale(fhjit_graph *g, fhjit_value a, fhjit_value b,
                                      fhjit_value rlk, fhjit_value fwd, fhjit_value inv);
fhjit_value tg_ckks_rotate(fhjit_graph *g, fhjit_value ct, int64_t k, fhjit_value gk,
                           fhjit_value fwd, fhjit_value inv);
fhjit_status tg_ckks_rotate_hoisted(fhjit_graph *g, fhjit_value ct, int32_t count,
                                    const int64_t *ks, const fhjit_value *keys, fhjit_value fwd,
                                    fhjit_value inv, fhjit_value *out);
#endif
