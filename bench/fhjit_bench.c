/* fhjit_bench.c: GPU benchmarks of fhjit's kernels, runtime and compiler.
 *
 *  - kernel time of fused graphs (tensor product, key-switch inner product
 *    over three digits, one Montgomery product), both radices, at 2^21 and
 *    2^26 elements per polynomial (rows * n, n = 2^16): CUDA events around
 *    replays of a captured CUDA graph of several launches, median of many
 *    after a warm-up, buffers rotated so the working set exceeds the 60 MB L2
 *    several times; effective bandwidth (each input read once, each result
 *    written once) against a PTX copy kernel timed the same way in the same
 *    run (the ratio is the figure to compare across runs);
 *  - compile latency: cold (graph -> loaded module, disk cache off, a new
 *    fhjit context each time) and warm (a disk-cache hit in a new context);
 *  - host launch overhead: the host time of one launch call (batches that
 *    never fill the launch queue), beside the driver's own cuLaunchKernel;
 *  - --sweep: each graph under a grid of FHJIT_PW_PLAN plans, against the
 *    default copy and a copy kernel cut like the plan, and the best plan.
 * Each kernel's first launch is checked against fhjit_interpret at the
 * smaller size. Public API only; driver calls through fhjit_cuda_driver_proc.
 *
 *   fhjit_bench [--log2 21,26] [--json FILE] [--compile-only] [--quick]
 *               [--cache-dir DIR] [--sweep]
 * --compile-only: only compile latency (run twice with one --cache-dir to
 * see a warm hit in a new process). Against the unit tests' fake libcuda
 * (FHJIT_LIBCUDA) it runs on the host, for checking this program. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "fake_exec.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "runtime/cuda_api.h"

static fhjit_context *ctx;

static uint64_t rng = 0xbe9c4;
static uint64_t rnd(void) { return bu_splitmix(&rng); }


static void die(const char *what) {
  fprintf(stderr, "fhjit_bench: %s: %s\n", what, fhjit_last_error(ctx));
  exit(1);
}

/* ----------------------------------------------------------------- driver */

static struct {
  PFN_cuCtxSynchronize cuCtxSynchronize;
  PFN_cuStreamCreate cuStreamCreate;
  PFN_cuStreamSynchronize cuStreamSynchronize;
  PFN_cuStreamBeginCapture_v2 cuStreamBeginCapture;
  PFN_cuStreamEndCapture cuStreamEndCapture;
  PFN_cuGraphInstantiateWithFlags cuGraphInstantiate;
  PFN_cuGraphLaunch cuGraphLaunch;
  PFN_cuGraphExecDestroy cuGraphExecDestroy;
  PFN_cuGraphDestroy cuGraphDestroy;
  PFN_cuEventCreate cuEventCreate;
  PFN_cuEventRecord cuEventRecord;
  PFN_cuEventSynchronize cuEventSynchronize;
  PFN_cuEventElapsedTime cuEventElapsedTime;
  PFN_cuEventDestroy_v2 cuEventDestroy;
  PFN_cuMemcpyDtoD_v2 cuMemcpyDtoD;
  PFN_cuModuleLoadData cuModuleLoadData;
  PFN_cuModuleGetFunction cuModuleGetFunction;
  PFN_cuLaunchKernel cuLaunchKernel;
} cu;

#define CU_OK(call)                                                                        \
  do {                                                                                     \
    CUresult r_ = (call);                                                                  \
    if (r_ != CUDA_SUCCESS) {                                                              \
      fprintf(stderr, "fhjit_bench: %s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, \
              (int)r_);                                                                    \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static void *proc(const char *name, const char *fallback) {
  void *p = fhjit_cuda_driver_proc(ctx, name);
  if (!p && fallback) p = fhjit_cuda_driver_proc(ctx, fallback);
  if (!p) die(name);
  return p;
}

static void load_driver(void) {
  *(void **)&cu.cuCtxSynchronize = proc("cuCtxSynchronize", NULL);
  *(void **)&cu.cuStreamCreate = proc("cuStreamCreate", NULL);
  *(void **)&cu.cuStreamSynchronize = proc("cuStreamSynchronize", NULL);
  *(void **)&cu.cuStreamBeginCapture = proc("cuStreamBeginCapture_v2", NULL);
  *(void **)&cu.cuStreamEndCapture = proc("cuStreamEndCapture", NULL);
  *(void **)&cu.cuGraphInstantiate = proc("cuGraphInstantiateWithFlags", NULL);
  *(void **)&cu.cuGraphLaunch = proc("cuGraphLaunch", NULL);
  *(void **)&cu.cuGraphExecDestroy = proc("cuGraphExecDestroy", NULL);
  *(void **)&cu.cuGraphDestroy = proc("cuGraphDestroy", NULL);
  *(void **)&cu.cuEventCreate = proc("cuEventCreate", NULL);
  *(void **)&cu.cuEventRecord = proc("cuEventRecord", NULL);
  *(void **)&cu.cuEventSynchronize = proc("cuEventSynchronize", NULL);
  /* CUDA 13's cuda.h means the _v2; older drivers have only the plain one */
  *(void **)&cu.cuEventElapsedTime = proc("cuEventElapsedTime_v2", "cuEventElapsedTime");
  *(void **)&cu.cuEventDestroy = proc("cuEventDestroy_v2", NULL);
  *(void **)&cu.cuMemcpyDtoD = proc("cuMemcpyDtoD_v2", NULL);
  *(void **)&cu.cuModuleLoadData = proc("cuModuleLoadData", NULL);
  *(void **)&cu.cuModuleGetFunction = proc("cuModuleGetFunction", NULL);
  *(void **)&cu.cuLaunchKernel = proc("cuLaunchKernel", NULL);
  fhjit_clear_error(ctx);
}

/* On the fake driver, launches run on the host: graphs through fhjit_run_host
 * (fake_exec.h), the copy kernel here. */
static void fake_copy(const fake_launch *l) {
  if (!strcmp(l->name, "fhjit_bench_copy"))
    memcpy((void *)(uintptr_t)l->params[0], (const void *)(uintptr_t)l->params[1], l->params[2] * 16);
  else if (!strcmp(l->name, "fhjit_bench_copy_plan")) /* params[3]: bytes */
    memcpy((void *)(uintptr_t)l->params[0], (const void *)(uintptr_t)l->params[1], l->params[3]);
}

/* ------------------------------------------------------------------ graphs */

enum { G_MUL, G_TENSOR, G_KEYSWITCH, G_COUNT };
static const char *const graph_names[G_COUNT] = {"mul", "tensor_product", "keyswitch_3digits"};

static fhjit_type poly(int comps, int64_t rows, int64_t n) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY;
  t.comps = comps;
  t.rows = rows;
  t.n = n;
  t.domain = FHJIT_DOMAIN_NTT;
  t.form = FHJIT_FORM_MONT;
  return t;
}

/* The benchmark graphs over [rows, n] polynomials, as in bench/baselines. */
static fhjit_graph *build(fhjit_context *c, int which, fhjit_radix radix, int64_t rows, int64_t n) {
  fhjit_graph *g = fhjit_graph_create(c, graph_names[which], radix);
  if (which == G_MUL) {
    fhjit_type t = poly(0, rows, n);
    fhjit_output(g, fhjit_mul(g, fhjit_input(g, "a", &t), fhjit_input(g, "b", &t)), "c");
  } else if (which == G_TENSOR) {
    fhjit_type t = poly(2, rows, n);
    fhjit_value a = fhjit_input(g, "a", &t), b = fhjit_input(g, "b", &t);
    fhjit_value a0 = fhjit_extract(g, a, 0), a1 = fhjit_extract(g, a, 1);
    fhjit_value b0 = fhjit_extract(g, b, 0), b1 = fhjit_extract(g, b, 1);
    fhjit_value d[3] = {fhjit_mul(g, a0, b0),
                        fhjit_add_lazy(g, fhjit_mul(g, a0, b1), fhjit_mul(g, a1, b0)),
                        fhjit_mul(g, a1, b1)};
    fhjit_output(g, fhjit_pack(g, 3, d), "d");
  } else {
    fhjit_type t = poly(0, rows, n), key;
    memset(&key, 0, sizeof key);
    key.kind = FHJIT_KIND_KEY;
    key.comps = 2;
    key.digits = 3;
    key.rows = rows;
    key.n = n;
    key.domain = FHJIT_DOMAIN_NTT;
    key.form = FHJIT_FORM_MONT;
    fhjit_value dg[3];
    for (int j = 0; j < 3; j++) {
      char name[16];
      snprintf(name, sizeof name, "d%d", j);
      dg[j] = fhjit_input(g, name, &t);
    }
    fhjit_value k = fhjit_input(g, "key", &key), acc = FHJIT_NO_VALUE;
    for (int j = 0; j < 3; j++) {
      fhjit_value p = fhjit_keyswitch_digit_product(g, dg[j], k, j, 0);
      acc = j ? fhjit_add_lazy(g, acc, p) : p;
    }
    fhjit_output(g, acc, "acc");
  }
  if (fhjit_bind(g) != FHJIT_OK) die(graph_names[which]);
  return g;
}

/* Moduli: 32 distinct NTT-friendly primes near the radix limit, cycled. */
static void moduli_for(fhjit_radix radix, int64_t rows, uint64_t *out) {
  static uint64_t pool[2][32];
  static int have[2];
  if (!have[radix]) {
    if (fhjit_find_primes(ctx, radix == FHJIT_R32 ? 30 : 60, 1u << 17, 32, pool[radix]) != FHJIT_OK)
      die("fhjit_find_primes");
    have[radix] = 1;
  }
  for (int64_t r = 0; r < rows; r++) out[r] = pool[radix][r % 32];
}

/* ---------------------------------------------------------------- buffers */

/* Fills `words` device words with random lazy values for every modulus
 * (below 2 * min q): one random chunk uploaded, then doubled on the device. */
static void fill_device(fhjit_cuda_ptr dst, size_t words, size_t ws, uint64_t bound) {
  size_t chunk = words < ((size_t)1 << 18) ? words : ((size_t)1 << 18);
  void *host = calloc(chunk ? chunk : 1, ws);
  if (!host) {
    fprintf(stderr, "fhjit_bench: out of host memory\n");
    exit(1);
  }
  for (size_t i = 0; i < chunk; i++) {
    uint64_t v = rnd() % bound;
    if (ws == 4) ((uint32_t *)host)[i] = (uint32_t)v;
    else ((uint64_t *)host)[i] = v;
  }
  if (fhjit_cuda_upload(ctx, dst, host, chunk * ws) != FHJIT_OK) die("upload");
  free(host);
  for (size_t done = chunk; done < words;) {
    size_t n = done < words - done ? done : words - done;
    CU_OK(cu.cuMemcpyDtoD(dst + done * ws, dst, n * ws));
    done += n;
  }
}

typedef struct bufset {
  fhjit_cuda_ptr in[8], out[8];
} bufset;

/* Times `count` launches of fn over rotating sets, as replays of a captured
 * CUDA graph: median over `reps` replays of the time per launch, in ms. */
typedef void (*launch_fn)(void *arg, int set, CUstream s);

static double time_launches(launch_fn fn, void *arg, int nsets, int per_graph, int reps,
                            CUstream s) {
  CUgraph graph;
  CUgraphExec exec;
  CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < per_graph; i++) fn(arg, i % nsets, s);
  CU_OK(cu.cuStreamEndCapture(s, &graph));
  CU_OK(cu.cuGraphInstantiate(&exec, graph, 0));
  for (int w = 0; w < 3; w++) CU_OK(cu.cuGraphLaunch(exec, s)); /* warm-up */
  CUevent e0, e1;
  CU_OK(cu.cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CU_OK(cu.cuEventCreate(&e1, CU_EVENT_DEFAULT));
  double *t = malloc(sizeof *t * (size_t)reps);
  for (int r = 0; r < reps; r++) {
    CU_OK(cu.cuEventRecord(e0, s));
    CU_OK(cu.cuGraphLaunch(exec, s));
    CU_OK(cu.cuEventRecord(e1, s));
    CU_OK(cu.cuEventSynchronize(e1));
    float ms;
    CU_OK(cu.cuEventElapsedTime(&ms, e0, e1));
    t[r] = (double)ms / per_graph;
  }
  double m = bu_median(t, reps);
  free(t);
  cu.cuEventDestroy(e0);
  cu.cuEventDestroy(e1);
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
  return m;
}

/* ------------------------------------------------------------------- copy */

static const char copy_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    "// dst[i] = src[i] for n16 16-byte vectors; thread t of T copies t, t+T,\n"
    "// t+2T and t+3T, four loads in flight before the stores.\n"
    ".visible .entry fhjit_bench_copy(\n"
    "\t.param .u64 dst_param,\n\t.param .u64 src_param,\n\t.param .u64 n16_param\n)\n{\n"
    "\t.reg .pred %p<5>;\n\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<40>;\n"
    "\tld.param.u64 %rd1, [dst_param];\n\tld.param.u64 %rd2, [src_param];\n"
    "\tld.param.u64 %rd3, [n16_param];\n"
    "\tcvta.to.global.u64 %rd1, %rd1;\n\tcvta.to.global.u64 %rd2, %rd2;\n"
    "\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ntid.x;\n\tmov.u32 %r3, %tid.x;\n"
    "\tmov.u32 %r4, %nctaid.x;\n\tmul.wide.u32 %rd4, %r1, %r2;\n\tcvt.u64.u32 %rd5, %r3;\n"
    "\tadd.s64 %rd4, %rd4, %rd5;\n\tmul.wide.u32 %rd6, %r4, %r2;\n"
    "\tadd.s64 %rd20, %rd4, %rd6;\n\tadd.s64 %rd21, %rd20, %rd6;\n\tadd.s64 %rd22, %rd21, %rd6;\n"
    "\tsetp.lt.u64 %p1, %rd4, %rd3;\n\tsetp.lt.u64 %p2, %rd20, %rd3;\n"
    "\tsetp.lt.u64 %p3, %rd21, %rd3;\n\tsetp.lt.u64 %p4, %rd22, %rd3;\n"
    "\tshl.b64 %rd23, %rd4, 4;\n\tshl.b64 %rd24, %rd20, 4;\n"
    "\tshl.b64 %rd25, %rd21, 4;\n\tshl.b64 %rd26, %rd22, 4;\n"
    "\tadd.s64 %rd7, %rd2, %rd23;\n\tadd.s64 %rd8, %rd2, %rd24;\n"
    "\tadd.s64 %rd9, %rd2, %rd25;\n\tadd.s64 %rd10, %rd2, %rd26;\n"
    "\t@%p1 ld.global.nc.v2.u64 {%rd11, %rd12}, [%rd7];\n"
    "\t@%p2 ld.global.nc.v2.u64 {%rd13, %rd14}, [%rd8];\n"
    "\t@%p3 ld.global.nc.v2.u64 {%rd15, %rd16}, [%rd9];\n"
    "\t@%p4 ld.global.nc.v2.u64 {%rd17, %rd18}, [%rd10];\n"
    "\tadd.s64 %rd27, %rd1, %rd23;\n\tadd.s64 %rd28, %rd1, %rd24;\n"
    "\tadd.s64 %rd29, %rd1, %rd25;\n\tadd.s64 %rd30, %rd1, %rd26;\n"
    "\t@%p1 st.global.v2.u64 [%rd27], {%rd11, %rd12};\n"
    "\t@%p2 st.global.v2.u64 [%rd28], {%rd13, %rd14};\n"
    "\t@%p3 st.global.v2.u64 [%rd29], {%rd15, %rd16};\n"
    "\t@%p4 st.global.v2.u64 [%rd30], {%rd17, %rd18};\n"
    "\tret;\n}\n";

/* Source and destination buffers of a copy kernel, enough sets (2 to 16)
 * that rotating through them covers `working_set` bytes; sources filled.
 * Returns the number of sets. */
static int alloc_copy_sets(fhjit_cuda_ptr *src, fhjit_cuda_ptr *dst, size_t bytes,
                           size_t working_set) {
  int nsets = (int)((working_set + 2 * bytes - 1) / (2 * bytes));
  if (nsets < 2) nsets = 2;
  if (nsets > 16) nsets = 16;
  for (int i = 0; i < nsets; i++) {
    if (fhjit_cuda_alloc(ctx, bytes, &src[i]) != FHJIT_OK ||
        fhjit_cuda_alloc(ctx, bytes, &dst[i]) != FHJIT_OK)
      die("copy buffers");
    fill_device(src[i], bytes / 8, 8, UINT64_MAX);
  }
  return nsets;
}

typedef struct copy_job {
  CUfunction fn;
  fhjit_cuda_ptr src[16], dst[16];
  uint64_t n16;
} copy_job;

static void launch_copy(void *arg, int set, CUstream s) {
  copy_job *j = arg;
  void *params[3] = {&j->dst[set], &j->src[set], &j->n16};
  unsigned grid = (unsigned)((j->n16 + 1023) / 1024);
  fx_tag(NULL);
  CU_OK(cu.cuLaunchKernel(j->fn, grid, 1, 1, 256, 1, 1, 0, s, params, NULL));
}

/* Copy bandwidth (read + write bytes per second) of `bytes`-sized buffers,
 * rotating so that the working set is at least `working_set` bytes. */
static double copy_bandwidth(CUfunction fn, size_t bytes, size_t working_set, int reps, CUstream s,
                             double *ms_out) {
  copy_job j = {.fn = fn, .n16 = bytes / 16};
  int nsets = alloc_copy_sets(j.src, j.dst, bytes, working_set);
  /* check the kernel copies (the first set, once) */
  launch_copy(&j, 0, s);
  CU_OK(cu.cuStreamSynchronize(s));
  uint64_t a[4], b[4];
  size_t probe = bytes - sizeof a;
  fhjit_cuda_download(ctx, a, j.src[0] + probe, sizeof a);
  fhjit_cuda_download(ctx, b, j.dst[0] + probe, sizeof b);
  if (memcmp(a, b, sizeof a)) {
    fprintf(stderr, "fhjit_bench: the copy kernel does not copy\n");
    exit(1);
  }
  double ms = time_launches(launch_copy, &j, nsets, 4 * nsets, reps, s);
  for (int i = 0; i < nsets; i++) fhjit_cuda_free(ctx, j.src[i]), fhjit_cuda_free(ctx, j.dst[i]);
  *ms_out = ms;
  return 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
}

/* A copy kernel cut like a fhjit plan (FHJIT_PW_PLAN): vectors of `vbytes`
 * (4, 8 or 16), `per_thread` of them per thread, `block` threads per block;
 * thread t of block b copies vectors (b * U + u) * T + t, as fhjit's kernels
 * walk their groups. The fair baseline of a plan. Returns malloc'd PTX. */
static char *plan_copy_ptx(int vbytes, int per_thread, int block) {
  size_t cap = 4096 + (size_t)per_thread * 1024;
  char *t = malloc(cap);
  size_t n = 0;
#define PUT(...) n += (size_t)snprintf(t + n, cap - n, __VA_ARGS__)
  PUT(".version 7.8\n.target sm_90\n.address_size 64\n"
      ".visible .entry fhjit_bench_copy_plan(\n\t.param .u64 dst_param,\n\t.param .u64 src_param,\n"
      "\t.param .u64 nvec_param,\n\t.param .u64 bytes_param\n)\n.maxntid %d, 1, 1\n{\n", block);
  PUT("\t.reg .pred %%p<%d>;\n\t.reg .b32 %%r<5>;\n\t.reg .b32 %%w<%d>;\n\t.reg .b64 %%rd<8>;\n"
      "\t.reg .b64 %%i<%d>;\n\t.reg .b64 %%s<%d>;\n\t.reg .b64 %%d<%d>;\n\t.reg .b64 %%x<%d>;\n",
      per_thread, per_thread, per_thread, per_thread, per_thread, 2 * per_thread);
  PUT("\tld.param.u64 %%rd1, [dst_param];\n\tld.param.u64 %%rd2, [src_param];\n"
      "\tld.param.u64 %%rd3, [nvec_param];\n"
      "\tcvta.to.global.u64 %%rd1, %%rd1;\n\tcvta.to.global.u64 %%rd2, %%rd2;\n"
      "\tmov.u32 %%r1, %%ctaid.x;\n\tmov.u32 %%r2, %%ntid.x;\n\tmov.u32 %%r3, %%tid.x;\n"
      "\tmul.lo.u32 %%r4, %%r2, %d;\n\tmul.wide.u32 %%rd4, %%r1, %%r4;\n\tcvt.u64.u32 %%rd5, %%r3;\n"
      "\tadd.s64 %%i0, %%rd4, %%rd5;\n\tcvt.u64.u32 %%rd6, %%r2;\n", per_thread);
  int sh = vbytes == 16 ? 4 : vbytes == 8 ? 3 : 2;
  for (int u = 0; u < per_thread; u++) {
    if (u) PUT("\tadd.s64 %%i%d, %%i%d, %%rd6;\n", u, u - 1);
    PUT("\tsetp.lt.u64 %%p%d, %%i%d, %%rd3;\n\tshl.b64 %%s%d, %%i%d, %d;\n"
        "\tadd.s64 %%d%d, %%rd1, %%s%d;\n\tadd.s64 %%s%d, %%rd2, %%s%d;\n",
        u, u, u, u, sh, u, u, u, u);
  }
  for (int u = 0; u < per_thread; u++) {
    if (vbytes == 16) PUT("\t@%%p%d ld.global.nc.v2.u64 {%%x%d, %%x%d}, [%%s%d];\n", u, 2 * u, 2 * u + 1, u);
    else if (vbytes == 8) PUT("\t@%%p%d ld.global.nc.u64 %%x%d, [%%s%d];\n", u, 2 * u, u);
    else PUT("\t@%%p%d ld.global.nc.u32 %%w%d, [%%s%d];\n", u, u, u);
  }
  for (int u = 0; u < per_thread; u++) {
    if (vbytes == 16) PUT("\t@%%p%d st.global.v2.u64 [%%d%d], {%%x%d, %%x%d};\n", u, u, 2 * u, 2 * u + 1);
    else if (vbytes == 8) PUT("\t@%%p%d st.global.u64 [%%d%d], %%x%d;\n", u, u, 2 * u);
    else PUT("\t@%%p%d st.global.u32 [%%d%d], %%w%d;\n", u, u, u);
  }
  PUT("\tret;\n}\n");
#undef PUT
  return t;
}

typedef struct plan_copy_job {
  CUfunction fn;
  fhjit_cuda_ptr src[16], dst[16];
  uint64_t nvec, bytes;
  unsigned grid, block;
} plan_copy_job;

static void launch_plan_copy(void *arg, int set, CUstream s) {
  plan_copy_job *j = arg;
  void *params[4] = {&j->dst[set], &j->src[set], &j->nvec, &j->bytes};
  fx_tag(NULL);
  CU_OK(cu.cuLaunchKernel(j->fn, j->grid, 1, 1, j->block, 1, 1, 0, s, params, NULL));
}

/* Bandwidth of the plan-shaped copy of `bytes`, as copy_bandwidth. */
static double plan_copy_bandwidth(int vbytes, int per_thread, int block, size_t bytes,
                                  size_t working_set, int reps, CUstream s) {
  char *ptx = plan_copy_ptx(vbytes, per_thread, block);
  CUmodule m;
  plan_copy_job j = {.nvec = bytes / (size_t)vbytes, .bytes = bytes, .block = (unsigned)block};
  CU_OK(cu.cuModuleLoadData(&m, ptx));
  CU_OK(cu.cuModuleGetFunction(&j.fn, m, "fhjit_bench_copy_plan"));
  free(ptx);
  uint64_t per_block = (uint64_t)block * (uint64_t)per_thread;
  j.grid = (unsigned)((j.nvec + per_block - 1) / per_block);
  int nsets = alloc_copy_sets(j.src, j.dst, bytes, working_set);
  launch_plan_copy(&j, 0, s);
  CU_OK(cu.cuStreamSynchronize(s));
  uint64_t a[4], b[4];
  fhjit_cuda_download(ctx, a, j.src[0] + bytes - sizeof a, sizeof a);
  fhjit_cuda_download(ctx, b, j.dst[0] + bytes - sizeof b, sizeof b);
  if (memcmp(a, b, sizeof a)) {
    fprintf(stderr, "fhjit_bench: the plan copy kernel does not copy\n");
    exit(1);
  }
  double ms = time_launches(launch_plan_copy, &j, nsets, 4 * nsets, reps, s);
  for (int i = 0; i < nsets; i++) fhjit_cuda_free(ctx, j.src[i]), fhjit_cuda_free(ctx, j.dst[i]);
  return 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
}

/* ------------------------------------------------------------- kernel time */

typedef struct graph_job {
  fhjit_graph *g;
  fhjit_cuda_kernel *k;
  fhjit_cuda_ptr params;
  int64_t pstride;
  bufset sets[16];
  int32_t nin, nres;
  const fhjit_cuda_options *options;
} graph_job;

static void launch_graph(void *arg, int set, CUstream s) {
  graph_job *j = arg;
  fhjit_cuda_args a = {.params = j->params, .pstride = j->pstride, .inputs = j->sets[set].in,
                       .ninputs = j->nin, .results = j->sets[set].out, .nresults = j->nres,
                       .stream = s, .options = j->options};
  fx_tag(j->g);
  if (fhjit_cuda_launch_kernel(j->k, &a) != FHJIT_OK) die("launch");
}

/* The first set's results against fhjit_interpret on the same inputs. */
static int verify(graph_job *j, size_t ws, const uint64_t *moduli, int64_t rows) {
  void *params = malloc((size_t)(8 * rows) * ws);
  fhjit_param_table(ctx, fhjit_graph_radix(j->g), moduli, (int32_t)rows, 0, 0, 1, params, rows);
  const void *ins[8];
  void *want[8], *got[8];
  size_t rbytes[8];
  int ok = 1;
  for (int32_t i = 0; i < j->nin; i++) {
    size_t b;
    fhjit_cuda_input_bytes(j->g, i, &b);
    void *h = malloc(b);
    fhjit_cuda_download(ctx, h, j->sets[0].in[i], b);
    ins[i] = h;
  }
  for (int32_t r = 0; r < j->nres; r++) {
    fhjit_cuda_result_bytes(j->g, r, &rbytes[r]);
    want[r] = malloc(rbytes[r]);
    got[r] = malloc(rbytes[r]);
    fhjit_cuda_download(ctx, got[r], j->sets[0].out[r], rbytes[r]);
  }
  if (fhjit_interpret(j->g, params, rows, ins, want) != FHJIT_OK) die("fhjit_interpret");
  for (int32_t r = 0; r < j->nres; r++) ok &= !memcmp(want[r], got[r], rbytes[r]);
  for (int32_t i = 0; i < j->nin; i++) free((void *)ins[i]);
  for (int32_t r = 0; r < j->nres; r++) free(want[r]), free(got[r]);
  free(params);
  return ok;
}

typedef struct row {
  const char *graph;
  const char *radix;
  int log2;
  double us, gbps, copy_gbps;
  int verified; /* 1 ok, 0 wrong, -1 not checked */
  char plan[32]; /* FHJIT_PW_PLAN of a sweep row, "" otherwise */
} row;

static row rows_out[1024];
static int nrows;

static row *bench_graph(int which, fhjit_radix radix, int log2, int reps, double copy_gbps,
                        CUstream s, const char *plan) {
  int64_t n = (int64_t)1 << (log2 < 16 ? log2 : 16), rows = ((int64_t)1 << log2) / n;
  size_t ws = radix == FHJIT_R32 ? 4 : 8;
  graph_job j;
  memset(&j, 0, sizeof j);
  j.g = build(ctx, which, radix, rows, n);
  j.nin = fhjit_num_inputs(j.g);
  j.nres = fhjit_num_results(j.g);
  fhjit_cuda_compile_info info;
  j.k = fhjit_cuda_compile(j.g, NULL, &info);
  if (!j.k) die("fhjit_cuda_compile");
  uint64_t *moduli = malloc(sizeof *moduli * (size_t)rows), qmin = UINT64_MAX;
  moduli_for(radix, rows, moduli);
  for (int64_t r = 0; r < rows; r++)
    if (moduli[r] < qmin) qmin = moduli[r];
  if (fhjit_cuda_param_table(ctx, radix, moduli, (int32_t)rows, 0, 0, 1, &j.params, &j.pstride))
    die("fhjit_cuda_param_table");
  size_t set_bytes = 0, in_bytes[8], out_bytes[8];
  for (int32_t i = 0; i < j.nin; i++) fhjit_cuda_input_bytes(j.g, i, &in_bytes[i]), set_bytes += in_bytes[i];
  for (int32_t r = 0; r < j.nres; r++) fhjit_cuda_result_bytes(j.g, r, &out_bytes[r]), set_bytes += out_bytes[r];
  /* enough sets that one round of launches moves 4x the 60 MB L2 */
  int nsets = (int)(((size_t)256 << 20) / set_bytes + 1);
  if (nsets < 2) nsets = 2;
  if (nsets > 16) nsets = 16;
  for (int k = 0; k < nsets; k++) {
    for (int32_t i = 0; i < j.nin; i++) {
      if (fhjit_cuda_alloc(ctx, in_bytes[i], &j.sets[k].in[i]) != FHJIT_OK) die("alloc");
      fill_device(j.sets[k].in[i], in_bytes[i] / ws, ws, 2 * qmin);
    }
    for (int32_t r = 0; r < j.nres; r++)
      if (fhjit_cuda_alloc(ctx, out_bytes[r], &j.sets[k].out[r]) != FHJIT_OK) die("alloc");
  }
  /* every set's pointers checked once; the timed launches skip the checks,
   * which time the host, not the kernel */
  for (int k = 0; k < nsets; k++) launch_graph(&j, k, s);
  CU_OK(cu.cuStreamSynchronize(s));
  int verified = log2 <= 21 ? verify(&j, ws, moduli, rows) : -1;
  static const fhjit_cuda_options unchecked = {.flags = FHJIT_CUDA_NO_POINTER_CHECKS};
  j.options = &unchecked;
  double ms = time_launches(launch_graph, &j, nsets, nsets < 4 ? 4 : nsets, reps, s);
  double gbps = (double)set_bytes / (ms * 1e-3) / 1e9;
  row *rw = &rows_out[nrows < 1023 ? nrows++ : nrows];
  *rw = (row){graph_names[which], radix == FHJIT_R32 ? "r32" : "r62", log2, ms * 1e3, gbps,
              copy_gbps, verified, ""};
  snprintf(rw->plan, sizeof rw->plan, "%s", plan ? plan : "");
  printf("  %-18s %s 2^%d %s%s %10.2f us  %8.1f GB/s  %5.3f of copy  %s  (%d sets of %.1f MB, "
         "compile %.1f ms)\n",
         rw->graph, rw->radix, log2, plan ? "plan " : "", plan ? plan : "", rw->us, gbps,
         gbps / copy_gbps, verified < 0 ? "unchecked" : verified ? "exact" : "WRONG", nsets,
         set_bytes / 1e6, info.total_ms);
  fflush(stdout);
  if (!plan)
    bu_json_item("\"kind\": \"kernel\", \"graph\": \"%s\", \"radix\": \"%s\", \"log2\": %d, "
              "\"us\": %.3f, \"GBps\": %.2f, \"copy_GBps\": %.2f, \"ratio\": %.4f, "
              "\"bytes\": %zu, \"exact\": %d",
              rw->graph, rw->radix, log2, rw->us, gbps, copy_gbps, gbps / copy_gbps, set_bytes,
              verified);
  for (int k = 0; k < nsets; k++) {
    for (int32_t i = 0; i < j.nin; i++) fhjit_cuda_free(ctx, j.sets[k].in[i]);
    for (int32_t r = 0; r < j.nres; r++) fhjit_cuda_free(ctx, j.sets[k].out[r]);
  }
  fhjit_cuda_free(ctx, j.params);
  free(moduli);
  fhjit_graph_destroy(j.g);
  return rw;
}

/* ------------------------------------------------------------------ sweep */

/* Every graph and radix under each plan of a small grid (FHJIT_PW_PLAN, read
 * when the kernel is lowered; the runtime keys its caches by it), each timed
 * against the default copy and against a copy kernel cut like the plan (same
 * vector width, vectors per thread and block: the fair baseline). Prints the
 * best plan of each graph, radix and size. */
static void bench_sweep(const int *sizes, int nsizes, int reps, CUstream s, CUfunction copy) {
  static const int per_threads[] = {1, 2, 4}, blocks[] = {128, 256, 512};
  enum { NP = 9 };
  for (int si = 0; si < nsizes; si++) {
    int log2 = sizes[si];
    size_t copy_bytes = ((size_t)7 << log2) * 8 / 2;
    double copy_ms, copy_gbps = copy_bandwidth(copy, copy_bytes, (size_t)256 << 20, reps, s, &copy_ms);
    printf("sweep 2^%d: default copy %.1f GB/s\n", log2, copy_gbps);
    double plan_copy[NP];
    for (int p = 0; p < NP; p++) {
      int u = per_threads[p / 3], t = blocks[p % 3];
      plan_copy[p] = plan_copy_bandwidth(16, u, t, copy_bytes, (size_t)256 << 20, reps, s);
      printf("  copy plan V=16B,U=%d,T=%d: %.1f GB/s (%.3f of the default copy)\n", u, t,
             plan_copy[p], plan_copy[p] / copy_gbps);
      bu_json_item("\"kind\": \"sweep_copy\", \"log2\": %d, \"per_thread\": %d, \"block\": %d, "
                "\"GBps\": %.2f, \"default_copy_GBps\": %.2f", log2, u, t, plan_copy[p], copy_gbps);
    }
    for (int which = 0; which < G_COUNT; which++)
      for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
        row *best = NULL;
        double best_plan_copy = 0, default_us = 0;
        for (int p = 0; p < NP; p++) {
          char plan[32];
          int u = per_threads[p / 3], t = blocks[p % 3];
          snprintf(plan, sizeof plan, "U=%d,T=%d", u, t);
          setenv("FHJIT_PW_PLAN", plan, 1);
          row *rw = bench_graph(which, (fhjit_radix)radix, log2, reps, copy_gbps, s, plan);
          if (u == 1 && t == 256) default_us = rw->us;
          printf("      %.3f of the plan's copy\n", rw->gbps / plan_copy[p]);
          bu_json_item("\"kind\": \"sweep\", \"graph\": \"%s\", \"radix\": \"%s\", \"log2\": %d, "
                    "\"plan\": \"%s\", \"us\": %.3f, \"GBps\": %.2f, \"copy_GBps\": %.2f, "
                    "\"plan_copy_GBps\": %.2f, \"exact\": %d",
                    rw->graph, rw->radix, log2, plan, rw->us, rw->gbps, copy_gbps, plan_copy[p],
                    rw->verified);
          if (!best || rw->us < best->us) best = rw, best_plan_copy = plan_copy[p];
        }
        unsetenv("FHJIT_PW_PLAN");
        printf("  BEST %-18s %s 2^%d: %s %.2f us (default U=1,T=256 %.2f us), %.3f of the default "
               "copy, %.3f of its plan's copy\n",
               best->graph, best->radix, log2, best->plan, best->us, default_us,
               best->gbps / copy_gbps, best->gbps / best_plan_copy);
        bu_json_item("\"kind\": \"sweep_best\", \"graph\": \"%s\", \"radix\": \"%s\", \"log2\": %d, "
                  "\"plan\": \"%s\", \"us\": %.3f, \"default_us\": %.3f, \"ratio\": %.4f, "
                  "\"plan_copy_ratio\": %.4f",
                  best->graph, best->radix, log2, best->plan, best->us, default_us,
                  best->gbps / copy_gbps, best->gbps / best_plan_copy);
      }
  }
}

/* --------------------------------------------------------- compile latency */

static void bench_compile(int reps) {
  printf("compile latency (graph -> loaded module), median of %d:\n", reps);
  for (int which = 0; which < G_COUNT; which++) {
    for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
      double cold[32], warm[32], lower[32], link[32];
      fhjit_cuda_options off = {.flags = FHJIT_CUDA_NO_DISK_CACHE};
      int first_source = -1;
      for (int r = 0; r < reps; r++) {
        fhjit_context *c = fhjit_context_create();
        fhjit_graph *g = build(c, which, (fhjit_radix)radix, 32, 1 << 16);
        fhjit_cuda_compile_info info;
        if (!fhjit_cuda_compile(g, &off, &info)) {
          fprintf(stderr, "fhjit_bench: compile: %s\n", fhjit_last_error(c));
          exit(1);
        }
        cold[r] = info.total_ms, lower[r] = info.lower_ms, link[r] = info.link_ms;
        fhjit_context_destroy(c);
      }
      for (int r = 0; r <= reps; r++) { /* the first fills the cache (or hits it) */
        fhjit_context *c = fhjit_context_create();
        fhjit_graph *g = build(c, which, (fhjit_radix)radix, 32, 1 << 16);
        fhjit_cuda_compile_info info;
        if (!fhjit_cuda_compile(g, NULL, &info)) {
          fprintf(stderr, "fhjit_bench: compile: %s\n", fhjit_last_error(c));
          exit(1);
        }
        if (r == 0) first_source = info.source;
        else warm[r - 1] = info.source == FHJIT_CUDA_FROM_DISK ? info.total_ms : -1;
        fhjit_context_destroy(c);
      }
      double mc = bu_median(cold, reps), ml = bu_median(lower, reps), mk = bu_median(link, reps),
             mw = bu_median(warm, reps);
      printf("  %-18s %s  cold %8.3f ms (LLVM %.3f, driver link %.3f)  warm %7.3f ms%s\n",
             graph_names[which], radix ? "r62" : "r32", mc, ml, mk, mw,
             first_source == FHJIT_CUDA_FROM_DISK ? "  (first was already a disk hit)" : "");
      bu_json_item("\"kind\": \"compile\", \"graph\": \"%s\", \"radix\": \"%s\", \"cold_ms\": %.3f, "
                "\"lower_ms\": %.3f, \"link_ms\": %.3f, \"warm_ms\": %.3f, \"first_from_disk\": %d",
                graph_names[which], radix ? "r62" : "r32", mc, ml, mk, mw,
                first_source == FHJIT_CUDA_FROM_DISK);
    }
  }
}

/* One compile per graph and radix, reporting where it came from: run twice
 * with one --cache-dir, the second process shows warm hits. */
static void compile_once(void) {
  for (int which = 0; which < G_COUNT; which++)
    for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
      fhjit_graph *g = build(ctx, which, (fhjit_radix)radix, 32, 1 << 16);
      fhjit_cuda_compile_info info;
      double t0 = bu_now_ms();
      if (!fhjit_cuda_compile(g, NULL, &info)) die("fhjit_cuda_compile");
      double wall = bu_now_ms() - t0;
      const char *src = info.source == FHJIT_CUDA_FROM_DISK ? "disk" : "compiled";
      printf("  %-18s %s  %-8s %8.3f ms\n", graph_names[which], radix ? "r62" : "r32", src, wall);
      bu_json_item("\"kind\": \"compile_process\", \"graph\": \"%s\", \"radix\": \"%s\", "
                "\"source\": \"%s\", \"ms\": %.3f",
                graph_names[which], radix ? "r62" : "r32", src, wall);
      fhjit_graph_destroy(g);
    }
}

/* ------------------------------------------------------- launch overhead */

/* Host cost of one launch call: launches enqueued in batches of 64, each
 * batch timed on the host clock and then drained untimed, so the launch
 * queue never fills and the GPU's pace never shows (the "batched" figure);
 * also N launches back to back, which the GPU's throughput of tiny kernels
 * bounds once the queue is full (the "stream" figure, the old one). The
 * driver's own cuLaunchKernel of the same kernel is measured the same way. */
typedef struct launch_variant {
  const char *name, *key;
  int kind; /* 0 driver, 1 launch_kernel, 2 launch_kernel unchecked, 3 launch */
} launch_variant;

static fhjit_status launch_once(const launch_variant *v, fhjit_graph *g, fhjit_cuda_kernel *k,
                                fhjit_cuda_args *a, CUfunction fn, void **params, CUstream s) {
  switch (v->kind) {
  case 0:
    return cu.cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, s, params, NULL) == CUDA_SUCCESS
               ? FHJIT_OK : FHJIT_ERR_CUDA;
  case 3: return fhjit_cuda_launch(g, a);
  default: return fhjit_cuda_launch_kernel(k, a);
  }
}

static void bench_launch(int count, CUstream s) {
  fhjit_graph *g = build(ctx, G_MUL, FHJIT_R32, 1, 256);
  fhjit_cuda_kernel *k = fhjit_cuda_compile(g, NULL, NULL);
  if (!k) die("compile");
  uint64_t q;
  moduli_for(FHJIT_R32, 1, &q);
  graph_job j;
  memset(&j, 0, sizeof j);
  j.g = g, j.k = k, j.nin = 2, j.nres = 1;
  if (fhjit_cuda_param_table(ctx, FHJIT_R32, &q, 1, 0, 0, 1, &j.params, &j.pstride)) die("params");
  for (int i = 0; i < 2; i++) fhjit_cuda_alloc(ctx, 1024, &j.sets[0].in[i]), fill_device(j.sets[0].in[i], 256, 4, 2 * q);
  fhjit_cuda_alloc(ctx, 1024, &j.sets[0].out[0]);
  /* the same kernel loaded by hand, for the driver's own launch cost */
  const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, fhjit_cuda_kernel_info(k)->target);
  if (!ptx) die("fhjit_emit");
  CUmodule m;
  CUfunction fn;
  CU_OK(cu.cuModuleLoadData(&m, ptx));
  CU_OK(cu.cuModuleGetFunction(&fn, m, "fhjit_mul"));
  void *params[5] = {&j.params, &j.pstride, &j.sets[0].in[0], &j.sets[0].in[1], &j.sets[0].out[0]};
  fhjit_cuda_options fast = {.flags = FHJIT_CUDA_NO_POINTER_CHECKS};
  fhjit_cuda_args a = {.params = j.params, .pstride = j.pstride, .inputs = j.sets[0].in,
                       .ninputs = 2, .results = j.sets[0].out, .nresults = 1, .stream = s};
  static const launch_variant variants[] = {
      {"cuLaunchKernel (the driver alone)", "cuLaunchKernel", 0},
      {"fhjit_cuda_launch_kernel", "fhjit_cuda_launch_kernel", 1},
      {"  without pointer checks", "no_pointer_checks", 2},
      {"fhjit_cuda_launch (graph -> kernel)", "fhjit_cuda_launch", 3}};
  enum { BATCH = 64 };
  printf("host launch overhead (a 256-element graph; batched: %d launches per timed batch, the "
         "queue never full; stream: %d back to back):\n", BATCH, count);
  fx_tag(g);
  for (int vi = 0; vi < 4; vi++) {
    const launch_variant *v = &variants[vi];
    a.options = v->kind == 2 ? &fast : NULL;
    for (int w = 0; w < 100; w++)
      if (launch_once(v, g, k, &a, fn, params, s) != FHJIT_OK) die("launch");
    CU_OK(cu.cuStreamSynchronize(s));
    /* batched: host time only */
    double host = 0;
    int batches = count / BATCH;
    double *per = malloc(sizeof *per * (size_t)batches);
    for (int b = 0; b < batches; b++) {
      double t0 = bu_now_ms();
      for (int i = 0; i < BATCH; i++)
        if (launch_once(v, g, k, &a, fn, params, s) != FHJIT_OK) die("launch");
      per[b] = (bu_now_ms() - t0) * 1e3 / BATCH;
      host += per[b];
      CU_OK(cu.cuStreamSynchronize(s));
    }
    double batched_mean = host / batches, batched_median = bu_median(per, batches);
    free(per);
    /* stream: back to back */
    double t0 = bu_now_ms();
    for (int i = 0; i < count; i++)
      if (launch_once(v, g, k, &a, fn, params, s) != FHJIT_OK) die("launch");
    double stream_host = (bu_now_ms() - t0) * 1e3 / count;
    CU_OK(cu.cuStreamSynchronize(s));
    double total = (bu_now_ms() - t0) * 1e3 / count;
    printf("  %-38s batched %6.2f us (median batch %6.2f)   stream %6.2f us host, %6.2f with the "
           "GPU's work\n",
           v->name, batched_mean, batched_median, stream_host, total);
    bu_json_item("\"kind\": \"launch\", \"variant\": \"%s\", \"host_us\": %.3f, "
              "\"batched_median_us\": %.3f, \"stream_host_us\": %.3f, \"total_us\": %.3f",
              v->key, batched_mean, batched_median, stream_host, total);
  }
  for (int i = 0; i < 2; i++) fhjit_cuda_free(ctx, j.sets[0].in[i]);
  fhjit_cuda_free(ctx, j.sets[0].out[0]);
  fhjit_cuda_free(ctx, j.params);
  fhjit_graph_destroy(g);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* logs survive a crash */
  int sizes[4] = {21, 26}, nsizes = 2, compile_only = 0, quick = 0, sweep = 0;
  const char *json_path = NULL, *cache_dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--log2") && i + 1 < argc) {
      nsizes = 0;
      for (char *p = argv[++i]; *p && nsizes < 4;) {
        sizes[nsizes++] = (int)strtol(p, &p, 10);
        if (*p == ',') p++;
      }
    } else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) cache_dir = argv[++i];
    else if (!strcmp(argv[i], "--compile-only")) compile_only = 1;
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--sweep")) sweep = 1;
    else {
      fprintf(stderr, "usage: %s [--log2 21,26] [--json FILE] [--compile-only] [--quick] "
                      "[--cache-dir DIR] [--sweep]\n", argv[0]);
      return 2;
    }
  }
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] < 8 || sizes[i] > 28) {
      fprintf(stderr, "fhjit_bench: --log2 sizes must be in 8..28\n");
      return 2;
    }
  ctx = fhjit_context_create();
  if (!fhjit_cuda_available(ctx)) {
    printf("SKIP: %s\n", fhjit_last_error(ctx));
    return 77;
  }
  fhjit_cuda_context cuctx;
  if (fhjit_cuda_current_context(ctx, 0, &cuctx) != FHJIT_OK) die("fhjit_cuda_current_context");
  load_driver();
  int fake = fx_install(ctx, fake_copy);
  char tmp_cache[] = "/tmp/fhjit-bench-cache-XXXXXX";
  if (!cache_dir && mkdtemp(tmp_cache)) cache_dir = tmp_cache;
  if (cache_dir) setenv("FHJIT_CACHE_DIR", cache_dir, 1);
  if (json_path && !(bu_json = fopen(json_path, "w"))) {
    fprintf(stderr, "fhjit_bench: cannot write %s\n", json_path);
    return 1;
  }
  if (bu_json) fprintf(bu_json, "{\"fhjit\": \"%s\", \"fake_driver\": %d, \"results\": [", fhjit_version(), fake);
  if (fake) printf("fake driver: kernels run on the host; the times mean nothing\n");
  if (compile_only) {
    printf("compile in this process (cache %s):\n", cache_dir ? cache_dir : "default");
    compile_once();
  } else {
    CUstream s;
    CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUmodule m;
    CUfunction copy;
    CU_OK(cu.cuModuleLoadData(&m, copy_ptx));
    CU_OK(cu.cuModuleGetFunction(&copy, m, "fhjit_bench_copy"));
    int reps = quick || fake ? 5 : 25;
    if (sweep) {
      bench_sweep(sizes, nsizes, reps, s, copy);
      nsizes = 0; /* then only the launch overhead */
    }
    for (int si = 0; si < nsizes; si++) {
      int log2 = sizes[si];
      /* the copy moves as many bytes per launch as a tensor product in r62 */
      double copy_ms, copy_gbps = copy_bandwidth(copy, ((size_t)7 << log2) * 8 / 2,
                                                 (size_t)256 << 20, reps, s, &copy_ms);
      printf("elements 2^%d: copy %.1f GB/s (%.2f us for %.1f MB read + written)\n", log2,
             copy_gbps, copy_ms * 1e3, 7.0 * (double)((size_t)1 << log2) * 8 / 1e6);
      bu_json_item("\"kind\": \"copy\", \"log2\": %d, \"GBps\": %.2f, \"us\": %.3f", log2, copy_gbps,
                copy_ms * 1e3);
      for (int which = 0; which < G_COUNT; which++)
        for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++)
          bench_graph(which, (fhjit_radix)radix, log2, reps, copy_gbps, s, NULL);
    }
    if (!sweep) bench_compile(quick || fake ? 3 : 7);
    bench_launch(fake ? 256 : 20032, s);
  }
  if (bu_json) {
    fprintf(bu_json, "\n]}\n");
    fclose(bu_json);
  }
  int wrong = 0;
  for (int i = 0; i < nrows; i++) wrong += rows_out[i].verified == 0;
  if (cache_dir == tmp_cache) {
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_cache);
    if (system(cmd) != 0) fprintf(stderr, "fhjit_bench: could not remove %s\n", tmp_cache);
  }
  fhjit_context_destroy(ctx);
  if (wrong) printf("%d kernels gave results that differ from fhjit_interpret\n", wrong);
  return wrong ? 1 : 0;
}
