/* lower_ctx.c: the pointwise lowering's index contexts (lower.c's file
 * comment, "Coefficient indices"): the contexts interned by (a, b), the
 * (context, node) uses, counted against lw_max_values, the reverse pass
 * that marks which components of which nodes each context needs, and each
 * context's per-lane indices. */
#include <stdio.h>
#include <stdlib.h>

#include "lower/lower_emit.h"

/* -------------------------------------------------------- index contexts */

/* What one value of the body counts: the GPU kernel holds per_thread
 * copies of it (FHJIT_PW_PLAN's U). When the grid does not cover the groups
 * exactly, each copy is guarded by a branch, and LLVM 19's CodeGenPrepare
 * takes time quadratic in the copies of such a chain of blocks (a 400-op
 * chain at U = 8: 98 s, at U = 1: 0.2 s): each then counts 8 times more,
 * which keeps that case within the bound up to the limit. */
static int value_weight(const lw *L) {
  const lw_plan *p = L->p;
  if (L->eval_comp >= 0 || p->per_thread <= 1) return 1;
  int exact = p->groups % ((int64_t)p->block * p->per_thread) == 0;
  return exact ? p->per_thread : 8 * p->per_thread;
}

/* Counts one more value; past the limit, records the error. */
static int count_value(lw *L) {
  int weight = value_weight(L);
  L->nvalues += weight;
  if (L->nvalues <= L->max_values || L->st) return !L->st;
  const fhjit_graph *g = L->g;
  char per_thread[64] = "";
  if (weight > 1)
    snprintf(per_thread, sizeof per_thread, ", each counted %d times for U = %d", weight,
             L->p->per_thread);
  L->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                   "error: graph @%s: its kernel would evaluate more than %lld values (a value "
                   "is one component of one node at one coefficient index pattern; %d nodes, "
                   "%d index pattern%s so far%s), the limit that keeps a compile within "
                   "seconds (docs/limits.md); split the graph into smaller graphs, or raise the "
                   "limit with FHJIT_MAX_VALUES",
                   g->name, (long long)L->max_values, (int)g->nnodes, L->nctx,
                   L->nctx == 1 ? "" : "s", per_thread);
  return 0;
}

/* The context of indices (i / a) mod b, interned; -1 on error. */
int lw_lo_add_ctx(lw *L, int64_t a, int64_t b) {
  if (b == 1) a = 1; /* every index 0 */
  int32_t found = lw_imap_get(&L->ctx_map, (uint64_t)a, (uint64_t)b);
  if (found >= 0) return found;
  if (L->st || !count_value(L)) return -1;
  if (L->nctx == L->ctx_cap) {
    int cap = L->ctx_cap ? L->ctx_cap * 2 : 4;
    ictx *n = realloc(L->ctx, sizeof *n * (size_t)cap);
    if (!n) return oom(L), -1;
    L->ctx = n;
    L->ctx_cap = cap;
  }
  if (lw_imap_put(&L->ctx_map, (uint64_t)a, (uint64_t)b, L->nctx)) return oom(L), -1;
  L->ctx[L->nctx] = (ictx){.a = a, .b = b};
  return L->nctx++;
}

/* The context a compressed plaintext of op node n is read in, from x (whose
 * indices range over n's extent). */
int lw_lo_child_ctx(lw *L, int x, const ir_node *n, int64_t u) {
  int64_t a = L->ctx[x].a, b = L->ctx[x].b, repeat = n->type.n / u;
  if (b != n->type.n) {
    if (!L->st)
      L->st = ir_error(L->g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "internal: graph @%s: %%%s evaluated at indices of extent %lld",
                       L->g->name, n->name, (long long)b);
    return -1;
  }
  if (repeat == 1) return x;
  if (n->attr[0] == FHJIT_CYCLIC) return lw_lo_add_ctx(L, a, u); /* ((i/a) mod b) mod u, u | b */
  return lw_lo_add_ctx(L, a * repeat, u); /* ((i/a) mod b) / repeat = (i/(a repeat)) mod u */
}

/* The use of node v in context x, made if new; -1 on error. */
static int32_t use_of(lw *L, int x, fhjit_value v) {
  int32_t u = lw_imap_get(&L->use_map, (uint64_t)x, (uint64_t)v);
  if (u >= 0) return u;
  if (L->nuse == L->use_cap) {
    int32_t cap = L->use_cap ? L->use_cap * 2 : 64;
    lw_use *n = L->use_cap < INT32_MAX / 2 ? realloc(L->use, sizeof *n * (size_t)cap) : NULL;
    if (!n) return oom(L), -1;
    L->use = n;
    L->use_cap = cap;
  }
  if (lw_imap_put(&L->use_map, (uint64_t)x, (uint64_t)v, L->nuse)) return oom(L), -1;
  L->use[L->nuse] = (lw_use){.x = x, .next = L->first_use[v]};
  L->first_use[v] = L->nuse;
  return L->nuse++;
}

static void need(lw *L, int x, fhjit_value v, int c) {
  if (x < 0 || L->st) return;
  int32_t u = use_of(L, x, v);
  if (u < 0 || (L->use[u].need & (1u << c))) return;
  if (count_value(L)) L->use[u].need |= (uint8_t)(1u << c);
}

/* Marks what component c of node v in context x reads. */
static void mark_operands(lw *L, int x, fhjit_value v, int c) {
  const ir_node *n = &L->g->nodes[v];
  const fhjit_graph *g = L->g;
#define COMP_OF(arg, comp) (nc_of(&g->nodes[arg]) > 1 ? (comp) : 0)
  switch (n->op) {
  case IR_INPUT: break;
  case IR_ADD: case IR_SUB: case IR_ADD_LAZY: case IR_MUL:
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    need(L, x, n->args[1], COMP_OF(n->args[1], c));
    break;
  case IR_NEG: case IR_TO_MONT: case IR_FROM_MONT:
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    break;
  case IR_MUL_PLAIN:
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    need(L, x, n->args[1], 0);
    break;
  case IR_ADD_PLAIN:
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    if (c == 0) need(L, x, n->args[1], 0);
    break;
  case IR_MUL_COMPRESSED: case IR_ADD_COMPRESSED: {
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    if (n->op == IR_ADD_COMPRESSED && c != 0) break;
    int64_t u = g->nodes[n->args[1]].type.n;
    need(L, lw_lo_child_ctx(L, x, n, u), n->args[1], 0);
    if (n->attr[0] == FHJIT_STRIDED_SPARSE && n->type.n / u > 1)
      need(L, lw_lo_add_ctx(L, 1, 1), n->args[2], 0); /* the implicit value, at index 0 */
    break;
  }
  case IR_KS_DIGIT_PRODUCT: need(L, x, n->args[0], 0); break;
  case IR_EXTRACT: need(L, x, n->args[0], COMP_OF(n->args[0], (int)n->attr[0])); break;
  case IR_PACK: need(L, x, n->args[c], 0); break;
  /* rows, concat, automorphism: leaves reading their operands' memory */
  default: break;
  }
#undef COMP_OF
}

/* Per-lane indices of context x = (a, b): lane l reads ((i + l) / a) mod b,
 * where vec divides i (the group's first index in the row, i < n). */
void lw_lo_index_ctx(lw *L, ictx *x) {
  int V = L->p->vec;
  int64_t n = L->p->n;
  LLVMBuilderRef b = L->b;
  const ictx *main_ctx = &L->ctx[0]; /* (1, n): lanes i + l */
  if (x->b == 1) { /* every index 0 */
    for (int l = 0; l < V; l++) x->idx[l] = cidx(L, 0);
    x->uniform = x->contig = 1;
  } else if (x->a == 1 && x->b == n) { /* the main context */
    for (int l = 0; l < V; l++) x->idx[l] = l ? LLVMBuildNUWAdd(b, L->i, cidx(L, l), "") : L->i;
    x->uniform = V == 1;
    x->contig = 1;
  } else if (x->a % V == 0) { /* (i + l) / a = i / a when vec divides both i and a */
    LLVMValueRef v = x->a > 1 ? LLVMBuildUDiv(b, L->i, cidx(L, x->a), "") : L->i;
    if (x->a * x->b < n) v = LLVMBuildURem(b, v, cidx(L, x->b), "");
    for (int l = 0; l < V; l++) x->idx[l] = v;
    x->uniform = x->contig = 1;
  } else if (x->a == 1 && x->b % V == 0) { /* (i + l) mod b = (i mod b) + l */
    x->idx[0] = LLVMBuildURem(b, L->i, cidx(L, x->b), "");
    for (int l = 1; l < V; l++) x->idx[l] = LLVMBuildNUWAdd(b, x->idx[0], cidx(L, l), "");
    x->contig = 1;
  } else if (x->a == 1 && V % x->b == 0) { /* b divides i */
    for (int l = 0; l < V; l++) x->idx[l] = cidx(L, l % x->b);
  } else {
    for (int l = 0; l < V; l++) {
      LLVMValueRef v = main_ctx->idx[l];
      if (x->a > 1) v = LLVMBuildUDiv(b, v, cidx(L, x->a), "");
      x->idx[l] = x->a * x->b < n ? LLVMBuildURem(b, v, cidx(L, x->b), "") : v;
    }
  }
}

/* ---------------------------------------------------------------- marking */

static int by_ctx(const void *a, const void *b) {
  const lw_use *x = a, *y = b;
  return (x->x > y->x) - (x->x < y->x);
}

/* Relinks the uses of node v in increasing context order (contexts are
 * numbered as found, so the order of the code does not depend on hashing).
 * The uses are sorted in a copy, each keeping its index in `next`. */
static void sort_uses(lw *L, fhjit_value v) {
  int32_t k = 0;
  for (int32_t u = L->first_use[v]; u >= 0; u = L->use[u].next) k++;
  if (k < 2) return;
  lw_use *tmp = malloc(sizeof *tmp * (size_t)k);
  if (!tmp) return (void)oom(L);
  k = 0;
  for (int32_t u = L->first_use[v]; u >= 0; u = L->use[u].next)
    tmp[k++] = (lw_use){.x = L->use[u].x, .next = u};
  qsort(tmp, (size_t)k, sizeof *tmp, by_ctx);
  L->first_use[v] = tmp[0].next;
  for (int32_t j = 0; j < k; j++) L->use[tmp[j].next].next = j + 1 < k ? tmp[j + 1].next : -1;
  free(tmp);
}

/* The reverse pass marks what each node is needed for (its users have
 * larger ids, so all its uses are known when it is reached). */
void lw_lo_mark_body(lw *L) {
  fhjit_graph *g = L->g;
  for (int32_t r = 0; r < g->nresults; r++) {
    fhjit_value v = g->results[r].value;
    for (int c = 0; c < nc_of(&g->nodes[v]); c++)
      if (L->eval_comp < 0 || (r == L->eval_result && c == L->eval_comp)) need(L, 0, v, c);
  }
  for (fhjit_value v = g->nnodes - 1; v >= 0 && !L->st; v--) {
    sort_uses(L, v);
    for (int32_t u = L->first_use[v]; u >= 0 && !L->st; u = L->use[u].next)
      for (int c = 0; c < 3; c++)
        if (L->use[u].need & (1u << c)) mark_operands(L, L->use[u].x, v, c);
  }
}
