/* test_interp.c: the reference interpreter on small graphs whose results the
 * test computes itself, element by element, with testutil's independent
 * references (tu_ref): tensor product, broadcasting, strided and offset
 * views, compressed plaintexts, plaintext ops, key-switch products, output
 * aliasing, and the failure paths (which must leave results untouched).
 * Every test runs for both radices. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "testutil.h"

#define MAXIN 8
#define MAXRES 12
#define GUARD 4 /* words after each result buffer that must stay untouched */

/* An input as the test sees it: its type, layout and words (as uint64_t;
 * converted to the radix's words for the call). Words no element maps to
 * hold a value far out of the lazy range, so reading one is an error. */
typedef struct tin {
  fhjit_value v;
  fhjit_type t;
  fhjit_layout l;
  uint64_t *w;
  int64_t len;
} tin;

typedef struct fx {
  fhjit_radix radix;
  fhjit_context *ctx;
  fhjit_graph *g;
  int64_t limbs;
  uint64_t q[4];
  void *params;
  int64_t pstride;
  tin in[MAXIN];
  int nin;
  void *inw[MAXIN];  /* inputs in the radix's words */
  void *resw[MAXRES]; /* results in the radix's words (+ GUARD) */
  uint64_t *res[MAXRES];
  fhjit_type rtype[MAXRES];
  int nres;
  uint64_t seed;
} fx;

static uint64_t gap_word(fhjit_radix radix) {
  return radix == FHJIT_R32 ? UINT32_MAX : UINT64_MAX >> 1;
}

static void fx_init(fx *f, fhjit_radix radix, int64_t limbs) {
  memset(f, 0, sizeof *f);
  f->radix = radix;
  f->ctx = fhjit_context_create();
  f->g = fhjit_graph_create(f->ctx, "t", radix);
  f->limbs = limbs;
  const uint64_t q32[] = {268369921, 134176769, 786433, 7681};
  const uint64_t q62[] = {UINT64_C(1152921504606748673), UINT64_C(576460752303423649),
                          UINT64_C(1099510054913), 3};
  for (int i = 0; i < 4; i++) f->q[i] = radix == FHJIT_R32 ? q32[i] : q62[i];
  f->pstride = limbs + 3; /* not packed: the interpreter must use pstride */
  size_t wsize = radix == FHJIT_R32 ? 4 : 8;
  f->params = calloc(8 * (size_t)f->pstride, wsize);
  ck_assert_int_eq(fhjit_param_table(f->ctx, radix, f->q, (int32_t)limbs, 0, 0, 5, f->params,
                                     f->pstride),
                   FHJIT_OK);
  f->seed = 0x1234 + (uint64_t)radix * 77 + (uint64_t)limbs;
}

static void fx_free(fx *f) {
  for (int i = 0; i < f->nin; i++) {
    free(f->in[i].w);
    free(f->inw[i]);
  }
  for (int k = 0; k < MAXRES; k++) {
    free(f->res[k]);
    free(f->resw[k]);
  }
  free(f->params);
  fhjit_context_destroy(f->ctx);
}

static uint64_t ref(const fx *f, tu_op op, int64_t row, uint64_t a, uint64_t b) {
  return tu_ref(f->radix, op, f->q[row], a, b);
}

/* Word offset of (c, batch, row, i) [digit d for keys] by the definition of
 * fhjit_layout. */
static int64_t offset_of(const tin *x, int64_t d, int64_t c, const int64_t *b, int64_t r,
                         int64_t i) {
  int64_t off = x->l.offset + d * x->l.digit_stride + c * x->l.comp_stride + r * x->l.row_stride +
                i * x->l.index_stride;
  for (int a = 0; a < x->t.nbatch; a++) off += b[a] * x->l.batch_stride[a];
  return off;
}

static uint64_t at(const tin *x, int64_t c, const int64_t *b, int64_t r, int64_t i) {
  return x->w[offset_of(x, 0, c, b, r, i)];
}

static uint64_t key_at(const tin *x, int64_t d, int64_t c, int64_t r, int64_t i) {
  return x->w[offset_of(x, d, c, NULL, r, i)];
}

/* Declares and binds an input (layout NULL: dense) and fills its elements
 * with lazy values of their row's limb (keys: lazy for every limb). */
static tin *fx_input(fx *f, const char *name, fhjit_type t, const fhjit_layout *layout) {
  tin *x = &f->in[f->nin++];
  x->t = t;
  x->v = fhjit_input(f->g, name, &t);
  ck_assert_msg(x->v != FHJIT_NO_VALUE, "%s", fhjit_last_error(f->ctx));
  if (layout) x->l = *layout;
  else ck_assert_int_eq(fhjit_dense_layout(&t, &x->l), FHJIT_OK);
  ck_assert_msg(fhjit_bind_input(f->g, x->v, &t, &x->l) == FHJIT_OK, "%s",
                fhjit_last_error(f->ctx));
  int64_t digits = t.kind == FHJIT_KIND_KEY ? t.digits : 1;
  int64_t comps = t.comps ? t.comps : 1, nb = 1;
  for (int a = 0; a < t.nbatch; a++) nb *= t.batch[a];
  int64_t last = 0;
  int64_t bmax[FHJIT_MAX_BATCH];
  for (int a = 0; a < t.nbatch; a++) bmax[a] = t.batch[a] - 1;
  last = offset_of(x, digits - 1, comps - 1, bmax, t.rows - 1, t.n - 1);
  x->len = last + 1 + 5;
  x->w = malloc(sizeof *x->w * (size_t)x->len);
  for (int64_t k = 0; k < x->len; k++) x->w[k] = gap_word(f->radix);
  uint64_t qmin = f->q[0];
  for (int64_t j = 0; j < f->limbs; j++)
    if (f->q[j] < qmin) qmin = f->q[j];
  for (int64_t d = 0; d < digits; d++)
    for (int64_t c = 0; c < comps; c++)
      for (int64_t bf = 0; bf < nb; bf++) {
        int64_t b[FHJIT_MAX_BATCH], rest = bf;
        for (int a = t.nbatch - 1; a >= 0; a--) b[a] = rest % t.batch[a], rest /= t.batch[a];
        for (int64_t r = 0; r < t.rows; r++)
          for (int64_t i = 0; i < t.n; i++) {
            uint64_t q = t.kind == FHJIT_KIND_KEY ? qmin : f->q[r];
            x->w[offset_of(x, d, c, b, r, i)] = tu_lazy(&f->seed, q);
          }
      }
  return x;
}

/* Converts the test's words to the radix's (for inputs). */
static void *to_words(fhjit_radix radix, const uint64_t *w, int64_t len) {
  if (radix == FHJIT_R62) {
    uint64_t *o = malloc(sizeof *o * (size_t)len);
    memcpy(o, w, sizeof *o * (size_t)len);
    return o;
  }
  uint32_t *o = malloc(sizeof *o * (size_t)len);
  for (int64_t k = 0; k < len; k++) o[k] = (uint32_t)w[k];
  return o;
}

/* Binds, prepares the word buffers (results filled with a sentinel) and
 * returns the interpreter's status; on success the results are in res[]. */
static fhjit_status fx_run_status(fx *f) {
  ck_assert_msg(fhjit_bind(f->g) == FHJIT_OK, "%s", fhjit_last_error(f->ctx));
  for (int i = 0; i < f->nin; i++) {
    free(f->inw[i]);
    f->inw[i] = to_words(f->radix, f->in[i].w, f->in[i].len);
  }
  f->nres = fhjit_num_results(f->g);
  ck_assert_int_le(f->nres, MAXRES);
  size_t wsize = f->radix == FHJIT_R32 ? 4 : 8;
  for (int k = 0; k < f->nres; k++) {
    ck_assert_int_eq(fhjit_result_type(f->g, k, &f->rtype[k]), FHJIT_OK);
    int64_t e = fhjit_type_elements(&f->rtype[k]);
    free(f->resw[k]);
    f->resw[k] = malloc(wsize * (size_t)(e + GUARD));
    memset(f->resw[k], 0xA5, wsize * (size_t)(e + GUARD));
  }
  fhjit_status st = fhjit_interpret(f->g, f->params, f->pstride, (const void *const *)f->inw,
                                    f->resw);
  for (int k = 0; k < f->nres; k++) {
    int64_t e = fhjit_type_elements(&f->rtype[k]);
    free(f->res[k]);
    f->res[k] = malloc(sizeof(uint64_t) * (size_t)(e + GUARD));
    for (int64_t j = 0; j < e + GUARD; j++) f->res[k][j] = tu_word(tu_ws(f->radix), f->resw[k], j);
    uint64_t sentinel = f->radix == FHJIT_R32 ? 0xA5A5A5A5u : UINT64_C(0xA5A5A5A5A5A5A5A5);
    for (int64_t j = e; j < e + GUARD; j++) ck_assert_uint_eq(f->res[k][j], sentinel);
  }
  return st;
}

static void fx_run(fx *f) {
  fhjit_status st = fx_run_status(f);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(f->ctx));
}

/* Element (c, b, r, i) of dense result k. */
static uint64_t res_at(const fx *f, int k, int64_t c, const int64_t *b, int64_t r, int64_t i) {
  const fhjit_type *t = &f->rtype[k];
  int64_t idx = c;
  for (int a = 0; a < t->nbatch; a++) idx = idx * t->batch[a] + b[a];
  idx = (idx * t->rows + r) * t->n + i;
  return f->res[k][idx];
}

#define EXPECT_EQ(f, got, want, what, c, b0, r, i)                                              \
  do {                                                                                          \
    uint64_t got_ = (got), want_ = (want);                                                      \
    if (got_ != want_)                                                                          \
      ck_abort_msg("%s %s: c=%d b0=%d r=%d i=%d: got %llu want %llu",                          \
                   (f)->radix == FHJIT_R32 ? "r32" : "r62", (what), (int)(c), (int)(b0),        \
                   (int)(r), (int)(i), (unsigned long long)got_, (unsigned long long)want_);   \
  } while (0)

static int fx_result_of_output(fx *f, const char *name) {
  for (int32_t o = 0; o < fhjit_num_outputs(f->g); o++) {
    fhjit_output_info info;
    ck_assert_int_eq(fhjit_output_info_get(f->g, o, &info), FHJIT_OK);
    if (strcmp(info.name, name) == 0) {
      ck_assert_int_eq(info.is_input_alias, 0);
      return info.source;
    }
  }
  ck_abort_msg("no output %s", name);
  return -1;
}

static fhjit_radix radix_of(int i) { return i ? FHJIT_R62 : FHJIT_R32; }

/* ------------------------------------------------------------- tensor product */

START_TEST(test_tensor_product) {
  fx f;
  fx_init(&f, radix_of(_i), 3);
  const int64_t batch[] = {2};
  fhjit_type ct = tu_poly(2, 1, batch, 3, 8);
  /* a: a strided, offset view (components far apart, index stride 2) */
  fhjit_layout la = {.offset = 3, .comp_stride = 500, .batch_stride = {200}, .row_stride = 40,
                     .index_stride = 2};
  tin *a = fx_input(&f, "a", ct, &la), *b = fx_input(&f, "b", ct, NULL);
  fhjit_graph *g = f.g;
  fhjit_value a0 = fhjit_extract(g, a->v, 0), a1 = fhjit_extract(g, a->v, 1);
  fhjit_value b0 = fhjit_extract(g, b->v, 0), b1 = fhjit_extract(g, b->v, 1);
  fhjit_value d0 = fhjit_mul(g, a0, b0);
  fhjit_value d1 = fhjit_add_lazy(g, fhjit_mul(g, a0, b1), fhjit_mul(g, a1, b0));
  fhjit_value d2 = fhjit_mul(g, a1, b1);
  fhjit_value parts[] = {d0, d1, d2};
  fhjit_output(g, fhjit_pack(g, 3, parts), "d");
  fhjit_output(g, d1, "cross"); /* an escaping intermediate */
  fx_run(&f);
  ck_assert_int_eq(f.nres, 2);
  int rd = fx_result_of_output(&f, "d"), rc = fx_result_of_output(&f, "cross");
  ck_assert_int_eq(f.rtype[rd].comps, 3);
  for (int64_t bb = 0; bb < 2; bb++)
    for (int64_t r = 0; r < 3; r++)
      for (int64_t i = 0; i < 8; i++) {
        int64_t bi[] = {bb};
        uint64_t x0 = at(a, 0, bi, r, i), x1 = at(a, 1, bi, r, i);
        uint64_t y0 = at(b, 0, bi, r, i), y1 = at(b, 1, bi, r, i);
        uint64_t e0 = ref(&f, TU_MUL, r, x0, y0);
        uint64_t e1 = ref(&f, TU_ADD_LAZY, r, ref(&f, TU_MUL, r, x0, y1), ref(&f, TU_MUL, r, x1, y0));
        uint64_t e2 = ref(&f, TU_MUL, r, x1, y1);
        EXPECT_EQ(&f, res_at(&f, rd, 0, bi, r, i), e0, "d0", 0, bb, r, i);
        EXPECT_EQ(&f, res_at(&f, rd, 1, bi, r, i), e1, "d1", 1, bb, r, i);
        EXPECT_EQ(&f, res_at(&f, rd, 2, bi, r, i), e2, "d2", 2, bb, r, i);
        EXPECT_EQ(&f, res_at(&f, rc, 0, bi, r, i), e1, "cross", 0, bb, r, i);
      }
  fx_free(&f);
}
END_TEST

/* --------------------------------------------------------- pointwise, broadcast */

START_TEST(test_pointwise_broadcast) {
  fx f;
  fx_init(&f, radix_of(_i), 2);
  const int64_t ba[] = {3, 1}, bb[] = {4}, bp[] = {1};
  /* a: ct<2, [3, 1]> with the batch-1 axis given a junk stride (canonicalised
   * away), rows interleaved with the index axis; b: ct<1, [4]>, its single
   * component broadcast; p: pt<[1]> without a component axis. */
  fhjit_layout la = {.offset = 1, .comp_stride = 1, .batch_stride = {40, 9999}, .row_stride = 2,
                     .index_stride = 4};
  tin *a = fx_input(&f, "a", tu_poly(2, 2, ba, 2, 8), &la);
  tin *b = fx_input(&f, "b", tu_poly(1, 1, bb, 2, 8), NULL);
  tin *p = fx_input(&f, "p", tu_poly(0, 1, bp, 2, 8), NULL);
  fhjit_graph *g = f.g;
  const tu_op binops[] = {TU_ADD, TU_SUB, TU_ADD_LAZY, TU_MUL};
  const char *names[] = {"add", "sub", "add_lazy", "mul", "neg", "to_mont", "from_mont", "p_sub_a"};
  fhjit_output(g, fhjit_add(g, a->v, b->v), "add");
  fhjit_output(g, fhjit_sub(g, a->v, b->v), "sub");
  fhjit_output(g, fhjit_add_lazy(g, a->v, b->v), "add_lazy");
  fhjit_output(g, fhjit_mul(g, a->v, b->v), "mul");
  fhjit_output(g, fhjit_neg(g, a->v), "neg");
  fhjit_output(g, fhjit_to_mont(g, a->v), "to_mont");
  fhjit_output(g, fhjit_from_mont(g, a->v), "from_mont");
  fhjit_output(g, fhjit_sub(g, p->v, a->v), "p_sub_a");
  fx_run(&f);
  ck_assert_int_eq(f.nres, 8);
  for (int o = 0; o < 8; o++) {
    int k = fx_result_of_output(&f, names[o]);
    const fhjit_type *t = &f.rtype[k];
    ck_assert_int_eq(t->comps, 2);
    int binary_ab = o < 4;
    ck_assert_int_eq(t->nbatch, 2);
    ck_assert_int_eq(t->batch[0], 3);
    ck_assert_int_eq(t->batch[1], binary_ab ? 4 : 1);
    for (int64_t c = 0; c < 2; c++)
      for (int64_t x = 0; x < 3; x++)
        for (int64_t y = 0; y < t->batch[1]; y++)
          for (int64_t r = 0; r < 2; r++)
            for (int64_t i = 0; i < 8; i++) {
              int64_t bi[] = {x, y}, bia[] = {x, 0}, bib[] = {y}, bip[] = {0};
              uint64_t av = at(a, c, bia, r, i), want;
              if (binary_ab) want = ref(&f, binops[o], r, av, at(b, 0, bib, r, i));
              else if (o == 4) want = ref(&f, TU_NEG, r, av, 0);
              else if (o == 5) want = ref(&f, TU_TO_MONT, r, av, 0);
              else if (o == 6) want = ref(&f, TU_FROM_MONT, r, av, 0);
              else want = ref(&f, TU_SUB, r, at(p, 0, bip, r, i), av);
              EXPECT_EQ(&f, res_at(&f, k, c, bi, r, i), want, names[o], c, x, r, i);
            }
  }
  fx_free(&f);
}
END_TEST

/* Broadcast through a stride-0 view and an operand with fewer batch axes. */
START_TEST(test_strided_views) {
  fx f;
  fx_init(&f, radix_of(_i), 3);
  const int64_t bx[] = {2, 3}, by[] = {3};
  /* x: both entries of batch axis 0 read the same storage (stride 0);
   * components interleaved with the index axis */
  fhjit_layout lx = {.offset = 11, .comp_stride = 1, .batch_stride = {0, 144}, .row_stride = 48,
                     .index_stride = 3};
  /* y: transposed [n, rows] storage with an offset */
  fhjit_layout ly = {.offset = 2, .batch_stride = {64}, .row_stride = 1, .index_stride = 4};
  tin *x = fx_input(&f, "x", tu_poly(3, 2, bx, 3, 16), &lx);
  tin *y = fx_input(&f, "y", tu_poly(0, 1, by, 3, 16), &ly);
  fhjit_graph *g = f.g;
  fhjit_value m = fhjit_mul(g, x->v, y->v);
  fhjit_value s = fhjit_add(g, m, x->v);
  fhjit_output(g, s, "s");
  fhjit_output(g, fhjit_extract(g, m, 2), "m2"); /* materialises all of m */
  fx_run(&f);
  int ks = fx_result_of_output(&f, "s"), km = fx_result_of_output(&f, "m2");
  ck_assert_int_eq(f.rtype[km].comps, 3);
  for (int64_t c = 0; c < 3; c++)
    for (int64_t b0 = 0; b0 < 2; b0++)
      for (int64_t b1 = 0; b1 < 3; b1++)
        for (int64_t r = 0; r < 3; r++)
          for (int64_t i = 0; i < 16; i++) {
            int64_t bi[] = {b0, b1}, biy[] = {b1};
            uint64_t xv = at(x, c, bi, r, i), mv = ref(&f, TU_MUL, r, xv, at(y, 0, biy, r, i));
            EXPECT_EQ(&f, res_at(&f, km, c, bi, r, i), mv, "m", c, b0, r, i);
            EXPECT_EQ(&f, res_at(&f, ks, c, bi, r, i), ref(&f, TU_ADD, r, mv, xv), "s", c, b0, r, i);
          }
  /* the stride-0 axis really shares storage: both batch entries agree */
  int64_t p0[] = {0, 1}, p1[] = {1, 1};
  ck_assert_uint_eq(res_at(&f, km, 1, p0, 2, 5), res_at(&f, km, 1, p1, 2, 5));
  fx_free(&f);
}
END_TEST

/* -------------------------------------------------------------- compressed */

static uint64_t expanded(const tin *p, const tin *im, fhjit_compression layout, int64_t n,
                         const int64_t *bp, int64_t r, int64_t i) {
  int64_t u = p->t.n, repeat = n / u;
  switch (layout) {
  case FHJIT_CYCLIC: return at(p, 0, bp, r, i % u);
  case FHJIT_CONTIGUOUS: return at(p, 0, bp, r, i / repeat);
  case FHJIT_STRIDED_SPARSE:
    return i % repeat == 0 ? at(p, 0, bp, r, i / repeat) : at(im, 0, bp, r, 0);
  }
  return 0;
}

START_TEST(test_compressed) {
  fx f;
  fx_init(&f, radix_of(_i), 2);
  const int64_t b2[] = {2}, b1[] = {1};
  tin *ct = fx_input(&f, "ct", tu_poly(2, 1, b2, 2, 16), NULL);
  fhjit_layout lp = {.offset = 4, .batch_stride = {50}, .row_stride = 10, .index_stride = 2};
  tin *p = fx_input(&f, "p", tu_poly(0, 1, b2, 2, 4), &lp);
  tin *pb = fx_input(&f, "pb", tu_poly(0, 1, b1, 2, 4), NULL); /* batch-broadcast plaintext */
  tin *im = fx_input(&f, "im", tu_poly(0, 1, b2, 2, 1), NULL);
  fhjit_graph *g = f.g;
  const fhjit_compression layouts[] = {FHJIT_CYCLIC, FHJIT_CONTIGUOUS, FHJIT_STRIDED_SPARSE};
  char name[64];
  for (int L = 0; L < 3; L++) {
    fhjit_value imv = layouts[L] == FHJIT_STRIDED_SPARSE ? im->v : FHJIT_NO_VALUE;
    snprintf(name, sizeof name, "mul%d", L);
    fhjit_output(g, fhjit_mul_compressed(g, ct->v, p->v, layouts[L], imv), name);
    snprintf(name, sizeof name, "addc%d", L);
    fhjit_output(g, fhjit_add_compressed(g, ct->v, p->v, layouts[L], imv, FHJIT_DOMAIN_COEF), name);
    snprintf(name, sizeof name, "addn%d", L);
    fhjit_output(g, fhjit_add_compressed(g, ct->v, pb->v, layouts[L], imv, FHJIT_DOMAIN_NTT), name);
  }
  fx_run(&f);
  ck_assert_int_eq(f.nres, 9);
  for (int L = 0; L < 3; L++)
    for (int kind = 0; kind < 3; kind++) {
      snprintf(name, sizeof name, "%s%d", kind == 0 ? "mul" : kind == 1 ? "addc" : "addn", L);
      int k = fx_result_of_output(&f, name);
      ck_assert_int_eq(f.rtype[k].comps, 2);
      ck_assert_int_eq(f.rtype[k].n, 16);
      for (int64_t c = 0; c < 2; c++)
        for (int64_t bb = 0; bb < 2; bb++)
          for (int64_t r = 0; r < 2; r++)
            for (int64_t i = 0; i < 16; i++) {
              int64_t bi[] = {bb}, b0[] = {0};
              uint64_t cv = at(ct, c, bi, r, i), want;
              if (kind == 0) {
                want = ref(&f, TU_MUL, r, cv, expanded(p, im, layouts[L], 16, bi, r, i));
              } else if (kind == 1) {
                uint64_t e = expanded(p, im, layouts[L], 16, bi, r, i);
                want = c == 0 ? ref(&f, TU_ADD, r, cv, ref(&f, TU_FROM_MONT, r, e, 0)) : cv;
              } else {
                /* pb broadcasts over the batch; the implicit operand does not */
                uint64_t e = layouts[L] == FHJIT_STRIDED_SPARSE && i % 4 != 0
                                 ? at(im, 0, bi, r, 0)
                                 : expanded(pb, im, layouts[L], 16, b0, r, i);
                want = c == 0 ? ref(&f, TU_ADD, r, cv, e) : cv;
              }
              EXPECT_EQ(&f, res_at(&f, k, c, bi, r, i), want, name, c, bb, r, i);
            }
    }
  fx_free(&f);
}
END_TEST

/* -------------------------------------------------------------- plaintext ops */

START_TEST(test_plain_ops) {
  fx f;
  fx_init(&f, radix_of(_i), 3);
  const int64_t b2[] = {2};
  tin *ct = fx_input(&f, "ct", tu_poly(3, 1, b2, 3, 8), NULL);
  tin *p = fx_input(&f, "p", tu_poly(0, 1, b2, 3, 8), NULL);
  fhjit_layout lq = {.offset = 1, .comp_stride = 3, .row_stride = 6 * 8, .index_stride = 6};
  tin *pc = fx_input(&f, "pc", tu_poly(2, 0, NULL, 3, 8), &lq); /* component 0 is used */
  fhjit_graph *g = f.g;
  fhjit_output(g, fhjit_mul_plain(g, ct->v, p->v), "mp");
  fhjit_output(g, fhjit_add_plain(g, ct->v, pc->v), "ap");
  fhjit_output(g, fhjit_mul_plain(g, p->v, pc->v), "pp"); /* component-less "ciphertext" */
  fx_run(&f);
  int kmp = fx_result_of_output(&f, "mp"), kap = fx_result_of_output(&f, "ap"),
      kpp = fx_result_of_output(&f, "pp");
  ck_assert_int_eq(f.rtype[kpp].comps, 0);
  for (int64_t c = 0; c < 3; c++)
    for (int64_t bb = 0; bb < 2; bb++)
      for (int64_t r = 0; r < 3; r++)
        for (int64_t i = 0; i < 8; i++) {
          int64_t bi[] = {bb};
          uint64_t cv = at(ct, c, bi, r, i), pv = at(p, 0, bi, r, i), qv = at(pc, 0, NULL, r, i);
          EXPECT_EQ(&f, res_at(&f, kmp, c, bi, r, i), ref(&f, TU_MUL, r, cv, pv), "mul_plain", c,
                    bb, r, i);
          EXPECT_EQ(&f, res_at(&f, kap, c, bi, r, i), c == 0 ? ref(&f, TU_ADD_LAZY, r, cv, qv) : cv,
                    "add_plain", c, bb, r, i);
          if (c == 0)
            EXPECT_EQ(&f, res_at(&f, kpp, 0, bi, r, i), ref(&f, TU_MUL, r, pv, qv), "pt*pt", c, bb,
                      r, i);
        }
  fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------------ key switch */

START_TEST(test_keyswitch) {
  fx f;
  fx_init(&f, radix_of(_i), 2);
  const int64_t b2[] = {2};
  tin *d0 = fx_input(&f, "d0", tu_poly(0, 1, b2, 2, 8), NULL);
  tin *d1 = fx_input(&f, "d1", tu_poly(0, 0, NULL, 2, 8), NULL);
  /* key<3, 2, 5, 8>, digits outermost but padded, rows interleaved */
  fhjit_layout lk = {.offset = 9, .digit_stride = 1000, .comp_stride = 1, .row_stride = 2,
                     .index_stride = 10};
  tin *key = fx_input(&f, "key", tu_key(3, 5, 8), &lk);
  fhjit_graph *g = f.g;
  fhjit_value k0 = fhjit_keyswitch_digit_product(g, d0->v, key->v, 1, 2);
  fhjit_value k1 = fhjit_keyswitch_digit_product(g, d1->v, key->v, 2, 0);
  fhjit_value acc = fhjit_add_lazy(g, k0, k1);
  fhjit_output(g, k0, "k0");
  fhjit_output(g, acc, "acc");
  fx_run(&f);
  int kk = fx_result_of_output(&f, "k0"), ka = fx_result_of_output(&f, "acc");
  ck_assert_int_eq(f.rtype[kk].comps, 2);
  ck_assert_int_eq(f.rtype[ka].batch[0], 2);
  for (int64_t c = 0; c < 2; c++)
    for (int64_t bb = 0; bb < 2; bb++)
      for (int64_t r = 0; r < 2; r++)
        for (int64_t i = 0; i < 8; i++) {
          int64_t bi[] = {bb};
          uint64_t p0 = ref(&f, TU_MUL, r, at(d0, 0, bi, r, i), key_at(key, 1, c, 2 + r, i));
          uint64_t p1 = ref(&f, TU_MUL, r, at(d1, 0, NULL, r, i), key_at(key, 2, c, r, i));
          EXPECT_EQ(&f, res_at(&f, kk, c, bi, r, i), p0, "ks", c, bb, r, i);
          EXPECT_EQ(&f, res_at(&f, ka, c, bi, r, i), ref(&f, TU_ADD_LAZY, r, p0, p1), "acc", c, bb,
                    r, i);
        }
  fx_free(&f);
}
END_TEST

/* -------------------------------------------------------------- outputs, aliasing */

START_TEST(test_outputs) {
  fx f;
  fx_init(&f, radix_of(_i), 2);
  tin *x = fx_input(&f, "x", tu_poly(2, 0, NULL, 2, 8), NULL);
  tin *y = fx_input(&f, "y", tu_poly(2, 0, NULL, 2, 8), NULL);
  fhjit_graph *g = f.g;
  fhjit_value s = fhjit_add(g, x->v, y->v);
  fhjit_value parts[] = {fhjit_extract(g, x->v, 1), fhjit_extract(g, x->v, 0)};
  fhjit_output(g, x->v, "x_view");
  fhjit_output(g, fhjit_extract(g, y->v, 1), "y1_view");
  fhjit_output(g, s, "s1");
  fhjit_output(g, s, "s2");
  fhjit_output(g, fhjit_extract(g, s, 1), "s_c1");
  fhjit_output(g, fhjit_pack(g, 2, parts), "swapped");
  fx_run(&f);
  ck_assert_int_eq(f.nres, 2); /* s once, the pack once; views are free */
  int ks = fx_result_of_output(&f, "s1"), kw = fx_result_of_output(&f, "swapped");
  ck_assert_int_eq(fx_result_of_output(&f, "s2"), ks);
  ck_assert_int_eq(fx_result_of_output(&f, "s_c1"), ks);
  for (int64_t c = 0; c < 2; c++)
    for (int64_t r = 0; r < 2; r++)
      for (int64_t i = 0; i < 8; i++) {
        EXPECT_EQ(&f, res_at(&f, ks, c, NULL, r, i),
                  ref(&f, TU_ADD, r, at(x, c, NULL, r, i), at(y, c, NULL, r, i)), "s", c, 0, r, i);
        EXPECT_EQ(&f, res_at(&f, kw, c, NULL, r, i), at(x, 1 - c, NULL, r, i), "swapped", c, 0, r,
                  i);
      }
  fx_free(&f);
}
END_TEST

/* Only input views: nothing to compute, nothing written. */
START_TEST(test_only_views) {
  fx f;
  fx_init(&f, radix_of(_i), 2);
  tin *x = fx_input(&f, "x", tu_poly(2, 0, NULL, 2, 8), NULL);
  fhjit_output(f.g, fhjit_extract(f.g, x->v, 0), "x0");
  fx_run(&f);
  ck_assert_int_eq(f.nres, 0);
  ck_assert_int_eq(fhjit_interpret(f.g, f.params, f.pstride, (const void *const *)f.inw, NULL),
                   FHJIT_OK);
  fx_free(&f);
}
END_TEST

/* A result buffer that is also an input buffer (in place): inputs are read
 * before any result is written. */
START_TEST(test_in_place) {
  fx f;
  fx_init(&f, radix_of(_i), 2);
  tin *x = fx_input(&f, "x", tu_poly(2, 0, NULL, 2, 8), NULL);
  tin *y = fx_input(&f, "y", tu_poly(2, 0, NULL, 2, 8), NULL);
  fhjit_value s = fhjit_mul(f.g, x->v, y->v);
  fhjit_output(f.g, fhjit_add(f.g, s, x->v), "out");
  ck_assert_int_eq(fhjit_bind(f.g), FHJIT_OK);
  void *xw = to_words(f.radix, x->w, x->len), *yw = to_words(f.radix, y->w, y->len);
  const void *ins[] = {xw, yw};
  void *outs[] = {xw};
  ck_assert_int_eq(fhjit_interpret(f.g, f.params, f.pstride, ins, outs), FHJIT_OK);
  for (int64_t c = 0; c < 2; c++)
    for (int64_t r = 0; r < 2; r++)
      for (int64_t i = 0; i < 8; i++) {
        uint64_t xv = at(x, c, NULL, r, i), yv = at(y, c, NULL, r, i);
        EXPECT_EQ(&f, tu_word(tu_ws(f.radix), xw, (c * 2 + r) * 8 + i),
                  ref(&f, TU_ADD, r, ref(&f, TU_MUL, r, xv, yv), xv), "in place", c, 0, r, i);
      }
  free(xw);
  free(yw);
  fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------------ failures */

/* Runs the prepared call and checks: status, message fragment, and every
 * result buffer still all sentinel. */
static void expect_failure(fx *f, fhjit_status st, fhjit_status want, const char *frag) {
  ck_assert_msg(st == want, "status %d, want %d: %s", st, want, fhjit_last_error(f->ctx));
  ck_assert_msg(tu_contains(fhjit_last_error(f->ctx), frag), "'%s' lacks '%s'",
                fhjit_last_error(f->ctx), frag);
  size_t wsize = f->radix == FHJIT_R32 ? 4 : 8;
  for (int k = 0; k < f->nres; k++) {
    int64_t e = fhjit_type_elements(&f->rtype[k]);
    const unsigned char *p = f->resw[k];
    for (size_t j = 0; j < wsize * (size_t)(e + GUARD); j++)
      ck_assert_msg(p[j] == 0xA5, "result %d byte %zu written on failure", k, j);
  }
}

START_TEST(test_failures) {
  fx f;
  fx_init(&f, radix_of(_i), 2);
  tin *x = fx_input(&f, "x", tu_poly(2, 0, NULL, 2, 8), NULL);
  tin *y = fx_input(&f, "y", tu_poly(0, 0, NULL, 2, 8), NULL);
  fhjit_value m = fhjit_mul(f.g, x->v, y->v);
  fhjit_output(f.g, m, "m");
  fhjit_output(f.g, fhjit_neg(f.g, y->v), "n");
  fx_run(&f);
  const void *const *ins = (const void *const *)f.inw;
  size_t wsize = f.radix == FHJIT_R32 ? 4 : 8;
  for (int k = 0; k < f.nres; k++)
    memset(f.resw[k], 0xA5, wsize * (size_t)(fhjit_type_elements(&f.rtype[k]) + GUARD));

  /* unbound */
  fhjit_neg(f.g, x->v);
  expect_failure(&f, fhjit_interpret(f.g, f.params, f.pstride, ins, f.resw), FHJIT_ERR_ARGUMENT,
                 "not bound");
  ck_assert_int_eq(fhjit_bind(f.g), FHJIT_OK);
  /* null pointers */
  expect_failure(&f, fhjit_interpret(f.g, NULL, f.pstride, ins, f.resw), FHJIT_ERR_ARGUMENT,
                 "null parameter table");
  expect_failure(&f, fhjit_interpret(f.g, f.params, f.pstride, NULL, f.resw), FHJIT_ERR_ARGUMENT,
                 "null input array");
  expect_failure(&f, fhjit_interpret(f.g, f.params, f.pstride, ins, NULL), FHJIT_ERR_ARGUMENT,
                 "null result array");
  const void *ins_null[] = {f.inw[0], NULL};
  expect_failure(&f, fhjit_interpret(f.g, f.params, f.pstride, ins_null, f.resw),
                 FHJIT_ERR_ARGUMENT, "%y");
  void *res_null[] = {f.resw[0], NULL};
  expect_failure(&f, fhjit_interpret(f.g, f.params, f.pstride, ins, res_null), FHJIT_ERR_ARGUMENT,
                 "result #1");
  ck_assert_int_eq(fhjit_interpret(NULL, f.params, f.pstride, ins, f.resw), FHJIT_ERR_ARGUMENT);
  /* pstride too small for the limbs */
  expect_failure(&f, fhjit_interpret(f.g, f.params, 1, ins, f.resw), FHJIT_ERR_ARGUMENT,
                 "pstride");
  /* so large that row 7 lies past the address space: refused, not read
   * (r * pstride overflowed before) */
  expect_failure(&f, fhjit_interpret(f.g, f.params, INT64_MAX, ins, f.resw), FHJIT_ERR_ARGUMENT,
                 "address space");
  expect_failure(&f, fhjit_interpret(f.g, f.params, INT64_MAX / 7 / (int64_t)wsize, ins, f.resw),
                 FHJIT_ERR_ARGUMENT, "address space");

  /* an input element that is not lazy: 2q of its limb (limb 1 here) */
  int64_t bad = 8 + 3; /* y[row 1, i 3] */
  uint64_t two_q = 2 * f.q[1];
  uint64_t saved = tu_word(tu_ws(f.radix), f.inw[1], bad);
  if (f.radix == FHJIT_R32) ((uint32_t *)f.inw[1])[bad] = (uint32_t)two_q;
  else ((uint64_t *)f.inw[1])[bad] = two_q;
  expect_failure(&f, fhjit_interpret(f.g, f.params, f.pstride, ins, f.resw), FHJIT_ERR_ARGUMENT,
                 "input %y");
  ck_assert(tu_contains(fhjit_last_error(f.ctx), "lazy"));
  /* 2q - 1 is fine */
  if (f.radix == FHJIT_R32) ((uint32_t *)f.inw[1])[bad] = (uint32_t)(two_q - 1);
  else ((uint64_t *)f.inw[1])[bad] = two_q - 1;
  ck_assert_int_eq(fhjit_interpret(f.g, f.params, f.pstride, ins, f.resw), FHJIT_OK);
  if (f.radix == FHJIT_R32) ((uint32_t *)f.inw[1])[bad] = (uint32_t)saved;
  else ((uint64_t *)f.inw[1])[bad] = saved;
  for (int k = 0; k < f.nres; k++)
    memset(f.resw[k], 0xA5, wsize * (size_t)(fhjit_type_elements(&f.rtype[k]) + GUARD));

  /* a parameter table that does not hold what SPEC section 2 says */
  void *bad_params = malloc(8 * (size_t)f.pstride * wsize);
  const int rows_to_break[] = {0, 3, 4, 5};
  const char *frags[] = {"row 0", "rows 3 and 4", "rows 3 and 4", "row 5"};
  for (int t = 0; t < 4; t++) {
    memcpy(bad_params, f.params, 8 * (size_t)f.pstride * wsize);
    int64_t idx = rows_to_break[t] * f.pstride + 1; /* limb 1 */
    if (f.radix == FHJIT_R32) ((uint32_t *)bad_params)[idx] ^= 2;
    else ((uint64_t *)bad_params)[idx] ^= 2;
    fhjit_status st = fhjit_interpret(f.g, bad_params, f.pstride, ins, f.resw);
    expect_failure(&f, st, t == 0 ? FHJIT_ERR_MODULUS : FHJIT_ERR_ARGUMENT, frags[t]);
    ck_assert(tu_contains(fhjit_last_error(f.ctx), "column 1"));
  }
  free(bad_params);
  fx_free(&f);
}
END_TEST

/* A larger random check of every op on many elements, against tu_ref, so
 * that the interpreter meets every edge value in both radices. */
START_TEST(test_many_elements) {
  fx f;
  fx_init(&f, radix_of(_i), 4);
  const int64_t b[] = {4};
  tin *x = fx_input(&f, "x", tu_poly(2, 1, b, 4, 256), NULL);
  tin *y = fx_input(&f, "y", tu_poly(2, 1, b, 4, 256), NULL);
  const tu_op ops[] = {TU_ADD, TU_SUB, TU_NEG, TU_ADD_LAZY, TU_MUL, TU_TO_MONT, TU_FROM_MONT};
  fhjit_graph *g = f.g;
  for (int o = 0; o < 7; o++) {
    fhjit_value v;
    switch (ops[o]) {
    case TU_ADD: v = fhjit_add(g, x->v, y->v); break;
    case TU_SUB: v = fhjit_sub(g, x->v, y->v); break;
    case TU_NEG: v = fhjit_neg(g, x->v); break;
    case TU_ADD_LAZY: v = fhjit_add_lazy(g, x->v, y->v); break;
    case TU_MUL: v = fhjit_mul(g, x->v, y->v); break;
    case TU_TO_MONT: v = fhjit_to_mont(g, x->v); break;
    default: v = fhjit_from_mont(g, x->v); break;
    }
    fhjit_output(g, v, tu_op_name(ops[o]));
  }
  fx_run(&f);
  for (int o = 0; o < 7; o++) {
    int k = fx_result_of_output(&f, tu_op_name(ops[o]));
    for (int64_t c = 0; c < 2; c++)
      for (int64_t bb = 0; bb < 4; bb++)
        for (int64_t r = 0; r < 4; r++)
          for (int64_t i = 0; i < 256; i++) {
            int64_t bi[] = {bb};
            EXPECT_EQ(&f, res_at(&f, k, c, bi, r, i),
                      ref(&f, ops[o], r, at(x, c, bi, r, i), at(y, c, bi, r, i)),
                      tu_op_name(ops[o]), c, bb, r, i);
          }
  }
  fx_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("interp");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_tensor_product, 0, 2);
  tcase_add_loop_test(tc, test_pointwise_broadcast, 0, 2);
  tcase_add_loop_test(tc, test_strided_views, 0, 2);
  tcase_add_loop_test(tc, test_compressed, 0, 2);
  tcase_add_loop_test(tc, test_plain_ops, 0, 2);
  tcase_add_loop_test(tc, test_keyswitch, 0, 2);
  tcase_add_loop_test(tc, test_outputs, 0, 2);
  tcase_add_loop_test(tc, test_only_views, 0, 2);
  tcase_add_loop_test(tc, test_in_place, 0, 2);
  tcase_add_loop_test(tc, test_failures, 0, 2);
  tcase_add_loop_test(tc, test_many_elements, 0, 2);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
