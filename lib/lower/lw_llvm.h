/* lw_llvm.h: internal interface of the lowering (prefix lw_) between the
 * target-neutral graph -> LLVM IR builder (lower.c), the GPU path (emit.c)
 * and the host JIT (host.c). Not seen by the runtime (see lower.h). */
#ifndef FHJIT_LW_LLVM_H
#define FHJIT_LW_LLVM_H

#include <llvm-c/Core.h>

#include "lower/lower.h"

#define LW_BLOCK 256 /* threads per block of the fused kernel */
#define LW_VMAX 4    /* most elements one thread handles */

typedef enum lw_target { LW_GPU = 0, LW_HOST } lw_target;

/* The compile-time facts of a bound graph's fused kernel: the index space it
 * walks and how it is cut into per-thread groups of `vec` elements. */
typedef struct lw_plan {
  char name[LW_NAME_MAX]; /* kernel symbol (PTX identifier): lw_graph_symbol */
  int vec;       /* elements per thread: 16 bytes of words when n % vec == 0, else 1 */
  int idx_bits;  /* 32 when every index of the walk fits 31 bits, else 64 */
  int nbatch;    /* the walk's batch axes: the broadcast of the results' */
  int64_t batch[FHJIT_MAX_BATCH];
  int64_t rows, n;
  int64_t work;   /* prod(batch) * rows * n */
  int64_t groups; /* work / vec */
  int per_thread; /* GPU: groups one thread handles, a block's width apart (1) */
  int block;      /* GPU: threads per block (LW_BLOCK) */
  int64_t result_offset; /* GPU: words added to every result's offset (a step writing
                          * rows of a larger buffer; the host passes offset pointers) */
  const int64_t *result_offsets; /* GPU: NULL, or per result words added to its offset
                                  * (results at several places of one buffer:
                                  * mixsteps_mdgroup.c, md_group; the host passes offset
                                  * pointers) */
  int pdl_entry;  /* GPU: a dependent launch (lw_dependent_entry at the kernel's entry, no
                   * noalias arguments): a step of a program (anchor_gpu.c) */
  int aut_stage;  /* GPU: stage coefficient-domain automorphism sources in shared memory
                   * (FHJIT_PW_PLAN A=1; lower_body.c emit_stage says when it applies) */
  /* The kernel's basis (SPEC section 7), set by lw_plan_graph: row r of the
   * walk computes with parameter column basis[r] (a chain position); NULL:
   * [0, rows), the column is the row. Every node that computes with the
   * modulus (pointwise ops, the coefficient-domain automorphism) is on it;
   * nodes that only move words (inputs, extract, pack, rows, concat, the
   * NTT-domain automorphism) may be on others. Points into the bound
   * graph (ir_node.basis), valid while it stays bound. */
  const int32_t *basis;
} lw_plan;

/* The parameter column (and twiddle row) of row `row` (an i64 value) of a
 * value on basis cols[0 .. rows) (NULL: [0, rows)), as an i64 value: `row`
 * itself for NULL (no code at all, so graphs without bases keep their
 * IR), row + s for a contiguous basis [s, s + rows), a select chain for a
 * basis of few contiguous runs, else a load from an internal constant i32
 * table named `sym` in m (made once per module; addrspace 1 on the GPU). A
 * constant row gives a constant. */
LLVMValueRef lw_column(LLVMBuilderRef b, LLVMModuleRef m, lw_target target, const int32_t *cols,
                       int64_t rows, LLVMValueRef row, const char *sym);

/* Applies FHJIT_PW_PLAN (lower.h) to a plan from lw_plan_graph, for the
 * kernel of a pointwise graph: V, U and T on the GPU, V alone on the host
 * (whose bodies are the GPU's; tests check every V there). Errors:
 * FHJIT_ERR_ARGUMENT (a malformed plan), _UNSUPPORTED (too many blocks). */
fhjit_status lw_apply_pw_plan(fhjit_graph *g, lw_plan *plan, lw_target target);
/* Launch grid of a plan: blocks of plan->block threads, each thread
 * plan->per_thread groups. */
int64_t lw_plan_grid(const lw_plan *plan);

/* Test hook: when non-zero, plans use 64-bit indexing even for small walks
 * (so the 64-bit path is exercised without 2^31-element buffers). */
extern int lw_force_idx64;

/* The symbol of the fused kernel of a graph named graph_name: "fhjit_" +
 * the name, every character outside [A-Za-z0-9] replaced by '_', cut to
 * LW_NAME_MAX - 1 characters: a valid PTX and LLVM identifier whatever
 * the name holds (quoted names may hold any byte but NUL). The cut is safe
 * because such a module holds one kernel; programs of several kernels (NTT
 * anchors) name theirs by their structure alone (anchor.c, anchor_gpu.c). */
void lw_graph_symbol(const char *graph_name, char out[LW_NAME_MAX]);

/* 1 when module m already holds a function or global variable named `name`.
 * The symbols that anything looks up by name (kernels, host entry points,
 * evaluators) are unique by construction; the builders check it before
 * adding one, since LLVM would silently rename the second, and a lookup
 * would then find the first (wrong code). */
int lw_symbol_taken(LLVMModuleRef m, const char *name);
/* Whether the fused kernel reads v from memory (an address chain: an
 * input, or extract, rows and concat of address chains); the operands of
 * rows, concat and automorphism must be, else the step planner
 * materialises them. */
int lw_addressable(const fhjit_graph *g, fhjit_value v);
/* Whether every leaf of v's address chain (extract, rows and concat,
 * walked once each) satisfies is_leaf, which is asked first of each node
 * (v included); a node that is neither a leaf nor such a view fails. A
 * chain is a DAG: linear in its distinct nodes. -1 when out of memory. */
int lw_chain_leaves(const fhjit_graph *g, fhjit_value v,
                    int (*is_leaf)(const void *ctx, fhjit_value w), const void *ctx);
/* Records that internal error for `name` (FHJIT_ERR_LLVM). */
fhjit_status lw_duplicate_symbol(fhjit_context *ctx, const char *name);

/* Checks that the graph is bound and compilable as one fused kernel and
 * computes its plan (plan->basis included). rows, concat and automorphism
 * are loads from memory: their operands must be inputs of g (or extract,
 * rows and concat of inputs); a computed operand is refused ("must be
 * materialised"), as are nodes computing on different bases. Errors:
 * FHJIT_ERR_ARGUMENT (unbound), _UNSUPPORTED (located messages). */
fhjit_status lw_plan_graph(fhjit_graph *g, lw_plan *plan);

/* Builds the module of the fused kernel in context c (not yet verified or
 * optimised; triple and data layout are the caller's). For LW_GPU it holds
 * the kernel `plan->name` (PTX kernel calling convention, launch bounds);
 * for LW_HOST the functions `<name>_host(args..., i64 begin, i64 end)` and
 * `<name>_host_packed(ptr slots, i64 begin, i64 end)` (slot j holds argument
 * j as 64 bits). */
fhjit_status lw_build(fhjit_graph *g, const lw_plan *plan, lw_target target,
                      LLVMContextRef c, LLVMModuleRef *out);

/* The new-pass-manager pipeline the fused kernel's IR gets (see emit.c). */
extern const char *const lw_gpu_pipeline;
/* The pipeline of the NTT, conversion and step-plan GPU modules (emit.c). */
extern const char *const lw_kernel_pipeline;

/* The pipeline of a host NTT or conversion module (host_passes.c): by the
 * context's host_pipeline option (FHJIT_HOST_PIPELINE), lw_gpu_pipeline
 * ("lean", the default) or lw_kernel_pipeline ("gpu"). *passes NULL and
 * FHJIT_ERR_ARGUMENT recorded on ctx for any other value. */
fhjit_status lw_host_passes(fhjit_context *ctx, const char **passes);
/* 1 when text is a host_pipeline value ("", NULL, "lean", "gpu"); *gpu
 * says whether it asks for lw_kernel_pipeline. */
int lw_host_pipeline_parse(const char *text, int *gpu);

/* fhjit_emit with another IR pipeline (for tests and measurements); the text
 * is malloc'd and the caller's. NULL with the error recorded. */
char *lw_emit_with_pipeline(fhjit_graph *g, fhjit_emit_kind kind, const char *arch,
                            const char *pipeline);

/* For NTT anchors (anchor.c): adds to module m the internal always-inline
 * functions "<plan->name>.eval<c>", one per component c of result 0 of g:
 * word (params, pstride, inputs..., results..., index offset) returning that
 * component at element `offset` of the walk, nothing stored (the result
 * pointers are unused). plan->vec is 1, or 2 or 4 (ntt_emit_fuse.c's
 * vector epilogue: the index argument is then the group, offset / vec, of
 * vec consecutive elements in one row, the function returns their words as
 * a <vec x word> vector, and a register input takes vec arguments, one per
 * lane: the inputs' loads become vector loads where their layouts allow).
 * *values receives the most values (see lw_max_values) one of them
 * evaluates: each call, inlined, costs that many. */
fhjit_status lw_build_eval(fhjit_graph *g, const lw_plan *plan, lw_target target,
                           LLVMContextRef c, LLVMModuleRef m, int64_t *values);
/* The same, input #reg_input (>= 0) not loaded: its value at the element is
 * the functions' last argument (a word), for NTT epilogues whose operand is
 * in registers. reg_input -1: lw_build_eval. */
fhjit_status lw_build_eval_reg(fhjit_graph *g, const lw_plan *plan, lw_target target,
                               LLVMContextRef c, LLVMModuleRef m, int32_t reg_input,
                               int64_t *values);
/* The same with nreg (<= LW_MAX_REG) register inputs: input reg_input[j]'s
 * value is the functions' argument j after the index offset (an ipfuse
 * epilogue: the key switch's inner product over the digits of one batched
 * forward NTT, each digit's value in registers). */
#define LW_MAX_REG 16
fhjit_status lw_build_eval_regs(fhjit_graph *g, const lw_plan *plan, lw_target target,
                                LLVMContextRef c, LLVMModuleRef m, const int32_t *reg_input,
                                int nreg, int64_t *values);
/* The same for result `result` of g (>= 0), its functions named
 * "<plan->name>.r<result>.eval<c>" for result > 0 (an ipfuse epilogue that
 * accumulates member by member: result k folds member k into the sum). A
 * register input of several components is read at the component being
 * evaluated: the caller passes that component's word. */
fhjit_status lw_build_eval_result(fhjit_graph *g, const lw_plan *plan, lw_target target,
                                  LLVMContextRef c, LLVMModuleRef m, int32_t result,
                                  const int32_t *reg_input, int nreg, int64_t *values);

/* The compile-time bound (docs/limits.md): one kernel body evaluates at most
 * this many values, a value being one component of one node in one index
 * context (plus one per index context), counted once per copy of the body
 * in the kernel (lower.c) or per inlined call of an evaluator
 * (ntt_emit_fuse.c).
 * LLVM's passes and NVPTX code generation take time and memory about
 * linear in it, at worst about 1.3 ms and 100 KB a value on the 2-core
 * reference machine (8,189 r32 products, 4 lanes: 10.6 s, 800 MB), so the
 * default keeps a kernel within about ten seconds and one GB.
 * The max_values option (FHJIT_MAX_VALUES; 1 to the ceiling) overrides it at
 * every lowering. Past
 * it, the lowering fails with FHJIT_ERR_UNSUPPORTED before LLVM's passes
 * run. */
#define LW_MAX_VALUES_DEFAULT 8192
#define LW_MAX_VALUES_CEILING 100000000
/* The bound in force (the max_values option of g's context, else
 * FHJIT_MAX_VALUES); FHJIT_ERR_ARGUMENT (recorded) when malformed. */
fhjit_status lw_max_values(fhjit_graph *g, int64_t *limit);
/* The bound a max_values text sets (NULL or "": the default): 0, or -1
 * when it is not a whole number from 1 to the ceiling. */
int lw_max_values_parse(const char *text, int64_t *limit);

/* evalstream.c (GPU): every load of evaluator fn from its pointer
 * parameters whose bits params sets (bit i: parameter i; the sub-graph's
 * inputs) made a streaming load of the same address and value (not
 * allocated in the L1, evict-first in the L2; or ld.global.cs where cs):
 * read once, so the L2 evicts it before the lines other steps still read. */
fhjit_status lw_eval_stream_loads(fhjit_context *ctx, LLVMValueRef fn, uint64_t params, int cs);

/* Number of kernel arguments: params, pstride, inputs, results. */
static inline int32_t lw_num_args(const fhjit_graph *g) {
  return 2 + g->ninputs + g->nresults;
}

#endif
