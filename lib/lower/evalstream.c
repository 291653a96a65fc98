/* evalstream.c: an evaluator (lower.c) whose input loads stream. Every
 * load of the function from one of the pointer parameters it is given
 * (inputs of the sub-graph) becomes inline PTX loading the same words with
 * an eviction hint: not allocated in the L1 and evict-first in the L2 (a
 * `createpolicy` cache hint), or the `.cs` cache operator, so that words
 * read once, such as a key switch's keys in its reduce kernel, leave the
 * L2 before the lines the next steps still read (ntt_plan epics,
 * ntt_emit_fuse.c). The value is the load's: only the caches' replacement
 * changes. Loads from anything else (the parameter table, constant
 * tables) stay. GPU only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The loads of fn from its parameters in params, in order, into *loads
 * (malloc'd, *n of them). */
static fhjit_status input_loads(fhjit_context *ctx, LLVMValueRef fn, uint64_t params,
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

/* Elements of a load's type (1 for a scalar) and their type. */
static unsigned lanes_of(LLVMTypeRef t, LLVMTypeRef *elem) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) {
    *elem = t;
    return 1;
  }
  *elem = LLVMGetElementType(t);
  return LLVMGetVectorSize(t);
}

/* The PTX text of one load of k words of `bits` bits at [$k + off]. The
 * L2's evict-first priority is a cache policy on sm_90 (the `.L2::evict_first`
 * qualifier of ld wants 32-byte loads): made in the asm's own scope,
 * where ptxas folds the copies into one. */
static void load_text(char *out, size_t size, unsigned k, unsigned bits, unsigned off, int cs) {
  int n = cs ? snprintf(out, size, "ld.global.cs")
             : snprintf(out, size, "{ .reg .b64 pol; createpolicy.fractional.L2::evict_first.b64 pol, 1.0; "
                                   "ld.global.L1::no_allocate.L2::cache_hint");
  n += snprintf(out + n, size - (size_t)n, "%s.u%u ", k == 2 ? ".v2" : k == 4 ? ".v4" : "", bits);
  if (k > 1) n += snprintf(out + n, size - (size_t)n, "{");
  for (unsigned j = 0; j < k; j++) n += snprintf(out + n, size - (size_t)n, j ? ", $%u" : "$%u", j);
  if (k > 1) n += snprintf(out + n, size - (size_t)n, "}");
  snprintf(out + n, size - (size_t)n, cs ? ", [$%u+%u];" : ", [$%u+%u], pol; }", k, off);
}

/* Words [first, first + k) of the load at addr (i64), as k values. */
static void load_words(LLVMBuilderRef b, LLVMValueRef addr, LLVMTypeRef elem, unsigned k,
                       unsigned first, int cs, LLVMValueRef *out) {
  LLVMContextRef c = LLVMGetTypeContext(elem);
  unsigned bits = LLVMGetIntTypeWidth(elem);
  LLVMTypeRef fields[4] = {elem, elem, elem, elem};
  LLVMTypeRef ret = k == 1 ? elem : LLVMStructTypeInContext(c, fields, k, 0);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef fty = LLVMFunctionType(ret, &i64, 1, 0);
  char text[256], cons[32];
  load_text(text, sizeof text, k, bits, first * bits / 8, cs);
  size_t n = 0;
  for (unsigned j = 0; j < k; j++) n += (size_t)snprintf(cons + n, sizeof cons - n, "=%c,", bits == 32 ? 'r' : 'l');
  snprintf(cons + n, sizeof cons - n, "l");
  /* side effects: kept where the evaluator put it, after the kernel's
   * waits for the steps before it */
  LLVMValueRef asm_fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
                                         LLVMInlineAsmDialectATT, 0);
  LLVMValueRef v = LLVMBuildCall2(b, fty, asm_fn, &addr, 1, "ls");
  for (unsigned j = 0; j < k; j++) out[j] = k == 1 ? v : LLVMBuildExtractValue(b, v, j, "ls");
}

/* Words a PTX load may take at once: at most 16 bytes, at most the
 * alignment, a power of two dividing the lanes. */
static unsigned chunk_of(unsigned lanes, unsigned bytes, unsigned align) {
  unsigned k = lanes;
  while (k > 1 && (k * bytes > 16 || k * bytes > align)) k /= 2;
  return k;
}

static void stream_instead(LLVMBuilderRef b, LLVMValueRef load, int cs) {
  LLVMTypeRef t = LLVMTypeOf(load), elem;
  unsigned lanes = lanes_of(t, &elem);
  unsigned bytes = LLVMGetIntTypeWidth(elem) / 8;
  unsigned k = chunk_of(lanes, bytes, LLVMGetAlignment(load));
  LLVMPositionBuilderBefore(b, load);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetTypeContext(t));
  LLVMValueRef addr = LLVMBuildPtrToInt(b, LLVMGetOperand(load, 0), i64, "ls.addr");
  LLVMValueRef words[16];
  for (unsigned j = 0; j < lanes; j += k) load_words(b, addr, elem, k, j, cs, words + j);
  LLVMValueRef v = words[0];
  if (lanes > 1) {
    v = LLVMGetUndef(t);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(t));
    for (unsigned j = 0; j < lanes; j++)
      v = LLVMBuildInsertElement(b, v, words[j], LLVMConstInt(i32, j, 0), "ls");
  }
  LLVMReplaceAllUsesWith(load, v);
  LLVMInstructionEraseFromParent(load);
}

/* A load this rewrite can take: integer words of 32 or 64 bits, at most
 * 16 lanes (the evaluators' widest vector is LW_VMAX words). */
static int streamable(LLVMValueRef load) {
  LLVMTypeRef elem;
  unsigned lanes = lanes_of(LLVMTypeOf(load), &elem);
  if (LLVMGetTypeKind(elem) != LLVMIntegerTypeKind || lanes > 16) return 0;
  unsigned bits = LLVMGetIntTypeWidth(elem);
  return bits == 32 || bits == 64;
}

fhjit_status lw_eval_stream_loads(fhjit_context *ctx, LLVMValueRef fn, uint64_t params, int cs) {
  size_t n;
  LLVMValueRef *loads;
  fhjit_status st = input_loads(ctx, fn, params, &loads, &n);
  if (st) return st;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(fn)));
  for (size_t j = 0; j < n; j++)
    if (streamable(loads[j])) stream_instead(b, loads[j], cs);
  LLVMDisposeBuilder(b);
  free(loads);
  return FHJIT_OK;
}
