/* s7_bench.c: SPEC section 7's ops on the GPU through the public runtime API
 * (issue 16's figures): bconv, modup of one digit, moddown, rescale and the
 * automorphism at N = 2^16 on SPEC 7's benchmark sets (r62: Q 35 + P 5,
 * dnum 7, alpha 5; r32: Q 48 + P 12, dnum 4, alpha 12).
 *
 * Each op is one bound graph; its first launch is checked word for word
 * against fhjit_interpret, then CUDA events time batches of 10 launches
 * (input sets rotated so the working set exceeds the 60 MB L2) and the
 * median of 15 batches is reported. Beside each op: its floors in the same
 * run, the bytes it must move (inputs read once, outputs written once) over
 * the copy bandwidth and its modular products over the product rate, both
 * read from the CUDA baseline's --floors output (bench/s7-run.sh runs it
 * first, in the same script), and the same work as separate graphs (each
 * NTT, the conversion, the pointwise rest as their own kernels, every value
 * through memory), timed the same way. The automorphism is timed alone and
 * fused into a product (mul(automorphism(x), z) against mul(x, z)).
 *
 *   s7_bench [--floors FILE] [--radix r62,r32] [--json FILE] [--quick]
 *            [--sweep-bconv] [--bconv-plans "P1;P2;..."]
 * --quick: N = 2^12 (a check of this program). Against the fake driver
 * (FHJIT_LIBCUDA) nothing is timed. --sweep-bconv: instead of the ops,
 * the bconv alone under each bconv_plan (docs/section7.md "Tuning"; the
 * default list is V, S, U in {1, 2, 4} at T 128, 256, 512), each checked
 * against the interpreter, then modup with the fastest plan;
 * --bconv-plans: that sweep over the given plans. --sweep-aut: the
 * coefficient-domain automorphism alone, in a product, and the product
 * alone under pw_plan values (A=1 stages its sources in shared memory);
 * --aut-plans: over the given ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "runtime/cuda_api.h"

static fhjit_context *ctx;
static int failures;

static void die(const char *what) {
  fprintf(stderr, "s7_bench: %s: %s\n", what, fhjit_last_error(ctx));
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

#define CU_OK(call)                                                         \
  do {                                                                      \
    CUresult r_ = (call);                                                   \
    if (r_ != CUDA_SUCCESS) {                                               \
      fprintf(stderr, "s7_bench: %s failed with %d\n", #call, (int)r_);     \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

static uint64_t rng = 0x57be;
static uint64_t rnd(void) { return bu_splitmix(&rng); }

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

static void set_init(set *s, fhjit_radix radix, int log_n) {
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
  if (fhjit_cuda_alloc(ctx, (size_t)(8 * s->m) * s->ws, &s->dparams) ||
      fhjit_cuda_upload(ctx, s->dparams, s->params, (size_t)(8 * s->m) * s->ws))
    die("params");
}

static void set_free(set *s) {
  fhjit_cuda_free(ctx, s->dparams);
  free(s->params), free(s->fwd), free(s->inv);
}

/* --------------------------------------------------------- graphs */

static fhjit_graph *new_graph(const set *s, const char *name) {
  fhjit_graph *g = fhjit_graph_create(ctx, name, s->radix);
  if (!g || fhjit_graph_set_moduli(g, s->q, s->m) || fhjit_graph_set_special(g, s->K) ||
      fhjit_graph_set_digits(g, s->alpha))
    die("graph");
  return g;
}

static fhjit_value poly(const set *s, fhjit_graph *g, const char *name, int first, int rows,
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
static fhjit_value poly_on(const set *s, fhjit_graph *g, const char *name, const int32_t *basis,
                           int rows, fhjit_domain d, fhjit_form f) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY, t.rows = rows, t.n = s->n, t.domain = d, t.form = f;
  fhjit_value v = fhjit_input(g, name, &t);
  if (v < 0 || fhjit_input_basis(g, v, basis, rows)) die("input");
  return v;
}

static fhjit_value twiddles(const set *s, fhjit_graph *g, const char *name) {
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = s->m, .n = s->n};
  return fhjit_input(g, name, &t);
}

static fhjit_value table(fhjit_graph *g, int64_t len) {
  fhjit_type t = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = len};
  return fhjit_input(g, "t", &t);
}

static fhjit_graph *done(fhjit_graph *g, fhjit_value y) {
  if (y == FHJIT_NO_VALUE || fhjit_output(g, y, "y") || fhjit_bind(g)) die("graph");
  return g;
}

/* One NTT of `rows` rows from chain position `first` (kind k). */
static fhjit_graph *ntt_graph(const set *s, int first, int rows, fhjit_ntt_kind k) {
  fhjit_graph *g = new_graph(s, "ntt");
  int fwd = k == FHJIT_NTT_COEF_MONT_TO_NTT || k == FHJIT_NTT_COEF_STD_TO_NTT;
  fhjit_form f = k == FHJIT_NTT_COEF_STD_TO_NTT ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
  fhjit_value x = poly(s, g, "x", first, rows, fwd ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT, f);
  /* on [0, rows) (the default basis) the table has exactly its rows: the
   * chain's first rows */
  fhjit_type tt = {.kind = FHJIT_KIND_TWIDDLE, .rows = first ? s->m : rows, .n = s->n};
  fhjit_value tw = fhjit_input(g, fwd ? "fwd" : "inv", &tt);
  return done(g, fhjit_ntt(g, x, tw, k));
}

/* bconv from `l` rows at `src` to the m positions `dst`. */
static fhjit_graph *bconv_graph(const set *s, const int32_t *src, int l, const int32_t *dst,
                                int m) {
  fhjit_graph *g = new_graph(s, "bconv");
  fhjit_value x = poly_on(s, g, "x", src, l, FHJIT_DOMAIN_COEF, FHJIT_FORM_MONT);
  return done(g, fhjit_bconv(g, x, table(g, l + (int64_t)l * m), dst, m));
}

static fhjit_graph *modup_graph(const set *s) {
  fhjit_graph *g = new_graph(s, "modup");
  fhjit_value x = poly(s, g, "x", 0, s->mq, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  int64_t nd = s->alpha;
  return done(g, fhjit_modup(g, x, 0, twiddles(s, g, "fwd"), twiddles(s, g, "inv"),
                             table(g, nd + nd * (s->m - nd))));
}

static fhjit_graph *moddown_graph(const set *s) {
  fhjit_graph *g = new_graph(s, "moddown");
  fhjit_value x = poly(s, g, "x", 0, s->m, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  return done(g, fhjit_moddown(g, x, twiddles(s, g, "fwd"), twiddles(s, g, "inv"),
                               table(g, s->K + (int64_t)s->K * s->mq + s->mq)));
}

static fhjit_graph *rescale_graph(const set *s) {
  fhjit_graph *g = new_graph(s, "rescale");
  fhjit_value x = poly(s, g, "x", 0, s->mq, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  return done(g, fhjit_rescale(g, x, twiddles(s, g, "fwd"), twiddles(s, g, "inv"),
                               table(g, s->mq - 1)));
}

/* mode 0: automorphism(x) alone; 1: mul(automorphism(x), z); 2: mul(x, z). */
static fhjit_graph *aut_graph(const set *s, fhjit_domain d, int mode) {
  fhjit_graph *g = new_graph(s, "aut");
  fhjit_value x = poly(s, g, "x", 0, s->mq, d, FHJIT_FORM_MONT);
  fhjit_value a = mode == 2 ? x : fhjit_automorphism(g, x, 5 * 5 * 5 % (2 * s->n));
  if (mode == 0) return done(g, a);
  return done(g, fhjit_mul(g, a, poly(s, g, "z", 0, s->mq, d, FHJIT_FORM_MONT)));
}


/* The pointwise rest of moddown and rescale as a graph of its own:
 * mul(sub(x, u), c) with c a full polynomial of constants. */
static fhjit_graph *scale_graph(const set *s, int rows) {
  fhjit_graph *g = new_graph(s, "scale");
  fhjit_value x = poly(s, g, "x", 0, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value u = poly(s, g, "u", 0, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value c = poly(s, g, "c", 0, rows, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  return done(g, fhjit_mul(g, fhjit_sub(g, x, u), c));
}

/* Modup's gather of its rows as a graph of its own. */
static fhjit_graph *gather_graph(const set *s) {
  fhjit_graph *g = new_graph(s, "gather");
  int32_t others[64];
  for (int r = s->alpha; r < s->m; r++) others[r - s->alpha] = r;
  fhjit_value d = poly(s, g, "d", 0, s->alpha, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  fhjit_value u = poly_on(s, g, "u", others, s->m - s->alpha, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
  return done(g, fhjit_concat(g, d, u));
}

/* ------------------------------------------------------------ timing */

typedef struct job {
  const set *s;
  fhjit_graph *g;
  fhjit_cuda_kernel *k;
  int nin, nres, nsets;
  size_t in_bytes[16], res_bytes[8];
  void *host_in[16];
  fhjit_cuda_ptr din[4][16], dres[4][8];
  fhjit_cuda_args a[4];
  int nkernels;
} job;

/* Input i's words: the chain's twiddles, its table, else random lazy words
 * of each row's modulus. */
static void fill(job *j, int32_t i) {
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
  if (fhjit_value_basis(j->g, fhjit_input_value(j->g, i), basis, 64, &rows)) die("basis");
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
static void job_init(job *j, const set *s, fhjit_graph *g, int check, int quick) {
  memset(j, 0, sizeof *j);
  j->s = s, j->g = g;
  j->nin = fhjit_num_inputs(g), j->nres = fhjit_num_results(g);
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
  void *ref[8], *got;
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

static void job_free(job *j) {
  for (int k = 0; k < j->nsets; k++) {
    for (int32_t i = 0; i < j->nin; i++) fhjit_cuda_free(ctx, j->din[k][i]);
    for (int32_t r = 0; r < j->nres; r++) fhjit_cuda_free(ctx, j->dres[k][r]);
  }
  for (int32_t i = 0; i < j->nin; i++) free(j->host_in[i]);
  fhjit_graph_destroy(j->g);
}

/* Median microseconds per launch of job j (batches of 10, sets rotated). */
static double job_time(job *j) {
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
static double time_graph(const set *s, fhjit_graph *g, int check, int quick, int *nkernels) {
  job j;
  job_init(&j, s, g, check, quick);
  double us = job_time(&j);
  if (nkernels) *nkernels += j.nkernels;
  job_free(&j);
  return us;
}


/* ------------------------------------------------------------ floors */

static double copy_gbps = 0, rate_gps[2] = {0, 0}, mac_gps[2] = {0, 0}; /* r32, r62 */

static void read_floors(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "s7_bench: cannot read %s\n", path);
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
static double ntt_products(const set *s, int rows, int extra) {
  return (double)rows * (double)s->n * (s->log_n / 2.0 + (extra ? 1 : 0));
}
static double bconv_products(const set *s, int l, int m) {
  return (double)s->n * (double)(l + m);
}
static double bconv_macs(const set *s, int l, int m) { return (double)s->n * (double)(l * m); }

typedef struct row {
  const char *op;
  double us, sep_us, bytes, prods, macs, mem_us, prod_us;
  int kernels, sep_kernels;
} row;

static void report(const set *s, row *r) {
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
  bu_json_item("{\"kind\": \"s7\", \"radix\": \"%s\", \"log_n\": %d, \"op\": \"%s\", \"us\": %.3f, "
               "\"kernels\": %d, \"bytes\": %.0f, \"products\": %.0f, \"macs\": %.0f, "
               "\"memory_floor_us\": %.3f, "
               "\"product_floor_us\": %.3f, \"separate_us\": %.3f, \"separate_kernels\": %d, "
               "\"copy_GBps\": %.2f, \"products_Gps\": %.2f}",
               s->radix == FHJIT_R62 ? "r62" : "r32", s->log_n, r->op, r->us, r->kernels, r->bytes,
               r->prods, r->macs, r->mem_us, r->prod_us, r->sep_us, r->sep_kernels, copy_gbps,
               rate_gps[s->radix == FHJIT_R62]);
}

static void bench_set(fhjit_radix radix, int log_n, int quick) {
  set s;
  set_init(&s, radix, log_n);
  double ws = (double)s.ws, poly = (double)s.n * ws; /* bytes of one row */
  int a = s.alpha, mq = s.mq, K = s.K, m = s.m;
  int32_t digit[64], rest[64], P[64], Q[64];
  for (int r = 0; r < a; r++) digit[r] = r;
  for (int r = a; r < m; r++) rest[r - a] = r;
  for (int k = 0; k < K; k++) P[k] = mq + k;
  for (int r = 0; r < mq; r++) Q[r] = r;

  /* bconv alone: digit 0 -> the other rows of Q ++ P */
  row r = {.op = "bconv"};
  r.us = time_graph(&s, bconv_graph(&s, digit, a, rest, m - a), 1, quick, &r.kernels);
  r.bytes = (double)(a + m - a) * poly;
  r.prods = bconv_products(&s, a, m - a);
  r.macs = bconv_macs(&s, a, m - a);
  report(&s, &r);

  /* modup of digit 0: INTT(alpha), bconv, NTT(m - alpha), gather */
  row u = {.op = "modup(digit 0)"};
  u.us = time_graph(&s, modup_graph(&s), 1, quick, &u.kernels);
  double intt = time_graph(&s, ntt_graph(&s, 0, a, FHJIT_NTT_TO_COEF_MONT), 0, quick, &u.sep_kernels);
  double ntt = time_graph(&s, ntt_graph(&s, a, m - a, FHJIT_NTT_COEF_MONT_TO_NTT), 0, quick, &u.sep_kernels);
  double bc = time_graph(&s, bconv_graph(&s, digit, a, rest, m - a), 0, quick, &u.sep_kernels);
  double ga = time_graph(&s, gather_graph(&s), 0, quick, &u.sep_kernels);
  u.sep_us = intt + bc + ntt + ga;
  u.bytes = (double)(a + m) * poly;
  u.prods = ntt_products(&s, a, 1) + bconv_products(&s, a, m - a) + ntt_products(&s, m - a, 0);
  u.macs = bconv_macs(&s, a, m - a);
  report(&s, &u);
  printf("     modup: its NTTs alone %.1f us + conversion floor %.1f us = %.1f us; modup / that = "
         "%.2fx (target 1.2x)\n",
         intt + ntt, r.mem_us > r.prod_us ? r.mem_us : r.prod_us,
         intt + ntt + (r.mem_us > r.prod_us ? r.mem_us : r.prod_us),
         u.us / (intt + ntt + (r.mem_us > r.prod_us ? r.mem_us : r.prod_us)));

  /* moddown: INTT(P), bconv P -> Q, NTT(Q), (a - u) P*^-1 */
  row d = {.op = "moddown"};
  d.us = time_graph(&s, moddown_graph(&s), 1, quick, &d.kernels);
  d.sep_us = time_graph(&s, ntt_graph(&s, mq, K, FHJIT_NTT_TO_COEF_MONT), 0, quick, &d.sep_kernels) +
             time_graph(&s, bconv_graph(&s, P, K, Q, mq), 0, quick, &d.sep_kernels) +
             time_graph(&s, ntt_graph(&s, 0, mq, FHJIT_NTT_COEF_MONT_TO_NTT), 0, quick, &d.sep_kernels) +
             time_graph(&s, scale_graph(&s, mq), 0, quick, &d.sep_kernels);
  d.bytes = (double)(m + mq) * poly;
  d.prods = ntt_products(&s, K, 1) + bconv_products(&s, K, mq) + ntt_products(&s, mq, 0) +
            (double)mq * (double)s.n;
  d.macs = bconv_macs(&s, K, mq);
  report(&s, &d);

  /* rescale: INTT(last row), lift, NTT(the rest), (x - u) q^-1 */
  row c = {.op = "rescale"};
  c.us = time_graph(&s, rescale_graph(&s), 1, quick, &c.kernels);
  c.sep_us = time_graph(&s, ntt_graph(&s, mq - 1, 1, FHJIT_NTT_TO_COEF_STD), 0, quick, &c.sep_kernels) +
             time_graph(&s, ntt_graph(&s, 0, mq - 1, FHJIT_NTT_COEF_STD_TO_NTT), 0, quick, &c.sep_kernels) +
             time_graph(&s, scale_graph(&s, mq - 1), 0, quick, &c.sep_kernels);
  c.bytes = (double)(2 * mq - 1) * poly;
  c.prods = ntt_products(&s, 1, 1) + ntt_products(&s, mq - 1, 1) + 2.0 * (mq - 1) * (double)s.n;
  report(&s, &c);
  printf("     rescale separate: the NTTs and the pointwise rest without the lift (no public op)\n");

  /* automorphism alone and fused into a product, both domains */
  for (int dom = 0; dom < 2; dom++) {
    fhjit_domain D = dom ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
    row t = {.op = dom ? "automorphism (coef)" : "automorphism (ntt)"};
    t.us = time_graph(&s, aut_graph(&s, D, 0), 1, quick, &t.kernels);
    t.bytes = 2.0 * mq * poly;
    report(&s, &t);
    int k1 = 0, k2 = 0;
    double fused = time_graph(&s, aut_graph(&s, D, 1), 1, quick, &k1);
    double plain = time_graph(&s, aut_graph(&s, D, 2), 1, quick, &k2);
    printf("     %s fused into mul: %.1f us against mul alone %.1f us: +%.1f%% (target < 5%%)\n",
           dom ? "coefficient-domain automorphism" : "NTT-domain automorphism", fused, plain,
           (fused / plain - 1) * 100);
    bu_json_item("{\"kind\": \"s7_aut_fused\", \"radix\": \"%s\", \"domain\": \"%s\", "
                 "\"fused_us\": %.3f, \"plain_us\": %.3f}",
                 radix == FHJIT_R62 ? "r62" : "r32", dom ? "coef" : "ntt", fused, plain);
  }
  set_free(&s);
}

/* ------------------------------------------------------------ sweeps */

/* The default bconv sweep: every V, S, U of {1, 2, 4} at T 128, 256, 512
 * (V=4 is V=2 for r62: those plans are skipped there). */
static int default_plans(fhjit_radix radix, char plans[][40], int max) {
  static const int vs[] = {1, 2, 4}, ss[] = {1, 2, 4}, us[] = {1, 2, 4}, ts[] = {128, 256, 512};
  int n = 0;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 3; c++)
        for (int d = 0; d < 3 && n < max; d++) {
          if (radix == FHJIT_R62 && vs[a] == 4) continue;
          snprintf(plans[n++], 40, "V=%d,T=%d,S=%d,U=%d", vs[a], ts[d], ss[b], us[c]);
        }
  return n;
}

/* Times the bconv of the benchmark (digit 0 -> the other rows of Q ++ P)
 * under each bconv_plan (the context option), every plan's result checked
 * word for word against one interpreter run on the same inputs; then
 * modup with the fastest plan against the automatic one. plans: "P1;P2;.."
 * or NULL for default_plans. */
static void sweep_bconv(fhjit_radix radix, int log_n, int quick, const char *list) {
  set s;
  set_init(&s, radix, log_n);
  int a = s.alpha, m = s.m;
  int32_t digit[64], rest[64];
  for (int r = 0; r < a; r++) digit[r] = r;
  for (int r = a; r < m; r++) rest[r - a] = r;
  static char plans[128][40];
  int np = 0;
  if (list) {
    const char *p = list;
    while (*p && np < 128) {
      size_t len = strcspn(p, ";");
      snprintf(plans[np++], 40, "%.*s", (int)len, p);
      p += len + (p[len] == ';');
    }
  } else {
    np = default_plans(radix, plans, 128);
  }
  const char *rn = radix == FHJIT_R62 ? "r62" : "r32";
  double mem = copy_gbps > 0 ? (double)m * (double)s.n * (double)s.ws / (copy_gbps * 1e9) * 1e6 : 0;
  double rate = rate_gps[radix == FHJIT_R62] * 1e9, mrate = mac_gps[radix == FHJIT_R62] * 1e9;
  double prod = (rate > 0 ? bconv_products(&s, a, m - a) / rate * 1e6 : 0) +
                (mrate > 0 ? bconv_macs(&s, a, m - a) / mrate * 1e6 : 0);
  double floor = mem > prod ? mem : prod;
  /* one job: inputs, the interpreter's result, buffers */
  if (fhjit_context_set_option(ctx, "bconv_plan", "")) die("bconv_plan");
  job j;
  job_init(&j, &s, bconv_graph(&s, digit, a, rest, m - a), 0, quick);
  void *ref = malloc(j.res_bytes[0]), *got = malloc(j.res_bytes[0]);
  if (!ref || !got) die("out of memory");
  if (fhjit_interpret(j.g, s.params, s.m, (const void *const *)j.host_in, (void *[]){ref}))
    die("interpret");
  double best = 0, auto_us = 0;
  int best_i = -1;
  for (int i = -1; i < np; i++) {
    const char *plan = i < 0 ? "" : plans[i];
    if (fhjit_context_set_option(ctx, "bconv_plan", plan)) {
      printf("%s bconv plan \"%s\": refused: %s\n", rn, plan, fhjit_last_error(ctx));
      failures++;
      continue;
    }
    fhjit_cuda_kernel *k = fhjit_cuda_compile(j.g, NULL, NULL);
    if (!k) { /* one plan's failure does not end the sweep */
      printf("%s bconv plan \"%s\": compile failed: %s\n", rn, plan, fhjit_last_error(ctx));
      failures++;
      continue;
    }
    j.k = k;
    memset(got, 0, j.res_bytes[0]); /* the previous plan's words do not pass */
    if (fhjit_cuda_upload(ctx, j.dres[0][0], got, j.res_bytes[0]) ||
        fhjit_cuda_launch_kernel(k, &j.a[0]) ||
        fhjit_cuda_download(ctx, got, j.dres[0][0], j.res_bytes[0]))
      die("launch");
    int ok = !memcmp(got, ref, j.res_bytes[0]);
    if (!ok) failures++;
    double us = job_time(&j);
    printf("%s bconv %2d -> %2d plan %-22s %8.2f us  floor %6.2f us  ratio %5.2fx  %s\n", rn, a,
           m - a, i < 0 ? "(automatic)" : plan, us, floor, floor > 0 ? us / floor : 0,
           ok ? "checked" : "MISMATCH against the interpreter");
    bu_json_item("{\"kind\": \"s7_bconv_sweep\", \"radix\": \"%s\", \"log_n\": %d, "
                 "\"plan\": \"%s\", \"us\": %.3f, \"floor_us\": %.3f, \"checked\": %d}",
                 rn, log_n, plan, us, floor, ok);
    if (i < 0) auto_us = us;
    else if (ok && (best_i < 0 || us < best)) best = us, best_i = i;
  }
  if (best_i >= 0)
    printf("%s bconv: fastest plan %s %.2f us (%.2fx of the floor), automatic %.2f us\n", rn,
           plans[best_i], best, floor > 0 ? best / floor : 0, auto_us);
  free(ref);
  free(got);
  job_free(&j);
  /* modup with the fastest plan (its conversion) against the automatic one */
  for (int pass = 0; pass < 2 && best_i >= 0; pass++) {
    const char *plan = pass ? plans[best_i] : "";
    if (fhjit_context_set_option(ctx, "bconv_plan", plan)) die("bconv_plan");
    double us = time_graph(&s, modup_graph(&s), 1, quick, NULL);
    printf("%s modup(digit 0) plan %-22s %8.2f us\n", rn, pass ? plan : "(automatic)", us);
  }
  if (fhjit_context_set_option(ctx, "bconv_plan", NULL)) die("bconv_plan");
  set_free(&s);
}

/* The coefficient-domain automorphism fused into a product under each
 * pw_plan (A=1: its sources staged in shared memory, lower.c emit_stage),
 * against the product alone under the same plan; both checked against the
 * interpreter (time_graph). plans: "P1;P2;.." or NULL for the default list. */
static void sweep_aut(fhjit_radix radix, int log_n, int quick, const char *list) {
  static const char *const dflt = "A=0;A=1;A=1,T=128;A=1,T=512;A=1,T=1024;A=0,U=2;A=1,V=2";
  set s;
  set_init(&s, radix, log_n);
  const char *rn = radix == FHJIT_R62 ? "r62" : "r32";
  const char *p = list ? list : dflt;
  while (*p) {
    char plan[64];
    size_t len = strcspn(p, ";");
    snprintf(plan, sizeof plan, "%.*s", (int)len, p);
    p += len + (p[len] == ';');
    if (fhjit_context_set_option(ctx, "pw_plan", plan)) {
      printf("%s aut plan \"%s\": refused: %s\n", rn, plan, fhjit_last_error(ctx));
      failures++;
      continue;
    }
    double alone = time_graph(&s, aut_graph(&s, FHJIT_DOMAIN_COEF, 0), 1, quick, NULL);
    double fused = time_graph(&s, aut_graph(&s, FHJIT_DOMAIN_COEF, 1), 1, quick, NULL);
    double plain = time_graph(&s, aut_graph(&s, FHJIT_DOMAIN_COEF, 2), 1, quick, NULL);
    printf("%s automorphism (coef, k = 125) pw_plan %-16s alone %7.2f us, in mul %7.2f us, mul "
           "alone %7.2f us: +%.1f%% (target < 5%%)\n",
           rn, plan, alone, fused, plain, (fused / plain - 1) * 100);
    bu_json_item("{\"kind\": \"s7_aut_sweep\", \"radix\": \"%s\", \"log_n\": %d, "
                 "\"pw_plan\": \"%s\", \"alone_us\": %.3f, \"fused_us\": %.3f, "
                 "\"plain_us\": %.3f}",
                 rn, log_n, plan, alone, fused, plain);
  }
  if (fhjit_context_set_option(ctx, "pw_plan", NULL)) die("pw_plan");
  set_free(&s);
}

int main(int argc, char **argv) {
  const char *floors = NULL, *radices = "r62,r32", *json = NULL;
  const char *plans = NULL, *aut_plans = NULL;
  int quick = 0, sweep = 0, sweep_a = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--floors") && i + 1 < argc) floors = argv[++i];
    else if (!strcmp(argv[i], "--sweep-bconv")) sweep = 1;
    else if (!strcmp(argv[i], "--bconv-plans") && i + 1 < argc) plans = argv[++i], sweep = 1;
    else if (!strcmp(argv[i], "--sweep-aut")) sweep_a = 1;
    else if (!strcmp(argv[i], "--aut-plans") && i + 1 < argc) aut_plans = argv[++i], sweep_a = 1;
    else if (!strcmp(argv[i], "--radix") && i + 1 < argc) radices = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else {
      fprintf(stderr,
              "usage: %s [--floors FILE] [--radix r62,r32] [--json FILE] [--quick]\n"
              "          [--sweep-bconv] [--bconv-plans \"V=1,U=2;V=2,S=2;...\"]\n"
              "          [--sweep-aut] [--aut-plans \"A=0;A=1,T=512;...\"]\n",
              argv[0]);
      return 2;
    }
  }
  ctx = fhjit_context_create();
  if (!fhjit_cuda_available(ctx)) {
    printf("SKIP: %s\n", fhjit_last_error(ctx));
    return 77;
  }
  cu.cuEventCreate = proc("cuEventCreate", NULL);
  cu.cuEventRecord = proc("cuEventRecord", NULL);
  cu.cuEventSynchronize = proc("cuEventSynchronize", NULL);
  cu.cuEventElapsedTime = proc("cuEventElapsedTime", NULL);
  cu.cuEventDestroy = proc("cuEventDestroy_v2", "cuEventDestroy");
  cu.cuCtxSynchronize = proc("cuCtxSynchronize", NULL);
  if (floors) read_floors(floors);
  printf("floors (CUDA baseline, same script): copy %.0f GB/s, products r32 %.0f G/s, r62 %.0f G/s, "
         "wide multiply-accumulates r32 %.0f G/s, r62 %.0f G/s\n",
         copy_gbps, rate_gps[0], rate_gps[1], mac_gps[0], mac_gps[1]);
  if (json && (bu_json = fopen(json, "w")))
    fprintf(bu_json, "{\"fhjit\": \"%s\", \"results\": [", fhjit_version());
  int log_n = quick ? 12 : 16;
  if (sweep || sweep_a) {
    if (sweep && strstr(radices, "r32")) sweep_bconv(FHJIT_R32, log_n, quick, plans);
    if (sweep && strstr(radices, "r62")) sweep_bconv(FHJIT_R62, log_n, quick, plans);
    if (sweep_a && strstr(radices, "r32")) sweep_aut(FHJIT_R32, log_n, quick, aut_plans);
    if (sweep_a && strstr(radices, "r62")) sweep_aut(FHJIT_R62, log_n, quick, aut_plans);
  } else {
    if (strstr(radices, "r62")) bench_set(FHJIT_R62, log_n, quick);
    if (strstr(radices, "r32")) bench_set(FHJIT_R32, log_n, quick);
  }
  if (bu_json) fprintf(bu_json, "\n]}\n"), fclose(bu_json);
  printf("%s\n", failures ? "FAILED: results differ from the interpreter" : "all results checked");
  fhjit_context_destroy(ctx);
  return failures ? 1 : 0;
}
