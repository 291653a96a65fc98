/* nttcheck.h: the host-JIT NTT check shared by test_ntt_emit (every plan
 * shape) and test_ntt_cluster (the cluster schedule): the moduli's
 * parameter and twiddle tables, random or edge input words, one run of a
 * plan through lw_ntt_host_run, and every batch-row of its output bit for
 * bit against lib/ir/ntt_ref.c's ir_ntt_row. Both tests differ only in the
 * plans they make; one copy of the reference comparison means a change to
 * the host entry point or the tables' layout is made (and checked) once.
 * Also the parameter and twiddle tables of the NTT graph tests. */
#ifndef FHJIT_TEST_NTTCHECK_H
#define FHJIT_TEST_NTTCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "fhjit/fhjit.h"
#include "ir/ntt.h"
#include "lower/ntt.h"

#define NTTCHECK_MAXROWS 8

typedef struct nttcheck {
  fhjit_context *ctx; /* the caller's */
  fhjit_radix radix;
  ir_ntt_kind kind;
  int logn, rows, batch;
  int64_t n, brows; /* brows = rows * batch */
  size_t ws;        /* bytes per word */
  uint64_t q[NTTCHECK_MAXROWS];
  void *params; /* [8, rows], the NTT's N^-1 R in row 7 */
  void *tw;     /* [rows, n]: forward or inverse twiddles, as kind reads */
  void *in;     /* [brows, n] */
  void *out;    /* [brows, n], 0xA5 bytes until a run */
} nttcheck;

/* Tables for moduli q[0 .. rows) (rows <= NTTCHECK_MAXROWS) at N = 2^logn,
 * and the buffers; the input is not filled. */
void nttcheck_init(nttcheck *c, fhjit_context *ctx, fhjit_radix radix, ir_ntt_kind kind, int logn,
                   int rows, int batch, const uint64_t *q);
/* Input words below 2q: pattern 1 only the edges 0, q-1, q, 2q-1; 2 all
 * 2q-1; otherwise random, one in eight an edge. */
void nttcheck_fill(nttcheck *c, uint64_t *seed, int pattern);
/* Runs plan on the host from in to out and fails the test at the first
 * word that differs from ir_ntt_row (the message names the plan). */
void nttcheck_run(nttcheck *c, const lw_ntt_plan *plan);
void nttcheck_free(nttcheck *c);

/* The tables an NTT test graph reads, malloc'd (the caller frees them):
 * the parameter table [8, rows] of moduli q (ntt = 1, scale 1, N = n in
 * row 7) and the forward and inverse twiddle tables [rows, n]. For the
 * tests whose own set-up has these three (test_names, test_ntt_graph,
 * test_ipntt). */
void nttcheck_tables(fhjit_context *ctx, fhjit_radix radix, const uint64_t *q, int rows, int64_t n,
                     void **params, void **fwd, void **inv);

#endif
