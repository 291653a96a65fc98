/* ntt_cluster.c: the NTT's cluster schedule (lw_ntt_kplan.cluster; design
 * notes in docs/ntt-cluster.md): one kernel, one thread-block cluster of C
 * blocks per batch-row, each word read from global memory once and written
 * once. Block r of a cluster keeps the row's words [r S, (r + 1) S)
 * (S = N / C) in its dynamic shared memory; the stages of the top log C
 * bits (those whose butterflies span blocks) run on columns of C words,
 * one from each block, exchanged once through distributed shared memory;
 * the other log S stages run in passes in the block's own slice.
 *
 *   forward: [cross] global -> registers (pre step), the log C top stages,
 *            st.shared::cluster into the owners' slices (xvec: a thread's U
 *            consecutive columns' words of one block as one vector of up to
 *            16 bytes, the padding stepping by a vector) | cluster barrier |
 *            passes (bar.sync between) | bar.sync | staged store (epilogue)
 *   inverse: staged load (prologue) | bar.sync | passes | cluster barrier |
 *            [cross] ld.shared::cluster, the log C top stages, post step,
 *            stores to global (epilogue), then a cluster barrier before exit
 *
 * With rows_cluster (lw_ntt_kplan.log_rows) a cluster runs 2^log_rows
 * batch-rows in turn, these segments once per row, and with ahead it
 * issues each next row's global loads as cp.async copies into shared
 * memory (the forward's staging area, the inverse's second slice) while
 * the current row's passes run (cl_rows_gpu; measured slower, so off by
 * default: docs/ntt-cluster.md).
 *
 * It uses the emitter's state and its row, arithmetic, fusion and store
 * helpers (ntt_emit.h), so the prologue, the epilogue and the source views
 * are the two kernels' own code. On the host the same segments run as
 * loops: for each cluster, each segment for every block of the cluster and
 * every thread (a segment boundary is both barriers), with the cluster's
 * slices side by side in one shared buffer, so CI checks the schedule's
 * arithmetic and data movement bit for bit; only the PTX forms of the
 * exchange (mapa, ld/st.shared::cluster, barrier.cluster) are the GPU's
 * alone. */
#include <stdio.h>
#include <string.h>

#include "lower/ntt_emit.h"

/* Where a segment runs: the thread, its block's rank in the cluster (= its
 * slice), the cluster's batch-row, and the block's own slice. */
typedef struct clplace {
  LLVMValueRef tid;  /* i32 */
  LLVMValueRef rank; /* i32 */
  LLVMValueRef br;   /* i64 */
  LLVMValueRef own;  /* the slice's first word (shared pointer) */
  /* several rows in turn (log_rows): next, an i1, another row follows
   * this one in the cluster; with ahead (cl_ahead), ahead the place
   * the next row's copies go: the forward's staging area, the inverse's
   * other slice (NULL: one row, or loads in place) */
  LLVMValueRef next;
  LLVMValueRef ahead;
} clplace;

static int cl_log_s(const ne *E) { return E->P->log_n - E->K->cluster; }

/* x + (x >> pad_shift) of a constant and of an i32 (padded()). */
static uint64_t cl_padc(ne *E, uint64_t x) { return lw_ne_padded_const(E, x); }

/* barrier.cluster.arrive (release) or .wait (acquire):
 * every thread of every block of the cluster (GPU only; on the host a
 * segment boundary). */
static void cl_barrier(ne *E, const char *which) {
  if (E->target != LW_GPU) return;
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.barrier.cluster.%s", which);
  LLVMTypeRef fty;
  LLVMValueRef fn = intrinsic(E, name, &fty);
  LLVMBuildCall2(E->b, fty, fn, NULL, 0, "");
}

/* The base of block j's slice (j: i32), for cl_remote_load/store: on the
 * GPU its shared::cluster address (mapa of our own slice's), as an i64; on
 * the host a pointer into the cluster's buffer. */
static LLVMValueRef cl_remote_base(ne *E, const clplace *cp, LLVMValueRef j) {
  LLVMBuilderRef b = E->b;
  if (E->target != LW_GPU) { /* the cluster's blocks' shared memory in rank order */
    LLVMValueRef d = LLVMBuildNSWMul(b, LLVMBuildSExt(b, LLVMBuildSub(b, j, cp->rank, ""), E->i64, ""),
                                     c64(E, E->K->smem_words), "");
    return LLVMBuildGEP2(b, E->W, cp->own, &d, 1, "slice");
  }
  LLVMTypeRef fty;
  LLVMValueRef fn = intrinsic(E, "llvm.nvvm.mapa.shared.cluster", &fty);
  LLVMValueRef args[2] = {cp->own, j};
  LLVMValueRef p = LLVMBuildCall2(b, fty, fn, args, 2, "mapa");
  return LLVMBuildPtrToInt(b, p, E->i64, "slice");
}

/* The shared::cluster address of word idx (i32, padded) of a slice from
 * cl_remote_base (GPU). */
static LLVMValueRef cl_remote_addr(ne *E, LLVMValueRef base, LLVMValueRef idx) {
  LLVMBuilderRef b = E->b;
  return LLVMBuildNUWAdd(
      b, base, LLVMBuildShl(b, LLVMBuildZExt(b, idx, E->i64, ""), c64(E, E->wbits == 64 ? 3 : 2), ""), "");
}

/* The inline PTX of a remote access of w words (1, 2 or 4; w words are at
 * most 16 bytes): "ld.shared::cluster.v2.u64 {$0, $1}, [$2];" and its
 * constraints "=l,=l,l,~{memory}", or st's "[$0], {$1, $2}" with "l,l,l". */
static void cl_remote_asm(ne *E, int is_load, int w, char *text, size_t tsize, char *cons, size_t csize) {
  const char *ty = E->wbits == 64 ? "u64" : "u32";
  char reg = E->wbits == 64 ? 'l' : 'r';
  char vec[16] = "", ops[64] = "";
  size_t used = 0;
  if (w > 1) snprintf(vec, sizeof vec, ".v%d", w);
  int first = is_load ? 0 : 1;
  for (int v = 0; v < w; v++)
    used += (size_t)snprintf(ops + used, sizeof ops - used, "%s$%d", v ? ", " : "", first + v);
  if (is_load)
    snprintf(text, tsize, w > 1 ? "ld.shared::cluster%s.%s {%s}, [$%d];" : "ld.shared::cluster%s.%s %s, [$%d];",
             vec, ty, ops, w);
  else
    snprintf(text, tsize, w > 1 ? "st.shared::cluster%s.%s [$0], {%s};" : "st.shared::cluster%s.%s [$0], %s;",
             vec, ty, ops);
  used = 0;
  if (!is_load) used += (size_t)snprintf(cons, csize, "l,");
  for (int v = 0; v < w; v++) used += (size_t)snprintf(cons + used, csize - used, is_load ? "=%c," : "%c,", reg);
  snprintf(cons + used, csize - used, is_load ? "l,~{memory}" : "~{memory}");
}

/* Words idx .. idx + w - 1 (idx: i32, padded; w words contiguous and, for
 * w > 1, aligned to w words) of a slice from cl_remote_base, into x[]: one
 * access (the host form too: an LLVM vector load of that alignment, which
 * a misaligned index would fault on x86). */
static void cl_remote_load(ne *E, LLVMValueRef base, LLVMValueRef idx, int w, LLVMValueRef *x) {
  LLVMBuilderRef b = E->b;
  if (E->target != LW_GPU) {
    LLVMValueRef i = LLVMBuildZExt(b, idx, E->i64, "");
    if (w == 1) {
      x[0] = load(E, E->W, base, i, walign(E), "x");
      return;
    }
    LLVMValueRef vec = load(E, LLVMVectorType(E->W, (unsigned)w), base, i, (unsigned)w * walign(E), "xv");
    for (int v = 0; v < w; v++) x[v] = LLVMBuildExtractElement(b, vec, c32(E, (uint64_t)v), "x");
    return;
  }
  LLVMValueRef addr = cl_remote_addr(E, base, idx);
  char text[96], cons[64];
  cl_remote_asm(E, 1, w, text, sizeof text, cons, sizeof cons);
  LLVMTypeRef elems[4] = {E->W, E->W, E->W, E->W};
  LLVMTypeRef rty = w == 1 ? E->W : LLVMStructTypeInContext(E->c, elems, (unsigned)w, 0);
  LLVMTypeRef fty = LLVMFunctionType(rty, &E->i64, 1, 0);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMValueRef r = LLVMBuildCall2(b, fty, fn, &addr, 1, "x");
  if (w == 1) x[0] = r;
  else
    for (int v = 0; v < w; v++) x[v] = LLVMBuildExtractValue(b, r, (unsigned)v, "x");
}

/* x[0 .. w) into words idx .. idx + w - 1 of a slice (as cl_remote_load). */
static void cl_remote_store(ne *E, const LLVMValueRef *x, LLVMValueRef base, LLVMValueRef idx, int w) {
  LLVMBuilderRef b = E->b;
  if (E->target != LW_GPU) {
    LLVMValueRef i = LLVMBuildZExt(b, idx, E->i64, "");
    if (w == 1) {
      store(E, x[0], base, i, walign(E));
      return;
    }
    LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(E->W, (unsigned)w));
    for (int v = 0; v < w; v++) vec = LLVMBuildInsertElement(b, vec, x[v], c32(E, (uint64_t)v), "");
    store(E, vec, base, i, (unsigned)w * walign(E));
    return;
  }
  char text[96], cons[64];
  cl_remote_asm(E, 0, w, text, sizeof text, cons, sizeof cons);
  LLVMTypeRef tys[5] = {E->i64, E->W, E->W, E->W, E->W};
  LLVMTypeRef fty = LLVMFunctionType(E->voidt, tys, (unsigned)w + 1, 0);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMValueRef args[5] = {cl_remote_addr(E, base, idx)};
  for (int v = 0; v < w; v++) args[1 + v] = x[v];
  LLVMBuildCall2(b, fty, fn, args, (unsigned)w + 1, "");
}

/* The source view's offset of (br, i) (i: i64 position in the row). */
static LLVMValueRef cl_source_off(ne *E, LLVMValueRef br, LLVMValueRef i64v) {
  LLVMBuilderRef b = E->b;
  LLVMValueRef off;
  if (E->src_dense) {
    off = LLVMBuildNUWAdd(b, LLVMBuildShl(b, br, c64(E, (uint64_t)E->P->log_n), ""), i64v, "");
    if (E->P->src_offset) off = LLVMBuildNUWAdd(b, off, c64(E, (uint64_t)E->P->src_offset), "");
  } else {
    LLVMValueRef ii = E->P->src_index_stride != 1
                          ? LLVMBuildNUWMul(b, i64v, c64(E, (uint64_t)E->P->src_index_stride), "")
                          : i64v;
    off = LLVMBuildNUWAdd(b, lw_ne_src_rowoff(E, br), ii, "");
  }
  return off;
}

/* The source word of (br, i) (i: i32 position in the row): the prologue's
 * value (with pro_rows only on its rows, the source's on the others), or
 * a load through the plan's source view. */
static LLVMValueRef cl_source(ne *E, LLVMValueRef br, LLVMValueRef i) {
  LLVMValueRef i64v = LLVMBuildZExt(E->b, i, E->i64, "");
  if (E->pro_active && !E->P->pro_rows) return lw_ne_pro_value(E, br, i64v);
  LLVMValueRef off = cl_source_off(E, br, i64v);
  if (E->pro_active) return lw_ne_pro_or_src(E, br, i64v, off);
  return load(E, E->W, E->src, off, walign(E), "x");
}

/* The forward's first value of (br, i): the source word with the kind's
 * pre step, or with a lift beside a prologue (lift_add, mdrs_steps) the
 * prologue's word plus the lift of the source's, as load_direct does. */
static LLVMValueRef cl_first_value(ne *E, const rowc *r, const mconst *pre, LLVMValueRef br,
                                   LLVMValueRef i, LLVMValueRef x) {
  if (!lw_ne_lift_add_active(E)) return lw_ne_pre_step(E, r, pre, x);
  LLVMValueRef off = cl_source_off(E, br, LLVMBuildZExt(E->b, i, E->i64, ""));
  return lw_ne_lift_add(E, r, pre, x, load(E, E->W, E->src, off, walign(E), "w"));
}

/* The twiddle constants of the top log C stages: stage beta >= log S, key
 * j >> (beta - log S + 1) of column word j, entry (1 << (n - 1 - beta)) +
 * key of the row's table (the same for every column: positions below S do
 * not reach those bits). */
static void cl_cross_twiddles(ne *E, const rowc *r, mconst mc[][8]) {
  int n = E->P->log_n, s = cl_log_s(E), C = 1 << E->K->cluster;
  for (int beta = s; beta < n; beta++)
    for (int key = 0; key < C >> (beta - s + 1); key++)
      mc[beta - s][key] = lw_ne_global_twiddle(E, r, c64(E, (UINT64_C(1) << (n - 1 - beta)) + (uint64_t)key));
}

/* The stages of the top log C bits on the U columns x[u][0..C). */
static void cl_cross_stages(ne *E, const rowc *r, mconst mc[][8], LLVMValueRef x[][8], int U) {
  int n = E->P->log_n, s = cl_log_s(E), C = 1 << E->K->cluster;
  int fwd = ir_ntt_is_forward(E->P->kind);
  for (int st = 0; st < n - s; st++) {
    int rb = fwd ? n - s - 1 - st : st; /* column bit of the stage */
    for (int u = 0; u < U; u++)
      for (int lo = 0; lo < C; lo++) {
        if (lo & (1 << rb)) continue;
        lw_ne_butterfly(E, r, &mc[rb][lo >> (rb + 1)], fwd, &x[u][lo], &x[u][lo | (1 << rb)]);
      }
  }
}

/* The column position l (i32) of iteration it, column u: block rank's
 * share of the slice positions; consecutive threads on consecutive l
 * (scalar exchange: the thread's U columns T apart) or on consecutive runs
 * of U columns (xvec: the thread's U columns consecutive, so that its words
 * of one block are one vector). */
static LLVMValueRef cl_column(ne *E, const clplace *cp, int it, int u) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int s = cl_log_s(E), U = 1 << k->log_u;
  uint64_t share = UINT64_C(1) << (s - k->cluster);
  LLVMValueRef l = LLVMBuildNUWMul(b, cp->rank, c32(E, share), "");
  if (k->xvec) {
    LLVMValueRef g = add_const32(E, cp->tid, (uint64_t)it * k->threads);
    l = LLVMBuildNUWAdd(b, l, LLVMBuildShl(b, g, c32(E, (uint64_t)k->log_u), ""), "");
    return add_const32(E, l, (uint64_t)u);
  }
  l = LLVMBuildNUWAdd(b, l, cp->tid, "");
  return add_const32(E, l, (uint64_t)(it * U + u) * k->threads);
}

/* Words per exchange access: 2^log_xw with the vector exchange, else 1. */
static int cl_xw(ne *E) { return E->K->xvec ? 1 << E->K->log_xw : 1; }

/* The source words x[0 .. w) of (br, i .. i + w - 1) (i: i32, aligned to
 * w): one vector load where the source view is dense and on the vector
 * grid, else word by word (cl_source). */
static void cl_source_run(ne *E, LLVMValueRef br, LLVMValueRef i, int w, LLVMValueRef *x) {
  LLVMBuilderRef b = E->b;
  if (w > 1 && !E->pro_active && E->src_dense && E->P->src_offset % w == 0) {
    LLVMValueRef off = LLVMBuildNUWAdd(b, LLVMBuildShl(b, br, c64(E, (uint64_t)E->P->log_n), ""),
                                       LLVMBuildZExt(b, i, E->i64, ""), "");
    if (E->P->src_offset) off = LLVMBuildNUWAdd(b, off, c64(E, (uint64_t)E->P->src_offset), "");
    LLVMValueRef vec = load(E, LLVMVectorType(E->W, (unsigned)w), E->src, off,
                            E->target == LW_GPU ? (unsigned)w * walign(E) : walign(E), "xv");
    for (int v = 0; v < w; v++) x[v] = LLVMBuildExtractElement(b, vec, c32(E, (uint64_t)v), "x");
    return;
  }
  for (int v = 0; v < w; v++) x[v] = cl_source(E, br, add_const32(E, i, (uint64_t)v));
}

/* ------------------------------------------ the next row's loads ahead */

static int cl_own_vec(ne *E);
static void cl_own_load(ne *E, LLVMValueRef base, LLVMValueRef idx, int n, LLVMValueRef *x);

/* Whether this kernel loads each next row ahead (lw_ntt_kplan.ahead):
 * several rows per cluster, and a source read word for word as it is
 * (a dense view on the copies' grid: w words for the forward's column
 * runs, V for the inverse's staged load; no prologue, no lift). */
static int cl_ahead(ne *E) {
  const lw_ntt_kplan *k = E->K;
  if (!k->ahead || !k->log_rows || E->pro_active || !E->src_dense) return 0;
  if (!ir_ntt_is_forward(E->P->kind)) return !k->tail && E->P->src_offset % E->V == 0;
  return !lw_ne_lift_add_active(E) && E->P->src_offset % cl_xw(E) == 0;
}

/* words (1, 2 or 4: at most 16 bytes) from global memory at src to shared
 * memory at dst, asynchronously (cp.async: .cg for 16 bytes, .ca below;
 * complete after cl_async_wait); on the host at once. */
static void cl_async_copy(ne *E, LLVMValueRef dst, LLVMValueRef src, int words) {
  LLVMBuilderRef b = E->b;
  if (E->target != LW_GPU) {
    LLVMTypeRef ty = words == 1 ? E->W : LLVMVectorType(E->W, (unsigned)words);
    LLVMValueRef v = LLVMBuildLoad2(b, ty, src, "ahead");
    LLVMSetAlignment(v, walign(E));
    LLVMSetAlignment(LLVMBuildStore(b, v, dst), walign(E));
    return;
  }
  int bytes = words * (int)walign(E);
  const char *name = bytes == 16  ? "llvm.nvvm.cp.async.cg.shared.global.16"
                     : bytes == 8 ? "llvm.nvvm.cp.async.ca.shared.global.8"
                                  : "llvm.nvvm.cp.async.ca.shared.global.4";
  LLVMTypeRef fty;
  LLVMValueRef fn = intrinsic(E, name, &fty);
  LLVMValueRef args[2] = {dst, src};
  LLVMBuildCall2(b, fty, fn, args, 2, "");
}

/* The thread's earlier cl_async_copy have landed (cp.async.wait_all; its
 * own copies: other threads' need a barrier after it). */
static void cl_async_wait(ne *E) {
  if (E->target != LW_GPU) return;
  LLVMTypeRef fty;
  LLVMValueRef fn = intrinsic(E, "llvm.nvvm.cp.async.wait.all", &fty);
  LLVMBuildCall2(E->b, fty, fn, NULL, 0, "");
}

/* Runs body(E, cp) where cp->next holds (uniform in the cluster). */
static void cl_if_next(ne *E, const clplace *cp, void (*body)(ne *, const clplace *)) {
  LLVMBuilderRef b = E->b;
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(E->c, E->fn, "next.row");
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(E->c, E->fn, "next.done");
  LLVMBuildCondBr(b, cp->next, then, after);
  LLVMPositionBuilderAtEnd(b, then);
  body(E, cp);
  LLVMBuildBr(b, after);
  LLVMPositionBuilderAtEnd(b, after);
}

/* Forward: the staging word of the thread's column run u0 / w of
 * iteration it, block j's words (i32): each thread's runs side by side
 * with its neighbours' (a warp's copies and reads contiguous). */
static LLVMValueRef cl_stage_word(ne *E, const clplace *cp, int it, int u0, int j) {
  const lw_ntt_kplan *k = E->K;
  int C = 1 << k->cluster, U = 1 << k->log_u, w = cl_xw(E);
  uint64_t slot = ((uint64_t)(it * (U / w) + u0 / w) * (uint64_t)C + (uint64_t)j) * k->threads;
  return LLVMBuildNUWMul(E->b, add_const32(E, cp->tid, slot), c32(E, (uint64_t)w), "stage");
}

/* Forward: row br's column words of this thread (what cl_cross_forward
 * reads) copied ahead into its staging words (cp->ahead). */
static void cl_copy_forward(ne *E, const clplace *cp, LLVMValueRef br) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int s = cl_log_s(E), C = 1 << k->cluster, U = 1 << k->log_u, w = cl_xw(E);
  int iters = (int)((UINT64_C(1) << (s - k->cluster)) / ((uint64_t)U * k->threads));
  for (int it = 0; it < iters; it++)
    for (int u0 = 0; u0 < U; u0 += w) {
      LLVMValueRef l = cl_column(E, cp, it, u0);
      for (int j = 0; j < C; j++) {
        LLVMValueRef i = LLVMBuildZExt(b, add_const32(E, l, (uint64_t)j << s), E->i64, "");
        LLVMValueRef off = cl_source_off(E, br, i);
        LLVMValueRef src = LLVMBuildInBoundsGEP2(b, E->W, E->src, &off, 1, "");
        LLVMValueRef st = LLVMBuildZExt(b, cl_stage_word(E, cp, it, u0, j), E->i64, "");
        LLVMValueRef dst = LLVMBuildInBoundsGEP2(b, E->W, cp->ahead, &st, 1, "");
        cl_async_copy(E, dst, src, w);
      }
    }
}

static void cl_copy_forward_next(ne *E, const clplace *cp) {
  cl_copy_forward(E, cp, LLVMBuildNUWAdd(E->b, cp->br, c64(E, 1), "br.next"));
}

/* Inverse: row br's slice words (what cl_staged loads) copied ahead into
 * the slice at dst (cp->ahead: the other one). */
static void cl_copy_staged(ne *E, const clplace *cp, LLVMValueRef br, LLVMValueRef dst) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int s = cl_log_s(E), V = E->V, nv = cl_own_vec(E);
  int iters = (int)((UINT64_C(1) << s) / ((uint64_t)V * k->threads));
  LLVMValueRef slice0 = LLVMBuildShl(b, cp->rank, c32(E, (uint64_t)s), "slice0");
  LLVMValueRef rowoff = LLVMBuildShl(b, br, c64(E, (uint64_t)E->P->log_n), "rowoff");
  if (E->P->src_offset) rowoff = LLVMBuildNUWAdd(b, rowoff, c64(E, (uint64_t)E->P->src_offset), "");
  for (int it = 0; it < iters; it++) {
    LLVMValueRef q = LLVMBuildShl(b, add_const32(E, cp->tid, (uint64_t)it * k->threads),
                                  c32(E, (uint64_t)lw_ntt_ilog2((uint64_t)V)), "q");
    LLVMValueRef sq = lw_ne_padded(E, q);
    LLVMValueRef off = LLVMBuildNUWAdd(b, rowoff, LLVMBuildZExt(b, LLVMBuildOr(b, slice0, q, ""), E->i64, ""), "");
    for (int v = 0; v < V; v += nv) {
      LLVMValueRef o = add_const64(E, off, (uint64_t)v);
      LLVMValueRef src = LLVMBuildInBoundsGEP2(b, E->W, E->src, &o, 1, "");
      LLVMValueRef d = LLVMBuildZExt(b, add_const32(E, sq, cl_padc(E, (uint64_t)v)), E->i64, "");
      cl_async_copy(E, LLVMBuildInBoundsGEP2(b, E->W, dst, &d, 1, ""), src, nv);
    }
  }
}

static void cl_copy_staged_next(ne *E, const clplace *cp) {
  cl_copy_staged(E, cp, LLVMBuildNUWAdd(E->b, cp->br, c64(E, 1), "br.next"), cp->ahead);
}

/* Forward: columns from global memory, the top stages, into the owners'
 * slices (each word crosses distributed shared memory once). */
static void cl_cross_forward(ne *E, const clplace *cp) {
  const lw_ntt_kplan *k = E->K;
  int s = cl_log_s(E), C = 1 << k->cluster, U = 1 << k->log_u, w = cl_xw(E);
  int iters = (int)((UINT64_C(1) << (s - k->cluster)) / ((uint64_t)U * k->threads));
  /* every block of the cluster has started (its shared memory exists)
   * before anyone stores into it: arrive now, wait before the first store
   * (.relaxed would do, but LLVM 19 selects it only from PTX 8.0, and
   * sm_90's PTX here is 7.8) */
  cl_barrier(E, "arrive");
  rowc r = lw_ne_row_consts(E, cp->br);
  mconst pre = lw_ne_pre_const(E, &r);
  mconst mc[3][8];
  cl_cross_twiddles(E, &r, mc);
  LLVMValueRef base[8];
  for (int j = 0; j < C; j++) base[j] = cl_remote_base(E, cp, c32(E, (uint64_t)j));
  if (cp->ahead) cl_async_wait(E); /* the row's words copied ahead have landed */
  for (int it = 0; it < iters; it++) {
    LLVMValueRef x[16][8], l[16];
    /* column u's word j: runs of w columns (xvec: consecutive positions) */
    for (int u0 = 0; u0 < U; u0 += w) {
      for (int v = 0; v < w; v++) l[u0 + v] = cl_column(E, cp, it, u0 + v);
      for (int j = 0; j < C; j++) {
        LLVMValueRef run[4];
        if (cp->ahead) /* the thread's own staging words (cl_copy_forward) */
          cl_own_load(E, cp->ahead, cl_stage_word(E, cp, it, u0, j), w, run);
        else
          cl_source_run(E, cp->br, add_const32(E, l[u0], (uint64_t)j << s), w, run);
        for (int v = 0; v < w; v++)
          x[u0 + v][j] = cl_first_value(E, &r, &pre, cp->br, add_const32(E, l[u0 + v], (uint64_t)j << s), run[v]);
      }
    }
    cl_cross_stages(E, &r, mc, x, U);
    if (it == 0) cl_barrier(E, "wait");
    for (int u0 = 0; u0 < U; u0 += w) {
      /* w <= 2^pad_shift, aligned, and the padding steps by w: the run
       * stays contiguous and aligned in the padded slice */
      LLVMValueRef li = lw_ne_padded(E, l[u0]);
      for (int j = 0; j < C; j++) {
        LLVMValueRef run[4];
        for (int v = 0; v < w; v++) run[v] = x[u0 + v][j];
        cl_remote_store(E, run, base[j], li, w);
      }
    }
  }
}

/* Inverse: columns from the blocks' slices, the top stages, the post step,
 * the stores to global memory (and the epilogue). */
static void cl_cross_inverse(ne *E, const clplace *cp) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int s = cl_log_s(E), C = 1 << k->cluster, U = 1 << k->log_u, w = cl_xw(E);
  int iters = (int)((UINT64_C(1) << (s - k->cluster)) / ((uint64_t)U * k->threads));
  rowc r = lw_ne_row_consts(E, cp->br);
  mconst post = lw_ne_post_const(E, &r);
  mconst mc[3][8];
  cl_cross_twiddles(E, &r, mc);
  LLVMValueRef base[8];
  for (int j = 0; j < C; j++) base[j] = cl_remote_base(E, cp, c32(E, (uint64_t)j));
  LLVMValueRef rowoff = LLVMBuildShl(b, cp->br, c64(E, (uint64_t)E->P->log_n), "rowoff");
  for (int it = 0; it < iters; it++) {
    LLVMValueRef x[16][8], l[16];
    for (int u0 = 0; u0 < U; u0 += w) {
      for (int v = 0; v < w; v++) l[u0 + v] = cl_column(E, cp, it, u0 + v);
      LLVMValueRef li = lw_ne_padded(E, l[u0]);
      for (int j = 0; j < C; j++) {
        LLVMValueRef run[4];
        cl_remote_load(E, base[j], li, w, run);
        for (int v = 0; v < w; v++) x[u0 + v][j] = run[v];
      }
    }
    /* the last reads of the other blocks' slices: they may exit once
     * everyone has arrived here */
    if (it == iters - 1) cl_barrier(E, "arrive");
    cl_cross_stages(E, &r, mc, x, U);
    for (int u0 = 0; u0 < U; u0 += w)
      for (int j = 0; j < C; j++) {
        LLVMValueRef v[4];
        for (int i = 0; i < w; i++) v[i] = lw_ne_post_step(E, &r, &post, x[u0 + i][j]);
        LLVMValueRef off = LLVMBuildNUWAdd(
            b, rowoff, LLVMBuildZExt(b, add_const32(E, l[u0], (uint64_t)j << s), E->i64, ""), "");
        lw_ne_final_store(E, off, v, w);
      }
  }
  cl_barrier(E, "wait");
}

/* Words per access of the block's own slice where a thread's words are
 * consecutive (the staged copy, the pass over bits [0, e)): V with the
 * vector exchange when its padding keeps V-word runs contiguous and
 * aligned (pad_w >= log V, or no padding), else 1. The vector padding puts
 * a warp's strided scalar accesses on 1/V of the banks; 16-byte accesses
 * spread evenly (a warp's 512 bytes in the minimal 4 wavefronts). */
static int cl_own_vec(ne *E) {
  const lw_ntt_kplan *k = E->K;
  int vlog = lw_ntt_ilog2((uint64_t)E->V);
  if (!k->xvec || (k->pad_shift && (k->pad_shift < vlog || k->pad_w < vlog))) return 1;
  return E->V;
}

/* n words of the own slice at padded index idx (i32; aligned to n when
 * n > 1, contiguous): one vector access of n words, or word by word. */
static void cl_own_load(ne *E, LLVMValueRef base, LLVMValueRef idx, int n, LLVMValueRef *x) {
  LLVMValueRef i = LLVMBuildZExt(E->b, idx, E->i64, "");
  if (n == 1) {
    x[0] = load(E, E->W, base, i, walign(E), "x");
    return;
  }
  LLVMValueRef vec = load(E, LLVMVectorType(E->W, (unsigned)n), base, i, (unsigned)n * walign(E), "xv");
  for (int v = 0; v < n; v++) x[v] = LLVMBuildExtractElement(E->b, vec, c32(E, (uint64_t)v), "x");
}

static void cl_own_store(ne *E, const LLVMValueRef *x, LLVMValueRef base, LLVMValueRef idx, int n) {
  LLVMValueRef i = LLVMBuildZExt(E->b, idx, E->i64, "");
  if (n == 1) {
    store(E, x[0], base, i, walign(E));
    return;
  }
  LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(E->W, (unsigned)n));
  for (int v = 0; v < n; v++) vec = LLVMBuildInsertElement(E->b, vec, x[v], c32(E, (uint64_t)v), "");
  store(E, vec, base, i, (unsigned)n * walign(E));
}

/* Pass j over the local bits [b0, b0 + e) of the block's slice, in place:
 * groups of 2^e words, consecutive threads on consecutive groups. */
static void cl_pass(ne *E, int j, const clplace *cp) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int n = E->P->log_n, s = cl_log_s(E);
  int e = k->pass_e[j], b0 = k->pass_b[j], nr = 1 << e;
  int fwd = ir_ntt_is_forward(E->P->kind);
  int iters = (int)((UINT64_C(1) << (s - e)) / k->threads);
  rowc r = lw_ne_row_consts(E, cp->br);
  LLVMValueRef slice0 = LLVMBuildShl(b, cp->rank, c32(E, (uint64_t)s), "slice0");
  for (int it = 0; it < iters; it++) {
    LLVMValueRef g = add_const32(E, cp->tid, (uint64_t)it * k->threads);
    /* the group's position with zeros at the pass bits */
    LLVMValueRef p0 = LLVMBuildOr(b, LLVMBuildAnd(b, g, c32(E, (UINT64_C(1) << b0) - 1), ""),
                                  LLVMBuildShl(b, LLVMBuildLShr(b, g, c32(E, (uint64_t)b0), ""),
                                               c32(E, (uint64_t)(b0 + e)), ""), "p0");
    LLVMValueRef si = lw_ne_padded(E, p0);
    LLVMValueRef x[1 << LW_NTT_MAX_LOG_E];
    /* the pass over the bottom bits: the thread's words are consecutive */
    int nv = b0 == 0 && nr >= cl_own_vec(E) ? cl_own_vec(E) : 1;
    for (int i = 0; i < nr; i += nv)
      cl_own_load(E, cp->own, add_const32(E, si, cl_padc(E, (uint64_t)i << b0)), nv, &x[i]);
    LLVMValueRef f0 = LLVMBuildOr(b, slice0, p0, "f0"); /* row position */
    for (int st = 0; st < e; st++) {
      int rb = fwd ? e - 1 - st : st;
      int beta = b0 + rb;
      LLVMValueRef base = LLVMBuildNUWAdd(
          b, c64(E, UINT64_C(1) << (n - 1 - beta)),
          LLVMBuildZExt(b, LLVMBuildLShr(b, f0, c32(E, (uint64_t)beta + 1), ""), E->i64, ""), "twi");
      mconst mc[16];
      int have[16] = {0};
      for (int lo = 0; lo < nr; lo++) {
        if (lo & (1 << rb)) continue;
        int key = lo >> (rb + 1);
        if (!have[key]) {
          mc[key] = lw_ne_global_twiddle(E, &r, add_const64(E, base, (uint64_t)key));
          have[key] = 1;
        }
        lw_ne_butterfly(E, &r, &mc[key], fwd, &x[lo], &x[lo | (1 << rb)]);
      }
    }
    for (int i = 0; i < nr; i += nv)
      cl_own_store(E, &x[i], cp->own, add_const32(E, si, cl_padc(E, (uint64_t)i << b0)), nv);
  }
}

/* The staged copy between the block's slice and global memory, 16-byte
 * vectors by consecutive threads: the inverse's load (prologue, source
 * view), the forward's store (epilogue). */
static void cl_staged(ne *E, int is_load, const clplace *cp) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int s = cl_log_s(E), V = E->V;
  int iters = (int)((UINT64_C(1) << s) / ((uint64_t)V * k->threads));
  LLVMValueRef slice0 = LLVMBuildShl(b, cp->rank, c32(E, (uint64_t)s), "slice0");
  LLVMValueRef rowoff = LLVMBuildShl(b, cp->br, c64(E, (uint64_t)E->P->log_n), "rowoff");
  /* the source view in whole vectors where it stays on the vector grid */
  int vector = !E->pro_active && E->src_dense && E->P->src_offset % V == 0;
  int nv = cl_own_vec(E); /* the slice's side in vectors too */
  /* the stages of the local bits [0, tail) run on each vector here: the
   * inverse's first after the load, the forward's last before the store
   * (tail_stages: root 1, the vector's row position) */
  rowc r = {0};
  if (k->tail) r = lw_ne_row_consts(E, cp->br);
  for (int it = 0; it < iters; it++) {
    LLVMValueRef q = LLVMBuildShl(b, add_const32(E, cp->tid, (uint64_t)it * k->threads),
                                  c32(E, (uint64_t)lw_ntt_ilog2((uint64_t)V)), "q");
    /* word v of the vector at sq + padc(v) (contiguous where V <= 2^pad_shift;
     * r32 with pad_chunk=1 steps over a pad) */
    LLVMValueRef sq = lw_ne_padded(E, q);
    LLVMValueRef pos = LLVMBuildOr(b, slice0, q, "pos");
    LLVMValueRef vals[4];
    if (is_load) {
      if (vector) {
        LLVMValueRef off = LLVMBuildNUWAdd(b, rowoff, LLVMBuildZExt(b, pos, E->i64, ""), "");
        if (E->P->src_offset) off = LLVMBuildNUWAdd(b, off, c64(E, (uint64_t)E->P->src_offset), "");
        LLVMValueRef vec = load(E, E->vecW, E->src, off, E->target == LW_GPU ? 16u : walign(E), "xv");
        for (int v = 0; v < V; v++) vals[v] = LLVMBuildExtractElement(b, vec, c32(E, (uint64_t)v), "x");
      } else {
        for (int v = 0; v < V; v++) vals[v] = cl_source(E, cp->br, add_const32(E, pos, (uint64_t)v));
      }
      if (k->tail) lw_ne_tail_stages(E, &r, c64(E, 1), pos, vals);
      for (int v = 0; v < V; v += nv) cl_own_store(E, &vals[v], cp->own, add_const32(E, sq, cl_padc(E, (uint64_t)v)), nv);
    } else {
      for (int v = 0; v < V; v += nv) cl_own_load(E, cp->own, add_const32(E, sq, cl_padc(E, (uint64_t)v)), nv, &vals[v]);
      if (k->tail) lw_ne_tail_stages(E, &r, c64(E, 1), pos, vals);
      lw_ne_final_store(E, LLVMBuildNUWAdd(b, rowoff, LLVMBuildZExt(b, pos, E->i64, ""), ""),
                        vals, V);
    }
  }
}

/* Segments between barriers: staged load / cross, the passes, cross /
 * staged store. */
static int cl_num_segments(const lw_ntt_kplan *k) { return k->npass + 2; }

static void cl_segment(ne *E, int sg, const clplace *cp) {
  const lw_ntt_kplan *k = E->K;
  int fwd = ir_ntt_is_forward(E->P->kind);
  if (sg == 0) {
    if (fwd) {
      cl_cross_forward(E, cp);
      /* its staging words read (their values stored): the next row's */
      if (cp->ahead) cl_if_next(E, cp, cl_copy_forward_next);
    } else if (cp->ahead) {
      cl_async_wait(E); /* the row's slice words (the segment's barrier follows) */
      cl_if_next(E, cp, cl_copy_staged_next);
    } else {
      cl_staged(E, 1, cp);
    }
  } else if (sg <= k->npass) {
    cl_pass(E, sg - 1, cp);
  } else {
    if (fwd) cl_staged(E, 0, cp);
    else cl_cross_inverse(E, cp);
  }
}

/* The barrier after segment sg on the GPU: the cluster's after the
 * exchange's stores (forward) or before its loads (inverse), else the
 * block's. */
static void cl_segment_barrier(ne *E, int sg) {
  int fwd = ir_ntt_is_forward(E->P->kind);
  if ((fwd && sg == 0) || (!fwd && sg == E->K->npass)) {
    cl_barrier(E, "arrive");
    cl_barrier(E, "wait");
  } else {
    LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
  }
}

/* One row's segments and the barriers between them (GPU). */
static void cl_row_gpu(ne *E, const clplace *cp) {
  for (int sg = 0; sg < cl_num_segments(E->K); sg++) {
    if (sg) cl_segment_barrier(E, sg - 1);
    cl_segment(E, sg, cp);
  }
}

/* Several rows in turn (log_rows): the cluster's first row and the end
 * of its rows (i64). */
static LLVMValueRef cl_first_row(ne *E, LLVMValueRef cid) {
  return LLVMBuildShl(E->b, cid, c64(E, (uint64_t)E->K->log_rows), "row0");
}

static LLVMValueRef cl_rows_end(ne *E, LLVMValueRef row0) {
  LLVMBuilderRef b = E->b;
  LLVMValueRef end = add_const64(E, row0, UINT64_C(1) << E->K->log_rows);
  LLVMValueRef all = c64(E, (uint64_t)E->P->batch_rows);
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, end, all, ""), end, all, "rows.end");
}

/* cp's slice and where its next row's copies go (cp->ahead), in the
 * block's shared memory from region: the forward's staging area after the
 * slice; the inverse's slices alternating by row (parity: i64 0 or 1). */
static void cl_buffers(ne *E, clplace *cp, LLVMValueRef region, LLVMValueRef parity) {
  LLVMBuilderRef b = E->b;
  LLVMValueRef slice = c64(E, E->K->slice_words);
  cp->own = region;
  if (ir_ntt_is_forward(E->P->kind)) {
    cp->ahead = LLVMBuildInBoundsGEP2(b, E->W, region, &slice, 1, "stage");
    return;
  }
  LLVMValueRef at = LLVMBuildNUWMul(b, parity, slice, "");
  LLVMValueRef other = LLVMBuildNUWMul(b, LLVMBuildXor(b, parity, c64(E, 1), ""), slice, "");
  cp->own = LLVMBuildInBoundsGEP2(b, E->W, region, &at, 1, "own");
  cp->ahead = LLVMBuildInBoundsGEP2(b, E->W, region, &other, 1, "other");
}

/* GPU: x through a side-effecting move, an opaque copy the optimisers
 * keep in place (so what is computed from it stays where it is). */
static LLVMValueRef cl_pin(ne *E, LLVMValueRef x) {
  int w64 = LLVMGetIntTypeWidth(LLVMTypeOf(x)) == 64;
  return asm_call(E, LLVMTypeOf(x), w64 ? "mov.b64 $0, $1;" : "mov.b32 $0, $1;",
                  w64 ? "=l,l" : "=r,r", &x, 1);
}

/* The first row's copies ahead, into cp's buffers for parity 0. */
static void cl_copy_first(ne *E, const clplace *cp) {
  if (ir_ntt_is_forward(E->P->kind)) cl_copy_forward(E, cp, cp->br);
  else cl_copy_staged(E, cp, cp->br, cp->own);
}

/* The GPU's rows in turn: the first row's copies ahead, then a loop over
 * the cluster's rows, each next row's copies issued in its first segment
 * (cl_segment). Every block of a cluster runs the same rows, so the
 * barriers stay uniform. */
static void cl_rows_gpu(ne *E, clplace *cp) {
  LLVMBuilderRef b = E->b;
  int ahead = cl_ahead(E);
  LLVMValueRef row0 = cl_first_row(E, cp->br), end = cl_rows_end(E, row0);
  LLVMValueRef region = cp->own;
  if (ahead) {
    clplace c0 = *cp;
    c0.br = row0;
    cl_buffers(E, &c0, region, c64(E, 0));
    cl_copy_first(E, &c0);
  }
  LLVMValueRef tid = cp->tid, rank = cp->rank;
  loop L = lw_ne_loop_begin(E, row0, E->i64, "row");
  cp->br = L.iv;
  cp->next = LLVMBuildICmp(b, LLVMIntULT, add_const64(E, L.iv, 1), end, "next");
  /* the thread's indices and the slice anew each row: without the pins
   * LLVM computes every address they give once, before the loop, and
   * keeps them all live through it (r32 2^16, C = 8: 128-250 registers
   * against 60) */
  cp->tid = cl_pin(E, tid);
  cp->rank = cl_pin(E, rank);
  LLVMValueRef at = cl_pin(E, LLVMBuildPtrToInt(b, region, E->i64, ""));
  cp->own = LLVMBuildIntToPtr(b, at, LLVMTypeOf(region), "region");
  if (ahead) cl_buffers(E, cp, cp->own, LLVMBuildAnd(b, LLVMBuildSub(b, L.iv, row0, ""), c64(E, 1), "parity"));
  cl_row_gpu(E, cp);
  lw_ne_loop_end(E, &L, end, "rows_done");
}

void lw_ne_build_cluster_gpu_kernel(ne *E, const char *name) {
  const lw_ntt_kplan *k = E->K;
  LLVMValueRef fn = lw_ne_gpu_kernel_fn(E, name);
  /* the slice: dynamic shared memory (.extern .shared), sized at launch */
  char sname[128];
  /* an external symbol keeps its name in the PTX, where '.' cannot be */
  snprintf(sname, sizeof sname, "%s_dsmem", name);
  LLVMTypeRef arr = LLVMArrayType2(E->W, 0);
  LLVMValueRef sm = LLVMAddGlobalInAddressSpace(E->m, arr, sname, 3);
  LLVMSetLinkage(sm, LLVMExternalLinkage);
  LLVMSetAlignment(sm, 16);
  E->smem = sm;
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, fn, "entry"));
  lw_ne_offset_rows(E, 1); /* the only kernel: as the first of two */
  clplace cp;
  cp.tid = sreg(E, "llvm.nvvm.read.ptx.sreg.tid.x");
  cp.rank = sreg(E, "llvm.nvvm.read.ptx.sreg.cluster.ctarank");
  cp.br = LLVMBuildLShr(E->b, LLVMBuildZExt(E->b, sreg(E, "llvm.nvvm.read.ptx.sreg.ctaid.x"), E->i64, ""),
                        c64(E, (uint64_t)k->cluster), "br");
  cp.own = sm;
  cp.next = cp.ahead = NULL;
  if (k->log_rows) cl_rows_gpu(E, &cp);
  else cl_row_gpu(E, &cp);
  LLVMBuildRetVoid(E->b);
  /* launch bounds (LLVM 19 has no annotation for .reqnctapercluster: the
   * cluster's shape comes from the launch, docs/abi.md) */
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "maxntidx", 8),
                           LLVMValueAsMetadata(LLVMConstInt(E->i32, k->threads, 0))};
  LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                              LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, md, 3)));
  if (k->minb > 0) { /* minb_cluster: ptxas caps registers to fit them */
    LLVMMetadataRef mb[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "minctasm", 8),
                             LLVMValueAsMetadata(LLVMConstInt(E->i32, (uint64_t)k->minb, 0))};
    LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                                LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, mb, 3)));
  }
}

/* The host form's row: its batch-row, with several rows in turn whether
 * another follows and its parity, and whether the copies go ahead. */
typedef struct host_rows {
  LLVMValueRef br, next, parity;
  int ahead;
} host_rows;

/* Segment sg (-1: the first row's copies ahead) of row h for every thread
 * of every block of the cluster before the next segment: the loop
 * boundary is the barrier (block's or cluster's). */
static void cl_host_segment(ne *E, const host_rows *h, int sg) {
  const lw_ntt_kplan *k = E->K;
  loop rk = lw_ne_loop_begin(E, c32(E, 0), E->i32, "rank");
  loop t = lw_ne_loop_begin(E, c32(E, 0), E->i32, "thread");
  clplace cp = {.tid = t.iv, .rank = rk.iv, .br = h->br, .next = h->next};
  LLVMValueRef off = LLVMBuildZExt(E->b, LLVMBuildNUWMul(E->b, rk.iv, c32(E, k->smem_words), ""), E->i64, "");
  LLVMValueRef region = LLVMBuildInBoundsGEP2(E->b, E->W, E->smem, &off, 1, "own");
  cp.own = region;
  if (h->ahead) cl_buffers(E, &cp, region, h->parity);
  if (sg < 0) cl_copy_first(E, &cp);
  else cl_segment(E, sg, &cp);
  lw_ne_loop_end(E, &t, c32(E, k->threads), "threads_done");
  lw_ne_loop_end(E, &rk, c32(E, UINT64_C(1) << k->cluster), "ranks_done");
}

/* The host form: (kernel arguments..., cluster_begin, cluster_end, shared),
 * shared holding a cluster's C slices; "<name>_host" as build_host_fn's. */
void lw_ne_build_cluster_host_fn(ne *E, const char *name) {
  const lw_ntt_kplan *k = E->K;
  LLVMTypeRef types[LW_MAX_ARGS + 8], fty;
  LLVMValueRef begin, end;
  LLVMBasicBlockRef done;
  int n;
  LLVMValueRef fn = lw_ne_host_body_begin(E, name, types, &n, &fty, &begin, &end, &done);
  loop cl = lw_ne_loop_begin(E, begin, E->i64, "cluster");
  host_rows h = {.br = cl.iv, .parity = NULL, .ahead = 0};
  if (!k->log_rows) {
    for (int sg = 0; sg < cl_num_segments(k); sg++) cl_host_segment(E, &h, sg);
  } else { /* as cl_rows_gpu */
    h.ahead = cl_ahead(E);
    LLVMValueRef row0 = cl_first_row(E, cl.iv), rend = cl_rows_end(E, row0);
    if (h.ahead) {
      h.br = row0, h.parity = c64(E, 0);
      cl_host_segment(E, &h, -1);
    }
    loop L = lw_ne_loop_begin(E, row0, E->i64, "row");
    h.br = L.iv;
    h.next = LLVMBuildICmp(E->b, LLVMIntULT, add_const64(E, L.iv, 1), rend, "next");
    h.parity = LLVMBuildAnd(E->b, LLVMBuildSub(E->b, L.iv, row0, ""), c64(E, 1), "parity");
    for (int sg = 0; sg < cl_num_segments(k); sg++) cl_host_segment(E, &h, sg);
    lw_ne_loop_end(E, &L, rend, "rows_done");
  }
  lw_ne_loop_end(E, &cl, end, "clusters_done");
  lw_ne_host_body_end(E, name, types, n, fty, fn, done);
}
