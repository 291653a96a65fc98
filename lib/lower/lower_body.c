/* lower_body.c: the pointwise lowering's body: the group's first element
 * split into its batch coordinates, row and index, the
 * coefficient-domain automorphisms staged through shared memory, the
 * forward pass that evaluates every marked use in SSA order, and the
 * stores of the results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/autmap.h"
#include "lower/lower_emit.h"

/* Splits the group's first element into (batch coordinates, row, i). */
void lw_lo_decompose(lw *L, LLVMValueRef group) {
  const lw_plan *p = L->p;
  LLVMBuilderRef b = L->b;
  L->group = group;
  LLVMValueRef off = p->vec > 1 ? LLVMBuildNUWMul(b, group, cidx(L, p->vec), "offset") : group;
  int outer = -1; /* the outermost walk axis of extent > 1 */
  for (int a = 0; a < p->nbatch; a++)
    if (p->batch[a] > 1) {
      outer = a;
      break;
    }
  int only_row = outer < 0;
  L->i = LLVMBuildURem(b, off, cidx(L, p->n), "i");
  LLVMValueRef rest = LLVMBuildUDiv(b, off, cidx(L, p->n), "");
  if (p->rows == 1) L->row = cidx(L, 0);
  else if (only_row) L->row = rest;
  else {
    L->row = LLVMBuildURem(b, rest, cidx(L, p->rows), "row");
    rest = LLVMBuildUDiv(b, rest, cidx(L, p->rows), "");
  }
  for (int a = p->nbatch - 1; a >= 0; a--) {
    L->coord[a] = NULL;
    if (p->batch[a] == 1) continue;
    char name[16];
    snprintf(name, sizeof name, "b%d", a);
    if (a == outer) {
      L->coord[a] = rest;
      if (!LLVMIsAConstant(rest)) LLVMSetValueName2(rest, name, strlen(name));
    } else {
      L->coord[a] = LLVMBuildURem(b, rest, cidx(L, p->batch[a]), name);
      rest = LLVMBuildUDiv(b, rest, cidx(L, p->batch[a]), "");
    }
  }
  L->row64 = to64(L, L->row);
  for (int a = 0; a < p->nbatch; a++)
    L->coord64[a] = L->coord[a] ? to64(L, L->coord[a]) : ci64(L, 0);
  char sym[LW_NAME_MAX + 16];
  snprintf(sym, sizeof sym, "%s.cols", p->name);
  L->col64 = lw_column(b, L->m, L->target, p->basis, p->rows, L->row64, sym);
}

static void store_results(lw *L) {
  const fhjit_graph *g = L->g;
  const lw_plan *p = L->p;
  LLVMBuilderRef b = L->b;
  int V = p->vec;
  unsigned walign = (unsigned)(L->wbits == 32 ? 4 : 8);
  for (int32_t r = 0; r < g->nresults; r++) {
    const fhjit_type *t = &g->results[r].type;
    fhjit_value v = g->results[r].value;
    fhjit_layout dl;
    fhjit_dense_layout(t, &dl);
    /* A result broadcast along a walk axis is stored by coordinate 0 only. */
    LLVMValueRef cond = NULL;
    int shift = p->nbatch - t->nbatch;
    LLVMValueRef off = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, L->row64, ci64(L, p->n), ""), to64(L, L->i), "");
    int64_t roff = p->result_offset + (p->result_offsets ? p->result_offsets[r] : 0);
    if (roff && L->target == LW_GPU) off = LLVMBuildNUWAdd(b, off, ci64(L, roff), "");
    for (int a = 0; a < p->nbatch; a++) {
      if (!L->coord[a]) continue;
      int ra = a - shift;
      if (ra < 0 || t->batch[ra] == 1) {
        LLVMValueRef z = LLVMBuildICmp(b, LLVMIntEQ, L->coord[a], cidx(L, 0), "");
        cond = cond ? LLVMBuildAnd(b, cond, z, "") : z;
      } else {
        off = LLVMBuildNUWAdd(b, off, LLVMBuildNUWMul(b, L->coord64[a], ci64(L, dl.batch_stride[ra]), ""), "");
      }
    }
    LLVMBasicBlockRef next = NULL;
    if (cond) {
      LLVMBasicBlockRef store = LLVMAppendBasicBlockInContext(L->c, L->fn, "store");
      next = LLVMAppendBasicBlockInContext(L->c, L->fn, "next");
      LLVMBuildCondBr(b, cond, store, next);
      LLVMPositionBuilderAtEnd(b, store);
    }
    for (int c = 0; c < nc_of(&g->nodes[v]); c++) {
      LLVMValueRef *val = lw_lo_slot(L, 0, v, c);
      LLVMValueRef o = c ? LLVMBuildNUWAdd(b, off, ci64(L, c * dl.comp_stride), "") : off;
      LLVMValueRef ptr = LLVMBuildInBoundsGEP2(b, L->word, L->results[r], &o, 1, "");
      LLVMValueRef st;
      if (V > 1) {
        LLVMValueRef vec = LLVMGetUndef(L->vect);
        for (int l = 0; l < V; l++)
          vec = LLVMBuildInsertElement(b, vec, val[l], LLVMConstInt(L->i32, (uint64_t)l, 0), "");
        st = LLVMBuildStore(b, vec, ptr);
        LLVMSetAlignment(st, L->vec_align);
      } else {
        st = LLVMBuildStore(b, val[0], ptr);
        LLVMSetAlignment(st, walign);
      }
    }
    if (cond) {
      LLVMBuildBr(b, next);
      LLVMPositionBuilderAtEnd(b, next);
    }
  }
}

/* Coefficient-domain automorphisms through shared memory (the GPU kernel,
 * FHJIT_PW_PLAN A=1). Per-lane loads of x[o k^-1] put every lane of a warp
 * in its own 32-byte sector (sources of consecutive outputs are k^-1
 * apart). But sources j and j + 1 feed outputs o and o + delta, delta =
 * +-k mod N: a block's S = T V consecutive outputs [B0, B0 + S) read delta
 * runs of about S / delta consecutive sources. So the block first loads its
 * S words in source order (slot p = v T + tid, p -> (r, m) -> output offset
 * d = r + delta m, run r of length ceil((S - r) / delta): consecutive slots,
 * consecutive sources, a bijection of [0, S)), applies canon / neg, stores
 * word d of a shared array, and after a barrier each thread reads its V
 * words at i mod S in one vector load; the kernel's other accesses keep
 * their order. Applies when the grid is exact (every thread reaches the
 * barrier), S divides N (a block stays in one row), N is a power of two,
 * U = 1, the automorphism is read at the walk's own indices (the main
 * context) and its runs hold at least 4 words (delta <= S / 4); else the
 * per-lane loads. */

/* The coefficient automorphisms emit_stage stages, each component read
 * at offset 0 (L->stage[]): those whose runs are long enough (S / delta
 * >= 4), as many as fit 32 KB of shared memory. */
static void choose_stages(lw *L, int64_t S, int64_t N, unsigned wb) {
  const fhjit_graph *g = L->g;
  for (fhjit_value v = 0; v < g->nnodes; v++) {
    const ir_node *n = &g->nodes[v];
    if (n->op != IR_AUTOMORPHISM || n->type.domain != FHJIT_DOMAIN_COEF || n->type.n != N) continue;
    int64_t k = n->attr[0] % (2 * N), delta = k % N;
    if (delta > N / 2) delta = N - delta;
    if (delta < 1 || S / delta < 4) continue;
    for (int32_t u = L->first_use[v]; u >= 0; u = L->use[u].next) {
      if (L->use[u].x != 0) continue;
      for (int c = 0; c < 3; c++) {
        if (!(L->use[u].need & (1u << c)) || L->nstage >= LW_MAX_STAGE ||
            (int64_t)(L->nstage + 1) * S * wb > 32768)
          continue;
        L->stage[L->nstage].v = v;
        L->stage[L->nstage].c = c;
        L->nstage++;
      }
    }
  }
}

/* Each stage's array of S words: shared memory on the GPU; on the host,
 * which runs every thread's slots of the block for each group, an array
 * of its own: the GPU's arithmetic, word for word, without a barrier
 * (tests check it against the interpreter). */
static void alloc_stages(lw *L, LLVMTypeRef aty) {
  for (int s = 0; s < L->nstage; s++) {
    if (L->target == LW_GPU) {
      char sym[LW_NAME_MAX + 16];
      snprintf(sym, sizeof sym, "%s.aut%d", L->p->name, s);
      LLVMValueRef arr = LLVMAddGlobalInAddressSpace(L->m, aty, sym, 3);
      LLVMSetInitializer(arr, LLVMGetUndef(aty));
      LLVMSetLinkage(arr, LLVMInternalLinkage);
      LLVMSetAlignment(arr, 16);
      L->stage[s].arr = arr;
    } else {
      L->stage[s].arr = LLVMBuildAlloca(L->b, aty, "stage");
      LLVMSetAlignment(L->stage[s].arr, 16);
    }
  }
}

/* Stage s's word for slot pp of the block (its source at the output
 * offset *d the slot stores to): slot pp -> run r, step m -> output offset
 * d = r + m delta, its source j = (b0 + d) k^-1 mod 2N, canon, and neg
 * past N (lw_lo_emit_automorphism's). */
static LLVMValueRef stage_word(lw *L, int s, LLVMValueRef pp, LLVMValueRef b0, LLVMValueRef q,
                               LLVMValueRef *d) {
  LLVMBuilderRef b = L->b;
  const fhjit_graph *g = L->g;
  const ir_node *n = &g->nodes[L->stage[s].v];
  int64_t S = L->p->block * L->p->vec, N = L->p->n;
  int64_t k = n->attr[0] % (2 * N), delta = k % N;
  if (delta > N / 2) delta = N - delta;
  int64_t kinv = lw_aut_inverse_mod(k, 2 * N), Qd = S / delta, R = S % delta;
  fhjit_value src = n->args[0];
  int comp = nc_of(&g->nodes[src]) > 1 ? L->stage[s].c : 0;
  LLVMValueRef first = LLVMBuildICmp(b, LLVMIntULT, pp, ci64(L, R * (Qd + 1)), "");
  LLVMValueRef r1 = LLVMBuildUDiv(b, pp, ci64(L, Qd + 1), "");
  LLVMValueRef m1 = LLVMBuildURem(b, pp, ci64(L, Qd + 1), "");
  LLVMValueRef p2 = LLVMBuildSub(b, pp, ci64(L, R * (Qd + 1)), "");
  LLVMValueRef r2 = LLVMBuildAdd(b, LLVMBuildUDiv(b, p2, ci64(L, Qd), ""), ci64(L, R), "");
  LLVMValueRef m2 = LLVMBuildURem(b, p2, ci64(L, Qd), "");
  LLVMValueRef r = LLVMBuildSelect(b, first, r1, r2, "run");
  LLVMValueRef m = LLVMBuildSelect(b, first, m1, m2, "");
  *d = LLVMBuildNUWAdd(b, r, LLVMBuildNUWMul(b, m, ci64(L, delta), ""), "d");
  LLVMValueRef o = LLVMBuildNUWAdd(b, b0, *d, "o");
  LLVMValueRef j = LLVMBuildAnd(b, LLVMBuildMul(b, o, ci64(L, kinv), ""), ci64(L, 2 * N - 1), "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntUGE, j, ci64(L, N), "negate");
  lw_lanes ln = {.x = NULL};
  ln.idx[0] = LLVMBuildSelect(b, neg, LLVMBuildSub(b, j, ci64(L, N), ""), j, "src");
  for (int l = 1; l < L->p->vec; l++) ln.idx[l] = ln.idx[0];
  lw_addr a;
  lw_lo_resolve(L, src, comp, L->row64, &ln, &a);
  LLVMValueRef w = LLVMBuildLoad2(b, L->word, a.ptr[0], "staged");
  LLVMSetAlignment(w, (unsigned)(L->wbits == 32 ? 4 : 8));
  LLVMValueRef cc = lw_csub_select(b, w, q, "canon");
  LLVMValueRef flip = LLVMBuildAnd(b, neg, LLVMBuildICmp(b, LLVMIntNE, cc, cw(L, 0), ""), "");
  return LLVMBuildSelect(b, flip, LLVMBuildSub(b, q, cc, ""), cc, "");
}

static void emit_stage(lw *L) {
  const lw_plan *p = L->p;
  LLVMBuilderRef b = L->b;
  int V = p->vec, gpu = L->target == LW_GPU;
  int64_t T = p->block, S = T * V, N = p->n;
  unsigned wb = (unsigned)(L->wbits == 32 ? 4 : 8);
  if (!p->aut_stage || L->eval_comp >= 0 || p->per_thread != 1 || T < 1 || p->groups % T ||
      N % S || (N & (N - 1)))
    return;
  choose_stages(L, S, N, wb);
  if (!L->nstage) return;
  LLVMValueRef own = to64(L, LLVMBuildURem(b, L->group, cidx(L, T), "tid"));
  LLVMValueRef b0 =
      LLVMBuildSub(b, to64(L, L->ctx[0].idx[0]), LLVMBuildMul(b, own, ci64(L, V), ""), "b0");
  LLVMValueRef q = lw_lo_get_q(L);
  LLVMTypeRef aty = LLVMArrayType2(L->word, (uint64_t)S);
  alloc_stages(L, aty);
  /* the slots: the thread's own on the GPU, the block's on the host */
  LLVMValueRef tid = own;
  LLVMBasicBlockRef pre = NULL, body = NULL, after = NULL;
  if (!gpu) {
    pre = LLVMGetInsertBlock(b);
    body = LLVMAppendBasicBlockInContext(L->c, L->fn, "stage");
    after = LLVMAppendBasicBlockInContext(L->c, L->fn, "staged");
    LLVMBuildBr(b, body);
    LLVMPositionBuilderAtEnd(b, body);
    tid = LLVMBuildPhi(b, L->i64, "slot_tid");
    LLVMValueRef zero = ci64(L, 0);
    LLVMAddIncoming(tid, &zero, &pre, 1);
  }
  LLVMValueRef vals[LW_MAX_STAGE][LW_VMAX], dst[LW_MAX_STAGE][LW_VMAX];
  for (int s = 0; s < L->nstage; s++)
    for (int e = 0; e < V; e++)
      vals[s][e] = stage_word(L, s, LLVMBuildNUWAdd(b, tid, ci64(L, e * T), "slot"), b0, q,
                              &dst[s][e]);
  /* every load issued before the first store */
  for (int s = 0; s < L->nstage; s++)
    for (int e = 0; e < V; e++) {
      LLVMValueRef idx[2] = {ci64(L, 0), dst[s][e]};
      LLVMValueRef at = LLVMBuildInBoundsGEP2(b, aty, L->stage[s].arr, idx, 2, "");
      LLVMSetAlignment(LLVMBuildStore(b, vals[s][e], at), wb);
    }
  if (gpu) {
    unsigned id = LLVMLookupIntrinsicID("llvm.nvvm.barrier0", 18);
    LLVMBuildCall2(b, LLVMIntrinsicGetType(L->c, id, NULL, 0),
                   LLVMGetIntrinsicDeclaration(L->m, id, NULL, 0), NULL, 0, "");
    add_fn_attr(L, L->fn, "convergent");
  } else {
    LLVMValueRef next = LLVMBuildNUWAdd(b, tid, ci64(L, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    LLVMAddIncoming(tid, &next, &latch, 1);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, next, ci64(L, T), ""), body, after);
    LLVMPositionBuilderAtEnd(b, after);
  }
}

/* The forward pass emits in SSA order (operands, including those of other
 * contexts, have smaller ids). */
void lw_lo_emit_body(lw *L) {
  fhjit_graph *g = L->g;
  if ((L->st = lw_max_values(g, &L->max_values))) return;
  L->first_use = malloc(sizeof *L->first_use * (size_t)(g->nnodes ? g->nnodes : 1));
  if (!L->first_use) return (void)oom(L);
  for (fhjit_value v = 0; v < g->nnodes; v++) L->first_use[v] = -1;
  if (lw_lo_add_ctx(L, 1, L->p->n) != 0) return;
  lw_lo_mark_body(L);
  if (L->st) return;
  L->val = malloc(sizeof *L->val * (size_t)(L->nuse ? L->nuse : 1) * 3 * LW_VMAX);
  if (!L->val) return (void)oom(L);
  for (int x = 0; x < L->nctx; x++) lw_lo_index_ctx(L, &L->ctx[x]);
  emit_stage(L);
  for (fhjit_value v = 0; v < g->nnodes; v++)
    for (int32_t u = L->first_use[v]; u >= 0; u = L->use[u].next)
      for (int c = 0; c < 3; c++)
        if (L->use[u].need & (1u << c)) lw_lo_emit_value(L, L->use[u].x, v, c);
  if (L->st || L->eval_comp >= 0) return;
  store_results(L);
}
