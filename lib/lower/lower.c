/* lower.c: a bound graph -> one fused LLVM function, target-neutral. Each
 * thread (GPU) or loop iteration (host) handles one group of `vec`
 * consecutive elements of one row; every node needed by a result is
 * evaluated once per element, its components and lanes as separate SSA values
 * in registers, and each materialised component element is stored once.
 *
 * Coefficient indices: values are normally evaluated at the element's own
 * index i, but a compressed plaintext is read at i mod u or i / repeat (and a
 * strided_sparse implicit value at 0). Such operands, even computed ones, are
 * evaluated in an "index context" of their own: a node needed in several
 * contexts is evaluated once in each. Every context reads index
 * (i / a) mod b of the walk's element i, where b is the extent n of the
 * values evaluated in it (the main context is (1, n); a cyclic read of u
 * from (a, b) is (a, u), a contiguous one (a * b / u, u)); contexts are
 * interned by (a, b), so nested compressed reads reaching the same indices
 * by different paths share one context, and a node is evaluated at most
 * once per distinct index pattern: the work is linear in the (node,
 * context) pairs needed, which lw_max_values bounds (docs/limits.md). Each
 * context knows its per-lane indices and whether they are all equal
 * (uniform: one scalar load) or consecutive from a multiple of vec (contig:
 * one vector load where the layout allows).
 *
 * Bases and remapped loads (SPEC section 7). Row r of the walk computes
 * with parameter column plan->basis[r] (lw_column; the default basis needs
 * no code). rows, concat and automorphism are leaves: the lowering reads
 * their words from an input through an "address chain" (extract, rows and
 * concat of inputs) without evaluating the operand: rows moves the row,
 * concat selects the pointer (one load), automorphism reads the
 * coefficient index its permutation maps to (autmap.c): in the NTT domain
 * a thread's consecutive lanes read one aligned group, one vector load
 * permuted in registers; else a scalar load per lane, as the compressed
 * reads of other contexts. A computed operand must be materialised first
 * (lw_plan_graph, plan_graph.c, refuses it; anchor.c's planner).
 *
 * Files. This one builds the functions (the body, the GPU kernel around
 * it, the host loop and its packed entry), holds the entry points
 * (lw_build, lw_build_eval and its variants) and the symbol and column
 * helpers; the body's parts are the other files': the index contexts and
 * the marking of what each node is needed for (lower_ctx.c), the loads of
 * inputs (lower_load.c), the remapped loads and the automorphism
 * (lower_remap.c), the evaluation of one node (lower_eval.c), the body's
 * walk, its staged automorphism operands and its stores (lower_body.c),
 * the symbols and parameter columns every emitter uses (lower_sym.c);
 * what they share: lower_emit.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_emit.h"

/* ----------------------------------------------------------- functions */

/* Parameter types and attributes shared by the body, the kernel and the host
 * function: (params, pstride, inputs..., results...). */
static void arg_types(lw *L, LLVMTypeRef *types) {
  int32_t n = lw_num_args(L->g);
  for (int32_t j = 0; j < n; j++) types[j] = j == 1 ? L->i64 : L->ptr;
}

static void set_arg_attrs(lw *L, LLVMValueRef fn) {
  fhjit_graph *g = L->g;
  int32_t n = lw_num_args(g);
  for (int32_t j = 0; j < n; j++) {
    if (j == 1) continue;
    /* a dependent launch waits at its entry: no load may move above it */
    if (!(L->target == LW_GPU && L->p->pdl_entry)) add_param_attr(L, fn, (unsigned)j, "noalias");
    add_param_attr(L, fn, (unsigned)j, "nocapture");
    add_param_attr(L, fn, (unsigned)j, j < 2 + g->ninputs ? "readonly" : "writeonly");
  }
}

static void name_args(lw *L, LLVMValueRef fn) {
  fhjit_graph *g = L->g;
  LLVMSetValueName2(LLVMGetParam(fn, 0), "params", 6);
  LLVMSetValueName2(LLVMGetParam(fn, 1), "pstride", 7);
  char name[96];
  for (int32_t j = 0; j < g->ninputs; j++) {
    snprintf(name, sizeof name, "in.%s", g->nodes[g->inputs[j]].name);
    LLVMSetValueName2(LLVMGetParam(fn, (unsigned)(2 + j)), name, strlen(name));
  }
  for (int32_t r = 0; r < g->nresults; r++) {
    snprintf(name, sizeof name, "out.%s", g->nodes[g->results[r].value].name);
    LLVMSetValueName2(LLVMGetParam(fn, (unsigned)(2 + g->ninputs + r)), name, strlen(name));
  }
}

/* 1 (the internal error recorded) when module m already has the symbol
 * "<plan name><suffix>": see lw_symbol_taken. */
static int name_taken(lw *L, const char *suffix) {
  char name[LW_NAME_MAX + 40]; /* suffixes are < 40 bytes (build_body) */
  snprintf(name, sizeof name, "%s%s", L->p->name, suffix);
  if (!lw_symbol_taken(L->m, name)) return 0;
  if (!L->st) L->st = lw_duplicate_symbol(L->g->ctx, name);
  return 1;
}

static LLVMValueRef build_body(lw *L) {
  fhjit_graph *g = L->g;
  int32_t n = lw_num_args(g);
  LLVMTypeRef *types = malloc(sizeof *types * (size_t)(n + 1 + LW_MAX_REG * LW_VMAX)); /* + group, + registers */
  L->inputs = malloc(sizeof *L->inputs * (size_t)(g->ninputs + 1));
  L->results = malloc(sizeof *L->results * (size_t)(g->nresults + 1));
  if (!types || !L->inputs || !L->results) {
    free(types);
    oom(L);
    return NULL;
  }
  arg_types(L, types);
  types[n] = L->idxt;
  int V = L->p->vec, reg = L->eval_comp >= 0 ? L->nreg * V : 0;
  for (int j = 0; j < reg; j++) types[n + 1 + j] = L->word;
  char suffix[40]; /* ".body", or [".r" and a result] ".eval" and a component (< 4) */
  if (L->eval_comp >= 0 && L->eval_result > 0)
    snprintf(suffix, sizeof suffix, ".r%d.eval%d", (int)L->eval_result, L->eval_comp);
  else if (L->eval_comp >= 0) snprintf(suffix, sizeof suffix, ".eval%d", L->eval_comp);
  else snprintf(suffix, sizeof suffix, ".body");
  if (name_taken(L, suffix)) {
    free(types);
    return NULL;
  }
  char fname[LW_NAME_MAX + 40];
  snprintf(fname, sizeof fname, "%s%s", L->p->name, suffix);
  /* an evaluator returns its word, or with vec > 1 the group's lanes */
  LLVMTypeRef ret = L->eval_comp < 0 ? L->voidt : V > 1 ? L->vect : L->word;
  LLVMValueRef fn = LLVMAddFunction(L->m, fname, LLVMFunctionType(ret, types, (unsigned)(n + 1 + reg), 0));
  free(types);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  add_fn_attr(L, fn, "alwaysinline");
  add_fn_attr(L, fn, "nounwind");
  set_arg_attrs(L, fn);
  name_args(L, fn);
  LLVMSetValueName2(LLVMGetParam(fn, (unsigned)n), "group", 5);
  for (int j = 0; j < reg; j++) {
    LLVMValueRef a = LLVMGetParam(fn, (unsigned)(n + 1 + j));
    L->reg_value[j / V][j % V] = a;
    LLVMSetValueName2(a, "reg", 3);
  }
  L->fn = fn;
  L->params = LLVMGetParam(fn, 0);
  L->pstride = LLVMGetParam(fn, 1);
  for (int32_t j = 0; j < g->ninputs; j++) L->inputs[j] = LLVMGetParam(fn, (unsigned)(2 + j));
  for (int32_t r = 0; r < g->nresults; r++)
    L->results[r] = LLVMGetParam(fn, (unsigned)(2 + g->ninputs + r));
  LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->c, fn, "entry"));
  lw_lo_decompose(L, LLVMGetParam(fn, (unsigned)n));
  lw_lo_emit_body(L);
  if (L->eval_comp < 0) {
    LLVMBuildRetVoid(L->b);
  } else {
    fhjit_value v = g->results[L->eval_result].value;
    int c = nc_of(&g->nodes[v]) > 1 ? L->eval_comp : 0;
    LLVMValueRef r = LLVMGetUndef(ret);
    if (!L->st && V == 1) r = lw_lo_slot(L, 0, v, c)[0];
    for (int l = 0; !L->st && V > 1 && l < V; l++)
      r = LLVMBuildInsertElement(L->b, r, lw_lo_slot(L, 0, v, c)[l],
                                 LLVMConstInt(L->i32, (uint64_t)l, 0), "");
    LLVMBuildRet(L->b, r);
  }
  return fn;
}

static LLVMValueRef sreg(lw *L, const char *name) {
  LLVMValueRef fn = LLVMGetNamedFunction(L->m, name);
  LLVMTypeRef fty = LLVMFunctionType(L->i32, NULL, 0, 0);
  if (!fn) {
    fn = LLVMAddFunction(L->m, name, fty);
    add_fn_attr(L, fn, "nounwind");
  }
  return LLVMBuildCall2(L->b, fty, fn, NULL, 0, "");
}

/* Forwards the wrapper's first lw_num_args arguments and `group` to the body. */
static void call_body(lw *L, LLVMValueRef body, LLVMValueRef *args, LLVMValueRef group) {
  int32_t n = lw_num_args(L->g);
  args[n] = group;
  LLVMBuildCall2(L->b, LLVMGlobalGetValueType(body), body, args, (unsigned)n + 1, "");
}

static void build_kernel(lw *L, LLVMValueRef body) {
  fhjit_graph *g = L->g;
  int32_t n = lw_num_args(g);
  LLVMTypeRef *types = malloc(sizeof *types * (size_t)n);
  LLVMValueRef *args = malloc(sizeof *args * (size_t)(n + 1));
  if (!types || !args) {
    free(types);
    free(args);
    oom(L);
    return;
  }
  if (name_taken(L, "")) {
    free(types);
    free(args);
    return;
  }
  arg_types(L, types);
  LLVMValueRef fn = LLVMAddFunction(L->m, L->p->name, LLVMFunctionType(L->voidt, types, (unsigned)n, 0));
  free(types);
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  add_fn_attr(L, fn, "nounwind");
  set_arg_attrs(L, fn);
  name_args(L, fn);
  for (int32_t j = 0; j < n; j++) args[j] = LLVMGetParam(fn, (unsigned)j);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(L->c, fn, "entry");
  LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(L->c, fn, "work");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->c, fn, "done");
  LLVMPositionBuilderAtEnd(L->b, entry);
  if (L->p->pdl_entry) lw_dependent_entry(L->c, L->b);
  LLVMValueRef ctaid = sreg(L, "llvm.nvvm.read.ptx.sreg.ctaid.x");
  LLVMValueRef ntid = sreg(L, "llvm.nvvm.read.ptx.sreg.ntid.x");
  LLVMValueRef tid = sreg(L, "llvm.nvvm.read.ptx.sreg.tid.x");
  if (L->p->idx_bits == 64) {
    ctaid = LLVMBuildZExt(L->b, ctaid, L->i64, "");
    ntid = LLVMBuildZExt(L->b, ntid, L->i64, "");
    tid = LLVMBuildZExt(L->b, tid, L->i64, "");
  }
  /* groups < 2^31 in the 32-bit case, so grid*block*per_thread < 2^32: no
   * wrap-around */
  int U = L->p->per_thread;
  if (U == 1) {
    LLVMValueRef group = LLVMBuildNUWAdd(L->b, LLVMBuildNUWMul(L->b, ctaid, ntid, ""), tid, "group");
    LLVMValueRef inside = LLVMBuildICmp(L->b, LLVMIntULT, group, cidx(L, L->p->groups), "");
    LLVMBuildCondBr(L->b, inside, work, done);
    LLVMPositionBuilderAtEnd(L->b, work);
    call_body(L, body, args, group);
    LLVMBuildBr(L->b, done);
  } else {
    /* Thread t of block b handles groups (b * U + u) * T + t: each of the U
     * accesses of a warp stays coalesced. When the grid covers the groups
     * exactly, the U bodies are one straight line (their loads can all be
     * in flight before the first store); else each is checked. */
    LLVMValueRef first = LLVMBuildNUWAdd(
        L->b, LLVMBuildNUWMul(L->b, LLVMBuildNUWMul(L->b, ctaid, ntid, ""), cidx(L, U), ""), tid,
        "group");
    int exact = L->p->groups % ((int64_t)L->p->block * U) == 0;
    LLVMBuildBr(L->b, work);
    LLVMPositionBuilderAtEnd(L->b, work);
    for (int u = 0; u < U; u++) {
      LLVMValueRef group = u ? LLVMBuildNUWAdd(L->b, first, LLVMBuildNUWMul(L->b, ntid, cidx(L, u), ""), "")
                             : first;
      if (exact) {
        call_body(L, body, args, group);
        continue;
      }
      LLVMBasicBlockRef one = LLVMAppendBasicBlockInContext(L->c, fn, "one");
      LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(L->c, fn, "next");
      LLVMValueRef inside = LLVMBuildICmp(L->b, LLVMIntULT, group, cidx(L, L->p->groups), "");
      LLVMBuildCondBr(L->b, inside, one, done);
      LLVMPositionBuilderAtEnd(L->b, one);
      call_body(L, body, args, group);
      LLVMBuildBr(L->b, next);
      LLVMPositionBuilderAtEnd(L->b, next);
    }
    LLVMBuildBr(L->b, done);
  }
  LLVMPositionBuilderAtEnd(L->b, done);
  LLVMBuildRetVoid(L->b);
  free(args);
  /* Launch bounds, before any pass runs (added later they are dropped). */
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(L->c, "maxntidx", 8),
                           LLVMValueAsMetadata(LLVMConstInt(L->i32, (uint64_t)L->p->block, 0))};
  LLVMAddNamedMetadataOperand(L->m, "nvvm.annotations",
                              LLVMMetadataAsValue(L->c, LLVMMDNodeInContext2(L->c, md, 3)));
}

static void build_host(lw *L, LLVMValueRef body) {
  fhjit_graph *g = L->g;
  int32_t n = lw_num_args(g);
  LLVMTypeRef *types = malloc(sizeof *types * (size_t)(n + 2));
  LLVMValueRef *args = malloc(sizeof *args * (size_t)(n + 2));
  if (!types || !args) {
    free(types);
    free(args);
    oom(L);
    return;
  }
  if (name_taken(L, "_host") || name_taken(L, "_host_packed")) {
    free(types);
    free(args);
    return;
  }
  arg_types(L, types);
  types[n] = types[n + 1] = L->i64;
  char fname[LW_NAME_MAX + 16]; /* the plan's name and "_host_packed" */
  snprintf(fname, sizeof fname, "%s_host", L->p->name);
  LLVMTypeRef fty = LLVMFunctionType(L->voidt, types, (unsigned)n + 2, 0);
  LLVMValueRef fn = LLVMAddFunction(L->m, fname, fty);
  add_fn_attr(L, fn, "nounwind");
  set_arg_attrs(L, fn);
  name_args(L, fn);
  LLVMValueRef begin = LLVMGetParam(fn, (unsigned)n), end = LLVMGetParam(fn, (unsigned)n + 1);
  LLVMSetValueName2(begin, "begin", 5);
  LLVMSetValueName2(end, "end", 3);
  for (int32_t j = 0; j < n; j++) args[j] = LLVMGetParam(fn, (unsigned)j);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(L->c, fn, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(L->c, fn, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->c, fn, "done");
  LLVMPositionBuilderAtEnd(L->b, entry);
  LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, begin, end, ""), loop, done);
  LLVMPositionBuilderAtEnd(L->b, loop);
  LLVMValueRef phi = LLVMBuildPhi(L->b, L->i64, "g");
  LLVMValueRef group = L->p->idx_bits == 64 ? phi : LLVMBuildTrunc(L->b, phi, L->idxt, "");
  call_body(L, body, args, group);
  LLVMValueRef nextg = LLVMBuildNSWAdd(L->b, phi, ci64(L, 1), "");
  LLVMValueRef in_vals[2] = {begin, nextg};
  LLVMBasicBlockRef in_bbs[2] = {entry, loop};
  LLVMAddIncoming(phi, in_vals, in_bbs, 2);
  LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, nextg, end, ""), loop, done);
  LLVMPositionBuilderAtEnd(L->b, done);
  LLVMBuildRetVoid(L->b);

  /* The packed entry: slot j holds argument j (pointer or i64). */
  snprintf(fname, sizeof fname, "%s_host_packed", L->p->name);
  LLVMTypeRef ptypes[3] = {L->ptr, L->i64, L->i64};
  LLVMValueRef pk = LLVMAddFunction(L->m, fname, LLVMFunctionType(L->voidt, ptypes, 3, 0));
  add_fn_attr(L, pk, "nounwind");
  LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->c, pk, "entry"));
  LLVMValueRef slots = LLVMGetParam(pk, 0);
  for (int32_t j = 0; j < n; j++) {
    LLVMValueRef idx = ci64(L, j);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(L->b, L->i64, slots, &idx, 1, "");
    args[j] = LLVMBuildLoad2(L->b, types[j], p, "");
    LLVMSetAlignment(args[j], 8);
  }
  args[n] = LLVMGetParam(pk, 1);
  args[n + 1] = LLVMGetParam(pk, 2);
  LLVMBuildCall2(L->b, fty, fn, args, (unsigned)n + 2, "");
  LLVMBuildRetVoid(L->b);
  free(types);
  free(args);
}

static void init_lw(lw *Lp, fhjit_graph *g, const lw_plan *plan, lw_target target,
                    LLVMContextRef c, LLVMModuleRef m) {
  lw L = {.g = g, .p = plan, .target = target, .c = c, .m = m, .eval_comp = -1};
  L.b = LLVMCreateBuilderInContext(c);
  L.wbits = g->radix == FHJIT_R32 ? 32 : 62;
  L.word = g->radix == FHJIT_R32 ? LLVMInt32TypeInContext(c) : LLVMInt64TypeInContext(c);
  L.dword = g->radix == FHJIT_R32 ? LLVMInt64TypeInContext(c) : LLVMIntTypeInContext(c, 128);
  L.i32 = LLVMInt32TypeInContext(c);
  L.i64 = LLVMInt64TypeInContext(c);
  L.idxt = plan->idx_bits == 64 ? L.i64 : L.i32;
  L.voidt = LLVMVoidTypeInContext(c);
  L.ptr = LLVMPointerTypeInContext(c, target == LW_GPU ? 1 : 0); /* global memory on the GPU */
  L.vect = LLVMVectorType(L.word, (unsigned)(plan->vec > 1 ? plan->vec : 2));
  lw_arith_init(&L.A, c, m, L.b, g->radix, target);
  /* The GPU ABI requires 16-byte aligned bases; host buffers need only be
   * word-aligned, and unaligned vector accesses cost nothing there. */
  L.vec_align = target == LW_GPU ? (unsigned)(plan->vec * (L.wbits == 32 ? 4 : 8))
                                 : (unsigned)(L.wbits == 32 ? 4 : 8);
  *Lp = L;
}

static void fini_lw(lw *L) {
  free(L->ctx);
  lw_imap_free(&L->ctx_map);
  free(L->use);
  free(L->first_use);
  lw_imap_free(&L->use_map);
  free(L->val);
  free(L->inputs);
  free(L->results);
  LLVMDisposeBuilder(L->b);
}

fhjit_status lw_build_eval(fhjit_graph *g, const lw_plan *plan, lw_target target,
                           LLVMContextRef c, LLVMModuleRef m, int64_t *values) {
  return lw_build_eval_reg(g, plan, target, c, m, -1, values);
}

fhjit_status lw_build_eval_reg(fhjit_graph *g, const lw_plan *plan, lw_target target,
                               LLVMContextRef c, LLVMModuleRef m, int32_t reg_input,
                               int64_t *values) {
  return lw_build_eval_regs(g, plan, target, c, m, &reg_input, reg_input >= 0, values);
}

fhjit_status lw_build_eval_regs(fhjit_graph *g, const lw_plan *plan, lw_target target,
                                LLVMContextRef c, LLVMModuleRef m, const int32_t *reg_input,
                                int nreg, int64_t *values) {
  return lw_build_eval_result(g, plan, target, c, m, 0, reg_input, nreg, values);
}

fhjit_status lw_build_eval_result(fhjit_graph *g, const lw_plan *plan, lw_target target,
                                  LLVMContextRef c, LLVMModuleRef m, int32_t result,
                                  const int32_t *reg_input, int nreg, int64_t *values) {
  *values = 0;
  if (nreg < 0 || nreg > LW_MAX_REG)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "internal: lw_build_eval_regs: %d registers", nreg);
  if ((plan->vec != 1 && plan->vec != 2 && plan->vec != 4) || plan->vec > LW_VMAX || result < 0 ||
      g->nresults <= result)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "internal: lw_build_eval needs vec 1, 2 or 4 and a result");
  fhjit_value v = g->results[result].value;
  for (int comp = 0; comp < nc_of(&g->nodes[v]); comp++) {
    lw L;
    init_lw(&L, g, plan, target, c, m);
    L.eval_comp = comp;
    L.eval_result = result;
    L.nreg = nreg;
    for (int j = 0; j < nreg; j++) L.reg_input[j] = reg_input[j];
    build_body(&L);
    fhjit_status st = L.st;
    if (L.nvalues > *values) *values = L.nvalues;
    fini_lw(&L);
    if (st) return st;
  }
  return FHJIT_OK;
}

fhjit_status lw_build(fhjit_graph *g, const lw_plan *plan, lw_target target, LLVMContextRef c,
                      LLVMModuleRef *out) {
  *out = NULL;
  lw L;
  init_lw(&L, g, plan, target, c, LLVMModuleCreateWithNameInContext(plan->name, c));
  if (g->nresults > 0) {
    LLVMValueRef body = build_body(&L);
    if (!L.st && body) {
      if (target == LW_GPU) build_kernel(&L, body);
      else build_host(&L, body);
    }
  }
  fini_lw(&L);
  if (L.st) {
    LLVMDisposeModule(L.m);
    return L.st;
  }
  *out = L.m;
  return FHJIT_OK;
}
