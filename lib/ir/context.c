/* context.c: the context object: graph ownership and the error record that
 * every failing call leaves behind (libgccjit's style). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

fhjit_context *fhjit_context_create(void) {
  fhjit_context *ctx = calloc(1, sizeof *ctx);
  return ctx;
}

/* Graphs first (their compiled state may refer to the runtime's), then the
 * runtime's per-context state through the hook it registered: the IR knows
 * no layer above it. */
void fhjit_context_destroy(fhjit_context *ctx) {
  if (!ctx) return;
  while (ctx->graphs) fhjit_graph_destroy(ctx->graphs);
  if (ctx->release_runtime) ctx->release_runtime(ctx);
  for (int o = 0; o < IR_NUM_OPTS; o++) free(ctx->opts.value[o]);
  sp_err_clear(&ctx->err);
  free(ctx);
}

fhjit_status ir_verror(fhjit_context *ctx, fhjit_status status, const char *fmt, va_list ap) {
  return ctx ? sp_verror(&ctx->err, status, fmt, ap) : status;
}

fhjit_status ir_error(fhjit_context *ctx, fhjit_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(ctx, status, fmt, ap);
  va_end(ap);
  return status;
}

fhjit_status fhjit_last_status(const fhjit_context *ctx) {
  return ctx ? ctx->err.status : FHJIT_ERR_ARGUMENT;
}

const char *fhjit_last_error(const fhjit_context *ctx) {
  if (!ctx) return "fhjit: null context";
  return ctx->err.message ? ctx->err.message : "";
}

void fhjit_clear_error(fhjit_context *ctx) {
  if (ctx) sp_err_clear(&ctx->err);
}

const char *fhjit_status_name(fhjit_status status) {
  switch (status) {
  case FHJIT_OK: return "ok";
  case FHJIT_ERR_ARGUMENT: return "invalid argument";
  case FHJIT_ERR_PARSE: return "parse error";
  case FHJIT_ERR_TYPE: return "type error";
  case FHJIT_ERR_SHAPE: return "shape error";
  case FHJIT_ERR_MODULUS: return "bad modulus";
  case FHJIT_ERR_UNSUPPORTED: return "unsupported";
  case FHJIT_ERR_LLVM: return "LLVM error";
  case FHJIT_ERR_TARGET: return "bad target";
  case FHJIT_ERR_NO_DRIVER: return "no CUDA driver";
  case FHJIT_ERR_CUDA: return "CUDA error";
  case FHJIT_ERR_MEMORY: return "out of memory";
  case FHJIT_ERR_IO: return "I/O error";
  }
  return "unknown status";
}

const char *fhjit_version(void) { return FHJIT_VERSION_STRING; }
