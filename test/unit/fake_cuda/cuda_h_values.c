/* cuda_h_values.c: compiled against the CUDA toolkit's cuda.h (only where
 * one is installed), so that test_driver can compare fhjit's own driver
 * declarations with CUDA's: enum values, and the versioned symbol that
 * cuda.h maps each plain function name to. */
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_values.h"
#include "runtime/driver_symbols.h"

#define STR(x) #x
#define XSTR(x) STR(x)

long cudah_value(const char *name, int *found);
const char *cudah_symbol(const char *plain);
uintptr_t cudah_stream_legacy(void);

long cudah_value(const char *name, int *found) {
#define VALUE(n) if (!strcmp(name, #n)) return *found = 1, (long)(n);
  FHJIT_CUDA_VALUES(VALUE)
#undef VALUE
  *found = 0;
  return 0;
}

/* The symbol cuda.h makes of the plain name, e.g. cuMemAlloc -> cuMemAlloc_v2. */
const char *cudah_symbol(const char *plain) {
#define SYMBOL(p, s) if (!strcmp(plain, #p)) return XSTR(p);
  RT_DRIVER_SYMBOLS(SYMBOL)
#undef SYMBOL
  return NULL;
}

uintptr_t cudah_stream_legacy(void) { return (uintptr_t)CU_STREAM_LEGACY; }

/* Sizes and offsets of cuLaunchKernelEx's structures, in the order
 * test_driver lists fhjit's own. */
void cudah_launch_layout(size_t out[10]);
void cudah_launch_layout(size_t out[10]) {
  out[0] = sizeof(CUlaunchAttribute);
  out[1] = offsetof(CUlaunchAttribute, value);
  out[2] = offsetof(CUlaunchAttribute, value.programmaticStreamSerializationAllowed);
  out[3] = sizeof(CUlaunchConfig);
  out[4] = offsetof(CUlaunchConfig, sharedMemBytes);
  out[5] = offsetof(CUlaunchConfig, hStream);
  out[6] = offsetof(CUlaunchConfig, attrs);
  out[7] = offsetof(CUlaunchConfig, numAttrs);
  out[8] = offsetof(CUlaunchAttribute, value.clusterDim.x);
  out[9] = offsetof(CUlaunchAttribute, value.clusterDim.z);
}
