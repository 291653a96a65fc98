/* fuzz_npy.c: libFuzzer target for the .npy reader of the tools
 * (tools/npy.c: fhjit-run's --in files, user input). Every input is parsed;
 * a refusal must leave a message. An accepted array must be consistent
 * (count = product of the shape, data present) and survive a round trip:
 * written back with npy_write_stream and parsed again it must give the same
 * dtype, shape and elements. Aborts only on a violation of these
 * properties; libFuzzer, ASan and UBSan report the rest. Seeds:
 * test/fuzz/npy-seeds (versions 1 and 2, each dtype, a scalar, an empty
 * axis, and two that are refused: big-endian and Fortran order). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

static void violation(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_npy: property violated: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  abort();
}

/* The array written with npy_write_stream into memory and parsed again. */
static void check_round_trip(const npy_array *a) {
  char *buf = NULL, err[512];
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return;
  if (npy_write_stream(f, "memory", a->dtype, a->ndim, a->shape, a->data, err, sizeof err) != 0)
    violation("an accepted array does not write", err);
  fclose(f);
  npy_array b;
  if (npy_parse(buf, len, "written", &b, err, sizeof err) != 0)
    violation("a written array does not parse", err);
  if (b.dtype != a->dtype || b.ndim != a->ndim || b.count != a->count ||
      memcmp(b.shape, a->shape, sizeof *a->shape * (size_t)a->ndim) != 0)
    violation("the written array parses to another dtype or shape", NULL);
  if (a->count && memcmp(a->data, b.data, npy_dtype_size(a->dtype) * (size_t)a->count) != 0)
    violation("the written array parses to other elements", NULL);
  npy_free(&b);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npy_array a;
  char err[512] = "";
  if (npy_parse(data, size, "fuzz.npy", &a, err, sizeof err) != 0) {
    if (!err[0]) violation("a refusal left no message", NULL);
    if (a.data || a.count || a.ndim) violation("a refusal left the array filled in", err);
    return 0;
  }
  if (a.ndim < 0 || a.ndim > NPY_MAX_DIMS) violation("ndim out of range", NULL);
  int64_t count = 1;
  for (int i = 0; i < a.ndim; i++) {
    if (a.shape[i] < 0) violation("a negative axis", NULL);
    count *= a.shape[i];
  }
  if (count != a.count) violation("count is not the product of the shape", NULL);
  if (count > 0 && !a.data) violation("no data for a non-empty array", NULL);
  /* every element readable (ASan checks the bounds) */
  uint64_t sum = 0;
  for (int64_t i = 0; i < a.count; i++) {
    int negative;
    sum += npy_get(&a, i, &negative);
  }
  (void)sum;
  check_round_trip(&a);
  npy_free(&a);
  return 0;
}
