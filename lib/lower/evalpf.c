/* evalpf.c: an evaluator (lower.c) turned into prefetches. Every load of
 * the function from one of a range of its pointer parameters (the
 * sub-graph's inputs) becomes a prefetch.global.L2 of the same address,
 * its value zero; loads from anything else (the parameter table, internal
 * constant tables) stay, so the addresses keep their row and column
 * arithmetic. Called where the results are ignored, the function inlines
 * to the address arithmetic and the prefetches alone: the reduce kernel
 * prefetches the keys its epilogue will read (ntt_emit_fuse.c, epipf).
 * The walk that finds those loads is shared with evalstream.c. */
#include <stdlib.h>

#include "lower/lw_llvm.h"

/* The pointer a chain of GEPs starts from. */
static LLVMValueRef gep_base(LLVMValueRef p) {
  for (;;) {
    if (LLVMIsAGetElementPtrInst(p)) p = LLVMGetOperand(p, 0);
    else if (LLVMIsAConstantExpr(p) && LLVMGetConstOpcode(p) == LLVMGetElementPtr) p = LLVMGetOperand(p, 0);
    else return p;
  }
}

/* 1 when p is based on a parameter of fn whose bit is set in params. */
static int from_params(LLVMValueRef fn, LLVMValueRef p, uint64_t params) {
  LLVMValueRef base = gep_base(p);
  for (unsigned i = 0; i < 64 && i < LLVMCountParams(fn); i++)
    if ((params >> i & 1) && base == LLVMGetParam(fn, i)) return 1;
  return 0;
}

static void prefetch_instead(LLVMBuilderRef b, LLVMValueRef load) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(load));
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMPositionBuilderBefore(b, load);
  LLVMValueRef addr = LLVMBuildPtrToInt(b, LLVMGetOperand(load, 0), i64, "pf");
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), &i64, 1, 0);
  static const char text[] = "prefetch.global.L2 [$0];", cons[] = "l";
  LLVMValueRef asm_fn = LLVMGetInlineAsm(fty, text, sizeof text - 1, cons, sizeof cons - 1, 1, 0,
                                         LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(b, fty, asm_fn, &addr, 1, "");
  LLVMReplaceAllUsesWith(load, LLVMConstNull(LLVMTypeOf(load)));
  LLVMInstructionEraseFromParent(load);
}

fhjit_status lw_eval_input_loads(fhjit_context *ctx, LLVMValueRef fn, uint64_t params,
                                 LLVMValueRef **loads, size_t *n) {
  size_t cap = 0;
  *loads = NULL;
  *n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (LLVMGetInstructionOpcode(i) != LLVMLoad || !from_params(fn, LLVMGetOperand(i, 0), params))
        continue;
      if (*n == cap) {
        LLVMValueRef *grown = realloc(*loads, (cap = cap ? 2 * cap : 16) * sizeof **loads);
        if (!grown) {
          free(*loads);
          *loads = NULL;
          return ir_error(ctx, FHJIT_ERR_MEMORY, "internal: out of memory (evaluator loads)");
        }
        *loads = grown;
      }
      (*loads)[(*n)++] = i;
    }
  return FHJIT_OK;
}

fhjit_status lw_eval_to_prefetch(fhjit_context *ctx, LLVMValueRef fn, unsigned first,
                                 unsigned count) {
  size_t n;
  LLVMValueRef *loads;
  uint64_t params = 0;
  for (unsigned i = first; i < first + count && i < 64; i++) params |= UINT64_C(1) << i;
  fhjit_status st = lw_eval_input_loads(ctx, fn, params, &loads, &n);
  if (st) return st;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(fn)));
  for (size_t j = 0; j < n; j++) prefetch_instead(b, loads[j]);
  LLVMDisposeBuilder(b);
  free(loads);
  return FHJIT_OK;
}
