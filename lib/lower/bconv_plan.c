/* bconv_plan.c: the conversion kernel's plan (bconv.h): checks, the
 * automatic choices of both forms and their launch facts, the bconv_plan
 * tuning option. The kernels themselves are bconv.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/bconv.h"
#include "lower/bconv_layout.h"
#include "nvptx/nvptx.h"

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* Chooses the tensor-core form and sets its launch facts (p->mma in: 0
 * automatic, -1 off, else tiles per warp). Automatic: r32 conversions of
 * at least 4 source and 8 target rows, 2 tiles per warp; r62 only when
 * asked (H200, 2026-12-03: r62 5 -> 35 at N = 2^16 19.3 us against the
 * scalar form's 13.4, its best plan 17.8: 8 byte planes make 4 times an
 * r32 conversion's products per word, and the scalar form's wide
 * multiply-adds are already near their rate). threads: the tuning's block
 * size (0: automatic). */
static void mma_geometry(lw_bconv_plan *p, uint32_t threads) {
  int want = p->mma;
  p->mma = 0;
  p->mma_threads = p->mma_blocks = p->mma_digit_blocks = p->mma_shared_bytes = 0;
  if (want < 0 || p->lift) return;
  if (!want) {
    if (p->radix != FHJIT_R32 || p->l < 4 || p->m < 8) return;
    want = 2;
  }
  int64_t bytes = mma_shared_words(p) * word_bytes(p->radix);
  if (bytes > LW_BCONV_MAX_SHARED) return;
  int64_t tiles = p->polys * ((INT64_C(1) << p->log_n) / 16);
  int64_t warps = (tiles + want - 1) / want;
  /* 256 threads unless the tuning says: phase 0 is the block's */
  if (!threads) threads = 256;
  while (threads > 32 && (int64_t)threads / 64 >= warps) threads /= 2;
  int64_t blocks = (warps * 32 + threads - 1) / threads;
  if (blocks > INT32_MAX / p->digits) return;
  p->mma = want;
  p->mma_threads = threads;
  p->mma_digit_blocks = (uint32_t)blocks;
  p->mma_blocks = (uint32_t)(blocks * p->digits);
  p->mma_shared_bytes = (uint32_t)bytes;
}

static fhjit_status check_cols(fhjit_context *ctx, const char *what, const int32_t *cols,
                               int32_t n) {
  if (!cols) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv plan: null %s columns", what);
  for (int32_t i = 0; i < n; i++) {
    if (cols[i] < 0)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv plan: %s column #%d is %d (negative)",
                      what, (int)i, (int)cols[i]);
    for (int32_t j = 0; j < i; j++)
      if (cols[j] == cols[i])
        return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                        "error: bconv plan: %s columns #%d and #%d are both %d (a basis holds "
                        "each chain position once)",
                        what, (int)j, (int)i, (int)cols[i]);
  }
  return FHJIT_OK;
}

/* The plan's shape: radix, N, row counts, lift, the source view. */
static fhjit_status check_shape(fhjit_context *ctx, const lw_bconv_plan *p) {
  if (p->radix != FHJIT_R32 && p->radix != FHJIT_R62)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv plan: radix %d is neither r32 nor r62",
                    (int)p->radix);
  /* log_n is ir_ntt_log2's: -1 for an N that is no power of two in its range */
  if (p->log_n < 0)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: bconv plan: N is not a power of two from 2^4 to 2^17");
  if (p->log_n < 4 || p->log_n > 17)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: bconv plan: N = 2^%d is outside 2^4 .. 2^17", p->log_n);
  if (p->l < 1 || p->l > LW_BCONV_MAX_L)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: bconv plan: %d source rows, the kernel takes 1 to %d (the bounds "
                    "of its exact sums)",
                    (int)p->l, LW_BCONV_MAX_L);
  if (p->m < 1 || p->m > LW_BCONV_MAX_M)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: bconv plan: %d target rows, the kernel takes 1 to %d (convert to "
                    "fewer targets per kernel)",
                    (int)p->m, LW_BCONV_MAX_M);
  if (p->lift && (p->l != 1 || p->mont))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: bconv plan: rescale's lift takes one source row in standard form "
                    "(got %d rows, %s form)",
                    (int)p->l, p->mont ? "Montgomery" : "standard");
  if (p->polys < 1)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv plan: %lld polynomials",
                    (long long)p->polys);
  if (p->src_nax < 0 || p->src_nax > FHJIT_MAX_BATCH + 1)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv plan: %d source view axes (at most %d)",
                    p->src_nax, FHJIT_MAX_BATCH + 1);
  int64_t prod = 1;
  for (int a = 0; a < p->src_nax; a++) {
    if (p->src_ext[a] < 1 || prod > INT64_MAX / p->src_ext[a])
      return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv plan: source view extent %lld",
                      (long long)p->src_ext[a]);
    prod *= p->src_ext[a];
  }
  if (prod != p->polys)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: bconv plan: the source view's extents hold %lld polynomials, not %lld",
                    (long long)prod, (long long)p->polys);
  return FHJIT_OK;
}

/* Each digit's offsets and columns (digit 0's are the plan's own fields). */
static fhjit_status check_digits(fhjit_context *ctx, const lw_bconv_plan *p, int64_t n) {
  for (int k = 0; k < p->digits; k++) {
    lw_bconv_digit d = k ? p->more[k - 1]
                         : (lw_bconv_digit){p->src_offset, p->table_offset, p->dst_offset,
                                            p->src_cols, p->dst_cols};
    if (d.table_offset < 0 || d.src_offset < 0)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: bconv plan: digit %d: table offset %lld, source offset %lld", k,
                      (long long)d.table_offset, (long long)d.src_offset);
    fhjit_status st = check_cols(ctx, "source", d.src_cols, p->l);
    if (!st) st = check_cols(ctx, "target", d.dst_cols, p->m);
    if (st) return st;
    if (d.dst_offset < 0 || (p->dst_poly_stride && p->dst_poly_stride < p->m * n) ||
        (p->dst_poly_stride && p->polys > (INT64_MAX - d.dst_offset) / p->dst_poly_stride) ||
        d.dst_offset % 4 || p->dst_poly_stride % 4)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: bconv plan: destination offset %lld, polynomial stride %lld (a "
                      "multiple of 4 words, at least m N = %lld)",
                      (long long)d.dst_offset, (long long)p->dst_poly_stride,
                      (long long)(p->m * n));
  }
  return FHJIT_OK;
}

/* Words per thread: the tuning's, checked, or automatic. */
static fhjit_status choose_vec(fhjit_context *ctx, lw_bconv_plan *p, int64_t n) {
  int ws = word_bytes(p->radix), vmax = 16 / ws;
  if (p->vec) {
    if (p->vec != 1 && p->vec != 2 && p->vec != 4)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: bconv plan: vec = %d (1, 2 or 4)", p->vec);
    if (p->vec > vmax)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: bconv plan: vec = %d words is more than 16 bytes of radix %s",
                      p->vec, ir_radix_name(p->radix));
    return FHJIT_OK;
  }
  /* 16-byte vectors unless the source words of a thread fill too many
   * registers, or the grid would hold fewer than 2^16 threads (about
   * 500 per SM of an H200: latency hiding beats wider accesses). The
   * H200 sweep of 2026-12-01 (bench/RESULTS.md, section 7): r32 12 -> 48
   * at N = 2^16 ran 12.35 us with 2 words per thread, 12.84 with 1 */
  int64_t groups = p->split > 0 ? p->split : 1;
  p->vec = vmax;
  while (p->vec > 1 && (int64_t)p->l * p->vec * (ws == 4 ? 1 : 4) > 48) p->vec /= 2;
  while (p->vec > 1 && p->polys * groups * (n / p->vec) < (INT64_C(1) << 16)) p->vec /= 2;
  return FHJIT_OK;
}

/* Target-row groups (split) and target rows per iteration (unroll). */
static fhjit_status choose_split_unroll(fhjit_context *ctx, lw_bconv_plan *p) {
  if (p->split) {
    if (p->split < 1 || p->split > p->m)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: bconv plan: split = %d target-row groups (1 .. m = %d)", p->split,
                      (int)p->m);
  } else {
    p->split = 1;
  }
  /* no empty group: ceil(m / split) rows each, as many groups as that needs */
  int32_t per_group = (p->m + p->split - 1) / p->split;
  p->split = (p->m + per_group - 1) / per_group;
  if (p->unroll) {
    if (p->unroll < 1 || p->unroll > 8)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: bconv plan: unroll = %d target rows per iteration (1 .. 8)",
                      p->unroll);
  } else {
    /* target rows interleaved hide the multiply-add chain's latency
     * (registers are plentiful at these grid sizes). Measured on the H200
     * (2026-12-01 sweep): r32 12 -> 48 best at 2 rows, r62 5 -> 35 at 4
     * (13.5 us against 14.7 with 1: its four partial-product chains alone
     * do not hide the latency) */
    p->unroll = word_bytes(p->radix) == 4 ? 2 : 4;
  }
  return FHJIT_OK;
}

/* Threads per block, the grid and the shared constants' bytes. */
static fhjit_status choose_launch(fhjit_context *ctx, lw_bconv_plan *p, int64_t n) {
  int64_t items = p->polys * p->split * (n / p->vec);
  if (p->threads) {
    if (!is_pow2(p->threads) || p->threads < 32 || p->threads > 1024)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: bconv plan: %u threads per block (a power of two, 32 .. 1024)",
                      p->threads);
  } else {
    p->threads = 256;
    while (p->threads > 32 && (int64_t)p->threads / 2 >= items) p->threads /= 2;
  }
  int64_t blocks = (items + p->threads - 1) / p->threads;
  p->digit_blocks = blocks <= INT32_MAX ? (uint32_t)blocks : 0;
  blocks *= p->digits;
  if (blocks > INT32_MAX)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: bconv plan: %lld blocks, more than one launch grid holds",
                    (long long)blocks);
  int64_t bytes = shared_words(p) * word_bytes(p->radix);
  if (bytes > LW_BCONV_MAX_SHARED)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: bconv plan: %d -> %d rows need %lld bytes of constants in shared "
                    "memory, more than %d (convert to fewer targets per kernel)",
                    (int)p->l, (int)p->m, (long long)bytes, LW_BCONV_MAX_SHARED);
  p->blocks = (uint32_t)blocks;
  p->shared_bytes = (uint32_t)bytes;
  return FHJIT_OK;
}

fhjit_status lw_bconv_plan_make(fhjit_context *ctx, lw_bconv_plan *p) {
  fhjit_status st = check_shape(ctx, p);
  if (st) return st;
  if (p->digits < 0 || p->digits > LW_BCONV_MAX_DIGITS || (p->digits > 1 && p->lift))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: bconv plan: %d digits (0 .. %d, and no lift with several)", p->digits,
                    LW_BCONV_MAX_DIGITS);
  if (!p->digits) p->digits = 1;
  int64_t n = INT64_C(1) << p->log_n;
  if (p->polys > INT64_MAX / n / p->m)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "error: bconv plan: %lld polynomials is too many",
                    (long long)p->polys);
  uint32_t user_threads = p->threads; /* 0: automatic (each form its own) */
  if ((st = check_digits(ctx, p, n)) || (st = choose_vec(ctx, p, n)) ||
      (st = choose_split_unroll(ctx, p)) || (st = choose_launch(ctx, p, n)))
    return st;
  mma_geometry(p, user_threads);
  return FHJIT_OK;
}

void lw_bconv_launch(const lw_bconv_plan *p, uint32_t *blocks, uint32_t *threads,
                     uint32_t *shared_bytes) {
  *blocks = p->mma ? p->mma_blocks : p->blocks;
  *threads = p->mma ? p->mma_threads : p->threads;
  *shared_bytes = p->mma ? p->mma_shared_bytes : p->shared_bytes;
}

void lw_bconv_for_target(lw_bconv_plan *p, const nv_target *t) {
  if (!nv_target_has_mma_u8(t)) p->mma = 0;
  if (!nv_target_has_pdl(t)) p->sig.on = 0; /* convsync: dependent launches' */
}

/* ---------------------------------------------------------- the tuning */

int lw_bconv_tuning_parse(const char *s, lw_bconv_tuning *t, char *why, size_t why_size) {
  memset(t, 0, sizeof *t);
  if (!s || !*s) return 0;
  while (*s) {
    char key;
    long v;
    if (lw_plan_entry(&s, &key, &v, why, why_size)) return -1;
    if (key == 'V' && (v == 1 || v == 2 || v == 4)) t->vec = (int)v;
    else if (key == 'T' && v >= 32 && v <= 1024 && is_pow2((uint64_t)v)) t->threads = (int)v;
    else if (key == 'S' && v >= 1 && v <= LW_BCONV_MAX_M) t->split = (int)v;
    else if (key == 'U' && v >= 1 && v <= 8) t->unroll = (int)v;
    else if (key == 'M' && (v == 0 || v == 1 || v == 2 || v == 4)) t->mma = v ? (int)v : -1;
    else {
      snprintf(why, why_size,
               "%c=%ld: V is 1, 2 or 4; T a power of two from 32 to 1024; S 1 to %d; U 1 to 8; "
               "M 0, 1, 2 or 4",
               key, v, LW_BCONV_MAX_M);
      return -1;
    }
    if (lw_plan_sep(&s, why, why_size)) return -1;
  }
  return 1;
}

fhjit_status lw_bconv_tuning_apply(fhjit_context *ctx, lw_bconv_plan *p) {
  lw_bconv_tuning t;
  char why[160];
  const char *text = ir_option(ctx, IR_OPT_BCONV_PLAN);
  int set = lw_bconv_tuning_parse(text, &t, why, sizeof why);
  if (set < 0)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: %s=\"%s\": %s",
                    ir_option_label(ctx, IR_OPT_BCONV_PLAN), text, why);
  if (!set) return FHJIT_OK;
  /* one setting for every conversion of a graph: clamped to what each
   * plan can take (16-byte vectors, m target rows) */
  if (t.vec) p->vec = t.vec * word_bytes(p->radix) > 16 ? 16 / word_bytes(p->radix) : t.vec;
  if (t.threads) p->threads = (uint32_t)t.threads;
  if (t.split) p->split = t.split > p->m && p->m >= 1 ? p->m : t.split;
  if (t.unroll) p->unroll = t.unroll;
  if (t.mma) p->mma = t.mma;
  return FHJIT_OK;
}
