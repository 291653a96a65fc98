/* lower_load.c: the pointwise lowering's loads: the lanes of a marked use
 * (lw_lo_slot), the row and batch offsets of an input view, and an input's
 * lanes in a context: one scalar load when its indices are uniform, one
 * vector load when they are consecutive and aligned, else one load per
 * lane; a register input's lanes are the evaluator's arguments; the
 * row's constants from the parameter table, loaded at first use. */
#include <stdio.h>

#include "lower/lower_emit.h"

/* The lanes of component c of node v in context x (marked by need). */
LLVMValueRef *lw_lo_slot(lw *L, int x, fhjit_value v, int c) {
  int32_t u = x >= 0 ? lw_imap_get(&L->use_map, (uint64_t)x, (uint64_t)v) : -1;
  if (u >= 0 && L->val && (L->use[u].need & (1u << c)))
    return &L->val[((size_t)u * 3 + (size_t)c) * LW_VMAX];
  if (!L->st)
    L->st = ir_error(L->g->ctx, FHJIT_ERR_UNSUPPORTED,
                     "internal: graph @%s: %%%s component %d used but never marked", L->g->name,
                     L->g->nodes[v].name, c);
  for (int l = 0; l < LW_VMAX; l++) L->missing[l] = LLVMGetUndef(L->word);
  return L->missing;
}

/* Element offset of the row and batch part of an input view (NULL: 0) at
 * row `row` (i64); *aligned tells whether every stride in it is a multiple
 * of vec. */
LLVMValueRef lw_lo_view_offset(lw *L, const ir_node *in, LLVMValueRef row, int use_batch,
                               int *aligned) {
  const fhjit_layout *l = &in->layout;
  int V = L->p->vec;
  LLVMValueRef off = NULL;
  *aligned = 1;
  if (in->type.rows > 1 && l->row_stride) {
    off = mul_by(L, row, l->row_stride);
    if (l->row_stride % V) *aligned = 0;
  }
  if (use_batch) {
    int shift = L->p->nbatch - in->type.nbatch;
    for (int a = 0; a < in->type.nbatch; a++) {
      if (in->type.batch[a] == 1 || !l->batch_stride[a] || shift < 0) continue;
      LLVMValueRef t = mul_by(L, L->coord64[a + shift], l->batch_stride[a]);
      off = off ? LLVMBuildNUWAdd(L->b, off, t, "") : t;
      if (l->batch_stride[a] % V) *aligned = 0;
    }
  }
  return off;
}

/* One vector load of a thread's lanes at ptr. */
LLVMValueRef lw_lo_vector_load(lw *L, LLVMValueRef ptr) {
  LLVMValueRef v = LLVMBuildLoad2(L->b, L->vect, ptr, "");
  LLVMSetAlignment(v, L->vec_align);
  return v;
}

/* Lane l of vector v as out[l], named name, name.l1, ... */
void lw_lo_split_vector(lw *L, LLVMValueRef v, const char *name, LLVMValueRef *out) {
  for (int l = 0; l < L->p->vec; l++) {
    char lname[96];
    snprintf(lname, sizeof lname, l ? "%s.l%d" : "%s", name, l);
    out[l] = LLVMBuildExtractElement(L->b, v, LLVMConstInt(L->i32, (uint64_t)l, 0), lname);
  }
}

/* Loads lanes of input #index at element konst + var + idx[l] * stride (idx
 * of context x) into out[]. */
void lw_lo_load_lanes(lw *L, int32_t index, int64_t konst, LLVMValueRef var, int aligned,
                      int64_t stride, const ictx *x, const char *name, LLVMValueRef *out) {
  LLVMBuilderRef b = L->b;
  int V = L->p->vec;
  unsigned walign = (unsigned)(L->wbits == 32 ? 4 : 8);
  LLVMValueRef base = L->inputs[index];
  LLVMValueRef fixed = ci64(L, konst);
  if (var) fixed = konst ? LLVMBuildNUWAdd(b, var, fixed, "") : var;
  if (stride == 0 || x->uniform) {
    LLVMValueRef off = fixed;
    if (stride) off = LLVMBuildNUWAdd(b, off, mul_by(L, to64(L, x->idx[0]), stride), "");
    LLVMValueRef v = LLVMBuildLoad2(b, L->word, LLVMBuildInBoundsGEP2(b, L->word, base, &off, 1, ""), name);
    LLVMSetAlignment(v, walign);
    for (int l = 0; l < V; l++) out[l] = v;
    return;
  }
  if (V > 1 && x->contig && stride == 1 && aligned && konst % V == 0) {
    LLVMValueRef off = LLVMBuildNUWAdd(b, fixed, to64(L, x->idx[0]), "");
    lw_lo_split_vector(
        L, lw_lo_vector_load(L, LLVMBuildInBoundsGEP2(b, L->word, base, &off, 1, "")), name, out);
    return;
  }
  for (int l = 0; l < V; l++) {
    LLVMValueRef off = LLVMBuildNUWAdd(b, fixed, mul_by(L, to64(L, x->idx[l]), stride), "");
    char lname[96];
    snprintf(lname, sizeof lname, l ? "%s.l%d" : "%s", name, l);
    LLVMValueRef v = LLVMBuildLoad2(b, L->word, LLVMBuildInBoundsGEP2(b, L->word, base, &off, 1, ""), lname);
    LLVMSetAlignment(v, walign);
    out[l] = v;
  }
}

/* The lanes of the register value of input index i, or NULL (not a
 * register input). */
const LLVMValueRef *lw_lo_reg_of(const lw *L, int32_t i) {
  for (int j = 0; j < L->nreg; j++)
    if (L->reg_value[j][0] && L->reg_input[j] == i) return L->reg_value[j];
  return NULL;
}

void lw_lo_load_input(lw *L, int x, const ir_node *in, int c, LLVMValueRef *out) {
  const LLVMValueRef *rv = lw_lo_reg_of(L, in->input_index);
  if (rv) {
    /* only at the walk's own element (the caller holds that one) */
    if (x != 0 && !L->st)
      L->st = ir_error(L->g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "internal: graph @%s: a register input read at another index", L->g->name);
    /* one word a call: that of the component being evaluated */
    if (in->type.comps > 1 && c != L->eval_comp && !L->st)
      L->st = ir_error(L->g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "internal: graph @%s: a register input read at another component",
                       L->g->name);
    for (int l = 0; l < L->p->vec; l++) out[l] = rv[l];
    return;
  }
  const fhjit_layout *l = &in->layout;
  int64_t konst = l->offset + (in->type.comps > 1 ? c * l->comp_stride : 0);
  int aligned;
  LLVMValueRef var = lw_lo_view_offset(L, in, L->row64, 1, &aligned);
  char name[80];
  snprintf(name, sizeof name, "%s.c%d", in->name, c);
  lw_lo_load_lanes(L, in->input_index, konst, var, aligned,
                   in->type.n > 1 ? l->index_stride : 0, &L->ctx[x], name, out);
}

/* ------------------------------------------------------ per-row constants */

/* Row r of the parameter table at the row's column (q2, k, R^2 mod q...). */
static LLVMValueRef param_row(lw *L, int r, const char *name) {
  LLVMValueRef off = L->col64;
  if (r) off = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, L->pstride, ci64(L, r), ""), off, "");
  LLVMValueRef ptr = LLVMBuildInBoundsGEP2(L->b, L->word, L->params, &off, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(L->b, L->word, ptr, name);
  LLVMSetAlignment(v, (unsigned)(L->wbits == 32 ? 4 : 8));
  return v;
}

LLVMValueRef lw_lo_get_q2(lw *L) {
  if (!L->q2) L->q2 = param_row(L, 0, "q2");
  return L->q2;
}
LLVMValueRef lw_lo_get_q(lw *L) {
  if (!L->q) L->q = LLVMBuildLShr(L->b, lw_lo_get_q2(L), cw(L, 1), "q");
  return L->q;
}
LLVMValueRef lw_lo_get_k(lw *L) {
  if (!L->k) {
    LLVMValueRef lo = param_row(L, 3, "k.lo"), hi = param_row(L, 4, "k.hi");
    hi = LLVMBuildShl(L->b, hi, cw(L, (uint64_t)(L->wbits / 2)), "");
    L->k = LLVMBuildOr(L->b, lo, hi, "k");
  }
  return L->k;
}
LLVMValueRef lw_lo_get_r2(lw *L) {
  if (!L->r2) L->r2 = param_row(L, 5, "r2");
  return L->r2;
}
