/* arith.h: the modular-arithmetic IR builders of the lowering (prefix lw_),
 * one file for the pointwise kernels (lower.c) and the NTT
 * (ntt_emit_phase.c).
 *
 * Two families, each kept exactly as its kernels were tuned (the golden
 * PTX hashes hold them):
 *  - the pointwise helpers (lw_helper_call): SPEC sections 2-3's formulas
 *    as small internal always-inline functions "fhjit.<radix>.<op>" taking
 *    q, 2q and k as arguments, canonical results, conditional subtractions
 *    as compare and select;
 *  - the NTT's products by a per-row constant (lw_mconst, lw_redc_const)
 *    and lazy sums, built inline, with the GPU's special forms (min.u32,
 *    PTX chains for r62: ntt_redc62_ptx.h) where they measured faster.
 * Both read the builder position and word types from an lw_arith. */
#ifndef FHJIT_LOWER_ARITH_H
#define FHJIT_LOWER_ARITH_H

#include <llvm-c/Core.h>

#include "lower/lw_llvm.h"

/* The pointwise helpers (their argument lists: lw_helper). */
typedef enum lw_helper_op {
  LW_H_ADD,      /* a, b, q, 2q: canonical a + b */
  LW_H_SUB,      /* a, b, q, 2q: canonical a - b */
  LW_H_NEG,      /* a, q */
  LW_H_ADD_LAZY, /* a, b, 2q: a + b in [0, 2q) */
  LW_H_REDC,     /* t (double word), q, k: r32 canonical, r62 lazy */
  LW_H_MUL,      /* a, b, q, k: REDC(a * b) */
  LW_H_COUNT
} lw_helper_op;

typedef struct lw_arith {
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b; /* where lw_ builders put their instructions */
  LLVMTypeRef W, D, i64; /* the word, the double word */
  int r32;               /* radix r32 (else r62) */
  lw_target target;
  /* the pointwise helpers of m, made on first use */
  LLVMValueRef helper[LW_H_COUNT];
  LLVMTypeRef helper_ty[LW_H_COUNT];
} lw_arith;

/* An lw_arith for radix r building with b into m. */
void lw_arith_init(lw_arith *A, LLVMContextRef c, LLVMModuleRef m, LLVMBuilderRef b,
                   fhjit_radix radix, lw_target target);

/* ------------------------------------------------------- pointwise */

/* The helper function of op h (made in A->m on first use). */
LLVMValueRef lw_helper(lw_arith *A, lw_helper_op h);
/* A call of helper h at the builder (as many args as it takes). */
LLVMValueRef lw_helper_call(lw_arith *A, lw_helper_op h, LLVMValueRef *args, const char *name);

/* ------------------------------------------------------------- NTT */

/* A constant multiplier w with its precomputed Montgomery constant. */
typedef struct lw_mconst {
  LLVMValueRef w4, wk4; /* r62: 4w and w*4k mod 2^64; r32: w and w*k mod 2^32 */
  LLVMValueRef wr;      /* r62 in Shoup's form (lw_mconst_shoup): REDC(w); else NULL */
} lw_mconst;

/* unsigned min (llvm.umin) */
LLVMValueRef lw_umin(lw_arith *A, LLVMValueRef a, LLVMValueRef b);
/* x - bound when x >= bound, else x (see arith.c for the forms). */
LLVMValueRef lw_csub(lw_arith *A, LLVMValueRef x, LLVMValueRef bound);
/* LLVM odds and ends every emitter uses: an enum attribute on a function
 * or on its parameter `param` (0-based), and a call of an argument-less
 * intrinsic (the GPU's special registers). */
void lw_fn_attr(LLVMContextRef c, LLVMValueRef fn, const char *name);
void lw_param_attr(LLVMContextRef c, LLVMValueRef fn, unsigned param, const char *name);
LLVMValueRef lw_intrinsic0(LLVMContextRef c, LLVMModuleRef m, LLVMBuilderRef b,
                           const char *name);
/* A programmatic-dependent-launch instruction (sm_90: "griddepcontrol.wait;"
 * or "griddepcontrol.launch_dependents;") at b's position: inline PTX with
 * side effects and a memory clobber, so that no data access moves across it. */
void lw_grid_dep(LLVMContextRef c, LLVMBuilderRef b, const char *text);
/* A call at b's position of inline PTX `text` with side effects
 * (constraints cons) on args[0 .. n), n <= 4, returning ret. */
LLVMValueRef lw_asm(LLVMBuilderRef b, LLVMTypeRef ret, const char *text, const char *cons,
                    LLVMValueRef *args, unsigned n);
/* A kernel's entry as a dependent launch (its description's LW_KERNEL_PDL;
 * anchor_gpu.c for a step program's conversion and pointwise kernels): it
 * waits for the stream's previous kernel before any access, then lets the
 * stream's next kernel launch. Its pointer arguments must not be noalias:
 * LLVM may move loads of noalias memory above the wait. */
void lw_dependent_entry(LLVMContextRef c, LLVMBuilderRef b);

/* x >= bound ? x - bound : x as a select (the pointwise helpers' form). */
LLVMValueRef lw_csub_select(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef bound,
                            const char *name);
/* High word of the double-word product a*b. */
LLVMValueRef lw_mulhi(lw_arith *A, LLVMValueRef a, LLVMValueRef b);
/* w's constants for a row with k4 (= 4k mod 2^64 for r62, k for r32). */
lw_mconst lw_mconst_make(lw_arith *A, LLVMValueRef k4, LLVMValueRef w);
/* The same with r62's Shoup constant REDC(w) (q: the row's modulus). */
lw_mconst lw_mconst_shoup(lw_arith *A, LLVMValueRef k4, LLVMValueRef q, LLVMValueRef w);
/* REDC(w * x) for a constant w: r62 lazy, r32 canonical. nq: 2^64 - q (r62
 * Shoup's form on the GPU). w_is_one: REDC(x * 1). */
LLVMValueRef lw_redc_const(lw_arith *A, LLVMValueRef q, LLVMValueRef nq, const lw_mconst *mc,
                           LLVMValueRef x, int w_is_one);
/* a + b in [0, 2q) for a, b < 2q; a - b the same way (lazyadd(a, 2q - b)). */
LLVMValueRef lw_lazyadd(lw_arith *A, LLVMValueRef q2, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef lw_lazysub(lw_arith *A, LLVMValueRef q2, LLVMValueRef a, LLVMValueRef b);

/* The r62 twiddle product on the GPU, as PTX (inline assembly): $0 =
 * REDC(w * $1) with $2 = 4w, $3 = w * 4k mod 2^64, $4 = q, all 64-bit
 * (test_ntt_emit runs this text through a small PTX interpreter). */
extern const char lw_ntt_redc62_ptx[];
/* The same product in Shoup's form: $0 = REDC(w * $1) with $2 = REDC(w),
 * $3 = w * 4k mod 2^64, $4 = 2^64 - q (the same interpreter). */
extern const char lw_ntt_shoup62_ptx[];
/* r62's conditional subtraction on the GPU: $0 = $1 - $2 when $1 >= $2,
 * else $1, for $1 < $2 + 2^63 and $2 <= 2^63 (the same interpreter). */
extern const char lw_ntt_csub62_ptx[];

#endif
