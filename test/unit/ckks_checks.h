/* ckks_checks.h: the CKKS proofs of issue 17 as runner-agnostic checks:
 * each builds a graph with SPEC section 7's whole operations, runs it
 * through every given runner (the interpreter, the host JIT, the CUDA
 * runtime in test/gpu), requires the runners' results to agree word for
 * word, decrypts the first runner's results with the toy RLWE of rlwe.h and
 * compares the noise with its bound (docs/ckks-proof.md). Public API only;
 * no libcheck: results are reported in ckks_result records. The variable
 * CKKS_TIME=1 prints the time of every run. */
#ifndef FHJIT_TEST_CKKS_CHECKS_H
#define FHJIT_TEST_CKKS_CHECKS_H

#include "rlwe.h"

typedef struct ckks_runner {
  const char *name;
  rlwe_runner fn;
  void *user;
} ckks_runner;

/* The graph builders under test: the public fhjit_keyswitch/fhjit_ckks_*
 * or the test-side tg_* of ckks_graphs.h (same shapes). */
typedef struct ckks_builders {
  const char *name;
  fhjit_value (*keyswitch)(fhjit_graph *, fhjit_value, fhjit_value, fhjit_value, fhjit_value);
  fhjit_value (*mul_relin_rescale)(fhjit_graph *, fhjit_value, fhjit_value, fhjit_value,
                                   fhjit_value, fhjit_value);
  fhjit_value (*rotate)(fhjit_graph *, fhjit_value, int64_t, fhjit_value, fhjit_value,
                        fhjit_value);
  fhjit_status (*rotate_hoisted)(fhjit_graph *, fhjit_value, int32_t, const int64_t *,
                                 const fhjit_value *, fhjit_value, fhjit_value, fhjit_value *);
} ckks_builders;
extern const ckks_builders ckks_public; /* fhjit_keyswitch, fhjit_ckks_* */
extern const ckks_builders ckks_tg;     /* tg_* of ckks_graphs.c */

typedef struct ckks_result {
  char what[112];
  double noise, bound; /* measured max |noise| and its bound (negative: the floor) */
  int negative;        /* 1: a wrong key, the noise must be far ABOVE bound */
  int ok;
  char msg[256]; /* why not ok */
} ckks_result;

#define CKKS_MAXRES 32
typedef struct ckks_report {
  int n;
  ckks_result r[CKKS_MAXRES];
} ckks_report;

/* A chain for radix (N = 2^logn): r62 Q = one 60-bit prime + 4 of 40 bits,
 * P = 2 of 60 bits; r32 Q = one 30-bit prime + 4 of 27 bits, P = 3 of 30
 * bits; digits of 2 (the last one shorter), Delta about the last prime. */
int ckks_setup(rlwe *r, fhjit_radix radix, int logn, uint64_t seed);
uint64_t ckks_delta(const rlwe *r);

/* Key switch of a ciphertext under a fresh s' to s at level rows (chain
 * prefix [0, rows)); negatives: a key with T_j = Q_L* / G_j*, a key from the
 * wrong s'. */
void ckks_check_keyswitch(rlwe *r, const ckks_builders *b, int rows, const ckks_runner *run,
                          int nrun, ckks_report *rep);
/* HMult + relinearise + rescale at the top level against m1*m2*Delta^2/q;
 * negative: a relinearisation key from s instead of s^2. */
void ckks_check_mul(rlwe *r, const ckks_builders *b, const ckks_runner *run, int nrun,
                    ckks_report *rep);
/* Rotations by ks (plain and hoisted, one graph) against m(X^k), hoisted
 * against plain; negative: the Galois key of another k. */
void ckks_check_rotate(rlwe *r, const ckks_builders *b, const int64_t *ks, int count,
                       const ckks_runner *run, int nrun, ckks_report *rep);

/* The two builder sets give the same words: one graph holding a key
 * switch, an HMult + relinearise + rescale, a rotation and two hoisted
 * rotations built by each, run by every runner (the interpreter suffices:
 * the other checks hold the runners to it). */
void ckks_check_same_words(rlwe *r, const ckks_builders *a, const ckks_builders *b,
                           const ckks_runner *run, int nrun, ckks_report *rep);

/* One line per result ("ok"/"FAIL", what, noise vs bound in bits). */
void ckks_print(const ckks_report *rep, const char *prefix);
#endif
