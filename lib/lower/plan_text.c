/* plan_text.c: fhjit_emit's FHJIT_EMIT_PLAN for graphs with anchors
 * (lw_anchor_plan_text): one line per step of the plan (anchor_plan.c)
 * saying what it computes and between which buffers, indented lines for
 * what fused into it (loads, prologue, epilogues, chains, waits), its
 * kernels as anchor_gpu.c describes them, and the scratch buffers. Tests
 * (lit, golden) read this text, so its wording is part of the interface. */
#include <stdio.h>
#include <stdlib.h>

#include "lower/steps.h"
#include "nvptx/nvptx.h"

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

/* An NTT step's loads: a rescale's lift, a coefficient automorphism. */
static void put_ntt_loads(sp_buf *b, const an_step *sp) {
  if (sp->plan.lift)
    sp_buf_printf(b, "  load: %slift (rescale) of the source's one row (chain position %d) "
                  "to each row\n", sp->pro_sub ? "the prologue's word plus the " : "",
                  (int)sp->plan.lift_col);
  if (sp->plan.aut_k)
    sp_buf_printf(b, "  load: automorphism galois(%lld) of the source, in %s%s%s\n",
                  (long long)sp->plan.aut_k,
                  aut_where(&sp->plan),
                  sp->plan.aut_scalar && !sp->plan.aut_reg ? " (kernel 0's one word a thread)" : "",
                  sp->plan.aut_scalar1 && sp->plan.k[1].staged_load
                      ? " (kernel 1's one word a thread)" : "");
}

/* An NTT step's prologue (its first kernel's pointwise work). */
static void put_prologue(sp_buf *b, const an_step *sp) {
  if (!sp->pro_sub) return;
  sp_buf_printf(b, "  prologue: ");
  put_ops(b, sp->pro_sub);
  if (sp->plan.pro_rows)
    sp_buf_printf(b, " (rows 0..%lld of each polynomial; the others loaded)",
                  (long long)(sp->plan.pro_rows - 1));
  if (sp->pro_store_rows > 0) {
    sp_buf_printf(b, ", stored (rows %lld..%lld) -> ", (long long)sp->pro_store_first,
                  (long long)(sp->pro_store_first + sp->plan.rows - 1));
    put_buf(b, sp->pro_in[sp->pro_sub->ninputs - 1]);
  }
  sp_buf_printf(b, "\n");
}

/* An NTT step's epilogues (its last kernel's), ipfuse's inner product
 * first. */
static void put_epilogues(sp_buf *b, const an_step *sp) {
  for (int e = 0; e < sp->nepi; e++) {
    sp_buf_printf(b, "  epilogue: ");
    /* ipfuse: the last kernel's grid runs over the output rows */
    if (e == 0 && sp->red.members > 0) {
      sp_buf_printf(b, "inner product of %d digits in registers, %lld rows, %s",
                    sp->red.members, (long long)sp->red.out_rows,
                    sp->red.acc > 0 ? "accumulated" : "slots");
      if (sp->plan.reduce_smem > 0)
        sp_buf_printf(b, " (%d in shared memory)", sp->plan.reduce_smem);
      sp_buf_printf(b, ": ");
    }
    put_ops(b, sp->epi_sub[e]);
    sp_buf_printf(b, " -> ");
    put_buf(b, sp->epi_out[e]);
    sp_buf_printf(b, "\n");
  }
}

/* Step s's links to its neighbours: a chained first kernel, the per-row
 * waits and counts in place of a whole kernel's, the source prefetched
 * before the wait for the kernel before. */
static void put_ntt_links(sp_buf *b, const an_plan *p, int s) {
  const an_step *sp = &p->steps[s];
  if (sp->chain)
    sp_buf_printf(b, "  chain: step %d's first kernel in the last kernel, on rows "
                  "%lld..%lld of each component of the sum\n", s + 1,
                  (long long)sp->chain_row0,
                  (long long)(sp->chain_row0 + p->steps[s + 1].plan.rows - 1));
  if (sp->chained)
    sp_buf_printf(b, "  first kernel: in step %d's last kernel (chain)\n", s - 1);
  if (sp->head)
    sp_buf_printf(b, "  first kernel only, at rows %lld.. of its buffer; the last kernel "
                  "in a later step (ipntt)\n", (long long)(sp->dst_off >> sp->plan.log_n));
  if (sp->head && sp->plan.k[0].late_entry && sp->plan.k[0].entry)
    sp_buf_printf(b, "  beside step %d, waiting for it at its end\n", s - 1);
  if (sp->heads)
    sp_buf_printf(b, "  first kernel: the %d steps before, one per member (ipntt)\n",
                  sp->heads);
  if (sp->plan.sig.on)
    sp_buf_printf(b, "  sync: rows %lld..%lld of the sum first, counted for step %d\n",
                  (long long)sp->plan.sig.row0,
                  (long long)(sp->plan.sig.row0 + sp->plan.sig.rows - 1), s + 1);
  if (sp->plan.wait.on && p->steps[s - 1].is_bconv)
    sp_buf_printf(b, "  sync: first kernel waits for its row's digit of step %d (%lld "
                  "blocks each), %s, not for the whole kernel\n", s - 1,
                  (long long)sp->plan.wait.need,
                  sp->plan.wait.rev ? "the last digit first" : "in digit order");
  else if (sp->plan.wait.on)
    sp_buf_printf(b, "  sync: first kernel waits for its row of step %d's sum (%lld blocks "
                  "each), not for the whole kernel\n", s - 1, (long long)sp->plan.wait.need);
  /* the source prefetch (a prologue other than one automorphism has none:
   * ntt_emit_phase.c) */
  if (sp->plan.k[0].l2pf && sp->plan.k[0].entry && !sp->chained &&
      (!sp->pro_sub || sp->pro_sub->ninputs == 1))
    sp_buf_printf(b, "  first kernel: prefetches its source into the L2 before its wait (l2pf)\n");
  /* the epilogue's prefetches (ntt_emit.c: GPU, a last kernel after a
   * kernel 0 of its own with a dependent launch, not a reduce kernel) */
  const lw_ntt_kplan *last = &sp->plan.k[sp->plan.nkernels - 1];
  int red = sp->red.members > 0, inputs = 0;
  for (int t = 0; t < sp->nepi; t++) inputs += sp->epi_sub[t]->ninputs - 1; /* but its value */
  if (inputs && !red && sp->plan.nkernels > 1 && last->pdl && last->epipf)
    sp_buf_printf(b, "  last kernel: prefetches its epilogue's inputs laid out as its rows into "
                  "the L2 before its wait (epipf)\n");
  /* streaming loads (ntt_emit_fuse.c, stream_epilogue: GPU) */
  for (int t = 0; t < sp->nepi; t++) {
    uint64_t params = lw_epics_params(sp->epi_sub[t], sp->plan.log_n);
    /* the transform's value (the members of a reduce) comes in registers */
    if (t == 0 && red)
      for (int k = 0; k < sp->red.members; k++) params &= ~(UINT64_C(1) << (2 + sp->red.reg[k]));
    else if (sp->epi_reg[t] >= 0)
      params &= ~(UINT64_C(1) << (2 + sp->epi_reg[t]));
    if (!params || !(last->epics & (t == 0 && red ? 1 : 2))) continue;
    int n = 0;
    for (; params; params &= params - 1) n++;
    sp_buf_printf(b, "  last kernel: epilogue %d streams its loads of %d input%s (epics, %s)\n", t,
                  n, n > 1 ? "s" : "", last->epics & 4 ? ".cs" : "L2 evict-first");
  }
}

static void put_ntt_step(sp_buf *b, const an_plan *p, int s) {
  static const char *const kinds[] = {"ntt_fwd from coef-std", "ntt_fwd from coef-mont",
                                      "ntt_inv to coef-mont", "ntt_inv to coef-std"};
  const an_step *sp = &p->steps[s];
  sp_buf_printf(b, "step %d: %s, %lld rows x N %lld (%lld polynomial rows), ", s,
                kinds[sp->plan.kind], (long long)sp->plan.rows,
                (long long)1 << sp->plan.log_n, (long long)sp->plan.batch_rows);
  put_buf(b, sp->src);
  sp_buf_printf(b, " -> ");
  if (sp->skip_store) sp_buf_printf(b, "(not stored)");
  else put_buf(b, sp->dst);
  sp_buf_printf(b, "\n");
  put_ntt_loads(b, sp);
  put_prologue(b, sp);
  put_epilogues(b, sp);
  put_ntt_links(b, p, s);
}

/* A batched conversion's digits (mixsteps_ipfuse.c, batched_fwd): each
 * one's source row, table (and the name of its modup's table input) and
 * destination row. */
static void put_bconv_digits(sp_buf *b, fhjit_graph *g, const an_step *sp) {
  const lw_bconv_plan *bp = &sp->bconv;
  sp_buf_printf(b, ", %d digits:", bp->digits);
  for (int d = 0; d < bp->digits; d++) {
    const an_buf *tb = d ? &sp->in[d - 1] : &sp->tw;
    int64_t so = d ? bp->more[d - 1].src_offset : bp->src_offset;
    int64_t dof = d ? bp->more[d - 1].dst_offset : bp->dst_offset;
    sp_buf_printf(b, "%s row %lld (", d ? ";" : "",
                  (long long)(bp->src_row_stride ? so / bp->src_row_stride : 0));
    put_buf(b, *tb);
    const char *tname = tb->kind == LW_ARG_INPUT ? fhjit_value_name(g, fhjit_input_value(g, tb->index)) : NULL;
    if (tname && *tname) sp_buf_printf(b, " %%%s", tname);
    sp_buf_printf(b, ") -> row %lld", (long long)(dof >> bp->log_n));
  }
}

static void put_bconv_step(sp_buf *b, fhjit_graph *g, const an_step *sp, int s) {
  const lw_bconv_plan *bp = &sp->bconv;
  sp_buf_printf(b, "step %d: %s %d -> %d rows x N %lld, %lld polynomials, %s form, ", s,
                bp->lift ? "lift (rescale)" : "bconv", (int)bp->l, (int)bp->m,
                (long long)1 << bp->log_n, (long long)bp->polys, bp->mont ? "mont" : "std");
  if (bp->mma) sp_buf_printf(b, "tensor cores (%d tiles per warp), ", bp->mma);
  put_buf(b, sp->src);
  sp_buf_printf(b, " -> ");
  put_buf(b, sp->dst);
  if (bp->digits > 1) put_bconv_digits(b, g, sp);
  else if (bp->dst_offset) /* rows of a larger buffer */
    sp_buf_printf(b, " from row %lld", (long long)(bp->dst_offset >> bp->log_n));
  sp_buf_printf(b, "\n");
  if (bp->rev) sp_buf_printf(b, "  block order: reversed (the rows written last are read first)\n");
  if (bp->sig.on)
    sp_buf_printf(b, "  sync: its blocks counted per digit (%lld each) for step %d\n",
                  (long long)bp->sig.need, s + 1);
}

static void put_pointwise_step(sp_buf *b, const an_step *sp, int s) {
  sp_buf_printf(b, "step %d: pointwise ", s);
  put_ops(b, sp->sub);
  sp_buf_printf(b, " ->");
  for (int32_t r = 0; sp->sub && r < sp->sub->nresults; r++) {
    sp_buf_printf(b, r ? ", " : " ");
    put_buf(b, sp->out[r]);
    if (sp->out_off && sp->out_off[r]) /* one of several results in one buffer */
      sp_buf_printf(b, " at word %lld", (long long)sp->out_off[r]);
  }
  sp_buf_printf(b, "\n");
}

/* The whole text of plan p, whose program for target t is out. */
static void put_plan(sp_buf *b, fhjit_graph *g, const an_plan *p, const nv_target *t, const lw_program *out) {
  int64_t total = 0;
  for (int i = 0; i < out->nscratch; i++) total += out->scratch_bytes[i];
  sp_buf_printf(b, "plan @%s (%s): %d steps, %d kernels, %d scratch buffers (%lld bytes) in "
                "an arena of %lld bytes\n",
                g->name, t->arch, p->nsteps, (int)out->nkernels, (int)out->nscratch,
                (long long)total, (long long)out->scratch_arena);
  int kk = 0;
  for (int s = 0; s < p->nsteps; s++) {
    const an_step *sp = &p->steps[s];
    if (sp->is_ntt) put_ntt_step(b, p, s);
    else if (sp->is_bconv) put_bconv_step(b, g, sp, s);
    else put_pointwise_step(b, sp, s);
    for (int j = 0; j < lw_step_kernels(sp) && kk < out->nkernels; j++) put_kernel(b, &out->kernels[kk++]);
  }
  for (int i = 0; i < out->nscratch; i++)
    sp_buf_printf(b, "scratch %d: %lld bytes at %lld, steps %d..%d\n", i,
                  (long long)out->scratch_bytes[i], (long long)out->scratch_offset[i],
                  (int)p->scratch_first[i], (int)p->scratch_last[i]);
}

fhjit_status lw_anchor_plan_text(fhjit_graph *g, const char *arch, char **text) {
  *text = NULL;
  const nv_target *t = nv_find_target(&g->ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  an_plan *p = lw_anchor_build_plan(g);
  if (!p) return fhjit_last_status(g->ctx) ? fhjit_last_status(g->ctx) : FHJIT_ERR_UNSUPPORTED;
  lw_program *out = malloc(sizeof *out);
  fhjit_status st = out ? lw_anchor_describe_plan(g, p, t, out) : FHJIT_ERR_MEMORY;
  if (!out) ir_error(g->ctx, st, "error: out of memory");
  sp_buf b = {0};
  if (!st) {
    put_plan(&b, g, p, t, out);
    if (b.failed || !b.data) st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  }
  free(out);
  lw_anchor_plan_free(p);
  if (st) sp_buf_free(&b);
  else *text = b.data;
  return st;
}
