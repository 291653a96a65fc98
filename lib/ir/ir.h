/* ir.h: internal representation of fhjit graphs (prefix ir_), shared by the
 * builder, binder, text format, interpreter and lowering. A graph is a flat
 * array of nodes in SSA order: every operand id is smaller than its user's. */
#ifndef FHJIT_IR_H
#define FHJIT_IR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "fhjit/fhjit.h"

typedef unsigned __int128 ir_u128;

/* ------------------------------------------------------------------ arena */

/* Bump allocator tied to one unit of work (a graph, a compilation). */
typedef struct ir_arena_chunk ir_arena_chunk;
typedef struct ir_arena {
  ir_arena_chunk *head;
} ir_arena;

void ir_arena_init(ir_arena *a);
void ir_arena_free(ir_arena *a);
void *ir_alloc(ir_arena *a, size_t size); /* zeroed, 16-aligned; NULL on OOM */
char *ir_strdup(ir_arena *a, const char *s);
char *ir_strndup(ir_arena *a, const char *s, size_t n);

/* Growable text buffer (malloc-backed), for printers and messages. */
typedef struct ir_buf {
  char *data;
  size_t len, cap;
  int failed; /* an allocation failed: contents are truncated */
} ir_buf;

void ir_buf_printf(ir_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ir_buf_vprintf(ir_buf *b, const char *fmt, va_list ap);
void ir_buf_put(ir_buf *b, const char *s, size_t n);
void ir_buf_free(ir_buf *b);

/* ---------------------------------------------------------------- context */

struct fhjit_context {
  fhjit_status status;
  char *message; /* malloc'd; "" when none */
  fhjit_graph *graphs; /* owned graphs, a doubly linked list */
  void *runtime; /* lib/runtime state (CUDA), owned and freed there */
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
  IR_INPUT = 0,
  IR_ADD,
  IR_SUB,
  IR_NEG,
  IR_ADD_LAZY,
  IR_MUL,
  IR_TO_MONT,
  IR_FROM_MONT,
  IR_MUL_PLAIN,
  IR_ADD_PLAIN,
  IR_MUL_COMPRESSED, /* attr[0] = fhjit_compression */
  IR_ADD_COMPRESSED, /* attr[0] = fhjit_compression, attr[1] = fhjit_domain */
  IR_KS_DIGIT_PRODUCT, /* attr[0] = digit, attr[1] = row_start */
  IR_EXTRACT,        /* attr[0] = component */
  IR_PACK,
  IR_NTT,            /* attr[0] = fhjit_ntt_kind; args: value, twiddle table */
  IR_NUM_OPS
} ir_op;

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
  ir_arena arena;
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

/* Checks the buffers of a host-side run (fhjit_interpret, fhjit_run_host):
 * the graph is bound, the table and every input and result pointer given.
 * `fn` names the public call in the message. */
fhjit_status ir_check_run_args(fhjit_graph *g, const char *fn, const void *params,
                               const void *const *inputs, void *const *results);

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
