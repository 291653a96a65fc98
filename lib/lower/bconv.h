/* bconv.h: STUB of the basis conversion kernel interface (the real one comes from branch i16-bconv). */
#ifndef FHJIT_LOWER_BCONV_H
#define FHJIT_LOWER_BCONV_H
#include "lower/lw_llvm.h"
typedef struct lw_bconv_plan {
  fhjit_radix radix;
  int mont, lift;
  int32_t l, m;
  int log_n;
  int64_t polys;
  int src_nax;
  int64_t src_ext[FHJIT_MAX_BATCH + 1], src_stride[FHJIT_MAX_BATCH + 1];
  int64_t src_offset, src_row_stride, src_index_stride;
  int64_t table_offset;
  const int32_t *src_cols, *dst_cols;
  uint32_t blocks, threads, shared_bytes;
} lw_bconv_plan;
fhjit_status lw_bconv_plan_make(fhjit_context *ctx, lw_bconv_plan *p);
fhjit_status lw_bconv_build(fhjit_context *ctx, const lw_bconv_plan *p, lw_target target,
                            const char *name, LLVMContextRef c, LLVMModuleRef m);
typedef struct lw_bconv_host lw_bconv_host;
fhjit_status lw_bconv_host_create(fhjit_context *ctx, const lw_bconv_plan *p, lw_bconv_host **out);
fhjit_status lw_bconv_host_run(fhjit_context *ctx, lw_bconv_host *h, const void *params,
                               int64_t pstride, const void *table, const void *src, void *dst,
                               int threads);
void lw_bconv_host_destroy(lw_bconv_host *h);
#endif
