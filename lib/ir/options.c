/* options.c: the tuning options of a context (ir.h, ir_options): the one
 * place that reads their environment variables. An option set on the
 * context wins; one not set is read from the environment at every use, so
 * a sweep that changes the variable between compiles (the bench scripts, the
 * tests) sees each value. The public setter, which validates, is in
 * lib/lower/options.c (the syntax belongs to the lowering). */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static const struct {
  const char *name, *env;
} opts[IR_NUM_OPTS] = {
    [IR_OPT_NTT_PLAN] = {"ntt_plan", "FHJIT_NTT_PLAN"},
    [IR_OPT_PW_PLAN] = {"pw_plan", "FHJIT_PW_PLAN"},
    [IR_OPT_MAX_VALUES] = {"max_values", "FHJIT_MAX_VALUES"},
    [IR_OPT_CACHE] = {"cache", "FHJIT_CACHE"},
    [IR_OPT_CACHE_DIR] = {"cache_dir", "FHJIT_CACHE_DIR"},
    [IR_OPT_BCONV_PLAN] = {"bconv_plan", "FHJIT_BCONV_PLAN"},
    [IR_OPT_NTT_SCHEDULE] = {"ntt_schedule", "FHJIT_NTT_SCHEDULE"},
    [IR_OPT_HOST_PIPELINE] = {"host_pipeline", "FHJIT_HOST_PIPELINE"},
};

const char *ir_option(const fhjit_context *ctx, ir_opt o) {
  SP_ASSERT((unsigned)o < IR_NUM_OPTS);
  if (ctx && ctx->opts.set[o]) return ctx->opts.value[o];
  return getenv(opts[o].env);
}

const char *ir_option_label(const fhjit_context *ctx, ir_opt o) {
  SP_ASSERT((unsigned)o < IR_NUM_OPTS);
  return ctx && ctx->opts.set[o] ? opts[o].name : opts[o].env;
}

int ir_option_by_name(const char *name) {
  for (int o = 0; name && o < IR_NUM_OPTS; o++)
    if (!strcmp(name, opts[o].name)) return o;
  return -1;
}

const char *ir_option_name(ir_opt o) { return (unsigned)o < IR_NUM_OPTS ? opts[o].name : NULL; }
const char *ir_option_env(ir_opt o) { return (unsigned)o < IR_NUM_OPTS ? opts[o].env : NULL; }

fhjit_status ir_option_set(fhjit_context *ctx, ir_opt o, const char *value) {
  SP_ASSERT(ctx && (unsigned)o < IR_NUM_OPTS);
  char *copy = NULL;
  if (value && !(copy = strdup(value)))
    return ir_error(ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  free(ctx->opts.value[o]);
  ctx->opts.value[o] = copy;
  ctx->opts.set[o] = value != NULL;
  return FHJIT_OK;
}

/* FNV-1a of each option's number, whether it is set, its length and its
 * bytes (the length first: no two lists of values give the same stream) */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * UINT64_C(0x100000001b3);
  return h;
}

uint64_t ir_options_fingerprint(const fhjit_context *ctx) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (int o = 0; o < IR_NUM_OPTS; o++) {
    if (o == IR_OPT_CACHE || o == IR_OPT_CACHE_DIR) continue; /* where code comes from, not what */
    const char *v = ir_option(ctx, (ir_opt)o);
    uint64_t head[3] = {(uint64_t)o, v != NULL, v ? strlen(v) : 0};
    h = fnv(h, head, sizeof head);
    if (v) h = fnv(h, v, head[2]);
  }
  return h;
}

fhjit_status ir_options_copy(fhjit_context *dst, const fhjit_context *src) {
  for (int o = 0; o < IR_NUM_OPTS; o++) {
    fhjit_status st =
        ir_option_set(dst, (ir_opt)o, src->opts.set[o] ? src->opts.value[o] : NULL);
    if (st) return st;
  }
  return FHJIT_OK;
}
