/* bconv.h: the basis conversion kernel of SPEC section 7 (prefix lw_bconv_):
 * fast bconv from l source rows to m target rows of every polynomial, and
 * rescale's lift (steps 1-2 before the forward transform), as one LLVM
 * function built for the GPU (NVPTX) or for the host (ORC JIT, same IR but
 * for the r62 multiply-accumulate and REDC chains, which are inline PTX on
 * the GPU). The step planner's programs (anchor_gpu.c, host.c) call it;
 * bconv.c says how the arithmetic stays exact.
 *
 * Semantics (docs/section7.md "Constant tables"), with the table words
 * a[i] = (h_i^-1 mod s_i) R mod s_i (i < l), then
 * c[j*l + i] = (h_i mod t_j) R mod t_j:
 *   X_i = the integer of source word w (standard: w mod s_i; Montgomery:
 *         REDC(w*1) mod s_i), w lazy ([0, 2 s_i), SPEC section 1),
 *   V_i = X_i h_i^-1 mod s_i (canonical),
 *   Y_j = sum_i V_i h_i mod t_j, written canonical in the source's form
 *         (Montgomery: Y_j R mod t_j).
 * Lift (rescale, l == 1, standard form, table unused): with q = s_0,
 * h = floor(q/2), c = the source word mod q (canonical expected, lazy
 * accepted), c' = c + h minus q if >= q, Y_j = (c' mod t_j) - (h mod t_j)
 * plus t_j if negative.
 *
 * Parameter table: column = chain position (src_cols / dst_cols), row r at
 * params + r * pstride (SPEC section 2; rows 0, 3, 4, 5 are read). */
#ifndef FHJIT_LOWER_BCONV_H
#define FHJIT_LOWER_BCONV_H

#include <llvm-c/Core.h>

#include "lower/counters.h"
#include "lower/lw_llvm.h"
#include "nvptx/nvptx.h"

#define LW_BCONV_MAX_L 32   /* source rows (the exact sums' bounds: bconv.c) */
#define LW_BCONV_MAX_M 256  /* target rows */
#define LW_BCONV_MAX_SHARED 49152 /* bytes of static shared memory */
#define LW_BCONV_MAX_DIGITS 16 /* conversions of one launch (lw_bconv_plan.digits) */

/* What differs between the conversions of one launch (digit k >= 1 of a
 * plan with digits > 1; digit 0 is the plan's own fields): the source
 * view's offset, the table's first word (in the digit's own table
 * argument), the destination offset and the columns. */
typedef struct lw_bconv_digit {
  int64_t src_offset, table_offset, dst_offset;
  const int32_t *src_cols, *dst_cols;
} lw_bconv_digit;

typedef struct lw_bconv_plan {
  fhjit_radix radix;
  int mont;      /* 1: source and result in Montgomery form, 0: standard */
  int lift;      /* 1: rescale's lift (above); requires l == 1, mont == 0 */
  int32_t l, m;  /* source rows, target rows */
  int log_n;     /* N = 2^log_n coefficients per row, 4..17 */
  int64_t polys; /* independent polynomials (components x batch entries) */
  /* Source element (p, r, i) is at src_offset + sum_a coord_a(p) *
   * src_stride[a] + r * src_row_stride + i * src_index_stride (words),
   * coord(p) = p in the row-major index space src_ext[0..src_nax) (whose
   * product is polys; src_nax 0: one polynomial). */
  int src_nax;
  int64_t src_ext[FHJIT_MAX_BATCH + 1], src_stride[FHJIT_MAX_BATCH + 1];
  int64_t src_offset, src_row_stride, src_index_stride;
  int64_t table_offset; /* first word of the table in its buffer (index stride 1) */
  /* The destination: target row j of polynomial p at dst_offset + p *
   * dst_poly_stride + j N (words; dst_poly_stride 0: m N, dense). Nonzero
   * when the conversion writes rows of a larger buffer (modup's batched
   * forward NTT, mixsteps_ipfuse.c); applied in the kernel on both
   * targets. */
  int64_t dst_offset, dst_poly_stride;
  /* parameter-table columns (chain positions) of the l source and m target
   * rows; read by lw_bconv_plan_make, lw_bconv_build and
   * lw_bconv_host_create only (not kept) */
  const int32_t *src_cols, *dst_cols;
  /* digits (0 or 1: one conversion): that many conversions of this one
   * shape (l, m, N, polys, strides, form) in one launch, digit k >= 1 as
   * more[k - 1] says, each with its own table argument. Why: a key
   * switch's digits (mixsteps_ipfuse.c, batched_fwd) each fill one under-occupied
   * wave at N = 2^16 (r32 12 -> 48: 256 blocks); together the blocks of
   * all of them hide each other's latencies and the launches drop. The
   * grid is digits x the one-digit grid (digit_blocks each), block b
   * converting digit b / digit_blocks with its block b % digit_blocks;
   * phase 0 computes that digit's constants. */
  int digits;
  lw_bconv_digit more[LW_BCONV_MAX_DIGITS - 1];
  /* Tuning, 0 = automatic (lw_bconv_plan_make fills them): coefficients per
   * thread (1, 2 or 4, at most 16 bytes of words), threads per block (a
   * power of two, 32..1024), target-row groups (split: a thread converts
   * its coefficients to ceil(m / split) of the target rows, so split
   * threads share a coefficient group, each computing its V_i; 1..m,
   * lowered so that no group is empty) and target rows per loop iteration
   * (unroll: that many rows' sums interleaved, 1..8). */
  int vec;
  uint32_t threads;
  int split, unroll;
  /* launch facts, set by lw_bconv_plan_make: a 1-D grid of `blocks` blocks
   * (digit_blocks per digit) of `threads` threads; shared_bytes of static
   * shared memory (the kernel declares it: launch with 0 dynamic bytes) */
  uint32_t blocks, shared_bytes, digit_blocks;
  /* The tensor-core form (bconv_mma.c; r32, not lift, GPU
   * targets from sm_80): mma tiles of 16 coefficients per warp (1, 2 or
   * 4; in: 0 automatic, -1 off; out: 0 when not chosen). Its launch facts
   * are mma_blocks (mma_digit_blocks per digit) of mma_threads threads and
   * mma_shared_bytes; the scalar form's above stay set, for the host
   * (which always runs the scalar form: same results) and for targets
   * without the instruction (lw_bconv_for_target). */
  int mma;
  uint32_t mma_threads, mma_blocks, mma_digit_blocks, mma_shared_bytes;
  /* GPU: a dependent launch (lw_dependent_entry at the kernel's entry, no
   * noalias arguments); set for a step program by anchor_gpu.c */
  int pdl_entry;
  /* GPU: the grid's block x runs block blocks - 1 - x (the same work, in
   * reverse launch order), so that the rows it writes last are the first
   * the next step reads, while they are still in the L2; set for a step
   * program by anchor_gpu.c (bconv_reversed) */
  int rev;
  /* GPU, sm_90: its blocks count themselves done per digit (convsync:
   * counters.h, mixsteps_ipsync.c), for a forward NTT whose blocks wait
   * for their digit only; the kernel then takes LW_ARG_OWN last. Set for a
   * step program by the planner; off on targets without dependent
   * launches (lw_bconv_for_target). */
  lw_sync sig;
} lw_bconv_plan;

/* The launch facts of the form p builds for the GPU. */
void lw_bconv_launch(const lw_bconv_plan *p, uint32_t *blocks, uint32_t *threads,
                     uint32_t *shared_bytes);

/* Drops the tensor-core form where target t lacks mma.m16n8k32 (before
 * sm_80). */
void lw_bconv_for_target(lw_bconv_plan *p, const nv_target *t);

/* Applies the context's tuning (bconv_plan, lower.h's lw_bconv_tuning)
 * to plan p before lw_bconv_plan_make: FHJIT_ERR_ARGUMENT when it is
 * malformed. */
fhjit_status lw_bconv_tuning_apply(fhjit_context *ctx, lw_bconv_plan *p);

/* Validates the plan and sets vec and threads (when 0), blocks and
 * shared_bytes. Errors (recorded on ctx): FHJIT_ERR_ARGUMENT (a malformed
 * plan: null columns, a repeated column, extents not multiplying to polys,
 * lift with l != 1 or Montgomery form, bad tuning), FHJIT_ERR_UNSUPPORTED
 * (l, m or log_n out of range, constants beyond the shared memory, a grid
 * too large). */
fhjit_status lw_bconv_plan_make(fhjit_context *ctx, lw_bconv_plan *p);

/* Adds kernel `name` to module m for a plan lw_bconv_plan_make accepted.
 * Arguments: (ptr params, i64 pstride, ptr table, ptr src, ptr dst, then
 * with digits > 1 ptr table_1 .. table_{digits-1}); dst is
 * [polys, m, N] words (dense, or as dst_offset, dst_poly_stride say) and
 * must not overlap src. LW_GPU: a PTX kernel
 * with launch bounds and the static shared array "<name>.smem"; LW_HOST:
 * "<name>_host"(ptr slots, i64 block_begin, i64 block_end, ptr shared),
 * slot j holding argument j as 64 bits, running every thread of blocks
 * [block_begin, block_end) with `shared` a buffer of shared_bytes, and the
 * internal "<name>_host_body". Errors: FHJIT_ERR_LLVM (a symbol taken). */
fhjit_status lw_bconv_build(fhjit_context *ctx, const lw_bconv_plan *p, lw_target target,
                            const char *name, LLVMContextRef c, LLVMModuleRef m);

/* PTX of the plan's kernel alone (module "name", arch NULL: sm_90),
 * malloc'd, with the pipeline the NTT kernels get (default<O3>). */
fhjit_status lw_bconv_compile_ptx(fhjit_context *ctx, const lw_bconv_plan *p, const char *arch,
                                  const char *name, char **ptx);

/* Host path: the same kernel JIT-compiled for this machine. */
typedef struct lw_bconv_host lw_bconv_host;

fhjit_status lw_bconv_host_create(fhjit_context *ctx, const lw_bconv_plan *p,
                                  lw_bconv_host **out);
/* Runs it: src as the plan's view, dst [polys, m, N] as the plan's
 * dst_offset and dst_poly_stride place it (not overlapping src); table may be NULL in lift mode;
 * more_tables[k - 1] digit k's table (digits > 1; else unused, may be
 * NULL). threads: worker threads, 0 = automatic. */
fhjit_status lw_bconv_host_run(fhjit_context *ctx, lw_bconv_host *h, const void *params,
                               int64_t pstride, const void *table,
                               const void *const *more_tables, const void *src, void *dst,
                               int threads);
void lw_bconv_host_destroy(lw_bconv_host *h);

/* The GPU's r62 arithmetic as PTX (tests run it through a PTX
 * interpreter), all operands 64-bit, x0, c0 the low 32-bit halves of x, c
 * and x1, c1 the high ones. Multiply-accumulate: ($0, $1) = ($5, $6) +
 * x0 c0 + 2^64 x1 c1 over 128 bits ($0 the low word), $2 = $7 + x0 c1 +
 * x1 c0, with x = $3, c = $4. Reduction: with S = ($1, $2) + 2^32 $3,
 * t = $4 (odd), k64 = $5 = -t^-1 mod 2^64: $0 = (S + m t) / 2^64, m =
 * lo64(S) k64 mod 2^64 (for S + m t below 2^128). */
extern const char lw_bconv_mac62_ptx[];
extern const char lw_bconv_reduce62_ptx[];

#endif
