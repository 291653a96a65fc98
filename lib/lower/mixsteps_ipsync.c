/* mixsteps_ipsync.c: ipsync, the step after a reduce kernel waiting for the
 * rows of the sum it reads, not for the whole kernel (ntt_emit_sync.c
 * emits the counters).
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
 * reduce step s and the NTT step s + 1 after it when s + 1 has no prologue
 * and no epilogue (their inputs are read before or without the wait: one
 * could be a row of the sum not counted), reads rows [row0, row0 + rows)
 * of every component of the sum and nothing else the reduce kernel writes,
 * and writes a scratch buffer step s does not touch (scratch.c keeps that
 * buffer's memory apart from step s's: the two steps now overlap), both
 * kernels dependent launches. A kernel's completion then no longer implies
 * the reduce kernel's: step s + 1's first kernel waits for the reduce
 * kernel's total count before it ends, so every kernel after it finds the
 * reduce kernel done as before.
 *
 * Off by default (ntt_plan ipsync=1 turns it on): written in a session
 * without the GPU (2026-12-04), it is checked on the host (plans, PTX,
 * arguments, the words of the host path, which has no counters) but has
 * not run on the H200 yet; bench/ipsync-round.sh is the round that
 * checks and measures it there. */
#include "lower/mixsteps.h"

/* Whether steps s and s + 1 can be synchronised per row; *row0 the first
 * row of the sum step s + 1 reads. */
static int syncable(const an_step *s, int64_t *row0) {
  const an_step *n = s + 1;
  const lw_ntt_plan *p = &s->plan, *np = &n->plan;
  if (!s->is_ntt || s->red.members <= 0 || s->nepi < 1 || s->chain || s->chained || !n->is_ntt ||
      n->chain || n->chained || n->pro_sub || n->nepi || np->lift || np->dst_offset ||
      np->k[0].cluster || np->sync_role || p->sync_role || p->batch_rows != p->rows ||
      p->reduce_members <= 0 || !lw_mix_same_buf(n->src, s->epi_out[0]))
    return 0;
  /* both dependent launches: without, the next step starts after the
   * reduce kernel anyway */
  if (!p->k[p->nkernels - 1].entry || !np->k[0].entry) return 0;
  /* its writes overlap the reduce kernel: a buffer of its own */
  if (n->dst.kind != LW_ARG_SCRATCH || lw_step_touches(s, n->dst)) return 0;
  int64_t comps = np->batch_rows / np->rows;
  if (comps < 1 || comps > lw_mix_sum_comps(s)) return 0;
  *row0 = np->src_offset >> np->log_n; /* component 0's first row: checked with the rest */
  return lw_ntt_reads_sum_rows(np, p->reduce_rows, *row0);
}

void lw_mix_sync_steps(an_build *B) {
  if (B->tune.ipsync <= 0) return; /* off by default until measured: docs/ckks.md */
  an_plan *p = B->p;
  for (int i = 0; i + 1 < p->nsteps; i++) {
    an_step *s = &p->steps[i];
    int64_t row0;
    if (!syncable(s, &row0)) continue;
    lw_ntt_plan *rp = &s->plan, *np = &s[1].plan;
    const lw_ntt_kplan *rk = &rp->k[rp->nkernels - 1];
    rp->sync_role = 1, np->sync_role = 2;
    rp->sync_id = np->sync_id = i;
    rp->sync_row0 = np->sync_row0 = row0;
    rp->sync_rows = np->sync_rows = np->rows;
    /* one polynomial: the reduce kernel's blocks per output row */
    rp->sync_need = np->sync_need = rk->blocks / rp->reduce_rows;
    rp->sync_total = np->sync_total = rk->blocks;
    SP_ASSERT(rk->blocks % rp->reduce_rows == 0);
  }
}
