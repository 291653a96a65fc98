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
 * (lw_plan_graph, plan_graph.c, refuses it; anchor.c's planner). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/arith.h"
#include "lower/autmap.h"
#include "lower/imap.h"
#include "lower/lw_llvm.h"

#define LW_MAX_STAGE 8 /* staged automorphism operands per kernel (emit_stage) */

/* ------------------------------------------------------- symbols, columns */

static int nc_of(const ir_node *n) { return n->type.comps > 1 ? n->type.comps : 1; }

int lw_symbol_taken(LLVMModuleRef m, const char *name) {
  return LLVMGetNamedFunction(m, name) != NULL || LLVMGetNamedGlobal(m, name) != NULL;
}

fhjit_status lw_duplicate_symbol(fhjit_context *ctx, const char *name) {
  return ir_error(ctx, FHJIT_ERR_LLVM,
                  "internal: symbol %s defined twice in one module (names must be unique)", name);
}

LLVMValueRef lw_column(LLVMBuilderRef b, LLVMModuleRef m, lw_target target, const int32_t *cols,
                       int64_t rows, LLVMValueRef row, const char *sym) {
  if (!cols) return row;
  LLVMTypeRef i64 = LLVMTypeOf(row);
  if (LLVMIsAConstantInt(row)) {
    uint64_t r = LLVMConstIntGetZExtValue(row);
    return LLVMConstInt(i64, (uint64_t)(r < (uint64_t)rows ? cols[r] : 0), 0);
  }
  /* runs of consecutive positions: row r of the run from row s is at column
   * r + (cols[s] - s); a few runs are a select chain on the row, more a
   * table (past TABLE_MAX rows, never in practice, a long chain: no
   * allocation) */
  enum { MAX_RUNS = 4, TABLE_MAX = 1024 };
  int nruns = 0;
  for (int64_t r = 0; r < rows; r++) nruns += r == 0 || cols[r] != cols[r - 1] + 1;
  if (nruns <= MAX_RUNS || rows > TABLE_MAX) {
    LLVMValueRef dv = NULL;
    int64_t end = rows; /* where the run after r's starts */
    for (int64_t r = rows - 1; r >= 0; r--) {
      if (r > 0 && cols[r] == cols[r - 1] + 1) continue;
      /* rows [r, end) are a run */
      LLVMValueRef d = LLVMConstInt(i64, (uint64_t)((int64_t)cols[r] - r), 0);
      if (!dv) dv = d;
      else {
        LLVMValueRef lim = LLVMConstInt(i64, (uint64_t)end, 0);
        LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, row, lim, "");
        dv = LLVMBuildSelect(b, in, d, dv, "");
      }
      end = r;
    }
    return LLVMBuildAdd(b, row, dv, "col");
  }
  LLVMValueRef tab = LLVMGetNamedGlobal(m, sym);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(m));
  if (!tab) {
    LLVMValueRef vals[TABLE_MAX];
    for (int64_t r = 0; r < rows; r++) vals[r] = LLVMConstInt(i32, (uint64_t)cols[r], 0);
    LLVMTypeRef arr = LLVMArrayType2(i32, (uint64_t)rows);
    tab = LLVMAddGlobalInAddressSpace(m, arr, sym, target == LW_GPU ? 1 : 0);
    LLVMSetInitializer(tab, LLVMConstArray2(i32, vals, (uint64_t)rows));
    LLVMSetLinkage(tab, LLVMInternalLinkage);
    LLVMSetGlobalConstant(tab, 1);
    LLVMSetUnnamedAddress(tab, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(tab, 4);
  }
  LLVMValueRef ptr = LLVMBuildInBoundsGEP2(b, i32, tab, &row, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(b, i32, ptr, "col");
  LLVMSetAlignment(v, 4);
  return LLVMBuildZExt(b, v, i64, "");
}


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
  LLVMValueRef missing[LW_VMAX]; /* what slot gives for a use never marked */
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

static fhjit_status oom(lw *L) {
  if (!L->st) L->st = ir_error(L->g->ctx, FHJIT_ERR_MEMORY, "error: out of memory while lowering graph @%s", L->g->name);
  return L->st;
}

static LLVMValueRef cw(lw *L, uint64_t x) { return LLVMConstInt(L->word, x, 0); }
static LLVMValueRef ci64(lw *L, int64_t x) { return LLVMConstInt(L->i64, (uint64_t)x, 0); }
static LLVMValueRef cidx(lw *L, int64_t x) { return LLVMConstInt(L->idxt, (uint64_t)x, 0); }

static void add_fn_attr(lw *L, LLVMValueRef fn, const char *name) { lw_fn_attr(L->c, fn, name); }

static void add_param_attr(lw *L, LLVMValueRef fn, unsigned param, const char *name) {
  lw_param_attr(L->c, fn, param, name);
}

/* ------------------------------------------------ modular arithmetic helpers */

/* SPEC sections 2-3's formulas as helper functions (arith.c). */
static LLVMValueRef call_helper(lw *L, lw_helper_op h, LLVMValueRef *args, const char *name) {
  return lw_helper_call(&L->A, h, args, name);
}

/* ------------------------------------------------------ per-row constants */

static LLVMValueRef param_row(lw *L, int r, const char *name) {
  LLVMValueRef off = L->col64;
  if (r) off = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, L->pstride, ci64(L, r), ""), off, "");
  LLVMValueRef ptr = LLVMBuildInBoundsGEP2(L->b, L->word, L->params, &off, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(L->b, L->word, ptr, name);
  LLVMSetAlignment(v, (unsigned)(L->wbits == 32 ? 4 : 8));
  return v;
}

static LLVMValueRef get_q2(lw *L) {
  if (!L->q2) L->q2 = param_row(L, 0, "q2");
  return L->q2;
}
static LLVMValueRef get_q(lw *L) {
  if (!L->q) L->q = LLVMBuildLShr(L->b, get_q2(L), cw(L, 1), "q");
  return L->q;
}
static LLVMValueRef get_k(lw *L) {
  if (!L->k) {
    LLVMValueRef lo = param_row(L, 3, "k.lo"), hi = param_row(L, 4, "k.hi");
    hi = LLVMBuildShl(L->b, hi, cw(L, (uint64_t)(L->wbits / 2)), "");
    L->k = LLVMBuildOr(L->b, lo, hi, "k");
  }
  return L->k;
}
static LLVMValueRef get_r2(lw *L) {
  if (!L->r2) L->r2 = param_row(L, 5, "r2");
  return L->r2;
}

/* -------------------------------------------------------- index contexts */

/* What one value of the body counts: the GPU kernel holds per_thread
 * copies of it (FHJIT_PW_PLAN's U). When the grid does not cover the groups
 * exactly, each copy is guarded by a branch, and LLVM 19's CodeGenPrepare
 * takes time quadratic in the copies of such a chain of blocks (a 400-op
 * chain at U = 8: 98 s, at U = 1: 0.2 s): each then counts 8 times more,
 * which keeps that case within the bound up to the limit. */
static int value_weight(const lw *L) {
  const lw_plan *p = L->p;
  if (L->eval_comp >= 0 || p->per_thread <= 1) return 1;
  int exact = p->groups % ((int64_t)p->block * p->per_thread) == 0;
  return exact ? p->per_thread : 8 * p->per_thread;
}

/* Counts one more value; past the limit, records the error. */
static int count_value(lw *L) {
  int weight = value_weight(L);
  L->nvalues += weight;
  if (L->nvalues <= L->max_values || L->st) return !L->st;
  const fhjit_graph *g = L->g;
  char per_thread[64] = "";
  if (weight > 1)
    snprintf(per_thread, sizeof per_thread, ", each counted %d times for U = %d", weight,
             L->p->per_thread);
  L->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                   "error: graph @%s: its kernel would evaluate more than %lld values (a value "
                   "is one component of one node at one coefficient index pattern; %d nodes, "
                   "%d index pattern%s so far%s), the limit that keeps a compile within "
                   "seconds (docs/limits.md); split the graph into smaller graphs, or raise the "
                   "limit with FHJIT_MAX_VALUES",
                   g->name, (long long)L->max_values, (int)g->nnodes, L->nctx,
                   L->nctx == 1 ? "" : "s", per_thread);
  return 0;
}

/* The context of indices (i / a) mod b, interned; -1 on error. */
static int add_ctx(lw *L, int64_t a, int64_t b) {
  if (b == 1) a = 1; /* every index 0 */
  int32_t found = lw_imap_get(&L->ctx_map, (uint64_t)a, (uint64_t)b);
  if (found >= 0) return found;
  if (L->st || !count_value(L)) return -1;
  if (L->nctx == L->ctx_cap) {
    int cap = L->ctx_cap ? L->ctx_cap * 2 : 4;
    ictx *n = realloc(L->ctx, sizeof *n * (size_t)cap);
    if (!n) return oom(L), -1;
    L->ctx = n;
    L->ctx_cap = cap;
  }
  if (lw_imap_put(&L->ctx_map, (uint64_t)a, (uint64_t)b, L->nctx)) return oom(L), -1;
  L->ctx[L->nctx] = (ictx){.a = a, .b = b};
  return L->nctx++;
}

/* The context a compressed plaintext of op node n is read in, from x (whose
 * indices range over n's extent). */
static int child_ctx(lw *L, int x, const ir_node *n, int64_t u) {
  int64_t a = L->ctx[x].a, b = L->ctx[x].b, repeat = n->type.n / u;
  if (b != n->type.n) {
    if (!L->st)
      L->st = ir_error(L->g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "internal: graph @%s: %%%s evaluated at indices of extent %lld",
                       L->g->name, n->name, (long long)b);
    return -1;
  }
  if (repeat == 1) return x;
  if (n->attr[0] == FHJIT_CYCLIC) return add_ctx(L, a, u); /* ((i/a) mod b) mod u, u | b */
  return add_ctx(L, a * repeat, u); /* ((i/a) mod b) / repeat = (i/(a repeat)) mod u */
}

/* The use of node v in context x, made if new; -1 on error. */
static int32_t use_of(lw *L, int x, fhjit_value v) {
  int32_t u = lw_imap_get(&L->use_map, (uint64_t)x, (uint64_t)v);
  if (u >= 0) return u;
  if (L->nuse == L->use_cap) {
    int32_t cap = L->use_cap ? L->use_cap * 2 : 64;
    lw_use *n = L->use_cap < INT32_MAX / 2 ? realloc(L->use, sizeof *n * (size_t)cap) : NULL;
    if (!n) return oom(L), -1;
    L->use = n;
    L->use_cap = cap;
  }
  if (lw_imap_put(&L->use_map, (uint64_t)x, (uint64_t)v, L->nuse)) return oom(L), -1;
  L->use[L->nuse] = (lw_use){.x = x, .next = L->first_use[v]};
  L->first_use[v] = L->nuse;
  return L->nuse++;
}

static void need(lw *L, int x, fhjit_value v, int c) {
  if (x < 0 || L->st) return;
  int32_t u = use_of(L, x, v);
  if (u < 0 || (L->use[u].need & (1u << c))) return;
  if (count_value(L)) L->use[u].need |= (uint8_t)(1u << c);
}

/* Marks what component c of node v in context x reads. */
static void mark_operands(lw *L, int x, fhjit_value v, int c) {
  const ir_node *n = &L->g->nodes[v];
  const fhjit_graph *g = L->g;
#define COMP_OF(arg, comp) (nc_of(&g->nodes[arg]) > 1 ? (comp) : 0)
  switch (n->op) {
  case IR_INPUT: break;
  case IR_ADD: case IR_SUB: case IR_ADD_LAZY: case IR_MUL:
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    need(L, x, n->args[1], COMP_OF(n->args[1], c));
    break;
  case IR_NEG: case IR_TO_MONT: case IR_FROM_MONT:
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    break;
  case IR_MUL_PLAIN:
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    need(L, x, n->args[1], 0);
    break;
  case IR_ADD_PLAIN:
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    if (c == 0) need(L, x, n->args[1], 0);
    break;
  case IR_MUL_COMPRESSED: case IR_ADD_COMPRESSED: {
    need(L, x, n->args[0], COMP_OF(n->args[0], c));
    if (n->op == IR_ADD_COMPRESSED && c != 0) break;
    int64_t u = g->nodes[n->args[1]].type.n;
    need(L, child_ctx(L, x, n, u), n->args[1], 0);
    if (n->attr[0] == FHJIT_STRIDED_SPARSE && n->type.n / u > 1)
      need(L, add_ctx(L, 1, 1), n->args[2], 0); /* the implicit value, at index 0 */
    break;
  }
  case IR_KS_DIGIT_PRODUCT: need(L, x, n->args[0], 0); break;
  case IR_EXTRACT: need(L, x, n->args[0], COMP_OF(n->args[0], (int)n->attr[0])); break;
  case IR_PACK: need(L, x, n->args[c], 0); break;
  /* rows, concat, automorphism: leaves reading their operands' memory */
  default: break;
  }
#undef COMP_OF
}

/* Per-lane indices of context x = (a, b): lane l reads ((i + l) / a) mod b,
 * where vec divides i (the group's first index in the row, i < n). */
static void index_ctx(lw *L, ictx *x) {
  int V = L->p->vec;
  int64_t n = L->p->n;
  LLVMBuilderRef b = L->b;
  const ictx *main_ctx = &L->ctx[0]; /* (1, n): lanes i + l */
  if (x->b == 1) { /* every index 0 */
    for (int l = 0; l < V; l++) x->idx[l] = cidx(L, 0);
    x->uniform = x->contig = 1;
  } else if (x->a == 1 && x->b == n) { /* the main context */
    for (int l = 0; l < V; l++) x->idx[l] = l ? LLVMBuildNUWAdd(b, L->i, cidx(L, l), "") : L->i;
    x->uniform = V == 1;
    x->contig = 1;
  } else if (x->a % V == 0) { /* (i + l) / a = i / a when vec divides both i and a */
    LLVMValueRef v = x->a > 1 ? LLVMBuildUDiv(b, L->i, cidx(L, x->a), "") : L->i;
    if (x->a * x->b < n) v = LLVMBuildURem(b, v, cidx(L, x->b), "");
    for (int l = 0; l < V; l++) x->idx[l] = v;
    x->uniform = x->contig = 1;
  } else if (x->a == 1 && x->b % V == 0) { /* (i + l) mod b = (i mod b) + l */
    x->idx[0] = LLVMBuildURem(b, L->i, cidx(L, x->b), "");
    for (int l = 1; l < V; l++) x->idx[l] = LLVMBuildNUWAdd(b, x->idx[0], cidx(L, l), "");
    x->contig = 1;
  } else if (x->a == 1 && V % x->b == 0) { /* b divides i */
    for (int l = 0; l < V; l++) x->idx[l] = cidx(L, l % x->b);
  } else {
    for (int l = 0; l < V; l++) {
      LLVMValueRef v = main_ctx->idx[l];
      if (x->a > 1) v = LLVMBuildUDiv(b, v, cidx(L, x->a), "");
      x->idx[l] = x->a * x->b < n ? LLVMBuildURem(b, v, cidx(L, x->b), "") : v;
    }
  }
}

/* --------------------------------------------------------------- loads */

/* The lanes of component c of node v in context x (marked by need). */
static LLVMValueRef *slot(lw *L, int x, fhjit_value v, int c) {
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

/* x * k in i64, without the multiplication when k is 1. */
static LLVMValueRef mul_by(lw *L, LLVMValueRef x, int64_t k) {
  return k == 1 ? x : LLVMBuildNUWMul(L->b, x, ci64(L, k), "");
}

static LLVMValueRef to64(lw *L, LLVMValueRef v) {
  if (L->p->idx_bits == 64) return v;
  if (LLVMIsAConstantInt(v)) return ci64(L, (int64_t)LLVMConstIntGetZExtValue(v));
  return LLVMBuildZExt(L->b, v, L->i64, "");
}

/* Element offset of the row and batch part of an input view (NULL: 0) at
 * row `row` (i64); *aligned tells whether every stride in it is a multiple
 * of vec. */
static LLVMValueRef view_offset(lw *L, const ir_node *in, LLVMValueRef row, int use_batch,
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
static LLVMValueRef vector_load(lw *L, LLVMValueRef ptr) {
  LLVMValueRef v = LLVMBuildLoad2(L->b, L->vect, ptr, "");
  LLVMSetAlignment(v, L->vec_align);
  return v;
}

/* Lane l of vector v as out[l], named name, name.l1, ... */
static void split_vector(lw *L, LLVMValueRef v, const char *name, LLVMValueRef *out) {
  for (int l = 0; l < L->p->vec; l++) {
    char lname[96];
    snprintf(lname, sizeof lname, l ? "%s.l%d" : "%s", name, l);
    out[l] = LLVMBuildExtractElement(L->b, v, LLVMConstInt(L->i32, (uint64_t)l, 0), lname);
  }
}

/* Loads lanes of input #index at element konst + var + idx[l] * stride (idx
 * of context x) into out[]. */
static void load_lanes(lw *L, int32_t index, int64_t konst, LLVMValueRef var, int aligned,
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
    split_vector(L, vector_load(L, LLVMBuildInBoundsGEP2(b, L->word, base, &off, 1, "")), name, out);
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
static const LLVMValueRef *reg_of(const lw *L, int32_t i) {
  for (int j = 0; j < L->nreg; j++)
    if (L->reg_value[j][0] && L->reg_input[j] == i) return L->reg_value[j];
  return NULL;
}

static void load_input(lw *L, int x, const ir_node *in, int c, LLVMValueRef *out) {
  const LLVMValueRef *rv = reg_of(L, in->input_index);
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
  LLVMValueRef var = view_offset(L, in, L->row64, 1, &aligned);
  char name[80];
  snprintf(name, sizeof name, "%s.c%d", in->name, c);
  load_lanes(L, in->input_index, konst, var, aligned, in->type.n > 1 ? l->index_stride : 0,
             &L->ctx[x], name, out);
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
    if (reg_of(L, n->input_index) && !L->st)
      L->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "internal: graph @%s: a register input read through a remapped load",
                       g->name);
    const fhjit_layout *l = &n->layout;
    int64_t konst = l->offset + (n->type.comps > 1 ? c * l->comp_stride : 0);
    int aligned;
    LLVMValueRef var = view_offset(L, n, memo_row(L, M, off), 1, &aligned);
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
static void resolve(lw *L, fhjit_value v, int c, LLVMValueRef row, const lw_lanes *ln,
                    lw_addr *a) {
  resolve_memo M = {.base = row, .ln = ln};
  resolve_at(L, &M, v, c, 0, a);
  lw_imap_free(&M.addr_of);
  lw_imap_free(&M.row_of);
  free(M.addr);
  free(M.rows);
}

/* The lanes' words at address a. */
static void load_addr(lw *L, const lw_addr *a, const char *name, LLVMValueRef *out) {
  LLVMBuilderRef b = L->b;
  int V = L->p->vec;
  unsigned walign = (unsigned)(L->wbits == 32 ? 4 : 8);
  if (a->vptr && !a->uniform) {
    split_vector(L, vector_load(L, a->vptr), name, out);
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
static void emit_automorphism(lw *L, int x, const ir_node *n, int c, const char *name,
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
  resolve(L, s, nc_of(&g->nodes[s]) > 1 ? c : 0, L->row64, &ln, &a);
  LLVMValueRef w[LW_VMAX];
  load_addr(L, &a, name, w);
  if (!coef) {
    if (t) lw_aut_ntt_permute(b, V, w, t, k, out);
    else memcpy(out, w, sizeof *out * (size_t)V);
    return;
  }
  /* canon(a) = a mod q (a < 2q: one subtraction); neg as SPEC section 3 */
  LLVMValueRef q = get_q(L);
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
  for (int l = 0; l < L->p->vec; l++) qv[l] = get_q(L), kv[l] = get_k(L);
  LLVMValueRef *args[4] = {a, bv, qv, kv};
  lanes_op(L, LW_H_MUL, 4, args, name, out);
}

static void op_redc(lw *L, LLVMValueRef *a, const char *name, LLVMValueRef *out) {
  LLVMValueRef t[LW_VMAX], qv[LW_VMAX], kv[LW_VMAX];
  for (int l = 0; l < L->p->vec; l++) {
    qv[l] = get_q(L), kv[l] = get_k(L);
    t[l] = (l && a[l] == a[0]) ? t[0] : LLVMBuildZExt(L->b, a[l], L->dword, "");
  }
  LLVMValueRef *args[3] = {t, qv, kv};
  lanes_op(L, LW_H_REDC, 3, args, name, out);
}

static void op_addsub(lw *L, int h, LLVMValueRef *a, LLVMValueRef *bv, const char *name,
                      LLVMValueRef *out) {
  LLVMValueRef qv[LW_VMAX], q2v[LW_VMAX];
  for (int l = 0; l < L->p->vec; l++) q2v[l] = get_q2(L), qv[l] = h == LW_H_ADD_LAZY ? NULL : get_q(L);
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
  int cx = child_ctx(L, x, n, u);
  LLVMValueRef *pv = slot(L, cx, n->args[1], 0);
  if (n->attr[0] != FHJIT_STRIDED_SPARSE || repeat == 1) {
    /* every index hits p */
    for (int l = 0; l < V; l++) out[l] = pv[l];
    return;
  }
  LLVMValueRef *iv = slot(L, add_ctx(L, 1, 1), n->args[2], 0);
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

static void emit_value(lw *L, int x, fhjit_value v, int c) {
  const fhjit_graph *g = L->g;
  const ir_node *n = &g->nodes[v];
  LLVMValueRef *out = slot(L, x, v, c);
  int V = L->p->vec;
  char name[80];
  snprintf(name, sizeof name, "%s.c%d", n->name, c);
#define ARG(k, comp) slot(L, x, n->args[k], nc_of(&g->nodes[n->args[k]]) > 1 ? (comp) : 0)
  switch (n->op) {
  case IR_INPUT: load_input(L, x, n, c, out); break;
  case IR_ADD: op_addsub(L, LW_H_ADD, ARG(0, c), ARG(1, c), name, out); break;
  case IR_SUB: op_addsub(L, LW_H_SUB, ARG(0, c), ARG(1, c), name, out); break;
  case IR_ADD_LAZY: op_addsub(L, LW_H_ADD_LAZY, ARG(0, c), ARG(1, c), name, out); break;
  case IR_MUL: op_mul(L, ARG(0, c), ARG(1, c), name, out); break;
  case IR_NEG: {
    LLVMValueRef qv[LW_VMAX];
    for (int l = 0; l < V; l++) qv[l] = get_q(L);
    LLVMValueRef *args[2] = {ARG(0, c), qv};
    lanes_op(L, LW_H_NEG, 2, args, name, out);
    break;
  }
  case IR_TO_MONT: {
    LLVMValueRef r2[LW_VMAX];
    for (int l = 0; l < V; l++) r2[l] = get_r2(L);
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
    LLVMValueRef var = view_offset(L, key, L->col64, 0, &aligned);
    LLVMValueRef kv[LW_VMAX];
    char kname[80];
    snprintf(kname, sizeof kname, "%s.d%lld.c%d", key->name, (long long)n->attr[0], c);
    load_lanes(L, key->input_index, konst, var, aligned, key->type.n > 1 ? kl->index_stride : 0,
               &L->ctx[x], kname, kv);
    op_mul(L, ARG(0, 0), kv, name, out);
    break;
  }
  case IR_EXTRACT: memcpy(out, ARG(0, (int)n->attr[0]), sizeof *out * (size_t)V); break;
  case IR_PACK: memcpy(out, slot(L, x, n->args[c], 0), sizeof *out * (size_t)V); break;
  case IR_ROWS: case IR_CONCAT: {
    lw_lanes ln = {.x = &L->ctx[x]};
    lw_addr a;
    resolve(L, v, c, L->row64, &ln, &a);
    load_addr(L, &a, name, out);
    break;
  }
  case IR_AUTOMORPHISM: emit_automorphism(L, x, n, c, name, out); break;
  default:
    if (!L->st)
      L->st = ir_error_at(L->g, n->loc, FHJIT_ERR_UNSUPPORTED,
                          "%%%s: the lowering does not know operation %s", n->name,
                          ir_op_name(n->op));
    for (int l = 0; l < V; l++) out[l] = LLVMGetUndef(L->word);
  }
#undef ARG
}

/* ---------------------------------------------------------------- body */

/* Splits the group's first element into (batch coordinates, row, i). */
static void decompose(lw *L, LLVMValueRef group) {
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
      LLVMValueRef *val = slot(L, 0, v, c);
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

static int by_ctx(const void *a, const void *b) {
  const lw_use *x = a, *y = b;
  return (x->x > y->x) - (x->x < y->x);
}

/* Relinks the uses of node v in increasing context order (contexts are
 * numbered as found, so the order of the code does not depend on hashing).
 * The uses are sorted in a copy, each keeping its index in `next`. */
static void sort_uses(lw *L, fhjit_value v) {
  int32_t k = 0;
  for (int32_t u = L->first_use[v]; u >= 0; u = L->use[u].next) k++;
  if (k < 2) return;
  lw_use *tmp = malloc(sizeof *tmp * (size_t)k);
  if (!tmp) return (void)oom(L);
  k = 0;
  for (int32_t u = L->first_use[v]; u >= 0; u = L->use[u].next)
    tmp[k++] = (lw_use){.x = L->use[u].x, .next = u};
  qsort(tmp, (size_t)k, sizeof *tmp, by_ctx);
  L->first_use[v] = tmp[0].next;
  for (int32_t j = 0; j < k; j++) L->use[tmp[j].next].next = j + 1 < k ? tmp[j + 1].next : -1;
  free(tmp);
}

/* The reverse pass marks what each node is needed for (its users have
 * larger ids, so all its uses are known when it is reached). */
static void mark_body(lw *L) {
  fhjit_graph *g = L->g;
  for (int32_t r = 0; r < g->nresults; r++) {
    fhjit_value v = g->results[r].value;
    for (int c = 0; c < nc_of(&g->nodes[v]); c++)
      if (L->eval_comp < 0 || (r == L->eval_result && c == L->eval_comp)) need(L, 0, v, c);
  }
  for (fhjit_value v = g->nnodes - 1; v >= 0 && !L->st; v--) {
    sort_uses(L, v);
    for (int32_t u = L->first_use[v]; u >= 0 && !L->st; u = L->use[u].next)
      for (int c = 0; c < 3; c++)
        if (L->use[u].need & (1u << c)) mark_operands(L, L->use[u].x, v, c);
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
 * past N (emit_automorphism's). */
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
  resolve(L, src, comp, L->row64, &ln, &a);
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
  LLVMValueRef q = get_q(L);
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
static void emit_body(lw *L) {
  fhjit_graph *g = L->g;
  if ((L->st = lw_max_values(g, &L->max_values))) return;
  L->first_use = malloc(sizeof *L->first_use * (size_t)(g->nnodes ? g->nnodes : 1));
  if (!L->first_use) return (void)oom(L);
  for (fhjit_value v = 0; v < g->nnodes; v++) L->first_use[v] = -1;
  if (add_ctx(L, 1, L->p->n) != 0) return;
  mark_body(L);
  if (L->st) return;
  L->val = malloc(sizeof *L->val * (size_t)(L->nuse ? L->nuse : 1) * 3 * LW_VMAX);
  if (!L->val) return (void)oom(L);
  for (int x = 0; x < L->nctx; x++) index_ctx(L, &L->ctx[x]);
  emit_stage(L);
  for (fhjit_value v = 0; v < g->nnodes; v++)
    for (int32_t u = L->first_use[v]; u >= 0; u = L->use[u].next)
      for (int c = 0; c < 3; c++)
        if (L->use[u].need & (1u << c)) emit_value(L, L->use[u].x, v, c);
  if (L->st || L->eval_comp >= 0) return;
  store_results(L);
}

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
  decompose(L, LLVMGetParam(fn, (unsigned)n));
  emit_body(L);
  if (L->eval_comp < 0) {
    LLVMBuildRetVoid(L->b);
  } else {
    fhjit_value v = g->results[L->eval_result].value;
    int c = nc_of(&g->nodes[v]) > 1 ? L->eval_comp : 0;
    LLVMValueRef r = LLVMGetUndef(ret);
    if (!L->st && V == 1) r = slot(L, 0, v, c)[0];
    for (int l = 0; !L->st && V > 1 && l < V; l++)
      r = LLVMBuildInsertElement(L->b, r, slot(L, 0, v, c)[l], LLVMConstInt(L->i32, (uint64_t)l, 0), "");
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
