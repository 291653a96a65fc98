/* ckks_bench.c: the whole CKKS operations of issue 17 on the GPU through
 * the public builders (fhjit_keyswitch, fhjit_ckks_*): key switch,
 * relinearise, HMult + relinearise + rescale, rescale, rotation and 8
 * hoisted rotations of one ciphertext at the top level of SPEC 7's
 * benchmark sets (N = 2^16; r62 Q 35 + P 5, dnum 7; r32 Q 48 + P 12,
 * dnum 4).
 *
 * Each operation is one bound graph, checked word for word against
 * fhjit_interpret on its first launch and timed like s7_bench (median of
 * 15 batches of 10 launches). Beside it, in the same run: (a) the same
 * work as separate graphs, one per SPEC 7 op (each modup, the inner
 * product, each moddown, the tensor, the automorphisms, the additions,
 * each rescale), every value through memory; (b) its floors: the modular
 * products it must do (NTT butterflies, the conversions' reductions, the
 * inner product's and the tensor's products) over the product rate plus
 * the conversions' multiply-accumulates over their rate, and the bytes it
 * must move (keys and ciphertexts read once, results written once) over
 * the copy bandwidth, both rates from the CUDA baseline's --floors output
 * (bench/ckks-run.sh runs it first).
 *
 *   ckks_bench [--floors FILE] [--radix r62,r32] [--json FILE] [--quick]
 *              [--fused-only] [--ops I,J,...] [--plan]
 * --quick: N = 2^12 (a check of this program); --fused-only: not the
 * separate graphs (an A/B of plans in half the time); --ops: only the
 * operations of those indices (0 key switch ... 5 hoisted rotations);
 * --plan: print their kernel plans (fhjit_emit, sm_90; no GPU) instead. */
#include "s7_harness.h"

#define HOISTED 8

/* The digits of Q_L = [0, mq): sizes alpha, the last one shorter. */
static int ndigits(const set *s) { return (s->mq + s->alpha - 1) / s->alpha; }
static int digit_rows(const set *s, int j) {
  int left = s->mq - j * s->alpha;
  return left < s->alpha ? left : s->alpha;
}

static fhjit_value key_input(const set *s, fhjit_graph *g, const char *name) {
  fhjit_type t = {.kind = FHJIT_KIND_KEY, .comps = 2, .digits = ndigits(s), .rows = s->m,
                  .n = s->n, .domain = FHJIT_DOMAIN_NTT, .form = FHJIT_FORM_MONT};
  return fhjit_input(g, name, &t);
}

/* A ciphertext (comps components) on Q = [0, rows). */
static fhjit_value ct_input(const set *s, fhjit_graph *g, const char *name, int comps,
                            int rows) {
  fhjit_type t = {.kind = FHJIT_KIND_POLY, .comps = comps, .rows = rows, .n = s->n,
                  .domain = FHJIT_DOMAIN_NTT, .form = FHJIT_FORM_MONT};
  return fhjit_input(g, name, &t);
}

static int64_t galois(const set *s, int i) {
  /* rotation by i + 1 slots: 5^(i+1) mod 2N */
  int64_t k = 1;
  for (int r = 0; r <= i; r++) k = k * 5 % (2 * s->n);
  return k;
}

/* ------------------------------------------------------- fused graphs */

typedef enum op { KEYSWITCH, RELIN, HMULT, RESCALE, ROTATE, HOISTED_ROT, NUM_OPS } op;

static const char *const op_name[NUM_OPS] = {
    "key switch", "relinearise", "HMult+relin+rescale", "rescale", "rotate(1)",
    "8 hoisted rotations"};

static fhjit_graph *fused_graph(const set *s, op o) {
  fhjit_graph *g = new_graph(s, op_name[o]);
  fhjit_value fw = twiddles(s, g, "fwd"), iv = twiddles(s, g, "inv"), y = FHJIT_NO_VALUE;
  switch (o) {
  case KEYSWITCH:
    y = fhjit_keyswitch(g, ct_input(s, g, "d", 0, s->mq), key_input(s, g, "key"), fw, iv);
    break;
  case RELIN:
    y = fhjit_ckks_relinearize(g, ct_input(s, g, "ct3", 3, s->mq), key_input(s, g, "rlk"), fw,
                               iv);
    break;
  case HMULT: {
    fhjit_value a = ct_input(s, g, "a", 2, s->mq), b = ct_input(s, g, "b", 2, s->mq);
    y = fhjit_ckks_mul_relin_rescale(g, a, b, key_input(s, g, "rlk"), fw, iv);
    break;
  }
  case RESCALE: y = fhjit_ckks_rescale(g, ct_input(s, g, "ct", 2, s->mq), fw, iv); break;
  case ROTATE:
    y = fhjit_ckks_rotate(g, ct_input(s, g, "ct", 2, s->mq), galois(s, 0),
                          key_input(s, g, "gk"), fw, iv);
    break;
  case HOISTED_ROT: {
    fhjit_value ct = ct_input(s, g, "ct", 2, s->mq), keys[HOISTED], out[HOISTED];
    int64_t ks[HOISTED];
    for (int i = 0; i < HOISTED; i++) {
      char name[16];
      snprintf(name, sizeof name, "gk%d", i);
      ks[i] = galois(s, i), keys[i] = key_input(s, g, name);
    }
    if (fhjit_ckks_rotate_hoisted(g, ct, HOISTED, ks, keys, fw, iv, out)) die("hoisted");
    for (int i = 0; i + 1 < HOISTED; i++) {
      char name[16];
      snprintf(name, sizeof name, "r%d", i);
      if (fhjit_output(g, out[i], name)) die("output");
    }
    y = out[HOISTED - 1];
    break;
  }
  case NUM_OPS: break;
  }
  return done(g, y);
}

/* ---------------------------------------------- the same as separate graphs */

static double sep_time(const set *s, fhjit_graph *g, int quick, int *kernels) {
  return time_graph(s, g, 0, quick, kernels);
}

/* The inner product of the raised digits with a key: acc (2 components). */
static fhjit_graph *inner_product_graph(const set *s) {
  fhjit_graph *g = new_graph(s, "inner product");
  fhjit_value key = key_input(s, g, "key"), acc = FHJIT_NO_VALUE;
  for (int j = 0; j < ndigits(s); j++) {
    char name[16];
    snprintf(name, sizeof name, "u%d", j);
    fhjit_value u = poly(s, g, name, 0, s->m, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT);
    fhjit_value p = fhjit_keyswitch_digit_product(g, u, key, j, 0);
    acc = j ? fhjit_add_lazy(g, acc, p) : p;
  }
  return done(g, acc);
}


/* a + b on `comps` components of `rows` rows. */
static fhjit_graph *add_graph(const set *s, int comps, int rows) {
  fhjit_graph *g = new_graph(s, "add");
  return done(g, fhjit_add(g, ct_input(s, g, "a", comps, rows), ct_input(s, g, "b", comps, rows)));
}

static fhjit_graph *aut_one_graph(const set *s, int rows, int64_t k) {
  fhjit_graph *g = new_graph(s, "automorphism");
  return done(g, fhjit_automorphism(g, poly(s, g, "x", 0, rows, FHJIT_DOMAIN_NTT,
                                            FHJIT_FORM_MONT), k));
}

static fhjit_graph *tensor_graph(const set *s) {
  fhjit_graph *g = new_graph(s, "tensor");
  fhjit_value a = ct_input(s, g, "a", 2, s->mq), b = ct_input(s, g, "b", 2, s->mq);
  fhjit_value a0 = fhjit_extract(g, a, 0), a1 = fhjit_extract(g, a, 1);
  fhjit_value b0 = fhjit_extract(g, b, 0), b1 = fhjit_extract(g, b, 1);
  fhjit_value d[3] = {fhjit_mul(g, a0, b0),
                      fhjit_add_lazy(g, fhjit_mul(g, a0, b1), fhjit_mul(g, a1, b0)),
                      fhjit_mul(g, a1, b1)};
  return done(g, fhjit_pack(g, 3, d));
}

/* The inner product and the two moddowns after the modups. */
static double sep_tail(const set *s, int quick, int *kernels) {
  return sep_time(s, inner_product_graph(s), quick, kernels) +
         2 * sep_time(s, moddown_graph(s), quick, kernels);
}

static double sep_keyswitch(const set *s, int quick, int *kernels) {
  double us = 0;
  for (int j = 0; j < ndigits(s); j++) us += sep_time(s, modup_graph(s, j), quick, kernels);
  return us + sep_tail(s, quick, kernels);
}

static double sep_graphs(const set *s, op o, int quick, int *kernels) {
  switch (o) {
  case KEYSWITCH: return sep_keyswitch(s, quick, kernels);
  case RELIN: return sep_keyswitch(s, quick, kernels) + sep_time(s, add_graph(s, 2, s->mq), quick, kernels);
  case HMULT:
    return sep_time(s, tensor_graph(s), quick, kernels) + sep_keyswitch(s, quick, kernels) +
           sep_time(s, add_graph(s, 2, s->mq), quick, kernels) +
           2 * sep_time(s, rescale_graph(s), quick, kernels);
  case RESCALE: return 2 * sep_time(s, rescale_graph(s), quick, kernels);
  case ROTATE:
    return 2 * sep_time(s, aut_one_graph(s, s->mq, galois(s, 0)), quick, kernels) +
           sep_keyswitch(s, quick, kernels) + sep_time(s, add_graph(s, 1, s->mq), quick, kernels);
  case HOISTED_ROT: {
    double us = 0;
    for (int j = 0; j < ndigits(s); j++) us += sep_time(s, modup_graph(s, j), quick, kernels);
    /* every rotation: the digits' automorphisms, its inner product and
     * moddowns, c0's automorphism and the addition (the same kernels for
     * each Galois element but k, so one is timed and counted HOISTED times) */
    int k1 = 0;
    double one = ndigits(s) * sep_time(s, aut_one_graph(s, s->m, galois(s, 0)), quick, &k1) +
                 sep_tail(s, quick, &k1) +
                 sep_time(s, aut_one_graph(s, s->mq, galois(s, 0)), quick, &k1) +
                 sep_time(s, add_graph(s, 1, s->mq), quick, &k1);
    *kernels += HOISTED * k1;
    return us + HOISTED * one;
  }
  case NUM_OPS: break;
  }
  return 0;
}

/* ------------------------------------------------------------- floors */

/* Products and multiply-accumulates of a key switch's modups (digits
 * count of them), inner products (ips of them: one per rotation) and
 * moddowns (2 per inner product). */
static void keyswitch_work(const set *s, int ips, double *prods, double *macs) {
  double n = (double)s->n;
  for (int j = 0; j < ndigits(s); j++) {
    int a = digit_rows(s, j);
    *prods += ntt_products(s, a, 1) + bconv_products(s, a, s->m - a) + ntt_products(s, s->m - a, 0);
    *macs += bconv_macs(s, a, s->m - a);
  }
  for (int i = 0; i < ips; i++) {
    *prods += 2.0 * ndigits(s) * s->m * n; /* the digit products */
    *prods += 2 * (ntt_products(s, s->K, 1) + bconv_products(s, s->K, s->mq) +
                   ntt_products(s, s->mq, 0) + (double)s->mq * n);
    *macs += 2 * bconv_macs(s, s->K, s->mq);
  }
}

static double rescale_products(const set *s) {
  return ntt_products(s, 1, 1) + ntt_products(s, s->mq - 1, 1) + 2.0 * (s->mq - 1) * (double)s->n;
}

static void floors_of(const set *s, op o, row *r) {
  double poly = (double)s->n * (double)s->ws, n = (double)s->n;
  double key = 2.0 * ndigits(s) * s->m * poly, q = s->mq * poly;
  switch (o) {
  case KEYSWITCH: keyswitch_work(s, 1, &r->prods, &r->macs), r->bytes = key + 3 * q; break;
  case RELIN: keyswitch_work(s, 1, &r->prods, &r->macs), r->bytes = key + 5 * q; break;
  case HMULT:
    keyswitch_work(s, 1, &r->prods, &r->macs);
    r->prods += 4.0 * s->mq * n + 2 * rescale_products(s);
    r->bytes = key + 4 * q + 2.0 * (s->mq - 1) * poly;
    break;
  case RESCALE: r->prods = 2 * rescale_products(s), r->bytes = 2 * q + 2.0 * (s->mq - 1) * poly; break;
  case ROTATE: keyswitch_work(s, 1, &r->prods, &r->macs), r->bytes = key + 4 * q; break;
  case HOISTED_ROT:
    keyswitch_work(s, HOISTED, &r->prods, &r->macs);
    r->bytes = HOISTED * key + 2 * q + HOISTED * 2 * q;
    break;
  case NUM_OPS: break;
  }
}

static int fused_only;
static const char *ops_wanted; /* NULL: every operation */

static int op_wanted(int o) {
  if (!ops_wanted) return 1;
  for (const char *c = ops_wanted; *c; c++)
    if (*c - '0' == o && (c == ops_wanted || c[-1] == ',') && (c[1] == ',' || !c[1])) return 1;
  return 0;
}

/* --plan: each wanted operation's kernel plan (fhjit_emit, sm_90), no GPU. */
static void plan_set(fhjit_radix radix, int log_n) {
  set s;
  set_init(&s, radix, log_n);
  for (int o = 0; o < NUM_OPS; o++) {
    if (!op_wanted(o)) continue;
    fhjit_graph *g = fused_graph(&s, (op)o);
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    printf("== %s, %s\n%s\n", op_name[o], radix == FHJIT_R62 ? "r62" : "r32",
           text ? text : fhjit_last_error(ctx));
    fhjit_graph_destroy(g);
  }
  set_free(&s);
}

static void bench_set(fhjit_radix radix, int log_n, int quick) {
  set s;
  set_init(&s, radix, log_n);
  double rotate_us = 0;
  for (int o = 0; o < NUM_OPS; o++) {
    if (!op_wanted(o)) continue;
    row r = {.op = op_name[o]};
    floors_of(&s, (op)o, &r);
    r.us = time_graph(&s, fused_graph(&s, (op)o), 1, quick, &r.kernels);
    if (!fused_only) r.sep_us = sep_graphs(&s, (op)o, quick, &r.sep_kernels);
    report(&s, &r);
    if (o == ROTATE) rotate_us = r.us;
    if (o == HOISTED_ROT && rotate_us > 0)
      printf("     %d hoisted rotations / one rotation: %.2fx (target at most 4x)\n", HOISTED,
             r.us / rotate_us);
  }
  set_free(&s);
}

int main(int argc, char **argv) {
  const char *floors = NULL, *radices = "r62,r32", *json = NULL;
  int quick = 0, plan = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--floors") && i + 1 < argc) floors = argv[++i];
    else if (!strcmp(argv[i], "--radix") && i + 1 < argc) radices = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--plan")) plan = 1;
    else if (!strcmp(argv[i], "--fused-only")) fused_only = 1;
    else if (!strcmp(argv[i], "--ops") && i + 1 < argc) ops_wanted = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--floors FILE] [--radix r62,r32] [--json FILE] [--quick] "
              "[--fused-only] [--ops I,J,...] [--plan]\n",
              argv[0]);
      return 2;
    }
  }
  report_kind = "ckks";
  int log_n = quick ? 12 : 16;
  if (plan) {
    ctx = fhjit_context_create();
    if (strstr(radices, "r62")) plan_set(FHJIT_R62, log_n);
    if (strstr(radices, "r32")) plan_set(FHJIT_R32, log_n);
    fhjit_context_destroy(ctx);
    return 0;
  }
  if (!harness_start()) return 77;
  if (floors) read_floors(floors);
  printf("floors (CUDA baseline, same script): copy %.0f GB/s, products r32 %.0f G/s, r62 %.0f "
         "G/s, wide multiply-accumulates r32 %.0f G/s, r62 %.0f G/s\n",
         copy_gbps, rate_gps[0], rate_gps[1], mac_gps[0], mac_gps[1]);
  if (json && (bu_json = fopen(json, "w")))
    fprintf(bu_json, "{\"fhjit\": \"%s\", \"results\": [", fhjit_version());
  if (strstr(radices, "r62")) bench_set(FHJIT_R62, log_n, quick);
  if (strstr(radices, "r32")) bench_set(FHJIT_R32, log_n, quick);
  if (bu_json) fprintf(bu_json, "\n]}\n"), fclose(bu_json);
  printf("%s\n", failures ? "FAILED: results differ from the interpreter" : "all results checked");
  fhjit_context_destroy(ctx);
  return failures ? 1 : 0;
}
