/* ntt_emit.c: the NTT of SPEC section 5 as LLVM IR loop nests (see ntt.h
 * for the schedule; ntt_plan.c chooses the plan): the GPU kernels and host
 * functions around the phase bodies, PTX, and the host JIT that runs the
 * same IR.
 *
 * The files: this one holds the kernels' arguments, the GPU kernel and
 * host function builders and the entry points (lw_ntt_build, the standalone
 * GPU module, the host JIT); ntt_emit_phase.c the arithmetic, the per-row
 * constants and the phase bodies (passes, staged load and store,
 * twiddles); ntt_emit_fuse.c the fused prologue and epilogue and ipfuse's
 * reduce mode; ntt_emit_sync.c the waits between kernels finer than a
 * grid's (per-row completion counters); ntt_cluster.c the cluster
 * schedule; ntt_emit.h what they share. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"
#include "lower/ntt_emit.h"
#include "nvptx/nvptx.h"

/* ------------------------------------------------------------ functions */

/* Kernel arguments: (params, pstride, tw, src, dst, prologue inputs...,
 * per epilogue target: its inputs..., its output, [ipchain: the chained
 * plan's tw, src, dst], [GPU, pdl 2 or ipsync: i64 own]). */
static int num_pro_args(const ne *E) { return E->pro_active ? (int)E->pro->sub->ninputs : 0; }

static int num_kernel_args(const ne *E) {
  int n = 5 + num_pro_args(E);
  for (int t = 0; E->epi_active && t < E->pro->nepi; t++) n += (int)E->pro->epi[t].sub->ninputs + 1;
  n += lw_ne_chain_active(E) ? LW_NTT_CHAIN_ARGS : 0;
  return n + lw_ne_has_own(E);
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
    /* ipchain reads the sum back through its own source argument */
    if (!(t == 0 && lw_ne_chain_active(E))) {
      param_attr(E, fn, (unsigned)j, "noalias");
      param_attr(E, fn, (unsigned)j, "writeonly");
    }
    j++;
  }
  if (lw_ne_chain_active(E)) j = lw_ne_chain_params(E, fn, j);
  E->own = NULL;
  if (lw_ne_has_own(E)) {
    E->own = LLVMGetParam(fn, (unsigned)j);
    LLVMSetValueName2(E->own, "own", 3);
  }
}

static void kernel_types(ne *E, LLVMTypeRef *types) {
  int n = num_kernel_args(E);
  for (int j = 0; j < n; j++) types[j] = j == 1 ? E->i64 : E->gptr;
  if (lw_ne_has_own(E)) types[n - 1] = E->i64;
}

/* Programmatic dependent launch (sm_90): lw_grid_dep. */
static void grid_dep(ne *E, const char *text) { lw_grid_dep(E->c, E->b, text); }

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
void lw_ne_offset_rows(ne *E, int first) {
  if (!E->P->dst_offset) return;
  LLVMValueRef o = c64(E, (uint64_t)E->P->dst_offset);
  E->dst = LLVMBuildInBoundsGEP2(E->b, E->W, E->dst, &o, 1, "dst.at");
  if (!first || E->pro_active) E->src = LLVMBuildInBoundsGEP2(E->b, E->W, E->src, &o, 1, "src.at");
}

LLVMValueRef lw_ne_gpu_kernel_fn(ne *E, const char *name) {
  LLVMTypeRef types[LW_MAX_ARGS + 8];
  int n = num_kernel_args(E);
  kernel_types(E, types);
  LLVMValueRef fn = LLVMAddFunction(E->m, name, LLVMFunctionType(E->voidt, types, (unsigned)n, 0));
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  fn_attr(E, fn, "nounwind");
  kernel_params(E, fn);
  E->fn = fn;
  return fn;
}

/* The kernel's shared memory, a static array (E->smem): the body's words,
 * then the reduce kernel's slots (red_slot); a chained kernel's own if
 * larger. */
static void gpu_smem(ne *E, const char *name) {
  const lw_ntt_kplan *k = E->K;
  char sname[128]; /* kernel names are at most 63 characters */
  snprintf(sname, sizeof sname, "%s.smem", name);
  uint64_t words = k->smem_words;
  if (E->red_active) words += (uint64_t)E->P->reduce_smem << (k->log_c + k->m);
  if (lw_ne_chain_active(E) && E->pro->chain->k[0].smem_words > words)
    words = E->pro->chain->k[0].smem_words;
  LLVMTypeRef arr = LLVMArrayType2(E->W, words);
  LLVMValueRef sm = LLVMAddGlobalInAddressSpace(E->m, arr, sname, 3);
  LLVMSetInitializer(sm, LLVMGetUndef(arr));
  LLVMSetLinkage(sm, LLVMInternalLinkage);
  LLVMSetAlignment(sm, 16);
  E->smem = sm;
}

/* The reduce kernel's members in turn: member mk's own rows loaded, or its
 * body on its block (a branch uniform per block: the body's barriers stay
 * uniform). */
static void reduce_members(ne *E, LLVMValueRef fn, LLVMValueRef tid, LLVMValueRef blk) {
  for (int mk = 0; mk < E->pro->red.members; mk++) {
    LLVMBasicBlockRef ownb = LLVMAppendBasicBlockInContext(E->c, fn, "red.own");
    LLVMBasicBlockRef bodyb = LLVMAppendBasicBlockInContext(E->c, fn, "red.body");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(E->c, fn, "red.join");
    /* a member without own rows (ipntt's) has no operand to read them from */
    LLVMValueRef own = E->pro->red.nd[mk] ? lw_ne_red_is_own(E, mk, blk) : LLVMConstInt(E->i1, 0, 0);
    LLVMBuildCondBr(E->b, own, ownb, bodyb);
    LLVMPositionBuilderAtEnd(E->b, ownb);
    if (E->pro->red.nd[mk]) lw_ne_red_own(E, mk, tid, blk);
    LLVMBuildBr(E->b, join);
    LLVMPositionBuilderAtEnd(E->b, bodyb);
    LLVMValueRef mblk = lw_ne_red_member_blk(E, mk, blk);
    E->red_k = mk;
    for (int ph = 0; ph < lw_ne_num_phases(E->K); ph++) {
      /* the previous member's last phase read shared memory */
      if (ph || mk) LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
      lw_ne_emit_phase(E, ph, tid, mblk);
    }
    E->red_k = -1;
    LLVMBuildBr(E->b, join);
    LLVMPositionBuilderAtEnd(E->b, join);
  }
}

/* Launch bounds (maxntidx, and minctasm where blocks per SM are asked:
 * ptxas caps registers to fit them), before any pass runs (added later
 * they are dropped). */
static void launch_bounds(ne *E, LLVMValueRef fn) {
  const lw_ntt_kplan *k = E->K;
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "maxntidx", 8),
                           LLVMValueAsMetadata(LLVMConstInt(E->i32, k->threads, 0))};
  LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                              LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, md, 3)));
  int minb = E->epi_active && !E->red_active && E->P->epi_minb > 0 ? E->P->epi_minb : k->minb;
  if (minb > 0) {
    LLVMMetadataRef mb[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(E->c, "minctasm", 8),
                             LLVMValueAsMetadata(LLVMConstInt(E->i32, (uint64_t)minb, 0))};
    LLVMAddNamedMetadataOperand(E->m, "nvvm.annotations",
                                LLVMMetadataAsValue(E->c, LLVMMDNodeInContext2(E->c, mb, 3)));
  }
}

static void build_gpu_kernel(ne *E, const char *name) {
  const lw_ntt_kplan *k = E->K;
  LLVMValueRef fn = lw_ne_gpu_kernel_fn(E, name);
  gpu_smem(E, name);
  LLVMPositionBuilderAtEnd(E->b, LLVMAppendBasicBlockInContext(E->c, fn, "entry"));
  if (E->red_active) /* the members' final words: registers once promoted */
    E->red_slots = LLVMBuildAlloca(E->b, LLVMArrayType2(E->W, (uint64_t)(lw_ne_red_nslots(E) * lw_ne_red_words(E))), "slots");
  LLVMValueRef tid = sreg(E, "llvm.nvvm.read.ptx.sreg.tid.x");
  LLVMValueRef blk = block_order(E, LLVMBuildZExt(E->b, sreg(E, "llvm.nvvm.read.ptx.sreg.ctaid.x"), E->i64, "x"));
  if (lw_ne_chain_active(E)) blk = lw_ne_rows_first(E, blk, E->pro->chain_row0);
  blk = lw_ne_sync_first(E, blk); /* ipsync: the counted rows first */
  E->preloaded = 0;
  int first = k == &E->P->k[0];
  lw_ne_offset_rows(E, first);
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
  if (first && k->entry && k->l2pf && E->target == LW_GPU) {
    if (!E->pro_active) lw_ne_prefetch_source(E, tid, blk);
    else lw_ne_prefetch_aut_source(E, tid, blk);
  }
  if (!first && k->pdl && (k->epipf & 1) && E->epi_active && !E->red_active && E->target == LW_GPU)
    lw_ne_prefetch_epilogue(E, tid, blk);
  if (first && k->entry && !k->late_entry) lw_ne_entry_wait(E, tid, blk);
  if (!first && k->entry) grid_dep(E, "griddepcontrol.launch_dependents;");
  if (first && k->pdl) grid_dep(E, "griddepcontrol.launch_dependents;");
  if (!first && k->pdl && !wait_after_tws) lw_ne_wait_for_kernel0(E, tid, blk);
  if (k->early && !wait_after_tws) {
    lw_ne_preload_pass0(E, tid, blk);
    E->preloaded = 1;
  }
  E->red_blk = blk;
  if (E->red_active) {
    reduce_members(E, fn, tid, blk);
    lw_ne_red_epilogue(E, tid, blk);
  }
  if (lw_ne_chain_active(E)) lw_ne_chain(E, tid, blk);
  for (int ph = 0; !E->red_active && ph < lw_ne_num_phases(k); ph++) {
    if (ph) LLVMBuildCall2(E->b, E->barrier_ty, E->barrier_fn, NULL, 0, "");
    lw_ne_emit_phase(E, ph, tid, blk);
    if (ph == 0 && wait_after_tws) {
      lw_ne_wait_for_kernel0(E, tid, blk);
      if (k->early) {
        lw_ne_preload_pass0(E, tid, blk);
        E->preloaded = 1;
      }
    }
  }
  if (first && k->entry && k->late_entry) lw_ne_entry_wait(E, tid, blk);
  lw_ne_kernel_end(E, tid, blk); /* ntt_emit_sync.c: counts for the kernels after it */
  LLVMBuildRetVoid(E->b);
  E->preloaded = 0;
  launch_bounds(E, fn);
}

loop lw_ne_loop_begin(ne *E, LLVMValueRef begin, LLVMTypeRef ty, const char *name) {
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

void lw_ne_loop_end(ne *E, loop *L, LLVMValueRef end, const char *name) {
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
LLVMValueRef lw_ne_host_body_begin(ne *E, const char *name, LLVMTypeRef *types, int *nargs,
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
void lw_ne_host_body_end(ne *E, const char *name, const LLVMTypeRef *types, int n,
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
  LLVMValueRef fn = lw_ne_host_body_begin(E, name, types, &n, &fty, &begin, &end, &done);
  loop blk = lw_ne_loop_begin(E, begin, E->i64, "block");
  E->red_blk = blk.iv;
  for (int mk = 0; E->red_active && mk < E->pro->red.members; mk++) {
    /* reduce mode (see build_gpu_kernel): member mk's own rows or body */
    LLVMBasicBlockRef ownb = LLVMAppendBasicBlockInContext(E->c, fn, "red.own");
    LLVMBasicBlockRef bodyb = LLVMAppendBasicBlockInContext(E->c, fn, "red.body");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(E->c, fn, "red.join");
    LLVMValueRef own = E->pro->red.nd[mk] ? lw_ne_red_is_own(E, mk, blk.iv) : LLVMConstInt(E->i1, 0, 0);
    LLVMBuildCondBr(E->b, own, ownb, bodyb);
    LLVMPositionBuilderAtEnd(E->b, ownb);
    if (E->pro->red.nd[mk]) {
      loop t = lw_ne_loop_begin(E, c32(E, 0), E->i32, "thread");
      lw_ne_red_own(E, mk, t.iv, blk.iv);
      lw_ne_loop_end(E, &t, c32(E, k->threads), "own_done");
    }
    LLVMBuildBr(E->b, join);
    LLVMPositionBuilderAtEnd(E->b, bodyb);
    LLVMValueRef mblk = lw_ne_red_member_blk(E, mk, blk.iv);
    E->red_k = mk;
    for (int ph = 0; ph < lw_ne_num_phases(k); ph++) {
      loop t2 = lw_ne_loop_begin(E, c32(E, 0), E->i32, "thread");
      lw_ne_emit_phase(E, ph, t2.iv, mblk);
      lw_ne_loop_end(E, &t2, c32(E, k->threads), "phase_done");
    }
    E->red_k = -1;
    LLVMBuildBr(E->b, join);
    LLVMPositionBuilderAtEnd(E->b, join);
  }
  if (E->red_active) {
    loop t = lw_ne_loop_begin(E, c32(E, 0), E->i32, "thread");
    lw_ne_red_epilogue(E, t.iv, blk.iv);
    lw_ne_loop_end(E, &t, c32(E, k->threads), "epi_done");
  }
  if (lw_ne_chain_active(E)) lw_ne_chain(E, NULL, blk.iv);
  LLVMValueRef ordered = block_order(E, blk.iv); /* blk.iv in reduce mode */
  for (int ph = 0; !E->red_active && ph < lw_ne_num_phases(k); ph++) {
    /* a phase for every thread of the block before the next phase starts:
     * the loop boundary is the barrier */
    loop t = lw_ne_loop_begin(E, c32(E, 0), E->i32, "thread");
    lw_ne_emit_phase(E, ph, t.iv, ordered);
    lw_ne_loop_end(E, &t, c32(E, k->threads), "phase_done");
  }
  lw_ne_loop_end(E, &blk, end, "blocks_done");
  lw_ne_host_body_end(E, name, types, n, fty, fn, done);
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

int lw_ne_src_is_dense(const lw_ntt_plan *p) {
  int64_t want = INT64_C(1) << p->log_n;
  int dense = p->src_index_stride == 1;
  for (int a = p->src_nax - 1; a >= 0; a--) {
    if (p->src_ext[a] > 1 && p->src_stride[a] != want) dense = 0;
    want *= p->src_ext[a];
  }
  return dense;
}

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
  E.src_dense = lw_ne_src_is_dense(p);
  E.vecW = LLVMVectorType(E.W, (unsigned)E.V);
  lw_arith_init(&E.A, c, m, E.b, p->radix, target);
  if (target == LW_GPU) E.barrier_fn = intrinsic(&E, "llvm.nvvm.barrier0", &E.barrier_ty);
  if (pro) {
    int nargs = 5 + (pro->sub ? pro->sub->ninputs : 0);
    for (int t = 0; t < pro->nepi; t++) nargs += pro->epi[t].sub->ninputs + 1;
    nargs += pro->chain ? LW_NTT_CHAIN_ARGS : 0;
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
    if (!st && ((pro->chain && !lw_ntt_chain_fits(p, pro->chain, pro->chain_row0)) ||
                (pro->chained && p->nkernels != 2)))
      st = ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "internal: an NTT chain (ipchain) the emitter cannot build");
    if (!st && pro->head && (p->nkernels != 2 || pro->chained || pro->nepi || pro->chain))
      st = ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "internal: an NTT's first kernel alone (ipntt) the emitter cannot build");
    if (!st && pro->sub) st = lw_ne_build_prologue(&E);
    if (!st && pro->nepi) st = lw_ne_build_epilogue(&E);
    if (st) {
      LLVMDisposeBuilder(E.b);
      return st;
    }
  }
  fhjit_status st = FHJIT_OK;
  /* chained: kernel 0 is built into the step before (ntt_emit_chain.c) */
  /* head: kernel 1 is built into a later step (anchor_ipntt.c) */
  int end = p->nkernels - (pro && pro->head ? 1 : 0);
  for (int j = pro && pro->chained ? 1 : 0; j < end && !st; j++) {
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
      if (target == LW_GPU) lw_ne_build_cluster_gpu_kernel(&E, name);
      else lw_ne_build_cluster_host_fn(&E, name);
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
  p->sig.on = p->wait.on = 0; /* counts between kernels: dependent launches' */
}

void lw_ntt_launch_facts(const lw_ntt_plan *p, int j, lw_kernel *k) {
  const lw_ntt_kplan *kp = &p->k[j];
  k->flags = (j > 0 ? kp->pdl : kp->entry) ? LW_KERNEL_PDL : 0;
  if (kp->cluster) { /* dynamic shared memory: the block's slice */
    k->cluster[0] = 1u << kp->cluster;
    k->cluster[1] = k->cluster[2] = 1;
    k->shared_bytes = kp->smem_words * (p->radix == FHJIT_R32 ? 4u : 8u);
  }
  int sync = (p->sig.on && j == p->nkernels - 1) || (p->wait.on && j == 0);
  if (kp->pdl == 2 || sync) lw_kernel_arg(k, LW_ARG_OWN, 0);
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
  if (!st) st = nv_pipeline(&ctx->err, m, tm, prefix, lw_kernel_pipeline, kind, text, ptx);
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
  int nepi_args; /* epilogue arguments of the last kernel (ipchain's included) */
  int first;     /* the first kernel built and run: 1 when chained */
  int end;       /* one past the last: nkernels, 1 for a head (ipntt) */
  size_t chain_smem; /* ipchain: the chained kernel's shared words */
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
  if (pro && pro->chain) {
    h->nepi_args += LW_NTT_CHAIN_ARGS;
    h->chain_smem = pro->chain->k[0].smem_words;
  }
  h->first = pro && pro->chained;
  h->end = p->nkernels - (pro && pro->head ? 1 : 0);
  char prefix[40], who[64], names[2][96];
  plan_prefix(p, prefix, sizeof prefix);
  snprintf(who, sizeof who, "NTT %s (host)", prefix);
  const char *syms[2];
  SP_ASSERT(p->nkernels <= 2 && h->first < h->end); /* h->fn */
  for (int j = h->first; j < h->end; j++) {
    snprintf(names[j], sizeof names[j], "%s_k%d_host", prefix, j);
    syms[j - h->first] = names[j];
  }
  ntt_build b = {ctx, p, pro, prefix};
  void *addrs[2];
  const char *passes;
  fhjit_status st = lw_host_passes(ctx, &passes);
  if (!st)
    st = jit_compile(&ctx->err, prefix, passes, build_ntt, &b, who, syms, h->end - h->first,
                     addrs, &h->jit);
  if (st) {
    free(h);
    return st;
  }
  for (int j = h->first; j < h->end; j++) h->fn[j] = (jit_block_fn)(uintptr_t)addrs[j - h->first];
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
  /* chained: kernel 0 ran in the step before (ntt_emit_chain.c) */
  for (int j = h->first; j < h->end; j++) {
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
    if (j == p->nkernels - 1 && h->chain_smem * ws > shared) shared = h->chain_smem * ws;
    fhjit_status st = jit_run_blocks(&ctx->err, h->fn[j], slots, units, threads, shared, "NTT host run");
    if (st) return st;
  }
  return FHJIT_OK;
}
