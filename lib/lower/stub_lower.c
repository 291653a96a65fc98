/* stub_lower.c: placeholder for the lowering, PTX emission and host JIT;
 * deleted when they land. */
#include "ir/ir.h"
const char *fhjit_emit(fhjit_graph *g, fhjit_emit_kind kind, const char *arch) {
  (void)kind; (void)arch; ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED, "not implemented yet"); return NULL;
}
const char *const *fhjit_targets(void) { static const char *const t[] = {NULL}; return t; }
fhjit_status fhjit_run_host(fhjit_graph *g, const void *params, int64_t pstride, const void *const *inputs,
                            void *const *results, int threads) {
  (void)params; (void)pstride; (void)inputs; (void)results; (void)threads;
  return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED, "not implemented yet");
}
