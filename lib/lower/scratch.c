/* scratch.c: liveness-based reuse of the scratch buffers of a step plan.
 *
 * anchor.c and mixsteps.c give every intermediate its own scratch buffer.
 * Run once after planning, lw_scratch_assign computes each buffer's live
 * range over the step sequence (the first step that touches it .. the last
 * one, both included: a buffer read and written by one step, or read by a
 * step that writes another, is live across that step) and places the
 * buffers in one arena, buffers whose ranges are disjoint sharing memory.
 *
 * Why sharing is safe: the steps run in program order, one after the other.
 *   - Host path (host.c, lw_anchor_run_host): each step returns only once
 *     all its threads are done.
 *   - GPU (runtime/launch.c): every kernel of the program is enqueued on one
 *     stream in step order. A kernel launched without LW_KERNEL_PDL starts
 *     once the one before it has completed. One launched with it (NTT
 *     kernels, ntt_emit.c; on sm_90 also conversion and pointwise kernels,
 *     anchor_gpu.c, whose wait is their first instruction) may start early,
 *     but touches no buffer the
 *     program writes before its griddepcontrol.wait, which returns once the
 *     kernel before it has completed and its writes are visible; that kernel
 *     in turn completed only after its own wait (or, for an NTT's second
 *     kernel on the per-row counters, after every block of its first kernel
 *     had done all its loads and stores), so every earlier kernel is done.
 *     The one exception is an NTT step's second kernel, which reads its
 *     epilogue inputs before its wait, while the same step's first kernel
 *     may still run: both are in one step, where every buffer either touches
 *     is live and so never shares memory with another live buffer. The
 *     other is ipsync (mixsteps_ipsync.c): a reduce step's next step may
 *     start a block once the rows of the sum it reads are counted, so it
 *     writes its destination while the reduce kernel runs: that buffer is
 *     live across the reduce step too (step_refs). It waits for the reduce
 *     kernel's total count before it ends, so the steps after it find every
 *     earlier kernel done as above. convsync is the same for a conversion
 *     and the forward NTT after it, whose first kernel's blocks each wait
 *     for their digit, every digit by some of them. L2
 *     prefetches issued before the wait (ntt_emit_phase.c, prefetch_source)
 *     are hints that read no data.
 *   So while any kernel of step s touches a buffer, the kernels of steps
 *   before s have completed and those of steps after s have not touched
 *   memory: buffers whose live ranges are disjoint are never in use at one
 *   time. A scratch buffer is never read before a step writes it (the
 *   planner creates one per value it materialises), so what an earlier
 *   buffer left in shared memory is never observed.
 *
 * Placement: greedy by size (largest first, ties by first step then
 * index), each buffer at the lowest LW_SCRATCH_ALIGN-aligned offset where
 * it overlaps no placed buffer whose live range meets its own. Buffers whose
 * ranges all meet get the sum of their (aligned) sizes, as before. */
#include <stdlib.h>
#include <string.h>

#include "lower/steps.h"

/* Calls f for every buffer step s reads or writes (what its kernels get as
 * arguments, and what the host path passes its steps). */
static void step_refs(const an_step *s, void (*f)(void *, an_buf), void *arg) {
  if (s->chain) { /* the next step's kernel 0 runs in this step's last kernel */
    f(arg, s[1].tw);
    f(arg, s[1].src);
    f(arg, s[1].dst);
  }
  /* ipsync, convsync: the next step writes its buffer while this step's
   * reduce kernel or conversion still runs (mixsteps_ipsync.c) */
  if ((s->is_ntt && s->plan.sig.on) || (s->is_bconv && s->bconv.sig.on)) f(arg, s[1].dst);
  f(arg, s->src);
  f(arg, s->dst);
  f(arg, s->tw);
  if (s->sub) {
    for (int32_t i = 0; i < s->sub->ninputs; i++) f(arg, s->in[i]);
    for (int32_t r = 0; r < s->sub->nresults; r++) f(arg, s->out[r]);
  }
  if (s->is_bconv) /* the other digits' tables */
    for (int d = 1; d < s->bconv.digits; d++) f(arg, s->in[d - 1]);
  if (s->pro_sub)
    for (int32_t i = 0; i < s->pro_sub->ninputs; i++) f(arg, s->pro_in[i]);
  for (int t = 0; t < s->nepi; t++) {
    for (int32_t i = 0; i < s->epi_sub[t]->ninputs; i++) f(arg, s->epi_in[t][i]);
    f(arg, s->epi_out[t]);
  }
}

typedef struct touch_walk {
  an_buf b;
  int hit;
} touch_walk;

static void touch(void *arg, an_buf b) {
  touch_walk *w = arg;
  w->hit |= b.kind == w->b.kind && b.index == w->b.index;
}

int lw_step_touches(const an_step *s, an_buf b) {
  touch_walk w = {b, 0};
  step_refs(s, touch, &w);
  return w.hit;
}

typedef struct range_walk {
  an_plan *p;
  int32_t step;
} range_walk;

static void widen(void *arg, an_buf b) {
  range_walk *w = arg;
  if (b.kind != LW_ARG_SCRATCH) return;
  SP_ASSERT(b.index >= 0 && b.index < w->p->nscratch);
  if (w->p->scratch_first[b.index] < 0) w->p->scratch_first[b.index] = w->step;
  w->p->scratch_last[b.index] = w->step;
}

void lw_scratch_ranges(an_plan *p) {
  for (int i = 0; i < p->nscratch; i++) p->scratch_first[i] = p->scratch_last[i] = -1;
  for (int32_t s = 0; s < p->nsteps; s++) {
    range_walk w = {p, s};
    step_refs(&p->steps[s], widen, &w);
  }
}

static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static int meets(const int32_t *first, const int32_t *last, int a, int b) {
  return first[a] <= last[b] && first[b] <= last[a];
}

int64_t lw_scratch_pack(int n, const int64_t *bytes, const int32_t *first, const int32_t *last,
                        int64_t align, int64_t *offset) {
  SP_ASSERT(n >= 0 && n <= LW_MAX_KERNELS && align > 0);
  int order[LW_MAX_KERNELS];
  for (int i = 0; i < n; i++) order[i] = i;
  /* insertion sort: n is at most LW_MAX_KERNELS; deterministic order */
  for (int i = 1; i < n; i++) {
    int x = order[i], j = i;
    while (j > 0) {
      int y = order[j - 1];
      int before = bytes[x] > bytes[y] ||
                   (bytes[x] == bytes[y] && (first[x] < first[y] || (first[x] == first[y] && x < y)));
      if (!before) break;
      order[j] = y;
      j--;
    }
    order[j] = x;
  }
  int64_t arena = 0;
  for (int k = 0; k < n; k++) {
    int x = order[k];
    int64_t size = round_up(bytes[x], align);
    /* the lowest offset: try 0 and the end of every placed buffer that meets
     * x, each checked against all those buffers */
    int64_t best = -1;
    for (int c = -1; c < k; c++) {
      int64_t at;
      if (c < 0) at = 0;
      else if (!meets(first, last, x, order[c])) continue;
      else at = offset[order[c]] + round_up(bytes[order[c]], align);
      if (best >= 0 && at >= best) continue;
      int ok = 1;
      for (int d = 0; d < k && ok; d++) {
        int y = order[d];
        if (!meets(first, last, x, y)) continue;
        int64_t ys = offset[y], ye = ys + round_up(bytes[y], align);
        if (at < ye && ys < at + size) ok = 0;
      }
      if (ok) best = at;
    }
    SP_ASSERT(best >= 0); /* the end of the highest placed buffer always fits */
    offset[x] = best;
    if (best + size > arena) arena = best + size;
  }
  return arena;
}

int lw_scratch_debug_share_all;

void lw_scratch_assign(an_plan *p) {
  lw_scratch_ranges(p);
  for (int i = 0; i < p->nscratch; i++)
    /* a buffer no step touches (none today) gets a range of its own */
    if (p->scratch_first[i] < 0) p->scratch_first[i] = p->scratch_last[i] = p->nsteps;
  p->scratch_arena = lw_scratch_pack(p->nscratch, p->scratch_bytes, p->scratch_first,
                                     p->scratch_last, LW_SCRATCH_ALIGN, p->scratch_offset);
  if (lw_scratch_debug_share_all) {
    p->scratch_arena = 0;
    for (int i = 0; i < p->nscratch; i++) {
      p->scratch_offset[i] = 0;
      if (p->scratch_bytes[i] > p->scratch_arena) p->scratch_arena = p->scratch_bytes[i];
    }
  }
}

void lw_scratch_describe(const an_plan *p, lw_program *out) {
  memcpy(out->scratch_offset, p->scratch_offset, sizeof out->scratch_offset);
  out->scratch_arena = p->scratch_arena;
  /* every scratch argument of a step's kernels (in launch order: an NTT
   * step's lw_step_kernels, one for the others) is live at that step: a
   * buffer the range walk missed would be shared while in use */
  int32_t k = 0;
  for (int32_t s = 0; s < p->nsteps; s++) {
    const an_step *sp = &p->steps[s];
    for (int j = 0; j < lw_step_kernels(sp); j++, k++) {
      SP_ASSERT(k < out->nkernels);
      const lw_kernel *kd = &out->kernels[k];
      for (int32_t a = 0; a < kd->nargs; a++)
        if (kd->args[a].kind == LW_ARG_SCRATCH) {
          int32_t i = kd->args[a].index;
          SP_ASSERT(i >= 0 && i < p->nscratch);
          SP_ASSERT(p->scratch_first[i] <= s && s <= p->scratch_last[i]);
        }
    }
  }
  SP_ASSERT(k == out->nkernels);
}

void lw_scratch_poison(const an_plan *p, int32_t s, void *const *scratch) {
#ifndef NDEBUG
  for (int i = 0; i < p->nscratch; i++)
    if (p->scratch_first[i] == s || p->scratch_last[i] == s - 1)
      memset(scratch[i], 0xa5, (size_t)p->scratch_bytes[i]);
#else
  (void)p, (void)s, (void)scratch;
#endif
}
