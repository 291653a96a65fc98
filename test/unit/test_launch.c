/* test_launch.c: launches through the fake libcuda: the arguments as the
 * driver receives them (parameter table, pstride, inputs, results,
 * scratch: the kernel's own or the caller's), every pointer check (null,
 * misaligned, short, host or freed memory, overlaps) with and without the
 * driver's view, in-place rules, a graph with nothing to launch, the real
 * lowering's kernels, the memory and parameter-table helpers, and buffer
 * sizes of strided inputs. Programs come from the hook of rt_fixture.c
 * unless the real lowering is named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_fixture.h"

/* ---------------------------------------------------------------- launch */

START_TEST(launch_arguments) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "la", FHJIT_R32, 3, 32);
  add_bufs b;
  add_bufs_init(&b, c, FHJIT_R32, 3, 32);
  CUstream s;
  ck_assert_int_eq(fake_stream_create(&s, 0), CUDA_SUCCESS);
  b.args.stream = s;
  b.args.pstride = 5; /* larger than rows: the table must then span 7*5+3 words */
  fhjit_cuda_ptr wide = alloc_ok(c, (7 * 5 + 3) * 4);
  b.args.params = wide;
  ck_assert_int_eq(fake_launches(), 0);
  ck_assert_msg(fhjit_cuda_launch(g, &b.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(hook.calls, 1);
  ck_assert_int_eq(fake_launches(), 1);
  fake_launch l;
  ck_assert(fake_launch_get(0, &l));
  ck_assert_str_eq(l.name, "fake_la_0");
  ck_assert_ptr_eq(l.stream, s);
  ck_assert_ptr_eq(l.ctx, current_context());
  ck_assert_int_eq(l.nparams, 5);
  ck_assert(l.params[0] == wide && l.params[1] == 5 && l.params[2] == b.in[0] &&
            l.params[3] == b.in[1] && l.params[4] == b.out[0]);
  /* the lazy compile happened once */
  ck_assert_msg(fhjit_cuda_launch(g, &b.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(hook.calls, 1);
  ck_assert_int_eq(fake_launches(), 2);

  /* two kernels launch in order; scratch: the kernel's own, or the caller's */
  hook.kernels = 2;
  hook.scratch = 1;
  fhjit_graph *g2 = add_graph(c, "two", FHJIT_R32, 3, 64);
  fhjit_cuda_kernel *k = compile_ok(g2, NULL, NULL);
  add_bufs b2;
  add_bufs_init(&b2, c, FHJIT_R32, 3, 64);
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &b2.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(fake_launches(), 4);
  fake_launch l0, l1;
  fake_launch_get(2, &l0);
  fake_launch_get(3, &l1);
  ck_assert_str_eq(l0.name, "fake_two_0");
  ck_assert_str_eq(l1.name, "fake_two_1");
  ck_assert_int_eq(l1.grid[0], 8);
  ck_assert_int_eq(l0.nparams, 6);
  ck_assert(l0.params[5] != 0 && l0.params[5] == l1.params[5]);
  ck_assert_ptr_null(l0.stream);
  fhjit_cuda_ptr mine = alloc_ok(c, 4096);
  b2.args.scratch = &mine;
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &b2.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  fake_launch_get(4, &l0);
  ck_assert(l0.params[5] == mine);
  fhjit_cuda_ptr small = alloc_ok(c, 1024);
  b2.args.scratch = &small;
  expect(c, fhjit_cuda_launch_kernel(k, &b2.args), FHJIT_ERR_ARGUMENT, "scratch buffer #0",
         "spans 4096 bytes", NULL);
  ck_assert_int_eq(fake_launches(), 6);
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(bad_pointers) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  const int rows = 2, n = 64;
  const size_t bytes = rows * n * 8;
  fhjit_graph *g = add_graph(c, "bp", FHJIT_R62, rows, n);
  fhjit_cuda_kernel *k = compile_ok(g, NULL, NULL);
  add_bufs b;
  add_bufs_init(&b, c, FHJIT_R62, rows, n);
  fhjit_cuda_args a = b.args;
  fhjit_cuda_ptr in[2], out[1];
  a.inputs = in;
  a.results = out;
#define RESET() (memcpy(in, b.in, sizeof in), memcpy(out, b.out, sizeof out), a.params = b.params, \
                 a.pstride = b.pstride, a.ninputs = 2, a.nresults = 1, a.options = NULL)
  RESET();
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &a) == FHJIT_OK, "%s", fhjit_last_error(c));
  int launched = fake_launches();

  in[0] = 0;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "graph @bp", "input #0 (%a)",
         "null pointer");
  RESET();
  in[1] = b.in[1] + 8;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "input #1 (%b)",
         "misaligned pointer", "16-byte aligned");
  RESET();
  out[0] = b.out[0] + 16; /* 16 bytes past the end of its allocation */
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "result #0 (%s)", "spans 1024 bytes",
         "ends 1008 bytes after");
  RESET();
  fhjit_cuda_ptr short_buf = alloc_ok(c, bytes - 8);
  in[0] = short_buf;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "input #0 (%a)", "allocation", NULL);
  RESET();
  void *host = aligned_alloc(64, bytes);
  in[1] = (fhjit_cuda_ptr)(uintptr_t)host;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "input #1 (%b)",
         "not in memory allocated through the CUDA driver", NULL);
  free(host);
  RESET();
  fhjit_cuda_ptr freed = alloc_ok(c, bytes);
  ck_assert_int_eq(fhjit_cuda_free(c, freed), FHJIT_OK);
  out[0] = freed;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "result #0",
         "not in memory allocated", NULL);
  RESET();
  a.pstride = rows - 1;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "pstride 1", "2 columns", NULL);
  RESET();
  a.pstride = INT64_MAX;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "pstride 9223372036854775807",
         "address space", NULL);
  RESET();
  a.pstride = 3; /* the table allocation holds 8 x 2 words only */
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "parameter table", "spans 184 bytes",
         NULL);
  RESET();
  a.params = 0;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "parameter table", "null pointer",
         NULL);
  RESET();
  a.ninputs = 1;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "takes 2 inputs and 1 results",
         "give 1 and 1", NULL);
  RESET();
  a.inputs = NULL;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "null input array", NULL, NULL);
  a.inputs = in;
  RESET();
  out[0] = b.params;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "result #0 (%s) overlaps parameter table",
         NULL, NULL);
  RESET();
  expect(c, fhjit_cuda_launch_kernel(k, NULL), FHJIT_ERR_ARGUMENT, "null arguments", NULL, NULL);
  ck_assert_int_eq(fake_launches(), launched);

  /* without the driver's view, only the cheap checks remain */
  fhjit_cuda_options fast = {.flags = FHJIT_CUDA_NO_POINTER_CHECKS};
  RESET();
  a.options = &fast;
  in[0] = short_buf;
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &a) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(fake_launches(), launched + 1);
  in[1] = 0;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "input #1 (%b)", "null pointer",
         NULL);
  RESET();
  a.options = &fast;
  out[0] = b.in[0] + 16;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "result #0 (%s) overlaps input #0 (%a)",
         "same buffer", NULL);
  ck_assert_int_eq(fake_launches(), launched + 1);

  /* two results may not overlap each other */
  fhjit_graph *g2 = fhjit_graph_create(c, "two", FHJIT_R62);
  fhjit_type t = tu_poly(0, 0, NULL, rows, n);
  fhjit_value x = fhjit_input(g2, "x", &t), y = fhjit_input(g2, "y", &t);
  fhjit_output(g2, fhjit_add(g2, x, y), "s");
  fhjit_output(g2, fhjit_sub(g2, x, y), "d");
  ck_assert_int_eq(fhjit_bind(g2), FHJIT_OK);
  ck_assert_int_eq(fhjit_num_results(g2), 2);
  fhjit_cuda_ptr big = alloc_ok(c, 3 * bytes), outs[2] = {big, big + bytes - 64};
  fhjit_cuda_args a2 = b.args;
  a2.results = outs;
  a2.nresults = 2;
  expect(c, fhjit_cuda_launch(g2, &a2), FHJIT_ERR_ARGUMENT, "graph @two", "overlaps result #0",
         NULL);
  outs[1] = big + bytes;
  ck_assert_msg(fhjit_cuda_launch(g2, &a2) == FHJIT_OK, "%s", fhjit_last_error(c));
  fhjit_context_destroy(c);
#undef RESET
}
END_TEST

START_TEST(in_place) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  const int rows = 2, n = 32;
  fhjit_graph *g = add_graph(c, "ip", FHJIT_R32, rows, n);
  fhjit_cuda_kernel *k = compile_ok(g, NULL, NULL);
  add_bufs b;
  add_bufs_init(&b, c, FHJIT_R32, rows, n);
  for (int i = 0; i < 2; i++) {
    b.out[0] = b.in[i]; /* s = a + b written over a, then over b */
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &b.args) == FHJIT_OK, "%s", fhjit_last_error(c));
    fake_launch l;
    fake_launch_get(fake_launches() - 1, &l);
    ck_assert(l.params[4] == b.in[i] && l.params[2 + i] == b.in[i]);
  }
  int launched = fake_launches();

  /* an input with a layout other than dense cannot be overwritten */
  fhjit_graph *gs = fhjit_graph_create(c, "strided", FHJIT_R32);
  fhjit_type t = tu_poly(0, 0, NULL, rows, n);
  fhjit_value x = fhjit_input(gs, "x", &t), y = fhjit_input(gs, "y", &t);
  fhjit_value prod = fhjit_mul(gs, x, y);
  fhjit_set_name(gs, prod, "prod");
  fhjit_output(gs, prod, "m");
  fhjit_layout wide;
  fhjit_dense_layout(&t, &wide);
  wide.row_stride = 2 * n;
  ck_assert_int_eq(fhjit_bind_input(gs, x, NULL, &wide), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(gs), FHJIT_OK);
  size_t xbytes;
  ck_assert_int_eq(fhjit_cuda_input_bytes(gs, 0, &xbytes), FHJIT_OK);
  ck_assert_uint_eq(xbytes, (size_t)((rows - 1) * 2 * n + n) * 4);
  fhjit_cuda_ptr xs = alloc_ok(c, xbytes), ins[2] = {xs, b.in[1]}, outs[1] = {xs};
  fhjit_cuda_args a = b.args;
  a.inputs = ins;
  a.results = outs;
  expect(c, fhjit_cuda_launch(gs, &a), FHJIT_ERR_ARGUMENT, "result #0 (%prod, output m) overlaps input #0 (%x)",
         "bound with the dense layout", NULL);
  outs[0] = b.in[1];
  ck_assert_msg(fhjit_cuda_launch(gs, &a) == FHJIT_OK, "%s", fhjit_last_error(c));
  launched++;

  /* a result may only overwrite an input it is computed from */
  fhjit_graph *g3 = fhjit_graph_create(c, "three", FHJIT_R32);
  fhjit_value p = fhjit_input(g3, "p", &t), q = fhjit_input(g3, "q", &t),
              r = fhjit_input(g3, "r", &t);
  fhjit_output(g3, fhjit_add_lazy(g3, p, q), "s");
  fhjit_output(g3, r, "r_out"); /* keeps r an input of the graph */
  ck_assert_int_eq(fhjit_bind(g3), FHJIT_OK);
  fhjit_cuda_ptr rbuf = alloc_ok(c, (size_t)(rows * n) * 4), in3[3] = {b.in[0], b.in[1], rbuf},
                 out3[1] = {rbuf};
  a.inputs = in3;
  a.ninputs = 3;
  a.results = out3;
  expect(c, fhjit_cuda_launch(g3, &a), FHJIT_ERR_ARGUMENT, "overlaps input #2 (%r)",
         "not computed from that input", NULL);

  /* nor in a program of several kernels (not pointwise as launched) */
  hook.kernels = 2;
  fhjit_graph *g4 = add_graph(c, "multi", FHJIT_R32, rows, 2 * n);
  add_bufs b4;
  add_bufs_init(&b4, c, FHJIT_R32, rows, 2 * n);
  b4.out[0] = b4.in[0];
  expect(c, fhjit_cuda_launch(g4, &b4.args), FHJIT_ERR_ARGUMENT, "overlaps input #0 (%a)",
         "not pointwise", NULL);
  ck_assert_int_eq(fake_launches(), launched);
  fhjit_context_destroy(c);
}
END_TEST

/* ------------------------------------------------------ the real lowering */

START_TEST(real_lowering) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
    fhjit_context *c = fhjit_context_create();
    fhjit_graph *g = fhjit_graph_create(c, "tp", (fhjit_radix)radix);
    fhjit_type ct = tu_poly(2, 0, NULL, 3, 256);
    fhjit_value a = fhjit_input(g, "a", &ct), b = fhjit_input(g, "b", &ct);
    fhjit_value a0 = fhjit_extract(g, a, 0), a1 = fhjit_extract(g, a, 1);
    fhjit_value b0 = fhjit_extract(g, b, 0), b1 = fhjit_extract(g, b, 1);
    fhjit_value cross = fhjit_add_lazy(g, fhjit_mul(g, a0, b1), fhjit_mul(g, a1, b0));
    fhjit_value parts[3] = {fhjit_mul(g, a0, b0), cross, fhjit_mul(g, a1, b1)};
    ck_assert_int_eq(fhjit_output(g, fhjit_pack(g, 3, parts), "d"), FHJIT_OK);
    ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
    fhjit_cuda_compile_info info;
    fhjit_cuda_kernel *k = compile_ok(g, NULL, &info);
    ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
    ck_assert_int_eq(info.nkernels, 1);
    ck_assert(info.lower_ms > 0);
    size_t ws = radix == FHJIT_R32 ? 4 : 8, ibytes, rbytes;
    ck_assert_int_eq(fhjit_cuda_input_bytes(g, 1, &ibytes), FHJIT_OK);
    ck_assert_int_eq(fhjit_cuda_result_bytes(g, 0, &rbytes), FHJIT_OK);
    ck_assert_uint_eq(ibytes, 2 * 3 * 256 * ws);
    ck_assert_uint_eq(rbytes, 3 * 3 * 256 * ws);
    fhjit_cuda_ptr params = alloc_ok(c, 8 * 3 * ws), ins[2] = {alloc_ok(c, ibytes), alloc_ok(c, ibytes)},
                   outs[1] = {alloc_ok(c, rbytes)};
    fhjit_cuda_args args = {.params = params, .pstride = 3, .inputs = ins, .ninputs = 2,
                            .results = outs, .nresults = 1};
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    fake_launch l;
    ck_assert(fake_launch_get(fake_launches() - 1, &l));
    /* the fake found the kernel in LLVM's PTX, with its parameters */
    ck_assert_int_eq(l.nparams, 5);
    ck_assert(l.params[0] == params && l.params[1] == 3 && l.params[2] == ins[0] &&
              l.params[3] == ins[1] && l.params[4] == outs[0]);
    ck_assert_uint_ge((uint64_t)l.grid[0] * l.block[0], 1);
    fhjit_context_destroy(c);
  }
}
END_TEST

START_TEST(nothing_to_launch) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(c, "view", FHJIT_R32);
  fhjit_type ct = tu_poly(2, 0, NULL, 1, 16);
  fhjit_value a = fhjit_input(g, "a", &ct);
  fhjit_output(g, fhjit_extract(g, a, 1), "a1");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_num_results(g), 0);
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k = compile_ok(g, NULL, &info);
  ck_assert_int_eq(info.nkernels, 0);
  ck_assert_int_eq(fake_calls("cuLinkComplete"), 0);
  fhjit_cuda_ptr params = alloc_ok(c, 64), in = alloc_ok(c, 2 * 16 * 4);
  fhjit_cuda_args args = {.params = params, .pstride = 1, .inputs = &in, .ninputs = 1};
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(fake_launches(), 0);
  fhjit_context_destroy(c);
}
END_TEST

/* ----------------------------------------------------------------- helpers */

START_TEST(memory_helpers) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  uint64_t host[100], back[100];
  for (int i = 0; i < 100; i++) host[i] = UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(i + 1);
  fhjit_cuda_ptr p = alloc_ok(c, sizeof host);
  ck_assert_int_eq(fhjit_cuda_upload(c, p, host, sizeof host), FHJIT_OK);
  memset(back, 0, sizeof back);
  ck_assert_int_eq(fhjit_cuda_download(c, back, p, sizeof back), FHJIT_OK);
  ck_assert_mem_eq(back, host, sizeof host);
  expect(c, fhjit_cuda_upload(c, p, host, sizeof host + 8), FHJIT_ERR_CUDA,
         "cuMemcpyHtoD_v2 failed: CUDA_ERROR_INVALID_VALUE", "808 bytes", NULL);
  expect(c, fhjit_cuda_download(c, NULL, p, 8), FHJIT_ERR_ARGUMENT, "null pointer", NULL, NULL);
  ck_assert_int_eq(fhjit_cuda_upload(c, p, host, 0), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_free(c, p), FHJIT_OK);
  expect(c, fhjit_cuda_free(c, p), FHJIT_ERR_CUDA, "cuMemFree_v2 failed", NULL, NULL);
  ck_assert_int_eq(fhjit_cuda_free(c, 0), FHJIT_OK);

  /* the parameter table helper uploads exactly fhjit_param_table's words */
  uint64_t moduli[3] = {Q62, UINT64_C(576460752303423649), UINT64_C(1152921504606584833)};
  for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
    uint64_t m[3];
    for (int i = 0; i < 3; i++) m[i] = radix == FHJIT_R32 ? (i ? 134176769 : Q32) : moduli[i];
    m[2] = radix == FHJIT_R32 ? 1032193 : m[2];
    fhjit_cuda_ptr table;
    int64_t pstride;
    ck_assert_msg(fhjit_cuda_param_table(c, (fhjit_radix)radix, m, 3, 1024, 0, 7, &table,
                                         &pstride) == FHJIT_OK,
                  "%s", fhjit_last_error(c));
    ck_assert_int_eq(pstride, 3);
    size_t ws = radix == FHJIT_R32 ? 4 : 8;
    unsigned char want[8 * 3 * 8], got[8 * 3 * 8];
    ck_assert_int_eq(fhjit_param_table(c, (fhjit_radix)radix, m, 3, 1024, 0, 7, want, 3), FHJIT_OK);
    ck_assert_int_eq(fhjit_cuda_download(c, got, table, 24 * ws), FHJIT_OK);
    ck_assert_mem_eq(got, want, 24 * ws);
    ck_assert_int_eq(fhjit_cuda_free(c, table), FHJIT_OK);
  }
  int live = fake_live_allocs();
  uint64_t even = 1000;
  fhjit_cuda_ptr table = 9;
  int64_t pstride;
  ck_assert_int_eq(fhjit_cuda_param_table(c, FHJIT_R62, &even, 1, 0, 0, 1, &table, &pstride),
                   FHJIT_ERR_MODULUS);
  ck_assert(table == 0);
  setenv("FAKE_CUDA_FAIL", "cuMemcpyHtoD", 1);
  expect(c, fhjit_cuda_param_table(c, FHJIT_R62, moduli, 1, 0, 0, 1, &table, &pstride),
         FHJIT_ERR_CUDA, "fhjit_cuda_upload", "cuMemcpyHtoD_v2 failed", NULL);
  ck_assert_int_eq(fake_live_allocs(), live);
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(buffer_sizes) {
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(c, "sz", FHJIT_R62);
  const int64_t batch[2] = {3, 1};
  fhjit_type ct = tu_poly(2, 2, batch, 4, 8), pt = tu_poly(0, 2, batch, 4, 8);
  fhjit_value a = fhjit_input(g, "a", &ct), p = fhjit_input(g, "p", &pt);
  fhjit_output(g, fhjit_mul_plain(g, a, p), "m");
  size_t bytes;
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 0, &bytes), FHJIT_ERR_ARGUMENT);
  fhjit_layout l = {.offset = 5, .comp_stride = 1000, .batch_stride = {100, 7}, .row_stride = 20,
                    .index_stride = 2};
  ck_assert_int_eq(fhjit_bind_input(g, a, NULL, &l), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 0, &bytes), FHJIT_OK);
  ck_assert_uint_eq(bytes, (5 + 1000 + 2 * 100 + 0 * 7 + 3 * 20 + 7 * 2 + 1) * 8);
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 1, &bytes), FHJIT_OK);
  ck_assert_uint_eq(bytes, 3 * 4 * 8 * 8);
  ck_assert_int_eq(fhjit_cuda_result_bytes(g, 0, &bytes), FHJIT_OK);
  ck_assert_uint_eq(bytes, 2 * 3 * 4 * 8 * 8);
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 2, &bytes), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(c), "has no input #2"));
  ck_assert_int_eq(fhjit_cuda_result_bytes(g, -1, &bytes), FHJIT_ERR_ARGUMENT);
  fhjit_context_destroy(c);
}
END_TEST

int main(void) {
  TCase *tc;
  Suite *s = rt_suite("launch", &tc);
  tcase_add_test(tc, launch_arguments);
  tcase_add_test(tc, bad_pointers);
  tcase_add_test(tc, in_place);
  tcase_add_test(tc, real_lowering);
  tcase_add_test(tc, nothing_to_launch);
  tcase_add_test(tc, memory_helpers);
  tcase_add_test(tc, buffer_sizes);
  return rt_run(s);
}
