/* test_bounds.c: the compile-time bounds of the lowering (docs/limits.md).
 * Nested compressed reads (one value read under two layouts, K levels deep)
 * must lower in work linear in the (node, index pattern) pairs, not 2^K,
 * and compute what the interpreter computes (K = 1..8 on the host JIT, every
 * vector width); K = 32 compiles to PTX; a 100,000-operation chain fails
 * early with the documented error; FHJIT_MAX_VALUES is honoured and
 * checked, for fused kernels and for NTT fused work; 20,000 outputs are
 * named and refused in linear time; rows/concat address chains that are
 * DAGs (each level reading the last twice) lower in linear time; a builder
 * call walks the nodes only
 * while bases are bound (building stays linear). Each case prints its
 * time and the process's peak RSS: the only time bound is CTest's TIMEOUT.
 * FHJIT_BOUNDS_FULL=1 also compiles the 100,000-operation chain with the
 * limit raised (minutes). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ir/ir.h"
#include "randgraph.h"
#include "testutil.h"

#define CHAIN_OPS 100000

static const uint64_t mod32[2] = {268369921, 134176769};
static const uint64_t mod62[2] = {UINT64_C(1152921504606748673), UINT64_C(576460752303423649)};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double peak_rss_mb(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_maxrss / 1024.0; /* KB on Linux */
}

static void report(const char *what, double t0) {
  fprintf(stderr, "test_bounds: %-44s %8.2f s, peak RSS %7.1f MB\n", what, now_s() - t0,
          peak_rss_mb());
}

static fhjit_value input(fhjit_graph *g, const char *name, int comps, int64_t rows, int64_t n) {
  fhjit_type t = tu_poly(comps, 0, NULL, rows, n);
  t.domain = FHJIT_DOMAIN_NTT;
  t.form = FHJIT_FORM_MONT;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_msg(v != FHJIT_NO_VALUE, "%s", fhjit_last_error(fhjit_graph_context(g)));
  return v;
}

static void check_value(fhjit_graph *g, fhjit_value v) {
  ck_assert_msg(v != FHJIT_NO_VALUE, "%s", fhjit_last_error(fhjit_graph_context(g)));
}

/* ------------------------------------------------------- nested graphs */

/* Level k of a nested graph reads z[k-1] (extent n[k-1]) as the compressed
 * plaintext of two ops on c[k] (extent n[k] = n[k-1] * factor): layouts
 * from this table, the second op an NTT-domain add_compressed at every third
 * level; z[k] combines the two. */
static const fhjit_compression pairs[][2] = {
    {FHJIT_CYCLIC, FHJIT_CONTIGUOUS},        {FHJIT_CONTIGUOUS, FHJIT_CYCLIC},
    {FHJIT_CYCLIC, FHJIT_STRIDED_SPARSE},    {FHJIT_STRIDED_SPARSE, FHJIT_CONTIGUOUS},
    {FHJIT_CONTIGUOUS, FHJIT_CONTIGUOUS},    {FHJIT_CYCLIC, FHJIT_CYCLIC}};
#define NPAIRS (int)(sizeof pairs / sizeof *pairs)

static fhjit_value compressed(fhjit_graph *g, int add, fhjit_value ct, fhjit_value pt,
                              fhjit_compression layout, int64_t rows, int k) {
  fhjit_value im = FHJIT_NO_VALUE;
  if (layout == FHJIT_STRIDED_SPARSE) {
    char name[32];
    snprintf(name, sizeof name, "im%d_%d", k, add);
    im = input(g, name, 0, rows, 1);
  }
  fhjit_value v = add ? fhjit_add_compressed(g, ct, pt, layout, im, FHJIT_DOMAIN_NTT)
                      : fhjit_mul_compressed(g, ct, pt, layout, im);
  check_value(g, v);
  return v;
}

static fhjit_value combine(fhjit_graph *g, int k, fhjit_value x, fhjit_value y) {
  switch (k % 4) {
  case 0: return fhjit_add(g, x, y);
  case 1: return fhjit_mul(g, x, y);
  case 2: return fhjit_sub(g, x, y);
  default: return fhjit_add_lazy(g, x, y);
  }
}

/* K levels over a leaf of extent n0; factor 0 alternates 2 and 3; `pattern`
 * picks the layouts. Bound, with moduli. Component counts vary: c[k] is a
 * 2-component ciphertext at every third level (the plaintext read of such a
 * value takes component 0), and at the top. */
static fhjit_graph *nest_graph(fhjit_context *ctx, fhjit_radix radix, int K, int64_t n0,
                               int factor, int pattern) {
  char name[32];
  snprintf(name, sizeof name, "nest%d", K);
  fhjit_graph *g = fhjit_graph_create(ctx, name, radix);
  int64_t rows = 2, n = n0;
  fhjit_value z = input(g, "z0", 0, rows, n0);
  for (int k = 1; k <= K; k++) {
    n *= factor ? factor : 2 + (k % 2);
    snprintf(name, sizeof name, "c%d", k);
    fhjit_value c = input(g, name, k % 3 == 0 || k == K ? 2 : 0, rows, n);
    const fhjit_compression *p = pairs[(k + pattern) % NPAIRS];
    fhjit_value x = compressed(g, 0, c, z, p[0], rows, k);
    fhjit_value y = compressed(g, k % 3 == 1, c, z, p[1], rows, k);
    z = combine(g, k + pattern, x, y);
    check_value(g, z);
  }
  ck_assert_int_eq(fhjit_output(g, z, "z"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  const uint64_t *mods = radix == FHJIT_R32 ? mod32 : mod62;
  ck_assert_int_eq(fhjit_graph_set_moduli(g, mods, 2), FHJIT_OK);
  return g;
}

/* Host JIT == interpreter (and randgraph's evaluator) on g, bit for bit. */
static void host_matches_interpreter(fhjit_graph *g, uint64_t seed, const char *what) {
  char err[1 << 14];
  rg_case c;
  ck_assert_msg(rg_case_init(&c, g, NULL, seed, 20, err, sizeof err) == 0, "%s", err);
  void **host = rg_alloc_results(&c, 0x55555555u);
  void **itp = rg_alloc_results(&c, 0x2AAAAAAAu);
  void **ref = rg_alloc_results(&c, 0x11111111u);
  fhjit_context *ctx = fhjit_graph_context(g);
  fhjit_status st = fhjit_interpret(g, c.params, c.pstride, (const void *const *)c.inputs, itp);
  ck_assert_msg(st == FHJIT_OK, "%s: interpreter: %s", what, fhjit_last_error(ctx));
  st = fhjit_run_host(g, c.params, c.pstride, (const void *const *)c.inputs, host, 0);
  ck_assert_msg(st == FHJIT_OK, "%s: host: %s", what, fhjit_last_error(ctx));
  ck_assert_msg(rg_reference(&c, ref, err, sizeof err) == 0, "%s", err);
  int64_t bad = rg_compare(&c, host, "host JIT", itp, "interpreter", err, sizeof err);
  if (bad) fprintf(stderr, "%s\n", err);
  ck_assert_msg(bad == 0, "%s: host != interpreter in %lld words", what, (long long)bad);
  bad = rg_compare(&c, itp, "interpreter", ref, "randgraph reference", err, sizeof err);
  if (bad) fprintf(stderr, "%s\n", err);
  ck_assert_msg(bad == 0, "%s: interpreter != reference in %lld words", what, (long long)bad);
  rg_free_results(&c, host);
  rg_free_results(&c, itp);
  rg_free_results(&c, ref);
  rg_case_free(&c);
}

/* K = 1..8, both radices, extents 2^K and mixed 2/3 factors over leaves of 1
 * and 3 values, every vector width of the host (FHJIT_PW_PLAN V). */
START_TEST(test_nested_host) {
  static const char *const plans[] = {"", "V=1", "V=2"};
  double t0 = now_s();
  fhjit_context *ctx = fhjit_context_create();
  for (int K = 1; K <= 8; K++)
    for (int variant = 0; variant < 4; variant++)
      for (int pl = 0; pl < 3; pl++) {
        setenv("FHJIT_PW_PLAN", plans[pl], 1);
        fhjit_radix radix = (fhjit_radix)((K + variant) % 2);
        int factor = variant < 2 ? 2 : 0;
        fhjit_graph *g = nest_graph(ctx, radix, K, variant % 2 ? 3 : 1, factor, K + variant);
        char what[96];
        snprintf(what, sizeof what, "K=%d variant %d plan '%s'", K, variant, plans[pl]);
        host_matches_interpreter(g, (uint64_t)(K * 16 + variant * 4 + pl), what);
        fhjit_graph_destroy(g);
      }
  unsetenv("FHJIT_PW_PLAN");
  fhjit_context_destroy(ctx);
  report("nested K=1..8 host == interpreter (96 graphs)", t0);
}
END_TEST

/* K = 32 over n = 2^32 (64-bit indexing) to PTX within the default bound;
 * its unoptimised IR grows about as K^2 (the index patterns of a level are
 * (i / a) mod b for a up to 2^depth), not 2^K; K = 12 (n = 4096) also runs
 * on the host. */
START_TEST(test_nested_k32) {
  fhjit_context *ctx = fhjit_context_create();
  double t0 = now_s();
  fhjit_graph *g32 = nest_graph(ctx, FHJIT_R32, 32, 1, 2, 0);
  const char *ptx = fhjit_emit(g32, FHJIT_EMIT_PTX, NULL);
  ck_assert_msg(ptx != NULL, "K=32: %s", fhjit_last_error(ctx));
  ck_assert(strstr(ptx, ".entry fhjit_nest32") != NULL);
  report("nested K=32 (n = 2^32) to PTX", t0);
  const char *ir = fhjit_emit(g32, FHJIT_EMIT_LLVM, NULL);
  ck_assert_msg(ir != NULL, "%s", fhjit_last_error(ctx));
  size_t size32 = strlen(ir);
  fhjit_graph *g16 = nest_graph(ctx, FHJIT_R32, 16, 1, 2, 0);
  ir = fhjit_emit(g16, FHJIT_EMIT_LLVM, NULL);
  ck_assert_msg(ir != NULL, "%s", fhjit_last_error(ctx));
  size_t size16 = strlen(ir);
  fprintf(stderr, "test_bounds: LLVM IR of K=16: %zu bytes, K=32: %zu bytes\n", size16, size32);
  ck_assert_msg(size32 < 6 * size16, "K=32's IR is %zu bytes, K=16's %zu", size32, size16);
  fhjit_graph_destroy(g16);
  fhjit_graph_destroy(g32);
  t0 = now_s();
  fhjit_graph *g12 = nest_graph(ctx, FHJIT_R62, 12, 1, 2, 3);
  host_matches_interpreter(g12, 12, "K=12");
  fhjit_graph_destroy(g12);
  report("nested K=12 (n = 4096) host == interpreter", t0);
  fhjit_context_destroy(ctx);
}
END_TEST

/* K levels of c[k] = concat(rows(c[k-1], 0, 1), rows(c[k-1], 1, 1)) over a
 * 2-row input (each level reads its predecessor twice: a DAG of depth K),
 * then `variant` 0: neg(c[K]); 1: add(automorphism(c[K], 3), c[K]). */
static fhjit_graph *row_chain_graph(fhjit_context *ctx, fhjit_radix radix, int K, int variant) {
  fhjit_graph *g = fhjit_graph_create(ctx, "row_chain", radix);
  fhjit_value c = input(g, "c0", variant ? 0 : 2, 2, 16);
  for (int k = 1; k <= K; k++) {
    c = fhjit_concat(g, fhjit_rows(g, c, 0, 1), fhjit_rows(g, c, 1, 1));
    check_value(g, c);
  }
  fhjit_value r = variant ? fhjit_add(g, fhjit_automorphism(g, c, 3), c) : fhjit_neg(g, c);
  check_value(g, r);
  ck_assert_int_eq(fhjit_output(g, r, "r"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_graph_set_moduli(g, radix == FHJIT_R32 ? mod32 : mod62, 2), FHJIT_OK);
  return g;
}

/* Address chains are DAGs: the planner's and the lowering's walks over
 * rows and concat (lw_addressable, lw_step_addressable, the remapped
 * loads' resolve) once took 2^K steps and emitted 2^K instructions (K = 20:
 * 75 s on the host; K = 22 of a bconv's operand past 60 s). Now K = 40
 * compiles and matches the interpreter, and K = 200's IR is within 8x of
 * K = 20's (linear: 10x the levels). */
START_TEST(test_row_chain_dag) {
  double t0 = now_s();
  fhjit_context *ctx = fhjit_context_create();
  for (int variant = 0; variant < 2; variant++)
    for (int r = 0; r < 2; r++) {
      fhjit_graph *g = row_chain_graph(ctx, (fhjit_radix)r, 40, variant);
      char what[64];
      snprintf(what, sizeof what, "row chain K=40 variant %d r%d", variant, r ? 62 : 32);
      host_matches_interpreter(g, (uint64_t)(40 + 2 * variant + r), what);
      fhjit_graph_destroy(g);
    }
  size_t size[2];
  for (int i = 0; i < 2; i++) {
    fhjit_graph *g = row_chain_graph(ctx, FHJIT_R62, i ? 200 : 20, 1);
    const char *ir = fhjit_emit(g, FHJIT_EMIT_LLVM, NULL);
    ck_assert_msg(ir != NULL, "%s", fhjit_last_error(ctx));
    size[i] = strlen(ir);
    ck_assert(fhjit_emit(g, FHJIT_EMIT_PTX, NULL) != NULL);
    fhjit_graph_destroy(g);
  }
  fprintf(stderr, "test_bounds: row chain IR, K=20: %zu bytes, K=200: %zu bytes\n", size[0],
          size[1]);
  ck_assert_msg(size[1] < 8 * size[0], "K=200's IR is %zu bytes, K=20's %zu", size[1], size[0]);
  fhjit_context_destroy(ctx);
  report("row chains K=40 host == interpreter, K=20/200 to PTX", t0);
}
END_TEST

/* A tight FHJIT_MAX_VALUES refuses the nested graph before LLVM runs, with
 * the documented message; malformed values are refused too. */
START_TEST(test_max_values_env) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = nest_graph(ctx, FHJIT_R32, 32, 1, 2, 0);
  setenv("FHJIT_MAX_VALUES", "300", 1);
  ck_assert(fhjit_emit(g, FHJIT_EMIT_PTX, NULL) == NULL);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_UNSUPPORTED);
  const char *msg = fhjit_last_error(ctx);
  ck_assert_msg(tu_contains(msg, "graph @nest32") && tu_contains(msg, "more than 300 values") &&
                    tu_contains(msg, "index patterns so far") && tu_contains(msg, "docs/limits.md") &&
                    tu_contains(msg, "FHJIT_MAX_VALUES"),
                "%s", msg);
  static const char *const bad[] = {"0", "-5", "12x", "x", "1e3", "100000001"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("FHJIT_MAX_VALUES", bad[i], 1);
    ck_assert(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL);
    ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
    ck_assert_msg(tu_contains(fhjit_last_error(ctx), "FHJIT_MAX_VALUES"), "%s",
                  fhjit_last_error(ctx));
  }
  setenv("FHJIT_MAX_VALUES", "", 1); /* empty: the default */
  ck_assert_msg(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) != NULL, "%s", fhjit_last_error(ctx));
  unsetenv("FHJIT_MAX_VALUES");
  fhjit_graph_destroy(g);
  fhjit_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- chains */

/* ops operations over two inputs of extent n: mul, add, sub, add_lazy in
 * turn, each on the previous value. */
static fhjit_graph *chain_graph(fhjit_context *ctx, int ops, int64_t n) {
  fhjit_graph *g = fhjit_graph_create(ctx, "chain", FHJIT_R32);
  fhjit_value a = input(g, "a", 0, 1, n), b = input(g, "b", 0, 1, n), v = a;
  for (int i = 0; i < ops; i++) {
    switch (i % 4) {
    case 0: v = fhjit_mul(g, v, b); break;
    case 1: v = fhjit_add(g, v, b); break;
    case 2: v = fhjit_sub(g, v, b); break;
    default: v = fhjit_add_lazy(g, v, b); break;
    }
    if (v == FHJIT_NO_VALUE) break;
  }
  check_value(g, v);
  ck_assert_int_eq(fhjit_output(g, v, "r"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_graph_set_moduli(g, mod32, 1), FHJIT_OK);
  return g;
}

static void check_chain_refused(fhjit_context *ctx, const char *limit) {
  const char *msg = fhjit_last_error(ctx);
  char nodes[64], more[64];
  snprintf(nodes, sizeof nodes, "; %d nodes, 1 index pattern so far", CHAIN_OPS + 2);
  snprintf(more, sizeof more, "more than %s values", limit);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_UNSUPPORTED);
  ck_assert_msg(tu_contains(msg, "graph @chain") && tu_contains(msg, nodes) &&
                    tu_contains(msg, more) && tu_contains(msg, "FHJIT_MAX_VALUES"),
                "%s", msg);
}

/* The 100,000-operation chain is built, bound, hashed and refused by both
 * compile paths in well under a second of fhjit's own work each (ASan
 * included: LLVM is not instrumented, and the refusal comes before it); a
 * 2,000-operation one compiles to PTX and runs on the host. */
/* Building is linear in the builder calls: every call runs ir_unbind,
 * which once walked every node to free bases (O(n^2): 25 s for 100,000
 * operations, 177 s under ASan). It walks only while some node holds a
 * basis (bind stores one for a value off the default positions). Checked
 * by state, not by time: a pointer planted in a node of a graph without
 * bases survives a builder call; with bases bound, a builder call frees
 * them. */
START_TEST(test_unbind_walks_only_bases) {
  static const char text[] =
      "graph @bc radix(r62) moduli(1152921504606830593, 2199023251457, 2199023228929, "
      "2199023210497, 1152921504606791681, 1152921504606748673) {\n"
      "  %x = input ct<2, [], 3, 1024> coef mont\n"
      "  %t = input table<12>\n"
      "  %y = bconv %x, %t basis(3, 4, 5)\n"
      "  output %y\n"
      "}\n";
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = chain_graph(ctx, 100, 64);
  ck_assert_int_eq(g->bases_live, 0);
  int32_t *planted = malloc(sizeof *planted);
  ck_assert_ptr_nonnull(planted);
  g->nodes[0].basis = planted;
  fhjit_value v = fhjit_add(g, 0, 1);
  ck_assert_int_ne(v, FHJIT_NO_VALUE);
  ck_assert_ptr_eq(g->nodes[0].basis, planted); /* no walk: nothing freed */
  g->nodes[0].basis = NULL;
  free(planted);
  fhjit_graph_destroy(g);
  g = fhjit_parse(ctx, text, strlen(text), "bc.fh");
  ck_assert_msg(g != NULL, "%s", fhjit_last_error(ctx));
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(g->bases_live, 1);
  int with_basis = 0;
  for (int32_t i = 0; i < g->nnodes; i++) with_basis += g->nodes[i].basis != NULL;
  ck_assert_int_gt(with_basis, 0);
  ck_assert_int_ne(fhjit_from_mont(g, 0), FHJIT_NO_VALUE); /* unbinds */
  ck_assert_int_eq(g->bases_live, 0);
  for (int32_t i = 0; i < g->nnodes; i++) ck_assert_ptr_null(g->nodes[i].basis);
  fhjit_graph_destroy(g);
  fhjit_context_destroy(ctx);
}
END_TEST

START_TEST(test_chain) {
  fhjit_context *ctx = fhjit_context_create();
  double t0 = now_s();
  fhjit_graph *g = chain_graph(ctx, CHAIN_OPS, 4096);
  uint64_t hash[2];
  ck_assert_int_eq(fhjit_graph_hash(g, hash), FHJIT_OK);
  ck_assert(fhjit_print(g) != NULL);
  report("chain: build, bind, hash, print", t0);
  t0 = now_s();
  ck_assert(fhjit_emit(g, FHJIT_EMIT_PTX, NULL) == NULL);
  check_chain_refused(ctx, "8192");
  report("chain: PTX refused (default limit)", t0);
  t0 = now_s();
  void *bufs[3] = {calloc(4096, 4), calloc(4096, 4), calloc(4096, 4)}, *params = calloc(8, 4);
  const void *ins[2] = {bufs[0], bufs[1]};
  ck_assert(fhjit_run_host(g, params, 1, ins, &bufs[2], 1) == FHJIT_ERR_UNSUPPORTED);
  check_chain_refused(ctx, "8192");
  report("chain: host JIT refused (default limit)", t0);
  for (int i = 0; i < 3; i++) free(bufs[i]);
  free(params);
  if (getenv("FHJIT_BOUNDS_FULL")) {
    setenv("FHJIT_MAX_VALUES", "100000000", 1);
    t0 = now_s();
    const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, NULL);
    ck_assert_msg(ptx != NULL, "%s", fhjit_last_error(ctx));
    report("chain: PTX with the limit raised", t0);
    unsetenv("FHJIT_MAX_VALUES");
  }
  fhjit_graph_destroy(g);
  t0 = now_s();
  g = chain_graph(ctx, 2000, 4096);
  ck_assert_msg(fhjit_emit(g, FHJIT_EMIT_PTX, NULL) != NULL, "%s", fhjit_last_error(ctx));
  report("chain of 2000 to PTX", t0);
  fhjit_graph_destroy(g);
  t0 = now_s();
  g = chain_graph(ctx, 2000, 64);
  host_matches_interpreter(g, 7, "chain of 2000");
  report("chain of 2000 (n = 64) host == interpreter", t0);
  fhjit_graph_destroy(g);
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------------ NTT fused work */

/* A forward NTT whose epilogue is an ops-long chain: every element a thread
 * of the last kernel handles inlines the chain, and that is what counts. */
static fhjit_graph *ntt_chain_graph(fhjit_context *ctx, int ops) {
  fhjit_graph *g = fhjit_graph_create(ctx, "nttchain", FHJIT_R32);
  fhjit_type ta = tu_poly(0, 0, NULL, 1, 4096), tw = {0};
  ta.domain = FHJIT_DOMAIN_COEF;
  ta.form = FHJIT_FORM_MONT;
  tw.kind = FHJIT_KIND_TWIDDLE;
  tw.rows = 1;
  tw.n = 4096;
  fhjit_value a = fhjit_input(g, "a", &ta), t = fhjit_input(g, "tw", &tw);
  fhjit_value b = input(g, "b", 0, 1, 4096);
  check_value(g, a);
  check_value(g, t);
  fhjit_value v = fhjit_ntt(g, a, t, FHJIT_NTT_COEF_MONT_TO_NTT);
  for (int i = 0; i < ops && v != FHJIT_NO_VALUE; i++)
    v = i % 2 ? fhjit_add(g, v, b) : fhjit_mul(g, v, b);
  check_value(g, v);
  ck_assert_int_eq(fhjit_output(g, v, "r"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  return g;
}

START_TEST(test_ntt_fused_limit) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = ntt_chain_graph(ctx, 40);
  ck_assert_msg(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) != NULL, "%s", fhjit_last_error(ctx));
  setenv("FHJIT_MAX_VALUES", "100", 1); /* more than the chain, less than it inlined */
  ck_assert(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL);
  const char *msg = fhjit_last_error(ctx);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_UNSUPPORTED);
  ck_assert_msg(tu_contains(msg, "graph @nttchain") && tu_contains(msg, "epilogue") &&
                    tu_contains(msg, "more than the limit of 100") &&
                    tu_contains(msg, "FHJIT_MAX_VALUES"),
                "%s", msg);
  void *bufs[4] = {calloc(4096, 4), calloc(4096, 4), calloc(4096, 4), calloc(4096, 4)};
  void *params = calloc(8, 4);
  const void *ins[3] = {bufs[0], bufs[1], bufs[2]};
  ck_assert(fhjit_run_host(g, params, 1, ins, &bufs[3], 1) == FHJIT_ERR_UNSUPPORTED);
  msg = fhjit_last_error(ctx);
  ck_assert_msg(tu_contains(msg, "graph @nttchain") && tu_contains(msg, "FHJIT_MAX_VALUES"),
                "%s", msg);
  for (int i = 0; i < 4; i++) free(bufs[i]);
  free(params);
  unsetenv("FHJIT_MAX_VALUES");
  fhjit_graph_destroy(g);
  fhjit_context_destroy(ctx);
}
END_TEST

/* Every op of a chain is an output: the names are checked through an index
 * (a duplicate is still refused), and a graph with an NTT and more results
 * than any program can write is refused before its plan. */
START_TEST(test_many_outputs) {
  fhjit_context *ctx = fhjit_context_create();
  double t0 = now_s();
  fhjit_graph *g = ntt_chain_graph(ctx, 20000);
  fhjit_value v = fhjit_input_value(g, 2); /* b */
  for (int i = 0; i < 20000; i++) {
    v = fhjit_add(g, v, fhjit_input_value(g, 2));
    char name[32];
    snprintf(name, sizeof name, "out%d", i);
    ck_assert_msg(fhjit_output(g, v, name) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  }
  ck_assert_int_eq(fhjit_output(g, v, "out123"), FHJIT_ERR_TYPE);
  ck_assert(tu_contains(fhjit_last_error(ctx), "output name 'out123' is used twice"));
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  report("20,000 outputs: build and bind", t0);
  t0 = now_s();
  ck_assert(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_UNSUPPORTED);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), "has 20001 results, but its 1 NTT and one "
                                                   "pointwise kernel write at most 67"),
                "%s", fhjit_last_error(ctx));
  report("20,000 outputs with an NTT: refused", t0);
  fhjit_graph_destroy(g);
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bounds");
  TCase *tc = tcase_create("bounds");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_nested_host);
  tcase_add_test(tc, test_nested_k32);
  tcase_add_test(tc, test_row_chain_dag);
  tcase_add_test(tc, test_max_values_env);
  tcase_add_test(tc, test_unbind_walks_only_bases);
  tcase_add_test(tc, test_chain);
  tcase_add_test(tc, test_ntt_fused_limit);
  tcase_add_test(tc, test_many_outputs);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
