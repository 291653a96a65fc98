/* mixsteps_ipchain.c: ipchain, a reduce step's next inverse NTT started in
 * the reduce kernel (ntt_emit_chain.c builds it).
 *
 * After ipfuse (mixsteps_ipfuse.c) a key switch's batched forward NTT ends
 * in a reduce kernel that stores the inner product S; moddown's first step
 * is the inverse NTT of S's P rows, whose first kernel reads contiguous
 * words of a row, the words one reduce block has just stored. Run there,
 * it costs no launch and no pass over memory of its own. Planned here,
 * after every step exists: a reduce step s and the step s + 1 after it
 * are chained when s + 1 is an NTT of two kernels with no prologue and no
 * epilogue reading what step s writes (an epilogue's inputs are read
 * before the kernel's wait, which the reduce kernel, still running, might
 * be writing; an input it reads is fine) reading rows of S
 * (epilogue 0's output) that lw_ntt_chain_fits accepts. Step s + 1 then
 * launches its second kernel only, a dependent launch of the reduce kernel
 * that waits for all of it (never the per-row counters of its own first
 * kernel: pdl 2 becomes 1).
 *
 * Off by default (ntt_plan ipchain=1 turns it on): on the H200 the r32
 * benchmark key switch, relinearise and rotation ran 224.6, 235.3 and
 * 236.1 us chained against 223.5, 233.7 and 233.5 with the inverse NTT's
 * own first kernel (12584a1, one run, every result checked). That kernel
 * already overlapped its neighbours (programmatic dependent launch), and
 * in the reduce kernel its work lengthens the chained rows' blocks by
 * about as much as it took alone: a launch less saves nothing where no
 * pass over memory goes with it (docs/ckks.md). */
#include "lower/mixsteps.h"

/* Whether an epilogue of step n reads a buffer step s writes. */
static int epilogue_reads(const an_step *n, const an_step *s) {
  for (int t = 0; t < n->nepi; t++)
    for (int32_t i = 0; i < n->epi_sub[t]->ninputs; i++)
      if (lw_mix_same_buf(n->epi_in[t][i], s->epi_out[0]) || lw_mix_same_buf(n->epi_in[t][i], s->dst))
        return 1;
  return 0;
}

/* Whether steps s and s + 1 can be chained; *row0 the first row of S the
 * next step reads. */
static int chainable(const an_step *s, int64_t *row0) {
  const an_step *n = s + 1;
  if (!s->is_ntt || s->red.members <= 0 || s->nepi < 1 || s->chained || !n->is_ntt ||
      n->pro_sub || epilogue_reads(n, s) || n->plan.nkernels != 2 || n->dst_off || n->chain ||
      !lw_mix_same_buf(n->src, s->epi_out[0]))
    return 0;
  int64_t comps = n->plan.rows > 0 ? n->plan.batch_rows / n->plan.rows : 0;
  if (comps < 1 || comps > lw_mix_sum_comps(s)) return 0;
  *row0 = n->plan.src_offset >> n->plan.log_n;
  return lw_ntt_chain_fits(&s->plan, &n->plan, *row0);
}

void lw_mix_chain_steps(an_build *B) {
  if (B->tune.ipchain <= 0) return; /* off by default: see above */
  an_plan *p = B->p;
  for (int i = 0; i + 1 < p->nsteps; i++) {
    an_step *s = &p->steps[i];
    int64_t row0;
    if (!chainable(s, &row0)) continue;
    s->chain = 1;
    s->chain_row0 = row0;
    s[1].chained = 1;
    for (int j = 0; j < 2; j++)
      if (s[1].plan.k[j].pdl > 1) s[1].plan.k[j].pdl = 1;
  }
}
