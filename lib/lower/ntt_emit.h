/* ntt_emit.h: what the NTT emitter's files share (private to ntt_emit.c,
 * ntt_emit_fuse.c, ntt_emit_phase.c, ntt_emit_sync.c, ntt_emit_chain.c,
 * ntt_emit_aut.c and ntt_cluster.c; ntt.h is the emitter's interface): its state (ne),
 * the per-row constants (rowc), the IR helpers every part uses, and the
 * functions one file calls in another (prefix lw_ne_). What each does in
 * full: the comment at its definition. */
#ifndef FHJIT_LOWER_NTT_EMIT_H
#define FHJIT_LOWER_NTT_EMIT_H

#include <string.h>

#include "lower/arith.h"
#include "lower/ntt.h"

/* ----------------------------------------------------------- the emitter */

typedef struct ne {
  lw_arith A; /* the modular arithmetic's view of b, W, D (arith.h) */
  fhjit_context *ctx;
  const lw_ntt_plan *P;
  const lw_ntt_kplan *K;
  lw_target target;
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef W, D, i1, i32, i64, gptr, sptr, voidt, vecW;
  int wbits; /* 32 or 64: the word type's width */
  int V;     /* words of one 16-byte vector */
  LLVMValueRef fn;
  LLVMValueRef params, pstride, tw, src, dst, smem;
  LLVMValueRef barrier_fn;
  LLVMTypeRef barrier_ty;
  int src_view; /* 1: this kernel reads the plan's source view (kernel 0) */
  int src_dense; /* that view is dense [batch_rows, N] from src_offset */
  /* fused prologue (kernel 0 only) */
  const lw_ntt_fusion *pro;
  int pro_active;
  int pro_ncomp;             /* eval functions */
  LLVMValueRef pro_fn[3];
  LLVMTypeRef pro_ty[3];
  int64_t pro_values; /* values one call evaluates (lw_build_eval) */
  /* the vector prologue (lw_ntt_kplan.provec): evaluators of V consecutive
   * elements for the staged load (pro_value_vec), where pro_vec */
  int pro_vec;
  LLVMValueRef pro_vfn[3];
  LLVMTypeRef pro_vty[3];
  int64_t pro_vvalues;
  int pro_idx64;
  int64_t pro_rows_per_comp; /* batch * rows of the sub-graph's result */
  LLVMValueRef extra[LW_MAX_ARGS];
  /* fused epilogue (last kernel only): per target, eval functions, their
   * inputs and the output pointer among the kernel's arguments */
  int epi_active;
  int epi_ncomp[LW_NTT_MAX_EPI];
  int epi_idx64[LW_NTT_MAX_EPI];
  LLVMValueRef epi_fn[LW_NTT_MAX_EPI][3];
  LLVMTypeRef epi_ty[LW_NTT_MAX_EPI][3];
  int64_t epi_values[LW_NTT_MAX_EPI];
  /* the vector epilogue (lw_ntt_kplan.epivec): target t's evaluators of V
   * consecutive elements, where epi_vec[t] (final_store's vector stores) */
  int epi_vec[LW_NTT_MAX_EPI];
  LLVMValueRef epi_vfn[LW_NTT_MAX_EPI][3];
  LLVMTypeRef epi_vty[LW_NTT_MAX_EPI][3];
  int64_t epi_vvalues[LW_NTT_MAX_EPI];
  int64_t inlined; /* values of the evaluator calls in the kernel being built */
  LLVMValueRef epi_in[LW_NTT_MAX_EPI][LW_MAX_ARGS];
  LLVMValueRef epi_out[LW_NTT_MAX_EPI];
  /* k->early on the GPU: the first pass's words, loaded before the shared
   * twiddle phase (the host runs phases as loops over threads: it loads
   * them in the pass) */
  const char *prefix; /* of the kernel names: the completion counters' */
  LLVMValueRef own;   /* pdl 2 or ipsync: the LW_ARG_OWN argument */
  int preloaded;
  LLVMValueRef pre_x[1 << LW_NTT_MAX_LOG_E];
  /* ipfuse (lw_ntt_reduce), the last kernel: red_active; red_k >= 0 while
   * member red_k's body is emitted (its final words go to its slots);
   * red_slots: the GPU's per-thread slots (an alloca that becomes
   * registers: every index is a constant) */
  int red_active, red_k;
  LLVMValueRef red_slots;
  LLVMValueRef red_blk; /* the output block (i64), while members are emitted */
  /* red.acc > 0 (ipacc): result k's eval functions (fold member k into the
   * accumulator), per component */
  LLVMValueRef acc_fn[LW_MAX_REG][3];
  LLVMTypeRef acc_ty[LW_MAX_REG][3];
  int64_t acc_values[LW_MAX_REG];
  /* ipacc with the vector epilogue (epivec): result k's evaluators of V
   * consecutive words, per component (acc_vec: they exist) */
  int acc_vec;
  LLVMValueRef acc_vfn[LW_MAX_REG][3];
  LLVMTypeRef acc_vty[LW_MAX_REG][3];
  int64_t acc_vvalues[LW_MAX_REG];
  /* ipchain (lw_ntt_fusion.chain): the chained plan's twiddles, source and
   * destination among the reduce kernel's arguments */
  LLVMValueRef chain_tw, chain_src, chain_dst;
} ne;

/* Per-row constants of the thread's row. */
typedef struct rowc {
  LLVMValueRef batch_row, row; /* i64; row: the parameter column and twiddle row */
  LLVMValueRef q, q2, k4;      /* words; k4 = 4k mod 2^64 (r62) or k (r32) */
  LLVMValueRef nq;             /* r62: 2^64 - q (Shoup's form) */
  LLVMValueRef twrow;          /* pointer to the row's twiddles */
  /* the first kernel of a plan with lift (lw_ntt_plan.lift): the lift
   * column's modulus q and q - floor(q/2), where its negative side starts;
   * NULL otherwise */
  LLVMValueRef lq, lneg;
} rowc;

/* A constant multiplier w with its precomputed Montgomery constant. */
typedef lw_mconst mconst;

/* A counted loop: returns the induction variable; close with loop_end. */
typedef struct loop {
  LLVMBasicBlockRef head, body;
  LLVMValueRef iv;
} loop;

/* ----------------------------------------------------------- IR helpers */

static inline LLVMValueRef cw(ne *E, uint64_t x) { return LLVMConstInt(E->W, x, 0); }
static inline LLVMValueRef c32(ne *E, uint64_t x) { return LLVMConstInt(E->i32, x, 0); }
static inline LLVMValueRef c64(ne *E, uint64_t x) { return LLVMConstInt(E->i64, x, 0); }
static inline unsigned walign(ne *E) { return (unsigned)(E->wbits / 8); }

static inline void fn_attr(ne *E, LLVMValueRef fn, const char *name) { lw_fn_attr(E->c, fn, name); }

static inline void param_attr(ne *E, LLVMValueRef fn, unsigned param, const char *name) {
  lw_param_attr(E->c, fn, param, name);
}

static inline LLVMValueRef intrinsic(ne *E, const char *name, LLVMTypeRef *fty) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(E->m, id, NULL, 0);
  *fty = LLVMIntrinsicGetType(E->c, id, NULL, 0);
  return fn;
}

static inline LLVMValueRef sreg(ne *E, const char *name) {
  return lw_intrinsic0(E->c, E->m, E->b, name);
}

static inline LLVMValueRef load(ne *E, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef idx,
                                unsigned align, const char *name) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(E->b, E->W, base, &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(E->b, ty, p, name);
  LLVMSetAlignment(v, align);
  return v;
}

static inline void store(ne *E, LLVMValueRef v, LLVMValueRef base, LLVMValueRef idx,
                         unsigned align) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(E->b, E->W, base, &idx, 1, "");
  LLVMSetAlignment(LLVMBuildStore(E->b, v, p), align);
}

/* x + c, no add for c = 0 (the constant part of an offset: see goff_k,
 * ntt_emit_phase.c). */
static inline LLVMValueRef add_const32(ne *E, LLVMValueRef x, uint64_t c) {
  return c ? LLVMBuildNUWAdd(E->b, x, c32(E, c), "") : x;
}

static inline LLVMValueRef add_const64(ne *E, LLVMValueRef x, uint64_t c) {
  return c ? LLVMBuildNUWAdd(E->b, x, c64(E, c), "") : x;
}

/* A call of inline PTX `text` (side effects; constraints cons) on args[0 ..
 * n), n <= 4, returning ret. */
static inline LLVMValueRef asm_call(ne *E, LLVMTypeRef ret, const char *text, const char *cons,
                                    LLVMValueRef *args, unsigned n) {
  return lw_asm(E->b, ret, text, cons, args, n);
}

/* ntt_emit.c: the kernels' arguments and host functions */
/* The GPU kernel `name` of E's kernel plan with its arguments (names,
 * attributes, E's pointers to them), E->fn; offset_rows: dst (and src
 * where it is dst) moved to the plan's dst_offset (GPU). */
LLVMValueRef lw_ne_gpu_kernel_fn(ne *E, const char *name);
void lw_ne_offset_rows(ne *E, int first);
/* A counted loop from begin (loop_end: up to end). */
loop lw_ne_loop_begin(ne *E, LLVMValueRef begin, LLVMTypeRef ty, const char *name);
void lw_ne_loop_end(ne *E, loop *L, LLVMValueRef end, const char *name);
/* A kernel's host body "<name>_host_body" (the builder at its work block)
 * and, closing it, the entry "<name>_host" the host runtime calls. */
LLVMValueRef lw_ne_host_body_begin(ne *E, const char *name, LLVMTypeRef *types, int *nargs,
                                   LLVMTypeRef *fty, LLVMValueRef *begin, LLVMValueRef *end,
                                   LLVMBasicBlockRef *done);
void lw_ne_host_body_end(ne *E, const char *name, const LLVMTypeRef *types, int n,
                         LLVMTypeRef fty, LLVMValueRef fn, LLVMBasicBlockRef done);

/* ntt_emit_sync.c: the waits between kernels (GPU) */
/* Whether the kernel takes LW_ARG_OWN (rowsync or ipsync). */
int lw_ne_has_own(const ne *E);
/* Kernel 0 with k->entry: its wait for the stream's previous kernel;
 * kernel 1 with k->pdl: its wait for kernel 0. */
void lw_ne_entry_wait(ne *E, LLVMValueRef tid, LLVMValueRef blk);
void lw_ne_wait_for_kernel0(ne *E, LLVMValueRef tid, LLVMValueRef blk);
/* ipsync's reduce kernel: the block that grid block blk runs. */
LLVMValueRef lw_ne_sync_first(ne *E, LLVMValueRef blk);
/* After the kernel's last access: its counts for the kernels after it. */
void lw_ne_kernel_end(ne *E, LLVMValueRef tid, LLVMValueRef blk);

/* ntt_emit_fuse.c: the fused prologue and epilogue, the reduce mode */
/* The evaluator functions of the prologue and of the epilogue targets
 * (lower.c), found into E. */
fhjit_status lw_ne_build_prologue(ne *E);
fhjit_status lw_ne_build_epilogue(ne *E);
/* Kernel 0's source element (br, i) computed by the prologue (vec: the V
 * elements from i, as a vector); pro_or_src: with pro_rows, the source's
 * word at offset off on the rows the prologue does not compute. */
LLVMValueRef lw_ne_pro_value(ne *E, LLVMValueRef br, LLVMValueRef i);
LLVMValueRef lw_ne_pro_value_vec(ne *E, LLVMValueRef br, LLVMValueRef i);
LLVMValueRef lw_ne_pro_or_src(ne *E, LLVMValueRef br, LLVMValueRef i, LLVMValueRef off);
/* The last kernel's store of n consecutive final words x[] at dense offset
 * off: the transform's result unless skipped, and every epilogue target. */
void lw_ne_final_store(ne *E, LLVMValueRef off, const LLVMValueRef *x, int n);
/* ipfuse's reduce mode: a thread's words of its block and slots per word;
 * red_keep: member red_k's final words of staged group g into its slots;
 * red_is_own: whether output block blk's row is member k's own;
 * red_member_blk: the batch block member k's body runs for blk; red_own:
 * member k's slots from the operand's own rows; red_epilogue: epilogue 0
 * on the slots, stored. */
int lw_ne_red_words(const ne *E);
int lw_ne_red_nslots(const ne *E);
void lw_ne_red_keep(ne *E, LLVMValueRef tid, int g, const LLVMValueRef *vals);
LLVMValueRef lw_ne_red_is_own(ne *E, int k, LLVMValueRef blk);
LLVMValueRef lw_ne_red_member_blk(ne *E, int k, LLVMValueRef blk);
void lw_ne_red_own(ne *E, int k, LLVMValueRef tid, LLVMValueRef blk);
void lw_ne_red_epilogue(ne *E, LLVMValueRef tid, LLVMValueRef blk);

/* ntt_emit_phase.c: per-row constants, offsets, twiddles, phases */
/* The constants of batch-row batch_row; the kind's pre step (with its
 * constant pre_const) on a loaded word, its post step (post_const) before
 * a store; lift_add: with a lift beside a prologue (lift_add_active), the
 * prologue's word x plus the lift of source word w. */
rowc lw_ne_row_consts(ne *E, LLVMValueRef batch_row);
mconst lw_ne_pre_const(ne *E, const rowc *r);
LLVMValueRef lw_ne_pre_step(ne *E, const rowc *r, const mconst *r2, LLVMValueRef x);
mconst lw_ne_post_const(ne *E, const rowc *r);
LLVMValueRef lw_ne_post_step(ne *E, const rowc *r, const mconst *ninv, LLVMValueRef v);
int lw_ne_lift_add_active(const ne *E);
LLVMValueRef lw_ne_lift_add(ne *E, const rowc *r, const mconst *r2, LLVMValueRef x,
                            LLVMValueRef w);
/* Source offset of the start of batch-row br in the plan's source view;
 * padded: a shared index (i32) with the kernel's padding, padded_const the
 * same of a constant. */
LLVMValueRef lw_ne_src_rowoff(ne *E, LLVMValueRef br);
LLVMValueRef lw_ne_padded(ne *E, LLVMValueRef x);
uint64_t lw_ne_padded_const(ne *E, uint64_t x);
/* The constant of twiddle idx of the row from global memory; one
 * butterfly on *lo and *hi; the stages of local bits [0, tail) on a staged
 * vector's V words. */
mconst lw_ne_global_twiddle(ne *E, const rowc *r, LLVMValueRef idx);
void lw_ne_butterfly(ne *E, const rowc *r, const mconst *mc, int fwd, LLVMValueRef *lo,
                     LLVMValueRef *hi);
void lw_ne_tail_stages(ne *E, const rowc *r, LLVMValueRef tw_base, LLVMValueRef kpos,
                       LLVMValueRef *x);
/* The kernel's phases (barriers between them) and phase ph of thread tid
 * in block blk; preload_pass0: the first pass's words loaded early
 * (k->early); prefetch_source: the source words into the L2 (k->l2pf). */
int lw_ne_num_phases(const lw_ntt_kplan *k);
void lw_ne_emit_phase(ne *E, int ph, LLVMValueRef tid, LLVMValueRef blk);
void lw_ne_preload_pass0(ne *E, LLVMValueRef tid, LLVMValueRef blk);
void lw_ne_prefetch_source(ne *E, LLVMValueRef tid, LLVMValueRef blk);
/* The same for a prologue that is an NTT-domain automorphism of one dense
 * input: 1 when emitted, 0 for any other prologue. */
int lw_ne_prefetch_aut_source(ne *E, LLVMValueRef tid, LLVMValueRef blk);
/* The last kernel's epilogue inputs at its block's positions into the L2
 * (k->epipf). */
void lw_ne_prefetch_epilogue(ne *E, LLVMValueRef tid, LLVMValueRef blk);

/* ntt_emit_chain.c: ipchain, the chained plan's kernel 0 in the reduce
 * kernel: whether E's kernel runs it; its arguments from parameter j on
 * (returns the next); the reduce kernel's block order that runs output
 * rows row0.. first (GPU; ipchain's chained rows, ipsync's counted ones);
 * its phases on the block's rows after the epilogue (GPU: tid the
 * thread; host: loops over the threads). */
int lw_ne_chain_active(const ne *E);
int lw_ne_chain_params(ne *E, LLVMValueRef fn, int j);
LLVMValueRef lw_ne_rows_first(ne *E, LLVMValueRef blk, int64_t row0);
void lw_ne_chain(ne *E, LLVMValueRef tid, LLVMValueRef blk);
/* ntt_emit.c: whether plan p's source view is dense [batch_rows, N]. */
int lw_ne_src_is_dense(const lw_ntt_plan *p);

/* ntt_emit_aut.c: a forward NTT of a coefficient-domain automorphism of
 * its source (lw_ntt_plan.aut_k). aut_cols_load: kernel 0's staged load
 * (columns) with the automorphism, 0 (nothing emitted) where E's kernel is
 * not that; aut_chunk_pos: kernel 1's shared position (i32) of the chunk
 * slot kv it loads (kv itself for every other kernel). aut_direct: E's
 * kernel is kernel 1 loading its first pass's words from memory; then
 * local position ku + kc reads chunk slot aut_chunk_slot(aut_chunk_scale
 * (ku), kc). */
int lw_ne_aut_cols_load(ne *E, LLVMValueRef tid, LLVMValueRef blk);
LLVMValueRef lw_ne_aut_chunk_pos(ne *E, LLVMValueRef kv);
int lw_ne_aut_direct(const ne *E);
LLVMValueRef lw_ne_aut_chunk_scale(ne *E, LLVMValueRef ku);
LLVMValueRef lw_ne_aut_chunk_slot(ne *E, LLVMValueRef kuk, uint32_t kc);
/* aut_regs_active: E's kernel permutes its first pass's registers (kernel
 * 0 with ntt_plan autreg=1, kernel 1 with autcol=3); aut_regs permutes x
 * (loaded as the plain kernel's) for the thread's u and, in kernel 0,
 * source column col (i64; unused in kernel 1) into the positions the pass
 * needs (kernel 0: its output rows, with the word's sign and the pre
 * step) and returns their base (i32), the pass's positions from then on. */
int lw_ne_aut_regs_active(const ne *E);
LLVMValueRef lw_ne_aut_regs(ne *E, const rowc *r, LLVMValueRef col, LLVMValueRef u, LLVMValueRef *x);

/* ntt_cluster.c: the cluster schedule's GPU kernel and host function */
void lw_ne_build_cluster_gpu_kernel(ne *E, const char *name);
void lw_ne_build_cluster_host_fn(ne *E, const char *name);

#endif
