/* rlwe.h: a test-only toy RLWE/CKKS on fhjit's word layouts, to prove that
 * SPEC section 7's compositions (hybrid key switching, relinearisation +
 * rescale, rotation, hoisted rotation) are real CKKS operations when run
 * through fhjit (issue 17, docs/ckks-proof.md). Not secure, not fast: a
 * ternary secret, uniform masks, centred-binomial noise, a seeded PRNG,
 * exact arithmetic. Independent of lib/ir: its own negacyclic NTT (SPEC
 * section 5's evaluation order, psi chosen as SPEC says), its own
 * Montgomery conversion, test/unit/bigint.c for CRT. Public API only (it
 * links into the GPU test, which sees only libfhjit.so); no libcheck.
 *
 * Words: a ciphertext input is ct<C, [], rows, N> NTT-domain Montgomery on
 * the chain prefix [0, rows) (a level), dense; a key is the KEY kind
 * [digits, 2, M, N] with rows by chain position, NTT-domain Montgomery. */
#ifndef FHJIT_TEST_RLWE_H
#define FHJIT_TEST_RLWE_H

#include <stddef.h>
#include <stdint.h>

#include "fhjit/fhjit.h"

#define RLWE_MAXM 16

/* Runs bound graph g as fhjit_interpret / fhjit_run_host do (inputs by
 * declaration order, results dense); user is the runner's own state. */
typedef fhjit_status (*rlwe_runner)(void *user, fhjit_graph *g, const void *params,
                                    int64_t pstride, const void *const *inputs,
                                    void *const *results);
fhjit_status rlwe_run_interp(void *user, fhjit_graph *g, const void *params, int64_t pstride,
                             const void *const *inputs, void *const *results);
fhjit_status rlwe_run_host(void *user, fhjit_graph *g, const void *params, int64_t pstride,
                           const void *const *inputs, void *const *results);

typedef struct rlwe {
  fhjit_context *ctx; /* owned */
  fhjit_radix radix;
  size_t ws; /* bytes per word */
  int64_t n;
  int logn;
  int m;     /* chain length: Q_L (nq) then P (k) */
  int nq, k, alpha;
  uint64_t q[RLWE_MAXM];
  uint64_t psi[RLWE_MAXM], rmod[RLWE_MAXM], rinv[RLWE_MAXM];
  uint64_t *pw, *ipw;       /* [m][N]: psi^i, psi^-i */
  void *params, *fwd, *inv; /* fhjit's tables: [8, m], [m, N], [m, N] */
  uint64_t seed;
  int eta; /* noise: centred binomial of parameter eta, |e| <= eta */
} rlwe;

/* chain: nq primes of Q_L then k special primes, each = 1 mod 2N; the
 * key's digits are runs of alpha positions of Q_L. 0 on success, else an
 * error message is printed. */
int rlwe_init(rlwe *r, fhjit_radix radix, int logn, const uint64_t *chain, int nq, int k,
              int alpha, uint64_t seed);
void rlwe_free(rlwe *r);
int rlwe_digits(const rlwe *r); /* digits of Q_L */

uint64_t rlwe_rand(rlwe *r);
/* Small integer polynomials (length N, caller's buffers). */
void rlwe_ternary(rlwe *r, int64_t *s); /* uniform in {-1, 0, 1} */
void rlwe_noise_poly(rlwe *r, int64_t *e); /* centred binomial, |e| <= eta */
void rlwe_small(rlwe *r, int64_t *m, int64_t bound); /* uniform in [-bound, bound] */
int64_t rlwe_weight(const rlwe *r, const int64_t *s); /* nonzero coefficients */
/* out = a * b in Z[X]/(X^N + 1), exactly (int64; the caller keeps it small). */
void rlwe_negacyclic(const rlwe *r, const int64_t *a, const int64_t *b, int64_t *out);
/* out = a(X^k) (k odd), the signed permutation of SPEC 7's coefficient automorphism. */
void rlwe_automorph(const rlwe *r, const int64_t *a, int64_t k, int64_t *out);

/* The polynomial x (integers) in NTT-domain Montgomery words of modulus
 * chain position pos, at words[0..N) (the radix's word type). */
void rlwe_put_ntt(const rlwe *r, int pos, const int64_t *x, void *words);

/* Encryption at level `rows` (Q = chain positions [0, rows)):
 * ct = (-a*s + mu + e, a), mu an integer polynomial (e.g. Delta * m), e
 * fresh noise, a uniform; words [2, rows, N] NTT Montgomery. */
void rlwe_encrypt(rlwe *r, const int64_t *s, const int64_t *mu, int rows, void *words);

/* Key generation, SPEC 7 "Keys", on Q_L ++ P: key[j,0] = -a_j*s + e_j +
 * P* T_j s', key[j,1] = a_j; words [digits, 2, m, N]. A wrong key for the
 * negative tests: bad_t = 1 uses T_j = Q_L* / G_j* (without the inverse
 * factor). */
void rlwe_keygen(rlwe *r, const int64_t *s, const int64_t *s_from, int bad_t, void *words);
size_t rlwe_key_words(const rlwe *r);

/* Decryption of comps components (words [comps, rows, N], NTT Montgomery,
 * lazy words accepted) under s: c0 + c1 s (+ c2 s^2) mod Q as canonical
 * coefficient residues [rows][N]. */
void rlwe_decrypt(const rlwe *r, const int64_t *s, const void *words, int comps, int rows,
                  uint64_t *dec);
/* The noise of a decryption against a scaled message: for each
 * coefficient the centred integer Z = den*dec - mul*msg mod Q (Q: the
 * rows' primes; mul = the product of nmul factors; den >= 1), divided by
 * den. Returns max |Z| / den over the coefficients (a double: garbage
 * shows as about Q/2). */
double rlwe_noise(const rlwe *r, const uint64_t *dec, int rows, const int64_t *msg,
                  const uint64_t *mul, int nmul, uint64_t den);
/* The same between two decryptions (both [rows][N]): max |a - b|. */
double rlwe_diff(const rlwe *r, const uint64_t *a, const uint64_t *b, int rows);

/* The worst-case key-switch noise of SPEC 7's hybrid key switch at level
 * `rows`, for a key with noise |e_j| <= eta and a target secret of
 * Hamming weight h (docs/ckks-proof.md):
 *   sum over non-empty digits j of N * |D_j| * D_j* * eta / P*  +  K (1 + h). */
double rlwe_ks_bound(const rlwe *r, int rows, int64_t h);

/* Graph plumbing. A graph on the chain (moduli, special, digits). */
fhjit_graph *rlwe_graph(rlwe *r, const char *name);
fhjit_value rlwe_ct_input(rlwe *r, fhjit_graph *g, const char *name, int comps, int rows);
fhjit_value rlwe_key_input(rlwe *r, fhjit_graph *g, const char *name);
fhjit_value rlwe_twiddles(rlwe *r, fhjit_graph *g, const char *name);

/* Data of a polynomial or key input. */
typedef struct rlwe_data {
  fhjit_value v;
  const void *words;
} rlwe_data;
/* Binds g (when not yet bound), gives every input its words (twiddles and
 * tables from the chain, the others from data), runs it with `run` and
 * returns the results (dense, malloc'd, *nres of them; free with
 * rlwe_free_results). NULL on failure, with a message printed. */
void **rlwe_run(rlwe *r, fhjit_graph *g, rlwe_runner run, void *user, const rlwe_data *data,
                int ndata, int32_t *nres);
void rlwe_free_results(void **res, int32_t nres);
/* The result buffer of output `name` (a whole computed value), its rows. */
const void *rlwe_output(fhjit_graph *g, void *const *res, const char *name, int32_t *rows,
                        int32_t *comps);
/* Bytes of result i. */
size_t rlwe_result_bytes(const rlwe *r, fhjit_graph *g, int32_t i);

#endif
