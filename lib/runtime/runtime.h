/* runtime.h: internals of the CUDA runtime (prefix rt_): the driver loader,
 * the per-context state with its kernel cache, the disk cache, and the
 * serialised kernel description. Public side: include/fhjit/fhjit_cuda.h. */
#ifndef FHJIT_RUNTIME_H
#define FHJIT_RUNTIME_H

#include <pthread.h>

#include "fhjit/fhjit_cuda.h"
#include "ir/ir.h"
#include "lower/lower.h"
#include "runtime/cuda_api.h"
#include "runtime/driver_symbols.h"

/* ------------------------------------------------------------------ driver */

/* The driver's entry points, resolved once per process by versioned name. */
typedef struct rt_driver {
  void *handle;
  int version; /* cuDriverGetVersion: 1000 * major + 10 * minor */
#define RT_DRIVER_FIELD(plain, symbol) PFN_##symbol plain;
  RT_DRIVER_SYMBOLS(RT_DRIVER_FIELD)
#undef RT_DRIVER_FIELD
} rt_driver;

/* The driver, opened at the first call (pthread_once); NULL with the reason
 * recorded on ctx as FHJIT_ERR_NO_DRIVER. `what` names the caller. */
const rt_driver *rt_driver_get(fhjit_context *ctx, const char *what);

/* "CUDA_ERROR_X (n): description" of a driver status. */
void rt_cuda_describe(const rt_driver *d, CUresult r, char *buf, size_t size);
/* Records a failed driver call: "<what>: <call> failed: CUDA_ERROR_X (n): text"
 * as FHJIT_ERR_MEMORY for CUDA_ERROR_OUT_OF_MEMORY, else FHJIT_ERR_CUDA. */
fhjit_status rt_cuda_error(fhjit_context *ctx, const rt_driver *d, CUresult r,
                           const char *call, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ------------------------------------------------------ kernel description */

/* The serialised form of an lw_program without its PTX (the disk cache
 * stores it next to the PTX and cubin). rt_desc_read checks every field. */
void rt_desc_write(sp_buf *out, const lw_program *p);
int rt_desc_read(const void *data, size_t size, lw_program *out);

/* ------------------------------------------------------------ disk cache */

/* The cache directory (the context's option cache_dir, else
 * $FHJIT_CACHE_DIR, $XDG_CACHE_HOME/fhjit or ~/.cache/fhjit), malloc'd;
 * NULL when the cache is off (option cache, else FHJIT_CACHE, "0"/"off")
 * or there is no home. */
char *rt_disk_dir(const fhjit_context *ctx);
/* 1 with why set when the environment's FHJIT_CACHE or FHJIT_CACHE_DIR
 * holds a value the context option would refuse (then no disk cache). */
int rt_disk_option_problem(const fhjit_context *ctx, char *why, size_t why_size);

typedef struct rt_disk_entry {
  char *ptx;          /* malloc'd, NUL-terminated */
  size_t ptx_size;    /* without the NUL */
  void *cubin;        /* malloc'd */
  size_t cubin_size;
  lw_program desc;    /* desc.ptx is NULL */
  char why[256];      /* RT_DISK_CORRUPT: what was wrong ("PATH is not a regular file") */
} rt_disk_entry;

typedef enum rt_disk_result {
  RT_DISK_MISS = 0, /* no entry */
  RT_DISK_HIT,      /* a complete, consistent entry for `key` */
  RT_DISK_CORRUPT   /* an entry was there but fails a check (out->why): rebuild it */
} rt_disk_result;

/* 1, with the reason in why, when dir must not be used as a cache: it is not
 * a directory, not the user's, or writable by its group or others (entries
 * there could be anyone's code). 0 when it is fine or does not exist yet. */
int rt_disk_dir_problem(const char *dir, char *why, size_t why_size);

/* The file of `key` (a printable string naming everything the code depends
 * on) under dir. Opened without following links or blocking; a file that
 * is not regular, not the user's or writable by others is RT_DISK_CORRUPT,
 * like one that fails a check of its content. */
rt_disk_result rt_disk_load(const char *dir, const char *key, rt_disk_entry *out);
/* The checks and fields of an entry's bytes, as rt_disk_load reads them
 * (also fuzz_cache.c): RT_DISK_HIT with out filled, else RT_DISK_CORRUPT
 * with out empty and *bad saying what is wrong ("fails its checksum"). */
rt_disk_result rt_disk_parse(const unsigned char *data, size_t size, const char *key,
                             rt_disk_entry *out, const char **bad);
/* Writes into an entry's bytes (the whole file image) the checksum
 * rt_disk_parse expects, so that a fuzzer reaches the checks after it; 0
 * when size is less than a header. */
int rt_disk_seal(void *entry, size_t size);
/* Writes an entry atomically (temporary file renamed into place). Failure is
 * not an error of the compile: returns 0 and leaves a reason in why. */
int rt_disk_store(const char *dir, const char *key, const char *ptx, size_t ptx_size,
                  const void *cubin, size_t cubin_size, const lw_program *desc,
                  char *why, size_t why_size);
void rt_disk_entry_free(rt_disk_entry *e);
/* A 64-bit checksum of bytes (word-wise multiply-xorshift). */
uint64_t rt_checksum(uint64_t seed, const void *data, size_t size);

/* ------------------------------------------------------ per-context state */

/* One buffer of a graph's ABI, for pointer validation. */
typedef struct rt_buffer {
  char *name;      /* inputs: the value's name; results: rt_result_label
                      (from the graph that compiled it) */
  uint64_t lo, hi; /* bytes from the base the layout touches: [lo, hi) */
  int inplace_ok;  /* input only: bound densely, so a result of its type may
                      share its buffer */
  unsigned char *reads; /* result only: reads[i] = 1 when the result's value
                           is computed from input i */
  fhjit_type type;
} rt_buffer;

/* A pointer a launch checked through the driver, remembered so that later
 * launches with the same pointer skip the query (cuPointerGetAttributes
 * costs about as much as the rest of a launch). Valid while no memory was
 * freed through fhjit_cuda_free since (rt_free_generation). */
typedef struct rt_ptr_seen {
  CUdeviceptr first;       /* the address queried; 0: empty */
  CUdeviceptr start;       /* its allocation */
  size_t size;
  CUcontext owner;
  uint64_t generation;
} rt_ptr_seen;

#define RT_PTR_SEEN 32 /* per kernel, fully associative, replaced in turn */

/* Bumped whenever fhjit frees device memory: remembered pointers are then
 * checked again. */
uint64_t rt_free_generation_now(void);
void rt_free_generation_bump(void);

struct fhjit_cuda_kernel {
  fhjit_context *ctx;
  fhjit_cuda_kernel *next;
  uint64_t hash[2]; /* the graph's, with FHJIT_PW_PLAN folded in */
  char *graph_name; /* of the graph that compiled it, for messages */
  char target[16];
  char asked[16];   /* the target the compile asked for ("" for the device's):
                       launches find the kernel without the device queries */
  pthread_mutex_t seen_lock;
  rt_ptr_seen seen[RT_PTR_SEEN];
  unsigned seen_next; /* the entry a new pointer replaces */
  CUcontext cuctx;
  unsigned long long cuctx_id; /* tells a destroyed context from a new one at
                                  the same address */
  CUmodule module;
  lw_program prog; /* prog.ptx is NULL once loaded */
  CUfunction funcs[LW_MAX_KERNELS];
  CUdeviceptr scratch_arena; /* prog.scratch_arena bytes, 0 when none */
  CUdeviceptr scratch[LW_MAX_KERNELS]; /* buffer s: the arena + prog.scratch_offset[s] */
  fhjit_radix radix;
  int32_t ninputs, nresults;
  rt_buffer *inputs, *results;
  int64_t param_rows;  /* columns of the parameter table */
  int pointwise;       /* in-place allowed: one kernel of pointwise ops */
  /* 1 once a launch failed after enqueueing part of the program: an NTT's
   * per-row completion counters may then be off, so LW_ARG_OWN is 0 (the
   * grid-wide wait, which does not read them) for the kernel's life */
  _Atomic int counters_unsure;
  /* the stream whose launches may use those counters, + 1 (0: none yet):
   * the first stream of an own-state launch (not capturing, not the
   * per-thread stream); launches on any other stream pass own = 0, so
   * launches on several streams never share the counters */
  _Atomic uintptr_t home_stream;
  int has_own; /* some kernel takes LW_ARG_OWN */
  fhjit_cuda_compile_info info;
};

/* A primary context fhjit retained: once per process, held until exit. */
typedef struct rt_primary {
  CUdevice device;
  CUcontext cuctx;
} rt_primary;

typedef struct rt_state {
  pthread_mutex_t lock; /* around the kernel list: compiles from several threads */
  fhjit_cuda_kernel *kernels;
} rt_state;

/* The fhjit context's runtime state, created on first use; NULL on OOM. */
rt_state *rt_state_get(fhjit_context *ctx);
/* Frees that state: registered by rt_state_get as the context's release hook. */
void rt_context_release(fhjit_context *ctx);

/* Makes sure the calling thread has a current CUDA context (the primary
 * context of `device` when it has none) and returns it. */
fhjit_status rt_current_context(fhjit_context *ctx, const rt_driver *d, int32_t device,
                                const char *what, CUcontext *out);

/* Compiles g (or finds it in the caches) for CUDA context cuctx, which is
 * current on the calling thread. NULL with the error recorded. */
fhjit_cuda_kernel *rt_compile(fhjit_graph *g, const fhjit_cuda_options *o, CUcontext cuctx,
                              const rt_driver *d, const char *what,
                              fhjit_cuda_compile_info *info);

/* Where programs come from: lw_compile_ptx, replaced by unit tests that
 * bring hand-written PTX. */
typedef fhjit_status (*rt_lower_fn)(fhjit_graph *g, const char *arch, lw_program *out);
extern rt_lower_fn rt_lower;
/* What rt_lower's program for g must be, without code (lw_describe_program;
 * tests that replace rt_lower replace this too): disk cache entries are
 * keyed by it and checked against it. */
extern rt_lower_fn rt_describe;

/* The graph's values that the runtime launches (inputs and results), and
 * whether it may run in place. Used when a kernel is created. */
fhjit_status rt_describe_abi(fhjit_graph *g, fhjit_cuda_kernel *k);
void rt_kernel_free_abi(fhjit_cuda_kernel *k);
/* How messages name result r: "%value", or "%value, output name" when the
 * output that exposes it is named otherwise. */
void rt_result_label(const fhjit_graph *g, int32_t r, char *buf, size_t size);

/* Monotonic milliseconds. */
double rt_now_ms(void);

#endif
