/* build_ckks.c: the composite builders of SPEC section 7's whole operations
 * (issues 16 and 17): the hybrid key switch, relinearisation, rescaling of
 * a ciphertext, HMult + relinearise + rescale, rotation and hoisted
 * rotations. Each appends the ops of build_mix.c and builder.c that SPEC
 * writes the operation as (modup per non-empty digit, digit products at
 * row_start 0, add_lazy, moddown, rescale, automorphism, extract, pack,
 * mul, add) and the constant-table inputs they read, so every later layer
 * (binding, interpreter, lowering, hash, text) sees only ordinary ops.
 *
 * A key switch needs the digits of its operand's level when it is built:
 * which digits are empty decides which modups exist, and the table sizes
 * depend on the rows. Bases are otherwise fixed by fhjit_bind, so
 * static_basis() derives the operand's basis from the graph's structure
 * (inputs' stated bases or [0, rows), then each op's rule of basis.c);
 * fhjit_bind still checks every rule afterwards. A composite that fails
 * part-way drops what it added (ir_truncate): a failed call leaves the
 * graph as it was. Names, table order and expansions: docs/ckks.md. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ------------------------------------------------------------ names */

#define PREFIX_MAX 96

/* 1 when some value is named `p` or `p.`... */
static int prefix_used(const fhjit_graph *g, const char *p) {
  size_t len = strlen(p);
  for (int32_t i = 0; i < g->nnodes; i++) {
    const char *s = g->nodes[i].name;
    if (s && strncmp(s, p, len) == 0 && (s[len] == 0 || s[len] == '.')) return 1;
  }
  return 0;
}

/* The prefix of a composite's names into out: `want` (the text's value
 * name) or stem + the first id it will add, with _1, _2, ... until no value
 * uses it. */
static void pick_prefix(const fhjit_graph *g, const char *want, const char *stem, char *out) {
  char base[PREFIX_MAX - 12]; /* room for _k */
  if (want && strlen(want) < sizeof base) snprintf(base, sizeof base, "%s", want);
  else snprintf(base, sizeof base, "%.8s%d", stem, (int)g->nnodes);
  snprintf(out, PREFIX_MAX, "%s", base);
  for (int k = 1; prefix_used(g, out); k++) snprintf(out, PREFIX_MAX, "%s_%d", base, k);
}

/* Names v "prefix" + the formatted suffix; v itself, or FHJIT_NO_VALUE
 * (v failed, or the name could not be set: error recorded). */
static fhjit_value named(fhjit_graph *g, fhjit_value v, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static fhjit_value named(fhjit_graph *g, fhjit_value v, const char *prefix, const char *fmt,
                         ...) {
  if (v == FHJIT_NO_VALUE) return v;
  char name[PREFIX_MAX + 48];
  size_t len = (size_t)snprintf(name, sizeof name, "%s", prefix);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name + len, sizeof name - len, fmt, ap);
  va_end(ap);
  return fhjit_set_name(g, v, name) == FHJIT_OK ? v : FHJIT_NO_VALUE;
}

/* A constant-table input of len words named prefix + suffix. */
static fhjit_value table_input(fhjit_graph *g, int64_t len, const char *prefix,
                               const char *suffix) {
  char name[PREFIX_MAX + 48];
  snprintf(name, sizeof name, "%s%s", prefix, suffix);
  fhjit_type t = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = len};
  return fhjit_input(g, name, &t);
}

/* ------------------------------------------------------ static bases */

/* The basis value v will be bound on (malloc'd, *rows positions), from the
 * structure of the graph: what fhjit_bind will compute (basis.c), given
 * that its rules hold. NULL with the error recorded when an input on the
 * way has unknown rows (its basis is then unknown) or out of memory. */
static int32_t *static_basis(fhjit_graph *g, const char *op, fhjit_value v, int64_t *rows) {
  int32_t n = v + 1;
  char *need = calloc((size_t)n, 1);
  int32_t **b = calloc((size_t)n, sizeof *b);
  int64_t *nb = calloc((size_t)n, sizeof *nb);
  int32_t *res = NULL;
  if (!need || !b || !nb) goto oom;
  /* the values whose bases v's depends on: operand 0 (the basis-carrying
   * one of every op) and both sides of a concat */
  need[v] = 1;
  for (int32_t i = v; i >= 0; i--) {
    const ir_node *x = &g->nodes[i];
    if (!need[i] || x->op == IR_INPUT || x->op == IR_BCONV) continue;
    need[x->args[0]] = 1;
    if (x->op == IR_CONCAT) need[x->args[1]] = 1;
  }
  int64_t K = g->nspecial;
  for (int32_t i = 0; i < n; i++) {
    if (!need[i]) continue;
    const ir_node *x = &g->nodes[i];
    const int32_t *a = x->op == IR_INPUT || x->op == IR_BCONV ? NULL : b[x->args[0]];
    int64_t na = a ? nb[x->args[0]] : 0, cnt = na, from = 0;
    switch (x->op) {
    case IR_INPUT:
      if (x->decl_basis) {
        cnt = x->decl_nbasis;
      } else if (x->type.rows == FHJIT_UNKNOWN) {
        ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                    "%s: the rows of input %%%s are not known ('?'); the key's digits at the "
                    "operand's level depend on its basis (declare its rows or its basis)",
                    op, x->name);
        goto fail;
      } else {
        cnt = x->type.rows;
      }
      /* a basis holds distinct chain positions: more rows than the chain
       * has is an error (and no allocation of that size) */
      if (cnt > g->nmoduli) {
        ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                    "%s: input %%%s has %lld rows, more than the chain's %d moduli (a row "
                    "per chain position)",
                    op, x->name, (long long)cnt, (int)g->nmoduli);
        goto fail;
      }
      break;
    case IR_BCONV: cnt = x->decl_nbasis; break;
    case IR_ROWS:
      from = x->attr[0] < na ? x->attr[0] : na;
      cnt = x->attr[1] < na - from ? x->attr[1] : na - from;
      break;
    case IR_CONCAT: cnt = na + nb[x->args[1]]; break;
    case IR_RESCALE: cnt = na > 1 ? na - 1 : 0; break;
    case IR_MODUP: cnt = na + K; break;
    case IR_MODDOWN: cnt = na > K ? na - K : 0; break;
    default: break; /* elementwise ops, NTTs, automorphisms: operand 0's */
    }
    b[i] = malloc(sizeof **b * (size_t)(cnt + 1));
    if (!b[i]) goto oom;
    nb[i] = cnt;
    if (x->op == IR_INPUT || x->op == IR_BCONV) {
      for (int64_t r = 0; r < cnt; r++) b[i][r] = x->decl_basis ? x->decl_basis[r] : (int32_t)r;
    } else {
      int64_t k = 0;
      for (int64_t r = from; r < na && k < cnt; r++) b[i][k++] = a[r];
      if (x->op == IR_CONCAT)
        for (int64_t r = 0; r < nb[x->args[1]]; r++) b[i][k++] = b[x->args[1]][r];
      if (x->op == IR_MODUP)
        for (int64_t p = g->nmoduli - K; p < g->nmoduli; p++) b[i][k++] = (int32_t)p;
    }
  }
  res = b[v];
  b[v] = NULL;
  *rows = nb[v];
  goto fail; /* frees the rest */
oom:
  ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
fail:
  for (int32_t i = 0; b && i < n; i++) free(b[i]);
  free(b);
  free(nb);
  free(need);
  return res;
}

/* ------------------------------------------------------ key switching */

/* A key switch's operand at its level: its basis Q and the non-empty
 * digits (SPEC's D_j), with their row counts. */
typedef struct ks_level {
  int32_t *basis;
  int64_t rows;
  int32_t ndig;   /* non-empty digits */
  int32_t *digit; /* their numbers j, ascending */
  int64_t *drows; /* rows of Q in G_j */
} ks_level;

static void level_free(ks_level *L) {
  free(L->basis);
  free(L->digit);
  free(L->drows);
  memset(L, 0, sizeof *L);
}

/* d's domain and form, where stated, are SPEC's NTT and Montgomery. */
static int ntt_mont(fhjit_graph *g, const char *op, fhjit_value d) {
  const ir_node *n = &g->nodes[d];
  if ((n->type.domain && n->type.domain != FHJIT_DOMAIN_NTT) ||
      (n->type.form && n->type.form != FHJIT_FORM_MONT)) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s: %%%s is in the %s domain, %s form; %s reads the NTT domain in "
                "Montgomery form",
                op, n->name, ir_domain_name(n->type.domain), ir_form_name(n->type.form), op);
    return 0;
  }
  return 1;
}

/* The checks of a key switch of d (one polynomial) that need no extents
 * but d's basis, and d's level. 0 with the error recorded. */
static int ks_level_of(fhjit_graph *g, const char *op, fhjit_value d, fhjit_value fwd,
                       fhjit_value inv, ks_level *L) {
  memset(L, 0, sizeof *L);
  if (!ir_check_operand(g, op, d, "the", FHJIT_KIND_POLY) ||
      !ir_check_operand(g, op, fwd, "the forward twiddle", FHJIT_KIND_TWIDDLE) ||
      !ir_check_operand(g, op, inv, "the inverse twiddle", FHJIT_KIND_TWIDDLE))
    return 0;
  const ir_node *n = &g->nodes[d];
  if (n->type.comps != 0) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s: %%%s has %d component%s; the key switch takes one polynomial (extract a "
                "component first)",
                op, n->name, n->type.comps, n->type.comps == 1 ? "" : "s");
    return 0;
  }
  if (!ntt_mont(g, op, d)) return 0;
  if (g->nmoduli == 0 || g->nspecial == 0 || g->alpha == 0) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s: graph @%s states no %s; the key switch needs the chain, its special "
                "primes and the key's digits (moduli(...) special(K) digits(alpha), or "
                "fhjit_graph_set_moduli, _set_special and _set_digits)",
                op, g->name,
                g->nmoduli == 0 ? "moduli" : g->nspecial == 0 ? "special primes" : "digit size");
    return 0;
  }
  L->basis = static_basis(g, op, d, &L->rows);
  if (!L->basis) return 0;
  int32_t ql = g->nmoduli - g->nspecial, nd = ir_num_digits(g);
  char bt[256];
  for (int64_t r = 0; r < L->rows; r++) {
    int32_t p = L->basis[r];
    if (p >= ql) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                  "%s: %%%s is on basis %s, which holds position %d %s; Q and P must be "
                  "disjoint (P = the chain's last %d positions, Q within Q_L = [0, %d))",
                  op, n->name, ir_basis_text(bt, sizeof bt, L->basis, L->rows), (int)p,
                  p < g->nmoduli ? "of the special primes P" : "past the chain",
                  (int)g->nspecial, (int)ql);
      level_free(L);
      return 0;
    }
  }
  L->digit = malloc(sizeof *L->digit * (size_t)(nd + 1));
  L->drows = malloc(sizeof *L->drows * (size_t)(nd + 1));
  if (!L->digit || !L->drows) {
    level_free(L);
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
    return 0;
  }
  for (int32_t j = 0; j < nd; j++) {
    int32_t first, count;
    ir_digit_group(g, j, &first, &count);
    int64_t k = 0;
    for (int64_t r = 0; r < L->rows; r++) k += L->basis[r] >= first && L->basis[r] < first + count;
    if (k == 0) continue; /* SPEC: empty digits are skipped */
    L->digit[L->ndig] = j;
    L->drows[L->ndig++] = k;
  }
  return 1;
}

static int key_operand(fhjit_graph *g, const char *op, fhjit_value key, const char *role,
                       const ks_level *L) {
  if (!ir_check_operand(g, op, key, role, FHJIT_KIND_KEY)) return 0;
  const ir_node *k = &g->nodes[key];
  int32_t last = L->ndig ? L->digit[L->ndig - 1] : 0;
  if (k->type.digits != FHJIT_UNKNOWN && k->type.digits <= last) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                "%s: the key %%%s has %lld digits; the operand's level uses digit %d of the "
                "graph's %d (SPEC's partition of Q_L by chain position)",
                op, k->name, (long long)k->type.digits, (int)last, (int)ir_num_digits(g));
    return 0;
  }
  return 1;
}

/* The tables of a key switch at level L: one per non-empty digit's modup
 * (ascending digits) into tabs[], then moddown's. */
static fhjit_value ks_tables(fhjit_graph *g, const ks_level *L, const char *prefix,
                             fhjit_value *tabs) {
  int64_t K = g->nspecial, l = L->rows;
  for (int32_t i = 0; i < L->ndig; i++) {
    char suffix[40];
    int64_t dj = L->drows[i];
    snprintf(suffix, sizeof suffix, ".modup%d.table", (int)L->digit[i]);
    tabs[i] = table_input(g, dj * (1 + l + K - dj), prefix, suffix);
    if (tabs[i] == FHJIT_NO_VALUE) return FHJIT_NO_VALUE;
  }
  return table_input(g, K + K * l + l, prefix, ".moddown.table");
}

/* The key switch of d at level L (checked) into value `prefix`: SPEC's
 * modup per non-empty digit, the digit products against key at row_start
 * 0, their add_lazy sum, moddown of both components at once (moddown acts
 * on every component: the same words as moddown of each). */
static fhjit_value ks_expand(fhjit_graph *g, fhjit_value d, fhjit_value key, fhjit_value fwd,
                             fhjit_value inv, const ks_level *L, const char *prefix) {
  fhjit_value *tabs = malloc(sizeof *tabs * (size_t)(L->ndig + 1));
  if (!tabs) {
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
    return FHJIT_NO_VALUE;
  }
  fhjit_value md = ks_tables(g, L, prefix, tabs), acc = FHJIT_NO_VALUE;
  for (int32_t i = 0; i < L->ndig && md != FHJIT_NO_VALUE; i++) {
    int32_t j = L->digit[i];
    fhjit_value u = named(g, fhjit_modup(g, d, j, fwd, inv, tabs[i]), prefix, ".modup%d", j);
    fhjit_value p = u == FHJIT_NO_VALUE ? u
                    : named(g, fhjit_keyswitch_digit_product(g, u, key, j, 0), prefix,
                            ".prod%d", j);
    acc = i == 0 || p == FHJIT_NO_VALUE ? p
                                        : named(g, fhjit_add_lazy(g, acc, p), prefix, ".sum%d", j);
    if (acc == FHJIT_NO_VALUE) md = FHJIT_NO_VALUE;
  }
  free(tabs);
  if (md == FHJIT_NO_VALUE) return FHJIT_NO_VALUE;
  return named(g, fhjit_moddown(g, acc, fwd, inv, md), prefix, "%s", "");
}

/* Runs a composite: on failure everything it added goes. */
#define COMPOSITE_BEGIN(g)                                                                     \
  if (!(g)) return FHJIT_NO_VALUE;                                                             \
  int32_t nodes0_ = (g)->nnodes, inputs0_ = (g)->ninputs, bound0_ = (g)->bound
#define COMPOSITE_END(g, v) \
  ((v) == FHJIT_NO_VALUE ? (ir_truncate((g), nodes0_, inputs0_, bound0_), FHJIT_NO_VALUE) : (v))

fhjit_value ir_keyswitch(fhjit_graph *g, fhjit_value d, fhjit_value key, fhjit_value fwd,
                         fhjit_value inv, const char *name) {
  COMPOSITE_BEGIN(g);
  const char *op = "keyswitch";
  ks_level L;
  if (!ks_level_of(g, op, d, fwd, inv, &L)) return FHJIT_NO_VALUE;
  fhjit_value v = FHJIT_NO_VALUE;
  if (key_operand(g, op, key, "the key", &L)) {
    char prefix[PREFIX_MAX];
    pick_prefix(g, name, "ks", prefix);
    v = ks_expand(g, d, key, fwd, inv, &L, prefix);
  }
  level_free(&L);
  return COMPOSITE_END(g, v);
}

fhjit_value fhjit_keyswitch(fhjit_graph *g, fhjit_value d, fhjit_value key, fhjit_value fwd,
                            fhjit_value inv) {
  return ir_keyswitch(g, d, key, fwd, inv, NULL);
}

/* ---------------------------------------------------------- ciphertexts */

/* ct is a polynomial value of `comps` components. */
static int ct_operand(fhjit_graph *g, const char *op, fhjit_value ct, const char *role,
                      int comps) {
  if (!ir_check_operand(g, op, ct, role, FHJIT_KIND_POLY)) return 0;
  const ir_node *n = &g->nodes[ct];
  if (n->type.comps != comps) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s: %s operand %%%s has %d component%s; %s takes a ciphertext of %d", op, role,
                n->name, n->type.comps, n->type.comps == 1 ? "" : "s", op, comps);
    return 0;
  }
  return 1;
}

/* (c0, c1) + keyswitch(d2, rlk) of the components c0, c1, d2 (checked). */
static fhjit_value relin_expand(fhjit_graph *g, fhjit_value c0, fhjit_value c1, fhjit_value d2,
                                fhjit_value rlk, fhjit_value fwd, fhjit_value inv,
                                const ks_level *L, const char *prefix, const char *sum) {
  char sub[PREFIX_MAX + 8];
  snprintf(sub, sizeof sub, "%s.ks", prefix);
  fhjit_value ks = ks_expand(g, d2, rlk, fwd, inv, L, sub);
  if (ks == FHJIT_NO_VALUE) return ks;
  fhjit_value c = named(g, fhjit_pack(g, 2, (fhjit_value[]){c0, c1}), prefix, ".ct");
  return c == FHJIT_NO_VALUE ? c : named(g, fhjit_add(g, c, ks), prefix, "%s", sum);
}

fhjit_value ir_ckks_relinearize(fhjit_graph *g, fhjit_value ct3, fhjit_value rlk,
                                fhjit_value fwd, fhjit_value inv, const char *name) {
  COMPOSITE_BEGIN(g);
  const char *op = "ckks_relinearize";
  if (!ct_operand(g, op, ct3, "the", 3)) return FHJIT_NO_VALUE;
  char prefix[PREFIX_MAX];
  pick_prefix(g, name, "relin", prefix);
  fhjit_value d[3];
  for (int c = 0; c < 3; c++) d[c] = named(g, fhjit_extract(g, ct3, c), prefix, ".d%d", c);
  ks_level L;
  fhjit_value v = FHJIT_NO_VALUE;
  if (d[0] >= 0 && d[1] >= 0 && d[2] >= 0 && ks_level_of(g, op, d[2], fwd, inv, &L)) {
    if (key_operand(g, op, rlk, "the relinearisation key", &L))
      v = relin_expand(g, d[0], d[1], d[2], rlk, fwd, inv, &L, prefix, "");
    level_free(&L);
  }
  return COMPOSITE_END(g, v);
}

fhjit_value fhjit_ckks_relinearize(fhjit_graph *g, fhjit_value ct3, fhjit_value rlk,
                                   fhjit_value fwd, fhjit_value inv) {
  return ir_ckks_relinearize(g, ct3, rlk, fwd, inv, NULL);
}

/* rescale(x) named prefix + suffix, with its table input (prefix + suffix +
 * ".rescale.table"). */
static fhjit_value rescale_expand(fhjit_graph *g, const char *op, fhjit_value x, fhjit_value fwd,
                                  fhjit_value inv, const char *prefix, const char *suffix) {
  int64_t rows;
  int32_t *b = static_basis(g, op, x, &rows);
  if (!b) return FHJIT_NO_VALUE;
  free(b);
  if (rows < 2) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                "%s: %%%s has %lld row%s; rescale divides by the last of at least two", op,
                g->nodes[x].name, (long long)rows, rows == 1 ? "" : "s");
    return FHJIT_NO_VALUE;
  }
  char ts[48];
  snprintf(ts, sizeof ts, "%s.rescale.table", suffix);
  fhjit_value t = table_input(g, rows - 1, prefix, ts);
  if (t == FHJIT_NO_VALUE) return t;
  return named(g, fhjit_rescale(g, x, fwd, inv, t), prefix, "%s", suffix);
}

fhjit_value ir_ckks_rescale(fhjit_graph *g, fhjit_value ct, fhjit_value fwd, fhjit_value inv,
                            const char *name) {
  COMPOSITE_BEGIN(g);
  const char *op = "ckks_rescale";
  if (!ir_check_operand(g, op, ct, "the", FHJIT_KIND_POLY) ||
      !ir_check_operand(g, op, fwd, "the forward twiddle", FHJIT_KIND_TWIDDLE) ||
      !ir_check_operand(g, op, inv, "the inverse twiddle", FHJIT_KIND_TWIDDLE) ||
      !ntt_mont(g, op, ct))
    return FHJIT_NO_VALUE;
  char prefix[PREFIX_MAX];
  pick_prefix(g, name, "rs", prefix);
  fhjit_value v = rescale_expand(g, op, ct, fwd, inv, prefix, "");
  return COMPOSITE_END(g, v);
}

fhjit_value fhjit_ckks_rescale(fhjit_graph *g, fhjit_value ct, fhjit_value fwd,
                               fhjit_value inv) {
  return ir_ckks_rescale(g, ct, fwd, inv, NULL);
}

fhjit_value ir_ckks_mul_relin_rescale(fhjit_graph *g, fhjit_value a, fhjit_value b,
                                      fhjit_value rlk, fhjit_value fwd, fhjit_value inv,
                                      const char *name) {
  COMPOSITE_BEGIN(g);
  const char *op = "ckks_mul_relin_rescale";
  if (!ct_operand(g, op, a, "the first", 2) || !ct_operand(g, op, b, "the second", 2))
    return FHJIT_NO_VALUE;
  char prefix[PREFIX_MAX];
  pick_prefix(g, name, "hmul", prefix);
  /* the tensor product (examples/tensor_product.fh) */
  fhjit_value a0 = named(g, fhjit_extract(g, a, 0), prefix, ".a0");
  fhjit_value a1 = named(g, fhjit_extract(g, a, 1), prefix, ".a1");
  fhjit_value b0 = named(g, fhjit_extract(g, b, 0), prefix, ".b0");
  fhjit_value b1 = named(g, fhjit_extract(g, b, 1), prefix, ".b1");
  fhjit_value d0 = named(g, fhjit_mul(g, a0, b0), prefix, ".d0");
  fhjit_value x = named(g, fhjit_mul(g, a0, b1), prefix, ".x");
  fhjit_value y = named(g, fhjit_mul(g, a1, b0), prefix, ".y");
  fhjit_value d1 = named(g, fhjit_add_lazy(g, x, y), prefix, ".d1");
  fhjit_value d2 = named(g, fhjit_mul(g, a1, b1), prefix, ".d2");
  fhjit_value v = FHJIT_NO_VALUE;
  ks_level L;
  if (d0 >= 0 && d1 >= 0 && d2 >= 0 && ks_level_of(g, op, d2, fwd, inv, &L)) {
    fhjit_value s = FHJIT_NO_VALUE;
    if (key_operand(g, op, rlk, "the relinearisation key", &L))
      s = relin_expand(g, d0, d1, d2, rlk, fwd, inv, &L, prefix, ".sum");
    level_free(&L);
    if (s != FHJIT_NO_VALUE) v = rescale_expand(g, op, s, fwd, inv, prefix, "");
  }
  return COMPOSITE_END(g, v);
}

fhjit_value fhjit_ckks_mul_relin_rescale(fhjit_graph *g, fhjit_value a, fhjit_value b,
                                         fhjit_value rlk, fhjit_value fwd, fhjit_value inv) {
  return ir_ckks_mul_relin_rescale(g, a, b, rlk, fwd, inv, NULL);
}

/* ------------------------------------------------------------ rotations */

/* k is a Galois element for ct: odd, 1 <= k < 2N (N when known). */
static int galois_ok(fhjit_graph *g, const char *op, fhjit_value ct, int64_t k) {
  int64_t n = g->nodes[ct].type.n;
  if (k >= 1 && (k & 1) && (n == FHJIT_UNKNOWN || k < 2 * n)) return 1;
  ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
              "%s: the Galois element k = %lld of %%%s must be odd with 1 <= k < 2N%s "
              "(rotation by r slots: 5^r mod 2N; conjugation: 2N - 1)",
              op, (long long)k, g->nodes[ct].name, n == FHJIT_UNKNOWN ? " (N unknown yet)" : "");
  return 0;
}

/* (add(automorphism(c0, k), k0), k1) of the key switch ks, named
 * prefix + suffix. */
static fhjit_value rotate_finish(fhjit_graph *g, fhjit_value c0, int64_t k, fhjit_value ks,
                                 const char *prefix, const char *suffix) {
  char p[PREFIX_MAX + 16];
  snprintf(p, sizeof p, "%s%s", prefix, suffix);
  fhjit_value r0 = named(g, fhjit_automorphism(g, c0, k), p, ".rot0");
  fhjit_value k0 = r0 < 0 ? r0 : named(g, fhjit_extract(g, ks, 0), p, ".k0");
  fhjit_value k1 = k0 < 0 ? k0 : named(g, fhjit_extract(g, ks, 1), p, ".k1");
  fhjit_value s0 = k1 < 0 ? k1 : named(g, fhjit_add(g, r0, k0), p, ".c0");
  if (s0 == FHJIT_NO_VALUE) return FHJIT_NO_VALUE;
  return named(g, fhjit_pack(g, 2, (fhjit_value[]){s0, k1}), p, "%s", "");
}

fhjit_value ir_ckks_rotate(fhjit_graph *g, fhjit_value ct, int64_t k, fhjit_value gk,
                           fhjit_value fwd, fhjit_value inv, const char *name) {
  COMPOSITE_BEGIN(g);
  const char *op = "ckks_rotate";
  if (!ct_operand(g, op, ct, "the", 2) || !galois_ok(g, op, ct, k)) return FHJIT_NO_VALUE;
  char prefix[PREFIX_MAX], sub[PREFIX_MAX + 8];
  pick_prefix(g, name, "rot", prefix);
  fhjit_value c0 = named(g, fhjit_extract(g, ct, 0), prefix, ".c0in");
  fhjit_value c1 = named(g, fhjit_extract(g, ct, 1), prefix, ".c1in");
  fhjit_value r1 = named(g, fhjit_automorphism(g, c1, k), prefix, ".rot1");
  fhjit_value v = FHJIT_NO_VALUE;
  ks_level L;
  if (c0 >= 0 && r1 >= 0 && ks_level_of(g, op, r1, fwd, inv, &L)) {
    fhjit_value ks = FHJIT_NO_VALUE;
    snprintf(sub, sizeof sub, "%s.ks", prefix);
    if (key_operand(g, op, gk, "the Galois key", &L))
      ks = ks_expand(g, r1, gk, fwd, inv, &L, sub);
    level_free(&L);
    if (ks != FHJIT_NO_VALUE) v = rotate_finish(g, c0, k, ks, prefix, "");
  }
  return COMPOSITE_END(g, v);
}

fhjit_value fhjit_ckks_rotate(fhjit_graph *g, fhjit_value ct, int64_t k, fhjit_value gk,
                              fhjit_value fwd, fhjit_value inv) {
  return ir_ckks_rotate(g, ct, k, gk, fwd, inv, NULL);
}

/* Hoisted rotations: modup of c1 once per non-empty digit; rotation i
 * permutes those outputs by ks[i] (NTT domain, every row of Q ++ P) before
 * its digit products with keys[i], then moddown (one table for all: the
 * same Q ++ P) and the c0 side as a plain rotation's. Rotation i's values
 * are named rprefix[i] + ".", its result rprefix[i] itself; those of all,
 * prefix + ".". */
static fhjit_value hoisted_expand(fhjit_graph *g, fhjit_value ct, int32_t count,
                                  const int64_t *ks, const fhjit_value *keys, fhjit_value fwd,
                                  fhjit_value inv, const char *prefix,
                                  char (*rprefix)[PREFIX_MAX + 16], fhjit_value *out) {
  const char *op = "ckks_rotate_hoisted";
  fhjit_value c0 = named(g, fhjit_extract(g, ct, 0), prefix, ".c0in");
  fhjit_value c1 = named(g, fhjit_extract(g, ct, 1), prefix, ".c1in");
  if (c0 == FHJIT_NO_VALUE || c1 == FHJIT_NO_VALUE) return FHJIT_NO_VALUE;
  ks_level L;
  if (!ks_level_of(g, op, c1, fwd, inv, &L)) return FHJIT_NO_VALUE;
  fhjit_value res = FHJIT_NO_VALUE, md = FHJIT_NO_VALUE;
  fhjit_value *tabs = malloc(sizeof *tabs * (size_t)(2 * L.ndig + 1)), *up = tabs + L.ndig;
  if (!tabs) {
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
    goto done;
  }
  for (int32_t i = 0; i < count; i++) {
    char role[48];
    snprintf(role, sizeof role, "Galois key %d's", (int)i);
    if (!key_operand(g, op, keys[i], role, &L)) goto done;
  }
  if ((md = ks_tables(g, &L, prefix, tabs)) == FHJIT_NO_VALUE) goto done;
  for (int32_t j = 0; j < L.ndig; j++)
    if ((up[j] = named(g, fhjit_modup(g, c1, L.digit[j], fwd, inv, tabs[j]), prefix,
                       ".modup%d", (int)L.digit[j])) == FHJIT_NO_VALUE)
      goto done;
  for (int32_t i = 0; i < count; i++) {
    const char *p = rprefix[i];
    fhjit_value acc = FHJIT_NO_VALUE;
    for (int32_t j = 0; j < L.ndig; j++) {
      int32_t dj = L.digit[j];
      fhjit_value a = named(g, fhjit_automorphism(g, up[j], ks[i]), p, ".modup%d.rot", dj);
      fhjit_value pr = a == FHJIT_NO_VALUE ? a
                       : named(g, fhjit_keyswitch_digit_product(g, a, keys[i], dj, 0), p,
                               ".prod%d", dj);
      acc = j == 0 || pr == FHJIT_NO_VALUE ? pr
                                           : named(g, fhjit_add_lazy(g, acc, pr), p, ".sum%d", dj);
      if (acc == FHJIT_NO_VALUE) goto done;
    }
    fhjit_value k = named(g, fhjit_moddown(g, acc, fwd, inv, md), p, ".ks");
    if (k == FHJIT_NO_VALUE) goto done;
    if ((out[i] = rotate_finish(g, c0, ks[i], k, p, "")) == FHJIT_NO_VALUE) goto done;
  }
  res = out[count - 1];
done:
  free(tabs);
  level_free(&L);
  return res;
}

/* 1 when prefix a names b's values or b a's: a == b, or one is the other
 * followed by '.' */
static int prefixes_overlap(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), m = la < lb ? la : lb;
  if (strncmp(a, b, m)) return 0;
  return la == lb || (la < lb ? b[la] : a[lb]) == '.';
}

/* Whether prefix p for rotation i clashes with the graph's values, another
 * name of the statement (rotation j's result will be renamed to names[j])
 * or an earlier rotation's prefix. */
static int hoisted_clash(const fhjit_graph *g, const char *p, int32_t i, int32_t count,
                         const char *const *names, char (*rprefix)[PREFIX_MAX + 16]) {
  if (prefix_used(g, p)) return 1;
  for (int32_t j = 0; j < count; j++)
    if (j != i && (prefixes_overlap(p, names[j]) || (j < i && prefixes_overlap(p, rprefix[j]))))
      return 1;
  return 0;
}

/* The prefixes of the expansion: with names (the text's values), names[0]
 * for what the rotations share and for rotation 0, names[i] for rotation
 * i, each with _1, _2, ... until it clashes with nothing (hoisted_clash);
 * without, "hrotN" and "hrotN.r<i>". */
static void hoisted_prefixes(const fhjit_graph *g, int32_t count, const char *const *names,
                             char *prefix, char (*rprefix)[PREFIX_MAX + 16]) {
  if (!names) {
    pick_prefix(g, NULL, "hrot", prefix);
    for (int32_t i = 0; i < count; i++)
      snprintf(rprefix[i], PREFIX_MAX + 16, "%s.r%d", prefix, (int)i);
    return;
  }
  for (int32_t i = 0; i < count; i++) {
    char base[PREFIX_MAX - 12];
    int own = strlen(names[i]) < sizeof base;
    /* no suffix helps where another name is base's dotted start (b, b.c) */
    for (int32_t j = 0; own && j < count; j++)
      own = j == i || !(prefixes_overlap(names[i], names[j]) && strlen(names[j]) < strlen(names[i]));
    if (own) snprintf(base, sizeof base, "%s", names[i]);
    else snprintf(base, sizeof base, "hrot%d_r%d", (int)g->nnodes, (int)i);
    snprintf(rprefix[i], PREFIX_MAX + 16, "%s", base);
    for (int k = 1; hoisted_clash(g, rprefix[i], i, count, names, rprefix); k++)
      snprintf(rprefix[i], PREFIX_MAX + 16, "%s_%d", base, k);
  }
  snprintf(prefix, PREFIX_MAX, "%s", rprefix[0]);
}

static fhjit_status rotate_hoisted(fhjit_graph *g, fhjit_value ct, int32_t count,
                                   const int64_t *ks, const fhjit_value *keys, fhjit_value fwd,
                                   fhjit_value inv, fhjit_value *out, const char *const *names) {
  const char *op = "ckks_rotate_hoisted";
  if (count < 1 || !ks || !keys || !out)
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                       "%s: %d rotations%s; it takes at least one Galois element, one key "
                       "each, and room for the results",
                       op, (int)count, !ks || !keys || !out ? " (a null array)" : "");
  if (!ct_operand(g, op, ct, "the", 2)) return fhjit_last_status(g->ctx);
  for (int32_t i = 0; i < count; i++)
    if (!galois_ok(g, op, ct, ks[i])) return fhjit_last_status(g->ctx);
  int32_t nodes0 = g->nnodes, inputs0 = g->ninputs, bound0 = g->bound;
  fhjit_value *res = malloc(sizeof *res * (size_t)count);
  char(*rprefix)[PREFIX_MAX + 16] = malloc(sizeof *rprefix * (size_t)count);
  if (!res || !rprefix) {
    free(res), free(rprefix);
    return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
  }
  char prefix[PREFIX_MAX];
  hoisted_prefixes(g, count, names, prefix, rprefix);
  fhjit_status st = FHJIT_OK;
  if (hoisted_expand(g, ct, count, ks, keys, fwd, inv, prefix, rprefix, res) == FHJIT_NO_VALUE) {
    st = fhjit_last_status(g->ctx);
    if (st == FHJIT_OK) st = FHJIT_ERR_ARGUMENT; /* not reached: failures record */
    ir_truncate(g, nodes0, inputs0, bound0);
  } else {
    memcpy(out, res, sizeof *res * (size_t)count);
  }
  free(res);
  free(rprefix);
  return st;
}

fhjit_status fhjit_ckks_rotate_hoisted(fhjit_graph *g, fhjit_value ct, int32_t count,
                                       const int64_t *ks, const fhjit_value *keys,
                                       fhjit_value fwd, fhjit_value inv, fhjit_value *out) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  return rotate_hoisted(g, ct, count, ks, keys, fwd, inv, out, NULL);
}

/* The text form: a->args = ct, one key per element of galois(...), fwd,
 * inv; a->names one per element (the parser checked that count). */
fhjit_value ir_ckks_rotate_hoisted_text(fhjit_graph *g, const ir_op_args *a) {
  const char *op = "ckks_rotate_hoisted";
  int32_t n = a->ngalois;
  if (a->nargs != n + 3) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_PARSE,
                "%s with %d Galois element%s takes %d operands (the ciphertext, one Galois key "
                "per element, the forward and the inverse twiddles), not %d",
                op, (int)n, n == 1 ? "" : "s", (int)n + 3, (int)a->nargs);
    return FHJIT_NO_VALUE;
  }
  if (rotate_hoisted(g, a->args[0], n, a->galois_list, a->args + 1, a->args[n + 1],
                     a->args[n + 2], a->results, a->names) != FHJIT_OK)
    return FHJIT_NO_VALUE;
  return a->results[n - 1];
}
