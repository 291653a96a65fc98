/* lower.h: the lowering of bound graphs to LLVM IR (prefix lw_), and the
 * description of compiled kernels that the runtime launches. The runtime
 * knows nothing of graphs beyond this description. */
#ifndef FHJIT_LOWER_H
#define FHJIT_LOWER_H

#include "ir/ir.h"

/* What one kernel argument is, in order. */
typedef enum lw_arg_kind {
  LW_ARG_PARAMS = 0, /* pointer: the parameter table */
  LW_ARG_PSTRIDE,    /* i64: its row stride in words */
  LW_ARG_INPUT,      /* pointer: base of input #index */
  LW_ARG_RESULT,     /* pointer: dense buffer of result #index */
  LW_ARG_SCRATCH,    /* pointer: scratch buffer #index (multi-kernel plans) */
  LW_ARG_OWN         /* i64: 1 when the launch uses the kernel's own buffers (a->scratch
                      * NULL, so launches of the kernel do not overlap in time), else 0:
                      * NTT kernels then may use the completion counters of their module */
} lw_arg_kind;

#define LW_MAX_ARGS 64
#define LW_NAME_MAX 64 /* kernel symbols, their NUL included (lw_graph_symbol) */
#define LW_MAX_KERNELS 128 /* graphs with NTTs and limb mixing run several (a key switch
                             * of 7 digits at N = 2^16: about 60) */

typedef struct lw_arg {
  lw_arg_kind kind;
  int32_t index;
} lw_arg;

typedef struct lw_kernel {
  char name[LW_NAME_MAX]; /* symbol in the PTX, unique in the program */
  uint32_t grid[3];    /* launch grid */
  uint32_t block[3];   /* launch block */
  uint32_t shared_bytes; /* dynamic shared memory */
  uint32_t flags;      /* LW_KERNEL_* */
  /* thread-block cluster (sm_90 on), blocks per cluster in each dimension,
   * each dividing the grid's: all 0 (or a product of 1) for no cluster; a
   * kernel with a larger cluster is launched through cuLaunchKernelEx with
   * CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (docs/abi.md) */
  uint32_t cluster[3];
  int32_t nargs;
  lw_arg args[LW_MAX_ARGS];
} lw_kernel;

/* Appends argument (kind, index) to k, counting past LW_MAX_ARGS without
 * writing there: the one who fills a kernel's arguments checks k->nargs
 * against LW_MAX_ARGS before anyone reads them (anchor_gpu.c). */
static inline void lw_kernel_arg(lw_kernel *k, lw_arg_kind kind, int64_t index) {
  if (k->nargs < LW_MAX_ARGS) k->args[k->nargs] = (lw_arg){kind, index};
  k->nargs++;
}

/* Launched with programmatic stream serialization (sm_90 on): the kernel
 * may start while the one before it in the program runs, reads only the
 * program's immutable inputs (parameters, twiddles) until its
 * griddepcontrol.wait, which returns once that kernel has completed and its
 * writes are visible. */
#define LW_KERNEL_PDL 1u

/* Blocks per cluster of a kernel: 1 when it has none. */
static inline uint32_t lw_kernel_cluster_size(const lw_kernel *k) {
  return k->cluster[0] && k->cluster[1] && k->cluster[2] ? k->cluster[0] * k->cluster[1] * k->cluster[2] : 1;
}

/* A compiled GPU program: one PTX module, kernels launched in order on one
 * stream, and the scratch buffers they need (bytes each), which lie in one
 * arena of scratch_arena bytes, buffer s at scratch_offset[s] (a multiple of
 * 256): buffers that are never in use at one time share memory
 * (lib/lower/scratch.c). The runtime allocates the arena, and passes a
 * LW_ARG_SCRATCH argument as its base plus the buffer's offset. */
typedef struct lw_program {
  char *ptx; /* malloc'd, NUL-terminated */
  int32_t nkernels;
  lw_kernel kernels[LW_MAX_KERNELS];
  int32_t nscratch;
  int64_t scratch_bytes[LW_MAX_KERNELS];
  int64_t scratch_offset[LW_MAX_KERNELS];
  int64_t scratch_arena; /* 0 when nscratch is 0 */
} lw_program;

/* The per-thread work of pointwise GPU kernels, chosen at run time for
 * sweeps: FHJIT_PW_PLAN="V=4,U=2,T=256" (any subset, any order): V elements
 * per vector access (1, 2 or 4; at most 16 bytes, so 2 for r62; 1 when it
 * does not divide n), U groups of V per thread, T threads per block (a
 * multiple of 32 up to 1024), A=1 a block's coefficient-domain automorphism
 * sources loaded in source order into shared memory (A=0: per-lane loads).
 * Unset or empty: the default (16-byte vectors, U=1, T=256, A=0). Read at every lowering; the runtime keys its caches by it. */
typedef struct lw_pw_plan {
  int vec, per_thread, block; /* 0: the default */
  int aut; /* A=1: coefficient-domain automorphisms read through shared memory (lower.c) */
} lw_pw_plan;

/* The conversion kernels' tuning, chosen at run time for sweeps: the
 * context's bconv_plan option or FHJIT_BCONV_PLAN, "V=2,T=256,S=2,U=2"
 * (any subset, any order): V coefficients per thread (1, 2 or 4; 4 is
 * lowered to 2 for r62, at most 16 bytes), T threads per block (a power of
 * two, 32 .. 1024), S target-row groups (1 .. 256; lowered to the plan's
 * m), U target rows per loop iteration (1 .. 8), M the tensor-core form
 * (0 off; 1, 2 or 4: that many tiles of 16 coefficients per warp; r32
 * only, not rescale's lift). Unset or empty: the automatic plan. Read at
 * every lowering; the runtime keys its caches by it. */
typedef struct lw_bconv_tuning {
  int vec, threads, split, unroll; /* 0: automatic */
  int mma;                         /* 0: automatic, -1: off, else tiles per warp */
} lw_bconv_tuning;

/* 1 when valid (t filled), 0 when NULL or empty, -1 when malformed (why
 * says how). */
int lw_bconv_tuning_parse(const char *text, lw_bconv_tuning *t, char *why, size_t why_size);

/* A pointwise plan's text (the pw_plan option's syntax): 1 when valid
 * (plan filled), 0 when NULL or empty (the default), -1 when malformed (why
 * says how). */
int lw_pw_plan_parse(const char *text, lw_pw_plan *plan, char *why, size_t why_size);

/* The plan texts' syntax (pw_plan, bconv_plan): "K=value" entries joined
 * by commas. lw_plan_entry reads the entry at *s (key, value; *s then at
 * the value's end), lw_plan_sep the comma after it (*s then at the next
 * entry or the end); each returns -1 with why set when malformed, else
 * 0. */
int lw_plan_entry(const char **s, char *key, long *value, char *why, size_t why_size);
int lw_plan_sep(const char **s, char *why, size_t why_size);

/* Bound graph -> PTX for `arch` ("sm_90"; NULL: sm_90). Errors are recorded
 * on the graph's context. */
fhjit_status lw_compile_ptx(fhjit_graph *g, const char *arch, lw_program *out);
void lw_program_free(lw_program *p);
/* What lw_compile_ptx's program would be, without its code (out->ptx NULL):
 * the same kernels (names, launch facts, arguments) and scratch buffers,
 * from the plans alone (no LLVM). The runtime checks disk cache entries
 * against it. Errors as lw_compile_ptx's planning gives them. */
fhjit_status lw_describe_program(fhjit_graph *g, const char *arch, lw_program *out);

#endif
