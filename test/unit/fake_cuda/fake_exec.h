/* fake_exec.h: for programs that run on a GPU (fhjit_gpu_test, fhjit_bench)
 * and also against the fake libcuda: installs an executor that runs each
 * recorded launch on the host, through fhjit_run_host for the graph the
 * program tagged it with (the lowering's argument order: params, pstride,
 * inputs, results), or through the program's own fallback for its other
 * kernels. On a real driver it installs nothing and tagging does nothing.
 * Header-only (static functions): public API of libfhjit only. */
#ifndef FHJIT_FAKE_EXEC_H
#define FHJIT_FAKE_EXEC_H
#include <stdio.h>

#include "fake_cuda.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"

static void (*fx_set_tag)(void *tag);
static void (*fx_fallback)(const fake_launch *launch);

static void fx_execute(const fake_launch *l) {
  fhjit_graph *g = l->tag;
  if (!g) {
    if (fx_fallback) fx_fallback(l);
    return;
  }
  int32_t nin = fhjit_num_inputs(g), nres = fhjit_num_results(g);
  if (l->nparams != 2 + nin + nres || nin > 32 || nres > 32) {
    printf("  fake execution: %s has %d parameters, graph @%s wants %d\n", l->name, l->nparams,
           fhjit_graph_name(g), 2 + nin + nres);
    return;
  }
  const void *ins[32];
  void *res[32];
  for (int32_t i = 0; i < nin; i++) ins[i] = (const void *)(uintptr_t)l->params[2 + i];
  for (int32_t r = 0; r < nres; r++) res[r] = (void *)(uintptr_t)l->params[2 + nin + r];
  if (fhjit_run_host(g, (const void *)(uintptr_t)l->params[0], (int64_t)l->params[1], ins, res,
                     1) != FHJIT_OK)
    printf("  fake execution of @%s: %s\n", fhjit_graph_name(g),
           fhjit_last_error(fhjit_graph_context(g)));
}

/* 1 when the driver is the fake one (the executor is then installed). */
static int fx_install(fhjit_context *ctx, void (*fallback)(const fake_launch *)) {
  void (*set_executor)(fake_cuda_executor) = NULL;
  *(void **)&set_executor = fhjit_cuda_driver_proc(ctx, "fake_cuda_set_executor");
  *(void **)&fx_set_tag = fhjit_cuda_driver_proc(ctx, "fake_cuda_set_tag");
  fhjit_clear_error(ctx);
  if (!set_executor || !fx_set_tag) return 0;
  fx_fallback = fallback;
  set_executor(fx_execute);
  return 1;
}

/* Names the graph (or NULL: the fallback's) that the next launches run. */
static void fx_tag(void *graph) {
  if (fx_set_tag) fx_set_tag(graph);
}
#endif
