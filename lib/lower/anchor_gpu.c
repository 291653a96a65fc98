/* anchor_gpu.c: the GPU program of a step plan (anchor_plan.c): its kernels
 * described (names, launch facts, arguments, scratch) for the runtime
 * (lw_anchor_describe), built into one module and compiled to PTX
 * (lw_anchor_compile_gpu); plan_text.c prints them as fhjit_emit's
 * FHJIT_EMIT_PLAN. The host runs the same plan in host.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Linker.h>

#include "lower/steps.h"
#include "nvptx/nvptx.h"

/* --------------------------------------------------------------- GPU */

static void step_args(const an_plan *p, int s, const lw_ntt_plan *np, int j, lw_kernel *k) {
  const an_step *st = &p->steps[s];
  k->nargs = 0;
  lw_kernel_arg(k, LW_ARG_PARAMS, 0);
  lw_kernel_arg(k, LW_ARG_PSTRIDE, 0);
  if (st->is_bconv) { /* (params, pstride, table, src, dst, the other digits' tables in[]) */
    lw_kernel_arg(k, (lw_arg_kind)st->tw.kind, st->tw.index);
    lw_kernel_arg(k, (lw_arg_kind)st->src.kind, st->src.index);
    lw_kernel_arg(k, (lw_arg_kind)st->dst.kind, st->dst.index);
    for (int d = 1; d < st->bconv.digits; d++)
      lw_kernel_arg(k, (lw_arg_kind)st->in[d - 1].kind, st->in[d - 1].index);
    if (st->bconv.sig.on) lw_kernel_arg(k, LW_ARG_OWN, 0); /* convsync */
    return;
  }
  if (st->is_ntt) {
    lw_kernel_arg(k, (lw_arg_kind)st->tw.kind, st->tw.index);
    /* an unread source argument: dst stands in */
    const an_buf *src = j == 0 && lw_step_reads_source(st) ? &st->src : &st->dst;
    lw_kernel_arg(k, (lw_arg_kind)src->kind, src->index);
    lw_kernel_arg(k, (lw_arg_kind)st->dst.kind, st->dst.index);
    if (j == 0 && st->pro_sub)
      for (int32_t i = 0; i < st->pro_sub->ninputs; i++)
        lw_kernel_arg(k, (lw_arg_kind)st->pro_in[i].kind, st->pro_in[i].index);
    if (j == np->nkernels - 1)
      for (int t = 0; t < st->nepi; t++) {
        for (int32_t i = 0; i < st->epi_sub[t]->ninputs; i++)
          lw_kernel_arg(k, (lw_arg_kind)st->epi_in[t][i].kind, st->epi_in[t][i].index);
        lw_kernel_arg(k, (lw_arg_kind)st->epi_out[t].kind, st->epi_out[t].index);
      }
    if (j == np->nkernels - 1 && st->chain) { /* the next step's kernel 0 (ipchain) */
      const an_step *nx = &p->steps[s + 1];
      const an_buf *cb[LW_NTT_CHAIN_ARGS] = {&nx->tw, &nx->src, &nx->dst};
      for (int i = 0; i < LW_NTT_CHAIN_ARGS; i++)
        lw_kernel_arg(k, (lw_arg_kind)cb[i]->kind, cb[i]->index);
    }
    return;
  }
  for (int32_t i = 0; i < st->sub->ninputs; i++)
    lw_kernel_arg(k, (lw_arg_kind)st->in[i].kind, st->in[i].index);
  for (int32_t r = 0; r < st->sub->nresults; r++)
    lw_kernel_arg(k, (lw_arg_kind)st->out[r].kind, st->out[r].index);
}

/* The prefix of NTT step s's kernel names: "fhjit_ntt<s>_n<log N>", the
 * kernels "<prefix>_k<j>" (ntt_emit.c); unique by the step index. */
static void ntt_prefix(char out[40], int s, const lw_ntt_plan *np) {
  snprintf(out, 40, "fhjit_ntt%d_n%d", s, np->log_n);
}

/* A kernel whose fused work reads more buffers than a launch passes (the
 * graph's inputs an epilogue or prologue reads, beside the transform's own
 * arguments): refused before anything reads its arguments. */
static fhjit_status too_many_args(fhjit_graph *g, const lw_kernel *k) {
  return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                  "error: graph @%s: kernel %s would take %d arguments, at most %d: the work "
                  "fused into it reads too many inputs; split the graph or compute some of "
                  "them in a graph of their own",
                  g->name, k->name, (int)k->nargs, LW_MAX_ARGS);
}

static fhjit_status too_many_kernels(fhjit_graph *g) {
  return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED, "error: graph @%s needs more than %d kernels",
                  g->name, LW_MAX_KERNELS);
}

/* Appends the kernels of NTT step s (its plan made for the target). */
static void describe_ntt(const an_plan *p, int s, lw_program *out) {
  const an_step *sp = &p->steps[s];
  char prefix[40];
  ntt_prefix(prefix, s, &sp->plan);
  /* chained: kernel 0 runs in the step before (ipchain) or in the member
   * steps before (ipntt); a head: kernel 1 in a later step (ipntt) */
  for (int j = lw_step_first_kernel(sp); j < lw_step_end_kernel(sp); j++) {
    lw_kernel *k = &out->kernels[out->nkernels++];
    snprintf(k->name, sizeof k->name, "%s_k%d", prefix, j);
    k->grid[0] = (uint32_t)sp->plan.k[j].blocks;
    k->grid[1] = k->grid[2] = 1;
    k->block[0] = sp->plan.k[j].threads;
    k->block[1] = k->block[2] = 1;
    step_args(p, s, &sp->plan, j, k);
    lw_ntt_launch_facts(&sp->plan, j, k);
  }
}

/* The name of bconv step s's kernel. */
static void bconv_name(char out[LW_NAME_MAX], int s) { snprintf(out, LW_NAME_MAX, "fhjit_bconv%d", s); }

/* Whether conversion step s runs its blocks in reverse order (bconv.c, lw_bconv_plan.rev):
 * bcrev 2 always; 1 (the default) where a step follows and the output is
 * at least LW_BCONV_REV_MIN_BYTES. Blocks start in launch order, so the
 * conversion writes its last rows last, and the step after it (a forward
 * NTT over every digit, one row after another) reads its first rows
 * first: of an output larger than the L2 those were evicted already.
 * Reversed, the next step starts on the rows written last. Measured on
 * the H200 (ckks_bench, N = 2^16, docs/ckks.md "Block order of the
 * conversion"). */
#define LW_BCONV_REV_MIN_BYTES (INT64_C(32) << 20)
static int bconv_reversed(const an_plan *p, int s) {
  const lw_bconv_plan *bp = &p->steps[s].bconv;
  int mode = p->bc_rev < 0 ? 1 : p->bc_rev;
  if (mode == 2) return 1;
  if (mode == 0 || s + 1 >= p->nsteps) return 0;
  int64_t ws = bp->radix == FHJIT_R32 ? 4 : 8;
  int64_t bytes = (int64_t)(bp->digits > 1 ? bp->digits : 1) * bp->polys * bp->m * ws << bp->log_n;
  return bytes >= LW_BCONV_REV_MIN_BYTES;
}

/* Appends the kernel of bconv step s. */
static void describe_bconv(const an_plan *p, int s, lw_program *out) {
  const lw_bconv_plan *bp = &p->steps[s].bconv;
  lw_kernel *k = &out->kernels[out->nkernels++];
  bconv_name(k->name, s);
  uint32_t static_bytes; /* declared by the kernel: no dynamic shared memory */
  lw_bconv_launch(bp, &k->grid[0], &k->block[0], &static_bytes);
  k->shared_bytes = 0;
  k->grid[1] = k->grid[2] = 1;
  k->block[1] = k->block[2] = 1;
  k->flags = bp->pdl_entry ? LW_KERNEL_PDL : 0;
  step_args(p, s, NULL, 0, k);
}

/* Appends the kernel of pointwise step s. */
static fhjit_status describe_pointwise(fhjit_graph *g, const an_plan *p, int s, lw_program *out) {
  lw_plan pl;
  fhjit_status st = lw_plan_graph(p->steps[s].sub, &pl);
  if (st)
    return ir_error(g->ctx, st, "error: graph @%s: pointwise step: %s", g->name,
                    fhjit_last_error(p->sctx));
  lw_kernel *k = &out->kernels[out->nkernels++];
  snprintf(k->name, sizeof k->name, "%s", pl.name);
  k->grid[0] = (uint32_t)((pl.groups + LW_BLOCK - 1) / LW_BLOCK);
  k->grid[1] = k->grid[2] = 1;
  k->block[0] = LW_BLOCK;
  k->block[1] = k->block[2] = 1;
  k->flags = p->steps[s].pdl ? LW_KERNEL_PDL : 0;
  step_args(p, s, NULL, 0, k);
  return FHJIT_OK;
}

/* The program of plan p for target t without its code: kernels (names,
 * launch facts, arguments) in launch order and scratch buffers. NTT plans
 * are adjusted to the target (lw_ntt_for_target) on the way, and so are
 * the other steps: with programmatic dependent launch, p->pdl_mix makes
 * the conversion kernels (1; but for a program's first kernel) and the
 * pointwise ones too (2) dependent launches as the NTTs' kernels are, so
 * that they launch while the kernel before them drains (why it is safe:
 * scratch.c; what it gains: anchor_plan.c, mix_default). */
fhjit_status lw_anchor_describe_plan(fhjit_graph *g, an_plan *p, const nv_target *t, lw_program *out) {
  memset(out, 0, sizeof *out);
  int mix = nv_target_has_pdl(t) ? p->pdl_mix : 0;
  for (int s = 0; s < p->nsteps; s++) {
    an_step *sp = &p->steps[s];
    sp->pdl = !sp->is_ntt && !sp->is_bconv && mix >= 2;
    /* not the program's first kernel: a dependent launch overlaps the
     * kernel before it in the program, whose early trigger this plan
     * knows; first, it would only let the stream's next kernels in early
     * (a lone r32 bconv launched back to back: 11.6 us against 10.0 plain,
     * H200, 04d6635, bench/RESULTS.md) */
    sp->bconv.pdl_entry = sp->is_bconv && mix >= 1 && s > 0;
    sp->bconv.rev = sp->is_bconv && bconv_reversed(p, s);
    /* convsync: the forward NTT runs the digits in the order they finish */
    if (sp->is_bconv && sp->bconv.sig.on) p->steps[s + 1].plan.wait.rev = sp->bconv.rev;
    if (out->nkernels + lw_step_kernels(sp) > LW_MAX_KERNELS)
      return too_many_kernels(g);
    if (sp->is_bconv) {
      lw_bconv_for_target(&sp->bconv, t);
      describe_bconv(p, s, out);
      continue;
    }
    if (!sp->is_ntt) {
      fhjit_status st = describe_pointwise(g, p, s, out);
      if (st) return st;
      continue;
    }
    lw_ntt_for_target(&sp->plan, t);
    describe_ntt(p, s, out);
  }
  for (int32_t i = 0; i < out->nkernels; i++)
    if (out->kernels[i].nargs > LW_MAX_ARGS) return too_many_args(g, &out->kernels[i]);
  out->nscratch = p->nscratch;
  memcpy(out->scratch_bytes, p->scratch_bytes, sizeof out->scratch_bytes);
  lw_scratch_describe(p, out); /* scratch.c: offsets, arena, and a check of the arguments */
  return FHJIT_OK;
}

/* Every kernel the program describes is a distinct function of module m: a
 * second definition under one name would have been renamed by LLVM, and
 * the launch would find the first. An internal error otherwise. */
static fhjit_status check_kernel_names(fhjit_graph *g, LLVMModuleRef m, const lw_program *out) {
  for (int32_t i = 0; i < out->nkernels; i++) {
    const char *name = out->kernels[i].name;
    for (int32_t j = 0; j < i; j++)
      if (!strcmp(name, out->kernels[j].name)) return lw_duplicate_symbol(g->ctx, name);
    if (!LLVMGetNamedFunction(m, name))
      return ir_error(g->ctx, FHJIT_ERR_LLVM, "internal: graph @%s: no kernel %s in the module",
                      g->name, name);
  }
  return FHJIT_OK;
}

/* Adds step s's code to module m. */
static fhjit_status build_step(fhjit_graph *g, an_plan *p, int s, LLVMContextRef c,
                               LLVMModuleRef m, LLVMTargetMachineRef tm) {
  an_step *sp = &p->steps[s];
  if (sp->is_bconv) {
    char name[LW_NAME_MAX];
    bconv_name(name, s);
    return lw_bconv_build(g->ctx, &sp->bconv, LW_GPU, name, c, m);
  }
  if (sp->is_ntt) {
    char prefix[40];
    ntt_prefix(prefix, s, &sp->plan);
    lw_ntt_fusion fu;
    lw_step_fusion(g, sp, &fu);
    fhjit_status st = lw_ntt_build(g->ctx, &sp->plan, &fu, LW_GPU, prefix, c, m);
    if (st && (sp->pro_sub || sp->nepi) && fhjit_last_status(p->sctx))
      st = ir_error(g->ctx, st, "error: graph @%s: NTT fused work: %s", g->name,
                    fhjit_last_error(p->sctx));
    return st;
  }
  lw_plan pl;
  LLVMModuleRef sm = NULL;
  fhjit_status st;
  if (!(st = lw_plan_graph(sp->sub, &pl)))
    pl.result_offset = sp->dst_off, pl.result_offsets = sp->out_off, pl.pdl_entry = sp->pdl;
  if (st || (st = lw_build(sp->sub, &pl, LW_GPU, c, &sm)))
    return ir_error(g->ctx, st, "error: graph @%s: pointwise step: %s", g->name,
                    fhjit_last_error(p->sctx));
  nv_prepare_module(sm, tm);
  if (lw_symbol_taken(m, pl.name)) {
    LLVMDisposeModule(sm);
    return lw_duplicate_symbol(g->ctx, pl.name);
  }
  if (LLVMLinkModules2(m, sm))
    return ir_error(g->ctx, FHJIT_ERR_LLVM, "error: graph @%s: linking a pointwise step failed",
                    g->name);
  return FHJIT_OK;
}

fhjit_status lw_anchor_describe(fhjit_graph *g, const char *arch, lw_program *out) {
  memset(out, 0, sizeof *out);
  const nv_target *t = nv_find_target(&g->ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  an_plan *p = lw_anchor_build_plan(g);
  if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
  fhjit_status st = lw_anchor_describe_plan(g, p, t, out);
  lw_anchor_plan_free(p);
  if (st) memset(out, 0, sizeof *out);
  return st;
}

fhjit_status lw_anchor_compile_gpu(fhjit_graph *g, const char *arch, fhjit_emit_kind kind,
                                   char **text, lw_program *prog) {
  if (text) *text = NULL;
  if (prog) memset(prog, 0, sizeof *prog);
  const nv_target *t = nv_find_target(&g->ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  an_plan *p = lw_anchor_build_plan(g);
  if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
  lw_program out;
  fhjit_status st = lw_anchor_describe_plan(g, p, t, &out);
  LLVMTargetMachineRef tm = st ? NULL : nv_gpu_machine(&g->ctx->err, t);
  if (!tm) {
    lw_anchor_plan_free(p);
    return st ? st : FHJIT_ERR_LLVM;
  }
  LLVMContextRef c = LLVMContextCreate();
  char mname[LW_NAME_MAX]; /* the module's name only: no symbol */
  lw_graph_symbol(g->name, mname);
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext(mname, c);
  nv_prepare_module(m, tm);
  for (int s = 0; s < p->nsteps && !st; s++) st = build_step(g, p, s, c, m, tm);
  if (!st) st = check_kernel_names(g, m, &out);
  char what[128];
  snprintf(what, sizeof what, "graph @%s (%s)", g->name, t->arch);
  char *ptx = NULL;
  if (!st) st = nv_pipeline(&g->ctx->err, m, tm, what, lw_kernel_pipeline, kind, text,
                            prog ? &ptx : NULL);
  if (!st && prog) {
    out.ptx = ptx;
    *prog = out;
  }
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  lw_anchor_plan_free(p);
  if (st && text) {
    free(*text);
    *text = NULL;
  }
  return st;
}
