/* test_s7_lower.c: the lowering of SPEC section 7's bases and re-indexing
 * ops. Each graph runs on the host path (fhjit_run_host, the GPU's kernel
 * bodies JIT-compiled) and is compared word for word with fhjit_interpret;
 * its GPU program is emitted for sm_90 and run through ptxas when the CUDA
 * toolkit is there. Chains whose moduli differ at every position (near each
 * radix's limit and far below), so a wrong parameter column or twiddle row
 * gives wrong words:
 *   - pointwise kernels on stated bases: contiguous, a few runs (a select
 *     chain) and many runs (a column table), the key of a digit product read
 *     by chain position; nodes on two bases in one kernel are refused;
 *   - NTTs of every kind on stated bases, alone, with a fused prologue and
 *     epilogue, and with rows / automorphism around them;
 *   - rows, concat and automorphism of inputs (both domains, k = 1, 3,
 *     5^r mod 2N, 2N - 1, N = 2^4 .. 2^10, 1 to 3 components, a batch axis,
 *     1 to 8 rows) feeding pointwise ops, random and edge words;
 *   - an identity outside the interpreter: automorphism(k1) then
 *     automorphism(k2), as two graphs, equals automorphism(k1 k2 mod 2N);
 *   - computed operands of these ops are refused ("must be materialised"). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "lower/lw_llvm.h"
#include "ptxeval.h"
#include "testutil.h"

#define MAXM 10

typedef struct env {
  fhjit_context *ctx;
  fhjit_radix radix;
  size_t ws;
  int m;
  int64_t n;
  uint64_t q[MAXM];
  void *params, *fwd, *inv;
  uint64_t seed;
} env;

/* A chain of MAXM distinct NTT primes (1 mod 2^11), near the radix limit
 * and far below it in turn. */
static void env_init(env *e, fhjit_radix radix, int logn, uint64_t seed) {
  memset(e, 0, sizeof *e);
  e->ctx = fhjit_context_create();
  e->radix = radix;
  e->ws = radix == FHJIT_R32 ? 4 : 8;
  e->m = MAXM;
  e->n = INT64_C(1) << logn;
  e->seed = seed;
  uint64_t near[MAXM], far[MAXM];
  int nb = radix == FHJIT_R32 ? 30 : 60, fb = radix == FHJIT_R32 ? 23 : 43;
  ck_assert_int_eq(fhjit_find_primes(NULL, nb, 2048, MAXM, near), FHJIT_OK);
  ck_assert_int_eq(fhjit_find_primes(NULL, fb, 2048, MAXM, far), FHJIT_OK);
  for (int i = 0; i < MAXM; i++) e->q[i] = i % 2 ? far[i] : near[i];
  e->params = malloc(8 * e->ws * MAXM);
  e->fwd = malloc(e->ws * (size_t)(MAXM * e->n));
  e->inv = malloc(e->ws * (size_t)(MAXM * e->n));
  ck_assert_int_eq(fhjit_param_table(e->ctx, radix, e->q, MAXM, e->n, 1, 0, e->params, MAXM),
                   FHJIT_OK);
  ck_assert_int_eq(fhjit_twiddle_tables(e->ctx, radix, e->q, MAXM, e->n, e->fwd, e->inv),
                   FHJIT_OK);
}

static void env_free(env *e) {
  fhjit_context_destroy(e->ctx);
  free(e->params);
  free(e->fwd);
  free(e->inv);
}

static fhjit_graph *new_graph(env *e, const char *name) {
  fhjit_graph *g = fhjit_graph_create(e->ctx, name, e->radix);
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(fhjit_graph_set_moduli(g, e->q, e->m), FHJIT_OK);
  return g;
}

/* A polynomial input [comps, batch?, rows, n] on `basis` (NULL: default). */
static fhjit_value poly(env *e, fhjit_graph *g, const char *name, int comps, int64_t batch,
                        const int32_t *basis, int rows, fhjit_domain d, fhjit_form f) {
  int64_t b[1] = {batch};
  fhjit_type t = tu_poly(comps, batch > 0 ? 1 : 0, b, rows, e->n);
  t.domain = d;
  t.form = f;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  if (basis) ck_assert_int_eq(fhjit_input_basis(g, v, basis, rows), FHJIT_OK);
  return v;
}

static fhjit_value twiddles(env *e, fhjit_graph *g, const char *name) {
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = e->m, .n = e->n};
  return fhjit_input(g, name, &t);
}

/* A lazy word of modulus q for coefficient i: SPEC section 6's edge words
 * at the first coefficients, else random (with edges now and then). */
static uint64_t word(env *e, uint64_t q, int64_t i) {
  static const int edges = 7;
  if (i < edges) {
    const uint64_t w[7] = {0, 1, q - 1, q, q + 1, 2 * q - 2, 2 * q - 1};
    return w[(i + (int64_t)(e->seed & 3)) % edges];
  }
  return tu_lazy(&e->seed, q);
}

/* Input buffers of bound graph g: polynomial words lazy for the modulus of
 * each row's chain position (dense layouts), keys by chain position, the
 * chain's twiddle tables; `given` (by input index, NULL entries: fill)
 * overrides. */
static void **make_inputs(env *e, fhjit_graph *g, void *const *given) {
  int ni = fhjit_num_inputs(g);
  void **bufs = calloc((size_t)ni + 1, sizeof *bufs);
  for (int i = 0; i < ni; i++) {
    if (given && given[i]) {
      bufs[i] = given[i];
      continue;
    }
    fhjit_type t;
    ck_assert_int_eq(fhjit_input_binding(g, i, &t, NULL), FHJIT_OK);
    if (t.kind == FHJIT_KIND_TWIDDLE) {
      int use;
      ck_assert_int_eq(fhjit_input_twiddle_use(g, i, &use), FHJIT_OK);
      bufs[i] = use == FHJIT_TWIDDLE_INVERSE ? e->inv : e->fwd;
      continue;
    }
    int64_t len = fhjit_type_elements(&t);
    bufs[i] = malloc(e->ws * (size_t)len);
    int32_t basis[64], cnt = (int32_t)t.rows;
    if (t.kind == FHJIT_KIND_POLY)
      ck_assert_int_eq(fhjit_value_basis(g, fhjit_input_value(g, i), basis, 64, &cnt), FHJIT_OK);
    for (int64_t k = 0; k < len; k++) {
      int64_t row = (k / t.n) % t.rows;
      int64_t pos = t.kind == FHJIT_KIND_POLY ? basis[row] : row; /* keys: by position */
      tu_set_word(e->ws, bufs[i], k, word(e, e->q[pos], k % t.n));
    }
  }
  return bufs;
}

static void free_inputs(env *e, fhjit_graph *g, void **bufs, void *const *given) {
  for (int i = 0; i < fhjit_num_inputs(g); i++)
    if (bufs[i] != e->fwd && bufs[i] != e->inv && !(given && given[i])) free(bufs[i]);
  free(bufs);
}

static void **alloc_results(env *e, fhjit_graph *g) {
  int nr = fhjit_num_results(g);
  void **r = calloc((size_t)nr + 1, sizeof *r);
  for (int k = 0; k < nr; k++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, k, &t), FHJIT_OK);
    r[k] = calloc((size_t)fhjit_type_elements(&t), e->ws);
  }
  return r;
}

static void free_results(fhjit_graph *g, void **r) {
  for (int k = 0; k < fhjit_num_results(g); k++) free(r[k]);
  free(r);
}

/* The PTX of bound g for sm_90 is emitted and assembles. */
static void check_ptx(fhjit_graph *g, const char *what) {
  const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90");
  ck_assert_msg(ptx != NULL, "%s: emit: %s", what, fhjit_last_error(fhjit_graph_context(g)));
  ck_assert_msg(ptxeval_ptxas_ok(ptx), "%s: ptxas rejects the PTX", what);
}

/* Binds g, runs the interpreter and the host path on the same inputs and
 * compares every result word; then the PTX (when ptx). */
static void check_graph(env *e, fhjit_graph *g, const char *what, int ptx) {
  fhjit_status st = fhjit_bind(g);
  ck_assert_msg(st == FHJIT_OK, "%s: bind: %s", what, fhjit_last_error(e->ctx));
  void **in = make_inputs(e, g, NULL);
  void **ref = alloc_results(e, g), **got = alloc_results(e, g);
  st = fhjit_interpret(g, e->params, e->m, (const void *const *)in, ref);
  ck_assert_msg(st == FHJIT_OK, "%s: interpret: %s", what, fhjit_last_error(e->ctx));
  st = fhjit_run_host(g, e->params, e->m, (const void *const *)in, got, 1);
  ck_assert_msg(st == FHJIT_OK, "%s: run_host: %s", what, fhjit_last_error(e->ctx));
  for (int k = 0; k < fhjit_num_results(g); k++) {
    fhjit_type t;
    fhjit_result_type(g, k, &t);
    int64_t len = fhjit_type_elements(&t);
    for (int64_t j = 0; j < len; j++)
      if (tu_word(e->ws, ref[k], j) != tu_word(e->ws, got[k], j))
        ck_abort_msg("%s: result %d word %lld (row %lld, index %lld): host %llu, interpreter "
                     "%llu",
                     what, k, (long long)j, (long long)((j / t.n) % t.rows), (long long)(j % t.n),
                     (unsigned long long)tu_word(e->ws, got[k], j),
                     (unsigned long long)tu_word(e->ws, ref[k], j));
  }
  free_results(g, ref);
  free_results(g, got);
  free_inputs(e, g, in, NULL);
  if (ptx) check_ptx(g, what);
}

/* Bases: contiguous from 2, three runs (a select chain), eight runs (a
 * table of columns), one row, and the default. */
static const struct {
  int rows;
  int32_t b[8];
} bases[] = {{3, {2, 3, 4}},
             {3, {3, 0, 5}},
             {8, {7, 5, 3, 1, 6, 4, 2, 0}},
             {1, {9}},
             {4, {0, 1, 2, 3}}};
#define NBASES ((int)(sizeof bases / sizeof *bases))

/* ------------------------------------------------------------ pointwise */

START_TEST(test_pointwise_bases) {
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  int bi = (_i / 2) % NBASES;
  env e;
  env_init(&e, radix, 4 + _i % 3, 700 + (uint64_t)_i);
  int rows = bases[bi].rows;
  const int32_t *b = bases[bi].b;
  fhjit_graph *g = new_graph(&e, "pw");
  fhjit_value a = poly(&e, g, "a", 2, 3, b, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value c = poly(&e, g, "c", 2, 3, b, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value p = poly(&e, g, "p", 0, 0, b, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value d = poly(&e, g, "d", 0, 3, b, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_type kt = tu_key(2, e.m, e.n);
  fhjit_value key = fhjit_input(g, "key", &kt);
  fhjit_value t1 = fhjit_mul(g, a, c);
  fhjit_value t2 = fhjit_add(g, t1, fhjit_to_mont(g, a));
  fhjit_value t3 = fhjit_sub(g, t2, fhjit_from_mont(g, c));
  fhjit_value t4 = fhjit_add_lazy(g, t3, fhjit_mul_plain(g, a, p));
  fhjit_value ks = fhjit_keyswitch_digit_product(g, d, key, 1, 0);
  fhjit_output(g, t4, "t4");
  fhjit_output(g, fhjit_neg(g, t1), "n1");
  fhjit_output(g, fhjit_add_lazy(g, ks, t4), "ks");
  char what[96];
  snprintf(what, sizeof what, "pointwise r%d basis #%d", radix == FHJIT_R32 ? 32 : 62, bi);
  check_graph(&e, g, what, 1);
  env_free(&e);
}
END_TEST

/* Nodes computing on two bases cannot share one kernel's columns. */
START_TEST(test_two_bases_refused) {
  env e;
  env_init(&e, FHJIT_R32, 4, 5);
  fhjit_graph *g = new_graph(&e, "two");
  int32_t b0[2] = {0, 1}, b1[2] = {1, 2};
  fhjit_value x = poly(&e, g, "x", 0, 0, b0, 2, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value y = poly(&e, g, "y", 0, 0, b1, 2, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_output(g, fhjit_add(g, x, x), "sx");
  fhjit_output(g, fhjit_add(g, y, y), "sy");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  void **in = make_inputs(&e, g, NULL);
  void **out = alloc_results(&e, g);
  ck_assert_int_eq(fhjit_run_host(g, e.params, e.m, (const void *const *)in, out, 1),
                   FHJIT_ERR_UNSUPPORTED);
  ck_assert_msg(tu_contains(fhjit_last_error(e.ctx), "one fused kernel computes on one basis"),
                "%s", fhjit_last_error(e.ctx));
  ck_assert_ptr_null(fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90"));
  /* moving words on another basis is fine: an output rows(y) next to x's sum */
  fhjit_graph *h = new_graph(&e, "mv");
  int32_t b3[3] = {4, 1, 2};
  x = poly(&e, h, "x", 0, 0, b0, 2, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  y = poly(&e, h, "y", 0, 0, b3, 3, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_output(h, fhjit_add(h, x, x), "sx");
  fhjit_output(h, fhjit_rows(h, y, 1, 2), "ry");
  check_graph(&e, h, "rows on another basis", 1);
  free_results(g, out);
  free_inputs(&e, g, in, NULL);
  env_free(&e);
}
END_TEST

/* ----------------------------------------------------------------- NTT */

static fhjit_domain in_domain(fhjit_ntt_kind k) {
  return k <= FHJIT_NTT_COEF_MONT_TO_NTT ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
}
static fhjit_form in_form(fhjit_ntt_kind k) {
  return k == FHJIT_NTT_COEF_STD_TO_NTT ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
}
static fhjit_domain out_domain(fhjit_ntt_kind k) {
  return k <= FHJIT_NTT_COEF_MONT_TO_NTT ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF;
}
static fhjit_form out_form(fhjit_ntt_kind k) {
  return k == FHJIT_NTT_TO_COEF_STD ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
}

/* _i: radix, kind, basis (not the default one), log N; each transform
 * alone, with a prologue and an epilogue, and with remapped loads. */
START_TEST(test_ntt_bases) {
  TU_SAMPLED(_i);
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  fhjit_ntt_kind kind = (fhjit_ntt_kind)((_i / 2) % 4);
  int bi = (_i / 8) % 4;
  static const int logns[] = {4, 7, 10, 5};
  int logn = logns[(_i / 8 + _i / 32) % 4];
  env e;
  env_init(&e, radix, logn, 900 + (uint64_t)_i);
  int rows = bases[bi].rows;
  const int32_t *b = bases[bi].b;
  fhjit_domain di = in_domain(kind), dout = out_domain(kind);
  fhjit_form fi = in_form(kind), fo = out_form(kind);
  char what[128];
  const char *rn = radix == FHJIT_R32 ? "r32" : "r62";
  int ptx = (int)kind == bi; /* every kind, basis and radix once (NTT modules are large) */
  /* alone, two components */
  {
    fhjit_graph *g = new_graph(&e, "ntt");
    fhjit_value x = poly(&e, g, "x", 2, 0, b, rows, di, fi);
    fhjit_output(g, fhjit_ntt(g, x, twiddles(&e, g, "tw"), kind), "y");
    snprintf(what, sizeof what, "ntt %s kind %d basis #%d N 2^%d", rn, kind, bi, logn);
    check_graph(&e, g, what, ptx);
  }
  /* prologue add(x, z), epilogue mul(., w) on the transform's basis */
  {
    fhjit_graph *g = new_graph(&e, "fused");
    fhjit_value x = poly(&e, g, "x", 2, 0, b, rows, di, fi);
    fhjit_value z = poly(&e, g, "z", 2, 0, b, rows, di, fi);
    fhjit_value w = poly(&e, g, "w", 0, 0, b, rows, dout, fo);
    fhjit_value y = fhjit_ntt(g, fhjit_add(g, x, z), twiddles(&e, g, "tw"), kind);
    fhjit_output(g, fhjit_mul(g, y, w), "yw");
    snprintf(what, sizeof what, "ntt fused %s kind %d basis #%d N 2^%d", rn, kind, bi, logn);
    check_graph(&e, g, what, ptx);
  }
  /* a forward and an inverse transform chained, remapped loads around
   * them: the transform of a row slice of an input (a prologue reading
   * rows), an automorphism of the transform (the final pointwise step
   * reads the anchor's buffer), rows of it */
  if (rows >= 2) {
    fhjit_graph *g = new_graph(&e, "chain");
    fhjit_value x = poly(&e, g, "x", 0, 1, b, rows, di, fi);
    fhjit_value tw = twiddles(&e, g, "tw");
    fhjit_value s = fhjit_rows(g, x, 1, rows - 1);
    fhjit_value y = fhjit_ntt(g, s, tw, kind);
    fhjit_value a = fhjit_automorphism(g, y, 2 * e.n - 1);
    fhjit_output(g, fhjit_add(g, a, fhjit_rows(g, y, 0, rows - 1)), "ay");
    /* y's rows rotated, stored as is (words moved on another basis) */
    fhjit_value rot = rows - 1 >= 2 ? fhjit_concat(g, fhjit_rows(g, y, 1, rows - 2),
                                                   fhjit_rows(g, y, 0, 1))
                                    : fhjit_rows(g, y, 0, 1);
    fhjit_output(g, rot, "rot");
    snprintf(what, sizeof what, "ntt chain %s kind %d basis #%d N 2^%d", rn, kind, bi, logn);
    check_graph(&e, g, what, ptx);
  }
  env_free(&e);
}
END_TEST

/* Forward then inverse on a basis, a product between (prologue of the
 * inverse), and an automorphism of an input in the forward's prologue. */
START_TEST(test_ntt_roundtrip_bases) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): cases 0 .. 3, both bases at
   * both radices (0 and 1 with their PTX); 4 and 5 repeat them at other N */
  TU_SAMPLED_IN(_i, 0, 1, 2, 3);
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  int bi = 1 + (_i / 2) % 2;
  env e;
  env_init(&e, radix, 6 + _i % 3, 50 + (uint64_t)_i);
  int rows = bases[bi].rows;
  const int32_t *b = bases[bi].b;
  fhjit_graph *g = new_graph(&e, "rt");
  fhjit_value x = poly(&e, g, "x", 0, 2, b, rows, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
  fhjit_value k = poly(&e, g, "k", 0, 0, b, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value fw = twiddles(&e, g, "fw"), iv = twiddles(&e, g, "iv");
  fhjit_value ax = fhjit_automorphism(g, x, 5);
  fhjit_value y = fhjit_ntt(g, ax, fw, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value z = fhjit_ntt(g, fhjit_mul(g, y, k), iv, FHJIT_NTT_TO_COEF_STD);
  fhjit_output(g, fhjit_add(g, z, x), "zx");
  char what[64];
  snprintf(what, sizeof what, "roundtrip r%d basis #%d", radix == FHJIT_R32 ? 32 : 62, bi);
  check_graph(&e, g, what, _i < 2);
  env_free(&e);
}
END_TEST

/* An NTT whose operand reads a coefficient-domain automorphism: with
 * ntt_plan autcol=0 the operand is computed by a pointwise step first (its
 * scattered loads cost more in the NTT's first kernel than a pass of their
 * own; autcol, the default, reads automorphism(x) in the staged loads:
 * test_ntt_aut_columns), with autpro=1 in the NTT's prologue; an NTT-domain automorphism
 * stays in the inverse NTT's prologue either way. Both plans give the
 * interpreter's words. Operands (_i % 3): automorphism(x); add(
 * automorphism(c_1), y) of a 2-component ciphertext; the same, its sum also
 * a result (materialised into its result buffer). _i / 3: radix, then k. */
static int count_in(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p++) n++;
  return n;
}

START_TEST(test_ntt_scattered_prologue) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): cases 0, 1, 2 (each operand
   * form with its PTX, r32, k = 5) and 9 (r62, k = 2N - 1), both plans in
   * each; the others cross the same forms with the other radix and k */
  TU_SAMPLED_IN(_i, 0, 1, 2, 9);
  int shape = _i % 3;
  fhjit_radix radix = (_i / 3) % 2 ? FHJIT_R62 : FHJIT_R32;
  env e;
  env_init(&e, radix, 5 + _i % 4, 90 + (uint64_t)_i);
  int64_t k = (_i / 6) % 2 ? 2 * e.n - 1 : 5;
  for (int fused = 0; fused < 2; fused++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", fused ? "autpro=1" : "autcol=0"),
                     FHJIT_OK);
    fhjit_graph *g = new_graph(&e, "scat");
    fhjit_value fw = twiddles(&e, g, "fw"), iv = twiddles(&e, g, "iv");
    fhjit_value op;
    if (shape == 0) {
      op = fhjit_automorphism(g, poly(&e, g, "x", 0, 0, NULL, e.m, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT), k);
    } else {
      fhjit_value c = poly(&e, g, "c", 2, 0, NULL, e.m, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
      fhjit_value y = poly(&e, g, "y", 0, 0, NULL, e.m, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
      op = fhjit_add(g, fhjit_automorphism(g, fhjit_extract(g, c, 1), k), y);
      if (shape == 2) fhjit_output(g, op, "sum");
    }
    fhjit_value f = fhjit_ntt(g, op, fw, FHJIT_NTT_COEF_MONT_TO_NTT);
    fhjit_output(g, f, "f");
    /* the NTT-domain automorphism of f in the inverse NTT's prologue */
    fhjit_output(g, fhjit_ntt(g, fhjit_automorphism(g, f, k), iv, FHJIT_NTT_TO_COEF_MONT), "b");
    char what[96];
    snprintf(what, sizeof what, "scattered prologue r%d shape %d k %lld autpro=%d",
             radix == FHJIT_R32 ? 32 : 62, shape, (long long)k, fused);
    check_graph(&e, g, what, _i < 3);
    const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_ptr_nonnull(plan);
    /* the forward NTT's prologue only when fused; the inverse's always */
    ck_assert_msg(count_in(plan, "prologue: ") == 1 + fused, "%s:\n%s", what, plan);
    ck_assert_msg((strstr(plan, "step 0: pointwise ") != NULL) == !fused, "%s:\n%s", what, plan);
    /* the sum as a result: written by that step (read in place by the
     * NTT), or (fused) by a pointwise step of its own after the NTTs */
    ck_assert_msg(count_in(plan, ": pointwise ") == (!fused || shape == 2), "%s:\n%s", what, plan);
    ck_assert_msg((strstr(plan, "result 0 -> result 1") != NULL) == (shape == 2 && !fused),
                  "%s:\n%s", what, plan);
  }
  env_free(&e);
}
END_TEST

/* ---------------------------------------------------- rows and concat */

/* A basis of `rows` distinct positions of the chain, random. */
static void random_basis(env *e, int32_t *b, int rows, const int32_t *avoid, int navoid) {
  int32_t pool[MAXM];
  int np = 0;
  for (int32_t p = 0; p < MAXM; p++) {
    int bad = 0;
    for (int k = 0; k < navoid; k++) bad |= avoid[k] == p;
    if (!bad) pool[np++] = p;
  }
  ck_assert_int_ge(np, rows);
  for (int r = 0; r < rows; r++) {
    int j = r + (int)tu_below(&e->seed, (uint64_t)(np - r));
    int32_t t = pool[r];
    pool[r] = pool[j];
    pool[j] = t;
    b[r] = pool[r];
  }
}

START_TEST(test_rows_concat) {
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  int logn = 4 + (_i / 2) % 7;
  int comps = 1 + (_i / 4) % 3;
  int64_t batch = (_i / 3) % 2 ? 2 : 0;
  env e;
  env_init(&e, radix, logn, 300 + (uint64_t)_i);
  int rx = 1 + (int)tu_below(&e.seed, 8); /* 1 .. 8 rows */
  int s = (int)tu_below(&e.seed, (uint64_t)rx), c = 1 + (int)tu_below(&e.seed, (uint64_t)(rx - s));
  int ry = 1 + (int)tu_below(&e.seed, (uint64_t)(MAXM - c < 3 ? MAXM - c : 3));
  int32_t bx[MAXM], by[MAXM], bc[2 * MAXM];
  random_basis(&e, bx, rx, NULL, 0);
  random_basis(&e, by, ry, bx + s, c);
  memcpy(bc, bx + s, sizeof *bc * (size_t)c);
  memcpy(bc + c, by, sizeof *bc * (size_t)ry);
  fhjit_domain dom = _i % 3 ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF;
  fhjit_graph *g = new_graph(&e, "rc");
  fhjit_value x = poly(&e, g, "x", comps, batch, bx, rx, dom, FHJIT_FORM_MONT);
  fhjit_value y = poly(&e, g, "y", comps, batch, by, ry, dom, FHJIT_FORM_MONT);
  fhjit_value w = poly(&e, g, "w", comps, batch, bc, c + ry, dom, FHJIT_FORM_MONT);
  fhjit_value p = poly(&e, g, "p", 0, 0, bc, c + ry, dom, FHJIT_FORM_MONT);
  fhjit_value r = fhjit_rows(g, x, s, c);
  fhjit_value cc = fhjit_concat(g, r, y);
  /* concat of a row slice (an address chain), a product with w, a
   * plaintext product, the slice itself stored, concat in the other order */
  fhjit_output(g, fhjit_add(g, cc, w), "sum");
  fhjit_output(g, fhjit_mul_plain(g, cc, p), "mp");
  /* concat in the other order, stored as is: words moved on another basis */
  fhjit_output(g, fhjit_concat(g, y, fhjit_rows(g, x, s, c)), "yc");
  if (comps > 1) {
    /* a component of a concat */
    fhjit_value ex = fhjit_extract(g, cc, comps - 1);
    fhjit_output(g, fhjit_mul(g, ex, fhjit_extract(g, w, 0)), "ex");
  }
  char what[128];
  snprintf(what, sizeof what, "rows/concat r%d N 2^%d comps %d batch %lld rows %d [%d, %d) + %d",
           radix == FHJIT_R32 ? 32 : 62, logn, comps, (long long)batch, rx, s, s + c, ry);
  check_graph(&e, g, what, _i % 5 == 0);
  /* the slice stored as is, and negated */
  fhjit_graph *h = new_graph(&e, "slice");
  x = poly(&e, h, "x", comps, batch, bx, rx, dom, FHJIT_FORM_MONT);
  r = fhjit_rows(h, x, s, c);
  fhjit_output(h, r, "slice");
  fhjit_output(h, fhjit_neg(h, r), "neg");
  strcat(what, " (slice)");
  check_graph(&e, h, what, 0);
  env_free(&e);
}
END_TEST

/* -------------------------------------------------------- automorphism */

static int64_t galois(int which, int64_t n, int64_t r) {
  int64_t m = 2 * n;
  switch (which) {
  case 0: return 1;
  case 1: return 3;
  case 2: {
    int64_t k = 1;
    for (int64_t j = 0; j < r; j++) k = k * 5 % m;
    return k;
  }
  default: return m - 1;
  }
}

START_TEST(test_automorphism) {
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  fhjit_domain dom = (_i / 2) % 2 ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF;
  int which = (_i / 4) % 4;
  int logn = 4 + (_i / 16 + _i) % 7;
  env e;
  env_init(&e, radix, logn, 1300 + (uint64_t)_i);
  int64_t k = galois(which, e.n, 1 + _i % 5);
  int comps = 1 + _i % 3, rows = 1 + (int)tu_below(&e.seed, 8);
  int64_t batch = _i % 4 == 3 ? 3 : 0;
  int32_t b[MAXM];
  random_basis(&e, b, rows, NULL, 0);
  fhjit_form form = _i % 5 == 1 ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
  fhjit_graph *g = new_graph(&e, "auto");
  fhjit_value x = poly(&e, g, "x", comps, batch, b, rows, dom, form);
  fhjit_value w = poly(&e, g, "w", comps, batch, b, rows, dom, form);
  fhjit_value p = poly(&e, g, "p", 0, 0, b, rows, dom, form);
  fhjit_value a = fhjit_automorphism(g, x, k);
  fhjit_output(g, a, "a"); /* stored as is */
  fhjit_output(g, fhjit_add(g, a, w), "aw");
  fhjit_output(g, fhjit_mul_plain(g, a, fhjit_automorphism(g, p, k)), "ap");
  if (comps > 1) {
    fhjit_value e1 = fhjit_automorphism(g, fhjit_extract(g, x, comps - 1), k);
    fhjit_output(g, fhjit_sub(g, e1, fhjit_extract(g, w, 0)), "e1");
  }
  char what[128];
  snprintf(what, sizeof what, "automorphism r%d %s k %lld N 2^%d comps %d rows %d batch %lld",
           radix == FHJIT_R32 ? 32 : 62, dom == FHJIT_DOMAIN_NTT ? "ntt" : "coef", (long long)k,
           logn, comps, rows, (long long)batch);
  check_graph(&e, g, what, _i % 6 == 0);
  if (rows >= 2) {
    /* automorphism of a concat of slices (the rows rotated: another
     * basis, so another kernel) */
    fhjit_graph *h = new_graph(&e, "auto_rc");
    x = poly(&e, h, "x", comps, batch, b, rows, dom, form);
    w = poly(&e, h, "w", comps, batch, b, rows, dom, form);
    fhjit_value rc = fhjit_concat(h, fhjit_rows(h, x, 1, rows - 1), fhjit_rows(h, x, 0, 1));
    fhjit_value wc = fhjit_concat(h, fhjit_rows(h, w, 1, rows - 1), fhjit_rows(h, w, 0, 1));
    fhjit_output(h, fhjit_add_lazy(h, fhjit_automorphism(h, rc, k), wc), "rc");
    snprintf(what + strlen(what), sizeof what - strlen(what), " (concat)");
    check_graph(&e, h, what, _i % 6 == 0);
  }
  env_free(&e);
}
END_TEST

/* The coefficient-domain automorphism through shared memory (pw_plan A=1,
 * lower.c emit_stage): the host runs the same slot arithmetic (every slot
 * of the block, into an array of its own), word for word against the
 * interpreter: k with delta = +-k mod N from 1 (k = 2N - 1, N - 1) to
 * S / 4 and beyond (the per-lane loads again), blocks of 32 to 256 threads,
 * V 1 to 4, N 2^8 .. 2^10 (S above N: not staged), components, extract, a
 * batch axis, a concat of row slices; the PTX stages exactly when the
 * conditions hold, and assembles. */
START_TEST(test_automorphism_staged) {
  static const char *const plans[] = {"A=1", "A=1,T=64", "A=1,T=32,V=1", "A=1,V=2,T=128",
                                      "A=1,T=96,V=2"};
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  const char *plan = plans[(_i / 2) % 5];
  int logn = 8 + (_i / 10) % 3;
  env e;
  env_init(&e, radix, logn, 4400 + (uint64_t)_i);
  int64_t N = e.n, m2 = 2 * N;
  const int64_t ks[] = {3, 5, 125 % m2, m2 - 1, N - 1, N + 3, m2 - 5, N / 2 + 1, 77, N - 9};
  int64_t k = ks[(_i / 3) % 10];
  if (k % 2 == 0) k++;
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "pw_plan", plan), FHJIT_OK);
  int comps = 1 + _i % 2, rows = 1 + _i % 4;
  int64_t batch = _i % 5 == 3 ? 2 : 0;
  fhjit_graph *g = new_graph(&e, "auts");
  fhjit_value x = poly(&e, g, "x", comps, batch, NULL, rows, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_value w = poly(&e, g, "w", comps, batch, NULL, rows, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  fhjit_value a = fhjit_automorphism(g, x, k);
  fhjit_output(g, fhjit_mul(g, a, w), "aw");
  fhjit_output(g, a, "a");
  if (comps > 1) {
    fhjit_value e1 = fhjit_automorphism(g, fhjit_extract(g, x, 1), k);
    fhjit_output(g, fhjit_sub(g, e1, fhjit_extract(g, w, 0)), "e1");
  }
  char what[160];
  snprintf(what, sizeof what, "staged automorphism r%d k %lld N 2^%d comps %d rows %d batch %lld %s",
           radix == FHJIT_R32 ? 32 : 62, (long long)k, logn, comps, rows, (long long)batch, plan);
  check_graph(&e, g, what, 0);
  if (rows >= 2) { /* of a concat of row slices (rotated rows: a graph of its own) */
    fhjit_graph *h = new_graph(&e, "auts_rc");
    x = poly(&e, h, "x", comps, batch, NULL, rows, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
    w = poly(&e, h, "w", comps, batch, NULL, rows, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
    fhjit_value rc = fhjit_concat(h, fhjit_rows(h, x, 1, rows - 1), fhjit_rows(h, x, 0, 1));
    fhjit_value wc = fhjit_concat(h, fhjit_rows(h, w, 1, rows - 1), fhjit_rows(h, w, 0, 1));
    fhjit_output(h, fhjit_add_lazy(h, fhjit_automorphism(h, rc, k), wc), "rc");
    char w2[200];
    snprintf(w2, sizeof w2, "%s (concat)", what);
    check_graph(&e, h, w2, 1);
  }
  /* staged exactly when the block divides N and delta <= S / 4 */
  int V = strstr(plan, "V=1") ? 1 : strstr(plan, "V=2") ? 2 : (radix == FHJIT_R32 ? 4 : 2);
  int T = strstr(plan, "T=64") ? 64 : strstr(plan, "T=32") ? 32 : strstr(plan, "T=128") ? 128
        : strstr(plan, "T=96") ? 96 : 256;
  int64_t S = (int64_t)T * V, delta = k % N;
  if (delta > N / 2) delta = N - delta;
  int staged = N % S == 0 && S / delta >= 4;
  const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90");
  ck_assert_msg(ptx != NULL, "%s: emit: %s", what, fhjit_last_error(e.ctx));
  ck_assert_msg(!!strstr(ptx, "bar.sync") == staged, "%s: staged %d, PTX %s", what, staged,
                strstr(ptx, "bar.sync") ? "has a barrier" : "has none");
  ck_assert_msg(ptxeval_ptxas_ok(ptx), "%s: ptxas rejects the PTX", what);
  env_free(&e);
}
END_TEST

/* The low bits bits of x reversed. */
static int64_t brev_bits(int64_t x, int bits) {
  int64_t r = 0;
  for (int i = 0; i < bits; i++) r |= ((x >> i) & 1) << (bits - 1 - i);
  return r;
}

/* The NTT-domain automorphism read as one vector per V lanes (lower.c
 * aut_ntt_group: the V sources of V consecutive outputs are one aligned
 * group, permuted) for every odd k < 2N, N = 2^2 .. 2^6, V = 1, 2, 4 (the
 * lane-by-lane form, r62's and r32's vectors): each output word against
 * SPEC's formula evaluated here, out[j] = x[br((k (2 br(j) + 1) mod 2N -
 * 1) / 2)] (not the interpreter's code), with 32- and 64-bit walk
 * indices, stored as is and through an add_lazy with zero (the fused
 * path), on a two-row basis and on a concat of its row slices (the rows
 * swapped). */
START_TEST(test_automorphism_ntt_groups) {
  static const char *const plans[] = {"V=1", "V=2", "V=4"};
  int i = _i % 30;
  fhjit_radix radix = i % 2 ? FHJIT_R62 : FHJIT_R32;
  const char *plan = plans[(i / 2) % 3];
  int logn = 2 + (i / 6) % 5;
  lw_force_idx64 = _i >= 30; /* the walk's indices in 64 bits (lw_plan.idx_bits) */
  env e;
  env_init(&e, radix, logn, 9100 + (uint64_t)_i);
  int64_t N = e.n;
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "pw_plan", plan), FHJIT_OK);
  /* every odd k; sampled (FHJIT_TEST_SAMPLE, testutil.h): 1, 3, N + 1 and
   * 2N - 1 in every case (a graph compiles per k and swap: 170 s of the
   * ASan stage at N up to 2^6 with all of them) */
  int64_t sampled_ks[4] = {1, 3, N + 1, 2 * N - 1};
  int sampled = tu_sampling();
  for (int64_t t = 0; t < (sampled ? 4 : N); t++)
    for (int swap = 0; swap < 2; swap++) { /* one basis a kernel: a graph each */
      int64_t k = sampled ? sampled_ks[t] : 2 * t + 1;
      static const int32_t swapped[2] = {1, 0};
      fhjit_graph *g = new_graph(&e, "autg");
      fhjit_value x = poly(&e, g, "x", 0, 0, NULL, 2, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
      fhjit_value z = poly(&e, g, "z", 0, 0, swap ? swapped : NULL, 2, FHJIT_DOMAIN_NTT,
                           FHJIT_FORM_MONT);
      fhjit_value src = swap ? fhjit_concat(g, fhjit_rows(g, x, 1, 1), fhjit_rows(g, x, 0, 1)) : x;
      fhjit_output(g, fhjit_automorphism(g, src, k), "a");
      fhjit_output(g, fhjit_add_lazy(g, fhjit_automorphism(g, src, k), z), "az");
      ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e.ctx));
      void **in = make_inputs(&e, g, NULL);
      for (int64_t j = 0; j < 2 * N; j++) tu_set_word(e.ws, in[1], j, 0); /* z = 0: the words as read */
      void **got = alloc_results(&e, g);
      ck_assert_msg(fhjit_run_host(g, e.params, e.m, (const void *const *)in, got, 1) == FHJIT_OK,
                    "run_host: %s", fhjit_last_error(e.ctx));
      for (int64_t row = 0; row < 2; row++)
        for (int64_t j = 0; j < N; j++) {
          int64_t m = (k * (2 * brev_bits(j, logn) + 1)) % (2 * N);
          int64_t from = brev_bits((m - 1) / 2, logn);
          uint64_t want = tu_word(e.ws, in[0], (swap ? 1 - row : row) * N + from);
          for (int r = 0; r < 2; r++) {
            uint64_t w = tu_word(e.ws, got[r], row * N + j);
            ck_assert_msg(w == want, "r%d %s N %lld k %lld swap %d result %d row %lld out %lld: "
                          "%llu, SPEC %llu (source %lld)", radix == FHJIT_R32 ? 32 : 62, plan,
                          (long long)N, (long long)k, swap, r, (long long)row, (long long)j,
                          (unsigned long long)w, (unsigned long long)want, (long long)from);
          }
        }
      free_results(g, got);
      free_inputs(&e, g, in, NULL);
    }
  lw_force_idx64 = 0;
  env_free(&e);
}
END_TEST

/* A forward NTT of a coefficient-domain automorphism with the automorphism
 * in its two kernels' loads (ntt_plan autcol=1 and 2, ntt_emit_aut.c:
 * kernel 0 takes source columns, kernel 1 permutes its chunks through
 * shared memory or in its first pass's loads; kernel 0's load and
 * kernel 1's staged copy in vectors or one word a thread, autvec and
 * autvec1, or either kernel's registers permuted, autreg and autcol=3)
 * against the
 * same NTT of the automorphism computed here from SPEC's map (x_i goes to
 * i k mod 2N, negated past N), on the host path, N = 2^4 .. 2^7: every odd
 * k for N = 2^4, a sample above; both radices, both forward kinds, several splits
 * of the row (n1), columns per block (c_col: the scalar and the vector
 * staged load), words per thread and paddings; a dense source, a batch,
 * and a rows view of a wider input; with an epilogue now and then. */
static void aut_reference(env *e, const void *x, int64_t row_stride, int64_t off, int rows,
                          int64_t nb, const int32_t *basis, int64_t k, void *out) {
  int64_t N = e->n;
  for (int64_t b = 0; b < nb; b++)
    for (int r = 0; r < rows; r++) {
      uint64_t q = e->q[basis[r]];
      for (int64_t i = 0; i < N; i++) {
        uint64_t w = tu_word(e->ws, x, off + (b * rows + r) * row_stride + i);
        uint64_t c = w >= q ? w - q : w;
        int64_t j = (int64_t)(((__int128)i * k) % (2 * N));
        if (j >= N) j -= N, c = c ? q - c : 0;
        tu_set_word(e->ws, out, (b * rows + r) * N + j, c);
      }
    }
}

START_TEST(test_ntt_aut_columns) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): 13 of the 40 cases, chosen
   * (greedily, cheapest first) so that every value of every knob below
   * (autcol, autvec, autvec1, autreg, the five plans, shape, kind, epilogue,
   * log N) runs, and every pair of values of autcol, autvec, autvec1,
   * autreg and the radix; 0 .. 3 check the PTX */
  TU_SAMPLED_IN(_i, 0, 1, 2, 3, 6, 8, 9, 12, 16, 22, 24, 28, 32);
  static const char *const plans[] = {"one=3", "one=3,c_col=0", "one=3,e_col=1,pad_col=2",
                                      "one=3,n1=1,c_col=1", "one=3,n1=2,e=2"};
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  int logn = 4 + (_i / 2) % 4;
  /* kernel 1 staged (autcol=1), loading directly (2) or permuting its
   * registers (3); kernel 0's
   * staged load in vectors or one word a thread (autvec=0), or its
   * registers permuted instead (autreg=1); kernel 1's staged copy in
   * vectors or a word a thread (autvec1=0) */
  char plan[112];
  snprintf(plan, sizeof plan, "autcol=%d,autvec=%d,autvec1=%d,autreg=%d,%s", 1 + (_i / 2 + _i / 8) % 3,
           (_i / 5) % 2, (_i / 7) % 2, (_i / 6) % 2, plans[(_i / 2) % 5]);
  int shape = (_i / 8) % 3; /* dense, a batch of 2, rows 1..3 of a 4-row input */
  fhjit_ntt_kind kind = (_i / 20) % 2 ? FHJIT_NTT_COEF_STD_TO_NTT : FHJIT_NTT_COEF_MONT_TO_NTT;
  int epi = _i % 3 == 1;
  env e;
  env_init(&e, radix, logn, 4400 + (uint64_t)_i);
  int64_t N = e.n;
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", plan), FHJIT_OK);
  static const int32_t basis[4] = {4, 5, 6, 7};
  int rows = 3, in_rows = shape == 2 ? 4 : 3;
  int64_t nb = shape == 1 ? 2 : 1;
  /* the reference graph: the same NTT of the automorphism's words */
  fhjit_graph *h = new_graph(&e, "autref");
  fhjit_value xr = poly(&e, h, "x", 0, shape == 1 ? 2 : 0, basis + 1, rows, FHJIT_DOMAIN_COEF,
                        in_form(kind));
  fhjit_value yr = fhjit_ntt(h, xr, twiddles(&e, h, "fw"), kind);
  fhjit_value zr = epi ? poly(&e, h, "z", 0, shape == 1 ? 2 : 0, basis + 1, rows,
                              FHJIT_DOMAIN_NTT, out_form(kind))
                       : -1;
  fhjit_output(h, epi ? fhjit_add(h, yr, zr) : yr, "y");
  ck_assert_int_eq(fhjit_bind(h), FHJIT_OK);
  int64_t ks[8] = {1, 5, 2 * N - 1, N + 1, 0}, nk = 4;
  ks[nk++] = (int64_t)(tu_lazy(&e.seed, (uint64_t)N) | 1);
  if (N <= 16) nk = N; /* every odd k: k = 2t + 1 below */
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): every case's plan and shape
   * with two k, 2N - 1 and the random one (a graph compiles per k) */
  int sampled = tu_sampling();
  int64_t t0 = sampled ? 2 : 0;
  if (sampled) nk = 5;
  for (int64_t t = t0; t < nk; t += sampled ? 2 : 1) {
    int64_t k = N <= 16 && !sampled ? 2 * t + 1 : ks[t];
    fhjit_graph *g = new_graph(&e, "autcol");
    fhjit_value x = poly(&e, g, "x", 0, shape == 1 ? 2 : 0, shape == 2 ? basis + 0 : basis + 1,
                         in_rows, FHJIT_DOMAIN_COEF, in_form(kind));
    fhjit_value src = shape == 2 ? fhjit_rows(g, x, 1, 3) : x;
    fhjit_value y = fhjit_ntt(g, fhjit_automorphism(g, src, k), twiddles(&e, g, "fw"), kind);
    fhjit_value z = epi ? poly(&e, g, "z", 0, shape == 1 ? 2 : 0, basis + 1, rows,
                               FHJIT_DOMAIN_NTT, out_form(kind))
                        : -1;
    fhjit_output(g, epi ? fhjit_add(g, y, z) : y, "y");
    ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e.ctx));
    const char *pl = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_msg(pl && strstr(pl, "load: automorphism galois"), "%s N %lld k %lld: not in the "
                  "loads:\n%s", plan, (long long)N, (long long)k, pl ? pl : "(none)");
    void **in = make_inputs(&e, g, NULL);
    void *xa = malloc(e.ws * (size_t)(nb * rows * N));
    aut_reference(&e, in[0], N, shape == 2 ? N : 0, rows, nb, basis + 1, k, xa);
    void *given[4] = {xa, NULL, epi ? in[2] : NULL, NULL};
    void **inr = make_inputs(&e, h, given);
    void **got = alloc_results(&e, g), **want = alloc_results(&e, h);
    ck_assert_msg(fhjit_run_host(g, e.params, e.m, (const void *const *)in, got, 1) == FHJIT_OK,
                  "run_host: %s", fhjit_last_error(e.ctx));
    ck_assert_int_eq(fhjit_run_host(h, e.params, e.m, (const void *const *)inr, want, 1), FHJIT_OK);
    for (int64_t j = 0; j < nb * rows * N; j++)
      ck_assert_msg(tu_word(e.ws, got[0], j) == tu_word(e.ws, want[0], j),
                    "r%d %s shape %d kind %d N %lld k %lld epi %d word %lld: %llu, reference %llu",
                    radix == FHJIT_R32 ? 32 : 62, plan, shape, (int)kind, (long long)N, (long long)k,
                    epi, (long long)j, (unsigned long long)tu_word(e.ws, got[0], j),
                    (unsigned long long)tu_word(e.ws, want[0], j));
    if (t == t0 && _i < 4) check_ptx(g, plan);
    free_results(g, got);
    free_results(h, want);
    free_inputs(&e, h, inr, given);
    free_inputs(&e, g, in, NULL);
    free(xa);
  }
  env_free(&e);
}
END_TEST

/* automorphism(automorphism(x, k1), k2) = automorphism(x, k1 k2 mod 2N),
 * the first as two graphs (the first's result the second's input), both on
 * the host path only. */
START_TEST(test_automorphism_compose) {
  fhjit_radix radix = _i % 2 ? FHJIT_R62 : FHJIT_R32;
  fhjit_domain dom = (_i / 2) % 2 ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF;
  int logn = 4 + (_i / 4) % 7;
  env e;
  env_init(&e, radix, logn, 77 + (uint64_t)_i);
  int64_t m = 2 * e.n;
  int64_t k1 = galois((_i / 4) % 4, e.n, 1 + _i % 7), k2 = galois((_i / 3) % 4, e.n, 2 + _i % 5);
  int64_t k12 = k1 * k2 % m;
  int rows = 1 + _i % 4;
  int32_t b[MAXM];
  random_basis(&e, b, rows, NULL, 0);
  fhjit_graph *g1 = new_graph(&e, "a1"), *g2 = new_graph(&e, "a2"), *g3 = new_graph(&e, "a12");
  fhjit_value x1 = poly(&e, g1, "x", 2, 0, b, rows, dom, FHJIT_FORM_MONT);
  fhjit_output(g1, fhjit_automorphism(g1, x1, k1), NULL);
  fhjit_value x2 = poly(&e, g2, "x", 2, 0, b, rows, dom, FHJIT_FORM_MONT);
  fhjit_output(g2, fhjit_automorphism(g2, x2, k2), NULL);
  fhjit_value x3 = poly(&e, g3, "x", 2, 0, b, rows, dom, FHJIT_FORM_MONT);
  fhjit_output(g3, fhjit_automorphism(g3, x3, k12), NULL);
  ck_assert_int_eq(fhjit_bind(g1), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g2), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g3), FHJIT_OK);
  void **in = make_inputs(&e, g1, NULL);
  void **r1 = alloc_results(&e, g1), **r2 = alloc_results(&e, g2), **r3 = alloc_results(&e, g3);
  ck_assert_int_eq(fhjit_run_host(g1, e.params, e.m, (const void *const *)in, r1, 1), FHJIT_OK);
  ck_assert_int_eq(fhjit_run_host(g2, e.params, e.m, (const void *const *)r1, r2, 1), FHJIT_OK);
  ck_assert_int_eq(fhjit_run_host(g3, e.params, e.m, (const void *const *)in, r3, 1), FHJIT_OK);
  int64_t len = 2 * rows * e.n;
  int moved = k12 == 1;
  for (int64_t j = 0; j < len; j++) {
    ck_assert_msg(tu_word(e.ws, r2[0], j) == tu_word(e.ws, r3[0], j),
                  "k1 %lld k2 %lld: word %lld: %llu vs %llu", (long long)k1, (long long)k2,
                  (long long)j, (unsigned long long)tu_word(e.ws, r2[0], j),
                  (unsigned long long)tu_word(e.ws, r3[0], j));
    moved |= tu_word(e.ws, r3[0], j) != tu_word(e.ws, in[0], j);
  }
  ck_assert(moved); /* the permutation did something */
  free_results(g1, r1);
  free_results(g2, r2);
  free_results(g3, r3);
  free_inputs(&e, g1, in, NULL);
  env_free(&e);
}
END_TEST

/* -------------------------------------------------------------- refusals */

START_TEST(test_materialise_refused) {
  /* The fused kernel cannot read a computed operand of a re-indexing op
   * (lw_plan_graph refuses it, located); the step planner materialises it
   * first, so the graph runs, bit for bit with the interpreter. */
  env e;
  env_init(&e, FHJIT_R62, 4, 9);
  int32_t b[3] = {4, 0, 2};
  struct {
    const char *op, *msg;
  } cases[] = {{"rows", "= rows: its operand"},
               {"concat", "= concat: its operand"},
               {"automorphism", "= automorphism: its operand"}};
  for (int c = 0; c < 3; c++) {
    fhjit_graph *g = new_graph(&e, "mat");
    fhjit_value x = poly(&e, g, "x", 0, 0, b, 3, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
    fhjit_value y = poly(&e, g, "y", 0, 0, b, 3, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
    fhjit_value s = fhjit_add(g, x, y), v;
    if (c == 0) v = fhjit_rows(g, s, 1, 2);
    else if (c == 1) v = fhjit_concat(g, fhjit_rows(g, x, 0, 1), fhjit_rows(g, s, 1, 1));
    else v = fhjit_automorphism(g, fhjit_automorphism(g, x, 3), 5);
    fhjit_output(g, v, NULL);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
    lw_plan plan;
    ck_assert_int_eq(lw_plan_graph(g, &plan), FHJIT_ERR_UNSUPPORTED);
    ck_assert_msg(tu_contains(fhjit_last_error(e.ctx), cases[c].msg) &&
                      tu_contains(fhjit_last_error(e.ctx), "must be materialised"),
                  "%s: %s", cases[c].op, fhjit_last_error(e.ctx));
    check_graph(&e, g, cases[c].op, 1);
  }
  env_free(&e);
}
END_TEST

/* The parameter table must have a column for every position a basis
 * names, not only `rows` of them. */
START_TEST(test_pstride_covers_basis) {
  env e;
  env_init(&e, FHJIT_R32, 4, 11);
  fhjit_graph *g = new_graph(&e, "ps");
  int32_t b[2] = {6, 1};
  fhjit_value x = poly(&e, g, "x", 0, 0, b, 2, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_output(g, fhjit_add(g, x, x), NULL);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  void **in = make_inputs(&e, g, NULL);
  void **out = alloc_results(&e, g);
  ck_assert_int_eq(fhjit_run_host(g, e.params, 6, (const void *const *)in, out, 1),
                   FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(e.ctx), "pstride"));
  free_results(g, out);
  free_inputs(&e, g, in, NULL);
  env_free(&e);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("s7_lower");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_pointwise_bases, 0, 2 * NBASES * 2);
  tcase_add_test(tc, test_two_bases_refused);
  tcase_add_loop_test(tc, test_ntt_bases, 0, 32);
  tcase_add_loop_test(tc, test_ntt_roundtrip_bases, 0, 6);
  tcase_add_loop_test(tc, test_ntt_scattered_prologue, 0, 12);
  tcase_add_loop_test(tc, test_rows_concat, 0, 42);
  tcase_add_loop_test(tc, test_automorphism, 0, 64);
  tcase_add_loop_test(tc, test_automorphism_compose, 0, 40);
  tcase_add_loop_test(tc, test_automorphism_ntt_groups, 0, 60);
  tcase_add_loop_test(tc, test_automorphism_staged, 0, 60);
  tcase_add_loop_test(tc, test_ntt_aut_columns, 0, 40);
  tcase_add_test(tc, test_materialise_refused);
  tcase_add_test(tc, test_pstride_covers_basis);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
