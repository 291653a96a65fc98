/* test_npy.c: the .npy reader/writer of tools/npy.c. Round trips of every
 * accepted dtype and of scalar, 1-D, empty and 4-D shapes; byte-exact
 * headers as numpy writes them; headers numpy (or older numpy) may write
 * (version 2.0, 'L' suffixes, double quotes, other key orders, 1-D Fortran
 * order); and every refusal: bad magic and versions, truncation, trailing
 * bytes, other dtypes, big-endian, structured dtypes, multi-axis Fortran
 * order, malformed or incomplete headers, I/O errors; and the size and
 * file-type limits of the tools' shared reader (readfile.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npy.h"
#include "readfile.h"
#include "testutil.h"

#define NO_LIMIT ((size_t)1 << 40)

/* Builds a version-1 .npy image from a header dict and raw data bytes,
 * padded as numpy pads (data at a multiple of 64). Returns its size. */
static size_t make_npy(unsigned char *out, const char *dict, const void *data, size_t data_len,
                       int version) {
  size_t prefix = version == 1 ? 10 : 12, dl = strlen(dict);
  size_t total = prefix + dl + 1, padded = (total + 63) / 64 * 64, hlen = padded - prefix;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)version;
  out[7] = 0;
  if (version == 1) {
    out[8] = (unsigned char)(hlen & 0xFF);
    out[9] = (unsigned char)(hlen >> 8);
  } else {
    for (int i = 0; i < 4; i++) out[8 + i] = (unsigned char)(hlen >> (8 * i));
  }
  memcpy(out + prefix, dict, dl);
  memset(out + prefix + dl, ' ', hlen - dl - 1);
  out[padded - 1] = '\n';
  if (data_len) memcpy(out + padded, data, data_len);
  return padded + data_len;
}

static char tmpdir[256];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/fhjit_test_npy_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void path_in_tmp(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s/%s", tmpdir, name);
}

static unsigned char *read_bytes(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  static unsigned char buf[1 << 16];
  *len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return buf;
}

START_TEST(test_round_trips) {
  make_tmpdir();
  uint64_t rng = 42;
  static const npy_dtype dtypes[] = {NPY_U32, NPY_U64, NPY_I32, NPY_I64};
  static const int64_t shapes[][5] = {
      /* ndim, extents */
      {0}, {1, 5}, {2, 3, 7}, {4, 2, 3, 2, 8}, {2, 0, 3}, {1, 1}};
  char path[512], err[512];
  for (size_t d = 0; d < 4; d++)
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
      npy_dtype dt = dtypes[d];
      int ndim = (int)shapes[s][0];
      int64_t count = 1;
      for (int i = 0; i < ndim; i++) count *= shapes[s][1 + i];
      size_t item = npy_dtype_size(dt);
      unsigned char *data = malloc((size_t)count * item + 1);
      for (int64_t i = 0; i < count; i++) {
        uint64_t v = tu_rand(&rng);
        if (i == 0) v = item == 4 ? 0xFFFFFFFFu : UINT64_MAX; /* all ones: -1 when signed */
        if (i == 1) v = 0;
        if (item == 4) ((uint32_t *)data)[i] = (uint32_t)v;
        else ((uint64_t *)data)[i] = v;
      }
      path_in_tmp(path, sizeof path, "rt.npy");
      ck_assert_msg(npy_write(path, dt, ndim, shapes[s] + 1, data, err, sizeof err) == 0, "%s", err);
      npy_array a;
      ck_assert_msg(npy_read(path, NO_LIMIT, &a, err, sizeof err) == 0, "%s", err);
      ck_assert_int_eq(a.dtype, dt);
      ck_assert_int_eq(a.ndim, ndim);
      ck_assert_int_eq(a.count, count);
      for (int i = 0; i < ndim; i++) ck_assert_int_eq(a.shape[i], shapes[s][1 + i]);
      ck_assert(count == 0 || memcmp(a.data, data, (size_t)count * item) == 0);
      if (count > 1) {
        int neg;
        uint64_t v0 = npy_get(&a, 0, &neg);
        int is_signed = dt == NPY_I32 || dt == NPY_I64;
        ck_assert_int_eq(neg, is_signed);
        ck_assert(is_signed ? v0 == UINT64_MAX : v0 == (item == 4 ? 0xFFFFFFFFu : UINT64_MAX));
        ck_assert_int_eq(npy_get(&a, 1, &neg), 0);
        ck_assert_int_eq(neg, 0);
      }
      /* byte layout: data starts at a multiple of 64 after a '\n'-ended header */
      size_t len;
      unsigned char *bytes = read_bytes(path, &len);
      size_t hlen = (size_t)bytes[8] | (size_t)bytes[9] << 8;
      ck_assert_int_eq((10 + hlen) % 64, 0);
      ck_assert_int_eq(bytes[10 + hlen - 1], '\n');
      ck_assert_int_eq(len, 10 + hlen + (size_t)count * item);
      npy_free(&a);
      free(data);
    }
  unlink(path);
  rmdir(tmpdir);
}
END_TEST

/* The exact bytes numpy's np.save writes for a (2, 3) uint32 array. */
START_TEST(test_numpy_header_bytes) {
  make_tmpdir();
  char path[512], err[256];
  path_in_tmp(path, sizeof path, "h.npy");
  uint32_t data[6] = {1, 2, 3, 4, 5, 0x01020304u};
  int64_t shape[2] = {2, 3};
  ck_assert_int_eq(npy_write(path, NPY_U32, 2, shape, data, err, sizeof err), 0);
  size_t len;
  unsigned char *b = read_bytes(path, &len);
  static const char numpy_dict[] = "{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }";
  ck_assert_int_eq(memcmp(b, "\x93NUMPY\x01\x00", 8), 0);
  ck_assert_int_eq(b[8] | b[9] << 8, 118); /* 10 + 118 = 128 */
  ck_assert_int_eq(memcmp(b + 10, numpy_dict, strlen(numpy_dict)), 0);
  for (size_t i = 10 + strlen(numpy_dict); i < 127; i++) ck_assert_int_eq(b[i], ' ');
  ck_assert_int_eq(b[127], '\n');
  ck_assert_int_eq(len, 128 + 24);
  ck_assert_int_eq(memcmp(b + 128 + 20, "\x04\x03\x02\x01", 4), 0); /* little-endian */
  /* 1-D shapes carry Python's trailing comma; scalars are () */
  int64_t one[1] = {5};
  uint64_t d5[5] = {0};
  ck_assert_int_eq(npy_write(path, NPY_I64, 1, one, d5, err, sizeof err), 0);
  b = read_bytes(path, &len);
  ck_assert(tu_contains((const char *)b + 10, "'descr': '<i8', 'fortran_order': False, 'shape': (5,), }"));
  ck_assert_int_eq(npy_write(path, NPY_I32, 0, NULL, d5, err, sizeof err), 0);
  b = read_bytes(path, &len);
  ck_assert(tu_contains((const char *)b + 10, "'shape': (), }"));
  ck_assert_int_eq(len, 128 + 4);
  unlink(path);
  rmdir(tmpdir);
}
END_TEST

/* Headers other writers produce are read. */
START_TEST(test_header_variants) {
  unsigned char buf[4096];
  char err[512];
  uint32_t data[6] = {10, 11, 12, 13, 14, 15};
  struct {
    const char *dict;
    int version;
    int ndim;
    int64_t shape0;
    npy_dtype dtype;
  } ok[] = {
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }", 2, 2, 2, NPY_U32},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2L, 3L), }", 1, 2, 2, NPY_U32},
      {"{\"shape\": (6,), \"fortran_order\": false_is_not_python}", 1, -1, 0, NPY_U32},
      {"{'shape': (6,), 'descr': '<u4', 'fortran_order': False}", 1, 1, 6, NPY_U32},
      {"{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (3, 2)}", 1, 2, 3, NPY_I32},
      {"{'descr': '<u4', 'fortran_order': True, 'shape': (6,), }", 1, 1, 6, NPY_U32},
      {"{'descr': '<u4', 'fortran_order': True, 'shape': (1, 6, 1), }", 1, 3, 1, NPY_U32},
      {"{'descr': '=u4', 'fortran_order': False, 'shape': (6,), }", 1, 1, 6, NPY_U32},
      {"{ 'descr' : '<u4' ,\n'fortran_order':False,'shape':( 2 , 3 ) }", 1, 2, 2, NPY_U32},
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    size_t len = make_npy(buf, ok[i].dict, data, sizeof data, ok[i].version);
    npy_array a;
    int rc = npy_parse(buf, len, "mem", &a, err, sizeof err);
    if (ok[i].ndim < 0) { /* malformed on purpose: one refusal among them */
      ck_assert_int_eq(rc, -1);
      ck_assert_msg(tu_contains(err, "malformed"), "%s", err);
      continue;
    }
    ck_assert_msg(rc == 0, "%s: %s", ok[i].dict, err);
    ck_assert_int_eq(a.ndim, ok[i].ndim);
    ck_assert_int_eq(a.shape[0], ok[i].shape0);
    ck_assert_int_eq(a.dtype, ok[i].dtype);
    ck_assert_int_eq(a.count, 6);
    ck_assert_int_eq(npy_get(&a, 5, NULL), 15);
    npy_free(&a);
  }
}
END_TEST

/* Every refusal names the problem. */
START_TEST(test_errors) {
  unsigned char buf[4096];
  char err[512];
  uint32_t data[6] = {0};
  npy_array a;
  struct {
    const char *dict;
    size_t data_len;
    const char *expect;
  } bad[] = {
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48,
       "dtype '<f8' (float64) is not supported; residue tensors must be uint32, uint64, int32 or int64"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, "(float32) is not supported"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", 6, "(uint8) is not supported"},
      {"{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }", 12, "(int16) is not supported"},
      {"{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", 6, "(bool) is not supported"},
      {"{'descr': '<U8', 'fortran_order': False, 'shape': (2, 3), }", 24, "(string) is not supported"},
      /* an item size of 2^32 + 2^29 (found by fuzz_npy: atoi's value, truncated to an int,
       * overflowed when the message multiplied it by 8) */
      {"{'descr': '<i4831838208', 'fortran_order': False, 'shape': (2, 3), }", 24,
       "(int) is not supported"},
      {"{'descr': '<u16', 'fortran_order': False, 'shape': (2, 3), }", 24, "(uint128) is not supported"},
      {"{'descr': '>u4', 'fortran_order': False, 'shape': (2, 3), }", 24, "is big-endian"},
      {"{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }", 24, "is big-endian"},
      {"{'descr': [('a', '<u4'), ('b', '<u4')], 'fortran_order': False, 'shape': (3,), }", 24,
       "structured dtypes are not supported"},
      {"{'descr': '<u4', 'fortran_order': True, 'shape': (2, 3), }", 24,
       "stored in Fortran (column-major) order; only C order is supported"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }", 20,
       "truncated: the header announces uint32 (2, 3) (24 data bytes) but the file holds 20"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }", 0, "truncated"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (5,), }", 24,
       "4 unexpected bytes after the 20 data bytes"},
      {"{'descr': '<u4', 'shape': (2, 3), }", 24, "lacks 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2, 3), }", 24, "lacks 'descr'"},
      {"{'descr': '<u4', 'fortran_order': False}", 24, "lacks 'shape'"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2, -3), }", 24, "malformed"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", 24, "malformed"},
      {"{'descr': '<u4', 'fortran_order': Maybe, 'shape': (2, 3), }", 24, "malformed"},
      {"['descr', '<u4']", 24, "malformed"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), ", 24, "malformed"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 24,
       "too large"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    unsigned char payload[64] = {0};
    (void)data;
    size_t len = make_npy(buf, bad[i].dict, payload, bad[i].data_len, 1);
    memset(&a, 0x5A, sizeof a);
    ck_assert_msg(npy_parse(buf, len, "x.npy", &a, err, sizeof err) == -1, "accepted: %s",
                  bad[i].dict);
    ck_assert_msg(tu_contains(err, bad[i].expect), "%s\n  gave: %s\n  expected: %s", bad[i].dict,
                  err, bad[i].expect);
    ck_assert_msg(tu_contains(err, "x.npy"), "message does not name the file: %s", err);
    ck_assert_ptr_null(a.data); /* left zeroed */
    ck_assert_int_eq(a.ndim, 0);
  }
  /* framing */
  size_t len = make_npy(buf, "{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }", data,
                        sizeof data, 1);
  unsigned char copy[4096];
  memcpy(copy, buf, len);
  copy[0] = 'X';
  ck_assert_int_eq(npy_parse(copy, len, "m", &a, err, sizeof err), -1);
  ck_assert(tu_contains(err, "not a .npy file"));
  ck_assert_int_eq(npy_parse(buf, 5, "m", &a, err, sizeof err), -1);
  ck_assert(tu_contains(err, "not a .npy file"));
  memcpy(copy, buf, len);
  copy[6] = 4;
  ck_assert_int_eq(npy_parse(copy, len, "m", &a, err, sizeof err), -1);
  ck_assert(tu_contains(err, "version 4.0 is not supported"));
  ck_assert_int_eq(npy_parse(buf, 40, "m", &a, err, sizeof err), -1); /* inside the header */
  ck_assert(tu_contains(err, "truncated .npy header"));
  ck_assert_int_eq(npy_parse(buf, 11, "m", &a, err, sizeof err), -1);
  ck_assert(tu_contains(err, "truncated"));
  /* files */
  ck_assert_int_eq(npy_read("/nonexistent/dir/x.npy", NO_LIMIT, &a, err, sizeof err), -1);
  ck_assert(tu_contains(err, "/nonexistent/dir/x.npy: cannot open"));
  int64_t shape[1] = {6};
  ck_assert_int_eq(npy_write("/nonexistent/dir/x.npy", NPY_U32, 1, shape, data, err, sizeof err), -1);
  ck_assert(tu_contains(err, "cannot create"));
  ck_assert_int_eq(npy_write("/tmp/x.npy", NPY_U32, 17, shape, data, err, sizeof err), -1);
  int64_t huge[2] = {INT64_C(1) << 62, 4};
  /* refused before the file is opened: not "cannot create" */
  ck_assert_int_eq(npy_write("/nonexistent/dir/x.npy", NPY_U64, 2, huge, data, err, sizeof err), -1);
  ck_assert_msg(tu_contains(err, "shape is too large"), "%s", err);
  /* a NULL error buffer is allowed */
  ck_assert_int_eq(npy_parse(buf, 5, "m", &a, NULL, 0), -1);
}
END_TEST

/* A larger file than the reader's first buffer (64 KiB). */
START_TEST(test_large_file) {
  make_tmpdir();
  char path[512], err[256];
  path_in_tmp(path, sizeof path, "big.npy");
  int64_t shape[3] = {3, 17, 4099};
  int64_t count = shape[0] * shape[1] * shape[2];
  uint64_t *data = malloc(sizeof *data * (size_t)count);
  for (int64_t i = 0; i < count; i++) data[i] = (uint64_t)i * UINT64_C(0x9E3779B97F4A7C15);
  ck_assert_int_eq(npy_write(path, NPY_U64, 3, shape, data, err, sizeof err), 0);
  npy_array a;
  ck_assert_msg(npy_read(path, NO_LIMIT, &a, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(a.count, count);
  ck_assert_int_eq(memcmp(a.data, data, sizeof *data * (size_t)count), 0);
  npy_free(&a);
  npy_free(&a); /* idempotent */
  free(data);
  unlink(path);
  rmdir(tmpdir);
}
END_TEST

/* tool_read_file: exact sizes up to the limit, one byte over refused with
 * the size and the limit named (a regular file before reading, a pipe after
 * limit + 1 bytes), devices and directories refused before any read. */
START_TEST(test_read_limits) {
  make_tmpdir();
  char path[512], err[512], *data;
  size_t len;
  path_in_tmp(path, sizeof path, "hundred");
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < 100; i++) fputc('a' + i % 26, f);
  fclose(f);
  ck_assert_int_eq(tool_read_file(path, 100, "the test limit", &data, &len, err, sizeof err), 0);
  ck_assert_uint_eq(len, 100);
  ck_assert_int_eq(data[99], 'a' + 99 % 26);
  ck_assert_int_eq(data[100], '\0');
  free(data);
  ck_assert_int_eq(tool_read_file(path, 99, "the test limit", &data, &len, err, sizeof err), -1);
  ck_assert_ptr_null(data);
  ck_assert_msg(tu_contains(err, "hundred: 100 bytes, over the test limit of 99 bytes"), "%s", err);
  /* a stream: sizes are found by reading */
  f = popen("head -c 100 /dev/zero", "r");
  ck_assert_ptr_nonnull(f);
  int saved = dup(0);
  ck_assert_int_ge(dup2(fileno(f), 0), 0);
  ck_assert_int_eq(tool_read_file("-", 64, "the pipe limit", &data, &len, err, sizeof err), -1);
  ck_assert_msg(tu_contains(err, "<stdin>: more than 64 bytes, over the pipe limit of 64 bytes"), "%s", err);
  dup2(saved, 0);
  close(saved);
  pclose(f);
  /* devices and directories */
  ck_assert_int_eq(tool_read_file("/dev/zero", 1 << 20, "x", &data, &len, err, sizeof err), -1);
  ck_assert_msg(tu_contains(err, "/dev/zero: cannot read a character device"), "%s", err);
  ck_assert_int_eq(tool_read_file(tmpdir, 1 << 20, "x", &data, &len, err, sizeof err), -1);
  ck_assert_msg(tu_contains(err, "cannot read a directory"), "%s", err);
  /* npy_read passes its limit on */
  int64_t shape[1] = {6};
  uint32_t six[6] = {1, 2, 3, 4, 5, 6};
  path_in_tmp(path, sizeof path, "six.npy");
  ck_assert_int_eq(npy_write(path, NPY_U32, 1, shape, six, err, sizeof err), 0);
  npy_array a;
  ck_assert_int_eq(npy_read(path, 128 + 24, &a, err, sizeof err), 0); /* 128-byte header */
  npy_free(&a);
  ck_assert_int_eq(npy_read(path, 128 + 23, &a, err, sizeof err), -1);
  ck_assert_msg(tu_contains(err, "six.npy: 152 bytes, over the limit for this .npy file of 151"),
                "%s", err);
  ck_assert_ptr_null(a.data);
  unlink(path);
  path_in_tmp(path, sizeof path, "hundred");
  unlink(path);
  rmdir(tmpdir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("npy");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_round_trips);
  tcase_add_test(tc, test_numpy_header_bytes);
  tcase_add_test(tc, test_header_variants);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_large_file);
  tcase_add_test(tc, test_read_limits);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
