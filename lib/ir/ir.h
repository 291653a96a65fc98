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

/* Tuning options of a context (fhjit_context_set_option). Each is either
 * set explicitly on the context or, when not, taken from its environment
 * variable at every read (ir_option): the lowering and the cache keys read
 * them only through ir_option, never getenv. The values are validated by
 * the setter (lib/lower/options.c, which knows their syntax). */
typedef enum ir_opt {
  IR_OPT_NTT_PLAN,   /* "ntt_plan", FHJIT_NTT_PLAN: NTT schedule keys */
  IR_OPT_PW_PLAN,    /* "pw_plan", FHJIT_PW_PLAN: pointwise V, U, T */
  IR_OPT_MAX_VALUES, /* "max_values", FHJIT_MAX_VALUES: the compile bound */
  IR_OPT_CACHE,      /* "cache", FHJIT_CACHE: "0", "off", "no", "false": no disk cache */
  IR_OPT_CACHE_DIR,  /* "cache_dir", FHJIT_CACHE_DIR: the disk cache's directory */
  IR_OPT_BCONV_PLAN, /* "bconv_plan", FHJIT_BCONV_PLAN: conversion kernels' V, T, S, U */
  IR_OPT_NTT_SCHEDULE, /* "ntt_schedule", FHJIT_NTT_SCHEDULE: auto, two_kernel, cluster */
  IR_OPT_HOST_PIPELINE, /* "host_pipeline", FHJIT_HOST_PIPELINE: lean, gpu */
  IR_NUM_OPTS
} ir_opt;

typedef struct ir_options {
  char *value[IR_NUM_OPTS]; /* malloc'd; meaningful where set[] */
  unsigned char set[IR_NUM_OPTS];
} ir_options;

struct fhjit_context {
  sp_err err;          /* the last error: status and message */
  ir_options opts;     /* tuning options (ir_option) */
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

/* The option's value: the context's own when set (NULL or "" there: the
 * default), else its environment variable now (also with ctx NULL). */
const char *ir_option(const fhjit_context *ctx, ir_opt o);
/* What messages call it: "ntt_plan" when set on the context, else
 * "FHJIT_NTT_PLAN". */
const char *ir_option_label(const fhjit_context *ctx, ir_opt o);
/* The public name ("ntt_plan") and variable ("FHJIT_NTT_PLAN"); -1 / NULL
 * for an unknown name or option. */
int ir_option_by_name(const char *name);
const char *ir_option_name(ir_opt o);
const char *ir_option_env(ir_opt o);
/* Sets (value copied) or, with value NULL, unsets the context's own value
 * (back to the environment). FHJIT_ERR_MEMORY when the copy fails. No
 * validation: that is the caller's (lib/lower/options.c). */
fhjit_status ir_option_set(fhjit_context *ctx, ir_opt o, const char *value);
/* dst's options become src's (sub-graphs' contexts of one compile). */
fhjit_status ir_options_copy(fhjit_context *dst, const fhjit_context *src);
/* A fingerprint of the options that change compiled code or refuse a
 * compile (every option but cache and cache_dir), as ctx reads them now:
 * compiled state made under another one is stale. */
uint64_t ir_options_fingerprint(const fhjit_context *ctx);

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
 * twiddle table). Section 7 (docs/section7.md): IR_ROWS attr[0] = start,
 * attr[1] = count; IR_AUTOMORPHISM attr[0] = k; IR_MODUP attr[0] = digit;
 * IR_BCONV's target basis is the node's decl_basis. */

/* How an op executes and fuses (ops.def explains each). */
typedef enum ir_op_class {
  IR_CLASS_INPUT,
  IR_CLASS_POINTWISE,
  IR_CLASS_VIEW,
  IR_CLASS_ANCHOR,
  IR_CLASS_ROWS,    /* section 7 row views (rows, concat): re-index rows */
  IR_CLASS_PERMUTE, /* section 7 automorphism: re-indexes coefficients */
  IR_CLASS_MIXING,  /* section 7 limb mixing (bconv, rescale, modup, moddown) */
  IR_CLASS_COMPOSITE /* a text macro of ops.def's IR_COMPOSITE rows: never a node */
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
  IR_CL_START = 1 << 8,     /* start(N): attr[0] (rows) */
  IR_CL_COUNT = 1 << 9,     /* count(N): attr[1] (rows) */
  IR_CL_GALOIS = 1 << 10,   /* galois(k): attr[0] (automorphism) */
  IR_CL_BASIS = 1 << 11,    /* basis(p, ...): decl_basis (inputs, bconv) */
  IR_CL_COMPONENT = 1 << 15 /* %v[k]: attr[0] (bracket syntax, not a clause word) */
} ir_clause;

enum {
  IR_F_COMMUTATIVE = 1 << 0,
  IR_F_COMPONENTWISE = 1 << 1,
  IR_F_PLAIN_OPERAND = 1 << 2,
  IR_F_REMAPS_INDEX = 1 << 3,
  IR_F_RESULT_PER_GALOIS = 1 << 4 /* composites: galois(k, ...) takes a list and the
                                   * statement defines one value per element */
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
  int64_t start, count, galois;
  const int64_t *galois_list; /* galois(k, ...): every element (galois: the first) */
  int32_t ngalois;
  const int32_t *basis; /* basis(...) */
  int32_t nbasis;
  const char *name; /* the value the text defines (composites name what they add
                     * after it); NULL: not from text */
  /* IR_F_RESULT_PER_GALOIS: the statement's names (names[0] == name), one
   * per Galois element, and room for as many results, which the builder
   * fills (its return value is the last) */
  const char *const *names;
  int32_t nnames;
  fhjit_value *results;
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
/* The IR_COMPOSITE row spelled s (class IR_CLASS_COMPOSITE), or NULL. */
const ir_op_info *ir_composite_by_mnemonic(const char *s, size_t len);
static inline ir_op_class ir_op_class_of(ir_op op) { return ir_op_info_of(op)->cls; }
/* Pointwise or view: fuses anywhere, element-local (in place allowed). */
static inline int ir_op_is_elementwise(ir_op op) {
  ir_op_class c = ir_op_class_of(op);
  return c == IR_CLASS_POINTWISE || c == IR_CLASS_VIEW;
}

#define IR_MAX_ARGS 4

typedef struct ir_node {
  ir_op op;
  int32_t nargs;
  fhjit_value args[IR_MAX_ARGS]; /* compressed ops: ct, pt[, implicit] */
  int64_t attr[2];
  /* Section 7 bases (basis.c). decl_basis: an input's stated basis or
   * bconv's target (arena; NULL: none stated). basis: the bound basis,
   * malloc'd by fhjit_bind and freed by ir_unbind; NULL means the default
   * [0, rows), so graphs without bases are exactly what they were. */
  const int32_t *decl_basis;
  int32_t decl_nbasis;
  int32_t *basis;
  fhjit_type type; /* declared (inputs) or inferred; concrete once bound */
  const char *name; /* arena string, unique in the graph */
  ir_loc loc;
  /* IR_INPUT only */
  fhjit_type decl;     /* as declared; `type` holds the bound extents */
  int32_t input_index;
  int has_layout;      /* a layout was given (text strides or bind_input) */
  fhjit_layout layout; /* valid when has_layout, or once bound */
} ir_node;

/* Copies op node n of graph src (any op of ops.def but an input) into dst
 * with operands `args` (dst's values; as many as n has, an implicit
 * operand included): its row's builder entry with n's clauses, so the copy
 * is checked as a new op is: a bad one is FHJIT_NO_VALUE with the
 * builder's error recorded, located at n in src's text (src NULL or
 * without text: "error: graph @dst: ..."). Its type is inferred in dst. */
fhjit_value ir_clone_op(fhjit_graph *dst, const fhjit_graph *src, const ir_node *n,
                        const fhjit_value *args);

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
  uint64_t *moduli; /* arena: the chain of SPEC section 7 */
  int32_t nspecial; /* K: the chain's last K positions are P (0: none) */
  int32_t alpha;    /* digit size of the key's partition of Q_L (0: unset) */

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
  /* Output indices by name, the same way (outputs are only appended):
   * output_cap 0 with output_index_off set: found by a scan. */
  int32_t *output_index; /* malloc'd [output_cap] */
  int32_t output_cap;
  int output_index_off;

  /* Binding */
  int bound;
  ir_result *results; /* malloc'd, nresults of results_cap */
  int32_t nresults, results_cap;
  int32_t *result_of; /* malloc'd [nnodes]: result index of a node or -1 */
  /* Some node holds a malloc'd basis: ir_unbind (run by every builder
   * call) then walks the nodes to free them, and otherwise does not, so a
   * graph of n builder calls builds in O(n), not O(n^2). */
  int bases_live;
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

  /* Compiled state owned by lib/lower (host JIT), freed through the hook;
   * compiled_opts: ir_options_fingerprint when it was made. */
  void *compiled;
  void (*free_compiled)(void *);
  uint64_t compiled_opts;
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
/* The largest row stride (words of `word` bytes) of an 8-row parameter
 * table of `columns` columns whose last word a pointer can address
 * (SPEC 2: row r at table + r * pstride): a larger stride is no real
 * buffer's, and its offsets would overflow. */
int64_t ir_pstride_max(int64_t columns, size_t word);
/* Checks a host-side run's parameter-table stride against the columns the
 * graph reads: at least `columns`, at most ir_pstride_max. */
fhjit_status ir_check_pstride(fhjit_graph *g, const char *fn, int64_t pstride, int64_t columns);

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

/* ------------------------------------------------------------ bases (basis.c) */

/* The builder's operand check (kind, validity; error recorded) and node
 * append (builder.c), for the section 7 builders of build_mix.c. */
int ir_check_operand(fhjit_graph *g, const char *op, fhjit_value v, const char *role,
                     fhjit_kind kind);
fhjit_value ir_push_node(fhjit_graph *g, const ir_node *proto);
/* The composite builders (build_ckks.c) with the prefix of the names they
 * give the values and table inputs they add ("k": k.modup0, k.modup0.table,
 * ...; the result is named `prefix` itself); NULL: an automatic prefix
 * ("ks12", from the first id they add). A prefix some value already uses
 * gets a suffix _1, _2, ... */
fhjit_value ir_keyswitch(fhjit_graph *g, fhjit_value d, fhjit_value key, fhjit_value fwd,
                         fhjit_value inv, const char *prefix);
fhjit_value ir_ckks_relinearize(fhjit_graph *g, fhjit_value ct3, fhjit_value rlk,
                                fhjit_value fwd, fhjit_value inv, const char *prefix);
fhjit_value ir_ckks_rescale(fhjit_graph *g, fhjit_value ct, fhjit_value fwd, fhjit_value inv,
                            const char *prefix);
fhjit_value ir_ckks_mul_relin_rescale(fhjit_graph *g, fhjit_value a, fhjit_value b,
                                      fhjit_value rlk, fhjit_value fwd, fhjit_value inv,
                                      const char *prefix);
fhjit_value ir_ckks_rotate(fhjit_graph *g, fhjit_value ct, int64_t k, fhjit_value gk,
                           fhjit_value fwd, fhjit_value inv, const char *prefix);
/* ckks_rotate_hoisted's text form (ops.def): its operands, Galois elements
 * and names from a; the results into a->results, the last returned. */
fhjit_value ir_ckks_rotate_hoisted_text(fhjit_graph *g, const ir_op_args *a);
/* Drops the nodes from id nnodes on and the inputs from index ninputs on
 * (nodes appended by a composite builder that failed part-way, which must
 * leave the graph as it was). Outputs must not name dropped nodes. A graph
 * that was bound before (was_bound) is bound again, the failure's message
 * kept as the context's last error. */
void ir_truncate(fhjit_graph *g, int32_t nnodes, int32_t ninputs, int was_bound);
/* Extents of a section 7 node from its operands' (bind_mix.c, for bind.c). */
fhjit_status ir_infer_mixing(fhjit_graph *g, ir_node *n, fhjit_type *t);

/* Chain position of row r of value v (bound graph): basis[r] or r. */
static inline int64_t ir_pos(const fhjit_graph *g, fhjit_value v, int64_t r) {
  const int32_t *b = g->nodes[v].basis;
  return b ? b[r] : r;
}
/* The most positions a basis holds where the graph states no moduli
 * (where it does: its moduli); far above any RNS chain's length. */
#define IR_BASIS_MAX 4096
/* Computes node n's bound basis from its operands' (fhjit_bind, after its
 * extents): checks the section 7 rules, each failure naming both bases. */
fhjit_status ir_bind_basis(fhjit_graph *g, ir_node *n);
/* 1 when bound values a and b have equal rows on equal chain positions. */
int ir_same_basis(const fhjit_graph *g, fhjit_value a, fhjit_value b);
/* Frees every bound basis (ir_unbind). */
void ir_free_bases(fhjit_graph *g);
/* "[0, 1, 3]" of a basis (NULL: [0, rows)) into buf. */
const char *ir_basis_text(char *buf, size_t size, const int32_t *b, int64_t rows);
/* The digit partition of section 7: group j of Q_L is chain positions
 * [first, first + count); 0 when the graph states no digits or j is out of
 * range. Q_L is [0, nmoduli - nspecial). */
int ir_digit_group(const fhjit_graph *g, int64_t j, int32_t *first, int32_t *count);
int32_t ir_num_digits(const fhjit_graph *g);
/* The parameter-table columns a bound graph's kernels may read: the most
 * rows of a result, and one past every chain position of a live value
 * (ir_live_nodes) on a stated basis (pstride must be at least this). */
int64_t ir_param_columns(const fhjit_graph *g);
/* The nodes the graph hash covers (hash.c), malloc'd [nnodes + 1], 1 for
 * live ones: the inputs and what the outputs depend on; NULL when out of
 * memory. A kernel's facts are drawn from these alone, since a cached
 * kernel serves every graph of its hash, whatever its dead values. */
unsigned char *ir_live_nodes(const fhjit_graph *g);

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
