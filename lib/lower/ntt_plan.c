/* ntt_plan.c: the NTT's schedule (ntt.h), without LLVM: the tuning keys
 * (the ntt_plan option's syntax) and their measured defaults per radix and
 * size, and the planner that cuts the log N stages into kernels, passes and
 * per-thread butterflies within the GPU's limits (threads, shared memory,
 * launch grid). ntt_emit.c builds the IR of a plan. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/ntt.h"
#include "support/support.h"

/* ------------------------------------------------------------------ plan */

/* Pass list for M = 2^m, E = 2^log_e over the local bits [tail, m) (the
 * tail's are the staged copy's): full passes first in processing order
 * (forward: from the top bits down; inverse: from the bottom bits up). */
static void plan_passes(lw_ntt_kplan *k, int forward) {
  int m = k->m - k->tail, e = k->log_e;
  k->npass = (m + e - 1) / e;
  SP_ASSERT(k->npass <= LW_NTT_MAX_PASSES);
  int b = forward ? k->m : k->tail;
  for (int j = 0; j < k->npass; j++) {
    int ej = j < k->npass - 1 ? e : m - e * (k->npass - 1);
    k->pass_e[j] = ej;
    if (forward) b -= ej;
    k->pass_b[j] = b;
    if (!forward) b += ej;
  }
}

int lw_ntt_ilog2(uint64_t x) {
  int l = 0;
  while ((UINT64_C(1) << l) < x) l++;
  return l;
}

/* Shared words of one sub-transform row in a chunk kernel (with padding). */
int64_t lw_ntt_chunk_stride(const lw_ntt_kplan *k) {
  int64_t mlen = INT64_C(1) << k->m;
  return mlen + (k->pad_shift ? (mlen >> k->pad_shift) : 0);
}

/* Static shared memory of one block: the PTX limit without opting in. */
#define SMEM_LIMIT_BYTES 49152
/* One-kernel plans with fewer blocks than this (2 per SM of an H100/H200)
 * run as two kernels from N = 2^SMALL_SPLIT_MIN_LOG on. */
#define FEW_BLOCKS 264
#define SMALL_SPLIT_MIN_LOG 10

/* tail_bits: the stages a staged vector holds (log2 of its words), 0 for
 * none: where the passes would end on a short pass of at most that many
 * stages, the staged copy runs them instead (lw_ntt_kplan.tail). */
static void finish_kernel(lw_ntt_kplan *k, int forward, int pad_shift, int64_t batch_rows, int tail_bits) {
  if (k->log_e > k->m) k->log_e = k->m;
  int rem = k->m % k->log_e;
  k->tail = !k->cols && rem > 0 && rem <= tail_bits ? rem : 0;
  plan_passes(k, forward);
  k->threads = (uint32_t)1 << (k->log_c + k->m - k->log_e);
  int64_t per_row = INT64_C(1) << k->log_subs;
  k->blocks = batch_rows * per_row / (INT64_C(1) << k->log_c);
  k->pad_shift = pad_shift;
  if (k->cols) {
    k->staged_load = k->staged_store = 0;
    uint32_t words = (uint32_t)1 << (k->log_c + k->m);
    k->smem_words = words + (pad_shift ? words >> pad_shift : 0);
  } else {
    /* The pass touching the top bits is coalesced straight from/to global
     * memory; the one touching the bottom bits goes through shared memory. */
    k->staged_load = !forward;
    k->staged_store = forward;
    k->smem_words = (uint32_t)(lw_ntt_chunk_stride(k) << k->log_c);
  }
}

void lw_ntt_tuning_default(lw_ntt_tuning *t) {
  t->one = t->n1 = t->e_one = t->e_col = t->e_chunk = t->c_col = -1;
  t->t_one = t->t_chunk = t->pad_col = t->pad_chunk = t->minb = t->minb_col = t->minb_chunk = t->minb_red = t->minb_epi = t->ipsmem = t->epi = t->tws = t->shoup = t->tail = t->twpf = t->twsplit = t->twvec = t->l2pf = t->early = t->pdl = t->rowsync = t->entry = t->pdlmix = -1;
  t->sched = t->cluster = t->t_cluster = t->e_cluster = t->xvec = t->u_cluster = t->minb_cluster = t->rows_cluster = t->ahead_cluster = -1;
  t->mixfuse = t->digitfwd = t->liftfuse = t->ipfuse = t->ipacc = t->autpro = t->autcol = t->autvec = t->autvec1 = t->autreg = t->bconvbatch = t->epivec = t->provec = t->epipf = t->epics = -1;
  t->mdip = t->mdipk = t->mdintt = t->mdbconv = t->mdrs = t->pminor = t->ipchain = t->bcrev = t->ipsync = t->convsync = -1;
  t->rowplans = t->ipntt = t->latewait = t->l2pfprev = -1;
}

int lw_ntt_schedule_parse(const char *text, lw_ntt_schedule *out) {
  if (!text || !*text || !strcmp(text, "auto")) *out = LW_NTT_SCHED_AUTO;
  else if (!strcmp(text, "two_kernel")) *out = LW_NTT_SCHED_TWO_KERNEL;
  else if (!strcmp(text, "cluster")) *out = LW_NTT_SCHED_CLUSTER;
  else return 0;
  return 1;
}

/* The ntt_plan option's keys: each sets the fields at off[0..n) of
 * lw_ntt_tuning to a value in [lo, hi]. */
typedef struct tuning_key {
  const char *key;
  size_t off[3];
  int n, lo, hi;
} tuning_key;

static const tuning_key tuning_keys[] = {
    {"one", {offsetof(lw_ntt_tuning, one)}, 1, 3, 17},
    {"n1", {offsetof(lw_ntt_tuning, n1)}, 1, 1, 16},
    {"e", {offsetof(lw_ntt_tuning, e_one), offsetof(lw_ntt_tuning, e_col), offsetof(lw_ntt_tuning, e_chunk)}, 3, 1, LW_NTT_MAX_LOG_E},
    {"e_one", {offsetof(lw_ntt_tuning, e_one)}, 1, 1, LW_NTT_MAX_LOG_E},
    {"e_col", {offsetof(lw_ntt_tuning, e_col)}, 1, 1, LW_NTT_MAX_LOG_E},
    {"e_chunk", {offsetof(lw_ntt_tuning, e_chunk)}, 1, 1, LW_NTT_MAX_LOG_E},
    {"c_col", {offsetof(lw_ntt_tuning, c_col)}, 1, 0, 10},
    {"t", {offsetof(lw_ntt_tuning, t_one), offsetof(lw_ntt_tuning, t_chunk)}, 2, 5, 10},
    {"t_one", {offsetof(lw_ntt_tuning, t_one)}, 1, 5, 10},
    {"t_chunk", {offsetof(lw_ntt_tuning, t_chunk)}, 1, 5, 10},
    {"pad", {offsetof(lw_ntt_tuning, pad_col), offsetof(lw_ntt_tuning, pad_chunk)}, 2, 0, 16},
    {"pad_col", {offsetof(lw_ntt_tuning, pad_col)}, 1, 0, 16},
    {"pad_chunk", {offsetof(lw_ntt_tuning, pad_chunk)}, 1, 0, 16},
    {"minb", {offsetof(lw_ntt_tuning, minb), offsetof(lw_ntt_tuning, minb_col), offsetof(lw_ntt_tuning, minb_chunk)}, 3, 0, 32},
    {"minb_col", {offsetof(lw_ntt_tuning, minb_col)}, 1, 0, 32},
    {"minb_chunk", {offsetof(lw_ntt_tuning, minb_chunk)}, 1, 0, 32},
    {"minb_red", {offsetof(lw_ntt_tuning, minb_red)}, 1, 1, 32},
    {"minb_epi", {offsetof(lw_ntt_tuning, minb_epi)}, 1, 0, 32},
    {"ipsmem", {offsetof(lw_ntt_tuning, ipsmem)}, 1, 0, 16},  /* LW_MAX_REG */
    {"epi", {offsetof(lw_ntt_tuning, epi)}, 1, 0, 1},
    {"mixfuse", {offsetof(lw_ntt_tuning, mixfuse)}, 1, 0, 1},
    {"digitfwd", {offsetof(lw_ntt_tuning, digitfwd)}, 1, 0, 1},
    {"liftfuse", {offsetof(lw_ntt_tuning, liftfuse)}, 1, 0, 1},
    {"ipfuse", {offsetof(lw_ntt_tuning, ipfuse)}, 1, 0, 1},
    {"ipacc", {offsetof(lw_ntt_tuning, ipacc)}, 1, 0, 1},
    {"autpro", {offsetof(lw_ntt_tuning, autpro)}, 1, 0, 1},
    {"autcol", {offsetof(lw_ntt_tuning, autcol)}, 1, 0, 3},
    {"autvec", {offsetof(lw_ntt_tuning, autvec)}, 1, 0, 1},
    {"autvec1", {offsetof(lw_ntt_tuning, autvec1)}, 1, 0, 1},
    {"autreg", {offsetof(lw_ntt_tuning, autreg)}, 1, 0, 1},
    {"bconvbatch", {offsetof(lw_ntt_tuning, bconvbatch)}, 1, 0, 1},
    {"epivec", {offsetof(lw_ntt_tuning, epivec)}, 1, 0, 1},
    {"epipf", {offsetof(lw_ntt_tuning, epipf)}, 1, 0, 1},
    {"epics", {offsetof(lw_ntt_tuning, epics)}, 1, 0, 7},
    {"provec", {offsetof(lw_ntt_tuning, provec)}, 1, 0, 1},
    {"mdip", {offsetof(lw_ntt_tuning, mdip)}, 1, 0, 1},
    {"mdipk", {offsetof(lw_ntt_tuning, mdipk)}, 1, 1, 16},  /* LW_MDG_MAX (steps.h) */
    {"mdintt", {offsetof(lw_ntt_tuning, mdintt)}, 1, 0, 1},
    {"mdbconv", {offsetof(lw_ntt_tuning, mdbconv)}, 1, 0, 1},
    {"mdrs", {offsetof(lw_ntt_tuning, mdrs)}, 1, 0, 1},
    {"ipchain", {offsetof(lw_ntt_tuning, ipchain)}, 1, 0, 1},
    {"pminor", {offsetof(lw_ntt_tuning, pminor)}, 1, 0, 1},
    {"rowplans", {offsetof(lw_ntt_tuning, rowplans)}, 1, 0, 1},
    {"bcrev", {offsetof(lw_ntt_tuning, bcrev)}, 1, 0, 2},
    {"ipsync", {offsetof(lw_ntt_tuning, ipsync)}, 1, 0, 1},
    {"convsync", {offsetof(lw_ntt_tuning, convsync)}, 1, 0, 1},
    {"ipntt", {offsetof(lw_ntt_tuning, ipntt)}, 1, 0, 1},
    {"latewait", {offsetof(lw_ntt_tuning, latewait)}, 1, 0, 1},
    {"l2pfprev", {offsetof(lw_ntt_tuning, l2pfprev)}, 1, 0, 1},
    {"tws", {offsetof(lw_ntt_tuning, tws)}, 1, 0, 2},
    {"shoup", {offsetof(lw_ntt_tuning, shoup)}, 1, 0, 2},
    {"tail", {offsetof(lw_ntt_tuning, tail)}, 1, 0, 1},
    {"twpf", {offsetof(lw_ntt_tuning, twpf)}, 1, 0, 1},
    {"twsplit", {offsetof(lw_ntt_tuning, twsplit)}, 1, 0, 16},
    {"twvec", {offsetof(lw_ntt_tuning, twvec)}, 1, 0, 1},
    {"l2pf", {offsetof(lw_ntt_tuning, l2pf)}, 1, 0, 1},
    {"early", {offsetof(lw_ntt_tuning, early)}, 1, 0, 1},
    {"pdl", {offsetof(lw_ntt_tuning, pdl)}, 1, 0, 1},
    {"rowsync", {offsetof(lw_ntt_tuning, rowsync)}, 1, 0, 1},
    {"entry", {offsetof(lw_ntt_tuning, entry)}, 1, 0, 1},
    {"pdlmix", {offsetof(lw_ntt_tuning, pdlmix)}, 1, 0, 2},
    {"cluster", {offsetof(lw_ntt_tuning, cluster)}, 1, 0, 3},
    {"t_cluster", {offsetof(lw_ntt_tuning, t_cluster)}, 1, 5, 10},
    {"e_cluster", {offsetof(lw_ntt_tuning, e_cluster)}, 1, 1, 4},
    {"xvec", {offsetof(lw_ntt_tuning, xvec)}, 1, 0, 1},
    {"u_cluster", {offsetof(lw_ntt_tuning, u_cluster)}, 1, 0, 4},
    {"minb_cluster", {offsetof(lw_ntt_tuning, minb_cluster)}, 1, 0, 32},
    {"rows_cluster", {offsetof(lw_ntt_tuning, rows_cluster)}, 1, 0, 4},
    {"ahead_cluster", {offsetof(lw_ntt_tuning, ahead_cluster)}, 1, 0, 1},
};
#define NUM_TUNING_KEYS (sizeof tuning_keys / sizeof tuning_keys[0])

/* The error for a bad item of the option text: the item and every key. */
static fhjit_status bad_item(fhjit_context *ctx, const char *item, size_t len) {
  sp_buf list = {0};
  for (size_t j = 0; j < NUM_TUNING_KEYS; j++)
    sp_buf_printf(&list, "%s%s", j ? ", " : "", tuning_keys[j].key);
  fhjit_status st = ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: %s: bad item '%.*s' (keys: %s; values are log2 counts)",
                             ir_option_label(ctx, IR_OPT_NTT_PLAN), (int)len, item,
                             list.data ? list.data : "");
  sp_buf_free(&list);
  return st;
}

fhjit_status lw_ntt_tuning_parse(fhjit_context *ctx, const char *text, lw_ntt_tuning *t) {
  const tuning_key *keys = tuning_keys;
  if (!text) return FHJIT_OK;
  for (const char *p = text; *p;) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    size_t len = strcspn(p, "=, ");
    size_t item = strcspn(p, ", ");
    int found = -1;
    for (size_t j = 0; j < NUM_TUNING_KEYS; j++)
      if (strlen(keys[j].key) == len && !strncmp(keys[j].key, p, len)) found = (int)j;
    char *end = NULL;
    long v = found >= 0 && p[len] == '=' ? strtol(p + len + 1, &end, 10) : 0;
    if (found < 0 || !end || end == p + len + 1 || end != p + item || v < keys[found].lo ||
        v > keys[found].hi)
      return bad_item(ctx, p, item);
    for (int j = 0; j < keys[found].n; j++) *(int *)((char *)t + keys[found].off[j]) = (int)v;
    p += item;
  }
  return FHJIT_OK;
}

/* Measured defaults per radix and log N (FHJIT_NTT_PLAN syntax; NULL: the
 * planner's rules alone), from ntt_bench --sweep on an H200. */
/* The fastest plan of each measured size on the H200 (bench/ntt_bench
 * --sweep, 2026-11-30: bench/RESULTS.md); sizes not measured keep the
 * built-in choice. Every plan is bit-exact (test_ntt_emit). r32 2^16's
 * reduce kernel (the key switch's inner product, ipfuse, 128-thread
 * blocks): minb_red=5 (96 registers) measured faster than minb=6's 80
 * with spills (74.3 us against 81.8 under ncu, 2026-12-02, dc37cdf;
 * minb_red=4: 128 registers, 78.4 us); then ipsmem=3 (three of the four
 * digits' words in shared memory) with minb_red=6: 80 registers, no
 * spills, 6 blocks an SM, 72.6 us against 75.8 under ncu, the key switch
 * 226.0 us against 229.0 and HMult + relin + rescale 261.8 against
 * 263.1 (2026-12-03, 2ee4ffa-dirty; 8 blocks of 64 registers with
 * ipsmem=2,minb_red=8 no faster: 76.3 us, its warps waiting on global
 * loads). A last kernel with a fused epilogue: minb_epi=10 (51 registers
 * at most): minb_chunk=10 on every chunk kernel took HMult + relin +
 * rescale to 257.8 us from 261.3, relinearise 236.1 from 238.9, 8 hoisted
 * rotations 1066.8 from 1080.9, but the plain 2^16 x 64 forward NTT to
 * 25.24 us from 23.67 (2026-12-03, 1bd6d2e): so only where the epilogue
 * is. r32 twvec=1 (a stage's twiddles as 16-byte vectors): on an H100
 * (2026-12-06, two sweeps) 2^16 x 64 forward 26.5 us against 26.8,
 * inverse (with twsplit) 25.5 against 26.2, x 32 inverse 15.5 against
 * 16.3; 2^17 x 64 0.5% faster; the r32 CKKS operations 1.2-1.5% (key
 * switch 248.5 us against 250.4-251.5); r62 within noise, so off there.
 * r62 2^16 ipsmem=1,minb_epi=8: the 16-row key-switch chain of ntt_bench
 * (an ipntt reduce kernel of two members, 120 registers and 4 blocks an
 * SM, then the inverse whose last kernel adds a ciphertext, 74 registers
 * and 6 blocks) 89.7-90.2 us against 92.3-93.1 (1.28-1.29x its separate
 * graphs against 1.24-1.25x), the r62 key switch and HMult + relin +
 * rescale (no reduce kernel there) within 0.3% (an H100, 2026-12-07,
 * bench/results/2026-12-07-23621fd/; minb_epi 9 and 10, minb_red,
 * minb_chunk, pad_chunk, l2pfprev=0 with it within noise). epipf (the
 * last kernel prefetching its epilogue's inputs) is in no default plan:
 * at r62 2^16 bit 1 took the chain to 88.9-89.5 us from 89.8-90.4 but
 * rotate(1) to 662-664 us from 657-658 and 8 hoisted rotations to
 * 2681-2687 from 2642-2647 (the other r62 operations within 0.2%); at
 * r32 the key switch to 250.5-250.7 from 246.6; a bit 2 (the keys), since
 * removed, slowed every one (an H100, 2026-12-07,
 * bench/results/2026-12-07-79d0a93/). */
static const char *const default_plans[2][IR_NTT_MAX_LOG + 1] = {
    [FHJIT_R32] = {[12] = "tws=1", [14] = "e=3,c_col=4,l2pf=1", [16] = "n1=7,c_col=5,t=7,tws=1,minb=6,early=1,minb_red=6,ipsmem=3,minb_epi=10,twvec=1",
                   [17] = "n1=7,c_col=5,t=7,tws=1,minb=6,early=1,twsplit=12,twvec=1"},
    [FHJIT_R62] = {[12] = "tws=2", [14] = "e=2,c_col=4,t=7,tws=2,early=1,shoup=1,twpf=1,l2pf=1,pad_chunk=2",
                   [16] = "n1=6,c_col=4,t=7,tws=2,early=1,shoup=1,ipsmem=1,minb_epi=8",
                   [17] = "n1=7,c_col=3,t=7,tws=2,early=1,shoup=1"},
};

/* Forward transforms only, over default_plans key by key: the column
 * kernel (first in the forward) with 16 words per thread and one more
 * stage, so that its passes are 4 + 3 (2^16) or 4 + 4 (2^17) and the chunk
 * kernel's 3 + 3 + 3; the inverse measured slower so (RESULTS.md round 15).
 * That halves the column kernel's blocks: where they would then be fewer
 * than LW_NTT_ROWSYNC_MIN_BLOCKS, which costs the per-row waits (r62 2^16
 * x 16 rows: 9% slower, the fused key switch 5%: round 16), the shared
 * plan stays. Then 2^16's chunk kernel one chunk (64 threads) per block,
 * 2^17's column kernel 16 columns per block: forward -1% and -1.8%, in
 * three timings each (round 17). */
static const char *const forward_plans[2][IR_NTT_MAX_LOG + 1] = {
    [FHJIT_R62] = {[16] = "n1=7,e_col=4,t_chunk=6", [17] = "n1=8,e_col=4,c_col=4"},
};

/* Inverse transforms only, over default_plans key by key: kernel 0 (the
 * chunk kernel) prefetches its source into the L2 before its wait (l2pf),
 * 1-2% faster there, where the forward's column kernel measured 0.5-2.5%
 * slower so (RESULTS.md round 17; at 2^14 both directions gain, so it is
 * in default_plans). r32 2^16 reads its twiddles as products (twsplit=12,
 * 2^17 in both directions above): on an H100 (2026-12-06, two sweeps,
 * docs/ntt.md "Twiddles as products of two entries") the inverse x 64
 * rows 26.2 us against 28.7-28.9, x 32 16.1 against 18.0-18.1, where the
 * forward took 27.3 against 26.7 (its chunk kernel's extra products cost
 * more than the table's traffic); 2^17 x 64 forward 57.8-58.1 against
 * 63.6, inverse 56.5-56.7 against 62.3-62.7; 2^14 stays as it was
 * (within its timings' noise either way). */
static const char *const inverse_plans[2][IR_NTT_MAX_LOG + 1] = {
    [FHJIT_R32] = {[16] = "l2pf=1,twsplit=12", [17] = "l2pf=1"},
    [FHJIT_R62] = {[16] = "l2pf=1", [17] = "l2pf=1"},
};

/* Small batches, over default_plans key by key (ntt_plan key rowplans=0
 * turns them off): r32 2^16 with 20 to 28 batch rows (a moddown's P rows
 * of both components, 24) with 8 words per thread and 16 columns per
 * column block: forward + inverse at 20, 24, 28 rows 24.1, 25.9, 29.0 us
 * against 28.4, 32.2, 33.1, at 16 and 32 rows within 2% either way
 * (H200, ba4256d, same run; first seen in a7deb86's small-batch sweep);
 * the r32 key switch 240.8 us against 245.0, HMult 275.9 against 281.1. */
static const struct {
  fhjit_radix radix;
  int log_n;
  int64_t lo, hi;
  const char *plan;
} batch_plans[] = {{FHJIT_R32, 16, 20, 28, "e=3,c_col=4"}};

/* The batch plan of (radix, log_n, batch_rows), or NULL; none where the
 * context's or environment's ntt_plan says rowplans=0. */
static const char *batch_plan(const char *env, fhjit_radix radix, int log_n, int64_t batch_rows) {
  lw_ntt_tuning peek;
  lw_ntt_tuning_default(&peek);
  if (lw_ntt_tuning_parse(NULL, env, &peek) != FHJIT_OK || peek.rowplans == 0) return NULL;
  for (size_t i = 0; i < sizeof batch_plans / sizeof *batch_plans; i++)
    if (batch_plans[i].radix == radix && batch_plans[i].log_n == log_n && batch_rows >= batch_plans[i].lo &&
        batch_rows <= batch_plans[i].hi)
      return batch_plans[i].plan;
  return NULL;
}

fhjit_status lw_ntt_plan_make(fhjit_context *ctx, fhjit_radix radix, ir_ntt_kind kind,
                              int log_n, int64_t rows, int64_t batch_rows, lw_ntt_plan *p) {
  lw_ntt_tuning t;
  lw_ntt_tuning_default(&t);
  memset(p, 0, sizeof *p);
  const char *fwd = NULL;
  const char *env = ir_option(ctx, IR_OPT_NTT_PLAN); /* the context's, else FHJIT_NTT_PLAN */
  if ((radix == FHJIT_R32 || radix == FHJIT_R62) && log_n >= 0 && log_n <= IR_NTT_MAX_LOG) {
    fhjit_status st = lw_ntt_tuning_parse(ctx, default_plans[radix][log_n], &t);
    if (st) return st;
    const char *bp = batch_plan(env, radix, log_n, batch_rows);
    if (bp && (st = lw_ntt_tuning_parse(ctx, bp, &t))) return st;
    if (ir_ntt_is_forward(kind)) fwd = forward_plans[radix][log_n];
    else if ((st = lw_ntt_tuning_parse(ctx, inverse_plans[radix][log_n], &t))) return st;
  }
  lw_ntt_schedule sched;
  if (!lw_ntt_schedule_parse(ir_option(ctx, IR_OPT_NTT_SCHEDULE), &sched))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: %s: expected auto, two_kernel or cluster, not '%s'",
                    ir_option_label(ctx, IR_OPT_NTT_SCHEDULE), ir_option(ctx, IR_OPT_NTT_SCHEDULE));
  /* auto: the two kernels, faster on the H200 at every size measured
   * (docs/ntt-cluster.md, "Measured") */
  t.sched = sched == LW_NTT_SCHED_CLUSTER;
  if (fwd) {
    /* no context: where this plan fails (with the ntt_plan option's keys), the
     * shared one below reports for itself */
    lw_ntt_tuning tf = t;
    if (lw_ntt_tuning_parse(NULL, fwd, &tf) == FHJIT_OK && lw_ntt_tuning_parse(NULL, env, &tf) == FHJIT_OK &&
        lw_ntt_plan_make_tuned(NULL, radix, kind, log_n, rows, batch_rows, &tf, p) == FHJIT_OK &&
        (p->nkernels < 2 || p->k[0].blocks >= LW_NTT_ROWSYNC_MIN_BLOCKS))
      return FHJIT_OK;
  }
  fhjit_status st = lw_ntt_tuning_parse(ctx, env, &t);
  if (st) return st;
  return lw_ntt_plan_make_tuned(ctx, radix, kind, log_n, rows, batch_rows, &t, p);
}

static int pick(int tuned, int dflt) { return tuned >= 0 ? tuned : dflt; }

int lw_ntt_cluster_log_default(fhjit_radix radix, int log_n) {
  int ws_log = radix == FHJIT_R32 ? 2 : 3;
  int c = log_n + ws_log - 16;
  c = c < 1 ? 1 : c > 3 ? 3 : c;
  /* C = 4 lost to both its neighbours on the H200 (N = 2^16, d572449):
   * r32 C = 2 34.0 us, C = 4 45.2, C = 8 35.6; r62 C = 8 66.1, C = 4 84.0
   * (C = 2 does not fit). So 2 blocks where half a row fits 128 KB, else 8. */
  if (c == 2) c = log_n + ws_log - 1 <= 17 ? 1 : 3;
  return c;
}

/* The cluster kernel's passes over a slice's 2^s words: where they would
 * end on a short pass that a 16-byte vector holds (r62 1 stage, r32 up to
 * 2), the staged copy runs those stages on its vectors instead: no round
 * trip through shared memory and no barrier of its own (lw_ntt_kplan.tail,
 * as in the chunk kernels); not on the inverse's copies ahead. */
static void cluster_passes(lw_ntt_kplan *k, const lw_ntt_tuning *t, fhjit_radix radix, int fwd, int s) {
  int rem = s % k->log_e;
  int tail_bits = pick(t->tail, 1) && !(k->ahead && !fwd) ? (radix == FHJIT_R32 ? 2 : 1) : 0;
  k->tail = rem > 0 && rem <= tail_bits ? rem : 0;
  k->m = s; /* the passes cover the local bits [tail, s) of a slice */
  plan_passes(k, fwd);
  k->m = s + k->cluster;
}

/* The cluster schedule (lw_ntt_kplan.cluster; ntt_cluster.c) of the
 * transform p plans, replacing its kernels, which stay in p->two. C blocks
 * per cluster by default (lw_ntt_cluster_log_default): a block's slice of
 * the row of 64 or 128 KB (r32 2^14: 2 x 32 KB; r32 2^16: 2 x 128 KB; r62
 * 2^16: 8 x 64 KB; r62 2^17: 8 x 128 KB), at most the 8 of a portable
 * cluster. */
static fhjit_status make_cluster(fhjit_context *ctx, lw_ntt_plan *p, const lw_ntt_tuning *t) {
  int ws = p->radix == FHJIT_R32 ? 4 : 8, n = p->log_n;
  int fwd = ir_ntt_is_forward(p->kind);
  int c = pick(t->cluster, lw_ntt_cluster_log_default(p->radix, n));
  int s = n - c;
  lw_ntt_kplan k;
  memset(&k, 0, sizeof k);
  k.cluster = c;
  k.log_e = pick(t->e_cluster, p->radix == FHJIT_R32 ? 4 : 3);
  if (k.log_e > s) k.log_e = s;
  /* columns of the cross-block stages per thread: about E words at once;
   * with the vector exchange at least a 16-byte vector's worth (r62 2, r32
   * 4: U grows at C = 8, r62 2^16 and 2^17, r32 2^17) */
  int ws_log = lw_ntt_ilog2((uint64_t)ws), v_log = 4 - ws_log;
  k.xvec = pick(t->xvec, 1);
  k.log_u = k.log_e > c ? k.log_e - c : 0;
  if (k.xvec && k.log_u < v_log) k.log_u = v_log;
  k.log_u = pick(t->u_cluster, k.log_u);
  int lt = pick(t->t_cluster, 9);
  /* every thread has work in each phase: columns (S / C of a block), pass
   * groups (S / E) and staged vectors (S / V) */
  if (lt > s - c - k.log_u) lt = s - c - k.log_u;
  if (lt > s - k.log_e) lt = s - k.log_e;
  if (lt < 5 || (ws << k.log_e) < 16)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: NTT cluster plan for N = 2^%d: %d blocks per cluster and %d words "
                    "per thread leave a block less than a warp of work, or fewer words than a "
                    "16-byte vector (see FHJIT_NTT_PLAN)",
                    n, 1 << c, 1 << k.log_e);
  k.threads = 1u << lt;
  /* blocks per SM asked of ptxas (a register cap): ncu of r32 2^16 x 64
   * (C = 2, 3e20f99) showed 96 registers, one block of 512 threads per SM
   * and 25% of the warps, the blocks of a row all in one phase */
  k.minb = pick(t->minb_cluster, 0);
  /* not twsplit: the cluster kernel's twiddles as products measured
   * slower (r32 2^16 x 64 forward 42.7 us against 33.8, H100, 2026-12-06) */
  k.twsplit = 0;
  /* several rows per cluster in turn, the next one's loads ahead (the
   * inverse's as asynchronous copies into its second slice, where no tail
   * stages can run on them) */
  k.log_rows = pick(t->rows_cluster, 0);
  k.ahead = k.log_rows > 0 ? pick(t->ahead_cluster, 1) : 0;
  cluster_passes(&k, t, p->radix, fwd, s);
  k.log_subs = 0;
  k.pad_shift = pick(t->pad_chunk, p->radix == FHJIT_R32 ? 5 : 4);
  /* the vector exchange's vectors: the thread's U consecutive columns to
   * (from) one block, in pieces of at most 16 bytes that stay within one
   * run of 2^pad_shift unpadded words; the padding steps by a vector
   * (x + ((x >> pad_shift) << log_xw)), so that an aligned piece is aligned
   * in the padded slice too (a one-word step would shift every run but the
   * first off the vector grid) */
  if (k.xvec) {
    k.log_xw = k.log_u < v_log ? k.log_u : v_log;
    if (k.pad_shift && k.log_xw > k.pad_shift) k.log_xw = k.pad_shift;
    k.pad_w = k.log_xw;
  }
  int64_t words = (INT64_C(1) << s) + (k.pad_shift ? ((INT64_C(1) << s) >> k.pad_shift) << k.pad_w : 0);
  words = (words + 3) & ~INT64_C(3);
  k.slice_words = (uint32_t)words;
  /* ahead by default only where its buffer fits beside the slice */
  if (k.ahead && t->ahead_cluster < 0 &&
      (words + (fwd ? INT64_C(1) << s : words)) * ws > LW_NTT_CLUSTER_SMEM_MAX) {
    k.ahead = 0;
    cluster_passes(&k, t, p->radix, fwd, s);
  }
  /* ahead: the forward's staging area (S words), the inverse's second slice */
  if (k.ahead) words += fwd ? INT64_C(1) << s : words;
  k.smem_words = (uint32_t)words;
  int64_t per = INT64_C(1) << k.log_rows;
  k.blocks = ((p->batch_rows + per - 1) / per) << c;
  k.pre = k.post = 1;
  if (k.npass > LW_NTT_CLUSTER_MAX_PASSES || words * ws > LW_NTT_CLUSTER_SMEM_MAX)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: NTT cluster plan for N = 2^%d: %d passes and %lld bytes of shared "
                    "memory per block (at most %d and %d; see FHJIT_NTT_PLAN)",
                    n, k.npass, (long long)(words * ws), LW_NTT_CLUSTER_MAX_PASSES, LW_NTT_CLUSTER_SMEM_MAX);
  p->two_nkernels = p->nkernels;
  memcpy(p->two, p->k, sizeof p->two);
  p->nkernels = 1;
  memset(p->k, 0, sizeof p->k);
  p->k[0] = k;
  return FHJIT_OK;
}

fhjit_status lw_ntt_plan_make_tuned(fhjit_context *ctx, fhjit_radix radix, ir_ntt_kind kind,
                                    int log_n, int64_t rows, int64_t batch_rows,
                                    const lw_ntt_tuning *tuning, lw_ntt_plan *p) {
  memset(p, 0, sizeof *p);
  lw_ntt_tuning t;
  if (tuning) t = *tuning;
  else lw_ntt_tuning_default(&t);
  if (log_n < IR_NTT_MIN_LOG || log_n > IR_NTT_MAX_LOG)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: NTT size N = 2^%d is outside the supported 2^%d .. 2^%d", log_n,
                    IR_NTT_MIN_LOG, IR_NTT_MAX_LOG);
  if ((unsigned)kind >= IR_NTT_NUM_KINDS || (radix != FHJIT_R32 && radix != FHJIT_R62))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: NTT: unknown kind %d or radix %d",
                    (int)kind, (int)radix);
  if (rows < 1 || batch_rows < rows || batch_rows % rows)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "error: NTT: %lld batch rows is not a positive multiple of %lld rows",
                    (long long)batch_rows, (long long)rows);
  if (batch_rows > (INT64_C(1) << 40) >> log_n)
    return ir_error(ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: NTT over %lld rows of 2^%d words is too large for one launch grid",
                    (long long)batch_rows, log_n);
  p->radix = radix;
  p->kind = kind;
  p->log_n = log_n;
  p->rows = rows;
  p->batch_rows = batch_rows;
  p->pminor = pick(t.pminor, 1);
  p->reduce_minb = pick(t.minb_red, 0);
  p->epi_minb = pick(t.minb_epi, 0);
  p->reduce_smem = pick(t.ipsmem, 0);
  p->src_nax = 1;
  p->src_ext[0] = batch_rows;
  p->src_stride[0] = INT64_C(1) << log_n;
  p->src_offset = 0;
  p->src_index_stride = 1;
  p->tw_offset = 0;
  p->tw_row_stride = INT64_C(1) << log_n;
  int fwd = ir_ntt_is_forward(kind);
  int ws = radix == FHJIT_R32 ? 4 : 8;
  /* r62 butterflies are bound by 64-bit products: 8 words per thread keeps
   * registers (and so occupancy) reasonable; r32 is bound by memory and
   * takes 16 words per thread, one pass fewer through shared memory. */
  int log_e = radix == FHJIT_R32 ? 4 : 3;
  /* C words of a column run: 128 bytes. */
  int log_cols = radix == FHJIT_R32 ? 5 : 4;
  int pad_chunk = pick(t.pad_chunk, radix == FHJIT_R32 ? 5 : 4);
  /* the stages of a 16-byte vector: r62 1, r32 2 */
  int tail_bits = pick(t.tail, 1) ? (radix == FHJIT_R32 ? 2 : 1) : 0;
  int one_max = pick(t.one, 12);
  /* Whole rows per block leave most of the GPU idle when there are few rows
   * (2^12 x 32 rows: 32 blocks on 132 SMs, each bound by its products):
   * then two kernels of many small blocks, though they pass over memory
   * twice (small N: L2-resident anyway). */
  int few_blocks = 0;
  if (t.one < 0 && log_n <= one_max && log_n >= SMALL_SPLIT_MIN_LOG) {
    int le = log_e < log_n ? log_e : log_n;
    int log_c = pick(t.t_one, 8) - (log_n - le);
    if (log_c < 0) log_c = 0;
    few_blocks = (batch_rows >> log_c) < FEW_BLOCKS;
  }
  if (log_n <= one_max && !few_blocks) {
    p->nkernels = 1;
    lw_ntt_kplan *k = &p->k[0];
    k->cols = 0;
    k->m = log_n;
    k->log_e = pick(t.e_one, log_e);
    if (k->log_e > log_n) k->log_e = log_n;
    k->log_subs = 0;
    /* whole rows per block: about 256 threads, C dividing batch_rows */
    int log_c = pick(t.t_one, 8) - (log_n - k->log_e);
    if (log_c < 0) log_c = 0;
    while (log_c > 0 && batch_rows % (INT64_C(1) << log_c)) log_c--;
    k->log_c = log_c;
    k->pre = k->post = 1;
    k->minb = pick(t.minb, 0);
    finish_kernel(k, fwd, pad_chunk, batch_rows, tail_bits);
  } else {
    p->nkernels = 2;
    int m_col = pick(t.n1, log_n - (log_n + 1) / 2);
    if (m_col < 1 || m_col >= log_n)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: FHJIT_NTT_PLAN: n1=%d does not split N = 2^%d", m_col, log_n);
    int m_chunk = log_n - m_col;
    lw_ntt_kplan col = {0}, chunk = {0};
    col.cols = 1;
    col.m = m_col;
    col.log_e = pick(t.e_col, log_e);
    col.log_subs = m_chunk;
    /* small N split for parallelism: column runs of 32 bytes (one sector)
     * or more, blocks of 64 threads (two full warps) */
    int small_cols = 6 - (m_col - (col.log_e < m_col ? col.log_e : m_col));
    if (small_cols < (radix == FHJIT_R32 ? 3 : 2)) small_cols = radix == FHJIT_R32 ? 3 : 2;
    col.log_c = pick(t.c_col, few_blocks ? small_cols : log_cols);
    if (col.log_c > m_chunk) col.log_c = m_chunk;
    chunk.cols = 0;
    chunk.m = m_chunk;
    chunk.log_e = pick(t.e_chunk, log_e);
    if (chunk.log_e > m_chunk) chunk.log_e = m_chunk;
    chunk.log_subs = m_col;
    chunk.log_c = pick(t.t_chunk, few_blocks ? 6 : 8) - (m_chunk - chunk.log_e); /* threads per block */
    if (chunk.log_c < 0) chunk.log_c = 0;
    if (chunk.log_c > m_col) chunk.log_c = m_col;
    col.minb = pick(t.minb_col, 0);
    chunk.minb = pick(t.minb_chunk, 0);
    finish_kernel(&col, fwd, pick(t.pad_col, 0), batch_rows, 0);
    finish_kernel(&chunk, fwd, pad_chunk, batch_rows, tail_bits);
    if (fwd) {
      p->k[0] = col, p->k[1] = chunk;
    } else {
      p->k[0] = chunk, p->k[1] = col;
    }
    p->k[0].pre = 1;
    int pdl = pick(t.pdl, 1);
    /* per-row waits pay from 2^16 on, when kernel 0's grid is large (rows
     * then finish one after another over its waves); at 2^14 they measured
     * 2-10% slower than the grid-wide wait, and at 2^16 with a grid of 256
     * or 512 blocks 3-7% slower (bench/RESULTS.md rounds 10 and 12) */
    int rowsync_default = log_n >= 16 && p->k[0].blocks >= LW_NTT_ROWSYNC_MIN_BLOCKS;
    if (pdl && pick(t.rowsync, rowsync_default) && batch_rows <= LW_NTT_ROWSYNC_MAX_ROWS) pdl = 2;
    p->k[0].pdl = p->k[1].pdl = pdl;
    p->k[0].entry = p->k[1].entry = pdl && pick(t.entry, 1);
    p->k[1].post = 1;
    p->k[1].in_place = 1;
  }
  /* Shared twiddle constants (see lw_ntt_kplan.tws), where they fit. */
  int tws = pick(t.tws, 0);
  for (int j = 0; j < p->nkernels; j++) {
    lw_ntt_kplan *k = &p->k[j];
    if (!(k->cols ? tws >= 1 : tws >= 2)) continue;
    /* columns: all levels (every column of the block shares them); chunks:
     * the levels with fewer twiddles than the chunk has threads */
    int lg = k->cols ? k->m : k->m - k->log_e;
    if (lg < 1) continue;
    uint32_t at = (k->smem_words + 3u) & ~3u; /* 16-byte aligned pairs */
    int64_t words = (int64_t)at + ((INT64_C(2) << lg) << (k->cols ? 0 : k->log_c));
    if (words * ws > SMEM_LIMIT_BYTES) continue;
    k->tws = 1;
    k->early = !k->staged_load && pick(t.early, 0) == 1;
    k->tws_log = lg;
    k->tws_word = at;
    k->smem_words = (uint32_t)words;
  }
  for (int j = 0; j < p->nkernels; j++) {
    lw_ntt_kplan *k = &p->k[j];
    k->shoup = radix == FHJIT_R62 ? pick(t.shoup, 0) : 0;
    k->twpf = pick(t.twpf, 0);
    k->twsplit = radix == FHJIT_R32 ? pick(t.twsplit, 0) : 0;
    k->twvec = pick(t.twvec, 0);
    k->l2pf = pick(t.l2pf, 0);
    k->epivec = pick(t.epivec, 1);
    k->epipf = pick(t.epipf, 0);
    k->epics = pick(t.epics, 0);
    k->provec = pick(t.provec, 1);
    if (k->threads > 1024 || (int64_t)k->smem_words * ws > SMEM_LIMIT_BYTES)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: NTT plan for N = 2^%d: kernel %d needs %u threads and %lld bytes "
                      "of shared memory per block (at most 1024 and %d; see FHJIT_NTT_PLAN)",
                      log_n, j, k->threads, (long long)k->smem_words * ws, SMEM_LIMIT_BYTES);
    /* the staged copy moves 16-byte vectors, one per thread at least */
    if (!k->cols && (ws << k->log_e) < 16)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                      "error: NTT plan for N = 2^%d: kernel %d holds %d words per thread, fewer "
                      "than a 16-byte vector (see FHJIT_NTT_PLAN)",
                      log_n, j, 1 << k->log_e);
  }
  /* the cluster schedule where asked for (explicitly, or by ntt_schedule)
   * and the size has it; other sizes keep the two kernels */
  int cluster = t.cluster > 0 || (t.cluster < 0 && t.sched == 1);
  if (cluster && log_n >= LW_NTT_CLUSTER_MIN_LOG && log_n <= LW_NTT_CLUSTER_MAX_LOG)
    return make_cluster(ctx, p, &t);
  return FHJIT_OK;
}

/* Whether kernel k's first pass is the full pass over its top log_e bits,
 * which the registers' permutation needs (plan_passes: a forward plan's
 * is, unless its tail leaves fewer bits than log_e). */
static int full_top_pass(const lw_ntt_kplan *k) {
  return k->pass_e[0] == k->log_e && k->pass_b[0] + k->log_e == k->m;
}

int lw_ntt_plan_aut(lw_ntt_plan *p, int64_t k, int k1, int reg) {
  lw_ntt_kplan *k0 = &p->k[0];
  if (p->nkernels != 2 || k0->cluster || !k0->cols || p->reduce_members > 0 ||
      !ir_ntt_is_forward(p->kind) || k < 1 || k >= (INT64_C(2) << p->log_n) || !(k & 1))
    return 0;
  p->aut_k = k;
  p->aut_reg = reg && full_top_pass(k0);
  p->aut_reg1 = k1 == LW_AUT_REGS && full_top_pass(&p->k[1]);
  if (!p->aut_reg) k0->staged_load = 1, k0->early = 0;
  if (k1 == LW_AUT_STAGED || (k1 == LW_AUT_REGS && !p->aut_reg1))
    p->k[1].staged_load = 1, p->k[1].early = 0;
  return 1;
}

void lw_ntt_plan_reduce(lw_ntt_plan *p, int members, int64_t out_rows, int acc) {
  /* a cluster plan's two-kernel schedule (the reduce loop runs the
   * two-kernel body) */
  if (p->nkernels && p->k[0].cluster) {
    p->nkernels = p->two_nkernels;
    memcpy(p->k, p->two, sizeof p->k);
  }
  lw_ntt_kplan *k = &p->k[p->nkernels - 1];
  /* one row per block: a block's rows are the same output row of every
   * member (whole-row blocks of one-kernel plans keep one row) */
  if (k->log_c > k->log_subs) {
    int d = k->log_c - k->log_subs;
    k->log_c = k->log_subs;
    k->threads >>= d;
    k->blocks <<= d;
    if (!k->cols) {
      uint32_t body = (uint32_t)lw_ntt_chunk_stride(k);
      if (k->tws) {
        /* the shared twiddles after the (smaller) body, as planned */
        int lg = k->tws_log;
        uint32_t at = (body + 3u) & ~3u;
        k->tws_word = at;
        body = at + (uint32_t)(2u << lg);
      }
      k->smem_words = body;
    }
  }
  k->early = 0; /* the first pass's words of each member are loaded in its pass */
  if (p->reduce_minb > 0) k->minb = p->reduce_minb;
  /* shared slots: only with slots, never the last member's, and as many
   * as fit the static shared memory beside the body */
  int nsmem = acc > 0 ? 0 : p->reduce_smem;
  if (nsmem > members - 1) nsmem = members - 1;
  int64_t ws = p->radix == FHJIT_R32 ? 4 : 8;
  while (nsmem > 0 && ((int64_t)k->smem_words + ((int64_t)nsmem << (k->log_c + k->m))) * ws > SMEM_LIMIT_BYTES)
    nsmem--;
  p->reduce_smem = nsmem;
  /* per-row completion counters count batch rows, which the reduce loop
   * visits out of order: the grid-wide wait instead */
  for (int j = 0; j < p->nkernels; j++)
    if (p->k[j].pdl == 2) p->k[j].pdl = 1;
  int64_t bpr = INT64_C(1) << (k->log_subs - k->log_c);
  int64_t polys = p->batch_rows / p->rows;
  k->blocks = polys * out_rows * bpr;
  p->reduce_members = members;
  p->reduce_rows = out_rows;
  p->reduce_acc = acc;
}

void lw_ntt_plan_describe(const lw_ntt_plan *p, char *buf, size_t size) {
  size_t used = 0;
  used += (size_t)snprintf(buf, size, "%d kernel%s:", p->nkernels, p->nkernels > 1 ? "s" : "");
  for (int j = 0; j < p->nkernels && used < size; j++) {
    const lw_ntt_kplan *k = &p->k[j];
    used += (size_t)snprintf(buf + used, size - used, "%s %s M=2^%d C=%d E=%d T=%u passes ",
                             j ? " |" : "", k->cols ? "cols" : "chunks", k->m, 1 << k->log_c,
                             1 << k->log_e, k->threads);
    for (int i = 0; i < k->npass && used < size; i++)
      used += (size_t)snprintf(buf + used, size - used, "%s%d", i ? "+" : "", k->pass_e[i]);
    if (used < size)
      used += (size_t)snprintf(buf + used, size - used, " pad %d grid %lld smem %u B",
                               k->pad_shift, (long long)k->blocks,
                               k->smem_words * (p->radix == FHJIT_R32 ? 4u : 8u));
    if (used < size && k->minb)
      used += (size_t)snprintf(buf + used, size - used, " minb %d", k->minb);
    if (used < size && j == p->nkernels - 1 && p->reduce_members > 0 && p->reduce_smem > 0)
      used += (size_t)snprintf(buf + used, size - used, " shared slots %d", p->reduce_smem);
    if (used < size && k->tws)
      used += (size_t)snprintf(buf + used, size - used, " tws");
    if (used < size && k->shoup)
      used += (size_t)snprintf(buf + used, size - used, " shoup %d", k->shoup);
    if (used < size && k->tail)
      used += (size_t)snprintf(buf + used, size - used, " tail %d", k->tail);
    if (used < size && k->twsplit)
      used += (size_t)snprintf(buf + used, size - used, " twsplit %d", k->twsplit);
    if (used < size && k->twvec)
      used += (size_t)snprintf(buf + used, size - used, " twvec");
    if (used < size && p->aut_k)
      used += (size_t)snprintf(buf + used, size - used, " automorphism %lld", (long long)p->aut_k);
    if (used < size && k->pdl)
      used += (size_t)snprintf(buf + used, size - used, j ? " waits" : " triggers");
    if (used < size && k->cluster)
      used += (size_t)snprintf(buf + used, size - used, " cluster %d U=%d", 1 << k->cluster,
                               1 << k->log_u);
    if (used < size && k->cluster && k->xvec)
      used += (size_t)snprintf(buf + used, size - used, " xvec %d", 1 << k->log_xw);
    if (used < size && k->cluster && k->log_rows)
      used += (size_t)snprintf(buf + used, size - used, " rows %d%s", 1 << k->log_rows,
                               k->ahead ? " ahead" : "");
  }
}

uint64_t lw_epics_params(const fhjit_graph *sub, int log_n) {
  uint64_t params = 0;
  for (int j = 0; j < sub->ninputs && 2 + j < 64; j++) {
    const ir_node *in = &sub->nodes[sub->inputs[j]];
    if ((in->type.kind == FHJIT_KIND_POLY || in->type.kind == FHJIT_KIND_KEY) &&
        in->type.n == INT64_C(1) << log_n && in->layout.index_stride != 0)
      params |= UINT64_C(1) << (2 + j);
  }
  return params;
}
