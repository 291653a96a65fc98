/* optable.c: the op table of ops.def as data (ir_op_info_of), the
 * builder entries its rows name: each turns the operands and clauses the
 * parser read (ir_op_args) into the public builder call; and ir_clone_op,
 * which reads a node's clauses back into ir_op_args and calls the same
 * entry, so that a copy goes through every check of the builder. */
#include <string.h>

#include "ir/ir.h"
#include "ir/ntt.h"

static fhjit_value ir_build_add(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_add(g, a->args[0], a->args[1]);
}
static fhjit_value ir_build_sub(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_sub(g, a->args[0], a->args[1]);
}
static fhjit_value ir_build_neg(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_neg(g, a->args[0]);
}
static fhjit_value ir_build_add_lazy(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_add_lazy(g, a->args[0], a->args[1]);
}
static fhjit_value ir_build_mul(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_mul(g, a->args[0], a->args[1]);
}
static fhjit_value ir_build_to_mont(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_to_mont(g, a->args[0]);
}
static fhjit_value ir_build_from_mont(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_from_mont(g, a->args[0]);
}
static fhjit_value ir_build_mul_plain(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_mul_plain(g, a->args[0], a->args[1]);
}
static fhjit_value ir_build_add_plain(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_add_plain(g, a->args[0], a->args[1]);
}
static fhjit_value ir_build_mul_compressed(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_mul_compressed(g, a->args[0], a->args[1], a->layout, a->implicit);
}
static fhjit_value ir_build_add_compressed(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_add_compressed(g, a->args[0], a->args[1], a->layout, a->implicit, a->domain);
}
static fhjit_value ir_build_ks_digit_product(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_keyswitch_digit_product(g, a->args[0], a->args[1], a->digit, a->row_start);
}
static fhjit_value ir_build_extract(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_extract(g, a->args[0], (int32_t)a->component);
}
static fhjit_value ir_build_pack(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_pack(g, a->nargs, a->args);
}
/* ntt_fwd / ntt_inv with mode(std|mont): the coefficient side's form. */
static fhjit_value ir_build_ntt(fhjit_graph *g, const ir_op_args *a) {
  int inverse = a->mnemonic && strcmp(a->mnemonic, "ntt_inv") == 0;
  int std = a->mode == FHJIT_FORM_STD;
  fhjit_ntt_kind kind = inverse ? (std ? FHJIT_NTT_TO_COEF_STD : FHJIT_NTT_TO_COEF_MONT)
                                : (std ? FHJIT_NTT_COEF_STD_TO_NTT : FHJIT_NTT_COEF_MONT_TO_NTT);
  return fhjit_ntt(g, a->args[0], a->args[1], kind);
}

/* SPEC section 7 (build_mix.c). */
static fhjit_value ir_build_rows(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_rows(g, a->args[0], a->start, a->count);
}
static fhjit_value ir_build_concat(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_concat(g, a->args[0], a->args[1]);
}
static fhjit_value ir_build_bconv(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_bconv(g, a->args[0], a->args[1], a->basis, a->nbasis);
}
static fhjit_value ir_build_automorphism(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_automorphism(g, a->args[0], a->galois);
}
static fhjit_value ir_build_rescale(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_rescale(g, a->args[0], a->args[1], a->args[2], a->args[3]);
}
static fhjit_value ir_build_modup(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_modup(g, a->args[0], a->digit, a->args[1], a->args[2], a->args[3]);
}
static fhjit_value ir_build_moddown(fhjit_graph *g, const ir_op_args *a) {
  return fhjit_moddown(g, a->args[0], a->args[1], a->args[2], a->args[3]);
}

/* Composites (build_ckks.c): the value's name prefixes what they add. */
static fhjit_value ir_build_keyswitch(fhjit_graph *g, const ir_op_args *a) {
  return ir_keyswitch(g, a->args[0], a->args[1], a->args[2], a->args[3], a->name);
}
static fhjit_value ir_build_ckks_relinearize(fhjit_graph *g, const ir_op_args *a) {
  return ir_ckks_relinearize(g, a->args[0], a->args[1], a->args[2], a->args[3], a->name);
}
static fhjit_value ir_build_ckks_rescale(fhjit_graph *g, const ir_op_args *a) {
  return ir_ckks_rescale(g, a->args[0], a->args[1], a->args[2], a->name);
}
static fhjit_value ir_build_ckks_mul_relin_rescale(fhjit_graph *g, const ir_op_args *a) {
  return ir_ckks_mul_relin_rescale(g, a->args[0], a->args[1], a->args[2], a->args[3],
                                   a->args[4], a->name);
}
static fhjit_value ir_build_ckks_rotate(fhjit_graph *g, const ir_op_args *a) {
  return ir_ckks_rotate(g, a->args[0], a->galois, a->args[1], a->args[2], a->args[3], a->name);
}
/* %r_1, ..., %r_n = ckks_rotate_hoisted %ct, %gk_1, ..., %gk_n, %fw, %iv galois(k_1, ..., k_n) */
static fhjit_value ir_build_ckks_rotate_hoisted(fhjit_graph *g, const ir_op_args *a) {
  return ir_ckks_rotate_hoisted_text(g, a);
}

const ir_op_info *ir_composite_by_mnemonic(const char *s, size_t len) {
  static const ir_op_info table[] = {
#define IR_OP(...)
#define IR_COMPOSITE(id, mn, arity, clauses, required, flags, build) \
  {mn, arity, IR_CLASS_COMPOSITE, clauses, required, flags, build},
#include "ir/ops.def"
#undef IR_COMPOSITE
#undef IR_OP
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strlen(table[i].mnemonic) == len && memcmp(table[i].mnemonic, s, len) == 0)
      return &table[i];
  return NULL;
}

const ir_op_info *ir_op_info_of(ir_op op) {
  static const ir_op_info table[IR_NUM_OPS] = {
#define IR_OP(id, mn, arity, cls, clauses, required, flags, build) \
  [IR_##id] = {mn, arity, cls, clauses, required, flags, build},
#include "ir/ops.def"
#undef IR_OP
  };
  return &table[(unsigned)op < IR_NUM_OPS ? op : IR_INPUT];
}

const char *ir_op_name(ir_op op) {
  return (unsigned)op < IR_NUM_OPS ? ir_op_info_of(op)->mnemonic : "?";
}

ir_op ir_op_by_mnemonic(const char *s, size_t len) {
  for (int op = IR_INPUT + 1; op < IR_NUM_OPS; op++) {
    const char *m = ir_op_info_of((ir_op)op)->mnemonic;
    if (strlen(m) == len && memcmp(m, s, len) == 0) return (ir_op)op;
  }
  /* the NTT is spelled by its direction */
  if ((len == 7 && memcmp(s, "ntt_fwd", 7) == 0) || (len == 7 && memcmp(s, "ntt_inv", 7) == 0))
    return IR_NTT;
  return IR_NUM_OPS;
}

/* Keyword and hint (what goes between its parentheses) of each clause. */
static const struct {
  ir_clause c;
  const char *name, *hint;
} clauses[] = {{IR_CL_LAYOUT, "layout", "cyclic|contiguous|strided_sparse"},
               {IR_CL_IMPLICIT, "implicit", "%value"},
               {IR_CL_DOMAIN, "domain", "coef|ntt"},
               {IR_CL_DIGIT, "digit", "N"},
               {IR_CL_ROW_START, "row_start", "N"},
               {IR_CL_STRIDES, "strides", "s, ..."},
               {IR_CL_OFFSET, "offset", "N"},
               {IR_CL_MODE, "mode", "std|mont"},
               {IR_CL_START, "start", "N"},
               {IR_CL_COUNT, "count", "N"},
               {IR_CL_GALOIS, "galois", "k"},
               {IR_CL_BASIS, "basis", "p, ..."},
               {IR_CL_COMPONENT, "component", "k"}};

const char *ir_clause_name(ir_clause c) {
  for (size_t i = 0; i < sizeof clauses / sizeof *clauses; i++)
    if (clauses[i].c == c) return clauses[i].name;
  return "?";
}

const char *ir_clause_hint(ir_clause c) {
  for (size_t i = 0; i < sizeof clauses / sizeof *clauses; i++)
    if (clauses[i].c == c) return clauses[i].hint;
  return "?";
}

/* The clauses of node n as the parser would have read them (the inverse
 * of print.c's clause_value), with operands `args`. */
static ir_op_args node_args(const ir_node *n, const fhjit_value *args) {
  unsigned clauses = ir_op_info_of(n->op)->clauses;
  ir_op_args a = {.mnemonic = ir_op_name(n->op), .args = args, .nargs = n->nargs,
                  .implicit = FHJIT_NO_VALUE};
  if (clauses & IR_CL_IMPLICIT && n->nargs > 2) { /* written as a clause, not an operand */
    a.implicit = args[2];
    a.nargs = 2;
  }
  if (clauses & IR_CL_LAYOUT) a.layout = (fhjit_compression)n->attr[0];
  if (clauses & IR_CL_DOMAIN) a.domain = (fhjit_domain)n->attr[1];
  if (clauses & IR_CL_DIGIT) a.digit = n->attr[0];
  if (clauses & IR_CL_ROW_START) a.row_start = n->attr[1];
  if (clauses & IR_CL_MODE) { /* the NTT: its direction is its spelling */
    ir_ntt_kind k = (ir_ntt_kind)n->attr[0];
    a.mnemonic = ir_ntt_op_name(k);
    a.mode = k == IR_NTT_STD_TO_NTT || k == IR_NTT_TO_STD ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
  }
  if (clauses & IR_CL_START) a.start = n->attr[0];
  if (clauses & IR_CL_COUNT) a.count = n->attr[1];
  if (clauses & IR_CL_GALOIS) a.galois = n->attr[0];
  if (clauses & IR_CL_BASIS) a.basis = n->decl_basis, a.nbasis = n->decl_nbasis;
  if (clauses & IR_CL_COMPONENT) a.component = n->attr[0];
  return a;
}

fhjit_value ir_clone_op(fhjit_graph *dst, const fhjit_graph *src, const ir_node *n,
                        const fhjit_value *args) {
  SP_ASSERT(dst && n && n->op != IR_INPUT && (unsigned)n->op < IR_NUM_OPS);
  const ir_op_info *info = ir_op_info_of(n->op);
  SP_ASSERT(info->build);
  ir_op_args a = node_args(n, args);
  /* The builder's errors point at the op's source: n's location, in src's
   * text (dst's own text, if any, and location are put back after). */
  const char *filename = dst->filename, *source = dst->source;
  ir_loc loc = dst->cur_loc;
  if (src) dst->filename = src->filename, dst->source = src->source;
  dst->cur_loc = n->loc;
  fhjit_value v = info->build(dst, &a);
  dst->filename = filename;
  dst->source = source;
  dst->cur_loc = loc;
  return v;
}
