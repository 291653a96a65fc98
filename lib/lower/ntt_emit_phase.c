/* ntt_emit_phase.c: the phase bodies of the NTT's kernels (ntt_emit.c
 * builds the kernels around them; ntt_cluster.c's schedule reuses the
 * arithmetic, the row data and the twiddles): the modular arithmetic with
 * a row's constants, the per-row constants and the kind's pre and post
 * steps (with rescale's lift), the threads' layout and offsets, the
 * twiddles (from global memory, shared per block, prefetched), the passes,
 * and the staged load and store with their tail stages.
 * Products by a twiddle (or another per-row constant) use its precomputed
 * Montgomery constant (arith.c says why the result is SPEC's REDC). */
#include <stdio.h>
#include <string.h>

#include "lower/autmap.h"
#include "lower/ntt_emit.h"

/* ------------------------------------------------------------ arithmetic */

/* The modular arithmetic is arith.c's (shared with the pointwise
 * lowering); these take the row's constants from its rowc. */
static LLVMValueRef csub(ne *E, LLVMValueRef x, LLVMValueRef bound) {
  return lw_csub(&E->A, x, bound);
}
static mconst make_const(ne *E, const rowc *r, LLVMValueRef w) {
  return lw_mconst_make(&E->A, r->k4, w);
}
static mconst make_const_shoup(ne *E, const rowc *r, LLVMValueRef w) {
  return lw_mconst_shoup(&E->A, r->k4, r->q, w);
}
static LLVMValueRef redc_const(ne *E, const rowc *r, const mconst *mc, LLVMValueRef x,
                               int w_is_one) {
  return lw_redc_const(&E->A, r->q, r->nq, mc, x, w_is_one);
}
static LLVMValueRef lazyadd(ne *E, const rowc *r, LLVMValueRef a, LLVMValueRef b) {
  return lw_lazyadd(&E->A, r->q2, a, b);
}
static LLVMValueRef lazysub(ne *E, const rowc *r, LLVMValueRef a, LLVMValueRef b) {
  return lw_lazysub(&E->A, r->q2, a, b);
}

/* ------------------------------------------------------------- row data */

static LLVMValueRef param_word(ne *E, int prow, LLVMValueRef row, const char *name) {
  LLVMValueRef idx = LLVMBuildNUWAdd(E->b, LLVMBuildNUWMul(E->b, E->pstride, c64(E, (uint64_t)prow), ""),
                                     row, "");
  return load(E, E->W, E->params, idx, walign(E), name);
}

rowc lw_ne_row_consts(ne *E, LLVMValueRef batch_row) {
  rowc r;
  r.batch_row = batch_row;
  r.row = E->P->rows == 1 ? c64(E, 0)
                          : (E->P->rows == E->P->batch_rows
                                 ? batch_row
                                 : LLVMBuildURem(E->b, batch_row, c64(E, (uint64_t)E->P->rows), "row"));
  if (E->P->cols) { /* a stated basis: the row's chain position (no code without one) */
    char sym[96];
    snprintf(sym, sizeof sym, "%s.cols", E->prefix);
    r.row = lw_column(E->b, E->m, E->target, E->P->cols, E->P->rows, r.row, sym);
  }
  r.q2 = param_word(E, 0, r.row, "q2");
  r.q = LLVMBuildLShr(E->b, r.q2, cw(E, 1), "q");
  LLVMValueRef klo = param_word(E, 3, r.row, "k.lo"), khi = param_word(E, 4, r.row, "k.hi");
  LLVMValueRef k = LLVMBuildOr(E->b, klo, LLVMBuildShl(E->b, khi, cw(E, (uint64_t)(E->wbits == 64 ? 31 : 16)), ""), "k");
  r.k4 = E->wbits == 64 ? LLVMBuildShl(E->b, k, cw(E, 2), "k4") : k;
  r.nq = E->wbits == 64 ? LLVMBuildNeg(E->b, r.q, "nq") : NULL;
  LLVMValueRef off = LLVMBuildNUWMul(E->b, r.row, c64(E, (uint64_t)E->P->tw_row_stride), "");
  if (E->P->tw_offset) off = LLVMBuildNUWAdd(E->b, off, c64(E, (uint64_t)E->P->tw_offset), "");
  r.twrow = LLVMBuildInBoundsGEP2(E->b, E->W, E->tw, &off, 1, "twrow");
  r.lq = r.lneg = NULL;
  if (E->P->lift && E->src_view) {
    r.lq = LLVMBuildLShr(E->b, param_word(E, 0, c64(E, (uint64_t)E->P->lift_col), "lq2"), cw(E, 1), "lq");
    r.lneg = LLVMBuildSub(E->b, r.lq, LLVMBuildLShr(E->b, r.lq, cw(E, 1), ""), "lneg");
  }
  return r;
}

/* Rescale's lift (lw_ntt_plan.lift) with the pre step's to_mont, on a
 * source word x < q (q the lift column's modulus): x stands for the integer
 * x, or x - q from q - floor(q/2) on (the interpreter's (x + h) mod q - h,
 * h = floor(q/2)). With d = |that| < q, REDC(d * (R^2 mod t)) = d R mod t
 * (any d < 2^64 reduces: t may be far below q), below 2t (r32: canonical);
 * made canonical, then negated mod t on the negative side: the canonical
 * Montgomery form of lift(x) mod t. The plain pre step on the canonical
 * lift gives the same residue below 2t, which the transform's lazy bounds
 * take alike, and the transform's results do not depend on which
 * representative below 2t it was given (the tests check it bit for bit). */
static LLVMValueRef lift_step(ne *E, const rowc *r, const mconst *r2, LLVMValueRef x) {
  LLVMBuilderRef b = E->b;
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntUGE, x, r->lneg, "lift.neg");
  LLVMValueRef d = LLVMBuildSelect(b, neg, LLVMBuildSub(b, r->lq, x, ""), x, "lift.d");
  LLVMValueRef z = redc_const(E, r, r2, d, 0);
  if (E->wbits == 64) z = csub(E, z, r->q);
  LLVMValueRef nz = csub(E, LLVMBuildSub(b, r->q, z, ""), r->q);
  return LLVMBuildSelect(b, neg, nz, z, "lift");
}

/* The kind's pre step on a loaded word (coef-std: to_mont). */
LLVMValueRef lw_ne_pre_step(ne *E, const rowc *r, const mconst *r2, LLVMValueRef x) {
  if (E->P->kind != IR_NTT_STD_TO_NTT) return x;
  if (r->lq) return lift_step(E, r, r2, x);
  return redc_const(E, r, r2, x, 0);
}

/* A lift with a prologue (lw_ntt_plan.lift in kernel 0 of a plan with a
 * prologue: moddown and rescale in one forward NTT, mixsteps.c,
 * mdrs_steps): the prologue's word x (Montgomery form, below 2q) plus the
 * lift of source word w, below 2q (r62) or q (r32), as the transform takes
 * them. */
int lw_ne_lift_add_active(const ne *E) { return E->pro_active && E->P->lift; }

LLVMValueRef lw_ne_lift_add(ne *E, const rowc *r, const mconst *r2, LLVMValueRef x, LLVMValueRef w) {
  LLVMValueRef s = LLVMBuildNUWAdd(E->b, x, lift_step(E, r, r2, w), "liftadd");
  s = csub(E, s, r->q2);
  return E->wbits == 64 ? s : csub(E, s, r->q);
}

/* A row's constant for the pre and post steps: each thread computes it once
 * for all its words, so with shoup r62 takes Shoup's form here too. */
static mconst row_const(ne *E, const rowc *r, int prow, const char *name) {
  LLVMValueRef w = param_word(E, prow, r->row, name);
  return E->wbits == 64 && E->K->shoup ? make_const_shoup(E, r, w) : make_const(E, r, w);
}

mconst lw_ne_pre_const(ne *E, const rowc *r) {
  mconst mc = {0};
  if (E->P->kind == IR_NTT_STD_TO_NTT || lw_ne_lift_add_active(E)) mc = row_const(E, r, 5, "r2");
  return mc;
}

/* The kind's post step before a store: times N^-1 R; coef-std also REDC(v*1)
 * and the canonical subtraction. */
LLVMValueRef lw_ne_post_step(ne *E, const rowc *r, const mconst *ninv, LLVMValueRef v) {
  if (ir_ntt_is_forward(E->P->kind)) return v;
  v = redc_const(E, r, ninv, v, 0);
  if (E->P->kind == IR_NTT_TO_STD) {
    mconst one = {cw(E, E->wbits == 64 ? 4 : 1), r->k4, NULL};
    v = csub(E, redc_const(E, r, &one, v, 1), r->q);
  }
  return v;
}

mconst lw_ne_post_const(ne *E, const rowc *r) {
  mconst mc = {0};
  if (!ir_ntt_is_forward(E->P->kind)) mc = row_const(E, r, 7, "ninv");
  return mc;
}

/* -------------------------------------------------------- thread layout */

/* Where register r of a thread lives in a pass: the pass bits, then extra
 * bits for a short pass (nearest below the pass first, so threads keep
 * sharing twiddles), and the thread's own index u deposited in the rest. */
typedef struct passmap {
  int rpos[16]; /* local bit of register bit j */
  int nupos;
  int upos[24]; /* local bits filled by u, ascending */
  uint32_t kconst[1 << LW_NTT_MAX_LOG_E]; /* local position bits contributed by register r */
} passmap;

static void make_passmap(const lw_ntt_kplan *k, int j, passmap *pm) {
  int b = k->pass_b[j], e = k->pass_e[j], le = k->log_e;
  int used[32] = {0};
  for (int i = 0; i < e; i++) pm->rpos[i] = b + i, used[b + i] = 1;
  int n = e;
  for (int d = 1; n < le; d++) {
    if (b - d >= 0 && !used[b - d]) pm->rpos[n++] = b - d, used[b - d] = 1;
    if (n < le && b + e - 1 + d < k->m && !used[b + e - 1 + d])
      pm->rpos[n++] = b + e - 1 + d, used[b + e - 1 + d] = 1;
  }
  pm->nupos = 0;
  for (int bit = 0; bit < k->m; bit++)
    if (!used[bit]) pm->upos[pm->nupos++] = bit;
  for (uint32_t r = 0; r < (1u << le); r++) {
    uint32_t kc = 0;
    for (int i = 0; i < le; i++) kc |= ((r >> i) & 1u) << pm->rpos[i];
    pm->kconst[r] = kc;
  }
}

/* Scatters the bits of u (i32) to the positions pm->upos (runs at a time). */
static LLVMValueRef deposit_u(ne *E, const passmap *pm, LLVMValueRef u) {
  LLVMValueRef k = c32(E, 0);
  for (int i = 0; i < pm->nupos;) {
    int len = 1;
    while (i + len < pm->nupos && pm->upos[i + len] == pm->upos[i] + len) len++;
    LLVMValueRef part = i ? LLVMBuildLShr(E->b, u, c32(E, (uint64_t)i), "") : u;
    if (i + len < pm->nupos) part = LLVMBuildAnd(E->b, part, c32(E, (1u << len) - 1), "");
    if (pm->upos[i]) part = LLVMBuildShl(E->b, part, c32(E, (uint64_t)pm->upos[i]), "");
    k = LLVMBuildOr(E->b, k, part, "");
    i += len;
  }
  return k;
}

/* The thread's place in the block: sub-transform c, index u within it, and
 * the global facts of its sub-transform. */
typedef struct place {
  LLVMValueRef c, u;       /* i32 */
  LLVMValueRef batch_row;  /* i64 */
  LLVMValueRef gbase;      /* i64: dense word offset of local position 0 */
  LLVMValueRef ibase;      /* i64: its index within the row */
  LLVMValueRef tw_base;    /* i64: twiddle root of the sub-transform */
  LLVMValueRef sbase;      /* i32: shared word index of local position 0 */
} place;

static place thread_place(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  place p;
  int log_u = k->m - k->log_e;
  int64_t n = INT64_C(1) << E->P->log_n;
  if (k->cols) {
    p.c = LLVMBuildAnd(b, tid, c32(E, (1u << k->log_c) - 1), "c");
    p.u = LLVMBuildLShr(b, tid, c32(E, (uint64_t)k->log_c), "u");
    int log_bpr = k->log_subs - k->log_c; /* blocks per row */
    p.batch_row = LLVMBuildLShr(b, blk, c64(E, (uint64_t)log_bpr), "brow");
    LLVMValueRef col0 = LLVMBuildShl(b, LLVMBuildAnd(b, blk, c64(E, (UINT64_C(1) << log_bpr) - 1), ""),
                                     c64(E, (uint64_t)k->log_c), "");
    LLVMValueRef col = LLVMBuildNUWAdd(b, col0, LLVMBuildZExt(b, p.c, E->i64, ""), "col");
    p.gbase = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, p.batch_row, c64(E, (uint64_t)n), ""), col, "gbase");
    p.ibase = col;
    p.tw_base = c64(E, 1);
    p.sbase = p.c;
  } else {
    p.u = LLVMBuildAnd(b, tid, c32(E, (1u << log_u) - 1), "u");
    p.c = LLVMBuildLShr(b, tid, c32(E, (uint64_t)log_u), "c");
    LLVMValueRef gs = LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)k->log_c), ""),
                                      LLVMBuildZExt(b, p.c, E->i64, ""), "gs");
    p.batch_row = LLVMBuildLShr(b, gs, c64(E, (uint64_t)k->log_subs), "brow");
    p.gbase = LLVMBuildShl(b, gs, c64(E, (uint64_t)k->m), "gbase");
    LLVMValueRef sub = LLVMBuildAnd(b, gs, c64(E, (UINT64_C(1) << k->log_subs) - 1), "sub");
    p.ibase = LLVMBuildShl(b, sub, c64(E, (uint64_t)k->m), "");
    p.tw_base = LLVMBuildNUWAdd(b, c64(E, UINT64_C(1) << k->log_subs), sub, "twbase");
    p.sbase = LLVMBuildNUWMul(b, p.c, c32(E, (uint64_t)lw_ntt_chunk_stride(k)), "");
  }
  return p;
}

/* Dense global offset and shared index of local position kpos (i32). */
static LLVMValueRef goff(ne *E, const place *p, LLVMValueRef kpos) {
  LLVMValueRef k64 = LLVMBuildZExt(E->b, kpos, E->i64, "");
  if (E->K->cols) k64 = LLVMBuildShl(E->b, k64, c64(E, (uint64_t)E->K->log_subs), "");
  return LLVMBuildNUWAdd(E->b, p->gbase, k64, "");
}

/* Source offset of the start of batch-row br in the plan's source view. */
LLVMValueRef lw_ne_src_rowoff(ne *E, LLVMValueRef br) {
  const lw_ntt_plan *P = E->P;
  LLVMBuilderRef b = E->b;
  LLVMValueRef off = c64(E, (uint64_t)P->src_offset);
  LLVMValueRef rest = br;
  for (int a = P->src_nax - 1; a >= 0; a--) {
    if (P->src_ext[a] == 1) continue;
    int outer = 1; /* the outermost axis of extent > 1 takes the rest */
    for (int o = 0; o < a; o++)
      if (P->src_ext[o] > 1) outer = 0;
    LLVMValueRef coord = outer ? rest : LLVMBuildURem(b, rest, c64(E, (uint64_t)P->src_ext[a]), "");
    if (!outer) rest = LLVMBuildUDiv(b, rest, c64(E, (uint64_t)P->src_ext[a]), "");
    if (P->src_stride[a])
      off = LLVMBuildNUWAdd(b, off, LLVMBuildNUWMul(b, coord, c64(E, (uint64_t)P->src_stride[a]), ""), "");
  }
  return off;
}

/* Offset of the source element of local position kpos: the dense offset in
 * kernels after the first, the plan's view in the first. */
static LLVMValueRef soff(ne *E, const place *p, LLVMValueRef kpos) {
  if (!E->src_view || (E->src_dense && E->P->src_offset == 0)) return goff(E, p, kpos);
  if (E->src_dense)
    return LLVMBuildNUWAdd(E->b, goff(E, p, kpos), c64(E, (uint64_t)E->P->src_offset), "");
  LLVMValueRef k64 = LLVMBuildZExt(E->b, kpos, E->i64, "");
  if (E->K->cols) k64 = LLVMBuildShl(E->b, k64, c64(E, (uint64_t)E->K->log_subs), "");
  LLVMValueRef i = LLVMBuildNUWAdd(E->b, p->ibase, k64, "");
  if (E->P->src_index_stride != 1)
    i = LLVMBuildNUWMul(E->b, i, c64(E, (uint64_t)E->P->src_index_stride), "");
  return LLVMBuildNUWAdd(E->b, lw_ne_src_rowoff(E, p->batch_row), i, "");
}

/* x + (x >> pad_shift): padding against bank conflicts (none for 0); the
 * cluster's vector exchange steps by 2^pad_w words (lw_ntt_kplan.pad_w). */
LLVMValueRef lw_ne_padded(ne *E, LLVMValueRef x) {
  if (!E->K->pad_shift) return x;
  LLVMValueRef step = LLVMBuildLShr(E->b, x, c32(E, (uint64_t)E->K->pad_shift), "");
  if (E->K->pad_w) step = LLVMBuildShl(E->b, step, c32(E, (uint64_t)E->K->pad_w), "");
  return LLVMBuildNUWAdd(E->b, x, step, "");
}

static LLVMValueRef sidx(ne *E, const place *p, LLVMValueRef kpos) {
  LLVMBuilderRef b = E->b;
  if (E->K->cols) /* [M][C]: consecutive columns are consecutive words */
    return lw_ne_padded(E, LLVMBuildNUWAdd(b, LLVMBuildShl(b, kpos, c32(E, (uint64_t)E->K->log_c), ""), p->sbase, ""));
  return LLVMBuildNUWAdd(b, p->sbase, lw_ne_padded(E, kpos), "");
}

/* The same offsets for a position split into the thread's part ku (i32,
 * from deposit_u) and a register's constant part kc (disjoint bits): the
 * constant part becomes an added constant, which ptxas folds into the
 * load's or store's immediate offset, where the or of the two (shifted,
 * padded) cost several instructions per access. Shifts and the padding
 * x + (x >> s) distribute over an or of disjoint bits, so the offsets are
 * those of ku | kc. */
static uint64_t kc_words(ne *E, uint32_t kc) {
  return (uint64_t)kc << (E->K->cols ? E->K->log_subs : 0);
}

static LLVMValueRef goff_k(ne *E, const place *p, LLVMValueRef ku, uint32_t kc) {
  return add_const64(E, goff(E, p, ku), kc_words(E, kc));
}

static LLVMValueRef soff_k(ne *E, const place *p, LLVMValueRef ku, uint32_t kc) {
  uint64_t c = kc_words(E, kc);
  int view = E->src_view && !E->src_dense;
  if (view) c *= (uint64_t)E->P->src_index_stride;
  return add_const64(E, soff(E, p, ku), c);
}

uint64_t lw_ne_padded_const(ne *E, uint64_t x) {
  return E->K->pad_shift ? x + ((x >> E->K->pad_shift) << E->K->pad_w) : x;
}

static LLVMValueRef sidx_k(ne *E, const place *p, LLVMValueRef ku, uint32_t kc) {
  uint64_t c = E->K->cols ? lw_ne_padded_const(E, (uint64_t)kc << E->K->log_c)
                          : lw_ne_padded_const(E, kc);
  return add_const32(E, sidx(E, p, ku), c);
}

/* --------------------------------------------------------------- phases */

/* Cache of the twiddle constants of one pass, by table index offset. */
typedef struct twcache {
  int n;
  int beta[64];
  uint32_t key[64];
  mconst mc[64];
} twcache;

/* Shared twiddle constants (k->tws): entry j of sub-transform c (local
 * index: j = 2^l + i holds the twiddle of level l, offset i, of that
 * sub-transform's table subtree; column kernels share c = 0) at words
 * tws_word + 2 * ((c << tws_log) + j). */
static LLVMValueRef tws_slot(ne *E, LLVMValueRef c, LLVMValueRef j) {
  const lw_ntt_kplan *k = E->K;
  LLVMValueRef e = c ? LLVMBuildNUWAdd(E->b, LLVMBuildShl(E->b, c, c32(E, (uint64_t)k->tws_log), ""), j, "")
                     : j;
  return LLVMBuildNUWAdd(E->b, c32(E, k->tws_word), LLVMBuildShl(E->b, e, c32(E, 1), ""), "tws");
}

static mconst tws_const(ne *E, const place *p, LLVMValueRef ku, int beta, uint32_t key) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  /* the table index with the sub-transform's root taken as 1 */
  LLVMValueRef j = LLVMBuildNUWAdd(b, c32(E, (UINT64_C(1) << (k->m - 1 - beta)) + key),
                                   LLVMBuildLShr(b, ku, c32(E, (uint64_t)beta + 1), ""), "twj");
  LLVMValueRef slot = tws_slot(E, k->cols ? NULL : p->c, j);
  LLVMTypeRef pair = LLVMVectorType(E->W, 2);
  LLVMValueRef v = load(E, pair, E->smem, slot, 2 * walign(E), "twc");
  mconst mc = {0};
  LLVMValueRef first = LLVMBuildExtractElement(b, v, c32(E, 0), k->shoup ? "wr" : "w4");
  if (k->shoup) mc.wr = first;
  else mc.w4 = first;
  mc.wk4 = LLVMBuildExtractElement(b, v, c32(E, 1), "wk4");
  return mc;
}

/* The phase that fills the shared twiddle constants: entry e = tid + i*T of
 * the block's (C or 1) << m entries; local index j of sub-transform c is
 * table index ((root - 1) << l) + j at level l = floor(log2 j) (entry 0 is
 * never read; it gets a harmless in-row index). */
static void emit_tws_fill(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int64_t total = (INT64_C(1) << k->tws_log) << (k->cols ? 0 : k->log_c);
  int64_t T = k->threads;
  place p0 = thread_place(E, c32(E, 0), blk);
  int one_row = k->cols || k->log_c <= k->log_subs;
  rowc r0 = {0};
  if (one_row) r0 = lw_ne_row_consts(E, p0.batch_row);
  unsigned ctlz_id = LLVMLookupIntrinsicID("llvm.ctlz", 9);
  LLVMTypeRef i32t = E->i32;
  LLVMValueRef ctlz = LLVMGetIntrinsicDeclaration(E->m, ctlz_id, &i32t, 1);
  LLVMTypeRef ctlz_ty = LLVMIntrinsicGetType(E->c, ctlz_id, &i32t, 1);
  for (int64_t i = 0; i * T < total; i++) {
    LLVMValueRef e = LLVMBuildNUWAdd(b, tid, c32(E, (uint64_t)(i * T)), "twe");
    LLVMBasicBlockRef after = NULL;
    if ((i + 1) * T > total) { /* the last round covers part of the threads */
      LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(E->c, E->fn, "tws.body");
      after = LLVMAppendBasicBlockInContext(E->c, E->fn, "tws.after");
      LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, e, c32(E, (uint64_t)total), ""), body, after);
      LLVMPositionBuilderAtEnd(b, body);
    }
    LLVMValueRef c = LLVMBuildLShr(b, e, c32(E, (uint64_t)k->tws_log), "");
    LLVMValueRef j = LLVMBuildAnd(b, e, c32(E, (1u << k->tws_log) - 1), "");
    rowc r = r0;
    LLVMValueRef root = c64(E, 1);
    if (!k->cols) {
      LLVMValueRef gs = LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)k->log_c), ""),
                                        LLVMBuildZExt(b, c, E->i64, ""), "gs");
      if (!one_row)
        r = lw_ne_row_consts(E, LLVMBuildLShr(b, gs, c64(E, (uint64_t)k->log_subs), "brow"));
      root = LLVMBuildNUWAdd(b, c64(E, UINT64_C(1) << k->log_subs),
                             LLVMBuildAnd(b, gs, c64(E, (UINT64_C(1) << k->log_subs) - 1), ""), "root");
    }
    LLVMValueRef args[2] = {LLVMBuildOr(b, j, c32(E, 1), ""), LLVMConstInt(LLVMInt1TypeInContext(E->c), 0, 0)};
    LLVMValueRef lz = LLVMBuildCall2(b, ctlz_ty, ctlz, args, 2, "");
    LLVMValueRef level = LLVMBuildZExt(b, LLVMBuildSub(b, c32(E, 31), lz, ""), E->i64, "lvl");
    LLVMValueRef idx = LLVMBuildNUWAdd(b, LLVMBuildShl(b, LLVMBuildSub(b, root, c64(E, 1), ""), level, ""),
                                       LLVMBuildZExt(b, j, E->i64, ""), "twidx");
    LLVMValueRef w = load(E, E->W, r.twrow, idx, walign(E), "w");
    mconst mc = k->shoup ? make_const_shoup(E, &r, w) : make_const(E, &r, w);
    LLVMTypeRef pair = LLVMVectorType(E->W, 2);
    LLVMValueRef v = LLVMBuildInsertElement(b, LLVMGetUndef(pair), k->shoup ? mc.wr : mc.w4, c32(E, 0), "");
    v = LLVMBuildInsertElement(b, v, mc.wk4, c32(E, 1), "");
    LLVMValueRef ptr = LLVMBuildInBoundsGEP2(b, E->W, E->smem, (LLVMValueRef[]){tws_slot(E, k->cols ? NULL : c, j)}, 1, "");
    LLVMSetAlignment(LLVMBuildStore(b, v, ptr), 2 * walign(E));
    if (after) {
      LLVMBuildBr(b, after);
      LLVMPositionBuilderAtEnd(b, after);
    }
  }
}

/* The first pass's words straight from global memory (or the prologue),
 * with the kind's pre step. */
static void load_direct(ne *E, const place *p, const rowc *r, LLVMValueRef ku, const uint32_t *kc,
                        LLVMValueRef *x) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  mconst pre = {0};
  int liftadd = lw_ne_lift_add_active(E);
  if (k->pre || liftadd) pre = lw_ne_pre_const(E, r);
  LLVMValueRef kuk = lw_ne_aut_direct(E) ? lw_ne_aut_chunk_scale(E, ku) : NULL;
  for (int i = 0; i < (1 << k->log_e); i++) {
    if (E->pro_active) {
      LLVMValueRef k64 = LLVMBuildZExt(b, ku, E->i64, "");
      if (k->cols) k64 = LLVMBuildShl(b, k64, c64(E, (uint64_t)k->log_subs), "");
      LLVMValueRef i64 = add_const64(E, LLVMBuildNUWAdd(b, p->ibase, k64, ""), kc_words(E, kc[i]));
      x[i] = lw_ne_pro_or_src(E, p->batch_row, i64,
                              E->P->pro_rows ? soff_k(E, p, ku, kc[i]) : NULL);
      if (liftadd) { /* the offset again after the prologue's call (hoisting it reorders the PTX) */
        LLVMValueRef w = load(E, E->W, E->src, soff_k(E, p, ku, kc[i]), walign(E), "w");
        x[i] = lw_ne_lift_add(E, r, &pre, x[i], w);
        continue;
      }
    } else {
      LLVMValueRef at = kuk ? goff(E, p, lw_ne_aut_chunk_slot(E, kuk, kc[i])) : soff_k(E, p, ku, kc[i]);
      x[i] = load(E, E->W, E->src, at, walign(E), "x");
    }
    if (k->pre && !lw_ne_aut_regs_active(E)) x[i] = lw_ne_pre_step(E, r, &pre, x[i]);
  }
}

/* The thread's own bits of its local positions in pass j (register r's
 * position adds pm->kconst[r]). */
static LLVMValueRef pass_positions(ne *E, int j, const place *p, passmap *pm) {
  make_passmap(E->K, j, pm);
  return deposit_u(E, pm, p->u);
}

void lw_ne_preload_pass0(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  passmap pm;
  place p = thread_place(E, tid, blk);
  rowc r = lw_ne_row_consts(E, p.batch_row);
  LLVMValueRef ku = pass_positions(E, 0, &p, &pm);
  load_direct(E, &p, &r, ku, pm.kconst, E->pre_x);
}

/* Table index of the twiddle of local bit beta for the butterflies whose
 * low word is at local position pos (i32), before the constant bits of a
 * register: the sub-transform's root tw_base, shifted to the bit's level,
 * plus the position's bits above beta. */
static LLVMValueRef tw_index(ne *E, LLVMValueRef tw_base, LLVMValueRef pos, int beta) {
  LLVMBuilderRef b = E->b;
  return LLVMBuildNUWAdd(b, LLVMBuildShl(b, tw_base, c64(E, (uint64_t)(E->K->m - 1 - beta)), ""),
                         LLVMBuildZExt(b, LLVMBuildLShr(b, pos, c32(E, (uint64_t)beta + 1), ""), E->i64, ""),
                         "twi");
}

/* The twiddle root of chunk c of block blk (chunk kernels). */
static LLVMValueRef chunk_tw_base(ne *E, LLVMValueRef blk, LLVMValueRef c) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  LLVMValueRef gchunk = LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)k->log_c), ""),
                                        LLVMBuildZExt(b, c, E->i64, ""), "gs");
  return LLVMBuildNUWAdd(b, c64(E, UINT64_C(1) << k->log_subs),
                         LLVMBuildAnd(b, gchunk, c64(E, (UINT64_C(1) << k->log_subs) - 1), ""), "twbase");
}

/* r32: (a f + m q) / 2^32 with m = f (a k) mod 2^32, REDC(a f) without
 * its last subtraction, below 2q for a, f < q. The butterflies' products
 * take such a lazy w (w x < 4q^2 < 2^62 and their own REDC ends
 * canonical), so theirs is SPEC's word. */
static LLVMValueRef twiddle_product(ne *E, const rowc *r, LLVMValueRef a, LLVMValueRef f) {
  LLVMBuilderRef b = E->b;
  LLVMTypeRef i64 = E->i64;
  LLVMValueRef m = LLVMBuildMul(b, f, LLVMBuildMul(b, a, r->k4, ""), "twm");
  LLVMValueRef t = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, LLVMBuildZExt(b, a, i64, ""), LLVMBuildZExt(b, f, i64, ""), ""),
                                   LLVMBuildNUWMul(b, LLVMBuildZExt(b, m, i64, ""), LLVMBuildZExt(b, r->q, i64, ""), ""), "");
  return LLVMBuildTrunc(b, LLVMBuildLShr(b, t, c64(E, 32), ""), E->W, "twp");
}

/* idx split at bit twsplit: *lo = idx mod 2^U, *hi = idx - *lo, and
 * whether *hi is nonzero. */
static LLVMValueRef split_index(ne *E, LLVMValueRef idx, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMBuilderRef b = E->b;
  *lo = LLVMBuildAnd(b, idx, c64(E, (UINT64_C(1) << E->K->twsplit) - 1), "twlo");
  *hi = LLVMBuildXor(b, idx, *lo, "twhi");
  return LLVMBuildICmp(b, LLVMIntNE, *hi, c64(E, 0), "");
}

/* Twiddle idx of the row from two entries of its table (k->twsplit = U,
 * r32): with lo = idx mod 2^U and hi = idx - lo, T[idx] = REDC(T[hi] *
 * T[lo]) whenever both are nonzero, and T[idx] itself otherwise (one of
 * them is idx). Why it is exact: entry 2^s + g (g < 2^s) holds psi^e R
 * mod q with e = 2^(n-1-s) (1 + 2 br_s(g)), br_s the s-bit reversal; the
 * bits of lo and of g's rest are disjoint, so e(idx) = e(hi) + e(lo)
 * (docs/ntt.md, "Twiddles as products of two entries"), and REDC of two
 * Montgomery words is a Montgomery word of their product; a butterfly's
 * r32 product of it is canonical, so SPEC's word. Why it pays: T[hi] is
 * one word of every 2^U, the same for 2^U neighbouring indices, and T[lo]
 * lies in the table's first 2^U words, which every block of the row
 * reads, so the table is not streamed from memory once per row (r32 2^16 x 64 on an H100: the forward
 * 26.8 us with every row's own table, 24.5 with one table for all). */
static LLVMValueRef split_twiddle(ne *E, const rowc *r, LLVMValueRef idx) {
  LLVMBuilderRef b = E->b;
  LLVMValueRef lo, hi, has_hi = split_index(E, idx, &lo, &hi);
  LLVMValueRef both = LLVMBuildAnd(b, has_hi, LLVMBuildICmp(b, LLVMIntNE, lo, c64(E, 0), ""), "twboth");
  LLVMValueRef a = load(E, E->W, r->twrow, LLVMBuildSelect(b, has_hi, hi, lo, ""), walign(E), "twa");
  LLVMValueRef f = load(E, E->W, r->twrow, lo, walign(E), "twf");
  return LLVMBuildSelect(b, both, twiddle_product(E, r, a, f), a, "w");
}

/* The constant of twiddle idx of the row, loaded from global memory (or
 * from two of its entries, twsplit): in Shoup's form only with shoup 2
 * (its REDC(w) would serve one thread's few butterflies). */
mconst lw_ne_global_twiddle(ne *E, const rowc *r, LLVMValueRef idx) {
  LLVMValueRef w = E->K->twsplit > 0 && E->wbits == 32 ? split_twiddle(E, r, idx)
                                                        : load(E, E->W, r->twrow, idx, walign(E), "w");
  return E->K->shoup >= 2 ? make_const_shoup(E, r, w) : make_const(E, r, w);
}

/* k->twvec: the twiddles of keys [0, nkeys) after base (a stage of a pass
 * whose keys are the register bits above it: base has its low log2 nkeys
 * bits clear, so the run is aligned) read as 16-byte vectors, V words a
 * load, where the table's rows keep that alignment; with twsplit their
 * T[lo] factors so (T[hi] is one word for the run when nkeys <= 2^U).
 * Fills w[0..nkeys) with the twiddles; 0 where the form does not apply
 * (the caller then loads word by word). Why: a thread's run of a stage's
 * twiddles is nkeys consecutive words, which scalar loads fetch as nkeys
 * instructions each touching a warp's 32 sectors. */
static int vector_twiddles(ne *E, const rowc *r, LLVMValueRef base, int nkeys, LLVMValueRef *w) {
  const lw_ntt_kplan *k = E->K;
  int V = E->V;
  if (!k->twvec || nkeys < V || E->P->tw_offset % V || E->P->tw_row_stride % V) return 0;
  int split = k->twsplit > 0 && E->wbits == 32;
  if (split && nkeys > (1 << k->twsplit)) return 0;
  LLVMBuilderRef b = E->b;
  LLVMValueRef lo0 = base, a = NULL, has_hi = NULL, lo0_zero = NULL;
  if (split) {
    LLVMValueRef hi;
    has_hi = split_index(E, base, &lo0, &hi);
    lo0_zero = LLVMBuildICmp(b, LLVMIntEQ, lo0, c64(E, 0), "");
    /* T[hi], or T[0] where hi = 0 (then unused) */
    a = load(E, E->W, r->twrow, hi, walign(E), "twa");
  }
  for (int k0 = 0; k0 < nkeys; k0 += V) {
    LLVMValueRef idx = k0 ? LLVMBuildNUWAdd(b, lo0, c64(E, (uint64_t)k0), "") : lo0;
    LLVMValueRef pv = LLVMBuildInBoundsGEP2(b, E->W, r->twrow, &idx, 1, "");
    LLVMValueRef vec = LLVMBuildLoad2(b, E->vecW, pv, "twv");
    LLVMSetAlignment(vec, 16);
    for (int j = 0; j < V; j++) {
      LLVMValueRef f = LLVMBuildExtractElement(b, vec, c32(E, (uint64_t)j), "");
      if (!split) {
        w[k0 + j] = f;
        continue;
      }
      LLVMValueRef pr = twiddle_product(E, r, a, f);
      /* lo = lo0 + key is nonzero but for key 0 with lo0 = 0: then T[hi] */
      if (k0 + j == 0) pr = LLVMBuildSelect(b, lo0_zero, a, pr, "");
      w[k0 + j] = LLVMBuildSelect(b, has_hi, pr, f, "w");
    }
  }
  return 1;
}

/* One butterfly of SPEC section 5 on the words *lo and *hi. */
void lw_ne_butterfly(ne *E, const rowc *r, const mconst *mc, int fwd, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMValueRef a = *lo;
  if (fwd) {
    LLVMValueRef pr = redc_const(E, r, mc, *hi, 0);
    *lo = lazyadd(E, r, a, pr);
    *hi = lazysub(E, r, a, pr);
  } else {
    LLVMValueRef c = *hi;
    *lo = lazyadd(E, r, a, c);
    *hi = redc_const(E, r, mc, lazysub(E, r, a, c), 0);
  }
}

/* The stages of local bits [0, k->tail) on the V consecutive words x of a
 * staged vector at local position kpos (a multiple of V) of the
 * sub-transform with twiddle root tw_base: the forward's last stages, in
 * the staged store, or the inverse's first, in the staged load. Their
 * twiddles are each used by one vector only, so they come from global
 * memory (consecutive threads, consecutive twiddles). */
void lw_ne_tail_stages(ne *E, const rowc *r, LLVMValueRef tw_base, LLVMValueRef kpos, LLVMValueRef *x) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int fwd = ir_ntt_is_forward(E->P->kind);
  for (int s = 0; s < k->tail; s++) {
    int beta = fwd ? k->tail - 1 - s : s;
    LLVMValueRef base = tw_index(E, tw_base, kpos, beta);
    mconst mc[4];
    for (int key = 0; key < E->V >> (beta + 1); key++) {
      LLVMValueRef idx = key ? LLVMBuildNUWAdd(b, base, c64(E, (uint64_t)key), "") : base;
      mc[key] = lw_ne_global_twiddle(E, r, idx);
    }
    for (int lo = 0; lo < E->V; lo++)
      if (!(lo & (1 << beta))) lw_ne_butterfly(E, r, &mc[lo >> (beta + 1)], fwd, &x[lo], &x[lo | (1 << beta)]);
  }
}

/* prefetch.global.L1 or .L2 (text) of word idx of base (GPU). */
static void prefetch(ne *E, const char *text, LLVMValueRef base, LLVMValueRef idx) {
  LLVMValueRef ptr = LLVMBuildInBoundsGEP2(E->b, E->W, base, &idx, 1, "");
  LLVMValueRef addr = LLVMBuildPtrToInt(E->b, ptr, E->i64, "");
  LLVMTypeRef fty = LLVMFunctionType(E->voidt, &E->i64, 1, 0);
  static const char cons[] = "l";
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, sizeof cons - 1, 1, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(E->b, fty, fn, &addr, 1, "");
}

/* prefetch.global.L1 of twiddle idx of the row (GPU). */
static void prefetch_twiddle(ne *E, const rowc *r, LLVMValueRef idx) {
  prefetch(E, "prefetch.global.L1 [$0];", r->twrow, idx);
}

/* A staged load's groups: group g's vector of V words starts at word
 * (tid + g T) V of the block's 2^(log_c + m) words (i32). The L2
 * prefetches below walk them as the staged load does. */
static int64_t staged_groups(const ne *E) {
  return (INT64_C(1) << (E->K->log_c + E->K->m)) / (E->K->threads * E->V);
}

static LLVMValueRef staged_word(ne *E, LLVMValueRef tid, int64_t g) {
  LLVMValueRef t = LLVMBuildNUWAdd(E->b, tid, c32(E, (uint64_t)(g * E->K->threads)), "");
  return LLVMBuildShl(E->b, t, c32(E, (uint64_t)lw_ntt_ilog2((uint64_t)E->V)), "");
}

/* k->l2pf (GPU, kernel 0 with entry, no prologue): before the wait for the
 * stream's previous kernel, the thread prefetches into the L2 the source
 * words its first pass (or staged load) will read after the wait, so that
 * their DRAM reads overlap the previous kernel's last blocks instead of
 * following them. A prefetch returns no data: whatever the previous kernel
 * still writes to those lines goes to the L2 (the GPU's point of
 * coherence) and is what the loads after the wait read, so this changes
 * no result. A staged load over a source view that is not dense is left
 * alone (its vectors' addresses are the view's). */
void lw_ne_prefetch_source(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  static const char text[] = "prefetch.global.L2 [$0];";
  if (!k->staged_load || k->cols) { /* columns: the same words either way */
    passmap pm;
    place p = thread_place(E, tid, blk);
    LLVMValueRef ku = pass_positions(E, 0, &p, &pm);
    for (int i = 0; i < (1 << k->log_e); i++) prefetch(E, text, E->src, soff_k(E, &p, ku, pm.kconst[i]));
    return;
  }
  if (E->src_view && !E->src_dense) return;
  int64_t off = E->src_view ? E->P->src_offset : 0;
  LLVMValueRef gblock = LLVMBuildShl(b, blk, c64(E, (uint64_t)(k->log_c + k->m)), "");
  for (int64_t g = 0; g < staged_groups(E); g++) {
    LLVMValueRef e = staged_word(E, tid, g);
    LLVMValueRef gi = LLVMBuildNUWAdd(b, gblock, LLVMBuildZExt(b, e, E->i64, ""), "");
    prefetch(E, text, E->src, add_const64(E, gi, (uint64_t)off));
  }
}

/* Whether input i of epilogue target t is read at the transform's own
 * positions (epi_eval's walk: batch row br, index i): a polynomial of N
 * words a row, unit index stride, no batch axes, and as many rows as the
 * transform's batch rows, split into the transform's components
 * (ntt_comps > 1) or of one component. Its layout may be a view (offset,
 * strides), e.g. the Q rows of a key switch's sum. The register input is
 * not. */
static int epi_pf_input(const ne *E, int t, int32_t i) {
  const fhjit_graph *sub = E->pro->epi[t].sub;
  if (i == E->pro->epi[t].reg) return 0;
  const fhjit_type *ty = &sub->nodes[sub->inputs[i]].type;
  const fhjit_layout *l = &sub->nodes[sub->inputs[i]].layout;
  int ncomp = E->pro->ntt_comps > 1 ? E->pro->ntt_comps : 1;
  return ty->kind == FHJIT_KIND_POLY && ty->n == (INT64_C(1) << E->P->log_n) && ty->nbatch == 0 &&
         (ty->comps > 1 ? ty->comps : 1) == ncomp && ty->rows * ncomp == E->P->batch_rows &&
         l->index_stride == 1;
}

/* The offset in epilogue input (t, i) of the transform's element at dense
 * offset off (batch row off >> log N). */
static LLVMValueRef epi_pf_offset(ne *E, int t, int32_t i, LLVMValueRef off) {
  LLVMBuilderRef b = E->b;
  const fhjit_graph *sub = E->pro->epi[t].sub;
  const fhjit_type *ty = &sub->nodes[sub->inputs[i]].type;
  const fhjit_layout *l = &sub->nodes[sub->inputs[i]].layout;
  LLVMValueRef br = LLVMBuildLShr(b, off, c64(E, (uint64_t)E->P->log_n), "");
  LLVMValueRef idx = LLVMBuildAnd(b, off, c64(E, (UINT64_C(1) << E->P->log_n) - 1), "");
  LLVMValueRef comp = LLVMBuildUDiv(b, br, c64(E, (uint64_t)ty->rows), "");
  LLVMValueRef row = LLVMBuildURem(b, br, c64(E, (uint64_t)ty->rows), "");
  LLVMValueRef at = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, comp, c64(E, (uint64_t)l->comp_stride), ""),
                                    LLVMBuildNUWMul(b, row, c64(E, (uint64_t)l->row_stride), ""), "");
  return LLVMBuildNUWAdd(b, add_const64(E, at, (uint64_t)l->offset), idx, "epipf");
}

/* The prefetches of one element: every accepted input's word. */
static void epi_pf_element(ne *E, LLVMValueRef off) {
  static const char text[] = "prefetch.global.L2 [$0];";
  for (int t = 0; t < E->pro->nepi; t++)
    for (int32_t i = 0; i < E->pro->epi[t].sub->ninputs; i++)
      if (epi_pf_input(E, t, i)) prefetch(E, text, E->epi_in[t][i], epi_pf_offset(E, t, i, off));
}

/* k->epipf (GPU, the last kernel with an epilogue, not a reduce kernel):
 * before the wait for kernel 0, the thread prefetches into the L2 the
 * words of each epilogue input epi_pf_input accepts at the positions of
 * its block's words (its own first pass's, or its share of the block's
 * staged words): the block stores exactly those positions, so the
 * epilogue's loads at its end find them in the L2. A prefetch returns no
 * data and changes no result. */
void lw_ne_prefetch_epilogue(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int any = 0;
  for (int t = 0; t < E->pro->nepi; t++)
    for (int32_t i = 0; i < E->pro->epi[t].sub->ninputs; i++) any |= epi_pf_input(E, t, i);
  if (!any) return;
  if (!k->staged_load || k->cols) {
    passmap pm;
    place p = thread_place(E, tid, blk);
    LLVMValueRef ku = pass_positions(E, 0, &p, &pm);
    for (int w = 0; w < (1 << k->log_e); w++) epi_pf_element(E, goff_k(E, &p, ku, pm.kconst[w]));
    return;
  }
  LLVMValueRef gblock = LLVMBuildShl(b, blk, c64(E, (uint64_t)(k->log_c + k->m)), "");
  for (int64_t g = 0; g < staged_groups(E); g++) {
    LLVMValueRef e = staged_word(E, tid, g);
    epi_pf_element(E, LLVMBuildNUWAdd(b, gblock, LLVMBuildZExt(b, e, E->i64, ""), ""));
  }
}

/* l2pf for a prologue that is an NTT-domain automorphism of one dense
 * input (the inverse NTT of a rotation's operand): every chunk of M
 * outputs reads one aligned chunk of M source words, permuted (outputs j
 * of a chunk share the low bits of br(j), so their sources share the top
 * bits), so the thread prefetches the positions of that source chunk it
 * would prefetch of its own. Measured: without it the fused inverse ran
 * 5.8% (r62) and 7.0% (r32) over the NTT alone, +2.3% / +0.5% with both
 * unprefetched (H100, bench/results/2026-12-05-a9e81f7). 0 where the
 * prologue is anything else. */
int lw_ne_prefetch_aut_source(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  const lw_ntt_fusion *pro = E->pro;
  const fhjit_graph *sub = pro ? pro->sub : NULL;
  if (!sub || !k->staged_load || k->cols || E->P->pro_rows || pro->comp >= 0 || sub->ninputs != 1 ||
      sub->nnodes != 2)
    return 0;
  const ir_node *in = &sub->nodes[sub->inputs[0]], *a = &sub->nodes[1];
  fhjit_layout dense;
  if (a->op != IR_AUTOMORPHISM || a->type.domain != FHJIT_DOMAIN_NTT || a->args[0] != sub->inputs[0] ||
      in->type.comps > 1 || fhjit_dense_layout(&in->type, &dense) != FHJIT_OK ||
      memcmp(&dense, &in->layout, sizeof dense))
    return 0;
  LLVMBuilderRef b = E->b;
  static const char text[] = "prefetch.global.L2 [$0];";
  int64_t N = INT64_C(1) << E->P->log_n, M = INT64_C(1) << k->m;
  for (int64_t g = 0; g < staged_groups(E); g++) {
    LLVMValueRef e = staged_word(E, tid, g);
    LLVMValueRef c = LLVMBuildZExt(b, LLVMBuildLShr(b, e, c32(E, (uint64_t)k->m), ""), E->i64, "");
    LLVMValueRef kpos = LLVMBuildZExt(b, LLVMBuildAnd(b, e, c32(E, (uint32_t)(M - 1)), ""), E->i64, "");
    LLVMValueRef gc = LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)k->log_c), ""), c, "");
    LLVMValueRef br = LLVMBuildLShr(b, gc, c64(E, (uint64_t)k->log_subs), "");
    LLVMValueRef j0 = LLVMBuildShl(b, LLVMBuildAnd(b, gc, c64(E, (UINT64_C(1) << k->log_subs) - 1), ""),
                                   c64(E, (uint64_t)k->m), "");
    LLVMValueRef s0 = lw_aut_ntt_source(E->m, b, j0, N, a->attr[0], NULL);
    LLVMValueRef chunk = LLVMBuildAnd(b, s0, c64(E, ~(uint64_t)(M - 1)), "aut.chunk");
    LLVMValueRef idx = LLVMBuildNUWAdd(b, LLVMBuildShl(b, br, c64(E, (uint64_t)E->P->log_n), ""),
                                       LLVMBuildOr(b, chunk, kpos, ""), "");
    prefetch(E, text, E->extra[0], idx);
  }
  return 1;
}

/* k->twpf (GPU, forward): at the first pass, the twiddles that later passes
 * and the tail read from global memory (one per butterfly in the last
 * stages, so each thread's own) are prefetched into L1, so that their
 * loads, after the barriers between, find them there instead of waiting
 * for the L2. */
static void prefetch_later_twiddles(ne *E, const place *p, const rowc *r, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int fwd = ir_ntt_is_forward(E->P->kind), nr = 1 << k->log_e;
  for (int j = 1; j < k->npass; j++) {
    passmap pm;
    LLVMValueRef ku = pass_positions(E, j, p, &pm);
    int e = k->pass_e[j];
    for (int s = 0; s < e; s++) {
      int rb = fwd ? e - 1 - s : s, beta = k->pass_b[j] + rb;
      if (k->tws && k->m - 1 - beta < k->tws_log) continue;
      LLVMValueRef base = tw_index(E, p->tw_base, ku, beta);
      uint32_t seen[1 << LW_NTT_MAX_LOG_E];
      int nseen = 0;
      for (int lo = 0; lo < nr; lo++) {
        if (lo & (1 << rb)) continue;
        uint32_t key = pm.kconst[lo] >> (beta + 1);
        int dup = 0;
        for (int t = 0; t < nseen; t++) dup |= seen[t] == key;
        if (dup) continue;
        seen[nseen++] = key;
        prefetch_twiddle(E, r, key ? LLVMBuildNUWAdd(b, base, c64(E, key), "") : base);
      }
    }
  }
  /* the tail's, where the block's chunks share the thread's row */
  if (!k->tail || !k->staged_store || k->log_c > k->log_subs) return;
  int V = E->V;
  int64_t T = k->threads, groups = (INT64_C(1) << (k->log_c + k->m)) / (T * V);
  for (int64_t g = 0; g < groups; g++) {
    LLVMValueRef e = LLVMBuildShl(b, LLVMBuildNUWAdd(b, tid, c32(E, (uint64_t)(g * T)), ""),
                                  c32(E, (uint64_t)lw_ntt_ilog2((uint64_t)V)), "");
    LLVMValueRef c = LLVMBuildLShr(b, e, c32(E, (uint64_t)k->m), "");
    LLVMValueRef kpos = LLVMBuildAnd(b, e, c32(E, (1u << k->m) - 1), "");
    LLVMValueRef tw_base = chunk_tw_base(E, blk, c);
    for (int beta = 0; beta < k->tail; beta++) {
      LLVMValueRef base = tw_index(E, tw_base, kpos, beta);
      for (int key = 0; key < V >> (beta + 1); key++)
        prefetch_twiddle(E, r, key ? LLVMBuildNUWAdd(b, base, c64(E, (uint64_t)key), "") : base);
    }
  }
}

static void emit_pass(ne *E, int j, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int fwd = ir_ntt_is_forward(E->P->kind);
  int nr = 1 << k->log_e;
  passmap pm;
  place p = thread_place(E, tid, blk);
  rowc r = lw_ne_row_consts(E, p.batch_row);
  LLVMValueRef x[1 << LW_NTT_MAX_LOG_E];
  LLVMValueRef ku = pass_positions(E, j, &p, &pm);
  if (j == 0 && k->twpf && E->target == LW_GPU && ir_ntt_is_forward(E->P->kind))
    prefetch_later_twiddles(E, &p, &r, tid, blk);

  int direct_load = j == 0 && !k->staged_load;
  int direct_store = j == k->npass - 1 && !k->staged_store;
  if (direct_load && E->preloaded) {
    for (int i = 0; i < nr; i++) x[i] = E->pre_x[i];
  } else if (direct_load) {
    load_direct(E, &p, &r, ku, pm.kconst, x);
  } else {
    for (int i = 0; i < nr; i++) x[i] = load(E, E->W, E->smem, sidx_k(E, &p, ku, pm.kconst[i]), walign(E), "x");
  }
  /* a coefficient automorphism in kernel 0's registers: the pass goes on
   * at its output rows (its twiddles do not depend on them) */
  if (direct_load && lw_ne_aut_regs_active(E)) ku = lw_ne_aut_regs(E, &r, p.ibase, ku, x);

  /* Stages of the pass, each butterfly on registers lo and hi = lo | bit. */
  twcache tc;
  tc.n = 0;
  int e = k->pass_e[j], b0 = k->pass_b[j];
  for (int s = 0; s < e; s++) {
    int rb = fwd ? e - 1 - s : s;   /* register bit of this stage */
    int beta = b0 + rb;             /* local bit */
    LLVMValueRef base = tw_index(E, p.tw_base, ku, beta);
    /* twvec: the stage's run of keys [0, 2^(e-1-rb)) as vectors, where its
     * keys are that run (the register bits above rb, in order) */
    int nkeys = 1 << (e - 1 - rb), run = !(k->tws && k->m - 1 - beta < k->tws_log);
    for (int lo = 0; lo < nr && run; lo++)
      run = (pm.kconst[lo] >> (beta + 1)) == (uint32_t)(lo >> (rb + 1));
    LLVMValueRef wv[32];
    if (run && nkeys <= 32 && tc.n + nkeys <= (int)(sizeof tc.beta / sizeof tc.beta[0]) &&
        vector_twiddles(E, &r, base, nkeys, wv))
      for (int key = 0; key < nkeys; key++) {
        tc.beta[tc.n] = beta;
        tc.key[tc.n] = (uint32_t)key;
        tc.mc[tc.n++] = k->shoup >= 2 ? make_const_shoup(E, &r, wv[key]) : make_const(E, &r, wv[key]);
      }
    for (int lo = 0; lo < nr; lo++) {
      if (lo & (1 << rb)) continue;
      int hi = lo | (1 << rb);
      uint32_t key = pm.kconst[lo] >> (beta + 1);
      mconst *mc = NULL;
      for (int t = 0; t < tc.n; t++)
        if (tc.beta[t] == beta && tc.key[t] == key) mc = &tc.mc[t];
      if (!mc) {
        /* a pass's distinct twiddles: below 2^log_e <= 32 (a stage's
         * keys are the register bits above its own) */
        SP_ASSERT(tc.n < (int)(sizeof tc.beta / sizeof tc.beta[0]));
        tc.beta[tc.n] = beta;
        tc.key[tc.n] = key;
        if (k->tws && k->m - 1 - beta < k->tws_log) {
          tc.mc[tc.n] = tws_const(E, &p, ku, beta, key);
        } else {
          LLVMValueRef idx = key ? LLVMBuildNUWAdd(b, base, c64(E, key), "") : base;
          tc.mc[tc.n] = lw_ne_global_twiddle(E, &r, idx);
        }
        mc = &tc.mc[tc.n++];
      }
      lw_ne_butterfly(E, &r, mc, fwd, &x[lo], &x[hi]);
    }
  }

  if (direct_store) {
    mconst post = {0};
    if (k->post) post = lw_ne_post_const(E, &r);
    for (int i = 0; i < nr; i++) {
      LLVMValueRef v = k->post ? lw_ne_post_step(E, &r, &post, x[i]) : x[i];
      if (k->post) lw_ne_final_store(E, goff_k(E, &p, ku, pm.kconst[i]), &v, 1);
      else store(E, v, E->dst, goff_k(E, &p, ku, pm.kconst[i]), walign(E));
    }
  } else {
    for (int i = 0; i < nr; i++) store(E, x[i], E->smem, sidx_k(E, &p, ku, pm.kconst[i]), walign(E));
  }
}

/* Staged copy between global memory and shared memory for chunk kernels:
 * the block's C chunks are C*M consecutive words, read or written in 16-byte
 * vectors by consecutive threads. */
/* One group of a staged copy: element e = (tid + g T) V of the block,
 * chunk c = e >> m at position kpos = e & (M - 1), global index gi, shared
 * offset s0 of the chunk; its row constants, the pre or post step's, the
 * tail's twiddle base. */
typedef struct staged_group {
  int g, V, step, liftadd;
  LLVMValueRef e, c, kpos, gi, s0, tw_base;
  rowc r;
  mconst mc;
} staged_group;

/* The staged store of one group: the words from shared memory, the tail
 * stages and the post step, then the final store (kept for a reduce
 * kernel's member), or a vector to the destination. */
static void staged_store_group(ne *E, LLVMValueRef tid, staged_group *G) {
  LLVMBuilderRef b = E->b;
  const lw_ntt_kplan *k = E->K;
  LLVMValueRef vals[4];
  for (int v = 0; v < G->V; v++) {
    LLVMValueRef kv = v ? LLVMBuildNUWAdd(b, G->kpos, c32(E, (uint64_t)v), "") : G->kpos;
    LLVMValueRef si = LLVMBuildNUWAdd(b, G->s0, lw_ne_padded(E, kv), "");
    vals[v] = load(E, E->W, E->smem, si, walign(E), "x");
  }
  if (k->tail) lw_ne_tail_stages(E, &G->r, G->tw_base, G->kpos, vals);
  for (int v = 0; v < G->V && G->step; v++) vals[v] = lw_ne_post_step(E, &G->r, &G->mc, vals[v]);
  if (G->step && E->red_k >= 0) {
    lw_ne_red_keep(E, tid, G->g, vals);
  } else if (G->step) {
    lw_ne_final_store(E, G->gi, vals, G->V);
  } else {
    LLVMValueRef vec = LLVMGetUndef(E->vecW);
    for (int v = 0; v < G->V; v++)
      vec = LLVMBuildInsertElement(b, vec, vals[v], c32(E, (uint64_t)v), "");
    store(E, vec, E->dst, G->gi, E->target == LW_GPU ? 16u : walign(E));
  }
}

/* The staged load of one group: the source view's words (16-byte vectors
 * when they stay on the vector grid, else word by word; or the prologue's
 * values), the pre step or the lift's addition, the inverse's first
 * stages, then the stores into shared memory. */
static void staged_load_group(ne *E, LLVMValueRef blk, staged_group *G) {
  LLVMBuilderRef b = E->b;
  const lw_ntt_kplan *k = E->K;
  const lw_ntt_plan *P = E->P;
  int V = G->V;
  LLVMValueRef vals[4];
  LLVMValueRef gs = G->gi, istep = c64(E, 1);
  int vector = V > 1;
  LLVMValueRef pro_br = NULL, pro_i = NULL;
  if (E->pro_active || (E->src_view && !(E->src_dense && P->src_offset == 0))) {
    vector = V > 1 && P->src_index_stride == 1 && P->src_offset % V == 0;
    for (int a = 0; a < P->src_nax; a++)
      if (P->src_ext[a] > 1 && P->src_stride[a] % V) vector = 0;
    LLVMValueRef cc = LLVMBuildLShr(b, G->e, c32(E, (uint64_t)k->m), "");
    LLVMValueRef gsub = LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)k->log_c), ""),
                                        LLVMBuildZExt(b, cc, E->i64, ""), "");
    LLVMValueRef br = LLVMBuildLShr(b, gsub, c64(E, (uint64_t)k->log_subs), "");
    LLVMValueRef i = LLVMBuildNUWAdd(
        b, LLVMBuildShl(b, LLVMBuildAnd(b, gsub, c64(E, (UINT64_C(1) << k->log_subs) - 1), ""),
                        c64(E, (uint64_t)k->m), ""),
        LLVMBuildZExt(b, G->kpos, E->i64, ""), "");
    istep = c64(E, (uint64_t)P->src_index_stride);
    if (E->pro_active) {
      vector = 0;
      pro_br = br, pro_i = i;
    }
    if (!E->pro_active || G->liftadd || P->pro_rows)
      gs = LLVMBuildNUWAdd(b, lw_ne_src_rowoff(E, br), LLVMBuildNUWMul(b, i, istep, ""), "");
  }
  LLVMValueRef vec =
      vector ? load(E, E->vecW, E->src, gs, E->target == LW_GPU ? 16u : walign(E), "xv") : NULL;
  if (pro_br && E->pro_vec) vec = lw_ne_pro_value_vec(E, pro_br, pro_i), vector = 1;
  for (int v = 0; v < V; v++) {
    LLVMValueRef x;
    /* element v's source offset (unused with the vector load or a
     * prologue alone) */
    LLVMValueRef gv =
        v && !vector
            ? LLVMBuildNUWAdd(b, gs, LLVMBuildNUWMul(b, istep, c64(E, (uint64_t)v), ""), "")
            : gs;
    if (pro_br && !E->pro_vec)
      x = lw_ne_pro_or_src(E, pro_br,
                           v ? LLVMBuildNUWAdd(b, pro_i, c64(E, (uint64_t)v), "") : pro_i,
                           P->pro_rows ? gv : NULL);
    else
      x = vector ? LLVMBuildExtractElement(b, vec, c32(E, (uint64_t)v), "x")
                 : load(E, E->W, E->src, gv, walign(E), "x");
    if (G->liftadd) {
      vals[v] = lw_ne_lift_add(E, &G->r, &G->mc, x, load(E, E->W, E->src, gv, walign(E), "w"));
      continue;
    }
    vals[v] = G->step ? lw_ne_pre_step(E, &G->r, &G->mc, x) : x;
  }
  /* the inverse's first stages (a forward's tail is in its store) */
  if (k->tail && !ir_ntt_is_forward(P->kind))
    lw_ne_tail_stages(E, &G->r, G->tw_base, G->kpos, vals);
  for (int v = 0; v < V; v++) {
    LLVMValueRef kv = v ? LLVMBuildNUWAdd(b, G->kpos, c32(E, (uint64_t)v), "") : G->kpos;
    LLVMValueRef si = LLVMBuildNUWAdd(b, G->s0, lw_ne_padded(E, lw_ne_aut_chunk_pos(E, kv)), "");
    store(E, vals[v], E->smem, si, walign(E));
  }
}

static void emit_staged(ne *E, int is_load, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  if (is_load && lw_ne_aut_cols_load(E, tid, blk)) return;
  LLVMBuilderRef b = E->b;
  /* kernel 1's staged copy of a coefficient automorphism a word a thread
   * (ntt_plan autvec1=0): its stores at s k mod N2 an odd stride apart */
  int V = is_load && E->P->aut_k && E->P->aut_scalar1 && !E->pro_active ? 1 : E->V;
  int64_t per_block = INT64_C(1) << (k->log_c + k->m);
  int64_t T = k->threads;
  int groups = (int)(per_block / (T * V));
  LLVMValueRef gblock = LLVMBuildShl(b, blk, c64(E, (uint64_t)(k->log_c + k->m)), "");
  /* all chunks of a block in one row unless whole rows are packed per block */
  int one_row = k->log_c <= k->log_subs;
  rowc r0 = {0};
  mconst mc0 = {0};
  int liftadd = is_load && lw_ne_lift_add_active(E);
  int step = is_load ? k->pre || liftadd : k->post;
  if (one_row && (step || k->tail)) r0 = lw_ne_row_consts(E, LLVMBuildLShr(b, gblock, c64(E, (uint64_t)E->P->log_n), "brow"));
  if (one_row && step) mc0 = is_load ? lw_ne_pre_const(E, &r0) : lw_ne_post_const(E, &r0);
  for (int g = 0; g < groups; g++) {
    staged_group G = {.g = g, .V = V, .step = step, .liftadd = liftadd, .r = r0, .mc = mc0};
    /* element e = (tid + g*T) * V: chunk c = e >> m, position e & (M-1) */
    G.e = LLVMBuildShl(b, LLVMBuildNUWAdd(b, tid, c32(E, (uint64_t)(g * T)), ""),
                       c32(E, (uint64_t)lw_ntt_ilog2((uint64_t)V)), "e");
    G.c = LLVMBuildLShr(b, G.e, c32(E, (uint64_t)k->m), "");
    G.kpos = LLVMBuildAnd(b, G.e, c32(E, (1u << k->m) - 1), "");
    G.gi = LLVMBuildNUWAdd(b, gblock, LLVMBuildZExt(b, G.e, E->i64, ""), "");
    G.s0 = LLVMBuildNUWMul(b, G.c, c32(E, (uint64_t)lw_ntt_chunk_stride(k)), "");
    if (!one_row && (step || k->tail)) {
      LLVMValueRef gs = LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)k->log_c), ""),
                                        LLVMBuildZExt(b, G.c, E->i64, ""), "");
      G.r = lw_ne_row_consts(E, LLVMBuildLShr(b, gs, c64(E, (uint64_t)k->log_subs), "brow"));
      if (step) G.mc = is_load ? lw_ne_pre_const(E, &G.r) : lw_ne_post_const(E, &G.r);
    }
    G.tw_base = k->tail ? chunk_tw_base(E, blk, G.c) : NULL;
    if (is_load) staged_load_group(E, blk, &G);
    else staged_store_group(E, tid, &G);
  }
}

/* Phase ph of the kernel: [shared twiddles] [staged load] passes...
 * [staged store]; a staged load and the shared twiddles (both only write
 * shared memory that no one reads before the barrier) share one phase. */
int lw_ne_num_phases(const lw_ntt_kplan *k) {
  return (k->tws && !k->staged_load) + k->npass + k->staged_load + k->staged_store;
}

void lw_ne_emit_phase(ne *E, int ph, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  if (k->staged_load) {
    if (ph == 0) {
      emit_staged(E, 1, tid, blk);
      if (k->tws) emit_tws_fill(E, tid, blk);
      return;
    }
    ph--;
  } else if (k->tws) {
    if (ph == 0) {
      emit_tws_fill(E, tid, blk);
      return;
    }
    ph--;
  }
  if (ph < k->npass) emit_pass(E, ph, tid, blk);
  else emit_staged(E, 0, tid, blk);
}
