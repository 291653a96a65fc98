/* randgraph.h: random valid bound graphs for differential tests (prefix rg_).
 *
 * rg_random_graph builds, through the public builder API, a random DAG of
 * pointwise ops over inputs with random component counts, broadcast batch
 * shapes and non-dense layouts, marks several kinds of outputs, and binds it.
 * rg_case_init then gives it moduli, a parameter table and random lazy input
 * buffers; any backend can run it, and rg_compare reports the first
 * difference between two backends' results. rg_reference is an independent
 * evaluator (SPEC formulas in unsigned __int128, constants computed here, not
 * read from fhjit's parameter table) that serves as a third opinion; it
 * evaluates NTTs and SPEC section 7's limb-mixing ops (bconv, rescale, modup,
 * moddown) too, with its own twiddles and constants.
 * Everything is deterministic in the seed. */
#ifndef FHJIT_RANDGRAPH_H
#define FHJIT_RANDGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "fhjit/fhjit.h"

#define RG_MAX_ROWS 8 /* rows, and chain positions (Q ++ P of limb-mixing graphs) */

typedef struct rg_config {
  int min_ops, max_ops;  /* op nodes (not inputs), 1..40 */
  int radix;             /* -1: random, else an fhjit_radix */
  int max_rows;          /* 1..RG_MAX_ROWS */
  int max_batch_rank;    /* 0..3 */
  int odd_n;             /* also draw n that is not a power of two */
  int domain_facts;      /* percent of inputs that state a domain or form */
  int strided_layouts;   /* percent of inputs bound with a non-dense layout */
  uint32_t op_mask;      /* bit (1u << ir_op) per allowed op; 0 = every op */
  int ntt_percent;       /* percent of graphs with NTT anchors (n 16..64, NTT primes);
                          * their NTT results get multi-output epilogues */
  int random_names;      /* graph names of 1..300 arbitrary bytes, long value names */
  int reindex_percent;   /* percent of ops that are SPEC section 7's rows, concat or
                          * automorphism (0 by default; rg_reference evaluates them) */
  int mix_percent;       /* percent of ops that are SPEC section 7's limb-mixing ops
                          * (bconv; with NTT primes also rescale, modup, moddown and the
                          * keyswitch composite). Non-zero: the graph gets a chain Q_L ++ P
                          * (1-2 special primes, a digit size), pairwise coprime moduli,
                          * and values on other bases. 0 by default: no draw changes. */
} rg_config;

void rg_default_config(rg_config *cfg);

/* Moduli for a random graph: a mix of primes near the radix limit (NTT
 * friendly, via fhjit_find_primes, or SPEC's), random odd moduli near the
 * limit and far below it, and tiny ones. Distinct, odd, > 1, below the limit. */
void rg_random_moduli(uint64_t *state, fhjit_radix radix, int32_t rows, uint64_t *out);

/* Builds and binds a random graph (graph moduli set). NULL on failure, with
 * a message in err: every failure is a bug in the generator or the builder. */
fhjit_graph *rg_random_graph(fhjit_context *ctx, uint64_t seed, const rg_config *cfg,
                             char *err, size_t errsize);

/* A bound graph with its parameter table and input buffers. */
typedef struct rg_case {
  fhjit_graph *g;
  fhjit_radix radix;
  int32_t rows;
  int64_t n;           /* the largest n of the graph's polynomial values */
  uint64_t moduli[RG_MAX_ROWS];
  void *params;        /* [8, pstride] words of the radix */
  int64_t pstride;
  int32_t ninputs;
  void **inputs;       /* words of the radix, input_words[i] each */
  int64_t *input_words;
  uint64_t **slot_bound; /* per input word: 2q of the smallest limb it is read with (0: never read) */
  void **input_copy;   /* pristine copies, to check that runs leave inputs alone */
  int32_t nresults;
  int64_t *result_words;
} rg_case;

/* Fills c for a bound graph: moduli (NULL: the graph's own), parameter table
 * through fhjit_param_table, twiddle inputs with fhjit_twiddle_tables (the
 * table each transform that reads it needs), random lazy inputs drawn with
 * `seed`, with about
 * edge_percent % of the elements set to lazy boundary values (0, 1, q-1, q,
 * q+1, 2q-2, 2q-1). Words no element maps to hold a poison value. Returns 0,
 * or -1 with a message. */
int rg_case_init(rg_case *c, fhjit_graph *g, const uint64_t *moduli, uint64_t seed,
                 int edge_percent, char *err, size_t errsize);
void rg_case_free(rg_case *c);
/* Re-takes the pristine copies after a test edited inputs (rg_set_element). */
void rg_case_snapshot(rg_case *c);

/* Word offset of element (comp, batch[], row, i) of input `index` in its
 * bound layout (KEY inputs: comp is (digit * 2 + component)). */
int64_t rg_input_offset(const rg_case *c, int32_t index, int64_t comp, const int64_t *batch,
                        int64_t row, int64_t i);
/* Sets one stored input word when `value` is lazy for every limb the word
 * is read with; returns 1 if set, 0 if not (out of range for some limb). */
int rg_set_word(rg_case *c, int32_t index, int64_t offset, uint64_t value);
uint64_t rg_get_word(const rg_case *c, int32_t index, int64_t offset);

/* Result buffers (dense, words of the radix) filled with `poison`. */
void **rg_alloc_results(const rg_case *c, uint64_t poison);
void rg_free_results(const rg_case *c, void **results);

/* Runs the independent reference evaluator. 0, or -1 with a message. */
int rg_reference(const rg_case *c, void *const *results, char *err, size_t errsize);

/* Deliberate mistakes in the reference, one op each, so that a test can show
 * that a wrong evaluation of that op is caught (a mutation check). */
typedef enum rg_mutation {
  RG_MUT_NONE = 0,
  RG_MUT_BCONV,   /* V_i = X_i: the h_i^-1 factor forgotten */
  RG_MUT_RESCALE, /* no centring by floor(q/2): floor instead of round */
  RG_MUT_MODUP,   /* the digit's integers read as if in standard form (no R^-1) */
  RG_MUT_MODDOWN, /* the P*^-1 constant without its Montgomery factor R */
  RG_MUT_NTT,     /* twiddles in natural rather than bit-reversed order */
  RG_NUM_MUTATIONS
} rg_mutation;
int rg_reference_mutant(const rg_case *c, void *const *results, rg_mutation mutation,
                        char *err, size_t errsize);

/* Number of differing result words; on the first one writes a report (graph
 * text, result and value, element coordinates, both values, moduli) to
 * report. */
int64_t rg_compare(const rg_case *c, void *const *a, const char *a_name, void *const *b,
                   const char *b_name, char *report, size_t size);
/* 0 when every input word is unchanged since rg_case_init / rg_case_snapshot,
 * else -1 with a message naming the backend. */
int rg_check_inputs(const rg_case *c, const char *backend, char *err, size_t errsize);

/* Readable description of the graph (its canonical text when the printer is
 * available, else a dump of the nodes) and the case's moduli and layouts.
 * malloc'd. */
char *rg_describe(const rg_case *c);

#endif
