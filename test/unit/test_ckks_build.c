/* test_ckks_build.c: the composite builders of SPEC section 7's whole
 * operations (lib/ir/build_ckks.c): fhjit_keyswitch, fhjit_ckks_relinearize,
 * fhjit_ckks_rescale, fhjit_ckks_mul_relin_rescale, fhjit_ckks_rotate and
 * fhjit_ckks_rotate_hoisted. Each result equals, word for word, the same
 * composition written by hand from the primitives the way SPEC states it
 * (per-component moddown and rescale, extract and pack), through the
 * interpreter; the composite's graph also runs on the host path
 * (fhjit_run_host) with the same words (on some shapes per builder: the
 * host compile dominates the time under ASan). Small chains (N = 2^4 .. 2^8, both
 * radices): Q 4 + P 2 with digits of 2, Q 5 + P 2 (a shorter last digit),
 * levels below the top (Q a prefix of Q_L, an empty digit skipped), a
 * stated permuted basis; random lazy inputs and keys with edge words. Plus
 * the table-input order and names, the text forms (same hash as the C
 * calls), and the errors (each leaves the graph unchanged). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s7env.h"
#include "testutil.h"

typedef s7env env;

/* A chain shape: m moduli, the last `special` of them P, digits of alpha;
 * operands on `rows` rows at basis `basis` (NULL: [0, rows)); `plan`: the
 * context's ntt_plan option (NULL: the defaults). */
typedef struct shape {
  fhjit_radix radix;
  int m, special, alpha, logn, rows;
  const int32_t *basis;
  const char *plan;
} shape;

static const int32_t perm4[] = {2, 3, 0, 1};
/* every test loops over these (the _i of a loop test picks one) */
static const shape shapes[] = {
    {FHJIT_R62, 6, 2, 2, 4, 4, NULL, NULL},  /* Q 4 + P 2, top level */
    {FHJIT_R32, 7, 2, 2, 5, 5, NULL, NULL},  /* Q 5 + P 2: digits {0,1} {2,3} {4} */
    {FHJIT_R62, 7, 2, 2, 6, 3, NULL, NULL},  /* level [0, 3): digit 2 empty, digit 1 short */
    {FHJIT_R32, 6, 2, 2, 8, 4, perm4, NULL}, /* a stated basis, digits in other rows */
    /* N = 2^14, every transform on the cluster schedule of 8 and 4 blocks
     * (the prologues, epilogues, lifts and row offsets of the fused
     * operations in its host form; the reduce kernels keep two kernels) */
    {FHJIT_R62, 6, 2, 2, 14, 4, NULL, "cluster=3"},
    {FHJIT_R32, 7, 2, 2, 14, 5, NULL, "cluster=2"},
};
#define NSHAPES 6
/* Sampled (FHJIT_TEST_SAMPLE, testutil.h: the ASan stage): the N = 2^14
 * cluster shapes took 134 of this file's 163 s there (their host
 * compiles), so each builder runs one of them, the two alternating over
 * the builders (so both radices and both cluster sizes run their host
 * form): the key switch and relinearise shape 5 (r32, clusters of 4),
 * rescale and HMult shape 4 (r62, clusters of 8), the rotation shape 5
 * with k = 5^3 (case 10); shapes 0 .. 3 all run. */

/* e for shape s: its chain, and its ntt_plan */
static void shape_env(env *e, const shape *s, uint64_t seed) {
  s7_env_init(e, s->radix, s->m, s->logn, seed);
  ck_assert_int_eq(fhjit_context_set_option(e->ctx, "ntt_plan", s->plan), FHJIT_OK);
}

static fhjit_graph *graph(env *e, const shape *s, const char *name) {
  return s7_graph(e, name, s->special, s->alpha);
}

static fhjit_value poly(env *e, fhjit_graph *g, const shape *s, const char *name, int comps,
                        int rows) {
  fhjit_type t = tu_poly(comps, 0, NULL, rows, e->n);
  t.domain = FHJIT_DOMAIN_NTT;
  t.form = FHJIT_FORM_MONT;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  if (s->basis && rows == s->rows)
    ck_assert_int_eq(fhjit_input_basis(g, v, s->basis, rows), FHJIT_OK);
  return v;
}

static fhjit_value key(env *e, fhjit_graph *g, const shape *s, const char *name) {
  int ndig = (s->m - s->special + s->alpha - 1) / s->alpha;
  fhjit_type t = tu_key(ndig, s->m, e->n);
  t.domain = FHJIT_DOMAIN_NTT;
  t.form = FHJIT_FORM_MONT;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  return v;
}

/* The user inputs of every test graph, in this order. */
typedef struct ins {
  fhjit_value a, b, c3, d, k1, k2, fwd, inv;
} ins;

static ins user_inputs(env *e, fhjit_graph *g, const shape *s) {
  ins x;
  x.a = poly(e, g, s, "a", 2, s->rows);
  x.b = poly(e, g, s, "b", 2, s->rows);
  x.c3 = poly(e, g, s, "c3", 3, s->rows);
  x.d = poly(e, g, s, "d", 0, s->rows);
  x.k1 = key(e, g, s, "k1");
  x.k2 = key(e, g, s, "k2");
  x.fwd = s7_twiddles(e, g, "fwd");
  x.inv = s7_twiddles(e, g, "inv");
  return x;
}
#define NUSER 8

typedef struct run {
  int32_t nr;
  int64_t len[8];
  void *res[8];
} run;

static void run_free(run *r) {
  for (int32_t k = 0; k < r->nr; k++) free(r->res[k]);
}

/* Runs bound g on buffers `in` (host path when host is set). */
static void run_graph(env *e, fhjit_graph *g, void **in, int host, run *out) {
  out->nr = fhjit_num_results(g);
  ck_assert_int_le(out->nr, 8);
  for (int32_t k = 0; k < out->nr; k++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, k, &t), FHJIT_OK);
    out->len[k] = fhjit_type_elements(&t);
    out->res[k] = malloc(e->ws * (size_t)out->len[k]);
    memset(out->res[k], 0xa5, e->ws * (size_t)out->len[k]);
  }
  fhjit_status st = host ? fhjit_run_host(g, e->params, e->m, (const void *const *)in, out->res, 2)
                         : fhjit_interpret(g, e->params, e->m, (const void *const *)in, out->res);
  ck_assert_msg(st == FHJIT_OK, "%s: %s", host ? "run_host" : "interpret",
                fhjit_last_error(e->ctx));
}

static void same_words(env *e, const run *x, const run *y, const char *what) {
  ck_assert_int_eq(x->nr, y->nr);
  for (int32_t k = 0; k < x->nr; k++) {
    ck_assert_int_eq(x->len[k], y->len[k]);
    for (int64_t i = 0; i < x->len[k]; i++)
      ck_assert_msg(s7_wget(e, x->res[k], i) == s7_wget(e, y->res[k], i),
                    "%s: result %d word %lld: %llu vs %llu", what, (int)k, (long long)i,
                    (unsigned long long)s7_wget(e, x->res[k], i),
                    (unsigned long long)s7_wget(e, y->res[k], i));
  }
}

/* Binds the composite's graph c and the hand-built h (same inputs in the
 * same order: the user's, then the tables in the documented order), gives
 * them the same words (tables each from its own graph, which must agree),
 * and checks: h's interpreter = c's interpreter = c's host path. */
static void check_pair(env *e, fhjit_graph *c, fhjit_graph *h, int host) {
  ck_assert_msg(fhjit_bind(c) == FHJIT_OK, "bind composite: %s", fhjit_last_error(e->ctx));
  ck_assert_msg(fhjit_bind(h) == FHJIT_OK, "bind by hand: %s", fhjit_last_error(e->ctx));
  int32_t ni = fhjit_num_inputs(c);
  ck_assert_int_eq(ni, fhjit_num_inputs(h));
  ck_assert_int_le(ni, 64);
  void *ic[64], *ih[64];
  for (int32_t i = 0; i < ni; i++) {
    fhjit_type tc, th;
    ck_assert_int_eq(fhjit_input_binding(c, i, &tc, NULL), FHJIT_OK);
    ck_assert_int_eq(fhjit_input_binding(h, i, &th, NULL), FHJIT_OK);
    ck_assert_msg(!memcmp(&tc, &th, sizeof tc), "input %d (%s) differs in type", (int)i,
                  fhjit_value_name(c, fhjit_input_value(c, i)));
    if (tc.kind == FHJIT_KIND_TWIDDLE) {
      ic[i] = ih[i] = i == 6 ? e->fwd : e->inv;
      continue;
    }
    ic[i] = s7_fill(e, c, i);
    if (tc.kind == FHJIT_KIND_TABLE) {
      ih[i] = s7_fill(e, h, i);
      ck_assert_msg(!memcmp(ic[i], ih[i], e->ws * (size_t)tc.n), "table input %d (%s) differs",
                    (int)i, fhjit_value_name(c, fhjit_input_value(c, i)));
    } else {
      ih[i] = ic[i];
    }
  }
  run rc, rh, rj;
  run_graph(e, c, ic, 0, &rc);
  run_graph(e, h, ih, 0, &rh);
  same_words(e, &rc, &rh, "composite vs by hand (interpreter)");
  if (host) {
    run_graph(e, c, ic, 1, &rj);
    same_words(e, &rj, &rc, "composite host path vs interpreter");
    run_free(&rj);
  }
  run_free(&rc);
  run_free(&rh);
  for (int32_t i = 0; i < ni; i++) {
    fhjit_type t;
    fhjit_input_binding(c, i, &t, NULL);
    if (t.kind == FHJIT_KIND_TWIDDLE) continue;
    if (ih[i] != ic[i]) free(ih[i]);
    free(ic[i]);
  }
}

/* --------------------------------------------------- the hand-written forms */

static fhjit_value table(fhjit_graph *g, const char *name, int64_t len) {
  fhjit_value t = s7_table(g, name, len);
  ck_assert_int_ge(t, 0);
  return t;
}

/* The digits of Q's rows (Q on positions basis[0..rows)): nonempty[j]. */
static int level_digits(const shape *s, int *drows) {
  int ql = s->m - s->special, nd = (ql + s->alpha - 1) / s->alpha;
  for (int j = 0; j < nd; j++) {
    drows[j] = 0;
    for (int r = 0; r < s->rows; r++) {
      int p = s->basis ? s->basis[r] : r;
      drows[j] += p / s->alpha == j;
    }
  }
  return nd;
}

/* SPEC's keyswitch(d, key) by hand: tables first (modups by digit, then
 * moddown), then pack(moddown(acc_0), moddown(acc_1)). */
static fhjit_value ks_by_hand(fhjit_graph *g, const shape *s, fhjit_value d, fhjit_value k,
                              fhjit_value fwd, fhjit_value inv, const char *tag) {
  int drows[S7_MAXM], nd = level_digits(s, drows), K = s->special, l = s->rows;
  fhjit_value tabs[S7_MAXM];
  char name[64];
  for (int j = 0; j < nd; j++) {
    if (!drows[j]) continue;
    snprintf(name, sizeof name, "%s.t%d", tag, j);
    tabs[j] = table(g, name, drows[j] * (1 + l + K - drows[j]));
  }
  snprintf(name, sizeof name, "%s.md", tag);
  fhjit_value md = table(g, name, K + K * l + l), acc = FHJIT_NO_VALUE;
  for (int j = 0; j < nd; j++) {
    if (!drows[j]) continue;
    fhjit_value p = fhjit_keyswitch_digit_product(g, fhjit_modup(g, d, j, fwd, inv, tabs[j]), k,
                                                  j, 0);
    acc = acc == FHJIT_NO_VALUE ? p : fhjit_add_lazy(g, acc, p);
  }
  fhjit_value k0 = fhjit_moddown(g, fhjit_extract(g, acc, 0), fwd, inv, md);
  fhjit_value k1 = fhjit_moddown(g, fhjit_extract(g, acc, 1), fwd, inv, md);
  fhjit_value r = fhjit_pack(g, 2, (fhjit_value[]){k0, k1});
  ck_assert_msg(r >= 0, "%s", fhjit_last_error(fhjit_graph_context(g)));
  return r;
}

/* rescale of both components, one table (after the other tables). */
static fhjit_value rescale_by_hand(fhjit_graph *g, const shape *s, fhjit_value ct,
                                   fhjit_value fwd, fhjit_value inv, const char *tag) {
  char name[64];
  snprintf(name, sizeof name, "%s.rs", tag);
  fhjit_value t = table(g, name, s->rows - 1);
  fhjit_value r0 = fhjit_rescale(g, fhjit_extract(g, ct, 0), fwd, inv, t);
  fhjit_value r1 = fhjit_rescale(g, fhjit_extract(g, ct, 1), fwd, inv, t);
  return fhjit_pack(g, 2, (fhjit_value[]){r0, r1});
}

static fhjit_value c(fhjit_graph *g, fhjit_value v, int k) { return fhjit_extract(g, v, k); }

/* ----------------------------------------------------------------- tests */

static void out(env *e, fhjit_graph *g, fhjit_value v) {
  ck_assert_msg(v >= 0, "%s", fhjit_last_error(e->ctx));
  ck_assert_int_eq(fhjit_output(g, v, NULL), FHJIT_OK);
}

START_TEST(test_keyswitch) {
  TU_SAMPLED_IN(_i, 0, 1, 2, 3, 5); /* sampled: NSHAPES' comment */
  const shape *s = &shapes[_i];
  env e;
  shape_env(&e, s, 0xc0 + (uint64_t)_i);
  fhjit_graph *gc = graph(&e, s, "ks"), *gh = graph(&e, s, "ks_hand");
  ins xc = user_inputs(&e, gc, s), xh = user_inputs(&e, gh, s);
  int32_t values0 = fhjit_num_values(gc);
  fhjit_value k = fhjit_keyswitch(gc, xc.d, xc.k1, xc.fwd, xc.inv);
  out(&e, gc, k);
  /* names and the order of the added tables: modup by digit, then moddown */
  char want[64];
  int drows[S7_MAXM], nd = level_digits(s, drows), t = NUSER;
  for (int j = 0; j < nd; j++) {
    if (!drows[j]) continue;
    snprintf(want, sizeof want, "ks%d.modup%d.table", (int)values0, j);
    ck_assert_str_eq(fhjit_value_name(gc, fhjit_input_value(gc, t++)), want);
  }
  snprintf(want, sizeof want, "ks%d.moddown.table", (int)values0);
  ck_assert_str_eq(fhjit_value_name(gc, fhjit_input_value(gc, t++)), want);
  ck_assert_int_eq(fhjit_num_inputs(gc), t);
  snprintf(want, sizeof want, "ks%d", (int)values0);
  ck_assert_str_eq(fhjit_value_name(gc, k), want);
  fhjit_type tk;
  ck_assert_int_eq(fhjit_value_type(gc, k, &tk), FHJIT_OK);
  ck_assert_int_eq(tk.comps, 2);
  out(&e, gh, ks_by_hand(gh, s, xh.d, xh.k1, xh.fwd, xh.inv, "h"));
  check_pair(&e, gc, gh, _i % 3 == 0 || s->plan);
  s7_env_free(&e);
}
END_TEST

START_TEST(test_relinearize) {
  TU_SAMPLED_IN(_i, 0, 1, 2, 3, 5); /* sampled: NSHAPES' comment */
  const shape *s = &shapes[_i];
  env e;
  shape_env(&e, s, 0xd0 + (uint64_t)_i);
  fhjit_graph *gc = graph(&e, s, "relin"), *gh = graph(&e, s, "relin_hand");
  ins xc = user_inputs(&e, gc, s), xh = user_inputs(&e, gh, s);
  out(&e, gc, fhjit_ckks_relinearize(gc, xc.c3, xc.k1, xc.fwd, xc.inv));
  fhjit_value ks = ks_by_hand(gh, s, c(gh, xh.c3, 2), xh.k1, xh.fwd, xh.inv, "h");
  out(&e, gh, fhjit_add(gh, fhjit_pack(gh, 2, (fhjit_value[]){c(gh, xh.c3, 0), c(gh, xh.c3, 1)}),
                        ks));
  check_pair(&e, gc, gh, _i == 1 || s->plan);
  s7_env_free(&e);
}
END_TEST

START_TEST(test_rescale) {
  TU_SAMPLED_IN(_i, 0, 1, 2, 3, 4); /* sampled: NSHAPES' comment */
  const shape *s = &shapes[_i];
  env e;
  shape_env(&e, s, 0xe0 + (uint64_t)_i);
  fhjit_graph *gc = graph(&e, s, "rs"), *gh = graph(&e, s, "rs_hand");
  ins xc = user_inputs(&e, gc, s), xh = user_inputs(&e, gh, s);
  fhjit_value r = fhjit_ckks_rescale(gc, xc.a, xc.fwd, xc.inv);
  out(&e, gc, r);
  fhjit_type t;
  ck_assert_int_eq(fhjit_value_type(gc, r, &t), FHJIT_OK);
  ck_assert_int_eq(t.rows, s->rows - 1);
  ck_assert_int_eq(t.comps, 2);
  out(&e, gh, rescale_by_hand(gh, s, xh.a, xh.fwd, xh.inv, "h"));
  check_pair(&e, gc, gh, _i == 2 || s->plan);
  s7_env_free(&e);
}
END_TEST

START_TEST(test_mul_relin_rescale) {
  TU_SAMPLED_IN(_i, 0, 1, 2, 3, 4); /* sampled: NSHAPES' comment */
  const shape *s = &shapes[_i];
  env e;
  shape_env(&e, s, 0xf0 + (uint64_t)_i);
  fhjit_graph *gc = graph(&e, s, "hmul"), *gh = graph(&e, s, "hmul_hand");
  ins xc = user_inputs(&e, gc, s), xh = user_inputs(&e, gh, s);
  out(&e, gc, fhjit_ckks_mul_relin_rescale(gc, xc.a, xc.b, xc.k1, xc.fwd, xc.inv));
  /* SPEC: the tensor product, keyswitch(d2), rescale(add(d0, k0)), rescale(add(d1, k1)) */
  fhjit_value a0 = c(gh, xh.a, 0), a1 = c(gh, xh.a, 1), b0 = c(gh, xh.b, 0), b1 = c(gh, xh.b, 1);
  fhjit_value d0 = fhjit_mul(gh, a0, b0);
  fhjit_value d1 = fhjit_add_lazy(gh, fhjit_mul(gh, a0, b1), fhjit_mul(gh, a1, b0));
  fhjit_value d2 = fhjit_mul(gh, a1, b1);
  fhjit_value ks = ks_by_hand(gh, s, d2, xh.k1, xh.fwd, xh.inv, "h");
  fhjit_value t = table(gh, "h.rs", s->rows - 1);
  fhjit_value r0 = fhjit_rescale(gh, fhjit_add(gh, d0, c(gh, ks, 0)), xh.fwd, xh.inv, t);
  fhjit_value r1 = fhjit_rescale(gh, fhjit_add(gh, d1, c(gh, ks, 1)), xh.fwd, xh.inv, t);
  out(&e, gh, fhjit_pack(gh, 2, (fhjit_value[]){r0, r1}));
  check_pair(&e, gc, gh, _i == 0 || s->plan);
  s7_env_free(&e);
}
END_TEST

/* rotation by 5^r and conjugation (2N - 1) */
START_TEST(test_rotate) {
  TU_SAMPLED_IN(_i, 0, 1, 2, 3, 4, 5, 6, 7, 10); /* sampled: NSHAPES' comment */
  const shape *s = &shapes[_i / 2];
  env e;
  shape_env(&e, s, 0x100 + (uint64_t)_i);
  int64_t k = _i % 2 ? 2 * e.n - 1 : (5 * 5 * 5) % (2 * e.n);
  fhjit_graph *gc = graph(&e, s, "rot"), *gh = graph(&e, s, "rot_hand");
  ins xc = user_inputs(&e, gc, s), xh = user_inputs(&e, gh, s);
  out(&e, gc, fhjit_ckks_rotate(gc, xc.a, k, xc.k2, xc.fwd, xc.inv));
  fhjit_value ks = ks_by_hand(gh, s, fhjit_automorphism(gh, c(gh, xh.a, 1), k), xh.k2, xh.fwd,
                              xh.inv, "h");
  fhjit_value r0 = fhjit_add(gh, fhjit_automorphism(gh, c(gh, xh.a, 0), k), c(gh, ks, 0));
  out(&e, gh, fhjit_pack(gh, 2, (fhjit_value[]){r0, c(gh, ks, 1)}));
  check_pair(&e, gc, gh, _i == 3 || s->plan);
  s7_env_free(&e);
}
END_TEST

/* four hoisted rotations (two keys, one used twice): the shared modups,
 * each rotation's automorphisms of them, products, moddown */
START_TEST(test_rotate_hoisted) {
  TU_SAMPLED(_i);
  const shape *s = &shapes[_i];
  env e;
  shape_env(&e, s, 0x110 + (uint64_t)_i);
  int64_t twon = 2 * e.n, ks[4] = {5, 25 % twon, twon - 1, (5 * 5 * 5) % twon};
  fhjit_graph *gc = graph(&e, s, "hrot"), *gh = graph(&e, s, "hrot_hand");
  ins xc = user_inputs(&e, gc, s), xh = user_inputs(&e, gh, s);
  fhjit_value keys_c[4] = {xc.k1, xc.k2, xc.k1, xc.k2}, keys_h[4] = {xh.k1, xh.k2, xh.k1, xh.k2};
  fhjit_value res[4] = {-7, -7, -7, -7};
  ck_assert_msg(fhjit_ckks_rotate_hoisted(gc, xc.a, 4, ks, keys_c, xc.fwd, xc.inv, res) ==
                    FHJIT_OK,
                "%s", fhjit_last_error(e.ctx));
  for (int i = 0; i < 4; i++) out(&e, gc, res[i]);
  /* by hand: tables (modups, moddown), modup of c1 per digit, ... */
  int drows[S7_MAXM], nd = level_digits(s, drows), K = s->special, l = s->rows;
  fhjit_value tabs[S7_MAXM], up[S7_MAXM];
  for (int j = 0; j < nd; j++) {
    char name[16];
    snprintf(name, sizeof name, "t%d", j);
    if (drows[j]) tabs[j] = table(gh, name, drows[j] * (1 + l + K - drows[j]));
  }
  fhjit_value md = table(gh, "md", K + K * l + l);
  fhjit_value c0 = c(gh, xh.a, 0), c1 = c(gh, xh.a, 1);
  for (int j = 0; j < nd; j++)
    if (drows[j]) up[j] = fhjit_modup(gh, c1, j, xh.fwd, xh.inv, tabs[j]);
  for (int i = 0; i < 4; i++) {
    fhjit_value acc = FHJIT_NO_VALUE;
    for (int j = 0; j < nd; j++) {
      if (!drows[j]) continue;
      fhjit_value p = fhjit_keyswitch_digit_product(gh, fhjit_automorphism(gh, up[j], ks[i]),
                                                    keys_h[i], j, 0);
      acc = acc == FHJIT_NO_VALUE ? p : fhjit_add_lazy(gh, acc, p);
    }
    fhjit_value k0 = fhjit_moddown(gh, c(gh, acc, 0), xh.fwd, xh.inv, md);
    fhjit_value k1 = fhjit_moddown(gh, c(gh, acc, 1), xh.fwd, xh.inv, md);
    fhjit_value r0 = fhjit_add(gh, fhjit_automorphism(gh, c0, ks[i]), k0);
    out(&e, gh, fhjit_pack(gh, 2, (fhjit_value[]){r0, k1}));
  }
  check_pair(&e, gc, gh, _i == 1 || s->plan);
  s7_env_free(&e);
}
END_TEST

/* The text forms expand through the same builders: same hash as the C
 * calls, names after the defined value, canonical text that round-trips. */
START_TEST(test_text) {
  env e;
  s7_env_init(&e, FHJIT_R62, 6, 4, 0x120);
  char text[4096];
  int n = snprintf(text, sizeof text, "graph @t radix(r62) moduli(");
  for (int i = 0; i < 6; i++)
    n += snprintf(text + n, sizeof text - (size_t)n, "%s%llu", i ? ", " : "",
                  (unsigned long long)e.q[i]);
  snprintf(text + n, sizeof text - (size_t)n,
           ") special(2) digits(2) {\n"
           "  %%a = input ct<2, [], 4, 16> ntt mont\n"
           "  %%b = input ct<2, [], 4, 16> ntt mont\n"
           "  %%c3 = input ct<3, [], 4, 16> ntt mont\n"
           "  %%d = input pt<[], 4, 16> ntt mont\n"
           "  %%k1 = input key<2, 2, 6, 16> ntt mont\n"
           "  %%k2 = input key<2, 2, 6, 16> ntt mont\n"
           "  %%fwd = input twiddles<6, 16>\n"
           "  %%inv = input twiddles<6, 16>\n"
           "  %%ks = keyswitch %%d, %%k1, %%fwd, %%inv\n"
           "  %%rl = ckks_relinearize %%c3, %%k1, %%fwd, %%inv\n"
           "  %%rs = ckks_rescale %%a, %%fwd, %%inv\n"
           "  %%hm = ckks_mul_relin_rescale %%a, %%b, %%k1, %%fwd, %%inv\n"
           "  %%rt = ckks_rotate %%a, %%k2, %%fwd, %%inv galois(31)\n"
           "  %%h5, %%h25, %%h3 = ckks_rotate_hoisted %%b, %%k1, %%k2, %%k1, %%fwd, %%inv "
           "galois(5, 25, 3)\n"
           "  output %%ks\n  output %%rl\n  output %%rs\n  output %%hm\n  output %%rt\n"
           "  output %%h5\n  output %%h25\n  output %%h3\n}\n");
  fhjit_graph *gt = fhjit_parse(e.ctx, text, strlen(text), "t.fh");
  ck_assert_msg(gt != NULL, "%s", fhjit_last_error(e.ctx));
  shape s = shapes[0];
  fhjit_graph *gc = graph(&e, &s, "c");
  ins x = user_inputs(&e, gc, &s);
  out(&e, gc, fhjit_keyswitch(gc, x.d, x.k1, x.fwd, x.inv));
  out(&e, gc, fhjit_ckks_relinearize(gc, x.c3, x.k1, x.fwd, x.inv));
  out(&e, gc, fhjit_ckks_rescale(gc, x.a, x.fwd, x.inv));
  out(&e, gc, fhjit_ckks_mul_relin_rescale(gc, x.a, x.b, x.k1, x.fwd, x.inv));
  out(&e, gc, fhjit_ckks_rotate(gc, x.a, 31, x.k2, x.fwd, x.inv));
  int64_t hk[3] = {5, 25, 3};
  fhjit_value hkeys[3] = {x.k1, x.k2, x.k1}, hres[3];
  ck_assert_int_eq(fhjit_ckks_rotate_hoisted(gc, x.b, 3, hk, hkeys, x.fwd, x.inv, hres), FHJIT_OK);
  for (int i = 0; i < 3; i++) out(&e, gc, hres[i]);
  ck_assert_int_eq(fhjit_bind(gt), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(gc), FHJIT_OK);
  uint64_t ht[2], hc[2];
  ck_assert_int_eq(fhjit_graph_hash(gt, ht), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(gc, hc), FHJIT_OK);
  ck_assert(ht[0] == hc[0] && ht[1] == hc[1]);
  ck_assert_int_eq(fhjit_num_inputs(gt), fhjit_num_inputs(gc));
  /* names after the defined value */
  ck_assert_int_ge(fhjit_find_value(gt, "ks.modup0.table"), 0);
  ck_assert_int_ge(fhjit_find_value(gt, "ks.moddown.table"), 0);
  ck_assert_int_ge(fhjit_find_value(gt, "hm.ks.modup1"), 0);
  ck_assert_int_ge(fhjit_find_value(gt, "hm.rescale.table"), 0);
  ck_assert_int_ge(fhjit_find_value(gt, "rt.rot1"), 0);
  /* hoisted: the shared values after the first result, each rotation's
   * after its own, the results the statement's names */
  ck_assert_int_ge(fhjit_find_value(gt, "h5.modup1"), 0);
  ck_assert_int_ge(fhjit_find_value(gt, "h5.moddown.table"), 0);
  ck_assert_int_ge(fhjit_find_value(gt, "h25.ks"), 0);
  ck_assert_int_ge(fhjit_find_value(gt, "h3.modup0.rot"), 0);
  ck_assert_int_eq(fhjit_find_value(gt, "h25.modup1"), -1);
  for (int i = 0; i < 3; i++) {
    fhjit_output_info oi;
    ck_assert_int_eq(fhjit_output_info_get(gt, 5 + i, &oi), FHJIT_OK);
    static const char *const want[3] = {"h5", "h25", "h3"};
    ck_assert_str_eq(fhjit_value_name(gt, oi.value), want[i]);
  }
  ck_assert_str_eq(fhjit_value_name(gt, fhjit_input_value(gt, 8)), "ks.modup0.table");
  /* canonical text is the expansion and round-trips */
  const char *p1 = fhjit_print(gt);
  ck_assert_ptr_nonnull(p1);
  ck_assert(tu_contains(p1, "  %ks = moddown %ks.sum1, %fwd, %inv, %ks.moddown.table\n"));
  ck_assert(!tu_contains(p1, "keyswitch %"));
  char *copy = strdup(p1);
  fhjit_graph *g2 = fhjit_parse(e.ctx, copy, strlen(copy), "p.fh");
  ck_assert_ptr_nonnull(g2);
  ck_assert_str_eq(fhjit_print(g2), copy);
  free(copy);
  s7_env_free(&e);
}
END_TEST

/* A name the composite would use is taken: it picks another prefix. */
START_TEST(test_names_taken) {
  env e;
  shape s = shapes[0];
  s7_env_init(&e, s.radix, s.m, s.logn, 0x130);
  fhjit_graph *g = graph(&e, &s, "n");
  ins x = user_inputs(&e, g, &s);
  int32_t v0 = fhjit_num_values(g);
  char taken[32];
  snprintf(taken, sizeof taken, "ks%d.sum1", (int)v0 + 1);
  fhjit_value busy = fhjit_neg(g, x.d); /* takes id v0 */
  ck_assert_int_eq(fhjit_set_name(g, busy, taken), FHJIT_OK);
  fhjit_value k = fhjit_keyswitch(g, x.d, x.k1, x.fwd, x.inv);
  ck_assert_int_ge(k, 0);
  char want[32];
  snprintf(want, sizeof want, "ks%d", (int)v0 + 1);
  ck_assert_str_ne(fhjit_value_name(g, k), want);
  snprintf(want, sizeof want, "ks%d_1", (int)v0 + 1);
  ck_assert_str_eq(fhjit_value_name(g, k), want);
  s7_env_free(&e);
}
END_TEST

/* Every refusal is an error on the context, nothing is added. */
static void refused(env *e, fhjit_graph *g, fhjit_value v, fhjit_status st, const char *has,
                    int32_t values0, int32_t inputs0) {
  ck_assert_int_eq(v, FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_last_status(e->ctx), st);
  ck_assert_msg(tu_contains(fhjit_last_error(e->ctx), has), "'%s' lacks '%s'",
                fhjit_last_error(e->ctx), has);
  ck_assert_int_eq(fhjit_num_values(g), values0);
  ck_assert_int_eq(fhjit_num_inputs(g), inputs0);
  fhjit_clear_error(e->ctx);
}

START_TEST(test_errors) {
  env e;
  shape s = shapes[0];
  s7_env_init(&e, s.radix, s.m, s.logn, 0x140);
  fhjit_graph *g = graph(&e, &s, "err");
  ins x = user_inputs(&e, g, &s);
  int32_t p_basis[] = {0, 1, 4, 3};
  fhjit_value dp = poly(&e, g, &s, "dp", 0, 4);
  ck_assert_int_eq(fhjit_input_basis(g, dp, p_basis, 4), FHJIT_OK);
  fhjit_type tc = tu_poly(0, 0, NULL, 4, e.n);
  tc.domain = FHJIT_DOMAIN_COEF;
  fhjit_value dc = fhjit_input(g, "dc", &tc);
  /* unknown rows: in a graph of its own (it cannot be bound) */
  fhjit_graph *gu = graph(&e, &s, "unknown");
  ins u = user_inputs(&e, gu, &s);
  fhjit_type tq = tu_poly(0, 0, NULL, FHJIT_UNKNOWN, e.n);
  tq.domain = FHJIT_DOMAIN_NTT;
  fhjit_value du = fhjit_input(gu, "du", &tq);
  fhjit_value ndu = fhjit_neg(gu, du); /* found through the structure */
  int32_t uv = fhjit_num_values(gu), ui = fhjit_num_inputs(gu);
  refused(&e, gu, fhjit_keyswitch(gu, ndu, u.k1, u.fwd, u.inv), FHJIT_ERR_SHAPE,
          "keyswitch: the rows of input %du are not known", uv, ui);
  int32_t v0 = fhjit_num_values(g), i0 = fhjit_num_inputs(g);
  /* null graph */
  ck_assert_int_eq(fhjit_keyswitch(NULL, x.d, x.k1, x.fwd, x.inv), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_ckks_relinearize(NULL, x.c3, x.k1, x.fwd, x.inv), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_ckks_rescale(NULL, x.a, x.fwd, x.inv), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_ckks_mul_relin_rescale(NULL, x.a, x.b, x.k1, x.fwd, x.inv),
                   FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_ckks_rotate(NULL, x.a, 5, x.k1, x.fwd, x.inv), FHJIT_NO_VALUE);
  fhjit_value res[2];
  int64_t ks[2] = {5, 25};
  fhjit_value keys[2] = {x.k1, x.k2};
  ck_assert_int_eq(fhjit_ckks_rotate_hoisted(NULL, x.a, 2, ks, keys, x.fwd, x.inv, res),
                   FHJIT_ERR_ARGUMENT);
  /* d with components; key not a key; P overlapping; coef domain; unknown rows */
  refused(&e, g, fhjit_keyswitch(g, x.a, x.k1, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "keyswitch: %a has 2 components", v0, i0);
  refused(&e, g, fhjit_keyswitch(g, x.d, x.d, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "keyswitch: the key operand %d is a polynomial value, expected a key table", v0, i0);
  refused(&e, g, fhjit_keyswitch(g, dp, x.k1, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "keyswitch: %dp is on basis [0, 1, 4, 3], which holds position 4 of the special "
          "primes P; Q and P must be disjoint",
          v0, i0);
  refused(&e, g, fhjit_keyswitch(g, dc, x.k1, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "%dc is in the coef domain", v0, i0);
  refused(&e, g, fhjit_keyswitch(g, x.d, x.k1, x.d, x.inv), FHJIT_ERR_TYPE,
          "the forward twiddle operand %d is a polynomial value", v0, i0);
  refused(&e, g, fhjit_keyswitch(g, 999, x.k1, x.fwd, x.inv), FHJIT_ERR_ARGUMENT,
          "keyswitch: the operand is not a value", v0, i0);
  /* ciphertext component counts */
  refused(&e, g, fhjit_ckks_relinearize(g, x.a, x.k1, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "ckks_relinearize: the operand %a has 2 components; ckks_relinearize takes a "
          "ciphertext of 3",
          v0, i0);
  refused(&e, g, fhjit_ckks_mul_relin_rescale(g, x.a, x.c3, x.k1, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "the second operand %c3 has 3 components", v0, i0);
  /* a failure after nodes were added (the key is checked after the tensor
   * product): everything goes */
  refused(&e, g, fhjit_ckks_mul_relin_rescale(g, x.a, x.b, x.d, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "the relinearisation key operand %d is a polynomial value", v0, i0);
  refused(&e, g, fhjit_ckks_relinearize(g, x.c3, x.a, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "relinearisation key", v0, i0);
  refused(&e, g, fhjit_ckks_rotate(g, x.a, 5, x.fwd, x.fwd, x.inv), FHJIT_ERR_TYPE,
          "the Galois key operand %fwd is a twiddle table", v0, i0);
  /* Galois elements */
  refused(&e, g, fhjit_ckks_rotate(g, x.a, 4, x.k2, x.fwd, x.inv), FHJIT_ERR_ARGUMENT,
          "ckks_rotate: the Galois element k = 4 of %a must be odd with 1 <= k < 2N", v0, i0);
  refused(&e, g, fhjit_ckks_rotate(g, x.a, 2 * e.n + 1, x.k2, x.fwd, x.inv), FHJIT_ERR_ARGUMENT,
          "must be odd with 1 <= k < 2N", v0, i0);
  /* hoisted: count 0, null arrays, an even k, a bad key */
  ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, x.a, 0, ks, keys, x.fwd, x.inv, res),
                   FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "ckks_rotate_hoisted: 0 rotations"));
  ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, x.a, 2, ks, NULL, x.fwd, x.inv, res),
                   FHJIT_ERR_ARGUMENT);
  int64_t even[2] = {5, 6};
  ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, x.a, 2, even, keys, x.fwd, x.inv, res),
                   FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "k = 6"));
  fhjit_value badkeys[2] = {x.k1, x.a};
  res[0] = res[1] = -7;
  ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, x.a, 2, ks, badkeys, x.fwd, x.inv, res),
                   FHJIT_ERR_TYPE);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "Galois key 1's operand %a"));
  ck_assert(res[0] == -7 && res[1] == -7); /* out untouched */
  ck_assert_int_eq(fhjit_num_values(g), v0);
  ck_assert_int_eq(fhjit_num_inputs(g), i0);
  /* rescale of one row */
  fhjit_value one = poly(&e, g, &s, "one", 2, 1);
  v0 = fhjit_num_values(g), i0 = fhjit_num_inputs(g);
  refused(&e, g, fhjit_ckks_rescale(g, one, x.fwd, x.inv), FHJIT_ERR_SHAPE,
          "ckks_rescale: %one has 1 row; rescale divides by the last of at least two", v0, i0);
  /* the graph is still good: a keyswitch after all these builds and binds */
  out(&e, g, fhjit_keyswitch(g, x.d, x.k1, x.fwd, x.inv));
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  /* a failure after nodes were added leaves a bound graph bound (the
   * nodes it added went, and so had the binding), its message the last */
  v0 = fhjit_num_values(g), i0 = fhjit_num_inputs(g);
  ck_assert_int_eq(fhjit_ckks_mul_relin_rescale(g, x.a, x.b, x.d, x.fwd, x.inv), FHJIT_NO_VALUE);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "the relinearisation key operand %d"));
  ck_assert_int_eq(fhjit_is_bound(g), 1);
  ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, x.a, 2, ks, badkeys, x.fwd, x.inv, res), FHJIT_ERR_TYPE);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "Galois key 1's operand %a"));
  ck_assert_int_eq(fhjit_is_bound(g), 1);
  ck_assert_int_eq(fhjit_num_values(g), v0);
  ck_assert_int_eq(fhjit_num_inputs(g), i0);
  /* a chain too short for the graph's special primes or digits: refused,
   * the graph untouched; a new chain unbinds it (bases and tables were
   * checked on the old one) */
  int32_t nm = fhjit_graph_num_moduli(g), nsp = fhjit_graph_num_special(g);
  uint64_t chain[64];
  ck_assert_int_le(nm, 64);
  memcpy(chain, fhjit_graph_moduli(g), sizeof *chain * (size_t)nm);
  ck_assert_int_eq(fhjit_graph_set_moduli(g, chain, nsp), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "set special to 0 first"));
  ck_assert_int_eq(fhjit_graph_set_moduli(g, chain, nsp + fhjit_graph_digit_size(g) - 1), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "set digits to 0 first"));
  ck_assert_int_eq(fhjit_graph_num_moduli(g), nm);
  ck_assert_int_eq(fhjit_is_bound(g), 1);
  ck_assert_int_eq(fhjit_graph_set_moduli(g, chain, nm), FHJIT_OK);
  ck_assert_int_eq(fhjit_is_bound(g), 1); /* bound again on the new chain */
  /* a chain the graph does not bind on (a modulus that is not 1 mod 2N,
   * which its NTTs need) is refused, the old one kept */
  uint64_t twice[64];
  memcpy(twice, chain, sizeof *chain * (size_t)nm);
  twice[1] = chain[1] + 2;
  ck_assert_int_ne(fhjit_graph_set_moduli(g, twice, nm), FHJIT_OK);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "does not bind on the new chain"));
  ck_assert_int_eq(fhjit_is_bound(g), 1);
  ck_assert(fhjit_graph_moduli(g)[1] == chain[1]);
  /* a graph without special primes or digits */
  fhjit_graph *g0 = graph(&e, &(shape){s.radix, s.m, 0, 0, s.logn, 4, NULL, NULL}, "plain");
  ins y = user_inputs(&e, g0, &s);
  refused(&e, g0, fhjit_keyswitch(g0, y.d, y.k1, y.fwd, y.inv), FHJIT_ERR_TYPE,
          "graph @plain states no special primes", fhjit_num_values(g0), fhjit_num_inputs(g0));
  s7_env_free(&e);
}
END_TEST

/* A digit whose rows are not consecutive in the operand: the interpreter
 * runs it, the lowering refuses it naming the composite's modup. */
START_TEST(test_nonconsecutive_digit) {
  env e;
  shape s = shapes[0];
  static const int32_t b[] = {0, 2, 1, 3};
  s.basis = b;
  s7_env_init(&e, s.radix, s.m, s.logn, 0x150);
  fhjit_graph *gc = graph(&e, &s, "nc"), *gh = graph(&e, &s, "nc_hand");
  ins xc = user_inputs(&e, gc, &s), xh = user_inputs(&e, gh, &s);
  out(&e, gc, fhjit_keyswitch(gc, xc.d, xc.k1, xc.fwd, xc.inv));
  out(&e, gh, ks_by_hand(gh, &s, xh.d, xh.k1, xh.fwd, xh.inv, "h"));
  check_pair(&e, gc, gh, 0);
  void *in[16] = {0}, *res[1];
  for (int32_t i = 0; i < fhjit_num_inputs(gc); i++) {
    fhjit_type t;
    fhjit_input_binding(gc, i, &t, NULL);
    in[i] = t.kind == FHJIT_KIND_TWIDDLE ? (i == 6 ? e.fwd : e.inv) : s7_fill(&e, gc, i);
  }
  res[0] = malloc(e.ws * 2 * 4 * (size_t)e.n);
  ck_assert_int_eq(fhjit_run_host(gc, e.params, e.m, (const void *const *)in, res, 1),
                   FHJIT_ERR_UNSUPPORTED);
  char want[64];
  snprintf(want, sizeof want, "%%ks%d.modup0 = modup: the digit's rows are not consecutive", 
           (int)NUSER);
  ck_assert_msg(tu_contains(fhjit_last_error(e.ctx), want), "%s", fhjit_last_error(e.ctx));
  for (int32_t i = 0; i < fhjit_num_inputs(gc); i++)
    if (i != 6 && i != 7) free(in[i]);
  free(res[0]);
  s7_env_free(&e);
}
END_TEST

Suite *ckks_build_suite(void) {
  Suite *s = suite_create("ckks_build");
  TCase *t = tcase_create("composites");
  tcase_set_timeout(t, 600);
  tcase_add_loop_test(t, test_keyswitch, 0, NSHAPES);
  tcase_add_loop_test(t, test_relinearize, 0, NSHAPES);
  tcase_add_loop_test(t, test_rescale, 0, NSHAPES);
  tcase_add_loop_test(t, test_mul_relin_rescale, 0, NSHAPES);
  tcase_add_loop_test(t, test_rotate, 0, 2 * NSHAPES);
  tcase_add_loop_test(t, test_rotate_hoisted, 0, NSHAPES);
  tcase_add_test(t, test_text);
  tcase_add_test(t, test_names_taken);
  tcase_add_test(t, test_errors);
  tcase_add_test(t, test_nonconsecutive_digit);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(ckks_build_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
