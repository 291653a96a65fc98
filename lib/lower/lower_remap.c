/* lower_remap.c: the pointwise lowering's remapped loads (SPEC section 7;
 * lower.c's file comment, "Bases and remapped loads"): the address of a
 * word through an address chain (extract, rows and concat of inputs),
 * memoized per resolve, the loads at such an address, and the
 * automorphism, read at the coefficient index its permutation maps to
 * (the NTT domain's lane groups one permuted vector load) or from the
 * words lower_body.c staged in shared memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/autmap.h"
#include "lower/lower_emit.h"

/* One top-level resolve: the walk row `base` and lanes `ln`, with the
 * addresses found so far by (node, component, row offset) and the rows
 * base + offset built so far. An address chain is a DAG (a concat of two
 * rows views of one value, and that again): walked as a tree it cost
 * 2^depth calls and as many instructions (a 62-op graph of 20 such levels
 * took 75 s to compile); memoized it is linear in the distinct (node,
 * offset) pairs, and a row offset stays within the value's rows. */
typedef struct resolve_memo {
  LLVMValueRef base;
  const lw_lanes *ln;
  lw_imap addr_of, row_of; /* (v * 4 + c, offset) -> addr[]; (offset, 0) -> rows[] */
  lw_addr *addr;
  LLVMValueRef *rows;
  int32_t naddr, addr_cap, nrows, rows_cap;
} resolve_memo;

static void resolve_at(lw *L, resolve_memo *M, fhjit_value v, int c, int64_t off, lw_addr *a);

/* base + off (i64), one value per offset: rows views add their start,
 * concat's second part subtracts the first's rows (the same flags as one
 * such step alone) */
static LLVMValueRef memo_row(lw *L, resolve_memo *M, int64_t off) {
  if (off == 0) return M->base;
  int32_t k = lw_imap_get(&M->row_of, (uint64_t)off, 0);
  if (k >= 0) return M->rows[k];
  LLVMValueRef r = off > 0 ? LLVMBuildNUWAdd(L->b, M->base, ci64(L, off), "")
                           : LLVMBuildSub(L->b, M->base, ci64(L, -off), "");
  if (M->nrows == M->rows_cap) {
    int32_t cap = M->rows_cap ? 2 * M->rows_cap : 16;
    LLVMValueRef *grown = realloc(M->rows, sizeof *grown * (size_t)cap);
    if (!grown) return r; /* not remembered: still correct */
    M->rows = grown;
    M->rows_cap = cap;
  }
  if (lw_imap_put(&M->row_of, (uint64_t)off, 0, M->nrows) == 0) M->rows[M->nrows++] = r;
  return r;
}

/* The address of component c of address-chain node v (addressable) at
 * walk row base + off and the memo's lanes. */
static void resolve_node(lw *L, resolve_memo *M, fhjit_value v, int c, int64_t off,
                         lw_addr *a) {
  const fhjit_graph *g = L->g;
  LLVMBuilderRef b = L->b;
  int V = L->p->vec;
  const ir_node *n = &g->nodes[v];
  const lw_lanes *ln = M->ln;
  memset(a, 0, sizeof *a);
  switch (n->op) {
  case IR_INPUT: {
    if (lw_lo_reg_of(L, n->input_index) && !L->st)
      L->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "internal: graph @%s: a register input read through a remapped load",
                       g->name);
    const fhjit_layout *l = &n->layout;
    int64_t konst = l->offset + (n->type.comps > 1 ? c * l->comp_stride : 0);
    int aligned;
    LLVMValueRef var = lw_lo_view_offset(L, n, memo_row(L, M, off), 1, &aligned);
    LLVMValueRef fixed = ci64(L, konst);
    if (var) fixed = konst ? LLVMBuildNUWAdd(b, var, fixed, "") : var;
    int64_t stride = n->type.n > 1 ? l->index_stride : 0;
    LLVMValueRef base = L->inputs[n->input_index];
    const ictx *x = ln->x;
    if (stride == 0 || (x && x->uniform)) {
      LLVMValueRef off = fixed;
      if (stride) off = LLVMBuildNUWAdd(b, off, mul_by(L, to64(L, x->idx[0]), stride), "");
      a->ptr[0] = LLVMBuildInBoundsGEP2(b, L->word, base, &off, 1, "");
      for (int k = 1; k < V; k++) a->ptr[k] = a->ptr[0];
      a->uniform = 1;
      return;
    }
    for (int k = 0; k < V; k++) {
      LLVMValueRef idx = x ? to64(L, x->idx[k]) : ln->idx[k];
      if (k > 0 && !x && ln->idx[k] == ln->idx[0]) {
        a->ptr[k] = a->ptr[0];
        continue;
      }
      LLVMValueRef off = LLVMBuildNUWAdd(b, fixed, mul_by(L, idx, stride), "");
      a->ptr[k] = LLVMBuildInBoundsGEP2(b, L->word, base, &off, 1, "");
    }
    if (V > 1 && x && x->contig && stride == 1 && aligned && konst % V == 0) a->vptr = a->ptr[0];
    return;
  }
  case IR_EXTRACT: {
    fhjit_value s = n->args[0];
    resolve_at(L, M, s, nc_of(&g->nodes[s]) > 1 ? (int)n->attr[0] : 0, off, a);
    return;
  }
  case IR_ROWS: {
    fhjit_value s = n->args[0];
    resolve_at(L, M, s, nc_of(&g->nodes[s]) > 1 ? c : 0, off + n->attr[0], a);
    return;
  }
  case IR_CONCAT: {
    /* row < rows(a): a's row, else b's row - rows(a); one load of the
     * selected pointer (the other side's address is never dereferenced) */
    fhjit_value s0 = n->args[0], s1 = n->args[1];
    int64_t ra = g->nodes[s0].type.rows;
    lw_addr a0, a1;
    resolve_at(L, M, s0, nc_of(&g->nodes[s0]) > 1 ? c : 0, off, &a0);
    resolve_at(L, M, s1, nc_of(&g->nodes[s1]) > 1 ? c : 0, off - ra, &a1);
    LLVMValueRef first = LLVMBuildICmp(b, LLVMIntULT, memo_row(L, M, off), ci64(L, ra), "first");
    a->uniform = a0.uniform && a1.uniform;
    for (int k = 0; k < V; k++)
      a->ptr[k] = (k > 0 && a->uniform) ? a->ptr[0]
                                        : LLVMBuildSelect(b, first, a0.ptr[k], a1.ptr[k], "");
    if (a0.vptr && a1.vptr) a->vptr = a->ptr[0];
    return;
  }
  default:
    if (!L->st)
      L->st = ir_error_at(L->g, n->loc, FHJIT_ERR_UNSUPPORTED,
                          "internal: %%%s read as an address chain", n->name);
    for (int k = 0; k < V; k++) a->ptr[k] = LLVMGetUndef(L->ptr);
    a->uniform = 1;
  }
}

static void resolve_at(lw *L, resolve_memo *M, fhjit_value v, int c, int64_t off, lw_addr *a) {
  uint64_t key = (uint64_t)v * 4 + (uint64_t)c;
  int32_t k = lw_imap_get(&M->addr_of, key, (uint64_t)off);
  if (k >= 0) {
    *a = M->addr[k];
    return;
  }
  resolve_node(L, M, v, c, off, a);
  if (M->naddr == M->addr_cap) {
    int32_t cap = M->addr_cap ? 2 * M->addr_cap : 16;
    lw_addr *grown = realloc(M->addr, sizeof *grown * (size_t)cap);
    if (!grown) return; /* not remembered: still correct */
    M->addr = grown;
    M->addr_cap = cap;
  }
  if (lw_imap_put(&M->addr_of, key, (uint64_t)off, M->naddr) == 0) M->addr[M->naddr++] = *a;
}

/* The address of component c of address-chain node v (addressable) at
 * walk row `row` (i64) and lanes `ln`. */
void lw_lo_resolve(lw *L, fhjit_value v, int c, LLVMValueRef row, const lw_lanes *ln,
                   lw_addr *a) {
  resolve_memo M = {.base = row, .ln = ln};
  resolve_at(L, &M, v, c, 0, a);
  lw_imap_free(&M.addr_of);
  lw_imap_free(&M.row_of);
  free(M.addr);
  free(M.rows);
}

/* The lanes' words at address a. */
void lw_lo_load_addr(lw *L, const lw_addr *a, const char *name, LLVMValueRef *out) {
  LLVMBuilderRef b = L->b;
  int V = L->p->vec;
  unsigned walign = (unsigned)(L->wbits == 32 ? 4 : 8);
  if (a->vptr && !a->uniform) {
    lw_lo_split_vector(L, lw_lo_vector_load(L, a->vptr), name, out);
    return;
  }
  for (int l = 0; l < V; l++) {
    if (l > 0 && a->ptr[l] == a->ptr[0]) {
      out[l] = out[0];
      continue;
    }
    char lname[96];
    snprintf(lname, sizeof lname, l ? "%s.l%d" : "%s", name, l);
    out[l] = LLVMBuildLoad2(b, L->word, a->ptr[l], lname);
    LLVMSetAlignment(out[l], walign);
  }
}

/* The NTT-domain automorphism at V = 2^v consecutive lanes o0 + l, o0 a
 * multiple of V dividing N: br(o0 + l) = br(o0) + br_v(l) N / V, so the
 * sources' unreversed indices s_l = s_0 + k br_v(l) N / V mod N differ in
 * their top v bits only, and the sources are one aligned group of V words
 * read as one vector (the lane-by-lane form took V scalar loads and V
 * index computations: an r32 inverse NTT 7% slower with an automorphism
 * in its prologue). Lane l takes word br_v((t + k br_v(l)) mod V) of the
 * group, t = the top v bits of s_0 (lw_aut_ntt_permute). 0 when the lanes
 * are not such a group (the caller reads lane by lane). */
static int aut_ntt_group(lw *L, const ictx *cx, int64_t N, int64_t k, ictx *group,
                         LLVMValueRef *t) {
  LLVMBuilderRef b = L->b;
  int V = L->p->vec, v = 0, bits = 0;
  while ((1 << v) < V) v++;
  while ((INT64_C(1) << bits) < N) bits++;
  if (V < 2 || !cx->contig || cx->uniform || N % V || bits < v) return 0;
  LLVMValueRef s;
  LLVMValueRef src = lw_aut_ntt_source(L->m, b, to64(L, cx->idx[0]), N, k, &s);
  LLVMTypeRef st = LLVMTypeOf(s);
  *t = LLVMBuildLShr(b, s, LLVMConstInt(st, (uint64_t)(bits - v), 0), "aut.t");
  LLVMValueRef base = LLVMBuildAnd(b, src, ci64(L, ~(int64_t)(V - 1)), "aut.group");
  if (L->p->idx_bits != 64) base = LLVMBuildTrunc(b, base, L->idxt, "");
  memset(group, 0, sizeof *group);
  group->a = 1, group->b = N, group->contig = 1;
  for (int l = 0; l < V; l++) group->idx[l] = l ? LLVMBuildNUWAdd(b, base, cidx(L, l), "") : base;
  return 1;
}

/* automorphism(x, k) at the lanes of context x (SPEC section 7), its
 * operand read lane by lane at the index the permutation maps to:
 * coefficient domain, out[o] = canon(x[j]) for j = o k^-1 mod 2N < N, else
 * neg(x[j - N]); NTT domain, out[j] = x[br((k (2 br(j) + 1) mod 2N - 1) / 2)]. */
void lw_lo_emit_automorphism(lw *L, int x, const ir_node *n, int c, const char *name,
                             LLVMValueRef *out) {
  const fhjit_graph *g = L->g;
  LLVMBuilderRef b = L->b;
  int V = L->p->vec;
  const ictx *cx = &L->ctx[x];
  int64_t N = n->type.n, k = n->attr[0];
  int coef = n->type.domain == FHJIT_DOMAIN_COEF;
  for (int s = 0; s < L->nstage && x == 0 && coef; s++) {
    if (L->stage[s].v != (fhjit_value)(n - g->nodes) || L->stage[s].c != c) continue;
    /* the block's words, in output order: this thread's V at i mod S */
    LLVMValueRef at = LLVMBuildURem(b, to64(L, cx->idx[0]), ci64(L, (int64_t)L->p->block * V), "");
    LLVMValueRef idx[2] = {ci64(L, 0), at};
    LLVMTypeRef aty = LLVMArrayType2(L->word, (uint64_t)((int64_t)L->p->block * V));
    LLVMValueRef ptr = LLVMBuildInBoundsGEP2(b, aty, L->stage[s].arr, idx, 2, "");
    if (V > 1) {
      LLVMValueRef w = LLVMBuildLoad2(b, L->vect, ptr, "");
      LLVMSetAlignment(w, (unsigned)(V * (L->wbits == 32 ? 4 : 8)));
      for (int l = 0; l < V; l++)
        out[l] = LLVMBuildExtractElement(b, w, LLVMConstInt(L->i32, (uint64_t)l, 0), name);
    } else {
      out[0] = LLVMBuildLoad2(b, L->word, ptr, name);
      LLVMSetAlignment(out[0], (unsigned)(L->wbits == 32 ? 4 : 8));
    }
    return;
  }
  ictx group;
  LLVMValueRef t = NULL;
  lw_lanes ln = {.x = NULL};
  LLVMValueRef neg[LW_VMAX] = {0};
  if (!coef && aut_ntt_group(L, cx, N, k, &group, &t)) ln.x = &group;
  for (int l = 0; l < V && !ln.x; l++) {
    if (l > 0 && cx->idx[l] == cx->idx[0]) {
      ln.idx[l] = ln.idx[0], neg[l] = neg[0];
      continue;
    }
    if (coef)
      ln.idx[l] = lw_aut_coef_source(b, to64(L, cx->idx[l]), N, k, &neg[l]);
    else
      ln.idx[l] = lw_aut_ntt_source(L->m, b, to64(L, cx->idx[l]), N, k, NULL);
  }
  fhjit_value s = n->args[0];
  lw_addr a;
  lw_lo_resolve(L, s, nc_of(&g->nodes[s]) > 1 ? c : 0, L->row64, &ln, &a);
  LLVMValueRef w[LW_VMAX];
  lw_lo_load_addr(L, &a, name, w);
  if (!coef) {
    if (t) lw_aut_ntt_permute(b, V, w, t, k, out);
    else memcpy(out, w, sizeof *out * (size_t)V);
    return;
  }
  /* canon(a) = a mod q (a < 2q: one subtraction); neg as SPEC section 3 */
  LLVMValueRef q = lw_lo_get_q(L);
  for (int l = 0; l < V; l++) {
    if (l > 0 && w[l] == w[0] && neg[l] == neg[0]) {
      out[l] = out[0];
      continue;
    }
    LLVMValueRef cc = lw_csub_select(b, w[l], q, "canon");
    LLVMValueRef flip = LLVMBuildAnd(b, neg[l], LLVMBuildICmp(b, LLVMIntNE, cc, cw(L, 0), ""), "");
    out[l] = LLVMBuildSelect(b, flip, LLVMBuildSub(b, q, cc, ""), cc, name);
  }
}
