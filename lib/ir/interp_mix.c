/* interp_mix.c: the reference interpreter of SPEC section 7's row-mixing and
 * permuting ops (automorphism, bconv, rescale, modup, moddown), plain loops
 * over SPEC's formulas. Each polynomial (component, batch entry) is read row
 * by row, transformed with the NTT reference (ntt_ref.c) where SPEC says
 * so, and written densely. Every table is checked word for word against
 * the one the chain gives (tables.c), and every twiddle row (lazy; at r32
 * a canonical power table, ir_it_check_twiddles) and inverse scale
 * (parameter row 7) against SPEC, so a wrong table is an error that names
 * it, never other numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ntt.h"
#include "ir/tables.h"

typedef struct mix {
  interp *it;
  fhjit_graph *g;
  const ir_node *n;
  fhjit_value v;
  int64_t len; /* N */
  int logn;
  uint64_t *table; /* the validated table words, or NULL */
  uint64_t *tw;    /* one twiddle row */
} mix;

static uint64_t canon(uint64_t a, uint64_t q) {
  while (a >= q) a -= q;
  return a;
}

/* ---------------------------------------------------------------- checks */

/* The op's table input holds exactly the words the chain gives. */
static fhjit_status check_table(mix *x, int targ) {
  interp *it = x->it;
  fhjit_graph *g = x->g;
  uint64_t *chain = malloc(sizeof *chain * (size_t)(it->nmods ? it->nmods : 1));
  if (!chain) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "fhjit_interpret: out of memory");
  for (int64_t p = 0; p < it->nmods; p++) chain[p] = it->mods[p].q;
  fhjit_status st = ir_node_table(g, x->n, chain, &x->table);
  free(chain);
  if (st) return st;
  const ir_node *tab = &g->nodes[x->n->args[targ]];
  int64_t len = ir_table_len(g, x->n);
  for (int64_t i = 0; i < len; i++) {
    int64_t off = ir_layout_offset(&tab->layout, 0, 0, NULL, 0, i);
    uint64_t w = ir_it_load_input(it, tab->input_index, off);
    if (w != x->table[i])
      return ir_error_at(g, x->n->loc, FHJIT_ERR_ARGUMENT,
                         "fhjit_interpret: %%%s = %s: table %%%s: word %lld holds %llu, not %llu "
                         "(build it with fhjit_input_table or the fhjit_*_table helpers; "
                         "docs/section7.md)",
                         x->n->name, ir_op_name(x->n->op), tab->name, (long long)i,
                         (unsigned long long)w, (unsigned long long)x->table[i]);
  }
  return FHJIT_OK;
}

/* Twiddle row `pos` of operand targ (1: forward, 2: inverse) into x->tw. */
static fhjit_status load_twiddles(mix *x, int targ, int64_t pos) {
  interp *it = x->it;
  const ir_node *tw = &x->g->nodes[x->n->args[targ]];
  const ir_modulus *m = &it->mods[pos];
  char why[120];
  if (ir_ntt_modulus_problem(m->q, x->len, why, sizeof why))
    return ir_error_at(x->g, x->n->loc, FHJIT_ERR_MODULUS,
                       "fhjit_interpret: %%%s = %s: chain position %lld has q = %llu, which is "
                       "%s (an NTT of length %lld needs a prime q = 1 mod 2N)",
                       x->n->name, ir_op_name(x->n->op), (long long)pos,
                       (unsigned long long)m->q, why, (long long)x->len);
  for (int64_t i = 0; i < x->len; i++) {
    int64_t off = ir_layout_offset(&tw->layout, 0, 0, NULL, pos, i);
    x->tw[i] = ir_it_load_input(it, tw->input_index, off);
    if (i > 0 && x->tw[i] >= 2 * m->q)
      return ir_error_at(x->g, tw->loc, FHJIT_ERR_ARGUMENT,
                         "fhjit_interpret: twiddle table %%%s: the entry at word offset %lld "
                         "is %llu, not below 2q = %llu of chain position %lld",
                         tw->name, (long long)off, (unsigned long long)x->tw[i],
                         (unsigned long long)(2 * m->q), (long long)pos);
  }
  return ir_it_check_twiddles(it, tw, pos, x->logn, x->tw);
}

/* One of section 5's transforms of a row at chain position pos. */
static fhjit_status transform(mix *x, ir_ntt_kind kind, int64_t pos, uint64_t *row) {
  interp *it = x->it;
  fhjit_graph *g = x->g;
  const ir_modulus *m = &it->mods[pos];
  uint64_t n_inv_r = 0;
  if (!ir_ntt_is_forward(kind)) {
    n_inv_r = ir_it_load_param(g->radix, it->params, it->pstride, 7, pos);
    uint64_t want = ir_mulmod(ir_invmod((uint64_t)x->len, m->q),
                              ir_mont_r1(m->q, ir_word_bits(g->radix)), m->q);
    if (n_inv_r != want)
      return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                      "fhjit_interpret: graph @%s: parameter table column %lld: row 7 holds "
                      "%llu, not N^-1 R mod q = %llu for N = %lld (%%%s = %s needs it)",
                      g->name, (long long)pos, (unsigned long long)n_inv_r,
                      (unsigned long long)want, (long long)x->len, x->n->name,
                      ir_op_name(x->n->op));
  }
  fhjit_status st = load_twiddles(x, ir_ntt_is_forward(kind) ? 1 : 2, pos);
  if (st) return st;
  ir_ntt_row(kind, m, n_inv_r, x->logn, x->tw, row);
  return FHJIT_OK;
}

/* ------------------------------------------------------------ formulas */

/* Fast basis conversion of one coefficient (SPEC section 7): w[r] the
 * source words (form `form`) mod s_r; a[r] = (h_r^-1 mod s_r) R mod s_r;
 * cj[r] = (h_r mod t) R mod t. V_r = X_r h_r^-1 mod s_r (one REDC);
 * sum V_r (h_r R mod t) = Y R (mod t); the standard form takes one more
 * REDC. Canonical. */
static uint64_t bconv_coef(const interp *it, const int64_t *spos, const uint64_t *w,
                           int64_t nsrc, fhjit_form form, const uint64_t *a, const uint64_t *cj,
                           int64_t tpos, fhjit_form out_form) {
  const ir_modulus *tm = &it->mods[tpos];
  uint64_t acc = 0;
  for (int64_t r = 0; r < nsrc; r++) {
    const ir_modulus *sm = &it->mods[spos[r]];
    uint64_t xr = canon(form == FHJIT_FORM_MONT ? ir_mod_from_mont(sm, w[r]) : w[r], sm->q);
    uint64_t vr = canon(ir_mod_redc(sm, (ir_u128)xr * a[r]), sm->q);
    acc = (uint64_t)(((ir_u128)acc + (ir_u128)vr * cj[r]) % tm->q);
  }
  return out_form == FHJIT_FORM_MONT ? acc : canon(ir_mod_from_mont(tm, acc), tm->q);
}

/* Coefficient domain: out[i*k mod 2N] = canon(x[i]), or neg(x[i]) past N.
 * NTT domain: out[j] = x[br((k (2 br(j) + 1) mod 2N - 1) / 2)]. */
static void automorphism_row(const mix *x, const ir_modulus *m, const uint64_t *in,
                             uint64_t *out) {
  uint64_t n = (uint64_t)x->len, k = (uint64_t)x->n->attr[0];
  if (x->n->type.domain == FHJIT_DOMAIN_COEF) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t e = (i * k) % (2 * n);
      if (e < n) out[e] = canon(in[i], m->q);
      else out[e - n] = ir_mod_neg(m, in[i]);
    }
    return;
  }
  int bits = 0;
  while ((UINT64_C(1) << bits) < n) bits++;
  for (uint64_t j = 0; j < n; j++) {
    uint64_t e = (k * (2 * ir_bitrev(j, bits) + 1)) % (2 * n);
    out[j] = in[ir_bitrev((e - 1) / 2, bits)];
  }
}

/* ---------------------------------------------------------------- ops */

/* The polynomial at (c, bidx): its input rows in xr (rows_in x N). */
typedef struct slice {
  int64_t c, bidx[FHJIT_MAX_BATCH];
  uint64_t *xr;   /* operand rows */
  uint64_t *out;  /* the dense result, rows x N at this slice */
  int64_t rows_in;
} slice;

static int64_t apos(const mix *x, int64_t r) { return ir_pos(x->g, x->n->args[0], r); }
static int64_t opos(const mix *x, int64_t r) { return ir_pos(x->g, x->v, r); }

static fhjit_status op_automorphism(mix *x, slice *s) {
  for (int64_t r = 0; r < s->rows_in; r++)
    automorphism_row(x, &x->it->mods[apos(x, r)], s->xr + r * x->len, s->out + r * x->len);
  return FHJIT_OK;
}

static fhjit_status op_bconv(mix *x, slice *s) {
  int64_t l = s->rows_in, m = x->n->decl_nbasis;
  int64_t *spos = malloc(sizeof *spos * (size_t)l);
  uint64_t *w = malloc(sizeof *w * (size_t)l);
  if (!spos || !w) {
    free(spos);
    free(w);
    return ir_error(x->g->ctx, FHJIT_ERR_MEMORY, "fhjit_interpret: out of memory");
  }
  for (int64_t r = 0; r < l; r++) spos[r] = apos(x, r);
  fhjit_form form = x->n->type.form;
  for (int64_t i = 0; i < x->len; i++) {
    for (int64_t r = 0; r < l; r++) w[r] = s->xr[r * x->len + i];
    for (int64_t j = 0; j < m; j++)
      s->out[j * x->len + i] = bconv_coef(x->it, spos, w, l, form, x->table,
                                          x->table + l + j * l, opos(x, j), form);
  }
  free(spos);
  free(w);
  return FHJIT_OK;
}

/* SPEC section 7's three steps: the last row to the coefficient side,
 * centred by h; each other row minus it, times q^-1 (table). */
static fhjit_status op_rescale(mix *x, slice *s, uint64_t *c) {
  int64_t l = s->rows_in - 1, plast = apos(x, l);
  uint64_t q = x->it->mods[plast].q, h = q / 2;
  memcpy(c, s->xr + l * x->len, sizeof *c * (size_t)x->len);
  fhjit_status st = transform(x, IR_NTT_TO_STD, plast, c);
  for (int64_t i = 0; i < x->len && !st; i++) c[i] = c[i] + h >= q ? c[i] + h - q : c[i] + h;
  for (int64_t r = 0; r < l && !st; r++) {
    const ir_modulus *mi = &x->it->mods[apos(x, r)];
    uint64_t *u = s->out + r * x->len, hq = h % mi->q;
    for (int64_t i = 0; i < x->len; i++) {
      uint64_t ci = c[i] % mi->q;
      u[i] = ci >= hq ? ci - hq : ci + mi->q - hq;
    }
    if ((st = transform(x, IR_NTT_STD_TO_NTT, apos(x, r), u))) break;
    for (int64_t i = 0; i < x->len; i++)
      u[i] = ir_mod_mul(mi, ir_mod_sub(mi, s->xr[r * x->len + i], u[i]), x->table[r]);
  }
  return st;
}

/* bconv of the coefficient-Montgomery rows y (positions spos) to chain
 * position t, then the forward transform from coefficient-Montgomery. */
static fhjit_status convert_row(mix *x, const uint64_t *y, const int64_t *spos, int64_t nsrc,
                                const uint64_t *cj, int64_t t, uint64_t *out, uint64_t *w) {
  for (int64_t i = 0; i < x->len; i++) {
    for (int64_t r = 0; r < nsrc; r++) w[r] = y[r * x->len + i];
    out[i] = bconv_coef(x->it, spos, w, nsrc, FHJIT_FORM_MONT, x->table, cj, t,
                        FHJIT_FORM_MONT);
  }
  return transform(x, IR_NTT_MONT_TO_NTT, t, out);
}

/* Rows src[0..ns) of the slice to coefficient-Montgomery form, into y. */
static fhjit_status to_coef(mix *x, slice *s, const int64_t *src, int64_t ns, int64_t *spos,
                            uint64_t *y) {
  for (int64_t r = 0; r < ns; r++) {
    spos[r] = apos(x, src[r]);
    memcpy(y + r * x->len, s->xr + src[r] * x->len, sizeof *y * (size_t)x->len);
    fhjit_status st = transform(x, IR_NTT_TO_MONT, spos[r], y + r * x->len);
    if (st) return st;
  }
  return FHJIT_OK;
}

static fhjit_status op_modup(mix *x, slice *s, int64_t *src, int64_t *spos, uint64_t *y,
                             uint64_t *w) {
  int64_t l = s->rows_in, nd = ir_digit_rows(x->g, x->n->args[0], x->n->attr[0], src);
  fhjit_status st = to_coef(x, s, src, nd, spos, y);
  int64_t jdx = 0, next_d = 0;
  for (int64_t o = 0; o < l + x->g->nspecial && !st; o++) {
    uint64_t *row = s->out + o * x->len;
    if (next_d < nd && o == src[next_d]) { /* the digit's own rows: unchanged */
      memcpy(row, s->xr + o * x->len, sizeof *row * (size_t)x->len);
      next_d++;
      continue;
    }
    st = convert_row(x, y, spos, nd, x->table + nd + jdx * nd, opos(x, o), row, w);
    jdx++;
  }
  return st;
}

static fhjit_status op_moddown(mix *x, slice *s, int64_t *src, int64_t *spos, uint64_t *y,
                               uint64_t *w) {
  int64_t K = x->g->nspecial, l = s->rows_in - K;
  for (int64_t k = 0; k < K; k++) src[k] = l + k;
  fhjit_status st = to_coef(x, s, src, K, spos, y);
  const uint64_t *pinv = x->table + K + K * l;
  for (int64_t r = 0; r < l && !st; r++) {
    const ir_modulus *mi = &x->it->mods[apos(x, r)];
    uint64_t *u = s->out + r * x->len;
    if ((st = convert_row(x, y, spos, K, x->table + K + r * K, apos(x, r), u, w))) break;
    for (int64_t i = 0; i < x->len; i++)
      u[i] = ir_mod_mul(mi, ir_mod_sub(mi, s->xr[r * x->len + i], u[i]), pinv[r]);
  }
  return st;
}

/* ---------------------------------------------------------------- entry */

static fhjit_status eval_slices(mix *x, uint64_t *out) {
  const fhjit_type *t = &x->n->type;
  int64_t rows_in = x->g->nodes[x->n->args[0]].type.rows, rows_out = t->rows;
  int64_t nslices = fhjit_type_elements(t) / (rows_out * x->len);
  int64_t big = rows_in + rows_out + 1;
  slice s = {.rows_in = rows_in};
  s.xr = malloc(sizeof *s.xr * (size_t)(rows_in * x->len));
  uint64_t *y = malloc(sizeof *y * (size_t)(big * x->len)), *w = malloc(sizeof *w * (size_t)big);
  int64_t *src = malloc(sizeof *src * (size_t)big), *spos = malloc(sizeof *spos * (size_t)big);
  x->tw = malloc(sizeof *x->tw * (size_t)x->len);
  fhjit_status st = FHJIT_OK;
  if (!s.xr || !y || !w || !src || !spos || !x->tw)
    st = ir_error(x->g->ctx, FHJIT_ERR_MEMORY, "fhjit_interpret: out of memory");
  for (int64_t sl = 0; sl < nslices && !st; sl++) {
    int64_t rest = sl;
    for (int a = t->nbatch - 1; a >= 0; a--) {
      s.bidx[a] = rest % t->batch[a];
      rest /= t->batch[a];
    }
    s.c = rest;
    s.out = out + sl * rows_out * x->len; /* dense: (c, batch) major */
    for (int64_t r = 0; r < rows_in; r++)
      for (int64_t i = 0; i < x->len; i++)
        s.xr[r * x->len + i] =
            ir_it_read_elem(x->it, x->n->args[0], s.c, s.bidx, t->nbatch, r, i);
    if ((st = x->it->status)) break;
    switch (x->n->op) {
    case IR_AUTOMORPHISM: st = op_automorphism(x, &s); break;
    case IR_BCONV: st = op_bconv(x, &s); break;
    case IR_RESCALE: st = op_rescale(x, &s, y); break;
    case IR_MODUP: st = op_modup(x, &s, src, spos, y, w); break;
    case IR_MODDOWN: st = op_moddown(x, &s, src, spos, y, w); break;
    default: SP_UNREACHABLE("a section 7 op without interpreter semantics");
    }
  }
  free(s.xr);
  free(y);
  free(w);
  free(src);
  free(spos);
  free(x->tw);
  return st;
}

fhjit_status ir_it_eval_mixing(interp *it, fhjit_value v, uint64_t *out) {
  mix x = {.it = it, .g = it->g, .n = &it->g->nodes[v], .v = v};
  x.len = x.n->type.n;
  x.logn = 0;
  while ((INT64_C(1) << x.logn) < x.len) x.logn++;
  fhjit_status st = FHJIT_OK;
  if (x.n->op == IR_BCONV) st = check_table(&x, 1);
  else if (x.n->op != IR_AUTOMORPHISM) st = check_table(&x, 3);
  if (!st) st = eval_slices(&x, out);
  free(x.table);
  return st;
}
