/* plan_graph.c: the plan of a bound graph's pointwise kernel (lw_plan_graph):
 * the index space its outputs walk (rows, n, batch extents), the basis it
 * computes on and the remapped loads it can make (SPEC section 7), and the
 * limits a launch imposes; checked before any IR is built, so a graph one
 * kernel cannot compute is refused with a reason (lower.c builds the IR). */
#include <stdlib.h>
#include <string.h>

#include "ir/modarith.h"
#include "lower/imap.h"
#include "lower/lw_llvm.h"

int lw_force_idx64;

void lw_graph_symbol(const char *graph_name, char out[LW_NAME_MAX]) {
  static const char prefix[] = "fhjit_";
  size_t n = sizeof prefix - 1;
  memcpy(out, prefix, n);
  for (const char *s = graph_name; *s && n < LW_NAME_MAX - 1; s++, n++) {
    char c = *s;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out[n] = ok ? c : '_';
  }
  out[n] = 0;
}

int lw_chain_leaves(const fhjit_graph *g, fhjit_value v,
                    int (*is_leaf)(const void *ctx, fhjit_value w), const void *ctx) {
  /* depth-first with a visited set: a walk as a tree was exponential in
   * the depth of concat-of-rows chains (the planner asks this per node) */
  lw_imap seen = {0};
  fhjit_value *stack = malloc(sizeof *stack * 16);
  int32_t top = 0, cap = 16, ok = 1;
  if (!stack) return -1;
  stack[top++] = v;
  while (top > 0 && ok == 1) {
    fhjit_value w = stack[--top];
    if (lw_imap_get(&seen, (uint64_t)w, 0) >= 0) continue;
    if (lw_imap_put(&seen, (uint64_t)w, 0, 1) != 0) {
      ok = -1;
      break;
    }
    if (is_leaf(ctx, w)) continue;
    const ir_node *n = &g->nodes[w];
    if (n->op != IR_EXTRACT && n->op != IR_ROWS && n->op != IR_CONCAT) {
      ok = 0;
      break;
    }
    if (top + 2 > cap) {
      fhjit_value *grown = realloc(stack, sizeof *stack * (size_t)(2 * cap));
      if (!grown) {
        ok = -1;
        break;
      }
      stack = grown;
      cap *= 2;
    }
    for (int a = n->op == IR_CONCAT ? 1 : 0; a >= 0; a--) stack[top++] = n->args[a];
  }
  free(stack);
  lw_imap_free(&seen);
  return ok;
}

static int is_input(const void *ctx, fhjit_value w) {
  return ((const fhjit_graph *)ctx)->nodes[w].op == IR_INPUT;
}

/* Whether v is read from memory: an input, or extract, rows and concat of
 * such (an address chain). Out of memory counts as no: the planner then
 * materialises v, which is always correct. */
int lw_addressable(const fhjit_graph *g, fhjit_value v) {
  return lw_chain_leaves(g, v, is_input, g) == 1;
}

/* The node computes with its rows' moduli (parameter columns). */
static int uses_columns(const ir_node *n) {
  if (n->op == IR_AUTOMORPHISM) return n->type.domain == FHJIT_DOMAIN_COEF;
  return ir_op_class_of(n->op) == IR_CLASS_POINTWISE;
}

/* Section 7 facts of the kernel: the basis it computes on (plan->basis),
 * remapped loads whose operands are in memory, automorphisms the lowering
 * can index. */
static fhjit_status plan_bases(fhjit_graph *g, lw_plan *p) {
  char *live = calloc((size_t)g->nnodes + 1, 1);
  if (!live)
    return ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory while lowering graph @%s",
                    g->name);
  for (int32_t r = 0; r < g->nresults; r++) live[g->results[r].value] = 1;
  fhjit_value first = -1; /* the first node computing with columns */
  fhjit_status st = FHJIT_OK;
  char ba[256], bb[256];
  for (fhjit_value v = g->nnodes - 1; v >= 0 && !st; v--) {
    if (!live[v]) continue;
    const ir_node *n = &g->nodes[v];
    ir_op_class cls = ir_op_class_of(n->op);
    if (cls == IR_CLASS_ROWS || cls == IR_CLASS_PERMUTE) {
      /* leaves: their operands are read, not evaluated */
      for (int a = 0; a < n->nargs && !st; a++)
        if (!lw_addressable(g, n->args[a]))
          st = ir_error_at(g, n->loc, FHJIT_ERR_UNSUPPORTED,
                           "%%%s = %s: its operand %%%s is computed; the lowering reads %s "
                           "operands from memory, so the operand must be materialised (an "
                           "input of the kernel, or extract, rows or concat of inputs)",
                           n->name, ir_op_name(n->op), g->nodes[n->args[a]].name,
                           ir_op_name(n->op));
      if (!st && n->op == IR_AUTOMORPHISM && n->type.domain == FHJIT_DOMAIN_COEF &&
          (ir_gcd((uint64_t)n->attr[0], (uint64_t)(2 * n->type.n)) != 1 ||
           n->type.n > (INT64_C(1) << 30)))
        st = ir_error_at(g, n->loc, FHJIT_ERR_UNSUPPORTED,
                         "%%%s = automorphism: k = %lld is not invertible mod 2N = %lld (or N "
                         "is past 2^30); the lowering reads the inverse permutation",
                         n->name, (long long)n->attr[0], (long long)(2 * n->type.n));
    } else {
      for (int a = 0; a < n->nargs; a++) live[n->args[a]] = 1;
    }
    if (st || !uses_columns(n)) continue;
    if (first < 0) {
      first = v;
    } else if (!ir_same_basis(g, first, v)) {
      /* v precedes first: the message is located at the later node */
      const ir_node *f = &g->nodes[first];
      st = ir_error_at(g, f->loc, FHJIT_ERR_UNSUPPORTED,
                       "%%%s is on basis %s and %%%s on basis %s; one fused kernel computes "
                       "on one basis (one parameter column per row): compile them as "
                       "separate graphs",
                       f->name, ir_basis_text(ba, sizeof ba, f->basis, f->type.rows), n->name,
                       ir_basis_text(bb, sizeof bb, n->basis, n->type.rows));
    }
  }
  free(live);
  if (st) return st;
  p->basis = g->nodes[first >= 0 ? first : g->results[0].value].basis;
  if (first >= 0 && g->nodes[first].type.rows != p->rows)
    return ir_error_at(g, g->nodes[first].loc, FHJIT_ERR_UNSUPPORTED,
                       "internal: %%%s has %lld rows in a walk of %lld", g->nodes[first].name,
                       (long long)g->nodes[first].type.rows, (long long)p->rows);
  return FHJIT_OK;
}

fhjit_status lw_plan_graph(fhjit_graph *g, lw_plan *p) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!g->bound)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "error: graph @%s is not bound (call fhjit_bind before compiling)", g->name);
  memset(p, 0, sizeof *p);
  p->per_thread = 1;
  p->block = LW_BLOCK;
  lw_graph_symbol(g->name, p->name);
  if (g->nresults == 0) {
    p->vec = 1;
    p->idx_bits = 32;
    return FHJIT_OK;
  }
  const fhjit_type *t0 = &g->results[0].type;
  p->rows = t0->rows;
  p->n = t0->n;
  int nb = 0;
  for (int32_t r = 0; r < g->nresults; r++)
    if (g->results[r].type.nbatch > nb) nb = g->results[r].type.nbatch;
  p->nbatch = nb;
  for (int a = 0; a < nb; a++) p->batch[a] = 1;
  for (int32_t r = 0; r < g->nresults; r++) {
    const fhjit_type *t = &g->results[r].type;
    const char *vname = g->nodes[g->results[r].value].name;
    if (t->rows != p->rows || t->n != p->n)
      return ir_error_at(g, g->nodes[g->results[r].value].loc, FHJIT_ERR_UNSUPPORTED,
                         "outputs %%%s ([rows %lld, n %lld]) and %%%s ([rows %lld, n %lld]) "
                         "differ in rows or n; one fused kernel walks one index space, so "
                         "compile them as separate graphs",
                         g->nodes[g->results[0].value].name, (long long)p->rows,
                         (long long)p->n, vname, (long long)t->rows, (long long)t->n);
    for (int a = 0; a < t->nbatch; a++) {
      int w = a + nb - t->nbatch; /* right-aligned */
      int64_t e = t->batch[a];
      if (e == 1) continue;
      if (p->batch[w] != 1 && p->batch[w] != e)
        return ir_error_at(g, g->nodes[g->results[r].value].loc, FHJIT_ERR_UNSUPPORTED,
                           "output %%%s has batch extent %lld on an axis where another "
                           "output has %lld; the outputs of one kernel must have batch "
                           "extents that are equal or 1",
                           vname, (long long)e, (long long)p->batch[w]);
      p->batch[w] = e;
    }
  }
  fhjit_status st = plan_bases(g, p);
  if (st) return st;
  ir_u128 work = (ir_u128)p->rows * (uint64_t)p->n;
  for (int a = 0; a < nb; a++) work *= (uint64_t)p->batch[a];
  if (work >= ((ir_u128)1 << 62))
    return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s: the index space has too many elements", g->name);
  p->work = (int64_t)work;
  int v = g->radix == FHJIT_R32 ? 4 : 2;
  p->vec = p->n % v == 0 ? v : 1;
  p->groups = p->work / p->vec;
  p->idx_bits = (p->work < ((int64_t)1 << 31) && !lw_force_idx64) ? 32 : 64;
  if ((p->groups + LW_BLOCK - 1) / LW_BLOCK > INT32_MAX)
    return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s: %lld elements need more blocks than a launch grid has",
                    g->name, (long long)p->work);
  if (lw_num_args(g) > LW_MAX_ARGS)
    return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s has %d inputs and %d results; a kernel takes at most %d "
                    "pointers",
                    g->name, (int)g->ninputs, (int)g->nresults, LW_MAX_ARGS - 2);
  return FHJIT_OK;
}
