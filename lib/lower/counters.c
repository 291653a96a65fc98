/* counters.c: counts between the kernels of a program (counters.h says the
 * scheme): the counter arrays, the PTX of their accesses, the wait, and
 * lw_sync's producer and waiter parts. */
#include <stdio.h>

#include "lower/arith.h"
#include "lower/counters.h"

static LLVMTypeRef i32_of(const lw_cnt *C) { return LLVMInt32TypeInContext(C->c); }
static LLVMTypeRef i64_of(const lw_cnt *C) { return LLVMInt64TypeInContext(C->c); }
static LLVMValueRef k32(const lw_cnt *C, uint64_t v) { return LLVMConstInt(i32_of(C), v, 0); }
static LLVMValueRef k64(const lw_cnt *C, uint64_t v) { return LLVMConstInt(i64_of(C), v, 0); }

/* A call of inline PTX `text` with side effects (arith.c's lw_asm). */
static LLVMValueRef ptx(const lw_cnt *C, LLVMTypeRef ret, const char *text, const char *cons,
                        LLVMValueRef *args, unsigned n) {
  return lw_asm(C->b, ret, text, cons, args, n);
}

static LLVMValueRef ptx_void(const lw_cnt *C, const char *text, const char *cons,
                             LLVMValueRef *args, unsigned n) {
  return ptx(C, LLVMVoidTypeInContext(C->c), text, cons, args, n);
}

static LLVMValueRef counter_array(const lw_cnt *C, const char *name, int64_t n) {
  LLVMValueRef g = LLVMGetNamedGlobal(C->m, name);
  if (!g) {
    LLVMTypeRef arr = LLVMArrayType2(i32_of(C), (uint64_t)n);
    g = LLVMAddGlobalInAddressSpace(C->m, arr, name, 1);
    LLVMSetInitializer(g, LLVMConstNull(arr));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 4);
  }
  return g;
}

LLVMValueRef lw_cnt_addr(const lw_cnt *C, const char *name, int64_t n, LLVMValueRef i) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(C->b, i32_of(C), counter_array(C, name, n), &i, 1, "");
  return LLVMBuildPtrToInt(C->b, p, i64_of(C), "");
}

LLVMBasicBlockRef lw_cnt_if(const lw_cnt *C, LLVMValueRef cond, const char *name) {
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(C->c, C->fn, name);
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(C->c, C->fn, "join");
  LLVMBuildCondBr(C->b, cond, body, join);
  LLVMPositionBuilderAtEnd(C->b, body);
  return join;
}

void lw_cnt_endif(const lw_cnt *C, LLVMBasicBlockRef join) {
  LLVMBuildBr(C->b, join);
  LLVMPositionBuilderAtEnd(C->b, join);
}

LLVMValueRef lw_cnt_owned(const lw_cnt *C) {
  return LLVMBuildICmp(C->b, LLVMIntNE, C->own, k64(C, 0), "owned");
}

LLVMValueRef lw_cnt_is_tid0(const lw_cnt *C, LLVMValueRef tid) {
  return LLVMBuildICmp(C->b, LLVMIntEQ, tid, k32(C, 0), "");
}

void lw_cnt_barrier(const lw_cnt *C) { LLVMBuildCall2(C->b, C->barrier_ty, C->barrier_fn, NULL, 0, ""); }

void lw_cnt_release_add(const lw_cnt *C, LLVMValueRef addr) {
  LLVMValueRef a[1] = {addr};
  ptx_void(C, "red.release.gpu.global.add.u32 [$0], 1;", "l,~{memory}", a, 1);
}

LLVMValueRef lw_cnt_count_in(const lw_cnt *C, LLVMValueRef addr) {
  LLVMValueRef a[1] = {addr};
  return ptx(C, i32_of(C), "atom.relaxed.gpu.global.add.u32 $0, [$1], 1;", "=r,l,~{memory}", a, 1);
}

void lw_cnt_store_zero(const lw_cnt *C, LLVMValueRef addr) {
  LLVMValueRef a[1] = {addr};
  ptx_void(C, "st.relaxed.gpu.global.u32 [$0], 0;", "l,~{memory}", a, 1);
}

static LLVMValueRef global_timer(const lw_cnt *C) {
  return ptx(C, i64_of(C), "mov.u64 $0, %globaltimer;", "=l,~{memory}", NULL, 0);
}

void lw_cnt_spin_until(const lw_cnt *C, LLVMValueRef addr, uint64_t need) {
  LLVMValueRef t0 = global_timer(C);
  LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(C->c, C->fn, "spin");
  LLVMBasicBlockRef late = LLVMAppendBasicBlockInContext(C->c, C->fn, "spin.late");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(C->c, C->fn, "spin.done");
  LLVMBuildBr(C->b, spin);
  LLVMPositionBuilderAtEnd(C->b, spin);
  LLVMValueRef a[1] = {addr};
  LLVMValueRef v = ptx(C, i32_of(C), "ld.relaxed.gpu.global.u32 $0, [$1];", "=r,l,~{memory}", a, 1);
  LLVMBuildCondBr(C->b, LLVMBuildICmp(C->b, LLVMIntUGE, v, k32(C, need), ""), go, late);
  LLVMPositionBuilderAtEnd(C->b, late);
  LLVMValueRef now = global_timer(C);
  LLVMValueRef over = LLVMBuildICmp(C->b, LLVMIntUGT, LLVMBuildSub(C->b, now, t0, ""),
                                    k64(C, UINT64_C(30000000000)), "");
  LLVMBasicBlockRef jt = lw_cnt_if(C, over, "spin.trap");
  ptx_void(C, "trap;", "~{memory}", NULL, 0);
  lw_cnt_endif(C, jt);
  LLVMBuildBr(C->b, spin); /* (the trap's join block polls again) */
  LLVMPositionBuilderAtEnd(C->b, go);
  ptx_void(C, "fence.acq_rel.gpu;", "~{memory}", NULL, 0);
}

void lw_cnt_wait(const lw_cnt *C, LLVMValueRef tid, LLVMValueRef (*addr_of)(void *, LLVMValueRef),
                 void *arg, LLVMValueRef x, uint64_t need) {
  LLVMBasicBlockRef grid = LLVMAppendBasicBlockInContext(C->c, C->fn, "wait.grid");
  LLVMBasicBlockRef rows = LLVMAppendBasicBlockInContext(C->c, C->fn, "wait.row");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(C->c, C->fn, "wait.done");
  LLVMBuildCondBr(C->b, lw_cnt_owned(C), rows, grid);
  LLVMPositionBuilderAtEnd(C->b, grid);
  lw_grid_dep(C->c, C->b, "griddepcontrol.wait;");
  LLVMBuildBr(C->b, done);
  LLVMPositionBuilderAtEnd(C->b, rows);
  LLVMBasicBlockRef j0 = lw_cnt_if(C, lw_cnt_is_tid0(C, tid), "wait.t0");
  lw_cnt_spin_until(C, addr_of(arg, x), need);
  lw_cnt_endif(C, j0);
  lw_cnt_barrier(C);
  LLVMBuildBr(C->b, done);
  LLVMPositionBuilderAtEnd(C->b, done);
}

/* ------------------------------------------------------------- lw_sync */

typedef struct sync_at {
  const lw_cnt *C;
  const lw_sync *s;
} sync_at;

/* Counter i (i64) of s. */
static LLVMValueRef sync_addr(const lw_cnt *C, const lw_sync *s, LLVMValueRef i) {
  char nm[48];
  snprintf(nm, sizeof nm, "fhjit_sync%d", s->id);
  return lw_cnt_addr(C, nm, s->rows + 2, i);
}

void lw_cnt_sync_signal(const lw_cnt *C, const lw_sync *s, LLVMValueRef tid, LLVMValueRef blk) {
  LLVMBasicBlockRef j1 = lw_cnt_if(C, lw_cnt_owned(C), "sync.signal");
  lw_cnt_barrier(C);
  LLVMBasicBlockRef j2 = lw_cnt_if(C, lw_cnt_is_tid0(C, tid), "sync.signal.t0");
  LLVMValueRef part = LLVMBuildUDiv(C->b, blk, k64(C, (uint64_t)s->need), "");
  LLVMValueRef i = LLVMBuildSub(C->b, part, k64(C, (uint64_t)s->row0), "");
  LLVMBasicBlockRef jr = lw_cnt_if(C, LLVMBuildICmp(C->b, LLVMIntULT, i, k64(C, (uint64_t)s->rows), ""), "sync.row");
  lw_cnt_release_add(C, sync_addr(C, s, i));
  lw_cnt_endif(C, jr);
  lw_cnt_release_add(C, sync_addr(C, s, k64(C, (uint64_t)s->rows)));
  lw_cnt_endif(C, j2);
  lw_cnt_endif(C, j1);
}

/* The counter batch row r waits for: (r / div) % rows. */
static LLVMValueRef wait_addr(void *arg, LLVMValueRef r) {
  const sync_at *w = arg;
  const lw_cnt *C = w->C;
  if (w->s->div > 1) r = LLVMBuildUDiv(C->b, r, k64(C, (uint64_t)w->s->div), "");
  return sync_addr(C, w->s, LLVMBuildURem(C->b, r, k64(C, (uint64_t)w->s->rows), ""));
}

void lw_cnt_sync_wait(const lw_cnt *C, const lw_sync *s, LLVMValueRef tid, LLVMValueRef brow) {
  sync_at w = {C, s};
  lw_cnt_wait(C, tid, wait_addr, &w, brow, (uint64_t)s->need);
}

void lw_cnt_sync_finish(const lw_cnt *C, const lw_sync *s, LLVMValueRef tid, uint64_t blocks) {
  LLVMBasicBlockRef j1 = lw_cnt_if(C, lw_cnt_owned(C), "sync.finish");
  LLVMBasicBlockRef j2 = lw_cnt_if(C, lw_cnt_is_tid0(C, tid), "sync.finish.t0");
  lw_cnt_spin_until(C, sync_addr(C, s, k64(C, (uint64_t)s->rows)), (uint64_t)s->total);
  LLVMValueRef old = lw_cnt_count_in(C, sync_addr(C, s, k64(C, (uint64_t)s->rows + 1)));
  LLVMValueRef last = LLVMBuildICmp(C->b, LLVMIntEQ, old, k32(C, blocks - 1), "");
  LLVMBasicBlockRef jr = lw_cnt_if(C, last, "sync.reset");
  for (int64_t i = 0; i < s->rows + 2; i++) lw_cnt_store_zero(C, sync_addr(C, s, k64(C, (uint64_t)i)));
  lw_cnt_endif(C, jr);
  lw_cnt_endif(C, j2);
  lw_cnt_endif(C, j1);
}
