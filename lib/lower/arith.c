/* arith.c: the modular-arithmetic IR builders (arith.h) of the pointwise
 * kernels and the NTT, in one place. The two families build different IR
 * on purpose (each is what its kernels were measured with, and the golden
 * PTX hashes pin it): the pointwise helpers are functions with compare and
 * select, called once per lane; the NTT's products by a per-row constant
 * are inline, with the GPU forms that its butterflies measured faster.
 *
 * Products by a constant w (the NTT's twiddles) use the constant
 * precomputed from w, which leaves SPEC's REDC result unchanged:
 *   r62: m = (lo64(w*x) * k) mod 2^62 = (x * (w*k mod 2^62)) mod 2^62, so
 *        with wk4 = w * (4k) mod 2^64, m4 = x * wk4 mod 2^64 = 4m exactly.
 *        u = (w*x + m*q) >> 62 = hi64(4w * x) + hi64(m4 * q) + c, where the
 *        carry c of the low 62-bit halves is 1 exactly when they are not
 *        both zero (their sum is 0 mod 2^62), that is when m != 0 (k is odd,
 *        so m = 0 iff w*x = 0 mod 2^62). One mul.lo and two mul.hi.
 *   r32: m = x * (w*k mod 2^32) (no scaling), u = (w*x + m*q) >> 32 in
 *        64 bits, then the canonical subtraction of q.
 * 4w < 2^63 because twiddles are lazy (< 2q < 2^61). Where a block shares
 * its twiddle constants, r62 takes Shoup's form instead, with the same
 * result (lw_mconst_shoup). */
#include "lower/arith.h"

#include <stdio.h>
#include <string.h>

#include "lower/ntt_redc62_ptx.h"

void lw_arith_init(lw_arith *A, LLVMContextRef c, LLVMModuleRef m, LLVMBuilderRef b,
                   fhjit_radix radix, lw_target target) {
  *A = (lw_arith){.c = c, .m = m, .b = b, .r32 = radix == FHJIT_R32, .target = target};
  A->W = A->r32 ? LLVMInt32TypeInContext(c) : LLVMInt64TypeInContext(c);
  A->D = A->r32 ? LLVMInt64TypeInContext(c) : LLVMIntTypeInContext(c, 128);
  A->i64 = LLVMInt64TypeInContext(c);
}

static void fn_attr(lw_arith *A, LLVMValueRef fn, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(A->c, kind, 0));
}

/* ------------------------------------------------- pointwise helpers */


/* The formulas of SPEC sections 2-3 as small internal always-inline functions,
 * one set per radix; conditional subtractions are selects (branch-free). */
void lw_fn_attr(LLVMContextRef c, LLVMValueRef fn, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, kind, 0));
}

void lw_param_attr(LLVMContextRef c, LLVMValueRef fn, unsigned param, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, param + 1, LLVMCreateEnumAttribute(c, kind, 0));
}

void lw_grid_dep(LLVMContextRef c, LLVMBuilderRef b, const char *text) {
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), NULL, 0, 0);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), "~{memory}", 9, 1, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(b, fty, fn, NULL, 0, "");
}

LLVMValueRef lw_asm(LLVMBuilderRef b, LLVMTypeRef ret, const char *text, const char *cons,
                    LLVMValueRef *args, unsigned n) {
  LLVMTypeRef at[4];
  for (unsigned i = 0; i < n; i++) at[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef fty = LLVMFunctionType(ret, at, n, 0);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
                                     LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(b, fty, fn, args, n, "");
}

void lw_dependent_entry(LLVMContextRef c, LLVMBuilderRef b) {
  lw_grid_dep(c, b, "griddepcontrol.wait;");
  lw_grid_dep(c, b, "griddepcontrol.launch_dependents;");
}

LLVMValueRef lw_intrinsic0(LLVMContextRef c, LLVMModuleRef m, LLVMBuilderRef b,
                           const char *name) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(c, id, NULL, 0), fn, NULL, 0, "");
}

LLVMValueRef lw_csub_select(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef bound,
                            const char *name) {
  LLVMValueRef ge = LLVMBuildICmp(b, LLVMIntUGE, x, bound, "");
  LLVMValueRef d = LLVMBuildSub(b, x, bound, "");
  return LLVMBuildSelect(b, ge, d, x, name);
}

LLVMValueRef lw_helper(lw_arith *A, lw_helper_op h) {
  if (A->helper[h]) return A->helper[h];
  static const char *const names[LW_H_COUNT] = {"add", "sub", "neg", "add_lazy", "redc", "mul"};
  char fname[64];
  snprintf(fname, sizeof fname, "fhjit.%s.%s", A->r32 ? "r32" : "r62", names[h]);
  LLVMTypeRef W = A->W;
  LLVMTypeRef args[4] = {W, W, W, W};
  unsigned nargs = 4;
  switch (h) {
  case LW_H_NEG: nargs = 2; break;                     /* a, q */
  case LW_H_ADD_LAZY: nargs = 3; break;                /* a, b, 2q */
  case LW_H_REDC: args[0] = A->D; nargs = 3; break; /* t, q, k */
  default: break;                                      /* a, b, q, 2q | a, b, q, k */
  }
  LLVMTypeRef fty = LLVMFunctionType(W, args, nargs, 0);
  LLVMValueRef fn = LLVMAddFunction(A->m, fname, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  fn_attr(A, fn, "alwaysinline");
  fn_attr(A, fn, "nounwind");
  A->helper[h] = fn;
  A->helper_ty[h] = fty;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(A->c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(A->c, fn, "entry"));
  LLVMValueRef a0 = LLVMGetParam(fn, 0), a1 = LLVMGetParam(fn, 1);
  LLVMValueRef a2 = nargs > 2 ? LLVMGetParam(fn, 2) : NULL, a3 = nargs > 3 ? LLVMGetParam(fn, 3) : NULL;
  LLVMValueRef r = NULL;
  switch (h) {
  case LW_H_ADD: { /* s = a+b; if s >= 2q: s -= 2q; if s >= q: s -= q */
    LLVMSetValueName2(a0, "a", 1), LLVMSetValueName2(a1, "b", 1);
    LLVMSetValueName2(a2, "q", 1), LLVMSetValueName2(a3, "q2", 2);
    LLVMValueRef s = LLVMBuildAdd(b, a0, a1, "s");
    r = lw_csub_select(b, lw_csub_select(b, s, a3, "s1"), a2, "r");
    break;
  }
  case LW_H_SUB: { /* d = a-b (signed); if d < 0: d += 2q; if d >= q: d -= q */
    LLVMSetValueName2(a0, "a", 1), LLVMSetValueName2(a1, "b", 1);
    LLVMSetValueName2(a2, "q", 1), LLVMSetValueName2(a3, "q2", 2);
    LLVMValueRef d = LLVMBuildSub(b, a0, a1, "d");
    LLVMValueRef negative = LLVMBuildICmp(b, LLVMIntSLT, d, LLVMConstInt(W, 0, 0), "neg");
    LLVMValueRef up = LLVMBuildAdd(b, d, a3, "");
    d = LLVMBuildSelect(b, negative, up, d, "d1");
    r = lw_csub_select(b, d, a2, "r");
    break;
  }
  case LW_H_NEG: { /* c = a >= q ? a-q : a; c == 0 ? 0 : q-c */
    LLVMSetValueName2(a0, "a", 1), LLVMSetValueName2(a1, "q", 1);
    LLVMValueRef cc = lw_csub_select(b, a0, a1, "c");
    LLVMValueRef zero = LLVMBuildICmp(b, LLVMIntEQ, cc, LLVMConstInt(W, 0, 0), "");
    LLVMValueRef qc = LLVMBuildSub(b, a1, cc, "");
    r = LLVMBuildSelect(b, zero, LLVMConstInt(W, 0, 0), qc, "r");
    break;
  }
  case LW_H_ADD_LAZY: { /* s = a+b; if s >= 2q: s -= 2q */
    LLVMSetValueName2(a0, "a", 1), LLVMSetValueName2(a1, "b", 1), LLVMSetValueName2(a2, "q2", 2);
    r = lw_csub_select(b, LLVMBuildAdd(b, a0, a1, "s"), a2, "r");
    break;
  }
  case LW_H_REDC: {
    LLVMSetValueName2(a0, "t", 1), LLVMSetValueName2(a1, "q", 1), LLVMSetValueName2(a2, "k", 1);
    LLVMTypeRef D = A->D;
    LLVMValueRef lo = LLVMBuildTrunc(b, a0, W, "lo");
    LLVMValueRef m = LLVMBuildMul(b, lo, a2, "m");
    if (!A->r32) /* r62: m = (low64(t) * k) mod 2^62 */
      m = LLVMBuildAnd(b, m, LLVMConstInt(W, (UINT64_C(1) << 62) - 1, 0), "m62");
    LLVMValueRef mq = LLVMBuildNUWMul(b, LLVMBuildZExt(b, m, D, ""), LLVMBuildZExt(b, a1, D, ""), "mq");
    LLVMValueRef sum = LLVMBuildAdd(b, a0, mq, "");
    LLVMValueRef u = LLVMBuildLShr(b, sum, LLVMConstInt(D, A->r32 ? 32 : 62, 0), "");
    u = LLVMBuildTrunc(b, u, W, "u");
    /* r32 is canonical (one subtraction); r62 stays lazy (none). */
    r = A->r32 ? lw_csub_select(b, u, a1, "r") : u;
    break;
  }
  case LW_H_MUL: {
    LLVMSetValueName2(a0, "a", 1), LLVMSetValueName2(a1, "b", 1);
    LLVMSetValueName2(a2, "q", 1), LLVMSetValueName2(a3, "k", 1);
    LLVMValueRef t = LLVMBuildNUWMul(b, LLVMBuildZExt(b, a0, A->D, ""),
                                     LLVMBuildZExt(b, a1, A->D, ""), "t");
    LLVMValueRef redc = lw_helper(A, LW_H_REDC);
    LLVMValueRef cargs[3] = {t, a2, a3};
    r = LLVMBuildCall2(b, A->helper_ty[LW_H_REDC], redc, cargs, 3, "r");
    break;
  }
  case LW_H_COUNT: SP_UNREACHABLE("helper op");
  }
  LLVMBuildRet(b, r);
  LLVMDisposeBuilder(b);
  return fn;
}

LLVMValueRef lw_helper_call(lw_arith *A, lw_helper_op h, LLVMValueRef *args, const char *name) {
  LLVMValueRef fn = lw_helper(A, h);
  unsigned n = LLVMCountParams(fn);
  return LLVMBuildCall2(A->b, A->helper_ty[h], fn, args, n, name);
}

/* ------------------------------------------------------------- NTT */

LLVMValueRef lw_umin(lw_arith *A, LLVMValueRef a, LLVMValueRef b) {
  unsigned id = LLVMLookupIntrinsicID("llvm.umin", 9);
  LLVMTypeRef ty = LLVMTypeOf(a);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(A->m, id, &ty, 1);
  LLVMValueRef args[2] = {a, b};
  return LLVMBuildCall2(A->b, LLVMIntrinsicGetType(A->c, id, &ty, 1), fn, args, 2, "");
}

/* r62's csub on the GPU (below): d = x - bound over 32-bit halves, then
 * x where d's top bit is set, else d. */
const char lw_ntt_csub62_ptx[] =
    "{\n\t"
    ".reg .u32 cx0, cx1, cb0, cb1, cd0, cd1;\n\t"
    ".reg .pred cneg;\n\t"
    "mov.b64 {cx0, cx1}, $1;\n\t"
    "mov.b64 {cb0, cb1}, $2;\n\t"
    "sub.cc.u32 cd0, cx0, cb0;\n\t"
    "subc.u32 cd1, cx1, cb1;\n\t"
    "setp.lt.s32 cneg, cd1, 0;\n\t"
    "selp.b32 cd0, cx0, cd0, cneg;\n\t"
    "selp.b32 cd1, cx1, cd1, cneg;\n\t"
    "mov.b64 $0, {cd0, cd1};\n\t"
    "}";

/* x - bound when x >= bound, else x. r32 (x < 2^32, bound < 2^31): the
 * unsigned minimum of x and x - bound, which wraps above x exactly when
 * x < bound (one min.u32 on the GPU instead of a compare and a select).
 * r62 on the host: compare and select. r62 on the GPU: the sign of
 * x - bound, which is set exactly when x < bound as long as x < bound +
 * 2^63 and bound <= 2^63; every csub here has x below 4q < 2^62 for lazy
 * inputs (q < 2^60). ptxas then tests one word instead of comparing two
 * with a carry: 1.5-3.5% off r62 2^14 .. 2^17 (RESULTS.md round 12). As
 * IR (icmp slt), LLVM and ptxas gave longer code than the compare. */
LLVMValueRef lw_csub(lw_arith *A, LLVMValueRef x, LLVMValueRef bound) {
  if (!A->r32 && A->target == LW_GPU) {
    LLVMTypeRef args[2] = {A->i64, A->i64};
    LLVMTypeRef fty = LLVMFunctionType(A->i64, args, 2, 0);
    static const char constraints[] = "=l,l,l";
    LLVMValueRef fn = LLVMGetInlineAsm(fty, lw_ntt_csub62_ptx, sizeof lw_ntt_csub62_ptx - 1,
                                       constraints, sizeof constraints - 1, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMValueRef vals[2] = {x, bound};
    return LLVMBuildCall2(A->b, fty, fn, vals, 2, "r");
  }
  LLVMValueRef d = LLVMBuildSub(A->b, x, bound, "");
  if (A->r32) return lw_umin(A, x, d);
  LLVMValueRef ge = LLVMBuildICmp(A->b, LLVMIntUGE, x, bound, "");
  return LLVMBuildSelect(A->b, ge, d, x, "");
}

/* High word of the double-word product a*b (mul.hi on the GPU). */
LLVMValueRef lw_mulhi(lw_arith *A, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef p = LLVMBuildNUWMul(A->b, LLVMBuildZExt(A->b, a, A->D, ""),
                                   LLVMBuildZExt(A->b, b, A->D, ""), "");
  p = LLVMBuildLShr(A->b, p, LLVMConstInt(A->D, (uint64_t)(A->r32 ? 32 : 64), 0), "");
  return LLVMBuildTrunc(A->b, p, A->W, "");
}

lw_mconst lw_mconst_make(lw_arith *A, LLVMValueRef k4, LLVMValueRef w) {
  lw_mconst mc = {0};
  if (!A->r32) {
    mc.w4 = LLVMBuildShl(A->b, w, LLVMConstInt(A->W, 2, 0), "w4");
    mc.wk4 = LLVMBuildMul(A->b, w, k4, "wk4");
  } else {
    mc.w4 = w;
    mc.wk4 = LLVMBuildMul(A->b, w, k4, "wk");
  }
  return mc;
}

/* r62 in Shoup's form. With c = w*k mod 2^62 (so wk4 = 4c) and
 * Q = floor(x*c / 2^62) = hi64(x * wk4), SPEC's m = x*c mod 2^62 =
 * x*c - 2^62 Q, so w*x + m*q = x (w + c q) - 2^62 Q q. Since k q = -1 mod
 * 2^62, w + c q is a multiple of 2^62; with WR = (w + c q) / 2^62,
 *   REDC(w * x) = (w*x + m*q) / 2^62 = x * WR - Q * q
 * exactly, for every x < 2^64: no estimate, so no correction, and the
 * result is below 2^64, so its low 64 bits are all it takes. WR itself is
 * REDC(w * 1) = hi64(wk4 * q) + (wk4 != 0) (the file comment's form with
 * x = 1), at most q: it costs a high product per twiddle, so it pays where
 * a block shares its twiddle constants (lw_ntt_kplan.shoup). */
lw_mconst lw_mconst_shoup(lw_arith *A, LLVMValueRef k4, LLVMValueRef q, LLVMValueRef w) {
  lw_mconst mc = lw_mconst_make(A, k4, w);
  LLVMValueRef nz = LLVMBuildZExt(A->b, LLVMBuildICmp(A->b, LLVMIntNE, mc.wk4, LLVMConstInt(A->W, 0, 0), ""), A->W, "");
  mc.wr = LLVMBuildNUWAdd(A->b, lw_mulhi(A, mc.wk4, q), nz, "wr");
  return mc;
}

/* The Shoup form above as one PTX chain on the GPU: Q's four partial
 * products with their carries, then x * WR + Q * (2^64 - q) mod 2^64. */
const char lw_ntt_shoup62_ptx[] = LW_NTT_SHOUP62_PTX("$0", "$1", "$2", "$3", "$4");

/* $0 = text($1 .. $4) on 64-bit words, as inline PTX (no side effects). */
static LLVMValueRef asm_product(lw_arith *A, const char *text, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c,
                                LLVMValueRef d) {
  LLVMTypeRef args[4] = {A->i64, A->i64, A->i64, A->i64};
  LLVMTypeRef fty = LLVMFunctionType(A->i64, args, 4, 0);
  static const char constraints[] = "=l,l,l,l,l";
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, sizeof constraints - 1, 0, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMValueRef vals[4] = {a, b, c, d};
  return LLVMBuildCall2(A->b, fty, fn, vals, 4, "u");
}

static LLVMValueRef redc62_shoup(lw_arith *A, LLVMValueRef q, LLVMValueRef nq,
                                 const lw_mconst *mc, LLVMValueRef x) {
  if (A->target != LW_GPU) {
    LLVMValueRef qt = lw_mulhi(A, x, mc->wk4);
    return LLVMBuildSub(A->b, LLVMBuildMul(A->b, x, mc->wr, ""), LLVMBuildMul(A->b, qt, q, ""), "u");
  }
  return asm_product(A, lw_ntt_shoup62_ptx, x, mc->wr, mc->wk4, nq);
}

/* REDC(w * x) for a constant w (see the file comment): r62 lazy, r32
 * canonical. w_is_one: REDC(x * 1), where the first high product is 0. */
/* r62 on the GPU: u = hi128(4w * x + m4 * q), the file comment's sum with
 * its carry, as one PTX chain over 32-bit halves. The low halves of the
 * two products sum to 0 or 2^64, so the carry out of the low word is the
 * `m4 != 0` of the IR form: the same word. Moreover S = 4w x + m4 q is a
 * multiple of 2^64, so with B = S - m0 q0 (every partial product but the
 * low halves' of m4 q) and 0 <= m0 q0 < 2^64, S is B rounded up to a
 * multiple of 2^64: u = (B + 2^64 - 1) >> 64, one 32 x 32 product fewer
 * (the constant rides in x0 w0's addend). ptxas fuses each mad.lo.cc /
 * madc.hi.cc pair into one IMAD.WIDE with carries, where the IR form's two
 * mul.hi.u64, compare, select and 64-bit add cost about a fifth more
 * instructions (bench/ntt-profile.sh counts them). The host path keeps the
 * IR form, so both are checked against the reference (the GPU one on the
 * GPU machine). */
const char lw_ntt_redc62_ptx[] = LW_NTT_REDC62_PTX("$0", "$1", "$2", "$3", "$4");

static LLVMValueRef redc62_gpu(lw_arith *A, LLVMValueRef q, const lw_mconst *mc, LLVMValueRef x) {
  return asm_product(A, lw_ntt_redc62_ptx, x, mc->w4, mc->wk4, q);
}

LLVMValueRef lw_redc_const(lw_arith *A, LLVMValueRef q, LLVMValueRef nq, const lw_mconst *mc,
                           LLVMValueRef x, int w_is_one) {
  if (!A->r32 && mc->wr && !w_is_one) return redc62_shoup(A, q, nq, mc, x);
  if (!A->r32 && A->target == LW_GPU && !w_is_one) return redc62_gpu(A, q, mc, x);
  if (A->r32) {
    /* SPEC's own form: u = (w*x + m*q) >> 32 in 64 bits (w*x, m*q < 2^62),
     * two mul.wide.u32 (one with the other as addend) and no carry test */
    LLVMValueRef m = LLVMBuildMul(A->b, x, mc->wk4, "m");
    LLVMValueRef t = LLVMBuildZExt(A->b, x, A->i64, "");
    if (!w_is_one) t = LLVMBuildNUWMul(A->b, LLVMBuildZExt(A->b, mc->w4, A->i64, ""), t, "");
    LLVMValueRef mq = LLVMBuildNUWMul(A->b, LLVMBuildZExt(A->b, m, A->i64, ""),
                                      LLVMBuildZExt(A->b, q, A->i64, ""), "");
    LLVMValueRef u = LLVMBuildLShr(A->b, LLVMBuildNUWAdd(A->b, t, mq, ""), LLVMConstInt(A->i64, 32, 0), "");
    return lw_csub(A, LLVMBuildTrunc(A->b, u, A->W, "u"), q);
  }
  LLVMValueRef m4 = LLVMBuildMul(A->b, x, mc->wk4, "m");
  LLVMValueRef h2 = lw_mulhi(A, m4, q);
  LLVMValueRef carry = LLVMBuildZExt(A->b, LLVMBuildICmp(A->b, LLVMIntNE, m4, LLVMConstInt(A->W, 0, 0), ""),
                                     A->W, "");
  LLVMValueRef u = LLVMBuildNUWAdd(A->b, h2, carry, "");
  if (!w_is_one) u = LLVMBuildNUWAdd(A->b, lw_mulhi(A, mc->w4, x), u, "u");
  return A->r32 ? lw_csub(A, u, q) : u;
}

LLVMValueRef lw_lazyadd(lw_arith *A, LLVMValueRef q2, LLVMValueRef a, LLVMValueRef b) {
  return lw_csub(A, LLVMBuildNUWAdd(A->b, a, b, ""), q2);
}

/* lazyadd(a, 2q - b), that is a - b when a >= b, else a - b + 2q (the
 * same word, one operation fewer). r32 (4q < 2^32): the unsigned minimum
 * of a - b and a - b + 2q (the first wraps above 2q exactly when a < b). */
LLVMValueRef lw_lazysub(lw_arith *A, LLVMValueRef q2, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef d = LLVMBuildSub(A->b, a, b, "");
  LLVMValueRef d2 = LLVMBuildAdd(A->b, d, q2, "");
  if (A->r32) return lw_umin(A, d, d2);
  LLVMValueRef lt = LLVMBuildICmp(A->b, LLVMIntULT, a, b, "");
  return LLVMBuildSelect(A->b, lt, d2, d, "");
}
