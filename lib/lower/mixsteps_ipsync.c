/* mixsteps_ipsync.c: ipsync, the step after a reduce kernel waiting for the
 * rows of the sum it reads, not for the whole kernel, and convsync, a
 * forward NTT waiting for the digits of the conversion before it one by
 * one (counters.h has the scheme, ntt_emit_sync.c and bconv.c emit it).
 *
 * After ipfuse (mixsteps_ipfuse.c) a key switch's batched forward NTT ends
 * in a reduce kernel that stores the inner product S; moddown's first step
 * is the inverse NTT of S's P rows, 2 x 12 of the 2 x 60 rows at r32. With
 * programmatic dependent launch its first kernel starts while the reduce
 * kernel's last wave runs, but then waits for every block of it: measured
 * on the H200 (bench/results/2026-12-04-1ce89e5), that wait alone costs the
 * r32 key switch 7.4 us, the largest of its kernels' waits. Here the
 * reduce kernel runs the blocks of those rows first and counts them per
 * row, and the inverse NTT's first kernel starts a block once its row is
 * complete: it fills the reduce kernel's last wave instead of following it.
 *
 * Planned after every step exists (as ipchain, which it excludes): a
 * reduce step s and the NTT step s + 1 after it when s + 1 has no
 * epilogue (its inputs are read before the wait for kernel 0: one could
 * be a row of the sum not counted), reads rows [row0, row0 + rows) of
 * every component of the sum (its source view; with a prologue of rows
 * [0, pro_rows), HMult's, the prologue's input of the sum exactly at the
 * rows it computes, prologue_fits) and nothing else the reduce kernel
 * writes, and writes a scratch buffer step s does not touch (scratch.c
 * keeps that buffer's memory apart from step s's: the two steps now
 * overlap), both kernels dependent launches. A kernel's completion then no longer implies
 * the reduce kernel's: step s + 1's first kernel waits for the reduce
 * kernel's total count before it ends, so every kernel after it finds the
 * reduce kernel done as before.
 *
 * convsync, the same for the edge before: a key switch's digits are
 * converted in one launch (bconvbatch), the batched forward NTT after it
 * reading each digit's rows; its first kernel's block of a row needs only
 * that row's digit, done once the conversion's blocks of that digit are.
 * So the conversion counts its blocks per digit and the NTT's first kernel
 * waits for its row's digit, running the digits in the order the
 * conversion finishes them (its block order reversed with the
 * conversion's, anchor_gpu.c). The edge was worth 3-4 us of the r32 key
 * switch in the ablation (docs/ckks.md, "The waits between kernels").
 * Every digit is waited for by some block, so the first kernel's
 * completion implies the conversion's; the second kernel reads its
 * epilogue inputs before its wait, while the conversion may still run:
 * none may be what the conversion writes.
 *
 * Both off by default (ntt_plan ipsync=1, convsync=1 turn them on):
 * measured on the H200 (bench/results/2026-12-05-c75dc23), both are
 * bit-exact and about 4 us slower on every r32 operation (key switch
 * 222.5 and 222.6 us against 218.2; 228.1 with both): the kernels they
 * overlap are bound by the same resources, and the counts and block
 * orders cost more than the overlap gains. Kept for the planner's
 * bookkeeping they share with ipchain and as the measured record;
 * bench/sync-round.sh checks and times them. */
#include "lower/mixsteps.h"

/* Whether step s writes buffer b (its NTT's own buffer or an epilogue's
 * output). */
static int writes(const an_step *s, an_buf b) {
  if (lw_mix_same_buf(s->dst, b)) return 1;
  for (int t = 0; t < s->nepi; t++)
    if (lw_mix_same_buf(s->epi_out[t], b)) return 1;
  return 0;
}

/* Whether step n's prologue, which computes rows [0, pro_rows) of each
 * polynomial (mixsteps_mdrs.c: HMult's rescale row), reads of what step s
 * writes only rows [row0, row0 + pro_rows) of the sum, which the block
 * of batch row (c, r) then finds counted as row0 + r: an input bound to
 * the sum with those rows (any component: every component's row is
 * counted together), at the index it computes. */
static int prologue_fits(const an_step *s, const an_step *n, int64_t row0) {
  const lw_ntt_plan *np = &n->plan;
  if (!n->pro_sub) return 1;
  if (np->pro_rows <= 0 || n->pro_store_rows > 0) return 0;
  int64_t len = INT64_C(1) << np->log_n;
  for (int32_t i = 0; i < n->pro_sub->ninputs; i++) {
    if (!writes(s, n->pro_in[i])) continue;
    fhjit_type t;
    fhjit_layout l;
    if (!lw_mix_same_buf(n->pro_in[i], s->epi_out[0]) ||
        fhjit_input_binding(n->pro_sub, i, &t, &l) != FHJIT_OK || t.nbatch || t.n != len ||
        t.rows != np->pro_rows || l.offset != row0 * len || (t.rows > 1 && l.row_stride != len) ||
        l.index_stride != 1 || (t.comps > 1 && l.comp_stride != s->plan.reduce_rows * len))
      return 0;
  }
  return 1;
}

/* Whether steps s and s + 1 can be synchronised per row; *row0 the first
 * row of the sum step s + 1 reads. */
static int syncable(const an_step *s, int64_t *row0) {
  const an_step *n = s + 1;
  const lw_ntt_plan *p = &s->plan, *np = &n->plan;
  if (!s->is_ntt || s->red.members <= 0 || s->nepi < 1 || s->chain || s->chained || !n->is_ntt ||
      n->chain || n->chained || n->nepi || np->lift || np->dst_offset ||
      np->k[0].cluster || np->wait.on || p->sig.on || p->batch_rows != p->rows ||
      p->reduce_members <= 0 || p->reduce_rows <= 0 || !lw_mix_same_buf(n->src, s->epi_out[0]))
    return 0;
  /* both dependent launches: without, the next step starts after the
   * reduce kernel anyway */
  if (!p->k[p->nkernels - 1].entry || !np->k[0].entry) return 0;
  /* its writes overlap the reduce kernel: a buffer of its own */
  if (n->dst.kind != LW_ARG_SCRATCH || lw_step_touches(s, n->dst)) return 0;
  int64_t comps = np->batch_rows / np->rows;
  if (comps < 1 || comps > lw_mix_sum_comps(s)) return 0;
  *row0 = np->src_offset >> np->log_n; /* component 0's first row: checked with the rest */
  return lw_ntt_reads_sum_rows(np, p->reduce_rows, *row0) && prologue_fits(s, n, *row0);
}

static void ipsync_steps(an_build *B) {
  an_plan *p = B->p;
  for (int i = 0; i + 1 < p->nsteps; i++) {
    an_step *s = &p->steps[i];
    int64_t row0;
    if (!syncable(s, &row0)) continue;
    lw_ntt_plan *rp = &s->plan, *np = &s[1].plan;
    const lw_ntt_kplan *rk = &rp->k[rp->nkernels - 1];
    SP_ASSERT(rk->blocks % rp->reduce_rows == 0);
    /* one polynomial: the reduce kernel's blocks per output row */
    lw_sync c = {.on = 1, .id = i, .row0 = row0, .rows = np->rows, .div = 1,
                 .need = rk->blocks / rp->reduce_rows, .total = rk->blocks};
    rp->sig = np->wait = c;
  }
}

/* ------------------------------------------------------------ convsync */

/* The GPU form's blocks in all (lw_bconv_launch's: digits x the blocks
 * of one digit). */
static int64_t conv_blocks(const lw_bconv_plan *bp) {
  uint32_t blocks, threads, shared;
  lw_bconv_launch(bp, &blocks, &threads, &shared);
  return blocks;
}

/* Whether digit d of conversion bp writes the dense rows [d m, (d + 1) m)
 * of one buffer (from the first digit's offset). */
static int digits_dense(const lw_bconv_plan *bp) {
  int64_t len = INT64_C(1) << bp->log_n;
  for (int d = 1; d < bp->digits; d++)
    if (bp->more[d - 1].dst_offset != bp->dst_offset + (int64_t)d * bp->m * len) return 0;
  return 1;
}

/* Whether conversion step s and forward NTT step s + 1 can be
 * synchronised per digit. */
static int conv_syncable(const an_step *s) {
  const an_step *n = s + 1;
  const lw_bconv_plan *bp = &s->bconv;
  const lw_ntt_plan *np = &n->plan;
  if (!s->is_bconv || bp->lift || bp->digits < 2 || bp->polys != 1 || !digits_dense(bp) ||
      !n->is_ntt || n->chained || n->pro_sub || np->lift || np->nkernels != 2 ||
      np->k[0].cluster || np->wait.on || !np->k[0].entry || !lw_mix_same_buf(n->src, s->dst) ||
      np->batch_rows != np->rows || np->rows != (int64_t)bp->digits * bp->m ||
      np->src_offset != bp->dst_offset || !lw_ntt_reads_sum_rows(np, np->rows, 0))
    return 0;
  /* its second kernel reads epilogue inputs before its wait, when the
   * conversion may still run: none written by the conversion, but for its
   * own transform's buffer (in place: kernel 0's output, which it reads
   * only after the wait) */
  for (int t = 0; t < n->nepi; t++)
    for (int32_t i = 0; i < n->epi_sub[t]->ninputs; i++)
      if (lw_mix_same_buf(n->epi_in[t][i], s->dst) && !lw_mix_same_buf(n->epi_in[t][i], n->dst))
        return 0;
  /* its first kernel writes in place (rows of digits done) or a buffer of
   * its own, live across the conversion (scratch.c) */
  if (!lw_mix_same_buf(n->dst, s->dst) && (n->dst.kind != LW_ARG_SCRATCH || lw_step_touches(s, n->dst)))
    return 0;
  return conv_blocks(bp) % bp->digits == 0;
}

static void convsync_steps(an_build *B) {
  an_plan *p = B->p;
  for (int i = 0; i + 1 < p->nsteps; i++) {
    an_step *s = &p->steps[i];
    if (!conv_syncable(s)) continue;
    int64_t all = conv_blocks(&s->bconv);
    /* rev: set with the conversion's block order (anchor_gpu.c) */
    lw_sync c = {.on = 1, .id = i, .row0 = 0, .rows = s->bconv.digits, .div = s->bconv.m,
                 .need = all / s->bconv.digits, .total = all};
    s->bconv.sig = s[1].plan.wait = c;
  }
}

void lw_mix_sync_steps(an_build *B) {
  /* each off by default: measured slower (docs/ckks.md) */
  if (B->tune.convsync > 0) convsync_steps(B);
  if (B->tune.ipsync > 0) ipsync_steps(B);
}
