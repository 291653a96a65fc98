/* test_hash.c: the canonical graph hash (compile-cache key): equal for the
 * same graph however built and named, different for any difference of op,
 * operand order, attribute, radix, extent, stride, offset or output set. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "testutil.h"

/* What to vary in the reference graph. */
typedef enum variant {
  V_BASE = 0,
  V_RENAMED,       /* other value, output-independent and graph names */
  V_MODULI,        /* moduli attached */
  V_DEAD,          /* an extra value nobody uses */
  V_OP,            /* add instead of add_lazy */
  V_ORDER,         /* mul(b, a) instead of mul(a, b) */
  V_EXTRACT,       /* extract component 0 instead of 1 */
  V_DIGIT,         /* key digit 1 instead of 0 */
  V_ROW_START,     /* key row_start 1 instead of 0 */
  V_COMPRESSION,   /* contiguous instead of cyclic */
  V_ADD_DOMAIN,    /* NTT-domain compressed add instead of coefficient */
  V_RADIX,         /* r62 */
  V_EXTENT_N,      /* n = 16 */
  V_EXTENT_BATCH,  /* batch 3 */
  V_STRIDE,        /* a row-interleaved layout for a */
  V_OFFSET,        /* offset 8 for a */
  V_OUTPUT_EXTRA,  /* also output an intermediate */
  V_OUTPUT_ORDER,  /* outputs in the other order */
  V_OUTPUT_ALIAS,  /* also output an input view */
  V_NUM
} variant;

static const char *const variant_names[V_NUM] = {
    "base", "renamed", "moduli", "dead", "op", "order", "extract", "digit", "row_start",
    "compression", "add_domain", "radix", "extent_n", "extent_batch", "stride", "offset",
    "output_extra", "output_order", "output_alias"};

/* Builds and binds the reference graph (with one variation), returns its hash. */
static void graph_hash(variant v, uint64_t out[2]) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, v == V_RENAMED ? "other" : "g",
                                      v == V_RADIX ? FHJIT_R62 : FHJIT_R32);
  int64_t batch[] = {v == V_EXTENT_BATCH ? 3 : 2};
  int64_t n = v == V_EXTENT_N ? 16 : 8;
  const char *na = v == V_RENAMED ? "x" : "a";
  fhjit_type ct = tu_poly(2, 1, batch, 3, n);
  fhjit_value a = fhjit_input(g, na, &ct);
  fhjit_value b = fhjit_input(g, v == V_RENAMED ? "y" : "b", &ct);
  fhjit_type pt = tu_poly(0, 1, batch, 3, 4);
  fhjit_value p = fhjit_input(g, "p", &pt);
  fhjit_type kt = tu_key(2, 4, n);
  fhjit_value key = fhjit_input(g, "key", &kt);
  if (v == V_STRIDE || v == V_OFFSET) {
    fhjit_layout l;
    fhjit_dense_layout(&ct, &l);
    if (v == V_STRIDE) l.row_stride = 1, l.index_stride = 3;
    else l.offset = 8;
    ck_assert_int_eq(fhjit_bind_input(g, a, &ct, &l), FHJIT_OK);
  }
  if (v == V_MODULI) {
    const uint64_t q[] = {268369921, 134176769, 786433};
    ck_assert_int_eq(fhjit_graph_set_moduli(g, q, 3), FHJIT_OK);
  }
  fhjit_value m = v == V_ORDER ? fhjit_mul(g, b, a) : fhjit_mul(g, a, b);
  if (v == V_DEAD) fhjit_neg(g, m);
  fhjit_value s = v == V_OP ? fhjit_add(g, m, a) : fhjit_add_lazy(g, m, a);
  fhjit_value e = fhjit_extract(g, s, v == V_EXTRACT ? 0 : 1);
  fhjit_value ks = fhjit_keyswitch_digit_product(g, e, key, v == V_DIGIT ? 1 : 0,
                                                 v == V_ROW_START ? 1 : 0);
  fhjit_value c = fhjit_add_compressed(g, ks, p, v == V_COMPRESSION ? FHJIT_CONTIGUOUS : FHJIT_CYCLIC,
                                       FHJIT_NO_VALUE,
                                       v == V_ADD_DOMAIN ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF);
  ck_assert_msg(c != FHJIT_NO_VALUE, "%s", fhjit_last_error(ctx));
  if (v == V_RENAMED) {
    fhjit_set_name(g, m, "product");
    fhjit_set_name(g, ks, "keyed");
  }
  if (v == V_OUTPUT_ORDER) {
    fhjit_output(g, s, "s");
    fhjit_output(g, c, "c");
  } else {
    fhjit_output(g, c, v == V_RENAMED ? "result" : "c");
    fhjit_output(g, s, "s");
  }
  if (v == V_OUTPUT_EXTRA) fhjit_output(g, m, "m");
  if (v == V_OUTPUT_ALIAS) fhjit_output(g, b, "b_view");
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s: %s", variant_names[v], fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_graph_hash(g, out), FHJIT_OK);
  /* stable: hashing again gives the same */
  uint64_t again[2];
  ck_assert_int_eq(fhjit_graph_hash(g, again), FHJIT_OK);
  ck_assert(again[0] == out[0] && again[1] == out[1]);
  fhjit_context_destroy(ctx);
}

START_TEST(test_hash_variants) {
  uint64_t h[V_NUM][2];
  for (int v = 0; v < V_NUM; v++) graph_hash((variant)v, h[v]);
  /* built twice: equal */
  uint64_t twice[2];
  graph_hash(V_BASE, twice);
  ck_assert(twice[0] == h[V_BASE][0] && twice[1] == h[V_BASE][1]);
  /* names, moduli and dead values do not count */
  for (int v = V_RENAMED; v <= V_DEAD; v++)
    ck_assert_msg(h[v][0] == h[V_BASE][0] && h[v][1] == h[V_BASE][1], "%s changed the hash",
                  variant_names[v]);
  /* every semantic or layout difference does, and all of them differ
   * pairwise (in both halves) */
  for (int v = V_OP; v < V_NUM; v++)
    for (int w = V_BASE; w < v; w++) {
      if (w >= V_RENAMED && w <= V_DEAD) continue;
      ck_assert_msg(h[v][0] != h[w][0] && h[v][1] != h[w][1], "%s and %s hash equal",
                    variant_names[v], variant_names[w]);
    }
}
END_TEST

/* Section 7: graphs that differ only in the domain of an automorphism's
 * operand (a different permutation) or in the form of bconv's operand (a
 * different conversion) compile to different code, so they must not share
 * a cache key (the kernel cache returned the NTT-domain permutation for
 * the coefficient-domain graph on the H200 before these were hashed). */
static void s7_hash(const char *text, uint64_t out[2]) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_parse(ctx, text, strlen(text), "s7.fh");
  ck_assert_msg(g != NULL, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g, out), FHJIT_OK);
  fhjit_context_destroy(ctx);
}

START_TEST(test_hash_s7_domain_form) {
  static const char *const texts[] = {
      "graph @a radix(r62) {\n  %x = input pt<[], 2, 64> ntt mont\n"
      "  %y = automorphism %x galois(5)\n  output %y\n}\n",
      "graph @a radix(r62) {\n  %x = input pt<[], 2, 64> coef mont\n"
      "  %y = automorphism %x galois(5)\n  output %y\n}\n",
      "graph @a radix(r62) {\n  %x = input pt<[], 2, 64> coef std\n"
      "  %y = automorphism %x galois(5)\n  output %y\n}\n",
      "graph @b radix(r32) moduli(1073707009, 1073698817, 1073692673) {\n"
      "  %x = input pt<[], 2, 64> coef std\n  %t = input table<4>\n"
      "  %y = bconv %x, %t basis(2)\n  output %y\n}\n",
      "graph @b radix(r32) moduli(1073707009, 1073698817, 1073692673) {\n"
      "  %x = input pt<[], 2, 64> coef mont\n  %t = input table<4>\n"
      "  %y = bconv %x, %t basis(2)\n  output %y\n}\n",
  };
  uint64_t h[5][2];
  for (int i = 0; i < 5; i++) s7_hash(texts[i], h[i]);
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < i; j++)
      ck_assert_msg(h[i][0] != h[j][0] || h[i][1] != h[j][1], "graphs %d and %d hash equal", j, i);
  /* a pointwise graph's hash does not move (graphs without section 7 ops
   * hash as before): add of two coefficient or NTT inputs alike */
  uint64_t p1[2], p2[2];
  s7_hash("graph @p radix(r62) {\n  %x = input pt<[], 2, 64> coef mont\n"
          "  %y = add %x, %x\n  output %y\n}\n", p1);
  s7_hash("graph @p radix(r62) {\n  %x = input pt<[], 2, 64> ntt mont\n"
          "  %y = add %x, %x\n  output %y\n}\n", p2);
  ck_assert(p1[0] == p2[0] && p1[1] == p2[1]);
}
END_TEST

/* Equal views hash equally: the stride of an axis of extent 1 is irrelevant. */
START_TEST(test_hash_canonical_layout) {
  uint64_t h[2][2];
  for (int k = 0; k < 2; k++) {
    fhjit_context *ctx = fhjit_context_create();
    fhjit_graph *g = fhjit_graph_create(ctx, "g", FHJIT_R32);
    int64_t batch[] = {1};
    fhjit_type t = tu_poly(1, 1, batch, 2, 8);
    fhjit_value a = fhjit_input(g, "a", &t);
    fhjit_layout l;
    fhjit_dense_layout(&t, &l);
    l.batch_stride[0] = k ? 999 : 0;
    l.comp_stride = k ? 77 : 0;
    ck_assert_int_eq(fhjit_bind_input(g, a, &t, &l), FHJIT_OK);
    fhjit_output(g, fhjit_neg(g, a), "out");
    ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
    ck_assert_int_eq(fhjit_graph_hash(g, h[k]), FHJIT_OK);
    fhjit_context_destroy(ctx);
  }
  ck_assert(h[0][0] == h[1][0] && h[0][1] == h[1][1]);
}
END_TEST

START_TEST(test_hash_needs_binding) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "g", FHJIT_R32);
  fhjit_type t = tu_poly(2, 0, NULL, 2, 8);
  fhjit_value a = fhjit_input(g, "a", &t);
  fhjit_output(g, fhjit_neg(g, a), "out");
  uint64_t h[2] = {1, 2};
  ck_assert_int_eq(fhjit_graph_hash(g, h), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "not bound"));
  ck_assert(h[0] == 1 && h[1] == 2);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g, NULL), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_graph_hash(NULL, h), FHJIT_ERR_ARGUMENT);
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("hash");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_hash_variants);
  tcase_add_test(tc, test_hash_canonical_layout);
  tcase_add_test(tc, test_hash_needs_binding);
  tcase_add_test(tc, test_hash_s7_domain_form);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
