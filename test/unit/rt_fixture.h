/* rt_fixture.h: what the runtime's unit tests share (test_driver,
 * test_kernel_cache, test_launch, test_contexts, test_ntt_launch; the list
 * is FHJIT_RT_TESTS in test/unit/fake_cuda/CMakeLists.txt). The fake
 * libcuda's entry points (fake_cuda/), a lowering hook that writes PTX by
 * hand, the per-test fixture (a fresh disk cache directory, the hook in
 * place, no injected failure), small graphs and buffers, and the runner:
 * every test runs in its own process, since the driver is opened once per
 * process. */
#ifndef FHJIT_RT_FIXTURE_H
#define FHJIT_RT_FIXTURE_H
#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_cuda.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "runtime/runtime.h"
#include "testutil.h"

/* ------------------------------------------------------------- the fake */

extern fake_cuda_calls_fn fake_calls;
extern fake_cuda_launches_fn fake_launches;
extern fake_cuda_launch_get_fn fake_launch_get;
extern fake_cuda_live_fn fake_live_modules, fake_live_allocs;

typedef CUresult (*ctx_create_fn)(CUcontext *, unsigned int, CUdevice);
typedef CUresult (*ctx_set_fn)(CUcontext);
typedef CUresult (*ctx_get_fn)(CUcontext *);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned int);
typedef CUresult (*capture_fn)(CUstream, int);
typedef CUresult (*capture_end_fn)(CUstream, void **);
extern ctx_create_fn fake_ctx_create;
extern ctx_set_fn fake_ctx_set, fake_ctx_destroy;
extern ctx_get_fn fake_ctx_get;
extern stream_create_fn fake_stream_create;
extern capture_fn fake_begin_capture;
extern capture_end_fn fake_end_capture;

/* Points the runtime at the fake (FHJIT_LIBCUDA) and resolves the above. */
void use_fake(void);
/* The fake's current CUDA context of this thread. */
CUcontext current_context(void);

/* ------------------------------------------------- hand-written programs */

/* What the hook (rt_lower, set by the fixture) makes: one kernel per graph
 * unless told otherwise, with the arguments (params, pstride, inputs...,
 * results..., scratch...). Reset before every test. */
typedef struct rt_hook {
  int calls;
  char arch[16];
  int kernels;        /* 1 or 2 */
  int scratch;        /* add one scratch buffer of 4096 bytes */
  int syntax_error;   /* PTX the fake linker rejects */
  int misnamed;       /* the description names a kernel the PTX lacks */
  int bad_index;      /* an input index out of range */
  int refuse;         /* fail like the lowering would */
} rt_hook;
extern rt_hook hook;

/* --------------------------------------------------------------- fixtures */

/* The test's disk cache directory (FHJIT_CACHE_DIR), removed afterwards. */
extern char cache_dir[64];

/* Files in a directory (not . and ..); the first one's path in first. */
int count_files(const char *dir, char *first, size_t size);

/* A suite of one test case named `name`, with the fixture and a timeout. */
Suite *rt_suite(const char *name, TCase **tc);
/* Runs the suite, every test in its own process; the exit status. */
int rt_run(Suite *s);

/* ------------------------------------------------------------------ graphs */

extern const uint64_t Q62, Q32;

/* s = add(a, b) over plaintexts [rows, n]; `name` names the graph. */
fhjit_graph *add_graph(fhjit_context *c, const char *name, fhjit_radix radix, int rows, int n);

/* got is want, the context's last status is want, and its message holds
 * every fragment that is not NULL. */
void expect(fhjit_context *c, fhjit_status got, fhjit_status want, const char *f1, const char *f2,
            const char *f3);

fhjit_cuda_kernel *compile_ok(fhjit_graph *g, const fhjit_cuda_options *o,
                              fhjit_cuda_compile_info *info);
/* A device allocation, 16-byte aligned. */
fhjit_cuda_ptr alloc_ok(fhjit_context *c, size_t bytes);

/* Buffers for add_graph(rows, n): a parameter table and a, b, s. */
typedef struct add_bufs {
  fhjit_cuda_ptr params, in[2], out[1];
  int64_t pstride;
  fhjit_cuda_args args;
} add_bufs;

void add_bufs_init(add_bufs *b, fhjit_context *c, fhjit_radix radix, int rows, int n);

#endif
