/* steps.h: the step plan of graphs that run as several kernels (private to
 * lib/lower). anchor_plan.c cuts a bound graph into steps (NTTs with fused
 * prologues and epilogues, pointwise sub-graphs) with anchor.c's step
 * builders; mixsteps.c adds the steps of SPEC section 7's limb-mixing ops
 * (bconv, rescale, modup, moddown) and materialises the operands of the
 * re-indexing ops (rows, concat, automorphism), which lower.c reads as
 * loads from buffers. anchor_gpu.c describes and builds the plan's kernels,
 * host.c runs it on the host. */
#ifndef FHJIT_LOWER_STEPS_H
#define FHJIT_LOWER_STEPS_H

#include "lower/bconv.h"
#include "lower/ntt.h"

/* A buffer: a kernel argument (input, result or scratch). */
typedef struct an_buf {
  int kind; /* an lw_arg_kind, or -1: none */
  int32_t index;
} an_buf;


typedef struct an_step {
  int is_ntt;
  int is_bconv;
  /* pointwise: a bound sub-graph; its inputs and results are these buffers */
  fhjit_graph *sub;
  an_buf *in, *out;
  /* NTT: the transformed value's type (components, batch, rows, N) */
  fhjit_type ntt_type;
  lw_ntt_plan plan;
  an_buf src, dst, tw;
  /* a fused prologue: the operand computed in the first kernel by a bound
   * sub-graph (its inputs: pro_in), component pro_comp of its result (-1:
   * all of it) */
  fhjit_graph *pro_sub;
  an_buf *pro_in;
  int pro_comp;
  int64_t pro_store_rows, pro_store_first; /* lw_ntt_fusion's */
  /* a fused epilogue: results computed in the last kernel, each by a bound
   * sub-graph (inputs epi_in[t], input epi_reg[t] being the transform's
   * value) into result buffer epi_out[t] */
  int nepi;
  fhjit_graph *epi_sub[LW_NTT_MAX_EPI];
  an_buf *epi_in[LW_NTT_MAX_EPI];
  int32_t epi_reg[LW_NTT_MAX_EPI];
  an_buf epi_out[LW_NTT_MAX_EPI];
  int skip_store; /* the transform's own result is read by nothing */
  /* ipfuse: the last kernel reduces over a batched forward NTT's members
   * (lw_ntt_reduce; members 0: not) */
  lw_ntt_reduce red;
  /* ipchain (mixsteps_ipchain.c): chain, on a reduce step: the next step's
   * kernel 0 runs in this step's last kernel, on rows [chain_row0,
   * chain_row0 + its rows) of each of its chain_comps components of the
   * sum; chained, on that next step: its kernel 0 is not launched (the
   * step's kernels: lw_step_kernels) */
  int chain, chained;
  int64_t chain_row0;
  /* ipntt (anchor_ipntt.c): head, on a member's step: only its kernel 0
   * runs, writing the member's intermediate words at dst + dst_off;
   * heads, on the reduce step after them: its kernel 0 is those heads
   * steps' (not launched here), its kernel 1 reads their words in dst */
  int head, heads;
  /* bconv: src (plan's view) and the table (tw) into dst */
  lw_bconv_plan bconv;
  /* words from the start of the destination buffer (NTT: dst, set with
   * plan.dst_offset; pointwise: its results): the step writes rows of a
   * larger buffer */
  int64_t dst_off;
  /* pointwise: NULL, or per result of sub words added to dst_off (several
   * results in one buffer: mixsteps_mdgroup.c, md_group) */
  int64_t *out_off;
  /* pointwise, GPU: a dependent launch (lw_plan.pdl_entry), set by
   * anchor_gpu.c's describe_steps for the target */
  int pdl;
} an_step;

typedef struct an_plan {
  fhjit_context *sctx; /* owns the sub-graphs */
  an_step steps[LW_MAX_KERNELS];
  int nsteps;
  /* ntt_plan's pdlmix where pdl and entry are on, else 0: on targets with
   * programmatic dependent launch the conversion kernels (1) and the
   * pointwise ones too (2) are dependent launches, like the NTTs'
   * (anchor_gpu.c, describe_steps) */
  int pdl_mix;
  int bc_rev; /* ntt_plan's bcrev (anchor_gpu.c, bconv_reversed) */
  int nscratch;
  int64_t scratch_bytes[LW_MAX_KERNELS];
  /* scratch.c (lw_scratch_assign, after planning): each buffer's live range
   * (steps, both included) and its offset in one arena of scratch_arena
   * bytes, shared by buffers whose ranges are disjoint */
  int32_t scratch_first[LW_MAX_KERNELS], scratch_last[LW_MAX_KERNELS];
  int64_t scratch_offset[LW_MAX_KERNELS];
  int64_t scratch_arena;
  /* column lists (bases) the plans point to, freed with the plan */
  int32_t **cols;
  int ncols;
  /* host path */
  lw_ntt_host *host[LW_MAX_KERNELS];
  lw_bconv_host *bhost[LW_MAX_KERNELS];
} an_plan;

/* A value no buffer holds whole but every pointwise kernel can read as an
 * address chain (lower_remap.c's remapped loads): modup's output, rows [0, s0)
 * and [s0, m) of the converted rows (dense buffer u, m rows, chain
 * positions ucols) around the digit's own rows, rows [s0, s0 + nd) of its
 * operand d (buffer dbuf through view dview, the whole of d). make_sub
 * reads it as concat(rows(u), rows(d), rows(u)); a step that needs it in
 * memory materialises it with that expression (a gather kernel). */
typedef struct an_alias {
  an_buf u;
  fhjit_type tu;
  const int32_t *ucols;
  /* has_uview: u is read through view uview (rows of the batched forward
   * NTT's buffer, an_intt), else dense */
  int has_uview;
  fhjit_layout uview;
  fhjit_value d;
  an_buf dbuf;
  fhjit_layout dview;
  const int32_t *dcols;
  int64_t s0, nd;
  int stored; /* dbuf holds d's rows only where modups' prologues stored them */
} an_alias;

/* One inverse NTT shared by several modups of one operand d (mixsteps.c,
 * modup_steps): the modups of d with the same twiddle table (members)
 * transform rows [lo, lo + t.rows) of d (the union of their consecutive
 * digits) once, at the first member's steps, into dense buffer buf (type t,
 * chain positions cols); each member's conversion reads its digit there, at
 * rows s0 - lo. stored: the first member's prologue computed d and stored
 * those rows (the members must agree). done: buf has been written. */
typedef struct an_intt {
  fhjit_value first; /* the member that computes it (and owns the record) */
  fhjit_value d, tw;
  int64_t lo;
  fhjit_type t;
  const int32_t *cols;
  an_buf buf;
  int stored, done;
  /* fwd: every member is read in place (an alias) and they share the
   * forward table: the first member also converts every member's digit,
   * member k's m_k rows into rows [urow[k], urow[k] + m_k) of one buffer,
   * and runs one forward NTT over all of them into ubuf (type tu, chain
   * positions the members' ucols[k] one after the other); member k's
   * alias reads its rows there (has_uview). The members' aliases read the
   * operand's rows through dbuf, dview (the first member's view of d). */
  int fwd;
  int nmembers;
  fhjit_value *member;
  int64_t *urow;
  const int32_t **ucols;
  an_buf ubuf, dbuf;
  fhjit_type tu;
  fhjit_layout dview;
  /* ipfuse: >= 0, the sum the members feed (the key switch's inner
   * product), computed in the forward NTT's last kernel
   * (mixsteps_ipfuse.c, ipfuse_target); the members then have no alias */
  fhjit_value sum;
} an_intt;

/* Moddowns planned together (mixsteps_mdgroup.c, md_group): live moddowns with
 * one set of tables whose operands (one type and basis, no batch axes,
 * each read only by its moddown, cones private) are materialised, each
 * computable at the first member's step (a hoisted rotation's inner
 * products). At the first member (ntt_plan mdip): one pointwise kernel
 * computes every member's operand into sbuf, member k's at k * swords
 * words (polynomial after polynomial); mdintt: then one inverse NTT of
 * every member's P rows into s1 (member k's polynomials at k * s1words);
 * mdbconv: then one conversion of them all into s2 (at k * s2words).
 * Each member's remaining steps (and the forward NTT with its epilogue)
 * stay at its own place in node order, reading its rows there. */
#define LW_MDG_MAX 16
typedef struct an_mdgroup {
  fhjit_value first;
  int nmembers;
  fhjit_value member[LW_MDG_MAX];
  an_buf sbuf;
  int64_t swords;
  int intt, bconv;
  an_buf s1, s2;
  int64_t s1words, s2words;
} an_mdgroup;

/* A group of forward NTT anchors planned with their sum (anchor_ipntt.c). */
typedef struct an_ipntt an_ipntt;

typedef struct an_build {
  fhjit_graph *g;
  an_plan *p;
  char *live;
  int has_where;
  an_buf *where; /* per node: a dense buffer holding the whole value, or kind < 0 */
  an_alias **alias; /* per node: NULL, or how kernels read it without a buffer */
  an_intt **intt;   /* per modup node: NULL, or the inverse NTT it shares */
  an_mdgroup **mdg; /* per moddown node: NULL, or the group it belongs to */
  an_ipntt **ipg;   /* per NTT anchor: NULL, or the ipntt group it belongs to */
  char *mdrs;        /* per moddown node: 1 when its rescale plans both (mdrs_steps) */
  int64_t *where_off; /* per node: words from the start of where[] (md_group) */
  fhjit_value *epi_of; /* per result value: the anchor whose epilogue computes it, or -1 */
  char *in_memory;     /* per anchor: some step reads its buffer */
  lw_ntt_tuning tune;  /* ntt_plan, parsed once (lw_ntt_tuning_parse) */
  fhjit_status st;
} an_build;

/* anchor_plan.c: the step plan of bound graph g (NULL on failure, the error
 * in g's context), for anchor_gpu.c and host.c, and its release. */
an_plan *lw_anchor_build_plan(fhjit_graph *g);
void lw_anchor_plan_free(an_plan *p);

/* anchor.c: what NTT step s fuses (prologue, epilogues, reduction, a
 * chain: s points into its plan's steps[], of which s + 1 is the chained
 * one), for ntt_emit.c's GPU and host builds; whether its first kernel
 * reads its source (no prologue, or one that lifts or loads rows of it);
 * the kernels a step launches. */
void lw_step_fusion(const fhjit_graph *g, const an_step *s, lw_ntt_fusion *fu);
int lw_step_reads_source(const an_step *st);
int lw_step_kernels(const an_step *st);
/* The kernels [first, end) of NTT step st's plan that it launches. */
int lw_step_first_kernel(const an_step *st);
int lw_step_end_kernel(const an_step *st);

/* anchor_ipntt.c, for anchor_plan.c: whether NTT anchor v is a member of
 * an ipntt group (formed at its first member): then its step's kernel 0
 * writes its words into *dst from word *dst_off on, and head_done makes
 * the step (its plan made) a head and, after the last member's, adds the
 * group's reduce step. ipntt_free: the groups. */
int lw_ipntt_head(an_build *B, fhjit_value v, an_buf *dst, int64_t *dst_off);
void lw_ipntt_head_done(an_build *B, an_step *s, fhjit_value v);
void lw_ipntt_free(an_build *B);

/* mixsteps_ipchain.c: chains each reduce step whose next step transforms
 * rows of its sum back (ipchain), after every step is planned. */
void lw_mix_chain_steps(an_build *B);
/* mixsteps_ipsync.c: the step after each reduce step that reads rows of
 * its sum waits for those rows only (ipsync), after lw_mix_chain_steps. */
void lw_mix_sync_steps(an_build *B);
/* steps_l2pf.c: the NTT steps whose source the step before writes lose
 * their L2 prefetch where ntt_plan says l2pfprev=0. */
void lw_steps_l2pf(an_build *B);

/* anchor.c's step builders, for anchor_plan.c, mixsteps.c and mixsteps_*.c */
an_step *lw_step_new(an_build *B);
int lw_step_scratch(an_build *B, const fhjit_type *t);
/* The buffer that will hold v: its result buffer when it is a result,
 * else new scratch (kind -1 on failure). */
an_buf lw_step_home(an_build *B, fhjit_value v);
/* Puts v into a buffer: an input is one already; otherwise a pointwise
 * step computes it, unless a step already has. */
void lw_step_materialise(an_build *B, fhjit_value v);
void lw_step_pointwise(an_build *B, const fhjit_value *targets, const an_buf *dests, int n);
int lw_step_source(an_build *B, fhjit_value v, an_buf *buf, fhjit_layout *l);
void lw_step_set_source(lw_ntt_plan *p, const fhjit_type *t, const fhjit_layout *l);
fhjit_status lw_step_sub_error(an_build *B, const char *what);
/* "<kind><s>" or "<kind><s>_<t>" (t < 0: none), unique per step. */
#define LW_STEP_NAME_SIZE 32
void lw_step_name(char out[LW_STEP_NAME_SIZE], const char *kind, int s, int t);
/* An input of sub-graph sub named like a value of the graph: `name`, or
 * name_1, name_2, ... where sub already has a value of that name (its own
 * nodes take the builder's automatic names, %t<id>, which a graph's value
 * may also have). NULL name: NULL (the builder names it). */
#define LW_SUB_INPUT_NAME_SIZE 300
const char *lw_sub_input_name(const fhjit_graph *sub, const char *name,
                              char out[LW_SUB_INPUT_NAME_SIZE]);

/* Whether every row and index of v can be loaded from memory as the plan
 * stands: an input, a buffer (where), an alias, or extract, rows, concat of
 * such (lw_addressable's address chains, with buffers as inputs). */
int lw_step_addressable(const an_build *B, fhjit_value v);

/* Rows [first, first + count) of computed value target, cloned into sub
 * from rows of its leaves (inputs, buffers, aliases; their buffers
 * appended to in[*nin], which holds 2 nnodes + 1 entries);
 * FHJIT_NO_VALUE with B->st set on failure. lw_step_rows_ok: whether the
 * cone of target allows it (element-wise work, automorphisms and rows of
 * leaves). lw_step_sub_rows: a bound sub-graph of those rows (a prologue),
 * *in receiving its inputs' buffers; store_t non-NULL: a last input of
 * that type, unused by the sub-graph, for buffer store (the prologue's
 * store buffer, lw_ntt_fusion.store_rows). */
int lw_step_rows_ok(an_build *B, fhjit_value target);
fhjit_value lw_step_clone_rows(an_build *B, fhjit_graph *sub, fhjit_value target,
                               int64_t first, int64_t count, an_buf *in, int32_t *nin);
fhjit_graph *lw_step_sub_rows(an_build *B, const char *name, fhjit_value target, int64_t first,
                              int64_t count, an_buf **in, const fhjit_type *store_t,
                              an_buf store);

/* target cloned into sub down to its leaves (inputs, buffers, aliases:
 * their buffers appended to in[*nin], 2 nnodes + 1 entries) and v, which
 * becomes vval (its value in a kernel's registers). */
fhjit_value lw_step_clone_over(an_build *B, fhjit_graph *sub, fhjit_value target, fhjit_value v,
                               fhjit_value vval, an_buf *in, int32_t *nin);
/* The same with values vs[k] becoming vvals[k] (k < nv). */
fhjit_value lw_step_clone_over_n(an_build *B, fhjit_graph *sub, fhjit_value target,
                                 const fhjit_value *vs, const fhjit_value *vvals, int nv, an_buf *in,
                                 int32_t *nin);
/* The cones of targets[0..nt) cloned into sub at once (leaves shared:
 * each buffer appended to in[] once), out[t] the clone of targets[t]. */
void lw_step_clone_multi(an_build *B, fhjit_graph *sub, const fhjit_value *targets, int nt,
                         const fhjit_value *vs, const fhjit_value *vvals, int nv, an_buf *in,
                         int32_t *nin, fhjit_value *out);
/* A result not yet computed that the last kernel of v's steps can compute
 * from v's value there (v read by nothing else, only at the element and
 * component, through element-wise work, extract and pack, on v's rows and
 * shape; no other barrier in its cone), or FHJIT_NO_VALUE. */
fhjit_value lw_step_epilogue_result(an_build *B, fhjit_value v);
/* For anchor_plan.c: whether live v is computed by steps of its own into a
 * buffer (an NTT or a mixing op: cones of fused work stop there); whether
 * two types have the same extents (N, rows, batch axes, digits; not
 * components: the caller compares those by its own rule); a bound
 * sub-graph computing targets[0..ntargets) from g's inputs and the values
 * with a buffer or an alias (*in: each input's buffer); pointwise steps for
 * targets into dests, one per group sharing a walk (reorders both). */
int lw_step_is_barrier(const fhjit_graph *g, const char *live, fhjit_value v);
int lw_step_same_extents(const fhjit_type *a, const fhjit_type *b);
fhjit_graph *lw_step_sub(an_build *B, const char *name, const fhjit_value *targets, int ntargets,
                         an_buf **in);
void lw_step_grouped(an_build *B, fhjit_value *targets, an_buf *dests, int n);

/* mixsteps.c */
/* Whether v is a live node the step planner must handle for SPEC section 7
 * (class ROWS, PERMUTE or MIXING). */
int lw_is_s7(const fhjit_graph *g, fhjit_value v);
/* Whether it needs steps of its own: a mixing op, or a re-indexing op of a
 * value the fused kernel cannot read from memory. */
int lw_needs_steps(const fhjit_graph *g, fhjit_value v);
/* Adds the steps of live section 7 node v (in node order, before the steps
 * of what reads it): a mixing op's own kernels, writing B->where[v]; a
 * re-indexing op's operands materialised into buffers. */
void lw_steps_s7(an_build *B, fhjit_value v);

/* anchor_gpu.c: the program of plan p for target t without its code
 * (kernels in launch order, their launch facts and arguments, scratch);
 * adjusts p's steps to t on the way. plan_text.c prints it. */
fhjit_status lw_anchor_describe_plan(fhjit_graph *g, an_plan *p, const nv_target *t, lw_program *out);

/* scratch.c: scratch reuse by liveness (see there for why it is safe) */
#define LW_SCRATCH_ALIGN 256 /* bytes: each buffer's offset in the arena */
/* Sets p's scratch_first/last (the steps touching each buffer; -1: none). */
void lw_scratch_ranges(an_plan *p);
/* Whether step s reads or writes buffer b (scratch.c). */
int lw_step_touches(const an_step *s, an_buf b);
/* Live ranges, then offsets and the arena: run once the plan is complete. */
void lw_scratch_assign(an_plan *p);
/* Places n buffers of bytes[i] live over steps [first[i], last[i]] at
 * align-aligned offsets (offset[i]), those whose ranges meet apart; returns
 * the arena's size. Greedy by size. */
int64_t lw_scratch_pack(int n, const int64_t *bytes, const int32_t *first, const int32_t *last,
                        int64_t align, int64_t *offset);
/* Tests only: non-zero places every buffer at offset 0, a wrong placement
 * on purpose (test_scratch.c shows that the host tests catch it). */
extern int lw_scratch_debug_share_all;
/* Sets out's scratch offsets and arena from p, once out has p's kernels
 * (anchor_gpu.c, describe_steps), and asserts that every scratch argument of
 * a step's kernels is live at that step. */
void lw_scratch_describe(const an_plan *p, lw_program *out);
/* Host path, before step s (Debug builds; nothing with NDEBUG): fills with
 * a poison pattern the buffers whose live range starts at s and those whose
 * range ended at s - 1. A buffer placed over one still in use, or read
 * after its range ends, then reads or leaves poison, and the host tests,
 * which compare every result with the interpreter, fail. */
void lw_scratch_poison(const an_plan *p, int32_t s, void *const *scratch);

#endif
