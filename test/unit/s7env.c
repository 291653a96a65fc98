/* s7env.c: the shared set-up of the section 7 unit tests (s7env.h). */
#include "s7env.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

uint64_t s7_wget(const s7env *e, const void *b, int64_t i) {
  return e->ws == 4 ? ((const uint32_t *)b)[i] : ((const uint64_t *)b)[i];
}

void s7_wput(const s7env *e, void *b, int64_t i, uint64_t x) {
  if (e->ws == 4) ((uint32_t *)b)[i] = (uint32_t)x;
  else ((uint64_t *)b)[i] = x;
}

void s7_env_init(s7env *e, fhjit_radix radix, int m, int logn, uint64_t seed) {
  ck_assert_int_le(m, S7_MAXM);
  memset(e, 0, sizeof *e);
  e->ctx = fhjit_context_create();
  e->radix = radix;
  e->ws = radix == FHJIT_R32 ? 4 : 8;
  e->m = m;
  e->n = INT64_C(1) << logn;
  e->seed = seed;
  uint64_t near[S7_MAXM], far[S7_MAXM];
  int nb = radix == FHJIT_R32 ? 30 : 60, fb = radix == FHJIT_R32 ? 22 : 41;
  /* q = 1 mod 2N: the primes of N <= 2^10 for every smaller N too */
  uint64_t twon = e->n > 1024 ? 2 * (uint64_t)e->n : 2048;
  ck_assert_int_eq(fhjit_find_primes(NULL, nb, twon, S7_MAXM, near), FHJIT_OK);
  ck_assert_int_eq(fhjit_find_primes(NULL, fb, twon, S7_MAXM, far), FHJIT_OK);
  for (int i = 0; i < m; i++) e->q[i] = i % 3 == 1 ? far[i] : near[i];
  e->params = malloc(8 * e->ws * (size_t)m);
  e->fwd = malloc(e->ws * (size_t)(m * e->n));
  e->inv = malloc(e->ws * (size_t)(m * e->n));
  ck_assert_int_eq(fhjit_param_table(e->ctx, radix, e->q, m, e->n, 1, 0, e->params, m),
                   FHJIT_OK);
  ck_assert_int_eq(fhjit_twiddle_tables(e->ctx, radix, e->q, m, e->n, e->fwd, e->inv),
                   FHJIT_OK);
}

void s7_env_free(s7env *e) {
  fhjit_context_destroy(e->ctx);
  free(e->params);
  free(e->fwd);
  free(e->inv);
}

fhjit_graph *s7_graph(s7env *e, const char *name, int special, int alpha) {
  fhjit_graph *g = fhjit_graph_create(e->ctx, name, e->radix);
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(fhjit_graph_set_moduli(g, e->q, e->m), FHJIT_OK);
  if (special) ck_assert_int_eq(fhjit_graph_set_special(g, special), FHJIT_OK);
  if (alpha) ck_assert_int_eq(fhjit_graph_set_digits(g, alpha), FHJIT_OK);
  return g;
}

fhjit_value s7_twiddles(s7env *e, fhjit_graph *g, const char *name) {
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = e->m, .n = e->n};
  return fhjit_input(g, name, &t);
}

fhjit_value s7_table(fhjit_graph *g, const char *name, int64_t len) {
  fhjit_type t = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = len};
  return fhjit_input(g, name, &t);
}

void *s7_fill(s7env *e, fhjit_graph *g, int32_t i) {
  fhjit_type t;
  ck_assert_int_eq(fhjit_input_binding(g, i, &t, NULL), FHJIT_OK);
  if (t.kind == FHJIT_KIND_TWIDDLE) return NULL;
  int64_t len = fhjit_type_elements(&t);
  void *buf = malloc(e->ws * (size_t)len);
  ck_assert_ptr_nonnull(buf);
  if (t.kind == FHJIT_KIND_TABLE) {
    int64_t tl;
    ck_assert_msg(fhjit_input_table(g, i, buf, &tl) == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
    ck_assert_int_eq(tl, len);
    return buf;
  }
  int32_t basis[S7_MAXM], rows = (int32_t)t.rows;
  if (t.kind == FHJIT_KIND_POLY)
    ck_assert_int_eq(fhjit_value_basis(g, fhjit_input_value(g, i), basis, S7_MAXM, &rows),
                     FHJIT_OK);
  else /* keys: rows are chain positions */
    for (int r = 0; r < S7_MAXM; r++) basis[r] = r;
  for (int64_t k = 0; k < len; k++) {
    int64_t r = (k / t.n) % t.rows, idx = k % t.n;
    uint64_t q = e->q[basis[r]];
    uint64_t edge[] = {0, 1, q - 1, q, q + 1, 2 * q - 1};
    s7_wput(e, buf, k, idx < 6 && (k / t.n / t.rows) % 3 == 0 ? edge[idx] : tu_lazy(&e->seed, q));
  }
  return buf;
}
