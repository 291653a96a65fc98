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
 * --quick: N = 2^12 (a check of this program). Against the fake driver
 * (FHJIT_LIBCUDA) nothing is timed. */
#include <stdio.h>
#include "s7_harness.h"

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

int main(int argc, char **argv) {
  const char *floors = NULL, *radices = "r62,r32", *json = NULL;
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--floors") && i + 1 < argc) floors = argv[++i];
    else if (!strcmp(argv[i], "--radix") && i + 1 < argc) radices = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else {
      fprintf(stderr, "usage: %s [--floors FILE] [--radix r62,r32] [--json FILE] [--quick]\n",
              argv[0]);
      return 2;
    }
  }
  if (!harness_start()) return 77;
  if (floors) read_floors(floors);
  printf("floors (CUDA baseline, same script): copy %.0f GB/s, products r32 %.0f G/s, r62 %.0f G/s, "
         "wide multiply-accumulates r32 %.0f G/s, r62 %.0f G/s\n",
         copy_gbps, rate_gps[0], rate_gps[1], mac_gps[0], mac_gps[1]);
  if (json && (bu_json = fopen(json, "w")))
    fprintf(bu_json, "{\"fhjit\": \"%s\", \"results\": [", fhjit_version());
  int log_n = quick ? 12 : 16;
  if (strstr(radices, "r62")) bench_set(FHJIT_R62, log_n, quick);
  if (strstr(radices, "r32")) bench_set(FHJIT_R32, log_n, quick);
  if (bu_json) fprintf(bu_json, "\n]}\n"), fclose(bu_json);
  printf("%s\n", failures ? "FAILED: results differ from the interpreter" : "all results checked");
  fhjit_context_destroy(ctx);
  return failures ? 1 : 0;
}
