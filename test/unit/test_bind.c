/* test_bind.c: the binding rules of SPEC section 4 (each failure names the
 * value and the rule) and the materialisation decisions: which outputs are
 * input views, which values become results, how outputs share them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "testutil.h"

static fhjit_context *ctx;
static fhjit_graph *g;

static void setup(void) {
  ctx = fhjit_context_create();
  g = fhjit_graph_create(ctx, "g", FHJIT_R32);
  ck_assert_ptr_nonnull(g);
}

static void teardown(void) { fhjit_context_destroy(ctx); }

static const int64_t B1[] = {1}, B2[] = {2}, B3[] = {3}, B31[] = {3, 1},
                     B4[] = {4};

static fhjit_value in(const char *name, fhjit_type t) {
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_msg(v != FHJIT_NO_VALUE, "%s", fhjit_last_error(ctx));
  return v;
}

static fhjit_value named(fhjit_value v, const char *name) {
  ck_assert_msg(v != FHJIT_NO_VALUE, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_set_name(g, v, name), FHJIT_OK);
  return v;
}

/* The last error has `status` and mentions every given fragment. */
static void expect_error(fhjit_status got, fhjit_status status, const char *f1, const char *f2,
                         const char *f3) {
  const char *msg = fhjit_last_error(ctx);
  ck_assert_msg(got == status, "status %d (%s), want %d: %s", got, fhjit_status_name(got), status,
                msg);
  ck_assert_int_eq(fhjit_last_status(ctx), status);
  const char *frags[] = {f1, f2, f3};
  for (int i = 0; i < 3; i++)
    if (frags[i]) ck_assert_msg(tu_contains(msg, frags[i]), "'%s' lacks '%s'", msg, frags[i]);
}

static void expect_bind_error(const char *f1, const char *f2, const char *f3) {
  expect_error(fhjit_bind(g), FHJIT_ERR_SHAPE, f1, f2, f3);
  ck_assert(!fhjit_is_bound(g));
  ck_assert_int_eq(fhjit_num_results(g), 0);
}

static void bind_ok(void) {
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert(fhjit_is_bound(g));
}

/* ------------------------------------------------------------ shape rules */

START_TEST(test_rows_n_mismatch) {
  fhjit_value a = in("a", tu_poly(2, 0, NULL, 4, 16)), b = in("b", tu_poly(2, 0, NULL, 3, 16));
  fhjit_output(g, named(fhjit_add(g, a, b), "sum"), NULL);
  expect_bind_error("%sum = add", "rows of %a is 4 but rows of %b is 3", "must be equal");
}
END_TEST

START_TEST(test_n_mismatch) {
  fhjit_value a = in("a", tu_poly(2, 0, NULL, 4, 16)), b = in("b", tu_poly(0, 0, NULL, 4, 8));
  fhjit_output(g, named(fhjit_mul_plain(g, a, b), "prod"), NULL);
  expect_bind_error("%prod = mul_plain", "n of %a is 16 but n of %b is 8", "must be equal");
}
END_TEST

START_TEST(test_batch_rules) {
  fhjit_value a = in("a", tu_poly(2, 1, B3, 2, 8)), b = in("b", tu_poly(2, 1, B2, 2, 8));
  fhjit_output(g, named(fhjit_sub(g, a, b), "diff"), NULL);
  expect_bind_error("%diff = sub", "batch axis 0 of %b has extent 2", "equal or 1");
}
END_TEST

START_TEST(test_batch_broadcast_ok) {
  fhjit_value a = in("a", tu_poly(2, 2, B31, 2, 8)), b = in("b", tu_poly(1, 1, B4, 2, 8));
  fhjit_value c = in("c", tu_poly(0, 1, B1, 2, 8)), d = in("d", tu_poly(3, 0, NULL, 2, 8));
  fhjit_value ab = fhjit_add(g, a, b);
  fhjit_value abc = fhjit_mul(g, ab, c);
  fhjit_value dc = fhjit_add_lazy(g, d, c);
  fhjit_output(g, abc, "abc");
  fhjit_output(g, dc, "dc");
  bind_ok();
  fhjit_type t;
  ck_assert_int_eq(fhjit_value_type(g, abc, &t), FHJIT_OK);
  ck_assert_int_eq(t.comps, 2);
  ck_assert_int_eq(t.nbatch, 2);
  ck_assert_int_eq(t.batch[0], 3);
  ck_assert_int_eq(t.batch[1], 4);
  ck_assert_int_eq(fhjit_value_type(g, dc, &t), FHJIT_OK);
  ck_assert_int_eq(t.comps, 3); /* a component-less operand broadcasts */
  ck_assert_int_eq(t.nbatch, 1);
  ck_assert_int_eq(t.batch[0], 1);
  ck_assert_int_eq(fhjit_num_results(g), 2);
  ck_assert_int_eq(fhjit_result_type(g, 0, &t), FHJIT_OK);
  ck_assert_int_eq(t.batch[0] * t.batch[1] * t.comps, 24);
}
END_TEST

START_TEST(test_component_counts) {
  fhjit_value a = in("a", tu_poly(2, 0, NULL, 2, 8)), b = in("b", tu_poly(3, 0, NULL, 2, 8));
  expect_error(fhjit_add(g, a, b) == FHJIT_NO_VALUE ? fhjit_last_status(ctx) : FHJIT_OK,
               FHJIT_ERR_TYPE, "%a has 2 components and %b has 3", "equal or one of them 1",
               NULL);
  fhjit_value c = in("c", tu_poly(1, 0, NULL, 2, 8));
  fhjit_value ac = fhjit_add(g, a, c);
  ck_assert_int_ne(ac, FHJIT_NO_VALUE);
  fhjit_type t;
  fhjit_value_type(g, ac, &t);
  ck_assert_int_eq(t.comps, 2);
  /* pack takes component-less operands, 2 or 3 of them */
  fhjit_value parts[] = {a, c};
  ck_assert_int_eq(fhjit_pack(g, 2, parts), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_TYPE, "%a has a component axis", NULL, NULL);
  ck_assert_int_eq(fhjit_pack(g, 4, parts), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT, "2 or 3", NULL, NULL);
}
END_TEST

START_TEST(test_pack_shapes) {
  fhjit_value x = in("x", tu_poly(0, 0, NULL, 4, 8)), y = in("y", tu_poly(0, 0, NULL, 3, 8));
  fhjit_value parts[] = {x, y};
  fhjit_output(g, named(fhjit_pack(g, 2, parts), "ct"), NULL);
  expect_bind_error("%ct = pack", "equal shapes", "%y is pt<[], 3, 8>");
}
END_TEST

START_TEST(test_compressed_rules) {
  fhjit_value ct = in("ct", tu_poly(2, 1, B2, 3, 16));
  fhjit_value p3 = in("p3", tu_poly(0, 1, B2, 3, 3));
  fhjit_output(g, named(fhjit_mul_compressed(g, ct, p3, FHJIT_CYCLIC, FHJIT_NO_VALUE), "m"),
               NULL);
  expect_bind_error("%m = mul_compressed", "u = 3", "does not divide n = 16");
}
END_TEST

START_TEST(test_compressed_implicit_rules) {
  fhjit_value ct = in("ct", tu_poly(2, 1, B2, 3, 16));
  fhjit_value p = in("p", tu_poly(0, 1, B2, 3, 4));
  fhjit_value im2 = in("im2", tu_poly(0, 1, B2, 3, 2));
  /* builder: the implicit operand exactly for strided_sparse */
  ck_assert_int_eq(fhjit_mul_compressed(g, ct, p, FHJIT_STRIDED_SPARSE, FHJIT_NO_VALUE),
                   FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_TYPE, "needs the per-row implicit", NULL, NULL);
  ck_assert_int_eq(fhjit_mul_compressed(g, ct, p, FHJIT_CONTIGUOUS, im2), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_TYPE, "only for the strided_sparse", NULL, NULL);
  ck_assert_int_eq(fhjit_mul_compressed(g, ct, p, (fhjit_compression)9, FHJIT_NO_VALUE),
                   FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT, "unknown compression", NULL, NULL);
  fhjit_output(
      g, named(fhjit_add_compressed(g, ct, p, FHJIT_STRIDED_SPARSE, im2, FHJIT_DOMAIN_NTT), "s"),
      NULL);
  expect_bind_error("%s = add_compressed", "implicit operand %im2", "last extent 1");
}
END_TEST

START_TEST(test_compressed_implicit_rows) {
  fhjit_value ct = in("ct", tu_poly(2, 0, NULL, 3, 16));
  fhjit_value p = in("p", tu_poly(0, 0, NULL, 3, 4));
  fhjit_value im = in("im", tu_poly(0, 0, NULL, 2, 1));
  fhjit_output(g, named(fhjit_mul_compressed(g, ct, p, FHJIT_STRIDED_SPARSE, im), "s"), NULL);
  expect_bind_error("%s = mul_compressed", "rows of %ct is 3 but rows of %im is 2", NULL);
}
END_TEST

START_TEST(test_extract_index) {
  fhjit_value a = in("a", tu_poly(2, 0, NULL, 2, 8)), p = in("p", tu_poly(0, 0, NULL, 2, 8));
  ck_assert_int_eq(fhjit_extract(g, a, 2), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_SHAPE, "component 2 of %a is out of range",
               "2 components", NULL);
  ck_assert_int_eq(fhjit_extract(g, a, -1), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_SHAPE, "out of range", NULL, NULL);
  ck_assert_int_eq(fhjit_extract(g, p, 0), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_SHAPE, "%p", "no axis", NULL);
  ck_assert_int_ne(fhjit_extract(g, a, 1), FHJIT_NO_VALUE);
}
END_TEST

START_TEST(test_key_rules) {
  fhjit_value d = in("d", tu_poly(0, 1, B2, 3, 8));
  fhjit_value key = in("key", tu_key(2, 5, 8));
  /* digits known at build time: checked by the builder */
  ck_assert_int_eq(fhjit_keyswitch_digit_product(g, d, key, 2, 0), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_SHAPE, "digit 2", "2 digits", NULL);
  ck_assert_int_eq(fhjit_keyswitch_digit_product(g, d, key, 0, -1), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_SHAPE, "row_start -1", ">= 0", NULL);
  fhjit_value ct = in("ct", tu_poly(2, 0, NULL, 3, 8));
  ck_assert_int_eq(fhjit_keyswitch_digit_product(g, ct, key, 0, 0), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_TYPE, "digit %ct must have no component axis",
               NULL, NULL);
  ck_assert_int_eq(fhjit_keyswitch_digit_product(g, d, d, 0, 0), FHJIT_NO_VALUE);
  expect_error(fhjit_last_status(ctx), FHJIT_ERR_TYPE, "%d is a polynomial value",
               "expected a key table", NULL);
  /* rows: row_start + rows must fit the key's rows (bind time) */
  fhjit_output(g, named(fhjit_keyswitch_digit_product(g, d, key, 1, 3), "ks"), NULL);
  expect_bind_error("%ks = keyswitch_digit_product", "key rows 3..5 are out of range",
                    "%key has 5 rows");
}
END_TEST

START_TEST(test_key_digits_at_bind) {
  fhjit_value d = in("d", tu_poly(0, 0, NULL, 3, 8));
  fhjit_type kt = tu_key(FHJIT_UNKNOWN, 5, 8);
  fhjit_value key = in("key", kt);
  fhjit_output(g, named(fhjit_keyswitch_digit_product(g, d, key, 2, 0), "ks"), NULL);
  kt.digits = 2;
  ck_assert_int_eq(fhjit_bind_input(g, key, &kt, NULL), FHJIT_OK);
  expect_bind_error("%ks = keyswitch_digit_product", "digit 2 is out of range",
                    "%key has 2 digits");
  kt.digits = 3;
  ck_assert_int_eq(fhjit_bind_input(g, key, &kt, NULL), FHJIT_OK);
  bind_ok();
}
END_TEST

START_TEST(test_key_n) {
  fhjit_value d = in("d", tu_poly(0, 0, NULL, 3, 8));
  fhjit_value key = in("key", tu_key(1, 5, 16));
  fhjit_output(g, named(fhjit_keyswitch_digit_product(g, d, key, 0, 0), "ks"), NULL);
  expect_bind_error("%ks = keyswitch_digit_product", "n of %d is 8 but n of %key is 16", NULL);
}
END_TEST

START_TEST(test_bind_input_rules) {
  fhjit_type decl = tu_poly(2, 1, B3, FHJIT_UNKNOWN, 16);
  fhjit_value a = in("a", decl);
  fhjit_output(g, fhjit_neg(g, a), "out");
  /* unknown extents, never bound */
  expect_bind_error("input %a has unknown extents", "bind it", NULL);
  fhjit_type t = decl;
  expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "%a",
               "every extent must be known", NULL);
  t.rows = 4;
  t.n = 8;
  expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "%a", "declared extent differs",
               NULL);
  t = decl, t.rows = 4, t.comps = 3;
  expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "component count", NULL, NULL);
  t = decl, t.rows = 4, t.nbatch = 2, t.batch[1] = 3;
  expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "batch rank", NULL, NULL);
  t = decl, t.rows = 4, t.kind = FHJIT_KIND_KEY;
  expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "kind", NULL, NULL);
  fhjit_type nd = tu_poly(0, 0, NULL, 2, 8);
  nd.domain = FHJIT_DOMAIN_NTT;
  fhjit_value p = in("p", nd);
  t = nd, t.domain = FHJIT_DOMAIN_COEF;
  expect_error(fhjit_bind_input(g, p, &t, NULL), FHJIT_ERR_SHAPE, "%p", "domain facts", NULL);
  /* negative strides and offsets */
  t = decl, t.rows = 4;
  fhjit_layout l;
  ck_assert_int_eq(fhjit_dense_layout(&t, &l), FHJIT_OK);
  l.row_stride = -16;
  expect_error(fhjit_bind_input(g, a, &t, &l), FHJIT_ERR_SHAPE, "%a", "non-negative", NULL);
  l.row_stride = 16, l.offset = -1;
  expect_error(fhjit_bind_input(g, a, &t, &l), FHJIT_ERR_SHAPE, "%a", "non-negative", NULL);
  l.offset = 0, l.batch_stride[0] = -1;
  expect_error(fhjit_bind_input(g, a, &t, &l), FHJIT_ERR_SHAPE, "%a", "non-negative", NULL);
  /* a layout past 2^62 elements */
  l.batch_stride[0] = 128, l.offset = INT64_C(1) << 62;
  ck_assert_int_eq(fhjit_bind_input(g, a, &t, &l), FHJIT_OK);
  expect_bind_error("input %a", "2^62", NULL);
  /* not an input */
  fhjit_value neg = fhjit_neg(g, p);
  expect_error(fhjit_bind_input(g, neg, NULL, NULL), FHJIT_ERR_ARGUMENT, "not an input", NULL,
               NULL);
  /* fixed: binds */
  l.offset = 7;
  ck_assert_int_eq(fhjit_bind_input(g, a, &t, &l), FHJIT_OK);
  bind_ok();
  fhjit_type bt;
  fhjit_layout bl;
  ck_assert_int_eq(fhjit_input_binding(g, 0, &bt, &bl), FHJIT_OK);
  ck_assert_int_eq(bt.rows, 4);
  ck_assert_int_eq(bl.offset, 7);
  ck_assert_int_eq(bl.batch_stride[0], 128);
}
END_TEST

START_TEST(test_element_overflow) {
  fhjit_value big = in("big", tu_poly(0, 0, NULL, INT64_C(1) << 40, INT64_C(1) << 40));
  expect_error(fhjit_bind_input(g, big, NULL, NULL), FHJIT_ERR_SHAPE, "%big", "overflows", NULL);
  fhjit_output(g, fhjit_neg(g, big), NULL);
  expect_bind_error("input %big", NULL, NULL);
}
END_TEST

/* Each operand fits, but broadcasting their batches gives a value of
 * 2^31 x 2^31 x 2^2 x 2^4 = 2^68 elements: refused at bind time, naming the
 * value, and no output layout is handed out. The operands' own sizes
 * (2^38 elements each) bind. */
START_TEST(test_broadcast_result_overflow) {
  const int64_t bl[] = {INT64_C(1) << 31, 1}, br[] = {1, INT64_C(1) << 31};
  fhjit_value a = in("a", tu_poly(0, 2, bl, 4, 16));
  fhjit_value b = in("b", tu_poly(0, 2, br, 4, 16));
  fhjit_value s = named(fhjit_add(g, a, b), "s");
  fhjit_output(g, s, "out");
  expect_bind_error("%s = add", "2^62 elements", NULL);
  fhjit_output_info info;
  expect_error(fhjit_output_info_get(g, 0, &info), FHJIT_ERR_ARGUMENT, "not bound", NULL, NULL);
}
END_TEST

/* A batch rank outside 0..4 in the type given to fhjit_bind_input is named
 * as such; the message never reads past the batch array (ASan checks). */
START_TEST(test_bind_input_bad_batch_rank) {
  fhjit_value a = in("a", tu_poly(2, 1, B2, 3, 8));
  int ranks[] = {5, 1000, -1, INT32_MAX, INT32_MIN};
  for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++) {
    fhjit_type t = tu_poly(2, 1, B2, 3, 8);
    t.nbatch = ranks[i];
    expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "%a", "batch rank",
                 "declared ct<2, [2], 3, 8>");
    ck_assert_int_eq(fhjit_type_elements(&t), -1);
  }
  fhjit_type t = tu_poly(2, 1, B2, 3, 8);
  t.comps = 7;
  expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "%a", "component count", NULL);
  t = tu_poly(2, 1, B2, 3, 8);
  t.kind = (fhjit_kind)99;
  expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "%a", "kind", NULL);
  t = tu_poly(2, 1, B2, 3, 8);
  t.form = (fhjit_form)77;
  expect_error(fhjit_bind_input(g, a, &t, NULL), FHJIT_ERR_SHAPE, "%a", "unknown form", NULL);
}
END_TEST

START_TEST(test_no_outputs) {
  in("a", tu_poly(2, 0, NULL, 2, 8));
  expect_error(fhjit_bind(g), FHJIT_ERR_TYPE, "@g has no outputs", NULL, NULL);
}
END_TEST

/* --------------------------------------------------------- materialisation */

START_TEST(test_input_aliases) {
  fhjit_value a = in("a", tu_poly(2, 1, B2, 3, 8));
  fhjit_type t = tu_poly(2, 1, B2, 3, 8);
  fhjit_layout l = {.offset = 5, .comp_stride = 1000, .batch_stride = {100}, .row_stride = 20,
                    .index_stride = 2};
  ck_assert_int_eq(fhjit_bind_input(g, a, &t, &l), FHJIT_OK);
  fhjit_output(g, a, "whole");
  fhjit_output(g, fhjit_extract(g, a, 1), "c1");
  bind_ok();
  ck_assert_int_eq(fhjit_num_results(g), 0);
  ck_assert_int_eq(fhjit_num_outputs(g), 2);
  fhjit_output_info o;
  ck_assert_int_eq(fhjit_output_info_get(g, 0, &o), FHJIT_OK);
  ck_assert_str_eq(o.name, "whole");
  ck_assert_int_eq(o.is_input_alias, 1);
  ck_assert_int_eq(o.source, 0);
  ck_assert_int_eq(o.component, -1);
  ck_assert_int_eq(o.layout.offset, 5);
  ck_assert_int_eq(o.layout.comp_stride, 1000);
  ck_assert_int_eq(o.layout.row_stride, 20);
  ck_assert_int_eq(o.type.comps, 2);
  ck_assert_int_eq(fhjit_output_info_get(g, 1, &o), FHJIT_OK);
  ck_assert_int_eq(o.is_input_alias, 1);
  ck_assert_int_eq(o.source, 0);
  ck_assert_int_eq(o.component, 1);
  ck_assert_int_eq(o.layout.offset, 1005);
  ck_assert_int_eq(o.layout.comp_stride, 0);
  ck_assert_int_eq(o.layout.index_stride, 2);
  ck_assert_int_eq(o.layout.batch_stride[0], 100);
  ck_assert_int_eq(o.type.comps, 0);
}
END_TEST

START_TEST(test_extract_of_computed) {
  fhjit_value a = in("a", tu_poly(2, 1, B2, 3, 8)), b = in("b", tu_poly(2, 1, B2, 3, 8));
  fhjit_value s = fhjit_add(g, a, b);
  fhjit_output(g, fhjit_extract(g, s, 1), "s1");
  bind_ok();
  ck_assert_int_eq(fhjit_num_results(g), 1);
  fhjit_type rt;
  ck_assert_int_eq(fhjit_result_type(g, 0, &rt), FHJIT_OK);
  ck_assert_int_eq(rt.comps, 2); /* the whole value */
  ck_assert_int_eq(rt.batch[0], 2);
  fhjit_output_info o;
  ck_assert_int_eq(fhjit_output_info_get(g, 0, &o), FHJIT_OK);
  ck_assert_int_eq(o.is_input_alias, 0);
  ck_assert_int_eq(o.source, 0);
  ck_assert_int_eq(o.component, 1);
  ck_assert_int_eq(o.layout.offset, 2 * 3 * 8); /* component 1 of dense [2, 2, 3, 8] */
  ck_assert_int_eq(o.layout.row_stride, 8);
  ck_assert_int_eq(o.layout.batch_stride[0], 24);
  ck_assert_int_eq(o.type.comps, 0);
}
END_TEST

START_TEST(test_outputs_share_results) {
  fhjit_value a = in("a", tu_poly(2, 0, NULL, 3, 8)), b = in("b", tu_poly(2, 0, NULL, 3, 8));
  fhjit_value s = fhjit_add(g, a, b), m = fhjit_mul(g, a, b);
  fhjit_output(g, m, "m");
  fhjit_output(g, s, "x");
  fhjit_output(g, s, "y");
  fhjit_output(g, fhjit_extract(g, s, 0), "s0");
  fhjit_output(g, fhjit_extract(g, m, 1), "m1");
  fhjit_output(g, b, "b_view");
  expect_error(fhjit_output(g, s, "x"), FHJIT_ERR_TYPE, "'x' is used twice", NULL, NULL);
  bind_ok();
  ck_assert_int_eq(fhjit_num_results(g), 2);
  fhjit_type rt;
  ck_assert_int_eq(fhjit_result_type(g, 0, &rt), FHJIT_OK); /* first appearance: m */
  ck_assert_int_eq(fhjit_result_type(g, 2, &rt), FHJIT_ERR_ARGUMENT);
  const int32_t source[] = {0, 1, 1, 1, 0, 1};
  const int32_t alias[] = {0, 0, 0, 0, 0, 1};
  const int32_t comp[] = {-1, -1, -1, 0, 1, -1};
  for (int i = 0; i < 6; i++) {
    fhjit_output_info o;
    ck_assert_int_eq(fhjit_output_info_get(g, i, &o), FHJIT_OK);
    ck_assert_int_eq(o.source, source[i]);
    ck_assert_int_eq(o.is_input_alias, alias[i]);
    ck_assert_int_eq(o.component, comp[i]);
  }
  /* a change unbinds */
  fhjit_neg(g, a);
  ck_assert(!fhjit_is_bound(g));
  ck_assert_int_eq(fhjit_num_results(g), 0);
  fhjit_output_info o;
  expect_error(fhjit_output_info_get(g, 0, &o), FHJIT_ERR_ARGUMENT, "not bound", NULL, NULL);
}
END_TEST

START_TEST(test_pack_materialised) {
  fhjit_value a = in("a", tu_poly(2, 0, NULL, 3, 8));
  fhjit_value parts[] = {fhjit_extract(g, a, 1), fhjit_extract(g, a, 0)};
  fhjit_value swapped = fhjit_pack(g, 2, parts);
  fhjit_output(g, swapped, "swapped");
  fhjit_output(g, fhjit_extract(g, swapped, 0), "first");
  bind_ok();
  ck_assert_int_eq(fhjit_num_results(g), 1);
  fhjit_output_info o;
  ck_assert_int_eq(fhjit_output_info_get(g, 1, &o), FHJIT_OK);
  ck_assert_int_eq(o.is_input_alias, 0); /* extract of a computed value */
  ck_assert_int_eq(o.component, 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bind");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_rows_n_mismatch);
  tcase_add_test(tc, test_n_mismatch);
  tcase_add_test(tc, test_batch_rules);
  tcase_add_test(tc, test_batch_broadcast_ok);
  tcase_add_test(tc, test_component_counts);
  tcase_add_test(tc, test_pack_shapes);
  tcase_add_test(tc, test_compressed_rules);
  tcase_add_test(tc, test_compressed_implicit_rules);
  tcase_add_test(tc, test_compressed_implicit_rows);
  tcase_add_test(tc, test_extract_index);
  tcase_add_test(tc, test_key_rules);
  tcase_add_test(tc, test_key_digits_at_bind);
  tcase_add_test(tc, test_key_n);
  tcase_add_test(tc, test_bind_input_rules);
  tcase_add_test(tc, test_element_overflow);
  tcase_add_test(tc, test_broadcast_result_overflow);
  tcase_add_test(tc, test_bind_input_bad_batch_rank);
  tcase_add_test(tc, test_no_outputs);
  tcase_add_test(tc, test_input_aliases);
  tcase_add_test(tc, test_extract_of_computed);
  tcase_add_test(tc, test_outputs_share_results);
  tcase_add_test(tc, test_pack_materialised);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
