/* bconv_host.c: the conversion kernel on the host (bconv.h): the scalar
 * form JIT-compiled through lib/jit, its blocks split across threads. */
#include <stdint.h>
#include <stdlib.h>

#include "jit/jit.h"
#include "lower/bconv.h"
#include "nvptx/nvptx.h"

/* The host kernel through lib/jit, like every host kernel: compiled once,
 * its blocks split across threads by jit_run_blocks. */

struct lw_bconv_host {
  lw_bconv_plan plan; /* the column pointers are not kept (NULL) */
  jit_code *jit;
  jit_block_fn fn;
};

/* What build_bconv needs (jit_build_fn): the caller's plan, not h->plan,
 * for the build reads the column pointers h->plan drops. */
typedef struct bconv_build {
  fhjit_context *ctx;
  const lw_bconv_plan *p;
} bconv_build;

static const char bconv_name[] = "fhjit_bconv";

static fhjit_status build_bconv(void *arg, LLVMContextRef c, LLVMModuleRef *m) {
  const bconv_build *b = arg;
  *m = LLVMModuleCreateWithNameInContext(bconv_name, c);
  return lw_bconv_build(b->ctx, b->p, LW_HOST, bconv_name, c, *m); /* scalar */
}

void lw_bconv_host_destroy(lw_bconv_host *h) {
  if (!h) return;
  jit_destroy(h->jit);
  free(h);
}

fhjit_status lw_bconv_host_create(fhjit_context *ctx, const lw_bconv_plan *p,
                                  lw_bconv_host **out) {
  *out = NULL;
  if (!nv_init()) return ir_error(ctx, FHJIT_ERR_LLVM, "error: bconv host JIT: no native target");
  lw_bconv_host *h = calloc(1, sizeof *h);
  if (!h) return ir_error(ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  h->plan = *p;
  h->plan.mma = 0; /* the scalar form: the same words */
  h->plan.src_cols = h->plan.dst_cols = NULL;
  for (int k = 0; k < LW_BCONV_MAX_DIGITS - 1; k++) h->plan.more[k].src_cols = h->plan.more[k].dst_cols = NULL;
  static const char *const syms[1] = {"fhjit_bconv_host"};
  bconv_build b = {ctx, p};
  void *addr;
  const char *passes;
  fhjit_status st = lw_host_passes(ctx, &passes);
  if (!st)
    st = jit_compile(&ctx->err, bconv_name, passes, build_bconv, &b, "bconv (host)", syms, 1,
                     &addr, &h->jit);
  if (st) {
    free(h);
    return st;
  }
  h->fn = (jit_block_fn)(uintptr_t)addr;
  *out = h;
  return FHJIT_OK;
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
  /* every block needs its shared array, even an empty one */
  size_t shared = p->shared_bytes ? ((size_t)p->shared_bytes + 15) / 16 * 16 : 16;
  return jit_run_blocks(&ctx->err, h->fn, slots, (int64_t)p->blocks,
                        threads > 0 ? threads : jit_cores(), shared, "bconv host run");
}
