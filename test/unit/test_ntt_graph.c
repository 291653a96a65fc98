/* test_ntt_graph.c: the NTT as a graph operation (fhjit_ntt, IR_NTT): the
 * interpreter against the row reference of lib/ir/ntt_ref.c (itself checked
 * against direct evaluation in test_ntt_ref.c), and the host path (the same
 * lowering as the GPU's) bit for bit against the interpreter: all four
 * transforms, both radices, N = 2^4 .. 2^17, components, batches and rows,
 * input views (strides, offsets, component views, broadcast), twiddle
 * tables with offsets and row strides, moduli near each radix limit and far
 * below, random and edge inputs; chains of anchors (NTT -> products ->
 * inverse NTT, a key switch) against the same operations run one by one;
 * the verifier's refusals; and the GPU program of an anchored graph. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ntt.h"
#include "lower/lower.h"
#include "nttcheck.h"
#include "testutil.h"

/* ------------------------------------------------------------- helpers */

typedef struct env {
  fhjit_context *ctx;
  fhjit_radix radix;
  size_t ws;
  int rows;
  int64_t n;
  uint64_t q[8];
  void *params;
  void *fwd, *inv; /* dense [rows, n] tables */
} env;

/* Moduli q = 1 mod 2^18: near the radix limit, far below, near again. */
static void env_init(env *e, fhjit_radix radix, int rows, int logn) {
  memset(e, 0, sizeof *e);
  e->ctx = fhjit_context_create();
  e->radix = radix;
  e->ws = radix == FHJIT_R32 ? 4 : 8;
  e->rows = rows;
  e->n = INT64_C(1) << logn;
  const uint64_t m18 = UINT64_C(1) << 18;
  int near = radix == FHJIT_R32 ? 30 : 60, far = radix == FHJIT_R32 ? 21 : 40;
  uint64_t p[4];
  ck_assert_int_eq(fhjit_find_primes(NULL, near, m18, 4, p), FHJIT_OK);
  uint64_t f[1];
  ck_assert_int_eq(fhjit_find_primes(NULL, far, m18, 1, f), FHJIT_OK);
  for (int r = 0; r < rows; r++) e->q[r] = r == 1 ? f[0] : p[r % 4];
  nttcheck_tables(e->ctx, radix, e->q, rows, e->n, &e->params, &e->fwd, &e->inv);
}

static void env_free(env *e) {
  free(e->params);
  free(e->fwd);
  free(e->inv);
  fhjit_context_destroy(e->ctx);
}

/* Words an input spans from its base under its bound layout. */
static int64_t span_words(const fhjit_type *t, const fhjit_layout *l) {
  int64_t last = l->offset;
  if (t->kind == FHJIT_KIND_KEY) last += (t->digits - 1) * l->digit_stride;
  if (t->comps > 0) last += (t->comps - 1) * l->comp_stride;
  for (int a = 0; a < t->nbatch; a++) last += (t->batch[a] - 1) * l->batch_stride[a];
  last += (t->rows - 1) * l->row_stride + (t->n - 1) * l->index_stride;
  return last + 1;
}

/* Allocates and fills every input of bound graph g: twiddle inputs named
 * "tf*" get the forward table, "ti*" the inverse one, written through their
 * layouts; other inputs random lazy words for the row they belong to, with
 * edge values (0, q-1, q, 2q-1) mixed in (pattern 1: edges only). Words no
 * view reaches hold 0xA5 bytes. */
static void **make_inputs(env *e, fhjit_graph *g, uint64_t *seed, int pattern) {
  int32_t ni = fhjit_num_inputs(g);
  void **in = calloc((size_t)ni + 1, sizeof *in);
  ck_assert(in);
  for (int32_t i = 0; i < ni; i++) {
    fhjit_type t;
    fhjit_layout l;
    ck_assert_int_eq(fhjit_input_binding(g, i, &t, &l), FHJIT_OK);
    int64_t words = span_words(&t, &l);
    in[i] = malloc(e->ws * (size_t)words);
    ck_assert(in[i]);
    memset(in[i], 0xA5, e->ws * (size_t)words);
    const char *name = fhjit_value_name(g, fhjit_input_value(g, i));
    int64_t c_ext = t.comps > 0 ? t.comps : 1, d_ext = t.kind == FHJIT_KIND_KEY ? t.digits : 1;
    int64_t b_total = 1;
    for (int a = 0; a < t.nbatch; a++) b_total *= t.batch[a];
    for (int64_t d = 0; d < d_ext; d++)
      for (int64_t c = 0; c < c_ext; c++)
        for (int64_t bi = 0; bi < b_total; bi++)
          for (int64_t r = 0; r < t.rows; r++)
            for (int64_t x = 0; x < t.n; x++) {
              int64_t off = l.offset + d * l.digit_stride + c * l.comp_stride + r * l.row_stride +
                            x * l.index_stride;
              int64_t rest = bi;
              for (int a = t.nbatch - 1; a >= 0; a--) {
                off += (rest % t.batch[a]) * l.batch_stride[a];
                rest /= t.batch[a];
              }
              uint64_t v;
              if (t.kind == FHJIT_KIND_TWIDDLE) {
                v = tu_word(e->ws, name[1] == 'f' ? e->fwd : e->inv, r * e->n + x);
              } else {
                /* key rows are used with limb r - row_start: keep every key
                 * word below the smallest 2q */
                uint64_t q = t.kind == FHJIT_KIND_KEY ? e->q[1] : e->q[r % e->rows];
                const uint64_t edges[4] = {0, q - 1, q, 2 * q - 1};
                if (pattern == 1 || tu_below(seed, 8) == 0) v = edges[tu_below(seed, 4)];
                else v = tu_below(seed, 2 * q);
              }
              tu_set_word(e->ws, in[i], off, v);
            }
  }
  return in;
}

static void free_bufs(void **b, int32_t n) {
  for (int32_t i = 0; i < n; i++) free(b[i]);
  free(b);
}

static void **make_results(env *e, fhjit_graph *g) {
  int32_t nr = fhjit_num_results(g);
  void **out = calloc((size_t)nr + 1, sizeof *out);
  ck_assert(out);
  for (int32_t k = 0; k < nr; k++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, k, &t), FHJIT_OK);
    int64_t words = fhjit_type_elements(&t);
    out[k] = malloc(e->ws * (size_t)words);
    ck_assert(out[k]);
    memset(out[k], 0x5A, e->ws * (size_t)words);
  }
  return out;
}

/* Runs g on the interpreter and the host JIT and compares every result;
 * returns the interpreter's results (caller frees). */
static void **run_both(env *e, fhjit_graph *g, void **in, const char *what) {
  void **ri = make_results(e, g), **rh = make_results(e, g);
  fhjit_status st = fhjit_interpret(g, e->params, e->rows, (const void *const *)in, ri);
  ck_assert_msg(st == FHJIT_OK, "%s: interpret: %s", what, fhjit_last_error(e->ctx));
  st = fhjit_run_host(g, e->params, e->rows, (const void *const *)in, rh, 2);
  ck_assert_msg(st == FHJIT_OK, "%s: host: %s", what, fhjit_last_error(e->ctx));
  for (int32_t k = 0; k < fhjit_num_results(g); k++) {
    fhjit_type t;
    fhjit_result_type(g, k, &t);
    int64_t words = fhjit_type_elements(&t);
    for (int64_t i = 0; i < words; i++)
      if (tu_word(e->ws, ri[k], i) != tu_word(e->ws, rh[k], i))
        ck_abort_msg("%s: result #%d word %lld: host %llu, interpreter %llu", what, (int)k,
                     (long long)i, (unsigned long long)tu_word(e->ws, rh[k], i),
                     (unsigned long long)tu_word(e->ws, ri[k], i));
  }
  free_bufs(rh, fhjit_num_results(g));
  return ri;
}

static fhjit_type poly(int comps, int nbatch, const int64_t *batch, int64_t rows, int64_t n) {
  fhjit_type t = {.kind = FHJIT_KIND_POLY, .comps = comps, .nbatch = nbatch, .rows = rows, .n = n};
  for (int a = 0; a < nbatch; a++) t.batch[a] = batch[a];
  return t;
}

static fhjit_type twiddles(int64_t rows, int64_t n) {
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = rows, .n = n};
  return t;
}

/* ------------------------------------------------------ single transforms */

/* _i: radix (bit 0) and logN - 4 (>> 1); each kind, with components and a
 * batch axis while N is small. The interpreter is also checked against the
 * row reference, row by row. */
START_TEST(test_single) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): both radices at N = 2^4/2^5
   * (one kernel, components and a batch) and 2^16/2^17 (two kernels, one
   * row each); 2^10/2^11 are the one-kernel plans again at more words */
  TU_SAMPLED_IN(_i, 0, 3, 24, 27);
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = 4 + (_i >> 1);
  int rows = logn <= 12 ? 3 : 2;
  env e;
  env_init(&e, radix, rows, logn);
  uint64_t seed = 4242 + (uint64_t)_i;
  for (int kind = 0; kind < 4; kind++) {
    int comps = logn <= 10 ? 2 : 0;
    int64_t batch[1] = {logn <= 12 ? 2 : 1};
    fhjit_graph *g = fhjit_graph_create(e.ctx, "single", radix);
    fhjit_type xt = poly(comps, 1, batch, rows, e.n), tt = twiddles(rows, e.n);
    xt.domain = kind < 2 ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
    fhjit_value x = fhjit_input(g, "x", &xt);
    fhjit_value tw = fhjit_input(g, kind < 2 ? "tf" : "ti", &tt);
    fhjit_value y = fhjit_ntt(g, x, tw, (fhjit_ntt_kind)kind);
    ck_assert_int_ne(y, FHJIT_NO_VALUE);
    ck_assert_int_eq(fhjit_output(g, y, "y"), FHJIT_OK);
    ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
    void **in = make_inputs(&e, g, &seed, kind == 3);
    char what[96];
    snprintf(what, sizeof what, "%s N=2^%d kind %d", ir_radix_name(radix), logn, kind);
    void **res = run_both(&e, g, in, what);
    /* the interpreter row by row against ir_ntt_row */
    int64_t nrows = (comps ? comps : 1) * batch[0] * rows;
    uint64_t *row = malloc(8 * (size_t)e.n), *tab = malloc(8 * (size_t)e.n);
    ck_assert(row && tab);
    for (int64_t br = 0; br < nrows; br++) {
      int r = (int)(br % rows);
      ir_modulus m = ir_modulus_make(radix, e.q[r]);
      for (int64_t i = 0; i < e.n; i++) {
        row[i] = tu_word(e.ws, in[0], br * e.n + i);
        tab[i] = tu_word(e.ws, kind < 2 ? e.fwd : e.inv, r * e.n + i);
      }
      ir_ntt_row((ir_ntt_kind)kind, &m, tu_word(e.ws, e.params, 7 * rows + r), logn, tab, row);
      for (int64_t i = 0; i < e.n; i++)
        if (row[i] != tu_word(e.ws, res[0], br * e.n + i))
          ck_abort_msg("%s: interpreter row %lld index %lld: %llu, reference %llu", what,
                       (long long)br, (long long)i, (unsigned long long)tu_word(e.ws, res[0], br * e.n + i),
                       (unsigned long long)row[i]);
    }
    free(row);
    free(tab);
    free_bufs(res, 1);
    free_bufs(in, 2);
    fhjit_graph_destroy(g);
  }
  env_free(&e);
}
END_TEST

/* Views: a strided, offset operand (row stride > N); a component of a
 * ciphertext input (component view); a batch-broadcast input (stride 0);
 * twiddles with an offset and a row stride; an index stride of 2. */
START_TEST(test_views) {
  TU_SAMPLED(_i); /* sampled (testutil.h): r32 at the small N, r62 at the large */
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = _i & 2 ? 13 : 8; /* two kernels, one kernel */
  int rows = 2;
  env e;
  env_init(&e, radix, rows, logn);
  uint64_t seed = 99 + (uint64_t)_i;
  for (int vk = 0; vk < 10; vk++) {
    int variant = vk >> 1, forward = vk & 1;
    fhjit_graph *g = fhjit_graph_create(e.ctx, "views", radix);
    int64_t batch[1] = {3};
    fhjit_type tt = twiddles(rows, e.n);
    fhjit_value tw = fhjit_input(g, forward ? "tf" : "ti", &tt);
    fhjit_ntt_kind kind = forward ? (variant & 1 ? FHJIT_NTT_COEF_STD_TO_NTT : FHJIT_NTT_COEF_MONT_TO_NTT)
                                  : (variant & 1 ? FHJIT_NTT_TO_COEF_MONT : FHJIT_NTT_TO_COEF_STD);
    fhjit_value y = FHJIT_NO_VALUE;
    if (variant == 0) { /* strided with an offset */
      fhjit_type xt = poly(0, 1, batch, rows, e.n);
      fhjit_value x = fhjit_input(g, "x", &xt);
      fhjit_layout l = {.offset = 5, .row_stride = e.n + 3, .batch_stride = {2 * (e.n + 3) + 7},
                        .index_stride = 1};
      ck_assert_int_eq(fhjit_bind_input(g, x, NULL, &l), FHJIT_OK);
      y = fhjit_ntt(g, x, tw, kind);
    } else if (variant == 1) { /* component 1 of a ciphertext */
      fhjit_type xt = poly(2, 1, batch, rows, e.n);
      fhjit_value x = fhjit_input(g, "x", &xt);
      y = fhjit_ntt(g, fhjit_extract(g, x, 1), tw, kind);
    } else if (variant == 2) { /* broadcast batch */
      int64_t b3[1] = {3};
      fhjit_type xt = poly(0, 1, b3, rows, e.n);
      fhjit_value x = fhjit_input(g, "x", &xt);
      fhjit_layout l = {.row_stride = e.n, .batch_stride = {0}, .index_stride = 1};
      ck_assert_int_eq(fhjit_bind_input(g, x, NULL, &l), FHJIT_OK);
      y = fhjit_ntt(g, x, tw, kind);
    } else if (variant == 3) { /* twiddles with offset and row stride */
      fhjit_type xt = poly(0, 1, batch, rows, e.n);
      fhjit_value x = fhjit_input(g, "x", &xt);
      fhjit_layout tl = {.offset = 6, .row_stride = e.n + 10, .index_stride = 1};
      ck_assert_int_eq(fhjit_bind_input(g, tw, NULL, &tl), FHJIT_OK);
      y = fhjit_ntt(g, x, tw, kind);
    } else { /* index stride 2 */
      fhjit_type xt = poly(0, 1, batch, rows, e.n);
      fhjit_value x = fhjit_input(g, "x", &xt);
      fhjit_layout l = {.offset = 1, .row_stride = 2 * e.n, .batch_stride = {4 * e.n},
                        .index_stride = 2};
      ck_assert_int_eq(fhjit_bind_input(g, x, NULL, &l), FHJIT_OK);
      y = fhjit_ntt(g, x, tw, kind);
    }
    ck_assert_int_ne(y, FHJIT_NO_VALUE);
    ck_assert_int_eq(fhjit_output(g, y, "y"), FHJIT_OK);
    ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
    void **in = make_inputs(&e, g, &seed, 0);
    char what[96];
    snprintf(what, sizeof what, "%s N=2^%d view variant %d kind %d", ir_radix_name(radix), logn,
             variant, (int)kind);
    free_bufs(run_both(&e, g, in, what), 1);
    free_bufs(in, fhjit_num_inputs(g));
    fhjit_graph_destroy(g);
  }
  env_free(&e);
}
END_TEST

/* ------------------------------------------------------------------ chains */

/* Runs a one-op graph on the host: op(a[, b]) with `a`, `b` dense values of
 * type t (b may be NULL); for the chains' step-by-step reference. */
static void *host_op(env *e, int op, const fhjit_type *t, const void *a, const void *b,
                     fhjit_ntt_kind kind) {
  fhjit_graph *g = fhjit_graph_create(e->ctx, "step", e->radix);
  fhjit_value x = fhjit_input(g, "a", t), v;
  if (op == IR_NTT) {
    fhjit_type tt = twiddles(t->rows, t->n);
    fhjit_value tw = fhjit_input(g, "tw", &tt);
    v = fhjit_ntt(g, x, tw, kind);
  } else {
    fhjit_value y = fhjit_input(g, "b", t);
    v = op == IR_MUL ? fhjit_mul(g, x, y) : fhjit_add_lazy(g, x, y);
  }
  ck_assert_int_ne(v, FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_output(g, v, "r"), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  fhjit_type rt;
  fhjit_result_type(g, 0, &rt);
  void *r = malloc(e->ws * (size_t)fhjit_type_elements(&rt));
  ck_assert(r);
  const void *ins[2] = {a, op == IR_NTT ? (kind < 2 ? e->fwd : e->inv) : b};
  fhjit_status st = fhjit_run_host(g, e->params, e->rows, ins, &r, 2);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
  fhjit_graph_destroy(g);
  return r;
}

static void same_words(env *e, const void *a, const void *b, int64_t words, const char *what) {
  for (int64_t i = 0; i < words; i++)
    if (tu_word(e->ws, a, i) != tu_word(e->ws, b, i))
      ck_abort_msg("%s: word %lld: %llu vs %llu", what, (long long)i,
                   (unsigned long long)tu_word(e->ws, a, i), (unsigned long long)tu_word(e->ws, b, i));
}

/* ntt_fwd(std) of a and b, products, ntt_inv(std): the negacyclic product;
 * also an output of the forward transform (an anchor that is a result and
 * feeds a later step). Against the same ops run one by one on the host. */
START_TEST(test_chain_product) {
  TU_SAMPLED(_i); /* sampled (testutil.h): r32 at the small N, r62 at the large */
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = _i & 2 ? 14 : 10;
  env e;
  env_init(&e, radix, 2, logn);
  uint64_t seed = 7 + (uint64_t)_i;
  fhjit_graph *g = fhjit_graph_create(e.ctx, "product", radix);
  int64_t batch[1] = {2};
  fhjit_type xt = poly(0, 1, batch, 2, e.n), tt = twiddles(2, e.n);
  fhjit_value a = fhjit_input(g, "a", &xt), b = fhjit_input(g, "b", &xt);
  fhjit_value tf = fhjit_input(g, "tf", &tt), ti = fhjit_input(g, "ti", &tt);
  fhjit_value fa = fhjit_ntt(g, a, tf, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value fb = fhjit_ntt(g, b, tf, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value p = fhjit_mul(g, fa, fb);
  fhjit_value c = fhjit_ntt(g, p, ti, FHJIT_NTT_TO_COEF_STD);
  ck_assert_int_eq(fhjit_output(g, c, "c"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fa, "fa"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  void **in = make_inputs(&e, g, &seed, 0);
  void **res = run_both(&e, g, in, "product chain");
  /* one by one */
  void *sa = host_op(&e, IR_NTT, &xt, in[0], NULL, FHJIT_NTT_COEF_STD_TO_NTT);
  void *sb = host_op(&e, IR_NTT, &xt, in[1], NULL, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_type nt = xt;
  void *sp = host_op(&e, IR_MUL, &nt, sa, sb, 0);
  void *sc = host_op(&e, IR_NTT, &nt, sp, NULL, FHJIT_NTT_TO_COEF_STD);
  int64_t words = fhjit_type_elements(&xt);
  same_words(&e, res[0], sc, words, "product chain vs one by one");
  same_words(&e, res[1], sa, words, "forward output vs one by one");
  /* and it is the negacyclic product, canonical (row 0 of batch 0, N small) */
  if (logn == 10) {
    uint64_t q = e.q[0];
    for (int64_t k = 0; k < e.n; k += 97) {
      unsigned __int128 acc = 0;
      for (int64_t i = 0; i < e.n; i++) {
        int64_t j = k - i;
        uint64_t ai = tu_word(e.ws, in[0], i) % q, bj = tu_word(e.ws, in[1], j >= 0 ? j : j + e.n) % q;
        uint64_t t = (uint64_t)((unsigned __int128)ai * bj % q);
        acc += j >= 0 ? t : (q - t) % q;
      }
      ck_assert_uint_eq(tu_word(e.ws, res[0], k), (uint64_t)(acc % q));
    }
  }
  free(sa), free(sb), free(sp), free(sc);
  free_bufs(res, 2);
  free_bufs(in, 4);
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* A key switch: d (coef, mont) -> forward NTT -> digit products with two
 * key digits, accumulated with add_lazy -> inverse NTT of the 2-component
 * sum, and of each component separately. */
START_TEST(test_chain_keyswitch) {
  TU_SAMPLED(_i); /* sampled (testutil.h): r32 at the small N, r62 at the large */
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = _i & 2 ? 13 : 9;
  env e;
  env_init(&e, radix, 2, logn);
  uint64_t seed = 5150 + (uint64_t)_i;
  fhjit_graph *g = fhjit_graph_create(e.ctx, "keyswitch", radix);
  fhjit_type dt = poly(0, 0, NULL, 2, e.n), tt = twiddles(2, e.n);
  fhjit_type kt = {.kind = FHJIT_KIND_KEY, .comps = 2, .digits = 2, .rows = 3, .n = e.n};
  fhjit_value d0 = fhjit_input(g, "d0", &dt), d1 = fhjit_input(g, "d1", &dt);
  fhjit_value key = fhjit_input(g, "key", &kt);
  fhjit_value tf = fhjit_input(g, "tf", &tt), ti = fhjit_input(g, "ti", &tt);
  fhjit_value f0 = fhjit_ntt(g, d0, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_value f1 = fhjit_ntt(g, d1, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_value p0 = fhjit_keyswitch_digit_product(g, f0, key, 0, 1);
  fhjit_value p1 = fhjit_keyswitch_digit_product(g, f1, key, 1, 0);
  fhjit_value acc = fhjit_add_lazy(g, p0, p1);
  fhjit_value out = fhjit_ntt(g, acc, ti, FHJIT_NTT_TO_COEF_MONT);
  fhjit_value c0 = fhjit_ntt(g, fhjit_extract(g, acc, 0), ti, FHJIT_NTT_TO_COEF_MONT);
  fhjit_value c1 = fhjit_ntt(g, fhjit_extract(g, acc, 1), ti, FHJIT_NTT_TO_COEF_STD);
  ck_assert_int_ne(c1, FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_output(g, out, "out"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, c0, "c0"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, c1, "c1"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  void **in = make_inputs(&e, g, &seed, 0);
  void **res = run_both(&e, g, in, "key switch");
  /* component 0 of out equals c0 */
  same_words(&e, res[0], res[1], 2 * e.n, "ntt of the sum, component 0, vs ntt of extract");
  free_bufs(res, 3);
  free_bufs(in, 5);
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* --------------------------------------------------------------- epilogues */

/* Results computed from an NTT's value in its last kernel (epilogues): a
 * key switch whose 2-component inverse is added to a ciphertext (only the
 * sum is an output: the transform itself is never stored), products of a
 * forward transform (one component -> one, and -> two components through a
 * key-switch product), a sum of two transforms (the earlier one read from
 * memory), a transform that is an output with a consumer, a batch axis with
 * a broadcast plaintext; with_extract adds a result that cannot be fused
 * (a component of the inverse: the final pointwise kernel then reads the
 * transform, which must be stored). */
static fhjit_graph *epilogue_graph(env *e, int with_extract) {
  fhjit_graph *g = fhjit_graph_create(e->ctx, "epi", e->radix);
  int64_t b2[1] = {2};
  fhjit_type dt = poly(0, 0, NULL, 2, e->n), tt = twiddles(2, e->n), ct = poly(2, 0, NULL, 2, e->n);
  fhjit_type bt = poly(0, 1, b2, 2, e->n);
  fhjit_type kt = {.kind = FHJIT_KIND_KEY, .comps = 2, .digits = 2, .rows = 2, .n = e->n};
  fhjit_value d0 = fhjit_input(g, "d0", &dt), d1 = fhjit_input(g, "d1", &dt);
  fhjit_value c = fhjit_input(g, "ct", &ct), key = fhjit_input(g, "key", &kt);
  fhjit_value xb = fhjit_input(g, "xb", &bt), pl = fhjit_input(g, "pl", &dt);
  fhjit_value tf = fhjit_input(g, "tf", &tt), ti = fhjit_input(g, "ti", &tt);
  fhjit_value f0 = fhjit_ntt(g, d0, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_value f1 = fhjit_ntt(g, d1, tf, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value acc = fhjit_add_lazy(g, fhjit_keyswitch_digit_product(g, f0, key, 0, 0),
                                   fhjit_keyswitch_digit_product(g, f1, key, 1, 0));
  fhjit_value out = fhjit_ntt(g, acc, ti, FHJIT_NTT_TO_COEF_MONT);
  fhjit_value yb = fhjit_ntt(g, xb, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  ck_assert_int_eq(fhjit_output(g, fhjit_add(g, out, c), "res"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_mul(g, f1, f1), "sq"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_keyswitch_digit_product(g, f1, key, 0, 0), "pp"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_sub(g, f1, f0), "diff"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, yb, "yb"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_mul(g, fhjit_neg(g, yb), pl), "nyb"), FHJIT_OK);
  if (with_extract)
    ck_assert_int_eq(fhjit_output(g, fhjit_mul(g, fhjit_extract(g, out, 1), pl), "x1"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
  return g;
}

/* _i: radix (bit 0), one-kernel or two-kernel transforms (bit 1), the
 * unfusable extra result (bit 2). Fused (host JIT) against the interpreter
 * (run_both) and against the same graph with epilogues off (FHJIT_NTT_PLAN
 * epi=0: results in the final pointwise kernel), word for word. */
START_TEST(test_epilogue) {
  TU_SAMPLED(_i);
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = _i & 2 ? 13 : 8, with_extract = (_i >> 2) & 1;
  env e;
  env_init(&e, radix, 2, logn);
  uint64_t seed = 777 + (uint64_t)_i;
  fhjit_graph *g = epilogue_graph(&e, with_extract);
  void **in = make_inputs(&e, g, &seed, _i % 3 == 2);
  void **fused = run_both(&e, g, in, "epilogues");
  setenv("FHJIT_NTT_PLAN", "epi=0", 1);
  fhjit_graph *g2 = epilogue_graph(&e, with_extract);
  void **plain = make_results(&e, g2);
  fhjit_status st = fhjit_run_host(g2, e.params, e.rows, (const void *const *)in, plain, 2);
  unsetenv("FHJIT_NTT_PLAN");
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  int32_t nr = fhjit_num_results(g);
  for (int32_t k = 0; k < nr; k++) {
    fhjit_type t;
    fhjit_result_type(g, k, &t);
    same_words(&e, fused[k], plain[k], fhjit_type_elements(&t), "fused vs one by one");
  }
  /* the GPU program: NTT kernels only (4 transforms) unless a result
   * cannot be fused; the epilogues' outputs are arguments of the last
   * kernels */
  lw_program p;
  st = lw_compile_ptx(g, "sm_90", &p);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  int per_ntt = logn <= 12 ? 1 : 2;
  ck_assert_int_eq(p.nkernels, 4 * per_ntt + with_extract);
  int epi_outs = 0;
  for (int k = 0; k < 4 * per_ntt; k++)
    for (int a = 5; a < p.kernels[k].nargs; a++) {
      const lw_arg *x = &p.kernels[k].args[a], *dst = &p.kernels[k].args[4];
      /* (a register operand's slot carries the transform's own buffer) */
      epi_outs += x->kind == LW_ARG_RESULT && !(x->kind == dst->kind && x->index == dst->index);
    }
  ck_assert_int_eq(epi_outs, 5); /* res, sq, pp, diff, nyb */
  lw_program_free(&p);
  free_bufs(fused, nr);
  free_bufs(plain, nr);
  free_bufs(in, fhjit_num_inputs(g));
  fhjit_graph_destroy(g);
  fhjit_graph_destroy(g2);
  env_free(&e);
}
END_TEST

/* Vector global loads ("ld.global.v", "ld.global.nc.v") in the PTX of g
 * under ntt_plan `plan`. */
static int vector_loads(env *e, fhjit_graph *g, const char *plan) {
  ck_assert_int_eq(fhjit_context_set_option(e->ctx, "ntt_plan", plan), FHJIT_OK);
  const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90");
  ck_assert_msg(ptx != NULL, "%s", fhjit_last_error(e->ctx));
  int n = 0;
  for (const char *p = ptx; (p = strstr(p, "ld.global.")); p++)
    n += !strncmp(p + 10, "v", 1) || !strncmp(p + 10, "nc.v", 4);
  return n;
}

/* Kernels of g's PTX under ntt_plan `plan` annotated ".minnctapersm
 * <minb>". */
static int kernels_with_minb(env *e, fhjit_graph *g, const char *plan, int minb) {
  ck_assert_int_eq(fhjit_context_set_option(e->ctx, "ntt_plan", plan), FHJIT_OK);
  const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90");
  ck_assert_msg(ptx != NULL, "%s", fhjit_last_error(e->ctx));
  char want[32];
  snprintf(want, sizeof want, ".minnctapersm %d\n", minb);
  int n = 0;
  for (const char *p = ptx; (p = strstr(p, want)); p++) n++;
  return n;
}

/* minb_epi (lw_ntt_plan.epi_minb): r32 2^16's default 10 on the last
 * kernel of each of the epilogue graph's transforms that fuses an
 * epilogue (three of the four: f1's, out's and yb's; f0 is stored),
 * minb's 6 on the other five kernels; minb_epi=0 leaves 6 on all eight;
 * minb_epi=7 puts 7 where 10 was. */
START_TEST(test_epilogue_minb) {
  env e;
  env_init(&e, FHJIT_R32, 2, 16);
  fhjit_graph *g = epilogue_graph(&e, 0);
  ck_assert_int_eq(kernels_with_minb(&e, g, NULL, 10), 3);
  ck_assert_int_eq(kernels_with_minb(&e, g, NULL, 6), 5);
  ck_assert_int_eq(kernels_with_minb(&e, g, "minb_epi=0", 10), 0);
  ck_assert_int_eq(kernels_with_minb(&e, g, "minb_epi=0", 6), 8);
  ck_assert_int_eq(kernels_with_minb(&e, g, "minb_epi=7", 7), 3);
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* g under ntt_plan off (its vector path's key =0) and on (=1), each
 * against the interpreter word for word on the host; the PTX with `on`
 * must hold more vector loads than with `off`. */
static void check_vector_plans(env *e, fhjit_graph *g, void **in, const char *off, const char *on) {
  const char *plans[2] = {off, on};
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(fhjit_context_set_option(e->ctx, "ntt_plan", plans[k]), FHJIT_OK);
    free_bufs(run_both(e, g, in, plans[k]), fhjit_num_results(g));
  }
  int scalar = vector_loads(e, g, off), vec = vector_loads(e, g, on);
  ck_assert_msg(vec > scalar, "%s: %d vector loads, %s: %d", on, vec, off, scalar);
  ck_assert_int_eq(fhjit_context_set_option(e->ctx, "ntt_plan", NULL), FHJIT_OK);
}

/* The vector epilogue (ntt_plan epivec, ntt_emit_fuse.c epi_value_vec): the
 * epilogue graph (a two-component transform's element-wise switch, keys,
 * plain operands, a batched input) with epivec=1 and epivec=0, each
 * against the interpreter word for word on the host, and the PTX of
 * epivec=1 holding more vector loads than epivec=0's (the epilogue's
 * inputs loaded V words at a time). _i: radix (bit 0), one or two kernels
 * (bit 1). */
START_TEST(test_epilogue_vec) {
  TU_SAMPLED(_i); /* sampled (testutil.h): r32 at the small N, r62 at the large */
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = _i & 2 ? 13 : 8;
  env e;
  env_init(&e, radix, 2, logn);
  uint64_t seed = 4242 + (uint64_t)_i;
  fhjit_graph *g = epilogue_graph(&e, 0);
  void **in = make_inputs(&e, g, &seed, 2);
  check_vector_plans(&e, g, in, "epivec=0", "epivec=1");
  free_bufs(in, fhjit_num_inputs(g));
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* The vector prologue (ntt_plan provec, ntt_emit_fuse.c pro_value_vec): an
 * inverse NTT whose operand is computed in its first kernel's staged load
 * (a product of two ciphertexts' components, and a plain add), stored
 * too (the product is also a result), with provec=1 and provec=0, each
 * against the interpreter word for word on the host, and more vector
 * loads in the PTX with provec=1. _i: radix (bit 0), one or two kernels
 * (bit 1). */
START_TEST(test_prologue_vec) {
  TU_SAMPLED(_i); /* sampled (testutil.h): r32 at the small N, r62 at the large */
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = _i & 2 ? 13 : 8;
  env e;
  env_init(&e, radix, 3, logn);
  uint64_t seed = 5151 + (uint64_t)_i;
  fhjit_graph *g = fhjit_graph_create(e.ctx, "provec", radix);
  fhjit_type ct = poly(2, 0, NULL, 3, e.n), tt = twiddles(3, e.n), dt = poly(0, 0, NULL, 3, e.n);
  fhjit_value x = fhjit_input(g, "x", &ct), y = fhjit_input(g, "y", &ct);
  fhjit_value z = fhjit_input(g, "z", &dt), ti = fhjit_input(g, "ti", &tt);
  fhjit_value prod = fhjit_add(g, fhjit_mul(g, fhjit_extract(g, x, 1), fhjit_extract(g, y, 0)), z);
  ck_assert_int_eq(fhjit_output(g, fhjit_ntt(g, prod, ti, FHJIT_NTT_TO_COEF_MONT), "inv"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_ntt(g, x, ti, FHJIT_NTT_TO_COEF_STD), "invx"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, prod, "prod"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  void **in = make_inputs(&e, g, &seed, _i % 3 == 2);
  check_vector_plans(&e, g, in, "provec=0", "provec=1");
  free_bufs(in, fhjit_num_inputs(g));
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* An NTT result of two components read as the plaintext operand of
 * mul_plain / add_plain (every component of the result takes the
 * plaintext's component 0) must not become an epilogue computed component
 * by component (found by fuzz_diff, seed 137: the thread holding component
 * 1 multiplied by component 1). _i: radix. */
START_TEST(test_epilogue_plain_operand) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  env e;
  env_init(&e, radix, 3, 6);
  uint64_t seed = 137;
  fhjit_graph *g = fhjit_graph_create(e.ctx, "plain_epi", radix);
  fhjit_type ct = poly(2, 0, NULL, 3, e.n), tt = twiddles(3, e.n);
  fhjit_value x = fhjit_input(g, "x", &ct), y = fhjit_input(g, "y", &ct);
  fhjit_value ti = fhjit_input(g, "ti", &tt), tf = fhjit_input(g, "tf", &tt);
  fhjit_value inv = fhjit_ntt(g, x, ti, FHJIT_NTT_TO_COEF_STD);
  fhjit_value fwd = fhjit_ntt(g, y, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  ck_assert_int_eq(fhjit_output(g, fhjit_mul_plain(g, x, inv), "mp"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_add_plain(g, y, fwd), "ap"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_mul_plain(g, fwd, y), "mp2"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  void **in = make_inputs(&e, g, &seed, 0);
  free_bufs(run_both(&e, g, in, "plaintext operand from an NTT"), fhjit_num_results(g));
  free_bufs(in, fhjit_num_inputs(g));
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* ---------------------------------------------------------------- refusals */

START_TEST(test_refusals) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "bad", FHJIT_R62);
  fhjit_type xt = poly(0, 0, NULL, 2, 48), tt = twiddles(2, 48);
  fhjit_value x = fhjit_input(g, "x", &xt), tw = fhjit_input(g, "tw", &tt);
  /* the twiddle operand must be a twiddle table, the value a polynomial */
  ck_assert_int_eq(fhjit_ntt(g, x, x, FHJIT_NTT_COEF_MONT_TO_NTT), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_TYPE);
  ck_assert_int_eq(fhjit_ntt(g, tw, tw, FHJIT_NTT_COEF_MONT_TO_NTT), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_ntt(g, x, tw, (fhjit_ntt_kind)7), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
  /* n = 48 is not a power of two */
  fhjit_value y = fhjit_ntt(g, x, tw, FHJIT_NTT_COEF_MONT_TO_NTT);
  ck_assert_int_ne(y, FHJIT_NO_VALUE);
  fhjit_output(g, y, "y");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "power of two"));
  fhjit_graph_destroy(g);

  /* domain and form facts */
  g = fhjit_graph_create(ctx, "facts", FHJIT_R62);
  xt = poly(0, 0, NULL, 2, 64);
  tt = twiddles(2, 64);
  xt.domain = FHJIT_DOMAIN_NTT;
  x = fhjit_input(g, "x", &xt);
  tw = fhjit_input(g, "tw", &tt);
  ck_assert_int_eq(fhjit_ntt(g, x, tw, FHJIT_NTT_COEF_STD_TO_NTT), FHJIT_NO_VALUE);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_TYPE);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "domain"));
  y = fhjit_ntt(g, x, tw, FHJIT_NTT_TO_COEF_STD);
  ck_assert_int_ne(y, FHJIT_NO_VALUE);
  fhjit_type yt;
  fhjit_value_type(g, y, &yt);
  ck_assert_int_eq(yt.domain, FHJIT_DOMAIN_COEF);
  ck_assert_int_eq(yt.form, FHJIT_FORM_STD);
  /* std-form coefficients cannot take the mont forward transform */
  ck_assert_int_eq(fhjit_ntt(g, y, tw, FHJIT_NTT_COEF_MONT_TO_NTT), FHJIT_NO_VALUE);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "form"));
  fhjit_graph_destroy(g);

  /* table shape, sizes beyond 2^17, moduli not 1 mod 2N */
  g = fhjit_graph_create(ctx, "shapes", FHJIT_R62);
  xt = poly(0, 0, NULL, 2, 64);
  fhjit_type t3 = twiddles(3, 64);
  x = fhjit_input(g, "x", &xt);
  tw = fhjit_input(g, "tw", &t3);
  fhjit_output(g, fhjit_ntt(g, x, tw, FHJIT_NTT_COEF_MONT_TO_NTT), "y");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "rows"));
  fhjit_graph_destroy(g);

  g = fhjit_graph_create(ctx, "huge", FHJIT_R62);
  xt = poly(0, 0, NULL, 1, INT64_C(1) << 18);
  tt = twiddles(1, INT64_C(1) << 18);
  x = fhjit_input(g, "x", &xt);
  tw = fhjit_input(g, "tw", &tt);
  fhjit_output(g, fhjit_ntt(g, x, tw, FHJIT_NTT_COEF_MONT_TO_NTT), "y");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
  fhjit_graph_destroy(g);

  g = fhjit_graph_create(ctx, "moduli", FHJIT_R62);
  uint64_t q[2] = {UINT64_C(1152921504606748673), UINT64_C(576460752303423649)};
  ck_assert_int_eq(fhjit_graph_set_moduli(g, q, 2), FHJIT_OK);
  xt = poly(0, 0, NULL, 2, 64); /* 576460752303423649 - 1 = 2^5 * odd: not 1 mod 128 */
  tt = twiddles(2, 64);
  x = fhjit_input(g, "x", &xt);
  tw = fhjit_input(g, "tw", &tt);
  fhjit_output(g, fhjit_ntt(g, x, tw, FHJIT_NTT_COEF_MONT_TO_NTT), "y");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_MODULUS);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "576460752303423649"));
  fhjit_graph_destroy(g);

  /* the interpreter refuses a wrong row 7 for an inverse transform */
  env e;
  env_init(&e, FHJIT_R62, 1, 5);
  g = fhjit_graph_create(e.ctx, "row7", FHJIT_R62);
  xt = poly(0, 0, NULL, 1, 32);
  tt = twiddles(1, 32);
  x = fhjit_input(g, "x", &xt);
  tw = fhjit_input(g, "ti", &tt);
  fhjit_output(g, fhjit_ntt(g, x, tw, FHJIT_NTT_TO_COEF_MONT), "y");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  uint64_t seed = 1;
  void **in = make_inputs(&e, g, &seed, 0);
  void **out = make_results(&e, g);
  tu_set_word(e.ws, e.params, 7, tu_word(e.ws, e.params, 7) + 1);
  ck_assert_int_eq(fhjit_interpret(g, e.params, 1, (const void *const *)in, out), FHJIT_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(e.ctx), "row 7"));
  free_bufs(in, 2);
  free_bufs(out, 1);
  fhjit_graph_destroy(g);
  env_free(&e);
  fhjit_context_destroy(ctx);
}
END_TEST

/* A graph computing ntt_fwd of one [1, 16] row, moduli stated or not. */
static fhjit_graph *ntt16_graph(fhjit_context *ctx, const uint64_t *q) {
  fhjit_graph *g = fhjit_graph_create(ctx, "ntt16", FHJIT_R32);
  if (q) ck_assert_int_eq(fhjit_graph_set_moduli(g, q, 1), FHJIT_OK);
  fhjit_type xt = poly(0, 0, NULL, 1, 16), tt = twiddles(1, 16);
  fhjit_value x = fhjit_input(g, "x", &xt), tw = fhjit_input(g, "tf", &tt);
  fhjit_output(g, fhjit_ntt(g, x, tw, FHJIT_NTT_COEF_MONT_TO_NTT), "y");
  return g;
}

/* Composite moduli that are 1 mod 2N = 32 (65 = 5 * 13, 161 = 7 * 23, the
 * Carmichael number 1729 = 7 * 13 * 19) are refused for NTT use, at bind when the graph states
 * them and by the interpreter when only the parameter table carries them;
 * a prime = 1 mod 2N (97) is accepted by both. */
START_TEST(test_composite_moduli) {
  fhjit_context *ctx = fhjit_context_create();
  const uint64_t composite[] = {65, 161, 1729}, prime = 97;
  for (size_t i = 0; i < sizeof composite / sizeof *composite; i++) {
    fhjit_graph *g = ntt16_graph(ctx, &composite[i]);
    ck_assert_msg(fhjit_bind(g) == FHJIT_ERR_MODULUS, "bind accepted q = %llu",
                  (unsigned long long)composite[i]);
    ck_assert_msg(tu_contains(fhjit_last_error(ctx), "is not prime"), "%s", fhjit_last_error(ctx));
    fhjit_graph_destroy(g);
  }
  fhjit_graph *g = ntt16_graph(ctx, &prime);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  fhjit_graph_destroy(g);

  /* no stated moduli: the interpreter checks the table's q */
  g = ntt16_graph(ctx, NULL);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  uint32_t params[8], x[16] = {0}, tw[16] = {0}, y[16];
  const void *in[2] = {x, tw};
  void *out[1] = {y};
  for (size_t i = 0; i < sizeof composite / sizeof *composite; i++) {
    ck_assert_int_eq(fhjit_param_table(ctx, FHJIT_R32, &composite[i], 1, 16, 0, 1, params, 1),
                     FHJIT_OK);
    memset(y, 0x5A, sizeof y);
    ck_assert_int_eq(fhjit_interpret(g, params, 1, in, out), FHJIT_ERR_MODULUS);
    ck_assert_msg(tu_contains(fhjit_last_error(ctx), "which is not prime"), "%s",
                  fhjit_last_error(ctx));
    ck_assert_uint_eq(y[0], 0x5A5A5A5Au); /* nothing written */
  }
  ck_assert_int_eq(fhjit_param_table(ctx, FHJIT_R32, &prime, 1, 16, 1, 1, params, 1), FHJIT_OK);
  ck_assert_int_eq(fhjit_twiddle_tables(ctx, FHJIT_R32, &prime, 1, 16, tw, NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_interpret(g, params, 1, in, out), FHJIT_OK);
  fhjit_graph_destroy(g);
  fhjit_context_destroy(ctx);
}
END_TEST

/* fhjit_input_twiddle_use: which table each input must hold. */
START_TEST(test_twiddle_use) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "use", FHJIT_R62);
  fhjit_type xt = poly(0, 0, NULL, 1, 16), tt = twiddles(1, 16);
  fhjit_value x = fhjit_input(g, "x", &xt), tf = fhjit_input(g, "tf", &tt);
  fhjit_value ti = fhjit_input(g, "ti", &tt), both = fhjit_input(g, "both", &tt);
  fhjit_input(g, "unused", &tt);
  fhjit_value f = fhjit_ntt(g, x, tf, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_output(g, fhjit_ntt(g, f, ti, FHJIT_NTT_TO_COEF_STD), "y");
  fhjit_value b = fhjit_ntt(g, x, both, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_output(g, fhjit_ntt(g, b, both, FHJIT_NTT_TO_COEF_MONT), "z");
  int use = -1;
  ck_assert_int_eq(fhjit_input_twiddle_use(g, 1, &use), FHJIT_ERR_ARGUMENT); /* unbound */
  ck_assert(tu_contains(fhjit_last_error(ctx), "not bound"));
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  const int want[5] = {0, FHJIT_TWIDDLE_FORWARD, FHJIT_TWIDDLE_INVERSE,
                       FHJIT_TWIDDLE_FORWARD | FHJIT_TWIDDLE_INVERSE, 0};
  for (int32_t i = 0; i < 5; i++) {
    ck_assert_int_eq(fhjit_input_twiddle_use(g, i, &use), FHJIT_OK);
    ck_assert_msg(use == want[i], "input %d: use %d, want %d", (int)i, use, want[i]);
  }
  ck_assert_int_eq(fhjit_input_twiddle_use(g, 5, &use), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_input_twiddle_use(g, -1, &use), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_input_twiddle_use(g, 0, NULL), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_input_twiddle_use(NULL, 0, &use), FHJIT_ERR_ARGUMENT);
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------------ twiddle tables */

/* Row r of a forward table of root psi^3 (also a primitive 2N-th root):
 * entry 2^s + g = (psi^3)^e R mod q, e = 2^(n-1-s) (1 + 2 br_s(g)), from
 * e->fwd's entry N/2 (psi R mod q), in 128-bit arithmetic. */
static void cube_root_table(env *e, int r, int logn, void *tab) {
  unsigned __int128 q = e->q[r], R = (unsigned __int128)1 << 32;
  uint64_t rinv = 1; /* R^-1 mod q by Fermat: R^(q-2) */
  for (uint64_t b = (uint64_t)(R % q), x = e->q[r] - 2; x; x >>= 1, b = (uint64_t)((unsigned __int128)b * b % q))
    if (x & 1) rinv = (uint64_t)((unsigned __int128)rinv * b % q);
  uint64_t psi = (uint64_t)((unsigned __int128)tu_word(e->ws, e->fwd, r * e->n + e->n / 2) * rinv % q);
  uint64_t psi3 = (uint64_t)((unsigned __int128)psi * psi % q * psi % q);
  for (int s = 0; s < logn; s++)
    for (int64_t g = 0; g < (INT64_C(1) << s); g++) {
      uint64_t br = 0;
      for (int b = 0; b < s; b++) br |= (uint64_t)((g >> b) & 1) << (s - 1 - b);
      uint64_t ex = (UINT64_C(1) << (logn - 1 - s)) * (1 + 2 * br), v = 1;
      for (uint64_t b = psi3, x = ex; x; x >>= 1, b = (uint64_t)((unsigned __int128)b * b % q))
        if (x & 1) v = (uint64_t)((unsigned __int128)v * b % q);
      tu_set_word(e->ws, tab, r * e->n + (INT64_C(1) << s) + g, (uint64_t)((unsigned __int128)v * R % q));
    }
}

/* r32 twiddles as products of two entries (ntt_plan twsplit, docs/ntt.md):
 * exact on the host for SPEC's tables and for the table of another root
 * (psi^3: the identity T[hi + lo] = REDC(T[hi] T[lo]) holds for any root),
 * forward and inverse; a table entry that is lazy but not canonical (+q)
 * or two entries swapped make the interpreter refuse the table, naming the
 * input, limb and entry, since the kernels would read such a table two
 * ways. r62 tables may be lazy (SPEC 5): the same +q is accepted there and
 * the host and interpreter agree. Tables at an offset and row stride with
 * twvec: vectors where aligned, words where not, the same words. */
START_TEST(test_twiddle_tables) {
  /* _i: 0 SPEC's tables, 1 the forward table of psi^3, 2 a forward entry
   * + q, 3 two inverse entries swapped (r32); 4 the + q at r62; 5 and 6
   * the tables at an offset and a row stride, the twiddles as vectors
   * (twvec): 5 off their 16-byte alignment (words then), 6 on it */
  fhjit_radix radix = _i == 4 ? FHJIT_R62 : FHJIT_R32;
  int logn = 13, rows = 2;
  env e;
  env_init(&e, radix, rows, logn);
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", _i >= 5 ? "twsplit=6,tws=0,twvec=1" : "twsplit=6,tws=0"),
                   FHJIT_OK);
  if (_i == 1) {
    uint64_t spec = tu_word(e.ws, e.fwd, e.n + 5);
    for (int r = 0; r < rows; r++) cube_root_table(&e, r, logn, e.fwd);
    ck_assert_uint_ne(tu_word(e.ws, e.fwd, e.n + 5), spec); /* another table indeed */
  }
  fhjit_graph *g = fhjit_graph_create(e.ctx, "tables", radix);
  fhjit_type xt = poly(0, 0, NULL, rows, e.n), tt = twiddles(rows, e.n);
  xt.domain = FHJIT_DOMAIN_COEF;
  fhjit_value x = fhjit_input(g, "x", &xt), tf = fhjit_input(g, "tf", &tt);
  fhjit_value ti = fhjit_input(g, "ti", &tt);
  fhjit_value f = fhjit_ntt(g, x, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  ck_assert_int_eq(fhjit_output(g, f, "f"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_ntt(g, f, ti, FHJIT_NTT_TO_COEF_MONT), "y"), FHJIT_OK);
  if (_i >= 5) {
    fhjit_layout l;
    ck_assert_int_eq(fhjit_dense_layout(&tt, &l), FHJIT_OK);
    l.offset = _i == 5 ? 2 : 4;
    l.row_stride = e.n + (_i == 5 ? 6 : 4);
    ck_assert_int_eq(fhjit_bind_input(g, tf, NULL, &l), FHJIT_OK);
    ck_assert_int_eq(fhjit_bind_input(g, ti, NULL, &l), FHJIT_OK);
  }
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  uint64_t seed = 777 + (uint64_t)_i;
  void **in = make_inputs(&e, g, &seed, 0);
  const char *want = NULL;
  if (_i == 2 || _i == 4) { /* entry 37 of limb 1 of the forward table, still below 2q */
    tu_set_word(e.ws, in[1], e.n + 37, tu_word(e.ws, in[1], e.n + 37) + e.q[1]);
    want = "twiddle table %tf, limb 1: entry 37 ";
  } else if (_i == 3) {
    uint64_t a = tu_word(e.ws, in[2], 100), b = tu_word(e.ws, in[2], 101);
    tu_set_word(e.ws, in[2], 100, b);
    tu_set_word(e.ws, in[2], 101, a);
    want = "twiddle table %ti, limb 0: entry 100 ";
  }
  if (radix == FHJIT_R32 && want) {
    void **ri = make_results(&e, g);
    ck_assert_int_eq(fhjit_interpret(g, e.params, rows, (const void *const *)in, ri), FHJIT_ERR_ARGUMENT);
    const char *msg = fhjit_last_error(e.ctx);
    ck_assert_msg(tu_contains(msg, want) && tu_contains(msg, "canonical power"), "%s", msg);
    free_bufs(ri, 2);
  } else {
    free_bufs(run_both(&e, g, in, "twiddle tables"), 2);
  }
  free_bufs(in, 3);
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* ------------------------------------------------------------------- GPU */

/* The GPU program of an anchored graph: the NTTs' kernels with their launch
 * shapes and arguments, the product fused into the inverse NTT's first
 * kernel (its inputs appended to that kernel's arguments), scratch for the
 * forward NTT's result only, PTX with shared memory, barriers and 64-bit
 * high products. */
START_TEST(test_gpu_program) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "prog", FHJIT_R62);
  fhjit_type xt = poly(2, 0, NULL, 4, INT64_C(1) << 16), tt = twiddles(4, INT64_C(1) << 16);
  fhjit_value x = fhjit_input(g, "x", &xt), tf = fhjit_input(g, "tf", &tt),
              ti = fhjit_input(g, "ti", &tt);
  fhjit_value y = fhjit_ntt(g, x, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_value z = fhjit_ntt(g, fhjit_mul(g, y, y), ti, FHJIT_NTT_TO_COEF_MONT);
  ck_assert_int_eq(fhjit_output(g, z, "z"), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  lw_program p;
  fhjit_status st = lw_compile_ptx(g, "sm_90", &p);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(ctx));
  /* forward (2 kernels), inverse (2) with the product as its prologue */
  ck_assert_int_eq(p.nkernels, 4);
  ck_assert_int_eq(p.nscratch, 1);
  ck_assert_int_eq(p.scratch_bytes[0], (INT64_C(2) << 16) * 4 * 8);
  ck_assert_ptr_nonnull(strstr(p.ptx, ".shared"));
  ck_assert_ptr_nonnull(strstr(p.ptx, "bar.sync"));
  ck_assert_ptr_nonnull(strstr(p.ptx, "mul.hi.u64"));
  for (int k = 0; k < p.nkernels; k++) {
    ck_assert_ptr_nonnull(strstr(p.ptx, p.kernels[k].name));
    ck_assert_uint_gt(p.kernels[k].grid[0], 0);
    ck_assert_uint_le(p.kernels[k].block[0], 1024);
  }
  /* kernel 0 reads input x and writes scratch; the last writes result 0 */
  ck_assert_int_eq(p.kernels[0].args[3].kind, LW_ARG_INPUT);
  ck_assert_int_eq(p.kernels[0].args[3].index, 0);
  ck_assert_int_eq(p.kernels[0].args[4].kind, LW_ARG_SCRATCH);
  /* no LW_ARG_OWN last: 8 batch rows leave kernel 0 too few blocks for
   * rowsync's default (test_ntt_emit's test_pdl) */
  ck_assert_int_eq(p.kernels[0].nargs, 5);
  /* the inverse's first kernel reads the product's operand y (scratch 0)
   * as a prologue input; its last writes result 0 */
  ck_assert_int_eq(p.kernels[2].nargs, 6);
  for (int k = 0; k < 4; k++) ck_assert_uint_eq(p.kernels[k].flags, LW_KERNEL_PDL);
  ck_assert_int_eq(p.kernels[2].args[5].kind, LW_ARG_SCRATCH);
  ck_assert_int_eq(p.kernels[2].args[5].index, 0);
  ck_assert_int_eq(p.kernels[3].args[4].kind, LW_ARG_RESULT);
  lw_program_free(&p);
  const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90");
  ck_assert_ptr_nonnull(ptx);
  ck_assert_ptr_nonnull(strstr(ptx, "bar.sync"));
  fhjit_graph_destroy(g);
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ntt_graph");
  TCase *tc = tcase_create("ntt_graph");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_composite_moduli);
  tcase_add_test(tc, test_twiddle_use);
  tcase_add_test(tc, test_gpu_program);
  tcase_add_loop_test(tc, test_views, 0, 4);
  tcase_add_loop_test(tc, test_chain_product, 0, 4);
  tcase_add_loop_test(tc, test_chain_keyswitch, 0, 4);
  tcase_add_loop_test(tc, test_epilogue_plain_operand, 0, 2);
  tcase_add_loop_test(tc, test_epilogue, 0, 8);
  tcase_add_test(tc, test_epilogue_minb);
  tcase_add_loop_test(tc, test_epilogue_vec, 0, 4);
  tcase_add_loop_test(tc, test_prologue_vec, 0, 4);
  tcase_add_loop_test(tc, test_single, 0, 28);
  tcase_add_loop_test(tc, test_twiddle_tables, 0, 7);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
