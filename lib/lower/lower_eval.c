/* lower_eval.c: the pointwise lowering's evaluation of one component of
 * one node in one context, lane by lane: SPEC sections 2-3's arithmetic
 * through arith.c's helper functions on the row's constants (lower_load.c
 * loads them from the parameter table at first use), compressed
 * plaintexts expanded, and the reads of lower_load.c and lower_remap.c. */
#include <stdio.h>
#include <string.h>

#include "lower/lower_emit.h"

/* ------------------------------------------------ modular arithmetic helpers */

/* SPEC sections 2-3's formulas as helper functions (arith.c). */
static LLVMValueRef call_helper(lw *L, lw_helper_op h, LLVMValueRef *args, const char *name) {
  return lw_helper_call(&L->A, h, args, name);
}

/* ------------------------------------------------------------ evaluation */

/* out[l] = helper(args[j][l]...) with lanes whose operands equal lane 0's
 * sharing its value. */
static void lanes_op(lw *L, int h, int nargs, LLVMValueRef *const *args, const char *name,
                     LLVMValueRef *out) {
  int V = L->p->vec;
  for (int l = 0; l < V; l++) {
    int same = l > 0;
    for (int j = 0; j < nargs && same; j++) same = args[j][l] == args[j][0];
    if (same) {
      out[l] = out[0];
      continue;
    }
    LLVMValueRef a[4];
    for (int j = 0; j < nargs; j++) a[j] = args[j][l];
    char lname[96];
    snprintf(lname, sizeof lname, l ? "%s.l%d" : "%s", name, l);
    out[l] = call_helper(L, h, a, lname);
  }
}

static void op_mul(lw *L, LLVMValueRef *a, LLVMValueRef *bv, const char *name, LLVMValueRef *out) {
  LLVMValueRef qv[LW_VMAX], kv[LW_VMAX];
  for (int l = 0; l < L->p->vec; l++) qv[l] = lw_lo_get_q(L), kv[l] = lw_lo_get_k(L);
  LLVMValueRef *args[4] = {a, bv, qv, kv};
  lanes_op(L, LW_H_MUL, 4, args, name, out);
}

static void op_redc(lw *L, LLVMValueRef *a, const char *name, LLVMValueRef *out) {
  LLVMValueRef t[LW_VMAX], qv[LW_VMAX], kv[LW_VMAX];
  for (int l = 0; l < L->p->vec; l++) {
    qv[l] = lw_lo_get_q(L), kv[l] = lw_lo_get_k(L);
    t[l] = (l && a[l] == a[0]) ? t[0] : LLVMBuildZExt(L->b, a[l], L->dword, "");
  }
  LLVMValueRef *args[3] = {t, qv, kv};
  lanes_op(L, LW_H_REDC, 3, args, name, out);
}

static void op_addsub(lw *L, int h, LLVMValueRef *a, LLVMValueRef *bv, const char *name,
                      LLVMValueRef *out) {
  LLVMValueRef qv[LW_VMAX], q2v[LW_VMAX];
  for (int l = 0; l < L->p->vec; l++)
    q2v[l] = lw_lo_get_q2(L), qv[l] = h == LW_H_ADD_LAZY ? NULL : lw_lo_get_q(L);
  if (h == LW_H_ADD_LAZY) {
    LLVMValueRef *args[3] = {a, bv, q2v};
    lanes_op(L, h, 3, args, name, out);
  } else {
    LLVMValueRef *args[4] = {a, bv, qv, q2v};
    lanes_op(L, h, 4, args, name, out);
  }
}

/* Expanded compressed plaintext e of op node n in context x. */
static void expand(lw *L, int x, const ir_node *n, LLVMValueRef *out) {
  const fhjit_graph *g = L->g;
  int V = L->p->vec;
  int64_t u = g->nodes[n->args[1]].type.n, repeat = n->type.n / u;
  int cx = lw_lo_child_ctx(L, x, n, u);
  LLVMValueRef *pv = lw_lo_slot(L, cx, n->args[1], 0);
  if (n->attr[0] != FHJIT_STRIDED_SPARSE || repeat == 1) {
    /* every index hits p */
    for (int l = 0; l < V; l++) out[l] = pv[l];
    return;
  }
  LLVMValueRef *iv = lw_lo_slot(L, lw_lo_add_ctx(L, 1, 1), n->args[2], 0);
  const ictx *c = &L->ctx[x];
  LLVMValueRef rk = cidx(L, repeat);
  for (int l = 0; l < V; l++) {
    int known = -1; /* 1: p, 0: implicit, -1: decided at run time */
    if (c->contig && !c->uniform) {
      if (V % repeat == 0) known = l % repeat == 0;
      else if (repeat % V == 0 && l > 0) known = 0;
    }
    if (known >= 0) {
      out[l] = known ? pv[l] : iv[l];
      continue;
    }
    if (l > 0 && c->uniform) {
      out[l] = out[0];
      continue;
    }
    LLVMValueRef rem = LLVMBuildURem(L->b, c->idx[l], rk, "");
    LLVMValueRef hit = LLVMBuildICmp(L->b, LLVMIntEQ, rem, cidx(L, 0), "");
    out[l] = LLVMBuildSelect(L->b, hit, pv[l], iv[l], "e");
  }
}

void lw_lo_emit_value(lw *L, int x, fhjit_value v, int c) {
  const fhjit_graph *g = L->g;
  const ir_node *n = &g->nodes[v];
  LLVMValueRef *out = lw_lo_slot(L, x, v, c);
  int V = L->p->vec;
  char name[80];
  snprintf(name, sizeof name, "%s.c%d", n->name, c);
#define ARG(k, comp) lw_lo_slot(L, x, n->args[k], nc_of(&g->nodes[n->args[k]]) > 1 ? (comp) : 0)
  switch (n->op) {
  case IR_INPUT: lw_lo_load_input(L, x, n, c, out); break;
  case IR_ADD: op_addsub(L, LW_H_ADD, ARG(0, c), ARG(1, c), name, out); break;
  case IR_SUB: op_addsub(L, LW_H_SUB, ARG(0, c), ARG(1, c), name, out); break;
  case IR_ADD_LAZY: op_addsub(L, LW_H_ADD_LAZY, ARG(0, c), ARG(1, c), name, out); break;
  case IR_MUL: op_mul(L, ARG(0, c), ARG(1, c), name, out); break;
  case IR_NEG: {
    LLVMValueRef qv[LW_VMAX];
    for (int l = 0; l < V; l++) qv[l] = lw_lo_get_q(L);
    LLVMValueRef *args[2] = {ARG(0, c), qv};
    lanes_op(L, LW_H_NEG, 2, args, name, out);
    break;
  }
  case IR_TO_MONT: {
    LLVMValueRef r2[LW_VMAX];
    for (int l = 0; l < V; l++) r2[l] = lw_lo_get_r2(L);
    op_mul(L, ARG(0, c), r2, name, out);
    break;
  }
  case IR_FROM_MONT: op_redc(L, ARG(0, c), name, out); break;
  case IR_MUL_PLAIN: op_mul(L, ARG(0, c), ARG(1, 0), name, out); break;
  case IR_ADD_PLAIN:
    if (c == 0) op_addsub(L, LW_H_ADD_LAZY, ARG(0, 0), ARG(1, 0), name, out);
    else memcpy(out, ARG(0, c), sizeof *out * (size_t)V);
    break;
  case IR_MUL_COMPRESSED: {
    LLVMValueRef e[LW_VMAX];
    expand(L, x, n, e);
    op_mul(L, ARG(0, c), e, name, out);
    break;
  }
  case IR_ADD_COMPRESSED: {
    if (c != 0) {
      memcpy(out, ARG(0, c), sizeof *out * (size_t)V);
      break;
    }
    LLVMValueRef e[LW_VMAX], f[LW_VMAX];
    expand(L, x, n, e);
    if (n->attr[1] == FHJIT_DOMAIN_COEF) {
      op_redc(L, e, "e.std", f);
      memcpy(e, f, sizeof e);
    }
    op_addsub(L, LW_H_ADD, ARG(0, 0), e, name, out);
    break;
  }
  case IR_KS_DIGIT_PRODUCT: {
    const ir_node *key = &g->nodes[n->args[1]];
    const fhjit_layout *kl = &key->layout;
    int64_t konst = kl->offset + n->attr[0] * kl->digit_stride + c * kl->comp_stride +
                    n->attr[1] * kl->row_stride;
    int aligned;
    /* key row row_start + basis[r] (SPEC section 7): the row's column */
    LLVMValueRef var = lw_lo_view_offset(L, key, L->col64, 0, &aligned);
    LLVMValueRef kv[LW_VMAX];
    char kname[80];
    snprintf(kname, sizeof kname, "%s.d%lld.c%d", key->name, (long long)n->attr[0], c);
    lw_lo_load_lanes(L, key->input_index, konst, var, aligned,
                     key->type.n > 1 ? kl->index_stride : 0, &L->ctx[x], kname, kv);
    op_mul(L, ARG(0, 0), kv, name, out);
    break;
  }
  case IR_EXTRACT: memcpy(out, ARG(0, (int)n->attr[0]), sizeof *out * (size_t)V); break;
  case IR_PACK: memcpy(out, lw_lo_slot(L, x, n->args[c], 0), sizeof *out * (size_t)V); break;
  case IR_ROWS: case IR_CONCAT: {
    lw_lanes ln = {.x = &L->ctx[x]};
    lw_addr a;
    lw_lo_resolve(L, v, c, L->row64, &ln, &a);
    lw_lo_load_addr(L, &a, name, out);
    break;
  }
  case IR_AUTOMORPHISM: lw_lo_emit_automorphism(L, x, n, c, name, out); break;
  default:
    if (!L->st)
      L->st = ir_error_at(L->g, n->loc, FHJIT_ERR_UNSUPPORTED,
                          "%%%s: the lowering does not know operation %s", n->name,
                          ir_op_name(n->op));
    for (int l = 0; l < V; l++) out[l] = LLVMGetUndef(L->word);
  }
#undef ARG
}
