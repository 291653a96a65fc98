/* bconv_emit.h: what the basis conversion emitter's files share (private
 * to bconv.c, bconv_common.c, bconv_scalar.c, bconv_mma.c and
 * bconv_arith.c; bconv.h is the emitter's
 * interface): its state (bc), the IR helpers every part uses, the types
 * the parts pass each other, and the functions one file calls in another
 * (prefix lw_bc_). What each does in full: the comment at its definition. */
#ifndef FHJIT_LOWER_BCONV_EMIT_H
#define FHJIT_LOWER_BCONV_EMIT_H

#include "lower/arith.h"
#include "lower/bconv.h"

/* ----------------------------------------------------------- the emitter */

typedef struct bc {
  fhjit_context *ctx;
  const lw_bconv_plan *P;
  lw_target target;
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef W, i1, i32, i64, i128, gptr, sptr, cptr, voidt;
  int wbits; /* 32 or 64 */
  int V;     /* words of a 16-byte vector */
  int mma;   /* building the tensor-core form */
  uint32_t threads, digit_blocks; /* the form's block size and blocks per digit */
  LLVMValueRef fn, params, pstride, table, src, dst, smem;
  LLVMValueRef own; /* sig (GPU): the LW_ARG_OWN argument */
  LLVMValueRef scols, dcols; /* constant i32 arrays: the columns ([digits][l], [digits][m]) */
  int32_t scol0, dcol0;      /* >= 0 when every digit's columns are consecutive, else -1 */
  LLVMTypeRef scols_ty, dcols_ty;
  /* the block's digit's values (digits > 1: selected by the digit, set at
   * the block's start; else constants): its index, table argument, source
   * and table and destination offsets, first columns (scol0 / dcol0 >= 0) */
  LLVMValueRef dig, dtable, dsrc_off, dtab_off, ddst_off, dscol0, ddcol0;
  LLVMValueRef more_tables[LW_BCONV_MAX_DIGITS - 1];
  LLVMValueRef barrier_fn;
  LLVMTypeRef barrier_ty;
} bc;

static inline LLVMValueRef cw(bc *E, uint64_t x) { return LLVMConstInt(E->W, x, 0); }
static inline LLVMValueRef c32(bc *E, uint64_t x) { return LLVMConstInt(E->i32, x, 0); }
static inline LLVMValueRef c64(bc *E, uint64_t x) { return LLVMConstInt(E->i64, x, 0); }
static inline unsigned walign(bc *E) { return (unsigned)(E->wbits / 8); }

static inline void fn_attr(bc *E, LLVMValueRef fn, const char *name) { lw_fn_attr(E->c, fn, name); }

static inline void param_attr(bc *E, LLVMValueRef fn, unsigned param, const char *name) {
  lw_param_attr(E->c, fn, param, name);
}

static inline LLVMValueRef sreg(bc *E, const char *name) { return lw_intrinsic0(E->c, E->m, E->b, name); }

static inline LLVMValueRef gep(bc *E, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(E->b, ty, base, &idx, 1, "");
}

static inline LLVMValueRef load_at(bc *E, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef idx,
                            unsigned align, const char *name) {
  LLVMValueRef v = LLVMBuildLoad2(E->b, ty, gep(E, E->W, base, idx), name);
  LLVMSetAlignment(v, align);
  return v;
}

static inline void store_at(bc *E, LLVMValueRef v, LLVMValueRef base, LLVMValueRef idx, unsigned align) {
  LLVMSetAlignment(LLVMBuildStore(E->b, v, gep(E, E->W, base, idx)), align);
}

static inline LLVMValueRef zext(bc *E, LLVMValueRef v, LLVMTypeRef ty) {
  return LLVMBuildZExt(E->b, v, ty, "");
}
static inline LLVMValueRef trunc_to(bc *E, LLVMValueRef v, LLVMTypeRef ty) {
  return LLVMBuildTrunc(E->b, v, ty, "");
}

/* One target row's constants (from shared memory). */
typedef struct tgt {
  LLVMValueRef t, k, x1, hm; /* file comment: r32 (t, k, 2^32 mod t), r62 (t, k64) */
} tgt;

/* A counted loop (lw_bc_loop_begin, lw_bc_loop_end): its body, the block
 * after it, the induction variable. */
typedef struct loop {
  LLVMBasicBlockRef body, after;
  LLVMValueRef iv;
} loop;

/* One phase-0 item: its words and their shared indices (at most 16; in
 * 32-bit words when w32, else words of the radix). */
typedef struct item_out {
  LLVMValueRef val[16], at[16];
  int n, w32;
} item_out;
typedef void (*item_fn)(bc *E, LLVMValueRef idx, item_out *o);

/* A thread's phase-1 state: its work item (coefficient group i0 of
 * polynomial poly, target-row group g) and its source words. */
typedef struct p1 {
  LLVMValueRef item, poly, g, i0;
  LLVMValueRef w[LW_BCONV_MAX_L][4];
} p1;

/* bconv_arith.c: the conversion's modular arithmetic */
#define LW_BC_MAX_SUMS 32 /* sums of lw_bc_dot_reduce_n at once: unroll (8) x vec (4) */
LLVMValueRef lw_bc_umin(bc *E, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef lw_bc_csub(bc *E, LLVMValueRef x, LLVMValueRef bound);
LLVMValueRef lw_bc_redc_const(bc *E, LLVMValueRef x, LLVMValueRef w4, LLVMValueRef wk4,
                              LLVMValueRef q);
LLVMValueRef lw_bc_redc_mul(bc *E, LLVMValueRef a, LLVMValueRef b, LLVMValueRef q,
                            LLVMValueRef k);
LLVMValueRef lw_bc_high(bc *E, LLVMValueRef s);
LLVMValueRef lw_bc_reduce62(bc *E, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef cross,
                            LLVMValueRef t, LLVMValueRef k64);
LLVMValueRef lw_bc_redc32_fold(bc *E, const tgt *T, LLVMValueRef s);
void lw_bc_dot_reduce_n(bc *E, const tgt *const *T, LLVMValueRef *const *v,
                        LLVMValueRef *const *c, int l, int count, LLVMValueRef *z);

/* bconv_common.c: loops, phase 0, the polynomials' offsets */
loop lw_bc_loop_begin(bc *E, LLVMValueRef begin, LLVMValueRef end, const char *name);
void lw_bc_loop_end(bc *E, loop *L, LLVMValueRef step, LLVMValueRef end);
LLVMValueRef lw_bc_shared_idx(bc *E, int64_t base, LLVMValueRef i, int64_t stride, int64_t field);
void lw_bc_src_item(bc *E, LLVMValueRef idx, item_out *o);
void lw_bc_tgt_item(bc *E, LLVMValueRef idx, item_out *o);
LLVMValueRef lw_bc_product_constant(bc *E, LLVMValueRef cv, LLVMValueRef j, LLVMValueRef t,
                                    LLVMValueRef k);
void lw_bc_for_items(bc *E, LLVMValueRef t64, int64_t count, item_fn fn);
LLVMValueRef lw_bc_poly_offset(bc *E, LLVMValueRef poly);
LLVMValueRef lw_bc_poly_dst(bc *E, LLVMValueRef poly);
void lw_bc_emit_phase0(bc *E, LLVMValueRef tid);

/* bconv_scalar.c: the scalar form's phase 1 */
void lw_bc_phase1_load(bc *E, LLVMValueRef tid, LLVMValueRef blk, p1 *S);
void lw_bc_phase1_compute(bc *E, p1 *S);

/* bconv_mma.c: the tensor-core form */
void lw_bc_build_mma_body(bc *E, LLVMValueRef tid, LLVMValueRef blk);

#endif
