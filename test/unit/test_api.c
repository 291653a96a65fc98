/* test_api.c: misuse of the public API. Null pointers, foreign or stale value
 * ids, out-of-range indices and calls in the wrong order must give an error
 * status (and, where there is a context, a message), never a crash, and a
 * failed call must leave the graph and the caller's data as they were. Also
 * the exact text of fhjit_type_text, the one printer of a type that the
 * tools share with fhjit_print, and its snprintf-like contract. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "testutil.h"

static fhjit_context *ctx;
static fhjit_graph *g;
static fhjit_value a, b, p, key; /* ct<2>, ct<2>, pt, key */

static void setup(void) {
  ctx = fhjit_context_create();
  ck_assert_ptr_nonnull(ctx);
  g = fhjit_graph_create(ctx, "api", FHJIT_R32);
  ck_assert_ptr_nonnull(g);
  fhjit_type ct = tu_poly(2, 0, NULL, 2, 8), pt = tu_poly(0, 0, NULL, 2, 8), kt = tu_key(2, 2, 8);
  a = fhjit_input(g, "a", &ct);
  b = fhjit_input(g, "b", &ct);
  p = fhjit_input(g, "p", &pt);
  key = fhjit_input(g, "key", &kt);
  ck_assert(a >= 0 && b >= 0 && p >= 0 && key >= 0);
  fhjit_clear_error(ctx);
}

static void teardown(void) { fhjit_context_destroy(ctx); }

/* A failed call on the fixture graph: a status other than OK recorded with a
 * message, and no value added. */
static void expect_failed(fhjit_status st, int32_t values_before, const char *what) {
  ck_assert_msg(st != FHJIT_OK, "%s: succeeded", what);
  ck_assert_msg(fhjit_last_status(ctx) == st, "%s: status %d, recorded %d", what, st,
                fhjit_last_status(ctx));
  ck_assert_msg(strlen(fhjit_last_error(ctx)) > 0, "%s: no message", what);
  ck_assert_int_eq(fhjit_num_values(g), values_before);
  fhjit_clear_error(ctx);
}

/* A builder call that must return FHJIT_NO_VALUE with an error. */
#define EXPECT_NO_VALUE(call)                                                  \
  do {                                                                         \
    int32_t before_ = fhjit_num_values(g);                                     \
    fhjit_value v_ = (call);                                                   \
    ck_assert_msg(v_ == FHJIT_NO_VALUE, "%s returned %d", #call, (int)v_);     \
    expect_failed(fhjit_last_status(ctx), before_, #call);                     \
  } while (0)

#define EXPECT_STATUS(call)                                                    \
  do {                                                                         \
    int32_t before_ = fhjit_num_values(g);                                     \
    fhjit_status st_ = (call);                                                 \
    expect_failed(st_, before_, #call);                                        \
  } while (0)

START_TEST(test_context_calls) {
  fhjit_context_destroy(NULL);
  ck_assert_int_ne(fhjit_last_status(NULL), FHJIT_OK);
  ck_assert_ptr_nonnull(fhjit_last_error(NULL));
  fhjit_clear_error(NULL);
  ck_assert_str_eq(fhjit_status_name((fhjit_status)999), "unknown status");
  for (int s = FHJIT_OK; s <= FHJIT_ERR_IO; s++)
    ck_assert_ptr_nonnull(fhjit_status_name((fhjit_status)s));
  ck_assert_str_eq(fhjit_version(), FHJIT_VERSION_STRING);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_OK);
  ck_assert_str_eq(fhjit_last_error(ctx), "");
  /* graphs */
  ck_assert_ptr_null(fhjit_graph_create(NULL, "x", FHJIT_R32));
  ck_assert_ptr_null(fhjit_graph_create(ctx, "x", (fhjit_radix)5));
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "radix"));
  fhjit_clear_error(ctx);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_OK);
  fhjit_graph_destroy(NULL);
  ck_assert_ptr_null(fhjit_graph_context(NULL));
  ck_assert_ptr_null(fhjit_graph_name(NULL));
  ck_assert_int_eq(fhjit_graph_radix(NULL), FHJIT_R32);
  ck_assert_ptr_eq(fhjit_graph_context(g), ctx);
  fhjit_graph *unnamed = fhjit_graph_create(ctx, NULL, FHJIT_R62);
  ck_assert_ptr_nonnull(unnamed);
  ck_assert_ptr_nonnull(fhjit_graph_name(unnamed));
  fhjit_graph_destroy(unnamed);
  /* moduli */
  const uint64_t q[] = {268369921, 8};
  ck_assert_int_eq(fhjit_graph_set_moduli(NULL, q, 1), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_graph_set_moduli(g, NULL, 1));
  EXPECT_STATUS(fhjit_graph_set_moduli(g, q, -1));
  EXPECT_STATUS(fhjit_graph_set_moduli(g, q, 2));
  ck_assert_int_eq(fhjit_graph_num_moduli(g), 0); /* untouched */
  ck_assert_int_eq(fhjit_graph_set_moduli(g, q, 1), FHJIT_OK);
  EXPECT_STATUS(fhjit_graph_set_moduli(g, q, 2));
  ck_assert_int_eq(fhjit_graph_num_moduli(g), 1);
  ck_assert_uint_eq(fhjit_graph_moduli(g)[0], 268369921);
  ck_assert_int_eq(fhjit_graph_num_moduli(NULL), 0);
  ck_assert_ptr_null(fhjit_graph_moduli(NULL));
  /* types */
  fhjit_layout l;
  fhjit_type t = tu_poly(2, 0, NULL, FHJIT_UNKNOWN, 8);
  ck_assert_int_eq(fhjit_dense_layout(NULL, &l), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_dense_layout(&t, NULL), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_dense_layout(&t, &l), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_type_elements(NULL), -1);
  ck_assert_int_eq(fhjit_type_elements(&t), -1);
}
END_TEST

START_TEST(test_builder_calls) {
  fhjit_type ct = tu_poly(2, 0, NULL, 2, 8);
  /* inputs */
  ck_assert_int_eq(fhjit_input(NULL, "x", &ct), FHJIT_NO_VALUE);
  EXPECT_NO_VALUE(fhjit_input(g, "x", NULL));
  EXPECT_NO_VALUE(fhjit_input(g, "bad name!", &ct));
  EXPECT_NO_VALUE(fhjit_input(g, "", &ct));
  EXPECT_NO_VALUE(fhjit_input(g, "a", &ct)); /* defined twice */
  fhjit_type bad = ct;
  bad.kind = (fhjit_kind)9;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = ct, bad.comps = 4;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = ct, bad.nbatch = 5;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = ct, bad.nbatch = -1;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = ct, bad.rows = 0;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = ct, bad.n = -7;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = ct, bad.domain = (fhjit_domain)7;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = ct, bad.form = (fhjit_form)7;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = tu_key(0, 2, 8);
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = tu_key(2, 2, 8), bad.comps = 3;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));
  bad = tu_poly(0, 0, NULL, 2, 8), bad.kind = FHJIT_KIND_TWIDDLE, bad.nbatch = 1, bad.batch[0] = 2;
  EXPECT_NO_VALUE(fhjit_input(g, "x", &bad));

  /* every op: null graph, ids that are no values, wrong kinds */
  const fhjit_value ids[] = {-1, FHJIT_NO_VALUE, 1000, INT32_MAX, INT32_MIN};
  fhjit_value (*const binops[])(fhjit_graph *, fhjit_value, fhjit_value) = {
      fhjit_add, fhjit_sub, fhjit_add_lazy, fhjit_mul, fhjit_mul_plain, fhjit_add_plain};
  for (size_t o = 0; o < sizeof binops / sizeof *binops; o++) {
    ck_assert_int_eq(binops[o](NULL, a, b), FHJIT_NO_VALUE);
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
      EXPECT_NO_VALUE(binops[o](g, a, ids[i]));
      EXPECT_NO_VALUE(binops[o](g, ids[i], a));
    }
    EXPECT_NO_VALUE(binops[o](g, a, key));
    EXPECT_NO_VALUE(binops[o](g, key, a));
  }
  fhjit_value (*const unops[])(fhjit_graph *, fhjit_value) = {fhjit_neg, fhjit_to_mont,
                                                              fhjit_from_mont};
  for (size_t o = 0; o < sizeof unops / sizeof *unops; o++) {
    ck_assert_int_eq(unops[o](NULL, a), FHJIT_NO_VALUE);
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) EXPECT_NO_VALUE(unops[o](g, ids[i]));
    EXPECT_NO_VALUE(unops[o](g, key));
  }
  /* compressed */
  ck_assert_int_eq(fhjit_mul_compressed(NULL, a, p, FHJIT_CYCLIC, FHJIT_NO_VALUE), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_add_compressed(NULL, a, p, FHJIT_CYCLIC, FHJIT_NO_VALUE, FHJIT_DOMAIN_NTT),
                   FHJIT_NO_VALUE);
  EXPECT_NO_VALUE(fhjit_mul_compressed(g, a, 77, FHJIT_CYCLIC, FHJIT_NO_VALUE));
  EXPECT_NO_VALUE(fhjit_mul_compressed(g, a, p, (fhjit_compression)-1, FHJIT_NO_VALUE));
  EXPECT_NO_VALUE(fhjit_mul_compressed(g, a, p, FHJIT_STRIDED_SPARSE, 77));
  EXPECT_NO_VALUE(fhjit_mul_compressed(g, a, p, FHJIT_STRIDED_SPARSE, key));
  EXPECT_NO_VALUE(fhjit_add_compressed(g, a, p, FHJIT_CYCLIC, FHJIT_NO_VALUE, FHJIT_DOMAIN_ANY));
  EXPECT_NO_VALUE(fhjit_add_compressed(g, a, p, FHJIT_CYCLIC, FHJIT_NO_VALUE, (fhjit_domain)9));
  EXPECT_NO_VALUE(fhjit_add_compressed(g, a, key, FHJIT_CYCLIC, FHJIT_NO_VALUE, FHJIT_DOMAIN_NTT));
  /* key switch */
  ck_assert_int_eq(fhjit_keyswitch_digit_product(NULL, p, key, 0, 0), FHJIT_NO_VALUE);
  EXPECT_NO_VALUE(fhjit_keyswitch_digit_product(g, p, -3, 0, 0));
  EXPECT_NO_VALUE(fhjit_keyswitch_digit_product(g, -3, key, 0, 0));
  EXPECT_NO_VALUE(fhjit_keyswitch_digit_product(g, p, key, -1, 0));
  EXPECT_NO_VALUE(fhjit_keyswitch_digit_product(g, p, key, INT64_MAX, 0));
  EXPECT_NO_VALUE(fhjit_keyswitch_digit_product(g, p, key, 0, INT64_MIN));
  EXPECT_NO_VALUE(fhjit_keyswitch_digit_product(g, key, key, 0, 0));
  /* extract / pack */
  ck_assert_int_eq(fhjit_extract(NULL, a, 0), FHJIT_NO_VALUE);
  EXPECT_NO_VALUE(fhjit_extract(g, 99, 0));
  EXPECT_NO_VALUE(fhjit_extract(g, a, INT32_MAX));
  EXPECT_NO_VALUE(fhjit_extract(g, key, 0));
  fhjit_value parts[] = {p, p, p, p};
  fhjit_value bad_parts[] = {p, -5};
  ck_assert_int_eq(fhjit_pack(NULL, 2, parts), FHJIT_NO_VALUE);
  EXPECT_NO_VALUE(fhjit_pack(g, 2, NULL));
  EXPECT_NO_VALUE(fhjit_pack(g, 0, parts));
  EXPECT_NO_VALUE(fhjit_pack(g, 1, parts));
  EXPECT_NO_VALUE(fhjit_pack(g, -2, parts));
  EXPECT_NO_VALUE(fhjit_pack(g, 4, parts));
  EXPECT_NO_VALUE(fhjit_pack(g, 2, bad_parts));
  /* outputs and names */
  ck_assert_int_eq(fhjit_output(NULL, a, "o"), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_output(g, -1, "o"));
  EXPECT_STATUS(fhjit_output(g, 1000, "o"));
  EXPECT_STATUS(fhjit_output(g, key, "o"));
  EXPECT_STATUS(fhjit_output(g, a, "no way"));
  ck_assert_int_eq(fhjit_num_outputs(g), 0);
  ck_assert_int_eq(fhjit_output(g, a, "o"), FHJIT_OK);
  EXPECT_STATUS(fhjit_output(g, b, "o"));
  ck_assert_int_eq(fhjit_num_outputs(g), 1);
  ck_assert_int_eq(fhjit_set_name(NULL, a, "z"), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_set_name(g, -1, "z"));
  EXPECT_STATUS(fhjit_set_name(g, a, NULL));
  EXPECT_STATUS(fhjit_set_name(g, a, ""));
  EXPECT_STATUS(fhjit_set_name(g, a, "b"));
  EXPECT_STATUS(fhjit_set_name(g, a, "sp ace"));
  ck_assert_str_eq(fhjit_value_name(g, a), "a");
  /* a valid op still works after all that */
  fhjit_value s = fhjit_add(g, a, b);
  ck_assert_int_ne(s, FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_OK);
}
END_TEST

/* Names stay unique over many values, renames and the name index's
 * growth: every taken name is refused, freed names (renamed away) can be
 * given again, automatic names skip names the user took. */
START_TEST(test_many_names) {
  enum { N = 3000 };
  static fhjit_value v[N];
  char name[32];
  /* the user takes t<id> names of values to come */
  ck_assert_int_eq(fhjit_set_name(g, a, "t5"), FHJIT_OK);
  for (int i = 0; i < N; i++) {
    v[i] = fhjit_add(g, i ? v[i - 1] : a, b);
    ck_assert_int_ne(v[i], FHJIT_NO_VALUE);
  }
  ck_assert_str_eq(fhjit_value_name(g, 5), "t5_1"); /* automatic name skipped t5 */
  for (int i = 0; i < N; i += 7) {
    snprintf(name, sizeof name, "x%d", i);
    ck_assert_int_eq(fhjit_set_name(g, v[i], name), FHJIT_OK);
  }
  for (int i = 0; i < N; i += 7) {
    snprintf(name, sizeof name, "x%d", i);
    ck_assert_int_eq(fhjit_set_name(g, v[(i + 1) % N], name), FHJIT_ERR_TYPE); /* taken */
    ck_assert_str_eq(fhjit_value_name(g, v[i]), name);
    ck_assert_int_eq(fhjit_set_name(g, v[i], name), FHJIT_OK); /* its own name again */
  }
  /* renamed away, a name is free again */
  ck_assert_int_eq(fhjit_set_name(g, v[0], "first"), FHJIT_OK);
  ck_assert_int_eq(fhjit_set_name(g, v[1], "x0"), FHJIT_OK);
  ck_assert_int_eq(fhjit_set_name(g, v[2], "first"), FHJIT_ERR_TYPE);
  ck_assert_int_eq(fhjit_set_name(g, v[3], "b"), FHJIT_ERR_TYPE);
  ck_assert_int_eq(fhjit_set_name(g, v[3], "a"), FHJIT_OK); /* a is t5 now */
  ck_assert_int_eq(fhjit_set_name(g, v[3], "t5"), FHJIT_ERR_TYPE);
  fhjit_type ct = tu_poly(2, 0, NULL, 2, 8);
  ck_assert_int_eq(fhjit_input(g, "x7", &ct), FHJIT_NO_VALUE);
  ck_assert_int_ne(fhjit_input(g, "x8", &ct), FHJIT_NO_VALUE);
  fhjit_clear_error(ctx);
}
END_TEST

START_TEST(test_query_calls) {
  ck_assert_int_eq(fhjit_num_values(NULL), 0);
  ck_assert_int_eq(fhjit_num_inputs(NULL), 0);
  ck_assert_int_eq(fhjit_num_outputs(NULL), 0);
  ck_assert_int_eq(fhjit_input_value(NULL, 0), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_input_value(g, -1), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_input_value(g, 4), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_input_value(g, 3), key);
  ck_assert_ptr_null(fhjit_value_name(NULL, a));
  ck_assert_ptr_null(fhjit_value_name(g, -1));
  ck_assert_ptr_null(fhjit_value_name(g, 4));
  fhjit_type t;
  ck_assert_int_eq(fhjit_value_type(NULL, a, &t), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_value_type(g, a, NULL), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_value_type(g, 42, &t));
  ck_assert_int_eq(fhjit_find_value(NULL, "a"), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_find_value(g, NULL), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_find_value(g, "absent"), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_find_value(g, "b"), b);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_OK); /* absence is no error */
}
END_TEST

START_TEST(test_bind_calls) {
  fhjit_type ct = tu_poly(2, 0, NULL, 2, 8), t;
  fhjit_layout l;
  fhjit_output_info o;
  uint64_t h[2] = {5, 6};
  ck_assert_int_eq(fhjit_bind_input(NULL, a, &ct, NULL), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_bind_input(g, -1, &ct, NULL));
  EXPECT_STATUS(fhjit_bind_input(g, 99, &ct, NULL));
  ck_assert_int_eq(fhjit_bind(NULL), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_bind(g)); /* no outputs */
  ck_assert_int_eq(fhjit_is_bound(NULL), 0);
  ck_assert_int_eq(fhjit_num_results(NULL), 0);
  /* queries of an unbound graph */
  ck_assert_int_eq(fhjit_result_type(NULL, 0, &t), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_result_type(g, 0, &t));
  ck_assert_int_eq(fhjit_output_info_get(NULL, 0, &o), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_output_info_get(g, 0, &o));
  ck_assert_int_eq(fhjit_input_binding(NULL, 0, &t, &l), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_input_binding(g, 0, &t, &l));
  ck_assert_int_eq(fhjit_graph_hash(NULL, h), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_graph_hash(g, h));
  ck_assert(h[0] == 5 && h[1] == 6);
  /* bound: out-of-range indices and null outputs */
  fhjit_value s = fhjit_add(g, a, b);
  ck_assert_int_eq(fhjit_output(g, s, "s"), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  EXPECT_STATUS(fhjit_result_type(g, -1, &t));
  EXPECT_STATUS(fhjit_result_type(g, 1, &t));
  EXPECT_STATUS(fhjit_result_type(g, 0, NULL));
  EXPECT_STATUS(fhjit_output_info_get(g, 1, &o));
  EXPECT_STATUS(fhjit_output_info_get(g, -1, &o));
  EXPECT_STATUS(fhjit_output_info_get(g, 0, NULL));
  EXPECT_STATUS(fhjit_input_binding(g, 4, &t, &l));
  EXPECT_STATUS(fhjit_input_binding(g, -1, &t, &l));
  ck_assert_int_eq(fhjit_input_binding(g, 0, NULL, NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g, NULL), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_graph_hash(g, h), FHJIT_OK);
  /* a failed bind_input leaves the binding as it was */
  fhjit_layout neg = {.row_stride = -1};
  ck_assert(fhjit_is_bound(g));
  EXPECT_STATUS(fhjit_bind_input(g, a, &ct, &neg));
  ck_assert(fhjit_is_bound(g));
}
END_TEST

START_TEST(test_interpret_calls) {
  fhjit_value s = fhjit_add(g, a, b);
  fhjit_output(g, s, "s");
  uint32_t params[8 * 2], ins[3][64] = {{0}}, res[32];
  const uint64_t q[] = {268369921, 134176769};
  ck_assert_int_eq(fhjit_param_table(ctx, FHJIT_R32, q, 2, 8, 0, 1, params, 2), FHJIT_OK);
  const void *inputs[] = {ins[0], ins[1], ins[2], ins[2]};
  void *results[] = {res};
  ck_assert_int_eq(fhjit_interpret(NULL, params, 2, inputs, results), FHJIT_ERR_ARGUMENT);
  EXPECT_STATUS(fhjit_interpret(g, params, 2, inputs, results)); /* unbound */
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  EXPECT_STATUS(fhjit_interpret(g, NULL, 2, inputs, results));
  EXPECT_STATUS(fhjit_interpret(g, params, 2, NULL, results));
  EXPECT_STATUS(fhjit_interpret(g, params, 2, inputs, NULL));
  EXPECT_STATUS(fhjit_interpret(g, params, 0, inputs, results));
  EXPECT_STATUS(fhjit_interpret(g, params, -5, inputs, results));
  ck_assert_int_eq(fhjit_interpret(g, params, 2, inputs, results), FHJIT_OK);
  for (int i = 0; i < 32; i++) ck_assert_uint_eq(res[i], 0); /* 0 + 0 */
}
END_TEST

START_TEST(test_rns_calls) {
  uint64_t out[2], psi;
  uint32_t tw[16];
  const uint64_t q[] = {268369921};
  EXPECT_STATUS(fhjit_check_modulus(ctx, (fhjit_radix)-1, 268369921, 0));
  EXPECT_STATUS(fhjit_param_table(ctx, FHJIT_R32, NULL, 1, 8, 0, 1, tw, 1));
  EXPECT_STATUS(fhjit_param_table(ctx, FHJIT_R32, q, 1, 8, 0, 1, NULL, 1));
  EXPECT_STATUS(fhjit_param_table(ctx, FHJIT_R32, q, -1, 8, 0, 1, tw, 1));
  EXPECT_STATUS(fhjit_ntt_psi(ctx, 268369921, 8, NULL));
  EXPECT_STATUS(fhjit_ntt_psi(ctx, 268369921, -8, &psi));
  EXPECT_STATUS(fhjit_twiddle_tables(ctx, FHJIT_R32, NULL, 1, 8, tw, NULL));
  EXPECT_STATUS(fhjit_twiddle_tables(ctx, FHJIT_R32, q, 1, -8, tw, NULL));
  EXPECT_STATUS(fhjit_twiddle_tables(ctx, (fhjit_radix)3, q, 1, 8, tw, NULL));
  EXPECT_STATUS(fhjit_find_primes(ctx, 30, UINT64_C(1) << 18, 2, NULL));
  EXPECT_STATUS(fhjit_find_primes(ctx, 0, 2, 1, out));
  ck_assert_int_eq(fhjit_is_prime(0), 0);
  ck_assert_int_eq(fhjit_is_prime(1), 0);
  /* the helpers also work without a context (no message recorded) */
  ck_assert_int_eq(fhjit_param_table(NULL, FHJIT_R32, NULL, 1, 8, 0, 1, tw, 1),
                   FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_ntt_psi(NULL, 268369921, 8, &psi), FHJIT_OK);
}
END_TEST

START_TEST(test_text_calls) {
  ck_assert_ptr_null(fhjit_parse(NULL, "graph", 5, "x.fh"));
  ck_assert_ptr_null(fhjit_parse(ctx, NULL, 5, "x.fh"));
  ck_assert_int_ne(fhjit_last_status(ctx), FHJIT_OK);
  ck_assert_ptr_null(fhjit_print(NULL));
  ck_assert_ptr_null(fhjit_print_dot(NULL));
  ck_assert_ptr_null(fhjit_emit(NULL, FHJIT_EMIT_LLVM, NULL));
  ck_assert_int_eq(fhjit_run_host(NULL, NULL, 0, NULL, NULL, 0), FHJIT_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(fhjit_targets());
}
END_TEST

/* fhjit_type_text of t is exactly want, and a buffer of FHJIT_TYPE_TEXT_MAX
 * holds it. */
static void expect_type_text(const fhjit_type *t, const char *want) {
  char buf[FHJIT_TYPE_TEXT_MAX];
  size_t len = fhjit_type_text(t, buf, sizeof buf);
  ck_assert_str_eq(buf, want);
  ck_assert_uint_eq(len, strlen(want));
}

START_TEST(test_type_text) {
  const int64_t b2[] = {4, FHJIT_UNKNOWN}, b1[] = {1};
  /* every kind, without facts and with them; unknown extents are '?' */
  fhjit_type pt = tu_poly(0, 0, NULL, 2, 8);
  expect_type_text(&pt, "pt<[], 2, 8>");
  pt.form = FHJIT_FORM_STD;
  expect_type_text(&pt, "pt<[], 2, 8> std");
  fhjit_type ct = tu_poly(2, 2, b2, 2, 4096);
  expect_type_text(&ct, "ct<2, [4, ?], 2, 4096>");
  ct.domain = FHJIT_DOMAIN_NTT;
  ct.form = FHJIT_FORM_MONT;
  expect_type_text(&ct, "ct<2, [4, ?], 2, 4096> ntt mont");
  fhjit_type ct3 = tu_poly(3, 1, b1, FHJIT_UNKNOWN, FHJIT_UNKNOWN);
  ct3.domain = FHJIT_DOMAIN_COEF;
  expect_type_text(&ct3, "ct<3, [1], ?, ?> coef");
  fhjit_type kt = tu_key(2, 3, 8); /* the key's comps are printed, not assumed */
  expect_type_text(&kt, "key<2, 2, 3, 8>");
  kt.digits = FHJIT_UNKNOWN;
  kt.domain = FHJIT_DOMAIN_NTT;
  kt.form = FHJIT_FORM_MONT;
  expect_type_text(&kt, "key<?, 2, 3, 8> ntt mont");
  fhjit_type tw = {.kind = FHJIT_KIND_TWIDDLE, .rows = 2, .n = 16};
  expect_type_text(&tw, "twiddles<2, 16>");
  tw.rows = FHJIT_UNKNOWN;
  tw.form = FHJIT_FORM_MONT;
  expect_type_text(&tw, "twiddles<?, 16> mont");
  fhjit_type tab = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = 12};
  expect_type_text(&tab, "table<12>");
  tab.domain = FHJIT_DOMAIN_COEF; /* a table's text has no facts (as fhjit_print) */
  expect_type_text(&tab, "table<12>");

  /* the same text fhjit_print writes for an input of that type */
  const fhjit_type *decl[] = {&pt, &ct, &ct3, &kt, &tw, &tab};
  fhjit_graph *tg = fhjit_graph_create(ctx, "types", FHJIT_R32);
  ck_assert_ptr_nonnull(tg);
  for (int i = 0; i < 6; i++) {
    char name[16], line[FHJIT_TYPE_TEXT_MAX + 32];
    snprintf(name, sizeof name, "v%d", i);
    ck_assert_int_ge(fhjit_input(tg, name, decl[i]), 0);
    int len = snprintf(line, sizeof line, "  %%%s = input ", name);
    fhjit_type_text(decl[i], line + len, sizeof line - (size_t)len);
    strcat(line, "\n");
    ck_assert_msg(tu_contains(fhjit_print(tg), line), "fhjit_print lacks \"%s\"", line);
  }
  /* and the binder's messages: facts included, so a fact mismatch shows */
  fhjit_type coef = ct;
  coef.batch[1] = 5;
  coef.domain = FHJIT_DOMAIN_COEF;
  ck_assert_int_eq(fhjit_bind_input(tg, fhjit_find_value(tg, "v1"), &coef, NULL),
                   FHJIT_ERR_SHAPE);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx),
                            "binding input %v1 as ct<2, [4, 5], 2, 4096> coef mont: its domain "
                            "facts differ from the declaration (declared ct<2, [4, ?], 2, "
                            "4096> ntt mont)"),
                "%s", fhjit_last_error(ctx));
  fhjit_clear_error(ctx);
  fhjit_graph_destroy(tg);

  /* snprintf's contract: the whole length whatever the size, at most size
   * bytes written, always a NUL when size > 0 */
  const char *full = "ct<2, [4, ?], 2, 4096> ntt mont";
  size_t n = strlen(full);
  ck_assert_uint_eq(fhjit_type_text(&ct, NULL, 0), n);
  char buf[64];
  memset(buf, 'x', sizeof buf);
  ck_assert_uint_eq(fhjit_type_text(&ct, buf, 0), n);
  ck_assert_int_eq(buf[0], 'x'); /* size 0 writes nothing */
  ck_assert_uint_eq(fhjit_type_text(&ct, buf, 1), n);
  ck_assert_str_eq(buf, "");
  memset(buf, 'x', sizeof buf);
  ck_assert_uint_eq(fhjit_type_text(&ct, buf, 5), n);
  ck_assert_str_eq(buf, "ct<2");
  ck_assert_int_eq(buf[5], 'x');
  ck_assert_uint_eq(fhjit_type_text(&ct, buf, n), n); /* one byte short */
  ck_assert_int_eq(strncmp(buf, full, n - 1), 0);
  ck_assert_uint_eq(strlen(buf), n - 1);
  memset(buf, 'x', sizeof buf);
  ck_assert_uint_eq(fhjit_type_text(&ct, buf, n + 1), n);
  ck_assert_str_eq(buf, full);
  ck_assert_int_eq(buf[n + 1], 'x');

  /* a NULL type: the empty text, length 0 */
  memset(buf, 'x', sizeof buf);
  ck_assert_uint_eq(fhjit_type_text(NULL, buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "");
  ck_assert_uint_eq(fhjit_type_text(NULL, NULL, 0), 0);

  /* FHJIT_TYPE_TEXT_MAX is the bound: the longest text (every number at its
   * widest, both facts) fills it exactly; a batch rank past the limit reads
   * no further than batch[FHJIT_MAX_BATCH - 1] */
  fhjit_type widest = {.kind = FHJIT_KIND_POLY, .comps = INT32_MIN, .nbatch = FHJIT_MAX_BATCH,
                       .rows = INT64_MIN, .n = INT64_MIN, .domain = FHJIT_DOMAIN_COEF,
                       .form = FHJIT_FORM_MONT};
  for (int a = 0; a < FHJIT_MAX_BATCH; a++) widest.batch[a] = INT64_MIN;
  ck_assert_uint_eq(fhjit_type_text(&widest, NULL, 0), FHJIT_TYPE_TEXT_MAX - 1);
  widest.nbatch = 1000;
  ck_assert_uint_eq(fhjit_type_text(&widest, NULL, 0), FHJIT_TYPE_TEXT_MAX - 1);
  /* an unknown kind prints as a polynomial, unknown facts are left out */
  fhjit_type odd = tu_poly(1, 0, NULL, 2, 8);
  odd.kind = (fhjit_kind)9;
  odd.domain = (fhjit_domain)7;
  odd.form = (fhjit_form)-3;
  expect_type_text(&odd, "ct<1, [], 2, 8>");
}
END_TEST

int main(void) {
  Suite *s = suite_create("api");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_context_calls);
  tcase_add_test(tc, test_builder_calls);
  tcase_add_test(tc, test_query_calls);
  tcase_add_test(tc, test_many_names);
  tcase_add_test(tc, test_bind_calls);
  tcase_add_test(tc, test_interpret_calls);
  tcase_add_test(tc, test_rns_calls);
  tcase_add_test(tc, test_text_calls);
  tcase_add_test(tc, test_type_text);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
