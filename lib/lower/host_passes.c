/* host_passes.c: which IR pipeline a host NTT or conversion module gets
 * (the host_pipeline option, FHJIT_HOST_PIPELINE).
 *
 * "lean" (the default) is the fused pointwise kernel's pipeline
 * (lw_gpu_pipeline: inlining, CSE, instcombine, CFG cleanup). The host
 * paths exist to check the lowering's arithmetic where no GPU is, and there
 * compile time is the cost: under default<O2> the optimiser took 75-90% of
 * the heaviest unit tests' time (test_ntt_cluster 168 s of CPU, 18 s with
 * this pipeline; test_ks_fusion's fusion case 171 of its 226 s), while the
 * compiled code ran as fast to within the tests' noise. "gpu" runs the
 * pipeline the GPU modules of the same kernels get (lw_kernel_pipeline,
 * default<O3>), so that a test can still check the host results through
 * every transformation the optimiser makes on the GPU (CI runs the golden
 * host hashes that way: test/golden/golden.py). */
#include <string.h>

#include "lower/lw_llvm.h"

int lw_host_pipeline_parse(const char *text, int *gpu) {
  *gpu = 0;
  if (!text || !*text || !strcmp(text, "lean")) return 1;
  if (strcmp(text, "gpu")) return 0;
  *gpu = 1;
  return 1;
}

fhjit_status lw_host_passes(fhjit_context *ctx, const char **passes) {
  *passes = NULL;
  const char *v = ir_option(ctx, IR_OPT_HOST_PIPELINE);
  int gpu;
  if (!lw_host_pipeline_parse(v, &gpu))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: %s: expected lean or gpu, not '%s'",
                    ir_option_label(ctx, IR_OPT_HOST_PIPELINE), v);
  *passes = gpu ? lw_kernel_pipeline : lw_gpu_pipeline;
  return FHJIT_OK;
}
