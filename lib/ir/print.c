/* print.c: the canonical .fh text of a graph (fhjit_print), its Graphviz
 * rendering (fhjit_print_dot), and the text of one type (fhjit_type_text).
 * The text is what fhjit_parse reads back into an equivalent graph, with one
 * fixed spelling per construct, so that print(parse(print(g))) == print(g)
 * byte for byte. Grammar: docs/format.md. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/ntt.h"

static int plain_name(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.'))
      return 0;
  return 1;
}

/* @name, or @"..." for names the C API allowed but the word syntax cannot
 * spell (spaces, quotes, bytes outside printable ASCII). */
static void print_graph_name(sp_buf *b, const char *name) {
  if (plain_name(name)) {
    sp_buf_printf(b, "@%s", name);
    return;
  }
  sp_buf_put(b, "@\"", 2);
  for (const unsigned char *s = (const unsigned char *)name; *s; s++) {
    if (*s == '"' || *s == '\\') sp_buf_printf(b, "\\%c", *s);
    else if (*s < 0x20 || *s >= 0x7f) sp_buf_printf(b, "\\x%02x", *s);
    else sp_buf_put(b, (const char *)s, 1);
  }
  sp_buf_put(b, "\"", 1);
}

/* fhjit_type_text writes into the caller's buffer the way snprintf does:
 * text past size - 1 bytes is counted but not written, so the total says how
 * big a buffer the whole text needs. No allocation: bind.c calls it while
 * reporting errors, and the tools on stack buffers. */
typedef struct type_out {
  char *buf;
  size_t size; /* 0: count only */
  size_t len;  /* the full text's length so far */
} type_out;

static void out_put(type_out *o, const char *s, size_t n) {
  if (o->len + 1 < o->size) {
    size_t room = o->size - 1 - o->len;
    memcpy(o->buf + o->len, s, n < room ? n : room);
  }
  o->len += n;
}

static void out_str(type_out *o, const char *s) { out_put(o, s, strlen(s)); }

/* An extent as the text spells it: '?' when unknown. */
static void out_extent(type_out *o, int64_t e) {
  char num[24];
  if (e == FHJIT_UNKNOWN) out_put(o, "?", 1);
  else out_put(o, num, (size_t)snprintf(num, sizeof num, "%" PRId64, e));
}

static void out_comps(type_out *o, int32_t c) {
  char num[16];
  out_put(o, num, (size_t)snprintf(num, sizeof num, "%d", (int)c));
}

/* The domain word before the form word, unstated facts left out. */
static void out_facts(type_out *o, const fhjit_type *t) {
  if (t->domain == FHJIT_DOMAIN_COEF || t->domain == FHJIT_DOMAIN_NTT) {
    out_str(o, " ");
    out_str(o, ir_domain_name(t->domain));
  }
  if (t->form == FHJIT_FORM_STD || t->form == FHJIT_FORM_MONT) {
    out_str(o, " ");
    out_str(o, ir_form_name(t->form));
  }
}

/* The type and its domain facts as docs/format.md spells them:
 * `ct<2, [4, ?], 2, 4096> ntt mont`. The one copy of this spelling: the
 * canonical text, the binder's messages and the tools all print through it.
 * Malformed types (which ir_type_structure_problem names) still print
 * without reading out of bounds, as the nearest spelling: an unknown kind
 * as a polynomial, the batch rank clamped to 0..FHJIT_MAX_BATCH, facts
 * outside the enums left out. */
size_t fhjit_type_text(const fhjit_type *t, char *buf, size_t size) {
  type_out o = {.buf = buf, .size = buf ? size : 0, .len = 0};
  if (t) {
    switch (t->kind) {
    case FHJIT_KIND_KEY:
      out_str(&o, "key<");
      out_extent(&o, t->digits);
      out_str(&o, ", ");
      out_comps(&o, t->comps);
      out_str(&o, ", ");
      break;
    case FHJIT_KIND_TWIDDLE:
      out_str(&o, "twiddles<");
      break;
    case FHJIT_KIND_TABLE: /* one row: table<n>, without facts, as the
                            * canonical text has always written a table */
      out_str(&o, "table<");
      out_extent(&o, t->n);
      out_str(&o, ">");
      break;
    default: {
      /* comps != 0 rather than > 0: a negative count, which the binder
       * reports, shows as what it is instead of as a pt */
      if (t->comps) {
        out_str(&o, "ct<");
        out_comps(&o, t->comps);
        out_str(&o, ", [");
      } else {
        out_str(&o, "pt<[");
      }
      int nbatch = t->nbatch < 0 ? 0 : t->nbatch > FHJIT_MAX_BATCH ? FHJIT_MAX_BATCH : t->nbatch;
      for (int a = 0; a < nbatch; a++) {
        if (a) out_str(&o, ", ");
        out_extent(&o, t->batch[a]);
      }
      out_str(&o, "], ");
      break;
    }
    }
    if (t->kind != FHJIT_KIND_TABLE) {
      out_extent(&o, t->rows);
      out_str(&o, ", ");
      out_extent(&o, t->n);
      out_str(&o, ">");
      out_facts(&o, t);
    }
  }
  if (o.size) o.buf[o.len < o.size ? o.len : o.size - 1] = 0;
  return o.len;
}

/* A type in the graph's text and in Graphviz labels. */
static void print_type(sp_buf *b, const fhjit_type *t) {
  char text[FHJIT_TYPE_TEXT_MAX];
  size_t len = fhjit_type_text(t, text, sizeof text);
  SP_ASSERT(len < sizeof text); /* FHJIT_TYPE_TEXT_MAX bounds every type */
  sp_buf_put(b, text, len);
}

/* The binder's canonical form of a layout (bind.c): axes of extent 1 and
 * absent axes have stride 0. Applied to both sides before comparing with the
 * dense layout, and to what is printed, so printing is idempotent. */
static void canonical_layout(const fhjit_type *t, fhjit_layout *l) {
  if (t->comps <= 1) l->comp_stride = 0;
  if (t->kind != FHJIT_KIND_KEY || t->digits == 1) l->digit_stride = 0;
  for (int a = 0; a < FHJIT_MAX_BATCH; a++)
    if (t->kind != FHJIT_KIND_POLY || a >= t->nbatch || t->batch[a] == 1) l->batch_stride[a] = 0;
  if (t->rows == 1) l->row_stride = 0;
  if (t->n == 1) l->index_stride = 0;
}

/* `strides(...)` in type order and `offset(k)`, when the input's binding is
 * not the dense layout (an input without one is bound densely). */
static void print_layout(sp_buf *b, const ir_node *n) {
  if (!n->has_layout) return;
  const fhjit_type *t = &n->type;
  fhjit_layout l = n->layout, dense;
  if (fhjit_dense_layout(t, &dense) != FHJIT_OK) return;
  canonical_layout(t, &l);
  canonical_layout(t, &dense);
  dense.offset = l.offset;
  if (memcmp(&l, &dense, sizeof l) != 0) {
    sp_buf_put(b, " strides(", 9);
    int k = 0;
#define STRIDE(v) sp_buf_printf(b, "%s%" PRId64, k++ ? ", " : "", (int64_t)(v))
    if (t->kind == FHJIT_KIND_KEY) STRIDE(l.digit_stride);
    if (t->comps > 0) STRIDE(l.comp_stride);
    if (t->kind == FHJIT_KIND_POLY)
      for (int a = 0; a < t->nbatch; a++) STRIDE(l.batch_stride[a]);
    STRIDE(l.row_stride);
    STRIDE(l.index_stride);
#undef STRIDE
    sp_buf_put(b, ")", 1);
  }
  if (l.offset) sp_buf_printf(b, " offset(%" PRId64 ")", l.offset);
}

/* "p0, p1, ..." of a basis. */
static void print_positions(sp_buf *b, const int32_t *p, int32_t count) {
  for (int32_t i = 0; i < count; i++) sp_buf_printf(b, "%s%d", i ? ", " : "", (int)p[i]);
}

/* The value of clause c of node n as text ("cyclic", "3", "%v", "std"). */
static void clause_value(sp_buf *b, const fhjit_graph *g, const ir_node *n, ir_clause c) {
  switch (c) {
  case IR_CL_LAYOUT: sp_buf_printf(b, "%s", ir_compression_name((fhjit_compression)n->attr[0])); break;
  case IR_CL_IMPLICIT: sp_buf_printf(b, "%%%s", g->nodes[n->args[2]].name); break;
  case IR_CL_DOMAIN: sp_buf_printf(b, "%s", ir_domain_name((fhjit_domain)n->attr[1])); break;
  case IR_CL_DIGIT: case IR_CL_COMPONENT: sp_buf_printf(b, "%" PRId64, n->attr[0]); break;
  case IR_CL_ROW_START: sp_buf_printf(b, "%" PRId64, n->attr[1]); break;
  case IR_CL_MODE: sp_buf_printf(b, "%s", ir_ntt_kind_name((ir_ntt_kind)n->attr[0])); break;
  case IR_CL_START: case IR_CL_GALOIS: sp_buf_printf(b, "%" PRId64, n->attr[0]); break;
  case IR_CL_COUNT: sp_buf_printf(b, "%" PRId64, n->attr[1]); break;
  case IR_CL_BASIS: print_positions(b, n->decl_basis, n->decl_nbasis); break;
  default: break;
  }
}

/* The clauses of an op node, in ops.def's bit order: in text "name(value)"
 * ("[k]" for a component); in Graphviz labels "name value", layout and
 * domain by value alone, implicit operands as edges. */
static void print_clauses(sp_buf *b, const fhjit_graph *g, const ir_node *n, int dot) {
  unsigned clauses = ir_op_info_of(n->op)->clauses;
  for (unsigned c = 1; c <= IR_CL_COMPONENT; c <<= 1) {
    if (!(clauses & c) || (c == IR_CL_IMPLICIT && (n->nargs < 3 || dot))) continue;
    if (c == IR_CL_COMPONENT) {
      sp_buf_put(b, dot ? " [" : "[", dot ? 2 : 1);
    } else if (dot) {
      sp_buf_put(b, " ", 1);
      if (c != IR_CL_LAYOUT && c != IR_CL_DOMAIN) sp_buf_printf(b, "%s ", ir_clause_name(c));
    } else {
      sp_buf_printf(b, " %s(", ir_clause_name(c));
    }
    clause_value(b, g, n, (ir_clause)c);
    if (c == IR_CL_COMPONENT) sp_buf_put(b, "]", 1);
    else if (!dot) sp_buf_put(b, ")", 1);
  }
}

static const char *node_mnemonic(const ir_node *n) {
  return n->op == IR_NTT ? ir_ntt_op_name((ir_ntt_kind)n->attr[0]) : ir_op_name(n->op);
}

static void print_node(sp_buf *b, const fhjit_graph *g, const ir_node *n) {
  sp_buf_printf(b, "  %%%s = %s ", n->name, node_mnemonic(n));
  if (n->op == IR_INPUT) {
    /* A bound input shows its bound extents: the layout refers to them. */
    print_type(b, n->has_layout ? &n->type : &n->decl);
    if (n->decl_basis) {
      sp_buf_put(b, " basis(", 7);
      print_positions(b, n->decl_basis, n->decl_nbasis);
      sp_buf_put(b, ")", 1);
    }
    print_layout(b, n);
    sp_buf_put(b, "\n", 1);
    return;
  }
  /* an implicit operand is written as a clause */
  int shown = (ir_op_info_of(n->op)->clauses & IR_CL_IMPLICIT) && n->nargs == 3 ? 2 : n->nargs;
  for (int i = 0; i < shown; i++)
    sp_buf_printf(b, "%s%%%s", i ? ", " : "", g->nodes[n->args[i]].name);
  print_clauses(b, g, n, 0);
  sp_buf_put(b, "\n", 1);
}

/* Hands a finished buffer to the graph (freeing the old text) or reports. */
static const char *keep(fhjit_graph *g, sp_buf *b, char **slot, const char *fn) {
  if (b->failed || !b->data) {
    sp_buf_free(b);
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "%s: graph @%s: out of memory", fn, g->name);
    return NULL;
  }
  free(*slot);
  *slot = b->data;
  return *slot;
}

const char *fhjit_print(fhjit_graph *g) {
  if (!g) return NULL;
  sp_buf b = {0};
  sp_buf_put(&b, "graph ", 6);
  print_graph_name(&b, g->name);
  sp_buf_printf(&b, " radix(%s)", ir_radix_name(g->radix));
  if (g->nmoduli > 0) {
    sp_buf_put(&b, " moduli(", 8);
    for (int32_t i = 0; i < g->nmoduli; i++)
      sp_buf_printf(&b, "%s%" PRIu64, i ? ", " : "", g->moduli[i]);
    sp_buf_put(&b, ")", 1);
  }
  if (g->nspecial > 0) sp_buf_printf(&b, " special(%d)", (int)g->nspecial);
  if (g->alpha > 0) sp_buf_printf(&b, " digits(%d)", (int)g->alpha);
  sp_buf_put(&b, " {\n", 3);
  for (int32_t i = 0; i < g->nnodes; i++) print_node(&b, g, &g->nodes[i]);
  for (int32_t i = 0; i < g->noutputs; i++) {
    const ir_output *o = &g->outputs[i];
    const char *vname = g->nodes[o->value].name;
    sp_buf_printf(&b, "  output %%%s", vname);
    if (strcmp(o->name, vname) != 0) sp_buf_printf(&b, " as %s", o->name);
    sp_buf_put(&b, "\n", 1);
  }
  sp_buf_put(&b, "}\n", 2);
  return keep(g, &b, &g->printed, "fhjit_print");
}

/* ------------------------------------------------------------------- dot */

/* Text inside a double-quoted DOT string: newlines become DOT's "\n",
 * other control bytes '?'. */
static void dot_escape(sp_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '\n') sp_buf_put(b, "\\n", 2);
    else if (*s == '"' || *s == '\\') sp_buf_printf(b, "\\%c", *s);
    else if ((unsigned char)*s < 0x20 || *s == 0x7f) sp_buf_put(b, "?", 1);
    else sp_buf_put(b, s, 1);
  }
}

const char *fhjit_print_dot(fhjit_graph *g) {
  if (!g) return NULL;
  sp_buf b = {0}, label = {0};
  sp_buf_put(&b, "digraph \"", 9);
  dot_escape(&b, g->name);
  sp_buf_printf(&b, "\" {\n  label=\"@");
  dot_escape(&b, g->name);
  sp_buf_printf(&b, " radix(%s)%s\";\n  labelloc=t;\n", ir_radix_name(g->radix),
                g->bound ? " (bound)" : "");
  sp_buf_put(&b, "  node [shape=box, fontname=\"monospace\"];\n", 42);
  for (int32_t i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    /* The label: what the text says, then the (inferred or bound) type. */
    label.len = 0;
    if (label.data) label.data[0] = 0;
    sp_buf_printf(&label, "%%%s = %s", n->name, node_mnemonic(n));
    if (n->op != IR_INPUT) print_clauses(&label, g, n, 1);
    sp_buf_put(&label, "\n", 1);
    print_type(&label, &n->type);
    sp_buf_printf(&b, "  v%d [label=\"", (int)i);
    dot_escape(&b, label.data ? label.data : "");
    sp_buf_printf(&b, "\"%s];\n",
                  n->op == IR_INPUT ? ", shape=invhouse, style=filled, fillcolor=\"#dde8f5\""
                  : ir_op_class_of(n->op) == IR_CLASS_VIEW ? ", style=dashed"
                                                            : "");
  }
  for (int32_t i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    for (int k = 0; k < n->nargs; k++) {
      sp_buf_printf(&b, "  v%d -> v%d", (int)n->args[k], (int)i);
      /* Operand order matters for sub, the plaintext ops and key switching. */
      if (n->nargs > 1 && !(ir_op_info_of(n->op)->flags & IR_F_COMMUTATIVE))
        sp_buf_printf(&b, " [label=\"%d\"]", k);
      sp_buf_put(&b, ";\n", 2);
    }
  }
  for (int32_t i = 0; i < g->noutputs; i++) {
    const ir_output *o = &g->outputs[i];
    sp_buf_printf(&b, "  out%d [label=\"output ", (int)i);
    dot_escape(&b, o->name);
    sp_buf_printf(&b, "\", shape=house, style=filled, fillcolor=\"#f5e6d3\"];\n");
    sp_buf_printf(&b, "  v%d -> out%d;\n", (int)o->value, (int)i);
  }
  sp_buf_put(&b, "}\n", 2);
  sp_buf_free(&label);
  return keep(g, &b, &g->printed_dot, "fhjit_print_dot");
}
