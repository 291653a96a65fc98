/* test_liftfuse.c: rescale's lift computed in its forward NTT's loads
 * (ntt_plan key liftfuse, lw_ntt_plan.lift; lib/lower/mixsteps.c
 * rescale_steps) on the host path: word for word against the interpreter,
 * and against SPEC's identity with this file's big integers (bigint.c):
 * the rescale of a value whose CRT integer is X is round(X / q_last) =
 * floor((X + floor(q_last / 2)) / q_last) on the remaining rows. Both
 * radices, N = 2^4 .. 2^12, 2 .. 64 rows, the dropped modulus near the
 * radix limit, in the middle or far below it against rows on both sides
 * of it (t < q_last / 2 and t > q_last), random words and the edge words
 * (the dropped row's coefficients 0, q_last - 1, floor(q_last / 2) and
 * floor(q_last / 2) + 1; every row's 0 and q - 1), components and a batch
 * axis, a computed operand (its rows computed in the inverse NTT's
 * prologue: mixfuse=1). liftfuse=0 (the lift kernel) gives the same words
 * with one kernel and one scratch buffer of l rows more. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigint.h"
#include "testutil.h"

#define MAXM 65

typedef struct env {
  fhjit_context *ctx;
  fhjit_radix radix;
  size_t ws;
  int m; /* chain length: rows [0, m - 1) stay, m - 1 is dropped */
  int64_t n;
  uint64_t q[MAXM];
  void *params, *fwd, *inv;
  uint64_t seed;
} env;

/* Three bands of primes = 1 mod 2N (at least 2^13): near the radix limit,
 * the middle, far below. The dropped modulus from band `last`; the other
 * rows cycle through the bands (so some are below q_last / 2 and, but for
 * last = 0, some above q_last). */
static void env_init(env *e, fhjit_radix radix, int m, int logn, int last, uint64_t seed) {
  ck_assert_int_le(m, MAXM);
  memset(e, 0, sizeof *e);
  e->ctx = fhjit_context_create();
  e->radix = radix;
  e->ws = radix == FHJIT_R32 ? 4 : 8;
  e->m = m;
  e->n = INT64_C(1) << logn;
  e->seed = seed;
  static const int bits[2][3] = {{30, 26, 22}, {60, 50, 24}};
  uint64_t band[3][MAXM];
  for (int b = 0; b < 3; b++)
    ck_assert_int_eq(fhjit_find_primes(NULL, bits[radix == FHJIT_R62][b],
                                       e->n < 4096 ? 8192 : 2 * e->n, m, band[b]),
                     FHJIT_OK);
  int used[3] = {0, 0, 0};
  e->q[m - 1] = band[last][used[last]++];
  for (int r = 0; r < m - 1; r++) {
    int b = (r + seed) % 3;
    e->q[r] = band[b][used[b]++];
  }
  e->params = malloc(8 * e->ws * (size_t)m);
  e->fwd = malloc(e->ws * (size_t)(m * e->n));
  e->inv = malloc(e->ws * (size_t)(m * e->n));
  ck_assert_int_eq(fhjit_param_table(e->ctx, radix, e->q, m, e->n, 1, 0, e->params, m), FHJIT_OK);
  ck_assert_int_eq(fhjit_twiddle_tables(e->ctx, radix, e->q, m, e->n, e->fwd, e->inv), FHJIT_OK);
}

static void env_free(env *e) {
  fhjit_context_destroy(e->ctx);
  free(e->params);
  free(e->fwd);
  free(e->inv);
}

static fhjit_value twiddles(env *e, fhjit_graph *g, const char *name, int rows) {
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = rows, .n = e->n};
  return fhjit_input(g, name, &t);
}

/* Graph kinds: the operand x is coefficient-standard, transformed to the
 * NTT domain and rescaled (its dropped row's coefficients are x's words:
 * the edges reach the lift), the rescale a result and, transformed back,
 * a second (for the identity); or (computed) rescale(add(x, y)) of
 * NTT-domain operands. */
typedef struct shape {
  int comps, nbatch;
  int computed;
} shape;

static fhjit_graph *build(env *e, const shape *s) {
  int m = e->m, l = m - 1;
  fhjit_graph *g = fhjit_graph_create(e->ctx, "liftfuse", e->radix);
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(fhjit_graph_set_moduli(g, e->q, m), FHJIT_OK);
  int64_t batch[1] = {2};
  fhjit_type t = tu_poly(s->comps, s->nbatch, batch, m, e->n);
  fhjit_value fwd = twiddles(e, g, "fwd", m), inv = twiddles(e, g, "inv", m);
  fhjit_type tt = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = l};
  fhjit_value tab;
  if (s->computed) {
    t.domain = FHJIT_DOMAIN_NTT;
    t.form = FHJIT_FORM_MONT;
    fhjit_value x = fhjit_input(g, "x", &t), y = fhjit_input(g, "y", &t);
    tab = fhjit_input(g, "t", &tt);
    fhjit_value z = fhjit_rescale(g, fhjit_add(g, x, y), fwd, inv, tab);
    ck_assert_msg(z >= 0, "%s", fhjit_last_error(e->ctx));
    ck_assert_int_eq(fhjit_output(g, z, NULL), FHJIT_OK);
  } else {
    t.domain = FHJIT_DOMAIN_COEF;
    t.form = FHJIT_FORM_STD;
    fhjit_value x = fhjit_input(g, "x", &t);
    tab = fhjit_input(g, "t", &tt);
    /* the remaining rows [0, l) read a table of exactly their rows */
    fhjit_value invl = twiddles(e, g, "inv_l", l);
    fhjit_value y = fhjit_ntt(g, x, fwd, FHJIT_NTT_COEF_STD_TO_NTT);
    fhjit_value z = fhjit_rescale(g, y, fwd, inv, tab);
    ck_assert_msg(z >= 0, "%s", fhjit_last_error(e->ctx));
    ck_assert_int_eq(fhjit_output(g, z, NULL), FHJIT_OK);
    ck_assert_int_eq(fhjit_output(g, fhjit_ntt(g, z, invl, FHJIT_NTT_TO_COEF_STD), NULL),
                     FHJIT_OK);
  }
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e->ctx));
  return g;
}

/* Words of polynomial input i: canonical (coefficient-standard) or lazy
 * (NTT domain); per polynomial, index 0 is 0 on every row and index 1 is
 * q - 1 on every row (X = 0 and X = Q - 1), and the dropped row's indices
 * 2, 3 are floor(q_last / 2) and + 1 (the two sides of the centring). */
static void fill(env *e, fhjit_graph *g, int32_t i, void *buf) {
  fhjit_type t;
  ck_assert_int_eq(fhjit_input_binding(g, i, &t, NULL), FHJIT_OK);
  int64_t len = fhjit_type_elements(&t);
  int lazy = t.domain == FHJIT_DOMAIN_NTT;
  for (int64_t k = 0; k < len; k++) {
    int64_t r = (k / t.n) % t.rows, idx = k % t.n;
    uint64_t q = e->q[r], w = lazy ? tu_lazy(&e->seed, q) : tu_below(&e->seed, q);
    if (idx == 0) w = 0;
    if (idx == 1) w = q - 1;
    if (r == t.rows - 1 && (idx == 2 || idx == 3)) w = q / 2 + (uint64_t)(idx - 2);
    tu_set_word(e->ws, buf, k, w);
  }
}

typedef struct run_out {
  void *res[2];
  int64_t len[2];
  int nres;
} run_out;

/* Runs g on the host (host = 1) or in the interpreter with inputs ins. */
static void run(env *e, fhjit_graph *g, void **ins, int host, run_out *o) {
  o->nres = fhjit_num_results(g);
  for (int32_t r = 0; r < o->nres; r++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, r, &t), FHJIT_OK);
    o->len[r] = fhjit_type_elements(&t);
    o->res[r] = malloc(e->ws * (size_t)o->len[r]);
    memset(o->res[r], 0xa5, e->ws * (size_t)o->len[r]);
  }
  fhjit_status st = host ? fhjit_run_host(g, e->params, e->m, (const void *const *)ins, o->res, 2)
                         : fhjit_interpret(g, e->params, e->m, (const void *const *)ins, o->res);
  ck_assert_msg(st == FHJIT_OK, "%s: %s", host ? "run_host" : "interpret", fhjit_last_error(e->ctx));
}

static void run_free(run_out *o) {
  for (int r = 0; r < o->nres; r++) free(o->res[r]);
}

/* The inputs of g (polynomials filled, tables computed, twiddles). */
static void inputs(env *e, fhjit_graph *g, void **ins, int *own) {
  int32_t ni = fhjit_num_inputs(g);
  for (int32_t i = 0; i < ni; i++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_input_binding(g, i, &t, NULL), FHJIT_OK);
    own[i] = 0;
    if (t.kind == FHJIT_KIND_TWIDDLE) {
      ins[i] = fhjit_value_name(g, fhjit_input_value(g, i))[0] == 'i' ? e->inv : e->fwd;
      continue;
    }
    ins[i] = malloc(e->ws * (size_t)fhjit_type_elements(&t));
    own[i] = 1;
    if (t.kind == FHJIT_KIND_TABLE) {
      int64_t tl;
      ck_assert_int_eq(fhjit_input_table(g, i, ins[i], &tl), FHJIT_OK);
    } else {
      fill(e, g, i, ins[i]);
    }
  }
}

typedef struct counts {
  int kernels, scratch;
  long long bytes;
  int lift_line;
} counts;

static counts plan_counts(env *e, fhjit_graph *g) {
  const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_msg(text != NULL, "%s", fhjit_last_error(e->ctx));
  const char *p = strstr(text, " steps, ");
  ck_assert_ptr_nonnull(p);
  counts c;
  ck_assert_int_eq(sscanf(p, " steps, %d kernels, %d scratch buffers (%lld bytes)", &c.kernels,
                          &c.scratch, &c.bytes),
                   3);
  c.lift_line = strstr(text, "load: lift (rescale)") != NULL;
  int bconv_lift = strstr(text, "lift (rescale) 1 ->") != NULL;
  ck_assert_int_ne(c.lift_line, bconv_lift); /* one or the other */
  return c;
}

/* SPEC's identity on the transformed-back result (row-major [.., l, N]
 * per polynomial p): floor((X + h) / q_last) mod q_r, X the CRT integer of
 * the operand's coefficients x[p][0..m)[i]. */
static int64_t check_identity(env *e, const void *x, const void *back, int64_t polys) {
  int m = e->m, l = m - 1;
  int64_t n = e->n, checked = 0;
  uint64_t ql = e->q[l], h = ql / 2;
  for (int64_t p = 0; p < polys; p++)
    for (int64_t i = 0; i < n; i++) {
      uint64_t res[MAXM];
      for (int r = 0; r < m; r++) res[r] = tu_word(e->ws, x, (p * m + r) * n + i);
      bi X, hb, Y;
      bi_crt(&X, res, e->q, m);
      bi_set(&hb, h);
      bi_add(&X, &X, &hb);
      bi_divmod_u64(&Y, &X, ql);
      for (int r = 0; r < l; r++) {
        uint64_t got = tu_word(e->ws, back, (p * l + r) * n + i), want = bi_divmod_u64(NULL, &Y, e->q[r]);
        ck_assert_msg(got == want, "identity: poly %lld row %d index %lld: %llu, want %llu",
                      (long long)p, r, (long long)i, (unsigned long long)got,
                      (unsigned long long)want);
        checked++;
      }
    }
  return checked;
}

/* The chains (m rows, the last dropped) of the loop test. */
static const int chain_rows[] = {2, 3, 5, 8, 13, 21, 34, 47, 64};

/* Bit-exact against the interpreter with liftfuse on (the default) and
 * off; one kernel and one l-row scratch buffer fewer with it; the
 * identity where the modulus product fits bigint.h's 1536 bits. */
START_TEST(test_rescale_liftfuse) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): 6 of the 36, both radices,
   * N = 2^4 .. 2^10, chains of 2, 5, 8, 13, 34 and 47 rows, each of the
   * three last-row choices */
  TU_SAMPLED_IN(_i, 0, 9, 12, 21, 24, 30);
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  int logn = 4 + (_i / 2) % 9;
  int m = chain_rows[(_i / 2 * 5 + _i / 18) % 9];
  int last = (_i / 2 + _i / 18) % 3;
  env e;
  env_init(&e, radix, m, logn, last, 0x11f7 + (uint64_t)_i);
  double bits = 0;
  for (int r = 0; r < m; r++)
    for (uint64_t q = e.q[r]; q; q >>= 1) bits++;
  /* the ciphertext shape for the small chains, one polynomial for the
   * large ones at large N (time) */
  shape s = {(m <= 13 || logn <= 8) ? 2 : 0, _i % 4 == 3, 0};
  void *ins[8];
  int own[8];
  run_out want, got[2];
  counts c[2];
  fhjit_graph *g = NULL;
  for (int fuse = 1; fuse >= 0; fuse--) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", fuse ? NULL : "liftfuse=0"),
                     FHJIT_OK);
    g = build(&e, &s);
    c[fuse] = plan_counts(&e, g);
    if (fuse) {
      inputs(&e, g, ins, own);
      run(&e, g, ins, 0, &want);
    }
    run(&e, g, ins, 1, &got[fuse]);
    for (int r = 0; r < want.nres; r++)
      for (int64_t k = 0; k < want.len[r]; k++)
        ck_assert_msg(tu_word(e.ws, got[fuse].res[r], k) == tu_word(e.ws, want.res[r], k),
                      "liftfuse=%d m %d N 2^%d result %d word %lld: host %llu, interpreter %llu",
                      fuse, m, logn, r, (long long)k,
                      (unsigned long long)tu_word(e.ws, got[fuse].res[r], k),
                      (unsigned long long)tu_word(e.ws, want.res[r], k));
  }
  ck_assert(c[1].lift_line && !c[0].lift_line);
  ck_assert_int_eq(c[0].kernels - c[1].kernels, 1);
  ck_assert_int_eq(c[0].scratch - c[1].scratch, 1);
  int64_t polys = (s.comps ? s.comps : 1) * (s.nbatch ? 2 : 1);
  ck_assert_int_eq(c[0].bytes - c[1].bytes, polys * (m - 1) * e.n * (int64_t)e.ws);
  int32_t xi = -1;
  for (int32_t i = 0; i < fhjit_num_inputs(g); i++)
    if (!strcmp(fhjit_value_name(g, fhjit_input_value(g, i)), "x")) xi = i;
  ck_assert_int_ge(xi, 0);
  if (bits <= 1400) ck_assert_int_gt(check_identity(&e, ins[xi], want.res[1], polys), 0);
  for (int i = 0; i < fhjit_num_inputs(g); i++)
    if (own[i]) free(ins[i]);
  run_free(&want);
  run_free(&got[0]);
  run_free(&got[1]);
  env_free(&e);
}
END_TEST

/* A computed operand: rescale(add(x, y)), its dropped row computed in
 * the inverse NTT's prologue (mixfuse=1) and the others in the forward
 * NTT's epilogue, the lift in that forward's loads; and materialised
 * (mixfuse=0); word for word against the interpreter. */
START_TEST(test_rescale_liftfuse_computed) {
  TU_SAMPLED(_i); /* sampled (testutil.h): r32 m 6, r62 m 34 */
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  int m = _i / 2 ? 34 : 6, logn = _i / 2 ? 6 : 11;
  env e;
  env_init(&e, radix, m, logn, 1 + _i / 2, 0x2f7 + (uint64_t)_i);
  shape s = {2, 0, 1};
  for (int mix = 0; mix < 2; mix++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", mix ? "mixfuse=1" : "mixfuse=0"),
                     FHJIT_OK);
    fhjit_graph *g = build(&e, &s);
    counts c = plan_counts(&e, g);
    ck_assert(c.lift_line);
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_int_eq(strstr(text, "prologue:") != NULL, mix);
    void *ins[8];
    int own[8];
    run_out want, got;
    inputs(&e, g, ins, own);
    run(&e, g, ins, 0, &want);
    run(&e, g, ins, 1, &got);
    for (int64_t k = 0; k < want.len[0]; k++)
      ck_assert_msg(tu_word(e.ws, got.res[0], k) == tu_word(e.ws, want.res[0], k),
                    "mixfuse=%d word %lld: host %llu, interpreter %llu", mix, (long long)k,
                    (unsigned long long)tu_word(e.ws, got.res[0], k),
                    (unsigned long long)tu_word(e.ws, want.res[0], k));
    for (int i = 0; i < fhjit_num_inputs(g); i++)
      if (own[i]) free(ins[i]);
    run_free(&want);
    run_free(&got);
  }
  env_free(&e);
}
END_TEST

/* The other schedules and arithmetic forms of the forward NTT's first
 * kernel: N = 2^14 (two kernels; r62's default plan there takes the
 * pre step's constant in Shoup's form, shoup=1) and its cluster schedule
 * (the forward's loads in cl_cross_forward; the host runs it too), and
 * N = 2^10 with shoup=1 and 2 (r62) and tws=2 against the interpreter. */
START_TEST(test_rescale_liftfuse_schedules) {
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  static const struct {
    int logn;
    const char *sched, *plan;
  } cases[] = {{14, "two_kernel", NULL}, {14, "cluster", NULL}, {10, NULL, "shoup=1"},
               {10, NULL, "shoup=2,tws=2"}};
  int c = _i / 2;
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): each case once, two_kernel
   * at r32, the others at r62 (where shoup applies) */
  TU_SAMPLED_IN(_i, 0, 3, 5, 7);
  env e;
  env_init(&e, radix, 5, cases[c].logn, c % 3, 0x5c4 + (uint64_t)_i);
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_schedule", cases[c].sched), FHJIT_OK);
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", cases[c].plan), FHJIT_OK);
  shape s = {2, 0, 0};
  fhjit_graph *g = build(&e, &s);
  counts k = plan_counts(&e, g);
  ck_assert(k.lift_line);
  /* four NTTs (the graph's two, rescale's two) of 2 kernels, or 1 each
   * in the cluster schedule (sm_90's plan) */
  if (cases[c].logn == 14) ck_assert_int_eq(k.kernels, cases[c].sched[0] == 'c' ? 4 : 8);
  void *ins[8];
  int own[8];
  run_out want, got;
  inputs(&e, g, ins, own);
  run(&e, g, ins, 0, &want);
  run(&e, g, ins, 1, &got);
  for (int r = 0; r < want.nres; r++)
    for (int64_t i = 0; i < want.len[r]; i++)
      ck_assert_msg(tu_word(e.ws, got.res[r], i) == tu_word(e.ws, want.res[r], i),
                    "case %d result %d word %lld: host %llu, interpreter %llu", c, r, (long long)i,
                    (unsigned long long)tu_word(e.ws, got.res[r], i),
                    (unsigned long long)tu_word(e.ws, want.res[r], i));
  for (int i = 0; i < fhjit_num_inputs(g); i++)
    if (own[i]) free(ins[i]);
  run_free(&want);
  run_free(&got);
  env_free(&e);
}
END_TEST

/* The key is known and validated: liftfuse=2 is refused naming it. */
START_TEST(test_liftfuse_key) {
  fhjit_context *ctx = fhjit_context_create();
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "liftfuse=1"), FHJIT_OK);
  ck_assert_int_ne(fhjit_context_set_option(ctx, "ntt_plan", "liftfuse=2"), FHJIT_OK);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "liftfuse"));
  fhjit_context_destroy(ctx);
}
END_TEST

Suite *liftfuse_suite(void) {
  Suite *s = suite_create("liftfuse");
  TCase *t = tcase_create("host");
  tcase_set_timeout(t, 600);
  tcase_add_loop_test(t, test_rescale_liftfuse, 0, 36);
  tcase_add_loop_test(t, test_rescale_liftfuse_computed, 0, 4);
  tcase_add_loop_test(t, test_rescale_liftfuse_schedules, 0, 8);
  tcase_add_test(t, test_liftfuse_key);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(liftfuse_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
