/* s7_harness.h: what the GPU benchmarks of SPEC section 7 and of the whole
 * CKKS operations share (s7_bench.c, ckks_bench.c): SPEC 7's benchmark
 * sets at N = 2^k, graph-building shorthands, a job that compiles a bound
 * graph, uploads generated inputs (twiddles, tables, random lazy words),
 * checks its first launch against fhjit_interpret and times it with CUDA
 * events, and the floors of the same run read from the CUDA baseline's
 * --floors output. Header-only like bench_util.h: each benchmark program
 * is one translation unit, and its static state is that program's. */
#ifndef FHJIT_S7_HARNESS_H
#define FHJIT_S7_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "runtime/cuda_api.h"

static fhjit_context *ctx;
/* The program's kind ("s7", "ckks"): its messages' prefix and the "kind"
 * of report()'s JSON items. */
static const char *report_kind = "s7";
static int failures;

static inline void die(const char *what) {
  fprintf(stderr, "%s_bench: %s: %s\n", report_kind, what, fhjit_last_error(ctx));
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

static inline void *proc(const char *name, const char *fallback) {
  void *p = fhjit_cuda_driver_proc(ctx, name);
  if (!p && fallback) p = fhjit_cuda_driver_proc(ctx, fallback);
  if (!p) die(name);
  return p;
}

#define CU_OK(call)                                                         \
  do {                                                                      \
    CUresult r_ = (call);                                                   \
    if (r_ != CUDA_SUCCESS) {                                               \
      fprintf(stderr, "%s_bench: %s failed with %d\n", report_kind, #call, (int)r_);     \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

static uint64_t rng = 0x57be;
static inline uint64_t rnd(void) { return bu_splitmix(&rng); }

/* ------------------------------------------------------------ the set */

typedef struct set {
  fhjit_radix radix;
  size_t ws;
  int mq, K, alpha, m; /* Q rows, P rows, digit size, chain length */
  int64_t n;
  int log_n;
  uint64_t q[64];
  void *params, *fwd, *inv; /* host tables of the chain */
  fhjit_cuda_ptr dparams;
} set;

static inline void set_init(set *s, fhjit_radix radix, int log_n) {
  memset(s, 0, sizeof *s);
  s->radix = radix;
  s->ws = radix == FHJIT_R32 ? 4 : 8;
  s->log_n = log_n;
  s->n = INT64_C(1) << log_n;
  s->mq = radix == FHJIT_R62 ? 35 : 48;
  s->K = radix == FHJIT_R62 ? 5 : 12;
  s->alpha = radix == FHJIT_R62 ? 5 : 12;
  s->m = s->mq + s->K;
  /* r62: one 60-bit prime, 34 of 40 bits, P 5 of 60 bits; r32: 29-30 bits */
  uint64_t big[64], small[64];
  int bb = radix == FHJIT_R62 ? 60 : 30, sb = radix == FHJIT_R62 ? 40 : 29;
  if (fhjit_find_primes(ctx, bb, (uint64_t)(2 * s->n), s->mq + s->K, big) ||
      fhjit_find_primes(ctx, sb, (uint64_t)(2 * s->n), s->mq, small))
    die("primes");
  /* Q: r62 big[0] then small; r32 alternating (29 and 30 bits); P: big
   * primes no Q position uses */
  s->q[0] = big[0];
  for (int i = 1; i < s->mq; i++) s->q[i] = radix == FHJIT_R62 || i % 2 ? small[i] : big[i];
  for (int k = 0; k < s->K; k++) s->q[s->mq + k] = big[s->mq + k];
  size_t tb = (size_t)s->m * (size_t)s->n * s->ws;
  s->params = malloc((size_t)(8 * s->m) * s->ws);
  s->fwd = malloc(tb), s->inv = malloc(tb);
  if (!s->params || !s->fwd || !s->inv) die("out of memory");
  if (fhjit_param_table(ctx, radix, s->q, s->m, s->n, 1, 0, s->params, s->m) ||
      fhjit_twiddle_tables(ctx, radix, s->q, s->m, s->n, s->fwd, s->inv))
    die("tables");
  if (!fhjit_cuda_available(ctx)) return; /* a plan printer: host tables only */
  if (fhjit_cuda_alloc(ctx, (size_t)(8 * s->m) * s->ws, &s->dparams) ||
      fhjit_cuda_upload(ctx, s->dparams, s->params, (size_t)(8 * s->m) * s->ws))
    die("params");
}

static inline void set_free(set *s) {
  if (s->dparams) fhjit_cuda_free(ctx, s->dparams);
  free(s->params), free(s->fwd), free(s->inv);
}

/* --------------------------------------------------------- graphs */

static inline fhjit_graph *new_graph(const set *s, const char *name) {
  fhjit_graph *g = fhjit_graph_create(ctx, name, s->radix);
  if (!g || fhjit_graph_set_moduli(g, s->q, s->m) || fhjit_graph_set_special(g, s->K) ||
      fhjit_graph_set_digits(g, s->alpha))
    die("graph");
  return g;
}

static inline fhjit_value poly(const set *s, fhjit_graph *g, const char *name, int first, int rows,
                        fhjit_domain d, fhjit_form f) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY, t.rows = rows, t.n = s->n, t.domain = d, t.form = f;
  fhjit_value v = fhjit_input(g, name, &t);
  int32_t basis[64];
  for (int r = 0; r < rows; r++) basis[r] = first + r;
  if (v < 0 || fhjit_input_basis(g, v, basis, rows)) die("input");
  return v;
}

/* A polynomial input on an explicit basis. */
static inline fhjit_value poly_on(const set *s, fhjit_graph *g, const char *name, const int32_t *basis,
                           int rows, fhjit_domain d, fhjit_form f) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY, t.rows = rows, t.n = s->n, t.domain = d, t.form = f;
  fhjit_value v = fhjit_input(g, name, &t);
  if (v < 0 || fhjit_input_basis(g, v, basis, rows)) die("input");
  return v;
}

static inline fhjit_value twiddles(const set *s, fhjit_graph *g, const char *name) {
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = s->m, .n = s->n};
  return fhjit_input(g, name, &t);
}

static inline fhjit_value table(fhjit_graph *g, int64_t len) {
  fhjit_type t = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = len};
  return fhjit_input(g, "t", &t);
}

static inline fhjit_graph *done(fhjit_graph *g, fhjit_value y) {
  if (y == FHJIT_NO_VALUE || fhjit_output(g, y, "y") || fhjit_bind(g)) die("graph");
  return g;
}


/* modup of digit j of one polynomial on Q (digits of alpha rows, the last
 * one shorter). */
static inline fhjit_graph *modup_graph(const set *s, int j) {
  fhjit_graph *g = new_graph(s, "modup");
  fhjit_value x = poly(s, g, "x", 0, s->mq, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  int64_t left = s->mq - (int64_t)j * s->alpha, nd = left < s->alpha ? left : s->alpha;
  return done(g, fhjit_modup(g, x, j, twiddles(s, g, "fwd"), twiddles(s, g, "inv"),
                             table(g, nd + nd * (s->m - nd))));
}

/* moddown of one polynomial on Q ++ P. */
static inline fhjit_graph *moddown_graph(const set *s) {
  fhjit_graph *g = new_graph(s, "moddown");
  fhjit_value x = poly(s, g, "x", 0, s->m, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  return done(g, fhjit_moddown(g, x, twiddles(s, g, "fwd"), twiddles(s, g, "inv"),
                               table(g, s->K + (int64_t)s->K * s->mq + s->mq)));
}

/* rescale of one polynomial on Q. */
static inline fhjit_graph *rescale_graph(const set *s) {
  fhjit_graph *g = new_graph(s, "rescale");
  fhjit_value x = poly(s, g, "x", 0, s->mq, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  return done(g, fhjit_rescale(g, x, twiddles(s, g, "fwd"), twiddles(s, g, "inv"),
                               table(g, s->mq - 1)));
}

/* ------------------------------------------------------------ timing */

/* Enough for 8 hoisted rotations (keys, tables, twiddles) and their results. */
#define JOB_MAX_INPUTS 64
#define JOB_MAX_RESULTS 16

typedef struct job {
  const set *s;
  fhjit_graph *g;
  fhjit_cuda_kernel *k;
  int nin, nres, nsets;
  size_t in_bytes[JOB_MAX_INPUTS], res_bytes[JOB_MAX_RESULTS];
  void *host_in[JOB_MAX_INPUTS];
  fhjit_cuda_ptr din[4][JOB_MAX_INPUTS], dres[4][JOB_MAX_RESULTS];
  fhjit_cuda_args a[4];
  int nkernels;
} job;

/* Input i's words: the chain's twiddles, its table, else random lazy words
 * of each row's modulus (a key's rows are chain positions). */
static inline void fill(job *j, int32_t i) {
  const set *s = j->s;
  fhjit_type t;
  fhjit_input_binding(j->g, i, &t, NULL);
  if (t.kind == FHJIT_KIND_TWIDDLE) {
    int use = 0;
    fhjit_input_twiddle_use(j->g, i, &use);
    memcpy(j->host_in[i], use == FHJIT_TWIDDLE_INVERSE ? s->inv : s->fwd, j->in_bytes[i]);
    return;
  }
  if (t.kind == FHJIT_KIND_TABLE) {
    int64_t len;
    if (fhjit_input_table(j->g, i, j->host_in[i], &len)) die("table");
    return;
  }
  int32_t basis[64], rows;
  if (t.kind == FHJIT_KIND_KEY)
    for (rows = 0; rows < t.rows && rows < 64; rows++) basis[rows] = rows;
  else if (fhjit_value_basis(j->g, fhjit_input_value(j->g, i), basis, 64, &rows))
    die("basis");
  size_t words = j->in_bytes[i] / s->ws;
  for (size_t k = 0; k < words; k++) {
    uint64_t q = s->q[basis[(k / (size_t)s->n) % (size_t)t.rows]];
    uint64_t v = rnd() % (2 * q);
    if (s->ws == 4) ((uint32_t *)j->host_in[i])[k] = (uint32_t)v;
    else ((uint64_t *)j->host_in[i])[k] = v;
  }
}

/* Compiles g, uploads its inputs (several sets), and, when check, compares
 * its first launch with the interpreter. */
static inline void job_init(job *j, const set *s, fhjit_graph *g, int check, int quick) {
  memset(j, 0, sizeof *j);
  j->s = s, j->g = g;
  j->nin = fhjit_num_inputs(g), j->nres = fhjit_num_results(g);
  if (j->nin > JOB_MAX_INPUTS || j->nres > JOB_MAX_RESULTS) die("too many inputs or results");
  fhjit_cuda_compile_info info;
  if (!(j->k = fhjit_cuda_compile(g, NULL, &info))) die("compile");
  j->nkernels = info.nkernels;
  size_t total = 0;
  for (int32_t i = 0; i < j->nin; i++) {
    if (fhjit_cuda_input_bytes(g, i, &j->in_bytes[i])) die("input bytes");
    if (!(j->host_in[i] = malloc(j->in_bytes[i]))) die("out of memory");
    fill(j, i);
    total += j->in_bytes[i];
  }
  for (int32_t r = 0; r < j->nres; r++) {
    if (fhjit_cuda_result_bytes(g, r, &j->res_bytes[r])) die("result bytes");
    total += j->res_bytes[r];
  }
  j->nsets = quick ? 1 : (int)((size_t)(240u << 20) / total + 1);
  if (j->nsets > 4) j->nsets = 4;
  for (int k = 0; k < j->nsets; k++) {
    for (int32_t i = 0; i < j->nin; i++)
      if (fhjit_cuda_alloc(ctx, j->in_bytes[i], &j->din[k][i]) ||
          fhjit_cuda_upload(ctx, j->din[k][i], j->host_in[i], j->in_bytes[i]))
        die("upload");
    for (int32_t r = 0; r < j->nres; r++)
      if (fhjit_cuda_alloc(ctx, j->res_bytes[r], &j->dres[k][r])) die("alloc");
    fhjit_cuda_args *a = &j->a[k];
    memset(a, 0, sizeof *a);
    a->params = s->dparams;
    a->pstride = s->m;
    a->inputs = j->din[k];
    a->ninputs = j->nin;
    a->results = j->dres[k];
    a->nresults = j->nres;
  }
  if (!check) return;
  void *ref[JOB_MAX_RESULTS], *got;
  for (int32_t r = 0; r < j->nres; r++) ref[r] = malloc(j->res_bytes[r]);
  if (fhjit_interpret(g, s->params, s->m, (const void *const *)j->host_in, ref)) die("interpret");
  if (fhjit_cuda_launch_kernel(j->k, &j->a[0])) die("launch");
  for (int32_t r = 0; r < j->nres; r++) {
    got = malloc(j->res_bytes[r]);
    if (fhjit_cuda_download(ctx, got, j->dres[0][r], j->res_bytes[r])) die("download");
    if (memcmp(got, ref[r], j->res_bytes[r])) {
      size_t words = j->res_bytes[r] / s->ws, first = 0, bad = 0;
      for (size_t k = 0; k < words; k++) {
        uint64_t a = s->ws == 4 ? ((uint32_t *)got)[k] : ((uint64_t *)got)[k];
        uint64_t b = s->ws == 4 ? ((uint32_t *)ref[r])[k] : ((uint64_t *)ref[r])[k];
        if (a != b && !bad++) first = k;
      }
      uint64_t a = s->ws == 4 ? ((uint32_t *)got)[first] : ((uint64_t *)got)[first];
      uint64_t b = s->ws == 4 ? ((uint32_t *)ref[r])[first] : ((uint64_t *)ref[r])[first];
      printf("MISMATCH: %s result %d: %zu of %zu words differ, first at row %zu index %zu: "
             "gpu %llu, interpreter %llu\n",
             fhjit_graph_name(g), (int)r, bad, words, (first / (size_t)s->n), first % (size_t)s->n,
             (unsigned long long)a, (unsigned long long)b);
      failures++;
    }
    free(got);
    free(ref[r]);
  }
}

static inline void job_free(job *j) {
  for (int k = 0; k < j->nsets; k++) {
    for (int32_t i = 0; i < j->nin; i++) fhjit_cuda_free(ctx, j->din[k][i]);
    for (int32_t r = 0; r < j->nres; r++) fhjit_cuda_free(ctx, j->dres[k][r]);
  }
  for (int32_t i = 0; i < j->nin; i++) free(j->host_in[i]);
  fhjit_graph_destroy(j->g);
}

/* Median microseconds per launch of job j (batches of 10, sets rotated). */
static inline double job_time(job *j) {
  CUevent e0, e1;
  CU_OK(cu.cuEventCreate(&e0, 0));
  CU_OK(cu.cuEventCreate(&e1, 0));
  double samples[15];
  for (int w = 0; w < 3; w++)
    if (fhjit_cuda_launch_kernel(j->k, &j->a[w % j->nsets])) die("launch");
  for (int r = 0; r < 15; r++) {
    CU_OK(cu.cuEventRecord(e0, NULL));
    for (int it = 0; it < 10; it++)
      if (fhjit_cuda_launch_kernel(j->k, &j->a[it % j->nsets])) die("launch");
    CU_OK(cu.cuEventRecord(e1, NULL));
    CU_OK(cu.cuEventSynchronize(e1));
    float ms = 0;
    CU_OK(cu.cuEventElapsedTime(&ms, e0, e1));
    samples[r] = ms * 100.0;
  }
  CU_OK(cu.cuEventDestroy(e0));
  CU_OK(cu.cuEventDestroy(e1));
  return bu_median(samples, 15);
}

/* Times graph g (checked against the interpreter when check); frees it. */
static inline double time_graph(const set *s, fhjit_graph *g, int check, int quick, int *nkernels) {
  job j;
  job_init(&j, s, g, check, quick);
  double us = job_time(&j);
  if (nkernels) *nkernels += j.nkernels;
  job_free(&j);
  return us;
}


/* ------------------------------------------------------------ floors */

static double copy_gbps = 0, rate_gps[2] = {0, 0}, mac_gps[2] = {0, 0}; /* r32, r62 */

static inline void read_floors(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s_bench: cannot read %s\n", report_kind, path);
    exit(1);
  }
  char buf[8192];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = 0;
  const char *p;
  if ((p = strstr(buf, "\"copy_GBps\": "))) copy_gbps = atof(p + 13);
  if ((p = strstr(buf, "\"r32_products_Gps\": "))) rate_gps[0] = atof(p + 20);
  if ((p = strstr(buf, "\"r62_products_Gps\": "))) rate_gps[1] = atof(p + 20);
  if ((p = strstr(buf, "\"r32_macs_Gps\": "))) mac_gps[0] = atof(p + 16);
  if ((p = strstr(buf, "\"r62_macs_Gps\": "))) mac_gps[1] = atof(p + 16);
}

/* Modular products of an NTT of `rows` rows (butterflies, plus the
 * inverse's scaling or the standard form's to_mont); of a conversion l ->
 * m per coefficient: V_i and one exact reduction per output (its l m wide
 * multiply-accumulates are counted apart, at their own rate). */
static inline double ntt_products(const set *s, int rows, int extra) {
  return (double)rows * (double)s->n * (s->log_n / 2.0 + (extra ? 1 : 0));
}
static inline double bconv_products(const set *s, int l, int m) {
  return (double)s->n * (double)(l + m);
}
static inline double bconv_macs(const set *s, int l, int m) { return (double)s->n * (double)(l * m); }

typedef struct row {
  const char *op;
  double us, sep_us, bytes, prods, macs, mem_us, prod_us;
  int kernels, sep_kernels;
} row;

static inline void report(const set *s, row *r) {
  double rate = rate_gps[s->radix == FHJIT_R62] * 1e9, mrate = mac_gps[s->radix == FHJIT_R62] * 1e9;
  r->mem_us = copy_gbps > 0 ? r->bytes / (copy_gbps * 1e9) * 1e6 : 0;
  r->prod_us = rate > 0 ? r->prods / rate * 1e6 : 0;
  if (mrate > 0) r->prod_us += r->macs / mrate * 1e6;
  double fl = r->mem_us > r->prod_us ? r->mem_us : r->prod_us;
  printf("%-4s %-22s %8.1f us  %2d kernels | floors: memory %7.1f us, products %7.1f us, "
         "ratio %5.2fx",
         s->radix == FHJIT_R62 ? "r62" : "r32", r->op, r->us, r->kernels, r->mem_us, r->prod_us,
         fl > 0 ? r->us / fl : 0);
  if (r->sep_us > 0) printf(" | separate %8.1f us (%d kernels): %5.2fx", r->sep_us, r->sep_kernels, r->sep_us / r->us);
  printf("\n");
  bu_json_item("\"kind\": \"%s\", \"radix\": \"%s\", \"log_n\": %d, \"op\": \"%s\", \"us\": %.3f, "
               "\"kernels\": %d, \"bytes\": %.0f, \"products\": %.0f, \"macs\": %.0f, "
               "\"memory_floor_us\": %.3f, "
               "\"product_floor_us\": %.3f, \"separate_us\": %.3f, \"separate_kernels\": %d, "
               "\"copy_GBps\": %.2f, \"products_Gps\": %.2f",
               report_kind, s->radix == FHJIT_R62 ? "r62" : "r32", s->log_n, r->op, r->us, r->kernels, r->bytes,
               r->prods, r->macs, r->mem_us, r->prod_us, r->sep_us, r->sep_kernels, copy_gbps,
               rate_gps[s->radix == FHJIT_R62]);
}

/* Opens the context and the event calls; 0 when there is no GPU (the
 * caller exits 77, "skipped"). */
static inline int harness_start(void) {
  ctx = fhjit_context_create();
  if (!fhjit_cuda_available(ctx)) {
    printf("SKIP: %s\n", fhjit_last_error(ctx));
    return 0;
  }
  cu.cuEventCreate = proc("cuEventCreate", NULL);
  cu.cuEventRecord = proc("cuEventRecord", NULL);
  cu.cuEventSynchronize = proc("cuEventSynchronize", NULL);
  cu.cuEventElapsedTime = proc("cuEventElapsedTime", NULL);
  cu.cuEventDestroy = proc("cuEventDestroy_v2", "cuEventDestroy");
  cu.cuCtxSynchronize = proc("cuCtxSynchronize", NULL);
  return 1;
}

#endif
