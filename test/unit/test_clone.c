/* test_clone.c: ir_clone_op, the IR's copy of an op node into another graph
 * (what the anchor splitter builds its sub-graphs with). Graphs holding
 * every op of ops.def, every clause value (both NTT directions and modes,
 * compressed ops with and without an implicit operand, section 7's rows,
 * concat, bconv with its basis, automorphism, rescale, modup, moddown) and
 * hundreds of random bound graphs are copied node by node into a fresh
 * graph: the copy prints the same text and, bound, hashes the same. A copy
 * with operands its builder refuses fails as the builder does, with the
 * builder's message located at the op in the source graph's text. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "ir/ir.h"
#include "ir/ntt.h"
#include "randgraph.h"
#include "testutil.h"

static const char *const texts[] = {
    "graph @all_ops radix(r32) moduli(268369921, 134176769) {\n"
    "  %a = input ct<2, [], 2, 64> ntt mont\n"
    "  %b = input ct<2, [], 2, 64> ntt mont\n"
    "  %p = input pt<[], 2, 64> ntt mont\n"
    "  %u = input pt<[], 2, 16> ntt mont\n"
    "  %i = input pt<[], 2, 1> ntt mont\n"
    "  %k = input key<3, 2, 4, 64> ntt mont\n"
    "  %s0 = add %a, %b\n"
    "  %s1 = sub %s0, %b\n"
    "  %s2 = neg %s1\n"
    "  %s3 = add_lazy %s2, %a\n"
    "  %s4 = mul %s3, %b\n"
    "  %s5 = to_mont %s4\n"
    "  %s6 = from_mont %s5\n"
    "  %s7 = mul_plain %s6, %p\n"
    "  %s8 = add_plain %s7, %p\n"
    "  %s9 = mul_compressed %s8, %u layout(cyclic)\n"
    "  %s10 = mul_compressed %s9, %u layout(strided_sparse) implicit(%i)\n"
    "  %s11 = add_compressed %s10, %u layout(contiguous) domain(ntt)\n"
    "  %s12 = add_compressed %s11, %u layout(strided_sparse) implicit(%i) domain(ntt)\n"
    "  %e0 = extract %s12[0]\n"
    "  %e1 = extract %s12[1]\n"
    "  %ks = keyswitch_digit_product %e0, %k digit(2) row_start(1)\n"
    "  %pk = pack %e0, %e1\n"
    "  %pk3 = pack %e0, %e1, %p\n"
    "  output %ks\n"
    "  output %pk as packed\n"
    "  output %pk3\n"
    "  output %e1\n"
    "  output %e1 as second\n"
    "}\n",
    "graph @ntts radix(r62) moduli(1152921504606584833, 1152921504598720513) {\n"
    "  %c = input pt<[], 2, 64> coef std\n"
    "  %m = input pt<[], 2, 64> coef mont\n"
    "  %tf = input twiddles<2, 64>\n"
    "  %ti = input twiddles<2, 64>\n"
    "  %f0 = ntt_fwd %c, %tf mode(std)\n"
    "  %f1 = ntt_fwd %m, %tf mode(mont)\n"
    "  %s = add %f0, %f1\n"
    "  %i0 = ntt_inv %s, %ti mode(std)\n"
    "  %i1 = ntt_inv %s, %ti mode(mont)\n"
    "  output %i0\n"
    "  output %i1\n"
    "}\n",
    "graph @s7 radix(r32) moduli(268369921, 134176769, 268361729, 268271617) special(1) "
    "digits(2) {\n"
    "  %x = input ct<2, [], 2, 16> coef std basis(2, 0)\n"
    "  %d = input pt<[], 3, 16> ntt mont\n"
    "  %fw = input twiddles<4, 16>\n"
    "  %iv = input twiddles<4, 16>\n"
    "  %tb = input table<6>\n"
    "  %tr = input table<2>\n"
    "  %tu = input table<4>\n"
    "  %td = input table<7>\n"
    "  %r = rows %x start(1) count(1)\n"
    "  %r0 = rows %x start(0) count(1)\n"
    "  %c = concat %r, %r0\n"
    "  %b = bconv %x, %tb basis(1, 3)\n"
    "  %a = automorphism %x galois(31)\n"
    "  %s = rescale %d, %fw, %iv, %tr\n"
    "  %u = modup %d, %fw, %iv, %tu digit(1)\n"
    "  %m = moddown %u, %fw, %iv, %td\n"
    "  output %b\n"
    "  output %a\n"
    "  output %s\n"
    "  output %m\n"
    "}\n",
};

/* Copies g into a new graph of ctx: inputs through the builder (declared
 * type, basis, bound layout), every op through ir_clone_op, names and
 * outputs as in g. *seen[op] counts the ops copied. */
static fhjit_graph *copy_graph(fhjit_context *ctx, const fhjit_graph *g, int seen[IR_NUM_OPS]) {
  fhjit_graph *d = fhjit_graph_create(ctx, g->name, g->radix);
  ck_assert_ptr_nonnull(d);
  if (g->nmoduli) ck_assert_int_eq(fhjit_graph_set_moduli(d, g->moduli, g->nmoduli), FHJIT_OK);
  if (g->nspecial) ck_assert_int_eq(fhjit_graph_set_special(d, g->nspecial), FHJIT_OK);
  if (g->alpha) ck_assert_int_eq(fhjit_graph_set_digits(d, g->alpha), FHJIT_OK);
  fhjit_value *map = malloc(sizeof *map * (size_t)g->nnodes);
  ck_assert_ptr_nonnull(map);
  for (int32_t v = 0; v < g->nnodes; v++) {
    const ir_node *n = &g->nodes[v];
    if (n->op == IR_INPUT) {
      map[v] = fhjit_input(d, n->name, &n->decl);
      ck_assert_msg(map[v] != FHJIT_NO_VALUE, "%s", fhjit_last_error(ctx));
      if (n->decl_basis)
        ck_assert_int_eq(fhjit_input_basis(d, map[v], n->decl_basis, n->decl_nbasis), FHJIT_OK);
      if (n->has_layout)
        ck_assert_msg(fhjit_bind_input(d, map[v], &n->type, &n->layout) == FHJIT_OK, "%s",
                      fhjit_last_error(ctx));
      continue;
    }
    fhjit_value args[IR_MAX_ARGS];
    for (int a = 0; a < n->nargs; a++) args[a] = map[n->args[a]];
    map[v] = ir_clone_op(d, g, n, args);
    ck_assert_msg(map[v] != FHJIT_NO_VALUE, "%s: %s", ir_op_name(n->op), fhjit_last_error(ctx));
    ck_assert_int_eq(d->nodes[map[v]].op, n->op);
    ck_assert_int_eq(d->nodes[map[v]].attr[0], n->attr[0]);
    ck_assert_int_eq(d->nodes[map[v]].attr[1], n->attr[1]);
    ck_assert_int_eq(fhjit_set_name(d, map[v], n->name), FHJIT_OK);
    seen[n->op]++;
  }
  for (int32_t o = 0; o < g->noutputs; o++)
    ck_assert_int_eq(fhjit_output(d, map[g->outputs[o].value], g->outputs[o].name), FHJIT_OK);
  free(map);
  return d;
}

START_TEST(test_every_op) {
  fhjit_context *ctx = fhjit_context_create();
  int seen[IR_NUM_OPS] = {0};
  int ntt_kinds[IR_NTT_NUM_KINDS] = {0}, implicit = 0;
  for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
    fhjit_graph *g = fhjit_parse(ctx, texts[t], strlen(texts[t]), "clone.fh");
    ck_assert_msg(g != NULL, "%s", fhjit_last_error(ctx));
    ck_assert_str_eq(fhjit_print(g), texts[t]); /* the texts are canonical */
    for (int32_t v = 0; v < g->nnodes; v++) {
      if (g->nodes[v].op == IR_NTT) ntt_kinds[g->nodes[v].attr[0]]++;
      if (g->nodes[v].nargs == 3 && g->nodes[v].op != IR_PACK) implicit++;
    }
    fhjit_graph *d = copy_graph(ctx, g, seen);
    ck_assert_str_eq(fhjit_print(d), texts[t]);
    /* bound, both hash the same (the copy has the same chain and layouts) */
    ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
    ck_assert_msg(fhjit_bind(d) == FHJIT_OK, "%s", fhjit_last_error(ctx));
    uint64_t hg[2], hd[2];
    ck_assert_int_eq(fhjit_graph_hash(g, hg), FHJIT_OK);
    ck_assert_int_eq(fhjit_graph_hash(d, hd), FHJIT_OK);
    ck_assert(hg[0] == hd[0] && hg[1] == hd[1]);
    for (int32_t v = 0; v < g->nnodes; v++) /* bound bases too (section 7) */
      if (g->nodes[v].basis || d->nodes[v].basis)
        ck_assert_int_eq(memcmp(g->nodes[v].basis, d->nodes[v].basis,
                                sizeof(int32_t) * (size_t)g->nodes[v].type.rows),
                         0);
    fhjit_graph_destroy(d);
    fhjit_graph_destroy(g);
  }
  for (int op = IR_INPUT + 1; op < IR_NUM_OPS; op++)
    ck_assert_msg(seen[op] > 0, "op %s was never copied", ir_op_name((ir_op)op));
  for (int k = 0; k < IR_NTT_NUM_KINDS; k++) ck_assert_int_gt(ntt_kinds[k], 0);
  ck_assert_int_ge(implicit, 2);
  fhjit_context_destroy(ctx);
}
END_TEST

/* Random bound graphs (broadcast batches, strided layouts, NTT anchors with
 * their epilogues): the copy, bound, prints and hashes as the original. */
START_TEST(test_random_graphs) {
  fhjit_context *ctx = fhjit_context_create();
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.ntt_percent = 30;
  int seen[IR_NUM_OPS] = {0};
  for (uint64_t seed = 1; seed <= 300; seed++) {
    char err[512];
    fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
    ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, err);
    fhjit_graph *d = copy_graph(ctx, g, seen);
    ck_assert_msg(fhjit_bind(d) == FHJIT_OK, "seed %llu: %s", (unsigned long long)seed,
                  fhjit_last_error(ctx));
    char *pg = strdup(fhjit_print(g));
    ck_assert_ptr_nonnull(pg);
    ck_assert_str_eq(fhjit_print(d), pg);
    free(pg);
    uint64_t hg[2], hd[2];
    ck_assert_int_eq(fhjit_graph_hash(g, hg), FHJIT_OK);
    ck_assert_int_eq(fhjit_graph_hash(d, hd), FHJIT_OK);
    ck_assert(hg[0] == hd[0] && hg[1] == hd[1]);
    fhjit_graph_destroy(d);
    fhjit_graph_destroy(g);
  }
  ck_assert_int_gt(seen[IR_NTT], 0);
  ck_assert_int_gt(seen[IR_MUL_COMPRESSED] + seen[IR_ADD_COMPRESSED], 0);
  fhjit_context_destroy(ctx);
}
END_TEST

/* A copy the builder refuses: FHJIT_NO_VALUE, the builder's own message,
 * located at the op's source when the destination has source text. */
START_TEST(test_refused) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_parse(ctx, texts[0], strlen(texts[0]), "clone.fh");
  ck_assert_ptr_nonnull(g);
  const ir_node *add = &g->nodes[fhjit_find_value(g, "s0")];
  const ir_node *bconv = NULL;
  /* into a graph built by the API (no text of its own): located in g's */
  fhjit_graph *d = fhjit_graph_create(ctx, "dst", FHJIT_R32);
  fhjit_type tc = g->nodes[fhjit_find_value(g, "a")].decl;
  fhjit_type tp = g->nodes[fhjit_find_value(g, "k")].decl;
  fhjit_value a = fhjit_input(d, "a", &tc), q = fhjit_input(d, "q", &tp);
  int32_t before = d->nnodes;
  /* add of a ciphertext and a key: the builder's error */
  ck_assert_int_eq(ir_clone_op(d, g, add, (fhjit_value[]){a, q}), FHJIT_NO_VALUE);
  ck_assert_int_ne(fhjit_last_status(ctx), FHJIT_OK);
  const char *msg = fhjit_last_error(ctx);
  char where[32];
  snprintf(where, sizeof where, "clone.fh:%d:%d: error: ", (int)add->loc.line, (int)add->loc.col);
  ck_assert_msg(add->loc.line == 8 && tu_contains(msg, where) && tu_contains(msg, "add") &&
                    tu_contains(msg, "\n  %s0 = add %a, %b\n"),
                "%s", msg);
  ck_assert_int_eq(d->nnodes, before); /* nothing added */
  ck_assert_ptr_null(d->filename);     /* d's own text is untouched */
  /* without a source graph: the builder's unlocated form */
  ck_assert_int_eq(ir_clone_op(d, NULL, add, (fhjit_value[]){a, q}), FHJIT_NO_VALUE);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), "error: graph @dst: "), "%s",
                fhjit_last_error(ctx));
  /* an operand that is not a value of dst */
  ck_assert_int_eq(ir_clone_op(d, g, add, (fhjit_value[]){a, 999}), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
  /* section 7: a bconv whose target basis is past dst's chain */
  fhjit_graph *s7 = fhjit_parse(ctx, texts[2], strlen(texts[2]), "s7.fh");
  ck_assert_ptr_nonnull(s7);
  bconv = &s7->nodes[fhjit_find_value(s7, "b")];
  fhjit_graph *d2 = fhjit_graph_create(ctx, "short", FHJIT_R32);
  ck_assert_int_eq(fhjit_graph_set_moduli(d2, (uint64_t[]){268369921, 134176769}, 2), FHJIT_OK);
  fhjit_type tx = s7->nodes[fhjit_find_value(s7, "x")].decl, tt = s7->nodes[fhjit_find_value(s7, "tb")].decl;
  fhjit_value x2 = fhjit_input(d2, "x", &tx), t2 = fhjit_input(d2, "t", &tt);
  ck_assert_int_eq(ir_clone_op(d2, s7, bconv, (fhjit_value[]){x2, t2}), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_TYPE);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), "bconv: target basis") &&
                    tu_contains(fhjit_last_error(ctx), "past the chain"),
                "%s", fhjit_last_error(ctx));
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("clone");
  TCase *tc = tcase_create("clone");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_every_op);
  tcase_add_test(tc, test_random_graphs);
  tcase_add_test(tc, test_refused);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
