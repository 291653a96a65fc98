/* ckks_graphs.c: SPEC section 7's whole operations built from the
 * primitives (ckks_graphs.h): modup per digit, keyswitch_digit_product,
 * add_lazy, moddown, rescale, automorphism, exactly in SPEC's order. */
#include "ckks_graphs.h"

#include <stdio.h>

/* A fresh table input of len words, named after its number. */
static fhjit_value table(fhjit_graph *g, const char *what, int64_t len) {
  char name[48];
  snprintf(name, sizeof name, "tg_%s%d", what, (int)fhjit_num_inputs(g));
  fhjit_type t = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = len};
  return fhjit_input(g, name, &t);
}

static int64_t rows_of(fhjit_graph *g, fhjit_value v) {
  fhjit_type t;
  return fhjit_value_type(g, v, &t) == FHJIT_OK ? t.rows : -1;
}

/* The digits' modup outputs of d (rows of d: the chain prefix [0, rows)):
 * up[j] for every digit holding a row of d; returns their count. */
static int modups(fhjit_graph *g, fhjit_value d, fhjit_value fwd, fhjit_value inv,
                  fhjit_value *up, int cap) {
  int64_t rows = rows_of(g, d), K = fhjit_graph_num_special(g);
  int64_t alpha = fhjit_graph_digit_size(g);
  if (rows < 1 || alpha < 1) return -1;
  int nd = 0;
  for (int64_t j = 0; j * alpha < rows && nd < cap; j++) {
    int64_t w = rows - j * alpha < alpha ? rows - j * alpha : alpha;
    up[nd] = fhjit_modup(g, d, j, fwd, inv, table(g, "up", w + w * (rows + K - w)));
    if (up[nd] < 0) return -1;
    nd++;
  }
  return nd;
}

/* moddown of both components of the accumulated digit products. */
static fhjit_value moddown2(fhjit_graph *g, fhjit_value acc, int64_t rows, fhjit_value fwd,
                            fhjit_value inv) {
  int64_t K = fhjit_graph_num_special(g);
  fhjit_value t = table(g, "md", K + K * rows + rows);
  fhjit_value k[2];
  for (int c = 0; c < 2; c++) k[c] = fhjit_moddown(g, fhjit_extract(g, acc, c), fwd, inv, t);
  return fhjit_pack(g, 2, k);
}

/* sum_j mul(auto_k(up[j]), key[j]) (k = 0: no automorphism), lazily. */
static fhjit_value inner(fhjit_graph *g, const fhjit_value *up, int nd, int64_t k,
                         fhjit_value key) {
  fhjit_value acc = FHJIT_NO_VALUE;
  for (int j = 0; j < nd; j++) {
    fhjit_value u = k ? fhjit_automorphism(g, up[j], k) : up[j];
    fhjit_value p = fhjit_keyswitch_digit_product(g, u, key, j, 0);
    acc = acc == FHJIT_NO_VALUE ? p : fhjit_add_lazy(g, acc, p);
  }
  return acc;
}

fhjit_value tg_keyswitch(fhjit_graph *g, fhjit_value d, fhjit_value key, fhjit_value fwd,
                         fhjit_value inv) {
  fhjit_value up[64];
  int nd = modups(g, d, fwd, inv, up, 64);
  if (nd < 1) return FHJIT_NO_VALUE;
  return moddown2(g, inner(g, up, nd, 0, key), rows_of(g, d), fwd, inv);
}

fhjit_value tg_ckks_relinearize(fhjit_graph *g, fhjit_value ct3, fhjit_value rlk,
                                fhjit_value fwd, fhjit_value inv) {
  fhjit_value d0 = fhjit_extract(g, ct3, 0), d1 = fhjit_extract(g, ct3, 1);
  fhjit_value k = tg_keyswitch(g, fhjit_extract(g, ct3, 2), rlk, fwd, inv);
  if (k < 0) return FHJIT_NO_VALUE;
  fhjit_value r[2] = {fhjit_add(g, d0, fhjit_extract(g, k, 0)),
                      fhjit_add(g, d1, fhjit_extract(g, k, 1))};
  return fhjit_pack(g, 2, r);
}

fhjit_value tg_ckks_rescale(fhjit_graph *g, fhjit_value ct, fhjit_value fwd, fhjit_value inv) {
  return fhjit_rescale(g, ct, fwd, inv, table(g, "rs", rows_of(g, ct) - 1));
}

fhjit_value tg_ckks_mul_relin_rescale(fhjit_graph *g, fhjit_value a, fhjit_value b,
                                      fhjit_value rlk, fhjit_value fwd, fhjit_value inv) {
  fhjit_value a0 = fhjit_extract(g, a, 0), a1 = fhjit_extract(g, a, 1);
  fhjit_value b0 = fhjit_extract(g, b, 0), b1 = fhjit_extract(g, b, 1);
  /* the tensor product (d0, d1, d2), the cross term as mul + add_lazy */
  fhjit_value d[3] = {fhjit_mul(g, a0, b0),
                      fhjit_add_lazy(g, fhjit_mul(g, a0, b1), fhjit_mul(g, a1, b0)),
                      fhjit_mul(g, a1, b1)};
  fhjit_value r = tg_ckks_relinearize(g, fhjit_pack(g, 3, d), rlk, fwd, inv);
  return r < 0 ? r : tg_ckks_rescale(g, r, fwd, inv);
}

fhjit_value tg_ckks_rotate(fhjit_graph *g, fhjit_value ct, int64_t k, fhjit_value gk,
                           fhjit_value fwd, fhjit_value inv) {
  fhjit_value c0 = fhjit_extract(g, ct, 0), c1 = fhjit_extract(g, ct, 1);
  fhjit_value ks = tg_keyswitch(g, fhjit_automorphism(g, c1, k), gk, fwd, inv);
  if (ks < 0) return FHJIT_NO_VALUE;
  fhjit_value r[2] = {fhjit_add(g, fhjit_automorphism(g, c0, k), fhjit_extract(g, ks, 0)),
                      fhjit_extract(g, ks, 1)};
  return fhjit_pack(g, 2, r);
}

fhjit_status tg_ckks_rotate_hoisted(fhjit_graph *g, fhjit_value ct, int32_t count,
                                    const int64_t *ks, const fhjit_value *keys, fhjit_value fwd,
                                    fhjit_value inv, fhjit_value *out) {
  fhjit_value c0 = fhjit_extract(g, ct, 0), c1 = fhjit_extract(g, ct, 1), up[64];
  int nd = modups(g, c1, fwd, inv, up, 64); /* one modup per digit, shared */
  if (nd < 1) return fhjit_last_status(fhjit_graph_context(g));
  int64_t rows = rows_of(g, c1);
  for (int32_t i = 0; i < count; i++) {
    fhjit_value k = moddown2(g, inner(g, up, nd, ks[i], keys[i]), rows, fwd, inv);
    if (k < 0) return fhjit_last_status(fhjit_graph_context(g));
    fhjit_value r[2] = {fhjit_add(g, fhjit_automorphism(g, c0, ks[i]), fhjit_extract(g, k, 0)),
                        fhjit_extract(g, k, 1)};
    out[i] = fhjit_pack(g, 2, r);
    if (out[i] < 0) return fhjit_last_status(fhjit_graph_context(g));
  }
  return FHJIT_OK;
}
