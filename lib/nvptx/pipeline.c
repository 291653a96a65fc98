/* pipeline.c: the one compile pipeline of every GPU module (nv_pipeline):
 * verify, optimise, emit PTX, handing out the text of whichever stage was
 * asked for on the way. The fused pointwise kernels, the NTT programs and
 * the standalone NTT kernels all go through it. */
#include <stdlib.h>
#include <string.h>

#include "nvptx/nvptx.h"

/* The module's text as *text, or FHJIT_ERR_MEMORY. */
static fhjit_status take_text(sp_err *e, LLVMModuleRef m, char **text) {
  if ((*text = nv_module_text(m))) return FHJIT_OK;
  return sp_error(e, FHJIT_ERR_MEMORY, "error: out of memory for module text");
}

/* *text takes the PTX (a copy when *ptx takes it too). */
static fhjit_status hand_out_ptx(sp_err *e, char *out, char **text, char **ptx) {
  if (text && ptx && !(*text = strdup(out))) {
    free(out);
    return sp_error(e, FHJIT_ERR_MEMORY, "error: out of memory for PTX text");
  }
  if (ptx) *ptx = out;
  else *text = out;
  return FHJIT_OK;
}

fhjit_status nv_pipeline(sp_err *e, LLVMModuleRef m, LLVMTargetMachineRef tm, const char *what,
                         const char *passes, fhjit_emit_kind stage, char **text, char **ptx) {
  if (text) *text = NULL;
  if (ptx) *ptx = NULL;
  int optimise = ptx || stage != FHJIT_EMIT_LLVM;
  int emit = ptx || (text && stage == FHJIT_EMIT_PTX);
  fhjit_status st = nv_verify(e, m, what);
  if (!st && text && stage == FHJIT_EMIT_LLVM) st = take_text(e, m, text);
  if (!st && optimise) st = nv_optimize(e, m, tm, passes);
  if (!st && text && stage == FHJIT_EMIT_LLVM_OPT) st = take_text(e, m, text);
  if (!st && emit) {
    char *out = NULL;
    st = nv_emit_ptx(e, m, tm, &out);
    if (!st) st = hand_out_ptx(e, out, stage == FHJIT_EMIT_PTX ? text : NULL, ptx);
  }
  if (st && text) {
    free(*text);
    *text = NULL;
  }
  return st;
}
