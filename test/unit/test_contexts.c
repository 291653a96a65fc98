/* test_contexts.c: CUDA contexts and streams through the fake libcuda: the
 * primary context made current when none is, kernels and streams of one
 * context refused while another is current, pointers checked against the
 * launch's context, released and destroyed contexts, a new thread's
 * current context, and a device that does not exist. Programs come from
 * the hook of rt_fixture.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_fixture.h"

START_TEST(contexts) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  ck_assert_ptr_null(current_context());
  /* no current context: the primary one of device 0 becomes current */
  fhjit_graph *g = add_graph(c, "ctx", FHJIT_R62, 2, 16);
  fhjit_cuda_kernel *k = compile_ok(g, NULL, NULL);
  CUcontext primary = current_context();
  ck_assert_ptr_nonnull(primary);
  fhjit_cuda_context cur = NULL;
  ck_assert_int_eq(fhjit_cuda_current_context(c, 0, &cur), FHJIT_OK);
  ck_assert_ptr_eq(cur, primary);
  ck_assert_ptr_eq(fhjit_cuda_kernel_context(k), primary);
  ck_assert_int_eq(fake_calls("cuDevicePrimaryCtxRetain"), 1);
  add_bufs bp;
  add_bufs_init(&bp, c, FHJIT_R62, 2, 16);
  CUstream sp;
  ck_assert_int_eq(fake_stream_create(&sp, 0), CUDA_SUCCESS);

  /* another context current: the kernel of the primary one is refused */
  CUcontext other;
  ck_assert_int_eq(fake_ctx_create(&other, 0, 0), CUDA_SUCCESS);
  ck_assert_ptr_eq(current_context(), other);
  int launched = fake_launches();
  expect(c, fhjit_cuda_launch_kernel(k, &bp.args), FHJIT_ERR_ARGUMENT, "were loaded in CUDA context",
         "compile the graph in that context first", "@ctx");
  /* a stream of the primary context while another is current */
  bp.args.stream = sp;
  expect(c, fhjit_cuda_launch(g, &bp.args), FHJIT_ERR_ARGUMENT, "belongs to CUDA context",
         "current context is", NULL);
  bp.args.stream = NULL;
  /* fhjit_cuda_launch compiles for the current context, whose pointers must
   * be its own */
  expect(c, fhjit_cuda_launch(g, &bp.args), FHJIT_ERR_ARGUMENT, "parameter table",
         "belongs to CUDA context", "not to the launch's context");
  ck_assert_int_eq(fake_launches(), launched);
  add_bufs bo;
  add_bufs_init(&bo, c, FHJIT_R62, 2, 16);
  ck_assert_msg(fhjit_cuda_launch(g, &bo.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  fake_launch l;
  fake_launch_get(fake_launches() - 1, &l);
  ck_assert_ptr_eq(l.ctx, other);
  ck_assert_int_eq(fake_live_modules(), 2);
  ck_assert_int_eq(fake_calls("cuDevicePrimaryCtxRetain"), 1);

  /* back in the primary context, with its stream: fine */
  ck_assert_int_eq(fake_ctx_set(primary), CUDA_SUCCESS);
  bp.args.stream = sp;
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &bp.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  /* with no current context at all, the kernel's own is made current */
  ck_assert_int_eq(fake_ctx_set(NULL), CUDA_SUCCESS);
  bp.args.stream = NULL;
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &bp.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_ptr_eq(current_context(), primary);

  /* releasing a CUDA context unloads what was loaded there */
  ck_assert_int_eq(fhjit_cuda_release_context(c, other), FHJIT_OK);
  ck_assert_int_eq(fake_live_modules(), 1);
  ck_assert_int_eq(fhjit_cuda_release_context(c, NULL), FHJIT_ERR_ARGUMENT);

  /* a context destroyed behind fhjit's back: refused, and no crash later */
  CUcontext doomed;
  ck_assert_int_eq(fake_ctx_create(&doomed, 0, 0), CUDA_SUCCESS);
  fhjit_graph *g2 = add_graph(c, "doomed", FHJIT_R62, 2, 32);
  fhjit_cuda_kernel *kd = compile_ok(g2, NULL, NULL);
  add_bufs bd;
  add_bufs_init(&bd, c, FHJIT_R62, 2, 32);
  ck_assert_int_eq(fake_ctx_destroy(doomed), CUDA_SUCCESS);
  ck_assert(fhjit_cuda_launch_kernel(kd, &bd.args) != FHJIT_OK);
  ck_assert_int_eq(fake_ctx_set(primary), CUDA_SUCCESS);
  expect(c, fhjit_cuda_launch_kernel(kd, &bd.args), FHJIT_ERR_ARGUMENT, "were loaded in CUDA context",
         NULL, NULL);
  fhjit_context_destroy(c);
  ck_assert_int_eq(fake_live_modules(), 1); /* the dead context's module died with it */
}
END_TEST

static void *compile_on_new_thread(void *arg) {
  fhjit_graph *g = arg;
  fhjit_cuda_options o = {.device = 1};
  return fhjit_cuda_compile(g, &o, NULL);
}

static void *current_on_new_thread(void *arg) {
  fhjit_cuda_context cur = NULL;
  fhjit_status s = fhjit_cuda_current_context(arg, 0, &cur);
  return s == FHJIT_OK ? cur : NULL;
}

START_TEST(primary_of_missing_device) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  /* a new thread has no current context; asking makes the primary current */
  pthread_t t0;
  void *cur = NULL;
  pthread_create(&t0, NULL, current_on_new_thread, c);
  pthread_join(t0, &cur);
  ck_assert_ptr_nonnull(cur);
  ck_assert_ptr_null(current_context());
  expect(c, fhjit_cuda_current_context(c, 0, NULL), FHJIT_ERR_ARGUMENT, "null result", NULL, NULL);
  fhjit_graph *g = add_graph(c, "dev1", FHJIT_R32, 1, 16);
  pthread_t t;
  void *k = (void *)1;
  pthread_create(&t, NULL, compile_on_new_thread, g);
  pthread_join(t, &k);
  ck_assert_ptr_null(k);
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "no CUDA device 1",
         "cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE", NULL);
  fhjit_context_destroy(c);
}
END_TEST

int main(void) {
  TCase *tc;
  Suite *s = rt_suite("contexts", &tc);
  tcase_add_test(tc, contexts);
  tcase_add_test(tc, primary_of_missing_device);
  return rt_run(s);
}
