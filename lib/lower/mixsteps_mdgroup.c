/* mixsteps_mdgroup.c: moddowns planned together (an_mdgroup, steps.h), for
 * moddown's steps (mixsteps.c): which moddowns form a group (md_group) and
 * the steps their first member plans for all (md_first). */
#include <stdlib.h>

#include "lower/mixsteps.h"

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
  if (!lw_mix_private_operand(B, w, a, 0)) return 0;
  return B->tune.mixfuse == 0 || (B->tune.mixfuse != 1 && !lw_mix_fewer_bytes(B, a));
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
an_mdgroup *lw_mix_md_group(an_build *B, fhjit_value v) {
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
    if (!lw_mix_same_shape(&g->nodes[aw].type, ta)) continue;
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
    lw_mix_oom(B);
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
 * the kernel's grid is row-major (lower_body.c, decompose: a group's index i
 * is innermost, then the row, so consecutive blocks cover one row) and
 * each thread computes every member's words of its positions, so a row
 * of a raised digit is read from DRAM once and by the other members from
 * the L2 (r32 dnum 4, 8 rotations at N = 2^16: about 440 MB less than a
 * kernel per rotation). */
void lw_mix_md_first(an_build *B, an_mdgroup *G) {
  fhjit_graph *g = B->g;
  const int R = G->nmembers;
  const fhjit_type *ta = &g->nodes[g->nodes[G->first].args[0]].type;
  const int64_t P = ta->comps > 0 ? ta->comps : 1;
  fhjit_type tb = *ta; /* all the operands: R P polynomials */
  tb.comps = 0;
  tb.nbatch = 1;
  tb.batch[0] = R * P;
  G->swords = fhjit_type_elements(ta);
  G->sbuf = lw_mix_scratch_for(B, &tb);
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
      lw_mix_oom(B);
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
  fhjit_type t1 = lw_mix_part(&tb, K, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c1 = lw_mix_cols_of(B, a, l, K);
  if (G->intt) {
    fhjit_layout lv;
    fhjit_dense_layout(&tb, &lv);
    lv.offset += l * lv.row_stride;
    G->s1 = lw_mix_scratch_for(B, &t1);
    G->s1words = P * K * ta->n;
    lw_mix_ntt_step(B, G->first, IR_NTT_TO_MONT, &t1, c1, G->sbuf, &lv, n->args[2], G->s1);
  }
  /* mdbconv: their conversion to Q by one kernel (one table: more
   * polynomials) into s2. Why: a member's kernel converts 2 polynomials,
   * one under-occupied wave (H200, r32 12 -> 48 rows: ~19 us) */
  if (G->bconv && !B->st) {
    fhjit_type t2 = lw_mix_part(&tb, l, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
    fhjit_layout d1;
    fhjit_dense_layout(&t1, &d1);
    G->s2 = lw_mix_scratch_for(B, &t2);
    G->s2words = P * l * ta->n;
    lw_mix_bconv_step(B, G->first, 0, &t1, c1, G->s1, &d1, l, lw_mix_cols_of(B, a, 0, l),
                      n->args[3], 0, G->s2);
  }
}
