/* test_text.c: the .fh text format from the C API's side. Graphs built with
 * the builder (automatic names, odd graph names, inputs bound with concrete
 * types and strided layouts, random graphs from randgraph.h) must print text
 * that parses back to the same text, the same binding and the same hash;
 * diagnostics must carry file:line:col, the source line and a caret, also for
 * errors found after the text buffer is gone. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "randgraph.h"
#include "testutil.h"

static fhjit_context *ctx;

static void setup(void) { ctx = fhjit_context_create(); }
static void teardown(void) { fhjit_context_destroy(ctx); }

static fhjit_graph *parse_ok(const char *text) {
  fhjit_graph *g = fhjit_parse(ctx, text, strlen(text), "t.fh");
  ck_assert_msg(g != NULL, "%s\n--- text ---\n%s", fhjit_last_error(ctx), text);
  return g;
}

static void parse_fails(const char *text, size_t len, fhjit_status status, const char *message) {
  fhjit_graph *g = fhjit_parse(ctx, text, len, "t.fh");
  ck_assert_ptr_null(g);
  ck_assert_int_eq(fhjit_last_status(ctx), status);
  ck_assert_str_eq(fhjit_last_error(ctx), message);
}

/* Everything a run depends on agrees between two bound graphs. */
static void same_binding(fhjit_graph *a, fhjit_graph *b) {
  uint64_t ha[2], hb[2];
  ck_assert_int_eq(fhjit_graph_hash(a, ha), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(b, hb), FHJIT_OK);
  ck_assert(ha[0] == hb[0] && ha[1] == hb[1]);
  ck_assert_int_eq(fhjit_num_inputs(a), fhjit_num_inputs(b));
  for (int32_t i = 0; i < fhjit_num_inputs(a); i++) {
    fhjit_type ta, tb;
    fhjit_layout la, lb;
    ck_assert_int_eq(fhjit_input_binding(a, i, &ta, &la), FHJIT_OK);
    ck_assert_int_eq(fhjit_input_binding(b, i, &tb, &lb), FHJIT_OK);
    ck_assert(memcmp(&ta, &tb, sizeof ta) == 0);
    ck_assert(memcmp(&la, &lb, sizeof la) == 0);
    ck_assert_str_eq(fhjit_value_name(a, fhjit_input_value(a, i)),
                     fhjit_value_name(b, fhjit_input_value(b, i)));
  }
  ck_assert_int_eq(fhjit_num_results(a), fhjit_num_results(b));
  ck_assert_int_eq(fhjit_num_outputs(a), fhjit_num_outputs(b));
  for (int32_t i = 0; i < fhjit_num_outputs(a); i++) {
    fhjit_output_info oa, ob;
    ck_assert_int_eq(fhjit_output_info_get(a, i, &oa), FHJIT_OK);
    ck_assert_int_eq(fhjit_output_info_get(b, i, &ob), FHJIT_OK);
    ck_assert_str_eq(oa.name, ob.name);
    ck_assert_int_eq(oa.value, ob.value);
    ck_assert_int_eq(oa.is_input_alias, ob.is_input_alias);
    ck_assert_int_eq(oa.source, ob.source);
    ck_assert_int_eq(oa.component, ob.component);
    ck_assert(memcmp(&oa.type, &ob.type, sizeof oa.type) == 0);
    ck_assert(memcmp(&oa.layout, &ob.layout, sizeof oa.layout) == 0);
  }
}

/* print(g) parses to a graph that prints the same bytes; returns it. */
static fhjit_graph *round_trip(fhjit_graph *g) {
  const char *p = fhjit_print(g);
  ck_assert_msg(p != NULL, "%s", fhjit_last_error(ctx));
  char *text = strdup(p);
  fhjit_graph *h = parse_ok(text);
  ck_assert_str_eq(fhjit_print(h), text);
  ck_assert_str_eq(fhjit_graph_name(h), fhjit_graph_name(g));
  ck_assert_int_eq(fhjit_graph_radix(h), fhjit_graph_radix(g));
  ck_assert_int_eq(fhjit_graph_num_moduli(h), fhjit_graph_num_moduli(g));
  for (int32_t i = 0; i < fhjit_graph_num_moduli(g); i++)
    ck_assert(fhjit_graph_moduli(h)[i] == fhjit_graph_moduli(g)[i]);
  free(text);
  return h;
}

/* ------------------------------------------------------------- printing */

START_TEST(test_api_graph_prints_exact_text) {
  fhjit_graph *g = fhjit_graph_create(ctx, "api", FHJIT_R62);
  const uint64_t q[] = {1152921504606748673u, 576460752303423649u};
  ck_assert_int_eq(fhjit_graph_set_moduli(g, q, 2), FHJIT_OK);
  fhjit_type ct = tu_poly(2, 0, NULL, 2, 64), pt = tu_poly(0, 0, NULL, 2, 16),
             im = tu_poly(0, 0, NULL, 2, 1), key = tu_key(3, 4, 64);
  ct.domain = pt.domain = im.domain = key.domain = FHJIT_DOMAIN_NTT;
  ct.form = key.form = FHJIT_FORM_MONT;
  fhjit_value a = fhjit_input(g, "a", &ct), p = fhjit_input(g, "p", &pt),
              i = fhjit_input(g, "i", &im), k = fhjit_input(g, "k", &key);
  fhjit_value m = fhjit_add_compressed(g, a, p, FHJIT_STRIDED_SPARSE, i, FHJIT_DOMAIN_NTT);
  fhjit_value e = fhjit_extract(g, m, 1); /* automatic names: %t4, %t5, ... */
  fhjit_value d = fhjit_keyswitch_digit_product(g, e, k, 2, 1);
  ck_assert_int_eq(fhjit_set_name(g, d, "prod"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, d, NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, e, "second"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, e, NULL), FHJIT_OK);
  const char *want =
      "graph @api radix(r62) moduli(1152921504606748673, 576460752303423649) {\n"
      "  %a = input ct<2, [], 2, 64> ntt mont\n"
      "  %p = input pt<[], 2, 16> ntt\n"
      "  %i = input pt<[], 2, 1> ntt\n"
      "  %k = input key<3, 2, 4, 64> ntt mont\n"
      "  %t4 = add_compressed %a, %p layout(strided_sparse) implicit(%i) domain(ntt)\n"
      "  %t5 = extract %t4[1]\n"
      "  %prod = keyswitch_digit_product %t5, %k digit(2) row_start(1)\n"
      "  output %prod\n"
      "  output %t5 as second\n"
      "  output %t5\n"
      "}\n";
  ck_assert_str_eq(fhjit_print(g), want);
  fhjit_graph *h = round_trip(g);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(h), FHJIT_OK);
  same_binding(g, h);
  /* Binding changes nothing the text says. */
  ck_assert_str_eq(fhjit_print(g), want);
}
END_TEST

START_TEST(test_print_replaces_old_text) {
  fhjit_graph *g = parse_ok("graph @g radix(r32) {\n  %a = input pt<[], 1, 8>\n}\n");
  const char *first = fhjit_print(g);
  ck_assert_ptr_nonnull(first);
  fhjit_type t = tu_poly(0, 0, NULL, 1, 8);
  fhjit_value b = fhjit_input(g, "b", &t);
  ck_assert_int_eq(fhjit_output(g, b, "out"), FHJIT_OK);
  ck_assert_str_eq(fhjit_print(g), "graph @g radix(r32) {\n  %a = input pt<[], 1, 8>\n"
                                   "  %b = input pt<[], 1, 8>\n  output %b as out\n}\n");
  const char *dot = fhjit_print_dot(g);
  ck_assert(tu_contains(dot, "digraph \"g\" {"));
  ck_assert(tu_contains(dot, "v1 -> out0;"));
  ck_assert_ptr_null(fhjit_print(NULL));
  ck_assert_ptr_null(fhjit_print_dot(NULL));
}
END_TEST

START_TEST(test_graph_names_are_quoted) {
  const char *names[] = {"with space", "quote\"and\\slash", "line\nbreak", "caf\xc3\xa9", "-",
                         "tab\there", "\x7f"};
  const char *spelled[] = {"@\"with space\"", "@\"quote\\\"and\\\\slash\"", "@\"line\\x0abreak\"",
                           "@\"caf\\xc3\\xa9\"", "@\"-\"", "@\"tab\\x09here\"", "@\"\\x7f\""};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    fhjit_graph *g = fhjit_graph_create(ctx, names[i], FHJIT_R32);
    char want[128];
    snprintf(want, sizeof want, "graph %s radix(r32) {\n}\n", spelled[i]);
    ck_assert_str_eq(fhjit_print(g), want);
    fhjit_graph *h = round_trip(g);
    ck_assert_str_eq(fhjit_graph_name(h), names[i]);
    ck_assert_ptr_nonnull(fhjit_print_dot(g));
  }
}
END_TEST

/* An input declared with '?' and bound through fhjit_bind_input prints its
 * bound extents and its layout; the text re-creates the same binding. */
START_TEST(test_bound_unknown_extents_print_binding) {
  fhjit_graph *g = fhjit_graph_create(ctx, "b", FHJIT_R32);
  const int64_t open[] = {FHJIT_UNKNOWN, 1}, concrete[] = {3, 1};
  fhjit_type decl = tu_poly(2, 2, open, FHJIT_UNKNOWN, FHJIT_UNKNOWN);
  decl.domain = FHJIT_DOMAIN_NTT;
  fhjit_value a = fhjit_input(g, "a", &decl);
  fhjit_type pdecl = tu_poly(0, 0, NULL, FHJIT_UNKNOWN, 32);
  fhjit_value p = fhjit_input(g, "p", &pdecl);
  fhjit_value m = fhjit_mul_plain(g, a, p);
  ck_assert_int_eq(fhjit_set_name(g, m, "m"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, m, NULL), FHJIT_OK);
  ck_assert_str_eq(fhjit_print(g), "graph @b radix(r32) {\n"
                                   "  %a = input ct<2, [?, 1], ?, ?> ntt\n"
                                   "  %p = input pt<[], ?, 32>\n"
                                   "  %m = mul_plain %a, %p\n"
                                   "  output %m\n"
                                   "}\n");
  fhjit_type t = tu_poly(2, 2, concrete, 2, 32);
  t.domain = FHJIT_DOMAIN_NTT;
  /* Component stride 1000, batch 200, the extent-1 batch axis 7 (-> 0). */
  fhjit_layout l = {.offset = 5, .comp_stride = 1000, .batch_stride = {200, 7},
                    .row_stride = 64, .index_stride = 2};
  ck_assert_int_eq(fhjit_bind_input(g, a, &t, &l), FHJIT_OK);
  fhjit_type tp = tu_poly(0, 0, NULL, 2, 32);
  ck_assert_int_eq(fhjit_bind_input(g, p, &tp, NULL), FHJIT_OK); /* dense: no strides */
  const char *want = "graph @b radix(r32) {\n"
                     "  %a = input ct<2, [3, 1], 2, 32> ntt strides(1000, 200, 0, 64, 2) offset(5)\n"
                     "  %p = input pt<[], 2, 32>\n"
                     "  %m = mul_plain %a, %p\n"
                     "  output %m\n"
                     "}\n";
  ck_assert_str_eq(fhjit_print(g), want);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_str_eq(fhjit_print(g), want);
  fhjit_graph *h = round_trip(g);
  ck_assert_int_eq(fhjit_bind(h), FHJIT_OK);
  same_binding(g, h);
}
END_TEST

/* Random bound graphs of the builder (non-dense layouts, broadcast batches,
 * every op): the text re-creates the same bound graph. */
START_TEST(test_random_graphs_round_trip) {
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.strided_layouts = 60;
  cfg.domain_facts = 50;
  int checked = 0;
  for (uint64_t seed = 1; seed <= 400; seed++) {
    char err[512];
    fhjit_context *c = fhjit_context_create();
    fhjit_context *saved = ctx;
    ctx = c;
    fhjit_graph *g = rg_random_graph(c, seed, &cfg, err, sizeof err);
    ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, err);
    fhjit_graph *h = round_trip(g);
    ck_assert_msg(fhjit_bind(h) == FHJIT_OK, "seed %llu: %s\n%s", (unsigned long long)seed,
                  fhjit_last_error(c), fhjit_print(g));
    same_binding(g, h);
    checked++;
    ctx = saved;
    fhjit_context_destroy(c);
  }
  ck_assert_int_eq(checked, 400);
}
END_TEST

/* ----------------------------------------------------------------- reading */

/* Many values (the parser's name table grows several times), every one
 * resolved to the right definition: a chain whose operands reach back. */
START_TEST(test_many_values) {
  enum { N = 3000 };
  size_t cap = 64 * N;
  char *text = malloc(cap);
  size_t len = (size_t)snprintf(text, cap, "graph @big radix(r32) {\n  %%v0 = input pt<[], 1, 8>\n");
  for (int i = 1; i < N; i++)
    len += (size_t)snprintf(text + len, cap - len, "  %%v%d = %s %%v%d, %%v%d\n", i,
                            i % 2 ? "add_lazy" : "sub", i - 1, i / 2);
  len += (size_t)snprintf(text + len, cap - len, "  output %%v%d\n}\n", N - 1);
  fhjit_graph *g = parse_ok(text);
  ck_assert_str_eq(fhjit_print(g), text);
  ck_assert_int_eq(fhjit_num_values(g), N);
  for (int i = 1; i < N; i++) {
    char name[16];
    snprintf(name, sizeof name, "v%d", i);
    ck_assert_int_eq(fhjit_find_value(g, name), i);
  }
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  free(text);
}
END_TEST

START_TEST(test_length_bounds_the_text) {
  /* Not NUL-terminated: the parser reads `length` bytes only. */
  const char buf[] = "graph @g radix(r32) {\n}\nGARBAGE";
  fhjit_graph *g = fhjit_parse(ctx, buf, strlen(buf) - 7, "t.fh");
  ck_assert_msg(g != NULL, "%s", fhjit_last_error(ctx));
  ck_assert_str_eq(fhjit_print(g), "graph @g radix(r32) {\n}\n");
  /* An embedded NUL is an error, not the end of the text. */
  const char nul[] = "graph @g radix(r32) {\n\0}\n";
  parse_fails(nul, sizeof nul - 1, FHJIT_ERR_PARSE,
              "t.fh:2:1: error: unexpected byte 0x00\n\n^");
  const char nul_comment[] = "graph @g radix(r32) { // a\0b\n}\n";
  parse_fails(nul_comment, sizeof nul_comment - 1, FHJIT_ERR_PARSE,
              "t.fh:1:27: error: NUL byte in a comment\n"
              "graph @g radix(r32) { // a\n"
              "                          ^");
  ck_assert_ptr_null(fhjit_parse(NULL, "x", 1, "t.fh"));
  ck_assert_ptr_null(fhjit_parse(ctx, NULL, 3, "t.fh"));
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
  /* No filename: diagnostics say <input>. */
  ck_assert_ptr_null(fhjit_parse(ctx, "graph", 5, NULL));
  ck_assert_str_eq(fhjit_last_error(ctx),
                   "<input>:1:6: error: expected the graph name ('@name'), found end of file\n"
                   "graph\n"
                   "     ^");
}
END_TEST

START_TEST(test_crlf_and_tabs) {
  fhjit_graph *g = parse_ok("graph @g radix(r32) {\r\n\t%a = input pt<[], 1, 8>\r\n"
                            "\t%b = neg %a\r\n\toutput %b\r\n}\r\n");
  ck_assert_str_eq(fhjit_print(g), "graph @g radix(r32) {\n  %a = input pt<[], 1, 8>\n"
                                   "  %b = neg %a\n  output %b\n}\n");
  /* The caret line keeps the tabs of the source line, so it lines up. */
  const char *bad = "graph @g radix(r32) {\n\t%b =\tneg %zz\n}\n";
  parse_fails(bad, strlen(bad), FHJIT_ERR_PARSE,
              "t.fh:2:11: error: use of undefined value %zz\n"
              "\t%b =\tneg %zz\n"
              "\t    \t    ^");
}
END_TEST

/* Errors found after parsing (binding) still point into the text, whose
 * buffer the caller has freed by then. */
START_TEST(test_bind_errors_quote_the_source) {
  char *text = strdup("graph @g radix(r62) {\n"
                      "  %a = input ct<2, [], 2, 16>\n"
                      "  %b = input ct<2, [], 4, 16>\n"
                      "  %c = add %a, %b\n"
                      "  output %c\n"
                      "}\n");
  fhjit_graph *g = fhjit_parse(ctx, text, strlen(text), "later.fh");
  ck_assert_ptr_nonnull(g);
  memset(text, 'x', strlen(text));
  free(text);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
  ck_assert_str_eq(fhjit_last_error(ctx),
                   "later.fh:4:8: error: %c = add: rows of %a is 2 but rows of %b is 4; they "
                   "must be equal\n"
                   "  %c = add %a, %b\n"
                   "       ^");
  /* Values added later through the C API are not from the text. */
  fhjit_type t = tu_poly(3, 0, NULL, 2, 16);
  fhjit_value d = fhjit_input(g, "d", &t);
  ck_assert_int_eq(fhjit_add(g, fhjit_find_value(g, "a"), d), FHJIT_NO_VALUE);
  ck_assert(strncmp(fhjit_last_error(ctx), "error: graph @g: add:", 21) == 0);
}
END_TEST

/* Errors of the builder keep their status; parse errors are FHJIT_ERR_PARSE. */
START_TEST(test_statuses) {
  const char *cases[][2] = {
      {"graph @g radix(r32) { %a = input ct<2, [], 1, 8> %b = input ct<3, [], 1, 8> "
       "%c = add %a, %b }", "type"},
      {"graph @g radix(r32) { %a = input ct<2, [], 1, 8> %c = extract %a[5] }", "shape"},
      {"graph @g radix(r32) moduli(8) { }", "modulus"},
      {"graph @g radix(r32) { %a = input ct<2, [], 1, 8> %a = neg %a }", "parse"},
      {"graph @g radix(r32) { %a = input pt<[], ?, 8> offset(1) }", "shape"},
  };
  const fhjit_status want[] = {FHJIT_ERR_TYPE, FHJIT_ERR_SHAPE, FHJIT_ERR_MODULUS, FHJIT_ERR_PARSE,
                               FHJIT_ERR_SHAPE};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    ck_assert_ptr_null(fhjit_parse(ctx, cases[i][0], strlen(cases[i][0]), "s.fh"));
    ck_assert_msg(fhjit_last_status(ctx) == want[i], "case %zu (%s): %s", i, cases[i][1],
                  fhjit_last_error(ctx));
    ck_assert(strncmp(fhjit_last_error(ctx), "s.fh:1:", 7) == 0);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("text");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_api_graph_prints_exact_text);
  tcase_add_test(tc, test_print_replaces_old_text);
  tcase_add_test(tc, test_graph_names_are_quoted);
  tcase_add_test(tc, test_bound_unknown_extents_print_binding);
  tcase_add_test(tc, test_random_graphs_round_trip);
  tcase_add_test(tc, test_many_values);
  tcase_add_test(tc, test_length_bounds_the_text);
  tcase_add_test(tc, test_crlf_and_tabs);
  tcase_add_test(tc, test_bind_errors_quote_the_source);
  tcase_add_test(tc, test_statuses);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
