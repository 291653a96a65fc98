/* test_ntt_cluster.c: the NTT's cluster schedule (lib/lower/ntt_cluster.c,
 * docs/ntt-cluster.md) without a GPU. Its host form runs a cluster's blocks
 * segment by segment with their slices side by side, the very IR of the
 * GPU kernel but for the exchange's PTX (mapa, ld/st.shared::cluster,
 * barrier.cluster), so the arithmetic, the stage grouping and every
 * address are checked bit for bit against the reference (lib/ir/ntt_ref.c):
 * all four transforms, both radices, N = 2^14 .. 2^17, clusters of 2, 4
 * and 8 blocks, words and threads per block varied, rows and batches,
 * moduli near each limit and far below, random and edge inputs. Also the
 * plan's choices (the ntt_schedule option, sizes, targets) and the PTX
 * (cluster instructions; the two kernels on sm_80). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ntt.h"
#include "lower/ntt.h"
#include "nttcheck.h"
#include "testutil.h"

static void moduli_for(fhjit_radix radix, int rows, uint64_t *q) {
  const uint64_t m18 = UINT64_C(1) << 18;
  int near_bits = radix == FHJIT_R32 ? 30 : 60;
  int far_bits = radix == FHJIT_R32 ? 20 : 22;
  uint64_t p[2];
  for (int r = 0; r < rows; r++) {
    int which = r % 3;
    ck_assert_int_eq(fhjit_find_primes(NULL, which == 1 ? far_bits : near_bits, m18, which == 2 ? 2 : 1, p), FHJIT_OK);
    q[r] = which == 2 ? p[1] : p[0];
  }
}

/* One transform on the host with plan tuning `text` (which must give a
 * cluster plan of `want_c` blocks per cluster), against the reference
 * (nttcheck.h). */
static void check_cluster(fhjit_radix radix, ir_ntt_kind kind, int logn, int rows, int batch,
                          uint64_t seed, const char *text, int want_c) {
  fhjit_context *ctx = fhjit_context_create();
  uint64_t q[NTTCHECK_MAXROWS];
  moduli_for(radix, rows, q);
  nttcheck c;
  nttcheck_init(&c, ctx, radix, kind, logn, rows, batch, q);
  nttcheck_fill(&c, &seed, 0);
  int64_t brows = c.brows;
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  ck_assert_int_eq(lw_ntt_tuning_parse(ctx, text, &t), FHJIT_OK);
  t.sched = 1; /* ntt_schedule=cluster */
  lw_ntt_plan plan;
  ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, radix, kind, logn, rows, brows, &t, &plan), FHJIT_OK);
  char desc[400];
  lw_ntt_plan_describe(&plan, desc, sizeof desc);
  ck_assert_msg(plan.nkernels == 1 && plan.k[0].cluster && (1 << plan.k[0].cluster) == want_c,
                "not a cluster plan of %d: %s", want_c, desc);
  int64_t per = INT64_C(1) << plan.k[0].log_rows; /* rows a cluster transforms in turn */
  ck_assert_int_eq(plan.k[0].blocks, (brows + per - 1) / per * want_c);
  nttcheck_run(&c, &plan);
  nttcheck_free(&c);
  fhjit_context_destroy(ctx);
}

/* Sampled (FHJIT_TEST_SAMPLE, testutil.h: the ASan stage): each loop
 * test runs each of its plans once, in one radix (r32 mostly: r62 at
 * 2^14 costs 20-27 s a case under ASan), with r62 in every test; the
 * other radix and the larger N of the same plans are the same code at
 * more words, which the plain build runs. Each test names its cases. */

/* _i: radix (bit 0) and log N - 14 (bits 1, 2): every kind with the
 * default cluster size, then clusters of 2, 4 and 8 blocks. */
START_TEST(test_cluster_vs_reference) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int logn = 14 + (_i >> 1);
  /* sampled: 0 and 1, both radices at 2^14 (every kind, both exchanges,
   * every cluster size that fits) */
  TU_SAMPLED_IN(_i, 0, 1);
  int ws_log = radix == FHJIT_R32 ? 2 : 3;
  int c = lw_ntt_cluster_log_default(radix, logn);
  /* the vector exchange (the default) and the scalar one (xvec=0) */
  for (int xv = 1; xv >= 0; xv--) {
    const char *x0 = xv ? "" : "xvec=0";
    for (int kind = 0; kind < IR_NTT_NUM_KINDS; kind++)
      check_cluster(radix, (ir_ntt_kind)kind, logn, kind & 1 ? 3 : 1, kind == 2 && logn < 16 ? 2 : 1,
                    500 + (uint64_t)_i * 8 + (uint64_t)kind + (uint64_t)xv * 100, x0, 1 << c);
    for (int cc = 1; cc <= 3; cc++) {
      /* the others whose slice fits a block's 227 KB (with its padding:
       * 1/16, or 1/8 with the vector exchange's) */
      if (cc == c || ((INT64_C(18) << (logn - cc + ws_log)) >> 4) > 227 * 1024) continue;
      char text[64];
      snprintf(text, sizeof text, "cluster=%d%s%s", cc, xv ? "" : ",", x0);
      check_cluster(radix, (cc + xv) & 1 ? IR_NTT_STD_TO_NTT : IR_NTT_TO_STD, logn, 2, 1,
                    600 + (uint64_t)_i * 8 + (uint64_t)cc + (uint64_t)xv * 100, text, 1 << cc);
    }
  }
}
END_TEST

/* Words per thread and threads per block (passes of other widths, short
 * passes, stages in the staged copy or not, several groups and columns per
 * thread). */
START_TEST(test_cluster_tuned) {
  static const char *const plans[] = {"cluster=2,e_cluster=2,t_cluster=6", "cluster=1,e_cluster=3,t_cluster=7",
                                      "cluster=3,e_cluster=4,t_cluster=5", "cluster=2,e_cluster=4,t_cluster=8,pad_chunk=0,tail=0"};
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  const char *text = plans[_i >> 1];
  int want = text[8] == '1' ? 2 : text[8] == '2' ? 4 : 8;
  int logn = 14 + (_i >> 1) % 3; /* slices of at most 2^15 words */
  /* sampled: plans 0, 1, 2 at r32 (cases 0, 2, 4), plan 3 at r62 (7) */
  TU_SAMPLED_IN(_i, 0, 2, 4, 7);
  /* one forward and one inverse kind each (all four over the loop) */
  const ir_ntt_kind kinds[2] = {_i & 2 ? IR_NTT_MONT_TO_NTT : IR_NTT_STD_TO_NTT,
                                _i & 2 ? IR_NTT_TO_MONT : IR_NTT_TO_STD};
  for (int k = 0; k < 2; k++)
    check_cluster(radix, kinds[k], logn, 2, 1, 900 + (uint64_t)_i * 4 + (uint64_t)k, text, want);
}
END_TEST

/* The exchange's forms: the scalar one with several columns per thread,
 * vectors narrower than 16 bytes (r32 .v2.u32), several vectors per
 * column run, a padding step of 2 words every 2 (pad_chunk=1: r32's
 * vectors clamp to 2 words, the slice's own accesses stay scalar), no
 * padding, the pass over the bottom bits in vectors (tail=0). Each with a
 * forward and an inverse kind. */
START_TEST(test_cluster_xvec) {
  static const struct {
    const char *plan;
    int logn, c;
  } plans[] = {{"cluster=2,xvec=0,e_cluster=2,t_cluster=6", 14, 2},
               {"cluster=1,u_cluster=4,t_cluster=6", 15, 1},
               {"cluster=3,u_cluster=1", 16, 3},
               {"cluster=2,pad_chunk=1,u_cluster=2", 14, 2},
               {"cluster=2,pad_chunk=0,u_cluster=3,e_cluster=4", 15, 2},
               {"cluster=3,xvec=0,u_cluster=2,t_cluster=7", 17, 3},
               {"cluster=1,tail=0,t_cluster=8", 14, 1}};
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int j = _i >> 1;
  /* sampled: every plan once, r32 but plan 3 (r62: case 7) */
  TU_SAMPLED_IN(_i, 0, 2, 4, 7, 8, 10, 12);
  const ir_ntt_kind kinds[2] = {j & 1 ? IR_NTT_MONT_TO_NTT : IR_NTT_STD_TO_NTT,
                                j & 1 ? IR_NTT_TO_MONT : IR_NTT_TO_STD};
  for (int k = 0; k < 2; k++)
    check_cluster(radix, kinds[k], plans[j].logn, 2, 1, 1300 + (uint64_t)_i * 4 + (uint64_t)k, plans[j].plan,
                  1 << plans[j].c);
}
END_TEST

/* Several rows per cluster in turn (rows_cluster): each next row's loads
 * ahead (the default) or in place (ahead_cluster=0), batch-rows not a
 * multiple of the rows per cluster (the last cluster's fewer), the
 * forward's copies a word (xvec=0) or a vector each, the inverse's two
 * slices (where its tail stages would run in the staged load, ahead turns
 * them off). _i: radix (bit 0), plan (the rest); a forward and an inverse
 * kind each. */
START_TEST(test_cluster_rows) {
  static const struct {
    const char *plan;
    int logn, c, rows, batch;
  } plans[] = {{"rows_cluster=1", 14, 0, 3, 1},
               {"rows_cluster=2,cluster=3", 15, 3, 2, 3},
               {"rows_cluster=1,ahead_cluster=0", 14, 0, 3, 1},
               {"rows_cluster=2,xvec=0,cluster=2", 14, 2, 3, 2},
               {"rows_cluster=3,cluster=1,t_cluster=7", 14, 1, 2, 3},
               {"rows_cluster=1,cluster=3", 16, 3, 3, 1}};
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int j = _i >> 1;
  /* sampled: every plan once, r32 but plan 3 (r62: case 7) */
  TU_SAMPLED_IN(_i, 0, 2, 4, 7, 8, 10);
  int c = plans[j].c ? plans[j].c : lw_ntt_cluster_log_default(radix, plans[j].logn);
  const ir_ntt_kind kinds[2] = {j & 1 ? IR_NTT_MONT_TO_NTT : IR_NTT_STD_TO_NTT,
                                j & 1 ? IR_NTT_TO_MONT : IR_NTT_TO_STD};
  for (int k = 0; k < 2; k++)
    check_cluster(radix, kinds[k], plans[j].logn, plans[j].rows, plans[j].batch,
                  1700 + (uint64_t)_i * 4 + (uint64_t)k, plans[j].plan, 1 << c);
}
END_TEST

/* The rows plan's facts: its grid, its shared memory (the staging area or
 * the second slice) and its description. */
START_TEST(test_cluster_rows_plan) {
  fhjit_context *ctx = fhjit_context_create();
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  ck_assert_int_eq(lw_ntt_tuning_parse(ctx, "rows_cluster=2,cluster=3", &t), FHJIT_OK);
  t.sched = 1;
  for (int fwd = 0; fwd < 2; fwd++) {
    lw_ntt_plan p;
    ck_assert_int_eq(lw_ntt_plan_make_tuned(ctx, FHJIT_R32, fwd ? IR_NTT_MONT_TO_NTT : IR_NTT_TO_MONT, 16,
                                            10, 10, &t, &p),
                     FHJIT_OK);
    const lw_ntt_kplan *k = &p.k[0];
    ck_assert_int_eq(k->log_rows, 2);
    ck_assert_int_eq(k->ahead, 1);
    ck_assert_int_eq(k->blocks, 3 * 8); /* 10 rows, 4 a cluster: 3 clusters of 8 blocks */
    /* the slice: 2^13 words and their padding */
    ck_assert_uint_eq(k->smem_words, fwd ? k->slice_words + (1u << 13) : 2 * k->slice_words);
    if (!fwd) ck_assert_int_eq(k->tail, 0); /* no tail stages on copies */
    char desc[400];
    lw_ntt_plan_describe(&p, desc, sizeof desc);
    ck_assert_msg(strstr(desc, " rows 4 ahead") != NULL, "%s", desc);
    lw_kernel kd;
    memset(&kd, 0, sizeof kd);
    lw_ntt_launch_facts(&p, 0, &kd);
    ck_assert_uint_eq(kd.shared_bytes, k->smem_words * 4u);
  }
  /* r32 2^16 at its default 2 blocks a row: a slice of 128 KB leaves no
   * room for a second one, so ahead is dropped by default and refused
   * when asked for */
  for (int ask = 0; ask < 2; ask++) {
    lw_ntt_tuning_default(&t);
    ck_assert_int_eq(lw_ntt_tuning_parse(ctx, ask ? "rows_cluster=1,ahead_cluster=1" : "rows_cluster=1", &t),
                     FHJIT_OK);
    t.sched = 1;
    lw_ntt_plan p;
    fhjit_status st = lw_ntt_plan_make_tuned(ctx, FHJIT_R32, IR_NTT_TO_MONT, 16, 4, 4, &t, &p);
    if (ask) {
      ck_assert_int_eq(st, FHJIT_ERR_ARGUMENT);
      ck_assert_msg(strstr(fhjit_last_error(ctx), "bytes of shared memory per block") != NULL, "%s",
                    fhjit_last_error(ctx));
    } else {
      ck_assert_int_eq(st, FHJIT_OK);
      ck_assert_int_eq(p.k[0].ahead, 0);
      ck_assert_uint_eq(p.k[0].smem_words, p.k[0].slice_words);
      ck_assert_int_eq(p.k[0].blocks, 2 * 2);
    }
  }
  ck_assert_int_eq(lw_ntt_tuning_parse(ctx, "rows_cluster=5", &t), FHJIT_ERR_ARGUMENT);
  fhjit_context_destroy(ctx);
}
END_TEST

/* The plan: the option's choices, sizes, the fallback kept for older
 * targets, refusals. */
START_TEST(test_cluster_plans) {
  fhjit_context *ctx = fhjit_context_create();
  lw_ntt_plan p;
  /* auto and two_kernel: the two kernels */
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, 32, 32, &p), FHJIT_OK);
  ck_assert_int_eq(p.nkernels, 2);
  ck_assert_int_eq(p.k[0].cluster, 0);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", "two_kernel"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, 32, 32, &p), FHJIT_OK);
  ck_assert_int_eq(p.nkernels, 2);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", "bogus"), FHJIT_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "expected auto, two_kernel or cluster"));
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", "cluster"), FHJIT_OK);
  /* cluster: one kernel, blocks of about 64 KB of the row */
  /* u: log2 columns per thread, u0 that of the scalar exchange (xvec=0);
   * the vector exchange grows it to a 16-byte vector's words */
  static const struct {
    fhjit_radix radix;
    int logn, c, u, u0;
  } want[] = {{FHJIT_R32, 14, 1, 3, 3}, {FHJIT_R32, 15, 1, 3, 3}, {FHJIT_R32, 16, 1, 3, 3},
              {FHJIT_R32, 17, 3, 2, 1}, {FHJIT_R62, 14, 1, 2, 2}, {FHJIT_R62, 15, 1, 2, 2},
              {FHJIT_R62, 16, 3, 1, 0}, {FHJIT_R62, 17, 3, 1, 0}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    for (int kind = 0; kind < IR_NTT_NUM_KINDS; kind++) {
      ck_assert_int_eq(lw_ntt_plan_make(ctx, want[i].radix, (ir_ntt_kind)kind, want[i].logn, 4, 64, &p),
                       FHJIT_OK);
      const lw_ntt_kplan *k = &p.k[0];
      int ws = want[i].radix == FHJIT_R32 ? 4 : 8, s = want[i].logn - want[i].c;
      ck_assert_int_eq(p.nkernels, 1);
      ck_assert_int_eq(k->cluster, want[i].c);
      ck_assert_int_eq(k->blocks, 64 << want[i].c);
      ck_assert_int_eq(k->threads, 512);
      ck_assert(k->pdl == 0 && k->entry == 0);
      /* the vector exchange: 16-byte vectors, the padding stepping by one */
      /* (r62 2^14 takes pad_chunk=2 from its measured two-kernel plan) */
      int vlog = ws == 4 ? 2 : 1, ps = ws == 4 ? 5 : want[i].logn == 14 ? 2 : 4;
      ck_assert_int_eq(k->xvec, 1);
      ck_assert_int_eq(k->log_u, want[i].u);
      ck_assert_int_eq(k->log_xw, vlog);
      ck_assert_int_eq(k->pad_shift, ps);
      ck_assert_int_eq(k->pad_w, vlog);
      ck_assert_int_eq((int64_t)k->smem_words, (INT64_C(1) << s) + ((INT64_C(1) << s) >> ps << vlog));
      /* an aligned run's padded index is aligned, the run contiguous */
      for (uint32_t x = 0; x < (UINT32_C(1) << s); x += 1u << k->log_xw) {
        uint32_t px = x + ((x >> k->pad_shift) << k->pad_w);
        uint32_t pe = (x + (1u << k->log_xw) - 1) + (((x + (1u << k->log_xw) - 1) >> k->pad_shift) << k->pad_w);
        ck_assert_uint_eq(px % (1u << k->log_xw), 0);
        ck_assert_uint_eq(pe - px, (1u << k->log_xw) - 1);
      }
      /* the slice, padded, in dynamic shared memory within sm_90's 227 KB */
      ck_assert_int_ge((int64_t)k->smem_words, INT64_C(1) << s);
      ck_assert_int_le((int64_t)k->smem_words * ws, 227 * 1024);
      int bits = 0;
      for (int j = 0; j < k->npass; j++) bits += k->pass_e[j];
      ck_assert_int_eq(bits + k->tail, s);
      /* the two kernels kept for targets without clusters */
      ck_assert_int_eq(p.two_nkernels, 2);
      ck_assert_int_eq(p.two[0].cluster, 0);
      lw_ntt_plan old = p;
      lw_ntt_for_target(&old, nv_find_target(NULL, "sm_80"));
      ck_assert_int_eq(old.nkernels, 2);
      ck_assert_int_eq(old.k[0].cluster, 0);
      ck_assert_int_eq(old.k[0].pdl, 0);
      lw_ntt_plan new = p;
      lw_ntt_for_target(&new, nv_find_target(NULL, "sm_90"));
      ck_assert_int_eq(new.nkernels, 1);
      lw_kernel kd;
      memset(&kd, 0, sizeof kd);
      lw_ntt_launch_facts(&new, 0, &kd);
      ck_assert_uint_eq(kd.cluster[0], 1u << want[i].c);
      ck_assert_uint_eq(kd.cluster[1] * kd.cluster[2], 1);
      ck_assert_uint_eq(kd.shared_bytes, k->smem_words * (unsigned)ws);
      ck_assert_uint_eq(kd.flags, 0);
    }
  /* xvec=0: the scalar exchange, its columns and padding as before */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "xvec=0"), FHJIT_OK);
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    ck_assert_int_eq(lw_ntt_plan_make(ctx, want[i].radix, IR_NTT_TO_STD, want[i].logn, 4, 64, &p), FHJIT_OK);
    int s = want[i].logn - want[i].c;
    ck_assert_int_eq(p.k[0].cluster, want[i].c);
    ck_assert_int_eq(p.k[0].xvec, 0);
    ck_assert_int_eq(p.k[0].log_u, want[i].u0);
    ck_assert_int_eq(p.k[0].log_xw, 0);
    ck_assert_int_eq(p.k[0].pad_w, 0);
    ck_assert_int_eq((int64_t)p.k[0].smem_words, (INT64_C(1) << s) + ((INT64_C(1) << s) >> p.k[0].pad_shift));
  }
  /* u_cluster sets the columns (at C = 4); vectors of fewer words where U or the
   * padding's runs are shorter */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "cluster=2,u_cluster=0"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_TO_STD, 16, 4, 4, &p), FHJIT_OK);
  ck_assert(p.k[0].xvec == 1 && p.k[0].log_u == 0 && p.k[0].log_xw == 0 && p.k[0].pad_w == 0);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "cluster=2,u_cluster=1"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_TO_STD, 16, 4, 4, &p), FHJIT_OK);
  ck_assert(p.k[0].log_u == 1 && p.k[0].log_xw == 1 && p.k[0].pad_w == 1);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "cluster=2,u_cluster=3,pad_chunk=1"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_TO_STD, 16, 4, 4, &p), FHJIT_OK);
  ck_assert(p.k[0].log_u == 3 && p.k[0].log_xw == 1 && p.k[0].pad_w == 1);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "cluster=2,u_cluster=3,pad_chunk=0"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_TO_STD, 16, 4, 4, &p), FHJIT_OK);
  ck_assert(p.k[0].log_xw == 2 && p.k[0].pad_w == 2 && p.k[0].smem_words == 1u << 14);
  char desc[400];
  lw_ntt_plan_describe(&p, desc, sizeof desc);
  ck_assert_msg(strstr(desc, "cluster 4 U=8 xvec 4"), "%s", desc);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "xvec=2"), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "u_cluster=5"), FHJIT_ERR_ARGUMENT);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", NULL), FHJIT_OK);
  /* other sizes keep the two kernels (or the one) */
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 13, 4, 64, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[0].cluster, 0);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 12, 4, 64, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[0].cluster, 0);
  /* ntt_plan's cluster=0 wins over the option; cluster=k selects it alone */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "cluster=0"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, 4, 4, &p), FHJIT_OK);
  ck_assert_int_eq(p.nkernels, 2);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "cluster=2"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_MONT_TO_NTT, 16, 4, 4, &p), FHJIT_OK);
  ck_assert_int_eq(p.nkernels, 1);
  ck_assert_int_eq(p.k[0].cluster, 2);
  /* refusals: fewer words than a vector; less than a warp of work */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "cluster=1,e_cluster=1"), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_MONT_TO_NTT, 16, 4, 4, &p), FHJIT_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "16-byte vector"));
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "cluster=4"), FHJIT_ERR_ARGUMENT);
  /* the environment variable, read when the option is not set */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", NULL), FHJIT_OK);
  setenv("FHJIT_NTT_SCHEDULE", "cluster", 1);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_TO_STD, 17, 1, 1, &p), FHJIT_OK);
  ck_assert_int_eq(p.k[0].cluster, 3);
  setenv("FHJIT_NTT_SCHEDULE", "clusters", 1);
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R32, IR_NTT_TO_STD, 17, 1, 1, &p), FHJIT_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fhjit_last_error(ctx), "FHJIT_NTT_SCHEDULE"));
  unsetenv("FHJIT_NTT_SCHEDULE");
  fhjit_context_destroy(ctx);
}
END_TEST

/* The PTX of the cluster kernels: the exchange's instructions, dynamic
 * shared memory, no local memory; on sm_80 the two kernels. */
START_TEST(test_cluster_ptx) {
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  ir_ntt_kind kind = _i & 2 ? IR_NTT_TO_STD : IR_NTT_STD_TO_NTT;
  fhjit_context *ctx = fhjit_context_create();
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_schedule", "cluster"), FHJIT_OK);
  lw_ntt_plan p;
  ck_assert_int_eq(lw_ntt_plan_make(ctx, radix, kind, 16, 4, 8, &p), FHJIT_OK);
  lw_program prog;
  fhjit_status st = lw_ntt_compile_ptx(ctx, &p, "sm_90", &prog);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(prog.nkernels, 1);
  static const char *const want[] = {".extern .shared .align 16 .b8 fhjit_ntt_", "_k0_dsmem[]",
                                     "mapa.shared::cluster", "barrier.cluster.arrive;",
                                     "barrier.cluster.wait;", "bar.sync"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    ck_assert_msg(strstr(prog.ptx, want[i]), "no %s", want[i]);
  ck_assert_ptr_nonnull(strstr(prog.ptx, ir_ntt_is_forward(kind) ? "st.shared::cluster" : "ld.shared::cluster"));
  ck_assert_ptr_null(strstr(prog.ptx, ir_ntt_is_forward(kind) ? "ld.shared::cluster" : "st.shared::cluster"));
  /* the vector exchange (16 bytes a thread per block), the slice's own
   * side in vectors too */
  const char *vec = radix == FHJIT_R32 ? ".shared::cluster.v4.u32" : ".shared::cluster.v2.u64";
  const char *own = radix == FHJIT_R32 ? "shared.v4.u32" : "shared.v2.u64";
  const char *scalar = ir_ntt_is_forward(kind) ? (radix == FHJIT_R32 ? "st.shared::cluster.u32" : "st.shared::cluster.u64")
                                                : (radix == FHJIT_R32 ? "ld.shared::cluster.u32" : "ld.shared::cluster.u64");
  ck_assert_msg(strstr(prog.ptx, vec), "no %s", vec);
  ck_assert_ptr_null(strstr(prog.ptx, scalar));
  ck_assert_msg(strstr(prog.ptx, ir_ntt_is_forward(kind) ? "ld.shared." : "st.shared.") &&
                    strstr(strstr(prog.ptx, ir_ntt_is_forward(kind) ? "ld.shared." : "st.shared."), own),
                "no %s", own);
  ck_assert_ptr_null(strstr(prog.ptx, ".local"));
  ck_assert_ptr_null(strstr(prog.ptx, "griddepcontrol"));
  ck_assert_uint_eq(prog.kernels[0].cluster[0], 1u << p.k[0].cluster);
  ck_assert_uint_eq(prog.kernels[0].grid[0], (uint32_t)(8 << p.k[0].cluster));
  ck_assert_uint_eq(prog.kernels[0].block[0], 512);
  ck_assert_uint_gt(prog.kernels[0].shared_bytes, 48 * 1024);
  lw_program_free(&prog);
  /* xvec=0: one word per remote access */
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", "xvec=0"), FHJIT_OK);
  lw_ntt_plan p0;
  ck_assert_int_eq(lw_ntt_plan_make(ctx, radix, kind, 16, 4, 8, &p0), FHJIT_OK);
  st = lw_ntt_compile_ptx(ctx, &p0, "sm_90", &prog);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_ptr_nonnull(strstr(prog.ptx, scalar));
  ck_assert_ptr_null(strstr(prog.ptx, vec));
  lw_program_free(&prog);
  ck_assert_int_eq(fhjit_context_set_option(ctx, "ntt_plan", NULL), FHJIT_OK);
  st = lw_ntt_compile_ptx(ctx, &p, "sm_80", &prog);
  ck_assert_msg(st == FHJIT_OK, "%s", fhjit_last_error(ctx));
  ck_assert_int_eq(prog.nkernels, 2);
  ck_assert_ptr_null(strstr(prog.ptx, "cluster"));
  ck_assert_uint_eq(prog.kernels[0].cluster[0], 0);
  ck_assert_uint_eq(prog.kernels[0].shared_bytes, 0);
  lw_program_free(&prog);
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ntt_cluster");
  TCase *tc = tcase_create("ntt_cluster");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_cluster_plans);
  tcase_add_loop_test(tc, test_cluster_ptx, 0, 4);
  /* sampled (FHJIT_TEST_SAMPLE): the cases each test names (above) */
  tcase_add_loop_test(tc, test_cluster_vs_reference, 0, 8);
  tcase_add_loop_test(tc, test_cluster_tuned, 0, 8);
  tcase_add_loop_test(tc, test_cluster_xvec, 0, 14);
  tcase_add_loop_test(tc, test_cluster_rows, 0, 12);
  tcase_add_test(tc, test_cluster_rows_plan);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
