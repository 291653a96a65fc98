/* test_section7.c: SPEC section 7 at the IR level: bases in graphs and
 * text, the verifier's rules, the constant tables, and the interpreter's
 * limb-mixing ops against independent identities computed with the test's
 * own big integers (bigint.c), never with lib/ir's code: bconv is
 * (X + e S*) mod t_j with one 0 <= e < l per coefficient (exact for one
 * row), automorphisms compose and agree through the NTT, rescale is
 * round(X / q_last), moddown floor(A / P*) - e' with 0 <= e' < K (exact when
 * P* divides A), modup keeps its digit's rows and converts the others. Both
 * radices, N = 2^4 .. 2^10, 1 to 8 rows, moduli near each radix limit and
 * far below, random and edge values. What the lowering refuses. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigint.h"
#include "s7env.h"
#include "ir/ir.h"
#include "testutil.h"

/* ------------------------------------------------------------- helpers */

#define MAXM S7_MAXM
typedef s7env env;

static fhjit_value poly_input(fhjit_graph *g, const char *name, const int32_t *basis, int rows,
                              int64_t n, fhjit_domain d, fhjit_form f) {
  fhjit_type t = tu_poly(0, 0, NULL, rows, n);
  t.domain = d;
  t.form = f;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  ck_assert_int_eq(fhjit_input_basis(g, v, basis, rows), FHJIT_OK);
  return v;
}

/* Binds g and runs the interpreter: poly input words from `data` (by input
 * index, dense, as uint64), twiddles and tables built here; the single
 * result into out (uint64). Returns the status. */
static fhjit_status run(env *e, fhjit_graph *g, uint64_t *const *data, uint64_t *out) {
  fhjit_status st = fhjit_bind(g);
  if (st) return st;
  int ni = fhjit_num_inputs(g);
  void *bufs[8] = {0};
  for (int i = 0; i < ni; i++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_input_binding(g, i, &t, NULL), FHJIT_OK);
    int64_t len = fhjit_type_elements(&t);
    if (t.kind == FHJIT_KIND_TWIDDLE) {
      int use;
      ck_assert_int_eq(fhjit_input_twiddle_use(g, i, &use), FHJIT_OK);
      bufs[i] = use == FHJIT_TWIDDLE_INVERSE ? e->inv : e->fwd;
      if (!use) { /* read by a mixing op: names tell */
        const char *nm = fhjit_value_name(g, fhjit_input_value(g, i));
        bufs[i] = nm[0] == 'i' ? e->inv : e->fwd;
      }
      continue;
    }
    bufs[i] = malloc(e->ws * (size_t)len);
    if (t.kind == FHJIT_KIND_TABLE) {
      int64_t tl;
      ck_assert_int_eq(fhjit_input_table(g, i, bufs[i], &tl), FHJIT_OK);
      ck_assert_int_eq(tl, len);
    } else {
      for (int64_t k = 0; k < len; k++) s7_wput(e, bufs[i], k, data[i][k]);
    }
  }
  fhjit_type rt;
  ck_assert_int_eq(fhjit_result_type(g, 0, &rt), FHJIT_OK);
  int64_t rlen = fhjit_type_elements(&rt);
  void *res = malloc(e->ws * (size_t)rlen);
  void *results[1] = {res};
  st = fhjit_interpret(g, e->params, e->m, (const void *const *)bufs, results);
  if (!st)
    for (int64_t k = 0; k < rlen; k++) out[k] = s7_wget(e, res, k);
  for (int i = 0; i < ni; i++)
    if (bufs[i] != e->fwd && bufs[i] != e->inv) free(bufs[i]);
  free(res);
  return st;
}

/* R^-1 x mod q: the integer a Montgomery word holds. */
static uint64_t unmont(const env *e, uint64_t x, uint64_t q) {
  return tu_mulmod(x % q, tu_rinv(e->radix, q), q);
}

/* Random residues of an integer below prod q[pos], with edge integers
 * (0, 1, prod - 1) at coefficients 0..2: words[r*n + i]. */
static void random_integers(env *e, const int32_t *pos, int rows, uint64_t *words) {
  for (int r = 0; r < rows; r++) {
    uint64_t q = e->q[pos[r]];
    for (int64_t i = 0; i < e->n; i++) {
      uint64_t x = tu_below(&e->seed, q);
      if (i == 0) x = 0;
      if (i == 1) x = 1;
      if (i == 2) x = q - 1;
      words[r * e->n + i] = x;
    }
  }
}

static void residues_of(const env *e, const int32_t *pos, int rows, const uint64_t *words,
                        int64_t i, uint64_t *res, uint64_t *mods, int mont) {
  for (int r = 0; r < rows; r++) {
    mods[r] = e->q[pos[r]];
    uint64_t w = words[r * e->n + i];
    res[r] = mont ? unmont(e, w, mods[r]) : w % mods[r];
  }
}

/* ------------------------------------------------------------- tests */

static const char *bases_text =
    "graph @b radix(r32) moduli(268369921, 134176769, 268361729, 268271617) special(1) "
    "digits(2) {\n"
    "  %x = input ct<2, [], 2, 16> coef std basis(2, 0)\n"
    "  %y = input ct<2, [], 2, 16> coef std basis(2, 0)\n"
    "  %t = input table<6>\n"
    "  %s = add %x, %y\n"
    "  %r = rows %s start(1) count(1)\n"
    "  %z = rows %y start(0) count(1)\n"
    "  %c = concat %r, %z\n"
    "  %b = bconv %s, %t basis(1, 3)\n"
    "  %a = automorphism %s galois(5)\n"
    "  output %b\n"
    "  output %a\n"
    "  output %c\n"
    "}\n";

START_TEST(test_bases_text) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_parse(ctx, bases_text, strlen(bases_text), "b.fh");
  ck_assert_msg(g != NULL, "%s", fhjit_last_error(ctx));
  const char *p = fhjit_print(g);
  ck_assert_str_eq(p, bases_text);
  fhjit_graph *g2 = fhjit_parse(ctx, p, strlen(p), "b2.fh");
  ck_assert_ptr_nonnull(g2);
  ck_assert_str_eq(fhjit_print(g2), bases_text);
  ck_assert_int_eq(fhjit_graph_num_special(g), 1);
  ck_assert_int_eq(fhjit_graph_digit_size(g), 2);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  int32_t b[4], cnt;
  ck_assert_int_eq(fhjit_value_basis(g, fhjit_find_value(g, "c"), b, 4, &cnt), FHJIT_OK);
  ck_assert_int_eq(cnt, 2);
  ck_assert_int_eq(b[0], 0);
  ck_assert_int_eq(b[1], 2);
  ck_assert_int_eq(fhjit_value_basis(g, fhjit_find_value(g, "b"), b, 4, &cnt), FHJIT_OK);
  ck_assert_int_eq(b[0], 1);
  ck_assert_int_eq(b[1], 3);
  fhjit_context_destroy(ctx);
}
END_TEST

/* A stated default basis [0, rows) is the graph without bases: same hash,
 * same numbers. */
START_TEST(test_default_basis_same_meaning) {
  const char *plain =
      "graph @d radix(r62) moduli(1152921504606748673, 576460752303423649) {\n"
      "  %a = input ct<2, [], 2, 16>\n  %b = input ct<2, [], 2, 16>\n"
      "  %s = mul %a, %b\n  output %s\n}\n";
  const char *stated =
      "graph @d radix(r62) moduli(1152921504606748673, 576460752303423649) {\n"
      "  %a = input ct<2, [], 2, 16> basis(0, 1)\n  %b = input ct<2, [], 2, 16>\n"
      "  %s = mul %a, %b\n  output %s\n}\n";
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g1 = fhjit_parse(ctx, plain, strlen(plain), "p.fh");
  fhjit_graph *g2 = fhjit_parse(ctx, stated, strlen(stated), "s.fh");
  ck_assert(g1 && g2);
  ck_assert_int_eq(fhjit_bind(g1), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g2), FHJIT_OK);
  uint64_t h1[2], h2[2];
  fhjit_graph_hash(g1, h1);
  fhjit_graph_hash(g2, h2);
  ck_assert(h1[0] == h2[0] && h1[1] == h2[1]);
  fhjit_context_destroy(ctx);
}
END_TEST

/* Parses text; expects the parse or the bind to fail with `want` in the
 * message. */
static void expect_error(const char *text, const char *want) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_parse(ctx, text, strlen(text), "e.fh");
  fhjit_status st = g ? fhjit_bind(g) : fhjit_last_status(ctx);
  ck_assert_msg(st != FHJIT_OK, "no error for:\n%s", text);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), want), "message '%s' lacks '%s'",
                fhjit_last_error(ctx), want);
  fhjit_context_destroy(ctx);
}

#define HDR "graph @e radix(r32) moduli(268369921, 134176769, 268361729, 268271617) "

START_TEST(test_diagnostics) {
  expect_error(HDR "{\n %x = input pt<[], 2, 16> coef std basis(1, 1)\n output %x\n}\n",
               "position 1 repeats");
  expect_error(HDR "{\n %x = input pt<[], 2, 16> coef std basis(0, 7)\n output %x\n}\n",
               "past the chain");
  /* more rows than the chain: refused before a basis of that many rows is
   * made (a 13 GB allocation before, found by fuzz_parse) */
  expect_error(HDR "{\n %x = input pt<[], 3268369921, 16> coef std\n"
                   " %z = automorphism %x galois(31)\n output %z\n}\n",
               "%z: 3268369921 rows, more than the chain's 4 moduli");
  expect_error("graph @e radix(r32) {\n %x = input pt<[], 9000, 16> coef std\n"
               " %r = rows %x start(1) count(5000)\n output %r\n}\n",
               "a basis holds at most 4096 positions");
  expect_error(HDR "{\n %x = input pt<[], 2, 16> coef std basis(0, 1)\n"
                   " %y = input pt<[], 2, 16> coef std basis(1, 2)\n %s = add %x, %y\n"
                   " output %s\n}\n",
               "%x is on basis [0, 1] and %y on basis [1, 2]");
  expect_error(HDR "{\n %x = input pt<[], 2, 16> ntt\n %a = automorphism %x galois(4)\n"
                   " output %a\n}\n",
               "must be odd");
  expect_error(HDR "{\n %x = input pt<[], 2, 16> ntt\n %a = automorphism %x galois(33)\n"
                   " output %a\n}\n",
               "1 <= k < 2N");
  expect_error(HDR "{\n %x = input pt<[], 2, 16>\n %a = automorphism %x galois(3)\n"
                   " output %a\n}\n",
               "domain of %x is not stated");
  expect_error(HDR "special(1) digits(2) {\n %x = input pt<[], 2, 16> ntt mont\n"
                   " %f = input twiddles<4, 16>\n %i = input twiddles<4, 16>\n"
                   " %t = input table<4>\n %u = modup %x, %f, %i, %t digit(2)\n output %u\n}\n",
               "digit 2 is out of range");
  expect_error(HDR "special(1) digits(4) {\n %x = input pt<[], 2, 16>\n output %x\n}\n",
               "digit size");
  expect_error(HDR "special(4) {\n %x = input pt<[], 2, 16>\n output %x\n}\n",
               "special primes");
  expect_error(HDR "{\n %x = input pt<[], 2, 16> coef std basis(0, 1)\n %t = input table<6>\n"
                   " %b = bconv %x, %t basis(1, 2)\n output %b\n}\n",
               "share position 1");
  expect_error(HDR "{\n %x = input pt<[], 2, 16> coef basis(0, 1)\n %t = input table<6>\n"
                   " %b = bconv %x, %t basis(2, 3)\n output %b\n}\n",
               "form of %x is not stated");
  expect_error(HDR "{\n %x = input pt<[], 2, 16> coef std basis(0, 1)\n %t = input table<5>\n"
                   " %b = bconv %x, %t basis(2, 3)\n output %b\n}\n",
               "has 5 words; this op reads 6");
  expect_error(HDR "{\n %x = input pt<[], 2, 16> coef std basis(0, 1)\n"
                   " %y = input pt<[], 1, 16> coef std basis(1)\n %c = concat %x, %y\n"
                   " output %c\n}\n",
               "concat needs disjoint bases");
  expect_error(HDR "special(1) {\n %x = input pt<[], 2, 16> ntt mont basis(0, 1)\n"
                   " %f = input twiddles<4, 16>\n %i = input twiddles<4, 16>\n"
                   " %t = input table<3>\n %u = moddown %x, %f, %i, %t\n output %u\n}\n",
               "which is not Q ++ P with P = [3]");
}
END_TEST

/* Not pairwise coprime moduli; tables with wrong words. */
START_TEST(test_table_errors) {
  fhjit_context *ctx = fhjit_context_create();
  uint64_t chain[3] = {268369921, 134176769, 268369921};
  int32_t src[1] = {0}, dst[1] = {2};
  uint32_t out[4];
  ck_assert_int_eq(fhjit_bconv_table(ctx, FHJIT_R32, chain, 3, src, 1, dst, 1, out),
                   FHJIT_ERR_MODULUS);
  ck_assert(tu_contains(fhjit_last_error(ctx), "not pairwise coprime"));
  int32_t rep[2] = {1, 1};
  ck_assert_int_eq(fhjit_bconv_table(ctx, FHJIT_R32, chain, 3, rep, 2, dst, 1, out),
                   FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "repeats"));
  ck_assert_int_eq(fhjit_bconv_table_size(2, 3), 8);
  ck_assert(fhjit_bconv_table_size(3, INT32_MAX) == INT64_C(3) << 31); /* no int overflow */
  /* the interpreter checks the table it is given */
  env e;
  s7_env_init(&e, FHJIT_R32, 3, 4, 5);
  fhjit_graph *g = s7_graph(&e, "s7", 0, 0);
  int32_t b0[2] = {0, 1};
  fhjit_value x = poly_input(g, "x", b0, 2, e.n, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  /* an input's basis: an empty one and a null array named apart */
  ck_assert_int_eq(fhjit_input_basis(g, x, b0, 0), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "input %x: a basis has at least one position"));
  ck_assert_int_eq(fhjit_input_basis(g, x, NULL, 2), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "input %x: null array of 2 basis positions"));
  fhjit_value t = s7_table(g, "t", 4);
  int32_t tgt[1] = {2};
  fhjit_value b = fhjit_bconv(g, x, t, tgt, 1);
  ck_assert_int_ge(b, 0);
  fhjit_output(g, b, NULL);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  uint32_t words[4], xw[32] = {0}, res[16];
  int64_t len;
  ck_assert_int_eq(fhjit_input_table(g, 1, words, &len), FHJIT_OK);
  ck_assert_int_eq(len, 4);
  /* each misuse named on its own, *len untouched */
  ck_assert_int_eq(fhjit_input_table(g, 7, words, &len), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "graph @s7 has no input 7 (it has 2)"));
  ck_assert_int_eq(fhjit_input_table(g, 1, words, NULL), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "null len"));
  ck_assert_int_eq(fhjit_input_table(g, 0, words, &len), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(len, 4);
  /* the helper gives the same words */
  uint32_t direct[4];
  ck_assert_int_eq(fhjit_bconv_table(ctx, FHJIT_R32, e.q, 3, b0, 2, tgt, 1, direct), FHJIT_OK);
  ck_assert_mem_eq(words, direct, sizeof words);
  words[3] ^= 1;
  const void *in[2] = {xw, words};
  void *out1[1] = {res};
  ck_assert_int_eq(fhjit_interpret(g, e.params, 3, in, out1), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "table %t: word 3"));
  s7_env_free(&e);
  fhjit_context_destroy(ctx);
}
END_TEST

/* What the lowering runs and refuses (test_s7_lower.c and test_s7_steps.c
 * test the rest): a remapped load of a computed value runs (the planner
 * materialises the operand), with results equal to the interpreter's; a
 * modup whose digit's rows are not consecutive rows of its operand is
 * refused with a located error; a pointwise graph on a stated basis runs
 * (its columns by chain position). */
START_TEST(test_lowering_refuses) {
  env e;
  s7_env_init(&e, FHJIT_R62, 4, 4, 3);
  fhjit_graph *g = s7_graph(&e, "s7", 0, 0);
  int32_t b0[2] = {0, 1};
  fhjit_value x = poly_input(g, "x", b0, 2, e.n, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value a = fhjit_automorphism(g, x, 5);
  fhjit_value r = fhjit_rows(g, a, 1, 1);
  fhjit_output(g, r, NULL);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  uint64_t xw[32], res[32], ref[32];
  for (int k = 0; k < 32; k++) xw[k] = tu_lazy(&e.seed, e.q[k / 16]);
  const void *in[1] = {xw};
  void *out[1] = {res}, *rout[1] = {ref};
  ck_assert_int_eq(fhjit_interpret(g, e.params, 4, in, rout), FHJIT_OK);
  ck_assert_msg(fhjit_run_host(g, e.params, 4, in, out, 1) == FHJIT_OK, "%s",
                fhjit_last_error(e.ctx));
  for (int k = 0; k < 16; k++) ck_assert_uint_eq(res[k], ref[k]);
  ck_assert_ptr_nonnull(fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90"));
  /* modup of digit 0 = positions {0, 1}, at rows 0 and 2 of d */
  fhjit_graph *m = s7_graph(&e, "s7", 1, 2);
  int32_t bd[3] = {0, 2, 1};
  fhjit_value d = poly_input(m, "d", bd, 3, e.n, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value u = fhjit_modup(m, d, 0, s7_twiddles(&e, m, "fw"), s7_twiddles(&e, m, "iv"),
                              s7_table(m, "t", 2 + 2 * 2));
  ck_assert_int_ge(u, 0);
  fhjit_output(m, u, NULL);
  ck_assert_int_eq(fhjit_bind(m), FHJIT_OK);
  ck_assert_ptr_null(fhjit_emit(m, FHJIT_EMIT_PTX, "sm_90"));
  ck_assert_int_eq(fhjit_last_status(e.ctx), FHJIT_ERR_UNSUPPORTED);
  ck_assert_msg(tu_contains(fhjit_last_error(e.ctx), "= modup: the digit's rows are not "
                                                      "consecutive"),
                "%s", fhjit_last_error(e.ctx));
  /* A plain add on a stated basis {1, 0}: the kernel reduces row r mod
   * the modulus of position basis[r], as the interpreter does. */
  fhjit_graph *h = s7_graph(&e, "s7", 0, 0);
  int32_t b21[2] = {1, 0};
  fhjit_value z = poly_input(h, "y", b21, 2, e.n, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_output(h, fhjit_add(h, z, z), NULL);
  ck_assert_int_eq(fhjit_bind(h), FHJIT_OK);
  for (int k = 0; k < 32; k++) xw[k] = tu_lazy(&e.seed, e.q[b21[k / 16]]);
  ck_assert_int_eq(fhjit_interpret(h, e.params, 4, in, rout), FHJIT_OK);
  ck_assert_int_eq(fhjit_run_host(h, e.params, 4, in, out, 1), FHJIT_OK);
  for (int k = 0; k < 32; k++) ck_assert_uint_eq(res[k], ref[k]);
  ck_assert_ptr_nonnull(fhjit_emit(h, FHJIT_EMIT_PTX, "sm_90"));
  s7_env_free(&e);
}
END_TEST

/* Automorphisms: composition (both domains) and agreement through the NTT. */
START_TEST(test_automorphism) {
  fhjit_radix radix = (_i & 1) ? FHJIT_R62 : FHJIT_R32;
  int logn = 4 + (_i / 2) % 7, rows = 1 + (_i / 2) % 4;
  env e;
  s7_env_init(&e, radix, rows + 1, logn, 100 + (uint64_t)_i);
  int64_t n = e.n, tot = rows * n;
  int32_t basis[MAXM];
  for (int r = 0; r < rows; r++) basis[r] = rows - r; /* reversed, skips 0 */
  uint64_t *xw = malloc(sizeof *xw * (size_t)tot), *o1 = malloc(sizeof *o1 * (size_t)tot),
           *o2 = malloc(sizeof *o2 * (size_t)tot);
  for (int r = 0; r < rows; r++)
    for (int64_t i = 0; i < n; i++) xw[r * n + i] = tu_lazy(&e.seed, e.q[basis[r]]);
  uint64_t *data[4] = {xw};
  for (int trial = 0; trial < 3; trial++) {
    uint64_t k1 = 2 * tu_below(&e.seed, (uint64_t)n) + 1, k2 = 2 * tu_below(&e.seed, (uint64_t)n) + 1;
    if (trial == 0) k1 = 2 * (uint64_t)n - 1; /* conjugation */
    uint64_t k12 = (k1 * k2) % (2 * (uint64_t)n);
    for (int dom = 0; dom < 2; dom++) {
      fhjit_domain d = dom ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF;
      fhjit_graph *g = s7_graph(&e, "s7", 0, 0);
      fhjit_value x = poly_input(g, "x", basis, rows, n, d, FHJIT_FORM_MONT);
      fhjit_output(g, fhjit_automorphism(g, fhjit_automorphism(g, x, (int64_t)k1), (int64_t)k2), NULL);
      ck_assert_int_eq(run(&e, g, data, o1), FHJIT_OK);
      fhjit_graph *h = s7_graph(&e, "s7", 0, 0);
      x = poly_input(h, "x", basis, rows, n, d, FHJIT_FORM_MONT);
      fhjit_value once = fhjit_automorphism(h, x, (int64_t)k12);
      fhjit_output(h, once, NULL);
      ck_assert_int_eq(run(&e, h, data, o2), FHJIT_OK);
      for (int64_t i = 0; i < tot; i++) {
        uint64_t q = e.q[basis[i / n]];
        /* the NTT-domain permutation keeps lazy words; compare mod q there */
        ck_assert_uint_eq(dom ? o1[i] % q : o1[i], dom ? o2[i] % q : o2[i]);
      }
    }
    /* coefficient form, then NTT == NTT, then NTT-domain automorphism (mod q) */
    fhjit_graph *g = s7_graph(&e, "s7", 0, 0);
    fhjit_value x = poly_input(g, "x", basis, rows, n, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
    fhjit_value f = s7_twiddles(&e, g, "fwd");
    fhjit_output(g, fhjit_ntt(g, fhjit_automorphism(g, x, (int64_t)k1), f,
                              FHJIT_NTT_COEF_STD_TO_NTT), NULL);
    ck_assert_int_eq(run(&e, g, data, o1), FHJIT_OK);
    fhjit_graph *h = s7_graph(&e, "s7", 0, 0);
    x = poly_input(h, "x", basis, rows, n, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
    f = s7_twiddles(&e, h, "fwd");
    fhjit_output(h, fhjit_automorphism(h, fhjit_ntt(h, x, f, FHJIT_NTT_COEF_STD_TO_NTT),
                                       (int64_t)k1), NULL);
    ck_assert_int_eq(run(&e, h, data, o2), FHJIT_OK);
    for (int64_t i = 0; i < tot; i++) {
      uint64_t q = e.q[basis[i / n]];
      ck_assert_uint_eq(o1[i] % q, o2[i] % q);
    }
  }
  free(xw);
  free(o1);
  free(o2);
  s7_env_free(&e);
}
END_TEST

/* bconv = (X + e S*) mod t_j, one 0 <= e < l per coefficient; exact for l = 1. */
START_TEST(test_bconv) {
  fhjit_radix radix = (_i & 1) ? FHJIT_R62 : FHJIT_R32;
  int l = 1 + (_i / 2) % 5, m = 1 + (_i / 3) % 3, logn = 4 + (_i / 4) % 3;
  fhjit_form form = (_i / 2) & 1 ? FHJIT_FORM_MONT : FHJIT_FORM_STD;
  env e;
  s7_env_init(&e, radix, l + m, logn, 200 + (uint64_t)_i);
  int64_t n = e.n;
  int32_t src[MAXM], dst[MAXM];
  for (int r = 0; r < l; r++) src[r] = m + l - 1 - r;
  for (int j = 0; j < m; j++) dst[j] = j;
  uint64_t *xw = malloc(sizeof *xw * (size_t)(l * n)), *o = malloc(sizeof *o * (size_t)(m * n));
  random_integers(&e, src, l, xw);
  for (int64_t i = 3; i < n; i += 5) /* lazy words, [q, 2q) */
    xw[i] = xw[i] + e.q[src[0]] < 2 * e.q[src[0]] ? xw[i] + e.q[src[0]] : xw[i];
  fhjit_graph *g = s7_graph(&e, "s7", 0, 0);
  fhjit_value x = poly_input(g, "x", src, l, n, FHJIT_DOMAIN_COEF, form);
  fhjit_value t = s7_table(g, "t", fhjit_bconv_table_size(l, m));
  fhjit_output(g, fhjit_bconv(g, x, t, dst, m), NULL);
  uint64_t *data[2] = {xw};
  ck_assert_int_eq(run(&e, g, data, o), FHJIT_OK);
  for (int64_t i = 0; i < n; i++) {
    uint64_t res[MAXM], mods[MAXM];
    residues_of(&e, src, l, xw, i, res, mods, form == FHJIT_FORM_MONT);
    bi X, S, sum, tmp;
    bi_crt(&X, res, mods, l);
    bi_set(&S, 1);
    for (int r = 0; r < l; r++) bi_mul_u64(&S, &S, mods[r]);
    bi_set(&sum, 0);
    for (int r = 0; r < l; r++) { /* V_r h_r, h_r = S / s_r */
      bi h;
      bi_divmod_u64(&h, &S, mods[r]);
      uint64_t hm = bi_divmod_u64(NULL, &h, mods[r]);
      uint64_t v = tu_mulmod(res[r], bi_invmod(hm, mods[r]), mods[r]);
      bi_mul_u64(&tmp, &h, v);
      bi_add(&sum, &sum, &tmp);
    }
    int e_found = -1;
    bi cand = X;
    for (int k = 0; k < l; k++) {
      if (bi_cmp(&cand, &sum) == 0) e_found = k;
      bi_add(&cand, &cand, &S);
    }
    ck_assert_msg(e_found >= 0, "sum V h is not X + e S* with e < l at %lld", (long long)i);
    if (l == 1) ck_assert_int_eq(e_found, 0);
    for (int j = 0; j < m; j++) {
      uint64_t tq = e.q[dst[j]], w = o[j * n + i];
      ck_assert_uint_lt(w, tq); /* canonical */
      uint64_t y = form == FHJIT_FORM_MONT ? unmont(&e, w, tq) : w;
      ck_assert_uint_eq(y, bi_divmod_u64(NULL, &sum, tq));
    }
  }
  free(xw);
  free(o);
  s7_env_free(&e);
}
END_TEST

/* The twiddle rows a mixing op's own NTTs read are checked as the NTT's
 * are (ir_it_check_twiddles): an r32 rescale whose forward table has an
 * entry + q (lazy, not canonical) is refused naming the table, limb and
 * entry; at r62 (lazy tables, SPEC 5) it runs. */
START_TEST(test_twiddles_checked) {
  fhjit_radix radix = _i ? FHJIT_R62 : FHJIT_R32;
  env e;
  s7_env_init(&e, radix, 3, 6, 909 + (uint64_t)_i);
  const int32_t basis[3] = {0, 1, 2};
  fhjit_graph *g = s7_graph(&e, "tw", 0, 0);
  fhjit_value x = poly_input(g, "x", basis, 3, e.n, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value f = s7_twiddles(&e, g, "fwd"), iv = s7_twiddles(&e, g, "inv");
  fhjit_value z = fhjit_rescale(g, x, f, iv, s7_table(g, "t", 2)); /* rows - 1 words */
  ck_assert_msg(z >= 0, "%s", fhjit_last_error(e.ctx));
  ck_assert_int_eq(fhjit_output(g, z, NULL), FHJIT_OK);
  uint64_t *xw = malloc(sizeof *xw * (size_t)(3 * e.n)), *o = malloc(sizeof *o * (size_t)(2 * e.n));
  for (int64_t k = 0; k < 3 * e.n; k++) xw[k] = tu_below(&e.seed, e.q[k / e.n]);
  uint64_t *data[4] = {xw};
  uint64_t w = s7_wget(&e, e.fwd, 5);
  s7_wput(&e, e.fwd, 5, w + e.q[0]); /* limb 0, entry 5 */
  fhjit_status st = run(&e, g, data, o);
  if (radix == FHJIT_R32) {
    ck_assert_int_eq(st, FHJIT_ERR_ARGUMENT);
    ck_assert_msg(tu_contains(fhjit_last_error(e.ctx), "twiddle table %fwd, limb 0: entry 5 "),
                  "%s", fhjit_last_error(e.ctx));
  } else {
    ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  }
  s7_wput(&e, e.fwd, 5, w);
  ck_assert_msg(run(&e, g, data, o) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  free(xw);
  free(o);
  fhjit_graph_destroy(g);
  s7_env_free(&e);
}
END_TEST

/* x coefficient-standard -> NTT -> op -> coefficient-standard. */
static fhjit_graph *ntt_sandwich(env *e, ir_op op, const int32_t *basis, int rows, int special,
                                 int alpha, int64_t digit, int64_t tlen_hint) {
  fhjit_graph *g = s7_graph(e, "s7", special, alpha);
  fhjit_value x = poly_input(g, "x", basis, rows, e->n, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_value f = s7_twiddles(e, g, "fwd"), iv = s7_twiddles(e, g, "inv");
  fhjit_value t = s7_table(g, "t", tlen_hint);
  /* a default basis [0, rows) reads a table of exactly its rows (the rows
   * of the chain's table that come first, the same buffer) */
  int dflt = 1;
  for (int r = 0; r < rows; r++) dflt &= basis[r] == r;
  fhjit_type st = {.kind = FHJIT_KIND_TWIDDLE, .rows = rows, .n = e->n};
  fhjit_value fx = dflt && rows < e->m ? fhjit_input(g, "fwd_x", &st) : f;
  fhjit_value y = fhjit_ntt(g, x, fx, FHJIT_NTT_COEF_STD_TO_NTT), z;
  if (op == IR_RESCALE) z = fhjit_rescale(g, y, f, iv, t);
  else if (op == IR_MODUP) z = fhjit_modup(g, y, digit, f, iv, t);
  else z = fhjit_moddown(g, y, f, iv, t);
  ck_assert_msg(z >= 0, "%s", fhjit_last_error(e->ctx));
  fhjit_output(g, fhjit_ntt(g, z, iv, FHJIT_NTT_TO_COEF_STD), NULL);
  return g;
}

/* rescale: exactly round(X / q_last) on the remaining rows. */
START_TEST(test_rescale) {
  fhjit_radix radix = (_i & 1) ? FHJIT_R62 : FHJIT_R32;
  int rows = 2 + (_i / 2) % 6, logn = 4 + (_i / 2) % 7;
  env e;
  s7_env_init(&e, radix, rows + 1, logn, 300 + (uint64_t)_i);
  int64_t n = e.n;
  int32_t basis[MAXM];
  for (int r = 0; r < rows; r++) basis[r] = rows - r; /* reversed, skips 0 */
  uint64_t *xw = malloc(sizeof *xw * (size_t)(rows * n)), *o = malloc(sizeof *o * (size_t)(rows * n));
  random_integers(&e, basis, rows, xw);
  uint64_t ql = e.q[basis[rows - 1]], h = ql / 2;
  /* edges: X = q_last*k + h (rounds down), + h + 1 (up), X = Q - 1 */
  for (int r = 0; r < rows; r++) {
    uint64_t q = e.q[basis[r]];
    xw[r * n + 3] = h % q;
    xw[r * n + 4] = (h + 1) % q;
    xw[r * n + 5] = q - 1;
  }
  fhjit_graph *g = ntt_sandwich(&e, IR_RESCALE, basis, rows, 0, 0, 0, rows - 1);
  uint64_t *data[4] = {xw};
  ck_assert_msg(run(&e, g, data, o) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  for (int64_t i = 0; i < n; i++) {
    uint64_t res[MAXM], mods[MAXM];
    residues_of(&e, basis, rows, xw, i, res, mods, 0);
    bi X, hb, Y;
    bi_crt(&X, res, mods, rows);
    bi_set(&hb, h);
    bi_add(&X, &X, &hb);
    bi_divmod_u64(&Y, &X, ql); /* floor((X + h) / q) = round(X / q) */
    for (int r = 0; r < rows - 1; r++)
      ck_assert_uint_eq(o[r * n + i], bi_divmod_u64(NULL, &Y, mods[r]));
  }
  free(xw);
  free(o);
  s7_env_free(&e);
}
END_TEST

/* moddown: floor(A / P*) - e', 0 <= e' < K; exact when P* divides A. */
START_TEST(test_moddown) {
  fhjit_radix radix = (_i & 1) ? FHJIT_R62 : FHJIT_R32;
  int K = 1 + (_i / 2) % 3, l = 1 + (_i / 2) % 5, logn = 4 + (_i / 2) % 7;
  env e;
  s7_env_init(&e, radix, l + K + 1, logn, 400 + (uint64_t)_i);
  int64_t n = e.n;
  int rows = l + K;
  int32_t basis[MAXM];
  for (int r = 0; r < l; r++) basis[r] = l - r; /* Q reversed, skips 0 */
  for (int k = 0; k < K; k++) basis[l + k] = e.m - K + k;
  uint64_t *xw = malloc(sizeof *xw * (size_t)(rows * n)), *o = malloc(sizeof *o * (size_t)(l * n));
  random_integers(&e, basis, rows, xw);
  /* coefficients 3..6: A = P* B (exact division) */
  uint64_t mods_all[MAXM];
  for (int r = 0; r < rows; r++) mods_all[r] = e.q[basis[r]];
  for (int64_t i = 3; i < 7 && i < n; i++)
    for (int r = 0; r < rows; r++) {
      uint64_t q = mods_all[r], v = (i == 3) ? 1 : tu_below(&e.seed, q);
      for (int k = 0; k < K; k++) v = tu_mulmod(v, mods_all[l + k] % q, q);
      xw[r * n + i] = r < l ? v : 0;
    }
  fhjit_graph *g = ntt_sandwich(&e, IR_MODDOWN, basis, rows, K, 0, 0, K + K * l + l);
  uint64_t *data[4] = {xw};
  ck_assert_msg(run(&e, g, data, o) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  for (int64_t i = 0; i < n; i++) {
    uint64_t res[MAXM], mods[MAXM];
    residues_of(&e, basis, rows, xw, i, res, mods, 0);
    bi A, F;
    bi_crt(&A, res, mods, rows);
    F = A;
    for (int k = 0; k < K; k++) bi_divmod_u64(&F, &F, mods[l + k]); /* nested floors */
    int found = 0;
    for (int ep = 0; ep < K && !found; ep++) {
      int ok = 1;
      for (int r = 0; r < l && ok; r++) {
        uint64_t f = bi_divmod_u64(NULL, &F, mods[r]);
        uint64_t want = (f + mods[r] - (uint64_t)ep % mods[r]) % mods[r];
        ok = o[r * n + i] == want;
      }
      found = ok;
      if (found && i >= 3 && i < 7) ck_assert_int_eq(ep, 0); /* exact */
    }
    ck_assert_msg(found, "moddown at %lld is not floor(A/P*) - e'", (long long)i);
  }
  free(xw);
  free(o);
  s7_env_free(&e);
}
END_TEST

/* modup(d, j): the digit's rows unchanged, the others (X_D + e D*) mod t. */
START_TEST(test_modup) {
  fhjit_radix radix = (_i & 1) ? FHJIT_R62 : FHJIT_R32;
  int K = 1 + (_i / 2) % 2, ql = 3 + (_i / 2) % 4, alpha = 1 + (_i / 4) % 3, logn = 4 + _i % 5;
  if (alpha > ql) alpha = ql;
  env e;
  s7_env_init(&e, radix, ql + K, logn, 500 + (uint64_t)_i);
  int64_t n = e.n;
  int l = ql - (_i % 2); /* below the top level: one position dropped */
  int32_t basis[MAXM];
  for (int r = 0; r < l; r++) basis[r] = r;
  int ndig = (ql + alpha - 1) / alpha;
  int64_t j = (int64_t)(tu_below(&e.seed, (uint64_t)ndig));
  if (j * alpha >= l) j = 0;
  int rows_out = l + K;
  uint64_t *xw = malloc(sizeof *xw * (size_t)(l * n)), *o = malloc(sizeof *o * (size_t)(rows_out * n));
  random_integers(&e, basis, l, xw);
  int32_t dpos[MAXM], nd = 0;
  for (int r = 0; r < l; r++)
    if (basis[r] >= j * alpha && basis[r] < (j + 1) * alpha) dpos[nd++] = basis[r];
  fhjit_graph *g = ntt_sandwich(&e, IR_MODUP, basis, l, K, alpha, j, nd * (1 + rows_out - nd));
  uint64_t *data[4] = {xw};
  ck_assert_msg(run(&e, g, data, o) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  for (int64_t i = 0; i < n; i++) {
    uint64_t res[MAXM], mods[MAXM];
    residues_of(&e, dpos, nd, xw + dpos[0] * n, i, res, mods, 0);
    bi X, D;
    bi_crt(&X, res, mods, nd);
    bi_set(&D, 1);
    for (int r = 0; r < nd; r++) bi_mul_u64(&D, &D, mods[r]);
    int found = 0;
    for (int ee = 0; ee < nd && !found; ee++) {
      int ok = 1;
      for (int o_r = 0; o_r < rows_out && ok; o_r++) {
        int32_t p = o_r < l ? basis[o_r] : e.m - K + (o_r - l);
        uint64_t t = e.q[p];
        if (o_r < l && p >= dpos[0] && p <= dpos[nd - 1]) {
          ok = o[o_r * n + i] == xw[o_r * n + i];
          continue;
        }
        ok = o[o_r * n + i] == bi_divmod_u64(NULL, &X, t);
      }
      found = ok;
      bi_add(&X, &X, &D);
    }
    ck_assert_msg(found, "modup at %lld", (long long)i);
  }
  free(xw);
  free(o);
  s7_env_free(&e);
}
END_TEST

int main(void) {
  Suite *s = suite_create("section7");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_bases_text);
  tcase_add_test(tc, test_default_basis_same_meaning);
  tcase_add_test(tc, test_diagnostics);
  tcase_add_test(tc, test_table_errors);
  tcase_add_test(tc, test_lowering_refuses);
  tcase_add_loop_test(tc, test_automorphism, 0, 14);
  tcase_add_loop_test(tc, test_bconv, 0, 24);
  tcase_add_loop_test(tc, test_rescale, 0, 14);
  tcase_add_loop_test(tc, test_twiddles_checked, 0, 2);
  tcase_add_loop_test(tc, test_moddown, 0, 14);
  tcase_add_loop_test(tc, test_modup, 0, 16);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
