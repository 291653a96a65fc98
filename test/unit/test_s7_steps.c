/* test_s7_steps.c: SPEC section 7's ops through the step planner
 * (lib/lower/mixsteps.c) on the host path, word for word against the
 * interpreter: bconv, rescale, moddown and modup as their kernels (NTTs,
 * conversions, epilogues, the modup gather), re-indexing ops of computed
 * values (materialised), results on several bases in one graph, and a small
 * key switch (modup per digit, digit products, add_lazy, moddown) whose NTT
 * chains mix with the section 3 machinery. Both radices, N = 2^4 .. 2^10,
 * components and a batch axis, stated bases (contiguous or not), chains with
 * moduli near each radix limit and far below, random lazy words plus the
 * edge words 0, 1, q-1, q, q+1, 2q-1. The interpreter's own identities are
 * tested in test_section7.c with big integers. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s7env.h"
#include "testutil.h"

#define MAXM S7_MAXM
typedef s7env env;

/* A polynomial input: comps components (0: none), one batch axis of extent
 * nb when nb > 0, rows on `basis` (NULL: [0, rows)). */
static fhjit_value poly(env *e, fhjit_graph *g, const char *name, int comps, int64_t nb,
                        const int32_t *basis, int rows, fhjit_domain d, fhjit_form f) {
  fhjit_type t = tu_poly(comps, nb > 0, &nb, rows, e->n);
  t.domain = d;
  t.form = f;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  if (basis) ck_assert_int_eq(fhjit_input_basis(g, v, basis, rows), FHJIT_OK);
  return v;
}

/* Random lazy words of input i (dense), the edge words first on row 0. */
static void fill_poly(env *e, fhjit_graph *g, int32_t i, void *buf, int64_t len) {
  fhjit_type t;
  ck_assert_int_eq(fhjit_input_binding(g, i, &t, NULL), FHJIT_OK);
  int32_t basis[64], rows;
  if (t.kind != FHJIT_KIND_POLY) /* keys: rows are chain positions */
    for (int r = 0; r < 64; r++) basis[r] = r;
  else
    ck_assert_int_eq(fhjit_value_basis(g, fhjit_input_value(g, i), basis, 64, &rows), FHJIT_OK);
  for (int64_t k = 0; k < len; k++) {
    int64_t r = (k / t.n) % t.rows, idx = k % t.n;
    uint64_t q = e->q[basis[r]];
    uint64_t edge[] = {0, 1, q - 1, q, q + 1, 2 * q - 1};
    uint64_t w = idx < 6 && (k / t.n / t.rows) % 2 == 0 ? edge[idx] : tu_lazy(&e->seed, q);
    s7_wput(e, buf, k, w);
  }
}

/* Binds g, fills its inputs, runs the interpreter and the host path, and
 * compares every result word for word. Returns the words compared. */
static int64_t check_graph(env *e, fhjit_graph *g) {
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e->ctx));
  int32_t ni = fhjit_num_inputs(g), nr = fhjit_num_results(g);
  void *ins[16] = {0}, *want[8] = {0}, *got[8] = {0};
  int own[16] = {0};
  ck_assert_int_le(ni, 16);
  ck_assert_int_le(nr, 8);
  for (int32_t i = 0; i < ni; i++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_input_binding(g, i, &t, NULL), FHJIT_OK);
    if (t.kind == FHJIT_KIND_TWIDDLE) {
      const char *nm = fhjit_value_name(g, fhjit_input_value(g, i));
      ins[i] = nm[0] == 'i' ? e->inv : e->fwd;
      continue;
    }
    int64_t len = fhjit_type_elements(&t);
    ins[i] = malloc(e->ws * (size_t)len);
    own[i] = 1;
    if (t.kind == FHJIT_KIND_TABLE) {
      int64_t tl;
      ck_assert_int_eq(fhjit_input_table(g, i, ins[i], &tl), FHJIT_OK);
    } else {
      fill_poly(e, g, i, ins[i], len);
    }
  }
  int64_t total = 0, lens[8];
  for (int32_t r = 0; r < nr; r++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, r, &t), FHJIT_OK);
    lens[r] = fhjit_type_elements(&t);
    want[r] = calloc((size_t)lens[r], e->ws);
    got[r] = malloc(e->ws * (size_t)lens[r]);
    memset(got[r], 0xa5, e->ws * (size_t)lens[r]);
  }
  ck_assert_msg(fhjit_interpret(g, e->params, e->m, (const void *const *)ins, want) == FHJIT_OK,
                "interpret: %s", fhjit_last_error(e->ctx));
  void *before[16] = {0};
  for (int32_t i = 0; i < ni; i++) {
    size_t bytes;
    if (!own[i]) continue;
    fhjit_type t;
    fhjit_input_binding(g, i, &t, NULL);
    bytes = e->ws * (size_t)fhjit_type_elements(&t);
    before[i] = malloc(bytes);
    memcpy(before[i], ins[i], bytes);
  }
  ck_assert_msg(fhjit_run_host(g, e->params, e->m, (const void *const *)ins, got, 2) == FHJIT_OK,
                "run_host: %s", fhjit_last_error(e->ctx));
  for (int32_t i = 0; i < ni; i++) { /* the caller's inputs untouched */
    if (!own[i]) continue;
    fhjit_type t;
    fhjit_input_binding(g, i, &t, NULL);
    ck_assert_msg(!memcmp(before[i], ins[i], e->ws * (size_t)fhjit_type_elements(&t)),
                  "input %d changed by the run", (int)i);
    free(before[i]);
  }
  for (int32_t r = 0; r < nr; r++) {
    for (int64_t k = 0; k < lens[r]; k++)
      ck_assert_msg(s7_wget(e, got[r], k) == s7_wget(e, want[r], k),
                    "result %d word %lld: host %llu, interpreter %llu", (int)r, (long long)k,
                    (unsigned long long)s7_wget(e, got[r], k),
                    (unsigned long long)s7_wget(e, want[r], k));
    total += lens[r];
    free(want[r]);
    free(got[r]);
  }
  for (int32_t i = 0; i < ni; i++)
    if (own[i]) free(ins[i]);
  return total;
}

static const fhjit_radix radices[] = {FHJIT_R32, FHJIT_R62};

/* ------------------------------------------------------------- bconv */

START_TEST(test_bconv_steps) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): r62 at N = 2^4 and r32 at
   * 2^10, every form and shape in each; the sizes between run the same
   * kernels on more words (the Debug stage runs them) */
  TU_SAMPLED_IN(_i, 1, 12);
  fhjit_radix radix = radices[_i % 2];
  int logn = 4 + (_i / 2) % 7;
  env e;
  s7_env_init(&e, radix, 10, logn, 0x5eed0 + (uint64_t)_i);
  static const int32_t src_a[] = {0, 1, 2, 3}, dst_a[] = {4, 5, 6, 7, 8, 9};
  static const int32_t src_b[] = {7, 2, 9}, dst_b[] = {0, 5, 1};
  for (int form = 0; form < 2; form++) {
    for (int shape = 0; shape < 3; shape++) {
      const int32_t *sb = shape == 1 ? src_b : src_a, *db = shape == 1 ? dst_b : dst_a;
      int l = shape == 1 ? 3 : shape == 2 ? 1 : 4, m = shape == 1 ? 3 : 6;
      fhjit_graph *g = s7_graph(&e, "s7steps", 0, 0);
      fhjit_value x = poly(&e, g, "x", shape == 2 ? 2 : 0, shape == 2 ? 2 : 0, sb, l,
                           FHJIT_DOMAIN_COEF, form ? FHJIT_FORM_MONT : FHJIT_FORM_STD);
      fhjit_value tab = s7_table(g, "t", l + (int64_t)l * m);
      fhjit_value y = fhjit_bconv(g, x, tab, db, m);
      ck_assert_int_ge(y, 0);
      ck_assert_int_eq(fhjit_output(g, y, NULL), FHJIT_OK);
      ck_assert_int_gt(check_graph(&e, g), 0);
    }
  }
  s7_env_free(&e);
}
END_TEST

/* The bconv_plan option (every conversion kernel's V, T, S, U): each
 * value of each knob, through the context and through FHJIT_BCONV_PLAN,
 * on a bconv (two components), a rescale (the lift) and a moddown, word
 * for word against the interpreter; a malformed value is refused where
 * it is read. */
START_TEST(test_bconv_plan_option) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): each of the 8 plans once,
   * both radices: plans 0, 1, 3, 4, 6, 7 through the context (cases 0 ..
   * 15), 2 and 5 through FHJIT_BCONV_PLAN (21, 27: with its malformed
   * value) */
  TU_SAMPLED_IN(_i, 0, 3, 6, 9, 12, 15, 21, 27);
  static const char *const plans[] = {"V=1", "V=2,S=2", "V=4,S=3,U=2", "T=32,U=3",
                                      "S=6,U=8", "U=1,T=1024", "V=4,T=64,S=4,U=4", "S=256"};
  fhjit_radix radix = radices[_i % 2];
  const char *plan = plans[_i / 2 % 8];
  int via_env = _i >= 16;
  env e;
  s7_env_init(&e, radix, 10, 5 + _i % 3, 0xb0c0 + (uint64_t)_i);
  if (via_env) setenv("FHJIT_BCONV_PLAN", plan, 1);
  else ck_assert_int_eq(fhjit_context_set_option(e.ctx, "bconv_plan", plan), FHJIT_OK);
  static const int32_t src[] = {0, 1, 2, 3}, dst[] = {4, 5, 6, 7, 8, 9};
  fhjit_graph *g = s7_graph(&e, "s7plan", 0, 0);
  fhjit_value x = poly(&e, g, "x", 2, 0, src, 4, FHJIT_DOMAIN_COEF,
                       _i % 3 ? FHJIT_FORM_MONT : FHJIT_FORM_STD);
  fhjit_value y = fhjit_bconv(g, x, s7_table(g, "t", 4 + 4 * 6), dst, 6);
  ck_assert_int_ge(y, 0);
  ck_assert_int_eq(fhjit_output(g, y, NULL), FHJIT_OK);
  ck_assert_int_gt(check_graph(&e, g), 0);
  /* rescale: the lift (one source row) */
  g = s7_graph(&e, "s7plan", 0, 0);
  x = poly(&e, g, "x", 0, 0, NULL, 7, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  y = fhjit_rescale(g, x, s7_twiddles(&e, g, "fwd"), s7_twiddles(&e, g, "inv"),
                    s7_table(g, "t", 6));
  ck_assert_int_ge(y, 0);
  ck_assert_int_eq(fhjit_output(g, y, NULL), FHJIT_OK);
  ck_assert_int_gt(check_graph(&e, g), 0);
  /* moddown: P (2 rows) -> Q (8 rows) */
  g = s7_graph(&e, "s7plan", 2, 0);
  x = poly(&e, g, "a", 0, 0, NULL, 10, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  y = fhjit_moddown(g, x, s7_twiddles(&e, g, "fwd"), s7_twiddles(&e, g, "inv"),
                    s7_table(g, "t", 2 + 2 * 8 + 8));
  ck_assert_int_ge(y, 0);
  ck_assert_int_eq(fhjit_output(g, y, NULL), FHJIT_OK);
  ck_assert_int_gt(check_graph(&e, g), 0);
  /* malformed: refused by the setter, and by the lowering from the variable */
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "bconv_plan", "S=0"), FHJIT_ERR_ARGUMENT);
  ck_assert_msg(tu_contains(fhjit_last_error(e.ctx), "bconv_plan=\"S=0\""), "%s",
                fhjit_last_error(e.ctx));
  if (via_env) {
    setenv("FHJIT_BCONV_PLAN", "V=3", 1);
    g = s7_graph(&e, "s7plan", 0, 0);
    x = poly(&e, g, "x", 0, 0, src, 4, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
    y = fhjit_bconv(g, x, s7_table(g, "t", 4 + 4 * 6), dst, 6);
    ck_assert_int_eq(fhjit_output(g, y, NULL), FHJIT_OK);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
    ck_assert(fhjit_emit(g, FHJIT_EMIT_PTX, NULL) == NULL);
    ck_assert_msg(tu_contains(fhjit_last_error(e.ctx), "FHJIT_BCONV_PLAN=\"V=3\": V=3"), "%s",
                  fhjit_last_error(e.ctx));
    unsetenv("FHJIT_BCONV_PLAN");
  }
  s7_env_free(&e);
}
END_TEST

/* bconv of a computed operand (materialised first) feeding arithmetic on
 * the target basis, with a second result on the source basis. */
START_TEST(test_bconv_computed) {
  env e;
  s7_env_init(&e, radices[_i], 8, 6, 0xbc0 + (uint64_t)_i);
  static const int32_t s[] = {1, 3, 5}, t[] = {0, 2, 4, 6};
  fhjit_graph *g = s7_graph(&e, "s7steps", 0, 0);
  fhjit_value a = poly(&e, g, "a", 0, 0, s, 3, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_value b = poly(&e, g, "b", 0, 0, s, 3, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_value c = poly(&e, g, "c", 0, 0, t, 4, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_value tab = s7_table(g, "t", 3 + 12);
  fhjit_value sum = fhjit_add(g, a, b);
  fhjit_value y = fhjit_bconv(g, sum, tab, t, 4);
  ck_assert_int_eq(fhjit_output(g, fhjit_mul(g, y, c), NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_sub(g, sum, b), NULL), FHJIT_OK);
  check_graph(&e, g);
  s7_env_free(&e);
}
END_TEST

/* ------------------------------------------------- rescale, moddown */

START_TEST(test_rescale_steps) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): r32 at N = 2^4 and r62 at
   * 2^10, both inputs in each (the sizes between: the Debug stage) */
  TU_SAMPLED_IN(_i, 0, 13);
  fhjit_radix radix = radices[_i % 2];
  int logn = 4 + (_i / 2) % 7;
  env e;
  s7_env_init(&e, radix, 8, logn, 0x7e5 + (uint64_t)_i);
  static const int32_t plain[] = {0, 1, 2, 3, 4}, odd[] = {3, 1, 0, 6, 4};
  for (int k = 0; k < 2; k++) {
    fhjit_graph *g = s7_graph(&e, "s7steps", 0, 0);
    fhjit_value x = poly(&e, g, "x", k ? 2 : 0, k ? 3 : 0, k ? odd : plain, 5,
                         FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    fhjit_value tab = s7_table(g, "t", 4);
    fhjit_value y = fhjit_rescale(g, x, fwd, inv, tab);
    ck_assert_int_ge(y, 0);
    ck_assert_int_eq(fhjit_output(g, y, NULL), FHJIT_OK);
    check_graph(&e, g);
  }
  s7_env_free(&e);
}
END_TEST

/* rescale(add(x, y)) + z: a computed operand and a consumer. */
START_TEST(test_rescale_computed) {
  env e;
  s7_env_init(&e, radices[_i], 6, 8, 0x7e6 + (uint64_t)_i);
  fhjit_graph *g = s7_graph(&e, "s7steps", 0, 0);
  fhjit_value x = poly(&e, g, "x", 2, 0, NULL, 4, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value y = poly(&e, g, "y", 2, 0, NULL, 4, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value z = poly(&e, g, "z", 2, 0, NULL, 3, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
  fhjit_value tab = s7_table(g, "t", 3);
  fhjit_value r = fhjit_rescale(g, fhjit_add(g, x, y), fwd, inv, tab);
  ck_assert_int_eq(fhjit_output(g, fhjit_add(g, r, z), NULL), FHJIT_OK);
  check_graph(&e, g);
  s7_env_free(&e);
}
END_TEST

START_TEST(test_moddown_steps) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): r62 at N = 2^4 and r32 at
   * 2^10, K = 1, 2 (below the top level) and 3 in each */
  TU_SAMPLED_IN(_i, 1, 12);
  fhjit_radix radix = radices[_i % 2];
  int logn = 4 + (_i / 2) % 7;
  env e;
  s7_env_init(&e, radix, 9, logn, 0xd0 + (uint64_t)_i);
  for (int K = 1; K <= 3; K++) {
    fhjit_graph *g = s7_graph(&e, "s7steps", K, 0);
    int l = 9 - K - (K == 2 ? 2 : 0); /* the top level, or below it */
    int32_t basis[MAXM];
    for (int r = 0; r < l; r++) basis[r] = r;
    for (int k = 0; k < K; k++) basis[l + k] = 9 - K + k;
    fhjit_value a = poly(&e, g, "a", K == 3 ? 2 : 0, 0, basis, l + K, FHJIT_DOMAIN_NTT,
                         FHJIT_FORM_MONT);
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    fhjit_value tab = s7_table(g, "t", K + (int64_t)K * l + l);
    fhjit_value y = fhjit_moddown(g, a, fwd, inv, tab);
    ck_assert_int_ge(y, 0);
    ck_assert_int_eq(fhjit_output(g, y, NULL), FHJIT_OK);
    check_graph(&e, g);
  }
  s7_env_free(&e);
}
END_TEST

/* ------------------------------------------------------------ modup */

START_TEST(test_modup_steps) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): r62 at N = 2^4 and r32 at
   * 2^10, every digit at both levels in each */
  TU_SAMPLED_IN(_i, 1, 12);
  fhjit_radix radix = radices[_i % 2];
  int logn = 4 + (_i / 2) % 7;
  env e;
  s7_env_init(&e, radix, 10, logn, 0x3d + (uint64_t)_i);
  /* Q_L = [0, 8), P = {8, 9}, digits of 3: {0,1,2} {3,4,5} {6,7} */
  for (int level = 0; level < 2; level++) {
    int l = level ? 5 : 8;
    for (int j = 0; j < (level ? 2 : 3); j++) {
      fhjit_graph *g = s7_graph(&e, "s7steps", 2, 3);
      fhjit_value d = poly(&e, g, "d", 0, j == 1 ? 2 : 0, NULL, l, FHJIT_DOMAIN_NTT,
                           FHJIT_FORM_MONT);
      fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
      int64_t nd = j == 2 ? 2 : (level && j == 1 ? 2 : 3);
      fhjit_value tab = s7_table(g, "t", nd + nd * (l + 2 - nd));
      fhjit_value y = fhjit_modup(g, d, j, fwd, inv, tab);
      ck_assert_msg(y >= 0, "modup: %s", fhjit_last_error(e.ctx));
      ck_assert_int_eq(fhjit_output(g, y, NULL), FHJIT_OK);
      check_graph(&e, g);
    }
  }
  s7_env_free(&e);
}
END_TEST

/* A key switch of one polynomial written as a graph: modup per digit,
 * digit products against a key on Q ++ P, add_lazy, moddown of each
 * component; plus the sum of a ciphertext (SPEC section 7's keyswitch). */
START_TEST(test_keyswitch_graph) {
  env e;
  s7_env_init(&e, radices[_i], 7, 6, 0x6e + (uint64_t)_i);
  /* Q = [0, 5), P = {5, 6}, digits of 2: {0,1} {2,3} {4} */
  fhjit_graph *g = s7_graph(&e, "s7steps", 2, 2);
  fhjit_value d = poly(&e, g, "d", 0, 0, NULL, 5, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value c = poly(&e, g, "c", 2, 0, NULL, 5, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_type kt = tu_key(3, 7, e.n);
  kt.domain = FHJIT_DOMAIN_NTT;
  kt.form = FHJIT_FORM_MONT;
  fhjit_value key = fhjit_input(g, "key", &kt);
  fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
  fhjit_value acc = FHJIT_NO_VALUE;
  for (int j = 0; j < 3; j++) {
    char name[16];
    snprintf(name, sizeof name, "t%d", j);
    int64_t nd = j == 2 ? 1 : 2;
    fhjit_value up = fhjit_modup(g, d, j, fwd, inv, s7_table(g, name, nd + nd * (7 - nd)));
    fhjit_value prod = fhjit_keyswitch_digit_product(g, up, key, j, 0);
    ck_assert_msg(prod >= 0, "%s", fhjit_last_error(e.ctx));
    acc = acc == FHJIT_NO_VALUE ? prod : fhjit_add_lazy(g, acc, prod);
  }
  fhjit_value md = s7_table(g, "md", 2 + 10 + 5);
  fhjit_value k0 = fhjit_moddown(g, fhjit_extract(g, acc, 0), fwd, inv, md);
  fhjit_value k1 = fhjit_moddown(g, fhjit_extract(g, acc, 1), fwd, inv, md);
  ck_assert_int_ge(k1, 0);
  ck_assert_int_eq(fhjit_output(g, fhjit_add(g, fhjit_pack(g, 2, (fhjit_value[]){k0, k1}), c),
                                NULL),
                   FHJIT_OK);
  check_graph(&e, g);
  s7_env_free(&e);
}
END_TEST

/* ------------------------------------------------- re-indexing ops */

/* rows, concat and automorphism of computed values and of NTT results,
 * with results on several bases in one graph. */
START_TEST(test_reindex_computed) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): r32 at N = 2^4, r62 at 2^10 */
  TU_SAMPLED_IN(_i, 0, 13);
  fhjit_radix radix = radices[_i % 2];
  int logn = 4 + (_i / 2) % 7;
  env e;
  s7_env_init(&e, radix, 6, logn, 0xa0 + (uint64_t)_i);
  int64_t twon = 2 * e.n, k = (5 * 5 * 5) % twon;
  fhjit_graph *g = s7_graph(&e, "s7steps", 0, 0);
  fhjit_value a = poly(&e, g, "a", 0, 0, NULL, 6, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_value b = poly(&e, g, "b", 0, 0, NULL, 6, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_value fwd = s7_twiddles(&e, g, "fwd");
  fhjit_value s = fhjit_add(g, a, b);
  /* coefficient domain: rows and automorphism of a sum */
  fhjit_value lo = fhjit_rows(g, s, 0, 3), hi = fhjit_rows(g, s, 3, 3);
  fhjit_value r1 = fhjit_mul(g, fhjit_automorphism(g, hi, k), fhjit_rows(g, b, 3, 3));
  ck_assert_int_eq(fhjit_output(g, r1, NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_sub(g, lo, fhjit_rows(g, a, 0, 3)), NULL), FHJIT_OK);
  /* NTT domain: automorphism of a transform, concat back */
  fhjit_value t = fhjit_ntt(g, s, fwd, FHJIT_NTT_COEF_STD_TO_NTT);
  ck_assert_int_ge(t, 0);
  fhjit_value ta = fhjit_automorphism(g, t, twon - 1);
  fhjit_value cc = fhjit_concat(g, fhjit_rows(g, ta, 3, 3), fhjit_rows(g, t, 0, 3));
  ck_assert_int_eq(fhjit_output(g, fhjit_add_lazy(g, cc, cc), NULL), FHJIT_OK);
  check_graph(&e, g);
  s7_env_free(&e);
}
END_TEST

Suite *s7_steps_suite(void) {
  Suite *s = suite_create("s7_steps");
  TCase *t = tcase_create("host");
  tcase_set_timeout(t, 600);
  tcase_add_loop_test(t, test_bconv_steps, 0, 14);
  tcase_add_loop_test(t, test_bconv_computed, 0, 2);
  tcase_add_loop_test(t, test_bconv_plan_option, 0, 32);
  tcase_add_loop_test(t, test_rescale_steps, 0, 14);
  tcase_add_loop_test(t, test_rescale_computed, 0, 2);
  tcase_add_loop_test(t, test_moddown_steps, 0, 14);
  tcase_add_loop_test(t, test_modup_steps, 0, 14);
  tcase_add_loop_test(t, test_keyswitch_graph, 0, 2);
  tcase_add_loop_test(t, test_reindex_computed, 0, 14);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(s7_steps_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
