/* run_args.c: the checks every host-side run of a bound graph makes on its
 * arguments (the interpreter and the host JIT share them, so both refuse the
 * same calls with the same messages). */
#include <stdint.h>

#include "ir/ir.h"

int64_t ir_pstride_max(int64_t columns, size_t word) {
  uint64_t words = (uint64_t)PTRDIFF_MAX / word;
  if ((uint64_t)columns >= words) return 0;
  return (int64_t)((words - (uint64_t)columns) / 7);
}

fhjit_status ir_check_pstride(fhjit_graph *g, const char *fn, int64_t pstride, int64_t columns) {
  if (pstride < columns)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "%s: graph @%s: pstride = %lld is smaller than the %lld limbs the graph "
                    "uses",
                    fn, g->name, (long long)pstride, (long long)columns);
  int64_t most = ir_pstride_max(columns, ir_word_size(g->radix));
  if (pstride > most)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "%s: graph @%s: pstride = %lld puts the parameter table's row 7 past the "
                    "address space (at most %lld words)",
                    fn, g->name, (long long)pstride, (long long)most);
  return FHJIT_OK;
}

fhjit_status ir_check_run_args(fhjit_graph *g, const char *fn, const void *params,
                               const void *const *inputs, void *const *results) {
  if (!g->bound)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s is not bound (call fhjit_bind)",
                    fn, g->name);
  if (!params)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: null parameter table", fn,
                    g->name);
  if (g->ninputs > 0 && !inputs)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: null input array", fn, g->name);
  for (int32_t i = 0; i < g->ninputs; i++)
    if (!inputs[i])
      return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: null buffer for input %%%s",
                      fn, g->name, g->nodes[g->inputs[i]].name);
  if (g->nresults > 0 && !results)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: null result array", fn,
                    g->name);
  for (int32_t k = 0; k < g->nresults; k++)
    if (!results[k])
      return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                      "%s: graph @%s: null buffer for result #%d (%%%s)", fn, g->name, (int)k,
                      g->nodes[g->results[k].value].name);
  return FHJIT_OK;
}
