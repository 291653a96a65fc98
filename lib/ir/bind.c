/* bind.c: binding a graph to physical layouts. Fixes every extent, checks
 * the shape rules of SPEC section 4 (each failure names the value and the
 * rule), and decides what is materialised and what is an identity view. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/ntt.h"

int64_t fhjit_type_elements(const fhjit_type *t) {
  if (!t || ir_type_structure_problem(t)) return -1;
  int64_t e = 1;
  int64_t ext[8];
  int k = 0;
  if (t->kind == FHJIT_KIND_KEY) ext[k++] = t->digits;
  if (t->comps > 0) ext[k++] = t->comps;
  for (int a = 0; a < t->nbatch && t->kind == FHJIT_KIND_POLY; a++) ext[k++] = t->batch[a];
  ext[k++] = t->rows;
  ext[k++] = t->n;
  for (int i = 0; i < k; i++) {
    if (ext[i] < 1) return -1;
    if (e > INT64_MAX / ext[i]) return -1;
    e *= ext[i];
  }
  return e;
}

fhjit_status fhjit_dense_layout(const fhjit_type *t, fhjit_layout *out) {
  if (!t || !out || fhjit_type_elements(t) < 0) return FHJIT_ERR_ARGUMENT;
  memset(out, 0, sizeof *out);
  int64_t s = 1;
  out->index_stride = 1;
  s = t->n;
  out->row_stride = s;
  s *= t->rows;
  if (t->kind == FHJIT_KIND_POLY) {
    for (int a = t->nbatch - 1; a >= 0; a--) {
      out->batch_stride[a] = t->batch[a] == 1 ? 0 : s;
      s *= t->batch[a];
    }
  }
  if (t->comps > 0) {
    out->comp_stride = t->comps == 1 ? 0 : s;
    s *= t->comps;
  }
  if (t->kind == FHJIT_KIND_KEY) out->digit_stride = t->digits == 1 ? 0 : s;
  return FHJIT_OK;
}

static int type_concrete(const fhjit_type *t) { return fhjit_type_elements(t) > 0; }

static int has_unknown_extent(const fhjit_type *t) {
  for (int a = 0; a < t->nbatch; a++)
    if (t->batch[a] == FHJIT_UNKNOWN) return 1;
  return t->rows == FHJIT_UNKNOWN || t->n == FHJIT_UNKNOWN ||
         (t->kind == FHJIT_KIND_KEY && t->digits == FHJIT_UNKNOWN);
}

fhjit_status fhjit_bind_input(fhjit_graph *g, fhjit_value v, const fhjit_type *type,
                              const fhjit_layout *layout) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!ir_valid_value(g, v) || g->nodes[v].op != IR_INPUT)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_bind_input: value %d is not an input of graph @%s", (int)v,
                    g->name);
  ir_node *n = &g->nodes[v];
  const fhjit_type *d = &n->decl;
  fhjit_type t = type ? *type : *d;
  const char *rule = NULL;
  if (t.kind != d->kind) rule = "its kind differs from the declaration";
  else if (t.comps != d->comps) rule = "its component count differs from the declaration";
  else if (t.nbatch != d->nbatch) rule = "its batch rank differs from the declaration";
  else if ((t.domain != d->domain && d->domain) || (t.form != d->form && d->form))
    rule = "its domain facts differ from the declaration";
  else {
    int64_t *te[6 + FHJIT_MAX_BATCH];
    const int64_t *de[6 + FHJIT_MAX_BATCH];
    int k = 0;
    te[k] = &t.rows, de[k++] = &d->rows;
    te[k] = &t.n, de[k++] = &d->n;
    if (t.kind == FHJIT_KIND_KEY) te[k] = &t.digits, de[k++] = &d->digits;
    for (int a = 0; a < t.nbatch; a++) te[k] = &t.batch[a], de[k++] = &d->batch[a];
    for (int i = 0; i < k; i++) {
      if (*de[i] != FHJIT_UNKNOWN && *te[i] != *de[i]) rule = "a declared extent differs";
      if (*te[i] < 1) rule = "every extent must be known and >= 1";
    }
  }
  if (!rule) rule = ir_type_structure_problem(&t);
  if (!rule && fhjit_type_elements(&t) < 0) rule = "its element count overflows";
  if (rule) {
    char got[FHJIT_TYPE_TEXT_MAX], want[FHJIT_TYPE_TEXT_MAX];
    fhjit_type_text(&t, got, sizeof got);
    fhjit_type_text(d, want, sizeof want);
    return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                       "binding input %%%s as %s: %s (declared %s)", n->name, got, rule, want);
  }
  fhjit_layout l;
  if (layout) l = *layout;
  else fhjit_dense_layout(&t, &l);
  int64_t *strides[] = {&l.offset, &l.comp_stride, &l.digit_stride, &l.row_stride,
                        &l.index_stride, &l.batch_stride[0], &l.batch_stride[1],
                        &l.batch_stride[2], &l.batch_stride[3]};
  for (size_t i = 0; i < sizeof strides / sizeof *strides; i++)
    if (*strides[i] < 0)
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "binding input %%%s: offsets and strides must be non-negative",
                         n->name);
  ir_unbind(g);
  n->type = t;
  n->type.domain = d->domain;
  n->type.form = d->form;
  n->layout = l;
  n->has_layout = 1;
  return FHJIT_OK;
}

/* Canonical form of a layout: axes of extent 1 and absent axes get stride 0,
 * so equal views compare (and hash) equal. Also rejects layouts whose last
 * element would overflow a 64-bit element offset. */
static int canonical_layout(const fhjit_type *t, fhjit_layout *l) {
  if (t->comps <= 1) l->comp_stride = 0;
  if (t->kind != FHJIT_KIND_KEY || t->digits == 1) l->digit_stride = 0;
  for (int a = 0; a < FHJIT_MAX_BATCH; a++)
    if (a >= t->nbatch || t->batch[a] == 1) l->batch_stride[a] = 0;
  if (t->rows == 1) l->row_stride = 0;
  if (t->n == 1) l->index_stride = 0;
  /* the largest offset must fit comfortably */
  ir_u128 last = (ir_u128)l->offset;
  last += (ir_u128)(t->comps > 0 ? t->comps - 1 : 0) * (uint64_t)l->comp_stride;
  last += (ir_u128)(t->kind == FHJIT_KIND_KEY ? t->digits - 1 : 0) * (uint64_t)l->digit_stride;
  for (int a = 0; a < t->nbatch; a++) last += (ir_u128)(t->batch[a] - 1) * (uint64_t)l->batch_stride[a];
  last += (ir_u128)(t->rows - 1) * (uint64_t)l->row_stride;
  last += (ir_u128)(t->n - 1) * (uint64_t)l->index_stride;
  return last < ((ir_u128)1 << 62);
}

/* Right-aligned batch broadcast of `b` into `out` (extents equal or 1). */
static fhjit_status broadcast_batch(fhjit_graph *g, const ir_node *user, fhjit_type *out,
                                    const fhjit_type *b, const char *bname) {
  int nb = out->nbatch > b->nbatch ? out->nbatch : b->nbatch;
  int64_t merged[FHJIT_MAX_BATCH];
  for (int i = 0; i < nb; i++) {
    int ia = i - (nb - out->nbatch), ib = i - (nb - b->nbatch);
    int64_t ea = ia >= 0 ? out->batch[ia] : 1, eb = ib >= 0 ? b->batch[ib] : 1;
    if (ea != eb && ea != 1 && eb != 1)
      return ir_error_at(g, user->loc, FHJIT_ERR_SHAPE,
                         "%%%s = %s: batch axis %d of %%%s has extent %lld but the other "
                         "operands have %lld; batch extents must be equal or 1",
                         user->name, ir_op_name(user->op), i, bname, (long long)eb,
                         (long long)ea);
    merged[i] = ea == 1 ? eb : ea;
  }
  out->nbatch = nb;
  for (int i = 0; i < FHJIT_MAX_BATCH; i++) out->batch[i] = i < nb ? merged[i] : 0;
  return FHJIT_OK;
}

/* The graph's stated moduli (when it states them) under an NTT of length
 * len: each must be a prime = 1 mod 2N (rns.c's rule). */
static fhjit_status check_ntt_moduli(fhjit_graph *g, const ir_node *n, const ir_node *a,
                                     int64_t len) {
  char why[120];
  for (int64_t r = 0; r < a->type.rows; r++) {
    int64_t p = a->basis ? a->basis[r] : r;
    if (p < g->nmoduli && ir_ntt_modulus_problem(g->moduli[p], len, why, sizeof why))
      return ir_error_at(g, n->loc, FHJIT_ERR_MODULUS,
                         "%%%s = ntt: modulus #%lld = %llu is %s, which an NTT of length %lld "
                         "needs",
                         n->name, (long long)p, (unsigned long long)g->moduli[p], why,
                         (long long)len);
  }
  return FHJIT_OK;
}

static fhjit_status same_extent(fhjit_graph *g, const ir_node *user, const char *what,
                                const char *aname, int64_t a, const char *bname, int64_t b) {
  if (a == b) return FHJIT_OK;
  return ir_error_at(g, user->loc, FHJIT_ERR_SHAPE,
                     "%%%s = %s: %s of %%%s is %lld but %s of %%%s is %lld; they must be "
                     "equal",
                     user->name, ir_op_name(user->op), what, aname, (long long)a, what, bname,
                     (long long)b);
}

/* Every element of a value must be addressable by the kernels' 64-bit
 * offsets: a computed value (broadcasting may multiply its operands' extents)
 * holds at most 2^62 elements, like an input's layout. */
#define IR_MAX_ELEMENTS (INT64_C(1) << 62)

static fhjit_status check_value_size(fhjit_graph *g, const ir_node *n, const fhjit_type *t) {
  int64_t e = fhjit_type_elements(t);
  if (e >= 0 && e <= IR_MAX_ELEMENTS) return FHJIT_OK;
  char ty[FHJIT_TYPE_TEXT_MAX];
  fhjit_type_text(t, ty, sizeof ty);
  return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                     "%%%s = %s: its type %s has more than 2^62 elements (the product of its "
                     "extents overflows what a kernel can address)",
                     n->name, ir_op_name(n->op), ty);
}

/* add, sub, add_lazy, mul: equal rows and n, batch axes broadcast. */
static fhjit_status infer_binary(fhjit_graph *g, ir_node *n, const ir_node *a, fhjit_type *t) {
  const ir_node *b = &g->nodes[n->args[1]];
  fhjit_status st;
  if ((st = same_extent(g, n, "rows", a->name, a->type.rows, b->name, b->type.rows)) ||
      (st = same_extent(g, n, "n", a->name, a->type.n, b->name, b->type.n)) ||
      (st = broadcast_batch(g, n, t, &b->type, b->name)))
    return st;
  t->comps = a->type.comps > b->type.comps ? a->type.comps : b->type.comps;
  return FHJIT_OK;
}

/* mul_plain, add_plain and their compressed forms: the plaintext's rows
 * (and n, or a divisor of n when compressed), the implicit operand's. */
static fhjit_status infer_plain(fhjit_graph *g, ir_node *n, const ir_node *a, fhjit_type *t) {
  const ir_node *p = &g->nodes[n->args[1]];
  fhjit_status st;
  if ((st = same_extent(g, n, "rows", a->name, a->type.rows, p->name, p->type.rows)) ||
      (st = broadcast_batch(g, n, t, &p->type, p->name)))
    return st;
  if (n->op == IR_MUL_PLAIN || n->op == IR_ADD_PLAIN) {
    if ((st = same_extent(g, n, "n", a->name, a->type.n, p->name, p->type.n))) return st;
  } else if (a->type.n % p->type.n != 0) {
    return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                       "%%%s = %s: the compressed plaintext %%%s has last extent u = %lld, "
                       "which does not divide n = %lld",
                       n->name, ir_op_name(n->op), p->name, (long long)p->type.n,
                       (long long)a->type.n);
  }
  if (n->nargs == 3) {
    const ir_node *im = &g->nodes[n->args[2]];
    if ((st = same_extent(g, n, "rows", a->name, a->type.rows, im->name, im->type.rows)) ||
        (st = broadcast_batch(g, n, t, &im->type, im->name)))
      return st;
    if (im->type.n != 1)
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "%%%s = %s: the implicit operand %%%s must have last extent 1 "
                         "(one value per row), not %lld",
                         n->name, ir_op_name(n->op), im->name, (long long)im->type.n);
  }
  t->comps = a->type.comps;
  return FHJIT_OK;
}

/* keyswitch_digit_product: the digit in range, the key rows it reads. */
static fhjit_status infer_ks_digit_product(fhjit_graph *g, ir_node *n, const ir_node *a,
                                           fhjit_type *t) {
  const ir_node *k = &g->nodes[n->args[1]];
  fhjit_status st;
  if ((st = same_extent(g, n, "n", a->name, a->type.n, k->name, k->type.n))) return st;
  if (n->attr[0] >= k->type.digits)
    return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                       "%%%s = %s: digit %lld is out of range; the key %%%s has %lld digits",
                       n->name, ir_op_name(n->op), (long long)n->attr[0], k->name,
                       (long long)k->type.digits);
  /* row_start (>= 0, the builder checks) may be anything up to
   * INT64_MAX: compared and printed without a signed overflow. Key rows
   * are read by chain position (SPEC section 7): row_start + basis[r]. */
  if (a->basis) {
    int64_t top = 0;
    for (int64_t r = 0; r < a->type.rows; r++) top = a->basis[r] > top ? a->basis[r] : top;
    if (n->attr[1] > k->type.rows - 1 - top) {
      char bt[256];
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "%%%s = %s: %%%s is on basis %s, so it reads key rows up to "
                         "%llu; the key %%%s has %lld rows",
                         n->name, ir_op_name(n->op), a->name,
                         ir_basis_text(bt, sizeof bt, a->basis, a->type.rows),
                         (unsigned long long)n->attr[1] + (unsigned long long)top, k->name,
                         (long long)k->type.rows);
    }
  } else if (n->attr[1] > k->type.rows - a->type.rows)
    return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                       "%%%s = %s: key rows %lld..%llu are out of range; the key %%%s has "
                       "%lld rows",
                       n->name, ir_op_name(n->op), (long long)n->attr[1],
                       (unsigned long long)n->attr[1] + (unsigned long long)a->type.rows - 1u,
                       k->name, (long long)k->type.rows);
  t->comps = 2;
  return FHJIT_OK;
}

/* pack: every operand of the first's shape. */
static fhjit_status infer_pack(fhjit_graph *g, ir_node *n, const ir_node *a, fhjit_type *t) {
  for (int i = 1; i < n->nargs; i++) {
    const ir_node *b = &g->nodes[n->args[i]];
    int same = b->type.rows == a->type.rows && b->type.n == a->type.n &&
               b->type.nbatch == a->type.nbatch;
    for (int x = 0; same && x < a->type.nbatch; x++) same = b->type.batch[x] == a->type.batch[x];
    if (!same) {
      char ta[FHJIT_TYPE_TEXT_MAX], tb[FHJIT_TYPE_TEXT_MAX];
      fhjit_type_text(&a->type, ta, sizeof ta);
      fhjit_type_text(&b->type, tb, sizeof tb);
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "%%%s = pack: operands must have equal shapes, but %%%s is %s and "
                         "%%%s is %s",
                         n->name, a->name, ta, b->name, tb);
    }
  }
  t->comps = n->nargs;
  return FHJIT_OK;
}

/* ntt (SPEC section 5): the table matches, N is supported, q prime = 1 mod
 * 2N. */
static fhjit_status infer_ntt(fhjit_graph *g, ir_node *n, const ir_node *a) {
  const ir_node *tw = &g->nodes[n->args[1]];
  fhjit_status st;
  if ((st = same_extent(g, n, "n", a->name, a->type.n, tw->name, tw->type.n)) ||
      (!a->basis &&
       (st = same_extent(g, n, "rows", a->name, a->type.rows, tw->name, tw->type.rows))))
    return st;
  /* the table has a row per chain position (SPEC section 7): a row for
   * every position of a stated basis (the default keeps equal rows) */
  char bt[256];
  for (int64_t r = 0; r < a->type.rows; r++)
    if (ir_pos(g, n->args[0], r) >= tw->type.rows)
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "%%%s = ntt: %%%s is on basis %s; the twiddle table %%%s has no "
                         "row for chain position %d (it has %lld rows)",
                         n->name, a->name, ir_basis_text(bt, sizeof bt, a->basis, a->type.rows),
                         tw->name, (int)ir_pos(g, n->args[0], r), (long long)tw->type.rows);
  int64_t len = a->type.n;
  if (len < 16 || len > (INT64_C(1) << 17) || (len & (len - 1)))
    return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                       "%%%s = ntt: the transform length n = %lld of %%%s is not a power of "
                       "two between 2^4 and 2^17",
                       n->name, (long long)len, a->name);
  return check_ntt_moduli(g, n, a, len);
}

/* Fixes the concrete type of a computed node from its operands' types. */
static fhjit_status infer_node(fhjit_graph *g, ir_node *n) {
  const ir_node *a = &g->nodes[n->args[0]];
  fhjit_type t = a->type;
  t.domain = n->type.domain;
  t.form = n->type.form;
  fhjit_status st = FHJIT_OK;
  switch (n->op) {
  case IR_ADD: case IR_SUB: case IR_ADD_LAZY: case IR_MUL:
    st = infer_binary(g, n, a, &t);
    break;
  case IR_NEG: case IR_TO_MONT: case IR_FROM_MONT:
    break;
  case IR_MUL_PLAIN: case IR_ADD_PLAIN: case IR_MUL_COMPRESSED: case IR_ADD_COMPRESSED:
    st = infer_plain(g, n, a, &t);
    break;
  case IR_KS_DIGIT_PRODUCT:
    st = infer_ks_digit_product(g, n, a, &t);
    break;
  case IR_EXTRACT:
    if (n->attr[0] >= a->type.comps)
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                         "%%%s = extract: component %lld of %%%s is out of range (%d)",
                         n->name, (long long)n->attr[0], a->name, a->type.comps);
    t.comps = 0;
    break;
  case IR_PACK:
    st = infer_pack(g, n, a, &t);
    break;
  case IR_NTT:
    st = infer_ntt(g, n, a);
    break;
  default: /* SPEC section 7 */
    st = ir_infer_mixing(g, n, &t);
    break;
  }
  if (st || (st = check_value_size(g, n, &t))) return st;
  n->type = t;
  return FHJIT_OK;
}

static fhjit_status add_result(fhjit_graph *g, fhjit_value v, int32_t *index) {
  if (g->result_of[v] >= 0) {
    *index = g->result_of[v];
    return FHJIT_OK;
  }
  if (g->nresults == g->results_cap) { /* doubling: linear in the results */
    int32_t cap = g->results_cap ? g->results_cap * 2 : 8;
    ir_result *r = realloc(g->results, sizeof *r * (size_t)cap);
    if (!r) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
    g->results = r;
    g->results_cap = cap;
  }
  g->results[g->nresults] = (ir_result){.value = v, .type = g->nodes[v].type};
  g->result_of[v] = g->nresults;
  *index = g->nresults++;
  return FHJIT_OK;
}

fhjit_status fhjit_bind(fhjit_graph *g) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  ir_unbind(g);
  if (g->noutputs == 0)
    return ir_error_at(g, g->loc, FHJIT_ERR_TYPE, "graph @%s has no outputs (add an "
                       "'output' line or call fhjit_output)", g->name);
  fhjit_status st = FHJIT_OK;
  for (int32_t i = 0; i < g->nnodes; i++) {
    ir_node *n = &g->nodes[i];
    if (n->op == IR_INPUT) {
      if (!n->has_layout) {
        if (!type_concrete(&n->decl))
          return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                             has_unknown_extent(&n->decl)
                                 ? "input %%%s has unknown extents ('?'); bind it with a "
                                   "concrete type first"
                                 : "input %%%s: its element count overflows 64 bits",
                             n->name);
        n->type = n->decl;
        fhjit_dense_layout(&n->type, &n->layout);
      }
      if (!canonical_layout(&n->type, &n->layout))
        return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE,
                           "input %%%s: its layout reaches past 2^62 elements", n->name);
    } else if ((st = infer_node(g, n))) {
      ir_free_bases(g);
      return st;
    }
    if ((st = ir_bind_basis(g, n))) {
      ir_free_bases(g);
      return st;
    }
  }
  g->result_of = malloc(sizeof *g->result_of * (size_t)g->nnodes);
  if (!g->result_of) return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
  for (int32_t i = 0; i < g->nnodes; i++) g->result_of[i] = -1;
  for (int32_t i = 0; i < g->noutputs; i++) {
    ir_output *o = &g->outputs[i];
    const ir_node *n = &g->nodes[o->value];
    fhjit_value src = o->value;
    o->component = -1;
    if (n->op == IR_EXTRACT) {
      src = n->args[0];
      o->component = (int32_t)n->attr[0];
    }
    if (g->nodes[src].op == IR_INPUT) {
      o->is_input_alias = 1;
      o->source = g->nodes[src].input_index;
    } else {
      o->is_input_alias = 0;
      if ((st = add_result(g, src, &o->source))) {
        ir_unbind(g);
        return st;
      }
    }
  }
  g->bound = 1;
  ir_cache_hash(g);
  return FHJIT_OK;
}

int fhjit_is_bound(const fhjit_graph *g) { return g && g->bound; }

int32_t fhjit_num_results(const fhjit_graph *g) { return g && g->bound ? g->nresults : 0; }

static fhjit_status need_bound(const fhjit_graph *g, const char *fn) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!g->bound)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s is not bound (call fhjit_bind)",
                    fn, g->name);
  return FHJIT_OK;
}

fhjit_status fhjit_result_type(const fhjit_graph *g, int32_t index, fhjit_type *out) {
  fhjit_status st = need_bound(g, "fhjit_result_type");
  if (st) return st;
  if (!out || index < 0 || index >= g->nresults)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_result_type: result %d out of range (graph @%s has %d)",
                    (int)index, g->name, (int)g->nresults);
  *out = g->results[index].type;
  return FHJIT_OK;
}

fhjit_status fhjit_output_info_get(const fhjit_graph *g, int32_t index, fhjit_output_info *out) {
  fhjit_status st = need_bound(g, "fhjit_output_info_get");
  if (st) return st;
  if (!out || index < 0 || index >= g->noutputs)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_output_info_get: output %d out of range (graph @%s has %d)",
                    (int)index, g->name, (int)g->noutputs);
  const ir_output *o = &g->outputs[index];
  memset(out, 0, sizeof *out);
  out->name = o->name;
  out->value = o->value;
  out->is_input_alias = o->is_input_alias;
  out->source = o->source;
  out->component = o->component;
  out->type = g->nodes[o->value].type;
  fhjit_layout l;
  if (o->is_input_alias) l = g->nodes[g->inputs[o->source]].layout;
  else fhjit_dense_layout(&g->results[o->source].type, &l);
  if (o->component >= 0) {
    l.offset += o->component * l.comp_stride;
    l.comp_stride = 0;
  }
  out->layout = l;
  return FHJIT_OK;
}

fhjit_status fhjit_input_binding(const fhjit_graph *g, int32_t index, fhjit_type *type,
                                 fhjit_layout *layout) {
  fhjit_status st = need_bound(g, "fhjit_input_binding");
  if (st) return st;
  if (index < 0 || index >= g->ninputs)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_input_binding: input %d out of range (graph @%s has %d)",
                    (int)index, g->name, (int)g->ninputs);
  const ir_node *n = &g->nodes[g->inputs[index]];
  if (type) *type = n->type;
  if (layout) *layout = n->layout;
  return FHJIT_OK;
}

fhjit_status fhjit_input_twiddle_use(const fhjit_graph *g, int32_t index, int *use) {
  fhjit_status st = need_bound(g, "fhjit_input_twiddle_use");
  if (st) return st;
  if (!use || index < 0 || index >= g->ninputs)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_input_twiddle_use: %s (graph @%s has %d inputs)",
                    use ? "input index out of range" : "null use", g->name, (int)g->ninputs);
  int mask = 0;
  for (int32_t v = 0; v < g->nnodes; v++) {
    const ir_node *n = &g->nodes[v];
    if (n->op == IR_NTT && n->args[1] == g->inputs[index])
      mask |= ir_ntt_is_forward((ir_ntt_kind)n->attr[0]) ? FHJIT_TWIDDLE_FORWARD
                                                         : FHJIT_TWIDDLE_INVERSE;
    /* rescale, modup, moddown: (x, forward, inverse, table) */
    if (ir_op_class_of(n->op) == IR_CLASS_MIXING && n->nargs == 4) {
      if (n->args[1] == g->inputs[index]) mask |= FHJIT_TWIDDLE_FORWARD;
      if (n->args[2] == g->inputs[index]) mask |= FHJIT_TWIDDLE_INVERSE;
    }
  }
  *use = mask;
  return FHJIT_OK;
}
