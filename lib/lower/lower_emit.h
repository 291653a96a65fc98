/* lower_emit.h: what the pointwise lowering's files share (private to
 * lower.c, lower_ctx.c, lower_load.c, lower_remap.c, lower_eval.c and
 * lower_body.c; lw_llvm.h is the lowering's interface): its state (lw),
 * the index contexts and uses it records, the IR helpers every part uses,
 * the addresses the remapped loads pass, and the functions one file calls
 * in another (prefix lw_lo_). What each does in full: the comment at its
 * definition; how the lowering works: lower.c's file comment. */
#ifndef FHJIT_LOWER_LOWER_EMIT_H
#define FHJIT_LOWER_LOWER_EMIT_H

#include "lower/arith.h"
#include "lower/imap.h"
#include "lower/lw_llvm.h"

#define LW_MAX_STAGE 8 /* staged automorphism operands per kernel (lower_body.c, emit_stage) */

/* ---------------------------------------------------------- index contexts */

/* The coefficient indices (i / a) mod b of the walk's element i; b is the
 * extent n of the values evaluated in the context, b = 1 the index 0. */
typedef struct ictx {
  int64_t a, b;
  LLVMValueRef idx[LW_VMAX]; /* per-lane coefficient index (index type) */
  int uniform, contig;
} ictx;

/* A node needed in one context: the components needed (bit c), and the
 * next use of the same node (-1: none), kept in increasing context order. */
typedef struct lw_use {
  int32_t x, next;
  uint8_t need;
} lw_use;

/* ------------------------------------------------------------ the builder */

typedef struct lw {
  fhjit_graph *g;
  const lw_plan *p;
  lw_target target;
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef word, dword, i32, i64, idxt, ptr, vect, voidt;
  int wbits;
  unsigned vec_align;
  lw_arith A; /* the modular arithmetic helpers (arith.h) */
  /* the body function and its arguments */
  LLVMValueRef fn, params, pstride, *inputs, *results;
  LLVMValueRef row, i, coord[FHJIT_MAX_BATCH]; /* index type; coord NULL = 0 */
  LLVMValueRef row64, coord64[FHJIT_MAX_BATCH];
  LLVMValueRef col64; /* the row's parameter column (lw_column; row64 on the default basis) */
  LLVMValueRef q2, q, k, r2; /* per-row constants, loaded at first use */
  ictx *ctx;
  int nctx, ctx_cap;
  lw_imap ctx_map;    /* (a, b) -> context */
  lw_use *use;        /* every (context, node) needed */
  int32_t nuse, use_cap;
  int32_t *first_use; /* [node]: its first use, -1: none */
  lw_imap use_map;    /* (context, node) -> use */
  LLVMValueRef *val;  /* [(use * 3 + comp) * LW_VMAX + lane], once marked */
  LLVMValueRef missing[LW_VMAX]; /* what lw_lo_slot gives for a use never marked */
  /* contexts + needed components of uses, each counted once per copy of
   * the body in the kernel (the GPU's per_thread groups) */
  int64_t nvalues, max_values;
  fhjit_status st;
  int eval_comp; /* >= 0: the body returns this component of result eval_result (lw_build_eval) */
  int eval_result;
  /* register inputs (lw_build_eval_regs, NTT epilogues: no load): input
   * reg_input[j]'s value is the eval function's argument after the group,
   * j-th of nreg (an ipfuse epilogue: one per member digit); with vec > 1
   * one argument per lane, register j's lanes consecutive */
  int nreg;
  int32_t reg_input[LW_MAX_REG];
  LLVMValueRef reg_value[LW_MAX_REG][LW_VMAX];
  LLVMValueRef group;     /* the body's group argument */
  /* automorphisms read from shared memory (emit_stage): node, component,
   * the block's staged words */
  int nstage;
  struct {
    fhjit_value v;
    int c;
    LLVMValueRef arr;
  } stage[LW_MAX_STAGE];
} lw;

static inline fhjit_status oom(lw *L) {
  if (!L->st) L->st = ir_error(L->g->ctx, FHJIT_ERR_MEMORY, "error: out of memory while lowering graph @%s", L->g->name);
  return L->st;
}

static inline LLVMValueRef cw(lw *L, uint64_t x) { return LLVMConstInt(L->word, x, 0); }
static inline LLVMValueRef ci64(lw *L, int64_t x) { return LLVMConstInt(L->i64, (uint64_t)x, 0); }
static inline LLVMValueRef cidx(lw *L, int64_t x) { return LLVMConstInt(L->idxt, (uint64_t)x, 0); }

static inline void add_fn_attr(lw *L, LLVMValueRef fn, const char *name) {
  lw_fn_attr(L->c, fn, name);
}

static inline void add_param_attr(lw *L, LLVMValueRef fn, unsigned param, const char *name) {
  lw_param_attr(L->c, fn, param, name);
}

static inline int nc_of(const ir_node *n) { return n->type.comps > 1 ? n->type.comps : 1; }

/* x * k in i64, without the multiplication when k is 1. */
static inline LLVMValueRef mul_by(lw *L, LLVMValueRef x, int64_t k) {
  return k == 1 ? x : LLVMBuildNUWMul(L->b, x, ci64(L, k), "");
}

static inline LLVMValueRef to64(lw *L, LLVMValueRef v) {
  if (L->p->idx_bits == 64) return v;
  if (LLVMIsAConstantInt(v)) return ci64(L, (int64_t)LLVMConstIntGetZExtValue(v));
  return LLVMBuildZExt(L->b, v, L->i64, "");
}

/* --------------------------------------- remapped loads (SPEC section 7) */

/* Where the lanes of a word of an address chain lie: a pointer per lane;
 * uniform: every lane reads ptr[0]; vptr: the lanes are consecutive words
 * from vptr, aligned for one vector load. */
typedef struct lw_addr {
  LLVMValueRef ptr[LW_VMAX];
  LLVMValueRef vptr;
  int uniform;
} lw_addr;

/* Per-lane coefficient indices: those of context x, or idx[] (i64). */
typedef struct lw_lanes {
  const ictx *x;
  LLVMValueRef idx[LW_VMAX];
} lw_lanes;

/* lower_ctx.c: index contexts and the marking */
int lw_lo_add_ctx(lw *L, int64_t a, int64_t b);
int lw_lo_child_ctx(lw *L, int x, const ir_node *n, int64_t u);
void lw_lo_index_ctx(lw *L, ictx *x);
void lw_lo_mark_body(lw *L);

/* lower_load.c: loads */
LLVMValueRef *lw_lo_slot(lw *L, int x, fhjit_value v, int c);
LLVMValueRef lw_lo_view_offset(lw *L, const ir_node *in, LLVMValueRef row, int use_batch,
                               int *aligned);
LLVMValueRef lw_lo_vector_load(lw *L, LLVMValueRef ptr);
void lw_lo_split_vector(lw *L, LLVMValueRef v, const char *name, LLVMValueRef *out);
void lw_lo_load_lanes(lw *L, int32_t index, int64_t konst, LLVMValueRef var, int aligned,
                      int64_t stride, const ictx *x, const char *name, LLVMValueRef *out);
const LLVMValueRef *lw_lo_reg_of(const lw *L, int32_t i);
void lw_lo_load_input(lw *L, int x, const ir_node *in, int c, LLVMValueRef *out);

/* lower_load.c: the row's constants, loaded at first use from the
 * parameter table (rows 0, 3 and 4, 5 at the row's column): q2 = 2q, q,
 * the Montgomery constant k, r2 */
LLVMValueRef lw_lo_get_q2(lw *L);
LLVMValueRef lw_lo_get_q(lw *L);
LLVMValueRef lw_lo_get_k(lw *L);
LLVMValueRef lw_lo_get_r2(lw *L);

/* lower_remap.c: remapped loads, the automorphism */
void lw_lo_resolve(lw *L, fhjit_value v, int c, LLVMValueRef row, const lw_lanes *ln,
                   lw_addr *a);
void lw_lo_load_addr(lw *L, const lw_addr *a, const char *name, LLVMValueRef *out);
void lw_lo_emit_automorphism(lw *L, int x, const ir_node *n, int c, const char *name,
                             LLVMValueRef *out);

/* lower_eval.c: evaluation */
void lw_lo_emit_value(lw *L, int x, fhjit_value v, int c);

/* lower_body.c: the body */
void lw_lo_decompose(lw *L, LLVMValueRef group);
void lw_lo_emit_body(lw *L);

#endif
