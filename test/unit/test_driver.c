/* test_driver.c: loading the CUDA driver and its failures, without a GPU.
 * With no driver every call fails cleanly with FHJIT_ERR_NO_DRIVER; with
 * the fake libcuda (fake_cuda/fake_cuda.c): cuInit failing, no device, an
 * old driver, a missing symbol, driver procedures, link errors with their
 * log, load failures, out of memory (also of scratch buffers at compile
 * time), compile targets against the device, and fhjit's declarations
 * against the toolkit's cuda.h where one is installed. Programs come from
 * the hook of rt_fixture.c, which writes PTX by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_fixture.h"

/* ------------------------------------------------------------ no driver */

START_TEST(no_driver) {
  const char *path = "/nonexistent/fhjit-test/libcuda.so.1";
  setenv("FHJIT_LIBCUDA", path, 1);
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "nodrv", FHJIT_R62, 2, 16);
  ck_assert_int_eq(fhjit_cuda_available(c), 0);
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, path, "cannot open shared object file",
         "fhjit_cuda_available");
  fhjit_cuda_compile_info info;
  memset(&info, 0x5a, sizeof info);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, &info));
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_compile", path, NULL);
  fhjit_cuda_ptr bufs[3] = {16, 32, 48};
  fhjit_cuda_args a = {.params = 64, .pstride = 2, .inputs = bufs, .ninputs = 2,
                       .results = bufs + 2, .nresults = 1};
  expect(c, fhjit_cuda_launch(g, &a), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_launch", path, NULL);
  fhjit_cuda_ptr p = 77;
  expect(c, fhjit_cuda_alloc(c, 1024, &p), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_alloc", path, NULL);
  ck_assert(p == 0);
  expect(c, fhjit_cuda_free(c, 4096), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_free", NULL, NULL);
  char host[32] = {0};
  expect(c, fhjit_cuda_upload(c, 4096, host, sizeof host), FHJIT_ERR_NO_DRIVER, "upload", NULL,
         NULL);
  expect(c, fhjit_cuda_download(c, host, 4096, sizeof host), FHJIT_ERR_NO_DRIVER, "download",
         NULL, NULL);
  fhjit_cuda_ptr table = 5;
  int64_t pstride = 0;
  expect(c, fhjit_cuda_param_table(c, FHJIT_R62, &Q62, 1, 0, 0, 1, &table, &pstride),
         FHJIT_ERR_NO_DRIVER, "fhjit_cuda_alloc", NULL, NULL);
  ck_assert(table == 0);
  ck_assert_ptr_null(fhjit_cuda_driver_proc(c, "cuInit"));
  ck_assert_int_eq(fhjit_last_status(c), FHJIT_ERR_NO_DRIVER);
  ck_assert_int_eq(fhjit_cuda_launch_kernel(NULL, &a), FHJIT_ERR_ARGUMENT);
  /* nothing was loaded, so releasing a context is a no-op */
  ck_assert_int_eq(fhjit_cuda_release_context(c, (fhjit_cuda_context)1), FHJIT_OK);
  /* the reason repeats at every call, in every context */
  fhjit_context *c2 = fhjit_context_create();
  ck_assert_int_eq(fhjit_cuda_available(c2), 0);
  expect(c2, fhjit_last_status(c2), FHJIT_ERR_NO_DRIVER, path, NULL, NULL);
  fhjit_context_destroy(c2);
  fhjit_context_destroy(c);
}
END_TEST

/* An environment variable makes the fake fail in one way; the reason is in
 * every call's message. */
static void expect_unavailable(const char *var, const char *value, const char *f1,
                               const char *f2) {
  use_fake();
  setenv(var, value, 1);
  fhjit_context *c = fhjit_context_create();
  ck_assert_int_eq(fhjit_cuda_available(c), 0);
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, f1, f2, NULL);
  fhjit_graph *g = add_graph(c, "g", FHJIT_R32, 1, 8);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_compile", f1, f2);
  fhjit_context_destroy(c);
}

START_TEST(init_failure) {
  expect_unavailable("FAKE_CUDA_FAIL", "cuInit=100", "cuInit failed",
                     "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device");
}
END_TEST

START_TEST(no_device) {
  expect_unavailable("FAKE_CUDA_DEVICES", "0", "no usable CUDA driver", "sees no device");
}
END_TEST

START_TEST(driver_too_old) {
  expect_unavailable("FAKE_CUDA_VERSION", "11080", "CUDA 11.8", "CUDA 12.0 fhjit needs");
}
END_TEST

START_TEST(driver_lacks_symbol) {
  expect_unavailable("FHJIT_LIBCUDA", FAKE_CUDA_OLD_PATH, "has no symbol cuCtxGetId",
                     "older than CUDA 12.0");
}
END_TEST

START_TEST(available_and_procs) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  ck_assert_int_eq(fhjit_cuda_available(c), 1);
  ck_assert_ptr_eq(fhjit_cuda_driver_proc(c, "cuCtxCreate_v2"), (void *)fake_ctx_create);
  ck_assert_ptr_null(fhjit_cuda_driver_proc(c, "cuNoSuchFunction"));
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, "no symbol cuNoSuchFunction", NULL, NULL);
  ck_assert_ptr_null(fhjit_cuda_driver_proc(c, NULL));
  ck_assert_int_eq(fhjit_last_status(c), FHJIT_ERR_ARGUMENT);
  /* cuInit runs once per process */
  ck_assert_int_eq(fake_calls("cuInit"), 1);
  fhjit_context_destroy(c);
}
END_TEST

/* ------------------------------------------------------ driver failures */

START_TEST(link_failure_log) {
  use_fake();
  setenv("FAKE_CUDA_FAIL", "cuLinkComplete", 1);
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "linkfail", FHJIT_R62, 2, 16);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "could not compile the PTX of graph @linkfail for sm_90",
         "cuLinkComplete failed: CUDA_ERROR_INVALID_PTX (218)",
         "ptxas fatal   : Unresolved extern function 'fake_missing'");
  ck_assert_int_eq(fake_live_modules(), 0);
  ck_assert_int_eq(count_files(cache_dir, NULL, 0), 0);
  ck_assert_int_eq(fake_calls("cuLinkDestroy"), 1);
  /* a failure is not cached */
  unsetenv("FAKE_CUDA_FAIL");
  fhjit_cuda_compile_info info;
  compile_ok(g, NULL, &info);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(hook.calls, 2);

  /* PTX the driver's assembler rejects: its log is in the message */
  hook.syntax_error = 1;
  fhjit_graph *g2 = add_graph(c, "syntax", FHJIT_R62, 2, 32);
  ck_assert_ptr_null(fhjit_cuda_compile(g2, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "cuLinkAddData_v2 failed",
         "syntax error at 'FAKE_SYNTAX_ERROR'", "driver log");
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(load_failures) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  setenv("FAKE_CUDA_FAIL", "cuModuleLoadData", 1);
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "ld", FHJIT_R32, 2, 16), NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "cannot load the cubin",
         "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE", NULL);
  unsetenv("FAKE_CUDA_FAIL");
  hook.misnamed = 1;
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "nm", FHJIT_R32, 2, 16), NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "kernel fake_nm_0",
         "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND", NULL);
  ck_assert_int_eq(fake_live_modules(), 0);
  hook.misnamed = 0;
  hook.bad_index = 1;
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "bi", FHJIT_R32, 2, 16), NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_LLVM, "input index out of range", NULL, NULL);
  hook.bad_index = 0;
  hook.refuse = 1;
  fhjit_graph *g = add_graph(c, "refused", FHJIT_R32, 2, 16);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_UNSUPPORTED, "fake lowering refuses @refused", NULL,
         NULL);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  ck_assert_int_eq(hook.calls, 5); /* not cached */
  ck_assert_int_eq(fake_calls("cuLinkComplete"), 2); /* the bad program was never linked */
  /* unbound */
  fhjit_graph *u = fhjit_graph_create(c, "unbound", FHJIT_R32);
  fhjit_type t = tu_poly(0, 0, NULL, 1, 4);
  fhjit_output(u, fhjit_input(u, "x", &t), NULL);
  ck_assert_ptr_null(fhjit_cuda_compile(u, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_ARGUMENT, "@unbound is not bound", NULL, NULL);
  ck_assert_ptr_null(fhjit_cuda_compile(NULL, NULL, NULL));
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(out_of_memory) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  fhjit_cuda_ptr p = 1;
  expect(c, fhjit_cuda_alloc(c, (size_t)1 << 45, &p), FHJIT_ERR_MEMORY,
         "cannot allocate 35184372088832 bytes", "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY", NULL);
  ck_assert(p == 0);
  expect(c, fhjit_cuda_alloc(c, 0, &p), FHJIT_ERR_ARGUMENT, "zero bytes", NULL, NULL);
  int before = fake_live_allocs();
  setenv("FAKE_CUDA_FAIL", "cuMemAlloc", 1);
  expect(c, fhjit_cuda_alloc(c, 64, &p), FHJIT_ERR_MEMORY, "out of memory", NULL, NULL);
  /* scratch buffers are allocated at compile time: their failure fails it */
  hook.scratch = 1;
  fhjit_graph *g = add_graph(c, "scr", FHJIT_R62, 2, 16);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_MEMORY, "scratch arena of 4096 bytes",
         "@scr", NULL);
  ck_assert_int_eq(fake_live_modules(), 0);
  ck_assert_int_eq(fake_live_allocs(), before);
  unsetenv("FAKE_CUDA_FAIL");
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k = compile_ok(g, NULL, &info);
  ck_assert_int_eq(info.scratch_bytes, 4096);
  ck_assert_int_eq(fhjit_cuda_scratch_count(k), 1);
  ck_assert_int_eq(fhjit_cuda_scratch_size(k, 0), 4096);
  ck_assert_int_eq(fhjit_cuda_scratch_size(k, 1), -1);
  ck_assert_int_eq(fake_live_allocs(), before + 1);
  fhjit_context_destroy(c);
  ck_assert_int_eq(fake_live_allocs(), before);
}
END_TEST

START_TEST(targets) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "tg", FHJIT_R62, 1, 16);
  fhjit_cuda_options o = {.target = "sm_9"};
  ck_assert_ptr_null(fhjit_cuda_compile(g, &o, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "\"sm_9\" is not of the form sm_XX", NULL, NULL);
  o.target = "sm_100";
  ck_assert_ptr_null(fhjit_cuda_compile(g, &o, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "sm_100", NULL, NULL);
  o.target = "sm_91";
  ck_assert_ptr_null(fhjit_cuda_compile(g, &o, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "not supported", "sm_90a", NULL);
  o.target = "sm_80";
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k80 = compile_ok(g, &o, &info);
  ck_assert_str_eq(info.target, "sm_80");
  ck_assert_str_eq(hook.arch, "sm_80");
  o.target = "sm_90a";
  ck_assert_ptr_ne(compile_ok(g, &o, &info), k80);
  ck_assert_str_eq(hook.arch, "sm_90a");
  fhjit_context_destroy(c);

  /* a device newer than every target: the newest portable one */
  setenv("FAKE_CUDA_CC", "120", 1);
  c = fhjit_context_create();
  compile_ok(add_graph(c, "tg", FHJIT_R62, 1, 16), NULL, &info);
  ck_assert_str_eq(info.target, "sm_90");
  o.target = "sm_90a"; /* 'a' code runs on its own device only */
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "tg", FHJIT_R62, 1, 16), &o, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "cannot run on the device, which is sm_120",
         NULL, NULL);
  fhjit_context_destroy(c);
  /* older than every target */
  setenv("FAKE_CUDA_CC", "61", 1);
  c = fhjit_context_create();
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "tg", FHJIT_R62, 1, 16), NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "the device is sm_61, older than every target",
         "sm_70", NULL);
  fhjit_context_destroy(c);
}
END_TEST

#ifdef FHJIT_HAVE_CUDA_H
#include "cuda_values.h"
long cudah_value(const char *name, int *found);
const char *cudah_symbol(const char *plain);
uintptr_t cudah_stream_legacy(void);
void cudah_launch_layout(size_t out[10]);

/* fhjit's declarations agree with the CUDA toolkit's cuda.h. */
START_TEST(agrees_with_cuda_h) {
  int found;
#define CHECK_VALUE(n)                                                               \
  ck_assert_msg(cudah_value(#n, &found) == (long)(n) && found, "%s: cuda.h has %ld, fhjit %ld", \
                #n, cudah_value(#n, &found), (long)(n));
  FHJIT_CUDA_VALUES(CHECK_VALUE)
#undef CHECK_VALUE
#define CHECK_SYMBOL(plain, symbol)                                                   \
  ck_assert_msg(!strcmp(cudah_symbol(#plain), #symbol), "%s: cuda.h means %s, fhjit loads %s", \
                #plain, cudah_symbol(#plain), #symbol);
  RT_DRIVER_SYMBOLS(CHECK_SYMBOL)
#undef CHECK_SYMBOL
  ck_assert(cudah_stream_legacy() == (uintptr_t)FHJIT_CU_STREAM_LEGACY);
  size_t theirs[10], ours[10] = {sizeof(CUlaunchAttribute),
                               offsetof(CUlaunchAttribute, value),
                               offsetof(CUlaunchAttribute, value.programmatic_stream_serialization_allowed),
                               sizeof(CUlaunchConfig),
                               offsetof(CUlaunchConfig, shared_bytes),
                               offsetof(CUlaunchConfig, stream),
                               offsetof(CUlaunchConfig, attrs),
                               offsetof(CUlaunchConfig, nattrs),
                               offsetof(CUlaunchAttribute, value.cluster_dim.x),
                               offsetof(CUlaunchAttribute, value.cluster_dim.z)};
  cudah_launch_layout(theirs);
  for (int i = 0; i < 10; i++)
    ck_assert_msg(theirs[i] == ours[i], "launch structure figure %d: cuda.h %zu, fhjit %zu", i,
                  theirs[i], ours[i]);
}
END_TEST
#endif

int main(void) {
  TCase *tc;
  Suite *s = rt_suite("driver", &tc);
  tcase_add_test(tc, no_driver);
  tcase_add_test(tc, init_failure);
  tcase_add_test(tc, no_device);
  tcase_add_test(tc, driver_too_old);
  tcase_add_test(tc, driver_lacks_symbol);
  tcase_add_test(tc, available_and_procs);
  tcase_add_test(tc, link_failure_log);
  tcase_add_test(tc, load_failures);
  tcase_add_test(tc, out_of_memory);
  tcase_add_test(tc, targets);
#ifdef FHJIT_HAVE_CUDA_H
  tcase_add_test(tc, agrees_with_cuda_h);
#endif
  return rt_run(s);
}
