/* fake_cuda.h: the test-side view of the fake libcuda (fake_cuda.c), a
 * shared library that exports the driver symbols fhjit's runtime uses and
 * simulates one process's worth of driver state on the host. Tests dlopen the
 * same file the runtime opens (FHJIT_LIBCUDA), so both see one instance, and
 * reach these functions through dlsym.
 *
 * Environment, read at every call:
 *   FAKE_CUDA_FAIL     comma list of NAME[=CODE][#N]: the driver function NAME
 *                      (the exported name, e.g. cuMemAlloc_v2; "_v2" may be
 *                      left out) fails with CODE (default: a fitting one),
 *                      at every call or only at its N-th call
 *   FAKE_CUDA_DEVICES  device count (default 1)
 *   FAKE_CUDA_VERSION  cuDriverGetVersion (default 13000)
 *   FAKE_CUDA_CC       compute capability as 10*major+minor (default 90)
 *   FAKE_CUDA_MEM      bytes an allocation may have at most (default 1 GiB)
 * PTX that contains FAKE_SYNTAX_ERROR fails in cuLinkAddData with a log.
 * Also enough of the driver for fhjit_gpu_test and fhjit_bench to run their
 * host-side logic against it (kernels run through an executor, see below). */
#ifndef FHJIT_FAKE_CUDA_H
#define FHJIT_FAKE_CUDA_H
#include <stdint.h>

#define FAKE_MAX_PARAMS 64

typedef struct fake_launch {
  char name[64];
  unsigned grid[3], block[3], shared;
  void *stream;
  void *ctx; /* the current context at launch */
  int nparams;
  uint64_t params[FAKE_MAX_PARAMS]; /* by the sizes the PTX declares */
  void *tag; /* fake_cuda_set_tag's value when the launch was made */
  int pdl;   /* cuLaunchKernelEx with programmatic stream serialization */
  unsigned cluster[3]; /* cuLaunchKernelEx's cluster dimension; 1 1 1 without one */
} fake_launch;

/* Runs a launch on the host (the fake's "device" memory is host memory). */
typedef void (*fake_cuda_executor)(const fake_launch *launch);

typedef int (*fake_cuda_calls_fn)(const char *name);
typedef int (*fake_cuda_launches_fn)(void);
typedef int (*fake_cuda_launch_get_fn)(int index, fake_launch *out);
typedef int (*fake_cuda_live_fn)(void);

/* Exported by the fake:
 *   int fake_cuda_calls(const char *name);      calls of a function so far
 *   int fake_cuda_launches(void);               launches recorded
 *   int fake_cuda_launch_get(int i, fake_launch *out);  1 when i exists
 *   int fake_cuda_live_modules(void);           loaded, not unloaded
 *   int fake_cuda_live_allocs(void);            allocated, not freed
 *   void fake_cuda_set_executor(fake_cuda_executor fn);  run launches with fn
 *   void fake_cuda_set_tag(void *tag);          recorded with later launches
 * Stream capture records launches into a graph that cuGraphLaunch replays;
 * events read the host clock. */
#endif
