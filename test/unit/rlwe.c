/* rlwe.c: the toy RLWE/CKKS of rlwe.h (test-only; docs/ckks-proof.md).
 * Exact arithmetic with unsigned __int128 remainders, its own NTT and
 * Montgomery conversion (nothing of lib/ir), big integers from bigint.c. */
#include "rlwe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigint.h"

typedef unsigned __int128 u128;

static uint64_t mulm(uint64_t a, uint64_t b, uint64_t q) { return (uint64_t)((u128)a * b % q); }
static uint64_t addm(uint64_t a, uint64_t b, uint64_t q) {
  uint64_t s = a + b;
  return s >= q ? s - q : s;
}
static uint64_t subm(uint64_t a, uint64_t b, uint64_t q) { return a >= b ? a - b : a + q - b; }
static uint64_t powm(uint64_t a, uint64_t e, uint64_t q) {
  uint64_t r = 1 % q;
  for (a %= q; e; e >>= 1, a = mulm(a, a, q))
    if (e & 1) r = mulm(r, a, q);
  return r;
}
/* x mod q for a signed x. */
static uint64_t smod(int64_t x, uint64_t q) {
  if (x >= 0) return (uint64_t)x % q;
  uint64_t r = (uint64_t)(-(x + 1)) % q; /* -(x+1) >= 0 without overflow */
  return q - 1 - r;
}

static uint64_t wget(const rlwe *r, const void *b, size_t i) {
  return r->ws == 4 ? ((const uint32_t *)b)[i] : ((const uint64_t *)b)[i];
}
static void wput(const rlwe *r, void *b, size_t i, uint64_t x) {
  if (r->ws == 4) ((uint32_t *)b)[i] = (uint32_t)x;
  else ((uint64_t *)b)[i] = x;
}

static uint32_t bitrev(uint32_t x, int bits) {
  uint32_t y = 0;
  for (int b = 0; b < bits; b++) y |= ((x >> b) & 1u) << (bits - 1 - b);
  return y;
}

/* ----------------------------------------------------------------- PRNG */

uint64_t rlwe_rand(rlwe *r) { /* splitmix64 */
  uint64_t z = (r->seed += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint64_t below(rlwe *r, uint64_t n) { return (uint64_t)(((u128)rlwe_rand(r) * n) >> 64); }

void rlwe_ternary(rlwe *r, int64_t *s) {
  for (int64_t i = 0; i < r->n; i++) s[i] = (int64_t)below(r, 3) - 1;
}
void rlwe_noise_poly(rlwe *r, int64_t *e) {
  uint64_t mask = r->eta >= 64 ? ~0ull : (1ull << r->eta) - 1;
  for (int64_t i = 0; i < r->n; i++)
    e[i] = (int64_t)__builtin_popcountll(rlwe_rand(r) & mask) -
           (int64_t)__builtin_popcountll(rlwe_rand(r) & mask);
}
void rlwe_small(rlwe *r, int64_t *m, int64_t bound) {
  for (int64_t i = 0; i < r->n; i++) m[i] = (int64_t)below(r, (uint64_t)(2 * bound + 1)) - bound;
}
int64_t rlwe_weight(const rlwe *r, const int64_t *s) {
  int64_t h = 0;
  for (int64_t i = 0; i < r->n; i++) h += s[i] != 0;
  return h;
}

void rlwe_negacyclic(const rlwe *r, const int64_t *a, const int64_t *b, int64_t *out) {
  int64_t n = r->n;
  memset(out, 0, sizeof *out * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    if (!a[i]) continue;
    for (int64_t j = 0; j < n; j++) {
      int64_t t = a[i] * b[j];
      if (i + j < n) out[i + j] += t;
      else out[i + j - n] -= t; /* X^N = -1 */
    }
  }
}

void rlwe_automorph(const rlwe *r, const int64_t *a, int64_t k, int64_t *out) {
  int64_t n = r->n;
  for (int64_t i = 0; i < n; i++) {
    int64_t e = (int64_t)(((u128)i * (uint64_t)k) % (uint64_t)(2 * n));
    if (e < n) out[e] = a[i];
    else out[e - n] = -a[i];
  }
}

/* ------------------------------------------------------------------ NTT */

/* psi of SPEC section 5: the first c^((q-1)/2N), c = 2, 3, ..., whose N-th
 * power is not 1. */
static uint64_t spec_psi(uint64_t q, int64_t n) {
  for (uint64_t c = 2;; c++) {
    uint64_t x = powm(c, (q - 1) / (uint64_t)(2 * n), q);
    if (powm(x, (uint64_t)n, q) != 1) return x;
  }
}

/* Iterative radix-2 DIT on a bit-reversed array: a[t] = sum_i x[i] w^(i t). */
static void dit(uint64_t *a, int64_t n, uint64_t w, uint64_t q) {
  for (int64_t len = 2; len <= n; len <<= 1) {
    uint64_t wl = powm(w, (uint64_t)(n / len), q);
    for (int64_t i = 0; i < n; i += len) {
      uint64_t t = 1;
      for (int64_t j = 0; j < len / 2; j++) {
        uint64_t u = a[i + j], v = mulm(a[i + j + len / 2], t, q);
        a[i + j] = addm(u, v, q);
        a[i + j + len / 2] = subm(u, v, q);
        t = mulm(t, wl, q);
      }
    }
  }
}

/* Canonical coefficients -> SPEC 5's evaluation order: position j holds
 * A(psi^(2 br(j) + 1)) (the integer, not yet Montgomery). Twisting by psi^i
 * turns the negacyclic transform into the cyclic one with w = psi^2, whose
 * output t is A(psi^(2t+1)). */
static void ntt_fwd(const rlwe *r, int pos, uint64_t *a) {
  int64_t n = r->n;
  uint64_t q = r->q[pos], *tmp = malloc(sizeof *tmp * (size_t)n);
  const uint64_t *pw = r->pw + (size_t)pos * (size_t)n;
  for (int64_t i = 0; i < n; i++) tmp[bitrev((uint32_t)i, r->logn)] = mulm(a[i], pw[i], q);
  dit(tmp, n, mulm(r->psi[pos], r->psi[pos], q), q);
  for (int64_t j = 0; j < n; j++) a[j] = tmp[bitrev((uint32_t)j, r->logn)];
  free(tmp);
}

/* The inverse: position j holds the value at t = br(j), which is already the
 * bit-reversed input the DIT wants; then N^-1 and the untwist psi^-i. */
static void ntt_inv(const rlwe *r, int pos, uint64_t *a) {
  int64_t n = r->n;
  uint64_t q = r->q[pos], psi2 = mulm(r->psi[pos], r->psi[pos], q);
  dit(a, n, powm(psi2, q - 2, q), q);
  uint64_t ninv = powm((uint64_t)n % q, q - 2, q);
  const uint64_t *ipw = r->ipw + (size_t)pos * (size_t)n;
  for (int64_t i = 0; i < n; i++) a[i] = mulm(mulm(a[i], ninv, q), ipw[i], q);
}

/* The evaluations of integer polynomial x mod chain position pos. */
static void eval_of(const rlwe *r, int pos, const int64_t *x, uint64_t *out) {
  for (int64_t i = 0; i < r->n; i++) out[i] = smod(x[i], r->q[pos]);
  ntt_fwd(r, pos, out);
}

void rlwe_put_ntt(const rlwe *r, int pos, const int64_t *x, void *words) {
  uint64_t *v = malloc(sizeof *v * (size_t)r->n);
  eval_of(r, pos, x, v);
  for (int64_t i = 0; i < r->n; i++) wput(r, words, (size_t)i, mulm(v[i], r->rmod[pos], r->q[pos]));
  free(v);
}

/* --------------------------------------------------------------- set-up */

int rlwe_init(rlwe *r, fhjit_radix radix, int logn, const uint64_t *chain, int nq, int k,
              int alpha, uint64_t seed) {
  memset(r, 0, sizeof *r);
  r->m = nq + k;
  if (nq < 1 || k < 1 || alpha < 1 || alpha > nq || r->m > RLWE_MAXM || logn < 1 || logn > 12) {
    fprintf(stderr, "rlwe_init: bad shape\n");
    r->m = 0;
    return 1;
  }
  r->ctx = fhjit_context_create();
  r->radix = radix;
  r->ws = radix == FHJIT_R32 ? 4 : 8;
  r->logn = logn;
  r->n = INT64_C(1) << logn;
  r->nq = nq;
  r->k = k;
  r->alpha = alpha;
  r->seed = seed;
  r->eta = 21; /* centred binomial: variance eta/2, sigma ~ 3.24 */
  memcpy(r->q, chain, sizeof *chain * (size_t)r->m);
  int w = radix == FHJIT_R32 ? 32 : 62;
  size_t mn = (size_t)r->m * (size_t)r->n;
  r->pw = malloc(sizeof *r->pw * mn);
  r->ipw = malloc(sizeof *r->ipw * mn);
  r->params = malloc(8 * r->ws * (size_t)r->m);
  r->fwd = malloc(r->ws * mn);
  r->inv = malloc(r->ws * mn);
  for (int p = 0; p < r->m; p++) {
    uint64_t q = r->q[p], fpsi = 0;
    if (!fhjit_is_prime(q) || (q - 1) % (uint64_t)(2 * r->n)) {
      fprintf(stderr, "rlwe_init: %llu is not an NTT prime for N = %lld\n",
              (unsigned long long)q, (long long)r->n);
      rlwe_free(r);
      return 1;
    }
    r->psi[p] = spec_psi(q, r->n);
    /* fhjit's twiddles (graph inputs) must transform at the same points */
    if (fhjit_ntt_psi(r->ctx, q, r->n, &fpsi) != FHJIT_OK || fpsi != r->psi[p]) {
      fprintf(stderr, "rlwe_init: psi of %llu: fhjit %llu, SPEC %llu\n", (unsigned long long)q,
              (unsigned long long)fpsi, (unsigned long long)r->psi[p]);
      rlwe_free(r);
      return 1;
    }
    r->rmod[p] = (uint64_t)(((u128)1 << w) % q);
    r->rinv[p] = powm(r->rmod[p], q - 2, q);
    uint64_t ipsi = powm(r->psi[p], q - 2, q), x = 1, y = 1;
    for (int64_t i = 0; i < r->n; i++) {
      r->pw[(size_t)p * (size_t)r->n + (size_t)i] = x;
      r->ipw[(size_t)p * (size_t)r->n + (size_t)i] = y;
      x = mulm(x, r->psi[p], q);
      y = mulm(y, ipsi, q);
    }
  }
  if (fhjit_param_table(r->ctx, radix, r->q, r->m, r->n, 1, 0, r->params, r->m) != FHJIT_OK ||
      fhjit_twiddle_tables(r->ctx, radix, r->q, r->m, r->n, r->fwd, r->inv) != FHJIT_OK) {
    fprintf(stderr, "rlwe_init: %s\n", fhjit_last_error(r->ctx));
    rlwe_free(r);
    return 1;
  }
  return 0;
}

void rlwe_free(rlwe *r) {
  fhjit_context_destroy(r->ctx);
  free(r->pw);
  free(r->ipw);
  free(r->params);
  free(r->fwd);
  free(r->inv);
  memset(r, 0, sizeof *r);
}

int rlwe_digits(const rlwe *r) { return (r->nq + r->alpha - 1) / r->alpha; }
size_t rlwe_key_words(const rlwe *r) {
  return (size_t)rlwe_digits(r) * 2 * (size_t)r->m * (size_t)r->n;
}

/* ------------------------------------------------ encryption and keys */

void rlwe_encrypt(rlwe *r, const int64_t *s, const int64_t *mu, int rows, void *words) {
  int64_t n = r->n;
  int64_t *e = malloc(sizeof *e * (size_t)n);
  uint64_t *se = malloc(sizeof *se * (size_t)n), *me = malloc(sizeof *me * (size_t)n),
           *ee = malloc(sizeof *ee * (size_t)n);
  rlwe_noise_poly(r, e); /* one integer noise polynomial for every row */
  for (int p = 0; p < rows; p++) {
    uint64_t q = r->q[p];
    eval_of(r, p, s, se);
    eval_of(r, p, mu, me);
    eval_of(r, p, e, ee);
    for (int64_t i = 0; i < n; i++) {
      uint64_t a = below(r, q); /* uniform mod Q = uniform residues = uniform evaluations */
      uint64_t c0 = addm(subm(me[i], mulm(a, se[i], q), q), ee[i], q);
      wput(r, words, (size_t)(p * n + i), mulm(c0, r->rmod[p], q));
      wput(r, words, (size_t)((rows + p) * n + i), mulm(a, r->rmod[p], q));
    }
  }
  free(e);
  free(se);
  free(me);
  free(ee);
}

/* P* T_j mod chain position pos, T_j = (Q_L* / G_j*) [(Q_L* / G_j*)^-1 mod G_j*]
 * (bad_t: without the bracket). The bracket is the integer of [0, G_j*)
 * given by its residues, rebuilt with big integers. */
static uint64_t key_factor(const rlwe *r, int j, int pos, int bad_t) {
  uint64_t m = r->q[pos];
  int lo = j * r->alpha, hi = lo + r->alpha < r->nq ? lo + r->alpha : r->nq;
  uint64_t rest = 1 % m, pstar = 1 % m, res[RLWE_MAXM], mods[RLWE_MAXM];
  for (int i = 0; i < r->nq; i++)
    if (i < lo || i >= hi) rest = mulm(rest, r->q[i] % m, m);
  for (int i = r->nq; i < r->m; i++) pstar = mulm(pstar, r->q[i] % m, m);
  uint64_t t = rest;
  if (!bad_t) {
    for (int g = lo; g < hi; g++) {
      uint64_t qg = r->q[g], rg = 1;
      for (int i = 0; i < r->nq; i++)
        if (i < lo || i >= hi) rg = mulm(rg, r->q[i] % qg, qg);
      res[g - lo] = powm(rg, qg - 2, qg);
      mods[g - lo] = qg;
    }
    bi b;
    bi_crt(&b, res, mods, hi - lo);
    t = mulm(t, bi_divmod_u64(NULL, &b, m), m);
  }
  return mulm(pstar, t, m);
}

void rlwe_keygen(rlwe *r, const int64_t *s, const int64_t *s_from, int bad_t, void *words) {
  int64_t n = r->n;
  int64_t *e = malloc(sizeof *e * (size_t)n);
  uint64_t *se = malloc(sizeof *se * (size_t)n), *fe = malloc(sizeof *fe * (size_t)n),
           *ee = malloc(sizeof *ee * (size_t)n);
  for (int j = 0; j < rlwe_digits(r); j++) {
    rlwe_noise_poly(r, e);
    for (int p = 0; p < r->m; p++) {
      uint64_t q = r->q[p], c = key_factor(r, j, p, bad_t);
      eval_of(r, p, s, se);
      eval_of(r, p, s_from, fe);
      eval_of(r, p, e, ee);
      size_t base0 = ((size_t)(j * 2 + 0) * (size_t)r->m + (size_t)p) * (size_t)n;
      size_t base1 = ((size_t)(j * 2 + 1) * (size_t)r->m + (size_t)p) * (size_t)n;
      for (int64_t i = 0; i < n; i++) {
        uint64_t a = below(r, q);
        uint64_t k0 = addm(subm(ee[i], mulm(a, se[i], q), q), mulm(c, fe[i], q), q);
        wput(r, words, base0 + (size_t)i, mulm(k0, r->rmod[p], q));
        wput(r, words, base1 + (size_t)i, mulm(a, r->rmod[p], q));
      }
    }
  }
  free(e);
  free(se);
  free(fe);
  free(ee);
}

/* ------------------------------------------------------- decryption */

void rlwe_decrypt(const rlwe *r, const int64_t *s, const void *words, int comps, int rows,
                  uint64_t *dec) {
  int64_t n = r->n;
  uint64_t *se = malloc(sizeof *se * (size_t)n);
  for (int p = 0; p < rows; p++) {
    uint64_t q = r->q[p], *acc = dec + (size_t)p * (size_t)n;
    eval_of(r, p, s, se);
    for (int64_t i = 0; i < n; i++) {
      uint64_t sp = 1, v = 0;
      for (int c = 0; c < comps; c++) {
        uint64_t w = wget(r, words, (size_t)((c * rows + p) * n + i)) % q; /* lazy: < 2q */
        v = addm(v, mulm(mulm(w, r->rinv[p], q), sp, q), q);
        sp = mulm(sp, se[i], q);
      }
      acc[i] = v;
    }
    ntt_inv(r, p, acc);
  }
  free(se);
}

/* max over coefficients of |centre(CRT(z))|, z [rows][N] residues. */
static double centred_max(const rlwe *r, const uint64_t *z, int rows) {
  bi Q, half, x;
  bi_set(&Q, 1);
  for (int p = 0; p < rows; p++) bi_mul_u64(&Q, &Q, r->q[p]);
  bi_divmod_u64(&half, &Q, 2);
  double worst = 0;
  uint64_t res[RLWE_MAXM];
  for (int64_t i = 0; i < r->n; i++) {
    for (int p = 0; p < rows; p++) res[p] = z[(size_t)p * (size_t)r->n + (size_t)i];
    bi_crt(&x, res, r->q, rows);
    if (bi_cmp(&x, &half) > 0) bi_sub(&x, &Q, &x);
    double d = 0;
    for (int l = BI_LIMBS - 1; l >= 0; l--) d = d * 18446744073709551616.0 + (double)x.w[l];
    if (d > worst) worst = d;
  }
  return worst;
}

double rlwe_noise(const rlwe *r, const uint64_t *dec, int rows, const int64_t *msg,
                  const uint64_t *mul, int nmul, uint64_t den) {
  int64_t n = r->n;
  uint64_t *z = malloc(sizeof *z * (size_t)rows * (size_t)n);
  for (int p = 0; p < rows; p++) {
    uint64_t q = r->q[p], f = 1 % q, dq = den % q;
    for (int k = 0; k < nmul; k++) f = mulm(f, mul[k] % q, q);
    for (int64_t i = 0; i < n; i++) {
      size_t at = (size_t)p * (size_t)n + (size_t)i;
      z[at] = subm(mulm(dec[at], dq, q), mulm(f, smod(msg[i], q), q), q);
    }
  }
  double d = centred_max(r, z, rows) / (double)den;
  free(z);
  return d;
}

double rlwe_diff(const rlwe *r, const uint64_t *a, const uint64_t *b, int rows) {
  size_t len = (size_t)rows * (size_t)r->n;
  uint64_t *z = malloc(sizeof *z * len);
  for (size_t k = 0; k < len; k++) z[k] = subm(a[k], b[k], r->q[k / (size_t)r->n]);
  double d = centred_max(r, z, rows);
  free(z);
  return d;
}

double rlwe_ks_bound(const rlwe *r, int rows, int64_t h) {
  double pstar = 1, sum = 0;
  for (int i = r->nq; i < r->m; i++) pstar *= (double)r->q[i];
  for (int j = 0; j * r->alpha < rows; j++) {
    int lo = j * r->alpha, hi = lo + r->alpha < rows ? lo + r->alpha : rows;
    double dstar = 1;
    for (int i = lo; i < hi; i++) dstar *= (double)r->q[i];
    sum += (double)r->n * (hi - lo) * dstar * r->eta / pstar;
  }
  return sum + (double)r->k * (1.0 + (double)h);
}

/* ------------------------------------------------------------ graphs */

fhjit_graph *rlwe_graph(rlwe *r, const char *name) {
  fhjit_graph *g = fhjit_graph_create(r->ctx, name, r->radix);
  if (!g || fhjit_graph_set_moduli(g, r->q, r->m) != FHJIT_OK ||
      fhjit_graph_set_special(g, r->k) != FHJIT_OK ||
      fhjit_graph_set_digits(g, r->alpha) != FHJIT_OK) {
    fprintf(stderr, "rlwe_graph: %s\n", fhjit_last_error(r->ctx));
    fhjit_graph_destroy(g);
    return NULL;
  }
  return g;
}

fhjit_value rlwe_ct_input(rlwe *r, fhjit_graph *g, const char *name, int comps, int rows) {
  fhjit_type t = {.kind = FHJIT_KIND_POLY, .comps = comps, .rows = rows, .n = r->n,
                  .domain = FHJIT_DOMAIN_NTT, .form = FHJIT_FORM_MONT};
  return fhjit_input(g, name, &t);
}

fhjit_value rlwe_key_input(rlwe *r, fhjit_graph *g, const char *name) {
  fhjit_type t = {.kind = FHJIT_KIND_KEY, .comps = 2, .digits = rlwe_digits(r), .rows = r->m,
                  .n = r->n, .domain = FHJIT_DOMAIN_NTT, .form = FHJIT_FORM_MONT};
  return fhjit_input(g, name, &t);
}

fhjit_value rlwe_twiddles(rlwe *r, fhjit_graph *g, const char *name) {
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = r->m, .n = r->n};
  return fhjit_input(g, name, &t);
}

fhjit_status rlwe_run_interp(void *user, fhjit_graph *g, const void *params, int64_t pstride,
                             const void *const *inputs, void *const *results) {
  (void)user;
  return fhjit_interpret(g, params, pstride, inputs, results);
}

fhjit_status rlwe_run_host(void *user, fhjit_graph *g, const void *params, int64_t pstride,
                           const void *const *inputs, void *const *results) {
  (void)user;
  return fhjit_run_host(g, params, pstride, inputs, results, 2);
}

size_t rlwe_result_bytes(const rlwe *r, fhjit_graph *g, int32_t i) {
  fhjit_type t;
  if (fhjit_result_type(g, i, &t) != FHJIT_OK) return 0;
  return r->ws * (size_t)fhjit_type_elements(&t);
}

void **rlwe_run(rlwe *r, fhjit_graph *g, rlwe_runner run, void *user, const rlwe_data *data,
                int ndata, int32_t *nres) {
  if (!fhjit_is_bound(g) && fhjit_bind(g) != FHJIT_OK) {
    fprintf(stderr, "rlwe_run: bind: %s\n", fhjit_last_error(r->ctx));
    return NULL;
  }
  int32_t ni = fhjit_num_inputs(g), nr = fhjit_num_results(g);
  const void **ins = calloc((size_t)ni + 1, sizeof *ins);
  void **tables = calloc((size_t)ni + 1, sizeof *tables);
  void **res = calloc((size_t)nr + 1, sizeof *res);
  int ok = 1;
  for (int32_t i = 0; i < ni && ok; i++) {
    fhjit_type t;
    fhjit_value v = fhjit_input_value(g, i);
    fhjit_input_binding(g, i, &t, NULL);
    if (t.kind == FHJIT_KIND_TWIDDLE) {
      int use = 0;
      fhjit_input_twiddle_use(g, i, &use);
      ins[i] = use == FHJIT_TWIDDLE_INVERSE ? r->inv : r->fwd;
      ok = use == FHJIT_TWIDDLE_INVERSE || use == FHJIT_TWIDDLE_FORWARD;
      if (!ok) fprintf(stderr, "rlwe_run: twiddle input %d has use %d\n", (int)i, use);
    } else if (t.kind == FHJIT_KIND_TABLE) {
      int64_t len = 0;
      tables[i] = malloc(r->ws * (size_t)t.n);
      ok = fhjit_input_table(g, i, tables[i], &len) == FHJIT_OK && len == t.n;
      if (!ok) fprintf(stderr, "rlwe_run: table %d: %s\n", (int)i, fhjit_last_error(r->ctx));
      ins[i] = tables[i];
    } else {
      for (int d = 0; d < ndata; d++)
        if (data[d].v == v) ins[i] = data[d].words;
      ok = ins[i] != NULL;
      if (!ok) fprintf(stderr, "rlwe_run: no data for input %%%s\n", fhjit_value_name(g, v));
    }
  }
  for (int32_t k = 0; k < nr && ok; k++) {
    size_t bytes = rlwe_result_bytes(r, g, k);
    res[k] = malloc(bytes);
    memset(res[k], 0xa5, bytes); /* unwritten words show */
  }
  if (ok && run(user, g, r->params, r->m, ins, res) != FHJIT_OK) {
    fprintf(stderr, "rlwe_run: %s\n", fhjit_last_error(r->ctx));
    ok = 0;
  }
  for (int32_t i = 0; i < ni; i++) free(tables[i]);
  free(tables);
  free(ins);
  if (!ok) {
    rlwe_free_results(res, nr);
    return NULL;
  }
  *nres = nr;
  return res;
}

void rlwe_free_results(void **res, int32_t nres) {
  if (!res) return;
  for (int32_t k = 0; k < nres; k++) free(res[k]);
  free(res);
}

const void *rlwe_output(fhjit_graph *g, void *const *res, const char *name, int32_t *rows,
                        int32_t *comps) {
  for (int32_t o = 0; o < fhjit_num_outputs(g); o++) {
    fhjit_output_info info;
    if (fhjit_output_info_get(g, o, &info) != FHJIT_OK || strcmp(info.name, name)) continue;
    if (info.is_input_alias || info.component != -1) return NULL;
    if (rows) *rows = (int32_t)info.type.rows;
    if (comps) *comps = info.type.comps;
    return res[info.source];
  }
  return NULL;
}
