/* anchor_ipntt.c: forward NTT anchors of several operands planned with the
 * sum of their products (ntt_plan ipntt). A key switch written with
 * ntt_fwd nodes (examples/ntt/keyswitch.fh: two digits to the NTT domain,
 * their key products summed, the sum back through ntt_inv) would store
 * each transform and have the inverse's prologue read it once per
 * component of the sum. Grouped, each member's step runs its first kernel
 * alone (a head) into its rows of one buffer, and one more step runs the
 * members' last kernel over all of them in ipfuse's reduce form
 * (mixsteps_ipfuse.c, lw_mix_reduce_step): each block transforms its row
 * of every member, keeps the words, and computes the sum there, so no
 * transform is stored and the sum is written once (r62, 16 rows, N =
 * 2^16: 48 MB of stores and loads become 32). anchor_plan.c asks
 * lw_ipntt_head for each anchor; the group forms at its first member. */
#include <stdlib.h>
#include <string.h>

#include "lower/mixsteps.h"

struct an_ipntt {
  fhjit_value first, last, sum;
  int D;
  fhjit_value member[LW_MAX_REG];
  int64_t urow[LW_MAX_REG];
  an_buf u;     /* the members' intermediate words: member k's at rows urow[k] */
  fhjit_type tu; /* u's type: D x rows rows */
  int32_t *cols; /* u's rows' chain positions (each member's basis in turn) */
  lw_ntt_plan plan; /* the members' own plan (plans_fit) */
  int last_step;    /* the step of the latest head planned */
};

/* Whether anchor w can join a group led by anchor v (or lead it, w = v): a
 * live forward NTT of v's kind, table, shape and basis, one polynomial, no result, no
 * epilogue of its own, not grouped yet, its operand no coefficient
 * automorphism (whose loads change the plan's kernels: aut_source). */
static int joins(const an_build *B, fhjit_value v, fhjit_value w) {
  const fhjit_graph *g = B->g;
  const ir_node *nv = &g->nodes[v], *nw = &g->nodes[w];
  if (!B->live[w] || nw->op != IR_NTT || B->ipg[w] || g->result_of[w] >= 0 ||
      nw->attr[0] != nv->attr[0] || !ir_ntt_is_forward((ir_ntt_kind)nw->attr[0]) ||
      nw->args[1] != nv->args[1] || !lw_mix_same_shape(&nw->type, &nv->type) ||
      nw->type.comps > 1 || fhjit_type_elements(&nw->type) != nw->type.rows * nw->type.n)
    return 0;
  for (int64_t r = 0; r < nw->type.rows; r++)
    if (ir_pos(g, w, r) != ir_pos(g, v, r)) return 0;
  for (fhjit_value u = 0; u < g->nnodes; u++)
    if (B->epi_of[u] == w) return 0;
  const ir_node *x = &g->nodes[nw->args[0]];
  return !(x->op == IR_AUTOMORPHISM && x->type.domain == FHJIT_DOMAIN_COEF);
}

/* The members' own plan (rows rows, as each member's step makes it) in
 * *p, and whether the group can run on it: a two-kernel plan (not a
 * cluster), kernel 0 a column kernel (the heads run it as it is), and
 * kernel 1, over the D members' rows in reduce form, one ntt_emit.c's
 * reduce mode takes. The reduce step runs these same kernels (group_plan):
 * the default plans depend on the row count (r62 2^16: N1 = 64 at 16
 * rows, 128 at 32), and kernel 1 must run the stages kernel 0 left. */
static int plans_fit(const an_build *B, const ir_node *n, int64_t rows, int D, lw_ntt_plan *p) {
  const fhjit_graph *g = B->g;
  if (lw_ntt_plan_make(g->ctx, g->radix, (ir_ntt_kind)n->attr[0], ir_ntt_log2(n->type.n), rows,
                       rows, p))
    return 0;
  lw_ntt_plan r = *p;
  r.k[1].blocks *= D;
  lw_ntt_plan_reduce(&r, D, rows, 0);
  const lw_ntt_kplan *k = &r.k[1];
  return p->nkernels == 2 && r.nkernels == 2 && !p->k[0].cluster && p->k[0].cols && !k->cols &&
         !k->cluster && k->staged_store && k->post && k->log_c <= k->log_subs;
}

/* The group led by anchor v, or NULL: v and the later anchors that join
 * it, when at least two do and they feed one sum (lw_mix_sum_target). By
 * default only where a thread's words of the members fit 32 bytes a
 * position (ipfuse's rule: the reduce kernel keeps them all). */
static an_ipntt *form_group(an_build *B, fhjit_value v) {
  const fhjit_graph *g = B->g;
  const lw_ntt_tuning tu = B->tune;
  an_ipntt G = {.first = v, .sum = -1};
  for (fhjit_value w = v; w < g->nnodes && G.D < LW_MAX_REG; w++)
    if (joins(B, v, w)) G.member[G.D++] = w;
  int64_t ws = g->radix == FHJIT_R32 ? 4 : 8;
  if (G.D < 2 || (tu.ipntt < 0 && G.D * ws > 32)) return NULL;
  const ir_node *n = &g->nodes[v];
  if (!plans_fit(B, n, n->type.rows, G.D, &G.plan)) return NULL;
  G.sum = lw_mix_sum_target(B, G.member, G.D);
  if (G.sum < 0 || B->st) return NULL;
  an_ipntt *r = malloc(sizeof *r);
  if (!r) {
    lw_mix_oom(B);
    return NULL;
  }
  *r = G;
  r->last = G.member[G.D - 1];
  r->tu = lw_mix_part(&n->type, G.D * n->type.rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  r->cols = lw_mix_new_cols(B, G.D * n->type.rows);
  for (int k = 0; k < G.D && r->cols; k++) {
    r->urow[k] = k * n->type.rows;
    for (int64_t row = 0; row < n->type.rows; row++)
      r->cols[r->urow[k] + row] = (int32_t)ir_pos(g, G.member[k], row);
  }
  r->u = lw_mix_scratch_for(B, &r->tu);
  for (int k = 0; k < G.D; k++) B->ipg[G.member[k]] = r; /* owned by its first member */
  return B->st ? NULL : r;
}

int lw_ipntt_head(an_build *B, fhjit_value v, an_buf *dst, int64_t *dst_off) {
  if (B->tune.ipntt == 0 || B->st) return 0;
  an_ipntt *r = B->ipg[v] ? B->ipg[v] : form_group(B, v);
  if (!r) return 0;
  int k = 0;
  while (r->member[k] != v) k++;
  *dst = r->u;
  *dst_off = r->urow[k] * B->g->nodes[v].type.n;
  return 1;
}

/* Two-kernel plans whose kernels wait for whole kernels: per-row counts
 * (pdl 2) link a plan's own two kernels, which the group splits. */
static void whole_waits(lw_ntt_plan *p) {
  for (int j = 0; j < p->nkernels; j++)
    if (p->k[j].pdl == 2) p->k[j].pdl = 1;
}

void lw_ipntt_head_done(an_build *B, an_step *s, fhjit_value v) {
  an_ipntt *r = B->ipg[v];
  int step = (int)(s - B->p->steps);
  s->head = 1;
  s->plan.dst_offset = s->dst_off;
  whole_waits(&s->plan);
  /* right after the previous head: both run at once (late_entry) */
  s->plan.k[0].late_entry = v != r->first && r->last_step == step - 1 && B->tune.latewait != 0;
  r->last_step = step;
  if (v != r->last || B->st) return;
  /* the members' last kernel, in reduce form, reading their words in u */
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  fhjit_layout dense;
  fhjit_dense_layout(&r->tu, &dense);
  an_step *red = lw_mix_ntt_step(B, v, (ir_ntt_kind)n->attr[0], &r->tu, r->cols, r->u, &dense,
                                 n->args[1], r->u);
  if (!red || B->st) return;
  /* the members' kernels over all their rows (plans_fit) */
  for (int j = 0; j < 2; j++) {
    red->plan.k[j] = r->plan.k[j];
    red->plan.k[j].blocks *= r->D;
  }
  red->heads = r->D;
  red->plan.k[0].in_place = 1; /* not run: its kernel 0 is the heads' */
  int64_t zero[LW_MAX_REG] = {0};
  lw_mix_members m = {.sum = r->sum, .D = r->D, .member = r->member, .s0 = zero, .nd = zero,
                      .urow = r->urow, .d = -1};
  an_buf out = lw_step_home(B, r->sum);
  if (out.kind < 0) return;
  lw_mix_reduce_step(B, red, &m, out);
  whole_waits(&red->plan);
}

void lw_ipntt_free(an_build *B) {
  /* the other members' pointers dropped before their first frees it */
  for (int32_t v = 0; B->ipg && v < B->g->nnodes; v++)
    if (B->ipg[v] && B->ipg[v]->first != v) B->ipg[v] = NULL;
  for (int32_t v = 0; B->ipg && v < B->g->nnodes; v++) free(B->ipg[v]);
  free(B->ipg);
}
