/* ntt_emit_sync.c: the GPU kernels' finer-grained waits for the kernel
 * before them (counters.h has the scheme and the code they share): rowsync
 * (an NTT's kernel 1 waits for its row of kernel 0, lw_ntt_kplan.pdl 2)
 * and the plan's lw_sync edges (mixsteps_ipsync.c): sig, the reduce kernel
 * counting the rows of the sum the next step reads (ipsync), and wait,
 * kernel 0 waiting for the part of the step before it that its row reads
 * (ipsync: a row of the sum; convsync: a digit of the conversion). */
#include <stdio.h>

#include "lower/ntt_emit.h"

/* Programmatic dependent launch (sm_90): lw_grid_dep. */
static void grid_dep(ne *E, const char *text) { lw_grid_dep(E->c, E->b, text); }

static lw_cnt cnt(const ne *E) {
  return (lw_cnt){.c = E->c, .m = E->m, .b = E->b, .fn = E->fn, .own = E->own,
                  .barrier_fn = E->barrier_fn, .barrier_ty = E->barrier_ty};
}

/* rowsync's counters: <prefix>.rowdone and <prefix>.rowused, per batch row. */
static LLVMValueRef row_counter_addr(ne *E, const char *which, LLVMValueRef row) {
  char nm[96];
  snprintf(nm, sizeof nm, "%s.%s", E->prefix, which);
  lw_cnt C = cnt(E);
  return lw_cnt_addr(&C, nm, E->P->batch_rows, row);
}

/* The batch-row of a block (every block lies in one row). */
static LLVMValueRef block_row(ne *E, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  if (k->cols) return LLVMBuildLShr(E->b, blk, c64(E, (uint64_t)(k->log_subs - k->log_c)), "brow");
  return LLVMBuildLShr(E->b, LLVMBuildShl(E->b, blk, c64(E, (uint64_t)k->log_c), ""),
                       c64(E, (uint64_t)k->log_subs), "brow");
}

/* ------------------------------------------------------------- rowsync */

static LLVMValueRef rowdone_of(void *arg, LLVMValueRef blk) {
  ne *E = arg;
  return row_counter_addr(E, "rowdone", block_row(E, blk));
}

/* Kernel 0, after its last store: the block counts itself done. Kernel 0
 * writes nothing but dst, whose rows the blocks of one row own, so no
 * other ordering is needed. */
static void row_signal(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  lw_cnt C = cnt(E);
  LLVMBasicBlockRef j1 = lw_cnt_if(&C, lw_cnt_owned(&C), "signal");
  lw_cnt_barrier(&C);
  LLVMBasicBlockRef j2 = lw_cnt_if(&C, lw_cnt_is_tid0(&C, tid), "signal.t0");
  lw_cnt_release_add(&C, rowdone_of(E, blk));
  lw_cnt_endif(&C, j2);
  lw_cnt_endif(&C, j1);
}

/* Kernel 1, at its end (off the path to its first access): the block counts
 * itself in rowused[row]; the row's last one sets both counts back to zero
 * for the next launch (whose kernel 0 counts only after this kernel has
 * completed). */
static void row_release(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_plan *P = E->P;
  uint64_t users = (uint64_t)(P->k[1].blocks / P->batch_rows);
  lw_cnt C = cnt(E);
  LLVMBasicBlockRef j1 = lw_cnt_if(&C, lw_cnt_owned(&C), "release");
  LLVMBasicBlockRef j2 = lw_cnt_if(&C, lw_cnt_is_tid0(&C, tid), "release.t0");
  LLVMValueRef row = block_row(E, blk);
  LLVMValueRef da = row_counter_addr(E, "rowdone", row), ua = row_counter_addr(E, "rowused", row);
  LLVMValueRef old = lw_cnt_count_in(&C, ua);
  LLVMBasicBlockRef jr = lw_cnt_if(&C, LLVMBuildICmp(E->b, LLVMIntEQ, old, c32(E, users - 1), ""), "reset");
  LLVMValueRef both[2] = {da, ua};
  asm_call(E, E->voidt, "st.relaxed.gpu.global.u32 [$0], 0;\n\tst.relaxed.gpu.global.u32 [$1], 0;",
           "l,l,~{memory}", both, 2);
  lw_cnt_endif(&C, jr);
  lw_cnt_endif(&C, j2);
  lw_cnt_endif(&C, j1);
}

void lw_ne_wait_for_kernel0(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_plan *P = E->P;
  lw_cnt C = cnt(E);
  if (E->K->pdl == 2) lw_cnt_wait(&C, tid, rowdone_of, E, blk, (uint64_t)(P->k[0].blocks / P->batch_rows));
  else grid_dep(E, "griddepcontrol.wait;");
}

/* ------------------------------------------------------------- lw_sync */

static int is_last(const ne *E) { return E->K == &E->P->k[E->P->nkernels - 1]; }
static int is_first(const ne *E) { return E->K == &E->P->k[0]; }
static int sync_signals(const ne *E) { return E->P->sig.on && is_last(E) && E->red_active; }
static int sync_waits(const ne *E) { return E->P->wait.on && is_first(E); }

int lw_ne_has_own(const ne *E) {
  return E->target == LW_GPU && (E->K->pdl == 2 || sync_signals(E) || sync_waits(E));
}

LLVMValueRef lw_ne_sync_first(ne *E, LLVMValueRef blk) {
  /* the counted rows first (ntt_emit_chain.c) */
  if (sync_signals(E)) return lw_ne_rows_first(E, blk, E->P->sig.row0);
  /* the producer's last parts first */
  if (sync_waits(E) && E->P->wait.rev)
    return LLVMBuildSub(E->b, c64(E, (uint64_t)E->K->blocks - 1), blk, "blk.rev");
  return blk;
}

void lw_ne_entry_wait(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  lw_cnt C = cnt(E);
  if (sync_waits(E)) lw_cnt_sync_wait(&C, &E->P->wait, tid, block_row(E, blk));
  else grid_dep(E, "griddepcontrol.wait;");
}

void lw_ne_kernel_end(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  lw_cnt C = cnt(E);
  if (sync_signals(E)) lw_cnt_sync_signal(&C, &E->P->sig, tid, blk);
  if (sync_waits(E)) lw_cnt_sync_finish(&C, &E->P->wait, tid, (uint64_t)E->K->blocks);
  if (is_first(E) && E->K->pdl == 2) row_signal(E, tid, blk);
  if (!is_first(E) && E->K->pdl == 2) row_release(E, tid, blk);
}
