/* ckks_checks.c: the CKKS proofs of issue 17 (ckks_checks.h). The bounds
 * are derived in docs/ckks-proof.md; in short, with eta the noise bound of
 * a sample (|e| <= eta), h the Hamming weight of the secret s, K special
 * primes of product P*, digits D_j (product D_j*) of the level:
 *   key switch   B_ks = sum_j N |D_j| D_j* eta / P*  +  K (1 + h)
 *     (modup gives an integer below |D_j| D_j* per digit, times a key noise
 *     of N eta per product; moddown's floor and its conversion error
 *     e' < K add below K P* per component, the second times s);
 *   fresh ciphertext eta; switched ciphertext eta + B_ks, and B_ks from
 *   the input's own decryption;
 *   rotation eta + B_ks (the automorphism permutes coefficients with signs);
 *   hoisted - plain rotation 2 B_ks (same ciphertext noise, two switches);
 *   HMult + relin + rescale by q:
 *     (2 N Bm eta Delta + N eta^2 + B_ks) / q + (1 + h) / 2
 *     (the cross terms Delta (m1 e2 + m2 e1), e1 e2 and the switch, divided
 *     by q, plus the rounding of both components, the second times s). */
#include "ckks_checks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckks_graphs.h"

#define BM 8 /* message coefficients in [-BM, BM] */

const ckks_builders ckks_public = {"fhjit", fhjit_keyswitch, fhjit_ckks_mul_relin_rescale,
                                   fhjit_ckks_rotate, fhjit_ckks_rotate_hoisted};
const ckks_builders ckks_tg = {"tg", tg_keyswitch, tg_ckks_mul_relin_rescale, tg_ckks_rotate,
                               tg_ckks_rotate_hoisted};

int ckks_setup(rlwe *r, fhjit_radix radix, int logn, uint64_t seed) {
  uint64_t big[4], small[4], chain[8];
  int r62 = radix == FHJIT_R62, K = r62 ? 2 : 3;
  uint64_t m = (uint64_t)2 << logn;
  if (fhjit_find_primes(NULL, r62 ? 60 : 30, m, K + 1, big) != FHJIT_OK ||
      fhjit_find_primes(NULL, r62 ? 40 : 27, m, 4, small) != FHJIT_OK)
    return 1;
  /* Q = big[K], small[0..4); P = big[0..K): every special prime is larger
   * than every prime of Q, so P* >= max_j G_j* with digits of 2 */
  chain[0] = big[K];
  for (int i = 0; i < 4; i++) chain[1 + i] = small[i];
  for (int i = 0; i < K; i++) chain[5 + i] = big[i];
  return rlwe_init(r, radix, logn, chain, 5, K, 2, seed);
}

uint64_t ckks_delta(const rlwe *r) { /* the power of two at or below the last prime of Q */
  uint64_t q = r->q[r->nq - 1], d = 1;
  while (d <= q / 2) d <<= 1;
  return d;
}

static ckks_result *add_result(ckks_report *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ckks_result *add_result(ckks_report *rep, const char *fmt, ...) {
  static ckks_result spare;
  ckks_result *x = rep->n < CKKS_MAXRES ? &rep->r[rep->n++] : &spare;
  memset(x, 0, sizeof *x);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->what, sizeof x->what, fmt, ap);
  va_end(ap);
  return x;
}

static void fail(ckks_report *rep, const char *what, const char *msg) {
  ckks_result *x = add_result(rep, "%s", what);
  snprintf(x->msg, sizeof x->msg, "%s", msg);
}

/* The measured noise against its bound (negative: must be > 2^20 bound). */
static void judge(ckks_report *rep, double noise, double bound, int negative, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));
static void judge(ckks_report *rep, double noise, double bound, int negative, const char *fmt,
                  ...) {
  ckks_result *x = add_result(rep, "%s", "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->what, sizeof x->what, fmt, ap);
  va_end(ap);
  x->noise = noise;
  x->bound = bound;
  x->negative = negative;
  x->ok = negative ? noise > bound * 1048576.0 : noise <= bound;
  if (!x->ok)
    snprintf(x->msg, sizeof x->msg, negative ? "noise 2^%.1f not far above 2^%.1f"
                                             : "noise 2^%.1f above the bound 2^%.1f",
             log2(noise), log2(bound));
}

/* Runs g through every runner; the results must agree word for word with
 * the first runner's, which are returned (NULL, a failure reported). */
static void **run_all(rlwe *r, fhjit_graph *g, const ckks_runner *run, int nrun,
                      const rlwe_data *data, int ndata, int32_t *nres, ckks_report *rep,
                      const char *what) {
  void **first = NULL;
  for (int k = 0; k < nrun; k++) {
    int32_t nr = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    void **res = rlwe_run(r, g, run[k].fn, run[k].user, data, ndata, &nr);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (getenv("CKKS_TIME")) printf("    %s %s: %.2f s\n", what, run[k].name, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    char buf[256];
    if (!res) {
      snprintf(buf, sizeof buf, "runner %s failed: %s", run[k].name, fhjit_last_error(r->ctx));
      fail(rep, what, buf);
      rlwe_free_results(first, *nres);
      return NULL;
    }
    if (k == 0) {
      first = res;
      *nres = nr;
      continue;
    }
    for (int32_t i = 0; i < nr; i++) {
      size_t bytes = rlwe_result_bytes(r, g, i);
      if (memcmp(res[i], first[i], bytes)) {
        size_t w = 0;
        while (w < bytes / r->ws && !memcmp((char *)res[i] + w * r->ws,
                                            (char *)first[i] + w * r->ws, r->ws))
          w++;
        snprintf(buf, sizeof buf, "result %d: %s and %s differ first at word %zu", (int)i,
                 run[k].name, run[0].name, w);
        fail(rep, what, buf);
        rlwe_free_results(res, nr);
        rlwe_free_results(first, *nres);
        return NULL;
      }
    }
    rlwe_free_results(res, nr);
  }
  return first;
}

static const char *rname(const rlwe *r) { return r->radix == FHJIT_R32 ? "r32" : "r62"; }

/* Decrypts output `name` of the results under s into dec; its rows. */
static int decrypt_out(rlwe *r, fhjit_graph *g, void **res, const char *name, const int64_t *s,
                       uint64_t *dec) {
  int32_t rows = 0, comps = 0;
  const void *w = rlwe_output(g, res, name, &rows, &comps);
  if (!w) return 0;
  rlwe_decrypt(r, s, w, comps, rows, dec);
  return rows;
}

static int64_t *poly(const rlwe *r) { return calloc((size_t)r->n, sizeof(int64_t)); }

void ckks_check_keyswitch(rlwe *r, const ckks_builders *b, int rows, const ckks_runner *run,
                          int nrun, ckks_report *rep) {
  char what[96];
  snprintf(what, sizeof what, "%s %s N=2^%d keyswitch level %d/%d", rname(r), b->name, r->logn,
           rows, r->nq);
  int64_t *s = poly(r), *s1 = poly(r), *s2 = poly(r), *m = poly(r), *mu = poly(r);
  rlwe_ternary(r, s);
  rlwe_ternary(r, s1); /* the key the ciphertext is under */
  rlwe_ternary(r, s2); /* a wrong one */
  rlwe_small(r, m, BM);
  uint64_t delta = ckks_delta(r);
  for (int64_t i = 0; i < r->n; i++) mu[i] = m[i] * (int64_t)delta;
  size_t kw = rlwe_key_words(r), cw = 2 * (size_t)rows * (size_t)r->n;
  void *ct = malloc(cw * r->ws), *keys[3];
  for (int i = 0; i < 3; i++) keys[i] = malloc(kw * r->ws);
  rlwe_encrypt(r, s1, mu, rows, ct);
  rlwe_keygen(r, s, s1, 0, keys[0]);
  rlwe_keygen(r, s, s1, 1, keys[1]); /* wrong T_j */
  rlwe_keygen(r, s, s2, 0, keys[2]); /* wrong s' */

  fhjit_graph *g = rlwe_graph(r, "ckks_keyswitch");
  fhjit_value x = rlwe_ct_input(r, g, "ct", 2, rows), key = rlwe_key_input(r, g, "key");
  fhjit_value fwd = rlwe_twiddles(r, g, "fwd"), inv = rlwe_twiddles(r, g, "inv");
  fhjit_value ks = b->keyswitch(g, fhjit_extract(g, x, 1), key, fwd, inv);
  fhjit_value o = FHJIT_NO_VALUE;
  if (ks >= 0) {
    fhjit_value parts[2] = {fhjit_add(g, fhjit_extract(g, x, 0), fhjit_extract(g, ks, 0)),
                            fhjit_extract(g, ks, 1)};
    o = fhjit_pack(g, 2, parts);
  }
  if (o < 0 || fhjit_output(g, o, "out") != FHJIT_OK || fhjit_bind(g) != FHJIT_OK) {
    fail(rep, what, fhjit_last_error(r->ctx));
  } else {
    uint64_t *dec = malloc(sizeof *dec * (size_t)rows * (size_t)r->n);
    uint64_t *dec0 = malloc(sizeof *dec0 * (size_t)rows * (size_t)r->n);
    rlwe_decrypt(r, s1, ct, 2, rows, dec0); /* the input under its own key */
    double bks = rlwe_ks_bound(r, rows, rlwe_weight(r, s)), bound = r->eta + bks;
    static const char *const kn[3] = {"", " [negative: T_j without its inverse factor]",
                                      " [negative: key from the wrong s']"};
    for (int v = 0; v < 3; v++) {
      rlwe_data data[2] = {{x, ct}, {key, keys[v]}};
      int32_t nres = 0;
      char wv[160];
      snprintf(wv, sizeof wv, "%s%s", what, kn[v]);
      void **res = run_all(r, g, run, nrun, data, 2, &nres, rep, wv);
      if (!res) continue;
      decrypt_out(r, g, res, "out", s, dec);
      judge(rep, rlwe_noise(r, dec, rows, m, &delta, 1, 1), bound, v > 0, "%s", wv);
      if (!v) /* dec_s(switched) - dec_s'(ct): the switch's own noise */
        judge(rep, rlwe_diff(r, dec, dec0, rows), bks, 0, "%s switched - original", wv);
      rlwe_free_results(res, nres);
    }
    free(dec);
    free(dec0);
  }
  fhjit_graph_destroy(g);
  free(ct);
  for (int i = 0; i < 3; i++) free(keys[i]);
  free(s), free(s1), free(s2), free(m), free(mu);
}

void ckks_check_mul(rlwe *r, const ckks_builders *b, const ckks_runner *run, int nrun,
                    ckks_report *rep) {
  char what[96];
  int rows = r->nq;
  snprintf(what, sizeof what, "%s %s N=2^%d mul+relin+rescale level %d", rname(r), b->name,
           r->logn, rows);
  int64_t *s = poly(r), *s2 = poly(r), *m1 = poly(r), *m2 = poly(r), *mm = poly(r),
          *mu = poly(r);
  rlwe_ternary(r, s);
  rlwe_negacyclic(r, s, s, s2);
  rlwe_small(r, m1, BM);
  rlwe_small(r, m2, BM);
  rlwe_negacyclic(r, m1, m2, mm); /* the exact product of the messages */
  uint64_t delta = ckks_delta(r), ql = r->q[rows - 1];
  size_t kw = rlwe_key_words(r), cw = 2 * (size_t)rows * (size_t)r->n;
  void *ca = malloc(cw * r->ws), *cb = malloc(cw * r->ws), *keys[2];
  for (int i = 0; i < 2; i++) keys[i] = malloc(kw * r->ws);
  for (int64_t i = 0; i < r->n; i++) mu[i] = m1[i] * (int64_t)delta;
  rlwe_encrypt(r, s, mu, rows, ca);
  for (int64_t i = 0; i < r->n; i++) mu[i] = m2[i] * (int64_t)delta;
  rlwe_encrypt(r, s, mu, rows, cb);
  rlwe_keygen(r, s, s2, 0, keys[0]);
  rlwe_keygen(r, s, s, 0, keys[1]); /* wrong: s' = s, not s^2 */

  fhjit_graph *g = rlwe_graph(r, "ckks_mul");
  fhjit_value a = rlwe_ct_input(r, g, "a", 2, rows), bb = rlwe_ct_input(r, g, "b", 2, rows);
  fhjit_value key = rlwe_key_input(r, g, "rlk");
  fhjit_value fwd = rlwe_twiddles(r, g, "fwd"), inv = rlwe_twiddles(r, g, "inv");
  fhjit_value o = b->mul_relin_rescale(g, a, bb, key, fwd, inv);
  if (o < 0 || fhjit_output(g, o, "out") != FHJIT_OK || fhjit_bind(g) != FHJIT_OK) {
    fail(rep, what, fhjit_last_error(r->ctx));
  } else {
    int64_t h = rlwe_weight(r, s);
    double bound = (2.0 * (double)r->n * BM * r->eta * (double)delta +
                    (double)r->n * r->eta * r->eta + rlwe_ks_bound(r, rows, h)) /
                       (double)ql +
                   (1.0 + (double)h) / 2;
    uint64_t *dec = malloc(sizeof *dec * (size_t)rows * (size_t)r->n);
    uint64_t dd[2] = {delta, delta};
    for (int v = 0; v < 2; v++) {
      rlwe_data data[3] = {{a, ca}, {bb, cb}, {key, keys[v]}};
      int32_t nres = 0;
      char wv[160];
      snprintf(wv, sizeof wv, "%s%s", what, v ? " [negative: relin key from s, not s^2]" : "");
      void **res = run_all(r, g, run, nrun, data, 3, &nres, rep, wv);
      if (!res) continue;
      int orows = decrypt_out(r, g, res, "out", s, dec);
      if (orows != rows - 1) {
        fail(rep, wv, "the result is not one level down");
      } else {
        /* noise = dec - Delta^2 m1 m2 / q, measured as (q dec - Delta^2 m1 m2) / q */
        judge(rep, rlwe_noise(r, dec, orows, mm, dd, 2, ql), bound, v > 0, "%s", wv);
      }
      rlwe_free_results(res, nres);
    }
    free(dec);
  }
  fhjit_graph_destroy(g);
  free(ca), free(cb), free(keys[0]), free(keys[1]);
  free(s), free(s2), free(m1), free(m2), free(mm), free(mu);
}

/* A graph of rotations of one ciphertext input "ct": hoisted (one graph,
 * outputs hoist0..) or the plain rotation by ks[0] alone (output rot0: a
 * graph with several plain key switches passes the step planner's limit
 * of 128 scratch buffers). keys get the Galois key inputs. */
static fhjit_graph *rotate_graph(rlwe *r, const ckks_builders *b, int hoisted, const int64_t *ks,
                                 int count, fhjit_value *x, fhjit_value *keys) {
  fhjit_graph *g = rlwe_graph(r, hoisted ? "ckks_rotate_hoisted" : "ckks_rotate");
  *x = rlwe_ct_input(r, g, "ct", 2, r->nq);
  for (int i = 0; i < count; i++) {
    char name[16];
    snprintf(name, sizeof name, "gk%d", i);
    keys[i] = rlwe_key_input(r, g, name);
  }
  fhjit_value fwd = rlwe_twiddles(r, g, "fwd"), inv = rlwe_twiddles(r, g, "inv"), out[8];
  int ok;
  if (hoisted) {
    ok = b->rotate_hoisted(g, *x, count, ks, keys, fwd, inv, out) == FHJIT_OK;
  } else {
    out[0] = b->rotate(g, *x, ks[0], keys[0], fwd, inv);
    ok = out[0] >= 0;
  }
  for (int i = 0; i < count && ok; i++) {
    char name[24];
    snprintf(name, sizeof name, "%s%d", hoisted ? "hoist" : "rot", i);
    ok = fhjit_output(g, out[i], name) == FHJIT_OK;
  }
  if (!ok || fhjit_bind(g) != FHJIT_OK) {
    fhjit_graph_destroy(g);
    return NULL;
  }
  return g;
}

void ckks_check_rotate(rlwe *r, const ckks_builders *b, const int64_t *ks, int count,
                       const ckks_runner *run, int nrun, ckks_report *rep) {
  enum { MAXK = 8 };
  char what[96];
  int rows = r->nq;
  snprintf(what, sizeof what, "%s %s N=2^%d rotation level %d", rname(r), b->name, r->logn,
           rows);
  if (count > MAXK) count = MAXK;
  int64_t *s = poly(r), *m = poly(r), *mu = poly(r), *sk = poly(r), *mk = poly(r);
  rlwe_ternary(r, s);
  rlwe_small(r, m, BM);
  uint64_t delta = ckks_delta(r);
  for (int64_t i = 0; i < r->n; i++) mu[i] = m[i] * (int64_t)delta;
  size_t kw = rlwe_key_words(r), cw = 2 * (size_t)rows * (size_t)r->n;
  size_t dl = (size_t)rows * (size_t)r->n;
  void *ct = malloc(cw * r->ws), *keys[MAXK];
  uint64_t *dp = malloc(sizeof *dp * dl * MAXK), *dh = malloc(sizeof *dh * dl);
  rlwe_encrypt(r, s, mu, rows, ct);
  for (int i = 0; i < count; i++) {
    keys[i] = malloc(kw * r->ws);
    rlwe_automorph(r, s, ks[i], sk);
    rlwe_keygen(r, s, sk, 0, keys[i]); /* Galois key: s' = s(X^k) */
  }
  double bks = rlwe_ks_bound(r, rows, rlwe_weight(r, s)), bound = r->eta + bks;
  fhjit_value x, kv[MAXK];
  rlwe_data data[1 + MAXK];
  char wv[160];
  /* plain rotations, each k its own graph; v = 1 with the Galois key of
   * the next k (a wrong key) */
  for (int i = 0; i < count; i++) {
    fhjit_graph *g = rotate_graph(r, b, 0, ks + i, 1, &x, kv);
    snprintf(wv, sizeof wv, "%s k=%lld", what, (long long)ks[i]);
    if (!g) {
      fail(rep, wv, fhjit_last_error(r->ctx));
      continue;
    }
    rlwe_automorph(r, m, ks[i], mk);
    for (int v = 0; v < 2; v++) {
      data[0] = (rlwe_data){x, ct};
      data[1] = (rlwe_data){kv[0], keys[(i + v) % count]};
      int32_t nres = 0;
      snprintf(wv, sizeof wv, "%s k=%lld%s", what, (long long)ks[i],
               v ? " [negative: the Galois key of another k]" : " plain");
      void **res = run_all(r, g, run, nrun, data, 2, &nres, rep, wv);
      if (!res) continue;
      decrypt_out(r, g, res, "rot0", s, v ? dh : dp + (size_t)i * dl);
      judge(rep, rlwe_noise(r, v ? dh : dp + (size_t)i * dl, rows, mk, &delta, 1, 1), bound, v,
            "%s", wv);
      rlwe_free_results(res, nres);
    }
    fhjit_graph_destroy(g);
  }
  /* hoisted: one graph, one modup per digit shared by every k */
  fhjit_graph *g = rotate_graph(r, b, 1, ks, count, &x, kv);
  int32_t nres = 0;
  void **res = NULL;
  snprintf(wv, sizeof wv, "%s hoisted x%d", what, count);
  if (!g) {
    fail(rep, wv, fhjit_last_error(r->ctx));
  } else {
    data[0] = (rlwe_data){x, ct};
    for (int i = 0; i < count; i++) data[1 + i] = (rlwe_data){kv[i], keys[i]};
    res = run_all(r, g, run, nrun, data, 1 + count, &nres, rep, wv);
  }
  for (int i = 0; i < count && res; i++) {
    char hn[24];
    snprintf(hn, sizeof hn, "hoist%d", i);
    rlwe_automorph(r, m, ks[i], mk);
    decrypt_out(r, g, res, hn, s, dh);
    judge(rep, rlwe_noise(r, dh, rows, mk, &delta, 1, 1), bound, 0, "%s k=%lld hoisted", what,
          (long long)ks[i]);
    judge(rep, rlwe_diff(r, dh, dp + (size_t)i * dl, rows), 2 * bks, 0,
          "%s k=%lld hoisted - plain", what, (long long)ks[i]);
  }
  rlwe_free_results(res, nres);
  fhjit_graph_destroy(g);
  free(ct), free(dp), free(dh);
  for (int i = 0; i < count; i++) free(keys[i]);
  free(s), free(m), free(mu), free(sk), free(mk);
}

void ckks_check_same_words(rlwe *r, const ckks_builders *a, const ckks_builders *b,
                           const ckks_runner *run, int nrun, ckks_report *rep) {
  char what[96];
  int rows = r->nq;
  snprintf(what, sizeof what, "%s N=2^%d %s and %s builders give the same words", rname(r),
           r->logn, a->name, b->name);
  int64_t *s = poly(r), *sk = poly(r), *m = poly(r);
  rlwe_ternary(r, s);
  rlwe_small(r, m, 1000);
  size_t kw = rlwe_key_words(r), cw = 2 * (size_t)rows * (size_t)r->n;
  void *ca = malloc(cw * r->ws), *cb = malloc(cw * r->ws), *keys[3];
  int64_t twon = 2 * r->n, ks[2] = {5, twon - 1};
  for (int i = 0; i < 3; i++) keys[i] = malloc(kw * r->ws);
  rlwe_encrypt(r, s, m, rows, ca);
  rlwe_encrypt(r, s, m, rows, cb);
  rlwe_negacyclic(r, s, s, sk);
  rlwe_keygen(r, s, sk, 0, keys[0]);
  for (int i = 0; i < 2; i++) {
    rlwe_automorph(r, s, ks[i], sk);
    rlwe_keygen(r, s, sk, 0, keys[1 + i]);
  }
  fhjit_graph *g = rlwe_graph(r, "ckks_same");
  fhjit_value x = rlwe_ct_input(r, g, "a", 2, rows), y = rlwe_ct_input(r, g, "b", 2, rows);
  fhjit_value kv[3] = {rlwe_key_input(r, g, "rlk"), rlwe_key_input(r, g, "gk0"),
                       rlwe_key_input(r, g, "gk1")};
  fhjit_value fwd = rlwe_twiddles(r, g, "fwd"), inv = rlwe_twiddles(r, g, "inv");
  int ok = 1;
  const ckks_builders *bs[2] = {a, b};
  for (int v = 0; v < 2 && ok; v++) {
    const ckks_builders *B = bs[v];
    fhjit_value o[5];
    o[0] = B->keyswitch(g, fhjit_extract(g, x, 1), kv[0], fwd, inv);
    o[1] = B->mul_relin_rescale(g, x, y, kv[0], fwd, inv);
    o[2] = B->rotate(g, x, ks[0], kv[1], fwd, inv);
    ok = B->rotate_hoisted(g, y, 2, ks, kv + 1, fwd, inv, o + 3) == FHJIT_OK;
    for (int i = 0; i < 5 && ok; i++) {
      char name[16];
      snprintf(name, sizeof name, "%c%d", 'a' + v, i);
      ok = o[i] >= 0 && fhjit_output(g, o[i], name) == FHJIT_OK;
    }
  }
  if (!ok || fhjit_bind(g) != FHJIT_OK) {
    fail(rep, what, fhjit_last_error(r->ctx));
  } else {
    rlwe_data data[5] = {{x, ca}, {y, cb}, {kv[0], keys[0]}, {kv[1], keys[1]}, {kv[2], keys[2]}};
    int32_t nres = 0;
    void **res = run_all(r, g, run, nrun, data, 5, &nres, rep, what);
    for (int i = 0; i < 5 && res; i++) {
      char na[16], nb[16];
      int32_t ra = 0, rb = 0, c = 0;
      snprintf(na, sizeof na, "a%d", i);
      snprintf(nb, sizeof nb, "b%d", i);
      const void *wa = rlwe_output(g, res, na, &ra, &c), *wb = rlwe_output(g, res, nb, &rb, NULL);
      ckks_result *x2 = add_result(rep, "%s: output %d (%s)", what, i,
                                   (const char *[]){"keyswitch", "mul+relin+rescale", "rotate",
                                                    "hoisted 0", "hoisted 1"}[i]);
      x2->ok = wa && wb && ra == rb && !memcmp(wa, wb, (size_t)(c * ra) * (size_t)r->n * r->ws);
      if (!x2->ok) snprintf(x2->msg, sizeof x2->msg, "the words differ");
    }
    rlwe_free_results(res, nres);
  }
  fhjit_graph_destroy(g);
  free(ca), free(cb);
  for (int i = 0; i < 3; i++) free(keys[i]);
  free(s), free(sk), free(m);
}

void ckks_print(const ckks_report *rep, const char *prefix) {
  for (int i = 0; i < rep->n; i++) {
    const ckks_result *x = &rep->r[i];
    if (x->bound == 0)
      printf("%s%s %s%s%s\n", prefix, x->ok ? "ok  " : "FAIL", x->what, x->msg[0] ? ": " : "",
             x->msg);
    else
      printf("%s%s %s: noise 2^%.2f %s bound 2^%.2f%s%s\n", prefix, x->ok ? "ok  " : "FAIL",
             x->what, log2(x->noise > 0 ? x->noise : 1e-300), x->negative ? ">>" : "<=",
             log2(x->bound), x->msg[0] ? " -- " : "", x->msg);
  }
}
