/* lower_sym.c: what every emitter of the lowering uses, the pointwise
 * kernels (lower.c), the NTT (ntt_emit*.c), the conversion (bconv.c) and
 * the plans' kernels (anchor_gpu.c): whether a module has a symbol, the
 * error for a duplicate one, and a row's parameter column on a basis
 * (SPEC section 7: the row's chain position, lw_column). */
#include "lower/lw_llvm.h"

int lw_symbol_taken(LLVMModuleRef m, const char *name) {
  return LLVMGetNamedFunction(m, name) != NULL || LLVMGetNamedGlobal(m, name) != NULL;
}

fhjit_status lw_duplicate_symbol(fhjit_context *ctx, const char *name) {
  return ir_error(ctx, FHJIT_ERR_LLVM,
                  "internal: symbol %s defined twice in one module (names must be unique)", name);
}

LLVMValueRef lw_column(LLVMBuilderRef b, LLVMModuleRef m, lw_target target, const int32_t *cols,
                       int64_t rows, LLVMValueRef row, const char *sym) {
  if (!cols) return row;
  LLVMTypeRef i64 = LLVMTypeOf(row);
  if (LLVMIsAConstantInt(row)) {
    uint64_t r = LLVMConstIntGetZExtValue(row);
    return LLVMConstInt(i64, (uint64_t)(r < (uint64_t)rows ? cols[r] : 0), 0);
  }
  /* runs of consecutive positions: row r of the run from row s is at column
   * r + (cols[s] - s); a few runs are a select chain on the row, more a
   * table (past TABLE_MAX rows, never in practice, a long chain: no
   * allocation) */
  enum { MAX_RUNS = 4, TABLE_MAX = 1024 };
  int nruns = 0;
  for (int64_t r = 0; r < rows; r++) nruns += r == 0 || cols[r] != cols[r - 1] + 1;
  if (nruns <= MAX_RUNS || rows > TABLE_MAX) {
    LLVMValueRef dv = NULL;
    int64_t end = rows; /* where the run after r's starts */
    for (int64_t r = rows - 1; r >= 0; r--) {
      if (r > 0 && cols[r] == cols[r - 1] + 1) continue;
      /* rows [r, end) are a run */
      LLVMValueRef d = LLVMConstInt(i64, (uint64_t)((int64_t)cols[r] - r), 0);
      if (!dv) dv = d;
      else {
        LLVMValueRef lim = LLVMConstInt(i64, (uint64_t)end, 0);
        LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, row, lim, "");
        dv = LLVMBuildSelect(b, in, d, dv, "");
      }
      end = r;
    }
    return LLVMBuildAdd(b, row, dv, "col");
  }
  LLVMValueRef tab = LLVMGetNamedGlobal(m, sym);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(m));
  if (!tab) {
    LLVMValueRef vals[TABLE_MAX];
    for (int64_t r = 0; r < rows; r++) vals[r] = LLVMConstInt(i32, (uint64_t)cols[r], 0);
    LLVMTypeRef arr = LLVMArrayType2(i32, (uint64_t)rows);
    tab = LLVMAddGlobalInAddressSpace(m, arr, sym, target == LW_GPU ? 1 : 0);
    LLVMSetInitializer(tab, LLVMConstArray2(i32, vals, (uint64_t)rows));
    LLVMSetLinkage(tab, LLVMInternalLinkage);
    LLVMSetGlobalConstant(tab, 1);
    LLVMSetUnnamedAddress(tab, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(tab, 4);
  }
  LLVMValueRef ptr = LLVMBuildInBoundsGEP2(b, i32, tab, &row, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(b, i32, ptr, "col");
  LLVMSetAlignment(v, 4);
  return LLVMBuildZExt(b, v, i64, "");
}
