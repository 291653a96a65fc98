/* bconv_scalar.c: the basis conversion kernel's scalar form, phase 1
 * (bconv.c's file comment: the shape and why each sum is exact): a
 * thread's source words loaded before phase 0, then its target rows, each
 * an exact sum of l products reduced once, stored dense. */
#include "lower/bconv_emit.h"
#include "lower/bconv_layout.h"

/* Loads `n` words from shared memory at constant-aligned index idx (a
 * multiple of E->V words): whole 16-byte vectors. */
static void sload_words(bc *E, LLVMValueRef idx, int n, LLVMValueRef *out) {
  LLVMTypeRef vt = LLVMVectorType(E->W, (unsigned)E->V);
  for (int b = 0; b < n; b += E->V) {
    LLVMValueRef at = LLVMBuildNUWAdd(E->b, idx, c64(E, (uint64_t)b), "");
    LLVMValueRef v = load_at(E, vt, E->smem, at, 16, "cv");
    for (int e = 0; e < E->V && b + e < n; e++)
      out[b + e] = LLVMBuildExtractElement(E->b, v, c32(E, (uint64_t)e), "");
  }
}

static int src_vectorizable(const lw_bconv_plan *p) {
  if (p->vec == 1 || p->src_index_stride != 1) return 0;
  if (p->src_offset % p->vec || p->src_row_stride % p->vec) return 0;
  for (int k = 1; k < p->digits; k++)
    if (p->more[k - 1].src_offset % p->vec) return 0;
  for (int a = 0; a < p->src_nax; a++)
    if (p->src_ext[a] > 1 && p->src_stride[a] % p->vec) return 0;
  return 1;
}

/* The work item and its source words. Issued before phase 0 on the GPU:
 * the words' memory latency overlaps the constants' (a thread past the
 * last item loads the last item's words and stores nothing). */
void lw_bc_phase1_load(bc *E, LLVMValueRef tid, LLVMValueRef blk, p1 *S) {
  const lw_bconv_plan *p = E->P;
  int l = p->l, vec = p->vec;
  int64_t n = INT64_C(1) << p->log_n, per = n / vec;
  int64_t items = p->polys * p->split * per;
  S->item = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, blk, c64(E, p->threads), ""),
                            zext(E, tid, E->i64), "item");
  LLVMValueRef item = lw_bc_umin(E, S->item, c64(E, (uint64_t)(items - 1)));
  LLVMValueRef rest = LLVMBuildUDiv(E->b, item, c64(E, (uint64_t)per), "");
  S->i0 = LLVMBuildNUWMul(E->b, LLVMBuildURem(E->b, item, c64(E, (uint64_t)per), ""),
                          c64(E, (uint64_t)vec), "i0");
  if (p->split > 1) {
    S->g = LLVMBuildURem(E->b, rest, c64(E, (uint64_t)p->split), "g");
    S->poly = LLVMBuildUDiv(E->b, rest, c64(E, (uint64_t)p->split), "poly");
  } else {
    S->g = c64(E, 0);
    S->poly = rest;
  }
  LLVMValueRef off = LLVMBuildAdd(E->b, lw_bc_poly_offset(E, S->poly),
                                  LLVMBuildMul(E->b, S->i0, c64(E, (uint64_t)p->src_index_stride), ""),
                                  "off");
  int vload = E->target == LW_GPU && src_vectorizable(p);
  LLVMTypeRef vt = LLVMVectorType(E->W, (unsigned)vec);
  for (int r = 0; r < l; r++) {
    LLVMValueRef roff = LLVMBuildAdd(E->b, off, c64(E, (uint64_t)(r * p->src_row_stride)), "");
    if (vload) {
      LLVMValueRef x = load_at(E, vt, E->src, roff, (unsigned)(vec * E->wbits / 8), "w");
      for (int e = 0; e < vec; e++)
        S->w[r][e] = LLVMBuildExtractElement(E->b, x, c32(E, (uint64_t)e), "");
    } else {
      for (int e = 0; e < vec; e++) {
        LLVMValueRef at = LLVMBuildAdd(E->b, roff, c64(E, (uint64_t)(e * p->src_index_stride)), "");
        S->w[r][e] = load_at(E, E->W, E->src, at, walign(E), "w");
      }
    }
  }
}

/* `rows` consecutive target rows from row j: their sums for each of the
 * thread's coefficients in lockstep, then their stores. */
static void target_rows(bc *E, LLVMValueRef v[][4], LLVMValueRef dbase, LLVMValueRef j,
                        int rows) {
  const lw_bconv_plan *p = E->P;
  int l = p->l, vec = p->vec;
  int64_t n = INT64_C(1) << p->log_n;
  LLVMValueRef tf[8][8], cv[8][LW_BCONV_MAX_L + 4], col[4][LW_BCONV_MAX_L];
  tgt T[8];
  const tgt *Tp[LW_BC_MAX_SUMS];
  LLVMValueRef *vp[LW_BC_MAX_SUMS], *cp[LW_BC_MAX_SUMS], z[LW_BC_MAX_SUMS];
  for (int e = 0; e < vec; e++)
    for (int r = 0; r < l; r++) col[e][r] = v[r][e];
  for (int u = 0; u < rows; u++) {
    LLVMValueRef ju = u ? LLVMBuildNUWAdd(E->b, j, c64(E, (uint64_t)u), "") : j;
    sload_words(E, lw_bc_shared_idx(E, tgt_base(p), ju, TGT_WORDS, 0), TGT_WORDS, tf[u]);
    T[u] = (tgt){tf[u][0], tf[u][1], tf[u][2], E->wbits == 64 ? tf[u][2] : tf[u][3]};
    sload_words(E, lw_bc_shared_idx(E, c_base(p), ju, crow_words(p), 0), l, cv[u]);
    for (int e = 0; e < vec; e++) {
      Tp[u * vec + e] = &T[u];
      vp[u * vec + e] = col[e];
      cp[u * vec + e] = cv[u];
    }
  }
  lw_bc_dot_reduce_n(E, Tp, vp, cp, l, rows * vec, z);
  LLVMTypeRef vt = LLVMVectorType(E->W, (unsigned)vec);
  for (int u = 0; u < rows; u++) {
    LLVMValueRef *zu = z + u * vec;
    if (p->lift) /* Z - (h mod t), + t when negative */
      for (int e = 0; e < vec; e++) {
        LLVMValueRef d = LLVMBuildSub(E->b, zu[e], T[u].hm, "");
        LLVMValueRef d2 = LLVMBuildAdd(E->b, d, T[u].t, "");
        zu[e] = E->wbits == 32 ? lw_bc_umin(E, d, d2)
                               : LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntULT, zu[e], T[u].hm, ""),
                                                 d2, d, "");
      }
    LLVMValueRef ju = u ? LLVMBuildNUWAdd(E->b, j, c64(E, (uint64_t)u), "") : j;
    LLVMValueRef at = LLVMBuildNUWAdd(E->b, dbase, LLVMBuildNUWMul(E->b, ju, c64(E, (uint64_t)n), ""), "");
    if (vec > 1 && E->target == LW_GPU) {
      LLVMValueRef x = LLVMGetUndef(vt);
      for (int e = 0; e < vec; e++) x = LLVMBuildInsertElement(E->b, x, zu[e], c32(E, (uint64_t)e), "");
      store_at(E, x, E->dst, at, (unsigned)(vec * E->wbits / 8));
    } else {
      for (int e = 0; e < vec; e++)
        store_at(E, zu[e], E->dst, LLVMBuildNUWAdd(E->b, at, c64(E, (uint64_t)e), ""), walign(E));
    }
  }
}

/* After phase 0: V of the source words, then the thread's target rows
 * [g mc, min((g + 1) mc, m)), mc = ceil(m / split), `unroll` at a time
 * and the rest one by one. */
void lw_bc_phase1_compute(bc *E, p1 *S) {
  const lw_bconv_plan *p = E->P;
  int l = p->l, vec = p->vec, U = p->unroll;
  int64_t n = INT64_C(1) << p->log_n, per = n / vec;
  int64_t items = p->polys * p->split * per;
  int64_t mc = (p->m + p->split - 1) / p->split;
  LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(E->c, E->fn, "work");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->c, E->fn, "done");
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntULT, S->item, c64(E, (uint64_t)items), ""), work,
                  done);
  LLVMPositionBuilderAtEnd(E->b, work);
  LLVMValueRef v[LW_BCONV_MAX_L][4];
  for (int r = 0; r < l; r++) {
    LLVMValueRef sc[SRC_WORDS];
    for (int f = 0; f < SRC_WORDS; f++)
      sc[f] = load_at(E, E->W, E->smem, c64(E, (uint64_t)(r * SRC_WORDS + f)), walign(E), "");
    for (int e = 0; e < vec; e++) {
      if (p->lift) {
        LLVMValueRef q = sc[2], h = LLVMBuildLShr(E->b, q, cw(E, 1), "h");
        LLVMValueRef cc = lw_bc_csub(E, S->w[r][e], q);
        v[r][e] = lw_bc_csub(E, LLVMBuildNUWAdd(E->b, cc, h, ""), q);
      } else {
        LLVMValueRef u = lw_bc_redc_const(E, S->w[r][e], sc[0], sc[1], sc[2]);
        v[r][e] = E->wbits == 64 ? lw_bc_csub(E, u, sc[2]) : u;
      }
    }
  }
  LLVMValueRef dbase = LLVMBuildNUWAdd(E->b, lw_bc_poly_dst(E, S->poly), S->i0, "dbase");
  LLVMValueRef jb = c64(E, 0), je = c64(E, (uint64_t)p->m);
  if (p->split > 1) {
    jb = LLVMBuildNUWMul(E->b, S->g, c64(E, (uint64_t)mc), "jb");
    je = lw_bc_umin(E, LLVMBuildNUWAdd(E->b, jb, c64(E, (uint64_t)mc), ""), c64(E, (uint64_t)p->m));
  }
  LLVMValueRef jm = je; /* the end of the unrolled rows */
  if (U > 1) {
    if (p->split > 1) {
      LLVMValueRef cnt = LLVMBuildNUWSub(E->b, je, jb, "");
      cnt = LLVMBuildNUWMul(E->b, LLVMBuildUDiv(E->b, cnt, c64(E, (uint64_t)U), ""), c64(E, (uint64_t)U), "");
      jm = LLVMBuildNUWAdd(E->b, jb, cnt, "jm");
    } else {
      jm = c64(E, (uint64_t)(p->m / U * U));
    }
  }
  if (U == 1 || p->split > 1 || p->m >= U) {
    loop L = lw_bc_loop_begin(E, jb, jm, "tgt");
    target_rows(E, v, dbase, L.iv, U);
    lw_bc_loop_end(E, &L, c64(E, (uint64_t)U), jm);
  }
  if (U > 1 && (p->split > 1 || p->m % U)) {
    loop L = lw_bc_loop_begin(E, jm, je, "tgt_rest");
    target_rows(E, v, dbase, L.iv, 1);
    lw_bc_loop_end(E, &L, c64(E, 1), je);
  }
  LLVMBuildBr(E->b, done);
  LLVMPositionBuilderAtEnd(E->b, done);
}
