/* bconv.c: STUB until branch i16-bconv lands. */
#include "lower/bconv.h"
fhjit_status lw_bconv_plan_make(fhjit_context *ctx, lw_bconv_plan *p) {
  (void)p;
  return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "bconv: stub");
}
fhjit_status lw_bconv_build(fhjit_context *ctx, const lw_bconv_plan *p, lw_target target,
                            const char *name, LLVMContextRef c, LLVMModuleRef m) {
  (void)p, (void)target, (void)name, (void)c, (void)m;
  return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "bconv: stub");
}
fhjit_status lw_bconv_host_create(fhjit_context *ctx, const lw_bconv_plan *p, lw_bconv_host **out) {
  (void)p, (void)out;
  return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "bconv: stub");
}
fhjit_status lw_bconv_host_run(fhjit_context *ctx, lw_bconv_host *h, const void *params,
                               int64_t pstride, const void *table, const void *src, void *dst,
                               int threads) {
  (void)h, (void)params, (void)pstride, (void)table, (void)src, (void)dst, (void)threads;
  return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "bconv: stub");
}
void lw_bconv_host_destroy(lw_bconv_host *h) { (void)h; }
