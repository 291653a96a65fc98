/* mixsteps_ipfuse.c: the modups of one operand planned together (a key
 * switch's digits; an_intt, steps.h), for modup's steps
 * (mixsteps_modup.c): the inverse NTT they share (shared_intt), their
 * conversions and one forward NTT of them all (batched_fwd,
 * batched_alias), and the inner product computed in that NTT's last
 * kernel (ipfuse: ipfuse_target, ipfuse_step; ipacc_fold). Why each pays:
 * mixsteps_modup.c's top comment. */
#include <stdlib.h>
#include <string.h>

#include "lower/mixsteps.h"

/* The inverse NTT modup v shares with the other modups of its operand
 * (an_intt, steps.h), or NULL: v transforms its digit alone. The first of
 * them in node order (v, when none has a record yet) makes the record for
 * all: the live modups of the same operand and twiddle table, output
 * shape, consecutive digits, not yet planned, when there are at least two
 * (one modup keeps its own plan). stored: v's operand is computed in the
 * prologue and stored (lw_mix_modup_steps); a member that disagrees with the
 * first transforms its digit alone. */
an_intt *lw_mix_shared_intt(an_build *B, fhjit_value v, int stored) {
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
        B->intt[w] || !lw_mix_same_shape(&nw->type, &n->type) ||
        !(nd = lw_mix_digit_run(B, w, &s0)))
      continue;
    if (lo < 0 || s0 < lo) lo = s0;
    if (s0 + nd > hi) hi = s0 + nd;
    count++;
  }
  if (count < 2 || B->st) return NULL;
  r = calloc(1, sizeof *r);
  if (!r) {
    lw_mix_oom(B);
    return NULL;
  }
  *r = (an_intt){.first = v, .d = d, .tw = n->args[2], .lo = lo, .stored = stored, .sum = -1};
  r->t = lw_mix_part(&g->nodes[d].type, hi - lo, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  for (fhjit_value w = v; w < g->nnodes && !B->st; w++) {
    const ir_node *nw = &g->nodes[w];
    int64_t s0;
    if (B->live[w] && nw->op == IR_MODUP && nw->args[0] == d && nw->args[2] == n->args[2] &&
        !B->intt[w] && lw_mix_same_shape(&nw->type, &n->type) && lw_mix_digit_run(B, w, &s0))
      B->intt[w] = r; /* r is owned (freed) by B->intt[v], its first */
  }
  r->cols = lw_mix_cols_of(B, d, lo, hi - lo);
  r->buf = lw_mix_scratch_for(B, &r->t);
  /* one forward NTT for all: every member read in place (an alias; a
   * gathered or copied member keeps the per-digit transforms of all),
   * one forward table; ntt_plan digitfwd=0 keeps them per digit (to time
   * both: the batch costs the r62 key switch 86 MB more scratch) */
  const lw_ntt_tuning tu = B->tune;
  r->fwd = tu.digitfwd != 0;
  for (fhjit_value w = v; w < g->nnodes; w++)
    if (B->intt[w] == r) {
      r->nmembers++;
      r->fwd &= lw_mix_read_in_place(B, w) && g->nodes[w].args[1] == n->args[1];
    }
  if (r->fwd) {
    r->member = malloc(sizeof *r->member * (size_t)r->nmembers);
    r->urow = malloc(sizeof *r->urow * (size_t)r->nmembers);
    r->ucols = calloc((size_t)r->nmembers, sizeof *r->ucols);
    if (!r->member || !r->urow || !r->ucols) lw_mix_oom(B);
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
fhjit_value lw_mix_ipfuse_target(an_build *B, an_intt *r) {
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
  return lw_mix_sum_target(B, r->member, r->nmembers);
}

/* The sum S that members[0..D) feed, as ipfuse_target says, or -1. */
fhjit_value lw_mix_sum_target(an_build *B, const fhjit_value *member, int D) {
  fhjit_graph *g = B->g;
  size_t nn = (size_t)g->nnodes;
  char *cone = malloc(nn), *mem = calloc(nn, 1);
  fhjit_value found = -1, last = 0;
  if (!cone || !mem) {
    free(cone);
    free(mem);
    lw_mix_oom(B);
    return -1;
  }
  for (int k = 0; k < D; k++) {
    mem[member[k]] = 1;
    if (member[k] > last) last = member[k];
    if (g->nodes[member[k]].type.comps > 1) last = g->nnodes; /* read as one word */
  }
  const fhjit_value m0 = member[0];
  const int64_t n0 = g->nodes[m0].type.n;
  for (fhjit_value S = last + 1; S < g->nnodes && found < 0; S++) {
    const ir_node *ns = &g->nodes[S];
    if (!B->live[S] || ns->op == IR_INPUT || B->where[S].kind >= 0 || B->alias[S] ||
        !ir_op_is_elementwise(ns->op) || ns->type.rows != g->nodes[m0].type.rows ||
        ns->type.n != n0 || ns->type.nbatch > 0 || ns->type.comps > 3)
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
    for (int k = 0; k < D && ok; k++) ok = cone[member[k]];
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
static int ipacc_fold(an_build *B, const fhjit_value *member, int D, fhjit_value S,
                      fhjit_value *chain, fhjit_value *term, int *at) {
  fhjit_graph *g = B->g;
  if (D < 1 || D > 30) return 0;
  uint32_t *mask = calloc((size_t)S + 1, sizeof *mask);
  if (!mask) {
    lw_mix_oom(B);
    return 0;
  }
  for (fhjit_value w = 0; w <= S; w++) {
    const ir_node *n = &g->nodes[w];
    int k = -1;
    for (int j = 0; j < D; j++)
      if (member[j] == w) k = j;
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
         lw_mix_same_shape(&n->type, ts);
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
    ok = mask[cur] == 1 && cur != member[0] && lw_mix_same_shape(&g->nodes[cur].type, ts);
  }
  free(mask);
  return ok;
}

/* The reduce form of batched forward NTT step s (ipfuse): member values in
 * registers, r->sum computed in the last kernel into out. */
static void ipfuse_step(an_build *B, an_step *s, an_intt *r, an_buf out) {
  int64_t s0[LW_MAX_REG], nd[LW_MAX_REG];
  for (int k = 0; k < r->nmembers && !B->st; k++) nd[k] = lw_mix_digit_run(B, r->member[k], &s0[k]);
  if (B->st) return;
  lw_mix_members m = {.sum = r->sum, .D = r->nmembers, .member = r->member, .s0 = s0, .nd = nd,
                      .urow = r->urow, .d = r->d, .dbuf = r->dbuf, .dview = r->dview};
  lw_mix_reduce_step(B, s, &m, out);
}

/* The members as register inputs mv[] of the epilogue's sub-graph (their
 * registers, rows and buffer rows in s->red); 0 on failure. */
static int reduce_member_inputs(an_build *B, an_step *s, const lw_mix_members *r,
                                fhjit_graph *sub, an_buf *in, int32_t *nin, fhjit_value *mv) {
  const fhjit_graph *g = B->g;
  lw_ntt_reduce *red = &s->red;
  for (int k = 0; k < r->D && !B->st; k++) {
    fhjit_value w = r->member[k];
    const fhjit_type *tw = &g->nodes[w].type;
    mv[k] = lw_mix_sub_input(sub, NULL, tw, lw_mix_cols_of(B, w, 0, tw->rows), NULL);
    if (mv[k] == FHJIT_NO_VALUE) return 0;
    red->reg[k] = *nin;
    in[(*nin)++] = s->dst; /* a register input: an unused pointer */
    red->s0[k] = r->s0[k];
    red->nd[k] = r->nd[k];
    red->urow[k] = r->urow[k];
  }
  return 1;
}

/* ipacc's epilogue: the partial sum in registers (S's type: every partial
 * sum's), then the terms' cones at once (their leaves shared), then result
 * k: T_0, or the graph's fold step k over (acc, T_k) in its argument order.
 * Result 0, or FHJIT_NO_VALUE. */
static fhjit_value reduce_fold_results(an_build *B, an_step *s, const lw_mix_members *r,
                                       fhjit_graph *sub, an_buf *in, int32_t *nin,
                                       const fhjit_value *mv, const fhjit_value *chain,
                                       const fhjit_value *term, const int *at) {
  const fhjit_graph *g = B->g;
  int D = r->D;
  const fhjit_type *ts = &g->nodes[r->sum].type;
  fhjit_value av = lw_mix_sub_input(sub, NULL, ts, lw_mix_cols_of(B, r->sum, 0, ts->rows), NULL);
  fhjit_value tv[LW_MAX_REG], res = FHJIT_NO_VALUE;
  if (av != FHJIT_NO_VALUE) {
    s->red.acc_reg = *nin;
    in[(*nin)++] = s->dst;
    lw_step_clone_multi(B, sub, term, D, r->member, mv, D, in, nin, tv);
  }
  int made = av != FHJIT_NO_VALUE && !B->st;
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
  s->red.acc = ts->comps > 1 ? ts->comps : 1;
  return made ? res : FHJIT_NO_VALUE;
}

/* The reduce kernel's facts (s->red, s->plan) and its one epilogue. */
static void reduce_finish(an_build *B, an_step *s, const lw_mix_members *r, fhjit_graph *sub,
                          an_buf *in, int32_t nin, an_buf out) {
  lw_ntt_reduce *red = &s->red;
  red->d_input = -1;
  if (r->d >= 0) {
    red->d_input = nin;
    in[nin++] = r->dbuf;
  }
  red->members = r->D;
  red->out_rows = B->g->nodes[r->member[0]].type.rows;
  red->d_offset = r->dview.offset;
  red->d_row_stride = r->dview.row_stride;
  red->d_index_stride = r->dview.index_stride;
  lw_ntt_plan_reduce(&s->plan, r->D, red->out_rows, red->acc);
  s->epi_sub[0] = sub;
  s->epi_in[0] = in;
  s->epi_reg[0] = -1;
  s->epi_out[0] = out;
  s->nepi = 1;
  s->skip_store = 1;
  B->where[r->sum] = out;
}

void lw_mix_reduce_step(an_build *B, an_step *s, const lw_mix_members *r, an_buf out) {
  fhjit_graph *g = B->g;
  int D = r->D;
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, "epi", B->p->nsteps - 1, 0);
  fhjit_graph *sub = fhjit_graph_create(B->p->sctx, name, g->radix);
  an_buf *in = malloc(sizeof *in * (size_t)(2 * g->nnodes + 3 + D));
  if (!sub || !in) {
    free(in);
    lw_mix_oom(B);
    return;
  }
  memset(&s->red, 0, sizeof s->red);
  /* ipacc (ntt_plan ipacc=1; off by default: measured slower, r32
   * 299 us against 281.5, r62 1006 against 600 with ipfuse=0): a left
   * fold is accumulated member by member */
  fhjit_value chain[LW_MAX_REG], term[LW_MAX_REG];
  int at[LW_MAX_REG];
  int acc = B->tune.ipacc > 0 && D + 1 <= LW_MAX_REG &&
            ipacc_fold(B, r->member, D, r->sum, chain, term, at);
  int32_t nin = 0;
  fhjit_value mv[LW_MAX_REG];
  int made = reduce_member_inputs(B, s, r, sub, in, &nin, mv);
  fhjit_value res = FHJIT_NO_VALUE;
  if (acc && !B->st && made) {
    res = reduce_fold_results(B, s, r, sub, in, &nin, mv, chain, term, at);
  } else if (!B->st && made) {
    res = lw_step_clone_over_n(B, sub, r->sum, r->member, mv, D, in, &nin);
    if (res != FHJIT_NO_VALUE && fhjit_output(sub, res, NULL)) res = FHJIT_NO_VALUE;
  }
  /* the operand (its own rows of each member), unused by the sub-graph;
   * none where no member has rows of its own (d < 0: ipntt) */
  fhjit_value dx = res;
  if (r->d >= 0 && res != FHJIT_NO_VALUE) {
    const ir_node *dn = &g->nodes[r->d];
    fhjit_type tdd = dn->type;
    if (dn->op == IR_INPUT) tdd.domain = dn->decl.domain, tdd.form = dn->decl.form;
    dx = lw_mix_sub_input(sub, NULL, &tdd, lw_mix_cols_of(B, r->d, 0, tdd.rows), &r->dview);
  }
  if (B->st || dx == FHJIT_NO_VALUE || fhjit_bind(sub)) {
    free(in);
    lw_step_sub_error(B, "the inner product of a batched forward NTT (ipfuse)");
    return;
  }
  reduce_finish(B, s, r, sub, in, nin, out);
}

/* Rows of each member's converted rows in the batched buffer (r->urow);
 * returns their total. */
static int64_t batched_rows(an_build *B, an_intt *r) {
  const fhjit_graph *g = B->g;
  int64_t rows = 0;
  for (int k = 0; k < r->nmembers && !B->st; k++) {
    int64_t s0, nd = lw_mix_digit_run(B, r->member[k], &s0);
    r->urow[k] = rows;
    rows += g->nodes[r->member[k]].type.rows - nd;
  }
  return rows;
}

/* Each member's chain positions of its converted rows (r->ucols), copied
 * into call at its rows; 0 on failure (B->st set). */
static int batched_cols(an_build *B, an_intt *r, int32_t *call) {
  const fhjit_graph *g = B->g;
  for (int k = 0; k < r->nmembers && !B->st; k++) {
    fhjit_value w = r->member[k];
    const ir_node *nw = &g->nodes[w];
    int64_t s0, nd = lw_mix_digit_run(B, w, &s0), m = nw->type.rows - nd;
    int32_t *c2 = lw_mix_new_cols(B, m);
    for (int64_t o = 0, j = 0; c2 && o < nw->type.rows; o++)
      if (o < s0 || o >= s0 + nd) c2[j++] = (int32_t)ir_pos(g, w, o);
    if (!c2) return 0;
    r->ucols[k] = c2;
    memcpy(call + r->urow[k], c2, sizeof *c2 * (size_t)m);
  }
  return !B->st;
}

/* The conversions into s2 (rows in all): with ntt_plan bconvbatch (default
 * 1) the members of one shape (nd -> m rows; a short last digit has its
 * own) in one kernel, up to LW_BCONV_MAX_DIGITS a kernel, in member order;
 * each digit reads its rows of the shared transform (its own offset,
 * table, columns) and writes its rows of s2. Why: at N = 2^16 one digit's
 * kernel is one under-occupied wave (H200: r32 12 -> 48 12.5 us, r62 5 ->
 * 35 13.5 us, against multiply-accumulate floors of 7.6 and 11.4); the
 * digits' blocks together fill the GPU, and dnum - 1 launches fewer. */
static void batched_conversions(an_build *B, an_intt *r, an_buf s2, int64_t rows) {
  const fhjit_graph *g = B->g;
  const fhjit_type *td = &g->nodes[r->d].type;
  int batch = B->tune.bconvbatch != 0;
  char *done = calloc((size_t)r->nmembers, 1);
  if (!done) lw_mix_oom(B);
  for (int k = 0; k < r->nmembers && !B->st; k++) {
    if (done[k]) continue;
    fhjit_value w = r->member[k];
    const ir_node *nw = &g->nodes[w];
    int64_t s0, nd = lw_mix_digit_run(B, w, &s0), m = nw->type.rows - nd;
    fhjit_type t1 = lw_mix_part(td, nd, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
    fhjit_layout l1;
    fhjit_dense_layout(&r->t, &l1);
    l1.offset += (s0 - r->lo) * l1.row_stride; /* the digit's rows of the shared transform */
    bconv_more more[LW_BCONV_MAX_DIGITS - 1];
    int nmore = 0;
    for (int j = k + 1; batch && j < r->nmembers && nmore < LW_BCONV_MAX_DIGITS - 1; j++) {
      fhjit_value x = r->member[j];
      int64_t xs0, xnd = lw_mix_digit_run(B, x, &xs0), xm = g->nodes[x].type.rows - xnd;
      if (done[j] || xnd != nd || xm != m) continue;
      done[j] = 1;
      more[nmore++] = (bconv_more){l1.offset - (s0 - xs0) * l1.row_stride, r->urow[j] * td->n,
                                   lw_mix_cols_of(B, r->d, xs0, nd), r->ucols[j],
                                   g->nodes[x].args[3]};
    }
    lw_mix_bconv_step_digits(B, w, 0, &t1, lw_mix_cols_of(B, r->d, s0, nd), r->buf, &l1, m,
                             r->ucols[k], nw->args[3], 0, s2, r->urow[k] * td->n, rows * td->n,
                             more, nmore);
  }
  free(done);
}

/* The members' conversions and their one forward NTT (an_intt's fwd), at
 * the first member v's steps, after the shared inverse NTT: member k's m_k
 * converted rows go to rows [urow[k], urow[k] + m_k) of one buffer (of
 * every polynomial), all of them through one forward NTT into r->ubuf.
 * Why: a digit's forward NTT has m_k rows (r62: 35), one of all the
 * digits' (r62 dnum 7: 245) launches enough blocks to fill the GPU and
 * costs one launch pair (measured on the H200, r62 N = 2^16: 1.2 us per
 * row in the digit's NTT, about 1.0 in a bulk one). */
void lw_mix_batched_fwd(an_build *B, fhjit_value v, an_intt *r) {
  fhjit_graph *g = B->g;
  const fhjit_type *td = &g->nodes[r->d].type;
  int64_t rows = batched_rows(B, r);
  if (B->st) return;
  fhjit_type t2 = lw_mix_part(td, rows, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  r->tu = lw_mix_part(td, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  an_buf s2 = lw_mix_scratch_for(B, &t2);
  int32_t *call = lw_mix_new_cols(B, rows);
  if (!call || !batched_cols(B, r, call)) return;
  batched_conversions(B, r, s2, rows);
  if (B->st) return;
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
    an_step *s = lw_mix_ntt_step(B, v, IR_NTT_MONT_TO_NTT, &r->tu, call, s2, &dense,
                                 g->nodes[v].args[1], r->ubuf);
    if (s && !B->st) ipfuse_step(B, s, r, out);
    if (s && !B->st) {
      if (s->plan.nkernels == 2) s->plan.k[0].in_place = 1;
      else s->dst = out; /* unused (never stored), but not the source */
    }
    return;
  }
  r->ubuf = lw_mix_scratch_for(B, &r->tu);
  lw_mix_ntt_step(B, v, IR_NTT_MONT_TO_NTT, &r->tu, call, s2, &dense, g->nodes[v].args[1], r->ubuf);
}

/* Member v's alias of the batched forward NTT: its converted rows at rows
 * urow[k] of r->ubuf, its digit's rows in the operand. */
void lw_mix_batched_alias(an_build *B, fhjit_value v, an_intt *r) {
  const fhjit_graph *g = B->g;
  const fhjit_type *td = &g->nodes[r->d].type;
  int k = 0;
  while (k < r->nmembers && r->member[k] != v) k++;
  SP_ASSERT(k < r->nmembers);
  int64_t s0, nd = lw_mix_digit_run(B, v, &s0);
  an_alias *al = calloc(1, sizeof *al);
  if (!al || B->st) {
    free(al);
    lw_mix_oom(B);
    return;
  }
  *al = (an_alias){.u = r->ubuf, .tu = lw_mix_part(td, g->nodes[v].type.rows - nd,
                                                    FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT),
                   .ucols = r->ucols[k], .has_uview = 1, .d = r->d, .dbuf = r->dbuf,
                   .dview = r->dview, .dcols = lw_mix_cols_of(B, r->d, 0, td->rows), .s0 = s0,
                   .nd = nd, .stored = r->stored};
  fhjit_dense_layout(&r->tu, &al->uview);
  al->uview.offset += r->urow[k] * al->uview.row_stride;
  B->alias[v] = al;
}
