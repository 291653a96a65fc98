/* builder.c: graph creation and the builder API. Each op checks what needs no
 * extents (operand kinds, component counts, domain facts) and infers its
 * result type; extents are checked and fixed later by bind.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* --------------------------------------------------------------- names */

const char *ir_compression_name(fhjit_compression c) {
  switch (c) {
  case FHJIT_CYCLIC: return "cyclic";
  case FHJIT_CONTIGUOUS: return "contiguous";
  case FHJIT_STRIDED_SPARSE: return "strided_sparse";
  }
  return "?";
}

const char *ir_domain_name(fhjit_domain d) {
  return d == FHJIT_DOMAIN_COEF ? "coef" : d == FHJIT_DOMAIN_NTT ? "ntt" : "any";
}

const char *ir_form_name(fhjit_form f) {
  return f == FHJIT_FORM_STD ? "std" : f == FHJIT_FORM_MONT ? "mont" : "any";
}

const char *ir_radix_name(fhjit_radix r) { return r == FHJIT_R32 ? "r32" : "r62"; }

/* --------------------------------------------------------------- graphs */

fhjit_graph *fhjit_graph_create(fhjit_context *ctx, const char *name,
                                fhjit_radix radix) {
  if (!ctx) return NULL;
  if (radix != FHJIT_R32 && radix != FHJIT_R62) {
    ir_error(ctx, FHJIT_ERR_ARGUMENT,
             "fhjit_graph_create: radix %d is neither FHJIT_R32 nor FHJIT_R62",
             (int)radix);
    return NULL;
  }
  fhjit_graph *g = calloc(1, sizeof *g);
  if (!g) {
    ir_error(ctx, FHJIT_ERR_MEMORY, "fhjit_graph_create: out of memory");
    return NULL;
  }
  g->ctx = ctx;
  sp_arena_init(&g->arena);
  g->radix = radix;
  g->name = sp_strdup(&g->arena, name && *name ? name : "graph");
  if (!g->name) {
    free(g);
    ir_error(ctx, FHJIT_ERR_MEMORY, "fhjit_graph_create: out of memory");
    return NULL;
  }
  g->next = ctx->graphs;
  if (ctx->graphs) ctx->graphs->prev = g;
  ctx->graphs = g;
  return g;
}

void ir_drop_compiled(fhjit_graph *g) {
  if (g->compiled && g->free_compiled) g->free_compiled(g->compiled);
  g->compiled = NULL;
  g->free_compiled = NULL;
  free(g->emitted);
  g->emitted = NULL;
}

void ir_unbind(fhjit_graph *g) {
  ir_free_bases(g);
  g->bound = 0;
  g->hash_valid = 0;
  free(g->results);
  g->results = NULL;
  g->nresults = g->results_cap = 0;
  free(g->result_of);
  g->result_of = NULL;
  ir_drop_compiled(g);
}

void fhjit_graph_destroy(fhjit_graph *g) {
  if (!g) return;
  ir_unbind(g);
  if (g->prev) g->prev->next = g->next;
  else g->ctx->graphs = g->next;
  if (g->next) g->next->prev = g->prev;
  free(g->nodes);
  free(g->name_index);
  free(g->output_index);
  free(g->inputs);
  free(g->outputs);
  free(g->printed);
  free(g->printed_dot);
  sp_arena_free(&g->arena);
  free(g);
}

fhjit_context *fhjit_graph_context(const fhjit_graph *g) { return g ? g->ctx : NULL; }
const char *fhjit_graph_name(const fhjit_graph *g) { return g ? g->name : NULL; }
fhjit_radix fhjit_graph_radix(const fhjit_graph *g) { return g ? g->radix : FHJIT_R32; }

/* Binds g again on nodes and a chain it was bound on before, so that
 * only out of memory can fail (the graph then stays unbound), keeping the
 * context's last error: the caller's own failure stays what its caller
 * reads. Returns a copy of that message for the caller (free it; NULL
 * when out of memory). */
static char *rebind_keep_error(fhjit_graph *g) {
  fhjit_status st = fhjit_last_status(g->ctx);
  char *msg = strdup(fhjit_last_error(g->ctx));
  fhjit_bind(g);
  if (msg) ir_error(g->ctx, st, "%s", msg);
  return msg;
}

fhjit_status fhjit_graph_set_moduli(fhjit_graph *g, const uint64_t *moduli,
                                    int32_t count) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (count < 0 || (count > 0 && !moduli))
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_graph_set_moduli: %s", count < 0 ? "negative count"
                                                           : "null moduli");
  for (int32_t i = 0; i < count; i++) {
    fhjit_status st = fhjit_check_modulus(g->ctx, g->radix, moduli[i], 0);
    if (st) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", fhjit_last_error(g->ctx));
      return ir_error(g->ctx, st, "graph @%s: modulus #%d: %s", g->name, i, msg);
    }
  }
  /* special(n) and digits(d) were checked against the chain they were set
   * on: a shorter one must still hold them (clear them first) */
  if (g->nspecial && g->nspecial >= count)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "graph @%s: fhjit_graph_set_moduli: %d moduli cannot hold the graph's "
                    "special(%d) (at least one Q modulus beside them); set special to 0 first",
                    g->name, (int)count, (int)g->nspecial);
  if (g->alpha && g->alpha > count - g->nspecial)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "graph @%s: fhjit_graph_set_moduli: %d moduli less special(%d) cannot hold "
                    "the graph's digits(%d); set digits to 0 first",
                    g->name, (int)count, (int)g->nspecial, (int)g->alpha);
  uint64_t *copy = count ? sp_alloc(&g->arena, sizeof *copy * (size_t)count) : NULL;
  if (count && !copy) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "out of memory");
  if (count) memcpy(copy, moduli, sizeof *copy * (size_t)count);
  /* bases, tables and kernels were checked and built on the old chain: a
   * bound graph is bound again on the new one, and keeps the old chain
   * (bound) where it does not bind on it */
  int was_bound = g->bound;
  uint64_t *old = g->moduli;
  int32_t nold = g->nmoduli;
  ir_unbind(g);
  g->moduli = copy;
  g->nmoduli = count;
  if (!was_bound) return FHJIT_OK;
  fhjit_status st = fhjit_bind(g);
  if (st == FHJIT_OK) return FHJIT_OK;
  g->moduli = old;
  g->nmoduli = nold;
  char *msg = rebind_keep_error(g);
  ir_error(g->ctx, st, "graph @%s: fhjit_graph_set_moduli: the graph does not bind on the new "
           "chain (it keeps the old one): %s", g->name, msg ? msg : "");
  free(msg);
  return st;
}

int32_t fhjit_graph_num_moduli(const fhjit_graph *g) { return g ? g->nmoduli : 0; }
const uint64_t *fhjit_graph_moduli(const fhjit_graph *g) { return g ? g->moduli : NULL; }

/* --------------------------------------------------------------- errors */

static void loc_prefix(sp_buf *b, const fhjit_graph *g, ir_loc loc) {
  if (loc.line > 0 && g->filename)
    sp_buf_printf(b, "%s:%d:%d: error: ", g->filename, loc.line, loc.col);
  else
    sp_buf_printf(b, "error: graph @%s: ", g->name);
}

/* The source line of `loc` and a caret under its column. */
static void loc_excerpt(sp_buf *b, const fhjit_graph *g, ir_loc loc) {
  if (loc.line <= 0 || !g->source) return;
  const char *p = g->source;
  for (int32_t l = 1; l < loc.line && *p; p++)
    if (*p == '\n') l++;
  const char *end = strchr(p, '\n');
  size_t len = end ? (size_t)(end - p) : strlen(p);
  sp_buf_put(b, "\n", 1);
  sp_buf_put(b, p, len);
  sp_buf_put(b, "\n", 1);
  for (int32_t c = 1; c < loc.col && (size_t)(c - 1) < len; c++)
    sp_buf_put(b, p[c - 1] == '\t' ? "\t" : " ", 1);
  sp_buf_put(b, "^", 1);
}

fhjit_status ir_error_at(fhjit_graph *g, ir_loc loc, fhjit_status status,
                         const char *fmt, ...) {
  sp_buf b = {0};
  loc_prefix(&b, g, loc);
  va_list ap;
  va_start(ap, fmt);
  sp_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  loc_excerpt(&b, g, loc);
  fhjit_status st = ir_error(g->ctx, status, "%s", b.data ? b.data : "out of memory");
  sp_buf_free(&b);
  return st;
}

int ir_valid_value(const fhjit_graph *g, fhjit_value v) {
  return g && v >= 0 && v < g->nnodes;
}

/* ----------------------------------------------------------------- nodes */

/* Names are checked for uniqueness at every node, so a graph of n values
 * would cost n^2 string compares with a scan (20,000 values: 3.5 s); the
 * name index makes it linear. */
static size_t name_hash(const char *s) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (; *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
  return (size_t)(h ^ (h >> 29));
}

static void name_index_put(fhjit_graph *g, int32_t id) {
  size_t mask = (size_t)g->name_cap - 1;
  size_t i = name_hash(g->nodes[id].name) & mask;
  while (g->name_index[i] >= 0) i = (i + 1) & mask;
  g->name_index[i] = id;
  g->name_used++;
}

/* Records node id's (new) name; on allocation failure the index is dropped
 * and lookups scan (correct, only slower). */
static void name_index_add(fhjit_graph *g, int32_t id) {
  if (g->name_index_off) return;
  if ((int64_t)(g->name_used + 1) * 2 > g->name_cap) {
    int32_t live = 0;
    for (int32_t i = 0; i < g->nnodes; i++) live += g->nodes[i].name != NULL;
    int64_t cap = 64;
    while ((live + 1) * INT64_C(2) > cap) cap *= 2;
    int32_t *idx = cap <= INT32_MAX ? malloc(sizeof *idx * (size_t)cap) : NULL;
    if (!idx) {
      free(g->name_index);
      g->name_index = NULL;
      g->name_cap = g->name_used = 0;
      g->name_index_off = 1;
      return;
    }
    free(g->name_index);
    g->name_index = idx;
    g->name_cap = (int32_t)cap;
    g->name_used = 0;
    for (int64_t i = 0; i < cap; i++) idx[i] = -1;
    for (int32_t i = 0; i < g->nnodes; i++)
      if (g->nodes[i].name && i != id) name_index_put(g, i);
  }
  name_index_put(g, id);
}

static int name_taken(const fhjit_graph *g, const char *name) {
  if (g->name_index_off) {
    for (int32_t i = 0; i < g->nnodes; i++)
      if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0) return 1;
    return 0;
  }
  if (!g->name_cap) return 0;
  size_t mask = (size_t)g->name_cap - 1;
  for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask) {
    int32_t id = g->name_index[i];
    if (id < 0) return 0;
    if (g->nodes[id].name && strcmp(g->nodes[id].name, name) == 0) return 1;
  }
}

/* Output names are unique as well: fhjit_output looks them up in an index
 * like the value names' (a scan made 100,000 outputs take 13 s). */
static void output_index_put(fhjit_graph *g, int32_t k) {
  size_t mask = (size_t)g->output_cap - 1;
  size_t i = name_hash(g->outputs[k].name) & mask;
  while (g->output_index[i] >= 0) i = (i + 1) & mask;
  g->output_index[i] = k;
}

/* Records output k (the newest); on allocation failure lookups scan. */
static void output_index_add(fhjit_graph *g, int32_t k) {
  if (g->output_index_off) return;
  if ((int64_t)(k + 1) * 2 > g->output_cap) {
    int64_t cap = g->output_cap ? (int64_t)g->output_cap * 2 : 64;
    int32_t *idx = cap <= INT32_MAX ? malloc(sizeof *idx * (size_t)cap) : NULL;
    free(g->output_index);
    g->output_index = idx;
    g->output_cap = idx ? (int32_t)cap : 0;
    if (!idx) {
      g->output_index_off = 1;
      return;
    }
    for (int64_t i = 0; i < cap; i++) idx[i] = -1;
    for (int32_t j = 0; j < k; j++) output_index_put(g, j);
  }
  output_index_put(g, k);
}

static int output_name_taken(const fhjit_graph *g, const char *name) {
  if (g->output_index_off) {
    for (int32_t i = 0; i < g->noutputs; i++)
      if (strcmp(g->outputs[i].name, name) == 0) return 1;
    return 0;
  }
  if (!g->output_cap) return 0;
  size_t mask = (size_t)g->output_cap - 1;
  for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask) {
    int32_t k = g->output_index[i];
    if (k < 0) return 0;
    if (strcmp(g->outputs[k].name, name) == 0) return 1;
  }
}

static int valid_name(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
      return 0;
  return 1;
}

/* Appends a node; returns its id or FHJIT_NO_VALUE (error recorded). */
static fhjit_value push_node(fhjit_graph *g, const ir_node *proto) {
  if (g->nnodes == g->nodes_cap) {
    int32_t cap = g->nodes_cap ? g->nodes_cap * 2 : 32;
    ir_node *n = realloc(g->nodes, sizeof *n * (size_t)cap);
    if (!n) {
      ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
      return FHJIT_NO_VALUE;
    }
    g->nodes = n;
    g->nodes_cap = cap;
  }
  ir_unbind(g);
  fhjit_value id = g->nnodes;
  ir_node *n = &g->nodes[id];
  *n = *proto;
  n->loc = g->cur_loc;
  char auto_name[32];
  snprintf(auto_name, sizeof auto_name, "t%d", (int)id);
  for (int k = 1; name_taken(g, auto_name); k++)
    snprintf(auto_name, sizeof auto_name, "t%d_%d", (int)id, k);
  n->name = sp_strdup(&g->arena, auto_name);
  if (!n->name) {
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
    return FHJIT_NO_VALUE;
  }
  g->nnodes++;
  name_index_add(g, id);
  return id;
}

/* The structural rules of a type (kind, component count, batch rank,
 * domain facts), without its extents: NULL when they hold, else the rule
 * broken. Checked before anything indexes batch[] by nbatch. */
const char *ir_type_structure_problem(const fhjit_type *t) {
  if ((unsigned)t->kind > FHJIT_KIND_TABLE) return "unknown kind";
  if (t->kind == FHJIT_KIND_POLY && (t->comps < 0 || t->comps > 3))
    return "component count must be 0 (none) or 1 to 3";
  if (t->kind == FHJIT_KIND_KEY && t->comps != 2) return "a key table has exactly 2 components";
  if (t->kind == FHJIT_KIND_TWIDDLE && t->comps != 0)
    return "a twiddle table has no component axis";
  if (t->kind == FHJIT_KIND_TABLE && (t->comps != 0 || t->rows != 1))
    return "a constant table has no component axis and one row";
  if (t->nbatch < 0 || t->nbatch > FHJIT_MAX_BATCH) return "batch rank must be between 0 and 4";
  if (t->kind != FHJIT_KIND_POLY && t->nbatch != 0)
    return "only polynomial values have batch axes";
  if ((unsigned)t->domain > FHJIT_DOMAIN_NTT) return "unknown domain";
  if ((unsigned)t->form > FHJIT_FORM_MONT) return "unknown form";
  return NULL;
}

static fhjit_status check_type_decl(fhjit_graph *g, const char *name,
                                    const fhjit_type *t) {
  const char *why = ir_type_structure_problem(t);
  if (!why) {
    for (int a = 0; a < t->nbatch; a++)
      if (t->batch[a] == 0 || t->batch[a] < FHJIT_UNKNOWN) why = "batch extents must be >= 1";
    if (t->rows == 0 || t->rows < FHJIT_UNKNOWN) why = "rows must be >= 1";
    if (t->n == 0 || t->n < FHJIT_UNKNOWN) why = "n must be >= 1";
    if (t->kind == FHJIT_KIND_KEY && (t->digits == 0 || t->digits < FHJIT_UNKNOWN))
      why = "digits must be >= 1";
  }
  if (why)
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE, "input %%%s: %s", name, why);
  return FHJIT_OK;
}

fhjit_value fhjit_input(fhjit_graph *g, const char *name, const fhjit_type *type) {
  if (!g) return FHJIT_NO_VALUE;
  if (!type) {
    ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_input: null type");
    return FHJIT_NO_VALUE;
  }
  if (name && !valid_name(name)) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                "input name '%s' is not made of letters, digits, '_' and '.'", name);
    return FHJIT_NO_VALUE;
  }
  if (name && name_taken(g, name)) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE, "value %%%s is defined twice", name);
    return FHJIT_NO_VALUE;
  }
  if (check_type_decl(g, name ? name : "(unnamed)", type)) return FHJIT_NO_VALUE;
  if (g->ninputs == g->inputs_cap) {
    int32_t cap = g->inputs_cap ? g->inputs_cap * 2 : 8;
    fhjit_value *in = realloc(g->inputs, sizeof *in * (size_t)cap);
    if (!in) {
      ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
      return FHJIT_NO_VALUE;
    }
    g->inputs = in;
    g->inputs_cap = cap;
  }
  ir_node proto = {.op = IR_INPUT, .type = *type, .input_index = g->ninputs};
  for (int a = type->nbatch; a < FHJIT_MAX_BATCH; a++) proto.type.batch[a] = 0;
  if (type->kind != FHJIT_KIND_KEY) proto.type.digits = 0;
  proto.decl = proto.type;
  fhjit_value v = push_node(g, &proto);
  if (v == FHJIT_NO_VALUE) return v;
  g->inputs[g->ninputs++] = v;
  if (name) {
    const char *copy = sp_strdup(&g->arena, name);
    if (!copy) { /* the input stays, under its automatic name */
      ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
      return FHJIT_NO_VALUE;
    }
    g->nodes[v].name = copy;
    name_index_add(g, v);
  }
  return v;
}

/* Operand checks shared by every op. */
static int check_operand(fhjit_graph *g, const char *op, fhjit_value v,
                         const char *role, fhjit_kind kind) {
  if (!ir_valid_value(g, v)) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                "%s: %s operand is not a value of graph @%s (id %d)", op, role,
                g->name, (int)v);
    return 0;
  }
  const ir_node *n = &g->nodes[v];
  if (n->type.kind != kind) {
    static const char *const kinds[] = {"a polynomial value", "a key table",
                                        "a twiddle table", "a constant table"};
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s: %s operand %%%s is %s, expected %s", op, role, n->name,
                kinds[n->type.kind], kinds[kind]);
    return 0;
  }
  return 1;
}

int ir_check_operand(fhjit_graph *g, const char *op, fhjit_value v, const char *role,
                     fhjit_kind kind) {
  return check_operand(g, op, v, role, kind);
}

fhjit_value ir_push_node(fhjit_graph *g, const ir_node *proto) { return push_node(g, proto); }

void ir_truncate(fhjit_graph *g, int32_t nnodes, int32_t ninputs, int was_bound) {
  SP_ASSERT(nnodes <= g->nnodes && ninputs <= g->ninputs);
  if (nnodes == g->nnodes && ninputs == g->ninputs) return;
  ir_unbind(g); /* frees the bases of every node, the dropped ones included */
  g->nnodes = nnodes;
  g->ninputs = ninputs;
  /* the name index holds ids of dropped nodes: rebuilt from the kept ones
   * (name_index_add rebuilds an index of capacity 0, then adds node 0) */
  free(g->name_index);
  g->name_index = NULL;
  g->name_cap = g->name_used = 0;
  if (!g->name_index_off && nnodes > 0) name_index_add(g, 0);
  if (was_bound) free(rebind_keep_error(g)); /* the builder's failure stays */
}

static int64_t merge_extent(int64_t a, int64_t b) {
  return a == FHJIT_UNKNOWN ? b : a;
}

/* Merges the shape of two polynomial operands (extents may be unknown;
 * bind.c does the real checks) and their domain facts. */
static int merge_types(fhjit_graph *g, const char *op, const ir_node *a,
                       const ir_node *b, int merge_comps, fhjit_type *out) {
  const fhjit_type *ta = &a->type, *tb = &b->type;
  *out = *ta;
  if (merge_comps) {
    if (ta->comps > 1 && tb->comps > 1 && ta->comps != tb->comps) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                  "%s: %%%s has %d components and %%%s has %d: component counts "
                  "must be equal or one of them 1 (or none)",
                  op, a->name, ta->comps, b->name, tb->comps);
      return 0;
    }
    out->comps = ta->comps > tb->comps ? ta->comps : tb->comps;
  }
  int nb = ta->nbatch > tb->nbatch ? ta->nbatch : tb->nbatch;
  out->nbatch = nb;
  for (int i = 0; i < nb; i++) { /* right-aligned */
    int ia = i - (nb - ta->nbatch), ib = i - (nb - tb->nbatch);
    int64_t ea = ia >= 0 ? ta->batch[ia] : 1, eb = ib >= 0 ? tb->batch[ib] : 1;
    out->batch[i] = (ea == 1) ? eb : (eb == 1 ? ea : merge_extent(ea, eb));
  }
  out->rows = merge_extent(ta->rows, tb->rows);
  out->n = merge_extent(ta->n, tb->n);
  if (ta->domain && tb->domain && ta->domain != tb->domain) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s: %%%s is in the %s domain and %%%s in the %s domain", op,
                a->name, ir_domain_name(ta->domain), b->name,
                ir_domain_name(tb->domain));
    return 0;
  }
  out->domain = ta->domain ? ta->domain : tb->domain;
  return 1;
}

/* Form of a Montgomery product: REDC(aR * bR) = abR; REDC(aR * b) = ab;
 * a product of two standard values loses a factor R (form unstated). */
static fhjit_form product_form(fhjit_form fa, fhjit_form fb) {
  if (fa == FHJIT_FORM_MONT && fb == FHJIT_FORM_MONT) return FHJIT_FORM_MONT;
  if ((fa == FHJIT_FORM_MONT && fb == FHJIT_FORM_STD) ||
      (fa == FHJIT_FORM_STD && fb == FHJIT_FORM_MONT))
    return FHJIT_FORM_STD;
  return FHJIT_FORM_ANY;
}

static fhjit_value binary(fhjit_graph *g, ir_op op, fhjit_value a, fhjit_value b) {
  if (!g) return FHJIT_NO_VALUE;
  const char *name = ir_op_name(op);
  if (!check_operand(g, name, a, "first", FHJIT_KIND_POLY) ||
      !check_operand(g, name, b, "second", FHJIT_KIND_POLY))
    return FHJIT_NO_VALUE;
  const ir_node *na = &g->nodes[a], *nb = &g->nodes[b];
  ir_node proto = {.op = op, .nargs = 2, .args = {a, b}};
  if (!merge_types(g, name, na, nb, 1, &proto.type)) return FHJIT_NO_VALUE;
  fhjit_form fa = na->type.form, fb = nb->type.form;
  if (op == IR_MUL) {
    proto.type.form = product_form(fa, fb);
  } else {
    if (fa && fb && fa != fb) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                  "%s: %%%s is in %s form and %%%s in %s form", name, na->name,
                  ir_form_name(fa), nb->name, ir_form_name(fb));
      return FHJIT_NO_VALUE;
    }
    proto.type.form = fa ? fa : fb;
  }
  return push_node(g, &proto);
}

fhjit_value fhjit_add(fhjit_graph *g, fhjit_value a, fhjit_value b) { return binary(g, IR_ADD, a, b); }
fhjit_value fhjit_sub(fhjit_graph *g, fhjit_value a, fhjit_value b) { return binary(g, IR_SUB, a, b); }
fhjit_value fhjit_add_lazy(fhjit_graph *g, fhjit_value a, fhjit_value b) { return binary(g, IR_ADD_LAZY, a, b); }
fhjit_value fhjit_mul(fhjit_graph *g, fhjit_value a, fhjit_value b) { return binary(g, IR_MUL, a, b); }

static fhjit_value unary(fhjit_graph *g, ir_op op, fhjit_value a) {
  if (!g) return FHJIT_NO_VALUE;
  if (!check_operand(g, ir_op_name(op), a, "the", FHJIT_KIND_POLY)) return FHJIT_NO_VALUE;
  ir_node proto = {.op = op, .nargs = 1, .args = {a}, .type = g->nodes[a].type};
  if (op == IR_TO_MONT) proto.type.form = FHJIT_FORM_MONT;
  if (op == IR_FROM_MONT) proto.type.form = FHJIT_FORM_STD;
  return push_node(g, &proto);
}

fhjit_value fhjit_neg(fhjit_graph *g, fhjit_value a) { return unary(g, IR_NEG, a); }
fhjit_value fhjit_to_mont(fhjit_graph *g, fhjit_value a) { return unary(g, IR_TO_MONT, a); }
fhjit_value fhjit_from_mont(fhjit_graph *g, fhjit_value a) { return unary(g, IR_FROM_MONT, a); }

/* A plaintext-like operand contributes its component 0 only. */
static fhjit_value plain_op(fhjit_graph *g, ir_op op, fhjit_value ct,
                            fhjit_value pt, int64_t attr0, int64_t attr1,
                            fhjit_value implicit) {
  if (!g) return FHJIT_NO_VALUE;
  const char *name = ir_op_name(op);
  if (!check_operand(g, name, ct, "ciphertext", FHJIT_KIND_POLY) ||
      !check_operand(g, name, pt, "plaintext", FHJIT_KIND_POLY))
    return FHJIT_NO_VALUE;
  const ir_node *nc = &g->nodes[ct], *np = &g->nodes[pt];
  ir_node proto = {.op = op, .nargs = 2, .args = {ct, pt}, .attr = {attr0, attr1}};
  int compressed = op == IR_MUL_COMPRESSED || op == IR_ADD_COMPRESSED;
  /* Compressed plaintexts have their own last extent u: merge without n. */
  ir_node pcopy = *np;
  if (compressed) pcopy.type.n = FHJIT_UNKNOWN;
  if (!merge_types(g, name, nc, &pcopy, 0, &proto.type)) return FHJIT_NO_VALUE;
  proto.type.comps = nc->type.comps;
  proto.type.form = nc->type.form;
  if (op == IR_ADD_PLAIN || (op == IR_ADD_COMPRESSED && attr1 == FHJIT_DOMAIN_NTT)) {
    if (nc->type.domain == FHJIT_DOMAIN_COEF || np->type.domain == FHJIT_DOMAIN_COEF) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                  "%s: plaintext addition of this kind is defined in the NTT "
                  "domain only, but %%%s is in the coefficient domain",
                  name, nc->type.domain == FHJIT_DOMAIN_COEF ? nc->name : np->name);
      return FHJIT_NO_VALUE;
    }
    proto.type.domain = FHJIT_DOMAIN_NTT;
  }
  if (op == IR_ADD_COMPRESSED && attr1 == FHJIT_DOMAIN_COEF) {
    if (nc->type.domain == FHJIT_DOMAIN_NTT) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                  "%s: coefficient-domain compressed add, but %%%s is in the NTT domain",
                  name, nc->name);
      return FHJIT_NO_VALUE;
    }
    proto.type.domain = FHJIT_DOMAIN_COEF;
  }
  if (op == IR_MUL_PLAIN || op == IR_MUL_COMPRESSED) {
    proto.type.form = product_form(nc->type.form, np->type.form);
  }
  if (compressed) {
    if ((unsigned)attr0 > FHJIT_STRIDED_SPARSE) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT, "%s: unknown compression layout %lld",
                  name, (long long)attr0);
      return FHJIT_NO_VALUE;
    }
    if (attr0 == FHJIT_STRIDED_SPARSE) {
      if (implicit == FHJIT_NO_VALUE) {
        ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                    "%s: the strided_sparse layout needs the per-row implicit operand",
                    name);
        return FHJIT_NO_VALUE;
      }
      if (!check_operand(g, name, implicit, "implicit", FHJIT_KIND_POLY))
        return FHJIT_NO_VALUE;
      proto.nargs = 3;
      proto.args[2] = implicit;
    } else if (implicit != FHJIT_NO_VALUE) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                  "%s: an implicit operand is given only for the strided_sparse layout",
                  name);
      return FHJIT_NO_VALUE;
    }
  }
  return push_node(g, &proto);
}

fhjit_value fhjit_mul_plain(fhjit_graph *g, fhjit_value ct, fhjit_value pt) {
  return plain_op(g, IR_MUL_PLAIN, ct, pt, 0, 0, FHJIT_NO_VALUE);
}

fhjit_value fhjit_add_plain(fhjit_graph *g, fhjit_value ct, fhjit_value pt) {
  return plain_op(g, IR_ADD_PLAIN, ct, pt, 0, 0, FHJIT_NO_VALUE);
}

fhjit_value fhjit_mul_compressed(fhjit_graph *g, fhjit_value ct, fhjit_value pt,
                                 fhjit_compression layout, fhjit_value implicit) {
  return plain_op(g, IR_MUL_COMPRESSED, ct, pt, layout, 0, implicit);
}

fhjit_value fhjit_add_compressed(fhjit_graph *g, fhjit_value ct, fhjit_value pt,
                                 fhjit_compression layout, fhjit_value implicit,
                                 fhjit_domain domain) {
  if (g && domain != FHJIT_DOMAIN_COEF && domain != FHJIT_DOMAIN_NTT) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                "add_compressed: the domain must be coef or ntt");
    return FHJIT_NO_VALUE;
  }
  return plain_op(g, IR_ADD_COMPRESSED, ct, pt, layout, domain, implicit);
}

fhjit_value fhjit_keyswitch_digit_product(fhjit_graph *g, fhjit_value d,
                                          fhjit_value key, int64_t digit,
                                          int64_t row_start) {
  if (!g) return FHJIT_NO_VALUE;
  const char *name = "keyswitch_digit_product";
  if (!check_operand(g, name, d, "digit", FHJIT_KIND_POLY) ||
      !check_operand(g, name, key, "key", FHJIT_KIND_KEY))
    return FHJIT_NO_VALUE;
  const ir_node *nd = &g->nodes[d], *nk = &g->nodes[key];
  if (nd->type.comps != 0) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s: the digit %%%s must have no component axis (it has %d)", name,
                nd->name, nd->type.comps);
    return FHJIT_NO_VALUE;
  }
  if (digit < 0 || row_start < 0 ||
      (nk->type.digits != FHJIT_UNKNOWN && digit >= nk->type.digits)) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                "%s: digit %lld and row_start %lld must be >= 0 and the digit below "
                "the key's %lld digits",
                name, (long long)digit, (long long)row_start, (long long)nk->type.digits);
    return FHJIT_NO_VALUE;
  }
  ir_node proto = {.op = IR_KS_DIGIT_PRODUCT, .nargs = 2, .args = {d, key},
                   .attr = {digit, row_start}, .type = nd->type};
  proto.type.comps = 2;
  if (nd->type.domain && nk->type.domain && nd->type.domain != nk->type.domain) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s: %%%s is in the %s domain and the key %%%s in the %s domain", name,
                nd->name, ir_domain_name(nd->type.domain), nk->name,
                ir_domain_name(nk->type.domain));
    return FHJIT_NO_VALUE;
  }
  proto.type.domain = nd->type.domain ? nd->type.domain : nk->type.domain;
  proto.type.form = product_form(nd->type.form, nk->type.form);
  if (proto.type.n == FHJIT_UNKNOWN) proto.type.n = nk->type.n;
  return push_node(g, &proto);
}

/* The NTT anchor (SPEC section 5): domain and form facts here, extents at
 * bind time (bind.c). */
fhjit_value fhjit_ntt(fhjit_graph *g, fhjit_value x, fhjit_value twiddles, fhjit_ntt_kind kind) {
  if (!g) return FHJIT_NO_VALUE;
  const char *name = "ntt";
  if ((unsigned)kind > FHJIT_NTT_TO_COEF_STD) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT, "%s: unknown transform kind %d", name,
                (int)kind);
    return FHJIT_NO_VALUE;
  }
  if (!check_operand(g, name, x, "the value", FHJIT_KIND_POLY) ||
      !check_operand(g, name, twiddles, "the twiddle", FHJIT_KIND_TWIDDLE))
    return FHJIT_NO_VALUE;
  const ir_node *nx = &g->nodes[x], *nt = &g->nodes[twiddles];
  int forward = kind == FHJIT_NTT_COEF_STD_TO_NTT || kind == FHJIT_NTT_COEF_MONT_TO_NTT;
  fhjit_domain from = forward ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
  fhjit_form want = kind == FHJIT_NTT_COEF_STD_TO_NTT ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
  static const char *const kinds[] = {"coef-std -> ntt", "coef-mont -> ntt",
                                      "ntt -> coef-mont", "ntt -> coef-std"};
  if (nx->type.domain && nx->type.domain != from) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s (%s): %%%s is in the %s domain, the transform reads the %s domain", name,
                kinds[kind], nx->name, ir_domain_name(nx->type.domain), ir_domain_name(from));
    return FHJIT_NO_VALUE;
  }
  if (nx->type.form && nx->type.form != want) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "%s (%s): %%%s is in %s form, the transform reads %s form", name, kinds[kind],
                nx->name, ir_form_name(nx->type.form), ir_form_name(want));
    return FHJIT_NO_VALUE;
  }
  ir_node proto = {.op = IR_NTT, .nargs = 2, .args = {x, twiddles}, .attr = {kind},
                   .type = nx->type};
  proto.type.domain = forward ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF;
  proto.type.form = kind == FHJIT_NTT_TO_COEF_STD ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
  if (proto.type.rows == FHJIT_UNKNOWN) proto.type.rows = nt->type.rows;
  if (proto.type.n == FHJIT_UNKNOWN) proto.type.n = nt->type.n;
  return push_node(g, &proto);
}

fhjit_value fhjit_extract(fhjit_graph *g, fhjit_value v, int32_t component) {
  if (!g) return FHJIT_NO_VALUE;
  if (!check_operand(g, "extract", v, "the", FHJIT_KIND_POLY)) return FHJIT_NO_VALUE;
  const ir_node *n = &g->nodes[v];
  if (n->type.comps == 0 || component < 0 || component >= n->type.comps) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                "extract: component %d of %%%s is out of range (it has %s%d "
                "component%s)",
                (int)component, n->name, n->type.comps ? "" : "no axis, ",
                n->type.comps, n->type.comps == 1 ? "" : "s");
    return FHJIT_NO_VALUE;
  }
  ir_node proto = {.op = IR_EXTRACT, .nargs = 1, .args = {v}, .attr = {component},
                   .type = n->type};
  proto.type.comps = 0;
  return push_node(g, &proto);
}

fhjit_value fhjit_pack(fhjit_graph *g, int32_t count, const fhjit_value *parts) {
  if (!g) return FHJIT_NO_VALUE;
  if (!parts || count < 2 || count > 3) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                "pack: takes 2 or 3 component-less operands (got %d%s)", (int)count,
                parts ? "" : ", null array");
    return FHJIT_NO_VALUE;
  }
  ir_node proto = {.op = IR_PACK, .nargs = count};
  for (int32_t i = 0; i < count; i++) {
    if (!check_operand(g, "pack", parts[i], "a", FHJIT_KIND_POLY)) return FHJIT_NO_VALUE;
    const ir_node *n = &g->nodes[parts[i]];
    if (n->type.comps != 0) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                  "pack: operand %%%s has a component axis (%d); pack takes "
                  "component-less values",
                  n->name, n->type.comps);
      return FHJIT_NO_VALUE;
    }
    proto.args[i] = parts[i];
    if (i == 0) proto.type = n->type;
    else if (!merge_types(g, "pack", &(ir_node){.type = proto.type, .name = g->nodes[parts[0]].name},
                          n, 0, &proto.type))
      return FHJIT_NO_VALUE;
    if (i > 0 && proto.type.form != n->type.form) proto.type.form = FHJIT_FORM_ANY;
  }
  proto.type.comps = count;
  return push_node(g, &proto);
}

fhjit_status fhjit_output(fhjit_graph *g, fhjit_value v, const char *name) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!ir_valid_value(g, v))
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                       "output: not a value of graph @%s (id %d)", g->name, (int)v);
  if (g->nodes[v].type.kind != FHJIT_KIND_POLY)
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                       "output: %%%s is a table, not a polynomial value",
                       g->nodes[v].name);
  const char *oname = name ? name : g->nodes[v].name;
  if (!valid_name(oname))
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                       "output name '%s' is not made of letters, digits, '_' and '.'",
                       oname);
  if (output_name_taken(g, oname))
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE, "output name '%s' is used twice", oname);
  if (g->noutputs == g->outputs_cap) {
    int32_t cap = g->outputs_cap ? g->outputs_cap * 2 : 8;
    ir_output *o = realloc(g->outputs, sizeof *o * (size_t)cap);
    if (!o) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
    g->outputs = o;
    g->outputs_cap = cap;
  }
  const char *copy = sp_strdup(&g->arena, oname);
  if (!copy) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
  ir_unbind(g);
  g->outputs[g->noutputs] = (ir_output){.value = v, .name = copy, .loc = g->cur_loc};
  output_index_add(g, g->noutputs++);
  return FHJIT_OK;
}

fhjit_status fhjit_set_name(fhjit_graph *g, fhjit_value v, const char *name) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!ir_valid_value(g, v))
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_set_name: no value %d in graph @%s",
                    (int)v, g->name);
  if (!valid_name(name))
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                       "name '%s' is not made of letters, digits, '_' and '.'",
                       name ? name : "(null)");
  if (strcmp(g->nodes[v].name, name) == 0) return FHJIT_OK;
  if (name_taken(g, name))
    return ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE, "value %%%s is defined twice", name);
  const char *copy = sp_strdup(&g->arena, name);
  if (!copy) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
  g->nodes[v].name = copy;
  name_index_add(g, v);
  return FHJIT_OK;
}

/* ---------------------------------------------------------------- queries */

int32_t fhjit_num_values(const fhjit_graph *g) { return g ? g->nnodes : 0; }
int32_t fhjit_num_inputs(const fhjit_graph *g) { return g ? g->ninputs : 0; }
int32_t fhjit_num_outputs(const fhjit_graph *g) { return g ? g->noutputs : 0; }

fhjit_value fhjit_input_value(const fhjit_graph *g, int32_t index) {
  if (!g || index < 0 || index >= g->ninputs) return FHJIT_NO_VALUE;
  return g->inputs[index];
}

const char *fhjit_value_name(const fhjit_graph *g, fhjit_value v) {
  return ir_valid_value(g, v) ? g->nodes[v].name : NULL;
}

fhjit_status fhjit_value_type(const fhjit_graph *g, fhjit_value v, fhjit_type *out) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!out) return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_value_type: null output pointer");
  if (!ir_valid_value(g, v))
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_value_type: no value %d in graph @%s",
                    (int)v, g->name);
  *out = g->nodes[v].type;
  return FHJIT_OK;
}

fhjit_value fhjit_find_value(const fhjit_graph *g, const char *name) {
  if (!g || !name) return FHJIT_NO_VALUE;
  for (int32_t i = 0; i < g->nnodes; i++)
    if (strcmp(g->nodes[i].name, name) == 0) return i;
  return FHJIT_NO_VALUE;
}
