/* test_pwplan.c: the run-time plans of pointwise kernels (FHJIT_PW_PLAN) and
 * the launch fast paths: plan parsing; every vector width bit for bit on the
 * host (whose bodies are the GPU's) on random graphs; the GPU kernel's launch
 * shape and structure under U and T (ptxas-verified when ptxas is there);
 * against the fake libcuda: plans keyed in the kernel cache (a malformed
 * one refused, never taken for the default's kernel), the launch
 * grid and block, checked pointers remembered per kernel (a new or freed
 * pointer is checked again), fhjit_cuda_launch finding its kernel without
 * device queries, and the graph hash cached at bind. */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "ir/ir.h"
#include "lower/lw_llvm.h"
#include "ptxeval.h"
#include "randgraph.h"
#include "testutil.h"

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* ---------------------------------------------------------------- parsing */

START_TEST(test_parse) {
  lw_pw_plan p;
  char why[160];
  unsetenv("FHJIT_PW_PLAN");
  ck_assert_int_eq(lw_pw_plan_parse(ir_option(NULL, IR_OPT_PW_PLAN), &p, why, sizeof why), 0);
  setenv("FHJIT_PW_PLAN", "", 1);
  ck_assert_int_eq(lw_pw_plan_parse(ir_option(NULL, IR_OPT_PW_PLAN), &p, why, sizeof why), 0);
  setenv("FHJIT_PW_PLAN", "V=2,U=3,T=96", 1);
  ck_assert_int_eq(lw_pw_plan_parse(ir_option(NULL, IR_OPT_PW_PLAN), &p, why, sizeof why), 1);
  ck_assert_int_eq(p.vec, 2);
  ck_assert_int_eq(p.per_thread, 3);
  ck_assert_int_eq(p.block, 96);
  setenv("FHJIT_PW_PLAN", "T=512", 1);
  ck_assert_int_eq(lw_pw_plan_parse(ir_option(NULL, IR_OPT_PW_PLAN), &p, why, sizeof why), 1);
  ck_assert_int_eq(p.vec, 0);
  ck_assert_int_eq(p.per_thread, 0);
  ck_assert_int_eq(p.block, 512);
  static const char *const bad[] = {"V=3", "U=0", "U=9", "T=100", "T=2048", "X=1", "U=2;T=64",
                                    "U=", "U2", "V=4,", "V=4,,U=1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("FHJIT_PW_PLAN", bad[i], 1);
    ck_assert_msg(lw_pw_plan_parse(ir_option(NULL, IR_OPT_PW_PLAN), &p, why, sizeof why) == -1, "%s accepted", bad[i]);
  }
  /* a malformed plan is an error of the lowering, named */
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "m", FHJIT_R32);
  fhjit_type t = tu_poly(0, 0, NULL, 2, 64);
  fhjit_output(g, fhjit_mul(g, fhjit_input(g, "a", &t), fhjit_input(g, "b", &t)), "c");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  setenv("FHJIT_PW_PLAN", "U=0", 1);
  ck_assert_ptr_null(fhjit_emit(g, FHJIT_EMIT_PTX, NULL));
  ck_assert_int_eq(fhjit_last_status(ctx), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "FHJIT_PW_PLAN=\"U=0\""));
  unsetenv("FHJIT_PW_PLAN");
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------- host, every vector width */

static uint64_t poison_of(fhjit_radix r) {
  return r == FHJIT_R32 ? UINT64_C(0xdeadbeef) : UINT64_C(0x0bad0bad0bad0bad);
}

START_TEST(test_host_vector_widths) {
  fhjit_context *ctx = fhjit_context_create();
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.max_ops = 12;
  char err[1 << 14];
  static const char *const plans[] = {"V=1", "V=2", "V=4", "V=4,U=4,T=64"};
  for (uint64_t seed = 1; seed <= 24; seed++) {
    fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
    ck_assert_msg(g, "seed %llu: %s", (unsigned long long)seed, err);
    rg_case c;
    ck_assert_msg(!rg_case_init(&c, g, NULL, seed, seed % 3 == 0 ? 60 : 10, err, sizeof err),
                  "%s", err);
    void **ref = rg_alloc_results(&c, poison_of(c.radix));
    ck_assert_msg(!rg_reference(&c, ref, err, sizeof err), "%s", err);
    for (size_t p = 0; p < sizeof plans / sizeof *plans; p++) {
      setenv("FHJIT_PW_PLAN", plans[p], 1);
      ck_assert_int_eq(fhjit_bind(g), FHJIT_OK); /* drops the previous plan's code */
      void **got = rg_alloc_results(&c, poison_of(c.radix) ^ 1);
      fhjit_status st = fhjit_run_host(g, c.params, c.pstride, (const void *const *)c.inputs, got,
                                       (int)(seed % 3));
      ck_assert_msg(st == FHJIT_OK, "seed %llu %s: %s", (unsigned long long)seed, plans[p],
                    fhjit_last_error(ctx));
      int64_t diff = rg_compare(&c, got, plans[p], ref, "reference", err, sizeof err);
      ck_assert_msg(diff == 0, "seed %llu plan %s: %lld words differ\n%s", (unsigned long long)seed,
                    plans[p], (long long)diff, err);
      ck_assert_msg(!rg_check_inputs(&c, plans[p], err, sizeof err), "%s", err);
      rg_free_results(&c, got);
    }
    unsetenv("FHJIT_PW_PLAN");
    rg_free_results(&c, ref);
    rg_case_free(&c);
    fhjit_graph_destroy(g);
  }
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------- GPU kernel, U and T */

static fhjit_graph *tensor_graph(fhjit_context *ctx, fhjit_radix radix, int64_t rows, int64_t n) {
  fhjit_graph *g = fhjit_graph_create(ctx, "tp", radix);
  fhjit_type t = tu_poly(2, 0, NULL, rows, n);
  fhjit_value a = fhjit_input(g, "a", &t), b = fhjit_input(g, "b", &t);
  fhjit_value a0 = fhjit_extract(g, a, 0), a1 = fhjit_extract(g, a, 1);
  fhjit_value b0 = fhjit_extract(g, b, 0), b1 = fhjit_extract(g, b, 1);
  fhjit_value d[3] = {fhjit_mul(g, a0, b0),
                      fhjit_add_lazy(g, fhjit_mul(g, a0, b1), fhjit_mul(g, a1, b0)),
                      fhjit_mul(g, a1, b1)};
  fhjit_output(g, fhjit_pack(g, 3, d), "d");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  return g;
}

START_TEST(test_gpu_shape) {
  fhjit_context *ctx = fhjit_context_create();
  for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
    /* 3 x 2^10 elements: every plan below is exact except U=3 and T=96 */
    fhjit_graph *g = tensor_graph(ctx, (fhjit_radix)radix, 3, 1024);
    int vmax = radix == FHJIT_R32 ? 4 : 2;
    unsetenv("FHJIT_PW_PLAN");
    lw_program base;
    ck_assert_int_eq(lw_compile_ptx(g, NULL, &base), FHJIT_OK);
    int base_stores = count_of(base.ptx, "st.global");
    ck_assert_int_eq(base.kernels[0].block[0], LW_BLOCK);
    ck_assert_int_eq(base.kernels[0].grid[0], (3 * 1024 / vmax + LW_BLOCK - 1) / LW_BLOCK);
    static const struct {
      const char *plan;
      int vec, u, t;
    } plans[] = {{"U=2,T=128", 0, 2, 128}, {"U=4,T=512", 0, 4, 512}, {"U=3,T=96", 0, 3, 96},
                 {"V=2,U=2", 2, 2, 256},   {"V=1,U=8,T=32", 1, 8, 32}, {"V=4,T=1024", 4, 1, 1024}};
    for (size_t p = 0; p < sizeof plans / sizeof *plans; p++) {
      setenv("FHJIT_PW_PLAN", plans[p].plan, 1);
      lw_program prog;
      ck_assert_msg(lw_compile_ptx(g, NULL, &prog) == FHJIT_OK, "%s: %s", plans[p].plan,
                    fhjit_last_error(ctx));
      int vec = plans[p].vec ? (plans[p].vec > vmax ? vmax : plans[p].vec) : vmax;
      int64_t groups = 3 * 1024 / vec, per_block = (int64_t)plans[p].t * plans[p].u;
      const lw_kernel *k = &prog.kernels[0];
      ck_assert_int_eq(k->block[0], plans[p].t);
      ck_assert_int_eq(k->grid[0], (groups + per_block - 1) / per_block);
      /* the launch covers every group, and no block is wholly idle */
      ck_assert_int_ge((int64_t)k->grid[0] * per_block, groups);
      ck_assert_int_lt((int64_t)(k->grid[0] - 1) * per_block, groups);
      char want[48];
      snprintf(want, sizeof want, ".maxntid %d, 1, 1", plans[p].t);
      ck_assert_msg(tu_contains(prog.ptx, want), "%s: no %s", plans[p].plan, want);
      /* U bodies, each storing what one body does (vector stores when vec is
       * the default, so the count is comparable) */
      if (!plans[p].vec || vec == vmax)
        ck_assert_int_eq(count_of(prog.ptx, "st.global"), plans[p].u * base_stores);
      const char *vload = radix == FHJIT_R62 ? "ld.global.nc.v2.u64"
                          : vec == 4         ? "ld.global.nc.v4.u32"
                                             : "ld.global.nc.v2.u32";
      if (vec > 1) ck_assert_msg(count_of(prog.ptx, vload) > 0, "%s: no %s", plans[p].plan, vload);
      else ck_assert_int_eq(count_of(prog.ptx, "ld.global.nc.v"), 0);
      ck_assert_msg(ptxeval_ptxas_ok(prog.ptx), "ptxas rejects plan %s", plans[p].plan);
      lw_program_free(&prog);
    }
    unsetenv("FHJIT_PW_PLAN");
    lw_program_free(&base);
    fhjit_graph_destroy(g);
  }
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------------- the fake driver */

static fake_cuda_calls_fn fake_calls;
static fake_cuda_launches_fn fake_launches;
static fake_cuda_launch_get_fn fake_launch_get;

static void use_fake(void) {
  setenv("FHJIT_LIBCUDA", FAKE_CUDA_PATH, 1);
  setenv("FHJIT_CACHE", "0", 1);
  void *h = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h, "%s", dlerror());
  *(void **)&fake_calls = dlsym(h, "fake_cuda_calls");
  *(void **)&fake_launches = dlsym(h, "fake_cuda_launches");
  *(void **)&fake_launch_get = dlsym(h, "fake_cuda_launch_get");
  ck_assert(fake_calls && fake_launches && fake_launch_get);
}

typedef struct bufs {
  fhjit_cuda_ptr params, in[2], out[1];
  int64_t pstride;
} bufs;

static fhjit_graph *mul_graph(fhjit_context *ctx, int64_t rows, int64_t n) {
  fhjit_graph *g = fhjit_graph_create(ctx, "m", FHJIT_R62);
  fhjit_type t = tu_poly(0, 0, NULL, rows, n);
  fhjit_output(g, fhjit_mul(g, fhjit_input(g, "a", &t), fhjit_input(g, "b", &t)), "c");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  return g;
}

/* On the fake driver, no plan in the environment: a fresh context's mul
 * graph (2 x 4096) compiled once with the default plan (*k0). */
static fhjit_graph *default_kernel(fhjit_context **ctx, fhjit_cuda_kernel **k0) {
  use_fake();
  *ctx = fhjit_context_create();
  fhjit_cuda_options nodisk = {.flags = FHJIT_CUDA_NO_DISK_CACHE};
  fhjit_graph *g = mul_graph(*ctx, 2, 4096);
  unsetenv("FHJIT_PW_PLAN");
  unsetenv("FHJIT_BCONV_PLAN");
  *k0 = fhjit_cuda_compile(g, &nodisk, NULL);
  ck_assert_msg(*k0, "%s", fhjit_last_error(*ctx));
  return g;
}

static void alloc_bufs(fhjit_context *ctx, bufs *b, int64_t rows, int64_t n) {
  uint64_t q[4];
  ck_assert_int_eq(fhjit_find_primes(ctx, 60, 2 * (uint64_t)n, (int32_t)rows, q), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_param_table(ctx, FHJIT_R62, q, (int32_t)rows, 0, 0, 1, &b->params,
                                          &b->pstride), FHJIT_OK);
  size_t bytes = (size_t)(rows * n) * 8;
  for (int i = 0; i < 2; i++) ck_assert_int_eq(fhjit_cuda_alloc(ctx, bytes, &b->in[i]), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_alloc(ctx, bytes, &b->out[0]), FHJIT_OK);
}

START_TEST(test_plans_in_the_cache) {
  fhjit_context *ctx;
  fhjit_cuda_kernel *k0;
  fhjit_graph *g = default_kernel(&ctx, &k0);
  fhjit_cuda_options nodisk = {.flags = FHJIT_CUDA_NO_DISK_CACHE};
  setenv("FHJIT_PW_PLAN", "U=2,T=128", 1);
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k1 = fhjit_cuda_compile(g, &nodisk, &info);
  ck_assert_msg(k1, "%s", fhjit_last_error(ctx));
  ck_assert_ptr_ne(k0, k1);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_ptr_eq(fhjit_cuda_compile(g, &nodisk, &info), k1);
  ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_MEMORY);
  setenv("FHJIT_PW_PLAN", "U=4,T=128", 1);
  fhjit_cuda_kernel *k2 = fhjit_cuda_compile(g, &nodisk, NULL);
  ck_assert(k2 && k2 != k1 && k2 != k0);

  bufs b;
  alloc_bufs(ctx, &b, 2, 4096);
  fhjit_cuda_args a = {.params = b.params, .pstride = b.pstride, .inputs = b.in, .ninputs = 2,
                       .results = b.out, .nresults = 1};
  int before = fake_launches();
  ck_assert_msg(fhjit_cuda_launch_kernel(k1, &a) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_msg(fhjit_cuda_launch(g, &a) == FHJIT_OK, "%s", fhjit_last_error(ctx)); /* U=4 now */
  ck_assert_int_eq(fake_launches(), before + 2);
  fake_launch l;
  ck_assert(fake_launch_get(before, &l));
  ck_assert_int_eq(l.block[0], 128);
  ck_assert_int_eq(l.grid[0], 2 * 4096 / 2 / (128 * 2)); /* r62: 2 words a vector */
  ck_assert(fake_launch_get(before + 1, &l));
  ck_assert_int_eq(l.block[0], 128);
  ck_assert_int_eq(l.grid[0], 2 * 4096 / 2 / (128 * 4));
  unsetenv("FHJIT_PW_PLAN");
  ck_assert_ptr_eq(fhjit_cuda_compile(g, &nodisk, NULL), k0);
  ck_assert_int_eq(fhjit_cuda_launch(g, &a), FHJIT_OK);
  ck_assert(fake_launch_get(before + 2, &l));
  ck_assert_int_eq(l.block[0], LW_BLOCK);
  /* the context's pw_plan option keys the cache as the variable does: the
   * same plan finds the same kernel, "" the default's, whatever the
   * variable says */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "pw_plan", "U=2,T=128"), FHJIT_OK);
  ck_assert_ptr_eq(fhjit_cuda_compile(g, &nodisk, &info), k1);
  ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_MEMORY);
  setenv("FHJIT_PW_PLAN", "U=4,T=128", 1);
  ck_assert_ptr_eq(fhjit_cuda_compile(g, &nodisk, NULL), k1);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "pw_plan", ""), FHJIT_OK);
  ck_assert_ptr_eq(fhjit_cuda_compile(g, &nodisk, NULL), k0);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "pw_plan", NULL), FHJIT_OK);
  ck_assert_ptr_eq(fhjit_cuda_compile(g, &nodisk, NULL), k2);
  unsetenv("FHJIT_PW_PLAN");
  fhjit_context_destroy(ctx);
}
END_TEST

/* A malformed plan in the environment is refused at every compile, also
 * once the graph's kernel is in memory: the runtime's key took it for no
 * plan, so the kernel of the default plan was found and launched, where a
 * new context reported the error. */
START_TEST(test_malformed_plan_not_a_hit) {
  fhjit_context *ctx;
  fhjit_cuda_kernel *k0;
  fhjit_graph *g = default_kernel(&ctx, &k0);
  fhjit_cuda_options nodisk = {.flags = FHJIT_CUDA_NO_DISK_CACHE};
  static const struct {
    const char *var, *value;
  } bad[] = {{"FHJIT_PW_PLAN", "V=3"}, {"FHJIT_BCONV_PLAN", "T=100"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv(bad[i].var, bad[i].value, 1);
    ck_assert_ptr_null(fhjit_cuda_compile(g, &nodisk, NULL));
    char want[64];
    snprintf(want, sizeof want, "%s=\"%s\"", bad[i].var, bad[i].value);
    ck_assert_msg(tu_contains(fhjit_last_error(ctx), want), "%s", fhjit_last_error(ctx));
    bufs b;
    alloc_bufs(ctx, &b, 2, 4096);
    fhjit_cuda_args a = {.params = b.params, .pstride = b.pstride, .inputs = b.in,
                         .ninputs = 2, .results = b.out, .nresults = 1};
    ck_assert_int_eq(fhjit_cuda_launch(g, &a), FHJIT_ERR_ARGUMENT);
    unsetenv(bad[i].var);
    ck_assert_ptr_eq(fhjit_cuda_compile(g, &nodisk, NULL), k0);
  }
  fhjit_context_destroy(ctx);
}
END_TEST

START_TEST(test_checked_pointers_remembered) {
  use_fake();
  unsetenv("FHJIT_PW_PLAN");
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = mul_graph(ctx, 2, 256);
  fhjit_cuda_kernel *k = fhjit_cuda_compile(g, NULL, NULL);
  ck_assert_msg(k, "%s", fhjit_last_error(ctx));
  bufs b;
  alloc_bufs(ctx, &b, 2, 256);
  fhjit_cuda_ptr in[2] = {b.in[0], b.in[1]}, out[1] = {b.out[0]};
  fhjit_cuda_args a = {.params = b.params, .pstride = b.pstride, .inputs = in, .ninputs = 2,
                       .results = out, .nresults = 1};
  const char *q = "cuPointerGetAttributes";
  int c0 = fake_calls(q);
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_OK);
  c0 = fake_calls(q); /* queried: params, two inputs, the result */
  ck_assert_int_ge(c0, 4);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_OK);
  ck_assert_int_eq(fake_calls(q), c0); /* remembered */
  c0 -= 4; /* the counts below are relative to this */

  /* another pointer is checked: a good one passes, a host one fails */
  fhjit_cuda_ptr other;
  ck_assert_int_eq(fhjit_cuda_alloc(ctx, 2 * 256 * 8, &other), FHJIT_OK);
  out[0] = other;
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_OK);
  ck_assert_int_eq(fake_calls(q), c0 + 5);
  void *host = aligned_alloc(64, 2 * 256 * 8);
  in[1] = (fhjit_cuda_ptr)(uintptr_t)host;
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "not in memory allocated"));
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT); /* never remembered */
  free(host);
  in[1] = b.in[1];
  /* a pointer into the same allocation, further on, must fit in it */
  out[0] = other + 16;
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "spans"));
  out[0] = other;
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_OK);

  /* a free through fhjit forgets everything: a freed pointer is caught */
  ck_assert_int_eq(fhjit_cuda_free(ctx, other), FHJIT_OK);
  int c1 = fake_calls(q);
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(ctx), "result #0"));
  ck_assert_int_gt(fake_calls(q), c1);
  out[0] = b.out[0];
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_OK);

  /* a context check still applies to remembered pointers: the kernel's own
   * pointers are remembered with their owner, which is compared each time */
  fhjit_cuda_options unchecked = {.flags = FHJIT_CUDA_NO_POINTER_CHECKS};
  a.options = &unchecked;
  int c2 = fake_calls(q);
  ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &a), FHJIT_OK);
  ck_assert_int_eq(fake_calls(q), c2);
  fhjit_context_destroy(ctx);
}
END_TEST

START_TEST(test_launch_without_device_queries) {
  use_fake();
  unsetenv("FHJIT_PW_PLAN");
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = mul_graph(ctx, 2, 256);
  bufs b;
  alloc_bufs(ctx, &b, 2, 256);
  fhjit_cuda_args a = {.params = b.params, .pstride = b.pstride, .inputs = b.in, .ninputs = 2,
                       .results = b.out, .nresults = 1};
  ck_assert_msg(fhjit_cuda_launch(g, &a) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  int attr = fake_calls("cuDeviceGetAttribute"), id = fake_calls("cuCtxGetId");
  int launches = fake_launches();
  for (int i = 0; i < 10; i++) ck_assert_int_eq(fhjit_cuda_launch(g, &a), FHJIT_OK);
  ck_assert_int_eq(fake_launches(), launches + 10);
  ck_assert_int_eq(fake_calls("cuDeviceGetAttribute"), attr);
  ck_assert_int_le(fake_calls("cuCtxGetId"), id + 10); /* one per launch */

  /* the hash is computed at bind and follows changes of the graph */
  uint64_t h0[2], h1[2];
  ck_assert(g->hash_valid);
  ck_assert_int_eq(fhjit_graph_hash(g, h0), FHJIT_OK);
  g->hash_valid = 0; /* the same value computed afresh */
  ck_assert_int_eq(fhjit_graph_hash(g, h1), FHJIT_OK);
  ck_assert(h0[0] == h1[0] && h0[1] == h1[1]);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  fhjit_type t = tu_poly(0, 0, NULL, 2, 256);
  fhjit_value x = fhjit_input(g, "x", &t);
  ck_assert(!g->hash_valid && !fhjit_is_bound(g));
  fhjit_output(g, fhjit_add(g, x, x), "y");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(g, h1), FHJIT_OK);
  ck_assert(h0[0] != h1[0] || h0[1] != h1[1]);
  /* the changed graph launches its own kernel (3 inputs, 2 results now) */
  fhjit_cuda_ptr in3[3] = {b.in[0], b.in[1], 0}, out2[2] = {b.out[0], 0};
  ck_assert_int_eq(fhjit_cuda_alloc(ctx, 2 * 256 * 8, &in3[2]), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_alloc(ctx, 2 * 256 * 8, &out2[1]), FHJIT_OK);
  a.inputs = in3, a.ninputs = 3, a.results = out2, a.nresults = 2;
  ck_assert_msg(fhjit_cuda_launch(g, &a) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  a.inputs = b.in, a.ninputs = 2, a.results = b.out, a.nresults = 1;
  ck_assert_int_eq(fhjit_cuda_launch(g, &a), FHJIT_ERR_ARGUMENT);
  fhjit_context_destroy(ctx);
}
END_TEST

/* FHJIT_NTT_PLAN is part of the hash of graphs that compute an NTT, read at
 * every call: it may change after fhjit_bind (the cache holds the rest). */
START_TEST(test_hash_follows_ntt_plan) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "ntt", FHJIT_R62);
  fhjit_type xt = tu_poly(0, 0, NULL, 2, 1024), tt;
  xt.domain = FHJIT_DOMAIN_COEF;
  memset(&tt, 0, sizeof tt);
  tt.kind = FHJIT_KIND_TWIDDLE;
  tt.rows = 2;
  tt.n = 1024;
  fhjit_value x = fhjit_input(g, "x", &xt), tw = fhjit_input(g, "tw", &tt);
  ck_assert_int_eq(fhjit_output(g, fhjit_ntt(g, x, tw, FHJIT_NTT_COEF_MONT_TO_NTT), "y"), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  fhjit_graph *m = fhjit_graph_create(ctx, "m", FHJIT_R62);
  fhjit_type t = tu_poly(0, 0, NULL, 2, 1024);
  fhjit_output(m, fhjit_mul(m, fhjit_input(m, "a", &t), fhjit_input(m, "b", &t)), "c");
  ck_assert_int_eq(fhjit_bind(m), FHJIT_OK);
  uint64_t h0[2], h1[2], h2[2], m0[2], m1[2];
  unsetenv("FHJIT_NTT_PLAN");
  ck_assert_int_eq(fhjit_graph_hash(g, h0), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(m, m0), FHJIT_OK);
  setenv("FHJIT_NTT_PLAN", "one=11", 1);
  ck_assert_int_eq(fhjit_graph_hash(g, h1), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_hash(m, m1), FHJIT_OK);
  ck_assert(h0[0] != h1[0] || h0[1] != h1[1]);
  ck_assert(m0[0] == m1[0] && m0[1] == m1[1]); /* no NTT: no change */
  g->hash_valid = 0; /* computed afresh: the same */
  ck_assert_int_eq(fhjit_graph_hash(g, h2), FHJIT_OK);
  ck_assert(h1[0] == h2[0] && h1[1] == h2[1]);
  unsetenv("FHJIT_NTT_PLAN");
  ck_assert_int_eq(fhjit_graph_hash(g, h2), FHJIT_OK);
  ck_assert(h0[0] == h2[0] && h0[1] == h2[1]);
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("pwplan");
  TCase *tc = tcase_create("pwplan");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_parse);
  tcase_add_test(tc, test_host_vector_widths);
  tcase_add_test(tc, test_gpu_shape);
  tcase_add_test(tc, test_plans_in_the_cache);
  tcase_add_test(tc, test_malformed_plan_not_a_hit);
  tcase_add_test(tc, test_checked_pointers_remembered);
  tcase_add_test(tc, test_launch_without_device_queries);
  tcase_add_test(tc, test_hash_follows_ntt_plan);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
