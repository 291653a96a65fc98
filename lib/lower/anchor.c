/* anchor.c: graphs with NTT anchors, lowered as a chain of kernels.
 *
 * An NTT mixes every coefficient of a row, so it cannot share the one
 * element-wise walk of the fused pointwise kernel (lower.c). The graph is cut
 * at its NTT nodes ("anchors") into steps run in order:
 *   - the NTT's kernels (ntt_emit.c). Their first kernel reads the operand
 *     where it lies (a graph input through its bound view, a component of
 *     one, an earlier anchor's buffer) or, when the operand is computed,
 *     computes it element by element as it loads it: a fused prologue, the
 *     pointwise expression evaluated by lower.c's evaluator (lw_build_eval)
 *     inside the NTT kernel, its inputs appended to that kernel's arguments.
 *     The last kernel writes a result buffer (the anchor is an output) or a
 *     scratch buffer (a later step reads it);
 *     Computed results whose latest anchor is this one, reading it only at
 *     the element, are computed in its last kernel from the transform's
 *     value in registers (a fused epilogue, lower.c's lw_build_eval_reg),
 *     and the transform itself is not stored when nothing reads it;
 *   - one final pointwise kernel (lower.c's fused kernel on a sub-graph) for
 *     the results no NTT wrote, reading inputs and anchors at the element.
 * So a chain such as forward NTT -> key-switch products -> add_lazy ->
 * inverse NTT -> + ciphertext materialises only the forward transforms
 * (scratch between kernels): the products and the sum live in registers of
 * the inverse's first kernel, the addition in its last.
 *
 * The sub-graphs live in a private context owned by the compiled state, so
 * their lifetime never mixes with the user's graphs.
 *
 * The files, each reaching only the ones below it: this one holds the step
 * builders (steps, scratch, sub-graphs, row-restricted clones, pointwise
 * steps, the steps.h lw_step_* API); mixsteps*.c add the steps of SPEC
 * section 7's ops with them; anchor_plan.c walks the graph in node order,
 * choosing the epilogues and building the NTT steps, and hands the section
 * 7 nodes to mixsteps.c (lw_anchor_build_plan); anchor_gpu.c describes and
 * builds the plan's kernels and prints it; host.c runs it on the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/steps.h"

/* ----------------------------------------------------------- analysis */

/* A live value computed by steps of its own into a buffer: an NTT or a
 * limb-mixing op (mixsteps.c). Cones of fused work stop there. */
static int is_barrier(const fhjit_graph *g, const char *live, fhjit_value v) {
  return live[v] && (g->nodes[v].op == IR_NTT || ir_op_class_of(g->nodes[v].op) == IR_CLASS_MIXING);
}

static fhjit_status sub_error(an_build *B, const char *what) {
  if (!B->st)
    B->st = ir_error(B->g->ctx, fhjit_last_status(B->p->sctx) ? fhjit_last_status(B->p->sctx)
                                                              : FHJIT_ERR_UNSUPPORTED,
                     "error: graph @%s: %s: %s", B->g->name, what, fhjit_last_error(B->p->sctx));
  return B->st;
}

static an_step *new_step(an_build *B) {
  if (B->p->nsteps == LW_MAX_KERNELS) {
    if (!B->st)
      B->st = ir_error(B->g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "error: graph @%s needs more than %d kernels (NTT steps and "
                       "materialised operands); split it into several graphs",
                       B->g->name, LW_MAX_KERNELS);
    return NULL;
  }
  an_step *s = &B->p->steps[B->p->nsteps++];
  memset(s, 0, sizeof *s);
  return s;
}

static int new_scratch(an_build *B, const fhjit_type *t) {
  if (B->p->nscratch == LW_MAX_KERNELS) {
    if (!B->st)
      B->st = ir_error(B->g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "error: graph @%s needs more than %d scratch buffers; split it into "
                       "several graphs",
                       B->g->name, LW_MAX_KERNELS);
    return -1;
  }
  int64_t words = fhjit_type_elements(t);
  B->p->scratch_bytes[B->p->nscratch] = words * (int64_t)ir_word_size(B->g->radix);
  return B->p->nscratch++;
}

/* The name of a sub-graph of step s (its target t, or -1): "<kind><s>" or
 * "<kind><s>_<t>". The sub-graph's symbols (lower.c: "fhjit_" + that name,
 * ".eval<c>", ".body") are then unique in the program by construction, by
 * the step and target indices (< LW_MAX_KERNELS, < LW_NTT_MAX_EPI), and
 * independent of the graph's name, which may be long or odd. */
#define SUB_NAME_SIZE 32 /* "epi" + two ints and '_': fits any int, so never cut */
static void sub_name(char out[SUB_NAME_SIZE], const char *kind, int s, int t) {
  SP_ASSERT(s >= 0 && s < LW_MAX_KERNELS && t < LW_NTT_MAX_EPI);
  if (t < 0) snprintf(out, SUB_NAME_SIZE, "%s%d", kind, s);
  else snprintf(out, SUB_NAME_SIZE, "%s%d_%d", kind, s, t);
}

/* An input of sub of type t on chain positions cols bound to layout l
 * (NULL: dense), or FHJIT_NO_VALUE. */
static fhjit_value bound_input(fhjit_graph *sub, const char *name, const fhjit_type *t,
                               const int32_t *cols, const fhjit_layout *l) {
  char free_name[LW_SUB_INPUT_NAME_SIZE];
  fhjit_value x = fhjit_input(sub, lw_sub_input_name(sub, name, free_name), t);
  if (x == FHJIT_NO_VALUE || (cols && fhjit_input_basis(sub, x, cols, (int32_t)t->rows)) ||
      fhjit_bind_input(sub, x, NULL, l))
    return FHJIT_NO_VALUE;
  return x;
}

/* Aliased value v (B->alias[v]) in sub: concat(rows(u, 0, s0), rows(d, s0,
 * nd), rows(u, s0, m - s0)), address chains of two inputs of sub appended
 * to in[*nin]; the operand d is one input for every alias reading it
 * (dmap). */
static fhjit_value alias_expr(an_build *B, fhjit_graph *sub, fhjit_value v, fhjit_value *dmap,
                              an_buf *in, int32_t *nin) {
  const fhjit_graph *g = B->g;
  const an_alias *al = B->alias[v];
  if (dmap[al->d] == FHJIT_NO_VALUE) {
    const ir_node *dn = &g->nodes[al->d];
    fhjit_type td = dn->type;
    if (dn->op == IR_INPUT) td.domain = dn->decl.domain, td.form = dn->decl.form;
    dmap[al->d] = bound_input(sub, NULL, &td, al->dcols, &al->dview);
    if (dmap[al->d] == FHJIT_NO_VALUE) return FHJIT_NO_VALUE;
    in[(*nin)++] = al->dbuf;
  }
  fhjit_value u = bound_input(sub, NULL, &al->tu, al->ucols, al->has_uview ? &al->uview : NULL);
  if (u == FHJIT_NO_VALUE) return u;
  in[(*nin)++] = al->u;
  int64_t m = al->tu.rows;
  fhjit_value r = fhjit_rows(sub, dmap[al->d], al->s0, al->nd);
  if (al->s0 > 0) r = fhjit_concat(sub, fhjit_rows(sub, u, 0, al->s0), r);
  return fhjit_concat(sub, r, fhjit_rows(sub, u, al->s0, m - al->s0));
}

/* Whether v is read from memory by the kernels of pointwise work: an
 * input, a value with a buffer, an alias. */
static int is_leaf(const an_build *B, fhjit_value v) {
  return B->g->nodes[v].op == IR_INPUT || B->where[v].kind >= 0 || B->alias[v];
}

/* Leaf v as a value of sub: an input bound to v's view (input, buffer) and
 * basis, or an alias's address chain; its buffers appended to in[*nin]. */
static fhjit_value leaf_value(an_build *B, fhjit_graph *sub, fhjit_value v, fhjit_value *dmap,
                              an_buf *in, int32_t *nin) {
  const ir_node *n = &B->g->nodes[v];
  fhjit_value x;
  if (n->op != IR_INPUT && B->where[v].kind < 0) {
    x = alias_expr(B, sub, v, dmap, in, nin);
    if (x == FHJIT_NO_VALUE) sub_error(B, "reading a modup's rows where they lie");
    return x;
  }
  fhjit_type t = n->type;
  if (n->op == IR_INPUT) {
    t.domain = n->decl.domain;
    t.form = n->decl.form;
  }
  /* the value's bound basis (SPEC section 7): the sub-graph's bases, so its
   * kernels' columns, are the graph's */
  x = bound_input(sub, n->name, &t, n->basis, n->op == IR_INPUT ? &n->layout : NULL);
  if (x == FHJIT_NO_VALUE) {
    sub_error(B, "an input of a pointwise step");
    return x;
  }
  in[(*nin)++] = n->op == IR_INPUT ? (an_buf){LW_ARG_INPUT, n->input_index} : B->where[v];
  return x;
}

static int same_walk(const fhjit_graph *g, fhjit_value u, fhjit_value v);
static int same_extents(const fhjit_type *a, const fhjit_type *b);

/* ------------------------------------------------ row-restricted clones */

/* Rows [first, first + count) of a computed value, cloned into a sub-graph
 * from the rows of its leaves: a limb-mixing op whose operand is not in
 * memory computes the rows each kernel reads (moddown: P's rows in the
 * inverse NTT's prologue, Q's in the forward NTT's epilogue) instead of
 * materialising the operand. Ops whose result row r reads row r of each
 * operand: element-wise pointwise ops (a key operand is read whole: its
 * row is the chain position), extract, pack, the automorphism (of an
 * address chain: a remapped load of rows of it); rows of a leaf. Anything else (concat,
 * compressed ops, barriers without a buffer) is not restricted. */

enum { NEED_ROWS = 1, NEED_WHOLE = 2 };

/* need[] for the restricted cone of target (0 when it cannot be). */
static int restricted_cone(const an_build *B, fhjit_value target, char *need) {
  const fhjit_graph *g = B->g;
  memset(need, 0, (size_t)g->nnodes);
  need[target] = NEED_ROWS;
  for (int32_t v = target; v >= 0; v--) {
    if (!need[v] || is_leaf(B, v)) continue;
    const ir_node *n = &g->nodes[v];
    if (need[v] & NEED_WHOLE) return 0;
    ir_op_class cls = ir_op_class_of(n->op);
    if (n->op == IR_ROWS) {
      if (!is_leaf(B, n->args[0])) return 0;
      need[n->args[0]] |= NEED_WHOLE;
      continue;
    }
    if (n->op == IR_AUTOMORPHISM) {
      /* a remapped load: its operand an address chain (rows of it are) */
      if (!lw_step_addressable(B, n->args[0])) return 0;
      need[n->args[0]] |= NEED_ROWS;
      continue;
    }
    if ((cls != IR_CLASS_POINTWISE && cls != IR_CLASS_VIEW) || n->op == IR_MUL_COMPRESSED ||
        n->op == IR_ADD_COMPRESSED || is_barrier(g, B->live, v))
      return 0;
    for (int a = 0; a < n->nargs; a++) {
      const fhjit_type *ta = &g->nodes[n->args[a]].type;
      if (ta->kind == FHJIT_KIND_KEY) need[n->args[a]] |= NEED_WHOLE;
      else if (ta->rows == n->type.rows) need[n->args[a]] |= NEED_ROWS;
      else return 0;
    }
  }
  return 1;
}

int lw_step_rows_ok(an_build *B, fhjit_value target) {
  char *need = malloc((size_t)B->g->nnodes);
  if (!need) return 0;
  int ok = restricted_cone(B, target, need);
  free(need);
  return ok;
}

fhjit_value lw_step_clone_rows(an_build *B, fhjit_graph *sub, fhjit_value target,
                               int64_t first, int64_t count, an_buf *in, int32_t *nin) {
  const fhjit_graph *g = B->g;
  size_t nn = (size_t)g->nnodes;
  char *need = malloc(nn);
  fhjit_value *map = malloc(sizeof *map * nn * 3), *whole = map ? map + nn : NULL,
              *dmap = map ? map + 2 * nn : NULL;
  fhjit_value r = FHJIT_NO_VALUE;
  if (!need || !map) {
    if (!B->st) B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    goto done;
  }
  if (!restricted_cone(B, target, need)) {
    if (!B->st)
      B->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "error: graph @%s: internal: rows of %%%s cannot be computed in place",
                       g->name, g->nodes[target].name);
    goto done;
  }
  for (size_t v = 0; v < nn; v++) map[v] = whole[v] = dmap[v] = FHJIT_NO_VALUE;
  for (int32_t v = 0; v <= target && !B->st; v++) {
    if (!need[v]) continue;
    const ir_node *n = &g->nodes[v];
    if (is_leaf(B, v)) {
      fhjit_value x = leaf_value(B, sub, v, dmap, in, nin);
      if (x == FHJIT_NO_VALUE) goto done;
      whole[v] = x;
      if (!(need[v] & NEED_ROWS)) continue;
      map[v] = first == 0 && count == n->type.rows ? x : fhjit_rows(sub, x, first, count);
    } else if (n->op == IR_ROWS) {
      map[v] = fhjit_rows(sub, whole[n->args[0]], n->attr[0] + first, count);
    } else {
      fhjit_value args[IR_MAX_ARGS];
      for (int a = 0; a < n->nargs; a++)
        args[a] = g->nodes[n->args[a]].type.kind == FHJIT_KIND_KEY ? whole[n->args[a]]
                                                                   : map[n->args[a]];
      map[v] = ir_clone_op(sub, g, n, args);
    }
    if (map[v] == FHJIT_NO_VALUE) sub_error(B, "copying rows of an operation into a kernel");
  }
  if (!B->st) r = map[target];
done:
  free(need);
  free(map);
  return r;
}

/* A bound sub-graph computing rows [first, first + count) of target (a
 * prologue); *in receives the buffer of each of its inputs. */
static fhjit_graph *make_sub_rows(an_build *B, const char *name, fhjit_value target,
                                  int64_t first, int64_t count, an_buf **in_out,
                                  const fhjit_type *store_t, an_buf store) {
  fhjit_graph *g = B->g;
  fhjit_graph *sub = fhjit_graph_create(B->p->sctx, name, g->radix);
  an_buf *in = malloc(sizeof *in * (size_t)(2 * g->nnodes + 1));
  *in_out = in;
  if (!sub || !in) {
    if (!sub) sub_error(B, "creating a prologue");
    else if (!B->st) B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    return sub;
  }
  int32_t nin = 0;
  fhjit_value r = lw_step_clone_rows(B, sub, target, first, count, in, &nin);
  if (!B->st && (r == FHJIT_NO_VALUE || fhjit_output(sub, r, NULL)))
    sub_error(B, "an output of a prologue");
  if (!B->st && store_t) {
    if (bound_input(sub, NULL, store_t, NULL, NULL) == FHJIT_NO_VALUE)
      sub_error(B, "the store buffer of a prologue");
    in[nin++] = store;
  }
  if (!B->st && fhjit_bind(sub)) sub_error(B, "binding a prologue");
  return sub;
}

fhjit_value lw_step_clone_over(an_build *B, fhjit_graph *sub, fhjit_value target, fhjit_value v,
                               fhjit_value vval, an_buf *in, int32_t *nin) {
  return lw_step_clone_over_n(B, sub, target, &v, &vval, 1, in, nin);
}

/* The index of w in vs[0..nv), or -1. */
static int index_in(const fhjit_value *vs, int nv, fhjit_value w) {
  for (int k = 0; k < nv; k++)
    if (vs[k] == w) return k;
  return -1;
}

fhjit_value lw_step_clone_over_n(an_build *B, fhjit_graph *sub, fhjit_value target,
                                 const fhjit_value *vs, const fhjit_value *vvals, int nv, an_buf *in,
                                 int32_t *nin) {
  fhjit_value r = FHJIT_NO_VALUE;
  lw_step_clone_multi(B, sub, &target, 1, vs, vvals, nv, in, nin, &r);
  return r;
}

void lw_step_clone_multi(an_build *B, fhjit_graph *sub, const fhjit_value *targets, int nt,
                         const fhjit_value *vs, const fhjit_value *vvals, int nv, an_buf *in,
                         int32_t *nin, fhjit_value *out) {
  const fhjit_graph *g = B->g;
  size_t nn = (size_t)g->nnodes;
  char *need = calloc(nn, 1);
  fhjit_value *map = malloc(sizeof *map * nn * 2), *dmap = map ? map + nn : NULL;
  fhjit_value top = -1;
  for (int t = 0; t < nt; t++) out[t] = FHJIT_NO_VALUE;
  if (!need || !map) {
    if (!B->st) B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    goto done;
  }
  for (int t = 0; t < nt; t++) {
    need[targets[t]] = 1;
    if (targets[t] > top) top = targets[t];
  }
  for (int32_t w = top; w >= 0; w--) {
    if (!need[w] || index_in(vs, nv, w) >= 0 || is_leaf(B, w)) continue;
    for (int a = 0; a < g->nodes[w].nargs; a++) need[g->nodes[w].args[a]] = 1;
  }
  for (size_t w = 0; w < nn; w++) map[w] = dmap[w] = FHJIT_NO_VALUE;
  for (int32_t w = 0; w <= top && !B->st; w++) {
    if (!need[w]) continue;
    const ir_node *n = &g->nodes[w];
    int k = index_in(vs, nv, w);
    if (k >= 0) {
      map[w] = vvals[k];
    } else if (is_leaf(B, w)) {
      if ((map[w] = leaf_value(B, sub, w, dmap, in, nin)) == FHJIT_NO_VALUE) goto done;
    } else {
      fhjit_value args[IR_MAX_ARGS];
      for (int a = 0; a < n->nargs; a++) args[a] = map[n->args[a]];
      map[w] = ir_clone_op(sub, g, n, args);
      if (map[w] == FHJIT_NO_VALUE) sub_error(B, "copying an operation into an epilogue");
    }
  }
  for (int t = 0; t < nt && !B->st; t++) out[t] = map[targets[t]];
done:
  free(need);
  free(map);
}

/* Whether component c of w reads v (where dep[]) only at component c0 and
 * only at the element (element-wise ops, extract, pack); depth bounds the
 * walk of a DAG. */
static int reads_at(const an_build *B, const char *dep, fhjit_value w, int c, fhjit_value v,
                    int c0, int depth) {
  const fhjit_graph *g = B->g;
  if (!dep[w]) return 1;
  if (w == v) return c == c0;
  if (depth > 64) return 0;
  const ir_node *n = &g->nodes[w];
  if (n->op == IR_EXTRACT) return reads_at(B, dep, n->args[0], (int)n->attr[0], v, c0, depth + 1);
  if (n->op == IR_PACK) return reads_at(B, dep, n->args[c], 0, v, c0, depth + 1);
  unsigned f = ir_op_info_of(n->op)->flags;
  if (ir_op_class_of(n->op) != IR_CLASS_POINTWISE || !(f & IR_F_COMPONENTWISE) ||
      (f & IR_F_REMAPS_INDEX))
    return 0;
  for (int a = 0; a < n->nargs; a++) {
    const fhjit_type *ta = &g->nodes[n->args[a]].type;
    int ca = (f & IR_F_PLAIN_OPERAND) && a == 1 ? 0 : ta->comps > 1 ? c : 0;
    if (!reads_at(B, dep, n->args[a], ca, v, c0, depth + 1)) return 0;
  }
  return 1;
}

fhjit_value lw_step_epilogue_result(an_build *B, fhjit_value v) {
  fhjit_graph *g = B->g;
  if (g->result_of[v] >= 0) return FHJIT_NO_VALUE;
  size_t nn = (size_t)g->nnodes;
  char *cone = malloc(nn), *dep = malloc(nn);
  fhjit_value found = FHJIT_NO_VALUE;
  if (!cone || !dep) goto done;
  for (int32_t k = 0; k < g->nresults && found == FHJIT_NO_VALUE; k++) {
    fhjit_value u = g->results[k].value;
    if (u <= v || B->where[u].kind >= 0 || is_leaf(B, u) || !same_walk(g, u, v) ||
        !same_extents(&g->nodes[u].type, &g->nodes[v].type) ||
        g->nodes[u].type.comps != g->nodes[v].type.comps)
      continue;
    /* u's cone down to leaves and v: element-wise work, no other barrier */
    memset(cone, 0, nn);
    memset(dep, 0, nn);
    cone[u] = 1;
    int ok = 1;
    for (int32_t w = u; w >= 0 && ok; w--) {
      if (!cone[w] || w == v || is_leaf(B, w)) continue;
      if (is_barrier(g, B->live, w)) ok = 0;
      for (int a = 0; a < g->nodes[w].nargs; a++) cone[g->nodes[w].args[a]] = 1;
    }
    if (!ok || !cone[v]) continue;
    dep[v] = 1;
    for (int32_t w = v + 1; w <= u; w++)
      if (cone[w] && !is_leaf(B, w))
        for (int a = 0; a < g->nodes[w].nargs; a++) dep[w] |= dep[g->nodes[w].args[a]];
    /* v read by nothing else, and nothing computed from it but u: v is
     * never stored, so neither v nor a value between it and u (computed
     * only in this epilogue) may have a reader outside u's cone or be a
     * result of its own (a moddown's product read by a result and by a
     * later NTT's operand was once left unstored: "graph @pro7: %t11 =
     * moddown: the graph states no special primes") */
    for (int32_t w = v + 1; w < g->nnodes && ok; w++) {
      if (w < u && cone[w] && dep[w] && g->result_of[w] >= 0) ok = 0;
      if (!B->live[w] || cone[w]) continue;
      for (int a = 0; a < g->nodes[w].nargs && ok; a++) {
        fhjit_value x = g->nodes[w].args[a];
        if (x == v || (x > v && x < u && cone[x] && dep[x])) ok = 0;
      }
    }
    int nc = g->nodes[u].type.comps > 1 ? g->nodes[u].type.comps : 1;
    for (int c = 0; c < nc && ok; c++) ok = reads_at(B, dep, u, c, v, c, 0);
    if (ok) found = u;
  }
done:
  free(cone);
  free(dep);
  return found;
}

/* A bound sub-graph computing `targets` (values of g), in that order of
 * outputs, whose inputs are g's inputs and the values that already have a
 * buffer (where[]) or an alias (read through it); *in receives the buffer
 * of each of its inputs. */
static fhjit_graph *make_sub(an_build *B, const char *name, const fhjit_value *targets,
                             int ntargets, an_buf **in_out) {
  fhjit_graph *g = B->g;
  fhjit_graph *sub = fhjit_graph_create(B->p->sctx, name, g->radix);
  fhjit_value *map = malloc(sizeof *map * (size_t)g->nnodes * 2);
  char *need = calloc((size_t)g->nnodes, 1);
  /* an alias takes two inputs (its operand's shared) */
  an_buf *in = malloc(sizeof *in * (size_t)(2 * g->nnodes + 1));
  *in_out = in;
  if (!sub || !map || !need || !in) {
    free(map);
    free(need);
    if (!sub) sub_error(B, "creating a pointwise step");
    else if (!B->st) B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    return sub;
  }
  for (int t = 0; t < ntargets; t++) need[targets[t]] = 1;
  /* the cone of the targets, stopping at values with a buffer */
  for (int32_t v = g->nnodes - 1; v >= 0; v--) {
    if (!need[v] || g->nodes[v].op == IR_INPUT || B->where[v].kind >= 0 || B->alias[v]) continue;
    for (int a = 0; a < g->nodes[v].nargs; a++) need[g->nodes[v].args[a]] = 1;
  }
  int32_t nin = 0;
  fhjit_value *dmap = map + g->nnodes;
  for (int32_t v = 0; v < g->nnodes; v++) dmap[v] = FHJIT_NO_VALUE;
  for (int32_t v = 0; v < g->nnodes && !B->st; v++) {
    map[v] = FHJIT_NO_VALUE;
    if (!need[v]) continue;
    const ir_node *n = &g->nodes[v];
    if (is_leaf(B, v)) {
      map[v] = leaf_value(B, sub, v, dmap, in, &nin);
      if (map[v] == FHJIT_NO_VALUE) break;
      continue;
    }
    fhjit_value args[IR_MAX_ARGS];
    for (int a = 0; a < n->nargs; a++) args[a] = map[n->args[a]];
    map[v] = ir_clone_op(sub, g, n, args);
    if (map[v] == FHJIT_NO_VALUE) sub_error(B, "copying an operation into a pointwise step");
  }
  for (int t = 0; t < ntargets && !B->st; t++)
    if (fhjit_output(sub, map[targets[t]], NULL)) sub_error(B, "an output of a pointwise step");
  if (!B->st && fhjit_bind(sub)) sub_error(B, "binding a pointwise step");
  free(map);
  free(need);
  return sub;
}

/* A pointwise step computing `targets` into `dests`. */
static void add_pointwise(an_build *B, const fhjit_value *targets, const an_buf *dests,
                          int ntargets) {
  fhjit_graph *g = B->g;
  an_step *s = new_step(B);
  if (!s) return;
  char name[SUB_NAME_SIZE];
  sub_name(name, "pw", B->p->nsteps - 1, -1);
  s->sub = make_sub(B, name, targets, ntargets, &s->in);
  s->out = malloc(sizeof *s->out * (size_t)(ntargets + 1));
  if (!s->out && !B->st) B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  fhjit_graph *sub = s->sub;
  /* results in sub's order: outputs t of sub are targets t (every target is
   * computed, so each output is a result or a view of one) */
  for (int32_t k = 0; !B->st && k < sub->nresults; k++) {
    int found = 0;
    for (int t = 0; t < ntargets && !found; t++)
      if (sub->outputs[t].source == k && !sub->outputs[t].is_input_alias) s->out[k] = dests[t], found = 1;
    if (!found) B->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED, "error: graph @%s: internal: "
                                 "unmatched result of a pointwise step", g->name);
  }
  /* a target's buffer holds the target: an output that is a component of a
   * result (an extract target) would store the whole result into it
   * (lw_step_materialise takes the extract's operand instead) */
  for (int t = 0; t < ntargets && !B->st; t++)
    if (sub->outputs[t].component >= 0 && !sub->outputs[t].is_input_alias)
      B->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED, "error: graph @%s: internal: a pointwise "
                       "step's target %%%s is a component of its result", g->name,
                       g->nodes[targets[t]].name);
}

/* Whether values u and v walk one index space on one basis (rows, N and
 * the chain positions of their rows). */
static int same_walk(const fhjit_graph *g, fhjit_value u, fhjit_value v) {
  const fhjit_type *a = &g->nodes[u].type, *b = &g->nodes[v].type;
  if (a->rows != b->rows || a->n != b->n) return 0;
  for (int64_t r = 0; r < a->rows; r++)
    if (ir_pos(g, u, r) != ir_pos(g, v, r)) return 0;
  return 1;
}

/* Pointwise steps for targets[0..n) into dests: one per group of targets
 * that share a walk (a fused kernel walks one index space, and its
 * per-row constants come from one basis). Reorders both arrays. */
static void add_grouped(an_build *B, fhjit_value *targets, an_buf *dests, int n) {
  int done = 0;
  while (done < n && !B->st) {
    int k = done + 1;
    for (int i = done + 1; i < n; i++) {
      if (!same_walk(B->g, targets[done], targets[i])) continue;
      fhjit_value tv = targets[k];
      an_buf tb = dests[k];
      targets[k] = targets[i], dests[k] = dests[i];
      targets[i] = tv, dests[i] = tb;
      k++;
    }
    add_pointwise(B, targets + done, dests + done, k - done);
    done = k;
  }
}

/* Where the NTT operand v can be read in place: a buffer, the layout of the
 * view (offset included) and the view's type. An input or an extract of one
 * is read through its bound layout; an anchor or a materialised value (or a
 * component of one) densely. 0 when v must be materialised first. */
static int source_view(an_build *B, fhjit_value v, an_buf *buf, fhjit_layout *l) {
  const fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  if (n->op == IR_INPUT) {
    *buf = (an_buf){LW_ARG_INPUT, n->input_index};
    *l = n->layout;
    return 1;
  }
  if (B->where[v].kind >= 0) {
    *buf = B->where[v];
    fhjit_dense_layout(&n->type, l);
    l->offset += B->where_off[v]; /* one of several values in one buffer (md_group) */
    return 1;
  }
  if (n->op == IR_ROWS && source_view(B, n->args[0], buf, l)) {
    l->offset += n->attr[0] * l->row_stride;
    return 1;
  }
  if (n->op != IR_EXTRACT || !source_view(B, n->args[0], buf, l)) return 0;
  l->offset += n->attr[0] * l->comp_stride;
  l->comp_stride = 0;
  return 1;
}

/* The plan's source axes from a view of type t. */
static void set_source(lw_ntt_plan *p, const fhjit_type *t, const fhjit_layout *l) {
  int k = 0;
  if (t->comps > 0) {
    p->src_ext[k] = t->comps;
    p->src_stride[k++] = l->comp_stride;
  }
  for (int a = 0; a < t->nbatch; a++) {
    p->src_ext[k] = t->batch[a];
    p->src_stride[k++] = l->batch_stride[a];
  }
  p->src_ext[k] = t->rows;
  p->src_stride[k++] = l->row_stride;
  p->src_nax = k;
  p->src_offset = l->offset;
  p->src_index_stride = l->index_stride;
}

/* The same polynomial extents (N, rows, batch axes, digits), components
 * aside: each caller compares those by its own rule (a plaintext value
 * may feed a ciphertext result, every slot computed from it). */
static int same_extents(const fhjit_type *a, const fhjit_type *b) {
  if (a->n != b->n || a->rows != b->rows || a->nbatch != b->nbatch || a->digits != b->digits) return 0;
  for (int i = 0; i < a->nbatch; i++)
    if (a->batch[i] != b->batch[i]) return 0;
  return 1;
}

/* ------------------------- a step's fused work (anchor_gpu.c, host.c) */

/* The fused work of NTT step s for ntt_emit.c (GPU and host builds). */
void lw_step_fusion(const fhjit_graph *g, const an_step *s, lw_ntt_fusion *fu) {
  memset(fu, 0, sizeof *fu);
  fu->sub = s->pro_sub;
  fu->comp = s->pro_comp;
  fu->nepi = s->nepi;
  for (int t = 0; t < s->nepi; t++) fu->epi[t] = (lw_ntt_epi){s->epi_sub[t], s->epi_reg[t]};
  (void)g;
  const fhjit_type *tv = &s->ntt_type;
  fu->ntt_comps = tv->comps > 1 ? tv->comps : 1;
  fu->skip_store = s->skip_store;
  fu->store_rows = s->pro_store_rows;
  fu->store_first = s->pro_store_first;
  fu->red = s->red;
  fu->chain = s->chain ? &s[1].plan : NULL; /* the next step of the same plan */
  fu->chain_row0 = s->chain_row0;
  fu->chained = s->chained || s->heads > 0;
  fu->head = s->head;
}

int lw_step_first_kernel(const an_step *st) { return st->chained || st->heads > 0; }
int lw_step_end_kernel(const an_step *st) { return st->plan.nkernels - (st->head ? 1 : 0); }

int lw_step_kernels(const an_step *st) {
  return st->is_ntt ? lw_step_end_kernel(st) - lw_step_first_kernel(st) : 1;
}

/* Whether an NTT step's first kernel reads its source: always without a
 * prologue; with one only where the plan lifts the source or loads rows
 * from it (lw_ntt_plan.lift, pro_rows: mixsteps_mdrs.c, mdrs_steps). */
int lw_step_reads_source(const an_step *st) {
  return !st->pro_sub || st->plan.lift || st->plan.pro_rows;
}

/* ------------------------------------ for mixsteps*.c, anchor_plan.c */

an_step *lw_step_new(an_build *B) { return new_step(B); }
int lw_step_scratch(an_build *B, const fhjit_type *t) { return new_scratch(B, t); }

an_buf lw_step_home(an_build *B, fhjit_value v) {
  if (B->g->result_of[v] >= 0) return (an_buf){LW_ARG_RESULT, B->g->result_of[v]};
  int sc = new_scratch(B, &B->g->nodes[v].type);
  return (an_buf){sc < 0 ? -1 : LW_ARG_SCRATCH, sc};
}

void lw_step_materialise(an_build *B, fhjit_value v) {
  /* a component of a computed value: the whole value, which the extract
   * then reads in place (a pointwise step's output that is an extract is a
   * view of its operand's result: stored into the component's buffer it
   * overran it by the other components, random graphs at 102707) */
  while (B->g->nodes[v].op == IR_EXTRACT) v = B->g->nodes[v].args[0];
  if (B->g->nodes[v].op == IR_INPUT || B->where[v].kind >= 0) return;
  an_buf dst = lw_step_home(B, v);
  if (B->st) return;
  lw_step_pointwise(B, &v, &dst, 1);
  if (!B->st) B->where[v] = dst;
}
void lw_step_pointwise(an_build *B, const fhjit_value *targets, const an_buf *dests, int n) {
  add_pointwise(B, targets, dests, n);
}
int lw_step_source(an_build *B, fhjit_value v, an_buf *buf, fhjit_layout *l) {
  return source_view(B, v, buf, l);
}
void lw_step_set_source(lw_ntt_plan *p, const fhjit_type *t, const fhjit_layout *l) {
  set_source(p, t, l);
}
fhjit_status lw_step_sub_error(an_build *B, const char *what) { return sub_error(B, what); }
fhjit_graph *lw_step_sub_rows(an_build *B, const char *name, fhjit_value target, int64_t first,
                              int64_t count, an_buf **in, const fhjit_type *store_t,
                              an_buf store) {
  return make_sub_rows(B, name, target, first, count, in, store_t, store);
}
static int in_memory_leaf(const void *ctx, fhjit_value w) {
  const an_build *B = ctx;
  return B->g->nodes[w].op == IR_INPUT || B->where[w].kind >= 0 || B->alias[w];
}
int lw_step_addressable(const an_build *B, fhjit_value v) {
  /* out of memory counts as no: v is then materialised, always correct */
  return lw_chain_leaves(B->g, v, in_memory_leaf, B) == 1;
}
void lw_step_name(char out[LW_STEP_NAME_SIZE], const char *kind, int s, int t) {
  sub_name(out, kind, s, t);
}
const char *lw_sub_input_name(const fhjit_graph *sub, const char *name,
                              char out[LW_SUB_INPUT_NAME_SIZE]) {
  if (!name || fhjit_find_value(sub, name) == FHJIT_NO_VALUE) return name;
  /* a name too long for out with its suffix is left to the builder (the
   * sub-graph's names only label messages and plans) */
  for (int k = 1;; k++) {
    if ((size_t)snprintf(out, LW_SUB_INPUT_NAME_SIZE, "%s_%d", name, k) >= LW_SUB_INPUT_NAME_SIZE)
      return NULL;
    if (fhjit_find_value(sub, out) == FHJIT_NO_VALUE) return out;
  }
}
int lw_step_is_barrier(const fhjit_graph *g, const char *live, fhjit_value v) {
  return is_barrier(g, live, v);
}
int lw_step_same_extents(const fhjit_type *a, const fhjit_type *b) { return same_extents(a, b); }
fhjit_graph *lw_step_sub(an_build *B, const char *name, const fhjit_value *targets, int ntargets,
                         an_buf **in) {
  return make_sub(B, name, targets, ntargets, in);
}
void lw_step_grouped(an_build *B, fhjit_value *targets, an_buf *dests, int n) {
  add_grouped(B, targets, dests, n);
}
