/* bconv.c: the basis conversion kernel (bconv.h) as LLVM IR for the GPU and
 * the host, in its two forms (the scalar form; the tensor-core form below,
 * "Tensor cores"). The plan is bconv_plan.c's, the host JIT bconv_host.c's.
 *
 * Shape. Each thread first issues the loads of its source words (`vec`
 * consecutive coefficients of one polynomial, l rows: each word read once
 * per target-row group), then the block's threads compute the conversion's
 * constants into shared memory (phase 0: from the parameter table and the
 * bconv table, l + m + l*m entries, up to 4 per thread with their loads in
 * flight together), so that both memory latencies overlap; after the
 * barrier each thread computes V_i and walks its target rows (all m, or
 * ceil(m / split) of them), `unroll` rows at a time with their sums
 * interleaved, each an exact sum of l products reduced once, stored dense
 * (phase 1). Threads of a warp take consecutive coefficients, so loads and
 * stores are coalesced; the constants of target row j are the same for
 * every thread (broadcast shared loads, 16 bytes at a time). vec, threads,
 * split and unroll are the plan's tuning (bconv.h; the bconv_plan option).
 *
 * Exactness (R_w = 2^32 for r32, 2^64 for r62: the word; R = 2^32 / 2^62):
 *  - V_i = REDC(w * a'_i) with the constant form of ntt_emit_phase.c (a'k
 *    precomputed), then one conditional subtraction: w < 2s, a' < s give
 *    REDC < w a' / R + s < 2s, so V_i is canonical. a' = a for the standard
 *    form; for the Montgomery form a' = canon(REDC(a * 1)) = h^-1 mod s, so
 *    REDC(w a') = (w R^-1) h^-1: one REDC per word in both forms.
 *  - The table's c_ji = h_i R mod t_j, so S_j = sum_i V_i c_ji = Y_j R
 *    (mod t_j), and Z = S R^-1 mod t_j is the standard result. The
 *    Montgomery result takes c' = c R mod t_j (phase 0: canon(REDC(c R^2))),
 *    so that the same Z is Y_j R.
 *  - r32: V, c < 2^30, a product is below 2^60 and 16 of them below 2^64.
 *    S = hi 2^32 + lo; x = hi (2^32 mod t) + lo = S (mod t) and
 *    x <= (2^32 - 1)(t - 1) + 2^32 - 1 < t 2^32, so REDC(x) < 2t and one
 *    subtraction gives Z = S R^-1 mod t. Past 16 products the sum is folded
 *    to that x (< 2^62) and 12 more fit before the next fold.
 *  - r62: V < 2^60 and every product constant below t, so a sum of 16
 *    products is below 16 2^60 t = 2^64 t, and one Montgomery step with
 *    2^64 (m = lo64(S) k64 mod 2^64, k64 = -t^-1 mod 2^64 from k by one
 *    Newton step) gives u = (S + m t) / 2^64 < S / 2^64 + t < 2t: one
 *    subtraction makes it canonical. It is S 2^-64, so phase 0 scales the
 *    product constants by 4 (c'' = 4c mod t: S 2^-64 = Y R 4 2^-64 = Y);
 *    past 16 products the canonical results of 16-product chunks are added
 *    mod t. The products: with x = x0 + 2^32 x1, c = c0 + 2^32 c1 (x1, c1 <
 *    2^28), V c = x0 c0 + 2^64 x1 c1 + 2^32 (x0 c1 + x1 c0); the first two
 *    go into a 128-bit sum (one carry chain), the cross terms (< 2^61 per
 *    product) into a 64-bit one, added in at weight 2^32 every 8 products
 *    and by the reduction (lw_bconv_mac62_ptx, lw_bconv_reduce62_ptx on the
 *    GPU: u32 multiply-adds that ptxas fuses into wide ones).
 *  - Lift: V = c' (< q), c_j = R mod t_j, so Z = c' mod t_j by the same
 *    sums; then the subtraction of h mod t_j (+ t_j when negative). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/arith.h"
#include "lower/bconv.h"
#include "lower/bconv_layout.h"
#include "lower/ntt.h"
#include "lower/ntt_redc62_ptx.h"
#include "nvptx/nvptx.h"

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

static LLVMValueRef cw(bc *E, uint64_t x) { return LLVMConstInt(E->W, x, 0); }
static LLVMValueRef c32(bc *E, uint64_t x) { return LLVMConstInt(E->i32, x, 0); }
static LLVMValueRef c64(bc *E, uint64_t x) { return LLVMConstInt(E->i64, x, 0); }
static unsigned walign(bc *E) { return (unsigned)(E->wbits / 8); }

static void fn_attr(bc *E, LLVMValueRef fn, const char *name) { lw_fn_attr(E->c, fn, name); }

static void param_attr(bc *E, LLVMValueRef fn, unsigned param, const char *name) {
  lw_param_attr(E->c, fn, param, name);
}

static LLVMValueRef sreg(bc *E, const char *name) { return lw_intrinsic0(E->c, E->m, E->b, name); }

static LLVMValueRef gep(bc *E, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(E->b, ty, base, &idx, 1, "");
}

static LLVMValueRef load_at(bc *E, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef idx,
                            unsigned align, const char *name) {
  LLVMValueRef v = LLVMBuildLoad2(E->b, ty, gep(E, E->W, base, idx), name);
  LLVMSetAlignment(v, align);
  return v;
}

static void store_at(bc *E, LLVMValueRef v, LLVMValueRef base, LLVMValueRef idx, unsigned align) {
  LLVMSetAlignment(LLVMBuildStore(E->b, v, gep(E, E->W, base, idx)), align);
}

static LLVMValueRef zext(bc *E, LLVMValueRef v, LLVMTypeRef ty) {
  return LLVMBuildZExt(E->b, v, ty, "");
}
static LLVMValueRef trunc_to(bc *E, LLVMValueRef v, LLVMTypeRef ty) {
  return LLVMBuildTrunc(E->b, v, ty, "");
}

/* ------------------------------------------------------------ arithmetic */

static LLVMValueRef umin(bc *E, LLVMValueRef a, LLVMValueRef b) {
  unsigned id = LLVMLookupIntrinsicID("llvm.umin", 9);
  LLVMTypeRef ty = LLVMTypeOf(a);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(E->m, id, &ty, 1);
  LLVMValueRef args[2] = {a, b};
  return LLVMBuildCall2(E->b, LLVMIntrinsicGetType(E->c, id, &ty, 1), fn, args, 2, "");
}

/* $0 = text($1 ..) on 64-bit operands, as inline PTX without side effects. */
static LLVMValueRef asm64(bc *E, const char *text, LLVMValueRef *in, unsigned n) {
  LLVMTypeRef args[5] = {E->i64, E->i64, E->i64, E->i64, E->i64};
  LLVMTypeRef fty = LLVMFunctionType(E->i64, args, n, 0);
  char cons[32] = "=l";
  for (unsigned j = 0; j < n; j++) strcat(cons, ",l");
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 0, 0,
                                     LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(E->b, fty, fn, in, n, "");
}

/* x - bound when x >= bound, else x (ntt_emit_phase.c's csub: r32 one
 * unsigned minimum, r62 on the GPU the sign of x - bound in PTX; every use
 * here has x < 2^63 + bound) */
static LLVMValueRef csub(bc *E, LLVMValueRef x, LLVMValueRef bound) {
  if (E->wbits == 64 && E->target == LW_GPU) {
    LLVMValueRef in[2] = {x, bound};
    return asm64(E, lw_ntt_csub62_ptx, in, 2);
  }
  LLVMValueRef d = LLVMBuildSub(E->b, x, bound, "");
  if (E->wbits == 32) return umin(E, x, d);
  return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntUGE, x, bound, ""), d, x, "");
}

/* High word of a*b (64-bit words). */
static LLVMValueRef mulhi64(bc *E, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef p = LLVMBuildNUWMul(E->b, zext(E, a, E->i128), zext(E, b, E->i128), "");
  return trunc_to(E, LLVMBuildLShr(E->b, p, LLVMConstInt(E->i128, 64, 0), ""), E->i64);
}

/* REDC(w * x) for a constant w given as (w4, wk4) (ntt_emit_phase.c's
 * form: r32 w and w k mod 2^32, canonical result; r62 4w and w 4k mod
 * 2^64, lazy result, inline PTX on the GPU). */
static LLVMValueRef redc_const(bc *E, LLVMValueRef x, LLVMValueRef w4, LLVMValueRef wk4,
                               LLVMValueRef q) {
  if (E->wbits == 32) {
    LLVMValueRef m = LLVMBuildMul(E->b, x, wk4, "m");
    LLVMValueRef t = LLVMBuildNUWMul(E->b, zext(E, w4, E->i64), zext(E, x, E->i64), "");
    LLVMValueRef mq = LLVMBuildNUWMul(E->b, zext(E, m, E->i64), zext(E, q, E->i64), "");
    LLVMValueRef u = LLVMBuildLShr(E->b, LLVMBuildNUWAdd(E->b, t, mq, ""), c64(E, 32), "");
    return csub(E, trunc_to(E, u, E->W), q);
  }
  if (E->target == LW_GPU) {
    LLVMValueRef in[4] = {x, w4, wk4, q};
    return asm64(E, lw_ntt_redc62_ptx, in, 4);
  }
  LLVMValueRef m4 = LLVMBuildMul(E->b, x, wk4, "m4");
  LLVMValueRef carry = zext(E, LLVMBuildICmp(E->b, LLVMIntNE, m4, cw(E, 0), ""), E->W);
  LLVMValueRef u = LLVMBuildNUWAdd(E->b, mulhi64(E, m4, q), carry, "");
  return LLVMBuildNUWAdd(E->b, mulhi64(E, w4, x), u, "u");
}

/* SPEC's REDC(a * b) written out (phase 0's one-off constants): r32
 * canonical, r62 lazy. k: r32 -q^-1 mod 2^32, r62 -q^-1 mod 2^62. */
static LLVMValueRef redc_mul(bc *E, LLVMValueRef a, LLVMValueRef b, LLVMValueRef q,
                             LLVMValueRef k) {
  if (E->wbits == 32) {
    LLVMValueRef t = LLVMBuildNUWMul(E->b, zext(E, a, E->i64), zext(E, b, E->i64), "");
    LLVMValueRef m = LLVMBuildMul(E->b, trunc_to(E, t, E->i32), k, "");
    LLVMValueRef u = LLVMBuildNUWAdd(E->b, t, LLVMBuildNUWMul(E->b, zext(E, m, E->i64),
                                                              zext(E, q, E->i64), ""), "");
    return csub(E, trunc_to(E, LLVMBuildLShr(E->b, u, c64(E, 32), ""), E->W), q);
  }
  LLVMValueRef t = LLVMBuildNUWMul(E->b, zext(E, a, E->i128), zext(E, b, E->i128), "");
  LLVMValueRef m = LLVMBuildAnd(E->b, LLVMBuildMul(E->b, trunc_to(E, t, E->i64), k, ""),
                                c64(E, (UINT64_C(1) << 62) - 1), "");
  LLVMValueRef u = LLVMBuildNUWAdd(E->b, t, LLVMBuildNUWMul(E->b, zext(E, m, E->i128),
                                                            zext(E, q, E->i128), ""), "");
  return trunc_to(E, LLVMBuildLShr(E->b, u, LLVMConstInt(E->i128, 62, 0), ""), E->i64);
}

/* The GPU's r62 multiply-accumulate: one carry chain over the 128-bit sum
 * for x0 c0 + 2^64 x1 c1, and the cross terms into their 64-bit sum (ptxas
 * fuses each mad.lo.cc / madc.hi pair into one wide multiply-add with
 * carries). No carry leaves a top word: the sums are below 2^125 and 2^64. */
const char lw_bconv_mac62_ptx[] =
    "{\n\t"
    ".reg .u32 ma0, ma1, ma2, ma3, mk0, mk1, mx0, mx1, mc0, mc1;\n\t"
    "mov.b64 {ma0, ma1}, $5;\n\t"
    "mov.b64 {ma2, ma3}, $6;\n\t"
    "mov.b64 {mk0, mk1}, $7;\n\t"
    "mov.b64 {mx0, mx1}, $3;\n\t"
    "mov.b64 {mc0, mc1}, $4;\n\t"
    "mad.lo.cc.u32 ma0, mx0, mc0, ma0;\n\t"
    "madc.hi.cc.u32 ma1, mx0, mc0, ma1;\n\t"
    "madc.lo.cc.u32 ma2, mx1, mc1, ma2;\n\t"
    "madc.hi.u32 ma3, mx1, mc1, ma3;\n\t"
    "mad.lo.cc.u32 mk0, mx0, mc1, mk0;\n\t"
    "madc.hi.u32 mk1, mx0, mc1, mk1;\n\t"
    "mad.lo.cc.u32 mk0, mx1, mc0, mk0;\n\t"
    "madc.hi.u32 mk1, mx1, mc0, mk1;\n\t"
    "mov.b64 $0, {ma0, ma1};\n\t"
    "mov.b64 $1, {ma2, ma3};\n\t"
    "mov.b64 $2, {mk0, mk1};\n\t"
    "}";

/* The GPU's r62 reduction: S' = S + 2^32 C, m = lo64(S') k64 mod 2^64,
 * $0 = (S' + m t) >> 64. S' + m t is a multiple of 2^64; with B = that sum
 * less the low halves' product m0 t0 (0 <= m0 t0 < 2^64), it is B rounded
 * up to a multiple of 2^64, so $0 = (B + 2^64 - 1) >> 64: m0 t0 is never
 * computed (lw_ntt_redc62_ptx's trick). */
const char lw_bconv_reduce62_ptx[] =
    "{\n\t"
    ".reg .u32 rs0, rs1, rs2, rs3, rc0, rc1, rt0, rt1, rk0, rk1, rm0, rm1, rx;\n\t"
    "mov.b64 {rs0, rs1}, $1;\n\t"
    "mov.b64 {rs2, rs3}, $2;\n\t"
    "mov.b64 {rc0, rc1}, $3;\n\t"
    "mov.b64 {rt0, rt1}, $4;\n\t"
    "mov.b64 {rk0, rk1}, $5;\n\t"
    "add.cc.u32 rs1, rs1, rc0;\n\t"
    "addc.cc.u32 rs2, rs2, rc1;\n\t"
    "addc.u32 rs3, rs3, 0;\n\t"
    "mul.lo.u32 rm0, rs0, rk0;\n\t"
    "mul.hi.u32 rx, rs0, rk0;\n\t"
    "mad.lo.u32 rx, rs0, rk1, rx;\n\t"
    "mad.lo.u32 rm1, rs1, rk0, rx;\n\t"
    "add.cc.u32 rs0, rs0, 0xffffffff;\n\t"
    "addc.cc.u32 rs1, rs1, 0xffffffff;\n\t"
    "addc.cc.u32 rs2, rs2, 0;\n\t"
    "addc.u32 rs3, rs3, 0;\n\t"
    "mad.lo.cc.u32 rs1, rm0, rt1, rs1;\n\t"
    "madc.hi.cc.u32 rs2, rm0, rt1, rs2;\n\t"
    "addc.u32 rs3, rs3, 0;\n\t"
    "mad.lo.cc.u32 rs1, rm1, rt0, rs1;\n\t"
    "madc.hi.cc.u32 rs2, rm1, rt0, rs2;\n\t"
    "addc.u32 rs3, rs3, 0;\n\t"
    "mad.lo.cc.u32 rs2, rm1, rt1, rs2;\n\t"
    "madc.hi.u32 rs3, rm1, rt1, rs3;\n\t"
    "mov.b64 $0, {rs2, rs3};\n\t"
    "}";

static LLVMValueRef wide(bc *E, LLVMValueRef lo, LLVMValueRef hi) {
  return LLVMBuildOr(E->b, zext(E, lo, E->i128),
                     LLVMBuildShl(E->b, zext(E, hi, E->i128), LLVMConstInt(E->i128, 64, 0), ""), "");
}
static LLVMValueRef high(bc *E, LLVMValueRef s) {
  return trunc_to(E, LLVMBuildLShr(E->b, s, LLVMConstInt(E->i128, 64, 0), ""), E->i64);
}

/* (lo, hi) += x0 c0 + 2^64 x1 c1; *cross += x0 c1 + x1 c0. */
static void mac62(bc *E, LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *cross, LLVMValueRef x,
                  LLVMValueRef c) {
  if (E->target == LW_GPU) {
    LLVMTypeRef args[5] = {E->i64, E->i64, E->i64, E->i64, E->i64};
    LLVMTypeRef three[3] = {E->i64, E->i64, E->i64};
    LLVMTypeRef ret = LLVMStructTypeInContext(E->c, three, 3, 0);
    LLVMTypeRef fty = LLVMFunctionType(ret, args, 5, 0);
    static const char cons[] = "=l,=l,=l,l,l,l,l,l";
    LLVMValueRef fn = LLVMGetInlineAsm(fty, lw_bconv_mac62_ptx, strlen(lw_bconv_mac62_ptx), cons,
                                       sizeof cons - 1, 0, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef in[5] = {x, c, *lo, *hi, *cross};
    LLVMValueRef r = LLVMBuildCall2(E->b, fty, fn, in, 5, "");
    *lo = LLVMBuildExtractValue(E->b, r, 0, "s.lo");
    *hi = LLVMBuildExtractValue(E->b, r, 1, "s.hi");
    *cross = LLVMBuildExtractValue(E->b, r, 2, "cross");
    return;
  }
  LLVMValueRef m32 = c64(E, 0xffffffffu), sh = c64(E, 32);
  LLVMValueRef x0 = LLVMBuildAnd(E->b, x, m32, ""), x1 = LLVMBuildLShr(E->b, x, sh, "");
  LLVMValueRef c0 = LLVMBuildAnd(E->b, c, m32, ""), c1 = LLVMBuildLShr(E->b, c, sh, "");
  LLVMValueRef add = wide(E, LLVMBuildNUWMul(E->b, x0, c0, ""), LLVMBuildNUWMul(E->b, x1, c1, ""));
  LLVMValueRef s = LLVMBuildAdd(E->b, wide(E, *lo, *hi), add, "");
  *lo = trunc_to(E, s, E->i64);
  *hi = high(E, s);
  LLVMValueRef cr = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, x0, c1, ""),
                                    LLVMBuildNUWMul(E->b, x1, c0, ""), "");
  *cross = LLVMBuildNUWAdd(E->b, *cross, cr, "cross");
}

/* (lo, hi) += cross << 32. */
static void flush62(bc *E, LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef cross) {
  LLVMValueRef s = LLVMBuildAdd(E->b, wide(E, *lo, *hi),
                                LLVMBuildShl(E->b, zext(E, cross, E->i128),
                                             LLVMConstInt(E->i128, 32, 0), ""), "");
  *lo = trunc_to(E, s, E->i64);
  *hi = high(E, s);
}

/* (S + 2^32 cross) 2^-64 mod t, in [0, 2t) for sums below 2^64 t. */
static LLVMValueRef reduce62(bc *E, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef cross,
                             LLVMValueRef t, LLVMValueRef k64) {
  if (E->target == LW_GPU) {
    LLVMValueRef in[5] = {lo, hi, cross, t, k64};
    return asm64(E, lw_bconv_reduce62_ptx, in, 5);
  }
  flush62(E, &lo, &hi, cross);
  LLVMValueRef m = LLVMBuildMul(E->b, lo, k64, "m");
  LLVMValueRef s = LLVMBuildAdd(E->b, wide(E, lo, hi),
                                LLVMBuildNUWMul(E->b, zext(E, m, E->i128), zext(E, t, E->i128), ""), "");
  return high(E, s);
}

/* a * b + c for 32-bit a, b and 64-bit c. On the GPU one mad.wide.u32:
 * written as IR, the loop-invariant zero extensions of the V_i move out of
 * the target loop and NVPTX then selects 64 x 64-bit products. */
static LLVMValueRef madwide32(bc *E, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  if (E->target == LW_GPU) {
    LLVMTypeRef args[3] = {E->i32, E->i32, E->i64};
    LLVMTypeRef fty = LLVMFunctionType(E->i64, args, 3, 0);
    static const char text[] = "mad.wide.u32 $0, $1, $2, $3;";
    static const char cons[] = "=l,r,r,l";
    LLVMValueRef fn = LLVMGetInlineAsm(fty, text, sizeof text - 1, cons, sizeof cons - 1, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMValueRef in[3] = {a, b, c};
    return LLVMBuildCall2(E->b, fty, fn, in, 3, "");
  }
  return LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, zext(E, a, E->i64), zext(E, b, E->i64), ""), c,
                         "");
}

/* One target row's constants (from shared memory). */
typedef struct tgt {
  LLVMValueRef t, k, x1, hm; /* file comment: r32 (t, k, 2^32 mod t), r62 (t, k64) */
} tgt;

/* r32: hi (2^32 mod t) + lo of a 64-bit sum (the file comment's x). */
static LLVMValueRef fold32(bc *E, const tgt *T, LLVMValueRef s) {
  LLVMValueRef hi = trunc_to(E, LLVMBuildLShr(E->b, s, c64(E, 32), ""), E->i32);
  LLVMValueRef lo = LLVMBuildAnd(E->b, s, c64(E, 0xffffffffu), "");
  return madwide32(E, hi, T->x1, lo);
}

/* r32: s R^-1 mod t, canonical, for a 64-bit sum s (fold, REDC, one
 * subtraction: the file comment). */
static LLVMValueRef redc32_fold(bc *E, const tgt *T, LLVMValueRef s) {
  LLVMValueRef x = fold32(E, T, s);
  LLVMValueRef m = LLVMBuildMul(E->b, trunc_to(E, x, E->i32), T->k, "m");
  LLVMValueRef u = madwide32(E, m, T->t, x);
  return csub(E, trunc_to(E, LLVMBuildLShr(E->b, u, c64(E, 32), ""), E->W), T->t);
}

/* Z = sum_r v[r] c[r] R^-1 mod t, canonical (the file comment). */
static LLVMValueRef dot_reduce(bc *E, const tgt *T, LLVMValueRef *v, LLVMValueRef *c, int l) {
  if (E->wbits == 32) {
    LLVMValueRef s = c64(E, 0);
    int cnt = 0, limit = 16;
    for (int r = 0; r < l; r++) {
      if (cnt == limit) {
        s = fold32(E, T, s);
        cnt = 0, limit = 12;
      }
      s = madwide32(E, v[r], c[r], s);
      cnt++;
    }
    return redc32_fold(E, T, s);
  }
  LLVMValueRef z = NULL;
  for (int r0 = 0; r0 < l; r0 += 16) { /* chunks of 16 products: below 2^64 t */
    LLVMValueRef lo = c64(E, 0), hi = c64(E, 0), cross = c64(E, 0);
    for (int r = r0; r < l && r < r0 + 16; r++) {
      if (r == r0 + 8) { /* the cross sum holds 8 products */
        flush62(E, &lo, &hi, cross);
        cross = c64(E, 0);
      }
      mac62(E, &lo, &hi, &cross, v[r], c[r]);
    }
    LLVMValueRef u = csub(E, reduce62(E, lo, hi, cross, T->t, T->k), T->t);
    z = z ? csub(E, LLVMBuildNUWAdd(E->b, z, u, ""), T->t) : u;
  }
  return z;
}

/* z[k] = dot_reduce(T[k], v[k], c[k]) for k < count, r32's sums in
 * lockstep (one multiply-add of each sum in turn: independent chains for
 * the scheduler, whatever order ptxas keeps). */
#define MAX_SUMS 32 /* unroll (8) x vec (4) */
static void dot_reduce_n(bc *E, const tgt *const *T, LLVMValueRef *const *v,
                         LLVMValueRef *const *c, int l, int count, LLVMValueRef *z) {
  if (E->wbits == 64) {
    for (int k = 0; k < count; k++) z[k] = dot_reduce(E, T[k], v[k], c[k], l);
    return;
  }
  LLVMValueRef s[MAX_SUMS];
  for (int k = 0; k < count; k++) s[k] = c64(E, 0);
  int cnt = 0, limit = 16;
  for (int r = 0; r < l; r++) {
    if (cnt == limit) {
      for (int k = 0; k < count; k++) s[k] = fold32(E, T[k], s[k]);
      cnt = 0, limit = 12;
    }
    for (int k = 0; k < count; k++) s[k] = madwide32(E, v[k][r], c[k][r], s[k]);
    cnt++;
  }
  LLVMValueRef x[MAX_SUMS], m[MAX_SUMS];
  for (int k = 0; k < count; k++) x[k] = fold32(E, T[k], s[k]);
  for (int k = 0; k < count; k++) m[k] = LLVMBuildMul(E->b, trunc_to(E, x[k], E->i32), T[k]->k, "m");
  for (int k = 0; k < count; k++) {
    LLVMValueRef u = madwide32(E, m[k], T[k]->t, x[k]);
    z[k] = csub(E, trunc_to(E, LLVMBuildLShr(E->b, u, c64(E, 32), ""), E->W), T[k]->t);
  }
}

/* ----------------------------------------------------------- loops */

typedef struct loop {
  LLVMBasicBlockRef body, after;
  LLVMValueRef iv;
} loop;

/* for (iv = begin; iv < end; iv += step), begin possibly >= end (then no
 * iteration). Types of the iv's: that of begin. */
static loop loop_begin(bc *E, LLVMValueRef begin, LLVMValueRef end, const char *name) {
  loop L;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
  L.body = LLVMAppendBasicBlockInContext(E->c, E->fn, name);
  L.after = LLVMAppendBasicBlockInContext(E->c, E->fn, "");
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntULT, begin, end, ""), L.body, L.after);
  LLVMPositionBuilderAtEnd(E->b, L.body);
  L.iv = LLVMBuildPhi(E->b, LLVMTypeOf(begin), name);
  LLVMAddIncoming(L.iv, &begin, &pre, 1);
  return L;
}

static void loop_end(bc *E, loop *L, LLVMValueRef step, LLVMValueRef end) {
  LLVMValueRef next = LLVMBuildNUWAdd(E->b, L->iv, step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
  LLVMAddIncoming(L->iv, &next, &latch, 1);
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntULT, next, end, ""), L->body, L->after);
  LLVMPositionBuilderAtEnd(E->b, L->after);
}

/* ------------------------------------------------------------ phase 0 */

static LLVMValueRef param(bc *E, int row, LLVMValueRef col) {
  LLVMValueRef idx = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, E->pstride, c64(E, (uint64_t)row), ""),
                                     col, "");
  return load_at(E, E->W, E->params, idx, walign(E), "");
}

/* Column i (i64) of the source (dst 0) or target (dst 1) columns: an add
 * when they are consecutive chain positions, else a load from the
 * constant array. */
static LLVMValueRef column(bc *E, int dst, LLVMValueRef i) {
  int32_t first = dst ? E->dcol0 : E->scol0;
  if (first >= 0) return LLVMBuildNUWAdd(E->b, i, dst ? E->ddcol0 : E->dscol0, "col");
  if (E->P->digits > 1) /* the digit's row of the array */
    i = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, E->dig, c64(E, (uint64_t)(dst ? E->P->m : E->P->l)), ""),
                        i, "");
  LLVMValueRef idx[2] = {c64(E, 0), i};
  LLVMValueRef p = LLVMBuildInBoundsGEP2(E->b, dst ? E->dcols_ty : E->scols_ty,
                                         dst ? E->dcols : E->scols, idx, 2, "");
  LLVMValueRef v = LLVMBuildLoad2(E->b, E->i32, p, "col");
  LLVMSetAlignment(v, 4);
  return zext(E, v, E->i64);
}

/* q and k (r32 -q^-1 mod 2^32, r62 -q^-1 mod 2^62) of parameter column col. */
static void modulus(bc *E, LLVMValueRef col, LLVMValueRef *q, LLVMValueRef *k) {
  *q = LLVMBuildLShr(E->b, param(E, 0, col), cw(E, 1), "q");
  LLVMValueRef lo = param(E, 3, col), hi = param(E, 4, col);
  *k = LLVMBuildOr(E->b, lo, LLVMBuildShl(E->b, hi, cw(E, (uint64_t)(E->wbits == 64 ? 31 : 16)), ""),
                   "k");
}

static LLVMValueRef shared_idx(bc *E, int64_t base, LLVMValueRef i, int64_t stride, int64_t field) {
  LLVMValueRef x = LLVMBuildNUWMul(E->b, i, c64(E, (uint64_t)stride), "");
  return LLVMBuildNUWAdd(E->b, x, c64(E, (uint64_t)(base + field)), "");
}

static void sstore(bc *E, LLVMValueRef v, LLVMValueRef idx) {
  store_at(E, v, E->smem, idx, walign(E));
}

/* One phase-0 item: its words and their shared indices (at most 16; in
 * 32-bit words when w32, else words of the radix). */
typedef struct item_out {
  LLVMValueRef val[16], at[16];
  int n, w32;
} item_out;
typedef void (*item_fn)(bc *E, LLVMValueRef idx, item_out *o);

/* Source row idx: a' (or 4a'), its constant, s. */
static void src_item(bc *E, LLVMValueRef idx, item_out *o) {
  const lw_bconv_plan *p = E->P;
  LLVMValueRef s, k;
  modulus(E, column(E, 0, idx), &s, &k);
  LLVMValueRef a = cw(E, 0), ak = cw(E, 0);
  if (!p->lift) {
    LLVMValueRef ti = LLVMBuildNUWAdd(E->b, idx, E->dtab_off, "");
    a = load_at(E, E->W, E->dtable, ti, walign(E), "a");
    /* Montgomery input: a' = canon(REDC(a * 1)) = h^-1 mod s */
    if (p->mont) a = csub(E, redc_mul(E, a, cw(E, 1), s, k), s);
    if (E->wbits == 64) {
      LLVMValueRef k4 = LLVMBuildShl(E->b, k, cw(E, 2), "");
      ak = LLVMBuildMul(E->b, a, k4, "ak4");
      a = LLVMBuildShl(E->b, a, cw(E, 2), "a4");
    } else {
      ak = LLVMBuildMul(E->b, a, k, "ak");
    }
  }
  LLVMValueRef f[3] = {a, ak, s};
  for (int j = 0; j < 3; j++) o->val[j] = f[j], o->at[j] = shared_idx(E, 0, idx, SRC_WORDS, j);
  o->n = 3;
}

/* Target row idx: r32 (t, k, 2^32 mod t, h mod t); r62 (t, k64, h mod t, 0). */
static void tgt_item(bc *E, LLVMValueRef idx, item_out *o) {
  const lw_bconv_plan *p = E->P;
  LLVMValueRef t, k;
  modulus(E, column(E, 1, idx), &t, &k);
  LLVMValueRef f[4] = {t, k, cw(E, 0), cw(E, 0)};
  if (E->wbits == 64) {
    /* k64 = -t^-1 mod 2^64 from t^-1 mod 2^62 by one Newton step */
    LLVMValueRef y = LLVMBuildAnd(E->b, LLVMBuildNeg(E->b, k, ""), cw(E, (UINT64_C(1) << 62) - 1), "");
    y = LLVMBuildMul(E->b, y, LLVMBuildSub(E->b, cw(E, 2), LLVMBuildMul(E->b, t, y, ""), ""), "");
    f[1] = LLVMBuildNeg(E->b, y, "k64");
  } else {
    /* 2^32 mod t = (2^32 - t) mod t */
    f[2] = LLVMBuildURem(E->b, LLVMBuildNeg(E->b, t, ""), t, "r1");
  }
  if (p->lift) {
    LLVMValueRef q, qk;
    modulus(E, column(E, 0, c64(E, 0)), &q, &qk);
    f[E->wbits == 64 ? 2 : 3] = LLVMBuildURem(E->b, LLVMBuildLShr(E->b, q, cw(E, 1), ""), t, "hm");
  } else if (E->mma) {
    /* 2^8 R mod t (r32 2^40, r62 2^70), by 8 doublings of R mod t, so
     * that REDC(c 2^8 R) = 2^8 c; r62 also 2^32 mod t (field 2, the
     * reduction's fold) */
    LLVMValueRef r = f[2];
    if (E->wbits == 64) {
      r = LLVMBuildURem(E->b, cw(E, UINT64_C(1) << 62), t, "r62");
      f[2] = LLVMBuildURem(E->b, cw(E, UINT64_C(1) << 32), t, "r32");
    }
    for (int d = 0; d < 8; d++) r = csub(E, LLVMBuildShl(E->b, r, cw(E, 1), ""), t);
    f[3] = r;
  }
  for (int j = 0; j < 4; j++) o->val[j] = f[j], o->at[j] = shared_idx(E, tgt_base(p), idx, TGT_WORDS, j);
  o->n = 4;
}

/* A table word c of target row j in the form the sums use: Montgomery
 * output c R mod t (canon(REDC(c R^2))), and r62's factor 4 (its
 * reduction divides by 2^64, not R). */
static LLVMValueRef product_constant(bc *E, LLVMValueRef cv, LLVMValueRef j, LLVMValueRef t,
                                     LLVMValueRef k) {
  if (E->P->mont) cv = csub(E, redc_mul(E, cv, param(E, 5, column(E, 1, j)), t, k), t);
  if (E->wbits == 64) {
    cv = LLVMBuildShl(E->b, cv, cw(E, 2), "");
    cv = csub(E, csub(E, cv, LLVMBuildShl(E->b, t, cw(E, 1), "")), t);
  }
  return cv;
}

/* Product constant idx = j l + i, target-row major. */
static void c_item(bc *E, LLVMValueRef idx, item_out *o) {
  const lw_bconv_plan *p = E->P;
  int64_t l = p->l;
  LLVMValueRef j = l == 1 ? idx : LLVMBuildUDiv(E->b, idx, c64(E, (uint64_t)l), "j");
  LLVMValueRef i = l == 1 ? c64(E, 0) : LLVMBuildURem(E->b, idx, c64(E, (uint64_t)l), "i");
  LLVMValueRef col = column(E, 1, j), t, k, cv;
  modulus(E, col, &t, &k);
  if (p->lift) {
    /* R mod t (r62 scaled: 4R = 2^64 mod t): with V = c', the sum
     * reduces to c' mod t */
    cv = LLVMBuildURem(E->b, LLVMBuildNeg(E->b, t, ""), t, "rt");
  } else {
    LLVMValueRef ti = LLVMBuildNUWAdd(E->b, LLVMBuildNUWAdd(E->b, idx, E->dtab_off, ""),
                                      c64(E, (uint64_t)l), "");
    cv = product_constant(E, load_at(E, E->W, E->dtable, ti, walign(E), "c"), j, t, k);
  }
  o->val[0] = cv;
  o->at[0] = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, j, c64(E, (uint64_t)crow_words(p)), ""),
                             LLVMBuildNUWAdd(E->b, i, c64(E, (uint64_t)c_base(p)), ""), "");
  o->n = 1;
}

/* Items [0, count) over the block's threads: thread tid takes tid, tid +
 * threads, ... Up to 4 of a thread's items are computed straight-line from
 * clamped (always valid) indices before any is stored, so their global
 * loads are in flight together: phase 0 costs about one load latency, not
 * one per item; the stores of items past count are skipped. */
static void for_items(bc *E, LLVMValueRef t64, int64_t count, item_fn fn) {
  int64_t T = E->threads, K = (count + T - 1) / T;
  if (count <= 0) return;
  int C = K < 4 ? (int)K : 4;
  int64_t chunks = (K + C - 1) / C;
  loop L;
  LLVMValueRef base = t64;
  if (chunks > 1) {
    L = loop_begin(E, c64(E, 0), c64(E, (uint64_t)chunks), "chunk");
    base = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, L.iv, c64(E, (uint64_t)(C * T)), ""), t64, "");
  }
  item_out o[4];
  memset(o, 0, sizeof o);
  LLVMValueRef ok[4];
  for (int k = 0; k < C; k++) {
    LLVMValueRef idx = LLVMBuildNUWAdd(E->b, base, c64(E, (uint64_t)(k * T)), "item");
    ok[k] = LLVMBuildICmp(E->b, LLVMIntULT, idx, c64(E, (uint64_t)count), "");
    fn(E, umin(E, idx, c64(E, (uint64_t)(count - 1))), &o[k]);
  }
  for (int k = 0; k < C; k++) {
    LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(E->c, E->fn, "store");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(E->c, E->fn, "");
    LLVMBuildCondBr(E->b, ok[k], st, next);
    LLVMPositionBuilderAtEnd(E->b, st);
    for (int j = 0; j < o[k].n; j++)
      if (o[k].w32) LLVMSetAlignment(LLVMBuildStore(E->b, o[k].val[j], gep(E, E->i32, E->smem, o[k].at[j])), 4);
      else sstore(E, o[k].val[j], o[k].at[j]);
    LLVMBuildBr(E->b, next);
    LLVMPositionBuilderAtEnd(E->b, next);
  }
  if (chunks > 1) loop_end(E, &L, c64(E, 1), c64(E, (uint64_t)chunks));
}

static void emit_phase0(bc *E, LLVMValueRef tid) {
  const lw_bconv_plan *p = E->P;
  LLVMValueRef t64 = zext(E, tid, E->i64);
  for_items(E, t64, p->l, src_item);
  for_items(E, t64, p->m, tgt_item);
  for_items(E, t64, (int64_t)p->l * p->m, c_item);
}

/* ------------------------------------------------------------ phase 1 */

/* Loads `n` words from shared memory at constant-aligned index idx (a
 * multiple of E->V words): whole 16-byte vectors. */
static void sload_words(bc *E, LLVMValueRef idx, int n, LLVMValueRef *out) {
  LLVMTypeRef vt = LLVMVectorType(E->W, (unsigned)E->V);
  for (int b = 0; b < n; b += E->V) {
    LLVMValueRef at = LLVMBuildNUWAdd(E->b, idx, c64(E, (uint64_t)b), "");
    LLVMValueRef v = load_at(E, vt, E->smem, at, 16, "cv");
    for (int e = 0; e < E->V && b + e < n; e++)
      out[b + e] = LLVMBuildExtractElement(E->b, v, c32(E, (uint64_t)e), "");
  }
}

static int src_vectorizable(const lw_bconv_plan *p) {
  if (p->vec == 1 || p->src_index_stride != 1) return 0;
  if (p->src_offset % p->vec || p->src_row_stride % p->vec) return 0;
  for (int k = 1; k < p->digits; k++)
    if (p->more[k - 1].src_offset % p->vec) return 0;
  for (int a = 0; a < p->src_nax; a++)
    if (p->src_ext[a] > 1 && p->src_stride[a] % p->vec) return 0;
  return 1;
}

/* The source offset of polynomial poly (i64): its coordinates in the
 * view's index space, and the digit's offset. */
static LLVMValueRef poly_offset(bc *E, LLVMValueRef poly) {
  const lw_bconv_plan *p = E->P;
  LLVMValueRef off = E->dsrc_off, rest = poly;
  for (int a = p->src_nax - 1; a >= 0; a--) {
    LLVMValueRef ext = c64(E, (uint64_t)p->src_ext[a]);
    LLVMValueRef coord = a == 0 ? rest : LLVMBuildURem(E->b, rest, ext, "");
    if (a) rest = LLVMBuildUDiv(E->b, rest, ext, "");
    if (p->src_ext[a] > 1)
      off = LLVMBuildAdd(E->b, off, LLVMBuildMul(E->b, coord, c64(E, (uint64_t)p->src_stride[a]), ""), "");
  }
  return off;
}

/* The destination's first word of polynomial poly (rows of a larger
 * buffer: dst_offset, dst_poly_stride; 0: dense). */
static LLVMValueRef poly_dst(bc *E, LLVMValueRef poly) {
  const lw_bconv_plan *p = E->P;
  int64_t pstr = p->dst_poly_stride ? p->dst_poly_stride : p->m * (INT64_C(1) << p->log_n);
  LLVMValueRef d = LLVMBuildNUWMul(E->b, poly, c64(E, (uint64_t)pstr), "");
  if (p->digits > 1 || p->dst_offset) d = LLVMBuildNUWAdd(E->b, d, E->ddst_off, "dbase.at");
  return d;
}

/* A thread's phase-1 state: its work item (coefficient group i0 of
 * polynomial poly, target-row group g) and its source words. */
typedef struct p1 {
  LLVMValueRef item, poly, g, i0;
  LLVMValueRef w[LW_BCONV_MAX_L][4];
} p1;

/* The work item and its source words. Issued before phase 0 on the GPU:
 * the words' memory latency overlaps the constants' (a thread past the
 * last item loads the last item's words and stores nothing). */
static void phase1_load(bc *E, LLVMValueRef tid, LLVMValueRef blk, p1 *S) {
  const lw_bconv_plan *p = E->P;
  int l = p->l, vec = p->vec;
  int64_t n = INT64_C(1) << p->log_n, per = n / vec;
  int64_t items = p->polys * p->split * per;
  S->item = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, blk, c64(E, p->threads), ""),
                            zext(E, tid, E->i64), "item");
  LLVMValueRef item = umin(E, S->item, c64(E, (uint64_t)(items - 1)));
  LLVMValueRef rest = LLVMBuildUDiv(E->b, item, c64(E, (uint64_t)per), "");
  S->i0 = LLVMBuildNUWMul(E->b, LLVMBuildURem(E->b, item, c64(E, (uint64_t)per), ""),
                          c64(E, (uint64_t)vec), "i0");
  if (p->split > 1) {
    S->g = LLVMBuildURem(E->b, rest, c64(E, (uint64_t)p->split), "g");
    S->poly = LLVMBuildUDiv(E->b, rest, c64(E, (uint64_t)p->split), "poly");
  } else {
    S->g = c64(E, 0);
    S->poly = rest;
  }
  LLVMValueRef off = LLVMBuildAdd(E->b, poly_offset(E, S->poly),
                                  LLVMBuildMul(E->b, S->i0, c64(E, (uint64_t)p->src_index_stride), ""),
                                  "off");
  int vload = E->target == LW_GPU && src_vectorizable(p);
  LLVMTypeRef vt = LLVMVectorType(E->W, (unsigned)vec);
  for (int r = 0; r < l; r++) {
    LLVMValueRef roff = LLVMBuildAdd(E->b, off, c64(E, (uint64_t)(r * p->src_row_stride)), "");
    if (vload) {
      LLVMValueRef x = load_at(E, vt, E->src, roff, (unsigned)(vec * E->wbits / 8), "w");
      for (int e = 0; e < vec; e++)
        S->w[r][e] = LLVMBuildExtractElement(E->b, x, c32(E, (uint64_t)e), "");
    } else {
      for (int e = 0; e < vec; e++) {
        LLVMValueRef at = LLVMBuildAdd(E->b, roff, c64(E, (uint64_t)(e * p->src_index_stride)), "");
        S->w[r][e] = load_at(E, E->W, E->src, at, walign(E), "w");
      }
    }
  }
}

/* `rows` consecutive target rows from row j: their sums for each of the
 * thread's coefficients in lockstep, then their stores. */
static void target_rows(bc *E, LLVMValueRef v[][4], LLVMValueRef dbase, LLVMValueRef j,
                        int rows) {
  const lw_bconv_plan *p = E->P;
  int l = p->l, vec = p->vec;
  int64_t n = INT64_C(1) << p->log_n;
  LLVMValueRef tf[8][8], cv[8][LW_BCONV_MAX_L + 4], col[4][LW_BCONV_MAX_L];
  tgt T[8];
  const tgt *Tp[MAX_SUMS];
  LLVMValueRef *vp[MAX_SUMS], *cp[MAX_SUMS], z[MAX_SUMS];
  for (int e = 0; e < vec; e++)
    for (int r = 0; r < l; r++) col[e][r] = v[r][e];
  for (int u = 0; u < rows; u++) {
    LLVMValueRef ju = u ? LLVMBuildNUWAdd(E->b, j, c64(E, (uint64_t)u), "") : j;
    sload_words(E, shared_idx(E, tgt_base(p), ju, TGT_WORDS, 0), TGT_WORDS, tf[u]);
    T[u] = (tgt){tf[u][0], tf[u][1], tf[u][2], E->wbits == 64 ? tf[u][2] : tf[u][3]};
    sload_words(E, shared_idx(E, c_base(p), ju, crow_words(p), 0), l, cv[u]);
    for (int e = 0; e < vec; e++) {
      Tp[u * vec + e] = &T[u];
      vp[u * vec + e] = col[e];
      cp[u * vec + e] = cv[u];
    }
  }
  dot_reduce_n(E, Tp, vp, cp, l, rows * vec, z);
  LLVMTypeRef vt = LLVMVectorType(E->W, (unsigned)vec);
  for (int u = 0; u < rows; u++) {
    LLVMValueRef *zu = z + u * vec;
    if (p->lift) /* Z - (h mod t), + t when negative */
      for (int e = 0; e < vec; e++) {
        LLVMValueRef d = LLVMBuildSub(E->b, zu[e], T[u].hm, "");
        LLVMValueRef d2 = LLVMBuildAdd(E->b, d, T[u].t, "");
        zu[e] = E->wbits == 32 ? umin(E, d, d2)
                               : LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntULT, zu[e], T[u].hm, ""),
                                                 d2, d, "");
      }
    LLVMValueRef ju = u ? LLVMBuildNUWAdd(E->b, j, c64(E, (uint64_t)u), "") : j;
    LLVMValueRef at = LLVMBuildNUWAdd(E->b, dbase, LLVMBuildNUWMul(E->b, ju, c64(E, (uint64_t)n), ""), "");
    if (vec > 1 && E->target == LW_GPU) {
      LLVMValueRef x = LLVMGetUndef(vt);
      for (int e = 0; e < vec; e++) x = LLVMBuildInsertElement(E->b, x, zu[e], c32(E, (uint64_t)e), "");
      store_at(E, x, E->dst, at, (unsigned)(vec * E->wbits / 8));
    } else {
      for (int e = 0; e < vec; e++)
        store_at(E, zu[e], E->dst, LLVMBuildNUWAdd(E->b, at, c64(E, (uint64_t)e), ""), walign(E));
    }
  }
}

/* After phase 0: V of the source words, then the thread's target rows
 * [g mc, min((g + 1) mc, m)), mc = ceil(m / split), `unroll` at a time
 * and the rest one by one. */
static void phase1_compute(bc *E, p1 *S) {
  const lw_bconv_plan *p = E->P;
  int l = p->l, vec = p->vec, U = p->unroll;
  int64_t n = INT64_C(1) << p->log_n, per = n / vec;
  int64_t items = p->polys * p->split * per;
  int64_t mc = (p->m + p->split - 1) / p->split;
  LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(E->c, E->fn, "work");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->c, E->fn, "done");
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntULT, S->item, c64(E, (uint64_t)items), ""), work,
                  done);
  LLVMPositionBuilderAtEnd(E->b, work);
  LLVMValueRef v[LW_BCONV_MAX_L][4];
  for (int r = 0; r < l; r++) {
    LLVMValueRef sc[SRC_WORDS];
    for (int f = 0; f < SRC_WORDS; f++)
      sc[f] = load_at(E, E->W, E->smem, c64(E, (uint64_t)(r * SRC_WORDS + f)), walign(E), "");
    for (int e = 0; e < vec; e++) {
      if (p->lift) {
        LLVMValueRef q = sc[2], h = LLVMBuildLShr(E->b, q, cw(E, 1), "h");
        LLVMValueRef cc = csub(E, S->w[r][e], q);
        v[r][e] = csub(E, LLVMBuildNUWAdd(E->b, cc, h, ""), q);
      } else {
        LLVMValueRef u = redc_const(E, S->w[r][e], sc[0], sc[1], sc[2]);
        v[r][e] = E->wbits == 64 ? csub(E, u, sc[2]) : u;
      }
    }
  }
  LLVMValueRef dbase = LLVMBuildNUWAdd(E->b, poly_dst(E, S->poly), S->i0, "dbase");
  LLVMValueRef jb = c64(E, 0), je = c64(E, (uint64_t)p->m);
  if (p->split > 1) {
    jb = LLVMBuildNUWMul(E->b, S->g, c64(E, (uint64_t)mc), "jb");
    je = umin(E, LLVMBuildNUWAdd(E->b, jb, c64(E, (uint64_t)mc), ""), c64(E, (uint64_t)p->m));
  }
  LLVMValueRef jm = je; /* the end of the unrolled rows */
  if (U > 1) {
    if (p->split > 1) {
      LLVMValueRef cnt = LLVMBuildNUWSub(E->b, je, jb, "");
      cnt = LLVMBuildNUWMul(E->b, LLVMBuildUDiv(E->b, cnt, c64(E, (uint64_t)U), ""), c64(E, (uint64_t)U), "");
      jm = LLVMBuildNUWAdd(E->b, jb, cnt, "jm");
    } else {
      jm = c64(E, (uint64_t)(p->m / U * U));
    }
  }
  if (U == 1 || p->split > 1 || p->m >= U) {
    loop L = loop_begin(E, jb, jm, "tgt");
    target_rows(E, v, dbase, L.iv, U);
    loop_end(E, &L, c64(E, (uint64_t)U), jm);
  }
  if (U > 1 && (p->split > 1 || p->m % U)) {
    loop L = loop_begin(E, jm, je, "tgt_rest");
    target_rows(E, v, dbase, L.iv, 1);
    loop_end(E, &L, c64(E, 1), je);
  }
  LLVMBuildBr(E->b, done);
  LLVMPositionBuilderAtEnd(E->b, done);
}

/* ---------------------------------------------------------- tensor cores */

/* 8-bit products on the tensor cores (mma.m16n8k32, u8 x u8 -> s32):
 * A[coefficient][k] B[k][n] summed over k, with k = (source row i, byte
 * a) and n = (target row j, byte b), a and b < 4 (r32) or 8 (r62):
 *   A = byte a of V_i (so A's 32-bit fragment words are the V_i
 *       themselves, r62 their low and high halves: 4 consecutive k),
 *   B = byte b of c_jia = c_ji 2^(8a) mod t_j (phase 0b; c_ji the scalar
 *       form's product constant, r62 with its factor 4),
 *   D_b = sum_(i,a) byte_a(V_i) byte_b(c_jia) < 32 KS 255^2 < 2^24,
 *   S = sum_b D_b 2^(8b) = sum_i V_i c_ji (mod t_j).
 * r32: S < 2^48, reduced by the scalar form's fold and REDC. r62: S = L
 * + 2^32 H (L the bytes 0..3, H the bytes 4..7, each below 2^49), folded
 * to L + H (2^32 mod t) < 2^64 t and reduced by the scalar form's 2^-64
 * Montgomery step: the same words either way. A warp converts tiles of
 * 16 coefficients of one polynomial; per tile and group of 8 target rows
 * it runs KS k-steps (8 halves each) for each byte b. Fragments (PTX ISA,
 * m16n8k32 .u8, g = lane / 4, c = lane % 4): A word r (0..3) holds row
 * (coefficient) g + 8 (r % 2), k-word c + 4 (r / 2); B word r holds
 * k-word c + 4 r, column g; D word r holds row g + 8 (r / 2), column 2 c
 * + r % 2. k-word w is half w % 2 of source row w / 2 (r62; r32 row w). */

static LLVMValueRef smem_word(bc *E, LLVMValueRef idx) {
  return load_at(E, E->W, E->smem, idx, walign(E), "");
}

/* Byte b of 32-bit x0..x3 packed into one word (x0's lowest): prmt. */
static LLVMValueRef prmt(bc *E, LLVMValueRef a, LLVMValueRef b, uint32_t sel) {
  LLVMTypeRef args[3] = {E->i32, E->i32, E->i32};
  LLVMTypeRef fty = LLVMFunctionType(E->i32, args, 3, 0);
  static const char text[] = "prmt.b32 $0, $1, $2, $3;", cons[] = "=r,r,r,r";
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, sizeof text - 1, cons, sizeof cons - 1, 0, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMValueRef in[3] = {a, b, c32(E, sel)};
  return LLVMBuildCall2(E->b, fty, fn, in, 3, "");
}
static LLVMValueRef byte_word(bc *E, LLVMValueRef *x, int b) {
  uint32_t sel = (uint32_t)b | (uint32_t)(4 + b) << 4;
  return prmt(E, prmt(E, x[0], x[1], sel), prmt(E, x[2], x[3], sel), 0x5410);
}

/* Phase 0b item idx = (j, i) over the padded [8 groups][8 KS / halves]
 * pairs: the B words (bytes b, halves h) of c_ji, zero outside [m][l].
 * After phase 0a (the target constants; field 3 2^8 R mod t). */
static void frag_item(bc *E, LLVMValueRef idx, item_out *o) {
  const lw_bconv_plan *p = E->P;
  int hw = mma_halves(p), nb = mma_bytes(p);
  int64_t KS = mma_ks(p), ipad = 8 * KS / hw;
  LLVMValueRef j = LLVMBuildUDiv(E->b, idx, c64(E, (uint64_t)ipad), "j");
  LLVMValueRef i = LLVMBuildURem(E->b, idx, c64(E, (uint64_t)ipad), "i");
  LLVMValueRef ok = LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntULT, j, c64(E, (uint64_t)p->m), ""),
                                 LLVMBuildICmp(E->b, LLVMIntULT, i, c64(E, (uint64_t)p->l), ""), "");
  LLVMValueRef jc = umin(E, j, c64(E, (uint64_t)(p->m - 1)));
  LLVMValueRef ic = umin(E, i, c64(E, (uint64_t)(p->l - 1)));
  LLVMValueRef t = smem_word(E, shared_idx(E, tgt_base(p), jc, TGT_WORDS, 0));
  LLVMValueRef k = smem_word(E, shared_idx(E, tgt_base(p), jc, TGT_WORDS, 1));
  LLVMValueRef r8 = smem_word(E, shared_idx(E, tgt_base(p), jc, TGT_WORDS, 3));
  /* the scalar form's constant (c_item) */
  LLVMValueRef ti = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, jc, c64(E, (uint64_t)p->l), ""), ic, "");
  ti = LLVMBuildNUWAdd(E->b, LLVMBuildNUWAdd(E->b, ti, E->dtab_off, ""), c64(E, (uint64_t)p->l), "");
  LLVMValueRef cv = product_constant(E, load_at(E, E->W, E->dtable, ti, walign(E), "c"), jc, t, k);
  LLVMValueRef ca[8];
  ca[0] = LLVMBuildSelect(E->b, ok, cv, cw(E, 0), "");
  for (int a = 1; a < nb; a++) { /* r62's REDC is lazy: below 1.5 t here */
    ca[a] = redc_mul(E, ca[a - 1], r8, t, k);
    if (E->wbits == 64) ca[a] = csub(E, ca[a], t);
  }
  /* where a word goes: group j / 8, column j % 8; k-word w = i hw + h:
   * k-step w / 8, word (w % 8) / 4 of lane 4 (j % 8) + w % 4 */
  LLVMValueRef jg = LLVMBuildLShr(E->b, j, c64(E, 3), "");
  LLVMValueRef col4 = LLVMBuildShl(E->b, LLVMBuildAnd(E->b, j, c64(E, 7), ""), c64(E, 2), "");
  o->n = 0;
  o->w32 = 1;
  for (int h = 0; h < hw; h++) {
    LLVMValueRef w = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, i, c64(E, (uint64_t)hw), ""),
                                     c64(E, (uint64_t)h), "kw");
    LLVMValueRef lane = LLVMBuildOr(E->b, col4, LLVMBuildAnd(E->b, w, c64(E, 3), ""), "lane");
    LLVMValueRef ks = LLVMBuildLShr(E->b, w, c64(E, 3), "");
    LLVMValueRef reg = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, w, c64(E, 2), ""), c64(E, 1), "");
    for (int b = 0; b < nb; b++) {
      /* byte b of c_j,i,4h+e for e < 4: byte b % 4 of their half b / 4 */
      LLVMValueRef x[4];
      for (int e = 0; e < 4; e++) {
        LLVMValueRef v = ca[4 * h + e];
        if (E->wbits == 64) v = trunc_to(E, LLVMBuildLShr(E->b, v, cw(E, (uint64_t)(32 * (b / 4))), ""), E->i32);
        x[e] = v;
      }
      LLVMValueRef at = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, jg, c64(E, (uint64_t)nb), ""), c64(E, (uint64_t)b), "");
      at = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, at, c64(E, (uint64_t)KS), ""), ks, "");
      at = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, at, c64(E, 64), ""),
                           LLVMBuildNUWAdd(E->b, LLVMBuildShl(E->b, lane, c64(E, 1), ""), reg, ""), "");
      o->val[o->n] = byte_word(E, x, b % 4);
      o->at[o->n++] = LLVMBuildNUWAdd(E->b, at, c64(E, (uint64_t)(c_base(p) * hw)), "");
    }
  }
}

#define MMA_MAX_TILES 4
#define MMA_MAX_KS (2 * LW_BCONV_MAX_L / 8)

/* A warp's phase-1 state: its tiles (polynomial, first coefficient,
 * whether it exists) and source words [tile][slot q: k-word 4 q + c]
 * [g, g + 8]. */
typedef struct p1m {
  LLVMValueRef lane, g, c;
  LLVMValueRef poly[MMA_MAX_TILES], i0[MMA_MAX_TILES], ok[MMA_MAX_TILES];
  LLVMValueRef w[MMA_MAX_TILES][2 * MMA_MAX_KS][2];
} p1m;

/* Slot q's source row (k-word 4 q + c, over the halves), and whether
 * every lane's row exists. */
static LLVMValueRef slot_row(bc *E, const p1m *S, int q, int *all_in) {
  const lw_bconv_plan *p = E->P;
  int hw = mma_halves(p);
  *all_in = (4 * q + 3) / hw < p->l;
  LLVMValueRef cr = hw == 2 ? LLVMBuildLShr(E->b, S->c, c64(E, 1), "") : S->c;
  return LLVMBuildNUWAdd(E->b, cr, c64(E, (uint64_t)(4 * q / hw)), "row");
}

/* The warp's tiles and the thread's source words, issued before phase 0. */
static void mma_load(bc *E, LLVMValueRef tid, LLVMValueRef blk, p1m *S) {
  const lw_bconv_plan *p = E->P;
  int MT = p->mma, KS = (int)mma_ks(p);
  int64_t per = (INT64_C(1) << p->log_n) / 16, tiles = p->polys * per;
  LLVMValueRef t64 = zext(E, tid, E->i64);
  S->lane = LLVMBuildAnd(E->b, t64, c64(E, 31), "lane");
  S->g = LLVMBuildLShr(E->b, S->lane, c64(E, 2), "g");
  S->c = LLVMBuildAnd(E->b, S->lane, c64(E, 3), "c");
  LLVMValueRef warp = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, blk, c64(E, p->mma_threads / 32), ""),
                                      LLVMBuildLShr(E->b, t64, c64(E, 5), ""), "warp");
  for (int t = 0; t < MT; t++) {
    LLVMValueRef tile = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, warp, c64(E, (uint64_t)MT), ""),
                                        c64(E, (uint64_t)t), "tile");
    S->ok[t] = LLVMBuildICmp(E->b, LLVMIntULT, tile, c64(E, (uint64_t)tiles), "");
    tile = umin(E, tile, c64(E, (uint64_t)(tiles - 1)));
    S->poly[t] = LLVMBuildUDiv(E->b, tile, c64(E, (uint64_t)per), "poly");
    S->i0[t] = LLVMBuildNUWMul(E->b, LLVMBuildURem(E->b, tile, c64(E, (uint64_t)per), ""), c64(E, 16), "i0");
    LLVMValueRef off = poly_offset(E, S->poly[t]);
    for (int q = 0; q < 2 * KS; q++) {
      int all_in;
      LLVMValueRef r = slot_row(E, S, q, &all_in);
      /* a row past the last reads the last (its product is zeroed later) */
      if (!all_in) r = umin(E, r, c64(E, (uint64_t)(p->l - 1)));
      LLVMValueRef roff = LLVMBuildAdd(E->b, off, LLVMBuildMul(E->b, r, c64(E, (uint64_t)p->src_row_stride), ""), "");
      for (int h = 0; h < 2; h++) {
        LLVMValueRef coef = LLVMBuildNUWAdd(E->b, S->i0[t], LLVMBuildNUWAdd(E->b, S->g, c64(E, (uint64_t)(8 * h)), ""), "");
        LLVMValueRef at = LLVMBuildAdd(E->b, roff, LLVMBuildMul(E->b, coef, c64(E, (uint64_t)p->src_index_stride), ""), "");
        S->w[t][q][h] = load_at(E, E->W, E->src, at, walign(E), "w");
      }
    }
  }
}

/* D = A B + C on the tensor cores (mma.sync.aligned.m16n8k32.row.col.u8). */
static void mma_u8(bc *E, LLVMValueRef *a, LLVMValueRef b0, LLVMValueRef b1, LLVMValueRef *acc) {
  static const char name[] = "llvm.nvvm.mma.m16n8k32.row.col.u8";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(E->m, id, NULL, 0);
  LLVMValueRef in[10] = {a[0], a[1], a[2], a[3], b0, b1, acc[0], acc[1], acc[2], acc[3]};
  LLVMValueRef r = LLVMBuildCall2(E->b, LLVMIntrinsicGetType(E->c, id, NULL, 0), fn, in, 10, "d");
  for (int x = 0; x < 4; x++) acc[x] = LLVMBuildExtractValue(E->b, r, (unsigned)x, "");
}

/* sum_b d[b] 2^(8b) over bytes b0 .. b0 + 3, in 64 bits. */
static LLVMValueRef byte_sum(bc *E, LLVMValueRef *d) {
  LLVMValueRef s = zext(E, d[0], E->i64);
  for (int b = 1; b < 4; b++)
    s = LLVMBuildNUWAdd(E->b, s, LLVMBuildShl(E->b, zext(E, d[b], E->i64), c64(E, (uint64_t)(8 * b)), ""), "");
  return s;
}

/* S = sum_b D_b 2^(8b), reduced as the scalar form does (above). */
static LLVMValueRef mma_reduce(bc *E, LLVMValueRef *d, const tgt *T) {
  LLVMValueRef s = byte_sum(E, d);
  if (E->wbits == 32) return redc32_fold(E, T, s);
  /* L + H (2^32 mod t) as 128 bits: below 2^49 t + 2^49 <= 2^64 t */
  LLVMValueRef f = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, zext(E, byte_sum(E, d + 4), E->i128),
                                                         zext(E, T->x1, E->i128), ""),
                                   zext(E, s, E->i128), "");
  LLVMValueRef u = reduce62(E, trunc_to(E, f, E->i64), high(E, f), c64(E, 0), T->t, T->k);
  return csub(E, u, T->t);
}

/* After phase 0: the A fragments (the V_i), then per group of 8 target
 * rows the products and each thread's results (rows j0 = 8 group + 2 c
 * and j0 + 1, coefficients g and g + 8 of each tile). */
static void mma_compute(bc *E, p1m *S) {
  const lw_bconv_plan *p = E->P;
  int MT = p->mma, KS = (int)mma_ks(p), hw = mma_halves(p), nb = mma_bytes(p);
  int64_t n = INT64_C(1) << p->log_n;
  LLVMValueRef A[MMA_MAX_TILES][MMA_MAX_KS][4];
  LLVMValueRef shift = hw == 2 ? LLVMBuildShl(E->b, LLVMBuildAnd(E->b, S->c, c64(E, 1), ""), c64(E, 5), "") : NULL;
  for (int q = 0; q < 2 * KS; q++) {
    int all_in;
    LLVMValueRef r = slot_row(E, S, q, &all_in);
    LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntULT, r, c64(E, (uint64_t)p->l), "");
    LLVMValueRef rc = umin(E, r, c64(E, (uint64_t)(p->l - 1)));
    LLVMValueRef sc[SRC_WORDS];
    for (int f = 0; f < SRC_WORDS; f++) sc[f] = smem_word(E, shared_idx(E, 0, rc, SRC_WORDS, f));
    for (int t = 0; t < MT; t++)
      for (int h = 0; h < 2; h++) {
        LLVMValueRef v = redc_const(E, S->w[t][q][h], sc[0], sc[1], sc[2]);
        if (E->wbits == 64) /* canonical, then this lane's half */
          v = trunc_to(E, LLVMBuildLShr(E->b, csub(E, v, sc[2]), shift, ""), E->i32);
        if (!all_in) v = LLVMBuildSelect(E->b, in, v, c32(E, 0), "");
        A[t][q / 2][(q % 2) * 2 + h] = v;
      }
  }
  LLVMValueRef dbase[MMA_MAX_TILES];
  for (int t = 0; t < MT; t++)
    dbase[t] = LLVMBuildNUWAdd(E->b, poly_dst(E, S->poly[t]), LLVMBuildNUWAdd(E->b, S->i0[t], S->g, ""), "dbase");
  LLVMTypeRef pair = LLVMVectorType(E->i32, 2);
  LLVMValueRef lane2 = LLVMBuildShl(E->b, S->lane, c64(E, 1), "");
  loop L = loop_begin(E, c64(E, 0), c64(E, (uint64_t)mma_groups(p)), "group");
  LLVMValueRef acc[MMA_MAX_TILES][8][4];
  for (int t = 0; t < MT; t++)
    for (int b = 0; b < nb; b++)
      for (int x = 0; x < 4; x++) acc[t][b][x] = c32(E, 0);
  for (int b = 0; b < nb; b++)
    for (int ks = 0; ks < KS; ks++) {
      LLVMValueRef at = LLVMBuildNUWMul(E->b, L.iv, c64(E, (uint64_t)(nb * KS * 64)), "");
      at = LLVMBuildNUWAdd(E->b, at, c64(E, (uint64_t)(c_base(p) * hw + (b * KS + ks) * 64)), "");
      LLVMValueRef bp = gep(E, E->i32, E->smem, LLVMBuildNUWAdd(E->b, at, lane2, ""));
      LLVMValueRef bv = LLVMBuildLoad2(E->b, pair, bp, "bf");
      LLVMSetAlignment(bv, 8);
      LLVMValueRef b0 = LLVMBuildExtractElement(E->b, bv, c32(E, 0), "");
      LLVMValueRef b1 = LLVMBuildExtractElement(E->b, bv, c32(E, 1), "");
      for (int t = 0; t < MT; t++) mma_u8(E, A[t][ks], b0, b1, acc[t][b]);
    }
  LLVMValueRef j0 = LLVMBuildNUWAdd(E->b, LLVMBuildShl(E->b, L.iv, c64(E, 3), ""),
                                    LLVMBuildShl(E->b, S->c, c64(E, 1), ""), "j0");
  tgt T[2];
  LLVMValueRef jrow[2], jok[2];
  for (int e = 0; e < 2; e++) {
    jrow[e] = LLVMBuildNUWAdd(E->b, j0, c64(E, (uint64_t)e), "j");
    jok[e] = LLVMBuildICmp(E->b, LLVMIntULT, jrow[e], c64(E, (uint64_t)p->m), "");
    LLVMValueRef jc = umin(E, jrow[e], c64(E, (uint64_t)(p->m - 1)));
    T[e].t = smem_word(E, shared_idx(E, tgt_base(p), jc, TGT_WORDS, 0));
    T[e].k = smem_word(E, shared_idx(E, tgt_base(p), jc, TGT_WORDS, 1));
    T[e].x1 = smem_word(E, shared_idx(E, tgt_base(p), jc, TGT_WORDS, 2));
    T[e].hm = NULL;
  }
  for (int t = 0; t < MT; t++)
    for (int x = 0; x < 4; x++) {
      int h = x / 2, e = x % 2;
      LLVMValueRef d[8];
      for (int b = 0; b < nb; b++) d[b] = acc[t][b][x];
      LLVMValueRef z = mma_reduce(E, d, &T[e]);
      LLVMValueRef at = LLVMBuildNUWAdd(E->b, dbase[t], LLVMBuildNUWMul(E->b, jrow[e], c64(E, (uint64_t)n), ""), "");
      if (h) at = LLVMBuildNUWAdd(E->b, at, c64(E, 8), "");
      LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(E->c, E->fn, "store");
      LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(E->c, E->fn, "");
      LLVMBuildCondBr(E->b, LLVMBuildAnd(E->b, jok[e], S->ok[t], ""), st, next);
      LLVMPositionBuilderAtEnd(E->b, st);
      store_at(E, z, E->dst, at, walign(E));
      LLVMBuildBr(E->b, next);
      LLVMPositionBuilderAtEnd(E->b, next);
    }
  loop_end(E, &L, c64(E, 1), c64(E, (uint64_t)mma_groups(p)));
}

/* The tensor-core kernel's body: loads, phase 0a (source and target
 * constants), phase 0b (the B fragments), then the products. */
static void build_mma_body(bc *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_bconv_plan *p = E->P;
  p1m S;
  mma_load(E, tid, blk, &S);
  LLVMValueRef t64 = zext(E, tid, E->i64);
  for_items(E, t64, p->l, src_item);
  for_items(E, t64, p->m, tgt_item);
  LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
  for_items(E, t64, 8 * mma_groups(p) * 8 * mma_ks(p) / mma_halves(p), frag_item);
  LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
  mma_compute(E, &S);
}

/* ------------------------------------------------------------ functions */

/* The kernel's arguments: 5, digits - 1 more tables, and on the GPU with
 * counts for the next step (sig) the LW_ARG_OWN argument. */
static int has_own(const bc *E) { return E->target == LW_GPU && E->P->sig.on; }

static unsigned kernel_nargs(const bc *E) {
  return 5 + (unsigned)(E->P->digits > 1 ? E->P->digits - 1 : 0) + (unsigned)has_own(E);
}

static void kernel_params(bc *E, LLVMValueRef fn) {
  static const char *const names[5] = {"params", "pstride", "table", "src", "dst"};
  unsigned ntables = kernel_nargs(E) - (unsigned)has_own(E);
  if (has_own(E)) {
    E->own = LLVMGetParam(fn, ntables);
    LLVMSetValueName2(E->own, "own", 3);
  }
  for (unsigned j = 0; j < ntables; j++) {
    char tname[24];
    const char *nm = j < 5 ? names[j] : tname;
    if (j >= 5) snprintf(tname, sizeof tname, "table%u", j - 4);
    LLVMSetValueName2(LLVMGetParam(fn, j), nm, strlen(nm));
    if (j == 1) continue;
    param_attr(E, fn, j, "nocapture");
    /* digits' tables may be one buffer: readonly, not noalias; none in a
     * dependent launch (its wait at the entry: no load may move above it)
     * or one that counts its blocks (no store may move below the count) */
    if (j < 5 && !(E->target == LW_GPU && (E->P->pdl_entry || E->P->sig.on)))
      param_attr(E, fn, j, "noalias");
    param_attr(E, fn, j, j == 4 ? "writeonly" : "readonly");
    if (j >= 5) E->more_tables[j - 5] = LLVMGetParam(fn, j);
  }
  E->params = LLVMGetParam(fn, 0);
  E->pstride = LLVMGetParam(fn, 1);
  E->table = LLVMGetParam(fn, 2);
  E->src = LLVMGetParam(fn, 3);
  E->dst = LLVMGetParam(fn, 4);
}

static void kernel_types(bc *E, LLVMTypeRef *types) {
  for (unsigned j = 0; j < kernel_nargs(E); j++) types[j] = j == 1 ? E->i64 : E->gptr;
  if (has_own(E)) types[kernel_nargs(E) - 1] = E->i64;
}

/* The block's digit's value among vals[0 .. digits) (i64): a constant
 * when they agree, affine in the digit when evenly spaced (a key
 * switch's offsets), else a chain of selects (uniform: once a block). */
static LLVMValueRef per_digit(bc *E, const int64_t *vals) {
  int D = E->P->digits, same = 1, even = 1;
  for (int k = 1; k < D; k++) {
    same &= vals[k] == vals[0];
    even &= vals[k] - vals[0] == (int64_t)k * (vals[1] - vals[0]);
  }
  if (D <= 1 || same) return c64(E, (uint64_t)vals[0]);
  if (even) /* wrapping arithmetic: a negative step too */
    return LLVMBuildAdd(E->b, LLVMBuildMul(E->b, E->dig, c64(E, (uint64_t)(vals[1] - vals[0])), ""),
                        c64(E, (uint64_t)vals[0]), "dv");
  LLVMValueRef v = c64(E, (uint64_t)vals[0]);
  for (int k = 1; k < D; k++)
    v = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, E->dig, c64(E, (uint64_t)k), ""),
                        c64(E, (uint64_t)vals[k]), v, "dv");
  return v;
}

/* Digit k's facts (k = 0: the plan's own). */
static lw_bconv_digit digit_of(const lw_bconv_plan *p, int k) {
  return k ? p->more[k - 1]
           : (lw_bconv_digit){p->src_offset, p->table_offset, p->dst_offset, p->src_cols,
                              p->dst_cols};
}

/* Sets the block's digit and its values from the flat block index blk
 * (i64); returns the block's index within its digit's grid. */
static LLVMValueRef set_digit(bc *E, LLVMValueRef blk) {
  const lw_bconv_plan *p = E->P;
  int D = p->digits > 1 ? p->digits : 1;
  E->dig = c64(E, 0);
  if (D > 1) {
    LLVMValueRef per = c64(E, E->digit_blocks);
    E->dig = LLVMBuildUDiv(E->b, blk, per, "digit");
    blk = LLVMBuildURem(E->b, blk, per, "dblk");
  }
  int64_t so[LW_BCONV_MAX_DIGITS], to[LW_BCONV_MAX_DIGITS], dso[LW_BCONV_MAX_DIGITS],
      sc[LW_BCONV_MAX_DIGITS], dc[LW_BCONV_MAX_DIGITS];
  for (int k = 0; k < D; k++) {
    lw_bconv_digit d = digit_of(p, k);
    so[k] = d.src_offset, to[k] = d.table_offset, dso[k] = d.dst_offset;
    sc[k] = d.src_cols[0], dc[k] = d.dst_cols[0];
  }
  E->dsrc_off = per_digit(E, so);
  E->dtab_off = p->lift ? c64(E, 0) : per_digit(E, to);
  E->ddst_off = per_digit(E, dso);
  E->dscol0 = per_digit(E, sc);
  E->ddcol0 = per_digit(E, dc);
  E->dtable = E->table;
  for (int k = 1; k < D; k++)
    E->dtable = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, E->dig, c64(E, (uint64_t)k), ""),
                                E->more_tables[k - 1], E->dtable, "dtable");
  return blk;
}

/* The columns (dst: target) of every digit, [digits][n]. */
static LLVMValueRef col_array(bc *E, const char *name, const char *suffix, int dst, int32_t n,
                              LLVMTypeRef *ty) {
  char sym[128];
  snprintf(sym, sizeof sym, "%s%s", name, suffix);
  LLVMValueRef vals[LW_BCONV_MAX_M * LW_BCONV_MAX_DIGITS];
  int D = E->P->digits > 1 ? E->P->digits : 1;
  for (int k = 0; k < D; k++) {
    lw_bconv_digit d = digit_of(E->P, k);
    for (int32_t i = 0; i < n; i++)
      vals[k * n + i] = c32(E, (uint64_t)(uint32_t)(dst ? d.dst_cols : d.src_cols)[i]);
  }
  n *= D;
  *ty = LLVMArrayType2(E->i32, (uint64_t)n);
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(E->m, *ty, sym, E->target == LW_GPU ? 4 : 0);
  LLVMSetInitializer(g, LLVMConstArray2(E->i32, vals, (uint64_t)n));
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMSetAlignment(g, 4);
  return g;
}

static int32_t consecutive(const int32_t *cols, int32_t n) {
  for (int32_t i = 1; i < n; i++)
    if (cols[i] != cols[0] + i) return -1;
  return cols[0];
}

/* >= 0 when every digit's columns (dst: target) are consecutive. */
static int32_t all_consecutive(const lw_bconv_plan *p, int dst) {
  int32_t first = -1;
  for (int k = 0; k < (p->digits > 1 ? p->digits : 1); k++) {
    lw_bconv_digit d = digit_of(p, k);
    first = consecutive(dst ? d.dst_cols : d.src_cols, dst ? p->m : p->l);
    if (first < 0) return -1;
  }
  return first;
}

static void build_gpu(bc *E, const char *name) {
  LLVMTypeRef types[5 + LW_BCONV_MAX_DIGITS];
  kernel_types(E, types);
  LLVMValueRef fn =
      LLVMAddFunction(E->m, name, LLVMFunctionType(E->voidt, types, kernel_nargs(E), 0));
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  fn_attr(E, fn, "nounwind");
  kernel_params(E, fn);
  E->fn = fn;
  char sname[128];
  snprintf(sname, sizeof sname, "%s.smem", name);
  LLVMTypeRef arr = LLVMArrayType2(E->W, (uint64_t)(E->mma ? mma_shared_words(E->P) : shared_words(E->P)));
  LLVMValueRef sm = LLVMAddGlobalInAddressSpace(E->m, arr, sname, 3);
  LLVMSetInitializer(sm, LLVMGetUndef(arr));
  LLVMSetLinkage(sm, LLVMInternalLinkage);
  LLVMSetAlignment(sm, 16);
  E->smem = sm;
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, fn, "entry"));
  if (E->P->pdl_entry) lw_dependent_entry(E->c, E->b);
  LLVMValueRef tid = sreg(E, "llvm.nvvm.read.ptx.sreg.tid.x");
  LLVMValueRef blk = zext(E, sreg(E, "llvm.nvvm.read.ptx.sreg.ctaid.x"), E->i64);
  if (E->P->rev) {
    LLVMValueRef last = LLVMBuildSub(E->b, zext(E, sreg(E, "llvm.nvvm.read.ptx.sreg.nctaid.x"), E->i64),
                                     LLVMConstInt(E->i64, 1, 0), "");
    blk = LLVMBuildSub(E->b, last, blk, "blk.rev");
  }
  LLVMValueRef run = blk; /* the block this one runs, across the digits */
  blk = set_digit(E, blk);
  if (E->mma) {
    build_mma_body(E, tid, blk);
  } else {
    p1 S;
    phase1_load(E, tid, blk, &S);
    emit_phase0(E, tid);
    LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
    phase1_compute(E, &S);
  }
  if (E->P->sig.on) { /* convsync: after the last store, counted in its digit */
    SP_ASSERT(E->P->sig.need == E->digit_blocks);
    lw_cnt C = {.c = E->c, .m = E->m, .b = E->b, .fn = fn, .own = E->own,
                .barrier_fn = E->barrier_fn, .barrier_ty = E->barrier_ty};
    lw_cnt_sync_signal(&C, &E->P->sig, tid, run);
  }
  LLVMBuildRetVoid(E->b);
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "maxntidx", 8),
                           LLVMValueAsMetadata(c32(E, E->threads))};
  LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                              LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, md, 3)));
  if (E->mma) {
    /* without a register limit, ptxas holds some of these kernels to 64 or
     * 80 registers with a spill of 4 or 8 bytes; with one, none spills. At
     * most what a block's threads can have (64 K registers an SM): more
     * and the launch fails (r62 M=4 at 512 threads did) */
    uint32_t cap = 65536 / E->threads / 8 * 8;
    LLVMMetadataRef mr[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "maxnreg", 7),
                             LLVMValueAsMetadata(c32(E, cap < 168 ? cap : 168))};
    LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                                LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, mr, 3)));
  }
}

static void build_host(bc *E, const char *name) {
  /* the kernel's arguments, then (i64 begin, i64 end, ptr shared) */
  unsigned na = kernel_nargs(E);
  LLVMTypeRef types[8 + LW_BCONV_MAX_DIGITS];
  kernel_types(E, types);
  types[na] = types[na + 1] = E->i64;
  types[na + 2] = E->sptr;
  char fname[128];
  snprintf(fname, sizeof fname, "%s_host_body", name);
  LLVMTypeRef fty = LLVMFunctionType(E->voidt, types, na + 3, 0);
  LLVMValueRef fn = LLVMAddFunction(E->m, fname, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  fn_attr(E, fn, "nounwind");
  kernel_params(E, fn);
  param_attr(E, fn, na + 2, "noalias");
  E->fn = fn;
  E->smem = LLVMGetParam(fn, na + 2);
  LLVMValueRef begin = LLVMGetParam(fn, na), end = LLVMGetParam(fn, na + 1);
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, fn, "entry"));
  loop B = loop_begin(E, begin, end, "block");
  LLVMValueRef blk = set_digit(E, B.iv); /* before both phases: dominates them */
  /* each phase for every thread of the block before the next: the loop
   * boundary is the barrier */
  loop T = loop_begin(E, c32(E, 0), c32(E, E->P->threads), "thread0");
  emit_phase0(E, T.iv);
  loop_end(E, &T, c32(E, 1), c32(E, E->P->threads));
  T = loop_begin(E, c32(E, 0), c32(E, E->P->threads), "thread1");
  p1 S;
  phase1_load(E, T.iv, blk, &S);
  phase1_compute(E, &S);
  loop_end(E, &T, c32(E, 1), c32(E, E->P->threads));
  loop_end(E, &B, c64(E, 1), end);
  LLVMBuildRetVoid(E->b);

  /* the entry: (ptr slots, i64 begin, i64 end, ptr shared) */
  snprintf(fname, sizeof fname, "%s_host", name);
  LLVMTypeRef wtypes[4] = {E->gptr, E->i64, E->i64, E->sptr};
  LLVMValueRef w = LLVMAddFunction(E->m, fname, LLVMFunctionType(E->voidt, wtypes, 4, 0));
  fn_attr(E, w, "nounwind");
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, w, "entry"));
  LLVMValueRef args[8 + LW_BCONV_MAX_DIGITS];
  for (unsigned j = 0; j < na; j++) {
    LLVMValueRef slot = gep(E, E->i64, LLVMGetParam(w, 0), c64(E, (uint64_t)j));
    args[j] = LLVMBuildLoad2(E->b, types[j], slot, "");
    LLVMSetAlignment(args[j], 8);
  }
  for (unsigned j = 0; j < 3; j++) args[na + j] = LLVMGetParam(w, j + 1);
  LLVMBuildCall2(E->b, fty, fn, args, na + 3, "");
  LLVMBuildRetVoid(E->b);
}

fhjit_status lw_bconv_build(fhjit_context *ctx, const lw_bconv_plan *p, lw_target target,
                            const char *name, LLVMContextRef c, LLVMModuleRef m) {
  static const char *const suffixes[] = {"", ".smem", ".scols", ".dcols", "_host", "_host_body"};
  for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
    char sym[128];
    snprintf(sym, sizeof sym, "%s%s", name, suffixes[i]);
    if (lw_symbol_taken(m, sym)) return lw_duplicate_symbol(ctx, sym);
  }
  SP_ASSERT(p->blocks > 0 && p->vec >= 1 && p->threads >= 32 && p->split >= 1 &&
            p->unroll >= 1); /* lw_bconv_plan_make's */
  bc E = {.ctx = ctx, .P = p, .target = target, .c = c, .m = m};
  /* the host always builds the scalar form (lw_bconv_host_create) */
  E.mma = target == LW_GPU && p->mma > 0;
  E.threads = E.mma ? p->mma_threads : p->threads;
  E.digit_blocks = E.mma ? p->mma_digit_blocks : p->digit_blocks;
  E.b = LLVMCreateBuilderInContext(c);
  E.wbits = p->radix == FHJIT_R32 ? 32 : 64;
  E.V = 16 / (E.wbits / 8);
  E.W = LLVMIntTypeInContext(c, (unsigned)E.wbits);
  E.i1 = LLVMInt1TypeInContext(c);
  E.i32 = LLVMInt32TypeInContext(c);
  E.i64 = LLVMInt64TypeInContext(c);
  E.i128 = LLVMIntTypeInContext(c, 128);
  E.voidt = LLVMVoidTypeInContext(c);
  E.gptr = LLVMPointerTypeInContext(c, target == LW_GPU ? 1 : 0);
  E.sptr = LLVMPointerTypeInContext(c, target == LW_GPU ? 3 : 0);
  E.scol0 = all_consecutive(p, 0);
  E.dcol0 = all_consecutive(p, 1);
  E.scols = col_array(&E, name, ".scols", 0, p->l, &E.scols_ty);
  E.dcols = col_array(&E, name, ".dcols", 1, p->m, &E.dcols_ty);
  if (target == LW_GPU) {
    unsigned id = LLVMLookupIntrinsicID("llvm.nvvm.barrier0", 18);
    E.barrier_fn = LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
    E.barrier_ty = LLVMIntrinsicGetType(c, id, NULL, 0);
    build_gpu(&E, name);
  } else {
    build_host(&E, name);
  }
  LLVMDisposeBuilder(E.b);
  return FHJIT_OK;
}

fhjit_status lw_bconv_compile_ptx(fhjit_context *ctx, const lw_bconv_plan *p, const char *arch,
                                  const char *name, char **ptx) {
  *ptx = NULL;
  const nv_target *t = nv_find_target(&ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  LLVMTargetMachineRef tm = nv_gpu_machine(&ctx->err, t);
  if (!tm) return FHJIT_ERR_LLVM;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext(name, c);
  nv_prepare_module(m, tm);
  lw_bconv_plan tp = *p;
  lw_bconv_for_target(&tp, t);
  fhjit_status st = lw_bconv_build(ctx, &tp, LW_GPU, name, c, m);
  if (!st) st = nv_pipeline(&ctx->err, m, tm, name, lw_kernel_pipeline, FHJIT_EMIT_PTX, NULL, ptx);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  return st;
}
