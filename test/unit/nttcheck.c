/* nttcheck.c: the host NTT against the reference, and the NTT tests'
 * tables (nttcheck.h). */
#include "nttcheck.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

void nttcheck_init(nttcheck *c, fhjit_context *ctx, fhjit_radix radix, ir_ntt_kind kind, int logn,
                   int rows, int batch, const uint64_t *q) {
  memset(c, 0, sizeof *c);
  c->ctx = ctx;
  c->radix = radix;
  c->kind = kind;
  c->logn = logn;
  c->rows = rows;
  c->batch = batch;
  c->n = INT64_C(1) << logn;
  c->brows = (int64_t)rows * batch;
  c->ws = radix == FHJIT_R32 ? 4 : 8;
  ck_assert_int_le(rows, NTTCHECK_MAXROWS);
  memcpy(c->q, q, sizeof q[0] * (size_t)rows);
  size_t ws = c->ws;
  int64_t n = c->n, brows = c->brows;
  c->params = malloc(8 * ws * (size_t)rows);
  c->tw = malloc(ws * (size_t)(rows * n));
  c->in = malloc(ws * (size_t)(brows * n));
  c->out = malloc(ws * (size_t)(brows * n));
  ck_assert(c->params && c->tw && c->in && c->out);
  ck_assert_int_eq(fhjit_param_table(ctx, radix, c->q, rows, n, 1, 1, c->params, rows), FHJIT_OK);
  int fwd = ir_ntt_is_forward(kind);
  ck_assert_int_eq(fhjit_twiddle_tables(ctx, radix, c->q, rows, n, fwd ? c->tw : NULL, fwd ? NULL : c->tw),
                   FHJIT_OK);
  memset(c->out, 0xA5, ws * (size_t)(brows * n));
}

void nttcheck_fill(nttcheck *c, uint64_t *seed, int pattern) {
  for (int64_t br = 0; br < c->brows; br++) {
    uint64_t qq = c->q[br % c->rows];
    const uint64_t edges[4] = {0, qq - 1, qq, 2 * qq - 1};
    for (int64_t i = 0; i < c->n; i++) {
      uint64_t v;
      if (pattern == 1) v = edges[tu_below(seed, 4)];
      else if (pattern == 2) v = 2 * qq - 1;
      else v = tu_below(seed, 8) == 0 ? edges[tu_below(seed, 4)] : tu_below(seed, 2 * qq);
      tu_set_word(c->ws, c->in, br * c->n + i, v);
    }
  }
}

void nttcheck_run(nttcheck *c, const lw_ntt_plan *plan) {
  int64_t n = c->n;
  size_t ws = c->ws;
  lw_ntt_host *h = NULL;
  fhjit_status st = lw_ntt_host_create(c->ctx, plan, NULL, &h);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(c->ctx));
  st = lw_ntt_host_run(c->ctx, h, c->params, c->rows, c->tw, c->in, c->out, NULL, 2);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(c->ctx));
  lw_ntt_host_destroy(h);

  uint64_t *row = malloc(8 * (size_t)n), *twrow = malloc(8 * (size_t)n);
  ck_assert(row && twrow);
  for (int64_t br = 0; br < c->brows; br++) {
    int r = (int)(br % c->rows);
    ir_modulus m = ir_modulus_make(c->radix, c->q[r]);
    uint64_t n_inv_r = tu_word(ws, c->params, 7 * c->rows + r);
    for (int64_t i = 0; i < n; i++) {
      row[i] = tu_word(ws, c->in, br * n + i);
      twrow[i] = tu_word(ws, c->tw, r * n + i);
    }
    ir_ntt_row(c->kind, &m, n_inv_r, c->logn, twrow, row);
    for (int64_t i = 0; i < n; i++) {
      uint64_t got = tu_word(ws, c->out, br * n + i);
      if (got != row[i]) {
        char desc[400];
        lw_ntt_plan_describe(plan, desc, sizeof desc);
        ck_abort_msg("%s kind %d N=2^%d rows %d batch %d: batch-row %lld index %lld is %llu, "
                     "reference %llu (q=%llu; plan %s)",
                     ir_radix_name(c->radix), (int)c->kind, c->logn, c->rows, c->batch,
                     (long long)br, (long long)i, (unsigned long long)got,
                     (unsigned long long)row[i], (unsigned long long)c->q[r], desc);
      }
    }
  }
  free(row);
  free(twrow);
}

void nttcheck_free(nttcheck *c) {
  free(c->params);
  free(c->tw);
  free(c->in);
  free(c->out);
}

void nttcheck_tables(fhjit_context *ctx, fhjit_radix radix, const uint64_t *q, int rows, int64_t n,
                     void **params, void **fwd, void **inv) {
  size_t ws = radix == FHJIT_R32 ? 4 : 8, t = (size_t)rows * (size_t)n * ws;
  *params = malloc(8 * (size_t)rows * ws);
  *fwd = malloc(t);
  *inv = malloc(t);
  ck_assert(*params && *fwd && *inv);
  ck_assert_int_eq(fhjit_param_table(ctx, radix, q, rows, n, 1, 1, *params, rows), FHJIT_OK);
  ck_assert_int_eq(fhjit_twiddle_tables(ctx, radix, q, rows, n, *fwd, *inv), FHJIT_OK);
}
