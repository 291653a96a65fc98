/* npy.h: reading and writing numpy .npy files (format versions 1.0 to 3.0)
 * for fhjit-run and the tests. Only what residue tensors need: integer
 * dtypes uint32/uint64/int32/int64, little-endian, C order. Everything else
 * is refused with a message that says what the file holds and what would be
 * accepted, never a crash. */
#ifndef FHJIT_NPY_H
#define FHJIT_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NPY_MAX_DIMS 16

typedef enum npy_dtype {
  NPY_U32 = 0,
  NPY_U64,
  NPY_I32,
  NPY_I64
} npy_dtype;

typedef struct npy_array {
  npy_dtype dtype;
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  int64_t count; /* number of elements: product of shape (1 for ndim 0) */
  void *data;    /* malloc'd, count elements of dtype, native byte order */
} npy_array;

/* "uint32", "uint64", "int32", "int64". */
const char *npy_dtype_name(npy_dtype dtype);
size_t npy_dtype_size(npy_dtype dtype);

/* Reads a .npy file of at most max_bytes bytes (readfile.h: no devices or
 * directories). On failure returns -1, writes a message naming the file and
 * the problem into err (may be NULL) and leaves *out zeroed. */
int npy_read(const char *path, size_t max_bytes, npy_array *out, char *err, size_t errsize);
/* The same from bytes in memory; `what` names them in messages. */
int npy_parse(const void *bytes, size_t size, const char *what, npy_array *out,
              char *err, size_t errsize);
/* Writes `data` (count = product of shape elements of dtype) as a version
 * 1.0 .npy file. Returns 0 or -1 with err (and no file left behind). */
int npy_write(const char *path, npy_dtype dtype, int ndim, const int64_t *shape,
              const void *data, char *err, size_t errsize);
/* The same into an open stream, flushed but not closed (the caller owns
 * the file: fhjit-run writes temporaries it renames); `what` names it. */
int npy_write_stream(FILE *f, const char *what, npy_dtype dtype, int ndim,
                     const int64_t *shape, const void *data, char *err, size_t errsize);
/* Element `index` as unsigned; *negative set when a signed element is < 0. */
uint64_t npy_get(const npy_array *a, int64_t index, int *negative);
void npy_free(npy_array *a);

#endif
