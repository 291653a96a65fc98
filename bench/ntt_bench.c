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
 * key switch with its NTTs, fused (prologue and epilogue) against the same
 * work as separate kernels, both checked and timed.
 *
 *   ntt_bench [--quick] [--log2 12,14,16,17] [--rows R] [--radix r62,r32]
 *             [--no-keyswitch] [--json FILE]
 *   ntt_bench --sweep [--plans 'PLAN;PLAN'] [--reps N] [--log2 ..] [--rows R]
 *   ntt_bench --racecheck [--sweep]
 *   ntt_bench --cluster [--quick] [--log2 14,16,17] [--rows R] [--radix ..]
 *
 * --cluster: every transform under ntt_schedule=two_kernel and =cluster
 * (docs/ntt-cluster.md) on the same data in the same run, both checked
 * against the interpreter; one line per direction with both times.
 * --sweep: for each size, every candidate schedule (FHJIT_NTT_PLAN strings,
 * lib/lower/ntt.h; a built-in grid, or --plans; the default first), each
 * checked against the interpreter and timed forward and inverse, one line
 * per plan, the best plan per size last (it and the default timed once more:
 * the winner must beat the default's better timing with its worse one).
 * --racecheck: tiny sizes (2^10 one kernel, 2^14 two kernels, 2 rows),
 * one launch per measurement, for compute-sanitizer.
 * --json FILE: every figure printed also as JSON, {"fhjit": version,
 * "fake_driver": 0|1, "results": [...]}, one object per line of the
 * table ("kind": "ntt"), per sweep line ("sweep", "sweep_best") and per
 * key switch ("keyswitch"); bench/plot.py reads it.
 *
 * FHJIT_BENCH_TWIDDLES (an ablation of the twiddle tables' traffic, every
 * result still checked): "one" gives every row the first row's modulus
 * (each row still reads its own copy of the table), "shared" also binds
 * the twiddle table with row stride 0, so every row reads one table (a
 * row's worth of words, resident in the L2). The two differ only in the
 * twiddle words fetched from memory.
 *
 * Against the unit tests' fake libcuda (FHJIT_LIBCUDA) the launches run on
 * the host (a check of this program, not a measurement). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "fake_exec.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "runtime/cuda_api.h"

static fhjit_context *ctx;
static int fake;
/* launches per timed batch and warm-up launches (--racecheck: 1 and 0) */
static int per_batch = 20, warmups = 10;

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
static uint64_t rnd(void) { return bu_splitmix(&rng); }

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

/* One transform's data, on the host and the device, shared by every plan
 * timed on it; the interpreter's result is computed once. */
typedef struct ncase {
  config c;
  int forward;
  size_t ws, words, bytes;
  uint64_t *q;
  void *h_tw, *h_in, *h_out, *h_ref, *h_params;
  int have_ref;
  fhjit_cuda_ptr d_params, d_tw;
  int64_t pstride;
  int nsets;
  fhjit_cuda_ptr ins[32], outs[32];
} ncase;

static const char *rname(fhjit_radix r) { return r == FHJIT_R32 ? "r32" : "r62"; }

/* FHJIT_BENCH_TWIDDLES: 0 unset, 1 "one", 2 "shared" (top comment). */
static int twiddle_ablation(void) {
  const char *e = getenv("FHJIT_BENCH_TWIDDLES");
  if (!e || !*e) return 0;
  if (!strcmp(e, "one")) return 1;
  if (!strcmp(e, "shared")) return 2;
  fprintf(stderr, "ntt_bench: FHJIT_BENCH_TWIDDLES must be one or shared, not '%s'\n", e);
  exit(2);
}

static void case_init(ncase *k, const config *c, int forward, int quick) {
  memset(k, 0, sizeof *k);
  k->c = *c;
  k->forward = forward;
  fhjit_radix radix = c->radix;
  int64_t n = INT64_C(1) << c->log_n;
  int rows = c->rows;
  k->ws = radix == FHJIT_R32 ? 4 : 8;
  k->q = malloc(sizeof *k->q * (size_t)rows);
  if (!k->q) die("out of memory");
  if (fhjit_find_primes(ctx, radix == FHJIT_R32 ? 30 : 60, UINT64_C(1) << 18, rows, k->q)) die("primes");
  if (twiddle_ablation())
    for (int r = 1; r < rows; r++) k->q[r] = k->q[0];
  k->words = (size_t)rows * (size_t)n;
  k->bytes = k->words * k->ws;
  k->h_tw = malloc(k->bytes), k->h_in = malloc(k->bytes), k->h_out = malloc(k->bytes);
  k->h_ref = malloc(k->bytes), k->h_params = malloc(8 * k->ws * (size_t)rows);
  if (!k->h_tw || !k->h_in || !k->h_out || !k->h_ref || !k->h_params) die("out of memory");
  if (fhjit_twiddle_tables(ctx, radix, k->q, rows, n, forward ? k->h_tw : NULL, forward ? NULL : k->h_tw))
    die("twiddles");
  if (fhjit_param_table(ctx, radix, k->q, rows, n, 1, 1, k->h_params, rows)) die("parameter table");
  for (size_t i = 0; i < k->words; i++) {
    uint64_t v = rnd() % (2 * k->q[(i / (size_t)n) % (size_t)rows]);
    if (radix == FHJIT_R32) ((uint32_t *)k->h_in)[i] = (uint32_t)v;
    else ((uint64_t *)k->h_in)[i] = v;
  }
  if (fhjit_cuda_param_table(ctx, radix, k->q, rows, n, 1, 1, &k->d_params, &k->pstride)) die("params");
  if (fhjit_cuda_alloc(ctx, k->bytes, &k->d_tw) || fhjit_cuda_upload(ctx, k->d_tw, k->h_tw, k->bytes))
    die("tw");
  k->nsets = (int)((size_t)(200u << 20) / (2 * k->bytes) + 1);
  if (k->nsets < 2) k->nsets = 2;
  if (k->nsets > 32) k->nsets = 32;
  if (quick || fake) k->nsets = 2;
  for (int s = 0; s < k->nsets; s++)
    if (fhjit_cuda_alloc(ctx, k->bytes, &k->ins[s]) || fhjit_cuda_alloc(ctx, k->bytes, &k->outs[s]) ||
        fhjit_cuda_upload(ctx, k->ins[s], k->h_in, k->bytes))
      die("buffers");
}

static void case_free(ncase *k) {
  for (int s = 0; s < k->nsets; s++) {
    fhjit_cuda_free(ctx, k->ins[s]);
    fhjit_cuda_free(ctx, k->outs[s]);
  }
  fhjit_cuda_free(ctx, k->d_tw);
  fhjit_cuda_free(ctx, k->d_params);
  free(k->h_tw), free(k->h_in), free(k->h_out), free(k->h_ref), free(k->h_params), free(k->q);
}

/* The transform as a graph, bound (the NTT plan is chosen when it is
 * compiled, from FHJIT_NTT_PLAN as it is then). */
static fhjit_graph *case_graph(const ncase *k) {
  fhjit_graph *g = fhjit_graph_create(ctx, k->forward ? "ntt_fwd" : "ntt_inv", k->c.radix);
  fhjit_type xt;
  memset(&xt, 0, sizeof xt);
  xt.kind = FHJIT_KIND_POLY;
  xt.rows = k->c.rows;
  xt.n = INT64_C(1) << k->c.log_n;
  xt.domain = k->forward ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
  xt.form = FHJIT_FORM_MONT;
  fhjit_type tt;
  memset(&tt, 0, sizeof tt);
  tt.kind = FHJIT_KIND_TWIDDLE;
  tt.rows = k->c.rows;
  tt.n = xt.n;
  fhjit_value x = fhjit_input(g, "x", &xt), tw = fhjit_input(g, "tw", &tt);
  fhjit_value y = fhjit_ntt(g, x, tw, k->forward ? FHJIT_NTT_COEF_MONT_TO_NTT : FHJIT_NTT_TO_COEF_MONT);
  if (twiddle_ablation() == 2) {
    fhjit_layout l;
    if (fhjit_dense_layout(&tt, &l)) die("layout");
    l.row_stride = 0;
    if (fhjit_bind_input(g, tw, NULL, &l)) die("twiddle layout");
  }
  if (y == FHJIT_NO_VALUE || fhjit_output(g, y, "y") || fhjit_bind(g)) die("graph");
  return g;
}

/* One launch on input set 0 into a poisoned output, compared with the
 * interpreter's result. */
static void check_launch(ncase *k, fhjit_cuda_kernel *kern, fhjit_cuda_args *a, const char *when,
                         int *mismatch) {
  memset(k->h_out, 0xA5, k->bytes);
  if (fhjit_cuda_upload(ctx, k->outs[0], k->h_out, k->bytes)) die("upload");
  fhjit_cuda_ptr in2[2] = {k->ins[0], k->d_tw};
  a->inputs = in2;
  a->results = &k->outs[0];
  if (fhjit_cuda_launch_kernel(kern, a)) die("launch");
  if (fhjit_cuda_download(ctx, k->h_out, k->outs[0], k->bytes)) die("download");
  if (memcmp(k->h_out, k->h_ref, k->bytes) != 0) {
    size_t i = 0, n = (size_t)1 << k->c.log_n;
    while (i < k->words && !memcmp((char *)k->h_out + i * k->ws, (char *)k->h_ref + i * k->ws, k->ws)) i++;
    printf("MISMATCH %s N=2^%d rows=%d %s%s: first at row %zu index %zu\n", rname(k->c.radix),
           k->c.log_n, k->c.rows, k->forward ? "fwd" : "inv", when, i / n, i % n);
    *mismatch = 1;
  }
}

/* Compiles the transform under the current FHJIT_NTT_PLAN, checks its first
 * launch against the interpreter and times it: the median microseconds per
 * transform, or -1 when the plan is refused (the message is printed). */
static double case_run(ncase *k, int reps, int *mismatch, int *nkernels) {
  fhjit_graph *g = case_graph(k);
  *mismatch = 0;
  if (!k->have_ref) {
    const void *hin[2] = {k->h_in, k->h_tw};
    void *href[1] = {k->h_ref};
    if (fhjit_interpret(g, k->h_params, k->c.rows, hin, href)) die("interpret");
    k->have_ref = 1;
  }
  current = g;
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *kern = fhjit_cuda_compile(g, NULL, &info);
  if (!kern) {
    printf("  refused: %s\n", fhjit_last_error(ctx));
    fhjit_clear_error(ctx);
    fhjit_graph_destroy(g);
    current = NULL;
    return -1;
  }
  *nkernels = info.nkernels;
  fhjit_cuda_args a;
  memset(&a, 0, sizeof a);
  a.params = k->d_params;
  a.pstride = k->pstride;
  a.ninputs = 2;
  a.nresults = 1;

  /* correctness: the first launch against the interpreter (output poisoned
   * first, so a kernel that writes nothing cannot pass on an earlier plan's
   * result) */
  check_launch(k, kern, &a, "", mismatch);

  /* timing */
  CUevent e0, e1;
  CU_OK(cu.cuEventCreate(&e0, 0));
  CU_OK(cu.cuEventCreate(&e1, 0));
  const int per = fake ? 1 : per_batch;
  if (fake) reps = 1;
  double samples[64];
  if (reps > 64) reps = 64;
  for (int w = 0; w < (fake ? 0 : warmups); w++) {
    fhjit_cuda_ptr iw[2] = {k->ins[w % k->nsets], k->d_tw};
    a.inputs = iw;
    a.results = &k->outs[w % k->nsets];
    if (fhjit_cuda_launch_kernel(kern, &a)) die("launch");
  }
  for (int r = 0; r < reps; r++) {
    CU_OK(cu.cuEventRecord(e0, NULL));
    for (int it = 0; it < per; it++) {
      int s = (r * per + it) % k->nsets;
      fhjit_cuda_ptr is[2] = {k->ins[s], k->d_tw};
      a.inputs = is;
      a.results = &k->outs[s];
      if (fhjit_cuda_launch_kernel(kern, &a)) die("launch");
    }
    CU_OK(cu.cuEventRecord(e1, NULL));
    CU_OK(cu.cuEventSynchronize(e1));
    float ms = 0;
    CU_OK(cu.cuEventElapsedTime(&ms, e0, e1));
    samples[r] = ms * 1000.0 / per;
  }
  /* and after the timed launches, which reused the kernel's per-row
   * completion counters hundreds of times: once more so, then once with
   * the caller's scratch (none: own = 0, the grid-wide wait) */
  check_launch(k, kern, &a, " after the timed launches", mismatch);
  fhjit_cuda_ptr no_scratch[1] = {0};
  a.scratch = no_scratch;
  check_launch(k, kern, &a, " with the caller's scratch", mismatch);
  a.scratch = NULL;
  qsort(samples, (size_t)reps, sizeof *samples, bu_cmp_double);
  CU_OK(cu.cuEventDestroy(e0));
  CU_OK(cu.cuEventDestroy(e1));
  fhjit_graph_destroy(g);
  current = NULL;
  return samples[reps / 2];
}

/* Times one transform with the default plan (or FHJIT_NTT_PLAN as set). */
static double bench_one(const config *c, int forward, int quick, int *failures, int *nkernels) {
  ncase k;
  case_init(&k, c, forward, quick);
  int bad = 0;
  double t = case_run(&k, per_batch == 1 ? 1 : quick ? 3 : 21, &bad, nkernels);
  if (t < 0) die("compile");
  *failures += bad;
  case_free(&k);
  return t;
}

/* ---------------------------------------------- cluster vs two kernels */

/* --cluster: each transform under ntt_schedule=two_kernel and =cluster on
 * the same data in the same run, both checked against the interpreter
 * (first launch, after the timed ones, with the caller's scratch), one
 * line per configuration: times, the cluster's speed-up, and the bytes of
 * one pass over memory (read once, written once) over each time, to set
 * beside the copy bandwidth the baseline measures (ntt-run.sh). */
static void bench_cluster(const config *c, int quick, int *failures) {
  static const char *const sched[2] = {"two_kernel", "cluster"};
  /* FHJIT_NTT_PLAN's own cluster=K would take the two-kernel column to the
   * cluster schedule too: that column appends cluster=0 */
  const char *env = getenv("FHJIT_NTT_PLAN");
  char two[512];
  snprintf(two, sizeof two, "%s%scluster=0", env && *env ? env : "", env && *env ? "," : "");
  const char *plan[2] = {two, env && *env ? env : NULL};
  double t[2][2];
  int nk[2][2];
  for (int dir = 0; dir < 2; dir++) {
    ncase k;
    case_init(&k, c, dir == 0, quick);
    for (int s = 0; s < 2; s++) {
      if (fhjit_context_set_option(ctx, "ntt_schedule", sched[s]) ||
          fhjit_context_set_option(ctx, "ntt_plan", plan[s]))
        die("ntt_schedule / ntt_plan");
      int bad = 0;
      t[dir][s] = case_run(&k, per_batch == 1 ? 1 : quick ? 3 : 21, &bad, &nk[dir][s]);
      if (t[dir][s] < 0) die("compile");
      *failures += bad;
    }
    case_free(&k);
  }
  fhjit_context_set_option(ctx, "ntt_schedule", NULL);
  fhjit_context_set_option(ctx, "ntt_plan", plan[1]);
  double bytes = 2.0 * (double)c->rows * (double)(INT64_C(1) << c->log_n) * (c->radix == FHJIT_R32 ? 4 : 8);
  for (int dir = 0; dir < 2; dir++) {
    printf("%-4s N=2^%-2d rows=%-3d %s  two-kernel %8.2f us (%d k, %6.0f GB/s)  cluster %8.2f us "
           "(%d k, %6.0f GB/s)  cluster/two %.3f\n",
           rname(c->radix), c->log_n, c->rows, dir ? "inv" : "fwd", t[dir][0], nk[dir][0],
           bytes / t[dir][0] / 1e3, t[dir][1], nk[dir][1], bytes / t[dir][1] / 1e3,
           t[dir][1] / t[dir][0]);
    bu_json_item("\"kind\": \"ntt_cluster\", \"radix\": \"%s\", \"log2\": %d, \"rows\": %d, "
                 "\"dir\": \"%s\", \"two_kernel_us\": %.3f, \"cluster_us\": %.3f, "
                 "\"kernels_two\": %d, \"kernels_cluster\": %d, \"one_pass_bytes\": %.0f",
                 rname(c->radix), c->log_n, c->rows, dir ? "inv" : "fwd", t[dir][0], t[dir][1],
                 nk[dir][0], nk[dir][1], bytes);
  }
  fflush(stdout);
}

/* ------------------------------------------------------------ the sweep */

/* Candidate schedules (FHJIT_NTT_PLAN strings; "" is the default) per
 * radix and size: the plan space that the GPU measurements choose from.
 * Small N: two kernels instead of whole rows per block (more blocks);
 * every N: fewer columns per column block (smaller blocks, more of them
 * per SM), fewer chunk threads, words per thread, padding, split point. */
static int sweep_plans(fhjit_radix radix, int log_n, const char **out) {
  int n = 0;
  out[n++] = "";
  if (log_n <= 12) {
    /* the default splits small N with few rows into two kernels; one=12
     * forces whole rows per block */
    out[n++] = "one=12";
    out[n++] = "tws=1";
    out[n++] = "tws=2";
    out[n++] = "one=12,tws=2";
    if (radix == FHJIT_R62) {
      out[n++] = "e=2";
      out[n++] = "one=11";
      out[n++] = "one=11,c_col=3,t=7";
      out[n++] = "one=11,c_col=2,t=5";
      out[n++] = "one=11,e=2,c_col=2,t=6";
      out[n++] = "one=11,c_col=3,t=6,minb=4";
      out[n++] = "one=11,n1=5,c_col=2,t=6";
    } else {
      out[n++] = "e=3";
      out[n++] = "one=11";
      out[n++] = "one=11,c_col=4,t=7";
      out[n++] = "one=12,t=7";
      out[n++] = "one=11,e=3,c_col=3,t=6";
      out[n++] = "one=11,e=3,c_col=4,t=7";
      out[n++] = "one=11,c_col=3,t=5";
    }
    return n;
  }
  if (radix == FHJIT_R62) {
    out[n++] = "c_col=3";
    out[n++] = "c_col=2";
    out[n++] = "c_col=3,t=7";
    out[n++] = "c_col=2,t=7,pad_col=4";
    out[n++] = "e=4,c_col=2";
    out[n++] = "e_chunk=4,c_col=3";
    out[n++] = "c_col=3,minb=3";
    out[n++] = "c_col=3,pad_chunk=0";
    out[n++] = "c_col=3,pad_col=4";
    out[n++] = log_n == 17 ? "n1=9,c_col=3" : log_n == 16 ? "n1=7,c_col=3" : "n1=6,c_col=3";
    out[n++] = "e=2,c_col=3,t=7";
    out[n++] = "tws=1";
    out[n++] = "tws=2";
    out[n++] = "c_col=3,t=7,tws=2";
    out[n++] = "c_col=4,t=7,tws=2";
  } else {
    out[n++] = "c_col=4";
    out[n++] = "c_col=3";
    out[n++] = "c_col=4,t=7";
    out[n++] = "e=3,c_col=4";
    out[n++] = "e=3,c_col=3,t=7";
    out[n++] = "e_col=3,c_col=4";
    out[n++] = "c_col=3,pad_col=5";
    out[n++] = "c_col=4,pad_col=4";
    out[n++] = "c_col=4,minb=2";
    out[n++] = log_n == 17 ? "n1=9,c_col=4" : log_n == 16 ? "n1=7,c_col=4" : "n1=6,c_col=4";
    out[n++] = "tws=1";
    out[n++] = "tws=2";
    out[n++] = "c_col=4,t=7,tws=1";
  }
  return n;
}

/* Splits "a;b;c" (user plans) into out[]; returns the count. */
static int split_plans(char *list, const char **out, int max) {
  int n = 0;
  out[n++] = "";
  for (char *p = strtok(list, ";"); p && n < max; p = strtok(NULL, ";")) out[n++] = p;
  return n;
}

/* Every plan of the grid on every size: checked (first launch against the
 * interpreter), timed forward and inverse, one line each; the best plan per
 * size (by forward + inverse) last. */
static void sweep(const config *cfgs, int ncfg, char *user_plans, int reps, int *failures) {
  char best_lines[16][256];
  for (int ci = 0; ci < ncfg; ci++) {
    const config *c = &cfgs[ci];
    const char *plans[64];
    /* strtok cuts the list it splits: each size splits its own copy */
    char *list = user_plans ? strdup(user_plans) : NULL;
    int np = list ? split_plans(list, plans, 64) : sweep_plans(c->radix, c->log_n, plans);
    ncase kf, ki;
    case_init(&kf, c, 1, reps <= 3);
    case_init(&ki, c, 0, reps <= 3);
    double best = 1e30, base = 0;
    const char *best_plan = "";
    /* one untimed round of the first plan: at small N the first timing of a
     * size ran up to 1.25x slow (clocks, caches), which favoured every plan
     * over the default measured first */
    if (np > 0) {
      int bf = 0, kfn = 0;
      setenv("FHJIT_NTT_PLAN", plans[0], 1);
      (void)case_run(&kf, reps, &bf, &kfn);
    }
    for (int pi = 0; pi < np; pi++) {
      setenv("FHJIT_NTT_PLAN", plans[pi], 1);
      int bf = 0, bi = 0, kfn = 0, kin = 0;
      double f = case_run(&kf, reps, &bf, &kfn);
      double v = f < 0 ? -1 : case_run(&ki, reps, &bi, &kin);
      if (f < 0 || v < 0) {
        printf("sweep %s N=2^%-2d rows=%-3d plan %-34s refused\n", rname(c->radix), c->log_n, c->rows,
               *plans[pi] ? plans[pi] : "(default)");
        continue;
      }
      *failures += bf + bi;
      printf("sweep %s N=2^%-2d rows=%-3d plan %-34s fwd %8.2f us  inv %8.2f us  sum %8.2f | "
             "kernels %d + %d%s\n",
             rname(c->radix), c->log_n, c->rows, *plans[pi] ? plans[pi] : "(default)", f, v, f + v,
             kfn, kin, bf || bi ? "  MISMATCH" : "");
      fflush(stdout);
      bu_json_item("\"kind\": \"sweep\", \"radix\": \"%s\", \"log2\": %d, \"rows\": %d, "
                "\"plan\": \"%s\", \"fwd_us\": %.3f, \"inv_us\": %.3f, \"kernels_fwd\": %d, "
                "\"kernels_inv\": %d, \"exact\": %d",
                rname(c->radix), c->log_n, c->rows, plans[pi], f, v, kfn, kin, !bf && !bi);
      if (pi == 0) base = f + v;
      if (!bf && !bi && f + v < best) best = f + v, best_plan = plans[pi];
    }
    /* the default and the winner once more, one after the other: small
     * sizes drift by up to 30% between two timings of one plan in a sweep
     * (2^12: clocks, L2), so a winner must hold against the default's
     * better timing, with its own second timing */
    if (np > 0 && best < 1e30) {
      double again[2];
      const char *which[2] = {plans[0], best_plan};
      for (int j = 0; j < 2; j++) {
        int bf = 0, bi = 0, kfn = 0, kin = 0;
        setenv("FHJIT_NTT_PLAN", which[j], 1);
        double f = case_run(&kf, reps, &bf, &kfn), v = case_run(&ki, reps, &bi, &kin);
        *failures += bf + bi;
        again[j] = f < 0 || v < 0 ? 1e30 : f + v;
      }
      if (again[0] < base) base = again[0];
      if (again[1] > best) best = again[1];
      if (best > base) best = base, best_plan = plans[0];
    }
    unsetenv("FHJIT_NTT_PLAN");
    bu_json_item("\"kind\": \"sweep_best\", \"radix\": \"%s\", \"log2\": %d, \"rows\": %d, "
              "\"plan\": \"%s\", \"sum_us\": %.3f, \"default_sum_us\": %.3f",
              rname(c->radix), c->log_n, c->rows, best_plan, best, base);
    snprintf(best_lines[ci % 16], sizeof best_lines[0],
             "best %s N=2^%-2d rows=%-3d plan %-34s sum %8.2f us (default %8.2f us, %.2fx; "
             "each the worse of two timings for the winner, the better for the default)",
             rname(c->radix), c->log_n, c->rows, *best_plan ? best_plan : "(default)", best, base,
             base / best);
    free(list);
    case_free(&kf);
    case_free(&ki);
  }
  for (int ci = 0; ci < ncfg && ci < 16; ci++) printf("%s\n", best_lines[ci]);
}

/* Median microseconds of `reps` batches of 10 runs of fn(arg). */
static double time_batches(void (*fn)(void *), void *arg, int reps) {
  CUevent e0, e1;
  CU_OK(cu.cuEventCreate(&e0, 0));
  CU_OK(cu.cuEventCreate(&e1, 0));
  double samples[32];
  if (reps > 32) reps = 32;
  for (int w = 0; w < 3; w++) fn(arg);
  for (int r = 0; r < reps; r++) {
    CU_OK(cu.cuEventRecord(e0, NULL));
    for (int it = 0; it < 10; it++) fn(arg);
    CU_OK(cu.cuEventRecord(e1, NULL));
    CU_OK(cu.cuEventSynchronize(e1));
    float ms = 0;
    CU_OK(cu.cuEventElapsedTime(&ms, e0, e1));
    samples[r] = ms * 100.0;
  }
  qsort(samples, (size_t)reps, sizeof *samples, bu_cmp_double);
  CU_OK(cu.cuEventDestroy(e0));
  CU_OK(cu.cuEventDestroy(e1));
  return samples[reps / 2];
}

/* The key switch, fused and as separate kernels (same inputs, same work). */
typedef struct ks_run {
  fhjit_cuda_kernel *fused, *part[5];
  fhjit_cuda_args fa, pa[5];
} ks_run;

static void ks_fused(void *arg) {
  ks_run *r = arg;
  if (fhjit_cuda_launch_kernel(r->fused, &r->fa)) die("launch keyswitch");
}

static fhjit_graph *ks_graphs[5];

static void ks_parts(void *arg) {
  ks_run *r = arg;
  for (int i = 0; i < 5; i++) {
    /* fake driver: NTT graphs through fake_run, pointwise ones tagged */
    current = ks_graphs[i];
    fx_tag(i == 2 || i == 4 ? ks_graphs[i] : NULL);
    if (fhjit_cuda_launch_kernel(r->part[i], &r->pa[i])) die("launch keyswitch part");
  }
  current = NULL;
  fx_tag(NULL);
}

static fhjit_type ks_poly(int comps, int rows, int64_t n, fhjit_domain d) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY, t.comps = comps, t.rows = rows, t.n = n, t.domain = d;
  t.form = FHJIT_FORM_MONT;
  return t;
}

static fhjit_graph *ks_bind(fhjit_graph *g, fhjit_value out) {
  if (out == FHJIT_NO_VALUE || fhjit_output(g, out, "out") || fhjit_bind(g)) die("keyswitch graph");
  return g;
}

/* A key switch with its NTTs at N = 2^16, 16 rows: two digits to the NTT
 * domain, digit products accumulated (add_lazy), the 2-component sum back to
 * the coefficient domain and added to a ciphertext. Fused: each forward
 * transform's first kernel alone, then one last kernel of both computing the
 * products and the sum (ntt_plan ipntt; with ipntt=0 the transforms stored
 * and the sum computed in the inverse's first kernel, a prologue), the
 * addition in the inverse's last kernel (epilogue): 5 kernels, the forward
 * transforms and the inverse's result never stored. Separate: each NTT alone and the products
 * and the addition as pointwise graphs, every value through memory (8
 * kernels, 5 launches). Both checked against the interpreter and timed in
 * the same run. On the fake driver: the separate graphs launched (run on
 * the host), the fused one through fhjit_run_host, no timing. */
static void bench_keyswitch(fhjit_radix radix, int quick, int *failures) {
  const int64_t n = INT64_C(1) << 16;
  const int rows = 16;
  size_t ws = radix == FHJIT_R32 ? 4 : 8;
  uint64_t q[16];
  if (fhjit_find_primes(ctx, radix == FHJIT_R32 ? 30 : 60, UINT64_C(1) << 18, rows, q)) die("primes");
  fhjit_type dt = ks_poly(0, rows, n, FHJIT_DOMAIN_COEF), ct = ks_poly(2, rows, n, FHJIT_DOMAIN_COEF);
  fhjit_type kt, tt;
  memset(&kt, 0, sizeof kt);
  kt.kind = FHJIT_KIND_KEY, kt.comps = 2, kt.digits = 2, kt.rows = rows, kt.n = n;
  kt.domain = FHJIT_DOMAIN_NTT, kt.form = FHJIT_FORM_MONT;
  memset(&tt, 0, sizeof tt);
  tt.kind = FHJIT_KIND_TWIDDLE, tt.rows = rows, tt.n = n;
  /* fused: inputs d0, d1, key, tf, ti, c */
  fhjit_graph *g = fhjit_graph_create(ctx, "keyswitch", radix);
  fhjit_value d0 = fhjit_input(g, "d0", &dt), d1 = fhjit_input(g, "d1", &dt);
  fhjit_value key = fhjit_input(g, "key", &kt), tf = fhjit_input(g, "tf", &tt), ti = fhjit_input(g, "ti", &tt);
  fhjit_value c = fhjit_input(g, "c", &ct);
  fhjit_value f0 = fhjit_ntt(g, d0, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_value f1 = fhjit_ntt(g, d1, tf, FHJIT_NTT_COEF_MONT_TO_NTT);
  fhjit_value acc = fhjit_add_lazy(g, fhjit_keyswitch_digit_product(g, f0, key, 0, 0),
                                   fhjit_keyswitch_digit_product(g, f1, key, 1, 0));
  ks_bind(g, fhjit_add(g, fhjit_ntt(g, acc, ti, FHJIT_NTT_TO_COEF_MONT), c));
  /* separate: NTT(d) x2, products, inverse NTT, addition */
  fhjit_graph *gp[5];
  fhjit_type ft, at, ot;
  for (int i = 0; i < 2; i++) {
    gp[i] = fhjit_graph_create(ctx, i ? "ks_fwd1" : "ks_fwd0", radix);
    fhjit_value x = fhjit_input(gp[i], "d", &dt), t = fhjit_input(gp[i], "tf", &tt);
    ks_bind(gp[i], fhjit_ntt(gp[i], x, t, FHJIT_NTT_COEF_MONT_TO_NTT));
  }
  if (fhjit_result_type(gp[0], 0, &ft)) die("type");
  gp[2] = fhjit_graph_create(ctx, "ks_products", radix);
  {
    fhjit_value a = fhjit_input(gp[2], "f0", &ft), b = fhjit_input(gp[2], "f1", &ft);
    fhjit_value k = fhjit_input(gp[2], "key", &kt);
    ks_bind(gp[2], fhjit_add_lazy(gp[2], fhjit_keyswitch_digit_product(gp[2], a, k, 0, 0),
                                  fhjit_keyswitch_digit_product(gp[2], b, k, 1, 0)));
  }
  if (fhjit_result_type(gp[2], 0, &at)) die("type");
  gp[3] = fhjit_graph_create(ctx, "ks_inv", radix);
  {
    fhjit_value a = fhjit_input(gp[3], "acc", &at), t = fhjit_input(gp[3], "ti", &tt);
    ks_bind(gp[3], fhjit_ntt(gp[3], a, t, FHJIT_NTT_TO_COEF_MONT));
  }
  if (fhjit_result_type(gp[3], 0, &ot)) die("type");
  gp[4] = fhjit_graph_create(ctx, "ks_add", radix);
  {
    fhjit_value a = fhjit_input(gp[4], "o", &ot), b = fhjit_input(gp[4], "c", &ct);
    ks_bind(gp[4], fhjit_add(gp[4], a, b));
  }

  size_t poly = (size_t)rows * (size_t)n * ws;
  size_t sizes[6] = {poly, poly, 4 * poly, poly, poly, 2 * poly};
  void *h[6], *h_out = malloc(2 * poly), *h_ref = malloc(2 * poly), *h_params = malloc(8 * ws * rows);
  for (int i = 0; i < 6; i++)
    if (!(h[i] = malloc(sizes[i]))) die("out of memory");
  if (!h_out || !h_ref || !h_params) die("out of memory");
  if (fhjit_twiddle_tables(ctx, radix, q, rows, n, h[3], h[4])) die("twiddles");
  if (fhjit_param_table(ctx, radix, q, rows, n, 1, 1, h_params, rows)) die("params");
  for (int i = 0; i < 6; i++) {
    if (i == 3 || i == 4) continue;
    for (size_t e = 0; e < sizes[i] / ws; e++) {
      uint64_t v = rnd() % (2 * q[(e / (size_t)n) % (size_t)rows]);
      if (ws == 4) ((uint32_t *)h[i])[e] = (uint32_t)v;
      else ((uint64_t *)h[i])[e] = v;
    }
  }
  fhjit_cuda_ptr d[6], d_out, d_out2, d_f[2], d_acc, d_o, d_params;
  int64_t pstride;
  if (fhjit_cuda_param_table(ctx, radix, q, rows, n, 1, 1, &d_params, &pstride)) die("params");
  for (int i = 0; i < 6; i++)
    if (fhjit_cuda_alloc(ctx, sizes[i], &d[i]) || fhjit_cuda_upload(ctx, d[i], h[i], sizes[i])) die("upload");
  if (fhjit_cuda_alloc(ctx, 2 * poly, &d_out) || fhjit_cuda_alloc(ctx, 2 * poly, &d_out2) ||
      fhjit_cuda_alloc(ctx, poly, &d_f[0]) || fhjit_cuda_alloc(ctx, poly, &d_f[1]) ||
      fhjit_cuda_alloc(ctx, 2 * poly, &d_acc) || fhjit_cuda_alloc(ctx, 2 * poly, &d_o))
    die("alloc");
  ks_run run;
  memset(&run, 0, sizeof run);
  fhjit_cuda_compile_info info, pinfo;
  if (!(run.fused = fhjit_cuda_compile(g, NULL, &info))) die("compile keyswitch");
  int part_kernels = 0;
  for (int i = 0; i < 5; i++) ks_graphs[i] = gp[i];
  for (int i = 0; i < 5; i++) {
    if (!(run.part[i] = fhjit_cuda_compile(gp[i], NULL, &pinfo))) die("compile keyswitch part");
    part_kernels += pinfo.nkernels;
  }
  run.fa.params = d_params, run.fa.pstride = pstride, run.fa.inputs = d, run.fa.ninputs = 6;
  run.fa.results = &d_out, run.fa.nresults = 1;
  fhjit_cuda_ptr in0[2] = {d[0], d[3]}, in1[2] = {d[1], d[3]}, in2[3] = {d_f[0], d_f[1], d[2]};
  fhjit_cuda_ptr in3[2] = {d_acc, d[4]}, in4[2] = {d_o, d[5]};
  fhjit_cuda_ptr *ins[5] = {in0, in1, in2, in3, in4};
  fhjit_cuda_ptr *outs[5] = {&d_f[0], &d_f[1], &d_acc, &d_o, &d_out2};
  int nins[5] = {2, 2, 3, 2, 2};
  for (int i = 0; i < 5; i++) {
    run.pa[i].params = d_params, run.pa[i].pstride = pstride;
    run.pa[i].inputs = ins[i], run.pa[i].ninputs = nins[i];
    run.pa[i].results = outs[i], run.pa[i].nresults = 1;
  }
  const void *hin[6] = {h[0], h[1], h[2], h[3], h[4], h[5]};
  void *href[1] = {h_ref};
  if (fake) {
    void *hout[1] = {h_out};
    if (fhjit_run_host(g, h_params, rows, hin, hout, 0)) die("host keyswitch");
  } else {
    ks_fused(&run);
    if (fhjit_cuda_download(ctx, h_out, d_out, 2 * poly)) die("download");
  }
  ks_parts(&run);
  if (fhjit_interpret(g, h_params, rows, hin, href)) die("interpret keyswitch");
  int bad = memcmp(h_out, h_ref, 2 * poly) != 0;
  if (fhjit_cuda_download(ctx, h_out, d_out2, 2 * poly)) die("download");
  int bad2 = memcmp(h_out, h_ref, 2 * poly) != 0;
  if (bad || bad2) {
    printf("MISMATCH key switch %s:%s%s\n", rname(radix), bad ? " fused" : "", bad2 ? " separate" : "");
    (*failures)++;
  }
  int reps = quick ? 3 : 11;
  double tf_us = fake ? 0 : time_batches(ks_fused, &run, reps);
  double tp_us = fake ? 1 : time_batches(ks_parts, &run, reps);
  /* both again after the timed launches (the fused program's NTTs reused
   * their per-row completion counters every time) */
  if (!fake) {
    memset(h_out, 0xA5, 2 * poly);
    if (fhjit_cuda_upload(ctx, d_out, h_out, 2 * poly) || fhjit_cuda_upload(ctx, d_out2, h_out, 2 * poly))
      die("upload");
    ks_fused(&run);
    ks_parts(&run);
    if (fhjit_cuda_download(ctx, h_out, d_out, 2 * poly)) die("download");
    int late = memcmp(h_out, h_ref, 2 * poly) != 0;
    if (fhjit_cuda_download(ctx, h_out, d_out2, 2 * poly)) die("download");
    int late2 = memcmp(h_out, h_ref, 2 * poly) != 0;
    if (late || late2) {
      printf("MISMATCH key switch %s after the timed launches:%s%s\n", rname(radix),
             late ? " fused" : "", late2 ? " separate" : "");
      (*failures)++;
      bad |= late, bad2 |= late2;
    }
  }
  printf("%-4s key switch N=2^16 rows=%d (2 fwd NTT, digit products + add_lazy, inverse NTT, + ct):\n"
         "       fused %8.2f us (%d kernels, %lld scratch bytes) | separate %8.2f us (%d kernels, "
         "5 graphs) | %.2fx%s\n",
         rname(radix), rows, tf_us, info.nkernels, (long long)info.scratch_bytes, tp_us, part_kernels,
         tp_us / tf_us, bad || bad2 ? " (MISMATCH)" : "");
  bu_json_item("\"kind\": \"keyswitch\", \"radix\": \"%s\", \"log2\": 16, \"rows\": %d, "
            "\"fused_us\": %.3f, \"separate_us\": %.3f, \"kernels_fused\": %d, "
            "\"kernels_separate\": %d, \"exact\": %d",
            rname(radix), rows, tf_us, tp_us, info.nkernels, part_kernels, !bad && !bad2);
  for (int i = 0; i < 6; i++) {
    fhjit_cuda_free(ctx, d[i]);
    free(h[i]);
  }
  fhjit_cuda_free(ctx, d_out), fhjit_cuda_free(ctx, d_out2), fhjit_cuda_free(ctx, d_f[0]);
  fhjit_cuda_free(ctx, d_f[1]), fhjit_cuda_free(ctx, d_acc), fhjit_cuda_free(ctx, d_o);
  fhjit_cuda_free(ctx, d_params);
  free(h_out), free(h_ref), free(h_params);
  fhjit_graph_destroy(g);
  for (int i = 0; i < 5; i++) fhjit_graph_destroy(gp[i]);
}

int main(int argc, char **argv) {
  int quick = 0, do_sweep = 0, keyswitch = 1, rows_override = 0, reps = 11, racecheck = 0,
      do_cluster = 0;
  const char *json_path = NULL;
  int logs[8] = {12, 14, 16, 17}, nlogs = 4, logs_given = 0;
  char *user_plans = NULL;
  const char *radices = "r62,r32";
  for (int i = 1; i < argc; i++) {
    const char *val = NULL;
    const char *a = argv[i];
    size_t alen = strcspn(a, "=");
    static const char *const with_value[] = {"--log2", "--rows", "--plans", "--radix", "--reps",
                                             "--json"};
    for (size_t w = 0; w < sizeof with_value / sizeof with_value[0]; w++)
      if (alen == strlen(with_value[w]) && !strncmp(a, with_value[w], alen)) {
        if (a[alen] == '=') val = a + alen + 1;
        else if (i + 1 < argc) val = argv[++i];
        else val = "";
      }
    if (!strcmp(a, "--quick")) {
      quick = 1;
    } else if (!strcmp(a, "--sweep")) {
      do_sweep = 1;
    } else if (!strcmp(a, "--no-keyswitch")) {
      keyswitch = 0;
    } else if (!strcmp(a, "--cluster")) {
      do_cluster = 1;
    } else if (!strcmp(a, "--racecheck")) {
      /* small enough for compute-sanitizer (one-kernel and two-kernel plans) */
      quick = 1, keyswitch = 0, rows_override = 2, logs_given = 1, racecheck = 1;
      per_batch = 1, warmups = 0;
      logs[0] = 10, logs[1] = 14, nlogs = 2;
    } else if (val && !strncmp(a, "--log2", 6)) {
      nlogs = 0;
      logs_given = 1;
      for (const char *p = val; *p && nlogs < 8;) {
        logs[nlogs++] = atoi(p);
        const char *comma = strchr(p, ',');
        if (!comma) break;
        p = comma + 1;
      }
    } else if (val && !strncmp(a, "--rows", 6)) {
      rows_override = atoi(val);
    } else if (val && !strncmp(a, "--reps", 6)) {
      reps = atoi(val);
      if (reps < 1) reps = 1;
    } else if (val && !strncmp(a, "--plans", 7)) {
      user_plans = strdup(val);
    } else if (val && !strncmp(a, "--radix", 7)) {
      radices = val;
    } else if (val && *val && !strncmp(a, "--json", 6)) {
      json_path = val;
    } else {
      fprintf(stderr,
              "usage: ntt_bench [--quick] [--log2 12,14,16,17] [--rows R] [--radix r62,r32]\n"
              "                 [--no-keyswitch] [--racecheck] [--json FILE] [--cluster]\n"
              "                 [--sweep [--plans 'PLAN;PLAN;...'] [--reps N]]\n"
              "  --sweep: every candidate schedule (FHJIT_NTT_PLAN strings, e.g.\n"
              "  'c_col=3,t=7'; see lib/lower/ntt.h) per size, checked and timed\n"
              "  --cluster: the cluster schedule beside the two kernels (sizes 14,16,17\n"
              "  unless --log2 says otherwise), both checked; no key switch\n");
      return 2;
    }
  }
  ctx = fhjit_context_create();
  if (!ctx || !fhjit_cuda_available(ctx)) die("CUDA");
  fake = fx_install(ctx, fake_run);
  if (json_path && !(bu_json = fopen(json_path, "w"))) {
    fprintf(stderr, "ntt_bench: cannot write %s\n", json_path);
    return 1;
  }
  if (bu_json) fprintf(bu_json, "{\"fhjit\": \"%s\", \"fake_driver\": %d, \"results\": [", fhjit_version(), fake);
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
  const char *env_plan = getenv("FHJIT_NTT_PLAN");
  if (env_plan && *env_plan) printf("FHJIT_NTT_PLAN=%s\n", env_plan);
  int failures = 0;
  /* the configurations: r62 with 32 rows, r32 with 32 and 64 (the sweep:
   * r62 32 rows, r32 64 rows; --rows overrides) */
  config cfgs[32];
  int ncfg = 0;
  for (int radix = 1; radix >= 0; radix--) {
    if (!strstr(radices, radix ? "r62" : "r32")) continue;
    int nrows = radix || do_sweep || rows_override ? 1 : 2;
    for (int rr = 0; rr < nrows; rr++)
      for (int li = 0; li < nlogs && ncfg < 32; li++) {
        int rows = rows_override ? rows_override : radix ? 32 : (do_sweep || rr) ? 64 : 32;
        cfgs[ncfg++] = (config){(fhjit_radix)radix, logs[li], rows};
      }
  }
  if (do_cluster && !logs_given) { /* the cluster schedule's sizes of issue 19 */
    int k = 0;
    for (int i = 0; i < ncfg; i++)
      if (cfgs[i].log_n >= 14) cfgs[k++] = cfgs[i];
    ncfg = k;
  }
  if (do_cluster) {
    printf("ntt_schedule two_kernel vs cluster (same data, same run; GB/s: one pass over memory, "
           "2 x rows x N words, over the time)\n");
    for (int i = 0; i < ncfg; i++) bench_cluster(&cfgs[i], quick, &failures);
  } else if (do_sweep) {
    if (!logs_given && !user_plans) {
      /* r32's small sizes matter less than its large ones */
      int k = 0;
      for (int i = 0; i < ncfg; i++)
        if (cfgs[i].radix == FHJIT_R62 || cfgs[i].log_n >= 14) cfgs[k++] = cfgs[i];
      ncfg = k;
    }
    sweep(cfgs, ncfg, user_plans, racecheck ? 1 : quick ? 3 : reps, &failures);
  } else {
    for (int i = 0; i < ncfg; i++) {
      int kf = 0, ki = 0, before = failures;
      double f = bench_one(&cfgs[i], 1, quick, &failures, &kf);
      double v = bench_one(&cfgs[i], 0, quick, &failures, &ki);
      printf("%-4s N=2^%-2d rows=%-3d  fwd %8.2f us  inv %8.2f us | kernels %d + %d\n",
             rname(cfgs[i].radix), cfgs[i].log_n, cfgs[i].rows, f, v, kf, ki);
      bu_json_item("\"kind\": \"ntt\", \"radix\": \"%s\", \"log2\": %d, \"rows\": %d, "
                "\"fwd_us\": %.3f, \"inv_us\": %.3f, \"kernels_fwd\": %d, \"kernels_inv\": %d, "
                "\"exact\": %d",
                rname(cfgs[i].radix), cfgs[i].log_n, cfgs[i].rows, f, v, kf, ki, failures == before);
      fflush(stdout);
    }
    if (keyswitch) {
      bench_keyswitch(FHJIT_R62, quick, &failures);
      bench_keyswitch(FHJIT_R32, quick, &failures);
    }
  }
  printf(failures ? "FAILED: %d mismatches\n" : "all results match the interpreter\n", failures);
  if (bu_json) {
    fprintf(bu_json, "\n], \"failures\": %d}\n", failures);
    fclose(bu_json);
  }
  free(user_plans);
  fhjit_context_destroy(ctx);
  return failures ? 1 : 0;
}
