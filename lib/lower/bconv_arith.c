/* bconv_arith.c: the basis conversion kernel's modular arithmetic as
 * LLVM IR (bconv.c's file comment, "Exactness", says why each bound
 * holds): conditional subtractions, the REDC forms of its constants, the
 * r62 128-bit sums of products and their reduction, the r32 folds, and
 * the exact dot products of a target row. */
#include <string.h>

#include "lower/bconv_emit.h"
#include "lower/ntt_redc62_ptx.h"

/* unsigned min: arith.c's (it reads only the context, module and builder) */
LLVMValueRef lw_bc_umin(bc *E, LLVMValueRef a, LLVMValueRef b) {
  lw_arith A = {.c = E->c, .m = E->m, .b = E->b};
  return lw_umin(&A, a, b);
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
LLVMValueRef lw_bc_csub(bc *E, LLVMValueRef x, LLVMValueRef bound) {
  if (E->wbits == 64 && E->target == LW_GPU) {
    LLVMValueRef in[2] = {x, bound};
    return asm64(E, lw_ntt_csub62_ptx, in, 2);
  }
  LLVMValueRef d = LLVMBuildSub(E->b, x, bound, "");
  if (E->wbits == 32) return lw_bc_umin(E, x, d);
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
LLVMValueRef lw_bc_redc_const(bc *E, LLVMValueRef x, LLVMValueRef w4, LLVMValueRef wk4,
                              LLVMValueRef q) {
  if (E->wbits == 32) {
    LLVMValueRef m = LLVMBuildMul(E->b, x, wk4, "m");
    LLVMValueRef t = LLVMBuildNUWMul(E->b, zext(E, w4, E->i64), zext(E, x, E->i64), "");
    LLVMValueRef mq = LLVMBuildNUWMul(E->b, zext(E, m, E->i64), zext(E, q, E->i64), "");
    LLVMValueRef u = LLVMBuildLShr(E->b, LLVMBuildNUWAdd(E->b, t, mq, ""), c64(E, 32), "");
    return lw_bc_csub(E, trunc_to(E, u, E->W), q);
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
LLVMValueRef lw_bc_redc_mul(bc *E, LLVMValueRef a, LLVMValueRef b, LLVMValueRef q,
                            LLVMValueRef k) {
  if (E->wbits == 32) {
    LLVMValueRef t = LLVMBuildNUWMul(E->b, zext(E, a, E->i64), zext(E, b, E->i64), "");
    LLVMValueRef m = LLVMBuildMul(E->b, trunc_to(E, t, E->i32), k, "");
    LLVMValueRef u = LLVMBuildNUWAdd(E->b, t, LLVMBuildNUWMul(E->b, zext(E, m, E->i64),
                                                              zext(E, q, E->i64), ""), "");
    return lw_bc_csub(E, trunc_to(E, LLVMBuildLShr(E->b, u, c64(E, 32), ""), E->W), q);
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
LLVMValueRef lw_bc_high(bc *E, LLVMValueRef s) {
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
  *hi = lw_bc_high(E, s);
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
  *hi = lw_bc_high(E, s);
}

/* (S + 2^32 cross) 2^-64 mod t, in [0, 2t) for sums below 2^64 t. */
LLVMValueRef lw_bc_reduce62(bc *E, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef cross,
                            LLVMValueRef t, LLVMValueRef k64) {
  if (E->target == LW_GPU) {
    LLVMValueRef in[5] = {lo, hi, cross, t, k64};
    return asm64(E, lw_bconv_reduce62_ptx, in, 5);
  }
  flush62(E, &lo, &hi, cross);
  LLVMValueRef m = LLVMBuildMul(E->b, lo, k64, "m");
  LLVMValueRef s = LLVMBuildAdd(E->b, wide(E, lo, hi),
                                LLVMBuildNUWMul(E->b, zext(E, m, E->i128), zext(E, t, E->i128), ""), "");
  return lw_bc_high(E, s);
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

/* r32: hi (2^32 mod t) + lo of a 64-bit sum (the file comment's x). */
static LLVMValueRef fold32(bc *E, const tgt *T, LLVMValueRef s) {
  LLVMValueRef hi = trunc_to(E, LLVMBuildLShr(E->b, s, c64(E, 32), ""), E->i32);
  LLVMValueRef lo = LLVMBuildAnd(E->b, s, c64(E, 0xffffffffu), "");
  return madwide32(E, hi, T->x1, lo);
}

/* r32: s R^-1 mod t, canonical, for a 64-bit sum s (fold, REDC, one
 * subtraction: the file comment). */
LLVMValueRef lw_bc_redc32_fold(bc *E, const tgt *T, LLVMValueRef s) {
  LLVMValueRef x = fold32(E, T, s);
  LLVMValueRef m = LLVMBuildMul(E->b, trunc_to(E, x, E->i32), T->k, "m");
  LLVMValueRef u = madwide32(E, m, T->t, x);
  return lw_bc_csub(E, trunc_to(E, LLVMBuildLShr(E->b, u, c64(E, 32), ""), E->W), T->t);
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
    return lw_bc_redc32_fold(E, T, s);
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
    LLVMValueRef u = lw_bc_csub(E, lw_bc_reduce62(E, lo, hi, cross, T->t, T->k), T->t);
    z = z ? lw_bc_csub(E, LLVMBuildNUWAdd(E->b, z, u, ""), T->t) : u;
  }
  return z;
}

/* z[k] = dot_reduce(T[k], v[k], c[k]) for k < count, r32's sums in
 * lockstep (one multiply-add of each sum in turn: independent chains for
 * the scheduler, whatever order ptxas keeps). */
void lw_bc_dot_reduce_n(bc *E, const tgt *const *T, LLVMValueRef *const *v,
                        LLVMValueRef *const *c, int l, int count, LLVMValueRef *z) {
  if (E->wbits == 64) {
    for (int k = 0; k < count; k++) z[k] = dot_reduce(E, T[k], v[k], c[k], l);
    return;
  }
  LLVMValueRef s[LW_BC_MAX_SUMS];
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
  LLVMValueRef x[LW_BC_MAX_SUMS], m[LW_BC_MAX_SUMS];
  for (int k = 0; k < count; k++) x[k] = fold32(E, T[k], s[k]);
  for (int k = 0; k < count; k++) m[k] = LLVMBuildMul(E->b, trunc_to(E, x[k], E->i32), T[k]->k, "m");
  for (int k = 0; k < count; k++) {
    LLVMValueRef u = madwide32(E, m[k], T[k]->t, x[k]);
    z[k] = lw_bc_csub(E, trunc_to(E, LLVMBuildLShr(E->b, u, c64(E, 32), ""), E->W), T[k]->t);
  }
}
