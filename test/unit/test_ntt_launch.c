/* test_ntt_launch.c: launches of the real lowering's two-kernel NTT
 * programs through the fake libcuda: programmatic dependent launch on
 * sm_90 (cuLaunchKernelEx) and plain launches on sm_80, the per-row
 * counters (own = 1) or the grid-wide wait (own = 0) by scratch, failed
 * launches and home streams, and launches on other streams, the per-thread
 * default stream and into a stream capture; a key switch's conversion and
 * pointwise kernels as dependent launches too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_fixture.h"


/* A forward NTT over 2 rows of 2^16 words (two kernels), parsed and
 * bound: the graph of ntt_kernel and ntt_cluster_launch. */
static fhjit_graph *nt_graph(fhjit_context *c, fhjit_radix radix) {
  char text[256];
  snprintf(text, sizeof text,
           "graph @nt radix(%s) {\n"
           "  %%x = input pt<[], 2, 65536> coef mont\n"
           "  %%tw = input twiddles<2, 65536>\n"
           "  %%f = ntt_fwd %%x, %%tw mode(mont)\n"
           "  output %%f\n"
           "}\n", radix == FHJIT_R32 ? "r32" : "r62");
  fhjit_graph *g = fhjit_parse(c, text, strlen(text), "nt.fh");
  ck_assert_msg(g && fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
  return g;
}

/* A forward NTT over 2 rows of 2^16 words (two kernels), compiled for
 * `target` with its buffers allocated: the launch arguments in *args, whose
 * pointers live in bufs. */
typedef struct ntt_bufs {
  fhjit_cuda_ptr params, ins[2], outs[1];
} ntt_bufs;

static fhjit_cuda_kernel *ntt_kernel(fhjit_context *c, fhjit_radix radix, const char *target,
                                     ntt_bufs *b, fhjit_cuda_args *args) {
  fhjit_graph *g = nt_graph(c, radix);
  fhjit_cuda_options o = {.target = target};
  fhjit_cuda_compile_info info;
  /* the per-row counters, which 2 rows would not get by default (their
   * first grid is small: test_ntt_emit's test_pdl) */
  ck_assert_int_eq(setenv("FHJIT_NTT_PLAN", "rowsync=1", 1), 0);
  fhjit_cuda_kernel *k = compile_ok(g, &o, &info);
  unsetenv("FHJIT_NTT_PLAN");
  ck_assert_int_eq(info.nkernels, 2);
  size_t ib, tb, rb;
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 0, &ib), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 1, &tb), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_result_bytes(g, 0, &rb), FHJIT_OK);
  b->params = alloc_ok(c, 8 * 2 * 8);
  b->ins[0] = alloc_ok(c, ib), b->ins[1] = alloc_ok(c, tb);
  b->outs[0] = alloc_ok(c, rb);
  *args = (fhjit_cuda_args){.params = b->params, .pstride = 2, .inputs = b->ins, .ninputs = 2,
                            .results = b->outs, .nresults = 1};
  return k;
}

/* The last launch of an NTT program (its two kernels) passed `own` last. */
static void expect_own(uint64_t own, const char *when) {
  fake_launch l0, l1;
  ck_assert(fake_launch_get(fake_launches() - 2, &l0));
  ck_assert(fake_launch_get(fake_launches() - 1, &l1));
  ck_assert_msg(l0.nparams == 6 && l1.nparams == 6 && l0.params[5] == own && l1.params[5] == own,
                "%s: own %llu/%llu, expected %llu", when, (unsigned long long)l0.params[5],
                (unsigned long long)l1.params[5], (unsigned long long)own);
}

/* A two-kernel NTT on sm_90: both kernels go through cuLaunchKernelEx with
 * programmatic stream serialization (the first waits for the stream's
 * previous kernel, the second for the first, each itself), with own = 1
 * (the module's per-row counters) unless the caller gives scratch; for
 * sm_80 both are plain launches; a failing cuLaunchKernelEx is reported
 * under its own name and kernel, and once a launch failed half-way the
 * kernel's own launches keep own = 0. */
START_TEST(ntt_dependent_launch) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  for (int arch = 0; arch < 2; arch++) {
    fhjit_context *c = fhjit_context_create();
    ntt_bufs b;
    fhjit_cuda_args args;
    fhjit_cuda_kernel *k = ntt_kernel(c, FHJIT_R32, arch ? "sm_80" : "sm_90", &b, &args);
    int before = fake_calls("cuLaunchKernelEx");
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    fake_launch l0, l1;
    ck_assert(fake_launch_get(fake_launches() - 2, &l0));
    ck_assert(fake_launch_get(fake_launches() - 1, &l1));
    ck_assert_int_eq(l0.pdl, arch ? 0 : 1);
    ck_assert_int_eq(l1.pdl, arch ? 0 : 1);
    /* sm_90: the last argument says the launch uses the kernel's own state */
    ck_assert_int_eq(l0.nparams, arch ? 5 : 6);
    ck_assert_int_eq(l1.nparams, arch ? 5 : 6);
    if (!arch) {
      expect_own(1, "own state");
      /* the caller's scratch (none here): launches may overlap, own = 0 */
      fhjit_cuda_ptr none[1] = {0};
      args.scratch = none;
      ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
      expect_own(0, "caller's scratch");
      args.scratch = NULL;
    }
    ck_assert_int_eq(fake_calls("cuLaunchKernelEx") - before, (arch ? 0 : 4));
    if (!arch) {
      setenv("FAKE_CUDA_FAIL", "cuLaunchKernelEx=1#6", 1); /* kernel 1 of the third launch */
      ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &args), FHJIT_ERR_CUDA);
      unsetenv("FAKE_CUDA_FAIL");
      ck_assert_msg(tu_contains(fhjit_last_error(c), "cuLaunchKernelEx"), "%s", fhjit_last_error(c));
      ck_assert_msg(tu_contains(fhjit_last_error(c), "fhjit_ntt0_n16_k1"), "%s", fhjit_last_error(c));
      /* kernel 0 ran and counted, kernel 1 never will: from now on the
       * kernel's own launches take the grid-wide wait (own = 0) */
      ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
      expect_own(0, "after a launch that failed half-way");
    }
    fhjit_context_destroy(c);
  }
}
END_TEST

/* The per-row counters of an NTT program serve one stream: the first one
 * it was launched on with its own state; launches on other streams, on the
 * per-thread default stream and into a capture pass own = 0 (the grid-wide
 * wait), so launches on several streams never share them. */
START_TEST(ntt_counters_home_stream) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  fhjit_context *c = fhjit_context_create();
  ntt_bufs b;
  fhjit_cuda_args args;
  fhjit_cuda_kernel *k = ntt_kernel(c, FHJIT_R62, "sm_90", &b, &args);
  CUstream s1, s2;
  ck_assert_int_eq(fake_stream_create(&s1, 0), CUDA_SUCCESS);
  ck_assert_int_eq(fake_stream_create(&s2, 0), CUDA_SUCCESS);
  struct {
    CUstream stream;
    int capture, own;
  } steps[] = {{s1, 0, 1}, {s2, 0, 0}, {s1, 0, 1}, {NULL, 0, 0},
               {FHJIT_CU_STREAM_PER_THREAD, 0, 0}, {s1, 1, 0}, {s1, 0, 1}};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    args.stream = (fhjit_cuda_stream)steps[i].stream;
    if (steps[i].capture) ck_assert_int_eq(fake_begin_capture(steps[i].stream, 0), CUDA_SUCCESS);
    int before = fake_launches();
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    if (steps[i].capture) {
      void *graph = NULL;
      ck_assert_int_eq(fake_end_capture(steps[i].stream, &graph), CUDA_SUCCESS);
      continue; /* recorded in the graph, not in the launch log */
    }
    ck_assert_int_eq(fake_launches() - before, 2);
    char when[32];
    snprintf(when, sizeof when, "step %zu", i);
    expect_own((uint64_t)steps[i].own, when);
  }
  fhjit_context_destroy(c);
}
END_TEST

/* The cluster schedule (ntt_schedule=cluster) on sm_90: one kernel per
 * transform, launched through cuLaunchKernelEx with the cluster dimension
 * (C blocks along x, the grid C blocks per row) and the block's slice as
 * dynamic shared memory, over 48 KB, so the kernel gets the maximum dynamic
 * shared memory attribute when loaded (the fake refuses the launch
 * otherwise); no programmatic serialization, no `own` argument. sm_80:
 * the two kernels, plain launches, no cluster. */
START_TEST(ntt_cluster_launch) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  for (int i = 0; i < 4; i++) {
    fhjit_radix radix = i & 1 ? FHJIT_R62 : FHJIT_R32;
    int sm80 = i >= 2;
    fhjit_context *c = fhjit_context_create();
    ck_assert_int_eq(fhjit_context_set_option(c, "ntt_schedule", "cluster"), FHJIT_OK);
    fhjit_graph *g = nt_graph(c, radix);
    fhjit_cuda_options o = {.target = sm80 ? "sm_80" : "sm_90"};
    fhjit_cuda_compile_info info;
    int attrs = fake_calls("cuFuncSetAttribute");
    fhjit_cuda_kernel *k = compile_ok(g, &o, &info);
    ck_assert_int_eq(info.nkernels, sm80 ? 2 : 1);
    size_t ib, tb, rb;
    ck_assert_int_eq(fhjit_cuda_input_bytes(g, 0, &ib), FHJIT_OK);
    ck_assert_int_eq(fhjit_cuda_input_bytes(g, 1, &tb), FHJIT_OK);
    ck_assert_int_eq(fhjit_cuda_result_bytes(g, 0, &rb), FHJIT_OK);
    fhjit_cuda_ptr ins[2] = {alloc_ok(c, ib), alloc_ok(c, tb)}, outs[1] = {alloc_ok(c, rb)};
    fhjit_cuda_args args = {.params = alloc_ok(c, 8 * 2 * 8), .pstride = 2, .inputs = ins,
                            .ninputs = 2, .results = outs, .nresults = 1};
    int ex = fake_calls("cuLaunchKernelEx"), plain = fake_calls("cuLaunchKernel");
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    fake_launch l;
    ck_assert(fake_launch_get(fake_launches() - 1, &l));
    if (sm80) {
      ck_assert_int_eq(fake_calls("cuLaunchKernel") - plain, 2);
      ck_assert_int_eq(fake_calls("cuLaunchKernelEx") - ex, 0);
      ck_assert(l.cluster[0] == 1 && l.cluster[1] == 1 && l.cluster[2] == 1);
    } else {
      /* r32 2^16: 2 blocks of 2^15 words (128 KB + 16 KB padding: 4
       * words every 32, the vector exchange's, docs/ntt-cluster.md); r62:
       * 8 of 2^13 (64 KB + 8 KB: 2 words every 16) */
      unsigned C = radix == FHJIT_R32 ? 2 : 8;
      unsigned bytes = radix == FHJIT_R32 ? (32768 + (1024 << 2)) * 4 : (8192 + (512 << 1)) * 8;
      ck_assert_int_eq(fake_calls("cuLaunchKernelEx") - ex, 1);
      ck_assert_int_eq(fake_calls("cuLaunchKernel") - plain, 0);
      ck_assert_uint_eq(l.cluster[0], C);
      ck_assert(l.cluster[1] == 1 && l.cluster[2] == 1);
      ck_assert_uint_eq(l.grid[0], 2 * C);
      ck_assert_uint_eq(l.block[0], 512);
      ck_assert_uint_eq(l.shared, bytes);
      ck_assert_int_eq(l.pdl, 0);
      ck_assert_int_eq(l.nparams, 5);
      ck_assert_int_gt(fake_calls("cuFuncSetAttribute"), attrs);
      /* a launch the driver refuses names the launcher and the cluster */
      setenv("FAKE_CUDA_FAIL", "cuLaunchKernelEx", 1);
      ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &args), FHJIT_ERR_CUDA);
      unsetenv("FAKE_CUDA_FAIL");
      ck_assert_msg(tu_contains(fhjit_last_error(c), "cuLaunchKernelEx"), "%s", fhjit_last_error(c));
      char want[32];
      snprintf(want, sizeof want, "cluster %u,", C);
      ck_assert_msg(tu_contains(fhjit_last_error(c), want), "%s", fhjit_last_error(c));
    }
    fhjit_context_destroy(c);
  }
}
END_TEST

/* A key switch at r62 (examples/s7/keyswitch.fh: NTTs, conversions and a
 * pointwise step) on sm_90: its NTTs' kernels are dependent launches
 * (cuLaunchKernelEx with programmatic stream serialization) and, r62's
 * default, its conversions and pointwise step plain ones; with pdlmix=1
 * the conversions are dependent launches too, with pdlmix=2 the pointwise
 * step as well (docs/runtime.md); on sm_80 every launch is plain. */
START_TEST(steps_dependent_launch) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  static const char text[] =
      "graph @ks radix(r62) moduli(1152921504606830593, 2199023251457, 2199023228929, "
      "2199023210497, 1152921504606791681, 1152921504606748673) special(2) digits(2) {\n"
      "  %d = input pt<[], 4, 1024> ntt mont\n"
      "  %c = input ct<2, [], 4, 1024> ntt mont\n"
      "  %key = input key<2, 2, 6, 1024> ntt mont\n"
      "  %fw = input twiddles<6, 1024>\n"
      "  %iv = input twiddles<6, 1024>\n"
      "  %t0 = input table<10>\n"
      "  %t1 = input table<10>\n"
      "  %tm = input table<14>\n"
      "  %u0 = modup %d, %fw, %iv, %t0 digit(0)\n"
      "  %u1 = modup %d, %fw, %iv, %t1 digit(1)\n"
      "  %p0 = keyswitch_digit_product %u0, %key digit(0) row_start(0)\n"
      "  %p1 = keyswitch_digit_product %u1, %key digit(1) row_start(0)\n"
      "  %acc = add_lazy %p0, %p1\n"
      "  %a0 = extract %acc[0]\n"
      "  %a1 = extract %acc[1]\n"
      "  %k0 = moddown %a0, %fw, %iv, %tm\n"
      "  %k1 = moddown %a1, %fw, %iv, %tm\n"
      "  %k = pack %k0, %k1\n"
      "  %out = add %k, %c\n"
      "  output %out\n"
      "}\n";
  static const char *const mix[4] = {NULL, "pdlmix=1", "pdlmix=2", "pdlmix=2"};
  for (int mode = 0; mode < 4; mode++) { /* sm_90 with pdlmix as mix says, then sm_80 */
    fhjit_context *c = fhjit_context_create();
    if (mix[mode]) ck_assert_int_eq(fhjit_context_set_option(c, "ntt_plan", mix[mode]), FHJIT_OK);
    fhjit_graph *g = fhjit_parse(c, text, sizeof text - 1, "ks.fh");
    ck_assert_msg(g && fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
    fhjit_cuda_options o = {.target = mode == 3 ? "sm_80" : "sm_90"};
    fhjit_cuda_compile_info info;
    fhjit_cuda_kernel *k = compile_ok(g, &o, &info);
    fhjit_cuda_ptr ins[8], outs[1];
    int32_t ni = fhjit_num_inputs(g);
    ck_assert_int_eq(ni, 8);
    for (int32_t i = 0; i < ni; i++) {
      size_t bytes;
      ck_assert_int_eq(fhjit_cuda_input_bytes(g, i, &bytes), FHJIT_OK);
      ins[i] = alloc_ok(c, bytes);
    }
    size_t rb;
    ck_assert_int_eq(fhjit_cuda_result_bytes(g, 0, &rb), FHJIT_OK);
    outs[0] = alloc_ok(c, rb);
    fhjit_cuda_args args = {.params = alloc_ok(c, 8 * 6 * 16), .pstride = 6, .inputs = ins,
                            .ninputs = ni, .results = outs, .nresults = 1};
    int first = fake_launches();
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    ck_assert_int_eq(fake_launches() - first, info.nkernels);
    int mixed = 0, ntt = 0;
    for (int i = first; i < fake_launches(); i++) {
      fake_launch l;
      ck_assert(fake_launch_get(i, &l));
      int is_ntt = !strncmp(l.name, "fhjit_ntt", 9);
      int is_bconv = !strncmp(l.name, "fhjit_bconv", 11);
      mixed += !is_ntt, ntt += is_ntt;
      int want = mode == 3 ? 0 : is_ntt || (is_bconv && mode >= 1) || mode == 2;
      ck_assert_msg(l.pdl == want, "mode %d: %s launched with pdl %d", mode, l.name, l.pdl);
    }
    ck_assert_int_eq(mixed, 4); /* three conversions and the pointwise add */
    ck_assert_int_gt(ntt, 0);
    fhjit_context_destroy(c);
  }
}
END_TEST

int main(void) {
  TCase *tc;
  Suite *s = rt_suite("ntt_launch", &tc);
  tcase_add_test(tc, ntt_dependent_launch);
  tcase_add_test(tc, ntt_counters_home_stream);
  tcase_add_test(tc, ntt_cluster_launch);
  tcase_add_test(tc, steps_dependent_launch);
  return rt_run(s);
}
