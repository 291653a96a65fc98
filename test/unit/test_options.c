/* test_options.c: a context's tuning options (fhjit_context_set_option):
 * unknown names and malformed values refused with a message that names
 * them, the option unchanged; each option changes what is compiled (PTX,
 * the NTT's kernels, the compile bound, also inside an NTT's fused
 * epilogue, whose sub-graphs live in a context of their own) and the
 * cache key where it changes code, and the host path's code kept on a
 * graph (and the pipeline that compiles it, host_pipeline); an option set wins over its environment variable, and unsetting
 * it (NULL) gives the variable back. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "ir/ir.h"
#include "lower/lw_llvm.h"
#include "testutil.h"

/* c = a * b, r32, 2 x 64: a pointwise kernel. */
static fhjit_graph *mul_graph(fhjit_context *ctx) {
  fhjit_graph *g = fhjit_graph_create(ctx, "m", FHJIT_R32);
  fhjit_type t = tu_poly(0, 0, NULL, 2, 64);
  fhjit_output(g, fhjit_mul(g, fhjit_input(g, "a", &t), fhjit_input(g, "b", &t)), "c");
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  return g;
}

/* A forward NTT of N = 4096 followed by `ops` products and sums (its
 * epilogue). */
static fhjit_graph *ntt_graph(fhjit_context *ctx, int ops) {
  fhjit_graph *g = fhjit_graph_create(ctx, "ntt", FHJIT_R32);
  fhjit_type ta = tu_poly(0, 0, NULL, 1, 4096), tw = {0};
  ta.domain = FHJIT_DOMAIN_COEF;
  ta.form = FHJIT_FORM_MONT;
  tw.kind = FHJIT_KIND_TWIDDLE;
  tw.rows = 1;
  tw.n = 4096;
  fhjit_type tb = tu_poly(0, 0, NULL, 1, 4096);
  tb.domain = FHJIT_DOMAIN_NTT;
  tb.form = FHJIT_FORM_MONT;
  fhjit_value a = fhjit_input(g, "a", &ta), t = fhjit_input(g, "tw", &tw);
  fhjit_value b = fhjit_input(g, "b", &tb);
  fhjit_value v = fhjit_ntt(g, a, t, FHJIT_NTT_COEF_MONT_TO_NTT);
  for (int i = 0; i < ops && v != FHJIT_NO_VALUE; i++)
    v = i % 2 ? fhjit_add(g, v, b) : fhjit_mul(g, v, b);
  ck_assert_msg(v != FHJIT_NO_VALUE, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_output(g, v, "r"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  return g;
}

static void clear_env(void) {
  unsetenv("FHJIT_NTT_PLAN");
  unsetenv("FHJIT_PW_PLAN");
  unsetenv("FHJIT_MAX_VALUES");
  unsetenv("FHJIT_BCONV_PLAN");
  unsetenv("FHJIT_NTT_SCHEDULE");
  unsetenv("FHJIT_HOST_PIPELINE");
}

static char *emit_copy(fhjit_graph *g, fhjit_emit_kind kind) {
  const char *s = fhjit_emit(g, kind, NULL);
  ck_assert_msg(s != NULL, "%s", fhjit_last_error(fhjit_graph_context(g)));
  char *c = strdup(s);
  ck_assert_ptr_nonnull(c);
  return c;
}

START_TEST(test_bad_names_and_values) {
  clear_env();
  ck_assert_int_eq(fhjit_context_set_option(NULL, "pw_plan", "U=2"), FHJIT_ERR_ARGUMENT);
  fhjit_context *ctx = fhjit_context_create();
  static const char *const names[] = {"", "PW_PLAN", "pw-plan", "FHJIT_PW_PLAN", "ntt_plan ",
                                      "caches", "FHJIT_CACHE_DIR"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    ck_assert_int_eq(fhjit_context_set_option(ctx, names[i], "1"), FHJIT_ERR_ARGUMENT);
    ck_assert_msg(tu_contains(fhjit_last_error(ctx), "fhjit_context_set_option: unknown option") &&
                      tu_contains(fhjit_last_error(ctx), names[i]) &&
                      tu_contains(fhjit_last_error(ctx),
                                  "ntt_plan, pw_plan, max_values, cache, cache_dir, bconv_plan, "
                                  "ntt_schedule, host_pipeline"),
                  "%s", fhjit_last_error(ctx));
  }
  ck_assert_int_eq(fhjit_context_set_option(ctx, NULL, "1"), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "unknown option \"(null)\""));

  static const struct {
    const char *name, *value, *why;
  } bad[] = {
      {"pw_plan", "U=0", "U is 1 to 8"},
      {"pw_plan", "V=3", "V is 1, 2 or 4"},
      {"pw_plan", "T=100", "multiple of 32"},
      {"pw_plan", "U=2;T=64", "expected ','"},
      {"pw_plan", "V=4,", "expected ','"},
      {"max_values", "0", "whole number from 1 to 100000000"},
      {"max_values", "-5", "whole number"},
      {"max_values", "12x", "whole number"},
      {"max_values", "100000001", "whole number"},
      {"max_values", " 5", "whole number"},
      {"ntt_plan", "c_col=x", "bad item 'c_col=x'"},
      {"ntt_plan", "one=2", "bad item 'one=2'"},
      {"ntt_plan", "nope=1", "bad item 'nope=1'"},
      {"ntt_plan", "e=3,t=11", "bad item 't=11'"},
      {"bconv_plan", "V=3", "V is 1, 2 or 4"},
      {"bconv_plan", "T=96", "T a power of two"},
      {"bconv_plan", "S=0", "S 1 to 256"},
      {"bconv_plan", "U=9", "U 1 to 8"},
      {"bconv_plan", "X=1", "X=1"},
      {"bconv_plan", "V=2;S=2", "expected ','"},
      {"cache", "maybe", "expected on or off"},
      {"cache", "2", "expected on or off"},
      {"cache_dir", "relative/dir", "expected an absolute path"},
      {"ntt_schedule", "clusters", "expected auto, two_kernel or cluster"},
      {"ntt_schedule", "Cluster", "expected auto, two_kernel or cluster"},
      {"host_pipeline", "O2", "expected lean or gpu"},
      {"host_pipeline", "GPU", "expected lean or gpu"},
  };
  /* a valid value first: a refused one leaves it in force */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "max_values", "300"), FHJIT_OK);
  fhjit_graph *g = mul_graph(ctx);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_int_eq(fhjit_context_set_option(ctx, bad[i].name, bad[i].value), FHJIT_ERR_ARGUMENT);
    const char *msg = fhjit_last_error(ctx);
    char head[128];
    snprintf(head, sizeof head, "fhjit_context_set_option: %s=\"%s\": ", bad[i].name, bad[i].value);
    ck_assert_msg(tu_contains(msg, head) && tu_contains(msg, bad[i].why), "%s", msg);
    ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
  }
  /* still 300, and still valid options: the graph compiles */
  fhjit_clear_error(ctx);
  ck_assert_msg(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) != NULL, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_context_set_option(ctx, "max_values", "1"), FHJIT_OK);
  ck_assert(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_UNSUPPORTED);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), "more than 1 values"), "%s",
                fhjit_last_error(ctx));
  /* every option takes "" (the default) and NULL (the environment) */
  static const char *const all[] = {"ntt_plan", "pw_plan", "max_values", "cache", "cache_dir",
                                    "bconv_plan", "ntt_schedule", "host_pipeline"};
  for (int i = 0; i < 8; i++) {
    ck_assert_int_eq(fhjit_context_set_option(ctx, all[i], ""), FHJIT_OK);
    ck_assert_int_eq(fhjit_context_set_option(ctx, all[i], NULL), FHJIT_OK);
  }
  ck_assert_msg(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) != NULL, "%s", fhjit_last_error(ctx));
  fhjit_context_destroy(ctx);
}
END_TEST

/* pw_plan: the PTX changes with it, is the PTX the variable gives, and an
 * option set wins over the variable; NULL gives the variable back. */
START_TEST(test_pw_plan) {
  clear_env();
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = mul_graph(ctx);
  char *base = emit_copy(g, FHJIT_EMIT_PTX);
  ck_assert(tu_contains(base, ".maxntid 256"));
  ck_assert_int_eq(fhjit_context_set_option(ctx, "pw_plan", "U=2,T=64"), FHJIT_OK);
  char *opt = emit_copy(g, FHJIT_EMIT_PTX);
  ck_assert(tu_contains(opt, ".maxntid 64"));
  ck_assert_str_ne(base, opt);

  /* the same through the environment, in another context */
  fhjit_context *ctx2 = fhjit_context_create();
  fhjit_graph *g2 = mul_graph(ctx2);
  setenv("FHJIT_PW_PLAN", "U=2,T=64", 1);
  char *env = emit_copy(g2, FHJIT_EMIT_PTX);
  ck_assert_str_eq(env, opt);
  /* "" on the context: the default, whatever the variable says */
  ck_assert_int_eq(fhjit_context_set_option(ctx2, "pw_plan", ""), FHJIT_OK);
  char *dflt = emit_copy(g2, FHJIT_EMIT_PTX);
  ck_assert_str_eq(dflt, base);
  /* a malformed variable is not read while the option is set ... */
  setenv("FHJIT_PW_PLAN", "U=0", 1);
  ck_assert_msg(fhjit_emit(g2, FHJIT_EMIT_PTX, NULL) != NULL, "%s", fhjit_last_error(ctx2));
  /* ... and named when it is read again */
  ck_assert_int_eq(fhjit_context_set_option(ctx2, "pw_plan", NULL), FHJIT_OK);
  ck_assert(fhjit_emit(g2, FHJIT_EMIT_PTX, NULL) == NULL);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx2), "FHJIT_PW_PLAN=\"U=0\""), "%s",
                fhjit_last_error(ctx2));
  clear_env();
  free(base);
  free(opt);
  free(env);
  free(dflt);
  fhjit_context_destroy(ctx2);
  fhjit_context_destroy(ctx);
}
END_TEST

/* ntt_plan: the kernels of an NTT change with it (N = 4096, r32: two
 * kernels by default, one with one=12), and so does the graph's cache key; the
 * variable gives the same key, NULL gives the default back. */
START_TEST(test_ntt_plan) {
  clear_env();
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = ntt_graph(ctx, 0);
  uint64_t h0[2], h1[2], h2[2], h3[2];
  ck_assert_int_eq(fhjit_graph_hash(g, h0), FHJIT_OK);
  char *base = emit_copy(g, FHJIT_EMIT_LLVM);
  ck_assert(tu_contains(base, "_k1("));
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "one=12"), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g, h1), FHJIT_OK);
  ck_assert(h0[0] != h1[0] || h0[1] != h1[1]);
  char *one = emit_copy(g, FHJIT_EMIT_LLVM);
  ck_assert(tu_contains(one, "_k0(") && !tu_contains(one, "_k1("));

  fhjit_context *ctx2 = fhjit_context_create();
  fhjit_graph *g2 = ntt_graph(ctx2, 0);
  setenv("FHJIT_NTT_PLAN", "one=12", 1);
  ck_assert_int_eq(fhjit_graph_hash(g2, h2), FHJIT_OK);
  ck_assert(h2[0] == h1[0] && h2[1] == h1[1]);
  /* "" on the context: the default, the variable ignored */
  ck_assert_int_eq(fhjit_context_set_option(ctx2, "ntt_plan", ""), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g2, h3), FHJIT_OK);
  ck_assert(h3[0] == h0[0] && h3[1] == h0[1]);
  char *dflt = emit_copy(g2, FHJIT_EMIT_LLVM);
  ck_assert_str_eq(dflt, base);
  clear_env();
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g, h3), FHJIT_OK);
  ck_assert(h3[0] == h0[0] && h3[1] == h0[1]);
  /* a malformed variable named as such; an option's named as the option */
  setenv("FHJIT_NTT_PLAN", "c_col=x", 1);
  ck_assert(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), "FHJIT_NTT_PLAN: bad item 'c_col=x'"), "%s",
                fhjit_last_error(ctx));
  clear_env();
  free(base);
  free(one);
  free(dflt);
  fhjit_context_destroy(ctx2);
  fhjit_context_destroy(ctx);
}
END_TEST

/* ntt_schedule: cluster changes the graph hash (kernel caches keep the
 * schedules apart) and, at N = 2^14, the code (one kernel with the block's
 * slice in dynamic shared memory); auto and "" are the default; the
 * variable is read when the option is not set, and named when malformed. */
START_TEST(test_ntt_schedule) {
  clear_env();
  fhjit_context *ctx = fhjit_context_create();
  static const char text[] = "graph @s radix(r32) {\n  %x = input pt<[], 1, 16384> coef mont\n"
                             "  %t = input twiddles<1, 16384>\n  %y = ntt_fwd %x, %t mode(mont)\n"
                             "  output %y\n}\n";
  fhjit_graph *g = fhjit_parse(ctx, text, sizeof text - 1, "s.fh");
  ck_assert_msg(g && fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  uint64_t h0[2], h1[2], h2[2];
  ck_assert_int_eq(fhjit_graph_hash(g, h0), FHJIT_OK);
  char *base = emit_copy(g, FHJIT_EMIT_LLVM);
  ck_assert(tu_contains(base, "_k1(") && !tu_contains(base, "_dsmem"));
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", "auto"), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g, h1), FHJIT_OK);
  ck_assert(h1[0] == h0[0] && h1[1] == h0[1]);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", "cluster"), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g, h1), FHJIT_OK);
  ck_assert(h1[0] != h0[0] || h1[1] != h0[1]);
  char *cl = emit_copy(g, FHJIT_EMIT_LLVM);
  ck_assert(tu_contains(cl, "_k0_dsmem") && !tu_contains(cl, "_k1("));
  ck_assert(tu_contains(cl, "llvm.nvvm.barrier.cluster.wait"));
  /* the variable, when the option is unset */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", NULL), FHJIT_OK);
  setenv("FHJIT_NTT_SCHEDULE", "cluster", 1);
  ck_assert_int_eq(fhjit_graph_hash(g, h2), FHJIT_OK);
  ck_assert(h2[0] == h1[0] && h2[1] == h1[1]);
  setenv("FHJIT_NTT_SCHEDULE", "fast", 1);
  ck_assert(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), "FHJIT_NTT_SCHEDULE"), "%s", fhjit_last_error(ctx));
  clear_env();
  free(base);
  free(cl);
  fhjit_context_destroy(ctx);
}
END_TEST

/* max_values reaches the lowering of an NTT's fused epilogue, whose
 * sub-graphs have a context of their own. */
START_TEST(test_max_values_fused) {
  clear_env();
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = ntt_graph(ctx, 40);
  ck_assert_msg(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) != NULL, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_context_set_option(ctx, "max_values", "100"), FHJIT_OK);
  ck_assert(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL);
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_UNSUPPORTED);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), "epilogue") &&
                    tu_contains(fhjit_last_error(ctx), "more than the limit of 100"),
                "%s", fhjit_last_error(ctx));
  /* the option wins over the variable, both ways */
  setenv("FHJIT_MAX_VALUES", "100", 1);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "max_values", "100000"), FHJIT_OK);
  ck_assert_msg(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) != NULL, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(fhjit_context_set_option(ctx, "max_values", NULL), FHJIT_OK);
  ck_assert(fhjit_emit(g, FHJIT_EMIT_LLVM, NULL) == NULL);
  ck_assert(tu_contains(fhjit_last_error(ctx), "more than the limit of 100"));
  clear_env();
  fhjit_context_destroy(ctx);
}
END_TEST

/* Runs mul_graph or ntt_graph g on the host (inputs zero: only the status
 * counts here) with the parameter table and twiddles of q. */
static fhjit_status run_on_host(fhjit_graph *g, uint64_t q) {
  fhjit_context *ctx = fhjit_graph_context(g);
  static uint32_t params[8 * 2], tw[4096], in[3][2 * 4096], out[2 * 4096];
  uint64_t qq[2] = {q, q};
  ck_assert_int_eq(fhjit_param_table(ctx, FHJIT_R32, qq, 2, 4096, 1, 1, params, 2), FHJIT_OK);
  ck_assert_int_eq(fhjit_twiddle_tables(ctx, FHJIT_R32, qq, 1, 4096, tw, NULL), FHJIT_OK);
  memset(in, 0, sizeof in);
  /* mul_graph's inputs a, b; ntt_graph's a, tw, b */
  const void *ins[3] = {in[0], fhjit_num_inputs(g) == 3 ? (const void *)tw : in[1], in[2]};
  void *outs[1] = {out};
  return fhjit_run_host(g, params, 2, ins, outs, 1);
}

/* The host path keeps a graph's compiled code between runs; an option
 * set (or unset) between two runs takes effect at the next one, as it
 * does for fhjit_emit and the GPU's kernel cache: here max_values, which
 * refuses a pointwise graph and an NTT's fused epilogue over the bound,
 * then lets them run again. (Before, the first run's code ran on: the
 * review of 2026-12-05, hoststale.c.) */
START_TEST(test_host_options_take_effect) {
  clear_env();
  fhjit_context *ctx = fhjit_context_create();
  uint64_t q;
  ck_assert_int_eq(fhjit_find_primes(ctx, 30, 8192, 1, &q), FHJIT_OK);
  fhjit_graph *gs[2] = {mul_graph(ctx), ntt_graph(ctx, 40)};
  const char *bound[2] = {"1", "100"};
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(run_on_host(gs[i], q) == FHJIT_OK, "%s", fhjit_last_error(ctx));
    ck_assert_int_eq(fhjit_context_set_option(ctx, "max_values", bound[i]), FHJIT_OK);
    ck_assert_int_eq(run_on_host(gs[i], q), FHJIT_ERR_UNSUPPORTED);
    ck_assert_msg(tu_contains(fhjit_last_error(ctx), "limit"), "%s", fhjit_last_error(ctx));
    ck_assert_int_eq(fhjit_context_set_option(ctx, "max_values", NULL), FHJIT_OK);
    ck_assert_msg(run_on_host(gs[i], q) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  }
  fhjit_context_destroy(ctx);
}
END_TEST

/* host_pipeline: which IR pipeline the host NTT and conversion modules
 * get. "lean" (also "" and unset) is the pointwise kernel's, "gpu" the GPU
 * modules' (default<O3>); an NTT with a fused epilogue gives the same words
 * under both, equal to the interpreter's, on random inputs with the edge
 * words 0 and q - 1; unsetting the option makes the next run read the
 * variable (the graph's host code is compiled again), and a malformed one is
 * named there. */
START_TEST(test_host_pipeline) {
  clear_env();
  fhjit_context *ctx = fhjit_context_create();
  static const struct {
    const char *value;
    int gpu;
  } forms[] = {{NULL, 0}, {"", 0}, {"lean", 0}, {"gpu", 1}};
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    const char *passes = NULL;
    ck_assert_int_eq(fhjit_context_set_option(ctx, "host_pipeline", forms[i].value), FHJIT_OK);
    ck_assert_int_eq(lw_host_passes(ctx, &passes), FHJIT_OK);
    ck_assert_ptr_eq(passes, (forms[i].gpu ? lw_kernel_pipeline : lw_gpu_pipeline));
  }
  uint64_t q, state = 77;
  ck_assert_int_eq(fhjit_find_primes(ctx, 30, 8192, 1, &q), FHJIT_OK);
  uint64_t qq[2] = {q, q};
  static uint32_t params[8 * 2], tw[4096], a[4096], b[4096], out[2][4096], ref[4096];
  ck_assert_int_eq(fhjit_param_table(ctx, FHJIT_R32, qq, 2, 4096, 1, 1, params, 2), FHJIT_OK);
  ck_assert_int_eq(fhjit_twiddle_tables(ctx, FHJIT_R32, qq, 1, 4096, tw, NULL), FHJIT_OK);
  for (int i = 0; i < 4096; i++) {
    a[i] = (uint32_t)(i < 2 ? (i ? q - 1 : 0) : tu_below(&state, q));
    b[i] = (uint32_t)(i >= 4094 ? (i % 2 ? q - 1 : 0) : tu_below(&state, q));
  }
  fhjit_graph *g = ntt_graph(ctx, 6);
  const void *ins[3] = {a, tw, b};
  for (int k = 0; k < 2; k++) {
    void *outs[1] = {out[k]};
    ck_assert_int_eq(fhjit_context_set_option(ctx, "host_pipeline", k ? "gpu" : "lean"), FHJIT_OK);
    ck_assert_msg(fhjit_run_host(g, params, 2, ins, outs, 1) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  }
  void *refs[1] = {ref};
  ck_assert_msg(fhjit_interpret(g, params, 2, ins, refs) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_mem_eq(out[0], ref, sizeof ref);
  ck_assert_mem_eq(out[1], ref, sizeof ref);
  /* unset: the variable is read, and a malformed one is named */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "host_pipeline", NULL), FHJIT_OK);
  setenv("FHJIT_HOST_PIPELINE", "O3", 1);
  void *outs[1] = {out[0]};
  ck_assert_int_eq(fhjit_run_host(g, params, 2, ins, outs, 1), FHJIT_ERR_ARGUMENT);
  ck_assert_msg(tu_contains(fhjit_last_error(ctx), "FHJIT_HOST_PIPELINE: expected lean or gpu, not 'O3'"),
                "%s", fhjit_last_error(ctx));
  clear_env();
  fhjit_context_destroy(ctx);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("options");
  TCase *tc = tcase_create("options");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_bad_names_and_values);
  tcase_add_test(tc, test_pw_plan);
  tcase_add_test(tc, test_ntt_plan);
  tcase_add_test(tc, test_ntt_schedule);
  tcase_add_test(tc, test_max_values_fused);
  tcase_add_test(tc, test_host_options_take_effect);
  tcase_add_test(tc, test_host_pipeline);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
