/* build_mix.c: the builder calls of SPEC section 7's ops (rows, concat,
 * bconv, automorphism, rescale, modup, moddown) and the keyswitch composite.
 * Like builder.c they check what needs no extents (operand kinds, domains
 * and forms as SPEC states them, k odd, digits in range, the target basis)
 * and infer the result's type; extents and bases are checked by fhjit_bind
 * (bind_mix.c, basis.c). docs/section7.md. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

/* x's domain and form are not stated otherwise than `dom` and `form`
 * (FHJIT_*_ANY: no rule). */
static int check_facts(fhjit_graph *g, const char *op, fhjit_value x, fhjit_domain dom,
                       fhjit_form form) {
  const ir_node *n = &g->nodes[x];
  if (dom && n->type.domain && n->type.domain != dom) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE, "%s: %%%s is in the %s domain; %s reads the %s domain",
                op, n->name, ir_domain_name(n->type.domain), op, ir_domain_name(dom));
    return 0;
  }
  if (form && n->type.form && n->type.form != form) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE, "%s: %%%s is in %s form; %s reads %s form", op,
                n->name, ir_form_name(n->type.form), op, ir_form_name(form));
    return 0;
  }
  return 1;
}

fhjit_value fhjit_rows(fhjit_graph *g, fhjit_value v, int64_t start, int64_t count) {
  if (!g) return FHJIT_NO_VALUE;
  if (!ir_check_operand(g, "rows", v, "the", FHJIT_KIND_POLY)) return FHJIT_NO_VALUE;
  const ir_node *n = &g->nodes[v];
  if (start < 0 || count < 1 ||
      (n->type.rows != FHJIT_UNKNOWN && (start >= n->type.rows || count > n->type.rows - start))) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                "rows: start %lld and count %lld do not name rows of %%%s (it has %lld rows)",
                (long long)start, (long long)count, n->name, (long long)n->type.rows);
    return FHJIT_NO_VALUE;
  }
  ir_node proto = {.op = IR_ROWS, .nargs = 1, .args = {v}, .attr = {start, count},
                   .type = n->type};
  proto.type.rows = count;
  return ir_push_node(g, &proto);
}

fhjit_value fhjit_concat(fhjit_graph *g, fhjit_value a, fhjit_value b) {
  if (!g) return FHJIT_NO_VALUE;
  if (!ir_check_operand(g, "concat", a, "first", FHJIT_KIND_POLY) ||
      !ir_check_operand(g, "concat", b, "second", FHJIT_KIND_POLY))
    return FHJIT_NO_VALUE;
  const ir_node *na = &g->nodes[a], *nb = &g->nodes[b];
  const fhjit_type *ta = &na->type, *tb = &nb->type;
  if (ta->comps != tb->comps) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "concat: %%%s has %d components and %%%s has %d; they must be equal",
                na->name, ta->comps, nb->name, tb->comps);
    return FHJIT_NO_VALUE;
  }
  if ((ta->domain && tb->domain && ta->domain != tb->domain) ||
      (ta->form && tb->form && ta->form != tb->form)) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "concat: %%%s (%s, %s) and %%%s (%s, %s) differ in domain or form", na->name,
                ir_domain_name(ta->domain), ir_form_name(ta->form), nb->name,
                ir_domain_name(tb->domain), ir_form_name(tb->form));
    return FHJIT_NO_VALUE;
  }
  ir_node proto = {.op = IR_CONCAT, .nargs = 2, .args = {a, b}, .type = *ta};
  proto.type.rows = ta->rows == FHJIT_UNKNOWN || tb->rows == FHJIT_UNKNOWN
                        ? FHJIT_UNKNOWN : ta->rows + tb->rows;
  if (!proto.type.domain) proto.type.domain = tb->domain;
  if (!proto.type.form) proto.type.form = tb->form;
  if (proto.type.n == FHJIT_UNKNOWN) proto.type.n = tb->n;
  return ir_push_node(g, &proto);
}

fhjit_value fhjit_bconv(fhjit_graph *g, fhjit_value x, fhjit_value table, const int32_t *target,
                        int32_t count) {
  if (!g) return FHJIT_NO_VALUE;
  if (!ir_check_operand(g, "bconv", x, "the", FHJIT_KIND_POLY) ||
      !ir_check_operand(g, "bconv", table, "the table", FHJIT_KIND_TABLE) ||
      !check_facts(g, "bconv", x, FHJIT_DOMAIN_COEF, FHJIT_FORM_ANY))
    return FHJIT_NO_VALUE;
  const ir_node *n = &g->nodes[x];
  if (!n->type.form) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "bconv: the form of %%%s is not stated; bconv reads the integer a row holds, "
                "which depends on it (std or mont)",
                n->name);
    return FHJIT_NO_VALUE;
  }
  if (!target || count < 1) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT, "bconv: the target basis is empty");
    return FHJIT_NO_VALUE;
  }
  char bt[256];
  for (int32_t j = 0; j < count; j++) {
    const char *why = target[j] < 0 ? "is negative"
                      : g->nmoduli && target[j] >= g->nmoduli ? "is past the chain" : NULL;
    for (int32_t k = 0; k < j && !why; k++)
      if (target[k] == target[j]) why = "repeats";
    if (why) {
      ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE, "bconv: target basis %s: position %d %s",
                  ir_basis_text(bt, sizeof bt, target, count), (int)target[j], why);
      return FHJIT_NO_VALUE;
    }
  }
  int32_t *copy = sp_alloc(&g->arena, sizeof *copy * (size_t)count);
  if (!copy) {
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
    return FHJIT_NO_VALUE;
  }
  memcpy(copy, target, sizeof *copy * (size_t)count);
  ir_node proto = {.op = IR_BCONV, .nargs = 2, .args = {x, table}, .type = n->type,
                   .decl_basis = copy, .decl_nbasis = count};
  proto.type.rows = count;
  proto.type.domain = FHJIT_DOMAIN_COEF;
  return ir_push_node(g, &proto);
}

fhjit_value fhjit_automorphism(fhjit_graph *g, fhjit_value x, int64_t k) {
  if (!g) return FHJIT_NO_VALUE;
  if (!ir_check_operand(g, "automorphism", x, "the", FHJIT_KIND_POLY)) return FHJIT_NO_VALUE;
  const ir_node *n = &g->nodes[x];
  if (k < 1 || (k & 1) == 0 || (n->type.n != FHJIT_UNKNOWN && k >= 2 * n->type.n)) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_ARGUMENT,
                "automorphism: the Galois element k = %lld must be odd with 1 <= k < 2N%s",
                (long long)k, n->type.n != FHJIT_UNKNOWN ? "" : " (N unknown yet)");
    return FHJIT_NO_VALUE;
  }
  if (!n->type.domain) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_TYPE,
                "automorphism: the domain of %%%s is not stated; the permutation differs "
                "between the coefficient and the NTT domain",
                n->name);
    return FHJIT_NO_VALUE;
  }
  ir_node proto = {.op = IR_AUTOMORPHISM, .nargs = 1, .args = {x}, .attr = {k},
                   .type = n->type};
  return ir_push_node(g, &proto);
}

/* Operands of rescale, modup and moddown: x NTT-domain Montgomery, two
 * twiddle tables (forward, inverse), a constant table. */
static int ntt_mixing_operands(fhjit_graph *g, const char *op, fhjit_value x, fhjit_value fwd,
                               fhjit_value inv, fhjit_value table) {
  return ir_check_operand(g, op, x, "the", FHJIT_KIND_POLY) &&
         ir_check_operand(g, op, fwd, "the forward twiddle", FHJIT_KIND_TWIDDLE) &&
         ir_check_operand(g, op, inv, "the inverse twiddle", FHJIT_KIND_TWIDDLE) &&
         ir_check_operand(g, op, table, "the table", FHJIT_KIND_TABLE) &&
         check_facts(g, op, x, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
}

static fhjit_value ntt_mixing(fhjit_graph *g, ir_op op, fhjit_value x, fhjit_value fwd,
                              fhjit_value inv, fhjit_value table, int64_t rows, int64_t attr0) {
  ir_node proto = {.op = op, .nargs = 4, .args = {x, fwd, inv, table}, .attr = {attr0},
                   .type = g->nodes[x].type};
  proto.type.rows = rows;
  proto.type.domain = FHJIT_DOMAIN_NTT;
  proto.type.form = FHJIT_FORM_MONT;
  return ir_push_node(g, &proto);
}

fhjit_value fhjit_rescale(fhjit_graph *g, fhjit_value x, fhjit_value fwd, fhjit_value inv,
                          fhjit_value table) {
  if (!g || !ntt_mixing_operands(g, "rescale", x, fwd, inv, table)) return FHJIT_NO_VALUE;
  int64_t rows = g->nodes[x].type.rows;
  if (rows == 1) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                "rescale: %%%s has one row; rescale divides by the last of at least two",
                g->nodes[x].name);
    return FHJIT_NO_VALUE;
  }
  return ntt_mixing(g, IR_RESCALE, x, fwd, inv, table,
                    rows == FHJIT_UNKNOWN ? rows : rows - 1, 0);
}

fhjit_value fhjit_modup(fhjit_graph *g, fhjit_value d, int64_t digit, fhjit_value fwd,
                        fhjit_value inv, fhjit_value table) {
  if (!g || !ntt_mixing_operands(g, "modup", d, fwd, inv, table)) return FHJIT_NO_VALUE;
  int32_t ndig = ir_num_digits(g);
  if (digit < 0 || (ndig > 0 && digit >= ndig)) {
    ir_error_at(g, g->cur_loc, FHJIT_ERR_SHAPE,
                "modup: digit %lld is out of range; the graph's partition has %d digits",
                (long long)digit, (int)ndig);
    return FHJIT_NO_VALUE;
  }
  int64_t rows = g->nodes[d].type.rows;
  return ntt_mixing(g, IR_MODUP, d, fwd, inv, table,
                    rows == FHJIT_UNKNOWN ? rows : rows + g->nspecial, digit);
}

fhjit_value fhjit_moddown(fhjit_graph *g, fhjit_value a, fhjit_value fwd, fhjit_value inv,
                          fhjit_value table) {
  if (!g || !ntt_mixing_operands(g, "moddown", a, fwd, inv, table)) return FHJIT_NO_VALUE;
  int64_t rows = g->nodes[a].type.rows;
  return ntt_mixing(g, IR_MODDOWN, a, fwd, inv, table,
                    rows == FHJIT_UNKNOWN ? rows : rows - g->nspecial, 0);
}
