/* ntt_emit_fuse.c: pointwise work fused into the NTT's kernels (ntt.h,
 * lw_ntt_fusion): kernel 0's prologue (its source computed by a
 * sub-graph's evaluators: pro_value, pro_or_src), the last kernel's
 * epilogue (final_store: the transform's words and the targets' values),
 * ipfuse's reduce mode (red_*: every member's body in one block, their
 * words kept for the epilogue or folded into the sum), and the building
 * of the evaluators they call (build_prologue, build_epilogue). */
#include <stdio.h>
#include <string.h>

#include "lower/ntt_emit.h"

/* ------------------------------------------------ prologue and epilogue */

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

LLVMValueRef lw_ne_pro_value(ne *E, LLVMValueRef br, LLVMValueRef i) { return pro_eval(E, br, i, 0); }
LLVMValueRef lw_ne_pro_value_vec(ne *E, LLVMValueRef br, LLVMValueRef i) { return pro_eval(E, br, i, 1); }

/* Kernel 0's word at batch row br, index i, with a prologue: the
 * prologue's, or with lw_ntt_plan.pro_rows the prologue's on rows below
 * pro_rows of each polynomial (its batch row poly * pro_rows + row) and
 * the source's word at offset off on the others. */
LLVMValueRef lw_ne_pro_or_src(ne *E, LLVMValueRef br, LLVMValueRef i, LLVMValueRef off) {
  const lw_ntt_plan *P = E->P;
  if (!P->pro_rows) return lw_ne_pro_value(E, br, i);
  LLVMBuilderRef b = E->b;
  LLVMValueRef rows = c64(E, (uint64_t)P->rows), pr = c64(E, (uint64_t)P->pro_rows);
  LLVMValueRef row = LLVMBuildURem(b, br, rows, "row"), poly = LLVMBuildUDiv(b, br, rows, "poly");
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef pb = LLVMAppendBasicBlockInContext(E->c, fn, "pro.rows");
  LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(E->c, fn, "src.rows");
  LLVMBasicBlockRef mb = LLVMAppendBasicBlockInContext(E->c, fn, "pro.merge");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, row, pr, ""), pb, sb);
  LLVMPositionBuilderAtEnd(b, pb);
  LLVMValueRef xp =
      lw_ne_pro_value(E, LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, poly, pr, ""), row, ""), i);
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
static LLVMValueRef epi_eval_with(ne *E, int t, int slot, LLVMValueRef off, const LLVMValueRef *x,
                                  int nx, int vec, const evalset *with) {
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
  return eval_call(E, with ? with : &es, comp, E->pro->ntt_comps <= 1 ? slot : 0, ncomp, args,
                   nargs + nregs, vec ? E->vecW : E->W, "epi", "epi");
}

static LLVMValueRef epi_eval(ne *E, int t, int slot, LLVMValueRef off, const LLVMValueRef *x, int nx,
                             int vec) {
  return epi_eval_with(E, t, slot, off, x, nx, vec, NULL);
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
void lw_ne_final_store(ne *E, LLVMValueRef off, const LLVMValueRef *x, int n) {
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
int lw_ne_red_words(const ne *E) { return 1 << E->K->log_e; }

/* Slots a thread keeps per word of its block: every member's (D), or
 * accumulating (red.acc > 0, ipacc) the current member's and the sum's
 * red.acc components (slot 0 the member, 1 + c component c). */
int lw_ne_red_nslots(const ne *E) {
  return E->pro->red.acc > 0 ? 1 + E->pro->red.acc : E->pro->red.members;
}

/* The slot of member k's words. */
static int red_mslot(const ne *E, int k) { return E->pro->red.acc > 0 ? 0 : k; }

/* Slot k's word (g, v) of thread tid. The GPU keeps a slot in registers
 * (an alloca whose indices are constants), but the first reduce_smem
 * members' in shared memory (ipsmem: fewer registers), after the body's
 * words: word (g, v) of every thread side by side, so that a warp's
 * scalar accesses hit distinct banks. The host keeps every slot in shared
 * memory, after the body's words: [member][word of block]. */
static LLVMValueRef red_slot(ne *E, int k, int g, int v, LLVMValueRef tid) {
  const lw_ntt_kplan *K = E->K;
  LLVMBuilderRef b = E->b;
  /* reduce_smem is 0 when accumulating (lw_ntt_plan_reduce) */
  if (E->target == LW_GPU && k >= E->P->reduce_smem) {
    LLVMValueRef idx = c64(E, (uint64_t)(k * lw_ne_red_words(E) + g * E->V + v));
    return LLVMBuildInBoundsGEP2(b, E->W, E->red_slots, &idx, 1, "slot");
  }
  LLVMValueRef t = LLVMBuildZExt(b, tid, E->i64, "");
  uint64_t slot0 = K->smem_words + ((uint64_t)k << (K->log_c + K->m));
  if (E->target == LW_GPU) {
    LLVMValueRef e = LLVMBuildNUWAdd(b, t, c64(E, slot0 + (uint64_t)(g * E->V + v) * K->threads), "");
    return LLVMBuildInBoundsGEP2(b, E->W, E->smem, &e, 1, "slot");
  }
  LLVMValueRef e = LLVMBuildNUWAdd(b, t, c64(E, (uint64_t)g * K->threads), "");
  e = LLVMBuildNUWAdd(b, LLVMBuildShl(b, e, c64(E, (uint64_t)lw_ntt_ilog2((uint64_t)E->V)), ""),
                      c64(E, (uint64_t)v + slot0), "");
  return LLVMBuildInBoundsGEP2(b, E->W, E->smem, &e, 1, "slot");
}

static void red_fold(ne *E, int k, LLVMValueRef tid, LLVMValueRef blk, int g);

/* Member red_k's final words vals[0..V) of staged group g (accumulating:
 * folded into the sum at once, so a thread holds one group's words of the
 * member, not all E). */
void lw_ne_red_keep(ne *E, LLVMValueRef tid, int g, const LLVMValueRef *vals) {
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
LLVMValueRef lw_ne_red_is_own(ne *E, int k, LLVMValueRef blk) {
  LLVMValueRef o, poly, inblk;
  red_place(E, blk, &o, &poly, &inblk);
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMValueRef rel = LLVMBuildSub(E->b, o, c64(E, (uint64_t)R->s0[k]), "");
  return LLVMBuildICmp(E->b, LLVMIntULT, rel, c64(E, (uint64_t)R->nd[k]), "own");
}

/* The batch block member k's body runs for output block blk (a row that is
 * not k's own): converted row o (o < s0) or o - nd of the member, at
 * batch rows urow[k] + .. of the polynomial. */
LLVMValueRef lw_ne_red_member_blk(ne *E, int k, LLVMValueRef blk) {
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
void lw_ne_red_own(ne *E, int k, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMBuilderRef b = E->b;
  int64_t n = INT64_C(1) << E->P->log_n;
  LLVMValueRef dptr = E->epi_in[0][R->d_input];
  for (int g = 0; g < lw_ne_red_words(E) / E->V; g++)
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
  int nx = k ? 2 : 1;
  LLVMValueRef args[LW_MAX_ARGS + 4 + LW_MAX_REG];
  int nargs = eval_head(E, E->pro->epi[0].sub, E->epi_in[0], args) + 1 + nx;
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
void lw_ne_red_epilogue(ne *E, LLVMValueRef tid, LLVMValueRef blk) {
  const lw_ntt_reduce *R = &E->pro->red;
  LLVMBuilderRef b = E->b;
  int V = E->V;
  int64_t polys = E->P->batch_rows / E->P->rows;
  unsigned align = E->target == LW_GPU ? (unsigned)V * walign(E) : walign(E);
  for (int g = 0; g < lw_ne_red_words(E) / V; g++) {
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

/* ----------------------------------------------------------- evaluators */

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

/* epics (GPU): target t's evaluators, scalar, vector and ipacc's folds,
 * with their input loads streaming (evalstream.c): bit 1 of a reduce
 * kernel's epilogue 0, bit 2 of any other. */
static fhjit_status stream_epilogue(ne *E, int t, fhjit_graph *sub) {
  const lw_ntt_kplan *lk = &E->P->k[E->P->nkernels - 1];
  const lw_ntt_reduce *R = &E->pro->red;
  int red = t == 0 && R->members > 0;
  if (E->target != LW_GPU || !(lk->epics & (red ? 1 : 2))) return FHJIT_OK;
  LLVMValueRef fns[2 * 3 * (LW_MAX_REG + 1)];
  int n = 0;
  for (int c = 0; c < E->epi_ncomp[t]; c++) {
    if (red && R->acc > 0) {
      for (int k = 0; k < R->members; k++) {
        fns[n++] = E->acc_fn[k][c];
        if (E->acc_vec) fns[n++] = E->acc_vfn[k][c];
      }
      continue;
    }
    fns[n++] = E->epi_fn[t][c];
    if (E->epi_vec[t]) fns[n++] = E->epi_vfn[t][c];
  }
  uint64_t params = lw_epics_params(sub, E->P->log_n);
  int cs = (lk->epics & 4) != 0;
  fhjit_status st = FHJIT_OK;
  for (int j = 0; j < n && !st; j++) st = lw_eval_stream_loads(E->ctx, fns[j], params, cs);
  return st;
}

/* The epilogue targets' evaluator functions in module m (lower.c), the
 * transform's value passed in registers. */
fhjit_status lw_ne_build_epilogue(ne *E) {
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
    if ((st = stream_epilogue(E, t, sub))) return st;
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
fhjit_status lw_ne_build_prologue(ne *E) {
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
