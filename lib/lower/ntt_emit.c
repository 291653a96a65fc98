/* ntt_emit.c: the NTT of SPEC section 5 as LLVM IR loop nests (see ntt.h
 * for the schedule; ntt_plan.c chooses the plan): the phase bodies, GPU
 * kernels and host functions around them, PTX, and the host JIT that runs
 * the same IR.
 * Products by a twiddle (or another per-row constant) use its precomputed
 * Montgomery constant (arith.c says why the result is SPEC's REDC). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"
#include "lower/arith.h"
#include "lower/ntt.h"
#include "nvptx/nvptx.h"

/* ----------------------------------------------------------- the emitter */

typedef struct ne {
  lw_arith A; /* the modular arithmetic's view of b, W, D (arith.h) */
  fhjit_context *ctx;
  const lw_ntt_plan *P;
  const lw_ntt_kplan *K;
  lw_target target;
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef W, D, i1, i32, i64, gptr, sptr, voidt, vecW;
  int wbits; /* 32 or 64: the word type's width */
  int V;     /* words of one 16-byte vector */
  LLVMValueRef fn;
  LLVMValueRef params, pstride, tw, src, dst, smem;
  LLVMValueRef barrier_fn;
  LLVMTypeRef barrier_ty;
  int src_view; /* 1: this kernel reads the plan's source view (kernel 0) */
  int src_dense; /* that view is dense [batch_rows, N] from src_offset */
  /* fused prologue (kernel 0 only) */
  const lw_ntt_fusion *pro;
  int pro_active;
  int pro_ncomp;             /* eval functions */
  LLVMValueRef pro_fn[3];
  LLVMTypeRef pro_ty[3];
  int64_t pro_values; /* values one call evaluates (lw_build_eval) */
  /* the vector prologue (lw_ntt_kplan.provec): evaluators of V consecutive
   * elements for the staged load (pro_value_vec), where pro_vec */
  int pro_vec;
  LLVMValueRef pro_vfn[3];
  LLVMTypeRef pro_vty[3];
  int64_t pro_vvalues;
  int pro_idx64;
  int64_t pro_rows_per_comp; /* batch * rows of the sub-graph's result */
  LLVMValueRef extra[LW_MAX_ARGS];
  /* fused epilogue (last kernel only): per target, eval functions, their
   * inputs and the output pointer among the kernel's arguments */
  int epi_active;
  int epi_ncomp[LW_NTT_MAX_EPI];
  int epi_idx64[LW_NTT_MAX_EPI];
  LLVMValueRef epi_fn[LW_NTT_MAX_EPI][3];
  LLVMTypeRef epi_ty[LW_NTT_MAX_EPI][3];
  int64_t epi_values[LW_NTT_MAX_EPI];
  /* the vector epilogue (lw_ntt_kplan.epivec): target t's evaluators of V
   * consecutive elements, where epi_vec[t] (final_store's vector stores) */
  int epi_vec[LW_NTT_MAX_EPI];
  LLVMValueRef epi_vfn[LW_NTT_MAX_EPI][3];
  LLVMTypeRef epi_vty[LW_NTT_MAX_EPI][3];
  int64_t epi_vvalues[LW_NTT_MAX_EPI];
  int64_t inlined; /* values of the evaluator calls in the kernel being built */
  LLVMValueRef epi_in[LW_NTT_MAX_EPI][LW_MAX_ARGS];
  LLVMValueRef epi_out[LW_NTT_MAX_EPI];
  /* k->early on the GPU: the first pass's words, loaded before the shared
   * twiddle phase (the host runs phases as loops over threads: it loads
   * them in the pass) */
  const char *prefix; /* of the kernel names: the completion counters' */
  LLVMValueRef own;   /* pdl 2: the LW_ARG_OWN argument */
  int preloaded;
  LLVMValueRef pre_x[1 << LW_NTT_MAX_LOG_E];
  /* ipfuse (lw_ntt_reduce), the last kernel: red_active; red_k >= 0 while
   * member red_k's body is emitted (its final words go to its slots);
   * red_slots: the GPU's per-thread slots (an alloca that becomes
   * registers: every index is a constant) */
  int red_active, red_k;
  LLVMValueRef red_slots;
  LLVMValueRef red_blk; /* the output block (i64), while members are emitted */
  /* red.acc > 0 (ipacc): result k's eval functions (fold member k into the
   * accumulator), per component */
  LLVMValueRef acc_fn[LW_MAX_REG][3];
  LLVMTypeRef acc_ty[LW_MAX_REG][3];
  int64_t acc_values[LW_MAX_REG];
  /* ipacc with the vector epilogue (epivec): result k's evaluators of V
   * consecutive words, per component (acc_vec: they exist) */
  int acc_vec;
  LLVMValueRef acc_vfn[LW_MAX_REG][3];
  LLVMTypeRef acc_vty[LW_MAX_REG][3];
  int64_t acc_vvalues[LW_MAX_REG];
} ne;

/* Per-row constants of the thread's row. */
typedef struct rowc {
  LLVMValueRef batch_row, row; /* i64; row: the parameter column and twiddle row */
  LLVMValueRef q, q2, k4;      /* words; k4 = 4k mod 2^64 (r62) or k (r32) */
  LLVMValueRef nq;             /* r62: 2^64 - q (Shoup's form) */
  LLVMValueRef twrow;          /* pointer to the row's twiddles */
  /* the first kernel of a plan with lift (lw_ntt_plan.lift): the lift
   * column's modulus q and q - floor(q/2), where its negative side starts;
   * NULL otherwise */
  LLVMValueRef lq, lneg;
} rowc;

/* A constant multiplier w with its precomputed Montgomery constant. */
typedef lw_mconst mconst;

static LLVMValueRef cw(ne *E, uint64_t x) { return LLVMConstInt(E->W, x, 0); }
static LLVMValueRef c32(ne *E, uint64_t x) { return LLVMConstInt(E->i32, x, 0); }
static LLVMValueRef c64(ne *E, uint64_t x) { return LLVMConstInt(E->i64, x, 0); }
static unsigned walign(ne *E) { return (unsigned)(E->wbits / 8); }

static void fn_attr(ne *E, LLVMValueRef fn, const char *name) { lw_fn_attr(E->c, fn, name); }

static void param_attr(ne *E, LLVMValueRef fn, unsigned param, const char *name) {
  lw_param_attr(E->c, fn, param, name);
}

static LLVMValueRef intrinsic(ne *E, const char *name, LLVMTypeRef *fty) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(E->m, id, NULL, 0);
  *fty = LLVMIntrinsicGetType(E->c, id, NULL, 0);
  return fn;
}

static LLVMValueRef sreg(ne *E, const char *name) { return lw_intrinsic0(E->c, E->m, E->b, name); }

static LLVMValueRef load(ne *E, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef idx,
                         unsigned align, const char *name) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(E->b, E->W, base, &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(E->b, ty, p, name);
  LLVMSetAlignment(v, align);
  return v;
}

static void store(ne *E, LLVMValueRef v, LLVMValueRef base, LLVMValueRef idx, unsigned align) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(E->b, E->W, base, &idx, 1, "");
  LLVMSetAlignment(LLVMBuildStore(E->b, v, p), align);
}

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

static rowc row_consts(ne *E, LLVMValueRef batch_row) {
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
static LLVMValueRef pre_step(ne *E, const rowc *r, const mconst *r2, LLVMValueRef x) {
  if (E->P->kind != IR_NTT_STD_TO_NTT) return x;
  if (r->lq) return lift_step(E, r, r2, x);
  return redc_const(E, r, r2, x, 0);
}

/* A lift with a prologue (lw_ntt_plan.lift in kernel 0 of a plan with a
 * prologue: moddown and rescale in one forward NTT, mixsteps.c,
 * mdrs_steps): the prologue's word x (Montgomery form, below 2q) plus the
 * lift of source word w, below 2q (r62) or q (r32), as the transform takes
 * them. */
static int lift_add_active(const ne *E) { return E->pro_active && E->P->lift; }

static LLVMValueRef lift_add(ne *E, const rowc *r, const mconst *r2, LLVMValueRef x, LLVMValueRef w) {
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

static mconst pre_const(ne *E, const rowc *r) {
  mconst mc = {0};
  if (E->P->kind == IR_NTT_STD_TO_NTT || lift_add_active(E)) mc = row_const(E, r, 5, "r2");
  return mc;
}

/* The kind's post step before a store: times N^-1 R; coef-std also REDC(v*1)
 * and the canonical subtraction. */
static LLVMValueRef post_step(ne *E, const rowc *r, const mconst *ninv, LLVMValueRef v) {
  if (ir_ntt_is_forward(E->P->kind)) return v;
  v = redc_const(E, r, ninv, v, 0);
  if (E->P->kind == IR_NTT_TO_STD) {
    mconst one = {cw(E, E->wbits == 64 ? 4 : 1), r->k4, NULL};
    v = csub(E, redc_const(E, r, &one, v, 1), r->q);
  }
  return v;
}

static mconst post_const(ne *E, const rowc *r) {
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
static LLVMValueRef src_rowoff(ne *E, LLVMValueRef br) {
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
  return LLVMBuildNUWAdd(E->b, src_rowoff(E, p->batch_row), i, "");
}

/* x + (x >> pad_shift): padding against bank conflicts (none for 0); the
 * cluster's vector exchange steps by 2^pad_w words (lw_ntt_kplan.pad_w). */
static LLVMValueRef padded(ne *E, LLVMValueRef x) {
  if (!E->K->pad_shift) return x;
  LLVMValueRef step = LLVMBuildLShr(E->b, x, c32(E, (uint64_t)E->K->pad_shift), "");
  if (E->K->pad_w) step = LLVMBuildShl(E->b, step, c32(E, (uint64_t)E->K->pad_w), "");
  return LLVMBuildNUWAdd(E->b, x, step, "");
}

static LLVMValueRef sidx(ne *E, const place *p, LLVMValueRef kpos) {
  LLVMBuilderRef b = E->b;
  if (E->K->cols) /* [M][C]: consecutive columns are consecutive words */
    return padded(E, LLVMBuildNUWAdd(b, LLVMBuildShl(b, kpos, c32(E, (uint64_t)E->K->log_c), ""), p->sbase, ""));
  return LLVMBuildNUWAdd(b, p->sbase, padded(E, kpos), "");
}

/* The same offsets for a position split into the thread's part ku (i32,
 * from deposit_u) and a register's constant part kc (disjoint bits): the
 * constant part becomes an added constant, which ptxas folds into the
 * load's or store's immediate offset, where the or of the two (shifted,
 * padded) cost several instructions per access. Shifts and the padding
 * x + (x >> s) distribute over an or of disjoint bits, so the offsets are
 * those of ku | kc. */
static LLVMValueRef add_const32(ne *E, LLVMValueRef x, uint64_t c) {
  return c ? LLVMBuildNUWAdd(E->b, x, c32(E, c), "") : x;
}

static LLVMValueRef add_const64(ne *E, LLVMValueRef x, uint64_t c) {
  return c ? LLVMBuildNUWAdd(E->b, x, c64(E, c), "") : x;
}

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

static uint64_t padded_const(ne *E, uint64_t x) {
  return E->K->pad_shift ? x + ((x >> E->K->pad_shift) << E->K->pad_w) : x;
}

static LLVMValueRef sidx_k(ne *E, const place *p, LLVMValueRef ku, uint32_t kc) {
  uint64_t c = E->K->cols ? padded_const(E, (uint64_t)kc << E->K->log_c) : padded_const(E, kc);
  return add_const32(E, sidx(E, p, ku), c);
}

/* One sub-graph's evaluators (lower.c), per component its function and
 * type, and the values one call costs (lw_max_values). */
typedef struct evalset {
  const LLVMValueRef *fn;
  const LLVMTypeRef *ty;
  int64_t values;
} evalset;

/* The arguments an evaluator of sub takes before its index: params,
 * pstride, the inputs in[], null result pointers. Returns their count. */
static int eval_head(ne *E, const fhjit_graph *sub, const LLVMValueRef *in, LLVMValueRef *args) {
  args[0] = E->params;
  args[1] = E->pstride;
  for (int32_t j = 0; j < sub->ninputs; j++) args[2 + j] = in[j];
  for (int32_t r = 0; r < sub->nresults; r++) args[2 + sub->ninputs + r] = LLVMConstPointerNull(E->gptr);
  return 2 + sub->ninputs + sub->nresults;
}

/* Component c's evaluator of es on args; with comp (not NULL) a switch on
 * comp over the ncomp components instead (an element's own component),
 * the results merged by a phi of type rty; blocks named after `where`. */
static LLVMValueRef eval_call(ne *E, const evalset *es, LLVMValueRef comp, int c, int ncomp,
                              LLVMValueRef *args, int nargs, LLVMTypeRef rty, const char *where,
                              const char *name) {
  LLVMBuilderRef b = E->b;
  if (!comp) {
    E->inlined += es->values;
    return LLVMBuildCall2(b, es->ty[c], es->fn[c], args, (unsigned)nargs, name);
  }
  char label[16];
  snprintf(label, sizeof label, "%.3s.merge", where);
  LLVMBasicBlockRef blocks[3], merge = LLVMAppendBasicBlockInContext(E->c, E->fn, label);
  LLVMValueRef vals[3];
  snprintf(label, sizeof label, "%.3s.comp", where);
  for (int k = 0; k < ncomp; k++) blocks[k] = LLVMAppendBasicBlockInContext(E->c, E->fn, label);
  LLVMValueRef sw = LLVMBuildSwitch(b, LLVMBuildTrunc(b, comp, E->i32, ""), blocks[ncomp - 1],
                                    (unsigned)ncomp - 1);
  for (int k = 0; k + 1 < ncomp; k++) LLVMAddCase(sw, c32(E, (uint64_t)k), blocks[k]);
  for (int k = 0; k < ncomp; k++) {
    LLVMPositionBuilderAtEnd(b, blocks[k]);
    E->inlined += es->values;
    vals[k] = LLVMBuildCall2(b, es->ty[k], es->fn[k], args, (unsigned)nargs, name);
    blocks[k] = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, merge);
  }
  LLVMPositionBuilderAtEnd(b, merge);
  LLVMValueRef phi = LLVMBuildPhi(b, rty, name);
  LLVMAddIncoming(phi, vals, blocks, (unsigned)ncomp);
  return phi;
}

/* The prologue's words x (one, or a vector from a multiple of V) of source
 * element (br, i), also stored into the store buffer
 * (lw_ntt_fusion.store_rows) when there is one. */
static LLVMValueRef pro_store(ne *E, LLVMValueRef br, LLVMValueRef i, LLVMValueRef x, unsigned align) {
  if (E->pro->store_rows <= 0) return x;
  LLVMBuilderRef b = E->b;
  LLVMValueRef rows = c64(E, (uint64_t)E->P->rows);
  LLVMValueRef poly = LLVMBuildUDiv(b, br, rows, ""), r = LLVMBuildURem(b, br, rows, "");
  LLVMValueRef row = LLVMBuildNUWAdd(
      b, LLVMBuildNUWMul(b, poly, c64(E, (uint64_t)E->pro->store_rows), ""),
      LLVMBuildNUWAdd(b, r, c64(E, (uint64_t)E->pro->store_first), ""), "");
  LLVMValueRef off = LLVMBuildNUWAdd(b, LLVMBuildShl(b, row, c64(E, (uint64_t)E->P->log_n), ""), i, "");
  store(E, x, E->extra[E->pro->sub->ninputs - 1], off, align);
  return x;
}

/* The source element (br, i) computed by the prologue's evaluator: the
 * component's eval function at walk offset rest * N + i. A source of several
 * components switches on the component (uniform within a block but for the
 * last rows of a whole-row block). vec: the V elements (br, i .. i + V - 1),
 * i a multiple of V, by the vector evaluator (its inputs loaded as vectors
 * where their layouts allow, where per-element calls load one word per
 * thread at a stride of V words), as a vector. */
static LLVMValueRef pro_eval(ne *E, LLVMValueRef br, LLVMValueRef i, int vec) {
  LLVMBuilderRef b = E->b;
  int single = E->pro->comp >= 0 || E->pro_ncomp == 1;
  LLVMValueRef rest = br, comp = NULL;
  if (!single) {
    LLVMValueRef rpc = c64(E, (uint64_t)E->pro_rows_per_comp);
    comp = LLVMBuildUDiv(b, br, rpc, "comp");
    rest = LLVMBuildURem(b, br, rpc, "");
  }
  LLVMValueRef off = LLVMBuildNUWAdd(b, LLVMBuildShl(b, rest, c64(E, (uint64_t)E->P->log_n), ""), i, "");
  if (vec) off = LLVMBuildLShr(b, off, c64(E, (uint64_t)lw_ntt_ilog2((uint64_t)E->V)), "pro.group");
  if (!E->pro_idx64) off = LLVMBuildTrunc(b, off, E->i32, "");
  LLVMValueRef args[LW_MAX_ARGS + 4];
  int nargs = eval_head(E, E->pro->sub, E->extra, args);
  args[nargs++] = off;
  evalset es = vec ? (evalset){E->pro_vfn, E->pro_vty, E->pro_vvalues}
                   : (evalset){E->pro_fn, E->pro_ty, E->pro_values};
  LLVMValueRef x = eval_call(E, &es, comp, E->pro->comp >= 0 ? E->pro->comp : 0, E->pro_ncomp,
                             args, nargs, vec ? E->vecW : E->W, "pro", vec ? "xv" : "x");
  unsigned align = vec && E->target == LW_GPU ? (unsigned)E->V * walign(E) : walign(E);
  return pro_store(E, br, i, x, align);
}

static LLVMValueRef pro_value(ne *E, LLVMValueRef br, LLVMValueRef i) { return pro_eval(E, br, i, 0); }
static LLVMValueRef pro_value_vec(ne *E, LLVMValueRef br, LLVMValueRef i) { return pro_eval(E, br, i, 1); }

/* Kernel 0's word at batch row br, index i, with a prologue: the
 * prologue's, or with lw_ntt_plan.pro_rows the prologue's on rows below
 * pro_rows of each polynomial (its batch row poly * pro_rows + row) and
 * the source's word at offset off on the others. */
static LLVMValueRef pro_or_src(ne *E, LLVMValueRef br, LLVMValueRef i, LLVMValueRef off) {
  const lw_ntt_plan *P = E->P;
  if (!P->pro_rows) return pro_value(E, br, i);
  LLVMBuilderRef b = E->b;
  LLVMValueRef rows = c64(E, (uint64_t)P->rows), pr = c64(E, (uint64_t)P->pro_rows);
  LLVMValueRef row = LLVMBuildURem(b, br, rows, "row"), poly = LLVMBuildUDiv(b, br, rows, "poly");
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef pb = LLVMAppendBasicBlockInContext(E->c, fn, "pro.rows");
  LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(E->c, fn, "src.rows");
  LLVMBasicBlockRef mb = LLVMAppendBasicBlockInContext(E->c, fn, "pro.merge");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, row, pr, ""), pb, sb);
  LLVMPositionBuilderAtEnd(b, pb);
  LLVMValueRef xp = pro_value(E, LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, poly, pr, ""), row, ""), i);
  LLVMBasicBlockRef pe = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, mb);
  LLVMPositionBuilderAtEnd(b, sb);
  LLVMValueRef xs = load(E, E->W, E->src, off, walign(E), "x");
  LLVMBuildBr(b, mb);
  LLVMPositionBuilderAtEnd(b, mb);
  LLVMValueRef phi = LLVMBuildPhi(b, E->W, "x");
  LLVMValueRef vals[2] = {xp, xs};
  LLVMBasicBlockRef blocks[2] = {pe, sb};
  LLVMAddIncoming(phi, vals, blocks, 2);
  return phi;
}

/* Epilogue target t at the transform's element of dense offset off (i64;
 * br = off >> logN), whose final value is x[0 .. nx) (nx registers): the
 * value of the target's component slot `slot` (ntt_comps <= 1: component
 * slot; else the element's own component, selected by a switch). vec: the
 * V consecutive elements from off (a multiple of V, one row) whose final
 * words are x[j V + v] (register j of nx, lane v), by target t's vector
 * evaluator, which loads its inputs as vectors where their layouts allow;
 * the V words as a vector. Why: called element by element, the
 * evaluator's loads are one word per thread at a stride of V words, each
 * warp-wide load touching V times the sectors it uses (ncu, r32 moddown's
 * epilogue: 10 of 32 bytes a sector). */
static LLVMValueRef epi_eval(ne *E, int t, int slot, LLVMValueRef off, const LLVMValueRef *x, int nx,
                             int vec) {
  LLVMBuilderRef b = E->b;
  LLVMValueRef args[LW_MAX_ARGS + 4 + LW_MAX_REG * LW_VMAX];
  int nregs = vec ? nx * E->V : nx;
  int nargs = eval_head(E, E->pro->epi[t].sub, E->epi_in[t], args) + 1;
  for (int j = 0; j < nregs; j++) args[nargs + j] = x[j];
  int ncomp = E->epi_ncomp[t];
  LLVMValueRef walk = off, comp = NULL;
  if (E->pro->ntt_comps > 1 && ncomp > 1) {
    /* the element's component: off / (rows per component * N), the same
     * for a vector's V elements (a component's rows are whole rows) */
    int64_t per_comp = (E->P->batch_rows / ncomp) << E->P->log_n;
    comp = LLVMBuildUDiv(b, off, c64(E, (uint64_t)per_comp), "epi.comp");
    walk = LLVMBuildURem(b, off, c64(E, (uint64_t)per_comp), "");
  }
  if (vec) walk = LLVMBuildLShr(b, walk, c64(E, (uint64_t)lw_ntt_ilog2((uint64_t)E->V)), "epi.group");
  args[nargs - 1] = E->epi_idx64[t] ? walk : LLVMBuildTrunc(b, walk, E->i32, "");
  evalset es = vec ? (evalset){E->epi_vfn[t], E->epi_vty[t], E->epi_vvalues[t]}
                   : (evalset){E->epi_fn[t], E->epi_ty[t], E->epi_values[t]};
  return eval_call(E, &es, comp, E->pro->ntt_comps <= 1 ? slot : 0, ncomp, args, nargs + nregs,
                   vec ? E->vecW : E->W, "epi", "epi");
}

static LLVMValueRef epi_value_regs(ne *E, int t, int slot, LLVMValueRef off, const LLVMValueRef *x,
                                   int nx) {
  return epi_eval(E, t, slot, off, x, nx, 0);
}

static LLVMValueRef epi_value(ne *E, int t, int slot, LLVMValueRef off, LLVMValueRef x) {
  return epi_eval(E, t, slot, off, &x, 1, 0);
}

static LLVMValueRef epi_value_vec(ne *E, int t, int slot, LLVMValueRef off, const LLVMValueRef *x,
                                  int nx) {
  return epi_eval(E, t, slot, off, x, nx, 1);
}

/* Component slots of target t per element, and the dense offset of slot
 * `slot` of the element at transform offset off. */
static int epi_slots(ne *E, int t) { return E->pro->ntt_comps <= 1 ? E->epi_ncomp[t] : 1; }

static LLVMValueRef epi_offset(ne *E, int slot, LLVMValueRef off) {
  if (!slot) return off;
  return LLVMBuildNUWAdd(E->b, off, c64(E, (uint64_t)((E->P->batch_rows * slot) << E->P->log_n)), "");
}

/* The last kernel's store of n consecutive final words x[] (n = 1, or a
 * vector of n <= V words at an offset aligned to n) at dense offset off:
 * the transform's result unless skipped, and every epilogue target there. */
static void final_store(ne *E, LLVMValueRef off, const LLVMValueRef *x, int n) {
  LLVMBuilderRef b = E->b;
  unsigned align = n > 1 && E->target == LW_GPU ? (unsigned)n * walign(E) : walign(E);
  LLVMTypeRef vty = n == E->V ? E->vecW : LLVMVectorType(E->W, (unsigned)(n > 1 ? n : 2));
  int store_ntt = !E->epi_active || !E->pro->skip_store;
  for (int t = -1; t < (E->epi_active ? E->pro->nepi : 0); t++) {
    if (t < 0 && !store_ntt) continue;
    for (int slot = 0; slot < (t < 0 ? 1 : epi_slots(E, t)); slot++) {
      LLVMValueRef base = t < 0 ? E->dst : E->epi_out[t];
      LLVMValueRef o = t < 0 ? off : epi_offset(E, slot, off);
      if (t >= 0 && n == E->V && n > 1 && E->epi_vec[t]) {
        store(E, epi_value_vec(E, t, slot, off, x, 1), base, o, align);
        continue;
      }
      LLVMValueRef vals[4];
      for (int v = 0; v < n; v++) {
        LLVMValueRef ov = v ? LLVMBuildNUWAdd(b, off, c64(E, (uint64_t)v), "") : off;
        vals[v] = t < 0 ? x[v] : epi_value(E, t, slot, ov, x[v]);
      }
      if (n == 1) {
        store(E, vals[0], base, o, walign(E));
      } else {
        LLVMValueRef vec = LLVMGetUndef(vty);
        for (int v = 0; v < n; v++) vec = LLVMBuildInsertElement(b, vec, vals[v], c32(E, (uint64_t)v), "");
        store(E, vec, base, o, align);
      }
    }
  }
}

/* ------------------------------------------------- ipfuse: reduce mode */

/* The last kernel of a reduce plan (lw_ntt_reduce): block blk of the grid
 * is output row orow = blk / bpr (bpr blocks per row), and every member's
 * body runs on a block of the batch in turn, its final words kept in slots
 * (red_keep), or, for the rows that are the operand's own, loaded from the
 * operand into them (red_own); the epilogue then reads all of them
 * (red_epilogue). A thread's slots hold the words of its staged store: word
 * e = (tid + g T) V + v of the block (g < E / V, v < V), the same in every
 * member's body, so each thread reads back only what it wrote. */
static int red_words(const ne *E) { return 1 << E->K->log_e; }

/* Slots a thread keeps per word of its block: every member's (D), or
 * accumulating (red.acc > 0, ipacc) the current member's and the sum's
 * red.acc components (slot 0 the member, 1 + c component c). */
static int red_nslots(const ne *E) {
  return E->pro->red.acc > 0 ? 1 + E->pro->red.acc : E->pro->red.members;
}

/* The slot of member k's words. */
static int red_mslot(const ne *E, int k) { return E->pro->red.acc > 0 ? 0 : k; }

static LLVMValueRef red_slot(ne *E, int k, int g, int v, LLVMValueRef tid) {
  const lw_ntt_kplan *K = E->K;
  LLVMBuilderRef b = E->b;
  if (E->target == LW_GPU) {
    LLVMValueRef idx = c64(E, (uint64_t)(k * red_words(E) + g * E->V + v));
    return LLVMBuildInBoundsGEP2(b, E->W, E->red_slots, &idx, 1, "slot");
  }
  /* host: the shared buffer after the body's words, [member][word of block] */
  LLVMValueRef e = LLVMBuildNUWAdd(b, LLVMBuildZExt(b, tid, E->i64, ""), c64(E, (uint64_t)g * K->threads), "");
  e = LLVMBuildNUWAdd(b, LLVMBuildShl(b, e, c64(E, (uint64_t)lw_ntt_ilog2((uint64_t)E->V)), ""),
                      c64(E, (uint64_t)v + K->smem_words + ((uint64_t)k << (K->log_c + K->m))), "");
  return LLVMBuildInBoundsGEP2(b, E->W, E->smem, &e, 1, "slot");
}

static void red_fold(ne *E, int k, LLVMValueRef tid, LLVMValueRef blk, int g);

/* Member red_k's final words vals[0..V) of staged group g (accumulating:
 * folded into the sum at once, so a thread holds one group's words of the
 * member, not all E). */
static void red_keep(ne *E, LLVMValueRef tid, int g, const LLVMValueRef *vals) {
  for (int v = 0; v < E->V; v++)
    LLVMSetAlignment(LLVMBuildStore(E->b, vals[v], red_slot(E, red_mslot(E, E->red_k), g, v, tid)),
                     walign(E));
  if (E->pro->red.acc) red_fold(E, E->red_k, tid, E->red_blk, g);
}

/* Dense offset (output row * N + index) of word (g, v) of the thread in
 * output block blk. */
static LLVMValueRef red_out_off(ne *E, LLVMValueRef tid, LLVMValueRef blk, int g, int v) {
  const lw_ntt_kplan *K = E->K;
  LLVMBuilderRef b = E->b;
  LLVMValueRef e = LLVMBuildNUWAdd(b, LLVMBuildZExt(b, tid, E->i64, ""), c64(E, (uint64_t)g * K->threads), "");
  e = LLVMBuildShl(b, e, c64(E, (uint64_t)lw_ntt_ilog2((uint64_t)E->V)), "");
  if (v) e = LLVMBuildNUWAdd(b, e, c64(E, (uint64_t)v), "");
  return LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)(K->log_c + K->m)), ""), e, "out");
}

/* The output row o (within its polynomial) of output block blk, the
 * polynomial, and the block within the row. */
static void red_place(ne *E, LLVMValueRef blk, LLVMValueRef *o, LLVMValueRef *poly, LLVMValueRef *inblk) {
  const lw_ntt_kplan *K = E->K;
  LLVMBuilderRef b = E->b;
  int log_bpr = K->log_subs - K->log_c;
  LLVMValueRef orow = LLVMBuildLShr(b, blk, c64(E, (uint64_t)log_bpr), "orow");
  LLVMValueRef rows = c64(E, (uint64_t)E->pro->red.out_rows);
  *o = LLVMBuildURem(b, orow, rows, "o");
  *poly = LLVMBuildUDiv(b, orow, rows, "poly");
  *inblk = LLVMBuildAnd(b, blk, c64(E, (UINT64_C(1) << log_bpr) - 1), "");
}

/* Whether output block blk's row is member k's own (uniform per block). */
static LLVMValueRef red_is_own(ne *E, int k, LLVMValueRef blk) {
  LLVMValueRef o, poly, inblk;
  red_place(E, blk, &o, &poly, &inblk);
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMValueRef rel = LLVMBuildSub(E->b, o, c64(E, (uint64_t)R->s0[k]), "");
  return LLVMBuildICmp(E->b, LLVMIntULT, rel, c64(E, (uint64_t)R->nd[k]), "own");
}

/* The batch block member k's body runs for output block blk (a row that is
 * not k's own): converted row o (o < s0) or o - nd of the member, at
 * batch rows urow[k] + .. of the polynomial. */
static LLVMValueRef red_member_blk(ne *E, int k, LLVMValueRef blk) {
  const lw_ntt_kplan *K = E->K;
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMBuilderRef b = E->b;
  LLVMValueRef o, poly, inblk;
  red_place(E, blk, &o, &poly, &inblk);
  LLVMValueRef hi = LLVMBuildICmp(b, LLVMIntUGE, o, c64(E, (uint64_t)R->s0[k]), "");
  LLVMValueRef c = LLVMBuildSelect(b, hi, LLVMBuildSub(b, o, c64(E, (uint64_t)R->nd[k]), ""), o, "");
  LLVMValueRef row = LLVMBuildNUWAdd(
      b, LLVMBuildNUWMul(b, poly, c64(E, (uint64_t)E->P->rows), ""),
      LLVMBuildNUWAdd(b, c, c64(E, (uint64_t)R->urow[k]), ""), "mrow");
  return LLVMBuildOr(b, LLVMBuildShl(b, row, c64(E, (uint64_t)(K->log_subs - K->log_c)), ""), inblk, "mblk");
}

/* Member k's slots from the operand's own rows (NTT domain already). */
static void red_own(ne *E, int k, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMBuilderRef b = E->b;
  int64_t n = INT64_C(1) << E->P->log_n;
  LLVMValueRef dptr = E->epi_in[0][R->d_input];
  for (int g = 0; g < red_words(E) / E->V; g++)
    for (int v = 0; v < E->V; v++) {
      LLVMValueRef off = red_out_off(E, tid, blk, g, v);
      LLVMValueRef o = LLVMBuildURem(b, LLVMBuildLShr(b, off, c64(E, (uint64_t)E->P->log_n), ""),
                                     c64(E, (uint64_t)R->out_rows), "");
      LLVMValueRef i = LLVMBuildAnd(b, off, c64(E, (uint64_t)n - 1), "");
      LLVMValueRef doff = LLVMBuildNUWAdd(
          b, c64(E, (uint64_t)R->d_offset),
          LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, o, c64(E, (uint64_t)R->d_row_stride), ""),
                          LLVMBuildNUWMul(b, i, c64(E, (uint64_t)R->d_index_stride), ""), ""), "");
      LLVMValueRef x = load(E, E->W, dptr, doff, walign(E), "own");
      LLVMSetAlignment(LLVMBuildStore(b, x, red_slot(E, red_mslot(E, k), g, v, tid)), walign(E));
      if (E->pro->red.acc && v == E->V - 1) red_fold(E, k, tid, blk, g);
    }
}

static LLVMValueRef asm_call(ne *E, LLVMTypeRef ret, const char *text, const char *cons,
                             LLVMValueRef *args, unsigned n);

/* GPU: x through a side-effecting move (an opaque copy the optimisers
 * keep in place and cannot prove equal to x). */
static LLVMValueRef red_pin(ne *E, LLVMValueRef x) {
  int w64 = LLVMGetIntTypeWidth(LLVMTypeOf(x)) == 64;
  return asm_call(E, LLVMTypeOf(x), w64 ? "mov.b64 $0, $1;" : "mov.b32 $0, $1;",
                  w64 ? "=l,l" : "=r,r", &x, 1);
}

/* red_fold with the vector evaluators: the group's V words of member k
 * and of each accumulator component as lane arguments, one call per
 * component. Why: called word by word, the fold's key loads are one word
 * a thread at a stride of V words (see epi_eval). */
static void red_fold_vec(ne *E, int k, LLVMValueRef tid, LLVMValueRef blk, int g) {
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMBuilderRef b = E->b;
  int V = E->V;
  LLVMValueRef args[LW_MAX_ARGS + 4 + LW_MAX_REG * LW_VMAX];
  int head = eval_head(E, E->pro->epi[0].sub, E->epi_in[0], args);
  LLVMValueRef walk = LLVMBuildLShr(b, red_out_off(E, tid, blk, g, 0),
                                    c64(E, (uint64_t)lw_ntt_ilog2((uint64_t)V)), "fold.group");
  args[head] = E->epi_idx64[0] ? walk : LLVMBuildTrunc(b, walk, E->i32, "");
  for (int v = 0; v < V; v++) {
    LLVMValueRef x = LLVMBuildLoad2(b, E->W, red_slot(E, 0, g, v, tid), "m");
    LLVMSetAlignment(x, walign(E));
    args[head + 1 + v] = x;
  }
  int nargs = head + 1 + (k ? 2 : 1) * V;
  for (int c = 0; c < R->acc; c++) {
    for (int v = 0; v < V && k; v++) {
      LLVMValueRef a = LLVMBuildLoad2(b, E->W, red_slot(E, 1 + c, g, v, tid), "acc");
      LLVMSetAlignment(a, walign(E));
      args[head + 1 + V + v] = a;
    }
    E->inlined += E->acc_vvalues[k];
    LLVMValueRef y = LLVMBuildCall2(b, E->acc_vty[k][c], E->acc_vfn[k][c], args, (unsigned)nargs, "fold");
    for (int v = 0; v < V; v++) {
      LLVMValueRef w = LLVMBuildExtractElement(b, y, c32(E, (uint64_t)v), "");
      if (E->target == LW_GPU) w = red_pin(E, w); /* see red_fold */
      LLVMSetAlignment(LLVMBuildStore(b, w, red_slot(E, 1 + c, g, v, tid)), walign(E));
    }
  }
}

/* ipacc: member k's words of staged group g (slot 0) folded into the
 * accumulator's components (slots 1 + c): result k of epilogue 0, member
 * k's word and (k > 0) the accumulator's component c as its registers. As
 * member k's body (red_keep) or own rows (red_own) produce the group, so
 * only the accumulator and one group of a member's words are live. */
static void red_fold(ne *E, int k, LLVMValueRef tid, LLVMValueRef blk, int g) {
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMBuilderRef b = E->b;
  /* GPU: each fold's addresses and row constants from copies of tid and
   * blk: without them one fold's (the keys' offsets, the row's modulus
   * and Montgomery constant: about 20 values at r62) were shared by all
   * the later ones, live across every body */
  if (E->target == LW_GPU) tid = red_pin(E, tid), blk = red_pin(E, blk);
  if (E->acc_vec) {
    red_fold_vec(E, k, tid, blk, g);
    return;
  }
  const fhjit_graph *sub = E->pro->epi[0].sub;
  int nx = k ? 2 : 1;
  int nargs = 2 + sub->ninputs + sub->nresults + 1 + nx;
  LLVMValueRef args[LW_MAX_ARGS + 4 + LW_MAX_REG];
  args[0] = E->params;
  args[1] = E->pstride;
  for (int32_t j = 0; j < sub->ninputs; j++) args[2 + j] = E->epi_in[0][j];
  for (int32_t r = 0; r < sub->nresults; r++) args[2 + sub->ninputs + r] = LLVMConstPointerNull(E->gptr);
  for (int v = 0; v < E->V; v++) {
    LLVMValueRef off = red_out_off(E, tid, blk, g, v);
    LLVMValueRef x = LLVMBuildLoad2(b, E->W, red_slot(E, 0, g, v, tid), "m");
    LLVMSetAlignment(x, walign(E));
    args[nargs - nx - 1] = E->epi_idx64[0] ? off : LLVMBuildTrunc(b, off, E->i32, "");
    args[nargs - nx] = x;
    for (int c = 0; c < R->acc; c++) {
      LLVMValueRef at = red_slot(E, 1 + c, g, v, tid);
      if (k) {
        LLVMValueRef a = LLVMBuildLoad2(b, E->W, at, "acc");
        LLVMSetAlignment(a, walign(E));
        args[nargs - 1] = a;
      }
      E->inlined += E->acc_values[k];
      LLVMValueRef y = LLVMBuildCall2(b, E->acc_ty[k][c], E->acc_fn[k][c], args, (unsigned)nargs, "fold");
      /* GPU: the fold computed here, not sunk to where the next fold
       * reads it (LLVM's O3 sank every fold to the last one, keeping
       * all members' words and keys live: r62 dnum 7 at 255 registers
       * and spills): a side-effecting move pins it before the next
       * member's body */
      if (E->target == LW_GPU) y = red_pin(E, y);
      LLVMSetAlignment(LLVMBuildStore(b, y, at), walign(E));
    }
  }
}

/* Epilogue 0 at every word of the thread, the members' words as its
 * register inputs (or, accumulating, the accumulator's components),
 * stored at its component slots of the output rows. */
static void red_epilogue(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMBuilderRef b = E->b;
  int V = E->V;
  int64_t polys = E->P->batch_rows / E->P->rows;
  unsigned align = E->target == LW_GPU ? (unsigned)V * walign(E) : walign(E);
  for (int g = 0; g < red_words(E) / V; g++) {
    LLVMValueRef off0 = red_out_off(E, tid, blk, g, 0);
    LLVMValueRef xs[4][LW_MAX_REG];
    for (int v = 0; v < V && !R->acc; v++)
      for (int k = 0; k < R->members; k++)
        xs[v][k] = LLVMBuildLoad2(b, E->W, red_slot(E, k, g, v, tid), "m"), LLVMSetAlignment(xs[v][k], walign(E));
    for (int slot = 0; slot < epi_slots(E, 0); slot++) {
      LLVMValueRef vec = LLVMGetUndef(E->vecW);
      if (!R->acc && E->epi_vec[0]) {
        LLVMValueRef xr[LW_MAX_REG * 4];
        for (int k = 0; k < R->members; k++)
          for (int v = 0; v < V; v++) xr[k * V + v] = xs[v][k];
        vec = epi_value_vec(E, 0, slot, off0, xr, R->members);
      }
      for (int v = 0; v < V && !(!R->acc && E->epi_vec[0]); v++) {
        LLVMValueRef o = v ? LLVMBuildNUWAdd(b, off0, c64(E, (uint64_t)v), "") : off0;
        LLVMValueRef x;
        if (R->acc) {
          x = LLVMBuildLoad2(b, E->W, red_slot(E, 1 + slot, g, v, tid), "sum");
          LLVMSetAlignment(x, walign(E));
        } else {
          x = epi_value_regs(E, 0, slot, o, xs[v], R->members);
        }
        vec = LLVMBuildInsertElement(b, vec, x, c32(E, (uint64_t)v), "");
      }
      LLVMValueRef o = slot ? LLVMBuildNUWAdd(b, off0, c64(E, (uint64_t)((polys * R->out_rows * slot) << E->P->log_n)), "")
                            : off0;
      store(E, vec, E->epi_out[0], o, align);
    }
  }
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
  if (one_row) r0 = row_consts(E, p0.batch_row);
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
      if (!one_row) r = row_consts(E, LLVMBuildLShr(b, gs, c64(E, (uint64_t)k->log_subs), "brow"));
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
  int liftadd = lift_add_active(E);
  if (k->pre || liftadd) pre = pre_const(E, r);
  for (int i = 0; i < (1 << k->log_e); i++) {
    if (E->pro_active) {
      LLVMValueRef k64 = LLVMBuildZExt(b, ku, E->i64, "");
      if (k->cols) k64 = LLVMBuildShl(b, k64, c64(E, (uint64_t)k->log_subs), "");
      LLVMValueRef i64 = add_const64(E, LLVMBuildNUWAdd(b, p->ibase, k64, ""), kc_words(E, kc[i]));
      x[i] = pro_or_src(E, p->batch_row, i64, E->P->pro_rows ? soff_k(E, p, ku, kc[i]) : NULL);
      if (liftadd) { /* the offset again after the prologue's call (hoisting it reorders the PTX) */
        LLVMValueRef w = load(E, E->W, E->src, soff_k(E, p, ku, kc[i]), walign(E), "w");
        x[i] = lift_add(E, r, &pre, x[i], w);
        continue;
      }
    } else {
      x[i] = load(E, E->W, E->src, soff_k(E, p, ku, kc[i]), walign(E), "x");
    }
    if (k->pre) x[i] = pre_step(E, r, &pre, x[i]);
  }
}

/* The thread's own bits of its local positions in pass j (register r's
 * position adds pm->kconst[r]). */
static LLVMValueRef pass_positions(ne *E, int j, const place *p, passmap *pm) {
  make_passmap(E->K, j, pm);
  return deposit_u(E, pm, p->u);
}

static void preload_pass0(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  passmap pm;
  place p = thread_place(E, tid, blk);
  rowc r = row_consts(E, p.batch_row);
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

/* The constant of twiddle idx of the row, loaded from global memory: in
 * Shoup's form only with shoup 2 (its REDC(w) would serve one thread's few
 * butterflies). */
static mconst global_twiddle(ne *E, const rowc *r, LLVMValueRef idx) {
  LLVMValueRef w = load(E, E->W, r->twrow, idx, walign(E), "w");
  return E->K->shoup >= 2 ? make_const_shoup(E, r, w) : make_const(E, r, w);
}

/* One butterfly of SPEC section 5 on the words *lo and *hi. */
static void butterfly(ne *E, const rowc *r, const mconst *mc, int fwd, LLVMValueRef *lo, LLVMValueRef *hi) {
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
static void tail_stages(ne *E, const rowc *r, LLVMValueRef tw_base, LLVMValueRef kpos, LLVMValueRef *x) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int fwd = ir_ntt_is_forward(E->P->kind);
  for (int s = 0; s < k->tail; s++) {
    int beta = fwd ? k->tail - 1 - s : s;
    LLVMValueRef base = tw_index(E, tw_base, kpos, beta);
    mconst mc[4];
    for (int key = 0; key < E->V >> (beta + 1); key++) {
      LLVMValueRef idx = key ? LLVMBuildNUWAdd(b, base, c64(E, (uint64_t)key), "") : base;
      mc[key] = global_twiddle(E, r, idx);
    }
    for (int lo = 0; lo < E->V; lo++)
      if (!(lo & (1 << beta))) butterfly(E, r, &mc[lo >> (beta + 1)], fwd, &x[lo], &x[lo | (1 << beta)]);
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

/* k->l2pf (GPU, kernel 0 with entry, no prologue): before the wait for the
 * stream's previous kernel, the thread prefetches into the L2 the source
 * words its first pass (or staged load) will read after the wait, so that
 * their DRAM reads overlap the previous kernel's last blocks instead of
 * following them. A prefetch returns no data: whatever the previous kernel
 * still writes to those lines goes to the L2 (the GPU's point of
 * coherence) and is what the loads after the wait read, so this changes
 * no result. A staged load over a source view that is not dense is left
 * alone (its vectors' addresses are the view's). */
static void prefetch_source(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  static const char text[] = "prefetch.global.L2 [$0];";
  if (!k->staged_load) {
    passmap pm;
    place p = thread_place(E, tid, blk);
    LLVMValueRef ku = pass_positions(E, 0, &p, &pm);
    for (int i = 0; i < (1 << k->log_e); i++) prefetch(E, text, E->src, soff_k(E, &p, ku, pm.kconst[i]));
    return;
  }
  if (E->src_view && !E->src_dense) return;
  int64_t off = E->src_view ? E->P->src_offset : 0;
  int64_t per_block = INT64_C(1) << (k->log_c + k->m), T = k->threads;
  LLVMValueRef gblock = LLVMBuildShl(b, blk, c64(E, (uint64_t)(k->log_c + k->m)), "");
  for (int64_t g = 0; g < per_block / (T * E->V); g++) {
    LLVMValueRef e = LLVMBuildShl(b, LLVMBuildNUWAdd(b, tid, c32(E, (uint64_t)(g * T)), ""),
                                  c32(E, (uint64_t)lw_ntt_ilog2((uint64_t)E->V)), "");
    LLVMValueRef gi = LLVMBuildNUWAdd(b, gblock, LLVMBuildZExt(b, e, E->i64, ""), "");
    prefetch(E, text, E->src, add_const64(E, gi, (uint64_t)off));
  }
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
  rowc r = row_consts(E, p.batch_row);
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

  /* Stages of the pass, each butterfly on registers lo and hi = lo | bit. */
  twcache tc;
  tc.n = 0;
  int e = k->pass_e[j], b0 = k->pass_b[j];
  for (int s = 0; s < e; s++) {
    int rb = fwd ? e - 1 - s : s;   /* register bit of this stage */
    int beta = b0 + rb;             /* local bit */
    LLVMValueRef base = tw_index(E, p.tw_base, ku, beta);
    for (int lo = 0; lo < nr; lo++) {
      if (lo & (1 << rb)) continue;
      int hi = lo | (1 << rb);
      uint32_t key = pm.kconst[lo] >> (beta + 1);
      mconst *mc = NULL;
      for (int t = 0; t < tc.n; t++)
        if (tc.beta[t] == beta && tc.key[t] == key) mc = &tc.mc[t];
      if (!mc) {
        tc.beta[tc.n] = beta;
        tc.key[tc.n] = key;
        if (k->tws && k->m - 1 - beta < k->tws_log) {
          tc.mc[tc.n] = tws_const(E, &p, ku, beta, key);
        } else {
          LLVMValueRef idx = key ? LLVMBuildNUWAdd(b, base, c64(E, key), "") : base;
          tc.mc[tc.n] = global_twiddle(E, &r, idx);
        }
        mc = &tc.mc[tc.n++];
      }
      butterfly(E, &r, mc, fwd, &x[lo], &x[hi]);
    }
  }

  if (direct_store) {
    mconst post = {0};
    if (k->post) post = post_const(E, &r);
    for (int i = 0; i < nr; i++) {
      LLVMValueRef v = k->post ? post_step(E, &r, &post, x[i]) : x[i];
      if (k->post) final_store(E, goff_k(E, &p, ku, pm.kconst[i]), &v, 1);
      else store(E, v, E->dst, goff_k(E, &p, ku, pm.kconst[i]), walign(E));
    }
  } else {
    for (int i = 0; i < nr; i++) store(E, x[i], E->smem, sidx_k(E, &p, ku, pm.kconst[i]), walign(E));
  }
}

/* Staged copy between global memory and shared memory for chunk kernels:
 * the block's C chunks are C*M consecutive words, read or written in 16-byte
 * vectors by consecutive threads. */
static void emit_staged(ne *E, int is_load, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  LLVMBuilderRef b = E->b;
  int V = E->V;
  int64_t per_block = INT64_C(1) << (k->log_c + k->m);
  int64_t T = k->threads;
  int groups = (int)(per_block / (T * V));
  LLVMValueRef gblock = LLVMBuildShl(b, blk, c64(E, (uint64_t)(k->log_c + k->m)), "");
  /* all chunks of a block in one row unless whole rows are packed per block */
  int one_row = k->log_c <= k->log_subs;
  rowc r0 = {0};
  mconst mc0 = {0};
  int liftadd = is_load && lift_add_active(E);
  int step = is_load ? k->pre || liftadd : k->post;
  if (one_row && (step || k->tail)) r0 = row_consts(E, LLVMBuildLShr(b, gblock, c64(E, (uint64_t)E->P->log_n), "brow"));
  if (one_row && step) mc0 = is_load ? pre_const(E, &r0) : post_const(E, &r0);
  for (int g = 0; g < groups; g++) {
    /* element e = (tid + g*T) * V: chunk c = e >> m, position e & (M-1) */
    LLVMValueRef e = LLVMBuildShl(b, LLVMBuildNUWAdd(b, tid, c32(E, (uint64_t)(g * T)), ""),
                                  c32(E, (uint64_t)lw_ntt_ilog2((uint64_t)V)), "e");
    LLVMValueRef c = LLVMBuildLShr(b, e, c32(E, (uint64_t)k->m), "");
    LLVMValueRef kpos = LLVMBuildAnd(b, e, c32(E, (1u << k->m) - 1), "");
    LLVMValueRef gi = LLVMBuildNUWAdd(b, gblock, LLVMBuildZExt(b, e, E->i64, ""), "");
    LLVMValueRef s0 = LLVMBuildNUWMul(b, c, c32(E, (uint64_t)lw_ntt_chunk_stride(k)), "");
    rowc r = r0;
    mconst mc = mc0;
    if (!one_row && (step || k->tail)) {
      LLVMValueRef gs = LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)k->log_c), ""),
                                        LLVMBuildZExt(b, c, E->i64, ""), "");
      r = row_consts(E, LLVMBuildLShr(b, gs, c64(E, (uint64_t)k->log_subs), "brow"));
      if (step) mc = is_load ? pre_const(E, &r) : post_const(E, &r);
    }
    LLVMValueRef tw_base = k->tail ? chunk_tw_base(E, blk, c) : NULL;
    LLVMValueRef vals[4];
    if (!is_load) {
      for (int v = 0; v < V; v++) {
        LLVMValueRef kv = v ? LLVMBuildNUWAdd(b, kpos, c32(E, (uint64_t)v), "") : kpos;
        LLVMValueRef si = LLVMBuildNUWAdd(b, s0, padded(E, kv), "");
        vals[v] = load(E, E->W, E->smem, si, walign(E), "x");
      }
      if (k->tail) tail_stages(E, &r, tw_base, kpos, vals);
      for (int v = 0; v < V && step; v++) vals[v] = post_step(E, &r, &mc, vals[v]);
      if (step && E->red_k >= 0) {
        red_keep(E, tid, g, vals);
      } else if (step) {
        final_store(E, gi, vals, V);
      } else {
        LLVMValueRef vec = LLVMGetUndef(E->vecW);
        for (int v = 0; v < V; v++) vec = LLVMBuildInsertElement(b, vec, vals[v], c32(E, (uint64_t)v), "");
        store(E, vec, E->dst, gi, E->target == LW_GPU ? 16u : walign(E));
      }
    } else {
      /* the source view: 16-byte vectors when they stay on the vector grid,
       * else word by word */
      LLVMValueRef gs = gi, istep = c64(E, 1);
      int vector = 1;
      LLVMValueRef pro_br = NULL, pro_i = NULL;
      if (E->pro_active || (E->src_view && !(E->src_dense && E->P->src_offset == 0))) {
        const lw_ntt_plan *P = E->P;
        vector = P->src_index_stride == 1 && P->src_offset % V == 0;
        for (int a = 0; a < P->src_nax; a++)
          if (P->src_ext[a] > 1 && P->src_stride[a] % V) vector = 0;
        LLVMValueRef cc = LLVMBuildLShr(b, e, c32(E, (uint64_t)k->m), "");
        LLVMValueRef gsub = LLVMBuildNUWAdd(b, LLVMBuildShl(b, blk, c64(E, (uint64_t)k->log_c), ""),
                                            LLVMBuildZExt(b, cc, E->i64, ""), "");
        LLVMValueRef br = LLVMBuildLShr(b, gsub, c64(E, (uint64_t)k->log_subs), "");
        LLVMValueRef i = LLVMBuildNUWAdd(
            b, LLVMBuildShl(b, LLVMBuildAnd(b, gsub, c64(E, (UINT64_C(1) << k->log_subs) - 1), ""),
                            c64(E, (uint64_t)k->m), ""),
            LLVMBuildZExt(b, kpos, E->i64, ""), "");
        istep = c64(E, (uint64_t)P->src_index_stride);
        if (E->pro_active) {
          vector = 0;
          pro_br = br, pro_i = i;
        }
        if (!E->pro_active || liftadd || P->pro_rows)
          gs = LLVMBuildNUWAdd(b, src_rowoff(E, br), LLVMBuildNUWMul(b, i, istep, ""), "");
      }
      LLVMValueRef vec = vector ? load(E, E->vecW, E->src, gs, E->target == LW_GPU ? 16u : walign(E), "xv")
                                : NULL;
      if (pro_br && E->pro_vec) vec = pro_value_vec(E, pro_br, pro_i), vector = 1;
      for (int v = 0; v < V; v++) {
        LLVMValueRef x;
        /* element v's source offset (unused with the vector load or a
         * prologue alone) */
        LLVMValueRef gv = v && !vector ? LLVMBuildNUWAdd(b, gs, LLVMBuildNUWMul(b, istep, c64(E, (uint64_t)v), ""), "") : gs;
        if (pro_br && !E->pro_vec)
          x = pro_or_src(E, pro_br, v ? LLVMBuildNUWAdd(b, pro_i, c64(E, (uint64_t)v), "") : pro_i,
                         E->P->pro_rows ? gv : NULL);
        else
          x = vector ? LLVMBuildExtractElement(b, vec, c32(E, (uint64_t)v), "x")
                     : load(E, E->W, E->src, gv, walign(E), "x");
        if (liftadd) {
          vals[v] = lift_add(E, &r, &mc, x, load(E, E->W, E->src, gv, walign(E), "w"));
          continue;
        }
        vals[v] = step ? pre_step(E, &r, &mc, x) : x;
      }
      if (k->tail) tail_stages(E, &r, tw_base, kpos, vals);
      for (int v = 0; v < V; v++) {
        LLVMValueRef kv = v ? LLVMBuildNUWAdd(b, kpos, c32(E, (uint64_t)v), "") : kpos;
        LLVMValueRef si = LLVMBuildNUWAdd(b, s0, padded(E, kv), "");
        store(E, vals[v], E->smem, si, walign(E));
      }
    }
  }
}

/* Phase ph of the kernel: [shared twiddles] [staged load] passes...
 * [staged store]; a staged load and the shared twiddles (both only write
 * shared memory that no one reads before the barrier) share one phase. */
static int num_phases(const lw_ntt_kplan *k) {
  return (k->tws && !k->staged_load) + k->npass + k->staged_load + k->staged_store;
}

static void emit_phase(ne *E, int ph, LLVMValueRef tid, LLVMValueRef blk) {
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

/* ------------------------------------------------------------ functions */

/* Kernel arguments: (params, pstride, tw, src, dst, prologue inputs...,
 * per epilogue target: its inputs..., its output, [GPU, pdl 2: i64 own]). */
static int num_pro_args(const ne *E) { return E->pro_active ? (int)E->pro->sub->ninputs : 0; }

static int num_kernel_args(const ne *E) {
  int n = 5 + num_pro_args(E);
  for (int t = 0; E->epi_active && t < E->pro->nepi; t++) n += (int)E->pro->epi[t].sub->ninputs + 1;
  return n + (E->target == LW_GPU && E->K->pdl == 2);
}

static void kernel_params(ne *E, LLVMValueRef fn) {
  const char *names[5] = {"params", "pstride", "twiddles", "src", "dst"};
  for (int j = 0; j < 5; j++) LLVMSetValueName2(LLVMGetParam(fn, (unsigned)j), names[j], strlen(names[j]));
  int npro = num_pro_args(E);
  for (int j = 0; j < 5 + npro; j++) {
    if (j == 1) continue;
    param_attr(E, fn, (unsigned)j, "nocapture");
    /* a kernel 0 that waits for the stream's previous kernel (k->entry)
     * must not read before the wait, and LLVM may move loads of noalias
     * memory across it: its pointers are only read-only */
    int entry_wait = E->K->entry && E->K == &E->P->k[0];
    /* the prologue's store buffer is written */
    int store = E->pro_active && E->pro->store_rows > 0 && j == 5 + npro - 1;
    if ((j <= 2 || j >= 5 || !E->K->in_place) && !entry_wait) param_attr(E, fn, (unsigned)j, "noalias");
    if (!store && (j <= 2 || j >= 5 || (j == 3 && !E->K->in_place)))
      param_attr(E, fn, (unsigned)j, "readonly");
  }
  E->params = LLVMGetParam(fn, 0);
  E->pstride = LLVMGetParam(fn, 1);
  E->tw = LLVMGetParam(fn, 2);
  E->src = LLVMGetParam(fn, 3);
  E->dst = LLVMGetParam(fn, 4);
  for (int j = 5; j < 5 + npro; j++) {
    E->extra[j - 5] = LLVMGetParam(fn, (unsigned)j);
    const char *in = LLVMGetValueName(LLVMGetParam(E->pro_fn[0], (unsigned)(j - 3)));
    char nm[96];
    snprintf(nm, sizeof nm, "pro.%s", in);
    LLVMSetValueName2(E->extra[j - 5], nm, strlen(nm));
  }
  int j = 5 + npro;
  for (int t = 0; E->epi_active && t < E->pro->nepi; t++) {
    const lw_ntt_epi *ep = &E->pro->epi[t];
    char nm[96];
    for (int32_t i = 0; i < ep->sub->ninputs; i++, j++) {
      E->epi_in[t][i] = LLVMGetParam(fn, (unsigned)j);
      const char *in = LLVMGetValueName(LLVMGetParam(E->epi_fn[t][0], (unsigned)(2 + i)));
      snprintf(nm, sizeof nm, "epi%d.%s", t, in);
      LLVMSetValueName2(E->epi_in[t][i], nm, strlen(nm));
      /* the register input's slot carries an unused pointer (dst) */
      if (i == ep->reg) continue;
      int is_reg = 0;
      for (int r = 0; E->red_active && t == 0 && r < E->pro->red.members; r++) is_reg |= i == E->pro->red.reg[r];
      is_reg |= E->red_active && t == 0 && E->pro->red.acc > 0 && i == E->pro->red.acc_reg;
      if (is_reg) continue;
      param_attr(E, fn, (unsigned)j, "nocapture");
      param_attr(E, fn, (unsigned)j, "noalias");
      param_attr(E, fn, (unsigned)j, "readonly");
    }
    E->epi_out[t] = LLVMGetParam(fn, (unsigned)j);
    snprintf(nm, sizeof nm, "epi%d.out", t);
    LLVMSetValueName2(E->epi_out[t], nm, strlen(nm));
    param_attr(E, fn, (unsigned)j, "nocapture");
    param_attr(E, fn, (unsigned)j, "noalias");
    param_attr(E, fn, (unsigned)j, "writeonly");
    j++;
  }
  E->own = NULL;
  if (E->K->pdl == 2) {
    E->own = LLVMGetParam(fn, (unsigned)j);
    LLVMSetValueName2(E->own, "own", 3);
  }
}

static void kernel_types(ne *E, LLVMTypeRef *types) {
  int n = num_kernel_args(E);
  for (int j = 0; j < n; j++) types[j] = j == 1 ? E->i64 : E->gptr;
  if (E->target == LW_GPU && E->K->pdl == 2) types[n - 1] = E->i64;
}

/* Programmatic dependent launch (sm_90): an instruction with memory
 * effects, so that no data access moves across it. */
static void grid_dep(ne *E, const char *text) {
  LLVMTypeRef fty = LLVMFunctionType(E->voidt, NULL, 0, 0);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), "~{memory}", 9, 1, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(E->b, fty, fn, NULL, 0, "");
}

/* Per-row completion counters (k->pdl 2, launches with own = 1): kernel 0's
 * blocks of batch-row r count themselves in <prefix>.rowdone[r] when their
 * stores are done (release); kernel 1's blocks of row r start on it once
 * the count is complete (acquire), instead of waiting for all of kernel 0:
 * kernel 1 then fills the SM slots of kernel 0's last wave. Kernel 0 writes
 * nothing but dst, whose rows the blocks of one row own, so no other
 * ordering is needed. The last of row r's kernel-1 blocks to finish (counted
 * in <prefix>.rowused[r]) sets both back to zero, the state the module was
 * loaded with, for the next launch. So no two launches that use them may
 * overlap: the runtime passes own = 1 only on the kernel's home stream
 * (launch.c), every other launch waits for kernel 0's whole grid
 * (griddepcontrol.wait). A count that never completes would end in a trap
 * after 30 s rather than a hang. */
static LLVMValueRef row_counter(ne *E, const char *which) {
  char nm[96];
  snprintf(nm, sizeof nm, "%s.%s", E->prefix, which);
  LLVMValueRef g = LLVMGetNamedGlobal(E->m, nm);
  if (!g) {
    LLVMTypeRef arr = LLVMArrayType2(E->i32, (uint64_t)E->P->batch_rows);
    g = LLVMAddGlobalInAddressSpace(E->m, arr, nm, 1);
    LLVMSetInitializer(g, LLVMConstNull(arr));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 4);
  }
  return g;
}

/* The batch-row of a block (every block lies in one row). */
static LLVMValueRef block_row(ne *E, LLVMValueRef blk) {
  const lw_ntt_kplan *k = E->K;
  if (k->cols) return LLVMBuildLShr(E->b, blk, c64(E, (uint64_t)(k->log_subs - k->log_c)), "brow");
  return LLVMBuildLShr(E->b, LLVMBuildShl(E->b, blk, c64(E, (uint64_t)k->log_c), ""),
                       c64(E, (uint64_t)k->log_subs), "brow");
}

static LLVMValueRef row_counter_addr(ne *E, const char *which, LLVMValueRef row) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(E->b, E->i32, row_counter(E, which), &row, 1, "");
  return LLVMBuildPtrToInt(E->b, p, E->i64, "");
}

static LLVMValueRef asm_call(ne *E, LLVMTypeRef ret, const char *text, const char *cons,
                             LLVMValueRef *args, unsigned n) {
  LLVMTypeRef at[4];
  for (unsigned i = 0; i < n; i++) at[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef fty = LLVMFunctionType(ret, at, n, 0);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
                                     LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(E->b, fty, fn, args, n, "");
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

/* Kernel 0, after its last store: the block counts itself done. */
static void row_signal(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  LLVMBasicBlockRef j1 = begin_if(E, owned(E), "signal");
  LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
  LLVMBasicBlockRef j2 = begin_if(E, is_tid0(E, tid), "signal.t0");
  LLVMValueRef a[1] = {row_counter_addr(E, "rowdone", block_row(E, blk))};
  asm_call(E, E->voidt, "red.release.gpu.global.add.u32 [$0], 1;", "l,~{memory}", a, 1);
  end_if(E, j2);
  end_if(E, j1);
}

/* Kernel 1, before its first access to dst: own = 1, thread 0 waits for the
 * row's count (relaxed polling, then an acquire fence: an acquire load
 * would invalidate the SM's L1 at every poll) and the block follows it
 * through the barrier; own = 0, every thread waits for kernel 0's grid. */
static void row_wait(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_plan *P = E->P;
  uint64_t need = (uint64_t)(P->k[0].blocks / P->batch_rows);
  LLVMBasicBlockRef grid = LLVMAppendBasicBlockInContext(E->c, E->fn, "wait.grid");
  LLVMBasicBlockRef rows = LLVMAppendBasicBlockInContext(E->c, E->fn, "wait.row");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->c, E->fn, "wait.done");
  LLVMBuildCondBr(E->b, owned(E), rows, grid);
  LLVMPositionBuilderAtEnd(E->b, grid);
  grid_dep(E, "griddepcontrol.wait;");
  LLVMBuildBr(E->b, done);
  LLVMPositionBuilderAtEnd(E->b, rows);
  LLVMBasicBlockRef j0 = begin_if(E, is_tid0(E, tid), "wait.t0");
  LLVMValueRef row = block_row(E, blk);
  LLVMValueRef da = row_counter_addr(E, "rowdone", row);
  LLVMValueRef t0 = asm_call(E, E->i64, "mov.u64 $0, %globaltimer;", "=l,~{memory}", NULL, 0);
  LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(E->c, E->fn, "spin");
  LLVMBasicBlockRef late = LLVMAppendBasicBlockInContext(E->c, E->fn, "spin.late");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(E->c, E->fn, "spin.done");
  LLVMBuildBr(E->b, spin);
  LLVMPositionBuilderAtEnd(E->b, spin);
  LLVMValueRef a[1] = {da};
  LLVMValueRef v = asm_call(E, E->i32, "ld.relaxed.gpu.global.u32 $0, [$1];", "=r,l,~{memory}", a, 1);
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntUGE, v, c32(E, need), ""), go, late);
  LLVMPositionBuilderAtEnd(E->b, late);
  LLVMValueRef now = asm_call(E, E->i64, "mov.u64 $0, %globaltimer;", "=l,~{memory}", NULL, 0);
  LLVMValueRef over = LLVMBuildICmp(E->b, LLVMIntUGT, LLVMBuildSub(E->b, now, t0, ""),
                                    c64(E, UINT64_C(30000000000)), "");
  LLVMBasicBlockRef jt = begin_if(E, over, "spin.trap");
  asm_call(E, E->voidt, "trap;", "~{memory}", NULL, 0);
  end_if(E, jt);
  LLVMBuildBr(E->b, spin);
  /* (the trap's join block polls again) */
  LLVMPositionBuilderAtEnd(E->b, go);
  asm_call(E, E->voidt, "fence.acq_rel.gpu;", "~{memory}", NULL, 0);
  end_if(E, j0);
  LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
  LLVMBuildBr(E->b, done);
  LLVMPositionBuilderAtEnd(E->b, done);
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
  LLVMValueRef b1[1] = {ua};
  LLVMValueRef old = asm_call(E, E->i32, "atom.relaxed.gpu.global.add.u32 $0, [$1], 1;",
                              "=r,l,~{memory}", b1, 1);
  LLVMBasicBlockRef jr = begin_if(E, LLVMBuildICmp(E->b, LLVMIntEQ, old, c32(E, users - 1), ""), "reset");
  LLVMValueRef c2[2] = {da, ua};
  asm_call(E, E->voidt, "st.relaxed.gpu.global.u32 [$0], 0;\n\tst.relaxed.gpu.global.u32 [$1], 0;",
           "l,l,~{memory}", c2, 2);
  end_if(E, jr);
  end_if(E, j2);
  end_if(E, j1);
}

/* Kernel 1's wait for kernel 0 (pdl 1: the grid; pdl 2: as the launch says). */
static void wait_for_kernel0(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  if (E->K->pdl == 2) row_wait(E, tid, blk);
  else grid_dep(E, "griddepcontrol.wait;");
}

/* The block that the grid's block x runs (lw_ntt_plan.pminor): x counts
 * (row, polynomial, block of the row) row-major, the block numbering of
 * the rest of the kernel counts (polynomial, row, block of the row), so
 * the polynomials' same row runs side by side while its shared operands
 * are in the L2. The same map in both kernels of a plan keeps kernel 1's
 * per-row waits (pdl 2) in kernel 0's order. A bijection on the grid: the
 * host form runs it too, so CI checks that every block runs once. */
static LLVMValueRef block_order(ne *E, LLVMValueRef x) {
  const lw_ntt_kplan *k = E->K;
  int64_t rows = E->P->rows, polys = E->P->batch_rows / rows;
  if (!E->P->pminor || polys < 2 || k->cluster || E->red_active || k->log_c > k->log_subs)
    return x;
  LLVMBuilderRef b = E->b;
  uint64_t bl = (uint64_t)(k->log_subs - k->log_c); /* log2 blocks per batch row */
  LLVMValueRef s = LLVMBuildAnd(b, x, c64(E, (UINT64_C(1) << bl) - 1), "");
  LLVMValueRef q = LLVMBuildLShr(b, x, c64(E, bl), "");
  LLVMValueRef row = LLVMBuildUDiv(b, q, c64(E, (uint64_t)polys), "");
  LLVMValueRef poly = LLVMBuildURem(b, q, c64(E, (uint64_t)polys), "");
  LLVMValueRef br = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, poly, c64(E, (uint64_t)rows), ""), row, "");
  return LLVMBuildOr(b, LLVMBuildShl(b, br, c64(E, bl), ""), s, "blk");
}


/* GPU: a transform written at rows of a larger buffer (lw_ntt_plan.dst_offset)
 * moves dst, and the source argument where it is dst (after kernel 0, or
 * with a prologue). */
static void offset_rows(ne *E, int first) {
  if (!E->P->dst_offset) return;
  LLVMValueRef o = c64(E, (uint64_t)E->P->dst_offset);
  E->dst = LLVMBuildInBoundsGEP2(E->b, E->W, E->dst, &o, 1, "dst.at");
  if (!first || E->pro_active) E->src = LLVMBuildInBoundsGEP2(E->b, E->W, E->src, &o, 1, "src.at");
}
static void build_gpu_kernel(ne *E, const char *name) {
  const lw_ntt_kplan *k = E->K;
  LLVMTypeRef types[LW_MAX_ARGS + 8];
  int n = num_kernel_args(E);
  kernel_types(E, types);
  LLVMValueRef fn = LLVMAddFunction(E->m, name, LLVMFunctionType(E->voidt, types, (unsigned)n, 0));
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  fn_attr(E, fn, "nounwind");
  kernel_params(E, fn);
  E->fn = fn;
  /* shared memory: a static array of the kernel */
  char sname[128]; /* kernel names are at most 63 characters */
  snprintf(sname, sizeof sname, "%s.smem", name);
  LLVMTypeRef arr = LLVMArrayType2(E->W, k->smem_words);
  LLVMValueRef sm = LLVMAddGlobalInAddressSpace(E->m, arr, sname, 3);
  LLVMSetInitializer(sm, LLVMGetUndef(arr));
  LLVMSetLinkage(sm, LLVMInternalLinkage);
  LLVMSetAlignment(sm, 16);
  E->smem = sm;
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, fn, "entry"));
  if (E->red_active) /* the members' final words: registers once promoted */
    E->red_slots = LLVMBuildAlloca(E->b, LLVMArrayType2(E->W, (uint64_t)(red_nslots(E) * red_words(E))), "slots");
  LLVMValueRef tid = sreg(E, "llvm.nvvm.read.ptx.sreg.tid.x");
  LLVMValueRef blk = block_order(E, LLVMBuildZExt(E->b, sreg(E, "llvm.nvvm.read.ptx.sreg.ctaid.x"), E->i64, "x"));
  E->preloaded = 0;
  int first = k == &E->P->k[0];
  offset_rows(E, first);
  /* Kernel 1 waits for kernel 0 (k->pdl) before touching kernel 0's only
   * output, dst: at once, or after the shared-twiddle fill when that comes
   * first. Everything else it reads (parameters, twiddles, epilogue
   * inputs: noalias read-only, so LLVM may load them before the wait) was
   * written before kernel 0 started: kernel 1 launches only once every
   * block of kernel 0 has triggered it, and with k->entry a block of
   * kernel 0 triggers only after its own wait for the stream's previous
   * kernel has returned. */
  int wait_after_tws = !first && k->pdl && k->tws && !k->staged_load && !E->red_active;
  /* k->entry: kernel 0 is a dependent launch of the stream's previous
   * kernel too (its wait comes before its trigger: see above), and kernel 1
   * lets the stream's next kernel launch early */
  if (first && k->entry && k->l2pf && !E->pro_active) prefetch_source(E, tid, blk);
  if (first && k->entry) grid_dep(E, "griddepcontrol.wait;");
  if (!first && k->entry) grid_dep(E, "griddepcontrol.launch_dependents;");
  if (first && k->pdl) grid_dep(E, "griddepcontrol.launch_dependents;");
  if (!first && k->pdl && !wait_after_tws) wait_for_kernel0(E, tid, blk);
  if (k->early && !wait_after_tws) {
    preload_pass0(E, tid, blk);
    E->preloaded = 1;
  }
  E->red_blk = blk;
  for (int mk = 0; E->red_active && mk < E->pro->red.members; mk++) {
    /* member mk: its own rows loaded, or its body on its block (a branch
     * uniform per block: the body's barriers stay uniform) */
    LLVMBasicBlockRef ownb = LLVMAppendBasicBlockInContext(E->c, fn, "red.own");
    LLVMBasicBlockRef bodyb = LLVMAppendBasicBlockInContext(E->c, fn, "red.body");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(E->c, fn, "red.join");
    LLVMBuildCondBr(E->b, red_is_own(E, mk, blk), ownb, bodyb);
    LLVMPositionBuilderAtEnd(E->b, ownb);
    red_own(E, mk, tid, blk);
    LLVMBuildBr(E->b, join);
    LLVMPositionBuilderAtEnd(E->b, bodyb);
    LLVMValueRef mblk = red_member_blk(E, mk, blk);
    E->red_k = mk;
    for (int ph = 0; ph < num_phases(k); ph++) {
      /* the previous member's last phase read shared memory */
      if (ph || mk) LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
      emit_phase(E, ph, tid, mblk);
    }
    E->red_k = -1;
    LLVMBuildBr(E->b, join);
    LLVMPositionBuilderAtEnd(E->b, join);
  }
  if (E->red_active) red_epilogue(E, tid, blk);
  for (int ph = 0; !E->red_active && ph < num_phases(k); ph++) {
    if (ph) LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
    emit_phase(E, ph, tid, blk);
    if (ph == 0 && wait_after_tws) {
      wait_for_kernel0(E, tid, blk);
      if (k->early) {
        preload_pass0(E, tid, blk);
        E->preloaded = 1;
      }
    }
  }
  if (first && k->pdl == 2) row_signal(E, tid, blk);
  if (!first && k->pdl == 2) row_release(E, tid, blk);
  LLVMBuildRetVoid(E->b);
  E->preloaded = 0;
  /* launch bounds, before any pass runs (added later they are dropped) */
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "maxntidx", 8),
                           LLVMValueAsMetadata(LLVMConstInt(E->i32, k->threads, 0))};
  LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                              LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, md, 3)));
  if (k->minb > 0) {
    /* blocks per SM wanted: ptxas caps registers to fit them */
    LLVMMetadataRef mb[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "minctasm", 8),
                             LLVMValueAsMetadata(LLVMConstInt(E->i32, (uint64_t)k->minb, 0))};
    LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                                LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, mb, 3)));
  }
}

/* A counted loop: returns the induction variable; close with loop_end. */
typedef struct loop {
  LLVMBasicBlockRef head, body;
  LLVMValueRef iv;
} loop;

static loop loop_begin(ne *E, LLVMValueRef begin, LLVMTypeRef ty, const char *name) {
  loop L;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
  L.body = LLVMAppendBasicBlockInContext(E->c, E->fn, name);
  LLVMBuildBr(E->b, L.body);
  LLVMPositionBuilderAtEnd(E->b, L.body);
  L.iv = LLVMBuildPhi(E->b, ty, name);
  LLVMAddIncoming(L.iv, &begin, &pre, 1);
  L.head = L.body;
  return L;
}

static void loop_end(ne *E, loop *L, LLVMValueRef end, const char *name) {
  LLVMValueRef next = LLVMBuildNUWAdd(E->b, L->iv, LLVMConstInt(LLVMTypeOf(L->iv), 1, 0), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
  LLVMAddIncoming(L->iv, &next, &latch, 1);
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(E->c, E->fn, name);
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntULT, next, end, ""), L->head, after);
  LLVMPositionBuilderAtEnd(E->b, after);
}

/* The host body of a kernel: (kernel arguments..., begin, end, shared),
 * "<name>_host_body", internal; E->fn and E->smem set, the builder at its
 * "work" block (entered when begin < end; *done is the exit). */
static LLVMValueRef host_body_begin(ne *E, const char *name, LLVMTypeRef *types, int *nargs,
                                    LLVMTypeRef *fty, LLVMValueRef *begin, LLVMValueRef *end,
                                    LLVMBasicBlockRef *done) {
  int n = *nargs = num_kernel_args(E);
  kernel_types(E, types);
  types[n] = types[n + 1] = E->i64;
  types[n + 2] = E->sptr;
  char fname[128]; /* kernel names are at most 63 characters */
  snprintf(fname, sizeof fname, "%s_host_body", name);
  *fty = LLVMFunctionType(E->voidt, types, (unsigned)n + 3, 0);
  LLVMValueRef fn = LLVMAddFunction(E->m, fname, *fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  fn_attr(E, fn, "nounwind");
  kernel_params(E, fn);
  param_attr(E, fn, (unsigned)n + 2, "noalias");
  E->fn = fn;
  E->smem = LLVMGetParam(fn, (unsigned)n + 2);
  *begin = LLVMGetParam(fn, (unsigned)n), *end = LLVMGetParam(fn, (unsigned)n + 1);
  LLVMSetValueName2(*begin, "block_begin", 11);
  LLVMSetValueName2(*end, "block_end", 9);
  LLVMSetValueName2(E->smem, "shared", 6);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(E->c, fn, "entry");
  LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(E->c, fn, "work");
  *done = LLVMAppendBasicBlockInContext(E->c, fn, "done");
  LLVMPositionBuilderAtEnd(E->b, entry);
  LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntULT, *begin, *end, ""), work, *done);
  LLVMPositionBuilderAtEnd(E->b, work);
  return fn;
}

/* Closes the body (branch to done, return) and adds the entry the host
 * runtime calls, "<name>_host": (ptr slots, i64 begin, i64 end, ptr
 * shared), slot j holding kernel argument j. */
static void host_body_end(ne *E, const char *name, const LLVMTypeRef *types, int n,
                          LLVMTypeRef fty, LLVMValueRef fn, LLVMBasicBlockRef done) {
  LLVMBuildBr(E->b, done);
  LLVMPositionBuilderAtEnd(E->b, done);
  LLVMBuildRetVoid(E->b);
  char fname[128];
  snprintf(fname, sizeof fname, "%s_host", name);
  LLVMTypeRef wtypes[4] = {E->gptr, E->i64, E->i64, E->sptr};
  LLVMValueRef w = LLVMAddFunction(E->m, fname, LLVMFunctionType(E->voidt, wtypes, 4, 0));
  fn_attr(E, w, "nounwind");
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, w, "entry"));
  LLVMValueRef args[LW_MAX_ARGS + 8];
  for (int j = 0; j < n; j++) {
    LLVMValueRef idx = c64(E, (uint64_t)j);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(E->b, E->i64, LLVMGetParam(w, 0), &idx, 1, "");
    args[j] = LLVMBuildLoad2(E->b, types[j], slot, "");
    LLVMSetAlignment(args[j], 8);
  }
  for (int j = 0; j < 3; j++) args[n + j] = LLVMGetParam(w, (unsigned)j + 1);
  LLVMBuildCall2(E->b, fty, fn, args, (unsigned)n + 3, "");
  LLVMBuildRetVoid(E->b);
}

static void build_host_fn(ne *E, const char *name) {
  const lw_ntt_kplan *k = E->K;
  LLVMTypeRef types[LW_MAX_ARGS + 8], fty;
  LLVMValueRef begin, end;
  LLVMBasicBlockRef done;
  int n;
  LLVMValueRef fn = host_body_begin(E, name, types, &n, &fty, &begin, &end, &done);
  loop blk = loop_begin(E, begin, E->i64, "block");
  E->red_blk = blk.iv;
  for (int mk = 0; E->red_active && mk < E->pro->red.members; mk++) {
    /* reduce mode (see build_gpu_kernel): member mk's own rows or body */
    LLVMBasicBlockRef ownb = LLVMAppendBasicBlockInContext(E->c, fn, "red.own");
    LLVMBasicBlockRef bodyb = LLVMAppendBasicBlockInContext(E->c, fn, "red.body");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(E->c, fn, "red.join");
    LLVMBuildCondBr(E->b, red_is_own(E, mk, blk.iv), ownb, bodyb);
    LLVMPositionBuilderAtEnd(E->b, ownb);
    loop t = loop_begin(E, c32(E, 0), E->i32, "thread");
    red_own(E, mk, t.iv, blk.iv);
    loop_end(E, &t, c32(E, k->threads), "own_done");
    LLVMBuildBr(E->b, join);
    LLVMPositionBuilderAtEnd(E->b, bodyb);
    LLVMValueRef mblk = red_member_blk(E, mk, blk.iv);
    E->red_k = mk;
    for (int ph = 0; ph < num_phases(k); ph++) {
      loop t2 = loop_begin(E, c32(E, 0), E->i32, "thread");
      emit_phase(E, ph, t2.iv, mblk);
      loop_end(E, &t2, c32(E, k->threads), "phase_done");
    }
    E->red_k = -1;
    LLVMBuildBr(E->b, join);
    LLVMPositionBuilderAtEnd(E->b, join);
  }
  if (E->red_active) {
    loop t = loop_begin(E, c32(E, 0), E->i32, "thread");
    red_epilogue(E, t.iv, blk.iv);
    loop_end(E, &t, c32(E, k->threads), "epi_done");
  }
  LLVMValueRef ordered = block_order(E, blk.iv); /* blk.iv in reduce mode */
  for (int ph = 0; !E->red_active && ph < num_phases(k); ph++) {
    /* a phase for every thread of the block before the next phase starts:
     * the loop boundary is the barrier */
    loop t = loop_begin(E, c32(E, 0), E->i32, "thread");
    emit_phase(E, ph, t.iv, ordered);
    loop_end(E, &t, c32(E, k->threads), "phase_done");
  }
  loop_end(E, &blk, end, "blocks_done");
  host_body_end(E, name, types, n, fty, fn, done);
}

/* The evaluators "<name>.eval<c>" of n components, found in the module. */
static fhjit_status eval_functions(ne *E, const char *name, int n, LLVMValueRef *fn,
                                  LLVMTypeRef *ty) {
  for (int comp = 0; comp < n; comp++) {
    char sym[LW_NAME_MAX + 16];
    snprintf(sym, sizeof sym, "%s.eval%d", name, comp);
    fn[comp] = LLVMGetNamedFunction(E->m, sym);
    if (!fn[comp]) return ir_error(E->ctx, FHJIT_ERR_LLVM, "internal: no evaluator %s", sym);
    ty[comp] = LLVMGlobalGetValueType(fn[comp]);
  }
  return FHJIT_OK;
}

/* The plan of sub's vector evaluators into *pl: its walk in V-element
 * groups (lw_plan_graph's vec is V: V divides N), named "<plan>_v".
 * *ok 0 where it does not apply (then scalar calls). */
static fhjit_status vector_plan(ne *E, fhjit_graph *sub, lw_plan *pl, int *ok) {
  *ok = 0;
  fhjit_status st = lw_plan_graph(sub, pl);
  if (st) return st;
  size_t len = strlen(pl->name);
  if (pl->vec != E->V || len + 3 > LW_NAME_MAX) return FHJIT_OK;
  memcpy(pl->name + len, "_v", 3);
  pl->groups = pl->work / pl->vec;
  *ok = 1;
  return FHJIT_OK;
}

/* Target t's vector evaluators (epi_value_vec), named "<plan>_v.eval<c>",
 * where the last kernel asks for them (epivec) and the target's walk takes
 * V-element groups (lw_plan_graph's vec: V divides N); else scalar calls. */
static fhjit_status build_vector_epilogue(ne *E, int t) {
  const lw_ntt_kplan *lk = &E->P->k[E->P->nkernels - 1];
  E->epi_vec[t] = 0;
  if (!lk->epivec || E->V < 2 || E->V > LW_VMAX) return FHJIT_OK;
  fhjit_graph *sub = E->pro->epi[t].sub;
  lw_plan pl;
  int ok;
  fhjit_status st = vector_plan(E, sub, &pl, &ok);
  if (st || !ok) return st;
  const lw_ntt_reduce *R = &E->pro->red;
  if (t == 0 && R->members > 0)
    st = lw_build_eval_regs(sub, &pl, E->target, E->c, E->m, R->reg, R->members,
                            &E->epi_vvalues[t]);
  else
    st = lw_build_eval_reg(sub, &pl, E->target, E->c, E->m, E->pro->epi[t].reg,
                           &E->epi_vvalues[t]);
  if (st) return st;
  if ((st = eval_functions(E, pl.name, E->epi_ncomp[t], E->epi_vfn[t], E->epi_vty[t]))) return st;
  E->epi_vec[t] = 1;
  return FHJIT_OK;
}

/* Function `name` of the module and its type (an evaluator lower.c built). */
static fhjit_status named_fn(ne *E, const char *name, LLVMValueRef *fn, LLVMTypeRef *ty) {
  *fn = LLVMGetNamedFunction(E->m, name);
  if (!*fn) return ir_error(E->ctx, FHJIT_ERR_LLVM, "internal: no evaluator %s", name);
  *ty = LLVMGlobalGetValueType(*fn);
  return FHJIT_OK;
}

/* ipacc: result k of sub folds member k (register 0) into the
 * accumulator (register 1, k > 0); its evaluators under plan pl, per
 * component, "<plan>[.r<k>].eval<c>", into fn, ty and values. */
static fhjit_status build_folds(ne *E, fhjit_graph *sub, const lw_plan *pl, LLVMValueRef fn[][3],
                                LLVMTypeRef ty[][3], int64_t *values) {
  const lw_ntt_reduce *R = &E->pro->red;
  fhjit_status st = FHJIT_OK;
  for (int k = 0; k < R->members && !st; k++) {
    int32_t regs[2] = {R->reg[k], R->acc_reg};
    st = lw_build_eval_result(sub, pl, E->target, E->c, E->m, k, regs, k ? 2 : 1, &values[k]);
    for (int comp = 0; comp < R->acc && !st; comp++) {
      char name[128];
      if (k) snprintf(name, sizeof name, "%s.r%d.eval%d", pl->name, k, comp);
      else snprintf(name, sizeof name, "%s.eval%d", pl->name, comp);
      st = named_fn(E, name, &fn[k][comp], &ty[k][comp]);
    }
  }
  return st;
}

/* ipacc's vector folds (red_fold_vec), named "<plan>_v...", where the
 * last kernel has the vector epilogue (epivec) and the sub-graph's walk
 * takes V-element groups; else the scalar folds alone. */
static fhjit_status build_vector_folds(ne *E, fhjit_graph *sub) {
  const lw_ntt_kplan *lk = &E->P->k[E->P->nkernels - 1];
  E->acc_vec = 0;
  if (!lk->epivec || E->V < 2 || E->V > LW_VMAX) return FHJIT_OK;
  lw_plan pl;
  int ok;
  fhjit_status st = vector_plan(E, sub, &pl, &ok);
  if (!st && ok) st = build_folds(E, sub, &pl, E->acc_vfn, E->acc_vty, E->acc_vvalues);
  E->acc_vec = !st && ok;
  return st;
}

/* The epilogue targets' evaluator functions in module m (lower.c), the
 * transform's value passed in registers. */
static fhjit_status build_epilogue(ne *E) {
  for (int t = 0; t < E->pro->nepi; t++) {
    fhjit_graph *sub = E->pro->epi[t].sub;
    lw_plan pl;
    fhjit_status st = lw_plan_graph(sub, &pl);
    if (st) return st;
    pl.vec = 1;
    pl.groups = pl.work;
    const lw_ntt_reduce *R = &E->pro->red;
    if (t == 0 && R->acc > 0) {
      /* ipacc: result k folds member k (register 0) into the accumulator
       * (register 1, k > 0) */
      st = build_folds(E, sub, &pl, E->acc_fn, E->acc_ty, E->acc_values);
      if (!st) st = build_vector_folds(E, sub);
    } else if (t == 0 && R->members > 0)
      st = lw_build_eval_regs(sub, &pl, E->target, E->c, E->m, R->reg, R->members,
                              &E->epi_values[t]);
    else
      st = lw_build_eval_reg(sub, &pl, E->target, E->c, E->m, E->pro->epi[t].reg,
                             &E->epi_values[t]);
    if (st) return st;
    const ir_node *res = &sub->nodes[sub->results[0].value];
    E->epi_ncomp[t] = res->type.comps > 1 ? res->type.comps : 1;
    E->epi_idx64[t] = pl.idx_bits == 64;
    if ((st = eval_functions(E, pl.name, E->epi_ncomp[t], E->epi_fn[t], E->epi_ty[t]))) return st;
    if (!(t == 0 && R->acc > 0) && (st = build_vector_epilogue(E, t))) return st;
  }
  return FHJIT_OK;
}

/* The prologue's vector evaluators (pro_value_vec), "<plan>_v.eval<c>",
 * where kernel 0 asks for them (provec), stages its load (the only
 * caller: a thread's V consecutive words) and the walk takes V-element
 * groups; else per-element calls. */
static fhjit_status build_vector_prologue(ne *E) {
  const lw_ntt_kplan *k0 = &E->P->k[0];
  E->pro_vec = 0;
  /* a lift with the prologue (lift_add) adds a word of the source per
   * element; pro_rows loads some rows from the source */
  if (!k0->provec || !k0->staged_load || E->V < 2 || E->V > LW_VMAX || E->P->lift ||
      E->P->pro_rows)
    return FHJIT_OK;
  fhjit_graph *sub = E->pro->sub;
  lw_plan pl;
  int ok;
  fhjit_status st = vector_plan(E, sub, &pl, &ok);
  if (st || !ok) return st;
  if ((st = lw_build_eval(sub, &pl, E->target, E->c, E->m, &E->pro_vvalues))) return st;
  const ir_node *res = &sub->nodes[sub->results[0].value];
  int ncomp = res->type.comps > 1 ? res->type.comps : 1;
  if ((st = eval_functions(E, pl.name, ncomp, E->pro_vfn, E->pro_vty))) return st;
  E->pro_vec = 1;
  return FHJIT_OK;
}

/* The prologue's evaluator functions in module m (lower.c). */
static fhjit_status build_prologue(ne *E) {
  fhjit_graph *sub = E->pro->sub;
  lw_plan pl;
  fhjit_status st = lw_plan_graph(sub, &pl);
  if (st) return st;
  /* one element per call: the NTT kernel decides which */
  pl.vec = 1;
  pl.groups = pl.work;
  st = lw_build_eval(sub, &pl, E->target, E->c, E->m, &E->pro_values);
  if (st) return st;
  if ((st = build_vector_prologue(E))) return st;
  const ir_node *res = &sub->nodes[sub->results[0].value];
  E->pro_ncomp = res->type.comps > 1 ? res->type.comps : 1;
  E->pro_idx64 = pl.idx_bits == 64;
  E->pro_rows_per_comp = fhjit_type_elements(&res->type) / res->type.n / E->pro_ncomp;
  for (int comp = 0; comp < E->pro_ncomp; comp++) {
    char name[112];
    snprintf(name, sizeof name, "%s.eval%d", pl.name, comp);
    E->pro_fn[comp] = LLVMGetNamedFunction(E->m, name);
    if (!E->pro_fn[comp])
      return ir_error(E->ctx, FHJIT_ERR_LLVM, "internal: no evaluator %s", name);
    E->pro_ty[comp] = LLVMGlobalGetValueType(E->pro_fn[comp]);
  }
  return FHJIT_OK;
}

/* The symbols kernel `name` adds are not in the module yet
 * (lw_symbol_taken): else an internal error. */
static fhjit_status kernel_names_free(ne *E, const char *name) {
  static const char *const suffixes[] = {"", ".smem", "_dsmem", "_host", "_host_body"};
  for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
    char sym[128]; /* kernel names are at most 63 characters */
    snprintf(sym, sizeof sym, "%s%s", name, suffixes[i]);
    if (lw_symbol_taken(E->m, sym)) return lw_duplicate_symbol(E->ctx, sym);
  }
  return FHJIT_OK;
}

/* The compile-time bound (lw_max_values) on the fused work of kernel
 * `name`: every evaluator call is inlined, so a kernel holding the
 * prologue or epilogue once per element of a thread costs that many times
 * its values. Checked before LLVM's passes run; the error is recorded, like
 * the evaluators' own, on the context of the fused work's sub-graphs. */
static fhjit_status check_inlined(ne *E, const char *name) {
  if (!E->inlined) return FHJIT_OK;
  fhjit_graph *sub = E->pro_active ? E->pro->sub : E->pro->epi[0].sub;
  int64_t limit;
  fhjit_status st = lw_max_values(sub, &limit);
  if (st || E->inlined <= limit) return st;
  return ir_error(sub->ctx, FHJIT_ERR_UNSUPPORTED,
                  "error: NTT kernel %s: its fused %s work evaluates %lld values (its "
                  "pointwise expression at every element a thread handles), more than "
                  "the limit of %lld that keeps a compile within seconds (docs/limits.md): "
                  "materialise part of that expression as an output of a separate graph, "
                  "or raise the limit with FHJIT_MAX_VALUES",
                  name,
                  E->pro_active ? (E->epi_active ? "prologue and epilogue" : "prologue")
                                : "epilogue",
                  (long long)E->inlined, (long long)limit);
}

/* the cluster schedule (sm_90 on, and its host form) */
#include "lower/ntt_cluster.h"

fhjit_status lw_ntt_build(fhjit_context *ctx, const lw_ntt_plan *p, const lw_ntt_fusion *pro,
                          lw_target target, const char *prefix, LLVMContextRef c,
                          LLVMModuleRef m) {
  ne E = {.ctx = ctx, .P = p, .target = target, .c = c, .m = m, .pro = pro, .prefix = prefix};
  E.b = LLVMCreateBuilderInContext(c);
  E.wbits = p->radix == FHJIT_R32 ? 32 : 64;
  E.W = LLVMIntTypeInContext(c, (unsigned)E.wbits);
  E.D = LLVMIntTypeInContext(c, (unsigned)E.wbits * 2);
  E.i1 = LLVMInt1TypeInContext(c);
  E.i32 = LLVMInt32TypeInContext(c);
  E.i64 = LLVMInt64TypeInContext(c);
  E.voidt = LLVMVoidTypeInContext(c);
  E.gptr = LLVMPointerTypeInContext(c, target == LW_GPU ? 1 : 0);
  E.sptr = LLVMPointerTypeInContext(c, target == LW_GPU ? 3 : 0);
  E.V = 16 / (E.wbits / 8);
  {
    int64_t want = INT64_C(1) << p->log_n;
    E.src_dense = p->src_index_stride == 1;
    for (int a = p->src_nax - 1; a >= 0; a--) {
      if (p->src_ext[a] > 1 && p->src_stride[a] != want) E.src_dense = 0;
      want *= p->src_ext[a];
    }
  }
  E.vecW = LLVMVectorType(E.W, (unsigned)E.V);
  lw_arith_init(&E.A, c, m, E.b, p->radix, target);
  if (target == LW_GPU) E.barrier_fn = intrinsic(&E, "llvm.nvvm.barrier0", &E.barrier_ty);
  if (pro) {
    int nargs = 5 + (pro->sub ? pro->sub->ninputs : 0);
    for (int t = 0; t < pro->nepi; t++) nargs += pro->epi[t].sub->ninputs + 1;
    fhjit_status st = FHJIT_OK;
    if (nargs > LW_MAX_ARGS || pro->nepi > LW_NTT_MAX_EPI)
      st = ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: NTT with fused work of too many inputs (%d kernel arguments, at most %d)",
                    nargs, LW_MAX_ARGS);
    const lw_ntt_kplan *lk = &p->k[p->nkernels - 1];
    if (!st && (pro->red.members > 0 || p->reduce_members > 0) &&
        (pro->red.members != p->reduce_members || pro->red.out_rows != p->reduce_rows ||
         pro->red.acc != p->reduce_acc || pro->red.acc > 3 ||
         (pro->red.acc > 0 && pro->epi[0].sub->nresults != pro->red.members) ||
         pro->red.members > LW_MAX_REG || pro->nepi != 1 || pro->ntt_comps > 1 || lk->cols ||
         lk->cluster || !lk->staged_store || !lk->post || lk->log_c > lk->log_subs ||
         !ir_ntt_is_forward(p->kind)))
      st = ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "internal: an NTT reduce plan (ipfuse) the emitter cannot build");
    if (!st && pro->sub) st = build_prologue(&E);
    if (!st && pro->nepi) st = build_epilogue(&E);
    if (st) {
      LLVMDisposeBuilder(E.b);
      return st;
    }
  }
  fhjit_status st = FHJIT_OK;
  for (int j = 0; j < p->nkernels && !st; j++) {
    E.K = &p->k[j];
    E.src_view = j == 0;
    E.pro_active = pro && pro->sub && j == 0;
    E.epi_active = pro && pro->nepi > 0 && j == p->nkernels - 1;
    E.red_active = E.epi_active && pro->red.members > 0;
    E.red_k = -1;
    char name[96];
    snprintf(name, sizeof name, "%s_k%d", prefix, j);
    if ((st = kernel_names_free(&E, name))) break;
    E.inlined = 0;
    if (E.K->cluster) {
      if (target == LW_GPU) build_cluster_gpu_kernel(&E, name);
      else build_cluster_host_fn(&E, name);
    } else if (target == LW_GPU) {
      build_gpu_kernel(&E, name);
    } else {
      build_host_fn(&E, name);
    }
    st = check_inlined(&E, name);
  }
  LLVMDisposeBuilder(E.b);
  return st;
}

/* ------------------------------------------------------- standalone GPU */

static void plan_prefix(const lw_ntt_plan *p, char *buf, size_t size) {
  static const char *const kinds[] = {"fwd_std", "fwd_mont", "inv_mont", "inv_std"};
  snprintf(buf, size, "fhjit_ntt_%s_%s_n%d", ir_radix_name(p->radix), kinds[p->kind], p->log_n);
}

/* Builds, verifies and optimises the module of a plan for the GPU; *ptx
 * (optional) receives the PTX, *text (optional) the requested text. */
void lw_ntt_for_target(lw_ntt_plan *p, const nv_target *t) {
  if (p->k[0].cluster && !nv_target_has_cluster(t)) {
    p->nkernels = p->two_nkernels;
    memcpy(p->k, p->two, sizeof p->k);
  }
  if (nv_target_has_pdl(t)) return;
  for (int j = 0; j < 2; j++) p->k[j].pdl = p->k[j].entry = 0;
}

void lw_ntt_launch_facts(const lw_ntt_plan *p, int j, lw_kernel *k) {
  const lw_ntt_kplan *kp = &p->k[j];
  k->flags = (j > 0 ? kp->pdl : kp->entry) ? LW_KERNEL_PDL : 0;
  if (kp->cluster) { /* dynamic shared memory: the block's slice */
    k->cluster[0] = 1u << kp->cluster;
    k->cluster[1] = k->cluster[2] = 1;
    k->shared_bytes = kp->smem_words * (p->radix == FHJIT_R32 ? 4u : 8u);
  }
  if (kp->pdl == 2) k->args[k->nargs++] = (lw_arg){LW_ARG_OWN, 0};
}

static fhjit_status gpu_module(fhjit_context *ctx, const lw_ntt_plan *p, const char *arch,
                               fhjit_emit_kind kind, char **text, char **ptx) {
  const nv_target *t = nv_find_target(&ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  LLVMTargetMachineRef tm = nv_gpu_machine(&ctx->err, t);
  if (!tm) return FHJIT_ERR_LLVM;
  LLVMContextRef c = LLVMContextCreate();
  char prefix[40];
  plan_prefix(p, prefix, sizeof prefix);
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext(prefix, c);
  nv_prepare_module(m, tm);
  lw_ntt_plan pt = *p;
  lw_ntt_for_target(&pt, t);
  fhjit_status st = lw_ntt_build(ctx, &pt, NULL, LW_GPU, prefix, c, m);
  if (!st) st = nv_pipeline(&ctx->err, m, tm, prefix, "default<O3>", kind, text, ptx);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  return st;
}

fhjit_status lw_ntt_emit_text(fhjit_context *ctx, const lw_ntt_plan *p, fhjit_emit_kind kind,
                              const char *arch, char **text) {
  *text = NULL;
  return gpu_module(ctx, p, arch, kind, text, NULL);
}

fhjit_status lw_ntt_compile_ptx(fhjit_context *ctx, const lw_ntt_plan *p, const char *arch,
                                lw_program *out) {
  memset(out, 0, sizeof *out);
  fhjit_status st = gpu_module(ctx, p, arch, FHJIT_EMIT_PTX, NULL, &out->ptx);
  if (st) return st;
  lw_ntt_plan pt = *p; /* gpu_module found the target */
  lw_ntt_for_target(&pt, nv_find_target(&ctx->err, arch));
  char prefix[40];
  plan_prefix(p, prefix, sizeof prefix);
  out->nkernels = pt.nkernels; /* the target's: a cluster plan may have become two kernels */
  for (int j = 0; j < pt.nkernels; j++) {
    lw_kernel *k = &out->kernels[j];
    snprintf(k->name, sizeof k->name, "%s_k%d", prefix, j);
    k->grid[0] = (uint32_t)pt.k[j].blocks;
    k->grid[1] = k->grid[2] = 1;
    k->block[0] = pt.k[j].threads;
    k->block[1] = k->block[2] = 1;
    k->shared_bytes = 0; /* static shared memory only */
    k->nargs = 5;
    k->args[0] = (lw_arg){LW_ARG_PARAMS, 0};
    k->args[1] = (lw_arg){LW_ARG_PSTRIDE, 0};
    k->args[2] = (lw_arg){LW_ARG_INPUT, 1};
    k->args[3] = j == 0 ? (lw_arg){LW_ARG_INPUT, 0} : (lw_arg){LW_ARG_RESULT, 0};
    k->args[4] = (lw_arg){LW_ARG_RESULT, 0};
    lw_ntt_launch_facts(&pt, j, k);
  }
  return FHJIT_OK;
}

/* ------------------------------------------------------------ host JIT */

struct lw_ntt_host {
  lw_ntt_plan plan;
  int nextra; /* prologue inputs (-1: no prologue) */
  int nepi_args; /* epilogue arguments of the last kernel */
  jit_code *jit;
  jit_block_fn fn[2];
};

/* What build_ntt needs (jit_build_fn). */
typedef struct ntt_build {
  fhjit_context *ctx;
  const lw_ntt_plan *p;
  const lw_ntt_fusion *pro;
  const char *prefix;
} ntt_build;

static fhjit_status build_ntt(void *arg, LLVMContextRef c, LLVMModuleRef *m) {
  const ntt_build *b = arg;
  *m = LLVMModuleCreateWithNameInContext(b->prefix, c);
  return lw_ntt_build(b->ctx, b->p, b->pro, LW_HOST, b->prefix, c, *m);
}

void lw_ntt_host_destroy(lw_ntt_host *h) {
  if (!h) return;
  jit_destroy(h->jit);
  free(h);
}

fhjit_status lw_ntt_host_create(fhjit_context *ctx, const lw_ntt_plan *p,
                                const lw_ntt_fusion *pro, lw_ntt_host **out) {
  *out = NULL;
  lw_ntt_host *h = calloc(1, sizeof *h);
  if (!h) return ir_error(ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  h->plan = *p;
  h->nextra = pro && pro->sub ? pro->sub->ninputs : -1;
  for (int t = 0; pro && t < pro->nepi; t++) h->nepi_args += pro->epi[t].sub->ninputs + 1;
  char prefix[40], who[64], names[2][96];
  plan_prefix(p, prefix, sizeof prefix);
  snprintf(who, sizeof who, "NTT %s (host)", prefix);
  const char *syms[2];
  SP_ASSERT(p->nkernels <= 2); /* h->fn */
  for (int j = 0; j < p->nkernels; j++) {
    snprintf(names[j], sizeof names[j], "%s_k%d_host", prefix, j);
    syms[j] = names[j];
  }
  ntt_build b = {ctx, p, pro, prefix};
  void *addrs[2];
  fhjit_status st = jit_compile(&ctx->err, prefix, "default<O2>", build_ntt, &b, who, syms,
                                p->nkernels, addrs, &h->jit);
  if (st) {
    free(h);
    return st;
  }
  for (int j = 0; j < p->nkernels; j++) h->fn[j] = (jit_block_fn)(uintptr_t)addrs[j];
  *out = h;
  return FHJIT_OK;
}

fhjit_status lw_ntt_host_run(fhjit_context *ctx, lw_ntt_host *h, const void *params,
                             int64_t pstride, const void *twiddles, const void *in, void *out,
                             const void *const *extra, int threads) {
  int pro = h && h->nextra >= 0;
  if (!h || !params || !twiddles || !out || (!in && !pro) ||
      ((h->nextra > 0 || h->nepi_args > 0) && !extra))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: NTT host run: null argument");
  if (in == out && !h->plan.k[0].in_place)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: NTT host run: in and out must be distinct buffers");
  const lw_ntt_plan *p = &h->plan;
  if (threads <= 0) threads = (int)jit_cores();
  if (threads > 64) threads = 64;
  size_t ws = p->radix == FHJIT_R32 ? 4 : 8;
  uint64_t slots[LW_MAX_ARGS + 8];
  for (int j = 0; j < p->nkernels; j++) {
    const lw_ntt_kplan *k = &p->k[j];
    /* kernel arguments: params, pstride, tw, src, dst[, prologue inputs] */
    int nslots = 5;
    slots[0] = (uint64_t)(uintptr_t)params;
    slots[1] = (uint64_t)pstride;
    slots[2] = (uint64_t)(uintptr_t)twiddles;
    slots[3] = (uint64_t)(uintptr_t)(j == 0 ? (in ? in : out) : out);
    slots[4] = (uint64_t)(uintptr_t)out;
    int npro = pro ? h->nextra : 0;
    if (j == 0)
      for (int e = 0; e < npro; e++) slots[nslots++] = (uint64_t)(uintptr_t)extra[e];
    if (j == p->nkernels - 1)
      for (int e = 0; e < h->nepi_args; e++) slots[nslots++] = (uint64_t)(uintptr_t)extra[npro + e];
    /* a cluster kernel's host form runs whole clusters, with their C
     * slices side by side */
    int64_t units = k->cluster ? k->blocks >> k->cluster : k->blocks;
    size_t shared = ((size_t)k->smem_words << k->cluster) * ws;
    if (p->reduce_members > 0 && j == p->nkernels - 1) /* the members' slots (red_slot) */
      shared += ((size_t)(p->reduce_acc > 0 ? 1 + p->reduce_acc : p->reduce_members)
                 << (k->log_c + k->m)) * ws;
    fhjit_status st = jit_run_blocks(&ctx->err, h->fn[j], slots, units, threads, shared, "NTT host run");
    if (st) return st;
  }
  return FHJIT_OK;
}
