/* test_ks_fusion.c: the fusion of SPEC section 7's whole operations in the
 * step planner (lib/lower/mixsteps.c, anchor.c; issue 17): modup's output
 * read where its rows lie (no gather), the inner product computed in
 * moddown's kernels (no accumulator), a limb-mixing op's computed operand
 * computed in its first and last kernels, a result computed from moddown's
 * value in its last kernel (relinearise's and rotation's additions), a
 * modup's computed operand (HMult's d2 = a1 b1, rotation's automorphism of
 * c1) computed in the digits' inverse NTT and stored there, the modups of
 * one operand sharing one inverse NTT over all their digits' rows and,
 * when all are read in place, one forward NTT over all their converted
 * rows.
 *
 * Two kinds of checks:
 *  - words: one graph per chain shape holding every CKKS operation (key
 *    switch, relinearise, HMult + relinearise + rescale, rotation, hoisted
 *    rotations) and the fallbacks (a modup that is a result, one read by a
 *    moddown, an automorphism of a modup as a result), run on the host path
 *    (fhjit_run_host) and compared word for word with the interpreter (and
 *    a sum read by two moddowns, as components: materialised);
 *    both radices, Q 4 + P 2, a shorter last digit, a level below the top,
 *    permuted bases, K = 1 and 3, N = 2^4 .. 2^8, random lazy words with
 *    edge words (0, 1, q-1, q, q+1, 2q-1) on some rows;
 *  - plans: kernel and scratch counts of each operation at one shape
 *    (fhjit_emit's plan text), the numbers of the fused plans (each below
 *    the plan before issue 17, stated beside it); the modups of one
 *    operand sharing one inverse NTT and one forward NTT (test_shared_intt:
 *    dnum 3, both radices, an input, a computed and an automorphism
 *    operand, a group with a gathered member (per-digit forward NTTs), a
 *    two-component operand; plan and host words). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "s7env.h"
#include "testutil.h"

typedef s7env env;

typedef struct shape {
  fhjit_radix radix;
  int m, special, alpha, logn, rows;
  const int32_t *basis;
} shape;

static const int32_t perm4[] = {2, 3, 0, 1};
static const int32_t perm5[] = {2, 3, 0, 1, 4};
static const shape shapes[] = {
    {FHJIT_R62, 6, 2, 2, 4, 4, NULL},  /* Q 4 + P 2, top level */
    {FHJIT_R32, 7, 2, 2, 5, 5, NULL},  /* Q 5 + P 2: digits {0,1} {2,3} {4} */
    {FHJIT_R62, 7, 2, 2, 6, 3, NULL},  /* level [0, 3): digit 2 empty, digit 1 short */
    {FHJIT_R32, 6, 2, 2, 8, 4, perm4}, /* a stated basis, digits in other rows */
    {FHJIT_R62, 8, 3, 2, 5, 5, perm5}, /* K = 3, permuted, a short last digit */
    {FHJIT_R32, 5, 1, 3, 7, 4, NULL},  /* K = 1, digits {0,1,2} {3} */
    {FHJIT_R62, 8, 2, 1, 4, 6, NULL},  /* 6 digits of one row: the sum materialised */
};
#define NSHAPES 7

static fhjit_value poly(env *e, fhjit_graph *g, const shape *s, const char *name, int comps) {
  fhjit_type t = tu_poly(comps, 0, NULL, s->rows, e->n);
  t.domain = FHJIT_DOMAIN_NTT;
  t.form = FHJIT_FORM_MONT;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  if (s->basis) ck_assert_int_eq(fhjit_input_basis(g, v, s->basis, s->rows), FHJIT_OK);
  return v;
}

static fhjit_value key(env *e, fhjit_graph *g, const shape *s, const char *name) {
  int ndig = (s->m - s->special + s->alpha - 1) / s->alpha;
  fhjit_type t = tu_key(ndig, s->m, e->n);
  t.domain = FHJIT_DOMAIN_NTT;
  t.form = FHJIT_FORM_MONT;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  return v;
}

/* Binds g, fills its inputs, and checks the host path against the
 * interpreter word for word. */
#define MAXRES 16
static void check_host(env *e, fhjit_graph *g) {
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e->ctx));
  int32_t ni = fhjit_num_inputs(g), nr = fhjit_num_results(g);
  ck_assert_int_le(ni, 64);
  ck_assert_int_le(nr, MAXRES);
  void *in[64], *ri[MAXRES], *rh[MAXRES];
  int64_t len[MAXRES];
  for (int32_t i = 0; i < ni; i++) {
    in[i] = s7_fill(e, g, i);
    if (!in[i]) in[i] = strstr(fhjit_value_name(g, fhjit_input_value(g, i)), "fwd") ? e->fwd : e->inv;
  }
  for (int32_t k = 0; k < nr; k++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, k, &t), FHJIT_OK);
    len[k] = fhjit_type_elements(&t);
    ri[k] = malloc(e->ws * (size_t)len[k]);
    rh[k] = malloc(e->ws * (size_t)len[k]);
    memset(ri[k], 0x5a, e->ws * (size_t)len[k]);
    memset(rh[k], 0xa5, e->ws * (size_t)len[k]);
  }
  ck_assert_msg(fhjit_interpret(g, e->params, e->m, (const void *const *)in, ri) == FHJIT_OK,
                "interpret: %s", fhjit_last_error(e->ctx));
  ck_assert_msg(fhjit_run_host(g, e->params, e->m, (const void *const *)in, rh, 2) == FHJIT_OK,
                "run_host: %s", fhjit_last_error(e->ctx));
  for (int32_t k = 0; k < nr; k++) {
    for (int64_t i = 0; i < len[k]; i++)
      ck_assert_msg(s7_wget(e, ri[k], i) == s7_wget(e, rh[k], i),
                    "result %d word %lld: host %llu, interpreter %llu", (int)k, (long long)i,
                    (unsigned long long)s7_wget(e, rh[k], i),
                    (unsigned long long)s7_wget(e, ri[k], i));
    free(ri[k]);
    free(rh[k]);
  }
  for (int32_t i = 0; i < ni; i++)
    if (in[i] != e->fwd && in[i] != e->inv) free(in[i]);
}

static void out(env *e, fhjit_graph *g, fhjit_value v, const char *name) {
  ck_assert_msg(v >= 0, "%s", fhjit_last_error(e->ctx));
  ck_assert_int_eq(fhjit_output(g, v, name), FHJIT_OK);
}

/* The digits of Q holding rows of the operands. */
static int first_digits(const shape *s, int *dig) {
  int n = 0;
  for (int j = 0; j * s->alpha < s->m - s->special && n < 2; j++)
    for (int r = 0; r < s->rows; r++)
      if ((s->basis ? s->basis[r] : r) / s->alpha == j) {
        dig[n++] = j;
        break;
      }
  return n;
}

/* Every operation on one chain shape, host path against the interpreter. */
START_TEST(test_operations_host) {
  TU_SAMPLED(_i); /* sampled (testutil.h): shapes 0, 3 and 6 (r62, r32 permuted, 6 digits) */
  const shape *s = &shapes[_i];
  env e;
  s7_env_init(&e, s->radix, s->m, s->logn, 0x170 + (uint64_t)_i);
  fhjit_graph *g = s7_graph(&e, "ops", s->special, s->alpha);
  fhjit_value a = poly(&e, g, s, "a", 2), b = poly(&e, g, s, "b", 2);
  fhjit_value c3 = poly(&e, g, s, "c3", 3), d = poly(&e, g, s, "d", 0);
  fhjit_value k1 = key(&e, g, s, "k1"), k2 = key(&e, g, s, "k2");
  fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
  int64_t twon = 2 * e.n;
  out(&e, g, fhjit_keyswitch(g, d, k1, fwd, inv), "ks");
  /* half the operations per shape (the host compile dominates the time,
   * under ASan above all); each half on shapes of both radices */
  if (_i % 4 == 0 || _i % 4 == 3) {
    out(&e, g, fhjit_ckks_mul_relin_rescale(g, a, b, k1, fwd, inv), "hmult");
    out(&e, g, fhjit_ckks_rotate(g, a, 125 % twon, k2, fwd, inv), "rot");
  } else {
    out(&e, g, fhjit_ckks_relinearize(g, c3, k1, fwd, inv), "relin");
    int64_t ks[2] = {5, twon - 1};
    fhjit_value keys[2] = {k1, k2}, res[2];
    ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, b, 2, ks, keys, fwd, inv, res), FHJIT_OK);
    out(&e, g, res[0], "h5");
    out(&e, g, res[1], "hconj");
  }
  /* fallbacks: a modup that is a result (and read by a product), one read
   * by a moddown (from memory), an automorphism of a modup as a result */
  int dig[2], nd = first_digits(s, dig);
  ck_assert_int_ge(nd, 1);
  int K = s->special, l = s->rows;
  int64_t dr = 0;
  for (int r = 0; r < l; r++) dr += (s->basis ? s->basis[r] : r) / s->alpha == dig[0];
  fhjit_value t0 = s7_table(g, "t0", dr * (1 + l + K - dr));
  fhjit_value up0 = fhjit_modup(g, d, dig[0], fwd, inv, t0);
  out(&e, g, up0, "up0");
  out(&e, g, fhjit_keyswitch_digit_product(g, up0, k2, dig[0], 0), "prod0");
  fhjit_value md = s7_table(g, "md", K + K * l + l);
  out(&e, g, fhjit_moddown(g, fhjit_modup(g, fhjit_extract(g, a, 0), dig[0], fwd, inv, t0), fwd, inv, md), "md");
  fhjit_value t1 = t0;
  int dj = dig[nd - 1];
  if (nd > 1) {
    int64_t dr1 = 0;
    for (int r = 0; r < l; r++) dr1 += (s->basis ? s->basis[r] : r) / s->alpha == dj;
    t1 = s7_table(g, "t1", dr1 * (1 + l + K - dr1));
  }
  out(&e, g, fhjit_automorphism(g, fhjit_modup(g, d, dj, fwd, inv, t1), 5), "autup");
  /* a computed operand of two components stored by the inverse NTTs'
   * prologues, read through an automorphism */
  out(&e, g, fhjit_automorphism(g, fhjit_modup(g, fhjit_mul(g, a, b), dig[0], fwd, inv, t0), 3),
      "autmul");
  /* a key switch's components crossed: no epilogue of its moddown (the
   * thread holding component 0 would need component 1) */
  if (_i % 2 == 0) {
    fhjit_value k = fhjit_keyswitch(g, fhjit_extract(g, c3, 1), k2, fwd, inv);
    fhjit_value c0 = fhjit_add(g, fhjit_extract(g, k, 1), fhjit_extract(g, a, 0));
    out(&e, g, fhjit_pack(g, 2, (fhjit_value[]){c0, fhjit_extract(g, k, 0)}), "crossed");
  }
  /* a sum read as two components by two moddowns: materialised once */
  fhjit_value acc = fhjit_keyswitch_digit_product(g, fhjit_modup(g, fhjit_extract(g, b, 1), dig[0], fwd, inv, t0), k2, dig[0], 0);
  if (nd > 1)
    acc = fhjit_add_lazy(g, acc, fhjit_keyswitch_digit_product(g, fhjit_modup(g, fhjit_extract(g, b, 1), dj, fwd, inv, t1), k2, dj, 0));
  out(&e, g, fhjit_moddown(g, fhjit_extract(g, acc, 0), fwd, inv, md), "md0");
  out(&e, g, fhjit_moddown(g, fhjit_extract(g, acc, 1), fwd, inv, md), "md1");
  check_host(&e, g);
  s7_env_free(&e);
}
END_TEST

/* ----------------------------------------------------------------- plans */

typedef struct counts {
  int kernels, scratch;
  long long bytes;
} counts;

static counts plan_counts(env *e, fhjit_graph *g) {
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e->ctx));
  const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_msg(text != NULL, "%s", fhjit_last_error(e->ctx));
  const char *p = strstr(text, " steps, ");
  ck_assert_ptr_nonnull(p);
  counts c;
  ck_assert_int_eq(sscanf(p, " steps, %d kernels, %d scratch buffers (%lld bytes)", &c.kernels,
                          &c.scratch, &c.bytes),
                   3);
  return c;
}

/* The benchmark-like chain of the examples (examples/ckks): r62, Q 4 + P 2,
 * digits of 2, N = 1024 (an NTT runs as two kernels). */
static fhjit_graph *plan_graph(env *e, fhjit_value *a, fhjit_value *c3, fhjit_value *d,
                               fhjit_value *k, fhjit_value *fwd, fhjit_value *inv) {
  static const shape s = {FHJIT_R62, 6, 2, 2, 10, 4, NULL};
  fhjit_graph *g = s7_graph(e, "plan", 2, 2);
  *a = poly(e, g, &s, "a", 2);
  *c3 = poly(e, g, &s, "c3", 3);
  *d = poly(e, g, &s, "d", 0);
  *k = key(e, g, &s, "k");
  *fwd = s7_twiddles(e, g, "fwd");
  *inv = s7_twiddles(e, g, "inv");
  return g;
}

/* kernels and scratch buffers of each operation's plan (fused) */
/* (the digits' inverse NTTs shared: 2 kernels and 1 scratch buffer less
 * than with one per digit; their forward NTTs batched: 2 kernels and 2
 * scratch buffers less again, test_shared_intt; their two conversions one
 * kernel (bconvbatch): 1 kernel less again, 11 before) */
#define KS_KERNELS 10
#define KS_SCRATCH 6
#define RELIN_KERNELS 10
#define RELIN_SCRATCH 6
/* rescale's lift in its forward NTT's loads (liftfuse): 1 kernel and
 * 1 scratch buffer fewer than the lift kernel's 16 and 11 (15 with
 * bconvbatch's kernel less); moddown's and rescale's forward NTTs as one
 * (mdrs), the last row's inverse NTT in P's: 3 kernels and 2 scratch
 * buffers fewer than 14 and 10 */
#define HM_KERNELS 11
#define HM_SCRATCH 8
#define ROT_KERNELS 10
#define ROT_SCRATCH 7
#define HOIST_KERNELS 25
#define HOIST_SCRATCH 15
START_TEST(test_plans) {
  env e;
  s7_env_init(&e, FHJIT_R62, 6, 10, 0x180);
  fhjit_value a, c3, d, k, fwd, inv;
  struct {
    const char *what;
    int kernels, scratch; /* fused */
    int before_kernels;   /* before issue 17 */
  } want[] = {
      {"keyswitch", KS_KERNELS, KS_SCRATCH, 18},
      {"relinearize", RELIN_KERNELS, RELIN_SCRATCH, 19},
      {"hmult_relin_rescale", HM_KERNELS, HM_SCRATCH, 25},
      {"rotate", ROT_KERNELS, ROT_SCRATCH, 20},
      {"rotate_hoisted", HOIST_KERNELS, HOIST_SCRATCH, 37},
  };
  for (int w = 0; w < 5; w++) {
    fhjit_graph *g = plan_graph(&e, &a, &c3, &d, &k, &fwd, &inv);
    fhjit_value r = FHJIT_NO_VALUE;
    switch (w) {
    case 0: r = fhjit_keyswitch(g, d, k, fwd, inv); break;
    case 1: r = fhjit_ckks_relinearize(g, c3, k, fwd, inv); break;
    case 2: r = fhjit_ckks_mul_relin_rescale(g, a, a, k, fwd, inv); break;
    case 3: r = fhjit_ckks_rotate(g, a, 125, k, fwd, inv); break;
    default: {
      int64_t ks[4] = {5, 25, 125, 2047};
      fhjit_value keys[4] = {k, k, k, k}, res[4];
      ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, a, 4, ks, keys, fwd, inv, res), FHJIT_OK);
      for (int i = 1; i < 4; i++) out(&e, g, res[i], NULL);
      r = res[0];
    }
    }
    out(&e, g, r, NULL);
    counts c = plan_counts(&e, g);
    ck_assert_msg(c.kernels == want[w].kernels && c.scratch == want[w].scratch,
                  "%s: %d kernels, %d scratch buffers; want %d, %d", want[w].what, c.kernels,
                  c.scratch, want[w].kernels, want[w].scratch);
    ck_assert_int_lt(c.kernels, want[w].before_kernels);
  }
  s7_env_free(&e);
}
END_TEST

/* Six digits of one row (_i 0): the fused inner product would read each
 * raised digit once per component, 6 rows more than the accumulator's
 * write and read (4): materialised (one kernel more), unless ntt_plan
 * mixfuse=1. Four digits (_i 1, ipfuse=0 as in hoisted rotations): 4 rows
 * more against 4, materialised too (the tie: on the H200 the fused r32
 * dnum 4 inner product ran its moddown's last kernel at 2.4 TB/s, 121 us
 * a rotation). (r62: 6 digits of 8-byte words are past ipfuse's default
 * 32 bytes, so the batched forward NTT stores the digits: test_ipfuse has
 * the rest.) Both plans give the interpreter's words. */
START_TEST(test_plans_bytes_rule) {
  TU_SAMPLED_ONLY(_i, 0); /* sampled (testutil.h): 6 digits, r62 */
  env e;
  int D = _i ? 4 : 6;
  s7_env_init(&e, FHJIT_R62, 8, 10, 0x190 + (uint64_t)_i);
  const shape s = {FHJIT_R62, 8, 2, 1, 10, D, NULL};
  static const char *const plans[2][2] = {{NULL, "mixfuse=1"}, {"ipfuse=0", "ipfuse=0,mixfuse=1"}};
  for (int force = 0; force < 2; force++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", plans[_i][force]), FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "plan6", 2, 1);
    fhjit_value d = poly(&e, g, &s, "d", 0), k = key(&e, g, &s, "k");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    out(&e, g, fhjit_keyswitch(g, d, k, fwd, inv), NULL);
    counts c = plan_counts(&e, g);
    /* the digits' INTT 2 (one, shared: it was 2 per digit); the digits'
     * bconv 1 (one, bconvbatch: it was 1 per digit); their forward NTT 2
     * (one, batched: it was 2 per digit); moddown 5; the inner product 1 */
    ck_assert_int_eq(c.kernels, 2 + 1 + 2 + 5 + !force);
    ck_assert_int_eq(c.scratch, 1 + 2 + 3 + !force);
    check_host(&e, g);
  }
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  s7_env_free(&e);
}
END_TEST

/* ntt_plan digitfwd=0 keeps the digits' forward NTTs one per digit
 * (their inverse NTT still shared): 2 kernels per digit instead of 2 in
 * all, and the same words as the interpreter either way, both radices. */
START_TEST(test_plans_digitfwd) {
  TU_SAMPLED_ONLY(_i, 1); /* sampled (testutil.h): r32 */
  env e;
  fhjit_radix radix = _i ? FHJIT_R32 : FHJIT_R62;
  s7_env_init(&e, radix, 8, 10, 0x191 + _i);
  const shape s = {radix, 8, 2, 1, 10, 6, NULL};
  int kernels[2];
  for (int batched = 0; batched < 2; batched++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", batched ? NULL : "digitfwd=0"),
                     FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "plan6fwd", 2, 1);
    fhjit_value d = poly(&e, g, &s, "d", 0), k = key(&e, g, &s, "k");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    out(&e, g, fhjit_keyswitch(g, d, k, fwd, inv), NULL);
    counts c = plan_counts(&e, g);
    kernels[batched] = c.kernels;
    check_host(&e, g);
  }
  /* six forward NTTs of 2 kernels against one, which with ipfuse (r32's
   * default for 6 digits: 24 bytes of words a position) also computes the
   * inner product (the bytes rule gives it a kernel of its own without;
   * r62's 48 bytes keep that kernel); six conversion kernels against one
   * (bconvbatch applies to the batched forward NTT only) */
  int ip = radix == FHJIT_R32;
  ck_assert_int_eq(kernels[0] - kernels[1], 6 * 2 - 2 + ip + 5);
  /* the inverse NTT, the 6 conversions' one kernel, the forward NTT,
   * moddown's 5, and the inner product's own kernel without ipfuse */
  ck_assert_int_eq(kernels[1], 2 + 1 + 2 + 5 + !ip);
  ck_assert_int_ne(fhjit_context_set_option(e.ctx, "ntt_plan", "digitfwd=2"), FHJIT_OK);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(e.ctx), "digitfwd"));
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  s7_env_free(&e);
}
END_TEST


/* ------------------------------------------------------------ ipfuse */

/* ipfuse (mixsteps.c, ipfuse_target; ntt_emit_fuse.c's reduce mode): the
 * key switch's inner product computed in the last kernel of the digits'
 * batched forward NTT, every digit's value in registers, the raised digits
 * never stored. Per case: one operation (key switch, relinearise, rotate)
 * on one chain, host path against the interpreter word for word with
 * ipfuse on (ipfuse=1) and off (ntt_plan ipfuse=0,mixfuse=0, which
 * materialises the sum in a pointwise kernel of its own): the plan with
 * ipfuse has exactly one kernel fewer and names the inner product in the
 * forward NTT's epilogue, over every digit. dnum 2, 3 (a short last
 * digit), 4 and 7, K = 1..3, a level below the top, a permuted basis, N =
 * 2^4 .. 2^10 (one-kernel plans, whose blocks then hold one row, and
 * two-kernel ones, kernel 0 in place), both radices, edge words on the
 * inputs and keys (fill). The default plan is one of the two: fused for
 * at most 32 bytes of digit words a position (r62 dnum 7 is not). The
 * fused plan runs in both reduce modes, the words checked in each: the
 * digits folded into the sum as each one's body ends (ipacc=1: every
 * builder's sum is a left fold over the digits in their order; the plan
 * says "accumulated") and every digit's words kept until the sum (the
 * default, ipacc=0: "slots"). */
static const struct ipcase {
  shape s;
  int op; /* 0 key switch, 1 relinearise, 2 rotate */
  int dnum;
} ipcases[] = {
    {{FHJIT_R62, 6, 2, 2, 4, 4, NULL}, 0, 2},   /* dnum 2, N = 2^4 */
    {{FHJIT_R32, 7, 2, 2, 5, 5, NULL}, 1, 3},   /* digits {0,1} {2,3} {4} */
    {{FHJIT_R62, 10, 2, 2, 10, 8, NULL}, 2, 4}, /* dnum 4, two kernels */
    {{FHJIT_R32, 8, 1, 1, 10, 7, NULL}, 0, 7},  /* dnum 7, K = 1, two kernels */
    {{FHJIT_R62, 8, 1, 1, 6, 7, NULL}, 1, 7},   /* dnum 7, one kernel */
    {{FHJIT_R32, 6, 2, 2, 8, 4, perm4}, 0, 2},  /* a stated basis */
    {{FHJIT_R62, 8, 3, 2, 10, 5, perm5}, 1, 3}, /* K = 3, permuted, a short digit */
    {{FHJIT_R32, 7, 2, 2, 7, 3, NULL}, 2, 2},   /* level [0, 3) of Q 5: a short digit */
    {{FHJIT_R62, 12, 2, 3, 9, 10, NULL}, 0, 4}, /* digits of 3: {0..2} .. {9} */
    {{FHJIT_R32, 9, 2, 1, 10, 7, NULL}, 2, 7},  /* rotate, dnum 7, two kernels */
};
#define NIPCASES 10

static int count_of(const char *text, const char *needle);

START_TEST(test_ipfuse) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): cases 0 (r62 key switch,
   * dnum 2, one-kernel NTTs) and 9 (r32 rotate, dnum 7, two-kernel NTTs:
   * ipchain applies), every mode in each; the relinearise on K = 3 and a
   * permuted basis (case 6) runs fused under ASan in test_bconv_batch's
   * case 6, r62 with ipchain in test_ipsync's case 0 */
  TU_SAMPLED_IN(_i, 0, 9);
  const struct ipcase *c = &ipcases[_i];
  const shape *s = &c->s;
  env e;
  s7_env_init(&e, s->radix, s->m, s->logn, 0x1a0 + (uint64_t)_i);
  int kernels[2];
  /* 0: off, 1: forced (accumulating), 2: forced with every digit's words
   * kept, 3: the default, fused up to 32 bytes of digit words a position
   * (ipfuse_target) with every digit's words kept; 4: forced with
   * moddown's inverse NTT's first kernel in the reduce kernel (ipchain,
   * mixsteps_ipchain.c: where the NTTs run as two kernels, N = 2^10
   * here), one kernel less */
  static const char *const plans[5] = {"ipfuse=0,mixfuse=0", "ipfuse=1,ipacc=1", "ipfuse=1",
                                       NULL, "ipfuse=1,ipchain=1"};
  int by_default = c->dnum * (s->radix == FHJIT_R32 ? 4 : 8) <= 32;
  for (int mode = 0; mode < 5; mode++) {
    int on = mode == 3 ? by_default : mode > 0;
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", plans[mode]), FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "ipfuse", s->special, s->alpha);
    fhjit_value k = key(&e, g, s, "k");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    fhjit_value r;
    if (c->op == 0) r = fhjit_keyswitch(g, poly(&e, g, s, "d", 0), k, fwd, inv);
    else if (c->op == 1) r = fhjit_ckks_relinearize(g, poly(&e, g, s, "c3", 3), k, fwd, inv);
    else r = fhjit_ckks_rotate(g, poly(&e, g, s, "a", 2), 5, k, fwd, inv);
    out(&e, g, r, "r");
    counts n = plan_counts(&e, g);
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_ptr_nonnull(text);
    int chains = count_of(text, "chain: step");
    ck_assert_msg(chains == (mode == 4 && s->logn >= 10), "mode %d:\n%s", mode, text);
    if (mode < 2) kernels[on] = n.kernels;
    else ck_assert_int_eq(n.kernels, kernels[on] - chains);
    char want[64];
    snprintf(want, sizeof want, "inner product of %d digits", c->dnum);
    ck_assert_msg((strstr(text, want) != NULL) == on, "ipfuse=%d, dnum %d:\n%s", on, c->dnum, text);
    /* the mode that ran: accumulated only with ipacc=1 */
    ck_assert_msg(count_of(text, ", accumulated: ") == (mode == 1), "mode %d:\n%s", mode, text);
    ck_assert_msg(count_of(text, ", slots") == (on && mode != 1), "mode %d:\n%s", mode, text);
    if (mode != 3) check_host(&e, g);
  }
  ck_assert_int_eq(kernels[0] - kernels[1], 1);
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  s7_env_free(&e);
}
END_TEST

/* ntt_plan `plan` is refused with an error naming `key`; the plan then
 * back to the default. */
static void assert_refused(env *e, const char *plan, const char *key) {
  ck_assert_int_ne(fhjit_context_set_option(e->ctx, "ntt_plan", plan), FHJIT_OK);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(e->ctx), key));
  ck_assert_int_eq(fhjit_context_set_option(e->ctx, "ntt_plan", NULL), FHJIT_OK);
}

/* bcrev (anchor_gpu.c, bconv_reversed): a conversion whose output is at
 * least 32 MB runs its blocks in reverse order on the GPU by default
 * (test/lit/run/bcrev.fh checks that rule at SPEC 7's r32 benchmark
 * shape). At a small shape none by default nor with bcrev=0, and with
 * bcrev=2 every conversion, whose kernels then read %nctaid.x, while the
 * host path (which keeps its order) still matches the interpreter, both
 * radices. bcrev=3 is refused. */
START_TEST(test_bcrev) {
  TU_SAMPLED_ONLY(_i, 0); /* sampled (testutil.h): r62 */
  env e;
  fhjit_radix radix = _i ? FHJIT_R32 : FHJIT_R62;
  const shape s = {radix, 8, 2, 1, 10, 6, NULL};
  s7_env_init(&e, radix, 8, 10, 0x1c0 + (uint64_t)_i);
  static const char *const plans[3] = {NULL, "bcrev=0", "bcrev=2"};
  for (int mode = 0; mode < 3; mode++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", plans[mode]), FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "bcrev", 2, 1);
    fhjit_value d = poly(&e, g, &s, "d", 0), k = key(&e, g, &s, "k");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    out(&e, g, fhjit_keyswitch(g, d, k, fwd, inv), NULL);
    ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e.ctx));
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_msg(text != NULL, "%s", fhjit_last_error(e.ctx));
    int convs = count_of(text, ": bconv "), rev = count_of(text, "block order: reversed");
    ck_assert_msg(convs >= 2 && rev == (mode == 2 ? convs : 0), "mode %d: %d of %d reversed:\n%s",
                  mode, rev, convs, text);
    const char *ptx = fhjit_emit(g, FHJIT_EMIT_PTX, "sm_90");
    ck_assert_msg(ptx != NULL, "%s", fhjit_last_error(e.ctx));
    ck_assert_int_eq(strstr(ptx, "%nctaid.x") != NULL, mode == 2);
    check_host(&e, g);
  }
  assert_refused(&e, "bcrev=3", "bcrev");
  s7_env_free(&e);
}
END_TEST

/* The PTX of kernel `name` in ptx: from its .entry to the next (or the
 * end); *len its length. */
static const char *entry_text(const char *ptx, const char *name, size_t *len) {
  char head[96];
  snprintf(head, sizeof head, ".entry %s(", name);
  const char *at = strstr(ptx, head);
  ck_assert_msg(at != NULL, "no kernel %s in the PTX", name);
  const char *next = strstr(at + 1, ".entry ");
  *len = next ? (size_t)(next - at) : strlen(at);
  return at;
}

/* Whether the first len characters at text contain needle. */
static int has(const char *text, size_t len, const char *needle) {
  const char *at = strstr(text, needle);
  return at && (size_t)(at - text) + strlen(needle) <= len;
}

/* Every kernel of prog takes as many .param as its description has
 * arguments; returns the index of kernel `name` (-1: none). */
static int check_params(const lw_program *prog, const char *name) {
  int found = -1;
  for (int32_t k = 0; k < prog->nkernels; k++) {
    size_t len;
    const char *t = entry_text(prog->ptx, prog->kernels[k].name, &len);
    const char *end = strchr(t, ')');
    int np = 0;
    for (const char *p = strstr(t, ".param"); p && p < end; p = strstr(p + 1, ".param")) np++;
    ck_assert_msg(np == prog->kernels[k].nargs, "%s: %d .param, %d arguments described",
                  prog->kernels[k].name, np, (int)prog->kernels[k].nargs);
    if (!strcmp(prog->kernels[k].name, name)) found = (int)k;
  }
  return found;
}

static int last_is_own(const lw_kernel *k) {
  return k->nargs > 0 && k->args[k->nargs - 1].kind == LW_ARG_OWN;
}

/* g's sm_90 program compiled into *prog, its kernels and their argument
 * counts those of its description. */
static void compile_described(env *e, fhjit_graph *g, lw_program *prog) {
  lw_program desc;
  ck_assert_msg(lw_compile_ptx(g, "sm_90", prog) == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
  ck_assert_msg(lw_describe_program(g, "sm_90", &desc) == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
  ck_assert_int_eq(prog->nkernels, desc.nkernels);
  for (int32_t j = 0; j < prog->nkernels; j++) ck_assert_int_eq(prog->kernels[j].nargs, desc.kernels[j].nargs);
  lw_program_free(&desc);
}

/* Kernel k (`name`) of prog with counts between kernels iff on: it takes
 * LW_ARG_OWN last and names the counters; a counting kernel releases
 * into them, a waiting one polls, fences and counts itself done, and
 * keeps griddepcontrol.wait (own = 0) either way. */
static void check_counts(const lw_program *prog, int k, const char *name, const char *counters,
                         int on, int waits) {
  size_t len;
  const char *t = entry_text(prog->ptx, name, &len);
  ck_assert_int_eq(last_is_own(&prog->kernels[k]), on);
  ck_assert_int_eq(has(t, len, counters), on);
  if (!waits) {
    ck_assert_int_eq(has(t, len, "red.release.gpu.global.add.u32"), on);
    return;
  }
  ck_assert_int_eq(has(t, len, "ld.relaxed.gpu.global.u32"), on);
  ck_assert_int_eq(has(t, len, "fence.acq_rel.gpu"), on);
  ck_assert_int_eq(has(t, len, "atom.relaxed.gpu.global.add.u32"), on);
  ck_assert(has(t, len, "griddepcontrol.wait"));
}

/* The step index of the plan line that contains needle (-1: none). */
static int step_of(const char *text, const char *needle) {
  const char *at = strstr(text, needle);
  if (!at) return -1;
  while (at > text && (strncmp(at, "step ", 5) || at[-1] != '\n')) at--;
  return at > text ? atoi(at + 5) : -1;
}

/* The first step of scratch buffer x's live range in plan text. */
static int scratch_first(const char *text, int x) {
  char sh[32];
  snprintf(sh, sizeof sh, "\nscratch %d: ", x);
  const char *range = strstr(text, sh);
  ck_assert_ptr_nonnull(range);
  range = strstr(range, ", steps ");
  ck_assert_ptr_nonnull(range);
  return atoi(range + 8);
}

/* The producer `pname` and the waiting kernel `wname` (present iff
 * waiter) of the counters fhjit_sync<id> in prog, with counts iff on (the
 * counters' array declared then); both kernels' parameters match their
 * descriptions. */
static void check_pair(const lw_program *prog, const char *pname, const char *wname, int id,
                       int on, int waiter) {
  char counters[32];
  snprintf(counters, sizeof counters, "fhjit_sync%d[", id);
  ck_assert_int_eq(strstr(prog->ptx, counters) != NULL, on);
  counters[strlen(counters) - 1] = 0;
  int kp = check_params(prog, pname), kw = check_params(prog, wname);
  ck_assert_int_ge(kp, 0);
  ck_assert_int_eq(kw >= 0, waiter);
  check_counts(prog, kp, pname, counters, on, 0);
  if (kw >= 0) check_counts(prog, kw, wname, counters, on, 1);
}

/* A bound graph "name" of CKKS operation op on e's chain (Q 6 + P 2,
 * digits of 1, N = 1024): 0 a key switch, 1 rotate(5), 2 HMult + relin +
 * rescale, 3 two hoisted rotations; *text its sm_90 plan. */
static fhjit_graph *ckks_op_graph(env *e, fhjit_radix radix, const char *name, int op, const char **text) {
  const shape s = {radix, 8, 2, 1, 10, 6, NULL};
  fhjit_graph *g = s7_graph(e, name, 2, 1);
  fhjit_value k = key(e, g, &s, "k");
  fhjit_value fwd = s7_twiddles(e, g, "fwd"), inv = s7_twiddles(e, g, "inv");
  if (op == 3) {
    int64_t ks[2] = {5, 2 * e->n - 1};
    fhjit_value keys[2] = {k, k}, res[2];
    ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, poly(e, g, &s, "a", 2), 2, ks, keys, fwd, inv, res), FHJIT_OK);
    out(e, g, res[0], "h5");
    out(e, g, res[1], "hconj");
  } else {
    fhjit_value r = op == 0   ? fhjit_keyswitch(g, poly(e, g, &s, "d", 0), k, fwd, inv)
                    : op == 1 ? fhjit_ckks_rotate(g, poly(e, g, &s, "a", 2), 5, k, fwd, inv)
                              : fhjit_ckks_mul_relin_rescale(g, poly(e, g, &s, "a", 2),
                                                             poly(e, g, &s, "b", 2), k, fwd, inv);
    out(e, g, r, NULL);
  }
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e->ctx));
  *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
  ck_assert_msg(*text != NULL, "%s", fhjit_last_error(e->ctx));
  return g;
}

/* Before sm_90 (no dependent launches) g's plan counts nothing; its host
 * words match the interpreter's. */
static void check_old_and_host(env *e, fhjit_graph *g) {
  const char *old = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_80");
  ck_assert_msg(old != NULL, "%s", fhjit_last_error(e->ctx));
  ck_assert_int_eq(count_of(old, "sync: "), 0);
  check_host(e, g);
}

/* ipsync (mixsteps_ipsync.c), a key switch, a rotation and HMult +
 * relinearise + rescale (whose inverse NTT's prologue reads the sum's
 * last Q row, counted with P's), both radices:
 * with ipsync=1 the reduce step counts the rows of the sum moddown's
 * inverse NTT reads for the step after it (plan text), both kernels take
 * LW_ARG_OWN (described and in the PTX, whose parameters match every
 * kernel's description), the reduce kernel releases the counts
 * (fhjit_sync<step>) and the inverse NTT's first kernel polls, fences
 * and counts itself done; the inverse NTT's destination is live from the
 * reduce step on (scratch.c); the host words unchanged. Not by default,
 * not with ipchain=1 where that applies (the inverse NTT's first kernel
 * then runs in the reduce kernel; HMult's has a prologue, so it syncs),
 * and ipsync=2 is refused. */
START_TEST(test_ipsync) {
  TU_SAMPLED(_i); /* sampled: the r62 key switch and r32 HMult */
  env e;
  fhjit_radix radix = _i < 3 ? FHJIT_R62 : FHJIT_R32;
  int op = (_i + 2 * (_i / 3)) % 3; /* 0 key switch, 1 rotation, 2 HMult */
  s7_env_init(&e, radix, 8, 10, 0x1d0 + (uint64_t)_i);
  static const char *const plans[3] = {"ipfuse=1", "ipfuse=1,ipsync=1", "ipfuse=1,ipsync=1,ipchain=1"};
  for (int mode = 0; mode < 3; mode++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", plans[mode]), FHJIT_OK);
    const char *text;
    fhjit_graph *g = ckks_op_graph(&e, radix, "ipsync", op, &text);
    ck_assert_msg(count_of(text, "inner product of") == 1, "mode %d:\n%s", mode, text);
    /* ipchain applies to the key switch and the rotation, not to HMult
     * (moddown's inverse NTT has a prologue there): it then syncs */
    int chained = mode == 2 && op < 2, on = mode == 1 || (mode == 2 && !chained);
    ck_assert_msg(count_of(text, "  sync: rows ") == on && count_of(text, "  sync: first kernel waits") == on,
                  "mode %d:\n%s", mode, text);
    /* the reduce step: its epilogue's line comes first; the inverse NTT the next step */
    const char *ip = strstr(text, "inner product of");
    const char *st = ip;
    while (st > text && strncmp(st, "step ", 5)) st--;
    int rs = atoi(st + 5), s1 = rs + 1;
    if (on) {
      char want[64];
      snprintf(want, sizeof want, "counted for step %d\n", s1);
      ck_assert_msg(strstr(text, want) != NULL, "%s", text);
    }
    /* the inverse NTT's destination: live from the reduce step with ipsync */
    char head[32];
    snprintf(head, sizeof head, "step %d: ntt_inv", s1);
    const char *ln = strstr(text, head);
    if (!chained) {
      ck_assert_msg(ln != NULL, "mode %d: step %d is no inverse NTT:\n%s", mode, s1, text);
      const char *arrow = strstr(ln, "-> scratch ");
      ck_assert_ptr_nonnull(arrow);
      ck_assert_msg(scratch_first(text, atoi(arrow + 11)) == (on ? rs : s1), "mode %d:\n%s", mode, text);
    }
    lw_program prog;
    compile_described(&e, g, &prog);
    char rname[64], cname[64];
    snprintf(rname, sizeof rname, "fhjit_ntt%d_n10_k1", rs);
    snprintf(cname, sizeof cname, "fhjit_ntt%d_n10_k0", s1);
    /* ipchain: the inverse NTT's first kernel runs in the reduce kernel */
    check_pair(&prog, rname, cname, rs, on, !chained);
    lw_program_free(&prog);
    check_old_and_host(&e, g);
  }
  assert_refused(&e, "ipsync=2", "ipsync");
  s7_env_free(&e);
}
END_TEST

/* convsync (mixsteps_ipsync.c): a key switch and HMult + relinearise +
 * rescale at r62 and r32, and two hoisted rotations at r32 (whose batched
 * forward NTT writes a buffer of its own): with convsync=1 the digits'
 * conversion (one launch) counts its blocks per digit for the batched
 * forward NTT after it (plan text), whose first kernel waits for its
 * row's digit (in digit order; with bcrev=2 the last digit first, the
 * kernel then reading %nctaid-free reversed blocks); both kernels take
 * LW_ARG_OWN (described, and in the PTX, whose parameters match every
 * kernel's description), the conversion releases its counts into
 * fhjit_sync<step> and the forward NTT's first kernel polls, fences,
 * counts itself done and keeps griddepcontrol.wait for own = 0; a
 * forward NTT that does not write in place has its destination live from
 * the conversion's step on (scratch.c); with ipsync=1 beside it both
 * edges are counted, in counters of their own; nothing before sm_90; the
 * host words unchanged. Not by default, and convsync=2 is refused. */
START_TEST(test_convsync) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): cases 0 (the r62 key
   * switch: a forward NTT in place) and 4 (the r32 hoisted rotations: a
   * forward NTT into a buffer of its own), every mode in each */
  TU_SAMPLED_IN(_i, 0, 4);
  env e;
  fhjit_radix radix = _i == 0 || _i == 2 ? FHJIT_R62 : FHJIT_R32;
  static const int ops[5] = {0, 0, 2, 2, 3}; /* ckks_op_graph's */
  int op = ops[_i];
  s7_env_init(&e, radix, 8, 10, 0x1e0 + (uint64_t)_i);
  static const char *const plans[4] = {"ipfuse=1", "ipfuse=1,convsync=1", "ipfuse=1,convsync=1,bcrev=2",
                                       "ipfuse=1,convsync=1,ipsync=1"};
  for (int mode = 0; mode < 4; mode++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", plans[mode]), FHJIT_OK);
    const char *text;
    fhjit_graph *g = ckks_op_graph(&e, radix, "convsync", op, &text);
    int on = mode > 0, rev = mode == 2;
    ck_assert_msg(count_of(text, "  sync: its blocks counted per digit") == on &&
                      count_of(text, "  sync: first kernel waits for its row's digit") == on &&
                      count_of(text, "the last digit first") == rev,
                  "mode %d:\n%s", mode, text);
    ck_assert_int_eq(count_of(text, "  sync: rows "), mode == 3 && op != 3);
    int cs = step_of(text, " digits: row 0"), fs = cs + 1;
    ck_assert_msg(cs >= 0, "no batched conversion:\n%s", text);
    char head[32];
    snprintf(head, sizeof head, "step %d: ntt_fwd", fs);
    const char *ln = strstr(text, head);
    ck_assert_msg(ln != NULL, "step %d is no forward NTT:\n%s", fs, text);
    if (on)
      ck_assert_msg(step_of(text, "counted per digit") == cs && step_of(text, "waits for its row's digit") == fs,
                    "mode %d:\n%s", mode, text);
    /* not in place (hoisted): the destination live from the conversion */
    const char *arrow = strstr(ln, "-> scratch ");
    const char *eol = strchr(ln, '\n');
    ck_assert_int_eq(arrow != NULL && arrow < eol, op == 3);
    if (op == 3) ck_assert_int_eq(scratch_first(text, atoi(arrow + 11)), on ? cs : fs);
    lw_program prog;
    compile_described(&e, g, &prog);
    char bname[64], fname[64];
    snprintf(bname, sizeof bname, "fhjit_bconv%d", cs);
    snprintf(fname, sizeof fname, "fhjit_ntt%d_n10_k0", fs);
    check_pair(&prog, bname, fname, cs, on, 1);
    lw_program_free(&prog);
    check_old_and_host(&e, g);
  }
  assert_refused(&e, "convsync=2", "convsync");
  s7_env_free(&e);
}
END_TEST

/* Where ipfuse does not apply, the plan and the words are those of
 * ipfuse=0: hoisted rotations (each raised digit read under several
 * automorphisms), a raised digit that is also a result, a sum read by a
 * second reader of a digit (the digit product kept as a result). */
START_TEST(test_ipfuse_not) {
  TU_SAMPLED_ONLY(_i, 1); /* sampled (testutil.h): r32, dnum 7 */
  const shape *s = &ipcases[_i ? 3 : 2].s;
  env e;
  s7_env_init(&e, s->radix, s->m, s->logn, 0x1b0 + (uint64_t)_i);
  int kernels[2];
  for (int on = 0; on < 2; on++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", on ? "ipfuse=1" : "ipfuse=0"), FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "noipfuse", s->special, s->alpha);
    fhjit_value a = poly(&e, g, s, "a", 2), k = key(&e, g, s, "k");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    int64_t ks[2] = {5, 2 * e.n - 1};
    fhjit_value keys[2] = {k, k}, res[2];
    ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, a, 2, ks, keys, fwd, inv, res), FHJIT_OK);
    out(&e, g, res[0], "h5");
    out(&e, g, res[1], "hconj");
    counts n = plan_counts(&e, g);
    kernels[on] = n.kernels;
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_null(strstr(text, "inner product"));
    check_host(&e, g);
  }
  ck_assert_int_eq(kernels[0], kernels[1]);
  ck_assert_int_ne(fhjit_context_set_option(e.ctx, "ntt_plan", "ipfuse=2"), FHJIT_OK);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(e.ctx), "ipfuse"));
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  s7_env_free(&e);
}
END_TEST

/* Occurrences of needle in text. */
static int count_of(const char *text, const char *needle) {
  int c = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) c++;
  return c;
}

/* The modups of one operand share one inverse NTT (mixsteps.c,
 * shared_intt) and, when all are read in place, one forward NTT
 * (batched_fwd): Q 6 + P 2, three digits of 2 rows, N = 1024 (an NTT runs
 * as two kernels), both radices; an input operand (key switch), a
 * computed one (HMult's d2, stored by the shared transform's prologue), an
 * automorphism of c1 (rotation), a group with a member that is a result
 * (gathered: every digit keeps its own forward NTT) and the modups of a
 * two-component operand added up (the conversions write every polynomial's
 * rows at a stride). The plan holds two inverse NTTs to
 * coefficient-Montgomery form, the modups' one over all 6 rows and
 * moddown's, where each digit had its own (4; 2 kernels more per digit
 * after the first); the three conversions read it and write rows 0, 6, 12
 * of one buffer, in one kernel (bconvbatch: 1 kernel fewer per digit
 * after the first), whose one forward NTT of 18 rows replaces the digits'
 * three of 6 (2 kernels fewer per digit after the first); and the host
 * path matches the interpreter word for word. */
START_TEST(test_shared_intt) {
  TU_SAMPLED_ONLY(_i, 0); /* sampled (testutil.h): r62 */
  static const fhjit_radix radix[2] = {FHJIT_R62, FHJIT_R32};
  const shape s = {radix[_i], 8, 2, 2, 10, 6, NULL};
  env e;
  s7_env_init(&e, s.radix, s.m, s.logn, 0x1a0 + (uint64_t)_i);
  /* per digit before: INTT 2, bconv 1, NTT 2; moddown 5; rescale 4 (its
   * lift in its forward NTT's loads, liftfuse); HMult's moddown and
   * rescale with one forward NTT, the last row's inverse NTT in P's and
   * a pointwise kernel (mdrs): 3 fewer (other: kernels off by fusions
   * other than the modups') */
  struct {
    const char *what, *stored;
    int kernels, before, batched, polys, members, other;
  } want[] = {
      {"keyswitch", NULL, 10, 20, 1, 1, 3, 0},
      {"hmult_relin_rescale", "stored (rows 0..5)", 11, 24, 1, 1, 3, 3},
      {"rotate", "stored (rows 0..5)", 10, 20, 1, 1, 3, 0},
      /* a fourth modup of d, digit 1, that is a result: gathered (its
       * bconv, forward NTT, gather: 4 kernels more) */
      {"mixed", NULL, 20, 26, 0, 1, 4, 0},
      /* three modups; the add of them one kernel */
      {"sum2", NULL, 6, 16, 1, 2, 3, 0},
  };
  for (int w = 0; w < 5; w++) {
    fhjit_graph *g = s7_graph(&e, want[w].what, s.special, s.alpha);
    fhjit_value a = poly(&e, g, &s, "a", 2), b = poly(&e, g, &s, "b", 2);
    fhjit_value d = poly(&e, g, &s, "d", 0), k = key(&e, g, &s, "k");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    fhjit_value r = FHJIT_NO_VALUE;
    switch (w) {
    case 0: r = fhjit_keyswitch(g, d, k, fwd, inv); break;
    case 1: r = fhjit_ckks_mul_relin_rescale(g, a, b, k, fwd, inv); break;
    case 2: r = fhjit_ckks_rotate(g, a, 125, k, fwd, inv); break;
    case 3:
      r = fhjit_keyswitch(g, d, k, fwd, inv);
      out(&e, g, fhjit_modup(g, d, 1, fwd, inv, s7_table(g, "t1", 2 * (1 + 6 + 2 - 2))), "up1");
      break;
    default:
      for (int j = 0; j < 3; j++) {
        char tn[8];
        snprintf(tn, sizeof tn, "t%d", j);
        fhjit_value up = fhjit_modup(g, a, j, fwd, inv, s7_table(g, tn, 2 * (1 + 6 + 2 - 2)));
        r = j ? fhjit_add(g, r, up) : up;
      }
    }
    out(&e, g, r, NULL);
    counts c = plan_counts(&e, g);
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_ptr_nonnull(text);
    int nm = want[w].members;
    int after = want[w].before - 2 * (nm - 1) - (want[w].batched ? 3 * (nm - 1) : 0) - want[w].other;
    ck_assert_msg(c.kernels == want[w].kernels && c.kernels == after,
                  "%s: %d kernels, want %d (before: %d)\n%s", want[w].what, c.kernels,
                  want[w].kernels, want[w].before, text);
    int moddowns = w < 4; /* its inverse NTT and forward NTT */
    ck_assert_msg(count_of(text, "ntt_inv to coef-mont") == 1 + moddowns &&
                      count_of(text, "ntt_inv to coef-mont, 6 rows") == 1,
                  "%s: not one inverse NTT for the modups\n%s", want[w].what, text);
    /* a conversion per member from the digits' rows of the shared buffer */
    const char *sh = strstr(text, "ntt_inv to coef-mont, 6 rows");
    int sc = -1;
    ck_assert_ptr_nonnull(sh);
    ck_assert_int_eq(sscanf(strstr(sh, "-> "), "-> scratch %d", &sc), 1);
    char conv[160], fw[160];
    snprintf(conv, sizeof conv,
             "bconv 2 -> 6 rows x N 1024, %d polynomials, mont form, scratch %d ->",
             want[w].polys, sc);
    ck_assert_msg(count_of(text, conv) == (want[w].batched ? 1 : nm), "%s: %s\n%s", want[w].what,
                  conv, text);
    /* one forward NTT of the 18 converted rows, from the conversions'
     * buffer, exactly when batched; else one of 6 rows per digit */
    snprintf(fw, sizeof fw, "ntt_fwd from coef-mont, 18 rows x N 1024 (%d polynomial rows), scratch ",
             18 * want[w].polys);
    ck_assert_msg(count_of(text, "ntt_fwd from coef-mont") == moddowns + (want[w].batched ? 1 : nm) &&
                      count_of(text, fw) == want[w].batched &&
                      count_of(text, "ntt_fwd from coef-mont, 6 rows x N 1024 (6 polynomial rows)") ==
                          (want[w].batched ? 0 : nm),
                  "%s: forward NTTs\n%s", want[w].what, text);
    if (want[w].batched) {
      /* one kernel converting the three digits (rows 0, 2, 4 of the
       * shared transform, each with its own table) to rows 0, 6, 12 */
      int s2 = -1;
      ck_assert_int_eq(sscanf(strstr(text, fw) + strlen(fw), "%d", &s2), 1);
      char at[200];
      snprintf(at, sizeof at, "%s scratch %d, 3 digits: row 0 (input ", conv, s2);
      const char *line = strstr(text, at);
      ck_assert_msg(line != NULL, "%s: %s\n%s", want[w].what, at, text);
      int t[3];
      ck_assert_int_eq(sscanf(line + strlen(conv),
                              " scratch %*d, 3 digits: row 0 (input %d %*s -> row 0; row 2 (input %d "
                              "%*s -> row 6; row 4 (input %d %*s -> row 12\n",
                              &t[0], &t[1], &t[2]),
                       3);
      ck_assert(t[0] != t[1] && t[1] != t[2] && t[0] != t[2]); /* each digit's own table */
    }
    if (want[w].stored) ck_assert_msg(count_of(text, want[w].stored) == 1, "%s", text);
    check_host(&e, g);
  }
  s7_env_free(&e);
}
END_TEST

/* ------------------------------------------------------------ bconvbatch */

/* bconvbatch (mixsteps.c, batched_fwd; lw_bconv_plan.digits): the
 * conversions of a batched forward NTT's digits of one shape (nd -> m
 * rows) run as one kernel, each block converting one digit with that
 * digit's table, rows and columns; a digit of another shape (a short last
 * one) keeps its own kernel. Per case: one operation on one chain (the
 * ipfuse cases' shapes: dnum 2, 3, 4, 7, a short last digit, K = 1..3, a
 * level below the top, permuted bases, N = 2^4 .. 2^10, both radices),
 * run on the host with bconvbatch=1 (the default) and bconvbatch=0 and
 * compared word for word with the interpreter (random and edge words,
 * fill); the plan with it has exactly sum over the shapes of (digits of
 * that shape - 1) kernels fewer, and its conversion lines name the
 * digits ("<n> digits: row <source row> (input <table>) -> row <row>;
 * ..."), none without. Operations (op, two per case): key switch,
 * relinearise, rotate, hoisted rotations (2 keys), HMult + relinearise +
 * rescale. */
static int batch_drop(const shape *s, int *largest) {
  int count[S7_MAXM + 1] = {0}, per[S7_MAXM] = {0}, drop = 0;
  for (int r = 0; r < s->rows; r++) per[(s->basis ? s->basis[r] : r) / s->alpha]++;
  for (int j = 0; j < S7_MAXM; j++)
    if (per[j]) count[per[j]]++;
  *largest = 1;
  for (int nd = 1; nd <= S7_MAXM; nd++)
    if (count[nd] > 1) {
      drop += count[nd] - 1;
      if (count[nd] > *largest) *largest = count[nd];
    }
  return drop;
}

START_TEST(test_bconv_batch) {
  /* sampled (testutil.h): cases 0, 3, 6, 9 and 15, each operation once
   * (12 and 18 repeat 9's and 0's) */
  TU_SAMPLED_IN(_i, 0, 3, 6, 9, 15);
  const struct ipcase *c = &ipcases[_i % NIPCASES];
  const shape *s = &c->s;
  int op = (_i + _i / NIPCASES * 2) % 5; /* each case with two operations */
  env e;
  s7_env_init(&e, s->radix, s->m, s->logn, 0x1e0 + (uint64_t)_i);
  int largest, drop = batch_drop(s, &largest), kernels[2];
  for (int bb = 0; bb < 2; bb++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", bb ? NULL : "bconvbatch=0"),
                     FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "bconvbatch", s->special, s->alpha);
    fhjit_value k = key(&e, g, s, "k"), k2 = key(&e, g, s, "k2");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    fhjit_value a = poly(&e, g, s, "a", 2);
    if (op == 0) out(&e, g, fhjit_keyswitch(g, poly(&e, g, s, "d", 0), k, fwd, inv), "r");
    else if (op == 1) out(&e, g, fhjit_ckks_relinearize(g, poly(&e, g, s, "c3", 3), k, fwd, inv), "r");
    else if (op == 2) out(&e, g, fhjit_ckks_rotate(g, a, 5, k, fwd, inv), "r");
    else if (op == 3) {
      int64_t ks[2] = {5, 2 * e.n - 1};
      fhjit_value keys[2] = {k, k2}, res[2];
      ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, a, 2, ks, keys, fwd, inv, res), FHJIT_OK);
      out(&e, g, res[0], "h5");
      out(&e, g, res[1], "hconj");
    } else {
      out(&e, g, fhjit_ckks_mul_relin_rescale(g, a, poly(&e, g, s, "b", 2), k, fwd, inv), "r");
    }
    counts n = plan_counts(&e, g);
    kernels[bb] = n.kernels;
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_ptr_nonnull(text);
    char want[32];
    snprintf(want, sizeof want, ", %d digits: row ", largest);
    ck_assert_msg(count_of(text, " digits: row ") == (bb ? drop > 0 : 0) &&
                      (!bb || !drop || count_of(text, want) >= 1),
                  "case %d op %d bconvbatch=%d drop %d:\n%s", _i, op, bb, drop, text);
    check_host(&e, g);
  }
  ck_assert_msg(kernels[0] - kernels[1] == drop,
                "case %d op %d: %d kernels against %d, want %d fewer", _i, op, kernels[1],
                kernels[0], drop);
  ck_assert_int_ne(fhjit_context_set_option(e.ctx, "ntt_plan", "bconvbatch=2"), FHJIT_OK);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(e.ctx), "bconvbatch"));
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  s7_env_free(&e);
}
END_TEST

/* ------------------------------------------------------------ md groups */

/* Moddowns planned together (mixsteps.c, md_group): hoisted rotations
 * whose inner products are materialised (dnum >= 4: the byte rule's tie
 * and beyond) have them computed by one pointwise kernel into one buffer
 * (ntt_plan mdip), each rotation's at its own offset; then one inverse
 * NTT of every rotation's P rows (mdintt) and one conversion of them all
 * (mdbconv), each rotation's forward NTT reading its rows there; and
 * with mdipk=k the operands k rotations a kernel (2, 1, 16 and the
 * default, r32 2 and r62 1). Per
 * case: 2, 3 or 4
 * rotations (keys used twice, a conjugation among them), both radices,
 * dnum 4 and 7, K = 1 and 2, digits of 1..3 with a short last one, N =
 * 2^4 .. 2^8; run on the host with each key on and off (mdip=0: the plan
 * before) and compared word for word with the interpreter (random and
 * edge words, fill). The plan has exactly (rotations - 1) kernels fewer
 * per step batched (N <= 2^12: an inverse NTT is one kernel),
 * and names the operands' places ("at word"); where the inner products
 * are computed in moddown's kernels (dnum 3, or mixfuse=1) nothing
 * changes. */
static const struct mdcase {
  shape s;
  int count, applies;
  const char *extra; /* ntt_plan items added to every mode */
} mdcases[] = {
    {{FHJIT_R32, 10, 2, 2, 6, 8, NULL}, 2, 1, NULL},  /* r32 dnum 4: the tie */
    {{FHJIT_R32, 10, 2, 2, 8, 8, NULL}, 4, 1, NULL},  /* 4 rotations, N = 2^8 */
    {{FHJIT_R62, 10, 2, 2, 5, 8, NULL}, 3, 1, NULL},  /* r62 dnum 4 */
    {{FHJIT_R32, 9, 2, 1, 7, 7, NULL}, 3, 1, NULL},   /* r32 dnum 7 */
    {{FHJIT_R62, 8, 1, 1, 4, 7, NULL}, 2, 1, NULL},   /* dnum 7, K = 1 */
    {{FHJIT_R62, 12, 2, 3, 6, 10, NULL}, 4, 1, NULL}, /* digits of 3, a short last one */
    {{FHJIT_R32, 7, 2, 2, 5, 5, NULL}, 3, 0, NULL},   /* dnum 3: fused, no group */
    {{FHJIT_R32, 10, 2, 2, 6, 8, NULL}, 3, 0, "mixfuse=1"}, /* forced fused: no group */
};
#define NMDCASES 8

START_TEST(test_md_group) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): cases 0 (r32 dnum 4, the
   * tie), 4 (r62 dnum 7, K = 1) and 6 (dnum 3: fused, no group), every
   * mode in each; 1, 3 and 5 are more rotations or digits of the same
   * groups, 2 the r62 group again, 7 no group again (forced) */
  TU_SAMPLED_IN(_i, 0, 4, 6);
  const struct mdcase *c = &mdcases[_i];
  const shape *s = &c->s;
  /* mode m: the first m steps of the moddowns batched (mdip: their
   * operands; mdintt: the inverse NTTs of P's rows; mdbconv: the
   * conversions) */
  static const char *const modes[] = {"mdip=0",    "mdintt=0,mdipk=16", "mdbconv=0,mdipk=16",
                                      "mdipk=16",  "mdipk=2",           "mdipk=1",
                                      ""};
  static const int per_kernel[] = {0, 16, 16, 16, 2, 1, 0}; /* 0 in the last: the default */
  enum { NMODES = 7 };
  env e;
  s7_env_init(&e, s->radix, s->m, s->logn, 0x1f0 + (uint64_t)_i);
  int kernels[NMODES];
  for (int mode = 0; mode < NMODES; mode++) {
    char plan[96];
    snprintf(plan, sizeof plan, "%s%s%s", modes[mode], c->extra && *modes[mode] ? "," : "",
             c->extra ? c->extra : "");
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", *plan ? plan : NULL), FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "mdgroup", s->special, s->alpha);
    fhjit_value k = key(&e, g, s, "k"), k2 = key(&e, g, s, "k2");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    fhjit_value a = poly(&e, g, s, "a", 2);
    int64_t ks[4] = {5, 2 * e.n - 1, 25, 125 % (2 * e.n)};
    fhjit_value keys[4] = {k, k2, k2, k}, res[4];
    ck_assert_int_eq(fhjit_ckks_rotate_hoisted(g, a, c->count, ks, keys, fwd, inv, res), FHJIT_OK);
    for (int r = 0; r < c->count; r++) {
      char name[16];
      snprintf(name, sizeof name, "h%d", r);
      out(&e, g, res[r], name);
    }
    counts n = plan_counts(&e, g);
    kernels[mode] = n.kernels;
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_ptr_nonnull(text);
    int grouped = mode > 0 && c->applies;
    ck_assert_msg(count_of(text, " at word ") == (grouped ? c->count - 1 : 0),
                  "case %d mode %d:\n%s", _i, mode, text);
    check_host(&e, g);
  }
  for (int mode = 1; mode < NMODES; mode++) {
    /* mdipk=k: the operands k rotations a kernel (into the one buffer),
     * ceil(count / k) kernels; the default k: r32 2, r62 1 (as measured) */
    int k = per_kernel[mode] ? per_kernel[mode] : s->radix == FHJIT_R32 ? 2 : 1;
    int ip_drop = c->count - (c->count + k - 1) / k;
    int drop = mode < 3 ? ip_drop + (mode - 1) * (c->count - 1) : ip_drop + 2 * (c->count - 1);
    ck_assert_msg(kernels[0] - kernels[mode] == (c->applies ? drop : 0),
                  "case %d mode %d: %d kernels against %d", _i, mode, kernels[mode], kernels[0]);
  }
  static const char *const bad[] = {"mdip=2", "mdintt=2", "mdbconv=-1", "mdipk=0", "mdipk=17"};
  for (int b = 0; b < 5; b++) {
    ck_assert_int_ne(fhjit_context_set_option(e.ctx, "ntt_plan", bad[b]), FHJIT_OK);
    ck_assert_ptr_nonnull(strstr(fhjit_last_error(e.ctx), bad[b]));
  }
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  s7_env_free(&e);
}
END_TEST

/* ipacc only for a left fold over the digits in their order: a key switch
 * built by hand (modup per digit, digit products against the key, moddown
 * of both components of their sum) with the sum in another association
 * keeps every digit's words ("slots") and is exact; a left fold in digit
 * order with the partial sum as either argument and add mixed with
 * add_lazy is accumulated (both modes exact). Variants (_i % 4): 0 the
 * digits summed in reverse order, 1 a right fold, 2 a balanced tree, 3
 * add_lazy(p_k, acc) and add(acc, p_k) alternating. Shapes (_i / 4): r62
 * dnum 4 (digits of 2), r32 dnum 7 (K = 1, digits of 1). */
START_TEST(test_ipacc_shapes) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): variants 3 (r62: the left
   * fold, accumulated and not) and 2 (r32: a tree, slots); variants 0
   * and 1 are other sums that keep slots, as 2 does */
  TU_SAMPLED_IN(_i, 3, 6);
  static const shape sh[2] = {{FHJIT_R62, 10, 2, 2, 6, 8, NULL}, {FHJIT_R32, 8, 1, 1, 5, 7, NULL}};
  const shape *s = &sh[_i / 4];
  int variant = _i % 4;
  env e;
  s7_env_init(&e, s->radix, s->m, s->logn, 0x1c0 + (uint64_t)_i);
  int K = s->special, l = s->rows, D = (l + s->alpha - 1) / s->alpha;
  for (int acc = 1; acc >= (variant == 3 ? 0 : 1); acc--) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", acc ? "ipfuse=1,ipacc=1" : "ipfuse=1"),
                     FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "ipacc", K, s->alpha);
    fhjit_value d = poly(&e, g, s, "d", 0), k = key(&e, g, s, "k");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    fhjit_value p[8];
    ck_assert_int_le(D, 8);
    for (int j = 0; j < D; j++) {
      int64_t dr = l - j * s->alpha < s->alpha ? l - j * s->alpha : s->alpha;
      char tn[24];
      snprintf(tn, sizeof tn, "uptab%d", j);
      fhjit_value tab = s7_table(g, tn, dr * (1 + l + K - dr));
      ck_assert_msg(tab >= 0, "%s", fhjit_last_error(e.ctx));
      fhjit_value u = fhjit_modup(g, d, j, fwd, inv, tab);
      ck_assert_msg(u >= 0, "%s", fhjit_last_error(e.ctx));
      p[j] = fhjit_keyswitch_digit_product(g, u, k, j, 0);
      ck_assert_msg(p[j] >= 0, "%s", fhjit_last_error(e.ctx));
    }
    fhjit_value sum = FHJIT_NO_VALUE;
    if (variant == 0) { /* ((p[D-1] + p[D-2]) + ...) + p[0] */
      sum = p[D - 1];
      for (int j = D - 2; j >= 0; j--) sum = fhjit_add_lazy(g, sum, p[j]);
    } else if (variant == 1) { /* p[0] + (p[1] + (... + p[D-1])) */
      sum = p[D - 1];
      for (int j = D - 2; j >= 0; j--) sum = fhjit_add_lazy(g, p[j], sum);
    } else if (variant == 2) { /* pairs, then pairs of pairs */
      fhjit_value lv[8];
      int n = D;
      for (int j = 0; j < n; j++) lv[j] = p[j];
      while (n > 1) {
        int m = 0;
        for (int j = 0; j < n; j += 2) lv[m++] = j + 1 < n ? fhjit_add_lazy(g, lv[j], lv[j + 1]) : lv[j];
        n = m;
      }
      sum = lv[0];
    } else { /* a left fold in digit order, the partial sum either argument */
      sum = p[0];
      for (int j = 1; j < D; j++) sum = j % 2 ? fhjit_add_lazy(g, p[j], sum) : fhjit_add(g, sum, p[j]);
    }
    fhjit_value md = s7_table(g, "md", K + K * l + l);
    out(&e, g, fhjit_moddown(g, sum, fwd, inv, md), "r");
    ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "bind: %s", fhjit_last_error(e.ctx));
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_msg(text != NULL, "%s", fhjit_last_error(e.ctx));
    char want[64];
    snprintf(want, sizeof want, "inner product of %d digits", D);
    ck_assert_msg(count_of(text, want) == 1, "variant %d:\n%s", variant, text);
    int accumulated = variant == 3 && acc;
    ck_assert_msg(count_of(text, ", accumulated: ") == accumulated, "variant %d:\n%s", variant, text);
    ck_assert_msg(count_of(text, ", slots") == !accumulated, "variant %d:\n%s", variant, text);
    check_host(&e, g);
  }
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  s7_env_free(&e);
}
END_TEST


/* ------------------------------------------------- moddown and rescale */

/* An input on Q ++ P (the shape's basis of Q, then P's chain positions). */
static fhjit_value poly_qp(env *e, fhjit_graph *g, const shape *s, const char *name, int comps) {
  int l = s->rows, K = s->special;
  fhjit_type t = tu_poly(comps, 0, NULL, l + K, e->n);
  t.domain = FHJIT_DOMAIN_NTT;
  t.form = FHJIT_FORM_MONT;
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_int_ge(v, 0);
  int32_t basis[S7_MAXM];
  for (int r = 0; r < l; r++) basis[r] = s->basis ? s->basis[r] : r;
  for (int k = 0; k < K; k++) basis[l + k] = s->m - K + k;
  ck_assert_int_eq(fhjit_input_basis(g, v, basis, l + K), FHJIT_OK);
  return v;
}

/* Moddown and rescale in one (mixsteps.c, mdrs_steps; ntt_plan key mdrs):
 * rescale(add(d, moddown(a))) as one forward NTT of moddown's converted
 * rows plus rescale's lift. Per shape (both radices, a short digit,
 * permuted bases, K = 3), one graph of HMult + relinearise + rescale and
 * three forms by hand: add_lazy with the moddown second (2 components), a
 * result computed from the rescale (add(rescale(add(md, y)), z), one
 * polynomial), and a moddown that is itself a result (not merged). Host
 * words against the interpreter in both modes (inputs with edge words:
 * fill); the plan names the merged loads 3 times (none with mdrs=0), one
 * forward NTT fewer per merge. */
static const int mdrs_shapes[] = {0, 1, 3, 4};
#define NMDRS 4
START_TEST(test_mdrs) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): shapes 1 (r32, a short
   * digit) and 4 (r62, K = 3, permuted) */
  TU_SAMPLED_IN(_i, 1, 3);
  const shape *s = &shapes[mdrs_shapes[_i]];
  env e;
  s7_env_init(&e, s->radix, s->m, s->logn, 0x1e0 + (uint64_t)_i);
  int K = s->special, l = s->rows, kernels[2];
  for (int mode = 0; mode < 2; mode++) {
    ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", mode ? NULL : "mdrs=0"), FHJIT_OK);
    fhjit_graph *g = s7_graph(&e, "mdrs", K, s->alpha);
    fhjit_value a = poly(&e, g, s, "a", 2), b = poly(&e, g, s, "b", 2), k = key(&e, g, s, "k");
    fhjit_value fwd = s7_twiddles(&e, g, "fwd"), inv = s7_twiddles(&e, g, "inv");
    out(&e, g, fhjit_ckks_mul_relin_rescale(g, a, b, k, fwd, inv), "hmult");
    fhjit_value md = s7_table(g, "md", K + K * l + l), rs = s7_table(g, "rs", l - 1);
    fhjit_value a2 = poly_qp(&e, g, s, "a2", 2), y2 = poly(&e, g, s, "y2", 2);
    fhjit_value m2 = fhjit_moddown(g, a2, fwd, inv, md);
    out(&e, g, fhjit_rescale(g, fhjit_add_lazy(g, y2, m2), fwd, inv, rs), "r1");
    fhjit_value a1 = poly_qp(&e, g, s, "a1", 0), y1 = poly(&e, g, s, "y1", 0);
    fhjit_value z = fhjit_rows(g, poly(&e, g, s, "z", 0), 0, l - 1);
    fhjit_value m1 = fhjit_moddown(g, a1, fwd, inv, md);
    fhjit_value r2 = fhjit_rescale(g, fhjit_add(g, m1, y1), fwd, inv, rs);
    out(&e, g, fhjit_add(g, r2, z), "r2");
    fhjit_value m3 = fhjit_moddown(g, poly_qp(&e, g, s, "a3", 0), fwd, inv, md);
    out(&e, g, m3, "md3");
    out(&e, g, fhjit_rescale(g, fhjit_add(g, m3, y1), fwd, inv, rs), "r3");
    kernels[mode] = plan_counts(&e, g).kernels;
    const char *text = fhjit_emit(g, FHJIT_EMIT_PLAN, "sm_90");
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(count_of(text, "the prologue's word plus the lift") == (mode ? 3 : 0),
                  "shape %d mode %d:\n%s", _i, mode, text);
    check_host(&e, g);
  }
  /* per merge one forward NTT fewer, and the last row's inverse NTT (its
   * rows in P's) replaced by one pointwise kernel: 1 kernel fewer where an
   * NTT is one kernel, 3 where it is two */
  int drop = kernels[0] - kernels[1];
  ck_assert_msg(drop == 3 || drop == 9, "shape %d: %d kernels against %d", _i, kernels[1],
                kernels[0]);
  ck_assert_int_ne(fhjit_context_set_option(e.ctx, "ntt_plan", "mdrs=2"), FHJIT_OK);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(e.ctx), "mdrs=2"));
  ck_assert_int_eq(fhjit_context_set_option(e.ctx, "ntt_plan", NULL), FHJIT_OK);
  s7_env_free(&e);
}
END_TEST

Suite *ks_fusion_suite(void) {
  Suite *s = suite_create("ks_fusion");
  /* every operation on the host against the interpreter: the longest
   * case (ctest runs each case as a test of its own, test/CMakeLists.txt) */
  TCase *o = tcase_create("operations");
  tcase_set_timeout(o, 600);
  tcase_add_loop_test(o, test_operations_host, 0, NSHAPES);
  suite_add_tcase(s, o);
  TCase *t = tcase_create("fusion");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, test_plans);
  tcase_add_loop_test(t, test_plans_bytes_rule, 0, 2);
  tcase_add_loop_test(t, test_plans_digitfwd, 0, 2);
  tcase_add_loop_test(t, test_shared_intt, 0, 2);
  tcase_add_loop_test(t, test_ipfuse, 0, NIPCASES);
  tcase_add_loop_test(t, test_ipfuse_not, 0, 2);
  tcase_add_loop_test(t, test_bcrev, 0, 2);
  tcase_add_loop_test(t, test_ipsync, 0, 6);
  tcase_add_loop_test(t, test_convsync, 0, 5);
  tcase_add_loop_test(t, test_ipacc_shapes, 0, 8);
  tcase_add_loop_test(t, test_bconv_batch, 0, 2 * NIPCASES);
  suite_add_tcase(s, t);
  /* a case of its own (CK_RUN_CASE=mdgroup runs it alone) */
  TCase *m = tcase_create("mdgroup");
  tcase_set_timeout(m, 600);
  tcase_add_loop_test(m, test_md_group, 0, NMDCASES);
  /* a case of its own (CK_RUN_CASE=mdrs runs it alone) */
  TCase *r = tcase_create("mdrs");
  tcase_set_timeout(r, 600);
  tcase_add_loop_test(r, test_mdrs, 0, NMDRS);
  suite_add_tcase(s, r);
  suite_add_tcase(s, m);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(ks_fusion_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
