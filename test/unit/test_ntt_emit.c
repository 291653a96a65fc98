/* test_ntt_emit.c: the generated NTT kernels (lib/lower/ntt_emit.c) run on
 * the host through the JIT, bit for bit against the reference of
 * lib/ir/ntt_ref.c (itself checked against direct evaluation in
 * test_ntt_ref.c): all four transforms, both radices, N = 2^4 .. 2^17,
 * several rows and batches, moduli near each radix limit and far below,
 * random and edge inputs. Also the plans' invariants, and that the GPU
 * module builds, verifies and yields PTX with shared memory, bar.sync and
 * mul.hi. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ntt.h"
#include "lower/ntt.h"
#include "nttcheck.h"
#include "ptxeval.h"
#include "testutil.h"

/* Moduli (q = 1 mod 2^18) for rows: near the limit, far below, between. */
static void moduli_for(fhjit_radix radix, int rows, uint64_t *q) {
  const uint64_t m18 = UINT64_C(1) << 18;
  int near_bits = radix == FHJIT_R32 ? 30 : 60;
  int far_bits = radix == FHJIT_R32 ? 20 : 22;
  int mid_bits = radix == FHJIT_R32 ? 26 : 45;
  uint64_t p[2];
  for (int r = 0; r < rows; r++) {
    int which = r % 4;
    int bits = which == 0 ? near_bits : which == 1 ? far_bits : which == 2 ? mid_bits : near_bits;
    ck_assert_int_eq(fhjit_find_primes(NULL, bits, m18, which == 3 ? 2 : 1, p), FHJIT_OK);
    q[r] = which == 3 ? p[1] : p[0];
  }
}

/* Runs one configuration on the host and compares with the reference
 * (nttcheck.h). */
static void check_config_tuned(fhjit_radix radix, ir_ntt_kind kind, int logn, int rows, int batch,
                               uint64_t seed, int input_pattern, const lw_ntt_tuning *tuning) {
  fhjit_context *ctx = fhjit_context_create();
  uint64_t q[NTTCHECK_MAXROWS];
  ck_assert_int_le(rows, NTTCHECK_MAXROWS);
  moduli_for(radix, rows, q);
  nttcheck c;
  nttcheck_init(&c, ctx, radix, kind, logn, rows, batch, q);
  nttcheck_fill(&c, &seed, input_pattern);

  lw_ntt_plan plan;
  if (tuning)
    ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, radix, kind, logn, rows, c.brows, tuning, &plan), FHJIT_OK);
  else
    ck_assert_int_eq(lw_ntt_plan_make(ctx, radix, kind, logn, rows, c.brows, &plan), FHJIT_OK);
  nttcheck_run(&c, &plan);
  nttcheck_free(&c);
  fhjit_context_destroy(ctx);
}

static void check_config(fhjit_radix radix, ir_ntt_kind kind, int logn, int rows, int batch,
                         uint64_t seed, int input_pattern) {
  check_config_tuned(radix, kind, logn, rows, batch, seed, input_pattern, NULL);
}

/* _i = logN - 4 + 14 * radix: every kind; rows and batches shrink with N. */
START_TEST(test_host_vs_reference) {
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): r32 at 2^4 (one kernel, 3
   * rows, batch 4) and 2^13 (the first two-kernel size, batch 2), r62 at
   * 2^12 (the largest one-kernel size) and 2^17 (the largest, batch 1),
   * every kind in each; the sizes between run the same plans */
  TU_SAMPLED_IN(_i, 0, 9, 22, 27);
  fhjit_radix radix = _i >= 14 ? FHJIT_R62 : FHJIT_R32;
  int logn = 4 + _i % 14;
  for (int kind = 0; kind < IR_NTT_NUM_KINDS; kind++) {
    int rows = logn <= 12 ? 3 : 2, batch = logn <= 10 ? 4 : logn <= 14 ? 2 : 1;
    check_config(radix, (ir_ntt_kind)kind, logn, rows, batch, 1000 + (uint64_t)_i * 4 + (uint64_t)kind,
                 kind % 3);
  }
}
END_TEST

/* Odd and prime row counts (whole-row blocks then hold one row), and one
 * row, for the one-kernel sizes. */
START_TEST(test_odd_rows) {
  TU_SAMPLED(_i); /* sampled (testutil.h): r32 2^4, r62 2^8 */
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = 4 + (_i >> 1) * 4; /* 4, 8, 12 */
  check_config(radix, IR_NTT_STD_TO_NTT, logn, 1, 1, 77 + (uint64_t)_i, 0);
  check_config(radix, IR_NTT_TO_STD, logn, 3, 1, 78 + (uint64_t)_i, 1);
  check_config(radix, IR_NTT_TO_MONT, logn, 1, 5, 79 + (uint64_t)_i, 2);
}
END_TEST

/* Random schedules (the space FHJIT_NTT_PLAN and ntt_bench --sweep choose
 * from): every plan the planner accepts is bit for bit the reference. */
START_TEST(test_tuned_random) {
  TU_SAMPLED(_i); /* sampled (testutil.h): 5 of the 14 seeds */
  uint64_t seed = 0x7a11 + (uint64_t)_i * 7919;
  int ran = 0;
  for (int attempt = 0; attempt < 200 && ran < 3; attempt++) {
    fhjit_radix radix = tu_below(&seed, 2) ? FHJIT_R62 : FHJIT_R32;
    int logn = 4 + (int)tu_below(&seed, 12); /* 2^4 .. 2^15 */
    ir_ntt_kind kind = (ir_ntt_kind)tu_below(&seed, IR_NTT_NUM_KINDS);
    lw_ntt_tuning t;
    lw_ntt_tuning_default(&t);
    if (tu_below(&seed, 3)) t.one = 3 + (int)tu_below(&seed, 11);
    if (tu_below(&seed, 2)) t.n1 = 1 + (int)tu_below(&seed, (uint64_t)logn - 1);
    if (tu_below(&seed, 2)) t.e_one = 1 + (int)tu_below(&seed, LW_NTT_MAX_LOG_E);
    if (tu_below(&seed, 2)) t.e_col = 1 + (int)tu_below(&seed, LW_NTT_MAX_LOG_E);
    if (tu_below(&seed, 2)) t.e_chunk = 1 + (int)tu_below(&seed, LW_NTT_MAX_LOG_E);
    if (tu_below(&seed, 2)) t.c_col = (int)tu_below(&seed, 7);
    if (tu_below(&seed, 2)) t.t_one = 5 + (int)tu_below(&seed, 6);
    if (tu_below(&seed, 2)) t.t_chunk = 5 + (int)tu_below(&seed, 6);
    if (tu_below(&seed, 2)) t.pad_col = (int)tu_below(&seed, 7);
    if (tu_below(&seed, 2)) t.pad_chunk = (int)tu_below(&seed, 7);
    if (tu_below(&seed, 2)) t.tws = (int)tu_below(&seed, 3);
    if (tu_below(&seed, 2)) t.shoup = (int)tu_below(&seed, 3);
    if (tu_below(&seed, 3) == 0) t.tail = 0;
    int rows = 1 + (int)tu_below(&seed, 3), batch = logn <= 12 ? 1 + (int)tu_below(&seed, 3) : 1;
    lw_ntt_plan p;
    if (lw_ntt_plan_make_tuned(NULL, radix, kind, logn, rows, (int64_t)rows * batch, &t, &p) != FHJIT_OK)
      continue;
    check_config_tuned(radix, kind, logn, rows, batch, seed, (int)tu_below(&seed, 3), &t);
    ran++;
  }
  ck_assert_int_eq(ran, 3);
}
END_TEST

/* The sweep's kinds of plans at the sizes the GPU runs (ntt_bench's grid):
 * two kernels at 2^12, small column blocks, padding, other splits, shared
 * twiddle constants (column kernels, all kernels, one kernel), 32 words per
 * thread, a launch bound on one kernel. */
START_TEST(test_tuned_grid) {
  static const char *const plans[] = {
      "one=11,c_col=2,t=6", "one=11,e=2,c_col=2,t=6,n1=5", "c_col=2,t=7,pad_col=4",
      "e=4,c_col=3,pad_chunk=0", "e=2,c_col=3,t=7,n1=7", "c_col=3,pad_col=5,minb=3",
      "tws=2,c_col=3,t=7,n1=7,shoup=1", "tws=1,e=4,c_col=4,shoup=2", "one=12,tws=2,shoup=1",
      "e=5,c_col=4,t=7,tws=1,minb_col=8", "tws=2,e_col=5,t=7,minb_chunk=4,early=1,shoup=1", "one=12,tws=2,e=4,shoup=2"};
  int which = _i % 12;
  fhjit_radix radix = _i >= 12 ? FHJIT_R32 : FHJIT_R62;
  /* sampled (FHJIT_TEST_SAMPLE, testutil.h): each plan once, the even
   * ones at r62 and the odd ones at r32 (all four kinds still) */
  if (tu_sampling() && (which + _i / 12) % 2) return;
  int logn = which < 2 || which == 8 || which == 11 ? 12 : 16;
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  ck_assert_int_eq(lw_ntt_tuning_parse(NULL, plans[which], &t), FHJIT_OK);
  ir_ntt_kind kind = (ir_ntt_kind)(_i % IR_NTT_NUM_KINDS);
  check_config_tuned(radix, kind, logn, logn == 12 ? 3 : 1, logn == 12 ? 2 : 1, 4242 + (uint64_t)_i, _i % 3,
                     &t);
}
END_TEST

/* r32 twiddles as products of two table entries (ntt_plan twsplit,
 * ntt_emit_phase.c split_twiddle) against the reference: every kind, one
 * and two kernels, global twiddles in column and chunk kernels (tws=0),
 * with and without the tail stages, splits from 1 bit (every entry a
 * product) to past N (none), up to 2^17, and with a stage's twiddles as
 * vectors (twvec, vector_twiddles: alone, and with the split, including
 * runs longer than 2^U, which fall back to words); each plan states its
 * split. r62 plans never take the split (its tables may be lazy, SPEC 5). */
START_TEST(test_twsplit) {
  static const struct {
    int logn, split;
    const char *plan;
  } cases[] = {{10, 3, "twsplit=3,tws=0"},        {12, 5, "one=12,twsplit=5,tws=0,twvec=1"},
               {13, 1, "twsplit=1,tws=0,e=2"},    {14, 9, "twsplit=9,tail=0,twvec=1"},
               {16, 12, "twsplit=12"},            {16, 16, "twsplit=16,tws=0,twvec=1"},
               {17, 12, "twsplit=12,tws=0,twvec=1"}, {15, 8, "twsplit=8,e_chunk=3"},
               {16, 0, "twsplit=0,twvec=1,tws=0"}, {13, 2, "twsplit=2,twvec=1,e=5"}};
  int c = _i / IR_NTT_NUM_KINDS;
  ir_ntt_kind kind = (ir_ntt_kind)(_i % IR_NTT_NUM_KINDS);
  /* sampled (testutil.h): each case up to 2^15 once, its kind rotating,
   * and the 2^16 default split (the larger sizes are the Debug stage's:
   * under ASan a 2^17 host transform takes most of a minute) */
  if (tu_sampling() && ((int)kind != c % IR_NTT_NUM_KINDS || (cases[c].logn > 15 && c != 4))) return;
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  ck_assert_int_eq(lw_ntt_tuning_parse(NULL, cases[c].plan, &t), FHJIT_OK);
  lw_ntt_plan p;
  ck_assert_int_eq(lw_ntt_plan_make_tuned(NULL, FHJIT_R32, kind, cases[c].logn, 2, 2, &t, &p), FHJIT_OK);
  for (int j = 0; j < p.nkernels; j++) ck_assert_int_eq(p.k[j].twsplit, cases[c].split);
  /* (e=5 is too much for r62's registers: that plan is refused there) */
  if (c != 9) {
    ck_assert_int_eq(lw_ntt_plan_make_tuned(NULL, FHJIT_R62, kind, cases[c].logn, 2, 2, &t, &p), FHJIT_OK);
    for (int j = 0; j < p.nkernels; j++) ck_assert_int_eq(p.k[j].twsplit, 0);
  }
  check_config_tuned(FHJIT_R32, kind, cases[c].logn, 2, 1, 9191 + (uint64_t)_i, _i % 3, &t);
}
END_TEST

/* The measured defaults of twsplit (ntt_plan.c): r32 2^16 inverse and
 * 2^17 both directions at 12, r32 2^16 forward, 2^14, r62 and the cluster
 * schedule without; twvec at r32 2^16 and 2^17 (two kernels). */
START_TEST(test_twsplit_defaults) {
  fhjit_context *ctx = fhjit_context_create();
  static const struct {
    fhjit_radix radix;
    ir_ntt_kind kind;
    int logn, split;
  } cases[] = {{FHJIT_R32, IR_NTT_TO_MONT, 16, 12}, {FHJIT_R32, IR_NTT_MONT_TO_NTT, 16, 0},
               {FHJIT_R32, IR_NTT_MONT_TO_NTT, 17, 12}, {FHJIT_R32, IR_NTT_TO_STD, 17, 12},
               {FHJIT_R32, IR_NTT_TO_MONT, 14, 0},      {FHJIT_R62, IR_NTT_TO_MONT, 16, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    lw_ntt_plan p;
    ck_assert_int_eq(lw_ntt_plan_make(ctx, cases[c].radix, cases[c].kind, cases[c].logn, 64, 64, &p), FHJIT_OK);
    ck_assert_int_eq(p.nkernels, 2);
    for (int j = 0; j < 2; j++) {
      ck_assert_msg(p.k[j].twsplit == cases[c].split, "case %d", (int)c);
      /* twvec with the measured r32 2^16 and 2^17 plans */
      ck_assert_int_eq(p.k[j].twvec, cases[c].radix == FHJIT_R32 && cases[c].logn >= 16);
    }
  }
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", "cluster"), FHJIT_OK);
  lw_ntt_plan p;
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_TO_MONT, 16, 64, 64, &p), FHJIT_OK);
  ck_assert(p.nkernels == 1 && p.k[0].cluster && p.k[0].twsplit == 0);
  fhjit_context_destroy(ctx);
}
END_TEST

/* Plans of more than 8 passes in a kernel (one stage a pass: 2 words per
 * thread), which once wrote past the plan's pass arrays and gave wrong
 * words for r62 2^16 with e=1 (chunk kernels of 9 and 10 passes): each
 * pass count from 9 to 11 against the reference, and the kernel's count
 * stated, so that a planner that merges passes does not hide the case. */
START_TEST(test_many_passes) {
  static const struct {
    fhjit_radix radix;
    int logn, npass;
    const char *plan;
  } cases[] = {{FHJIT_R62, 16, 10, "e=1,n1=6"},
               {FHJIT_R62, 17, 11, "e_chunk=1,n1=6"},
               {FHJIT_R32, 17, 9, "e_col=1,n1=9,c_col=0"}};
  int c = _i % 3;
  ir_ntt_kind kind = (ir_ntt_kind)(_i % IR_NTT_NUM_KINDS);
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  ck_assert_int_eq(lw_ntt_tuning_parse(NULL, cases[c].plan, &t), FHJIT_OK);
  lw_ntt_plan p;
  ck_assert_int_eq(lw_ntt_plan_make_tuned(NULL, cases[c].radix, kind, cases[c].logn, 1, 1, &t, &p), FHJIT_OK);
  int most = 0;
  for (int j = 0; j < p.nkernels; j++) most = p.k[j].npass > most ? p.k[j].npass : most;
  ck_assert_int_eq(most, cases[c].npass);
  check_config_tuned(cases[c].radix, kind, cases[c].logn, 1, 1, 7070 + (uint64_t)_i, _i % 3, &t);
}
END_TEST

/* The block order (lw_ntt_plan.pminor, ntt_emit.c block_order): both
 * orders against the reference at two-kernel sizes with several
 * polynomials (3 rows of 3 and 5 polynomials: the map divides by the
 * polynomial count), so that a block run twice or never shows. */
START_TEST(test_block_order) {
  TU_SAMPLED(_i); /* sampled (testutil.h): both radices, orders and sizes */
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  ck_assert_int_eq(lw_ntt_tuning_parse(NULL, _i & 2 ? "pminor=1" : "pminor=0", &t), FHJIT_OK);
  ck_assert_int_eq(t.pminor, (_i & 2) >> 1);
  int logn = _i & 4 ? 16 : 13;
  ir_ntt_kind kind = (ir_ntt_kind)(_i % IR_NTT_NUM_KINDS);
  check_config_tuned(radix, kind, logn, 3, _i & 4 ? 3 : 5, 5150 + (uint64_t)_i, _i % 3, &t);
}
END_TEST

/* The reduce kernel's register bound (minb_red, lw_ntt_plan.reduce_minb):
 * r32 2^16's measured default 6 (with 3 digits' words in shared memory)
 * replaces the chunk kernel's minb 6 only in the reduce kernel; the key
 * overrides it; without it (r62) the reduce kernel keeps the chunk
 * kernel's. */
START_TEST(test_reduce_minb) {
  fhjit_context *ctx = fhjit_context_create();
  lw_ntt_plan p;
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 16, 48, 192, &p), FHJIT_OK);
  ck_assert_int_eq(p.nkernels, 2);
  ck_assert_int_eq(p.k[1].minb, 6);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "minb_chunk=5"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 16, 48, 192, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[1].minb, 5);
  lw_ntt_plan_reduce(&p, 4, 60, 0);
  ck_assert_int_eq(p.k[1].minb, 6);
  ck_assert_int_eq(p.k[0].minb, 6);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "minb_red=3"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 16, 48, 192, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[1].minb, 6);
  lw_ntt_plan_reduce(&p, 4, 60, 0);
  ck_assert_int_eq(p.k[1].minb, 3);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "minb_chunk=2"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, 35, 175, &p), FHJIT_OK);
  lw_ntt_plan_reduce(&p, 5, 40, 0);
  ck_assert_int_eq(p.k[1].minb, 2);
  fhjit_context_destroy(ctx);
}
END_TEST

/* The reduce kernel's shared slots (ipsmem, lw_ntt_plan.reduce_smem):
 * the measured defaults at 2^16, r32 3 and r62 1, none elsewhere; the
 * key's count, but never the last member's, never
 * with ipacc (no slots), and only as many as fit the 48 KB of static
 * shared memory beside the body (r32 2^16: 8448 bytes of body, 8 KB a
 * member, so 4 of 8; r62 2^16: 4 KB a member, all 6 but the last). */
START_TEST(test_reduce_smem) {
  fhjit_context *ctx = fhjit_context_create();
  lw_ntt_plan p;
  static const struct {
    const char *plan;
    fhjit_radix radix;
    int members, acc, want;
  } cases[] = {{"", FHJIT_R32, 4, 0, 3},          {"ipsmem=2", FHJIT_R32, 4, 0, 2},
               {"ipsmem=0", FHJIT_R32, 4, 0, 0},  {"", FHJIT_R62, 7, 0, 1},
               {"ipsmem=16", FHJIT_R32, 4, 0, 3}, {"ipsmem=16", FHJIT_R32, 8, 0, 4},
               {"ipsmem=3", FHJIT_R32, 4, 1, 0},  {"ipsmem=1", FHJIT_R32, 1, 0, 0},
               {"ipsmem=16", FHJIT_R62, 7, 0, 6}, {"ipsmem=0", FHJIT_R62, 7, 0, 0},
               {"", FHJIT_R62, 2, 0, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", cases[i].plan), FHJIT_OK);
    int r32 = cases[i].radix == FHJIT_R32;
    ck_assert_int_eq(lw_ntt_plan_make(ctx, cases[i].radix, IR_NTT_MONT_TO_NTT, 16, r32 ? 48 : 35,
                                      (r32 ? 48 : 35) * cases[i].members, &p),
                     FHJIT_OK);
    lw_ntt_plan_reduce(&p, cases[i].members, 60, cases[i].acc);
    ck_assert_msg(p.reduce_smem == cases[i].want, "%s, %d members: %d shared slots, want %d",
                  cases[i].plan, cases[i].members, p.reduce_smem, cases[i].want);
    const lw_ntt_kplan *k = &p.k[p.nkernels - 1];
    ck_assert_int_le(((int64_t)k->smem_words + ((int64_t)p.reduce_smem << (k->log_c + k->m))) * (r32 ? 4 : 8),
                     49152);
  }
  fhjit_context_destroy(ctx);
}
END_TEST

/* Small batches' plans (batch_plans in ntt_plan.c): r32 2^16 with 20 to
 * 28 batch rows takes 8 words per thread and 16 columns per column block,
 * other batches and sizes keep their plans, rowplans=0 turns it off; the
 * plan (over r32 2^16's default) is bit-exact on 24 rows. */
START_TEST(test_batch_plans) {
  fhjit_context *ctx = fhjit_context_create();
  lw_ntt_plan p;
  static const struct {
    int64_t rows, brows;
    int small;
  } cases[] = {{12, 24, 1}, {20, 20, 1}, {4, 28, 1}, {16, 16, 0}, {19, 19, 0}, {29, 29, 0}, {32, 32, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int kind = 0; kind < IR_NTT_NUM_KINDS; kind++) {
      ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, (ir_ntt_kind)kind, 16, cases[i].rows, cases[i].brows, &p),
                       FHJIT_OK);
      const lw_ntt_kplan *col = p.k[0].cols ? &p.k[0] : &p.k[1], *chunk = p.k[0].cols ? &p.k[1] : &p.k[0];
      ck_assert_int_eq(p.nkernels, 2);
      ck_assert_int_eq(col->log_e, cases[i].small ? 3 : 4);
      ck_assert_int_eq(chunk->log_e, cases[i].small ? 3 : 4);
      ck_assert_int_eq(col->log_c, cases[i].small ? 4 : 5);
    }
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, 12, 24, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[0].log_e, 3); /* r62's own default */
  ck_assert_int_eq(p.k[0].log_c, 4);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 17, 12, 24, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[0].log_e, 4);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "rowplans=0"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 16, 12, 24, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[0].log_e, 4);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "rowplans=2"), FHJIT_ERR_ARGUMENT);
  /* a key of the caller's wins over the batch plan's */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "e=2"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 16, 12, 24, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[0].log_e, 2);
  ck_assert_int_eq(p.k[0].log_c, 4);
  fhjit_context_destroy(ctx);
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  ck_assert_int_eq(lw_ntt_tuning_parse(NULL, "n1=7,c_col=5,t=7,tws=1,minb=6,early=1,e=3,c_col=4", &t), FHJIT_OK);
  check_config_tuned(FHJIT_R32, (ir_ntt_kind)_i, 16, 8, 3, 0x2424 + (uint64_t)_i, _i % 3, &t);
}
END_TEST

/* FHJIT_NTT_PLAN's syntax: items, ranges, refusals with a message; and the
 * planner's limits (threads, shared memory, the split). */
START_TEST(test_tuning_parse) {
  fhjit_context *ctx = fhjit_context_create();
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  ck_assert_int_eq(lw_ntt_tuning_parse(ctx, "e=2, c_col=3,pad=0,t_chunk=7,one=11,n1=9,minb=2,tws=2", &t), FHJIT_OK);
  ck_assert_int_eq(t.e_one, 2);
  ck_assert_int_eq(t.e_col, 2);
  ck_assert_int_eq(t.e_chunk, 2);
  ck_assert_int_eq(t.c_col, 3);
  ck_assert_int_eq(t.pad_col, 0);
  ck_assert_int_eq(t.pad_chunk, 0);
  ck_assert_int_eq(t.t_chunk, 7);
  ck_assert_int_eq(t.t_one, -1);
  ck_assert_int_eq(t.one, 11);
  ck_assert_int_eq(t.n1, 9);
  ck_assert_int_eq(t.minb, 2);
  ck_assert_int_eq(t.minb_col, 2);
  ck_assert_int_eq(t.minb_chunk, 2);
  ck_assert_int_eq(t.tws, 2);
  ck_assert_int_eq(lw_ntt_tuning_parse(ctx, "minb_col=5,e_col=5", &t), FHJIT_OK);
  ck_assert_int_eq(t.minb_col, 5);
  ck_assert_int_eq(t.minb_chunk, 2);
  ck_assert_int_eq(t.e_col, 5);
  ck_assert_int_eq(lw_ntt_tuning_parse(ctx, "", &t), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_tuning_parse(ctx, NULL, &t), FHJIT_OK);
  static const char *const bad[] = {"e=6", "e=0", "minb_col=33", "bogus=1", "e", "e=", "e=2x", "c_col=-1", "t=4", "one=18", "tws=3", "shoup=3", "tail=2", "twpf=-1", "l2pf=2", "pminor=2", "minb_red=0", "minb_red=33", "ipsmem=17", "ipsmem=-1", "twsplit=17", "twsplit=-1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lw_ntt_tuning u;
    lw_ntt_tuning_default(&u);
    ck_assert_int_eq(lw_ntt_tuning_parse(ctx, bad[i], &u), FHJIT_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "FHJIT_NTT_PLAN"));
    ck_assert_int_eq(u.e_one, -1); /* nothing before the bad item changed */
  }
  lw_ntt_plan p;
  lw_ntt_tuning_default(&t);
  t.n1 = 16; /* no split of 2^16 */
  ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, 1, 1, &t, &p),
                   FHJIT_ERR_ARGUMENT);
  lw_ntt_tuning_default(&t);
  t.one = 13; /* a 2^13 r62 row does not fit in 48 KiB of shared memory */
  ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 13, 1, 1, &t, &p),
                   FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 13, 1, 1, &t, &p), FHJIT_OK);
  ck_assert_int_eq(p.nkernels, 1);
  lw_ntt_tuning_default(&t);
  t.c_col = 6; /* 64 columns x 256 words x 8 bytes */
  ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, 1, 1, &t, &p),
                   FHJIT_ERR_ARGUMENT);
  /* defaults through the environment */
  setenv("FHJIT_NTT_PLAN", "one=11,c_col=2", 1);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 12, 1, 32, &p), FHJIT_OK);
  ck_assert_int_eq(p.nkernels, 2);
  ck_assert_int_eq(p.k[0].cols, 1);
  ck_assert_int_eq(p.k[0].log_c, 2);
  ck_assert_int_eq(p.k[0].blocks, 32 * 64 / 4);
  setenv("FHJIT_NTT_PLAN", "c_col=x", 1);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 12, 1, 32, &p), FHJIT_ERR_ARGUMENT);
  unsetenv("FHJIT_NTT_PLAN");
  fhjit_context_destroy(ctx);
}
END_TEST

/* Default plans: passes cover every bit once, limits, grid. With 4096
 * batch rows N <= 2^12 runs as one kernel; with 32, N from 2^10 to 2^12 is
 * split into two kernels so that the grid fills the GPU. */
START_TEST(test_plans) {
  for (int few = 0; few < 2; few++)
  for (int radix = 0; radix < 2; radix++)
    for (int logn = IR_NTT_MIN_LOG; logn <= IR_NTT_MAX_LOG; logn++)
      for (int kind = 0; kind < IR_NTT_NUM_KINDS; kind++) {
        lw_ntt_plan p;
        int64_t brows = few ? 32 : 4096;
        ck_assert_int_eq(lw_ntt_plan_make(NULL, (fhjit_radix)radix, (ir_ntt_kind)kind, logn, 4, brows, &p),
                         FHJIT_OK);
        ck_assert_int_eq(p.nkernels, logn <= 12 && !(few && logn >= 10) ? 1 : 2);
        if (few && logn >= 10 && logn <= 12)
          for (int j = 0; j < 2; j++) ck_assert_int_ge(p.k[j].blocks, (INT64_C(1) << (logn - 5)));
        int total_bits = 0;
        for (int j = 0; j < p.nkernels; j++) {
          const lw_ntt_kplan *k = &p.k[j];
          /* the tail's stages (staged vectors: r62 1, r32 2 at most) and
           * the passes cover the local bits once each */
          ck_assert_int_le(k->tail, radix ? 1 : 2);
          if (k->tail) ck_assert_int_eq(k->cols, 0);
          int covered = (1 << k->tail) - 1;
          for (int s = 0; s < k->npass; s++) {
            ck_assert_int_ge(k->pass_e[s], 1);
            ck_assert_int_le(k->pass_e[s], k->log_e);
            for (int bit = k->pass_b[s]; bit < k->pass_b[s] + k->pass_e[s]; bit++) {
              ck_assert_int_eq((covered >> bit) & 1, 0);
              covered |= 1 << bit;
            }
          }
          ck_assert_int_eq(covered, (1 << k->m) - 1);
          total_bits += k->m;
          ck_assert_uint_le(k->threads, 1024);
          ck_assert_uint_le(k->smem_words * (radix ? 8u : 4u), 48u * 1024u);
          ck_assert_int_eq(k->blocks * (INT64_C(1) << k->log_c), brows << k->log_subs);
        }
        ck_assert_int_eq(total_bits, logn);
      }
  /* the tail: r62 2^16's chunk kernel (M = 2^10, 8 words per thread) runs
   * passes of 3 + 3 + 3 stages and the 1 left in its staged copy, r32
   * 2^17's (M = 2^10, 16 words) 4 + 4 and 2; tail=0 keeps the short pass */
  for (int fwd = 0; fwd < 2; fwd++) {
    ir_ntt_kind kind = fwd ? IR_NTT_MONT_TO_NTT : IR_NTT_TO_MONT;
    lw_ntt_plan p;
    lw_ntt_tuning t;
    lw_ntt_tuning_default(&t);
    ck_assert_int_eq(lw_ntt_tuning_parse(NULL, "n1=6,e_col=3", &t), FHJIT_OK);
    ck_assert_int_eq(lw_ntt_plan_make_tuned(NULL, FHJIT_R62, kind, 16, 32, 32, &t, &p), FHJIT_OK);
    const lw_ntt_kplan *chunk = &p.k[fwd ? 1 : 0];
    ck_assert(!chunk->cols && chunk->m == 10 && chunk->tail == 1 && chunk->npass == 3);
    ck_assert_int_eq(p.k[fwd ? 0 : 1].tail, 0);
    /* r62 2^16's defaults: the inverse as above; the forward (its own
     * plan: forward_plans) 4 + 3 column stages, 3 + 3 + 3 chunk stages */
    ck_assert_int_eq(lw_ntt_plan_make(NULL, FHJIT_R62, kind, 16, 32, 32, &p), FHJIT_OK);
    chunk = &p.k[fwd ? 1 : 0];
    ck_assert_int_eq(chunk->m, fwd ? 9 : 10);
    ck_assert_int_eq(chunk->tail, fwd ? 0 : 1);
    ck_assert_int_eq(p.k[fwd ? 0 : 1].npass, 2);
    ck_assert_int_eq(p.k[fwd ? 0 : 1].log_e, fwd ? 4 : 3);
    /* the forward's chunk kernel: one chunk of 2^9 (64 threads) per block */
    ck_assert_int_eq(chunk->threads, fwd ? 64 : 128);
    ck_assert_int_eq(chunk->log_c, 0);
    /* 2^17: the forward's column kernel takes 16 columns per block, so
     * 1024 blocks at 32 rows; with 16 rows they would be 512, and the
     * shared plan (8 words per thread) stays */
    for (int64_t rows = 16; rows <= 32; rows *= 2) {
      ck_assert_int_eq(lw_ntt_plan_make(NULL, FHJIT_R62, kind, 17, rows, rows, &p), FHJIT_OK);
      const lw_ntt_kplan *col = &p.k[fwd ? 0 : 1];
      int own = fwd && rows == 32;
      ck_assert_int_eq(col->log_e, own ? 4 : 3);
      ck_assert_int_eq(col->log_c, own ? 4 : 3);
      if (own) ck_assert_int_eq(col->blocks, 1024);
    }
    ck_assert_int_eq(lw_ntt_plan_make(NULL, FHJIT_R32, kind, 17, 64, 64, &p), FHJIT_OK);
    chunk = &p.k[fwd ? 1 : 0];
    ck_assert(!chunk->cols && chunk->m == 10 && chunk->tail == 2 && chunk->npass == 2);
    lw_ntt_tuning_default(&t);
    ck_assert_int_eq(lw_ntt_tuning_parse(NULL, "n1=7,tail=0", &t), FHJIT_OK);
    ck_assert_int_eq(lw_ntt_plan_make_tuned(NULL, FHJIT_R32, kind, 17, 64, 64, &t, &p), FHJIT_OK);
    chunk = &p.k[fwd ? 1 : 0];
    ck_assert(chunk->tail == 0 && chunk->npass == 3);
  }
  /* twpf: r62 2^14's forward (chunks of 2^7, 4 words per thread, passes
   * 2 + 2 + 2 and the tail) prefetches the twiddles it loads from global
   * memory: 2 per thread in its last pass (level 5; levels 0 .. 4 are
   * shared) and 2 for the tail's vectors (level 6); its inverse nothing */
  for (int fwd = 0; fwd < 2; fwd++) {
    fhjit_context *pctx = fhjit_context_create();
    lw_ntt_plan p;
    ck_assert_int_eq(lw_ntt_plan_make(pctx, FHJIT_R62, fwd ? IR_NTT_MONT_TO_NTT : IR_NTT_TO_MONT, 14, 32, 32, &p),
                     FHJIT_OK);
    ck_assert(p.k[0].twpf && p.k[1].twpf);
    lw_program prog;
    ck_assert_int_eq(lw_ntt_compile_ptx(pctx, &p, "sm_90", &prog), FHJIT_OK);
    int n = 0;
    for (const char *q = prog.ptx; (q = strstr(q, "prefetch.global.L1")); q++) n++;
    ck_assert_int_eq(n, fwd ? 4 : 0);
    lw_program_free(&prog);
    fhjit_context_destroy(pctx);
  }
  /* l2pf: by default kernel 0 of the inverse (2^14 .. 2^17) and of the
   * 2^14 forward prefetches its source into the L2, each thread its first
   * pass's words (the inverse's staged load: one per 16-byte vector), all
   * before its wait for the previous kernel; kernel 1 and the forward from
   * 2^16 on do not, nor does kernel 0 without that wait (entry=0) */
  for (int radix = 0; radix < 2; radix++)
    for (int logn = 14; logn <= 17; logn++)
      for (int fwd = 0; fwd < 2; fwd++)
        for (int entry = 0; entry < 2; entry++) {
          if (logn == 15) continue;
          setenv("FHJIT_NTT_PLAN", entry ? "" : "entry=0", 1);
          fhjit_context *pctx = fhjit_context_create();
          lw_ntt_plan p;
          fhjit_radix rx = radix ? FHJIT_R62 : FHJIT_R32;
          ck_assert_int_eq(lw_ntt_plan_make(pctx, rx, fwd ? IR_NTT_MONT_TO_NTT : IR_NTT_TO_MONT, logn, 32, 32, &p),
                           FHJIT_OK);
          unsetenv("FHJIT_NTT_PLAN");
          int on = !fwd || logn == 14;
          ck_assert_int_eq(p.k[0].l2pf, on);
          lw_program prog;
          ck_assert_int_eq(lw_ntt_compile_ptx(pctx, &p, "sm_90", &prog), FHJIT_OK);
          const lw_ntt_kplan *k0 = &p.k[0];
          int want = !on || !entry ? 0
                     : k0->staged_load ? (int)((INT64_C(1) << (k0->log_c + k0->m)) / (k0->threads * (radix ? 2 : 4)))
                                       : 1 << k0->log_e;
          char name[96];
          snprintf(name, sizeof name, ".entry %s(", prog.kernels[1].name);
          const char *k1 = strstr(prog.ptx, name), *wait = strstr(prog.ptx, "griddepcontrol.wait;");
          ck_assert(k1 && wait);
          int n = 0;
          for (const char *q = prog.ptx; (q = strstr(q, "prefetch.global.L2 [")); q++) {
            ck_assert_msg(q < k1 && (!entry || q < wait), "l2pf: a prefetch after kernel 0's wait or in kernel 1");
            n++;
          }
          ck_assert_msg(n == want, "radix %d 2^%d %s entry %d: %d L2 prefetches, want %d", radix, logn,
                        fwd ? "fwd" : "inv", entry, n, want);
          lw_program_free(&prog);
          fhjit_context_destroy(pctx);
        }
  /* bad sizes are refused with a reason */
  fhjit_context *ctx = fhjit_context_create();
  lw_ntt_plan p;
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_STD_TO_NTT, 3, 1, 1, &p), FHJIT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "2^3"));
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_STD_TO_NTT, 18, 1, 1, &p), FHJIT_ERR_UNSUPPORTED);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_STD_TO_NTT, 12, 3, 4, &p), FHJIT_ERR_ARGUMENT);
  fhjit_context_destroy(ctx);
}
END_TEST

/* The GPU module: verified, optimised and turned into PTX with the
 * expected ingredients, for both radices and both kernel shapes. */
START_TEST(test_ptx) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = _i & 2 ? 16 : 12;
  fhjit_context *ctx = fhjit_context_create();
  lw_ntt_plan p;
  ck_assert_int_eq(lw_ntt_plan_make(ctx, radix, _i & 1 ? IR_NTT_TO_STD : IR_NTT_STD_TO_NTT, logn, 4, 8, &p),
                   FHJIT_OK);
  lw_program prog;
  fhjit_status st = lw_ntt_compile_ptx(ctx, &p, "sm_90", &prog);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(prog.nkernels, p.nkernels);
  ck_assert_ptr_nonnull(strstr(prog.ptx, ".shared"));
  ck_assert_ptr_nonnull(strstr(prog.ptx, "bar.sync"));
  /* r62: mul.hi.u64 in the post steps; r32: products as mul.wide.u32 */
  ck_assert_ptr_nonnull(strstr(prog.ptx, radix == FHJIT_R62 ? "mul.hi.u64" : "mul.wide.u32"));
  /* r62 butterflies: the carry chain of lw_ntt_redc62_ptx; r32: min.u32 */
  ck_assert_ptr_nonnull(strstr(prog.ptx, radix == FHJIT_R62 ? "madc.hi.cc.u32" : "min.u32"));
  /* r62's reductions: lw_ntt_csub62_ptx (its predicate's name) */
  if (radix == FHJIT_R62) ck_assert_ptr_nonnull(strstr(prog.ptx, "setp.lt.s32 cneg"));
  /* r62 2^16's default plan: Shoup's form by the shared twiddles, the chain
   * by the chunk kernel's own (lw_ntt_shoup62_ptx's and the chain's names) */
  if (radix == FHJIT_R62 && logn == 16) {
    ck_assert(p.k[0].shoup == 1 && p.k[1].shoup == 1);
    ck_assert_ptr_nonnull(strstr(prog.ptx, "mul.hi.u32 st0, sx0, sk0"));
    ck_assert_ptr_nonnull(strstr(prog.ptx, "mul.hi.u32 fr3, fx1, fw1"));
  }
  ck_assert_ptr_nonnull(strstr(prog.ptx, "ld.global.nc"));
  ck_assert_ptr_nonnull(strstr(prog.ptx, ".maxntid"));
  for (int j = 0; j < prog.nkernels; j++) {
    ck_assert_ptr_nonnull(strstr(prog.ptx, prog.kernels[j].name));
    ck_assert_uint_eq(prog.kernels[j].block[0], p.k[j].threads);
  }
  /* no local-memory spills of the register tuples */
  ck_assert_ptr_null(strstr(prog.ptx, ".local"));
  lw_program_free(&prog);
  fhjit_context_destroy(ctx);
}
END_TEST

/* Programmatic dependent launch (sm_90): the first kernel of a two-kernel
 * plan lets the second launch early, and the second reads nothing but
 * parameters and twiddles (ld.global.nc) and writes nothing but shared
 * memory before its griddepcontrol.wait; the launch description says so.
 * With entry (the default) kernel 0 also waits, before any access, for the
 * stream's previous kernel, and kernel 1 lets the stream's next kernel
 * launch early. Older targets and pdl=0 get neither the instructions nor
 * the flags. With per-row counters (rowsync, the default) both kernels take
 * the LW_ARG_OWN argument last: kernel 0 counts its blocks (a release),
 * kernel 1 polls and fences (acquire) on the other side of the same branch
 * as its grid wait. */
static int count_of(const char *from, const char *to, const char *what) {
  int n = 0;
  for (const char *q = from; (q = strstr(q, what)) && q < to; q++) n++;
  return n;
}

START_TEST(test_pdl) {
  TU_SAMPLED(_i); /* sampled (testutil.h): r32 forward, r62 inverse */
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  ir_ntt_kind kind = _i & 2 ? IR_NTT_TO_STD : IR_NTT_STD_TO_NTT;
  static const char *const tunings[] = {"", "tws=2,early=1", "tws=0,n1=8,e=3"};
  /* sm_90, sm_80, sm_90 with pdl=0, rowsync=0, entry=0 */
  static const char *const modes[] = {"", "", "pdl=0", "rowsync=0", "entry=0"};
  fhjit_context *ctx = fhjit_context_create();
  /* rowsync's default at 2^16 (the measured default plans): on once kernel
   * 0 has LW_NTT_ROWSYNC_MIN_BLOCKS blocks, off below, on when asked for.
   * The r62 forward's own plan (32 blocks per row) from 32 rows on (the GPU
   * tests' NTT graph); below, the shared plan (64 per row), so 16 rows keep
   * the per-row waits and 8 do not */
  for (int64_t brows = 8; brows <= 32; brows *= 2) {
    lw_ntt_plan p;
    ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, brows, brows, &p), FHJIT_OK);
    ck_assert_int_eq(p.k[0].blocks, (brows >= 32 ? 32 : 64) * brows);
    ck_assert_int_eq(p.k[1].m, brows >= 32 ? 9 : 10);
    ck_assert_int_eq(p.k[0].pdl, p.k[0].blocks >= LW_NTT_ROWSYNC_MIN_BLOCKS ? 2 : 1);
    lw_ntt_tuning t;
    lw_ntt_tuning_default(&t);
    ck_assert_int_eq(lw_ntt_tuning_parse(ctx, "n1=6,c_col=4,t=7,tws=2,rowsync=1", &t), FHJIT_OK);
    ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, brows, brows, &t, &p),
                     FHJIT_OK);
    ck_assert_int_eq(p.k[0].pdl, 2);
  }
  for (int logn = 14; logn <= 16; logn += 2)
    for (size_t ti = 0; ti < sizeof tunings / sizeof tunings[0]; ti++)
      for (int mode = 0; mode < 5; mode++) {
        if (logn < 16 && mode == 3) continue; /* rowsync=0 is the default there */
        lw_ntt_tuning t;
        lw_ntt_tuning_default(&t);
        ck_assert_int_eq(lw_ntt_tuning_parse(ctx, tunings[ti], &t), FHJIT_OK);
        ck_assert_int_eq(lw_ntt_tuning_parse(ctx, modes[mode], &t), FHJIT_OK);
        t.one = 10; /* two kernels from 2^11 on */
        lw_ntt_plan p;
        /* 256 batch rows: kernel 0 has enough blocks for rowsync's default */
        ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, radix, kind, logn, 4, 256, &t, &p), FHJIT_OK);
        if (logn >= 16) ck_assert_int_ge(p.k[0].blocks, LW_NTT_ROWSYNC_MIN_BLOCKS);
        ck_assert_int_eq(p.nkernels, 2);
        lw_program prog;
        fhjit_status st = lw_ntt_compile_ptx(ctx, &p, mode == 1 ? "sm_80" : "sm_90", &prog);
        ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(ctx));
        /* per-row counters by default from 2^16 on */
        int on = mode != 1 && mode != 2, rows = on && mode != 3 && logn >= 16, entry = on && mode != 4;
        ck_assert_int_eq(p.k[0].pdl, mode == 2 ? 0 : mode == 3 || logn < 16 ? 1 : 2);
        ck_assert_int_eq(p.k[0].entry, mode != 2 && mode != 4);
        for (int j = 0; j < 2; j++) {
          ck_assert_int_eq(prog.kernels[j].nargs, 5 + rows);
          if (rows) ck_assert_int_eq(prog.kernels[j].args[5].kind, LW_ARG_OWN);
        }
        ck_assert_int_eq(strstr(prog.ptx, "_rowdone") != NULL, rows);
        ck_assert_int_eq(strstr(prog.ptx, "red.release.gpu.global.add.u32") != NULL, rows);
        ck_assert_int_eq(strstr(prog.ptx, "fence.acq_rel.gpu") != NULL, rows);
        ck_assert_uint_eq(prog.kernels[0].flags, entry ? LW_KERNEL_PDL : 0);
        ck_assert_uint_eq(prog.kernels[1].flags, on ? LW_KERNEL_PDL : 0);
        char name[96];
        snprintf(name, sizeof name, ".entry %s(", prog.kernels[0].name);
        const char *k0 = strstr(prog.ptx, name);
        snprintf(name, sizeof name, ".entry %s(", prog.kernels[1].name);
        const char *k1 = strstr(prog.ptx, name);
        ck_assert(k0 && k1 && k0 < k1);
        const char *end = k1 + strlen(k1);
        if (!on) {
          ck_assert_ptr_null(strstr(prog.ptx, "griddepcontrol"));
          lw_program_free(&prog);
          continue;
        }
        /* kernel 0: [wait for the stream's previous kernel,] trigger kernel 1 */
        const char *trigger0 = strstr(k0, "griddepcontrol.launch_dependents");
        ck_assert_msg(trigger0 && trigger0 < k1, "2^%d %s: kernel 0 does not trigger", logn, tunings[ti]);
        ck_assert_int_eq(count_of(k0, k1, "griddepcontrol.launch_dependents"), 1);
        ck_assert_int_eq(count_of(k0, k1, "griddepcontrol.wait"), entry);
        if (entry) { /* the wait comes before any global access */
          const char *wait0 = strstr(k0, "griddepcontrol.wait");
          ck_assert(wait0 < trigger0);
          ck_assert_int_eq(count_of(k0, wait0, "ld.global"), 0);
          ck_assert_int_eq(count_of(k0, k1, "ld.global.nc"), 0); /* no noalias: coherent loads */
        }
        /* kernel 1: [trigger the stream's next kernel,] wait for kernel 0 */
        ck_assert_int_eq(count_of(k1, end, "griddepcontrol.launch_dependents"), entry);
        ck_assert_int_eq(count_of(k1, end, "griddepcontrol.wait"), 1);
        const char *wait = strstr(k1, "griddepcontrol.wait");
        /* before the wait: loads of parameters and twiddles only, no global stores */
        for (const char *q = k1; (q = strstr(q, "ld.global")) && q < wait; q++)
          ck_assert_msg(!strncmp(q, "ld.global.nc", 12), "2^%d %s: a coherent load before the wait",
                        logn, tunings[ti]);
        const char *stg = strstr(k1, "st.global");
        ck_assert_ptr_nonnull(stg);
        ck_assert(wait < stg);
        lw_program_free(&prog);
      }
  /* more rows than the counters serve: the grid-wide wait */
  lw_ntt_plan p;
  ck_assert_int_eq(lw_ntt_plan_make(ctx, radix, kind, 16, 4, 2 * LW_NTT_ROWSYNC_MAX_ROWS, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[0].pdl, 1);
  ck_assert_int_eq(p.k[1].pdl, 1);
  /* one kernel: nothing to wait for */
  ck_assert_int_eq(lw_ntt_plan_make(ctx, radix, kind, 10, 4, 4096, &p), FHJIT_OK);
  ck_assert_int_eq(p.nkernels, 1);
  lw_program prog;
  ck_assert_int_eq(lw_ntt_compile_ptx(ctx, &p, "sm_90", &prog), FHJIT_OK);
  ck_assert_ptr_null(strstr(prog.ptx, "griddepcontrol"));
  ck_assert_uint_eq(prog.kernels[0].flags, 0);
  lw_program_free(&prog);
  fhjit_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------ the GPU's r62 product */

/* The PTX that lw_ntt_redc62_ptx, lw_ntt_shoup62_ptx and lw_ntt_csub62_ptx
 * give the GPU runs through ptxeval.h's interpreter (any instruction it
 * does not know fails the test), so the text the GPU gets is what runs
 * here: with 64-bit operands $1.. = in[1..], returns $0. */
static uint64_t run_ptx(const char *p, const uint64_t *in) {
  uint64_t out = 0;
  ck_assert_int_gt(ptxeval_run(p, in, &out, 1), 5);
  return out;
}

static uint64_t run_redc62_ptx(uint64_t x, uint64_t w4, uint64_t wk4, uint64_t q) {
  const uint64_t in[5] = {0, x, w4, wk4, q};
  return run_ptx(lw_ntt_redc62_ptx, in);
}

/* SPEC's REDC with R = 2^62, in 128-bit arithmetic. */
static uint64_t redc62_ref(uint64_t w, uint64_t x, uint64_t q, uint64_t k) {
  const uint64_t mask = (UINT64_C(1) << 62) - 1;
  unsigned __int128 t = (unsigned __int128)w * x;
  uint64_t m = ((uint64_t)t & mask) * k & mask;
  return (uint64_t)((t + (unsigned __int128)m * q) >> 62);
}

/* The r62 product tests' moduli: NTT primes near the limit and far below,
 * SPEC section 6's, and the odd all-ones 2^60 - 1 (the algebra needs q odd
 * only). */
static void test_moduli62(uint64_t qs[4]) {
  uint64_t p[1];
  ck_assert_int_eq(fhjit_find_primes(NULL, 60, UINT64_C(1) << 18, 1, p), FHJIT_OK);
  qs[0] = p[0];
  ck_assert_int_eq(fhjit_find_primes(NULL, 22, UINT64_C(1) << 18, 1, p), FHJIT_OK);
  qs[1] = p[0];
  qs[2] = UINT64_C(1152921504606584833);
  qs[3] = (UINT64_C(1) << 60) - 1;
}

/* k = -q^-1 mod 2^62 (Newton). */
static uint64_t kneg62(uint64_t q) {
  uint64_t inv = q;
  for (int i = 0; i < 6; i++) inv *= 2 - q * inv;
  return (0 - inv) & ((UINT64_C(1) << 62) - 1);
}

START_TEST(test_redc62_ptx) {
  TU_SAMPLED(_i); /* sampled (testutil.h): 2 of the 4 seeds, edges in each */
  uint64_t qs[4];
  test_moduli62(qs);
  uint64_t s = 0x5eed0f62ULL + (uint64_t)_i;
  for (int qi = 0; qi < 4; qi++) {
    uint64_t q = qs[qi], k = kneg62(q);
    const uint64_t edges[] = {0, 1, 2, q - 1, q, q + 1, 2 * q - 1, 2 * q - 2, q / 2, 3 * q, 4 * q - 1};
    for (int i = 0; i < 400; i++) {
      uint64_t w = i < 121 ? edges[(i / 11) % 11] % (2 * q) : tu_below(&s, 2 * q);
      uint64_t x = i < 121 ? edges[i % 11] : tu_below(&s, 4 * q);
      uint64_t want = redc62_ref(w, x, q, k);
      uint64_t got = run_redc62_ptx(x, w << 2, w * (k << 2), q);
      ck_assert_msg(got == want, "q %llu w %llu x %llu: PTX %llu, REDC %llu", (unsigned long long)q,
                    (unsigned long long)w, (unsigned long long)x, (unsigned long long)got,
                    (unsigned long long)want);
    }
  }
}
END_TEST

/* The Shoup form (lw_ntt_shoup62_ptx) against SPEC's REDC, with WR as
 * make_const_shoup computes it: twiddles anywhere below 2q and beyond,
 * x below 4q (the lazy words) and anywhere below 2^64 (the identity
 * holds for every x). WR is at most q. */
START_TEST(test_shoup62_ptx) {
  TU_SAMPLED(_i); /* sampled (testutil.h): 2 of the 4 seeds, edges in each */
  uint64_t qs[4];
  test_moduli62(qs);
  uint64_t s = 0x5a00fULL + (uint64_t)_i;
  for (int qi = 0; qi < 4; qi++) {
    uint64_t q = qs[qi], k = kneg62(q);
    const uint64_t edges[] = {0, 1, 2, q - 1, q, q + 1, 2 * q - 1, 2 * q - 2, q / 2, 3 * q, 4 * q - 1,
                              UINT64_MAX, UINT64_C(1) << 63, (UINT64_C(1) << 62) - 1};
    const int ne = (int)(sizeof edges / sizeof edges[0]);
    for (int i = 0; i < 600; i++) {
      uint64_t w = i < ne * ne ? edges[(i / ne) % ne] % (2 * q) : tu_below(&s, i % 7 ? 2 * q : UINT64_C(1) << 62);
      uint64_t x = i < ne * ne ? edges[i % ne] : (i % 5 ? tu_below(&s, 4 * q) : tu_rand(&s));
      uint64_t wk4 = w * (k << 2);
      uint64_t wr = (uint64_t)(((unsigned __int128)wk4 * q) >> 64) + (wk4 != 0);
      ck_assert_msg(wr <= q && wr == redc62_ref(w, 1, q, k), "q %llu w %llu: WR %llu",
                    (unsigned long long)q, (unsigned long long)w, (unsigned long long)wr);
      const uint64_t in[5] = {0, x, wr, wk4, 0 - q};
      uint64_t want = redc62_ref(w, x, q, k), got = run_ptx(lw_ntt_shoup62_ptx, in);
      ck_assert_msg(got == want, "q %llu w %llu x %llu: PTX %llu, REDC %llu", (unsigned long long)q,
                    (unsigned long long)w, (unsigned long long)x, (unsigned long long)got,
                    (unsigned long long)want);
    }
  }
}
END_TEST

/* The r62 conditional subtraction: against x >= b ? x - b : x for every
 * x < b + 2^63 and b <= 2^63, as the NTT uses it (lazy sums against 2q,
 * lazy words against q), at the edges of that range and at random. */
START_TEST(test_csub62_ptx) {
  const uint64_t two63 = UINT64_C(1) << 63;
  uint64_t s = 0xc5b62ULL + (uint64_t)_i;
  const uint64_t bounds[] = {1, 2, UINT64_C(1152921504606584833) * 2, (UINT64_C(1) << 61) - 2,
                             UINT64_C(0x7fffffffffffffff), two63};
  for (size_t bi = 0; bi < sizeof bounds / sizeof bounds[0]; bi++) {
    uint64_t b = bounds[bi];
    const uint64_t edges[] = {0, 1, b - 1, b, b + 1, 2 * b - 1, b / 2, b + two63 - 1, b + two63 - 2};
    for (int i = 0; i < 300; i++) {
      uint64_t x = i < 9 ? edges[i] : tu_below(&s, b + (two63 - 1));
      if (x >= b && x - b >= two63) continue; /* outside the contract (edges that wrap) */
      const uint64_t in[3] = {0, x, b};
      uint64_t want = x >= b ? x - b : x, got = run_ptx(lw_ntt_csub62_ptx, in);
      ck_assert_msg(got == want, "x %llu bound %llu: PTX %llu, want %llu", (unsigned long long)x,
                    (unsigned long long)b, (unsigned long long)got, (unsigned long long)want);
    }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("ntt_emit");
  TCase *tc = tcase_create("ntt_emit");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_plans);
  tcase_add_test(tc, test_tuning_parse);
  tcase_add_test(tc, test_reduce_minb);
  tcase_add_test(tc, test_reduce_smem);
  tcase_add_loop_test(tc, test_batch_plans, 0, IR_NTT_NUM_KINDS);
  tcase_add_loop_test(tc, test_pdl, 0, 4);
  tcase_add_loop_test(tc, test_tuned_random, 0, 14);
  tcase_add_loop_test(tc, test_tuned_grid, 0, 24);
  tcase_add_loop_test(tc, test_many_passes, 0, 6);
  tcase_add_loop_test(tc, test_twsplit, 0, 40);
  tcase_add_test(tc, test_twsplit_defaults);
  tcase_add_loop_test(tc, test_block_order, 0, 8);
  tcase_add_loop_test(tc, test_ptx, 0, 4);
  tcase_add_loop_test(tc, test_redc62_ptx, 0, 4);
  tcase_add_loop_test(tc, test_shoup62_ptx, 0, 4);
  tcase_add_loop_test(tc, test_csub62_ptx, 0, 2);
  tcase_add_loop_test(tc, test_odd_rows, 0, 6);
  tcase_add_loop_test(tc, test_host_vs_reference, 0, 28);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
