/* host.c: the host path (fhjit_run_host). The same lowering as the GPU
 * kernel, for the host triple, through the same IR pipeline (lw_gpu_pipeline:
 * what the host checks is the optimised IR the GPU gets), compiled by LLVM's
 * ORC LLJIT (lib/jit) with fast instruction selection: the host path exists for CI,
 * where compile time dominates (default<O2> and the default code generation
 * level take about 5x as long for a 40-op graph, for buffers of a few
 * thousand elements). The compiled function is cached on the graph (dropped
 * on unbind) and the index space is split across pthreads when it is large.
 *
 * A graph with NTT anchors or SPEC section 7 steps runs as its step plan
 * (anchor_plan.c), one step after the other: NTTs and conversions through
 * their host builds, each pointwise step's sub-graph through fhjit_run_host
 * itself. That run lives here, beside fhjit_run_host, because the two call
 * each other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"
#include "lower/lw_llvm.h"
#include "lower/ntt.h"
#include "lower/steps.h"

typedef void (*lw_host_fn)(const uint64_t *slots, int64_t begin, int64_t end);

typedef struct lw_host {
  jit_code *jit;
  lw_host_fn fn; /* NULL when the graph has no results */
  lw_plan plan;
} lw_host;

static void host_free(void *p) {
  lw_host *h = p;
  if (!h) return;
  jit_destroy(h->jit);
  free(h);
}

/* What build_host needs (jit_build_fn). */
typedef struct host_build {
  fhjit_graph *g;
  const lw_plan *plan;
} host_build;

static fhjit_status build_host(void *arg, LLVMContextRef c, LLVMModuleRef *m) {
  const host_build *b = arg;
  return lw_build(b->g, b->plan, LW_HOST, c, m);
}

/* Builds, optimises and JIT-compiles the host function of g. */
static fhjit_status host_compile(fhjit_graph *g, lw_host **out) {
  *out = NULL;
  lw_host *h = calloc(1, sizeof *h);
  if (!h) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  fhjit_status st = lw_plan_graph(g, &h->plan);
  if (!st) st = lw_apply_pw_plan(g, &h->plan, LW_HOST); /* V only: the same bodies as the GPU's */
  if (st) {
    free(h);
    return st;
  }
  if (g->nresults == 0) { /* nothing to compute */
    *out = h;
    return FHJIT_OK;
  }
  char who[128], what[128], sym[96];
  snprintf(who, sizeof who, "graph @%s", g->name);
  snprintf(what, sizeof what, "graph @%s (host)", g->name);
  snprintf(sym, sizeof sym, "%s_host_packed", h->plan.name);
  const char *syms[1] = {sym};
  host_build b = {g, &h->plan};
  void *addr;
  if ((st = jit_compile(&g->ctx->err, what, lw_gpu_pipeline, build_host, &b, who, syms, 1, &addr,
                        &h->jit))) {
    free(h);
    return st;
  }
  h->fn = (lw_host_fn)(uintptr_t)addr;
  *out = h;
  return FHJIT_OK;
}

/* Words input #i reaches from its base (its last element + 1). */
static int64_t input_words(const fhjit_graph *g, int32_t i) {
  const ir_node *n = &g->nodes[g->inputs[i]];
  const fhjit_type *t = &n->type;
  const fhjit_layout *l = &n->layout;
  int64_t last = l->offset + (t->rows - 1) * l->row_stride + (t->n - 1) * l->index_stride;
  if (t->comps > 0) last += (t->comps - 1) * l->comp_stride;
  if (t->kind == FHJIT_KIND_KEY) last += (t->digits - 1) * l->digit_stride;
  for (int a = 0; a < t->nbatch; a++) last += (t->batch[a] - 1) * l->batch_stride[a];
  return last + 1;
}

/* Does any result buffer overlap an input or another result? The kernel's
 * pointers are noalias (one thread may read what another writes), so such
 * runs go through temporaries, as the interpreter's do. */
static int results_overlap(const fhjit_graph *g, const void *const *inputs,
                           void *const *results) {
  size_t w = ir_word_size(g->radix);
  for (int32_t k = 0; k < g->nresults; k++) {
    uintptr_t r0 = (uintptr_t)results[k];
    uintptr_t r1 = r0 + (size_t)fhjit_type_elements(&g->results[k].type) * w;
    for (int32_t i = 0; i < g->ninputs; i++) {
      uintptr_t i0 = (uintptr_t)inputs[i], i1 = i0 + (size_t)input_words(g, i) * w;
      if (r0 < i1 && i0 < r1) return 1;
    }
    for (int32_t j = 0; j < k; j++) {
      uintptr_t j0 = (uintptr_t)results[j];
      uintptr_t j1 = j0 + (size_t)fhjit_type_elements(&g->results[j].type) * w;
      if (r0 < j1 && j0 < r1) return 1;
    }
  }
  return 0;
}

typedef struct host_job {
  lw_host_fn fn;
  const uint64_t *slots;
} host_job;

static void run_range(void *arg, int64_t begin, int64_t end, void *scratch) {
  (void)scratch;
  host_job *j = arg;
  j->fn(j->slots, begin, end);
}

/* ------------------------------------------------ graphs with anchors */

static void *buf_ptr(const an_buf *b, const void *const *inputs, void *const *results,
                     void *const *scratch) {
  if (b->kind < 0) return NULL;
  switch (b->kind) {
  case LW_ARG_INPUT: return (void *)inputs[b->index];
  case LW_ARG_RESULT: return results[b->index];
  case LW_ARG_SCRATCH: return scratch[b->index];
  default: return NULL;
  }
}

static void plan_free_hook(void *p) { lw_anchor_plan_free(p); }

/* g's compiled state if the options it was made under are still the
 * context's, else NULL (dropped): a plan, schedule or bound set between
 * two runs of one graph takes effect, as it does on the GPU path, whose
 * kernel cache keys them. */
static void *current_compiled(fhjit_graph *g, uint64_t opts) {
  if (g->compiled && g->compiled_opts != opts) {
    if (g->free_compiled) g->free_compiled(g->compiled);
    g->compiled = NULL;
    g->free_compiled = NULL;
  }
  return g->compiled;
}

/* fhjit_run_host for graphs with anchors (arguments checked by the caller):
 * their step plan (anchor_plan.c), cached on the graph, run step by step. */
static fhjit_status lw_anchor_run_host(fhjit_graph *g, const void *params, int64_t pstride,
                                       const void *const *inputs, void *const *results,
                                       int threads) {
  uint64_t opts = ir_options_fingerprint(g->ctx);
  if (!current_compiled(g, opts) || g->free_compiled != plan_free_hook) {
    an_plan *p = lw_anchor_build_plan(g);
    if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
    for (int s = 0; s < p->nsteps; s++) {
      if (p->steps[s].is_bconv) {
        fhjit_status st = lw_bconv_host_create(g->ctx, &p->steps[s].bconv, &p->bhost[s]);
        if (st) {
          lw_anchor_plan_free(p);
          return st;
        }
        continue;
      }
      if (!p->steps[s].is_ntt) continue;
      lw_ntt_fusion fu;
      lw_step_fusion(g, &p->steps[s], &fu);
      fhjit_status st = lw_ntt_host_create(g->ctx, &p->steps[s].plan, &fu, &p->host[s]);
      if (st && (fu.sub || fu.nepi) && fhjit_last_status(p->sctx))
        st = ir_error(g->ctx, st, "error: graph @%s: NTT fused work: %s", g->name,
                      fhjit_last_error(p->sctx));
      if (st) {
        lw_anchor_plan_free(p);
        return st;
      }
    }
    if (g->compiled && g->free_compiled) g->free_compiled(g->compiled);
    g->compiled = p;
    g->compiled_opts = opts;
    g->free_compiled = plan_free_hook;
  }
  an_plan *p = g->compiled;
  int64_t ws = (int64_t)ir_word_size(g->radix);
  void *scratch[LW_MAX_KERNELS] = {0};
  fhjit_status st = FHJIT_OK;
  /* one arena, the buffers at their offsets (scratch.c) */
  char *arena = p->scratch_arena ? malloc((size_t)p->scratch_arena) : NULL;
  if (p->scratch_arena && !arena)
    st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: graph @%s: out of memory for scratch",
                  g->name);
  for (int s = 0; s < p->nscratch && !st; s++) scratch[s] = arena + p->scratch_offset[s];
  for (int s = 0; s < p->nsteps && !st; s++) {
    an_step *sp = &p->steps[s];
    lw_scratch_poison(p, s, scratch);
    if (sp->is_bconv) {
      const void *more[LW_BCONV_MAX_DIGITS];
      for (int d = 1; d < sp->bconv.digits; d++)
        more[d - 1] = buf_ptr(&sp->in[d - 1], inputs, results, scratch);
      st = lw_bconv_host_run(g->ctx, p->bhost[s], params, pstride,
                             buf_ptr(&sp->tw, inputs, results, scratch), more,
                             buf_ptr(&sp->src, inputs, results, scratch),
                             buf_ptr(&sp->dst, inputs, results, scratch), threads);
      continue;
    }
    if (sp->is_ntt) {
      const void *extra[LW_MAX_ARGS];
      int32_t nextra = sp->pro_sub ? sp->pro_sub->ninputs : 0;
      for (int32_t i = 0; i < nextra; i++) extra[i] = buf_ptr(&sp->pro_in[i], inputs, results, scratch);
      for (int t = 0; t < sp->nepi; t++) {
        for (int32_t i = 0; i < sp->epi_sub[t]->ninputs && nextra < LW_MAX_ARGS; i++)
          extra[nextra++] = buf_ptr(&sp->epi_in[t][i], inputs, results, scratch);
        if (nextra < LW_MAX_ARGS) extra[nextra++] = buf_ptr(&sp->epi_out[t], inputs, results, scratch);
      }
      if (sp->chain && nextra + LW_NTT_CHAIN_ARGS <= LW_MAX_ARGS) { /* the next step's kernel 0 */
        extra[nextra++] = buf_ptr(&sp[1].tw, inputs, results, scratch);
        extra[nextra++] = buf_ptr(&sp[1].src, inputs, results, scratch);
        extra[nextra++] = buf_ptr(&sp[1].dst, inputs, results, scratch);
      }
      st = lw_ntt_host_run(g->ctx, p->host[s], params, pstride,
                           buf_ptr(&sp->tw, inputs, results, scratch),
                           lw_step_reads_source(sp) ? buf_ptr(&sp->src, inputs, results, scratch)
                                                    : NULL,
                           (char *)buf_ptr(&sp->dst, inputs, results, scratch) + sp->dst_off * ws,
                           extra, threads);
      continue;
    }
    const void *ins[LW_MAX_ARGS];
    void *outs[LW_MAX_ARGS];
    /* the GPU's kernel takes both as arguments (lw_num_args); refused here
     * before the arrays are filled, as the GPU path refuses it */
    if ((int64_t)sp->sub->ninputs + sp->sub->nresults > LW_MAX_ARGS - 2) {
      st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s: pointwise step: %d inputs and %d results, a kernel takes "
                    "at most %d; split the graph",
                    g->name, (int)sp->sub->ninputs, (int)sp->sub->nresults, LW_MAX_ARGS - 2);
      continue;
    }
    for (int32_t i = 0; i < sp->sub->ninputs; i++) ins[i] = buf_ptr(&sp->in[i], inputs, results, scratch);
    for (int32_t r = 0; r < sp->sub->nresults; r++)
      outs[r] = (char *)buf_ptr(&sp->out[r], inputs, results, scratch) +
                (sp->dst_off + (sp->out_off ? sp->out_off[r] : 0)) * ws;
    if (fhjit_run_host(sp->sub, params, pstride, ins, outs, threads))
      st = ir_error(g->ctx, fhjit_last_status(p->sctx), "error: graph @%s: pointwise step: %s",
                    g->name, fhjit_last_error(p->sctx));
  }
  free(arena);
  return st;
}

/* ----------------------------------------------------------------- entry */

fhjit_status fhjit_run_host(fhjit_graph *g, const void *params, int64_t pstride,
                            const void *const *inputs, void *const *results, int threads) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  const char *fn = "fhjit_run_host";
  fhjit_status st0 = ir_check_run_args(g, fn, params, inputs, results);
  if (st0) return st0;
  if (threads < 0)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: negative thread count %d", fn,
                    g->name, threads);
  int64_t limbs = ir_param_columns(g); /* stated bases read columns by chain position */
  if ((st0 = ir_check_pstride(g, fn, pstride, limbs))) return st0;
  if (lw_graph_has_anchor(g)) /* NTTs: a chain of kernels (anchor_plan.c) */
    return lw_anchor_run_host(g, params, pstride, inputs, results, threads);
  uint64_t opts = ir_options_fingerprint(g->ctx);
  if (!current_compiled(g, opts) || g->free_compiled != host_free) {
    lw_host *h;
    fhjit_status st = host_compile(g, &h);
    if (st) return st;
    if (g->compiled && g->free_compiled) g->free_compiled(g->compiled);
    g->compiled = h;
    g->free_compiled = host_free;
    g->compiled_opts = opts;
  }
  lw_host *h = g->compiled;
  if (!h->fn) return FHJIT_OK;

  int32_t nargs = lw_num_args(g);
  uint64_t *slots = malloc(sizeof *slots * (size_t)nargs);
  void **temps = NULL;
  if (slots && results_overlap(g, inputs, results)) {
    temps = calloc((size_t)g->nresults, sizeof *temps);
    for (int32_t k = 0; temps && k < g->nresults; k++) {
      int64_t e = fhjit_type_elements(&g->results[k].type);
      if (!(temps[k] = malloc((size_t)e * ir_word_size(g->radix)))) {
        for (int32_t j = 0; j < k; j++) free(temps[j]);
        free(temps);
        temps = NULL;
        break;
      }
    }
    if (!temps) {
      free(slots);
      slots = NULL;
    }
  }
  if (!slots) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
  slots[0] = (uint64_t)(uintptr_t)params;
  slots[1] = (uint64_t)pstride;
  for (int32_t i = 0; i < g->ninputs; i++) slots[2 + i] = (uint64_t)(uintptr_t)inputs[i];
  for (int32_t k = 0; k < g->nresults; k++)
    slots[2 + g->ninputs + k] = (uint64_t)(uintptr_t)(temps ? temps[k] : results[k]);

  int64_t want = threads;
  if (want == 0) {
    want = h->plan.work / 65536;
    if (want > jit_cores()) want = jit_cores();
  }
  host_job job = {h->fn, slots};
  jit_split(&g->ctx->err, run_range, &job, h->plan.groups, want, 0, fn); /* no scratch: no failure */
  if (temps) {
    for (int32_t k = 0; k < g->nresults; k++) {
      memcpy(results[k], temps[k],
             (size_t)fhjit_type_elements(&g->results[k].type) * ir_word_size(g->radix));
      free(temps[k]);
    }
    free(temps);
  }
  free(slots);
  return FHJIT_OK;
}
