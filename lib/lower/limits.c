/* limits.c: the compile-time resource bound of the lowering (docs/limits.md):
 * the most values one kernel body evaluates, and its override
 * FHJIT_MAX_VALUES, read at every lowering. */
#include <errno.h>
#include <stdlib.h>

#include "lower/lw_llvm.h"

fhjit_status lw_max_values(fhjit_graph *g, int64_t *limit) {
  *limit = LW_MAX_VALUES_DEFAULT;
  const char *s = getenv("FHJIT_MAX_VALUES");
  if (!s || !*s) return FHJIT_OK;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s < '0' || *s > '9' || *end || errno || v < 1 || v > LW_MAX_VALUES_CEILING)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "error: FHJIT_MAX_VALUES=\"%s\": expected a whole number from 1 to %lld",
                    s, (long long)LW_MAX_VALUES_CEILING);
  *limit = v;
  return FHJIT_OK;
}
