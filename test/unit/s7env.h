/* s7env.h: the shared set-up of the section 7 unit tests (test_section7,
 * test_s7_steps, test_ckks_build, test_ks_fusion): a chain of distinct NTT
 * primes alternating near each radix's limit and far below it, its
 * parameter table and twiddle tables, words of the radix, graphs stating
 * the chain, and input words for them. */
#ifndef FHJIT_TEST_S7ENV_H
#define FHJIT_TEST_S7ENV_H

#include <stddef.h>
#include <stdint.h>

#include "fhjit/fhjit.h"

#define S7_MAXM 12 /* the longest chain */

typedef struct s7env {
  fhjit_context *ctx;
  fhjit_radix radix;
  size_t ws; /* bytes per word */
  int m;     /* chain length */
  int64_t n;
  uint64_t q[S7_MAXM];
  void *params, *fwd, *inv; /* [8, m], [m, n], [m, n] */
  uint64_t seed;
} s7env;

uint64_t s7_wget(const s7env *e, const void *b, int64_t i);
void s7_wput(const s7env *e, void *b, int64_t i, uint64_t x);
/* A chain of m <= S7_MAXM primes = 1 mod 2^11 (N <= 2^10), every third one
 * (positions 1, 4, ...) far below the limit; its tables for N = 2^logn. */
void s7_env_init(s7env *e, fhjit_radix radix, int m, int logn, uint64_t seed);
void s7_env_free(s7env *e);
/* A graph stating the chain, special(special) and digits(alpha) when > 0. */
fhjit_graph *s7_graph(s7env *e, const char *name, int special, int alpha);
fhjit_value s7_twiddles(s7env *e, fhjit_graph *g, const char *name);
fhjit_value s7_table(fhjit_graph *g, const char *name, int64_t len);
/* Words for input i of bound g (dense, malloc'd; the caller frees them):
 * a table's from fhjit_input_table (the chain's constants), otherwise
 * random lazy words, on every third batch row the edges 0, 1, q-1, q,
 * q+1, 2q-1 first (q of the row's modulus: a poly's basis, a key's chain
 * position). NULL for a twiddle input: the caller gives e->fwd or e->inv.
 * (test_ckks_build, test_ks_fusion: one filler, so both draw the same
 * words for the same seed and shape.) */
void *s7_fill(s7env *e, fhjit_graph *g, int32_t i);

#endif
