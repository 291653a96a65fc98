/* basis.c: the bases of SPEC section 7. A graph's moduli are its chain; the
 * last K chain positions are the special primes P and the digits group
 * Q_L = [0, M-K) into runs of alpha positions. Every polynomial value lives
 * on a basis (one distinct chain position per row). fhjit_bind computes each
 * node's basis from its operands (ir_bind_basis) after its extents; NULL
 * stands for the default [0, rows), so graphs that state no bases keep
 * their meaning, their text and their hash. docs/section7.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ------------------------------------------------------ graph-level facts */

fhjit_status fhjit_graph_set_special(fhjit_graph *g, int32_t count) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (count < 0 || count >= g->nmoduli + (count == 0))
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                       "special(%d): the number of special primes must be between 1 and the "
                       "chain's %d moduli minus one (set the moduli first)",
                       (int)count, (int)g->nmoduli);
  ir_unbind(g);
  g->nspecial = count;
  return FHJIT_OK;
}

int32_t fhjit_graph_num_special(const fhjit_graph *g) { return g ? g->nspecial : 0; }

fhjit_status fhjit_graph_set_digits(fhjit_graph *g, int32_t alpha) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  int32_t ql = g->nmoduli - g->nspecial;
  if (alpha < 0 || (alpha > 0 && alpha > ql))
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                       "digits(%d): the digit size must be between 1 and the %d positions of "
                       "Q_L (the chain's %d moduli less %d special primes)",
                       (int)alpha, (int)ql, (int)g->nmoduli, (int)g->nspecial);
  ir_unbind(g);
  g->alpha = alpha;
  return FHJIT_OK;
}

int32_t fhjit_graph_digit_size(const fhjit_graph *g) { return g ? g->alpha : 0; }

int32_t ir_num_digits(const fhjit_graph *g) {
  int32_t ql = g->nmoduli - g->nspecial;
  return g->alpha > 0 && ql > 0 ? (ql + g->alpha - 1) / g->alpha : 0;
}

int ir_digit_group(const fhjit_graph *g, int64_t j, int32_t *first, int32_t *count) {
  if (j < 0 || j >= ir_num_digits(g)) return 0;
  int32_t ql = g->nmoduli - g->nspecial;
  *first = (int32_t)j * g->alpha;
  *count = ql - *first < g->alpha ? ql - *first : g->alpha;
  return 1;
}

/* ---------------------------------------------------------------- text */

const char *ir_basis_text(char *buf, size_t size, const int32_t *b, int64_t rows) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int64_t r = 0; r < rows && used < size; r++) {
    if (r == 12 && rows > 14) {
      used += (size_t)snprintf(buf + used, size - used, ", ... (%lld rows)", (long long)rows);
      break;
    }
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", r ? ", " : "",
                             (long long)(b ? b[r] : r));
  }
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

/* -------------------------------------------------------- stated bases */

/* Why positions[0..count) is not a basis (repeats, negative, past the
 * chain), or NULL. */
static const char *basis_problem(const fhjit_graph *g, const int32_t *p, int32_t count,
                                 char *buf, size_t size) {
  for (int32_t i = 0; i < count; i++) {
    if (p[i] < 0) {
      snprintf(buf, size, "position %d is negative", (int)p[i]);
      return buf;
    }
    if (g->nmoduli > 0 && p[i] >= g->nmoduli) {
      snprintf(buf, size, "position %d is past the chain's %d moduli", (int)p[i],
               (int)g->nmoduli);
      return buf;
    }
    for (int32_t k = 0; k < i; k++)
      if (p[k] == p[i]) {
        snprintf(buf, size, "position %d repeats (rows %d and %d)", (int)p[i], (int)k, (int)i);
        return buf;
      }
  }
  return NULL;
}

fhjit_status fhjit_input_basis(fhjit_graph *g, fhjit_value v, const int32_t *positions,
                               int32_t count) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!ir_valid_value(g, v) || g->nodes[v].op != IR_INPUT ||
      g->nodes[v].decl.kind != FHJIT_KIND_POLY)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_input_basis: value %d is not a polynomial input of graph @%s",
                    (int)v, g->name);
  ir_node *n = &g->nodes[v];
  if (count < 1)
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                       "input %%%s: a basis has at least one position", n->name);
  if (!positions)
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                       "input %%%s: null array of %d basis positions", n->name, (int)count);
  char why[96], b[256];
  const char *bad = basis_problem(g, positions, count, why, sizeof why);
  if (!bad && n->decl.rows != FHJIT_UNKNOWN && n->decl.rows != count) {
    snprintf(why, sizeof why, "it has %d positions but %%%s has %lld rows", (int)count,
             n->name, (long long)n->decl.rows);
    bad = why;
  }
  if (bad)
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE, "input %%%s: basis %s: %s", n->name,
                       ir_basis_text(b, sizeof b, (const int32_t *)positions, count), bad);
  int32_t *copy = sp_alloc(&g->arena, sizeof *copy * (size_t)count);
  if (!copy) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
  memcpy(copy, positions, sizeof *copy * (size_t)count);
  ir_unbind(g);
  n->decl_basis = copy;
  n->decl_nbasis = count;
  if (n->decl.rows == FHJIT_UNKNOWN) n->decl.rows = count;
  if (!n->has_layout) n->type.rows = n->decl.rows;
  return FHJIT_OK;
}

fhjit_status fhjit_value_basis(const fhjit_graph *g, fhjit_value v, int32_t *out, int32_t cap,
                               int32_t *count) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!g->bound)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_value_basis: graph @%s is not bound (call fhjit_bind)", g->name);
  if (!ir_valid_value(g, v) || !count || cap < 0 || (cap > 0 && !out))
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_value_basis: bad value or buffer");
  const ir_node *n = &g->nodes[v];
  if (n->type.kind != FHJIT_KIND_POLY)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_value_basis: %%%s is a table",
                    n->name);
  *count = (int32_t)n->type.rows;
  for (int32_t r = 0; r < cap && r < n->type.rows; r++) out[r] = (int32_t)ir_pos(g, v, r);
  return FHJIT_OK;
}

/* ------------------------------------------------------------- binding */

void ir_free_bases(fhjit_graph *g) {
  if (!g->bases_live) return;
  g->bases_live = 0;
  for (int32_t i = 0; i < g->nnodes; i++) {
    free(g->nodes[i].basis);
    g->nodes[i].basis = NULL;
  }
}

/* Row r of the bases being built. */
typedef struct bbuf {
  int32_t *p;
  int64_t n;
} bbuf;

int ir_same_basis(const fhjit_graph *g, fhjit_value a, fhjit_value b) {
  int64_t rows = g->nodes[a].type.rows;
  if (g->nodes[b].type.rows != rows) return 0;
  for (int64_t r = 0; r < rows; r++)
    if (ir_pos(g, a, r) != ir_pos(g, b, r)) return 0;
  return 1;
}

static fhjit_status mismatch(fhjit_graph *g, const ir_node *n, fhjit_value a, fhjit_value b,
                             const char *rule) {
  char ba[256], bb[256];
  const ir_node *na = &g->nodes[a], *nb = &g->nodes[b];
  return ir_error_at(g, n->loc, FHJIT_ERR_TYPE,
                     "%%%s = %s: %%%s is on basis %s and %%%s on basis %s; %s", n->name,
                     ir_op_name(n->op), na->name,
                     ir_basis_text(ba, sizeof ba, na->basis, na->type.rows), nb->name,
                     ir_basis_text(bb, sizeof bb, nb->basis, nb->type.rows), rule);
}

/* Operands 1.. of n (polynomial ones) are on operand 0's basis. */
static fhjit_status same_bases(fhjit_graph *g, const ir_node *n) {
  for (int i = 1; i < n->nargs; i++) {
    fhjit_value b = n->args[i];
    if (g->nodes[b].type.kind != FHJIT_KIND_POLY) continue;
    /* a compressed plaintext and an implicit operand have their own rows
     * extent rules (bind.c); their bases are compared row by row */
    if (!ir_same_basis(g, n->args[0], b))
      return mismatch(g, n, n->args[0], b, "the operands must be on equal bases");
  }
  return FHJIT_OK;
}

static int bb_has(const bbuf *b, int32_t p) {
  for (int64_t i = 0; i < b->n; i++)
    if (b->p[i] == p) return 1;
  return 0;
}

/* Appends rows [from, from+count) of value v. */
static void bb_take(const fhjit_graph *g, bbuf *b, fhjit_value v, int64_t from, int64_t count) {
  for (int64_t r = 0; r < count; r++) b->p[b->n++] = (int32_t)ir_pos(g, v, from + r);
}

/* The chain's special positions P, in order, appended. */
static void bb_special(const fhjit_graph *g, bbuf *b) {
  for (int32_t k = g->nmoduli - g->nspecial; k < g->nmoduli; k++) b->p[b->n++] = k;
}

static fhjit_status need_special(fhjit_graph *g, const ir_node *n, int digits) {
  if (g->nspecial > 0 && (!digits || g->alpha > 0)) return FHJIT_OK;
  return ir_error_at(g, n->loc, FHJIT_ERR_TYPE,
                     "%%%s = %s: the graph states no %s (the header's special(K)%s, or "
                     "fhjit_graph_set_special%s)",
                     n->name, ir_op_name(n->op),
                     digits ? "special primes or digit size" : "special primes",
                     digits ? " and digits(alpha)" : "",
                     digits ? " and fhjit_graph_set_digits" : "");
}

/* The basis of a node of section 7 into b (rows of n->type already fixed). */
static fhjit_status mixing_basis(fhjit_graph *g, ir_node *n, bbuf *b) {
  fhjit_value a = n->args[0];
  const ir_node *na = &g->nodes[a];
  int64_t rows = na->type.rows;
  char ba[256], bt[256];
  switch (n->op) {
  case IR_ROWS: bb_take(g, b, a, n->attr[0], n->attr[1]); return FHJIT_OK;
  case IR_CONCAT:
    bb_take(g, b, a, 0, rows);
    for (int64_t r = 0; r < g->nodes[n->args[1]].type.rows; r++) {
      int32_t p = (int32_t)ir_pos(g, n->args[1], r);
      if (bb_has(b, p)) return mismatch(g, n, a, n->args[1], "concat needs disjoint bases");
      b->p[b->n++] = p;
    }
    return FHJIT_OK;
  case IR_BCONV:
    for (int32_t j = 0; j < n->decl_nbasis; j++) {
      int32_t p = n->decl_basis[j];
      for (int64_t r = 0; r < rows; r++)
        if (ir_pos(g, a, r) == p)
          return ir_error_at(g, n->loc, FHJIT_ERR_TYPE,
                             "%%%s = bconv: the target basis %s and the source basis %s of "
                             "%%%s share position %d; they must be disjoint",
                             n->name, ir_basis_text(bt, sizeof bt, n->decl_basis, n->decl_nbasis),
                             ir_basis_text(ba, sizeof ba, na->basis, rows), na->name, (int)p);
      b->p[b->n++] = p;
    }
    return FHJIT_OK;
  case IR_AUTOMORPHISM: bb_take(g, b, a, 0, rows); return FHJIT_OK;
  case IR_RESCALE: bb_take(g, b, a, 0, rows - 1); return FHJIT_OK;
  case IR_MODUP: {
    fhjit_status st = need_special(g, n, 1);
    if (st) return st;
    bb_take(g, b, a, 0, rows);
    for (int32_t k = g->nmoduli - g->nspecial; k < g->nmoduli; k++)
      if (bb_has(b, k))
        return ir_error_at(g, n->loc, FHJIT_ERR_TYPE,
                           "%%%s = modup: %%%s's basis %s holds special position %d; Q and P "
                           "must be disjoint",
                           n->name, na->name, ir_basis_text(ba, sizeof ba, na->basis, rows),
                           (int)k);
    bb_special(g, b);
    return FHJIT_OK;
  }
  case IR_MODDOWN: {
    fhjit_status st = need_special(g, n, 0);
    if (st) return st;
    int64_t l = rows - g->nspecial;
    for (int32_t k = 0; k < g->nspecial; k++)
      if (l < 1 || ir_pos(g, a, l + k) != g->nmoduli - g->nspecial + k) {
        int32_t ps[64];
        int32_t np = g->nspecial < 64 ? g->nspecial : 64;
        for (int32_t s = 0; s < np; s++) ps[s] = g->nmoduli - g->nspecial + s;
        return ir_error_at(g, n->loc, FHJIT_ERR_TYPE,
                           "%%%s = moddown: %%%s is on basis %s, which is not Q ++ P with P = "
                           "%s (the special primes, last) and Q not empty",
                           n->name, na->name, ir_basis_text(ba, sizeof ba, na->basis, rows),
                           ir_basis_text(bt, sizeof bt, ps, np));
      }
    bb_take(g, b, a, 0, l);
    return FHJIT_OK;
  }
  default: break;
  }
  return FHJIT_OK;
}

/* Positions of the graph's chain: below M when the graph states moduli. */
static fhjit_status check_in_chain(fhjit_graph *g, const ir_node *n, const bbuf *b) {
  char why[96], bt[256];
  const char *bad = basis_problem(g, b->p, (int32_t)b->n, why, sizeof why);
  if (!bad) return FHJIT_OK;
  return ir_error_at(g, n->loc, FHJIT_ERR_TYPE, "%%%s: basis %s: %s", n->name,
                     ir_basis_text(bt, sizeof bt, b->p, b->n), bad);
}

/* Whether n's basis is [0, rows) because its operand's is: an
 * automorphism, a rescale, or rows from 0, of a value without a stated
 * basis. Settled without a buffer of the rows (a graph without moduli may
 * have any number of rows). */
static int keeps_default(const fhjit_graph *g, const ir_node *n) {
  if (n->op == IR_INPUT || g->nodes[n->args[0]].basis) return 0;
  return n->op == IR_AUTOMORPHISM || n->op == IR_RESCALE || (n->op == IR_ROWS && n->attr[0] == 0);
}

/* Bounds on a basis before its buffer is made, so that binding stays
 * linear in the text (docs/limits.md): a basis names each position of the
 * chain once, so no more rows than the chain's moduli where the graph
 * states them; where it does not, at most IR_BASIS_MAX positions in a
 * buffer (none is made where the basis is kept: keeps_default). */
static fhjit_status check_basis_rows(fhjit_graph *g, const ir_node *n, int kept) {
  long long rows = (long long)n->type.rows;
  if (g->nmoduli > 0 && rows > g->nmoduli)
    return ir_error_at(g, n->loc, FHJIT_ERR_TYPE,
                       "%%%s: %lld rows, more than the chain's %d moduli: its basis would name "
                       "a position past the chain or one twice",
                       n->name, rows, (int)g->nmoduli);
  if (!kept && rows + g->nspecial > IR_BASIS_MAX)
    return ir_error_at(g, n->loc, FHJIT_ERR_TYPE,
                       "%%%s: %lld rows: a basis holds at most %d positions (docs/limits.md)",
                       n->name, rows, IR_BASIS_MAX);
  return FHJIT_OK;
}

fhjit_status ir_bind_basis(fhjit_graph *g, ir_node *n) {
  n->basis = NULL;
  if (n->type.kind != FHJIT_KIND_POLY) return FHJIT_OK;
  ir_op_class cls = ir_op_class_of(n->op);
  fhjit_status st = FHJIT_OK;
  if (n->op == IR_INPUT) {
    if (!n->decl_basis) return FHJIT_OK;
    if (n->decl_nbasis != n->type.rows)
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "input %%%s: its basis has %d positions but it is bound with %lld "
                         "rows",
                         n->name, (int)n->decl_nbasis, (long long)n->type.rows);
  } else if (cls == IR_CLASS_POINTWISE || cls == IR_CLASS_VIEW || cls == IR_CLASS_ANCHOR) {
    if (n->op != IR_KS_DIGIT_PRODUCT && n->op != IR_NTT && (st = same_bases(g, n))) return st;
    if (!g->nodes[n->args[0]].basis) return FHJIT_OK;
  }
  int kept = keeps_default(g, n);
  if ((st = check_basis_rows(g, n, kept)) || kept) return st;
  bbuf b = {malloc(sizeof(int32_t) * (size_t)(n->type.rows + g->nspecial + 1)), 0};
  if (!b.p) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
  if (n->op == IR_INPUT) {
    memcpy(b.p, n->decl_basis, sizeof *b.p * (size_t)n->decl_nbasis);
    b.n = n->decl_nbasis;
  } else if (cls == IR_CLASS_ROWS || cls == IR_CLASS_PERMUTE || cls == IR_CLASS_MIXING) {
    st = mixing_basis(g, n, &b);
  } else {
    bb_take(g, &b, n->args[0], 0, n->type.rows);
  }
  if (!st && b.n != n->type.rows)
    st = ir_error_at(g, n->loc, FHJIT_ERR_SHAPE, "internal: %%%s: basis of %lld rows for %lld",
                     n->name, (long long)b.n, (long long)n->type.rows);
  if (!st) st = check_in_chain(g, n, &b);
  int dflt = 1;
  for (int64_t r = 0; r < b.n; r++) dflt &= b.p[r] == r;
  if (st || dflt) {
    free(b.p);
    return st;
  }
  n->basis = b.p;
  g->bases_live = 1;
  return FHJIT_OK;
}

/* ------------------------------------------------------------- lowering */


int64_t ir_param_columns(const fhjit_graph *g) {
  int64_t cols = 0;
  for (int32_t k = 0; k < g->nresults; k++)
    if (g->results[k].type.rows > cols) cols = g->results[k].type.rows;
  /* live values only: a dead one is never computed, and the hash, so the
   * cached kernel shared by graphs that differ in it, ignores it (out of
   * memory: every value, which only asks more of pstride) */
  unsigned char *live = ir_live_nodes(g);
  for (int32_t i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    if ((live && !live[i]) || n->type.kind != FHJIT_KIND_POLY || !n->basis) continue;
    for (int64_t r = 0; r < n->type.rows; r++)
      if (n->basis[r] >= cols) cols = (int64_t)n->basis[r] + 1;
  }
  free(live);
  return cols;
}
