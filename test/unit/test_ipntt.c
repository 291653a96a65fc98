/* test_ipntt.c: forward NTTs of several operands planned with the sum of
 * their key products (ntt_plan ipntt, lib/lower/anchor_ipntt.c): the plan
 * (a head step per member, one reduce step, nothing of the transforms
 * stored), the host path's words against the interpreter and against the
 * same graph with ipntt=0 (each transform stored), an independent check of
 * the sum through the NTT's defining evaluation, and the graphs the group
 * must leave alone. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "nttcheck.h"
#include "testutil.h"

typedef struct shape {
  fhjit_radix radix;
  int rows, D, logn, std, add;
  const char *plan; /* ntt_plan, or NULL */
} shape;

/* 2^13 .. 2^15 (two-kernel plans), 2^10 with two rows (few blocks: two
 * kernels as well), 1 to 6 rows, 2 to 8 digits (r62 5: past the default's
 * 32 bytes a position, forced), both forward kinds, add_lazy and add */
static const shape shapes[] = {
    {FHJIT_R62, 3, 2, 13, 0, 0, NULL},      {FHJIT_R32, 3, 2, 13, 0, 0, NULL},
    {FHJIT_R62, 1, 3, 14, 1, 0, NULL},      {FHJIT_R32, 6, 4, 13, 0, 1, NULL},
    {FHJIT_R62, 2, 4, 13, 0, 1, NULL},      {FHJIT_R32, 2, 8, 13, 1, 0, NULL},
    {FHJIT_R62, 2, 5, 13, 0, 0, "ipntt=1"}, {FHJIT_R32, 1, 2, 15, 0, 0, NULL},
    {FHJIT_R62, 2, 2, 10, 0, 0, NULL},
};
#define NSHAPES ((int)(sizeof shapes / sizeof *shapes))

typedef struct env {
  fhjit_context *ctx;
  const shape *s;
  int64_t n;
  size_t ws;
  uint64_t q[8];
  void *params, *fwd, *inv;
  uint64_t seed;
} env;

static void env_init(env *e, const shape *s) {
  memset(e, 0, sizeof *e);
  e->ctx = fhjit_context_create();
  e->s = s;
  e->n = INT64_C(1) << s->logn;
  e->ws = s->radix == FHJIT_R32 ? 4 : 8;
  e->seed = 0x1b7a + (uint64_t)s->logn * 31 + (uint64_t)s->D;
  ck_assert(e->ctx);
  /* near the radix's limit, and one far below it */
  int bits = s->radix == FHJIT_R32 ? 30 : 60;
  ck_assert_int_eq(fhjit_find_primes(e->ctx, bits, (uint64_t)(2 * e->n), s->rows, e->q), FHJIT_OK);
  if (s->rows > 1) {
    uint64_t far;
    ck_assert_int_eq(fhjit_find_primes(e->ctx, bits - 10, (uint64_t)(2 * e->n), 1, &far), FHJIT_OK);
    e->q[1] = far;
  }
  nttcheck_tables(e->ctx, s->radix, e->q, s->rows, e->n, &e->params, &e->fwd, &e->inv);
}

static void env_free(env *e) {
  free(e->params);
  free(e->fwd);
  free(e->inv);
  fhjit_context_destroy(e->ctx);
}

enum { EXTRA_NONE, EXTRA_RESULT, EXTRA_TABLE, EXTRA_COMPUTED };

/* examples/ntt/keyswitch.fh with D digits: inputs fwd, inv, key, d0 ..
 * d(D-1), c; ntt_fwd of each d_k by fwd, keyswitch_digit_product k,
 * summed (add_lazy or add), ntt_inv, plus c: result "out". extra: also
 * f0 as a result (EXTRA_RESULT), or d1's transform by the inverse
 * table's rows (EXTRA_TABLE: another table), which the group must not
 * take; or the last digit computed, sub(d, e) (EXTRA_COMPUTED: its head
 * computes it in its prologue). */
static fhjit_graph *build(env *e, int extra) {
  const shape *s = e->s;
  fhjit_graph *g = fhjit_graph_create(e->ctx, "ipntt", s->radix);
  ck_assert(g);
  fhjit_type tt = {.kind = FHJIT_KIND_TWIDDLE, .rows = s->rows, .n = e->n};
  fhjit_value fwd = fhjit_input(g, "fwd", &tt), inv = fhjit_input(g, "inv", &tt);
  fhjit_value fwd2 = extra == EXTRA_TABLE ? fhjit_input(g, "fwd2", &tt) : -1;
  fhjit_type kt = tu_key(s->D, s->rows, e->n);
  kt.domain = FHJIT_DOMAIN_NTT;
  kt.form = FHJIT_FORM_MONT;
  fhjit_value key = fhjit_input(g, "key", &kt), acc = -1, f0 = -1;
  for (int k = 0; k < s->D; k++) {
    char name[16];
    snprintf(name, sizeof name, "d%d", k);
    fhjit_type dt = tu_poly(0, 0, NULL, s->rows, e->n);
    dt.domain = FHJIT_DOMAIN_COEF;
    dt.form = s->std ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
    fhjit_value d = fhjit_input(g, name, &dt);
    /* EXTRA_COMPUTED: the last digit computed (its head's prologue) */
    if (extra == EXTRA_COMPUTED && k == s->D - 1) d = fhjit_sub(g, d, fhjit_input(g, "e", &dt));
    fhjit_value f = fhjit_ntt(g, d, k == 1 && fwd2 >= 0 ? fwd2 : fwd,
                              s->std ? FHJIT_NTT_COEF_STD_TO_NTT : FHJIT_NTT_COEF_MONT_TO_NTT);
    if (!k) f0 = f;
    fhjit_value p = fhjit_keyswitch_digit_product(g, f, key, k, 0);
    acc = k == 0 ? p : s->add ? fhjit_add(g, acc, p) : fhjit_add_lazy(g, acc, p);
  }
  fhjit_type ct = tu_poly(2, 0, NULL, s->rows, e->n);
  ct.domain = FHJIT_DOMAIN_COEF;
  ct.form = FHJIT_FORM_MONT;
  fhjit_value c = fhjit_input(g, "c", &ct);
  fhjit_value out = fhjit_add(g, fhjit_ntt(g, acc, inv, FHJIT_NTT_TO_COEF_MONT), c);
  ck_assert_int_eq(fhjit_output(g, out, "out"), FHJIT_OK);
  if (extra == EXTRA_RESULT) ck_assert_int_eq(fhjit_output(g, f0, "f0"), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  return g;
}

/* Input buffers: the tables, else lazy words of each row's modulus with
 * SPEC's edge values among them (tu_lazy). */
static void **inputs(env *e, fhjit_graph *g) {
  int32_t nin = fhjit_num_inputs(g);
  void **in = calloc((size_t)nin, sizeof *in);
  ck_assert(in);
  for (int32_t i = 0; i < nin; i++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_input_binding(g, i, &t, NULL), FHJIT_OK);
    size_t words = (size_t)fhjit_type_elements(&t);
    in[i] = malloc(words * e->ws);
    ck_assert(in[i]);
    if (t.kind == FHJIT_KIND_TWIDDLE) {
      int use = 0;
      fhjit_input_twiddle_use(g, i, &use);
      memcpy(in[i], use == FHJIT_TWIDDLE_INVERSE ? e->inv : e->fwd, words * e->ws);
      continue;
    }
    for (size_t k = 0; k < words; k++)
      tu_set_word(e->ws, in[i], k, tu_lazy(&e->seed, e->q[(k / (size_t)e->n) % (size_t)t.rows]));
  }
  return in;
}

static void free_all(void **b, int32_t n) {
  for (int32_t i = 0; i < n; i++) free(b[i]);
  free(b);
}

/* The results of g on the host (host) or by the interpreter. */
static void **run(env *e, fhjit_graph *g, void **in, int host) {
  int32_t nres = fhjit_num_results(g);
  void **out = calloc((size_t)nres, sizeof *out);
  ck_assert(out);
  for (int32_t r = 0; r < nres; r++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, r, &t), FHJIT_OK);
    out[r] = malloc((size_t)fhjit_type_elements(&t) * e->ws);
    ck_assert(out[r]);
  }
  fhjit_status st = host ? fhjit_run_host(g, e->params, e->s->rows, (const void *const *)in, out, 0)
                         : fhjit_interpret(g, e->params, e->s->rows, (const void *const *)in, out);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
  return out;
}

static int count_of(const char *text, const char *needle) {
  int k = 0;
  for (const char *p = text; p && (p = strstr(p, needle)); p++) k++;
  return k;
}

/* Every result of g on the host equal to the interpreter's, on inputs of
 * its own; then g and e released. */
static void check_and_free(env *e, fhjit_graph *g) {
  void **in = inputs(e, g);
  void **ref = run(e, g, in, 0), **host = run(e, g, in, 1);
  int32_t nres = fhjit_num_results(g);
  for (int32_t r = 0; r < nres; r++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, r, &t), FHJIT_OK);
    ck_assert_msg(!memcmp(ref[r], host[r], (size_t)fhjit_type_elements(&t) * e->ws),
                  "result %d: host words differ from the interpreter's", (int)r);
  }
  free_all(ref, nres);
  free_all(host, nres);
  free_all(in, fhjit_num_inputs(g));
  fhjit_graph_destroy(g);
  env_free(e);
}

static void set_plan(env *e, const char *base, const char *more) {
  char plan[64];
  snprintf(plan, sizeof plan, "%s%s%s", base ? base : "", base && more ? "," : "", more ? more : "");
  ck_assert_int_eq(fhjit_context_set_option(e->ctx, "ntt_plan", plan[0] ? plan : NULL), FHJIT_OK);
}

/* The sum's transform checked without the interpreter's NTT: out - c at
 * coefficient-Montgomery form is INTT(sum_k NTT(d_k) key_k R^-1) of
 * component j, so its evaluation at psi^(2 br(o) + 1) (SPEC 5's slot o)
 * times R equals the slots' products; sampled slots, by plain 128-bit
 * arithmetic. */
static void check_sum_identity(env *e, fhjit_graph *g, void **in, void **out) {
  const shape *s = e->s;
  int64_t n = e->n;
  int logn = s->logn;
  int32_t key = 2, c = 3 + s->D; /* input order: fwd, inv, key, d.., c */
  (void)g;
  uint64_t state = e->seed ^ 0x55;
  for (int sample = 0; sample < 6; sample++) {
    int r = (int)tu_below(&state, (uint64_t)s->rows), j = (int)tu_below(&state, 2);
    int64_t o = (int64_t)tu_below(&state, (uint64_t)n);
    uint64_t q = e->q[r], psi;
    ck_assert_int_eq(fhjit_ntt_psi(e->ctx, q, n, &psi), FHJIT_OK);
    int64_t br = 0;
    for (int b = 0; b < logn; b++) br |= ((o >> b) & 1) << (logn - 1 - b);
    uint64_t x = tu_powmod(psi, (uint64_t)(2 * br + 1), q), R = tu_r2(s->radix, q);
    uint64_t rinv = tu_rinv(s->radix, q);
    R = tu_mulmod(R, rinv, q); /* R mod q */
    /* A(x) for a coefficient-domain row a (its integer values mod q) */
    uint64_t lhs = 0, xp = 1;
    size_t base_o = ((size_t)j * (size_t)s->rows + (size_t)r) * (size_t)n;
    for (int64_t i = 0; i < n; i++) {
      int64_t at = (int64_t)base_o + i;
      uint64_t v = (tu_word(e->ws, out[0], at) + 2 * q - tu_word(e->ws, in[c], at) % q) % q;
      lhs = (lhs + tu_mulmod(v, xp, q)) % q;
      xp = tu_mulmod(xp, x, q);
    }
    /* out - c = A R^{-1}... in Montgomery words: the integer of the
     * coefficient-Montgomery row is v R^-1; the slot value of the sum is
     * sum_k F_k(x) K_k R^-1 with F_k(x) = d_k(x) (as integers: d_k R^-1 for
     * mont inputs, d_k for std) R, K_k the key word (Montgomery: K R^-1) */
    uint64_t rhs = 0;
    for (int k = 0; k < s->D; k++) {
      uint64_t dx = 0, xq = 1;
      size_t bd = (size_t)r * (size_t)n;
      for (int64_t i = 0; i < n; i++) {
        dx = (dx + tu_mulmod(tu_word(e->ws, in[3 + k], (int64_t)bd + i) % q, xq, q)) % q;
        xq = tu_mulmod(xq, x, q);
      }
      if (s->std) dx = tu_mulmod(dx, R, q); /* to_mont */
      size_t kk = (((size_t)k * 2 + (size_t)j) * (size_t)s->rows + (size_t)r) * (size_t)n + (size_t)o;
      uint64_t kw = tu_word(e->ws, in[key], kk) % q;
      rhs = (rhs + tu_mulmod(tu_mulmod(dx, kw, q), rinv, q)) % q;
    }
    ck_assert_msg(lhs == rhs, "shape %d..: row %d comp %d slot %lld: the sum's evaluation %llu != %llu",
                  s->logn, r, j, (long long)o, (unsigned long long)lhs, (unsigned long long)rhs);
  }
}

/* Every shape: grouped by default (a head step per digit, one reduce step
 * after them, the transforms not stored); the host's words equal the
 * interpreter's and the ipntt=0 plan's; the sum passes the evaluation
 * identity. */
START_TEST(test_ipntt_shapes) {
  TU_SAMPLED(_i);
  env e;
  env_init(&e, &shapes[_i]);
  const shape *s = e.s;
  set_plan(&e, s->plan, NULL);
  fhjit_graph *g = build(&e, EXTRA_NONE);
  const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_msg(plan, "%s", fhjit_last_error(e.ctx));
  ck_assert_int_eq(count_of(plan, "first kernel only, at rows"), s->D);
  ck_assert_int_eq(count_of(plan, "steps before, one per member (ipntt)"), 1);
  ck_assert_int_eq(count_of(plan, "inner product of"), 1);
  void **in = inputs(&e, g);
  void **ref = run(&e, g, in, 0), **host = run(&e, g, in, 1);
  size_t words = (size_t)2 * (size_t)s->rows * (size_t)e.n;
  ck_assert_msg(!memcmp(ref[0], host[0], words * e.ws), "grouped: host words differ from the interpreter's");
  check_sum_identity(&e, g, in, host);
  fhjit_graph_destroy(g);
  set_plan(&e, s->plan, "ipntt=0");
  g = build(&e, EXTRA_NONE);
  plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_int_eq(count_of(plan, "(ipntt)"), 0);
  void **old = run(&e, g, in, 1);
  ck_assert_msg(!memcmp(old[0], host[0], words * e.ws), "ipntt=0: host words differ");
  free_all(old, 1);
  free_all(ref, 1);
  free_all(host, 1);
  free_all(in, fhjit_num_inputs(g));
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* What the group leaves alone, the results still the interpreter's: a
 * transform that is also a result (it must be stored), two tables (the
 * others than d1's grouped), one digit; and r62's five digits by default
 * (40 bytes a position): the first stored, the last four grouped. */
START_TEST(test_ipntt_not) {
  TU_SAMPLED_IN(_i, 0, 2);
  static const shape r62_5 = {FHJIT_R62, 2, 5, 13, 0, 0, NULL};
  static const shape one = {FHJIT_R32, 2, 1, 13, 0, 0, NULL};
  const shape *s = _i == 2 ? &r62_5 : _i == 3 ? &one : &shapes[0];
  int extra = _i == 0 ? EXTRA_RESULT : _i == 1 ? EXTRA_TABLE : EXTRA_NONE;
  env e;
  env_init(&e, s);
  fhjit_graph *g = build(&e, extra);
  const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_msg(plan, "%s", fhjit_last_error(e.ctx));
  static const int heads[4] = {0, 0, 4, 0};
  ck_assert_int_eq(count_of(plan, "first kernel only, at rows"), heads[_i]);
  check_and_free(&e, g);
}
END_TEST

/* A member whose operand is computed: its head computes it in its first
 * kernel (a prologue) and the group still forms; words as the
 * interpreter's, both radices. */
START_TEST(test_ipntt_prologue) {
  TU_SAMPLED_ONLY(_i, 1);
  env e;
  env_init(&e, &shapes[_i ? 3 : 0]);
  fhjit_graph *g = build(&e, EXTRA_COMPUTED);
  const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_msg(plan, "%s", fhjit_last_error(e.ctx));
  ck_assert_int_eq(count_of(plan, "first kernel only, at rows"), e.s->D);
  ck_assert_int_eq(count_of(plan, "prologue: sub"), 1);
  check_and_free(&e, g);
}
END_TEST

/* The keys are refused where they are malformed, like every ntt_plan key. */
START_TEST(test_ipntt_keys) {
  static const char *const good[] = {"ipntt=1", "latewait=0"}, *const bad[] = {"ipntt=2", "latewait=3"};
  fhjit_context *ctx = fhjit_context_create();
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", good[_i]), FHJIT_OK);
  ck_assert_int_ne(fhjit_context_set_option(ctx, "ntt_plan", bad[_i]), FHJIT_OK);
  ck_assert(tu_contains(fhjit_last_error(ctx), _i ? "latewait" : "ipntt"));
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *su = suite_create("ipntt");
  TCase *t = tcase_create("ipntt");
  tcase_set_timeout(t, 600);
  tcase_add_loop_test(t, test_ipntt_shapes, 0, NSHAPES);
  tcase_add_loop_test(t, test_ipntt_not, 0, 4);
  tcase_add_loop_test(t, test_ipntt_prologue, 0, 2);
  tcase_add_loop_test(t, test_ipntt_keys, 0, 2);
  suite_add_tcase(su, t);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
