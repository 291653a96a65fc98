/* limits.c: the compile-time resource bound of the lowering (docs/limits.md):
 * the most values one kernel body evaluates, and its override (the
 * context's max_values option or FHJIT_MAX_VALUES), read at every lowering. */
#include <errno.h>
#include <stdlib.h>

#include "lower/lw_llvm.h"

int lw_max_values_parse(const char *s, int64_t *limit) {
  *limit = LW_MAX_VALUES_DEFAULT;
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s < '0' || *s > '9' || *end || errno || v < 1 || v > LW_MAX_VALUES_CEILING) return -1;
  *limit = v;
  return 0;
}

fhjit_status lw_max_values(fhjit_graph *g, int64_t *limit) {
  const char *s = ir_option(g->ctx, IR_OPT_MAX_VALUES);
  if (lw_max_values_parse(s, limit))
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "error: %s=\"%s\": expected a whole number from 1 to %lld",
                    ir_option_label(g->ctx, IR_OPT_MAX_VALUES), s,
                    (long long)LW_MAX_VALUES_CEILING);
  return FHJIT_OK;
}
