/* ntt_emit_chain.c: ipchain, an inverse NTT's first kernel run inside the
 * reduce kernel that computed its source (mixsteps_ipchain.c plans it).
 *
 * A key switch's reduce kernel (ipfuse, ntt_emit_fuse.c) stores the inner
 * product S, whose P rows moddown transforms back at once: an inverse NTT
 * whose first kernel is a chunk kernel reading contiguous words of a row,
 * the same words a reduce block has just stored. So a reduce block whose
 * output row is one of them goes on, after a barrier (which also makes the
 * block's global stores visible to its threads), with the phases of that
 * kernel on the blocks of it that lie in its own words (of every
 * component of S), reading S where it stored it (the L1/L2, not memory),
 * writing the inverse NTT's intermediate buffer; the inverse NTT's second
 * kernel then starts after the reduce kernel as after its own first. One
 * launch, 2 x rows x N words of reads and writes and the tail of a kernel
 * less (r32 key switch: 24 rows).
 *
 * The chained phases are ntt_emit_phase.c's own, run by a second emitter
 * state over the same function, builder and shared memory (chain_state):
 * the same IR as the standalone kernel, so the same words. The reduce
 * kernel's blocks of the chained rows do about twice the work of the
 * others, so on the GPU they run first (lw_ne_rows_first), not in the
 * grid's last wave. */
#include "lower/ntt_emit.h"

int lw_ne_chain_active(const ne *E) { return E->red_active && E->pro && E->pro->chain; }

int lw_ntt_chain_fits(const lw_ntt_plan *p, const lw_ntt_plan *chain, int64_t row0) {
  if (p->nkernels < 1 || p->reduce_members <= 0 || !chain || chain->nkernels != 2) return 0;
  const lw_ntt_kplan *r = &p->k[p->nkernels - 1], *k = &chain->k[0];
  if (chain->radix != p->radix || chain->log_n != p->log_n || ir_ntt_is_forward(chain->kind) ||
      k->cluster || k->cols || k->in_place || chain->lift || chain->dst_offset || chain->pro_rows ||
      k->threads != r->threads || k->log_c > k->log_subs || r->log_c > r->log_subs ||
      k->log_c + k->m > r->log_c + r->m || p->batch_rows != p->rows)
    return 0;
  return lw_ntt_reads_sum_rows(chain, p->reduce_rows, row0);
}

int lw_ntt_reads_sum_rows(const lw_ntt_plan *n, int64_t out_rows, int64_t row0) {
  if (n->src_index_stride != 1 || n->rows <= 0 || n->batch_rows % n->rows || row0 < 0 ||
      row0 + n->rows > out_rows)
    return 0;
  int64_t len = INT64_C(1) << n->log_n;
  for (int64_t b = 0; b < n->batch_rows; b++) {
    int64_t off = n->src_offset, rest = b;
    for (int a = n->src_nax - 1; a >= 0; a--) {
      off += rest % n->src_ext[a] * n->src_stride[a];
      rest /= n->src_ext[a];
    }
    int64_t c = b / n->rows, r = b % n->rows;
    if (rest || off != (c * out_rows + row0 + r) * len) return 0;
  }
  return 1;
}

int lw_ne_chain_params(ne *E, LLVMValueRef fn, int j) {
  static const char *const names[LW_NTT_CHAIN_ARGS] = {"chain.tw", "chain.src", "chain.dst"};
  LLVMValueRef *at[LW_NTT_CHAIN_ARGS] = {&E->chain_tw, &E->chain_src, &E->chain_dst};
  for (int i = 0; i < LW_NTT_CHAIN_ARGS; i++, j++) {
    *at[i] = LLVMGetParam(fn, (unsigned)j);
    LLVMSetValueName2(*at[i], names[i], strlen(names[i]));
    param_attr(E, fn, (unsigned)j, "nocapture");
    /* the source is the sum the kernel stores (epilogue 0's output):
     * neither noalias nor read-only */
    if (i == 1) continue;
    param_attr(E, fn, (unsigned)j, "noalias");
    if (i == 0) param_attr(E, fn, (unsigned)j, "readonly");
  }
  return j;
}

/* Blocks per output row of the reduce kernel (log2). */
static int log_bpr(const ne *E) { return E->K->log_subs - E->K->log_c; }

LLVMValueRef lw_ne_rows_first(ne *E, LLVMValueRef blk, int64_t row0) {
  /* block x runs output block (x + row0 bpr) mod blocks: rows row0.. first */
  uint64_t shift = (uint64_t)row0 << log_bpr(E);
  LLVMValueRef x = LLVMBuildNUWAdd(E->b, blk, c64(E, shift), "");
  return LLVMBuildURem(E->b, x, c64(E, (uint64_t)E->K->blocks), "rowsfirst");
}

/* The emitter state of the chained plan's kernel 0 over E's function,
 * builder and shared memory. */
static ne chain_state(const ne *E) {
  ne C = *E;
  C.P = E->pro->chain;
  C.K = &C.P->k[0];
  C.pro = NULL;
  C.pro_active = C.epi_active = C.red_active = 0;
  C.red_k = -1;
  C.src_view = 1;
  C.src_dense = lw_ne_src_is_dense(C.P);
  C.tw = E->chain_tw, C.src = E->chain_src, C.dst = E->chain_dst;
  C.preloaded = 0;
  C.own = NULL;
  return C;
}

/* The chained kernel's phases on its block blk2: a barrier before each
 * (the first separates them from the epilogue's stores and the previous
 * block's shared words); on the host, each phase a loop over the
 * threads. */
static void chain_block(ne *C, LLVMValueRef tid, LLVMValueRef blk2) {
  for (int ph = 0; ph < lw_ne_num_phases(C->K); ph++) {
    if (C->target == LW_HOST) {
      loop t = lw_ne_loop_begin(C, c32(C, 0), C->i32, "chain.thread");
      lw_ne_emit_phase(C, ph, t.iv, blk2);
      lw_ne_loop_end(C, &t, c32(C, C->K->threads), "chain.phase_done");
      continue;
    }
    LLVMBuildCall2(C->b, C->barrier_ty, C->barrier_fn, NULL, 0, "");
    lw_ne_emit_phase(C, ph, tid, blk2);
  }
}

void lw_ne_chain(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  ne C = chain_state(E);
  const lw_ntt_plan *cp = C.P;
  LLVMBuilderRef b = E->b;
  LLVMValueRef orow = LLVMBuildLShr(b, blk, c64(E, (uint64_t)log_bpr(E)), "chain.orow");
  LLVMValueRef inblk = LLVMBuildAnd(b, blk, c64(E, (UINT64_C(1) << log_bpr(E)) - 1), "");
  LLVMValueRef rel = LLVMBuildSub(b, orow, c64(E, (uint64_t)E->pro->chain_row0), "chain.r");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(E->c, E->fn, "chain.run");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(E->c, E->fn, "chain.join");
  /* uniform per block: the barriers inside stay uniform */
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, rel, c64(E, (uint64_t)cp->rows), ""), run, join);
  LLVMPositionBuilderAtEnd(b, run);
  /* the chained kernel's blocks in this one: 2^ratio per row of it */
  int ratio = (E->K->log_c + E->K->m) - (C.K->log_c + C.K->m);
  int log_bpr2 = C.K->log_subs - C.K->log_c;
  for (int64_t c = 0; c < cp->batch_rows / cp->rows; c++)
    for (int j = 0; j < 1 << ratio; j++) {
      LLVMValueRef br = LLVMBuildNUWAdd(b, rel, c64(E, (uint64_t)(c * cp->rows)), "");
      LLVMValueRef sub = LLVMBuildOr(b, LLVMBuildShl(b, inblk, c64(E, (uint64_t)ratio), ""),
                                     c64(E, (uint64_t)j), "");
      LLVMValueRef blk2 = LLVMBuildOr(b, LLVMBuildShl(b, br, c64(E, (uint64_t)log_bpr2), ""),
                                      sub, "chain.blk");
      chain_block(&C, tid, blk2);
    }
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
}
