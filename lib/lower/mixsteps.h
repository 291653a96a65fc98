/* mixsteps.h: what the step planner's files for SPEC section 7's ops share
 * (private to mixsteps.c and mixsteps_*.c; steps.h is the planner's
 * interface): mixsteps.c's helpers and step builders, and the entry points
 * of the parts of the ops' steps planned in mixsteps_modup.c,
 * mixsteps_ipfuse.c, mixsteps_mdgroup.c and mixsteps_mdrs.c. What each
 * does in full: the comment at its definition. */
#ifndef FHJIT_LOWER_MIXSTEPS_H
#define FHJIT_LOWER_MIXSTEPS_H

#include "lower/steps.h"

/* mixsteps.c: helpers */
/* Records that the lowering does not support v, saying why (the first
 * error only); returns the status. */
fhjit_status lw_mix_refuse(an_build *B, fhjit_value v, const char *why);
/* B->st set to out of memory (unless already set). */
void lw_mix_oom(an_build *B);
/* A column list of n entries owned by the plan; cols_of: the chain
 * positions of rows [first, first + n) of value v. */
int32_t *lw_mix_new_cols(an_build *B, int64_t n);
int32_t *lw_mix_cols_of(an_build *B, fhjit_value v, int64_t first, int64_t n);
/* New scratch of type t (kind -1 on failure). */
an_buf lw_mix_scratch_for(an_build *B, const fhjit_type *t);
/* The buffer and view holding v, materialising what must be. */
int lw_mix_view_of(an_build *B, fhjit_value v, an_buf *buf, fhjit_layout *l);
/* The type of value v's rows [.., count) in domain d and form f. */
fhjit_type lw_mix_part(const fhjit_type *t, int64_t count, fhjit_domain d, fhjit_form f);
/* A bound sub-graph input of type t on chain positions cols, bound to
 * layout l (NULL: dense). */
fhjit_value lw_mix_sub_input(fhjit_graph *sub, const char *name, const fhjit_type *t,
                             const int32_t *cols, const fhjit_layout *l);

/* Components of epilogue 0's output of reduce step s (its sum S); whether
 * a and b are one buffer (ipchain, ipsync). */
int64_t lw_mix_sum_comps(const an_step *s);
int lw_mix_same_buf(an_buf a, an_buf b);

/* mixsteps.c: step builders */
/* An NTT step of `kind` over a value of type t. */
an_step *lw_mix_ntt_step(an_build *B, fhjit_value v, ir_ntt_kind kind, const fhjit_type *t,
                         const int32_t *cols, an_buf src, const fhjit_layout *view,
                         fhjit_value tw, an_buf dst);
/* More digits of one conversion step (bconv_step_digits): digit k's
 * source view offset, table (from its first word), destination offset
 * and columns. */
typedef struct bconv_more {
  int64_t src_offset, dst_offset;
  const int32_t *scols, *dcols;
  fhjit_value table;
} bconv_more;
/* A conversion step, with nmore > 0 of several digits in one kernel;
 * bconv_step: of one digit into dense dst. */
an_step *lw_mix_bconv_step_digits(an_build *B, fhjit_value v, int lift, const fhjit_type *ts,
                                  const int32_t *scols, an_buf src, const fhjit_layout *view,
                                  int64_t m, const int32_t *dcols, fhjit_value table,
                                  int64_t skip, an_buf dst, int64_t dst_offset,
                                  int64_t dst_poly_stride, const bconv_more *more, int nmore);
an_step *lw_mix_bconv_step(an_build *B, fhjit_value v, int lift, const fhjit_type *ts,
                           const int32_t *scols, an_buf src, const fhjit_layout *view,
                           int64_t m, const int32_t *dcols, fhjit_value table, int64_t skip,
                           an_buf dst);
/* The first NTT step of v's operand x computed in its first kernel (a
 * prologue): rows [first, first + t->rows) of x; store.kind >= 0: also
 * stored into store (x's whole type, dense). */
an_step *lw_mix_prologue_ntt_step(an_build *B, fhjit_value v, ir_ntt_kind kind,
                                  const fhjit_type *t, const int32_t *cols, fhjit_value x,
                                  int64_t first, fhjit_value tw, an_buf dst, an_buf store);

/* mixsteps.c: the ops' tests */
/* Whether the operand x of rescale or moddown v is computed in v's kernels
 * instead of being materialised (fused_operand); private_operand and
 * fewer_bytes: its two tests, the cone's readers and the bytes read. */
int lw_mix_fused_operand(an_build *B, fhjit_value v, fhjit_value x);
int lw_mix_private_operand(an_build *B, fhjit_value v, fhjit_value x, int modups);
int lw_mix_fewer_bytes(an_build *B, fhjit_value x);
/* Whether modup v is better read where its rows lie (an alias) than
 * gathered. */
int lw_mix_read_in_place(const an_build *B, fhjit_value v);
/* Rows [*s0, *s0 + nd) of modup w's operand are its digit; nd, or 0 when
 * they are not consecutive (or on failure). */
int64_t lw_mix_digit_run(an_build *B, fhjit_value w, int64_t *s0);
/* Whether types a and b agree in kind, components, batch axes, rows, N,
 * domain and form (the basis aside). */
int lw_mix_same_shape(const fhjit_type *a, const fhjit_type *b);

/* mixsteps_modup.c */
/* The steps of modup v (lw_steps_s7). */
void lw_mix_modup_steps(an_build *B, fhjit_value v);

/* mixsteps_ipfuse.c, for modup's steps */
/* The inverse NTT modup v shares with the other modups of its operand, or
 * NULL. */
an_intt *lw_mix_shared_intt(an_build *B, fhjit_value v, int stored);
/* ipfuse: the sum S the members of batched group r feed, computed in the
 * last kernel of their forward NTT, or -1; sum_target: the same search
 * for any forward NTTs members[0..D) (anchor_ipntt.c's too). */
fhjit_value lw_mix_ipfuse_target(an_build *B, an_intt *r);
fhjit_value lw_mix_sum_target(an_build *B, const fhjit_value *member, int D);
/* The members of a reduce step: member k's rows at batch rows urow[k] of
 * the transform, its output rows [s0[k], s0[k] + nd[k]) the operand d's own
 * (read through dbuf, dview; d < 0: no member has any, nd all 0). */
typedef struct lw_mix_members {
  fhjit_value sum;
  int D;
  const fhjit_value *member;
  const int64_t *s0, *nd, *urow;
  fhjit_value d;
  an_buf dbuf;
  fhjit_layout dview;
} lw_mix_members;
/* The reduce form of forward NTT step s: the members' words kept in
 * registers by its last kernel, which computes m->sum from them into out
 * (nothing else stored). */
void lw_mix_reduce_step(an_build *B, an_step *s, const lw_mix_members *m, an_buf out);
/* The members' conversions and their one forward NTT, at the first member
 * v's steps; batched_alias: member v's alias of it. */
void lw_mix_batched_fwd(an_build *B, fhjit_value v, an_intt *r);
void lw_mix_batched_alias(an_build *B, fhjit_value v, an_intt *r);

/* mixsteps_mdgroup.c, for moddown's steps */
/* The group of moddown v, or NULL; md_first: the group's shared steps, at
 * its first member's place. */
an_mdgroup *lw_mix_md_group(an_build *B, fhjit_value v);
void lw_mix_md_first(an_build *B, an_mdgroup *G);

/* mixsteps_mdrs.c, for moddown's and rescale's steps */
/* The rescale whose steps compute moddown m with it, or FHJIT_NO_VALUE;
 * mdrs_steps: rescale v's steps when its moddown was left to it (1: planned
 * there). */
fhjit_value lw_mix_mdrs_rescale(an_build *B, fhjit_value m);
int lw_mix_mdrs_steps(an_build *B, fhjit_value v);

#endif
