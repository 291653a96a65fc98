/* bind_mix.c: binding the ops of SPEC section 7 (fhjit_bind calls
 * ir_infer_mixing from infer_node): their extents from their operands',
 * the sizes of their constant tables, and the NTT facts of the twiddle
 * tables they read by chain position. Bases are basis.c's. Every failure
 * names the value and the rule. docs/section7.md. */
#include <stdio.h>

#include "ir/ir.h"
#include "ir/ntt.h"
#include "ir/tables.h"

static fhjit_status shape(fhjit_graph *g, const ir_node *n, const char *fmt, long long a,
                          long long b) {
  char msg[256];
  snprintf(msg, sizeof msg, fmt, a, b);
  return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE, "%%%s = %s: %s", n->name, ir_op_name(n->op),
                     msg);
}

static fhjit_status check_concat(fhjit_graph *g, const ir_node *n, fhjit_type *t) {
  const fhjit_type *a = &g->nodes[n->args[0]].type, *b = &g->nodes[n->args[1]].type;
  int same = a->n == b->n && a->nbatch == b->nbatch && a->comps == b->comps;
  for (int x = 0; same && x < a->nbatch; x++) same = a->batch[x] == b->batch[x];
  if (!same)
    return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                       "%%%s = concat: %%%s and %%%s must have equal components, batch and n",
                       n->name, g->nodes[n->args[0]].name, g->nodes[n->args[1]].name);
  t->rows = a->rows + b->rows;
  return FHJIT_OK;
}

/* The twiddle tables of rescale, modup and moddown hold a row per chain
 * position the op transforms (positions of x's basis and, for modup, P);
 * N is a supported NTT length and the graph's moduli there carry it. */
static fhjit_status check_twiddles(fhjit_graph *g, const ir_node *n, int64_t max_pos) {
  const ir_node *a = &g->nodes[n->args[0]];
  int64_t len = a->type.n;
  if (ir_ntt_log2(len) < 0)
    return shape(g, n, "the transform length n = %lld is not a power of two between 2^4 and "
                       "2^%lld", (long long)len, (long long)IR_NTT_MAX_LOG);
  for (int k = 1; k <= 2; k++) {
    const ir_node *tw = &g->nodes[n->args[k]];
    if (tw->type.n != len || tw->type.rows <= max_pos)
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "%%%s = %s: the twiddle table %%%s is [%lld, %lld]; it needs n = %lld "
                         "and a row for every chain position up to %lld",
                         n->name, ir_op_name(n->op), tw->name, (long long)tw->type.rows,
                         (long long)tw->type.n, (long long)len, (long long)max_pos);
  }
  char why[120];
  for (int64_t p = 0; p <= max_pos && p < g->nmoduli; p++)
    if (ir_ntt_modulus_problem(g->moduli[p], len, why, sizeof why))
      return ir_error_at(g, n->loc, FHJIT_ERR_MODULUS,
                         "%%%s = %s: modulus #%lld = %llu is %s, which an NTT of length %lld "
                         "needs",
                         n->name, ir_op_name(n->op), (long long)p,
                         (unsigned long long)g->moduli[p], why, (long long)len);
  return FHJIT_OK;
}

static int64_t max_position(const fhjit_graph *g, fhjit_value v) {
  int64_t m = -1;
  for (int64_t r = 0; r < g->nodes[v].type.rows; r++)
    if (ir_pos(g, v, r) > m) m = ir_pos(g, v, r);
  return m;
}

static fhjit_status need_special(fhjit_graph *g, const ir_node *n, int digits) {
  if (g->nspecial > 0 && (!digits || g->alpha > 0)) return FHJIT_OK;
  return ir_error_at(g, n->loc, FHJIT_ERR_TYPE,
                     "%%%s = %s: the graph states no %s (the header's special(K)%s)", n->name,
                     ir_op_name(n->op), digits ? "special primes and digit size" : "special primes",
                     digits ? " and digits(alpha)" : "");
}

/* Extents of the NTT-side mixing ops; their bases come later (basis.c). */
static fhjit_status infer_ntt_mixing(fhjit_graph *g, const ir_node *n, fhjit_type *t) {
  const ir_node *a = &g->nodes[n->args[0]];
  int64_t rows = a->type.rows, max_pos = max_position(g, n->args[0]);
  fhjit_status st;
  if (n->op == IR_RESCALE) {
    if (rows < 2)
      return shape(g, n, "the operand has %lld row; rescale needs at least %lld", (long long)rows,
                   2LL);
    t->rows = rows - 1;
  } else if (n->op == IR_MODUP) {
    if ((st = need_special(g, n, 1))) return st;
    int32_t first, count;
    if (!ir_digit_group(g, n->attr[0], &first, &count))
      return shape(g, n, "digit %lld is out of range; the partition has %lld digits",
                   (long long)n->attr[0], (long long)ir_num_digits(g));
    if (ir_digit_rows(g, n->args[0], n->attr[0], NULL) == 0) {
      char b[256];
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "%%%s = %s: digit %lld (chain positions %lld to %lld) has no row in "
                         "the operand's basis %s; the keyswitch skips such digits",
                         n->name, ir_op_name(n->op), (long long)n->attr[0], (long long)first,
                         (long long)(first + count - 1),
                         ir_basis_text(b, sizeof b, a->basis, a->type.rows));
    }
    t->rows = rows + g->nspecial;
    max_pos = g->nmoduli - 1;
  } else {
    if ((st = need_special(g, n, 0))) return st;
    if (rows <= g->nspecial)
      return shape(g, n, "the operand has %lld rows; moddown needs Q ++ P with %lld special "
                         "rows and Q not empty",
                   (long long)rows, (long long)g->nspecial);
    t->rows = rows - g->nspecial;
  }
  return check_twiddles(g, n, max_pos);
}

static fhjit_status check_table_size(fhjit_graph *g, const ir_node *n, int tab_arg) {
  const ir_node *tab = &g->nodes[n->args[tab_arg]];
  int64_t want = ir_table_len(g, n);
  if (tab->type.n == want) return FHJIT_OK;
  return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                     "%%%s = %s: the table %%%s has %lld words; this op reads %lld "
                     "(docs/section7.md gives the layout)",
                     n->name, ir_op_name(n->op), tab->name, (long long)tab->type.n,
                     (long long)want);
}

fhjit_status ir_infer_mixing(fhjit_graph *g, ir_node *n, fhjit_type *t) {
  const ir_node *a = &g->nodes[n->args[0]];
  fhjit_status st = FHJIT_OK;
  switch (n->op) {
  case IR_ROWS:
    if (n->attr[0] >= a->type.rows || n->attr[1] > a->type.rows - n->attr[0])
      return shape(g, n, "rows %lld.. are out of range; the operand has %lld rows",
                   (long long)n->attr[0], (long long)a->type.rows);
    t->rows = n->attr[1];
    return FHJIT_OK;
  case IR_CONCAT: return check_concat(g, n, t);
  case IR_BCONV:
    t->rows = n->decl_nbasis;
    return check_table_size(g, n, 1);
  case IR_AUTOMORPHISM:
    if (n->attr[0] >= 2 * a->type.n)
      return shape(g, n, "the Galois element k = %lld is not below 2N = %lld",
                   (long long)n->attr[0], (long long)(2 * a->type.n));
    if (a->type.domain == FHJIT_DOMAIN_NTT && (a->type.n & (a->type.n - 1)))
      return shape(g, n, "the NTT-domain permutation needs n = %lld to be a power of two "
                         "(2N = %lld)", (long long)a->type.n, (long long)(2 * a->type.n));
    return FHJIT_OK;
  case IR_RESCALE: case IR_MODUP: case IR_MODDOWN:
    if ((st = infer_ntt_mixing(g, n, t))) return st;
    return check_table_size(g, n, 3);
  default: break;
  }
  return ir_error_at(g, n->loc, FHJIT_ERR_ARGUMENT, "internal: unexpected op %d", (int)n->op);
}
