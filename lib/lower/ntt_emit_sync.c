/* ntt_emit_sync.c: the GPU kernels' finer-grained waits for the kernel
 * before them: rowsync (an NTT's kernel 1 waits for its row of kernel 0,
 * lw_ntt_kplan.pdl 2) and ipsync (the step after a reduce kernel waits for
 * the rows of the sum it reads, lw_ntt_plan.sync_role, mixsteps_ipsync.c).
 *
 * Both count blocks in counters that are globals of the module, zero when
 * it is loaded: a block counts itself done after its last store (a barrier,
 * then thread 0's release); a waiting block's thread 0 polls with relaxed
 * loads, then an acquire fence (an acquire load would invalidate the SM's
 * L1 at every poll), and the block follows it through a barrier. The last
 * reader of a count sets it back to zero for the next launch. So no two
 * launches that use them may overlap: the runtime passes own = 1 only on
 * the program's home stream (launch.c), and every other launch takes the
 * grid-wide wait (griddepcontrol.wait). A count that never completes ends
 * in a trap after 30 s rather than a hang. */
#include <stdio.h>

#include "lower/ntt_emit.h"

/* Programmatic dependent launch (sm_90): lw_grid_dep. */
static void grid_dep(ne *E, const char *text) { lw_grid_dep(E->c, E->b, text); }

/* The module's i32 counter array `name` of n entries. */
static LLVMValueRef counters(ne *E, const char *name, int64_t n) {
  LLVMValueRef g = LLVMGetNamedGlobal(E->m, name);
  if (!g) {
    LLVMTypeRef arr = LLVMArrayType2(E->i32, (uint64_t)n);
    g = LLVMAddGlobalInAddressSpace(E->m, arr, name, 1);
    LLVMSetInitializer(g, LLVMConstNull(arr));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 4);
  }
  return g;
}

static LLVMValueRef counter_addr(ne *E, LLVMValueRef arr, LLVMValueRef i) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(E->b, E->i32, arr, &i, 1, "");
  return LLVMBuildPtrToInt(E->b, p, E->i64, "");
}

/* rowsync's counters: <prefix>.rowdone and <prefix>.rowused, per batch row. */
static LLVMValueRef row_counter_addr(ne *E, const char *which, LLVMValueRef row) {
  char nm[96];
  snprintf(nm, sizeof nm, "%s.%s", E->prefix, which);
  return counter_addr(E, counters(E, nm, E->P->batch_rows), row);
}

/* ipsync's counters: fhjit_ipsync<id>, per counted row of the sum [0,
 * rows), then the reduce kernel's total, then the waiting kernel's
 * blocks done with them. */
static LLVMValueRef sync_addr(ne *E, LLVMValueRef i) {
  char nm[48];
  snprintf(nm, sizeof nm, "fhjit_ipsync%d", E->P->sync_id);
  return counter_addr(E, counters(E, nm, E->P->sync_rows + 2), i);
}

/* The batch-row of a block (every block lies in one row). */
static LLVMValueRef block_row(ne *E, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  if (k->cols) return LLVMBuildLShr(E->b, blk, c64(E, (uint64_t)(k->log_subs - k->log_c)), "brow");
  return LLVMBuildLShr(E->b, LLVMBuildShl(E->b, blk, c64(E, (uint64_t)k->log_c), ""),
                       c64(E, (uint64_t)k->log_subs), "brow");
}

/* Branches on cond: returns the join block, the builder in the then-block. */
static LLVMBasicBlockRef begin_if(ne *E, LLVMValueRef cond, const char *name) {
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(E->c, E->fn, name);
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(E->c, E->fn, "join");
  LLVMBuildCondBr(E->b, cond, body, join);
  LLVMPositionBuilderAtEnd(E->b, body);
  return join;
}

static void end_if(ne *E, LLVMBasicBlockRef join) {
  LLVMBuildBr(E->b, join);
  LLVMPositionBuilderAtEnd(E->b, join);
}

static LLVMValueRef owned(ne *E) {
  return LLVMBuildICmp(E->b, LLVMIntNE, E->own, c64(E, 0), "owned");
}

static LLVMValueRef is_tid0(ne *E, LLVMValueRef tid) {
  return LLVMBuildICmp(E->b, LLVMIntEQ, tid, c32(E, 0), "");
}

static void barrier(ne *E) { LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, ""); }

static void release_add(ne *E, LLVMValueRef addr) {
  LLVMValueRef a[1] = {addr};
  asm_call(E, E->voidt, "red.release.gpu.global.add.u32 [$0], 1;", "l,~{memory}", a, 1);
}

/* Adds 1 to the counter at addr (relaxed): its old value. */
static LLVMValueRef count_in(ne *E, LLVMValueRef addr) {
  LLVMValueRef a[1] = {addr};
  return asm_call(E, E->i32, "atom.relaxed.gpu.global.add.u32 $0, [$1], 1;", "=r,l,~{memory}", a, 1);
}

static void store_zero(ne *E, LLVMValueRef addr) {
  LLVMValueRef a[1] = {addr};
  asm_call(E, E->voidt, "st.relaxed.gpu.global.u32 [$0], 0;", "l,~{memory}", a, 1);
}

/* The calling thread polls the counter at addr until it is at least need,
 * then fences (acquire); a trap after 30 s. */
static void spin_until(ne *E, LLVMValueRef addr, uint64_t need) {
  LLVMValueRef t0 = asm_call(E, E->i64, "mov.u64 $0, %globaltimer;", "=l,~{memory}", NULL, 0);
  LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(E->c, E->fn, "spin");
  LLVMBasicBlockRef late = LLVMAppendBasicBlockInContext(E->c, E->fn, "spin.late");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(E->c, E->fn, "spin.done");
  LLVMBuildBr(E->b, spin);
  LLVMPositionBuilderAtEnd(E->b, spin);
  LLVMValueRef a[1] = {addr};
  LLVMValueRef v = asm_call(E, E->i32, "ld.relaxed.gpu.global.u32 $0, [$1];", "=r,l,~{memory}", a, 1);
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntUGE, v, c32(E, need), ""), go, late);
  LLVMPositionBuilderAtEnd(E->b, late);
  LLVMValueRef now = asm_call(E, E->i64, "mov.u64 $0, %globaltimer;", "=l,~{memory}", NULL, 0);
  LLVMValueRef over = LLVMBuildICmp(E->b, LLVMIntUGT, LLVMBuildSub(E->b, now, t0, ""),
                                    c64(E, UINT64_C(30000000000)), "");
  LLVMBasicBlockRef jt = begin_if(E, over, "spin.trap");
  asm_call(E, E->voidt, "trap;", "~{memory}", NULL, 0);
  end_if(E, jt);
  LLVMBuildBr(E->b, spin); /* (the trap's join block polls again) */
  LLVMPositionBuilderAtEnd(E->b, go);
  asm_call(E, E->voidt, "fence.acq_rel.gpu;", "~{memory}", NULL, 0);
}

/* own = 1: thread 0 waits for the counter at the address addr_of(E, blk)
 * builds, the block after it; own = 0: griddepcontrol.wait. */
static void wait_count(ne *E, LLVMValueRef tid, LLVMValueRef (*addr_of)(ne *, LLVMValueRef),
                       LLVMValueRef blk, uint64_t need) {
  LLVMBasicBlockRef grid = LLVMAppendBasicBlockInContext(E->c, E->fn, "wait.grid");
  LLVMBasicBlockRef rows = LLVMAppendBasicBlockInContext(E->c, E->fn, "wait.row");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->c, E->fn, "wait.done");
  LLVMBuildCondBr(E->b, owned(E), rows, grid);
  LLVMPositionBuilderAtEnd(E->b, grid);
  grid_dep(E, "griddepcontrol.wait;");
  LLVMBuildBr(E->b, done);
  LLVMPositionBuilderAtEnd(E->b, rows);
  LLVMBasicBlockRef j0 = begin_if(E, is_tid0(E, tid), "wait.t0");
  spin_until(E, addr_of(E, blk), need);
  end_if(E, j0);
  barrier(E);
  LLVMBuildBr(E->b, done);
  LLVMPositionBuilderAtEnd(E->b, done);
}

/* ------------------------------------------------------------- rowsync */

static LLVMValueRef rowdone_of(ne *E, LLVMValueRef blk) {
  return row_counter_addr(E, "rowdone", block_row(E, blk));
}

/* Kernel 0, after its last store: the block counts itself done. Kernel 0
 * writes nothing but dst, whose rows the blocks of one row own, so no
 * other ordering is needed. */
static void row_signal(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  LLVMBasicBlockRef j1 = begin_if(E, owned(E), "signal");
  barrier(E);
  LLVMBasicBlockRef j2 = begin_if(E, is_tid0(E, tid), "signal.t0");
  release_add(E, rowdone_of(E, blk));
  end_if(E, j2);
  end_if(E, j1);
}

/* Kernel 1, at its end (off the path to its first access): the block counts
 * itself in rowused[row]; the row's last one sets both counts back to zero
 * for the next launch (whose kernel 0 counts only after this kernel has
 * completed). */
static void row_release(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_plan *P = E->P;
  uint64_t users = (uint64_t)(P->k[1].blocks / P->batch_rows);
  LLVMBasicBlockRef j1 = begin_if(E, owned(E), "release");
  LLVMBasicBlockRef j2 = begin_if(E, is_tid0(E, tid), "release.t0");
  LLVMValueRef row = block_row(E, blk);
  LLVMValueRef da = row_counter_addr(E, "rowdone", row), ua = row_counter_addr(E, "rowused", row);
  LLVMValueRef old = count_in(E, ua);
  LLVMBasicBlockRef jr = begin_if(E, LLVMBuildICmp(E->b, LLVMIntEQ, old, c32(E, users - 1), ""), "reset");
  LLVMValueRef both[2] = {da, ua};
  asm_call(E, E->voidt, "st.relaxed.gpu.global.u32 [$0], 0;\n\tst.relaxed.gpu.global.u32 [$1], 0;",
           "l,l,~{memory}", both, 2);
  end_if(E, jr);
  end_if(E, j2);
  end_if(E, j1);
}

void lw_ne_wait_for_kernel0(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_plan *P = E->P;
  if (E->K->pdl == 2) wait_count(E, tid, rowdone_of, blk, (uint64_t)(P->k[0].blocks / P->batch_rows));
  else grid_dep(E, "griddepcontrol.wait;");
}

/* -------------------------------------------------------------- ipsync */

static int is_last(const ne *E) { return E->K == &E->P->k[E->P->nkernels - 1]; }
static int is_first(const ne *E) { return E->K == &E->P->k[0]; }
static int sync_signals(const ne *E) { return E->P->sync_role == 1 && is_last(E) && E->red_active; }
static int sync_waits(const ne *E) { return E->P->sync_role == 2 && is_first(E); }

int lw_ne_has_own(const ne *E) {
  return E->target == LW_GPU && (E->K->pdl == 2 || sync_signals(E) || sync_waits(E));
}

LLVMValueRef lw_ne_sync_first(ne *E, LLVMValueRef blk) {
  /* the counted rows first (ntt_emit_chain.c) */
  return sync_signals(E) ? lw_ne_rows_first(E, blk, E->P->sync_row0) : blk;
}

/* The waiting kernel's block's counter: its batch row's row of the sum. */
static LLVMValueRef sync_row_of(ne *E, LLVMValueRef blk) {
  LLVMValueRef r = LLVMBuildURem(E->b, block_row(E, blk), c64(E, (uint64_t)E->P->sync_rows), "");
  return sync_addr(E, r);
}

void lw_ne_entry_wait(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  if (sync_waits(E)) wait_count(E, tid, sync_row_of, blk, (uint64_t)E->P->sync_need);
  else grid_dep(E, "griddepcontrol.wait;");
}

/* The reduce kernel, after its last access: the block counts itself in its
 * row's count (a counted row) and in the total. */
static void sync_signal(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_plan *P = E->P;
  LLVMBasicBlockRef j1 = begin_if(E, owned(E), "sync.signal");
  barrier(E);
  LLVMBasicBlockRef j2 = begin_if(E, is_tid0(E, tid), "sync.signal.t0");
  LLVMValueRef orow = LLVMBuildUDiv(E->b, blk, c64(E, (uint64_t)P->sync_need), "");
  LLVMValueRef i = LLVMBuildSub(E->b, orow, c64(E, (uint64_t)P->sync_row0), "");
  LLVMBasicBlockRef jr = begin_if(E, LLVMBuildICmp(E->b, LLVMIntULT, i, c64(E, (uint64_t)P->sync_rows), ""), "sync.row");
  release_add(E, sync_addr(E, i));
  end_if(E, jr);
  release_add(E, sync_addr(E, c64(E, (uint64_t)P->sync_rows)));
  end_if(E, j2);
  end_if(E, j1);
}

/* The waiting kernel, before it ends: thread 0 waits for the reduce
 * kernel's total (so this kernel's completion implies the reduce kernel's,
 * as a grid-wide wait would) and counts the block done with the counters;
 * the last one sets them all back to zero. */
static void sync_finish(ne *E, LLVMValueRef tid) {
  const lw_ntt_plan *P = E->P;
  int64_t rows = P->sync_rows;
  LLVMBasicBlockRef j1 = begin_if(E, owned(E), "sync.finish");
  LLVMBasicBlockRef j2 = begin_if(E, is_tid0(E, tid), "sync.finish.t0");
  spin_until(E, sync_addr(E, c64(E, (uint64_t)rows)), (uint64_t)P->sync_total);
  LLVMValueRef old = count_in(E, sync_addr(E, c64(E, (uint64_t)rows + 1)));
  LLVMValueRef last = LLVMBuildICmp(E->b, LLVMIntEQ, old, c32(E, (uint64_t)E->K->blocks - 1), "");
  LLVMBasicBlockRef jr = begin_if(E, last, "sync.reset");
  for (int64_t i = 0; i < rows + 2; i++) store_zero(E, sync_addr(E, c64(E, (uint64_t)i)));
  end_if(E, jr);
  end_if(E, j2);
  end_if(E, j1);
}

void lw_ne_kernel_end(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  if (sync_signals(E)) sync_signal(E, tid, blk);
  if (sync_waits(E)) sync_finish(E, tid);
  if (is_first(E) && E->K->pdl == 2) row_signal(E, tid, blk);
  if (!is_first(E) && E->K->pdl == 2) row_release(E, tid, blk);
}
