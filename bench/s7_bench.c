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
 * through memory), timed the same way. The automorphism is timed alone,
 * fused into a product (mul(automorphism(x), z) against mul(x, z)) and
 * fused into the NTT that reads it (coefficient domain: the forward NTT's
 * loads; NTT domain: the inverse NTT's), against the NTT alone.
 *
 *   s7_bench [--floors FILE] [--radix r62,r32] [--json FILE] [--quick]
 *            [--sweep-bconv] [--bconv-plans "P1;P2;..."] [--aut-only] [--aut-k K]
 * --quick: N = 2^12 (a check of this program). --aut-only: only the
 * automorphism's lines (alone, in a product, in an NTT, autcol). --aut-k:
 * the Galois element of those lines (odd, 1 <= K < 2N; default 125 = 5^3,
 * the figures of bench/RESULTS.md, with the products also at 3125 = 5^5,
 * a typical rotation step); how far apart the outputs of one source
 * sector land depends on it (docs/section7.md). Against the fake driver
 * (FHJIT_LIBCUDA) nothing is timed. --sweep-bconv: instead of the ops,
 * the bconv alone under each bconv_plan (docs/section7.md "Tuning"; the
 * default list is V, S, U in {1, 2, 4} at T 128, 256, 512), each checked
 * against the interpreter, then modup with the fastest plan;
 * --bconv-plans: that sweep over the given plans. --sweep-aut: the
 * coefficient-domain automorphism alone, in a product, and the product
 * alone under pw_plan values (A=1 stages its sources in shared memory);
 * --aut-plans: over the given ones. */
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

/* --aut-k: the automorphisms' Galois element (0: 125, reduced mod 2N) */
static int64_t aut_k;

static int64_t galois(const set *s) { return (aut_k ? aut_k : 125) % (2 * s->n); }

/* The Galois element the product's lines also run at when --aut-k is not
 * given: 3125 = 5^5, as far from k = 125's kind case as 97% of the rotation
 * steps 5^r mod 2N are (a block's gathers spread over 8x (r32) or 4x (r62)
 * the sectors of its words; bench/RESULTS.md "The Galois element"). */
#define TYPICAL_K 3125

/* mode 0: automorphism(x, k) alone; 1: mul(automorphism(x, k), z); 2:
 * mul(x, z). */
static fhjit_graph *aut_graph_k(const set *s, fhjit_domain d, int mode, int64_t k) {
  fhjit_graph *g = new_graph(s, "aut");
  fhjit_value x = poly(s, g, "x", 0, s->mq, d, FHJIT_FORM_MONT);
  fhjit_value a = mode == 2 ? x : fhjit_automorphism(g, x, k);
  if (mode == 0) return done(g, a);
  return done(g, fhjit_mul(g, a, poly(s, g, "z", 0, s->mq, d, FHJIT_FORM_MONT)));
}

static fhjit_graph *aut_graph(const set *s, fhjit_domain d, int mode) {
  return aut_graph_k(s, d, mode, galois(s));
}


/* The NTT that reads an automorphism: a forward NTT of automorphism(x) in
 * the coefficient domain, an inverse one in the NTT domain (aut = 0: of x
 * itself), over Q's rows. */
static fhjit_graph *aut_ntt_graph(const set *s, fhjit_domain d, int aut) {
  fhjit_graph *g = new_graph(s, "autntt");
  int fwd = d == FHJIT_DOMAIN_COEF;
  fhjit_value x = poly(s, g, "x", 0, s->mq, d, FHJIT_FORM_MONT);
  fhjit_value a = aut ? fhjit_automorphism(g, x, galois(s)) : x;
  fhjit_type tt = {.kind = FHJIT_KIND_TWIDDLE, .rows = s->mq, .n = s->n};
  fhjit_value tw = fhjit_input(g, fwd ? "fwd" : "inv", &tt);
  return done(g, fhjit_ntt(g, a, tw, fwd ? FHJIT_NTT_COEF_MONT_TO_NTT : FHJIT_NTT_TO_COEF_MONT));
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

/* The limb-mixing operations (bconv, modup, moddown, rescale) on set s. */
static void bench_mixing(const set *s, int quick) {
  double ws = (double)s->ws, poly = (double)s->n * ws; /* bytes of one row */
  int a = s->alpha, mq = s->mq, K = s->K, m = s->m;
  int32_t digit[64], rest[64], P[64], Q[64];
  for (int r = 0; r < a; r++) digit[r] = r;
  for (int r = a; r < m; r++) rest[r - a] = r;
  for (int k = 0; k < K; k++) P[k] = mq + k;
  for (int r = 0; r < mq; r++) Q[r] = r;

  /* bconv alone: digit 0 -> the other rows of Q ++ P */
  row r = {.op = "bconv"};
  r.us = time_graph(s, bconv_graph(s, digit, a, rest, m - a), 1, quick, &r.kernels);
  r.bytes = (double)(a + m - a) * poly;
  r.prods = bconv_products(s, a, m - a);
  r.macs = bconv_macs(s, a, m - a);
  report(s, &r);

  /* modup of digit 0: INTT(alpha), bconv, NTT(m - alpha), gather */
  row u = {.op = "modup(digit 0)"};
  u.us = time_graph(s, modup_graph(s, 0), 1, quick, &u.kernels);
  double intt = time_graph(s, ntt_graph(s, 0, a, FHJIT_NTT_TO_COEF_MONT), 0, quick, &u.sep_kernels);
  double ntt = time_graph(s, ntt_graph(s, a, m - a, FHJIT_NTT_COEF_MONT_TO_NTT), 0, quick, &u.sep_kernels);
  double bc = time_graph(s, bconv_graph(s, digit, a, rest, m - a), 0, quick, &u.sep_kernels);
  double ga = time_graph(s, gather_graph(s), 0, quick, &u.sep_kernels);
  u.sep_us = intt + bc + ntt + ga;
  u.bytes = (double)(a + m) * poly;
  u.prods = ntt_products(s, a, 1) + bconv_products(s, a, m - a) + ntt_products(s, m - a, 0);
  u.macs = bconv_macs(s, a, m - a);
  report(s, &u);
  printf("     modup: its NTTs alone %.1f us + conversion floor %.1f us = %.1f us; modup / that = "
         "%.2fx (target 1.2x)\n",
         intt + ntt, r.mem_us > r.prod_us ? r.mem_us : r.prod_us,
         intt + ntt + (r.mem_us > r.prod_us ? r.mem_us : r.prod_us),
         u.us / (intt + ntt + (r.mem_us > r.prod_us ? r.mem_us : r.prod_us)));

  /* moddown: INTT(P), bconv P -> Q, NTT(Q), (a - u) P*^-1 */
  row d = {.op = "moddown"};
  d.us = time_graph(s, moddown_graph(s), 1, quick, &d.kernels);
  d.sep_us = time_graph(s, ntt_graph(s, mq, K, FHJIT_NTT_TO_COEF_MONT), 0, quick, &d.sep_kernels) +
             time_graph(s, bconv_graph(s, P, K, Q, mq), 0, quick, &d.sep_kernels) +
             time_graph(s, ntt_graph(s, 0, mq, FHJIT_NTT_COEF_MONT_TO_NTT), 0, quick, &d.sep_kernels) +
             time_graph(s, scale_graph(s, mq), 0, quick, &d.sep_kernels);
  d.bytes = (double)(m + mq) * poly;
  d.prods = ntt_products(s, K, 1) + bconv_products(s, K, mq) + ntt_products(s, mq, 0) +
            (double)mq * (double)s->n;
  d.macs = bconv_macs(s, K, mq);
  report(s, &d);

  /* rescale: INTT(last row), lift, NTT(the rest), (x - u) q^-1 */
  row c = {.op = "rescale"};
  c.us = time_graph(s, rescale_graph(s), 1, quick, &c.kernels);
  c.sep_us = time_graph(s, ntt_graph(s, mq - 1, 1, FHJIT_NTT_TO_COEF_STD), 0, quick, &c.sep_kernels) +
             time_graph(s, ntt_graph(s, 0, mq - 1, FHJIT_NTT_COEF_STD_TO_NTT), 0, quick, &c.sep_kernels) +
             time_graph(s, scale_graph(s, mq - 1), 0, quick, &c.sep_kernels);
  c.bytes = (double)(2 * mq - 1) * poly;
  c.prods = ntt_products(s, 1, 1) + ntt_products(s, mq - 1, 1) + 2.0 * (mq - 1) * (double)s->n;
  report(s, &c);
  printf("     rescale separate: the NTTs and the pointwise rest without the lift (no public op)\n");
}

/* The automorphism alone and fused into a product and into an NTT, both
 * domains, on set s. */
static void bench_aut(const set *s, int quick) {
  double poly = (double)s->n * (double)s->ws; /* bytes of one row */
  int mq = s->mq;
  fhjit_radix radix = s->radix;
  for (int dom = 0; dom < 2; dom++) {
    fhjit_domain D = dom ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
    row t = {.op = dom ? "automorphism (coef)" : "automorphism (ntt)"};
    t.us = time_graph(s, aut_graph(s, D, 0), 1, quick, &t.kernels);
    t.bytes = 2.0 * mq * poly;
    report(s, &t);
    int k1 = 0, k2 = 0;
    double plain = time_graph(s, aut_graph(s, D, 2), 1, quick, &k2);
    int64_t ks[2] = {galois(s), TYPICAL_K % (2 * s->n)};
    for (int i = 0; i < (aut_k ? 1 : 2); i++) {
      double fused = time_graph(s, aut_graph_k(s, D, 1, ks[i]), 1, quick, &k1);
      printf("     %s (k = %lld) fused into mul: %.1f us against mul alone %.1f us: +%.1f%% "
             "(target < 5%%)\n",
             dom ? "coefficient-domain automorphism" : "NTT-domain automorphism",
             (long long)ks[i], fused, plain, (fused / plain - 1) * 100);
      bu_json_item("\"kind\": \"s7_aut_fused\", \"radix\": \"%s\", \"domain\": \"%s\", "
                   "\"k\": %lld, \"fused_us\": %.3f, \"plain_us\": %.3f",
                   radix == FHJIT_R62 ? "r62" : "r32", dom ? "coef" : "ntt", (long long)ks[i],
                   fused, plain);
    }
    k1 = k2 = 0; /* time_graph adds its kernels to the count */
    /* the coefficient form with a pointwise pass first (autcol=0; the
     * default reads it in the NTT's loads, the autcol lines below) */
    if (dom && fhjit_context_set_option(ctx, "ntt_plan", "autcol=0")) die("ntt_plan");
    double nfused = time_graph(s, aut_ntt_graph(s, D, 1), 1, quick, &k1);
    if (dom && fhjit_context_set_option(ctx, "ntt_plan", NULL)) die("ntt_plan");
    double nplain = time_graph(s, aut_ntt_graph(s, D, 0), 1, quick, &k2);
    printf("     %s: %.1f us (%d kernels) against the NTT alone %.1f us (%d): "
           "+%.1f%% (target < 5%%)\n",
           dom ? "coefficient-domain automorphism as a pass before the forward NTT (autcol=0)"
               : "NTT-domain automorphism fused into the inverse NTT",
           nfused, k1, nplain, k2, (nfused / nplain - 1) * 100);
    bu_json_item("\"kind\": \"s7_aut_ntt\", \"radix\": \"%s\", \"domain\": \"%s\", "
                 "\"fused_us\": %.3f, \"plain_us\": %.3f, \"fused_kernels\": %d, "
                 "\"plain_kernels\": %d",
                 radix == FHJIT_R62 ? "r62" : "r32", dom ? "coef" : "ntt", nfused, nplain, k1, k2);
    if (!dom) continue;
    /* the coefficient automorphism in the forward NTT's loads (ntt_plan
     * autcol=1: both kernels staged; 2: kernel 1 loading directly; 3:
     * kernel 1 permuting its registers; each with kernel 0's staged load
     * one word a thread, the default, or its registers permuted, autreg=1; ntt_emit_aut.c) against the same NTT
     * alone. (autvec=1 and autvec1=0 lost at both radices on the H200 at
     * cf2b4a3 and the H100 at 96e406d: bench/RESULTS.md.) */
    static const struct {
      int autcol, autvec, autvec1, autreg;
    } forms[] = {{1, 0, 1, 0}, {2, 0, 1, 0}, {3, 0, 1, 0}, {1, 0, 1, 1}, {2, 0, 1, 1}, {3, 0, 1, 1}};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
      int ac = forms[f].autcol, av = forms[f].autvec, av1 = forms[f].autvec1, ar = forms[f].autreg;
      char form[64];
      snprintf(form, sizeof form, "autcol=%d,autreg=%d%s%s", ac, ar, av ? ",autvec=1" : "",
               av1 ? "" : ",autvec1=0");
      if (fhjit_context_set_option(ctx, "ntt_plan", form)) die("ntt_plan");
      k1 = 0;
      double cfused = time_graph(s, aut_ntt_graph(s, D, 1), 1, quick, &k1);
      if (fhjit_context_set_option(ctx, "ntt_plan", NULL)) die("ntt_plan");
      printf("     coefficient-domain automorphism in the forward NTT's loads (%s): %.1f us "
             "(%d kernels) against the NTT alone %.1f us: +%.1f%% (target < 5%%)\n",
             form, cfused, k1, nplain, (cfused / nplain - 1) * 100);
      bu_json_item("\"kind\": \"s7_aut_ntt_autcol\", \"radix\": \"%s\", \"autcol\": %d, "
                   "\"autvec\": %d, \"autvec1\": %d, \"autreg\": %d, \"fused_us\": %.3f, "
                   "\"plain_us\": %.3f, \"fused_kernels\": %d",
                   radix == FHJIT_R62 ? "r62" : "r32", ac, av, av1, ar, cfused, nplain, k1);
    }
  }
}

static int aut_only; /* --aut-only: bench_aut alone */

static void bench_set(fhjit_radix radix, int log_n, int quick) {
  set s;
  set_init(&s, radix, log_n);
  if (!aut_only) bench_mixing(&s, quick);
  bench_aut(&s, quick);
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
    bu_json_item("\"kind\": \"s7_bconv_sweep\", \"radix\": \"%s\", \"log_n\": %d, "
                 "\"plan\": \"%s\", \"us\": %.3f, \"floor_us\": %.3f, \"checked\": %d",
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
    double us = time_graph(&s, modup_graph(&s, 0), 1, quick, NULL);
    printf("%s modup(digit 0) plan %-22s %8.2f us\n", rn, pass ? plan : "(automatic)", us);
  }
  if (fhjit_context_set_option(ctx, "bconv_plan", NULL)) die("bconv_plan");
  set_free(&s);
}

/* The coefficient-domain automorphism fused into a product under each
 * pw_plan (A=1: its sources staged in shared memory, lower_body.c emit_stage),
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
    printf("%s automorphism (coef, k = %lld) pw_plan %-16s alone %7.2f us, in mul %7.2f us, mul "
           "alone %7.2f us: +%.1f%% (target < 5%%)\n",
           rn, (long long)galois(&s), plan, alone, fused, plain, (fused / plain - 1) * 100);
    bu_json_item("\"kind\": \"s7_aut_sweep\", \"radix\": \"%s\", \"log_n\": %d, "
                 "\"pw_plan\": \"%s\", \"alone_us\": %.3f, \"fused_us\": %.3f, "
                 "\"plain_us\": %.3f",
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
    else if (!strcmp(argv[i], "--aut-only")) aut_only = 1;
    else if (!strcmp(argv[i], "--aut-k") && i + 1 < argc) {
      char *end;
      aut_k = strtoll(argv[++i], &end, 10);
      if (*end || aut_k < 1 || aut_k % 2 == 0 || aut_k >= 2 * 65536) {
        fprintf(stderr, "%s: --aut-k %s: the Galois element must be odd and in [1, 2N)\n",
                argv[0], argv[i]);
        return 2;
      }
    } else {
      fprintf(stderr,
              "usage: %s [--floors FILE] [--radix r62,r32] [--json FILE] [--quick]\n"
              "          [--sweep-bconv] [--bconv-plans \"V=1,U=2;V=2,S=2;...\"]\n"
              "          [--sweep-aut] [--aut-plans \"A=0;A=1,T=512;...\"] [--aut-only] [--aut-k K]\n",
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
