/* steps_l2pf.c: where a step plan keeps an NTT's L2 prefetch of its source.
 *
 * l2pf (ntt_emit_phase.c, lw_ne_prefetch_source) makes an NTT's first
 * kernel prefetch its source into the L2 before its wait for the stream's
 * previous kernel, so that those DRAM reads overlap that kernel's tail. It
 * was measured on transforms whose source was written long before. Where
 * the step right before writes the source (P's inverse NTT after the
 * reduce kernel of a key switch, moddown's inverse after an inner
 * product), the prefetch reads lines that kernel has not written yet: the
 * words it then writes land in the L2 anyway, so the prefetch only adds
 * DRAM reads beside that kernel's own. ntt_plan key l2pfprev=0 drops it
 * there (1, the default, keeps every plan's l2pf: on an H100 the r32 key
 * switch ran within 0.3% either way, docs/ntt.md). A prefetch returns no
 * data, so either way every word is the same. */
#include "lower/mixsteps.h"
#include "lower/steps.h"

/* Whether step s writes buffer b (its destination, results or epilogue
 * results). */
static int step_writes(const an_step *s, an_buf b) {
  if (lw_mix_same_buf(s->dst, b)) return 1;
  if (s->sub)
    for (int32_t r = 0; r < s->sub->nresults; r++)
      if (lw_mix_same_buf(s->out[r], b)) return 1;
  for (int t = 0; t < s->nepi; t++)
    if (lw_mix_same_buf(s->epi_out[t], b)) return 1;
  return 0;
}

void lw_steps_l2pf(an_build *B) {
  if (B->tune.l2pfprev != 0) return;
  an_plan *p = B->p;
  for (int i = 1; i < p->nsteps; i++) {
    an_step *s = &p->steps[i];
    if (!s->is_ntt || s->chained || !s->plan.k[0].l2pf) continue;
    /* with a prologue, only an NTT-domain automorphism of one input
     * prefetches (that input) */
    if (s->pro_sub && s->pro_sub->ninputs != 1) continue;
    an_buf read = s->pro_sub ? s->pro_in[0] : s->src;
    if (step_writes(&p->steps[i - 1], read)) s->plan.k[0].l2pf = 0;
  }
}
