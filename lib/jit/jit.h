/* jit.h: the host JIT layer (prefix jit_): one ORC LLJIT wrapper that turns
 * a module a caller builds into callable host code (jit_compile), and one
 * pthread splitter that runs a range of work items over several threads.
 * Every host kernel (the fused pointwise path, lib/lower/host.c; the NTT
 * kernels, lib/lower/ntt_emit.c; the base conversion, lib/lower/bconv_host.c)
 * goes through these two. Like lib/nvptx it knows no IR: errors are
 * recorded in the sp_err it is handed. */
#ifndef FHJIT_JIT_H
#define FHJIT_JIT_H

#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Core.h>

#include "support/support.h"

/* Compiled host code: an LLJIT holding one module, alive until
 * jit_destroy (the addresses jit_compile hands out live as long). */
typedef struct jit_code jit_code;

/* Builds the module of one host unit in context c: sets *m to a new module
 * in c (its triple and data layout are jit_compile's to set: nothing built
 * here may read them). On failure the error is recorded in the sp_err the
 * callback knows of and any module left in *m is jit_compile's to free. */
typedef fhjit_status (*jit_build_fn)(void *arg, LLVMContextRef c, LLVMModuleRef *m);

/* New host code: builds the module (build(arg, ...)) in the code's own
 * context, prepares it for the host machine, optimises it with the pipeline
 * `passes` (nv_pipeline; `what` names it in messages), hands it to a new
 * LLJIT and looks the nsym symbols syms[] up into addrs[]. The LLJIT
 * compiles at LLVMCodeGenLevelNone (fast instruction selection): the host
 * paths exist for CI, where compile time dominates; the IR they check is
 * optimised before it gets there. `who` names the unit in the JIT's
 * messages: "error: <who>: creating the host JIT: <LLVM's message>",
 * "error: <who>: compiling the host function: ...". Errors: the builder's,
 * FHJIT_ERR_LLVM (no host machine, the pipeline, the JIT), FHJIT_ERR_MEMORY
 * ("error: out of memory"); on failure nothing is left (*out NULL). */
fhjit_status jit_compile(sp_err *e, const char *what, const char *passes, jit_build_fn build,
                         void *arg, const char *who, const char *const *syms, int nsym,
                         void **addrs, jit_code **out);

void jit_destroy(jit_code *j);

/* ------------------------------------------------------------ splitter */

/* The most threads jit_split starts. */
#define JIT_MAX_THREADS 256

/* One thread's share of the work: items [begin, end). scratch: this
 * thread's own scratch_bytes (NULL when scratch_bytes is 0). */
typedef void (*jit_range_fn)(void *arg, int64_t begin, int64_t end, void *scratch);

/* Runs fn over the items [0, count) split into `threads` contiguous ranges
 * (clamped to 1 .. min(count, JIT_MAX_THREADS)), the first on the calling
 * thread; a thread that fails to start leaves its range to the caller.
 * Returns FHJIT_ERR_MEMORY ("error: <who>: out of memory") when a thread's
 * scratch could not be allocated (the other ranges have run). */
fhjit_status jit_split(sp_err *e, jit_range_fn fn, void *arg, int64_t count, int64_t threads,
                       size_t scratch_bytes, const char *who);

/* A host block kernel's entry (lib/lower: the NTT and conversion kernels):
 * blocks [begin, end) over the argument slots, with one block's shared
 * array. */
typedef void (*jit_block_fn)(const uint64_t *slots, int64_t begin, int64_t end, void *shared);

/* jit_split of block kernel fn over blocks [0, count) with the argument
 * slots, each thread its own shared array of shared_bytes. */
fhjit_status jit_run_blocks(sp_err *e, jit_block_fn fn, const uint64_t *slots, int64_t count,
                            int64_t threads, size_t shared_bytes, const char *who);

/* Online processors (at least 1). */
int64_t jit_cores(void);

#endif
