/* fhjit_gpu_test.c: fhjit's kernels on a real GPU against the reference
 * interpreter, bit for bit: every example graph (examples, *.fh), a random
 * corpus of graphs built with the C API (both radices, strided, broadcast,
 * offset and aliasing input layouts, in-place results), sizes from one
 * element to 2^26, several streams at once, CUDA graph capture, the disk
 * cache, and the error paths (bad pointers and sizes, a kernel launched in
 * another context, an absurd allocation), and SPEC section 7's ops (bconv,
 * rescale, moddown, modup, re-indexing) on chains up to its benchmark
 * shapes, and issue 17's CKKS proofs (key switch, relinearisation and
 * rescale, rotations, decrypted with test/unit/rlwe.c). Public API only (libfhjit.so);
 * driver calls go through fhjit_cuda_driver_proc. Prints one PASS/FAIL line
 * per group and "N passed, N failed"; exits 77 (skipped) without a driver.
 *
 *   fhjit_gpu_test [--examples DIR] [--max-log2 K] [--random N] [--seed S]
 *                  [--quick] [--verbose] [--only G1,G2,..] [--skip G1,G2,..]
 * --quick: small sizes and few graphs (for compute-sanitizer); --only and
 * --skip: the groups (their names in the PASS/FAIL lines) to run or to
 * leave out, so that a time-limited round can run them in two processes. */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"         /* clock, splitmix64 */
#include "ckks_checks.h"        /* test/unit: the toy RLWE's CKKS proofs */
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "fake_exec.h"          /* kernels on the host under the fake driver */
#include "runtime/cuda_api.h" /* declarations only: types and values */

#ifndef FHJIT_EXAMPLES_DIR
#define FHJIT_EXAMPLES_DIR "examples"
#endif

/* ------------------------------------------------------------ the harness */

static fhjit_context *ctx;
static int verbose;
static int passed, failed;       /* checks of the whole run */
static int group_pass, group_fail;

static void group_begin(void) { group_pass = group_fail = 0; }

static void group_end(const char *name) {
  printf("%s %-12s %d passed, %d failed\n", group_fail ? "FAIL" : "PASS", name, group_pass,
         group_fail);
  fflush(stdout);
}

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...) {
  if (ok) passed++, group_pass++;
  else failed++, group_fail++;
  if (!ok || verbose) {
    va_list ap;
    va_start(ap, fmt);
    printf("  %s: ", ok ? "ok" : "FAILED");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
  }
}

static uint64_t rng_state = 0x5eed;
static uint64_t rnd(void) { return bu_splitmix(&rng_state); }
static uint64_t below(uint64_t n) { return n ? (uint64_t)(((unsigned __int128)rnd() * n) >> 64) : 0; }

/* --------------------------------------------------------------- driver */

static struct {
  PFN_cuCtxGetCurrent cuCtxGetCurrent;
  PFN_cuCtxSetCurrent cuCtxSetCurrent;
  PFN_cuCtxCreate_v2 cuCtxCreate;
  CUresult (*cuCtxCreate4)(CUcontext *ctx, void *params, unsigned int flags, CUdevice dev);
  PFN_cuCtxDestroy_v2 cuCtxDestroy;
  PFN_cuCtxSynchronize cuCtxSynchronize;
  PFN_cuStreamCreate cuStreamCreate;
  PFN_cuStreamDestroy_v2 cuStreamDestroy;
  PFN_cuStreamSynchronize cuStreamSynchronize;
  PFN_cuStreamBeginCapture_v2 cuStreamBeginCapture;
  PFN_cuStreamEndCapture cuStreamEndCapture;
  PFN_cuGraphInstantiateWithFlags cuGraphInstantiate;
  PFN_cuGraphLaunch cuGraphLaunch;
  PFN_cuGraphExecDestroy cuGraphExecDestroy;
  PFN_cuGraphDestroy cuGraphDestroy;
  PFN_cuMemsetD8_v2 cuMemsetD8;
} cu;

static int load_driver(void) {
  struct {
    void **slot;
    const char *name;
  } procs[] = {
      {(void **)&cu.cuCtxGetCurrent, "cuCtxGetCurrent"},
      {(void **)&cu.cuCtxSetCurrent, "cuCtxSetCurrent"},

      {(void **)&cu.cuCtxDestroy, "cuCtxDestroy_v2"},
      {(void **)&cu.cuCtxSynchronize, "cuCtxSynchronize"},
      {(void **)&cu.cuStreamCreate, "cuStreamCreate"},
      {(void **)&cu.cuStreamDestroy, "cuStreamDestroy_v2"},
      {(void **)&cu.cuStreamSynchronize, "cuStreamSynchronize"},
      {(void **)&cu.cuStreamBeginCapture, "cuStreamBeginCapture_v2"},
      {(void **)&cu.cuStreamEndCapture, "cuStreamEndCapture"},
      {(void **)&cu.cuGraphInstantiate, "cuGraphInstantiateWithFlags"},
      {(void **)&cu.cuGraphLaunch, "cuGraphLaunch"},
      {(void **)&cu.cuGraphExecDestroy, "cuGraphExecDestroy"},
      {(void **)&cu.cuGraphDestroy, "cuGraphDestroy"},
      {(void **)&cu.cuMemsetD8, "cuMemsetD8_v2"},
  };
  for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
    *procs[i].slot = fhjit_cuda_driver_proc(ctx, procs[i].name);
    if (!*procs[i].slot) {
      printf("cannot use the driver: %s\n", fhjit_last_error(ctx));
      return 0;
    }
  }
  /* cuda.h of CUDA 13 means cuCtxCreate_v4; the _v2 ABI is still exported */
  *(void **)&cu.cuCtxCreate = fhjit_cuda_driver_proc(ctx, "cuCtxCreate_v2");
  *(void **)&cu.cuCtxCreate4 = fhjit_cuda_driver_proc(ctx, "cuCtxCreate_v4");
  fhjit_clear_error(ctx);
  if (!cu.cuCtxCreate && !cu.cuCtxCreate4) {
    printf("cannot use the driver: neither cuCtxCreate_v2 nor cuCtxCreate_v4\n");
    return 0;
  }
  return 1;
}

#define CU_OK(call)                                                             \
  do {                                                                          \
    CUresult r_ = (call);                                                       \
    if (r_ != CUDA_SUCCESS) {                                                   \
      printf("  %s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, (int)r_); \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

/* ----------------------------------------------------------------- cases */

/* Host and device buffers of one run of a bound graph. Inputs may share a
 * buffer (aliasing layouts): input i lives in buffer owner[i]. */
typedef struct gcase {
  fhjit_graph *g;
  fhjit_radix radix;
  size_t ws;
  int32_t rows;
  uint64_t moduli[64];
  void *params;
  int64_t pstride;
  int32_t nin, nres;
  int32_t owner[32];
  size_t in_bytes[32];   /* of each buffer (owner's: the largest of its users) */
  void *host_in[32];
  void *ref[32];         /* interpreter results */
  size_t res_bytes[32];
  fhjit_cuda_ptr dparams, din[32], dres[32];
  int32_t inplace_result, inplace_input; /* -1: none */
  fhjit_cuda_kernel *kernel;
} gcase;

static int32_t graph_rows(fhjit_graph *g) {
  int32_t rows = 1;
  fhjit_type t;
  for (int32_t i = 0; i < fhjit_num_inputs(g); i++)
    if (fhjit_input_binding(g, i, &t, NULL) == FHJIT_OK && t.kind == FHJIT_KIND_POLY &&
        t.rows > rows)
      rows = (int32_t)t.rows;
  for (int32_t r = 0; r < fhjit_num_results(g); r++)
    if (fhjit_result_type(g, r, &t) == FHJIT_OK && t.rows > rows) rows = (int32_t)t.rows;
  return rows;
}

/* Moduli for `rows` limbs: NTT-friendly primes near the radix limit and well
 * below it, or one prime for every row (then the lazy edge values below are
 * exact for every row). */
static int pick_moduli(fhjit_radix radix, int32_t rows, uint64_t *out, int same) {
  uint64_t pool[16];
  int near_limit = (int)below(2);
  int bits = radix == FHJIT_R32 ? (near_limit ? 30 : 24) : (near_limit ? 60 : 45);
  if (fhjit_find_primes(ctx, bits, near_limit ? 1u << 17 : 1u << 10, 16, pool) != FHJIT_OK) {
    check(0, "fhjit_find_primes: %s", fhjit_last_error(ctx));
    return 0;
  }
  for (int32_t r = 0; r < rows; r++) out[r] = same ? pool[0] : pool[(r + below(16)) % 16];
  return 1;
}

static void put_word(void *buf, size_t ws, size_t i, uint64_t v) {
  if (ws == 4) ((uint32_t *)buf)[i] = (uint32_t)v;
  else ((uint64_t *)buf)[i] = v;
}

static uint64_t get_word(const void *buf, size_t ws, size_t i) {
  return ws == 4 ? ((const uint32_t *)buf)[i] : ((const uint64_t *)buf)[i];
}

/* Random lazy words, valid for every limb: below 2*qmin, one in eight an
 * edge value of qmin (0, 1, q-1, q, q+1, 2q-2, 2q-1). */
static void fill_lazy(void *buf, size_t ws, size_t words, uint64_t qmin) {
  for (size_t i = 0; i < words; i++) {
    uint64_t v;
    if (below(8) == 0) {
      const uint64_t edges[7] = {0, 1, qmin - 1, qmin, qmin + 1, 2 * qmin - 2, 2 * qmin - 1};
      v = edges[below(7)];
    } else {
      v = below(2 * qmin);
    }
    put_word(buf, ws, i, v);
  }
}

static void case_free(gcase *c) {
  for (int32_t i = 0; i < c->nin; i++) {
    if (c->owner[i] == i) {
      free(c->host_in[i]);
      fhjit_cuda_free(ctx, c->din[i]);
    }
  }
  for (int32_t r = 0; r < c->nres; r++) {
    free(c->ref[r]);
    if (r != c->inplace_result) fhjit_cuda_free(ctx, c->dres[r]);
  }
  free(c->params);
  fhjit_cuda_free(ctx, c->dparams);
  memset(c, 0, sizeof *c);
}

/* Prepares inputs (alias_of[i] >= 0: input i reads input alias_of[i]'s
 * buffer), the reference results, and the device buffers. 0 on failure. */
static int case_init(gcase *c, fhjit_graph *g, const uint64_t *moduli, const int32_t *alias_of,
                     const char *label) {
  memset(c, 0, sizeof *c);
  c->g = g;
  c->radix = fhjit_graph_radix(g);
  c->ws = c->radix == FHJIT_R32 ? 4 : 8;
  c->rows = graph_rows(g);
  c->nin = fhjit_num_inputs(g);
  c->nres = fhjit_num_results(g);
  c->inplace_result = c->inplace_input = -1;
  if (c->nin > 32 || c->nres > 32 || c->rows > 64) {
    check(0, "%s: graph too large for the harness", label);
    return 0;
  }
  uint64_t qmin = UINT64_MAX;
  for (int32_t r = 0; r < c->rows; r++) {
    c->moduli[r] = moduli[r];
    if (moduli[r] < qmin) qmin = moduli[r];
  }
  c->pstride = c->rows;
  c->params = malloc((size_t)(8 * c->rows) * c->ws);
  if (fhjit_param_table(ctx, c->radix, c->moduli, c->rows, 0, 0, 1, c->params, c->pstride) !=
      FHJIT_OK) {
    check(0, "%s: fhjit_param_table: %s", label, fhjit_last_error(ctx));
    return 0;
  }
  for (int32_t i = 0; i < c->nin; i++) {
    c->owner[i] = alias_of && alias_of[i] >= 0 ? alias_of[i] : i;
    size_t bytes;
    if (fhjit_cuda_input_bytes(g, i, &bytes) != FHJIT_OK) {
      check(0, "%s: %s", label, fhjit_last_error(ctx));
      return 0;
    }
    if (bytes > c->in_bytes[c->owner[i]]) c->in_bytes[c->owner[i]] = bytes;
  }
  const void *ins[32];
  void *refs[32];
  for (int32_t i = 0; i < c->nin; i++) {
    if (c->owner[i] != i) continue;
    size_t bytes = (c->in_bytes[i] + 15) & ~(size_t)15;
    c->host_in[i] = malloc(bytes);
    fill_lazy(c->host_in[i], c->ws, bytes / c->ws, qmin);
    if (fhjit_cuda_alloc(ctx, bytes, &c->din[i]) != FHJIT_OK ||
        fhjit_cuda_upload(ctx, c->din[i], c->host_in[i], bytes) != FHJIT_OK) {
      check(0, "%s: %s", label, fhjit_last_error(ctx));
      return 0;
    }
  }
  for (int32_t i = 0; i < c->nin; i++) {
    c->host_in[i] = c->host_in[c->owner[i]];
    c->din[i] = c->din[c->owner[i]];
    ins[i] = c->host_in[i];
  }
  for (int32_t r = 0; r < c->nres; r++) {
    fhjit_cuda_result_bytes(g, r, &c->res_bytes[r]);
    c->ref[r] = malloc(c->res_bytes[r]);
    memset(c->ref[r], 0x5a, c->res_bytes[r]);
    refs[r] = c->ref[r];
    if (fhjit_cuda_alloc(ctx, c->res_bytes[r], &c->dres[r]) != FHJIT_OK) {
      check(0, "%s: %s", label, fhjit_last_error(ctx));
      return 0;
    }
  }
  if (fhjit_interpret(g, c->params, c->pstride, ins, refs) != FHJIT_OK) {
    check(0, "%s: fhjit_interpret: %s", label, fhjit_last_error(ctx));
    return 0;
  }
  if (fhjit_cuda_alloc(ctx, (size_t)(8 * c->rows) * c->ws, &c->dparams) != FHJIT_OK ||
      fhjit_cuda_upload(ctx, c->dparams, c->params, (size_t)(8 * c->rows) * c->ws) != FHJIT_OK) {
    check(0, "%s: %s", label, fhjit_last_error(ctx));
    return 0;
  }
  return 1;
}

static void case_args(const gcase *c, fhjit_cuda_args *a, fhjit_cuda_stream stream) {
  memset(a, 0, sizeof *a);
  a->params = c->dparams;
  a->pstride = c->pstride;
  a->inputs = c->din;
  a->ninputs = c->nin;
  a->results = c->dres;
  a->nresults = c->nres;
  a->stream = stream;
}

/* Poisons the device results (so unwritten elements show). */
static void case_poison(const gcase *c) {
  for (int32_t r = 0; r < c->nres; r++)
    if (r != c->inplace_result) CU_OK(cu.cuMemsetD8(c->dres[r], 0xA5, c->res_bytes[r]));
}

/* Downloads and compares every result word with the interpreter's, and the
 * inputs (except one overwritten in place) with what was uploaded. */
static int case_verify(const gcase *c, const char *label) {
  int ok = 1;
  for (int32_t r = 0; r < c->nres && ok; r++) {
    void *got = malloc(c->res_bytes[r]);
    if (fhjit_cuda_download(ctx, got, c->dres[r], c->res_bytes[r]) != FHJIT_OK) {
      check(0, "%s: %s", label, fhjit_last_error(ctx));
      free(got);
      return 0;
    }
    size_t words = c->res_bytes[r] / c->ws, bad = 0, first = 0;
    for (size_t i = 0; i < words; i++)
      if (get_word(got, c->ws, i) != get_word(c->ref[r], c->ws, i) && !bad++) first = i;
    if (bad) {
      check(0, "%s: result #%d: %zu of %zu words differ; first at word %zu: gpu %llu, "
               "interpreter %llu",
            label, (int)r, bad, words, first, (unsigned long long)get_word(got, c->ws, first),
            (unsigned long long)get_word(c->ref[r], c->ws, first));
      ok = 0;
    }
    free(got);
  }
  for (int32_t i = 0; i < c->nin && ok; i++) {
    if (c->owner[i] != i || c->owner[i] == c->inplace_input) continue;
    size_t bytes = (c->in_bytes[i] + 15) & ~(size_t)15;
    void *got = malloc(bytes);
    fhjit_cuda_download(ctx, got, c->din[i], bytes);
    if (memcmp(got, c->host_in[i], bytes)) {
      check(0, "%s: input #%d was changed by the run", label, (int)i);
      ok = 0;
    }
    free(got);
  }
  return ok;
}

/* Compiles, launches on `stream`, waits, verifies. */
static int case_run(gcase *c, fhjit_cuda_stream stream, const char *label) {
  fhjit_cuda_compile_info info;
  c->kernel = fhjit_cuda_compile(c->g, NULL, &info);
  if (!c->kernel) {
    check(0, "%s: fhjit_cuda_compile: %s", label, fhjit_last_error(ctx));
    return 0;
  }
  case_poison(c);
  fhjit_cuda_args a;
  case_args(c, &a, stream);
  fx_tag(c->g);
  if (fhjit_cuda_launch_kernel(c->kernel, &a) != FHJIT_OK) {
    check(0, "%s: launch: %s", label, fhjit_last_error(ctx));
    return 0;
  }
  CU_OK(stream ? cu.cuStreamSynchronize((CUstream)stream) : cu.cuCtxSynchronize());
  return case_verify(c, label);
}

/* Picks a result that may be written over an input (same type, dense
 * input); the runtime refuses it when the result is not computed from the
 * input, which is then no in-place case. */
static int pick_inplace(gcase *c) {
  for (int32_t r = 0; r < c->nres; r++) {
    fhjit_type rt;
    fhjit_result_type(c->g, r, &rt);
    for (int32_t i = 0; i < c->nin; i++) {
      fhjit_type it;
      fhjit_layout il, dense;
      fhjit_input_binding(c->g, i, &it, &il);
      if (c->owner[i] != i) continue;
      int shared = 0;
      for (int32_t j = 0; j < c->nin; j++) shared |= j != i && c->owner[j] == i;
      if (shared || it.kind != rt.kind || it.comps != rt.comps || it.nbatch != rt.nbatch ||
          it.rows != rt.rows || it.n != rt.n || memcmp(it.batch, rt.batch, sizeof it.batch))
        continue;
      if (fhjit_dense_layout(&it, &dense) != FHJIT_OK || memcmp(&dense, &il, sizeof il)) continue;
      c->inplace_result = r;
      c->inplace_input = i;
      fhjit_cuda_free(ctx, c->dres[r]);
      c->dres[r] = c->din[i];
      return 1;
    }
  }
  return 0;
}

/* -------------------------------------------------------- random graphs */

typedef struct rgraph {
  fhjit_graph *g;
  int32_t alias_of[32];
  int inplace; /* try to run in place */
} rgraph;

static fhjit_value try_op(fhjit_graph *g, int op, fhjit_value a, fhjit_value b) {
  switch (op) {
  case 0: return fhjit_add(g, a, b);
  case 1: return fhjit_sub(g, a, b);
  case 2: return fhjit_add_lazy(g, a, b);
  case 3: return fhjit_mul(g, a, b);
  case 4: return fhjit_neg(g, a);
  case 5: return fhjit_to_mont(g, a);
  case 6: return fhjit_from_mont(g, a);
  case 7: return fhjit_mul_plain(g, a, b);
  case 8: return fhjit_add_plain(g, a, b);
  case 9: {
    fhjit_type t;
    fhjit_value_type(g, a, &t);
    return t.comps > 0 ? fhjit_extract(g, a, (int32_t)below((uint64_t)t.comps)) : FHJIT_NO_VALUE;
  }
  default: {
    fhjit_value parts[3] = {a, b, a};
    return fhjit_pack(g, 2 + (int32_t)below(2), parts);
  }
  }
}

/* A random layout for type t: strided (gaps), offset, broadcast axes (stride
 * 0), or dense. */
static void random_layout(const fhjit_type *t, fhjit_layout *l) {
  fhjit_dense_layout(t, l);
  if (below(3) == 0) return;
  int64_t s = 1;
  l->index_stride = below(4) == 0 ? 2 : 1;
  s = t->n * l->index_stride + (int64_t)below(3);
  l->row_stride = below(6) == 0 ? 0 : s; /* row stride 0: one row broadcast */
  s *= t->rows;
  for (int a = t->nbatch - 1; a >= 0; a--) {
    l->batch_stride[a] = below(5) == 0 ? 0 : s + (int64_t)below(2);
    s = (s + 1) * t->batch[a];
  }
  if (t->comps > 0) l->comp_stride = below(5) == 0 ? 0 : s + 3;
  l->offset = (int64_t)below(9);
}

static int random_graph(rgraph *rg, fhjit_radix radix, int max_log2, const char *name) {
  memset(rg, 0, sizeof *rg);
  for (int i = 0; i < 32; i++) rg->alias_of[i] = -1;
  fhjit_graph *g = fhjit_graph_create(ctx, name, radix);
  const int64_t ns[] = {1, 2, 3, 7, 8, 64, 100, 256, 1000, 4096};
  int64_t n = ns[below(sizeof ns / sizeof *ns)];
  int64_t rows = 1 + (int64_t)below(4);
  int comps = 1 + (int)below(3);
  int nbatch = (int)below(3);
  int64_t batch[FHJIT_MAX_BATCH] = {1, 1, 1, 1};
  for (int a = 0; a < nbatch; a++) batch[a] = 1 + (int64_t)below(3);
  while (n * rows * comps * batch[0] * batch[1] > ((int64_t)1 << max_log2) && n > 1) n /= 2;
  int nin = 2 + (int)below(3);
  fhjit_value vals[64];
  int nv = 0;
  for (int i = 0; i < nin; i++) {
    fhjit_type t;
    memset(&t, 0, sizeof t);
    t.kind = FHJIT_KIND_POLY;
    t.comps = below(3) == 0 ? (int)below(2) : comps; /* 0 or 1: broadcast over components */
    t.nbatch = nbatch;
    for (int a = 0; a < nbatch; a++) t.batch[a] = below(4) == 0 ? 1 : batch[a];
    t.rows = rows;
    t.n = n;
    char iname[16];
    snprintf(iname, sizeof iname, "in%d", i);
    vals[nv++] = fhjit_input(g, iname, &t);
  }
  int nops = 1 + (int)below(12);
  for (int tries = 0; tries < 200 && nops > 0 && nv < 60; tries++) {
    fhjit_value a = vals[below((uint64_t)nv)], b = vals[below((uint64_t)nv)];
    fhjit_value v = try_op(g, (int)below(11), a, b);
    if (v == FHJIT_NO_VALUE) {
      fhjit_clear_error(ctx);
      continue;
    }
    vals[nv++] = v;
    nops--;
  }
  if (nv == nin) {
    fhjit_graph_destroy(g);
    return 0;
  }
  fhjit_output(g, vals[nv - 1], "last");
  int extra = (int)below(3);
  for (int e = 0; e < extra; e++) {
    char oname[16];
    snprintf(oname, sizeof oname, "out%d", e);
    fhjit_output(g, vals[nin + (int)below((uint64_t)(nv - nin))], oname);
  }
  if (below(4) == 0) fhjit_output(g, vals[0], "input_view");
  for (int i = 0; i < nin; i++) {
    fhjit_type t;
    fhjit_value_type(g, vals[i], &t);
    fhjit_layout l;
    random_layout(&t, &l);
    if (fhjit_bind_input(g, vals[i], NULL, &l) != FHJIT_OK) fhjit_clear_error(ctx);
  }
  /* aliasing: a later input reads the same buffer as input 0 */
  if (nin > 1 && below(4) == 0) rg->alias_of[1 + below((uint64_t)nin - 1)] = 0;
  if (fhjit_bind(g) != FHJIT_OK) {
    fhjit_clear_error(ctx);
    fhjit_graph_destroy(g);
    return 0;
  }
  rg->g = g;
  rg->inplace = below(3) == 0;
  return 1;
}

/* ---------------------------------------------------------------- groups */

static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
    free(text);
    text = NULL;
  }
  fclose(f);
  if (text) text[n] = 0, *size = (size_t)n;
  return text;
}

static void group_examples(const char *dir) {
  group_begin();
  DIR *d = opendir(dir);
  if (!d) {
    check(0, "cannot open the examples directory %s", dir);
    group_end("examples");
    return;
  }
  struct dirent *e;
  char names[64][256];
  int count = 0;
  while ((e = readdir(d)) && count < 64) {
    size_t len = strlen(e->d_name);
    if (len > 3 && !strcmp(e->d_name + len - 3, ".fh")) snprintf(names[count++], 256, "%s", e->d_name);
  }
  closedir(d);
  for (int i = 0; i < count; i++) {
    char path[1024];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path) {
      check(0, "%s/%s: path too long", dir, names[i]);
      continue;
    }
    size_t size;
    char *text = read_file(path, &size);
    fhjit_graph *g = text ? fhjit_parse(ctx, text, size, path) : NULL;
    free(text);
    if (!g) {
      check(0, "%s: %s", names[i], fhjit_last_error(ctx));
      continue;
    }
    if (!fhjit_is_bound(g) && fhjit_bind(g) != FHJIT_OK) {
      check(0, "%s: bind: %s", names[i], fhjit_last_error(ctx));
      fhjit_graph_destroy(g);
      continue;
    }
    uint64_t moduli[64];
    int32_t rows = graph_rows(g), have = fhjit_graph_num_moduli(g);
    if (have >= rows && rows <= 64) memcpy(moduli, fhjit_graph_moduli(g), sizeof *moduli * (size_t)rows);
    else if (!pick_moduli(fhjit_graph_radix(g), rows, moduli, 0)) continue;
    gcase c;
    if (case_init(&c, g, moduli, NULL, names[i])) {
      int ok = case_run(&c, NULL, names[i]);
      check(ok, "%s (%d results)", names[i], (int)c.nres);
      if (ok && c.nres > 0 && pick_inplace(&c)) {
        fhjit_cuda_args a;
        case_args(&c, &a, NULL);
        fx_tag(c.g);
        if (fhjit_cuda_launch_kernel(c.kernel, &a) == FHJIT_OK) {
          CU_OK(cu.cuCtxSynchronize());
          check(case_verify(&c, names[i]), "%s in place (result #%d over input #%d)", names[i],
                (int)c.inplace_result, (int)c.inplace_input);
        } else if (verbose) {
          printf("  %s: in place refused: %s\n", names[i], fhjit_last_error(ctx));
        }
      }
    }
    case_free(&c);
    fhjit_graph_destroy(g);
  }
  check(count > 0, "%d example graphs in %s", count, dir);
  group_end("examples");
}

static void group_random(int count, int max_log2) {
  group_begin();
  int inplace_runs = 0, aliasing = 0;
  /* past count, up to 200 more graphs until one ran in place and one had
   * aliasing inputs: a short run (--quick: 24) may draw neither */
  for (int i = 0; i < count || ((!inplace_runs || !aliasing) && i < count + 200); i++) {
    rgraph rg;
    char name[32];
    snprintf(name, sizeof name, "random%d", i);
    fhjit_radix radix = (fhjit_radix)(i & 1);
    if (!random_graph(&rg, radix, max_log2, name)) {
      i--; /* not a valid graph: draw again (the builder refused it) */
      continue;
    }
    uint64_t moduli[64];
    int32_t rows = graph_rows(rg.g);
    if (!pick_moduli(radix, rows, moduli, below(3) == 0)) break;
    gcase c;
    char label[600];
    const char *text = fhjit_print(rg.g);
    snprintf(label, sizeof label, "%s (%s)%s", name, radix ? "r62" : "r32",
             verbose && text ? text : "");
    for (int j = 0; j < 32; j++) aliasing += rg.alias_of[j] >= 0;
    if (case_init(&c, rg.g, moduli, rg.alias_of, label)) {
      int ok = case_run(&c, NULL, label);
      if (ok && rg.inplace && c.nres > 0 && pick_inplace(&c)) {
        fhjit_cuda_args a;
        case_args(&c, &a, NULL);
        fx_tag(c.g);
        fhjit_status s = fhjit_cuda_launch_kernel(c.kernel, &a);
        if (s == FHJIT_OK) {
          CU_OK(cu.cuCtxSynchronize());
          ok = case_verify(&c, label);
          inplace_runs++;
        } else if (!strstr(fhjit_last_error(ctx), "not computed from that input")) {
          check(0, "%s: in place refused: %s", label, fhjit_last_error(ctx));
        }
      }
      check(ok, "%s", label);
    }
    case_free(&c);
    fhjit_graph_destroy(rg.g);
  }
  check(inplace_runs > 0, "%d random graphs ran in place", inplace_runs);
  check(aliasing > 0, "%d random graphs had aliasing inputs", aliasing);
  group_end("random");
}

/* d = add_lazy(mul(a, b), c) over [rows, n] with rows*n = size elements. */
static fhjit_graph *fma_graph(fhjit_radix radix, int64_t size) {
  fhjit_graph *g = fhjit_graph_create(ctx, "fma", radix);
  /* Large sizes: N = 2^16 limbs of at most 32 rows, the rest on a batch axis. */
  int64_t n = size, rows = 1, batch = 1;
  while (n > 65536 && n % 2 == 0) n /= 2, rows *= 2;
  while (rows > 32 && rows % 2 == 0) rows /= 2, batch *= 2;
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY;
  t.rows = rows;
  t.n = n;
  if (batch > 1) t.nbatch = 1, t.batch[0] = batch;
  fhjit_value a = fhjit_input(g, "a", &t), b = fhjit_input(g, "b", &t), c = fhjit_input(g, "c", &t);
  fhjit_output(g, fhjit_add_lazy(g, fhjit_mul(g, a, b), c), "d");
  if (fhjit_bind(g) != FHJIT_OK) {
    printf("  fma_graph: %s\n", fhjit_last_error(ctx));
    fhjit_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* A forward NTT (2^16: two kernels, per-row waits: 32 rows give its first
 * kernel the 1024 blocks rowsync's default asks for, as test_ntt_emit
 * checks) and its square, fused into the second kernel's epilogue. */
static fhjit_graph *ntt_graph(void) {
  static const char text[] = "graph @ntt_sq radix(r62) {\n"
                             "  %x = input pt<[], 32, 65536> coef std\n"
                             "  %tw = input twiddles<32, 65536>\n"
                             "  %f = ntt_fwd %x, %tw mode(std)\n"
                             "  %s = mul %f, %f\n"
                             "  output %f\n"
                             "  output %s\n"
                             "}\n";
  fhjit_graph *g = fhjit_parse(ctx, text, sizeof text - 1, "ntt_sq.fh");
  if (g && fhjit_bind(g) != FHJIT_OK) {
    fhjit_graph_destroy(g);
    g = NULL;
  }
  return g;
}

static void group_sizes(int max_log2) {
  group_begin();
  int64_t sizes[64];
  int ns = 0;
  const int64_t odd[] = {1, 2, 3, 5, 31, 127, 1000, 4097, 65537, 100003};
  for (size_t i = 0; i < sizeof odd / sizeof *odd; i++)
    if (odd[i] <= ((int64_t)1 << max_log2)) sizes[ns++] = odd[i];
  for (int k = 4; k <= max_log2; k += (k < 20 ? 4 : 2)) sizes[ns++] = (int64_t)1 << k;
  if (sizes[ns - 1] != ((int64_t)1 << max_log2)) sizes[ns++] = (int64_t)1 << max_log2;
  for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
    for (int i = 0; i < ns; i++) {
      fhjit_graph *g = fma_graph((fhjit_radix)radix, sizes[i]);
      if (!g) {
        check(0, "fma graph of %lld elements", (long long)sizes[i]);
        continue;
      }
      uint64_t moduli[64];
      pick_moduli((fhjit_radix)radix, graph_rows(g), moduli, 0);
      gcase c;
      char label[96];
      snprintf(label, sizeof label, "%s %lld elements", radix ? "r62" : "r32", (long long)sizes[i]);
      double t0 = bu_now_ms();
      if (case_init(&c, g, moduli, NULL, label)) {
        int ok = case_run(&c, NULL, label);
        check(ok, "%s (%.0f ms with the interpreter)", label, bu_now_ms() - t0);
      }
      case_free(&c);
      fhjit_graph_destroy(g);
    }
  }
  group_end("sizes");
}

static void group_streams(int max_log2) {
  group_begin();
  enum { NS = 4, PER = 3 };
  CUstream streams[NS];
  for (int s = 0; s < NS; s++) CU_OK(cu.cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));
  gcase cases[NS * PER];
  rgraph graphs[NS * PER];
  int ready[NS * PER];
  int big = max_log2 < 22 ? max_log2 : 22;
  for (int i = 0; i < NS * PER; i++) {
    char name[32];
    snprintf(name, sizeof name, "stream%d", i);
    ready[i] = 0;
    if (i % PER == 0) {
      /* one large graph per stream, so that the streams overlap */
      graphs[i].g = fma_graph((fhjit_radix)(i & 1), (int64_t)1 << big);
      for (int j = 0; j < 32; j++) graphs[i].alias_of[j] = -1;
    } else {
      while (!random_graph(&graphs[i], (fhjit_radix)(i & 1), 16, name)) {
      }
    }
    if (!graphs[i].g) continue;
    uint64_t moduli[64];
    pick_moduli(fhjit_graph_radix(graphs[i].g), graph_rows(graphs[i].g), moduli, 0);
    ready[i] = case_init(&cases[i], graphs[i].g, moduli, graphs[i].alias_of, name);
    if (ready[i]) {
      ready[i] = (cases[i].kernel = fhjit_cuda_compile(graphs[i].g, NULL, NULL)) != NULL;
      if (ready[i]) case_poison(&cases[i]);
      else check(0, "%s: %s", name, fhjit_last_error(ctx));
    }
  }
  CU_OK(cu.cuCtxSynchronize());
  /* every launch enqueued before any wait: the streams run concurrently */
  for (int i = 0; i < NS * PER; i++) {
    if (!ready[i]) continue;
    fhjit_cuda_args a;
    case_args(&cases[i], &a, streams[i / PER]);
    fx_tag(cases[i].g);
    if (fhjit_cuda_launch_kernel(cases[i].kernel, &a) != FHJIT_OK) {
      check(0, "stream%d: %s", i, fhjit_last_error(ctx));
      ready[i] = 0;
    }
  }
  for (int s = 0; s < NS; s++) CU_OK(cu.cuStreamSynchronize(streams[s]));
  for (int i = 0; i < NS * PER; i++) {
    char name[32];
    snprintf(name, sizeof name, "stream%d", i);
    if (ready[i]) check(case_verify(&cases[i], name), "%s on stream %d", name, i / PER);
    if (graphs[i].g) {
      case_free(&cases[i]);
      fhjit_graph_destroy(graphs[i].g);
    }
  }
  for (int s = 0; s < NS; s++) CU_OK(cu.cuStreamDestroy(streams[s]));
  group_end("streams");
}

static int on_fake; /* the fake libcuda (fake_exec.h) runs the launches */

/* One compiled NTT program (two kernels; the second waits for its row of
 * the first through the module's per-row counters on the kernel's home
 * stream, for the whole first grid elsewhere): 20 launches in a row on
 * stream 0 (which makes it the home stream; the counters must be back at
 * zero after each), then 4 streams at once, 5 launches each: stream 0 on
 * the counters, stream 1 without scratch (own = 0: not the home stream),
 * streams 2 and 3 with the caller's scratch (none: own = 0); every result
 * checked. */
static void group_ntt(void) {
  group_begin();
  enum { NS = 4 };
  fhjit_graph *g = ntt_graph();
  if (!g) {
    check(0, "ntt: %s", fhjit_last_error(ctx));
    group_end("ntt");
    return;
  }
  uint64_t moduli[64];
  if (fhjit_find_primes(ctx, 60, UINT64_C(1) << 18, graph_rows(g), moduli) != FHJIT_OK)
    check(0, "ntt: %s", fhjit_last_error(ctx));
  gcase c[NS];
  int ready[NS];
  for (int s = 0; s < NS; s++) {
    char name[32];
    snprintf(name, sizeof name, "ntt%d", s);
    ready[s] = case_init(&c[s], g, moduli, NULL, name);
    if (ready[s] && !(c[s].kernel = fhjit_cuda_compile(g, NULL, NULL))) {
      check(0, "%s: %s", name, fhjit_last_error(ctx));
      ready[s] = 0;
    }
  }
  CUstream streams[NS];
  for (int s = 0; s < NS; s++) CU_OK(cu.cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));
  if (ready[0]) {
    case_poison(&c[0]);
    CU_OK(cu.cuCtxSynchronize());
    fhjit_cuda_args a;
    case_args(&c[0], &a, streams[0]);
    int ok = 1;
    for (int rep = 0; rep < 20 && ok; rep++) ok = fhjit_cuda_launch_kernel(c[0].kernel, &a) == FHJIT_OK;
    check(ok, "ntt: 20 launches: %s", ok ? "" : fhjit_last_error(ctx));
    CU_OK(cu.cuStreamSynchronize(streams[0]));
    check(case_verify(&c[0], "ntt x 20"), "ntt: 20 launches in a row on the home stream");
  }
  fhjit_cuda_ptr none[1] = {0};
  for (int s = 0; s < NS; s++)
    if (ready[s]) case_poison(&c[s]);
  CU_OK(cu.cuCtxSynchronize());
  for (int rep = 0; rep < 5; rep++)
    for (int s = 0; s < NS; s++) {
      if (!ready[s]) continue;
      fhjit_cuda_args a;
      case_args(&c[s], &a, streams[s]);
      if (s >= 2) a.scratch = none;
      if (fhjit_cuda_launch_kernel(c[s].kernel, &a) != FHJIT_OK) {
        check(0, "ntt stream %d: %s", s, fhjit_last_error(ctx));
        ready[s] = 0;
      }
    }
  for (int s = 0; s < NS; s++) CU_OK(cu.cuStreamSynchronize(streams[s]));
  static const char *const how[NS] = {"home stream, counters", "another stream, no scratch",
                                      "caller's scratch", "caller's scratch"};
  for (int s = 0; s < NS; s++) {
    char name[32];
    snprintf(name, sizeof name, "ntt stream %d", s);
    if (ready[s]) check(case_verify(&c[s], name), "%s (%s): 5 launches overlapping 3 other streams", name, how[s]);
    case_free(&c[s]);
    CU_OK(cu.cuStreamDestroy(streams[s]));
  }
  fhjit_graph_destroy(g);
  group_end("ntt");
}

/* ------------------------------------------------ section 7 (issue 16) */

/* A chain of m NTT primes for N: near the radix limit and far below. */
static int s7_chain(fhjit_radix radix, int m, int64_t n, uint64_t *q) {
  uint64_t near[64], far[64];
  int nb = radix == FHJIT_R32 ? 30 : 60, fb = radix == FHJIT_R32 ? 25 : 40;
  /* every third row far below the limit: m / 3 such primes (below 2^25
   * only 38 are 1 mod 2^17, so a chain of 60 rows at N = 2^16 could not
   * take m of them) */
  if (fhjit_find_primes(ctx, nb, (uint64_t)(2 * n), m, near) != FHJIT_OK ||
      (m > 2 && fhjit_find_primes(ctx, fb, (uint64_t)(2 * n), m / 3, far) != FHJIT_OK)) {
    check(0, "section 7 chain: %s", fhjit_last_error(ctx));
    return 0;
  }
  for (int i = 0; i < m; i++) q[i] = i % 3 == 2 ? far[i / 3] : near[i];
  return 1;
}

/* Input i's words: twiddles of the chain, the table the graph asks for,
 * else lazy words of each row's chain modulus (keys: rows are positions),
 * one in eight an edge value. */
static int s7_fill(gcase *c, int32_t i, const void *fwd, const void *inv, const uint64_t *q,
                   int64_t n, const char *label) {
  fhjit_type t;
  int use = 0;
  fhjit_input_binding(c->g, i, &t, NULL);
  size_t words = c->in_bytes[i] / c->ws;
  if (t.kind == FHJIT_KIND_TWIDDLE) {
    fhjit_input_twiddle_use(c->g, i, &use);
    memcpy(c->host_in[i], use == FHJIT_TWIDDLE_INVERSE ? inv : fwd, c->in_bytes[i]);
    return 1;
  }
  if (t.kind == FHJIT_KIND_TABLE) {
    int64_t len;
    if (fhjit_input_table(c->g, i, c->host_in[i], &len) == FHJIT_OK) return 1;
    check(0, "%s: fhjit_input_table: %s", label, fhjit_last_error(ctx));
    return 0;
  }
  int32_t basis[64], rows = 0;
  if (t.kind != FHJIT_KIND_POLY || fhjit_value_basis(c->g, fhjit_input_value(c->g, i), basis,
                                                     64, &rows) != FHJIT_OK)
    for (int r = 0; r < 64; r++) basis[r] = r;
  for (size_t k = 0; k < words; k++) {
    uint64_t qr = q[basis[(k / (size_t)n) % (size_t)t.rows]];
    const uint64_t edges[6] = {0, 1, qr - 1, qr, qr + 1, 2 * qr - 1};
    put_word(c->host_in[i], c->ws, k, below(8) ? below(2 * qr) : edges[below(6)]);
  }
  return 1;
}

/* Set by a group whose graph's plan has counters between kernels (ipsync,
 * convsync): s7_case then runs it again as s7_repeat says. */
static int s7_repeats;

/* A compiled case run again (after case_run): 10 launches in a row on the
 * default stream (its home stream: ipsync's counters must be back at zero
 * after each), 3 on another stream (own = 0: grid-wide waits, the counters
 * untouched), 3 more on the default stream; checked after each series. */
static void s7_repeat(gcase *c, const char *label) {
  static const int reps[3] = {10, 3, 3};
  CUstream other;
  CU_OK(cu.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  for (int series = 0; series < 3; series++) {
    fhjit_cuda_stream st = series == 1 ? (fhjit_cuda_stream)other : NULL;
    case_poison(c);
    CU_OK(cu.cuCtxSynchronize());
    fhjit_cuda_args a;
    case_args(c, &a, st);
    int ok = 1;
    for (int r = 0; r < reps[series] && ok; r++) ok = fhjit_cuda_launch_kernel(c->kernel, &a) == FHJIT_OK;
    if (!ok) check(0, "%s: series %d: %s", label, series, fhjit_last_error(ctx));
    CU_OK(cu.cuCtxSynchronize());
    char what[160];
    snprintf(what, sizeof what, "%s x %d on %s", label, reps[series],
             series == 1 ? "another stream" : "the home stream");
    if (ok) check(case_verify(c, what), "%s", what);
  }
  CU_OK(cu.cuStreamDestroy(other));
}

/* Bound graph g on chain q[0..m) with transforms of length n: compiled,
 * launched and checked word for word against the interpreter. */
static void s7_case(fhjit_graph *g, const uint64_t *q, int m, int64_t n, const char *label) {
  gcase c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.radix = fhjit_graph_radix(g);
  c.ws = c.radix == FHJIT_R32 ? 4 : 8;
  c.nin = fhjit_num_inputs(g);
  c.nres = fhjit_num_results(g);
  c.inplace_result = c.inplace_input = -1;
  c.pstride = m;
  size_t tbytes = (size_t)m * (size_t)n * c.ws;
  void *fwd = malloc(tbytes), *inv = malloc(tbytes);
  c.params = malloc((size_t)(8 * m) * c.ws);
  int ok = fwd && inv && c.params && c.nin <= 32 && c.nres <= 32 &&
           fhjit_param_table(ctx, c.radix, q, m, n, 1, 0, c.params, m) == FHJIT_OK &&
           fhjit_twiddle_tables(ctx, c.radix, q, m, n, fwd, inv) == FHJIT_OK;
  if (!ok) check(0, "%s: set-up: %s", label, fhjit_last_error(ctx));
  const void *ins[32];
  void *refs[32];
  for (int32_t i = 0; ok && i < c.nin; i++) {
    c.owner[i] = i;
    /* whole 16-byte units, as case_verify compares them (padding zero) */
    size_t padded = 0;
    ok = fhjit_cuda_input_bytes(g, i, &c.in_bytes[i]) == FHJIT_OK &&
         (padded = (c.in_bytes[i] + 15) & ~(size_t)15) > 0 &&
         (c.host_in[i] = calloc(1, padded)) != NULL &&
         s7_fill(&c, i, fwd, inv, q, n, label) &&
         fhjit_cuda_alloc(ctx, padded, &c.din[i]) == FHJIT_OK &&
         fhjit_cuda_upload(ctx, c.din[i], c.host_in[i], padded) == FHJIT_OK;
    ins[i] = c.host_in[i];
  }
  for (int32_t r = 0; ok && r < c.nres; r++) {
    ok = fhjit_cuda_result_bytes(g, r, &c.res_bytes[r]) == FHJIT_OK &&
         (c.ref[r] = malloc(c.res_bytes[r])) != NULL &&
         fhjit_cuda_alloc(ctx, c.res_bytes[r], &c.dres[r]) == FHJIT_OK;
    refs[r] = c.ref[r];
  }
  ok = ok && fhjit_interpret(g, c.params, c.pstride, ins, refs) == FHJIT_OK &&
       fhjit_cuda_alloc(ctx, (size_t)(8 * m) * c.ws, &c.dparams) == FHJIT_OK &&
       fhjit_cuda_upload(ctx, c.dparams, c.params, (size_t)(8 * m) * c.ws) == FHJIT_OK;
  if (!ok) check(0, "%s: %s", label, fhjit_last_error(ctx));
  else {
    int ran = case_run(&c, NULL, label);
    check(ran, "%s", label);
    if (ran && s7_repeats) s7_repeat(&c, label);
  }
  case_free(&c);
  free(fwd);
  free(inv);
}

static fhjit_value s7_poly(fhjit_graph *g, const char *name, int comps, int64_t rows, int64_t n,
                           const int32_t *basis, fhjit_domain d, fhjit_form f) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY;
  t.comps = comps;
  t.rows = rows;
  t.n = n;
  t.domain = d;
  t.form = f;
  fhjit_value v = fhjit_input(g, name, &t);
  if (basis && v >= 0) fhjit_input_basis(g, v, basis, (int32_t)rows);
  return v;
}

static fhjit_value s7_table(fhjit_graph *g, const char *name, int64_t len) {
  fhjit_type t = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = len};
  return fhjit_input(g, name, &t);
}

static fhjit_value s7_twiddles(fhjit_graph *g, const char *name, int m, int64_t n) {
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = m, .n = n};
  return fhjit_input(g, name, &t);
}

/* g with y as its output "y", bound; else NULL, the error reported under
 * `what` and g destroyed. */
static fhjit_graph *bound(fhjit_graph *g, fhjit_value y, const char *what) {
  if (y >= 0 && fhjit_output(g, y, "y") == FHJIT_OK && fhjit_bind(g) == FHJIT_OK) return g;
  check(0, "%s: %s", what, fhjit_last_error(ctx));
  fhjit_graph_destroy(g);
  return NULL;
}

/* One op of section 7 on chain (Q of mq rows, P of K, digits of alpha):
 * 0 bconv Q's first alpha rows -> the others, 1 rescale, 2 moddown,
 * 3 + j modup of digit j, 100 the re-indexing ops of computed values. */
static fhjit_graph *s7_graph(fhjit_radix radix, const uint64_t *q, int mq, int K, int alpha,
                             int64_t n, int which, int comps) {
  int m = mq + K;
  fhjit_graph *g = fhjit_graph_create(ctx, "s7", radix);
  fhjit_graph_set_moduli(g, q, m);
  fhjit_graph_set_special(g, K);
  fhjit_graph_set_digits(g, alpha);
  /* an NTT on the default basis [0, rows) reads a table of exactly its
   * rows (the first rows of the chain's); mixing ops the whole chain's */
  int twr = which == 100 ? mq : m;
  fhjit_value fwd = s7_twiddles(g, "fwd", twr, n), inv = s7_twiddles(g, "inv", twr, n), y = -1;
  int32_t basis[64];
  for (int r = 0; r < m; r++) basis[r] = r;
  if (which == 0) {
    fhjit_value x = s7_poly(g, "x", comps, alpha, n, NULL, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
    y = fhjit_bconv(g, x, s7_table(g, "t", alpha + (int64_t)alpha * (m - alpha)), basis + alpha,
                    m - alpha);
  } else if (which == 1) {
    fhjit_value x = s7_poly(g, "x", comps, mq, n, NULL, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
    y = fhjit_rescale(g, x, fwd, inv, s7_table(g, "t", mq - 1));
  } else if (which == 2) {
    fhjit_value x = s7_poly(g, "x", comps, m, n, NULL, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
    y = fhjit_moddown(g, x, fwd, inv, s7_table(g, "t", K + (int64_t)K * mq + mq));
  } else if (which >= 3 && which < 100) {
    int j = which - 3;
    int64_t nd = mq - j * alpha < alpha ? mq - j * alpha : alpha;
    fhjit_value x = s7_poly(g, "x", comps, mq, n, NULL, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
    y = fhjit_modup(g, x, j, fwd, inv, s7_table(g, "t", nd + nd * (m - nd)));
  } else {
    int64_t k = (5 * 5 * 5 * 5 * 5) % (2 * n);
    fhjit_value a = s7_poly(g, "a", comps, mq, n, NULL, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
    fhjit_value b = s7_poly(g, "b", comps, mq, n, NULL, FHJIT_DOMAIN_COEF, FHJIT_FORM_STD);
    fhjit_value s = fhjit_add(g, a, b);
    int h = mq / 2;
    fhjit_value r1 = fhjit_mul(g, fhjit_automorphism(g, fhjit_rows(g, s, h, mq - h), k),
                               fhjit_rows(g, b, h, mq - h));
    fhjit_output(g, r1, "r1");
    fhjit_value t = fhjit_ntt(g, s, fwd, FHJIT_NTT_COEF_STD_TO_NTT);
    fhjit_value ta = fhjit_automorphism(g, t, 2 * n - 1);
    y = fhjit_concat(g, fhjit_rows(g, ta, h, mq - h), fhjit_rows(g, t, 0, h));
  }
  char what[32];
  snprintf(what, sizeof what, "s7 graph %d", which);
  return bound(g, y, what);
}

/* ------------------------------- the conversion on the tensor cores */

/* The conversion's tensor-core form (bconv_plan M=1, 2, 4;
 * lib/lower/bconv_mma.c) and the scalar form (M=0) against the interpreter: both
 * radices, source rows 1 .. 32 and target rows 7 .. 52 (partial k-steps
 * and row groups), N = 2^4 .. 2^16, both forms, with and without a
 * component axis (a strided source), moduli near the radix limit and far
 * below, and a chain of 18-bit moduli (r62's fold of the high bytes). The
 * automatic choice also runs in section7 and ckks (SPEC 7's shapes take
 * the tensor cores). */
static void group_bconv_mma(int quick) {
  group_begin();
  static const struct {
    int l, m, logn, mont, comps, tiny;
  } sh[] = {{1, 9, 4, 1, 0, 0},   {3, 8, 10, 0, 2, 0},  {5, 35, 12, 1, 2, 0},
            {12, 24, 16, 1, 0, 0}, {12, 48, 4, 0, 2, 0}, {17, 40, 10, 1, 0, 0},
            {32, 32, 12, 0, 2, 0}, {8, 7, 10, 1, 2, 0},  {9, 52, 5, 1, 2, 0},
            {4, 8, 16, 0, 2, 0},   {5, 33, 16, 1, 2, 0}, {6, 20, 4, 1, 2, 1}};
  static const char *const modes[] = {"M=2", "M=1", "M=4", "M=0"};
  for (int rdx = 0; rdx < 2; rdx++)
    for (size_t i = 0; i < sizeof sh / sizeof *sh; i++)
      for (int md = 0; md < (quick ? 1 : 4); md++) {
        fhjit_radix radix = rdx ? FHJIT_R62 : FHJIT_R32;
        int l = sh[i].l, m = sh[i].m;
        int64_t n = INT64_C(1) << sh[i].logn;
        uint64_t q[64];
        if (sh[i].tiny ? fhjit_find_primes(ctx, 18, (uint64_t)(2 * n), l + m, q) != FHJIT_OK
                       : !s7_chain(radix, l + m, n, q)) {
          check(0, "bconv chain: %s", fhjit_last_error(ctx));
          continue;
        }
        if (fhjit_context_set_option(ctx, "bconv_plan", modes[md]) != FHJIT_OK) {
          check(0, "bconv_plan %s: %s", modes[md], fhjit_last_error(ctx));
          continue;
        }
        fhjit_graph *g = fhjit_graph_create(ctx, "bcm", radix);
        fhjit_graph_set_moduli(g, q, l + m);
        int32_t basis[64];
        for (int r = 0; r < l + m; r++) basis[r] = r;
        fhjit_value x = s7_poly(g, "x", sh[i].comps, l, n, NULL, FHJIT_DOMAIN_COEF,
                                sh[i].mont ? FHJIT_FORM_MONT : FHJIT_FORM_STD);
        fhjit_value y = fhjit_bconv(g, x, s7_table(g, "t", l + (int64_t)l * m), basis + l, m);
        char label[112];
        snprintf(label, sizeof label, "bconv %s %d -> %d N=2^%d %s comps %d%s %s",
                 rdx ? "r62" : "r32", l, m, sh[i].logn, sh[i].mont ? "mont" : "std",
                 sh[i].comps, sh[i].tiny ? " 18-bit moduli" : "", modes[md]);
        if (y < 0 || fhjit_output(g, y, "y") != FHJIT_OK || fhjit_bind(g) != FHJIT_OK)
          check(0, "%s: %s", label, fhjit_last_error(ctx));
        else
          s7_case(g, q, l + m, n, label);
        fhjit_graph_destroy(g);
      }
  fhjit_context_set_option(ctx, "bconv_plan", NULL);
  group_end("bconv_mma");
}

/* ------------------------ forward NTTs grouped with their sum (ipntt) */

/* The key switch of examples/ntt/keyswitch.fh with D digits on chain q
 * (rows rows, N = n): D inputs through one forward table (from the
 * standard form where std), their key products summed (add_lazy, add
 * where use_add), the sum through the inverse NTT plus a ciphertext c;
 * bound. */
static fhjit_graph *ipntt_graph(fhjit_radix radix, const uint64_t *q, int rows, int D, int64_t n,
                                int std, int use_add) {
  fhjit_graph *g = fhjit_graph_create(ctx, "ipntt", radix);
  fhjit_graph_set_moduli(g, q, rows);
  fhjit_value fwd = s7_twiddles(g, "fwd", rows, n), inv = s7_twiddles(g, "inv", rows, n);
  fhjit_type kt = {.kind = FHJIT_KIND_KEY, .comps = 2, .digits = D, .rows = rows, .n = n,
                   .domain = FHJIT_DOMAIN_NTT, .form = FHJIT_FORM_MONT};
  fhjit_value key = fhjit_input(g, "key", &kt), acc = -1;
  for (int k = 0; k < D; k++) {
    char name[16];
    snprintf(name, sizeof name, "d%d", k);
    fhjit_value d = s7_poly(g, name, 0, rows, n, NULL, FHJIT_DOMAIN_COEF,
                            std ? FHJIT_FORM_STD : FHJIT_FORM_MONT);
    fhjit_value f = fhjit_ntt(g, d, fwd, std ? FHJIT_NTT_COEF_STD_TO_NTT : FHJIT_NTT_COEF_MONT_TO_NTT);
    fhjit_value p = fhjit_keyswitch_digit_product(g, f, key, k, 0);
    acc = k == 0 ? p : use_add ? fhjit_add(g, acc, p) : fhjit_add_lazy(g, acc, p);
  }
  fhjit_value c = s7_poly(g, "c", 2, rows, n, NULL, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  return bound(g, fhjit_add(g, fhjit_ntt(g, acc, inv, FHJIT_NTT_TO_COEF_MONT), c), "ipntt graph");
}

/* Forward NTTs of several inputs planned with the sum of their key
 * products (ntt_plan ipntt, anchor_ipntt.c: each transform's first kernel
 * alone, then one last kernel of them all computing the sum): both radices,
 * 1 to 16 rows, 2 to 5 digits (5 at r62 is past the default's 32 bytes a
 * position: forced), N = 2^13 .. 2^17, the mont and std forward kinds,
 * add_lazy and add, against the interpreter; the plan must show the group
 * (else the case tests nothing of it). --quick: N up to 2^14. */
static void group_ipntt(int quick) {
  group_begin();
  static const struct {
    int r62, rows, D, logn, std, add;
    const char *plan;
  } sh[] = {{1, 16, 2, 16, 0, 0, NULL}, {0, 16, 2, 16, 0, 0, NULL}, {1, 3, 3, 14, 0, 0, NULL},
            {0, 5, 4, 13, 0, 0, NULL},  {0, 1, 2, 17, 1, 0, NULL},  {1, 2, 5, 13, 0, 0, "ipntt=1"},
            {0, 4, 3, 14, 0, 1, NULL},  {1, 1, 2, 13, 1, 1, NULL},  {0, 2, 8, 14, 0, 0, NULL},
            {1, 16, 2, 16, 0, 1, "epics=3"}, {0, 16, 2, 16, 0, 1, "epics=7"},
            {0, 3, 3, 13, 0, 1, "epics=3"}};
  for (size_t i = 0; i < sizeof sh / sizeof *sh; i++) {
    if (quick && sh[i].logn > 14) continue;
    fhjit_radix radix = sh[i].r62 ? FHJIT_R62 : FHJIT_R32;
    int64_t n = INT64_C(1) << sh[i].logn;
    uint64_t q[64];
    if (!s7_chain(radix, sh[i].rows, n, q)) continue;
    fhjit_context_set_option(ctx, "ntt_plan", sh[i].plan);
    char label[128];
    snprintf(label, sizeof label, "ipntt %s %d rows %d digits N=2^%d%s%s%s%s",
             sh[i].r62 ? "r62" : "r32", sh[i].rows, sh[i].D, sh[i].logn, sh[i].std ? " std" : "",
             sh[i].add ? " add" : "", sh[i].plan ? " " : "", sh[i].plan ? sh[i].plan : "");
    fhjit_graph *g = ipntt_graph(radix, q, sh[i].rows, sh[i].D, n, sh[i].std, sh[i].add);
    if (!g) continue;
    const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    int grouped = plan && strstr(plan, "steps before, one per member (ipntt)");
    check(grouped, "%s: the plan groups the forward NTTs", label);
    /* epics: the reduce kernel's key loads and the inverse's epilogue's
     * stream (evalstream.c) */
    if (plan && sh[i].plan && strstr(sh[i].plan, "epics"))
      check(strstr(plan, "streams its loads") != NULL, "%s: the plan streams loads", label);
    if (grouped) s7_case(g, q, sh[i].rows, n, label);
    fhjit_graph_destroy(g);
  }
  fhjit_context_set_option(ctx, "ntt_plan", NULL);
  group_end("ipntt");
}

/* ------------------------------------- the key switch's reduce kernel */

/* Key switch (0), relinearise (1), rotate by 5 (2) or HMult + relinearise
 * + rescale (3) of ciphertexts at the top of chain q (Q mq rows, P K,
 * digits of alpha), bound. */
static fhjit_graph *ipfuse_graph(fhjit_radix radix, const uint64_t *q, int mq, int K, int alpha,
                                 int64_t n, int op) {
  int m = mq + K;
  fhjit_graph *g = fhjit_graph_create(ctx, "ipf", radix);
  fhjit_graph_set_moduli(g, q, m);
  fhjit_graph_set_special(g, K);
  fhjit_graph_set_digits(g, alpha);
  fhjit_value fwd = s7_twiddles(g, "fwd", m, n), inv = s7_twiddles(g, "inv", m, n), y;
  fhjit_type kt = {.kind = FHJIT_KIND_KEY, .comps = 2, .digits = (mq + alpha - 1) / alpha,
                   .rows = m, .n = n, .domain = FHJIT_DOMAIN_NTT, .form = FHJIT_FORM_MONT};
  fhjit_value key = fhjit_input(g, "key", &kt);
  int comps = op == 0 ? 0 : op == 1 ? 3 : 2;
  fhjit_value x = s7_poly(g, "x", comps, mq, n, NULL, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  if (op == 0) y = fhjit_keyswitch(g, x, key, fwd, inv);
  else if (op == 1) y = fhjit_ckks_relinearize(g, x, key, fwd, inv);
  else if (op == 2) y = fhjit_ckks_rotate(g, x, 5, key, fwd, inv);
  else
    y = fhjit_ckks_mul_relin_rescale(
        g, x, s7_poly(g, "x2", 2, mq, n, NULL, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT), key, fwd, inv);
  char what[32];
  snprintf(what, sizeof what, "ipfuse graph %d", op);
  return bound(g, y, what);
}

/* The key switch's reduce kernel (ipfuse: the inner product computed in
 * the last kernel of the digits' batched forward NTT, ntt_emit_fuse.c) in
 * both its modes (every digit's words kept, the default; ipacc=1, folded
 * as each digit's body ends, V words a call where the last kernel has the
 * vector epilogue) and with the slots of no digit, one, or all but the
 * last in shared memory (ipsmem; r32 2^16's default 3; --quick runs the
 * plans other than the default at the shapes up to N = 2^14) against
 * the interpreter: r32 at SPEC 7's
 * benchmark shape (N = 2^16, Q 48 + P 12, dnum 4), short last digits,
 * one-kernel sizes, HMult + relinearise + rescale, and r62 with ipfuse
 * forced (not its default past 32 bytes of digit words a position); with
 * moddown's inverse NTT started in the reduce kernel where it fits
 * (ipchain=1: checked to happen at the benchmark shape) and without (the
 * default), and with the conversions' blocks in reverse order (bcrev: by
 * default at the benchmark shape, always, never), and with moddown's
 * inverse NTT waiting for the reduce kernel per row (ipsync=1, every
 * shape; then launched again, s7_repeat) or for all of it (the
 * default), and with the batched forward NTT waiting for the digits'
 * conversion per digit (convsync=1, also with ipsync=1 and the blocks
 * reversed; launched again too). The
 * plan must name the inner product, or the case would test nothing of
 * the reduce kernel. */
static void group_ipfuse(int quick) {
  group_begin();
  static const struct {
    int r62, mq, K, alpha, logn, op;
  } sh[] = {{0, 48, 12, 12, 16, 0}, {0, 7, 2, 2, 10, 1}, {0, 10, 3, 3, 12, 2},
            {0, 9, 2, 3, 16, 1},    {1, 6, 2, 3, 14, 0}, {1, 4, 1, 2, 11, 2},
            {0, 48, 12, 12, 16, 3}, {1, 6, 2, 2, 12, 3}};
  static const char *const plans[] = {"ipfuse=1", "ipfuse=1,ipacc=1", "ipfuse=1,ipsmem=0",
                                       "ipfuse=1,ipsmem=1", "ipfuse=1,ipsmem=16",
                                       "ipfuse=1,ipchain=1", "ipfuse=1,bcrev=0",
                                       "ipfuse=1,bcrev=2", "ipfuse=1,ipsync=1",
                                       "ipfuse=1,convsync=1", "ipfuse=1,convsync=1,ipsync=1,bcrev=2",
                                       "ipfuse=1,epics=3", "ipfuse=1,ipacc=1,epics=7"};
  for (size_t i = 0; i < sizeof sh / sizeof *sh; i++)
    for (size_t pl = 0; pl < sizeof plans / sizeof *plans; pl++) {
      if (quick && pl && sh[i].logn > 14) continue; /* the other modes: the small shapes */
      /* the counts between kernels (measured slower, off by default): the
       * small shapes and the benchmark shape */
      if (strstr(plans[pl], "sync=1") && sh[i].logn > 14 && i) continue;
      fhjit_radix radix = sh[i].r62 ? FHJIT_R62 : FHJIT_R32;
      int m = sh[i].mq + sh[i].K;
      int64_t n = INT64_C(1) << sh[i].logn;
      uint64_t q[64];
      if (!s7_chain(radix, m, n, q)) continue;
      if (fhjit_context_set_option(ctx, "ntt_plan", plans[pl]) != FHJIT_OK) {
        check(0, "ntt_plan %s: %s", plans[pl], fhjit_last_error(ctx));
        continue;
      }
      char label[128];
      static const char *const ops[] = {"key switch", "relinearise", "rotate", "HMult+relin+rescale"};
      snprintf(label, sizeof label, "%s %s Q %d + P %d digits of %d N=2^%d %s", ops[sh[i].op],
               sh[i].r62 ? "r62" : "r32", sh[i].mq, sh[i].K, sh[i].alpha, sh[i].logn, plans[pl]);
      fhjit_graph *g = ipfuse_graph(radix, q, sh[i].mq, sh[i].K, sh[i].alpha, n, sh[i].op);
      if (!g) continue;
      const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
      int reduce = plan && strstr(plan, "inner product of");
      check(reduce, "%s: the plan computes the inner product in the NTT", label);
      if (reduce && strstr(plans[pl], "ipsmem")) { /* every shape has 2 digits or more */
        int want = !strstr(plans[pl], "ipsmem=0");
        check((strstr(plan, "in shared memory)") != NULL) == want, "%s: the plan keeps %sslots in shared memory",
              label, want ? "" : "no ");
      }
      /* ipchain=1: at the benchmark shape the key switch starts moddown's
       * inverse NTT in the reduce kernel (mixsteps_ipchain.c); not by
       * default */
      int chained = plan && strstr(plan, "chain: step") != NULL;
      if (!strstr(plans[pl], "ipchain=1")) check(!chained, "%s: no chain", label);
      else if (i == 0) check(chained, "%s: the plan chains moddown's inverse NTT", label);
      /* bcrev: the digits' conversion of the benchmark shape (50 MB) runs
       * its blocks in reverse by default, every conversion with bcrev=2,
       * none with bcrev=0 (anchor_gpu.c, bconv_reversed) */
      int rev = plan && strstr(plan, "block order: reversed") != NULL;
      if (strstr(plans[pl], "bcrev=0")) check(!rev, "%s: no conversion reversed", label);
      else if (strstr(plans[pl], "bcrev=2") || (i == 0 && pl == 0))
        check(rev, "%s: the plan reverses the conversion's blocks", label);
      /* ipsync=1 (mixsteps_ipsync.c): moddown's inverse NTT waits per
       * row of the sum (in HMult also for the row its prologue reads);
       * not by default. A plan that counts is run again (s7_repeat) */
      int sync = plan && strstr(plan, "sync: first kernel waits for its row of step") != NULL;
      if (!strstr(plans[pl], "ipsync=1")) check(!sync, "%s: no ipsync", label);
      else if (reduce) check(sync, "%s: moddown's inverse NTT waits per row of the sum", label);
      /* convsync=1 (the same file): the batched forward NTT after the
       * digits' conversion (one launch) waits per digit (checked to happen
       * at the benchmark shape; a short last digit has a conversion of its
       * own in between); not by default */
      int csync = plan && strstr(plan, "waits for its row's digit") != NULL;
      if (!strstr(plans[pl], "convsync=1")) check(!csync, "%s: no convsync", label);
      else if (i == 0) check(csync, "%s: the batched forward NTT waits per digit", label);
      /* epics (evalstream.c): the reduce kernel's key loads stream */
      if (reduce && strstr(plans[pl], "epics"))
        check(strstr(plan, "epilogue 0 streams its loads") != NULL, "%s: the keys' loads stream",
              label);
      s7_repeats = sync || csync;
      if (reduce) s7_case(g, q, m, n, label);
      s7_repeats = 0;
      fhjit_graph_destroy(g);
    }
  fhjit_context_set_option(ctx, "ntt_plan", NULL);
  group_end("ipfuse");
}

/* ------------------------------------------ the cluster schedule (issue 19) */

/* A graph of text `body` (its inputs and ops; `output` lines included)
 * with radix r, bound. */
static fhjit_graph *cluster_graph(fhjit_radix radix, const char *body, const char *name) {
  char text[2048];
  snprintf(text, sizeof text, "graph @%s radix(%s) {\n%s}\n", name,
           radix == FHJIT_R32 ? "r32" : "r62", body);
  fhjit_graph *g = fhjit_parse(ctx, text, strlen(text), "cluster.fh");
  if (g && fhjit_bind(g) != FHJIT_OK) {
    fhjit_graph_destroy(g);
    g = NULL;
  }
  if (!g) check(0, "cluster graph %s: %s", name, fhjit_last_error(ctx));
  return g;
}

/* Moduli for up to 64 rows of transforms of length n: near the radix limit,
 * every third one far below (4 of them, repeated: there are few primes of
 * 25 bits that are 1 mod 2^18). */
static int cluster_chain(fhjit_radix radix, int64_t n, uint64_t q[64]) {
  uint64_t near[64], far[4];
  int nb = radix == FHJIT_R32 ? 30 : 60, fb = radix == FHJIT_R32 ? 25 : 40;
  if (fhjit_find_primes(ctx, nb, (uint64_t)(2 * n), 64, near) != FHJIT_OK ||
      fhjit_find_primes(ctx, fb, (uint64_t)(2 * n), 4, far) != FHJIT_OK) {
    check(0, "cluster moduli: %s", fhjit_last_error(ctx));
    return 0;
  }
  for (int i = 0; i < 64; i++) q[i] = i % 3 == 2 ? far[(i / 3) % 4] : near[i];
  return 1;
}

/* The NTT's cluster schedule (ntt_schedule=cluster: one kernel, a cluster
 * of 2 to 8 blocks per row, docs/ntt-cluster.md) against the interpreter
 * bit for bit: both radices, N = 2^14 .. 2^17 (its sizes), forward and
 * inverse of both modes, rows 1, 3, 32 and 64, a batch axis, a strided
 * source view (a component of a ciphertext), and a chain (forward, a
 * product fused as the inverse's prologue, an addition fused as its
 * epilogue). Not on the fake driver, whose executor runs graphs by the
 * pointwise kernels' argument order (the NTT's differs); the host's run of
 * the schedule is test_ntt_cluster's. */
static void cluster_cases(int quick, const char *plan);

static void group_cluster(int quick) {
  group_begin();
  cluster_cases(quick, NULL);
  group_end("cluster");
}

/* The same cases with several rows per cluster in turn (rows_cluster, the
 * next row's loads ahead by asynchronous copies where they fit, or in
 * place): the row counts 1, 3 and the batch's 2 x 3 leave the last
 * cluster fewer rows. */
static void group_cluster_rows(int quick) {
  static const char *const plans[] = {"rows_cluster=1,cluster=3", "rows_cluster=2",
                                      "rows_cluster=1,ahead_cluster=0"};
  group_begin();
  /* the first plan on every case, the others on the quick set */
  for (int i = 0; i < (quick ? 1 : 3); i++) cluster_cases(quick || i > 0, plans[i]);
  group_end("cluster_rows");
}

/* group_cluster's cases under ntt_plan `plan` (NULL: the defaults). */
static void cluster_cases(int quick, const char *plan) {
  if (fhjit_context_set_option(ctx, "ntt_schedule", "cluster") != FHJIT_OK ||
      fhjit_context_set_option(ctx, "ntt_plan", plan) != FHJIT_OK) {
    check(0, "cluster: %s", fhjit_last_error(ctx));
    return;
  }
  const char *pl = plan ? plan : "defaults";
  static const char *const kinds[4][2] = {{"coef std", "ntt_fwd %x, %tw mode(std)"},
                                          {"coef mont", "ntt_fwd %x, %tw mode(mont)"},
                                          {"ntt mont", "ntt_inv %x, %tw mode(mont)"},
                                          {"ntt mont", "ntt_inv %x, %tw mode(std)"}};
  static const int rows_of[8] = {1, 3, 32, 64, 64, 32, 3, 1};
  for (int radix = 0; radix < 2; radix++)
    for (int logn = 14; logn <= (quick ? 15 : 17); logn++) {
      fhjit_radix rx = radix ? FHJIT_R62 : FHJIT_R32;
      int64_t n = INT64_C(1) << logn;
      uint64_t q[64];
      if (!cluster_chain(rx, n, q)) continue;
      char body[1024], label[192];
      /* every kind, each with two row counts */
      for (int i = 0; i < 8; i++) {
        int kind = i % 4, rows = rows_of[i];
        if (quick && rows > 3) continue;
        snprintf(body, sizeof body,
                 "  %%x = input pt<[], %d, %lld> %s\n  %%tw = input twiddles<%d, %lld>\n"
                 "  %%y = %s\n  output %%y\n",
                 rows, (long long)n, kinds[kind][0], rows, (long long)n, kinds[kind][1]);
        snprintf(label, sizeof label, "cluster %s 2^%d %s x %d rows (%s)", radix ? "r62" : "r32", logn,
                 kinds[kind][1] + 4, rows, pl);
        fhjit_graph *g = cluster_graph(rx, body, "cl");
        if (g) s7_case(g, q, rows, n, label);
        if (g) fhjit_graph_destroy(g);
      }
      /* a batch axis of 2 x 3 rows, forward and inverse */
      for (int kind = 0; kind < 4; kind += 3) {
        snprintf(body, sizeof body,
                 "  %%x = input pt<[2], 3, %lld> %s\n  %%tw = input twiddles<3, %lld>\n"
                 "  %%y = %s\n  output %%y\n",
                 (long long)n, kinds[kind][0], (long long)n, kinds[kind][1]);
        snprintf(label, sizeof label, "cluster %s 2^%d batch 2 x 3 %s (%s)", radix ? "r62" : "r32", logn,
                 kinds[kind][1] + 4, pl);
        fhjit_graph *g = cluster_graph(rx, body, "clb");
        if (g) s7_case(g, q, 3, n, label);
        if (g) fhjit_graph_destroy(g);
      }
      /* a chain: forward, products (the inverse's prologue), inverse, an
       * addition (its epilogue); the source a component of a ciphertext */
      snprintf(body, sizeof body,
               "  %%c = input ct<2, [], 2, %lld> coef mont\n"
               "  %%k = input pt<[], 2, %lld> ntt mont\n  %%e = input pt<[], 2, %lld> coef std\n"
               "  %%tf = input twiddles<2, %lld>\n  %%ti = input twiddles<2, %lld>\n"
               "  %%x = extract %%c[1]\n"
               "  %%f = ntt_fwd %%x, %%tf mode(mont)\n  %%p = mul %%f, %%k\n"
               "  %%b = ntt_inv %%p, %%ti mode(std)\n  %%s = add %%b, %%e\n"
               "  output %%s\n",
               (long long)n, (long long)n, (long long)n, (long long)n, (long long)n);
      snprintf(label, sizeof label, "cluster %s 2^%d chain (prologue, epilogue, view; %s)",
               radix ? "r62" : "r32", logn, pl);
      fhjit_graph *g = cluster_graph(rx, body, "clc");
      if (g) s7_case(g, q, 2, n, label);
      if (g) fhjit_graph_destroy(g);
    }
  fhjit_context_set_option(ctx, "ntt_schedule", NULL);
  fhjit_context_set_option(ctx, "ntt_plan", NULL);
}

/* Every section 7 op on the GPU against the interpreter: both radices,
 * N = 2^4 .. 2^16 (2^12 when quick), chains of 10 rows (Q 8, P 2, digits
 * of 3) and SPEC 7's benchmark shapes (r62 Q 35 + P 5, dnum 7; r32 Q 48 +
 * P 12, dnum 4) at N = 2^12, components 0 and 2. */
static void group_s7(int quick) {
  group_begin();
  static const int logs[] = {4, 10, 12, 16};
  for (int rdx = 0; rdx < 2; rdx++) {
    fhjit_radix radix = rdx ? FHJIT_R62 : FHJIT_R32;
    for (int li = 0; li < 4; li++) {
      if (quick && logs[li] > 12) continue;
      int64_t n = (int64_t)1 << logs[li];
      int bench = logs[li] == 12;
      int mq = bench ? (rdx ? 35 : 48) : 8, K = bench ? (rdx ? 5 : 12) : 2;
      int alpha = bench ? (rdx ? 5 : 12) : 3, ndig = (mq + alpha - 1) / alpha;
      uint64_t q[64];
      if (!s7_chain(radix, mq + K, n, q)) continue;
      int ops[16], nops = 0;
      ops[nops++] = 0, ops[nops++] = 1, ops[nops++] = 2;
      for (int j = 0; j < ndig && nops < 12; j++)
        if (!bench || j == 0 || j == ndig - 1) ops[nops++] = 3 + j;
      ops[nops++] = 100;
      for (int o = 0; o < nops; o++) {
        int comps = (o + li) % 2 ? 2 : 0;
        fhjit_graph *g = s7_graph(radix, q, mq, K, alpha, n, ops[o], comps);
        if (!g) continue;
        char label[96];
        snprintf(label, sizeof label, "s7 %s op %d N=2^%d Q%d+P%d comps %d",
                 rdx ? "r62" : "r32", ops[o], logs[li], mq, K, comps);
        s7_case(g, q, mq + K, n, label);
        fhjit_graph_destroy(g);
      }
    }
  }
  group_end("section7");
}

/* --------------------------------------------------------------- ckks */

/* The CUDA runtime as a runner of the CKKS checks (test/unit/ckks_checks.h):
 * inputs and the parameter table uploaded, the graph compiled and launched
 * on the default stream, the results downloaded. In the graph's context. */
static fhjit_status cuda_runner(void *user, fhjit_graph *g, const void *params, int64_t pstride,
                                const void *const *inputs, void *const *results) {
  (void)user;
  fhjit_context *c = fhjit_graph_context(g);
  size_t ws = fhjit_graph_radix(g) == FHJIT_R32 ? 4 : 8;
  int32_t ni = fhjit_num_inputs(g), nr = fhjit_num_results(g);
  fhjit_cuda_ptr din[64] = {0}, dres[64] = {0}, dparams = 0;
  size_t rbytes[64] = {0};
  fhjit_status st = ni > 64 || nr > 64 ? FHJIT_ERR_ARGUMENT : FHJIT_OK;
  if (!st) st = fhjit_cuda_alloc(c, (size_t)(8 * pstride) * ws, &dparams);
  if (!st) st = fhjit_cuda_upload(c, dparams, params, (size_t)(8 * pstride) * ws);
  for (int32_t i = 0; i < ni && !st; i++) {
    size_t bytes = 0;
    st = fhjit_cuda_input_bytes(g, i, &bytes);
    if (!st) st = fhjit_cuda_alloc(c, (bytes + 15) & ~(size_t)15, &din[i]);
    if (!st) st = fhjit_cuda_upload(c, din[i], inputs[i], bytes);
  }
  for (int32_t k = 0; k < nr && !st; k++) {
    st = fhjit_cuda_result_bytes(g, k, &rbytes[k]);
    if (!st) st = fhjit_cuda_alloc(c, rbytes[k], &dres[k]);
  }
  if (!st) {
    fhjit_cuda_args a;
    memset(&a, 0, sizeof a);
    a.params = dparams;
    a.pstride = pstride;
    a.inputs = din;
    a.ninputs = ni;
    a.results = dres;
    a.nresults = nr;
    st = fhjit_cuda_launch(g, &a);
  }
  if (!st && cu.cuCtxSynchronize() != CUDA_SUCCESS) st = FHJIT_ERR_CUDA;
  for (int32_t k = 0; k < nr && !st; k++) st = fhjit_cuda_download(c, results[k], dres[k], rbytes[k]);
  for (int32_t i = 0; i < ni; i++)
    if (din[i]) fhjit_cuda_free(c, din[i]);
  for (int32_t k = 0; k < nr; k++)
    if (dres[k]) fhjit_cuda_free(c, dres[k]);
  if (dparams) fhjit_cuda_free(c, dparams);
  return st;
}

/* Issue 17's proofs on the GPU: key switch (top level and below),
 * HMult + relinearise + rescale, rotations and hoisted rotations of the
 * toy RLWE (test/unit/rlwe.h), the GPU's words equal to the interpreter's,
 * the decryptions within their noise bounds, wrong keys far above them. */
static void group_ckks(void) {
  group_begin();
  static const ckks_runner runners[2] = {{"interp", rlwe_run_interp, NULL},
                                         {"cuda", cuda_runner, NULL}};
  for (int rdx = 0; rdx < 2; rdx++) {
    rlwe r;
    if (ckks_setup(&r, rdx ? FHJIT_R62 : FHJIT_R32, rdx ? 10 : 11, 0x1790 + (uint64_t)rdx)) {
      check(0, "ckks: set-up of the toy RLWE failed");
      continue;
    }
    if (!fhjit_cuda_available(r.ctx)) {
      check(0, "ckks: %s", fhjit_last_error(r.ctx));
      rlwe_free(&r);
      continue;
    }
    ckks_report rep;
    memset(&rep, 0, sizeof rep);
    int64_t twon = 2 * r.n, ks[4] = {5, 25, 1, twon - 1};
    for (int e = 0; e < 7; e++) ks[2] = ks[2] * 5 % twon;
    ckks_check_keyswitch(&r, &ckks_public, r.nq, runners, 2, &rep);
    ckks_check_keyswitch(&r, &ckks_public, 3, runners, 2, &rep);
    ckks_check_mul(&r, &ckks_public, runners, 2, &rep);
    ckks_check_rotate(&r, &ckks_public, ks, 4, runners, 2, &rep);
    for (int i = 0; i < rep.n; i++)
      check(rep.r[i].ok, "ckks %s: %s", rep.r[i].what, rep.r[i].msg);
    if (verbose) ckks_print(&rep, "  ");
    rlwe_free(&r);
  }
  group_end("ckks");
}

/* Launches recorded into a CUDA graph, replayed. */
static void group_capture(void) {
  group_begin();
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  /* the fake runs a launch through fhjit_run_host of the whole graph, which
   * a program of several kernels cannot be */
  for (int variant = 0; variant < (on_fake ? 3 : 4); variant++) {
    /* variant 3: an NTT of two kernels, the second launched as a
     * programmatic dependent of the first (sm_90), with an epilogue */
    fhjit_graph *g = variant < 3 ? fma_graph((fhjit_radix)(variant & 1), 1 << 18) : ntt_graph();
    uint64_t moduli[64];
    if (variant < 3) pick_moduli(fhjit_graph_radix(g), graph_rows(g), moduli, 0);
    else if (fhjit_find_primes(ctx, 60, UINT64_C(1) << 18, graph_rows(g), moduli) != FHJIT_OK)
      check(0, "capture: %s", fhjit_last_error(ctx));
    gcase c;
    const char *names[] = {"kernel handle", "fhjit_cuda_launch", "no pointer checks", "NTT"};
    if (!g) {
      check(0, "capture: graph %d: %s", variant, fhjit_last_error(ctx));
      continue;
    }
    if (!case_init(&c, g, moduli, NULL, names[variant])) goto next;
    c.kernel = fhjit_cuda_compile(g, NULL, NULL); /* compiled before the capture */
    if (!c.kernel) {
      check(0, "capture: %s", fhjit_last_error(ctx));
      goto next;
    }
    case_poison(&c);
    CU_OK(cu.cuCtxSynchronize());
    fhjit_cuda_args a;
    case_args(&c, &a, s);
    fhjit_cuda_options fast = {.flags = FHJIT_CUDA_NO_POINTER_CHECKS};
    if (variant == 2) a.options = &fast;
    fx_tag(g);
    CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    fhjit_status st = variant == 1 ? fhjit_cuda_launch(g, &a) : fhjit_cuda_launch_kernel(c.kernel, &a);
    CUgraph cg = NULL;
    CUresult r = cu.cuStreamEndCapture(s, &cg);
    if (st != FHJIT_OK || r != CUDA_SUCCESS) {
      check(0, "capture (%s): launch %s, cuStreamEndCapture %d", names[variant],
            st ? fhjit_last_error(ctx) : "ok", (int)r);
      if (cg) cu.cuGraphDestroy(cg);
      goto next;
    }
    CUgraphExec exec;
    CU_OK(cu.cuGraphInstantiate(&exec, cg, 0));
    for (int rep = 0; rep < 3; rep++) CU_OK(cu.cuGraphLaunch(exec, s));
    CU_OK(cu.cuStreamSynchronize(s));
    check(case_verify(&c, names[variant]), "graph capture, %s, replayed 3 times", names[variant]);
    cu.cuGraphExecDestroy(exec);
    cu.cuGraphDestroy(cg);
  next:
    case_free(&c);
    fhjit_graph_destroy(g);
  }
  CU_OK(cu.cuStreamDestroy(s));
  group_end("capture");
}

static void expect_error(fhjit_status got, fhjit_status want, const char *fragment, const char *what) {
  const char *msg = fhjit_last_error(ctx);
  check(got == want && strstr(msg, fragment) != NULL, "%s: status %s, message: %s", what,
        fhjit_status_name(got), msg);
}

static void group_errors(void) {
  group_begin();
  fhjit_graph *g = fma_graph(FHJIT_R62, 4096);
  uint64_t moduli[64];
  pick_moduli(FHJIT_R62, 1, moduli, 0);
  gcase c;
  if (!case_init(&c, g, moduli, NULL, "errors")) {
    group_end("errors");
    return;
  }
  c.kernel = fhjit_cuda_compile(g, NULL, NULL);
  check(c.kernel != NULL, "compile: %s", c.kernel ? "ok" : fhjit_last_error(ctx));
  if (!c.kernel) goto done;
  fhjit_cuda_args a;
  case_args(&c, &a, NULL);
  fhjit_cuda_ptr saved = c.din[1];
  c.din[1] = 0;
  expect_error(fhjit_cuda_launch_kernel(c.kernel, &a), FHJIT_ERR_ARGUMENT, "null pointer", "null input");
  c.din[1] = saved + 8;
  expect_error(fhjit_cuda_launch_kernel(c.kernel, &a), FHJIT_ERR_ARGUMENT, "misaligned", "misaligned input");
  c.din[1] = saved + 16;
  expect_error(fhjit_cuda_launch_kernel(c.kernel, &a), FHJIT_ERR_ARGUMENT, "allocation",
               "input 16 bytes short");
  c.din[1] = saved;
  fhjit_cuda_ptr small = 0;
  fhjit_cuda_alloc(ctx, 1024, &small);
  fhjit_cuda_ptr keep = c.dres[0];
  c.dres[0] = small;
  expect_error(fhjit_cuda_launch_kernel(c.kernel, &a), FHJIT_ERR_ARGUMENT, "result #0", "small result");
  c.dres[0] = keep;
  fhjit_cuda_free(ctx, small);
  c.dres[0] = c.din[0] + 64;
  expect_error(fhjit_cuda_launch_kernel(c.kernel, &a), FHJIT_ERR_ARGUMENT, "overlaps", "partial overlap");
  c.dres[0] = keep;
  void *host = aligned_alloc(64, 1 << 20);
  saved = c.din[2];
  c.din[2] = (fhjit_cuda_ptr)(uintptr_t)host;
  expect_error(fhjit_cuda_launch_kernel(c.kernel, &a), FHJIT_ERR_ARGUMENT, "not in memory allocated",
               "host pointer");
  c.din[2] = saved;
  free(host);
  fhjit_cuda_ptr absurd = 1;
  expect_error(fhjit_cuda_alloc(ctx, (size_t)1 << 50, &absurd), FHJIT_ERR_MEMORY, "cuMemAlloc_v2 failed",
               "absurd allocation");
  check(absurd == 0, "a failed allocation returns 0");

  /* another context: the kernel and the pointers of the primary one are refused */
  CUcontext primary, other;
  CU_OK(cu.cuCtxGetCurrent(&primary));
  CU_OK(cu.cuCtxCreate ? cu.cuCtxCreate(&other, 0, 0) : cu.cuCtxCreate4(&other, NULL, 0, 0));
  CU_OK(cu.cuCtxSetCurrent(other));
  expect_error(fhjit_cuda_launch_kernel(c.kernel, &a), FHJIT_ERR_ARGUMENT, "were loaded in CUDA context",
               "kernel launched in another context");
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k2 = fhjit_cuda_compile(g, NULL, &info);
  check(k2 && k2 != c.kernel, "compiled again in the second context (%s)",
        k2 ? (info.source == FHJIT_CUDA_FROM_DISK ? "from disk" : "compiled") : fhjit_last_error(ctx));
  if (k2)
    expect_error(fhjit_cuda_launch_kernel(k2, &a), FHJIT_ERR_ARGUMENT, "belongs to CUDA context",
                 "pointers of another context");
  check(fhjit_cuda_release_context(ctx, other) == FHJIT_OK, "release the second context");
  CU_OK(cu.cuCtxSetCurrent(primary));
  CU_OK(cu.cuCtxDestroy(other));
  /* the first context still works */
  case_poison(&c);
  fx_tag(g);
  check(fhjit_cuda_launch_kernel(c.kernel, &a) == FHJIT_OK, "launch after the errors: %s",
        fhjit_last_error(ctx));
  CU_OK(cu.cuCtxSynchronize());
  check(case_verify(&c, "after errors"), "results after the errors");
done:
  case_free(&c);
  fhjit_graph_destroy(g);
  group_end("errors");
}

/* An environment variable set for one group and put back after it. */
typedef struct {
  const char *name;
  char *before; /* NULL: was unset */
} env_saved;

static env_saved env_set(const char *name, const char *value) {
  const char *before = getenv(name);
  env_saved s = {name, before ? strdup(before) : NULL};
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  return s;
}

static void env_restore(env_saved *s) {
  if (s->before) setenv(s->name, s->before, 1);
  else unsetenv(s->name);
  free(s->before);
}

/* Cold compile (no disk cache) against a warm disk hit in a new fhjit
   context. The disk cache is switched on here whatever FHJIT_CACHE says:
   a device round runs with it off so that its timings are cold. */
static void group_cache(void) {
  group_begin();
  char dir[] = "/tmp/fhjit-gpu-cache-XXXXXX";
  if (!mkdtemp(dir)) {
    check(0, "mkdtemp");
    group_end("cache");
    return;
  }
  env_saved saved_dir = env_set("FHJIT_CACHE_DIR", dir);
  env_saved saved_switch = env_set("FHJIT_CACHE", NULL);
  fhjit_context *saved = ctx;
  double cold = 0, warm = 0;
  for (int round = 0; round < 2; round++) {
    ctx = fhjit_context_create();
    fhjit_graph *g = fma_graph(FHJIT_R62, 1 << 20);
    fhjit_cuda_compile_info info;
    fhjit_cuda_kernel *k = g ? fhjit_cuda_compile(g, NULL, &info) : NULL;
    check(k && info.source == (round ? FHJIT_CUDA_FROM_DISK : FHJIT_CUDA_COMPILED),
          "round %d: %s, %.3f ms (lower %.3f, link %.3f, load %.3f, disk %.3f)", round,
          k ? (info.source == FHJIT_CUDA_FROM_DISK ? "disk" : "compiled") : fhjit_last_error(ctx),
          k ? info.total_ms : 0, k ? info.lower_ms : 0, k ? info.link_ms : 0, k ? info.load_ms : 0,
          k ? info.disk_ms : 0);
    if (k) *(round ? &warm : &cold) = info.total_ms;
    fhjit_context_destroy(ctx);
  }
  ctx = saved;
  printf("  compile: cold %.3f ms, warm (disk) %.3f ms\n", cold, warm);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) printf("  could not remove %s\n", dir);
  env_restore(&saved_switch);
  env_restore(&saved_dir);
  group_end("cache");
}

/* Whether `name` is one of the comma-separated names of `list`. */
static int in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && !strncmp(p, name, n)) return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* logs survive a crash */
  const char *examples = FHJIT_EXAMPLES_DIR;
  int max_log2 = 26, nrandom = 120, quick = 0;
  const char *only = NULL, *skip = NULL; /* group names (as in the PASS/FAIL lines) */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--examples") && i + 1 < argc) examples = argv[++i];
    else if (!strcmp(argv[i], "--max-log2") && i + 1 < argc) max_log2 = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--random") && i + 1 < argc) nrandom = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) rng_state = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--skip") && i + 1 < argc) skip = argv[++i];
    else if (!strcmp(argv[i], "--verbose")) verbose = 1;
    else {
      fprintf(stderr, "usage: %s [--examples DIR] [--max-log2 K] [--random N] [--seed S] "
                      "[--quick] [--verbose] [--only G1,G2,..] [--skip G1,G2,..]\n", argv[0]);
      return 2;
    }
  }
  if (quick) {
    if (max_log2 > 16) max_log2 = 16;
    if (nrandom > 24) nrandom = 24;
  }
  if (max_log2 < 4) max_log2 = 4;
  if (max_log2 > 28) max_log2 = 28;
  ctx = fhjit_context_create();
  if (!fhjit_cuda_available(ctx)) {
    printf("SKIP: %s\n", fhjit_last_error(ctx));
    fhjit_context_destroy(ctx);
    return 77;
  }
  if (!load_driver()) return 1;
  /* the streams groups create streams before any fhjit call has made a
   * context current: make fhjit's current first, so that any group can run
   * alone (--only capture stopped at cuStreamCreate with error 201) */
  fhjit_cuda_context current;
  if (fhjit_cuda_current_context(ctx, 0, &current) != FHJIT_OK) {
    printf("no current CUDA context: %s\n", fhjit_last_error(ctx));
    return 1;
  }
  if ((on_fake = fx_install(ctx, NULL))) printf("fake driver: kernels run on the host (fhjit_run_host)\n");
  printf("fhjit %s GPU tests: sizes up to 2^%d, %d random graphs, seed %llu\n", fhjit_version(),
         max_log2, nrandom, (unsigned long long)rng_state);
  /* the disk cache of the user is left alone: this run's own */
  char dir[] = "/tmp/fhjit-gpu-test-XXXXXX";
  if (mkdtemp(dir)) setenv("FHJIT_CACHE_DIR", dir, 1);
#define RUN(name, call) \
  if ((!only || in_list(only, name)) && !in_list(skip, name)) call
  RUN("examples", group_examples(examples));
  RUN("random", group_random(nrandom, quick ? 14 : 20));
  RUN("sizes", group_sizes(max_log2));
  RUN("streams", group_streams(max_log2));
  RUN("capture", group_capture());
  if (!on_fake) { /* the fake cannot run programs of several kernels */
    RUN("ntt", group_ntt());
    RUN("section7", group_s7(quick));
    RUN("bconv_mma", group_bconv_mma(quick));
    RUN("ckks", group_ckks());
    RUN("ipfuse", group_ipfuse(quick));
    RUN("ipntt", group_ipntt(quick));
    RUN("cluster", group_cluster(quick));
    RUN("cluster_rows", group_cluster_rows(quick));
  }
  RUN("errors", group_errors());
  RUN("cache", group_cache());
#undef RUN
  printf("%d passed, %d failed\n", passed, failed);
  fhjit_context_destroy(ctx);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) printf("could not remove %s\n", dir);
  return failed ? 1 : 0;
}
