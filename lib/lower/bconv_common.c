/* bconv_common.c: what both forms of the basis conversion kernel build
 * (bconv.c's scalar form, bconv_mma.c's tensor-core form): counted loops
 * (the host's blocks and threads, the forms' walks), phase 0 (the
 * conversion's constants from the parameter and conversion tables into
 * shared memory, each thread its items) and the polynomials' offsets in
 * the source and destination views. */
#include <string.h>

#include "lower/bconv_emit.h"
#include "lower/bconv_layout.h"

/* --------------------------------------------------------------- loops */

/* for (iv = begin; iv < end; iv += step), begin possibly >= end (then no
 * iteration). Types of the iv's: that of begin. */
loop lw_bc_loop_begin(bc *E, LLVMValueRef begin, LLVMValueRef end, const char *name) {
  loop L;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
  L.body = LLVMAppendBasicBlockInContext(E->c, E->fn, name);
  L.after = LLVMAppendBasicBlockInContext(E->c, E->fn, "");
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntULT, begin, end, ""), L.body, L.after);
  LLVMPositionBuilderAtEnd(E->b, L.body);
  L.iv = LLVMBuildPhi(E->b, LLVMTypeOf(begin), name);
  LLVMAddIncoming(L.iv, &begin, &pre, 1);
  return L;
}

void lw_bc_loop_end(bc *E, loop *L, LLVMValueRef step, LLVMValueRef end) {
  LLVMValueRef next = LLVMBuildNUWAdd(E->b, L->iv, step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
  LLVMAddIncoming(L->iv, &next, &latch, 1);
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntULT, next, end, ""), L->body, L->after);
  LLVMPositionBuilderAtEnd(E->b, L->after);
}

/* ------------------------------------------------------------ phase 0 */

static LLVMValueRef param(bc *E, int row, LLVMValueRef col) {
  LLVMValueRef idx = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, E->pstride, c64(E, (uint64_t)row), ""),
                                     col, "");
  return load_at(E, E->W, E->params, idx, walign(E), "");
}

/* Column i (i64) of the source (dst 0) or target (dst 1) columns: an add
 * when they are consecutive chain positions, else a load from the
 * constant array. */
static LLVMValueRef column(bc *E, int dst, LLVMValueRef i) {
  int32_t first = dst ? E->dcol0 : E->scol0;
  if (first >= 0) return LLVMBuildNUWAdd(E->b, i, dst ? E->ddcol0 : E->dscol0, "col");
  if (E->P->digits > 1) /* the digit's row of the array */
    i = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, E->dig, c64(E, (uint64_t)(dst ? E->P->m : E->P->l)), ""),
                        i, "");
  LLVMValueRef idx[2] = {c64(E, 0), i};
  LLVMValueRef p = LLVMBuildInBoundsGEP2(E->b, dst ? E->dcols_ty : E->scols_ty,
                                         dst ? E->dcols : E->scols, idx, 2, "");
  LLVMValueRef v = LLVMBuildLoad2(E->b, E->i32, p, "col");
  LLVMSetAlignment(v, 4);
  return zext(E, v, E->i64);
}

/* q and k (r32 -q^-1 mod 2^32, r62 -q^-1 mod 2^62) of parameter column col. */
static void modulus(bc *E, LLVMValueRef col, LLVMValueRef *q, LLVMValueRef *k) {
  *q = LLVMBuildLShr(E->b, param(E, 0, col), cw(E, 1), "q");
  LLVMValueRef lo = param(E, 3, col), hi = param(E, 4, col);
  *k = LLVMBuildOr(E->b, lo, LLVMBuildShl(E->b, hi, cw(E, (uint64_t)(E->wbits == 64 ? 31 : 16)), ""),
                   "k");
}

LLVMValueRef lw_bc_shared_idx(bc *E, int64_t base, LLVMValueRef i, int64_t stride, int64_t field) {
  LLVMValueRef x = LLVMBuildNUWMul(E->b, i, c64(E, (uint64_t)stride), "");
  return LLVMBuildNUWAdd(E->b, x, c64(E, (uint64_t)(base + field)), "");
}

static void sstore(bc *E, LLVMValueRef v, LLVMValueRef idx) {
  store_at(E, v, E->smem, idx, walign(E));
}

/* Source row idx: a' (or 4a'), its constant, s. */
void lw_bc_src_item(bc *E, LLVMValueRef idx, item_out *o) {
  const lw_bconv_plan *p = E->P;
  LLVMValueRef s, k;
  modulus(E, column(E, 0, idx), &s, &k);
  LLVMValueRef a = cw(E, 0), ak = cw(E, 0);
  if (!p->lift) {
    LLVMValueRef ti = LLVMBuildNUWAdd(E->b, idx, E->dtab_off, "");
    a = load_at(E, E->W, E->dtable, ti, walign(E), "a");
    /* Montgomery input: a' = canon(REDC(a * 1)) = h^-1 mod s */
    if (p->mont) a = lw_bc_csub(E, lw_bc_redc_mul(E, a, cw(E, 1), s, k), s);
    if (E->wbits == 64) {
      LLVMValueRef k4 = LLVMBuildShl(E->b, k, cw(E, 2), "");
      ak = LLVMBuildMul(E->b, a, k4, "ak4");
      a = LLVMBuildShl(E->b, a, cw(E, 2), "a4");
    } else {
      ak = LLVMBuildMul(E->b, a, k, "ak");
    }
  }
  LLVMValueRef f[3] = {a, ak, s};
  for (int j = 0; j < 3; j++) o->val[j] = f[j], o->at[j] = lw_bc_shared_idx(E, 0, idx, SRC_WORDS, j);
  o->n = 3;
}

/* Target row idx: r32 (t, k, 2^32 mod t, h mod t); r62 (t, k64, h mod t, 0). */
void lw_bc_tgt_item(bc *E, LLVMValueRef idx, item_out *o) {
  const lw_bconv_plan *p = E->P;
  LLVMValueRef t, k;
  modulus(E, column(E, 1, idx), &t, &k);
  LLVMValueRef f[4] = {t, k, cw(E, 0), cw(E, 0)};
  if (E->wbits == 64) {
    /* k64 = -t^-1 mod 2^64 from t^-1 mod 2^62 by one Newton step */
    LLVMValueRef y = LLVMBuildAnd(E->b, LLVMBuildNeg(E->b, k, ""), cw(E, (UINT64_C(1) << 62) - 1), "");
    y = LLVMBuildMul(E->b, y, LLVMBuildSub(E->b, cw(E, 2), LLVMBuildMul(E->b, t, y, ""), ""), "");
    f[1] = LLVMBuildNeg(E->b, y, "k64");
  } else {
    /* 2^32 mod t = (2^32 - t) mod t */
    f[2] = LLVMBuildURem(E->b, LLVMBuildNeg(E->b, t, ""), t, "r1");
  }
  if (p->lift) {
    LLVMValueRef q, qk;
    modulus(E, column(E, 0, c64(E, 0)), &q, &qk);
    f[E->wbits == 64 ? 2 : 3] = LLVMBuildURem(E->b, LLVMBuildLShr(E->b, q, cw(E, 1), ""), t, "hm");
  } else if (E->mma) {
    /* 2^8 R mod t (r32 2^40, r62 2^70), by 8 doublings of R mod t, so
     * that REDC(c 2^8 R) = 2^8 c; r62 also 2^32 mod t (field 2, the
     * reduction's fold) */
    LLVMValueRef r = f[2];
    if (E->wbits == 64) {
      r = LLVMBuildURem(E->b, cw(E, UINT64_C(1) << 62), t, "r62");
      f[2] = LLVMBuildURem(E->b, cw(E, UINT64_C(1) << 32), t, "r32");
    }
    for (int d = 0; d < 8; d++) r = lw_bc_csub(E, LLVMBuildShl(E->b, r, cw(E, 1), ""), t);
    f[3] = r;
  }
  for (int j = 0; j < 4; j++) o->val[j] = f[j], o->at[j] = lw_bc_shared_idx(E, tgt_base(p), idx, TGT_WORDS, j);
  o->n = 4;
}

/* A table word c of target row j in the form the sums use: Montgomery
 * output c R mod t (canon(REDC(c R^2))), and r62's factor 4 (its
 * reduction divides by 2^64, not R). */
LLVMValueRef lw_bc_product_constant(bc *E, LLVMValueRef cv, LLVMValueRef j, LLVMValueRef t,
                                    LLVMValueRef k) {
  if (E->P->mont) cv = lw_bc_csub(E, lw_bc_redc_mul(E, cv, param(E, 5, column(E, 1, j)), t, k), t);
  if (E->wbits == 64) {
    cv = LLVMBuildShl(E->b, cv, cw(E, 2), "");
    cv = lw_bc_csub(E, lw_bc_csub(E, cv, LLVMBuildShl(E->b, t, cw(E, 1), "")), t);
  }
  return cv;
}

/* Product constant idx = j l + i, target-row major. */
static void c_item(bc *E, LLVMValueRef idx, item_out *o) {
  const lw_bconv_plan *p = E->P;
  int64_t l = p->l;
  LLVMValueRef j = l == 1 ? idx : LLVMBuildUDiv(E->b, idx, c64(E, (uint64_t)l), "j");
  LLVMValueRef i = l == 1 ? c64(E, 0) : LLVMBuildURem(E->b, idx, c64(E, (uint64_t)l), "i");
  LLVMValueRef col = column(E, 1, j), t, k, cv;
  modulus(E, col, &t, &k);
  if (p->lift) {
    /* R mod t (r62 scaled: 4R = 2^64 mod t): with V = c', the sum
     * reduces to c' mod t */
    cv = LLVMBuildURem(E->b, LLVMBuildNeg(E->b, t, ""), t, "rt");
  } else {
    LLVMValueRef ti = LLVMBuildNUWAdd(E->b, LLVMBuildNUWAdd(E->b, idx, E->dtab_off, ""),
                                      c64(E, (uint64_t)l), "");
    cv = lw_bc_product_constant(E, load_at(E, E->W, E->dtable, ti, walign(E), "c"), j, t, k);
  }
  o->val[0] = cv;
  o->at[0] = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, j, c64(E, (uint64_t)crow_words(p)), ""),
                             LLVMBuildNUWAdd(E->b, i, c64(E, (uint64_t)c_base(p)), ""), "");
  o->n = 1;
}

/* Items [0, count) over the block's threads: thread tid takes tid, tid +
 * threads, ... Up to 4 of a thread's items are computed straight-line from
 * clamped (always valid) indices before any is stored, so their global
 * loads are in flight together: phase 0 costs about one load latency, not
 * one per item; the stores of items past count are skipped. */
void lw_bc_for_items(bc *E, LLVMValueRef t64, int64_t count, item_fn fn) {
  int64_t T = E->threads, K = (count + T - 1) / T;
  if (count <= 0) return;
  int C = K < 4 ? (int)K : 4;
  int64_t chunks = (K + C - 1) / C;
  loop L;
  LLVMValueRef base = t64;
  if (chunks > 1) {
    L = lw_bc_loop_begin(E, c64(E, 0), c64(E, (uint64_t)chunks), "chunk");
    base = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, L.iv, c64(E, (uint64_t)(C * T)), ""), t64, "");
  }
  item_out o[4];
  memset(o, 0, sizeof o);
  LLVMValueRef ok[4];
  for (int k = 0; k < C; k++) {
    LLVMValueRef idx = LLVMBuildNUWAdd(E->b, base, c64(E, (uint64_t)(k * T)), "item");
    ok[k] = LLVMBuildICmp(E->b, LLVMIntULT, idx, c64(E, (uint64_t)count), "");
    fn(E, lw_bc_umin(E, idx, c64(E, (uint64_t)(count - 1))), &o[k]);
  }
  for (int k = 0; k < C; k++) {
    LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(E->c, E->fn, "store");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(E->c, E->fn, "");
    LLVMBuildCondBr(E->b, ok[k], st, next);
    LLVMPositionBuilderAtEnd(E->b, st);
    for (int j = 0; j < o[k].n; j++)
      if (o[k].w32) LLVMSetAlignment(LLVMBuildStore(E->b, o[k].val[j], gep(E, E->i32, E->smem, o[k].at[j])), 4);
      else sstore(E, o[k].val[j], o[k].at[j]);
    LLVMBuildBr(E->b, next);
    LLVMPositionBuilderAtEnd(E->b, next);
  }
  if (chunks > 1) lw_bc_loop_end(E, &L, c64(E, 1), c64(E, (uint64_t)chunks));
}

void lw_bc_emit_phase0(bc *E, LLVMValueRef tid) {
  const lw_bconv_plan *p = E->P;
  LLVMValueRef t64 = zext(E, tid, E->i64);
  lw_bc_for_items(E, t64, p->l, lw_bc_src_item);
  lw_bc_for_items(E, t64, p->m, lw_bc_tgt_item);
  lw_bc_for_items(E, t64, (int64_t)p->l * p->m, c_item);
}

/* ------------------------------------------------- polynomial offsets */

/* The source offset of polynomial poly (i64): its coordinates in the
 * view's index space, and the digit's offset. */
LLVMValueRef lw_bc_poly_offset(bc *E, LLVMValueRef poly) {
  const lw_bconv_plan *p = E->P;
  LLVMValueRef off = E->dsrc_off, rest = poly;
  for (int a = p->src_nax - 1; a >= 0; a--) {
    LLVMValueRef ext = c64(E, (uint64_t)p->src_ext[a]);
    LLVMValueRef coord = a == 0 ? rest : LLVMBuildURem(E->b, rest, ext, "");
    if (a) rest = LLVMBuildUDiv(E->b, rest, ext, "");
    if (p->src_ext[a] > 1)
      off = LLVMBuildAdd(E->b, off, LLVMBuildMul(E->b, coord, c64(E, (uint64_t)p->src_stride[a]), ""), "");
  }
  return off;
}

/* The destination's first word of polynomial poly (rows of a larger
 * buffer: dst_offset, dst_poly_stride; 0: dense). */
LLVMValueRef lw_bc_poly_dst(bc *E, LLVMValueRef poly) {
  const lw_bconv_plan *p = E->P;
  int64_t pstr = p->dst_poly_stride ? p->dst_poly_stride : p->m * (INT64_C(1) << p->log_n);
  LLVMValueRef d = LLVMBuildNUWMul(E->b, poly, c64(E, (uint64_t)pstr), "");
  if (p->digits > 1 || p->dst_offset) d = LLVMBuildNUWAdd(E->b, d, E->ddst_off, "dbase.at");
  return d;
}
