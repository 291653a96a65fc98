/* anchor_gpu.c: the GPU program of a step plan (anchor_plan.c): its kernels
 * described (names, launch facts, arguments, scratch) for the runtime
 * (lw_anchor_describe), built into one module and compiled to PTX
 * (lw_anchor_compile_gpu), or printed as the plan text of fhjit_emit's
 * FHJIT_EMIT_PLAN (lw_anchor_plan_text). The host runs the same plan in
 * host.c. */
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
  /* chained: kernel 0 runs in the step before (ipchain) */
  for (int j = sp->chained; j < sp->plan.nkernels; j++) {
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
static fhjit_status describe_steps(fhjit_graph *g, an_plan *p, const nv_target *t,
                                   lw_program *out) {
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
  fhjit_status st = describe_steps(g, p, t, out);
  lw_anchor_plan_free(p);
  if (st) memset(out, 0, sizeof *out);
  return st;
}

/* ------------------------------------------------------ plan text */

/* Where a forward NTT's plan computes a coefficient automorphism of its
 * source (lw_ntt_plan_aut). */
static const char *aut_where(const lw_ntt_plan *p) {
  static const char *const where[2][3] = {
      {"both kernels' staged loads", "kernel 0's staged load and kernel 1's first pass",
       "kernel 0's staged load and kernel 1's registers"},
      {"kernel 0's registers and kernel 1's staged load", "kernel 0's registers and kernel 1's first pass",
       "both kernels' registers"}};
  return where[!!p->aut_reg][p->aut_reg1 ? 2 : p->k[1].staged_load ? 0 : 1];
}

static void put_buf(sp_buf *b, an_buf x) {
  static const char *const kinds[] = {"params", "pstride", "input", "result", "scratch", "own"};
  if (x.kind < 0 || x.kind > LW_ARG_OWN) sp_buf_printf(b, "none");
  else sp_buf_printf(b, "%s %d", kinds[x.kind], (int)x.index);
}

/* The ops a step's sub-graph computes: "mul, sub" (inputs left out). */
static void put_ops(sp_buf *b, const fhjit_graph *sub) {
  int k = 0;
  for (int32_t i = 0; sub && i < sub->nnodes; i++) {
    const ir_node *n = &sub->nodes[i];
    if (n->op == IR_INPUT) continue;
    sp_buf_printf(b, "%s%s", k++ ? " " : "",
                  n->op == IR_NTT ? "ntt" : ir_op_name(n->op));
  }
  if (!k) sp_buf_printf(b, "(copy)");
}

static void put_kernel(sp_buf *b, const lw_kernel *k) {
  sp_buf_printf(b, "    kernel %s grid %u block %u", k->name, k->grid[0], k->block[0]);
  if (k->shared_bytes) sp_buf_printf(b, " shared %u", k->shared_bytes);
  if (k->flags & LW_KERNEL_PDL) sp_buf_printf(b, " pdl");
  sp_buf_printf(b, "\n");
}

fhjit_status lw_anchor_plan_text(fhjit_graph *g, const char *arch, char **text) {
  *text = NULL;
  const nv_target *t = nv_find_target(&g->ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  an_plan *p = lw_anchor_build_plan(g);
  if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
  lw_program *out = malloc(sizeof *out);
  fhjit_status st = out ? describe_steps(g, p, t, out) : FHJIT_ERR_MEMORY;
  if (!out) ir_error(g->ctx, st, "error: out of memory");
  sp_buf b = {0};
  if (!st) {
    static const char *const kinds[] = {"ntt_fwd from coef-std", "ntt_fwd from coef-mont",
                                        "ntt_inv to coef-mont", "ntt_inv to coef-std"};
    int64_t total = 0;
    for (int i = 0; i < out->nscratch; i++) total += out->scratch_bytes[i];
    sp_buf_printf(&b, "plan @%s (%s): %d steps, %d kernels, %d scratch buffers (%lld bytes) in "
                  "an arena of %lld bytes\n",
                  g->name, t->arch, p->nsteps, (int)out->nkernels, (int)out->nscratch,
                  (long long)total, (long long)out->scratch_arena);
    int kk = 0;
    for (int s = 0; s < p->nsteps; s++) {
      const an_step *sp = &p->steps[s];
      int nk = lw_step_kernels(sp);
      if (sp->is_ntt) {
        sp_buf_printf(&b, "step %d: %s, %lld rows x N %lld (%lld polynomial rows), ", s,
                      kinds[sp->plan.kind], (long long)sp->plan.rows,
                      (long long)1 << sp->plan.log_n, (long long)sp->plan.batch_rows);
        put_buf(&b, sp->src);
        sp_buf_printf(&b, " -> ");
        if (sp->skip_store) sp_buf_printf(&b, "(not stored)");
        else put_buf(&b, sp->dst);
        sp_buf_printf(&b, "\n");
        if (sp->plan.lift)
          sp_buf_printf(&b, "  load: %slift (rescale) of the source's one row (chain position %d) "
                        "to each row\n", sp->pro_sub ? "the prologue's word plus the " : "",
                        (int)sp->plan.lift_col);
        if (sp->plan.aut_k)
          sp_buf_printf(&b, "  load: automorphism galois(%lld) of the source, in %s%s%s\n",
                        (long long)sp->plan.aut_k,
                        aut_where(&sp->plan),
                        sp->plan.aut_scalar && !sp->plan.aut_reg ? " (kernel 0's one word a thread)" : "",
                        sp->plan.aut_scalar1 && sp->plan.k[1].staged_load
                            ? " (kernel 1's one word a thread)" : "");
        if (sp->pro_sub) {
          sp_buf_printf(&b, "  prologue: ");
          put_ops(&b, sp->pro_sub);
          if (sp->plan.pro_rows)
            sp_buf_printf(&b, " (rows 0..%lld of each polynomial; the others loaded)",
                          (long long)(sp->plan.pro_rows - 1));
          if (sp->pro_store_rows > 0) {
            sp_buf_printf(&b, ", stored (rows %lld..%lld) -> ", (long long)sp->pro_store_first,
                          (long long)(sp->pro_store_first + sp->plan.rows - 1));
            put_buf(&b, sp->pro_in[sp->pro_sub->ninputs - 1]);
          }
          sp_buf_printf(&b, "\n");
        }
        for (int e = 0; e < sp->nepi; e++) {
          sp_buf_printf(&b, "  epilogue: ");
          /* ipfuse: the last kernel's grid runs over the output rows */
          if (e == 0 && sp->red.members > 0) {
            sp_buf_printf(&b, "inner product of %d digits in registers, %lld rows, %s",
                          sp->red.members, (long long)sp->red.out_rows,
                          sp->red.acc > 0 ? "accumulated" : "slots");
            if (sp->plan.reduce_smem > 0)
              sp_buf_printf(&b, " (%d in shared memory)", sp->plan.reduce_smem);
            sp_buf_printf(&b, ": ");
          }
          put_ops(&b, sp->epi_sub[e]);
          sp_buf_printf(&b, " -> ");
          put_buf(&b, sp->epi_out[e]);
          sp_buf_printf(&b, "\n");
        }
        if (sp->chain)
          sp_buf_printf(&b, "  chain: step %d's first kernel in the last kernel, on rows "
                        "%lld..%lld of each component of the sum\n", s + 1,
                        (long long)sp->chain_row0,
                        (long long)(sp->chain_row0 + p->steps[s + 1].plan.rows - 1));
        if (sp->chained)
          sp_buf_printf(&b, "  first kernel: in step %d's last kernel (chain)\n", s - 1);
        if (sp->plan.sig.on)
          sp_buf_printf(&b, "  sync: rows %lld..%lld of the sum first, counted for step %d\n",
                        (long long)sp->plan.sig.row0,
                        (long long)(sp->plan.sig.row0 + sp->plan.sig.rows - 1), s + 1);
        if (sp->plan.wait.on && p->steps[s - 1].is_bconv)
          sp_buf_printf(&b, "  sync: first kernel waits for its row's digit of step %d (%lld "
                        "blocks each), %s, not for the whole kernel\n", s - 1,
                        (long long)sp->plan.wait.need,
                        sp->plan.wait.rev ? "the last digit first" : "in digit order");
        else if (sp->plan.wait.on)
          sp_buf_printf(&b, "  sync: first kernel waits for its row of step %d's sum (%lld blocks "
                        "each), not for the whole kernel\n", s - 1, (long long)sp->plan.wait.need);
      } else if (sp->is_bconv) {
        const lw_bconv_plan *bp = &sp->bconv;
        sp_buf_printf(&b, "step %d: %s %d -> %d rows x N %lld, %lld polynomials, %s form, ", s,
                      bp->lift ? "lift (rescale)" : "bconv", (int)bp->l, (int)bp->m,
                      (long long)1 << bp->log_n, (long long)bp->polys,
                      bp->mont ? "mont" : "std");
        if (bp->mma) sp_buf_printf(&b, "tensor cores (%d tiles per warp), ", bp->mma);
        put_buf(&b, sp->src);
        sp_buf_printf(&b, " -> ");
        put_buf(&b, sp->dst);
        if (bp->digits > 1) {
          /* batched digits (mixsteps_ipfuse.c, batched_fwd): each one's source
           * row, table and destination row */
          sp_buf_printf(&b, ", %d digits:", bp->digits);
          for (int d = 0; d < bp->digits; d++) {
            const an_buf *tb = d ? &sp->in[d - 1] : &sp->tw;
            int64_t so = d ? bp->more[d - 1].src_offset : bp->src_offset;
            int64_t dof = d ? bp->more[d - 1].dst_offset : bp->dst_offset;
            sp_buf_printf(&b, "%s row %lld (", d ? ";" : "",
                          (long long)(bp->src_row_stride ? so / bp->src_row_stride : 0));
            put_buf(&b, *tb);
            const char *tname = tb->kind == LW_ARG_INPUT
                                    ? fhjit_value_name(g, fhjit_input_value(g, tb->index))
                                    : NULL;
            if (tname && *tname) sp_buf_printf(&b, " %%%s", tname); /* the digit's modup's table */
            sp_buf_printf(&b, ") -> row %lld", (long long)(dof >> bp->log_n));
          }
        } else if (bp->dst_offset) /* rows of a larger buffer */
          sp_buf_printf(&b, " from row %lld", (long long)(bp->dst_offset >> bp->log_n));
        sp_buf_printf(&b, "\n");
        if (bp->rev) sp_buf_printf(&b, "  block order: reversed (the rows written last are read first)\n");
        if (bp->sig.on)
          sp_buf_printf(&b, "  sync: its blocks counted per digit (%lld each) for step %d\n",
                        (long long)bp->sig.need, s + 1);
      } else {
        sp_buf_printf(&b, "step %d: pointwise ", s);
        put_ops(&b, sp->sub);
        sp_buf_printf(&b, " ->");
        for (int32_t r = 0; sp->sub && r < sp->sub->nresults; r++) {
          sp_buf_printf(&b, r ? ", " : " ");
          put_buf(&b, sp->out[r]);
          if (sp->out_off && sp->out_off[r]) /* one of several results in one buffer */
            sp_buf_printf(&b, " at word %lld", (long long)sp->out_off[r]);
        }
        sp_buf_printf(&b, "\n");
      }
      for (int j = 0; j < nk && kk < out->nkernels; j++) put_kernel(&b, &out->kernels[kk++]);
    }
    for (int i = 0; i < out->nscratch; i++)
      sp_buf_printf(&b, "scratch %d: %lld bytes at %lld, steps %d..%d\n", i,
                    (long long)out->scratch_bytes[i], (long long)out->scratch_offset[i],
                    (int)p->scratch_first[i], (int)p->scratch_last[i]);
    if (b.failed || !b.data) st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  }
  free(out);
  lw_anchor_plan_free(p);
  if (st) sp_buf_free(&b);
  else *text = b.data;
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
  fhjit_status st = describe_steps(g, p, t, &out);
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
  if (!st) st = nv_pipeline(&g->ctx->err, m, tm, what, "default<O3>", kind, text,
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
