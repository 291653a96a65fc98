/* bconv.c: the basis conversion kernel (bconv.h) as LLVM IR for the GPU and
 * the host: its functions, their arguments and the digit of a block; the
 * forms' bodies are the other files' (phase 0 and what both forms share:
 * bconv_common.c; the scalar form's phase 1: bconv_scalar.c; the
 * tensor-core form: bconv_mma.c; the arithmetic: bconv_arith.c; what they
 * share: bconv_emit.h). The plan is bconv_plan.c's, the host JIT
 * bconv_host.c's. This comment says how the kernel works in all of them.
 *
 * Shape. Each thread first issues the loads of its source words (`vec`
 * consecutive coefficients of one polynomial, l rows: each word read once
 * per target-row group), then the block's threads compute the conversion's
 * constants into shared memory (phase 0: from the parameter table and the
 * bconv table, l + m + l*m entries, up to 4 per thread with their loads in
 * flight together), so that both memory latencies overlap; after the
 * barrier each thread computes V_i and walks its target rows (all m, or
 * ceil(m / split) of them), `unroll` rows at a time with their sums
 * interleaved, each an exact sum of l products reduced once, stored dense
 * (phase 1). Threads of a warp take consecutive coefficients, so loads and
 * stores are coalesced; the constants of target row j are the same for
 * every thread (broadcast shared loads, 16 bytes at a time). vec, threads,
 * split and unroll are the plan's tuning (bconv.h; the bconv_plan option).
 *
 * Exactness (R_w = 2^32 for r32, 2^64 for r62: the word; R = 2^32 / 2^62):
 *  - V_i = REDC(w * a'_i) with the constant form of ntt_emit_phase.c (a'k
 *    precomputed), then one conditional subtraction: w < 2s, a' < s give
 *    REDC < w a' / R + s < 2s, so V_i is canonical. a' = a for the standard
 *    form; for the Montgomery form a' = canon(REDC(a * 1)) = h^-1 mod s, so
 *    REDC(w a') = (w R^-1) h^-1: one REDC per word in both forms.
 *  - The table's c_ji = h_i R mod t_j, so S_j = sum_i V_i c_ji = Y_j R
 *    (mod t_j), and Z = S R^-1 mod t_j is the standard result. The
 *    Montgomery result takes c' = c R mod t_j (phase 0: canon(REDC(c R^2))),
 *    so that the same Z is Y_j R.
 *  - r32: V, c < 2^30, a product is below 2^60 and 16 of them below 2^64.
 *    S = hi 2^32 + lo; x = hi (2^32 mod t) + lo = S (mod t) and
 *    x <= (2^32 - 1)(t - 1) + 2^32 - 1 < t 2^32, so REDC(x) < 2t and one
 *    subtraction gives Z = S R^-1 mod t. Past 16 products the sum is folded
 *    to that x (< 2^62) and 12 more fit before the next fold.
 *  - r62: V < 2^60 and every product constant below t, so a sum of 16
 *    products is below 16 2^60 t = 2^64 t, and one Montgomery step with
 *    2^64 (m = lo64(S) k64 mod 2^64, k64 = -t^-1 mod 2^64 from k by one
 *    Newton step) gives u = (S + m t) / 2^64 < S / 2^64 + t < 2t: one
 *    subtraction makes it canonical. It is S 2^-64, so phase 0 scales the
 *    product constants by 4 (c'' = 4c mod t: S 2^-64 = Y R 4 2^-64 = Y);
 *    past 16 products the canonical results of 16-product chunks are added
 *    mod t. The products: with x = x0 + 2^32 x1, c = c0 + 2^32 c1 (x1, c1 <
 *    2^28), V c = x0 c0 + 2^64 x1 c1 + 2^32 (x0 c1 + x1 c0); the first two
 *    go into a 128-bit sum (one carry chain), the cross terms (< 2^61 per
 *    product) into a 64-bit one, added in at weight 2^32 every 8 products
 *    and by the reduction (lw_bconv_mac62_ptx, lw_bconv_reduce62_ptx on the
 *    GPU: u32 multiply-adds that ptxas fuses into wide ones).
 *  - Lift: V = c' (< q), c_j = R mod t_j, so Z = c' mod t_j by the same
 *    sums; then the subtraction of h mod t_j (+ t_j when negative). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/bconv_emit.h"
#include "lower/bconv_layout.h"
#include "nvptx/nvptx.h"

/* ------------------------------------------------------------ functions */

/* The kernel's arguments: 5, digits - 1 more tables, and on the GPU with
 * counts for the next step (sig) the LW_ARG_OWN argument. */
static int has_own(const bc *E) { return E->target == LW_GPU && E->P->sig.on; }

static unsigned kernel_nargs(const bc *E) {
  return 5 + (unsigned)(E->P->digits > 1 ? E->P->digits - 1 : 0) + (unsigned)has_own(E);
}

static void kernel_params(bc *E, LLVMValueRef fn) {
  static const char *const names[5] = {"params", "pstride", "table", "src", "dst"};
  unsigned ntables = kernel_nargs(E) - (unsigned)has_own(E);
  if (has_own(E)) {
    E->own = LLVMGetParam(fn, ntables);
    LLVMSetValueName2(E->own, "own", 3);
  }
  for (unsigned j = 0; j < ntables; j++) {
    char tname[24];
    const char *nm = j < 5 ? names[j] : tname;
    if (j >= 5) snprintf(tname, sizeof tname, "table%u", j - 4);
    LLVMSetValueName2(LLVMGetParam(fn, j), nm, strlen(nm));
    if (j == 1) continue;
    param_attr(E, fn, j, "nocapture");
    /* digits' tables may be one buffer: readonly, not noalias; none in a
     * dependent launch (its wait at the entry: no load may move above it)
     * or one that counts its blocks (no store may move below the count) */
    if (j < 5 && !(E->target == LW_GPU && (E->P->pdl_entry || E->P->sig.on)))
      param_attr(E, fn, j, "noalias");
    param_attr(E, fn, j, j == 4 ? "writeonly" : "readonly");
    if (j >= 5) E->more_tables[j - 5] = LLVMGetParam(fn, j);
  }
  E->params = LLVMGetParam(fn, 0);
  E->pstride = LLVMGetParam(fn, 1);
  E->table = LLVMGetParam(fn, 2);
  E->src = LLVMGetParam(fn, 3);
  E->dst = LLVMGetParam(fn, 4);
}

static void kernel_types(bc *E, LLVMTypeRef *types) {
  for (unsigned j = 0; j < kernel_nargs(E); j++) types[j] = j == 1 ? E->i64 : E->gptr;
  if (has_own(E)) types[kernel_nargs(E) - 1] = E->i64;
}

/* The block's digit's value among vals[0 .. digits) (i64): a constant
 * when they agree, affine in the digit when evenly spaced (a key
 * switch's offsets), else a chain of selects (uniform: once a block). */
static LLVMValueRef per_digit(bc *E, const int64_t *vals) {
  int D = E->P->digits, same = 1, even = 1;
  for (int k = 1; k < D; k++) {
    same &= vals[k] == vals[0];
    even &= vals[k] - vals[0] == (int64_t)k * (vals[1] - vals[0]);
  }
  if (D <= 1 || same) return c64(E, (uint64_t)vals[0]);
  if (even) /* wrapping arithmetic: a negative step too */
    return LLVMBuildAdd(E->b, LLVMBuildMul(E->b, E->dig, c64(E, (uint64_t)(vals[1] - vals[0])), ""),
                        c64(E, (uint64_t)vals[0]), "dv");
  LLVMValueRef v = c64(E, (uint64_t)vals[0]);
  for (int k = 1; k < D; k++)
    v = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, E->dig, c64(E, (uint64_t)k), ""),
                        c64(E, (uint64_t)vals[k]), v, "dv");
  return v;
}

/* Digit k's facts (k = 0: the plan's own). */
static lw_bconv_digit digit_of(const lw_bconv_plan *p, int k) {
  return k ? p->more[k - 1]
           : (lw_bconv_digit){p->src_offset, p->table_offset, p->dst_offset, p->src_cols,
                              p->dst_cols};
}

/* Sets the block's digit and its values from the flat block index blk
 * (i64); returns the block's index within its digit's grid. */
static LLVMValueRef set_digit(bc *E, LLVMValueRef blk) {
  const lw_bconv_plan *p = E->P;
  int D = p->digits > 1 ? p->digits : 1;
  E->dig = c64(E, 0);
  if (D > 1) {
    LLVMValueRef per = c64(E, E->digit_blocks);
    E->dig = LLVMBuildUDiv(E->b, blk, per, "digit");
    blk = LLVMBuildURem(E->b, blk, per, "dblk");
  }
  int64_t so[LW_BCONV_MAX_DIGITS], to[LW_BCONV_MAX_DIGITS], dso[LW_BCONV_MAX_DIGITS],
      sc[LW_BCONV_MAX_DIGITS], dc[LW_BCONV_MAX_DIGITS];
  for (int k = 0; k < D; k++) {
    lw_bconv_digit d = digit_of(p, k);
    so[k] = d.src_offset, to[k] = d.table_offset, dso[k] = d.dst_offset;
    sc[k] = d.src_cols[0], dc[k] = d.dst_cols[0];
  }
  E->dsrc_off = per_digit(E, so);
  E->dtab_off = p->lift ? c64(E, 0) : per_digit(E, to);
  E->ddst_off = per_digit(E, dso);
  E->dscol0 = per_digit(E, sc);
  E->ddcol0 = per_digit(E, dc);
  E->dtable = E->table;
  for (int k = 1; k < D; k++)
    E->dtable = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, E->dig, c64(E, (uint64_t)k), ""),
                                E->more_tables[k - 1], E->dtable, "dtable");
  return blk;
}

/* The columns (dst: target) of every digit, [digits][n]. */
static LLVMValueRef col_array(bc *E, const char *name, const char *suffix, int dst, int32_t n,
                              LLVMTypeRef *ty) {
  char sym[128];
  snprintf(sym, sizeof sym, "%s%s", name, suffix);
  LLVMValueRef vals[LW_BCONV_MAX_M * LW_BCONV_MAX_DIGITS];
  int D = E->P->digits > 1 ? E->P->digits : 1;
  for (int k = 0; k < D; k++) {
    lw_bconv_digit d = digit_of(E->P, k);
    for (int32_t i = 0; i < n; i++)
      vals[k * n + i] = c32(E, (uint64_t)(uint32_t)(dst ? d.dst_cols : d.src_cols)[i]);
  }
  n *= D;
  *ty = LLVMArrayType2(E->i32, (uint64_t)n);
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(E->m, *ty, sym, E->target == LW_GPU ? 4 : 0);
  LLVMSetInitializer(g, LLVMConstArray2(E->i32, vals, (uint64_t)n));
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMSetAlignment(g, 4);
  return g;
}

static int32_t consecutive(const int32_t *cols, int32_t n) {
  for (int32_t i = 1; i < n; i++)
    if (cols[i] != cols[0] + i) return -1;
  return cols[0];
}

/* >= 0 when every digit's columns (dst: target) are consecutive. */
static int32_t all_consecutive(const lw_bconv_plan *p, int dst) {
  int32_t first = -1;
  for (int k = 0; k < (p->digits > 1 ? p->digits : 1); k++) {
    lw_bconv_digit d = digit_of(p, k);
    first = consecutive(dst ? d.dst_cols : d.src_cols, dst ? p->m : p->l);
    if (first < 0) return -1;
  }
  return first;
}

static void build_gpu(bc *E, const char *name) {
  LLVMTypeRef types[5 + LW_BCONV_MAX_DIGITS];
  kernel_types(E, types);
  LLVMValueRef fn =
      LLVMAddFunction(E->m, name, LLVMFunctionType(E->voidt, types, kernel_nargs(E), 0));
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  fn_attr(E, fn, "nounwind");
  kernel_params(E, fn);
  E->fn = fn;
  char sname[128];
  snprintf(sname, sizeof sname, "%s.smem", name);
  LLVMTypeRef arr = LLVMArrayType2(E->W, (uint64_t)(E->mma ? mma_shared_words(E->P) : shared_words(E->P)));
  LLVMValueRef sm = LLVMAddGlobalInAddressSpace(E->m, arr, sname, 3);
  LLVMSetInitializer(sm, LLVMGetUndef(arr));
  LLVMSetLinkage(sm, LLVMInternalLinkage);
  LLVMSetAlignment(sm, 16);
  E->smem = sm;
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, fn, "entry"));
  if (E->P->pdl_entry) lw_dependent_entry(E->c, E->b);
  LLVMValueRef tid = sreg(E, "llvm.nvvm.read.ptx.sreg.tid.x");
  LLVMValueRef blk = zext(E, sreg(E, "llvm.nvvm.read.ptx.sreg.ctaid.x"), E->i64);
  if (E->P->rev) {
    LLVMValueRef last = LLVMBuildSub(E->b, zext(E, sreg(E, "llvm.nvvm.read.ptx.sreg.nctaid.x"), E->i64),
                                     LLVMConstInt(E->i64, 1, 0), "");
    blk = LLVMBuildSub(E->b, last, blk, "blk.rev");
  }
  LLVMValueRef run = blk; /* the block this one runs, across the digits */
  blk = set_digit(E, blk);
  if (E->mma) {
    lw_bc_build_mma_body(E, tid, blk);
  } else {
    p1 S;
    lw_bc_phase1_load(E, tid, blk, &S);
    lw_bc_emit_phase0(E, tid);
    LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
    lw_bc_phase1_compute(E, &S);
  }
  if (E->P->sig.on) { /* convsync: after the last store, counted in its digit */
    SP_ASSERT(E->P->sig.need == E->digit_blocks);
    lw_cnt C = {.c = E->c, .m = E->m, .b = E->b, .fn = fn, .own = E->own,
                .barrier_fn = E->barrier_fn, .barrier_ty = E->barrier_ty};
    lw_cnt_sync_signal(&C, &E->P->sig, tid, run);
  }
  LLVMBuildRetVoid(E->b);
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "maxntidx", 8),
                           LLVMValueAsMetadata(c32(E, E->threads))};
  LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                              LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, md, 3)));
  if (E->mma) {
    /* without a register limit, ptxas holds some of these kernels to 64 or
     * 80 registers with a spill of 4 or 8 bytes; with one, none spills. At
     * most what a block's threads can have (64 K registers an SM): more
     * and the launch fails (r62 M=4 at 512 threads did) */
    uint32_t cap = 65536 / E->threads / 8 * 8;
    LLVMMetadataRef mr[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "maxnreg", 7),
                             LLVMValueAsMetadata(c32(E, cap < 168 ? cap : 168))};
    LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                                LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, mr, 3)));
  }
}

static void build_host(bc *E, const char *name) {
  /* the kernel's arguments, then (i64 begin, i64 end, ptr shared) */
  unsigned na = kernel_nargs(E);
  LLVMTypeRef types[8 + LW_BCONV_MAX_DIGITS];
  kernel_types(E, types);
  types[na] = types[na + 1] = E->i64;
  types[na + 2] = E->sptr;
  char fname[128];
  snprintf(fname, sizeof fname, "%s_host_body", name);
  LLVMTypeRef fty = LLVMFunctionType(E->voidt, types, na + 3, 0);
  LLVMValueRef fn = LLVMAddFunction(E->m, fname, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  fn_attr(E, fn, "nounwind");
  kernel_params(E, fn);
  param_attr(E, fn, na + 2, "noalias");
  E->fn = fn;
  E->smem = LLVMGetParam(fn, na + 2);
  LLVMValueRef begin = LLVMGetParam(fn, na), end = LLVMGetParam(fn, na + 1);
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, fn, "entry"));
  loop B = lw_bc_loop_begin(E, begin, end, "block");
  LLVMValueRef blk = set_digit(E, B.iv); /* before both phases: dominates them */
  /* each phase for every thread of the block before the next: the loop
   * boundary is the barrier */
  loop T = lw_bc_loop_begin(E, c32(E, 0), c32(E, E->P->threads), "thread0");
  lw_bc_emit_phase0(E, T.iv);
  lw_bc_loop_end(E, &T, c32(E, 1), c32(E, E->P->threads));
  T = lw_bc_loop_begin(E, c32(E, 0), c32(E, E->P->threads), "thread1");
  p1 S;
  lw_bc_phase1_load(E, T.iv, blk, &S);
  lw_bc_phase1_compute(E, &S);
  lw_bc_loop_end(E, &T, c32(E, 1), c32(E, E->P->threads));
  lw_bc_loop_end(E, &B, c64(E, 1), end);
  LLVMBuildRetVoid(E->b);

  /* the entry: (ptr slots, i64 begin, i64 end, ptr shared) */
  snprintf(fname, sizeof fname, "%s_host", name);
  LLVMTypeRef wtypes[4] = {E->gptr, E->i64, E->i64, E->sptr};
  LLVMValueRef w = LLVMAddFunction(E->m, fname, LLVMFunctionType(E->voidt, wtypes, 4, 0));
  fn_attr(E, w, "nounwind");
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, w, "entry"));
  LLVMValueRef args[8 + LW_BCONV_MAX_DIGITS];
  for (unsigned j = 0; j < na; j++) {
    LLVMValueRef slot = gep(E, E->i64, LLVMGetParam(w, 0), c64(E, (uint64_t)j));
    args[j] = LLVMBuildLoad2(E->b, types[j], slot, "");
    LLVMSetAlignment(args[j], 8);
  }
  for (unsigned j = 0; j < 3; j++) args[na + j] = LLVMGetParam(w, j + 1);
  LLVMBuildCall2(E->b, fty, fn, args, na + 3, "");
  LLVMBuildRetVoid(E->b);
}

fhjit_status lw_bconv_build(fhjit_context *ctx, const lw_bconv_plan *p, lw_target target,
                            const char *name, LLVMContextRef c, LLVMModuleRef m) {
  static const char *const suffixes[] = {"", ".smem", ".scols", ".dcols", "_host", "_host_body"};
  for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
    char sym[128];
    snprintf(sym, sizeof sym, "%s%s", name, suffixes[i]);
    if (lw_symbol_taken(m, sym)) return lw_duplicate_symbol(ctx, sym);
  }
  SP_ASSERT(p->blocks > 0 && p->vec >= 1 && p->threads >= 32 && p->split >= 1 &&
            p->unroll >= 1); /* lw_bconv_plan_make's */
  bc E = {.ctx = ctx, .P = p, .target = target, .c = c, .m = m};
  /* the host always builds the scalar form (lw_bconv_host_create) */
  E.mma = target == LW_GPU && p->mma > 0;
  E.threads = E.mma ? p->mma_threads : p->threads;
  E.digit_blocks = E.mma ? p->mma_digit_blocks : p->digit_blocks;
  E.b = LLVMCreateBuilderInContext(c);
  E.wbits = p->radix == FHJIT_R32 ? 32 : 64;
  E.V = 16 / (E.wbits / 8);
  E.W = LLVMIntTypeInContext(c, (unsigned)E.wbits);
  E.i1 = LLVMInt1TypeInContext(c);
  E.i32 = LLVMInt32TypeInContext(c);
  E.i64 = LLVMInt64TypeInContext(c);
  E.i128 = LLVMIntTypeInContext(c, 128);
  E.voidt = LLVMVoidTypeInContext(c);
  E.gptr = LLVMPointerTypeInContext(c, target == LW_GPU ? 1 : 0);
  E.sptr = LLVMPointerTypeInContext(c, target == LW_GPU ? 3 : 0);
  E.scol0 = all_consecutive(p, 0);
  E.dcol0 = all_consecutive(p, 1);
  E.scols = col_array(&E, name, ".scols", 0, p->l, &E.scols_ty);
  E.dcols = col_array(&E, name, ".dcols", 1, p->m, &E.dcols_ty);
  if (target == LW_GPU) {
    unsigned id = LLVMLookupIntrinsicID("llvm.nvvm.barrier0", 18);
    E.barrier_fn = LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
    E.barrier_ty = LLVMIntrinsicGetType(c, id, NULL, 0);
    build_gpu(&E, name);
  } else {
    build_host(&E, name);
  }
  LLVMDisposeBuilder(E.b);
  return FHJIT_OK;
}

fhjit_status lw_bconv_compile_ptx(fhjit_context *ctx, const lw_bconv_plan *p, const char *arch,
                                  const char *name, char **ptx) {
  *ptx = NULL;
  const nv_target *t = nv_find_target(&ctx->err, arch);
  if (!t) return FHJIT_ERR_TARGET;
  LLVMTargetMachineRef tm = nv_gpu_machine(&ctx->err, t);
  if (!tm) return FHJIT_ERR_LLVM;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext(name, c);
  nv_prepare_module(m, tm);
  lw_bconv_plan tp = *p;
  lw_bconv_for_target(&tp, t);
  fhjit_status st = lw_bconv_build(ctx, &tp, LW_GPU, name, c, m);
  if (!st) st = nv_pipeline(&ctx->err, m, tm, name, lw_kernel_pipeline, FHJIT_EMIT_PTX, NULL, ptx);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  return st;
}
