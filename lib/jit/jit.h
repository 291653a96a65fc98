/* jit.h: the host JIT layer (prefix jit_): one ORC LLJIT wrapper that turns
 * an optimised LLVM module into callable host code, and one pthread
 * splitter that runs a range of work items over several threads. Every host
 * kernel (the fused pointwise path, lib/lower/host.c; the NTT kernels,
 * lib/lower/ntt_emit.c) goes through these two. Like lib/nvptx it knows no
 * IR: errors are recorded in the sp_err it is handed. */
#ifndef FHJIT_JIT_H
#define FHJIT_JIT_H

#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Core.h>

#include "support/support.h"

/* Compiled host code: an LLJIT holding one module, alive until
 * jit_destroy (the addresses jit_lookup hands out live as long). */
typedef struct jit_code jit_code;

/* A new, empty JIT code object whose LLVM context (jit_llvm_context) the
 * caller builds its module in. NULL after recording FHJIT_ERR_MEMORY. */
jit_code *jit_create(sp_err *e);
LLVMContextRef jit_llvm_context(jit_code *j);

/* Hands the (verified, optimised) module m, built in j's context, to a new
 * LLJIT for the host machine at LLVMCodeGenLevelNone (fast instruction
 * selection): the host paths exist for CI, where compile time dominates;
 * the IR they check is optimised before it gets here. m is owned by j
 * from then on, on failure too. `who` names the unit in messages:
 * "error: <who>: creating the host JIT: <LLVM's message>". */
fhjit_status jit_add_module(sp_err *e, jit_code *j, LLVMModuleRef m, const char *who);

/* The address of `sym` (compiling it on first use), or FHJIT_ERR_LLVM
 * ("error: <who>: compiling the host function: ..."). */
fhjit_status jit_lookup(sp_err *e, jit_code *j, const char *sym, const char *who, void **addr);

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

/* Online processors (at least 1). */
int64_t jit_cores(void);

#endif
