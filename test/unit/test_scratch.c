/* test_scratch.c: the scratch reuse pass (lib/lower/scratch.c). The packer
 * on synthetic live ranges (disjoint, nested, touching at one step, all
 * meeting: the sum, random ones checked against the rule and the peak),
 * the live ranges of synthetic step lists (in place, a step reading one
 * buffer and writing another), a graph whose scratch is reused run on the
 * host path word for word against the interpreter, the same graph with
 * every buffer forced to one offset (lw_scratch_debug_share_all) giving
 * wrong words (so the comparison can catch an overlap), and the plans of
 * the CKKS operations at SPEC 7's benchmark shapes (N = 2^16; r62 Q 35 +
 * P 5, dnum 7; r32 Q 48 + P 12, dnum 4): every printed placement obeys the
 * rule, and the key switch's and the hoisted rotations' arenas are the
 * figures of docs/ckks.md. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/steps.h"
#include "randgraph.h"
#include "testutil.h"

static int64_t up(int64_t x) { return (x + LW_SCRATCH_ALIGN - 1) / LW_SCRATCH_ALIGN * LW_SCRATCH_ALIGN; }

/* Asserts the placement rule: aligned, inside the arena, and buffers whose
 * ranges meet apart in memory; returns the peak of live bytes (aligned). */
static int64_t check_placement(int n, const int64_t *bytes, const int32_t *first,
                               const int32_t *last, const int64_t *off, int64_t arena) {
  int64_t end = 0, peak = 0;
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(off[i] % LW_SCRATCH_ALIGN, 0);
    ck_assert_int_ge(off[i], 0);
    ck_assert_int_le(off[i] + bytes[i], arena);
    if (off[i] + up(bytes[i]) > end) end = off[i] + up(bytes[i]);
    for (int j = 0; j < i; j++) {
      if (first[i] > last[j] || first[j] > last[i]) continue;
      ck_assert_msg(off[i] + bytes[i] <= off[j] || off[j] + bytes[j] <= off[i],
                    "buffers %d [%d, %d] at %lld and %d [%d, %d] at %lld overlap", i, first[i],
                    last[i], (long long)off[i], j, first[j], last[j], (long long)off[j]);
    }
  }
  ck_assert_int_eq(end, arena);
  for (int i = 0; i < n; i++) { /* the peak is at some buffer's first step */
    int64_t live = 0;
    for (int j = 0; j < n; j++)
      if (first[j] <= first[i] && first[i] <= last[j]) live += up(bytes[j]);
    if (live > peak) peak = live;
  }
  return peak;
}

static int64_t pack(int n, const int64_t *bytes, const int32_t *first, const int32_t *last,
                    int64_t *off) {
  int64_t arena = lw_scratch_pack(n, bytes, first, last, LW_SCRATCH_ALIGN, off);
  int64_t peak = check_placement(n, bytes, first, last, off, arena);
  ck_assert_int_ge(arena, peak);
  return arena;
}

START_TEST(pack_disjoint) {
  int64_t bytes[3] = {1000, 3000, 2000}, off[3];
  int32_t first[3] = {0, 1, 2}, last[3] = {0, 1, 2};
  ck_assert_int_eq(pack(3, bytes, first, last, off), 3072);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(off[i], 0);
}
END_TEST

START_TEST(pack_nested) {
  /* A over everything; B then C inside it: B and C share, beside A */
  int64_t bytes[3] = {1024, 512, 768}, off[3];
  int32_t first[3] = {0, 1, 3}, last[3] = {5, 2, 4};
  ck_assert_int_eq(pack(3, bytes, first, last, off), 1024 + 768);
  ck_assert_int_eq(off[0], 0);
  ck_assert_int_eq(off[1], 1024);
  ck_assert_int_eq(off[2], 1024);
}
END_TEST

START_TEST(pack_touching) {
  /* the last read of A and the first write of B in one step: apart */
  int64_t bytes[2] = {4096, 4096}, off[2];
  int32_t first[2] = {0, 2}, last[2] = {2, 4};
  ck_assert_int_eq(pack(2, bytes, first, last, off), 8192);
  /* one step later: shared */
  first[1] = 3;
  ck_assert_int_eq(pack(2, bytes, first, last, off), 4096);
}
END_TEST

START_TEST(pack_all_meet) {
  uint64_t rng = 7;
  int64_t bytes[LW_MAX_KERNELS], off[LW_MAX_KERNELS];
  int32_t first[LW_MAX_KERNELS], last[LW_MAX_KERNELS];
  for (int n = 0; n <= LW_MAX_KERNELS; n += 1 + n / 4) {
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
      bytes[i] = 1 + (int64_t)tu_below(&rng, 100000);
      first[i] = (int32_t)tu_below(&rng, 5); /* every range holds step 5 */
      last[i] = 5 + (int32_t)tu_below(&rng, 5);
      sum += up(bytes[i]);
    }
    ck_assert_int_eq(pack(n, bytes, first, last, off), sum);
  }
}
END_TEST

START_TEST(pack_random) {
  uint64_t rng = 11;
  int64_t bytes[LW_MAX_KERNELS], off[LW_MAX_KERNELS];
  int32_t first[LW_MAX_KERNELS], last[LW_MAX_KERNELS];
  for (int round = 0; round < 300; round++) {
    int n = 1 + (int)tu_below(&rng, LW_MAX_KERNELS);
    int steps = 1 + (int)tu_below(&rng, 2 * n);
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
      /* sizes of a few kinds (as the plans have), or any */
      bytes[i] = round % 2 ? (int64_t)(1 + tu_below(&rng, 8)) << 15
                           : 1 + (int64_t)tu_below(&rng, 1 << 20);
      first[i] = (int32_t)tu_below(&rng, (uint64_t)steps);
      last[i] = first[i] + (int32_t)tu_below(&rng, (uint64_t)(steps - first[i]));
      sum += up(bytes[i]);
    }
    ck_assert_int_le(pack(n, bytes, first, last, off), sum);
  }
}
END_TEST

/* Live ranges of synthetic step lists: bconv-like steps (src, tw -> dst). */
static an_plan *synthetic(int nsteps, const int (*refs)[2], int nscratch) {
  an_plan *p = calloc(1, sizeof *p);
  ck_assert_ptr_nonnull(p);
  p->nsteps = nsteps;
  p->nscratch = nscratch;
  for (int i = 0; i < nscratch; i++) p->scratch_bytes[i] = 1000 * (i + 1);
  for (int s = 0; s < nsteps; s++) {
    an_step *st = &p->steps[s];
    st->is_bconv = 1;
    st->tw = (an_buf){LW_ARG_INPUT, 0};
    st->src = refs[s][0] < 0 ? (an_buf){LW_ARG_INPUT, 1} : (an_buf){LW_ARG_SCRATCH, refs[s][0]};
    st->dst = refs[s][1] < 0 ? (an_buf){LW_ARG_RESULT, 0} : (an_buf){LW_ARG_SCRATCH, refs[s][1]};
  }
  lw_scratch_assign(p);
  return p;
}

START_TEST(ranges_of_steps) {
  /* 0: in -> s0; 1: s0 -> s1; 2: s1 -> s1 (in place); 3: s1 -> s2; 4: s2 -> out;
   * 5: in -> s3; 6: s3 -> out */
  static const int refs[7][2] = {{-1, 0}, {0, 1}, {1, 1}, {1, 2}, {2, -1}, {-1, 3}, {3, -1}};
  an_plan *p = synthetic(7, refs, 4);
  static const int32_t first[4] = {0, 1, 3, 5}, last[4] = {1, 3, 4, 6};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(p->scratch_first[i], first[i]);
    ck_assert_int_eq(p->scratch_last[i], last[i]);
  }
  check_placement(4, p->scratch_bytes, p->scratch_first, p->scratch_last, p->scratch_offset,
                  p->scratch_arena);
  /* largest first: s3 (4000, steps 5..6) meets none: at 0; s2 (3000, 3..4)
   * meets only s1: at 0 too; s1 (2000, 1..3) beside s2; s0 (1000, 0..1)
   * beside s1, at 0: the arena is the peak, s1 + s2 at step 3 */
  ck_assert_int_eq(p->scratch_offset[3], 0);
  ck_assert_int_eq(p->scratch_arena, up(3000) + up(2000));
  ck_assert_int_eq(p->scratch_offset[2], 0);
  ck_assert_int_eq(p->scratch_offset[1], up(3000));
  ck_assert_int_eq(p->scratch_offset[0], 0);
  free(p);
}
END_TEST

/* ------------------------------------------------------- host path */

#define HN 64
#define HROWS 2

/* y = intt(ntt(x) ntt(z)), then y2 = intt(ntt(y) ntt(x)): four transforms
 * into scratch, the second pair after the first is dead. */
static fhjit_graph *two_products(fhjit_context *c, const uint64_t *q) {
  fhjit_graph *g = fhjit_graph_create(c, "two_products", FHJIT_R62);
  ck_assert_int_eq(fhjit_graph_set_moduli(g, q, HROWS), FHJIT_OK);
  fhjit_type pt = tu_poly(0, 0, NULL, HROWS, HN);
  fhjit_type tt = {.kind = FHJIT_KIND_TWIDDLE, .rows = HROWS, .n = HN};
  fhjit_value x = fhjit_input(g, "x", &pt), z = fhjit_input(g, "z", &pt);
  fhjit_value fw = fhjit_input(g, "fw", &tt), iv = fhjit_input(g, "iv", &tt);
  fhjit_value a = fhjit_ntt(g, x, fw, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value b = fhjit_ntt(g, z, fw, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value y = fhjit_ntt(g, fhjit_mul(g, a, b), iv, FHJIT_NTT_TO_COEF_STD);
  fhjit_value c2 = fhjit_ntt(g, y, fw, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value d2 = fhjit_ntt(g, x, fw, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value y2 = fhjit_ntt(g, fhjit_mul(g, c2, d2), iv, FHJIT_NTT_TO_COEF_STD);
  ck_assert_int_eq(fhjit_output(g, y, "y"), FHJIT_OK);
  ck_assert_int_eq(fhjit_output(g, y2, "y2"), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  return g;
}

/* Runs g on the host and through the interpreter; 1 when every word agrees. */
static int host_matches(fhjit_context *c, const uint64_t *q) {
  fhjit_graph *g = two_products(c, q);
  uint64_t params[8 * HROWS], fw[HROWS * HN], iv[HROWS * HN], x[HROWS * HN], z[HROWS * HN];
  uint64_t want[2][HROWS * HN], got[2][HROWS * HN];
  ck_assert_int_eq(fhjit_param_table(c, FHJIT_R62, q, HROWS, HN, 1, 1, params, HROWS), FHJIT_OK);
  ck_assert_int_eq(fhjit_twiddle_tables(c, FHJIT_R62, q, HROWS, HN, fw, iv), FHJIT_OK);
  uint64_t rng = 5;
  for (int r = 0; r < HROWS; r++)
    for (int i = 0; i < HN; i++) {
      x[r * HN + i] = i < 3 ? (uint64_t[]){0, 1, q[r] - 1}[i] : tu_below(&rng, q[r]);
      z[r * HN + i] = tu_below(&rng, q[r]);
    }
  const void *in[4] = {x, z, fw, iv};
  void *w[2] = {want[0], want[1]}, *o[2] = {got[0], got[1]};
  ck_assert_int_eq(fhjit_interpret(g, params, HROWS, in, w), FHJIT_OK);
  ck_assert_int_eq(fhjit_run_host(g, params, HROWS, in, o, 1), FHJIT_OK);
  fhjit_graph_destroy(g);
  return !memcmp(want, got, sizeof want);
}

START_TEST(host_reuse) {
  fhjit_context *c = fhjit_context_create();
  uint64_t q[HROWS];
  ck_assert_int_eq(fhjit_find_primes(c, 60, 2 * HN, HROWS, q), FHJIT_OK);
  fhjit_graph *g = two_products(c, q);
  const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_ptr_nonnull(plan);
  /* four transforms of 2 x 64 words into scratch, two at a time */
  ck_assert_msg(tu_contains(plan, "4 scratch buffers (4096 bytes) in an arena of 2048 bytes"),
                "%s", plan);
  fhjit_graph_destroy(g);
  ck_assert(host_matches(c, q));
  lw_scratch_debug_share_all = 1;
  int same = host_matches(c, q);
  lw_scratch_debug_share_all = 0;
  ck_assert_msg(!same, "buffers in use together shared memory and the results still agreed");
  fhjit_context_destroy(c);
}
END_TEST

/* Random graphs with NTT anchors (randgraph: epilogues, several NTTs,
 * computed operands) on the host path against the interpreter, with the
 * Debug build's poisoning; enough of them have buffers that share memory. */
START_TEST(random_ntt_graphs) {
  fhjit_context *ctx = fhjit_context_create();
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.ntt_percent = 100;
  cfg.min_ops = 12;
  cfg.max_ops = 40;
  char err[1 << 15];
  int graphs = 0, reused = 0;
  for (uint64_t seed = 1; graphs < 40 && seed < 400; seed++) {
    fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
    ck_assert_msg(g, "seed %llu: %s", (unsigned long long)seed, err);
    const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    long long nbuf = 0, sum = 0, arena = 0;
    const char *h = plan ? strstr(plan, " scratch buffers (") : NULL;
    if (h) {
      while (h > plan && h[-1] != ' ') h--;
      ck_assert_int_eq(sscanf(h, "%lld scratch buffers (%lld bytes) in an arena of %lld bytes",
                              &nbuf, &sum, &arena),
                       3);
    }
    if (nbuf < 2) { /* nothing to share */
      fhjit_graph_destroy(g);
      continue;
    }
    graphs++;
    reused += arena < sum;
    /* sampled (FHJIT_TEST_SAMPLE, testutil.h: the ASan stage): every plan
     * made and counted, but only every third graph that shares memory run
     * (the host runs: 71 of the test's 81 s under ASan) */
    if (tu_sampling() && (arena >= sum || reused % 3 != 1)) {
      fhjit_graph_destroy(g);
      continue;
    }
    rg_case c;
    ck_assert_msg(!rg_case_init(&c, g, NULL, seed, 10, err, sizeof err), "%s", err);
    void **host = rg_alloc_results(&c, 0x5a5a5a5a);
    void **itp = rg_alloc_results(&c, 0xa5a5a5a5);
    ck_assert_int_eq(fhjit_interpret(g, c.params, c.pstride, (const void *const *)c.inputs, itp),
                     FHJIT_OK);
    ck_assert_msg(fhjit_run_host(g, c.params, c.pstride, (const void *const *)c.inputs, host,
                                 (int)(seed % 3)) == FHJIT_OK,
                  "seed %llu: %s", (unsigned long long)seed, fhjit_last_error(ctx));
    ck_assert_msg(!rg_compare(&c, host, "host", itp, "interpreter", err, sizeof err),
                  "seed %llu: %s", (unsigned long long)seed, err);
    rg_free_results(&c, host);
    rg_free_results(&c, itp);
    rg_case_free(&c);
    fhjit_graph_destroy(g);
  }
  printf("random NTT graphs: %d with 2 or more scratch buffers, %d of them sharing memory\n",
         graphs, reused);
  ck_assert_int_eq(graphs, 40);
  ck_assert_int_ge(reused, 10);
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------- CKKS plans at the benchmark shapes */

typedef struct bshape {
  fhjit_radix radix;
  int mq, k, alpha;
  uint64_t q[64];
} bshape;

#define LOGN 16

static void bshape_init(fhjit_context *c, bshape *s, fhjit_radix radix) {
  s->radix = radix;
  s->mq = radix == FHJIT_R62 ? 35 : 48;
  s->k = radix == FHJIT_R62 ? 5 : 12;
  s->alpha = radix == FHJIT_R62 ? 5 : 12;
  /* the primes only have to fit the radix: the plans depend on the shape */
  ck_assert_int_eq(fhjit_find_primes(c, radix == FHJIT_R62 ? 60 : 30, UINT64_C(2) << LOGN,
                                     s->mq + s->k, s->q),
                   FHJIT_OK);
}

static fhjit_value bpoly(const bshape *s, fhjit_graph *g, const char *name, int comps,
                         fhjit_kind kind) {
  fhjit_type t = {.kind = kind, .comps = comps, .rows = s->mq, .n = INT64_C(1) << LOGN,
                  .domain = FHJIT_DOMAIN_NTT, .form = FHJIT_FORM_MONT};
  if (kind == FHJIT_KIND_KEY) {
    t.comps = 2;
    t.digits = (s->mq + s->alpha - 1) / s->alpha;
    t.rows = s->mq + s->k;
  }
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  return v;
}

typedef enum bop { B_KEYSWITCH, B_RELIN, B_HMULT, B_RESCALE, B_ROTATE, B_HOIST4, B_HOIST8, B_NOPS } bop;
static const char *const bop_name[B_NOPS] = {"keyswitch", "relinearize", "hmult_relin_rescale",
                                             "rescale", "rotate", "rotate_hoisted x4",
                                             "rotate_hoisted x8"};

/* The plan's scratch: the sum of its buffers and the arena, each placement
 * checked against the printed live ranges. */
static void plan_scratch(const bshape *s, bop o, int64_t *sum, int64_t *arena) {
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(c, "op", s->radix);
  ck_assert_int_eq(fhjit_graph_set_moduli(g, s->q, s->mq + s->k), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_set_special(g, s->k), FHJIT_OK);
  ck_assert_int_eq(fhjit_graph_set_digits(g, s->alpha), FHJIT_OK);
  fhjit_type tt = {.kind = FHJIT_KIND_TWIDDLE, .rows = s->mq + s->k, .n = INT64_C(1) << LOGN};
  fhjit_value fw = fhjit_input(g, "fw", &tt), iv = fhjit_input(g, "iv", &tt), y = FHJIT_NO_VALUE;
  switch (o) {
  case B_KEYSWITCH:
    y = fhjit_keyswitch(g, bpoly(s, g, "d", 0, FHJIT_KIND_POLY), bpoly(s, g, "k", 0, FHJIT_KIND_KEY),
                        fw, iv);
    break;
  case B_RELIN:
    y = fhjit_ckks_relinearize(g, bpoly(s, g, "ct3", 3, FHJIT_KIND_POLY),
                               bpoly(s, g, "rlk", 0, FHJIT_KIND_KEY), fw, iv);
    break;
  case B_HMULT:
    y = fhjit_ckks_mul_relin_rescale(g, bpoly(s, g, "a", 2, FHJIT_KIND_POLY),
                                     bpoly(s, g, "b", 2, FHJIT_KIND_POLY),
                                     bpoly(s, g, "rlk", 0, FHJIT_KIND_KEY), fw, iv);
    break;
  case B_RESCALE: y = fhjit_ckks_rescale(g, bpoly(s, g, "ct", 2, FHJIT_KIND_POLY), fw, iv); break;
  case B_ROTATE:
    y = fhjit_ckks_rotate(g, bpoly(s, g, "ct", 2, FHJIT_KIND_POLY), 5,
                          bpoly(s, g, "gk", 0, FHJIT_KIND_KEY), fw, iv);
    break;
  case B_HOIST4:
  case B_HOIST8: {
    int n = o == B_HOIST4 ? 4 : 8;
    fhjit_value ct = bpoly(s, g, "ct", 2, FHJIT_KIND_POLY), keys[8], out[8];
    int64_t ks[8], k = 1;
    for (int i = 0; i < n; i++) {
      char name[16];
      snprintf(name, sizeof name, "gk%d", i);
      k = k * 5 % (INT64_C(2) << LOGN);
      ks[i] = k, keys[i] = bpoly(s, g, name, 0, FHJIT_KIND_KEY);
    }
    ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, ct, n, ks, keys, fw, iv, out), FHJIT_OK);
    for (int i = 0; i + 1 < n; i++) ck_assert_int_eq(fhjit_output(g, out[i], NULL), FHJIT_OK);
    y = out[n - 1];
    break;
  }
  case B_NOPS: break;
  }
  ck_assert_int_ge(y, 0);
  ck_assert_int_eq(fhjit_output(g, y, "y"), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  const char *plan = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_msg(plan, "%s", fhjit_last_error(c));
  int nbuf = 0;
  long long total = 0, ar = 0;
  const char *h = strstr(plan, " scratch buffers (");
  ck_assert_ptr_nonnull(h);
  while (h > plan && h[-1] != ' ') h--;
  ck_assert_int_eq(sscanf(h, "%d scratch buffers (%lld bytes) in an arena of %lld bytes", &nbuf,
                          &total, &ar),
                   3);
  int64_t bytes[LW_MAX_KERNELS], off[LW_MAX_KERNELS], check = 0;
  int32_t first[LW_MAX_KERNELS], last[LW_MAX_KERNELS];
  for (int i = 0; i < nbuf; i++) {
    char key[32];
    snprintf(key, sizeof key, "\nscratch %d: ", i);
    const char *l = strstr(plan, key);
    ck_assert_ptr_nonnull(l);
    long long b, at;
    int f, t;
    ck_assert_int_eq(sscanf(l + strlen(key), "%lld bytes at %lld, steps %d..%d", &b, &at, &f, &t), 4);
    bytes[i] = b, off[i] = at, first[i] = f, last[i] = t, check += b;
  }
  ck_assert_int_eq(check, total);
  int64_t peak = check_placement(nbuf, bytes, first, last, off, ar);
  printf("%s %s: %d scratch buffers, %lld bytes -> arena %lld bytes (peak live %lld)\n",
         s->radix == FHJIT_R62 ? "r62" : "r32", bop_name[o], nbuf, total, ar, (long long)peak);
  *sum = total, *arena = ar;
  fhjit_context_destroy(c);
}

START_TEST(ckks_benchmark_shapes) {
  /* bytes of scratch without reuse (the sum) and the arena, per radix, of
   * the key switch and the hoisted rotations (docs/ckks.md); 0: checked
   * against the rule only. A change of the plans changes them: update
   * both. */
  static const int64_t want[2][B_NOPS][2] = {
      /* r62: the key switch's batched forward NTT (245 rows) reads the
       * conversions' buffer and writes its own, both live at that step:
       * the peak (170.4 MB with a forward NTT per digit; 267386880 and
       * 170393600 with ipfuse=1, which transforms in place and computes
       * the inner product in its last kernel, not r62 dnum 7's default);
       * the hoisted rotations' likewise, their inner products (dnum 7:
       * materialised) in one buffer by one kernel (mixsteps.c, md_group;
       * ntt_plan mdip), live until the last rotation's moddown, and
       * their conversions' buffer (mdbconv) until its forward NTT
       * (296222720 / 463994880 with mdbconv=0; 256901120 for x4 and x8
       * with mdip=0) */
      {[B_KEYSWITCH] = {395837440, 256901120},
       [B_HOIST4] = {757596160, 351272960},
       [B_HOIST8] = {1239941120, 671088640}},
      /* r32 key switch: 169869312 and 100663296 without ipfuse; the
       * hoisted rotations' inner products (4 digits: the byte rule's
       * tie) 2 x 60 rows each, all in one buffer by one kernel
       * (md_group, mdip), live until the last rotation's moddown, their
       * P rows' inverse NTT in one buffer (mdintt), converted to Q by
       * one kernel into one buffer (mdbconv), live until the last
       * rotation's forward NTT (201326592 / 352321536 with mdbconv=0,
       * 176160768 / 301989888 with mdintt=0); arena
       * 150994944 for x4 and x8 with mdip=0; 339738624 / 566231040 and
       * arena 100663296 when they were fused) */
      {[B_KEYSWITCH] = {150994944, 81788928},
       [B_HOIST4] = {465567744, 251658240},
       [B_HOIST8] = {817889280, 503316480}}};
  fhjit_context *c = fhjit_context_create();
  for (int r = 0; r < 2; r++) {
    bshape s;
    bshape_init(c, &s, r ? FHJIT_R32 : FHJIT_R62);
    for (int o = 0; o < B_NOPS; o++) {
      int64_t sum, arena;
      plan_scratch(&s, (bop)o, &sum, &arena);
      /* rescale's two buffers (the inverse NTT's row, the forward NTT's
       * rows, which its loads lift from that row: liftfuse) are both live
       * at the forward NTT's step: nothing to share */
      if (o == B_RESCALE) ck_assert_int_eq(arena, sum);
      else ck_assert_int_lt(arena, sum);
      if (want[r][o][0]) {
        ck_assert_int_eq(sum, want[r][o][0]);
        ck_assert_int_eq(arena, want[r][o][1]);
      }
    }
  }
  fhjit_context_destroy(c);
}
END_TEST

int main(void) {
  Suite *s = suite_create("scratch");
  TCase *t = tcase_create("core");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, pack_disjoint);
  tcase_add_test(t, pack_nested);
  tcase_add_test(t, pack_touching);
  tcase_add_test(t, pack_all_meet);
  tcase_add_test(t, pack_random);
  tcase_add_test(t, ranges_of_steps);
  tcase_add_test(t, host_reuse);
  tcase_add_test(t, random_ntt_graphs);
  tcase_add_test(t, ckks_benchmark_shapes);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
