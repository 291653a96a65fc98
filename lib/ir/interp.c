/* interp.c: the reference interpreter (fhjit_interpret). It evaluates a bound
 * graph on host buffers with the formulas of modarith.h, node by node, each
 * computed value into a dense malloc'd temporary of its own concrete type
 * ([max(C,1), *batch, rows, n], uint64_t words). Inputs are read in place
 * through their bound layouts. Only when everything succeeded are the
 * results copied out in the radix's word type, so a failure leaves the
 * caller's buffers untouched (and results may alias inputs).
 *
 * It is deliberately plain: no fusion, no vectorisation. Every other
 * execution path is tested against it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/modarith.h"
#include "ir/interp.h"
#include "ir/ntt.h"
#include "support/support.h"



/* --------------------------------------------------------------- reading */

/* Loads word `off` of input #index's buffer. */
uint64_t ir_it_load_input(const interp *it, int32_t index, int64_t off) {
  const void *base = it->inputs[index];
  if (it->g->radix == FHJIT_R32) return ((const uint32_t *)base)[off];
  return ((const uint64_t *)base)[off];
}

/* Every input element an operation reads must be lazy, [0, 2q) for the limb
 * it is used with: the formulas of SPEC section 3 assume it (and the r32/r62
 * products would overflow otherwise). The first violation is recorded. */
static void check_lazy(interp *it, const ir_node *in, uint64_t x, int64_t limb,
                       int64_t off) {
  if (x < 2 * it->mods[limb].q || it->status) return;
  it->status = ir_error_at(it->g, in->loc, FHJIT_ERR_ARGUMENT,
                           "fhjit_interpret: input %%%s: the element at word offset %lld is "
                           "%llu, not below 2q = %llu of limb %lld (inputs must be lazy)",
                           in->name, (long long)off, (unsigned long long)x,
                           (unsigned long long)(2 * it->mods[limb].q), (long long)limb);
}

/* The element of operand v that the consumer's element (c, bidx[0..nb), row,
 * i) reads: a component axis of extent 1 or absent broadcasts; batch axes
 * are right-aligned and extent 1 broadcasts. `limb` is the modulus the value
 * is used with (the consumer's row). */
uint64_t ir_it_read_elem(interp *it, fhjit_value v, int64_t c, const int64_t *bidx, int nb,
                          int64_t row, int64_t i) {
  const ir_node *n = &it->g->nodes[v];
  const fhjit_type *t = &n->type;
  int64_t b[FHJIT_MAX_BATCH] = {0};
  int shift = nb - t->nbatch; /* >= 0: bind broadcast the consumer's batch */
  for (int a = 0; a < t->nbatch; a++) b[a] = t->batch[a] == 1 ? 0 : bidx[a + shift];
  int64_t cc = t->comps > 1 ? c : 0;
  if (n->op == IR_INPUT) {
    int64_t off = ir_layout_offset(&n->layout, t->nbatch, cc, b, row, i);
    uint64_t x = ir_it_load_input(it, n->input_index, off);
    check_lazy(it, n, x, ir_pos(it->g, v, row), off);
    return x;
  }
  return it->temp[v][ir_layout_offset(&it->dense[v], t->nbatch, cc, b, row, i)];
}

/* key[digit, comp, row_start + row, i] of a key-table input, used with the
 * modulus of limb `row`. */
static uint64_t read_key(interp *it, fhjit_value key, int64_t digit, int64_t comp,
                         int64_t key_row, int64_t limb, int64_t i) {
  const ir_node *n = &it->g->nodes[key];
  const fhjit_layout *l = &n->layout;
  int64_t off = l->offset + digit * l->digit_stride + comp * l->comp_stride +
                key_row * l->row_stride + i * l->index_stride;
  uint64_t x = ir_it_load_input(it, n->input_index, off);
  check_lazy(it, n, x, limb, off);
  return x;
}

/* The expanded value e of a compressed plaintext at dense index i (SPEC
 * section 3): cyclic p[i mod u]; contiguous p[i / repeat]; strided_sparse
 * p[i / repeat] on multiples of repeat, else the row's implicit value. */
static uint64_t expand_compressed(interp *it, const ir_node *n, int64_t n_dense,
                                  const int64_t *bidx, int nb, int64_t row, int64_t i) {
  fhjit_value pt = n->args[1];
  int64_t u = it->g->nodes[pt].type.n, repeat = n_dense / u;
  switch ((fhjit_compression)n->attr[0]) {
  case FHJIT_CYCLIC: return ir_it_read_elem(it, pt, 0, bidx, nb, row, i % u);
  case FHJIT_CONTIGUOUS: return ir_it_read_elem(it, pt, 0, bidx, nb, row, i / repeat);
  case FHJIT_STRIDED_SPARSE:
    if (i % repeat == 0) return ir_it_read_elem(it, pt, 0, bidx, nb, row, i / repeat);
    return ir_it_read_elem(it, n->args[2], 0, bidx, nb, row, 0);
  }
  return 0; /* the builder admits only the three layouts */
}

/* ------------------------------------------------------------ evaluation */

/* Component c of node n at (bidx, row, i). */
static uint64_t eval_elem(interp *it, const ir_node *n, int64_t c, const int64_t *bidx,
                          int64_t row, int64_t i) {
  const ir_modulus *m = &it->mods[ir_pos(it->g, (fhjit_value)(n - it->g->nodes), row)];
  int nb = n->type.nbatch;
#define ARG(k, comp) ir_it_read_elem(it, n->args[k], (comp), bidx, nb, row, i)
  switch (n->op) {
  case IR_ADD: return ir_mod_add(m, ARG(0, c), ARG(1, c));
  case IR_SUB: return ir_mod_sub(m, ARG(0, c), ARG(1, c));
  case IR_ADD_LAZY: return ir_mod_add_lazy(m, ARG(0, c), ARG(1, c));
  case IR_MUL: return ir_mod_mul(m, ARG(0, c), ARG(1, c));
  case IR_NEG: return ir_mod_neg(m, ARG(0, c));
  case IR_TO_MONT: return ir_mod_to_mont(m, ARG(0, c));
  case IR_FROM_MONT: return ir_mod_from_mont(m, ARG(0, c));
  /* Plaintext operands contribute their component 0. */
  case IR_MUL_PLAIN: return ir_mod_mul(m, ARG(0, c), ARG(1, 0));
  case IR_ADD_PLAIN: return c == 0 ? ir_mod_add_lazy(m, ARG(0, 0), ARG(1, 0)) : ARG(0, c);
  case IR_MUL_COMPRESSED:
    return ir_mod_mul(m, ARG(0, c), expand_compressed(it, n, n->type.n, bidx, nb, row, i));
  case IR_ADD_COMPRESSED: {
    if (c != 0) return ARG(0, c);
    uint64_t e = expand_compressed(it, n, n->type.n, bidx, nb, row, i);
    if (n->attr[1] == FHJIT_DOMAIN_COEF) e = ir_mod_from_mont(m, e);
    return ir_mod_add(m, ARG(0, 0), e);
  }
  case IR_KS_DIGIT_PRODUCT: { /* key rows by chain position (SPEC section 7) */
    int64_t pos = ir_pos(it->g, n->args[0], row);
    return ir_mod_mul(m, ARG(0, 0),
                      read_key(it, n->args[1], n->attr[0], c, n->attr[1] + pos, pos, i));
  }
  case IR_ROWS: return ir_it_read_elem(it, n->args[0], c, bidx, nb, row + n->attr[0], i);
  case IR_CONCAT: {
    int64_t ra = it->g->nodes[n->args[0]].type.rows;
    if (row < ra) return ARG(0, c);
    return ir_it_read_elem(it, n->args[1], c, bidx, nb, row - ra, i);
  }
  case IR_EXTRACT: return ARG(0, n->attr[0]);
  case IR_PACK: return ARG(c, 0);
  default: SP_UNREACHABLE("an elementwise op without interpreter semantics");
  }
#undef ARG
}

static fhjit_status eval_ntt(interp *it, fhjit_value v, uint64_t *out);

/* Evaluates computed node v into a new dense temporary. */
static fhjit_status eval_node(interp *it, fhjit_value v) {
  const ir_node *n = &it->g->nodes[v];
  const fhjit_type *t = &n->type;
  int64_t total = fhjit_type_elements(t);
  if (total < 0 || (uint64_t)total > SIZE_MAX / sizeof(uint64_t))
    return ir_error_at(it->g, n->loc, FHJIT_ERR_MEMORY,
                       "fhjit_interpret: %%%s is too large for host memory", n->name);
  uint64_t *out = malloc(sizeof *out * (size_t)(total ? total : 1));
  if (!out)
    return ir_error_at(it->g, n->loc, FHJIT_ERR_MEMORY,
                       "fhjit_interpret: out of memory for %%%s (%lld elements)", n->name,
                       (long long)total);
  fhjit_dense_layout(t, &it->dense[v]);
  it->temp[v] = out;
  if (n->op == IR_NTT) return eval_ntt(it, v, out);
  ir_op_class cls = ir_op_class_of(n->op);
  if (cls == IR_CLASS_PERMUTE || cls == IR_CLASS_MIXING) return ir_it_eval_mixing(it, v, out);
  /* Dense order: flat = (((c * batch...) * rows + row) * n + i). */
  for (int64_t flat = 0; flat < total && !it->status; flat++) {
    int64_t rest = flat, bidx[FHJIT_MAX_BATCH] = {0};
    int64_t i = rest % t->n;
    rest /= t->n;
    int64_t row = rest % t->rows;
    rest /= t->rows;
    for (int a = t->nbatch - 1; a >= 0; a--) {
      bidx[a] = rest % t->batch[a];
      rest /= t->batch[a];
    }
    out[flat] = eval_elem(it, n, rest, bidx, row, i);
  }
  return it->status;
}

/* ------------------------------------------------------------------- NTT */


/* An NTT node: every (component, batch entry, row) of the operand gathered
 * into one row, transformed by the reference of ntt_ref.c, stored densely. */
static fhjit_status eval_ntt(interp *it, fhjit_value v, uint64_t *out) {
  fhjit_graph *g = it->g;
  const ir_node *n = &g->nodes[v], *tw = &g->nodes[n->args[1]];
  const fhjit_type *t = &n->type;
  ir_ntt_kind kind = (ir_ntt_kind)n->attr[0];
  int64_t len = t->n, nrows = fhjit_type_elements(t) / len;
  int logn = ir_ntt_log2(len);
  uint64_t *row = malloc(sizeof *row * (size_t)len), *tab = malloc(sizeof *tab * (size_t)len);
  fhjit_status st = FHJIT_OK;
  if (!row || !tab) {
    st = ir_error_at(g, n->loc, FHJIT_ERR_MEMORY, "fhjit_interpret: out of memory for %%%s",
                     n->name);
    goto done;
  }
  for (int64_t flat = 0; flat < nrows && !st; flat++) {
    int64_t rest = flat, bidx[FHJIT_MAX_BATCH] = {0};
    int64_t r = rest % t->rows;
    rest /= t->rows;
    for (int a = t->nbatch - 1; a >= 0; a--) {
      bidx[a] = rest % t->batch[a];
      rest /= t->batch[a];
    }
    int64_t pos = ir_pos(g, n->args[0], r); /* twiddles and parameters by position */
    const ir_modulus *m = &it->mods[pos];
    char why[120]; /* the first `rows` transforms see every limb once */
    if (flat < t->rows && ir_ntt_modulus_problem(m->q, len, why, sizeof why)) {
      st = ir_error_at(g, n->loc, FHJIT_ERR_MODULUS,
                       "fhjit_interpret: %%%s = ntt: limb %lld has q = %llu, which is %s (an "
                       "NTT of length %lld needs a prime q = 1 mod 2N)",
                       n->name, (long long)pos, (unsigned long long)m->q, why, (long long)len);
      break;
    }
    uint64_t n_inv_r = 0;
    if (!ir_ntt_is_forward(kind)) {
      n_inv_r = ir_it_load_param(g->radix, it->params, it->pstride, 7, pos);
      uint64_t want = ir_mulmod(ir_invmod((uint64_t)len, m->q), ir_mont_r1(m->q, ir_word_bits(g->radix)), m->q);
      if (n_inv_r != want) {
        st = ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                      "fhjit_interpret: graph @%s: parameter table column %lld: row 7 holds "
                      "%llu, not N^-1 R mod q = %llu for N = %lld (the inverse NTT %%%s needs "
                      "it)",
                      g->name, (long long)pos, (unsigned long long)n_inv_r,
                      (unsigned long long)want, (long long)len, n->name);
        break;
      }
    }
    for (int64_t i = 0; i < len; i++) {
      int64_t off = ir_layout_offset(&tw->layout, 0, 0, NULL, pos, i);
      tab[i] = ir_it_load_input(it, tw->input_index, off);
      /* the butterflies' products need lazy twiddles, like any operand */
      if (i > 0 && tab[i] >= 2 * m->q && !st)
        st = ir_error_at(g, tw->loc, FHJIT_ERR_ARGUMENT,
                         "fhjit_interpret: twiddle table %%%s: the entry at word offset %lld "
                         "is %llu, not below 2q = %llu of limb %lld",
                         tw->name, (long long)off, (unsigned long long)tab[i],
                         (unsigned long long)(2 * m->q), (long long)pos);
      row[i] = ir_it_read_elem(it, n->args[0], rest, bidx, t->nbatch, r, i);
    }
    if (!st) st = ir_it_check_twiddles(it, tw, pos, logn, tab);
    if (st || it->status) break;
    ir_ntt_row(kind, m, n_inv_r, logn, tab, row);
    memcpy(out + flat * len, row, sizeof *row * (size_t)len);
  }
  if (!st) st = it->status;
done:
  free(row);
  free(tab);
  return st;
}

/* r32 kernels may compute entries as products of two others (ntt_plan
 * twsplit), which SPEC's tables (canonical powers of a root) allow: a
 * table of any other words is refused rather than read two ways. */
fhjit_status ir_it_check_twiddles(interp *it, const ir_node *tw, int64_t pos, int logn,
                                  const uint64_t *tab) {
  fhjit_graph *g = it->g;
  if (g->radix != FHJIT_R32) return FHJIT_OK;
  int cached = it->tw_checked && tw->input_index >= 0 && pos >= 0 && pos < it->nmods;
  size_t at = cached ? (size_t)tw->input_index * (size_t)it->nmods + (size_t)pos : 0;
  if (cached && it->tw_checked[at]) return FHJIT_OK;
  int64_t bad = ir_ntt_table_mismatch(&it->mods[pos], logn, tab);
  if (bad == -2)
    return ir_error(g->ctx, FHJIT_ERR_MEMORY, "fhjit_interpret: out of memory checking %%%s",
                    tw->name);
  if (bad >= 0)
    return ir_error_at(g, tw->loc, FHJIT_ERR_ARGUMENT,
                       "fhjit_interpret: twiddle table %%%s, limb %lld: entry %lld is %llu, not "
                       "the canonical power of the root in entry N/2 that SPEC 5's tables hold "
                       "(r32 tables are fhjit_twiddle_tables' words)",
                       tw->name, (long long)pos, (long long)bad, (unsigned long long)tab[bad]);
  if (cached) it->tw_checked[at] = 1;
  return FHJIT_OK;
}

/* ------------------------------------------------------ parameter table */

uint64_t ir_it_load_param(fhjit_radix radix, const void *params, int64_t pstride, int r,
                           int64_t limb) {
  int64_t off = r * pstride + limb;
  if (radix == FHJIT_R32) return ((const uint32_t *)params)[off];
  return ((const uint64_t *)params)[off];
}

/* Reads the moduli from the rows kernels read (0: 2q; 3, 4: k halves; 5:
 * R^2 mod q) and checks that they are what SPEC section 2 says, so that a
 * wrong table is reported instead of silently giving other numbers. */
static fhjit_status read_params(interp *it, const void *params, int64_t pstride,
                                int64_t limbs) {
  fhjit_graph *g = it->g;
  fhjit_radix radix = g->radix;
  int w = ir_word_bits(radix), half = w / 2;
  uint64_t rmask = (UINT64_C(1) << w) - 1;
  for (int64_t j = 0; j < limbs; j++) {
    uint64_t two_q = ir_it_load_param(radix, params, pstride, 0, j);
    uint64_t q = two_q / 2;
    if ((two_q & 1) || q < 3 || (q & 1) == 0 || q >= ir_modulus_limit(radix))
      return ir_error(g->ctx, FHJIT_ERR_MODULUS,
                      "fhjit_interpret: graph @%s: parameter table column %lld: row 0 holds "
                      "%llu, which is not 2q for an odd modulus 3 <= q < 2^%d",
                      g->name, (long long)j, (unsigned long long)two_q, w == 32 ? 30 : 60);
    uint64_t k = ir_it_load_param(radix, params, pstride, 3, j) |
                 (ir_it_load_param(radix, params, pstride, 4, j) << half);
    if (((k * q + 1) & rmask) != 0)
      return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                      "fhjit_interpret: graph @%s: parameter table column %lld: rows 3 and 4 "
                      "do not hold k = -q^-1 mod 2^%d for q = %llu",
                      g->name, (long long)j, w, (unsigned long long)q);
    it->mods[j] = ir_modulus_make(radix, q);
    uint64_t r2 = ir_it_load_param(radix, params, pstride, 5, j);
    if (r2 != it->mods[j].r2)
      return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                      "fhjit_interpret: graph @%s: parameter table column %lld: row 5 holds "
                      "%llu, not R^2 mod q = %llu for q = %llu",
                      g->name, (long long)j, (unsigned long long)r2,
                      (unsigned long long)it->mods[j].r2, (unsigned long long)q);
  }
  return FHJIT_OK;
}

/* ------------------------------------------------------------------ entry */

static void store_word(fhjit_radix radix, void *buf, int64_t i, uint64_t x) {
  if (radix == FHJIT_R32) ((uint32_t *)buf)[i] = (uint32_t)x;
  else ((uint64_t *)buf)[i] = x;
}

fhjit_status fhjit_interpret(fhjit_graph *g, const void *params, int64_t pstride,
                             const void *const *inputs, void *const *results) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  const char *fn = "fhjit_interpret";
  fhjit_status st0 = ir_check_run_args(g, fn, params, inputs, results);
  if (st0) return st0;

  /* Live nodes: those the results depend on. Their rows fix how many
   * columns of the parameter table are read. */
  int32_t nn = g->nnodes;
  char *live = calloc((size_t)(nn ? nn : 1), 1);
  int32_t *last_use = malloc(sizeof *last_use * (size_t)(nn ? nn : 1));
  interp it = {.g = g, .inputs = inputs, .params = params, .pstride = pstride};
  it.temp = calloc((size_t)(nn ? nn : 1), sizeof *it.temp);
  it.dense = calloc((size_t)(nn ? nn : 1), sizeof *it.dense);
  fhjit_status st = FHJIT_OK;
  if (!live || !last_use || !it.temp || !it.dense) {
    st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
    goto done;
  }
  for (int32_t k = 0; k < g->nresults; k++) live[g->results[k].value] = 1;
  int64_t limbs = 0;
  for (int32_t v = nn - 1; v >= 0; v--) {
    last_use[v] = -1;
    if (!live[v]) continue;
    const ir_node *n = &g->nodes[v];
    for (int a = 0; a < n->nargs; a++) live[n->args[a]] = 1;
    if (n->type.kind == FHJIT_KIND_POLY) /* columns by chain position */
      for (int64_t r = 0; r < n->type.rows; r++)
        if (ir_pos(g, v, r) + 1 > limbs) limbs = ir_pos(g, v, r) + 1;
  }
  for (int32_t v = 0; v < nn; v++)
    if (live[v])
      for (int a = 0; a < g->nodes[v].nargs; a++) last_use[g->nodes[v].args[a]] = v;
  if ((st = ir_check_pstride(g, fn, pstride, limbs))) goto done;
  it.mods = malloc(sizeof *it.mods * (size_t)(limbs ? limbs : 1));
  if (!it.mods) {
    st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
    goto done;
  }
  it.nmods = limbs;
  it.tw_checked = calloc((size_t)(g->ninputs ? g->ninputs : 1) * (size_t)(limbs ? limbs : 1), 1);
  if (!it.tw_checked) {
    st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
    goto done;
  }
  if ((st = read_params(&it, params, pstride, limbs))) goto done;

  for (int32_t v = 0; v < nn; v++) {
    if (!live[v] || g->nodes[v].op == IR_INPUT) continue;
    if ((st = eval_node(&it, v))) goto done;
    /* Operands used for the last time can go (results are kept). */
    for (int a = 0; a < g->nodes[v].nargs; a++) {
      fhjit_value arg = g->nodes[v].args[a];
      if (last_use[arg] == v && g->result_of[arg] < 0) {
        free(it.temp[arg]);
        it.temp[arg] = NULL;
      }
    }
  }

  /* Nothing failed: now, and only now, write the results. */
  for (int32_t k = 0; k < g->nresults; k++) {
    fhjit_value v = g->results[k].value;
    int64_t total = fhjit_type_elements(&g->results[k].type);
    for (int64_t e = 0; e < total; e++) store_word(g->radix, results[k], e, it.temp[v][e]);
  }

done:
  if (it.temp)
    for (int32_t v = 0; v < nn; v++) free(it.temp[v]);
  free(it.temp);
  free(it.dense);
  free(it.mods);
  free(it.tw_checked);
  free(live);
  free(last_use);
  return st;
}
