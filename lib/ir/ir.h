/* ir.h: internal representation of fhjit graphs (prefix ir_), shared by the
 * builder, binder, text format, interpreter and lowering. A graph is a flat
 * array of nodes in SSA order: every operand id is smaller than its user's. */
#ifndef FHJIT_IR_H
#define FHJIT_IR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "fhjit/fhjit.h"
#include "support/support.h"

typedef unsigned __int128 ir_u128;

/* ---------------------------------------------------------------- context */

struct fhjit_context {
  sp_err err;          /* the last error: status and message */
  fhjit_graph *graphs; /* owned graphs, a doubly linked list */
  /* lib/runtime state (CUDA), owned there; the runtime sets the hook that
   * fhjit_context_destroy calls to free it (the IR never calls upward). */
  void *runtime;
  void (*release_runtime)(fhjit_context *ctx);
};

/* Records an error on the context and returns `status`. */
fhjit_status ir_error(fhjit_context *ctx, fhjit_status status,
                      const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
fhjit_status ir_verror(fhjit_context *ctx, fhjit_status status,
                       const char *fmt, va_list ap);

/* Source position in .fh text; line 0 means "not from text". */
typedef struct ir_loc {
  int32_t line, col;
} ir_loc;

/* ------------------------------------------------------------------ nodes */

typedef enum ir_op {
#define IR_OP(id, ...) IR_##id,
#include "ir/ops.def"
#undef IR_OP
  IR_NUM_OPS
} ir_op;
/* Attributes, per op: IR_MUL_COMPRESSED attr[0] = fhjit_compression;
 * IR_ADD_COMPRESSED attr[0] = fhjit_compression, attr[1] = fhjit_domain;
 * IR_KS_DIGIT_PRODUCT attr[0] = digit, attr[1] = row_start; IR_EXTRACT
 * attr[0] = component; IR_NTT attr[0] = fhjit_ntt_kind (args: value,
 * twiddle table). */

/* How an op executes and fuses (ops.def explains each). */
typedef enum ir_op_class {
  IR_CLASS_INPUT,
  IR_CLASS_POINTWISE,
  IR_CLASS_VIEW,
  IR_CLASS_ANCHOR
} ir_op_class;

/* Text clauses after an operation or input: name(...). */
typedef enum ir_clause {
  IR_CL_LAYOUT = 1 << 0,    /* layout(cyclic|contiguous|strided_sparse): attr[0] */
  IR_CL_IMPLICIT = 1 << 1,  /* implicit(%v): args[2] */
  IR_CL_DOMAIN = 1 << 2,    /* domain(coef|ntt): attr[1] */
  IR_CL_DIGIT = 1 << 3,     /* digit(N): attr[0] */
  IR_CL_ROW_START = 1 << 4, /* row_start(N): attr[1] */
  IR_CL_STRIDES = 1 << 5,   /* inputs: strides(s, ...) */
  IR_CL_OFFSET = 1 << 6,    /* inputs: offset(N) */
  IR_CL_MODE = 1 << 7,      /* mode(std|mont): the NTT's coefficient-side form */
  IR_CL_COMPONENT = 1 << 8  /* %v[k]: attr[0] (bracket syntax, not a clause word) */
} ir_clause;

enum {
  IR_F_COMMUTATIVE = 1 << 0,
  IR_F_COMPONENTWISE = 1 << 1,
  IR_F_PLAIN_OPERAND = 1 << 2,
  IR_F_REMAPS_INDEX = 1 << 3
};

/* What the parser hands a builder entry. */
typedef struct ir_op_args {
  const char *mnemonic; /* as written (ntt_fwd / ntt_inv choose the NTT's direction) */
  const fhjit_value *args; /* as many as written (the builder checks the count) */
  int32_t nargs;
  fhjit_compression layout;
  fhjit_value implicit;
  fhjit_domain domain;
  fhjit_form mode;
  int64_t digit, row_start, component;
} ir_op_args;
typedef fhjit_value (*ir_build_fn)(fhjit_graph *g, const ir_op_args *a);

typedef struct ir_op_info {
  const char *mnemonic;
  int arity; /* -1: 2 or 3 */
  ir_op_class cls;
  unsigned clauses, required;
  unsigned flags;
  ir_build_fn build;
} ir_op_info;

/* The row of ops.def for `op` (op < IR_NUM_OPS). */
ir_op ir_op_by_mnemonic(const char *s, size_t len); /* IR_NUM_OPS: none */
const char *ir_clause_name(ir_clause c);             /* its text keyword */
const char *ir_clause_hint(ir_clause c);             /* what goes in its (...) */
const ir_op_info *ir_op_info_of(ir_op op);
static inline ir_op_class ir_op_class_of(ir_op op) { return ir_op_info_of(op)->cls; }
/* Pointwise or view: fuses anywhere, element-local (in place allowed). */
static inline int ir_op_is_elementwise(ir_op op) {
  ir_op_class c = ir_op_class_of(op);
  return c == IR_CLASS_POINTWISE || c == IR_CLASS_VIEW;
}

#define IR_MAX_ARGS 3

typedef struct ir_node {
  ir_op op;
  int32_t nargs;
  fhjit_value args[IR_MAX_ARGS]; /* compressed ops: ct, pt[, implicit] */
  int64_t attr[2];
  fhjit_type type; /* declared (inputs) or inferred; concrete once bound */
  const char *name; /* arena string, unique in the graph */
  ir_loc loc;
  /* IR_INPUT only */
  fhjit_type decl;     /* as declared; `type` holds the bound extents */
  int32_t input_index;
  int has_layout;      /* a layout was given (text strides or bind_input) */
  fhjit_layout layout; /* valid when has_layout, or once bound */
} ir_node;

typedef struct ir_output {
  fhjit_value value;
  const char *name;
  ir_loc loc;
  /* set by binding */
  int32_t is_input_alias;
  int32_t source;    /* input index or result index */
  int32_t component; /* -1 = whole */
} ir_output;

typedef struct ir_result {
  fhjit_value value; /* the materialised value */
  fhjit_type type;   /* dense [C, *batch, rows, n] */
} ir_result;

struct fhjit_graph {
  fhjit_context *ctx;
  fhjit_graph *prev, *next; /* in ctx->graphs */
  sp_arena arena;
  const char *name;
  fhjit_radix radix;
  int32_t nmoduli;
  uint64_t *moduli; /* arena */

  ir_node *nodes; /* malloc'd vector */
  int32_t nnodes, nodes_cap;
  /* Node ids by name (builder.c: open addressing, -1 empty; a slot whose
   * node was renamed no longer matches and is probed past). name_cap 0
   * with name_index_off set: the index could not grow, names are found by
   * a scan. */
  int32_t *name_index; /* malloc'd [name_cap] */
  int32_t name_cap, name_used;
  int name_index_off;
  fhjit_value *inputs; /* malloc'd vector of node ids */
  int32_t ninputs, inputs_cap;
  ir_output *outputs; /* malloc'd vector */
  int32_t noutputs, outputs_cap;

  /* Binding */
  int bound;
  ir_result *results; /* malloc'd, nresults */
  int32_t nresults;
  int32_t *result_of; /* malloc'd [nnodes]: result index of a node or -1 */
  /* fhjit_graph_hash, computed once by fhjit_bind (launches look kernels up
   * by it at every call); hash_valid is cleared with the binding. */
  int hash_valid;
  uint64_t hash[2];
  int hash_live_ntt; /* a live NTT: FHJIT_NTT_PLAN is mixed in at each call */

  /* Diagnostics for graphs parsed from text: errors at a node's loc show
   * file:line:col, the source line and a caret. */
  const char *filename; /* arena */
  const char *source;   /* arena copy of the text, NUL-terminated */
  ir_loc cur_loc;       /* loc given to nodes the builder creates now */
  ir_loc loc;           /* the graph's '{' (whole-graph errors); line 0 if built */

  /* Text handed out by print/emit (malloc'd, freed on destroy). */
  char *printed, *printed_dot, *emitted;

  /* Compiled state owned by lib/lower (host JIT), freed through the hook. */
  void *compiled;
  void (*free_compiled)(void *);
};

/* Errors about a node or an output: prefixed with its location when the
 * graph came from text ("file:line:col: error: ...\n  line\n  ^"), else with
 * the graph name and value name. */
fhjit_status ir_error_at(fhjit_graph *g, ir_loc loc, fhjit_status status,
                         const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline ir_node *ir_node_of(const fhjit_graph *g, fhjit_value v) {
  return &g->nodes[v];
}
int ir_valid_value(const fhjit_graph *g, fhjit_value v);
const char *ir_op_name(ir_op op); /* the text-format mnemonic */
const char *ir_compression_name(fhjit_compression c);
const char *ir_domain_name(fhjit_domain d); /* "coef", "ntt", "any" */
const char *ir_form_name(fhjit_form f);     /* "std", "mont", "any" */
const char *ir_radix_name(fhjit_radix r);   /* "r32", "r62" */
/* NULL when a type's kind, component count, batch rank and domain facts
 * are well formed, else the rule it breaks (builder.c). */
const char *ir_type_structure_problem(const fhjit_type *t);

/* Checks the buffers of a host-side run (fhjit_interpret, fhjit_run_host):
 * the graph is bound, the table and every input and result pointer given.
 * `fn` names the public call in the message. */
fhjit_status ir_check_run_args(fhjit_graph *g, const char *fn, const void *params,
                               const void *const *inputs, void *const *results);

/* Why q cannot carry a negacyclic NTT of length n (a power of two >= 1):
 * "not 1 mod 2N = ... (q mod 2N = ...)" or "not prime", written into buf;
 * NULL when q is a prime = 1 mod 2N. One rule for bind, the interpreter and
 * the host helpers of rns.c (fhjit_check_modulus, fhjit_param_table with
 * ntt, fhjit_twiddle_tables, fhjit_ntt_psi). */
const char *ir_ntt_modulus_problem(uint64_t q, int64_t n, char *buf, size_t size);

/* Marks the graph unbound and drops derived state (after any change). */
void ir_unbind(fhjit_graph *g);
/* Computes the bound graph's hash into g->hash (hash.c); on failure (out of
 * memory) hash_valid stays 0 and fhjit_graph_hash computes it on demand. */
void ir_cache_hash(fhjit_graph *g);
/* Drops compiled state (host JIT, emitted text). */
void ir_drop_compiled(fhjit_graph *g);

/* ------------------------------------------------------------ arithmetic */

/* Radix facts. */
static inline int ir_word_bits(fhjit_radix r) { return r == FHJIT_R32 ? 32 : 62; }
static inline size_t ir_word_size(fhjit_radix r) { return r == FHJIT_R32 ? 4 : 8; }
/* Exclusive upper bound of a modulus: 2^30 or 2^60. */
static inline uint64_t ir_modulus_limit(fhjit_radix r) {
  return r == FHJIT_R32 ? (UINT64_C(1) << 30) : (UINT64_C(1) << 60);
}

/* Element offset of index (c, batch[], row, i) in a layout. */
static inline int64_t ir_layout_offset(const fhjit_layout *l, int nbatch,
                                       int64_t c, const int64_t *batch,
                                       int64_t row, int64_t i) {
  int64_t off = l->offset + c * l->comp_stride + row * l->row_stride +
                i * l->index_stride;
  for (int a = 0; a < nbatch; a++) off += batch[a] * l->batch_stride[a];
  return off;
}

#endif
