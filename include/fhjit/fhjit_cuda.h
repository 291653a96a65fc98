/* fhjit_cuda.h: running compiled graphs on NVIDIA GPUs through the CUDA
 * driver (libcuda.so.1, opened at the first call that needs it; nothing of
 * CUDA is needed to build or load libfhjit). A separate header from fhjit.h:
 * include it where you launch kernels.
 *
 * Context rules. Every call works in the calling thread's current CUDA
 * context, or, when the thread has none, in the primary context of device 0
 * (options->device), which fhjit retains and makes current. A launch on a
 * stream runs in the stream's context, which must then be the current one.
 * Compiled kernels are cached per fhjit context and per CUDA context; call
 * fhjit_cuda_release_context before destroying a CUDA context you created.
 *
 * Errors follow fhjit.h: a status, and a message on the fhjit context that
 * names what failed (the input or result, the driver call and its error
 * text, the driver's JIT log). Full guide: docs/runtime.md. */
#ifndef FHJIT_FHJIT_CUDA_H
#define FHJIT_FHJIT_CUDA_H

#include "fhjit/fhjit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t fhjit_cuda_ptr;  /* a CUdeviceptr */
typedef void *fhjit_cuda_stream;  /* a CUstream; NULL: the legacy default stream */
typedef void *fhjit_cuda_context; /* a CUcontext */

/* A graph's kernels compiled for one target and loaded in one CUDA context.
 * Owned by the fhjit context: valid until fhjit_context_destroy or
 * fhjit_cuda_release_context of its CUDA context. Independent of the graph
 * it was compiled from (the graph may change or be destroyed). */
typedef struct fhjit_cuda_kernel fhjit_cuda_kernel;

enum fhjit_cuda_flags {
  /* Neither read nor write the disk cache (the in-memory cache still acts). */
  FHJIT_CUDA_NO_DISK_CACHE = 1u << 0,
  /* Skip the per-launch driver queries that check that every pointer lies in
   * an allocation of the launch's context large enough for its layout. The
   * cheap checks (non-zero, 16-byte aligned, no overlap) stay. For hot loops
   * whose buffers are known good, and for memory the driver cannot describe
   * (stream-ordered allocations made inside a graph capture). Without it,
   * each kernel remembers the driver's answer for pointers it has checked
   * until fhjit_cuda_free is called (docs/runtime.md). */
  FHJIT_CUDA_NO_POINTER_CHECKS = 1u << 1
};

typedef struct fhjit_cuda_options {
  const char *target; /* "sm_90"; NULL: the device's (see docs/runtime.md) */
  uint32_t flags;     /* fhjit_cuda_flags */
  int32_t device;     /* ordinal whose primary context is used when the
                         thread has no current context (default 0) */
} fhjit_cuda_options;

/* Device pointers of one launch. Inputs in declaration order, each the base
 * its bound layout is relative to; results dense [C, *batch, rows, n] as
 * fhjit_result_type says. Every pointer must be non-zero and 16-byte aligned.
 * A result may be the same buffer as an input of the same type bound with
 * the dense layout (in-place), for pointwise graphs; no other overlap of a
 * result with anything is allowed. */
typedef struct fhjit_cuda_args {
  fhjit_cuda_ptr params;          /* parameter table [8, rows] (SPEC 2) */
  int64_t pstride;                /* its row stride in words, >= rows */
  const fhjit_cuda_ptr *inputs;   /* fhjit_num_inputs(g) pointers */
  int32_t ninputs;
  const fhjit_cuda_ptr *results;  /* fhjit_num_results(g) pointers */
  int32_t nresults;
  const fhjit_cuda_ptr *scratch;  /* NULL: the kernel's own scratch arena
                                     (then launches of one kernel must not
                                     overlap in time); else
                                     fhjit_cuda_scratch_count() buffers (0 or
                                     1: the arena, of fhjit_cuda_scratch_size
                                     bytes) */
  fhjit_cuda_stream stream;
  const fhjit_cuda_options *options; /* NULL: defaults (used to compile) */
} fhjit_cuda_args;

/* Where a compiled kernel came from. */
typedef enum fhjit_cuda_source {
  FHJIT_CUDA_FROM_MEMORY = 0, /* already loaded in this fhjit and CUDA context */
  FHJIT_CUDA_FROM_DISK,       /* warm: the disk cache's cubin, loaded */
  FHJIT_CUDA_COMPILED         /* cold: lowered, linked by the driver, loaded */
} fhjit_cuda_source;

typedef struct fhjit_cuda_compile_info {
  fhjit_cuda_source source;
  int32_t disk_rejected; /* 1: a disk entry existed but was corrupt, truncated
                            or unloadable, and was rebuilt */
  int32_t disk_written;  /* 1: a new disk entry was written */
  char target[16];       /* the PTX target ("sm_90") */
  int32_t nkernels;
  int64_t scratch_bytes; /* the scratch arena, allocated at compile time */
  double lower_ms;       /* graph -> PTX (LLVM) */
  double link_ms;        /* PTX -> cubin (driver JIT linker) */
  double load_ms;        /* cuModuleLoadData, functions, scratch */
  double disk_ms;        /* disk cache read and write */
  double total_ms;       /* the whole call */
  char disk_note[384];   /* "" or why the disk cache was not used, an entry
                            was refused (disk_rejected) or none was written */
} fhjit_cuda_compile_info;

/* 1 when a driver and a device are usable; 0 with the reason recorded on ctx
 * (FHJIT_ERR_NO_DRIVER: no libcuda.so.1, its dlerror, cuInit's error, no
 * device, or a driver older than CUDA 12.0). */
FHJIT_API int fhjit_cuda_available(fhjit_context *ctx);

/* Compiles (or finds in the caches) and loads the kernels of bound graph g
 * in the current (or primary) context. NULL on error. info may be NULL.
 * The one call several threads may make on one fhjit context at once, each
 * with graphs of its own: it runs under the context's lock, errors
 * included, so with several failing at once the context's last error is
 * one of theirs. */
FHJIT_API fhjit_cuda_kernel *fhjit_cuda_compile(fhjit_graph *g,
                                                const fhjit_cuda_options *options,
                                                fhjit_cuda_compile_info *info);
/* Enqueues the kernels of k on a->stream. No synchronisation and no
 * allocation: usable inside CUDA graph capture. a->options is ignored (k is
 * compiled already). The launch context must be the one k was loaded in. */
FHJIT_API fhjit_status fhjit_cuda_launch_kernel(fhjit_cuda_kernel *k,
                                                const fhjit_cuda_args *a);
/* Compiles lazily at the first launch (fhjit_cuda_compile), then launches:
 * the convenient form; later calls find the kernel by the hash fhjit_bind
 * computed. */
FHJIT_API fhjit_status fhjit_cuda_launch(fhjit_graph *g, const fhjit_cuda_args *a);

/* Facts of a compiled kernel. */
FHJIT_API const fhjit_cuda_compile_info *fhjit_cuda_kernel_info(const fhjit_cuda_kernel *k);
FHJIT_API fhjit_cuda_context fhjit_cuda_kernel_context(const fhjit_cuda_kernel *k);
FHJIT_API int32_t fhjit_cuda_scratch_count(const fhjit_cuda_kernel *k);
FHJIT_API int64_t fhjit_cuda_scratch_size(const fhjit_cuda_kernel *k, int32_t index);

/* Bytes a buffer must span from its base pointer: input `index` (its bound
 * layout's furthest element + 1) or result `index` (dense). */
FHJIT_API fhjit_status fhjit_cuda_input_bytes(const fhjit_graph *g, int32_t index,
                                              size_t *bytes);
FHJIT_API fhjit_status fhjit_cuda_result_bytes(const fhjit_graph *g, int32_t index,
                                               size_t *bytes);

/* The calling thread's current CUDA context, after making the primary
 * context of `device` current when the thread has none (what every call
 * here does first): for creating streams and events in the context fhjit
 * will use. */
FHJIT_API fhjit_status fhjit_cuda_current_context(fhjit_context *ctx, int32_t device,
                                                  fhjit_cuda_context *out);

/* Unloads every kernel loaded in CUDA context `cuctx` and frees its scratch
 * buffers (call it before destroying that context). */
FHJIT_API fhjit_status fhjit_cuda_release_context(fhjit_context *ctx,
                                                  fhjit_cuda_context cuctx);

/* Thin wrappers over the driver, in the current (or primary) context.
 * Copies are synchronous. */
FHJIT_API fhjit_status fhjit_cuda_alloc(fhjit_context *ctx, size_t bytes,
                                        fhjit_cuda_ptr *out);
FHJIT_API fhjit_status fhjit_cuda_free(fhjit_context *ctx, fhjit_cuda_ptr ptr);
FHJIT_API fhjit_status fhjit_cuda_upload(fhjit_context *ctx, fhjit_cuda_ptr dst,
                                         const void *src, size_t bytes);
FHJIT_API fhjit_status fhjit_cuda_download(fhjit_context *ctx, void *dst,
                                           fhjit_cuda_ptr src, size_t bytes);
/* Builds the parameter table of SPEC section 2 (fhjit_param_table, with
 * pstride = rows) and uploads it to a new allocation; free it with
 * fhjit_cuda_free. */
FHJIT_API fhjit_status fhjit_cuda_param_table(fhjit_context *ctx, fhjit_radix radix,
                                              const uint64_t *moduli, int32_t rows,
                                              int64_t n, int ntt, uint64_t scale,
                                              fhjit_cuda_ptr *table, int64_t *pstride);

/* The address of a driver function of the libcuda fhjit opened (for example
 * "cuEventCreate"), for programs that need more of the driver than these
 * wrappers without linking libcuda themselves. NULL with the reason recorded
 * when there is no driver or no such symbol. */
FHJIT_API void *fhjit_cuda_driver_proc(fhjit_context *ctx, const char *name);

#ifdef __cplusplus
}
#endif
#endif
