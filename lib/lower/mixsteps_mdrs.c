/* mixsteps_mdrs.c: moddown and rescale in one (mdrs), for their steps
 * (mixsteps.c): which rescale plans its moddown (mdrs_rescale) and the
 * steps of both (mdrs_steps). */
#include <stdlib.h>
#include <string.h>

#include "lower/mixsteps.h"

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
fhjit_value lw_mix_mdrs_rescale(an_build *B, fhjit_value m) {
  fhjit_graph *g = B->g;
  if (B->tune.mdrs == 0 || B->tune.liftfuse == 0 || g->result_of[m] >= 0) return FHJIT_NO_VALUE;
  fhjit_value w = only_reader(B, m);
  if (w == FHJIT_NO_VALUE || g->result_of[w] >= 0) return FHJIT_NO_VALUE;
  const ir_node *nw = &g->nodes[w];
  /* the steps are sized from moddown's operand: a moddown broadcast in
   * the add (fewer components or batch entries than w) would cover only
   * its own polynomials (wrong words in the others) */
  if ((nw->op != IR_ADD && nw->op != IR_ADD_LAZY) || g->nodes[m].type.rows < 2 ||
      !lw_mix_same_shape(&g->nodes[m].type, &nw->type))
    return FHJIT_NO_VALUE;
  fhjit_value d = nw->args[0] == m ? nw->args[1] : nw->args[0];
  fhjit_value r = only_reader(B, w);
  if (r == FHJIT_NO_VALUE || g->nodes[r].op != IR_RESCALE || !lw_step_rows_ok(B, d) || lw_mix_fused_operand(B, m, g->nodes[m].args[0]))
    return FHJIT_NO_VALUE;
  return r;
}

/* A sub-graph input of type t on chain positions cols read through view l
 * of buffer b (b.kind < 0: a register input, no view), recorded in in[]. */
static fhjit_value buf_input(fhjit_graph *sub, const fhjit_type *t, const int32_t *cols,
                             const fhjit_layout *l, an_buf b, an_buf *in, int32_t *nin) {
  in[(*nin)++] = b;
  return lw_mix_sub_input(sub, NULL, t, cols, l);
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
  fhjit_type t = lw_mix_part(&M->ta, count, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
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
    lw_mix_oom(B);
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
  int32_t *cl = lw_mix_cols_of(B, M->a, M->L, 1);
  fhjit_type tv = lw_mix_part(&M->ta, 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_type t1 = lw_mix_part(&M->ta, M->K + 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
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
    lw_mix_oom(B);
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
  fhjit_type t1 = lw_mix_part(&M->tw, 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_type t4 = lw_mix_part(&M->tw, M->L, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  int32_t *c4 = lw_mix_cols_of(B, M->a, 0, M->L);
  fhjit_layout lc;
  fhjit_dense_layout(&t1, &lc);
  lc.row_stride = 0;
  an_buf s4 = lw_mix_scratch_for(B, &t4);
  an_step *s = lw_mix_ntt_step(B, M->r, IR_NTT_MONT_TO_NTT, &t4, c4, c, &lc, nr->args[1], s4);
  if (!s || B->st) return;
  s->plan.lift = 1;
  s->plan.lift_col = (int32_t)ir_pos(g, M->a, M->L);
  an_buf *in;
  int32_t nin = 0;
  fhjit_graph *sub = mdrs_sub(B, "pro", &in);
  if (!sub) return;
  fhjit_type tv = lw_mix_part(&M->ta, M->L, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
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
int lw_mix_mdrs_steps(an_build *B, fhjit_value v) {
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
  if (!lw_mix_view_of(B, M.a, &M.ab, &M.al)) return 1;
  /* 1. P's rows to coefficient-Montgomery form (as moddown) and, in the
   * same transform, the last row of the operand d + a P*^-1 (row 0: the
   * prologue computes it, P's rows are loaded from a's rows after it) */
  fhjit_type t1 = lw_mix_part(&M.ta, M.K + 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_type tp = lw_mix_part(&M.ta, M.K, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_type t2 = lw_mix_part(&M.ta, M.L + 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c1 = lw_mix_cols_of(B, M.a, M.L, M.K + 1), *c2 = lw_mix_cols_of(B, M.a, 0, M.L + 1);
  an_buf s1 = lw_mix_scratch_for(B, &t1);
  fhjit_layout l1 = M.al, d1;
  l1.offset += M.L * M.al.row_stride;
  an_step *s = lw_mix_ntt_step(B, m, IR_NTT_TO_MONT, &t1, c1, M.ab, &l1, nm->args[2], s1);
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
  M.s2 = lw_mix_scratch_for(B, &t2);
  if (!B->st) lw_mix_bconv_step(B, m, 0, &tp, c1 + 1, s1, &d1, M.L + 1, c2, M.mtable, 0, M.s2);
  /* 3. the last row's coefficients c; 4. the forward NTT of the others */
  fhjit_type tc = lw_mix_part(&M.tw, 1, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  an_buf c = B->st ? (an_buf){-1, 0} : lw_mix_scratch_for(B, &tc);
  if (!B->st) mdrs_last_row(B, &M, s1, c);
  if (!B->st) mdrs_forward(B, &M, c);
  return 1;
}
