/* test_bconv.c: the basis conversion kernel (lib/lower/bconv.c) on the host
 * JIT, word for word against (1) the test's own reference of SPEC section
 * 7's bconv and rescale lift, written with unsigned __int128 remainders and
 * bigint.c's inverses (no lib/ir code), (2) fhjit's own semantics, the
 * interpreter running a graph of fhjit_bconv, and (3) the identity
 * sum_i V_i h_i = X + e S* (0 <= e < l) through bigint.c's CRT. Both
 * radices, both forms, the lift, 1 to 16 (r32) / 8 (r62) source rows (and
 * up to 32, the kernel's limit), 1 to 48 targets, N = 2^4 .. 2^10, 1 to 3
 * polynomials through strided views (row stride > N, index stride 2,
 * polynomial strides, a broadcast axis), moduli near each radix's limit,
 * far below and tiny (3, 5, 7, ...), random lazy words and the edges 0, 1,
 * q-1, q, 2q-1. The GPU's inline PTX (the r62 multiply-accumulate, REDC and
 * conditional subtraction) runs through a small PTX interpreter; the GPU
 * kernel compiles to PTX for sm_90 and passes ptxas (skipped with a note
 * when ptxas is missing). Several digits' conversions in one launch
 * (test_digits). Plan errors are recorded, never aborts. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bigint.h"
#include "ir/ir.h"
#include "lower/bconv.h"
#include "lower/ntt.h"
#include "ptxeval.h"
#include "testutil.h"

typedef unsigned __int128 u128;

#define MAXPOS 96

/* ------------------------------------------------------------ the case */

typedef struct tcase {
  fhjit_radix radix;
  int mont, lift;
  int l, m, logn;
  int nax;
  int64_t ext[3];
  int istride;     /* 1 or 2 */
  int broadcast;   /* axis 0 has stride 0 */
  int vec;         /* 0: automatic */
  uint32_t threads;
  int split, unroll; /* 0: automatic */
  int moduli;      /* 0 near the limit, 1 near and far alternating, 2 with tiny ones */
  uint64_t seed;
} tcase;

typedef struct env {
  tcase c;
  fhjit_context *ctx;
  size_t ws;
  int64_t n, polys;
  int npos;                 /* chain length */
  uint64_t chain[MAXPOS];
  int32_t scols[64], dcols[256];
  void *params;
  int64_t pstride;
  lw_bconv_plan plan;
  void *src; /* the strided view's buffer */
  int64_t src_len;
  uint64_t *words; /* dense [polys, l, n] copy of the view's words */
  void *table;     /* table at plan.table_offset */
  int64_t table_len;
} env;

/* Chain: npos distinct primes by class (near the radix limit, far below,
 * tiny), positions shuffled into the source and target columns. */
static void make_chain(env *e) {
  const tcase *c = &e->c;
  int nb = c->radix == FHJIT_R32 ? 30 : 60, fb = c->radix == FHJIT_R32 ? 19 : 37;
  uint64_t near[MAXPOS], far[MAXPOS];
  ck_assert_int_eq(fhjit_find_primes(NULL, nb, 2, MAXPOS, near), FHJIT_OK);
  ck_assert_int_eq(fhjit_find_primes(NULL, fb, 2, MAXPOS, far), FHJIT_OK);
  static const uint64_t tiny[] = {3, 5, 7, 11, 13, 17, 19, 23};
  int ni = 0, fi = 0, ti = 0;
  for (int p = 0; p < e->npos; p++) {
    int cls = c->moduli == 0 ? 0 : (c->moduli == 1 ? p % 2 : p % 3);
    if (cls == 2 && ti >= 8) cls = 1;
    e->chain[p] = cls == 0 ? near[ni++] : cls == 1 ? far[fi++] : tiny[ti++];
  }
  /* a random permutation of the positions: sources first, then targets */
  int32_t perm[MAXPOS];
  for (int p = 0; p < e->npos; p++) perm[p] = p;
  uint64_t s = c->seed ^ 0x5eedc01u;
  for (int p = e->npos - 1; p > 0; p--) {
    int q = (int)tu_below(&s, (uint64_t)p + 1);
    int32_t t = perm[p];
    perm[p] = perm[q], perm[q] = t;
  }
  for (int i = 0; i < c->l; i++) e->scols[i] = perm[i];
  for (int j = 0; j < c->m; j++) e->dcols[j] = perm[c->l + j];
}

/* A source word of row modulus q at coefficient i: edges at the first
 * coefficients, else random lazy (lift: canonical mostly). */
static uint64_t source_word(env *e, uint64_t *s, uint64_t q, int64_t i) {
  if (e->c.lift) {
    uint64_t h = q / 2;
    const uint64_t edges[] = {0, 1, q - 1, h, h > 0 ? h - 1 : 0, h + 1, q, 2 * q - 1};
    if (i < 8) return edges[i] % (2 * q);
    if (i % 7 == 3) return q + tu_below(s, q); /* lazy */
    return tu_below(s, q);
  }
  const uint64_t edges[] = {0, 1, q - 1, q, 2 * q - 1, q + 1, 2 * q - 2};
  if (i < 7) return edges[i];
  return tu_below(s, 2 * q);
}

static void env_init(env *e, const tcase *c) {
  memset(e, 0, sizeof *e);
  e->c = *c;
  e->ctx = fhjit_context_create();
  e->ws = c->radix == FHJIT_R32 ? 4 : 8;
  e->n = INT64_C(1) << c->logn;
  e->polys = 1;
  for (int a = 0; a < c->nax; a++) e->polys *= c->ext[a];
  e->npos = c->l + c->m;
  make_chain(e);
  e->pstride = e->npos + 3;
  e->params = calloc(8 * (size_t)e->pstride, e->ws);
  ck_assert_int_eq(fhjit_param_table(e->ctx, c->radix, e->chain, e->npos, e->n, 0, 0, e->params,
                                     e->pstride),
                   FHJIT_OK);
  /* the view: index stride istride, row stride past N, polynomial strides
   * with gaps (axis 0 broadcast when asked) */
  lw_bconv_plan *p = &e->plan;
  p->radix = c->radix;
  p->mont = c->mont;
  p->lift = c->lift;
  p->l = c->l;
  p->m = c->m;
  p->log_n = c->logn;
  p->polys = e->polys;
  p->src_nax = c->nax;
  p->src_index_stride = c->istride;
  p->src_row_stride = e->n * c->istride + (c->istride == 1 && !c->vec ? 4 : 3);
  if (c->vec > 1) p->src_row_stride = e->n * c->istride + 4; /* keeps vectors aligned */
  int64_t inner = p->src_row_stride * c->l + 8, span = inner;
  for (int a = c->nax - 1; a >= 0; a--) {
    p->src_ext[a] = c->ext[a];
    p->src_stride[a] = span;
    span = span * c->ext[a] + 12;
  }
  if (c->broadcast && c->nax > 0) p->src_stride[0] = 0;
  p->src_offset = c->vec > 1 ? 8 : 5;
  p->table_offset = 7;
  p->src_cols = e->scols;
  p->dst_cols = e->dcols;
  p->vec = c->vec;
  p->threads = c->threads;
  p->split = c->split;
  p->unroll = c->unroll;
  e->src_len = p->src_offset + span + 16;
  e->src = malloc(e->ws * (size_t)e->src_len);
  uint64_t s = c->seed;
  for (int64_t k = 0; k < e->src_len; k++) tu_set_word(e->ws, e->src, k, tu_rand(&s)); /* gaps: garbage */
  e->words = malloc(sizeof *e->words * (size_t)(e->polys * c->l * e->n));
  for (int64_t poly = 0; poly < e->polys; poly++) {
    int64_t off = p->src_offset, rest = poly;
    for (int a = c->nax - 1; a >= 0; a--) {
      off += (rest % c->ext[a]) * p->src_stride[a];
      rest /= c->ext[a];
    }
    for (int r = 0; r < c->l; r++) {
      uint64_t q = e->chain[e->scols[r]];
      for (int64_t i = 0; i < e->n; i++) {
        int64_t at = off + r * p->src_row_stride + i * p->src_index_stride;
        /* a broadcast axis shares the words it already wrote */
        int shared_word = c->broadcast && c->nax > 0 && poly >= e->polys / c->ext[0];
        uint64_t w = shared_word ? tu_word(e->ws, e->src, at) : source_word(e, &s, q, (i + poly * 3) % e->n);
        tu_set_word(e->ws, e->src, at, w);
        e->words[(poly * c->l + r) * e->n + i] = w;
      }
    }
  }
  /* coefficients 7 and 8 (and poly 0's edge rows): words giving the largest
   * V_i = s_i - 1 (the largest sums), the second one lazy */
  for (int64_t poly = 0; poly < e->polys && !c->lift && e->n > 8; poly++) {
    int64_t off = p->src_offset, rest = poly;
    for (int a = c->nax - 1; a >= 0; a--) {
      off += (rest % c->ext[a]) * p->src_stride[a];
      rest /= c->ext[a];
    }
    for (int r = 0; r < c->l; r++) {
      uint64_t q = e->chain[e->scols[r]], h = 1;
      for (int k = 0; k < c->l; k++)
        if (k != r) h = tu_mulmod(h, e->chain[e->scols[k]] % q, q);
      uint64_t x = tu_mulmod(q - 1, h, q); /* X = (s-1) h: V = X h^-1 = s - 1 */
      if (c->mont) x = tu_mulmod(x, (uint64_t)(((u128)1 << tu_word_bits(c->radix)) % q), q);
      for (int64_t i = 7; i <= 8; i++) {
        uint64_t w = i == 8 ? x + q : x;
        tu_set_word(e->ws, e->src, off + r * p->src_row_stride + i * p->src_index_stride, w);
        e->words[(poly * c->l + r) * e->n + i] = w;
      }
    }
  }
  e->table_len = fhjit_bconv_table_size(c->l, c->m);
  e->table = malloc(e->ws * (size_t)(p->table_offset + e->table_len));
  ck_assert_int_eq(fhjit_bconv_table(e->ctx, c->radix, e->chain, e->npos, e->scols, c->l,
                                     e->dcols, c->m, (char *)e->table + e->ws * 7),
                   FHJIT_OK);
}

static void env_free(env *e) {
  fhjit_context_destroy(e->ctx);
  free(e->params);
  free(e->src);
  free(e->words);
  free(e->table);
}

/* ------------------------------------------------------ the reference */

static uint64_t rmod(fhjit_radix radix, uint64_t q) { /* R mod q */
  return (uint64_t)(((u128)1 << tu_word_bits(radix)) % q);
}

/* h_i mod q = prod_{k != i} s_k mod q. */
static uint64_t h_mod(const env *e, int i, uint64_t q) {
  uint64_t h = 1 % q;
  for (int k = 0; k < e->c.l; k++)
    if (k != i) h = tu_mulmod(h, e->chain[e->scols[k]] % q, q);
  return h;
}

/* X_i and V_i of SPEC section 7 for source words w[0..l). */
static void ref_v(const env *e, const uint64_t *w, uint64_t *x, uint64_t *v) {
  for (int i = 0; i < e->c.l; i++) {
    uint64_t s = e->chain[e->scols[i]];
    x[i] = e->c.mont ? tu_mulmod(w[i] % s, tu_rinv(e->c.radix, s), s) : w[i] % s;
    v[i] = tu_mulmod(x[i], bi_invmod(h_mod(e, i, s), s), s);
  }
}

/* The expected word of target j. */
static uint64_t ref_out(const env *e, const uint64_t *w, int j) {
  uint64_t t = e->chain[e->dcols[j]];
  if (e->c.lift) {
    uint64_t q = e->chain[e->scols[0]], h = q / 2, c = w[0] % q;
    uint64_t cp = c + h >= q ? c + h - q : c + h;
    uint64_t a = cp % t, b = h % t;
    return a >= b ? a - b : a + t - b;
  }
  uint64_t x[64], v[64];
  ref_v(e, w, x, v);
  uint64_t y = 0;
  for (int i = 0; i < e->c.l; i++) y = (uint64_t)(((u128)y + (u128)v[i] * h_mod(e, i, t)) % t);
  return e->c.mont ? tu_mulmod(y, rmod(e->c.radix, t), t) : y;
}

/* ------------------------------------------------------- running it */

static void *run_kernel(env *e) {
  lw_bconv_host *h = NULL;
  ck_assert_msg(lw_bconv_plan_make(e->ctx, &e->plan) == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
  ck_assert_msg(lw_bconv_host_create(e->ctx, &e->plan, &h) == FHJIT_OK, "%s",
                fhjit_last_error(e->ctx));
  int64_t len = e->polys * e->c.m * e->n;
  void *dst = malloc(e->ws * (size_t)len);
  memset(dst, 0xa5, e->ws * (size_t)len);
  ck_assert_msg(lw_bconv_host_run(e->ctx, h, e->params, e->pstride, e->c.lift ? NULL : e->table, NULL,
                                  e->src, dst, 1 + (int)(e->c.seed % 3)) == FHJIT_OK,
                "%s", fhjit_last_error(e->ctx));
  lw_bconv_host_destroy(h);
  return dst;
}

/* The interpreter's bconv of the dense words into out [polys, m, n]. */
static void run_interpreter(env *e, uint64_t *out) {
  const tcase *c = &e->c;
  fhjit_graph *g = fhjit_graph_create(e->ctx, "bc", c->radix);
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(fhjit_graph_set_moduli(g, e->chain, e->npos), FHJIT_OK);
  int64_t batch[1] = {e->polys};
  fhjit_type xt = tu_poly(0, e->polys > 1 ? 1 : 0, batch, c->l, e->n);
  xt.domain = FHJIT_DOMAIN_COEF;
  xt.form = c->mont ? FHJIT_FORM_MONT : FHJIT_FORM_STD;
  fhjit_value x = fhjit_input(g, "x", &xt);
  ck_assert_int_ge(x, 0);
  ck_assert_int_eq(fhjit_input_basis(g, x, e->scols, c->l), FHJIT_OK);
  fhjit_type tt = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = e->table_len};
  fhjit_value t = fhjit_input(g, "t", &tt);
  fhjit_value y = fhjit_bconv(g, x, t, e->dcols, c->m);
  ck_assert_msg(y >= 0, "%s", fhjit_last_error(e->ctx));
  fhjit_output(g, y, NULL);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
  int64_t xl = e->polys * c->l * e->n, yl = e->polys * c->m * e->n;
  void *xb = malloc(e->ws * (size_t)xl), *yb = malloc(e->ws * (size_t)yl);
  for (int64_t k = 0; k < xl; k++) tu_set_word(e->ws, xb, k, e->words[k]);
  const void *inputs[2] = {xb, (char *)e->table + e->ws * 7};
  void *results[1] = {yb};
  ck_assert_msg(fhjit_interpret(g, e->params, e->pstride, inputs, results) == FHJIT_OK, "%s",
                fhjit_last_error(e->ctx));
  for (int64_t k = 0; k < yl; k++) out[k] = tu_word(e->ws, yb, k);
  free(xb);
  free(yb);
  fhjit_graph_destroy(g);
}

/* Kernel against the reference, the interpreter and the identity. */
static void check_case(const tcase *c) {
  env e;
  env_init(&e, c);
  void *dst = run_kernel(&e);
  int64_t yl = e.polys * c->m * e.n;
  uint64_t *interp = NULL;
  if (!c->lift) {
    interp = malloc(sizeof *interp * (size_t)yl);
    run_interpreter(&e, interp);
  }
  char what[256];
  snprintf(what, sizeof what,
           "%s %s%s l=%d m=%d N=2^%d polys=%lld vec=%d threads=%u split=%d unroll=%d moduli=%d",
           c->radix == FHJIT_R32 ? "r32" : "r62", c->mont ? "mont" : "std", c->lift ? " lift" : "",
           c->l, c->m, c->logn, (long long)e.polys, e.plan.vec, e.plan.threads, e.plan.split,
           e.plan.unroll, c->moduli);
  int bits = 0;
  for (int r = 0; r < c->l; r++) bits += 64 - __builtin_clzll(e.chain[e.scols[r]]);
  for (int64_t poly = 0; poly < e.polys; poly++)
    for (int64_t i = 0; i < e.n; i++) {
      uint64_t w[64];
      for (int r = 0; r < c->l; r++) w[r] = e.words[(poly * c->l + r) * e.n + i];
      for (int j = 0; j < c->m; j++) {
        int64_t k = (poly * c->m + j) * e.n + i;
        uint64_t got = tu_word(e.ws, dst, k), want = ref_out(&e, w, j);
        ck_assert_msg(got == want, "%s: poly %lld row %d index %lld: kernel %llu, reference %llu",
                      what, (long long)poly, j, (long long)i, (unsigned long long)got,
                      (unsigned long long)want);
        if (interp)
          ck_assert_msg(got == interp[k], "%s: poly %lld row %d index %lld: kernel %llu, "
                        "interpreter %llu", what, (long long)poly, j, (long long)i,
                        (unsigned long long)got, (unsigned long long)interp[k]);
      }
      /* the identity, on the kernel's words, for a sample of coefficients */
      if (c->lift || (i % 5 != 0 && i > 8) || bits > 1400) continue; /* bi's capacity */
      uint64_t x[64], v[64], mods[64];
      ref_v(&e, w, x, v);
      bi X, S, sum, tmp;
      for (int r = 0; r < c->l; r++) mods[r] = e.chain[e.scols[r]];
      bi_crt(&X, x, mods, c->l);
      bi_set(&S, 1);
      for (int r = 0; r < c->l; r++) bi_mul_u64(&S, &S, mods[r]);
      bi_set(&sum, 0);
      for (int r = 0; r < c->l; r++) {
        bi h;
        bi_divmod_u64(&h, &S, mods[r]);
        bi_mul_u64(&tmp, &h, v[r]);
        bi_add(&sum, &sum, &tmp);
      }
      int ef = -1;
      bi cand = X;
      for (int k = 0; k < c->l && ef < 0; k++) {
        if (bi_cmp(&cand, &sum) == 0) ef = k;
        bi_add(&cand, &cand, &S);
      }
      ck_assert_msg(ef >= 0, "%s: sum V h is not X + e S* with e < l at %lld", what, (long long)i);
      for (int j = 0; j < c->m; j++) {
        uint64_t t = e.chain[e.dcols[j]], got = tu_word(e.ws, dst, (poly * c->m + j) * e.n + i);
        uint64_t y = c->mont ? tu_mulmod(got, tu_rinv(c->radix, t), t) : got;
        ck_assert_msg(y == bi_divmod_u64(NULL, &sum, t), "%s: identity at %lld row %d", what,
                      (long long)i, j);
      }
    }
  free(interp);
  free(dst);
  env_free(&e);
}

/* ------------------------------------------------------------- tests */

static const int m_list[] = {1, 2, 3, 5, 7, 12, 20, 35, 48, 34, 16, 9};

/* The sweep: radix, form and lift, rows, sizes, views and moduli vary with
 * _i. */
START_TEST(test_sweep) {
  TU_SAMPLED(_i);
  tcase c = {0};
  c.radix = (_i & 1) ? FHJIT_R62 : FHJIT_R32;
  int lmax = c.radix == FHJIT_R32 ? 16 : 8;
  c.mont = (_i / 2) & 1;
  c.lift = _i % 7 == 5;
  if (c.lift) c.mont = 0;
  c.l = c.lift ? 1 : 1 + (_i * 5 / 2) % lmax;
  c.m = m_list[(_i / 2) % 12];
  c.logn = 4 + (_i / 3) % 7;
  if (c.l * c.m > 200 && c.logn > 7) c.logn = 7; /* keeps the run short */
  c.nax = (_i / 4) % 3;
  c.ext[0] = c.nax ? 1 + _i % 3 : 1;
  c.ext[1] = c.nax > 1 ? 1 + (_i / 5) % 2 : 1;
  if (c.ext[0] * c.ext[1] > 3) c.ext[1] = 1;
  c.istride = (_i % 5 == 2) ? 2 : 1;
  c.broadcast = c.nax > 0 && c.ext[0] > 1 && _i % 11 == 4;
  c.vec = 0;
  c.threads = (_i % 4 == 3) ? 32 : 0;
  c.moduli = (_i / 2) % 3;
  c.seed = 1000 + (uint64_t)_i;
  check_case(&c);
}
END_TEST

/* Every l of each radix once, with explicit vectors (aligned views) and
 * the largest m, both forms. */
START_TEST(test_rows) {
  TU_SAMPLED(_i);
  tcase c = {0};
  c.radix = _i < 32 ? FHJIT_R32 : FHJIT_R62;
  int k = _i < 32 ? _i : _i - 32;
  c.l = 1 + k / 2;
  if (c.radix == FHJIT_R62 && c.l > 8) c.l = 8 + (c.l - 8) * 3; /* 9 .. 32: past the flush */
  if (c.l > LW_BCONV_MAX_L) c.l = LW_BCONV_MAX_L;
  c.mont = k & 1;
  c.m = k % 3 == 0 ? 48 : 1 + k % 13;
  c.logn = 4 + k % 3;
  c.nax = 1;
  c.ext[0] = 1 + k % 3;
  c.istride = 1;
  c.vec = c.radix == FHJIT_R32 ? (k % 3 == 0 ? 4 : 2) : 2;
  if (k % 5 == 0) c.vec = 1;
  c.moduli = k % 3;
  c.seed = 7000 + (uint64_t)_i;
  check_case(&c);
}
END_TEST

/* The benchmark shapes of issue 16 at a small N: r62 5 -> 35 (both forms),
 * the lift 1 -> 34, r32 12 -> 48 (both forms), r32's lift 1 -> 48. */
START_TEST(test_bench_shapes) {
  static const struct { fhjit_radix r; int mont, lift, l, m; } s[] = {
      {FHJIT_R62, 0, 0, 5, 35}, {FHJIT_R62, 1, 0, 5, 35}, {FHJIT_R62, 0, 1, 1, 34},
      {FHJIT_R32, 0, 0, 12, 48}, {FHJIT_R32, 1, 0, 12, 48}, {FHJIT_R32, 0, 1, 1, 48}};
  tcase c = {0};
  c.radix = s[_i].r;
  c.mont = s[_i].mont;
  c.lift = s[_i].lift;
  c.l = s[_i].l;
  c.m = s[_i].m;
  c.logn = 6;
  c.nax = 2;
  c.ext[0] = 2;
  c.ext[1] = 1;
  c.istride = 1;
  c.moduli = 1;
  c.seed = 9000 + (uint64_t)_i;
  check_case(&c);
}
END_TEST

/* Several digits in one launch (lw_bconv_plan.digits; a key switch's
 * conversions, lib/lower/mixsteps.c batched_fwd): D conversions of one
 * shape, each with its own columns (a random permutation of the chain:
 * not consecutive), table (its own buffer) and words; the sources placed
 * in one buffer and the results in the rows of one larger one, both in
 * an order that is not affine in the digit for D > 2 (the kernel's select
 * chains), every word against the reference of its digit. Both radices
 * and forms, D = 2, 3, 4, 16, 1 to 2 polynomials, vectors or not. */
START_TEST(test_digits) {
  static const int dl[] = {2, 3, 4, 16};
  int D = dl[_i % 4];
  tcase c = {0};
  c.radix = (_i / 4) % 2 ? FHJIT_R62 : FHJIT_R32;
  c.mont = (_i / 8) % 2;
  c.l = c.radix == FHJIT_R32 ? 3 + _i % 5 : 2 + _i % 4;
  c.m = 5 + _i % 7;
  c.logn = 4 + _i % 4;
  c.nax = _i % 2;
  c.ext[0] = c.nax ? 2 : 1;
  c.istride = 1;
  c.vec = _i % 3 == 0 ? 0 : 1;
  c.moduli = _i % 3;
  env e[16];
  memset(e, 0, sizeof e); /* D >= 2, which gcc -O1 cannot see */
  for (int k = 0; k < D; k++) {
    c.seed = 7000 + (uint64_t)(_i * 16 + k); /* each digit its own columns and words */
    env_init(&e[k], &c);
  }
  /* slot of digit k: source block and destination rows, reversed with a
   * swap (not affine for D > 2) */
  int slot[16], dslot[16];
  for (int k = 0; k < D; k++) slot[k] = D - 1 - k, dslot[k] = (k + 1) % D;
  int64_t blk = (e[0].src_len + 3) / 4 * 4, mn = c.m * e[0].n;
  void *src = malloc(e[0].ws * (size_t)(blk * D));
  for (int k = 0; k < D; k++)
    memcpy((char *)src + e[0].ws * (size_t)(slot[k] * blk), e[k].src, e[0].ws * (size_t)e[k].src_len);
  lw_bconv_plan p = e[0].plan;
  p.digits = D;
  p.src_offset += slot[0] * blk;
  p.dst_offset = dslot[0] * mn;
  p.dst_poly_stride = D * mn;
  const void *more[16];
  for (int k = 1; k < D; k++) {
    p.more[k - 1] = (lw_bconv_digit){e[k].plan.src_offset + slot[k] * blk, e[k].plan.table_offset,
                                     dslot[k] * mn, e[k].scols, e[k].dcols};
    more[k - 1] = e[k].table;
  }
  ck_assert_msg(lw_bconv_plan_make(e[0].ctx, &p) == FHJIT_OK, "%s", fhjit_last_error(e[0].ctx));
  ck_assert_int_eq(p.blocks, p.digit_blocks * (uint32_t)D);
  lw_bconv_host *h = NULL;
  ck_assert_msg(lw_bconv_host_create(e[0].ctx, &p, &h) == FHJIT_OK, "%s", fhjit_last_error(e[0].ctx));
  int64_t len = e[0].polys * D * mn;
  void *dst = malloc(e[0].ws * (size_t)len);
  memset(dst, 0xa5, e[0].ws * (size_t)len);
  ck_assert_msg(lw_bconv_host_run(e[0].ctx, h, e[0].params, e[0].pstride, e[0].table, more, src,
                                  dst, 1 + _i % 3) == FHJIT_OK,
                "%s", fhjit_last_error(e[0].ctx));
  /* a null table of a digit is an argument error */
  if (D > 2) {
    more[1] = NULL;
    ck_assert_int_eq(lw_bconv_host_run(e[0].ctx, h, e[0].params, e[0].pstride, e[0].table, more,
                                       src, dst, 1),
                     FHJIT_ERR_ARGUMENT);
  }
  lw_bconv_host_destroy(h);
  for (int k = 0; k < D; k++)
    for (int64_t poly = 0; poly < e[k].polys; poly++)
      for (int64_t i = 0; i < e[k].n; i++) {
        uint64_t w[64];
        for (int r = 0; r < c.l; r++) w[r] = e[k].words[(poly * c.l + r) * e[k].n + i];
        for (int j = 0; j < c.m; j++) {
          uint64_t got = tu_word(e[0].ws, dst, poly * D * mn + dslot[k] * mn + j * e[k].n + i);
          uint64_t want = ref_out(&e[k], w, j);
          ck_assert_msg(got == want,
                        "D %d digit %d %s l %d m %d poly %lld row %d index %lld: kernel %llu, "
                        "reference %llu",
                        D, k, c.radix == FHJIT_R32 ? "r32" : "r62", c.l, c.m, (long long)poly, j,
                        (long long)i, (unsigned long long)got, (unsigned long long)want);
        }
      }
  /* plan errors: too many digits, the lift with several */
  lw_bconv_plan bad = p;
  bad.digits = LW_BCONV_MAX_DIGITS + 1;
  ck_assert_int_eq(lw_bconv_plan_make(e[0].ctx, &bad), FHJIT_ERR_ARGUMENT);
  bad = p;
  bad.more[0].dst_cols = NULL;
  ck_assert_int_eq(lw_bconv_plan_make(e[0].ctx, &bad), FHJIT_ERR_ARGUMENT);
  free(src);
  free(dst);
  for (int k = 0; k < D; k++) env_free(&e[k]);
}
END_TEST

/* Past the one-chunk sums: r32 17 .. 32 rows (folds every 16, then 12
 * products), r62 9 .. 32 (the cross sum's flush, 16-product chunks), near
 * the radix limit (the largest sums) and mixed. */
START_TEST(test_many_rows) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): every row count once, the
   * forms alternating (r32 cases 0, 3, 4, 7, 8; r62 10, 13, 14, 17, 18,
   * 21): every fold and flush point, both forms, views and moduli sets in
   * each radix; the other form of each count is the Debug stage's */
  TU_SAMPLED_IN(_i, 0, 3, 4, 7, 8, 10, 13, 14, 17, 18, 21);
  static const int l32[] = {17, 20, 28, 29, 32}, l62[] = {9, 15, 16, 17, 24, 32};
  tcase c = {0};
  c.radix = _i < 10 ? FHJIT_R32 : FHJIT_R62;
  int k = _i < 10 ? _i : _i - 10;
  c.l = _i < 10 ? l32[k / 2] : l62[k / 2];
  c.mont = k & 1;
  c.m = 3 + k * 4;
  c.logn = 4;
  c.nax = 1;
  c.ext[0] = 1 + k % 2;
  c.istride = 1 + k % 2;
  c.moduli = k % 4 == 3 ? 1 : 0;
  c.seed = 12000 + (uint64_t)_i;
  check_case(&c);
}
END_TEST

/* The tuning knobs (the bconv_plan option's V, T, S, U): every value of
 * each, on the benchmark shapes and odd ones (m not a multiple of the
 * split or the unroll, a split that leaves groups of one row, more threads
 * than items, phase 0's items in several chunks), both radices and forms,
 * the lift, moduli near the radix limit (the largest sums) and mixed,
 * edge words; each against the reference and the interpreter. */
START_TEST(test_knobs) {
  TU_SAMPLED(_i);
  static const struct { fhjit_radix r; int mont, lift, l, m; } shape[] = {
      {FHJIT_R32, 1, 0, 12, 48}, {FHJIT_R32, 0, 0, 12, 48}, {FHJIT_R62, 1, 0, 5, 35},
      {FHJIT_R32, 1, 0, 5, 7},   {FHJIT_R62, 0, 0, 3, 13},  {FHJIT_R32, 0, 1, 1, 11},
      {FHJIT_R62, 0, 1, 1, 5},   {FHJIT_R32, 1, 0, 20, 9},  {FHJIT_R62, 1, 0, 17, 6},
      {FHJIT_R32, 0, 0, 1, 1}};
  static const int vecs[] = {1, 2, 4}, splits[] = {1, 2, 3, 4, 5, 8, 48}, unrolls[] = {1, 2, 3, 4, 8};
  static const uint32_t threads[] = {32, 64, 256, 1024};
  int k = _i;
  tcase c = {0};
  int sh = k % 10;
  c.radix = shape[sh].r;
  c.mont = shape[sh].mont;
  c.lift = shape[sh].lift;
  c.l = shape[sh].l;
  c.m = shape[sh].m;
  c.vec = vecs[(k / 3) % 3];
  if (c.radix == FHJIT_R62 && c.vec == 4) c.vec = 2;
  c.split = splits[(k / 2) % 7];
  if (c.split > c.m) c.split = c.m;
  c.unroll = unrolls[(k / 5) % 5];
  c.threads = threads[(k / 7) % 4];
  c.logn = c.l * c.m > 200 ? 5 : 4 + k % 4;
  c.nax = 1;
  c.ext[0] = 1 + k % 2;
  c.istride = 1;
  c.moduli = (k / 4) % 2; /* near the limit, or near and far alternating */
  c.seed = 15000 + (uint64_t)k;
  check_case(&c);
}
END_TEST

static fhjit_status plan_status(lw_bconv_plan p, fhjit_context *ctx) {
  return lw_bconv_plan_make(ctx, &p);
}

START_TEST(test_plan_errors) {
  fhjit_context *ctx = fhjit_context_create();
  int32_t s[40], d[300];
  for (int i = 0; i < 40; i++) s[i] = i;
  for (int i = 0; i < 300; i++) d[i] = 100 + i;
  lw_bconv_plan ok = {.radix = FHJIT_R62, .l = 5, .m = 35, .log_n = 10, .polys = 1,
                      .src_row_stride = 1024, .src_index_stride = 1, .src_cols = s, .dst_cols = d};
  ck_assert_int_eq(plan_status(ok, ctx), FHJIT_OK);
  struct { const char *what; fhjit_status st; const char *msg; lw_bconv_plan p; } bad[24];
  int nb = 0;
#define BAD(W, ST, MSG, FIELD, VAL)                                                         \
  do {                                                                                      \
    bad[nb].what = W, bad[nb].st = ST, bad[nb].msg = MSG, bad[nb].p = ok;                   \
    bad[nb].p.FIELD = VAL;                                                                  \
    nb++;                                                                                   \
  } while (0)
  BAD("l = 0", FHJIT_ERR_UNSUPPORTED, "source rows", l, 0);
  BAD("l = 33", FHJIT_ERR_UNSUPPORTED, "source rows", l, 33);
  BAD("m = 0", FHJIT_ERR_UNSUPPORTED, "target rows", m, 0);
  BAD("m = 257", FHJIT_ERR_UNSUPPORTED, "target rows", m, 257);
  BAD("log_n 3", FHJIT_ERR_UNSUPPORTED, "2^4", log_n, 3);
  BAD("log_n 18", FHJIT_ERR_UNSUPPORTED, "2^17", log_n, 18);
  BAD("lift l 5", FHJIT_ERR_ARGUMENT, "lift", lift, 1);
  BAD("null src", FHJIT_ERR_ARGUMENT, "null source", src_cols, NULL);
  BAD("null dst", FHJIT_ERR_ARGUMENT, "null target", dst_cols, NULL);
  BAD("polys 2, no axes", FHJIT_ERR_ARGUMENT, "extents", polys, 2);
  BAD("vec 3", FHJIT_ERR_ARGUMENT, "vec", vec, 3);
  BAD("vec 4 r62", FHJIT_ERR_ARGUMENT, "16 bytes", vec, 4);
  BAD("threads 48", FHJIT_ERR_ARGUMENT, "threads", threads, 48);
  BAD("split 36", FHJIT_ERR_ARGUMENT, "split = 36", split, 36);
  BAD("split -1", FHJIT_ERR_ARGUMENT, "split = -1", split, -1);
  BAD("unroll 9", FHJIT_ERR_ARGUMENT, "unroll = 9", unroll, 9);
  BAD("unroll -2", FHJIT_ERR_ARGUMENT, "unroll = -2", unroll, -2);
  BAD("radix", FHJIT_ERR_ARGUMENT, "radix", radix, (fhjit_radix)7);
  BAD("too many constants", FHJIT_ERR_UNSUPPORTED, "shared", m, 250);
  for (int i = 0; i < nb; i++) {
    if (!strcmp(bad[i].what, "too many constants")) bad[i].p.l = 32;
    ck_assert_msg(plan_status(bad[i].p, ctx) == bad[i].st, "%s: %s", bad[i].what,
                  fhjit_last_error(ctx));
    ck_assert_msg(tu_contains(fhjit_last_error(ctx), bad[i].msg), "%s: '%s'", bad[i].what,
                  fhjit_last_error(ctx));
  }
  lw_bconv_plan p = ok;
  p.lift = 1, p.l = 1, p.mont = 1;
  ck_assert_int_eq(plan_status(p, ctx), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "Montgomery"));
  p = ok;
  int32_t dup[5] = {1, 2, 3, 2, 4};
  p.src_cols = dup;
  ck_assert_int_eq(plan_status(p, ctx), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "both 2"));
  /* the lift itself and the limits are accepted */
  p = ok;
  p.lift = 1, p.l = 1, p.m = 34;
  ck_assert_int_eq(plan_status(p, ctx), FHJIT_OK);
  p = ok;
  p.radix = FHJIT_R32, p.l = 32, p.m = 256; /* 37 KB of constants */
  ck_assert_msg(plan_status(p, ctx) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  p.radix = FHJIT_R62, p.l = 8; /* 29 KB */
  ck_assert_msg(plan_status(p, ctx) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------- the PTX interpreter */

/* The GPU's inline PTX runs through ptxeval.h: lw_bconv_mac62_ptx,
 * lw_bconv_reduce62_ptx, lw_ntt_redc62_ptx and lw_ntt_csub62_ptx. */

/* k64 = -t^-1 mod 2^64 and k62 = -t^-1 mod 2^62 (Newton). */
static uint64_t kneg(uint64_t t, int bits) {
  uint64_t inv = t;
  for (int k = 0; k < 6; k++) inv *= 2 - t * inv;
  return bits == 64 ? 0 - inv : (0 - inv) & ((UINT64_C(1) << 62) - 1);
}

START_TEST(test_gpu_asm) {
  uint64_t s = 0xa5a5u + (uint64_t)_i;
  const uint64_t qs[] = {(UINT64_C(1) << 60) - 93, 1000003, 3, 5, 7, (UINT64_C(1) << 59) + 21,
                         (UINT64_C(1) << 60) - 1};
  for (int it = 0; it < 4000; it++) {
    /* the multiply-accumulate: x, c < 2^60; sums below 2^125 and 2^64 */
    uint64_t x = tu_rand(&s) >> 4, c = tu_rand(&s) >> 4;
    if (it < 8) x = it & 1 ? (UINT64_C(1) << 60) - 1 : 0, c = it & 2 ? (UINT64_C(1) << 60) - 1 : 1;
    u128 acc = ((u128)(tu_rand(&s) >> 3) << 64 | tu_rand(&s)) >> (it % 7);
    uint64_t cr = (tu_rand(&s) >> 2) >> (it % 5);
    uint64_t x0 = x & 0xffffffffu, x1 = x >> 32, c0 = c & 0xffffffffu, c1 = c >> 32;
    u128 want = acc + (u128)(x0 * c0) + ((u128)(x1 * c1) << 64);
    uint64_t in[8] = {0, 0, 0, x, c, (uint64_t)acc, (uint64_t)(acc >> 64), cr}, out[3];
    ptxeval_run(lw_bconv_mac62_ptx, in, out, 3);
    ck_assert_msg(out[0] == (uint64_t)want && out[1] == (uint64_t)(want >> 64), "mac at %d", it);
    ck_assert_msg(out[2] == cr + x0 * c1 + x1 * c0, "mac cross at %d", it);
    /* the reduction: S' = S + 2^32 C below 2^64 t (the kernel's bound), as
     * SPEC-style (S' + m t) / 2^64 */
    uint64_t t = qs[it % 7], k64 = kneg(t, 64);
    u128 sp = (((u128)tu_rand(&s) << 64) | tu_rand(&s)) % ((u128)t << 64);
    if (it < 14) sp = it & 1 ? ((u128)t << 64) - 1 : (u128)(it / 2);
    u128 cmax = (sp >> 32) + 1; /* C <= S' / 2^32, C < 2^64 */
    uint64_t cc = cmax > ~(uint64_t)0 ? tu_rand(&s) : (uint64_t)(tu_rand(&s) % (uint64_t)cmax);
    if (it % 5 == 4) cc = cmax > ~(uint64_t)0 ? ~(uint64_t)0 : (uint64_t)cmax - 1;
    u128 sv = sp - ((u128)cc << 32);
    uint64_t m = (uint64_t)sp * k64;
    u128 full = sp + (u128)m * t;
    ck_assert((uint64_t)full == 0);
    uint64_t rin[6] = {0, (uint64_t)sv, (uint64_t)(sv >> 64), cc, t, k64}, rout[1];
    ptxeval_run(lw_bconv_reduce62_ptx, rin, rout, 1);
    ck_assert_msg(rout[0] == (uint64_t)(full >> 64), "reduce at %d", it);
    ck_assert_uint_lt(rout[0], 2 * t);
    ck_assert_uint_eq(tu_mulmod(rout[0], tu_powmod(2, 64, t), t), (uint64_t)(sp % t));
    /* REDC(w x) of the words' V (x lazy, w < t) and the csub after it */
    uint64_t k62 = kneg(t, 62), w = tu_below(&s, t), xw = it < 20 ? 2 * t - 1 - (uint64_t)it % 2 : tu_below(&s, 2 * t);
    u128 prod = (u128)w * xw;
    uint64_t mm = ((uint64_t)prod * k62) & ((UINT64_C(1) << 62) - 1);
    uint64_t u = (uint64_t)((prod + (u128)mm * t) >> 62);
    uint64_t win[5] = {0, xw, w << 2, w * (k62 << 2), t};
    ptxeval_run(lw_ntt_redc62_ptx, win, rout, 1);
    ck_assert_msg(rout[0] == u, "redc at %d", it);
    ck_assert_uint_lt(u, 2 * t);
    uint64_t cin[3] = {0, u, t};
    ptxeval_run(lw_ntt_csub62_ptx, cin, rout, 1);
    ck_assert_uint_eq(rout[0], u >= t ? u - t : u);
  }
}
END_TEST

/* The tensor-core form's choice (bconv_mma.c): automatic for
 * r32 conversions of at least 4 source and 8 target rows (r62 when asked),
 * never for the lift, forced (M=1, 2, 4) or turned off (M=0 is mma -1) by the
 * tuning; its launch facts; dropped before sm_80. The host runs the scalar
 * form for such a plan (test_bench_shapes and test_sweep run plans that
 * chose it). */
START_TEST(test_mma_choice) {
  fhjit_context *ctx = fhjit_context_create();
  int32_t s[40], d[300];
  for (int i = 0; i < 40; i++) s[i] = i;
  for (int i = 0; i < 300; i++) d[i] = 100 + i;
  lw_bconv_plan base = {.radix = FHJIT_R32, .mont = 1, .l = 12, .m = 48, .log_n = 16, .polys = 1,
                        .src_row_stride = INT64_C(1) << 16, .src_index_stride = 1,
                        .src_cols = s, .dst_cols = d};
  lw_bconv_plan p = base;
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  /* 4096 tiles of 16, 2 per warp, 8 warps a block: 256 blocks of 256 */
  ck_assert_int_eq(p.mma, 2);
  ck_assert_uint_eq(p.mma_threads, 256);
  ck_assert_uint_eq(p.mma_blocks, 256);
  /* constants (36 + 4 x 48 words) then 6 groups x 4 bytes x 2 k-steps x 64 */
  ck_assert_uint_eq(p.mma_shared_bytes, (36 + 192 + 6 * 4 * 2 * 64) * 4);
  uint32_t blocks, threads, shared;
  lw_bconv_launch(&p, &blocks, &threads, &shared);
  ck_assert_uint_eq(blocks, 256);
  ck_assert_uint_eq(threads, 256);
  ck_assert_uint_eq(shared, p.mma_shared_bytes);
  ck_assert_uint_gt(p.blocks, 0); /* the scalar form's facts stay */
  const nv_target *t75 = nv_find_target(NULL, "sm_75"), *t80 = nv_find_target(NULL, "sm_80");
  ck_assert_ptr_nonnull(t75);
  lw_bconv_plan q = p;
  lw_bconv_for_target(&q, t80);
  ck_assert_int_eq(q.mma, 2);
  lw_bconv_for_target(&q, t75);
  ck_assert_int_eq(q.mma, 0);
  lw_bconv_launch(&q, &blocks, &threads, &shared);
  ck_assert_uint_eq(blocks, p.blocks);
  ck_assert_uint_eq(threads, p.threads);
  /* digits: the grid per digit times the digits */
  p = base;
  p.digits = 3;
  p.more[0] = p.more[1] = (lw_bconv_digit){0, 0, 0, s, d};
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  ck_assert_uint_eq(p.mma_digit_blocks, 256);
  ck_assert_uint_eq(p.mma_blocks, 768);
  /* not chosen: few rows, lift, off */
  p = base, p.l = 3;
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  ck_assert_int_eq(p.mma, 0);
  p = base, p.m = 7;
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  ck_assert_int_eq(p.mma, 0);
  /* r62: only when asked (M); two 32-bit halves a word, 8 bytes: source
   * constants 16 words (15 rounded to 16 bytes), targets 4 x 35, then 5
   * groups x 8 bytes x 2 k-steps x 64 32-bit words */
  p = base, p.radix = FHJIT_R62, p.l = 5, p.m = 35;
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  ck_assert_int_eq(p.mma, 0);
  p = base, p.radix = FHJIT_R62, p.l = 5, p.m = 35, p.mma = 2;
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  ck_assert_int_eq(p.mma, 2);
  ck_assert_uint_eq(p.mma_shared_bytes, (16 + 140 + 5 * 8 * 2 * 64 / 2) * 8);
  p = base, p.lift = 1, p.l = 1, p.mont = 0, p.mma = 2;
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  ck_assert_int_eq(p.mma, 0);
  p = base, p.mma = -1;
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  ck_assert_int_eq(p.mma, 0);
  /* forced on few rows, 4 tiles a warp at N = 16 (one tile per polynomial) */
  p = base, p.l = 1, p.m = 1, p.log_n = 4, p.polys = 3, p.src_nax = 1, p.src_ext[0] = 3,
  p.src_stride[0] = 16, p.mma = 4, p.threads = 64;
  ck_assert_int_eq(lw_bconv_plan_make(ctx, &p), FHJIT_OK);
  ck_assert_int_eq(p.mma, 4);
  ck_assert_uint_eq(p.mma_threads, 32);
  ck_assert_uint_eq(p.mma_blocks, 1);
  /* the tuning's key */
  lw_bconv_tuning tu;
  char why[160];
  ck_assert_int_eq(lw_bconv_tuning_parse("M=0", &tu, why, sizeof why), 1);
  ck_assert_int_eq(tu.mma, -1);
  ck_assert_int_eq(lw_bconv_tuning_parse("M=4,T=128", &tu, why, sizeof why), 1);
  ck_assert_int_eq(tu.mma, 4);
  ck_assert_int_eq(lw_bconv_tuning_parse("M=3", &tu, why, sizeof why), -1);
  ck_assert(tu_contains(why, "M 0, 1, 2 or 4"));
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------------ PTX and ptxas */

static const char *ptxas_path(void) {
  static const char *const paths[] = {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"};
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
    if (access(paths[i], X_OK) == 0) return paths[i];
  return NULL;
}

START_TEST(test_ptx) {
  static const struct {
    fhjit_radix r;
    int mont, lift, l, m, vec;
    const char *name;
    int mma, threads; /* the tuning (0: automatic) */
  } s[] = {
      {FHJIT_R62, 0, 0, 5, 35, 0, "bconv_r62_5_35_std", 0, 0},
      {FHJIT_R62, 1, 0, 5, 35, 0, "bconv_r62_5_35_mont", 0, 0},
      {FHJIT_R62, 0, 1, 1, 34, 0, "bconv_r62_lift_34", 0, 0},
      {FHJIT_R32, 0, 0, 12, 48, 0, "bconv_r32_12_48_std", 0, 0},
      {FHJIT_R32, 1, 0, 12, 48, 4, "bconv_r32_12_48_mont_v4", 0, 0},
      {FHJIT_R62, 1, 0, 6, 35, 2, "bconv_r62_6_35_mont_v2", 0, 0},
      {FHJIT_R32, 1, 0, 32, 48, 0, "bconv_r32_32_48_mont", 0, 0},
      {FHJIT_R62, 0, 0, 32, 16, 0, "bconv_r62_32_16_std", 0, 0},
      {FHJIT_R62, 1, 0, 5, 35, 0, "bconv_r62_5_35_mont_mma", 2, 0},
      {FHJIT_R62, 0, 0, 32, 16, 0, "bconv_r62_32_16_mma4_t512", 4, 512}};
  fhjit_context *ctx = fhjit_context_create();
  int32_t cols[300];
  for (int i = 0; i < 300; i++) cols[i] = i;
  lw_bconv_plan p = {.radix = s[_i].r, .mont = s[_i].mont, .lift = s[_i].lift, .l = s[_i].l,
                     .m = s[_i].m, .log_n = 16, .polys = 2, .src_nax = 1, .src_ext = {2},
                     .src_stride = {INT64_C(1) << 21}, .src_row_stride = INT64_C(1) << 16,
                     .src_index_stride = 1, .src_cols = cols, .dst_cols = cols + 40,
                     .vec = s[_i].vec, .mma = s[_i].mma, .threads = (uint32_t)s[_i].threads};
  ck_assert_msg(lw_bconv_plan_make(ctx, &p) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  char *ptx = NULL;
  ck_assert_msg(lw_bconv_compile_ptx(ctx, &p, "sm_90", s[_i].name, &ptx) == FHJIT_OK, "%s",
                fhjit_last_error(ctx));
  ck_assert(tu_contains(ptx, ".entry bconv_"));
  ck_assert(tu_contains(ptx, "bar.sync"));
  if (s[_i].r == FHJIT_R62) ck_assert(tu_contains(ptx, "madc.hi.u32"));
  /* r32, 4 source rows or more, 8 targets or more: the tensor-core form
   * (test_mma_choice); r62 with M (test_ptx_mma) */
  int mma = s[_i].mma || (s[_i].r == FHJIT_R32 && s[_i].l >= 4 && s[_i].m >= 8);
  ck_assert_int_eq(tu_contains(ptx, "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32") != 0, mma);
  /* the register cap fits the block: 168, or 64 K over 512 threads */
  if (mma) ck_assert(tu_contains(ptx, s[_i].threads == 512 ? ".maxnreg 128" : ".maxnreg 168"));
  const char *ptxas = ptxas_path();
  if (!ptxas) {
    printf("test_bconv: ptxas not found, the PTX of %s is not assembled\n", s[_i].name);
  } else {
    char path[128], cmd[512], line[512];
    snprintf(path, sizeof path, "/tmp/test_bconv_%d_%d.ptx", (int)getpid(), _i);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(ptx, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s -arch=sm_90 -v -o /dev/null %s 2>&1", ptxas, path);
    FILE *pp = popen(cmd, "r");
    ck_assert_ptr_nonnull(pp);
    int spills = 0, regs = 0;
    while (fgets(line, sizeof line, pp)) {
      const char *r = strstr(line, "Used ");
      if (r) regs = atoi(r + 5);
      const char *sp = strstr(line, "bytes spill stores");
      if (sp) {
        const char *b = sp;
        while (b > line && b[-1] != ',') b--;
        spills += atoi(b);
      }
      if (tu_contains(line, "error")) printf("%s", line);
    }
    int rc = pclose(pp);
    unlink(path);
    printf("test_bconv: %s (vec %d, %u threads, %u blocks, %u shared bytes): %d registers, "
           "%d bytes spilled\n",
           s[_i].name, p.vec, p.threads, p.blocks, p.shared_bytes, regs, spills);
    ck_assert_msg(rc == 0, "ptxas failed on %s", s[_i].name);
    ck_assert_int_gt(regs, 0);
    if (!s[_i].threads) ck_assert_int_eq(spills, 0); /* a tuned block size may spill */
  }
  free(ptx);
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bconv");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_plan_errors);
  tcase_add_test(tc, test_mma_choice);
  tcase_add_loop_test(tc, test_gpu_asm, 0, 2);
  tcase_add_loop_test(tc, test_bench_shapes, 0, 6);
  tcase_add_loop_test(tc, test_sweep, 0, 48);
  tcase_add_loop_test(tc, test_rows, 0, 64);
  tcase_add_loop_test(tc, test_many_rows, 0, 22);
  tcase_add_loop_test(tc, test_knobs, 0, 70);
  tcase_add_loop_test(tc, test_ptx, 0, 10);
  tcase_add_loop_test(tc, test_digits, 0, 24);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
