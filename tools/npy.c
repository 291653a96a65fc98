/* npy.c: the .npy reader and writer of npy.h. The header is a Python dict
 * literal; this parses the small subset numpy writes (string, bool and
 * int-tuple values) and refuses anything else with a message naming the file
 * and the offending entry. Element bytes are converted explicitly from/to
 * little-endian, so the code does not depend on the host byte order. */
#include "npy.h"
#include "readfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

const char *npy_dtype_name(npy_dtype dtype) {
  switch (dtype) {
  case NPY_U32: return "uint32";
  case NPY_U64: return "uint64";
  case NPY_I32: return "int32";
  case NPY_I64: return "int64";
  }
  return "?";
}

size_t npy_dtype_size(npy_dtype dtype) {
  return dtype == NPY_U32 || dtype == NPY_I32 ? 4 : 8;
}

void npy_free(npy_array *a) {
  if (!a) return;
  free(a->data);
  memset(a, 0, sizeof *a);
}

/* ----------------------------------------------------------- header parse */

typedef struct hdr_parser {
  const char *p, *end;
} hdr_parser;

static void skip_space(hdr_parser *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static int accept_char(hdr_parser *h, char c) {
  skip_space(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return 1;
  }
  return 0;
}

/* A quoted Python string without escapes (numpy never writes any). */
static int parse_string(hdr_parser *h, char *out, size_t size) {
  skip_space(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return 0;
  char quote = *h->p++;
  size_t n = 0;
  while (h->p < h->end && *h->p != quote) {
    if (*h->p == '\\' || n + 1 >= size) return 0;
    out[n++] = *h->p++;
  }
  if (h->p >= h->end) return 0;
  h->p++;
  out[n] = '\0';
  return 1;
}

static int parse_word(hdr_parser *h, const char *word) {
  skip_space(h);
  size_t n = strlen(word);
  if ((size_t)(h->end - h->p) >= n && memcmp(h->p, word, n) == 0) {
    h->p += n;
    return 1;
  }
  return 0;
}

/* (d0, d1, ...) with an optional trailing comma; Python 2 files may carry
 * an 'L' suffix on each extent. */
static int parse_shape(hdr_parser *h, npy_array *a) {
  if (!accept_char(h, '(')) return 0;
  a->ndim = 0;
  for (;;) {
    if (accept_char(h, ')')) return 1;
    skip_space(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return 0;
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
      if (v > (INT64_MAX - 9) / 10) return 0;
      v = v * 10 + (*h->p++ - '0');
    }
    if (h->p < h->end && *h->p == 'L') h->p++;
    if (a->ndim == NPY_MAX_DIMS) return 0;
    a->shape[a->ndim++] = v;
    if (accept_char(h, ',')) continue;
    if (accept_char(h, ')')) return 1;
    return 0;
  }
}

/* Names a numpy type string for messages ("<f8" -> "float64"). */
static void describe_descr(const char *descr, char *out, size_t size) {
  const char *kinds = "?", *k = descr;
  if (*k == '<' || *k == '>' || *k == '=' || *k == '|') k++;
  switch (*k) {
  case 'f': kinds = "float"; break;
  case 'i': kinds = "int"; break;
  case 'u': kinds = "uint"; break;
  case 'b': kinds = "bool"; break;
  case 'c': kinds = "complex"; break;
  case 'U': case 'S': kinds = "string"; break;
  case 'O': kinds = "object"; break;
  default: kinds = NULL; break;
  }
  /* the item size's digits, capped: a hostile header may hold any number
   * of them (atoi would overflow) */
  int bytes = 0;
  for (const char *d = k + (*k ? 1 : 0); *d >= '0' && *d <= '9'; d++)
    bytes = bytes > 1000 ? 1001 : bytes * 10 + (*d - '0');
  if (kinds && bytes > 0 && bytes <= 1000 && *k != 'U' && *k != 'S' && *k != 'b')
    snprintf(out, size, "%s%d", kinds, bytes * 8);
  else if (kinds)
    snprintf(out, size, "%s", kinds);
  else
    snprintf(out, size, "unknown");
}

static int parse_descr(const char *descr, npy_dtype *out, const char *what,
                       char *err, size_t errsize) {
  char name[64];
  describe_descr(descr, name, sizeof name);
  const char *k = descr;
  if (*k == '>' && strcmp(k + 1, "u1") && strcmp(k + 1, "i1"))
    return tool_fail(err, errsize,
                "%s: dtype '%s' (%s) is big-endian; only little-endian uint32, uint64, "
                "int32 and int64 are supported",
                what, descr, name);
  if (*k == '<' || *k == '=' || *k == '|') k++;
  static const struct {
    const char *code;
    npy_dtype dtype;
  } known[] = {{"u4", NPY_U32}, {"u8", NPY_U64}, {"i4", NPY_I32}, {"i8", NPY_I64}};
  /* '|' marks byte-order-free types; a 4- or 8-byte integer is never that. */
  if (descr[0] != '|')
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
      if (strcmp(k, known[i].code) == 0) {
        *out = known[i].dtype;
        return 0;
      }
  return tool_fail(err, errsize,
              "%s: dtype '%s' (%s) is not supported; residue tensors must be uint32, "
              "uint64, int32 or int64 (little-endian)",
              what, descr, name);
}

static uint64_t load_le(const unsigned char *p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void store_le(unsigned char *p, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void shape_text(const npy_array *a, char *out, size_t size) {
  size_t used = (size_t)snprintf(out, size, "(");
  for (int d = 0; d < a->ndim && used < size; d++)
    used += (size_t)snprintf(out + used, size - used, "%s%lld", d ? ", " : "",
                             (long long)a->shape[d]);
  if (used < size) snprintf(out + used, size - used, a->ndim == 1 ? ",)" : ")");
}

int npy_parse(const void *bytes, size_t size, const char *what, npy_array *out,
              char *err, size_t errsize) {
  memset(out, 0, sizeof *out);
  const unsigned char *b = bytes;
  if (size < 10 || memcmp(b, npy_magic, sizeof npy_magic) != 0)
    return tool_fail(err, errsize, "%s: not a .npy file (no \\x93NUMPY magic)", what);
  unsigned major = b[6], minor = b[7];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = (size_t)load_le(b + 8, 2);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return tool_fail(err, errsize, "%s: truncated .npy header", what);
    header_len = (size_t)load_le(b + 8, 4);
    header_start = 12;
  } else {
    return tool_fail(err, errsize, "%s: .npy format version %u.%u is not supported (1.0 to 3.0)",
                what, major, minor);
  }
  if (header_len > size - header_start)
    return tool_fail(err, errsize,
                "%s: truncated .npy header (%zu header bytes announced, %zu present)", what,
                header_len, size - header_start);

  hdr_parser h = {(const char *)b + header_start, (const char *)b + header_start + header_len};
  char descr[64] = "";
  int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
  npy_array a = {0};
  if (!accept_char(&h, '{')) goto malformed;
  for (;;) {
    if (accept_char(&h, '}')) break;
    char key[32];
    if (!parse_string(&h, key, sizeof key) || !accept_char(&h, ':')) goto malformed;
    if (strcmp(key, "descr") == 0) {
      skip_space(&h);
      if (h.p < h.end && *h.p == '[')
        return tool_fail(err, errsize,
                    "%s: structured dtypes are not supported; residue tensors must be "
                    "uint32, uint64, int32 or int64",
                    what);
      if (!parse_string(&h, descr, sizeof descr)) goto malformed;
      have_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (parse_word(&h, "True")) fortran = 1;
      else if (parse_word(&h, "False")) fortran = 0;
      else goto malformed;
      have_order = 1;
    } else if (strcmp(key, "shape") == 0) {
      if (!parse_shape(&h, &a)) goto malformed;
      have_shape = 1;
    } else {
      goto malformed;
    }
    if (accept_char(&h, ',')) continue;
    if (accept_char(&h, '}')) break;
    goto malformed;
  }
  if (!have_descr || !have_order || !have_shape)
    return tool_fail(err, errsize, "%s: the .npy header lacks '%s'", what,
                !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  if (parse_descr(descr, &a.dtype, what, err, errsize)) return -1;

  a.count = 1;
  int long_axes = 0;
  for (int d = 0; d < a.ndim; d++) {
    if (a.shape[d] > 1) long_axes++;
    if (a.shape[d] != 0 && a.count > INT64_MAX / 8 / a.shape[d])
      return tool_fail(err, errsize, "%s: shape is too large", what);
    a.count *= a.shape[d];
  }
  /* Fortran order stores the same bytes as C order when at most one axis is
   * longer than 1; only then is it accepted. */
  if (fortran && long_axes > 1) {
    char st[256];
    shape_text(&a, st, sizeof st);
    return tool_fail(err, errsize,
                "%s: the array of shape %s is stored in Fortran (column-major) order; "
                "only C order is supported (save it with np.ascontiguousarray)",
                what, st);
  }
  size_t item = npy_dtype_size(a.dtype);
  size_t data_start = header_start + header_len;
  size_t want = (size_t)a.count * item, have = size - data_start;
  if (have < want) {
    char st[256];
    shape_text(&a, st, sizeof st);
    return tool_fail(err, errsize,
                "%s: truncated: the header announces %s %s (%zu data bytes) but the file "
                "holds %zu",
                what, npy_dtype_name(a.dtype), st, want, have);
  }
  if (have > want)
    return tool_fail(err, errsize,
                "%s: %zu unexpected bytes after the %zu data bytes the header announces",
                what, have - want, want);
  a.data = malloc(want ? want : 1);
  if (!a.data) return tool_fail(err, errsize, "%s: out of memory (%zu bytes)", what, want);
  const unsigned char *src = b + data_start;
  for (int64_t i = 0; i < a.count; i++) {
    uint64_t v = load_le(src + (size_t)i * item, item);
    if (item == 4) ((uint32_t *)a.data)[i] = (uint32_t)v;
    else ((uint64_t *)a.data)[i] = v;
  }
  *out = a;
  return 0;

malformed:
  return tool_fail(err, errsize, "%s: malformed .npy header near offset %zu: %.*s", what,
              (size_t)(h.p - (const char *)b),
              (int)(header_len > 120 ? 120 : header_len), (const char *)b + header_start);
}

int npy_read(const char *path, size_t max_bytes, npy_array *out, char *err, size_t errsize) {
  memset(out, 0, sizeof *out);
  char *buf;
  size_t len;
  if (tool_read_file(path, max_bytes, "the limit for this .npy file", &buf, &len, err, errsize))
    return -1;
  int rc = npy_parse(buf, len, path, out, err, errsize);
  free(buf);
  return rc;
}

/* The version 1.0 header of an array into head (NPY_HEADER_MAX bytes),
 * padded as numpy pads it; *count is the element count. */
#define NPY_HEADER_MAX (16 + 64 + NPY_MAX_DIMS * 24 + 64)
static int npy_header(npy_dtype dtype, int ndim, const int64_t *shape, const char *what,
                      unsigned char *head, size_t *padded, int64_t *count, char *err,
                      size_t errsize) {
  if (ndim < 0 || ndim > NPY_MAX_DIMS || (ndim && !shape) || (unsigned)dtype > NPY_I64)
    return tool_fail(err, errsize, "%s: bad array description", what);
  char header[64 + NPY_MAX_DIMS * 24];
  int n = snprintf(header, sizeof header, "{'descr': '<%c%zu', 'fortran_order': False, 'shape': (",
                   dtype == NPY_U32 || dtype == NPY_U64 ? 'u' : 'i', npy_dtype_size(dtype));
  *count = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return tool_fail(err, errsize, "%s: negative extent", what);
    if (__builtin_mul_overflow(*count, shape[d], count) || *count > INT64_MAX / 8)
      return tool_fail(err, errsize, "%s: shape is too large", what);
    n += snprintf(header + n, sizeof header - (size_t)n, "%s%lld", d ? ", " : "",
                  (long long)shape[d]);
  }
  n += snprintf(header + n, sizeof header - (size_t)n, "%s), }", ndim == 1 ? "," : "");
  /* numpy pads the header with spaces and a final newline so that the data
   * starts at a multiple of 64 bytes. */
  size_t prefix = 10, total = prefix + (size_t)n + 1;
  *padded = (total + 63) / 64 * 64;
  size_t header_len = *padded - prefix;
  memcpy(head, npy_magic, 6);
  head[6] = 1;
  head[7] = 0;
  store_le(head + 8, header_len, 2);
  memcpy(head + prefix, header, (size_t)n);
  memset(head + prefix + n, ' ', header_len - (size_t)n - 1);
  head[*padded - 1] = '\n';
  return 0;
}

int npy_write_stream(FILE *f, const char *what, npy_dtype dtype, int ndim, const int64_t *shape,
                     const void *data, char *err, size_t errsize) {
  unsigned char head[NPY_HEADER_MAX];
  size_t padded;
  int64_t count;
  if (npy_header(dtype, ndim, shape, what, head, &padded, &count, err, errsize)) return -1;
  int ok = fwrite(head, 1, padded, f) == padded;
  size_t item = npy_dtype_size(dtype);
  unsigned char chunk[4096];
  size_t fill = 0;
  for (int64_t i = 0; ok && i < count; i++) {
    uint64_t v = item == 4 ? ((const uint32_t *)data)[i] : ((const uint64_t *)data)[i];
    store_le(chunk + fill, v, item);
    fill += item;
    if (fill == sizeof chunk) {
      ok = fwrite(chunk, 1, fill, f) == fill;
      fill = 0;
    }
  }
  if (ok && fill) ok = fwrite(chunk, 1, fill, f) == fill;
  if (ok) ok = fflush(f) == 0;
  if (!ok) return tool_fail(err, errsize, "%s: write error: %s", what, strerror(errno));
  return 0;
}

int npy_write(const char *path, npy_dtype dtype, int ndim, const int64_t *shape,
              const void *data, char *err, size_t errsize) {
  unsigned char head[NPY_HEADER_MAX];
  size_t padded;
  int64_t count;
  if (npy_header(dtype, ndim, shape, path, head, &padded, &count, err, errsize)) return -1;
  FILE *f = fopen(path, "wb");
  if (!f) return tool_fail(err, errsize, "%s: cannot create: %s", path, strerror(errno));
  int rc = npy_write_stream(f, path, dtype, ndim, shape, data, err, errsize);
  if (fclose(f) != 0 && rc == 0)
    rc = tool_fail(err, errsize, "%s: write error: %s", path, strerror(errno));
  if (rc) remove(path);
  return rc;
}

uint64_t npy_get(const npy_array *a, int64_t index, int *negative) {
  uint64_t v;
  int neg = 0;
  switch (a->dtype) {
  case NPY_U32: v = ((const uint32_t *)a->data)[index]; break;
  case NPY_I32: {
    int32_t s = ((const int32_t *)a->data)[index];
    neg = s < 0;
    v = (uint64_t)(int64_t)s;
    break;
  }
  case NPY_I64: {
    int64_t s = ((const int64_t *)a->data)[index];
    neg = s < 0;
    v = (uint64_t)s;
    break;
  }
  default: v = ((const uint64_t *)a->data)[index]; break;
  }
  if (negative) *negative = neg;
  return v;
}
