/* counters.h: counts between the kernels of a program (prefix lw_cnt_):
 * the blocks of one kernel count themselves done in i32 counters that are
 * globals of the module, and the blocks of a later kernel wait for the
 * count they need in place of the grid-wide griddepcontrol.wait (sm_90,
 * dependent launches). The NTT emitter (ntt_emit_sync.c: rowsync, and the
 * waiting side of lw_sync) and the conversion kernel (bconv.c: a counting
 * side) emit them; the planner decides where (mixsteps_ipsync.c).
 *
 * The scheme: a counting block adds itself after its last store (a
 * barrier, then thread 0's release); a waiting block's thread 0 polls with
 * relaxed loads, then fences (acquire: an acquire load would invalidate
 * the SM's L1 at every poll), and the block follows it through a barrier.
 * The last reader of a count sets it back to zero for the next launch, so
 * no two launches that use one counter may overlap: the runtime passes
 * own = 1 (LW_ARG_OWN) only on the program's home stream (launch.c), and
 * with own = 0 no block counts and every waiting one takes the grid-wide
 * wait. A count that never completes ends in a trap after 30 s rather
 * than a hang. */
#ifndef FHJIT_LOWER_COUNTERS_H
#define FHJIT_LOWER_COUNTERS_H

#include <stdint.h>

#include <llvm-c/Core.h>

/* One edge counted per part of the producer's output (a plan's field):
 * counters "fhjit_sync<id>", rows + 2 of them: one per counted part, then
 * the producer's total, then the waiting kernel's blocks done with them.
 *   producer: its block b (in the order it runs them) counts in counter
 *     b / need - row0 when that is in [0, rows), and in the total;
 *   waiter: its block of batch row r waits for counter (r / div) % rows to
 *     reach need, and before it ends for the total to reach total; with
 *     rev its grid's block x runs block blocks - 1 - x (the producer's
 *     last parts are then the first it reads).
 * on 0: no counts (the grid-wide wait). */
typedef struct lw_sync {
  int on, id, rev;
  int64_t row0, rows, div, need, total;
} lw_sync;

/* What the emitters need: the function being built and its LW_ARG_OWN
 * argument, the builder, and the barrier intrinsic. */
typedef struct lw_cnt {
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMValueRef fn, own;
  LLVMValueRef barrier_fn;
  LLVMTypeRef barrier_ty;
} lw_cnt;

/* The address (i64) of entry i (i64) of the module's counter array `name`
 * of n entries (created zero on first use). */
LLVMValueRef lw_cnt_addr(const lw_cnt *C, const char *name, int64_t n, LLVMValueRef i);
/* Branches on cond: returns the join block, the builder in the then-block;
 * lw_cnt_endif closes it. */
LLVMBasicBlockRef lw_cnt_if(const lw_cnt *C, LLVMValueRef cond, const char *name);
void lw_cnt_endif(const lw_cnt *C, LLVMBasicBlockRef join);
/* own != 0; tid == 0 (i32); a block barrier. */
LLVMValueRef lw_cnt_owned(const lw_cnt *C);
LLVMValueRef lw_cnt_is_tid0(const lw_cnt *C, LLVMValueRef tid);
void lw_cnt_barrier(const lw_cnt *C);
/* red.release add of 1; a relaxed add of 1 returning the old value; a
 * relaxed store of 0 (addr: i64). */
void lw_cnt_release_add(const lw_cnt *C, LLVMValueRef addr);
LLVMValueRef lw_cnt_count_in(const lw_cnt *C, LLVMValueRef addr);
void lw_cnt_store_zero(const lw_cnt *C, LLVMValueRef addr);
/* The calling thread polls the counter at addr until it is at least need,
 * then fences (acquire); a trap after 30 s. */
void lw_cnt_spin_until(const lw_cnt *C, LLVMValueRef addr, uint64_t need);
/* own = 1: thread 0 waits for the counter at the address addr_of(arg, x)
 * builds (only there), the block after it; own = 0: griddepcontrol.wait. */
void lw_cnt_wait(const lw_cnt *C, LLVMValueRef tid, LLVMValueRef (*addr_of)(void *, LLVMValueRef),
                 void *arg, LLVMValueRef x, uint64_t need);

/* lw_sync's three parts (s->on): the producer's block blk (i64) counts
 * itself after its last access; the waiter's block of batch row brow (i64)
 * waits; the waiter's block, before it ends, waits for the total and
 * counts itself done, the last of its `blocks` blocks setting the counters
 * back to zero. */
void lw_cnt_sync_signal(const lw_cnt *C, const lw_sync *s, LLVMValueRef tid, LLVMValueRef blk);
void lw_cnt_sync_wait(const lw_cnt *C, const lw_sync *s, LLVMValueRef tid, LLVMValueRef brow);
void lw_cnt_sync_finish(const lw_cnt *C, const lw_sync *s, LLVMValueRef tid, uint64_t blocks);

#endif
