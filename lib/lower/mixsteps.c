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
 *             forward NTT; read only by pointwise work, no gather: an alias
 *             (steps.h) the readers load where the rows lie; else a gather
 *             of those rows and the digit's own into the output order.
 *             Several modups of one operand (a key switch's digits) share
 *             one inverse NTT over the rows of all their digits, at the
 *             first one's steps (shared_intt, an_intt): why: a digit has few
 *             rows (r62: 5 of 35), so its inverse NTT launches few blocks
 *             and is latency-bound; measured on the H200 (r62, N = 2^16,
 *             dnum 7) 13.3 us per digit in its 2 kernels, 93 us for the 7,
 *             where one over the 35 rows takes about 35 us. Each digit's
 *             conversion reads its rows of that buffer; the digit's own NTT
 *             rows (the alias, the copy, the gather) are still read from
 *             the operand. One modup keeps its own inverse NTT.
 *             When every modup of such a group is read in place (aliases)
 *             and they share the forward table, the first one also emits
 *             every member's conversion, each writing its rows of one
 *             buffer (digit after digit), and ONE forward NTT over all of
 *             them (batched_fwd); each alias reads its rows there. Why:
 *             a digit's 35-row forward NTT (r62) ran at 1.2 us a row on
 *             the H200 (N = 2^16, 42.1 us, 295 us for the 7), a bulk one
 *             at about 1.0; and 2 (dnum - 1) launches fewer. A group with
 *             a gathered or copied member keeps a forward NTT per digit.
 *             The members' conversions of one shape (nd -> m rows) are
 *             one kernel (ntt_plan bconvbatch, default 1; 0: one per
 *             digit): a block converts one digit with its own table (an
 *             argument of its own, the step's in[]), rows and columns
 *             (lw_bconv_plan.digits). Why: at N = 2^16 one digit's kernel
 *             is one under-occupied wave (H200: r32 12 -> 48 12.5 us, r62
 *             5 -> 35 13.5 us, floors 7.6 and 11.4); all the digits'
 *             blocks together fill the GPU, and dnum - 1 launches fewer.
 *             ipfuse: when the digits' only readers are element-wise
 *             work summing them (a key switch's digit products and
 *             add_lazy chain S: ipfuse_target), that NTT's kernel 0
 *             transforms the conversions' buffer in place and its last
 *             kernel is a reduce kernel (lw_ntt_plan_reduce, ntt_emit.c):
 *             a grid over S's output rows, each block transforming its
 *             row of every digit in turn (the digit's own rows loaded from
 *             the operand), the words kept in registers, then S's cone
 *             (lw_step_clone_over_n, the digits as register inputs,
 *             lw_build_eval_regs) into S's buffer; the digits get no
 *             alias and are never stored, moddown reads S. Why: the
 *             stored digits (r62 147 MB) were read back once by the inner
 *             product's pointwise kernel, which ran at copy bandwidth
 *             (H200, ncu: 113.7 us, 479 MB); r32's moddown recomputed S
 *             in its kernels, reading each digit once per component.
 *             Hoisted rotations (digits read under automorphisms) keep
 *             the stored digits; ntt_plan ipfuse=0 too. By default only
 *             for at most 32 bytes of member words a position (r32 up to
 *             8 digits, r62 up to 4): measured r32 dnum 4 281 us against
 *             322, r62 dnum 7 1155 against 600 (ipfuse_target).
 *             With ntt_plan ipacc=1 (off by default: slower on the
 *             H200, r32 dnum 4 299 us against 281.5, r62 dnum 7 with
 *             ipfuse=1 1006 against 600 unfused), where S is a left fold
 *             over the digits in their order (ipacc_fold), each digit is
 *             folded into S as its body produces its words (one result of
 *             the epilogue per digit), so a thread keeps S's components,
 *             not every digit's words (r62 dnum 7: 104 registers against
 *             168).
 * Every intermediate lives in scratch; what SPEC states as one formula is
 * computed by the same arithmetic as the interpreter (lib/ir/interp_mix.c):
 * the NTT kinds it names, the conversion's exact sums. A computed operand
 * is not materialised where its rows can be computed in the op's kernels
 * (fused_operand: the inverse NTT's prologue and the forward NTT's
 * epilogue; modup: the inverse NTT's prologue, storing the digit's rows),
 * and a result read from moddown's or rescale's value is computed in its
 * last kernel (docs/section7.md, "Computed operands"). Fusing the
 * conversion into the NTTs' kernels is what remains. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/tables.h"
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

static void oom(an_build *B) {
  if (!B->st) B->st = ir_error(B->g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
}

/* A column list of n entries owned by the plan (plans point to it). */
static int32_t *new_cols(an_build *B, int64_t n) {
  an_plan *p = B->p;
  int32_t **grown = realloc(p->cols, sizeof *grown * (size_t)(p->ncols + 1));
  int32_t *c = malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
  if (grown) p->cols = grown;
  if (!grown || !c) {
    free(c);
    oom(B);
    return NULL;
  }
  p->cols[p->ncols++] = c;
  return c;
}

/* The chain positions of rows [first, first + n) of value v. */
static int32_t *cols_of(an_build *B, fhjit_value v, int64_t first, int64_t n) {
  int32_t *c = new_cols(B, n);
  for (int64_t r = 0; c && r < n; r++) c[r] = (int32_t)ir_pos(B->g, v, first + r);
  return c;
}

static an_buf scratch_for(an_build *B, const fhjit_type *t) {
  int sc = lw_step_scratch(B, t);
  return (an_buf){sc < 0 ? -1 : LW_ARG_SCRATCH, sc};
}

/* The buffer and view holding v (through rows views and extracts),
 * materialising what must be. */
static int view_of(an_build *B, fhjit_value v, an_buf *buf, fhjit_layout *l) {
  const ir_node *n = &B->g->nodes[v];
  if (lw_step_source(B, v, buf, l)) return 1;
  if (n->op == IR_ROWS && view_of(B, n->args[0], buf, l)) {
    l->offset += n->attr[0] * l->row_stride;
    return 1;
  }
  /* a component of a computed value: the whole value once, for all its
   * readers (a key switch's two moddowns read the two of its sum) */
  if (n->op == IR_EXTRACT && view_of(B, n->args[0], buf, l)) {
    l->offset += n->attr[0] * l->comp_stride;
    l->comp_stride = 0;
    return 1;
  }
  if (B->st) return 0;
  lw_step_materialise(B, v);
  return !B->st && lw_step_source(B, v, buf, l);
}

static fhjit_status refuse(an_build *B, fhjit_value v, const char *why) {
  const ir_node *n = &B->g->nodes[v];
  if (!B->st)
    B->st = ir_error_at(B->g, n->loc, FHJIT_ERR_UNSUPPORTED, "%%%s = %s: %s", n->name,
                        ir_op_name(n->op), why);
  return B->st;
}

/* ------------------------------------------------------------ steps */

/* An NTT step of `kind` over a value of type t (rows on chain positions
 * cols) read from src through view, twiddles from input tw, into dst. */
static an_step *ntt_step(an_build *B, fhjit_value v, ir_ntt_kind kind, const fhjit_type *t,
                         const int32_t *cols, an_buf src, const fhjit_layout *view,
                         fhjit_value tw, an_buf dst) {
  fhjit_graph *g = B->g;
  const ir_node *twn = &g->nodes[tw];
  if (B->st || !cols) return NULL;
  if (twn->op != IR_INPUT || (twn->type.n > 1 && twn->layout.index_stride != 1)) {
    refuse(B, v, "its twiddle tables must be inputs with index stride 1");
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
    refuse(B, v, "its constant table must be an input with index stride 1");
    return 0;
  }
  return 1;
}

/* More digits of one conversion step (bconv_step_digits): digit k's
 * source view offset, table (from its first word), destination offset
 * and columns. */
typedef struct bconv_more {
  int64_t src_offset, dst_offset;
  const int32_t *scols, *dcols;
  fhjit_value table;
} bconv_more;

/* A conversion step: the l rows of src (type ts, chain positions
 * scols, through view) to the m chain positions dcols, into dst at
 * dst_offset words, polynomials dst_poly_stride words apart (0: dense);
 * the table is input `table` from word `skip` (lift: no table). With
 * nmore > 0 the same kernel also converts more[0 .. nmore) of the same
 * shape (lw_bconv_plan.digits; their tables' buffers in the step's in[]). */
static an_step *bconv_step_digits(an_build *B, fhjit_value v, int lift, const fhjit_type *ts,
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
      oom(B);
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
    if (!B->st) B->st = fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
    return NULL;
  }
  return s;
}

/* One digit's conversion step (bconv_step_digits). */
static an_step *bconv_step_at(an_build *B, fhjit_value v, int lift, const fhjit_type *ts,
                              const int32_t *scols, an_buf src, const fhjit_layout *view,
                              int64_t m, const int32_t *dcols, fhjit_value table, int64_t skip,
                              an_buf dst, int64_t dst_offset, int64_t dst_poly_stride) {
  return bconv_step_digits(B, v, lift, ts, scols, src, view, m, dcols, table, skip, dst,
                           dst_offset, dst_poly_stride, NULL, 0);
}

/* bconv_step_at into dense dst (from its first word). */
static an_step *bconv_step(an_build *B, fhjit_value v, int lift, const fhjit_type *ts,
                           const int32_t *scols, an_buf src, const fhjit_layout *view,
                           int64_t m, const int32_t *dcols, fhjit_value table, int64_t skip,
                           an_buf dst) {
  return bconv_step_at(B, v, lift, ts, scols, src, view, m, dcols, table, skip, dst, 0, 0);
}

/* A bound sub-graph input of type t on chain positions cols, bound to
 * layout l (NULL: dense). */
static fhjit_value sub_input(fhjit_graph *sub, const char *name, const fhjit_type *t,
                             const int32_t *cols, const fhjit_layout *l) {
  fhjit_value x = fhjit_input(sub, name, t);
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
    oom(B);
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
    x = sub_input(sub, NULL, &t, cols, xl);
    in[nin++] = xb;
  }
  int32_t reg = nin;
  fhjit_value u = x == FHJIT_NO_VALUE ? x : sub_input(sub, NULL, &t, cols, NULL);
  fhjit_value c = u == FHJIT_NO_VALUE ? u : sub_input(sub, NULL, &t, cols, &cl);
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
  if (!view_of(B, x, &xb, &xl)) return;
  an_buf out = lw_step_home(B, v);
  if (B->st) return;
  bconv_step(B, v, 0, tx, cols_of(B, x, 0, tx->rows), xb, &xl, n->type.rows,
             cols_of(B, v, 0, n->type.rows), n->args[1], 0, out);
  if (!B->st) B->where[v] = out;
}

/* The type of value v's rows [.., count) in domain d and form f. */
static fhjit_type part(const fhjit_type *t, int64_t count, fhjit_domain d, fhjit_form f) {
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
static int read_in_place(const an_build *B, fhjit_value v);

/* fused_operand's test; modups: the readers of x may be any modups read in
 * place (their digit rows computed in their prologues, stored for their
 * readers: modup_steps) rather than v alone. */
static int private_operand(an_build *B, fhjit_value v, fhjit_value x, int modups) {
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
    if (modups && n->op == IR_MODUP && n->args[0] == x && read_in_place(B, w)) continue;
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
static int fewer_bytes(an_build *B, fhjit_value x) {
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

static int fused_operand(an_build *B, fhjit_value v, fhjit_value x) {
  const lw_ntt_tuning *t = &B->tune;
  if (t->mixfuse == 0 || !private_operand(B, v, x, 0)) return 0;
  return t->mixfuse == 1 || fewer_bytes(B, x);
}

/* The first NTT step of v's operand x when x is fused: rows [first, first
 * + t->rows) of x computed in its first kernel (a prologue); store.kind >=
 * 0: and stored there (buffer of x's whole type, dense). */
static an_step *prologue_ntt_step(an_build *B, fhjit_value v, ir_ntt_kind kind,
                                  const fhjit_type *t, const int32_t *cols, fhjit_value x,
                                  int64_t first, fhjit_value tw, an_buf dst, an_buf store) {
  fhjit_layout dense;
  fhjit_dense_layout(t, &dense);
  an_step *s = ntt_step(B, v, kind, t, cols, (an_buf){-1, 0}, &dense, tw, dst);
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

static int mdrs_steps(an_build *B, fhjit_value v);

static void rescale_steps(an_build *B, fhjit_value v) {
  if (mdrs_steps(B, v)) return;
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  fhjit_value x = n->args[0];
  const fhjit_type *tx = &g->nodes[x].type;
  int64_t l = tx->rows - 1;
  an_buf xb = {-1, 0};
  fhjit_layout xl, dense;
  int fused = fused_operand(B, v, x);
  memset(&xl, 0, sizeof xl);
  if (!fused && !view_of(B, x, &xb, &xl)) return;
  /* 1. the last row to coefficient-standard form */
  fhjit_type t1 = part(tx, 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  int32_t *c1 = cols_of(B, x, l, 1);
  an_buf s1 = scratch_for(B, &t1);
  if (fused) {
    prologue_ntt_step(B, v, IR_NTT_TO_STD, &t1, c1, x, l, n->args[2], s1, (an_buf){-1, 0});
  } else {
    fhjit_layout l1 = xl;
    l1.offset += l * xl.row_stride;
    ntt_step(B, v, IR_NTT_TO_STD, &t1, c1, xb, &l1, n->args[2], s1);
  }
  /* 2. lifted to the other rows, centred by q/2: in step 3's loads
   * (liftfuse, the default), which read s1's one row at every row (row
   * stride 0: the l loads of a word hit the L2) and reduce it per row
   * (lw_ntt_plan.lift); else a conversion kernel writing the l rows */
  fhjit_type t2 = part(tx, l, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  int32_t *c2 = cols_of(B, x, 0, l);
  const lw_ntt_tuning tu = B->tune;
  int liftfuse = tu.liftfuse != 0;
  an_buf s2 = s1;
  fhjit_dense_layout(&t1, &dense);
  if (liftfuse) {
    dense.row_stride = 0;
  } else {
    s2 = scratch_for(B, &t2);
    bconv_step(B, v, 1, &t1, c1, s1, &dense, l, c2, n->args[3], 0, s2);
    fhjit_dense_layout(&t2, &dense);
  }
  /* 3. their forward transform, and (x - u) q^-1 in its last kernel */
  fhjit_type t3 = part(tx, l, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  an_buf s3 = scratch_for(B, &t3);
  an_step *s = ntt_step(B, v, IR_NTT_STD_TO_NTT, &t3, c2, s2, &dense, n->args[1], s3);
  if (s && liftfuse && c1) {
    s->plan.lift = 1;
    s->plan.lift_col = c1[0];
  }
  /* a result read from v's value in the last kernel: v is not stored */
  fhjit_value res = s && !B->st ? lw_step_epilogue_result(B, v) : FHJIT_NO_VALUE;
  an_buf out = res >= 0 ? (an_buf){LW_ARG_RESULT, g->result_of[res]} : lw_step_home(B, v);
  if (!s || B->st) return;
  scale_epilogue(B, s, v, xb, &xl, n->args[3], 0, c2, out, res);
  if (!B->st) B->where[res >= 0 ? res : v] = out;
}

static an_mdgroup *md_group(an_build *B, fhjit_value v);
static void md_first(an_build *B, an_mdgroup *G);
static fhjit_value mdrs_rescale(an_build *B, fhjit_value m);

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
  an_mdgroup *G = B->mdg[v] ? B->mdg[v] : md_group(B, v);
  int k = 0;
  if (G) {
    while (G->member[k] != v) k++;
    if (G->first == v) md_first(B, G);
    if (B->st) return;
  }
  /* planned with its rescale (mdrs_steps) */
  if (!G && mdrs_rescale(B, v) >= 0) {
    B->mdrs[v] = 1;
    return;
  }
  int fused = G ? 0 : fused_operand(B, v, a);
  memset(&al, 0, sizeof al);
  if (!fused && !view_of(B, a, &ab, &al)) return;
  /* 1. P's rows to coefficient-Montgomery form (a key switch: the inner
   * product's P rows computed in the first kernel) */
  fhjit_type t1 = part(ta, K, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c1 = cols_of(B, a, l, K);
  an_buf s1;
  fhjit_layout d1;
  if (G && G->intt) {
    /* the group's transform: this member's polynomials */
    s1 = G->s1;
    fhjit_dense_layout(&t1, &d1);
    d1.offset += k * G->s1words;
  } else {
    s1 = scratch_for(B, &t1);
    if (fused) {
      prologue_ntt_step(B, v, IR_NTT_TO_MONT, &t1, c1, a, l, n->args[2], s1, (an_buf){-1, 0});
    } else {
      fhjit_layout l1 = al;
      l1.offset += l * al.row_stride;
      ntt_step(B, v, IR_NTT_TO_MONT, &t1, c1, ab, &l1, n->args[2], s1);
    }
    fhjit_dense_layout(&t1, &d1);
  }
  /* 2. converted to Q */
  fhjit_type t2 = part(ta, l, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c2 = cols_of(B, a, 0, l);
  an_buf s2;
  if (G && G->bconv) {
    /* the group's conversion: this member's polynomials */
    s2 = G->s2;
    fhjit_dense_layout(&t2, &dense);
    dense.offset += k * G->s2words;
  } else {
    s2 = scratch_for(B, &t2);
    bconv_step(B, v, 0, &t1, c1, s1, &d1, l, c2, n->args[3], 0, s2);
    fhjit_dense_layout(&t2, &dense);
  }
  /* 3. forward, and (a - u) P*^-1 in its last kernel */
  fhjit_type t3 = part(ta, l, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  an_buf s3 = scratch_for(B, &t3);
  an_step *s = ntt_step(B, v, IR_NTT_MONT_TO_NTT, &t3, c2, s2, &dense, n->args[1], s3);
  /* a result read from v's value in the last kernel: v is not stored */
  fhjit_value res = s && !B->st ? lw_step_epilogue_result(B, v) : FHJIT_NO_VALUE;
  an_buf out = res >= 0 ? (an_buf){LW_ARG_RESULT, g->result_of[res]} : lw_step_home(B, v);
  if (!s || B->st) return;
  scale_epilogue(B, s, v, ab, &al, n->args[3], K + K * l, c2, out, res);
  if (!B->st) B->where[res >= 0 ? res : v] = out;
}

/* Modup's output in chain order: rows [0, s0) and [s0, m) of the
 * converted rows u around the digit's own rows d (a gather kernel). */
static void modup_gather(an_build *B, fhjit_value v, an_buf ub, const fhjit_type *tu,
                         const int32_t *cu, an_buf db, const fhjit_layout *dl,
                         const fhjit_type *td, const int32_t *cd, int64_t s0, an_buf out) {
  fhjit_graph *g = B->g;
  an_step *s = lw_step_new(B);
  if (!s) return;
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, "pw", B->p->nsteps - 1, -1);
  fhjit_graph *sub = fhjit_graph_create(B->p->sctx, name, g->radix);
  s->in = malloc(sizeof *s->in * 2);
  s->out = malloc(sizeof *s->out);
  s->sub = sub;
  if (!sub || !s->in || !s->out) {
    oom(B);
    return;
  }
  fhjit_value u = sub_input(sub, "u", tu, cu, NULL);
  fhjit_value d = u == FHJIT_NO_VALUE ? u : sub_input(sub, "d", td, cd, dl);
  fhjit_value r = FHJIT_NO_VALUE;
  if (d != FHJIT_NO_VALUE) {
    fhjit_value hi = fhjit_rows(sub, u, s0, tu->rows - s0);
    r = s0 == 0 ? fhjit_concat(sub, d, hi)
                : fhjit_concat(sub, fhjit_concat(sub, fhjit_rows(sub, u, 0, s0), d), hi);
  }
  if (r == FHJIT_NO_VALUE || fhjit_output(sub, r, NULL) || fhjit_bind(sub)) {
    lw_step_sub_error(B, "the gather of modup");
    return;
  }
  s->in[0] = ub;
  s->in[1] = db;
  s->out[0] = out;
  (void)v;
}

/* Modup's digit rows d (NTT domain, unchanged) copied to rows [s0, s0 +
 * nd) of out (a pointwise kernel of rows(d), written dst_off words into
 * out). */
static void modup_copy(an_build *B, an_buf db, const fhjit_layout *dl, const fhjit_type *td,
                       const int32_t *cd, an_buf out, int64_t dst_off) {
  fhjit_graph *g = B->g;
  an_step *s = lw_step_new(B);
  if (!s) return;
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, "pw", B->p->nsteps - 1, -1);
  fhjit_graph *sub = fhjit_graph_create(B->p->sctx, name, g->radix);
  s->in = malloc(sizeof *s->in);
  s->out = malloc(sizeof *s->out);
  s->sub = sub;
  if (!sub || !s->in || !s->out) {
    oom(B);
    return;
  }
  fhjit_value d = sub_input(sub, "d", td, cd, dl);
  fhjit_value r = d == FHJIT_NO_VALUE ? d : fhjit_rows(sub, d, 0, td->rows);
  if (r == FHJIT_NO_VALUE || fhjit_output(sub, r, NULL) || fhjit_bind(sub)) {
    lw_step_sub_error(B, "the digit copy of modup");
    return;
  }
  s->in[0] = db;
  s->out[0] = out;
  s->dst_off = dst_off;
}

/* Whether modup v is better read where its rows lie (an alias, steps.h)
 * than gathered: it is no result, and only kernels of pointwise work read
 * it (a limb-mixing op or an NTT would read it from memory: gathered once
 * then, or written in place for the first digit). */
static int read_in_place(const an_build *B, fhjit_value v) {
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
static int64_t digit_run(an_build *B, fhjit_value w, int64_t *s0) {
  const fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[w];
  int64_t *src = malloc(sizeof *src * (size_t)g->nodes[n->args[0]].type.rows);
  if (!src) {
    oom(B);
    return 0;
  }
  int64_t nd = ir_digit_rows(g, n->args[0], n->attr[0], src);
  int contiguous = nd > 0;
  for (int64_t k = 1; k < nd; k++) contiguous &= src[k] == src[0] + k;
  *s0 = nd > 0 ? src[0] : 0;
  free(src);
  return contiguous ? nd : 0;
}

static int same_shape(const fhjit_type *a, const fhjit_type *b) {
  if (a->kind != b->kind || a->comps != b->comps || a->nbatch != b->nbatch || a->rows != b->rows ||
      a->n != b->n || a->domain != b->domain || a->form != b->form)
    return 0;
  for (int k = 0; k < a->nbatch; k++)
    if (a->batch[k] != b->batch[k]) return 0;
  return 1;
}

/* The inverse NTT modup v shares with the other modups of its operand
 * (an_intt, steps.h), or NULL: v transforms its digit alone. The first of
 * them in node order (v, when none has a record yet) makes the record for
 * all: the live modups of the same operand and twiddle table, output
 * shape, consecutive digits, not yet planned, when there are at least two
 * (one modup keeps its own plan). stored: v's operand is computed in the
 * prologue and stored (modup_steps); a member that disagrees with the
 * first transforms its digit alone. */
static an_intt *shared_intt(an_build *B, fhjit_value v, int stored) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  fhjit_value d = n->args[0];
  an_intt *r = B->intt[v];
  if (r) return r->stored == stored ? r : NULL;
  int64_t lo = -1, hi = -1, count = 0;
  for (fhjit_value w = v; w < g->nnodes && !B->st; w++) {
    const ir_node *nw = &g->nodes[w];
    int64_t s0, nd;
    if (!B->live[w] || nw->op != IR_MODUP || nw->args[0] != d || nw->args[2] != n->args[2] ||
        B->intt[w] || !same_shape(&nw->type, &n->type) || !(nd = digit_run(B, w, &s0)))
      continue;
    if (lo < 0 || s0 < lo) lo = s0;
    if (s0 + nd > hi) hi = s0 + nd;
    count++;
  }
  if (count < 2 || B->st) return NULL;
  r = calloc(1, sizeof *r);
  if (!r) {
    oom(B);
    return NULL;
  }
  *r = (an_intt){.first = v, .d = d, .tw = n->args[2], .lo = lo, .stored = stored, .sum = -1};
  r->t = part(&g->nodes[d].type, hi - lo, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  for (fhjit_value w = v; w < g->nnodes && !B->st; w++) {
    const ir_node *nw = &g->nodes[w];
    int64_t s0;
    if (B->live[w] && nw->op == IR_MODUP && nw->args[0] == d && nw->args[2] == n->args[2] &&
        !B->intt[w] && same_shape(&nw->type, &n->type) && digit_run(B, w, &s0))
      B->intt[w] = r; /* r is owned (freed) by B->intt[v], its first */
  }
  r->cols = cols_of(B, d, lo, hi - lo);
  r->buf = scratch_for(B, &r->t);
  /* one forward NTT for all: every member read in place (an alias; a
   * gathered or copied member keeps the per-digit transforms of all),
   * one forward table; ntt_plan digitfwd=0 keeps them per digit (to time
   * both: the batch costs the r62 key switch 86 MB more scratch) */
  const lw_ntt_tuning tu = B->tune;
  r->fwd = tu.digitfwd != 0;
  for (fhjit_value w = v; w < g->nnodes; w++)
    if (B->intt[w] == r) {
      r->nmembers++;
      r->fwd &= read_in_place(B, w) && g->nodes[w].args[1] == n->args[1];
    }
  if (r->fwd) {
    r->member = malloc(sizeof *r->member * (size_t)r->nmembers);
    r->urow = malloc(sizeof *r->urow * (size_t)r->nmembers);
    r->ucols = calloc((size_t)r->nmembers, sizeof *r->ucols);
    if (!r->member || !r->urow || !r->ucols) oom(B);
    for (fhjit_value w = v, k = 0; w < g->nnodes && !B->st; w++)
      if (B->intt[w] == r) r->member[k++] = w;
  }
  return B->st ? NULL : r;
}


/* ipfuse: the sum S the members of batched group r feed, computed in the
 * last kernel of their forward NTT from the members' values in registers
 * (a reduce plan, lw_ntt_reduce), or -1. S is the first live node whose
 * cone (down to inputs, buffers and the members) holds every member and
 * every reader of a member, all of it element-wise work that reads the
 * members only at the element (a key switch: the add_lazy chain of the
 * digit products), no other alias, no result but S, and no node read from
 * outside the cone but S: then nothing else reads a member, and the
 * members are never stored (their readers read S). S walks the members'
 * rows and basis, one polynomial. Hoisted rotations read the digits under
 * automorphisms (not at the element): they keep the stored transform.
 * ntt_plan ipfuse=0 turns it off. */
static fhjit_value ipfuse_target(an_build *B, an_intt *r) {
  fhjit_graph *g = B->g;
  const lw_ntt_tuning tu = B->tune;
  if (tu.ipfuse == 0 || !r->fwd || r->nmembers > LW_MAX_REG) return -1;
  /* by default only where a thread's words of all the members fit 32
   * bytes a position: on the H200 (N = 2^16, 263a381) r32 dnum 4 (16
   * bytes) ran its key switch in 281 us against 322 stored, but r62 dnum
   * 7 (56 bytes) in 1155 against 600 (the reduce kernel at 168 registers,
   * 64 threads a block); ipfuse=1 forces it */
  if (tu.ipfuse < 0 && r->nmembers * (g->radix == FHJIT_R32 ? 4 : 8) > 32) return -1;
  const fhjit_type *td = &g->nodes[r->d].type;
  if (fhjit_type_elements(td) != td->rows * td->n || td->comps > 1) return -1;
  size_t nn = (size_t)g->nnodes;
  char *cone = malloc(nn), *mem = calloc(nn, 1);
  fhjit_value found = -1, last = 0;
  if (!cone || !mem) {
    free(cone);
    free(mem);
    oom(B);
    return -1;
  }
  for (int k = 0; k < r->nmembers; k++) {
    mem[r->member[k]] = 1;
    if (r->member[k] > last) last = r->member[k];
    if (g->nodes[r->member[k]].type.comps > 1) last = g->nnodes; /* read as one word */
  }
  const fhjit_value m0 = r->member[0];
  for (fhjit_value S = last + 1; S < g->nnodes && found < 0; S++) {
    const ir_node *ns = &g->nodes[S];
    if (!B->live[S] || ns->op == IR_INPUT || B->where[S].kind >= 0 || B->alias[S] ||
        !ir_op_is_elementwise(ns->op) || ns->type.rows != g->nodes[m0].type.rows ||
        ns->type.n != td->n || ns->type.nbatch > 0 || ns->type.comps > 3)
      continue;
    int ok = 1;
    for (int64_t row = 0; row < ns->type.rows && ok; row++)
      ok = ir_pos(g, S, row) == ir_pos(g, m0, row);
    if (!ok) continue;
    memset(cone, 0, nn);
    cone[S] = 1;
    for (fhjit_value w = S; w >= 0 && ok; w--) {
      const ir_node *n = &g->nodes[w];
      if (!cone[w] || mem[w] || n->op == IR_INPUT || B->where[w].kind >= 0) continue;
      if (B->alias[w]) { /* another modup read in place */
        ok = 0;
        break;
      }
      unsigned f = ir_op_info_of(n->op)->flags;
      if (!ir_op_is_elementwise(n->op) || (f & IR_F_REMAPS_INDEX) || n->op == IR_MUL_COMPRESSED ||
          n->op == IR_ADD_COMPRESSED || (w != S && g->result_of[w] >= 0))
        ok = 0;
      for (int a = 0; a < n->nargs; a++) cone[n->args[a]] = 1;
    }
    for (int k = 0; k < r->nmembers && ok; k++) ok = cone[r->member[k]];
    /* readers: of a member or a computed node of the cone (S aside), only
     * inside the cone */
    for (fhjit_value w = 0; w < g->nnodes && ok; w++) {
      const ir_node *n = &g->nodes[w];
      if (!B->live[w] || (cone[w] && w <= S && !mem[w] && n->op != IR_INPUT && B->where[w].kind < 0))
        continue;
      for (int a = 0; a < n->nargs && ok; a++) {
        fhjit_value y = n->args[a];
        int inner = cone[y] && y != S && g->nodes[y].op != IR_INPUT && B->where[y].kind < 0;
        if (inner) ok = 0;
      }
    }
    if (ok) found = S;
  }
  free(cone);
  free(mem);
  return found;
}

static int same_type(const fhjit_type *a, const fhjit_type *b) {
  if (a->kind != b->kind || a->comps != b->comps || a->nbatch != b->nbatch || a->rows != b->rows ||
      a->n != b->n || a->domain != b->domain || a->form != b->form)
    return 0;
  for (int j = 0; j < a->nbatch; j++)
    if (a->batch[j] != b->batch[j]) return 0;
  return 1;
}

/* ipacc: whether the sum S (ipfuse_target) is a left fold over r's members
 * in their order, S = op(...op(op(T_0, T_1), T_2)..., T_{D-1}) with op add
 * or add_lazy (any mix), T_k reading member k and no other (plus leaves),
 * T_0 not a member itself, and every partial sum of one type (S's): then
 * chain[k] (k >= 1) is the fold step adding T_k = term[k], at argument
 * 1 - at[k] (the partial sum at argument at[k]), and term[0] = T_0. Only
 * such a fold may be accumulated member by member with the same bits as
 * the interpreter whatever the ops and operands: SPEC's "any order gives
 * the same word" holds for add_lazy of words in [0, 2q) only, not for add
 * mixed in or other words, so the reduce kernel keeps the graph's own
 * association and argument order. */
static int ipacc_fold(an_build *B, an_intt *r, fhjit_value S, fhjit_value *chain,
                      fhjit_value *term, int *at) {
  fhjit_graph *g = B->g;
  int D = r->nmembers;
  if (D < 1 || D > 30) return 0;
  uint32_t *mask = calloc((size_t)S + 1, sizeof *mask);
  if (!mask) {
    oom(B);
    return 0;
  }
  for (fhjit_value w = 0; w <= S; w++) {
    const ir_node *n = &g->nodes[w];
    int k = -1;
    for (int j = 0; j < D; j++)
      if (r->member[j] == w) k = j;
    if (k >= 0) mask[w] = UINT32_C(1) << k;
    else if (n->op != IR_INPUT && B->where[w].kind < 0)
      for (int a = 0; a < n->nargs; a++) mask[w] |= mask[n->args[a]];
  }
  const fhjit_type *ts = &g->nodes[S].type;
  fhjit_value cur = S;
  int ok = 1;
  for (int k = D - 1; k >= 1 && ok; k--) {
    const ir_node *n = &g->nodes[cur];
    ok = (n->op == IR_ADD || n->op == IR_ADD_LAZY) && n->nargs == 2 &&
         same_type(&n->type, ts);
    int a = -1;
    for (int j = 0; j < 2 && ok; j++)
      if (mask[n->args[j]] == (UINT32_C(1) << k) - 1 && mask[n->args[1 - j]] == UINT32_C(1) << k)
        a = j;
    ok = ok && a >= 0;
    if (!ok) break;
    chain[k] = cur;
    at[k] = a;
    term[k] = n->args[1 - a];
    cur = n->args[a];
  }
  if (ok) {
    term[0] = cur;
    chain[0] = -1;
    at[0] = -1;
    ok = mask[cur] == 1 && cur != r->member[0] && same_type(&g->nodes[cur].type, ts);
  }
  free(mask);
  return ok;
}

/* The reduce form of batched forward NTT step s (ipfuse): member values in
 * registers, r->sum computed in the last kernel into out. */
static void ipfuse_step(an_build *B, an_step *s, an_intt *r, an_buf out) {
  fhjit_graph *g = B->g;
  fhjit_value S = r->sum;
  int D = r->nmembers;
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, "epi", B->p->nsteps - 1, 0);
  fhjit_graph *sub = fhjit_graph_create(B->p->sctx, name, g->radix);
  an_buf *in = malloc(sizeof *in * (size_t)(2 * g->nnodes + 3 + D));
  if (!sub || !in) {
    free(in);
    oom(B);
    return;
  }
  lw_ntt_reduce *red = &s->red;
  memset(red, 0, sizeof *red);
  /* ipacc (ntt_plan ipacc=1; off by default: measured slower, r32
   * 299 us against 281.5, r62 1006 against 600 with ipfuse=0): a left
   * fold is accumulated member by member */
  const lw_ntt_tuning tu = B->tune;
  fhjit_value chain[LW_MAX_REG], term[LW_MAX_REG];
  int at[LW_MAX_REG];
  int acc = tu.ipacc > 0 && D + 1 <= LW_MAX_REG && ipacc_fold(B, r, S, chain, term, at);
  int32_t nin = 0;
  fhjit_value mv[LW_MAX_REG], av = FHJIT_NO_VALUE;
  int made = 1;
  for (int k = 0; k < D && !B->st && made; k++) {
    fhjit_value w = r->member[k];
    const fhjit_type *tw = &g->nodes[w].type;
    mv[k] = sub_input(sub, NULL, tw, cols_of(B, w, 0, tw->rows), NULL);
    if (mv[k] == FHJIT_NO_VALUE) {
      made = 0;
      break;
    }
    red->reg[k] = nin;
    in[nin++] = s->dst; /* a register input: an unused pointer */
    int64_t s0, nd = digit_run(B, w, &s0);
    red->s0[k] = s0;
    red->nd[k] = nd;
    red->urow[k] = r->urow[k];
  }
  fhjit_value res = FHJIT_NO_VALUE;
  if (acc && !B->st && made) {
    /* the partial sum in registers (S's type: every partial sum's), then
     * the terms' cones at once (their leaves shared), then result k: T_0,
     * or the graph's fold step k over (acc, T_k) in its argument order */
    const fhjit_type *ts = &g->nodes[S].type;
    av = sub_input(sub, NULL, ts, cols_of(B, S, 0, ts->rows), NULL);
    fhjit_value tv[LW_MAX_REG];
    if (av != FHJIT_NO_VALUE) {
      red->acc_reg = nin;
      in[nin++] = s->dst;
      lw_step_clone_multi(B, sub, term, D, r->member, mv, D, in, &nin, tv);
    }
    made = av != FHJIT_NO_VALUE && !B->st;
    for (int k = 0; k < D && made; k++) {
      fhjit_value f = tv[k];
      if (k > 0) {
        fhjit_value args[2];
        args[at[k]] = av;
        args[1 - at[k]] = tv[k];
        f = ir_clone_op(sub, g, &g->nodes[chain[k]], args);
      }
      made = f != FHJIT_NO_VALUE && !fhjit_output(sub, f, NULL);
      if (k == 0) res = f;
    }
    if (!made) res = FHJIT_NO_VALUE;
    red->acc = ts->comps > 1 ? ts->comps : 1;
  } else if (!B->st && made) {
    res = lw_step_clone_over_n(B, sub, S, r->member, mv, D, in, &nin);
    if (res != FHJIT_NO_VALUE && fhjit_output(sub, res, NULL)) res = FHJIT_NO_VALUE;
  }
  /* the operand (its own rows of each member), unused by the sub-graph */
  const ir_node *dn = &g->nodes[r->d];
  fhjit_type tdd = dn->type;
  if (dn->op == IR_INPUT) tdd.domain = dn->decl.domain, tdd.form = dn->decl.form;
  fhjit_value dx = res == FHJIT_NO_VALUE
                       ? res
                       : sub_input(sub, NULL, &tdd, cols_of(B, r->d, 0, tdd.rows), &r->dview);
  if (B->st || dx == FHJIT_NO_VALUE || fhjit_bind(sub)) {
    free(in);
    lw_step_sub_error(B, "the inner product of a batched forward NTT (ipfuse)");
    return;
  }
  red->d_input = nin;
  in[nin++] = r->dbuf;
  red->members = D;
  red->out_rows = g->nodes[r->member[0]].type.rows;
  red->d_offset = r->dview.offset;
  red->d_row_stride = r->dview.row_stride;
  red->d_index_stride = r->dview.index_stride;
  lw_ntt_plan_reduce(&s->plan, D, red->out_rows, red->acc);
  s->epi_sub[0] = sub;
  s->epi_in[0] = in;
  s->epi_reg[0] = -1;
  s->epi_out[0] = out;
  s->nepi = 1;
  s->skip_store = 1;
  B->where[S] = out;
}

/* The members' conversions and their one forward NTT (an_intt's fwd), at
 * the first member v's steps, after the shared inverse NTT: member k's m_k
 * converted rows go to rows [urow[k], urow[k] + m_k) of one buffer (of
 * every polynomial), all of them through one forward NTT into r->ubuf.
 * Why: a digit's forward NTT has m_k rows (r62: 35), one of all the
 * digits' (r62 dnum 7: 245) launches enough blocks to fill the GPU and
 * costs one launch pair (measured on the H200, r62 N = 2^16: 1.2 us per
 * row in the digit's NTT, about 1.0 in a bulk one). */
static void batched_fwd(an_build *B, fhjit_value v, an_intt *r) {
  fhjit_graph *g = B->g;
  const fhjit_type *td = &g->nodes[r->d].type;
  int64_t rows = 0;
  for (int k = 0; k < r->nmembers && !B->st; k++) {
    int64_t s0, nd = digit_run(B, r->member[k], &s0);
    r->urow[k] = rows;
    rows += g->nodes[r->member[k]].type.rows - nd;
  }
  if (B->st) return;
  fhjit_type t2 = part(td, rows, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  r->tu = part(td, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  an_buf s2 = scratch_for(B, &t2);
  int32_t *call = new_cols(B, rows);
  for (int k = 0; k < r->nmembers && !B->st && call; k++) {
    fhjit_value w = r->member[k];
    const ir_node *nw = &g->nodes[w];
    int64_t s0, nd = digit_run(B, w, &s0), m = nw->type.rows - nd;
    int32_t *c2 = new_cols(B, m);
    for (int64_t o = 0, j = 0; c2 && o < nw->type.rows; o++)
      if (o < s0 || o >= s0 + nd) c2[j++] = (int32_t)ir_pos(g, w, o);
    if (!c2) return;
    r->ucols[k] = c2;
    memcpy(call + r->urow[k], c2, sizeof *c2 * (size_t)m);
  }
  /* the conversions: with ntt_plan bconvbatch (default 1) the members of
   * one shape (nd -> m rows; a short last digit has its own) in one
   * kernel, up to LW_BCONV_MAX_DIGITS a kernel, in member order; each
   * digit reads its rows of the shared transform (its own offset, table,
   * columns) and writes its rows of s2. Why: at N = 2^16 one digit's
   * kernel is one under-occupied wave (H200: r32 12 -> 48 12.5 us, r62
   * 5 -> 35 13.5 us, against multiply-accumulate floors of 7.6 and 11.4);
   * the digits' blocks together fill the GPU, and dnum - 1 launches fewer */
  const lw_ntt_tuning tu = B->tune;
  int batch = tu.bconvbatch != 0;
  char *done = calloc((size_t)r->nmembers, 1);
  if (!done) oom(B);
  for (int k = 0; k < r->nmembers && !B->st && call; k++) {
    if (done[k]) continue;
    fhjit_value w = r->member[k];
    const ir_node *nw = &g->nodes[w];
    int64_t s0, nd = digit_run(B, w, &s0), m = nw->type.rows - nd;
    fhjit_type t1 = part(td, nd, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
    fhjit_layout l1;
    fhjit_dense_layout(&r->t, &l1);
    l1.offset += (s0 - r->lo) * l1.row_stride; /* the digit's rows of the shared transform */
    bconv_more more[LW_BCONV_MAX_DIGITS - 1];
    int nmore = 0;
    for (int j = k + 1; batch && j < r->nmembers && nmore < LW_BCONV_MAX_DIGITS - 1; j++) {
      fhjit_value x = r->member[j];
      int64_t xs0, xnd = digit_run(B, x, &xs0), xm = g->nodes[x].type.rows - xnd;
      if (done[j] || xnd != nd || xm != m) continue;
      done[j] = 1;
      more[nmore++] = (bconv_more){l1.offset - (s0 - xs0) * l1.row_stride, r->urow[j] * td->n,
                                   cols_of(B, r->d, xs0, nd), r->ucols[j], g->nodes[x].args[3]};
    }
    bconv_step_digits(B, w, 0, &t1, cols_of(B, r->d, s0, nd), r->buf, &l1, m, r->ucols[k],
                      nw->args[3], 0, s2, r->urow[k] * td->n, rows * td->n, more, nmore);
  }
  free(done);
  if (B->st || !call) return;
  fhjit_layout dense;
  fhjit_dense_layout(&t2, &dense);
  if (r->sum >= 0) {
    /* ipfuse: the sum in the last kernel; the transform is stored only
     * between two kernels, kernel 0 writing it in place over the converted
     * rows (each block reads and writes its own columns: r62 dnum 7, N =
     * 2^16, 86 MB of arena less); a one-kernel plan's dst is unused (the
     * sum's buffer stands in) */
    an_buf out = lw_step_home(B, r->sum);
    r->ubuf = s2;
    an_step *s = ntt_step(B, v, IR_NTT_MONT_TO_NTT, &r->tu, call, s2, &dense, g->nodes[v].args[1],
                          r->ubuf);
    if (s && !B->st) ipfuse_step(B, s, r, out);
    if (s && !B->st) {
      if (s->plan.nkernels == 2) s->plan.k[0].in_place = 1;
      else s->dst = out; /* unused (never stored), but not the source */
    }
    return;
  }
  r->ubuf = scratch_for(B, &r->tu);
  ntt_step(B, v, IR_NTT_MONT_TO_NTT, &r->tu, call, s2, &dense, g->nodes[v].args[1], r->ubuf);
}

/* Member v's alias of the batched forward NTT: its converted rows at rows
 * urow[k] of r->ubuf, its digit's rows in the operand. */
static void batched_alias(an_build *B, fhjit_value v, an_intt *r) {
  const fhjit_graph *g = B->g;
  const fhjit_type *td = &g->nodes[r->d].type;
  int k = 0;
  while (k < r->nmembers && r->member[k] != v) k++;
  SP_ASSERT(k < r->nmembers);
  int64_t s0, nd = digit_run(B, v, &s0);
  an_alias *al = calloc(1, sizeof *al);
  if (!al || B->st) {
    free(al);
    oom(B);
    return;
  }
  *al = (an_alias){.u = r->ubuf, .tu = part(td, g->nodes[v].type.rows - nd, FHJIT_DOMAIN_NTT,
                                             FHJIT_FORM_MONT),
                   .ucols = r->ucols[k], .has_uview = 1, .d = r->d, .dbuf = r->dbuf,
                   .dview = r->dview, .dcols = cols_of(B, r->d, 0, td->rows), .s0 = s0,
                   .nd = nd, .stored = r->stored};
  fhjit_dense_layout(&r->tu, &al->uview);
  al->uview.offset += r->urow[k] * al->uview.row_stride;
  B->alias[v] = al;
}

/* ------------------------------------------------------ moddown groups */

/* Whether moddown w may join a group (an_mdgroup): its operand a is
 * materialised (mixfuse, the byte rule: fused_operand says no) but could
 * be computed now (private_operand: a computed value read only by w, its
 * cone read by nothing else, rows computable from leaves that exist: in
 * hoisted rotations, the shared modups' aliases and the keys), one
 * polynomial value without batch axes. */
static int md_candidate(an_build *B, fhjit_value w) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[w];
  if (!B->live[w] || n->op != IR_MODDOWN || B->mdg[w]) return 0;
  fhjit_value a = n->args[0];
  const ir_node *na = &g->nodes[a];
  if (na->op == IR_EXTRACT || na->op == IR_ROWS || na->op == IR_INPUT ||
      na->type.kind != FHJIT_KIND_POLY || na->type.nbatch > 0)
    return 0;
  if (!private_operand(B, w, a, 0)) return 0;
  return B->tune.mixfuse == 0 || (B->tune.mixfuse != 1 && !fewer_bytes(B, a));
}

/* Arguments the pointwise kernel of ops[0..n) takes for its leaves (at
 * most: inputs and buffers one each, aliases two). */
static int md_leaves(const an_build *B, const fhjit_value *ops, int n) {
  const fhjit_graph *g = B->g;
  char *need = calloc((size_t)g->nnodes, 1);
  if (!need) return LW_MAX_ARGS;
  int count = 0;
  for (int k = 0; k < n; k++) need[ops[k]] = 1;
  for (int32_t w = g->nnodes - 1; w >= 0; w--) {
    const ir_node *nw = &g->nodes[w];
    if (!need[w]) continue;
    if (nw->op == IR_INPUT || B->where[w].kind >= 0) count++;
    else if (B->alias[w]) count += 2;
    else
      for (int a = 0; a < nw->nargs; a++) need[nw->args[a]] = 1;
  }
  free(need);
  return count;
}

/* The group of moddown v, the first live candidate of it in node order
 * (md_candidate), or NULL: v and the later candidates with v's tables
 * (forward, inverse, conversion) whose operands have v's operand's type
 * and basis, at most LW_MDG_MAX, and as many as the pointwise kernel's
 * arguments allow; at least two (ntt_plan mdip=0: never). Every member's
 * operand is computable at v's step: its leaves are all there. */
static an_mdgroup *md_group(an_build *B, fhjit_value v) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  if (B->tune.mdip == 0 || !md_candidate(B, v)) return NULL;
  const fhjit_value a = n->args[0];
  const fhjit_type *ta = &g->nodes[a].type;
  fhjit_value mem[LW_MDG_MAX], ops[LW_MDG_MAX];
  int cnt = 1;
  mem[0] = v, ops[0] = a;
  for (fhjit_value w = v + 1; w < g->nnodes && cnt < LW_MDG_MAX && !B->st; w++) {
    const ir_node *nw = &g->nodes[w];
    if (nw->op != IR_MODDOWN || !B->live[w] || nw->args[1] != n->args[1] ||
        nw->args[2] != n->args[2] || nw->args[3] != n->args[3])
      continue;
    fhjit_value aw = nw->args[0];
    if (!same_shape(&g->nodes[aw].type, ta)) continue;
    int walk = 1;
    for (int64_t r = 0; r < ta->rows && walk; r++) walk = ir_pos(g, aw, r) == ir_pos(g, a, r);
    if (!walk || !md_candidate(B, w)) continue;
    ops[cnt] = aw;
    /* the kernel's arguments: leaves, one result each, params */
    if (md_leaves(B, ops, cnt + 1) + cnt + 1 + 8 > LW_MAX_ARGS) break;
    mem[cnt++] = w;
  }
  if (cnt < 2 || B->st) return NULL;
  an_mdgroup *G = calloc(1, sizeof *G);
  if (!G) {
    oom(B);
    return NULL;
  }
  G->first = v;
  G->nmembers = cnt;
  G->intt = B->tune.mdintt != 0;
  G->bconv = G->intt && B->tune.mdbconv != 0;
  for (int k = 0; k < cnt; k++) G->member[k] = mem[k], B->mdg[mem[k]] = G;
  return G;
}

/* The group's shared steps, at its first member's place: every member's
 * operand by one pointwise kernel into G->sbuf (member k's at k *
 * G->swords words, polynomial after polynomial). Why: the operands are
 * the rotations' inner products, each reading the same raised digit rows
 * (at permuted positions within the row: automorphisms) and its key's;
 * the kernel's grid is row-major (lower.c, decompose: a group's index i
 * is innermost, then the row, so consecutive blocks cover one row) and
 * each thread computes every member's words of its positions, so a row
 * of a raised digit is read from DRAM once and by the other members from
 * the L2 (r32 dnum 4, 8 rotations at N = 2^16: about 440 MB less than a
 * kernel per rotation). */
static void md_first(an_build *B, an_mdgroup *G) {
  fhjit_graph *g = B->g;
  const int R = G->nmembers;
  const fhjit_type *ta = &g->nodes[g->nodes[G->first].args[0]].type;
  const int64_t P = ta->comps > 0 ? ta->comps : 1;
  fhjit_type tb = *ta; /* all the operands: R P polynomials */
  tb.comps = 0;
  tb.nbatch = 1;
  tb.batch[0] = R * P;
  G->swords = fhjit_type_elements(ta);
  G->sbuf = scratch_for(B, &tb);
  fhjit_value targets[LW_MDG_MAX];
  an_buf dests[LW_MDG_MAX];
  for (int k = 0; k < R; k++) targets[k] = g->nodes[G->member[k]].args[0], dests[k] = G->sbuf;
  if (B->st) return;
  /* ntt_plan mdipk: at most that many members a kernel (ptxas, sm_90, N =
   * 2^16: the kernel of all 8 rotations takes r32 188 registers, r62 128
   * with spills, against 40 and 66 for one; 4 rotations 75 and 90). The
   * default is the fastest measured on the H200 (1e17f7e, 8 hoisted
   * rotations at the benchmark sets): r32 2 (1136 us; 1 1201, 4 1145, 8
   * 1201), r62 1 (2217 us; 2 2317, 8 4047; the operands one kernel each
   * as before, 2268) */
  const int per = B->tune.mdipk > 0 ? B->tune.mdipk : g->radix == FHJIT_R32 ? 2 : 1;
  for (int k0 = 0; k0 < R && !B->st; k0 += per) {
    const int nk = R - k0 < per ? R - k0 : per;
    lw_step_pointwise(B, targets + k0, dests + k0, nk);
    if (B->st) return;
    an_step *s = &B->p->steps[B->p->nsteps - 1];
    const fhjit_graph *sub = s->sub;
    s->out_off = malloc(sizeof *s->out_off * (size_t)(sub->nresults + 1));
    if (!s->out_off) {
      oom(B);
      return;
    }
    /* result r of sub is target t's (add_pointwise's matching) */
    for (int32_t r = 0; r < sub->nresults; r++)
      for (int t = 0; t < nk; t++)
        if (sub->outputs[t].source == r && !sub->outputs[t].is_input_alias)
          s->out_off[r] = (k0 + t) * G->swords;
  }
  for (int k = 0; k < R; k++) {
    B->where[targets[k]] = G->sbuf;
    B->where_off[targets[k]] = k * G->swords;
  }
  /* mdintt: P's rows of every member (R P polynomials, a uniform stride
   * in sbuf) to coefficient-Montgomery form by one inverse NTT into s1.
   * Why: a member's transform has 2 x K rows (r32: 24), few blocks, and
   * is latency-bound (H200, r32 N = 2^16: ~16 us for 24 rows in 2
   * kernels); R members' rows together fill the GPU, 2 (R - 1) launches
   * fewer */
  const ir_node *n = &g->nodes[G->first];
  const fhjit_value a = n->args[0];
  const int64_t K = g->nspecial, l = ta->rows - K;
  fhjit_type t1 = part(&tb, K, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c1 = cols_of(B, a, l, K);
  if (G->intt) {
    fhjit_layout lv;
    fhjit_dense_layout(&tb, &lv);
    lv.offset += l * lv.row_stride;
    G->s1 = scratch_for(B, &t1);
    G->s1words = P * K * ta->n;
    ntt_step(B, G->first, IR_NTT_TO_MONT, &t1, c1, G->sbuf, &lv, n->args[2], G->s1);
  }
  /* mdbconv: their conversion to Q by one kernel (one table: more
   * polynomials) into s2. Why: a member's kernel converts 2 polynomials,
   * one under-occupied wave (H200, r32 12 -> 48 rows: ~19 us) */
  if (G->bconv && !B->st) {
    fhjit_type t2 = part(&tb, l, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
    fhjit_layout d1;
    fhjit_dense_layout(&t1, &d1);
    G->s2 = scratch_for(B, &t2);
    G->s2words = P * l * ta->n;
    bconv_step(B, G->first, 0, &t1, c1, G->s1, &d1, l, cols_of(B, a, 0, l), n->args[3], 0, G->s2);
  }
}

static void modup_steps(an_build *B, fhjit_value v) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  fhjit_value d = n->args[0];
  const fhjit_type *td = &g->nodes[d].type;
  int64_t s0, nd = digit_run(B, v, &s0);
  if (B->st) return;
  if (!nd) {
    refuse(B, v, "the digit's rows are not consecutive rows of the operand; the lowering "
                 "supports consecutive digits only");
    return;
  }
  an_intt *r = B->intt[v];
  if (r && r->fwd && r->done) {
    /* the first member converted this digit and transformed its rows (and
     * with ipfuse read it in registers: no alias, nothing else reads it) */
    if (r->sum < 0) batched_alias(B, v, r);
    return;
  }
  int64_t m = n->type.rows - nd;
  an_buf db = {-1, 0};
  fhjit_layout dl, dense;
  /* a computed operand read only by modups read in place: each digit's
   * inverse NTT computes its rows (a prologue) and stores them into one
   * buffer of the operand, where the modups' readers find them; nothing
   * computes the operand beforehand */
  int stored = read_in_place(B, v) && private_operand(B, v, d, 1);
  if (stored) {
    for (int32_t w = 0; w < g->nnodes && db.kind < 0; w++)
      if (B->alias[w] && B->alias[w]->d == d && B->alias[w]->stored) db = B->alias[w]->dbuf;
    if (db.kind < 0) db = scratch_for(B, td);
    fhjit_dense_layout(td, &dl);
  } else if (!view_of(B, d, &db, &dl)) {
    return;
  }
  an_intt *sh = shared_intt(B, v, stored);
  if (B->st) return;
  if (sh && !sh->done) {
    /* 1. the rows of all the modups' digits to coefficient-Montgomery form
     * at once (the first of them): one NTT of many rows instead of one of
     * a few rows per digit, each latency-bound (few blocks) */
    fhjit_layout lu = dl;
    lu.offset += sh->lo * dl.row_stride;
    if (stored)
      prologue_ntt_step(B, v, IR_NTT_TO_MONT, &sh->t, sh->cols, d, sh->lo, n->args[2], sh->buf, db);
    else ntt_step(B, v, IR_NTT_TO_MONT, &sh->t, sh->cols, db, &lu, n->args[2], sh->buf);
    sh->done = 1;
    if (sh->fwd) {
      /* 2., 3. every member's conversion, one forward NTT of them all */
      sh->dbuf = db;
      sh->dview = dl; /* the whole operand */
      sh->sum = ipfuse_target(B, sh);
      batched_fwd(B, v, sh);
      if (!B->st && sh->sum < 0) batched_alias(B, v, sh);
      return;
    }
  }
  dl.offset += s0 * dl.row_stride; /* the digit's rows */
  /* 1. the digit to coefficient-Montgomery form: s1 through view l1 */
  fhjit_type t1 = part(td, nd, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c1 = cols_of(B, d, s0, nd);
  an_buf s1;
  fhjit_layout l1;
  if (sh) {
    /* the digit's rows of the shared transform */
    s1 = sh->buf;
    fhjit_dense_layout(&sh->t, &l1);
    l1.offset += (s0 - sh->lo) * l1.row_stride;
  } else {
    s1 = scratch_for(B, &t1);
    fhjit_dense_layout(&t1, &l1);
    if (stored) prologue_ntt_step(B, v, IR_NTT_TO_MONT, &t1, c1, d, s0, n->args[2], s1, db);
    else ntt_step(B, v, IR_NTT_TO_MONT, &t1, c1, db, &dl, n->args[2], s1);
  }
  /* 2. converted to the other output rows, in output order */
  int32_t *c2 = new_cols(B, m);
  for (int64_t o = 0, k = 0; c2 && o < n->type.rows; o++)
    if (o < s0 || o >= s0 + nd) c2[k++] = (int32_t)ir_pos(g, v, o);
  fhjit_type t2 = part(td, m, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  an_buf s2 = scratch_for(B, &t2);
  bconv_step(B, v, 0, &t1, c1, s1, &l1, m, c2, n->args[3], 0, s2);
  fhjit_type t3 = part(td, m, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_type tdig = part(td, nd, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_dense_layout(&t2, &dense);
  if (read_in_place(B, v)) {
    /* 3. forward into scratch; the kernels that read v load its rows
     * from there and from d (an alias: no gather) */
    an_buf s3 = scratch_for(B, &t3);
    ntt_step(B, v, IR_NTT_MONT_TO_NTT, &t3, c2, s2, &dense, n->args[1], s3);
    an_alias *al = calloc(1, sizeof *al);
    if (!al) {
      oom(B);
      return;
    }
    if (B->st) {
      free(al);
      return;
    }
    dl.offset -= s0 * dl.row_stride; /* the whole operand */
    *al = (an_alias){.u = s3, .tu = t3, .ucols = c2, .d = d, .dbuf = db, .dview = dl,
                     .dcols = cols_of(B, d, 0, td->rows), .s0 = s0, .nd = nd,
                     .stored = stored};
    B->alias[v] = al;
    return;
  }
  int64_t polys = fhjit_type_elements(td) / (td->rows * td->n);
  if (polys == 1 && (s0 == 0 || s0 + nd == n->type.rows)) {
    /* the converted rows are one run of the output: their forward NTT
     * writes there, and only the digit's rows are copied (no gather of
     * the whole output) */
    an_buf out = lw_step_home(B, v);
    if (B->st) return;
    an_step *s = ntt_step(B, v, IR_NTT_MONT_TO_NTT, &t3, c2, s2, &dense, n->args[1], out);
    if (!s || B->st) return;
    s->dst_off = s->plan.dst_offset = (s0 == 0 ? nd : 0) * td->n;
    modup_copy(B, db, &dl, &tdig, c1, out, s0 * td->n);
    if (!B->st) B->where[v] = out;
    return;
  }
  /* 3. forward */
  an_buf s3 = scratch_for(B, &t3);
  ntt_step(B, v, IR_NTT_MONT_TO_NTT, &t3, c2, s2, &dense, n->args[1], s3);
  /* 4. in output order */
  an_buf out = lw_step_home(B, v);
  if (B->st) return;
  modup_gather(B, v, s3, &t3, c2, db, &dl, &tdig, c1, s0, out);
  if (!B->st) B->where[v] = out;
}

/* ------------------------------------- moddown and rescale in one (mdrs) */

/* HMult ends in r = rescale(w), w = add(d, m), m = moddown(a) (SPEC 7).
 * Its plan as written transforms twice forward: moddown's converted rows
 * v (then (a - NTT(v)) P*^-1) and rescale's lifted last row (then (w -
 * NTT(lift(c))) q^-1). The transform is linear mod each q_i, so one
 * forward NTT of y_i = v_i P*^-1 + lift_i(c) gives the same residues:
 *   out_i = mul(sub(d_i + a_i P*^-1, NTT(y)_i), q^-1 R),
 *   c = ntt_inv(d_L + a_L P*^-1) - v_L P*^-1 (the last row, coefficient-standard).
 * Bit for bit, not only mod q: sub's result is canonical whatever lazy
 * words it is given, mul's word is then a function of it, and c is
 * canonical either way (docs/ckks.md, "Moddown and rescale in one").
 * Steps: one inverse NTT of the last row of d + a P*^-1 (computed in its
 * prologue: lw_ntt_plan.pro_rows) and P's rows (loaded), to coefficient-
 * Montgomery form; the conversion of P's rows to all of Q (as moddown); c
 * from the last rows of both (a pointwise kernel of one row); the forward
 * NTT of rows [0, L) (the prologue's v_i P*^-1 plus the lift of c in its
 * loads: lw_ntt_plan.lift with a prologue, the result in the epilogue).
 * One forward NTT of 2 L rows and the last row's own inverse NTT fewer
 * than the two ops apart, one pointwise kernel more. */

/* The one live node reading v, once (FHJIT_NO_VALUE: none or several). */
static fhjit_value only_reader(const an_build *B, fhjit_value v) {
  const fhjit_graph *g = B->g;
  fhjit_value r = FHJIT_NO_VALUE;
  for (int32_t w = v + 1; w < g->nnodes; w++) {
    const ir_node *n = &g->nodes[w];
    if (!B->live[w]) continue;
    for (int a = 0; a < n->nargs; a++)
      if (n->args[a] == v) {
        if (r != FHJIT_NO_VALUE) return FHJIT_NO_VALUE;
        r = w;
      }
  }
  return r;
}

/* The rescale whose steps compute moddown m with it (mdrs_steps), or
 * FHJIT_NO_VALUE: m and the add read only by the next, neither a result,
 * m's operand not computed in its kernels (fused_operand), the add's other
 * operand computable row by row, the lift in the loads (liftfuse). */
static fhjit_value mdrs_rescale(an_build *B, fhjit_value m) {
  fhjit_graph *g = B->g;
  if (B->tune.mdrs == 0 || B->tune.liftfuse == 0 || g->result_of[m] >= 0) return FHJIT_NO_VALUE;
  fhjit_value w = only_reader(B, m);
  if (w == FHJIT_NO_VALUE || g->result_of[w] >= 0) return FHJIT_NO_VALUE;
  const ir_node *nw = &g->nodes[w];
  if ((nw->op != IR_ADD && nw->op != IR_ADD_LAZY) || g->nodes[m].type.rows < 2)
    return FHJIT_NO_VALUE;
  fhjit_value d = nw->args[0] == m ? nw->args[1] : nw->args[0];
  fhjit_value r = only_reader(B, w);
  if (r == FHJIT_NO_VALUE || g->nodes[r].op != IR_RESCALE || !lw_step_rows_ok(B, d) || fused_operand(B, m, g->nodes[m].args[0]))
    return FHJIT_NO_VALUE;
  return r;
}

/* A sub-graph input of type t on chain positions cols read through view l
 * of buffer b (b.kind < 0: a register input, no view), recorded in in[]. */
static fhjit_value buf_input(fhjit_graph *sub, const fhjit_type *t, const int32_t *cols,
                             const fhjit_layout *l, an_buf b, an_buf *in, int32_t *nin) {
  in[(*nin)++] = b;
  return sub_input(sub, NULL, t, cols, l);
}

/* Constant table input table's words [skip, skip + t->rows), one per row,
 * read at every coefficient and component. */
static fhjit_value const_input(an_build *B, fhjit_graph *sub, fhjit_value table, int64_t skip,
                               const fhjit_type *t, const int32_t *cols, an_buf *in,
                               int32_t *nin) {
  const ir_node *tn = &B->g->nodes[table];
  fhjit_layout cl;
  memset(&cl, 0, sizeof cl);
  cl.offset = tn->layout.offset + skip;
  cl.row_stride = 1;
  return buf_input(sub, t, cols, &cl, (an_buf){LW_ARG_INPUT, tn->input_index}, in, nin);
}

/* The facts mdrs_steps' sub-graphs share. */
typedef struct mdrs {
  fhjit_value r, m, d, a;
  int64_t K, L; /* P's rows; w has L + 1 rows */
  fhjit_type tw, ta;
  an_buf ab, s2;
  fhjit_layout al, l2; /* a's view; s2 (the conversion's L + 1 rows) dense */
  fhjit_value mtable;  /* moddown's table: P*^-1 R of Q's row i at word pinv + i */
  int64_t pinv;
} mdrs;

/* d + a P*^-1 on rows [first, first + count) into sub (cols: their chain
 * positions). */
static fhjit_value mdrs_operand(an_build *B, const mdrs *M, fhjit_graph *sub, int64_t first,
                                int64_t count, const int32_t *cols, an_buf *in, int32_t *nin) {
  fhjit_value dx = lw_step_clone_rows(B, sub, M->d, first, count, in, nin);
  if (dx == FHJIT_NO_VALUE) return dx;
  fhjit_type t = part(&M->ta, count, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_layout l = M->al;
  l.offset += first * M->al.row_stride;
  fhjit_value ax = buf_input(sub, &t, cols, &l, M->ab, in, nin);
  fhjit_value c = const_input(B, sub, M->mtable, M->pinv + first, &t, cols, in, nin);
  return fhjit_add(sub, dx, fhjit_mul(sub, ax, c));
}

/* Makes sub the step's result res of sub-graph value x (bound), or fails. */
static int mdrs_finish(an_build *B, fhjit_graph *sub, fhjit_value x, an_buf *in) {
  if (B->st || x == FHJIT_NO_VALUE || fhjit_output(sub, x, NULL) || fhjit_bind(sub)) {
    free(in);
    lw_step_sub_error(B, "moddown and rescale in one (mdrs)");
    return 0;
  }
  return 1;
}

static fhjit_graph *mdrs_sub(an_build *B, const char *kind, an_buf **in) {
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, kind, B->p->nsteps - 1, kind[0] == 'e' ? 0 : -1);
  fhjit_graph *sub = fhjit_graph_create(B->p->sctx, name, B->g->radix);
  *in = malloc(sizeof **in * (size_t)(4 * B->g->nnodes + 8));
  if (!sub || !*in) {
    free(*in);
    *in = NULL;
    oom(B);
    return NULL;
  }
  return sub;
}

/* c = from_mont(t_L) - from_mont(v_L P*^-1 R) into buffer c (one row a
 * component): a pointwise step after the conversion, t_L being row 0 of
 * the inverse NTT's result s1 (the operand's last row, coefficient-
 * Montgomery) and v_L row L of the conversion's. */
static void mdrs_last_row(an_build *B, const mdrs *M, an_buf s1, an_buf c) {
  an_step *s = lw_step_new(B);
  if (!s) return;
  an_buf *in;
  int32_t nin = 0;
  fhjit_graph *sub = mdrs_sub(B, "pw", &in);
  if (!sub) return;
  int32_t *cl = cols_of(B, M->a, M->L, 1);
  fhjit_type tv = part(&M->ta, 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_type t1 = part(&M->ta, M->K + 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_layout l1, l2 = M->l2;
  fhjit_dense_layout(&t1, &l1);
  l2.offset += M->L * l2.row_stride;
  fhjit_value t = buf_input(sub, &tv, cl, &l1, s1, in, &nin);
  fhjit_value v = buf_input(sub, &tv, cl, &l2, M->s2, in, &nin);
  fhjit_value k = const_input(B, sub, M->mtable, M->pinv + M->L, &tv, cl, in, &nin);
  fhjit_value x = fhjit_sub(sub, fhjit_from_mont(sub, t), fhjit_from_mont(sub, fhjit_mul(sub, v, k)));
  s->out = malloc(sizeof *s->out);
  if (!s->out) {
    free(in);
    oom(B);
    return;
  }
  if (!mdrs_finish(B, sub, x, in)) return;
  s->sub = sub, s->in = in, s->out[0] = c;
}

/* The forward NTT of rows [0, L): v_i P*^-1 R in the prologue plus the
 * lift of c (one row, read at every row) in the loads; the result in the
 * epilogue. */
static void mdrs_forward(an_build *B, const mdrs *M, an_buf c) {
  fhjit_graph *g = B->g;
  const ir_node *nr = &g->nodes[M->r];
  fhjit_type t1 = part(&M->tw, 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_type t4 = part(&M->tw, M->L, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  int32_t *c4 = cols_of(B, M->a, 0, M->L);
  fhjit_layout lc;
  fhjit_dense_layout(&t1, &lc);
  lc.row_stride = 0;
  an_buf s4 = scratch_for(B, &t4);
  an_step *s = ntt_step(B, M->r, IR_NTT_MONT_TO_NTT, &t4, c4, c, &lc, nr->args[1], s4);
  if (!s || B->st) return;
  s->plan.lift = 1;
  s->plan.lift_col = (int32_t)ir_pos(g, M->a, M->L);
  an_buf *in;
  int32_t nin = 0;
  fhjit_graph *sub = mdrs_sub(B, "pro", &in);
  if (!sub) return;
  fhjit_type tv = part(&M->ta, M->L, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_value v = buf_input(sub, &tv, c4, &M->l2, M->s2, in, &nin);
  fhjit_value k = const_input(B, sub, M->mtable, M->pinv, &tv, c4, in, &nin);
  if (!mdrs_finish(B, sub, fhjit_mul(sub, v, k), in)) return;
  s->pro_sub = sub, s->pro_in = in, s->pro_comp = -1;

  /* a result read from r's value in the last kernel: r is not stored */
  fhjit_value res = lw_step_epilogue_result(B, M->r);
  an_buf out = res >= 0 ? (an_buf){LW_ARG_RESULT, g->result_of[res]} : lw_step_home(B, M->r);
  nin = 0;
  if (B->st || !(sub = mdrs_sub(B, "epi", &in))) return;
  fhjit_value x = mdrs_operand(B, M, sub, 0, M->L, c4, in, &nin);
  int32_t reg = nin;
  fhjit_value u = x == FHJIT_NO_VALUE ? x : buf_input(sub, &t4, c4, NULL, s->dst, in, &nin);
  fhjit_value q = u == FHJIT_NO_VALUE ? u : const_input(B, sub, nr->args[3], 0, &t4, c4, in, &nin);
  fhjit_value y = q == FHJIT_NO_VALUE ? q : fhjit_mul(sub, fhjit_sub(sub, x, u), q);
  if (y != FHJIT_NO_VALUE && res >= 0) y = lw_step_clone_over(B, sub, res, M->r, y, in, &nin);
  if (!mdrs_finish(B, sub, y, in)) return;
  s->epi_sub[0] = sub, s->epi_in[0] = in, s->epi_reg[0] = reg, s->epi_out[0] = out;
  s->nepi = 1;
  s->skip_store = 1;
  B->where[res >= 0 ? res : M->r] = out;
}

/* Rescale v's steps when its moddown was left to it (moddown_steps):
 * returns 1 when planned here. */
static int mdrs_steps(an_build *B, fhjit_value v) {
  fhjit_graph *g = B->g;
  const ir_node *nw = &g->nodes[g->nodes[v].args[0]];
  if (nw->op != IR_ADD && nw->op != IR_ADD_LAZY) return 0;
  fhjit_value m = B->mdrs[nw->args[0]] ? nw->args[0] : nw->args[1];
  if (!B->mdrs[m]) return 0;
  mdrs M = {.r = v, .m = m, .d = nw->args[0] == m ? nw->args[1] : nw->args[0]};
  const ir_node *nm = &g->nodes[m];
  M.a = nm->args[0];
  M.K = g->nspecial;
  M.tw = g->nodes[g->nodes[v].args[0]].type;
  M.ta = g->nodes[M.a].type;
  M.L = M.tw.rows - 1;
  M.mtable = nm->args[3];
  M.pinv = M.K + M.K * (M.L + 1); /* after the conversion's constants */
  if (!view_of(B, M.a, &M.ab, &M.al)) return 1;
  /* 1. P's rows to coefficient-Montgomery form (as moddown) and, in the
   * same transform, the last row of the operand d + a P*^-1 (row 0: the
   * prologue computes it, P's rows are loaded from a's rows after it) */
  fhjit_type t1 = part(&M.ta, M.K + 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_type tp = part(&M.ta, M.K, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_type t2 = part(&M.ta, M.L + 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c1 = cols_of(B, M.a, M.L, M.K + 1), *c2 = cols_of(B, M.a, 0, M.L + 1);
  an_buf s1 = scratch_for(B, &t1);
  fhjit_layout l1 = M.al, d1;
  l1.offset += M.L * M.al.row_stride;
  an_step *s = ntt_step(B, m, IR_NTT_TO_MONT, &t1, c1, M.ab, &l1, nm->args[2], s1);
  if (!s || B->st) return 1;
  an_buf *in;
  int32_t nin = 0;
  fhjit_graph *sub = mdrs_sub(B, "pro", &in);
  if (!sub) return 1;
  fhjit_value z = mdrs_operand(B, &M, sub, M.L, 1, c1, in, &nin);
  if (!mdrs_finish(B, sub, z, in)) return 1;
  s->pro_sub = sub, s->pro_in = in, s->pro_comp = -1;
  s->plan.pro_rows = 1;
  /* 2. P's rows converted to every row of Q (as moddown) */
  fhjit_dense_layout(&t1, &d1);
  d1.offset += d1.row_stride;
  fhjit_dense_layout(&t2, &M.l2);
  M.s2 = scratch_for(B, &t2);
  if (!B->st) bconv_step(B, m, 0, &tp, c1 + 1, s1, &d1, M.L + 1, c2, M.mtable, 0, M.s2);
  /* 3. the last row's coefficients c; 4. the forward NTT of the others */
  fhjit_type tc = part(&M.tw, 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  an_buf c = B->st ? (an_buf){-1, 0} : scratch_for(B, &tc);
  if (!B->st) mdrs_last_row(B, &M, s1, c);
  if (!B->st) mdrs_forward(B, &M, c);
  return 1;
}

void lw_steps_s7(an_build *B, fhjit_value v) {
  const ir_node *n = &B->g->nodes[v];
  switch (n->op) {
  case IR_BCONV: bconv_steps(B, v); return;
  case IR_RESCALE: rescale_steps(B, v); return;
  case IR_MODDOWN: moddown_steps(B, v); return;
  case IR_MODUP: modup_steps(B, v); return;
  default:
    /* rows, concat, automorphism: loads of buffers (lower.c) */
    for (int a = 0; a < n->nargs && !B->st; a++)
      if (!lw_step_addressable(B, n->args[a])) lw_step_materialise(B, n->args[a]);
    return;
  }
}
