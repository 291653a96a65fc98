/* mixsteps.c: the steps of SPEC section 7's ops in the step planner
 * (steps.h, anchor.c).
 *
 * Re-indexing ops (rows, concat, automorphism) are loads in lower.c's
 * kernels, which read them from buffers: their computed operands are
 * materialised here first. Limb-mixing ops run as kernels of their own:
 *   bconv     one conversion kernel (bconv.c);
 *   rescale   the last row's inverse NTT to coefficient-standard form, the
 *             lift of it to the other rows (centred by q/2) computed in
 *             their forward NTT's first kernel as it loads that one row
 *             (ntt_plan liftfuse; 0: a one-row conversion kernel writing
 *             them), and in that NTT's last kernel the epilogue
 *             (x - u) * q^-1;
 *   moddown   the P rows' inverse NTT (coefficient-Montgomery), the
 *             conversion P -> Q, the forward NTT of Q's rows, and in its last
 *             kernel (a - u) * P*^-1. Several moddowns with materialised
 *             operands and one set of tables (hoisted rotations' inner
 *             products) run as a group (an_mdgroup, md_group): their
 *             operands by one pointwise kernel into one buffer (ntt_plan
 *             mdip), one inverse NTT of all their P rows (mdintt), one
 *             conversion (mdbconv), each forward NTT its own;
 *   modup     the digit's inverse NTT, the conversion to the other rows, their
 *             forward NTT (mixsteps_modup.c says how the modups of one
 *             operand share them, and when the sum of their key products
 *             is computed in their forward NTT's last kernel).
 * Every intermediate lives in scratch; what SPEC states as one formula is
 * computed by the same arithmetic as the interpreter (lib/ir/interp_mix.c):
 * the NTT kinds it names, the conversion's exact sums. A computed operand
 * is not materialised where its rows can be computed in the op's kernels
 * (fused_operand: the inverse NTT's prologue and the forward NTT's
 * epilogue; modup: the inverse NTT's prologue, storing the digit's rows),
 * and a result read from moddown's or rescale's value is computed in its
 * last kernel (docs/section7.md, "Computed operands"). Fusing the
 * conversion into the NTTs' kernels is what remains.
 *
 * The files: this one holds the entry (lw_steps_s7), the helpers and step
 * builders the others share (mixsteps.h) and the steps of bconv, rescale
 * and moddown; mixsteps_modup.c modup's; mixsteps_ipfuse.c the modups'
 * shared inverse NTT, their batched forward NTT and the inner product in
 * its last kernel (ipfuse, ipacc);
 * mixsteps_mdgroup.c the moddown groups; mixsteps_mdrs.c moddown and
 * rescale in one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/tables.h"
#include "lower/mixsteps.h"
#include "lower/steps.h"

int lw_is_s7(const fhjit_graph *g, fhjit_value v) {
  ir_op_class c = ir_op_class_of(g->nodes[v].op);
  return c == IR_CLASS_ROWS || c == IR_CLASS_PERMUTE || c == IR_CLASS_MIXING;
}

int lw_needs_steps(const fhjit_graph *g, fhjit_value v) {
  const ir_node *n = &g->nodes[v];
  ir_op_class c = ir_op_class_of(n->op);
  if (c == IR_CLASS_MIXING) return 1;
  if (c != IR_CLASS_ROWS && c != IR_CLASS_PERMUTE) return 0;
  for (int a = 0; a < n->nargs; a++)
    if (!lw_addressable(g, n->args[a])) return 1;
  return 0;
}

void lw_mix_oom(an_build *B) {
  if (!B->st) B->st = ir_error(B->g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
}

/* A column list of n entries owned by the plan (plans point to it). */
int32_t *lw_mix_new_cols(an_build *B, int64_t n) {
  an_plan *p = B->p;
  int32_t **grown = realloc(p->cols, sizeof *grown * (size_t)(p->ncols + 1));
  int32_t *c = malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
  if (grown) p->cols = grown;
  if (!grown || !c) {
    free(c);
    lw_mix_oom(B);
    return NULL;
  }
  p->cols[p->ncols++] = c;
  return c;
}

/* The chain positions of rows [first, first + n) of value v. */
int32_t *lw_mix_cols_of(an_build *B, fhjit_value v, int64_t first, int64_t n) {
  int32_t *c = lw_mix_new_cols(B, n);
  for (int64_t r = 0; c && r < n; r++) c[r] = (int32_t)ir_pos(B->g, v, first + r);
  return c;
}

int64_t lw_mix_sum_comps(const an_step *s) {
  const fhjit_graph *sub = s->epi_sub[0];
  if (!sub || sub->nresults < 1) return 0;
  int32_t c = sub->nodes[sub->results[sub->nresults - 1].value].type.comps;
  return c > 1 ? c : 1;
}

int lw_mix_same_buf(an_buf a, an_buf b) { return a.kind == b.kind && a.index == b.index; }

an_buf lw_mix_scratch_for(an_build *B, const fhjit_type *t) {
  int sc = lw_step_scratch(B, t);
  return (an_buf){sc < 0 ? -1 : LW_ARG_SCRATCH, sc};
}

/* The buffer and view holding v (through rows views and extracts),
 * materialising what must be. */
int lw_mix_view_of(an_build *B, fhjit_value v, an_buf *buf, fhjit_layout *l) {
  const ir_node *n = &B->g->nodes[v];
  if (lw_step_source(B, v, buf, l)) return 1;
  if (n->op == IR_ROWS && lw_mix_view_of(B, n->args[0], buf, l)) {
    l->offset += n->attr[0] * l->row_stride;
    return 1;
  }
  /* a component of a computed value: the whole value once, for all its
   * readers (a key switch's two moddowns read the two of its sum) */
  if (n->op == IR_EXTRACT && lw_mix_view_of(B, n->args[0], buf, l)) {
    l->offset += n->attr[0] * l->comp_stride;
    l->comp_stride = 0;
    return 1;
  }
  if (B->st) return 0;
  lw_step_materialise(B, v);
  return !B->st && lw_step_source(B, v, buf, l);
}

fhjit_status lw_mix_refuse(an_build *B, fhjit_value v, const char *why) {
  const ir_node *n = &B->g->nodes[v];
  if (!B->st)
    B->st = ir_error_at(B->g, n->loc, FHJIT_ERR_UNSUPPORTED, "%%%s = %s: %s", n->name,
                        ir_op_name(n->op), why);
  return B->st;
}

/* ------------------------------------------------------------ steps */

/* An NTT step of `kind` over a value of type t (rows on chain positions
 * cols) read from src through view, twiddles from input tw, into dst. */
an_step *lw_mix_ntt_step(an_build *B, fhjit_value v, ir_ntt_kind kind, const fhjit_type *t,
                         const int32_t *cols, an_buf src, const fhjit_layout *view,
                         fhjit_value tw, an_buf dst) {
  fhjit_graph *g = B->g;
  const ir_node *twn = &g->nodes[tw];
  if (B->st || !cols) return NULL;
  if (twn->op != IR_INPUT || (twn->type.n > 1 && twn->layout.index_stride != 1)) {
    lw_mix_refuse(B, v, "its twiddle tables must be inputs with index stride 1");
    return NULL;
  }
  an_step *s = lw_step_new(B);
  if (!s) return NULL;
  s->is_ntt = 1;
  s->ntt_type = *t;
  s->src = src;
  s->dst = dst;
  s->tw = (an_buf){LW_ARG_INPUT, twn->input_index};
  s->pro_comp = -1;
  int64_t batch_rows = fhjit_type_elements(t) / t->n;
  if (lw_ntt_plan_make(g->ctx, g->radix, kind, ir_ntt_log2(t->n), t->rows, batch_rows,
                       &s->plan)) {
    B->st = FHJIT_ERR_UNSUPPORTED;
    return NULL;
  }
  lw_step_set_source(&s->plan, t, view);
  s->plan.tw_offset = twn->layout.offset;
  s->plan.tw_row_stride = twn->type.rows > 1 ? twn->layout.row_stride : 0;
  s->plan.cols = cols;
  return s;
}

/* Whether conversion table `table` is an input with index stride 1 (the
 * kernel's table argument); else refuses v. */
static int table_ok(an_build *B, fhjit_value v, fhjit_value table) {
  const ir_node *tn = &B->g->nodes[table];
  if (tn->op != IR_INPUT || (tn->type.n > 1 && tn->layout.index_stride != 1)) {
    lw_mix_refuse(B, v, "its constant table must be an input with index stride 1");
    return 0;
  }
  return 1;
}

/* The conversion kernel's plan refused the step of node v: its message
 * ("error: bconv plan: ...") again, at v's place in the graph text and
 * naming v, as every other refusal of a valid graph is. */
static fhjit_status bconv_refusal_at(fhjit_graph *g, fhjit_value v) {
  fhjit_status st = fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
  const char *why = fhjit_last_error(g->ctx);
  if (!strncmp(why, "error: ", 7)) why += 7;
  char *copy = strdup(why);
  const ir_node *n = &g->nodes[v];
  ir_error_at(g, n->loc, st, "%%%s = %s: %s", n->name, ir_op_name(n->op),
              copy ? copy : "the conversion kernel's plan refused it");
  free(copy);
  return st;
}

/* A conversion step: the l rows of src (type ts, chain positions
 * scols, through view) to the m chain positions dcols, into dst at
 * dst_offset words, polynomials dst_poly_stride words apart (0: dense);
 * the table is input `table` from word `skip` (lift: no table). With
 * nmore > 0 the same kernel also converts more[0 .. nmore) of the same
 * shape (lw_bconv_plan.digits; their tables' buffers in the step's in[]). */
an_step *lw_mix_bconv_step_digits(an_build *B, fhjit_value v, int lift, const fhjit_type *ts,
                                  const int32_t *scols, an_buf src, const fhjit_layout *view,
                                  int64_t m, const int32_t *dcols, fhjit_value table,
                                  int64_t skip, an_buf dst, int64_t dst_offset,
                                  int64_t dst_poly_stride, const bconv_more *more, int nmore) {
  fhjit_graph *g = B->g;
  const ir_node *tn = &g->nodes[table];
  if (B->st || !scols || !dcols || !table_ok(B, v, table)) return NULL;
  for (int k = 0; k < nmore; k++)
    if (!more[k].scols || !more[k].dcols || !table_ok(B, v, more[k].table)) return NULL;
  SP_ASSERT(nmore < LW_BCONV_MAX_DIGITS && (!nmore || !lift));
  an_step *s = lw_step_new(B);
  if (!s) return NULL;
  s->is_bconv = 1;
  s->src = src;
  s->dst = dst;
  /* the lift reads no table; the argument still names a buffer */
  s->tw = lift ? src : (an_buf){LW_ARG_INPUT, tn->input_index};
  lw_bconv_plan *bp = &s->bconv;
  memset(bp, 0, sizeof *bp);
  bp->radix = g->radix;
  bp->mont = ts->form == FHJIT_FORM_MONT;
  bp->lift = lift;
  bp->l = (int32_t)ts->rows;
  bp->m = (int32_t)m;
  bp->log_n = ir_ntt_log2(ts->n);
  bp->polys = fhjit_type_elements(ts) / (ts->rows * ts->n);
  int k = 0;
  if (ts->comps > 0) {
    bp->src_ext[k] = ts->comps;
    bp->src_stride[k++] = view->comp_stride;
  }
  for (int a = 0; a < ts->nbatch; a++) {
    bp->src_ext[k] = ts->batch[a];
    bp->src_stride[k++] = view->batch_stride[a];
  }
  bp->src_nax = k;
  bp->src_offset = view->offset;
  bp->src_row_stride = view->row_stride;
  bp->src_index_stride = view->index_stride;
  bp->table_offset = lift ? 0 : tn->layout.offset + skip;
  bp->src_cols = scols;
  bp->dst_cols = dcols;
  bp->dst_offset = dst_offset;
  bp->dst_poly_stride = dst_poly_stride;
  if (nmore) {
    bp->digits = 1 + nmore;
    s->in = malloc(sizeof *s->in * (size_t)nmore); /* freed with the plan */
    if (!s->in) {
      lw_mix_oom(B);
      return NULL;
    }
    for (int k = 0; k < nmore; k++) {
      const ir_node *mn = &g->nodes[more[k].table];
      s->in[k] = (an_buf){LW_ARG_INPUT, mn->input_index};
      bp->more[k] = (lw_bconv_digit){more[k].src_offset, mn->layout.offset, more[k].dst_offset,
                                     more[k].scols, more[k].dcols};
    }
  }
  if (lw_bconv_tuning_apply(g->ctx, bp) || lw_bconv_plan_make(g->ctx, bp)) {
    if (!B->st) B->st = bconv_refusal_at(g, v);
    return NULL;
  }
  return s;
}

/* One digit's conversion step (bconv_step_digits). */
static an_step *bconv_step_at(an_build *B, fhjit_value v, int lift, const fhjit_type *ts,
                              const int32_t *scols, an_buf src, const fhjit_layout *view,
                              int64_t m, const int32_t *dcols, fhjit_value table, int64_t skip,
                              an_buf dst, int64_t dst_offset, int64_t dst_poly_stride) {
  return lw_mix_bconv_step_digits(B, v, lift, ts, scols, src, view, m, dcols, table, skip, dst,
                                  dst_offset, dst_poly_stride, NULL, 0);
}

/* bconv_step_at into dense dst (from its first word). */
an_step *lw_mix_bconv_step(an_build *B, fhjit_value v, int lift, const fhjit_type *ts,
                           const int32_t *scols, an_buf src, const fhjit_layout *view,
                           int64_t m, const int32_t *dcols, fhjit_value table, int64_t skip,
                           an_buf dst) {
  return bconv_step_at(B, v, lift, ts, scols, src, view, m, dcols, table, skip, dst, 0, 0);
}

/* A bound sub-graph input of type t on chain positions cols, bound to
 * layout l (NULL: dense). */
fhjit_value lw_mix_sub_input(fhjit_graph *sub, const char *name, const fhjit_type *t,
                             const int32_t *cols, const fhjit_layout *l) {
  char free_name[LW_SUB_INPUT_NAME_SIZE];
  fhjit_value x = fhjit_input(sub, lw_sub_input_name(sub, name, free_name), t);
  if (x == FHJIT_NO_VALUE || fhjit_input_basis(sub, x, cols, (int32_t)t->rows) ||
      fhjit_bind_input(sub, x, NULL, l))
    return FHJIT_NO_VALUE;
  return x;
}

/* The epilogue out = mul(sub(x, u), c) of rescale and moddown in NTT step
 * s: x rows [0, l) of the operand (buffer xb through view xl; xb.kind < 0:
 * computed here, fused_operand), u the transform in registers, c row r's
 * constant table[skip + r] read at every coefficient (a view of the table
 * with index stride 0). res >= 0: the epilogue computes and writes result
 * res from that value instead (lw_step_epilogue_result), out being res's
 * buffer. */
static void scale_epilogue(an_build *B, an_step *s, fhjit_value v, an_buf xb,
                           const fhjit_layout *xl, fhjit_value table, int64_t skip,
                           const int32_t *cols, an_buf out, fhjit_value res) {
  fhjit_graph *g = B->g;
  const ir_node *tn = &g->nodes[table];
  fhjit_type t = g->nodes[v].type;
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, "epi", B->p->nsteps - 1, 0);
  fhjit_graph *sub = fhjit_graph_create(B->p->sctx, name, g->radix);
  /* a fused operand (xb.kind < 0) and a result's cone (res) each read up
   * to 2 nnodes + 1 buffers (leaf_value) */
  an_buf *in = malloc(sizeof *in * (size_t)(4 * g->nnodes + 4));
  if (!sub || !in) {
    free(in);
    lw_mix_oom(B);
    return;
  }
  fhjit_layout cl;
  memset(&cl, 0, sizeof cl);
  cl.offset = tn->layout.offset + skip;
  cl.row_stride = 1;
  int32_t nin = 0;
  fhjit_value x;
  if (xb.kind < 0) {
    /* the operand's rows [0, t.rows) computed here (fused_operand) */
    x = lw_step_clone_rows(B, sub, g->nodes[v].args[0], 0, t.rows, in, &nin);
    if (B->st) {
      free(in);
      return;
    }
  } else {
    x = lw_mix_sub_input(sub, NULL, &t, cols, xl);
    in[nin++] = xb;
  }
  int32_t reg = nin;
  fhjit_value u = x == FHJIT_NO_VALUE ? x : lw_mix_sub_input(sub, NULL, &t, cols, NULL);
  fhjit_value c = u == FHJIT_NO_VALUE ? u : lw_mix_sub_input(sub, NULL, &t, cols, &cl);
  fhjit_value r = c == FHJIT_NO_VALUE ? c : fhjit_mul(sub, fhjit_sub(sub, x, u), c);
  in[nin++] = s->dst;
  in[nin++] = (an_buf){LW_ARG_INPUT, tn->input_index};
  /* a result computed from v's value here (relinearise's add) */
  if (r != FHJIT_NO_VALUE && res >= 0) r = lw_step_clone_over(B, sub, res, v, r, in, &nin);
  if (B->st || r == FHJIT_NO_VALUE || fhjit_output(sub, r, NULL) || fhjit_bind(sub)) {
    free(in);
    lw_step_sub_error(B, "the epilogue of a limb-mixing op");
    return;
  }
  s->epi_sub[0] = sub;
  s->epi_in[0] = in;
  s->epi_reg[0] = reg;
  s->epi_out[0] = out;
  s->nepi = 1;
  s->skip_store = 1;
}

/* ------------------------------------------------------------- ops */

static void bconv_steps(an_build *B, fhjit_value v) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  fhjit_value x = n->args[0];
  const fhjit_type *tx = &g->nodes[x].type;
  an_buf xb;
  fhjit_layout xl;
  if (!lw_mix_view_of(B, x, &xb, &xl)) return;
  an_buf out = lw_step_home(B, v);
  if (B->st) return;
  lw_mix_bconv_step(B, v, 0, tx, lw_mix_cols_of(B, x, 0, tx->rows), xb, &xl, n->type.rows,
                    lw_mix_cols_of(B, v, 0, n->type.rows), n->args[1], 0, out);
  if (!B->st) B->where[v] = out;
}

/* The type of value v's rows [.., count) in domain d and form f. */
fhjit_type lw_mix_part(const fhjit_type *t, int64_t count, fhjit_domain d, fhjit_form f) {
  fhjit_type p = *t;
  p.rows = count;
  p.domain = d;
  p.form = f;
  return p;
}

/* Whether the operand x of rescale or moddown v is computed in v's
 * kernels instead of being materialised: x is no result and not in memory,
 * its rows can be computed from rows of its leaves (lw_step_rows_ok), and
 * every computed node of that cone (views of inputs aside) is read only
 * inside it (and x only by v). Then the inverse NTT's first kernel computes the rows it transforms
 * (a prologue) and the forward NTT's last kernel the others (in its
 * epilogue (x - u) c): the two row sets are disjoint, so every word of the
 * leaves is read once, and x is never written. A node read elsewhere too
 * would be computed twice (its leaves read again, e.g. a key switch's sum
 * read as two components by two moddowns: the raised digits read once per
 * moddown); that case keeps the materialised operand. */
/* fused_operand's test; modups: the readers of x may be any modups read in
 * place (their digit rows computed in their prologues, stored for their
 * readers: lw_mix_modup_steps) rather than v alone. */
int lw_mix_private_operand(an_build *B, fhjit_value v, fhjit_value x, int modups) {
  fhjit_graph *g = B->g;
  an_buf b;
  fhjit_layout l;
  if (g->result_of[x] >= 0 || lw_step_source(B, x, &b, &l) || !lw_step_rows_ok(B, x)) return 0;
  char *cone = calloc((size_t)g->nnodes, 1);
  if (!cone) return 0;
  int ok = 1;
  cone[x] = 1;
  for (int32_t w = x; w >= 0; w--) {
    const ir_node *n = &g->nodes[w];
    if (!cone[w] || n->op == IR_INPUT || B->where[w].kind >= 0 || B->alias[w]) continue;
    for (int a = 0; a < n->nargs; a++) cone[n->args[a]] = 1;
  }
  /* readers of the computed nodes: inside the cone, or v reading x */
  for (int32_t w = 0; w < g->nnodes && ok; w++) {
    const ir_node *n = &g->nodes[w];
    if (!B->live[w] || cone[w] || w == v) continue;
    if (modups && n->op == IR_MODUP && n->args[0] == x && lw_mix_read_in_place(B, w)) continue;
    for (int a = 0; a < n->nargs; a++) {
      fhjit_value y = n->args[a];
      const ir_node *ny = &g->nodes[y];
      /* views of inputs (extract, rows) cost nothing to share */
      if (cone[y] && ny->op != IR_INPUT && B->where[y].kind < 0 && !B->alias[y] &&
          !lw_addressable(g, y))
        ok = 0;
    }
  }
  for (int32_t w = 0; w <= x && ok; w++)
    if (cone[w] && w != x && g->result_of[w] >= 0 && B->where[w].kind < 0 &&
        g->nodes[w].op != IR_INPUT)
      ok = 0;
  free(cone);
  return ok;
}

/* The (leaf, component) pairs component c of w reads, marked in
 * mark[leaf * 4 + comp] (components of up to 4; seen: visited (w, c)). */
static void comp_reads(const an_build *B, fhjit_value w, int c, char *mark, char *seen) {
  const fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[w];
  if (c > 3 || seen[w * 4 + c]) return;
  seen[w * 4 + c] = 1;
  if (n->op == IR_INPUT || B->where[w].kind >= 0 || B->alias[w]) {
    mark[w * 4 + c] = 1;
    return;
  }
  unsigned f = ir_op_info_of(n->op)->flags;
  if (n->op == IR_EXTRACT) {
    comp_reads(B, n->args[0], (int)n->attr[0], mark, seen);
  } else if (n->op == IR_PACK) {
    comp_reads(B, n->args[c], 0, mark, seen);
  } else if (n->op == IR_KS_DIGIT_PRODUCT) {
    comp_reads(B, n->args[0], 0, mark, seen); /* the digit, for every component */
    comp_reads(B, n->args[1], c, mark, seen); /* the key's component c */
  } else if (n->op == IR_ROWS || n->op == IR_AUTOMORPHISM || (f & IR_F_COMPONENTWISE)) {
    for (int a = 0; a < n->nargs; a++) {
      const fhjit_type *ta = &g->nodes[n->args[a]].type;
      int ca = (f & IR_F_PLAIN_OPERAND) && a == 1 ? 0 : ta->comps > 1 ? c : 0;
      comp_reads(B, n->args[a], ca, mark, seen);
    }
  } else {
    for (int a = 0; a < n->nargs; a++) /* any component of any operand */
      for (int ca = 0; ca < (g->nodes[n->args[a]].type.comps > 1 ? g->nodes[n->args[a]].type.comps : 1); ca++)
        comp_reads(B, n->args[a], ca, mark, seen);
  }
}

/* Whether computing x (C components) in the kernels reads no more words
 * than materialising it. The kernels evaluate x component by component,
 * each from the leaf rows it reads: a leaf component that several of x's
 * components read (a key switch's raised digit, read by both components'
 * digit products; a0, b0 by d0 and d1) is read once per such component,
 * where the kernel materialising x would read it once. Materialising
 * instead writes x and reads it back: 2 C rows per row of x. So: computed
 * when sum_c reads(c) - |union_c reads(c)| < 2 C (in rows of x). A key
 * switch of b digits: b extra rows against 4: computed for b <= 3,
 * materialised for r32's dnum 4 (the tie: fused, the r32 hoisted
 * rotations' moddown read the digits at 2.4 TB/s, 121 us a rotation, on
 * the H200) and r62's dnum 7 (the ntt_plan key mixfuse=1 computes it
 * anyway). */
int lw_mix_fewer_bytes(an_build *B, fhjit_value x) {
  const fhjit_graph *g = B->g;
  int C = g->nodes[x].type.comps > 1 ? g->nodes[x].type.comps : 1;
  if (C == 1) return 1;
  size_t nn = (size_t)g->nnodes * 4;
  char *mark = calloc(nn, 1), *seen = calloc(nn, 1), *all = calloc(nn, 1);
  int64_t sum = 0, uni = 0;
  int ok = mark && seen && all && C <= 4;
  for (int c = 0; c < C && ok; c++) {
    memset(mark, 0, nn);
    memset(seen, 0, nn);
    comp_reads(B, x, c, mark, seen);
    for (size_t i = 0; i < nn; i++) sum += mark[i], all[i] |= mark[i];
  }
  for (size_t i = 0; ok && i < nn; i++) uni += all[i];
  free(mark);
  free(seen);
  free(all);
  return ok && sum - uni < 2 * C;
}

int lw_mix_fused_operand(an_build *B, fhjit_value v, fhjit_value x) {
  const lw_ntt_tuning *t = &B->tune;
  if (t->mixfuse == 0 || !lw_mix_private_operand(B, v, x, 0)) return 0;
  return t->mixfuse == 1 || lw_mix_fewer_bytes(B, x);
}

/* The first NTT step of v's operand x when x is fused: rows [first, first
 * + t->rows) of x computed in its first kernel (a prologue); store.kind >=
 * 0: and stored there (buffer of x's whole type, dense). */
an_step *lw_mix_prologue_ntt_step(an_build *B, fhjit_value v, ir_ntt_kind kind,
                                  const fhjit_type *t, const int32_t *cols, fhjit_value x,
                                  int64_t first, fhjit_value tw, an_buf dst, an_buf store) {
  fhjit_layout dense;
  fhjit_dense_layout(t, &dense);
  an_step *s = lw_mix_ntt_step(B, v, kind, t, cols, (an_buf){-1, 0}, &dense, tw, dst);
  if (!s || B->st) return NULL;
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, "pro", B->p->nsteps - 1, -1);
  const fhjit_type *tx = &B->g->nodes[x].type;
  s->pro_sub = lw_step_sub_rows(B, name, x, first, t->rows, &s->pro_in,
                                store.kind >= 0 ? tx : NULL, store);
  s->pro_comp = -1;
  if (store.kind >= 0) s->pro_store_rows = tx->rows, s->pro_store_first = first;
  return B->st ? NULL : s;
}

/* Step 3 of rescale and moddown (v's args: operand, forward table, inverse
 * table, constants): the forward transform of the converted rows cols
 * (buffer src through view), lifting source column lift_col to every row
 * in its loads where >= 0 (liftfuse), and scale_epilogue over operand rows
 * xb / xl with the constants from word skip in its last kernel. A result
 * read from v's value is written there, and v is not stored. */
static void scaled_forward(an_build *B, fhjit_value v, ir_ntt_kind kind, const fhjit_type *t,
                           const int32_t *cols, an_buf src, const fhjit_layout *view, an_buf xb,
                           const fhjit_layout *xl, int64_t skip, int32_t lift_col) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  an_buf dst = lw_mix_scratch_for(B, t);
  an_step *s = lw_mix_ntt_step(B, v, kind, t, cols, src, view, n->args[1], dst);
  if (s && lift_col >= 0) {
    s->plan.lift = 1;
    s->plan.lift_col = lift_col;
  }
  fhjit_value res = s && !B->st ? lw_step_epilogue_result(B, v) : FHJIT_NO_VALUE;
  an_buf out = res >= 0 ? (an_buf){LW_ARG_RESULT, g->result_of[res]} : lw_step_home(B, v);
  if (!s || B->st) return;
  scale_epilogue(B, s, v, xb, xl, n->args[3], skip, cols, out, res);
  if (!B->st) B->where[res >= 0 ? res : v] = out;
}

static void rescale_steps(an_build *B, fhjit_value v) {
  /* checked here, not only in a conversion step: with the lift in the
   * NTT's loads (liftfuse) and with mdrs no conversion reads the table,
   * and the epilogue reads its word r at r (a strided table once gave
   * wrong rows there) */
  if (!table_ok(B, v, B->g->nodes[v].args[3])) return;
  if (lw_mix_mdrs_steps(B, v)) return;
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  fhjit_value x = n->args[0];
  const fhjit_type *tx = &g->nodes[x].type;
  int64_t l = tx->rows - 1;
  an_buf xb = {-1, 0};
  fhjit_layout xl, dense;
  int fused = lw_mix_fused_operand(B, v, x);
  memset(&xl, 0, sizeof xl);
  if (!fused && !lw_mix_view_of(B, x, &xb, &xl)) return;
  /* 1. the last row to coefficient-standard form */
  fhjit_type t1 = lw_mix_part(tx, 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  int32_t *c1 = lw_mix_cols_of(B, x, l, 1);
  an_buf s1 = lw_mix_scratch_for(B, &t1);
  if (fused) {
    lw_mix_prologue_ntt_step(B, v, IR_NTT_TO_STD, &t1, c1, x, l, n->args[2], s1, (an_buf){-1, 0});
  } else {
    fhjit_layout l1 = xl;
    l1.offset += l * xl.row_stride;
    lw_mix_ntt_step(B, v, IR_NTT_TO_STD, &t1, c1, xb, &l1, n->args[2], s1);
  }
  /* 2. lifted to the other rows, centred by q/2: in step 3's loads
   * (liftfuse, the default), which read s1's one row at every row (row
   * stride 0: the l loads of a word hit the L2) and reduce it per row
   * (lw_ntt_plan.lift); else a conversion kernel writing the l rows */
  fhjit_type t2 = lw_mix_part(tx, l, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  int32_t *c2 = lw_mix_cols_of(B, x, 0, l);
  const lw_ntt_tuning tu = B->tune;
  int liftfuse = tu.liftfuse != 0;
  an_buf s2 = s1;
  fhjit_dense_layout(&t1, &dense);
  if (liftfuse) {
    dense.row_stride = 0;
  } else {
    s2 = lw_mix_scratch_for(B, &t2);
    lw_mix_bconv_step(B, v, 1, &t1, c1, s1, &dense, l, c2, n->args[3], 0, s2);
    fhjit_dense_layout(&t2, &dense);
  }
  /* 3. their forward transform, and (x - u) q^-1 in its last kernel */
  fhjit_type t3 = lw_mix_part(tx, l, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  scaled_forward(B, v, IR_NTT_STD_TO_NTT, &t3, c2, s2, &dense, xb, &xl, 0,
                 liftfuse && c1 ? c1[0] : -1);
}

static void moddown_steps(an_build *B, fhjit_value v) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  fhjit_value a = n->args[0];
  const fhjit_type *ta = &g->nodes[a].type;
  int64_t K = g->nspecial, l = ta->rows - K;
  an_buf ab = {-1, 0};
  fhjit_layout al, dense;
  /* moddowns planned together (md_group): the first member computes
   * every member's operand (and with mdintt, mdbconv their steps 1, 2) */
  an_mdgroup *G = B->mdg[v] ? B->mdg[v] : lw_mix_md_group(B, v);
  int k = 0;
  if (G) {
    while (G->member[k] != v) k++;
    if (G->first == v) lw_mix_md_first(B, G);
    if (B->st) return;
  }
  /* planned with its rescale (mdrs_steps) */
  if (!G && lw_mix_mdrs_rescale(B, v) >= 0) {
    B->mdrs[v] = 1;
    return;
  }
  int fused = G ? 0 : lw_mix_fused_operand(B, v, a);
  memset(&al, 0, sizeof al);
  if (!fused && !lw_mix_view_of(B, a, &ab, &al)) return;
  /* 1. P's rows to coefficient-Montgomery form (a key switch: the inner
   * product's P rows computed in the first kernel) */
  fhjit_type t1 = lw_mix_part(ta, K, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c1 = lw_mix_cols_of(B, a, l, K);
  an_buf s1;
  fhjit_layout d1;
  if (G && G->intt) {
    /* the group's transform: this member's polynomials */
    s1 = G->s1;
    fhjit_dense_layout(&t1, &d1);
    d1.offset += k * G->s1words;
  } else {
    s1 = lw_mix_scratch_for(B, &t1);
    if (fused) {
      lw_mix_prologue_ntt_step(B, v, IR_NTT_TO_MONT, &t1, c1, a, l, n->args[2], s1,
                               (an_buf){-1, 0});
    } else {
      fhjit_layout l1 = al;
      l1.offset += l * al.row_stride;
      lw_mix_ntt_step(B, v, IR_NTT_TO_MONT, &t1, c1, ab, &l1, n->args[2], s1);
    }
    fhjit_dense_layout(&t1, &d1);
  }
  /* 2. converted to Q */
  fhjit_type t2 = lw_mix_part(ta, l, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c2 = lw_mix_cols_of(B, a, 0, l);
  an_buf s2;
  if (G && G->bconv) {
    /* the group's conversion: this member's polynomials */
    s2 = G->s2;
    fhjit_dense_layout(&t2, &dense);
    dense.offset += k * G->s2words;
  } else {
    s2 = lw_mix_scratch_for(B, &t2);
    lw_mix_bconv_step(B, v, 0, &t1, c1, s1, &d1, l, c2, n->args[3], 0, s2);
    fhjit_dense_layout(&t2, &dense);
  }
  /* 3. forward, and (a - u) P*^-1 in its last kernel */
  fhjit_type t3 = lw_mix_part(ta, l, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  scaled_forward(B, v, IR_NTT_MONT_TO_NTT, &t3, c2, s2, &dense, ab, &al, K + K * l, -1);
}

/* Whether modup v is better read where its rows lie (an alias, steps.h)
 * than gathered: it is no result, and only kernels of pointwise work read
 * it (a limb-mixing op or an NTT would read it from memory: gathered once
 * then, or written in place for the first digit). */
int lw_mix_read_in_place(const an_build *B, fhjit_value v) {
  const fhjit_graph *g = B->g;
  if (g->result_of[v] >= 0) return 0;
  for (int32_t w = v + 1; w < g->nnodes; w++) {
    const ir_node *n = &g->nodes[w];
    if (!B->live[w]) continue;
    for (int a = 0; a < n->nargs; a++)
      if (n->args[a] == v && (n->op == IR_NTT || ir_op_class_of(n->op) == IR_CLASS_MIXING))
        return 0;
  }
  return 1;
}

/* Rows [*s0, *s0 + nd) of modup w's operand are its digit; nd, or 0 when
 * they are not consecutive (or on failure). */
int64_t lw_mix_digit_run(an_build *B, fhjit_value w, int64_t *s0) {
  const fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[w];
  int64_t *src = malloc(sizeof *src * (size_t)g->nodes[n->args[0]].type.rows);
  if (!src) {
    lw_mix_oom(B);
    return 0;
  }
  int64_t nd = ir_digit_rows(g, n->args[0], n->attr[0], src);
  int contiguous = nd > 0;
  for (int64_t k = 1; k < nd; k++) contiguous &= src[k] == src[0] + k;
  *s0 = nd > 0 ? src[0] : 0;
  free(src);
  return contiguous ? nd : 0;
}

int lw_mix_same_shape(const fhjit_type *a, const fhjit_type *b) {
  if (a->kind != b->kind || a->comps != b->comps || a->nbatch != b->nbatch || a->rows != b->rows ||
      a->n != b->n || a->domain != b->domain || a->form != b->form)
    return 0;
  for (int k = 0; k < a->nbatch; k++)
    if (a->batch[k] != b->batch[k]) return 0;
  return 1;
}

void lw_steps_s7(an_build *B, fhjit_value v) {
  const ir_node *n = &B->g->nodes[v];
  switch (n->op) {
  case IR_BCONV: bconv_steps(B, v); return;
  case IR_RESCALE: rescale_steps(B, v); return;
  case IR_MODDOWN: moddown_steps(B, v); return;
  case IR_MODUP: lw_mix_modup_steps(B, v); return;
  default:
    /* rows, concat, automorphism: loads of buffers (lower.c) */
    for (int a = 0; a < n->nargs && !B->st; a++)
      if (!lw_step_addressable(B, n->args[a])) lw_step_materialise(B, n->args[a]);
    return;
  }
}
