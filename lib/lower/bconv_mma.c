/* bconv_mma.c: the basis conversion kernel's tensor-core form (bconv.c's
 * other form): the source words' bytes and the product constants' bytes
 * multiplied by mma.m16n8k32 (u8 x u8 -> s32), summed back to the scalar
 * form's sums and reduced by its arithmetic, so that both forms give the
 * same words. The layout of its shared memory: bconv_layout.h. */
#include "lower/bconv_emit.h"
#include "lower/bconv_layout.h"

/* 8-bit products on the tensor cores (mma.m16n8k32, u8 x u8 -> s32):
 * A[coefficient][k] B[k][n] summed over k, with k = (source row i, byte
 * a) and n = (target row j, byte b), a and b < 4 (r32) or 8 (r62):
 *   A = byte a of V_i (so A's 32-bit fragment words are the V_i
 *       themselves, r62 their low and high halves: 4 consecutive k),
 *   B = byte b of c_jia = c_ji 2^(8a) mod t_j (phase 0b; c_ji the scalar
 *       form's product constant, r62 with its factor 4),
 *   D_b = sum_(i,a) byte_a(V_i) byte_b(c_jia) < 32 KS 255^2 < 2^24,
 *   S = sum_b D_b 2^(8b) = sum_i V_i c_ji (mod t_j).
 * r32: S < 2^48, reduced by the scalar form's fold and REDC. r62: S = L
 * + 2^32 H (L the bytes 0..3, H the bytes 4..7, each below 2^49), folded
 * to L + H (2^32 mod t) < 2^64 t and reduced by the scalar form's 2^-64
 * Montgomery step: the same words either way. A warp converts tiles of
 * 16 coefficients of one polynomial; per tile and group of 8 target rows
 * it runs KS k-steps (8 halves each) for each byte b. Fragments (PTX ISA,
 * m16n8k32 .u8, g = lane / 4, c = lane % 4): A word r (0..3) holds row
 * (coefficient) g + 8 (r % 2), k-word c + 4 (r / 2); B word r holds
 * k-word c + 4 r, column g; D word r holds row g + 8 (r / 2), column 2 c
 * + r % 2. k-word w is half w % 2 of source row w / 2 (r62; r32 row w). */

static LLVMValueRef smem_word(bc *E, LLVMValueRef idx) {
  return load_at(E, E->W, E->smem, idx, walign(E), "");
}

/* Byte b of 32-bit x0..x3 packed into one word (x0's lowest): prmt. */
static LLVMValueRef prmt(bc *E, LLVMValueRef a, LLVMValueRef b, uint32_t sel) {
  LLVMTypeRef args[3] = {E->i32, E->i32, E->i32};
  LLVMTypeRef fty = LLVMFunctionType(E->i32, args, 3, 0);
  static const char text[] = "prmt.b32 $0, $1, $2, $3;", cons[] = "=r,r,r,r";
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, sizeof text - 1, cons, sizeof cons - 1, 0, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMValueRef in[3] = {a, b, c32(E, sel)};
  return LLVMBuildCall2(E->b, fty, fn, in, 3, "");
}
static LLVMValueRef byte_word(bc *E, LLVMValueRef *x, int b) {
  uint32_t sel = (uint32_t)b | (uint32_t)(4 + b) << 4;
  return prmt(E, prmt(E, x[0], x[1], sel), prmt(E, x[2], x[3], sel), 0x5410);
}

/* Phase 0b item idx = (j, i) over the padded [8 groups][8 KS / halves]
 * pairs: the B words (bytes b, halves h) of c_ji, zero outside [m][l].
 * After phase 0a (the target constants; field 3 2^8 R mod t). */
static void frag_item(bc *E, LLVMValueRef idx, item_out *o) {
  const lw_bconv_plan *p = E->P;
  int hw = mma_halves(p), nb = mma_bytes(p);
  int64_t KS = mma_ks(p), ipad = 8 * KS / hw;
  LLVMValueRef j = LLVMBuildUDiv(E->b, idx, c64(E, (uint64_t)ipad), "j");
  LLVMValueRef i = LLVMBuildURem(E->b, idx, c64(E, (uint64_t)ipad), "i");
  LLVMValueRef ok = LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntULT, j, c64(E, (uint64_t)p->m), ""),
                                 LLVMBuildICmp(E->b, LLVMIntULT, i, c64(E, (uint64_t)p->l), ""), "");
  LLVMValueRef jc = lw_bc_umin(E, j, c64(E, (uint64_t)(p->m - 1)));
  LLVMValueRef ic = lw_bc_umin(E, i, c64(E, (uint64_t)(p->l - 1)));
  LLVMValueRef t = smem_word(E, lw_bc_shared_idx(E, tgt_base(p), jc, TGT_WORDS, 0));
  LLVMValueRef k = smem_word(E, lw_bc_shared_idx(E, tgt_base(p), jc, TGT_WORDS, 1));
  LLVMValueRef r8 = smem_word(E, lw_bc_shared_idx(E, tgt_base(p), jc, TGT_WORDS, 3));
  /* the scalar form's constant (c_item) */
  LLVMValueRef ti = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, jc, c64(E, (uint64_t)p->l), ""), ic, "");
  ti = LLVMBuildNUWAdd(E->b, LLVMBuildNUWAdd(E->b, ti, E->dtab_off, ""), c64(E, (uint64_t)p->l), "");
  LLVMValueRef cv = lw_bc_product_constant(E, load_at(E, E->W, E->dtable, ti, walign(E), "c"), jc, t, k);
  LLVMValueRef ca[8];
  ca[0] = LLVMBuildSelect(E->b, ok, cv, cw(E, 0), "");
  for (int a = 1; a < nb; a++) { /* r62's REDC is lazy: below 1.5 t here */
    ca[a] = lw_bc_redc_mul(E, ca[a - 1], r8, t, k);
    if (E->wbits == 64) ca[a] = lw_bc_csub(E, ca[a], t);
  }
  /* where a word goes: group j / 8, column j % 8; k-word w = i hw + h:
   * k-step w / 8, word (w % 8) / 4 of lane 4 (j % 8) + w % 4 */
  LLVMValueRef jg = LLVMBuildLShr(E->b, j, c64(E, 3), "");
  LLVMValueRef col4 = LLVMBuildShl(E->b, LLVMBuildAnd(E->b, j, c64(E, 7), ""), c64(E, 2), "");
  o->n = 0;
  o->w32 = 1;
  for (int h = 0; h < hw; h++) {
    LLVMValueRef w = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, i, c64(E, (uint64_t)hw), ""),
                                     c64(E, (uint64_t)h), "kw");
    LLVMValueRef lane = LLVMBuildOr(E->b, col4, LLVMBuildAnd(E->b, w, c64(E, 3), ""), "lane");
    LLVMValueRef ks = LLVMBuildLShr(E->b, w, c64(E, 3), "");
    LLVMValueRef reg = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, w, c64(E, 2), ""), c64(E, 1), "");
    for (int b = 0; b < nb; b++) {
      /* byte b of c_j,i,4h+e for e < 4: byte b % 4 of their half b / 4 */
      LLVMValueRef x[4];
      for (int e = 0; e < 4; e++) {
        LLVMValueRef v = ca[4 * h + e];
        if (E->wbits == 64) v = trunc_to(E, LLVMBuildLShr(E->b, v, cw(E, (uint64_t)(32 * (b / 4))), ""), E->i32);
        x[e] = v;
      }
      LLVMValueRef at = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, jg, c64(E, (uint64_t)nb), ""), c64(E, (uint64_t)b), "");
      at = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, at, c64(E, (uint64_t)KS), ""), ks, "");
      at = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, at, c64(E, 64), ""),
                           LLVMBuildNUWAdd(E->b, LLVMBuildShl(E->b, lane, c64(E, 1), ""), reg, ""), "");
      o->val[o->n] = byte_word(E, x, b % 4);
      o->at[o->n++] = LLVMBuildNUWAdd(E->b, at, c64(E, (uint64_t)(c_base(p) * hw)), "");
    }
  }
}

#define MMA_MAX_TILES 4
#define MMA_MAX_KS (2 * LW_BCONV_MAX_L / 8)

/* A warp's phase-1 state: its tiles (polynomial, first coefficient,
 * whether it exists) and source words [tile][slot q: k-word 4 q + c]
 * [g, g + 8]. */
typedef struct p1m {
  LLVMValueRef lane, g, c;
  LLVMValueRef poly[MMA_MAX_TILES], i0[MMA_MAX_TILES], ok[MMA_MAX_TILES];
  LLVMValueRef w[MMA_MAX_TILES][2 * MMA_MAX_KS][2];
} p1m;

/* Slot q's source row (k-word 4 q + c, over the halves), and whether
 * every lane's row exists. */
static LLVMValueRef slot_row(bc *E, const p1m *S, int q, int *all_in) {
  const lw_bconv_plan *p = E->P;
  int hw = mma_halves(p);
  *all_in = (4 * q + 3) / hw < p->l;
  LLVMValueRef cr = hw == 2 ? LLVMBuildLShr(E->b, S->c, c64(E, 1), "") : S->c;
  return LLVMBuildNUWAdd(E->b, cr, c64(E, (uint64_t)(4 * q / hw)), "row");
}

/* The warp's tiles and the thread's source words, issued before phase 0. */
static void mma_load(bc *E, LLVMValueRef tid, LLVMValueRef blk, p1m *S) {
  const lw_bconv_plan *p = E->P;
  int MT = p->mma, KS = (int)mma_ks(p);
  int64_t per = (INT64_C(1) << p->log_n) / 16, tiles = p->polys * per;
  LLVMValueRef t64 = zext(E, tid, E->i64);
  S->lane = LLVMBuildAnd(E->b, t64, c64(E, 31), "lane");
  S->g = LLVMBuildLShr(E->b, S->lane, c64(E, 2), "g");
  S->c = LLVMBuildAnd(E->b, S->lane, c64(E, 3), "c");
  LLVMValueRef warp = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, blk, c64(E, p->mma_threads / 32), ""),
                                      LLVMBuildLShr(E->b, t64, c64(E, 5), ""), "warp");
  for (int t = 0; t < MT; t++) {
    LLVMValueRef tile = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, warp, c64(E, (uint64_t)MT), ""),
                                        c64(E, (uint64_t)t), "tile");
    S->ok[t] = LLVMBuildICmp(E->b, LLVMIntULT, tile, c64(E, (uint64_t)tiles), "");
    tile = lw_bc_umin(E, tile, c64(E, (uint64_t)(tiles - 1)));
    S->poly[t] = LLVMBuildUDiv(E->b, tile, c64(E, (uint64_t)per), "poly");
    S->i0[t] = LLVMBuildNUWMul(E->b, LLVMBuildURem(E->b, tile, c64(E, (uint64_t)per), ""), c64(E, 16), "i0");
    LLVMValueRef off = lw_bc_poly_offset(E, S->poly[t]);
    for (int q = 0; q < 2 * KS; q++) {
      int all_in;
      LLVMValueRef r = slot_row(E, S, q, &all_in);
      /* a row past the last reads the last (its product is zeroed later) */
      if (!all_in) r = lw_bc_umin(E, r, c64(E, (uint64_t)(p->l - 1)));
      LLVMValueRef roff = LLVMBuildAdd(E->b, off, LLVMBuildMul(E->b, r, c64(E, (uint64_t)p->src_row_stride), ""), "");
      for (int h = 0; h < 2; h++) {
        LLVMValueRef coef = LLVMBuildNUWAdd(E->b, S->i0[t], LLVMBuildNUWAdd(E->b, S->g, c64(E, (uint64_t)(8 * h)), ""), "");
        LLVMValueRef at = LLVMBuildAdd(E->b, roff, LLVMBuildMul(E->b, coef, c64(E, (uint64_t)p->src_index_stride), ""), "");
        S->w[t][q][h] = load_at(E, E->W, E->src, at, walign(E), "w");
      }
    }
  }
}

/* D = A B + C on the tensor cores (mma.sync.aligned.m16n8k32.row.col.u8). */
static void mma_u8(bc *E, LLVMValueRef *a, LLVMValueRef b0, LLVMValueRef b1, LLVMValueRef *acc) {
  static const char name[] = "llvm.nvvm.mma.m16n8k32.row.col.u8";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(E->m, id, NULL, 0);
  LLVMValueRef in[10] = {a[0], a[1], a[2], a[3], b0, b1, acc[0], acc[1], acc[2], acc[3]};
  LLVMValueRef r = LLVMBuildCall2(E->b, LLVMIntrinsicGetType(E->c, id, NULL, 0), fn, in, 10, "d");
  for (int x = 0; x < 4; x++) acc[x] = LLVMBuildExtractValue(E->b, r, (unsigned)x, "");
}

/* sum_b d[b] 2^(8b) over bytes b0 .. b0 + 3, in 64 bits. */
static LLVMValueRef byte_sum(bc *E, LLVMValueRef *d) {
  LLVMValueRef s = zext(E, d[0], E->i64);
  for (int b = 1; b < 4; b++)
    s = LLVMBuildNUWAdd(E->b, s, LLVMBuildShl(E->b, zext(E, d[b], E->i64), c64(E, (uint64_t)(8 * b)), ""), "");
  return s;
}

/* S = sum_b D_b 2^(8b), reduced as the scalar form does (above). */
static LLVMValueRef mma_reduce(bc *E, LLVMValueRef *d, const tgt *T) {
  LLVMValueRef s = byte_sum(E, d);
  if (E->wbits == 32) return lw_bc_redc32_fold(E, T, s);
  /* L + H (2^32 mod t) as 128 bits: below 2^49 t + 2^49 <= 2^64 t */
  LLVMValueRef f = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, zext(E, byte_sum(E, d + 4), E->i128),
                                                         zext(E, T->x1, E->i128), ""),
                                   zext(E, s, E->i128), "");
  LLVMValueRef u = lw_bc_reduce62(E, trunc_to(E, f, E->i64), lw_bc_high(E, f), c64(E, 0), T->t, T->k);
  return lw_bc_csub(E, u, T->t);
}

/* After phase 0: the A fragments (the V_i), then per group of 8 target
 * rows the products and each thread's results (rows j0 = 8 group + 2 c
 * and j0 + 1, coefficients g and g + 8 of each tile). */
static void mma_compute(bc *E, p1m *S) {
  const lw_bconv_plan *p = E->P;
  int MT = p->mma, KS = (int)mma_ks(p), hw = mma_halves(p), nb = mma_bytes(p);
  int64_t n = INT64_C(1) << p->log_n;
  LLVMValueRef A[MMA_MAX_TILES][MMA_MAX_KS][4];
  LLVMValueRef shift = hw == 2 ? LLVMBuildShl(E->b, LLVMBuildAnd(E->b, S->c, c64(E, 1), ""), c64(E, 5), "") : NULL;
  for (int q = 0; q < 2 * KS; q++) {
    int all_in;
    LLVMValueRef r = slot_row(E, S, q, &all_in);
    LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntULT, r, c64(E, (uint64_t)p->l), "");
    LLVMValueRef rc = lw_bc_umin(E, r, c64(E, (uint64_t)(p->l - 1)));
    LLVMValueRef sc[SRC_WORDS];
    for (int f = 0; f < SRC_WORDS; f++) sc[f] = smem_word(E, lw_bc_shared_idx(E, 0, rc, SRC_WORDS, f));
    for (int t = 0; t < MT; t++)
      for (int h = 0; h < 2; h++) {
        LLVMValueRef v = lw_bc_redc_const(E, S->w[t][q][h], sc[0], sc[1], sc[2]);
        if (E->wbits == 64) /* canonical, then this lane's half */
          v = trunc_to(E, LLVMBuildLShr(E->b, lw_bc_csub(E, v, sc[2]), shift, ""), E->i32);
        if (!all_in) v = LLVMBuildSelect(E->b, in, v, c32(E, 0), "");
        A[t][q / 2][(q % 2) * 2 + h] = v;
      }
  }
  LLVMValueRef dbase[MMA_MAX_TILES];
  for (int t = 0; t < MT; t++)
    dbase[t] = LLVMBuildNUWAdd(E->b, lw_bc_poly_dst(E, S->poly[t]), LLVMBuildNUWAdd(E->b, S->i0[t], S->g, ""), "dbase");
  LLVMTypeRef pair = LLVMVectorType(E->i32, 2);
  LLVMValueRef lane2 = LLVMBuildShl(E->b, S->lane, c64(E, 1), "");
  loop L = lw_bc_loop_begin(E, c64(E, 0), c64(E, (uint64_t)mma_groups(p)), "group");
  LLVMValueRef acc[MMA_MAX_TILES][8][4];
  for (int t = 0; t < MT; t++)
    for (int b = 0; b < nb; b++)
      for (int x = 0; x < 4; x++) acc[t][b][x] = c32(E, 0);
  for (int b = 0; b < nb; b++)
    for (int ks = 0; ks < KS; ks++) {
      LLVMValueRef at = LLVMBuildNUWMul(E->b, L.iv, c64(E, (uint64_t)(nb * KS * 64)), "");
      at = LLVMBuildNUWAdd(E->b, at, c64(E, (uint64_t)(c_base(p) * hw + (b * KS + ks) * 64)), "");
      LLVMValueRef bp = gep(E, E->i32, E->smem, LLVMBuildNUWAdd(E->b, at, lane2, ""));
      LLVMValueRef bv = LLVMBuildLoad2(E->b, pair, bp, "bf");
      LLVMSetAlignment(bv, 8);
      LLVMValueRef b0 = LLVMBuildExtractElement(E->b, bv, c32(E, 0), "");
      LLVMValueRef b1 = LLVMBuildExtractElement(E->b, bv, c32(E, 1), "");
      for (int t = 0; t < MT; t++) mma_u8(E, A[t][ks], b0, b1, acc[t][b]);
    }
  LLVMValueRef j0 = LLVMBuildNUWAdd(E->b, LLVMBuildShl(E->b, L.iv, c64(E, 3), ""),
                                    LLVMBuildShl(E->b, S->c, c64(E, 1), ""), "j0");
  tgt T[2];
  LLVMValueRef jrow[2], jok[2];
  for (int e = 0; e < 2; e++) {
    jrow[e] = LLVMBuildNUWAdd(E->b, j0, c64(E, (uint64_t)e), "j");
    jok[e] = LLVMBuildICmp(E->b, LLVMIntULT, jrow[e], c64(E, (uint64_t)p->m), "");
    LLVMValueRef jc = lw_bc_umin(E, jrow[e], c64(E, (uint64_t)(p->m - 1)));
    T[e].t = smem_word(E, lw_bc_shared_idx(E, tgt_base(p), jc, TGT_WORDS, 0));
    T[e].k = smem_word(E, lw_bc_shared_idx(E, tgt_base(p), jc, TGT_WORDS, 1));
    T[e].x1 = smem_word(E, lw_bc_shared_idx(E, tgt_base(p), jc, TGT_WORDS, 2));
    T[e].hm = NULL;
  }
  for (int t = 0; t < MT; t++)
    for (int x = 0; x < 4; x++) {
      int h = x / 2, e = x % 2;
      LLVMValueRef d[8];
      for (int b = 0; b < nb; b++) d[b] = acc[t][b][x];
      LLVMValueRef z = mma_reduce(E, d, &T[e]);
      LLVMValueRef at = LLVMBuildNUWAdd(E->b, dbase[t], LLVMBuildNUWMul(E->b, jrow[e], c64(E, (uint64_t)n), ""), "");
      if (h) at = LLVMBuildNUWAdd(E->b, at, c64(E, 8), "");
      LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(E->c, E->fn, "store");
      LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(E->c, E->fn, "");
      LLVMBuildCondBr(E->b, LLVMBuildAnd(E->b, jok[e], S->ok[t], ""), st, next);
      LLVMPositionBuilderAtEnd(E->b, st);
      store_at(E, z, E->dst, at, walign(E));
      LLVMBuildBr(E->b, next);
      LLVMPositionBuilderAtEnd(E->b, next);
    }
  lw_bc_loop_end(E, &L, c64(E, 1), c64(E, (uint64_t)mma_groups(p)));
}

/* The tensor-core kernel's body: loads, phase 0a (source and target
 * constants), phase 0b (the B fragments), then the products. */
void lw_bc_build_mma_body(bc *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_bconv_plan *p = E->P;
  p1m S;
  mma_load(E, tid, blk, &S);
  LLVMValueRef t64 = zext(E, tid, E->i64);
  lw_bc_for_items(E, t64, p->l, lw_bc_src_item);
  lw_bc_for_items(E, t64, p->m, lw_bc_tgt_item);
  LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
  lw_bc_for_items(E, t64, 8 * mma_groups(p) * 8 * mma_ks(p) / mma_halves(p), frag_item);
  LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
  mma_compute(E, &S);
}
