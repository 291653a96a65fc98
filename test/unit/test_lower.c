/* test_lower.c: the fused lowering (lib/lower) and its host JIT path. Every
 * result of fhjit_run_host must equal fhjit_interpret bit for bit, and single
 * ops also the independent references of testutil (tu_ref), for both radices,
 * moduli near the limits and far below, random and SPEC section 6 edge
 * inputs, strided/broadcast/offset layouts, compressed plaintexts, key
 * switching, multi-output and aliasing graphs. Also: the GPU emission path
 * (every target, every stage), errors that must be reported and never crash,
 * threading, the compile cache and concurrent compilation. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lower/lw_llvm.h"
#include "nvptx/nvptx.h"
#include "testutil.h"

#define MAXIN 16
#define GUARD 8
#define GARBAGE UINT64_C(0x7ead7ead7ead7ead)

/* ---------------------------------------------------------------- harness */

typedef struct harness {
  fhjit_context *ctx;
  fhjit_graph *g;
  fhjit_radix radix;
  int32_t rows;
  uint64_t q[8];
  void *params;
  int64_t pstride;
  void *in[MAXIN];
  int64_t in_words[MAXIN];
} harness;

/* Moduli of a radix: SPEC's primes, NTT-friendly primes near the limit and
 * far below it, the smallest odd modulus and the largest allowed (odd,
 * composite: Montgomery arithmetic needs only odd q). */
static int moduli_for(fhjit_radix radix, uint64_t *out) {
  fhjit_context *ctx = fhjit_context_create();
  int k = 0;
  if (radix == FHJIT_R32) {
    out[k++] = 268369921;
    out[k++] = 134176769;
    ck_assert_int_eq(fhjit_find_primes(ctx, 30, UINT64_C(1) << 18, 1, out + k), FHJIT_OK);
    k++;
    ck_assert_int_eq(fhjit_find_primes(ctx, 20, UINT64_C(1) << 18, 1, out + k), FHJIT_OK);
    k++;
    out[k++] = 3;
    out[k++] = (UINT64_C(1) << 30) - 1;
  } else {
    out[k++] = UINT64_C(1152921504606748673);
    out[k++] = UINT64_C(576460752303423649);
    ck_assert_int_eq(fhjit_find_primes(ctx, 60, UINT64_C(1) << 18, 1, out + k), FHJIT_OK);
    k++;
    ck_assert_int_eq(fhjit_find_primes(ctx, 36, UINT64_C(1) << 18, 1, out + k), FHJIT_OK);
    k++;
    out[k++] = 3;
    out[k++] = (UINT64_C(1) << 60) - 1;
  }
  fhjit_context_destroy(ctx);
  return k;
}

static void h_init(harness *h, fhjit_radix radix, int32_t rows) {
  memset(h, 0, sizeof *h);
  h->ctx = fhjit_context_create();
  h->radix = radix;
  h->rows = rows;
  uint64_t all[8];
  int k = moduli_for(radix, all);
  for (int32_t r = 0; r < rows; r++) h->q[r] = all[(r * 5 + 1) % k]; /* a mix of sizes */
  h->pstride = rows + 3;
  h->params = calloc(8 * (size_t)h->pstride, tu_ws(radix));
  ck_assert_int_eq(fhjit_param_table(h->ctx, radix, h->q, rows, 0, 0, 1, h->params, h->pstride),
                   FHJIT_OK);
  h->g = fhjit_graph_create(h->ctx, "t", radix);
}

static void h_free(harness *h) {
  for (int i = 0; i < MAXIN; i++) free(h->in[i]);
  free(h->params);
  fhjit_context_destroy(h->ctx);
}

static void h_bind(harness *h) {
  fhjit_status st = fhjit_bind(h->g);
  ck_assert_msg(st == FHJIT_OK, "bind: %s", fhjit_last_error(h->ctx));
}

/* Words a layout reaches (its last element + 1). */
static int64_t layout_words(const fhjit_type *t, const fhjit_layout *l) {
  int64_t last = l->offset;
  if (t->comps > 0) last += (t->comps - 1) * l->comp_stride;
  if (t->kind == FHJIT_KIND_KEY) last += (t->digits - 1) * l->digit_stride;
  for (int a = 0; a < t->nbatch; a++) last += (t->batch[a] - 1) * l->batch_stride[a];
  last += (t->rows - 1) * l->row_stride + (t->n - 1) * l->index_stride;
  return last + 1;
}

/* Fills every input with lazy values: each word below 2q of every limb it is
 * read with (the smallest modulus for key tables), one in eight an edge
 * value; words no element maps to hold garbage that must never be read. */
static void h_fill(harness *h, uint64_t seed) {
  uint64_t state = seed;
  uint64_t qmin = h->q[0];
  for (int32_t r = 1; r < h->rows; r++) qmin = h->q[r] < qmin ? h->q[r] : qmin;
  for (int32_t i = 0; i < h->g->ninputs; i++) {
    fhjit_type t;
    fhjit_layout l;
    ck_assert_int_eq(fhjit_input_binding(h->g, i, &t, &l), FHJIT_OK);
    int64_t words = layout_words(&t, &l);
    free(h->in[i]);
    h->in[i] = malloc((size_t)words * tu_ws(h->radix));
    h->in_words[i] = words;
    uint64_t *bound = calloc((size_t)words, sizeof *bound);
    int64_t outer = (t.comps > 0 ? t.comps : 1) * (t.kind == FHJIT_KIND_KEY ? t.digits : 1);
    int64_t nb = 1;
    for (int a = 0; a < t.nbatch; a++) nb *= t.batch[a];
    for (int64_t o = 0; o < outer; o++)
      for (int64_t b = 0; b < nb; b++)
        for (int64_t r = 0; r < t.rows; r++)
          for (int64_t x = 0; x < t.n; x++) {
            int64_t c = t.comps > 0 ? o % t.comps : 0, d = t.comps > 0 ? o / t.comps : o;
            int64_t off = l.offset + c * l.comp_stride + d * l.digit_stride + r * l.row_stride +
                          x * l.index_stride, rest = b;
            for (int a = t.nbatch - 1; a >= 0; a--) {
              off += (rest % t.batch[a]) * l.batch_stride[a];
              rest /= t.batch[a];
            }
            uint64_t q = t.kind == FHJIT_KIND_KEY ? qmin : h->q[r];
            if (!bound[off] || 2 * q < bound[off]) bound[off] = 2 * q;
          }
    for (int64_t w = 0; w < words; w++)
      tu_set_word(tu_ws(h->radix), h->in[i], w, bound[w] ? tu_lazy(&state, bound[w] / 2) : GARBAGE);
    free(bound);
  }
}

/* Runs the interpreter and the host JIT (with `threads`) and requires equal
 * results, untouched guard words after each result and untouched inputs.
 * Returns the interpreter's results (caller frees each and the array). */
static void **h_check(harness *h, int threads) {
  fhjit_graph *g = h->g;
  size_t ws = tu_ws(h->radix);
  int32_t nres = fhjit_num_results(g);
  void **ref = calloc((size_t)nres + 1, sizeof *ref), **out = calloc((size_t)nres + 1, sizeof *out);
  int64_t *words = calloc((size_t)nres + 1, sizeof *words);
  for (int32_t k = 0; k < nres; k++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, k, &t), FHJIT_OK);
    words[k] = fhjit_type_elements(&t);
    ref[k] = malloc((size_t)(words[k] + GUARD) * ws);
    out[k] = malloc((size_t)(words[k] + GUARD) * ws);
    for (int64_t w = 0; w < words[k] + GUARD; w++) {
      tu_set_word(ws, ref[k], w, GARBAGE);
      tu_set_word(ws, out[k], w, GARBAGE ^ 1);
    }
  }
  void *copy[MAXIN] = {0};
  for (int32_t i = 0; i < g->ninputs; i++) {
    copy[i] = malloc((size_t)h->in_words[i] * ws);
    memcpy(copy[i], h->in[i], (size_t)h->in_words[i] * ws);
  }
  fhjit_status st = fhjit_interpret(g, h->params, h->pstride, (const void *const *)h->in, ref);
  ck_assert_msg(st == FHJIT_OK, "interpret: %s", fhjit_last_error(h->ctx));
  st = fhjit_run_host(g, h->params, h->pstride, (const void *const *)h->in, out, threads);
  ck_assert_msg(st == FHJIT_OK, "run_host: %s", fhjit_last_error(h->ctx));
  for (int32_t k = 0; k < nres; k++) {
    for (int64_t w = 0; w < words[k]; w++) {
      uint64_t a = tu_word(ws, ref[k], w), b = tu_word(ws, out[k], w);
      ck_assert_msg(a == b, "result %d word %lld: interpreter %llu, host JIT %llu", (int)k,
                    (long long)w, (unsigned long long)a, (unsigned long long)b);
    }
    for (int64_t w = words[k]; w < words[k] + GUARD; w++)
      ck_assert_msg(tu_word(ws, out[k], w) == (uint64_t)(h->radix == FHJIT_R32 ? (uint32_t)(GARBAGE ^ 1) : (GARBAGE ^ 1)),
                    "result %d: the host JIT wrote past its end", (int)k);
    free(out[k]);
  }
  for (int32_t i = 0; i < g->ninputs; i++) {
    ck_assert_msg(memcmp(copy[i], h->in[i], (size_t)h->in_words[i] * ws) == 0,
                  "input %d was modified", (int)i);
    free(copy[i]);
  }
  free(out);
  free(words);
  return ref;
}

static void free_results(void **r, int32_t n) {
  for (int32_t k = 0; k < n; k++) free(r[k]);
  free(r);
}

static void h_check_free(harness *h, int threads) {
  free_results(h_check(h, threads), fhjit_num_results(h->g));
}

/* ------------------------------------------------------------- single ops */

static fhjit_value single_op(fhjit_graph *g, tu_op op, fhjit_value a, fhjit_value b) {
  switch (op) {
  case TU_ADD: return fhjit_add(g, a, b);
  case TU_SUB: return fhjit_sub(g, a, b);
  case TU_NEG: return fhjit_neg(g, a);
  case TU_ADD_LAZY: return fhjit_add_lazy(g, a, b);
  case TU_MUL: return fhjit_mul(g, a, b);
  case TU_TO_MONT: return fhjit_to_mont(g, a);
  case TU_FROM_MONT: return fhjit_from_mont(g, a);
  default: return FHJIT_NO_VALUE;
  }
}

/* out = op(a, b) over [rows, n]: every element against tu_ref (and the
 * interpreter); the first six indices of each row are SPEC's edge pairs. */
static void check_single_ops(fhjit_radix radix, int64_t n) {
  size_t ws = tu_ws(radix);
  for (int op = 0; op < TU_NUM_OPS; op++) {
    harness h;
    h_init(&h, radix, 6);
    fhjit_type t = tu_poly(0, 0, NULL, 6, n);
    fhjit_value a = fhjit_input(h.g, "a", &t), b = fhjit_input(h.g, "b", &t);
    ck_assert_int_eq(fhjit_output(h.g, single_op(h.g, (tu_op)op, a, b), "out"), FHJIT_OK);
    h_bind(&h);
    h_fill(&h, 1000 + (uint64_t)op);
    for (int32_t r = 0; r < 6; r++) {
      uint64_t q = h.q[r];
      uint64_t pairs[6][2] = {{0, 2 * q - 1}, {q - 1, q}, {q, q - 1},
                              {2 * q - 1, 1}, {2 * q - 1, 2 * q - 1}, {0, 0}};
      for (int j = 0; j < 6 && j < n; j++) {
        tu_set_word(ws, h.in[0], r * n + j, pairs[j][0]);
        tu_set_word(ws, h.in[1], r * n + j, pairs[j][1]);
      }
    }
    void **res = h_check(&h, 1);
    for (int32_t r = 0; r < 6; r++)
      for (int64_t i = 0; i < n; i++) {
        uint64_t x = tu_word(ws, h.in[0], r * n + i), y = tu_word(ws, h.in[1], r * n + i);
        uint64_t want = tu_ref(radix, (tu_op)op, h.q[r], x, y);
        uint64_t got = tu_word(ws, res[0], r * n + i);
        ck_assert_msg(got == want, "%s %s q=%llu a=%llu b=%llu: got %llu, want %llu",
                      ir_radix_name(radix), tu_op_name((tu_op)op), (unsigned long long)h.q[r],
                      (unsigned long long)x, (unsigned long long)y, (unsigned long long)got,
                      (unsigned long long)want);
      }
    free_results(res, 1);
    h_free(&h);
  }
}

START_TEST(test_single_ops) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int64_t ns[] = {256, 7, 6}; /* vector lanes; one lane (odd n); n % 4 != 0 for r32 */
  check_single_ops(radix, ns[_i / 2]);
}
END_TEST

/* -------------------------------------------------- plaintexts, compression */

START_TEST(test_plain_ops) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  harness h;
  h_init(&h, radix, 3);
  int64_t b2[] = {2};
  fhjit_type ct = tu_poly(2, 1, b2, 3, 16), pt = tu_poly(0, 0, NULL, 3, 16);
  fhjit_type pt1 = tu_poly(1, 1, (int64_t[]){1}, 3, 16);
  fhjit_value c = fhjit_input(h.g, "c", &ct), p = fhjit_input(h.g, "p", &pt);
  fhjit_value p1 = fhjit_input(h.g, "p1", &pt1);
  fhjit_output(h.g, fhjit_mul_plain(h.g, c, p), "mp");
  fhjit_output(h.g, fhjit_add_plain(h.g, c, p1), "ap");
  fhjit_output(h.g, fhjit_mul_plain(h.g, fhjit_add_plain(h.g, c, p), p1), "both");
  h_bind(&h);
  h_fill(&h, 7);
  h_check_free(&h, 1);
  h_free(&h);
}
END_TEST

/* Every compressed layout, op and domain for several u (repeat 1, u < vec,
 * u and repeat multiples of vec or not). */
static void check_compressed(fhjit_radix radix, int64_t n, int64_t u) {
  for (int layout = 0; layout < 3; layout++)
    for (int kind = 0; kind < 3; kind++) {
      harness h;
      h_init(&h, radix, 2);
      fhjit_type ct = tu_poly(3, 1, (int64_t[]){2}, 2, n);
      fhjit_type pt = tu_poly(0, 1, (int64_t[]){2}, 2, u);
      fhjit_type im = tu_poly(0, 0, NULL, 2, 1);
      fhjit_value c = fhjit_input(h.g, "c", &ct), p = fhjit_input(h.g, "p", &pt);
      fhjit_value imp = layout == FHJIT_STRIDED_SPARSE ? fhjit_input(h.g, "imp", &im) : FHJIT_NO_VALUE;
      fhjit_value r = kind == 0   ? fhjit_mul_compressed(h.g, c, p, layout, imp)
                      : kind == 1 ? fhjit_add_compressed(h.g, c, p, layout, imp, FHJIT_DOMAIN_COEF)
                                  : fhjit_add_compressed(h.g, c, p, layout, imp, FHJIT_DOMAIN_NTT);
      ck_assert_msg(r != FHJIT_NO_VALUE, "%s", fhjit_last_error(h.ctx));
      fhjit_output(h.g, r, "out");
      h_bind(&h);
      h_fill(&h, (uint64_t)(layout * 10 + kind + 100 * u));
      h_check_free(&h, 1);
      h_free(&h);
    }
}

START_TEST(test_compressed) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  static const int64_t cases[][2] = {{64, 64}, {64, 32}, {64, 16}, {64, 8}, {64, 2}, {64, 1},
                                     {12, 3}, {12, 6}, {12, 4}, {12, 12}, {12, 1}, {10, 5}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    check_compressed(radix, cases[k][0], cases[k][1]);
}
END_TEST

/* Compressed plaintexts that are computed values, nested compression and a
 * computed implicit operand: each evaluated at remapped indices. */
START_TEST(test_computed_compressed) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  harness h;
  h_init(&h, radix, 3);
  fhjit_type ct = tu_poly(2, 0, NULL, 3, 32), pu = tu_poly(0, 0, NULL, 3, 8);
  fhjit_type pv = tu_poly(0, 0, NULL, 3, 2), im = tu_poly(0, 0, NULL, 3, 1);
  fhjit_value c = fhjit_input(h.g, "c", &ct);
  fhjit_value p1 = fhjit_input(h.g, "p1", &pu), p2 = fhjit_input(h.g, "p2", &pu);
  fhjit_value pp = fhjit_input(h.g, "pp", &pv), i1 = fhjit_input(h.g, "i1", &im);
  fhjit_value prod = fhjit_mul(h.g, p1, p2);                                  /* n = 8 */
  fhjit_value nested = fhjit_mul_compressed(h.g, prod, pp, FHJIT_CYCLIC, FHJIT_NO_VALUE);
  fhjit_value imp = fhjit_from_mont(h.g, i1);
  fhjit_value r1 = fhjit_mul_compressed(h.g, c, nested, FHJIT_CONTIGUOUS, FHJIT_NO_VALUE);
  fhjit_value r2 = fhjit_add_compressed(h.g, r1, prod, FHJIT_STRIDED_SPARSE, imp, FHJIT_DOMAIN_COEF);
  fhjit_value r3 = fhjit_mul_compressed(h.g, c, prod, FHJIT_CYCLIC, FHJIT_NO_VALUE);
  fhjit_output(h.g, r2, "r2");
  fhjit_output(h.g, fhjit_add(h.g, r3, c), "r3");
  h_bind(&h);
  h_fill(&h, 3);
  h_check_free(&h, 1);
  h_free(&h);
}
END_TEST

/* ------------------------------------------------------------ key switch */

static void check_keyswitch(fhjit_radix radix, int64_t n, int strided) {
  harness h;
  h_init(&h, radix, 6);
  /* d over limbs 0..3; key rows 0..5, rows 2..5 used by row_start 2. */
  fhjit_type d = tu_poly(0, 1, (int64_t[]){2}, 4, n);
  fhjit_type key = tu_key(3, 6, n);
  fhjit_value d0 = fhjit_input(h.g, "d0", &d), d1 = fhjit_input(h.g, "d1", &d);
  fhjit_value k = fhjit_input(h.g, "key", &key);
  if (strided) {
    /* [digits, 2, rows, n] padded: n+3 per row, an offset, comp and digit
     * strides that are not multiples of the vector width */
    fhjit_layout l = {.offset = 3, .index_stride = 1, .row_stride = n + 3,
                      .comp_stride = 6 * (n + 3) + 1, .digit_stride = 13 * (n + 3) + 5};
    ck_assert_int_eq(fhjit_bind_input(h.g, k, NULL, &l), FHJIT_OK);
    fhjit_layout ld = {.offset = 0, .index_stride = 2, .row_stride = 2 * n,
                       .batch_stride = {8 * n}};
    ck_assert_int_eq(fhjit_bind_input(h.g, d1, NULL, &ld), FHJIT_OK);
  }
  fhjit_value a = fhjit_keyswitch_digit_product(h.g, d0, k, 0, 2);
  fhjit_value b = fhjit_keyswitch_digit_product(h.g, d1, k, 2, 1);
  fhjit_output(h.g, fhjit_add_lazy(h.g, a, b), "acc");
  fhjit_output(h.g, b, "b");
  h_bind(&h);
  h_fill(&h, 11 + (uint64_t)strided);
  h_check_free(&h, 1);
  h_free(&h);
}

START_TEST(test_keyswitch) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  check_keyswitch(radix, 16, 0);
  check_keyswitch(radix, 16, 1);
  check_keyswitch(radix, 6, 0);
  check_keyswitch(radix, 5, 1);
}
END_TEST

/* --------------------------------------------------------------- layouts */

START_TEST(test_layouts) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int64_t n = 16, rows = 3;
  harness h;
  h_init(&h, radix, (int32_t)rows);
  fhjit_type ct = tu_poly(2, 2, (int64_t[]){2, 3}, rows, n);
  fhjit_type b1 = tu_poly(0, 2, (int64_t[]){1, 3}, rows, n);
  fhjit_type b0 = tu_poly(1, 0, NULL, rows, n);
  fhjit_type b3 = tu_poly(0, 1, (int64_t[]){3}, rows, n);
  fhjit_value a = fhjit_input(h.g, "a", &ct);  /* padded, odd offset: scalar loads */
  fhjit_value e = fhjit_input(h.g, "e", &ct);  /* padded, aligned offset: vector loads */
  fhjit_value t = fhjit_input(h.g, "t", &b1);  /* transposed: index stride = rows */
  fhjit_value s = fhjit_input(h.g, "s", &b0);  /* broadcast along the index (stride 0) */
  fhjit_value z = fhjit_input(h.g, "z", &b3);  /* batch axis broadcast by stride 0 */
  fhjit_value w = fhjit_input(h.g, "w", &b3);  /* index stride 2 */
  fhjit_layout la = {.offset = 5, .index_stride = 1, .row_stride = n + 3,
                     .batch_stride = {3 * 3 * (n + 3) + 7, 3 * (n + 3) + 1}, .comp_stride = 500};
  fhjit_layout le = {.offset = 8, .index_stride = 1, .row_stride = n + 4,
                     .batch_stride = {3 * 3 * (n + 4) + 4, 3 * (n + 4)}, .comp_stride = 504};
  fhjit_layout lt = {.offset = 0, .index_stride = rows, .row_stride = 1,
                     .batch_stride = {0, rows * n}};
  fhjit_layout ls = {.offset = 2, .index_stride = 0, .row_stride = 1};
  fhjit_layout lz = {.offset = 1, .index_stride = 1, .row_stride = n, .batch_stride = {0}};
  fhjit_layout lw = {.offset = 0, .index_stride = 2, .row_stride = 2 * n + 1,
                     .batch_stride = {rows * (2 * n + 1)}};
  ck_assert_int_eq(fhjit_bind_input(h.g, a, NULL, &la), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind_input(h.g, e, NULL, &le), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind_input(h.g, t, NULL, &lt), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind_input(h.g, s, NULL, &ls), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind_input(h.g, z, NULL, &lz), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind_input(h.g, w, NULL, &lw), FHJIT_OK);
  fhjit_value x = fhjit_add_lazy(h.g, fhjit_mul(h.g, a, e), fhjit_sub(h.g, t, s));
  fhjit_value y = fhjit_mul(h.g, fhjit_neg(h.g, z), fhjit_to_mont(h.g, w));
  fhjit_output(h.g, fhjit_add(h.g, x, y), "sum");
  fhjit_output(h.g, fhjit_from_mont(h.g, t), "tt"); /* batch [1, 3]: broadcast result */
  fhjit_output(h.g, fhjit_neg(h.g, s), "ss");       /* no batch axes */
  h_bind(&h);
  ck_assert_int_eq(fhjit_num_results(h.g), 3);
  h_fill(&h, 5);
  h_check_free(&h, 1);
  h_check_free(&h, 3);
  h_free(&h);
}
END_TEST

/* -------------------------------------------------- outputs and aliasing */

START_TEST(test_outputs_aliasing) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  harness h;
  h_init(&h, radix, 2);
  fhjit_type ct = tu_poly(2, 1, (int64_t[]){3}, 2, 8), pt = tu_poly(0, 0, NULL, 2, 8);
  fhjit_value x = fhjit_input(h.g, "x", &ct), p = fhjit_input(h.g, "p", &pt);
  fhjit_value s = fhjit_add(h.g, x, p), m = fhjit_mul(h.g, x, p);
  fhjit_value parts[2] = {fhjit_extract(h.g, x, 1), fhjit_extract(h.g, x, 0)};
  fhjit_value pk = fhjit_pack(h.g, 2, parts);
  fhjit_output(h.g, x, "x_alias");
  fhjit_output(h.g, fhjit_extract(h.g, x, 1), "x1_alias");
  fhjit_output(h.g, p, "p_alias");
  fhjit_output(h.g, s, "s");
  fhjit_output(h.g, s, "s_again");
  fhjit_output(h.g, fhjit_extract(h.g, s, 0), "s0");          /* view of result s */
  fhjit_output(h.g, fhjit_extract(h.g, m, 1), "m1");          /* materialises m */
  fhjit_output(h.g, pk, "packed");                            /* pack of input views */
  fhjit_output(h.g, fhjit_neg(h.g, p), "np");                 /* broadcast over batch */
  h_bind(&h);
  ck_assert_int_eq(fhjit_num_outputs(h.g), 9);
  ck_assert_int_eq(fhjit_num_results(h.g), 4); /* s, m, packed, np */
  fhjit_output_info oi;
  ck_assert_int_eq(fhjit_output_info_get(h.g, 1, &oi), FHJIT_OK);
  ck_assert_int_eq(oi.is_input_alias, 1);
  h_fill(&h, 9);
  h_check_free(&h, 2);
  /* The PTX stores exactly the materialised components: s (2), m (2),
   * packed (2), np (1) = 7 vector stores when n % vec == 0. */
  const char *ptx = fhjit_emit(h.g, FHJIT_EMIT_PTX, "sm_90");
  ck_assert_msg(ptx != NULL, "%s", fhjit_last_error(h.ctx));
  int stores = 0;
  for (const char *c = ptx; (c = strstr(c, "st.global")); c++) stores++;
  ck_assert_int_eq(stores, 7);
  h_free(&h);
}
END_TEST

/* Results of lower batch rank and results with broadcast batch axes: each is
 * stored once, by the threads whose coordinate on those axes is 0. */
START_TEST(test_broadcast_results) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  harness h;
  h_init(&h, radix, 2);
  fhjit_type big = tu_poly(0, 3, (int64_t[]){2, 1, 3}, 2, 4);
  fhjit_type mid = tu_poly(2, 2, (int64_t[]){4, 1}, 2, 4);
  fhjit_type small = tu_poly(0, 0, NULL, 2, 4);
  fhjit_value b = fhjit_input(h.g, "b", &big), m = fhjit_input(h.g, "m", &mid);
  fhjit_value s = fhjit_input(h.g, "s", &small);
  fhjit_output(h.g, fhjit_mul(h.g, b, m), "bm"); /* batch [2, 4, 3] */
  fhjit_output(h.g, fhjit_neg(h.g, m), "nm");    /* [4, 1] */
  fhjit_output(h.g, fhjit_to_mont(h.g, s), "ts"); /* none */
  fhjit_output(h.g, fhjit_add(h.g, b, s), "bs");  /* [2, 1, 3] */
  h_bind(&h);
  /* three of the four results are broadcast along some walk axis: their
   * stores are conditional (one store per element, not one per thread) */
  const char *ll = fhjit_emit(h.g, FHJIT_EMIT_LLVM, "sm_90");
  ck_assert_ptr_nonnull(ll);
  int conditional = 0;
  for (const char *c = ll; (c = strstr(c, "label %store")); c++) conditional++;
  ck_assert_int_eq(conditional, 3);
  h_fill(&h, 21);
  h_check_free(&h, 1);
  h_check_free(&h, 4);
  h_free(&h);
}
END_TEST

/* A graph with every op and both an escaping intermediate and CSE. */
START_TEST(test_everything_graph) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  harness h;
  h_init(&h, radix, 4);
  fhjit_type ct = tu_poly(2, 1, (int64_t[]){2}, 4, 32), pt = tu_poly(0, 0, NULL, 4, 32);
  fhjit_type cp = tu_poly(0, 0, NULL, 4, 8), key = tu_key(2, 4, 32);
  fhjit_value a = fhjit_input(h.g, "a", &ct), b = fhjit_input(h.g, "b", &ct);
  fhjit_value p = fhjit_input(h.g, "p", &pt), c = fhjit_input(h.g, "c", &cp);
  fhjit_value k = fhjit_input(h.g, "k", &key);
  fhjit_value t0 = fhjit_mul(h.g, a, b);
  fhjit_value t1 = fhjit_add(h.g, t0, fhjit_sub(h.g, a, b));
  fhjit_value t2 = fhjit_add_lazy(h.g, fhjit_neg(h.g, t1), fhjit_to_mont(h.g, t0));
  fhjit_value t3 = fhjit_from_mont(h.g, fhjit_mul_plain(h.g, t2, p));
  fhjit_value t4 = fhjit_add_plain(h.g, t3, p);
  fhjit_value t5 = fhjit_mul_compressed(h.g, t4, c, FHJIT_CONTIGUOUS, FHJIT_NO_VALUE);
  fhjit_value t6 = fhjit_add_compressed(h.g, t5, c, FHJIT_CYCLIC, FHJIT_NO_VALUE, FHJIT_DOMAIN_NTT);
  fhjit_value e1 = fhjit_extract(h.g, t6, 1);
  fhjit_value ks = fhjit_keyswitch_digit_product(h.g, e1, k, 1, 0);
  fhjit_value parts[2] = {fhjit_extract(h.g, ks, 0), fhjit_extract(h.g, t6, 0)};
  fhjit_value pk = fhjit_pack(h.g, 2, parts);
  fhjit_output(h.g, fhjit_add_lazy(h.g, pk, t0), "out");
  fhjit_output(h.g, t2, "t2"); /* escaping intermediate */
  h_bind(&h);
  h_fill(&h, 33);
  h_check_free(&h, 1);
  h_free(&h);
}
END_TEST

/* -------------------------------------------------- threads, cache, idx64 */

START_TEST(test_threads_cache_idx64) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  harness h;
  h_init(&h, radix, 4);
  fhjit_type ct = tu_poly(2, 1, (int64_t[]){3}, 4, 4096);
  fhjit_value a = fhjit_input(h.g, "a", &ct), b = fhjit_input(h.g, "b", &ct);
  fhjit_output(h.g, fhjit_add_lazy(h.g, fhjit_mul(h.g, a, b), a), "o");
  h_bind(&h);
  h_fill(&h, 77);
  h_check_free(&h, 0); /* 98304 elements: automatic threads */
  void *first = h.g->compiled;
  ck_assert_ptr_nonnull(first);
  h_check_free(&h, 3);
  h_check_free(&h, 1);
  ck_assert_ptr_eq(h.g->compiled, first); /* cached */
  lw_force_idx64 = 1;
  h_bind(&h); /* rebinding drops the compiled function */
  ck_assert_ptr_null(h.g->compiled);
  h_check_free(&h, 2);
  const char *ll = fhjit_emit(h.g, FHJIT_EMIT_LLVM, "sm_90");
  lw_force_idx64 = 0;
  ck_assert_msg(ll && strstr(ll, "i64 %group"), "64-bit indexing expected");
  h_free(&h);
}
END_TEST

/* Results written over inputs (in place, or overlapping a broadcast input
 * that other elements still read): the host run must match the
 * interpreter, which computes everything before writing. */
START_TEST(test_overlapping_buffers) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  for (int mode = 0; mode < 2; mode++) {
    harness h;
    h_init(&h, radix, 2);
    fhjit_type ct = tu_poly(2, 1, (int64_t[]){3}, 2, 16), pt = tu_poly(0, 0, NULL, 2, 16);
    fhjit_value c = fhjit_input(h.g, "c", &ct), p = fhjit_input(h.g, "p", &pt);
    fhjit_output(h.g, fhjit_add(h.g, fhjit_mul_plain(h.g, c, p), c), "out");
    h_bind(&h);
    h_fill(&h, 40 + (uint64_t)mode);
    /* one arena holding p then c; the result starts at c (mode 0: in place)
     * or at p (mode 1: over p, which every batch entry reads, and half of c) */
    size_t w = tu_ws(radix);
    int64_t np = h.in_words[1], nc = h.in_words[0], total = np + 3 * nc;
    unsigned char *arena[2];
    for (int k = 0; k < 2; k++) {
      arena[k] = malloc((size_t)total * w);
      memset(arena[k], 0x5a, (size_t)total * w);
      memcpy(arena[k], h.in[1], (size_t)np * w);
      memcpy(arena[k] + np * w, h.in[0], (size_t)nc * w);
    }
    for (int k = 0; k < 2; k++) {
      const void *ins[2] = {arena[k] + np * w, arena[k]};
      void *outs[1] = {mode == 0 ? arena[k] + np * w : arena[k]};
      fhjit_status st = k == 0 ? fhjit_interpret(h.g, h.params, h.pstride, ins, outs)
                               : fhjit_run_host(h.g, h.params, h.pstride, ins, outs, 2);
      ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(h.ctx));
    }
    ck_assert_msg(memcmp(arena[0], arena[1], (size_t)total * w) == 0,
                  "mode %d: the host run differs from the interpreter", mode);
    free(arena[0]);
    free(arena[1]);
    h_free(&h);
  }
}
END_TEST

/* ---------------------------------------------------------- GPU emission */

static fhjit_graph *small_graph(fhjit_context *ctx, fhjit_radix radix, const char *name) {
  fhjit_graph *g = fhjit_graph_create(ctx, name, radix);
  fhjit_type ct = tu_poly(2, 0, NULL, 4, 1024), pt = tu_poly(0, 0, NULL, 4, 1024);
  fhjit_value a = fhjit_input(g, "a", &ct), p = fhjit_input(g, "p", &pt);
  fhjit_output(g, fhjit_add(g, fhjit_mul_plain(g, a, p), a), "out");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  return g;
}

START_TEST(test_emit_targets) {
  fhjit_context *ctx = fhjit_context_create();
  for (int radix = 0; radix < 2; radix++) {
    fhjit_graph *g = small_graph(ctx, (fhjit_radix)radix, "my.graph");
    const char *const *targets = fhjit_targets();
    int count = 0;
    for (; targets[count]; count++) {
      const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, targets[count]);
      ck_assert_msg(ptx != NULL, "%s: %s", targets[count], fhjit_last_error(ctx));
      char want[32];
      snprintf(want, sizeof want, ".target %s", targets[count]);
      ck_assert_msg(strstr(ptx, want), "%s missing", want);
      ck_assert(strstr(ptx, ".entry fhjit_my_graph("));
      ck_assert(strstr(ptx, ".maxntid 256, 1, 1"));
      ck_assert(strstr(ptx, radix ? "ld.global.nc.v2.u64" : "ld.global.nc.v4.u32"));
      ck_assert(strstr(ptx, radix ? "mul.hi.u64" : "mul.wide.u32"));
    }
    ck_assert_int_ge(count, 6);
    const char *ll = fhjit_emit(g, FHJIT_EMIT_LLVM, NULL);
    ck_assert(ll && strstr(ll, "define ptx_kernel void @fhjit_my_graph(") &&
              strstr(ll, "\"maxntidx\", i32 256"));
    ck_assert(strstr(ll, radix ? "@fhjit.r62.mul" : "@fhjit.r32.mul"));
    const char *opt = fhjit_emit(g, FHJIT_EMIT_LLVM_OPT, "sm_80");
    ck_assert(opt && !strstr(opt, "@fhjit.r") && strstr(opt, "noalias")); /* inlined */
    /* the default target is sm_90 */
    const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, NULL);
    ck_assert(ptx && strstr(ptx, ".target sm_90\n"));
    lw_program prog;
    ck_assert_int_eq(lw_compile_ptx(g, "sm_86", &prog), FHJIT_OK);
    ck_assert_int_eq(prog.nkernels, 1);
    ck_assert_str_eq(prog.kernels[0].name, "fhjit_my_graph");
    ck_assert_int_eq(prog.kernels[0].block[0], 256);
    /* 4 * 1024 elements, 16 bytes per thread */
    ck_assert_int_eq(prog.kernels[0].grid[0], radix ? 8 : 4);
    ck_assert_int_eq(prog.kernels[0].nargs, 5);
    ck_assert_int_eq(prog.kernels[0].args[1].kind, LW_ARG_PSTRIDE);
    ck_assert_int_eq(prog.kernels[0].args[3].kind, LW_ARG_INPUT);
    ck_assert_int_eq(prog.kernels[0].args[3].index, 1);
    ck_assert_int_eq(prog.kernels[0].args[4].kind, LW_ARG_RESULT);
    ck_assert(strstr(prog.ptx, ".target sm_86"));
    lw_program_free(&prog);
  }
  fhjit_context_destroy(ctx);
}
END_TEST

/* Number of PTX instructions of each opcode, as "opcode count" lines. */
static void opcode_histogram(const char *ptx, char *out, size_t size) {
  char names[256][48];
  int counts[256], n = 0;
  for (const char *line = ptx; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    if (*line != '\t') continue;
    char op[48];
    if (sscanf(line, " %47s", op) != 1 || op[0] == '/' || op[0] == '.' || op[0] == '{' || op[0] == '}')
      continue;
    int k = 0;
    while (k < n && strcmp(names[k], op)) k++;
    if (k == n && n < 256) strcpy(names[n], op), counts[n++] = 0;
    if (k < n) counts[k]++;
  }
  size_t used = 0;
  out[0] = 0;
  for (int k = 0; k < n; k++) /* names in first-seen order: compare as sorted sets */
    for (int j = k + 1; j < n; j++)
      if (strcmp(names[j], names[k]) < 0) {
        char t[48]; /* whole rows: k < j, never the same one */
        memcpy(t, names[k], sizeof t), memcpy(names[k], names[j], sizeof t), memcpy(names[j], t, sizeof t);
        int c = counts[k];
        counts[k] = counts[j], counts[j] = c;
      }
  for (int k = 0; k < n && used < size; k++)
    used += (size_t)snprintf(out + used, size - used, "%s %d\n", names[k], counts[k]);
}

/* The lean IR pipeline of the fused kernel must lose nothing against
 * default<O3>: the same number of memory and multiply instructions, and at
 * most 2 more instructions in all. */
START_TEST(test_pipeline_vs_o3) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  harness h;
  h_init(&h, radix, 4);
  fhjit_type ct = tu_poly(2, 1, (int64_t[]){2}, 4, 64), pt = tu_poly(0, 0, NULL, 4, 64);
  fhjit_type cp = tu_poly(0, 0, NULL, 4, 16), key = tu_key(2, 5, 64);
  fhjit_value a = fhjit_input(h.g, "a", &ct), b = fhjit_input(h.g, "b", &ct);
  fhjit_value p = fhjit_input(h.g, "p", &pt), c = fhjit_input(h.g, "c", &cp);
  fhjit_value k = fhjit_input(h.g, "k", &key);
  fhjit_value t0 = fhjit_add_lazy(h.g, fhjit_mul(h.g, a, b), fhjit_to_mont(h.g, a));
  fhjit_value t1 = fhjit_sub(h.g, fhjit_mul_plain(h.g, t0, p), fhjit_neg(h.g, b));
  fhjit_value t2 = fhjit_mul_compressed(h.g, t1, c, FHJIT_CYCLIC, FHJIT_NO_VALUE);
  fhjit_value t3 = fhjit_keyswitch_digit_product(h.g, fhjit_extract(h.g, t2, 0), k, 1, 1);
  fhjit_output(h.g, fhjit_add(h.g, fhjit_from_mont(h.g, t3), t2), "out");
  h_bind(&h);
  char *lean = lw_emit_with_pipeline(h.g, FHJIT_EMIT_PTX, "sm_90", lw_gpu_pipeline);
  char *o3 = lw_emit_with_pipeline(h.g, FHJIT_EMIT_PTX, "sm_90", "default<O3>");
  ck_assert(lean && o3);
  static char hl[8192], ho[8192];
  opcode_histogram(lean, hl, sizeof hl);
  opcode_histogram(o3, ho, sizeof ho);
  int total_l = 0, total_o = 0;
  for (const char *q = hl; (q = strchr(q, ' ')); q++) total_l += atoi(q + 1);
  for (const char *q = ho; (q = strchr(q, ' ')); q++) total_o += atoi(q + 1);
  ck_assert_msg(total_l <= total_o + 2, "lean pipeline: %d PTX instructions, O3: %d\n%s---\n%s",
                total_l, total_o, hl, ho);
  const char *kinds[] = {"ld.global", "st.global", "mul"};
  for (int j = 0; j < 3; j++) {
    int nl = 0, no = 0;
    for (const char *q = lean; (q = strstr(q, kinds[j])); q++) nl++;
    for (const char *q = o3; (q = strstr(q, kinds[j])); q++) no++;
    ck_assert_msg(nl == no, "%s: %d with the lean pipeline, %d with O3", kinds[j], nl, no);
  }
  free(lean);
  free(o3);
  h_free(&h);
}
END_TEST

START_TEST(test_errors) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "e", FHJIT_R62);
  fhjit_type t16 = tu_poly(0, 0, NULL, 2, 16), t32 = tu_poly(0, 0, NULL, 2, 32);
  fhjit_value a = fhjit_input(g, "a", &t16), b = fhjit_input(g, "b", &t32);
  fhjit_output(g, fhjit_neg(g, a), "na");
  /* not bound */
  ck_assert_ptr_null(fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90"));
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "not bound"));
  uint64_t params[8 * 2] = {0}, buf[64] = {0}, res[64];
  const void *ins[2] = {buf, buf};
  void *outs[2] = {res, res};
  ck_assert_int_eq(fhjit_run_host(g, params, 2, ins, outs, 0), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  /* unknown targets, with the list of supported ones */
  const char *bad[] = {"sm_99", "sm_30", "", "compute_90", "SM_90", "sm_90 "};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_ptr_null(fhjit_emit(g, FHJIT_EMIT_PTX, bad[i]));
    ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_TARGET);
    ck_assert(tu_contains(fhjit_last_error(ctx), "sm_70, sm_75, sm_80"));
  }
  ck_assert_ptr_null(fhjit_emit(g, (fhjit_emit_kind)7, "sm_90"));
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
  ck_assert_ptr_null(fhjit_emit(NULL, FHJIT_EMIT_PTX, "sm_90"));
  /* bad run arguments leave results untouched */
  memset(res, 0xab, sizeof res);
  ck_assert_int_eq(fhjit_run_host(g, NULL, 2, ins, outs, 0), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_run_host(g, params, 1, ins, outs, 0), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "pstride"));
  ck_assert_int_eq(fhjit_run_host(g, params, INT64_MAX, ins, outs, 0), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "row 7 past the address space"));
  ck_assert_int_eq(fhjit_run_host(g, params, 2, NULL, outs, 0), FHJIT_ERR_ARGUMENT);
  const void *ins_null[2] = {buf, NULL};
  ck_assert_int_eq(fhjit_run_host(g, params, 2, ins_null, outs, 0), FHJIT_ERR_ARGUMENT);
  void *outs_null[1] = {NULL};
  ck_assert_int_eq(fhjit_run_host(g, params, 2, ins, outs_null, 0), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_run_host(g, params, 2, ins, outs, -1), FHJIT_ERR_ARGUMENT);
  for (size_t i = 0; i < sizeof res; i++) ck_assert_int_eq(((unsigned char *)res)[i], 0xab);
  ck_assert_int_eq(fhjit_run_host(NULL, params, 2, ins, outs, 0), FHJIT_ERR_ARGUMENT);
  /* outputs of different n cannot share one kernel */
  fhjit_output(g, fhjit_neg(g, b), "nb");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_ptr_null(fhjit_emit(g, FHJIT_EMIT_LLVM, "sm_90"));
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_UNSUPPORTED);
  ck_assert(tu_contains(fhjit_last_error(ctx), "differ in rows or n"));
  ck_assert_int_eq(fhjit_run_host(g, params, 2, ins, outs, 0), FHJIT_ERR_UNSUPPORTED);
  for (size_t i = 0; i < sizeof res; i++) ck_assert_int_eq(((unsigned char *)res)[i], 0xab);
  fhjit_context_destroy(ctx);
}
END_TEST

/* What LLVM rejects is reported as FHJIT_ERR_LLVM with its message: a
 * module that fails verification, a pipeline that does not parse. */
START_TEST(test_llvm_errors) {
  fhjit_context *ctx = fhjit_context_create();
  nv_init();
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("broken", c);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  LLVMValueRef fn = LLVMAddFunction(m, "f", LLVMFunctionType(i32, NULL, 0, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
  LLVMBuildRetVoid(b); /* i32 function returning void */
  ck_assert_int_eq(nv_verify(&ctx->err, m, "a broken module"), FHJIT_ERR_LLVM);
  ck_assert(tu_contains(fhjit_last_error(ctx), "LLVM rejected the module of a broken module"));
  LLVMDisposeBuilder(b);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  fhjit_graph *g = small_graph(ctx, FHJIT_R32, "pipe");
  ck_assert_ptr_null(lw_emit_with_pipeline(g, FHJIT_EMIT_PTX, "sm_90", "no-such-pass"));
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_LLVM);
  ck_assert(tu_contains(fhjit_last_error(ctx), "no-such-pass"));
  fhjit_context_destroy(ctx);
}
END_TEST

/* Only identity views: no kernel work, a PTX module without kernels. */
START_TEST(test_alias_only) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "views", FHJIT_R32);
  fhjit_type ct = tu_poly(2, 0, NULL, 2, 8);
  fhjit_value x = fhjit_input(g, "x", &ct);
  fhjit_output(g, fhjit_extract(g, x, 1), "x1");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_num_results(g), 0);
  const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90");
  ck_assert(ptx && !strstr(ptx, ".entry"));
  lw_program prog;
  ck_assert_int_eq(lw_compile_ptx(g, "sm_90", &prog), FHJIT_OK);
  ck_assert_int_eq(prog.nkernels, 0);
  lw_program_free(&prog);
  uint32_t params[16] = {0}, buf[32] = {0};
  const void *ins[1] = {buf};
  ck_assert_int_eq(fhjit_run_host(g, params, 2, ins, NULL, 0), FHJIT_OK);
  fhjit_context_destroy(ctx);
}
END_TEST

/* Compilations on several threads at once, each with its own context. The
 * workers make no Check assertions (Check's reporting is not thread-safe). */
static void *compile_worker(void *arg) {
  char **out = arg;
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "par", FHJIT_R62);
  fhjit_type ct = tu_poly(2, 0, NULL, 4, 1024), pt = tu_poly(0, 0, NULL, 4, 1024);
  fhjit_value a = fhjit_input(g, "a", &ct), p = fhjit_input(g, "p", &pt);
  fhjit_output(g, fhjit_add(g, fhjit_mul_plain(g, a, p), a), "out");
  for (int k = 0; k < 4 && fhjit_bind(g) == FHJIT_OK; k++) {
    const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, k & 1 ? "sm_80" : "sm_90");
    if (!ptx) break;
    if (k == 2) *out = strdup(ptx);
  }
  fhjit_context_destroy(ctx);
  return NULL;
}

START_TEST(test_concurrent_compile) {
  pthread_t t[4];
  char *ptx[4] = {0};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, compile_worker, &ptx[i]), 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++) {
    ck_assert_ptr_nonnull(ptx[i]);
    ck_assert_msg(strcmp(ptx[i], ptx[0]) == 0, "thread %d emitted other PTX", i);
  }
  for (int i = 0; i < 4; i++) free(ptx[i]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lower");
  TCase *tc = tcase_create("lower");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_single_ops, 0, 6);
  tcase_add_loop_test(tc, test_plain_ops, 0, 2);
  tcase_add_loop_test(tc, test_compressed, 0, 2);
  tcase_add_loop_test(tc, test_computed_compressed, 0, 2);
  tcase_add_loop_test(tc, test_keyswitch, 0, 2);
  tcase_add_loop_test(tc, test_layouts, 0, 2);
  tcase_add_loop_test(tc, test_outputs_aliasing, 0, 2);
  tcase_add_loop_test(tc, test_broadcast_results, 0, 2);
  tcase_add_loop_test(tc, test_everything_graph, 0, 2);
  tcase_add_loop_test(tc, test_threads_cache_idx64, 0, 2);
  tcase_add_loop_test(tc, test_overlapping_buffers, 0, 2);
  tcase_add_test(tc, test_emit_targets);
  tcase_add_loop_test(tc, test_pipeline_vs_o3, 0, 2);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_llvm_errors);
  tcase_add_test(tc, test_alias_only);
  tcase_add_test(tc, test_concurrent_compile);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
