/* ntt_bench.c: fhjit's NTT on the GPU through the public runtime API, with
 * the table of the hand-written CUDA baseline (bench/baselines/ntt_cuda.cu)
 * so that the two can be run in one script and compared line by line:
 * forward (coef-mont -> ntt-mont) and inverse (ntt-mont -> coef-mont), r62
 * and r32, N = 2^12, 2^14, 2^16, 2^17, 32 rows (and 64 for r32).
 *
 * Each graph is one NTT over pt<[], rows, N>. Its first launch is checked
 * bit for bit against fhjit_interpret; then CUDA events (through
 * fhjit_cuda_driver_proc) time batches of 20 launches, buffers rotated so
 * the working set is several times the 60 MB L2 where possible, and the
 * median of 21 batches is reported per transform. The floors (product rate,
 * copy bandwidth) are measured by the baseline in the same script. Last, a
 * key switch with its NTTs (the inverse NTT's prologue fused), checked and
 * timed.
 *
 *   ntt_bench [--quick] [--log2 12,14,16,17]
 *
 * Against the unit tests' fake libcuda (FHJIT_LIBCUDA) the launches run on
 * the host (a check of this program, not a measurement). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_exec.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "runtime/cuda_api.h"

static fhjit_context *ctx;
static int fake;

static void die(const char *what) {
  fprintf(stderr, "ntt_bench: %s: %s\n", what, fhjit_last_error(ctx));
  exit(1);
}

static struct {
  PFN_cuEventCreate cuEventCreate;
  PFN_cuEventRecord cuEventRecord;
  PFN_cuEventSynchronize cuEventSynchronize;
  PFN_cuEventElapsedTime cuEventElapsedTime;
  PFN_cuEventDestroy_v2 cuEventDestroy;
  PFN_cuCtxSynchronize cuCtxSynchronize;
} cu;

static void *proc(const char *name, const char *fallback) {
  void *p = fhjit_cuda_driver_proc(ctx, name);
  if (!p && fallback) p = fhjit_cuda_driver_proc(ctx, fallback);
  if (!p) die(name);
  return p;
}

#define CU_OK(call)                                                                         \
  do {                                                                                      \
    CUresult r_ = (call);                                                                   \
    if (r_ != CUDA_SUCCESS) {                                                               \
      fprintf(stderr, "ntt_bench: %s failed with %d\n", #call, (int)r_);                    \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

static uint64_t rng = 0x5eed;
static uint64_t rnd(void) {
  uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* On the fake driver: the first kernel of the program runs the whole graph
 * on the host; the others do nothing. */
static fhjit_graph *current;
static void fake_run(const fake_launch *l) {
  size_t len = strlen(l->name);
  if (!current || len < 3 || strcmp(l->name + len - 3, "_k0") != 0) return;
  /* kernel arguments: params, pstride, twiddles, src, dst */
  const void *ins[2] = {(const void *)(uintptr_t)l->params[3], (const void *)(uintptr_t)l->params[2]};
  void *res[1] = {(void *)(uintptr_t)l->params[4]};
  if (fhjit_run_host(current, (const void *)(uintptr_t)l->params[0], (int64_t)l->params[1], ins,
                     res, 1))
    die("fake execution");
}

typedef struct config {
  fhjit_radix radix;
  int log_n;
  int rows;
} config;

/* Times one transform; returns the median microseconds per transform. */
static double bench_one(const config *c, int forward, int quick, int *failures, int *nkernels) {
  fhjit_radix radix = c->radix;
  int64_t n = INT64_C(1) << c->log_n;
  int rows = c->rows;
  size_t ws = radix == FHJIT_R32 ? 4 : 8;
  uint64_t *q = malloc(sizeof *q * (size_t)rows);
  if (!q) die("out of memory");
  if (fhjit_find_primes(ctx, radix == FHJIT_R32 ? 30 : 60, UINT64_C(1) << 18, rows, q)) die("primes");

  fhjit_graph *g = fhjit_graph_create(ctx, forward ? "ntt_fwd" : "ntt_inv", radix);
  fhjit_type xt;
  memset(&xt, 0, sizeof xt);
  xt.kind = FHJIT_KIND_POLY;
  xt.rows = rows;
  xt.n = n;
  xt.domain = forward ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
  xt.form = FHJIT_FORM_MONT;
  fhjit_type tt;
  memset(&tt, 0, sizeof tt);
  tt.kind = FHJIT_KIND_TWIDDLE;
  tt.rows = rows;
  tt.n = n;
  fhjit_value x = fhjit_input(g, "x", &xt), tw = fhjit_input(g, "tw", &tt);
  fhjit_value y = fhjit_ntt(g, x, tw, forward ? FHJIT_NTT_COEF_MONT_TO_NTT : FHJIT_NTT_TO_COEF_MONT);
  if (y == FHJIT_NO_VALUE || fhjit_output(g, y, "y") || fhjit_bind(g)) die("graph");
  current = g;

  size_t words = (size_t)rows * (size_t)n, bytes = words * ws;
  void *h_tw = malloc(bytes), *h_in = malloc(bytes), *h_out = malloc(bytes), *h_ref = malloc(bytes);
  void *h_params = malloc(8 * ws * (size_t)rows);
  if (!h_tw || !h_in || !h_out || !h_ref || !h_params) die("out of memory");
  if (fhjit_twiddle_tables(ctx, radix, q, rows, n, forward ? h_tw : NULL, forward ? NULL : h_tw))
    die("twiddles");
  if (fhjit_param_table(ctx, radix, q, rows, n, 1, 1, h_params, rows)) die("parameter table");
  for (size_t i = 0; i < words; i++) {
    uint64_t v = rnd() % (2 * q[(i / (size_t)n) % (size_t)rows]);
    if (radix == FHJIT_R32) ((uint32_t *)h_in)[i] = (uint32_t)v;
    else ((uint64_t *)h_in)[i] = v;
  }
  fhjit_cuda_ptr d_params, d_tw;
  int64_t pstride;
  if (fhjit_cuda_param_table(ctx, radix, q, rows, n, 1, 1, &d_params, &pstride)) die("params");
  if (fhjit_cuda_alloc(ctx, bytes, &d_tw) || fhjit_cuda_upload(ctx, d_tw, h_tw, bytes)) die("tw");
  int nsets = (int)((size_t)(200u << 20) / (2 * bytes) + 1);
  if (nsets < 2) nsets = 2;
  if (nsets > 32) nsets = 32;
  if (quick || fake) nsets = 2;
  fhjit_cuda_ptr ins[32], outs[32];
  for (int s = 0; s < nsets; s++)
    if (fhjit_cuda_alloc(ctx, bytes, &ins[s]) || fhjit_cuda_alloc(ctx, bytes, &outs[s]) ||
        fhjit_cuda_upload(ctx, ins[s], h_in, bytes))
      die("buffers");

  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k = fhjit_cuda_compile(g, NULL, &info);
  if (!k) die("compile");
  *nkernels = info.nkernels;
  fhjit_cuda_args a;
  memset(&a, 0, sizeof a);
  a.params = d_params;
  a.pstride = pstride;
  a.ninputs = 2;
  a.nresults = 1;

  /* correctness: the first launch against the interpreter */
  fhjit_cuda_ptr in2[2] = {ins[0], d_tw};
  a.inputs = in2;
  a.results = &outs[0];
  if (fhjit_cuda_launch_kernel(k, &a)) die("launch");
  if (fhjit_cuda_download(ctx, h_out, outs[0], bytes)) die("download");
  const void *hin[2] = {h_in, h_tw};
  void *href[1] = {h_ref};
  if (fhjit_interpret(g, h_params, rows, hin, href)) die("interpret");
  if (memcmp(h_out, h_ref, bytes) != 0) {
    size_t i = 0;
    while (i < words && !memcmp((char *)h_out + i * ws, (char *)h_ref + i * ws, ws)) i++;
    printf("MISMATCH %s N=2^%d rows=%d %s: first at row %zu index %zu\n", radix == FHJIT_R32 ? "r32" : "r62",
           c->log_n, rows, forward ? "fwd" : "inv", i / (size_t)n, i % (size_t)n);
    (*failures)++;
  }

  /* timing */
  CUevent e0, e1;
  CU_OK(cu.cuEventCreate(&e0, 0));
  CU_OK(cu.cuEventCreate(&e1, 0));
  const int reps = quick || fake ? 3 : 21, per = fake ? 1 : 20;
  double samples[32];
  for (int w = 0; w < (fake ? 1 : 10); w++) {
    fhjit_cuda_ptr iw[2] = {ins[w % nsets], d_tw};
    a.inputs = iw;
    a.results = &outs[w % nsets];
    if (fhjit_cuda_launch_kernel(k, &a)) die("launch");
  }
  for (int r = 0; r < reps; r++) {
    CU_OK(cu.cuEventRecord(e0, NULL));
    for (int it = 0; it < per; it++) {
      int s = (r * per + it) % nsets;
      fhjit_cuda_ptr is[2] = {ins[s], d_tw};
      a.inputs = is;
      a.results = &outs[s];
      if (fhjit_cuda_launch_kernel(k, &a)) die("launch");
    }
    CU_OK(cu.cuEventRecord(e1, NULL));
    CU_OK(cu.cuEventSynchronize(e1));
    float ms = 0;
    CU_OK(cu.cuEventElapsedTime(&ms, e0, e1));
    samples[r] = ms * 1000.0 / per;
  }
  qsort(samples, (size_t)reps, sizeof *samples, cmp_double);
  CU_OK(cu.cuEventDestroy(e0));
  CU_OK(cu.cuEventDestroy(e1));
  for (int s = 0; s < nsets; s++) {
    fhjit_cuda_free(ctx, ins[s]);
    fhjit_cuda_free(ctx, outs[s]);
  }
  fhjit_cuda_free(ctx, d_tw);
  fhjit_cuda_free(ctx, d_params);
  free(h_tw), free(h_in), free(h_out), free(h_ref), free(h_params), free(q);
  fhjit_graph_destroy(g);
  current = NULL;
  return samples[reps / 2];
}

/* A key switch with its NTTs (examples/ntt/keyswitch.fh at N = 2^16, 16
 * rows): two forward NTTs, digit products and their sum fused into the
 * inverse NTT's first kernel. Checked against the interpreter, then timed
 * (whole chain per launch). Not on the fake driver (its executor runs one
 * graph per launch). */
static void bench_keyswitch(fhjit_radix radix, int quick, int *failures) {
  const int64_t n = INT64_C(1) << 16;
  const int rows = 16;
  size_t ws = radix == FHJIT_R32 ? 4 : 8;
  uint64_t q[16];
  if (fhjit_find_primes(ctx, radix == FHJIT_R32 ? 30 : 60, UINT64_C(1) << 18, rows, q)) die("primes");
  fhjit_graph *g = fhjit_graph_create(ctx, "keyswitch", radix);
  fhjit_type dt, kt, tt;
  memset(&dt, 0, sizeof dt);
  dt.kind = FHJIT_KIND_POLY, dt.rows = rows, dt.n = n, dt.domain = FHJIT_DOMAIN_COEF, dt.form = FHJIT_FORM_MONT;
  memset(&kt, 0, sizeof kt);
  kt.kind = FHJIT_KIND_KEY, kt.comps = 2, kt.digits = 2, kt.rows = rows, kt.n = n;
  kt.domain = FHJIT_DOMAIN_NTT, kt.form = FHJIT_FORM_MONT;
  memset(&tt, 0, sizeof tt);
  tt.kind = FHJIT_KIND_TWIDDLE, tt.rows = rows, tt.n = n;
  fhjit_value d0 = fhjit_input(g, "d0", &dt), d1 = fhjit_input(g, "d1", &dt);
  fhjit_value key = fhjit_input(g, "key", &kt), tf = fhjit_input(g, "tf", &tt), ti = fhjit_input(g, "ti", &tt);
  fhjit_value f0 = fhjit_ntt(g, d0, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_value f1 = fhjit_ntt(g, d1, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_value acc = fhjit_add_lazy(g, fhjit_keyswitch_digit_product(g, f0, key, 0, 0),
                                   fhjit_keyswitch_digit_product(g, f1, key, 1, 0));
  fhjit_value out = fhjit_ntt(g, acc, ti, FHJIT_NTT_TO_COEF_MONT);
  if (out == FHJIT_NO_VALUE || fhjit_output(g, out, "out") || fhjit_bind(g)) die("keyswitch graph");
  size_t poly = (size_t)rows * (size_t)n * ws;
  size_t sizes[5] = {poly, poly, 4 * poly, poly, poly};
  void *h[5], *h_out = malloc(2 * poly), *h_ref = malloc(2 * poly), *h_params = malloc(8 * ws * rows);
  for (int i = 0; i < 5; i++)
    if (!(h[i] = malloc(sizes[i]))) die("out of memory");
  if (!h_out || !h_ref || !h_params) die("out of memory");
  if (fhjit_twiddle_tables(ctx, radix, q, rows, n, h[3], h[4])) die("twiddles");
  if (fhjit_param_table(ctx, radix, q, rows, n, 1, 1, h_params, rows)) die("params");
  for (int i = 0; i < 3; i++)
    for (size_t e = 0; e < sizes[i] / ws; e++) {
      uint64_t v = rnd() % (2 * q[(e / (size_t)n) % (size_t)rows]);
      if (ws == 4) ((uint32_t *)h[i])[e] = (uint32_t)v;
      else ((uint64_t *)h[i])[e] = v;
    }
  fhjit_cuda_ptr d[5], d_out, d_params;
  int64_t pstride;
  if (fhjit_cuda_param_table(ctx, radix, q, rows, n, 1, 1, &d_params, &pstride)) die("params");
  for (int i = 0; i < 5; i++)
    if (fhjit_cuda_alloc(ctx, sizes[i], &d[i]) || fhjit_cuda_upload(ctx, d[i], h[i], sizes[i])) die("upload");
  if (fhjit_cuda_alloc(ctx, 2 * poly, &d_out)) die("alloc");
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k = fhjit_cuda_compile(g, NULL, &info);
  if (!k) die("compile keyswitch");
  fhjit_cuda_args a;
  memset(&a, 0, sizeof a);
  a.params = d_params, a.pstride = pstride, a.inputs = d, a.ninputs = 5, a.results = &d_out, a.nresults = 1;
  if (fhjit_cuda_launch_kernel(k, &a)) die("launch keyswitch");
  if (fhjit_cuda_download(ctx, h_out, d_out, 2 * poly)) die("download");
  const void *hin[5] = {h[0], h[1], h[2], h[3], h[4]};
  void *href[1] = {h_ref};
  if (fhjit_interpret(g, h_params, rows, hin, href)) die("interpret keyswitch");
  int bad = memcmp(h_out, h_ref, 2 * poly) != 0;
  if (bad) {
    printf("MISMATCH key switch %s\n", radix == FHJIT_R32 ? "r32" : "r62");
    (*failures)++;
  }
  CUevent e0, e1;
  CU_OK(cu.cuEventCreate(&e0, 0));
  CU_OK(cu.cuEventCreate(&e1, 0));
  double samples[32];
  int reps = quick ? 3 : 11;
  for (int r = 0; r < reps; r++) {
    CU_OK(cu.cuEventRecord(e0, NULL));
    for (int it = 0; it < 10; it++)
      if (fhjit_cuda_launch_kernel(k, &a)) die("launch keyswitch");
    CU_OK(cu.cuEventRecord(e1, NULL));
    CU_OK(cu.cuEventSynchronize(e1));
    float ms = 0;
    CU_OK(cu.cuEventElapsedTime(&ms, e0, e1));
    samples[r] = ms * 100.0;
  }
  qsort(samples, (size_t)reps, sizeof *samples, cmp_double);
  printf("%-4s key switch N=2^16 rows=%d: 2 fwd NTT + products + inverse NTT %8.2f us, %d kernels, "
         "%lld scratch bytes%s\n",
         radix == FHJIT_R32 ? "r32" : "r62", rows, samples[reps / 2], info.nkernels,
         (long long)info.scratch_bytes, bad ? " (MISMATCH)" : "");
  CU_OK(cu.cuEventDestroy(e0));
  CU_OK(cu.cuEventDestroy(e1));
  for (int i = 0; i < 5; i++) {
    fhjit_cuda_free(ctx, d[i]);
    free(h[i]);
  }
  fhjit_cuda_free(ctx, d_out);
  fhjit_cuda_free(ctx, d_params);
  free(h_out), free(h_ref), free(h_params);
  fhjit_graph_destroy(g);
}

int main(int argc, char **argv) {
  int quick = 0;
  int logs[8] = {12, 14, 16, 17}, nlogs = 4;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      quick = 1;
    } else if (!strncmp(argv[i], "--log2", 6) && (argv[i][6] == '=' || i + 1 < argc)) {
      const char *list = argv[i][6] == '=' ? argv[i] + 7 : argv[++i];
      nlogs = 0;
      for (const char *p = list; *p && nlogs < 8;) {
        logs[nlogs++] = atoi(p);
        const char *comma = strchr(p, ',');
        if (!comma) break;
        p = comma + 1;
      }
    } else {
      fprintf(stderr, "usage: ntt_bench [--quick] [--log2 12,14,16,17]\n");
      return 2;
    }
  }
  ctx = fhjit_context_create();
  if (!ctx || !fhjit_cuda_available(ctx)) die("CUDA");
  fake = fx_install(ctx, fake_run);
  fx_tag(NULL); /* every launch goes to fake_run on the fake driver */
  *(void **)&cu.cuEventCreate = proc("cuEventCreate", NULL);
  *(void **)&cu.cuEventRecord = proc("cuEventRecord", NULL);
  *(void **)&cu.cuEventSynchronize = proc("cuEventSynchronize", NULL);
  *(void **)&cu.cuEventElapsedTime = proc("cuEventElapsedTime_v2", "cuEventElapsedTime");
  *(void **)&cu.cuEventDestroy = proc("cuEventDestroy_v2", NULL);
  *(void **)&cu.cuCtxSynchronize = proc("cuCtxSynchronize", NULL);
  fhjit_clear_error(ctx);
  printf("fhjit NTT (%s)\n", fake ? "fake driver: host execution, times meaningless" : "GPU");
  printf("(times: median per transform of CUDA-event-timed batches of 20 launches, buffers rotated; "
         "fwd = coef-mont -> ntt-mont, inv = ntt-mont -> coef-mont)\n");
  int failures = 0;
  for (int radix = 1; radix >= 0; radix--)
    for (int rr = 0; rr < (radix ? 1 : 2); rr++)
      for (int li = 0; li < nlogs; li++) {
        config c = {(fhjit_radix)radix, logs[li], rr ? 64 : 32};
        int kf = 0, ki = 0;
        double f = bench_one(&c, 1, quick, &failures, &kf);
        double v = bench_one(&c, 0, quick, &failures, &ki);
        printf("%-4s N=2^%-2d rows=%-3d  fwd %8.2f us  inv %8.2f us | kernels %d + %d\n",
               radix ? "r62" : "r32", c.log_n, c.rows, f, v, kf, ki);
        fflush(stdout);
      }
  if (!fake) {
    bench_keyswitch(FHJIT_R62, quick, &failures);
    bench_keyswitch(FHJIT_R32, quick, &failures);
  }
  printf(failures ? "FAILED: %d mismatches\n" : "all results match the interpreter\n", failures);
  fhjit_context_destroy(ctx);
  return failures ? 1 : 0;
}
