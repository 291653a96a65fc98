/* emit.c: the GPU path: bound graph -> LLVM IR -> optimisation (a lean
 * pipeline equivalent to default<O3> here, see lw_gpu_pipeline) -> PTX
 * through the NVPTX back end, for fhjit_emit (text for tools) and
 * lw_compile_ptx (the program the runtime launches). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lw_llvm.h"
#include "lower/ntt.h"
#include "nvptx/nvptx.h"

const char *const *fhjit_targets(void) { return nv_target_names(); }

/* The IR pipeline of the fused kernel. The module is one straight-line body
 * (plus the bounds check and conditional stores) calling always-inline
 * helpers: inlining, CSE, instcombine and dead-code removal are all that
 * default<O3> does to it. On every example and codegen test graph both give
 * the same PTX to within one instruction, while O3 costs about 7x as much
 * time (its vectorizers, loop passes and repeated instcombines find nothing
 * to do): the compile-time budget goes to the NVPTX back end instead.
 * test_lower checks the equivalence on its graphs. */
const char *const lw_gpu_pipeline =
    "always-inline,function(early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,adce)";

/* The pipeline of the NTT, conversion and step-plan GPU modules: their
 * loops and shared-memory phases are where O3's loop passes earn their time. */
const char *const lw_kernel_pipeline = "default<O3>";

/* Compiles g for arch up to `kind` and returns that stage's text (malloc'd). */
static fhjit_status compile_gpu(fhjit_graph *g, const char *arch, fhjit_emit_kind kind,
                                const char *pipeline, lw_plan *plan, char **text) {
  *text = NULL;
  const nv_target *t = nv_find_target(&g->ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  fhjit_status st = lw_plan_graph(g, plan);
  if (!st) st = lw_apply_pw_plan(g, plan, LW_GPU);
  if (st) return st;
  nv_init();
  /* Default (O2) code generation: on the examples, 20 random 40-op graphs
   * and the realistic ones of bench/compile_latency the PTX is identical to
   * Aggressive's, and the back end takes about 6% less time. */
  LLVMTargetMachineRef tm = nv_gpu_machine_level(&g->ctx->err, t, LLVMCodeGenLevelDefault);
  if (!tm) return FHJIT_ERR_LLVM;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = NULL;
  if ((st = lw_build(g, plan, LW_GPU, c, &m))) goto done;
  nv_prepare_module(m, tm);
  char what[160];
  snprintf(what, sizeof what, "graph @%s (%s)", g->name, t->arch);
  st = nv_pipeline(&g->ctx->err, m, tm, what, pipeline, kind, text, NULL);
done:
  if (m) LLVMDisposeModule(m);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  return st;
}

/* FHJIT_EMIT_PLAN: the program's steps and kernels, no code generated. */
static fhjit_status plan_text(fhjit_graph *g, const char *arch, char **text) {
  if (!g->bound)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_emit: graph @%s is not bound (call "
                    "fhjit_bind)", g->name);
  if (lw_graph_has_anchor(g)) return lw_anchor_plan_text(g, arch, text);
  lw_program out;
  fhjit_status st = lw_describe_program(g, arch, &out);
  if (st) return st;
  sp_buf b = {0};
  sp_buf_printf(&b, "plan @%s (%s): 1 step, %d kernel%s (fused pointwise), 0 scratch buffers "
                    "(0 bytes)\n",
                g->name, arch ? arch : "sm_90", (int)out.nkernels, out.nkernels == 1 ? "" : "s");
  for (int32_t k = 0; k < out.nkernels; k++)
    sp_buf_printf(&b, "    kernel %s grid %u block %u\n", out.kernels[k].name,
                  out.kernels[k].grid[0], out.kernels[k].block[0]);
  if (b.failed || !b.data) {
    sp_buf_free(&b);
    return ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  }
  *text = b.data;
  return FHJIT_OK;
}

const char *fhjit_emit(fhjit_graph *g, fhjit_emit_kind kind, const char *arch) {
  if (!g) return NULL;
  if (kind != FHJIT_EMIT_LLVM && kind != FHJIT_EMIT_LLVM_OPT && kind != FHJIT_EMIT_PTX &&
      kind != FHJIT_EMIT_PLAN) {
    ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_emit: unknown emit kind %d", (int)kind);
    return NULL;
  }
  lw_plan plan;
  char *text;
  if (kind == FHJIT_EMIT_PLAN) {
    if (plan_text(g, arch, &text)) return NULL;
  } else if (g->bound && lw_graph_has_anchor(g)) { /* NTTs: a chain of kernels (anchor.c) */
    if (lw_anchor_compile_gpu(g, arch, kind, &text, NULL)) return NULL;
  } else if (compile_gpu(g, arch, kind, lw_gpu_pipeline, &plan, &text)) {
    return NULL;
  }
  free(g->emitted);
  g->emitted = text;
  return text;
}

/* The program of a graph compiled as one fused kernel with `plan`. */
static void describe_fused(const fhjit_graph *g, const lw_plan *plan, lw_program *out) {
  memset(out, 0, sizeof *out);
  if (g->nresults == 0) return; /* only identity views: nothing to launch */
  lw_kernel *k = &out->kernels[0];
  out->nkernels = 1;
  snprintf(k->name, sizeof k->name, "%s", plan->name);
  k->grid[0] = (uint32_t)lw_plan_grid(plan);
  k->grid[1] = k->grid[2] = 1;
  k->block[0] = (uint32_t)plan->block;
  k->block[1] = k->block[2] = 1;
  k->nargs = lw_num_args(g);
  k->args[0] = (lw_arg){LW_ARG_PARAMS, 0};
  k->args[1] = (lw_arg){LW_ARG_PSTRIDE, 0};
  for (int32_t j = 0; j < g->ninputs; j++) k->args[2 + j] = (lw_arg){LW_ARG_INPUT, j};
  for (int32_t r = 0; r < g->nresults; r++)
    k->args[2 + g->ninputs + r] = (lw_arg){LW_ARG_RESULT, r};
}

fhjit_status lw_compile_ptx(fhjit_graph *g, const char *arch, lw_program *out) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!out) return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "lw_compile_ptx: null program");
  memset(out, 0, sizeof *out);
  if (g->bound && lw_graph_has_anchor(g)) /* NTTs: a chain of kernels (anchor.c) */
    return lw_anchor_compile_gpu(g, arch, FHJIT_EMIT_PTX, NULL, out);
  lw_plan plan;
  char *ptx;
  fhjit_status st = compile_gpu(g, arch, FHJIT_EMIT_PTX, lw_gpu_pipeline, &plan, &ptx);
  if (st) return st;
  describe_fused(g, &plan, out);
  out->ptx = ptx;
  return FHJIT_OK;
}

fhjit_status lw_describe_program(fhjit_graph *g, const char *arch, lw_program *out) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!out) return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "lw_describe_program: null program");
  memset(out, 0, sizeof *out);
  if (g->bound && lw_graph_has_anchor(g)) return lw_anchor_describe(g, arch, out);
  if (!nv_find_target(&g->ctx->err, arch)) return FHJIT_ERR_TARGET;
  lw_plan plan;
  fhjit_status st = lw_plan_graph(g, &plan);
  if (!st) st = lw_apply_pw_plan(g, &plan, LW_GPU);
  if (!st) describe_fused(g, &plan, out);
  return st;
}

char *lw_emit_with_pipeline(fhjit_graph *g, fhjit_emit_kind kind, const char *arch,
                            const char *pipeline) {
  lw_plan plan;
  char *text;
  if (!g || compile_gpu(g, arch, kind, pipeline, &plan, &text)) return NULL;
  return text;
}

void lw_program_free(lw_program *p) {
  if (!p) return;
  free(p->ptx);
  memset(p, 0, sizeof *p);
}
