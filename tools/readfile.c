/* readfile.c: tool_read_file of readfile.h: one checked read loop for every
 * file the tools take as input. The file type is checked before the first
 * read and the size of a regular file before any allocation; streams are
 * read up to limit + 1 bytes, never more. */
#include "readfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tool_fail(char *err, size_t errsize, const char *fmt, ...) {
  if (err && errsize) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsize, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* NULL when a file of this mode may be read, else what it is. */
static const char *refused_kind(mode_t mode, int fd) {
  if (S_ISREG(mode) || S_ISFIFO(mode)) return NULL;
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return isatty(fd) ? NULL : "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/* Reads f to its end into a buffer of at most limit + 1 bytes (+ NUL);
 * *len > limit tells the caller the file is too large. */
static char *read_bounded(FILE *f, size_t limit, size_t first, size_t *len) {
  size_t cap = first < limit ? first : limit, n = 0;
  char *buf = malloc(cap + 2);
  while (buf) {
    n += fread(buf + n, 1, cap + 1 - n, f);
    if (n <= cap || n > limit) break; /* end of file, or over the limit */
    size_t bigger_cap = cap > limit / 2 ? limit : cap * 2;
    char *bigger = realloc(buf, bigger_cap + 2);
    if (!bigger) {
      free(buf);
      return NULL;
    }
    buf = bigger;
    cap = bigger_cap;
  }
  if (buf) buf[n] = '\0';
  *len = n;
  return buf;
}

static int too_large(const char *path, unsigned long long size, int exact, size_t limit,
                     const char *limit_name, char *err, size_t errsize) {
  return tool_fail(err, errsize, "%s: %s%llu bytes, over %s of %zu bytes", path,
                 exact ? "" : "more than ", size, limit_name, limit);
}

int tool_read_file(const char *path, size_t limit, const char *limit_name, char **data,
                   size_t *len, char *err, size_t errsize) {
  *data = NULL;
  *len = 0;
  int from_stdin = strcmp(path, "-") == 0;
  FILE *f = from_stdin ? stdin : fopen(path, "rb");
  if (from_stdin) path = "<stdin>";
  if (!f) return tool_fail(err, errsize, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  int rc = 0;
  const char *kind = NULL;
  size_t got = 0, first = (size_t)1 << 16;
  char *buf = NULL;
  if (fstat(fileno(f), &st) != 0) {
    rc = tool_fail(err, errsize, "%s: cannot stat: %s", path, strerror(errno));
  } else if ((kind = refused_kind(st.st_mode, fileno(f)))) {
    rc = tool_fail(err, errsize, "%s: cannot read %s; give a regular file or a pipe", path, kind);
  } else if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > limit) {
    rc = too_large(path, (unsigned long long)st.st_size, 1, limit, limit_name, err, errsize);
  } else {
    if (S_ISREG(st.st_mode)) first = (size_t)st.st_size + 1;
    errno = 0;
    buf = read_bounded(f, limit, first, &got);
    if (!buf) rc = tool_fail(err, errsize, "%s: out of memory", path);
    else if (ferror(f)) rc = tool_fail(err, errsize, "%s: read error: %s", path, strerror(errno));
    else if (got > limit) rc = too_large(path, (unsigned long long)limit, 0, limit, limit_name, err, errsize);
  }
  if (!from_stdin) fclose(f);
  if (rc) {
    free(buf);
    return rc;
  }
  *data = buf;
  *len = got;
  return 0;
}
