/* test_random_graphs.c: differential testing on random graphs (randgraph.h).
 * Thousands of random valid bound graphs run on the host JIT and on the
 * reference interpreter must agree bit for bit, leave their inputs alone and
 * write every result word; the interpreter must also agree with randgraph's
 * independent evaluator. Deliberately invalid graphs must be refused with an
 * error before anything is compiled.
 *
 * FHJIT_RANDOM_GRAPHS sets the number of host-vs-interpreter graphs (default
 * sized for about three minutes of a Debug build on 2 cores, fewer under
 * ASan), FHJIT_RANDOM_REINDEX_GRAPHS and FHJIT_RANDOM_MIX_GRAPHS those of the
 * section 7 tests; FHJIT_RANDOM_SEED the first seed (graph i uses seed + i), so a
 * failure report's seed reproduces it alone: FHJIT_RANDOM_SEED=s
 * FHJIT_RANDOM_GRAPHS=1. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/ir.h"
#include "randgraph.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_HOST_GRAPHS 250
#define DEFAULT_REF_GRAPHS 1000
#define DEFAULT_MIX_GRAPHS 30
#else
#define DEFAULT_HOST_GRAPHS 3000
#define DEFAULT_REF_GRAPHS 5000
#define DEFAULT_MIX_GRAPHS 200
#endif

#define POISON_A UINT64_C(0x5555555555555555)
#define POISON_B UINT64_C(0x2AAAAAAAAAAAAAAA)

static long env_long(const char *name, long fallback) {
  const char *s = getenv(name);
  if (!s || !*s) return fallback;
  char *end;
  long v = strtol(s, &end, 0);
  return *end ? fallback : v;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Poison patterns truncated to the word (r32: 0x55555555 / 0x2AAAAAAA). */
static uint64_t poison(fhjit_radix radix, uint64_t p) {
  return radix == FHJIT_R32 ? (p & 0xFFFFFFFFu) : p;
}

/* Shared failure path: print the report and fail with it. */
static void fail_report(const char *what, uint64_t seed, const char *report) {
  fprintf(stderr, "%s (seed %llu):\n%s\n", what, (unsigned long long)seed, report);
  ck_abort_msg("%s (seed %llu); the report is on stderr", what, (unsigned long long)seed);
}

/* Fails when call (fhjit_interpret, fhjit_run_host) gave st on case c: its
 * message and the graph's description in the report. */
static void check_call(const rg_case *c, const char *call, fhjit_status st, const char *what,
                       uint64_t seed) {
  if (st == FHJIT_OK) return;
  static char report[1 << 15], msg[4096];
  /* the message first: rg_describe prints the graph, which clears it */
  snprintf(msg, sizeof msg, "%s", fhjit_last_error(fhjit_graph_context(c->g)));
  char *desc = rg_describe(c);
  snprintf(report, sizeof report, "%s: %s: %s\n%s", call, fhjit_status_name(st), msg,
           desc ? desc : "");
  free(desc);
  fail_report(what, seed, report);
}

/* The host JIT on case c (`threads`), against the interpreter's results
 * itp: word for word, inputs untouched. */
static void host_matches(rg_case *c, void **host, void *const *itp, int threads, uint64_t seed) {
  static char err[1 << 14];
  fhjit_status st = fhjit_run_host(c->g, c->params, c->pstride, (const void *const *)c->inputs,
                                   host, threads);
  check_call(c, "fhjit_run_host", st, "the host JIT refused a valid graph", seed);
  if (rg_compare(c, host, "host", itp, "interpreter", err, sizeof err))
    fail_report("host != interpreter", seed, err);
  if (rg_check_inputs(c, "fhjit_run_host", err, sizeof err)) fail_report("inputs", seed, err);
}

/* ------------------------------------------------- generator sanity */

/* The generator must produce what it promises: every op, both radices,
 * every compression layout and domain, broadcast layouts, aliases, extract
 * outputs, a value output twice; and every graph must bind. Also checks the
 * interpreter against randgraph's evaluator on each graph (no LLVM: fast). */
START_TEST(test_generator_and_reference) {
  long count = env_long("FHJIT_RANDOM_REF_GRAPHS", DEFAULT_REF_GRAPHS);
  uint64_t base = (uint64_t)env_long("FHJIT_RANDOM_SEED", 1);
  int op_seen[IR_NUM_OPS] = {0}, layout_seen[3] = {0}, coef_add = 0, ntt_add = 0;
  int radix_seen[2] = {0}, alias_outputs = 0, extract_outputs = 0, twice = 0;
  int stride0 = 0, gaps = 0, offset = 0, multi_result = 0, max_ops = 0, zero_result = 0;
  int computed_plain = 0, key_row_start = 0;
  char err[1 << 14];
  fhjit_context *ctx = fhjit_context_create();
  rg_config cfg;
  rg_default_config(&cfg);
  for (long k = 0; k < count; k++) {
    uint64_t seed = base + (uint64_t)k;
    fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
    if (!g) fail_report("rg_random_graph failed", seed, err);
    radix_seen[fhjit_graph_radix(g)]++;
    int ops = 0;
    for (int32_t v = 0; v < g->nnodes; v++) {
      const ir_node *n = &g->nodes[v];
      op_seen[n->op]++;
      if (n->op != IR_INPUT) ops++;
      if (n->op == IR_MUL_COMPRESSED || n->op == IR_ADD_COMPRESSED) {
        layout_seen[n->attr[0]]++;
        if (g->nodes[n->args[1]].op != IR_INPUT) computed_plain++;
      }
      if (n->op == IR_ADD_COMPRESSED) {
        if (n->attr[1] == FHJIT_DOMAIN_COEF) coef_add++;
        else ntt_add++;
      }
      if (n->op == IR_KS_DIGIT_PRODUCT && n->attr[1] > 0) key_row_start++;
      if (n->op == IR_INPUT) {
        const fhjit_type *t = &n->type;
        const fhjit_layout *l = &n->layout;
        fhjit_layout dense;
        fhjit_dense_layout(t, &dense);
        if (l->offset) offset++;
        for (int a = 0; a < t->nbatch; a++)
          if (t->batch[a] > 1 && l->batch_stride[a] == 0) stride0++;
        if (t->comps > 1 && l->comp_stride == 0) stride0++;
        if (memcmp(l, &dense, sizeof dense) != 0 && !l->offset) gaps++;
      }
    }
    if (ops > max_ops) max_ops = ops;
    ck_assert_msg(ops >= 1 && ops <= 40, "seed %llu: %d ops", (unsigned long long)seed, ops);
    for (int32_t o = 0; o < fhjit_num_outputs(g); o++) {
      fhjit_output_info info;
      ck_assert_int_eq(fhjit_output_info_get(g, o, &info), FHJIT_OK);
      if (info.is_input_alias) alias_outputs++;
      if (info.component >= 0) extract_outputs++;
      for (int32_t p = 0; p < o; p++) {
        fhjit_output_info other;
        fhjit_output_info_get(g, p, &other);
        if (other.value == info.value) twice++;
      }
    }
    if (fhjit_num_results(g) > 1) multi_result++;
    if (fhjit_num_results(g) == 0) zero_result++;

    rg_case c;
    if (rg_case_init(&c, g, NULL, seed, 10, err, sizeof err)) fail_report("rg_case_init", seed, err);
    void **ref = rg_alloc_results(&c, poison(c.radix, POISON_A));
    void **itp = rg_alloc_results(&c, poison(c.radix, POISON_B));
    if (rg_reference(&c, ref, err, sizeof err)) fail_report("rg_reference", seed, err);
    fhjit_status st = fhjit_interpret(g, c.params, c.pstride, (const void *const *)c.inputs, itp);
    check_call(&c, "fhjit_interpret", st, "the interpreter refused a valid graph", seed);
    if (rg_compare(&c, itp, "interpreter", ref, "randgraph reference", err, sizeof err))
      fail_report("interpreter != independent reference", seed, err);
    if (rg_check_inputs(&c, "the interpreter", err, sizeof err)) fail_report("inputs", seed, err);
    rg_free_results(&c, ref);
    rg_free_results(&c, itp);
    rg_case_free(&c);
    fhjit_graph_destroy(g);
  }
  fhjit_context_destroy(ctx);
  if (count < 500) return; /* too few to ask for coverage */
  static const ir_op ops[] = {IR_ADD, IR_SUB, IR_NEG, IR_ADD_LAZY, IR_MUL, IR_TO_MONT,
                              IR_FROM_MONT, IR_MUL_PLAIN, IR_ADD_PLAIN, IR_MUL_COMPRESSED,
                              IR_ADD_COMPRESSED, IR_KS_DIGIT_PRODUCT, IR_EXTRACT, IR_PACK};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    ck_assert_msg(op_seen[ops[i]] > 20, "op %s appeared only %d times", ir_op_name(ops[i]),
                  op_seen[ops[i]]);
  for (int i = 0; i < 3; i++) ck_assert_msg(layout_seen[i] > 20, "layout %d: %d", i, layout_seen[i]);
  ck_assert(coef_add > 10 && ntt_add > 10);
  ck_assert(radix_seen[0] > count / 4 && radix_seen[1] > count / 4);
  ck_assert(alias_outputs > 20 && extract_outputs > 20 && twice > 20);
  ck_assert(stride0 > 20 && gaps > 20 && offset > 20 && multi_result > 20);
  ck_assert(computed_plain > 5 && key_row_start > 5);
  ck_assert_msg(max_ops >= 35, "largest graph has only %d ops", max_ops);
  fprintf(stderr,
          "randgraph: %ld graphs, interpreter == reference; largest %d ops, %d with several "
          "results, %d with none, %d alias outputs, %d extract outputs\n",
          count, max_ops, multi_result, zero_result, alias_outputs, extract_outputs);
}
END_TEST

/* ------------------------------------------------- host vs interpreter */

START_TEST(test_host_vs_interpreter) {
  long count = env_long("FHJIT_RANDOM_GRAPHS", DEFAULT_HOST_GRAPHS);
  uint64_t base = (uint64_t)env_long("FHJIT_RANDOM_SEED", 1);
  char err[1 << 15];
  fhjit_context *ctx = fhjit_context_create();
  rg_config cfg;
  rg_default_config(&cfg);
  double t0 = now_s();
  long words = 0;
  for (long k = 0; k < count; k++) {
    uint64_t seed = base + (uint64_t)k;
    fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
    if (!g) fail_report("rg_random_graph failed", seed, err);
    rg_case c;
    /* every fourth graph gets many boundary values */
    if (rg_case_init(&c, g, NULL, seed, k % 4 == 0 ? 60 : 8, err, sizeof err))
      fail_report("rg_case_init", seed, err);
    void **host = rg_alloc_results(&c, poison(c.radix, POISON_A));
    void **itp = rg_alloc_results(&c, poison(c.radix, POISON_B));
    fhjit_status st = fhjit_interpret(g, c.params, c.pstride, (const void *const *)c.inputs, itp);
    if (st != FHJIT_OK) {
      snprintf(err, sizeof err, "%s: %s", fhjit_status_name(st), fhjit_last_error(ctx));
      fail_report("fhjit_interpret failed", seed, err);
    }
    host_matches(&c, host, itp, (int)(seed % 4) /* 0 = automatic */, seed);
    /* A second run on the compiled graph (cached code) must agree too. */
    if (k % 16 == 0) {
      void **again = rg_alloc_results(&c, poison(c.radix, POISON_B));
      ck_assert_int_eq(fhjit_run_host(g, c.params, c.pstride, (const void *const *)c.inputs,
                                      again, 1),
                       FHJIT_OK);
      if (rg_compare(&c, again, "host (second run)", itp, "interpreter", err, sizeof err))
        fail_report("host second run != interpreter", seed, err);
      rg_free_results(&c, again);
    }
    for (int32_t r = 0; r < c.nresults; r++) words += c.result_words[r];
    rg_free_results(&c, host);
    rg_free_results(&c, itp);
    rg_case_free(&c);
    fhjit_graph_destroy(g);
  }
  fhjit_context_destroy(ctx);
  fprintf(stderr, "random graphs: %ld graphs (seeds %llu..%llu), %ld result words, host == "
                  "interpreter, %.1f s\n",
          count, (unsigned long long)base, (unsigned long long)(base + (uint64_t)count - 1),
          words, now_s() - t0);
}
END_TEST

/* ------------------------------------------------- re-indexing ops */

/* Random graphs with SPEC section 7's rows, concat and automorphism mixed
 * into the pointwise ops and, in a third of them, NTT anchors with their
 * prologues and epilogues (rg_config.reindex_percent; the fuzz_diff target
 * draws them too): the interpreter against randgraph's evaluator where
 * there is no NTT (the automorphism by its definition, not through k^-1),
 * and the host JIT against the interpreter (an automorphism of a computed
 * value included: the step planner materialises it). */
START_TEST(test_reindex_graphs) {
  long count = env_long("FHJIT_RANDOM_REINDEX_GRAPHS", DEFAULT_HOST_GRAPHS / 5);
  uint64_t base = (uint64_t)env_long("FHJIT_RANDOM_SEED", 1);
  char err[1 << 15];
  int aut[3] = {0}, rows = 0, concat = 0, on_concat = 0, with_ntt = 0, computed = 0;
  fhjit_context *ctx = fhjit_context_create();
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.reindex_percent = 35;
  cfg.ntt_percent = 33;
  cfg.max_ops = 16;
  for (long k = 0; k < count; k++) {
    uint64_t seed = base + (uint64_t)k;
    fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
    if (!g) fail_report("rg_random_graph failed", seed, err);
    int ntt = 0;
    for (int32_t v = 0; v < g->nnodes; v++) {
      const ir_node *n = &g->nodes[v];
      ntt |= n->op == IR_NTT;
      if (n->op == IR_AUTOMORPHISM) {
        aut[n->type.domain]++;
        ir_op src = g->nodes[n->args[0]].op;
        on_concat += src == IR_CONCAT;
        computed += src != IR_CONCAT && src != IR_INPUT && src != IR_EXTRACT;
      }
      rows += n->op == IR_ROWS;
      concat += n->op == IR_CONCAT;
    }
    rg_case c;
    if (rg_case_init(&c, g, NULL, seed, k % 4 == 0 ? 60 : 8, err, sizeof err))
      fail_report("rg_case_init", seed, err);
    void **ref = rg_alloc_results(&c, poison(c.radix, POISON_A));
    void **itp = rg_alloc_results(&c, poison(c.radix, POISON_B));
    void **host = rg_alloc_results(&c, poison(c.radix, POISON_A));
    fhjit_status st = fhjit_interpret(g, c.params, c.pstride, (const void *const *)c.inputs, itp);
    if (st != FHJIT_OK) {
      snprintf(err, sizeof err, "%s: %s", fhjit_status_name(st), fhjit_last_error(ctx));
      fail_report("fhjit_interpret failed", seed, err);
    }
    with_ntt += ntt;
    if (!ntt) { /* randgraph's evaluator has no NTT */
      if (rg_reference(&c, ref, err, sizeof err)) fail_report("rg_reference", seed, err);
      if (rg_compare(&c, itp, "interpreter", ref, "randgraph reference", err, sizeof err))
        fail_report("interpreter != independent reference", seed, err);
    }
    host_matches(&c, host, itp, (int)(seed % 3), seed);
    rg_free_results(&c, ref);
    rg_free_results(&c, itp);
    rg_free_results(&c, host);
    rg_case_free(&c);
    fhjit_graph_destroy(g);
  }
  fhjit_context_destroy(ctx);
  fprintf(stderr, "re-indexing graphs: %ld, %d with NTTs, all host == interpreter; "
                  "automorphisms coef %d / NTT %d (%d of a concat, %d of a computed value), "
                  "rows %d, concat %d\n",
          count, with_ntt, aut[FHJIT_DOMAIN_COEF], aut[FHJIT_DOMAIN_NTT], on_concat, computed,
          rows, concat);
  if (count < 200) return; /* too few to ask for coverage */
  ck_assert(aut[FHJIT_DOMAIN_COEF] > 20 && aut[FHJIT_DOMAIN_NTT] > 20 && on_concat > 5);
  ck_assert(rows > 20 && concat > 20 && with_ntt > count / 8);
  ck_assert(computed > 5);
}
END_TEST


/* ------------------------------------------------- limb-mixing ops */

/* What test_limb_mixing_graphs counts. */
typedef struct mix_counts {
  int op[IR_NUM_OPS][2];       /* by op and radix */
  int of_input[IR_NUM_OPS], of_computed[IR_NUM_OPS];
  int bconv_form[3];           /* by the operand's form */
  int keyswitch, with_ntt, with_reindex, read_by_ntt, read_by_aut, read_pointwise;
  int tried[RG_NUM_MUTATIONS], caught[RG_NUM_MUTATIONS];
} mix_counts;

static int is_mixing(ir_op op) {
  return op == IR_BCONV || op == IR_RESCALE || op == IR_MODUP || op == IR_MODDOWN;
}

/* Counts the graph's mixing ops, where their operands come from and what
 * reads their results; has[op]: the graph has one (a bconv only counts
 * from two source rows: with one, h_i = 1 and its mutant is right). */
static void count_mixing(const fhjit_graph *g, mix_counts *mc, int *has) {
  int ntt = 0, reindex = 0, ks = 0;
  for (int32_t v = 0; v < g->nnodes; v++) {
    const ir_node *n = &g->nodes[v];
    has[n->op] |= n->op != IR_BCONV || g->nodes[n->args[0]].type.rows >= 2;
    ntt |= n->op == IR_NTT;
    reindex |= n->op == IR_AUTOMORPHISM || n->op == IR_CONCAT;
    ks |= n->op == IR_MODUP && strstr(n->name, ".modup") != NULL; /* the composite's names */
    if (n->nargs > 0 && is_mixing(g->nodes[n->args[0]].op)) {
      mc->read_by_ntt += n->op == IR_NTT;
      mc->read_by_aut += n->op == IR_AUTOMORPHISM;
      mc->read_pointwise += n->op == IR_ADD || n->op == IR_SUB || n->op == IR_MUL ||
                            n->op == IR_ADD_LAZY || n->op == IR_KS_DIGIT_PRODUCT;
    }
    if (!is_mixing(n->op)) continue;
    mc->op[n->op][fhjit_graph_radix(g)]++;
    if (g->nodes[n->args[0]].op == IR_INPUT) mc->of_input[n->op]++;
    else mc->of_computed[n->op]++;
    if (n->op == IR_BCONV) mc->bconv_form[n->type.form]++;
  }
  mc->with_ntt += ntt;
  mc->with_reindex += reindex;
  mc->keyswitch += ks;
}

/* The mutation check: each deliberately wrong reference whose op the
 * graph has must (on enough graphs) disagree with the interpreter. */
static void try_mutants(const rg_case *c, void *const *itp, const int *has, mix_counts *mc,
                        uint64_t seed) {
  static const ir_op op_of[RG_NUM_MUTATIONS] = {
      [RG_MUT_BCONV] = IR_BCONV, [RG_MUT_RESCALE] = IR_RESCALE, [RG_MUT_MODUP] = IR_MODUP,
      [RG_MUT_MODDOWN] = IR_MODDOWN, [RG_MUT_NTT] = IR_NTT};
  char err[1 << 14];
  for (int m = 1; m < RG_NUM_MUTATIONS; m++) {
    if (!has[op_of[m]]) continue;
    void **mut = rg_alloc_results(c, poison(c->radix, POISON_A));
    if (rg_reference_mutant(c, mut, (rg_mutation)m, err, sizeof err))
      fail_report("rg_reference_mutant", seed, err);
    mc->tried[m]++;
    mc->caught[m] += rg_compare(c, itp, "interpreter", mut, "mutant", NULL, 0) > 0;
    rg_free_results(c, mut);
  }
}

static void check_mix_coverage(const mix_counts *mc, long count) {
  static const ir_op ops[] = {IR_BCONV, IR_RESCALE, IR_MODUP, IR_MODDOWN};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    ir_op op = ops[i];
    ck_assert_msg(mc->op[op][FHJIT_R32] > 10 && mc->op[op][FHJIT_R62] > 10,
                  "%s: %d r32, %d r62", ir_op_name(op), mc->op[op][FHJIT_R32],
                  mc->op[op][FHJIT_R62]);
    ck_assert_msg(mc->of_input[op] > 5 && mc->of_computed[op] > 5, "%s: %d of inputs, %d computed",
                  ir_op_name(op), mc->of_input[op], mc->of_computed[op]);
  }
  ck_assert(mc->bconv_form[FHJIT_FORM_STD] > 5 && mc->bconv_form[FHJIT_FORM_MONT] > 5);
  ck_assert(mc->keyswitch > 5 && mc->with_ntt > count / 4 && mc->with_reindex > 5);
  ck_assert(mc->read_by_ntt > 5 && mc->read_by_aut > 5 && mc->read_pointwise > 20);
  for (int m = 1; m < RG_NUM_MUTATIONS; m++)
    ck_assert_msg(mc->caught[m] * 4 >= mc->tried[m] * 3 && mc->tried[m] > 5,
                  "mutation %d caught on %d of %d graphs", m, mc->caught[m], mc->tried[m]);
}

/* Random graphs with SPEC section 7's limb-mixing ops (bconv; with NTT
 * primes rescale, modup, moddown and the keyswitch composite) among the
 * pointwise ops, NTT anchors, extracts, rows, concats and automorphisms,
 * on a chain Q_L ++ P with values on many bases (rg_config.mix_percent):
 * the host JIT against the interpreter bit for bit, and the interpreter
 * against randgraph's evaluator (its own NTT, twiddles and constants).
 * Every third graph also runs the evaluator's deliberate mutants: each
 * must be caught, so that agreement means something. */
START_TEST(test_limb_mixing_graphs) {
  long count = env_long("FHJIT_RANDOM_MIX_GRAPHS", DEFAULT_MIX_GRAPHS);
  uint64_t base = (uint64_t)env_long("FHJIT_RANDOM_SEED", 1);
  char err[1 << 15];
  mix_counts mc;
  memset(&mc, 0, sizeof mc);
  fhjit_context *ctx = fhjit_context_create();
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.mix_percent = 35;
  cfg.ntt_percent = 75;
  cfg.reindex_percent = 10;
  cfg.max_ops = 12;
  double t0 = now_s();
  for (long k = 0; k < count; k++) {
    uint64_t seed = base + (uint64_t)k;
    fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
    if (!g) fail_report("rg_random_graph failed", seed, err);
    int has[IR_NUM_OPS] = {0};
    count_mixing(g, &mc, has);
    rg_case c;
    if (rg_case_init(&c, g, NULL, seed, k % 4 == 0 ? 60 : 8, err, sizeof err))
      fail_report("rg_case_init", seed, err);
    void **ref = rg_alloc_results(&c, poison(c.radix, POISON_A));
    void **itp = rg_alloc_results(&c, poison(c.radix, POISON_B));
    void **host = rg_alloc_results(&c, poison(c.radix, POISON_A));
    fhjit_status st = fhjit_interpret(g, c.params, c.pstride, (const void *const *)c.inputs, itp);
    check_call(&c, "fhjit_interpret", st, "the interpreter refused a valid graph", seed);
    if (rg_reference(&c, ref, err, sizeof err)) fail_report("rg_reference", seed, err);
    if (rg_compare(&c, itp, "interpreter", ref, "randgraph reference", err, sizeof err))
      fail_report("interpreter != independent reference", seed, err);
    if (k % 3 == 0) try_mutants(&c, itp, has, &mc, seed);
    host_matches(&c, host, itp, (int)(seed % 3), seed);
    rg_free_results(&c, ref);
    rg_free_results(&c, itp);
    rg_free_results(&c, host);
    rg_case_free(&c);
    fhjit_graph_destroy(g);
  }
  fhjit_context_destroy(ctx);
  fprintf(stderr,
          "limb-mixing graphs: %ld (seeds %llu..%llu), host == interpreter == reference, %.1f s; "
          "bconv %d+%d (std %d, mont %d), rescale %d+%d, modup %d+%d, moddown %d+%d (r32+r62); "
          "operands: inputs %d/%d/%d/%d, computed %d/%d/%d/%d; %d keyswitch graphs, %d with "
          "NTTs, %d with automorphisms or concats; results read by NTTs %d, automorphisms %d, "
          "pointwise %d; mutants caught",
          count, (unsigned long long)base, (unsigned long long)(base + (uint64_t)count - 1),
          now_s() - t0, mc.op[IR_BCONV][0], mc.op[IR_BCONV][1], mc.bconv_form[FHJIT_FORM_STD],
          mc.bconv_form[FHJIT_FORM_MONT], mc.op[IR_RESCALE][0], mc.op[IR_RESCALE][1],
          mc.op[IR_MODUP][0], mc.op[IR_MODUP][1], mc.op[IR_MODDOWN][0], mc.op[IR_MODDOWN][1],
          mc.of_input[IR_BCONV], mc.of_input[IR_RESCALE], mc.of_input[IR_MODUP],
          mc.of_input[IR_MODDOWN], mc.of_computed[IR_BCONV], mc.of_computed[IR_RESCALE],
          mc.of_computed[IR_MODUP], mc.of_computed[IR_MODDOWN], mc.keyswitch, mc.with_ntt,
          mc.with_reindex, mc.read_by_ntt, mc.read_by_aut, mc.read_pointwise);
  for (int m = 1; m < RG_NUM_MUTATIONS; m++) fprintf(stderr, " %d/%d", mc.caught[m], mc.tried[m]);
  fprintf(stderr, "\n");
  if (count < 150) return; /* too few to ask for coverage */
  check_mix_coverage(&mc, count);
}
END_TEST

/* ------------------------------------------------- invalid graphs */

/* A graph that failed to bind: every execution path must refuse it with an
 * error (not an LLVM one), compile nothing and write nothing. */
static void expect_refused(fhjit_graph *g, const char *why) {
  fhjit_context *ctx = fhjit_graph_context(g);
  ck_assert_msg(!fhjit_is_bound(g), "%s: the graph is bound", why);
  uint64_t params[8 * 4] = {0}, in[4096] = {0}, out[4096];
  for (size_t i = 0; i < sizeof out / sizeof *out; i++) out[i] = POISON_A;
  const void *inputs[16];
  void *results[16];
  for (int i = 0; i < 16; i++) inputs[i] = in, results[i] = out;
  fhjit_status st = fhjit_run_host(g, params, 4, inputs, results, 1);
  ck_assert_msg(st != FHJIT_OK && st != FHJIT_ERR_LLVM, "%s: fhjit_run_host gave %s", why,
                fhjit_status_name(st));
  ck_assert_msg(*fhjit_last_error(ctx), "%s: no message", why);
  st = fhjit_interpret(g, params, 4, inputs, results);
  ck_assert_msg(st != FHJIT_OK, "%s: fhjit_interpret ran", why);
  ck_assert_msg(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL, "%s: fhjit_emit produced IR", why);
  ck_assert_msg(fhjit_last_status(ctx) != FHJIT_ERR_LLVM, "%s: emit reached LLVM", why);
  ck_assert_msg(g->compiled == NULL && g->emitted == NULL, "%s: compiled state exists", why);
  for (size_t i = 0; i < sizeof out / sizeof *out; i++)
    ck_assert_msg(out[i] == POISON_A, "%s: a result word was written", why);
}

static fhjit_value poly_input(fhjit_graph *g, const char *name, int comps, int nbatch,
                              const int64_t *batch, int64_t rows, int64_t n) {
  fhjit_type t = tu_poly(comps, nbatch, batch, rows, n);
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ne(v, FHJIT_NO_VALUE);
  return v;
}

START_TEST(test_invalid_graphs) {
  fhjit_context *ctx = fhjit_context_create();
  int64_t b2[] = {2}, b3[] = {3};
  for (int radix = 0; radix < 2; radix++) {
    /* batch 2 against batch 3 */
    fhjit_graph *g = fhjit_graph_create(ctx, "bad_batch", (fhjit_radix)radix);
    fhjit_value x = poly_input(g, "x", 2, 1, b2, 2, 8), y = poly_input(g, "y", 2, 1, b3, 2, 8);
    ck_assert_int_eq(fhjit_output(g, fhjit_add(g, x, y), "o"), FHJIT_OK);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
    ck_assert(tu_contains(fhjit_last_error(ctx), "batch"));
    expect_refused(g, "batch mismatch");
    fhjit_graph_destroy(g);

    /* rows differ */
    g = fhjit_graph_create(ctx, "bad_rows", (fhjit_radix)radix);
    x = poly_input(g, "x", 0, 0, NULL, 2, 8), y = poly_input(g, "y", 0, 0, NULL, 3, 8);
    ck_assert_int_eq(fhjit_output(g, fhjit_mul(g, x, y), "o"), FHJIT_OK);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
    expect_refused(g, "rows mismatch");
    fhjit_graph_destroy(g);

    /* a compressed plaintext whose u does not divide n */
    g = fhjit_graph_create(ctx, "bad_u", (fhjit_radix)radix);
    x = poly_input(g, "x", 2, 0, NULL, 1, 8), y = poly_input(g, "p", 0, 0, NULL, 1, 3);
    ck_assert_int_eq(fhjit_output(g, fhjit_mul_compressed(g, x, y, FHJIT_CYCLIC, FHJIT_NO_VALUE), "o"),
                     FHJIT_OK);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
    expect_refused(g, "u does not divide n");
    fhjit_graph_destroy(g);

    /* key rows out of range */
    g = fhjit_graph_create(ctx, "bad_key", (fhjit_radix)radix);
    x = poly_input(g, "d", 0, 0, NULL, 3, 8);
    fhjit_type kt = tu_key(2, 3, 8);
    fhjit_value key = fhjit_input(g, "key", &kt);
    ck_assert_int_eq(fhjit_output(g, fhjit_keyswitch_digit_product(g, x, key, 1, 1), "o"), FHJIT_OK);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
    expect_refused(g, "key rows out of range");
    fhjit_graph_destroy(g);

    /* pack of unequal shapes */
    g = fhjit_graph_create(ctx, "bad_pack", (fhjit_radix)radix);
    x = poly_input(g, "a", 0, 1, b2, 1, 4), y = poly_input(g, "b", 0, 1, b3, 1, 4);
    fhjit_value parts[] = {x, y};
    ck_assert_int_eq(fhjit_output(g, fhjit_pack(g, 2, parts), "o"), FHJIT_OK);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
    expect_refused(g, "pack shapes");
    fhjit_graph_destroy(g);

    /* builder-level refusals: nothing is created */
    g = fhjit_graph_create(ctx, "bad_builder", (fhjit_radix)radix);
    fhjit_type coef = tu_poly(2, 0, NULL, 1, 4);
    coef.domain = FHJIT_DOMAIN_COEF;
    x = fhjit_input(g, "c", &coef);
    y = poly_input(g, "p", 0, 0, NULL, 1, 4);
    fhjit_value three = poly_input(g, "t", 3, 0, NULL, 1, 4);
    int32_t before = fhjit_num_values(g);
    ck_assert_int_eq(fhjit_add_plain(g, x, y), FHJIT_NO_VALUE);
    ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_TYPE);
    ck_assert_int_eq(fhjit_add(g, x, three), FHJIT_NO_VALUE);
    ck_assert_int_eq(fhjit_keyswitch_digit_product(g, x, y, 0, 0), FHJIT_NO_VALUE);
    ck_assert_int_eq(fhjit_extract(g, y, 0), FHJIT_NO_VALUE);
    ck_assert_int_eq(fhjit_num_values(g), before);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_TYPE); /* no outputs */
    expect_refused(g, "no outputs");
    fhjit_graph_destroy(g);
  }

  /* Random valid graphs made invalid by one more op whose operand has one
   * row too many: binding fails and nothing runs. */
  char err[4096];
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.max_ops = 12;
  for (uint64_t seed = 1; seed <= 100; seed++) {
    fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    fhjit_output_info info;
    ck_assert_int_eq(fhjit_output_info_get(g, 0, &info), FHJIT_OK);
    fhjit_type t = info.type;
    t.rows += 1;
    t.domain = FHJIT_DOMAIN_ANY;
    t.form = FHJIT_FORM_ANY;
    fhjit_value extra = fhjit_input(g, "extra_rows", &t);
    ck_assert_int_ne(extra, FHJIT_NO_VALUE);
    fhjit_value bad = fhjit_mul(g, info.value, extra);
    ck_assert_int_ne(bad, FHJIT_NO_VALUE);
    ck_assert_int_eq(fhjit_output(g, bad, "bad"), FHJIT_OK);
    ck_assert_int_eq(fhjit_bind(g), FHJIT_ERR_SHAPE);
    ck_assert(tu_contains(fhjit_last_error(ctx), "rows"));
    expect_refused(g, "random graph with a rows mismatch");
    fhjit_graph_destroy(g);
  }
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("random_graphs");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_invalid_graphs);
  tcase_add_test(tc, test_generator_and_reference);
  tcase_add_test(tc, test_host_vs_interpreter);
  tcase_add_test(tc, test_reindex_graphs);
  tcase_add_test(tc, test_limb_mixing_graphs);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
