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
 * their lifetime never mixes with the user's graphs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Linker.h>

#include "lower/steps.h"
#include "nvptx/nvptx.h"

static void plan_free(an_plan *p) {
  if (!p) return;
  for (int s = 0; s < p->nsteps; s++) {
    free(p->steps[s].in);
    free(p->steps[s].out);
    free(p->steps[s].out_off);
    free(p->steps[s].pro_in);
    for (int t = 0; t < p->steps[s].nepi; t++) free(p->steps[s].epi_in[t]);
    lw_ntt_host_destroy(p->host[s]);
    lw_bconv_host_destroy(p->bhost[s]);
  }
  for (int i = 0; i < p->ncols; i++) free(p->cols[i]);
  free(p->cols);
  fhjit_context_destroy(p->sctx);
  free(p);
}

static void plan_free_hook(void *p) { plan_free(p); }

/* ----------------------------------------------------------- analysis */

static int is_live_anchor(const fhjit_graph *g, const char *live, fhjit_value v) {
  return live[v] && g->nodes[v].op == IR_NTT;
}

/* A live value computed by steps of its own into a buffer: an NTT or a
 * limb-mixing op (mixsteps.c). Cones of fused work stop there. */
static int is_barrier(const fhjit_graph *g, const char *live, fhjit_value v) {
  return live[v] && (g->nodes[v].op == IR_NTT || ir_op_class_of(g->nodes[v].op) == IR_CLASS_MIXING);
}

/* Live values: what the results depend on (NULL when out of memory). */
static char *live_values(const fhjit_graph *g) {
  char *live = calloc((size_t)(g->nnodes ? g->nnodes : 1), 1);
  if (!live) return NULL;
  for (int32_t k = 0; k < g->nresults; k++) live[g->results[k].value] = 1;
  for (int32_t v = g->nnodes - 1; v >= 0; v--)
    if (live[v])
      for (int a = 0; a < g->nodes[v].nargs; a++) live[g->nodes[v].args[a]] = 1;
  return live;
}

int lw_graph_has_anchor(const fhjit_graph *g) {
  if (!g || !g->bound) return 0;
  char *live = live_values(g);
  int any = 0;
  for (int32_t v = 0; v < g->nnodes && live && !any; v++)
    any = is_live_anchor(g, live, v) || (live[v] && lw_needs_steps(g, v));
  free(live);
  return any;
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
  fhjit_value x = fhjit_input(sub, name, t);
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
static int same_shape(const fhjit_type *a, const fhjit_type *b);

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
        !same_shape(&g->nodes[u].type, &g->nodes[v].type) ||
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
    /* v read by nothing else: it is never stored */
    for (int32_t w = v + 1; w < g->nnodes && ok; w++)
      for (int a = 0; a < g->nodes[w].nargs && ok; a++)
        if (B->live[w] && g->nodes[w].args[a] == v && !cone[w]) ok = 0;
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

/* ----------------------------------------------------- epilogue choice */

/* Marks the cone of root in mark[]: root and what it depends on, stopping at
 * inputs and live anchors (marked, not entered); root itself is entered
 * even when it is an anchor only if enter_root. */
static void mark_cone(const an_build *B, fhjit_value root, char *mark, int enter_root) {
  const fhjit_graph *g = B->g;
  memset(mark, 0, (size_t)g->nnodes);
  mark[root] = 1;
  for (int32_t v = root; v >= 0; v--) {
    if (!mark[v]) continue;
    const ir_node *n = &g->nodes[v];
    if (n->op == IR_INPUT || (is_barrier(g, B->live, v) && !(v == root && enter_root))) continue;
    for (int a = 0; a < n->nargs; a++) mark[n->args[a]] = 1;
  }
}

/* Whether the cone a prologue of x would compute holds a coefficient-domain
 * automorphism not already in memory. Its per-lane loads put every lane of
 * a warp in a sector of its own (sources k^-1 apart), and an NTT's first
 * kernel loads a whole column of each row at once: fused there they cost
 * more than a pointwise pass writing the operand (H200, N = 2^16, Q's rows:
 * the forward NTT r62 35.2 -> 58.8 us, r32 20.2 -> 51.3 us, against 13.8
 * and 11.1 us for the automorphism alone). */
static int scattered_cone(const an_build *B, fhjit_value x, char *cone) {
  const fhjit_graph *g = B->g;
  mark_cone(B, x, cone, 0);
  for (fhjit_value w = 0; w <= x; w++)
    if (cone[w] && g->nodes[w].op == IR_AUTOMORPHISM && B->where[w].kind < 0 &&
        g->nodes[w].type.domain == FHJIT_DOMAIN_COEF)
      return 1;
  return 0;
}

/* The operand x of an NTT computed by a pointwise step into its result
 * buffer or scratch (the whole value an extract reads), for the NTT to
 * read in place, when its prologue would hold scattered loads (ntt_plan
 * autpro=1: fused anyway). 1 when it was. */
static int materialise_scattered(an_build *B, fhjit_value x) {
  const fhjit_graph *g = B->g;
  if (B->tune.autpro > 0) return 0;
  char *cone = malloc((size_t)g->nnodes);
  if (!cone) {
    B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    return 0;
  }
  int scattered = scattered_cone(B, x, cone);
  free(cone);
  if (!scattered) return 0;
  lw_step_materialise(B, g->nodes[x].op == IR_EXTRACT ? g->nodes[x].args[0] : x);
  return !B->st;
}

static int same_shape(const fhjit_type *a, const fhjit_type *b) {
  if (a->n != b->n || a->rows != b->rows || a->nbatch != b->nbatch || a->digits != b->digits) return 0;
  for (int i = 0; i < a->nbatch; i++)
    if (a->batch[i] != b->batch[i]) return 0;
  return 1;
}

/* Whether result value u (cone marked) can be computed in anchor v's last
 * kernel, element by element from v's value there: same rows, batch axes
 * and N; v read only at the element itself (no compressed operand, whose
 * expansion reads other indices); a v of several components read only
 * component-wise (element-wise ops of v's components, u of the same
 * components), so that the thread holding component c computes u's
 * component c. */
static int epilogue_ok(const an_build *B, fhjit_value u, fhjit_value v, const char *cone,
                       char *dep) {
  const fhjit_graph *g = B->g;
  const fhjit_type *tu = &g->nodes[u].type, *tv = &g->nodes[v].type;
  if (!same_shape(tu, tv)) return 0;
  int cv = tv->comps > 1 ? tv->comps : 1, cu = tu->comps > 1 ? tu->comps : 1;
  if (cv > 1 && cu != cv) return 0;
  memset(dep, 0, (size_t)g->nnodes);
  dep[v] = 1;
  for (int32_t w = v + 1; w <= u; w++) {
    if (!cone[w] || is_barrier(g, B->live, w) || g->nodes[w].op == IR_INPUT) continue;
    const ir_node *n = &g->nodes[w];
    for (int a = 0; a < n->nargs; a++) dep[w] |= dep[n->args[a]];
    if (!dep[w]) continue;
    /* re-indexing ops read their operands at other rows or indices */
    ir_op_class cls = ir_op_class_of(n->op);
    if (cls != IR_CLASS_POINTWISE && cls != IR_CLASS_VIEW) return 0;
    unsigned f = ir_op_info_of(n->op)->flags;
    if (f & IR_F_REMAPS_INDEX || !ir_op_is_elementwise(n->op)) return 0; /* rows, concat... */
    if (cv > 1 && !(f & IR_F_COMPONENTWISE)) return 0; /* extract, pack, key switch... */
    /* a plaintext operand is read at its component 0 by every component */
    if (cv > 1 && (f & IR_F_PLAIN_OPERAND) && dep[n->args[1]]) return 0;
    if (cv > 1 && (n->type.comps > 1 ? n->type.comps : 1) != cv) return 0;
  }
  return 1;
}

/* Chooses the epilogues (B->epi_of) and which anchors some step reads from
 * memory (B->in_memory). A computed result whose latest anchor is v goes
 * into v's epilogue when epilogue_ok; the others stay in the final
 * pointwise step. Operands of later NTTs are not epilogue targets: a
 * prologue computing them from what they read moves fewer words than an
 * epilogue storing them (a key switch's sum has two components per digit
 * transform it reads). */
static void choose_epilogues(an_build *B) {
  fhjit_graph *g = B->g;
  size_t nn = (size_t)(g->nnodes ? g->nnodes : 1);
  char *cone = malloc(nn), *dep = malloc(nn);
  int *count = calloc(nn, sizeof *count);
  if (!cone || !dep || !count) {
    B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    goto done;
  }
  for (int32_t k = 0; k < g->nresults; k++) {
    fhjit_value u = g->results[k].value;
    const ir_node *n = &g->nodes[u];
    if (n->op == IR_INPUT || is_barrier(g, B->live, u) || B->epi_of[u] >= 0) continue;
    mark_cone(B, u, cone, 0);
    fhjit_value v = -1;
    for (int32_t w = 0; w < u; w++)
      if (cone[w] && is_barrier(g, B->live, w)) v = w;
    if (v < 0 || !is_live_anchor(g, B->live, v) || count[v] == LW_NTT_MAX_EPI ||
        !epilogue_ok(B, u, v, cone, dep))
      continue;
    B->epi_of[u] = v;
    count[v]++;
  }
  /* what reads each anchor from memory: later NTT operands (read in place
   * or by a prologue), results outside epilogues, and epilogues of other
   * anchors */
  for (int32_t w = 0; w < g->nnodes; w++) {
    fhjit_value root = -1, own = -1;
    if (is_live_anchor(g, B->live, w)) {
      root = g->nodes[w].args[0];
    } else if (B->live[w] && lw_is_s7(g, w)) {
      root = w; /* its own steps read its operands from memory */
    } else if (g->result_of[w] >= 0 && B->live[w]) {
      root = w;
      own = B->epi_of[w];
    }
    if (root < 0) continue;
    mark_cone(B, root, cone, root == w && lw_is_s7(g, w));
    for (int32_t a = 0; a <= root; a++)
      if (cone[a] && is_live_anchor(g, B->live, a) && a != own) B->in_memory[a] = 1;
  }
done:
  free(cone);
  free(dep);
  free(count);
}

/* Builds the epilogue sub-graphs of NTT step s (anchor v, its buffer set in
 * where[v]). */
static void add_epilogues(an_build *B, an_step *s, fhjit_value v) {
  fhjit_graph *g = B->g;
  for (int32_t k = 0; k < g->nresults && !B->st; k++) {
    fhjit_value u = g->results[k].value;
    if (B->epi_of[u] != v || B->where[u].kind >= 0) continue;
    int t = s->nepi;
    char name[SUB_NAME_SIZE];
    sub_name(name, "epi", B->p->nsteps - 1, t);
    s->epi_sub[t] = make_sub(B, name, &u, 1, &s->epi_in[t]);
    s->nepi++;
    if (B->st) return;
    s->epi_reg[t] = -1;
    for (int32_t i = 0; i < s->epi_sub[t]->ninputs; i++)
      if (s->epi_in[t][i].kind == s->dst.kind && s->epi_in[t][i].index == s->dst.index) s->epi_reg[t] = i;
    if (s->epi_reg[t] < 0) {
      B->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "error: graph @%s: internal: an epilogue without its transform", g->name);
      return;
    }
    s->epi_out[t] = (an_buf){LW_ARG_RESULT, k};
  }
  /* after every target's sub-graph: none reads another's buffer */
  for (int t = 0; t < s->nepi; t++) B->where[g->results[s->epi_out[t].index].value] = s->epi_out[t];
  s->skip_store = g->result_of[v] < 0 && !B->in_memory[v];
}

/* A program runs at most LW_MAX_KERNELS steps, one per live anchor and one
 * pointwise; every result is written by an anchor (itself or one of its
 * LW_NTT_MAX_EPI epilogue targets) or by the pointwise step (a kernel of at
 * most LW_MAX_ARGS pointers). A graph past these bounds could not compile:
 * it is refused before the passes that visit the nodes once per result and
 * per anchor, which stay linear in the nodes below them. */
static fhjit_status check_plan_size(const an_build *B) {
  fhjit_graph *g = B->g;
  int32_t anchors = 0;
  for (int32_t v = 0; v < g->nnodes; v++) anchors += is_live_anchor(g, B->live, v);
  if (anchors > LW_MAX_KERNELS)
    return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s has %d NTTs, and a program runs at most %d kernels; "
                    "split it into several graphs",
                    g->name, (int)anchors, LW_MAX_KERNELS);
  int64_t most = (int64_t)anchors * (1 + LW_NTT_MAX_EPI) + LW_MAX_ARGS - 2;
  if (g->nresults > most)
    return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s has %d results, but its %d NTT%s and one pointwise "
                    "kernel write at most %lld; split it into several graphs",
                    g->name, (int)g->nresults, (int)anchors, anchors == 1 ? "" : "s",
                    (long long)most);
  return FHJIT_OK;
}

static void free_aliases(an_build *B) {
  for (int32_t v = 0; B->alias && v < B->g->nnodes; v++) free(B->alias[v]);
  free(B->alias);
  /* a shared inverse NTT's record: freed once, by its first member; the
   * other members' pointers are dropped first (the record is read to tell
   * them apart, so before anything is freed) */
  for (int32_t v = 0; B->intt && v < B->g->nnodes; v++)
    if (B->intt[v] && B->intt[v]->first != v) B->intt[v] = NULL;
  for (int32_t v = 0; B->intt && v < B->g->nnodes; v++)
    if (B->intt[v]) {
      free(B->intt[v]->member);
      free(B->intt[v]->urow);
      free(B->intt[v]->ucols);
      free(B->intt[v]);
    }
  free(B->intt);
  /* moddown groups: owned by their first member; as for the inverse NTT's
   * records, the other members' pointers are dropped before anything is
   * freed (a later member's record would be read after its free) */
  for (int32_t v = 0; B->mdg && v < B->g->nnodes; v++)
    if (B->mdg[v] && B->mdg[v]->first != v) B->mdg[v] = NULL;
  for (int32_t v = 0; B->mdg && v < B->g->nnodes; v++) free(B->mdg[v]);
  free(B->mdg);
  free(B->where_off);
  free(B->mdrs);
}

static an_plan *build_plan(fhjit_graph *g) {
  an_build B = {.g = g};
  B.p = calloc(1, sizeof *B.p);
  B.live = live_values(g);
  B.where = malloc(sizeof *B.where * (size_t)(g->nnodes ? g->nnodes : 1));
  B.epi_of = malloc(sizeof *B.epi_of * (size_t)(g->nnodes ? g->nnodes : 1));
  B.in_memory = calloc((size_t)(g->nnodes ? g->nnodes : 1), 1);
  B.alias = calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *B.alias);
  B.intt = calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *B.intt);
  B.mdg = calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *B.mdg);
  B.where_off = calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *B.where_off);
  B.mdrs = calloc((size_t)(g->nnodes ? g->nnodes : 1), 1);
  if (B.p) B.p->sctx = fhjit_context_create();
  /* the sub-graphs' lowering reads the options of g's context */
  if (!B.p || !B.live || !B.where || !B.epi_of || !B.in_memory || !B.alias || !B.intt ||
      !B.mdg || !B.where_off || !B.mdrs ||
      !B.p->sctx || ir_options_copy(B.p->sctx, g->ctx)) {
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    goto fail;
  }
  for (int32_t v = 0; v < g->nnodes; v++) B.where[v] = (an_buf){-1, 0}, B.epi_of[v] = -1;
  if (check_plan_size(&B)) goto fail;
  /* ntt_plan (FHJIT_NTT_PLAN), read once for the steps' choices (a
   * malformed value is reported when the first plan is made); epi=0 turns
   * epilogues off (comparisons) */
  lw_ntt_tuning_default(&B.tune);
  lw_ntt_tuning_parse(NULL, ir_option(g->ctx, IR_OPT_NTT_PLAN), &B.tune);
  if (B.tune.epi != 0) choose_epilogues(&B);

  for (int32_t v = 0; v < g->nnodes && !B.st; v++) {
    if (B.live[v] && lw_is_s7(g, v)) {
      lw_steps_s7(&B, v);
      continue;
    }
    if (!is_live_anchor(g, B.live, v)) continue;
    const ir_node *n = &g->nodes[v];
    fhjit_value x = n->args[0];
    /* the operand: read in place, else materialised (a computed value,
     * or the whole value an extract reads) into its result buffer when it
     * is an output, else into scratch */
    an_buf src;
    fhjit_layout view;
    fhjit_graph *pro_sub = NULL;
    an_buf *pro_in = NULL;
    int pro_comp = -1;
    int in_memory = source_view(&B, x, &src, &view);
    if (!in_memory && materialise_scattered(&B, x)) in_memory = source_view(&B, x, &src, &view);
    if (B.st) break;
    if (!in_memory) {
      /* computed: fused into the NTT's first kernel (prologue) */
      fhjit_value m = x;
      if (g->nodes[x].op == IR_EXTRACT) m = g->nodes[x].args[0], pro_comp = (int)g->nodes[x].attr[0];
      char name[SUB_NAME_SIZE];
      sub_name(name, "pro", B.p->nsteps, -1);
      pro_sub = make_sub(&B, name, &m, 1, &pro_in);
      if (B.st) {
        free(pro_in);
        break;
      }
      src = (an_buf){-1, 0};
      fhjit_dense_layout(&g->nodes[x].type, &view);
    }
    /* the table: dense rows of words from some offset */
    const ir_node *tw = &g->nodes[n->args[1]];
    if (tw->type.n > 1 && tw->layout.index_stride != 1) {
      B.st = ir_error_at(g, n->loc, FHJIT_ERR_UNSUPPORTED,
                         "%%%s = ntt: the twiddle table %%%s must have index stride 1 (it has "
                         "%lld)",
                         n->name, tw->name, (long long)tw->layout.index_stride);
      free(pro_in);
      break;
    }
    an_step *s = new_step(&B);
    if (!s) {
      free(pro_in);
      break;
    }
    s->is_ntt = 1;
    s->ntt_type = n->type;
    s->src = src;
    s->pro_sub = pro_sub;
    s->pro_in = pro_in;
    s->pro_comp = pro_comp;
    s->tw = (an_buf){LW_ARG_INPUT, tw->input_index};
    if (g->result_of[v] >= 0) {
      s->dst = (an_buf){LW_ARG_RESULT, g->result_of[v]};
    } else {
      int sc = new_scratch(&B, &n->type);
      if (sc < 0) break;
      s->dst = (an_buf){LW_ARG_SCRATCH, sc};
    }
    B.where[v] = s->dst;
    int64_t batch_rows = fhjit_type_elements(&n->type) / n->type.n;
    if (lw_ntt_plan_make(g->ctx, g->radix, (ir_ntt_kind)n->attr[0], ir_ntt_log2(n->type.n),
                         n->type.rows, batch_rows, &s->plan)) {
      B.st = FHJIT_ERR_UNSUPPORTED;
      break;
    }
    set_source(&s->plan, &g->nodes[x].type, &view);
    s->plan.cols = n->basis; /* columns and twiddle rows by chain position */
    s->plan.tw_offset = tw->layout.offset;
    s->plan.tw_row_stride = tw->type.rows > 1 ? tw->layout.row_stride : 0;
    add_epilogues(&B, s, v);
  }
  /* the results no step wrote, in one final pointwise step */
  if (!B.st) {
    fhjit_value *targets = malloc(sizeof *targets * (size_t)(g->nresults + 1));
    an_buf *dests = malloc(sizeof *dests * (size_t)(g->nresults + 1));
    int nt = 0;
    if (!targets || !dests) B.st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    for (int32_t k = 0; k < g->nresults && !B.st; k++) {
      fhjit_value v = g->results[k].value;
      if (B.where[v].kind == LW_ARG_RESULT) continue;
      targets[nt] = v;
      dests[nt++] = (an_buf){LW_ARG_RESULT, k};
    }
    add_grouped(&B, targets, dests, nt);
    free(targets);
    free(dests);
  }
  if (B.st) goto fail;
  lw_scratch_assign(B.p); /* scratch.c: buffers never in use at one time share memory */
  free(B.live);
  free(B.where);
  free(B.epi_of);
  free(B.in_memory);
  free_aliases(&B);
  return B.p;
fail:
  free(B.live);
  free(B.where);
  free(B.epi_of);
  free(B.in_memory);
  free_aliases(&B);
  plan_free(B.p);
  return NULL;
}

/* --------------------------------------------------------------- GPU */

/* The fused work of NTT step s for ntt_emit.c. */
static void step_fusion(const fhjit_graph *g, const an_step *s, lw_ntt_fusion *fu) {
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
}

/* Whether an NTT step's first kernel reads its source: always without a
 * prologue; with one only where the plan lifts the source or loads rows
 * from it (lw_ntt_plan.lift, pro_rows: mixsteps_mdrs.c, mdrs_steps). */
static int reads_source(const an_step *st) {
  return !st->pro_sub || st->plan.lift || st->plan.pro_rows;
}

static void step_args(const an_plan *p, int s, const lw_ntt_plan *np, int j, lw_kernel *k) {
  (void)p;
  (void)np;
  const an_step *st = &p->steps[s];
  k->nargs = 0;
  k->args[k->nargs++] = (lw_arg){LW_ARG_PARAMS, 0};
  k->args[k->nargs++] = (lw_arg){LW_ARG_PSTRIDE, 0};
  if (st->is_bconv) { /* (params, pstride, table, src, dst, the other digits' tables in[]) */
    k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->tw.kind, st->tw.index};
    k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->src.kind, st->src.index};
    k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->dst.kind, st->dst.index};
    for (int d = 1; d < st->bconv.digits; d++)
      k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->in[d - 1].kind, st->in[d - 1].index};
    return;
  }
  if (st->is_ntt) {
    k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->tw.kind, st->tw.index};
    /* an unread source argument: dst stands in */
    const an_buf *src = j == 0 && reads_source(st) ? &st->src : &st->dst;
    k->args[k->nargs++] = (lw_arg){(lw_arg_kind)src->kind, src->index};
    k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->dst.kind, st->dst.index};
    if (j == 0 && st->pro_sub)
      for (int32_t i = 0; i < st->pro_sub->ninputs; i++)
        k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->pro_in[i].kind, st->pro_in[i].index};
    if (j == np->nkernels - 1)
      for (int t = 0; t < st->nepi; t++) {
        for (int32_t i = 0; i < st->epi_sub[t]->ninputs; i++)
          k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->epi_in[t][i].kind, st->epi_in[t][i].index};
        k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->epi_out[t].kind, st->epi_out[t].index};
      }
    return;
  }
  for (int32_t i = 0; i < st->sub->ninputs; i++)
    k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->in[i].kind, st->in[i].index};
  for (int32_t r = 0; r < st->sub->nresults; r++)
    k->args[k->nargs++] = (lw_arg){(lw_arg_kind)st->out[r].kind, st->out[r].index};
}

/* The prefix of NTT step s's kernel names: "fhjit_ntt<s>_n<log N>", the
 * kernels "<prefix>_k<j>" (ntt_emit.c); unique by the step index. */
static void ntt_prefix(char out[40], int s, const lw_ntt_plan *np) {
  snprintf(out, 40, "fhjit_ntt%d_n%d", s, np->log_n);
}

static fhjit_status too_many_kernels(fhjit_graph *g) {
  return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED, "error: graph @%s needs more than %d kernels",
                  g->name, LW_MAX_KERNELS);
}

/* Appends the kernels of NTT step s (its plan made for the target). */
static void describe_ntt(const an_plan *p, int s, lw_program *out) {
  const an_step *sp = &p->steps[s];
  char prefix[40];
  ntt_prefix(prefix, s, &sp->plan);
  for (int j = 0; j < sp->plan.nkernels; j++) {
    lw_kernel *k = &out->kernels[out->nkernels++];
    snprintf(k->name, sizeof k->name, "%s_k%d", prefix, j);
    k->grid[0] = (uint32_t)sp->plan.k[j].blocks;
    k->grid[1] = k->grid[2] = 1;
    k->block[0] = sp->plan.k[j].threads;
    k->block[1] = k->block[2] = 1;
    step_args(p, s, &sp->plan, j, k);
    lw_ntt_launch_facts(&sp->plan, j, k);
  }
}

/* The name of bconv step s's kernel. */
static void bconv_name(char out[LW_NAME_MAX], int s) { snprintf(out, LW_NAME_MAX, "fhjit_bconv%d", s); }

/* Appends the kernel of bconv step s. */
static void describe_bconv(const an_plan *p, int s, lw_program *out) {
  const lw_bconv_plan *bp = &p->steps[s].bconv;
  lw_kernel *k = &out->kernels[out->nkernels++];
  bconv_name(k->name, s);
  uint32_t static_bytes; /* declared by the kernel: no dynamic shared memory */
  lw_bconv_launch(bp, &k->grid[0], &k->block[0], &static_bytes);
  k->shared_bytes = 0;
  k->grid[1] = k->grid[2] = 1;
  k->block[1] = k->block[2] = 1;
  step_args(p, s, NULL, 0, k);
}

/* Appends the kernel of pointwise step s. */
static fhjit_status describe_pointwise(fhjit_graph *g, const an_plan *p, int s, lw_program *out) {
  lw_plan pl;
  fhjit_status st = lw_plan_graph(p->steps[s].sub, &pl);
  if (st)
    return ir_error(g->ctx, st, "error: graph @%s: pointwise step: %s", g->name,
                    fhjit_last_error(p->sctx));
  lw_kernel *k = &out->kernels[out->nkernels++];
  snprintf(k->name, sizeof k->name, "%s", pl.name);
  k->grid[0] = (uint32_t)((pl.groups + LW_BLOCK - 1) / LW_BLOCK);
  k->grid[1] = k->grid[2] = 1;
  k->block[0] = LW_BLOCK;
  k->block[1] = k->block[2] = 1;
  step_args(p, s, NULL, 0, k);
  return FHJIT_OK;
}

/* The program of plan p for target t without its code: kernels (names,
 * launch facts, arguments) in launch order and scratch buffers. NTT plans
 * are adjusted to the target (lw_ntt_for_target) on the way. */
static fhjit_status describe_steps(fhjit_graph *g, an_plan *p, const nv_target *t,
                                   lw_program *out) {
  memset(out, 0, sizeof *out);
  for (int s = 0; s < p->nsteps; s++) {
    an_step *sp = &p->steps[s];
    if (out->nkernels + (sp->is_ntt ? sp->plan.nkernels : 1) > LW_MAX_KERNELS)
      return too_many_kernels(g);
    if (sp->is_bconv) {
      lw_bconv_for_target(&sp->bconv, t);
      describe_bconv(p, s, out);
      continue;
    }
    if (!sp->is_ntt) {
      fhjit_status st = describe_pointwise(g, p, s, out);
      if (st) return st;
      continue;
    }
    lw_ntt_for_target(&sp->plan, t);
    describe_ntt(p, s, out);
  }
  out->nscratch = p->nscratch;
  memcpy(out->scratch_bytes, p->scratch_bytes, sizeof out->scratch_bytes);
  lw_scratch_describe(p, out); /* scratch.c: offsets, arena, and a check of the arguments */
  return FHJIT_OK;
}

/* Every kernel the program describes is a distinct function of module m: a
 * second definition under one name would have been renamed by LLVM, and
 * the launch would find the first. An internal error otherwise. */
static fhjit_status check_kernel_names(fhjit_graph *g, LLVMModuleRef m, const lw_program *out) {
  for (int32_t i = 0; i < out->nkernels; i++) {
    const char *name = out->kernels[i].name;
    for (int32_t j = 0; j < i; j++)
      if (!strcmp(name, out->kernels[j].name)) return lw_duplicate_symbol(g->ctx, name);
    if (!LLVMGetNamedFunction(m, name))
      return ir_error(g->ctx, FHJIT_ERR_LLVM, "internal: graph @%s: no kernel %s in the module",
                      g->name, name);
  }
  return FHJIT_OK;
}

/* Adds step s's code to module m. */
static fhjit_status build_step(fhjit_graph *g, an_plan *p, int s, LLVMContextRef c,
                               LLVMModuleRef m, LLVMTargetMachineRef tm) {
  an_step *sp = &p->steps[s];
  if (sp->is_bconv) {
    char name[LW_NAME_MAX];
    bconv_name(name, s);
    return lw_bconv_build(g->ctx, &sp->bconv, LW_GPU, name, c, m);
  }
  if (sp->is_ntt) {
    char prefix[40];
    ntt_prefix(prefix, s, &sp->plan);
    lw_ntt_fusion fu;
    step_fusion(g, sp, &fu);
    fhjit_status st = lw_ntt_build(g->ctx, &sp->plan, &fu, LW_GPU, prefix, c, m);
    if (st && (sp->pro_sub || sp->nepi) && fhjit_last_status(p->sctx))
      st = ir_error(g->ctx, st, "error: graph @%s: NTT fused work: %s", g->name,
                    fhjit_last_error(p->sctx));
    return st;
  }
  lw_plan pl;
  LLVMModuleRef sm = NULL;
  fhjit_status st;
  if (!(st = lw_plan_graph(sp->sub, &pl))) pl.result_offset = sp->dst_off, pl.result_offsets = sp->out_off;
  if (st || (st = lw_build(sp->sub, &pl, LW_GPU, c, &sm)))
    return ir_error(g->ctx, st, "error: graph @%s: pointwise step: %s", g->name,
                    fhjit_last_error(p->sctx));
  nv_prepare_module(sm, tm);
  if (lw_symbol_taken(m, pl.name)) {
    LLVMDisposeModule(sm);
    return lw_duplicate_symbol(g->ctx, pl.name);
  }
  if (LLVMLinkModules2(m, sm))
    return ir_error(g->ctx, FHJIT_ERR_LLVM, "error: graph @%s: linking a pointwise step failed",
                    g->name);
  return FHJIT_OK;
}

fhjit_status lw_anchor_describe(fhjit_graph *g, const char *arch, lw_program *out) {
  memset(out, 0, sizeof *out);
  const nv_target *t = nv_find_target(&g->ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  an_plan *p = build_plan(g);
  if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
  fhjit_status st = describe_steps(g, p, t, out);
  plan_free(p);
  if (st) memset(out, 0, sizeof *out);
  return st;
}

/* ------------------------------------------------------ plan text */

static void put_buf(sp_buf *b, an_buf x) {
  static const char *const kinds[] = {"params", "pstride", "input", "result", "scratch", "own"};
  if (x.kind < 0 || x.kind > LW_ARG_OWN) sp_buf_printf(b, "none");
  else sp_buf_printf(b, "%s %d", kinds[x.kind], (int)x.index);
}

/* The ops a step's sub-graph computes: "mul, sub" (inputs left out). */
static void put_ops(sp_buf *b, const fhjit_graph *sub) {
  int k = 0;
  for (int32_t i = 0; sub && i < sub->nnodes; i++) {
    const ir_node *n = &sub->nodes[i];
    if (n->op == IR_INPUT) continue;
    sp_buf_printf(b, "%s%s", k++ ? " " : "",
                  n->op == IR_NTT ? "ntt" : ir_op_name(n->op));
  }
  if (!k) sp_buf_printf(b, "(copy)");
}

static void put_kernel(sp_buf *b, const lw_kernel *k) {
  sp_buf_printf(b, "    kernel %s grid %u block %u", k->name, k->grid[0], k->block[0]);
  if (k->shared_bytes) sp_buf_printf(b, " shared %u", k->shared_bytes);
  if (k->flags & LW_KERNEL_PDL) sp_buf_printf(b, " pdl");
  sp_buf_printf(b, "\n");
}

fhjit_status lw_anchor_plan_text(fhjit_graph *g, const char *arch, char **text) {
  *text = NULL;
  const nv_target *t = nv_find_target(&g->ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  an_plan *p = build_plan(g);
  if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
  lw_program *out = malloc(sizeof *out);
  fhjit_status st = out ? describe_steps(g, p, t, out) : FHJIT_ERR_MEMORY;
  if (!out) ir_error(g->ctx, st, "error: out of memory");
  sp_buf b = {0};
  if (!st) {
    static const char *const kinds[] = {"ntt_fwd from coef-std", "ntt_fwd from coef-mont",
                                        "ntt_inv to coef-mont", "ntt_inv to coef-std"};
    int64_t total = 0;
    for (int i = 0; i < out->nscratch; i++) total += out->scratch_bytes[i];
    sp_buf_printf(&b, "plan @%s (%s): %d steps, %d kernels, %d scratch buffers (%lld bytes) in "
                  "an arena of %lld bytes\n",
                  g->name, t->arch, p->nsteps, (int)out->nkernels, (int)out->nscratch,
                  (long long)total, (long long)out->scratch_arena);
    int kk = 0;
    for (int s = 0; s < p->nsteps; s++) {
      const an_step *sp = &p->steps[s];
      int nk = sp->is_ntt ? sp->plan.nkernels : 1;
      if (sp->is_ntt) {
        sp_buf_printf(&b, "step %d: %s, %lld rows x N %lld (%lld polynomial rows), ", s,
                      kinds[sp->plan.kind], (long long)sp->plan.rows,
                      (long long)1 << sp->plan.log_n, (long long)sp->plan.batch_rows);
        put_buf(&b, sp->src);
        sp_buf_printf(&b, " -> ");
        if (sp->skip_store) sp_buf_printf(&b, "(not stored)");
        else put_buf(&b, sp->dst);
        sp_buf_printf(&b, "\n");
        if (sp->plan.lift)
          sp_buf_printf(&b, "  load: %slift (rescale) of the source's one row (chain position %d) "
                        "to each row\n", sp->pro_sub ? "the prologue's word plus the " : "",
                        (int)sp->plan.lift_col);
        if (sp->pro_sub) {
          sp_buf_printf(&b, "  prologue: ");
          put_ops(&b, sp->pro_sub);
          if (sp->plan.pro_rows)
            sp_buf_printf(&b, " (rows 0..%lld of each polynomial; the others loaded)",
                          (long long)(sp->plan.pro_rows - 1));
          if (sp->pro_store_rows > 0) {
            sp_buf_printf(&b, ", stored (rows %lld..%lld) -> ", (long long)sp->pro_store_first,
                          (long long)(sp->pro_store_first + sp->plan.rows - 1));
            put_buf(&b, sp->pro_in[sp->pro_sub->ninputs - 1]);
          }
          sp_buf_printf(&b, "\n");
        }
        for (int e = 0; e < sp->nepi; e++) {
          sp_buf_printf(&b, "  epilogue: ");
          /* ipfuse: the last kernel's grid runs over the output rows */
          if (e == 0 && sp->red.members > 0) {
            sp_buf_printf(&b, "inner product of %d digits in registers, %lld rows, %s",
                          sp->red.members, (long long)sp->red.out_rows,
                          sp->red.acc > 0 ? "accumulated" : "slots");
            if (sp->plan.reduce_smem > 0)
              sp_buf_printf(&b, " (%d in shared memory)", sp->plan.reduce_smem);
            sp_buf_printf(&b, ": ");
          }
          put_ops(&b, sp->epi_sub[e]);
          sp_buf_printf(&b, " -> ");
          put_buf(&b, sp->epi_out[e]);
          sp_buf_printf(&b, "\n");
        }
      } else if (sp->is_bconv) {
        const lw_bconv_plan *bp = &sp->bconv;
        sp_buf_printf(&b, "step %d: %s %d -> %d rows x N %lld, %lld polynomials, %s form, ", s,
                      bp->lift ? "lift (rescale)" : "bconv", (int)bp->l, (int)bp->m,
                      (long long)1 << bp->log_n, (long long)bp->polys,
                      bp->mont ? "mont" : "std");
        if (bp->mma) sp_buf_printf(&b, "tensor cores (%d tiles per warp), ", bp->mma);
        put_buf(&b, sp->src);
        sp_buf_printf(&b, " -> ");
        put_buf(&b, sp->dst);
        if (bp->digits > 1) {
          /* batched digits (mixsteps_ipfuse.c, batched_fwd): each one's source
           * row, table and destination row */
          sp_buf_printf(&b, ", %d digits:", bp->digits);
          for (int d = 0; d < bp->digits; d++) {
            const an_buf *tb = d ? &sp->in[d - 1] : &sp->tw;
            int64_t so = d ? bp->more[d - 1].src_offset : bp->src_offset;
            int64_t dof = d ? bp->more[d - 1].dst_offset : bp->dst_offset;
            sp_buf_printf(&b, "%s row %lld (", d ? ";" : "",
                          (long long)(bp->src_row_stride ? so / bp->src_row_stride : 0));
            put_buf(&b, *tb);
            const char *tname = tb->kind == LW_ARG_INPUT
                                    ? fhjit_value_name(g, fhjit_input_value(g, tb->index))
                                    : NULL;
            if (tname && *tname) sp_buf_printf(&b, " %%%s", tname); /* the digit's modup's table */
            sp_buf_printf(&b, ") -> row %lld", (long long)(dof >> bp->log_n));
          }
        } else if (bp->dst_offset) /* rows of a larger buffer */
          sp_buf_printf(&b, " from row %lld", (long long)(bp->dst_offset >> bp->log_n));
        sp_buf_printf(&b, "\n");
      } else {
        sp_buf_printf(&b, "step %d: pointwise ", s);
        put_ops(&b, sp->sub);
        sp_buf_printf(&b, " ->");
        for (int32_t r = 0; sp->sub && r < sp->sub->nresults; r++) {
          sp_buf_printf(&b, r ? ", " : " ");
          put_buf(&b, sp->out[r]);
          if (sp->out_off && sp->out_off[r]) /* one of several results in one buffer */
            sp_buf_printf(&b, " at word %lld", (long long)sp->out_off[r]);
        }
        sp_buf_printf(&b, "\n");
      }
      for (int j = 0; j < nk && kk < out->nkernels; j++) put_kernel(&b, &out->kernels[kk++]);
    }
    for (int i = 0; i < out->nscratch; i++)
      sp_buf_printf(&b, "scratch %d: %lld bytes at %lld, steps %d..%d\n", i,
                    (long long)out->scratch_bytes[i], (long long)out->scratch_offset[i],
                    (int)p->scratch_first[i], (int)p->scratch_last[i]);
    if (b.failed || !b.data) st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  }
  free(out);
  plan_free(p);
  if (st) sp_buf_free(&b);
  else *text = b.data;
  return st;
}

fhjit_status lw_anchor_compile_gpu(fhjit_graph *g, const char *arch, fhjit_emit_kind kind,
                                   char **text, lw_program *prog) {
  if (text) *text = NULL;
  if (prog) memset(prog, 0, sizeof *prog);
  const nv_target *t = nv_find_target(&g->ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  an_plan *p = build_plan(g);
  if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
  lw_program out;
  fhjit_status st = describe_steps(g, p, t, &out);
  LLVMTargetMachineRef tm = st ? NULL : nv_gpu_machine(&g->ctx->err, t);
  if (!tm) {
    plan_free(p);
    return st ? st : FHJIT_ERR_LLVM;
  }
  LLVMContextRef c = LLVMContextCreate();
  char mname[LW_NAME_MAX]; /* the module's name only: no symbol */
  lw_graph_symbol(g->name, mname);
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext(mname, c);
  nv_prepare_module(m, tm);
  for (int s = 0; s < p->nsteps && !st; s++) st = build_step(g, p, s, c, m, tm);
  if (!st) st = check_kernel_names(g, m, &out);
  char what[128];
  snprintf(what, sizeof what, "graph @%s (%s)", g->name, t->arch);
  char *ptx = NULL;
  if (!st) st = nv_pipeline(&g->ctx->err, m, tm, what, "default<O3>", kind, text,
                            prog ? &ptx : NULL);
  if (!st && prog) {
    out.ptx = ptx;
    *prog = out;
  }
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  plan_free(p);
  if (st && text) {
    free(*text);
    *text = NULL;
  }
  return st;
}

/* --------------------------------------------------------------- host */

static void *buf_ptr(const an_buf *b, const void *const *inputs, void *const *results,
                     void *const *scratch) {
  if (b->kind < 0) return NULL;
  switch (b->kind) {
  case LW_ARG_INPUT: return (void *)inputs[b->index];
  case LW_ARG_RESULT: return results[b->index];
  case LW_ARG_SCRATCH: return scratch[b->index];
  default: return NULL;
  }
}

fhjit_status lw_anchor_run_host(fhjit_graph *g, const void *params, int64_t pstride,
                                const void *const *inputs, void *const *results, int threads) {
  if (!g->compiled || g->free_compiled != plan_free_hook) {
    an_plan *p = build_plan(g);
    if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
    for (int s = 0; s < p->nsteps; s++) {
      if (p->steps[s].is_bconv) {
        fhjit_status st = lw_bconv_host_create(g->ctx, &p->steps[s].bconv, &p->bhost[s]);
        if (st) {
          plan_free(p);
          return st;
        }
        continue;
      }
      if (!p->steps[s].is_ntt) continue;
      lw_ntt_fusion fu;
      step_fusion(g, &p->steps[s], &fu);
      fhjit_status st = lw_ntt_host_create(g->ctx, &p->steps[s].plan, &fu, &p->host[s]);
      if (st && (fu.sub || fu.nepi) && fhjit_last_status(p->sctx))
        st = ir_error(g->ctx, st, "error: graph @%s: NTT fused work: %s", g->name,
                      fhjit_last_error(p->sctx));
      if (st) {
        plan_free(p);
        return st;
      }
    }
    if (g->compiled && g->free_compiled) g->free_compiled(g->compiled);
    g->compiled = p;
    g->free_compiled = plan_free_hook;
  }
  an_plan *p = g->compiled;
  int64_t ws = (int64_t)ir_word_size(g->radix);
  void *scratch[LW_MAX_KERNELS] = {0};
  fhjit_status st = FHJIT_OK;
  /* one arena, the buffers at their offsets (scratch.c) */
  char *arena = p->scratch_arena ? malloc((size_t)p->scratch_arena) : NULL;
  if (p->scratch_arena && !arena)
    st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: graph @%s: out of memory for scratch",
                  g->name);
  for (int s = 0; s < p->nscratch && !st; s++) scratch[s] = arena + p->scratch_offset[s];
  for (int s = 0; s < p->nsteps && !st; s++) {
    an_step *sp = &p->steps[s];
    lw_scratch_poison(p, s, scratch);
    if (sp->is_bconv) {
      const void *more[LW_BCONV_MAX_DIGITS];
      for (int d = 1; d < sp->bconv.digits; d++)
        more[d - 1] = buf_ptr(&sp->in[d - 1], inputs, results, scratch);
      st = lw_bconv_host_run(g->ctx, p->bhost[s], params, pstride,
                             buf_ptr(&sp->tw, inputs, results, scratch), more,
                             buf_ptr(&sp->src, inputs, results, scratch),
                             buf_ptr(&sp->dst, inputs, results, scratch), threads);
      continue;
    }
    if (sp->is_ntt) {
      const void *extra[LW_MAX_ARGS];
      int32_t nextra = sp->pro_sub ? sp->pro_sub->ninputs : 0;
      for (int32_t i = 0; i < nextra; i++) extra[i] = buf_ptr(&sp->pro_in[i], inputs, results, scratch);
      for (int t = 0; t < sp->nepi; t++) {
        for (int32_t i = 0; i < sp->epi_sub[t]->ninputs && nextra < LW_MAX_ARGS; i++)
          extra[nextra++] = buf_ptr(&sp->epi_in[t][i], inputs, results, scratch);
        if (nextra < LW_MAX_ARGS) extra[nextra++] = buf_ptr(&sp->epi_out[t], inputs, results, scratch);
      }
      st = lw_ntt_host_run(g->ctx, p->host[s], params, pstride,
                           buf_ptr(&sp->tw, inputs, results, scratch),
                           reads_source(sp) ? buf_ptr(&sp->src, inputs, results, scratch) : NULL,
                           (char *)buf_ptr(&sp->dst, inputs, results, scratch) + sp->dst_off * ws,
                           extra, threads);
      continue;
    }
    const void *ins[LW_MAX_ARGS];
    void *outs[LW_MAX_ARGS];
    for (int32_t i = 0; i < sp->sub->ninputs; i++) ins[i] = buf_ptr(&sp->in[i], inputs, results, scratch);
    for (int32_t r = 0; r < sp->sub->nresults; r++)
      outs[r] = (char *)buf_ptr(&sp->out[r], inputs, results, scratch) +
                (sp->dst_off + (sp->out_off ? sp->out_off[r] : 0)) * ws;
    if (fhjit_run_host(sp->sub, params, pstride, ins, outs, threads))
      st = ir_error(g->ctx, fhjit_last_status(p->sctx), "error: graph @%s: pointwise step: %s",
                    g->name, fhjit_last_error(p->sctx));
  }
  free(arena);
  return st;
}

/* ------------------------------------------------- for mixsteps.c */

an_step *lw_step_new(an_build *B) { return new_step(B); }
int lw_step_scratch(an_build *B, const fhjit_type *t) { return new_scratch(B, t); }

an_buf lw_step_home(an_build *B, fhjit_value v) {
  if (B->g->result_of[v] >= 0) return (an_buf){LW_ARG_RESULT, B->g->result_of[v]};
  int sc = new_scratch(B, &B->g->nodes[v].type);
  return (an_buf){sc < 0 ? -1 : LW_ARG_SCRATCH, sc};
}

void lw_step_materialise(an_build *B, fhjit_value v) {
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
int lw_step_addressable(const an_build *B, fhjit_value v) {
  const ir_node *n = &B->g->nodes[v];
  if (n->op == IR_INPUT || B->where[v].kind >= 0 || B->alias[v]) return 1;
  if (n->op == IR_EXTRACT || n->op == IR_ROWS) return lw_step_addressable(B, n->args[0]);
  if (n->op == IR_CONCAT)
    return lw_step_addressable(B, n->args[0]) && lw_step_addressable(B, n->args[1]);
  return 0;
}
void lw_step_name(char out[LW_STEP_NAME_SIZE], const char *kind, int s, int t) {
  sub_name(out, kind, s, t);
}
