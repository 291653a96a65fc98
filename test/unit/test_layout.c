/* test_layout.c: walking a layout through the public API
 * (fhjit_layout_axes, fhjit_layout_offset, fhjit_layout_span) against an
 * independent computation: random types of every kind (pt and ct with 0 to
 * 4 batch axes, key tables, twiddle tables) under random layouts (offsets,
 * broadcast stride-0 axes, junk in the strides of absent axes), every
 * offset recomputed in 128 bits from named coordinates by fhjit.h's layout
 * formula; dense layouts (fhjit_dense_layout) walk 0, 1, 2, ... in
 * row-major order; coordinates out of range, offsets past INT64_MAX and bad
 * arguments are refused; an output's view of a result walks that result. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "testutil.h"

typedef __int128 i128;

/* A coordinate by name, as fhjit.h's layout formula reads it. */
typedef struct named {
  int64_t digit, comp, batch[FHJIT_MAX_BATCH], row, index;
} named;

/* The element offset of x in 128 bits: offset + d*digit_stride (KEY) +
 * c*comp_stride (with a component axis) + sum_a b_a*batch_stride[a] +
 * r*row_stride + i*index_stride. */
static i128 ref_offset(const fhjit_type *t, const fhjit_layout *l, const named *x) {
  i128 off = (i128)l->offset + (i128)x->row * l->row_stride + (i128)x->index * l->index_stride;
  if (t->kind == FHJIT_KIND_KEY) off += (i128)x->digit * l->digit_stride;
  if (t->comps > 0) off += (i128)x->comp * l->comp_stride;
  for (int a = 0; a < t->nbatch; a++) off += (i128)x->batch[a] * l->batch_stride[a];
  return off;
}

/* x as the API's coordinates, in fhjit.h's axis order; their count. */
static int to_coords(const fhjit_type *t, const named *x, int64_t coords[FHJIT_MAX_AXES]) {
  int k = 0;
  if (t->kind == FHJIT_KIND_KEY) coords[k++] = x->digit;
  if (t->comps > 0) coords[k++] = x->comp;
  for (int a = 0; a < t->nbatch; a++) coords[k++] = x->batch[a];
  coords[k++] = x->row;
  coords[k++] = x->index;
  return k;
}

/* The largest coordinate of every named axis (the extents less 1). */
static named last_of(const fhjit_type *t) {
  named x = {.digit = t->kind == FHJIT_KIND_KEY ? t->digits - 1 : 0,
             .comp = t->comps > 0 ? t->comps - 1 : 0, .row = t->rows - 1, .index = t->n - 1};
  for (int a = 0; a < t->nbatch; a++) x.batch[a] = t->batch[a] - 1;
  return x;
}

/* A uniformly random coordinate of t. */
static named random_named(uint64_t *st, const fhjit_type *t) {
  named last = last_of(t), x = {0};
  x.digit = (int64_t)tu_below(st, (uint64_t)last.digit + 1);
  x.comp = (int64_t)tu_below(st, (uint64_t)last.comp + 1);
  for (int a = 0; a < t->nbatch; a++)
    x.batch[a] = (int64_t)tu_below(st, (uint64_t)last.batch[a] + 1);
  x.row = (int64_t)tu_below(st, (uint64_t)last.row + 1);
  x.index = (int64_t)tu_below(st, (uint64_t)last.index + 1);
  return x;
}

static int64_t between(uint64_t *st, int64_t lo, int64_t hi) {
  return lo + (int64_t)tu_below(st, (uint64_t)(hi - lo + 1));
}

/* A small random type of any kind. */
static fhjit_type random_type(uint64_t *st) {
  int64_t rows = between(st, 1, 4), n = between(st, 1, 8);
  switch (tu_below(st, 3)) {
  case 0: return tu_key(between(st, 1, 3), rows, n);
  case 1: return (fhjit_type){.kind = FHJIT_KIND_TWIDDLE, .rows = rows, .n = n};
  default: {
    int64_t batch[FHJIT_MAX_BATCH];
    int nbatch = (int)tu_below(st, FHJIT_MAX_BATCH + 1);
    for (int a = 0; a < nbatch; a++) batch[a] = between(st, 1, 3);
    return tu_poly((int)tu_below(st, 4), nbatch, batch, rows, n);
  }
  }
}

/* A stride: 0 (a broadcast axis) one time in four, else below `bound`. */
static int64_t random_stride(uint64_t *st, uint64_t bound) {
  return tu_below(st, 4) ? (int64_t)tu_below(st, bound) : 0;
}

/* Random strides and offset below `bound`; the strides of axes t lacks are
 * junk (negative too), which the API must ignore. */
static fhjit_layout random_layout(uint64_t *st, const fhjit_type *t, uint64_t bound) {
  fhjit_layout l = {.offset = (int64_t)tu_below(st, bound), .row_stride = random_stride(st, bound),
                    .index_stride = random_stride(st, bound)};
  l.digit_stride = t->kind == FHJIT_KIND_KEY ? random_stride(st, bound) : -7;
  l.comp_stride = t->comps > 0 ? random_stride(st, bound) : -(int64_t)tu_below(st, 1000);
  for (int a = 0; a < FHJIT_MAX_BATCH; a++)
    l.batch_stride[a] = a < t->nbatch ? random_stride(st, bound) : INT64_MIN + a;
  return l;
}

/* What fhjit_layout_offset must answer for x: its offset, or -1 past
 * INT64_MAX. */
static int64_t want_offset(const fhjit_type *t, const fhjit_layout *l, const named *x) {
  i128 off = ref_offset(t, l, x);
  return off > INT64_MAX ? -1 : (int64_t)off;
}

/* The strides of fhjit.h's formula in its axis order; their count. */
static int named_strides(const fhjit_type *t, const fhjit_layout *l, int64_t out[FHJIT_MAX_AXES]) {
  int k = 0;
  if (t->kind == FHJIT_KIND_KEY) out[k++] = l->digit_stride;
  if (t->comps > 0) out[k++] = l->comp_stride;
  for (int a = 0; a < t->nbatch; a++) out[k++] = l->batch_stride[a];
  out[k++] = l->row_stride;
  out[k++] = l->index_stride;
  return k;
}

/* The axes: the documented order, extents and strides, and each stride the
 * step of the offset along its axis. */
static void check_axes(const fhjit_type *t, const fhjit_layout *l) {
  int64_t ext[FHJIT_MAX_AXES], str[FHJIT_MAX_AXES], last[FHJIT_MAX_AXES], want[FHJIT_MAX_AXES];
  int32_t naxes = -1;
  ck_assert_int_eq(fhjit_layout_axes(t, l, ext, str, &naxes), FHJIT_OK);
  named x = last_of(t);
  int k = to_coords(t, &x, last);
  ck_assert_int_eq(named_strides(t, l, want), k);
  ck_assert_int_eq(naxes, k);
  ck_assert_int_le(naxes, FHJIT_MAX_AXES);
  ck_assert_int_eq(ext[naxes - 2], t->rows);
  ck_assert_int_eq(ext[naxes - 1], t->n);
  for (int a = 0; a < k; a++) {
    ck_assert_int_eq(ext[a], last[a] + 1);
    ck_assert_int_eq(str[a], want[a]);
    int64_t unit[FHJIT_MAX_AXES] = {0};
    unit[a] = 1;
    if (ext[a] > 1) ck_assert_int_eq(fhjit_layout_offset(t, l, unit) - l->offset, str[a]);
  }
}

/* Coordinates out of range on one axis: refused, however far out. */
static void check_out_of_range(uint64_t *st, const fhjit_type *t, const fhjit_layout *l,
                               const int64_t *coords, int k) {
  int a = (int)tu_below(st, (uint64_t)k);
  int64_t ext[FHJIT_MAX_AXES], str[FHJIT_MAX_AXES], bad[FHJIT_MAX_AXES];
  int32_t naxes;
  ck_assert_int_eq(fhjit_layout_axes(t, l, ext, str, &naxes), FHJIT_OK);
  const int64_t outside[] = {-1, ext[a], ext[a] + 1 + (int64_t)tu_below(st, 1000), INT64_MAX,
                             INT64_MIN};
  for (size_t i = 0; i < sizeof outside / sizeof *outside; i++) {
    memcpy(bad, coords, sizeof bad);
    bad[a] = outside[i];
    ck_assert_int_eq(fhjit_layout_offset(t, l, bad), -1);
  }
}

START_TEST(random_layouts) {
  uint64_t st = 0x1a7e55;
  for (int iter = 0; iter < 3000; iter++) {
    fhjit_type t = random_type(&st);
    fhjit_layout l = random_layout(&st, &t, iter % 3 ? 1000 : 3);
    check_axes(&t, &l);
    named last = last_of(&t);
    ck_assert_int_eq(fhjit_layout_span(&t, &l), want_offset(&t, &l, &last) + 1);
    for (int s = 0; s < 40; s++) {
      named x = random_named(&st, &t);
      int64_t coords[FHJIT_MAX_AXES];
      int k = to_coords(&t, &x, coords);
      int64_t got = fhjit_layout_offset(&t, &l, coords);
      ck_assert_msg(got == want_offset(&t, &l, &x), "iteration %d: offset %lld, want %lld", iter,
                    (long long)got, (long long)want_offset(&t, &l, &x));
      ck_assert_int_lt(got, fhjit_layout_span(&t, &l));
      check_out_of_range(&st, &t, &l, coords, k);
    }
  }
}
END_TEST

/* Dense layouts: the row-major walk of the coordinates (the last axis
 * fastest) meets offsets 0, 1, 2, ..., and the span is the count. */
START_TEST(dense_walks_in_order) {
  uint64_t st = 0xde45e;
  for (int iter = 0; iter < 300; iter++) {
    fhjit_type t = random_type(&st);
    fhjit_layout l;
    ck_assert_int_eq(fhjit_dense_layout(&t, &l), FHJIT_OK);
    int64_t ext[FHJIT_MAX_AXES], str[FHJIT_MAX_AXES], coords[FHJIT_MAX_AXES] = {0};
    int32_t k;
    ck_assert_int_eq(fhjit_layout_axes(&t, &l, ext, str, &k), FHJIT_OK);
    int64_t count = fhjit_type_elements(&t);
    ck_assert_int_eq(fhjit_layout_span(&t, &l), count);
    for (int64_t e = 0; e < count; e++) {
      ck_assert_int_eq(fhjit_layout_offset(&t, &l, coords), e);
      for (int32_t a = k - 1; a >= 0 && ++coords[a] == ext[a]; a--) coords[a] = 0;
    }
  }
}
END_TEST

/* Large extents and strides: offsets and spans past INT64_MAX are -1, the
 * others exact (up to INT64_MAX itself). */
START_TEST(overflow_refused) {
  uint64_t st = 0x0f10;
  const int64_t batch[2] = {INT64_C(1) << 20, 3};
  fhjit_type types[] = {tu_poly(3, 2, batch, 1 << 10, INT64_C(1) << 24),
                        tu_key(1 << 12, 1 << 10, INT64_C(1) << 30),
                        {.kind = FHJIT_KIND_TWIDDLE, .rows = INT64_C(1) << 31,
                         .n = INT64_C(1) << 31}};
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
    const fhjit_type *t = &types[ti];
    ck_assert_int_gt(fhjit_type_elements(t), 0);
    for (int iter = 0; iter < 2000; iter++) {
      /* strides of 0 to 62 bits: some layouts fit, most do not */
      uint64_t bits = tu_below(&st, 63);
      fhjit_layout l = random_layout(&st, t, UINT64_C(1) << bits);
      named last = last_of(t), x = random_named(&st, t);
      ck_assert_int_eq(fhjit_layout_span(t, &l), ref_offset(t, &l, &last) >= INT64_MAX
                                                     ? -1
                                                     : (int64_t)ref_offset(t, &l, &last) + 1);
      int64_t coords[FHJIT_MAX_AXES];
      to_coords(t, &x, coords);
      ck_assert_int_eq(fhjit_layout_offset(t, &l, coords), want_offset(t, &l, &x));
      to_coords(t, &last, coords);
      ck_assert_int_eq(fhjit_layout_offset(t, &l, coords), want_offset(t, &l, &last));
    }
  }
  /* exactly INT64_MAX: the last offset fits, the span does not */
  fhjit_type t = tu_poly(0, 0, NULL, 2, 2);
  fhjit_layout l = {.offset = 1, .row_stride = INT64_MAX / 2, .index_stride = INT64_MAX / 2};
  int64_t top[2] = {1, 1};
  ck_assert_int_eq(fhjit_layout_offset(&t, &l, top), INT64_MAX);
  ck_assert_int_eq(fhjit_layout_span(&t, &l), -1);
  l.offset = 0;
  ck_assert_int_eq(fhjit_layout_span(&t, &l), INT64_MAX);
  l.offset = 2;
  ck_assert_int_eq(fhjit_layout_offset(&t, &l, top), -1);
}
END_TEST

/* Bad arguments: -1 or FHJIT_ERR_ARGUMENT, and the outputs untouched. */
static void expect_refused(const fhjit_type *t, const fhjit_layout *l, const char *why) {
  int64_t ext[FHJIT_MAX_AXES] = {0}, str[FHJIT_MAX_AXES] = {0}, coords[FHJIT_MAX_AXES] = {0};
  int32_t naxes = 99;
  ck_assert_msg(fhjit_layout_axes(t, l, ext, str, &naxes) == FHJIT_ERR_ARGUMENT, "%s", why);
  ck_assert_int_eq(naxes, 99);
  ck_assert_msg(fhjit_layout_offset(t, l, coords) == -1, "%s", why);
  ck_assert_msg(fhjit_layout_span(t, l) == -1, "%s", why);
}

/* t under l refused, however t or l was spoilt. */
static void refused(fhjit_type t, fhjit_layout l, const char *why) { expect_refused(&t, &l, why); }

START_TEST(bad_arguments) {
  fhjit_type t = tu_poly(2, 1, (const int64_t[]){3}, 2, 4), u;
  fhjit_layout l, m;
  ck_assert_int_eq(fhjit_dense_layout(&t, &l), FHJIT_OK);
  int64_t ext[FHJIT_MAX_AXES], str[FHJIT_MAX_AXES], coords[FHJIT_MAX_AXES] = {0};
  int32_t naxes;
  expect_refused(NULL, &l, "null type");
  expect_refused(&t, NULL, "null layout");
  ck_assert_int_eq(fhjit_layout_axes(&t, &l, NULL, str, &naxes), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_layout_axes(&t, &l, ext, NULL, &naxes), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_layout_axes(&t, &l, ext, str, NULL), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_layout_offset(&t, &l, NULL), -1);
  ck_assert_int_eq(fhjit_layout_offset(&t, &l, coords), 0);

  /* types that are not concrete or not well formed */
  u = t, u.rows = FHJIT_UNKNOWN, refused(u, l, "unknown rows");
  u = t, u.batch[0] = FHJIT_UNKNOWN, refused(u, l, "unknown batch extent");
  u = t, u.n = 0, refused(u, l, "n = 0");
  u = t, u.rows = INT64_C(1) << 40, u.n = INT64_C(1) << 40, refused(u, l, "count overflows");
  u = t, u.comps = 4, refused(u, l, "four components");
  u = t, u.nbatch = FHJIT_MAX_BATCH + 1, refused(u, l, "five batch axes");
  u = t, u.nbatch = -1, refused(u, l, "negative batch rank");
  u = t, u.kind = (fhjit_kind)7, refused(u, l, "unknown kind");
  u = tu_key(2, 2, 4), u.comps = 3, refused(u, l, "key of three components");
  u = tu_key(0, 2, 4), refused(u, l, "key of no digits");
  u = (fhjit_type){.kind = FHJIT_KIND_TWIDDLE, .comps = 1, .rows = 2, .n = 4};
  refused(u, l, "twiddles with a component axis");
  u.comps = 0, u.nbatch = 1, u.batch[0] = 2, refused(u, l, "twiddles with a batch axis");

  /* negative strides and offsets of the type's axes */
  m = l, m.offset = -1, refused(t, m, "negative offset");
  m = l, m.comp_stride = -1, refused(t, m, "negative component stride");
  m = l, m.batch_stride[0] = -1, refused(t, m, "negative batch stride");
  m = l, m.row_stride = INT64_MIN, refused(t, m, "negative row stride");
  m = l, m.index_stride = -1, refused(t, m, "negative index stride");
  u = tu_key(2, 2, 4), fhjit_dense_layout(&u, &m), m.digit_stride = -8;
  refused(u, m, "negative digit stride");

  /* concrete exactly when fhjit_type_elements says so, up to the overflow */
  const int64_t big[][2] = {{INT64_C(1) << 31, INT64_C(1) << 31},
                            {INT64_C(1) << 31, INT64_C(1) << 32},
                            {3, INT64_MAX / 3},
                            {3, INT64_MAX / 3 + 1},
                            {INT64_MAX, 1}};
  for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
    u = tu_poly(0, 0, NULL, big[i][0], big[i][1]);
    m = (fhjit_layout){0};
    int ok = fhjit_type_elements(&u) > 0;
    ck_assert_int_eq(fhjit_layout_axes(&u, &m, ext, str, &naxes),
                     ok ? FHJIT_OK : FHJIT_ERR_ARGUMENT);
    ck_assert_int_eq(fhjit_layout_span(&u, &m), ok ? 1 : -1);
  }
  u = tu_poly(0, 0, NULL, 3, INT64_MAX / 3);
  ck_assert_int_eq(fhjit_type_elements(&u), INT64_MAX - 1);

  /* the strides of axes the type lacks are ignored */
  u = tu_poly(0, 1, (const int64_t[]){3}, 2, 4);
  fhjit_dense_layout(&u, &m);
  m.comp_stride = m.digit_stride = -5;
  m.batch_stride[1] = m.batch_stride[3] = INT64_MIN;
  ck_assert_int_eq(fhjit_layout_axes(&u, &m, ext, str, &naxes), FHJIT_OK);
  ck_assert_int_eq(naxes, 3);
  ck_assert_int_eq(fhjit_layout_span(&u, &m), 24);
  int64_t at[3] = {2, 1, 3};
  ck_assert_int_eq(fhjit_layout_offset(&u, &m, at), 2 * 8 + 4 + 3);
}
END_TEST

/* The layout of an output that is a component of a result (a view of the
 * result buffer, fhjit_output_info_get) walks that component of the
 * result's dense layout, and spans no more than the result. */
START_TEST(output_views) {
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(c, "views", FHJIT_R62);
  const int64_t batch[2] = {2, 3};
  fhjit_type ct = tu_poly(3, 2, batch, 2, 4);
  fhjit_value a = fhjit_input(g, "a", &ct);
  fhjit_value sq = fhjit_mul(g, a, a);
  ck_assert_int_eq(fhjit_output(g, sq, "sq"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, fhjit_extract(g, sq, 2), "sq2"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
  fhjit_output_info whole, part;
  ck_assert_int_eq(fhjit_output_info_get(g, 0, &whole), FHJIT_OK);
  ck_assert_int_eq(fhjit_output_info_get(g, 1, &part), FHJIT_OK);
  ck_assert_int_eq(part.is_input_alias, 0);
  ck_assert_int_eq(part.source, whole.source);
  ck_assert_int_eq(part.component, 2);
  fhjit_type rt;
  fhjit_layout rl;
  ck_assert_int_eq(fhjit_result_type(g, whole.source, &rt), FHJIT_OK);
  ck_assert_int_eq(fhjit_dense_layout(&rt, &rl), FHJIT_OK);
  ck_assert_int_le(fhjit_layout_span(&part.type, &part.layout), fhjit_layout_span(&rt, &rl));
  int64_t ext[FHJIT_MAX_AXES], str[FHJIT_MAX_AXES], in_part[FHJIT_MAX_AXES] = {0}, in_whole[5];
  int32_t k;
  ck_assert_int_eq(fhjit_layout_axes(&part.type, &part.layout, ext, str, &k), FHJIT_OK);
  ck_assert_int_eq(k, 4); /* [batch0, batch1, row, index]: no component axis */
  for (int64_t e = 0; e < fhjit_type_elements(&part.type); e++) {
    in_whole[0] = 2;
    memcpy(in_whole + 1, in_part, 4 * sizeof *in_part);
    ck_assert_int_eq(fhjit_layout_offset(&part.type, &part.layout, in_part),
                     fhjit_layout_offset(&rt, &rl, in_whole));
    for (int32_t x = k - 1; x >= 0 && ++in_part[x] == ext[x]; x--) in_part[x] = 0;
  }
  fhjit_context_destroy(c);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("layout");
  TCase *tc = tcase_create("layout");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, random_layouts);
  tcase_add_test(tc, dense_walks_in_order);
  tcase_add_test(tc, overflow_refused);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, output_views);
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
