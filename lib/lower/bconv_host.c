/* bconv_host.c: the conversion kernel on the host (bconv.h): the scalar
 * form JIT-compiled through lib/jit, its blocks split across threads. */
#include <stdint.h>
#include <stdlib.h>

#include "jit/jit.h"
#include "lower/bconv.h"
#include "nvptx/nvptx.h"

/* The host kernel through lib/jit, like every host kernel: compiled once,
 * its blocks split across threads by jit_split. */
typedef void (*host_fn)(const uint64_t *slots, int64_t begin, int64_t end, void *shared);

struct lw_bconv_host {
  lw_bconv_plan plan; /* the column pointers are not kept (NULL) */
  jit_code *jit;
  host_fn fn;
};

void lw_bconv_host_destroy(lw_bconv_host *h) {
  if (!h) return;
  jit_destroy(h->jit);
  free(h);
}

fhjit_status lw_bconv_host_create(fhjit_context *ctx, const lw_bconv_plan *p,
                                  lw_bconv_host **out) {
  *out = NULL;
  static const char name[] = "fhjit_bconv", who[] = "bconv (host)";
  if (!nv_init()) return ir_error(ctx, FHJIT_ERR_LLVM, "error: bconv host JIT: no native target");
  LLVMTargetMachineRef tm = nv_host_machine(&ctx->err);
  if (!tm) return FHJIT_ERR_LLVM;
  lw_bconv_host *h = calloc(1, sizeof *h);
  if (!h || !(h->jit = jit_create(&ctx->err))) {
    free(h);
    LLVMDisposeTargetMachine(tm);
    return ir_error(ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  }
  h->plan = *p;
  h->plan.mma = 0; /* the scalar form: the same words */
  h->plan.src_cols = h->plan.dst_cols = NULL;
  for (int k = 0; k < LW_BCONV_MAX_DIGITS - 1; k++) h->plan.more[k].src_cols = h->plan.more[k].dst_cols = NULL;
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext(name, jit_llvm_context(h->jit));
  nv_prepare_module(m, tm);
  fhjit_status st = lw_bconv_build(ctx, p, LW_HOST, name, jit_llvm_context(h->jit), m); /* scalar */
  if (!st) st = nv_pipeline(&ctx->err, m, tm, name, "default<O2>", FHJIT_EMIT_LLVM_OPT, NULL, NULL);
  LLVMDisposeTargetMachine(tm);
  if (st) LLVMDisposeModule(m);
  else st = jit_add_module(&ctx->err, h->jit, m, who);
  void *addr = NULL;
  if (!st) st = jit_lookup(&ctx->err, h->jit, "fhjit_bconv_host", who, &addr);
  if (st) {
    lw_bconv_host_destroy(h);
    return st;
  }
  h->fn = (host_fn)(uintptr_t)addr;
  *out = h;
  return FHJIT_OK;
}

typedef struct host_job {
  host_fn fn;
  const uint64_t *slots;
} host_job;

static void host_range(void *arg, int64_t begin, int64_t end, void *shared) {
  const host_job *j = arg;
  j->fn(j->slots, begin, end, shared);
}

fhjit_status lw_bconv_host_run(fhjit_context *ctx, lw_bconv_host *h, const void *params,
                               int64_t pstride, const void *table,
                               const void *const *more_tables, const void *src, void *dst,
                               int threads) {
  if (!h || !params || !src || !dst || (!table && !h->plan.lift) ||
      (h->plan.digits > 1 && !more_tables))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv host run: null argument");
  if (src == dst)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: bconv host run: src and dst must be distinct buffers");
  const lw_bconv_plan *p = &h->plan;
  uint64_t slots[5 + LW_BCONV_MAX_DIGITS] = {
      (uint64_t)(uintptr_t)params, (uint64_t)pstride,
      (uint64_t)(uintptr_t)(table ? table : params), (uint64_t)(uintptr_t)src,
      (uint64_t)(uintptr_t)dst};
  for (int k = 1; k < p->digits; k++) {
    if (!more_tables[k - 1])
      return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv host run: digit %d's table is null", k);
    slots[4 + k] = (uint64_t)(uintptr_t)more_tables[k - 1];
  }
  host_job job = {h->fn, slots};
  /* every block needs its shared array, even an empty one */
  size_t shared = p->shared_bytes ? ((size_t)p->shared_bytes + 15) / 16 * 16 : 16;
  return jit_split(&ctx->err, host_range, &job, (int64_t)p->blocks,
                   threads > 0 ? threads : jit_cores(), shared, "bconv host run");
}
