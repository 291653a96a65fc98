/* mixsteps_modup.c: the steps of modup (SPEC 7), for the step planner
 * (mixsteps.c's lw_steps_s7): the digit's inverse NTT, the conversion to the
 * other rows, their forward NTT, and where its readers find the rows.
 *
 * Read only by pointwise work, no gather: an alias (steps.h) the readers load
 * where the rows lie; else a gather of those rows and the digit's own into
 * the output order.
 *
 * Several modups of one operand (a key switch's digits) share one inverse NTT
 * over the rows of all their digits, at the first one's steps (shared_intt,
 * an_intt): why: a digit has few rows (r62: 5 of 35), so its inverse NTT
 * launches few blocks and is latency-bound; measured on the H200 (r62, N =
 * 2^16, dnum 7) 13.3 us per digit in its 2 kernels, 93 us for the 7, where
 * one over the 35 rows takes about 35 us. Each digit's conversion reads its
 * rows of that buffer; the digit's own NTT rows (the alias, the copy, the
 * gather) are still read from the operand. One modup keeps its own inverse
 * NTT.
 *
 * When every modup of such a group is read in place (aliases) and they share
 * the forward table, the first one also emits every member's conversion, each
 * writing its rows of one buffer (digit after digit), and ONE forward NTT
 * over all of them (batched_fwd); each alias reads its rows there. Why: a
 * digit's 35-row forward NTT (r62) ran at 1.2 us a row on the H200 (N = 2^16,
 * 42.1 us, 295 us for the 7), a bulk one at about 1.0; and 2 (dnum - 1)
 * launches fewer. A group with a gathered or copied member keeps a forward
 * NTT per digit.
 *
 * The members' conversions of one shape (nd -> m rows) are one kernel
 * (ntt_plan bconvbatch, default 1; 0: one per digit): a block converts one
 * digit with its own table (an argument of its own, the step's in[]), rows
 * and columns (lw_bconv_plan.digits). Why: at N = 2^16 one digit's kernel is
 * one under-occupied wave (H200: r32 12 -> 48 12.5 us, r62 5 -> 35 13.5 us,
 * floors 7.6 and 11.4); all the digits' blocks together fill the GPU, and
 * dnum - 1 launches fewer.
 *
 * ipfuse: when the digits' only readers are element-wise work summing them (a
 * key switch's digit products and add_lazy chain S: ipfuse_target), that
 * NTT's kernel 0 transforms the conversions' buffer in place and its last
 * kernel is a reduce kernel (lw_ntt_plan_reduce, ntt_emit_fuse.c): a grid
 * over S's output rows, each block transforming its row of every digit in
 * turn (the digit's own rows loaded from the operand), the words kept in
 * registers, then S's cone (lw_step_clone_over_n, the digits as register
 * inputs, lw_build_eval_regs) into S's buffer; the digits get no alias and
 * are never stored, moddown reads S. Why: the stored digits (r62 147 MB) were
 * read back once by the inner product's pointwise kernel, which ran at copy
 * bandwidth (H200, ncu: 113.7 us, 479 MB); r32's moddown recomputed S in its
 * kernels, reading each digit once per component. Hoisted rotations (digits
 * read under automorphisms) keep the stored digits; ntt_plan ipfuse=0 too. By
 * default only for at most 32 bytes of member words a position (r32 up to 8
 * digits, r62 up to 4): measured r32 dnum 4 281 us against 322, r62 dnum 7
 * 1155 against 600 (ipfuse_target).
 *
 * With ntt_plan ipacc=1 (off by default: slower on the H200, r32 dnum 4 299
 * us against 281.5, r62 dnum 7 with ipfuse=1 1006 against 600 unfused), where
 * S is a left fold over the digits in their order (ipacc_fold), each digit is
 * folded into S as its body produces its words (one result of the epilogue
 * per digit), so a thread keeps S's components, not every digit's words (r62
 * dnum 7: 104 registers against 168). */
#include <stdlib.h>
#include <string.h>

#include "lower/mixsteps.h"

/* A new pointwise step of nin inputs and one output, its sub-graph
 * created (*sub); NULL after an error. */
static an_step *pw_step(an_build *B, int nin, fhjit_graph **sub) {
  an_step *s = lw_step_new(B);
  if (!s) return NULL;
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, "pw", B->p->nsteps - 1, -1);
  *sub = s->sub = fhjit_graph_create(B->p->sctx, name, B->g->radix);
  s->in = malloc(sizeof *s->in * (size_t)nin);
  s->out = malloc(sizeof *s->out);
  if (!s->sub || !s->in || !s->out) {
    lw_mix_oom(B);
    return NULL;
  }
  return s;
}

/* Modup's output in chain order: rows [0, s0) and [s0, m) of the
 * converted rows u around the digit's own rows d (a gather kernel). */
static void modup_gather(an_build *B, an_buf ub, const fhjit_type *tu, const int32_t *cu,
                         an_buf db, const fhjit_layout *dl, const fhjit_type *td,
                         const int32_t *cd, int64_t s0, an_buf out) {
  fhjit_graph *sub;
  an_step *s = pw_step(B, 2, &sub);
  if (!s) return;
  fhjit_value u = lw_mix_sub_input(sub, "u", tu, cu, NULL);
  fhjit_value d = u == FHJIT_NO_VALUE ? u : lw_mix_sub_input(sub, "d", td, cd, dl);
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
}

/* Modup's digit rows d (NTT domain, unchanged) copied to rows [s0, s0 +
 * nd) of out (a pointwise kernel of rows(d), written dst_off words into
 * out). */
static void modup_copy(an_build *B, an_buf db, const fhjit_layout *dl, const fhjit_type *td,
                       const int32_t *cd, an_buf out, int64_t dst_off) {
  fhjit_graph *sub;
  an_step *s = pw_step(B, 1, &sub);
  if (!s) return;
  fhjit_value d = lw_mix_sub_input(sub, "d", td, cd, dl);
  fhjit_value r = d == FHJIT_NO_VALUE ? d : fhjit_rows(sub, d, 0, td->rows);
  if (r == FHJIT_NO_VALUE || fhjit_output(sub, r, NULL) || fhjit_bind(sub)) {
    lw_step_sub_error(B, "the digit copy of modup");
    return;
  }
  s->in[0] = db;
  s->out[0] = out;
  s->dst_off = dst_off;
}

/* One modup as its steps are planned: the operand d's buffer and view
 * (the whole operand), its digit's rows [s0, s0 + nd), the m converted
 * rows. */
typedef struct modup_run {
  fhjit_value v, d;
  const fhjit_type *td;
  int64_t s0, nd, m;
  int stored; /* d computed by the inverse NTT's prologue, stored into db */
  an_buf db;
  fhjit_layout dl;
} modup_run;

/* Where the inverse NTT reads the operand: a computed operand read only by
 * modups read in place is computed by each digit's inverse NTT (a
 * prologue) and stored into one buffer of the operand, where the modups'
 * readers find it; nothing computes the operand beforehand. Else its
 * view. 0 on failure. */
static int modup_operand(an_build *B, modup_run *r) {
  fhjit_graph *g = B->g;
  r->db = (an_buf){-1, 0};
  r->stored = lw_mix_read_in_place(B, r->v) && lw_mix_private_operand(B, r->v, r->d, 1);
  if (!r->stored) return lw_mix_view_of(B, r->d, &r->db, &r->dl);
  for (int32_t w = 0; w < g->nnodes && r->db.kind < 0; w++)
    if (B->alias[w] && B->alias[w]->d == r->d && B->alias[w]->stored) r->db = B->alias[w]->dbuf;
  if (r->db.kind < 0) r->db = lw_mix_scratch_for(B, r->td);
  fhjit_dense_layout(r->td, &r->dl);
  return 1;
}

/* The first modup of a shared inverse NTT: the rows of all the modups'
 * digits to coefficient-Montgomery form at once, one NTT of many rows
 * instead of one of a few rows per digit, each latency-bound (few
 * blocks); with a batched forward NTT also every member's conversion and
 * that NTT. 1 when that completes v's steps. */
static int modup_shared_first(an_build *B, const modup_run *r, an_intt *sh) {
  const ir_node *n = &B->g->nodes[r->v];
  fhjit_layout lu = r->dl;
  lu.offset += sh->lo * r->dl.row_stride;
  if (r->stored)
    lw_mix_prologue_ntt_step(B, r->v, IR_NTT_TO_MONT, &sh->t, sh->cols, r->d, sh->lo, n->args[2],
                             sh->buf, r->db);
  else lw_mix_ntt_step(B, r->v, IR_NTT_TO_MONT, &sh->t, sh->cols, r->db, &lu, n->args[2], sh->buf);
  sh->done = 1;
  if (!sh->fwd) return 0;
  sh->dbuf = r->db;
  sh->dview = r->dl; /* the whole operand */
  sh->sum = lw_mix_ipfuse_target(B, sh);
  lw_mix_batched_fwd(B, r->v, sh);
  if (!B->st && sh->sum < 0) lw_mix_batched_alias(B, r->v, sh);
  return 1;
}

/* Step 1: the digit in coefficient-Montgomery form (type t1, columns c1),
 * in buffer *s1 through view *l1: the shared transform's rows, or an NTT
 * of its own (digit_view: the digit's rows of the operand). */
static void modup_digit_coef(an_build *B, const modup_run *r, const an_intt *sh,
                             const fhjit_layout *digit_view, const fhjit_type *t1,
                             const int32_t *c1, an_buf *s1, fhjit_layout *l1) {
  const ir_node *n = &B->g->nodes[r->v];
  if (sh) {
    *s1 = sh->buf;
    fhjit_dense_layout(&sh->t, l1);
    l1->offset += (r->s0 - sh->lo) * l1->row_stride;
    return;
  }
  *s1 = lw_mix_scratch_for(B, t1);
  fhjit_dense_layout(t1, l1);
  if (r->stored)
    lw_mix_prologue_ntt_step(B, r->v, IR_NTT_TO_MONT, t1, c1, r->d, r->s0, n->args[2], *s1, r->db);
  else lw_mix_ntt_step(B, r->v, IR_NTT_TO_MONT, t1, c1, r->db, digit_view, n->args[2], *s1);
}

/* Step 3 when v is read in place: the converted rows (type t3, columns
 * c2, from s2) forward into scratch; the kernels that read v load its
 * rows from there and from d (an alias: no gather). */
static void modup_alias(an_build *B, const modup_run *r, const fhjit_type *t3, int32_t *c2,
                        an_buf s2, const fhjit_layout *dense) {
  const ir_node *n = &B->g->nodes[r->v];
  an_buf s3 = lw_mix_scratch_for(B, t3);
  lw_mix_ntt_step(B, r->v, IR_NTT_MONT_TO_NTT, t3, c2, s2, dense, n->args[1], s3);
  an_alias *al = calloc(1, sizeof *al);
  if (!al) {
    lw_mix_oom(B);
    return;
  }
  if (B->st) {
    free(al);
    return;
  }
  *al = (an_alias){.u = s3, .tu = *t3, .ucols = c2, .d = r->d, .dbuf = r->db, .dview = r->dl,
                   .dcols = lw_mix_cols_of(B, r->d, 0, r->td->rows), .s0 = r->s0, .nd = r->nd,
                   .stored = r->stored};
  B->alias[r->v] = al;
}

/* Steps 3 and 4 otherwise: the converted rows forward, then v in output
 * order in its home buffer. Where they are one run of the output (one
 * polynomial, the digit first or last) their forward NTT writes there and
 * only the digit's rows are copied (no gather of the whole output). */
static void modup_output(an_build *B, const modup_run *r, const fhjit_layout *digit_view,
                         const fhjit_type *t3, int32_t *c2, an_buf s2, const fhjit_layout *dense,
                         const int32_t *c1) {
  const ir_node *n = &B->g->nodes[r->v];
  const fhjit_type *td = r->td;
  fhjit_type tdig = lw_mix_part(td, r->nd, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  int64_t polys = fhjit_type_elements(td) / (td->rows * td->n);
  if (polys == 1 && (r->s0 == 0 || r->s0 + r->nd == n->type.rows)) {
    an_buf out = lw_step_home(B, r->v);
    if (B->st) return;
    an_step *s = lw_mix_ntt_step(B, r->v, IR_NTT_MONT_TO_NTT, t3, c2, s2, dense, n->args[1], out);
    if (!s || B->st) return;
    s->dst_off = s->plan.dst_offset = (r->s0 == 0 ? r->nd : 0) * td->n;
    modup_copy(B, r->db, digit_view, &tdig, c1, out, r->s0 * td->n);
    if (!B->st) B->where[r->v] = out;
    return;
  }
  an_buf s3 = lw_mix_scratch_for(B, t3);
  lw_mix_ntt_step(B, r->v, IR_NTT_MONT_TO_NTT, t3, c2, s2, dense, n->args[1], s3);
  an_buf out = lw_step_home(B, r->v);
  if (B->st) return;
  modup_gather(B, s3, t3, c2, r->db, digit_view, &tdig, c1, r->s0, out);
  if (!B->st) B->where[r->v] = out;
}

void lw_mix_modup_steps(an_build *B, fhjit_value v) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  modup_run r = {.v = v, .d = n->args[0], .td = &g->nodes[n->args[0]].type};
  r.nd = lw_mix_digit_run(B, v, &r.s0);
  if (B->st) return;
  if (!r.nd) {
    lw_mix_refuse(B, v, "the digit's rows are not consecutive rows of the operand; the lowering "
                        "supports consecutive digits only");
    return;
  }
  an_intt *done = B->intt[v];
  if (done && done->fwd && done->done) {
    /* the first member converted this digit and transformed its rows (and
     * with ipfuse read it in registers: no alias, nothing else reads it) */
    if (done->sum < 0) lw_mix_batched_alias(B, v, done);
    return;
  }
  r.m = n->type.rows - r.nd;
  if (!modup_operand(B, &r)) return;
  an_intt *sh = lw_mix_shared_intt(B, v, r.stored);
  if (B->st || (sh && !sh->done && modup_shared_first(B, &r, sh))) return;
  fhjit_layout digit_view = r.dl;
  digit_view.offset += r.s0 * r.dl.row_stride;
  /* 1. the digit to coefficient-Montgomery form */
  fhjit_type t1 = lw_mix_part(r.td, r.nd, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  int32_t *c1 = lw_mix_cols_of(B, r.d, r.s0, r.nd);
  an_buf s1;
  fhjit_layout l1;
  modup_digit_coef(B, &r, sh, &digit_view, &t1, c1, &s1, &l1);
  /* 2. converted to the other output rows, in output order */
  int32_t *c2 = lw_mix_new_cols(B, r.m);
  for (int64_t o = 0, k = 0; c2 && o < n->type.rows; o++)
    if (o < r.s0 || o >= r.s0 + r.nd) c2[k++] = (int32_t)ir_pos(g, v, o);
  fhjit_type t2 = lw_mix_part(r.td, r.m, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  an_buf s2 = lw_mix_scratch_for(B, &t2);
  lw_mix_bconv_step(B, v, 0, &t1, c1, s1, &l1, r.m, c2, n->args[3], 0, s2);
  /* 3. forward, 4. where the readers find the rows */
  fhjit_type t3 = lw_mix_part(r.td, r.m, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_layout dense;
  fhjit_dense_layout(&t2, &dense);
  if (lw_mix_read_in_place(B, v)) modup_alias(B, &r, &t3, c2, s2, &dense);
  else modup_output(B, &r, &digit_view, &t3, c2, s2, &dense, c1);
}
