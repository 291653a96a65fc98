/* ntt_emit_aut.c: a forward NTT that reads a coefficient-domain
 * automorphism of its source (lw_ntt_plan.aut_k), at no pass of its own:
 * the two staged loads that place the automorphism's words where the
 * transform needs them.
 *
 * With the row as N1 x N2 (position c + N2 j: column c, row j; kernel 0
 * transforms columns, kernel 1 chunks of N2), output position o = c + N2 j
 * of automorphism(x, k) reads x at o k' mod 2N (k' = k^-1 mod 2N, negated
 * past N: SPEC section 7). Since c k' = s + N2 q (s = c k' mod N2, q =
 * floor((c k' mod 2N) / N2)), o k' = s + N2 ((q + j k') mod 2N1): output
 * column c is source column s = c k' mod N2 alone, its rows permuted by
 * j -> (q + j k') mod 2N1 (past N1: the row less N1, negated).
 *
 * Kernel 0's block therefore takes its source columns [s0, s0 + C) (the
 * columns it takes without the automorphism, read coalesced as ever) and
 * transforms output column c = s k mod N2 in the place of column s: its
 * staged load (aut_cols_load) writes source word (r, s) at the output row
 * j that reads it, negated where the map says, and it stores its results
 * in source-column order (its ordinary store). Kernel 1's staged load
 * (lw_ne_aut_chunk_pos) puts slot s of a chunk at local position s k mod
 * N2, where the chunk's stages want column c; without one (autcol=2) its
 * first pass loads slot p k^-1 mod N2 for local position p
 * (lw_ne_aut_chunk_slot). (Kernel 0 storing column s at output column
 * c, kernel 1 plain, measured 1.8-2.6x the NTT alone: docs/section7.md.)
 * Inverting the row map:
 * source row r of column s serves output row j = ((r - q) k) mod 2N1 if
 * that is below N1, else (row r + N1, the negated side) j - N1. */
#include <string.h>

#include "lower/autmap.h"
#include "lower/ntt_emit.h"

/* The automorphism's constants for kernel 0: everything below is taken
 * mod a power of two at most 2N <= 2^18, so i32 arithmetic that wraps mod
 * 2^32 gives the exact residues. */
typedef struct autc {
  uint32_t k, kinv;     /* k and k^-1 mod 2N */
  uint32_t n2mask;      /* N2 - 1 */
  uint32_t two_n1;      /* 2 N1 */
  int log_n2, m;        /* log2 N2, log2 N1 */
  uint32_t two_n_mask;  /* 2N - 1 */
} autc;

static autc aut_consts(ne *E) {
  const lw_ntt_plan *P = E->P;
  autc a;
  int64_t N = INT64_C(1) << P->log_n;
  a.m = P->k[0].m;
  a.log_n2 = P->log_n - a.m;
  a.k = (uint32_t)P->aut_k;
  a.kinv = (uint32_t)lw_aut_inverse_mod(P->aut_k, 2 * N);
  a.n2mask = (1u << a.log_n2) - 1;
  a.two_n1 = 2u << a.m;
  a.two_n_mask = (uint32_t)(2 * N - 1);
  return a;
}

/* (-q k) mod 2N1 (i32, as a wrapped residue) for source column s (i32):
 * c = s k mod N2 the output column it serves, q = floor((c k^-1 mod 2N) /
 * N2). Source row r of the column serves output row ((r - q) k) mod 2N1
 * = (r k + this) mod 2N1 (aut_row). */
static LLVMValueRef aut_column_term(ne *E, const autc *a, LLVMValueRef s) {
  LLVMBuilderRef b = E->b;
  LLVMValueRef c = LLVMBuildAnd(b, LLVMBuildMul(b, s, c32(E, a->k & a->n2mask), ""), c32(E, a->n2mask), "aut.c");
  LLVMValueRef t = LLVMBuildAnd(b, LLVMBuildMul(b, c, c32(E, a->kinv), ""), c32(E, a->two_n_mask), "");
  LLVMValueRef q = LLVMBuildLShr(b, t, c32(E, (uint64_t)a->log_n2), "aut.q");
  return LLVMBuildMul(b, LLVMBuildSub(b, c32(E, a->two_n1), q, ""), c32(E, a->k & (a->two_n1 - 1)), "aut.qk");
}

/* The output row (i32, < N1) that reads source row r of a column whose
 * aut_column_term is qk, from t = r k + qk (wrapped: only t mod 2N1
 * counts), *negate (i1) set where it reads it negated (the row map's
 * past-N1 side). */
static LLVMValueRef aut_row(ne *E, const autc *a, LLVMValueRef t, LLVMValueRef *negate) {
  LLVMBuilderRef b = E->b;
  LLVMValueRef j = LLVMBuildAnd(b, t, c32(E, a->two_n1 - 1), "aut.j");
  *negate = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, t, c32(E, a->two_n1 >> 1), ""), c32(E, 0), "aut.neg");
  return LLVMBuildAnd(b, j, c32(E, (a->two_n1 >> 1) - 1), "");
}

/* canon(x) = x mod q (x < 2q), negated (q - x, 0 stays 0) where negate:
 * the automorphism's word (SPEC section 7, as lower_remap.c's remapped load).
 * r32: the negation q - canon(x) is q only for a zero word, which one
 * more conditional subtraction takes to 0 (two csubs, one min.u32 each,
 * against a compare, a select and a zero test); r62 keeps the compare
 * and selects (its csub is five instructions of inline PTX). */
static LLVMValueRef aut_word(ne *E, const rowc *r, LLVMValueRef x, LLVMValueRef negate) {
  LLVMBuilderRef b = E->b;
  if (E->A.r32) {
    LLVMValueRef cc = lw_csub(&E->A, x, r->q);
    LLVMValueRef y = LLVMBuildSelect(b, negate, LLVMBuildSub(b, r->q, cc, ""), cc, "");
    return lw_csub(&E->A, y, r->q);
  }
  LLVMValueRef cc = lw_csub_select(b, x, r->q, "aut.canon");
  LLVMValueRef flip = LLVMBuildAnd(b, negate, LLVMBuildICmp(b, LLVMIntNE, cc, cw(E, 0), ""), "");
  return LLVMBuildSelect(b, flip, LLVMBuildSub(b, r->q, cc, ""), cc, "aut.x");
}

/* Whether the source view reads V-word vectors of a row's consecutive
 * columns on the vector grid. */
static int aut_vector_view(ne *E, int V) {
  const lw_ntt_plan *P = E->P;
  if (V < 2 || P->src_index_stride != 1 || P->src_offset % V) return 0;
  for (int a = 0; a < P->src_nax; a++)
    if (P->src_ext[a] > 1 && P->src_stride[a] % V) return 0;
  return 1;
}

/* Kernel 0's staged load (columns): the block's M x C source words, read
 * V consecutive columns at a time by consecutive threads (V = 1 with
 * ntt_plan autvec=0: a warp's consecutive columns), each written to
 * shared memory at (output row, its source column's slot) with the pre
 * step; the first pass then reads its words in place. T V is a multiple
 * of C (E <= M), so a thread's columns are the same in every group and
 * group g is G = T V / C source rows further down: its source index and
 * its row term r k differ from group 0's by constants, so a word costs
 * its load, the row map's add, and, compare and shift, the word and the
 * store. */
static void aut_cols_load(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  const lw_ntt_plan *P = E->P;
  LLVMBuilderRef b = E->b;
  autc a = aut_consts(E);
  int64_t T = k->threads, C = INT64_C(1) << k->log_c, per_block = C << k->m;
  int V = C >= E->V && per_block >= T * E->V ? E->V : 1;
  if (!aut_vector_view(E, V) || P->aut_scalar) V = 1;
  int log_v = lw_ntt_ilog2((uint64_t)V);
  int64_t G = T * V / C; /* source rows per group */
  int log_bpr = k->log_subs - k->log_c; /* blocks per row */
  LLVMValueRef br = LLVMBuildLShr(b, blk, c64(E, (uint64_t)log_bpr), "brow");
  LLVMValueRef col0 = LLVMBuildShl(b, LLVMBuildAnd(b, blk, c64(E, (UINT64_C(1) << log_bpr) - 1), ""),
                                   c64(E, (uint64_t)k->log_c), "col0");
  rowc r = lw_ne_row_consts(E, br);
  mconst pre = lw_ne_pre_const(E, &r);
  /* the thread's V columns: local lc .. lc + V - 1, source s .. s + V - 1;
   * its source row in group 0 */
  LLVMValueRef lc = LLVMBuildAnd(b, LLVMBuildShl(b, tid, c32(E, (uint64_t)log_v), ""), c32(E, (uint64_t)C - 1), "lcol");
  LLVMValueRef s = LLVMBuildNUWAdd(b, LLVMBuildTrunc(b, col0, E->i32, ""), lc, "scol");
  LLVMValueRef row0 = LLVMBuildLShr(b, tid, c32(E, (uint64_t)(k->log_c - log_v)), "srow");
  LLVMValueRef i0 = LLVMBuildNUWAdd(b, LLVMBuildShl(b, LLVMBuildZExt(b, row0, E->i64, ""), c64(E, (uint64_t)k->log_subs), ""),
                                    LLVMBuildZExt(b, s, E->i64, ""), "");
  uint64_t stride = (uint64_t)P->src_index_stride;
  if (stride != 1) i0 = LLVMBuildNUWMul(b, i0, c64(E, stride), "");
  LLVMValueRef gs0 = LLVMBuildNUWAdd(b, lw_ne_src_rowoff(E, br), i0, "");
  /* word v's row term in group 0 (r k + the column's term) and its slot */
  LLVMValueRef rk0 = LLVMBuildMul(b, row0, c32(E, a.k & (a.two_n1 - 1)), "aut.rk");
  LLVMValueRef base[4], slot[4];
  for (int v = 0; v < V; v++) {
    base[v] = LLVMBuildAdd(b, rk0, aut_column_term(E, &a, add_const32(E, s, (uint64_t)v)), "aut.base");
    slot[v] = add_const32(E, lc, (uint64_t)v);
  }
  for (int64_t g = 0; g < per_block / (T * V); g++) {
    LLVMValueRef gs = add_const64(E, gs0, (uint64_t)(g * G) * stride << k->log_subs);
    uint32_t gk = (uint32_t)((uint64_t)(g * G) * a.k) & (a.two_n1 - 1);
    LLVMValueRef vec = V > 1 ? load(E, E->vecW, E->src, gs, E->target == LW_GPU ? 16u : walign(E), "xv") : NULL;
    for (int v = 0; v < V; v++) {
      LLVMValueRef x = vec ? LLVMBuildExtractElement(b, vec, c32(E, (uint64_t)v), "x")
                           : load(E, E->W, E->src, gs, walign(E), "x");
      LLVMValueRef neg;
      LLVMValueRef t = gk ? LLVMBuildAdd(b, base[v], c32(E, gk), "") : base[v]; /* wraps */
      LLVMValueRef j = aut_row(E, &a, t, &neg);
      LLVMValueRef w = lw_ne_pre_step(E, &r, &pre, aut_word(E, &r, x, neg));
      LLVMValueRef at = LLVMBuildOr(b, LLVMBuildShl(b, j, c32(E, (uint64_t)k->log_c), ""), slot[v], "");
      store(E, w, E->smem, lw_ne_padded(E, at), walign(E));
    }
  }
}

/* Whether E's kernel permutes its first pass's registers: kernel 0 with
 * autreg=1, kernel 1 with autcol=3. */
int lw_ne_aut_regs_active(const ne *E) {
  if (E->K->cols) return E->P->aut_reg && E->src_view;
  return E->P->aut_reg1 && !E->src_view;
}

/* Rotates the n words w by hi (i32, below n) slots up, cyclically: e
 * stages of selects, stage i moving them 2^i where bit i of hi is set. */
static void rotate_words(ne *E, LLVMValueRef *w, int e, LLVMValueRef hi) {
  LLVMBuilderRef b = E->b;
  int n = 1 << e;
  for (int i = 0; i < e; i++) {
    LLVMValueRef on = LLVMBuildTrunc(b, LLVMBuildLShr(b, hi, c32(E, (uint64_t)i), ""),
                                     LLVMInt1TypeInContext(E->c), "aut.rot");
    int d = 1 << i;
    LLVMValueRef nw[1 << LW_NTT_MAX_LOG_E];
    for (int t = 0; t < n; t++) nw[t] = LLVMBuildSelect(b, on, w[(t - d + n) & (n - 1)], w[t], "");
    memcpy(w, nw, (size_t)n * sizeof *w);
  }
}

/* Kernel 1 in registers (ntt_plan autcol=3, lw_ntt_plan.aut_reg1): the
 * same identity without signs. Its chunk holds output column c at slot
 * s = c k^-1 mod N2 (kernel 0 stores in source-column order), so slot u +
 * m N2/E, loaded as the plain kernel loads it, serves local position (u k
 * + m k N2/E) mod N2 = b + ((hi + m k) mod E) N2/E with u k mod N2 = b +
 * hi N2/E: register m to slot m k mod E, then a cyclic rotation by hi. */
static LLVMValueRef aut_regs_chunk(ne *E, LLVMValueRef u, LLVMValueRef *x) {
  LLVMBuilderRef b = E->b;
  int e = E->K->log_e, n = 1 << e, low = E->K->m - e;
  uint32_t k = (uint32_t)E->P->aut_k & ((1u << E->K->m) - 1);
  LLVMValueRef bp = LLVMBuildAnd(b, LLVMBuildMul(b, u, c32(E, k), ""), c32(E, (1u << E->K->m) - 1), "aut.bp");
  LLVMValueRef base = LLVMBuildAnd(b, bp, c32(E, (1u << low) - 1), "aut.b");
  LLVMValueRef hi = LLVMBuildLShr(b, bp, c32(E, (uint64_t)low), "aut.bhi");
  LLVMValueRef w[1 << LW_NTT_MAX_LOG_E];
  for (int m = 0; m < n; m++) w[(uint32_t)((uint64_t)m * k) & (uint32_t)(n - 1)] = x[m];
  rotate_words(E, w, e, hi);
  memcpy(x, w, (size_t)n * sizeof *x);
  return base;
}

/* Kernel 0 without its staged load (ntt_plan autreg=1, lw_ntt_plan.aut_reg).
 * Its first pass is the full pass over the top e = log2 E local bits, so
 * the thread loads rows u + m M/E (m < E) of its source column s, as the
 * plain kernel does (coalesced). Source row r serves output row (r k +
 * qk) mod 2M (aut_column_term), so row u + m M/E serves (b' + m k M/E)
 * mod 2M with b' = (u k + qk) mod 2M = b + b_hi M/E (b < M/E, b_hi < 2E):
 * output row b + T M/E, T = (b_hi + m k) mod 2E, negated where T >= E.
 * The thread therefore holds output rows b + t M/E (t < E), the same kind
 * of group as the plain kernel's rows u + t M/E with b for u (u -> b is a
 * bijection of the column's threads: k is odd). Register m goes to slot
 * (m k) mod 2E at compile time (k odd: the E slots once each, with
 * signs), then rotates negacyclically by the thread's b_hi: e stages of
 * selects for the words, one rotation of a bit pattern for their signs.
 * The pass's twiddles depend on its top bits alone,
 * not on b; it stores to rows b + t M/E. x[t] becomes the word of output
 * row b + t M/E, with aut_word and the pre step; returns b (i32). Kernel 1
 * (autcol=3): aut_regs_chunk. */
LLVMValueRef lw_ne_aut_regs(ne *E, const rowc *r, LLVMValueRef col, LLVMValueRef u, LLVMValueRef *x) {
  if (!E->K->cols) return aut_regs_chunk(E, u, x);
  LLVMBuilderRef b = E->b;
  autc a = aut_consts(E);
  int e = E->K->log_e, n = 1 << e, low = a.m - e; /* M/E = 2^low */
  LLVMValueRef s = LLVMBuildTrunc(b, col, E->i32, "aut.s");
  LLVMValueRef uk = LLVMBuildMul(b, u, c32(E, a.k & (a.two_n1 - 1)), "");
  LLVMValueRef bp = LLVMBuildAnd(b, LLVMBuildAdd(b, uk, aut_column_term(E, &a, s), ""), c32(E, a.two_n1 - 1), "aut.bp");
  LLVMValueRef base = LLVMBuildAnd(b, bp, c32(E, (1u << low) - 1), "aut.b");
  LLVMValueRef hi = LLVMBuildLShr(b, bp, c32(E, (uint64_t)low), "aut.bhi");
  /* register m goes to slot (m k) mod 2E: slot pos of the 2E slots
   * (pos + E the negation of pos). The signs: bit p of ext says whether
   * the word rotated from slot p mod 2E is negated (bit pos clear, bit
   * pos + E set), replicated with period 2E across its width, so that a
   * rotation of the words by b_hi is one rotation of ext. */
  LLVMValueRef w[1 << LW_NTT_MAX_LOG_E];
  unsigned width = 2 * n <= 32 ? 32 : 64;
  LLVMTypeRef ty = LLVMIntTypeInContext(E->c, width);
  uint64_t ext = 0;
  for (int m = 0; m < n; m++) {
    uint32_t pos = (uint32_t)(((uint64_t)m * a.k) & (2u * (uint32_t)n - 1));
    w[pos & (uint32_t)(n - 1)] = x[m];
    ext |= UINT64_C(1) << ((pos + (uint32_t)n) & (2u * (uint32_t)n - 1));
  }
  for (unsigned rep = 2u * (unsigned)n; rep < width; rep *= 2) ext |= ext << rep;
  /* the words: rotated by b_hi mod E (the rotation by E is the signs') */
  rotate_words(E, w, e, hi);
  /* the signs: bit t of ext rotated left by b_hi (mod 2E) is word t's */
  LLVMValueRef hiw = LLVMBuildZExt(b, hi, ty, "");
  LLVMValueRef extc = LLVMConstInt(ty, ext, 0);
  LLVMTypeRef fty[1] = {ty};
  unsigned fshl = LLVMLookupIntrinsicID("llvm.fshl", 9);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(E->m, fshl, fty, 1);
  LLVMValueRef args[3] = {extc, extc, hiw};
  LLVMValueRef signs = LLVMBuildCall2(b, LLVMIntrinsicGetType(E->c, fshl, fty, 1), fn, args, 3, "aut.signs");
  mconst pre = lw_ne_pre_const(E, r);
  for (int t = 0; t < n; t++) {
    LLVMValueRef bit = LLVMBuildAnd(b, signs, LLVMConstInt(ty, UINT64_C(1) << t, 0), "");
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntNE, bit, LLVMConstInt(ty, 0, 0), "aut.neg");
    x[t] = lw_ne_pre_step(E, r, &pre, aut_word(E, r, w[t], neg));
  }
  return base;
}

int lw_ne_aut_cols_load(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  if (!E->P->aut_k || !E->K->cols || !E->src_view) return 0;
  aut_cols_load(E, tid, blk);
  return 1;
}

/* Kernel 1 without its staged load (autcol=2): local position p of a
 * chunk reads slot p k^-1 mod N2 (k^-1 mod 2N, taken mod N2) of the
 * stored chunk, the inverse of aut_chunk_pos. A position is the thread's
 * bits ku plus a constant kc (disjoint bits, so ku | kc = ku + kc), and
 * (ku + kc) k^-1 = ku k^-1 + kc k^-1: the thread's product once
 * (aut_chunk_scale), one add and one and a word (aut_chunk_slot). */
int lw_ne_aut_direct(const ne *E) {
  return E->P->aut_k && !E->src_view && !E->K->cols && !E->K->staged_load && !E->P->aut_reg1;
}

static uint32_t chunk_kinv(const ne *E) {
  int64_t N = INT64_C(1) << E->P->log_n;
  return (uint32_t)lw_aut_inverse_mod(E->P->aut_k, 2 * N) & ((1u << E->K->m) - 1);
}

LLVMValueRef lw_ne_aut_chunk_scale(ne *E, LLVMValueRef ku) {
  return LLVMBuildMul(E->b, ku, c32(E, chunk_kinv(E)), "aut.ku");
}

LLVMValueRef lw_ne_aut_chunk_slot(ne *E, LLVMValueRef kuk, uint32_t kc) {
  uint32_t mask = (1u << E->K->m) - 1;
  LLVMValueRef t = LLVMBuildAdd(E->b, kuk, c32(E, (uint64_t)((kc * chunk_kinv(E)) & mask)), "");
  return LLVMBuildAnd(E->b, t, c32(E, mask), "aut.slot");
}

LLVMValueRef lw_ne_aut_chunk_pos(ne *E, LLVMValueRef kv) {
  if (!E->P->aut_k || E->src_view || E->K->cols) return kv;
  uint32_t mask = (1u << E->K->m) - 1;
  return LLVMBuildAnd(E->b, LLVMBuildMul(E->b, kv, c32(E, (uint64_t)E->P->aut_k & mask), ""), c32(E, mask), "aut.pos");
}
